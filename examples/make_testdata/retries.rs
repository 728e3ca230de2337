//! Captures of what real NICs and networks legitimately do (testdata/retries/): READs resumed mid-message,
//! atomics resent, ACKs and requests reordered on the way. Each beside the report worked out by hand
//! (`NAME.expected.json`, as in testdata/diagnosis): none of them is a protocol violation.
//!
//! Times are in µs from the capture's start. Requester 10.0.0.1 (QP 0x22) sends to QP 0x11 of 10.0.0.2;
//! the path MTU is 1024 (learnt from the first full READ response).
use std::path::Path;

use parsers::aeth::{Aeth, NakCode, Syndrome};
use parsers::atomic::{AtomicAckEth, AtomicEth};
use parsers::reth::Reth;
use serde_json::json;

use super::analysis::{AB, write};
use super::{Capture, payload};

/// A READ request of `len` bytes at `psn` from `va`.
fn read(psn: u32, va: u64, len: u32) -> Vec<u8> {
    let mut f = AB.frame(true, 0x0C, psn);
    f.ext.reth = Some(Reth {
        va,
        r_key: 5,
        dma_len: len,
    });
    f.build()
}

const FIRST: u8 = 0x0D;
const MIDDLE: u8 = 0x0E;
const LAST: u8 = 0x0F;
const ONLY: u8 = 0x10;

/// A READ response packet `op` at `psn` with `len` bytes (an AETH on FIRST, LAST and ONLY).
fn response(op: u8, psn: u32, len: usize, msn: u32) -> Vec<u8> {
    let mut r = AB.frame(false, op, psn);
    if op != MIDDLE {
        r.ext.aeth = Some(Aeth {
            syndrome: 0x1F,
            msn,
        });
    }
    r.payload = payload(len, psn as u8);
    r.build()
}

/// A FETCH_ADD of 1 at 0x5000, PSN `psn`.
fn fetch_add(psn: u32) -> Vec<u8> {
    let mut f = AB.frame(true, 0x14, psn);
    f.ext.atomic_eth = Some(AtomicEth {
        va: 0x5000,
        r_key: 9,
        swap_add: 1,
        compare: 0,
    });
    f.build()
}

fn atomic_ack(psn: u32, msn: u32, orig: u64) -> Vec<u8> {
    let mut f = AB.aeth(0x12, psn, Syndrome::Ack { credits: 31 }, msn);
    f.ext.atomic_ack_eth = Some(AtomicAckEth {
        orig_rem_data: orig,
    });
    f.build()
}

fn nak(psn: u32, msn: u32) -> Vec<u8> {
    AB.aeth(0x11, psn, Syndrome::Nak(NakCode::PsnSequenceError), msn)
        .build()
}

/// The local ACK timeout at exponent 17 (4.096 µs × 2^17 = 536,870.912 µs), to the microsecond.
const TIMEOUT_17_US: u64 = 536_871;

/// A READ of 8 KiB at PSN 1000 from VA 0x10000 (frame 1) takes PSNs 1000-1007 at MTU 1024; FIRST and MIDDLE
/// 1000-1006 come (frames 2-8), LAST 1007 is lost. The requester's timer fires at 536.871 ms (exponent 17):
/// it asks again for the rest only, READ 1007 from 0x10000 + 7 × 1024 = 0x11C00, 1024 bytes (frame 9),
/// answered by ONLY 1007 (frame 10). A retransmission at 1007 (its PSN was the READ's: a duplicate to the
/// responder), one go-back-N on the timer, no reuse of the READ's PSNs.
fn read_resumed_after_its_last_response_was_lost(dir: &Path) {
    let mut c = Capture::new(1);
    let none = json!({});
    c.add_at(0, read(1000, 0x10000, 8192), none.clone());
    c.add_at(10, response(FIRST, 1000, 1024, 1), none.clone());
    for psn in 1001..=1006u32 {
        let at = 10 + u64::from(psn - 1000) * 10;
        c.add_at(at, response(MIDDLE, psn, 1024, 1), none.clone());
    }
    c.add_at(TIMEOUT_17_US, read(1007, 0x11C00, 1024), none.clone());
    c.add_at(
        TIMEOUT_17_US + 10,
        response(ONLY, 1007, 1024, 1),
        none.clone(),
    );
    write(
        dir,
        "read_resumed_after_its_last_response_was_lost",
        &c,
        json!({
            "config": {"mtu": 1024},
            "flows": [{"src": "10.0.0.1", "dst": "10.0.0.2", "dest_qp": 0x11,
                       "psn": {"first": 1000, "last": 1007, "gap_events": 0, "missing": 0,
                               "retransmitted": 1, "duplicates": 1, "retransmission_episodes": 1,
                               "reused": 0, "resumed_reads": 1, "reordered": 0},
                       "read_latency_us": {"samples": 1, "min": 10.0}},
                      {"src": "10.0.0.2", "dst": "10.0.0.1", "dest_qp": 0x22, "read_responses": 8,
                       "implied_naks": 0, "reordered_responses": 0}],
            "events": [{"kind": "go_back_n", "frame": 9,
                        "detail": {"from": 1007, "behind": 1, "after_nak_s": null}},
                       {"kind": "timeout_retransmission", "frame": 9,
                        "detail": {"psn": 1007, "interval_s": 0.536871, "timeout_exponent": 17, "retry": 1}}],
            "event_counts": {"reordered": 0, "implied_nak": 0},
            "diagnosis": {"timeout_retransmission": 1},
            "verdict": {"status": "fail", "problems": ["retransmissions", "timeouts"]}
        }),
    );
}

/// The same READ (frame 1); its responses FIRST 1000, MIDDLE 1001, 1002, then 1004 (1003 lost: an implied
/// NAK, frame 5), 1005, 1006 and LAST 1007 (frames 2-8). The requester asks again from the first missing:
/// READ 1003 from 0x10000 + 3 × 1024 = 0x10C00, 5 × 1024 = 5120 bytes (frame 9, 30 µs after the implied
/// NAK), answered FIRST 1003 to LAST 1007 (frames 10-14): 5120 bytes in 5 packets, as its length says. The
/// responses behind 1007 answer the resend: not reordered. A go-back-N after a NAK, no timeout.
fn read_resumed_after_an_implied_nak(dir: &Path) {
    let mut c = Capture::new(1);
    let none = json!({});
    c.add_at(0, read(1000, 0x10000, 8192), none.clone());
    c.add_at(10, response(FIRST, 1000, 1024, 1), none.clone());
    c.add_at(20, response(MIDDLE, 1001, 1024, 1), none.clone());
    c.add_at(30, response(MIDDLE, 1002, 1024, 1), none.clone());
    c.add_at(40, response(MIDDLE, 1004, 1024, 1), none.clone());
    c.add_at(50, response(MIDDLE, 1005, 1024, 1), none.clone());
    c.add_at(60, response(MIDDLE, 1006, 1024, 1), none.clone());
    c.add_at(70, response(LAST, 1007, 1024, 1), none.clone());
    c.add_at(100, read(1003, 0x10C00, 5120), none.clone());
    c.add_at(110, response(FIRST, 1003, 1024, 1), none.clone());
    for psn in 1004..=1006u32 {
        let at = 110 + u64::from(psn - 1003) * 10;
        c.add_at(at, response(MIDDLE, psn, 1024, 1), none.clone());
    }
    c.add_at(150, response(LAST, 1007, 1024, 1), none.clone());
    write(
        dir,
        "read_resumed_after_an_implied_nak",
        &c,
        json!({
            "config": {"mtu": 1024},
            "flows": [{"src": "10.0.0.1", "dst": "10.0.0.2", "dest_qp": 0x11,
                       "psn": {"first": 1000, "last": 1007, "gap_events": 0, "missing": 0,
                               "retransmitted": 1, "duplicates": 1, "retransmission_episodes": 1,
                               "reused": 0, "resumed_reads": 1, "reordered": 0}},
                      {"src": "10.0.0.2", "dst": "10.0.0.1", "dest_qp": 0x22, "read_responses": 12,
                       "implied_naks": 1, "reordered_responses": 0}],
            "events": [{"kind": "implied_nak", "frame": 5, "detail": {"expected": 1003, "got": 1004}},
                       {"kind": "go_back_n", "frame": 9,
                        "detail": {"from": 1003, "behind": 5, "after_nak_s": 0.00006}}],
            "event_counts": {"reordered": 0, "implied_nak": 1},
            "diagnosis": {},
            "verdict": {"status": "fail", "problems": ["retransmissions"]}
        }),
    );
}

/// ib_read_bw's pattern: READs of 2 KiB at 2000 (VA 0x20000) and 2002 (VA 0x30000), frames 1-2; FIRST 2000
/// comes (frame 3), LAST 2001 is lost, FIRST 2002 of the next READ comes (frame 4): READ 2000 is passed
/// unanswered, an implied NAK; LAST 2003 (frame 5). The requester goes back: READ 2001 from 0x20400, 1024
/// bytes (frame 6: resumed, 20 µs after the implied NAK), then READ 2002 again whole (frame 7); ONLY 2001
/// (frame 8), FIRST 2002 and LAST 2003 again (frames 9-10) answer the resends.
fn read_resumed_after_a_later_response(dir: &Path) {
    let mut c = Capture::new(1);
    let none = json!({});
    c.add_at(0, read(2000, 0x20000, 2048), none.clone());
    c.add_at(5, read(2002, 0x30000, 2048), none.clone());
    c.add_at(10, response(FIRST, 2000, 1024, 1), none.clone());
    c.add_at(20, response(FIRST, 2002, 1024, 1), none.clone());
    c.add_at(30, response(LAST, 2003, 1024, 2), none.clone());
    c.add_at(40, read(2001, 0x20400, 1024), none.clone());
    c.add_at(45, read(2002, 0x30000, 2048), none.clone());
    c.add_at(50, response(ONLY, 2001, 1024, 2), none.clone());
    c.add_at(60, response(FIRST, 2002, 1024, 2), none.clone());
    c.add_at(70, response(LAST, 2003, 1024, 3), none.clone());
    write(
        dir,
        "read_resumed_after_a_later_response",
        &c,
        json!({
            "config": {"mtu": 1024},
            "flows": [{"src": "10.0.0.1", "dst": "10.0.0.2", "dest_qp": 0x11,
                       "psn": {"first": 2000, "last": 2003, "gap_events": 0, "missing": 0,
                               "retransmitted": 2, "duplicates": 2, "retransmission_episodes": 1,
                               "reused": 0, "resumed_reads": 1, "reordered": 0},
                       "read_latency_us": {"samples": 2, "min": 10.0, "max": 15.0}},
                      {"src": "10.0.0.2", "dst": "10.0.0.1", "dest_qp": 0x22, "read_responses": 6,
                       "implied_naks": 1, "reordered_responses": 0}],
            "events": [{"kind": "implied_nak", "frame": 4, "detail": {"expected": 2000, "got": 2002}},
                       {"kind": "go_back_n", "frame": 6,
                        "detail": {"from": 2001, "behind": 3, "after_nak_s": 0.00002}}],
            "event_counts": {"reordered": 0, "implied_nak": 1, "go_back_n": 1},
            "diagnosis": {},
            "verdict": {"status": "fail", "problems": ["retransmissions"]}
        }),
    );
}

/// FETCH_ADD 500 (frame 1) and WRITE 501 (frame 2); the atomic ACK is lost and the ACK of 501 (frame 3, MSN
/// 2) passes the atomic unanswered: an implied NAK. The requester goes back: the same FETCH_ADD 500 and WRITE
/// 501 (frames 4-5); the responder answers the duplicate atomic with its saved ATOMIC ACKNOWLEDGE, MSN 1 of
/// then (frame 6: behind the highest PSN answered, answering the resend, its MSN not held to the later one),
/// and the duplicate WRITE with a duplicate ACK of 501 (frame 7); WRITE 502 and its ACK (frames 8-9).
fn atomic_resent_after_a_later_ack(dir: &Path) {
    let mut c = Capture::new(1);
    let none = json!({});
    c.add_at(0, fetch_add(500), none.clone());
    c.add_at(5, AB.write(501).build(), none.clone());
    c.add_at(20, AB.ack(501, 2), none.clone());
    c.add_at(30, fetch_add(500), none.clone());
    c.add_at(35, AB.write(501).build(), none.clone());
    c.add_at(40, atomic_ack(500, 1, 7), none.clone());
    c.add_at(45, AB.ack(501, 2), none.clone());
    c.add_at(60, AB.write(502).build(), none.clone());
    c.add_at(70, AB.ack(502, 3), none.clone());
    write(
        dir,
        "atomic_resent_after_a_later_ack",
        &c,
        json!({
            "flows": [{"src": "10.0.0.1", "dst": "10.0.0.2", "dest_qp": 0x11,
                       "psn": {"first": 500, "last": 502, "retransmitted": 2, "duplicates": 2,
                               "retransmission_episodes": 1, "reused": 0, "reordered": 0}},
                      {"src": "10.0.0.2", "dst": "10.0.0.1", "dest_qp": 0x22, "acks": 3,
                       "duplicate_acks": 1, "atomic_acks": 1, "implied_naks": 1,
                       "reordered_responses": 0}],
            "events": [{"kind": "implied_nak", "frame": 3, "detail": {"expected": 500, "got": 501}},
                       {"kind": "go_back_n", "frame": 4,
                        "detail": {"from": 500, "behind": 2, "after_nak_s": 0.00001}}],
            "event_counts": {"reordered": 0},
            "diagnosis": {},
            "verdict": {"status": "fail", "problems": ["retransmissions"]}
        }),
    );
}

/// WRITEs 10-13 (frames 1-4); ACK 11 (MSN 2, frame 5), ACK 13 (MSN 4, frame 6), then ACK 12 (MSN 3, frame
/// 7): sent before ACK 13, held up on the way. A `reordered` note one PSN behind 13, not an MSN that went
/// back; WRITE 14 and its ACK follow (frames 8-9). Nothing failed.
fn acks_reordered_on_the_way(dir: &Path) {
    let mut c = Capture::new(1);
    let none = json!({});
    for (i, psn) in (10..=13u32).enumerate() {
        c.add_at(i as u64 * 5, AB.write(psn).build(), none.clone());
    }
    c.add_at(30, AB.ack(11, 2), none.clone());
    c.add_at(40, AB.ack(13, 4), none.clone());
    c.add_at(45, AB.ack(12, 3), none.clone());
    c.add_at(60, AB.write(14).build(), none.clone());
    c.add_at(70, AB.ack(14, 5), none.clone());
    write(
        dir,
        "acks_reordered_on_the_way",
        &c,
        json!({
            "flows": [{"src": "10.0.0.2", "dst": "10.0.0.1", "dest_qp": 0x22, "acks": 4,
                       "reordered_responses": 1, "reorder_depth_max": 1},
                      {"src": "10.0.0.1", "dst": "10.0.0.2", "dest_qp": 0x11,
                       "psn": {"retransmitted": 0, "reordered": 0}}],
            "events": [{"kind": "reordered", "frame": 7,
                        "detail": {"psn": 12, "highest": 13, "depth": 1, "of": "response"}}],
            "event_counts": {"reordered": 1},
            "diagnosis": {},
            "verdict": {"status": "pass", "problems": []},
            "runs": [{"args": ["--fail-on", "all"], "exit": 0, "text": "PASS"}]
        }),
    );
}

/// WRITEs 10, 11, 13 (frames 1-3: 12 skipped), then 12 two microseconds after 13 with no NAK yet (frame 4):
/// held up on the way, the first copy of 12, one behind 13; the gap was no loss (no `psn_gap`, nothing
/// missing). The responder had seen 13 first and NAKs 12 (frame 5); WRITE 14 (frame 6); the requester then
/// goes back to 12 for the NAK: 12, 13, 14 again (frames 7-9, duplicates), one go-back-N after the NAK, and
/// the ACK of 14 (frame 10).
fn a_request_reordered_before_the_nak(dir: &Path) {
    let mut c = Capture::new(1);
    let none = json!({});
    c.add_at(0, AB.write(10).build(), none.clone());
    c.add_at(5, AB.write(11).build(), none.clone());
    c.add_at(10, AB.write(13).build(), none.clone());
    c.add_at(12, AB.write(12).build(), none.clone());
    c.add_at(20, nak(12, 2), none.clone());
    c.add_at(25, AB.write(14).build(), none.clone());
    for (at, psn) in [(40, 12), (45, 13), (50, 14)] {
        c.add_at(at, AB.write(psn).build(), none.clone());
    }
    c.add_at(60, AB.ack(14, 5), none.clone());
    write(
        dir,
        "a_request_reordered_before_the_nak",
        &c,
        json!({
            "flows": [{"src": "10.0.0.1", "dst": "10.0.0.2", "dest_qp": 0x11, "reorder_depth_max": 1,
                       "psn": {"first": 10, "last": 14, "gap_events": 0, "missing": 0, "reordered": 1,
                               "retransmitted": 3, "duplicates": 3, "retransmission_episodes": 1}}],
            "events": [{"kind": "reordered", "frame": 4,
                        "detail": {"psn": 12, "highest": 13, "depth": 1, "of": "request"}},
                       {"kind": "go_back_n", "frame": 7,
                        "detail": {"from": 12, "behind": 3, "after_nak_s": 0.00002}}],
            "event_counts": {"reordered": 1, "psn_gap": 0, "go_back_n": 1},
            "diagnosis": {},
            "verdict": {"status": "fail", "problems": ["naks", "retransmissions"]}
        }),
    );
}

/// WRITEs 10, 11, 13 (frames 1-3), the responder's NAK of 12 (frame 4), then 12 (frame 5): held up, or the
/// resend for the NAK of a 12 lost before the capture point? The next request tells: 12 again (frame 6) is
/// the resend (the go-back-N, after the NAK), so frame 5 was held up on the way (`reordered`), and the gap
/// was no loss. 13 again, then the new 14 (frames 7-8), the ACK of 14 (frame 9).
fn a_request_reordered_after_the_nak(dir: &Path) {
    let mut c = Capture::new(1);
    let none = json!({});
    c.add_at(0, AB.write(10).build(), none.clone());
    c.add_at(5, AB.write(11).build(), none.clone());
    c.add_at(10, AB.write(13).build(), none.clone());
    c.add_at(15, nak(12, 2), none.clone());
    c.add_at(18, AB.write(12).build(), none.clone());
    for (at, psn) in [(40, 12), (45, 13), (50, 14)] {
        c.add_at(at, AB.write(psn).build(), none.clone());
    }
    c.add_at(60, AB.ack(14, 5), none.clone());
    write(
        dir,
        "a_request_reordered_after_the_nak",
        &c,
        json!({
            "flows": [{"src": "10.0.0.1", "dst": "10.0.0.2", "dest_qp": 0x11, "retransmitted_bytes": 128,
                       "psn": {"first": 10, "last": 14, "gap_events": 0, "missing": 0, "reordered": 1,
                               "retransmitted": 2, "duplicates": 2, "retransmission_episodes": 1}}],
            "events": [{"kind": "reordered", "frame": 5,
                        "detail": {"psn": 12, "highest": 13, "depth": 1, "of": "request"}},
                       {"kind": "go_back_n", "frame": 6,
                        "detail": {"from": 12, "behind": 2, "after_nak_s": 0.000025}}],
            "event_counts": {"reordered": 1, "psn_gap": 0, "go_back_n": 1},
            "diagnosis": {},
            "verdict": {"status": "fail", "problems": ["naks", "retransmissions"]}
        }),
    );
}

/// The same start, but 12 was lost before the capture point: after the NAK (frame 4) comes 12 (frame 5),
/// then 13 again (frame 6): frame 5 began the go-back-N (after the NAK, 25 µs), a retransmission, and the
/// gap stays (1 PSN missing at the capture point). 14 and its ACK (frames 7-8).
fn a_resend_for_the_nak_of_a_lost_request(dir: &Path) {
    let mut c = Capture::new(1);
    let none = json!({});
    c.add_at(0, AB.write(10).build(), none.clone());
    c.add_at(5, AB.write(11).build(), none.clone());
    c.add_at(10, AB.write(13).build(), none.clone());
    c.add_at(15, nak(12, 2), none.clone());
    for (at, psn) in [(40, 12), (45, 13), (50, 14)] {
        c.add_at(at, AB.write(psn).build(), none.clone());
    }
    c.add_at(60, AB.ack(14, 5), none.clone());
    write(
        dir,
        "a_resend_for_the_nak_of_a_lost_request",
        &c,
        json!({
            "flows": [{"src": "10.0.0.1", "dst": "10.0.0.2", "dest_qp": 0x11,
                       "psn": {"first": 10, "last": 14, "gap_events": 1, "missing": 1, "reordered": 0,
                               "retransmitted": 2, "duplicates": 1, "retransmission_episodes": 1}}],
            "events": [{"kind": "psn_gap", "frame": 3, "detail": {"after": 11, "missing": 1}},
                       {"kind": "go_back_n", "frame": 5,
                        "detail": {"from": 12, "behind": 2, "after_nak_s": 0.000025}}],
            "event_counts": {"reordered": 0, "go_back_n": 1},
            "diagnosis": {},
            "verdict": {"status": "fail", "problems": ["gaps", "naks", "retransmissions"]}
        }),
    );
}

/// A plain SPAN port mirroring the ingress and the egress of one port: every frame twice, byte for byte, 1 µs
/// apart. WRITEs 10, 11, ACK 11, WRITE 12 (lost after the mirror), the responder's NAK of 12, the resend of
/// 12 15 µs after the first (after the NAK: a retransmission, although the same bytes from the same place),
/// ACK 12. Seven second copies set aside (frames 2, 4, 6, 8, 10, 12, 14): one frame each, no duplicate
/// request or ACK.
fn a_span_port_copies_every_frame(dir: &Path) {
    let mut c = Capture::new(1);
    let none = json!({});
    let frames = [
        (0, AB.write(10).build()),
        (10, AB.write(11).build()),
        (20, AB.ack(11, 2)),
        (30, AB.write(12).build()),
        (35, nak(12, 2)),
        (45, AB.write(12).build()),
        (55, AB.ack(12, 3)),
    ];
    for (at, f) in frames {
        c.add_at(at, f.clone(), none.clone());
        c.add_at(at + 1, f, none.clone());
    }
    write(
        dir,
        "a_span_port_copies_every_frame",
        &c,
        json!({
            "capture": {"frames": 14, "roce_frames": 14, "mirror_duplicates": 7},
            "flows": [{"src": "10.0.0.1", "dst": "10.0.0.2", "dest_qp": 0x11, "packets": 4,
                       "psn": {"first": 10, "last": 12, "retransmitted": 1, "duplicates": 1,
                               "retransmission_episodes": 1, "reordered": 0}},
                      {"src": "10.0.0.2", "dst": "10.0.0.1", "dest_qp": 0x22, "packets": 3, "acks": 2,
                       "duplicate_acks": 0, "naks": {"psn_seq_err": 1}}],
            "events": [{"kind": "nak", "frame": 9, "detail": {"psn": 12}},
                       {"kind": "go_back_n", "frame": 11,
                        "detail": {"from": 12, "behind": 1, "after_nak_s": 0.00001}}],
            "event_counts": {"nak": 1, "go_back_n": 1},
            "diagnosis": {},
            "verdict": {"status": "fail", "problems": ["naks", "retransmissions"]}
        }),
    );
}

/// The lab's read_reorder_resp pattern: READ 3000 of 4 KiB at 0x40000 (frame 1) goes unanswered for
/// 600 µs and is resent whole (frame 2: a timer's go-back-N, 1 behind: no response has shown the path MTU
/// yet, so the READ is known to take one PSN at least, 3000); both copies
/// are answered and netem interleaves the answers. The first's FIRST 3000, MIDDLE 3001 and 3002 (frames
/// 3-5), the second's MIDDLE 3002 overtaking (frame 6), the first's LAST 3003 (frame 7): its four
/// responses carry the READ's 4096 bytes, the copy of 3002 counted once. Then the rest of the second
/// answer, FIRST 3000, MIDDLE 3001, LAST 3003 (frames 8-10): a duplicate answer to a READ the requester has
/// whole, its missing 3002 no implied NAK, its 3072 bytes no mismatch.
fn read_answers_interleaved_on_the_way(dir: &Path) {
    // The second answer's packets: the same bytes but for the IPv4 ID (the responder's next ones), so no
    // SPAN copy of the first's.
    let again = |op: u8, psn: u32| {
        let mut r = AB.frame(false, op, psn);
        if op != MIDDLE {
            r.ext.aeth = Some(Aeth {
                syndrome: 0x1F,
                msn: 1,
            });
        }
        if let parsers::builder::Net::V4(ip) = &mut r.net {
            ip.id = 0x100 + psn as u16 % 0x100;
        }
        r.payload = payload(1024, psn as u8);
        r.build()
    };
    let mut c = Capture::new(1);
    let none = json!({});
    c.add_at(0, read(3000, 0x40000, 4096), none.clone());
    c.add_at(600, read(3000, 0x40000, 4096), none.clone());
    c.add_at(610, response(FIRST, 3000, 1024, 1), none.clone());
    c.add_at(620, response(MIDDLE, 3001, 1024, 1), none.clone());
    c.add_at(630, response(MIDDLE, 3002, 1024, 1), none.clone());
    c.add_at(640, again(MIDDLE, 3002), none.clone());
    c.add_at(650, response(LAST, 3003, 1024, 1), none.clone());
    c.add_at(660, again(FIRST, 3000), none.clone());
    c.add_at(670, again(MIDDLE, 3001), none.clone());
    c.add_at(680, again(LAST, 3003), none.clone());
    write(
        dir,
        "read_answers_interleaved_on_the_way",
        &c,
        json!({
            "config": {"mtu": 1024},
            "flows": [{"src": "10.0.0.1", "dst": "10.0.0.2", "dest_qp": 0x11,
                       "psn": {"first": 3000, "last": 3003, "gap_events": 0, "missing": 0,
                               "retransmitted": 1, "duplicates": 1, "retransmission_episodes": 1,
                               "reused": 0, "resumed_reads": 0, "reordered": 0}},
                      {"src": "10.0.0.2", "dst": "10.0.0.1", "dest_qp": 0x22, "read_responses": 8,
                       "implied_naks": 0, "reordered_responses": 0}],
            "events": [{"kind": "go_back_n", "frame": 2,
                        "detail": {"from": 3000, "behind": 1, "after_nak_s": null}}],
            "event_counts": {"go_back_n": 1, "implied_nak": 0, "read_response_mismatch": 0,
                             "reordered": 0},
            "diagnosis": {},
            "verdict": {"status": "fail", "problems": ["retransmissions"]}
        }),
    );
}

/// A CI run's read_reorder_resp (rxe, netem reordering READ responses), reduced: READs of 4 KiB at 100, 104
/// and 108 (MSNs 1, 2, 3 once done; frames 1-3). FIRST 104 overtakes READ 100's responses (frame 4): the
/// requester goes back and resends the three READs whole (frames 5-7). READ 100's original responses come
/// (frames 8-11), then the answer to the resent READ 104, a duplicate the responder answers with its MSN of
/// now, 3 (frame 12: the highest PSN answered, 104, again), ahead of the original LAST 107 with MSN 2 (frame
/// 15), which the path held up. No MSN went back: the 3 answers a resend; 107's 2 follows 104's 2.
fn a_duplicate_reads_newer_msn_ahead_of_the_original(dir: &Path) {
    let mut c = Capture::new(1);
    let none = json!({});
    for (i, psn) in [100u32, 104, 108].into_iter().enumerate() {
        c.add_at(
            i as u64 * 10,
            read(psn, 0x10000 + u64::from(psn - 100) * 1024, 4096),
            none.clone(),
        );
    }
    c.add_at(100, response(FIRST, 104, 1024, 2), none.clone());
    for (i, psn) in [100u32, 104, 108].into_iter().enumerate() {
        c.add_at(
            110 + i as u64 * 10,
            read(psn, 0x10000 + u64::from(psn - 100) * 1024, 4096),
            none.clone(),
        );
    }
    let answers = [
        (FIRST, 100, 1),
        (MIDDLE, 101, 1),
        (MIDDLE, 102, 1),
        (LAST, 103, 1),
        (FIRST, 104, 3),
        (MIDDLE, 105, 2),
        (MIDDLE, 106, 2),
        (LAST, 107, 2),
        (FIRST, 108, 3),
        (MIDDLE, 109, 3),
        (MIDDLE, 110, 3),
        (LAST, 111, 3),
    ];
    for (i, (op, psn, msn)) in answers.into_iter().enumerate() {
        c.add_at(
            140 + i as u64 * 10,
            response(op, psn, 1024, msn),
            none.clone(),
        );
    }
    write(
        dir,
        "a_duplicate_reads_newer_msn_ahead_of_the_original",
        &c,
        json!({
            "config": {"mtu": 1024},
            "flows": [{"src": "10.0.0.1", "dst": "10.0.0.2", "dest_qp": 0x11,
                       "psn": {"first": 100, "last": 111, "retransmitted": 3, "reused": 0,
                               "resumed_reads": 0}},
                      {"src": "10.0.0.2", "dst": "10.0.0.1", "dest_qp": 0x22, "read_responses": 13}],
            "event_counts": {"msn_regression": 0, "read_response_mismatch": 0, "ack_out_of_window": 0,
                             "psn_reuse": 0},
            "diagnosis": {}
        }),
    );
}

/// WRITE `psn` with IPv4 ID `id` (the sender's counter).
fn write_with_id(psn: u32, id: u16) -> Vec<u8> {
    let mut f = AB.write(psn);
    if let parsers::builder::Net::V4(ip) = &mut f.net {
        ip.id = id;
    }
    f.build()
}

/// WRITEs 10 to 17, each with the next IPv4 ID (0x1000 for 10: the sender's counter), 5 µs apart; 12 is
/// held up on the way and comes 20 ms later (frame 8), four times the 5 ms reorder window after the gap
/// that skipped it (frame 3, WRITE 13). Its ID, 0x1002, is older than 13's: it was sent before 13, so it is
/// 12's first copy, reordered 5 behind 17, not a resend (none asked for it: no NAK, and a timer resend
/// would carry a newer ID). The gap was no loss. The ACK of 17 (frame 9).
fn a_request_held_up_past_the_reorder_window(dir: &Path) {
    let mut c = Capture::new(1);
    let none = json!({});
    for (i, psn) in [10, 11, 13, 14, 15, 16, 17].into_iter().enumerate() {
        c.add_at(
            5 * i as u64,
            write_with_id(psn, 0x1000 + (psn - 10) as u16),
            none.clone(),
        );
    }
    c.add_at(20_000, write_with_id(12, 0x1002), none.clone());
    c.add_at(20_010, AB.ack(17, 8), none.clone());
    write(
        dir,
        "a_request_held_up_past_the_reorder_window",
        &c,
        json!({
            "flows": [{"src": "10.0.0.1", "dst": "10.0.0.2", "dest_qp": 0x11, "reorder_depth_max": 5,
                       "psn": {"first": 10, "last": 17, "gap_events": 0, "missing": 0, "reordered": 1,
                               "retransmitted": 0, "duplicates": 0, "retransmission_episodes": 0}}],
            "events": [{"kind": "reordered", "frame": 8,
                        "detail": {"psn": 12, "highest": 17, "depth": 5, "of": "request"}}],
            "event_counts": {"reordered": 1, "psn_gap": 0, "go_back_n": 0},
            "diagnosis": {}
        }),
    );
}

/// The same WRITEs 10 to 17 (IDs 0x1000 on), but 12 is lost (frame 3, WRITE 13, opens a gap of 1). 20 ms
/// later the requester's timer goes back to 12 (frame 8) with a new ID, 0x1008, after 17's: a resend,
/// whatever the wait, then 13 to 17 again (frames 9-13, IDs 0x1009-0x100d); the ACK of 17 (frame 14). The
/// timeout: 12 never seen, its interval runs from the last request (17 at 30 µs), 19,970 µs; 4.096 µs ×
/// 2^12 = 16.8 ms is the largest within it (2^13 is 33.6 ms): exponent 12, the first retry.
fn a_request_resent_on_its_timer_past_the_reorder_window(dir: &Path) {
    let mut c = Capture::new(1);
    let none = json!({});
    for (i, psn) in [10, 11, 13, 14, 15, 16, 17].into_iter().enumerate() {
        c.add_at(
            5 * i as u64,
            write_with_id(psn, 0x1000 + (psn - 10) as u16),
            none.clone(),
        );
    }
    for (i, psn) in (12..=17).enumerate() {
        c.add_at(
            20_000 + 5 * i as u64,
            write_with_id(psn, 0x1008 + i as u16),
            none.clone(),
        );
    }
    c.add_at(20_040, AB.ack(17, 8), none.clone());
    write(
        dir,
        "a_request_resent_on_its_timer_past_the_reorder_window",
        &c,
        json!({
            "flows": [{"src": "10.0.0.1", "dst": "10.0.0.2", "dest_qp": 0x11, "reorder_depth_max": 0,
                       "psn": {"first": 10, "last": 17, "gap_events": 1, "missing": 1, "reordered": 0,
                               "retransmitted": 6, "duplicates": 5, "retransmission_episodes": 1}}],
            "events": [{"kind": "psn_gap", "frame": 3, "detail": {"after": 11, "missing": 1}},
                       {"kind": "go_back_n", "frame": 8,
                        "detail": {"from": 12, "behind": 6, "after_nak_s": null}},
                       {"kind": "timeout_retransmission", "frame": 8,
                        "detail": {"psn": 12, "interval_s": 0.01997, "timeout_exponent": 12, "retry": 1}}],
            "event_counts": {"reordered": 0, "psn_gap": 1, "go_back_n": 1, "timeout_retransmission": 1},
            "diagnosis": {"timeout_retransmission": 1}
        }),
    );
}

pub fn write_all(dir: &Path) {
    read_resumed_after_its_last_response_was_lost(dir);
    read_resumed_after_an_implied_nak(dir);
    read_resumed_after_a_later_response(dir);
    atomic_resent_after_a_later_ack(dir);
    acks_reordered_on_the_way(dir);
    a_request_reordered_before_the_nak(dir);
    a_request_reordered_after_the_nak(dir);
    a_resend_for_the_nak_of_a_lost_request(dir);
    a_span_port_copies_every_frame(dir);
    read_answers_interleaved_on_the_way(dir);
    a_request_held_up_past_the_reorder_window(dir);
    a_request_resent_on_its_timer_past_the_reorder_window(dir);
    a_duplicate_reads_newer_msn_ahead_of_the_original(dir);
}
