//! Native InfiniBand packets through `parse_frame`: LINKTYPE_INFINIBAND (247), ERF records of type 21
//! (link type 197) and IP over InfiniBand (242). Fixed frames are infiniband.pcap's (Wireshark wiki; field
//! values as tshark 4.0 shows them), others built with the builder; the ICRC and VCRC expected are
//! computed here again from IBTA Vol. 1 §7.8 (common::crc32, and a bitwise CRC-16 below).
mod common;

use common::{crc32, hex};
use parsers::builder::RoceFrame;
use parsers::erf::ErfHeader;
use parsers::frame::{Addr, Frame, Link};
use parsers::icrc::IcrcStatus;
use parsers::lrh::Lrh;
use parsers::opcode;
use parsers::{Config, Layer, Malformed, MalformedKind, parse_frame};

/// infiniband.pcap's frame 11 (ERF header and packet): RC ACKNOWLEDGE LID 1 → LID 4, QP 0x870408,
/// PSN 13896277, MSN 1; tshark: ICRC 0xa8035550, VCRC 0x3081.
const FRAME_11: &str = "e0ed30aef8412b48 15 04 0030 0000 001e
    00020004 00070001 1140ffff 00870408 00d40a55 1f000001 a8035550 3081";

/// infiniband.pcap's frame 3: an IPoIB broadcast (UD SEND ONLY to QP 0xffffff) with a GRH, LID 5 →
/// 49152; tshark: SGID fe80::2:c903:0:1f2d, ICRC 0x0566d54d, VCRC 0x35df.
const FRAME_3: &str = "604e77e8f2412b48150400c0000000ae\
    0003c000002b0005 60000000007c1b00fe800000000000000002c90300001f2dff12401bffff000000000000ffffffff\
    6440ffff00ffffff000de6f800000b1b000000480800000045000060000040004011256b0a0000240a0000ffc15dc15d004c\
    c8db000010060000003c0200c15ec0a87f24000000000000000033396661653032392d323835642d343532372d623936302d\
    31346434323533633530633200000000000000000566d54d35df";

fn erf(data: &[u8]) -> Frame<'_> {
    parse_frame(197, data, data.len(), &Config::default())
}

fn ib(data: &[u8]) -> Frame<'_> {
    parse_frame(247, data, data.len(), &Config::default())
}

fn link(f: &Frame) -> parsers::frame::IbLink {
    match f.link {
        Some(Link::Infiniband(ib)) => ib,
        other => panic!("not InfiniBand: {other:?}"),
    }
}

/// CRC-16, polynomial 0x100B taken bit by bit LSB first (IBTA §7.8.2), initial value and final XOR 0xFFFF;
/// stored least significant byte first, returned as the wire bytes read big-endian.
fn vcrc(packet: &[u8]) -> u16 {
    let mut crc = 0xFFFFu16;
    for &b in packet {
        for bit in 0..8 {
            let feedback = (crc ^ u16::from(b >> bit)) & 1;
            crc >>= 1;
            if feedback != 0 {
                crc ^= 0xD008; // 0x100B, bit-reversed
            }
        }
    }
    (!crc).swap_bytes()
}

/// The ICRC of a local packet (`packet` from the LRH to the ICRC): the LRH's VL and the BTH's byte 4 set
/// to ones.
fn local_icrc(packet: &[u8]) -> u32 {
    let mut m = packet[..packet.len() - 4].to_vec();
    m[0] |= 0xF0;
    m[8 + 4] = 0xFF;
    crc32(&m).swap_bytes()
}

#[test]
fn erf_frame_11_rc_ack() {
    let data = hex(FRAME_11);
    let f = erf(&data);
    assert_eq!(f.malformed, None);
    let l = link(&f);
    assert_eq!(
        l.erf,
        Some(ErfHeader {
            timestamp: 0x482b_41f8_ae30_ede0,
            record_type: 21,
            ext_headers: 0,
            flags: 0x04,
            rlen: 48,
            lctr: 0,
            wlen: 30,
        })
    );
    assert_eq!(
        (l.lrh.vl, l.lrh.lnh, l.lrh.dlid, l.lrh.pkt_len, l.lrh.slid),
        (0, 2, 4, 7, 1)
    );
    assert_eq!((l.vcrc, l.vcrc_status), (Some(0x3081), IcrcStatus::Valid));
    let r = f.roce.unwrap();
    assert_eq!(
        (r.bth.opcode, r.bth.dest_qp, r.bth.psn),
        (0x11, 0x870408, 13_896_277)
    );
    assert_eq!(r.ext.aeth.unwrap().msn, 1);
    assert_eq!(r.grh, None);
    assert_eq!(
        (r.icrc, r.icrc_status),
        (Some(0xa803_5550), Some(IcrcStatus::Valid))
    );
    assert_eq!((f.src(), f.dst()), (Some(Addr::Lid(1)), Some(Addr::Lid(4))));
    assert_eq!(Addr::Lid(4).to_string(), "LID: 4");
    // The rules computed here again agree with the wire.
    assert_eq!(local_icrc(&data[16..44]), 0xa803_5550);
    assert_eq!(vcrc(&data[16..44]), 0x3081);
}

#[test]
fn erf_frame_3_global_icrc_masks_the_whole_lrh() {
    let data = hex(FRAME_3);
    let f = erf(&data);
    assert_eq!(f.malformed, None);
    let r = f.roce.unwrap();
    let g = r.grh.unwrap().0;
    assert_eq!(g.src, hex("fe800000000000000002c90300001f2d")[..]);
    assert_eq!(
        (r.bth.opcode, r.bth.dest_qp),
        (opcode::UD_SEND_ONLY, 0xFF_FFFF)
    );
    assert_eq!(r.icrc_status, Some(IcrcStatus::Valid));
    assert_eq!(link(&f).vcrc_status, IcrcStatus::Valid);
    assert_eq!(f.src(), Some(Addr::V6(g.src)));
    // Masking only the VL, as for a local packet, does not give the wire's ICRC: the LRH is not covered.
    let packet = &data[16..16 + 172];
    assert_ne!(local_icrc(packet), 0x0566_d54d);
    let mut m = packet[..168].to_vec();
    m[..8].fill(0xFF);
    m[8] |= 0x0F; // GRH traffic class (low nibble of byte 0) ...
    m[9..12].fill(0xFF); // ... and flow label
    m[15] = 0xFF; // hop limit
    m[48 + 4] = 0xFF; // BTH byte 4
    assert_eq!(crc32(&m).swap_bytes(), 0x0566_d54d);
}

#[test]
fn built_local_and_global_packets_verify_both_ways() {
    let mut send = RoceFrame::new(opcode::rc::SEND_ONLY);
    send.payload = b"hello".to_vec();
    send.bth.psn = 7;
    let lrh = Lrh {
        vl: 2,
        sl: 3,
        dlid: 9,
        slid: 5,
        ..Lrh::default()
    };
    let data = send.build_infiniband(lrh);
    // LRH 8 + BTH 12 + 5 payload + 3 pad + ICRC 4 = 32 bytes = 8 words, and the VCRC.
    assert_eq!(data.len(), 34);
    assert_eq!(data[..8], hex("20 32 0009 0008 0005"));
    assert_eq!(
        u32::from_be_bytes(data[28..32].try_into().unwrap()),
        local_icrc(&data[..32])
    );
    assert_eq!(u16::from_be_bytes([data[32], data[33]]), vcrc(&data[..32]));
    let f = ib(&data);
    assert_eq!(f.malformed, None);
    assert_eq!(f.roce.unwrap().icrc_status, Some(IcrcStatus::Valid));
    assert_eq!(f.roce.unwrap().payload, b"hello");
    assert_eq!(link(&f).vcrc_status, IcrcStatus::Valid);

    let sgid = hex("fe800000000000000000000000000001").try_into().unwrap();
    let dgid = hex("fe800000000000000000000000000002").try_into().unwrap();
    let data = send.rocev1(sgid, dgid).build_infiniband(lrh);
    assert_eq!(data.len(), 34 + 40);
    assert_eq!(data[1] & 3, 3, "LNH global");
    let f = ib(&data);
    assert_eq!(f.malformed, None);
    assert_eq!(f.roce.unwrap().icrc_status, Some(IcrcStatus::Valid));
    assert_eq!(
        (f.src(), f.dst()),
        (Some(Addr::V6(sgid)), Some(Addr::V6(dgid)))
    );
}

#[test]
fn a_changed_vl_keeps_the_icrc_and_breaks_the_vcrc() {
    let data = RoceFrame::new(opcode::rc::ACKNOWLEDGE).build_infiniband(Lrh::default());
    let mut hop = data.clone();
    hop[0] |= 0x70; // a switch moved the packet to VL 7
    let f = ib(&hop);
    assert_eq!(f.roce.unwrap().icrc_status, Some(IcrcStatus::Valid));
    let l = link(&f);
    assert_eq!(
        l.vcrc_status,
        IcrcStatus::Bad {
            expected: vcrc(&hop[..hop.len() - 2]).into(),
            found: vcrc(&data[..data.len() - 2]).into(),
        }
    );
    let mut dlid = data.clone();
    dlid[3] ^= 1;
    assert!(matches!(
        ib(&dlid).roce.unwrap().icrc_status,
        Some(IcrcStatus::Bad { .. })
    ));
}

#[test]
fn lengths_that_do_not_fit_are_damage_and_a_snapped_vcrc_unverifiable() {
    let data = RoceFrame::new(opcode::rc::ACKNOWLEDGE).build_infiniband(Lrh::default());
    let mut short = data.clone();
    short[5] = 1; // PktLen 1 word: less than the LRH
    assert_eq!(
        ib(&short).malformed,
        Some(Malformed::new(
            Layer::Lrh,
            MalformedKind::LengthTooShort {
                claimed: 4,
                minimum: 8
            }
        ))
    );
    let mut long = data.clone();
    long[5] += 1; // one word more than the packet holds
    assert_eq!(
        ib(&long).malformed,
        Some(Malformed::new(
            Layer::Lrh,
            MalformedKind::LengthBeyondFrame {
                claimed: data.len() + 4,
                available: data.len()
            }
        ))
    );
    let cut = &data[..data.len() - 1];
    let f = parse_frame(247, cut, data.len(), &Config::default());
    assert_eq!(f.malformed, None);
    assert_eq!(link(&f).vcrc_status, IcrcStatus::Unverifiable);
    assert_eq!(f.roce.unwrap().icrc_status, Some(IcrcStatus::Valid));
}

#[test]
fn erf_records_of_other_types_are_not_read_and_wlen_is_checked() {
    let mut data = hex(FRAME_11);
    data[8] = 2; // ERF type ETH
    let f = erf(&data);
    assert!(matches!(f.link, Some(Link::Erf(h)) if h.record_type == 2));
    assert!(!f.is_roce());
    assert_eq!(f.malformed, None);
    let mut data = hex(FRAME_11);
    data[15] = 31; // wlen one byte beyond the record
    assert_eq!(
        erf(&data).malformed,
        Some(Malformed::new(
            Layer::Erf,
            MalformedKind::LengthBeyondFrame {
                claimed: 31,
                available: 30
            }
        ))
    );
}

#[test]
fn ipoib_carries_ip() {
    let data = hex(
        "00000000000000000000000000000000 2fa3000a 80000550 fe800000000000000010e000664ab451 0800 0000
         45000054aefe0000ff011b37c0a8380ac0a83818",
    );
    let f = parse_frame(242, &data, data.len(), &Config::default());
    assert!(matches!(f.link, Some(Link::Ipoib(h)) if h.ethertype == 0x0800));
    assert_eq!(f.src(), Some(Addr::V4([192, 168, 56, 10])));
    assert_eq!(f.dst(), Some(Addr::V4([192, 168, 56, 24])));
}
