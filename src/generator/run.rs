//! The requester's side of a run, shared by `gen loopback` (the responder QP in this process) and `gen client`
//! (the responder is `gen server` on another host): posting within the window and the rate, completions
//! checked for order and wr_id with a deadline on every wait, the data check, and the report whose QPNs, PSN
//! ranges and opcodes can be matched with a capture.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use sideway::ibverbs::queue_pair::{
    PostSendGuard, QueuePair, SetScatterGatherEntry, WorkRequestFlags,
};

use super::plan::{self, wc_status_name};
use super::verbs::{Side, endpoint, io_of, post_recv};
use super::{Fault, Op, WorkArgs, pattern};
use parsers::psn::{add_wide as psn_add, packets as packets_per_message};

#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Endpoint {
    pub device: String,
    pub port: u8,
    pub netdev: Option<String>,
    pub netdev_mtu: Option<u32>,
    pub active_mtu: u32,
    pub gid_index: u8,
    pub gid: String,
    pub gid_type: String,
    pub gid_choice: String,
    pub ip: Option<String>,
    pub qpn: u32,
    /// First PSN this QP sends (its requests, or its responses/ACKs for the responder).
    pub sq_psn: u32,
    /// First PSN this QP expects.
    pub rq_psn: u32,
}

/// One direction on the wire, as `rocescope analyze` keys flows: source and destination address and the
/// destination QP.
#[derive(Serialize)]
pub struct Flow {
    pub src: Option<String>,
    pub dst: Option<String>,
    pub dest_qp: u32,
    pub role: &'static str,
    /// What the packets carry: WRITE/SEND/READ/FETCH_ADD/COMPARE_SWAP requests, READ responses, ACKs or
    /// ATOMIC_ACKNOWLEDGEs.
    pub carries: &'static str,
    /// The opcodes of the direction on the wire when nothing is lost, as `analyze` names them (per flow
    /// `opcodes`); empty for ACKs, which may be coalesced.
    pub opcodes: BTreeMap<String, u64>,
    pub psn_first: u32,
    pub psn_last: u32,
    /// Packets of the direction when nothing is lost (ACK packets: at most).
    pub packets: u64,
    /// Messages (WRITE/SEND) the analyzer counts on the requester flow; 0 for READ and for replies.
    pub messages: u64,
}

#[derive(Serialize, Default)]
pub struct Latency {
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
}

#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct DataCheck {
    /// "passed", "failed" or "incomplete" (the run stopped before every message was checked)
    pub status: String,
    pub checked: u64,
    pub mismatches: u64,
    pub first_mismatch: Option<String>,
}

#[derive(Serialize)]
pub struct Report {
    pub op: Op,
    pub size: u32,
    /// Messages per QP pair: -n, or with --duration those the first pair posted before the time was up.
    pub iterations: u64,
    /// How the posting ended: "iters" (-n messages posted), "duration" (--duration elapsed) or "signal"
    /// (SIGINT/SIGTERM: the messages in flight were completed).
    pub stopped_by: &'static str,
    /// --duration in seconds, if given.
    pub duration: Option<f64>,
    /// From the first post to the last (with --duration: to the moment the time was up).
    pub posting_seconds: f64,
    /// --rate: the target and what was achieved (messages and payload over `seconds`).
    pub rate: Option<RateReport>,
    pub depth: u32,
    pub mtu: u32,
    pub mtu_source: String,
    pub qp_timeout: u8,
    pub retry_count: u8,
    pub rnr_retry: u8,
    pub max_rd_atomic: u8,
    /// GRH traffic class (--tclass; rxe puts it in the IP TOS byte: the low 2 bits are the ECN field).
    pub traffic_class: u8,
    pub fault: Option<Fault>,
    /// QP pairs (-q); each runs `iterations` messages with PSNs of its own.
    pub qps: u32,
    /// The first pair's endpoints (the only pair without -q).
    pub requester: Endpoint,
    pub responder: Endpoint,
    /// Every pair's endpoints, in the order of `flows` (requester flow, responder flow per pair).
    pub pairs: Vec<PairEndpoints>,
    pub flows: Vec<Flow>,
    pub messages: u64,
    pub bytes: u64,
    pub seconds: f64,
    pub gbps: f64,
    pub messages_per_sec: f64,
    pub latency_us: Latency,
    pub completion_errors: u64,
    pub data_check: DataCheck,
    /// `gen client`: the server's summary of what it received and found in its memory.
    pub server: Option<super::oob::Summary>,
    /// Why the run stopped early (a completion error, a deadline, a post failure); exit status 1.
    pub error: Option<String>,
}

#[derive(Serialize)]
pub struct RateReport {
    /// As given: "N messages/s" or "G Gb/s".
    pub requested: String,
    pub target_messages_per_sec: f64,
    pub target_gbps: f64,
    pub achieved_messages_per_sec: f64,
    pub achieved_gbps: f64,
}

#[derive(Serialize)]
pub struct PairEndpoints {
    pub requester: Endpoint,
    pub responder: Endpoint,
}

/// The responder QP of a pair.
pub enum Peer {
    /// In this process (`gen loopback`): the requester checks its memory and its receives directly.
    Local(Side),
    /// `gen server`'s QP: it checks what it receives and its memory itself and reports after the run.
    Remote(RemoteQp),
}

pub struct RemoteQp {
    pub endpoint: Endpoint,
    pub addr: u64,
    pub rkey: u32,
    /// Message-sized slots in the remote buffer: message k goes to (READ: comes from) slot k % slots.
    pub slots: u64,
}

/// One QP pair of the run (requester QP `a`, responder `b`) and its progress.
pub struct Pair {
    pub a: Side,
    pub b: Peer,
    pub aq: u32,
    pub bq: u32,
    pub apsn: u32,
    pub bpsn: u32,
    /// The messages this pair runs: -n, or with --duration unbounded until the time is up, then `posted`.
    pub limit: u64,
    pub posted: u64,
    pub completed: u64,
    recv_posted: u64,
    recv_done: u64,
    post_time: Vec<Instant>,
    src_ip: Option<String>,
    dst_ip: Option<String>,
}

impl Pair {
    /// `a` connected to `b`, which sends from `bpsn`; `limit` messages (u64::MAX: until stopped).
    pub fn new(
        a: Side,
        b: Peer,
        bq: u32,
        bpsn: u32,
        dst_ip: Option<String>,
        limit: u64,
        depth: u32,
    ) -> Pair {
        Pair {
            aq: a.qp.qp_number(),
            apsn: a.sq_psn,
            src_ip: a.gid.ip.map(|i| i.to_string()),
            a,
            b,
            bq,
            bpsn,
            dst_ip,
            limit,
            posted: 0,
            completed: 0,
            recv_posted: 0,
            recv_done: 0,
            post_time: vec![Instant::now(); depth as usize],
        }
    }
}

/// What both ends agreed on before the run.
pub struct Setup {
    pub port: u8,
    pub mtu: u32,
    pub mtu_source: String,
    pub rd_atomic: u8,
}

/// The opcodes of `n` messages of `ppm` packets each: `PREFIX_ONLY`, or `_FIRST`, `_MIDDLE`, `_LAST`
/// (`_LAST` and `_ONLY` with `last_suffix`, e.g. `_IMM`).
fn segments(prefix: &str, n: u64, ppm: u64, last_suffix: &str) -> BTreeMap<String, u64> {
    let name = |s: &str| format!("{prefix}_{s}");
    let mut m = BTreeMap::new();
    if ppm == 1 {
        m.insert(name(&format!("ONLY{last_suffix}")), n);
    } else {
        m.insert(name("FIRST"), n);
        if ppm > 2 {
            m.insert(name("MIDDLE"), n * (ppm - 2));
        }
        m.insert(name(&format!("LAST{last_suffix}")), n);
    }
    m
}

/// The two flows of pair `p` after `n` messages: the requests, and the ACKs / responses.
fn pair_flows(op: Op, size32: u32, mtu: u32, p: &Pair, n: u64) -> [Flow; 2] {
    let ppm = if op.is_atomic() {
        1
    } else {
        packets_per_message(u64::from(size32), mtu)
    };
    let total_psns = n * ppm;
    let (req_carries, reply_carries) = match op {
        Op::Write => ("RDMA WRITE requests", "ACKs"),
        Op::WriteImm => ("RDMA WRITE with immediate requests", "ACKs"),
        Op::Send => ("SEND requests", "ACKs"),
        Op::Read => ("RDMA READ requests", "RDMA READ responses"),
        Op::FetchAdd => ("FETCH_ADD requests", "ATOMIC_ACKNOWLEDGEs"),
        Op::CmpSwap => ("COMPARE_SWAP requests", "ATOMIC_ACKNOWLEDGEs"),
    };
    let (reply_first, reply_packets) = match op {
        // an ACK at least for each message's last packet (rxe sets AckReq there); coalescing may drop some
        Op::Write | Op::WriteImm | Op::Send => (psn_add(p.apsn, ppm - 1), n),
        Op::Read | Op::FetchAdd | Op::CmpSwap => (p.apsn, total_psns),
    };
    let req_opcodes = match op {
        Op::Write => segments("RC_WRITE", n, ppm, ""),
        Op::WriteImm => segments("RC_WRITE", n, ppm, "_IMM"),
        Op::Send => segments("RC_SEND", n, ppm, ""),
        Op::Read => BTreeMap::from([("RC_READ_REQUEST".to_string(), n)]),
        Op::FetchAdd => BTreeMap::from([("RC_FETCH_ADD".to_string(), n)]),
        Op::CmpSwap => BTreeMap::from([("RC_COMPARE_SWAP".to_string(), n)]),
    };
    let reply_opcodes = match op {
        Op::Write | Op::WriteImm | Op::Send => BTreeMap::new(),
        Op::Read => segments("RC_READ_RESPONSE", n, ppm, ""),
        Op::FetchAdd | Op::CmpSwap => BTreeMap::from([("RC_ATOMIC_ACKNOWLEDGE".to_string(), n)]),
    };
    [
        Flow {
            src: p.src_ip.clone(),
            dst: p.dst_ip.clone(),
            dest_qp: p.bq,
            role: "requester",
            carries: req_carries,
            opcodes: req_opcodes,
            psn_first: p.apsn,
            // READ requests advance the PSN by the response packets they ask for
            psn_last: psn_add(p.apsn, total_psns - 1),
            packets: if op == Op::Read { n } else { total_psns },
            // the analyzer counts SEND/WRITE messages (FIRST..LAST, ONLY), not READs or atomics
            messages: if matches!(op, Op::Write | Op::WriteImm | Op::Send) {
                n
            } else {
                0
            },
        },
        Flow {
            src: p.dst_ip.clone(),
            dst: p.src_ip.clone(),
            dest_qp: p.aq,
            role: "responder",
            carries: reply_carries,
            opcodes: reply_opcodes,
            psn_first: reply_first,
            psn_last: psn_add(p.apsn, total_psns - 1),
            packets: reply_packets,
            messages: 0,
        },
    ]
}

/// Runs the pairs to the end (-n, --duration, a signal, an error or the deadline) and reports.
pub fn run(
    pairs: &mut [Pair],
    args: &WorkArgs,
    setup: &Setup,
    stop: &AtomicBool,
) -> Result<Report, String> {
    let size32 = if args.op.is_atomic() { 8 } else { args.size };
    let size = size32 as usize;
    let depth = args.depth as usize;
    let n = args.iters;
    let mtu = setup.mtu;
    let psns_per_message = if args.op.is_atomic() {
        1
    } else {
        packets_per_message(u64::from(size32), mtu)
    };
    let deadline = Duration::from_secs_f64(args.timeout);
    let mut hist = Histogram::<u64>::new(3).expect("histogram");
    let mut check = DataCheck {
        status: "passed".to_string(),
        checked: 0,
        mismatches: 0,
        first_mismatch: None,
    };
    let mut completion_errors = 0u64;
    let mut error: Option<String> = None;
    // receives on a local responder (SEND, WRITE with immediate); `gen server` posts its own
    let local_receives = args.op.consumes_receive();
    for p in pairs.iter_mut() {
        if let Peer::Local(b) = &mut p.b {
            while local_receives && p.recv_posted < p.limit.min(depth as u64) {
                post_recv(b, p.recv_posted, size32, args.depth)?;
                p.recv_posted += 1;
            }
            if args.op.is_atomic() {
                // SAFETY: nothing is posted yet.
                unsafe { b.buf.slice_mut(0, 8) }
                    .copy_from_slice(&pattern::atomic_value(p.aq, 0).to_ne_bytes());
            }
        }
    }
    let mismatch = |check: &mut DataCheck, what: String| {
        check.mismatches += 1;
        check.status = "failed".to_string();
        if check.first_mismatch.is_none() {
            check.first_mismatch = Some(what);
        }
    };
    let rate_mps = args.rate.map(|r| r.messages_per_sec(size32));
    let run_for = args.duration.map(Duration::from_secs_f64);
    let mut total_posted = 0u64;
    let t0 = Instant::now();
    let mut last_progress = t0;
    let mut t_end = t0;
    let mut t_last_post = t0;
    let mut stopped_at: Option<Instant> = None;
    let mut stopped_by = if args.duration.is_some() {
        "duration"
    } else {
        "iters"
    };
    let waits_for_receives = |p: &Pair| local_receives && matches!(p.b, Peer::Local(_));
    'run: while pairs
        .iter()
        .any(|p| p.completed < p.limit || (waits_for_receives(p) && p.recv_done < p.limit))
    {
        if stopped_at.is_none() {
            let now = Instant::now();
            let signalled = stop.load(Ordering::Relaxed);
            if signalled || run_for.is_some_and(|d| now.duration_since(t0) >= d) {
                // stop posting; the messages in flight complete (or the deadline ends the run)
                stopped_at = Some(now);
                if signalled {
                    stopped_by = "signal";
                }
                for p in pairs.iter_mut() {
                    p.limit = p.posted;
                }
                continue;
            }
        }
        for pair in pairs.iter_mut() {
            let Pair {
                a,
                b,
                aq,
                bq,
                apsn,
                limit,
                posted,
                completed,
                recv_posted,
                recv_done,
                post_time,
                ..
            } = pair;
            let aq = *aq;
            // post while the window (and, on a local responder, the receives posted) allow
            while *posted < *limit
                && *posted - *completed < depth as u64
                && !(local_receives && matches!(b, Peer::Local(_)) && *posted >= *recv_posted)
                && rate_mps.is_none_or(|mps| t0.elapsed() >= plan::post_due(total_posted, mps))
            {
                let slot = (*posted % depth as u64) as usize;
                let off = slot * size;
                // SAFETY: message `posted - depth` used this slot and has completed.
                unsafe {
                    match args.op {
                        Op::Write | Op::WriteImm | Op::Send => {
                            pattern::fill(a.buf.slice_mut(off, size), aq, *posted)
                        }
                        Op::Read => {
                            // what a READ must not return: a slot the device did not write shows
                            a.buf.slice_mut(off, size).fill(0xee);
                            if let Peer::Local(b) = b {
                                pattern::fill(b.buf.slice_mut(off, size), aq, *posted)
                            }
                        }
                        // not the value the atomic must return: a slot the device did not write shows
                        Op::FetchAdd | Op::CmpSwap => a
                            .buf
                            .slice_mut(off, 8)
                            .copy_from_slice(&(!pattern::atomic_value(aq, *posted)).to_ne_bytes()),
                    }
                }
                let (laddr, lkey) = (a.buf.addr(off), a.mr.lkey());
                let (raddr, mut rkey) = match b {
                    Peer::Local(b) if args.op.is_atomic() => (b.buf.addr(0), b.mr.rkey()),
                    Peer::Local(b) => (b.buf.addr(off), b.mr.rkey()),
                    Peer::Remote(r) if args.op.is_atomic() => (r.addr, r.rkey),
                    Peer::Remote(r) => (r.addr + (*posted % r.slots) * size as u64, r.rkey),
                };
                if args.fault == Some(Fault::BadRkey) && *posted == n - 1 {
                    // same MR index, another key byte: rxe finds the MR and refuses the key
                    rkey ^= 0x80;
                }
                let now = Instant::now();
                post_time[slot] = now;
                if *posted == *completed {
                    // nothing was in flight (paced by --rate): the completion deadline starts now
                    last_progress = now;
                }
                let mut g = a.qp.start_post_send();
                let wr = g.construct_wr(*posted, WorkRequestFlags::Signaled);
                let h = match args.op {
                    Op::Write => wr.setup_write(rkey, raddr),
                    // the immediate is the message number, big-endian on the wire
                    Op::WriteImm => wr.setup_write_imm(rkey, raddr, (*posted as u32).to_be()),
                    Op::Send => wr.setup_send(),
                    Op::Read => wr.setup_read(rkey, raddr),
                    Op::FetchAdd => wr.setup_atomic_fetch_add(rkey, raddr, pattern::ATOMIC_ADD),
                    Op::CmpSwap => wr.setup_atomic_compare_swap(
                        rkey,
                        raddr,
                        pattern::atomic_value(aq, *posted),
                        pattern::atomic_value(aq, *posted + 1),
                    ),
                };
                // SAFETY: the slot is inside a's registered buffer.
                unsafe { h.setup_sge(lkey, laddr, size32) };
                if let Err(e) = g.post() {
                    error = Some(format!(
                        "{}: QP {aq:#x}: post send of message {posted}: {}",
                        a.name,
                        io_of(&e)
                    ));
                    break 'run;
                }
                *posted += 1;
                total_posted += 1;
                t_last_post = now;
            }
            // a local responder's receives (SEND, WRITE with immediate): check the data, post the receive again
            if local_receives
                && let Peer::Local(b) = b
                && let Ok(poller) = b.recv_cq.start_poll()
            {
                let wcs: Vec<(u64, u32, u32, u32, u32)> = poller
                    .map(|wc| {
                        (
                            wc.wr_id(),
                            wc.status(),
                            wc.byte_len(),
                            wc.vendor_err(),
                            wc.imm_data(),
                        )
                    })
                    .collect();
                for (wr_id, status, byte_len, vendor_err, imm) in wcs {
                    let now = Instant::now();
                    last_progress = now;
                    let bq = b.qp.qp_number();
                    if status != 0 {
                        completion_errors += 1;
                        error = Some(format!(
                            "{}: QP {bq:#x}: receive {wr_id} completed with {} (status {status}, vendor error \
                             {vendor_err:#x})",
                            b.name,
                            wc_status_name(status)
                        ));
                        break 'run;
                    }
                    if wr_id != *recv_done {
                        error = Some(format!(
                            "{}: QP {bq:#x}: receive completion out of order: wr_id {wr_id}, expected {recv_done}",
                            b.name
                        ));
                        break 'run;
                    }
                    let off = (*recv_done % depth as u64) as usize * size;
                    check.checked += 1;
                    if let Some(what) = received_mismatch(
                        args.op,
                        // SAFETY: this receive (or the WRITE it announces) has completed and the slot is not
                        // posted again yet.
                        unsafe { b.buf.slice(off, size) },
                        byte_len,
                        imm,
                        aq,
                        *recv_done,
                    ) {
                        mismatch(&mut check, what);
                    }
                    *recv_done += 1;
                    t_end = now;
                    if *recv_posted < *limit {
                        post_recv(b, *recv_posted, size32, args.depth)?;
                        *recv_posted += 1;
                    }
                }
            }
            // the requester's completions: in posting order, then the data check
            if let Ok(poller) = a.send_cq.start_poll() {
                let wcs: Vec<(u64, u32, u32)> = poller
                    .map(|wc| (wc.wr_id(), wc.status(), wc.vendor_err()))
                    .collect();
                for (wr_id, status, vendor_err) in wcs {
                    let now = Instant::now();
                    last_progress = now;
                    if status != 0 {
                        completion_errors += 1;
                        // the message's first PSN: what the peer did not acknowledge, or refused
                        let psn = psn_add(*apsn, wr_id.saturating_mul(psns_per_message));
                        error = Some(format!(
                            "{}: QP {aq:#x}: message {wr_id} (PSN {psn:#x}) completed with {} (status {status}, \
                             vendor error {vendor_err:#x}){}; QP state now {}",
                            a.name,
                            wc_status_name(status),
                            plan::wc_status_meaning(status, psn, *bq)
                                .map(|m| format!(": {m}"))
                                .unwrap_or_default(),
                            a.qp_state_now()
                        ));
                        break 'run;
                    }
                    if wr_id != *completed {
                        error = Some(format!(
                            "{}: QP {aq:#x}: completion out of order or phantom: wr_id {wr_id}, expected {completed}",
                            a.name
                        ));
                        break 'run;
                    }
                    let slot = (*completed % depth as u64) as usize;
                    let lat = now.duration_since(post_time[slot]);
                    let _ = hist.record(lat.as_nanos().max(1) as u64);
                    let off = slot * size;
                    let k = *completed;
                    // SAFETY (all three reads): the message completed; nothing else targets its slot until
                    // it is posted again.
                    let bad = match (args.op, &*b) {
                        (Op::Write, Peer::Local(b)) => {
                            Some(pattern::check(unsafe { b.buf.slice(off, size) }, aq, k))
                        }
                        // a remote responder checks WRITEs itself; SENDs and WRITEs with immediate are
                        // checked where they are received
                        (Op::Write | Op::WriteImm | Op::Send, _) => None,
                        (Op::Read, peer) => {
                            // gen server fills its slots once: slot j holds message j's pattern
                            let msg = match peer {
                                Peer::Local(_) => k,
                                Peer::Remote(r) => k % r.slots,
                            };
                            Some(pattern::check(unsafe { a.buf.slice(off, size) }, aq, msg))
                        }
                        (Op::FetchAdd | Op::CmpSwap, _) => {
                            // the original value the responder returned: the sequence of the remote word
                            let mut w = [0u8; 8];
                            w.copy_from_slice(unsafe { a.buf.slice(off, 8) });
                            let got = u64::from_ne_bytes(w);
                            let want = pattern::atomic_value(aq, k);
                            check.checked += 1;
                            if got != want {
                                mismatch(
                                    &mut check,
                                    format!(
                                        "message {k}: {} returned {got:#018x}, expected {want:#018x}",
                                        args.op.name()
                                    ),
                                );
                            }
                            None
                        }
                    };
                    if let Some(bad) = bad {
                        check.checked += 1;
                        if let Some(at) = bad {
                            mismatch(&mut check, format!("message {k}: byte {at} differs"));
                        }
                    }
                    *completed += 1;
                    t_end = t_end.max(now);
                }
            }
        }
        let in_flight = pairs
            .iter()
            .any(|p| p.completed < p.posted || (waits_for_receives(p) && p.recv_done < p.posted));
        if let Some(mps) = rate_mps
            && !in_flight
        {
            // paced and idle: sleep until the next message is due (at most 10 ms, the duration is checked
            // at the top of the loop)
            let wait = plan::post_due(total_posted, mps).saturating_sub(t0.elapsed());
            if wait > Duration::from_micros(200) {
                std::thread::sleep(wait.min(Duration::from_millis(10)));
            }
        }
        if in_flight && last_progress.elapsed() > deadline {
            error = Some(format!(
                "no completion for {:.1} s: {} of {} messages completed{}; {}",
                args.timeout,
                pairs.iter().map(|p| p.completed).sum::<u64>(),
                pairs
                    .iter()
                    .map(|p| if stopped_at.is_some() || args.duration.is_some() {
                        p.posted
                    } else {
                        n
                    })
                    .sum::<u64>(),
                if local_receives {
                    format!(
                        ", {} received",
                        pairs.iter().map(|p| p.recv_done).sum::<u64>()
                    )
                } else {
                    String::new()
                },
                pairs
                    .iter()
                    .map(|p| {
                        let peer = match &p.b {
                            Peer::Local(b) => {
                                format!("QP {:#x} ({}) is {}", p.bq, b.name, b.qp_state_now())
                            }
                            // its state is not known here: the server may be gone
                            Peer::Remote(r) => format!(
                                "the peer's QP {:#x} is on {} of the server (has it stopped?)",
                                p.bq, r.endpoint.device
                            ),
                        };
                        format!(
                            "QP {:#x} ({}) is {}, {peer}",
                            p.aq,
                            p.a.name,
                            p.a.qp_state_now()
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("; ")
            ));
            break 'run;
        }
    }
    // the remote word after the last atomic (a remote responder checks its own)
    if args.op.is_atomic() && error.is_none() {
        for p in pairs.iter() {
            if let Peer::Local(b) = &p.b {
                let mut w = [0u8; 8];
                // SAFETY: every atomic has completed.
                w.copy_from_slice(unsafe { b.buf.slice(0, 8) });
                if let Some(what) = atomic_word_mismatch(u64::from_ne_bytes(w), p.aq, p.completed) {
                    mismatch(&mut check, what);
                }
            }
        }
    }
    // messages per pair: -n, or those posted when the run was stopped early
    let stopped_early = stopped_at.is_some();
    let planned = |p: &Pair| if stopped_early { p.posted } else { n };
    let total = pairs.iter().map(planned).sum::<u64>();
    let flows: Vec<Flow> = pairs
        .iter()
        .filter(|p| planned(p) > 0) // stopped before this pair posted anything
        .flat_map(|p| pair_flows(args.op, size32, mtu, p, planned(p)))
        .collect();
    // the SEND payload is checked only where it was received
    if error.is_some() && check.status == "passed" && check.checked < total {
        check.status = "incomplete".to_string();
    }
    let messages = pairs
        .iter()
        .map(|p| {
            if waits_for_receives(p) {
                p.completed.min(p.recv_done)
            } else {
                p.completed
            }
        })
        .sum::<u64>();
    let seconds = t_end.duration_since(t0).as_secs_f64();
    let bytes = messages * u64::from(size32);
    let us = |v: u64| v as f64 / 1000.0;
    let latency_us = if hist.is_empty() {
        Latency::default()
    } else {
        Latency {
            p50: us(hist.value_at_quantile(0.5)),
            p99: us(hist.value_at_quantile(0.99)),
            max: us(hist.max()),
        }
    };
    let per_sec = |v: f64| if seconds > 0.0 { v / seconds } else { 0.0 };
    let responder = |p: &Pair| match &p.b {
        Peer::Local(b) => endpoint(b, setup.port, p.apsn),
        Peer::Remote(r) => r.endpoint.clone(),
    };
    let mut report = Report {
        op: args.op,
        size: size32,
        iterations: planned(&pairs[0]),
        stopped_by,
        duration: args.duration,
        posting_seconds: stopped_at
            .unwrap_or(t_last_post)
            .duration_since(t0)
            .as_secs_f64(),
        rate: args.rate.map(|r| RateReport {
            requested: match r {
                plan::Rate::MessagesPerSec(m) => format!("{m} messages/s"),
                plan::Rate::Gbps(g) => format!("{g} Gb/s"),
            },
            target_messages_per_sec: r.messages_per_sec(size32),
            target_gbps: r.gbps(size32),
            achieved_messages_per_sec: per_sec(messages as f64),
            achieved_gbps: per_sec(bytes as f64 * 8.0) / 1e9,
        }),
        depth: args.depth,
        mtu,
        mtu_source: setup.mtu_source.clone(),
        qp_timeout: args.qp_timeout,
        retry_count: args.retry_count,
        rnr_retry: args.rnr_retry,
        max_rd_atomic: setup.rd_atomic,
        traffic_class: args.tclass,
        fault: args.fault,
        qps: args.qps,
        requester: endpoint(&pairs[0].a, setup.port, pairs[0].bpsn),
        responder: responder(&pairs[0]),
        pairs: pairs
            .iter()
            .map(|p| PairEndpoints {
                requester: endpoint(&p.a, setup.port, p.bpsn),
                responder: responder(p),
            })
            .collect(),
        flows,
        messages,
        bytes,
        seconds,
        gbps: per_sec(bytes as f64 * 8.0) / 1e9,
        messages_per_sec: per_sec(messages as f64),
        latency_us,
        completion_errors,
        data_check: check,
        server: None,
        error,
    };
    if stopped_by == "signal" && report.error.is_none() {
        report.error = Some(format!(
            "interrupted: stopped posting after {} messages; those in flight completed",
            pairs.iter().map(|p| p.posted).sum::<u64>()
        ));
    }
    report.fail_on_data_check();
    Ok(report)
}

impl Report {
    /// A failed data check is the run's error when nothing else went wrong first.
    pub fn fail_on_data_check(&mut self) {
        if self.data_check.status == "failed" && self.error.is_none() {
            self.error = Some(format!(
                "data check failed: {} of {} messages differ ({})",
                self.data_check.mismatches,
                self.data_check.checked,
                self.data_check.first_mismatch.clone().unwrap_or_default()
            ));
        }
    }
}

/// What is wrong with received message `k` (SEND payload, or WRITE with immediate: the written slot and the
/// immediate), if anything.
pub fn received_mismatch(
    op: Op,
    slot: &[u8],
    byte_len: u32,
    imm_be: u32,
    aq: u32,
    k: u64,
) -> Option<String> {
    if byte_len as usize != slot.len() {
        return Some(format!(
            "message {k}: received {byte_len} bytes, sent {}",
            slot.len()
        ));
    }
    if op == Op::WriteImm && u32::from_be(imm_be) != k as u32 {
        return Some(format!(
            "message {k}: immediate data {:#x}, expected {:#x}",
            u32::from_be(imm_be),
            k as u32
        ));
    }
    pattern::check(slot, aq, k).map(|at| format!("message {k}: byte {at} differs"))
}

/// The remote word after `completed` atomics of requester `aq` must be the next value of its sequence.
pub fn atomic_word_mismatch(got: u64, aq: u32, completed: u64) -> Option<String> {
    let want = pattern::atomic_value(aq, completed);
    (got != want).then(|| {
        format!(
            "QP {aq:#x}: the remote word is {got:#018x} after {completed} messages, expected {want:#018x}"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::segments;

    #[test]
    fn opcodes_of_segmented_messages() {
        let m = segments("RC_WRITE", 32, 4, "");
        assert_eq!(m.len(), 3);
        assert_eq!(
            (
                m["RC_WRITE_FIRST"],
                m["RC_WRITE_MIDDLE"],
                m["RC_WRITE_LAST"]
            ),
            (32, 64, 32)
        );
        let m = segments("RC_SEND", 8, 2, "");
        assert_eq!(m.len(), 2);
        assert_eq!(
            segments("RC_READ_RESPONSE", 5, 1, "")["RC_READ_RESPONSE_ONLY"],
            5
        );
        // IBTA opcodes 0x09 and 0x0B: the immediate rides on the last (or only) packet
        let m = segments("RC_WRITE", 3, 2, "_IMM");
        assert_eq!((m["RC_WRITE_FIRST"], m["RC_WRITE_LAST_IMM"]), (3, 3));
        assert_eq!(segments("RC_WRITE", 7, 1, "_IMM")["RC_WRITE_ONLY_IMM"], 7);
    }
}
