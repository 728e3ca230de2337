//! The CM handshake on QP 1 (REQ, MRA, REP, RTU, REJ, DREQ, DREP): it makes, establishes and ends the
//! connection table's CM connections. Messages are tied to their connection by communication IDs: the
//! active side sends with its own, the passive side names it as the remote one.
use parsers::cm::{CmMessage, path_mtu_bytes};
use parsers::frame::Addr;

use super::connections::{Connection, Connections, Origin, Seen, Side, State};
use super::events::Kind;
use super::{Engine, FlowId};

impl Seen {
    /// The message came again (or for the first time) in `frame` at `ts`.
    fn again(last: Option<Seen>, frame: u64, ts: u64) -> Seen {
        Seen {
            frame,
            ts,
            first_ts: last.map_or(ts, |s| s.first_ts),
            count: last.map_or(1, |s| s.count.saturating_add(1)),
        }
    }
}

/// A message's own and its peer's communication IDs (REQ knows only its own).
fn comm_ids(m: &CmMessage) -> Option<(u32, Option<u32>)> {
    Some(match m {
        CmMessage::Req(r) => (r.local_comm_id, None),
        CmMessage::Mra(m) => (m.local_comm_id, Some(m.remote_comm_id)),
        CmMessage::Rej(r) => (r.local_comm_id, Some(r.remote_comm_id)),
        CmMessage::Rep(r) => (r.local_comm_id, Some(r.remote_comm_id)),
        CmMessage::Rtu(c) | CmMessage::Drep(c) => (c.local_comm_id, Some(c.remote_comm_id)),
        CmMessage::Dreq(d) => (d.local_comm_id, Some(d.remote_comm_id)),
        CmMessage::SidrReq(_) | CmMessage::SidrRep(_) | CmMessage::Other { .. } => return None,
    })
}

impl Connections {
    /// The connection a message from `src` to `dst` belongs to.
    fn of(&self, src: Addr, dst: Addr, m: &CmMessage) -> Option<u32> {
        let (local, remote) = comm_ids(m)?;
        self.by_comm
            .get(&(src, local))
            .or_else(|| remote.and_then(|r| self.by_comm.get(&(dst, r))))
            .copied()
    }
}

impl Engine {
    /// A CM message in frame `number` of flow `flow` (to QP 1), from `src` to `dst`.
    pub(crate) fn cm(
        &mut self,
        flow: FlowId,
        number: u64,
        ts: u64,
        src: Addr,
        dst: Addr,
        m: &CmMessage,
    ) {
        let id = match (self.connections.of(src, dst, m), m) {
            (Some(id), _) => id,
            (None, CmMessage::Req(r)) => {
                let side = |addr, qpn| Side {
                    addr: Some(addr),
                    qpn,
                    start_psn: None,
                };
                let mut c = Connection::new(Origin::Cm, [side(src, r.local_qpn), side(dst, 0)]);
                c.cm_flow = Some(flow);
                let Some(id) = self.connections.push(c) else {
                    return;
                };
                self.connections.by_comm.insert((src, r.local_comm_id), id);
                id
            }
            // A message of a handshake whose REQ the capture missed: nothing to hold it to.
            _ => return,
        };
        if let Some(kind) = self.cm_step(id, number, ts, m) {
            self.connection_event(id, number, ts, kind);
        }
    }

    /// What message `m` does to connection `id`, and the event it makes.
    fn cm_step(&mut self, id: u32, number: u64, ts: u64, m: &CmMessage) -> Option<Kind> {
        let c = &mut self.connections.list[id as usize];
        let h = &mut c.handshake;
        let qpns = |c: &Connection| [c.sides[0].qpn, c.sides[1].qpn];
        match m {
            CmMessage::Req(r) => {
                h.req = Some(Seen::again(h.req, number, ts));
                h.comm_ids.0 = r.local_comm_id;
                h.response_timeouts = (r.remote_cm_response_timeout, r.local_cm_response_timeout);
                // The passive side sends from the REQ's starting PSN (it names what the active side expects).
                c.sides[1].start_psn = Some(r.starting_psn);
                c.mtu = path_mtu_bytes(r.path_mtu);
                c.retry_count = Some(r.retry_count);
                c.rnr_retry_count = Some(r.rnr_retry_count);
                c.ack_timeout = Some(r.primary.local_ack_timeout);
                c.port = r.service_id.ip_port();
                None
            }
            CmMessage::Mra(_) => {
                h.mra = Some(Seen::again(h.mra, number, ts));
                None
            }
            CmMessage::Rep(r) => {
                let first = h.rep.is_none();
                h.rep = Some(Seen::again(h.rep, number, ts));
                h.comm_ids.1 = Some(r.local_comm_id);
                c.sides[1].qpn = r.local_qpn;
                c.sides[0].start_psn = Some(r.starting_psn);
                if first {
                    self.supersede_printouts(id);
                    self.link_connection(id);
                }
                None
            }
            CmMessage::Rtu(_) => {
                let first = h.rtu.is_none();
                h.rtu = Some(Seen::again(h.rtu, number, ts));
                (first && c.state == State::Connecting).then(|| {
                    c.state = State::Established;
                    Kind::Connection {
                        connection: id,
                        qpns: qpns(c),
                        mtu: c.mtu,
                    }
                })
            }
            CmMessage::Rej(r) => {
                let seen = Seen::again(h.rej.map(|r| r.0), number, ts);
                h.rej = Some((seen, r.reason));
                (seen.count == 1).then(|| {
                    c.state = State::Rejected;
                    Kind::CmReject {
                        connection: id,
                        reason: r.reason,
                    }
                })
            }
            CmMessage::Dreq(_) => {
                let first = h.dreq.is_none();
                h.dreq = Some(Seen::again(h.dreq, number, ts));
                first.then(|| {
                    c.state = State::Disconnected;
                    Kind::Disconnect {
                        connection: id,
                        qpns: qpns(c),
                    }
                })
            }
            CmMessage::Drep(_) => {
                h.drep = Some(Seen::again(h.drep, number, ts));
                None
            }
            CmMessage::SidrReq(_) | CmMessage::SidrRep(_) | CmMessage::Other { .. } => None,
        }
    }

    /// A host's printout of the same two QPs as CM connection `id`: the handshake is what the QPs were set
    /// up with (perftest -R prints PSNs of its own that the CM does not use), the printout gives way.
    fn supersede_printouts(&mut self, id: u32) {
        self.connections.index_qpns(id);
        let cm = self.connections.list[id as usize].sides;
        let printed = |c: &Connection| {
            c.origin == Origin::Printout && c.superseded_by.is_none() && c.same_qps(&cm)
        };
        let twins: Vec<u32> = self.connections.of_qpns(&cm, printed).collect();
        for t in twins {
            if let Some(c) = self.connections.list.get_mut(t as usize) {
                c.superseded_by = Some(id);
            }
        }
    }
}
