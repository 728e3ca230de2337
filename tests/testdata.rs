//! The captures in testdata/ against the results written beside them, and every truncation of every
//! RoCE frame in them.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use parsers::icrc::IcrcStatus;
use parsers::{Config, MalformedKind, parse_frame};
use rocescope::source::FileSource;
use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata")
}

fn dissect_json(file: &Path) -> Vec<BTreeMap<String, Value>> {
    let out = Command::new(env!("CARGO_BIN_EXE_rocescope"))
        .args(["dissect", "--all", "--json"])
        .arg(file)
        .output()
        .expect("run rocescope");
    assert!(
        out.status.success(),
        "{}: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect()
}

fn files_with(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("read testdata")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    v.sort();
    v
}

#[test]
fn edge_cases_give_the_expected_fields() {
    let files = files_with(&root().join("edge"), ".expected.jsonl");
    assert!(files.len() >= 10, "edge-case expectations missing");
    for expected_file in files {
        let stem = expected_file
            .to_string_lossy()
            .replace(".expected.jsonl", "");
        let capture = [".pcap", ".pcapng"]
            .map(|ext| PathBuf::from(format!("{stem}{ext}")))
            .into_iter()
            .find(|p| p.exists())
            .expect("capture beside its expectations");
        let ours = dissect_json(&capture);
        let text = std::fs::read_to_string(&expected_file).expect("read expectations");
        let expected: Vec<BTreeMap<String, Value>> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("expectation line"))
            .collect();
        assert_eq!(
            ours.len(),
            expected.len(),
            "{}: frame count",
            capture.display()
        );
        for (frame, want) in ours.iter().zip(&expected) {
            for (key, value) in want {
                assert_eq!(
                    frame.get(key),
                    Some(value),
                    "{} frame {}: {key}",
                    capture.display(),
                    want["frame.number"]
                );
            }
            // Frames built intact and not expected otherwise carry no damage report.
            if !want.contains_key("rocescope.malformed") {
                assert!(
                    !frame.contains_key("rocescope.malformed"),
                    "{}: {frame:?}",
                    capture.display()
                );
            }
        }
    }
}

#[test]
fn public_captures_match_their_tshark_counts() {
    let dir = root().join("public");
    let table = std::fs::read_to_string(dir.join("expected.tsv")).expect("expected.tsv");
    let mut checked = 0;
    for line in table.lines().filter(|l| !l.starts_with('#')) {
        let cols: Vec<&str> = line.split('\t').collect();
        let [file, frames, roce, histogram] = cols[..] else {
            panic!("bad row {line}")
        };
        let ours = dissect_json(&dir.join(file));
        assert_eq!(
            ours.len(),
            frames.parse::<usize>().unwrap(),
            "{file}: frames"
        );
        let roce_frames: Vec<_> = ours
            .iter()
            .filter(|f| f.get("udp.dstport") == Some(&Value::from(4791)))
            .collect();
        assert_eq!(
            roce_frames.len(),
            roce.parse::<usize>().unwrap(),
            "{file}: UDP 4791 frames"
        );
        let mut counts = BTreeMap::new();
        for f in &roce_frames {
            *counts
                .entry(f["infiniband.bth.opcode"].as_u64().unwrap())
                .or_insert(0u64) += 1;
            assert_eq!(
                f["rocescope.icrc_status"], "valid",
                "{file} frame {}",
                f["frame.number"]
            );
            assert!(
                !f.contains_key("rocescope.malformed"),
                "{file} frame {}",
                f["frame.number"]
            );
        }
        let want: BTreeMap<u64, u64> = histogram
            .split(' ')
            .map(|kv| {
                let (k, v) = kv.split_once(':').unwrap();
                (k.parse().unwrap(), v.parse().unwrap())
            })
            .collect();
        assert_eq!(counts, want, "{file}: opcode histogram");
        checked += 1;
    }
    assert_eq!(checked, 20);
}

/// Every prefix of every RoCE frame, as a snaplen cut and as a frame that really ends there: never a
/// panic; a snaplen cut is either `CutBySnaplen` or an unverifiable ICRC; a short frame is malformed.
#[test]
fn every_truncation_of_every_roce_frame_is_reported() {
    let cfg = Config::default();
    let mut frames = 0;
    let mut cuts = 0;
    for dir in ["edge", "public", "lab"] {
        let dir = root().join(dir);
        for file in files_with(&dir, ".pcap")
            .into_iter()
            .chain(files_with(&dir, ".pcapng"))
        {
            let mut src = FileSource::open(&file).expect("open");
            while let Some(p) = src.next_packet().expect("read") {
                let full = parse_frame(p.linktype, p.data, p.orig_len as usize, &cfg);
                if full.roce.is_none() || full.is_snapped() || full.malformed.is_some() {
                    continue;
                }
                frames += 1;
                // Where the IP packet ends: bytes after it are Ethernet padding, not RoCE.
                let link_len = match full.link {
                    Some(parsers::frame::Link::Sll(h)) => h.header_len(),
                    _ => 14,
                };
                let l3 = link_len + 4 * full.vlans.iter().flatten().count();
                let packet_end = match full.ip {
                    Some(parsers::frame::Ip::V4(h)) => l3 + usize::from(h.total_len),
                    Some(parsers::frame::Ip::V6(h)) => l3 + 40 + usize::from(h.payload_len),
                    None => {
                        l3 + 40
                            + full
                                .roce
                                .and_then(|r| r.grh)
                                .map_or(0, |g| usize::from(g.0.payload_len))
                    }
                };
                for cut in 0..p.data.len() {
                    let prefix = &p.data[..cut];
                    cuts += 1;
                    let snapped = parse_frame(p.linktype, prefix, p.data.len(), &cfg);
                    let short = parse_frame(p.linktype, prefix, cut, &cfg);
                    if cut >= packet_end {
                        assert_eq!(snapped.malformed, None);
                        assert_eq!(snapped.roce.unwrap().icrc_status, Some(IcrcStatus::Valid));
                        continue;
                    }
                    match snapped.malformed {
                        Some(m) => assert!(
                            matches!(m.kind, MalformedKind::CutBySnaplen { .. }),
                            "{} cut {cut}: {m}",
                            file.display()
                        ),
                        None => assert_eq!(
                            snapped.roce.and_then(|r| r.icrc_status),
                            Some(IcrcStatus::Unverifiable),
                            "{} cut {cut}",
                            file.display()
                        ),
                    }
                    let m = short
                        .malformed
                        .unwrap_or_else(|| panic!("{} cut {cut}: not malformed", file.display()));
                    assert!(!m.is_snaplen(), "{} cut {cut}: {m}", file.display());
                }
            }
        }
    }
    assert!(frames > 1000, "only {frames} RoCE frames");
    assert!(cuts > 100_000);
}

/// Real Soft-RoCE traffic from the lab (testdata/lab/README.md): every figure in expected.tsv was counted
/// from tshark fields and an independent ICRC check when the captures were made.
#[test]
fn lab_captures_match_their_tshark_counts() {
    let dir = root().join("lab");
    let table = std::fs::read_to_string(dir.join("expected.tsv")).expect("expected.tsv");
    let mut checked = 0;
    for line in table.lines().filter(|l| !l.starts_with('#')) {
        let cols: Vec<&str> = line.split('\t').collect();
        let [file, frames, roce, histogram, naks, rnr, ce, retransmitted] = cols[..] else {
            panic!("bad row {line}")
        };
        let n = |s: &str| s.parse::<u64>().unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_rocescope"))
            .args(["analyze", "--json"])
            .arg(dir.join(file))
            .output()
            .expect("run rocescope");
        let r: Value = serde_json::from_slice(&out.stdout).expect("report");
        assert_eq!(r["capture"]["frames"], n(frames), "{file}");
        assert_eq!(r["capture"]["roce_frames"], n(roce), "{file}");
        assert_eq!(r["capture"]["icrc_bad"], 0, "{file}: every ICRC is valid");
        assert_eq!(r["capture"]["malformed"], 0, "{file}");
        let flows = r["flows"].as_array().unwrap();
        let sum = |f: &dyn Fn(&Value) -> u64| flows.iter().map(f).sum::<u64>();
        let mut counts: BTreeMap<String, u64> = BTreeMap::new();
        for f in flows {
            for (name, c) in f["opcodes"].as_object().unwrap() {
                *counts.entry(name.clone()).or_default() += c.as_u64().unwrap();
            }
        }
        let want: BTreeMap<String, u64> = histogram
            .split(' ')
            .map(|kv| {
                let (k, v) = kv.split_once(':').unwrap();
                (
                    parsers::opcode::Opcode(k.parse().unwrap())
                        .name()
                        .to_string(),
                    n(v),
                )
            })
            .collect();
        assert_eq!(counts, want, "{file}: opcodes");
        let nak_total = |f: &Value| {
            f["naks"]
                .as_object()
                .unwrap()
                .values()
                .map(|v| v.as_u64().unwrap())
                .sum()
        };
        assert_eq!(sum(&nak_total), n(naks), "{file}: NAKs");
        assert_eq!(
            sum(&|f| f["rnr_naks"].as_u64().unwrap()),
            n(rnr),
            "{file}: RNR NAKs"
        );
        assert_eq!(
            sum(&|f| f["ecn"]["ce"].as_u64().unwrap()),
            n(ce),
            "{file}: CE"
        );
        // expected.py's `retransmitted` is every request frame behind the highest PSN consumed before: the
        // analysis counts each as a retransmission or, the first copy of a PSN overtaken on the path, as
        // reordered (`psn.reordered`; the reordering captures, lab/retry_facts.py)
        assert_eq!(
            sum(&|f| f["psn"]["retransmitted"].as_u64().unwrap()
                + f["psn"]["reordered"].as_u64().unwrap_or(0)),
            n(retransmitted),
            "{file}: retransmitted + reordered requests"
        );
        // A connection tshark shows rejected (REJ) fails the verdict too.
        let rejects = Command::new("tshark")
            .arg("-r")
            .arg(dir.join(file))
            .args(["-Y", "infiniband.cm.rej.reason"])
            .output()
            .expect("run tshark")
            .stdout
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .count() as u64;
        let clean = n(naks) + n(rnr) + n(retransmitted) + rejects == 0;
        assert_eq!(
            r["verdict"]["status"],
            if clean { "pass" } else { "fail" },
            "{file}"
        );
        if clean {
            assert_eq!(
                sum(&|f| f["psn"]["gap_events"].as_u64().unwrap()),
                0,
                "{file}: a clean run has no gaps"
            );
        }
        checked += 1;
    }
    assert_eq!(checked, 22);
}
