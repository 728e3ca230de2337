//! Expert events, like Wireshark's expert info: severity, time, flow, the frame that shows it and what
//! happened. Bounded: after `LIMIT` events only counts are kept.
use rustc_hash::{FxHashMap, FxHashSet};

pub use super::kinds::{Group, Kind, KindDoc, ReadMismatch, Severity};
use super::table::FlowId;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Event {
    pub ts_nanos: u64,
    /// The flow it is about.
    pub flow: Option<FlowId>,
    /// Frame number in the capture.
    pub frame: u64,
    pub kind: Kind,
}

#[derive(Debug, Default, Clone)]
pub struct Events {
    pub list: Vec<Event>,
    /// Events not kept: the list was full, or their flow had many of their kind already.
    pub dropped: u64,
    /// Per flow and kind: how many came, and the slot of the last kept (the one the newest replaces).
    per_kind: FxHashMap<(FlowId, &'static str), (u32, usize)>,
    /// Events that say the lossless machinery failed ([`Kind::is_lossless_failure`]), kept or not.
    pub lossless_failures: u64,
    /// The kinds raised for the newest frame that raised any, kept or not (the export's per-frame column).
    pub raised: Raised,
    /// The places in `list` of events taken back (a gap whose PSNs came after all, held up on the way):
    /// left out of every report, and out of the list at the end.
    retracted: FxHashSet<usize>,
}

/// The kinds of the events raised for one frame, each once, in the order raised (up to [`Raised::MAX`]:
/// one frame raises two or three at most).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Raised {
    pub frame: u64,
    kinds: [&'static str; Raised::MAX],
    len: u8,
}

impl Raised {
    pub const MAX: usize = 8;

    fn add(&mut self, frame: u64, kind: &'static str) {
        if frame < self.frame {
            // Settled late (a request the next one explained): that frame has gone by.
            return;
        }
        if frame != self.frame {
            *self = Raised {
                frame,
                ..Raised::default()
            };
        }
        if !self.kinds().contains(&kind) && usize::from(self.len) < Self::MAX {
            self.kinds[usize::from(self.len)] = kind;
            self.len += 1;
        }
    }

    pub fn kinds(&self) -> &[&'static str] {
        &self.kinds[..usize::from(self.len)]
    }

    /// The kinds raised for frame `frame` (none when the newest events were for another).
    pub fn of(&self, frame: u64) -> &[&'static str] {
        if self.frame == frame {
            self.kinds()
        } else {
            &[]
        }
    }
}

impl Events {
    pub const LIMIT: usize = 10_000;
    /// Events of one kind kept per flow: the first this many and the newest, so that one flow in an RNR
    /// storm or a loss burst does not crowd out the others.
    pub const PER_FLOW_KIND: u32 = 8;

    /// Keeps the event; returns where it is in the list (`None` when it was not kept).
    pub fn push(&mut self, e: Event) -> Option<usize> {
        self.lossless_failures += u64::from(e.kind.is_lossless_failure());
        self.raised.add(e.frame, e.kind.name());
        if let Some(flow) = e.flow {
            let seen = self
                .per_kind
                .entry((flow, e.kind.name()))
                .or_insert((0, usize::MAX));
            seen.0 = seen.0.saturating_add(1);
            if seen.0 > Self::PER_FLOW_KIND + 1
                && let Some(last) = self.list.get_mut(seen.1)
            {
                *last = e;
                self.retracted.remove(&seen.1);
                self.dropped += 1;
                return Some(seen.1);
            }
            if self.list.len() < Self::LIMIT {
                seen.1 = self.list.len();
            }
        }
        if self.list.len() < Self::LIMIT {
            self.list.push(e);
            Some(self.list.len() - 1)
        } else {
            self.dropped += 1;
            None
        }
    }

    /// The event at `at` told of something that was not (its place, as [`Events::push`] gave it).
    pub(crate) fn retract(&mut self, at: usize) {
        if at < self.list.len() {
            self.retracted.insert(at);
        }
    }

    /// The events kept and not taken back, in the order kept.
    pub fn kept(&self) -> impl Iterator<Item = &Event> {
        self.list
            .iter()
            .enumerate()
            .filter(|(i, _)| !self.retracted.contains(i))
            .map(|(_, e)| e)
    }

    /// At the end: the events taken back leave the list, which is then in time order.
    pub(crate) fn settle(&mut self) {
        if !self.retracted.is_empty() {
            let mut at = 0;
            let retracted = std::mem::take(&mut self.retracted);
            self.list.retain(|_| {
                at += 1;
                !retracted.contains(&(at - 1))
            });
        }
        self.list.sort_by_key(|e| (e.ts_nanos, e.frame));
    }

    /// Flows were evicted: their counts go (their events stay, naming flows no longer alive).
    pub(crate) fn forget(&mut self, gone: impl Fn(FlowId) -> bool) {
        self.per_kind.retain(|(flow, _), _| !gone(*flow));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gap(flow: u64, frame: u64) -> Event {
        Event {
            ts_nanos: frame,
            flow: Some(FlowId::for_test(flow)),
            frame,
            kind: Kind::PsnGap {
                missing: 1,
                after: 0,
            },
        }
    }

    /// The kinds raised for the newest frame, each once, kept or not; another frame's start afresh.
    #[test]
    fn the_kinds_raised_for_a_frame_are_kept_until_the_next_frame_raises_any() {
        let mut e = Events::default();
        for _ in 0..12 {
            e.push(gap(0, 7));
        }
        e.push(Event {
            kind: Kind::CeWithoutCnp { count: 1 },
            ..gap(0, 7)
        });
        assert_eq!(e.raised.of(7), ["psn_gap", "ce_without_cnp"]);
        assert!(e.raised.of(6).is_empty());
        e.push(gap(1, 9));
        assert_eq!(e.raised.of(9), ["psn_gap"]);
        assert!(e.raised.of(7).is_empty());
    }

    /// One flow's 20 gaps keep its first 8 and its newest; another flow's 3 are all kept.
    #[test]
    fn a_flow_keeps_the_first_and_the_newest_of_a_kind() {
        let mut e = Events::default();
        for frame in 1..=20 {
            e.push(gap(0, frame));
        }
        for frame in 21..=23 {
            e.push(gap(1, frame));
        }
        let frames: Vec<u64> = e.list.iter().map(|e| e.frame).collect();
        assert_eq!(frames, vec![1, 2, 3, 4, 5, 6, 7, 8, 20, 21, 22, 23]);
        assert_eq!(e.dropped, 11);
        // Another kind of the same flow has its own count.
        e.push(Event {
            kind: Kind::CeWithoutCnp { count: 1 },
            ..gap(0, 24)
        });
        assert_eq!(e.list.len(), 13);
        // After flow 0's eviction its counts go, its events stay; flow 1 keeps its count.
        e.forget(|id| id.number() == 0);
        assert!(e.list.iter().take(9).all(|e| e.flow.is_some()));
        for frame in 25..=30 {
            e.push(gap(1, frame));
        }
        // Flow 1 had 3: 6 more make 9, all kept (the 9th is the slot the newest takes over).
        assert_eq!(e.list.len(), 13 + 6);
        e.push(gap(1, 31));
        assert_eq!(e.list.len(), 13 + 6, "the 10th takes the newest's slot");
    }
}
