//! ECN and CNPs: a CE mark is answered when a CNP toward its sender follows within the window.
use super::{Engine, flow};

impl Engine {
    pub(super) fn ce_marked(&mut self, id: u32, ts: u64, frame: u64) {
        let f = &mut self.flows[id as usize];
        f.expire_ce(ts.saturating_sub(self.cfg.cnp_window_nanos));
        if f.ce_pending.len() == flow::CE_PENDING_LIMIT {
            // More marks within one window than a link carries: the oldest is settled as unanswered.
            f.expire_ce(u64::MAX);
        }
        f.ce_pending.push_back((ts, frame));
    }

    /// A CNP in flow `id` (from B to A) answers the CE marks of the flow it is paired with, or of every flow
    /// from A to B when it is not paired.
    pub(super) fn cnp_received(&mut self, id: u32, ts: u64) {
        let f = &self.flows[id as usize];
        if let Some(p) = f.paired_with {
            self.answer_ce(p, ts);
            return;
        }
        let reverse = (f.key.dst, f.key.src);
        let n = self.requesters.get(&reverse).map_or(0, Vec::len);
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

    /// A CNP at `ts` toward the sender of flow `id`: its pending CE marks are answered if within the window.
    fn answer_ce(&mut self, id: u32, ts: u64) {
        let f = &mut self.flows[id as usize];
        f.expire_ce(ts.saturating_sub(self.cfg.cnp_window_nanos));
        f.ce_pending.clear();
    }
}
