//! ICRC known answers and sensitivity. Expected values come from real frames of the public corpus (whose
//! ICRCs are valid) and from hand-built vectors, all recomputed with Python's `zlib.crc32` over the masked
//! bytes; `common::icrc_of` is a second, table-free implementation used to predict the value after a change.
mod common;

use common::*;
use parsers::frame::{Frame, Ip};
use parsers::icrc::{self, IcrcStatus, NetHeader};
use parsers::{Config, parse_frame};

fn parse(data: &[u8]) -> Frame<'_> {
    parse_frame(1, data, data.len(), &Config::default())
}

fn status(f: &Frame<'_>) -> Option<IcrcStatus> {
    f.roce.and_then(|r| r.icrc_status)
}

/// (name, frame, ICRC as the 4 wire bytes read big-endian: Python `zlib.crc32(masked).to_bytes(4, "little")`)
fn known_answers() -> Vec<(&'static str, Vec<u8>, u32)> {
    vec![
        ("rdma_write_bw #25 ACK", hex(WRITE_BW_ACK), 0x0CF0_2F0E),
        (
            "rdma_atomic_bw #20 FETCH_ADD",
            hex(ATOMIC_FETCH_ADD),
            0x26A7_E208,
        ),
        (
            "rdma_atomic_bw #25 ATOMIC_ACK",
            hex(ATOMIC_ACK),
            0x70C1_F6F6,
        ),
        (
            "rdma_read_lat #23 READ_REQUEST",
            hex(READ_REQUEST),
            0x6629_A01D,
        ),
        (
            "rping #7 READ_RESPONSE_ONLY",
            hex(READ_RESPONSE_ONLY),
            0x8692_EAD9,
        ),
        (
            "nccl_node0 #510 WRITE_ONLY_IMM",
            hex(WRITE_ONLY_IMM),
            0x3F6D_01BB,
        ),
        ("hand-built ACK ECT(0) MigReq", hex(ACK_ECT0), 0x4C2A_1C96),
        (
            "hand-built WRITE_ONLY pad 2",
            hex(WRITE_ONLY_PAD2),
            0x0EAB_C99B,
        ),
        ("rdma_cm #1 UD CM MAD", hex(UD_CM_MAD), 0x5368_3145),
        (
            "hand-built IPv6 SEND_ONLY",
            hex(IPV6_SEND_ONLY),
            0x40C1_21EA,
        ),
        (
            "hand-built RoCEv1 RNR NAK",
            hex(ROCEV1_RNR_NAK),
            0x3894_14BA,
        ),
        (
            "hand-built IPv4 options UD",
            hex(IPV4_OPTIONS_UD),
            0xA6A7_642F,
        ),
    ]
}

#[test]
fn test_crc_helper_is_the_zlib_crc() {
    // The CRC-32 check value (CRC catalogue) and Python's zlib.crc32(b"\xff" * 8).
    assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    assert_eq!(crc32(&[0xFF; 8]), 0x2144_DF1C);
    assert_eq!(crc32(b""), 0);
    // The test-side ICRC agrees with Python on every known answer.
    for (name, frame, want) in known_answers() {
        assert_eq!(icrc_of(&frame), want, "{name}");
        assert_eq!(stored_icrc(&frame), want, "{name}");
    }
}

#[test]
fn known_answers_parse_valid() {
    for (name, frame, want) in known_answers() {
        let f = parse(&frame);
        assert_eq!(f.malformed, None, "{name}");
        let roce = f.roce.unwrap_or_else(|| panic!("{name}: not RoCE"));
        assert_eq!(roce.icrc, Some(want), "{name}");
        assert_eq!(roce.icrc_status, Some(IcrcStatus::Valid), "{name}");
    }
}

#[test]
fn compute_directly() {
    // rdma_write_bw.pcap frame 25: IPv4 header 14..34, UDP 34..42, BTH + AETH 42..58, ICRC 58..62.
    let f = hex(WRITE_BW_ACK);
    assert_eq!(
        icrc::compute(NetHeader::Ipv4(&f[14..34]), Some(&f[34..42]), &f[42..58]),
        0x0CF0_2F0E
    );
    // The same bytes with the masked fields already all ones give the same answer.
    let mut masked = f.clone();
    for i in [14 + 1, 14 + 8, 14 + 10, 14 + 11, 34 + 6, 34 + 7, 42 + 4] {
        masked[i] = 0xFF;
    }
    assert_eq!(
        icrc::compute(
            NetHeader::Ipv4(&masked[14..34]),
            Some(&masked[34..42]),
            &masked[42..58]
        ),
        0x0CF0_2F0E
    );
    // IPv6: header 14..54, UDP 54..62, transport 62..90.
    let v6 = hex(IPV6_SEND_ONLY);
    assert_eq!(
        icrc::compute(NetHeader::Ipv6(&v6[14..54]), Some(&v6[54..62]), &v6[62..90]),
        0x40C1_21EA
    );
    // RoCEv1: GRH 14..54, no UDP, transport 54..70.
    let v1 = hex(ROCEV1_RNR_NAK);
    assert_eq!(
        icrc::compute(NetHeader::Ipv6(&v1[14..54]), None, &v1[54..70]),
        0x3894_14BA
    );
    // IPv4 with a 4-byte option: header 14..38.
    let o = hex(IPV4_OPTIONS_UD);
    assert_eq!(
        icrc::compute(NetHeader::Ipv4(&o[14..38]), Some(&o[38..46]), &o[46..70]),
        0xA6A7_642F
    );
}

#[test]
fn status_names() {
    assert_eq!(IcrcStatus::Valid.name(), "valid");
    assert_eq!(
        IcrcStatus::Bad {
            expected: 1,
            found: 2
        }
        .name(),
        "bad"
    );
    assert_eq!(IcrcStatus::Unverifiable.name(), "unverifiable");
}

/// What flipping one bit of a covered byte must do.
#[derive(Debug, PartialEq)]
enum Expect {
    /// A masked (variant) field: the ICRC still matches.
    Valid,
    /// A field that only carries a value: exactly `Bad`, with the expected value predicted independently.
    Bad,
    /// A length, version, protocol, port, opcode or pad field: the frame parses differently or not at all,
    /// but it never passes as valid.
    NotValid,
}

/// Flips every bit of every byte from the network header to the end of the pad and checks the verdicts.
/// `class(offset_in_net, offset_in_udp, offset_in_bth, bit)` decides what each flip must do.
fn flip_every_bit(frame: &[u8], class: impl Fn(Region, u8) -> Expect) {
    let l = layout(frame);
    let original = stored_icrc(frame);
    let udp_at = l.net + l.net_len;
    let bth_at = if l.udp { udp_at + 8 } else { udp_at };
    let mut checked = [0usize; 3];
    for i in l.net..l.end - 4 {
        let region = if i < udp_at {
            Region::Net(i - l.net)
        } else if i < bth_at {
            Region::Udp(i - udp_at)
        } else {
            Region::Transport(i - bth_at)
        };
        for bit in 0..8 {
            let mask = 1u8 << bit;
            let mut m = frame.to_vec();
            m[i] ^= mask;
            let f = parse(&m);
            let got = status(&f);
            let want = class(region, mask);
            match want {
                Expect::Valid => {
                    assert_eq!(f.malformed, None, "{region:?} bit {mask:#04x}");
                    assert_eq!(got, Some(IcrcStatus::Valid), "{region:?} bit {mask:#04x}");
                }
                Expect::Bad => {
                    assert_eq!(f.malformed, None, "{region:?} bit {mask:#04x}");
                    assert_eq!(
                        got,
                        Some(IcrcStatus::Bad {
                            expected: icrc_of(&m),
                            found: original
                        }),
                        "{region:?} bit {mask:#04x}"
                    );
                }
                Expect::NotValid => {
                    assert_ne!(got, Some(IcrcStatus::Valid), "{region:?} bit {mask:#04x}");
                    assert_ne!(
                        got,
                        Some(IcrcStatus::Unverifiable),
                        "{region:?} bit {mask:#04x}"
                    );
                }
            }
            checked[want as usize] += 1;
        }
    }
    assert!(checked[Expect::Bad as usize] > 0 && checked[Expect::Valid as usize] > 0);
    // The ICRC bytes themselves: any flip is Bad with the original as the expected value.
    for i in l.end - 4..l.end {
        for bit in 0..8 {
            let mut m = frame.to_vec();
            m[i] ^= 1 << bit;
            assert_eq!(
                status(&parse(&m)),
                Some(IcrcStatus::Bad {
                    expected: original,
                    found: stored_icrc(&m)
                }),
                "ICRC byte {i} bit {bit}"
            );
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Region {
    Net(usize),
    Udp(usize),
    Transport(usize),
}

/// IPv4 RoCEv2: TOS (1), TTL (8) and checksum (10, 11), UDP checksum (6, 7) and BTH byte 4 are masked.
/// Version/IHL (0), total length (2, 3), MF and fragment offset (6 bits 5-0, 7), protocol (9), UDP
/// destination port and length (2-5), the opcode and PadCnt change how the frame parses.
fn ipv4_class(r: Region, mask: u8) -> Expect {
    match r {
        Region::Net(1 | 8 | 10 | 11) | Region::Udp(6 | 7) | Region::Transport(4) => Expect::Valid,
        Region::Net(0 | 2 | 3 | 7 | 9) | Region::Udp(2..=5) | Region::Transport(0) => {
            Expect::NotValid
        }
        Region::Net(6) if mask & 0x3F != 0 => Expect::NotValid,
        Region::Transport(1) if mask & 0x30 != 0 => Expect::NotValid,
        _ => Expect::Bad,
    }
}

/// IPv6 RoCEv2 / RoCEv1: traffic class and flow label (low nibble of 0, then 1-3) and hop limit (7) are
/// masked; the version nibble, payload length (4, 5) and next header (6) change the parse.
fn ipv6_class(r: Region, mask: u8) -> Expect {
    match r {
        Region::Net(0) if mask & 0x0F != 0 => Expect::Valid,
        Region::Net(1..=3 | 7) | Region::Udp(6 | 7) | Region::Transport(4) => Expect::Valid,
        Region::Net(0 | 4 | 5 | 6) | Region::Udp(2..=5) | Region::Transport(0) => Expect::NotValid,
        Region::Transport(1) if mask & 0x30 != 0 => Expect::NotValid,
        _ => Expect::Bad,
    }
}

#[test]
fn every_bit_flip_ipv4_ack() {
    flip_every_bit(&hex(WRITE_BW_ACK), ipv4_class);
}

#[test]
fn every_bit_flip_ipv4_with_payload_and_pad() {
    flip_every_bit(&hex(READ_RESPONSE_ONLY), ipv4_class);
    flip_every_bit(&hex(WRITE_ONLY_PAD2), ipv4_class);
    flip_every_bit(&hex(ATOMIC_FETCH_ADD), ipv4_class);
}

#[test]
fn every_bit_flip_ipv4_options() {
    flip_every_bit(&hex(IPV4_OPTIONS_UD), ipv4_class);
}

#[test]
fn every_bit_flip_ipv6() {
    flip_every_bit(&hex(IPV6_SEND_ONLY), ipv6_class);
}

#[test]
fn every_bit_flip_rocev1() {
    flip_every_bit(&hex(ROCEV1_RNR_NAK), ipv6_class);
}

#[test]
fn masked_ipv4_fields_keep_valid() {
    let frame = hex(WRITE_BW_ACK);
    // Every TOS value (DSCP and ECN, incl. CE marking by a switch).
    for tos in 0..=255u8 {
        let mut m = frame.clone();
        m[15] = tos;
        let f = parse(&m);
        assert_eq!(status(&f), Some(IcrcStatus::Valid), "TOS {tos:#04x}");
        assert_eq!(f.ecn(), Some(tos & 3));
        assert_eq!(f.dscp(), Some(tos >> 2));
    }
    // Every TTL.
    for ttl in 0..=255u8 {
        let mut m = frame.clone();
        m[22] = ttl;
        let f = parse(&m);
        assert_eq!(status(&f), Some(IcrcStatus::Valid), "TTL {ttl}");
        let Some(Ip::V4(ip)) = f.ip else { panic!() };
        assert_eq!(ip.ttl, ttl);
    }
    // IP header checksum and UDP checksum, any value.
    for v in [0x0000u16, 0x0001, 0x1234, 0xFFFF, 0x8000] {
        let mut m = frame.clone();
        m[24..26].copy_from_slice(&v.to_be_bytes());
        assert_eq!(
            status(&parse(&m)),
            Some(IcrcStatus::Valid),
            "IP checksum {v:#06x}"
        );
        let mut m = frame.clone();
        m[40..42].copy_from_slice(&v.to_be_bytes());
        let f = parse(&m);
        assert_eq!(status(&f), Some(IcrcStatus::Valid), "UDP checksum {v:#06x}");
        assert_eq!(f.udp.unwrap().checksum, v);
    }
    // BTH byte 4: FECN, BECN and the reserved bits, every combination.
    for b in 0..=255u8 {
        let mut m = frame.clone();
        m[42 + 4] = b;
        let f = parse(&m);
        assert_eq!(status(&f), Some(IcrcStatus::Valid), "BTH byte 4 {b:#04x}");
        let bth = f.roce.unwrap().bth;
        assert_eq!(
            (bth.fecn, bth.becn, bth.reserved6),
            (b & 0x80 != 0, b & 0x40 != 0, b & 0x3F)
        );
    }
}

#[test]
fn masked_ipv6_and_grh_fields_keep_valid() {
    for (name, frame) in [("IPv6", hex(IPV6_SEND_ONLY)), ("GRH", hex(ROCEV1_RNR_NAK))] {
        // Traffic class (all values) with the flow label untouched.
        for tc in 0..=255u8 {
            let mut m = frame.clone();
            m[14] = 0x60 | tc >> 4;
            m[15] = (tc << 4) | (m[15] & 0x0F);
            let f = parse(&m);
            assert_eq!(status(&f), Some(IcrcStatus::Valid), "{name} TC {tc:#04x}");
            assert_eq!(f.ecn(), Some(tc & 3));
            assert_eq!(f.dscp(), Some(tc >> 2));
        }
        // Flow label.
        for flow in [0u32, 1, 0x8_0000, 0xF_FFFF, 0x5_A5A5] {
            let mut m = frame.clone();
            m[15] = (m[15] & 0xF0) | (flow >> 16) as u8;
            m[16] = (flow >> 8) as u8;
            m[17] = flow as u8;
            assert_eq!(
                status(&parse(&m)),
                Some(IcrcStatus::Valid),
                "{name} flow {flow:#x}"
            );
        }
        // Hop limit.
        for hop in 0..=255u8 {
            let mut m = frame.clone();
            m[21] = hop;
            assert_eq!(
                status(&parse(&m)),
                Some(IcrcStatus::Valid),
                "{name} hop {hop}"
            );
        }
    }
}

#[test]
fn wrong_icrc_is_bad() {
    let mut frame = hex(READ_RESPONSE_ONLY);
    let n = frame.len();
    frame[n - 4..].copy_from_slice(&[0xDE, 0xAD, 0xBE, 0xEF]);
    let f = parse(&frame);
    assert_eq!(f.malformed, None);
    assert_eq!(
        status(&f),
        Some(IcrcStatus::Bad {
            expected: 0x8692_EAD9,
            found: 0xDEAD_BEEF
        })
    );
    assert_eq!(f.roce.unwrap().icrc, Some(0xDEAD_BEEF));
}

#[test]
fn snaplen_cut_is_unverifiable() {
    let frame = hex(READ_RESPONSE_ONLY);
    // Payload starts after Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 + AETH 4 = 58 and is 64 bytes long.
    for cut in [58, 59, 100, 121, 122, 123, 125] {
        let f = parse_frame(1, &frame[..cut], frame.len(), &Config::default());
        assert_eq!(f.malformed, None, "cut at {cut}");
        let roce = f.roce.unwrap();
        assert_eq!(
            roce.icrc_status,
            Some(IcrcStatus::Unverifiable),
            "cut at {cut}"
        );
        assert_eq!(roce.icrc, None, "cut at {cut}");
        assert_eq!(roce.payload_len, Some(64), "cut at {cut}");
        assert_eq!(roce.payload, &frame[58..cut.min(122)], "cut at {cut}");
        assert!(f.is_snapped());
    }
    // The whole frame captured, only the FCS missing: verifiable.
    let f = parse_frame(1, &frame, frame.len() + 4, &Config::default());
    assert_eq!(status(&f), Some(IcrcStatus::Valid));
    assert_eq!(f.malformed, None);
}

#[test]
fn trailing_bytes_after_the_ip_packet_are_ignored() {
    // An Ethernet FCS (or padding) after the IP packet is outside the ICRC.
    let mut frame = hex(WRITE_BW_ACK);
    frame.extend_from_slice(&[0x12, 0x34, 0x56, 0x78]);
    let f = parse(&frame);
    assert_eq!(f.malformed, None);
    assert_eq!(status(&f), Some(IcrcStatus::Valid));
    assert_eq!(f.roce.unwrap().icrc, Some(0x0CF0_2F0E));
    let mut v1 = hex(ROCEV1_RNR_NAK);
    v1.extend_from_slice(&[0; 6]);
    assert_eq!(status(&parse(&v1)), Some(IcrcStatus::Valid));
}
