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

/// Two capture points of testdata/lab/write.pcap (32 WRITEs of 4 packets and their ACKs, nothing lost): A
/// the capture, B 5 µs further for requests and 5 µs nearer for ACKs (the responder's side, one clock).
fn two_points(
    name: &str,
    change_b: impl FnOnce(&mut Vec<(u64, Vec<u8>, u32)>),
) -> (PathBuf, PathBuf) {
    use parsers::savefile::{self, Resolution};
    let frames = {
        use rocescope::source::{FileSource, Next, PacketSource};
        let mut src = FileSource::open(&root().join("testdata/lab/write.pcap")).unwrap();
        let mut out = Vec::new();
        while let Ok(Next::Packet { packet: p, .. }) = src.next() {
            out.push((p.ts_nanos, p.data.to_vec(), p.orig_len));
        }
        out
    };
    let mut b: Vec<(u64, Vec<u8>, u32)> = frames
        .iter()
        .filter_map(|(t, d, l)| {
            let f = parsers::parse_frame(1, d, *l as usize, &Default::default());
            let request = f.roce?.bth.op().is_request();
            let t = if request { t + 5_000 } else { t - 5_000 };
            Some((t, d.clone(), *l))
        })
        .collect();
    change_b(&mut b);
    let write = |suffix: &str, frames: &[(u64, Vec<u8>, u32)]| {
        let path = std::env::temp_dir().join(format!(
            "rocescope-clock-{}-{name}-{suffix}.pcap",
            std::process::id()
        ));
        let mut out = Vec::new();
        savefile::pcap_file_header(&mut out, Resolution::Nanos, 262_144, 1);
        for (t, d, l) in frames {
            savefile::pcap_record(&mut out, Resolution::Nanos, *t, d, *l);
        }
        std::fs::write(&path, out).unwrap();
        path
    };
    (write("a", &frames), write("b", &b))
}

fn points(a: &Path, b: &Path) -> Value {
    let o = Command::new(env!("CARGO_BIN_EXE_rocescope"))
        .args(["analyze", "--json", "--points"])
        .args([a, b])
        .output()
        .expect("run rocescope");
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)))
}

fn lost_between(r: &Value) -> usize {
    r["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "lost_between")
        .count()
}

/// One ACK at B stamped 500 ms late: its offset sample contradicts every other (its lower bound above every
/// upper one) and is left out, the offset stays within the round trip's ±5 µs of 0, and the ACK is B's
/// late sighting, not a loss.
#[test]
fn one_late_stamp_at_a_point_is_no_loss() {
    let (a, b) = two_points("late", |b| {
        let ack = b
            .iter()
            .position(|(_, d, l)| {
                let f = parsers::parse_frame(1, d, *l as usize, &Default::default());
                f.roce.is_some_and(|r| !r.bth.op().is_request())
            })
            .unwrap();
        b[ack + 20].0 += 500_000_000;
        b.sort_by_key(|f| f.0);
    });
    let r = points(&a, &b);
    let p = &r["points"][1];
    assert_eq!(p["offset_rejected"], 1, "{p}");
    let offset = p["clock_offset_us"].as_f64().unwrap();
    assert!(offset.abs() <= 5.0, "{p}");
    assert_eq!(p["clock_offset_bound_us"], 5.0, "{p}");
    assert_eq!(
        (&p["late"], &p["missed"]),
        (&Value::from(1), &Value::from(0)),
        "{p}"
    );
    assert_eq!(lost_between(&r), 0, "{r}");
    for f in [a, b] {
        let _ = std::fs::remove_file(f);
    }
}

/// B's first frame an ACK stamped 2096 (a copy of its first ACK), before every good frame: taken at the
/// second frame's time, it holds up no merge, and nothing is lost (it was every request, and every packet
/// both lost and missed).
#[test]
fn a_far_future_first_frame_at_a_point_is_no_loss() {
    let (a, b) = two_points("future", |b| {
        let ack = b
            .iter()
            .find(|(_, d, l)| {
                let f = parsers::parse_frame(1, d, *l as usize, &Default::default());
                f.roce.is_some_and(|r| !r.bth.op().is_request())
            })
            .cloned()
            .unwrap();
        b.insert(0, (u64::from(0xffff_fff0u32) * 1_000_000_000, ack.1, ack.2));
    });
    let r = points(&a, &b);
    assert_eq!(lost_between(&r), 0, "{r}");
    let p = &r["points"][1];
    assert!(p["clock_offset_us"].as_f64().unwrap().abs() <= 5.0, "{p}");
    for f in [a, b] {
        let _ = std::fs::remove_file(f);
    }
}
