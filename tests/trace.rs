//! `rocescope export --trace`: the timeline in the Chrome trace event format. Its pause slice held to the
//! PFC frames' times from tshark and the quanta rule; its message slices to the messages tshark shows
//! (each SEND/WRITE LAST or ONLY PSN once); on every capture of testdata, its slices and instants to what
//! `analyze --json --all-flows` counts, flow by flow, and its tracks to what Perfetto's JSON importer takes
//! (complete slices that never overlap on a track, every track named).
#![cfg(feature = "export")]
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_rocescope");

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn trace(files: &[&Path], out: &Path) -> (String, Value) {
    let o = Command::new(BIN)
        .arg("export")
        .arg("--trace")
        .arg(out)
        .args(files)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(out).unwrap();
    let v = serde_json::from_str(&text).expect("the trace is JSON");
    (text, v)
}

fn analyze(file: &Path) -> Value {
    let o = Command::new(BIN)
        .args(["analyze", "--json", "--all-flows"])
        .arg(file)
        .output()
        .unwrap();
    serde_json::from_slice(&o.stdout).unwrap()
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rocescope-trace-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// The tracks' names, by (pid, tid).
fn track_names(v: &Value) -> BTreeMap<(u64, u64), String> {
    events(v)
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
        .map(|e| {
            (
                (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap()),
                e["args"]["name"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn events(v: &Value) -> impl Iterator<Item = &Value> {
    v["traceEvents"].as_array().unwrap().iter()
}

/// What Perfetto's JSON importer needs: each event's phase and fields; complete slices on a track one
/// after another (it drops slices that overlap without nesting); every track used is named.
fn well_formed(v: &Value, file: &str) {
    let names = track_names(v);
    let mut slices: BTreeMap<(u64, u64), Vec<(f64, f64)>> = BTreeMap::new();
    for e in events(v) {
        let ph = e["ph"].as_str().unwrap();
        assert!(["X", "i", "M"].contains(&ph), "{file}: phase {ph}");
        let pid = e["pid"].as_u64().unwrap();
        if ph == "M" {
            continue;
        }
        let tid = e["tid"].as_u64().unwrap();
        assert!(
            names.contains_key(&(pid, tid)),
            "{file}: track {pid}/{tid} unnamed"
        );
        let ts = e["ts"].as_f64().unwrap();
        if ph == "X" {
            let dur = e["dur"].as_f64().unwrap();
            assert!(dur >= 0.0, "{file}: {e}");
            slices.entry((pid, tid)).or_default().push((ts, ts + dur));
        } else {
            assert_eq!(e["s"], "t", "{file}: an instant on its thread");
        }
    }
    for (track, mut s) in slices {
        s.sort_by(|a, b| a.partial_cmp(b).unwrap());
        for w in s.windows(2) {
            assert!(
                w[1].0 >= w[0].1,
                "{file}: track {track:?}: {:?} overlaps {:?}",
                w[1],
                w[0]
            );
        }
    }
}

/// Slices of `cat` per flow number (from the track's name, "#N ...").
fn per_flow(v: &Value, cat: &str) -> BTreeMap<u64, u64> {
    let names = track_names(v);
    let mut out = BTreeMap::new();
    for e in events(v).filter(|e| e["ph"] == "X" && e["cat"] == cat) {
        let track = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
        let name = &names[&track];
        let n: u64 = name[1..name.find(' ').unwrap()].parse().unwrap();
        *out.entry(n).or_default() += 1;
    }
    out
}

#[test]
fn a_pause_lasts_from_its_xoff_to_its_xon() {
    // tshark: XOFF for priority 3 (65535 quanta, 335.5 us at 100G) at 1767225600.000050, another at
    // .000150 (replacing it), XON at .000250: paused 200 us from the first.
    let file = root().join("testdata/analysis/pfc.pcap");
    let (text, v) = trace(&[&file], &tmp("pfc.json"));
    well_formed(&v, "pfc.pcap");
    let names = track_names(&v);
    let pauses: Vec<&Value> = events(&v).filter(|e| e["cat"] == "pause").collect();
    assert_eq!(pauses.len(), 1);
    let track = (
        pauses[0]["pid"].as_u64().unwrap(),
        pauses[0]["tid"].as_u64().unwrap(),
    );
    assert_eq!(names[&track], "PFC priority 3");
    assert!(
        text.contains("\"ts\":1767225600000050.000,\"dur\":200.000,\"args\":{\"priority\":3}"),
        "exact microseconds: {}",
        pauses[0]
    );
}

#[test]
fn messages_are_the_messages_on_the_wire() {
    // Real rxe WRITEs with requests lost: each message ends in one WRITE LAST/ONLY PSN, resends included
    // once (tshark's opcodes 8-11 and SEND's 2-5).
    let file = root().join("testdata/lab/write_loss.pcap");
    let o = Command::new("tshark")
        .arg("-r")
        .arg(&file)
        .args([
            "-T",
            "fields",
            "-e",
            "infiniband.bth.opcode",
            "-e",
            "infiniband.bth.destqp",
            "-e",
            "infiniband.bth.psn",
        ])
        .output()
        .expect("tshark");
    let ends: BTreeSet<(String, String)> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            let op: u8 = f.first()?.parse().ok()?;
            ((2..=5).contains(&op) || (8..=11).contains(&op))
                .then(|| (f[1].to_string(), f[2].to_string()))
        })
        .collect();
    let (_, v) = trace(&[&file], &tmp("write_loss.json"));
    well_formed(&v, "write_loss.pcap");
    let messages: u64 = per_flow(&v, "message").values().sum();
    assert_eq!(messages, ends.len() as u64);
    assert_eq!(messages, 50, "the lab's 50 WRITEs");
}

#[test]
fn every_capture_traces_what_analyze_counts() {
    let mut files = Vec::new();
    for dir in [
        "testdata/analysis",
        "testdata/lab",
        "testdata/retries",
        "testdata/diagnosis",
        "testdata/connections",
    ] {
        for e in std::fs::read_dir(root().join(dir)).unwrap().flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "pcap" || x == "pcapng") {
                files.push(p);
            }
        }
    }
    files.sort();
    assert!(files.len() > 50, "{} captures", files.len());
    for file in &files {
        let name = file.display().to_string();
        let (_, v) = trace(&[file], &tmp("each.json"));
        well_formed(&v, &name);
        let r = analyze(file);
        let want = |f: &dyn Fn(&Value) -> u64| -> BTreeMap<u64, u64> {
            r["flows"]
                .as_array()
                .unwrap()
                .iter()
                .map(|fl| (fl["id"].as_u64().unwrap(), f(fl)))
                .filter(|(_, n)| *n > 0)
                .collect()
        };
        assert_eq!(
            per_flow(&v, "message"),
            want(&|f| f["messages"]["count"].as_u64().unwrap()),
            "{name}: messages per flow"
        );
        assert_eq!(
            per_flow(&v, "retransmission"),
            want(&|f| f["psn"]["retransmission_episodes"].as_u64().unwrap()),
            "{name}: go-back-N episodes per flow"
        );
        let instants: Vec<(String, u64)> = events(&v)
            .filter(|e| e["ph"] == "i")
            .map(|e| {
                (
                    e["name"].as_str().unwrap().to_string(),
                    e["args"]["frame"].as_u64().unwrap(),
                )
            })
            .collect();
        let reported: Vec<(String, u64)> = r["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["kind"].as_str().unwrap().to_string(),
                    e["frame"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(instants, reported, "{name}: events");
    }
}

#[test]
fn each_capture_is_a_process() {
    let a = root().join("testdata/lab/send.pcap");
    let b = root().join("testdata/lab/write.pcap");
    let (_, v) = trace(&[&a, &b], &tmp("two.json"));
    let processes: Vec<(u64, String)> = events(&v)
        .filter(|e| e["name"] == "process_name")
        .map(|e| {
            (
                e["pid"].as_u64().unwrap(),
                e["args"]["name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        processes,
        [
            (1, format!("capture {}", a.display())),
            (2, format!("capture {}", b.display()))
        ]
    );
    let per_pid = |pid: u64| {
        events(&v)
            .filter(|e| e["cat"] == "message" && e["pid"] == pid)
            .count()
    };
    let one = |f: &Path| {
        let r = analyze(f);
        r["flows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["messages"]["count"].as_u64().unwrap() as usize)
            .sum::<usize>()
    };
    assert_eq!((per_pid(1), per_pid(2)), (one(&a), one(&b)));
}
