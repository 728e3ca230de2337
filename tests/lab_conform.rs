//! `rocescope conform` on real kernel RoCE: the Soft-RoCE lab (lab/README.md) runs `info`, then `conform`
//! (`rocescope conform -d rxe0 --peer-device rxe1 -i eth0 --json` in the guest: each scenario the generator's
//! traffic through the injector's rules, captured on eth0). Held against tshark's reading of each scenario's
//! capture and the injection log, not against rocescope's analysis:
//! - every action is where it must be: a dropped packet's IPv4 identification nowhere in the capture, the
//!   CE-marked one there with ECN 3, the corrupted one there;
//! - each verdict's evidence frames are what tshark shows: the NAK a PSN sequence error (AETH 0x60) naming the
//!   PSN the log dropped, the resend that PSN from the requester, the READ asked again a READ request at or
//!   before the missing response's PSN, the covering ACK an ACK for a later PSN;
//! - rxe's verdicts: every loss and the bad ICRC pass (rxe NAKs once and goes back, or its timer goes back
//!   first in a slow guest: both keep the rule), the CE mark is "not supported" (rxe sends no CNP: none in
//!   any capture), and the control (the NAK dropped too) is caught.
use std::fs;

use serde_json::Value;

mod lab_support;
use lab_support::{CableFrame, cable, run_lab};

const NAK_PSN_SEQUENCE_ERROR: u64 = 0x60;
const ACKNOWLEDGE: u64 = 17;
const READ_REQUEST: u64 = 12;

/// PSN `a` is `b` or after it (serial arithmetic, 24 bits).
fn at_or_after(a: u64, b: u64) -> bool {
    a.wrapping_sub(b) & 0xff_ffff < 0x80_0000
}

#[test]
fn rxe_keeps_the_rules_and_the_control_is_caught() {
    let (lab_out, _) = run_lab("lab-conform", &["info", "conform"]);
    suite_held(&lab_out.join("conform"), &OUTPUT_PATH);
}

/// The same suite with the faults made by a bump in the wire (lab scenario conform_bump: `rocescope conform -d
/// rxe_h1 --peer-device rxe_h2 --bridge bp1,bp2`, the two hosts' veths joined only by the bump), captured as
/// the bump sends on: the same verdicts, held to tshark and the counters the same way. Then
/// write_request_lost and rnr_retry 3 times each (`--repeat 3`): 6 runs, each its own files (NAME.K.pcap),
/// each rnr_retry run held to tshark as above, and the table's line per scenario: 3 runs, 3 passes, each
/// latency's median (the middle of the three) and maximum those of the runs.
#[test]
fn through_a_bump_in_the_wire_the_verdicts_are_the_same() {
    let (lab_out, _) = run_lab("lab-conform-bump", &["info", "conform_bump"]);
    let dir = lab_out.join("conform_bump");
    let bench = Bench {
        requester: ("10.0.1.1", "rxe_h1"),
        responder: ("10.0.1.2", "rxe_h2"),
        bridge: true,
    };
    suite_held(&dir, &bench);
    let three: Value =
        serde_json::from_slice(&fs::read(dir.join("conform3.json")).expect("conform3.json"))
            .unwrap();
    assert_eq!(
        (&three["device"], &three["peer_device"], &three["repeat"]),
        (&"rxe_h1".into(), &"rxe_h2".into(), &3.into()),
        "{three:#}"
    );
    assert_eq!(three["bridge"], serde_json::json!(["bp1", "bp2"]));
    let rows = three["scenarios"].as_array().unwrap();
    let runs: Vec<(&str, u64)> = rows
        .iter()
        .map(|r| (r["scenario"].as_str().unwrap(), r["run"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        runs,
        [
            ("write_request_lost", 1),
            ("write_request_lost", 2),
            ("write_request_lost", 3),
            ("rnr_retry", 1),
            ("rnr_retry", 2),
            ("rnr_retry", 3),
        ]
    );
    for r in rows {
        let file = format!("{}.{}.pcap", r["scenario"].as_str().unwrap(), r["run"]);
        assert!(r["capture"].as_str().unwrap().ends_with(&file), "{r:#}");
        assert_eq!(r["outcome"], "pass", "{r:#}");
        if r["scenario"] == "rnr_retry" {
            rnr_retry(r, &cable(&dir.join(&file)), &bench);
        }
    }
    let table = three["table"].as_array().unwrap();
    assert_eq!(table.len(), 2, "{three:#}");
    for line in table {
        let name = line["scenario"].as_str().unwrap();
        assert_eq!(
            (&line["outcome"], &line["runs"], &line["pass"]),
            (&"pass".into(), &3.into(), &3.into()),
            "{line:#}"
        );
        let of: Vec<&Value> = rows.iter().filter(|r| r["scenario"] == name).collect();
        for (latency, spread) in line["latencies_us"].as_object().unwrap() {
            let mut v: Vec<f64> = of
                .iter()
                .map(|r| r["latencies_us"][latency].as_f64().unwrap())
                .collect();
            v.sort_by(f64::total_cmp);
            assert_eq!(
                (
                    spread["p50"].as_f64(),
                    spread["max"].as_f64(),
                    spread["n"].as_u64()
                ),
                (Some(v[1]), Some(v[2]), Some(3)),
                "{name} {latency}"
            );
        }
    }
}

/// Where the suite ran: the requester's and the responder's address and RDMA device, and whether the faults
/// were a bump's.
struct Bench {
    requester: (&'static str, &'static str),
    responder: (&'static str, &'static str),
    bridge: bool,
}

/// The lab's rxe0 on eth0 and rxe1 on eth1, the injector on the output hook.
const OUTPUT_PATH: Bench = Bench {
    requester: ("10.0.0.1", "rxe0"),
    responder: ("10.0.0.2", "rxe1"),
    bridge: false,
};

/// The suite's report in `dir` held to tshark's reading of each scenario's capture and the injection log;
/// and to the two NICs' counters beside each verdict.
fn suite_held(dir: &std::path::Path, bench: &Bench) {
    let ((_, req_dev), (responder, resp_dev)) = (bench.requester, bench.responder);
    let report: Value =
        serde_json::from_slice(&fs::read(dir.join("conform.json")).expect("conform.json")).unwrap();
    let rows = report["scenarios"].as_array().unwrap();
    let outcomes: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| {
            (
                r["scenario"].as_str().unwrap(),
                r["outcome"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        outcomes,
        [
            ("write_request_lost", "pass"),
            ("send_request_lost", "pass"),
            ("read_request_lost", "pass"),
            ("read_response_lost", "pass"),
            ("corrupt_request", "pass"),
            ("ce_marked_request", "not_supported"),
            ("ack_lost", "pass"),
            ("acks_all_lost", "pass"),
            ("rnr_retry", "pass"),
            ("control_nak_dropped", "fail"),
        ],
        "{report:#}"
    );
    for row in rows {
        let name = row["scenario"].as_str().unwrap();
        let capture = dir.join(format!("{name}.pcap"));
        if name == "rnr_retry" {
            rnr_retry(row, &cable(&capture), bench);
            continue;
        }
        let log = fs::read_to_string(dir.join(format!("{name}.inject.jsonl"))).unwrap();
        let action: Value = serde_json::from_str(log.lines().next().unwrap()).unwrap();
        let psn = action["psn"].as_u64().unwrap();
        let ip_id = action["ip_id"].as_u64().unwrap();
        let src = action["src"].as_str().unwrap();
        let frames = cable(&capture);
        let frame = |n: &Value| {
            let n = n.as_u64().unwrap();
            frames
                .iter()
                .find(|f| f.no == n)
                .unwrap_or_else(|| panic!("{name}: frame {n}"))
                .clone()
        };
        let same_packet: Vec<_> = frames
            .iter()
            .filter(|f| f.src == src && f.ip_id == ip_id)
            .collect();
        match action["action"].as_str().unwrap() {
            "drop" => assert!(
                same_packet.is_empty(),
                "{name}: the dropped packet is on the cable"
            ),
            "ce" => assert_eq!(
                same_packet.iter().map(|f| f.ecn).collect::<Vec<_>>(),
                [3],
                "{name}"
            ),
            "corrupt" => assert_eq!(same_packet.len(), 1, "{name}: the corrupted packet"),
            other => panic!("{name}: action {other}"),
        }
        let evidence = row["evidence"].as_array().unwrap();
        // the NICs' counters over the run, beside the verdict: rxe1 counts each sequence error NAK it sent
        // (out_of_seq_request): those tshark finds from it and those the injector dropped on their way
        let counter = |dev: &str, name: &str| row["counters"][dev][name].as_u64().unwrap_or(0);
        let naks_dropped = log
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|a| a["class"] == "nak" && a["action"] == "drop")
            .count() as u64;
        let naks_sent = naks_dropped
            + frames
                .iter()
                .filter(|f| f.src == responder && f.syndrome == Some(NAK_PSN_SEQUENCE_ERROR))
                .count() as u64;
        assert_eq!(
            counter(resp_dev, "out_of_seq_request"),
            naks_sent,
            "{name}: {}",
            row["counters"]
        );
        held_agree(row, resp_dev, "out_of_seq_request", naks_sent);
        match name {
            "write_request_lost" | "send_request_lost" | "read_request_lost"
            | "corrupt_request" => {
                let naks: Vec<_> = evidence
                    .iter()
                    .map(frame)
                    .filter(|f| f.op == ACKNOWLEDGE && f.syndrome == Some(NAK_PSN_SEQUENCE_ERROR))
                    .collect();
                assert_eq!(naks.len(), 1, "{name}: one NAK among {evidence:?}");
                assert_eq!(naks[0].psn, psn, "{name}: the NAK names the PSN lost");
                let resend = frame(evidence.last().unwrap());
                assert_eq!(
                    (resend.src.as_str(), resend.psn),
                    (src, psn),
                    "{name}: the resend"
                );
            }
            "read_response_lost" => {
                let read = frame(&evidence[0]);
                let again = frame(&evidence[1]);
                assert_eq!((read.op, again.op), (READ_REQUEST, READ_REQUEST), "{name}");
                assert!(
                    at_or_after(again.psn, read.psn) && at_or_after(psn, again.psn),
                    "{name}: {read:?} {again:?} {psn}"
                );
            }
            "ack_lost" => {
                let ack = frame(&evidence[0]);
                assert_eq!(ack.op, ACKNOWLEDGE, "{name}");
                assert!(
                    at_or_after(ack.psn, psn) && ack.psn != psn,
                    "{name}: a later ACK"
                );
            }
            "ce_marked_request" => {
                assert!(
                    frames.iter().all(|f| f.op != 0x81),
                    "{name}: a CNP on the cable"
                );
            }
            // every ACK dropped: the first WRITE's PSN 4 times on the cable (qp-timeout 17, retry count 3), each
            // resend 4.096 us x 2^17 = 536.9 ms after the one before (a sixteenth early allowed: a kernel timer
            // fires up to a tick early, and the injector's queue holds each packet a little; the first send may
            // wait in it after the NIC's timer started), and no ACK
            "acks_all_lost" => {
                let first = frames.iter().find(|f| f.src != src).unwrap();
                let sends: Vec<&CableFrame> = frames
                    .iter()
                    .filter(|f| f.src == first.src && f.psn == first.psn)
                    .collect();
                let frames_of: Vec<u64> = evidence.iter().map(|n| n.as_u64().unwrap()).collect();
                assert_eq!(
                    sends.iter().map(|f| f.no).collect::<Vec<_>>(),
                    frames_of,
                    "{name}: the sends of the first PSN"
                );
                assert_eq!(sends.len(), 4, "{name}");
                for w in sends[1..].windows(2) {
                    assert!(
                        w[1].t - w[0].t >= 4.096e-6 * 131072.0 * 15.0 / 16.0,
                        "{name}: {:?}",
                        sends
                    );
                }
                assert!(
                    frames.iter().all(|f| f.src != src),
                    "{name}: an ACK on the cable"
                );
                // rxe0 counted its three timer rounds and the one time it gave up
                assert_eq!(
                    (
                        counter(req_dev, "completer_retry_err"),
                        counter(req_dev, "retry_exceeded_err")
                    ),
                    (3, 1),
                    "{name}: {}",
                    row["counters"]
                );
            }
            "control_nak_dropped" => {
                assert!(
                    frames
                        .iter()
                        .all(|f| f.syndrome != Some(NAK_PSN_SEQUENCE_ERROR)),
                    "{name}: a NAK on the cable"
                );
            }
            other => panic!("scenario {other}"),
        }
    }
}

const SEND_ONLY: u64 = 4;
/// 163.84 ms (IBTA's RNR timer 28) less a sixteenth: a kernel timer fires up to a tick early.
const RNR_TIMER_28_ON_TIME: f64 = 0.16384 * 16.0 / 17.0;

/// No receive posted on rxe1 (gen's fault; no injector): tshark finds RNR NAKs of the first SEND's PSN (AETH
/// 0x3c: RNR, timer 28), after each but the last that PSN sent again by rxe0 no sooner than 163.84 ms (less a
/// sixteenth), 3 times, and the verdict a pass whose evidence is those frames (rxe of Linux 6.1 keeps this
/// rule: 166.5-168.5 ms in one run). rxe1 counted the RNR NAKs it sent, rxe0 those it received and one RNR
/// retry exceeded.
fn rnr_retry(row: &Value, frames: &[CableFrame], bench: &Bench) {
    let ((requester, req_dev), (responder, resp_dev)) = (bench.requester, bench.responder);
    let sends: Vec<&CableFrame> = frames
        .iter()
        .filter(|f| f.src == requester && f.op == SEND_ONLY)
        .collect();
    let naks: Vec<&CableFrame> = frames
        .iter()
        .filter(|f| f.src == responder && f.syndrome.is_some_and(|s| s & 0x60 == 0x20))
        .collect();
    assert_eq!(naks.len(), 4, "{naks:?}");
    assert!(
        naks.iter()
            .all(|n| n.syndrome == Some(0x3c) && n.psn == sends[0].psn),
        "{naks:?}"
    );
    let mut shown = Vec::new();
    for n in &naks {
        shown.push(n.no);
        if let Some(again) = sends.iter().find(|s| s.t > n.t && s.psn == n.psn) {
            assert!(again.t - n.t >= RNR_TIMER_28_ON_TIME, "{n:?} {again:?}");
            shown.push(again.no);
        }
    }
    assert_eq!(shown.len(), 7, "{shown:?}");
    assert_eq!(row["outcome"], "pass", "{row:#}");
    let evidence: Vec<u64> = row["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_u64().unwrap())
        .collect();
    assert_eq!(evidence, shown, "{row:#}");
    let counter = |dev: &str, name: &str| row["counters"][dev][name].as_u64().unwrap_or(0);
    let naked = naks.len() as u64;
    assert_eq!(
        (
            counter(resp_dev, "send_rnr_err"),
            counter(req_dev, "rcvd_rnr_err"),
            counter(req_dev, "retry_rnr_exceeded_err")
        ),
        (naked, naked, 1),
        "{}",
        row["counters"]
    );
    held_agree(row, resp_dev, "send_rnr_err", naked);
    held_agree(row, req_dev, "rcvd_rnr_err", naked);
    // the generator's fault alone: on the output path no injector, through a bump one that only forwards
    assert_eq!(row.get("log").is_some(), bench.bridge, "{row:#}");
}

/// The row's `counters_held` all agree (each counter rose by what the wire says), and among them `counter` of
/// `device` was held to `expected`, the figure this test found itself.
fn held_agree(row: &Value, device: &str, counter: &str, expected: u64) {
    let held = row["counters_held"].as_array().expect("counters_held");
    assert!(
        held.iter().all(|h| h["expected"] == h["seen"]),
        "{}: {held:?}",
        row["scenario"]
    );
    assert!(
        held.iter().any(|h| h["device"] == device
            && h["counter"] == counter
            && h["expected"].as_u64() == Some(expected)),
        "{}: {counter} of {device} held to {expected}: {held:?}",
        row["scenario"]
    );
}
