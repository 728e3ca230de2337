//! `gen loopback --capture IFACE`: the one-line fabric check. The live capture engine (the same as
//! `rocescope capture`, default filter, on its own thread) is active before the first work request is
//! posted and stops a short grace after the generator's last completion; its analysis is then held against
//! the generator's own record: every flow the generator announced (source, destination, destination QPN)
//! must be on the wire with the PSN range it used, the requests on the wire must number what was posted
//! (WRITE/SEND: ceil(size / MTU) packets per message, READ and the atomics: one request per message), and
//! there must be no PSN gap, NAK (RNR included) or retransmission; with none of those, each direction must
//! carry exactly the opcodes announced (ACKs excepted: they may be coalesced). Every QP pair of `-q` is
//! checked. CE marks and CNPs are reported (on the PASS line too), never failing.
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use serde::Serialize;

use parsers::psn;
use rocescope::capture::{self, CaptureError, session::Session};
use rocescope::report::Report;
use rocescope::report::capture::StoppedBy;

use super::records::{self, Role};

/// Why the fabric check's capture did not give its report.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// The capture session could not open or run.
    #[error(transparent)]
    Capture(#[from] CaptureError),
    /// The capture stopped on an error of its own (the line its stats carry).
    #[error("{0}")]
    Stopped(String),
    #[error("cannot start the capture thread")]
    Thread(#[source] std::io::Error),
    #[error("the capture thread panicked")]
    Panicked,
}

/// A capture running on its own thread; it ends with its report, or the error that stopped it.
pub struct Running {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Result<Report, CheckError>>,
}

/// Opens the capture on `iface` and starts it, with `rocescope capture -i IFACE`'s defaults.
pub fn start(iface: &str, mtu: Option<u32>) -> Result<Running, CheckError> {
    let mut cfg = capture::Config::new(iface);
    cfg.pipeline.analysis.mtu = mtu;
    let live = Session::open(&cfg)?;
    let stop = Arc::new(AtomicBool::new(false));
    let stopped = Arc::clone(&stop);
    let source = format!("live capture on {iface}");
    let thread = std::thread::Builder::new()
        .name("capture".to_string())
        .spawn(move || {
            let until = move |_| {
                stopped
                    .load(Ordering::Relaxed)
                    .then_some(StoppedBy::Generator)
            };
            let ended = live.run(until, None, ())?;
            if let Some(e) = ended.error {
                return Err(CheckError::Stopped(e));
            }
            let mut report = Report::build(&ended.engine, &source);
            let dropped = ended.stats.dropped + ended.stats.if_dropped;
            report.counters = Some(ended.nic.counters(&ended.engine, dropped));
            report.capture_stats = Some(ended.stats);
            Ok(report)
        })
        .map_err(CheckError::Thread)?;
    Ok(Running { stop, thread })
}

impl Running {
    /// Waits `grace`, stops the capture and returns its final report (`capture_stats.stopped_by`:
    /// `generator`), or the error that stopped it.
    pub fn finish(self, grace: Duration) -> Result<Report, CheckError> {
        std::thread::sleep(grace);
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().map_err(|_| CheckError::Panicked)?
    }

    /// Stops the capture without waiting (the generator failed before its report).
    pub fn abort(self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.thread.join();
    }
}

/// One flow the generator announced, as the capture saw it.
#[derive(Serialize, Debug)]
pub struct FlowCheck {
    pub src: Option<String>,
    pub dst: Option<String>,
    pub dest_qp: u32,
    pub role: Role,
    /// The capture's flow id, when the flow is there.
    pub capture_flow: Option<u64>,
    /// The generator's PSN range of the direction.
    pub psn_first: u32,
    pub psn_last: u32,
    /// The capture's (requests: first and highest PSN; replies: first and last PSN seen).
    pub seen_psn_first: Option<u32>,
    pub seen_psn_last: Option<u32>,
    pub psn_ok: bool,
    /// Requester flow: request packets posted (after MTU segmentation) and on the wire.
    pub packets_posted: Option<u64>,
    pub packets: u64,
    pub gap_events: u64,
    pub missing: u64,
    pub retransmitted: u64,
    pub naks: u64,
    pub rnr_naks: u64,
    pub ce: u64,
    pub cnp: u64,
    /// The opcodes of the direction on the wire (as `analyze` names them).
    pub opcodes: std::collections::BTreeMap<&'static str, u64>,
}

#[derive(Serialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Pass,
    Fail,
}

/// The fabric check: `status` `pass` or `fail`, with the reasons and `line` (the FABRIC CHECK line).
#[derive(Serialize, Debug)]
pub struct Check {
    pub status: Verdict,
    pub reasons: Vec<String>,
    pub flows: Vec<FlowCheck>,
    /// Totals over the generator's flows.
    pub gap_events: u64,
    pub missing: u64,
    pub naks: u64,
    pub rnr_naks: u64,
    pub retransmitted: u64,
    pub ce: u64,
    pub cnp: u64,
    /// Flows on the wire that are not the generator's (not checked).
    pub other_flows: u64,
    /// Frames libpcap dropped (kernel buffer, interface): the capture is then incomplete.
    pub capture_dropped: u64,
    pub line: String,
}

fn name(f: &records::Flow) -> String {
    format!(
        "flow {} -> {} QP {:#08x} ({})",
        f.src.as_deref().unwrap_or("?"),
        f.dst.as_deref().unwrap_or("?"),
        f.dest_qp,
        f.role.as_str()
    )
}

/// PSN `p` within `first..=last` (serially).
fn within(p: u32, first: u32, last: u32) -> bool {
    psn::diff(p, first) >= 0 && psn::diff(last, p) >= 0
}

/// Holds the capture's report against the generator's record.
pub fn verify(g: &records::Report, c: &Report) -> Check {
    let mut reasons = Vec::new();
    if let Some(e) = &g.error {
        reasons.push(format!("the generator failed: {e}"));
    }
    let stats = c.capture_stats.as_ref();
    let capture_dropped = stats.map_or(0, |s| s.dropped + s.if_dropped);
    if capture_dropped > 0 {
        reasons.push(format!(
            "the capture dropped {capture_dropped} frames (kernel or interface): it saw less than the wire"
        ));
    }
    let mut flows = Vec::new();
    let mut used = Vec::new();
    // a responder flow's PSNs are those of its pair's requester flow, listed just before it
    let mut req_first = 0;
    for e in &g.flows {
        if e.role == Role::Requester {
            req_first = e.psn_first;
        }
        let found = c.flows.iter().find(|f| {
            e.src.as_deref() == Some(f.src.as_str())
                && e.dst.as_deref() == Some(f.dst.as_str())
                && f.dest_qp == e.dest_qp
        });
        flows.push(match found {
            None => {
                reasons.push(format!("{} is not in the capture", name(e)));
                FlowCheck::announced(e)
            }
            Some(f) => {
                used.push(f.id);
                check_flow(g, e, f, req_first, &mut reasons)
            }
        });
    }
    let t = Totals::of(&flows);
    // with nothing lost or resent, each direction carries exactly the opcodes posted (ACKs may coalesce: not
    // announced)
    if t.gap_events == 0 && t.retransmitted == 0 && t.naks == 0 && t.rnr_naks == 0 {
        check_opcodes(g, &flows, &mut reasons);
    }
    t.add_reasons(&mut reasons);
    let status = if reasons.is_empty() {
        Verdict::Pass
    } else {
        Verdict::Fail
    };
    let line = verdict_line(&reasons, &t);
    Check {
        status,
        reasons,
        other_flows: c.flows.iter().filter(|f| !used.contains(&f.id)).count() as u64,
        flows,
        gap_events: t.gap_events,
        missing: t.missing,
        naks: t.naks,
        rnr_naks: t.rnr_naks,
        retransmitted: t.retransmitted,
        ce: t.ce,
        cnp: t.cnp,
        capture_dropped,
        line,
    }
}

impl FlowCheck {
    /// A flow the generator announced, before the capture is looked at.
    fn announced(e: &records::Flow) -> FlowCheck {
        FlowCheck {
            src: e.src.clone(),
            dst: e.dst.clone(),
            dest_qp: e.dest_qp,
            role: e.role,
            capture_flow: None,
            psn_first: e.psn_first,
            psn_last: e.psn_last,
            seen_psn_first: None,
            seen_psn_last: None,
            psn_ok: false,
            packets_posted: (e.role == Role::Requester).then_some(e.packets),
            packets: 0,
            gap_events: 0,
            missing: 0,
            retransmitted: 0,
            naks: 0,
            rnr_naks: 0,
            ce: 0,
            cnp: 0,
            opcodes: Default::default(),
        }
    }
}

/// Announced flow `e` of run `g` against capture flow `f`; `req_first` is the first PSN of its pair's
/// requests.
fn check_flow(
    g: &records::Report,
    e: &records::Flow,
    f: &rocescope::report::FlowReport,
    req_first: u32,
    reasons: &mut Vec<String>,
) -> FlowCheck {
    let mut fc = FlowCheck::announced(e);
    fc.capture_flow = Some(f.id);
    fc.seen_psn_first = Some(f.psn.first);
    fc.seen_psn_last = Some(f.psn.last);
    fc.packets = f.packets;
    fc.gap_events = f.psn.gap_events;
    fc.missing = f.psn.missing;
    fc.retransmitted = f.psn.retransmitted;
    fc.naks = f.naks.total();
    fc.rnr_naks = f.rnr_naks;
    fc.ce = f.ecn.ce;
    fc.cnp = f.cnp;
    fc.opcodes = f.opcodes.clone();
    if e.role == Role::Requester {
        fc.psn_ok = f.psn.first == e.psn_first && f.psn.last == e.psn_last;
        if !fc.psn_ok {
            reasons.push(format!(
                "{}: PSN {}..{} on the wire, {}..{} posted",
                name(e),
                f.psn.first,
                f.psn.last,
                e.psn_first,
                e.psn_last
            ));
        }
        if f.packets != e.packets {
            let in_seq = f.packets.saturating_sub(f.psn.retransmitted);
            reasons.push(format!(
                "{}: {} request packets on the wire, {} posted ({} x {} bytes at path MTU {}): {} in \
                 sequence ({} PSNs skipped), {} retransmitted",
                name(e),
                f.packets,
                e.packets,
                g.iterations,
                g.size,
                g.mtu,
                in_seq,
                f.psn.missing,
                f.psn.retransmitted
            ));
        }
    } else {
        // replies (ACKs, NAKs, READ responses) carry PSNs of the requests; the last one the last PSN
        fc.psn_ok = within(f.psn.first, req_first, e.psn_last) && f.psn.last == e.psn_last;
        if !fc.psn_ok {
            reasons.push(format!(
                "{}: PSN {}..{} on the wire, expected within {}..{} ending at {}",
                name(e),
                f.psn.first,
                f.psn.last,
                req_first,
                e.psn_last,
                e.psn_last
            ));
        }
    }
    fc
}

/// Each direction the capture saw must carry the opcodes announced for it (none announced: ACKs).
fn check_opcodes(g: &records::Report, flows: &[FlowCheck], reasons: &mut Vec<String>) {
    for (e, fc) in g.flows.iter().zip(flows) {
        let seen: std::collections::BTreeMap<String, u64> = fc
            .opcodes
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect();
        if fc.capture_flow.is_some() && !e.opcodes.is_empty() && seen != e.opcodes {
            reasons.push(format!(
                "{}: opcodes {seen:?} on the wire, {:?} posted",
                name(e),
                e.opcodes
            ));
        }
    }
}

/// What went wrong or was signalled, over the generator's flows.
struct Totals {
    gap_events: u64,
    missing: u64,
    naks: u64,
    rnr_naks: u64,
    retransmitted: u64,
    ce: u64,
    cnp: u64,
}

impl Totals {
    fn of(flows: &[FlowCheck]) -> Totals {
        let sum = |k: fn(&FlowCheck) -> u64| flows.iter().map(k).sum::<u64>();
        Totals {
            gap_events: sum(|f| f.gap_events),
            missing: sum(|f| f.missing),
            naks: sum(|f| f.naks),
            rnr_naks: sum(|f| f.rnr_naks),
            retransmitted: sum(|f| f.retransmitted),
            ce: sum(|f| f.ce),
            cnp: sum(|f| f.cnp),
        }
    }

    /// Gaps, NAKs and retransmissions fail the check.
    fn add_reasons(&self, reasons: &mut Vec<String>) {
        if self.gap_events > 0 {
            reasons.push(format!(
                "{} PSN gaps ({} PSNs missing)",
                self.gap_events, self.missing
            ));
        }
        if self.naks > 0 {
            reasons.push(format!("{} NAKs", self.naks));
        }
        if self.rnr_naks > 0 {
            reasons.push(format!("{} RNR NAKs", self.rnr_naks));
        }
        if self.retransmitted > 0 {
            reasons.push(format!("{} retransmitted requests", self.retransmitted));
        }
    }
}

/// The FABRIC CHECK line: PASS (naming the congestion signals, which do not fail it) or FAIL with the
/// reasons.
fn verdict_line(reasons: &[String], t: &Totals) -> String {
    if !reasons.is_empty() {
        return format!("FABRIC CHECK: FAIL: {}", reasons.join("; "));
    }
    if t.ce + t.cnp > 0 {
        format!(
            "FABRIC CHECK: PASS (congestion signals, not failing: {} CE-marked packets, {} CNPs)",
            t.ce, t.cnp
        )
    } else {
        "FABRIC CHECK: PASS".to_string()
    }
}

/// The check's lines before the FABRIC CHECK line (text output).
pub fn detail_lines(c: &Check) -> Vec<String> {
    let mut v = Vec::new();
    for f in &c.flows {
        let who = format!(
            "fabric check: flow {} -> {} QP {:#08x} ({})",
            f.src.as_deref().unwrap_or("?"),
            f.dst.as_deref().unwrap_or("?"),
            f.dest_qp,
            f.role.as_str()
        );
        match f.capture_flow {
            None => v.push(format!("{who}: not in the capture")),
            Some(id) => v.push(format!(
                "{who}: capture flow {id}, PSN {}..{} ({}){}, {} packets{}; gaps {}, NAKs {}, RNR NAKs {}, \
                 retransmitted {}",
                f.seen_psn_first.unwrap_or(0),
                f.seen_psn_last.unwrap_or(0),
                if f.psn_ok { "as posted" } else { "differs" },
                if f.psn_ok {
                    String::new()
                } else {
                    format!(", posted {}..{}", f.psn_first, f.psn_last)
                },
                f.packets,
                match f.packets_posted {
                    Some(p) => format!(" ({p} posted)"),
                    None => String::new(),
                },
                f.gap_events,
                f.naks,
                f.rnr_naks,
                f.retransmitted
            )),
        }
    }
    v.push(format!(
        "fabric check: congestion signals (reported, not failing): {} CE-marked packets, {} CNPs; {} other \
         flows on the wire not checked; capture drops {}",
        c.ce, c.cnp, c.other_flows, c.capture_dropped
    ));
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generator::records::{DataCheck, Endpoint, Flow, Latency, Op, StoppedBy};

    /// `rocescope analyze` of a bundled lab capture (perftest over Soft-RoCE).
    fn analyze(name: &str) -> Report {
        let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("testdata/lab")
            .join(name);
        rocescope::report::analyze_file(&file, &Default::default()).expect("analyze")
    }

    fn endpoint(qpn: u32) -> Endpoint {
        Endpoint {
            device: "rxe0".into(),
            port: 1,
            netdev: None,
            netdev_mtu: None,
            active_mtu: 1024,
            gid_index: 1,
            gid: String::new(),
            gid_type: "RoCE v2".into(),
            gid_choice: String::new(),
            ip: None,
            qpn,
            sq_psn: 0,
            rq_psn: 0,
        }
    }

    /// The generator's record of a WRITE run of `n` x 4096 bytes at MTU 1024, with the flows of capture `c`
    /// (requester and responder, as perftest's run had them).
    fn gen_for(c: &Report, n: u64) -> records::Report {
        let req = c
            .flows
            .iter()
            .find(|f| f.role == rocescope::analysis::flow::Role::Requester)
            .expect("requester flow");
        let flow = |src: &str, dst: &str, qp: u32, role, first, packets| Flow {
            src: Some(src.to_string()),
            dst: Some(dst.to_string()),
            dest_qp: qp,
            role,
            carries: "",
            opcodes: Default::default(),
            psn_first: first,
            psn_last: psn::add(req.psn.first, (n * 4 - 1) as u32),
            packets,
            messages: 0,
        };
        let back = c
            .flows
            .iter()
            .find(|f| f.src == req.dst && f.dst == req.src)
            .expect("reply flow");
        records::Report {
            op: Op::Write,
            size: 4096,
            iterations: n,
            stopped_by: StoppedBy::Iters,
            duration: None,
            posting_seconds: 0.0,
            error_after_s: None,
            rate: None,
            depth: 16,
            mtu: 1024,
            mtu_source: String::new(),
            qp_timeout: 17,
            retry_count: 7,
            rnr_retry: 7,
            max_rd_atomic: 1,
            traffic_class: 0,
            fault: None,
            fault_detail: None,
            qps: 1,
            pairs: Vec::new(),
            requester: endpoint(back.dest_qp),
            responder: endpoint(req.dest_qp),
            dest_qpn: req.dest_qp,
            flows: vec![
                flow(
                    &req.src,
                    &req.dst,
                    req.dest_qp,
                    Role::Requester,
                    req.psn.first,
                    n * 4,
                ),
                flow(
                    &back.src,
                    &back.dst,
                    back.dest_qp,
                    Role::Responder,
                    psn::add(req.psn.first, 3),
                    n,
                ),
            ],
            messages: n,
            bytes: n * 4096,
            seconds: 1.0,
            gbps: 0.0,
            messages_per_sec: 0.0,
            latency_us: Latency::default(),
            completion_errors: 0,
            data_check: DataCheck {
                checked: n,
                ..DataCheck::passed()
            },
            server: None,
            error: None,
        }
    }

    #[test]
    fn clean_capture_passes() {
        let c = analyze("write.pcap");
        let g = gen_for(&c, 32);
        let k = verify(&g, &c);
        assert_eq!(k.line, "FABRIC CHECK: PASS", "{k:?}");
        assert_eq!(k.status, Verdict::Pass);
        assert!(k.flows.iter().all(|f| f.psn_ok && f.capture_flow.is_some()));
        assert_eq!(k.flows[0].packets, 128);
        assert_eq!(k.flows[0].packets_posted, Some(128));
        assert_eq!(k.other_flows, 0);
        assert!(detail_lines(&k)[0].contains("(as posted), 128 packets (128 posted); gaps 0"));
    }

    #[test]
    fn ce_marks_are_reported_not_failing() {
        let c = analyze("write_ecn.pcap");
        let k = verify(&gen_for(&c, 32), &c);
        assert_eq!(
            k.line,
            "FABRIC CHECK: PASS (congestion signals, not failing: 3 CE-marked packets, 0 CNPs)",
            "{k:?}"
        );
        assert_eq!(k.status, Verdict::Pass);
        assert_eq!(k.ce, 3);
        assert!(
            detail_lines(&k)
                .last()
                .unwrap()
                .contains("3 CE-marked packets, 0 CNPs")
        );
    }

    #[test]
    fn opcodes_announced_must_be_on_the_wire() {
        let c = analyze("write.pcap");
        let mut g = gen_for(&c, 32);
        let ops = |p: &str| {
            [("FIRST", 32), ("MIDDLE", 64), ("LAST", 32)]
                .into_iter()
                .map(|(k, v)| (format!("{p}_{k}"), v))
                .collect()
        };
        g.flows[0].opcodes = ops("RC_WRITE");
        let k = verify(&g, &c);
        assert_eq!(k.line, "FABRIC CHECK: PASS", "{k:?}");
        assert_eq!(k.flows[0].opcodes["RC_WRITE_MIDDLE"], 64);
        g.flows[0].opcodes = ops("RC_SEND");
        let k = verify(&g, &c);
        assert_eq!(k.status, Verdict::Fail);
        assert_eq!(k.reasons.len(), 1, "{:?}", k.reasons);
        assert!(
            k.reasons[0].contains("(requester): opcodes {\"RC_WRITE_FIRST\": 32")
                && k.reasons[0].contains("on the wire, {\"RC_SEND_FIRST\": 32"),
            "{}",
            k.reasons[0]
        );
    }

    #[test]
    fn loss_fails_with_gaps_naks_and_retransmissions() {
        let c = analyze("write_loss.pcap");
        let k = verify(&gen_for(&c, 50), &c);
        assert_eq!(k.status, Verdict::Fail);
        assert_eq!((k.naks, k.retransmitted), (11, 59), "{k:?}");
        assert!(k.gap_events > 0);
        assert!(
            k.line.starts_with("FABRIC CHECK: FAIL: flow ")
                && k.line.contains(
                    " request packets on the wire, 200 posted (50 x 4096 bytes at path MTU 1024)"
                )
                && k.line.contains(" PSN gaps (")
                && k.line.ends_with("; 11 NAKs; 59 retransmitted requests"),
            "{}",
            k.line
        );
    }

    #[test]
    fn missing_flow_wrong_count_and_generator_error_fail() {
        let c = analyze("write.pcap");
        let mut g = gen_for(&c, 32);
        g.flows[1].dest_qp ^= 1;
        g.flows[0].packets = 132;
        g.error = Some("no completion for 10.0 s".into());
        let k = verify(&g, &c);
        assert_eq!(k.status, Verdict::Fail);
        assert_eq!(k.reasons.len(), 3, "{:?}", k.reasons);
        assert_eq!(
            k.reasons[0],
            "the generator failed: no completion for 10.0 s"
        );
        assert!(k.reasons[1].contains("128 request packets on the wire, 132 posted"));
        assert!(k.reasons[2].ends_with("(responder) is not in the capture"));
        assert_eq!(k.other_flows, 1);
        assert!(k.flows[1].capture_flow.is_none());
    }
}
