//! Failures a diagnosis must recognise, on real kernel RoCE: the Soft-RoCE lab (lab/README.md) boots its QEMU
//! guest with this test's own `rocescope` binary in it and runs, in one guest, `info` (first: it takes the IPv6
//! chatter of link-up), then
//!
//! - gen_wrong_qpn: `gen loopback --op write -s 4096 -n 8 --retry-count 3 --qp-timeout 14 --fault wrong-qpn`:
//!   requests to a destination QPN that no QP has, nothing answers, 3 resends, IBV_WC_RETRY_EXC_ERR;
//! - gen_responder_killed: `gen server` (rxe1) and `gen client` (rxe0, 1024-byte WRITEs at 100/s, --depth 4,
//!   --retry-count 3, --qp-timeout 17), the server killed (-9) mid-run: answered requests, then the
//!   unacknowledged ones resent 3 times, unanswered, IBV_WC_RETRY_EXC_ERR;
//! - gen_no_receive: `gen loopback --op send -s 1024 -n 4 --rnr-retry 3 --fault no-receive`: RNR NAKs until the
//!   RNR retry count is used up, IBV_WC_RNR_RETRY_EXC_ERR;
//! - gen_timers: five `gen --fault wrong-qpn` requesters of one WRITE, QP timeout and retry count (14, 3), (15,
//!   2), (16, 6), (17, 3), (18, 1): the local ACK timer's intervals and the give-up time (`check_timers`).
//!
//! Asserted on the fresh cable captures with tshark (not with rocescope's analysis), against what the commands
//! make: the QPNs and first PSN of gen's report; for each PSN the frames that carried it (the first its
//! transmission, the others resends) and that the resends are go-back-N rounds from the oldest unacknowledged
//! PSN, as many as the retry count; that nothing answers wrong_qpn, that the killed responder answers nothing
//! after its last ACK, that no_receive has rnr-retry + 1 RNR NAKs (timer 0.64 ms) and no ACK; the intervals
//! between the resends against the QP timeout (loosely: TCG); that the requester is silent from its last frame
//! to the end-of-capture ping; gen's exit status and its one error line, word for word; the kill between the
//! first ACK and the first resend; and the rxe hw_counters that must have moved (this kernel's names:
//! `retry_exceeded_err`, `completer_retry_err`, `rcvd_rnr_err`, `retry_rnr_exceeded_err`, `send_rnr_err`,
//! `sent_pkts`, `rcvd_pkts`).
//!
//! Then rocescope's diagnosis of the same capture (`analyze --json`) is held against those facts: its
//! diagnosis events, kind by kind, as many as the counters say (`completer_retry_err` timeout
//! retransmissions, `retry_exceeded_err` retries exhausted, `retry_rnr_exceeded_err` RNR retries exhausted),
//! at the frames tshark found, with the intervals, timeout exponents and silences the frame times give.
//!
//! Needs what `lab/setup` installs (it is run here) and about 20-60 s of emulated guest. It fails, with the
//! reason, when the lab cannot run: it never skips. Everything runs under hard timeouts.
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

mod lab_support;
use lab_support::{number as num, run_lab};

const PSN_MOD: u64 = 1 << 24;
const REQUESTER: &str = "10.0.0.1";
const RESPONDER: &str = "10.0.0.2";

/// One frame of a capture, as tshark decodes it.
#[derive(Debug, Clone)]
struct Frame {
    no: u64,
    t: f64,
    src: String,
    dst: String,
    roce: bool,
    qp: u64,
    op: u64,
    psn: u64,
    /// AETH syndrome
    syn: Option<u64>,
    /// ICMP type (8 echo request, 0 echo reply)
    icmp: Option<u64>,
    proto: String,
}

fn tshark_frames(path: &Path) -> Vec<Frame> {
    let fields = [
        "frame.number",
        "frame.time_relative",
        "ip.src",
        "ip.dst",
        "udp.dstport",
        "infiniband.bth.destqp",
        "infiniband.bth.opcode",
        "infiniband.bth.psn",
        "infiniband.aeth.syndrome",
        "icmp.type",
        "_ws.col.Protocol",
    ];
    lab_support::tshark_fields(path, &fields)
        .into_iter()
        .map(|v| {
            let roce = v[4] == "4791";
            let bth = |i: usize| {
                if roce {
                    num(&v[i]).unwrap_or_else(|| panic!("tshark: no {} in {v:?}", fields[i]))
                } else {
                    0
                }
            };
            Frame {
                no: num(&v[0]).unwrap(),
                t: v[1].parse().unwrap(),
                src: v[2].to_string(),
                dst: v[3].to_string(),
                roce,
                qp: bth(5),
                op: bth(6),
                psn: bth(7),
                syn: num(&v[8]),
                icmp: num(&v[9]),
                proto: v[10].to_string(),
            }
        })
        .collect()
}

fn psn_add(p: u64, n: u64) -> u64 {
    (p + n) % PSN_MOD
}

/// PSN `a` after PSN `b`, serial arithmetic.
fn after(a: u64, b: u64) -> bool {
    let d = (a + PSN_MOD - b) % PSN_MOD;
    d > 0 && d < PSN_MOD / 2
}

/// One scenario's results: its log, gen's report and standard error, rxe's counters that changed, the cable.
struct Scenario {
    name: &'static str,
    log: String,
    report: Value,
    /// gen's standard error, its exit status last ("exit N")
    gen_log: Vec<String>,
    counters: BTreeMap<String, i64>,
    frames: Vec<Frame>,
    cable: PathBuf,
    /// rocescope's analysis of the cable capture (`analyze --json`).
    analysis: Value,
}

impl Scenario {
    fn load(lab_out: &Path, name: &'static str) -> Scenario {
        let dir = lab_out.join(name);
        let read = |f: &str| {
            fs::read_to_string(dir.join(f))
                .unwrap_or_else(|e| panic!("{name}: {f}: {e} (did the guest return it?)"))
        };
        let log = read("perftest.log");
        let report: Value = serde_json::from_str(&read("gen.json"))
            .unwrap_or_else(|e| panic!("{name}: gen.json is not JSON: {e}"));
        let gen_log = read("gen.log").lines().map(str::to_string).collect();
        // "--- rxe hw_counters that changed" then "rxeN name +D" lines (lab/guest/scenarios.sh, run_scenario)
        let counters = log
            .split("--- rxe hw_counters that changed")
            .nth(1)
            .unwrap_or_else(|| panic!("{name}: no hw_counters in perftest.log"))
            .lines()
            .filter_map(|l| {
                let w: Vec<&str> = l.split_whitespace().collect();
                match w[..] {
                    [dev, c, d] if dev.starts_with("rxe") => {
                        Some((format!("{dev} {c}"), d.parse::<i64>().ok()?))
                    }
                    _ => None,
                }
            })
            .collect();
        let cable = dir.join("cable.pcap");
        let frames = tshark_frames(&cable);
        let analysis = analyze(&cable);
        Scenario {
            name,
            log,
            report,
            gen_log,
            counters,
            frames,
            cable,
            analysis,
        }
    }

    /// How much `counter` of `dev` moved over the scenario (0: it did not).
    fn counter(&self, dev: &str, counter: &str) -> i64 {
        self.counters
            .get(&format!("{dev} {counter}"))
            .copied()
            .unwrap_or(0)
    }

    fn requests(&self) -> Vec<&Frame> {
        self.frames
            .iter()
            .filter(|f| f.roce && f.src == REQUESTER)
            .collect()
    }

    fn answers(&self) -> Vec<&Frame> {
        self.frames
            .iter()
            .filter(|f| f.roce && f.src == RESPONDER)
            .collect()
    }

    fn u(&self, path: &[&str]) -> u64 {
        let mut v = &self.report;
        for p in path {
            v = &v[*p];
        }
        v.as_u64()
            .unwrap_or_else(|| panic!("{}: gen.json: no number at {path:?}", self.name))
    }

    /// The requester's QPN, its first PSN, the responder's QPN and the destination QPN, from gen's report.
    fn qpns(&self) -> (u64, u64, u64, u64) {
        let ids = (
            self.u(&["requester", "qpn"]),
            self.u(&["requester", "sq_psn"]),
            self.u(&["responder", "qpn"]),
            self.u(&["dest_qpn"]),
        );
        assert_eq!(
            self.report["pairs"][0]["dest_qpn"].as_u64(),
            Some(ids.3),
            "{}: pairs[0].dest_qpn",
            self.name
        );
        ids
    }

    /// gen's one error line, with exit status 1 after it.
    fn error_line(&self) -> &str {
        assert_eq!(
            self.gen_log.len(),
            2,
            "{}: gen's standard error should be one line then the exit status: {:?}",
            self.name,
            self.gen_log
        );
        assert_eq!(
            self.gen_log[1], "exit 1",
            "{}: gen's exit status",
            self.name
        );
        &self.gen_log[0]
    }

    /// Every frame is RoCE between the two addresses, but the end-of-capture ping (the last two frames:
    /// echo request 10.0.0.1 -> 10.0.0.2, reply) and IPv6 link chatter; returns the ping's time and how long
    /// the requester was silent before it (at least `silence` s).
    fn end_of_capture(&self, silence: f64) -> (f64, f64) {
        let n = self.frames.len();
        assert!(n >= 3, "{}: {n} frames", self.name);
        let (req, rep) = (&self.frames[n - 2], &self.frames[n - 1]);
        assert!(
            !req.roce
                && req.icmp == Some(8)
                && req.src == REQUESTER
                && req.dst == RESPONDER
                && rep.icmp == Some(0)
                && rep.src == RESPONDER,
            "{}: the capture should end with the end-of-capture ping: {req:?} {rep:?}",
            self.name
        );
        for f in &self.frames[..n - 2] {
            assert!(
                (f.roce
                    && ((f.src == REQUESTER && f.dst == RESPONDER)
                        || (f.src == RESPONDER && f.dst == REQUESTER)))
                    || f.proto == "ICMPv6",
                "{}: frame {} is neither RoCE between the two ends nor link chatter: {f:?}",
                self.name,
                f.no
            );
        }
        let last = self.requests().last().map_or(0.0, |f| f.t);
        let quiet = req.t - last;
        assert!(
            quiet >= silence,
            "{}: the requester's last frame at {last:.6} s, the end-of-capture ping at {:.6} s: only {quiet:.3} s \
             of silence (at least {silence} s expected)",
            self.name,
            req.t
        );
        (req.t, quiet)
    }
}

fn analyze(cable: &Path) -> Value {
    let o = Command::new(env!("CARGO_BIN_EXE_rocescope"))
        .args(["analyze", "--json"])
        .arg(cable)
        .output()
        .expect("run rocescope analyze");
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{}: analyze --json: {e}", cable.display()))
}

/// The event kinds of rocescope's diagnosis (docs/analysis.md, Events).
const DIAGNOSIS: [&str; 10] = [
    "stall",
    "no_response",
    "timeout_retransmission",
    "retry_exhausted",
    "rnr_exhausted",
    "ack_out_of_window",
    "psn_reuse",
    "msn_regression",
    "read_response_mismatch",
    "new_epoch",
];

/// The local ACK timeout exponent of a timer that fired after `interval` s: the largest n with 4.096 µs × 2^n
/// at most the interval and a sixteenth more (IBTA 9.7.6.1.3; docs/analysis.md: a kernel timer fires up to a
/// tick early, and the cable's clock is not the guest's).
fn timeout_exponent(interval: f64) -> u64 {
    (interval * 17.0 / 16.0 / 4.096e-6).log2().floor() as u64
}

/// What rocescope's analysis of the cable must say, from the facts the tshark decoding and the host gave.
struct Told<'a> {
    s: &'a Scenario,
}

impl Told<'_> {
    fn events(&self, kind: &str) -> Vec<&Value> {
        self.s.analysis["events"]
            .as_array()
            .unwrap_or_else(|| panic!("{}: analyze --json has no events", self.s.name))
            .iter()
            .filter(|e| e["kind"] == kind)
            .collect()
    }

    /// The diagnosis events, kind -> count, are exactly `want`.
    fn kinds(&self, want: &[(&str, u64)]) {
        let got: BTreeMap<&str, u64> = DIAGNOSIS
            .iter()
            .map(|k| (*k, self.events(k).len() as u64))
            .filter(|(_, n)| *n > 0)
            .collect();
        let want: BTreeMap<&str, u64> = want.iter().copied().filter(|(_, n)| *n > 0).collect();
        assert_eq!(got, want, "{}: rocescope's diagnosis events", self.s.name);
    }

    /// The one `kind` event: at `frame`, for `psn`.
    fn one(&self, kind: &str, frame: u64, psn: u64) -> &Value {
        let e = self.events(kind);
        assert_eq!(e.len(), 1, "{}: {kind} events {e:?}", self.s.name);
        assert_eq!(
            (e[0]["frame"].as_u64(), e[0]["psn"].as_u64()),
            (Some(frame), Some(psn)),
            "{}: {kind} event {}",
            self.s.name,
            e[0]
        );
        e[0]
    }

    /// `detail.key` of `e` is `want` s, to the microsecond the analysis counts in.
    fn seconds(&self, e: &Value, key: &str, want: f64) {
        let got = e["detail"][key].as_f64().unwrap_or(f64::NAN);
        assert!(
            (got - want).abs() <= 2e-6,
            "{}: {} detail.{key} {got}, want {want:.6}",
            self.s.name,
            e["kind"]
        );
    }

    /// The resends of `tx[0]`'s PSN on the timer: one timeout_retransmission per resend, at its frame, with
    /// the interval since the transmission before and its exponent.
    fn timeouts(&self, tx: &[&Frame]) {
        let e = self.events("timeout_retransmission");
        let frames: Vec<u64> = e.iter().filter_map(|e| e["frame"].as_u64()).collect();
        let resends: Vec<u64> = tx[1..].iter().map(|f| f.no).collect();
        assert_eq!(frames, resends, "{}: timeout retransmissions", self.s.name);
        for ((e, iv), retry) in e.iter().zip(intervals(tx)).zip(1..) {
            assert_eq!(e["psn"].as_u64(), Some(tx[0].psn), "{}: {e}", self.s.name);
            assert_eq!(e["detail"]["retry"], retry, "{}: {e}", self.s.name);
            assert_eq!(
                e["detail"]["timeout_exponent"].as_u64(),
                Some(timeout_exponent(iv)),
                "{}: {e} after {iv:.6} s",
                self.s.name
            );
            self.seconds(e, "interval_s", iv);
        }
    }

    /// The capture's end (its last frame) less `t`.
    fn until_end(&self, t: f64) -> f64 {
        self.s.frames.last().map_or(0.0, |f| f.t) - t
    }

    /// The verdict fails, and `--fail-on timeouts` makes the exit status 3.
    fn fails_on_timeouts(&self) {
        assert_eq!(
            self.s.analysis["verdict"]["status"], "fail",
            "{}",
            self.s.name
        );
        let o = Command::new(env!("CARGO_BIN_EXE_rocescope"))
            .args(["analyze", "--fail-on", "timeouts"])
            .arg(&self.s.cable)
            .output()
            .expect("run rocescope analyze");
        assert_eq!(
            o.status.code(),
            Some(3),
            "{}: --fail-on timeouts",
            self.s.name
        );
    }
}

/// The frames that carried each PSN, in the order the PSNs were first sent.
fn per_psn<'a>(requests: &[&'a Frame]) -> Vec<(u64, Vec<&'a Frame>)> {
    let mut v: Vec<(u64, Vec<&Frame>)> = Vec::new();
    for f in requests {
        match v.iter_mut().find(|(p, _)| *p == f.psn) {
            Some((_, fs)) => fs.push(f),
            None => v.push((f.psn, vec![f])),
        }
    }
    v
}

fn intervals(fs: &[&Frame]) -> Vec<f64> {
    fs.windows(2).map(|w| w[1].t - w[0].t).collect()
}

fn secs(v: &[f64]) -> String {
    v.iter()
        .map(|d| format!("{d:.3}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The request frames from `psns[0]`'s `round`-th transmission on must be `rounds` times `psns`, in order
/// (go-back-N from the oldest unacknowledged PSN); `from`: the index in `requests` where they begin.
fn assert_rounds(name: &str, requests: &[&Frame], from: usize, psns: &[u64], rounds: usize) {
    let got: Vec<u64> = requests[from..].iter().map(|f| f.psn).collect();
    let want: Vec<u64> = (0..rounds).flat_map(|_| psns.iter().copied()).collect();
    assert_eq!(
        got,
        want,
        "{name}: the resends from frame {} on should be {rounds} rounds of PSN {:#x}..{:#x}",
        requests[from].no,
        psns[0],
        psns[psns.len() - 1]
    );
}

fn check_wrong_qpn(s: &Scenario) -> String {
    let name = s.name;
    let (rq, psn0, rs, dest) = s.qpns();
    let g = &s.report;
    assert_eq!(g["fault"], "wrong-qpn", "{name}");
    assert_eq!(
        dest,
        (rs + 0x100) % PSN_MOD,
        "{name}: the destination QPN: the responder's + 0x100"
    );
    let detail = g["fault_detail"].as_str().unwrap_or_default();
    assert!(
        detail.starts_with("wrong-qpn: ")
            && detail.contains(&format!("destination QPN {dest:#x}, which no QP has"))
            && detail.contains(&format!("the responder QP is {rs:#x} (rxe1)")),
        "{name}: fault_detail {detail:?}"
    );
    let (retries, messages, packets) = (3, 8, 4);
    assert_eq!(s.u(&["retry_count"]), retries, "{name}");
    assert_eq!(s.u(&["qp_timeout"]), 14, "{name}");
    assert_eq!(s.u(&["completion_errors"]), 1, "{name}");
    assert_eq!(s.u(&["messages"]), 0, "{name}: messages completed");
    assert_eq!(
        s.error_line(),
        format!(
            "rocescope: gen: rxe0: QP {rq:#x}: message 0 (PSN {psn0:#x}) completed with IBV_WC_RETRY_EXC_ERR \
             (status 12, vendor error 0x0): retry counter exceeded: the peer did not acknowledge PSN {psn0:#x} \
             on QP {dest:#x}; QP state now Error"
        ),
        "{name}: gen's error line"
    );

    // the cable: nothing answers; 32 PSNs, each sent 1 + 3 times, in 4 rounds from the oldest
    assert!(
        s.answers().is_empty(),
        "{name}: answers from 10.0.0.2: {:?}",
        s.answers()
    );
    let req = s.requests();
    assert!(
        req.iter().all(|f| f.qp == dest),
        "{name}: requests to another QP than {dest:#x}"
    );
    let total = messages * packets;
    let psns: Vec<u64> = (0..total).map(|i| psn_add(psn0, i)).collect();
    assert_rounds(name, &req, 0, &psns, 1 + retries as usize);
    for f in &req {
        let k = (f.psn + PSN_MOD - psn0) % PSN_MOD % packets;
        let want = match k {
            0 => 6,
            3 => 8,
            _ => 7,
        };
        assert_eq!(
            f.op, want,
            "{name}: frame {}: opcode of PSN {:#x}",
            f.no, f.psn
        );
    }
    let tx: Vec<&Frame> = req.iter().copied().filter(|f| f.psn == psn0).collect();
    let iv = intervals(&tx);
    // QP timeout 14: 4.096 us * 2^14 = 67 ms (rxe in jiffies); loose bounds under TCG
    assert!(
        iv.iter().all(|d| (0.05..=1.0).contains(d)),
        "{name}: intervals between the transmissions of PSN {psn0:#x}: {iv:?}"
    );
    let (end, quiet) = s.end_of_capture(0.9);

    // rocescope: no response from the first request on; the resends on the timer; the requester gave up
    let told = Told { s };
    told.kinds(&[
        ("no_response", 1),
        (
            "timeout_retransmission",
            s.counter("rxe0", "completer_retry_err") as u64,
        ),
        (
            "retry_exhausted",
            s.counter("rxe0", "retry_exceeded_err") as u64,
        ),
    ]);
    let e = told.one("no_response", req[0].no, psn0);
    assert_eq!(
        e["detail"]["requests"].as_u64(),
        Some(req.len() as u64),
        "{name}: {e}"
    );
    told.seconds(e, "waited_s", told.until_end(req[0].t));
    told.timeouts(&tx);
    let e = told.one("retry_exhausted", tx[tx.len() - 1].no, psn0);
    assert_eq!(e["detail"]["resends"], retries, "{name}: {e}");
    told.seconds(e, "silent_s", told.until_end(req[req.len() - 1].t));
    told.fails_on_timeouts();

    // rxe's counters: three retries, then retry exceeded; nothing sent by rxe1
    assert_eq!(s.counter("rxe0", "retry_exceeded_err"), 1, "{name}");
    assert_eq!(
        s.counter("rxe0", "completer_retry_err"),
        retries as i64,
        "{name}"
    );
    assert_eq!(s.counter("rxe0", "sent_pkts"), req.len() as i64, "{name}");
    assert_eq!(s.counter("rxe1", "sent_pkts"), 0, "{name}");
    format!(
        "{name}: QP {rq:#x} -> {dest:#x} (responder {rs:#x}): {} request frames, {total} PSNs x {}, no answer; \
         PSN {psn0:#x} at frames {} (intervals {} s); silent {quiet:.3} s until the end ({end:.3} s); counters \
         {:?}",
        req.len(),
        1 + retries,
        tx.iter()
            .map(|f| f.no.to_string())
            .collect::<Vec<_>>()
            .join(", "),
        secs(&iv),
        s.counters
    )
}

fn check_no_receive(s: &Scenario) -> String {
    let name = s.name;
    let (rq, psn0, rs, dest) = s.qpns();
    let g = &s.report;
    assert_eq!(g["fault"], "no-receive", "{name}");
    assert_eq!(dest, rs, "{name}: the destination QPN is the responder's");
    assert!(
        g["fault_detail"]
            .as_str()
            .unwrap_or_default()
            .contains(&format!(
                "the responder QP {rs:#x} (rxe1) posts no receive work requests"
            )),
        "{name}: fault_detail {}",
        g["fault_detail"]
    );
    let (rnr_retry, messages) = (3u64, 4u64);
    assert_eq!(s.u(&["rnr_retry"]), rnr_retry, "{name}");
    assert_eq!(s.u(&["completion_errors"]), 1, "{name}");
    assert_eq!(s.u(&["messages"]), 0, "{name}");
    assert_eq!(g["data_check"]["status"], "incomplete", "{name}");
    assert_eq!(
        s.error_line(),
        format!(
            "rocescope: gen: rxe0: QP {rq:#x}: message 0 (PSN {psn0:#x}) completed with \
             IBV_WC_RNR_RETRY_EXC_ERR (status 13, vendor error 0x0): RNR retry counter exceeded: the peer had \
             no receive posted for PSN {psn0:#x} on QP {dest:#x}; QP state now Error"
        ),
        "{name}: gen's error line"
    );

    let req = s.requests();
    let ans = s.answers();
    assert!(
        req.iter().all(|f| f.qp == dest && f.op == 4),
        "{name}: requests other than SEND_ONLY to {dest:#x}: {req:?}"
    );
    assert!(
        ans.iter().all(|f| f.qp == rq && f.op == 17),
        "{name}: answers other than ACKNOWLEDGE to {rq:#x}: {ans:?}"
    );
    let first: Vec<u64> = per_psn(&req).iter().map(|(p, _)| *p).collect();
    assert_eq!(
        first,
        (0..messages).map(|i| psn_add(psn0, i)).collect::<Vec<_>>(),
        "{name}: the PSNs sent"
    );
    // RNR NAKs: rnr-retry + 1, each for the first PSN, RNR timer code 12 (0.64 ms); no ACK; other NAKs only
    // PSN sequence errors that name the first PSN (the SENDs behind the RNR-NAK'd one)
    let rnr: Vec<&Frame> = ans
        .iter()
        .copied()
        .filter(|f| matches!(f.syn, Some(0x20..=0x3f)))
        .collect();
    // rnr-retry + 1 at least: a loaded machine's rxe may also resend on its retransmit timer, which
    // rnr-retry does not count (a CI run saw 5 for 4); each transmission is answered by one RNR NAK still.
    let least = rnr_retry + 1;
    assert!(
        (least..=least + 2).contains(&(rnr.len() as u64)),
        "{name}: RNR NAKs: {rnr:?}"
    );
    assert!(
        rnr.iter().all(|f| f.syn == Some(0x2c) && f.psn == psn0),
        "{name}: RNR NAKs other than 0x2c (timer 0.64 ms) for PSN {psn0:#x}: {rnr:?}"
    );
    assert!(
        ans.iter()
            .all(|f| matches!(f.syn, Some(0x2c | 0x60)) && f.psn == psn0),
        "{name}: answers other than RNR NAKs and sequence NAKs for PSN {psn0:#x}: {ans:?}"
    );
    // the first PSN: sent as often as it was RNR-NAKed, each transmission answered by one RNR NAK (in order: the
    // i-th RNR NAK after the i-th transmission), not sent again after the last. A resend follows the RNR NAK of
    // the transmission before it, but for the go-back-N rounds rxe starts on a sequence-error NAK (for the
    // SENDs behind the RNR-NAKed one) or on its retransmit timer, which it counts as completer_retry_err apart
    // from the RNR retries: on a loaded machine the slow responder's RNR NAK then comes after the next
    // transmission (a run here: transmissions at frames 1, 5, 11, 15, RNR NAKs at 2, 7, 19, 21; frame 11 the
    // round on the NAK at frame 8, 15 the RNR retry of frame 7; completer_retry_err +1).
    let tx: Vec<&Frame> = req.iter().copied().filter(|f| f.psn == psn0).collect();
    assert_eq!(
        tx.len(),
        rnr.len(),
        "{name}: transmissions of PSN {psn0:#x}"
    );
    let mut early = 0;
    for (i, n) in rnr.iter().enumerate() {
        assert!(
            tx[i].no < n.no,
            "{name}: RNR NAK frame {} comes before transmission {} of PSN {psn0:#x} (frame {})",
            n.no,
            i + 1,
            tx[i].no
        );
        // The resend comes after the RNR NAK; not necessarily 0.64 ms after it on the cable's clock: the
        // host stamps the frames as QEMU passes them on, and a CI run saw 0.53 ms under load.
        match tx.get(i + 1) {
            Some(next) if next.no < n.no => early += 1,
            Some(next) => assert!(
                next.t > n.t,
                "{name}: PSN {psn0:#x} resent {:.6} s after the RNR NAK",
                next.t - n.t
            ),
            None => {}
        }
    }
    assert!(
        early <= s.counter("rxe0", "completer_retry_err"),
        "{name}: {early} transmissions of PSN {psn0:#x} before the RNR NAK of the one before, more than rxe0's \
         go-back-N rounds (completer_retry_err {})",
        s.counter("rxe0", "completer_retry_err")
    );
    for (p, fs) in per_psn(&req) {
        assert!(
            fs.len() <= tx.len(),
            "{name}: PSN {p:#x} sent {} times",
            fs.len()
        );
    }
    let (end, quiet) = s.end_of_capture(0.9);

    // rocescope: every resend follows a NAK (no timeout); the last RNR NAK unanswered by a resend, the
    // requester gave up, its first PSN stalled from its first transmission to the end
    let told = Told { s };
    told.kinds(&[
        ("stall", 1),
        (
            "rnr_exhausted",
            s.counter("rxe0", "retry_rnr_exceeded_err") as u64,
        ),
    ]);
    let e = told.one("rnr_exhausted", rnr[rnr.len() - 1].no, psn0);
    assert_eq!(
        e["detail"]["rnr_naks"].as_u64(),
        Some(rnr.len() as u64),
        "{name}: {e}"
    );
    told.seconds(e, "silent_s", told.until_end(req[req.len() - 1].t));
    let e = told.one("stall", tx[0].no, psn0);
    assert_eq!(e["detail"]["outstanding"], messages, "{name}: {e}");
    told.seconds(e, "waited_s", told.until_end(tx[0].t));
    let rnr_events: Vec<u64> = told
        .events("rnr_nak")
        .iter()
        .filter_map(|e| e["frame"].as_u64())
        .collect();
    assert_eq!(
        rnr_events,
        rnr.iter().map(|f| f.no).collect::<Vec<_>>(),
        "{name}: rnr_nak events"
    );
    told.fails_on_timeouts();

    // rxe0 counts an RNR NAK as its completer takes it, and each one it takes uses up one RNR retry: it takes
    // rnr-retry + 1, then completes with IBV_WC_RNR_RETRY_EXC_ERR and its QP goes to the error state. On a
    // loaded machine its retransmit timer may also resend the SEND (the RNR retries do not count that), and
    // the RNR NAK answering that transmission then comes after the QP's error and is dropped uncounted (a CI
    // run: 5 RNR NAKs on the cable, rxe0 rcvd_rnr_err 4). Not a counter lag: the counters are read 1.6 s
    // after the last frame, and rxe caches them for hw_counters/lifespan, 12 ms. rxe1 counts every RNR NAK it
    // sends.
    assert_eq!(
        s.counter("rxe0", "rcvd_rnr_err"),
        least as i64,
        "{name}: RNR NAKs rxe0 took ({} on the cable)",
        rnr.len()
    );
    assert_eq!(s.counter("rxe0", "retry_rnr_exceeded_err"), 1, "{name}");
    assert_eq!(
        s.counter("rxe1", "send_rnr_err"),
        rnr.len() as i64,
        "{name}: RNR NAKs rxe1 sent"
    );
    assert_eq!(s.counter("rxe0", "sent_pkts"), req.len() as i64, "{name}");
    assert_eq!(s.counter("rxe1", "sent_pkts"), ans.len() as i64, "{name}");
    format!(
        "{name}: QP {rq:#x} -> {dest:#x}: {} SENDs ({} transmissions of PSN {psn0:#x}: frames {}), RNR NAKs at \
         frames {}, {} NAKs in all, no ACK; silent {quiet:.3} s until the end ({end:.3} s); counters {:?}",
        req.len(),
        tx.len(),
        tx.iter()
            .map(|f| f.no.to_string())
            .collect::<Vec<_>>()
            .join(", "),
        rnr.iter()
            .map(|f| f.no.to_string())
            .collect::<Vec<_>>()
            .join(", "),
        ans.len(),
        s.counters
    )
}

/// The guest's kill time (its uptime from the begin marker on, lab/guest/scenarios.sh) on the capture's clock
/// (the host times of the LAB-CABLE line, lab/split_run.py): (earliest, latest), and the time the killed
/// server was reaped (the scenario's wait for it returned: its files, its QP with them, were closed by then).
fn kill_time(s: &Scenario) -> (f64, f64, f64) {
    let after_word = |key: &str| -> &str {
        s.log
            .split(key)
            .nth(1)
            .unwrap_or_else(|| panic!("{}: no '{key}' in perftest.log", s.name))
    };
    let epoch = |key: &str| -> f64 {
        after_word(key)
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    let (marker, first) = (epoch("begin_marker="), epoch("first_frame="));
    let up = after_word("killed the server (kill -9) at guest uptime ")
        .split(' ')
        .next()
        .unwrap();
    let (a, b) = up.split_once("..").unwrap();
    let t0: f64 = after_word("begin marker SC_T0=")
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let off = marker - first - t0;
    let reaped: f64 = after_word("the server was reaped at guest uptime ")
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    (
        a.parse::<f64>().unwrap() + off,
        b.parse::<f64>().unwrap() + off,
        reaped + off,
    )
}

fn check_responder_killed(lab_out: &Path, s: &Scenario) -> String {
    let name = s.name;
    let (rq, psn0, rs, dest) = s.qpns();
    let g = &s.report;
    assert_eq!(g["fault"], Value::Null, "{name}");
    assert_eq!(dest, rs, "{name}: the destination QPN is the responder's");
    let (retries, depth) = (3u64, 4usize);
    assert_eq!(s.u(&["retry_count"]), retries, "{name}");
    assert_eq!(s.u(&["qp_timeout"]), 17, "{name}");
    assert_eq!(s.u(&["completion_errors"]), 1, "{name}");
    let server = fs::read_to_string(lab_out.join(name).join("server.log")).expect("server.log");
    assert_eq!(
        server.lines().last(),
        Some("server: exit 137 (137: killed)"),
        "{name}: the server's end:\n{server}"
    );

    let req = s.requests();
    let ans = s.answers();
    assert!(
        req.iter().all(|f| f.qp == dest && f.op == 10),
        "{name}: requests other than WRITE_ONLY to {dest:#x}"
    );
    assert!(
        !ans.is_empty()
            && ans
                .iter()
                .all(|f| f.qp == rq && f.op == 17 && f.syn.is_some_and(|s| s <= 0x1f)),
        "{name}: answers should be ACKs to {rq:#x}: {ans:?}"
    );
    // the PSNs: consecutive from the first; the acknowledged ones sent once each, the rest (1..=depth, the
    // window) 1 + 3 times
    let sent = per_psn(&req);
    let psns: Vec<u64> = sent.iter().map(|(p, _)| *p).collect();
    assert_eq!(
        psns,
        (0..psns.len() as u64)
            .map(|i| psn_add(psn0, i))
            .collect::<Vec<_>>(),
        "{name}: PSNs"
    );
    let last_acked = ans
        .iter()
        .map(|f| f.psn)
        .reduce(|h, p| if after(p, h) { p } else { h })
        .unwrap();
    let (acked, unacked): (Vec<_>, Vec<_>) = sent.iter().partition(|(p, _)| !after(*p, last_acked));
    assert!(
        acked.iter().all(|(_, fs)| fs.len() == 1),
        "{name}: an acknowledged PSN was resent: {:?}",
        acked
            .iter()
            .filter(|(_, fs)| fs.len() > 1)
            .collect::<Vec<_>>()
    );
    assert!(
        (1..=depth).contains(&unacked.len()),
        "{name}: {} unacknowledged PSNs (window {depth})",
        unacked.len()
    );
    let upsns: Vec<u64> = unacked.iter().map(|(p, _)| *p).collect();
    let oldest = upsns[0];
    let tx = &unacked[0].1;
    assert_eq!(
        tx.len() as u64,
        1 + retries,
        "{name}: transmissions of PSN {oldest:#x}"
    );
    let from = req.iter().position(|f| f.no == tx[1].no).unwrap();
    assert_rounds(name, &req, from, &upsns, retries as usize);
    assert!(
        ans.iter().all(|a| a.no < tx[1].no),
        "{name}: an answer after the first resend (frame {})",
        tx[1].no
    );
    let iv = intervals(tx);
    // QP timeout 17: 4.096 us * 2^17 = 0.537 s between resends; the first resend may come sooner (rxe armed
    // its timer before and does not push it back)
    assert!(
        iv[0] > 0.0 && iv[0] <= 1.5 && iv[1..].iter().all(|d| (0.45..=1.5).contains(d)),
        "{name}: intervals between the transmissions of PSN {oldest:#x}: {iv:?}"
    );
    let message = (oldest + PSN_MOD - psn0) % PSN_MOD;
    assert_eq!(
        s.error_line(),
        format!(
            "rocescope: gen: rxe0: QP {rq:#x}: message {message} (PSN {oldest:#x}) completed with \
             IBV_WC_RETRY_EXC_ERR (status 12, vendor error 0x0): retry counter exceeded: the peer did not \
             acknowledge PSN {oldest:#x} on QP {dest:#x}; QP state now Error"
        ),
        "{name}: gen's error line"
    );
    // the kill: after the first ACK, before the first resend; the last ACK before the killed server was reaped:
    // its QP goes as the process's files close, which is before its parent's wait returns (32 ms after the
    // kill time in a quiet run; on a loaded machine 106 ms, answering all the while), with 50 ms for placing
    // the guest's clock on the capture's (10 ms uptime steps, read after the begin marker's reply)
    let (k0, k1, reaped) = kill_time(s);
    let last_ack = ans.last().unwrap();
    assert!(
        ans[0].t < k1 && k0 < tx[1].t && last_ack.t <= reaped + 0.05,
        "{name}: the kill at {k0:.3}..{k1:.3} s, reaped at {reaped:.3} s: first ACK {:.6} s, last ACK {:.6} s, \
         first resend {:.6} s",
        ans[0].t,
        last_ack.t,
        tx[1].t
    );
    let (end, quiet) = s.end_of_capture(1.9);

    // rocescope: answered until the kill, then the oldest unacknowledged PSN stalls to the end, resent on the
    // timer until the requester gives up
    let told = Told { s };
    told.kinds(&[
        ("stall", 1),
        (
            "timeout_retransmission",
            s.counter("rxe0", "completer_retry_err") as u64,
        ),
        (
            "retry_exhausted",
            s.counter("rxe0", "retry_exceeded_err") as u64,
        ),
    ]);
    let e = told.one("stall", tx[0].no, oldest);
    assert_eq!(
        e["detail"]["outstanding"].as_u64(),
        Some(upsns.len() as u64),
        "{name}: {e}"
    );
    assert_eq!(e["detail"]["at_end"], true, "{name}: {e}");
    told.seconds(e, "waited_s", told.until_end(tx[0].t));
    told.timeouts(tx);
    let e = told.one("retry_exhausted", tx[tx.len() - 1].no, oldest);
    assert_eq!(e["detail"]["resends"], retries, "{name}: {e}");
    told.seconds(e, "silent_s", told.until_end(req[req.len() - 1].t));
    told.fails_on_timeouts();

    assert_eq!(s.counter("rxe0", "retry_exceeded_err"), 1, "{name}");
    assert_eq!(
        s.counter("rxe0", "completer_retry_err"),
        retries as i64,
        "{name}"
    );
    assert_eq!(s.counter("rxe0", "sent_pkts"), req.len() as i64, "{name}");
    assert_eq!(s.counter("rxe1", "sent_pkts"), ans.len() as i64, "{name}");
    let rcvd = s.counter("rxe1", "rcvd_pkts");
    assert!(
        rcvd >= acked.len() as i64 && rcvd <= (acked.len() + upsns.len()) as i64,
        "{name}: rxe1 received {rcvd} packets; {} requests were acknowledged",
        acked.len()
    );
    format!(
        "{name}: QP {rq:#x} -> {dest:#x}: {} requests acknowledged by {} ACKs (last PSN {last_acked:#x}, frame {} \
         at {:.3} s), killed at {k0:.3}..{k1:.3} s; {} unacknowledged (PSN {oldest:#x}..), PSN {oldest:#x} at \
         frames {} (intervals {} s); silent {quiet:.3} s until the end ({end:.3} s); counters {:?}",
        acked.len(),
        ans.len(),
        last_ack.no,
        last_ack.t,
        upsns.len(),
        tx.iter()
            .map(|f| f.no.to_string())
            .collect::<Vec<_>>()
            .join(", "),
        secs(&iv),
        s.counters
    )
}

/// The (timeout exponent, retry count) pairs of gen_timers.
const TIMERS: [(u64, u64); 5] = [(14, 3), (15, 2), (16, 6), (17, 3), (18, 1)];

/// gen_timers: five requesters, each one WRITE to a QPN no QP has with its own QP timeout T and retry count R.
/// From tshark: its PSN R + 1 times, nothing else to that QPN; every interval at least 4.096 us x 2^T (IBTA
/// 9.7.6.1.3: the timer never fires early) and the shortest implying T. From gen: IBV_WC_RETRY_EXC_ERR and when
/// (`error_after_s`). Then rocescope's `timers` of the flow (analyze -Y of that QPN, --retry-count R): R resends
/// of one PSN, the exponent T, unanswered, and the give-up time it predicts after the last resend matching when
/// the QP did give up (gen's time, less the cable's first-to-last resend span) within a fifth of the timeout and
/// 20 ms (gen's clock starts a little before the first frame, and polls; seen here: 1 to 20 ms later than
/// predicted).
fn check_timers(dir: &Path) -> String {
    let cable = dir.join("cable.pcap");
    let frames = tshark_frames(&cable);
    let mut out = Vec::new();
    for (t, r) in TIMERS {
        let tag = format!("t{t}-r{r}");
        let g: Value = serde_json::from_str(
            &fs::read_to_string(dir.join(format!("gen-{tag}.json")))
                .unwrap_or_else(|e| panic!("gen_timers {tag}: {e}")),
        )
        .unwrap();
        assert_eq!(
            (g["qp_timeout"].as_u64(), g["retry_count"].as_u64()),
            (Some(t), Some(r))
        );
        let error = g["error"].as_str().unwrap_or("");
        assert!(error.contains("IBV_WC_RETRY_EXC_ERR"), "{tag}: {error}");
        let dest = g["dest_qpn"].as_u64().unwrap();
        let sent: Vec<&Frame> = frames.iter().filter(|f| f.roce && f.qp == dest).collect();
        assert_eq!(
            sent.len() as u64,
            r + 1,
            "{tag}: the WRITE and its {r} resends"
        );
        assert!(
            sent.iter()
                .all(|f| f.psn == sent[0].psn && f.src == "10.0.0.1")
        );
        let intervals: Vec<f64> = sent.windows(2).map(|w| w[1].t - w[0].t).collect();
        let timeout = 4.096e-6 * f64::from(1u32 << t);
        let shortest = intervals.iter().copied().fold(f64::MAX, f64::min);
        // rxe's timer: set for whole ticks (rounded up), fires up to a tick early
        assert!(
            shortest >= timeout * 15.0 / 16.0 && shortest < 2.0 * timeout,
            "{tag}: {intervals:?} against {timeout} s"
        );
        assert_eq!(timeout_exponent(shortest), t, "{tag}: {intervals:?}");
        let span = sent[r as usize].t - sent[0].t;
        let gave_up = g["error_after_s"].as_f64().expect("error_after_s");
        // rocescope, on that QPN's frames only
        let o = Command::new(lab_support::bin())
            .args(["analyze", "--json", "--retry-count", &r.to_string(), "-Y"])
            .arg(format!("infiniband.bth.destqp == {dest}"))
            .arg(&cable)
            .output()
            .unwrap();
        let a: Value = serde_json::from_slice(&o.stdout).unwrap();
        let flow = &a["flows"][0];
        let timers = &flow["timers"];
        assert_eq!(
            (
                timers["resends"].as_u64(),
                timers["timeout_exponent"].as_u64(),
                timers["retry_count"].as_u64(),
                timers["last_retry"].as_u64(),
                timers["unanswered"].as_bool(),
            ),
            (Some(r), Some(t), Some(r), Some(r), Some(true)),
            "{tag}: {timers}"
        );
        let predicted = timers["gives_up_in_s"].as_f64().unwrap();
        let after_last = gave_up - span;
        assert!(
            (predicted - after_last).abs() <= timeout / 5.0 + 0.02,
            "{tag}: predicted {predicted} s after the last resend, the QP gave up {after_last} s after it \
             (gen: {gave_up} s after its post, the resends spanning {span} s)"
        );
        out.push(format!(
            "T {t} R {r}: {} resends every {:.1}-{:.1} ms, gave up {:.1} ms after the last, predicted {:.1}",
            r,
            shortest * 1e3,
            intervals.iter().copied().fold(0.0, f64::max) * 1e3,
            after_last * 1e3,
            predicted * 1e3
        ));
    }
    format!("gen_timers: {}", out.join("; "))
}

#[test]
fn failures_in_the_soft_roce_lab() {
    let t0 = std::time::Instant::now();
    let scenarios = [
        "info",
        "gen_wrong_qpn",
        "gen_responder_killed",
        "gen_no_receive",
        "gen_timers",
    ];
    let (lab_out, secs) = run_lab("lab-failures", &scenarios);
    let load = |name| Scenario::load(&lab_out, name);
    let summary = [
        check_wrong_qpn(&load("gen_wrong_qpn")),
        check_responder_killed(&lab_out, &load("gen_responder_killed")),
        check_no_receive(&load("gen_no_receive")),
        check_timers(&lab_out.join("gen_timers")),
    ];
    eprintln!(
        "{}\nlab setup + guest run {secs:.1} s, total {:.1} s",
        summary.join("\n"),
        t0.elapsed().as_secs_f64()
    );
}
