//! Capture clocks as evidence with limits (issue "Hostile clocks, logs, trees and files"): one frame stamped
//! decades ahead, or a clock set back, in the middle of a real capture changes no verdict; it is told
//! (`clock_jump`) with its frame, and no stall, timeout, eviction or rate rests on it.
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn analyze(path: &Path) -> Value {
    let o = Command::new(env!("CARGO_BIN_EXE_rocescope"))
        .args(["analyze", "--json"])
        .arg(path)
        .output()
        .expect("run rocescope");
    serde_json::from_slice(&o.stdout).expect("JSON")
}

/// The byte offsets of each record header of a pcap file (24-byte file header, 16-byte record headers).
fn records(pcap: &[u8]) -> Vec<usize> {
    let mut at = 24;
    let mut out = Vec::new();
    while at + 16 <= pcap.len() {
        out.push(at);
        let caplen = u32::from_le_bytes(pcap[at + 8..at + 12].try_into().unwrap()) as usize;
        at += 16 + caplen;
    }
    out
}

const ORIGINAL: &str = "testdata/public/nccl_node0.pcap";

/// The seconds frame `n` (from 1) of the original is stamped.
fn stamp_of(n: usize) -> u32 {
    let bytes = std::fs::read(root().join(ORIGINAL)).unwrap();
    let at = records(&bytes)[n - 1];
    u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap())
}

/// The original with frame `n` (from 1) stamped `ts_sec` seconds.
fn restamped(name: &str, n: usize, ts_sec: u32) -> PathBuf {
    let mut bytes = std::fs::read(root().join(ORIGINAL)).unwrap();
    let at = records(&bytes)[n - 1];
    bytes[at..at + 4].copy_from_slice(&ts_sec.to_le_bytes());
    let path = std::env::temp_dir().join(format!(
        "rocescope-clock-{}-{name}.pcap",
        std::process::id()
    ));
    std::fs::write(&path, bytes).unwrap();
    path
}

/// Everything the verdict and the flows say, but the clock's own words.
fn verdict(r: &Value) -> (Value, Value, Vec<Value>) {
    let flows: Vec<Value> = r["flows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let mut f = f.clone();
            // A frame's time counts in its flow's series and last time: the one held back moves no figure.
            f.as_object_mut().unwrap().remove("series");
            f
        })
        .collect();
    (
        r["verdict"]["problems"].clone(),
        r["flow_totals"].clone(),
        flows,
    )
}

/// nccl_node0.pcap (954 frames over 0.19 s, 4 flows, a clean NCCL run: tshark and analyze agree) with frame
/// 477 stamped 0xfffffff0 (the year 2106), and with frame 477 stamped an hour before the capture: the same
/// flows, figures and verdict as the original, one `clock_jump` at frame 477, kept: false.
#[test]
fn one_wrong_stamp_changes_no_verdict() {
    let original = analyze(&root().join(ORIGINAL));
    assert_eq!(original["capture"]["frames"], 954);
    let was = stamp_of(477);
    for (name, stamp) in [("future", 0xffff_fff0u32), ("past", was - 3600)] {
        let path = restamped(name, 477, stamp);
        let r = analyze(&path);
        assert_eq!(verdict(&r), verdict(&original), "{name}");
        assert_eq!(
            r["capture"]["duration_s"], original["capture"]["duration_s"],
            "{name}"
        );
        let jumps: Vec<&Value> = r["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["kind"] == "clock_jump")
            .collect();
        assert_eq!(jumps.len(), 1, "{name}: {jumps:?}");
        assert_eq!(jumps[0]["frame"], 477, "{name}");
        assert_eq!(jumps[0]["detail"]["kept"], false, "{name}");
        let by = jumps[0]["detail"]["by_s"].as_f64().unwrap();
        let want = f64::from(stamp) - f64::from(was);
        assert!(
            (by - want).abs() < 1.0,
            "{name}: by {by}, want about {want}"
        );
        assert_eq!(r["capture"]["clock_jumps"], 1, "{name}");
        let _ = std::fs::remove_file(path);
    }
}
