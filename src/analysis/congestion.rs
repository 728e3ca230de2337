//! ECN and CNPs: a CE mark is answered when a CNP toward its sender follows within the window; a CNP that
//! reaches a sender starts the measurement of its reaction (`analysis::rate`), settled at the flow's end.
use super::events::{Event, Kind};
use super::flow::{self, Flow};
use super::{Engine, FlowId};

impl Engine {
    pub(super) fn ce_marked(&mut self, id: FlowId, ts: u64, frame: u64) {
        let f = &mut self.flows[id];
        f.expire_ce(ts.saturating_sub(self.cfg.cnp_window_nanos));
        if f.ce.pending.len() == flow::CE_PENDING_LIMIT {
            // More marks within one window than a link carries: the oldest is settled as unanswered.
            f.expire_ce(u64::MAX);
        }
        f.ce.pending.push_back((ts, frame));
    }

    /// A CNP in flow `id` (from B to A) answers the CE marks of the flow it is paired with, or of every flow
    /// from A to B when it is not paired; it reaches the sender of the paired flow (or of the one flow from
    /// A to B), whose reaction is measured.
    pub(super) fn cnp_received(&mut self, id: FlowId, ts: u64, number: u64) {
        let f = &self.flows[id];
        let (paired, reverse) = (f.paired_with, (f.key.dst, f.key.src));
        let sender = paired.or_else(
            || match self.requesters.get(&reverse).map(|v| v.as_slice()) {
                Some([one]) => Some(*one),
                _ => None,
            },
        );
        if let Some(s) = sender {
            self.reach_sender(s, ts, number);
        }
        if let Some(p) = paired {
            self.answer_ce(p, ts);
            return;
        }
        let n = self.requesters.get(&reverse).map_or(0, |v| v.len());
        for i in 0..n {
            if let Some(t) = self
                .requesters
                .get(&reverse)
                .and_then(|v| v.get(i))
                .copied()
            {
                self.answer_ce(t, ts);
            }
        }
    }

    /// A CNP (frame `number`, at `ts`) reached the sender of flow `id`: its rate before and after is
    /// measured.
    fn reach_sender(&mut self, id: FlowId, ts: u64, number: u64) {
        let start = self.totals.first_ts.unwrap_or(ts);
        let width = self.cfg.rate_window_nanos;
        let Flow {
            rate,
            reaction,
            first_ts,
            ..
        } = &mut self.flows[id];
        let r = reaction.get_or_insert_with(Default::default);
        let at = (ts.saturating_sub(start), ts, number);
        rate.cnp(r, at, first_ts.saturating_sub(start), width);
    }

    /// The end of flow `id` at `end`: the reaction in measurement is settled, and a sender that kept its
    /// rate after at least half of its measured CNPs (two at least) is `cnp_ignored`.
    pub(super) fn settle_reaction(&mut self, id: FlowId, end: u64) {
        let start = self.totals.first_ts.unwrap_or(end);
        let width = self.cfg.rate_window_nanos;
        let f = &mut self.flows[id];
        let Some(r) = f.reaction.as_deref_mut() else {
            return;
        };
        f.rate.finish(r, end.saturating_sub(start), width);
        let ignored = r.measured >= 2 && r.no_reduction * 2 >= r.measured;
        if let (true, Some((ts, frame))) = (ignored, r.first_ignored) {
            let kind = Kind::CnpIgnored {
                cnps: r.cnps,
                measured: r.measured,
                no_reduction: r.no_reduction,
            };
            self.raise(Event {
                ts_nanos: ts,
                flow: Some(id),
                frame,
                kind,
            });
        }
    }

    /// A CNP at `ts` toward the sender of flow `id`: its pending CE marks are answered if within the window.
    fn answer_ce(&mut self, id: FlowId, ts: u64) {
        let f = &mut self.flows[id];
        f.expire_ce(ts.saturating_sub(self.cfg.cnp_window_nanos));
        if f.ce.used() {
            f.ce.pending.clear();
        }
    }
}
