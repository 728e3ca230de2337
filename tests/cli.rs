//! `rocescope dissect` as a user runs it: output, filters, standard input and exit statuses.
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

fn public(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/public")
        .join(name)
}

fn rocescope(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rocescope"))
        .args(args)
        .output()
        .expect("run rocescope")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Values from `tshark -r rdma_write_bw.pcap`: frames 22-25 are WRITE FIRST/MIDDLE/LAST to QP 0x1b with
/// PSNs 5454383-5454385 (DMA length 3000) and the ACK to QP 0x1d for PSN 5454385.
#[test]
fn default_lines_show_roce_frames_only() {
    let file = public("rdma_write_bw.pcap");
    let o = rocescope(&["dissect", file.to_str().unwrap()]);
    assert!(o.status.success());
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 20, "20 RoCE frames of 60");
    assert!(lines[0].trim_start().starts_with("22 "), "{}", lines[0]);
    assert!(
        lines[0].contains("10.1.16.62 → 10.1.16.61 QP=0x00001b RC_WRITE_FIRST PSN=5454383"),
        "{}",
        lines[0]
    );
    assert!(lines[0].contains("len=3000"), "{}", lines[0]);
    assert!(
        lines[2].contains("RC_WRITE_LAST PSN=5454385 AckReq"),
        "{}",
        lines[2]
    );
    assert!(
        lines[3].contains("QP=0x00001d RC_ACKNOWLEDGE PSN=5454385 ACK"),
        "{}",
        lines[3]
    );
    assert_eq!(
        stderr(&o).trim(),
        "60 frames (20 RoCE, 40 other), 20 shown; --all shows the others"
    );
}

#[test]
fn all_shows_every_frame() {
    let file = public("rdma_write_bw.pcap");
    let o = rocescope(&["dissect", "--all", file.to_str().unwrap()]);
    assert_eq!(stdout(&o).lines().count(), 60);
}

#[test]
fn filters_by_count_qp_and_opcode() {
    let file = public("rdma_write_bw.pcap");
    let f = file.to_str().unwrap();
    assert_eq!(
        stdout(&rocescope(&["dissect", "-c", "3", f]))
            .lines()
            .count(),
        3
    );
    // tshark: 5 ACKs, all to QP 0x1d; 15 WRITE packets to QP 0x1b: `--qp` takes both directions of the
    // connection, whichever QP it names.
    let both = stdout(&rocescope(&["dissect", "--qp", "0x1d", f]));
    assert_eq!(both.lines().count(), 20);
    assert_eq!(
        both.lines()
            .filter(|l| l.contains("RC_ACKNOWLEDGE"))
            .count(),
        5
    );
    assert_eq!(stdout(&rocescope(&["dissect", "--qp", "27", f])), both);
    // From standard input the pairing is known from the first ACK on: the 3 WRITEs before it are not.
    let piped = pipe(
        &["dissect", "--qp", "0x1d", "-"],
        &std::fs::read(&file).unwrap(),
    );
    assert_eq!(stdout(&piped).lines().count(), 17);
    assert_eq!(
        stdout(&rocescope(&["dissect", "--opcode", "acknowledge", f]))
            .lines()
            .count(),
        5
    );
    assert_eq!(
        stdout(&rocescope(&["dissect", "--opcode", "RC_WRITE_MIDDLE", f]))
            .lines()
            .count(),
        5
    );
    assert_eq!(
        stdout(&rocescope(&["dissect", "--opcode", "0x06", f]))
            .lines()
            .count(),
        5
    );
    // SEND_ONLY without a transport matches UD_SEND_ONLY in the UD ping-pong (10 frames per tshark).
    let ud = public("pingpong_ud.pcap");
    assert_eq!(
        stdout(&rocescope(&[
            "dissect",
            "--opcode",
            "SEND_ONLY",
            ud.to_str().unwrap()
        ]))
        .lines()
        .count(),
        10
    );
}

fn pipe(args: &[&str], input: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rocescope"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A run that stops before reading (a usage error) closes the pipe early.
    let _ = child.stdin.take().unwrap().write_all(input);
    child.wait_with_output().unwrap()
}

/// `-r` as tshark takes it, several of them in turn, and `-c 0`.
#[test]
fn read_flags_and_count_zero() {
    let a = public("rdma_write_bw.pcap");
    let b = public("rdma_read_lat.pcap");
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    assert_eq!(
        stdout(&rocescope(&["dissect", "-r", a])),
        stdout(&rocescope(&["dissect", a]))
    );
    let both = rocescope(&["dissect", "-r", a, "-r", b, "-c", "2"]);
    let out = stdout(&both);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 6, "{lines:?}");
    assert_eq!(lines[0], format!("==> {a} <=="));
    assert!(lines[1].trim_start().starts_with("22 "), "{}", lines[1]);
    assert_eq!(lines[3], format!("==> {b} <=="));
    assert_eq!(stderr(&both).lines().count(), 2);
    let none = rocescope(&["dissect", "-r", a, "-c", "0"]);
    assert!(none.status.success());
    assert_eq!(stdout(&none), "");
    // A file named twice.
    for args in [&["dissect", "-r", a, a][..], &["analyze", "-r", a, a]] {
        assert_eq!(rocescope(args).status.code(), Some(2), "{args:?}");
    }
    assert_eq!(
        stdout(&rocescope(&["analyze", "-r", a, "--json"])),
        stdout(&rocescope(&["analyze", a, "--json"]))
    );
}

/// The analysis' fields on testdata/analysis/gap_nak_go_back_n.pcap, from the capture's hand-worked
/// figures (examples/make_testdata/analysis.rs): WRITEs 100-102 (frames 1-3), an ACK (4), WRITE 105 (5: the
/// gap, 103 and 104 missing), the NAK (6), the resends 103, 104, 105 (7-9: go-back-N at 7), WRITE 106 (10),
/// the ACK (11); the responder's flow is the second (1). stall_at_end.pcap: the stall is frame 3's, found
/// at the end of the capture.
#[test]
fn display_filters_on_the_analysis() {
    let analysis = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata/analysis");
    let gap = analysis.join("gap_nak_go_back_n.pcap");
    let frames = |file: &std::path::Path, filter: &str| -> Vec<u64> {
        let o = rocescope(&[
            "dissect",
            "-r",
            file.to_str().unwrap(),
            "-Y",
            filter,
            "-T",
            "fields",
            "-e",
            "frame.number",
        ]);
        assert!(o.status.success(), "{filter}: {}", stderr(&o));
        stdout(&o).lines().map(|l| l.parse().unwrap()).collect()
    };
    for (filter, expected) in [
        ("rocescope.event == \"psn_gap\"", &[5][..]),
        ("rocescope.event == \"nak\"", &[6]),
        ("rocescope.event == \"go_back_n\"", &[7]),
        ("rocescope.retransmission", &[7, 8, 9]),
        ("rocescope.class == \"gap\"", &[5]),
        ("rocescope.severity == \"error\"", &[5, 6]),
        ("rocescope.flow == 1", &[4, 6, 11]),
        (
            "not rocescope.event and infiniband.bth.psn >= 103",
            &[8, 9, 10, 11],
        ),
        (
            "rocescope.retransmission or rocescope.event in {\"nak\", \"psn_gap\"}",
            &[5, 6, 7, 8, 9],
        ),
    ] {
        assert_eq!(frames(&gap, filter), expected, "{filter}");
    }
    let stall =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata/diagnosis/stall_at_end.pcap");
    assert_eq!(frames(&stall, "rocescope.event == \"stall\""), [3]);
    // The events need the capture twice: not from standard input.
    let o = pipe(
        &["dissect", "-Y", "rocescope.event", "-"],
        &std::fs::read(&gap).unwrap(),
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("give a file"), "{}", stderr(&o));
    // analyze -Y analyses only the frames it passes: the responder's 3 here.
    let o = rocescope(&[
        "analyze",
        "-r",
        gap.to_str().unwrap(),
        "-Y",
        "ip.src == 10.0.0.2",
        "--json",
    ]);
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(report["capture"]["frames"], 3);
    assert_eq!(report["flows"].as_array().unwrap().len(), 1);
}

/// A bad filter or field: exit status 2 and one line that says where and what.
#[test]
fn bad_filters_and_fields_are_one_line() {
    let file = public("rdma_write_bw.pcap");
    let f = file.to_str().unwrap();
    for (args, needle) in [
        (
            &["dissect", "-r", f, "-Y", "udp.port in {4791 53}"][..],
            "-Y: column 19 (at \"53}\"): expected",
        ),
        (
            &["dissect", "-r", f, "-Y", "infiniband.bth.psnn == 1"],
            "neither a field nor a protocol",
        ),
        (
            &["analyze", "-r", f, "-Y", "rocescope.retransmission"],
            "filter on them with rocescope dissect -Y",
        ),
        (
            &["analyze", "-r", f, "-Y", "ip.src =="],
            "column 10 (at the end): expected a value",
        ),
    ] {
        let o = rocescope(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(needle), "{err}");
    }
    for args in [
        &["dissect", "-r", f, "-T", "fields"][..],
        &["dissect", "-r", f, "-e", "ip.src"],
        &["dissect", "-r", f, "-T", "fields", "-e", "tcp.port"],
        &["dissect", "-r", f, "-T", "fields", "-e", "ip"],
        &[
            "dissect", "-r", f, "-T", "fields", "-e", "ip.src", "-E", "quote=x",
        ],
        &["dissect", "-r", f, "-T", "pdml", "-e", "ip.src"],
    ] {
        assert_eq!(rocescope(args).status.code(), Some(2), "{args:?}");
    }
}

/// `-j 0` is refused as a bad value (exit status 2), not taken as some other count.
#[test]
fn zero_threads_are_refused() {
    let file = public("rdma_write_bw.pcap");
    let o = rocescope(&["analyze", "-j", "0", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.starts_with(
            "error: invalid value '0' for '--threads <N>': '0' is not a number of threads, 1 or more\n"
        ),
        "{err}"
    );
    assert!(stdout(&o).is_empty());
}

#[test]
fn standard_input_reads_like_a_file() {
    let file = public("rdma_read_bw.pcap");
    let bytes = std::fs::read(&file).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_rocescope"))
        .args(["dissect", "--json", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&bytes).unwrap();
    let piped = child.wait_with_output().unwrap();
    assert!(piped.status.success());
    let direct = rocescope(&["dissect", "--json", file.to_str().unwrap()]);
    assert_eq!(stdout(&piped), stdout(&direct));
    assert_eq!(stdout(&piped).lines().count(), 20);
}

#[test]
fn tree_and_hex_views() {
    let file = public("rdma_read_lat.pcap");
    let o = rocescope(&["dissect", "-V", "-x", "-c", "1", file.to_str().unwrap()]);
    assert!(o.status.success());
    let out = stdout(&o);
    for needle in [
        "Base Transport Header",
        "Opcode: 12 (RC_READ_REQUEST)  [infiniband.bth.opcode]",
        "RDMA Extended Transport Header",
        "ICRC status: valid  [rocescope.icrc_status]",
        "0000  ",
    ] {
        assert!(out.contains(needle), "missing {needle:?} in\n{out}");
    }
}

#[test]
fn json_lines_are_objects_with_wireshark_names() {
    let file = public("rdma_atomic_bw.pcap");
    let out = stdout(&rocescope(&["dissect", "--json", file.to_str().unwrap()]));
    let frames: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(frames.len(), 10);
    // tshark: frame 20 is FETCH_ADD (opcode 20) with add data 1, compare 0, VA 0x6320d6be5000, R_Key 0x1986.
    let f = &frames[0];
    assert_eq!(f["frame.number"], 20);
    assert_eq!(f["infiniband.bth.opcode"], 20);
    assert_eq!(f["infiniband.atomiceth.swapdt"], 1);
    assert_eq!(f["infiniband.atomiceth.cmpdt"], 0);
    assert_eq!(f["infiniband.reth.va"], 0x6320_d6be_5000u64);
    assert_eq!(f["infiniband.reth.r_key"], 0x1986);
    assert_eq!(f["infiniband.invariant.crc"], 0x26a7_e208u32);
    assert_eq!(f["rocescope.icrc_status"], "valid");
    // tshark's -T json and -T ek name the same output.
    for t in ["json", "ek"] {
        assert_eq!(
            stdout(&rocescope(&["dissect", "-T", t, file.to_str().unwrap()])),
            out,
            "-T {t}"
        );
    }
}

#[test]
fn runtime_errors_exit_1_with_one_line() {
    let o = rocescope(&["dissect", "/nonexistent/x.pcap"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("/nonexistent/x.pcap") && err.contains("No such file"),
        "{err}"
    );

    let dir = std::env::temp_dir().join(format!("rocescope-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let junk = dir.join("notes.txt");
    std::fs::write(&junk, b"hello, this is not a capture").unwrap();
    let o = rocescope(&["dissect", junk.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("notes.txt") && err.contains("not a pcap or pcapng"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &["dissect"][..],
        &["dissect", "--bogus", "x.pcap"],
        &["dissect", "--qp", "abc", "x.pcap"],
        &["dissect", "--qp", "0x1000000", "x.pcap"],
        &["dissect", "--opcode", "NOT_AN_OPCODE", "x.pcap"],
        &["dissect", "--json", "-V", "x.pcap"],
        &["frobnicate"],
    ] {
        let o = rocescope(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
    }
}

/// tshark's Info column of rdma_cm.pcap's QP 1 frames, in order, and the values `tshark -V` shows for the
/// first REQ: communication ID 0x64c0c56d, local QPN 0x3d, starting PSN 0x7cc204, service ID
/// 0x0000000001064853 (destination port 0x4853).
#[test]
fn cm_mads_are_shown_by_their_message() {
    let file = public("rdma_cm.pcap");
    let out = stdout(&rocescope(&[
        "dissect",
        "--qp",
        "1",
        file.to_str().unwrap(),
    ]));
    let names: Vec<&str> = out
        .lines()
        .map(|l| {
            l.split(" CM ")
                .nth(1)
                .unwrap_or(l)
                .split(' ')
                .next()
                .unwrap()
        })
        .collect();
    assert_eq!(
        names,
        [
            "ConnectRequest",
            "ConnectReply",
            "ReadyToUse",
            "ConnectRequest",
            "ConnectReply",
            "ReadyToUse",
            "DisconnectRequest",
            "DisconnectRequest",
            "DisconnectReply",
            "DisconnectReply",
            "DisconnectRequest",
            "DisconnectReply",
        ]
    );
    let first = out.lines().next().unwrap();
    assert!(
        first.ends_with(
            "QP=0x000001 CM ConnectRequest comm 0x64c0c56d QPN 0x00003d PSN 8176132 (0x7cc204) \
             → service 0x0000000001064853 port 18515"
        ),
        "{first}"
    );
}

/// A REJ (reason 8 is "Invalid Service ID", IBTA table 107) and a MAD cut to 100 bytes, built here and read
/// from standard input.
#[test]
fn a_reject_and_a_damaged_mad() {
    use parsers::builder::RoceFrame;
    use parsers::cm::{CmMessage, Rej};
    use parsers::mad::Mad;
    use parsers::savefile::{Resolution, pcap_file_header, pcap_record};

    let rej = Rej {
        local_comm_id: 1,
        remote_comm_id: 2,
        reason: 8,
        ..Rej::default()
    };
    let good = RoceFrame::gsi(&Mad::cm_send(9, CmMessage::Rej(rej))).build();
    let mut short = RoceFrame::gsi(&Mad::cm_send(9, CmMessage::Rej(rej)));
    short.payload.truncate(100);
    let short = short.build();
    let mut pcap = Vec::new();
    pcap_file_header(&mut pcap, Resolution::Micros, 65535, 1);
    for (i, frame) in [good, short].iter().enumerate() {
        pcap_record(
            &mut pcap,
            Resolution::Micros,
            i as u64,
            frame,
            frame.len() as u32,
        );
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_rocescope"))
        .args(["dissect", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&pcap).unwrap();
    let out = stdout(&child.wait_with_output().unwrap());
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].ends_with(
            "QP=0x000001 CM ConnectReject comm 0x00000001 → 0x00000002 rejects REQ: \
             Invalid Service ID (reason 8)"
        ),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].ends_with(
            "QP=0x000001 UD_SEND_ONLY PSN=0 srcQP=0x000001 qkey=0x80010000 payload=100 \
             [malformed: MAD truncated: needs 256 bytes, 100 present]"
        ),
        "{}",
        lines[1]
    );
}

/// `inject`'s hostile arguments, each a one-line error before anything stands on the path: a bridge of one
/// device, of the same device twice, of devices that do not exist; a bridge with the output path's flags;
/// no rule and no bridge.
#[cfg(target_os = "linux")]
#[test]
fn inject_refuses_what_it_cannot_stand_on() {
    let refused = |args: &[&str], code: i32, says: &str| {
        let o = rocescope(args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(code), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    };
    let rule = ["--rule", "req psn=+5 drop"];
    for bad in ["eth0", "eth0,eth0", "eth0,", "eth0,eth1,eth2"] {
        refused(
            &[&["inject", "--bridge", bad][..], &rule].concat(),
            2,
            &format!("'{bad}' is not two network devices, FIRST,SECOND"),
        );
    }
    refused(
        &["inject", "--bridge", "rsnone0,rsnone1", "--duration", "0.1"],
        1,
        "no interface rsnone0 (ip link shows them)",
    );
    refused(
        &[&["inject", "--bridge", "a0,b0", "--queue", "3"][..], &rule].concat(),
        2,
        "cannot be used with",
    );
    refused(&["inject", "--log", "-"], 2, "--rule");
}
