//! Why a flow is slow: the share of a requester's life in each state, from its first request to the last
//! packet either direction carried for it. Between two packets the flow is in the state the first left it
//! in (the worst that holds): waiting out an RNR NAK's timer; recovering from a loss (a NAK not yet
//! answered, a resend not yet acknowledged); rate-limited (within two `--rate-window-us` windows of a CNP
//! toward it: the windows the CNP reaction is measured over); idle (nothing outstanding: the application
//! posts nothing); window-limited (outstanding at the most it ever had: queue depth, credits, the
//! bandwidth-delay product; the time at a lesser most is sending once a greater one comes); else sending.
//! Whatever part of that time its priority was paused by PFC (or the link by PAUSE) is `paused` instead,
//! idle time too: a NIC holds what it was given while paused, so a flow quiet in a pause on its priority is
//! more likely held than done.
use serde::Serialize;

/// A requester's state between two of its packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LifeState {
    #[default]
    Sending,
    Idle,
    WindowLimited,
    Paused,
    RateLimited,
    Recovering,
    RnrWait,
}

impl LifeState {
    pub const ALL: [LifeState; 7] = [
        LifeState::Sending,
        LifeState::Idle,
        LifeState::WindowLimited,
        LifeState::Paused,
        LifeState::RateLimited,
        LifeState::Recovering,
        LifeState::RnrWait,
    ];

    /// As the JSON names it.
    pub fn name(self) -> &'static str {
        match self {
            LifeState::Sending => "sending",
            LifeState::Idle => "idle",
            LifeState::WindowLimited => "window_limited",
            LifeState::Paused => "paused",
            LifeState::RateLimited => "rate_limited",
            LifeState::Recovering => "recovering",
            LifeState::RnrWait => "rnr_wait",
        }
    }
}

/// What holds of a requester at a packet, for its state from there on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Facts {
    /// PSNs waiting for an answer: from the oldest unacknowledged request's to the newest's.
    pub outstanding: u32,
    /// A PSN it was RNR-NAKed on is not yet acknowledged.
    pub rnr_waiting: bool,
    /// A NAK not yet answered, or a resend not yet acknowledged.
    pub recovering: bool,
    /// The priority's (or link's) time paused so far, nanoseconds.
    pub paused_so_far: u64,
}

/// A requester's time in each state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Life {
    /// Accounted up to here (nanoseconds).
    since: u64,
    state: LifeState,
    paused_at_since: u64,
    /// Nanoseconds per state, in [`LifeState::ALL`]'s order.
    pub nanos: [u64; 7],
    /// The most PSNs it had outstanding.
    pub window: u32,
    /// The last CNP toward it.
    last_cnp: Option<u64>,
    started: bool,
}

impl Life {
    /// A CNP toward the flow's sender at `ts`.
    pub fn cnp(&mut self, ts: u64) {
        self.last_cnp = Some(ts);
    }

    /// A packet of the flow (or for it) at `ts`: the time since the last is the state's it was in (less
    /// the time paused in it), and `facts` set the state from here on. `rate_window`: nanoseconds.
    pub fn at(&mut self, ts: u64, facts: Facts, rate_window: u64) {
        if self.started {
            let span = ts.saturating_sub(self.since);
            let paused = facts
                .paused_so_far
                .saturating_sub(self.paused_at_since)
                .min(span);
            self.nanos[LifeState::Paused as usize] += paused;
            self.nanos[self.state as usize] += span - paused;
        }
        self.started = true;
        self.since = self.since.max(ts);
        self.paused_at_since = facts.paused_so_far;
        if facts.outstanding > self.window {
            // A new most: the time at the old one was not at the window after all.
            let wl = std::mem::take(&mut self.nanos[LifeState::WindowLimited as usize]);
            self.nanos[LifeState::Sending as usize] += wl;
            self.window = facts.outstanding;
        }
        let rate_limited = self
            .last_cnp
            .is_some_and(|c| ts.saturating_sub(c) < rate_window.saturating_mul(2));
        self.state = if facts.rnr_waiting {
            LifeState::RnrWait
        } else if facts.recovering {
            LifeState::Recovering
        } else if rate_limited {
            LifeState::RateLimited
        } else if facts.outstanding == 0 {
            LifeState::Idle
        } else if facts.outstanding >= self.window {
            LifeState::WindowLimited
        } else {
            LifeState::Sending
        };
    }

    /// The time accounted, nanoseconds.
    pub fn total(&self) -> u64 {
        self.nanos.iter().sum()
    }

    /// The state it spent most of its life in (the first of equals), with its share; none before any time.
    pub fn dominant(&self) -> Option<(LifeState, f64)> {
        let total = self.total();
        let (i, most) = self
            .nanos
            .iter()
            .enumerate()
            .rev()
            .max_by_key(|(_, n)| **n)?;
        (total > 0).then(|| (LifeState::ALL[i], *most as f64 / total as f64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(outstanding: u32) -> Facts {
        Facts {
            outstanding,
            ..Facts::default()
        }
    }

    // One request at a time, answered 100 µs later, the next 10 µs after: 300 of 320 µs waiting for the
    // ACK with its whole window (1) outstanding, 20 idle.
    #[test]
    fn one_at_a_time_is_window_limited() {
        let mut l = Life::default();
        for t in [0, 110, 220] {
            l.at(t * 1000, facts(1), 100_000);
            l.at((t + 100) * 1000, facts(0), 100_000);
        }
        assert_eq!(l.nanos[LifeState::WindowLimited as usize], 300_000);
        assert_eq!(l.nanos[LifeState::Idle as usize], 20_000);
        assert_eq!(l.window, 1);
        assert_eq!(
            l.dominant(),
            Some((LifeState::WindowLimited, 300.0 / 320.0))
        );
    }

    // Four requests 10 µs apart, one ACK for them 100 µs after the last; again once the window is known:
    // the first ramp is sending (each level was the most only until the next), 200 of 270 µs at 4.
    #[test]
    fn only_the_time_at_the_final_most_is_window_limited() {
        let mut l = Life::default();
        for start in [0, 140] {
            for k in 0..4 {
                l.at((start + 10 * k) * 1000, facts(k as u32 + 1), 100_000);
            }
            l.at((start + 130) * 1000, facts(0), 100_000);
        }
        assert_eq!(l.window, 4);
        assert_eq!(l.nanos[LifeState::WindowLimited as usize], 200_000);
        assert_eq!(l.nanos[LifeState::Sending as usize], 60_000);
        assert_eq!(l.nanos[LifeState::Idle as usize], 10_000);
    }

    #[test]
    fn paused_time_is_taken_out_of_the_state() {
        let mut l = Life::default();
        l.at(0, facts(2), 100_000);
        // 100 µs later, 40 µs of them paused.
        l.at(
            100_000,
            Facts {
                outstanding: 0,
                paused_so_far: 40_000,
                ..Facts::default()
            },
            100_000,
        );
        assert_eq!(l.nanos[LifeState::WindowLimited as usize], 60_000);
        assert_eq!(l.nanos[LifeState::Paused as usize], 40_000);
    }

    #[test]
    fn the_worst_that_holds_wins() {
        let mut l = Life::default();
        l.cnp(0);
        l.at(
            0,
            Facts {
                outstanding: 3,
                recovering: true,
                ..Facts::default()
            },
            100_000,
        );
        l.at(10_000, facts(3), 100_000);
        l.at(250_000, facts(3), 100_000);
        l.at(260_000, facts(3), 100_000);
        assert_eq!(l.nanos[LifeState::Recovering as usize], 10_000);
        // 10 µs after the CNP: rate-limited to 250; at 250 µs past two windows: window-limited.
        assert_eq!(l.nanos[LifeState::RateLimited as usize], 240_000);
        assert_eq!(l.nanos[LifeState::WindowLimited as usize], 10_000);
    }
}
