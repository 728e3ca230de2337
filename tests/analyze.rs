//! `rocescope analyze` on hand-built captures (testdata/analysis/, testdata/diagnosis/): the report must show
//! exactly the figures worked out by hand beside each capture (`NAME.expected.json`), every diagnosis event
//! expected and no other, and `--fail-on` must set the exit status and the verdict's words.
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

#[path = "common/pieces.rs"]
mod pieces;
use pieces::{TwoPoints, frames_of, two_points, write_pcap};

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata/analysis")
}

/// The event kinds of the diagnosis: a capture's `diagnosis` gives the exact count of each (0 when absent).
const DIAGNOSIS: [&str; 16] = [
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
    "connection",
    "disconnect",
    "cm_reject",
    "cm_timeout",
    "unexpected_qp",
    "start_psn_mismatch",
];

/// Expected events (kind, frame, figures of `detail`) and the exact count of every diagnosis kind.
fn compare_events(events: &[Value], want: &Value, errors: &mut Vec<String>) {
    for w in want["events"].as_array().into_iter().flatten() {
        let found = events
            .iter()
            .find(|e| e["kind"] == w["kind"] && e["frame"] == w["frame"]);
        match found {
            Some(e) => check(&e["detail"], &w["detail"], &format!("event {w}"), errors),
            None => {
                let all: Vec<String> = events
                    .iter()
                    .map(|e| format!("{} frame {}", e["kind"], e["frame"]))
                    .collect();
                errors.push(format!(
                    "no event {} at frame {}; events: {all:?}",
                    w["kind"], w["frame"]
                ));
            }
        }
    }
    if let Some(counts) = want.get("diagnosis") {
        for kind in DIAGNOSIS {
            let got = events.iter().filter(|e| e["kind"] == kind).count() as u64;
            let want = counts[kind].as_u64().unwrap_or(0);
            if got != want {
                errors.push(format!("{got} {kind} events, want {want}"));
            }
        }
    }
}

/// Each run of `runs`: `analyze ARGS FILE` exits with `exit`, its verdict line holds `text`.
fn compare_runs(capture: &Path, want: &Value, errors: &mut Vec<String>) {
    for run in want["runs"].as_array().into_iter().flatten() {
        let mut args: Vec<String> = vec!["analyze".into()];
        args.extend(
            run["args"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a.as_str().unwrap().to_string()),
        );
        args.push(capture.to_string_lossy().into_owned());
        let o = Command::new(env!("CARGO_BIN_EXE_rocescope"))
            .args(&args)
            .output()
            .expect("run rocescope");
        let text = String::from_utf8_lossy(&o.stdout);
        let verdict = text
            .lines()
            .find(|l| l.starts_with("Verdict: "))
            .unwrap_or("");
        if o.status.code() != run["exit"].as_i64().map(|c| c as i32) {
            errors.push(format!(
                "{args:?}: exit {:?}, want {}",
                o.status.code(),
                run["exit"]
            ));
        }
        if !verdict.contains(run["text"].as_str().unwrap()) {
            errors.push(format!(
                "{args:?}: verdict {verdict:?} lacks {}",
                run["text"]
            ));
        }
    }
}

fn rocescope(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rocescope"))
        .args(args)
        .output()
        .expect("run rocescope")
}

/// `analyze --json ARGS CAPTURE`.
fn report(capture: &Path, args: &[&str]) -> Value {
    let mut all = vec!["analyze", "--json"];
    all.extend(args);
    all.push(capture.to_str().unwrap());
    let o = rocescope(&all);
    assert!(
        o.status.success(),
        "{}: {}",
        capture.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).expect("one JSON document")
}

/// `want` is contained in `got`: every key of an object, every element of an array, numbers equal.
fn check(got: &Value, want: &Value, path: &str, errors: &mut Vec<String>) {
    match (got, want) {
        (Value::Object(g), Value::Object(w)) => {
            for (k, wv) in w {
                match g.get(k) {
                    Some(gv) => check(gv, wv, &format!("{path}.{k}"), errors),
                    None => errors.push(format!("{path}.{k}: missing (want {wv})")),
                }
            }
        }
        (Value::Array(g), Value::Array(w)) if g.len() == w.len() => {
            for (i, (gv, wv)) in g.iter().zip(w).enumerate() {
                check(gv, wv, &format!("{path}[{i}]"), errors);
            }
        }
        (Value::Number(g), Value::Number(w)) => {
            let (g, w) = (g.as_f64().unwrap(), w.as_f64().unwrap());
            if (g - w).abs() > 1e-6 * w.abs().max(1.0) {
                errors.push(format!("{path}: got {g}, want {w}"));
            }
        }
        (g, w) if g == w => {}
        (g, w) => errors.push(format!("{path}: got {g}, want {w}")),
    }
}

fn flow_key(f: &Value) -> (String, String, u64) {
    (
        f["src"].as_str().unwrap().to_string(),
        f["dst"].as_str().unwrap().to_string(),
        f["dest_qp"].as_u64().unwrap(),
    )
}

fn compare(name: &str, got: &Value, want: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    for section in [
        "capture",
        "config",
        "verdict",
        "pfc",
        "priorities",
        "connections",
        "ecmp",
    ] {
        if let Some(w) = want.get(section) {
            check(&got[section], w, section, &mut errors);
        }
    }
    let flows = got["flows"].as_array().unwrap();
    for w in want["flows"].as_array().into_iter().flatten() {
        let key = flow_key(w);
        let Some(g) = flows.iter().find(|f| flow_key(f) == key) else {
            errors.push(format!("flow {key:?} not found"));
            continue;
        };
        let mut w = w.clone();
        if let Some(pair) = w.as_object_mut().unwrap().remove("pair") {
            let partner = g["paired_with"]
                .as_u64()
                .and_then(|id| flows.iter().find(|f| f["id"] == id));
            let got_pair = partner.map(|p| {
                Value::from(vec![
                    p["src"].clone(),
                    p["dst"].clone(),
                    p["dest_qp"].clone(),
                ])
            });
            if got_pair.as_ref() != Some(&pair) {
                errors.push(format!(
                    "flow {key:?} paired with {got_pair:?}, want {pair}"
                ));
            }
        }
        check(g, &w, &format!("flow {key:?}"), &mut errors);
    }
    let events = got["events"].as_array().unwrap();
    if let Some(counts) = want.get("event_counts").and_then(Value::as_object) {
        for (kind, n) in counts {
            let got_n = events.iter().filter(|e| e["kind"] == kind.as_str()).count() as u64;
            if got_n != n.as_u64().unwrap() {
                errors.push(format!("{got_n} events of kind {kind}, want {n}"));
            }
        }
    }
    compare_events(events, want, &mut errors);
    for text in want["events_text"].as_array().into_iter().flatten() {
        if !events.iter().any(|e| &e["message"] == text) {
            let all: Vec<&Value> = events.iter().map(|e| &e["message"]).collect();
            errors.push(format!("no event {text}; events: {all:?}"));
        }
    }
    errors.iter().map(|e| format!("{name}: {e}")).collect()
}

/// Every capture of `dir` against its expectations; `n` captures are there.
fn hand_worked(dir: &Path, n: usize) {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".expected.json"))
        .collect();
    files.sort();
    assert_eq!(files.len(), n);
    let mut errors = Vec::new();
    for expected in files {
        let name = expected
            .file_name()
            .unwrap()
            .to_string_lossy()
            .replace(".expected.json", "");
        let want: Value =
            serde_json::from_str(&std::fs::read_to_string(&expected).unwrap()).unwrap();
        let capture = dir.join(format!("{name}.pcap"));
        // The flags the figures were worked out for (`args`), if any.
        let args: Vec<&str> = want["args"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let got = report(&capture, &args);
        errors.extend(compare(&name, &got, &want));
        let mut run_errors = Vec::new();
        compare_runs(&capture, &want, &mut run_errors);
        errors.extend(run_errors.into_iter().map(|e| format!("{name}: {e}")));
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

#[test]
fn hand_worked_figures() {
    hand_worked(&dir(), 24);
}

#[test]
fn hand_worked_diagnosis() {
    hand_worked(&dir().with_file_name("diagnosis"), 20);
}

/// What real NICs and networks legitimately do (examples/make_testdata/retries.rs): READs resumed
/// mid-message, atomics resent, ACKs and requests reordered on the way: retransmissions and notes, never a
/// violation.
#[test]
fn hand_worked_retries() {
    hand_worked(&dir().with_file_name("retries"), 13);
}

/// CM handshakes and the data path after them (examples/make_testdata/connections.rs): the connection
/// table, its events and the verdict, worked out by hand.
#[test]
fn hand_worked_connections() {
    hand_worked(&dir().with_file_name("connections"), 9);
}

/// xon_ends_pause at 25 Gb/s: the XOFF of 65535 quanta at 105 µs (1342.1568 µs now) is still ended by the
/// XON at 155 (50 µs); the one of 100 quanta at 205 runs out after 100 x 512 / 25e9 s = 2.048 µs.
#[test]
fn pause_time_follows_the_link_speed() {
    let r = report(&dir().join("xon_ends_pause.pcap"), &["--link-speed", "25G"]);
    let us = r["pfc"][0]["pause_us"].as_f64().unwrap();
    assert!((us - 52.048).abs() < 1e-6, "{us}");
}

/// dscp_unprotected without `--dscp-map`: untagged traffic has no known priority, so neither event; with
/// DSCP 26 mapped to priority 3, the paused one, its flows are on a paused priority and protected.
#[test]
fn dscp_map_puts_untagged_traffic_on_a_priority() {
    let file = dir().join("dscp_unprotected.pcap");
    let kinds = |r: &Value| -> Vec<String> {
        r["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["kind"].as_str().unwrap().to_string())
            .collect()
    };
    let unmapped = report(&file, &[]);
    assert_eq!(kinds(&unmapped), ["pause"]);
    assert_eq!(unmapped["flows"][0]["paused_priority"], false);
    let on_3 = report(&file, &["--dscp-map", "26=3"]);
    assert_eq!(kinds(&on_3), ["pause"]);
    assert_eq!(on_3["flows"][0]["paused_priority"], true);
    assert_eq!(on_3["flows"][1]["paused_priority"], true);
}

#[test]
fn fail_on_sets_exit_status_3() {
    let lossy = dir().join("gap_nak_go_back_n.pcap");
    let lossy = lossy.to_str().unwrap();
    let clean = dir().join("coalesced_acks.pcap");
    let clean = clean.to_str().unwrap();
    let ecn = dir().join("ecn_cnp.pcap");
    let ecn = ecn.to_str().unwrap();
    let status = |args: &[&str]| rocescope(args).status.code();
    assert_eq!(status(&["analyze", lossy]), Some(0));
    assert_eq!(status(&["analyze", "--fail-on", "gaps", lossy]), Some(3));
    assert_eq!(status(&["analyze", "--fail-on", "naks", lossy]), Some(3));
    assert_eq!(
        status(&["analyze", "--fail-on", "retransmissions", lossy]),
        Some(3)
    );
    assert_eq!(
        status(&["analyze", "--fail-on", "rnr,icrc,malformed,ce,cnp", lossy]),
        Some(0)
    );
    assert_eq!(
        status(&[
            "analyze",
            "--fail-on",
            "gaps,naks,rnr,retransmissions,ce,cnp,icrc,malformed",
            clean
        ]),
        Some(0)
    );
    assert_eq!(status(&["analyze", "--fail-on", "ce", ecn]), Some(3));
    assert_eq!(status(&["analyze", "--fail-on", "cnp", ecn]), Some(3));
    assert_eq!(status(&["analyze", "--fail-on", "gaps", ecn]), Some(0));
    assert_eq!(
        status(&[
            "analyze",
            "--fail-on",
            "rnr",
            &dir().join("rnr_storm.pcap").to_string_lossy()
        ]),
        Some(3)
    );
    assert_eq!(
        status(&[
            "analyze",
            "--fail-on",
            "icrc",
            &dir().join("damaged.pcap").to_string_lossy()
        ]),
        Some(3)
    );
    assert_eq!(status(&["analyze", "--fail-on", "bogus", clean]), Some(2));
    assert_eq!(status(&["analyze", "--mtu", "1500", clean]), Some(2));
    assert_eq!(status(&["analyze", "--link-speed", "fast", clean]), Some(2));
    assert_eq!(status(&["analyze", "/nonexistent.pcap"]), Some(1));
}

#[test]
fn text_report_names_the_trouble() {
    let file = dir().join("gap_nak_go_back_n.pcap");
    let o = rocescope(&["analyze", file.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&o.stdout);
    for needle in [
        "11 frames (11 RoCE, 0 other)",
        "PSN gap: 2 missing after PSN 102 (0x000066)",
        "Verdict: FAIL: 1 PSN gaps (2 PSNs missing), 1 NAKs, 3 retransmitted requests (exit status 0: no \
         --fail-on given; --fail-on all makes failures exit 3)",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in\n{text}");
    }
}

/// The flow table's rate and latency columns, its legend, and `--top`. Expected values from tshark's listing
/// of rdma_read_lat.pcap: the requester (QP 0x000027) sends 5 READ requests, 370 bytes of frames between
/// 0.249380 s and 0.250482 s (1.102 ms: 370 × 8 / 0.001102 = 2.69 Mb/s); each is answered after 160, 35, 131,
/// 40 and 41 µs: median 41 µs (to the histogram's two significant digits), p99 the largest, 160 µs.
#[test]
fn text_report_shows_rate_latency_and_a_legend() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/public/rdma_read_lat.pcap");
    let o = rocescope(&["analyze", file.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&o.stdout);
    let row = text
        .lines()
        .find(|l| l.contains("0x000027"))
        .unwrap_or_else(|| panic!("no requester row in\n{text}"));
    let cols: Vec<&str> = row.split_whitespace().collect();
    assert!(cols.contains(&"2.7Mb/s"), "{row}");
    let lat = cols.last().unwrap();
    let (p50, p99) = lat.split_once('/').unwrap();
    let p50: f64 = p50.trim_end_matches("µs").parse().unwrap();
    assert!((40.5..41.5).contains(&p50), "{row}");
    assert_eq!(p99, "160.0µs", "{row}");
    assert!(
        text.contains("Legend: state: what the flow came to (ok, congested, lossy,"),
        "{text}"
    );
    assert!(cols.contains(&"ok"), "{row}: the state column");

    // write_loss.pcap: two flows, the requester with the loss first; --top 1 shows it alone.
    let file = dir().join("../lab/write_loss.pcap");
    let o = rocescope(&["analyze", "--top", "1", file.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&o.stdout);
    let table: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("Flows"))
        .skip(2)
        .take_while(|l| !l.starts_with("  ..."))
        .collect();
    assert_eq!(table.len(), 1, "{text}");
    assert!(table[0].contains("0x000015 requester"), "{text}");
    assert!(
        text.contains("  ... and 1 more (a larger --top shows them"),
        "{text}"
    );
}

/// "What happened" tells a sender that ignored its CNPs, RoCE on a priority PFC does not pause, and a pause
/// storm (a line of its own: it has no flow).
#[test]
fn the_story_tells_the_lossless_machinery() {
    let told = [
        (
            "cnp_ignored",
            "did not slow down after its CNPs: its sender kept its rate after 2 of the 2 CNPs measured",
        ),
        (
            "pause_wrong_priority",
            "is not protected by PFC: it runs on priority 0, which PFC never paused while it paused priority 3",
        ),
        (
            "pause_storm",
            "PFC pause storm: priority 3 paused without a break for 300 ms by 1200 XOFFs",
        ),
    ];
    for (name, line) in told {
        let file = dir().join(format!("{name}.pcap"));
        let o = rocescope(&["analyze", file.to_str().unwrap()]);
        let text = String::from_utf8_lossy(&o.stdout);
        let happened: Vec<&str> = text.lines().take_while(|l| !l.is_empty()).collect();
        assert!(
            happened.iter().any(|l| l.contains(line)),
            "{name}: {line:?} not in {happened:?}"
        );
    }
}

/// `analyze A B C` and `analyze DIR` read the pieces of one capture point as one stream in time order: every
/// hand-worked capture split into two files frame by frame (given in reverse order), and rotated into
/// three files without extension in a directory (tcpdump -C's names), analyses as the whole but for
/// `capture.file`. Captures with two frames at one time (their order between files is not the file's)
/// or several link types (one per pcap file) are left out.
#[test]
fn split_and_rotated_pieces_analyse_as_the_whole() {
    let tmp = std::env::temp_dir().join(format!("rocescope-pieces-{}", std::process::id()));
    let rotated = tmp.join("rotated");
    std::fs::create_dir_all(&rotated).unwrap();
    let (mut compared, mut wrong) = (0, Vec::new());
    for sub in ["analysis", "diagnosis", "connections"] {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("testdata")
            .join(sub);
        let mut captures: Vec<PathBuf> = std::fs::read_dir(&root)
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "pcap"))
            .collect();
        captures.sort();
        for capture in captures {
            let frames = frames_of(&capture);
            let ties = frames.windows(2).any(|w| w[0].0 >= w[1].0);
            if ties || frames.iter().any(|f| f.1 != frames[0].1) {
                continue;
            }
            let all: Vec<_> = frames.iter().collect();
            let (a, b) = (tmp.join("a.pcap"), tmp.join("b.pcap"));
            write_pcap(&a, &all.iter().step_by(2).copied().collect::<Vec<_>>());
            write_pcap(
                &b,
                &all.iter().skip(1).step_by(2).copied().collect::<Vec<_>>(),
            );
            let third = all.len().div_ceil(3).max(1);
            for (i, piece) in all.chunks(third).enumerate() {
                let name = if i == 0 {
                    "trace".to_string()
                } else {
                    format!("trace{i}")
                };
                write_pcap(&rotated.join(name), piece);
            }
            let mut want = report(&capture, &[]);
            for mut got in [
                pieces(&[b.to_str().unwrap(), a.to_str().unwrap()]),
                pieces(&[rotated.to_str().unwrap()]),
            ] {
                for r in [&mut want, &mut got] {
                    r["capture"].as_object_mut().unwrap().remove("file");
                }
                if got != want {
                    wrong.push(capture.display().to_string());
                }
            }
            for f in std::fs::read_dir(&rotated).unwrap().flatten() {
                std::fs::remove_file(f.path()).unwrap();
            }
            compared += 1;
        }
    }
    assert!(compared >= 30, "{compared} captures compared");
    assert!(wrong.is_empty(), "analysed differently: {wrong:?}");
}

fn pieces(args: &[&str]) -> Value {
    let mut all = vec!["analyze", "--json"];
    all.extend_from_slice(args);
    let o = rocescope(&all);
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

/// `analyze --points A B`: two capture points made from one lab capture (write_loss.pcap, rxe with netem
/// loss). B's clock runs 5 ms ahead; requests reach B 20 µs after A, responses reach A 20 µs after B. Every
/// 37th request is dropped at B and every 23rd response at A: each is localised to its segment and
/// direction, with its PSN, the offset is found exactly (the delays are symmetric), the delay is 20 µs, and
/// nothing else is lost or missed.
#[test]
fn points_localise_every_dropped_frame() {
    let capture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata/lab/write_loss.pcap");
    let tmp = std::env::temp_dir().join(format!("rocescope-points-{}", std::process::id()));
    let TwoPoints {
        a: pa,
        b: pb,
        lost_forward: lost_fwd,
        lost_reverse: lost_rev,
    } = two_points(&capture, &tmp);
    let r = pieces(&["--points", pa.to_str().unwrap(), pb.to_str().unwrap()]);
    let seg = &r["segments"][0];
    assert!(lost_fwd.len() >= 3 && !lost_rev.is_empty());
    assert_eq!(seg["lost_forward"], lost_fwd.len() as u64, "{seg}");
    assert_eq!(seg["lost_reverse"], lost_rev.len() as u64, "{seg}");
    assert_eq!(seg["one_way_delay_us"]["min"], 20.0);
    assert_eq!(seg["one_way_delay_us"]["max"], 20.0);
    assert_eq!(r["points"][1]["clock_offset_us"], 5000.0);
    // half the smallest round trip: (20 + 20) / 2 µs
    assert_eq!(r["points"][1]["clock_offset_bound_us"], 20.0);
    assert_eq!(r["points"][1]["offset_from"], "both directions");
    let missed = |i: usize| r["points"][i]["missed"].as_u64();
    assert_eq!((missed(0), missed(1)), (Some(0), Some(0)));
    let (na, nb) = (pa.display().to_string(), pb.display().to_string());
    let mut got: Vec<(String, u64)> = r["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            assert_eq!(
                (&e["kind"], &e["severity"]),
                (&"lost_between".into(), &"error".into())
            );
            (
                e["detail"]["from"].as_str().unwrap().to_string(),
                e["psn"].as_u64().unwrap(),
            )
        })
        .collect();
    let mut want: Vec<(String, u64)> = lost_fwd
        .iter()
        .map(|&p| (na.clone(), u64::from(p)))
        .chain(lost_rev.iter().map(|&p| (nb.clone(), u64::from(p))))
        .collect();
    got.sort();
    want.sort();
    assert_eq!(got, want);
    assert_eq!(r["lost_events"], want.len() as u64);
}

/// A capture point given as a directory of rotated pieces (tcpdump -C) is those pieces merged by time: the
/// points of `points_localise_every_dropped_frame`, A rotated into three files, localise the same drops.
#[test]
fn a_point_may_be_a_directory_of_pieces() {
    let capture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata/lab/write_loss.pcap");
    let tmp = std::env::temp_dir().join(format!("rocescope-point-dir-{}", std::process::id()));
    let two = two_points(&capture, &tmp);
    let dir = tmp.join("A-rotated");
    pieces::rotate(&two.a, &dir, 3);
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 3);
    let whole = pieces(&["--points", two.a.to_str().unwrap(), two.b.to_str().unwrap()]);
    let rotated = pieces(&["--points", dir.to_str().unwrap(), two.b.to_str().unwrap()]);
    let seg = &rotated["segments"][0];
    assert_eq!(seg["lost_forward"], two.lost_forward.len() as u64, "{seg}");
    assert_eq!(seg["lost_reverse"], two.lost_reverse.len() as u64, "{seg}");
    assert_eq!(rotated["points"][0]["file"], dir.display().to_string());
    let psns = |r: &Value| -> Vec<u64> {
        let mut v: Vec<u64> = r["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["psn"].as_u64().unwrap())
            .collect();
        v.sort();
        v
    };
    assert_eq!(psns(&rotated), psns(&whole));
    assert_eq!(
        rotated["points"][1]["clock_offset_us"],
        whole["points"][1]["clock_offset_us"]
    );
    let _ = std::fs::remove_dir_all(&tmp);
}

/// The two points of `points_localise_every_dropped_frame`, B's clock also running 200 ppm fast (235 µs
/// over the capture's 1.18 s): the clock is followed, so the one-way delay stays 20 µs each way (matched on
/// the first packets' offset alone it would grow to 255 µs), the drift is stated, and every drop is still
/// localised.
#[test]
fn points_follow_a_drifting_clock() {
    let capture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata/lab/write_loss.pcap");
    let tmp = std::env::temp_dir().join(format!("rocescope-drift-{}", std::process::id()));
    let two = pieces::two_points_drifting(&capture, &tmp, 200.0);
    let r = pieces(&["--points", two.a.to_str().unwrap(), two.b.to_str().unwrap()]);
    let seg = &r["segments"][0];
    assert_eq!(seg["lost_forward"], two.lost_forward.len() as u64, "{seg}");
    assert_eq!(seg["lost_reverse"], two.lost_reverse.len() as u64, "{seg}");
    let delay = &seg["one_way_delay_us"];
    let (min, max) = (
        delay["min"].as_f64().unwrap(),
        delay["max"].as_f64().unwrap(),
    );
    assert!(
        (19.0..=21.0).contains(&min) && (19.0..=21.0).contains(&max),
        "one-way delay {delay}"
    );
    let p = &r["points"][1];
    let ppm = p["clock_drift_ppm"].as_f64().unwrap();
    assert!((195.0..=205.0).contains(&ppm), "drift {ppm} ppm");
    let (m0, m1) = (&r["points"][0]["missed"], &p["missed"]);
    assert_eq!((m0.as_u64(), m1.as_u64()), (Some(0), Some(0)));
    let _ = std::fs::remove_dir_all(&tmp);
}

/// The lossless machinery failing fails the verdict (`lossless`, which `--fail-on lossless` makes exit 3):
/// pause_storm.pcap holds one storm (priority 3 paused 300 ms without a break), pause_wrong_priority.pcap two
/// RoCE flows on PCP 0 while only priority 3 is paused, cnp_ignored.pcap one sender that kept its rate; the
/// sender of cnp_halving.pcap halves its rate after each CNP: congestion signals, no failure.
#[test]
fn lossless_failures_fail_the_verdict() {
    for (name, n) in [
        ("pause_storm", 1),
        ("pause_wrong_priority", 2),
        ("cnp_ignored", 1),
        ("cnp_halving", 0),
    ] {
        let file = dir().join(format!("{name}.pcap"));
        let r = report(&file, &[]);
        let problems = r["verdict"]["problems"].as_array().unwrap();
        let has = problems.iter().any(|p| p == "lossless");
        assert_eq!(has, n > 0, "{name}: {problems:?}");
        let text = r["verdict"]["text"].as_str().unwrap();
        if n > 0 {
            assert_eq!(r["verdict"]["status"], "fail", "{name}");
            assert!(
                text.contains(&format!("{n} lossless-machinery failures")),
                "{name}: {text}"
            );
        }
        let o = rocescope(&["analyze", "--fail-on", "lossless", file.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(if n > 0 { 3 } else { 0 }), "{name}");
    }
}

/// The text report's "Where the time went" tells the hand-worked capture's dominant state (94 % of its
/// 320 µs waiting for ACKs, one request outstanding at a time: examples/make_testdata/life.rs), and says
/// nothing of a flow that mostly sends.
#[test]
fn where_the_time_went_names_the_window() {
    let text = |name: &str| {
        let o = rocescope(&["analyze", dir().join(name).to_str().unwrap()]);
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let t = text("life_one_at_a_time.pcap");
    assert!(
        t.contains(
            "  #0 QP 0x000011 10.0.0.1 → 10.0.0.2: 94 % of its life waiting for ACKs with its window of 1 PSNs \
             outstanding (the send queue depth, credits or the bandwidth-delay product is the limit)\n"
        ),
        "{t}"
    );
    let t = text("pause_storm.pcap");
    assert!(
        t.contains(
            "#0 QP 0x000011 10.0.0.1 → 10.0.0.2: 99 % of its life paused by PFC on its priority"
        ),
        "{t}"
    );
}

/// A flow that begins 100.5 s into a capture lists its own seconds: `first_bucket` 100 (one-second
/// buckets from the capture's start), then its packets and bytes there, not a hundred empty buckets
/// before them (a capture of many such flows once made gigabytes of zeros).
#[test]
fn a_late_flow_lists_its_own_buckets() {
    use parsers::builder::RoceFrame;
    let send = |qp: u32| {
        let mut f = RoceFrame::new(parsers::opcode::rc::SEND_ONLY);
        f.bth.dest_qp = qp;
        f.payload = vec![7; 100];
        f.build()
    };
    let (early, late) = (send(0x11), send(0x12));
    let start = 1_000_000_000_000;
    let frames = [
        (start, 1, early.clone(), early.len() as u32),
        (start + 100_500_000_000, 1, late.clone(), late.len() as u32),
        (start + 101_200_000_000, 1, late.clone(), late.len() as u32),
    ];
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("late-flow.pcap");
    write_pcap(&path, &frames.iter().collect::<Vec<_>>());
    let r = report(&path, &[]);
    let series = |qp: u64| {
        r["flows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["dest_qp"] == qp)
            .map(|f| f["series"].clone())
            .unwrap()
    };
    let len = late.len() as u64;
    assert_eq!(
        series(0x12),
        serde_json::json!({"bucket_seconds": 1, "first_bucket": 100, "packets": [1, 1], "bytes": [len, len]})
    );
    assert_eq!(
        series(0x11),
        serde_json::json!({"bucket_seconds": 1, "first_bucket": 0, "packets": [1], "bytes": [early.len()]})
    );
}
