//! The diagnosis on real captures: the public corpus' hung and failed applications get their story, every
//! other capture of testdata and the corpus gets no diagnosis event it should not (the exceptions are listed
//! with why), and a capture cut in the middle of a packet is analysed up to the cut.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn corpus() -> PathBuf {
    root().join("../shared/corpus/public")
}

fn rocescope(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rocescope"))
        .args(args)
        .output()
        .expect("run rocescope")
}

fn report(capture: &Path) -> Value {
    let o = rocescope(&["analyze", "--json", capture.to_str().unwrap()]);
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{}: {e}", capture.display()))
}

/// The diagnosis' event kinds, and the lossless machinery's (PFC storms and priorities, CNPs ignored),
/// which every clean capture must be silent on as well.
const DIAGNOSIS: [&str; 18] = [
    "cnp_ignored",
    "pause_storm",
    "pause_on_idle_priority",
    "roce_unprotected",
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
    "cm_reject",
    "cm_timeout",
    "unexpected_qp",
    "start_psn_mismatch",
];

/// The diagnosis events of a report: kind -> count.
fn diagnosis(r: &Value) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for e in r["events"].as_array().unwrap() {
        let kind = e["kind"].as_str().unwrap();
        if DIAGNOSIS.contains(&kind) {
            *out.entry(kind.to_string()).or_insert(0) += 1;
        }
    }
    out
}

fn event<'r>(r: &'r Value, kind: &str) -> &'r Value {
    r["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} event"))
}

/// The rping that stalls (Roce_PacketSize_2400_stall) and the failed rping (rping 3072_faillire): a READ of
/// 2400 / 3072 bytes at path MTU 1024 takes 3 PSNs, the next SEND reuses the READ's last PSN, the peer ACKs
/// PSN 16777215 (never sent), and nothing follows. PSNs and frames from `tshark -r FILE -Y infiniband`.
#[test]
fn the_corpus_stalls_are_told() {
    for (file, read_psn, send_frame, ack_frame, end_gap_s) in [
        (
            "Roce_PacketSize_2400_stall.pcapng",
            7_488_511,
            147,
            148,
            145.9,
        ),
        ("rping 3072_faillire.pcapng", 4_445_926, 70, 71, 16.3),
    ] {
        let path = corpus().join(file);
        if !path.exists() {
            eprintln!("no corpus at {}: skipped", corpus().display());
            return;
        }
        let r = report(&path);
        let want: BTreeMap<String, u64> =
            [("psn_reuse", 1), ("ack_out_of_window", 1), ("stall", 1)]
                .into_iter()
                .map(|(k, n)| (k.to_string(), n))
                .collect();
        assert_eq!(diagnosis(&r), want, "{file}");
        let reuse = event(&r, "psn_reuse");
        assert_eq!(reuse["frame"], send_frame, "{file}");
        assert_eq!(reuse["detail"]["psn"], read_psn + 2, "{file}");
        assert_eq!(reuse["detail"]["read_psn"], read_psn, "{file}");
        assert_eq!(reuse["detail"]["read_psns"], 3, "{file}");
        let ack = event(&r, "ack_out_of_window");
        assert_eq!(
            (&ack["frame"], &ack["psn"]),
            (&Value::from(ack_frame), &Value::from(0xFF_FFFF)),
            "{file}"
        );
        let stall = event(&r, "stall");
        assert_eq!(stall["frame"], send_frame, "{file}");
        assert_eq!(stall["detail"]["psn"], read_psn + 2, "{file}");
        assert_eq!(stall["detail"]["at_end"], true, "{file}");
        let waited = stall["detail"]["waited_s"].as_f64().unwrap();
        assert!((waited - end_gap_s).abs() < 0.1, "{file}: waited {waited}");
        assert_eq!(r["verdict"]["status"], "fail", "{file}");
        let text = String::from_utf8_lossy(&rocescope(&["analyze", path.to_str().unwrap()]).stdout)
            .into_owned();
        let happened = text.lines().nth(1).unwrap_or("");
        for needle in [
            "stalled",
            "reused a PSN of the READ",
            "16777215",
            "which was never sent",
            "nothing followed",
        ] {
            assert!(
                happened.contains(needle),
                "{file}: {needle:?} not in {happened:?}"
            );
        }
    }
}

/// Frame_req_and_response_htons_bytes: QP 0x11 is reused by a new connection after 22 s (frame 266, PSN
/// 16227732 = 0xf79d94 at 24.822757 s; the flow's packet before it is frame 54, an ACK at 2.999082 s): a new
/// epoch, not a retransmission; no gap, no go-back-N.
#[test]
fn a_reused_qp_is_a_new_connection() {
    let path = corpus().join("Frame_req_and_response_htons_bytes.pcapng");
    if !path.exists() {
        return;
    }
    let r = report(&path);
    let want: BTreeMap<String, u64> = [("new_epoch".to_string(), 1)].into_iter().collect();
    assert_eq!(diagnosis(&r), want);
    let e = event(&r, "new_epoch");
    assert_eq!(
        (&e["frame"], &e["psn"]),
        (&Value::from(266), &Value::from(16_227_732))
    );
    let idle = e["detail"]["idle_s"].as_f64().unwrap();
    assert!((idle - (24.822757 - 2.999082)).abs() < 1e-5, "{idle}");
    assert!(
        r["events"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["kind"] != "go_back_n")
    );
    assert_eq!(r["verdict"]["status"], "pass");
}

/// The Soft-RoCE lab's failures, from the facts of testdata/lab/README.md (tshark's frames and times, gen's
/// error line, rxe's hw_counters): each diagnosis event at the frame the facts name, with the figures they
/// give, and the first line of "What happened" says it in words.
#[test]
fn the_lab_failures_are_told() {
    struct Want {
        file: &'static str,
        /// (kind, frame, psn, detail key, detail value)
        events: &'static [(&'static str, u64, u32, &'static str, f64)],
        /// Timeout retransmissions' frames and exponents.
        timeouts: &'static [(u64, u64)],
        told: &'static [&'static str],
    }
    let wants = [
        // Nothing answers; PSN 0xb30961 resent in frames 33, 65, 97, 0.072653 / 0.068367 / 0.072633 s apart
        // (4.096 µs × 2^14 = 67.1 ms ≤ each < 2^15); the last requester frame at 0.214832 s, the end at
        // 1.667735 s.
        Want {
            file: "wrong_qpn.pcap",
            events: &[
                ("no_response", 1, 0xb30961, "requests", 128.0),
                ("no_response", 1, 0xb30961, "waited_s", 1.667735),
                ("retry_exhausted", 97, 0xb30961, "resends", 3.0),
                (
                    "retry_exhausted",
                    97,
                    0xb30961,
                    "silent_s",
                    1.667735 - 0.214832,
                ),
            ],
            timeouts: &[(33, 14), (65, 14), (97, 14)],
            told: &[
                "got no response",
                "retry count exceeded",
                "IBV_WC_RETRY_EXC_ERR",
            ],
        },
        // The last ACK for 0x292b02; 0x292b03..0x292b06 (4 PSNs) first sent from frame 123 at 0.623092 s,
        // resent in frames 127, 131, 135, 0.549016 / 0.543734 / 0.543774 s apart (2^17 = 0.537 s); the last
        // requester frame at 2.259930 s, the end at 5.178435 s.
        Want {
            file: "responder_killed.pcap",
            events: &[
                ("stall", 123, 0x292b03, "outstanding", 4.0),
                ("stall", 123, 0x292b03, "waited_s", 5.178435 - 0.623092),
                ("retry_exhausted", 135, 0x292b03, "resends", 3.0),
                (
                    "retry_exhausted",
                    135,
                    0x292b03,
                    "silent_s",
                    5.178435 - 2.259930,
                ),
            ],
            timeouts: &[(127, 17), (131, 17), (135, 17)],
            told: &["gave up", "0x292b03", "IBV_WC_RETRY_EXC_ERR"],
        },
        // RNR NAKs for 0x38090c in frames 2, 11, 14, 20, each resend after a NAK; the last requester frame
        // at 0.042444 s, the end at 1.325919 s.
        Want {
            file: "no_receive.pcap",
            events: &[
                ("rnr_exhausted", 20, 0x38090c, "rnr_naks", 4.0),
                (
                    "rnr_exhausted",
                    20,
                    0x38090c,
                    "silent_s",
                    1.325919 - 0.042444,
                ),
                ("stall", 1, 0x38090c, "outstanding", 4.0),
                ("stall", 1, 0x38090c, "waited_s", 1.325919),
            ],
            timeouts: &[],
            told: &["gave up", "4 RNR NAKs", "IBV_WC_RNR_RETRY_EXC_ERR"],
        },
    ];
    for w in wants {
        let path = root().join("testdata/lab").join(w.file);
        let r = report(&path);
        for &(kind, frame, psn, key, value) in w.events {
            let e = event(&r, kind);
            assert_eq!(
                (&e["frame"], &e["psn"]),
                (&Value::from(frame), &Value::from(psn)),
                "{}: {e}",
                w.file
            );
            let got = e["detail"][key].as_f64().unwrap_or(f64::NAN);
            assert!(
                (got - value).abs() <= 2e-6,
                "{}: {kind}.{key} {got}, want {value}",
                w.file
            );
        }
        let timeouts: Vec<(u64, u64)> = r["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["kind"] == "timeout_retransmission")
            .map(|e| {
                (
                    e["frame"].as_u64().unwrap(),
                    e["detail"]["timeout_exponent"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(timeouts, w.timeouts, "{}", w.file);
        let text = String::from_utf8_lossy(&rocescope(&["analyze", path.to_str().unwrap()]).stdout)
            .into_owned();
        let happened = text.lines().nth(1).unwrap_or("");
        for needle in w.told {
            assert!(
                happened.contains(needle),
                "{}: {needle:?} not in {happened:?}",
                w.file
            );
        }
    }
}

/// Captures whose diagnosis events are expected, with why; every other capture must have none.
fn expected_diagnosis(name: &str) -> Vec<(&'static str, u64)> {
    match name {
        // bad_icrc.pcap (built to: one SEND of PSN 0 copied, two of the copies with a bad ICRC, the last
        // resent with no NAK) has none: 1 ms after the send is below any local ACK timeout in use, no timer.
        // Built to: one NAK of each code for PSNs 10-14 with MSNs 10-14, then two responses for PSN 0 with
        // MSNs 9 and 10: older responses (a lower PSN, a lower MSN) coming later, held up on the way
        // (`reordered` notes), not a responder that went back.
        "Roce_PacketSize_2400_stall.pcapng" | "rping 3072_faillire.pcapng" => {
            vec![("ack_out_of_window", 1), ("psn_reuse", 1), ("stall", 1)]
        }
        "Frame_req_and_response_htons_bytes.pcapng" => vec![("new_epoch", 1)],
        // Two clients connecting to ports nobody listens on: two REJs (testdata/lab/README.md).
        "testdata/lab/conn_reject.pcap" => vec![("cm_reject", 2)],
        // The lab's failures (testdata/lab/README.md; the_lab_failures_are_told).
        "testdata/lab/wrong_qpn.pcap" => vec![
            ("no_response", 1),
            ("retry_exhausted", 1),
            ("timeout_retransmission", 3),
        ],
        "testdata/lab/responder_killed.pcap" => vec![
            ("retry_exhausted", 1),
            ("stall", 1),
            ("timeout_retransmission", 3),
        ],
        "testdata/lab/no_receive.pcap" => vec![("rnr_exhausted", 1), ("stall", 1)],
        // Built to (examples/make_testdata/congestion.rs): a 300 ms storm on priority 3; pauses on priority
        // 3 while RoCE runs on PCP 0 (two flows). dscp_unprotected fires only with its --dscp-map.
        "testdata/analysis/pause_storm.pcap" => vec![("pause_storm", 1)],
        // A sender that keeps its rate after both CNPs.
        "testdata/analysis/cnp_ignored.pcap" => vec![("cnp_ignored", 1)],
        "testdata/analysis/pause_wrong_priority.pcap" => {
            vec![("pause_on_idle_priority", 1), ("roce_unprotected", 2)]
        }
        // Built to (examples/make_testdata/retries.rs): the READ's last response lost, resumed on the timer.
        "testdata/retries/read_resumed_after_its_last_response_was_lost.pcap" => {
            vec![("timeout_retransmission", 1)]
        }
        // Built to: a WRITE lost, resent on the timer 20 ms later.
        "testdata/retries/a_request_resent_on_its_timer_past_the_reorder_window.pcap" => {
            vec![("timeout_retransmission", 1)]
        }
        _ => Vec::new(),
    }
}

/// The lab's loss captures (testdata/lab/README.md, lab/retry_facts.py; tests/lab_retries.rs holds them to
/// their facts): rxe resends on its ACK timer as the loss falls (`timeout_retransmission`), and a PSN whose
/// resend was lost too waits longer than the stall time (`stall`); how many of those a run has is up to the
/// loss, but each timer is at least the shortest in the lab (perftest's default exponent 14: 4.096 µs ×
/// 2^14 = 67.1 ms; the generator's is 2^17). Every other diagnosis event is wrong on them: READs resumed
/// mid-message and atomics resent are what a NIC does, no violation.
const LOSS_CAPTURES: [&str; 4] = [
    "testdata/lab/read_loss_resp.pcap",
    "testdata/lab/read_loss_req.pcap",
    "testdata/lab/gen_read_loss.pcap",
    "testdata/lab/atomic_loss.pcap",
];
const SHORTEST_TIMER_S: f64 = 0.0671;
const LOSS_TIMING: [&str; 2] = ["timeout_retransmission", "stall"];

/// The flows of a capture that have a diagnosis, in the order every view lists them (most trouble first),
/// with their `state`, as each capture was built or recorded (the comments of `expected_diagnosis`, the
/// builders in examples/make_testdata, testdata/lab/README.md); every other flow of every capture is `ok`,
/// `congested` or `lossy`.
fn expected_leaders(name: &str) -> Vec<(u64, &'static str)> {
    match name {
        // The rpings stalled after reusing a READ's PSN (flow 3, the requester of the READ), answered by a
        // responder (flow 2) with a response for a PSN never sent.
        "Roce_PacketSize_2400_stall.pcapng" | "rping 3072_faillire.pcapng" => {
            vec![(3, "stalled"), (2, "violation")]
        }
        // The REQ's flow (QP 1) carries the REJs and the handshakes that timed out.
        "testdata/connections/cm_rejects.pcap"
        | "testdata/connections/cm_timeouts.pcap"
        | "testdata/lab/conn_reject.pcap" => vec![(0, "misconnected")],
        // The first data flow (after the two CM flows) starts at another PSN than announced, or goes to a
        // QPN nobody announced.
        "testdata/connections/cm_start_psn_mismatch.pcap"
        | "testdata/connections/cm_wrong_qpn.pcap" => {
            vec![(2, "misconnected")]
        }
        // The responder (flow 1) answers outside the window, lets its MSN go back, or its READ responses
        // do not match the READ.
        "testdata/diagnosis/ack_out_of_window.pcap"
        | "testdata/diagnosis/msn_regression.pcap"
        | "testdata/diagnosis/read_response_outside_the_read.pcap"
        | "testdata/diagnosis/read_responses_short_of_the_length.pcap" => vec![(1, "violation")],
        "testdata/diagnosis/psn_reuse_after_a_read.pcap"
        | "testdata/diagnosis/psn_reuse_found_at_the_end.pcap" => vec![(0, "violation")],
        // The requester's SEND never acknowledged; its responder answered a PSN never sent.
        "testdata/diagnosis/an_answer_for_a_psn_never_sent.pcap" => {
            vec![(0, "stalled"), (1, "violation")]
        }
        "testdata/diagnosis/no_response.pcap" | "testdata/lab/wrong_qpn.pcap" => {
            vec![(0, "no_response")]
        }
        "testdata/diagnosis/two_requesters_are_not_paired_by_elimination.pcap" => {
            vec![(0, "no_response"), (1, "no_response")]
        }
        // The ACK before any request is flow 0; the SEND is flow 1.
        "testdata/diagnosis/two_responders_are_not_paired_by_elimination.pcap" => {
            vec![(1, "no_response")]
        }
        "testdata/diagnosis/stall_across_the_psn_wrap.pcap"
        | "testdata/diagnosis/stall_at_end.pcap"
        | "testdata/diagnosis/stall_ends_before_the_capture.pcap" => vec![(0, "stalled")],
        // Loss both ways (testdata/lab/README.md): PSN 3497101's FETCH_ADD first sent at frame 5 (0.0018 s),
        // its ATOMIC ACKNOWLEDGE, after two resends on the timer, at frame 14 (1.134 s): unanswered longer
        // than the stall time (1 s).
        "testdata/lab/atomic_loss.pcap" => vec![(0, "stalled")],
        // The requesters that gave up (their responders' RNR NAKs make those lossy, not diagnosed).
        "testdata/diagnosis/rnr_retry_exhausted.pcap"
        | "testdata/diagnosis/timeouts_then_retry_exhausted.pcap"
        | "testdata/lab/no_receive.pcap"
        | "testdata/lab/responder_killed.pcap" => vec![(0, "gave_up")],
        _ => Vec::new(),
    }
}

/// Every capture of testdata and the corpus.
fn every_capture() -> Vec<(String, PathBuf)> {
    let mut captures: Vec<(String, PathBuf)> = Vec::new();
    for sub in [
        "analysis",
        "connections",
        "diagnosis",
        "edge",
        "lab",
        "public",
        "retries",
    ] {
        for e in std::fs::read_dir(root().join("testdata").join(sub))
            .unwrap()
            .flatten()
        {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.ends_with(".pcap") || name.ends_with(".pcapng") {
                captures.push((format!("testdata/{sub}/{name}"), e.path()));
            }
        }
    }
    if let Ok(entries) = std::fs::read_dir(corpus()) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.ends_with(".pcap") || name.ends_with(".pcapng") {
                captures.push((name, e.path()));
            }
        }
    }
    captures
}

/// The diagnosis leads every view: in the JSON's order and the text report's flow table (the TUI lists as
/// the text does: tests/tui.rs), the flows with a diagnosis come first, with their `state`, and no other
/// flow has one.
#[test]
fn the_diagnosis_leads_every_view() {
    let captures = every_capture();
    assert!(captures.len() >= 80, "{} captures", captures.len());
    let mut wrong = Vec::new();
    let mut led = 0;
    for (name, path) in &captures {
        let want = expected_leaders(name);
        let r = report(path);
        let json: Vec<(u64, String)> = r["flows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                (
                    f["id"].as_u64().unwrap(),
                    f["state"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        let text = String::from_utf8_lossy(&rocescope(&["analyze", path.to_str().unwrap()]).stdout)
            .into_owned();
        let table: Vec<(u64, String)> = text
            .lines()
            .skip_while(|l| !l.starts_with("Flows (most trouble first)"))
            .skip(2)
            .map_while(|l| {
                let cols: Vec<&str> = l.split_whitespace().collect();
                let id = cols.first()?.parse().ok()?;
                // id, source, →, destination, QP, role, state (an address may hold a space: `LID: 4`).
                let qp = cols.iter().position(|c| c.starts_with("0x"))?;
                Some((id, cols.get(qp + 2)?.to_string()))
            })
            .collect();
        for (view, flows) in [("json", &json), ("text", &table)] {
            let leading: Vec<(u64, &str)> = flows
                .iter()
                .take(want.len())
                .map(|(id, s)| (*id, s.as_str()))
                .collect();
            if leading != want {
                wrong.push(format!(
                    "{name}: {view} leads with {leading:?}, want {want:?}"
                ));
            }
            for (id, state) in flows.iter().skip(want.len()) {
                if !["ok", "congested", "lossy"].contains(&state.as_str()) {
                    wrong.push(format!("{name}: {view}: flow {id} is {state}"));
                }
            }
        }
        if table.len() != json.len() {
            wrong.push(format!(
                "{name}: {} rows, {} flows",
                table.len(),
                json.len()
            ));
        }
        led += usize::from(!want.is_empty());
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(led >= 20, "{led} captures with a diagnosis");
}

/// Frames seen twice within the mirror window from another place: none but where built so.
fn expected_mirror_duplicates(name: &str) -> u64 {
    match name {
        // Built to (examples/make_testdata/retries.rs): a SPAN port's second copy of each of 7 frames.
        "testdata/retries/a_span_port_copies_every_frame.pcap" => 7,
        // Built to: the same SEND_ONLY PSN 0 captured on three interfaces (Ethernet, SLL, SLL2), 1 µs
        // apart: one frame seen three times, not a frame resent twice.
        "testdata/edge/multi_interface.pcapng" => 2,
        _ => 0,
    }
}

#[test]
fn clean_captures_get_no_diagnosis() {
    // The captures built to be diagnosed are held to their worked-out figures (tests/analyze.rs).
    let captures: Vec<(String, PathBuf)> = every_capture()
        .into_iter()
        .filter(|(name, _)| {
            !name.starts_with("testdata/diagnosis/") && !name.starts_with("testdata/connections/")
        })
        .collect();
    assert!(captures.len() >= 40, "{} captures", captures.len());
    let mut wrong = Vec::new();
    for (name, path) in &captures {
        let want: BTreeMap<String, u64> = expected_diagnosis(name)
            .into_iter()
            .map(|(k, n)| (k.to_string(), n))
            .collect();
        let r = report(path);
        let mut got = diagnosis(&r);
        // The reordering captures (netem's reorder, no loss) get none: what was held up is no resend.
        if LOSS_CAPTURES.contains(&name.as_str()) {
            got.retain(|kind, _| !LOSS_TIMING.contains(&kind.as_str()));
            for e in r["events"].as_array().unwrap() {
                let interval = e["detail"]["interval_s"].as_f64().unwrap_or(0.0);
                if e["kind"] == "timeout_retransmission" && interval < SHORTEST_TIMER_S {
                    wrong.push(format!(
                        "{name}: a timer of {interval} s at frame {}",
                        e["frame"]
                    ));
                }
            }
        }
        if got != want {
            wrong.push(format!("{name}: {got:?}, want {want:?}"));
        }
        let duplicates = &r["capture"]["mirror_duplicates"];
        if duplicates.as_u64() != Some(expected_mirror_duplicates(name)) {
            wrong.push(format!("{name}: {duplicates} mirror duplicates"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// A capture cut in the middle of a packet (a killed tcpdump): the frames before the cut are analysed, a
/// warning says where it broke, `capture.truncated` is true and the exit status is 4 (3 when a `--fail-on`
/// condition is present).
#[test]
fn a_capture_cut_short_is_analysed_up_to_the_cut() {
    // gap_nak_go_back_n.pcap: 11 frames; cutting 10 bytes off the last record leaves 10 whole ones.
    let whole = std::fs::read(root().join("testdata/analysis/gap_nak_go_back_n.pcap")).unwrap();
    let cut = std::env::temp_dir().join(format!("rocescope-cut-{}.pcap", std::process::id()));
    std::fs::write(&cut, &whole[..whole.len() - 10]).unwrap();
    let c = cut.to_str().unwrap();
    let o = rocescope(&["analyze", "--json", c]);
    assert_eq!(o.status.code(), Some(4));
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["capture"]["frames"], 10);
    assert_eq!(r["capture"]["truncated"], true);
    assert_eq!(r["verdict"]["exit_status"], 4);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("ends in the middle of a packet after 10 complete packets"),
        "{err}"
    );
    let text = String::from_utf8_lossy(&rocescope(&["analyze", c]).stdout).into_owned();
    assert!(text.contains("WARNING:"), "{text}");
    assert!(
        text.contains("analysed up to the cut (exit status 4)"),
        "{text}"
    );
    assert_eq!(
        rocescope(&["analyze", "--fail-on", "gaps", c])
            .status
            .code(),
        Some(3)
    );
    let _ = std::fs::remove_file(cut);
}

/// Why a flow is slow, on real rxe: testdata/lab/no_receive.pcap, SENDs to a QP with no receive posted. From
/// tshark: the requester's life runs from its first SEND to the last packet for it (the last NAK), and from
/// the first RNR NAK (AETH syndrome 0x20-0x3f) on, a PSN RNR-NAKed is never acknowledged: `rnr_wait`
/// (docs/analysis.md), the time before it `sending` (the window grows with each SEND until the NAK).
#[test]
fn an_rnr_wait_is_its_life() {
    let cap = root().join("testdata/lab/no_receive.pcap");
    let o = Command::new("tshark")
        .args([
            "-r",
            cap.to_str().unwrap(),
            "-Y",
            "infiniband",
            "-T",
            "fields",
        ])
        .args([
            "-e",
            "frame.time_epoch",
            "-e",
            "ip.src",
            "-e",
            "infiniband.aeth.syndrome",
        ])
        .output()
        .expect("tshark");
    let frames: Vec<(f64, String, Option<u64>)> = String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let v: Vec<&str> = l.split('\t').collect();
            (v[0].parse().unwrap(), v[1].to_string(), v[2].parse().ok())
        })
        .collect();
    let first = frames.iter().find(|f| f.1 == "10.0.0.1").unwrap().0;
    let last = frames.last().unwrap().0;
    let rnr = frames
        .iter()
        .find(|f| f.2.is_some_and(|s| (0x20..0x40).contains(&s)))
        .unwrap()
        .0;
    let r = report(&cap);
    let life = &r["flows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["src"] == "10.0.0.1")
        .unwrap()["life"];
    let round = |x: f64| (x * 1e4).round() / 1e4;
    let share = |k: &str| life["shares"][k].as_f64().unwrap();
    assert_eq!(life["dominant"], "rnr_wait", "{life}");
    assert!(
        (life["seconds"].as_f64().unwrap() - (last - first)).abs() < 1e-6,
        "{life}"
    );
    assert_eq!(
        share("rnr_wait"),
        round((last - rnr) / (last - first)),
        "{life}"
    );
    assert_eq!(
        share("sending"),
        round((rnr - first) / (last - first)),
        "{life}"
    );
}
