//! Synthetic RoCEv2 traffic with its ground truth: a discrete-event simulation of RC connections between a
//! few hosts, as a switch port mirror sees them, streamed to a classic pcap (nanosecond timestamps, Ethernet).
//! Shared by `examples/synth.rs` (the command) and `tests/synth.rs` (which checks `rocescope analyze` against
//! the truth); included in both with `#[path]`.
//!
//! # Model
//!
//! - Hosts 10.0.0.1..=10.0.0.N (MAC 02:00:00:00:00:0N) on one switch; the capture is a mirror of the switch.
//!   Each connection joins two hosts (connections are spread over the host pairs, in either direction) and has
//!   two QPNs: the requester sends requests to the responder's QPN, the responder sends ACKs, NAKs, READ
//!   responses, atomic ACKs and CNPs to the requester's QPN. Start PSNs are random; one connection in four
//!   starts a little below 0xFFFFFF so that its PSNs wrap.
//! - Requesters post messages after an exponential think time: RDMA WRITE (40 %), SEND (30 %), READ (20 %),
//!   FETCH_ADD / CMP_SWAP (10 %), weights varied per connection. SEND and WRITE are segmented at the path MTU
//!   (FIRST/MIDDLE/LAST or ONLY, some with immediate data; WRITE FIRST/ONLY carry a RETH with the message
//!   length; LAST/ONLY ask for an ACK). A READ request takes one PSN per response packet. Packets of a message
//!   leave back to back at 25 Gb/s; the requester does not wait for ACKs (no window).
//! - Responders accept in-order requests only. They ACK every `ack_every` (4, 8 or 16) SEND/WRITE packets and
//!   every packet with AckReq (coalesced ACK for the last in-order PSN, with the MSN), answer a READ with its
//!   response packets (FIRST/MIDDLE/LAST or ONLY; AETH on all but MIDDLE) and an atomic with an ATOMIC
//!   ACKNOWLEDGE. A request ahead of the expected PSN gets one NAK (PSN sequence error, PSN = the expected
//!   PSN); further out-of-sequence requests are dropped silently until the expected PSN arrives.
//! - A requester receiving that NAK goes back N: it resends every packet from the NAKed PSN on, then goes on
//!   with new ones.
//! - Loss: a new request packet is lost with probability `loss`, unless its connection is still recovering
//!   from a previous loss (from the drop until the requester sends a new packet after its go-back-N), so that
//!   every loss is one clean episode. Losses alternate between two places:
//!   - before the mirror (odd losses: the 1st, 3rd, ...): the capture never sees the packet. It shows a PSN
//!     gap at the next request (the PSNs the lost packet used are missing), the NAK, and the go-back-N: the
//!     resent lost PSN is a retransmission seen for the first time, the PSNs after it are duplicates.
//!   - after the mirror (even losses): the switch drops it on the way out, after the copy. The capture sees
//!     the packet once, then the NAK, then every resent PSN again: retransmissions that are all duplicates.
//! - ECN: senders use ECT(0). The switch marks a request packet CE with probability `ce` (lost packets are
//!   not marked). The receiver answers each CE mark with a CNP (opcode 0x81, BECN set, DestQP = the sender's
//!   QPN, from the receiver to the sender, DSCP 48, Not-ECT) 1-9 µs after the packet arrives, except for a
//!   fraction `unanswered` of the marks it leaves without a CNP. To keep "not followed by a CNP within the
//!   window" exact, a mark is only left unanswered when no CNP toward that sender is still due, once every
//!   connection has had its first response (so the analyzer has paired the directions), and its connection
//!   gets no other CE mark for twice the CNP window after it.
//! - Every frame is built whole by `parsers::builder::RoceFrame` (lengths, IPv4 checksum, pad, ICRC). Frames
//!   are written as the simulation produces them, in time order; timestamps strictly increase (ties are
//!   pushed 1 ns apart). Memory is bounded by the connections and the packets in flight.
//!
//! # Ground truth
//!
//! Counted from the simulation as each frame is written (so a capture cut after N frames counts only what
//! it holds), in the words of the `rocescope analyze --json` schema, per flow (src, dst, dest_qp) and in
//! total: a PSN gap is the first request captured after a loss before the mirror (missing = the PSNs the lost
//! packet took); retransmitted = resent packets; duplicates = resent packets whose earlier copy was captured;
//! retransmission episodes = go-back-N rewinds; NAKs and CNPs as sent; CE = CE-marked packets;
//! CE without CNP = marks left unanswered, more than the window before the end of the capture; messages =
//! SEND/WRITE messages every packet of which was captured at least once (each message once, however often
//! resent).
#![allow(dead_code)]

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};
use std::io::{self, Write};

use parsers::aeth::{Aeth, NakCode, Syndrome};
use parsers::atomic::{AtomicAckEth, AtomicEth};
use parsers::bth::Bth;
use parsers::builder::{Net, RoceFrame};
use parsers::cnp::Cnp;
use parsers::frame::ExtHeaders;
use parsers::imm::ImmDt;
use parsers::ipv4::{self, Ipv4Header};
use parsers::opcode::CNP;
use parsers::opcode::rc::{
    ACKNOWLEDGE, ATOMIC_ACKNOWLEDGE, COMPARE_SWAP, FETCH_ADD, READ_REQUEST, READ_RESPONSE_FIRST,
    READ_RESPONSE_LAST, READ_RESPONSE_MIDDLE, READ_RESPONSE_ONLY, SEND_FIRST, WRITE_FIRST,
};
use parsers::psn::{PSN_MASK, add as psn_add, diff as psn_diff};
use parsers::reth::Reth;
use serde_json::{Value, json};

/// What to simulate.
#[derive(Debug, Clone)]
pub struct Params {
    /// Frames to write.
    pub frames: u64,
    /// RC connections (each is two QPs).
    pub qps: u32,
    pub seed: u64,
    /// Probability that a new request packet is lost.
    pub loss: f64,
    /// Probability that a request packet is CE-marked.
    pub ce: f64,
    /// Fraction of CE marks (where allowed, see the model) left without a CNP.
    pub unanswered: f64,
    /// Path MTU: 256, 512, 1024, 2048 or 4096.
    pub mtu: u32,
    /// Hosts, 2 to 254.
    pub hosts: u8,
    /// The window within which a CNP answers a CE mark (`rocescope analyze --cnp-window-us`).
    pub cnp_window_us: u64,
    /// Time of the first frame, nanoseconds since the Unix epoch.
    pub start_ns: u64,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            frames: 100_000,
            qps: 8,
            seed: 1,
            loss: 0.0003,
            ce: 0.005,
            unanswered: 0.05,
            mtu: 1024,
            hosts: 4,
            cnp_window_us: 1000,
            // 2026-01-01T00:00:00Z
            start_ns: 1_767_225_600_000_000_000,
        }
    }
}

impl Params {
    pub fn check(&self) -> Result<(), String> {
        if ![256, 512, 1024, 2048, 4096].contains(&self.mtu) {
            return Err(format!(
                "MTU {} is not 256, 512, 1024, 2048 or 4096",
                self.mtu
            ));
        }
        if !(2..=254).contains(&self.hosts) {
            return Err("hosts must be 2 to 254".into());
        }
        if self.qps == 0 || self.qps > 100_000 {
            return Err("qps must be 1 to 100000".into());
        }
        for (name, p) in [
            ("loss", self.loss),
            ("ce", self.ce),
            ("unanswered", self.unanswered),
        ] {
            if !(0.0..=1.0).contains(&p) {
                return Err(format!("{name} must be a probability (0 to 1)"));
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------------------
// Small tools

/// xoshiro256** seeded with splitmix64: deterministic for a seed, on every platform.
struct Rng {
    s: [u64; 4],
}

impl Rng {
    fn new(seed: u64) -> Rng {
        let mut x = seed;
        let mut next = || {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        Rng {
            s: [next(), next(), next(), next()],
        }
    }

    fn u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in [0, 1).
    fn f64(&mut self) -> f64 {
        (self.u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn chance(&mut self, p: f64) -> bool {
        self.f64() < p
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.u64() % (hi - lo + 1)
    }

    /// Exponential with this mean.
    fn exp(&mut self, mean: f64) -> f64 {
        -mean * (1.0 - self.f64()).ln()
    }
}

fn ip(host: u8) -> [u8; 4] {
    [10, 0, 0, host + 1]
}

fn mac(host: u8) -> [u8; 6] {
    [0x02, 0, 0, 0, 0, host + 1]
}

fn ip_text(host: u8) -> String {
    let a = ip(host);
    format!("{}.{}.{}.{}", a[0], a[1], a[2], a[3])
}

/// Nanoseconds to put `bytes` on a 25 Gb/s link, with the preamble and inter-frame gap.
fn wire_ns(bytes: usize) -> u64 {
    ((bytes as u64 + 24) * 8).div_ceil(25)
}

// ---------------------------------------------------------------------------------------------------------
// Packets and events

/// Offsets from SEND_FIRST / WRITE_FIRST.
const FIRST: u8 = 0;
const MIDDLE: u8 = 1;
const LAST: u8 = 2;
const LAST_IMM: u8 = 3;
const ONLY: u8 = 4;
const ONLY_IMM: u8 = 5;

/// A request packet, as the requester keeps it until it is acknowledged.
#[derive(Debug, Clone, Copy)]
struct Req {
    psn: u32,
    /// PSNs it takes: 1, or one per response packet for a READ.
    width: u32,
    opcode: u8,
    payload: u32,
    reth: Option<Reth>,
    atomic: Option<AtomicEth>,
    imm: Option<u32>,
    ack_req: bool,
    /// The SEND/WRITE message it belongs to (for the message truth), and whether it ends it.
    msg: Option<u32>,
    ends_message: bool,
    /// Sent at least once.
    sent: bool,
    /// Seen by the capture at least once.
    captured: bool,
}

/// What a responder sends.
#[derive(Debug, Clone, Copy)]
enum Resp {
    Ack {
        psn: u32,
        msn: u32,
    },
    Nak {
        psn: u32,
        msn: u32,
    },
    Read {
        psn: u32,
        opcode: u8,
        payload: u32,
        msn: u32,
    },
    Atomic {
        psn: u32,
        msn: u32,
        orig: u64,
    },
}

#[derive(Debug, Clone, Copy)]
enum Ev {
    /// The requester of connection `c` sends its next packet (or starts thinking about the next message).
    Send { c: u32, generation: u32 },
    /// A request reaches the responder.
    Arrive { c: u32, req: Req },
    /// A responder packet passes the mirror.
    Transmit { c: u32, resp: Resp },
    /// A responder packet reaches the requester.
    Deliver { c: u32, resp: Resp },
    /// A CNP toward the requester of `c` passes the mirror.
    Cnp { c: u32 },
}

struct Item {
    t: u64,
    seq: u64,
    ev: Ev,
}

impl PartialEq for Item {
    fn eq(&self, other: &Self) -> bool {
        (self.t, self.seq) == (other.t, other.seq)
    }
}

impl Eq for Item {}

impl PartialOrd for Item {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Item {
    /// Reversed: the heap pops the earliest event first.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.t, other.seq).cmp(&(self.t, self.seq))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    Delivered,
    LostBeforeMirror,
    LostAfterMirror,
}

// ---------------------------------------------------------------------------------------------------------
// Ground truth

/// The requester's direction of a connection: (requester IP, responder IP, responder QPN).
#[derive(Debug, Clone, Default)]
pub struct RequesterTruth {
    pub packets: u64,
    pub bytes: u64,
    pub payload_bytes: u64,
    pub retransmitted_bytes: u64,
    pub first_psn: Option<u32>,
    /// The end (last PSN + 1) of the highest request captured.
    pub end_psn: u32,
    pub gap_events: u64,
    pub missing: u64,
    pub retransmitted: u64,
    pub duplicates: u64,
    pub episodes: u64,
    pub ect0: u64,
    pub ce: u64,
    pub ce_without_cnp: u64,
    pub messages: u64,
    pub message_bytes: u64,
    pub message_min: Option<u64>,
    pub message_max: u64,
}

/// The responder's direction: (responder IP, requester IP, requester QPN).
#[derive(Debug, Clone, Default)]
pub struct ResponderTruth {
    pub packets: u64,
    pub bytes: u64,
    pub payload_bytes: u64,
    pub acks: u64,
    pub naks: u64,
    pub read_responses: u64,
    pub atomic_acks: u64,
    pub cnp: u64,
    pub ect0: u64,
}

/// One connection as the generator made it.
#[derive(Debug, Clone)]
pub struct ConnTruth {
    pub requester: String,
    pub responder: String,
    pub requester_qpn: u32,
    pub responder_qpn: u32,
    pub start_psn: u32,
    pub req: RequesterTruth,
    pub resp: ResponderTruth,
    /// Losses of this connection's requests: (PSN, before the mirror).
    pub losses: Vec<(u32, bool)>,
    /// Times of the CE marks left without a CNP (nanoseconds since the epoch).
    pub unanswered_ce: Vec<u64>,
}

#[derive(Debug, Clone)]
pub struct Truth {
    pub params: Params,
    pub frames: u64,
    pub bytes: u64,
    pub first_ts: u64,
    pub last_ts: u64,
    pub conns: Vec<ConnTruth>,
}

impl Truth {
    pub fn losses(&self) -> (u64, u64) {
        let all = self.conns.iter().flat_map(|c| c.losses.iter());
        let before = all.clone().filter(|l| l.1).count() as u64;
        (before, all.count() as u64 - before)
    }

    /// The totals over the connections, keyed like the per-flow figures.
    pub fn totals(&self) -> Value {
        let sum = |f: &dyn Fn(&ConnTruth) -> u64| self.conns.iter().map(f).sum::<u64>();
        json!({
            "frames": self.frames,
            "requests": sum(&|c| c.req.packets),
            "responses": sum(&|c| c.resp.packets - c.resp.cnp),
            "gap_events": sum(&|c| c.req.gap_events),
            "missing": sum(&|c| c.req.missing),
            "retransmitted": sum(&|c| c.req.retransmitted),
            "duplicates": sum(&|c| c.req.duplicates),
            "retransmission_episodes": sum(&|c| c.req.episodes),
            "psn_seq_err_naks": sum(&|c| c.resp.naks),
            "cnp": sum(&|c| c.resp.cnp),
            "ce": sum(&|c| c.req.ce),
            "ce_without_cnp": sum(&|c| c.req.ce_without_cnp),
            "messages": sum(&|c| c.req.messages),
        })
    }

    /// The truth as JSON: per flow in the words of the `rocescope analyze --json` report (every key present
    /// is a key of the report's flow object, with the value the report must have), and in total.
    pub fn to_json(&self) -> Value {
        let p = &self.params;
        let mut flows = Vec::new();
        for c in &self.conns {
            let r = &c.req;
            flows.push(json!({
                "src": c.requester,
                "dst": c.responder,
                "dest_qp": c.responder_qpn,
                "role": "requester",
                "packets": r.packets,
                "bytes": r.bytes,
                "payload_bytes": r.payload_bytes,
                "retransmitted_bytes": r.retransmitted_bytes,
                "psn": {
                    "first": r.first_psn.unwrap_or(0),
                    "last": psn_add(r.end_psn, PSN_MASK),
                    "gap_events": r.gap_events,
                    "missing": r.missing,
                    "retransmitted": r.retransmitted,
                    "duplicates": r.duplicates,
                    "retransmission_episodes": r.episodes,
                },
                "ecn": {"not_ect": 0, "ect0": r.ect0, "ect1": 0, "ce": r.ce},
                "ce_without_cnp": r.ce_without_cnp,
                "messages": {
                    "count": r.messages,
                    "bytes": r.message_bytes,
                    "min_size": r.message_min,
                    "max_size": r.message_max,
                    "length_mismatches": 0,
                },
                "icrc_bad": 0,
                "malformed": 0,
                "counters": {
                    "out_of_sequence": r.gap_events,
                    "duplicate_request": r.duplicates,
                    "packet_seq_err": c.resp.naks,
                    "rnr_nak_retry_err": 0,
                    "implied_nak_seq_err": 0,
                    "np_ecn_marked_roce_packets": r.ce,
                    "np_cnp_sent": c.resp.cnp,
                    "rx_icrc_encapsulated": 0,
                },
            }));
            let s = &c.resp;
            flows.push(json!({
                "src": c.responder,
                "dst": c.requester,
                "dest_qp": c.requester_qpn,
                "role": "responder",
                "packets": s.packets,
                "bytes": s.bytes,
                "payload_bytes": s.payload_bytes,
                "acks": s.acks,
                "naks": {
                    "psn_seq_err": s.naks,
                    "invalid_request": 0,
                    "remote_access": 0,
                    "remote_op": 0,
                    "invalid_rd_request": 0,
                    "reserved": 0,
                },
                "rnr_naks": 0,
                "read_responses": s.read_responses,
                "atomic_acks": s.atomic_acks,
                "implied_naks": 0,
                "cnp": s.cnp,
                "ecn": {"not_ect": s.cnp, "ect0": s.ect0, "ect1": 0, "ce": 0},
                "ce_without_cnp": 0,
                "icrc_bad": 0,
                "malformed": 0,
            }));
        }
        let (before, after) = self.losses();
        let connections: Vec<Value> = self
            .conns
            .iter()
            .map(|c| {
                json!({
                    "requester": c.requester,
                    "requester_qpn": c.requester_qpn,
                    "responder": c.responder,
                    "responder_qpn": c.responder_qpn,
                    "start_psn": c.start_psn,
                    "losses": c.losses.iter().map(|(psn, before)| json!({
                        "psn": psn,
                        "where": if *before { "before_mirror" } else { "after_mirror" },
                    })).collect::<Vec<_>>(),
                    "unanswered_ce_times": c.unanswered_ce.iter()
                        .map(|t| *t as f64 / 1e9).collect::<Vec<_>>(),
                })
            })
            .collect();
        json!({
            "generator": {
                "frames": p.frames,
                "qps": p.qps,
                "seed": p.seed,
                "loss": p.loss,
                "ce": p.ce,
                "unanswered": p.unanswered,
                "mtu": p.mtu,
                "hosts": p.hosts,
                "cnp_window_us": p.cnp_window_us,
                "losses_before_mirror": before,
                "losses_after_mirror": after,
            },
            "capture": {
                "frames": self.frames,
                "roce_frames": self.frames,
                "other_frames": 0,
                "malformed": 0,
                "icrc_bad": 0,
                "icrc_unverifiable": 0,
                "bytes": self.bytes,
                "first_time": self.first_ts as f64 / 1e9,
                "last_time": self.last_ts as f64 / 1e9,
            },
            "config": {"mtu": p.mtu},
            "flows": flows,
            "totals": self.totals(),
            "connections": connections,
        })
    }
}

// ---------------------------------------------------------------------------------------------------------
// The simulation

#[derive(Debug, Clone, Copy)]
enum Kind {
    Write,
    Send,
    Read,
    Atomic,
}

struct Conn {
    req_host: u8,
    resp_host: u8,
    req_qpn: u32,
    resp_qpn: u32,
    req_port: u16,
    resp_port: u16,
    start_psn: u32,
    rkey: u32,
    va: u64,
    /// Cumulative weights of WRITE, SEND, READ, atomic.
    mix: [f64; 4],
    think_ns: f64,
    ack_every: u32,

    // Requester.
    /// Packets sent and not acknowledged, then the rest of the message being sent.
    buf: VecDeque<Req>,
    /// Index in `buf` of the next packet to send.
    cursor: usize,
    /// Bumped on a go-back-N: older `Send` events are void.
    generation: u32,
    next_psn: u32,
    next_msg: u32,
    /// The think time before the next message has passed.
    thought: bool,
    va_offset: u64,
    /// Since a loss, until the first new packet after the go-back-N: no other loss.
    recovering: bool,
    rewound: bool,
    /// PSNs lost before the mirror that the next captured request will show as missing.
    pending_gap: u32,
    /// The next captured resend starts a go-back-N episode.
    episode_start: bool,
    /// SEND/WRITE messages not yet fully captured: (message, packets not yet captured, bytes).
    open_msgs: VecDeque<(u32, u32, u64)>,
    /// Arrival of the last request at the responder (the path is FIFO).
    last_arrival: u64,

    // Responder.
    epsn: u32,
    nak_sent: bool,
    msn: u32,
    since_ack: u32,
    /// When the responder's transmitter is free.
    tx_free: u64,
    responded: bool,

    // Congestion.
    /// The latest time a CNP toward this requester is due.
    cnp_due: u64,
    /// No CE mark before this time (isolates a mark left unanswered).
    ce_quiet_until: u64,

    truth: ConnTruth,
}

struct Pcap<W: Write> {
    out: W,
    frames: u64,
    bytes: u64,
    first_ts: u64,
    last_ts: u64,
}

impl<W: Write> Pcap<W> {
    fn new(mut out: W) -> io::Result<Pcap<W>> {
        out.write_all(&0xa1b2_3c4du32.to_le_bytes())?;
        out.write_all(&2u16.to_le_bytes())?;
        out.write_all(&4u16.to_le_bytes())?;
        out.write_all(&0i32.to_le_bytes())?;
        out.write_all(&0u32.to_le_bytes())?;
        out.write_all(&65_535u32.to_le_bytes())?;
        out.write_all(&1u32.to_le_bytes())?;
        Ok(Pcap {
            out,
            frames: 0,
            bytes: 0,
            first_ts: 0,
            last_ts: 0,
        })
    }

    /// Writes a frame at `ts` (or 1 ns after the previous frame); returns the time written.
    fn write(&mut self, ts: u64, data: &[u8]) -> io::Result<u64> {
        let ts = if self.frames == 0 {
            self.first_ts = ts;
            ts
        } else {
            ts.max(self.last_ts + 1)
        };
        let len = data.len() as u32;
        let mut rec = [0u8; 16];
        rec[0..4].copy_from_slice(&((ts / 1_000_000_000) as u32).to_le_bytes());
        rec[4..8].copy_from_slice(&((ts % 1_000_000_000) as u32).to_le_bytes());
        rec[8..12].copy_from_slice(&len.to_le_bytes());
        rec[12..16].copy_from_slice(&len.to_le_bytes());
        self.out.write_all(&rec)?;
        self.out.write_all(data)?;
        self.frames += 1;
        self.bytes += data.len() as u64;
        self.last_ts = ts;
        Ok(ts)
    }
}

/// The headers of a frame to build, between two hosts.
struct Header {
    from: u8,
    to: u8,
    udp_src: u16,
    dscp: u8,
    ecn: u8,
    bth: Bth,
    ext: ExtHeaders,
    payload: u32,
}

struct Sim<'p, W: Write> {
    p: &'p Params,
    rng: Rng,
    conns: Vec<Conn>,
    heap: BinaryHeap<Item>,
    seq: u64,
    pcap: Pcap<W>,
    ip_id: Vec<u16>,
    /// Payload bytes: slices of this.
    pattern: Vec<u8>,
    losses: u64,
    responded: usize,
}

/// Generates the capture into `out` (a buffered writer; it is flushed) and returns the ground truth.
pub fn generate<W: Write>(p: &Params, out: W) -> io::Result<Truth> {
    p.check().map_err(io::Error::other)?;
    let mut sim = Sim::new(p, out)?;
    sim.run()?;
    sim.pcap.out.flush()?;
    Ok(sim.truth())
}

impl<'p, W: Write> Sim<'p, W> {
    fn new(p: &'p Params, out: W) -> io::Result<Sim<'p, W>> {
        let mut rng = Rng::new(p.seed);
        let pattern: Vec<u8> = (0..4096 + 256).map(|_| rng.u64() as u8).collect();
        // Connections spread over the host pairs, in a random direction.
        let mut pairs = Vec::new();
        for a in 0..p.hosts {
            for b in a + 1..p.hosts {
                pairs.push((a, b));
            }
        }
        for i in (1..pairs.len()).rev() {
            let j = rng.range(0, i as u64) as usize;
            pairs.swap(i, j);
        }
        let mut used: Vec<Vec<u32>> = vec![Vec::new(); usize::from(p.hosts)];
        let mut qpn = |rng: &mut Rng, host: u8| loop {
            let q = rng.range(0x40, 0x3_FFFF) as u32;
            let list = &mut used[usize::from(host)];
            if !list.contains(&q) {
                list.push(q);
                break q;
            }
        };
        let per_conn = (p.frames / u64::from(p.qps)).max(64);
        let mut conns = Vec::with_capacity(p.qps as usize);
        for i in 0..p.qps {
            let (a, b) = pairs[i as usize % pairs.len()];
            let (req_host, resp_host) = if rng.chance(0.5) { (a, b) } else { (b, a) };
            let req_qpn = qpn(&mut rng, req_host);
            let resp_qpn = qpn(&mut rng, resp_host);
            let start_psn = if i % 4 == 1 {
                // Wraps after a few hundred to a few thousand PSNs.
                0x100_0000 - rng.range(1, per_conn / 2) as u32
            } else {
                rng.range(0, u64::from(PSN_MASK)) as u32
            };
            let mut w = [0.40, 0.30, 0.20, 0.10].map(|x: f64| x * (0.5 + rng.f64()));
            let total: f64 = w.iter().sum();
            let mut acc = 0.0;
            for x in &mut w {
                acc += *x / total;
                *x = acc;
            }
            let think_ns = f64::from(p.qps) * 8_000.0 * (0.5 + rng.f64());
            let port = |q: u32| 49_152 + ((q.wrapping_mul(2_654_435_761) >> 18) & 0x3FFF) as u16;
            conns.push(Conn {
                req_host,
                resp_host,
                req_qpn,
                resp_qpn,
                req_port: port(req_qpn),
                resp_port: port(resp_qpn),
                start_psn,
                rkey: rng.u64() as u32,
                va: 0x7f00_0000_0000 + (rng.range(0, 0xFFFF) << 20),
                mix: w,
                think_ns,
                ack_every: [4, 8, 16][rng.range(0, 2) as usize],
                buf: VecDeque::new(),
                cursor: 0,
                generation: 0,
                next_psn: start_psn,
                next_msg: 0,
                thought: true,
                va_offset: 0,
                recovering: false,
                rewound: false,
                pending_gap: 0,
                episode_start: false,
                open_msgs: VecDeque::new(),
                last_arrival: 0,
                epsn: start_psn,
                nak_sent: false,
                msn: 0,
                since_ack: 0,
                tx_free: 0,
                responded: false,
                cnp_due: 0,
                ce_quiet_until: 0,
                truth: ConnTruth {
                    requester: ip_text(req_host),
                    responder: ip_text(resp_host),
                    requester_qpn: req_qpn,
                    responder_qpn: resp_qpn,
                    start_psn,
                    req: RequesterTruth::default(),
                    resp: ResponderTruth::default(),
                    losses: Vec::new(),
                    unanswered_ce: Vec::new(),
                },
            });
        }
        let mut sim = Sim {
            p,
            rng,
            conns,
            heap: BinaryHeap::new(),
            seq: 0,
            pcap: Pcap::new(out)?,
            ip_id: vec![0; usize::from(p.hosts)],
            pattern,
            losses: 0,
            responded: 0,
        };
        for c in 0..p.qps {
            let start = p.start_ns + sim.rng.range(0, 20_000);
            sim.at(start, Ev::Send { c, generation: 0 });
        }
        Ok(sim)
    }

    fn at(&mut self, t: u64, ev: Ev) {
        self.seq += 1;
        self.heap.push(Item {
            t,
            seq: self.seq,
            ev,
        });
    }

    fn done(&self) -> bool {
        self.pcap.frames >= self.p.frames
    }

    fn run(&mut self) -> io::Result<()> {
        while !self.done() {
            let Some(Item { t, ev, .. }) = self.heap.pop() else {
                break;
            };
            match ev {
                Ev::Send { c, generation } => self.send(t, c as usize, generation)?,
                Ev::Arrive { c, req } => self.arrive(t, c as usize, req),
                Ev::Transmit { c, resp } => self.transmit(t, c as usize, resp)?,
                Ev::Deliver { c, resp } => self.deliver(t, c as usize, resp),
                Ev::Cnp { c } => self.cnp(t, c as usize)?,
            }
        }
        Ok(())
    }

    fn truth(&self) -> Truth {
        let window = self.p.cnp_window_us * 1000;
        let last = self.pcap.last_ts;
        let conns = self
            .conns
            .iter()
            .map(|c| {
                let mut t = c.truth.clone();
                // A mark is "without CNP" once the window has passed inside the capture.
                t.req.ce_without_cnp = t
                    .unanswered_ce
                    .iter()
                    .filter(|ts| last - **ts > window)
                    .count() as u64;
                t
            })
            .collect();
        Truth {
            params: self.p.clone(),
            frames: self.pcap.frames,
            bytes: self.pcap.bytes,
            first_ts: self.pcap.first_ts,
            last_ts: self.pcap.last_ts,
            conns,
        }
    }

    // --- requester ---------------------------------------------------------------------------------------

    fn pick_len(&mut self, small: f64) -> u32 {
        let mtu = self.p.mtu;
        if self.rng.chance(small) {
            self.rng.range(1, u64::from(mtu)) as u32
        } else {
            let packets = self.rng.range(2, 16) as u32;
            (packets - 1) * mtu + self.rng.range(1, u64::from(mtu)) as u32
        }
    }

    /// Queues the packets of a new message on connection `c`.
    fn new_message(&mut self, c: usize) {
        let mtu = self.p.mtu;
        let r = self.rng.f64();
        let mix = self.conns[c].mix;
        let kind = match mix.iter().position(|w| r < *w) {
            Some(0) => Kind::Write,
            Some(1) => Kind::Send,
            Some(2) => Kind::Read,
            _ => Kind::Atomic,
        };
        let len = match kind {
            Kind::Write => self.pick_len(0.35),
            Kind::Send => self.pick_len(0.7),
            Kind::Read => self.pick_len(0.35),
            Kind::Atomic => 8,
        };
        let imm = matches!(kind, Kind::Write | Kind::Send) && self.rng.chance(0.1);
        let imm_value = self.rng.u64() as u32;
        let operand = self.rng.u64();
        let compare = self.rng.u64();
        let cmp_swap = self.rng.chance(0.4);
        let conn = &mut self.conns[c];
        let va = conn.va + conn.va_offset;
        conn.va_offset = (conn.va_offset + u64::from(len).next_multiple_of(64)) % (1 << 30);
        let base = Req {
            psn: 0,
            width: 1,
            opcode: 0,
            payload: 0,
            reth: None,
            atomic: None,
            imm: None,
            ack_req: false,
            msg: None,
            ends_message: false,
            sent: false,
            captured: false,
        };
        let reth = Reth {
            va,
            r_key: conn.rkey,
            dma_len: len,
        };
        let push = |conn: &mut Conn, req: Req| {
            let req = Req {
                psn: conn.next_psn,
                ..req
            };
            conn.next_psn = psn_add(conn.next_psn, req.width);
            conn.buf.push_back(req);
        };
        match kind {
            Kind::Write | Kind::Send => {
                let packets = len.div_ceil(mtu).max(1);
                let msg = conn.next_msg;
                conn.next_msg += 1;
                conn.open_msgs.push_back((msg, packets, u64::from(len)));
                let first_op = if matches!(kind, Kind::Write) {
                    WRITE_FIRST
                } else {
                    SEND_FIRST
                };
                let write = matches!(kind, Kind::Write);
                for i in 0..packets {
                    let last = i + 1 == packets;
                    let position = match (packets, i) {
                        (1, _) if imm => ONLY_IMM,
                        (1, _) => ONLY,
                        (_, 0) => FIRST,
                        _ if last && imm => LAST_IMM,
                        _ if last => LAST,
                        _ => MIDDLE,
                    };
                    let payload = if last { len - mtu * (packets - 1) } else { mtu };
                    push(
                        conn,
                        Req {
                            opcode: first_op + position,
                            payload,
                            reth: (write && i == 0).then_some(reth),
                            imm: (last && imm).then_some(imm_value),
                            ack_req: last,
                            msg: Some(msg),
                            ends_message: last,
                            ..base
                        },
                    );
                }
            }
            Kind::Read => push(
                conn,
                Req {
                    opcode: READ_REQUEST,
                    width: len.div_ceil(mtu).max(1),
                    reth: Some(reth),
                    ..base
                },
            ),
            Kind::Atomic => push(
                conn,
                Req {
                    opcode: if cmp_swap { COMPARE_SWAP } else { FETCH_ADD },
                    atomic: Some(AtomicEth {
                        va: va & !7,
                        r_key: conn.rkey,
                        swap_add: operand,
                        compare: if cmp_swap { compare } else { 0 },
                    }),
                    ..base
                },
            ),
        }
    }

    fn request_frame(&mut self, c: usize, req: &Req, ce: bool) -> Vec<u8> {
        let conn = &self.conns[c];
        let bth = Bth {
            opcode: req.opcode,
            pkey: 0xFFFF,
            dest_qp: conn.resp_qpn,
            ack_req: req.ack_req,
            psn: req.psn,
            ..Bth::default()
        };
        let ext = ExtHeaders {
            reth: req.reth,
            atomic_eth: req.atomic,
            immdt: req.imm.map(ImmDt),
            ..ExtHeaders::default()
        };
        let h = Header {
            from: conn.req_host,
            to: conn.resp_host,
            udp_src: conn.req_port,
            dscp: 26,
            ecn: if ce { 3 } else { 2 },
            bth,
            ext,
            payload: req.payload,
        };
        self.build(&h, req.psn)
    }

    fn build(&mut self, h: &Header, salt: u32) -> Vec<u8> {
        let id = &mut self.ip_id[usize::from(h.from)];
        *id = id.wrapping_add(1);
        let off = (salt % 256) as usize;
        let payload = self.pattern[off..off + h.payload as usize].to_vec();
        RoceFrame {
            eth_dst: mac(h.to),
            eth_src: mac(h.from),
            vlans: Vec::new(),
            net: Net::V4(Ipv4Header {
                header_len: 20,
                dscp: h.dscp,
                ecn: h.ecn,
                total_len: 0,
                id: *id,
                dont_fragment: true,
                more_fragments: false,
                frag_offset: 0,
                ttl: 64,
                protocol: ipv4::PROTO_UDP,
                checksum: 0,
                src: ip(h.from),
                dst: ip(h.to),
            }),
            udp_src: h.udp_src,
            udp_dst: 4791,
            udp_checksum: 0,
            bth: h.bth,
            ext: h.ext,
            payload,
            pad: None,
            icrc: None,
        }
        .build()
    }

    fn send(&mut self, now: u64, c: usize, generation: u32) -> io::Result<()> {
        if generation != self.conns[c].generation {
            return Ok(());
        }
        let conn = &mut self.conns[c];
        if conn.cursor >= conn.buf.len() {
            if !conn.thought {
                conn.thought = true;
                let think = self.rng.exp(conn.think_ns) as u64 + 1;
                self.at(
                    now + think,
                    Ev::Send {
                        c: c as u32,
                        generation,
                    },
                );
                return Ok(());
            }
            conn.thought = false;
            self.new_message(c);
        }
        let conn = &mut self.conns[c];
        let i = conn.cursor;
        conn.cursor += 1;
        let req = conn.buf[i];
        let resend = req.sent;
        conn.buf[i].sent = true;
        if conn.recovering && conn.rewound && !resend {
            conn.recovering = false;
        }
        let lose = !resend && !conn.recovering && self.rng.chance(self.p.loss);
        let fate = if !lose {
            Fate::Delivered
        } else {
            self.losses += 1;
            if self.losses % 2 == 1 {
                Fate::LostBeforeMirror
            } else {
                Fate::LostAfterMirror
            }
        };
        let window = self.p.cnp_window_us * 1000;
        let conn = &self.conns[c];
        let ce =
            fate == Fate::Delivered && now >= conn.ce_quiet_until && self.rng.chance(self.p.ce);
        let may_leave = self.responded == self.conns.len() && conn.cnp_due < now;
        let unanswered = ce && may_leave && self.rng.chance(self.p.unanswered);
        let frame = self.request_frame(c, &req, ce);
        let mut ts = now;
        if fate != Fate::LostBeforeMirror {
            ts = self.pcap.write(now, &frame)?;
            let conn = &mut self.conns[c];
            let t = &mut conn.truth.req;
            t.packets += 1;
            t.bytes += frame.len() as u64;
            t.payload_bytes += u64::from(req.payload);
            t.first_psn.get_or_insert(req.psn);
            let end = psn_add(req.psn, req.width);
            if t.packets == 1 || psn_diff(end, t.end_psn) > 0 {
                t.end_psn = end;
            }
            if ce {
                t.ce += 1;
            } else {
                t.ect0 += 1;
            }
            if !resend && conn.pending_gap > 0 {
                t.gap_events += 1;
                t.missing += u64::from(conn.pending_gap);
                conn.pending_gap = 0;
            }
            if resend {
                t.retransmitted += 1;
                t.retransmitted_bytes += u64::from(req.payload);
                t.duplicates += u64::from(req.captured);
                if conn.episode_start {
                    t.episodes += 1;
                    conn.episode_start = false;
                }
            }
            if !req.captured {
                conn.buf[i].captured = true;
                if let Some(m) = req.msg
                    && let Some(k) = conn.open_msgs.iter().position(|o| o.0 == m)
                {
                    conn.open_msgs[k].1 -= 1;
                    if conn.open_msgs[k].1 == 0 {
                        let size = conn.open_msgs[k].2;
                        conn.open_msgs.remove(k);
                        let t = &mut conn.truth.req;
                        t.messages += 1;
                        t.message_bytes += size;
                        t.message_min = Some(t.message_min.map_or(size, |m| m.min(size)));
                        t.message_max = t.message_max.max(size);
                    }
                }
            }
        }
        let conn = &mut self.conns[c];
        match fate {
            Fate::Delivered => {
                let arrival = (ts + 800 + self.rng.range(0, 400)).max(conn.last_arrival + 1);
                conn.last_arrival = arrival;
                self.at(arrival, Ev::Arrive { c: c as u32, req });
                let conn = &mut self.conns[c];
                if unanswered {
                    conn.truth.unanswered_ce.push(ts);
                    conn.ce_quiet_until = ts + 2 * window;
                } else if ce {
                    let due = arrival + self.rng.range(1_000, 9_000);
                    conn.cnp_due = conn.cnp_due.max(due);
                    self.at(due, Ev::Cnp { c: c as u32 });
                }
            }
            Fate::LostBeforeMirror | Fate::LostAfterMirror => {
                let before = fate == Fate::LostBeforeMirror;
                if before {
                    conn.pending_gap += req.width;
                }
                conn.recovering = true;
                conn.rewound = false;
                conn.truth.losses.push((req.psn, before));
            }
        }
        let next = ts + wire_ns(frame.len()) + self.rng.range(0, 30);
        self.at(
            next,
            Ev::Send {
                c: c as u32,
                generation,
            },
        );
        Ok(())
    }

    /// The requester learns that every PSN up to `psn` arrived: forget those packets.
    fn acknowledge(&mut self, c: usize, psn: u32) {
        let conn = &mut self.conns[c];
        while conn.cursor > 0 {
            let Some(front) = conn.buf.front() else { break };
            if psn_diff(psn_add(front.psn, front.width - 1), psn) > 0 {
                break;
            }
            conn.buf.pop_front();
            conn.cursor -= 1;
        }
    }

    fn deliver(&mut self, now: u64, c: usize, resp: Resp) {
        match resp {
            Resp::Ack { psn, .. } | Resp::Atomic { psn, .. } => self.acknowledge(c, psn),
            Resp::Read { psn, opcode, .. } => {
                if matches!(opcode, READ_RESPONSE_LAST | READ_RESPONSE_ONLY) {
                    self.acknowledge(c, psn);
                }
            }
            Resp::Nak { psn, .. } => {
                self.acknowledge(c, psn_add(psn, PSN_MASK));
                let react = 300 + self.rng.range(0, 700);
                let conn = &mut self.conns[c];
                debug_assert_eq!(conn.buf.front().map(|r| r.psn), Some(psn));
                // Go back N: resend from the NAKed PSN.
                conn.cursor = 0;
                conn.generation += 1;
                conn.rewound = true;
                conn.episode_start = true;
                conn.thought = false;
                let generation = conn.generation;
                self.at(
                    now + react,
                    Ev::Send {
                        c: c as u32,
                        generation,
                    },
                );
            }
        }
    }

    // --- responder -----------------------------------------------------------------------------------------

    fn respond(&mut self, now: u64, c: usize, resp: Resp, bytes: usize) {
        let ready = now + 300 + self.rng.range(0, 500);
        let conn = &mut self.conns[c];
        let t = ready.max(conn.tx_free);
        conn.tx_free = t + wire_ns(bytes);
        self.at(t, Ev::Transmit { c: c as u32, resp });
    }

    fn arrive(&mut self, now: u64, c: usize, req: Req) {
        let mtu = self.p.mtu;
        let conn = &mut self.conns[c];
        let ahead = psn_diff(req.psn, conn.epsn);
        if ahead > 0 {
            if !conn.nak_sent {
                conn.nak_sent = true;
                let resp = Resp::Nak {
                    psn: conn.epsn,
                    msn: conn.msn,
                };
                self.respond(now, c, resp, 62);
            }
            return;
        }
        if ahead < 0 {
            // A duplicate: cannot happen here (go-back-N restarts at the expected PSN); a NIC re-ACKs it.
            let resp = Resp::Ack {
                psn: psn_add(conn.epsn, PSN_MASK),
                msn: conn.msn,
            };
            self.respond(now, c, resp, 62);
            return;
        }
        conn.nak_sent = false;
        conn.epsn = psn_add(conn.epsn, req.width);
        match req.opcode {
            READ_REQUEST => {
                conn.msn += 1;
                conn.since_ack = 0;
                let msn = conn.msn;
                let len = req.reth.map_or(0, |r| r.dma_len);
                for k in 0..req.width {
                    let opcode = match (req.width, k) {
                        (1, _) => READ_RESPONSE_ONLY,
                        (_, 0) => READ_RESPONSE_FIRST,
                        _ if k + 1 == req.width => READ_RESPONSE_LAST,
                        _ => READ_RESPONSE_MIDDLE,
                    };
                    let payload = if k + 1 == req.width {
                        len - mtu * k
                    } else {
                        mtu
                    };
                    let resp = Resp::Read {
                        psn: psn_add(req.psn, k),
                        opcode,
                        payload,
                        msn,
                    };
                    self.respond(now, c, resp, payload as usize + 66);
                }
            }
            COMPARE_SWAP | FETCH_ADD => {
                conn.msn += 1;
                conn.since_ack = 0;
                let resp = Resp::Atomic {
                    psn: req.psn,
                    msn: conn.msn,
                    orig: self.rng.u64(),
                };
                self.respond(now, c, resp, 70);
            }
            _ => {
                conn.since_ack += 1;
                if req.ends_message {
                    conn.msn += 1;
                }
                if req.ack_req || conn.since_ack >= conn.ack_every {
                    conn.since_ack = 0;
                    let resp = Resp::Ack {
                        psn: req.psn,
                        msn: conn.msn,
                    };
                    self.respond(now, c, resp, 62);
                }
            }
        }
    }

    fn transmit(&mut self, now: u64, c: usize, resp: Resp) -> io::Result<()> {
        let conn = &self.conns[c];
        let (opcode, psn, syndrome, msn, payload) = match resp {
            Resp::Ack { psn, msn } => (ACKNOWLEDGE, psn, Syndrome::Ack { credits: 31 }, msn, 0),
            Resp::Nak { psn, msn } => (
                ACKNOWLEDGE,
                psn,
                Syndrome::Nak(NakCode::PsnSequenceError),
                msn,
                0,
            ),
            Resp::Read {
                psn,
                opcode,
                payload,
                msn,
            } => (opcode, psn, Syndrome::Ack { credits: 31 }, msn, payload),
            Resp::Atomic { psn, msn, .. } => (
                ATOMIC_ACKNOWLEDGE,
                psn,
                Syndrome::Ack { credits: 31 },
                msn,
                0,
            ),
        };
        let ext = ExtHeaders {
            aeth: Some(Aeth {
                syndrome: syndrome.to_byte(),
                msn,
            }),
            atomic_ack_eth: match resp {
                Resp::Atomic { orig, .. } => Some(AtomicAckEth {
                    orig_rem_data: orig,
                }),
                _ => None,
            },
            ..ExtHeaders::default()
        };
        let h = Header {
            from: conn.resp_host,
            to: conn.req_host,
            udp_src: conn.resp_port,
            dscp: 26,
            ecn: 2,
            bth: Bth {
                opcode,
                pkey: 0xFFFF,
                dest_qp: conn.req_qpn,
                psn,
                ..Bth::default()
            },
            ext,
            payload,
        };
        let frame = self.build(&h, psn);
        let ts = self.pcap.write(now, &frame)?;
        let conn = &mut self.conns[c];
        if !conn.responded {
            conn.responded = true;
            self.responded += 1;
        }
        let t = &mut conn.truth.resp;
        t.packets += 1;
        t.bytes += frame.len() as u64;
        t.payload_bytes += u64::from(payload);
        t.ect0 += 1;
        match resp {
            Resp::Ack { .. } => t.acks += 1,
            Resp::Nak { .. } => t.naks += 1,
            Resp::Read { .. } => t.read_responses += 1,
            Resp::Atomic { .. } => t.atomic_acks += 1,
        }
        let back = ts + 800 + self.rng.range(0, 400);
        self.at(back, Ev::Deliver { c: c as u32, resp });
        Ok(())
    }

    fn cnp(&mut self, now: u64, c: usize) -> io::Result<()> {
        let conn = &self.conns[c];
        let h = Header {
            from: conn.resp_host,
            to: conn.req_host,
            udp_src: conn.resp_port,
            dscp: 48,
            ecn: 0,
            bth: Bth {
                opcode: CNP,
                pkey: 0xFFFF,
                becn: true,
                dest_qp: conn.req_qpn,
                psn: 0,
                ..Bth::default()
            },
            ext: ExtHeaders {
                cnp: Some(Cnp::default()),
                ..ExtHeaders::default()
            },
            payload: 0,
        };
        let frame = self.build(&h, 0);
        self.pcap.write(now, &frame)?;
        let t = &mut self.conns[c].truth.resp;
        t.packets += 1;
        t.bytes += frame.len() as u64;
        t.cnp += 1;
        Ok(())
    }
}
