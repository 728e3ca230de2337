//! Captures of host pairs whose QPs an ECMP group can or cannot spread (testdata/analysis/): the UDP source
//! ports of their QPs, each beside the figures worked out by hand (`NAME.expected.json`, as in
//! analysis.rs). The member each hash picks was computed apart from rocescope, with Python's
//! `binascii.crc_hqx(key, 0xFFFF)` (CRC-16/CCITT-FALSE), `zlib.crc32(key)` and a fold of the 16-bit words,
//! over key = source address, destination address, 17, source port, 4791 (network byte order), modulo the
//! group's size.
use std::path::Path;

use parsers::aeth::Syndrome;
use parsers::builder::RoceFrame;
use serde_json::{Value, json};

use super::Capture;
use super::analysis::{Conn, write};

/// On the wire: Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 + RETH 16 + 64 payload + ICRC 4.
const WRITE_BYTES: u64 = 138;
/// Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 + AETH 4 + ICRC 4.
const ACK_BYTES: u64 = 62;

/// QP `i` of 10.0.0.1 (0x201 + i) to QP 0x101 + i of 10.0.0.2.
fn qp(i: u32) -> Conn {
    Conn {
        a: [10, 0, 0, 1],
        b: [10, 0, 0, 2],
        qp_a: 0x201 + i,
        qp_b: 0x101 + i,
    }
}

fn on_port(mut f: RoceFrame, port: u16) -> Vec<u8> {
    f.udp_src = port;
    f.build()
}

/// One WRITE_ONLY of PSN 0 per QP, at `100 i` µs from `a_ports[i]`, and its ACK 10 µs later from
/// `b_ports[i]`: frames 2i+1 and 2i+2.
fn qps(a_ports: &[u16], b_ports: &[u16]) -> Capture {
    let mut c = Capture::new(1);
    for (i, (pa, pb)) in a_ports.iter().zip(b_ports).enumerate() {
        let conn = qp(i as u32);
        let at = 100 * i as u64;
        c.add_at(at, on_port(conn.write(0), *pa), json!({}));
        let ack = conn.aeth(0x11, 0, Syndrome::Ack { credits: 31 }, 1);
        c.add_at(at + 10, on_port(ack, *pb), json!({}));
    }
    c
}

/// Every QP's WRITE and ACK flow: one packet each, nothing lost.
fn flows(qps: u32) -> Value {
    let clean = json!({"gap_events": 0, "missing": 0, "retransmitted": 0});
    (0..qps)
        .flat_map(|i| {
            let c = qp(i);
            [
                json!({"src": "10.0.0.1", "dst": "10.0.0.2", "dest_qp": c.qp_b, "role": "requester",
                    "packets": 1, "bytes": WRITE_BYTES, "psn": clean}),
                json!({"src": "10.0.0.2", "dst": "10.0.0.1", "dest_qp": c.qp_a, "role": "responder",
                    "packets": 1, "bytes": ACK_BYTES, "acks": 1}),
            ]
        })
        .collect()
}

/// `bytes` on member `m` of `n`.
fn on(n: usize, m: usize, bytes: u64) -> Vec<u64> {
    let mut v = vec![0; n];
    v[m] = bytes;
    v
}

fn pair(src: &str, dst: &str, qps: u32, ports: &[u16], bytes: u64, load: Value) -> Value {
    json!({"src": src, "dst": dst, "qps": qps, "source_ports": ports.len(), "ports": ports,
        "bytes": bytes, "more_ports": false, "load": load})
}

/// Eight QPs from 10.0.0.1 to 10.0.0.2, every packet of both directions from UDP port 49152 (one process
/// binding one port for all, ucx #11004). Each direction is one 5-tuple: every hash puts it on one member
/// (crc16 member 7, crc32 7, xor 5 toward 10.0.0.2; 0, 2, 5 back), imbalance 8. `low_entropy` in each
/// direction at its fourth QP's first packet (4 QPs on 1 port: frames 7 and 8).
fn one_port(dir: &Path) {
    let c = qps(&[49152; 8], &[49152; 8]);
    let (a, b) = ("10.0.0.1", "10.0.0.2");
    let imbalance = json!({"crc16": 8.0, "crc32": 8.0, "xor": 8.0});
    let detail = |src: &str, dst: &str| {
        json!({"src": src, "dst": dst, "qps": 8, "source_ports": 1, "members": 8,
            "imbalance": imbalance})
    };
    let expected = json!({
        "ecmp": {"members": 8, "hashes": ["crc16", "crc32", "xor"], "more_pairs": false, "pairs": [
            pair(a, b, 8, &[49152], 8 * WRITE_BYTES, json!({"crc16": on(8, 7, 8 * WRITE_BYTES),
                "crc32": on(8, 7, 8 * WRITE_BYTES), "xor": on(8, 5, 8 * WRITE_BYTES)})),
            pair(b, a, 8, &[49152], 8 * ACK_BYTES, json!({"crc16": on(8, 0, 8 * ACK_BYTES),
                "crc32": on(8, 2, 8 * ACK_BYTES), "xor": on(8, 5, 8 * ACK_BYTES)})),
        ]},
        "event_counts": {"low_entropy": 2},
        "events": [
            {"kind": "low_entropy", "frame": 7, "detail": detail(a, b)},
            {"kind": "low_entropy", "frame": 8, "detail": detail(b, a)},
        ],
        "flows": flows(8),
        "diagnosis": {},
        "verdict": {"status": "pass"},
    });
    write(dir, "ecmp_one_port", &c, expected);
}

/// The same eight QPs on ports 49153-49160, each QP's ACKs from its own port (as rxe answers: the port
/// hashes both QP numbers). No `low_entropy`. With `--ecmp-members 4`: crc32 and xor put two QPs on each
/// member; crc16 (linear, the ports differing in their low bits only) puts 7 on member 3 and one on 2
/// toward 10.0.0.2 (imbalance 966 × 4 / 1104 = 3.5), 7 on member 0 and one on 1 back.
fn eight_ports(dir: &Path) {
    let ports: Vec<u16> = (49153..=49160).collect();
    let c = qps(&ports, &ports);
    let (a, b) = ("10.0.0.1", "10.0.0.2");
    let (w, k) = (WRITE_BYTES, ACK_BYTES);
    let expected = json!({
        "args": ["--ecmp-members", "4"],
        "ecmp": {"members": 4, "pairs": [
            {"src": a, "dst": b, "qps": 8, "source_ports": 8, "ports": ports,
                "bytes": 8 * w,
                "load": {"crc16": [0, 0, w, 7 * w], "crc32": vec![2 * w; 4], "xor": vec![2 * w; 4]},
                "imbalance": {"crc16": 3.5, "crc32": 1.0, "xor": 1.0}},
            {"src": b, "dst": a, "qps": 8, "source_ports": 8, "bytes": 8 * k,
                "load": {"crc16": [7 * k, k, 0, 0], "crc32": vec![2 * k; 4], "xor": vec![2 * k; 4]},
                "imbalance": {"crc16": 3.5, "crc32": 1.0, "xor": 1.0}},
        ]},
        "event_counts": {"low_entropy": 0},
        "flows": flows(8),
        "diagnosis": {},
        "verdict": {"status": "pass"},
    });
    write(dir, "ecmp_eight_ports", &c, expected);
}

/// Four QPs toward 10.0.0.2 on two ports (49152 twice, 49153 twice): at the limit, `low_entropy` at the
/// fourth QP's WRITE (frame 7); crc16 puts all four on member 7 (imbalance 4: four QPs could fill four
/// members), crc32 two on 0 and two on 7, xor two on 4 and two on 5 (2). Their ACKs come from four ports
/// (50000-50003): that direction spreads, no event.
fn four_qps_two_ports(dir: &Path) {
    let c = qps(&[49152, 49152, 49153, 49153], &[50000, 50001, 50002, 50003]);
    let (a, b) = ("10.0.0.1", "10.0.0.2");
    let (w, k) = (WRITE_BYTES, ACK_BYTES);
    let mut crc32 = vec![0; 8];
    (crc32[0], crc32[7]) = (2 * w, 2 * w);
    let mut xor = vec![0; 8];
    (xor[4], xor[5]) = (2 * w, 2 * w);
    let expected = json!({
        "ecmp": {"members": 8, "pairs": [
            {"src": a, "dst": b, "qps": 4, "source_ports": 2, "ports": [49152, 49153],
                "load": {"crc16": on(8, 7, 4 * w), "crc32": crc32, "xor": xor},
                "imbalance": {"crc16": 4.0, "crc32": 2.0, "xor": 2.0}},
            {"src": b, "dst": a, "qps": 4, "source_ports": 4, "ports": [50000, 50001, 50002, 50003],
                "load": {"crc16": on(8, 2, 4 * k), "crc32": [0, 0, k, k, k, k, 0, 0],
                    "xor": [0, 0, 0, 0, k, k, k, k]},
                "imbalance": {"crc16": 4.0, "crc32": 1.0, "xor": 1.0}},
        ]},
        "event_counts": {"low_entropy": 1},
        "events": [{"kind": "low_entropy", "frame": 7, "detail": {"src": a, "dst": b, "qps": 4,
            "source_ports": 2, "members": 8, "imbalance": {"crc16": 4.0, "crc32": 2.0, "xor": 2.0}}}],
        "flows": flows(4),
        "diagnosis": {},
        "verdict": {"status": "pass"},
    });
    write(dir, "ecmp_four_qps_two_ports", &c, expected);
}

pub fn write_all(dir: &Path) {
    one_port(dir);
    eight_ports(dir);
    four_qps_two_ports(dir);
}
