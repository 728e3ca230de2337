//! PFC and 802.3x PAUSE over time: the pause in effect per priority (an XOFF pauses for its quanta at the
//! link speed; a later XOFF replaces the pause in effect, an XON ends it), pause storms, and whether the RoCE
//! traffic is on the priorities PFC pauses.
use parsers::mac_control::MacControl;

use super::Engine;
use super::events::{Event, Kind};

/// PAUSE and PFC frames for one priority, and the time they kept it paused.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PriorityPause {
    pub frames: u64,
    pub xoff: u64,
    pub xon: u64,
    /// The quanta the XOFFs asked for, added up.
    pub quanta: u64,
    /// Time and frame number of the first XOFF.
    pub first_xoff: Option<(u64, u64)>,
    /// Time a pause was in effect, nanoseconds, up to the end of the capture.
    pub paused_nanos: u64,
    /// The longest time paused without a break, nanoseconds.
    pub longest_nanos: u64,
    /// The time paused, per bucket of time.
    pub series: PausedSeries,
    /// The pause in effect, if one.
    run: Option<PauseRun>,
}

/// Time paused per bucket: buckets of `width` nanoseconds from the capture's start, at first the rate
/// window, doubling in width (merging pairs) whenever the series would pass [`PausedSeries::CAPACITY`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PausedSeries {
    width: u64,
    buckets: Vec<u64>,
}

impl PausedSeries {
    pub const CAPACITY: usize = 1024;

    /// Paused from `from` to `to` (nanoseconds since the capture's start); buckets of `first_width` at first.
    fn add(&mut self, from: u64, to: u64, first_width: u64) {
        if self.width == 0 {
            self.width = first_width.max(1);
        }
        if to <= from {
            return;
        }
        while (to - 1) / self.width >= Self::CAPACITY as u64 {
            self.halve();
        }
        let last = ((to - 1) / self.width) as usize;
        if self.buckets.len() <= last {
            self.buckets.resize(last + 1, 0);
        }
        let mut t = from;
        while t < to {
            let i = t / self.width;
            let end = (i + 1).saturating_mul(self.width).min(to);
            if let Some(b) = self.buckets.get_mut(i as usize) {
                *b += end - t;
            }
            t = end;
        }
    }

    fn halve(&mut self) {
        self.width = self.width.saturating_mul(2);
        self.buckets = self.buckets.chunks(2).map(|p| p.iter().sum()).collect();
    }

    /// Bucket width, nanoseconds (0 before any pause).
    pub fn width(&self) -> u64 {
        self.width
    }

    /// Nanoseconds paused in each bucket, up to the last with a pause.
    pub fn buckets(&self) -> &[u64] {
        &self.buckets
    }
}

/// A time paused without a break: since when, the XOFF that began it, the XOFFs in it, until when the last
/// one holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct PauseRun {
    since: u64,
    frame: u64,
    xoff: u64,
    until: u64,
}

impl PriorityPause {
    /// The pause in effect after the frames so far (since, until: nanoseconds), if one; it may have ended
    /// by its quanta before the time of the newest frame (the trace's pause tracks).
    pub fn in_effect(&self) -> Option<(u64, u64)> {
        self.run.map(|r| (r.since, r.until))
    }

    /// The time paused up to `ts` (nanoseconds): the pauses ended and the part of the one in effect before
    /// `ts`.
    pub fn paused_by(&self, ts: u64) -> u64 {
        let current = self
            .run
            .map_or(0, |r| ts.min(r.until).saturating_sub(r.since));
        self.paused_nanos + current
    }

    /// One PAUSE or PFC frame asking for `q` quanta (`pause_nanos` of them) at `ts`; returns the storm
    /// event of a pause that ended before it, if one was that long.
    fn frame(&mut self, at: (u64, u64), q: u16, pause_nanos: u64, storm: Storm) -> Option<Event> {
        let (ts, number) = at;
        self.frames += 1;
        self.quanta += u64::from(q);
        let mut ended = None;
        if let Some(run) = self.run.filter(|r| r.until <= ts) {
            ended = self.close(run, run.until, storm);
        }
        if q == 0 {
            self.xon += 1;
            if let Some(run) = self.run {
                ended = self.close(run, ts, storm);
            }
            return ended;
        }
        self.xoff += 1;
        self.first_xoff.get_or_insert((ts, number));
        let until = ts.saturating_add(pause_nanos);
        self.run = Some(match self.run {
            Some(r) => PauseRun {
                xoff: r.xoff + 1,
                until,
                ..r
            },
            None => PauseRun {
                since: ts,
                frame: number,
                xoff: 1,
                until,
            },
        });
        ended
    }

    /// Ends the pause in effect at `end`: its time is counted; a storm if it lasted past the threshold.
    fn close(&mut self, run: PauseRun, end: u64, storm: Storm) -> Option<Event> {
        self.run = None;
        let nanos = end.saturating_sub(run.since);
        self.paused_nanos += nanos;
        let from = run.since.saturating_sub(storm.start);
        self.series.add(from, from + nanos, storm.width);
        self.longest_nanos = self.longest_nanos.max(nanos);
        (nanos > storm.nanos).then_some(Event {
            ts_nanos: run.since,
            flow: None,
            frame: run.frame,
            kind: Kind::PauseStorm {
                priority: storm.priority,
                duration_us: nanos / 1000,
                xoff: run.xoff,
            },
        })
    }

    /// The end of the capture at `end`: a pause still in effect counts up to it.
    fn finish(&mut self, end: u64, storm: Storm) -> Option<Event> {
        let run = self.run?;
        self.close(run, run.until.min(end), storm)
    }
}

/// What closing a pause needs to know: the priority (`None`: 802.3x PAUSE), the storm threshold, the
/// capture's start and the series' first bucket width.
#[derive(Debug, Clone, Copy)]
struct Storm {
    priority: Option<u8>,
    nanos: u64,
    start: u64,
    width: u64,
}

impl Engine {
    pub(super) fn pause_frame(&mut self, number: u64, ts: u64, mc: MacControl) {
        let storm = self.storm(None);
        let storm = |priority| Storm { priority, ..storm };
        match mc {
            MacControl::Pause { quanta } => {
                let pause = self.quanta_nanos(quanta);
                let e = self
                    .link_pause
                    .frame((ts, number), quanta, pause, storm(None));
                if let Some(e) = e {
                    self.raise(e);
                }
            }
            MacControl::Pfc {
                class_enable,
                quanta,
            } => {
                for (p, q) in quanta.into_iter().enumerate() {
                    if class_enable & (1 << p) != 0 {
                        let pause = self.quanta_nanos(q);
                        let e = self.pause[p].frame((ts, number), q, pause, storm(Some(p as u8)));
                        if let Some(e) = e {
                            self.raise(e);
                        }
                    }
                }
            }
            MacControl::Other { .. } => {}
        }
    }

    fn storm(&self, priority: Option<u8>) -> Storm {
        Storm {
            priority,
            nanos: self.cfg.pause_storm_nanos,
            start: self.totals.first_ts.unwrap_or(0),
            width: self.cfg.rate_window_nanos,
        }
    }

    /// The pause `quanta` ask for at the configured link speed (one quantum = 512 bit times), in
    /// nanoseconds (rounded down).
    fn quanta_nanos(&self, quanta: u16) -> u64 {
        let nanos =
            u128::from(quanta) * 512 * 1_000_000_000 / u128::from(self.cfg.link_speed_bps.max(1));
        u64::try_from(nanos).unwrap_or(u64::MAX)
    }

    /// The end of the capture: pauses in effect count up to it; each paused priority's `pause` note; the
    /// priorities against the RoCE traffic's.
    pub(super) fn finish_pauses(&mut self) {
        let end = self.totals.last_ts;
        for p in 0..8u8 {
            let storm = self.storm(Some(p));
            if let Some(e) = self.pause[usize::from(p)].finish(end, storm) {
                self.raise(e);
            }
        }
        let storm = self.storm(None);
        if let Some(e) = self.link_pause.finish(end, storm) {
            self.raise(e);
        }
        let notes: Vec<Event> = (0..8u8)
            .map(|p| (Some(p), &self.pause[usize::from(p)]))
            .chain([(None, &self.link_pause)])
            .filter_map(|(priority, s)| {
                let (ts, frame) = s.first_xoff?;
                Some(Event {
                    ts_nanos: ts,
                    flow: None,
                    frame,
                    kind: Kind::Pause {
                        priority,
                        frames: s.xoff,
                        pause_us: s.paused_nanos / 1000,
                    },
                })
            })
            .collect();
        for e in notes {
            self.raise(e);
        }
        self.priority_events();
    }

    /// The priorities PFC paused (bit p: an XOFF for priority p was seen).
    pub fn paused_priorities(&self) -> u8 {
        self.pause
            .iter()
            .enumerate()
            .filter(|(_, s)| s.xoff > 0)
            .fold(0, |m, (p, _)| m | 1 << p)
    }

    /// `pause_on_idle_priority` for each paused priority no RoCE flow is on, and `roce_unprotected` for
    /// each flow on a priority never paused while others were. Only flows whose priority is known (a VLAN
    /// PCP, or a DSCP `--dscp-map` maps) count; 802.3x PAUSE pauses every priority.
    fn priority_events(&mut self) {
        let paused = self.paused_priorities();
        if paused == 0 || self.carried == 0 {
            return;
        }
        let carried = self.carried;
        for p in (0..8u8).filter(|p| paused & !carried & (1 << p) != 0) {
            let s = &self.pause[usize::from(p)];
            let (ts, frame) = s.first_xoff.unwrap_or_default();
            let (xoff, pause_us) = (s.xoff, s.paused_nanos / 1000);
            self.raise(Event {
                ts_nanos: ts,
                flow: None,
                frame,
                kind: Kind::PauseOnIdlePriority {
                    priority: p,
                    xoff,
                    pause_us,
                    carried,
                },
            });
        }
        if self.link_pause.xoff > 0 {
            return;
        }
        let map = self.cfg.dscp_map;
        let unprotected: Vec<Event> = self
            .flows
            .in_order()
            .into_iter()
            .filter(|f| f.carries_roce())
            .filter_map(|f| {
                let priority = f.priority(&map).filter(|p| paused & (1 << p) == 0)?;
                Some(Event {
                    ts_nanos: f.first_ts,
                    flow: Some(f.id),
                    frame: f.first_frame,
                    kind: Kind::RoceUnprotected {
                        priority,
                        dscp: f.pcp.is_none().then_some(f.dscp).flatten(),
                        paused,
                    },
                })
            })
            .collect();
        for e in unprotected {
            self.raise(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STORM: Storm = Storm {
        priority: Some(3),
        nanos: 100_000_000,
        start: 0,
        width: 1000,
    };

    /// An XOFF of 1000 ns at 0, replaced at 400 by one of 1000 (until 1400), then an XON at 900: paused
    /// 0-900. A second XOFF at 2000 runs out at 3000 by itself: 1000 more.
    #[test]
    fn a_later_frame_replaces_the_pause_in_effect() {
        let mut s = PriorityPause::default();
        assert_eq!(s.frame((0, 1), 10, 1000, STORM), None);
        assert_eq!(s.frame((400, 2), 10, 1000, STORM), None);
        assert_eq!(s.frame((900, 3), 0, 0, STORM), None);
        assert_eq!(s.paused_nanos, 900);
        assert_eq!(s.frame((2000, 4), 10, 1000, STORM), None);
        assert_eq!(s.frame((5000, 5), 0, 0, STORM), None);
        // 900 + 1000; the longest is the second (1000 ns, 2000-3000).
        assert_eq!(s.paused_nanos, 1900);
        assert_eq!(s.longest_nanos, 1000);
        // Buckets of 1000 ns: 0-900 in the first, 2000-3000 the whole third.
        assert_eq!(
            (s.series.width(), s.series.buckets()),
            (1000, &[900, 0, 1000][..])
        );
        assert_eq!((s.frames, s.xoff, s.xon, s.quanta), (5, 3, 2, 30));
        assert_eq!(s.finish(6000, STORM), None);
    }

    /// A pause renewed past the threshold is one storm, from its first XOFF, when it ends.
    #[test]
    fn a_pause_held_past_the_threshold_is_a_storm() {
        let mut s = PriorityPause::default();
        let step = 50_000_000;
        for k in 0..3 {
            assert_eq!(s.frame((k * step, k + 1), 0xFFFF, 60_000_000, STORM), None);
        }
        // Paused from 0 until 100 ms + 60 ms; the capture ends at 130 ms.
        let e = s.finish(130_000_000, STORM).expect("a storm");
        assert_eq!((e.ts_nanos, e.frame), (0, 1));
        assert_eq!(
            e.kind,
            Kind::PauseStorm {
                priority: Some(3),
                duration_us: 130_000,
                xoff: 3
            }
        );
        assert_eq!(s.paused_nanos, 130_000_000);
        // 130 ms do not fit 1024 buckets of 1 µs: the width doubles until they do, 128 µs (1024 x 128 µs
        // = 131.072 ms); the last bucket (1015: 129.92-130.048 ms) holds 80 µs of the pause.
        assert_eq!(s.series.width(), 128_000);
        assert_eq!(s.series.buckets().len(), 1016);
        assert_eq!(s.series.buckets()[1015], 80_000);
        assert!(s.series.buckets()[..1015].iter().all(|b| *b == 128_000));
    }

    /// Hostile times: a pause near the end of time merges its buckets and does not overflow.
    #[test]
    fn a_pause_at_the_end_of_time_stays_bounded() {
        let mut s = PausedSeries::default();
        s.add(u64::MAX - 10, u64::MAX, 1);
        assert!(s.buckets().len() <= PausedSeries::CAPACITY);
        assert_eq!(s.buckets().iter().sum::<u64>(), 10);
    }
}
