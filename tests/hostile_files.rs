//! Hostile files (issue 27), each rebuilt from its recipe. A capture that shrinks while it is analysed (a
//! restarted `tcpdump -w` truncates its file) gives the report of what could be read and one warning line,
//! never a signal (the memory-mapped reader touched pages that were gone: SIGBUS, exit 135, no report).
//! `--expect` and the lab's state file are read to a bound, and what is not a regular file, or is larger
//! than the bound, is refused in one line at once (`--expect /dev/zero` grew to the machine's memory, a 3 GB
//! sparse file was "out of memory").
use std::fs::{self, File, OpenOptions};
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

fn tmp(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("hostile-{name}"))
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

/// `rocescope ARGS` with `env`, killed after 20 s: exit status, stdout, stderr, seconds taken.
fn rocescope(args: &[&str], env: &[(&str, &Path)]) -> (Option<i32>, String, String, f64) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rocescope"));
    c.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    for (k, v) in env {
        c.env(k, v);
    }
    let t0 = Instant::now();
    let mut child = c.spawn().unwrap();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("rocescope {args:?} did not end within 20 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let o = child.wait_with_output().unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
        t0.elapsed().as_secs_f64(),
    )
}

/// `--expect /dev/zero`, a FIFO, a directory and a 3 GB sparse file: one line each, at once, exit 1; a log
/// of 64 MiB (the bound) is read, one byte more is refused.
#[test]
fn expect_reads_regular_files_to_a_bound() {
    let cap = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata/lab/write.pcap");
    let cap = cap.to_str().unwrap();
    let sparse = tmp("sparse.log");
    File::create(&sparse).unwrap().set_len(3 << 30).unwrap();
    let fifo = tmp("fifo.log");
    let _ = fs::remove_file(&fifo);
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let dir = tmp("dir.log");
    fs::create_dir_all(&dir).unwrap();
    let sparse_s = sparse.display().to_string();
    let fifo_s = fifo.display().to_string();
    let dir_s = dir.display().to_string();
    for (log, why) in [
        (
            "/dev/zero",
            "a character device, not a regular file".to_string(),
        ),
        (fifo_s.as_str(), "a FIFO, not a regular file".to_string()),
        (
            dir_s.as_str(),
            "a directory, not a regular file".to_string(),
        ),
        (
            sparse_s.as_str(),
            "3221225472 bytes, more than the 64 MiB read at most".to_string(),
        ),
    ] {
        let (code, out, err, secs) = rocescope(&["analyze", cap, "--expect", log], &[]);
        assert_eq!(
            err,
            format!(
                "rocescope: --expect {log}: {why} (--expect reads a saved output of perftest or \
                 ibv_*_pingpong, or an NCCL or UCX log)\n"
            )
        );
        assert_eq!((code, out.as_str()), (Some(1), ""), "{log}");
        assert!(secs < 5.0, "{log}: {secs} s");
    }
    // At the bound: read (and held against the capture); one byte more: refused
    let log = fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata/lab/write.log"),
    )
    .unwrap();
    let big = tmp("big.log");
    let mut text = log.clone();
    let pad = (64usize << 20) - text.len();
    text.push_str(&"#".repeat(pad - 1));
    text.push('\n');
    assert_eq!(text.len(), 64 << 20);
    fs::write(&big, &text).unwrap();
    let (code, out, err, _) = rocescope(
        &["analyze", cap, "--expect", big.to_str().unwrap(), "--json"],
        &[],
    );
    assert_eq!(code, Some(0), "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert!(!v["connections"].as_array().unwrap().is_empty());
    text.push('#');
    fs::write(&big, &text).unwrap();
    let (code, _, err, _) = rocescope(&["analyze", cap, "--expect", big.to_str().unwrap()], &[]);
    assert_eq!(code, Some(1));
    assert!(
        err.contains("67108865 bytes, more than the 64 MiB read at most"),
        "{err}"
    );
    for f in [sparse, fifo, big] {
        let _ = fs::remove_file(f);
    }
}

/// `ROCESCOPE_LAB_STATE=/dev/zero lab status` (and a 3 GB sparse state file): one line, at once.
#[test]
fn the_lab_state_file_is_read_to_a_bound() {
    let sparse = tmp("sparse.json");
    File::create(&sparse).unwrap().set_len(3 << 30).unwrap();
    for (state, why) in [
        (
            Path::new("/dev/zero"),
            "a character device, not a regular file",
        ),
        (
            sparse.as_path(),
            "3221225472 bytes, more than the 1 MiB read at most",
        ),
    ] {
        let (code, out, err, secs) =
            rocescope(&["lab", "status"], &[("ROCESCOPE_LAB_STATE", state)]);
        assert_eq!(
            err,
            format!(
                "rocescope: lab: the state file {} is {why}: not lab up's; move it away if no lab is up\n",
                state.display()
            )
        );
        assert_eq!((code, out.as_str()), (Some(1), ""));
        assert!(secs < 5.0, "{secs} s");
    }
    let _ = fs::remove_file(sparse);
}

/// A directory of pieces whose last is only a magic number (a rotating tcpdump's new file): left out with a
/// warning, the rest analysed as the good piece alone (it failed the whole directory).
#[test]
fn a_partial_piece_is_left_out_of_its_directory() {
    let dir = tmp("pieces");
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    let good = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata/lab/write.pcap");
    fs::copy(&good, dir.join("trace0")).unwrap();
    fs::write(dir.join("trace1"), [0xd4, 0xc3, 0xb2, 0xa1]).unwrap();
    let d = dir.to_str().unwrap();
    let (code, out, err, _) = rocescope(&["analyze", "--json", d], &[]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        err,
        format!(
            "rocescope: warning: '{}' ends in the middle of the file header (file truncated?): left out (it \
             holds no whole packet); the other files are analysed\n",
            dir.join("trace1").display()
        )
    );
    let v: Value = serde_json::from_str(&out).unwrap();
    let (_, alone, _, _) = rocescope(&["analyze", "--json", good.to_str().unwrap()], &[]);
    let w: Value = serde_json::from_str(&alone).unwrap();
    assert_eq!(v["capture"]["frames"], w["capture"]["frames"]);
    for k in ["flows", "events", "verdict"] {
        assert_eq!(v[k], w[k], "{k}");
    }
    let _ = fs::remove_dir_all(&dir);
}

/// Standard input cannot be read twice: `--points -` and `--plot` from standard input say so in one line
/// (they said "standard input is empty" and "-: No such file or directory").
#[test]
fn inputs_read_twice_are_not_standard_input() {
    let cap = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata/lab/write.pcap");
    for (args, want) in [
        (
            vec!["analyze", "--points", "-", cap.to_str().unwrap()],
            "rocescope: --points reads each capture more than once (the clocks, then the matching), so not from \
             standard input: save it to a file and give that\n",
        ),
        (
            vec!["analyze", "-", "--plot", tmp("plots").to_str().unwrap()],
            "rocescope: --plot reads the capture twice (the plotted flows' frames once more), so not from \
             standard input: save it to a file and give that\n",
        ),
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_rocescope"))
            .args(&args)
            .stdin(File::open(&cap).unwrap())
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&o.stderr), want, "{args:?}");
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        assert!(o.stdout.is_empty());
    }
}
