//! A flow: one direction of one connection, keyed by (source IP, destination IP, BTH DestQP), and what the
//! engine counts for it.
use std::collections::VecDeque;

use parsers::frame::Addr;
use smallvec::SmallVec;

use super::diagnosis::ReadResponse;
use super::ecmp::{Tuple, UdpPorts};
use super::events::Group;
use super::latencies::Latencies;
use super::life::Life;
use super::on_use::{OnUse, empty};
use super::psn::{self, RequestPsns};
use super::rate::{Intervals, Rate, Reaction};
use super::series::Series;
use super::table::FlowId;
use super::timers::Timers;
use super::waiting::Waiting;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FlowKey {
    pub src: Addr,
    pub dst: Addr,
    pub dest_qp: u32,
}

/// How the two directions of a connection were found to belong together.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PairedBy {
    /// The CM handshake named both QPs.
    Cm,
    /// A host's printout (`--expect`, or the command `capture` ran) named both QPs.
    Printout,
    /// The responses named PSNs of the requests.
    Psn,
    /// The only unpaired requester and the only unpaired responder between two hosts, answering in time.
    Elimination,
}

/// What a flow carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Requests (sends, writes, reads, atomics): the requester's direction.
    Requester,
    /// ACKs, NAKs, READ responses, atomic ACKs: the responder's direction.
    Responder,
    /// Both: a QP that is requester and responder at once (bidirectional traffic on one connection).
    Both,
    /// UD datagrams.
    Datagram,
    /// Only CNPs.
    Cnp,
    Unknown,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct NakCounts {
    pub psn_seq_err: u64,
    pub invalid_request: u64,
    pub remote_access: u64,
    pub remote_op: u64,
    pub invalid_rd_request: u64,
    /// Reserved NAK codes (5-31).
    pub reserved: u64,
}

impl NakCounts {
    pub fn add(&mut self, o: &NakCounts) {
        self.psn_seq_err += o.psn_seq_err;
        self.invalid_request += o.invalid_request;
        self.remote_access += o.remote_access;
        self.remote_op += o.remote_op;
        self.invalid_rd_request += o.invalid_rd_request;
        self.reserved += o.reserved;
    }

    pub fn total(&self) -> u64 {
        self.psn_seq_err
            + self.invalid_request
            + self.remote_access
            + self.remote_op
            + self.invalid_rd_request
            + self.reserved
    }
}

/// What the responder's direction carried.
#[derive(Debug, Clone, Default)]
pub struct Responses {
    pub acks: u64,
    /// ACKs repeating the previous ACK's PSN and MSN.
    pub duplicate_acks: u64,
    pub naks: NakCounts,
    pub rnr_naks: u64,
    /// RNR NAKs by timer code (IBTA encoding, 0-31): (code, count), a few codes per flow.
    pub rnr_timers: Vec<(u8, u64)>,
    pub read_responses: u64,
    pub atomic_acks: u64,
    /// READ response packets whose PSN skipped ahead within a response.
    pub implied_naks: u64,
    /// Responses that came behind the highest PSN answered, with nothing resent: held up on the way.
    pub reordered: u64,
    /// The deepest of them, PSNs behind the highest.
    pub reorder_depth_max: u32,
    /// The response that acknowledged the highest PSN so far.
    pub(crate) highest: Option<Acknowledged>,
    pub(crate) last_ack: Option<(u32, u32)>,
    pub(crate) next_read_psn: Option<u32>,
    pub(crate) first_rnr_ts: u64,
    pub(crate) first_rnr_frame: u64,
    pub(crate) last_rnr_ts: u64,
    /// The last MSN of an AETH.
    pub(crate) last_msn: Option<u32>,
    /// The READ whose responses are coming.
    pub(crate) read: Option<ReadResponse>,
    /// The PSN of the last READ whose responses all came, in its lengths: a later answer to it (to a
    /// resend) is a duplicate the requester drops.
    pub(crate) read_completed: Option<u32>,
}

/// What a response acknowledged (a NAK names the PSN the responder expects: the one before it), and the
/// PSN it carried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Acknowledged {
    pub acked: u32,
    pub psn: u32,
}

/// SEND/WRITE message reassembly, from the requests the responder takes (in PSN order, each PSN once).
#[derive(Debug, Clone, Default)]
pub struct Messages {
    pub count: u64,
    pub bytes: u64,
    pub min_size: Option<u64>,
    pub max_size: u64,
    /// Messages whose payload total differs from the RETH DMA length of their first packet.
    pub length_mismatches: u64,
    /// The message being reassembled from the requests the responder takes: (RETH DMA length if a WRITE,
    /// payload so far).
    pub(crate) open: Option<(Option<u32>, u64)>,
}

impl Messages {
    pub(crate) fn complete(&mut self, size: u64) {
        self.count += 1;
        self.bytes += size;
        self.min_size = Some(self.min_size.map_or(size, |m| m.min(size)));
        self.max_size = self.max_size.max(size);
    }
}

/// A request waiting for its ACK, in 24 bytes (a busy requester keeps dozens): its PSN takes 24 bits of a
/// word, and the word's top bits say whether its latency is measured and what it awaits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Outstanding {
    psn_and_kind: u32,
    /// A READ's DMA length.
    dma_len: u32,
    pub sent: u64,
    pub frame: u64,
}

impl Outstanding {
    const PSN: u32 = 0xff_ffff;
    /// Its latency is measured (not a resend, which Karn's rule leaves out, nor a READ, timed to its
    /// first response).
    const SAMPLE: u32 = 1 << 24;
    const ATOMIC: u32 = 1 << 25;
    const READ: u32 = 1 << 26;

    /// A request at `psn` sent at `sent` in frame `frame`. `awaits`: a READ or an atomic waits for
    /// responses of its own, not for a later ACK (an answer for a later PSN while it waits says they were
    /// lost: an implied NAK, IBTA 9.7.5.1.4).
    pub fn new(psn: u32, sent: u64, frame: u64, sample: bool, awaits: Option<Awaits>) -> Self {
        let (kind, dma_len) = match awaits {
            None => (0, 0),
            Some(Awaits::AtomicAck) => (Self::ATOMIC, 0),
            Some(Awaits::ReadResponses { dma_len }) => (Self::READ, dma_len),
        };
        let sample = if sample { Self::SAMPLE } else { 0 };
        Outstanding {
            psn_and_kind: (psn & Self::PSN) | sample | kind,
            dma_len,
            sent,
            frame,
        }
    }

    pub fn psn(&self) -> u32 {
        self.psn_and_kind & Self::PSN
    }

    pub fn sample(&self) -> bool {
        self.psn_and_kind & Self::SAMPLE != 0
    }

    pub fn awaits(&self) -> Option<Awaits> {
        if self.psn_and_kind & Self::ATOMIC != 0 {
            Some(Awaits::AtomicAck)
        } else if self.psn_and_kind & Self::READ != 0 {
            Some(Awaits::ReadResponses {
                dma_len: self.dma_len,
            })
        } else {
            None
        }
    }
}

/// What a READ or an atomic waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Awaits {
    /// Its atomic ACK, at its own PSN.
    AtomicAck,
    /// Its READ responses, one per path MTU of its DMA length from its PSN, the last ending it.
    ReadResponses { dma_len: u32 },
}

/// A READ request waiting for its first response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PendingRead {
    pub psn: u32,
    pub sent: u64,
    pub dma_len: u32,
    /// Its latency is measured (not a resend, nor a READ resumed mid-message).
    pub sample: bool,
}

/// Request-to-response timing.
#[derive(Debug, Clone, Default)]
pub struct Timing {
    /// Requests waiting for an ACK, in PSN order. Bounded.
    pub(crate) outstanding: Waiting<Outstanding>,
    /// READ requests waiting for their first response, in PSN order. Bounded.
    pub(crate) reads: Waiting<PendingRead>,
    /// Request to the ACK (or atomic ACK) that names its PSN; retransmitted PSNs are not sampled.
    pub ack: Option<Box<Latencies>>,
    /// READ request to its first response packet.
    pub read: Option<Box<Latencies>>,
}

impl Timing {
    pub(crate) fn record(slot: &mut Option<Box<Latencies>>, nanos: u64) {
        slot.get_or_insert_with(|| Box::new(Latencies::new()))
            .record(nanos);
    }
}

/// When a flow's paired responder NAKed its requests (a sequence error, an RNR or an implied NAK), and
/// which of those NAKs a go-back-N answered: each go-back-N answers one. A requester resends from the PSN
/// a NAK named, or from its oldest request not yet acknowledged, before it (rxe). A go-back-N to a PSN past
/// every NAK, soon after the newest, is that resend's later packets, its first ones held up on the way:
/// the NAK explains it and waits on for them; once they are late, that go-back-N answered it.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct NakClock {
    /// When the newest NAK came, answered or not.
    last_ts: Option<u64>,
    unanswered: u32,
    /// The highest PSN an unanswered NAK named.
    highest_psn: u32,
    /// A go-back-N past them explained the unanswered NAKs: their resend is under way.
    explained: bool,
}

impl NakClock {
    pub(crate) fn on_nak(&mut self, ts: u64, psn: u32) {
        self.last_ts = Some(ts);
        if !self.waiting() || psn::diff(psn, self.highest_psn) > 0 {
            self.highest_psn = psn;
        }
        self.unanswered = self.unanswered.saturating_add(1);
        self.explained = false;
    }

    /// A go-back-N to `psn` began at `ts`: the time of the newest NAK, if one was unanswered. `held_up`:
    /// how long after a NAK its resends may still come out of order.
    pub(crate) fn on_go_back(&mut self, psn: u32, ts: u64, held_up: u64) -> Option<u64> {
        let nak = self.last_ts.filter(|_| self.waiting())?;
        let soon = ts.saturating_sub(nak) <= held_up;
        if self.explained && !soon {
            // The go-back-N past them answered a NAK after all: this one needs another.
            self.explained = false;
            self.unanswered -= 1;
            return self.on_go_back(psn, ts, held_up);
        }
        if soon && psn::diff(psn, self.highest_psn) > 0 {
            self.explained = true;
            return Some(nak);
        }
        self.unanswered -= 1;
        self.explained = false;
        Some(nak)
    }

    /// A new connection on the QP: its NAKs are answered by no go-back-N of the new one.
    pub(crate) fn on_new_epoch(&mut self) {
        *self = NakClock {
            last_ts: self.last_ts,
            ..NakClock::default()
        };
    }

    /// Some NAK waits for its go-back-N.
    pub(crate) fn waiting(&self) -> bool {
        self.unanswered > 0
    }

    /// The newest NAK came at or after `since`.
    pub(crate) fn since(&self, since: u64) -> bool {
        self.last_ts.is_some_and(|t| t >= since)
    }
}

#[derive(Debug, Clone)]
pub struct Flow {
    /// Its identity for its whole life.
    pub id: FlowId,
    pub key: FlowKey,
    /// The flow of the other direction of the same connection.
    pub paired_with: Option<FlowId>,
    /// How the pair was found.
    pub paired_by: Option<PairedBy>,
    pub first_ts: u64,
    pub last_ts: u64,
    /// The time of the packet before the last one (the idle time before a new connection on the QP).
    pub(crate) prev_ts: u64,
    /// First frame number, for events and the TUI.
    pub first_frame: u64,
    pub packets: u64,
    /// Frame bytes on the wire.
    pub bytes: u64,
    pub payload_bytes: u64,
    pub retransmitted_bytes: u64,
    pub requests: u64,
    pub responses: u64,
    /// PSN of the first and of the last packet, whatever they were.
    pub first_psn: u32,
    pub last_psn: u32,
    /// Opcode counts, a few opcodes per flow.
    pub opcodes: Opcodes,
    /// What its requests keep, allocated at its first request.
    pub req: OnUse<Requesting>,
    pub resp: OnUse<Responses>,
    /// ECN codepoints: Not-ECT, ECT(1), ECT(0), CE (IP header order).
    pub ecn: [u64; 4],
    pub fecn: u64,
    pub becn: u64,
    /// CNPs in this flow: CNPs sent toward this flow's destination QP.
    pub cnp: u64,
    /// Its CE marks and the CNPs that answered them, from the first mark.
    pub ce: OnUse<CeMarks>,
    pub icrc_bad: u64,
    pub icrc_unverifiable: u64,
    pub malformed: u64,
    /// VLAN PCP and DSCP of the last packet.
    pub pcp: Option<u8>,
    pub dscp: Option<u8>,
    /// UD: the DETH source QP.
    pub src_qp: Option<u32>,
    /// An RC or UC QP over UDP: its first packet's ports (what an ECMP hash sees of it).
    pub udp: Option<UdpPorts>,
    /// Its local ACK timer's firings, from the first.
    pub timers: Option<Box<Timers>>,
    pub series: Series,
    /// Bytes per `--rate-window-us` window.
    pub rate: Rate,
    /// The CNPs that reached this flow's sender and what it did after them (made at the first).
    pub reaction: Option<Box<Reaction>>,
    /// The times between this flow's CNPs (the notification point's CNP interval).
    pub cnp_intervals: OnUse<Intervals>,
    /// The NAKs its paired responder sent its requests, and which a go-back-N answered.
    pub(crate) naks: NakClock,
    /// When this flow last sent a new (not retransmitted) request.
    pub(crate) progress_ts: u64,
    /// Listed among the requester flows for pairing.
    pub(crate) registered: bool,
    /// Listed among the responder flows for pairing.
    pub(crate) answering: bool,
    /// The groups its events fell in (bit by [`super::events::Group::bit`]).
    pub raised: u16,
    /// Carried RC or XRC requests: a responder should answer them.
    pub reliable: bool,
    /// The frame and time of its first request.
    pub first_request: Option<(u64, u64)>,
    /// The connection it belongs to.
    pub conn: Option<super::connections::Link>,
    /// The path MTU its connection's handshake gave.
    pub mtu: Option<u32>,
    /// The logged QP (`--expect` NCCL/UCX logs) it leaves or reaches.
    pub job: Option<JobLink>,
}

/// What a flow's requests keep: the sub-states its first request fills, in one allocation (one instead of
/// five for each new requester flow: docs/speed.md "Many flows"). A flow that only answers holds none.
#[derive(Debug, Clone, Default)]
pub struct Requesting {
    pub psn: RequestPsns,
    /// The requester's state of the diagnosis.
    pub rc: super::diagnosis::Rc,
    pub timing: Timing,
    pub messages: Messages,
    /// Its time in each state, from its first request.
    pub life: Option<Life>,
}

empty!(Requesting, Responses, Intervals, CeMarks);

/// A flow's CE marks, held from its first (most flows carry none).
#[derive(Debug, Clone, Default)]
pub struct CeMarks {
    /// Times and frames of the marks not yet answered by a CNP (at most `CE_PENDING_LIMIT`).
    pub(crate) pending: VecDeque<(u64, u64)>,
    /// The marks no CNP answered within the window.
    pub without_cnp: u64,
    /// The first of them: time, frame.
    pub first_unanswered: Option<(u64, u64)>,
}

/// A flow's owner in the job's logs ([`super::jobs::Jobs::owners`]), and whether its traffic class was told
/// wrong already.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobLink {
    pub owner: u32,
    pub told: bool,
}

/// What a flow came to, worst last: the one word of its row in every view (the JSON's `state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    Ok,
    /// Congestion signals (CE marks, CNPs, FECN/BECN) or the lossless machinery failing (a pause storm, an
    /// unprotected priority, CNPs ignored), and no loss.
    Congested,
    /// Loss or damage: gaps, missing PSNs, retransmissions, NAKs, RNR NAKs, implied NAKs, timeouts, bad
    /// ICRCs, malformed frames.
    Lossy,
    /// Its connection broke, or the data path contradicts it (a reject, a handshake timeout, data toward
    /// an unannounced QPN, a first PSN other than announced).
    Misconnected,
    /// A protocol violation.
    Violation,
    /// Requests unanswered past the stall time.
    Stalled,
    /// Its requester gave up its retries.
    GaveUp,
    /// Its requester never heard back.
    NoResponse,
}

impl State {
    pub const ALL: [State; 8] = [
        State::Ok,
        State::Congested,
        State::Lossy,
        State::Misconnected,
        State::Violation,
        State::Stalled,
        State::GaveUp,
        State::NoResponse,
    ];

    pub fn name(self) -> &'static str {
        match self {
            State::Ok => "ok",
            State::Congested => "congested",
            State::Lossy => "lossy",
            State::Misconnected => "misconnected",
            State::Violation => "violation",
            State::Stalled => "stalled",
            State::GaveUp => "gave_up",
            State::NoResponse => "no_response",
        }
    }
}

/// How much trouble a flow shows, the one measure behind the text report's "most trouble first", the TUI's
/// sort and colours, the plots' choice and the flows a report of many lists: its worst diagnosis first (no
/// response, gave up, stall, violation, connection, timeouts, lossless failure), then loss and damage, then
/// congestion signals.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Trouble {
    /// 0 (none) to 7 (no response).
    pub diagnosis: u8,
    /// Gaps, missing PSNs, retransmissions, NAKs, RNR NAKs, implied NAKs, bad ICRCs, malformed frames.
    pub hard: u64,
    /// CE marks, CNPs, CE marks without a CNP.
    pub soft: u64,
}

impl Trouble {
    pub fn any(self) -> bool {
        self != Trouble::default()
    }

    /// One number that sorts as the measure does: the diagnosis in the top byte, then loss and damage a
    /// million times any congestion signal (saturating).
    pub fn score(self) -> u64 {
        const LOW: u64 = (1 << 56) - 1;
        let counts = self
            .hard
            .saturating_mul(1_000_000)
            .saturating_add(self.soft);
        (u64::from(self.diagnosis) << 56) | counts.min(LOW)
    }
}

/// The diagnosis rank of the groups a flow's events fell in (bits of [`Group::bit`]).
fn diagnosis_rank(raised: u16) -> u8 {
    const WORST_FIRST: [Group; 7] = [
        Group::NoResponse,
        Group::GaveUp,
        Group::Stall,
        Group::Violation,
        Group::Connection,
        Group::Timeout,
        Group::Lossless,
    ];
    WORST_FIRST
        .iter()
        .position(|g| raised & g.bit() != 0)
        .map_or(0, |i| (WORST_FIRST.len() - i) as u8)
}

/// CE marks awaiting a CNP per flow: a window's worth at line rate; older ones are settled first.
pub const CE_PENDING_LIMIT: usize = 16_384;

impl Flow {
    /// Settles the pending CE marks older than `cutoff`: no CNP can answer them any more.
    pub(crate) fn expire_ce(&mut self, cutoff: u64) {
        if !self.ce.used() {
            return;
        }
        let ce = &mut *self.ce;
        while let Some(&(ts, frame)) = ce.pending.front().filter(|(t, _)| *t < cutoff) {
            ce.pending.pop_front();
            ce.without_cnp += 1;
            ce.first_unanswered.get_or_insert((ts, frame));
        }
    }

    pub fn new(id: FlowId, key: FlowKey, ts: u64, frame: u64) -> Flow {
        Flow {
            id,
            key,
            paired_with: None,
            paired_by: None,
            first_ts: ts,
            last_ts: ts,
            prev_ts: ts,
            first_frame: frame,
            packets: 0,
            bytes: 0,
            payload_bytes: 0,
            retransmitted_bytes: 0,
            requests: 0,
            responses: 0,
            first_psn: 0,
            last_psn: 0,
            opcodes: Opcodes::default(),
            req: OnUse::default(),
            resp: OnUse::default(),
            ecn: [0; 4],
            fecn: 0,
            becn: 0,
            cnp: 0,
            ce: OnUse::default(),
            icrc_bad: 0,
            icrc_unverifiable: 0,
            malformed: 0,
            pcp: None,
            dscp: None,
            src_qp: None,
            udp: None,
            timers: None,
            series: Series::default(),
            rate: Rate::default(),
            reaction: None,
            cnp_intervals: OnUse::default(),
            naks: NakClock::default(),
            progress_ts: ts,
            registered: false,
            answering: false,
            raised: 0,
            reliable: false,
            first_request: None,
            conn: None,
            mtu: None,
            job: None,
        }
    }

    /// Its trouble: its diagnosis, then its counts.
    pub fn trouble(&self) -> Trouble {
        let sum = |v: &[u64]| v.iter().fold(0u64, |a, b| a.saturating_add(*b));
        Trouble {
            diagnosis: diagnosis_rank(self.raised),
            hard: sum(&[
                self.req.psn.gap_events,
                self.req.psn.missing,
                self.req.psn.retransmitted,
                self.resp.naks.total(),
                self.resp.rnr_naks,
                self.resp.implied_naks,
                self.icrc_bad,
                self.malformed,
            ]),
            soft: sum(&[self.ecn[3], self.cnp, self.ce.without_cnp]),
        }
    }

    /// What it came to: its worst diagnosis, else loss, else congestion.
    pub fn state(&self) -> State {
        let has = |g: Group| self.raised & g.bit() != 0;
        let t = self.trouble();
        if has(Group::NoResponse) {
            State::NoResponse
        } else if has(Group::GaveUp) {
            State::GaveUp
        } else if has(Group::Stall) {
            State::Stalled
        } else if has(Group::Violation) {
            State::Violation
        } else if has(Group::Connection) {
            State::Misconnected
        } else if t.hard > 0 || has(Group::Timeout) {
            State::Lossy
        } else if t.soft > 0 || self.fecn + self.becn > 0 || has(Group::Lossless) {
            State::Congested
        } else {
            State::Ok
        }
    }

    /// Its PFC priority: the VLAN PCP, or for untagged traffic the priority `map` gives its DSCP.
    pub fn priority(&self, map: &super::DscpMap) -> Option<u8> {
        self.pcp.or_else(|| self.dscp.and_then(|d| map.get(d)))
    }

    /// Payload bytes less those retransmitted: what got through, once.
    pub fn goodput_bytes(&self) -> u64 {
        self.payload_bytes.saturating_sub(self.retransmitted_bytes)
    }

    /// What an ECMP hash sees of it: an RC or UC QP over UDP.
    pub fn tuple(&self) -> Option<Tuple> {
        self.udp.map(|ports| Tuple {
            src: self.key.src,
            dst: self.key.dst,
            ports,
        })
    }

    /// Carries RoCE requests or their answers (not only CNPs): traffic PFC should keep lossless.
    pub fn carries_roce(&self) -> bool {
        self.requests > 0 || self.responses > 0
    }

    pub fn role(&self) -> Role {
        let ud = self
            .opcodes
            .iter()
            .any(|(op, _)| (0x60..0x80).contains(&op));
        match (self.requests > 0, self.responses > 0) {
            _ if ud => Role::Datagram,
            (true, true) => Role::Both,
            (true, false) => Role::Requester,
            (false, true) => Role::Responder,
            (false, false) if self.cnp > 0 => Role::Cnp,
            (false, false) => Role::Unknown,
        }
    }

    pub(crate) fn count_opcode(&mut self, opcode: u8) {
        self.opcodes.count(opcode);
    }
}

/// Packets by BTH opcode, in the order the opcodes came. Each count is packed with its opcode in the top
/// byte: 8 bytes an opcode, a flow's first three held in place (a busy flow's ten or so took 16 bytes
/// each, docs/speed.md "Many flows").
#[derive(Debug, Clone, Default)]
pub struct Opcodes(SmallVec<[u64; 3]>);

impl Opcodes {
    const COUNT: u64 = (1 << 56) - 1;

    fn count(&mut self, opcode: u8) {
        match self.0.iter_mut().find(|e| (**e >> 56) as u8 == opcode) {
            // 2^56 packets would take a 400 Gb/s link more than three years at its highest packet rate.
            Some(e) if *e & Self::COUNT < Self::COUNT => *e += 1,
            Some(_) => {}
            None => self.0.push(u64::from(opcode) << 56 | 1),
        }
    }

    /// (opcode, packets), in the order the opcodes came.
    pub fn iter(&self) -> impl Iterator<Item = (u8, u64)> + '_ {
        self.0.iter().map(|e| ((e >> 56) as u8, e & Self::COUNT))
    }
}

#[cfg(test)]
mod tests {
    use super::{Awaits, NakClock, Opcodes, Outstanding};

    /// Each request gives back what it was made with, at the PSN space's ends and with the largest DMA
    /// length, in 24 bytes.
    #[test]
    fn an_outstanding_request_keeps_its_psn_and_what_it_awaits() {
        let read = Some(Awaits::ReadResponses { dma_len: u32::MAX });
        for (psn, sample, awaits) in [
            (0, true, None),
            (0xff_ffff, false, read),
            (0x80_0000, false, Some(Awaits::AtomicAck)),
            (12_954_351, true, Some(Awaits::ReadResponses { dma_len: 0 })),
        ] {
            let o = Outstanding::new(psn, 7, u64::MAX, sample, awaits);
            assert_eq!((o.psn(), o.sample(), o.awaits()), (psn, sample, awaits));
            assert_eq!((o.sent, o.frame), (7, u64::MAX));
        }
        assert_eq!(std::mem::size_of::<Outstanding>(), 24);
    }

    /// RC SEND Only (0x04) twice, Acknowledge (0x11), UD SEND Only (0x64), then 0xff (a vendor opcode)
    /// three times: the order they came, each its own count, and the fourth past the three held in place.
    #[test]
    fn opcodes_keep_their_order_and_counts() {
        let mut opcodes = Opcodes::default();
        for op in [0x04, 0x11, 0x04, 0x64, 0xff, 0xff, 0xff] {
            opcodes.count(op);
        }
        let counted: Vec<(u8, u64)> = opcodes.iter().collect();
        assert_eq!(counted, [(0x04, 2), (0x11, 1), (0x64, 1), (0xff, 3)]);
    }

    const MS: u64 = 1_000_000;

    /// A NAK for 10; the go-back-N's 13 first (10 to 12 held up), soon after: the NAK explains it and
    /// waits on; then 10, its own resend, answers it: a go-back-N after that has none.
    #[test]
    fn a_go_back_n_past_the_nak_soon_after_it_is_its_resend_held_up() {
        let mut c = NakClock::default();
        c.on_nak(0, 10);
        assert_eq!(c.on_go_back(13, MS, 10 * MS), Some(0));
        assert!(c.waiting());
        assert_eq!(c.on_go_back(10, 3 * MS, 10 * MS), Some(0));
        assert!(!c.waiting());
        assert_eq!(c.on_go_back(10, 600 * MS, 10 * MS), None);
    }

    /// A NAK for 10 whose go-back-N seemed to begin at 13, and then nothing for 0.6 s: the 13 answered
    /// it, and a go-back-N to 10 now is the requester's timer.
    #[test]
    fn a_nak_answered_past_its_psn_explains_no_timer_after() {
        let mut c = NakClock::default();
        c.on_nak(0, 10);
        assert_eq!(c.on_go_back(13, MS, 10 * MS), Some(0));
        assert_eq!(c.on_go_back(10, 600 * MS, 10 * MS), None);
        // Two NAKs: the one left explains the later go-back-N.
        let mut c = NakClock::default();
        c.on_nak(0, 10);
        c.on_nak(MS, 20);
        assert_eq!(c.on_go_back(10, 2 * MS, 10 * MS), Some(MS));
        assert_eq!(c.on_go_back(20, 3 * MS, 10 * MS), Some(MS));
        assert_eq!(c.on_go_back(20, 600 * MS, 10 * MS), None);
    }
}
