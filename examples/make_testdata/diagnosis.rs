//! Captures of what breaks (testdata/diagnosis/), each beside the diagnosis worked out by hand
//! (`NAME.expected.json`: the report sections as in testdata/analysis, plus `events`: each expected event by
//! kind and frame with the figures of its `detail`, `diagnosis`: the exact count of every diagnosis event
//! kind, and `runs`: exit statuses and verdict words for given `--fail-on` lists).
//!
//! Times are in µs from the capture's start; the stall time is rocescope's default, 1 s.
use std::path::Path;

use parsers::aeth::{Aeth, Syndrome};
use parsers::builder::RoceFrame;
use parsers::reth::Reth;
use serde_json::json;

use super::analysis::{AB, write};
use super::{Capture, payload};

/// A frame of no RoCE flow (UDP to port 53 between other hosts), to let the capture go on.
pub(crate) fn other() -> Vec<u8> {
    let mut f = RoceFrame::new(0x04);
    f.udp_dst = 53;
    if let parsers::builder::Net::V4(ip) = &mut f.net {
        ip.src = [10, 9, 9, 1];
        ip.dst = [10, 9, 9, 2];
    }
    f.payload = payload(40, 9);
    f.build()
}

const SECOND: u64 = 1_000_000;

/// The local ACK timeout at exponent 17 (4.096 µs × 2^17 = 536,870.912 µs), to the microsecond.
const TIMEOUT_17_US: u64 = 536_871;

/// WRITEs 100, 101, 102 at 0, 10, 20 µs; one ACK for 101 at 50 µs; then nothing of this connection, and
/// the capture goes on to 3 s. PSN 102 (frame 3) is the oldest unacknowledged, 1 outstanding, since 20 µs:
/// waited 3 s - 20 µs = 2.99998 s, to the end.
fn stall_at_end(dir: &Path) {
    let mut c = Capture::new(1);
    let none = json!({});
    for (at, psn) in [(0, 100), (10, 101), (20, 102)] {
        c.add_at(at, AB.write(psn).build(), none.clone());
    }
    c.add_at(50, AB.ack(101, 2), none.clone());
    c.add_at(3 * SECOND, other(), none.clone());
    write(
        dir,
        "stall_at_end",
        &c,
        json!({
            "events": [{"kind": "stall", "frame": 3,
                        "detail": {"psn": 102, "outstanding": 1, "waited_s": 2.99998, "at_end": true}}],
            "diagnosis": {"stall": 1},
            "verdict": {"status": "fail", "problems": ["stall"]},
            "runs": [{"args": [], "exit": 0, "text": "FAIL: 1 stalls (exit status 0: no --fail-on given"},
                     {"args": ["--fail-on", "stall"], "exit": 3, "text": "(exit status 3: --fail-on stall)"},
                     {"args": ["--fail-on", "gaps,naks"], "exit": 0,
                      "text": "none of --fail-on gaps,naks is present"},
                     {"args": ["--stall-ms", "4000"], "exit": 0, "text": "PASS"}]
        }),
    );
}

/// WRITE 100 at 0; its ACK only at 1.5 s; the capture ends at 1.6 s. A stall while the capture goes on
/// (noticed by the sweep at the ACK's frame, 1.5 s), over when the ACK comes: waited 1.5 s, not to the
/// end. A WRITE 101 at 1.55 s is answered at 1.551 s.
fn stall_ends_before_the_capture(dir: &Path) {
    let mut c = Capture::new(1);
    let none = json!({});
    c.add_at(0, AB.write(100).build(), none.clone());
    c.add_at(1_500_000, AB.ack(100, 1), none.clone());
    c.add_at(1_550_000, AB.write(101).build(), none.clone());
    c.add_at(1_551_000, AB.ack(101, 2), none.clone());
    c.add_at(1_600_000, other(), none.clone());
    write(
        dir,
        "stall_ends_before_the_capture",
        &c,
        json!({
            "events": [{"kind": "stall", "frame": 1,
                        "detail": {"psn": 100, "outstanding": 1, "waited_s": 1.5, "at_end": false}}],
            "diagnosis": {"stall": 1},
            "verdict": {"status": "fail", "problems": ["stall"]}
        }),
    );
}

/// WRITEs 10-14 at 0-40 µs, one coalesced ACK for 14 at 100 µs, then a last WRITE 15 at 2.5 s that the
/// capture's end (3 s, 0.5 s later: under the stall time) leaves unanswered: no stall, nothing wrong.
fn coalesced_ack_and_a_young_request(dir: &Path) {
    let mut c = Capture::new(1);
    let none = json!({});
    for psn in 10..=14u32 {
        c.add_at(
            u64::from(psn - 10) * 10,
            AB.write(psn).build(),
            none.clone(),
        );
    }
    c.add_at(100, AB.ack(14, 5), none.clone());
    c.add_at(2_500_000, AB.write(15).build(), none.clone());
    c.add_at(3 * SECOND, other(), none.clone());
    write(
        dir,
        "coalesced_ack_and_a_young_request",
        &c,
        json!({
            "events": [],
            "diagnosis": {},
            "verdict": {"status": "pass", "problems": []},
            "runs": [{"args": ["--fail-on", "all"], "exit": 0, "text": "PASS"}]
        }),
    );
}

/// Requests 0xfffffe, 0xffffff, 0, 1 (frames 1-4, at 0-30 µs); an ACK for 0xffffff (frame 5); the capture
/// goes on to 2 s. Outstanding across the wrap: PSN 0 (frame 3, at 20 µs) and 1, 2 PSNs, waited 1.99998 s.
fn stall_across_the_psn_wrap(dir: &Path) {
    let mut c = Capture::new(1);
    let none = json!({});
    for (i, psn) in [0xFF_FFFE, 0xFF_FFFF, 0, 1].into_iter().enumerate() {
        c.add_at(i as u64 * 10, AB.write(psn).build(), none.clone());
    }
    c.add_at(40, AB.ack(0xFF_FFFF, 2), none.clone());
    c.add_at(2 * SECOND, other(), none.clone());
    write(
        dir,
        "stall_across_the_psn_wrap",
        &c,
        json!({
            "flows": [{"src": "10.0.0.1", "dst": "10.0.0.2", "dest_qp": 0x11,
                       "psn": {"first": 0xFF_FFFE, "last": 1, "gap_events": 0, "retransmitted": 0}}],
            "events": [{"kind": "stall", "frame": 3,
                        "detail": {"psn": 0, "outstanding": 2, "waited_s": 1.99998, "at_end": true}}],
            "diagnosis": {"stall": 1},
            "verdict": {"status": "fail", "problems": ["stall"]}
        }),
    );
}

/// Five WRITEs 500-504 (frames 1-5, 0-40 µs) to a QP that never answers; the capture goes on to 2 s. No
/// response: 5 requests from PSN 500, waited 2 s from the first; no separate stall for the same silence.
fn no_response(dir: &Path) {
    let mut c = Capture::new(1);
    let none = json!({});
    for psn in 500..505u32 {
        c.add_at(
            u64::from(psn - 500) * 10,
            AB.write(psn).build(),
            none.clone(),
        );
    }
    c.add_at(2 * SECOND, other(), none.clone());
    write(
        dir,
        "no_response",
        &c,
        json!({
            "events": [{"kind": "no_response", "frame": 1,
                        "detail": {"requests": 5, "first_psn": 500, "waited_s": 2.0}}],
            "diagnosis": {"no_response": 1},
            "verdict": {"status": "fail", "problems": ["no_response"]},
            "runs": [{"args": ["--fail-on", "no_response"], "exit": 3,
                      "text": "(exit status 3: --fail-on no_response)"}]
        }),
    );
}

/// WRITE 99 at 0 answered at 10 µs; WRITE 100 at 20 µs (frame 3) never answered: resent on the local ACK
/// timer (exponent 17: 536,871 µs) three times, at 536,891, 1,073,762 and 1,610,633 µs (frames 4-6), each
/// interval one timeout (exponent 17, retries 1, 2, 3); then the requester is silent and the capture goes on
/// to 4 s: it gave up after 3 resends, silent 4,000,000 - 1,610,633 = 2,389,367 µs; PSN 100 stalled from
/// 20 µs, waited 3.99998 s.
fn timeouts_then_retry_exhausted(dir: &Path) {
    let mut c = Capture::new(1);
    let none = json!({});
    c.add_at(0, AB.write(99).build(), none.clone());
    c.add_at(10, AB.ack(99, 1), none.clone());
    let mut at = 20;
    c.add_at(at, AB.write(100).build(), none.clone());
    for _ in 0..3 {
        at += TIMEOUT_17_US;
        c.add_at(at, AB.write(100).build(), none.clone());
    }
    c.add_at(4 * SECOND, other(), none.clone());
    let timeout = |frame: u64, retry: u64| {
        json!({"kind": "timeout_retransmission", "frame": frame,
               "detail": {"psn": 100, "interval_s": 0.536871, "timeout_exponent": 17, "retry": retry}})
    };
    write(
        dir,
        "timeouts_then_retry_exhausted",
        &c,
        json!({
            "flows": [{"src": "10.0.0.1", "dst": "10.0.0.2", "dest_qp": 0x11,
                       "psn": {"first": 99, "last": 100, "retransmitted": 3, "retransmission_episodes": 3}}],
            "events": [timeout(4, 1), timeout(5, 2), timeout(6, 3),
                       {"kind": "retry_exhausted", "frame": 6,
                        "detail": {"psn": 100, "resends": 3, "silent_s": 2.389367}},
                       {"kind": "stall", "frame": 3,
                        "detail": {"psn": 100, "outstanding": 1, "waited_s": 3.99998, "at_end": true}}],
            "diagnosis": {"timeout_retransmission": 3, "retry_exhausted": 1, "stall": 1},
            "verdict": {"status": "fail", "problems": ["retransmissions", "stall", "timeouts"]},
            "runs": [{"args": ["--fail-on", "timeouts"], "exit": 3,
                      "text": "(exit status 3: --fail-on timeouts)"}]
        }),
    );
}

/// SEND 49 answered; SEND 50 (frame 3, at 20 µs) RNR-NAKed (timer code 14: 1.28 ms) at 30 µs, resent
/// at 1,330 µs, RNR-NAKed at 1,340 µs, resent at 2,640 µs, RNR-NAKed at 2,650 µs (frame 8): 3 RNR NAKs, 2
/// resends, and no resend after the third (rnr_retry 2 exhausted); the capture goes on to 2 s: the
/// requester silent from its last request, 2,000,000 - 2,640 = 1,997,360 µs. Each resend follows an RNR
/// NAK: no timeout.
fn rnr_retry_exhausted(dir: &Path) {
    let mut c = Capture::new(1);
    let none = json!({});
    let send = |psn| {
        let mut f = AB.frame(true, 0x04, psn);
        f.payload = payload(32, 2);
        f.build()
    };
    let rnr = || AB.aeth(0x11, 50, Syndrome::RnrNak { timer: 14 }, 1).build();
    c.add_at(0, send(49), none.clone());
    c.add_at(10, AB.ack(49, 1), none.clone());
    c.add_at(20, send(50), none.clone());
    c.add_at(30, rnr(), none.clone());
    c.add_at(1_330, send(50), none.clone());
    c.add_at(1_340, rnr(), none.clone());
    c.add_at(2_640, send(50), none.clone());
    c.add_at(2_650, rnr(), none.clone());
    c.add_at(2 * SECOND, other(), none.clone());
    write(
        dir,
        "rnr_retry_exhausted",
        &c,
        json!({
            "flows": [{"src": "10.0.0.2", "dst": "10.0.0.1", "dest_qp": 0x22, "rnr_naks": 3}],
            "events": [{"kind": "rnr_exhausted", "frame": 8,
                        "detail": {"psn": 50, "rnr_naks": 3, "silent_s": 1.99736}},
                       {"kind": "stall", "frame": 3, "detail": {"psn": 50, "at_end": true}}],
            "diagnosis": {"rnr_exhausted": 1, "stall": 1},
            "verdict": {"status": "fail", "problems": ["rnr", "retransmissions", "stall", "timeouts"]}
        }),
    );
}

/// WRITE 200 and its ACK; then an ACK for PSN 5000, which was never sent (frame 3): out of the window
/// 200..200.
fn ack_out_of_window(dir: &Path) {
    let mut c = Capture::new(1);
    let none = json!({});
    c.add_at(0, AB.write(200).build(), none.clone());
    c.add_at(10, AB.ack(200, 1), none.clone());
    c.add_at(20, AB.ack(5000, 2), none.clone());
    write(
        dir,
        "ack_out_of_window",
        &c,
        json!({
            "events": [{"kind": "ack_out_of_window", "frame": 3,
                        "detail": {"psn": 5000, "window_first": 200, "window_last": 200}}],
            "diagnosis": {"ack_out_of_window": 1},
            "verdict": {"status": "fail", "problems": ["violations"]},
            "runs": [{"args": ["--fail-on", "violations"], "exit": 3,
                      "text": "(exit status 3: --fail-on violations)"}]
        }),
    );
}

fn read(psn: u32, len: u32) -> Vec<u8> {
    let mut f = AB.frame(true, 0x0C, psn);
    f.ext.reth = Some(Reth {
        va: 0x9000,
        r_key: 5,
        dma_len: len,
    });
    f.build()
}

/// A READ response packet `op` at `psn` with `len` bytes (AETH on FIRST, LAST, ONLY).
fn response(op: u8, psn: u32, len: usize, msn: u32) -> Vec<u8> {
    let mut r = AB.frame(false, op, psn);
    if op != 0x0E {
        r.ext.aeth = Some(Aeth {
            syndrome: 0x1F,
            msn,
        });
    }
    r.payload = payload(len, 5);
    r.build()
}

/// The corpus' rping stall, built: a READ of 2400 bytes at PSN 1000 (frame 1), answered at path MTU 1024
/// by FIRST 1000 (1024 bytes), MIDDLE 1001 (1024), LAST 1002 (352): it took PSNs 1000-1002. The next SEND
/// carries PSN 1002 (frame 5): a reuse of the READ's last PSN, not a retransmission.
fn psn_reuse_after_a_read(dir: &Path) {
    let mut c = Capture::new(1);
    let none = json!({});
    c.add_at(0, read(1000, 2400), none.clone());
    c.add_at(10, response(0x0D, 1000, 1024, 1), none.clone());
    c.add_at(20, response(0x0E, 1001, 1024, 1), none.clone());
    c.add_at(30, response(0x0F, 1002, 352, 1), none.clone());
    let mut send = AB.frame(true, 0x04, 1002);
    send.payload = payload(16, 6);
    c.add_at(40, send.build(), none.clone());
    c.add_at(50, AB.ack(1002, 2), none.clone());
    write(
        dir,
        "psn_reuse_after_a_read",
        &c,
        json!({
            "config": {"mtu": 1024},
            "flows": [{"src": "10.0.0.1", "dst": "10.0.0.2", "dest_qp": 0x11,
                       "psn": {"first": 1000, "last": 1002, "retransmitted": 0, "reused": 1}}],
            "events": [{"kind": "psn_reuse", "frame": 5,
                        "detail": {"psn": 1002, "read_psn": 1000, "read_psns": 3}}],
            "diagnosis": {"psn_reuse": 1},
            "verdict": {"status": "fail", "problems": ["violations"]}
        }),
    );
}

/// The same reuse found only at the end: a READ of 2400 bytes at PSN 1000 with no response seen, then a
/// SEND at 1002 (frame 2), which a path MTU of 2048 (2 PSNs) would explain. A WRITE_FIRST of 1024 bytes on
/// another QP (frame 3) shows the path MTU is 1024: the READ took 3 PSNs, the SEND reused its last.
fn psn_reuse_found_at_the_end(dir: &Path) {
    let mut c = Capture::new(1);
    let none = json!({});
    c.add_at(0, read(1000, 2400), none.clone());
    let mut send = AB.frame(true, 0x04, 1002);
    send.payload = payload(16, 6);
    c.add_at(10, send.build(), none.clone());
    let mut first = AB.frame(true, 0x06, 7);
    first.bth.dest_qp = 0x33;
    first.ext.reth = Some(Reth {
        va: 0x1000,
        r_key: 9,
        dma_len: 2048,
    });
    first.payload = payload(1024, 7);
    c.add_at(20, first.build(), none.clone());
    write(
        dir,
        "psn_reuse_found_at_the_end",
        &c,
        json!({
            "config": {"mtu": 1024},
            "events": [{"kind": "psn_reuse", "frame": 2,
                        "detail": {"psn": 1002, "read_psn": 1000, "read_psns": 3}}],
            "diagnosis": {"psn_reuse": 1},
            "verdict": {"status": "fail", "problems": ["violations"]}
        }),
    );
}

/// ACK 10 with MSN 5, then ACK 11 with MSN 4 (frame 4): the MSN went back.
fn msn_regression(dir: &Path) {
    let mut c = Capture::new(1);
    let none = json!({});
    c.add_at(0, AB.write(10).build(), none.clone());
    c.add_at(10, AB.ack(10, 5), none.clone());
    c.add_at(20, AB.write(11).build(), none.clone());
    c.add_at(30, AB.ack(11, 4), none.clone());
    write(
        dir,
        "msn_regression",
        &c,
        json!({
            "events": [{"kind": "msn_regression", "frame": 4, "detail": {"msn": 4, "previous": 5}}],
            "diagnosis": {"msn_regression": 1},
            "verdict": {"status": "fail", "problems": ["violations"]}
        }),
    );
}

/// A READ of 2048 bytes at PSN 300 (path MTU 1024, from its first response) takes 300-301, but its responses
/// are FIRST 300, MIDDLE 301 and LAST 302 (frame 4): PSN 302 is outside its 2 PSNs.
fn read_response_outside_the_read(dir: &Path) {
    let mut c = Capture::new(1);
    let none = json!({});
    c.add_at(0, read(300, 2048), none.clone());
    c.add_at(10, response(0x0D, 300, 1024, 1), none.clone());
    c.add_at(20, response(0x0E, 301, 1024, 1), none.clone());
    c.add_at(30, response(0x0F, 302, 0, 1), none.clone());
    write(
        dir,
        "read_response_outside_the_read",
        &c,
        json!({
            "events": [{"kind": "read_response_mismatch", "frame": 4,
                        "detail": {"read_psn": 300, "problem": "psn_outside", "psn": 302, "read_psns": 2}}],
            "diagnosis": {"read_response_mismatch": 1},
            "verdict": {"status": "fail", "problems": ["violations"]}
        }),
    );
}

/// A READ of 2048 bytes at PSN 400 answered FIRST 400 (1024 bytes: path MTU 1024) and LAST 401 (512)
/// (frame 3): two packets as the MTU implies, but 1536 bytes for a DMA length of 2048.
fn read_responses_short_of_the_length(dir: &Path) {
    let mut c = Capture::new(1);
    let none = json!({});
    c.add_at(0, read(400, 2048), none.clone());
    c.add_at(10, response(0x0D, 400, 1024, 1), none.clone());
    c.add_at(20, response(0x0F, 401, 512, 1), none.clone());
    write(
        dir,
        "read_responses_short_of_the_length",
        &c,
        json!({
            "events": [{"kind": "read_response_mismatch", "frame": 3,
                        "detail": {"read_psn": 400, "problem": "length", "bytes": 1536, "dma_len": 2048}}],
            "diagnosis": {"read_response_mismatch": 1},
            "verdict": {"status": "fail", "problems": ["violations"]}
        }),
    );
}

/// READs answered right at the smallest and the largest path MTU: 4096 bytes at MTU 256 in 16 responses
/// (FIRST, 14 MIDDLE, LAST of 256 bytes), and, on another connection, 4096 bytes in one READ_RESPONSE_ONLY
/// at MTU 4096 is not possible in one capture with the first (one path MTU per capture): the second
/// capture has it. Nothing wrong in either.
fn reads_at_the_path_mtus(dir: &Path) {
    let mut c = Capture::new(1);
    let none = json!({});
    c.add_at(0, read(700, 4096), none.clone());
    for i in 0..16u32 {
        let op = match i {
            0 => 0x0D,
            15 => 0x0F,
            _ => 0x0E,
        };
        c.add_at(
            10 + u64::from(i),
            response(op, 700 + i, 256, 1),
            none.clone(),
        );
    }
    c.add_at(40, AB.write(716).build(), none.clone());
    c.add_at(50, AB.ack(716, 2), none.clone());
    write(
        dir,
        "read_at_mtu_256",
        &c,
        json!({
            "config": {"mtu": 256},
            "flows": [{"src": "10.0.0.1", "dst": "10.0.0.2", "dest_qp": 0x11,
                       "psn": {"first": 700, "last": 716, "gap_events": 0, "retransmitted": 0, "reused": 0}}],
            "events": [],
            "diagnosis": {},
            "verdict": {"status": "pass", "problems": []}
        }),
    );
    let mut c = Capture::new(1);
    c.add_at(0, read(800, 4096), none.clone());
    let mut first = AB.frame(true, 0x06, 801);
    first.ext.reth = Some(Reth {
        va: 0x1000,
        r_key: 9,
        dma_len: 8192,
    });
    first.payload = payload(4096, 8);
    c.add_at(5, first.build(), none.clone());
    let mut last = AB.frame(true, 0x08, 802);
    last.payload = payload(4096, 8);
    c.add_at(6, last.build(), none.clone());
    c.add_at(10, response(0x10, 800, 4096, 1), none.clone());
    c.add_at(20, AB.ack(802, 2), none.clone());
    write(
        dir,
        "read_at_mtu_4096",
        &c,
        json!({
            "config": {"mtu": 4096},
            "events": [],
            "diagnosis": {},
            "verdict": {"status": "pass", "problems": []}
        }),
    );
}

/// QP reuse: SEND 7825157 at 0 answered; 21.8 s idle; a SEND at PSN 16227732 from the same QP (frame 3)
/// answered by another responder QP. A new connection (a note), not a retransmission 8374642 PSNs behind.
fn new_connection_on_a_reused_qp(dir: &Path) {
    let mut c = Capture::new(1);
    let none = json!({});
    let send = |psn| {
        let mut f = AB.frame(true, 0x04, psn);
        f.payload = payload(16, 3);
        f.build()
    };
    c.add_at(0, send(7_825_157), none.clone());
    c.add_at(10, AB.ack(7_825_157, 1), none.clone());
    c.add_at(21_800_000, send(16_227_732), none.clone());
    let mut ack = AB.aeth(0x11, 16_227_732, Syndrome::Ack { credits: 31 }, 1);
    ack.bth.dest_qp = 0x23;
    c.add_at(21_800_010, ack.build(), none.clone());
    write(
        dir,
        "new_connection_on_a_reused_qp",
        &c,
        json!({
            "flows": [{"src": "10.0.0.1", "dst": "10.0.0.2", "dest_qp": 0x11,
                       "psn": {"first": 16_227_732, "last": 16_227_732, "gap_events": 0, "retransmitted": 0,
                               "epochs": 1}}],
            "events": [{"kind": "new_epoch", "frame": 3,
                        "detail": {"psn": 16_227_732, "expected": 7_825_158, "idle_s": 21.8}}],
            "diagnosis": {"new_epoch": 1},
            "verdict": {"status": "pass", "problems": []}
        }),
    );
}

/// Only UDP to port 53 (three frames): no RoCE at all.
fn no_roce(dir: &Path) {
    let mut c = Capture::new(1);
    let none = json!({});
    for at in [0, 10, 20] {
        c.add_at(at, other(), none.clone());
    }
    write(
        dir,
        "no_roce",
        &c,
        json!({
            "capture": {"frames": 3, "roce_frames": 0},
            "events": [],
            "diagnosis": {},
            "verdict": {"status": "no_roce", "problems": ["no_roce"]},
            "runs": [{"args": [], "exit": 0, "text": "NO ROCE TRAFFIC: 3 frames, none of them RoCE"},
                     {"args": ["--fail-on", "no_roce"], "exit": 3, "text": "(exit status 3: --fail-on no_roce)"},
                     {"args": ["--fail-on", "all"], "exit": 3, "text": "(exit status 3: --fail-on no_roce)"}]
        }),
    );
}

/// A SEND_ONLY of 16 bytes at `psn` from 10.0.0.1 to QP `qp` of 10.0.0.2.
fn send_to(qp: u32, psn: u32) -> Vec<u8> {
    let mut f = AB.frame(true, 0x04, psn);
    f.bth.dest_qp = qp;
    f.payload = payload(16, 3);
    f.build()
}

/// An ACK from 10.0.0.2 to QP `qp` of 10.0.0.1.
fn ack_to(qp: u32, psn: u32, msn: u32) -> Vec<u8> {
    let mut f = AB.aeth(0x11, psn, Syndrome::Ack { credits: 31 }, msn);
    f.bth.dest_qp = qp;
    f.build()
}

/// A SEND at PSN 0x12345 (frame 1) answered 9 µs later by the peer host with an ACK for PSN 0xffffff (frame
/// 2), which names no PSN the requester sent (more than a window of 4096 before its first): no PSN pairs the
/// two flows, but they are the only requester and the only responder between the two hosts, and it came in
/// time: paired by elimination, and the answer is out of the window. The SEND stays unacknowledged to the
/// capture's end (2 s): a stall, not "no response".
fn an_answer_for_a_psn_never_sent(dir: &Path) {
    let mut c = Capture::new(1);
    let none = json!({});
    c.add_at(0, send_to(0x11, 0x12345), none.clone());
    c.add_at(9, ack_to(0x22, 0xFF_FFFF, 1), none.clone());
    c.add_at(2 * SECOND, other(), none.clone());
    write(
        dir,
        "an_answer_for_a_psn_never_sent",
        &c,
        json!({
            "flows": [{"src": "10.0.0.1", "dst": "10.0.0.2", "dest_qp": 0x11, "paired_by": "elimination",
                       "pair": ["10.0.0.2", "10.0.0.1", 0x22]},
                      {"src": "10.0.0.2", "dst": "10.0.0.1", "dest_qp": 0x22, "paired_by": "elimination"}],
            "events": [{"kind": "ack_out_of_window", "frame": 2,
                        "detail": {"psn": 0xFF_FFFF, "window_first": 0x12345, "window_last": 0x12345}},
                       {"kind": "stall", "frame": 1,
                        "detail": {"psn": 0x12345, "outstanding": 1, "waited_s": 2.0, "at_end": true}}],
            "diagnosis": {"ack_out_of_window": 1, "stall": 1},
            "verdict": {"status": "fail", "problems": ["stall", "violations"]}
        }),
    );
}

/// Two requesters from 10.0.0.1 to 10.0.0.2 (QPs 0x11 and 0x12, frames 1-2) and one ACK back for a PSN
/// neither sent (frame 3): two candidates, so no pair by elimination; neither requester heard back by the
/// capture's end (2 s): two `no_response`, and no violation.
fn two_requesters_are_not_paired_by_elimination(dir: &Path) {
    let mut c = Capture::new(1);
    let none = json!({});
    c.add_at(0, send_to(0x11, 0x12345), none.clone());
    c.add_at(3, send_to(0x12, 0x22222), none.clone());
    c.add_at(9, ack_to(0x22, 0xFF_FFFF, 1), none.clone());
    c.add_at(2 * SECOND, other(), none.clone());
    write(
        dir,
        "two_requesters_are_not_paired_by_elimination",
        &c,
        json!({
            "flows": [{"src": "10.0.0.1", "dst": "10.0.0.2", "dest_qp": 0x11, "paired_with": null,
                       "paired_by": null},
                      {"src": "10.0.0.1", "dst": "10.0.0.2", "dest_qp": 0x12, "paired_with": null},
                      {"src": "10.0.0.2", "dst": "10.0.0.1", "dest_qp": 0x22, "paired_with": null}],
            "events": [{"kind": "no_response", "frame": 1, "detail": {"requests": 1, "first_psn": 0x12345}},
                       {"kind": "no_response", "frame": 2, "detail": {"requests": 1, "first_psn": 0x22222}}],
            "diagnosis": {"no_response": 2},
            "verdict": {"status": "fail", "problems": ["no_response"]}
        }),
    );
}

/// An ACK from 10.0.0.2 to QP 0x23 of 10.0.0.1 before any request (frame 1: it answers nothing in the
/// capture), then a SEND (frame 2) and an ACK to QP 0x22 for a PSN it did not send (frame 3): two responders
/// unpaired between the hosts, so no pair by elimination; the SEND never heard back: `no_response`.
fn two_responders_are_not_paired_by_elimination(dir: &Path) {
    let mut c = Capture::new(1);
    let none = json!({});
    c.add_at(0, ack_to(0x23, 5, 1), none.clone());
    c.add_at(10, send_to(0x11, 0x12345), none.clone());
    c.add_at(19, ack_to(0x22, 0xFF_FFFF, 1), none.clone());
    c.add_at(2 * SECOND, other(), none.clone());
    write(
        dir,
        "two_responders_are_not_paired_by_elimination",
        &c,
        json!({
            "flows": [{"src": "10.0.0.1", "dst": "10.0.0.2", "dest_qp": 0x11, "paired_with": null},
                      {"src": "10.0.0.2", "dst": "10.0.0.1", "dest_qp": 0x22, "paired_with": null},
                      {"src": "10.0.0.2", "dst": "10.0.0.1", "dest_qp": 0x23, "paired_with": null}],
            "events": [{"kind": "no_response", "frame": 2, "detail": {"requests": 1, "first_psn": 0x12345}}],
            "diagnosis": {"no_response": 1},
            "verdict": {"status": "fail", "problems": ["no_response"]}
        }),
    );
}

pub fn write_all(dir: &Path) {
    stall_at_end(dir);
    stall_ends_before_the_capture(dir);
    coalesced_ack_and_a_young_request(dir);
    stall_across_the_psn_wrap(dir);
    no_response(dir);
    timeouts_then_retry_exhausted(dir);
    rnr_retry_exhausted(dir);
    ack_out_of_window(dir);
    psn_reuse_after_a_read(dir);
    psn_reuse_found_at_the_end(dir);
    msn_regression(dir);
    read_response_outside_the_read(dir);
    read_responses_short_of_the_length(dir);
    reads_at_the_path_mtus(dir);
    new_connection_on_a_reused_qp(dir);
    no_roce(dir);
    an_answer_for_a_psn_never_sent(dir);
    two_requesters_are_not_paired_by_elimination(dir);
    two_responders_are_not_paired_by_elimination(dir);
}
