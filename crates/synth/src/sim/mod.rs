//! The simulation: events in time order, and the state of each connection's requester and responder.
use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};
use std::io::{self, Write};

use parsers::atomic::AtomicEth;
use parsers::psn::PSN_MASK;
use parsers::reth::Reth;

use crate::Params;
use crate::capture::Capture;
use crate::frame::{FrameBuilder, ip_text};
use crate::rng::Rng;
use crate::truth::{ConnTruth, RequesterTruth, ResponderTruth, Truth};

mod requester;
mod responder;

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

/// An event due at `t`; `seq` orders events due at the same time as they were scheduled.
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

/// One connection: its requester's state, its responder's, and its truth so far.
struct Conn {
    req_host: u8,
    resp_host: u8,
    req_qpn: u32,
    resp_qpn: u32,
    req_port: u16,
    resp_port: u16,
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

/// The simulation: the connections and the events due, in time order.
struct Sim<'p, W: Write> {
    p: &'p Params,
    rng: Rng,
    conns: Vec<Conn>,
    heap: BinaryHeap<Item>,
    seq: u64,
    capture: Capture<W>,
    builder: FrameBuilder,
    losses: u64,
    responded: usize,
}

/// Generates the capture into `out` (a buffered writer; it is flushed) and returns the ground truth.
pub fn generate<W: Write>(p: &Params, out: W) -> io::Result<Truth> {
    p.check().map_err(io::Error::other)?;
    let mut sim = Sim::new(p, out)?;
    sim.run()?;
    sim.capture.flush(p.start_ns, p.noise_gap_ns)?;
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
            capture: Capture::new(out, p.frames, p.noise_flows)?,
            builder: FrameBuilder::new(p.hosts, pattern),
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
        self.capture.frames >= self.p.frames
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
        let last = self.capture.last_ts;
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
            frames: self.capture.frames,
            bytes: self.capture.bytes,
            first_ts: self.capture.first_ts,
            last_ts: self.capture.last_ts,
            conns,
        }
    }
}
