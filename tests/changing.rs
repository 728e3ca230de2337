//! Files that change under the reader (issue 27): a capture that shrinks while it is analysed (a restarted
//! `tcpdump -w` truncates its file) gives the report of what could be read and one warning line, never a
//! signal. Before, the memory-mapped reader touched pages that were gone: SIGBUS, exit 135, no report.
use std::fs::{self, File, OpenOptions};
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

fn tmp(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("changing-{name}"))
}

/// A clean synthetic capture (no loss, no CE mark) of `frames` frames at path MTU 1024: about 800 bytes a
/// frame.
fn capture(path: &Path, frames: u64) {
    let params = synth::Params {
        frames,
        loss: 0.0,
        ce: 0.0,
        seed: 5,
        ..synth::Params::default()
    };
    synth::generate(&params, BufWriter::new(File::create(path).unwrap())).unwrap();
}

/// Whether process `pid` has `path` open (its /proc/PID/fd links).
fn has_open(pid: u32, path: &Path) -> bool {
    let want = fs::canonicalize(path).unwrap();
    fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| {
            d.flatten()
                .any(|e| fs::read_link(e.path()).is_ok_and(|l| l == want))
        })
        .unwrap_or(false)
}

/// A 90 MB capture cut to 1 MB while `analyze` reads it: exit 4 (a capture cut short), one warning line
/// naming the sizes and how far it was read, and the report is exactly that of the bytes read (the same
/// figures as `analyze` of a copy of the file's first bytes, as many as were read).
#[test]
fn a_capture_that_shrinks_while_it_is_read_is_reported_up_to_what_was_read() {
    let file = tmp("shrinks.pcap");
    capture(&file, 112_000);
    let size = fs::metadata(&file).unwrap().len();
    assert!(size > 88_000_000 && size < 92_000_000, "{size}");
    let child = Command::new(env!("CARGO_BIN_EXE_rocescope"))
        .args(["analyze", "--json", "--no-progress"])
        .arg(&file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while !has_open(child.id(), &file) {
        assert!(t0.elapsed() < Duration::from_secs(20), "never opened");
        std::thread::sleep(Duration::from_millis(1));
    }
    OpenOptions::new()
        .write(true)
        .open(&file)
        .unwrap()
        .set_len(1 << 20)
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(4), "{:?}: {err}", out.status);
    assert_eq!(err.lines().count(), 1, "{err}");
    let prefix = format!(
        "rocescope: warning: '{}' shrank from {size} to 1048576 bytes while it was read (truncated by another \
         program, as a restarted tcpdump -w does): ",
        file.display()
    );
    assert!(err.starts_with(&prefix), "{err}");
    // "N bytes read, M complete packets: analysed up to the cut"
    let rest = err[prefix.len()..].trim_end();
    let (read, rest) = rest.split_once(" bytes read, ").unwrap();
    let (packets, rest) = rest.split_once(" complete packets").unwrap();
    assert_eq!(rest, ": analysed up to the cut");
    let read: u64 = read.parse().unwrap();
    let packets: u64 = packets.parse().unwrap();
    assert!(
        read >= 1 << 20 && read <= size,
        "read {read} of {size} bytes"
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["capture"]["frames"], packets);
    // The same bytes, as a file of their own: the same figures
    capture(&tmp("whole.pcap"), 112_000);
    let whole = fs::read(tmp("whole.pcap")).unwrap();
    let part = tmp("part.pcap");
    fs::write(&part, &whole[..read as usize]).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_rocescope"))
        .args(["analyze", "--json", "--no-progress"])
        .arg(&part)
        .output()
        .unwrap();
    let w: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(w["capture"]["frames"], packets);
    for k in ["flows", "events", "verdict"] {
        assert_eq!(v[k], w[k], "{k}");
    }
    for f in [file, part, tmp("whole.pcap")] {
        let _ = fs::remove_file(f);
    }
}
