//! `analyze --annotate OUT.pcapng`, read back by tshark: every event worked out by hand beside the captures
//! of testdata (`NAME.expected.json`: its kind and frame, and the exact count of each diagnosis kind) is a
//! comment on its frame, and the frames are the input's, byte for byte, at the same times.
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn rocescope(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rocescope"))
        .args(args)
        .output()
        .expect("run rocescope")
}

fn tshark(args: &[&str]) -> String {
    let out = Command::new("tshark")
        .args(args)
        .output()
        .expect("tshark is needed (scripts/test installs it)");
    assert!(
        out.status.success(),
        "tshark {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("tshark's output is UTF-8")
}

/// `capture` annotated into `out`, analysed with `args`; the command must succeed.
fn annotate(capture: &Path, out: &Path, args: &[&str]) {
    let mut all = vec!["analyze", "--annotate", out.to_str().unwrap()];
    all.extend(args);
    all.push(capture.to_str().unwrap());
    let got = rocescope(&all);
    // 0, or 3 when the capture's verdict fails (an expectation of its own): not an error.
    assert!(
        matches!(got.status.code(), Some(0 | 3)),
        "{}: {}",
        capture.display(),
        String::from_utf8_lossy(&got.stderr)
    );
}

/// The comments of each frame of `file`, as tshark reads them (frame number, its comments).
fn comments(file: &Path) -> Vec<(u64, Vec<String>)> {
    let text = tshark(&[
        "-r",
        file.to_str().unwrap(),
        "-T",
        "fields",
        "-E",
        "occurrence=a",
        "-E",
        "aggregator=\u{1}",
        "-e",
        "frame.number",
        "-e",
        "frame.comment",
    ]);
    text.lines()
        .map(|line| {
            let (n, c) = line.split_once('\t').unwrap_or((line, ""));
            let list = c
                .split('\u{1}')
                .filter(|s| !s.is_empty())
                .map(str::to_string);
            (n.parse().expect("frame number"), list.collect())
        })
        .collect()
}

fn expectations() -> Vec<(PathBuf, Value)> {
    let mut found = Vec::new();
    for dir in [
        "testdata/analysis",
        "testdata/connections",
        "testdata/diagnosis",
        "testdata/retries",
    ] {
        for entry in std::fs::read_dir(root().join(dir)).unwrap() {
            let path = entry.unwrap().path();
            let Some(name) = path.to_str().and_then(|p| p.strip_suffix(".expected.json")) else {
                continue;
            };
            let want: Value =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            found.push((PathBuf::from(format!("{name}.pcap")), want));
        }
    }
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found
}

#[test]
fn every_event_worked_out_by_hand_is_a_comment_on_its_frame() {
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("annotate");
    std::fs::create_dir_all(&tmp).unwrap();
    let mut errors = Vec::new();
    let mut checked = 0;
    for (capture, want) in expectations() {
        let name = capture.file_stem().unwrap().to_string_lossy().to_string();
        let out = tmp.join(format!("{name}.pcapng"));
        // The options the expectations were worked out with.
        let args: Vec<&str> = want["args"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        annotate(&capture, &out, &args);
        let frames = comments(&out);
        for w in want["events"].as_array().into_iter().flatten() {
            let (kind, frame) = (w["kind"].as_str().unwrap(), w["frame"].as_u64().unwrap());
            let prefix = format!("rocescope: {kind}: ");
            let on_it = frames
                .iter()
                .find(|(n, _)| *n == frame)
                .is_some_and(|(_, c)| c.iter().any(|c| c.starts_with(&prefix)));
            checked += 1;
            if !on_it {
                errors.push(format!("{name}: no {kind} comment on frame {frame}"));
            }
        }
        for (kind, n) in want["diagnosis"].as_object().into_iter().flatten() {
            let prefix = format!("rocescope: {kind}: ");
            let got = frames
                .iter()
                .flat_map(|(_, c)| c)
                .filter(|c| c.starts_with(&prefix))
                .count() as u64;
            if got != n.as_u64().unwrap() {
                errors.push(format!("{name}: {got} {kind} comments, want {n}"));
            }
        }
    }
    assert!(checked >= 50, "only {checked} events checked");
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

/// What tshark shows of each frame but its comments: times, lengths, interface's link type, the bytes.
fn frames_shown(file: &Path) -> String {
    let fields = tshark(&[
        "-r",
        file.to_str().unwrap(),
        "-T",
        "fields",
        "-e",
        "frame.time_epoch",
        "-e",
        "frame.len",
        "-e",
        "frame.cap_len",
        "-e",
        "frame.encap_type",
    ]);
    let bytes = tshark(&["-r", file.to_str().unwrap(), "-x", "-T", "text"]);
    format!("{fields}\n{bytes}")
}

#[test]
fn the_frames_are_the_input_s() {
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("annotate-frames");
    std::fs::create_dir_all(&tmp).unwrap();
    let inputs = [
        // pcapng, a real capture of a stall
        root().join("../shared/corpus/public/Roce_PacketSize_2400_stall.pcapng"),
        // pcap, microseconds
        root().join("testdata/diagnosis/ack_out_of_window.pcap"),
    ];
    for input in inputs {
        let out = tmp.join(format!(
            "{}.pcapng",
            input.file_stem().unwrap().to_string_lossy()
        ));
        annotate(&input, &out, &[]);
        let (a, b) = (frames_shown(&input), frames_shown(&out));
        assert!(a.lines().count() > 10, "{}: {a}", input.display());
        assert_eq!(a, b, "{}", input.display());
    }
}

#[test]
fn one_file_read_twice_or_nothing() {
    let capture = root().join("testdata/diagnosis/ack_out_of_window.pcap");
    let capture = capture.to_str().unwrap();
    for (args, says) in [
        (
            vec!["analyze", "--annotate", "/tmp/x.pcapng", "-"],
            "so not from standard input",
        ),
        (
            vec!["analyze", "--annotate", "/tmp/x.pcapng", capture, capture],
            "give one file",
        ),
    ] {
        let got = rocescope(&args);
        let err = String::from_utf8_lossy(&got.stderr);
        assert_eq!(got.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.starts_with("rocescope: --annotate") && err.contains(says),
            "{err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}

/// A capture cut in the middle of a packet (a tcpdump killed mid-write): the copy holds every whole frame
/// before the cut, as tshark reads them from the cut file, and says where it ends (exit 4, as `analyze`).
#[test]
fn a_cut_capture_is_annotated_up_to_the_cut() {
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("annotate-cut");
    std::fs::create_dir_all(&tmp).unwrap();
    let whole =
        std::fs::read(root().join("../shared/corpus/public/Roce_PacketSize_2400_stall.pcapng"))
            .unwrap();
    let cut = tmp.join("cut.pcapng");
    std::fs::write(&cut, &whole[..3000]).unwrap();
    let out = tmp.join("cut-annotated.pcapng");
    let got = rocescope(&[
        "analyze",
        "--annotate",
        out.to_str().unwrap(),
        cut.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&got.stderr);
    assert_eq!(got.status.code(), Some(4), "{err}");
    assert!(err.contains("the annotated copy ends there"), "{err}");
    // tshark reads the cut file's whole frames, then says it was cut.
    let read = Command::new("tshark")
        .args([
            "-r",
            cut.to_str().unwrap(),
            "-T",
            "fields",
            "-e",
            "frame.number",
        ])
        .output()
        .expect("tshark");
    let before_cut = String::from_utf8_lossy(&read.stdout).lines().count();
    assert!(before_cut > 5, "{before_cut}");
    assert_eq!(comments(&out).len(), before_cut);
}
