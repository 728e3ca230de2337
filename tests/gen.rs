//! `rocescope gen loopback` (the verbs generator, libibverbs through `sideway`, loaded at run time).
//!
//! (1) Here, on a machine whose kernel has no RDMA: `gen` fails with exit 1 and one line that says why, and the
//!     rest of rocescope keeps working.
//! (2) In the Soft-RoCE lab (lab/README.md), with this test's own binary in the guest: scenarios gen_write,
//!     gen_send and gen_read run `rocescope gen loopback -d rxe0 --peer-device rxe1 --op OP -s 4096 -n 32
//!     --json`; each completes (exit 0, no completion error, data check passed), and its JSON agrees with
//!     `rocescope analyze --json` of the host-side cable capture: per flow (source, destination, destination
//!     QP) the role, the first and last PSN, the packets and the messages, with no gap, NAK, RNR NAK,
//!     retransmission or bad ICRC. gen_bad_mtu asks for a path MTU of 4096 on 1500-byte NICs, which rxe would
//!     silently never send: gen must refuse it (exit 1, one line) before anything reaches the wire.
//!
//! (3) The fabric check, `gen loopback ... --capture eth0`, in the lab: gen_check (clean) says `FABRIC CHECK:
//!     PASS` (exit 0); gen_check_loss (netem loss 3% on eth0) says `FABRIC CHECK: FAIL: ...` (exit 3) with
//!     gaps, NAKs and retransmissions that agree, flow by flow, with `rocescope analyze` of the cable capture.
//!
//! (4) The next slice, in one lab run: gen_atomic (32 FETCH_ADDs, then 32 COMPARE_SWAPs, each under
//!     `--capture eth0`: PASS, returned originals checked, opcodes and PSNs as on the cable), gen_multi (`-q 4`
//!     WRITEs: 8 flows), gen_multi_send, gen_multi_read, gen_multi_atomic (`-q 3` SENDs, READs, FETCH_ADDs: 6
//!     flows each): PASS, and per QP pair gen's flows, its check and `analyze` of the cable agree on the QPNs,
//!     PSN ranges, packets and opcodes that the parameters make; gen_ecn (`--tclass 2` through `netem loss 5%
//!     ecn`: the CE marks of gen's check, gen's capture, `analyze` of the cable and tshark agree, and the check
//!     passes naming them).
//!
//! (5) Issue scenario 6, a benchmark: gen_vs_perftest runs `ib_write_bw -s 65536 -n 200` (rxe0 -> rxe1, TX depth
//!     128) and `gen loopback --op write -s 65536 -n 200 --depth 128` in one guest; both must complete and gen's
//!     data check pass; the two throughputs and their ratio are printed, not judged. gen_paced (`--duration 1
//!     --rate 500`): stopped by the duration, never more messages than the rate allows in the posting time.
//!     gen_paced_check (`--duration 1 --rate 200 --capture eth0`): PASS, the messages gen reports are the WRITE
//!     messages on the cable with its PSN range, and the rate achieved (gen's, and on the cable) is within
//!     loose bounds of the target.
//!
//! (2), (3), (4) and (5) need what `lab/setup` installs (run here; idempotent) and about 20-60 s of emulated guest. It fails,
//! with the reason, when the lab cannot run: it never skips. Everything runs under hard timeouts.
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

mod lab_support;
use lab_support::{analyze_json, analyze_json_with, bin, root, run_lab};

/// Does this machine have RDMA devices (a kernel with the uverbs ABI)?
fn host_has_rdma() -> bool {
    fs::read_dir("/sys/class/infiniband_verbs")
        .map(|d| {
            d.flatten()
                .any(|e| e.file_name().to_string_lossy().starts_with("uverbs"))
        })
        .unwrap_or(false)
}

#[test]
fn gen_without_rdma_fails_in_one_line_and_the_rest_works() {
    let t0 = Instant::now();
    let o = Command::new(bin())
        .args([
            "gen",
            "loopback",
            "-d",
            "rxe0",
            "--peer-device",
            "rxe1",
            "-n",
            "1",
        ])
        .stdin(Stdio::null())
        .output()
        .expect("run rocescope gen");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        t0.elapsed() < Duration::from_secs(20),
        "gen took {:?} to fail",
        t0.elapsed()
    );
    if host_has_rdma() {
        // not this project's machines; still: rxe0/rxe1 must exist for it to succeed
        eprintln!(
            "this host has RDMA devices: gen said {err:?} (exit {:?})",
            o.status.code()
        );
        return;
    }
    assert_eq!(
        o.status.code(),
        Some(1),
        "exit status; stderr: {err}; stdout: {}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert!(
        o.stdout.is_empty(),
        "stdout: {}",
        String::from_utf8_lossy(&o.stdout)
    );
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "one line on stderr, got: {err}");
    let l = lines[0];
    assert!(l.starts_with("rocescope: gen: "), "{l}");
    assert!(
        l.contains("RDMA") && l.contains("libibverbs"),
        "the line says neither RDMA nor libibverbs: {l}"
    );
    // What to do, for a user who has only the binary: the lab's own subcommand, not a path in the checkout.
    assert!(
        l.contains("rocescope lab up") && !l.contains("README"),
        "{l}"
    );

    // usage errors stay usage errors (2), and the rest of rocescope works on the same binary
    let o = Command::new(bin())
        .args(["gen", "loopback", "--op", "write"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "gen loopback without -d");
    let o = Command::new(bin())
        .args(["analyze", "--json"])
        .arg(root().join("testdata/lab/write.pcap"))
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "analyze: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["verdict"]["status"], "pass");
}

fn u(v: &Value) -> u64 {
    v.as_u64()
        .unwrap_or_else(|| panic!("not an unsigned number: {v}"))
}

/// Checks one generator scenario's report against the analyzer's view of its cable capture; returns a
/// one-line summary.
fn check_op(sc: &Path, op: &str) -> String {
    let name = format!("gen_{op}");
    let log = fs::read_to_string(sc.join("gen.log")).expect("gen.log came back from the guest");
    assert_eq!(
        log.trim(),
        "exit 0",
        "{name}: gen's standard error (and exit status):\n{log}"
    );
    let g: Value = serde_json::from_slice(&fs::read(sc.join("gen.json")).expect("gen.json"))
        .unwrap_or_else(|e| panic!("{name}: gen.json is not JSON: {e}"));
    assert_eq!(g["op"], op);
    assert!(g["error"].is_null(), "{name}: error {}", g["error"]);
    assert_eq!(u(&g["completion_errors"]), 0, "{name}: completion errors");
    assert_eq!(
        g["data_check"]["status"], "passed",
        "{name}: data check {}",
        g["data_check"]
    );
    assert_eq!(
        u(&g["data_check"]["checked"]),
        32,
        "{name}: messages checked"
    );
    assert_eq!(u(&g["data_check"]["mismatches"]), 0);
    assert_eq!(u(&g["messages"]), 32);
    assert_eq!(u(&g["bytes"]), 32 * 4096);
    assert_eq!(
        u(&g["mtu"]),
        1024,
        "{name}: path MTU (active MTU on 1500-byte NICs)"
    );
    assert_eq!(u(&g["qp_timeout"]), 17);
    assert!(u(&g["max_rd_atomic"]) >= 1);
    for (side, ip) in [("requester", "10.0.0.1"), ("responder", "10.0.0.2")] {
        let e = &g[side];
        assert_eq!(e["gid_type"], "RoCE v2", "{name}: {side} GID {e}");
        assert_eq!(e["gid"], format!("::ffff:{ip}"), "{name}: {side} GID {e}");
        assert_eq!(e["ip"], ip);
        assert_eq!(
            u(&e["gid_index"]),
            1,
            "{name}: the lab's IPv4-mapped GID is index 1"
        );
        assert!(u(&e["sq_psn"]) <= 0xff_ffff && u(&e["rq_psn"]) <= 0xff_ffff);
    }
    // gen_send names the GID with -x 1, the others let gen pick it
    let choice = if op == "send" {
        "-x: RoCE v2, IPv4-mapped"
    } else {
        "auto: RoCE v2 and IPv4-mapped"
    };
    assert_eq!(g["requester"]["gid_choice"], choice, "{name}");
    assert_eq!(g["requester"]["sq_psn"], g["responder"]["rq_psn"]);
    assert_eq!(g["responder"]["sq_psn"], g["requester"]["rq_psn"]);
    assert!(
        g["seconds"].as_f64().unwrap() > 0.0 && g["gbps"].as_f64().unwrap() > 0.0,
        "{name}: throughput {} Gb/s in {} s",
        g["gbps"],
        g["seconds"]
    );
    let lat = &g["latency_us"];
    let (p50, p99, max) = (
        lat["p50"].as_f64().unwrap(),
        lat["p99"].as_f64().unwrap(),
        lat["max"].as_f64().unwrap(),
    );
    assert!(
        0.0 < p50 && p50 <= p99 && p99 <= max,
        "{name}: latency {lat}"
    );

    let a = analyze_json(&sc.join("cable.pcap"));
    for k in ["malformed", "icrc_bad", "icrc_unverifiable"] {
        assert_eq!(u(&a["capture"][k]), 0, "{name}: analyze: {k}");
    }
    assert_eq!(
        a["verdict"]["status"], "pass",
        "{name}: analyze verdict {}",
        a["verdict"]
    );
    let mut flows: BTreeMap<(String, String, u64), &Value> = BTreeMap::new();
    for f in a["flows"].as_array().expect("flows") {
        let key = (
            f["src"].as_str().unwrap().to_string(),
            f["dst"].as_str().unwrap().to_string(),
            u(&f["dest_qp"]),
        );
        assert!(flows.insert(key, f).is_none(), "{name}: two flows {f}");
    }
    let gf = g["flows"].as_array().expect("gen flows");
    assert_eq!(
        flows.len(),
        gf.len(),
        "{name}: the cable has flows {:?}, gen announced {}",
        flows.keys().collect::<Vec<_>>(),
        g["flows"]
    );
    assert_eq!(
        u(&gf[0]["dest_qp"]),
        u(&g["responder"]["qpn"]),
        "requests go to the responder's QP"
    );
    assert_eq!(u(&gf[1]["dest_qp"]), u(&g["requester"]["qpn"]));
    for e in gf {
        let key = (
            e["src"].as_str().unwrap().to_string(),
            e["dst"].as_str().unwrap().to_string(),
            u(&e["dest_qp"]),
        );
        let f = flows.get(&key).unwrap_or_else(|| {
            panic!(
                "{name}: no flow {key:?} on the cable; flows: {:?}",
                flows.keys()
            )
        });
        let what = format!("{name}: flow {key:?} ({})", e["carries"]);
        assert_eq!(f["role"], e["role"], "{what}: role");
        assert_eq!(f["psn"]["first"], e["psn_first"], "{what}: first PSN");
        assert_eq!(f["psn"]["last"], e["psn_last"], "{what}: last PSN");
        if e["carries"] == "ACKs" {
            // ACKs may be coalesced: at most one per message, at least one
            assert!(
                (1..=u(&e["packets"])).contains(&u(&f["packets"])),
                "{what}: {} ACK packets, gen expected at most {}",
                f["packets"],
                e["packets"]
            );
        } else {
            assert_eq!(f["packets"], e["packets"], "{what}: packets");
        }
        assert_eq!(f["messages"]["count"], e["messages"], "{what}: messages");
        if u(&e["messages"]) > 0 {
            assert_eq!(u(&f["messages"]["min_size"]), 4096, "{what}");
            assert_eq!(u(&f["messages"]["max_size"]), 4096, "{what}");
        }
        for k in ["gap_events", "missing", "retransmitted", "duplicates"] {
            assert_eq!(u(&f["psn"][k]), 0, "{what}: {k}");
        }
        let naks: u64 = f["naks"].as_object().unwrap().values().map(u).sum();
        assert_eq!(naks, 0, "{what}: NAKs {}", f["naks"]);
        assert_eq!(u(&f["rnr_naks"]), 0, "{what}: RNR NAKs");
        assert_eq!(u(&f["icrc_bad"]), 0, "{what}: bad ICRC");
    }
    format!(
        "{name}: QPN {:#x} -> {:#x}, PSN {}..{}, {} messages, data check passed, {:.3} Gb/s, p50 {:.0} us",
        u(&g["requester"]["qpn"]),
        u(&g["responder"]["qpn"]),
        gf[0]["psn_first"],
        gf[0]["psn_last"],
        g["messages"],
        g["gbps"].as_f64().unwrap(),
        p50
    )
}

#[test]
fn gen_loopback_in_the_soft_roce_lab_matches_the_cable() {
    let t0 = Instant::now();
    let (lab_out, guest_secs) = run_lab(
        "lab-gen",
        &[
            "gen_write",
            "gen_send",
            "gen_read",
            "gen_bad_mtu",
            "gen_bad_rkey",
            "gen_deadline",
            "gen_text",
        ],
    );

    let mut summary = Vec::new();
    for op in ["write", "send", "read"] {
        summary.push(check_op(&lab_out.join(format!("gen_{op}")), op));
    }

    // the refused path MTU: one line, exit 1, nothing on the wire
    let sc = lab_out.join("gen_bad_mtu");
    let log = fs::read_to_string(sc.join("gen.log")).expect("gen_bad_mtu: gen.log");
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(
        lines.len(),
        2,
        "gen_bad_mtu: one error line then the exit status:\n{log}"
    );
    assert!(
        lines[0].starts_with("rocescope: gen: path MTU 4096 is larger than eth0")
            && lines[0].contains("MTU 1500"),
        "gen_bad_mtu: {}",
        lines[0]
    );
    assert_eq!(lines[1], "exit 1");
    let a = analyze_json(&sc.join("cable.pcap"));
    assert_eq!(
        u(&a["capture"]["roce_frames"]),
        0,
        "gen_bad_mtu: RoCE frames on the cable"
    );

    // a wrong R_Key on the last of 4 WRITEs: a real NAK on the wire, the run ends naming the completion status
    let sc = lab_out.join("gen_bad_rkey");
    let log = fs::read_to_string(sc.join("gen.log")).expect("gen_bad_rkey: gen.log");
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(
        lines.len(),
        2,
        "gen_bad_rkey: one error line then the exit status:\n{log}"
    );
    assert_eq!(lines[1], "exit 1");
    let g: Value =
        serde_json::from_slice(&fs::read(sc.join("gen.json")).expect("gen_bad_rkey: gen.json"))
            .expect("gen_bad_rkey: gen.json is JSON");
    // message 3 of 4096 bytes at path MTU 1024 starts 12 PSNs after the first
    let bad_psn = (u(&g["requester"]["sq_psn"]) + 12) & 0xff_ffff;
    assert!(
        lines[0].starts_with("rocescope: gen: rxe0: QP ")
            && lines[0].contains(&format!(
                "message 3 (PSN {bad_psn:#x}) completed with IBV_WC_REM_ACCESS_ERR (status 10"
            ))
            && lines[0].contains(&format!(
                ": remote access error: the peer refused the R_Key, address or length of PSN {bad_psn:#x} \
                 on QP {:#x}",
                u(&g["responder"]["qpn"])
            )),
        "gen_bad_rkey: {}",
        lines[0]
    );
    assert_eq!(g["fault"], "bad-rkey");
    assert_eq!(u(&g["completion_errors"]), 1);
    assert_eq!(
        u(&g["messages"]),
        3,
        "messages completed before the bad one"
    );
    assert_eq!(g["data_check"]["status"], "incomplete");
    assert_eq!(u(&g["data_check"]["checked"]), 3);
    assert_eq!(u(&g["data_check"]["mismatches"]), 0);
    assert!(
        g["error"]
            .as_str()
            .unwrap()
            .contains("IBV_WC_REM_ACCESS_ERR")
    );
    let a = analyze_json(&sc.join("cable.pcap"));
    let first = u(&g["flows"][0]["psn_first"]);
    let reply = a["flows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["role"] == "responder" && f["dest_qp"] == g["requester"]["qpn"])
        .unwrap_or_else(|| panic!("gen_bad_rkey: no reply flow: {}", a["flows"]));
    assert_eq!(
        u(&reply["naks"]["remote_access"]),
        1,
        "gen_bad_rkey: NAKs {}",
        reply["naks"]
    );
    let nak_psn = a["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "nak" && e.to_string().contains("remote access"))
        .unwrap_or_else(|| panic!("gen_bad_rkey: no remote access NAK event: {}", a["events"]));
    let want = (first + 3 * 4) & 0xff_ffff;
    assert_eq!(
        nak_psn["psn"], want,
        "gen_bad_rkey: the NAK should be for the first PSN of message 3 ({want:#x}): {nak_psn}"
    );
    assert_eq!(a["verdict"]["status"], "fail");

    // every request dropped: rxe never gives up, gen's deadline ends the run
    let sc = lab_out.join("gen_deadline");
    let log = fs::read_to_string(sc.join("gen.log")).expect("gen_deadline: gen.log");
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(
        lines.len(),
        2,
        "gen_deadline: one error line then the exit status:\n{log}"
    );
    assert!(
        lines[0]
            .starts_with("rocescope: gen: no completion for 1.0 s: 0 of 4 messages completed; QP ")
            && lines[0].contains("ReadyToSend"),
        "gen_deadline: {}",
        lines[0]
    );
    assert_eq!(lines[1], "exit 1");
    let a = analyze_json(&sc.join("cable.pcap"));
    assert_eq!(
        u(&a["capture"]["roce_frames"]),
        0,
        "gen_deadline: RoCE frames on the cable"
    );

    // the text report: 8 SENDs of 3000 bytes (3 packets each at MTU 1024)
    let txt = fs::read_to_string(lab_out.join("gen_text/gen.txt")).expect("gen_text: gen.txt");
    for want in [
        "rxe0 port 1: QPN 0x",
        "GID index 1 ::ffff:10.0.0.1 (auto: RoCE v2 and IPv4-mapped)",
        "SEND 8 x 3000 bytes, depth 2, path MTU 1024",
        "(requester): PSN ",
        "(24 packets)",
        "8 messages, 24000 bytes in ",
        "latency (post to completion) us: p50 ",
        "completion errors: 0; data check: passed (8 checked, 0 mismatches)",
        "\nexit 0",
    ] {
        assert!(txt.contains(want), "gen_text: no '{want}' in:\n{txt}");
    }
    let a = analyze_json(&lab_out.join("gen_text/cable.pcap"));
    let req = a["flows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["role"] == "requester")
        .expect("gen_text: requester flow");
    assert_eq!(u(&req["packets"]), 24);
    assert_eq!(u(&req["messages"]["count"]), 8);
    assert_eq!(u(&req["messages"]["max_size"]), 3000);
    assert_eq!(a["verdict"]["status"], "pass");

    eprintln!(
        "{}\ngen_bad_mtu: refused (exit 1), nothing on the wire\ngen_bad_rkey: NAK (remote access error) on \
         the cable, exit 1 with IBV_WC_REM_ACCESS_ERR\ngen_deadline: exit 1 after 1 s without a completion\nlab setup + guest run {guest_secs:.1} s, total {:.1} s",
        summary.join("\n"),
        t0.elapsed().as_secs_f64()
    );
}

/// Flows of an analyze report by (source, destination, destination QP).
fn flows_by_key(r: &Value) -> BTreeMap<(String, String, u64), &Value> {
    let mut m = BTreeMap::new();
    for f in r["flows"].as_array().expect("flows") {
        let key = (
            f["src"].as_str().unwrap().to_string(),
            f["dst"].as_str().unwrap().to_string(),
            u(&f["dest_qp"]),
        );
        assert!(m.insert(key, f).is_none(), "two flows {f}");
    }
    m
}

fn nak_total(f: &Value) -> u64 {
    f["naks"].as_object().unwrap().values().map(u).sum()
}

/// `gen loopback --capture eth0` in the lab (eth0 sees both directions of the cable):
/// gen_check (clean, text report): exit 0, the data check passed, both flows found with the PSN range and the
/// 128 request packets posted, `FABRIC CHECK: PASS` last; the cable agrees (same PSNs, 128 packets, verdict
/// pass). gen_check_loss (netem loss 3% on eth0, JSON): the data check still passes (RC recovers), exit 3 with
/// `FABRIC CHECK: FAIL: ...` naming gaps, NAKs and retransmissions; per flow, the generator's own capture and
/// `rocescope analyze --json` of the host-side cable capture give the same packets, PSNs, gaps, missing PSNs,
/// retransmissions, NAKs and messages (netem drops before the wire and before eth0's capture point, so both
/// see the same frames), and the check's totals are the cable's.
#[test]
fn gen_fabric_check_in_the_soft_roce_lab() {
    let t0 = Instant::now();
    let (lab_out, lab_secs) = run_lab("lab-gen-check", &["gen_check", "gen_check_loss"]);
    let mut summary = Vec::new();

    // --- clean: PASS
    let sc = lab_out.join("gen_check");
    let log = fs::read_to_string(sc.join("gen.log")).expect("gen_check: gen.log");
    assert_eq!(
        log.trim(),
        "exit 0",
        "gen_check: standard error and exit status"
    );
    let txt = fs::read_to_string(sc.join("gen.txt")).expect("gen_check: gen.txt");
    assert_eq!(
        txt.lines().last(),
        Some("FABRIC CHECK: PASS"),
        "gen_check: the last line:\n{txt}"
    );
    for want in [
        "WRITE 32 x 4096 bytes, depth 16, path MTU 1024",
        "completion errors: 0; data check: passed (32 checked, 0 mismatches)",
        "Capture: live capture on eth0",
        "stopped by generator",
        "dropped 0 (kernel buffer), 0 by the interface",
        "Verdict: PASS",
        "(requester): capture flow ",
        "(as posted), 128 packets (128 posted); gaps 0, NAKs 0, RNR NAKs 0, retransmitted 0",
        "(responder): capture flow ",
        "0 CE-marked packets, 0 CNPs; 0 other flows",
    ] {
        assert!(txt.contains(want), "gen_check: no '{want}' in:\n{txt}");
    }
    let a = analyze_json(&sc.join("cable.pcap"));
    assert_eq!(a["verdict"]["status"], "pass", "gen_check: cable verdict");
    let req: Vec<&Value> = a["flows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["role"] == "requester")
        .collect();
    assert_eq!(req.len(), 1, "gen_check: requester flows on the cable");
    assert_eq!(u(&req[0]["packets"]), 128);
    let psns = format!(
        "(requester): capture flow 0, PSN {}..{} (as posted)",
        req[0]["psn"]["first"], req[0]["psn"]["last"]
    );
    assert!(
        txt.contains(&psns),
        "gen_check: the cable's requester PSNs: no '{psns}' in:\n{txt}"
    );
    summary.push(format!(
        "gen_check: exit 0, FABRIC CHECK: PASS, cable PSN {}..{} 128 request packets, data check passed",
        req[0]["psn"]["first"], req[0]["psn"]["last"]
    ));

    // --- 3% loss: FAIL, exit 3, and the same counts as the cable
    let sc = lab_out.join("gen_check_loss");
    let log = fs::read_to_string(sc.join("gen.log")).expect("gen_check_loss: gen.log");
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(
        lines.len(),
        2,
        "gen_check_loss: the FABRIC CHECK line then the exit status:\n{log}"
    );
    assert_eq!(lines[1], "exit 3", "gen_check_loss:\n{log}");
    let line = lines[0];
    assert!(
        line.starts_with("FABRIC CHECK: FAIL: ")
            && line.contains(" PSN gaps (")
            && line.contains(" NAKs")
            && line.contains(" retransmitted requests"),
        "gen_check_loss: {line}"
    );
    let g: Value =
        serde_json::from_slice(&fs::read(sc.join("gen.json")).expect("gen_check_loss: gen.json"))
            .expect("gen_check_loss: gen.json is one JSON document");
    assert!(g["error"].is_null(), "gen_check_loss: error {}", g["error"]);
    assert_eq!(u(&g["completion_errors"]), 0);
    assert_eq!(u(&g["messages"]), 64);
    assert_eq!(
        g["data_check"]["status"], "passed",
        "gen_check_loss: data check {}",
        g["data_check"]
    );
    assert_eq!(u(&g["data_check"]["checked"]), 64);
    let check = &g["capture"]["check"];
    let own = &g["capture"]["report"];
    assert_eq!(check["status"], "fail");
    assert_eq!(check["line"], line, "the JSON's line is the one printed");
    assert_eq!(own["capture_stats"]["interface"], "eth0");
    assert_eq!(own["capture_stats"]["stopped_by"], "generator");
    assert_eq!(u(&own["capture_stats"]["dropped"]), 0);
    assert_eq!(u(&check["capture_dropped"]), 0);
    for k in ["gap_events", "naks", "retransmitted"] {
        assert!(u(&check[k]) > 0, "gen_check_loss: {k} = 0: {check}");
    }

    let a = analyze_json(&sc.join("cable.pcap"));
    assert_eq!(
        a["verdict"]["status"], "fail",
        "gen_check_loss: cable verdict"
    );
    let cable = flows_by_key(&a);
    let mine = flows_by_key(own);
    assert_eq!(
        cable.keys().collect::<Vec<_>>(),
        mine.keys().collect::<Vec<_>>(),
        "gen_check_loss: the same flows"
    );
    let gf = g["flows"].as_array().unwrap();
    assert_eq!(check["flows"].as_array().unwrap().len(), gf.len());
    let (mut gaps, mut naks, mut retx) = (0, 0, 0);
    for (i, e) in gf.iter().enumerate() {
        let key = (
            e["src"].as_str().unwrap().to_string(),
            e["dst"].as_str().unwrap().to_string(),
            u(&e["dest_qp"]),
        );
        let (c, m) = (
            cable
                .get(&key)
                .unwrap_or_else(|| panic!("gen_check_loss: no flow {key:?} on the cable")),
            mine[&key],
        );
        let what = format!("gen_check_loss: flow {key:?} ({})", e["role"]);
        for path in [
            "/role",
            "/packets",
            "/psn/first",
            "/psn/last",
            "/psn/gap_events",
            "/psn/missing",
            "/psn/retransmitted",
            "/psn/duplicates",
            "/psn/retransmission_episodes",
            "/naks",
            "/rnr_naks",
            "/acks",
            "/messages/count",
            "/icrc_bad",
        ] {
            assert_eq!(
                c.pointer(path),
                m.pointer(path),
                "{what}: {path}: cable vs gen's capture"
            );
        }
        let fc = &check["flows"][i];
        assert_eq!(fc["capture_flow"], m["id"], "{what}");
        assert_eq!(fc["packets"], c["packets"], "{what}");
        assert_eq!(fc["gap_events"], c["psn"]["gap_events"], "{what}");
        assert_eq!(fc["retransmitted"], c["psn"]["retransmitted"], "{what}");
        assert_eq!(u(&fc["naks"]), nak_total(c), "{what}");
        assert_eq!(fc["psn_ok"], true, "{what}: PSN range {fc}");
        gaps += u(&c["psn"]["gap_events"]);
        naks += nak_total(c);
        retx += u(&c["psn"]["retransmitted"]);
        if e["role"] == "requester" {
            // what was posted, and what the loss made of it
            assert_eq!(u(&e["packets"]), 256, "64 x 4 packets posted");
            assert_eq!(u(&fc["packets_posted"]), 256);
            assert!(
                u(&c["packets"]) > 256,
                "{what}: retransmissions add packets"
            );
            assert_eq!(c["psn"]["first"], e["psn_first"], "{what}");
            assert_eq!(c["psn"]["last"], e["psn_last"], "{what}");
        }
    }
    assert_eq!(
        (
            u(&check["gap_events"]),
            u(&check["naks"]),
            u(&check["retransmitted"])
        ),
        (gaps, naks, retx),
        "gen_check_loss: the check's totals are the cable's"
    );
    summary.push(format!(
        "gen_check_loss: exit 3, data check passed (64 messages), gaps {gaps}, NAKs {naks}, retransmitted {retx} \
         on both the generator's capture and the cable; {line}"
    ));
    eprintln!(
        "{}\nlab setup + guest run {lab_secs:.1} s, total {:.1} s",
        summary.join("\n"),
        t0.elapsed().as_secs_f64()
    );
}

fn hexes(v: &[u64]) -> String {
    v.iter()
        .map(|q| format!("{q:#x}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// Messages per QP pair in the gen_multi* scenarios (`-n 32`).
const MULTI_N: u64 = 32;

/// A `gen_multi*` scenario: `gen loopback --op OP -s SIZE -n 32 -q QPS --capture eth0`, SIZE at most the path
/// MTU (1024), so one packet a message. Asserts exit 0 with `FABRIC CHECK: PASS`, the data check passed on
/// every message, each pair with its own QPNs and PSNs, and per pair: gen's two flows, its check and `analyze`
/// of the host-side cable agree on the QPNs and the PSN range (the requester's send PSN, one PSN a message),
/// the packets (32 requests; 32 READ responses or atomic ACKs, or 1..=32 coalesced ACKs) and the opcodes
/// (`req_op`, `resp_op` or RC_ACKNOWLEDGE), with no gap, NAK or retransmission. Returns a one-line summary.
fn check_multi(
    lab_out: &Path,
    name: &str,
    op: &str,
    qps: u64,
    size: u64,
    req_op: &str,
    resp_op: Option<&str>,
) -> String {
    let sc = lab_out.join(name);
    let n = MULTI_N;
    let log =
        fs::read_to_string(sc.join("gen.log")).unwrap_or_else(|e| panic!("{name}: gen.log: {e}"));
    assert_eq!(
        log.lines().collect::<Vec<_>>(),
        ["FABRIC CHECK: PASS", "exit 0"],
        "{name}: standard error and exit status"
    );
    let g: Value = serde_json::from_slice(&fs::read(sc.join("gen.json")).unwrap())
        .unwrap_or_else(|e| panic!("{name}: gen.json is not JSON: {e}"));
    assert!(g["error"].is_null(), "{name}: error {}", g["error"]);
    assert_eq!(
        (g["op"].as_str(), u(&g["size"]), u(&g["qps"]), u(&g["mtu"])),
        (Some(op), size, qps, 1024),
        "{name}: op, size, QP pairs, path MTU"
    );
    assert_eq!(u(&g["completion_errors"]), 0, "{name}");
    assert_eq!(u(&g["messages"]), qps * n, "{name}");
    assert_eq!(
        g["data_check"]["status"], "passed",
        "{name}: {}",
        g["data_check"]
    );
    assert_eq!(u(&g["data_check"]["checked"]), qps * n, "{name}");
    assert_eq!(u(&g["data_check"]["mismatches"]), 0, "{name}");
    let pairs = g["pairs"].as_array().expect("pairs");
    assert_eq!(pairs.len() as u64, qps, "{name}: pairs");
    let distinct = |side: &str| {
        let mut v: Vec<u64> = pairs.iter().map(|p| u(&p[side]["qpn"])).collect();
        v.sort();
        v.dedup();
        v
    };
    let (req_qpns, resp_qpns) = (distinct("requester"), distinct("responder"));
    assert_eq!(
        (req_qpns.len() as u64, resp_qpns.len() as u64),
        (qps, qps),
        "{name}: QPNs {pairs:?}"
    );
    let gf = g["flows"].as_array().unwrap();
    assert_eq!(gf.len() as u64, 2 * qps, "{name}: flows {}", g["flows"]);
    let check = &g["capture"]["check"];
    assert_eq!(check["status"], "pass", "{name}: {check}");
    assert_eq!(check["line"], "FABRIC CHECK: PASS", "{name}");
    assert_eq!(check["flows"].as_array().unwrap().len(), gf.len(), "{name}");
    assert_eq!(u(&check["other_flows"]), 0, "{name}");
    assert_eq!(u(&check["capture_dropped"]), 0, "{name}");
    let a = analyze_json(&sc.join("cable.pcap"));
    for k in ["malformed", "icrc_bad", "icrc_unverifiable"] {
        assert_eq!(u(&a["capture"][k]), 0, "{name}: analyze: {k}");
    }
    assert_eq!(a["verdict"]["status"], "pass", "{name}: {}", a["verdict"]);
    let cable = flows_by_key(&a);
    assert_eq!(
        cable.len(),
        gf.len(),
        "{name}: flows on the cable {:?}",
        cable.keys()
    );
    let mut firsts = Vec::new();
    for (i, e) in gf.iter().enumerate() {
        let req = i % 2 == 0;
        let role = if req { "requester" } else { "responder" };
        let pair = &pairs[i / 2];
        let (to, from) = if req {
            ("responder", "requester")
        } else {
            ("requester", "responder")
        };
        assert_eq!(e["role"], role, "{name}: flow {i} {e}");
        assert_eq!(e["dest_qp"], pair[to]["qpn"], "{name}: flow {i}");
        assert_eq!(e["src"], pair[from]["ip"], "{name}: flow {i}");
        assert_eq!(e["dst"], pair[to]["ip"], "{name}: flow {i}");
        let key = (
            e["src"].as_str().unwrap().to_string(),
            e["dst"].as_str().unwrap().to_string(),
            u(&e["dest_qp"]),
        );
        let what = format!("{name}: flow {key:?} ({role})");
        let c = cable
            .get(&key)
            .unwrap_or_else(|| panic!("{what}: not on the cable"));
        let fc = &check["flows"][i];
        assert_eq!(fc["psn_ok"], true, "{what}: {fc}");
        assert!(fc["capture_flow"].is_u64(), "{what}: {fc}");
        assert_eq!(c["role"], role, "{what}");
        // the pair's PSN range: from the requester's send PSN, one PSN a message
        let first = u(&pair["requester"]["sq_psn"]);
        let last = (first + n - 1) & 0xff_ffff;
        assert_eq!(u(&c["psn"]["last"]), last, "{what}: last PSN on the cable");
        assert_eq!(c["psn"]["first"], e["psn_first"], "{what}: first PSN");
        assert_eq!(c["psn"]["last"], e["psn_last"], "{what}: last PSN");
        for k in ["gap_events", "missing", "retransmitted", "duplicates"] {
            assert_eq!(u(&c["psn"][k]), 0, "{what}: {k}");
        }
        assert_eq!(nak_total(c), 0, "{what}: NAKs");
        assert_eq!(u(&c["rnr_naks"]), 0, "{what}: RNR NAKs");
        let p = u(&c["packets"]);
        assert_eq!(u(&fc["packets"]), p, "{what}: packets in gen's capture");
        let opcode = match (req, resp_op) {
            (true, _) => Some(req_op),
            (false, Some(r)) => Some(r),
            (false, None) => None,
        };
        match opcode {
            Some(o) => {
                let ops = serde_json::json!({ o: n });
                assert_eq!(p, n, "{what}: packets");
                assert_eq!(u(&e["packets"]), n, "{what}: packets gen expected");
                assert_eq!(c["opcodes"], ops, "{what}: opcodes on the cable");
                assert_eq!(e["opcodes"], ops, "{what}: gen's opcodes");
                assert_eq!(fc["opcodes"], ops, "{what}: opcodes in gen's capture");
                // requests from the send PSN; READ responses and atomic ACKs, one for each request
                assert_eq!(
                    u(&c["psn"]["first"]),
                    first,
                    "{what}: first PSN on the cable"
                );
            }
            None => {
                // ACKs, which may be coalesced: at most one a message, the last for the last PSN
                assert!((1..=n).contains(&p), "{what}: {p} ACKs");
                assert_eq!(
                    c["opcodes"],
                    serde_json::json!({ "RC_ACKNOWLEDGE": p }),
                    "{what}: opcodes on the cable"
                );
                assert_eq!(u(&c["acks"]), p, "{what}: ACKs");
            }
        }
        if req {
            assert_eq!(u(&fc["packets_posted"]), n, "{what}: packets posted");
            assert_eq!(c["messages"]["count"], e["messages"], "{what}: messages");
            if matches!(op, "write" | "send") {
                assert_eq!(u(&c["messages"]["count"]), n, "{what}: messages");
                assert_eq!(
                    (u(&c["messages"]["min_size"]), u(&c["messages"]["max_size"])),
                    (size, size),
                    "{what}: message sizes"
                );
            }
            firsts.push(first);
        }
    }
    firsts.sort();
    firsts.dedup();
    assert_eq!(firsts.len() as u64, qps, "{name}: each pair its own PSNs");
    format!(
        "{name}: --op {op} -s {size} -q {qps}, requester QPNs {} -> {}, {} flows on the cable and in gen's \
         check, each with its PSN range, {n} {req_op} a pair, FABRIC CHECK: PASS",
        hexes(&req_qpns),
        hexes(&resp_qpns),
        gf.len()
    )
}

/// One `gen_run` of an atomic op under `--capture eth0` (GEN_TAG = the op): exit 0 with `FABRIC CHECK: PASS`,
/// the data check passed on 32 returned originals, the JSON's wire flows name the atomic op (32 requests) and
/// 32 ATOMIC_ACKNOWLEDGEs, and `cable` (analyze of the host-side capture) has both flows with the same PSNs,
/// packets and opcodes, with no gap, NAK or retransmission. Returns a one-line summary.
fn check_atomic(
    sc: &Path,
    op: &str,
    wire: &str,
    cable: &BTreeMap<(String, String, u64), &Value>,
) -> String {
    let name = format!("gen_atomic {op}");
    let log = fs::read_to_string(sc.join(format!("gen-{op}.log")))
        .unwrap_or_else(|e| panic!("{name}: gen-{op}.log: {e}"));
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(
        lines,
        ["FABRIC CHECK: PASS", "exit 0"],
        "{name}: standard error and exit status"
    );
    let g: Value = serde_json::from_slice(&fs::read(sc.join(format!("gen-{op}.json"))).unwrap())
        .unwrap_or_else(|e| panic!("{name}: gen-{op}.json is not JSON: {e}"));
    assert_eq!(g["op"], op);
    assert!(g["error"].is_null(), "{name}: error {}", g["error"]);
    assert_eq!(u(&g["completion_errors"]), 0);
    assert_eq!(
        g["data_check"]["status"], "passed",
        "{name}: data check {}",
        g["data_check"]
    );
    assert_eq!(u(&g["data_check"]["checked"]), 32);
    assert_eq!(u(&g["data_check"]["mismatches"]), 0);
    assert_eq!(
        (u(&g["messages"]), u(&g["size"]), u(&g["bytes"])),
        (32, 8, 256)
    );
    let check = &g["capture"]["check"];
    assert_eq!(check["status"], "pass", "{name}: {check}");
    assert_eq!(check["line"], "FABRIC CHECK: PASS");
    let gf = g["flows"].as_array().unwrap();
    assert_eq!(gf.len(), 2, "{name}: flows {}", g["flows"]);
    assert_eq!(gf[0]["carries"], format!("{wire} requests"));
    assert_eq!(gf[1]["carries"], "ATOMIC_ACKNOWLEDGEs");
    let want_ops = [
        serde_json::json!({ format!("RC_{wire}"): 32 }),
        serde_json::json!({ "RC_ATOMIC_ACKNOWLEDGE": 32 }),
    ];
    let own = flows_by_key(&g["capture"]["report"]);
    for (i, e) in gf.iter().enumerate() {
        let key = (
            e["src"].as_str().unwrap().to_string(),
            e["dst"].as_str().unwrap().to_string(),
            u(&e["dest_qp"]),
        );
        let what = format!("{name}: flow {key:?} ({})", e["carries"]);
        assert_eq!(e["opcodes"], want_ops[i], "{what}: gen's opcodes");
        assert_eq!(u(&e["packets"]), 32, "{what}");
        assert_eq!(u(&e["messages"]), 0, "{what}");
        assert_eq!(
            u(&e["psn_last"]),
            (u(&e["psn_first"]) + 31) & 0xff_ffff,
            "{what}: one PSN per atomic"
        );
        let fc = &check["flows"][i];
        assert_eq!(fc["psn_ok"], true, "{what}: {fc}");
        assert_eq!(u(&fc["packets"]), 32, "{what}: {fc}");
        for (src, f) in [
            (
                "cable",
                *cable
                    .get(&key)
                    .unwrap_or_else(|| panic!("{what}: not on the cable")),
            ),
            ("gen's capture", own[&key]),
        ] {
            assert_eq!(f["role"], e["role"], "{what}: {src}: role");
            assert_eq!(
                f["psn"]["first"], e["psn_first"],
                "{what}: {src}: first PSN"
            );
            assert_eq!(f["psn"]["last"], e["psn_last"], "{what}: {src}: last PSN");
            assert_eq!(u(&f["packets"]), 32, "{what}: {src}: packets");
            assert_eq!(f["opcodes"], want_ops[i], "{what}: {src}: opcodes");
            for k in ["gap_events", "missing", "retransmitted", "duplicates"] {
                assert_eq!(u(&f["psn"][k]), 0, "{what}: {src}: {k}");
            }
            assert_eq!(nak_total(f), 0, "{what}: {src}: NAKs {}", f["naks"]);
            assert_eq!(u(&f["rnr_naks"]), 0, "{what}: {src}: RNR NAKs");
            if i == 1 {
                assert_eq!(u(&f["atomic_acks"]), 32, "{what}: {src}: atomic ACKs");
            }
        }
    }
    format!(
        "gen_atomic {op}: QPN {:#x} -> {:#x}, PSN {}..{}, 32 RC_{wire} + 32 RC_ATOMIC_ACKNOWLEDGE on the cable \
         and in gen's capture, originals checked, FABRIC CHECK: PASS",
        u(&g["requester"]["qpn"]),
        u(&g["responder"]["qpn"]),
        gf[0]["psn_first"],
        gf[0]["psn_last"]
    )
}

/// The next slice of the generator in the lab: gen_atomic runs 32 FETCH_ADDs and then 32 COMPARE_SWAPs under
/// `--capture eth0`; each must PASS, and the host-side cable capture (analyze --json) must hold both runs'
/// flows (4 in all) with their QPNs, PSN ranges and opcodes, verdict pass. The gen_multi* scenarios: see
/// `check_multi`; gen_ecn: the CE marks counted four ways agree.
#[test]
fn gen_next_slice_in_the_soft_roce_lab() {
    let t0 = Instant::now();
    let (lab_out, lab_secs) = run_lab(
        "lab-gen-next",
        &[
            "gen_atomic",
            "gen_multi",
            "gen_multi_send",
            "gen_multi_read",
            "gen_multi_atomic",
            "gen_ecn",
            "gen_source_port",
            "gen_source_sweep",
            "gen_depth1",
            "gen_tclass",
        ],
    );
    let mut summary = Vec::new();

    let sc = lab_out.join("gen_atomic");
    let a = analyze_json(&sc.join("cable.pcap"));
    for k in ["malformed", "icrc_bad", "icrc_unverifiable"] {
        assert_eq!(u(&a["capture"][k]), 0, "gen_atomic: analyze: {k}");
    }
    assert_eq!(
        a["verdict"]["status"], "pass",
        "gen_atomic: {}",
        a["verdict"]
    );
    let cable = flows_by_key(&a);
    assert_eq!(
        cable.len(),
        4,
        "gen_atomic: two runs of two flows: {:?}",
        cable.keys()
    );
    summary.push(check_atomic(&sc, "fetch-add", "FETCH_ADD", &cable));
    summary.push(check_atomic(&sc, "cmp-swap", "COMPARE_SWAP", &cable));

    // --- -q: several QP pairs at once, each as posted (1024-byte WRITEs, SENDs, READs and 8-byte FETCH_ADDs:
    // one packet a message at path MTU 1024)
    summary.push(check_multi(
        &lab_out,
        "gen_multi",
        "write",
        4,
        1024,
        "RC_WRITE_ONLY",
        None,
    ));
    summary.push(check_multi(
        &lab_out,
        "gen_multi_send",
        "send",
        3,
        1024,
        "RC_SEND_ONLY",
        None,
    ));
    summary.push(check_multi(
        &lab_out,
        "gen_multi_read",
        "read",
        3,
        1024,
        "RC_READ_REQUEST",
        Some("RC_READ_RESPONSE_ONLY"),
    ));
    summary.push(check_multi(
        &lab_out,
        "gen_multi_atomic",
        "fetch-add",
        3,
        8,
        "RC_FETCH_ADD",
        Some("RC_ATOMIC_ACKNOWLEDGE"),
    ));

    // --- ECN: --tclass 2 (ECT(0)) through netem loss 5% ecn: the CE marks counted three ways agree
    let sc = lab_out.join("gen_ecn");
    let log = fs::read_to_string(sc.join("gen.log")).expect("gen_ecn: gen.log");
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(
        lines.len(),
        2,
        "gen_ecn: the FABRIC CHECK line, the exit status:\n{log}"
    );
    assert_eq!(
        lines[1], "exit 0",
        "gen_ecn: CE marks do not fail the check:\n{log}"
    );
    let g: Value = serde_json::from_slice(&fs::read(sc.join("gen.json")).unwrap())
        .expect("gen_ecn: gen.json is JSON");
    assert!(g["error"].is_null(), "gen_ecn: error {}", g["error"]);
    assert_eq!(u(&g["traffic_class"]), 2);
    assert_eq!(
        g["data_check"]["status"], "passed",
        "gen_ecn: {}",
        g["data_check"]
    );
    assert_eq!(u(&g["data_check"]["checked"]), 64);
    let check = &g["capture"]["check"];
    assert_eq!(check["status"], "pass", "gen_ecn: {check}");
    let gen_ce = u(&check["ce"]);
    let ce_sum = |r: &Value| -> u64 {
        r["flows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| u(&f["ecn"]["ce"]))
            .sum()
    };
    let own_ce = ce_sum(&g["capture"]["report"]);
    let a = analyze_json(&sc.join("cable.pcap"));
    let cable_ce = ce_sum(&a);
    let tshark_ce = tshark_fields(
        &sc.join("cable.pcap"),
        "ip.dsfield.ecn == 3",
        &["frame.number"],
    )
    .lines()
    .filter(|l| !l.trim().is_empty())
    .count() as u64;
    assert!(
        gen_ce > 0,
        "gen_ecn: no CE mark in 256 ECT packets at 5%: {check}"
    );
    assert_eq!(
        (gen_ce, own_ce, cable_ce, tshark_ce),
        (gen_ce, gen_ce, gen_ce, gen_ce),
        "gen_ecn: CE marks (gen's check, gen's capture, analyze of the cable, tshark of the cable)"
    );
    assert_eq!(
        lines[0],
        format!(
            "FABRIC CHECK: PASS (congestion signals, not failing: {gen_ce} CE-marked packets, 0 CNPs)"
        ),
        "gen_ecn"
    );
    assert_eq!(
        a["verdict"]["status"], "pass",
        "gen_ecn: cable verdict {}",
        a["verdict"]
    );
    for f in a["flows"].as_array().unwrap() {
        let e = &f["ecn"];
        assert_eq!(
            u(&e["not_ect"]),
            0,
            "gen_ecn: every frame ECN-capable: flow {}",
            f["id"]
        );
        assert_eq!(
            u(&e["ect0"]) + u(&e["ce"]),
            u(&f["packets"]),
            "gen_ecn: ECT(0) or CE: flow {} {e}",
            f["id"]
        );
        if f["role"] == "responder" {
            assert_eq!(
                u(&e["ce"]),
                0,
                "gen_ecn: netem marks only eth0's egress (requests)"
            );
        }
    }
    summary.push(check_source_ports(&lab_out));
    summary.push(check_depth(&lab_out));
    summary.push(check_tclass(&lab_out.join("gen_tclass")));
    summary.push(format!(
        "gen_ecn: --tclass 2, {gen_ce} CE marks in gen's check = gen's capture = analyze of the cable = tshark \
         (ip.dsfield.ecn == 3); {}",
        lines[0]
    ));
    eprintln!(
        "{}\nlab setup + guest run {lab_secs:.1} s, total {:.1} s",
        summary.join("\n"),
        t0.elapsed().as_secs_f64()
    );
}

/// tshark's `-T fields` of `fields` for the frames of `cable` that `filter` passes, one line a frame.
fn tshark_fields(cable: &Path, filter: &str, fields: &[&str]) -> String {
    let mut c = Command::new("tshark");
    c.args(["-n", "-r"])
        .arg(cable)
        .args(["-Y", filter, "-T", "fields"]);
    for f in fields {
        c.args(["-e", f]);
    }
    let o = c.output().expect("run tshark");
    assert!(
        o.status.success(),
        "tshark: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// NCCL 2.20.5's lines for two ranks whose QPs are gen's pairs (rank 0 on 10.0.0.1 sends with the requesters,
/// `set_ece` naming the responders; rank 1 on 10.0.0.2 logs no QP, as a 2.20 receiver does not), each rank's
/// `NCCL_IB_TC` as given. The GID as NCCL prints it: the two halves read as little-endian integers.
fn nccl_logs(dir: &Path, g: &Value, tc: [u8; 2]) -> [std::path::PathBuf; 2] {
    let gid = |ip: &str| {
        let a: Vec<u8> = ip.split('.').map(|b| b.parse().unwrap()).collect();
        format!(
            "0/{:X}",
            u64::from_le_bytes([0, 0, 0xff, 0xff, a[0], a[1], a[2], a[3]])
        )
    };
    let mut a = format!(
        "NCCL version 2.20.5+cuda12.4\n\
         a:10:10 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1 commId 0x7 - Init START\n\
         a:10:10 [0] NCCL INFO NET/IB : Using [0]rxe0:1/RoCE [RO]; OOB lo:127.0.0.1<0>\n\
         a:10:10 [0] NCCL INFO NCCL_IB_TC set by environment to {}.\n",
        tc[0]
    );
    for (c, p) in g["pairs"].as_array().unwrap().iter().enumerate() {
        let (req, resp) = (&p["requester"], &p["responder"]);
        a.push_str(&format!(
            "a:10:10 [0] NCCL INFO Channel {c:02}/0 : 0[0] -> 1[0] [send] via NET/IB/0\n\
             a:10:11 [0] NCCL INFO NET/IB: NCCL Dev 0 IbDev 0 Port 1 qpn {} mtu 3 query_ece={{supported=0, \
             vendor_id=0x0, options=0x0, comp_mask=0x0}} GID 1 ({}) fifoRkey=0x1 fifoLkey=0x1\n\
             a:10:11 [0] NCCL INFO NET/IB: IbDev 0 Port 1 qpn {} set_ece={{supported=0, vendor_id=0x0, \
             options=0x0, comp_mask=0x0}}\n",
            u(&req["qpn"]),
            gid(req["ip"].as_str().unwrap()),
            u(&resp["qpn"])
        ));
    }
    let b = format!(
        "b:20:20 [0] NCCL INFO comm 0x1 rank 1 nranks 2 cudaDev 0 nvmlDev 0 busId 1 commId 0x7 - Init START\n\
         b:20:20 [0] NCCL INFO NCCL_IB_TC set by environment to {}.\n",
        tc[1]
    );
    fs::create_dir_all(dir).unwrap();
    let paths = [dir.join("rank0.log"), dir.join("rank1.log")];
    fs::write(&paths[0], a).unwrap();
    fs::write(&paths[1], b).unwrap();
    paths
}

/// gen_tclass (`--tclass 106`, two QP pairs): tshark sees DSCP 26 (ECN ECT(0)) on every frame both ways; held
/// against NCCL logs of the run, every flow is rank 0's (its data) or comes back to it (rank 1's ACKs), none
/// is a `tc_mismatch` with both ranks set to 106, and with rank 1 set to 0 exactly its two ACK flows are.
fn check_tclass(sc: &Path) -> String {
    let g: Value = serde_json::from_slice(&fs::read(sc.join("gen.json")).unwrap())
        .expect("gen_tclass: gen.json");
    assert!(g["error"].is_null(), "gen_tclass: {}", g["error"]);
    assert_eq!(u(&g["traffic_class"]), 106);
    let cable = sc.join("cable.pcap");
    let dscp = tshark_fields(&cable, "infiniband", &["ip.dsfield.dscp", "ip.dsfield.ecn"]);
    let frames = dscp.lines().count();
    assert!(frames >= 64, "gen_tclass: 2 x 16 WRITEs and their ACKs");
    assert!(
        dscp.lines().all(|l| l == "26\t2"),
        "gen_tclass: DSCP 26, ECT(0) on every frame:\n{dscp}"
    );
    let dir = sc.join("nccl");
    let mismatches = |tc: [u8; 2]| -> (Value, Vec<(String, u64)>) {
        let logs = nccl_logs(&dir, &g, tc);
        let a = analyze_json_with(
            &cable,
            &[
                "--expect",
                logs[0].to_str().unwrap(),
                "--expect",
                logs[1].to_str().unwrap(),
            ],
        );
        let flows = a["flows"].as_array().unwrap().clone();
        let told = a["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["kind"] == "tc_mismatch")
            .map(|e| {
                let f = flows.iter().find(|f| f["id"] == e["flow"]).unwrap();
                (f["src"].as_str().unwrap().to_string(), u(&f["dest_qp"]))
            })
            .collect();
        (a, told)
    };
    let (a, told) = mismatches([106, 106]);
    assert_eq!(told, vec![], "gen_tclass: both ranks set 106");
    let pairs = g["pairs"].as_array().unwrap();
    for p in pairs {
        let (req, resp) = (u(&p["requester"]["qpn"]), u(&p["responder"]["qpn"]));
        for (src, qp, way) in [("10.0.0.1", resp, "from"), ("10.0.0.2", req, "to")] {
            let f = a["flows"]
                .as_array()
                .unwrap()
                .iter()
                .find(|f| f["src"] == src && u(&f["dest_qp"]) == qp)
                .unwrap_or_else(|| panic!("gen_tclass: no flow {src} to QP {qp}"));
            assert_eq!(
                (&f["job"]["rank"], &f["job"]["way"], u(&f["job"]["qpn"])),
                (&Value::from(0), &Value::from(way), req),
                "gen_tclass: {src} to QP {qp}"
            );
        }
    }
    let (_, mut told) = mismatches([106, 0]);
    told.sort();
    let mut acks: Vec<(String, u64)> = pairs
        .iter()
        .map(|p| ("10.0.0.2".to_string(), u(&p["requester"]["qpn"])))
        .collect();
    acks.sort();
    assert_eq!(told, acks, "gen_tclass: rank 1 set 0: its ACK flows");
    format!(
        "gen_tclass: --tclass 106, {frames} frames at DSCP 26 (tshark); NCCL logs of the run: every flow rank \
         0's, no tc_mismatch at 106/106, the {} ACK flows at 106/0",
        acks.len()
    )
}

/// The distinct UDP source ports of the RoCE frames of `cable`, by direction (source address), as tshark reads
/// them.
fn tshark_source_ports(cable: &Path) -> BTreeMap<String, std::collections::BTreeSet<u64>> {
    let o = tshark_fields(cable, "udp.dstport == 4791", &["ip.src", "udp.srcport"]);
    let mut by: BTreeMap<String, std::collections::BTreeSet<u64>> = BTreeMap::new();
    for l in o.lines() {
        if let Some((src, port)) = l.split_once('\t') {
            by.entry(src.to_string())
                .or_default()
                .insert(port.parse().unwrap());
        }
    }
    by
}

/// gen_source_port (`-q 8 --source-port 49152`) and gen_source_sweep (`--source-port 49200-49207`): tshark
/// reads the ports asked for on the cable, in both directions (rxe's responder QP takes the same label);
/// `analyze` of the cable gives one `low_entropy` per direction for the first (8 QPs, 1 port), none for the
/// sweep, whose pairs have 8 ports each; gen_multi's 4 QPs on rxe's own ports (a hash of the two QPNs) none.
fn check_source_ports(lab_out: &Path) -> String {
    let low = |a: &Value| -> Vec<Value> {
        a["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["kind"] == "low_entropy")
            .map(|e| e["detail"].clone())
            .collect()
    };
    let one = lab_out.join("gen_source_port");
    let log = fs::read_to_string(one.join("gen.log")).expect("gen_source_port: gen.log");
    assert!(log.ends_with("exit 0\n"), "gen_source_port:\n{log}");
    let ports = tshark_source_ports(&one.join("cable.pcap"));
    let only = std::collections::BTreeSet::from([49152]);
    assert_eq!(ports.len(), 2, "gen_source_port: two directions {ports:?}");
    assert!(
        ports.values().all(|p| *p == only),
        "gen_source_port: {ports:?}"
    );
    let a = analyze_json(&one.join("cable.pcap"));
    let events = low(&a);
    assert_eq!(events.len(), 2, "gen_source_port: {events:?}");
    for d in &events {
        assert_eq!(
            (u(&d["qps"]), u(&d["source_ports"])),
            (8, 1),
            "gen_source_port: {d}"
        );
        assert_eq!(d["imbalance"]["crc32"], 8.0, "gen_source_port: {d}");
    }
    let sweep = lab_out.join("gen_source_sweep");
    let log = fs::read_to_string(sweep.join("gen.log")).expect("gen_source_sweep: gen.log");
    assert!(log.ends_with("exit 0\n"), "gen_source_sweep:\n{log}");
    let ports = tshark_source_ports(&sweep.join("cable.pcap"));
    let swept: std::collections::BTreeSet<u64> = (49200..=49207).collect();
    assert_eq!(ports.len(), 2, "gen_source_sweep: two directions {ports:?}");
    assert!(
        ports.values().all(|p| *p == swept),
        "gen_source_sweep: {ports:?}"
    );
    let a = analyze_json(&sweep.join("cable.pcap"));
    assert_eq!(low(&a), Vec::<Value>::new(), "gen_source_sweep");
    for p in a["ecmp"]["pairs"].as_array().unwrap() {
        assert_eq!(
            (u(&p["qps"]), u(&p["source_ports"])),
            (8, 8),
            "gen_source_sweep: {p}"
        );
    }
    let multi = analyze_json(&lab_out.join("gen_multi").join("cable.pcap"));
    assert_eq!(
        low(&multi),
        Vec::<Value>::new(),
        "gen_multi: rxe's own ports"
    );
    "gen_source_port: 8 QPs on 49152 both ways (tshark), 2 low_entropy; gen_source_sweep: 49200-49207 both \
     ways, none; gen_multi: none"
        .to_string()
}

/// The most PSNs each WRITE requester of `cable` had outstanding, by its destination QP, as tshark's
/// fields show: from the PSN after the last one an ACK named (the ACK matched to the flow whose WRITEs
/// carried that PSN), or from its first WRITE's before any, to the highest WRITE PSN sent. A resend adds
/// none.
fn tshark_windows(cable: &Path) -> BTreeMap<u64, i64> {
    let fields = [
        "infiniband.bth.opcode",
        "infiniband.bth.destqp",
        "infiniband.bth.psn",
    ];
    let o = tshark_fields(cable, "infiniband", &fields);
    // PSNs are 24 bits: `a` at or after `b` by less than half the space.
    let ahead = |a: i64, b: i64| (a - b).rem_euclid(1 << 24);
    let mut psn_flow: BTreeMap<i64, u64> = BTreeMap::new();
    let mut first: BTreeMap<u64, i64> = BTreeMap::new();
    let (mut highest, mut acked, mut most) = (
        BTreeMap::<u64, i64>::new(),
        BTreeMap::<u64, i64>::new(),
        BTreeMap::<u64, i64>::new(),
    );
    for l in o.lines() {
        let f: Vec<&str> = l.split('\t').collect();
        let (Some(op), Some(qp), Some(psn)) = (f.first(), f.get(1), f.get(2)) else {
            continue;
        };
        let qp = u64::from_str_radix(qp.trim_start_matches("0x"), 16).unwrap();
        let psn: i64 = psn.parse().unwrap();
        // 10: RDMA WRITE Only, 17: Acknowledge.
        let flow = match *op {
            "10" => {
                psn_flow.insert(psn, qp);
                first.entry(qp).or_insert(psn);
                let h = highest.entry(qp).or_insert(psn);
                if ahead(psn, *h) < 1 << 23 {
                    *h = psn;
                }
                qp
            }
            "17" => match psn_flow.get(&psn) {
                Some(&flow) => {
                    acked.insert(flow, psn);
                    flow
                }
                None => continue,
            },
            _ => continue,
        };
        let h = highest[&flow];
        let out = acked
            .get(&flow)
            .map_or_else(|| ahead(h, first[&flow]) + 1, |a| ahead(h, *a));
        let m = most.entry(flow).or_insert(0);
        *m = (*m).max(out);
    }
    most
}

/// gen_depth1 (`--depth 1`): tshark shows one PSN outstanding at most (no WRITE of a new PSN before the ACK
/// of the one before; rxe's timer may resend one in a slow guest, which adds none), and the requester's
/// `life.window` is 1; gen_multi's four requesters' windows are what tshark shows of each (a slow guest may
/// post so slowly that each is answered before the next). The shares add up to 1.
fn check_depth(lab_out: &Path) -> String {
    let windows = |a: &Value| -> BTreeMap<u64, (u64, Value)> {
        a["flows"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["role"] == "requester")
            .map(|f| {
                (
                    u(&f["dest_qp"]),
                    (u(&f["life"]["window"]), f["life"].clone()),
                )
            })
            .collect()
    };
    let mut summary = Vec::new();
    for name in ["gen_depth1", "gen_multi"] {
        let cable = lab_out.join(name).join("cable.pcap");
        let want = tshark_windows(&cable);
        let got = windows(&analyze_json(&cable));
        assert_eq!(
            got.iter()
                .map(|(qp, (w, _))| (*qp, *w as i64))
                .collect::<BTreeMap<_, _>>(),
            want,
            "{name}: each requester's life.window (by destination QP), and tshark's: {got:?}"
        );
        for (qp, (_, life)) in &got {
            let sum: f64 = life["shares"]
                .as_object()
                .unwrap()
                .values()
                .map(|v| v.as_f64().unwrap())
                .sum();
            assert!(
                (sum - 1.0).abs() < 1e-3,
                "{name}: QP {qp:#x}: shares {life}"
            );
        }
        summary.push(format!("{name}: windows {want:?} (tshark = life.window)"));
    }
    let depth1 = tshark_windows(&lab_out.join("gen_depth1").join("cable.pcap"));
    assert_eq!(
        depth1.values().collect::<Vec<_>>(),
        [&1],
        "gen_depth1: one requester, one PSN outstanding"
    );
    summary.join("; ")
}

/// perftest's figure: BW average[MB/sec] (perftest's MB is 2^20 bytes) from its result line "#bytes
/// #iterations BW-peak BW-average MsgRate", for `bytes` x `iters`.
fn perftest_bw_average_mib(log: &str, bytes: u64, iters: u64) -> Option<f64> {
    log.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.len() == 5
            && f[0].parse::<u64>().ok() == Some(bytes)
            && f[1].parse::<u64>().ok() == Some(iters))
        .then(|| f[3].parse::<f64>().ok())
        .flatten()
    })
}

#[test]
fn gen_vs_perftest_benchmark_and_pacing_in_the_soft_roce_lab() {
    let t0 = Instant::now();
    let (lab_out, lab_secs) = run_lab(
        "lab-gen-bench",
        &["gen_vs_perftest", "gen_paced", "gen_paced_check"],
    );
    let read_gen = |sc: &Path, what: &str| -> Value {
        let log = fs::read_to_string(sc.join("gen.log")).unwrap_or_default();
        assert_eq!(
            log.lines().last(),
            Some("exit 0"),
            "{what}: gen's standard error and exit status:\n{log}"
        );
        let g: Value = serde_json::from_slice(&fs::read(sc.join("gen.json")).unwrap())
            .unwrap_or_else(|e| panic!("{what}: gen.json is not JSON: {e}"));
        assert!(g["error"].is_null(), "{what}: error {}", g["error"]);
        assert_eq!(u(&g["completion_errors"]), 0, "{what}");
        assert_eq!(
            g["data_check"]["status"], "passed",
            "{what}: {}",
            g["data_check"]
        );
        assert_eq!(
            u(&g["data_check"]["checked"]),
            u(&g["messages"]),
            "{what}: every message checked"
        );
        g
    };

    // --- issue scenario 6, a benchmark: both complete, the figures are reported, the ratio is not judged
    let sc = lab_out.join("gen_vs_perftest");
    let client = fs::read_to_string(sc.join("perftest-client.log"))
        .expect("gen_vs_perftest: perftest-client.log");
    let pt_mib = perftest_bw_average_mib(&client, 65536, 200).unwrap_or_else(|| {
        panic!("gen_vs_perftest: no ib_write_bw result line for 65536 x 200:\n{client}")
    });
    let pt_depth = client
        .lines()
        .find_map(|l| l.trim().strip_prefix("TX depth"))
        .map(|r| r.trim_start_matches([' ', ':']).trim().to_string())
        .unwrap_or_else(|| "?".to_string());
    let pt_gbps = pt_mib * 1048576.0 * 8.0 / 1e9;
    let g = read_gen(&sc, "gen_vs_perftest");
    assert_eq!(g["stopped_by"], "iters", "gen_vs_perftest");
    assert_eq!(u(&g["messages"]), 200, "gen_vs_perftest");
    assert_eq!(u(&g["depth"]), 128, "gen_vs_perftest");
    let gen_gbps = g["gbps"].as_f64().expect("gen_vs_perftest: gbps");
    let bench = format!(
        "gen_vs_perftest: 65536 B x 200 WRITEs rxe0 -> rxe1: ib_write_bw -F -x 1 -u 17 (TX depth {pt_depth}) \
         {pt_mib:.2} MiB/s = {pt_gbps:.3} Gb/s; rocescope gen loopback --depth 128 {gen_gbps:.3} Gb/s ({:.0} \
         messages/s, data check passed, latency p50 {:.0} us); gen/perftest = {:.2}",
        g["messages_per_sec"].as_f64().unwrap_or(0.0),
        g["latency_us"]["p50"].as_f64().unwrap_or(0.0),
        gen_gbps / pt_gbps
    );

    // --- --duration 1 --rate 500: stopped by the time, never faster than the rate while posting
    let sc = lab_out.join("gen_paced");
    let g = read_gen(&sc, "gen_paced");
    assert_eq!(g["stopped_by"], "duration", "gen_paced");
    assert_eq!(g["duration"].as_f64(), Some(1.0), "gen_paced");
    let posting = g["posting_seconds"]
        .as_f64()
        .expect("gen_paced: posting_seconds");
    assert!(
        posting >= 1.0,
        "gen_paced: posted for {posting} s, --duration 1"
    );
    let n = u(&g["messages"]);
    assert!(n > 0, "gen_paced: no message");
    assert_eq!(u(&g["iterations"]), n, "gen_paced: the messages posted");
    // message k is posted no earlier than k / 500 s after the start
    assert!(
        n as f64 <= 1.0 + 500.0 * posting + 1e-6,
        "gen_paced: {n} messages posted in {posting} s at --rate 500"
    );
    let rate = &g["rate"];
    assert_eq!(
        rate["target_messages_per_sec"].as_f64(),
        Some(500.0),
        "gen_paced: {rate}"
    );
    let flows = g["flows"].as_array().expect("gen_paced: flows");
    assert_eq!(
        u(&flows[0]["messages"]),
        n,
        "gen_paced: the requester flow has the messages posted"
    );
    let paced = format!(
        "gen_paced: --duration 1 --rate 500 (4096 B WRITEs): stopped by duration after {posting:.3} s of \
         posting, {n} messages, achieved {:.0} messages/s ({:.4} Gb/s), data check passed",
        rate["achieved_messages_per_sec"].as_f64().unwrap_or(0.0),
        rate["achieved_gbps"].as_f64().unwrap_or(0.0)
    );
    // --- --duration 1 --rate 200 under --capture eth0: PASS, the messages gen reports are the WRITEs on the
    // cable, and the posting is paced (loosely: a pacing check, not a timing test)
    let name = "gen_paced_check";
    let sc = lab_out.join(name);
    let g = read_gen(&sc, name);
    let log = fs::read_to_string(sc.join("gen.log")).unwrap();
    assert_eq!(
        log.lines().collect::<Vec<_>>(),
        ["FABRIC CHECK: PASS", "exit 0"],
        "{name}: standard error and exit status"
    );
    assert_eq!(g["stopped_by"], "duration", "{name}");
    assert_eq!((u(&g["size"]), u(&g["mtu"])), (4096, 1024), "{name}");
    let target = 200.0;
    let rate = &g["rate"];
    assert_eq!(
        rate["target_messages_per_sec"].as_f64(),
        Some(target),
        "{name}: {rate}"
    );
    let n = u(&g["messages"]);
    assert!(n >= 2, "{name}: {n} messages");
    assert_eq!(u(&g["iterations"]), n, "{name}: the messages posted");
    let check = &g["capture"]["check"];
    assert_eq!(check["status"], "pass", "{name}: {check}");
    let a = analyze_json(&sc.join("cable.pcap"));
    assert_eq!(a["verdict"]["status"], "pass", "{name}: {}", a["verdict"]);
    let cable = flows_by_key(&a);
    let gf = g["flows"].as_array().unwrap();
    assert_eq!(
        (cable.len(), gf.len()),
        (2, 2),
        "{name}: flows {:?}",
        cable.keys()
    );
    // 4096 bytes at path MTU 1024: 4 packets a message, one PSN each
    let (mut req_first, mut req_last) = (0.0, 0.0);
    for (i, e) in gf.iter().enumerate() {
        let key = (
            e["src"].as_str().unwrap().to_string(),
            e["dst"].as_str().unwrap().to_string(),
            u(&e["dest_qp"]),
        );
        let what = format!("{name}: flow {key:?} ({})", e["role"]);
        let c = cable
            .get(&key)
            .unwrap_or_else(|| panic!("{what}: not on the cable"));
        let fc = &check["flows"][i];
        assert_eq!(fc["psn_ok"], true, "{what}: {fc}");
        assert_eq!(c["role"], e["role"], "{what}");
        assert_eq!(c["psn"]["first"], e["psn_first"], "{what}: first PSN");
        assert_eq!(c["psn"]["last"], e["psn_last"], "{what}: last PSN");
        for k in ["gap_events", "missing", "retransmitted", "duplicates"] {
            assert_eq!(u(&c["psn"][k]), 0, "{what}: {k}");
        }
        assert_eq!(nak_total(c), 0, "{what}: NAKs");
        assert_eq!(
            u(&fc["packets"]),
            u(&c["packets"]),
            "{what}: packets in gen's capture"
        );
        if i == 0 {
            let first = u(&g["requester"]["sq_psn"]);
            assert_eq!(u(&c["psn"]["first"]), first, "{what}: the send PSN");
            assert_eq!(
                u(&c["psn"]["last"]),
                (first + 4 * n - 1) & 0xff_ffff,
                "{what}: {n} messages of 4 PSNs"
            );
            assert_eq!(
                u(&c["messages"]["count"]),
                n,
                "{what}: messages on the cable"
            );
            assert_eq!(u(&c["messages"]["max_size"]), 4096, "{what}");
            assert_eq!(u(&c["packets"]), 4 * n, "{what}: packets on the cable");
            assert_eq!(u(&fc["packets_posted"]), 4 * n, "{what}: packets posted");
            assert_eq!(
                c["opcodes"],
                serde_json::json!({ "RC_WRITE_FIRST": n, "RC_WRITE_MIDDLE": 2 * n, "RC_WRITE_LAST": n }),
                "{what}: opcodes"
            );
            req_first = c["first_time"].as_f64().unwrap();
            req_last = c["last_time"].as_f64().unwrap();
        } else {
            assert!(
                (1..=n).contains(&u(&c["packets"])),
                "{what}: ACKs {}",
                c["packets"]
            );
        }
    }
    // Message k is posted no earlier than k / rate after the start (exact, whatever the speed): at most
    // 1 + rate x posting time messages, and the achieved rate (messages over the time to the last completion,
    // which follows the last post) at most rate x n / (n - 1). The floor is loose, half the target: the
    // schedule catches up after a stall, so only a guest starved for about half the second falls below it.
    let posting = g["posting_seconds"].as_f64().unwrap();
    assert!(
        n as f64 <= 1.0 + target * posting + 1e-6,
        "{name}: {n} messages posted in {posting} s at --rate {target}"
    );
    let achieved = rate["achieved_messages_per_sec"].as_f64().unwrap();
    let nf = n as f64;
    assert!(
        achieved <= target * nf / (nf - 1.0) + 1e-6 && achieved >= target / 2.0,
        "{name}: achieved {achieved} messages/s, target {target}, {n} messages"
    );
    // On the wire (host clock): the first to the last WRITE spans about (n - 1) / rate. Loose (0.5x to 1.5x
    // the target), as the guest's send path may delay one end by a few tens of ms.
    let wire = (nf - 1.0) / (req_last - req_first);
    assert!(
        (target / 2.0..=target * 1.5).contains(&wire),
        "{name}: {n} WRITEs over {:.3} s on the cable: {wire:.1} messages/s, target {target}",
        req_last - req_first
    );
    let paced_check = format!(
        "{name}: --duration 1 --rate 200 --capture eth0: FABRIC CHECK: PASS, {n} messages = {n} WRITE messages \
         on the cable (PSN {}..{}), achieved {achieved:.1} messages/s (gen), {wire:.1} messages/s (cable)",
        gf[0]["psn_first"], gf[0]["psn_last"]
    );
    eprintln!(
        "{bench}\n{paced}\n{paced_check}\nlab setup + guest run {lab_secs:.1} s, total {:.1} s",
        t0.elapsed().as_secs_f64()
    );
}
