//! Bounded state: a flow idle for longer than the flow timeout is finished and goes (within a sixteenth of
//! the timeout more), and when the table is full the least recently seen quarter goes. What they carried is
//! added up in [`Evicted`]. The flows left keep their ids ([`FlowId`]): nothing that names them changes.
use rustc_hash::FxHashSet;

use super::flow::Role;
use super::{Engine, FlowId};

/// The flows evicted, added up: what the verdict and the report still count of them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Evicted {
    pub flows: u64,
    pub packets: u64,
    pub bytes: u64,
    /// Of them, requesters, responders (and both), others (datagrams, CNPs only).
    pub by_role: [u64; 3],
    /// Of them, with loss, damage or congestion marks.
    pub troubled: u64,
    pub gap_events: u64,
    pub missing: u64,
    pub naks: u64,
    pub rnr_naks: u64,
    pub retransmitted: u64,
    pub ce: u64,
    pub cnp: u64,
    /// Their traffic by priority ([`super::flow::Flow::priority`]; index 8: unknown).
    pub by_priority: [Traffic; 9],
}

/// Flows and what they carried.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Traffic {
    pub flows: u64,
    /// On the wire.
    pub bytes: u64,
    /// Payload less retransmitted payload.
    pub goodput_bytes: u64,
}

impl Traffic {
    pub fn add(&mut self, f: &super::flow::Flow) {
        self.flows += 1;
        self.bytes += f.bytes;
        self.goodput_bytes += f.goodput_bytes();
    }
}

impl Engine {
    /// Flows idle longer than the flow timeout at `now` go. Once every sixteenth of the timeout, not at
    /// every sweep: flows that come and go all through a long capture (a few hundred a second) would
    /// otherwise pay a pass over the table at every sweep (four times a second) for the few that went since
    /// the last.
    pub(crate) fn evict_idle(&mut self, now: u64) {
        let Some(timeout) = self.cfg.flow_timeout_nanos else {
            return;
        };
        if now < self.next_idle_eviction {
            return;
        }
        self.next_idle_eviction = now.saturating_add(timeout / 16);
        let idle: Vec<FlowId> = self
            .flows
            .in_order()
            .iter()
            .filter(|f| now.saturating_sub(f.last_ts) > timeout)
            .map(|f| f.id)
            .collect();
        if !idle.is_empty() {
            self.evict(&idle, now);
        }
    }

    /// Before a new flow: with the table full, the least recently seen quarter goes (in O(flows), once every
    /// quarter of the table's new flows; of flows last seen at the same time, the older go first).
    pub(crate) fn make_room(&mut self, now: u64) {
        let Some(max) = self.cfg.max_flows else {
            return;
        };
        if self.flows.len() < max.max(1) {
            return;
        }
        // Last seen, then first seen: the order in which flows go. No sort of the whole table: a selection,
        // then the quarter going in the order the flows came, as the table keeps them.
        let mut seen: Vec<(u64, FlowId)> = self.flows.iter().map(|f| (f.last_ts, f.id)).collect();
        let quarter = (seen.len() / 4).max(1);
        seen.select_nth_unstable(quarter - 1);
        let mut old: Vec<FlowId> = seen[..quarter].iter().map(|&(_, id)| id).collect();
        old.sort_unstable();
        self.evict(&old, now);
    }

    /// Finishes and removes the flows `going`, at `now`. The ids of the others do not change.
    fn evict(&mut self, going: &[FlowId], now: u64) {
        for &id in going {
            self.close_flow(id, now);
            self.add_evicted(id);
        }
        for &id in going {
            self.forget_flow(id);
        }
        let gone: FxHashSet<FlowId> = going.iter().copied().collect();
        self.events.forget(|id| gone.contains(&id));
        self.last = None;
    }

    /// Flow `id` leaves the table and everything that found it by its key, address pair or pair.
    fn forget_flow(&mut self, id: FlowId) {
        let Some(f) = self.flows.remove(id) else {
            return;
        };
        if self.index.get(&f.key) == Some(&id) {
            self.index.remove(&f.key);
        }
        if let Some(p) = f.paired_with.and_then(|p| self.flows.get_mut(p))
            && p.paired_with == Some(id)
        {
            p.paired_with = None;
            p.paired_by = None;
        }
        let pair = (f.key.src, f.key.dst);
        for table in [&mut self.requesters, &mut self.responders] {
            if let Some(ids) = table.get_mut(&pair) {
                ids.retain(|r| *r != id);
                if ids.is_empty() {
                    table.remove(&pair);
                }
            }
        }
    }

    fn add_evicted(&mut self, id: FlowId) {
        let f = &self.flows[id];
        let e = &mut self.evicted;
        e.flows += 1;
        e.packets += f.packets;
        e.bytes += f.bytes;
        let role = match f.role() {
            Role::Requester => 0,
            Role::Responder | Role::Both => 1,
            _ => 2,
        };
        e.by_role[role] += 1;
        e.troubled += u64::from(f.trouble().any());
        e.gap_events += f.req.psn.gap_events;
        e.missing += f.req.psn.missing;
        e.naks += f.resp.naks.total();
        e.rnr_naks += f.resp.rnr_naks;
        e.retransmitted += f.req.psn.retransmitted;
        e.ce += f.ecn[3];
        e.cnp += f.cnp;
        let p = f.priority(&self.cfg.dscp_map).map_or(8, usize::from);
        e.by_priority[p.min(8)].add(f);
        let key = self.pair_of(f);
        self.evicted_pairs.add(key, f, &self.kept_pairs);
        if let Some(t) = f.tuple() {
            self.ecmp.evicted(&t, f.bytes, self.cfg.ecmp_members);
        }
    }
}

#[cfg(test)]
mod tests {
    use parsers::builder::{Net, RoceFrame};
    use parsers::frame::{Addr, LINKTYPE_ETHERNET, parse_frame};

    use super::super::{Config, Engine};

    /// An RC SEND_ONLY from 10.0.0.`src` to QP `qp` of 10.0.0.100.
    fn send(src: u8, qp: u32) -> Vec<u8> {
        let mut f = RoceFrame::new(0x04);
        if let Net::V4(ip) = &mut f.net {
            ip.src = [10, 0, 0, src];
            ip.dst = [10, 0, 0, 100];
        }
        f.bth.dest_qp = qp;
        f.payload = vec![1; 16];
        f.build()
    }

    fn feed(e: &mut Engine, number: u64, ts: u64, bytes: &[u8]) {
        let frame = parse_frame(LINKTYPE_ETHERNET, bytes, bytes.len(), &Default::default());
        e.ingest(number, ts, &frame);
    }

    fn sources(e: &Engine) -> Vec<u8> {
        e.flows
            .in_order()
            .iter()
            .map(|f| match f.key.src {
                Addr::V4(a) => a[3],
                Addr::V6(_) | Addr::Lid(_) => 0,
            })
            .collect()
    }

    /// A full table of 4: flows 1-4 seen at 1, 2, 3, 4 ms, flow 1 again at 5 ms; flow 5 makes room by
    /// evicting the least recently seen quarter (one flow): flow 2. The others keep their numbers, flow 5
    /// gets the next one, and what flow 2 carried is added up.
    #[test]
    fn the_least_recently_seen_go_first() {
        let mut e = Engine::new(Config {
            max_flows: Some(4),
            ..Config::default()
        });
        for src in 1..=4u8 {
            feed(
                &mut e,
                u64::from(src),
                u64::from(src) * 1_000_000,
                &send(src, 0x11),
            );
        }
        feed(&mut e, 5, 5_000_000, &send(1, 0x11));
        let frame = send(5, 0x11);
        feed(&mut e, 6, 6_000_000, &frame);
        assert_eq!(sources(&e), vec![1, 3, 4, 5]);
        let numbers: Vec<u64> = e.flows.in_order().iter().map(|f| f.id.number()).collect();
        assert_eq!(numbers, vec![0, 2, 3, 4]);
        assert_eq!(
            (
                e.evicted.flows,
                e.evicted.packets,
                e.evicted.bytes,
                e.evicted.by_role[0]
            ),
            (1, 1, frame.len() as u64, 1)
        );
        // Flow 1 counts its two packets still.
        assert_eq!(e.flows.in_order()[0].packets, 2);
    }

    /// The least recently seen go first, and of flows last seen at the same time the older: a full table of
    /// 8, flows 1 and 2 last seen at 5 ms, flow 3 at 1 ms (it came after them, its packet stamped earlier),
    /// flows 4-8 at 6-10 ms. The quarter that goes for flow 9 is two flows: flow 3, then flow 1, the older
    /// of the two seen at 5 ms. (Taking, in the order flows came, those seen no later than the second
    /// earliest time, 5 ms, took flows 1 and 2 and kept flow 3, the least recently seen.)
    #[test]
    fn the_least_recently_seen_go_before_ties_of_older_flows() {
        let mut e = Engine::new(Config {
            max_flows: Some(8),
            ..Config::default()
        });
        let seen = [5, 5, 1, 6, 7, 8, 9, 10];
        for (src, ms) in (1u8..).zip(seen) {
            feed(&mut e, u64::from(src), ms * 1_000_000, &send(src, 0x11));
        }
        feed(&mut e, 9, 11_000_000, &send(9, 0x11));
        assert_eq!(sources(&e), vec![2, 4, 5, 6, 7, 8, 9]);
    }

    /// A flow idle past the timeout goes at the next sweep; a busy one stays.
    #[test]
    fn idle_flows_go() {
        let mut e = Engine::new(Config {
            flow_timeout_nanos: Some(10_000_000_000),
            ..Config::default()
        });
        feed(&mut e, 1, 1_000_000_000, &send(1, 0x11));
        for (n, s) in (2..30u64).zip(1..) {
            feed(&mut e, n, 1_000_000_000 + s * 500_000_000, &send(2, 0x12));
        }
        // Flow 1 was last seen at 1 s; by 15.5 s it is 14.5 s idle (timeout 10 s).
        assert_eq!(sources(&e), vec![2]);
        assert_eq!(e.evicted.flows, 1);
    }

    /// Idle flows are looked for once every sixteenth of the timeout (0.625 s of 10 s), at the sweeps (every
    /// quarter of the 1 s stall time): a flow last seen at 1.5 s stays while it is idle for 10 s at most
    /// (until 11.5 s), and is gone once it has been idle for 10 s + 0.625 s + 0.25 s (at 12.375 s). (Looking
    /// once every quarter of the timeout, it would stay until 13.75 s.)
    #[test]
    fn idle_flows_go_within_a_sixteenth_of_the_timeout() {
        let mut e = Engine::new(Config {
            flow_timeout_nanos: Some(10_000_000_000),
            ..Config::default()
        });
        feed(&mut e, 1, 1_000_000_000, &send(1, 0x11));
        // Flow 2 every 50 ms from 1.05 s on.
        let mut n = 21;
        let mut at = |e: &mut Engine, ms: u64| {
            while n * 50 <= ms {
                feed(e, n, n * 50_000_000, &send(2, 0x12));
                n += 1;
            }
        };
        at(&mut e, 1_450);
        feed(&mut e, 1000, 1_500_000_000, &send(1, 0x11));
        at(&mut e, 11_500);
        assert_eq!(sources(&e), vec![1, 2], "idle for 10 s, not longer");
        at(&mut e, 12_375);
        assert_eq!(sources(&e), vec![2]);
    }
}
