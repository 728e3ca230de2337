//! `conform`'s judge on a real capture, without the lab: testdata/lab/no_receive.pcap is rxe of Linux 6.1
//! (`gen loopback --op send -n 4 --rnr-retry 3 --fault no-receive`, the RNR timer gen then gave, 12). What
//! tshark shows of it (`tshark -r testdata/lab/no_receive.pcap -T fields -e frame.number -e
//! frame.time_relative -e ip.src -e infiniband.bth.opcode -e infiniband.bth.psn -e infiniband.aeth.syndrome`):
//! SEND PSN 3672332 in frames 1, 7, 13 and 19 (at 0, 0.015099, 0.026749 and 0.038531 s), its RNR NAKs (syndrome
//! 44: 0x2c, timer 12, 0.64 ms) in frames 2, 11, 14 and 20 (at 0.000490, 0.018506, 0.027030 and 0.038680 s).
use std::process::Command;

use rocescope::conform::judge::{Outcome, RnrSettings, rnr_retry};
use rocescope::conform::wire;

const CAPTURE: &str = "testdata/lab/no_receive.pcap";

#[test]
fn rxe_waits_its_rnr_timer_and_gives_up_after_its_rnr_retry_count() {
    let packets = wire::packets(CAPTURE.as_ref()).unwrap();
    let v = rnr_retry(
        &packets,
        RnrSettings {
            min_rnr_timer: 12,
            rnr_retry: 3,
        },
    );
    assert_eq!(v.outcome, Outcome::Pass, "{}", v.seen);
    // the waits: 0.015099 - 0.000490, 0.026749 - 0.018506, 0.038531 - 0.027030 s
    assert_eq!(
        v.seen,
        "4 RNR NAKs for PSN 3672332 with timer 12 (0.64 ms), 3 retries 8.24-14.61 ms after their NAK, then \
         nothing: the QP gave up"
    );
    assert_eq!(v.evidence, [2, 7, 11, 13, 14, 19, 20]);
    // told 4 retries, it made 3
    let v = rnr_retry(
        &packets,
        RnrSettings {
            min_rnr_timer: 12,
            rnr_retry: 4,
        },
    );
    assert_eq!(v.outcome, Outcome::Fail);
}

#[test]
fn the_suite_judges_a_capture_again_and_needs_the_log_only_with_rules() {
    let judge = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_rocescope"))
            .args(["conform", "--judge", CAPTURE, "--json"])
            .args(args)
            .output()
            .unwrap()
    };
    // rnr_retry gives its responder timer 28; this run's NAKs carry 12
    let out = judge(&["--scenario", "rnr_retry"]);
    assert_eq!(out.status.code(), Some(3));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let row = &report["scenarios"][0];
    assert_eq!(
        (&row["scenario"], &row["reaction"], &row["outcome"]),
        (&"rnr_retry".into(), &"rnr_retry".into(), &"fail".into())
    );
    assert_eq!(
        row["seen"],
        "the RNR NAK (frame 2) carries timer 12 where the responder was given 28"
    );
    assert!(row.get("log").is_none(), "{row:#}");
    // the table: one line, one run; judged again, the report names no devices
    assert_eq!(report["repeat"], 1);
    assert!(report.get("device").is_none(), "{report:#}");
    let line = &report["table"][0];
    assert_eq!(
        (
            &line["scenario"],
            &line["outcome"],
            &line["runs"],
            &line["fail"]
        ),
        (&"rnr_retry".into(), &"fail".into(), &1.into(), &1.into())
    );
    assert_eq!(report["table"].as_array().unwrap().len(), 1);
    // a scenario of the injector's needs its log
    let out = judge(&["--scenario", "write_request_lost"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "--judge with --scenario write_request_lost takes the injection log: --log FILE"
        ),
        "{err}"
    );
}

/// The CE rule's second half, on testdata's two hand-made senders (examples/make_testdata/congestion.rs):
/// WRITEs from 10.0.0.1 to QP 0x11, the one at 249 µs (PSN 249, frame 251) marked CE and a CNP back 1 µs later
/// (frame 253), another pair at 648/650 µs. cnp_halving's sender halves its rate 32 and 34 µs after the CNPs
/// (windows of 100 µs: 100 WRITEs before, 50 after); cnp_ignored's keeps sending one a microsecond. Judged
/// again as `ce_marked_request` with a log of that one CE action written here.
#[test]
fn a_ce_mark_needs_its_cnp_and_the_sender_to_slow_down() {
    let dir = std::env::temp_dir().join(format!("rocescope-conform-ce-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("ce.inject.jsonl");
    std::fs::write(
        &log,
        "{\"time\": 1767225600.000248, \"rule\": 0, \"text\": \"req psn=+5 ce\", \"action\": \"ce\", \
         \"src\": \"10.0.0.1\", \"dst\": \"10.0.0.2\", \"ip_id\": 1, \"dest_qp\": 17, \"psn\": 249, \
         \"opcode\": 10, \"class\": \"request\", \"qp\": 0, \"resend\": 0, \"psn_from_first\": 249, \
         \"ecn_before\": 2}\n",
    )
    .unwrap();
    let judged = |capture: &str| {
        let o = Command::new(env!("CARGO_BIN_EXE_rocescope"))
            .args(["conform", "--judge", capture, "--log"])
            .arg(&log)
            .args(["--scenario", "ce_marked_request", "--json"])
            .output()
            .unwrap();
        let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        (o.status.code(), report["scenarios"][0].clone())
    };
    let (code, row) = judged("testdata/analysis/cnp_halving.pcap");
    assert_eq!(code, Some(0), "{row:#}");
    assert_eq!(row["outcome"], "pass");
    assert_eq!(
        row["seen"],
        "a CNP (frame 253) for the CE mark on PSN 249 (frame 251); the sender's rate fell by 50 % (the median \
         of 2 CNPs measured)"
    );
    assert_eq!(
        row["latencies_us"],
        serde_json::json!({"ce_to_cnp": 1.0, "cnp_to_reduced_rate": 34.0})
    );
    assert_eq!(row["evidence"], serde_json::json!([251, 253]));
    let (code, row) = judged("testdata/analysis/cnp_ignored.pcap");
    assert_eq!(code, Some(3), "{row:#}");
    assert_eq!(row["outcome"], "fail");
    assert!(
        row["seen"].as_str().unwrap().ends_with(
            "; the sender kept its rate after it (2 of 2 CNPs measured with no reduction)"
        ),
        "{row:#}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
