//! `rocescope inject` on real kernel RoCE: the Soft-RoCE lab (lab/README.md) runs `info`, then `inject_write`:
//! `ib_write_bw -s 1024 -n 32 -t 4` (one WRITE_ONLY per message at path MTU 1024) under
//! `rocescope inject --rule 'req psn=+5 drop' --rule 'resp class=ack drop' --rule 'req psn=+9 ce'
//! --rule 'req psn=+13 corrupt' --rule 'req psn=+17 duplicate' --rule 'req psn=+21 reorder'
//! --rule 'resp class=ack delay 20ms'`, on the guest's output hook (NFQUEUE), the cable captured on the host
//! after it.
//!
//! Held against the cable (tshark, and lab/icrc_check.py's own ICRC), the counters and the rules' words, not
//! against rocescope's analysis:
//! - the log names, for each rule, the one packet it acted on: the PSN the rule gives (the first request PSN
//!   on the cable + k), its first transmission, the class and direction the rule selects;
//! - by the IPv4 source and identification (the kernel numbers a host's packets to a peer one by one): a
//!   dropped packet is nowhere on the cable; the CE-marked one is there with ECN 3 and a right ICRC; the
//!   corrupted one with a wrong ICRC, the only one; the duplicated one twice; the reordered one behind the
//!   request after it; the delayed ACK (the second: the first was dropped) behind an ACK for a later PSN;
//! - the reactions the IBTA prescribes: for the lost request, the corrupted one (which the responder must drop
//!   silently) and the reordered one, a PSN sequence error NAK (AETH 0x60) naming that PSN, then the PSN resent
//!   (go-back-N); the lost ACK covered by a later ACK (coalesced); rxe1 `out_of_seq_request` and rxe0
//!   `completer_retry_err` as many as the NAKs on the cable, `duplicate_request` for the copy; the injector's
//!   counts (the cable's RoCE frames but its own copy, which it does not queue, and the two it dropped);
//! - ib_write_bw completes its 32 messages (exit 0).
use std::fs;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

mod lab_support;
use lab_support::{CableFrame as Frame, cable, root, run_lab};

const REQUESTER: &str = "10.0.0.1";
const RESPONDER: &str = "10.0.0.2";
const NAK_PSN_SEQUENCE_ERROR: u64 = 0x60;
const ACKNOWLEDGE: u64 = 17;

/// The frames lab/icrc_check.py finds with a wrong ICRC.
fn bad_icrc(path: &Path) -> Vec<u64> {
    let out = Command::new("python3")
        .arg(root().join("lab/icrc_check.py"))
        .arg(path)
        .output()
        .expect("run lab/icrc_check.py");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split(": frame ").nth(1))
        .filter_map(|l| l.split(':').next()?.parse().ok())
        .collect()
}

/// The counter's change over the scenario, from its log's "rxe hw_counters that changed".
fn counter(log: &str, device: &str, name: &str) -> i64 {
    log.lines()
        .skip_while(|l| !l.starts_with("--- rxe hw_counters that changed"))
        .filter_map(|l| l.strip_prefix(&format!("{device} {name} ")))
        .find_map(|v| v.trim_start_matches('+').parse().ok())
        .unwrap_or(0)
}

#[test]
fn injected_faults_and_the_reactions_the_rules_prescribe() {
    let (lab_out, _) = run_lab("lab-inject", &["info", "inject_write"]);
    let dir = lab_out.join("inject_write");
    let log = fs::read_to_string(dir.join("perftest.log")).expect("perftest.log");
    assert!(
        log.contains("--- client output (exit 0)") && log.contains("--- server output (exit 0)"),
        "ib_write_bw did not complete under the injector:\n{log}"
    );
    let frames = cable(&dir.join("cable.pcap"));
    let lines: Vec<Value> = fs::read_to_string(dir.join("inject.jsonl"))
        .expect("inject.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let (summary, actions) = lines.split_last().expect("the log has lines");
    let first_request = frames
        .iter()
        .find(|f| f.src == REQUESTER)
        .expect("requests on the cable")
        .psn;
    let first_ack = frames
        .iter()
        .find(|f| f.src == RESPONDER && f.op == ACKNOWLEDGE)
        .expect("ACKs on the cable");

    // One action per rule, in the order they came: the ACK first (the first answer), then by PSN.
    let acted: Vec<(u64, &str, &str, u64)> = actions
        .iter()
        .map(|a| {
            (
                a["rule"].as_u64().unwrap(),
                a["action"].as_str().unwrap(),
                a["src"].as_str().unwrap(),
                a["resend"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        acted,
        [
            (1, "drop", RESPONDER, 0),
            (6, "delay", RESPONDER, 0),
            (0, "drop", REQUESTER, 0),
            (2, "ce", REQUESTER, 0),
            (3, "corrupt", REQUESTER, 0),
            (4, "duplicate", REQUESTER, 0),
            (5, "reorder", REQUESTER, 0),
        ],
        "{actions:?}"
    );
    let psn_of = |rule: u64| {
        actions
            .iter()
            .find(|a| a["rule"] == rule)
            .and_then(|a| a["psn"].as_u64())
            .unwrap()
    };
    let id_of = |rule: u64| {
        actions
            .iter()
            .find(|a| a["rule"] == rule)
            .and_then(|a| a["ip_id"].as_u64())
            .unwrap()
    };
    let psn = |k: u64| (first_request + k) % (1 << 24);
    assert_eq!(
        [psn_of(0), psn_of(2), psn_of(3), psn_of(4), psn_of(5)],
        [psn(5), psn(9), psn(13), psn(17), psn(21)]
    );

    // The drops: not on the cable. The first ACK acknowledges the first request, which was dropped on its
    // way: the first ACK on the cable is for a later PSN.
    for (rule, src) in [(0, REQUESTER), (1, RESPONDER)] {
        let id = id_of(rule);
        let there: Vec<u64> = frames
            .iter()
            .filter(|f| f.src == src && f.ip_id == id)
            .map(|f| f.no)
            .collect();
        assert!(
            there.is_empty(),
            "rule {rule}'s dropped packet (ip.id {id:#x}) on the cable at {there:?}"
        );
    }
    assert_eq!(
        psn_of(1),
        first_request,
        "the first ACK answers the first request"
    );
    assert!(first_ack.psn > first_request && first_ack.syndrome.is_some_and(|s| s < 0x20));

    // CE: there, ECN 3, ICRC right; corrupt: there, the only wrong ICRC.
    let frame_of = |rule: u64| {
        frames
            .iter()
            .find(|f| f.src == REQUESTER && f.ip_id == id_of(rule))
            .unwrap_or_else(|| panic!("rule {rule}'s packet not on the cable"))
    };
    let (ce, corrupted) = (frame_of(2), frame_of(3));
    assert_eq!((ce.psn, ce.ecn), (psn(9), 3));
    assert_eq!(corrupted.psn, psn(13));
    assert_eq!(bad_icrc(&dir.join("cable.pcap")), [corrupted.no]);

    // Duplicate: two frames with its identification, its PSN. Reorder: behind the first frame of the PSN
    // after it. Delay: the second ACK (the first was dropped) behind an ACK for a later PSN.
    let with_id = |src: &str, id: u64| -> Vec<&Frame> {
        frames
            .iter()
            .filter(|f| f.src == src && f.ip_id == id)
            .collect()
    };
    let copies = with_id(REQUESTER, id_of(4));
    assert_eq!(
        copies.iter().map(|f| f.psn).collect::<Vec<_>>(),
        [psn(17), psn(17)]
    );
    let held = with_id(REQUESTER, id_of(5));
    let next = frames
        .iter()
        .find(|f| f.src == REQUESTER && f.psn == psn(22))
        .unwrap();
    assert!(
        held.len() == 1 && held[0].no > next.no,
        "{held:?} not behind {next:?}"
    );
    let late = with_id(RESPONDER, id_of(6));
    assert_eq!(late.len(), 1);
    let overtaken = frames.iter().any(|f| {
        f.src == RESPONDER && f.no < late[0].no && f.op == ACKNOWLEDGE && f.psn > late[0].psn
    });
    assert!(
        overtaken,
        "the delayed ACK {late:?} came before every later ACK"
    );

    // The responder's NAK for each lost request (dropped, or damaged and dropped silently), then the resend.
    let dropped_at = frames
        .iter()
        .position(|f| f.src == REQUESTER && f.psn == psn(6))
        .unwrap();
    let corrupted_at = frames.iter().position(|f| f.no == corrupted.no).unwrap();
    let held_at = frames.iter().position(|f| f.no == next.no).unwrap();
    for (lost, after) in [
        (psn(5), dropped_at),
        (psn(13), corrupted_at),
        (psn(21), held_at),
    ] {
        let nak = frames.iter().skip(after).position(|f| {
            f.src == RESPONDER && f.syndrome == Some(NAK_PSN_SEQUENCE_ERROR) && f.psn == lost
        });
        let nak = nak
            .map(|i| i + after)
            .unwrap_or_else(|| panic!("no NAK for PSN {lost}"));
        let resent = frames
            .iter()
            .skip(nak)
            .any(|f| f.src == REQUESTER && f.psn == lost);
        assert!(
            resent,
            "PSN {lost} not resent after its NAK (frame {})",
            frames[nak].no
        );
    }
    let naks = frames
        .iter()
        .filter(|f| f.syndrome == Some(NAK_PSN_SEQUENCE_ERROR))
        .count();
    // Each NAK is a request the responder took out of sequence and a go-back-N the requester made (the
    // reordered request may draw a second: rxe NAKs the PSN after it too when the resend crosses it).
    assert!(naks >= 3, "{naks} NAKs");
    assert_eq!(
        counter(&log, "rxe1", "out_of_seq_request"),
        naks as i64,
        "{log}"
    );
    assert_eq!(
        counter(&log, "rxe0", "completer_retry_err"),
        naks as i64,
        "{log}"
    );
    assert!(
        counter(&log, "rxe1", "duplicate_request") >= 1,
        "the copy is a duplicate:\n{log}"
    );

    // The injector's counts: every RoCE frame on the cable but the copy it sent itself (marked: not
    // queued), and the two it dropped.
    let s = &summary["summary"];
    assert_eq!(s["roce"].as_u64(), Some(frames.len() as u64 - 1 + 2), "{s}");
    assert_eq!(
        (s["acted"].as_u64(), s["by_rule"].clone()),
        (Some(7), serde_json::json!([1, 1, 1, 1, 1, 1, 1]))
    );
    assert!(
        log.contains("inject: "),
        "its line on standard error:\n{log}"
    );
}

/// The injector as a bump in the wire (`inject --bridge bp1,bp2`, lab scenario inject_bump): h1's rxe on vh1,
/// h2's on vh2, nothing between bp1 and bp2 but the bump; 32 one-packet WRITEs from h1 under `--rule 'req
/// psn=+5 drop' --rule 'resp class=ack drop' --rule 'req psn=+9 ce' --rule 'req psn=+13 corrupt' --rule 'req
/// psn=+17 duplicate'`, captured on vh1 (requests before the bump, answers after it) and vh2 (requests after,
/// answers before). Held to tshark's reading of the two captures, by IPv4 source and identification:
/// - each action's packet is before the bump and, after it, absent (the drops), with ECN 3 where it had not
///   (the CE mark), with a wrong ICRC where it had a right one (lab/icrc_check.py), twice (the duplicate);
/// - every other RoCE packet is on both sides, once: the bump lost none, and sent nothing of its own;
/// - the bump's counts: RoCE datagrams, the requests on vh1 and the answers on vh2; acted 5, one per rule;
/// - the lost request drew the PSN sequence error NAK it calls for (AETH 0x60, on vh1), and gen completed its
///   32 WRITEs (exit 0).
#[test]
fn a_bump_in_the_wire_acts_on_what_it_is_told_and_forwards_the_rest() {
    let (lab_out, _) = run_lab("lab-bump", &["info", "inject_bump"]);
    let dir = lab_out.join("inject_bump");
    let said = fs::read_to_string(dir.join("bump.log")).expect("bump.log");
    assert!(said.contains("exit 0"), "{said}");
    let before = cable(&dir.join("before.pcap"));
    let after = cable(&dir.join("after.pcap"));
    let (h1, h2) = ("10.0.1.1", "10.0.1.2");
    // requests cross from vh1 to vh2, answers from vh2 to vh1
    let requests_in: Vec<&Frame> = before.iter().filter(|f| f.src == h1).collect();
    let requests_out: Vec<&Frame> = after.iter().filter(|f| f.src == h1).collect();
    let answers_in: Vec<&Frame> = after.iter().filter(|f| f.src == h2).collect();
    let answers_out: Vec<&Frame> = before.iter().filter(|f| f.src == h2).collect();
    let lines: Vec<Value> = fs::read_to_string(dir.join("bump.jsonl"))
        .expect("bump.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let (summary, actions) = lines.split_last().expect("the log has lines");
    let acted: Vec<(u64, &str, &str)> = actions
        .iter()
        .map(|a| {
            (
                a["rule"].as_u64().unwrap(),
                a["action"].as_str().unwrap(),
                a["src"].as_str().unwrap(),
            )
        })
        .collect();
    let mut rules: Vec<u64> = acted.iter().map(|a| a.0).collect();
    rules.sort_unstable();
    assert_eq!(rules, [0, 1, 2, 3, 4], "{actions:?}");
    let first = requests_in.first().expect("requests").psn;
    let count = |side: &[&Frame], src: &str, id: u64| {
        side.iter()
            .filter(|f| f.src == src && f.ip_id == id)
            .count()
    };
    let bad_before = bad_icrc(&dir.join("before.pcap"));
    let bad_after = bad_icrc(&dir.join("after.pcap"));
    for a in actions {
        let (src, id) = (a["src"].as_str().unwrap(), a["ip_id"].as_u64().unwrap());
        let (ins, outs) = if src == h1 {
            (&requests_in, &requests_out)
        } else {
            (&answers_in, &answers_out)
        };
        assert_eq!(count(ins, src, id), 1, "{a}: before the bump");
        let psn = a["psn"].as_u64().unwrap();
        match a["rule"].as_u64().unwrap() {
            0 => assert_eq!(psn, (first + 5) & 0xff_ffff, "{a}"),
            2 => assert_eq!(psn, (first + 9) & 0xff_ffff, "{a}"),
            3 => assert_eq!(psn, (first + 13) & 0xff_ffff, "{a}"),
            4 => assert_eq!(psn, (first + 17) & 0xff_ffff, "{a}"),
            _ => assert_eq!(a["class"], "ack", "{a}"),
        }
        let out: Vec<&&Frame> = outs
            .iter()
            .filter(|f| f.src == src && f.ip_id == id)
            .collect();
        let inn = ins.iter().find(|f| f.src == src && f.ip_id == id).unwrap();
        match a["action"].as_str().unwrap() {
            "drop" => assert!(out.is_empty(), "{a}: after the bump"),
            "ce" => {
                assert_ne!(inn.ecn, 3, "{a}");
                assert_eq!(out.iter().map(|f| f.ecn).collect::<Vec<_>>(), [3], "{a}");
            }
            "corrupt" => {
                assert_eq!(out.len(), 1, "{a}");
                assert!(!bad_before.contains(&inn.no), "{a}: {bad_before:?}");
                assert_eq!(bad_after, [out[0].no], "{a}");
            }
            "duplicate" => assert_eq!(out.len(), 2, "{a}"),
            other => panic!("{a}: {other}"),
        }
    }
    // the rest: on both sides, once
    let acted_on = |src: &str, id: u64| {
        actions
            .iter()
            .any(|a| a["src"] == src && a["ip_id"].as_u64() == Some(id))
    };
    for (ins, outs) in [(&requests_in, &requests_out), (&answers_in, &answers_out)] {
        for f in ins.iter().filter(|f| !acted_on(&f.src, f.ip_id)) {
            assert_eq!(count(outs, &f.src, f.ip_id), 1, "{f:?} crossed once");
        }
        for f in outs.iter() {
            assert_eq!(
                count(ins, &f.src, f.ip_id),
                1,
                "{f:?} came from the other side"
            );
        }
    }
    let s = &summary["summary"];
    assert_eq!(
        s["roce"].as_u64(),
        Some((requests_in.len() + answers_in.len()) as u64),
        "{summary}"
    );
    assert_eq!(s["acted"], 5, "{summary}");
    assert_eq!(
        s["by_rule"],
        serde_json::json!([1, 1, 1, 1, 1]),
        "{summary}"
    );
    // the lost request's NAK, as the answers reach h1
    let dropped = (first + 5) & 0xff_ffff;
    assert!(
        answers_out
            .iter()
            .any(|f| f.syndrome == Some(NAK_PSN_SEQUENCE_ERROR) && f.psn == dropped),
        "{answers_out:?}"
    );
}
