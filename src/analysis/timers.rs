//! A requester's local ACK timer as its resends show it: each `timeout_retransmission` is one firing, its
//! interval the time since that PSN was last sent. The IBTA has the timer at least 4.096 µs × 2^n for the
//! QP's timeout exponent n (the CM REQ's Local ACK Timeout); a NIC may resend sooner (adaptive
//! retransmission) or wait longer each time (perftest #251: resends 2, 4, 8, 16 ms apart whatever `-u`
//! said). After the retry count's resends of one PSN the QP gives up (`IBV_WC_RETRY_EXC_ERR`).
use smallvec::SmallVec;

use super::diagnosis::timeout_exponent;

/// The intervals kept, the first ones (the rest count in the figures).
pub const INTERVALS_KEPT: usize = 16;

/// An interval at least this many times the one before it waited longer than the last (a backoff), in
/// tenths: 1.5×.
const GROWTH_TENTHS: u64 = 15;

/// A flow's timer resends, made at its first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Timers {
    pub resends: u64,
    /// The first [`INTERVALS_KEPT`] intervals, nanoseconds.
    pub intervals_ns: SmallVec<[u64; INTERVALS_KEPT]>,
    pub min_ns: u64,
    pub max_ns: u64,
    /// The last interval, and the resends of its PSN in a row up to it.
    pub last_ns: u64,
    pub last_retry: u32,
    /// The longest run of intervals each at least 1.5× the one before it (counted in intervals after the
    /// first of the run).
    pub longest_growth: u32,
    growth: u32,
}

impl Timers {
    /// The timer fired after `interval_ns`: the `retry`-th resend of its PSN in a row.
    pub fn on_resend(&mut self, interval_ns: u64, retry: u32) {
        let grew = self.resends > 0
            && interval_ns.saturating_mul(10) >= self.last_ns.saturating_mul(GROWTH_TENTHS);
        self.growth = if grew { self.growth + 1 } else { 0 };
        self.longest_growth = self.longest_growth.max(self.growth);
        self.min_ns = if self.resends == 0 {
            interval_ns
        } else {
            self.min_ns.min(interval_ns)
        };
        self.max_ns = self.max_ns.max(interval_ns);
        if self.intervals_ns.len() < INTERVALS_KEPT {
            self.intervals_ns.push(interval_ns);
        }
        self.resends += 1;
        (self.last_ns, self.last_retry) = (interval_ns, retry);
    }

    /// The timeout exponent the shortest interval implies: the largest n with 4.096 µs × 2^n within it.
    pub fn implied_exponent(&self) -> u8 {
        timeout_exponent(self.min_ns)
    }

    /// Backing off: at least two intervals in a row each 1.5× the one before.
    pub fn backs_off(&self) -> bool {
        self.longest_growth >= 2
    }

    /// A resend sooner than the timeout exponent `configured` allows (4.096 µs × 2^configured), by more than
    /// a timer's own slack ([`super::diagnosis::on_time`]).
    pub fn adaptive(&self, configured: u8) -> bool {
        super::diagnosis::on_time(self.min_ns) < 4096u64 << configured.min(31)
    }

    /// How long until the QP gives up with `retry_count` resends allowed, when its last resend went
    /// unanswered: the wait after it and one for each resend left, each as long as the last interval, or
    /// twice the one before when the timer backs off (nanoseconds).
    pub fn gives_up_in_ns(&self, retry_count: u8) -> u64 {
        let left = u32::from(retry_count).saturating_sub(self.last_retry);
        if self.backs_off() {
            // last × (2 + 4 + ... + 2^(left+1)).
            let factor = (1u64 << (left + 2).min(62)) - 2;
            self.last_ns.saturating_mul(factor)
        } else {
            self.last_ns.saturating_mul(u64::from(left) + 1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn doubling_intervals_are_a_backoff() {
        let mut t = Timers::default();
        for (i, ms) in [2, 4, 8, 16].into_iter().enumerate() {
            t.on_resend(ms * MS, i as u32 + 1);
        }
        assert!(t.backs_off());
        assert_eq!((t.min_ns, t.max_ns, t.resends), (2 * MS, 16 * MS, 4));
        // 4.096 µs × 2^9 = 2.1 ms: 2 ms is within a sixteenth of it (a timer a tick early).
        assert_eq!(t.implied_exponent(), 9);
        // perftest's -u 14 (67 ms): resent sooner.
        assert!(t.adaptive(14));
        assert!(!t.adaptive(9));
        // Retry 4 of 7: 32, 64, 128 ms to the last three resends, 256 ms after the last.
        assert_eq!(t.gives_up_in_ns(7), (32 + 64 + 128 + 256) * MS);
    }

    #[test]
    fn a_steady_timer_does_not_back_off() {
        let mut t = Timers::default();
        for i in 1..=5 {
            t.on_resend(537 * MS, i);
        }
        assert!(!t.backs_off());
        assert_eq!(t.implied_exponent(), 17);
        // Retry 5 of 7 unanswered: the wait after it and two more resends' waits.
        assert_eq!(t.gives_up_in_ns(7), 3 * 537 * MS);
        assert_eq!(t.gives_up_in_ns(3), 537 * MS);
    }

    #[test]
    fn the_first_intervals_are_kept() {
        let mut t = Timers::default();
        for i in 0..40 {
            t.on_resend((10 + i) * MS, 1);
        }
        assert_eq!(t.intervals_ns.len(), INTERVALS_KEPT);
        assert_eq!(t.intervals_ns[0], 10 * MS);
        assert_eq!(t.resends, 40);
    }
}
