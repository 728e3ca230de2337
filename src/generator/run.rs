//! The requester's side of a run, shared by `gen loopback` (the responder QP in this process) and `gen client`
//! (the responder is `gen server` on another host): posting within the window and the rate, completions
//! checked for order and wr_id with a deadline on every wait, the data check, and the report whose QPNs, PSN
//! ranges and opcodes can be matched with a capture.
//!
//! A run goes through its phases around [`Run`]: set-up ([`prepare`]), then rounds of posting, polling the
//! receive and send completions and pacing (or giving up on a stall) until every message is done, then the
//! report.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use sideway::ibverbs::queue_pair::{
    PostSendError, PostSendGuard, QueuePair, SetScatterGatherEntry, WorkRequestFlags,
};

use super::config::WorkConfig;
use super::pattern;
use super::plan::{self, wc_status_name};
use super::records::{
    CheckStatus, DataCheck, Endpoint, Fault, Flow, Latency, Op, PairEndpoints, RateReport, Report,
    StoppedBy,
};
use super::verbs::{Side, VerbsError, endpoint, post_recv};
use super::wire::{self, PairIds};
use parsers::psn::{add_wide as psn_add, packets as packets_per_message};
use rocescope::report::format::error_line;

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
    /// The destination QPN `a` is connected to: `b`'s, or with --fault wrong-qpn one no QP has.
    pub bq: u32,
    pub apsn: u32,
    pub bpsn: u32,
    /// The messages this pair runs: -n, or with --duration unbounded until the time is up, then `posted`.
    pub limit: u64,
    pub posted: u64,
    pub completed: u64,
    recv: Receives,
    post_time: Vec<Instant>,
    src_ip: Option<String>,
    dst_ip: Option<String>,
}

impl Pair {
    /// `a` connected to destination QPN `bq` (`b`'s QP but with --fault wrong-qpn), `b` sending from
    /// `bpsn`; `limit` messages (u64::MAX: until stopped).
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
            recv: Receives::default(),
            post_time: vec![Instant::now(); depth as usize],
        }
    }

    fn ids(&self) -> PairIds<'_> {
        PairIds {
            requester_ip: self.src_ip.as_deref(),
            responder_ip: self.dst_ip.as_deref(),
            requester_qpn: self.aq,
            responder_qpn: self.bq,
            requester_psn: self.apsn,
        }
    }

    /// The QPs' states, for a run that stalled.
    fn qp_states(&self) -> String {
        let peer = match &self.b {
            Peer::Local(b) => format!(
                "QP {:#x} ({}) is {}",
                b.qp.qp_number(),
                b.name,
                b.qp_state_now()
            ),
            // its state is not known here: the server may be gone
            Peer::Remote(r) => format!(
                "the peer's QP {:#x} is on {} of the server (has it stopped?)",
                self.bq, r.endpoint.device
            ),
        };
        format!(
            "QP {:#x} ({}) is {}, {peer}",
            self.aq,
            self.a.name,
            self.a.qp_state_now()
        )
    }
}

/// A local responder's receives: posted, and completed (checked).
#[derive(Default)]
struct Receives {
    posted: u64,
    done: u64,
}

/// What both ends agreed on before the run.
pub struct Setup {
    pub port: u8,
    pub mtu: u32,
    pub mtu_source: String,
    pub rd_atomic: u8,
}

/// Runs the pairs to the end (-n, --duration, a signal, an error or the deadline) and reports.
pub fn run(
    pairs: &mut [Pair],
    w: &WorkConfig,
    setup: &Setup,
    stop: &AtomicBool,
) -> Result<Report, VerbsError> {
    prepare(pairs, w)?;
    let mut run = Run::start(w, setup.mtu);
    let error = match run.drive(pairs, stop) {
        Ok(()) => None,
        Err(Halt::Reported(e)) => Some(e),
        Err(Halt::Failed(e)) => return Err(e),
    };
    Ok(run.report(pairs, setup, error))
}

/// Does a local responder post receives for `w`'s messages? Not with --fault no-receive.
fn posts_receives(w: &WorkConfig) -> bool {
    w.op.consumes_receive() && w.fault != Some(Fault::NoReceive)
}

/// Before the first post: a local responder's first receives, and the remote word of the atomics.
fn prepare(pairs: &mut [Pair], w: &WorkConfig) -> Result<(), VerbsError> {
    for p in pairs.iter_mut() {
        if let Peer::Local(b) = &mut p.b {
            while posts_receives(w) && p.recv.posted < p.limit.min(u64::from(w.depth)) {
                post_recv(b, p.recv.posted, w.message_size(), w.depth)?;
                p.recv.posted += 1;
            }
            if w.op.is_atomic() {
                // SAFETY: nothing is posted yet.
                unsafe { b.buf.slice_mut(0, 8) }
                    .copy_from_slice(&pattern::atomic_value(p.aq, 0).to_ne_bytes());
            }
        }
    }
    Ok(())
}

/// Why a run ends before all its messages are done.
enum Halt {
    /// A completion error, a deadline, a post failure: the report says it (exit status 1).
    Reported(String),
    /// A receive could not be posted again: the run fails without a report.
    Failed(VerbsError),
}

/// A work completion of the requester's send queue.
struct SendWc {
    wr_id: u64,
    status: u32,
    vendor_err: u32,
}

/// A work completion of a local responder's receive queue.
struct RecvWc {
    wr_id: u64,
    status: u32,
    byte_len: u32,
    vendor_err: u32,
    imm: u32,
}

/// A run in progress: its parameters, its clocks and what it has measured so far.
struct Run<'a> {
    w: &'a WorkConfig,
    /// Bytes per message on the wire, as a u32 (verbs) and as a usize (slots).
    size32: u32,
    size: usize,
    depth: u64,
    psns_per_message: u64,
    /// Receives on a local responder (SEND, WRITE with immediate; none with --fault no-receive); `gen
    /// server` posts its own.
    local_receives: bool,
    rate_mps: Option<f64>,
    run_for: Option<Duration>,
    deadline: Duration,
    hist: Histogram<u64>,
    check: DataCheck,
    completion_errors: u64,
    total_posted: u64,
    t0: Instant,
    last_progress: Instant,
    t_end: Instant,
    t_last_post: Instant,
    stopped_at: Option<Instant>,
    stopped_by: StoppedBy,
    /// When the first completion with error came (the QP gave up).
    failed_at: Option<Instant>,
}

impl Run<'_> {
    fn start(w: &WorkConfig, mtu: u32) -> Run<'_> {
        let size32 = w.message_size();
        let t0 = Instant::now();
        Run {
            w,
            size32,
            size: size32 as usize,
            depth: u64::from(w.depth),
            psns_per_message: if w.op.is_atomic() {
                1
            } else {
                packets_per_message(u64::from(size32), mtu)
            },
            local_receives: posts_receives(w),
            rate_mps: w.rate.map(|r| r.messages_per_sec(size32)),
            run_for: w.duration.map(Duration::from_secs_f64),
            deadline: Duration::from_secs_f64(w.timeout),
            hist: Histogram::<u64>::new(3).expect("histogram"),
            check: DataCheck::passed(),
            completion_errors: 0,
            total_posted: 0,
            t0,
            last_progress: t0,
            t_end: t0,
            t_last_post: t0,
            stopped_at: None,
            failed_at: None,
            stopped_by: if w.duration.is_some() {
                StoppedBy::Duration
            } else {
                StoppedBy::Iters
            },
        }
    }

    /// Does the pair's run wait for the receives of its responder here?
    fn waits_for_receives(&self, p: &Pair) -> bool {
        self.local_receives && matches!(p.b, Peer::Local(_))
    }

    fn unfinished(&self, p: &Pair) -> bool {
        p.completed < p.limit || (self.waits_for_receives(p) && p.recv.done < p.limit)
    }

    /// Rounds of posting and polling until every pair is done.
    fn drive(&mut self, pairs: &mut [Pair], stop: &AtomicBool) -> Result<(), Halt> {
        while pairs.iter().any(|p| self.unfinished(p)) {
            if self.stopped_at.is_none() && self.time_to_stop(stop) {
                // stop posting; the messages in flight complete (or the deadline ends the run)
                for p in pairs.iter_mut() {
                    p.limit = p.posted;
                }
                continue;
            }
            for p in pairs.iter_mut() {
                self.post(p)?;
                self.poll_receives(p)?;
                self.poll_sends(p)?;
            }
            self.pace_or_give_up(pairs)?;
        }
        Ok(())
    }

    /// A signal, or --duration is up: notes when and why.
    fn time_to_stop(&mut self, stop: &AtomicBool) -> bool {
        let now = Instant::now();
        let signalled = stop.load(Ordering::Relaxed);
        if !(signalled
            || self
                .run_for
                .is_some_and(|d| now.duration_since(self.t0) >= d))
        {
            return false;
        }
        self.stopped_at = Some(now);
        if signalled {
            self.stopped_by = StoppedBy::Signal;
        }
        true
    }

    /// Posts while the window, the receives posted on a local responder and the rate allow.
    fn post(&mut self, p: &mut Pair) -> Result<(), Halt> {
        while p.posted < p.limit
            && p.posted - p.completed < self.depth
            && !(self.waits_for_receives(p) && p.posted >= p.recv.posted)
            && self
                .rate_mps
                .is_none_or(|mps| self.t0.elapsed() >= plan::post_due(self.total_posted, mps))
        {
            self.post_one(p)?;
        }
        Ok(())
    }

    fn post_one(&mut self, p: &mut Pair) -> Result<(), Halt> {
        let slot = (p.posted % self.depth) as usize;
        let off = slot * self.size;
        self.fill_slot(p, off);
        let now = Instant::now();
        p.post_time[slot] = now;
        if p.posted == p.completed {
            // nothing was in flight (paced by --rate): the completion deadline starts now
            self.last_progress = now;
        }
        self.post_send(p, off).map_err(|e| {
            Halt::Reported(format!(
                "{}: QP {:#x}: post send of message {}: {}",
                p.a.name,
                p.aq,
                p.posted,
                error_line(&e)
            ))
        })?;
        p.posted += 1;
        self.total_posted += 1;
        self.t_last_post = now;
        Ok(())
    }

    /// Message `p.posted`'s slot at `off` before it is posted: its pattern where it is sent from, and where
    /// the device must write (READ, the atomics) something a missed write shows.
    fn fill_slot(&self, p: &mut Pair, off: usize) {
        let (size, aq, k) = (self.size, p.aq, p.posted);
        // SAFETY: message `k - depth` used this slot and has completed.
        unsafe {
            match self.w.op {
                Op::Write | Op::WriteImm | Op::Send => {
                    pattern::fill(p.a.buf.slice_mut(off, size), aq, k)
                }
                Op::Read => {
                    // what a READ must not return: a slot the device did not write shows
                    p.a.buf.slice_mut(off, size).fill(0xee);
                    if let Peer::Local(b) = &mut p.b {
                        pattern::fill(b.buf.slice_mut(off, size), aq, k)
                    }
                }
                // not the value the atomic must return: a slot the device did not write shows
                Op::FetchAdd | Op::CmpSwap => {
                    p.a.buf
                        .slice_mut(off, 8)
                        .copy_from_slice(&(!pattern::atomic_value(aq, k)).to_ne_bytes())
                }
            }
        }
    }

    /// The remote address and R_Key of message `p.posted` (local slot at `off`).
    fn target(&self, p: &Pair, off: usize) -> (u64, u32) {
        let atomic = self.w.op.is_atomic();
        let (raddr, mut rkey) = match &p.b {
            Peer::Local(b) if atomic => (b.buf.addr(0), b.mr.rkey()),
            Peer::Local(b) => (b.buf.addr(off), b.mr.rkey()),
            Peer::Remote(r) if atomic => (r.addr, r.rkey),
            Peer::Remote(r) => (r.addr + (p.posted % r.slots) * self.size as u64, r.rkey),
        };
        if self.w.fault == Some(Fault::BadRkey) && p.posted == self.w.iters - 1 {
            rkey = plan::bad_rkey(rkey);
        }
        (raddr, rkey)
    }

    fn post_send(&self, p: &mut Pair, off: usize) -> Result<(), PostSendError> {
        let (raddr, rkey) = self.target(p, off);
        let (laddr, lkey) = (p.a.buf.addr(off), p.a.mr.lkey());
        let (aq, k) = (p.aq, p.posted);
        let mut g = p.a.qp.start_post_send();
        let wr = g.construct_wr(k, WorkRequestFlags::Signaled);
        let h = match self.w.op {
            Op::Write => wr.setup_write(rkey, raddr),
            // the immediate is the message number, big-endian on the wire
            Op::WriteImm => wr.setup_write_imm(rkey, raddr, (k as u32).to_be()),
            Op::Send => wr.setup_send(),
            Op::Read => wr.setup_read(rkey, raddr),
            Op::FetchAdd => wr.setup_atomic_fetch_add(rkey, raddr, pattern::ATOMIC_ADD),
            Op::CmpSwap => wr.setup_atomic_compare_swap(
                rkey,
                raddr,
                pattern::atomic_value(aq, k),
                pattern::atomic_value(aq, k + 1),
            ),
        };
        // SAFETY: the slot is inside a's registered buffer.
        unsafe { h.setup_sge(lkey, laddr, self.size32) };
        g.post()
    }

    /// A local responder's receives (SEND, WRITE with immediate): check the data, post the receive again.
    fn poll_receives(&mut self, p: &mut Pair) -> Result<(), Halt> {
        let Pair {
            b: Peer::Local(b),
            aq,
            limit,
            recv,
            ..
        } = p
        else {
            return Ok(());
        };
        if !self.local_receives {
            return Ok(());
        }
        let Ok(poller) = b.recv_cq.start_poll() else {
            return Ok(());
        };
        let wcs: Vec<RecvWc> = poller
            .map(|wc| RecvWc {
                wr_id: wc.wr_id(),
                status: wc.status(),
                byte_len: wc.byte_len(),
                vendor_err: wc.vendor_err(),
                imm: wc.imm_data(),
            })
            .collect();
        for wc in wcs {
            self.on_receive(b, *aq, *limit, recv, wc)?;
        }
        Ok(())
    }

    /// Receive completion `wc` on `b`, from requester QP `aq` of a pair that runs `limit` messages.
    fn on_receive(
        &mut self,
        b: &mut Side,
        aq: u32,
        limit: u64,
        recv: &mut Receives,
        wc: RecvWc,
    ) -> Result<(), Halt> {
        let now = Instant::now();
        self.last_progress = now;
        let bq = b.qp.qp_number();
        let (wr_id, status) = (wc.wr_id, wc.status);
        if status != 0 {
            self.completion_errors += 1;
            self.failed_at = self.failed_at.or(Some(now));
            return Err(Halt::Reported(format!(
                "{}: QP {bq:#x}: receive {wr_id} completed with {} (status {status}, vendor error {:#x})",
                b.name,
                wc_status_name(status),
                wc.vendor_err
            )));
        }
        if wr_id != recv.done {
            return Err(Halt::Reported(format!(
                "{}: QP {bq:#x}: receive completion out of order: wr_id {wr_id}, expected {}",
                b.name, recv.done
            )));
        }
        let off = (recv.done % self.depth) as usize * self.size;
        self.check.checked += 1;
        // SAFETY: this receive (or the WRITE it announces) has completed and the slot is not posted again yet.
        let slot = unsafe { b.buf.slice(off, self.size) };
        if let Some(what) =
            pattern::received_mismatch(self.w.op, slot, wc.byte_len, wc.imm, aq, recv.done)
        {
            self.check.mismatch(what);
        }
        recv.done += 1;
        self.t_end = now;
        if recv.posted < limit {
            post_recv(b, recv.posted, self.size32, self.w.depth).map_err(Halt::Failed)?;
            recv.posted += 1;
        }
        Ok(())
    }

    /// The requester's completions: in posting order, then the data check.
    fn poll_sends(&mut self, p: &mut Pair) -> Result<(), Halt> {
        let Ok(poller) = p.a.send_cq.start_poll() else {
            return Ok(());
        };
        let wcs: Vec<SendWc> = poller
            .map(|wc| SendWc {
                wr_id: wc.wr_id(),
                status: wc.status(),
                vendor_err: wc.vendor_err(),
            })
            .collect();
        for wc in wcs {
            self.on_send_completion(p, wc)?;
        }
        Ok(())
    }

    fn on_send_completion(&mut self, p: &mut Pair, wc: SendWc) -> Result<(), Halt> {
        let now = Instant::now();
        self.last_progress = now;
        let (aq, wr_id, status) = (p.aq, wc.wr_id, wc.status);
        if status != 0 {
            self.completion_errors += 1;
            self.failed_at = self.failed_at.or(Some(now));
            // the message's first PSN: what the peer did not acknowledge, or refused
            let psn = psn_add(p.apsn, wr_id.saturating_mul(self.psns_per_message));
            return Err(Halt::Reported(format!(
                "{}: QP {aq:#x}: message {wr_id} (PSN {psn:#x}) completed with {} (status {status}, vendor \
                 error {:#x}){}; QP state now {}",
                p.a.name,
                wc_status_name(status),
                wc.vendor_err,
                plan::wc_status_meaning(status, psn, p.bq)
                    .map(|m| format!(": {m}"))
                    .unwrap_or_default(),
                p.a.qp_state_now()
            )));
        }
        if wr_id != p.completed {
            return Err(Halt::Reported(format!(
                "{}: QP {aq:#x}: completion out of order or phantom: wr_id {wr_id}, expected {}",
                p.a.name, p.completed
            )));
        }
        let slot = (p.completed % self.depth) as usize;
        let lat = now.duration_since(p.post_time[slot]);
        let _ = self.hist.record(lat.as_nanos().max(1) as u64);
        self.check_completed(p, slot * self.size);
        p.completed += 1;
        self.t_end = self.t_end.max(now);
        Ok(())
    }

    /// The data check of completed message `p.completed` (local slot at `off`), where the requester can
    /// see it.
    fn check_completed(&mut self, p: &Pair, off: usize) {
        let (size, aq, k) = (self.size, p.aq, p.completed);
        // SAFETY (all three reads): the message completed; nothing else targets its slot until it is posted
        // again.
        let bad = match (self.w.op, &p.b) {
            (Op::Write, Peer::Local(b)) => {
                Some(pattern::check(unsafe { b.buf.slice(off, size) }, aq, k))
            }
            // a remote responder checks WRITEs itself; SENDs and WRITEs with immediate are checked where
            // they are received
            (Op::Write | Op::WriteImm | Op::Send, _) => None,
            (Op::Read, peer) => {
                // gen server fills its slots once: slot j holds message j's pattern
                let msg = match peer {
                    Peer::Local(_) => k,
                    Peer::Remote(r) => k % r.slots,
                };
                Some(pattern::check(unsafe { p.a.buf.slice(off, size) }, aq, msg))
            }
            (Op::FetchAdd | Op::CmpSwap, _) => {
                // the original value the responder returned: the sequence of the remote word
                let mut w = [0u8; 8];
                w.copy_from_slice(unsafe { p.a.buf.slice(off, 8) });
                let got = u64::from_ne_bytes(w);
                let want = pattern::atomic_value(aq, k);
                self.check.checked += 1;
                if got != want {
                    self.check.mismatch(format!(
                        "message {k}: {} returned {got:#018x}, expected {want:#018x}",
                        self.w.op.name()
                    ));
                }
                None
            }
        };
        if let Some(bad) = bad {
            self.check.checked += 1;
            if let Some(at) = bad {
                self.check
                    .mismatch(format!("message {k}: byte {at} differs"));
            }
        }
    }

    /// Paced and idle: sleeps until the next message is due. Messages in flight and no completion for
    /// --timeout: the run ends.
    fn pace_or_give_up(&self, pairs: &[Pair]) -> Result<(), Halt> {
        let in_flight = pairs.iter().any(|p| {
            p.completed < p.posted || (self.waits_for_receives(p) && p.recv.done < p.posted)
        });
        if let Some(mps) = self.rate_mps
            && !in_flight
        {
            // at most 10 ms: the duration is checked at the top of the loop
            let wait = plan::post_due(self.total_posted, mps).saturating_sub(self.t0.elapsed());
            if wait > Duration::from_micros(200) {
                std::thread::sleep(wait.min(Duration::from_millis(10)));
            }
        }
        if in_flight && self.last_progress.elapsed() > self.deadline {
            return Err(Halt::Reported(self.stalled(pairs)));
        }
        Ok(())
    }

    /// The deadline's error: how far the run got, and the QPs' states.
    fn stalled(&self, pairs: &[Pair]) -> String {
        let planned = |p: &Pair| {
            if self.stopped_at.is_some() || self.w.duration.is_some() {
                p.posted
            } else {
                self.w.iters
            }
        };
        let received = if self.local_receives {
            format!(
                ", {} received",
                pairs.iter().map(|p| p.recv.done).sum::<u64>()
            )
        } else {
            String::new()
        };
        format!(
            "no completion for {:.1} s: {} of {} messages completed{received}; {}",
            self.w.timeout,
            pairs.iter().map(|p| p.completed).sum::<u64>(),
            pairs.iter().map(planned).sum::<u64>(),
            pairs
                .iter()
                .map(Pair::qp_states)
                .collect::<Vec<_>>()
                .join("; ")
        )
    }

    /// What --fault did to each pair, in words, with the QPNs and keys it used.
    fn fault_detail(&self, pairs: &[Pair]) -> Option<String> {
        let w = self.w;
        let fault = w.fault?;
        let each = |p: &Pair| {
            let (bname, bqpn) = match &p.b {
                Peer::Local(b) => (b.name.as_str(), b.qp.qp_number()),
                Peer::Remote(r) => (r.endpoint.device.as_str(), r.endpoint.qpn),
            };
            match fault {
                Fault::BadRkey => {
                    let good = match &p.b {
                        Peer::Local(b) => b.mr.rkey(),
                        Peer::Remote(r) => r.rkey,
                    };
                    format!(
                        "message {} of QP {:#x} ({}) posted with R_Key {:#x}; {bname}'s MR has {good:#x}",
                        w.iters - 1,
                        p.aq,
                        p.a.name,
                        plan::bad_rkey(good)
                    )
                }
                Fault::WrongQpn => format!(
                    "QP {:#x} ({}) connected to destination QPN {:#x}, which no QP has; the responder QP is \
                     {bqpn:#x} ({bname})",
                    p.aq, p.a.name, p.bq
                ),
                Fault::NoReceive => format!(
                    "the responder QP {bqpn:#x} ({bname}) posts no receive work requests; QP {:#x} ({}) \
                     sends to it",
                    p.aq, p.a.name
                ),
            }
        };
        Some(format!(
            "{}: {}",
            fault.name(),
            pairs.iter().map(each).collect::<Vec<_>>().join("; ")
        ))
    }

    /// The remote word after the last atomic (a remote responder checks its own).
    fn check_atomic_words(&mut self, pairs: &[Pair]) {
        for p in pairs {
            if let Peer::Local(b) = &p.b {
                let mut w = [0u8; 8];
                // SAFETY: every atomic has completed.
                w.copy_from_slice(unsafe { b.buf.slice(0, 8) });
                if let Some(what) =
                    pattern::atomic_word_mismatch(u64::from_ne_bytes(w), p.aq, p.completed)
                {
                    self.check.mismatch(what);
                }
            }
        }
    }

    fn latency(&self) -> Latency {
        if self.hist.is_empty() {
            return Latency::default();
        }
        let us = |v: u64| v as f64 / 1000.0;
        Latency {
            p50: us(self.hist.value_at_quantile(0.5)),
            p99: us(self.hist.value_at_quantile(0.99)),
            max: us(self.hist.max()),
        }
    }

    fn report(mut self, pairs: &[Pair], setup: &Setup, error: Option<String>) -> Report {
        if self.w.op.is_atomic() && error.is_none() {
            self.check_atomic_words(pairs);
        }
        let w = self.w;
        // messages per pair: -n, or those posted when the run was stopped early
        let stopped_early = self.stopped_at.is_some();
        let planned = |p: &Pair| if stopped_early { p.posted } else { w.iters };
        let flows: Vec<Flow> = pairs
            .iter()
            .filter(|p| planned(p) > 0) // stopped before this pair posted anything
            .flat_map(|p| wire::pair_flows(w.op, self.size32, setup.mtu, &p.ids(), planned(p)))
            .collect();
        // the SEND payload is checked only where it was received
        let total = pairs.iter().map(planned).sum::<u64>();
        if error.is_some() && self.check.status == CheckStatus::Passed && self.check.checked < total
        {
            self.check.status = CheckStatus::Incomplete;
        }
        let messages = pairs
            .iter()
            .map(|p| {
                if self.waits_for_receives(p) {
                    p.completed.min(p.recv.done)
                } else {
                    p.completed
                }
            })
            .sum::<u64>();
        let interrupted = self.stopped_by == StoppedBy::Signal;
        let mut report = self.assemble(pairs, setup, flows, messages, planned(&pairs[0]));
        report.error = error;
        if interrupted && report.error.is_none() {
            report.error = Some(format!(
                "interrupted: stopped posting after {} messages; those in flight completed",
                pairs.iter().map(|p| p.posted).sum::<u64>()
            ));
        }
        report.fail_on_data_check();
        report
    }

    /// The report of `messages` completed, `iterations` per pair, without its error yet.
    fn assemble(
        self,
        pairs: &[Pair],
        setup: &Setup,
        flows: Vec<Flow>,
        messages: u64,
        iterations: u64,
    ) -> Report {
        let w = self.w;
        let seconds = self.t_end.duration_since(self.t0).as_secs_f64();
        let bytes = messages * u64::from(self.size32);
        let per_sec = |v: f64| if seconds > 0.0 { v / seconds } else { 0.0 };
        let responder = |p: &Pair| match &p.b {
            Peer::Local(b) => endpoint(b, setup.port, p.apsn),
            Peer::Remote(r) => r.endpoint.clone(),
        };
        Report {
            op: w.op,
            size: self.size32,
            iterations,
            stopped_by: self.stopped_by,
            duration: w.duration,
            error_after_s: self
                .failed_at
                .map(|t| t.duration_since(self.t0).as_secs_f64()),
            posting_seconds: self
                .stopped_at
                .unwrap_or(self.t_last_post)
                .duration_since(self.t0)
                .as_secs_f64(),
            rate: w.rate.map(|r| RateReport {
                requested: r.to_string(),
                target_messages_per_sec: r.messages_per_sec(self.size32),
                target_gbps: r.gbps(self.size32),
                achieved_messages_per_sec: per_sec(messages as f64),
                achieved_gbps: per_sec(bytes as f64 * 8.0) / 1e9,
            }),
            depth: w.depth,
            mtu: setup.mtu,
            mtu_source: setup.mtu_source.clone(),
            qp_timeout: w.qp_timeout,
            retry_count: w.retry_count,
            rnr_retry: w.rnr_retry,
            max_rd_atomic: setup.rd_atomic,
            traffic_class: w.tclass,
            fault: w.fault,
            fault_detail: self.fault_detail(pairs),
            qps: w.qps,
            requester: endpoint(&pairs[0].a, setup.port, pairs[0].bpsn),
            responder: responder(&pairs[0]),
            dest_qpn: pairs[0].bq,
            pairs: pairs
                .iter()
                .map(|p| PairEndpoints {
                    requester: endpoint(&p.a, setup.port, p.bpsn),
                    responder: responder(p),
                    dest_qpn: p.bq,
                })
                .collect(),
            flows,
            messages,
            bytes,
            seconds,
            gbps: per_sec(bytes as f64 * 8.0) / 1e9,
            messages_per_sec: per_sec(messages as f64),
            latency_us: self.latency(),
            completion_errors: self.completion_errors,
            data_check: self.check,
            server: None,
            error: None,
        }
    }
}
