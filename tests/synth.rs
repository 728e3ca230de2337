//! `rocescope analyze --json` on synthetic captures against the generator's ground truth: per flow and in
//! total, every figure the generator knows (PSN gaps, missing PSNs, retransmissions, duplicates, go-back-N
//! episodes, NAKs, CNPs, CE marks, CE without CNP, messages, ACKs, READ responses, atomic ACKs, bytes) must be
//! what the analyzer reports. The simulation and its model are in the `synth` crate (`crates/synth`).
use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;
use std::process::Command;

use serde_json::{Value, json};

fn analyze(path: &PathBuf) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_rocescope"))
        .arg("analyze")
        .arg("--json")
        .arg(path)
        .output()
        .expect("run rocescope analyze");
    assert!(
        out.status.success(),
        "rocescope analyze failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the report is JSON")
}

/// Every key of `truth`, recursively, must have the same value in `report`.
fn compare(at: &str, truth: &Value, report: &Value, diffs: &mut Vec<String>) {
    match truth {
        Value::Object(map) => {
            for (key, value) in map {
                let got = report.get(key).unwrap_or(&Value::Null);
                compare(&format!("{at}.{key}"), value, got, diffs);
            }
        }
        _ if truth != report => diffs.push(format!("{at}: expected {truth}, got {report}")),
        _ => {}
    }
}

fn sum(flows: &[Value], f: impl Fn(&Value) -> Option<u64>) -> u64 {
    flows.iter().filter_map(f).sum()
}

/// The report's totals, keyed like the truth's.
fn report_totals(report: &Value) -> Value {
    let flows = report["flows"].as_array().cloned().unwrap_or_default();
    let role = |f: &Value, r: &str| f["role"] == r;
    json!({
        "frames": report["capture"]["frames"],
        "requests": sum(&flows, |f| role(f, "requester").then(|| f["packets"].as_u64()).flatten()),
        "responses": sum(&flows, |f| {
            role(f, "responder").then(|| Some(f["packets"].as_u64()? - f["cnp"].as_u64()?)).flatten()
        }),
        "gap_events": sum(&flows, |f| f["psn"]["gap_events"].as_u64()),
        "missing": sum(&flows, |f| f["psn"]["missing"].as_u64()),
        "retransmitted": sum(&flows, |f| f["psn"]["retransmitted"].as_u64()),
        "duplicates": sum(&flows, |f| f["psn"]["duplicates"].as_u64()),
        "retransmission_episodes": sum(&flows, |f| f["psn"]["retransmission_episodes"].as_u64()),
        "psn_seq_err_naks": sum(&flows, |f| f["naks"]["psn_seq_err"].as_u64()),
        "cnp": sum(&flows, |f| f["cnp"].as_u64()),
        "ce": sum(&flows, |f| f["ecn"]["ce"].as_u64()),
        "ce_without_cnp": sum(&flows, |f| f["ce_without_cnp"].as_u64()),
        "messages": sum(&flows, |f| f["messages"]["count"].as_u64()),
    })
}

/// The seeds and MTUs checked: small captures (20,000 frames, 8 connections) with enough loss for several
/// episodes of each kind.
const CASES: [(u64, u32); 3] = [(1, 1024), (2, 4096), (7, 1024)];

/// Generates the capture of `seed`, analyzes it and returns every disagreement with the truth.
fn disagreements(seed: u64, mtu: u32, name: &str) -> Vec<String> {
    let params = synth::Params {
        frames: 20_000,
        qps: 8,
        seed,
        loss: 0.002,
        ce: 0.005,
        unanswered: 0.1,
        mtu,
        ..synth::Params::default()
    };
    let path =
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("synth-{name}-{seed}-{mtu}.pcap"));
    let file = File::create(&path).expect("create the capture");
    let truth = synth::generate(&params, BufWriter::new(file)).expect("generate");
    // Through text, as the report is: serde_json's float parsing is not exactly round-trip.
    let text = serde_json::to_string_pretty(&truth.to_json()).expect("truth as JSON");
    std::fs::write(path.with_extension("truth.json"), &text).expect("write the truth");
    let expected: Value = serde_json::from_str(&text).expect("truth JSON");
    let totals = truth.totals();

    // The capture exercises what it is meant to: both kinds of loss, NAKs, go-back-N, CE with and without
    // CNP, READs and atomics, and PSNs that wrap.
    let (before, after) = truth.losses();
    assert!(
        before >= 3 && after >= 3,
        "losses: {before} before, {after} after the mirror"
    );
    assert!(totals["ce_without_cnp"].as_u64() >= Some(1), "{totals}");
    assert!(totals["cnp"].as_u64() >= Some(10), "{totals}");
    assert!(
        truth
            .conns
            .iter()
            .any(|c| c.resp.read_responses > 0 && c.resp.atomic_acks > 0)
    );
    assert!(
        truth
            .conns
            .iter()
            .any(|c| c.req.first_psn.is_some_and(|p| p > c.req.end_psn))
    );

    let report = analyze(&path);
    let mut diffs = Vec::new();
    compare(
        "capture",
        &expected["capture"],
        &report["capture"],
        &mut diffs,
    );
    compare("config", &expected["config"], &report["config"], &mut diffs);
    let flows = report["flows"].as_array().cloned().unwrap_or_default();
    let id_of = |t: &Value| {
        flows
            .iter()
            .find(|f| f["src"] == t["src"] && f["dst"] == t["dst"] && f["dest_qp"] == t["dest_qp"])
    };
    let truth_flows = expected["flows"].as_array().cloned().unwrap_or_default();
    if flows.len() != truth_flows.len() {
        diffs.push(format!(
            "flows: expected {}, got {}",
            truth_flows.len(),
            flows.len()
        ));
    }
    for pair in truth_flows.chunks(2) {
        let [req, resp] = pair else { continue };
        for t in [req, resp] {
            let name = format!(
                "flow {} -> {} QP {:#x}",
                t["src"],
                t["dst"],
                t["dest_qp"].as_u64().unwrap_or(0)
            );
            match id_of(t) {
                Some(f) => compare(&name, t, f, &mut diffs),
                None => diffs.push(format!("{name}: missing from the report")),
            }
        }
        // The two directions of a connection are paired with each other.
        if let (Some(r), Some(s)) = (id_of(req), id_of(resp))
            && (r["paired_with"] != s["id"] || s["paired_with"] != r["id"])
        {
            diffs.push(format!(
                "flow {} -> {} QP {}: paired with {}, expected flow {}",
                req["src"], req["dst"], req["dest_qp"], r["paired_with"], s["id"]
            ));
        }
    }
    compare("totals", &totals, &report_totals(&report), &mut diffs);
    // Events, when none were dropped: one per gap, NAK and go-back-N, one CE-without-CNP per flow that has
    // some, and no length mismatch.
    if report["events_dropped"] == 0 {
        let events = report["events"].as_array().cloned().unwrap_or_default();
        let count = |kind: &str| events.iter().filter(|e| e["kind"] == kind).count() as u64;
        let ce_flows = truth
            .conns
            .iter()
            .filter(|c| c.req.ce_without_cnp > 0)
            .count() as u64;
        let expected_events = json!({
            "psn_gap": totals["gap_events"],
            "nak": totals["psn_seq_err_naks"],
            "go_back_n": totals["retransmission_episodes"],
            "ce_without_cnp": ce_flows,
            "length_mismatch": 0,
        });
        let got = json!({
            "psn_gap": count("psn_gap"),
            "nak": count("nak"),
            "go_back_n": count("go_back_n"),
            "ce_without_cnp": count("ce_without_cnp"),
            "length_mismatch": count("length_mismatch"),
        });
        compare("events", &expected_events, &got, &mut diffs);
    }
    diffs
        .into_iter()
        .map(|d| format!("{}: {d}", path.display()))
        .collect()
}

/// Message reassembly figures: count, bytes, sizes, length mismatches.
fn is_message(diff: &str) -> bool {
    diff.contains(".messages.")
        || diff.contains("totals.messages")
        || diff.contains("events.length_mismatch")
}

fn check(messages: bool) {
    let name = if messages { "messages" } else { "transport" };
    let diffs: Vec<String> = CASES
        .iter()
        .flat_map(|(seed, mtu)| disagreements(*seed, *mtu, name))
        .filter(|d| is_message(d) == messages)
        .collect();
    assert!(
        diffs.is_empty(),
        "{} disagreements between the truth and the report:\n{}",
        diffs.len(),
        diffs.join("\n")
    );
}

/// Everything but message reassembly: packets, bytes, PSN gaps and missing PSNs, retransmissions,
/// duplicates, go-back-N episodes, NAKs, CNPs, ECN, CE without CNP, ACKs, READ responses, atomic ACKs,
/// pairing of the two directions, events.
#[test]
fn transport_figures_match_the_truth() {
    check(false);
}

/// SEND/WRITE messages: each counted once with its full size when every packet was captured at least once
/// (a packet lost before the capture point and resent completes its message), and no length mismatch.
#[test]
fn message_figures_match_the_truth() {
    check(true);
}

/// The lossless scenario (`synth::generate_lossless`: paced senders cutting their rate by half 3 µs after
/// each CNP, one ignoring them, a 120 ms PFC storm on their priority): every figure of `cnp_reaction`,
/// `cnp_interval_us` and `pfc`, and the count of each congestion event, as the model made them.
#[test]
fn lossless_figures_match_the_truth() {
    let params = synth::LosslessParams::default();
    let path = std::env::temp_dir().join(format!("rocescope-lossless-{}.pcap", std::process::id()));
    let out = BufWriter::new(File::create(&path).expect("create the capture"));
    let truth = synth::generate_lossless(&params, out).expect("generate");
    let window_us = (params.window_ns / 1000).to_string();
    let o = Command::new(env!("CARGO_BIN_EXE_rocescope"))
        .args(["analyze", "--json", "--rate-window-us", &window_us])
        .arg(&path)
        .output()
        .expect("run rocescope analyze");
    let _ = std::fs::remove_file(&path);
    let report: Value = serde_json::from_slice(&o.stdout).expect("the report is JSON");
    let want = truth.to_json();
    let mut diffs = Vec::new();
    compare("capture", &want["capture"], &report["capture"], &mut diffs);
    compare(
        "priorities[0]",
        &want["priorities"][0],
        &report["priorities"][0],
        &mut diffs,
    );
    let flows = report["flows"].as_array().expect("flows");
    for w in want["flows"].as_array().expect("truth flows") {
        let key = |f: &Value| (f["src"].clone(), f["dst"].clone(), f["dest_qp"].clone());
        match flows.iter().find(|f| key(f) == key(w)) {
            Some(f) => compare(&format!("flow {:?}", key(w)), w, f, &mut diffs),
            None => diffs.push(format!("flow {:?} not in the report", key(w))),
        }
    }
    let pfc = &report["pfc"];
    for (i, w) in want["pfc"].as_array().into_iter().flatten().enumerate() {
        // A quotient: serde_json reads floats back to within an ulp, not exactly.
        let mut w = w.clone();
        let fraction = w.as_object_mut().and_then(|m| m.remove("paused_fraction"));
        compare(&format!("pfc[{i}]"), &w, &pfc[i], &mut diffs);
        let (want, got) = (
            fraction.and_then(|f| f.as_f64()),
            pfc[i]["paused_fraction"].as_f64(),
        );
        if !matches!((want, got), (Some(a), Some(b)) if (a - b).abs() <= 1e-12) {
            diffs.push(format!(
                "pfc[{i}].paused_fraction: expected {want:?}, got {got:?}"
            ));
        }
    }
    for (kind, n) in want["events"].as_object().expect("event counts") {
        let got = report["events"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|e| e["kind"] == kind.as_str())
            .count() as u64;
        if Some(got) != n.as_u64() {
            diffs.push(format!("{kind} events: expected {n}, got {got}"));
        }
    }
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
}

/// `-j` changes how many threads run, not what they find. A capture of 20 batches of frames (20,000), with
/// the ICRC of every 1,000th frame damaged, gives the same report when the reading thread parses and the
/// engine thread checks the ICRCs (`-j 1`) as when two threads between them parse and check, a batch each
/// in turn (`-j 4`), whether the frames stay in place (a file) or are copied (standard input); each report
/// counts the 20 damaged ICRCs.
#[test]
fn the_report_is_the_same_at_any_thread_count() {
    let params = synth::Params {
        frames: 20_000,
        qps: 8,
        seed: 3,
        loss: 0.002,
        ..synth::Params::default()
    };
    let mut bytes = Vec::new();
    synth::generate(&params, &mut bytes).expect("generate");
    // pcap: a 24-byte file header, then records of a 16-byte header (the captured length at 8) and the
    // frame. A synthetic frame ends with its ICRC (no FCS): its last byte flipped damages the ICRC alone.
    let (mut at, mut frame, mut damaged) = (24usize, 0u64, 0u64);
    while at + 16 <= bytes.len() {
        let len = u32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
        let end = at + 16 + len;
        frame += 1;
        if frame % 1_000 == 0 {
            bytes[end - 1] ^= 0xff;
            damaged += 1;
        }
        at = end;
    }
    assert_eq!((frame, damaged), (20_000, 20));
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("synth-threads.pcap");
    std::fs::write(&path, &bytes).expect("write the capture");
    let report = |threads: &str, stdin: bool| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_rocescope"));
        cmd.args(["analyze", "--json", "-j", threads]);
        if stdin {
            cmd.arg("-")
                .stdin(File::open(&path).expect("open the capture"));
        } else {
            cmd.arg(&path);
        }
        let out = cmd.output().expect("rocescope runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("UTF-8")
    };
    for stdin in [false, true] {
        let (one, four) = (report("1", stdin), report("4", stdin));
        let doc: Value = serde_json::from_str(&one).expect("JSON");
        assert_eq!(doc["capture"]["icrc_bad"], json!(20), "stdin: {stdin}");
        assert!(one == four, "-j 1 and -j 4 differ (stdin: {stdin})");
    }
}
