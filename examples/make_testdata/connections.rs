//! Captures of CM handshakes and the data path after them (testdata/connections/), each beside its
//! connection table and events worked out by hand (`NAME.expected.json`, as in testdata/diagnosis, plus
//! `connections`: each expected connection's fields, in order).
//!
//! A is 10.0.0.1 with QP 0x22 (the active side, the client), B is 10.0.0.2 with QP 0x11 (the passive side).
//! REQ's starting PSN is the PSN B sends from, REP's the PSN A sends from. Times in µs.
use std::path::Path as Dir;

use parsers::builder::{Net, RoceFrame};
use parsers::cm::{
    CmMessage, CommIds, Dreq, Mra, Path, Rej, Rep, Req, ServiceId, SidrRep, SidrReq,
};
use parsers::mad::Mad;
use serde_json::json;

use super::analysis::{AB, write};
use super::{Capture, payload};

const COMM_A: u32 = 0x0a0a_0001;
const COMM_B: u32 = 0x0b0b_0001;
/// RDMA CM's service ID for TCP port 18515 (perftest's default port).
const PORT: u16 = 18515;

/// MADs on QP 1, each direction's PSNs consecutive (as a NIC sends them).
#[derive(Default)]
struct Gsi {
    next_psn: [u32; 2],
}

impl Gsi {
    /// A MAD from A to B (`from_a`) or back.
    fn mad(&mut self, from_a: bool, tid: u64, m: CmMessage) -> Vec<u8> {
        let mut f = RoceFrame::gsi(&Mad::cm_send(tid, m));
        if let Net::V4(ip) = &mut f.net {
            (ip.src, ip.dst) = if from_a { (AB.a, AB.b) } else { (AB.b, AB.a) };
        }
        let next = &mut self.next_psn[usize::from(!from_a)];
        f.bth.psn = *next;
        *next += 1;
        f.build()
    }
}

/// The RoCEv2 GID of an IPv4 address: ::ffff:a.b.c.d.
fn mapped(ip: [u8; 4]) -> [u8; 16] {
    let mut gid = [0u8; 16];
    gid[10] = 0xff;
    gid[11] = 0xff;
    gid[12..].copy_from_slice(&ip);
    gid
}

/// A's REQ: its QP 0x22, B to send from `b_psn`, path MTU code `mtu` (3: 1024 bytes), retry 7, RNR retry
/// 6, CM response timeouts 20 (4.29 s), port 18515.
fn req(comm: u32, b_psn: u32, mtu: u8) -> CmMessage<'static> {
    CmMessage::Req(Req {
        local_comm_id: comm,
        service_id: ServiceId::ip(6, PORT),
        local_qpn: AB.qp_a,
        starting_psn: b_psn,
        remote_cm_response_timeout: 20,
        local_cm_response_timeout: 20,
        retry_count: 7,
        path_mtu: mtu,
        rnr_retry_count: 6,
        max_cm_retries: 15,
        primary: Path {
            local_lid: 0xffff,
            remote_lid: 0xffff,
            local_gid: mapped(AB.a),
            remote_gid: mapped(AB.b),
            hop_limit: 64,
            ..Path::default()
        },
        ..Req::default()
    })
}

/// B's REP: its QP `qpn`, A to send from `a_psn`.
fn rep(comm: u32, remote: u32, qpn: u32, a_psn: u32) -> CmMessage<'static> {
    CmMessage::Rep(Rep {
        local_comm_id: comm,
        remote_comm_id: remote,
        local_qpn: qpn,
        starting_psn: a_psn,
        rnr_retry_count: 6,
        ..Rep::default()
    })
}

fn ids(local: u32, remote: u32) -> CommIds<'static> {
    CommIds {
        local_comm_id: local,
        remote_comm_id: remote,
        ..CommIds::default()
    }
}

fn rtu() -> CmMessage<'static> {
    CmMessage::Rtu(ids(COMM_A, COMM_B))
}

fn rej(local: u32, remote: u32, reason: u16) -> CmMessage<'static> {
    CmMessage::Rej(Rej {
        local_comm_id: local,
        remote_comm_id: remote,
        reason,
        ..Rej::default()
    })
}

/// A SEND_ONLY of 32 bytes from A (to QP 0x11) or from B (to QP 0x22).
fn send(from_a: bool, psn: u32) -> Vec<u8> {
    let mut f = AB.frame(from_a, 0x04, psn);
    f.payload = payload(32, psn as u8);
    f.build()
}

/// An ACK from B (for A's requests, to QP 0x22) or from A (to QP 0x11).
fn ack_from(from_b: bool, psn: u32, msn: u32) -> Vec<u8> {
    let mut f = AB.frame(!from_b, 0x11, psn);
    f.ext.aeth = Some(parsers::aeth::Aeth {
        syndrome: 0x1f,
        msn,
    });
    f.build()
}

/// REQ (B to send from 5000, MTU 1024), MRA (B: the answer will take a while), REP (B's QP 0x11, A to send
/// from 100), RTU at 300 µs: established (frame 4). A SENDs 100, 101 (frames 5, 7), B ACKs them; B SENDs 5000
/// (frame 9), A ACKs; A's DREQ at 1000 µs (frame 11), B's DREP. Every side started where it was told: matched.
/// REQ→REP 200 µs, REP→RTU 100 µs.
fn cm_handshake(dir: &Dir) {
    let mut c = Capture::new(1);
    let mut g = Gsi::default();
    let none = json!({});
    c.add_at(0, g.mad(true, 1, req(COMM_A, 5000, 3)), none.clone());
    let mra = CmMessage::Mra(Mra {
        local_comm_id: COMM_B,
        remote_comm_id: COMM_A,
        service_timeout: 20,
        ..Mra::default()
    });
    c.add_at(100, g.mad(false, 1, mra), none.clone());
    c.add_at(
        200,
        g.mad(false, 1, rep(COMM_B, COMM_A, AB.qp_b, 100)),
        none.clone(),
    );
    c.add_at(300, g.mad(true, 1, rtu()), none.clone());
    c.add_at(400, send(true, 100), none.clone());
    c.add_at(410, ack_from(true, 100, 1), none.clone());
    c.add_at(500, send(true, 101), none.clone());
    c.add_at(510, ack_from(true, 101, 2), none.clone());
    c.add_at(600, send(false, 5000), none.clone());
    c.add_at(610, ack_from(false, 5000, 1), none.clone());
    let dreq = CmMessage::Dreq(Dreq {
        local_comm_id: COMM_A,
        remote_comm_id: COMM_B,
        remote_qpn_eecn: AB.qp_b,
        ..Dreq::default()
    });
    c.add_at(1000, g.mad(true, 2, dreq), none.clone());
    c.add_at(
        1100,
        g.mad(false, 2, CmMessage::Drep(ids(COMM_B, COMM_A))),
        none.clone(),
    );
    write(
        dir,
        "cm_handshake",
        &c,
        json!({
            "connections": [{
                "origin": "cm", "state": "disconnected", "mtu": 1024, "retry_count": 7, "rnr_retry_count": 6,
                "port": PORT, "matched": true, "mismatches": [],
                "sides": [{"address": "10.0.0.1", "qpn": 0x22, "start_psn": 100, "first_psn": 100, "first_frame": 5},
                          {"address": "10.0.0.2", "qpn": 0x11, "start_psn": 5000, "first_psn": 5000, "first_frame": 9}],
                "handshake": {"req": {"frame": 1, "count": 1}, "mra": {"frame": 2}, "rep": {"frame": 3},
                              "rtu": {"frame": 4}, "dreq": {"frame": 11}, "drep": {"frame": 12},
                              "req_to_rep_s": 0.0002, "rep_to_rtu_s": 0.0001,
                              "comm_ids": [COMM_A, COMM_B]}
            }],
            "flows": [{"src": "10.0.0.1", "dst": "10.0.0.2", "dest_qp": 0x11, "paired_by": "cm",
                       "pair": ["10.0.0.2", "10.0.0.1", 0x22]},
                      {"src": "10.0.0.2", "dst": "10.0.0.1", "dest_qp": 0x22, "paired_by": "cm"}],
            "events": [{"kind": "connection", "frame": 4, "detail": {"connection": 0, "qpns": [0x22, 0x11], "mtu": 1024}},
                       {"kind": "disconnect", "frame": 11, "detail": {"connection": 0, "qpns": [0x22, 0x11]}}],
            "diagnosis": {"connection": 1, "disconnect": 1},
            "verdict": {"status": "pass", "problems": []}
        }),
    );
}

/// The handshake's path MTU is the connection's: REQ with MTU code 1 (256 bytes); A READs 1024 bytes at PSN
/// 100 (4 PSNs at 256 bytes) and B answers with 4 response packets of 256 bytes (FIRST, MIDDLE, MIDDLE,
/// LAST), then A WRITEs at PSN 104. Even with `--mtu 1024` on the command line the READ takes 4 PSNs: no
/// gap, no reuse, no response mismatch.
fn cm_mtu_from_the_handshake(dir: &Dir) {
    let mut c = Capture::new(1);
    let mut g = Gsi::default();
    let none = json!({});
    c.add_at(0, g.mad(true, 1, req(COMM_A, 5000, 1)), none.clone());
    c.add_at(
        100,
        g.mad(false, 1, rep(COMM_B, COMM_A, AB.qp_b, 100)),
        none.clone(),
    );
    c.add_at(200, g.mad(true, 1, rtu()), none.clone());
    let mut read = AB.frame(true, 0x0C, 100);
    read.ext.reth = Some(parsers::reth::Reth {
        va: 0x9000,
        r_key: 0x55,
        dma_len: 1024,
    });
    c.add_at(300, read.build(), none.clone());
    for (i, op) in [0x0D, 0x0E, 0x0E, 0x0F].into_iter().enumerate() {
        let mut r = AB.frame(false, op, 100 + i as u32);
        if op != 0x0E {
            r.ext.aeth = Some(parsers::aeth::Aeth {
                syndrome: 0x1f,
                msn: 1,
            });
        }
        r.payload = payload(256, i as u8);
        c.add_at(310 + i as u64 * 5, r.build(), none.clone());
    }
    c.add_at(400, AB.write(104).build(), none.clone());
    c.add_at(410, AB.ack(104, 2), none.clone());
    write(
        dir,
        "cm_mtu_from_the_handshake",
        &c,
        json!({
            "connections": [{"state": "established", "mtu": 256, "matched": true}],
            "flows": [{"src": "10.0.0.1", "dst": "10.0.0.2", "dest_qp": 0x11,
                       "psn": {"gap_events": 0, "retransmitted": 0, "reused": 0}}],
            "diagnosis": {"connection": 1},
            "verdict": {"status": "pass"},
            "runs": [{"args": ["--mtu", "1024"], "exit": 0, "text": "PASS"}]
        }),
    );
}

/// Three REQs, each rejected: reason 28 (consumer reject) at frame 2, 8 (invalid service ID) at frame 4,
/// 1 (no QP available) at frame 6. The REJ names the REQ's comm ID as its remote one (its own is 0, as
/// Linux's ib_cm sends it when nothing listens).
fn cm_rejects(dir: &Dir) {
    let mut c = Capture::new(1);
    let mut g = Gsi::default();
    let none = json!({});
    for (i, reason) in [28u16, 8, 1].into_iter().enumerate() {
        let comm = COMM_A + i as u32;
        let at = i as u64 * 1000;
        c.add_at(at, g.mad(true, i as u64, req(comm, 5000, 3)), none.clone());
        c.add_at(
            at + 100,
            g.mad(false, i as u64, rej(0, comm, reason)),
            none.clone(),
        );
    }
    write(
        dir,
        "cm_rejects",
        &c,
        json!({
            "connections": [{"state": "rejected", "handshake": {"rej": {"frame": 2}, "rej_reason": 28}},
                            {"state": "rejected", "handshake": {"rej_reason": 8}},
                            {"state": "rejected", "handshake": {"rej_reason": 1}}],
            "events": [{"kind": "cm_reject", "frame": 2, "detail": {"connection": 0, "reason": 28,
                                                                   "name": "Consumer Reject"}},
                       {"kind": "cm_reject", "frame": 4, "detail": {"connection": 1, "reason": 8,
                                                                   "name": "Invalid Service ID"}},
                       {"kind": "cm_reject", "frame": 6, "detail": {"connection": 2, "reason": 1,
                                                                   "name": "No QP available"}}],
            "diagnosis": {"cm_reject": 3},
            "verdict": {"status": "fail", "problems": ["connections"]},
            "runs": [{"args": ["--fail-on", "connections"], "exit": 3,
                      "text": "3 connection problems (exit status 3: --fail-on connections)"}]
        }),
    );
}

/// A REQ sent three times (the same comm ID, at 0, 1 s and 2 s: frames 1-3) and never answered; then a
/// second connection whose REP (frame 5 and again at frame 6) gets no RTU and no data from A. The capture
/// goes on to 6 s. Both time out: waiting for a REP (the last REQ, frame 3; 3 sent; 6 s since the first)
/// and for an RTU (the last REP, frame 6; 2 sent; waited from the first REP at 3.1 s: 2.9 s).
fn cm_timeouts(dir: &Dir) {
    let mut c = Capture::new(1);
    let mut g = Gsi::default();
    let none = json!({});
    for i in 0..3u64 {
        c.add_at(
            i * 1_000_000,
            g.mad(true, 1, req(COMM_A, 5000, 3)),
            none.clone(),
        );
    }
    c.add_at(
        3_000_000,
        g.mad(true, 2, req(COMM_A + 1, 6000, 3)),
        none.clone(),
    );
    for at in [3_100_000, 4_100_000] {
        let r = rep(COMM_B, COMM_A + 1, AB.qp_b, 200);
        c.add_at(at, g.mad(false, 2, r), none.clone());
    }
    c.add_at(6_000_000, super::diagnosis::other(), none.clone());
    write(
        dir,
        "cm_timeouts",
        &c,
        json!({
            "connections": [{"state": "timed_out", "handshake": {"req": {"frame": 3, "count": 3}}},
                            {"state": "timed_out", "handshake": {"rep": {"frame": 6, "count": 2}}}],
            "events": [{"kind": "cm_timeout", "frame": 3,
                        "detail": {"connection": 0, "waiting_for": "REP", "sent": 3, "waited_s": 6.0}},
                       {"kind": "cm_timeout", "frame": 6,
                        "detail": {"connection": 1, "waiting_for": "RTU", "sent": 2, "waited_s": 2.9}}],
            "diagnosis": {"cm_timeout": 2},
            "verdict": {"status": "fail", "problems": ["connections"]}
        }),
    );
}

/// The handshake joins A's QP 0x22 and B's QP 0x11, but A's SENDs go to QP 0x33 (frames 4, 6; B answers from
/// it): data toward a QPN no connection between A and B announced (unexpected_qp at frame 4), and none toward
/// the QP announced.
fn cm_wrong_qpn(dir: &Dir) {
    let mut c = Capture::new(1);
    let mut g = Gsi::default();
    let none = json!({});
    c.add_at(0, g.mad(true, 1, req(COMM_A, 5000, 3)), none.clone());
    c.add_at(
        100,
        g.mad(false, 1, rep(COMM_B, COMM_A, AB.qp_b, 100)),
        none.clone(),
    );
    c.add_at(200, g.mad(true, 1, rtu()), none.clone());
    let wrong = super::analysis::Conn { qp_b: 0x33, ..AB };
    for (i, psn) in [100u32, 101].into_iter().enumerate() {
        let mut f = wrong.frame(true, 0x04, psn);
        f.payload = payload(32, 1);
        c.add_at(300 + i as u64 * 100, f.build(), none.clone());
        c.add_at(
            310 + i as u64 * 100,
            wrong.ack(psn, i as u32 + 1),
            none.clone(),
        );
    }
    write(
        dir,
        "cm_wrong_qpn",
        &c,
        json!({
            "connections": [{"state": "established", "matched": false,
                             "sides": [{"qpn": 0x22, "first_psn": null}, {"qpn": 0x11, "first_psn": null}]}],
            "events": [{"kind": "unexpected_qp", "frame": 4, "detail": {"qpn": 0x33, "connection": 0}}],
            "diagnosis": {"connection": 1, "unexpected_qp": 1},
            "verdict": {"status": "fail", "problems": ["connections"]}
        }),
    );
}

/// The REP tells A to send from 100, but A's first request carries PSN 200 (frame 4): start_psn_mismatch.
fn cm_start_psn_mismatch(dir: &Dir) {
    let mut c = Capture::new(1);
    let mut g = Gsi::default();
    let none = json!({});
    c.add_at(0, g.mad(true, 1, req(COMM_A, 5000, 3)), none.clone());
    c.add_at(
        100,
        g.mad(false, 1, rep(COMM_B, COMM_A, AB.qp_b, 100)),
        none.clone(),
    );
    c.add_at(200, g.mad(true, 1, rtu()), none.clone());
    c.add_at(300, send(true, 200), none.clone());
    c.add_at(310, ack_from(true, 200, 1), none.clone());
    write(
        dir,
        "cm_start_psn_mismatch",
        &c,
        json!({
            "connections": [{"matched": false, "sides": [{"start_psn": 100, "first_psn": 200, "first_frame": 4},
                                                         {"start_psn": 5000, "first_psn": null}]}],
            "events": [{"kind": "start_psn_mismatch", "frame": 4, "psn": 200,
                        "detail": {"connection": 0, "psn": 200, "announced": 100}}],
            "diagnosis": {"connection": 1, "start_psn_mismatch": 1},
            "verdict": {"status": "fail", "problems": ["connections"]}
        }),
    );
}

/// B's QP 0x11 serves two connections: A's QP 0x22 sends 100-102 (frames 4-6), DREQ/DREP; 0.3 s later (less
/// than the stall time: no idle to tell a new connection by) A's QP 0x23 connects to the same QP 0x11 and is
/// told to send from 101, behind where the first left off. Without the handshake that would be a go-back-N;
/// with it, a new epoch at its first request (frame 13): no retransmission, no gap, and two matched
/// connections.
fn cm_qp_reused(dir: &Dir) {
    let mut c = Capture::new(1);
    let mut g = Gsi::default();
    let none = json!({});
    c.add_at(0, g.mad(true, 1, req(COMM_A, 5000, 3)), none.clone());
    c.add_at(
        100,
        g.mad(false, 1, rep(COMM_B, COMM_A, AB.qp_b, 100)),
        none.clone(),
    );
    c.add_at(200, g.mad(true, 1, rtu()), none.clone());
    for psn in 100..103u32 {
        c.add_at(
            300 + u64::from(psn - 100) * 10,
            send(true, psn),
            none.clone(),
        );
    }
    c.add_at(400, ack_from(true, 102, 3), none.clone());
    let dreq = CmMessage::Dreq(Dreq {
        local_comm_id: COMM_A,
        remote_comm_id: COMM_B,
        remote_qpn_eecn: AB.qp_b,
        ..Dreq::default()
    });
    c.add_at(500, g.mad(true, 2, dreq), none.clone());
    c.add_at(
        600,
        g.mad(false, 2, CmMessage::Drep(ids(COMM_B, COMM_A))),
        none.clone(),
    );
    // The second connection: A's QP 0x23.
    let second = CmMessage::Req(Req {
        local_qpn: 0x23,
        ..match req(COMM_A + 1, 7000, 3) {
            CmMessage::Req(r) => r,
            _ => unreachable!("a REQ"),
        }
    });
    c.add_at(300_000, g.mad(true, 3, second), none.clone());
    c.add_at(
        300_100,
        g.mad(false, 3, rep(COMM_B + 1, COMM_A + 1, AB.qp_b, 101)),
        none.clone(),
    );
    c.add_at(
        300_200,
        g.mad(true, 3, CmMessage::Rtu(ids(COMM_A + 1, COMM_B + 1))),
        none.clone(),
    );
    c.add_at(300_300, send(true, 101), none.clone());
    let a2 = super::analysis::Conn { qp_a: 0x23, ..AB };
    c.add_at(300_310, a2.ack(101, 1), none.clone());
    write(
        dir,
        "cm_qp_reused",
        &c,
        json!({
            "connections": [{"state": "disconnected", "matched": true,
                             "sides": [{"qpn": 0x22, "first_psn": 100, "first_frame": 4}, {"qpn": 0x11}]},
                            {"state": "established", "matched": true,
                             "sides": [{"qpn": 0x23, "first_psn": 101, "first_frame": 13}, {"qpn": 0x11}]}],
            "flows": [{"src": "10.0.0.1", "dst": "10.0.0.2", "dest_qp": 0x11,
                       "psn": {"gap_events": 0, "retransmitted": 0, "epochs": 1}}],
            "events": [{"kind": "new_epoch", "frame": 13, "psn": 101, "detail": {"psn": 101, "expected": 103}}],
            "diagnosis": {"connection": 2, "disconnect": 1, "new_epoch": 1},
            "verdict": {"status": "pass"}
        }),
    );
}

/// SIDR (UD service resolution): a SIDR_REQ and its SIDR_REP, then a UD SEND to the QP it named. Not a
/// connection: the table stays empty, and no event.
fn sidr(dir: &Dir) {
    let mut c = Capture::new(1);
    let mut g = Gsi::default();
    let none = json!({});
    let q = CmMessage::SidrReq(SidrReq {
        request_id: 0x51,
        pkey: 0xffff,
        service_id: ServiceId::ip(0x11, 4000),
        ..SidrReq::default()
    });
    c.add_at(0, g.mad(true, 1, q), none.clone());
    let r = CmMessage::SidrRep(SidrRep {
        request_id: 0x51,
        status: 0,
        qpn: 0x44,
        service_id: ServiceId::ip(0x11, 4000),
        qkey: 0x1234,
        ..SidrRep::default()
    });
    c.add_at(100, g.mad(false, 1, r), none.clone());
    let mut ud = RoceFrame::new(0x64);
    ud.bth.dest_qp = 0x44;
    ud.ext.deth = Some(parsers::deth::Deth {
        q_key: 0x1234,
        reserved: 0,
        src_qp: AB.qp_a,
    });
    ud.payload = payload(64, 3);
    c.add_at(200, ud.build(), none.clone());
    write(
        dir,
        "sidr",
        &c,
        json!({
            "connections": [],
            "diagnosis": {},
            "verdict": {"status": "pass"}
        }),
    );
}

/// A handshake whose REQ sets Local ACK Timeout 14 (4.096 µs × 2^14 = 67.1 ms) and retry count 7; A's SEND
/// of PSN 100 (frame 4, 300 µs) is never answered and A resends it 8, 16, 32 and 64 ms after each last send
/// (frames 5-8: 8.3, 24.3, 56.3, 120.3 ms): its timer backs off (each interval twice the one before) and
/// fires sooner than the handshake's timeout (adaptive). The shortest, 8 ms, implies exponent 10 (4.19 ms
/// ≤ 8 ms < 8.39 ms); each event's exponent is its own interval's (10, 11, 12, 13). Unanswered at the end,
/// retry 4 of 7: at a doubling pace 128 + 256 + 512 ms to the last three resends and 1024 ms after it,
/// 1.92 s until IBV_WC_RETRY_EXC_ERR.
fn cm_timer_backoff(dir: &Dir) {
    let mut c = Capture::new(1);
    let mut g = Gsi::default();
    let none = json!({});
    let mut r = req(COMM_A, 5000, 3);
    if let CmMessage::Req(q) = &mut r {
        q.primary.local_ack_timeout = 14;
    }
    c.add_at(0, g.mad(true, 1, r), none.clone());
    c.add_at(
        100,
        g.mad(false, 1, rep(COMM_B, COMM_A, AB.qp_b, 100)),
        none.clone(),
    );
    c.add_at(200, g.mad(true, 1, rtu()), none.clone());
    c.add_at(300, send(true, 100), none.clone());
    let mut at = 300;
    for wait_ms in [8, 16, 32, 64] {
        at += wait_ms * 1000;
        c.add_at(at, send(true, 100), none.clone());
    }
    let timeout = |frame: u64, interval_s: f64, exp: u8, retry: u32| {
        json!({"kind": "timeout_retransmission", "frame": frame,
            "detail": {"psn": 100, "interval_s": interval_s, "timeout_exponent": exp, "retry": retry}})
    };
    write(
        dir,
        "cm_timer_backoff",
        &c,
        json!({
            "connections": [{"state": "established", "retry_count": 7, "matched": true}],
            "flows": [{"src": "10.0.0.1", "dst": "10.0.0.2", "dest_qp": 0x11,
                "psn": {"retransmitted": 4, "gap_events": 0},
                "timers": {"resends": 4, "intervals_us": [8000, 16000, 32000, 64000],
                    "min_interval_us": 8000, "max_interval_us": 64000, "timeout_exponent": 11,
                    "configured_exponent": 14, "adaptive": true, "backoff": true, "retry_count": 7,
                    "last_retry": 4, "unanswered": true, "gives_up_in_s": 1.92}}],
            // 8 ms is within a sixteenth of 4.096 µs × 2^11 = 8.39 ms: a timer a tick early reads so
            "events": [timeout(5, 0.008, 11, 1), timeout(6, 0.016, 12, 2), timeout(7, 0.032, 13, 3),
                timeout(8, 0.064, 14, 4)],
            "diagnosis": {"connection": 1, "timeout_retransmission": 4},
        }),
    );
}

pub fn write_all(dir: &Dir) {
    cm_handshake(dir);
    cm_mtu_from_the_handshake(dir);
    cm_rejects(dir);
    cm_timeouts(dir);
    cm_wrong_qpn(dir);
    cm_start_psn_mismatch(dir);
    cm_qp_reused(dir);
    cm_timer_backoff(dir);
    sidr(dir);
}
