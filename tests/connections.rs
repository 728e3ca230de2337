//! Connections held against the wire: the lab's perftest runs with what perftest printed (`--expect` of the
//! run's log: both hosts' output), and with another run's log (a wrong expectation, which must be flagged).
//!
//! The expectations come from the logs and the captures themselves, read here without rocescope: perftest's
//! "local address" lines (QPN, PSN, GID in decimal bytes) and, from tshark, the first request each way.
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn lab() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata/lab")
}

fn rocescope(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rocescope"))
        .args(args)
        .output()
        .expect("run rocescope")
}

fn analyze(capture: &Path, expect: &Path, extra: &[&str]) -> (Value, Output) {
    let mut args = vec![
        "analyze",
        "--json",
        capture.to_str().unwrap(),
        "--expect",
        expect.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = rocescope(&args);
    let r = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "{}: {e}: {}",
            capture.display(),
            String::from_utf8_lossy(&o.stderr)
        )
    });
    (r, o)
}

/// A host's own address as perftest printed it: (IP from the GID, QPN, PSN).
#[derive(Debug, Clone, PartialEq)]
struct Printed {
    ip: String,
    qpn: u64,
    psn: u64,
}

/// The "local address" line of each host in a lab log, with the GID line after it.
fn printed(log: &Path) -> Vec<Printed> {
    let text = std::fs::read_to_string(log).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let Some(rest) = l.trim().strip_prefix("local address:") else {
            continue;
        };
        let w: Vec<&str> = rest.split_whitespace().collect();
        let field = |k: &str| {
            let at = w.iter().position(|x| *x == k).unwrap();
            u64::from_str_radix(w[at + 1].trim_start_matches("0x"), 16).unwrap()
        };
        let gid = lines[i + 1].trim().strip_prefix("GID:").unwrap().trim();
        let bytes: Vec<&str> = gid.split(':').collect();
        let ip = bytes[12..]
            .iter()
            .map(|b| b.parse::<u8>().unwrap().to_string())
            .collect::<Vec<_>>()
            .join(".");
        out.push(Printed {
            ip,
            qpn: field("QPN"),
            psn: field("PSN"),
        });
    }
    out
}

/// tshark's first request (opcode below 0x10 or an atomic) from `src` to QP `qpn`: (frame, PSN).
fn first_request(capture: &Path, src: &str, qpn: u64) -> Option<(u64, u64)> {
    let filter = format!(
        "ip.src == {src} && infiniband.bth.destqp == {qpn} && (infiniband.bth.opcode < 0x10 || \
         infiniband.bth.opcode == 0x13 || infiniband.bth.opcode == 0x14)"
    );
    let o = Command::new("tshark")
        .args(["-r", capture.to_str().unwrap(), "-Y", &filter, "-c", "1"])
        .args([
            "-T",
            "fields",
            "-e",
            "frame.number",
            "-e",
            "infiniband.bth.psn",
        ])
        .output()
        .expect("run tshark (the test command installs it)");
    let text = String::from_utf8_lossy(&o.stdout);
    let mut w = text.split_whitespace();
    Some((w.next()?.parse().ok()?, w.next()?.parse().ok()?))
}

const RUNS: [&str; 7] = [
    "write",
    "read",
    "send",
    "atomic",
    "write_ecn",
    "write_loss",
    "send_rnr",
];

/// Each perftest run against its own printout: one connection, its two sides as printed, each direction
/// that sent requests starting at the PSN its side printed, nothing toward other QPNs: matched, no
/// connection event.
#[test]
fn perftest_runs_match_what_perftest_printed() {
    for run in RUNS {
        let (capture, log) = (
            lab().join(format!("{run}.pcap")),
            lab().join(format!("{run}.log")),
        );
        let hosts = printed(&log);
        assert_eq!(hosts.len(), 2, "{run}: two hosts' printouts");
        let (r, o) = analyze(&capture, &log, &["--fail-on", "connections"]);
        assert_eq!(o.status.code(), Some(0), "{run}");
        let list = r["connections"].as_array().unwrap();
        assert_eq!(list.len(), 1, "{run}: {list:?}");
        let c = &list[0];
        assert_eq!(
            (&c["origin"], &c["state"], &c["matched"]),
            (
                &Value::from("printout"),
                &Value::from("established"),
                &Value::from(true)
            ),
            "{run}: {c}"
        );
        let mut requests = 0;
        for (i, side) in c["sides"].as_array().unwrap().iter().enumerate() {
            // The first log printed is the side listed first.
            let (me, peer) = (&hosts[i], &hosts[1 - i]);
            assert_eq!(side["address"], me.ip.as_str(), "{run}");
            assert_eq!(side["qpn"], me.qpn, "{run}");
            assert_eq!(side["start_psn"], me.psn, "{run}");
            let wire = first_request(&capture, &me.ip, peer.qpn);
            assert_eq!(
                (side["first_frame"].as_u64(), side["first_psn"].as_u64()),
                (wire.map(|w| w.0), wire.map(|w| w.1)),
                "{run}: side {i}"
            );
            if let Some((_, psn)) = wire {
                assert_eq!(psn, me.psn, "{run}: the wire starts at the printed PSN");
                requests += 1;
            }
        }
        assert!(requests >= 1, "{run}: no requests either way");
        // The printed QPs name the two directions of the connection: the flows toward each printed QPN
        // (from the other host) are each other's pair, found by the printout.
        let flow_to = |src: &str, qpn: u64| {
            r["flows"]
                .as_array()
                .unwrap()
                .iter()
                .find(|f| f["src"] == src && f["dest_qp"] == qpn)
                .cloned()
        };
        let (a, b) = (&hosts[0], &hosts[1]);
        if let (Some(ab), Some(ba)) = (flow_to(&a.ip, b.qpn), flow_to(&b.ip, a.qpn)) {
            assert_eq!(
                (&ab["paired_with"], &ab["paired_by"], &ba["paired_by"]),
                (
                    &ba["id"],
                    &Value::from("printout"),
                    &Value::from("printout")
                ),
                "{run}"
            );
        } else {
            panic!("{run}: no flow each way between the printed QPs");
        }
        let kinds: Vec<&str> = r["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|e| e["kind"].as_str())
            .filter(|k| ["unexpected_qp", "start_psn_mismatch"].contains(k))
            .collect();
        assert!(kinds.is_empty(), "{run}: {kinds:?}");
    }
}

/// The write run held against the read run's printout: its data goes to QPN 0x11 (write.log), which the
/// read run's hosts never announced (they printed 0x13): unexpected_qp at the write run's first request,
/// the announced connection unused, `--fail-on connections` exits 3.
#[test]
fn another_runs_printout_is_flagged() {
    let (capture, log) = (lab().join("write.pcap"), lab().join("read.log"));
    let write = printed(&lab().join("write.log"));
    let read = printed(&log);
    assert_ne!(write[0].qpn, read[0].qpn, "the two runs must differ in QPN");
    let (r, o) = analyze(&capture, &log, &["--fail-on", "connections"]);
    assert_eq!(o.status.code(), Some(3));
    let client = write.iter().find(|h| h.ip == "10.0.0.1").unwrap();
    let server = write.iter().find(|h| h.ip == "10.0.0.2").unwrap();
    let (frame, _) = first_request(&capture, &client.ip, server.qpn).unwrap();
    let unexpected: Vec<&Value> = r["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "unexpected_qp")
        .collect();
    assert_eq!(unexpected.len(), 1, "{unexpected:?}");
    assert_eq!(
        (&unexpected[0]["frame"], &unexpected[0]["detail"]["qpn"]),
        (&Value::from(frame), &Value::from(server.qpn))
    );
    let c = &r["connections"][0];
    assert_eq!(c["matched"], false);
    assert_eq!(c["sides"][0]["first_psn"], Value::Null);
    assert_eq!(c["sides"][1]["first_psn"], Value::Null);
    let text = String::from_utf8_lossy(
        &rocescope(&[
            "analyze",
            capture.to_str().unwrap(),
            "--expect",
            log.to_str().unwrap(),
        ])
        .stdout,
    )
    .into_owned();
    assert!(text.contains(": MISMATCH: "), "{text}");
}

/// A log with no address lines is a one-line error that says what --expect reads.
#[test]
fn a_log_without_addresses_is_refused() {
    let o = rocescope(&[
        "analyze",
        lab().join("write.pcap").to_str().unwrap(),
        "--expect",
        lab().join("wrong_qpn.log").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("no \"local address\" and \"remote address\" lines (perftest, ibv_*_pingpong) and no NCCL \
                      or UCX line"),
        "{err}"
    );
}

/// Every CM capture of the public corpus: one connection per REQ communication ID (tshark's
/// `infiniband.cm.req`), in order, with the REQ's QPN as the active side's and the REQ's starting PSN as the
/// PSN the passive side sends from, and the wire matching the handshake.
#[test]
fn the_corpus_handshakes_are_held_against_their_data() {
    let corpus = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/public");
    let Ok(dir) = std::fs::read_dir(&corpus) else {
        eprintln!("no corpus at {}: skipped", corpus.display());
        return;
    };
    let mut checked = 0;
    for path in dir.flatten().map(|e| e.path()) {
        let fields = [
            "infiniband.cm.req",
            "infiniband.cm.req.localqpn",
            "infiniband.cm.req.startpsn",
        ];
        let o = Command::new("tshark")
            .arg("-r")
            .arg(&path)
            .args(["-Y", "infiniband.cm.req", "-T", "fields"])
            .args(fields.iter().flat_map(|f| ["-e", f]))
            .output()
            .expect("run tshark");
        let mut reqs: Vec<(u64, u64, u64)> = Vec::new();
        for line in String::from_utf8_lossy(&o.stdout).lines() {
            let v: Vec<u64> = line
                .split('\t')
                .map(|x| u64::from_str_radix(x.trim_start_matches("0x"), 16).unwrap())
                .collect();
            if !reqs.iter().any(|r| r.0 == v[0]) {
                reqs.push((v[0], v[1], v[2]));
            }
        }
        if reqs.is_empty() {
            continue;
        }
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        let o = rocescope(&["analyze", "--json", path.to_str().unwrap()]);
        let r: Value = serde_json::from_slice(&o.stdout).unwrap();
        let got = r["connections"].as_array().unwrap();
        assert_eq!(got.len(), reqs.len(), "{file}: {got:?}");
        for (c, (_, qpn, passive_psn)) in got.iter().zip(&reqs) {
            assert_eq!(c["origin"], "cm", "{file}");
            assert_eq!(c["sides"][0]["qpn"], *qpn, "{file}: {c}");
            assert_eq!(c["sides"][1]["start_psn"], *passive_psn, "{file}: {c}");
            assert_eq!(c["matched"], true, "{file}: {c}");
        }
        checked += 1;
    }
    // 15 corpus captures carry CM MADs (tshark -Y infiniband.mad), every one a REQ.
    assert_eq!(checked, 15);
}
