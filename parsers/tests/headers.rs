//! Per-header unit tests in the manner of smoltcp's `wire` tests: a byte array written by hand from the
//! header layout (IEEE 802.1Q / 802.3 / 802.1Qbb, RFC 791, RFC 8200, RFC 768, tcpdump's LINKTYPE_LINUX_SLL
//! and LINKTYPE_LINUX_SLL2 pages, the IBTA Vol. 1 transport headers), then parse (every field), emit (the same bytes)
//! and truncation (every shorter prefix is `Truncated` at the right layer). GRE (RFC 2784, RFC 2890), ERSPAN
//! types II and III (draft-foschiano-erspan-03) and VXLAN (RFC 7348) too; InfiniBand's LRH (IBTA Vol. 1
//! §7.7), the ERF record header and LINKTYPE_IPOIB's header (Wireshark's packet-erf.c and packet-ipoib.c).
mod common;

use common::hex;
use parsers::aeth::{Aeth, NakCode, Syndrome};
use parsers::atomic::{AtomicAckEth, AtomicEth};
use parsers::bth::Bth;
use parsers::cnp::Cnp;
use parsers::deth::Deth;
use parsers::erf::ErfHeader;
use parsers::ethernet::{self, EthernetHeader};
use parsers::feth::Feth;
use parsers::grh::Grh;
use parsers::imm::{Ieth, ImmDt};
use parsers::ipoib::IpoibHeader;
use parsers::ipv4::{self, Ipv4Header};
use parsers::ipv6::Ipv6Header;
use parsers::lrh::Lrh;
use parsers::mac_control::MacControl;
use parsers::opcode::Opcode;
use parsers::rdeth::Rdeth;
use parsers::reth::Reth;
use parsers::sll::SllHeader;
use parsers::udp::UdpHeader;
use parsers::vlan::VlanTag;
use parsers::xrceth::Xrceth;
use parsers::{Layer, Malformed, MalformedKind};

type ParseFn<T> = fn(&[u8]) -> Result<(T, &[u8]), Malformed>;

/// Every prefix shorter than `needed` must be reported as `Truncated { needed, available: n }`.
fn assert_truncation<T: std::fmt::Debug>(
    bytes: &[u8],
    layer: Layer,
    needed: usize,
    parse: impl Fn(&[u8]) -> Result<(T, &[u8]), Malformed>,
) {
    assert!(bytes.len() >= needed);
    for n in 0..needed {
        assert_eq!(
            parse(&bytes[..n]).unwrap_err(),
            Malformed::new(
                layer,
                MalformedKind::Truncated {
                    needed,
                    available: n
                }
            ),
            "{layer} prefix of {n} bytes"
        );
    }
    assert!(
        parse(&bytes[..needed]).is_ok(),
        "{layer}: {needed} bytes parse"
    );
}

/// Parses `bytes`, checks the header and that the rest starts right after `len` bytes.
fn parse_ok<T: std::fmt::Debug + PartialEq>(bytes: &[u8], len: usize, parse: ParseFn<T>) -> T {
    let (h, rest) = parse(bytes).unwrap();
    assert_eq!(rest, &bytes[len..], "rest starts after the header");
    h
}

fn emitted(emit: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut out = Vec::new();
    emit(&mut out);
    out
}

// ----------------------------------------------------------------------------------------------------
// Ethernet II: destination (6), source (6), EtherType (2).

#[test]
fn ethernet_parse_emit_truncate() {
    let bytes = hex("0180c2000001 021122334455 8808 abcd");
    let h = parse_ok(&bytes, 14, EthernetHeader::parse);
    assert_eq!(
        h,
        EthernetHeader {
            dst: [0x01, 0x80, 0xC2, 0x00, 0x00, 0x01],
            src: [0x02, 0x11, 0x22, 0x33, 0x44, 0x55],
            ethertype: 0x8808,
        }
    );
    assert_eq!(EthernetHeader::LEN, 14);
    assert_eq!(emitted(|o| h.emit(o)), bytes[..14]);
    assert_truncation(&bytes, Layer::Ethernet, 14, EthernetHeader::parse);
}

#[test]
fn ethertype_constants_and_vlan_tpids() {
    assert_eq!(ethernet::ETHERTYPE_IPV4, 0x0800);
    assert_eq!(ethernet::ETHERTYPE_IPV6, 0x86DD);
    assert_eq!(ethernet::ETHERTYPE_ROCEV1, 0x8915);
    assert_eq!(ethernet::ETHERTYPE_MAC_CONTROL, 0x8808);
    for tpid in [0x8100, 0x88A8, 0x9100] {
        assert!(ethernet::is_vlan_tpid(tpid), "{tpid:#x}");
    }
    for other in [0x0800, 0x86DD, 0x8915, 0x8808, 0x0806, 0x0000, 0xFFFF] {
        assert!(!ethernet::is_vlan_tpid(other), "{other:#x}");
    }
}

// ----------------------------------------------------------------------------------------------------
// 802.1Q tag after the TPID: TCI = PCP (bits 15-13), DEI (bit 12), VID (bits 11-0); then EtherType.

#[test]
fn vlan_tci_bit_positions() {
    // (TCI bytes, PCP, DEI, VID)
    let cases: [([u8; 2], u8, bool, u16); 12] = [
        ([0x00, 0x00], 0, false, 0),
        ([0x00, 0x01], 0, false, 1),
        ([0x08, 0x00], 0, false, 0x800),
        ([0x0F, 0xFF], 0, false, 4095),
        ([0x10, 0x00], 0, true, 0),
        ([0x20, 0x00], 1, false, 0),
        ([0x40, 0x00], 2, false, 0),
        ([0x80, 0x00], 4, false, 0),
        ([0x60, 0x64], 3, false, 100),
        ([0xE0, 0x00], 7, false, 0),
        ([0xB0, 0x0A], 5, true, 10),
        ([0xFF, 0xFF], 7, true, 4095),
    ];
    for (tci, pcp, dei, vid) in cases {
        let bytes = [tci[0], tci[1], 0x08, 0x00, 0x45];
        let (tag, rest) = VlanTag::parse(0x8100, &bytes).unwrap();
        assert_eq!(
            tag,
            VlanTag {
                tpid: 0x8100,
                pcp,
                dei,
                vid,
                ethertype: 0x0800,
            },
            "TCI {tci:02x?}"
        );
        assert_eq!(rest, [0x45]);
        assert_eq!(emitted(|o| tag.emit(o)), bytes[..4], "TCI {tci:02x?}");
    }
}

#[test]
fn vlan_keeps_tpid_and_truncates() {
    let bytes = hex("a064 8100");
    let (tag, _) = VlanTag::parse(0x88A8, &bytes).unwrap();
    assert_eq!(tag.tpid, 0x88A8);
    assert_eq!(
        (tag.pcp, tag.dei, tag.vid, tag.ethertype),
        (5, false, 100, 0x8100)
    );
    assert_eq!(VlanTag::LEN, 4);
    assert_truncation(&bytes, Layer::Vlan, 4, |i| VlanTag::parse(0x8100, i));
}

// ----------------------------------------------------------------------------------------------------
// Linux cooked captures. SLL (16): packet type u16, ARPHRD u16, address length u16, address [8],
// protocol u16. SLL2 (20): protocol u16, reserved u16, interface index u32, ARPHRD u16, packet type u8,
// address length u8, address [8].

#[test]
fn sll_v1() {
    let bytes = hex("0004 0001 0006 005056a7129f0000 0800 45");
    let h = parse_ok(&bytes, 16, SllHeader::parse);
    assert_eq!(
        h,
        SllHeader {
            version: 1,
            packet_type: 4,
            arphrd_type: 1,
            addr_len: 6,
            addr: [0x00, 0x50, 0x56, 0xA7, 0x12, 0x9F, 0, 0],
            ifindex: 0,
            protocol: 0x0800,
        }
    );
    assert_eq!(h.header_len(), 16);
    assert_eq!(h.src_mac(), Some([0x00, 0x50, 0x56, 0xA7, 0x12, 0x9F]));
    assert_eq!(emitted(|o| h.emit(o)), bytes[..16]);
    assert_truncation(&bytes, Layer::LinuxSll, 16, SllHeader::parse);
}

#[test]
fn sll_v2() {
    let bytes = hex("86dd 0000 00000003 0001 00 06 020000000001 0000 60");
    let h = parse_ok(&bytes, 20, SllHeader::parse_v2);
    assert_eq!(
        h,
        SllHeader {
            version: 2,
            packet_type: 0,
            arphrd_type: 1,
            addr_len: 6,
            addr: [0x02, 0, 0, 0, 0, 0x01, 0, 0],
            ifindex: 3,
            protocol: 0x86DD,
        }
    );
    assert_eq!(h.header_len(), 20);
    assert_eq!(h.src_mac(), Some([0x02, 0, 0, 0, 0, 0x01]));
    assert_eq!(emitted(|o| h.emit(o)), bytes[..20]);
    assert_truncation(&bytes, Layer::LinuxSll, 20, SllHeader::parse_v2);
}

#[test]
fn sll_address_not_a_mac() {
    // ARPHRD_INFINIBAND (32) has 20-byte addresses; SLL keeps the first 8 and the length says 20.
    let bytes = hex("0000 0020 0014 8000004800fe8000 0800");
    let h = parse_ok(&bytes, 16, SllHeader::parse);
    assert_eq!((h.arphrd_type, h.addr_len), (32, 20));
    assert_eq!(h.src_mac(), None);
    let v2 = hex("0800 0000 00000001 0304 04 00 0000000000000000");
    let h2 = parse_ok(&v2, 20, SllHeader::parse_v2);
    assert_eq!((h2.arphrd_type, h2.packet_type, h2.addr_len), (772, 4, 0));
    assert_eq!(h2.src_mac(), None);
}

// ----------------------------------------------------------------------------------------------------
// MAC control (after EtherType 0x8808): opcode u16. PAUSE (0x0001): pause time u16.
// PFC (0x0101): class-enable vector u16 (bit n = priority n, high octet reserved), then 8 x u16 quanta,
// priority 0 first.

#[test]
fn pause_frame() {
    let bytes = hex("0001 ffff 0000");
    let (mc, rest) = MacControl::parse(&bytes).unwrap();
    assert_eq!(mc, MacControl::Pause { quanta: 0xFFFF });
    assert_eq!(rest, [0, 0]);
    assert_eq!(mc.opcode(), 0x0001);
    for p in 0..8 {
        assert_eq!(mc.quanta_for(p), Some(0xFFFF), "priority {p}");
    }
    assert_eq!(mc.xoff_mask(), 0xFF);
    assert_eq!(emitted(|o| mc.emit(o)), bytes[..4]);

    let resume = MacControl::parse(&hex("0001 0000")).unwrap().0;
    assert_eq!(resume, MacControl::Pause { quanta: 0 });
    assert_eq!(resume.quanta_for(3), Some(0));
    assert_eq!(resume.xoff_mask(), 0);

    // Short: the opcode needs 2 bytes, PAUSE 4.
    for n in 0..2 {
        assert_eq!(
            MacControl::parse(&bytes[..n]).unwrap_err(),
            Malformed::new(
                Layer::MacControl,
                MalformedKind::Truncated {
                    needed: 2,
                    available: n
                }
            )
        );
    }
    for n in 2..4 {
        assert_eq!(
            MacControl::parse(&bytes[..n]).unwrap_err(),
            Malformed::new(
                Layer::MacControl,
                MalformedKind::Truncated {
                    needed: 4,
                    available: n
                }
            )
        );
    }
}

/// Priorities 3, 5 and 7 enabled (vector 0x00a8); priority 0 has quanta but is not enabled; priority 7
/// is enabled with quanta 0 (XON).
const PFC: &str = "0101 00a8 0001 0000 0000 ffff 0000 0100 0033 0000 00000000";

#[test]
fn pfc_frame() {
    let bytes = hex(PFC);
    let (mc, rest) = MacControl::parse(&bytes).unwrap();
    assert_eq!(
        mc,
        MacControl::Pfc {
            class_enable: 0x00A8,
            quanta: [0x0001, 0, 0, 0xFFFF, 0, 0x0100, 0x0033, 0],
        }
    );
    assert_eq!(rest, [0, 0, 0, 0]);
    assert_eq!(mc.opcode(), 0x0101);
    let expected = [
        None,
        None,
        None,
        Some(0xFFFF),
        None,
        Some(0x0100),
        None,
        Some(0),
    ];
    for (p, q) in expected.iter().enumerate() {
        assert_eq!(mc.quanta_for(p), *q, "priority {p}");
    }
    // Paused: enabled with non-zero quanta = priorities 3 and 5.
    assert_eq!(mc.xoff_mask(), 0b0010_1000);
    assert_eq!(emitted(|o| mc.emit(o)), bytes[..20]);
    for n in 0..2 {
        assert_eq!(
            MacControl::parse(&bytes[..n]).unwrap_err(),
            Malformed::new(
                Layer::MacControl,
                MalformedKind::Truncated {
                    needed: 2,
                    available: n
                }
            )
        );
    }
    for n in 2..20 {
        assert_eq!(
            MacControl::parse(&bytes[..n]).unwrap_err(),
            Malformed::new(
                Layer::MacControl,
                MalformedKind::Truncated {
                    needed: 20,
                    available: n
                }
            )
        );
    }
}

#[test]
fn pfc_reserved_enable_bits_and_out_of_range_priorities() {
    // Only the reserved high octet of the vector is set: no priority is addressed.
    let mc = MacControl::parse(&hex("0101 ff00 ffff ffff ffff ffff ffff ffff ffff ffff"))
        .unwrap()
        .0;
    for p in 0..8 {
        assert_eq!(mc.quanta_for(p), None, "priority {p}");
    }
    assert_eq!(mc.xoff_mask(), 0);
    // All eight enabled, all paused.
    let all = MacControl::parse(&hex("0101 00ff 0001 0002 0003 0004 0005 0006 0007 0008"))
        .unwrap()
        .0;
    for p in 0..8 {
        assert_eq!(all.quanta_for(p), Some(p as u16 + 1), "priority {p}");
    }
    assert_eq!(all.xoff_mask(), 0xFF);
    // There are only eight priorities: anything above is not addressed, and must not panic.
    for p in 8..=130 {
        assert_eq!(all.quanta_for(p), None, "priority {p}");
        assert_eq!(mc.quanta_for(p), None, "priority {p}");
    }
    assert_eq!(all.quanta_for(usize::MAX), None);
}

#[test]
fn mac_control_other_opcode() {
    let bytes = hex("0002 1234");
    let (mc, rest) = MacControl::parse(&bytes).unwrap();
    assert_eq!(mc, MacControl::Other { opcode: 0x0002 });
    assert_eq!(rest, [0x12, 0x34]);
    assert_eq!(mc.quanta_for(0), None);
    assert_eq!(mc.xoff_mask(), 0);
    assert_eq!(emitted(|o| mc.emit(o)), bytes[..2]);
}

// ----------------------------------------------------------------------------------------------------
// IPv4 (RFC 791): version/IHL, TOS = DSCP (6) + ECN (2), total length, id, flags (reserved, DF, MF) +
// fragment offset (13 bits), TTL, protocol, checksum, source, destination, options.

/// rdma_write_bw.pcap frame 25's IPv4 header (tshark: id 0x2cc4, DF, TTL 64, checksum 0xd97c).
const IPV4_A: &str = "45000030 2cc44000 4011d97c 0a01103d 0a01103e";
/// DSCP 26 + CE, MF with offset 5, TTL 63, checksum 0xc5b9 (RFC 1071, computed with Python).
const IPV4_B: &str = "456b003c 12342005 3f11c5b9 c0a80101 c0a80102";

#[test]
fn ipv4_parse_emit() {
    let mut bytes = hex(IPV4_A);
    bytes.extend_from_slice(&[0xC3, 0x0F]);
    let h = parse_ok(&bytes, 20, Ipv4Header::parse);
    assert_eq!(
        h,
        Ipv4Header {
            header_len: 20,
            dscp: 0,
            ecn: 0,
            total_len: 48,
            id: 0x2CC4,
            dont_fragment: true,
            more_fragments: false,
            reserved_flag: false,
            frag_offset: 0,
            ttl: 64,
            protocol: 17,
            checksum: 0xD97C,
            src: [10, 1, 16, 61],
            dst: [10, 1, 16, 62],
        }
    );
    assert!(!h.is_fragment());
    assert_eq!(emitted(|o| h.emit(o)), bytes[..20]);

    let b = hex(IPV4_B);
    let h = parse_ok(&b, 20, Ipv4Header::parse);
    assert_eq!(
        h,
        Ipv4Header {
            header_len: 20,
            dscp: 26,
            ecn: 3,
            total_len: 60,
            id: 0x1234,
            dont_fragment: false,
            more_fragments: true,
            reserved_flag: false,
            frag_offset: 5,
            ttl: 63,
            protocol: 17,
            checksum: 0xC5B9,
            src: [192, 168, 1, 1],
            dst: [192, 168, 1, 2],
        }
    );
    assert!(h.is_fragment());
    // emit computes the checksum: it must come out as the RFC 1071 value.
    assert_eq!(emitted(|o| h.emit(o)), b);
}

#[test]
fn ipv4_dscp_ecn_split() {
    // (TOS byte, DSCP, ECN)
    let cases = [
        (0x00, 0, 0),
        (0x01, 0, 1),
        (0x02, 0, 2),
        (0x03, 0, 3),
        (0x04, 1, 0),
        (0x68, 26, 0),
        (0x6A, 26, 2),
        (0x6B, 26, 3),
        (0x80, 32, 0),
        (0xB8, 46, 0),
        (0xC0, 48, 0),
        (0xFC, 63, 0),
        (0xFF, 63, 3),
    ];
    let mut bytes = hex(IPV4_A);
    for (tos, dscp, ecn) in cases {
        bytes[1] = tos;
        let h = Ipv4Header::parse(&bytes).unwrap().0;
        assert_eq!((h.dscp, h.ecn), (dscp, ecn), "TOS {tos:#04x}");
    }
    assert_eq!(ipv4::ecn_name(0), "Not-ECT");
    assert_eq!(ipv4::ecn_name(1), "ECT(1)");
    assert_eq!(ipv4::ecn_name(2), "ECT(0)");
    assert_eq!(ipv4::ecn_name(3), "CE");
}

#[test]
fn ipv4_flags_and_fragment_offset() {
    // (flags/offset bytes, DF, MF, offset, is_fragment)
    let cases = [
        ([0x00, 0x00], false, false, 0, false),
        ([0x40, 0x00], true, false, 0, false),
        ([0x20, 0x00], false, true, 0, true),
        ([0x60, 0x00], true, true, 0, true),
        ([0x00, 0x01], false, false, 1, true),
        ([0x00, 0xB9], false, false, 185, true),
        ([0x1F, 0xFF], false, false, 0x1FFF, true),
        ([0x5F, 0xFF], true, false, 0x1FFF, true),
        // The reserved (evil) bit is neither DF nor MF.
        ([0x80, 0x00], false, false, 0, false),
        ([0xBF, 0xFF], false, true, 0x1FFF, true),
    ];
    let mut bytes = hex(IPV4_A);
    for (ff, df, mf, off, frag) in cases {
        bytes[6] = ff[0];
        bytes[7] = ff[1];
        let h = Ipv4Header::parse(&bytes).unwrap().0;
        assert_eq!(
            (
                h.dont_fragment,
                h.more_fragments,
                h.frag_offset,
                h.is_fragment()
            ),
            (df, mf, off, frag),
            "flags {ff:02x?}"
        );
    }
}

#[test]
fn ipv4_options() {
    // IHL 6: a Router Alert option; the rest starts after it.
    let bytes = hex("466b003c 12344000 3f1110ba c0a80101 c0a80102 94040000 d001 12b7");
    let (h, rest) = Ipv4Header::parse(&bytes).unwrap();
    assert_eq!(h.header_len, 24);
    assert_eq!((h.dscp, h.ecn, h.total_len, h.ttl), (26, 3, 60, 63));
    assert_eq!(h.src, [192, 168, 1, 1]);
    assert_eq!(rest, hex("d001 12b7"));
    // Prefixes: below 20 the fixed header is missing, from 20 to 23 the options are.
    for n in 0..24 {
        let needed = if n < 20 { 20 } else { 24 };
        assert_eq!(
            Ipv4Header::parse(&bytes[..n]).unwrap_err(),
            Malformed::new(
                Layer::Ipv4,
                MalformedKind::Truncated {
                    needed,
                    available: n
                }
            ),
            "prefix {n}"
        );
    }

    // IHL 15: 40 bytes of NOP options.
    let mut max = hex("4f000050 00000000 40110000 0a000001 0a000002");
    max.extend_from_slice(&[0x01; 40]);
    max.extend_from_slice(&[0xAA, 0xBB]);
    let (h, rest) = Ipv4Header::parse(&max).unwrap();
    assert_eq!(h.header_len, 60);
    assert_eq!(rest, [0xAA, 0xBB]);
    assert_eq!(
        Ipv4Header::parse(&max[..59]).unwrap_err(),
        Malformed::new(
            Layer::Ipv4,
            MalformedKind::Truncated {
                needed: 60,
                available: 59
            }
        )
    );
}

#[test]
fn ipv4_bad_ihl_and_version() {
    let mut bytes = hex(IPV4_A);
    for ihl in 0..5u8 {
        bytes[0] = 0x40 | ihl;
        assert_eq!(
            Ipv4Header::parse(&bytes).unwrap_err(),
            Malformed::new(
                Layer::Ipv4,
                MalformedKind::LengthTooShort {
                    claimed: usize::from(ihl) * 4,
                    minimum: 20
                }
            ),
            "IHL {ihl}"
        );
    }
    for version in [0u8, 1, 5, 6, 15] {
        bytes[0] = version << 4 | 5;
        assert_eq!(
            Ipv4Header::parse(&bytes).unwrap_err(),
            Malformed::new(Layer::Ipv4, MalformedKind::BadVersion(version)),
            "version {version}"
        );
    }
}

#[test]
fn ipv4_truncation_and_checksum() {
    let bytes = hex(IPV4_A);
    assert_truncation(&bytes, Layer::Ipv4, 20, Ipv4Header::parse);
    let mut zeroed = bytes.clone();
    zeroed[10] = 0;
    zeroed[11] = 0;
    assert_eq!(ipv4::checksum(&zeroed), 0xD97C);
    let mut b = hex(IPV4_B);
    b[10] = 0;
    b[11] = 0;
    assert_eq!(ipv4::checksum(&b), 0xC5B9);
    // A header with its checksum in place sums to 0xffff, so the checksum over it is 0.
    assert_eq!(ipv4::checksum(&bytes), 0);
    assert_eq!(ipv4::PROTO_UDP, 17);
}

// ----------------------------------------------------------------------------------------------------
// IPv6 (RFC 8200): version (4) | traffic class (8) | flow label (20), payload length, next header,
// hop limit, source, destination. The traffic class straddles bytes 0 and 1.

const V6_SRC: &str = "20010db8000000000000000000000001";
const V6_DST: &str = "20010db8000000000000000000000002";

#[test]
fn ipv6_parse_emit() {
    let bytes = hex(&format!("6ba12345 001c 11 40 {V6_SRC} {V6_DST} c000"));
    let h = parse_ok(&bytes, 40, Ipv6Header::parse);
    let src: [u8; 16] = hex(V6_SRC).try_into().unwrap();
    let dst: [u8; 16] = hex(V6_DST).try_into().unwrap();
    // Traffic class 0xba = DSCP 46 (0b101110), ECN 2.
    assert_eq!(
        h,
        Ipv6Header {
            dscp: 46,
            ecn: 2,
            flow_label: 0x12345,
            payload_len: 28,
            next_header: 17,
            hop_limit: 64,
            src,
            dst,
        }
    );
    assert_eq!(h.traffic_class(), 0xBA);
    assert_eq!(emitted(|o| h.emit(o)), bytes[..40]);
    assert_truncation(&bytes, Layer::Ipv6, 40, Ipv6Header::parse);
}

#[test]
fn ipv6_traffic_class_and_flow_label_bits() {
    // (first 4 bytes, DSCP, ECN, flow label)
    let cases: [([u8; 4], u8, u8, u32); 9] = [
        ([0x60, 0x00, 0x00, 0x00], 0, 0, 0),
        ([0x60, 0x0F, 0xFF, 0xFF], 0, 0, 0xFFFFF),
        ([0x60, 0x00, 0x00, 0x01], 0, 0, 1),
        ([0x60, 0x08, 0x00, 0x00], 0, 0, 0x80000),
        ([0x60, 0x10, 0x00, 0x00], 0, 1, 0),
        ([0x60, 0x30, 0x00, 0x00], 0, 3, 0),
        ([0x68, 0x00, 0x00, 0x00], 32, 0, 0),
        ([0x66, 0xA8, 0x00, 0x00], 26, 2, 0x80000),
        ([0x6F, 0xFF, 0xFF, 0xFF], 63, 3, 0xFFFFF),
    ];
    let mut bytes = hex(&format!("60000000 0000 11 40 {V6_SRC} {V6_DST}"));
    for (word, dscp, ecn, flow) in cases {
        bytes[..4].copy_from_slice(&word);
        let h = Ipv6Header::parse(&bytes).unwrap().0;
        assert_eq!(
            (h.dscp, h.ecn, h.flow_label),
            (dscp, ecn, flow),
            "{word:02x?}"
        );
        assert_eq!(emitted(|o| h.emit(o)), bytes, "{word:02x?}");
    }
}

#[test]
fn ipv6_bad_version() {
    for version in [0u8, 4, 7, 15] {
        let bytes = hex(&format!("{version:x}0000000 0000 11 40 {V6_SRC} {V6_DST}"));
        assert_eq!(
            Ipv6Header::parse(&bytes).unwrap_err(),
            Malformed::new(Layer::Ipv6, MalformedKind::BadVersion(version))
        );
    }
}

// ----------------------------------------------------------------------------------------------------
// GRH (IBTA Vol. 1 network layer): the IPv6 layout, next header 0x1b = BTH.

#[test]
fn grh_parse_emit_truncate() {
    let bytes = hex(
        "6a012345 0014 1b 01 fe80000000000000025056fffea7129f fe80000000000000025056fffea77d03 11",
    );
    let g = parse_ok(&bytes, 40, Grh::parse);
    let sgid: [u8; 16] = hex("fe80000000000000025056fffea7129f").try_into().unwrap();
    let dgid: [u8; 16] = hex("fe80000000000000025056fffea77d03").try_into().unwrap();
    assert_eq!(
        g,
        Grh(Ipv6Header {
            dscp: 40,
            ecn: 0,
            flow_label: 0x12345,
            payload_len: 20,
            next_header: 0x1B,
            hop_limit: 1,
            src: sgid,
            dst: dgid,
        })
    );
    assert_eq!(parsers::grh::NEXT_HEADER_BTH, 0x1B);
    assert_eq!(emitted(|o| g.emit(o)), bytes[..40]);
    assert_truncation(&bytes, Layer::Grh, 40, Grh::parse);
    let mut v4 = bytes.clone();
    v4[0] = 0x4A;
    assert_eq!(
        Grh::parse(&v4).unwrap_err(),
        Malformed::new(Layer::Grh, MalformedKind::BadVersion(4))
    );
}

// ----------------------------------------------------------------------------------------------------
// UDP (RFC 768): source port, destination port, length, checksum.

#[test]
fn udp_parse_emit_truncate() {
    let bytes = hex("c30f 12b7 001c 0000 11");
    let h = parse_ok(&bytes, 8, UdpHeader::parse);
    assert_eq!(
        h,
        UdpHeader {
            src_port: 49935,
            dst_port: 4791,
            length: 28,
            checksum: 0,
        }
    );
    assert_eq!(emitted(|o| h.emit(o)), bytes[..8]);
    let other = hex("ffff 0001 ffff abcd");
    let h = parse_ok(&other, 8, UdpHeader::parse);
    assert_eq!(
        (h.src_port, h.dst_port, h.length, h.checksum),
        (65535, 1, 65535, 0xABCD)
    );
    assert_eq!(emitted(|o| h.emit(o)), other);
    assert_eq!(parsers::udp::ROCEV2_PORT, 4791);
    assert_truncation(&bytes, Layer::Udp, 8, UdpHeader::parse);
}

// ----------------------------------------------------------------------------------------------------
// BTH: OpCode | SE M PadCnt(2) TVer(4) | P_Key(16) | FECN BECN resv(6) | DestQP(24) |
// AckReq resv(7) | PSN(24).

#[test]
fn bth_real_read_request() {
    // rdma_read_lat.pcap frame 23 (tshark: opcode 12, A=1, P_Key 65535, QP 0x27, PSN 2493786).
    let bytes = hex("0c00ffff 00000027 80260d5a 0000651357838000");
    let h = parse_ok(&bytes, 12, Bth::parse);
    assert_eq!(
        h,
        Bth {
            opcode: 0x0C,
            pkey: 0xFFFF,
            dest_qp: 0x27,
            ack_req: true,
            psn: 2_493_786,
            ..Bth::default()
        }
    );
    assert_eq!(h.op(), Opcode(0x0C));
    assert_eq!(emitted(|o| h.emit(o)), bytes[..12]);
    assert_truncation(&bytes, Layer::Bth, 12, Bth::parse);
}

#[test]
fn bth_every_flag_bit() {
    let z = Bth::default();
    // (byte index, bit, the BTH that single bit means)
    let cases: Vec<(usize, u8, Bth)> = vec![
        (1, 0x80, Bth { se: true, ..z }),
        (1, 0x40, Bth { migreq: true, ..z }),
        (1, 0x20, Bth { pad_count: 2, ..z }),
        (1, 0x10, Bth { pad_count: 1, ..z }),
        (1, 0x08, Bth { tver: 8, ..z }),
        (1, 0x04, Bth { tver: 4, ..z }),
        (1, 0x02, Bth { tver: 2, ..z }),
        (1, 0x01, Bth { tver: 1, ..z }),
        (4, 0x80, Bth { fecn: true, ..z }),
        (4, 0x40, Bth { becn: true, ..z }),
        (
            4,
            0x20,
            Bth {
                reserved6: 0x20,
                ..z
            },
        ),
        (
            4,
            0x10,
            Bth {
                reserved6: 0x10,
                ..z
            },
        ),
        (
            4,
            0x08,
            Bth {
                reserved6: 0x08,
                ..z
            },
        ),
        (
            4,
            0x04,
            Bth {
                reserved6: 0x04,
                ..z
            },
        ),
        (
            4,
            0x02,
            Bth {
                reserved6: 0x02,
                ..z
            },
        ),
        (
            4,
            0x01,
            Bth {
                reserved6: 0x01,
                ..z
            },
        ),
        (8, 0x80, Bth { ack_req: true, ..z }),
        (
            8,
            0x40,
            Bth {
                reserved7: 0x40,
                ..z
            },
        ),
        (
            8,
            0x20,
            Bth {
                reserved7: 0x20,
                ..z
            },
        ),
        (
            8,
            0x10,
            Bth {
                reserved7: 0x10,
                ..z
            },
        ),
        (
            8,
            0x08,
            Bth {
                reserved7: 0x08,
                ..z
            },
        ),
        (
            8,
            0x04,
            Bth {
                reserved7: 0x04,
                ..z
            },
        ),
        (
            8,
            0x02,
            Bth {
                reserved7: 0x02,
                ..z
            },
        ),
        (
            8,
            0x01,
            Bth {
                reserved7: 0x01,
                ..z
            },
        ),
    ];
    for (byte, bit, expected) in cases {
        let mut bytes = [0u8; 12];
        bytes[byte] = bit;
        let h = Bth::parse(&bytes).unwrap().0;
        assert_eq!(h, expected, "byte {byte} bit {bit:#04x}");
        assert_eq!(emitted(|o| h.emit(o)), bytes, "byte {byte} bit {bit:#04x}");
    }
    // Both pad bits: PadCnt 3.
    let h = Bth::parse(&hex("0030 0000 00000000 00000000")).unwrap().0;
    assert_eq!(h.pad_count, 3);
}

#[test]
fn bth_24_bit_fields() {
    let h = Bth::parse(&hex("64 00 8001 00 123456 00 abcdef"))
        .unwrap()
        .0;
    assert_eq!(
        (h.opcode, h.pkey, h.dest_qp, h.psn),
        (0x64, 0x8001, 0x123456, 0xABCDEF)
    );
    let all = hex("ffffffffffffffffffffffff");
    let h = Bth::parse(&all).unwrap().0;
    assert_eq!(
        h,
        Bth {
            opcode: 0xFF,
            se: true,
            migreq: true,
            pad_count: 3,
            tver: 15,
            pkey: 0xFFFF,
            fecn: true,
            becn: true,
            reserved6: 0x3F,
            dest_qp: 0xFF_FFFF,
            ack_req: true,
            reserved7: 0x7F,
            psn: 0xFF_FFFF,
        }
    );
    assert_eq!(emitted(|o| h.emit(o)), all);
    // A PSN of 0xffffff next to a zero QP: the 24-bit fields do not bleed into their neighbours.
    let h = Bth::parse(&hex("11000000 00000000 00ffffff")).unwrap().0;
    assert_eq!(
        (h.dest_qp, h.psn, h.ack_req, h.reserved7),
        (0, 0xFF_FFFF, false, 0)
    );
    let h = Bth::parse(&hex("11000000 00ffffff 00000000")).unwrap().0;
    assert_eq!(
        (h.dest_qp, h.psn, h.fecn, h.becn, h.reserved6),
        (0xFF_FFFF, 0, false, false, 0)
    );
}

// ----------------------------------------------------------------------------------------------------
// RETH: VA u64, R_Key u32, DMA length u32.

#[test]
fn reth() {
    // rdma_read_lat.pcap frame 23 (tshark: VA 0x0000651357838000, R_Key 0x1853, DMA length 64).
    let bytes = hex("0000651357838000 00001853 00000040 ff");
    let h = parse_ok(&bytes, 16, Reth::parse);
    assert_eq!(
        h,
        Reth {
            va: 0x0000_6513_5783_8000,
            r_key: 0x1853,
            dma_len: 64,
        }
    );
    assert_eq!(emitted(|o| h.emit(o)), bytes[..16]);
    let high = hex("fedcba9876543210 89abcdef ffffffff");
    let h = parse_ok(&high, 16, Reth::parse);
    assert_eq!(
        (h.va, h.r_key, h.dma_len),
        (0xFEDC_BA98_7654_3210, 0x89AB_CDEF, 0xFFFF_FFFF)
    );
    assert_eq!(emitted(|o| h.emit(o)), high);
    assert_truncation(&bytes, Layer::Reth, 16, Reth::parse);
}

// ----------------------------------------------------------------------------------------------------
// AETH: Syndrome u8 (bit 7 reserved, bits 6-5 type, bits 4-0 value), MSN u24.

#[test]
fn aeth_parse_emit_truncate() {
    let bytes = hex("1f000001 aa");
    let h = parse_ok(&bytes, 4, Aeth::parse);
    assert_eq!(
        h,
        Aeth {
            syndrome: 0x1F,
            msn: 1
        }
    );
    assert_eq!(h.decoded(), Syndrome::Ack { credits: 31 });
    assert_eq!(emitted(|o| h.emit(o)), bytes[..4]);
    let big = hex("60ffffff");
    let h = parse_ok(&big, 4, Aeth::parse);
    assert_eq!(
        h,
        Aeth {
            syndrome: 0x60,
            msn: 0xFF_FFFF
        }
    );
    assert_eq!(h.decoded(), Syndrome::Nak(NakCode::PsnSequenceError));
    assert_eq!(emitted(|o| h.emit(o)), big);
    assert_truncation(&bytes, Layer::Aeth, 4, Aeth::parse);
}

#[test]
fn aeth_ack_credits() {
    for credits in 0..=31u8 {
        assert_eq!(
            Syndrome::from_byte(credits),
            Syndrome::Ack { credits },
            "credit code {credits}"
        );
        assert_eq!(Syndrome::from_byte(credits).kind_name(), "ACK");
        assert_eq!(Syndrome::from_byte(credits).rnr_micros(), None);
    }
    assert_eq!(Syndrome::from_byte(0x1F), Syndrome::Ack { credits: 31 });
    assert_eq!(Syndrome::from_byte(0x0A), Syndrome::Ack { credits: 10 });
}

/// IBTA Vol. 1 table "Encoding for RNR NAK Timer Field", in milliseconds, as printed; also
/// Linux's `enum ib_rnr_timeout` (IB_RNR_TIMER_655_36 = 0 ... IB_RNR_TIMER_491_52 = 31).
const RNR_TIMER_MS: [&str; 32] = [
    "655.36", "0.01", "0.02", "0.03", "0.04", "0.06", "0.08", "0.12", "0.16", "0.24", "0.32",
    "0.48", "0.64", "0.96", "1.28", "1.92", "2.56", "3.84", "5.12", "7.68", "10.24", "15.36",
    "20.48", "30.72", "40.96", "61.44", "81.92", "122.88", "163.84", "245.76", "327.68", "491.52",
];

#[test]
fn aeth_rnr_nak_timer_table() {
    for (code, ms) in RNR_TIMER_MS.iter().enumerate() {
        // "655.36" ms = 655360 us: drop the point (hundredths of a ms) and multiply by 10.
        let micros: u32 = ms.replace('.', "").parse::<u32>().unwrap() * 10;
        let s = Syndrome::from_byte(0x20 | code as u8);
        assert_eq!(s, Syndrome::RnrNak { timer: code as u8 });
        assert_eq!(s.kind_name(), "RNR NAK");
        assert_eq!(s.rnr_micros(), Some(micros), "timer code {code} = {ms} ms");
    }
    // The points the brief calls out.
    assert_eq!(Syndrome::from_byte(0x20).rnr_micros(), Some(655_360));
    assert_eq!(Syndrome::from_byte(0x21).rnr_micros(), Some(10));
    assert_eq!(Syndrome::from_byte(0x2E).rnr_micros(), Some(1_280));
    assert_eq!(Syndrome::from_byte(0x3F).rnr_micros(), Some(491_520));
}

#[test]
fn aeth_nak_codes() {
    let cases = [
        (0x60, NakCode::PsnSequenceError, "PSN sequence error"),
        (0x61, NakCode::InvalidRequest, "invalid request"),
        (0x62, NakCode::RemoteAccessError, "remote access error"),
        (
            0x63,
            NakCode::RemoteOperationalError,
            "remote operational error",
        ),
        (0x64, NakCode::InvalidRdRequest, "invalid RD request"),
    ];
    for (byte, code, name) in cases {
        let s = Syndrome::from_byte(byte);
        assert_eq!(s, Syndrome::Nak(code), "{byte:#04x}");
        assert_eq!(s.kind_name(), name);
        assert_eq!(code.name(), name);
        assert_eq!(s.rnr_micros(), None);
    }
    for value in 5..=31u8 {
        assert_eq!(
            Syndrome::from_byte(0x60 | value),
            Syndrome::Nak(NakCode::Reserved(value))
        );
        assert_eq!(NakCode::from_code(value), NakCode::Reserved(value));
        assert_eq!(NakCode::Reserved(value).name(), "reserved NAK code");
    }
    for (value, code) in [0, 1, 2, 3, 4].iter().zip([
        NakCode::PsnSequenceError,
        NakCode::InvalidRequest,
        NakCode::RemoteAccessError,
        NakCode::RemoteOperationalError,
        NakCode::InvalidRdRequest,
    ]) {
        assert_eq!(NakCode::from_code(*value), code);
    }
}

#[test]
fn aeth_reserved_type_and_bit7() {
    for value in 0..=31u8 {
        let s = Syndrome::from_byte(0x40 | value);
        assert_eq!(s, Syndrome::Reserved { value });
        assert_eq!(s.kind_name(), "reserved syndrome");
    }
    // Bit 7 is reserved: it does not change the meaning.
    assert_eq!(Syndrome::from_byte(0x9F), Syndrome::Ack { credits: 31 });
    assert_eq!(Syndrome::from_byte(0xAE), Syndrome::RnrNak { timer: 14 });
    assert_eq!(
        Syndrome::from_byte(0xE2),
        Syndrome::Nak(NakCode::RemoteAccessError)
    );
    // With bit 7 clear, every syndrome byte has exactly one decoding and encodes back to itself.
    for byte in 0..0x80u8 {
        assert_eq!(Syndrome::from_byte(byte).to_byte(), byte, "{byte:#04x}");
    }
}

// ----------------------------------------------------------------------------------------------------
// DETH: Q_Key u32, reserved u8, source QP u24. RDETH: reserved u8, EE context u24.
// XRCETH: reserved u8, XRC SRQ u24.

#[test]
fn deth() {
    // rdma_cm.pcap frame 1 (tshark: Q_Key 0x80010000, source QP 1).
    let bytes = hex("80010000 00 000001 64");
    let h = parse_ok(&bytes, 8, Deth::parse);
    assert_eq!(
        h,
        Deth {
            q_key: 0x8001_0000,
            reserved: 0,
            src_qp: 1,
        }
    );
    assert_eq!(emitted(|o| h.emit(o)), bytes[..8]);
    let other = hex("12345678 ab fffffe");
    let h = parse_ok(&other, 8, Deth::parse);
    assert_eq!(
        h,
        Deth {
            q_key: 0x1234_5678,
            reserved: 0xAB,
            src_qp: 0xFF_FFFE,
        }
    );
    assert_eq!(emitted(|o| h.emit(o)), other);
    assert_truncation(&bytes, Layer::Deth, 8, Deth::parse);
}

#[test]
fn rdeth() {
    let bytes = hex("a5123456 00");
    let h = parse_ok(&bytes, 4, Rdeth::parse);
    assert_eq!(
        h,
        Rdeth {
            reserved: 0xA5,
            ee_context: 0x12_3456,
        }
    );
    assert_eq!(emitted(|o| h.emit(o)), bytes[..4]);
    let h = parse_ok(&hex("00ffffff"), 4, Rdeth::parse);
    assert_eq!(h.ee_context, 0xFF_FFFF);
    assert_truncation(&bytes, Layer::Rdeth, 4, Rdeth::parse);
}

#[test]
fn xrceth() {
    let bytes = hex("5aabcdef 00");
    let h = parse_ok(&bytes, 4, Xrceth::parse);
    assert_eq!(
        h,
        Xrceth {
            reserved: 0x5A,
            xrc_srq: 0xAB_CDEF,
        }
    );
    assert_eq!(emitted(|o| h.emit(o)), bytes[..4]);
    assert_truncation(&bytes, Layer::Xrceth, 4, Xrceth::parse);
}

// ----------------------------------------------------------------------------------------------------
// FETH (IBTA 1.5 memory placement extensions; Linux rxe_hdr.h FETH_PLT_MASK 0xf, FETH_SEL_MASK 0x30):
// bits 3-0 placement type, bits 5-4 selectivity level, the rest reserved.

#[test]
fn feth() {
    let bytes = hex("00000012 00");
    let h = parse_ok(&bytes, 4, Feth::parse);
    assert_eq!(h, Feth { bits: 0x12 });
    assert_eq!((h.selectivity(), h.placement_type()), (1, 2));
    assert_eq!(emitted(|o| h.emit(o)), bytes[..4]);
    let h = parse_ok(&hex("0000003f"), 4, Feth::parse);
    assert_eq!((h.selectivity(), h.placement_type()), (3, 15));
    // Reserved bits (31-6) do not leak into either field.
    let h = parse_ok(&hex("ffffffc0"), 4, Feth::parse);
    assert_eq!(
        (h.bits, h.selectivity(), h.placement_type()),
        (0xFFFF_FFC0, 0, 0)
    );
    assert_truncation(&bytes, Layer::Feth, 4, Feth::parse);
}

// ----------------------------------------------------------------------------------------------------
// AtomicETH: VA u64, R_Key u32, swap/add u64, compare u64. AtomicAckETH: u64.

#[test]
fn atomic_eth() {
    // rdma_atomic_bw.pcap frame 20 (tshark: VA 0x6320d6be5000, R_Key 0x1986, swap/add 1, compare 0).
    let bytes = hex("00006320d6be5000 00001986 0000000000000001 0000000000000000 26");
    let h = parse_ok(&bytes, 28, AtomicEth::parse);
    assert_eq!(
        h,
        AtomicEth {
            va: 0x6320_D6BE_5000,
            r_key: 0x1986,
            swap_add: 1,
            compare: 0,
        }
    );
    assert_eq!(emitted(|o| h.emit(o)), bytes[..28]);
    let other = hex("0123456789abcdef fedcba98 1122334455667788 99aabbccddeeff00");
    let h = parse_ok(&other, 28, AtomicEth::parse);
    assert_eq!(
        h,
        AtomicEth {
            va: 0x0123_4567_89AB_CDEF,
            r_key: 0xFEDC_BA98,
            swap_add: 0x1122_3344_5566_7788,
            compare: 0x99AA_BBCC_DDEE_FF00,
        }
    );
    assert_eq!(emitted(|o| h.emit(o)), other);
    assert_truncation(&bytes, Layer::AtomicEth, 28, AtomicEth::parse);
}

#[test]
fn atomic_ack_eth() {
    // rdma_atomic_bw.pcap frame 25 (tshark: original remote data 4179805055496059590).
    let bytes = hex("3a01a68d6b397ac6 70");
    let h = parse_ok(&bytes, 8, AtomicAckEth::parse);
    assert_eq!(
        h,
        AtomicAckEth {
            orig_rem_data: 4_179_805_055_496_059_590,
        }
    );
    assert_eq!(emitted(|o| h.emit(o)), bytes[..8]);
    assert_truncation(&bytes, Layer::AtomicAckEth, 8, AtomicAckEth::parse);
}

// ----------------------------------------------------------------------------------------------------
// ImmDt and IETH: one u32 each.

#[test]
fn immdt_and_ieth() {
    let bytes = hex("deadbeef 01");
    let h = parse_ok(&bytes, 4, ImmDt::parse);
    assert_eq!(h, ImmDt(0xDEAD_BEEF));
    assert_eq!(emitted(|o| h.emit(o)), bytes[..4]);
    assert_truncation(&bytes, Layer::ImmDt, 4, ImmDt::parse);

    let bytes = hex("00001234 01");
    let h = parse_ok(&bytes, 4, Ieth::parse);
    assert_eq!(h, Ieth { r_key: 0x1234 });
    assert_eq!(emitted(|o| h.emit(o)), bytes[..4]);
    assert_truncation(&bytes, Layer::Ieth, 4, Ieth::parse);
}

// ----------------------------------------------------------------------------------------------------
// CNP (RoCEv2 annex A17): 16 reserved bytes after the BTH.

#[test]
fn cnp() {
    let zero = [0u8; 17];
    let h = parse_ok(&zero, 16, Cnp::parse);
    assert_eq!(h, Cnp { reserved: [0; 16] });
    assert_eq!(emitted(|o| h.emit(o)), zero[..16]);
    let counting = hex("0102030405060708090a0b0c0d0e0f10");
    let h = parse_ok(&counting, 16, Cnp::parse);
    let expected: [u8; 16] = core::array::from_fn(|i| i as u8 + 1);
    assert_eq!(h.reserved, expected);
    assert_eq!(emitted(|o| h.emit(o)), counting);
    assert_truncation(&counting, Layer::Cnp, 16, Cnp::parse);
}

#[test]
fn header_lengths_match_the_spec() {
    assert_eq!(EthernetHeader::LEN, 14);
    assert_eq!(VlanTag::LEN, 4);
    assert_eq!((SllHeader::LEN, SllHeader::LEN2), (16, 20));
    assert_eq!(Ipv4Header::MIN_LEN, 20);
    assert_eq!(Ipv6Header::LEN, 40);
    assert_eq!(Grh::LEN, 40);
    assert_eq!(UdpHeader::LEN, 8);
    assert_eq!(Bth::LEN, 12);
    assert_eq!(Rdeth::LEN, 4);
    assert_eq!(Deth::LEN, 8);
    assert_eq!(Xrceth::LEN, 4);
    assert_eq!(Feth::LEN, 4);
    assert_eq!(Reth::LEN, 16);
    assert_eq!(AtomicEth::LEN, 28);
    assert_eq!(Aeth::LEN, 4);
    assert_eq!(AtomicAckEth::LEN, 8);
    assert_eq!(ImmDt::LEN, 4);
    assert_eq!(Ieth::LEN, 4);
    assert_eq!(Cnp::LEN, 16);
}

// ----------------------------------------------------------------------------------------------------
// Mirror encapsulations: GRE, ERSPAN, VXLAN.

mod gre {
    use parsers::gre::*;
    use parsers::{Layer, Malformed, MalformedKind};

    /// ERSPAN type II's GRE header (S set, the sequence number 0x0102_0304).
    const ERSPAN_GRE: [u8; 8] = [0x10, 0x00, 0x88, 0xBE, 0x01, 0x02, 0x03, 0x04];
    /// Every optional field of RFC 2784/2890: C, K and S set.
    const FULL: [u8; 16] = [
        0xB0, 0x00, 0x65, 0x58, 0xAB, 0xCD, 0x00, 0x00, 0xDE, 0xAD, 0xBE, 0xEF, 0x00, 0x00, 0x00,
        0x07,
    ];

    #[test]
    fn deconstruct_sequence_only() {
        let (h, rest) = GreHeader::parse(&ERSPAN_GRE).unwrap();
        assert!(rest.is_empty());
        assert_eq!(h.proto, PROTO_ERSPAN_II);
        assert_eq!(h.sequence, Some(0x0102_0304));
        assert_eq!((h.checksum, h.key, h.ack), (None, None, None));
        assert_eq!(
            (h.header_len(), h.version(), h.has_routing()),
            (8, 0, false)
        );
    }

    #[test]
    fn deconstruct_construct_every_option() {
        let (h, _) = GreHeader::parse(&FULL).unwrap();
        assert_eq!(h.checksum, Some((0xABCD, 0)));
        assert_eq!(h.key, Some(0xDEAD_BEEF));
        assert_eq!(h.sequence, Some(7));
        assert_eq!(h.header_len(), 16);
        let mut out = Vec::new();
        h.emit(&mut out);
        assert_eq!(out, FULL);
        let mut out = Vec::new();
        GreHeader::parse(&ERSPAN_GRE).unwrap().0.emit(&mut out);
        assert_eq!(out, ERSPAN_GRE);
    }

    #[test]
    fn optional_fields_are_bounded() {
        let e = GreHeader::parse(&FULL[..12]).unwrap_err();
        assert_eq!(
            e,
            Malformed::new(
                Layer::Gre,
                MalformedKind::Truncated {
                    needed: 16,
                    available: 12
                }
            )
        );
        let e = GreHeader::parse(&FULL[..3]).unwrap_err();
        assert_eq!(
            e,
            Malformed::new(
                Layer::Gre,
                MalformedKind::Truncated {
                    needed: 4,
                    available: 3
                }
            )
        );
    }
}

mod erspan {
    use parsers::erspan::*;
    use parsers::{Layer, Malformed, MalformedKind};

    /// Type II: version 1, VLAN 10, COS 3, En 3 (tag kept in the frame), not truncated, session 0x155,
    /// index 0x12345.
    const II: [u8; 8] = [0x10, 0x0A, 0x79, 0x55, 0x00, 0x01, 0x23, 0x45];
    /// Type III: version 2, VLAN 0, COS 0, BSO 0, T set, session 7, timestamp 0x01020304, SGT 0, P 0,
    /// FT 0, Hw ID 1, egress, granularity 1 (100 ns), with the platform subheader (ID 3, info 0x42).
    const III: [u8; 20] = [
        0x20, 0x00, 0x04, 0x07, 0x01, 0x02, 0x03, 0x04, 0x00, 0x00, 0x00, 0x1B, 0x0C, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x42,
    ];

    #[test]
    fn deconstruct_construct_type_ii() {
        let (h, rest) = Erspan::parse(&II).unwrap();
        assert!(rest.is_empty());
        assert_eq!(
            (h.version, h.vlan, h.cos, h.encap, h.truncated, h.session_id),
            (1, 10, 3, 3, false, 0x155)
        );
        assert_eq!((h.reserved, h.index, h.header_len()), (0, 0x12345, 8));
        let mut out = Vec::new();
        h.emit(&mut out);
        assert_eq!(out, II);
    }

    #[test]
    fn deconstruct_construct_type_iii() {
        let (h, rest) = Erspan::parse(&III).unwrap();
        assert!(rest.is_empty());
        assert_eq!((h.version, h.truncated, h.session_id), (2, true, 7));
        assert_eq!(
            (h.timestamp, h.hw_id, h.egress, h.granularity),
            (0x0102_0304, 1, true, 1)
        );
        assert_eq!(h.platform, Some(0x0C00_0000_0000_0042));
        assert_eq!(h.header_len(), 20);
        let mut out = Vec::new();
        h.emit(&mut out);
        assert_eq!(out, III);
    }

    #[test]
    fn lengths_and_versions_are_checked() {
        assert_eq!(
            Erspan::parse(&III[..16]).unwrap_err(),
            Malformed::new(
                Layer::Erspan,
                MalformedKind::Truncated {
                    needed: 20,
                    available: 16
                }
            )
        );
        assert_eq!(
            Erspan::parse(&II[..6]).unwrap_err(),
            Malformed::new(
                Layer::Erspan,
                MalformedKind::Truncated {
                    needed: 8,
                    available: 6
                }
            )
        );
        let mut bad = II;
        bad[0] = 0x30;
        assert_eq!(
            Erspan::parse(&bad).unwrap_err(),
            Malformed::new(Layer::Erspan, MalformedKind::BadVersion(3))
        );
    }
}

mod vxlan {
    use parsers::vxlan::*;
    use parsers::{Layer, Malformed, MalformedKind};

    /// RFC 7348's header: I set, VNI 0x00ABCD.
    const HEADER: [u8; 8] = [0x08, 0x00, 0x00, 0x00, 0x00, 0xAB, 0xCD, 0x00];

    #[test]
    fn deconstruct_construct() {
        let (h, rest) = VxlanHeader::parse(&HEADER).unwrap();
        assert!(rest.is_empty());
        assert_eq!((h.flags, h.gbp, h.vni, h.reserved), (0x0800, 0, 0xABCD, 0));
        let mut out = Vec::new();
        h.emit(&mut out);
        assert_eq!(out, HEADER);
    }

    #[test]
    fn short_header() {
        assert_eq!(
            VxlanHeader::parse(&HEADER[..7]).unwrap_err(),
            Malformed::new(
                Layer::Vxlan,
                MalformedKind::Truncated {
                    needed: 8,
                    available: 7
                }
            )
        );
    }
}

// ----------------------------------------------------------------------------------------------------
// InfiniBand LRH (IBTA Vol. 1 §7.7, 8 bytes): VL (4) LVer (4) | SL (4) reserved (2) LNH (2) | DLID (16) |
// reserved (5) PktLen (11) | SLID (16).

#[test]
fn lrh_every_field_and_truncation() {
    // 0x3C: VL 3, LVer 12. 0x5B = 0101 10 11: SL 5, reserved 2, LNH 3. 0x2807 = 00101 000 0000 0111:
    // reserved 5, PktLen 7 words.
    let bytes = hex("3c 5b 1234 2807 abcd 64");
    let h = parse_ok(&bytes, 8, Lrh::parse);
    assert_eq!(
        h,
        Lrh {
            vl: 3,
            lver: 12,
            sl: 5,
            reserved2: 2,
            lnh: 3,
            dlid: 0x1234,
            reserved5: 5,
            pkt_len: 7,
            slid: 0xABCD,
        }
    );
    assert_eq!(h.packet_bytes(), 28);
    assert_eq!(emitted(|o| h.emit(o)), bytes[..8]);
    assert_truncation(&bytes, Layer::Lrh, 8, Lrh::parse);
}

// ----------------------------------------------------------------------------------------------------
// ERF record header (16 bytes): timestamp (8, little-endian), type (1; bit 7 an extension header follows),
// flags (1), rlen, lctr, wlen (2 each, big-endian); each extension header 8 bytes, bit 7 of its first byte
// saying another follows. The values: infiniband.pcap's first record as tshark 4.0 shows it.

#[test]
fn erf_header_of_infiniband_pcap_first_record() {
    let bytes = hex("60eaeb7fef412b48 15 05 0138 0000 0122 f0");
    let h = parse_ok(&bytes, 16, ErfHeader::parse);
    assert_eq!(
        h,
        ErfHeader {
            timestamp: 0x482b_41ef_7feb_ea60,
            record_type: 21,
            ext_headers: 0,
            flags: 0x05,
            rlen: 312,
            lctr: 0,
            wlen: 290,
        }
    );
    assert_eq!(h.header_len(), 16);
    assert_eq!(emitted(|o| h.emit(o)), bytes[..16]);
    assert_truncation(&bytes, Layer::Erf, 16, ErfHeader::parse);
}

#[test]
fn erf_extension_headers_are_skipped_and_counted() {
    // Type 0x95: type 21 with an extension header; the first says another follows, the second does not.
    let bytes = hex("0000000000000000 95 00 0028 0000 0010 8000000000000000 0000000000000000 f0");
    let h = parse_ok(&bytes, 32, ErfHeader::parse);
    assert_eq!((h.record_type, h.ext_headers, h.header_len()), (21, 2, 32));
    assert_eq!(emitted(|o| h.emit(o)), bytes[..32]);
    // The second extension header cut: the record is short of 32 bytes.
    assert_eq!(
        ErfHeader::parse(&bytes[..30]).unwrap_err(),
        Malformed::new(
            Layer::Erf,
            MalformedKind::Truncated {
                needed: 32,
                available: 30
            }
        )
    );
}

// ----------------------------------------------------------------------------------------------------
// LINKTYPE_IPOIB (44 bytes, Wireshark's packet-ipoib.c): a 40-byte pseudo-header (unicast: zeros, then
// the destination's flags byte and QPN at 20-23 and GID at 24-39; else a GRH's first word, source QPN at
// 5-7, source GID at 8-23, destination GID at 24-39), EtherType (2), reserved (2).

#[test]
fn ipoib_unicast_pseudo_header_of_ipoib_pcap() {
    // ipoib.pcap's first frame; tshark 4.0: Destination QPN 0x000550, GID fe80::10:e000:664a:b451, IPv4.
    let bytes = hex("00000000000000000000000000000000 2fa3000a 80000550
         fe80000000000000 0010e000664ab451 0800 0000 45");
    let h = parse_ok(&bytes, 44, IpoibHeader::parse);
    assert_eq!(h.source, None);
    assert_eq!(h.dst_qpn & 0xFF_FFFF, 0x000550);
    assert_eq!(h.dst_gid, hex("fe800000000000000010e000664ab451")[..]);
    assert_eq!((h.ethertype, h.reserved), (0x0800, 0));
    // The bytes before the flags are not kept (Wireshark reads nothing there either): zeros come back.
    let mut want = bytes[..44].to_vec();
    want[16..20].fill(0);
    assert_eq!(emitted(|o| h.emit(o)), want);
    assert_truncation(&bytes, Layer::Ipoib, 44, IpoibHeader::parse);
}

#[test]
fn ipoib_grh_pseudo_header() {
    let bytes = hex("60012345 00 000018 fe800000000000000002c90300001895
         ff12401bffff00000000000000000001 0806 0000");
    let h = parse_ok(&bytes, 44, IpoibHeader::parse);
    let s = h.source.unwrap();
    assert_eq!(s.version_class_flow, 0x6001_2345);
    assert_eq!(s.qpn, 0x18);
    assert_eq!(s.gid, hex("fe800000000000000002c90300001895")[..]);
    assert_eq!(h.dst_gid, hex("ff12401bffff00000000000000000001")[..]);
    assert_eq!(h.ethertype, 0x0806);
    assert_eq!(emitted(|o| h.emit(o)), bytes[..44]);
}
