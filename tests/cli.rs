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
    // tshark: 5 ACKs, all to QP 0x1d; 15 WRITE packets to QP 0x1b.
    let acks = stdout(&rocescope(&["dissect", "--qp", "0x1d", f]));
    assert_eq!(acks.lines().count(), 5);
    assert!(acks.lines().all(|l| l.contains("RC_ACKNOWLEDGE")));
    assert_eq!(
        stdout(&rocescope(&["dissect", "--qp", "27", f]))
            .lines()
            .count(),
        15
    );
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
