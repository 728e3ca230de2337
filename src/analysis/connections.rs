//! Connections: the pair of RC flows a CM handshake names (REQ, REP, RTU on QP 1), or that the hosts
//! printed (perftest's and ibv_*_pingpong's address lines: [`crate::source::printout`]), and the data path
//! held against it: the data goes to the announced QPNs, each side starts at the PSN it announced, the
//! handshake's path MTU applies to its flows.
//!
//! The starting PSNs: REQ's is the PSN the passive side sends from, REP's the active side's (each side
//! names the PSN it expects to receive, IBTA 12.7.2 and 12.7.12; every CM capture of the public corpus
//! shows it so); a printed PSN is the printing side's own send PSN.
use parsers::frame::Addr;
use rustc_hash::FxHashMap;

use super::events::{Event, Kind};
use smallvec::SmallVec;

use super::flow::{FlowKey, PairedBy};
use super::{Engine, Flow, FlowId};
use crate::source::printout::Exchange;

/// Connections kept at most (each is a few hundred bytes); beyond, handshakes are counted, not kept.
pub const CONNECTIONS_KEPT: usize = 65_536;

/// One side of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Side {
    /// Its IP address (the handshake's, or the printed GID); `None` when a printout gave no GID.
    pub addr: Option<Addr>,
    pub qpn: u32,
    /// The PSN it sends from; `None` until the handshake message that names it came.
    pub start_psn: Option<u32>,
}

/// Where a connection was learnt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    /// The CM handshake on the wire.
    Cm,
    /// What a host printed (`--expect`, or the command `capture` ran).
    Printout,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// REQ sent; no REP, or REP and no RTU yet.
    Connecting,
    Established,
    Rejected,
    /// REQ or REP unanswered past the CM response timeout, or retried and never answered.
    TimedOut,
    /// DREQ sent.
    Disconnected,
}

impl State {
    /// In words, for the text report.
    pub fn words(self) -> &'static str {
        match self {
            State::Connecting => "connecting",
            State::Established => "established",
            State::Rejected => "rejected",
            State::TimedOut => "timed out",
            State::Disconnected => "disconnected",
        }
    }

    /// Short, for a table column.
    pub fn short(self) -> &'static str {
        match self {
            State::Connecting => "conn",
            State::Established => "up",
            State::Rejected => "rej",
            State::TimedOut => "t/o",
            State::Disconnected => "down",
        }
    }
}

/// A CM message: where it was (frame, time) and how many times it came.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Seen {
    pub frame: u64,
    pub ts: u64,
    /// The first time (a retried message keeps its first).
    pub first_ts: u64,
    pub count: u32,
}

/// The handshake's messages as they came.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Handshake {
    pub req: Option<Seen>,
    pub mra: Option<Seen>,
    pub rep: Option<Seen>,
    pub rtu: Option<Seen>,
    pub rej: Option<(Seen, u16)>,
    pub dreq: Option<Seen>,
    pub drep: Option<Seen>,
    /// The active side's and the passive side's local communication IDs.
    pub comm_ids: (u32, Option<u32>),
    /// The CM response timeouts the REQ gave (4.096 µs × 2^n): the passive side's to answer the REQ, the
    /// active side's to answer the REP.
    pub response_timeouts: (u8, u8),
    pub max_retries: u8,
}

/// A connection: its two sides (the active one first: the CM client, or the host whose printout was read
/// first), what the handshake said, and the data path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connection {
    pub origin: Origin,
    pub sides: [Side; 2],
    pub state: State,
    /// The path MTU the handshake (or the printout) gave.
    pub mtu: Option<u32>,
    pub retry_count: Option<u8>,
    pub rnr_retry_count: Option<u8>,
    /// The REQ's Local ACK Timeout: the QPs' timeout exponent (4.096 µs × 2^n).
    pub ack_timeout: Option<u8>,
    /// The RDMA CM port of the service ID (the listener's port).
    pub port: Option<u16>,
    pub handshake: Handshake,
    /// The flows of the two directions: side 0 → side 1 (to side 1's QPN) and back.
    pub flows: [Option<FlowId>; 2],
    /// The first request PSN each direction carried, and its frame.
    pub first_request: [Option<(u32, u64)>; 2],
    /// CM: the flow of its REQ (to QP 1), for its events before any data flows.
    pub cm_flow: Option<FlowId>,
    /// A printout of the same QPs as a CM connection, which gives it way (its index).
    pub superseded_by: Option<u32>,
}

impl Connection {
    pub(super) fn new(origin: Origin, sides: [Side; 2]) -> Connection {
        Connection {
            origin,
            sides,
            state: match origin {
                Origin::Cm => State::Connecting,
                Origin::Printout => State::Established,
            },
            mtu: None,
            retry_count: None,
            rnr_retry_count: None,
            ack_timeout: None,
            port: None,
            handshake: Handshake::default(),
            flows: [None; 2],
            first_request: [None; 2],
            cm_flow: None,
            superseded_by: None,
        }
    }

    /// The same two QPs as `sides`, either way round (a side without an address matches any).
    pub(super) fn same_qps(&self, sides: &[Side; 2]) -> bool {
        let same = |a: &Side, b: &Side| {
            a.qpn == b.qpn && (a.addr.is_none() || b.addr.is_none() || a.addr == b.addr)
        };
        (same(&self.sides[0], &sides[0]) && same(&self.sides[1], &sides[1]))
            || (same(&self.sides[0], &sides[1]) && same(&self.sides[1], &sides[0]))
    }

    /// The flow key of direction `dir` (side `dir` to the other), when both addresses are known.
    fn key(&self, dir: usize) -> Option<FlowKey> {
        let (from, to) = (self.sides[dir], self.sides[1 - dir]);
        Some(FlowKey {
            src: from.addr?,
            dst: to.addr?,
            dest_qp: to.qpn,
        })
    }

    /// The flow `key` is this connection's direction 0 or 1.
    fn direction_of(&self, key: &FlowKey) -> Option<usize> {
        (0..2).find(|&d| {
            let (from, to) = (self.sides[d], self.sides[1 - d]);
            to.qpn == key.dest_qp
                && from.addr.is_none_or(|a| a == key.src)
                && to.addr.is_none_or(|a| a == key.dst)
        })
    }

    /// Between these two addresses, either way round (a side without an address matches any).
    fn between(&self, a: Addr, b: Addr) -> bool {
        let at = |s: &Side, x: Addr| s.addr.is_none_or(|y| y == x);
        (at(&self.sides[0], a) && at(&self.sides[1], b))
            || (at(&self.sides[0], b) && at(&self.sides[1], a))
    }
}

/// The connection table.
#[derive(Debug, Default)]
pub struct Connections {
    pub list: Vec<Connection>,
    /// CM connections by the active side's address and local communication ID.
    pub(super) by_comm: FxHashMap<(Addr, u32), u32>,
    /// Handshakes not kept (past [`CONNECTIONS_KEPT`]).
    pub dropped: u64,
    /// Some connection has a side without an address: every RC flow is a candidate for it.
    addressless: bool,
    /// The connections by their two QPNs (the smaller first): printouts when pushed, CM connections once
    /// the REP named the passive side's. What finds a printout's twin or its handshake in O(1).
    by_qpns: FxHashMap<(u32, u32), SmallVec<[u32; 2]>>,
}

/// The two QPNs of `sides`, the smaller first.
fn qpn_pair(sides: &[Side; 2]) -> (u32, u32) {
    let (a, b) = (sides[0].qpn, sides[1].qpn);
    (a.min(b), a.max(b))
}

impl Connections {
    pub(super) fn push(&mut self, c: Connection) -> Option<u32> {
        if self.list.len() >= CONNECTIONS_KEPT {
            self.dropped += 1;
            return None;
        }
        self.addressless |= c.sides.iter().any(|s| s.addr.is_none());
        let printout = c.origin == Origin::Printout;
        let qpns = qpn_pair(&c.sides);
        self.list.push(c);
        let id = (self.list.len() - 1) as u32;
        if printout {
            self.by_qpns.entry(qpns).or_default().push(id);
        }
        Some(id)
    }

    /// CM connection `id`'s REP named both QPNs: it is found by them from now on.
    pub(super) fn index_qpns(&mut self, id: u32) {
        if let Some(c) = self.list.get(id as usize) {
            let qpns = qpn_pair(&c.sides);
            self.by_qpns.entry(qpns).or_default().push(id);
        }
    }

    /// The connections of the same two QPNs as `sides`, which `keep` keeps.
    pub(super) fn of_qpns<'c>(
        &'c self,
        sides: &[Side; 2],
        keep: impl Fn(&Connection) -> bool + 'c,
    ) -> impl Iterator<Item = u32> + 'c {
        self.by_qpns
            .get(&qpn_pair(sides))
            .into_iter()
            .flatten()
            .copied()
            .filter(move |&i| self.list.get(i as usize).is_some_and(&keep))
    }
}

/// The link from a flow to its connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Link {
    pub connection: u32,
    /// 0: the flow goes from side 0 to side 1.
    pub dir: u8,
    /// Its first request is still to be held against the announced PSN.
    pub(crate) first_pending: bool,
    /// The flow carried another connection's traffic before: its next request starts a new epoch.
    pub(crate) new_epoch: bool,
}

impl Engine {
    /// What a host printed: one connection per exchange, unless the other host's printout gave it already
    /// (the same two QPs, seen from the other side).
    pub fn announce(&mut self, x: &Exchange) {
        let side = |a: &crate::source::printout::QpAddress| Side {
            addr: a.gid,
            qpn: a.qpn,
            start_psn: Some(a.psn),
        };
        let sides = [side(&x.local), side(&x.remote)];
        let same = |c: &Connection| {
            c.origin == Origin::Printout && (c.sides == sides || c.sides == [sides[1], sides[0]])
        };
        if self.connections.of_qpns(&sides, same).next().is_some() {
            return;
        }
        let mut c = Connection::new(Origin::Printout, sides);
        c.mtu = x.mtu;
        // The handshake of these QPs came first: it is what they were set up with.
        let handshake = |cm: &Connection| {
            cm.origin == Origin::Cm && cm.handshake.rep.is_some() && cm.same_qps(&sides)
        };
        c.superseded_by = self.connections.of_qpns(&sides, handshake).min();
        let superseded = c.superseded_by.is_some();
        if let Some(id) = self.connections.push(c).filter(|_| !superseded) {
            self.link_connection(id);
        }
    }

    /// Connection `id` now knows both QPNs: its flows, those there already and those to come, are its.
    pub(super) fn link_connection(&mut self, id: u32) {
        let c = &self.connections.list[id as usize];
        let keys = [c.key(0), c.key(1)];
        for (dir, key) in keys.into_iter().enumerate() {
            let flows: Vec<FlowId> = match key {
                Some(k) => {
                    self.conn_index.insert(k, (id, dir as u8));
                    self.index.get(&k).copied().into_iter().collect()
                }
                // A printout without GIDs: any flow to the QPN.
                None => {
                    let c = &self.connections.list[id as usize];
                    self.flows
                        .in_order()
                        .iter()
                        .filter(|f| c.direction_of(&f.key) == Some(dir))
                        .map(|f| f.id)
                        .collect()
                }
            };
            for f in flows {
                self.link_flow(f, id, dir as u8);
            }
        }
    }

    /// A new flow: is it a connection's?
    pub(crate) fn new_flow(&mut self, flow: FlowId) {
        let key = self.flows[flow].key;
        if let Some(&(id, dir)) = self.conn_index.get(&key) {
            self.link_flow(flow, id, dir);
        } else if self.connections.addressless
            && let Some((id, dir)) = self
                .connections
                .list
                .iter()
                .enumerate()
                .rev()
                .find_map(|(i, c)| c.direction_of(&key).map(|d| (i as u32, d as u8)))
        {
            self.link_flow(flow, id, dir);
        }
    }

    fn link_flow(&mut self, flow: FlowId, id: u32, dir: u8) {
        let mtu = self.connections.list[id as usize].mtu;
        let f = &mut self.flows[flow];
        let before = f.conn;
        if before.is_some_and(|l| l.connection == id) {
            return;
        }
        // Traffic already: of an older connection on the same QPs (a new epoch at its next request), or of
        // this one learnt late (a printout read at the end: hold its first request now).
        let late = f.req.psn.started && before.is_none();
        f.conn = Some(Link {
            connection: id,
            dir,
            first_pending: !late,
            new_epoch: f.req.psn.started && before.is_some(),
        });
        f.mtu = mtu.or(f.mtu);
        let first = f
            .first_request
            .map(|(frame, ts)| (frame, ts, f.req.psn.first));
        let c = &mut self.connections.list[id as usize];
        c.flows[usize::from(dir)] = Some(flow);
        let by = match c.origin {
            Origin::Cm => PairedBy::Cm,
            Origin::Printout => PairedBy::Printout,
        };
        // The other direction's flow, alive: the connection names the pair (when the traffic paired them
        // already, a connection learnt late still does: the same pairing whenever the printout is read).
        if let Some(other) = c.flows[usize::from(1 - dir)].filter(|o| self.flows.get(*o).is_some())
        {
            self.pair_flows(flow, other, by);
        }
        if let Some((frame, ts, psn)) = first.filter(|_| late) {
            self.first_request(flow, frame, ts, psn);
        }
    }

    /// Request `psn` in `frame` is the first of flow `flow` on its connection: the PSN its side announced?
    pub(crate) fn first_request(&mut self, flow: FlowId, frame: u64, ts: u64, psn: u32) {
        let Some(link) = self.flows[flow].conn else {
            return;
        };
        if let Some(l) = &mut self.flows[flow].conn {
            l.first_pending = false;
        }
        let c = &mut self.connections.list[link.connection as usize];
        let dir = usize::from(link.dir);
        c.first_request[dir] = Some((psn, frame));
        if let Some(announced) = c.sides[dir].start_psn
            && announced != psn
        {
            self.connection_event(
                link.connection,
                frame,
                ts,
                Kind::StartPsnMismatch {
                    connection: link.connection,
                    psn,
                    announced,
                },
            );
        }
    }

    pub(super) fn connection_event(&mut self, id: u32, frame: u64, ts: u64, kind: Kind) {
        let c = &self.connections.list[id as usize];
        let alive = |f: &Option<FlowId>| f.filter(|f| self.flows.get(*f).is_some());
        let flow = c.flows.iter().find_map(alive).or(alive(&c.cm_flow));
        self.raise(Event {
            ts_nanos: ts,
            flow,
            frame,
            kind,
        });
    }

    /// At the end of the capture: handshakes left unanswered, RC data toward QPNs no connection between
    /// its addresses announced.
    pub(crate) fn hold_connections(&mut self) {
        let end = self.totals.last_ts;
        for c in &mut self.connections.list {
            // No RTU on the wire, but the active side sent data: it took the REP.
            if c.state == State::Connecting
                && c.handshake.rep.is_some()
                && c.first_request[0].is_some()
            {
                c.state = State::Established;
            }
        }
        for id in 0..self.connections.list.len() as u32 {
            if let Some((frame, ts, kind)) = timed_out(&self.connections.list[id as usize], id, end)
            {
                self.connections.list[id as usize].state = State::TimedOut;
                self.connection_event(id, frame, ts, kind);
            }
        }
        if self.connections.list.is_empty() {
            return;
        }
        let unexpected: Vec<Event> = self
            .flows
            .in_order()
            .into_iter()
            .filter(|f| f.conn.is_none() && f.reliable && f.requests > 0 && f.key.dest_qp != GSI_QP)
            .filter_map(|f| {
                let c =
                    self.connections.list.iter().position(|c| {
                        c.superseded_by.is_none() && c.between(f.key.src, f.key.dst)
                    })?;
                let (frame, ts) = f.first_request.unwrap_or((f.first_frame, f.first_ts));
                Some(Event {
                    ts_nanos: ts,
                    flow: Some(f.id),
                    frame,
                    kind: Kind::UnexpectedQp {
                        qpn: f.key.dest_qp,
                        connection: c as u32,
                    },
                })
            })
            .collect();
        for e in unexpected {
            self.raise(e);
        }
    }
}

/// What a REJ reason (IBTA table 107) tells the person who reads it: the cause to look at.
pub fn reject_meaning(reason: u16) -> &'static str {
    match reason {
        1..=3 => "the passive side had no QP, EEC or resources left",
        4 => "the passive side timed out waiting",
        5 => "the passive side does not support the request",
        6 | 7 | 30 => "a stale or duplicate communication ID: a REQ retried across restarts?",
        8 => "nothing listens on that service ID (port)",
        9 => "the passive side does not support the transport type",
        10 => "stale connection: the QP is still connected from before",
        11..=23 | 32 | 33 => {
            "the REQ's path (GID, LID, SL, traffic class, rate, flow label) does not fit"
        }
        24 | 25 => "redirected to another port",
        26 => "the path MTU does not fit",
        27 => "not enough responder resources (RDMA READ depth)",
        28 => "the application refused the connection (consumer reject)",
        29 => "the RNR retry count does not fit",
        31 => "the CM class version does not fit",
        _ => "see IBTA table 107",
    }
}

/// QP 1, the General Services Interface: where CM MADs go.
pub const GSI_QP: u32 = 1;

/// A CM response timeout exponent in nanoseconds (4.096 µs × 2^n).
fn cm_timeout_ns(exp: u8) -> u64 {
    4096u64 << exp.min(31)
}

/// A handshake that never completed: a REQ with no REP or REJ (retried, or unanswered longer than the
/// passive side's response timeout), or a REP with no RTU and no data from the active side (likewise).
fn timed_out(c: &Connection, id: u32, end: u64) -> Option<(u64, u64, Kind)> {
    let h = &c.handshake;
    if c.origin != Origin::Cm || c.state != State::Connecting || h.rej.is_some() {
        return None;
    }
    let late = |s: Seen, exp: u8| s.count > 1 || end.saturating_sub(s.ts) > cm_timeout_ns(exp);
    let (seen, waiting_for, exp) = match (h.req, h.rep) {
        (Some(req), None) if h.mra.is_none() => (req, "REP", h.response_timeouts.0),
        (_, Some(rep)) if c.first_request[0].is_none() => (rep, "RTU", h.response_timeouts.1),
        _ => return None,
    };
    late(seen, exp).then_some((
        seen.frame,
        seen.ts,
        Kind::CmTimeout {
            connection: id,
            sent: seen.count,
            waiting_for,
            waited_us: end.saturating_sub(seen.first_ts) / 1000,
        },
    ))
}

impl Flow {
    /// The path MTU for this flow: its connection's, else the capture's.
    pub(crate) fn mtu_or(&self, capture: Option<u32>) -> Option<u32> {
        self.mtu.or(capture)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Config, Engine};
    use super::*;
    use crate::source::printout::QpAddress;

    fn address(host: u8, qpn: u32, psn: u32) -> QpAddress {
        QpAddress {
            lid: 0,
            qpn,
            psn,
            gid: Some(Addr::V4([10, 0, 0, host])),
        }
    }

    /// 65,535 QP pairs printed by both hosts: one connection each, found in O(1) by their QPNs (a scan of
    /// the table per exchange took 146 s for 65,536); another pair with one of the same QPNs is one more,
    /// the table's last (CONNECTIONS_KEPT), and one past it is counted, not kept.
    #[test]
    fn both_hosts_printouts_of_many_pairs_are_one_connection_each() {
        let mut e = Engine::new(Config::default());
        const PAIRS: u32 = CONNECTIONS_KEPT as u32 - 1;
        for i in 0..PAIRS {
            let (a, b) = (address(1, 0x100 + i, i), address(2, 0x20_0000 + i, 7 * i));
            e.announce(&Exchange {
                local: a,
                remote: b,
                mtu: Some(1024),
            });
            e.announce(&Exchange {
                local: b,
                remote: a,
                mtu: Some(1024),
            });
        }
        assert_eq!(e.connections.list.len(), PAIRS as usize);
        assert!(e.connections.list.iter().all(|c| c.superseded_by.is_none()));
        // Another pair with one of the same QPNs is another connection.
        e.announce(&Exchange {
            local: address(1, 0x100, 5),
            remote: address(3, 0x30_0000, 9),
            mtu: None,
        });
        assert_eq!(e.connections.list.len(), CONNECTIONS_KEPT);
        e.announce(&Exchange {
            local: address(1, 0x101, 5),
            remote: address(3, 0x30_0001, 9),
            mtu: None,
        });
        assert_eq!(
            (e.connections.list.len(), e.connections.dropped),
            (CONNECTIONS_KEPT, 1)
        );
    }
}
