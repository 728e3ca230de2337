//! Captures for `rocescope analyze`, each beside the report figures worked out by hand for it
//! (`NAME.expected.json`: a subset of the JSON report; flows are matched by source, destination and QP).
use std::fs;
use std::path::Path;

use parsers::aeth::{Aeth, NakCode, Syndrome};
use parsers::builder::{Net, RoceFrame, mac_control_frame};
use parsers::lrh::Lrh;
use parsers::mac_control::MacControl;
use parsers::reth::Reth;
use serde_json::{Value, json};

use super::{Capture, payload, tag};

/// One RC connection: requester A (QP `qp_a`) to responder B (QP `qp_b`).
#[derive(Clone, Copy)]
pub(crate) struct Conn {
    pub(crate) a: [u8; 4],
    pub(crate) b: [u8; 4],
    pub(crate) qp_a: u32,
    pub(crate) qp_b: u32,
}

pub(crate) const AB: Conn = Conn {
    a: [10, 0, 0, 1],
    b: [10, 0, 0, 2],
    qp_a: 0x22,
    qp_b: 0x11,
};

impl Conn {
    pub(crate) fn frame(&self, from_a: bool, op: u8, psn: u32) -> RoceFrame {
        let mut f = RoceFrame::new(op);
        let (src, dst, qp) = if from_a {
            (self.a, self.b, self.qp_b)
        } else {
            (self.b, self.a, self.qp_a)
        };
        if let Net::V4(ip) = &mut f.net {
            ip.src = src;
            ip.dst = dst;
        }
        f.bth.dest_qp = qp;
        f.bth.psn = psn;
        f
    }

    /// A WRITE_ONLY of 64 bytes.
    pub(crate) fn write(&self, psn: u32) -> RoceFrame {
        let mut f = self.frame(true, 0x0A, psn);
        f.ext.reth = Some(Reth {
            va: 0x1000,
            r_key: 0x77,
            dma_len: 64,
        });
        f.payload = payload(64, psn as u8);
        f
    }

    pub(crate) fn aeth(&self, op: u8, psn: u32, syndrome: Syndrome, msn: u32) -> RoceFrame {
        let mut f = self.frame(false, op, psn);
        f.ext.aeth = Some(Aeth {
            syndrome: syndrome.to_byte(),
            msn,
        });
        f
    }

    pub(crate) fn ack(&self, psn: u32, msn: u32) -> Vec<u8> {
        self.aeth(0x11, psn, Syndrome::Ack { credits: 31 }, msn)
            .build()
    }
}

pub(crate) fn write(dir: &Path, name: &str, c: &Capture, expected: Value) {
    fs::write(dir.join(format!("{name}.pcap")), c.pcap()).expect("write capture");
    let text = serde_json::to_string_pretty(&expected).expect("json");
    fs::write(dir.join(format!("{name}.expected.json")), text + "\n").expect("write expectations");
}

/// A WRITE stream loses PSNs 103-104 before the capture point; the responder NAKs (PSN sequence error) at
/// 103, and the requester goes back to 103 and resends 103, 104, 105 before going on with 106. As
/// (time in µs, from the requester, packet).
fn gap_nak_go_back_n_packets() -> Vec<(u64, bool, RoceFrame)> {
    let mut p: Vec<(u64, bool, RoceFrame)> = [(0, 100), (100, 101), (200, 102)]
        .into_iter()
        .map(|(at, psn)| (at, true, AB.write(psn)))
        .collect();
    let ack = |psn, msn| AB.aeth(0x11, psn, Syndrome::Ack { credits: 31 }, msn);
    p.push((300, false, ack(102, 3)));
    p.push((400, true, AB.write(105)));
    let nak = AB.aeth(0x11, 103, Syndrome::Nak(NakCode::PsnSequenceError), 3);
    p.push((500, false, nak));
    for (at, psn) in [(700, 103), (800, 104), (900, 105), (1000, 106)] {
        p.push((at, true, AB.write(psn)));
    }
    p.push((1100, false, ack(106, 7)));
    p
}

/// The figures of [`gap_nak_go_back_n_packets`], requester `a`, responder `b`, worked out by hand.
fn gap_nak_go_back_n_expected(a: &str, b: &str) -> Value {
    json!({
        "capture": {"frames": 11, "roce_frames": 11, "malformed": 0, "icrc_bad": 0},
        "flows": [
            {"src": a, "dst": b, "dest_qp": 0x11, "role": "requester",
             "pair": [b, a, 0x22], "packets": 8,
             "psn": {"first": 100, "last": 106, "gap_events": 1, "missing": 2, "retransmitted": 3,
                     "duplicates": 1, "retransmission_episodes": 1},
             "retransmitted_bytes": 192,
             // The responder takes 100, 101, 102, the resent 103, 104, 105, then 106: seven 64-byte WRITEs.
             "messages": {"count": 7, "bytes": 448, "length_mismatches": 0},
             "latency_us": {"samples": 2, "min": 100.0, "max": 100.0},
             "counters": {"out_of_sequence": 1, "duplicate_request": 1, "packet_seq_err": 1}},
            {"src": b, "dst": a, "dest_qp": 0x22, "role": "responder",
             "pair": [a, b, 0x11], "packets": 3, "acks": 2,
             "naks": {"psn_seq_err": 1, "invalid_request": 0, "remote_access": 0, "remote_op": 0,
                      "invalid_rd_request": 0}}
        ],
        "event_counts": {"psn_gap": 1, "nak": 1, "go_back_n": 1},
        "events_text": ["PSN gap: 2 missing after PSN 102 (0x000066)",
                        "NAK (PSN sequence error) for PSN 103 (0x000067)",
                        "go-back-N: resent from PSN 103 (0x000067) (3 behind), 0.200 ms after the NAK"],
        "verdict": {"status": "fail", "problems": ["gaps", "naks", "retransmissions"]}
    })
}

fn gap_nak_go_back_n(dir: &Path) {
    let mut c = Capture::new(1);
    for (at, _, frame) in gap_nak_go_back_n_packets() {
        c.add_at(at, frame.build(), json!({}));
    }
    let expected = gap_nak_go_back_n_expected("10.0.0.1", "10.0.0.2");
    write(dir, "gap_nak_go_back_n", &c, expected);
}

/// [`gap_nak_go_back_n`] on native InfiniBand (LINKTYPE_INFINIBAND): requester LID 1, responder LID 2, no
/// GRH. Flows are keyed by the LIDs; every figure is its RoCE twin's.
fn gap_nak_go_back_n_infiniband(dir: &Path) {
    let mut c = Capture::new(parsers::lrh::LINKTYPE_INFINIBAND);
    for (at, from_a, frame) in gap_nak_go_back_n_packets() {
        let (slid, dlid) = if from_a { (1, 2) } else { (2, 1) };
        let lrh = Lrh {
            slid,
            dlid,
            ..Lrh::default()
        };
        c.add_at(at, frame.build_infiniband(lrh), json!({}));
    }
    let expected = gap_nak_go_back_n_expected("LID: 1", "LID: 2");
    write(dir, "gap_nak_go_back_n_infiniband", &c, expected);
}

/// An empty receive queue: 12 RNR NAKs (timer code 14 = 1.28 ms) for one SEND, each followed by a resend,
/// 15 ms apart, then the ACK. Events: RNR NAK events stop at the storm threshold (10), and a flow keeps the
/// first 8 events of a kind and its newest: RNR NAKs at frames 2-16 and 20 (the 10th), go-back-Ns at
/// frames 3-17 and 25 (the 12th resend).
fn rnr_storm(dir: &Path) {
    let mut c = Capture::new(1);
    let none = json!({});
    let send = |psn| {
        let mut f = AB.frame(true, 0x04, psn);
        f.payload = payload(32, 1);
        f.build()
    };
    c.add_at(0, send(10), none.clone());
    for i in 0..12u64 {
        c.add_at(
            1000 + i * 15_000,
            AB.aeth(0x11, 10, Syndrome::RnrNak { timer: 14 }, 0).build(),
            none.clone(),
        );
        c.add_at(2000 + i * 15_000, send(10), none.clone());
    }
    c.add_at(200_000, AB.ack(10, 1), none.clone());
    write(
        dir,
        "rnr_storm",
        &c,
        json!({
            "capture": {"frames": 26},
            "flows": [
                {"src": "10.0.0.1", "dst": "10.0.0.2", "dest_qp": 0x11, "packets": 13,
                 "psn": {"first": 10, "last": 10, "gap_events": 0, "missing": 0, "retransmitted": 12,
                         "duplicates": 12, "retransmission_episodes": 12},
                 "messages": {"count": 1},
                 "counters": {"rnr_nak_retry_err": 12}},
                {"src": "10.0.0.2", "dst": "10.0.0.1", "dest_qp": 0x22, "rnr_naks": 12,
                 "rnr_timers_ms": {"1.28": 12}, "acks": 1}
            ],
            "event_counts": {"rnr_nak": 9, "rnr_storm": 1, "go_back_n": 9},
            "events": [{"kind": "rnr_nak", "frame": 20, "detail": {"psn": 10}},
                       {"kind": "go_back_n", "frame": 25, "detail": {"from": 10}}],
            "events_text": ["RNR NAK storm: 12 in 165.000 ms (the receiver posts no receives: an empty receive queue)"],
            "verdict": {"status": "fail", "problems": ["rnr", "retransmissions"]}
        }),
    );
}

/// PSN wrap: QP 0x11 goes 0xfffffe, 0xffffff, 0, 1 (clean); QP 0x12 goes 0xfffffe then 1 (0xffffff and 0
/// missing).
fn psn_wrap(dir: &Path) {
    let mut c = Capture::new(1);
    let none = json!({});
    let other = Conn {
        qp_a: 0x23,
        qp_b: 0x12,
        ..AB
    };
    for (i, psn) in [0xFF_FFFE, 0xFF_FFFF, 0, 1].into_iter().enumerate() {
        c.add_at(i as u64 * 10, AB.write(psn).build(), none.clone());
    }
    c.add_at(50, AB.ack(1, 4), none.clone());
    c.add_at(60, other.write(0xFF_FFFE).build(), none.clone());
    c.add_at(70, other.write(1).build(), none.clone());
    write(
        dir,
        "psn_wrap",
        &c,
        json!({
            "flows": [
                {"src": "10.0.0.1", "dst": "10.0.0.2", "dest_qp": 0x11,
                 "psn": {"first": 0xFF_FFFE, "last": 1, "gap_events": 0, "missing": 0, "retransmitted": 0}},
                {"src": "10.0.0.1", "dst": "10.0.0.2", "dest_qp": 0x12,
                 "psn": {"first": 0xFF_FFFE, "last": 1, "gap_events": 1, "missing": 2, "retransmitted": 0}}
            ],
            "events_text": ["PSN gap: 2 missing after PSN 16777214 (0xfffffe)"],
            "verdict": {"status": "fail", "problems": ["gaps"]}
        }),
    );
}

/// A READ of 3000 bytes at PSN 200 takes PSNs 200-202 at MTU 1024 (responses FIRST 200, MIDDLE 201, LAST
/// 202), so the next request, at PSN 203, is in order.
fn read_psn(dir: &Path) {
    let mut c = Capture::new(1);
    let none = json!({});
    let mut read = AB.frame(true, 0x0C, 200);
    read.ext.reth = Some(Reth {
        va: 0x9000,
        r_key: 5,
        dma_len: 3000,
    });
    c.add_at(0, read.build(), none.clone());
    for (at, op, psn, len) in [
        (50, 0x0D, 200, 1024),
        (60, 0x0E, 201, 1024),
        (70, 0x0F, 202, 952),
    ] {
        let mut r = AB.frame(false, op, psn);
        if op != 0x0E {
            r.ext.aeth = Some(Aeth {
                syndrome: 0x1F,
                msn: 1,
            });
        }
        r.payload = payload(len, 3);
        c.add_at(at, r.build(), none.clone());
    }
    c.add_at(100, AB.write(203).build(), none.clone());
    c.add_at(150, AB.ack(203, 2), none.clone());
    write(
        dir,
        "read_psn",
        &c,
        json!({
            "config": {"mtu": 1024, "mtu_source": "inferred"},
            "flows": [
                {"src": "10.0.0.1", "dst": "10.0.0.2", "dest_qp": 0x11, "pair": ["10.0.0.2", "10.0.0.1", 0x22],
                 "psn": {"first": 200, "last": 203, "gap_events": 0, "missing": 0, "retransmitted": 0},
                 "read_latency_us": {"samples": 1, "min": 50.0, "max": 50.0},
                 "latency_us": {"samples": 1, "min": 50.0}},
                {"src": "10.0.0.2", "dst": "10.0.0.1", "dest_qp": 0x22, "read_responses": 3, "acks": 1,
                 "implied_naks": 0}
            ],
            "verdict": {"status": "pass", "problems": []}
        }),
    );
}

/// Two READs of 3000 bytes back to back (PSNs 300 and 303) before any response, as ib_read_bw posts them:
/// the path MTU is learnt only from the responses that follow (1024: FIRST, MIDDLE, LAST per READ), so the
/// second READ's PSN consumption (303-305) is settled at the end: the requester's last PSN is 305, as the
/// responses' is.
fn read_burst(dir: &Path) {
    let mut c = Capture::new(1);
    let none = json!({});
    for (at, psn) in [(0, 300), (10, 303)] {
        let mut read = AB.frame(true, 0x0C, psn);
        read.ext.reth = Some(Reth {
            va: 0x9000,
            r_key: 5,
            dma_len: 3000,
        });
        c.add_at(at, read.build(), none.clone());
    }
    for (at, op, psn, len, msn) in [
        (50, 0x0D, 300, 1024, 1),
        (60, 0x0E, 301, 1024, 1),
        (70, 0x0F, 302, 952, 1),
        (80, 0x0D, 303, 1024, 2),
        (90, 0x0E, 304, 1024, 2),
        (100, 0x0F, 305, 952, 2),
    ] {
        let mut r = AB.frame(false, op, psn);
        if op != 0x0E {
            r.ext.aeth = Some(Aeth {
                syndrome: 0x1F,
                msn,
            });
        }
        r.payload = payload(len, 4);
        c.add_at(at, r.build(), none.clone());
    }
    write(
        dir,
        "read_burst",
        &c,
        json!({
            "config": {"mtu": 1024, "mtu_source": "inferred"},
            "flows": [
                {"src": "10.0.0.1", "dst": "10.0.0.2", "dest_qp": 0x11, "packets": 2,
                 "psn": {"first": 300, "last": 305, "gap_events": 0, "missing": 0, "retransmitted": 0},
                 "read_latency_us": {"samples": 2, "min": 50.0, "max": 70.0}},
                {"src": "10.0.0.2", "dst": "10.0.0.1", "dest_qp": 0x22, "read_responses": 6,
                 "psn": {"first": 300, "last": 305}, "implied_naks": 0}
            ],
            "verdict": {"status": "pass", "problems": []}
        }),
    );
}

/// Requests 1-8 acknowledged by two coalesced ACKs (4 and 8) and a repeated ACK 8, 60 µs later (past the
/// 50 µs within which the same bytes from the same place are a mirror's second copy).
fn coalesced_acks(dir: &Path) {
    let mut c = Capture::new(1);
    let none = json!({});
    for psn in 1..=4 {
        c.add_at(u64::from(psn) * 10, AB.write(psn).build(), none.clone());
    }
    c.add_at(45, AB.ack(4, 4), none.clone());
    for psn in 5..=8 {
        c.add_at(
            50 + u64::from(psn) * 10,
            AB.write(psn).build(),
            none.clone(),
        );
    }
    c.add_at(140, AB.ack(8, 8), none.clone());
    c.add_at(200, AB.ack(8, 8), none.clone());
    write(
        dir,
        "coalesced_acks",
        &c,
        json!({
            "flows": [
                {"src": "10.0.0.1", "dst": "10.0.0.2", "dest_qp": 0x11,
                 "psn": {"gap_events": 0, "retransmitted": 0},
                 "latency_us": {"samples": 2, "min": 5.0, "max": 10.0}},
                {"src": "10.0.0.2", "dst": "10.0.0.1", "dest_qp": 0x22, "acks": 3, "duplicate_acks": 1}
            ],
            "verdict": {"status": "pass"}
        }),
    );
}

/// QP 0x11 on 10.0.0.2 is the destination of two connections, from 10.0.0.1 and from 10.0.0.3, whose
/// packets interleave: two separate flows, both in order.
fn same_qpn_two_hosts(dir: &Path) {
    let mut c = Capture::new(1);
    let none = json!({});
    let other = Conn {
        a: [10, 0, 0, 3],
        ..AB
    };
    for i in 0..6u32 {
        c.add_at(u64::from(i) * 20, AB.write(1000 + i).build(), none.clone());
        c.add_at(
            u64::from(i) * 20 + 10,
            other.write(5000 + i).build(),
            none.clone(),
        );
    }
    c.add_at(130, AB.ack(1005, 6), none.clone());
    c.add_at(140, other.ack(5005, 6), none.clone());
    write(
        dir,
        "same_qpn_two_hosts",
        &c,
        json!({
            "flows": [
                {"src": "10.0.0.1", "dst": "10.0.0.2", "dest_qp": 0x11, "packets": 6,
                 "pair": ["10.0.0.2", "10.0.0.1", 0x22],
                 "psn": {"first": 1000, "last": 1005, "gap_events": 0, "retransmitted": 0}},
                {"src": "10.0.0.3", "dst": "10.0.0.2", "dest_qp": 0x11, "packets": 6,
                 "pair": ["10.0.0.2", "10.0.0.3", 0x22],
                 "psn": {"first": 5000, "last": 5005, "gap_events": 0, "retransmitted": 0}},
                {"src": "10.0.0.2", "dst": "10.0.0.1", "dest_qp": 0x22, "acks": 1},
                {"src": "10.0.0.2", "dst": "10.0.0.3", "dest_qp": 0x22, "acks": 1}
            ],
            "verdict": {"status": "pass"}
        }),
    );
}

/// ECT(0) WRITEs with 5 CE marks: a CNP toward the sender's QP answers the first three within 30 µs; the
/// last two, 0.9 ms later, are never answered. One packet carries FECN.
fn ecn_cnp(dir: &Path) {
    let mut c = Capture::new(1);
    let none = json!({});
    let mut at = 0;
    for psn in 0..20u32 {
        let mut w = AB.write(psn);
        if let Net::V4(ip) = &mut w.net {
            ip.ecn = if [3, 4, 5, 12, 13].contains(&psn) {
                3
            } else {
                2
            };
        }
        w.bth.fecn = psn == 3;
        c.add_at(at, w.build(), none.clone());
        if psn == 5 {
            let mut cnp = AB.frame(false, 0x81, 0);
            cnp.bth.becn = true;
            c.add_at(at + 10, cnp.build(), none.clone());
        }
        at += if psn == 5 { 900 } else { 10 };
    }
    // The capture goes on 2 ms after the last CE mark.
    c.add_at(at + 2000, AB.ack(19, 20), none.clone());
    write(
        dir,
        "ecn_cnp",
        &c,
        json!({
            "flows": [
                {"src": "10.0.0.1", "dst": "10.0.0.2", "dest_qp": 0x11, "packets": 20,
                 "ecn": {"not_ect": 0, "ect0": 15, "ect1": 0, "ce": 5}, "ce_without_cnp": 2, "fecn": 1,
                 "counters": {"np_ecn_marked_roce_packets": 5, "np_cnp_sent": 1}},
                {"src": "10.0.0.2", "dst": "10.0.0.1", "dest_qp": 0x22, "cnp": 1, "becn": 1, "acks": 1}
            ],
            "event_counts": {"ce_without_cnp": 1},
            "verdict": {"status": "pass", "problems": ["ce", "cnp"]}
        }),
    );
}

/// A CNP answers the CE marks of the window before it, each on its own time: a mark at 10 µs gets no CNP;
/// a mark at 1009 µs gets one at 1014 µs (1004 µs after the first mark, 5 µs after its own).
fn ce_answer_window(dir: &Path) {
    let mut c = Capture::new(1);
    let none = json!({});
    let marked = |psn: u32| {
        let mut w = AB.write(psn);
        if let Net::V4(ip) = &mut w.net {
            ip.ecn = 3;
        }
        w.build()
    };
    c.add_at(0, AB.write(1).build(), none.clone());
    c.add_at(5, AB.ack(1, 1), none.clone());
    c.add_at(10, marked(2), none.clone());
    c.add_at(1009, marked(3), none.clone());
    let mut cnp = AB.frame(false, 0x81, 0);
    cnp.bth.becn = true;
    c.add_at(1014, cnp.build(), none.clone());
    c.add_at(3000, AB.ack(3, 3), none.clone());
    write(
        dir,
        "ce_answer_window",
        &c,
        json!({
            "flows": [{"src": "10.0.0.1", "dst": "10.0.0.2", "dest_qp": 0x11, "ecn": {"ce": 2}, "ce_without_cnp": 1}]
        }),
    );
}

/// PFC on priority 3: XOFF (65535 quanta) twice and an XON, while a flow tagged PCP 3 runs.
fn pfc(dir: &Path) {
    let mut c = Capture::new(1);
    let none = json!({});
    let src = [0x02, 0, 0, 0, 0, 0x09];
    let mut xoff = [0u16; 8];
    xoff[3] = 0xFFFF;
    for (i, psn) in (0..4u32).enumerate() {
        let mut w = AB.write(psn);
        w.vlans = vec![tag(0x8100, 3, false, 10)];
        c.add_at(i as u64 * 100, w.build(), none.clone());
    }
    c.add_at(
        50,
        mac_control_frame(
            src,
            &[],
            MacControl::Pfc {
                class_enable: 0x08,
                quanta: xoff,
            },
        ),
        none.clone(),
    );
    c.add_at(
        150,
        mac_control_frame(
            src,
            &[],
            MacControl::Pfc {
                class_enable: 0x08,
                quanta: xoff,
            },
        ),
        none.clone(),
    );
    c.add_at(
        250,
        mac_control_frame(
            src,
            &[],
            MacControl::Pfc {
                class_enable: 0x08,
                quanta: [0; 8],
            },
        ),
        none.clone(),
    );
    c.frames.sort_by_key(|f| f.0);
    // 131070 quanta asked for (2 x 65535). At 100 Gb/s 65535 quanta are 335.5392 µs: the XOFF at 50 µs
    // pauses until 385.5392, the one at 150 replaces it (until 485.5392), the XON at 250 ends it: paused
    // 200 µs without a break, of the 300 µs the capture lasts; by 100 µs bucket: 50-100, 100-200, 200-250.
    write(
        dir,
        "pfc",
        &c,
        json!({
            "capture": {"frames": 7, "roce_frames": 4, "other_frames": 3},
            "pfc": [{"priority": 3, "frames": 3, "xoff": 2, "xon": 1, "quanta": 131070, "pause_us": 200.0,
                     "longest_pause_us": 200.0, "paused_fraction": 200.0 / 300.0,
                     "paused_series": {"bucket_us": 100.0, "fraction": [0.5, 1.0, 0.5]}}],
            "flows": [{"src": "10.0.0.1", "dst": "10.0.0.2", "dest_qp": 0x11, "pcp": 3, "dscp": 26,
                       "paused_priority": true}],
            "event_counts": {"pause": 1},
            "verdict": {"status": "pass"}
        }),
    );
}

/// Every NAK code once, each answering one WRITE.
fn every_nak(dir: &Path) {
    let mut c = Capture::new(1);
    let none = json!({});
    let codes = [
        NakCode::PsnSequenceError,
        NakCode::InvalidRequest,
        NakCode::RemoteAccessError,
        NakCode::RemoteOperationalError,
        NakCode::InvalidRdRequest,
    ];
    for (i, code) in codes.into_iter().enumerate() {
        let psn = 40 + i as u32;
        c.add_at(i as u64 * 100, AB.write(psn).build(), none.clone());
        c.add_at(
            i as u64 * 100 + 50,
            AB.aeth(0x11, psn, Syndrome::Nak(code), i as u32).build(),
            none.clone(),
        );
    }
    write(
        dir,
        "every_nak",
        &c,
        json!({
            "flows": [
                {"src": "10.0.0.1", "dst": "10.0.0.2", "dest_qp": 0x11, "counters": {"packet_seq_err": 1}},
                {"src": "10.0.0.2", "dst": "10.0.0.1", "dest_qp": 0x22,
                 "naks": {"psn_seq_err": 1, "invalid_request": 1, "remote_access": 1, "remote_op": 1,
                          "invalid_rd_request": 1}}
            ],
            "event_counts": {"nak": 5},
            "verdict": {"status": "fail", "problems": ["naks"]}
        }),
    );
}

/// Damaged frames are counted, not analysed: PSN 2 has a bad ICRC (the responder drops it, so PSN 3 is a
/// gap of one); PSN 4 is cut by the snap length (headers intact: analysed, ICRC unverifiable); a fifth
/// frame ends inside its RETH (malformed).
fn damaged(dir: &Path) {
    let mut c = Capture::new(1);
    let none = json!({});
    c.add_at(0, AB.write(1).build(), none.clone());
    let mut bad = AB.write(2);
    bad.icrc = Some(0xDEAD_BEEF);
    c.add_at(10, bad.build(), none.clone());
    c.add_at(20, AB.write(3).build(), none.clone());
    let mut snapped = AB.write(4).build();
    let wire = snapped.len();
    snapped.truncate(70);
    c.frames.push((30, snapped, wire, none.clone()));
    let mut cut = AB.write(5).build();
    cut.truncate(14 + 20 + 8 + 12 + 6);
    let ip_len: u16 = 20 + 8 + 12 + 6;
    cut[16..18].copy_from_slice(&ip_len.to_be_bytes());
    cut[38..40].copy_from_slice(&(8u16 + 12 + 6).to_be_bytes());
    cut.resize(60, 0);
    c.add_at(40, cut, none.clone());
    write(
        dir,
        "damaged",
        &c,
        json!({
            "capture": {"frames": 5, "roce_frames": 5, "malformed": 1, "icrc_bad": 1, "icrc_unverifiable": 1},
            "flows": [
                {"src": "10.0.0.1", "dst": "10.0.0.2", "dest_qp": 0x11, "packets": 5, "icrc_bad": 1,
                 "icrc_unverifiable": 1, "malformed": 1,
                 "psn": {"first": 1, "last": 4, "gap_events": 1, "missing": 1},
                 "counters": {"rx_icrc_encapsulated": 1}}
            ],
            "event_counts": {"bad_icrc": 1, "malformed": 1, "psn_gap": 1},
            "verdict": {"status": "fail", "problems": ["gaps", "icrc", "malformed"]}
        }),
    );
}

pub fn write_all(dir: &Path) {
    gap_nak_go_back_n(dir);
    gap_nak_go_back_n_infiniband(dir);
    rnr_storm(dir);
    psn_wrap(dir);
    read_psn(dir);
    read_burst(dir);
    coalesced_acks(dir);
    same_qpn_two_hosts(dir);
    ecn_cnp(dir);
    pfc(dir);
    ce_answer_window(dir);
    every_nak(dir);
    damaged(dir);
}
