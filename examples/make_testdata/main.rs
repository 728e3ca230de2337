//! Writes the edge-case captures in testdata/edge/ and, beside each, the expected values of chosen
//! fields for every frame (`NAME.expected.jsonl`). The expected values are written here as literals
//! from the spec and from what each frame was built to be, never read back from the dissector.
//!
//! Run: `cargo run --example make_testdata` (rewrites testdata/edge/).
use std::fs;
use std::path::Path;

use parsers::aeth::{Aeth, NakCode, Syndrome};
use parsers::atomic::{AtomicAckEth, AtomicEth};
use parsers::builder::{Net, RoceFrame, mac_control_frame};
use parsers::deth::Deth;
use parsers::imm::{Ieth, ImmDt};
use parsers::mac_control::MacControl;
use parsers::rdeth::Rdeth;
use parsers::reth::Reth;
use parsers::savefile::{self, Resolution};
use parsers::vlan::VlanTag;
use parsers::xrceth::Xrceth;
use serde_json::{Value, json};

mod analysis;
mod congestion;
mod connections;
mod diagnosis;
mod ecmp;
mod life;
mod retries;

/// 2026-01-01T00:00:00Z in microseconds: the captures' time origin.
const EPOCH_US: u64 = 1_767_225_600 * 1_000_000;

/// A pcap (microsecond timestamps) being written, with the expected fields of each frame.
struct Capture {
    linktype: u16,
    /// (time in µs since EPOCH_US, captured bytes, length on the wire, expected fields)
    frames: Vec<(u64, Vec<u8>, usize, Value)>,
}

impl Capture {
    fn new(linktype: u16) -> Self {
        Capture {
            linktype,
            frames: Vec::new(),
        }
    }

    /// A frame captured whole, 1 ms after the previous one.
    fn add(&mut self, data: Vec<u8>, expect: Value) {
        let at = self.frames.len() as u64 * 1000;
        self.add_at(at, data, expect);
    }

    /// A frame captured whole at `at_us` microseconds.
    fn add_at(&mut self, at_us: u64, data: Vec<u8>, expect: Value) {
        let len = data.len();
        self.frames.push((at_us, data, len, expect));
    }

    /// A frame of which only `caplen` bytes were captured.
    fn add_snapped(&mut self, mut data: Vec<u8>, caplen: usize, expect: Value) {
        let at = self.frames.len() as u64 * 1000;
        let len = data.len();
        data.truncate(caplen);
        self.frames.push((at, data, len, expect));
    }

    fn pcap(&self) -> Vec<u8> {
        let mut out = Vec::new();
        savefile::pcap_file_header(&mut out, Resolution::Micros, 65535, self.linktype);
        for (at, data, orig_len, _) in &self.frames {
            savefile::pcap_record(
                &mut out,
                Resolution::Micros,
                EPOCH_US + at,
                data,
                *orig_len as u32,
            );
        }
        out
    }

    fn write(&self, dir: &Path, name: &str) {
        let mut expected = String::new();
        for (i, (_, _, _, expect)) in self.frames.iter().enumerate() {
            let mut e = expect.clone();
            e["frame.number"] = json!(i + 1);
            expected.push_str(&e.to_string());
            expected.push('\n');
        }
        fs::write(dir.join(format!("{name}.pcap")), self.pcap()).expect("write capture");
        fs::write(dir.join(format!("{name}.expected.jsonl")), expected)
            .expect("write expectations");
    }
}

fn payload(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(7).wrapping_add(seed))
        .collect()
}

fn v4(f: &mut RoceFrame) -> &mut parsers::ipv4::Ipv4Header {
    match &mut f.net {
        Net::V4(h) => h,
        _ => unreachable!("built as IPv4"),
    }
}

fn tag(tpid: u16, pcp: u8, dei: bool, vid: u16) -> VlanTag {
    VlanTag {
        tpid,
        pcp,
        dei,
        vid,
        ethertype: 0,
    }
}

fn vlan(dir: &Path) {
    let mut c = Capture::new(1);
    let mut f = RoceFrame::new(0x04);
    f.vlans = vec![tag(0x8100, 3, false, 100)];
    v4(&mut f).ecn = 2;
    f.payload = payload(64, 1);
    c.add(
        f.build(),
        json!({"vlan.id": 100, "vlan.priority": 3, "vlan.dei": false, "ip.dsfield.dscp": 26, "ip.dsfield.ecn": 2,
               "infiniband.bth.opcode": 4, "rocescope.opcode_name": "RC_SEND_ONLY", "rocescope.icrc_status": "valid"}),
    );
    let mut f = RoceFrame::new(0x0A);
    f.vlans = vec![tag(0x88A8, 5, true, 200), tag(0x8100, 3, false, 100)];
    f.ext.reth = Some(Reth {
        va: 0x7f00_0000_1000,
        r_key: 0x1234,
        dma_len: 32,
    });
    f.payload = payload(32, 2);
    f.bth.psn = 77;
    c.add(
        f.build(),
        json!({"ieee8021ad.id": 200, "ieee8021ad.priority": 5, "ieee8021ad.dei": true,
               "vlan.id": 100, "vlan.priority": 3, "vlan.dei": false,
               "infiniband.bth.psn": 77, "infiniband.reth.dmalen": 32, "infiniband.reth.r_key": 0x1234,
               "infiniband.reth.va": 0x7f00_0000_1000u64, "rocescope.icrc_status": "valid"}),
    );
    c.write(dir, "vlan");
}

fn ipv6(dir: &Path) {
    let mut c = Capture::new(1);
    let a: [u8; 16] = [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
    let b: [u8; 16] = [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];
    let mut f = RoceFrame::new(0x04).ipv6(a, b);
    if let Net::V6(h) = &mut f.net {
        h.ecn = 3;
        h.flow_label = 0xABCDE;
    }
    f.payload = payload(100, 3);
    f.bth.psn = 0x10;
    f.bth.ack_req = true;
    c.add(
        f.build(),
        json!({"ipv6.src": "fd00::1", "ipv6.dst": "fd00::2", "ipv6.tclass.dscp": 26, "ipv6.tclass.ecn": 3,
               "ipv6.flow": 0xABCDE, "infiniband.bth.psn": 16, "infiniband.bth.a": true,
               "rocescope.payload_len": 100, "rocescope.pad": 0, "rocescope.icrc_status": "valid"}),
    );
    let mut ack = RoceFrame::new(0x11).ipv6(b, a);
    ack.bth.dest_qp = 0x22;
    ack.bth.psn = 0x10;
    ack.ext.aeth = Some(Aeth {
        syndrome: Syndrome::Ack { credits: 31 }.to_byte(),
        msn: 1,
    });
    c.add(
        ack.build(),
        json!({"ipv6.src": "fd00::2", "infiniband.bth.destqp": 0x22, "infiniband.aeth.syndrome": 31,
               "infiniband.aeth.msn": 1, "rocescope.opcode_name": "RC_ACKNOWLEDGE", "rocescope.icrc_status": "valid"}),
    );
    c.write(dir, "ipv6");
}

fn psn_wrap(dir: &Path) {
    let mut c = Capture::new(1);
    let ops = [
        (0x06, 0xFF_FFFE, 1024),
        (0x07, 0xFF_FFFF, 1024),
        (0x08, 0x00_0000, 3),
    ];
    for (op, psn, len) in ops {
        let mut f = RoceFrame::new(op);
        f.bth.psn = psn;
        f.bth.ack_req = op == 0x08;
        if op == 0x06 {
            f.ext.reth = Some(Reth {
                va: 0x1000,
                r_key: 7,
                dma_len: 2051,
            });
        }
        f.payload = payload(len, op);
        let pad = if len == 3 { 1 } else { 0 };
        c.add(
            f.build(),
            json!({"infiniband.bth.psn": psn, "infiniband.bth.opcode": op, "rocescope.payload_len": len,
                   "infiniband.bth.padcnt": pad, "rocescope.icrc_status": "valid"}),
        );
    }
    let mut ack = RoceFrame::new(0x11);
    ack.bth.psn = 0;
    ack.ext.aeth = Some(Aeth {
        syndrome: 0x1F,
        msn: 1,
    });
    c.add(
        ack.build(),
        json!({"infiniband.bth.psn": 0, "infiniband.aeth.msn": 1}),
    );
    c.write(dir, "psn_wrap");
}

fn pfc(dir: &Path) {
    let mut c = Capture::new(1);
    let src = [0x02, 0, 0, 0, 0, 0x09];
    let mut q = [0u16; 8];
    q[3] = 0xFFFF;
    c.add(
        mac_control_frame(src, &[], MacControl::Pfc { class_enable: 0x08, quanta: q }),
        json!({"macc.opcode": 0x0101, "macc.cbfc.enbv": 8, "macc.cbfc.pause_time.c3": 65535, "rocescope.pfc.xoff": 8}),
    );
    c.add(
        mac_control_frame(src, &[], MacControl::Pfc { class_enable: 0x08, quanta: [0; 8] }),
        json!({"macc.opcode": 0x0101, "macc.cbfc.enbv": 8, "macc.cbfc.pause_time.c3": 0, "rocescope.pfc.xoff": 0}),
    );
    let q = [0, 0, 0, 100, 200, 0, 0, 0];
    c.add(
        mac_control_frame(src, &[], MacControl::Pfc { class_enable: 0x18, quanta: q }),
        json!({"macc.cbfc.enbv": 0x18, "macc.cbfc.pause_time.c3": 100, "macc.cbfc.pause_time.c4": 200,
               "rocescope.pfc.xoff": 0x18}),
    );
    c.add(
        mac_control_frame(src, &[], MacControl::Pause { quanta: 100 }),
        json!({"macc.opcode": 1, "macc.pause_time": 100, "eth.dst": "01:80:c2:00:00:01"}),
    );
    c.write(dir, "pfc");
}

fn cnp(dir: &Path) {
    let mut c = Capture::new(1);
    let mut w = RoceFrame::new(0x0A);
    v4(&mut w).ecn = 3;
    w.bth.fecn = true;
    w.bth.psn = 500;
    w.ext.reth = Some(Reth {
        va: 0x2000,
        r_key: 9,
        dma_len: 256,
    });
    w.payload = payload(256, 5);
    c.add(
        w.build(),
        json!({"ip.dsfield.ecn": 3, "rocescope.bth.fecn": true, "rocescope.bth.becn": false,
               "rocescope.icrc_status": "valid"}),
    );
    let mut n = RoceFrame::new(0x81);
    let ip = v4(&mut n);
    ip.src = [10, 0, 0, 2];
    ip.dst = [10, 0, 0, 1];
    ip.dscp = 48;
    n.bth.becn = true;
    n.bth.dest_qp = 0x11;
    c.add(
        n.build(),
        json!({"infiniband.bth.opcode": 129, "rocescope.opcode_name": "CNP", "rocescope.bth.becn": true,
               "infiniband.bth.p_key": 0xFFFF, "ip.dsfield.dscp": 48, "infiniband.bth.destqp": 0x11,
               "rocescope.payload_len": 0, "rocescope.icrc_status": "valid"}),
    );
    c.write(dir, "cnp");
}

fn naks(dir: &Path) {
    let mut c = Capture::new(1);
    let mut add = |syndrome: u8, psn: u32, expect: Value| {
        let mut f = RoceFrame::new(0x11);
        f.bth.psn = psn;
        f.ext.aeth = Some(Aeth {
            syndrome,
            msn: psn & 0xFF,
        });
        let mut e = expect;
        e["infiniband.aeth.syndrome"] = json!(syndrome);
        e["infiniband.bth.psn"] = json!(psn);
        c.add(f.build(), e);
    };
    add(0x00, 1, json!({"infiniband.aeth.syndrome.credit_count": 0}));
    add(
        0x21,
        2,
        json!({"infiniband.aeth.syndrome.timer": 1, "rocescope.aeth.rnr_timer_us": 10}),
    );
    add(
        0x2E,
        3,
        json!({"infiniband.aeth.syndrome.timer": 14, "rocescope.aeth.rnr_timer_us": 1280}),
    );
    add(
        0x20,
        4,
        json!({"infiniband.aeth.syndrome.timer": 0, "rocescope.aeth.rnr_timer_us": 655360}),
    );
    for code in 0..=4u8 {
        add(
            0x60 | code,
            10 + u32::from(code),
            json!({"infiniband.aeth.syndrome.error_code": code}),
        );
    }
    let _ = NakCode::PsnSequenceError;
    let mut aa = RoceFrame::new(0x12);
    aa.ext.aeth = Some(Aeth {
        syndrome: 0x1F,
        msn: 9,
    });
    aa.ext.atomic_ack_eth = Some(AtomicAckEth {
        orig_rem_data: 0x0102_0304_0506_0708,
    });
    c.add(
        aa.build(),
        json!({"infiniband.atomicacketh.origremdt": 0x0102_0304_0506_0708u64}),
    );
    let mut rr = RoceFrame::new(0x10);
    rr.ext.aeth = Some(Aeth {
        syndrome: 0x1F,
        msn: 10,
    });
    rr.payload = payload(13, 9);
    c.add(
        rr.build(),
        json!({"rocescope.payload_len": 13, "infiniband.bth.padcnt": 3, "infiniband.aeth.msn": 10}),
    );
    c.write(dir, "naks");
}

/// One frame per opcode of every transport, with recognisable header values.
fn opcodes(dir: &Path) {
    let mut c = Capture::new(1);
    for op in 0..=255u8 {
        let o = parsers::opcode::Opcode(op);
        if !o.is_known() {
            continue;
        }
        let mut f = RoceFrame::new(op);
        f.bth.psn = 0x100 + u32::from(op);
        f.bth.dest_qp = 0x300 + u32::from(op);
        f.ext.rdeth = Some(Rdeth {
            reserved: 0,
            ee_context: 0xEE,
        });
        f.ext.deth = Some(Deth {
            q_key: 0x1111_1111,
            reserved: 0,
            src_qp: 0x55,
        });
        f.ext.xrceth = Some(Xrceth {
            reserved: 0,
            xrc_srq: 0x66,
        });
        f.ext.reth = Some(Reth {
            va: 0xAAAA_0000,
            r_key: 0xBB,
            dma_len: 8,
        });
        f.ext.atomic_eth = Some(AtomicEth {
            va: 0xCC00,
            r_key: 0xCD,
            swap_add: 5,
            compare: 6,
        });
        f.ext.aeth = Some(Aeth {
            syndrome: 0x1F,
            msn: 3,
        });
        f.ext.atomic_ack_eth = Some(AtomicAckEth { orig_rem_data: 42 });
        f.ext.immdt = Some(ImmDt(0xDEAD_BEEF));
        f.ext.ieth = Some(Ieth { r_key: 0xFEED });
        if o.has_payload() {
            f.payload = payload(8, op);
        }
        c.add(
            f.build(),
            json!({"infiniband.bth.opcode": op, "rocescope.opcode_name": o.name(),
                   "infiniband.bth.psn": 0x100 + u32::from(op), "rocescope.icrc_status": "valid"}),
        );
    }
    c.write(dir, "opcodes");
}

fn damaged(dir: &Path) {
    let mut c = Capture::new(1);
    let mut big = RoceFrame::new(0x0A);
    big.ext.reth = Some(Reth {
        va: 0x3000,
        r_key: 3,
        dma_len: 1024,
    });
    big.payload = payload(1024, 4);
    let full = big.build();
    // 14 + 20 + 8 + 12 + 16 + 1024 + 4 = 1098 bytes on the wire.
    assert_eq!(full.len(), 1098);
    c.add_snapped(
        full.clone(),
        128,
        json!({"frame.len": 1098, "frame.cap_len": 128, "infiniband.reth.dmalen": 1024,
               "rocescope.payload_len": 1024, "rocescope.icrc_status": "unverifiable"}),
    );
    c.add_snapped(
        full.clone(),
        50,
        json!({"frame.len": 1098, "frame.cap_len": 50, "udp.length": 1064, "rocescope.malformed_layer": "BTH",
               "rocescope.malformed": "BTH cut by the capture snaplen: needs 12 bytes, 8 captured"}),
    );
    // The same 50 bytes as a whole frame: the IP total length (1084) overruns it.
    let mut short = full.clone();
    short.truncate(50);
    c.add(
        short,
        json!({"frame.len": 50, "rocescope.malformed_layer": "IPv4",
               "rocescope.malformed": "IPv4 length 1084 exceeds the 36 bytes in the frame"}),
    );
    // PadCnt 3 on a SEND_ONLY with 2 payload bytes.
    let mut pad = RoceFrame::new(0x04);
    pad.payload = vec![1, 2];
    pad.pad = Some(3);
    // Built with 3 pad bytes: 2 + 3 = 5 bytes before the ICRC, so the pad (3) is not beyond the 5.
    // Shrink instead: make the UDP datagram hold only 2 bytes of payload+pad.
    let mut bytes = pad.build();
    let drop = 3;
    bytes.drain(bytes.len() - 4 - drop..bytes.len() - 4);
    // Fix the IP total length (0x10-0x11) and UDP length (0x26-0x27) for the shorter datagram.
    let ip_len = u16::from_be_bytes([bytes[16], bytes[17]]) - drop as u16;
    bytes[16..18].copy_from_slice(&ip_len.to_be_bytes());
    let udp_len = u16::from_be_bytes([bytes[38], bytes[39]]) - drop as u16;
    bytes[38..40].copy_from_slice(&udp_len.to_be_bytes());
    c.add(
        bytes,
        json!({"infiniband.bth.padcnt": 3, "rocescope.malformed_layer": "BTH",
               "rocescope.malformed": "BTH PadCnt 3 is larger than the 2-byte payload"}),
    );
    // A READ REQUEST whose UDP length ends inside the RETH.
    let mut rr = RoceFrame::new(0x0C);
    rr.ext.reth = Some(Reth {
        va: 1,
        r_key: 2,
        dma_len: 4096,
    });
    let mut bytes = rr.build();
    bytes.truncate(14 + 20 + 8 + 12 + 6);
    let ip_len: u16 = 20 + 8 + 12 + 6;
    bytes[16..18].copy_from_slice(&ip_len.to_be_bytes());
    bytes[38..40].copy_from_slice(&(8u16 + 12 + 6).to_be_bytes());
    bytes.resize(60, 0);
    c.add(
        bytes,
        json!({"infiniband.bth.opcode": 12, "rocescope.malformed_layer": "RETH",
               "rocescope.malformed": "RETH truncated: needs 16 bytes, 6 present"}),
    );
    c.write(dir, "damaged");
}

fn bad_icrc(dir: &Path) {
    let mut c = Capture::new(1);
    let mut f = RoceFrame::new(0x04);
    f.payload = payload(16, 6);
    let good = f.build();
    let mut flipped = good.clone();
    flipped[14 + 20 + 8 + 12 + 5] ^= 0x10;
    c.add(good, json!({"rocescope.icrc_status": "valid"}));
    c.add(flipped, json!({"rocescope.icrc_status": "bad"}));
    let mut wrong = f.clone();
    wrong.icrc = Some(0x1234_5678);
    c.add(
        wrong.build(),
        json!({"rocescope.icrc_status": "bad", "infiniband.invariant.crc": 0x1234_5678}),
    );
    // Masked fields changed after the ICRC was computed: still valid.
    let mut masked = f.build();
    masked[15] = (26 << 2) | 3; // ECN -> CE
    masked[22] = 17; // TTL
    masked[14 + 20 + 8 + 4] = 0xC0; // FECN + BECN
    c.add(
        masked,
        json!({"rocescope.icrc_status": "valid", "ip.dsfield.ecn": 3, "ip.ttl": 17}),
    );
    c.write(dir, "bad_icrc");
}

fn rocev1(dir: &Path) {
    let mut c = Capture::new(1);
    let s: [u8; 16] = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xfe, 0, 0, 1];
    let d: [u8; 16] = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xfe, 0, 0, 2];
    let mut f = RoceFrame::new(0x04).rocev1(s, d);
    f.payload = payload(40, 8);
    c.add(
        f.build(),
        json!({"eth.type": 0x8915, "infiniband.grh.sgid": "fe80::ff:fe00:1", "infiniband.grh.nxthdr": 0x1B,
               "infiniband.grh.paylen": 56, "rocescope.payload_len": 40, "rocescope.icrc_status": "valid"}),
    );
    c.write(dir, "rocev1");
}

/// pcapng with three interfaces of three link types (Ethernet, Linux SLL, Linux SLL2), as a capture merged
/// from `-i eth0` and `-i any` sessions looks, with nanosecond timestamps on the SLL2 interface.
fn multi_interface(dir: &Path) {
    let mut out = Vec::new();
    savefile::section_header_block(&mut out);
    for (linktype, resolution) in [(1u16, None), (113, None), (276, Some(Resolution::Nanos))] {
        savefile::interface_description_block(&mut out, linktype, 65535, None, resolution);
    }
    let mut expected = String::new();
    // 2026-01-01T00:00:00Z; units of the interface's resolution (microseconds, or nanoseconds for SLL2).
    let base_us = 1_767_225_600u64 * 1_000_000;
    let mut f = RoceFrame::new(0x04);
    f.payload = payload(24, 10);
    let eth = f.build();
    let ip_packet = &eth[14..14 + 20 + 8 + 12 + 24 + 4];
    let mut sll = Vec::new();
    parsers::sll::SllHeader {
        version: 1,
        packet_type: 4,
        arphrd_type: 1,
        addr_len: 6,
        addr: [2, 0, 0, 0, 0, 1, 0, 0],
        ifindex: 0,
        protocol: 0x0800,
    }
    .emit(&mut sll);
    sll.extend_from_slice(ip_packet);
    let mut sll2 = Vec::new();
    parsers::sll::SllHeader {
        version: 2,
        packet_type: 0,
        arphrd_type: 1,
        addr_len: 6,
        addr: [2, 0, 0, 0, 0, 2, 0, 0],
        ifindex: 7,
        protocol: 0x0800,
    }
    .emit(&mut sll2);
    sll2.extend_from_slice(ip_packet);
    let packets = [
        (
            0u32,
            base_us + 1,
            eth.clone(),
            json!({"eth.type": 0x0800, "frame.interface_id": 0}),
        ),
        (
            1,
            base_us + 2,
            sll,
            json!({"sll.pkttype": 4, "sll.etype": 0x0800, "sll.src.eth": "02:00:00:00:00:01",
            "frame.interface_id": 1}),
        ),
        (
            2,
            (base_us + 3) * 1000 + 5,
            sll2,
            json!({"sll.pkttype": 0, "sll.ifindex": 7, "frame.interface_id": 2}),
        ),
    ];
    for (i, (iface, ts, data, expect)) in packets.into_iter().enumerate() {
        savefile::enhanced_packet_block(&mut out, iface, ts, &data, data.len() as u32);
        let mut e = expect;
        e["frame.number"] = json!(i + 1);
        e["infiniband.bth.opcode"] = json!(4);
        e["rocescope.payload_len"] = json!(24);
        e["rocescope.icrc_status"] = json!("valid");
        expected.push_str(&e.to_string());
        expected.push('\n');
    }
    fs::write(dir.join("multi_interface.pcapng"), out).expect("write capture");
    fs::write(dir.join("multi_interface.expected.jsonl"), expected).expect("write expectations");
}

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/edge");
    fs::create_dir_all(&dir).expect("create testdata/edge");
    vlan(&dir);
    ipv6(&dir);
    psn_wrap(&dir);
    pfc(&dir);
    cnp(&dir);
    naks(&dir);
    opcodes(&dir);
    damaged(&dir);
    bad_icrc(&dir);
    rocev1(&dir);
    multi_interface(&dir);
    println!("wrote {}", dir.display());
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/analysis");
    fs::create_dir_all(&dir).expect("create testdata/analysis");
    analysis::write_all(&dir);
    congestion::write_all(&dir);
    ecmp::write_all(&dir);
    life::write_all(&dir);
    println!("wrote {}", dir.display());
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/diagnosis");
    fs::create_dir_all(&dir).expect("create testdata/diagnosis");
    diagnosis::write_all(&dir);
    println!("wrote {}", dir.display());
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/retries");
    fs::create_dir_all(&dir).expect("create testdata/retries");
    retries::write_all(&dir);
    println!("wrote {}", dir.display());
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/connections");
    fs::create_dir_all(&dir).expect("create testdata/connections");
    connections::write_all(&dir);
    println!("wrote {}", dir.display());
}
