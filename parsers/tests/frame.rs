//! Whole-frame tests of `parse_frame`: link types, VLAN stacks, IP fragments, ports, length damage,
//! snap lengths, RoCEv1, MAC control, and the wire order of the extended headers. Frames are real corpus
//! frames (values read with tshark) or written byte by byte here; tshark decoded the QinQ, PFC, SLL and
//! SLL2 frames below with the same field values.
mod common;

use common::*;
use parsers::aeth::{Aeth, Syndrome};
use parsers::atomic::{AtomicAckEth, AtomicEth};
use parsers::bth::Bth;
use parsers::cnp::Cnp;
use parsers::deth::Deth;
use parsers::ethernet::EthernetHeader;
use parsers::feth::Feth;
use parsers::frame::{Addr, Frame, Ip, Link};
use parsers::grh::Grh;
use parsers::icrc::IcrcStatus;
use parsers::imm::{Ieth, ImmDt};
use parsers::ipv6::Ipv6Header;
use parsers::mac_control::MacControl;
use parsers::rdeth::Rdeth;
use parsers::reth::Reth;
use parsers::sll::SllHeader;
use parsers::udp::UdpHeader;
use parsers::vlan::VlanTag;
use parsers::xrceth::Xrceth;
use parsers::{Config, Field, Layer, Malformed, MalformedKind, Value, Visitor, parse_frame};

fn parse(data: &[u8]) -> Frame<'_> {
    parse_frame(1, data, data.len(), &Config::default())
}

fn status(f: &Frame<'_>) -> Option<IcrcStatus> {
    f.roce.and_then(|r| r.icrc_status)
}

fn damage(layer: Layer, kind: MalformedKind) -> Option<Malformed> {
    Some(Malformed::new(layer, kind))
}

/// Inserts bytes (VLAN tags) after the two MAC addresses.
fn with_tags(frame: &[u8], tags: &str) -> Vec<u8> {
    let mut out = frame[..12].to_vec();
    out.extend_from_slice(&hex(tags));
    out.extend_from_slice(&frame[12..]);
    out
}

// ----------------------------------------------------------------------------------------------------
// Real frames: every layer's fields as tshark shows them.

#[test]
fn corpus_ack() {
    let data = hex(WRITE_BW_ACK);
    let f = parse(&data);
    assert_eq!(f.malformed, None);
    assert_eq!(
        f.link,
        Some(Link::Ethernet(EthernetHeader {
            dst: [0x00, 0x50, 0x56, 0xA7, 0x7D, 0x03],
            src: [0x00, 0x50, 0x56, 0xA7, 0x12, 0x9F],
            ethertype: 0x0800,
        }))
    );
    assert_eq!(f.vlans, [None, None]);
    assert_eq!(f.ethertype, Some(0x0800));
    let Some(Ip::V4(ip)) = f.ip else { panic!() };
    assert_eq!(
        (ip.id, ip.ttl, ip.total_len, ip.dont_fragment),
        (0x2CC4, 64, 48, true)
    );
    assert_eq!(f.src(), Some(Addr::V4([10, 1, 16, 61])));
    assert_eq!(f.dst(), Some(Addr::V4([10, 1, 16, 62])));
    assert_eq!(f.src().unwrap().to_string(), "10.1.16.61");
    assert_eq!((f.ecn(), f.dscp()), (Some(0), Some(0)));
    assert!(!f.fragment);
    assert_eq!(
        f.udp,
        Some(UdpHeader {
            src_port: 49935,
            dst_port: 4791,
            length: 28,
            checksum: 0,
        })
    );
    let r = f.roce.unwrap();
    assert_eq!(r.grh, None);
    assert_eq!(
        r.bth,
        Bth {
            opcode: 0x11,
            pkey: 0xFFFF,
            dest_qp: 0x1D,
            psn: 5_454_385,
            ..Bth::default()
        }
    );
    assert_eq!(
        r.ext.aeth,
        Some(Aeth {
            syndrome: 0x1F,
            msn: 1
        })
    );
    assert_eq!(r.ext.aeth.unwrap().decoded(), Syndrome::Ack { credits: 31 });
    let others = parsers::frame::ExtHeaders {
        aeth: None,
        ..r.ext
    };
    assert_eq!(others, parsers::frame::ExtHeaders::default());
    assert_eq!((r.payload, r.payload_len), (&[][..], Some(0)));
    assert_eq!(r.icrc, Some(0x0CF0_2F0E));
    assert_eq!(r.icrc_status, Some(IcrcStatus::Valid));
    assert!(f.is_roce() && !f.is_snapped());
}

#[test]
fn corpus_extended_headers() {
    let data = hex(ATOMIC_FETCH_ADD);
    let r = parse(&data).roce.unwrap();
    assert_eq!(
        (r.bth.opcode, r.bth.ack_req, r.bth.psn),
        (0x14, true, 10_744_519)
    );
    assert_eq!(
        r.ext.atomic_eth,
        Some(AtomicEth {
            va: 0x6320_D6BE_5000,
            r_key: 0x1986,
            swap_add: 1,
            compare: 0,
        })
    );
    assert_eq!(r.payload_len, Some(0));

    let data = hex(ATOMIC_ACK);
    let r = parse(&data).roce.unwrap();
    assert_eq!(
        r.ext.aeth,
        Some(Aeth {
            syndrome: 0x1F,
            msn: 1
        })
    );
    assert_eq!(
        r.ext.atomic_ack_eth,
        Some(AtomicAckEth {
            orig_rem_data: 4_179_805_055_496_059_590,
        })
    );

    let data = hex(WRITE_ONLY_IMM);
    let r = parse(&data).roce.unwrap();
    assert_eq!(
        r.ext.reth,
        Some(Reth {
            va: 0x702E_35B3_0000,
            r_key: 0x3A57,
            dma_len: 0,
        })
    );
    assert_eq!(r.ext.immdt, Some(ImmDt(0)));
    assert_eq!(r.payload_len, Some(0));

    let data = hex(UD_CM_MAD);
    let r = parse(&data).roce.unwrap();
    assert_eq!((r.bth.opcode, r.bth.dest_qp, r.bth.psn), (0x64, 1, 26));
    assert_eq!(
        r.ext.deth,
        Some(Deth {
            q_key: 0x8001_0000,
            reserved: 0,
            src_qp: 1,
        })
    );
    assert_eq!(r.payload_len, Some(256));
    // The MAD header: base version 1, class 7 (CM), class version 2, method 3 (Send).
    assert_eq!(&r.payload[..4], &[0x01, 0x07, 0x02, 0x03]);

    let data = hex(READ_RESPONSE_ONLY);
    let r = parse(&data).roce.unwrap();
    assert_eq!(r.payload_len, Some(64));
    assert_eq!(&r.payload[..13], b"rdma-ping-0: ");
    assert_eq!(r.payload[63], 0);
}

#[test]
fn corpus_pad_and_flags() {
    let data = hex(WRITE_ONLY_PAD2);
    let r = parse(&data).roce.unwrap();
    assert_eq!(r.bth.pad_count, 2);
    assert_eq!(r.ext.reth.unwrap().dma_len, 18);
    assert_eq!(r.payload, b"rocescope pad two!");
    assert_eq!(r.payload_len, Some(18));
    assert_eq!(r.icrc_status, Some(IcrcStatus::Valid));

    // TOS 0x02 = ECT(0); BTH byte 1 0x40 = MigReq.
    let data = hex(ACK_ECT0);
    let f = parse(&data);
    assert_eq!((f.ecn(), f.dscp()), (Some(2), Some(0)));
    let r = f.roce.unwrap();
    assert!(r.bth.migreq && !r.bth.se);
    assert_eq!(f.udp.unwrap().src_port, 72);
    assert_eq!(r.ext.aeth.unwrap().decoded(), Syndrome::Ack { credits: 6 });
}

#[test]
fn ipv4_options_frame() {
    let data = hex(IPV4_OPTIONS_UD);
    let f = parse(&data);
    assert_eq!(f.malformed, None);
    let Some(Ip::V4(ip)) = f.ip else { panic!() };
    assert_eq!((ip.header_len, ip.dscp, ip.ecn, ip.ttl), (24, 26, 3, 63));
    assert_eq!(f.udp.unwrap().src_port, 53249);
    let r = f.roce.unwrap();
    assert_eq!((r.bth.opcode, r.bth.dest_qp, r.bth.psn), (0x64, 2, 7));
    assert_eq!(
        r.ext.deth,
        Some(Deth {
            q_key: 0x1234_ABCD,
            reserved: 0,
            src_qp: 0xABC,
        })
    );
    assert_eq!(r.payload, [0xDE, 0xAD, 0xBE, 0xEF]);
    assert_eq!(r.icrc_status, Some(IcrcStatus::Valid));
}

#[test]
fn ipv6_frame() {
    let data = hex(IPV6_SEND_ONLY);
    let f = parse(&data);
    assert_eq!(f.malformed, None);
    assert_eq!(f.ethertype, Some(0x86DD));
    let src: [u8; 16] = hex("20010db8000000000000000000000001").try_into().unwrap();
    let dst: [u8; 16] = hex("20010db8000000000000000000000002").try_into().unwrap();
    assert_eq!(
        f.ip,
        Some(Ip::V6(Ipv6Header {
            dscp: 26,
            ecn: 2,
            flow_label: 0xABCDE,
            payload_len: 40,
            next_header: 17,
            hop_limit: 64,
            src,
            dst,
        }))
    );
    assert_eq!(f.src(), Some(Addr::V6(src)));
    assert_eq!(f.dst().unwrap().to_string(), "2001:db8::2");
    assert_eq!(f.udp.unwrap().length, 40);
    let r = f.roce.unwrap();
    assert_eq!(
        r.bth,
        Bth {
            opcode: 0x04,
            se: true,
            pad_count: 3,
            pkey: 0xFFFF,
            dest_qp: 0x1234,
            ack_req: true,
            psn: 42,
            ..Bth::default()
        }
    );
    assert_eq!(r.payload, b"RoCEv2 + IPv6");
    assert_eq!(r.icrc_status, Some(IcrcStatus::Valid));
}

#[test]
fn rocev1_with_grh() {
    let data = hex(ROCEV1_RNR_NAK);
    let f = parse(&data);
    assert_eq!(f.malformed, None);
    assert_eq!(f.ethertype, Some(0x8915));
    assert_eq!((f.ip, f.udp), (None, None));
    let sgid: [u8; 16] = hex("fe80000000000000025056fffea7129f").try_into().unwrap();
    let dgid: [u8; 16] = hex("fe80000000000000025056fffea77d03").try_into().unwrap();
    let r = f.roce.unwrap();
    assert_eq!(
        r.grh,
        Some(Grh(Ipv6Header {
            dscp: 40,
            ecn: 0,
            flow_label: 0x12345,
            payload_len: 20,
            next_header: 0x1B,
            hop_limit: 1,
            src: sgid,
            dst: dgid,
        }))
    );
    assert_eq!(
        (r.bth.opcode, r.bth.dest_qp, r.bth.psn),
        (0x11, 0x2B, 0xFFFF)
    );
    assert_eq!(
        r.ext.aeth,
        Some(Aeth {
            syndrome: 0x2E,
            msn: 5
        })
    );
    assert_eq!(r.ext.aeth.unwrap().decoded().rnr_micros(), Some(1_280));
    assert_eq!(r.icrc_status, Some(IcrcStatus::Valid));
    assert_eq!(f.src(), Some(Addr::V6(sgid)));
    assert_eq!(f.dst(), Some(Addr::V6(dgid)));
    assert_eq!((f.dscp(), f.ecn()), (Some(40), Some(0)));
}

#[test]
fn grh_with_another_next_header_is_not_roce() {
    let mut data = hex(ROCEV1_RNR_NAK);
    data[20] = 0x11;
    let f = parse(&data);
    assert_eq!((f.malformed, f.roce.is_some()), (None, false));
}

// ----------------------------------------------------------------------------------------------------
// VLAN stacks.

#[test]
fn single_vlan_tag() {
    let data = with_tags(&hex(WRITE_BW_ACK), "8100 6064");
    let f = parse(&data);
    assert_eq!(f.malformed, None);
    assert_eq!(
        f.vlans,
        [
            Some(VlanTag {
                tpid: 0x8100,
                pcp: 3,
                dei: false,
                vid: 100,
                ethertype: 0x0800,
            }),
            None
        ]
    );
    assert_eq!(f.ethertype, Some(0x0800));
    assert_eq!(status(&f), Some(IcrcStatus::Valid));
}

#[test]
fn qinq_two_tags() {
    // tshark: 802.1ad PRI 5 DEI 0 ID 100, then 802.1Q PRI 3 DEI 1 ID 200, then IPv4.
    let data = with_tags(&hex(WRITE_BW_ACK), "88a8 a064 8100 70c8");
    let f = parse(&data);
    assert_eq!(f.malformed, None);
    let Some(Link::Ethernet(eth)) = f.link else {
        panic!()
    };
    assert_eq!(eth.ethertype, 0x88A8);
    assert_eq!(
        f.vlans,
        [
            Some(VlanTag {
                tpid: 0x88A8,
                pcp: 5,
                dei: false,
                vid: 100,
                ethertype: 0x8100,
            }),
            Some(VlanTag {
                tpid: 0x8100,
                pcp: 3,
                dei: true,
                vid: 200,
                ethertype: 0x0800,
            })
        ]
    );
    assert_eq!(f.ethertype, Some(0x0800));
    assert_eq!(f.roce.unwrap().bth.psn, 5_454_385);
    assert_eq!(status(&f), Some(IcrcStatus::Valid));

    // The pre-standard 0x9100 outer TPID.
    let data = with_tags(&hex(WRITE_BW_ACK), "9100 0001 8100 0002");
    let f = parse(&data);
    assert_eq!(f.malformed, None);
    assert_eq!(f.vlans[0].unwrap().tpid, 0x9100);
    assert_eq!((f.vlans[0].unwrap().vid, f.vlans[1].unwrap().vid), (1, 2));
    assert_eq!(status(&f), Some(IcrcStatus::Valid));
}

#[test]
fn three_tags_are_too_many() {
    let data = with_tags(&hex(WRITE_BW_ACK), "88a8 0001 8100 0002 8100 0003");
    let f = parse(&data);
    assert_eq!(
        f.malformed,
        damage(Layer::Vlan, MalformedKind::TooManyVlanTags)
    );
    assert_eq!(f.vlans[0].unwrap().vid, 1);
    assert_eq!(f.vlans[1].unwrap().vid, 2);
    assert_eq!((f.ethertype, f.ip, f.roce), (None, None, None));
}

#[test]
fn truncated_vlan_tag() {
    let data = with_tags(&hex(WRITE_BW_ACK), "8100 6064");
    let f = parse(&data[..16]);
    assert_eq!(
        f.malformed,
        damage(
            Layer::Vlan,
            MalformedKind::Truncated {
                needed: 4,
                available: 2
            }
        )
    );
    let f = parse_frame(1, &data[..16], data.len(), &Config::default());
    assert_eq!(
        f.malformed,
        damage(
            Layer::Vlan,
            MalformedKind::CutBySnaplen {
                needed: 4,
                available: 2
            }
        )
    );
}

// ----------------------------------------------------------------------------------------------------
// IP fragments and ports.

#[test]
fn ipv4_fragments_are_not_parsed_as_roce() {
    let base = hex(WRITE_BW_ACK);
    // MF set (byte 20 = flags), offset 0.
    let mut mf = base.clone();
    mf[20] |= 0x20;
    // Offset 1 (8 bytes), DF still set.
    let mut off = base.clone();
    off[21] = 0x01;
    for data in [mf, off] {
        let f = parse(&data);
        assert!(f.fragment);
        assert_eq!(f.malformed, None);
        assert!(f.ip.is_some());
        assert_eq!((f.udp, f.roce), (None, None));
    }
    // DF alone is not a fragment.
    let f = parse(&base);
    assert!(!f.fragment);
}

#[test]
fn ipv6_fragment_header_is_reported() {
    let mut data = hex(IPV6_SEND_ONLY);
    data[20] = 44;
    let f = parse(&data);
    assert!(f.fragment);
    assert_eq!((f.malformed, f.udp, f.roce), (None, None, None));
}

#[test]
fn other_ports_and_protocols() {
    let mut data = hex(WRITE_BW_ACK);
    data[36..38].copy_from_slice(&4792u16.to_be_bytes());
    fix_icrc(&mut data);
    let f = parse(&data);
    assert_eq!(f.malformed, None);
    assert_eq!(f.udp.unwrap().dst_port, 4792);
    assert!(!f.is_roce());
    // A fabric that runs RoCE on 4792.
    let f = parse_frame(1, &data, data.len(), &Config { roce_port: 4792 });
    assert_eq!(f.malformed, None);
    assert_eq!(status(&f), Some(IcrcStatus::Valid));
    assert_eq!(f.roce.unwrap().bth.psn, 5_454_385);
    // ...and then 4791 is not RoCE.
    let original = hex(WRITE_BW_ACK);
    let f = parse_frame(1, &original, 62, &Config { roce_port: 4792 });
    assert!(!f.is_roce());
    // The source port alone does not make RoCE.
    let mut swapped = hex(WRITE_BW_ACK);
    swapped[34..38].copy_from_slice(&hex("12b7 c30f"));
    assert!(!parse(&swapped).is_roce());
    // IPv4 protocol 6 (TCP): IP parsed, nothing more.
    let mut tcp = hex(WRITE_BW_ACK);
    tcp[23] = 6;
    let f = parse(&tcp);
    assert!(f.ip.is_some());
    assert_eq!((f.malformed, f.udp, f.roce), (None, None, None));
    // IPv6 next header 6.
    let mut tcp6 = hex(IPV6_SEND_ONLY);
    tcp6[20] = 6;
    let f = parse(&tcp6);
    assert!(f.ip.is_some());
    assert_eq!((f.malformed, f.udp, f.roce), (None, None, None));
}

#[test]
fn other_ethertypes_and_link_types() {
    // ARP.
    let arp = hex(
        "ffffffffffff 005056a7129f 0806 0001080006040001 005056a7129f 0a01103d 000000000000 0a01103e",
    );
    let f = parse(&arp);
    assert_eq!(f.ethertype, Some(0x0806));
    assert_eq!((f.malformed, f.ip, f.roce), (None, None, None));
    // An unknown link type: nothing decoded, nothing damaged.
    let data = hex(WRITE_BW_ACK);
    let f = parse_frame(147, &data, data.len(), &Config::default());
    assert_eq!((f.link, f.ethertype, f.malformed), (None, None, None));
}

// ----------------------------------------------------------------------------------------------------
// Length damage.

#[test]
fn ip_total_length_beyond_frame() {
    let mut data = hex(WRITE_BW_ACK);
    data[17] = 0x31; // total length 49, frame has 48 bytes of IP
    let f = parse(&data);
    assert_eq!(
        f.malformed,
        damage(
            Layer::Ipv4,
            MalformedKind::LengthBeyondFrame {
                claimed: 49,
                available: 48
            }
        )
    );
    assert!(f.ip.is_some());
    assert_eq!(f.udp, None);
    // Total length shorter than the header.
    data[16] = 0;
    data[17] = 19;
    assert_eq!(
        parse(&data).malformed,
        damage(
            Layer::Ipv4,
            MalformedKind::LengthTooShort {
                claimed: 19,
                minimum: 20
            }
        )
    );
}

#[test]
fn ipv6_and_grh_payload_length_beyond_frame() {
    let mut data = hex(IPV6_SEND_ONLY);
    data[19] = 41; // payload length 41, 40 present
    assert_eq!(
        parse(&data).malformed,
        damage(
            Layer::Ipv6,
            MalformedKind::LengthBeyondFrame {
                claimed: 41,
                available: 40
            }
        )
    );
    let mut v1 = hex(ROCEV1_RNR_NAK);
    v1[19] = 21;
    assert_eq!(
        parse(&v1).malformed,
        damage(
            Layer::Grh,
            MalformedKind::LengthBeyondFrame {
                claimed: 21,
                available: 20
            }
        )
    );
}

#[test]
fn udp_length_beyond_ip_payload() {
    let mut data = hex(WRITE_BW_ACK);
    data[39] = 0x1D; // UDP length 29, IP carries 28
    let f = parse(&data);
    assert_eq!(
        f.malformed,
        damage(
            Layer::Udp,
            MalformedKind::LengthBeyondFrame {
                claimed: 29,
                available: 28
            }
        )
    );
    assert_eq!(f.udp.unwrap().length, 29);
    assert_eq!(f.roce, None);
    data[39] = 7;
    assert_eq!(
        parse(&data).malformed,
        damage(
            Layer::Udp,
            MalformedKind::LengthTooShort {
                claimed: 7,
                minimum: 8
            }
        )
    );
}

#[test]
fn pad_beyond_payload() {
    // The ACK has no payload: PadCnt 1 pads nothing.
    let mut data = hex(WRITE_BW_ACK);
    data[43] = 0x10;
    let f = parse(&data);
    assert_eq!(
        f.malformed,
        damage(
            Layer::Bth,
            MalformedKind::PadBeyondPayload { pad: 1, payload: 0 }
        )
    );
    assert_eq!(f.roce.unwrap().bth.pad_count, 1);
    assert_eq!(f.roce.unwrap().icrc_status, None);
}

#[test]
fn pad_boundary() {
    // PadCnt 3 followed by exactly 3 bytes before the ICRC: an empty payload and 3 pad bytes.
    let data = rocev2_v4(&hex("04300000 00000010 00000007  000000"));
    let f = parse(&data);
    assert_eq!(f.malformed, None);
    let r = f.roce.unwrap();
    assert_eq!((r.bth.pad_count, r.payload_len), (3, Some(0)));
    assert_eq!(r.icrc_status, Some(IcrcStatus::Valid));
    // PadCnt 3 with only 2 bytes: the pad reaches into the headers.
    let data = rocev2_v4(&hex("04300000 00000010 00000007  0000"));
    assert_eq!(
        parse(&data).malformed,
        damage(
            Layer::Bth,
            MalformedKind::PadBeyondPayload { pad: 3, payload: 2 }
        )
    );
}

#[test]
fn no_room_for_icrc() {
    // UDP length 8 + BTH 12 + AETH 4 + k leaves k < 4 bytes for the ICRC.
    for k in 0..4u8 {
        let mut data = hex(WRITE_BW_ACK);
        data[39] = 24 + k;
        let f = parse(&data);
        assert_eq!(
            f.malformed,
            damage(
                Layer::Icrc,
                MalformedKind::NoRoomForIcrc {
                    available: k.into()
                }
            ),
            "k = {k}"
        );
        let r = f.roce.unwrap();
        assert_eq!(
            r.ext.aeth,
            Some(Aeth {
                syndrome: 0x1F,
                msn: 1
            })
        );
        assert_eq!(r.icrc_status, None);
    }
    // UDP length that ends inside the AETH: the AETH is truncated (the frame itself says so).
    let mut data = hex(WRITE_BW_ACK);
    data[39] = 23;
    assert_eq!(
        parse(&data).malformed,
        damage(
            Layer::Aeth,
            MalformedKind::Truncated {
                needed: 4,
                available: 3
            }
        )
    );
}

// ----------------------------------------------------------------------------------------------------
// Snap length versus truncation.

#[test]
fn snaplen_cut_inside_bth() {
    let data = hex(WRITE_BW_ACK);
    // 14 + 20 + 8 = 42 bytes of headers, then 5 of the BTH.
    let cut = &data[..47];
    let f = parse_frame(1, cut, data.len(), &Config::default());
    assert_eq!(
        f.malformed,
        damage(
            Layer::Bth,
            MalformedKind::CutBySnaplen {
                needed: 12,
                available: 5
            }
        )
    );
    assert!(f.malformed.unwrap().is_snaplen());
    assert!(f.udp.is_some());
    assert_eq!(f.roce, None);

    // The same bytes presented as the whole frame: the IP header claims 48 bytes and 33 are there.
    let f = parse(cut);
    assert_eq!(
        f.malformed,
        damage(
            Layer::Ipv4,
            MalformedKind::LengthBeyondFrame {
                claimed: 48,
                available: 33
            }
        )
    );
    // A frame whose lengths agree with the 5 BTH bytes: plainly truncated.
    let mut short = cut.to_vec();
    short[16..18].copy_from_slice(&33u16.to_be_bytes());
    short[38..40].copy_from_slice(&13u16.to_be_bytes());
    let f = parse(&short);
    assert_eq!(
        f.malformed,
        damage(
            Layer::Bth,
            MalformedKind::Truncated {
                needed: 12,
                available: 5
            }
        )
    );
    assert!(!f.malformed.unwrap().is_snaplen());
}

#[test]
fn short_length_field_in_a_snapped_capture_is_still_truncation() {
    // The UDP length leaves 5 bytes for the BTH, and the capture also stops there while the frame on
    // the wire was longer (say an FCS): the BTH could never have fit, so this is the frame's damage.
    let data = hex(WRITE_BW_ACK);
    let mut short = data[..47].to_vec();
    short[16..18].copy_from_slice(&33u16.to_be_bytes());
    short[38..40].copy_from_slice(&13u16.to_be_bytes());
    let f = parse_frame(1, &short, short.len() + 4, &Config::default());
    assert_eq!(
        f.malformed,
        damage(
            Layer::Bth,
            MalformedKind::Truncated {
                needed: 12,
                available: 5
            }
        )
    );
    // Same one layer down: the IP total length (25) leaves 5 bytes for the UDP header.
    let mut ip_short = data[..39].to_vec();
    ip_short[16..18].copy_from_slice(&25u16.to_be_bytes());
    let f = parse_frame(1, &ip_short, 62, &Config::default());
    assert_eq!(
        f.malformed,
        damage(
            Layer::Udp,
            MalformedKind::Truncated {
                needed: 8,
                available: 5
            }
        )
    );
}

#[test]
fn snaplen_cut_in_every_layer() {
    let data = hex(WRITE_BW_ACK);
    // (captured bytes, layer, needed, available)
    let cases = [
        (0, Layer::Ethernet, 14, 0),
        (10, Layer::Ethernet, 14, 10),
        (14, Layer::Ipv4, 20, 0),
        (30, Layer::Ipv4, 20, 16),
        (36, Layer::Udp, 8, 2),
        (42, Layer::Bth, 12, 0),
        (54, Layer::Aeth, 4, 0),
        (56, Layer::Aeth, 4, 2),
    ];
    for (n, layer, needed, available) in cases {
        let f = parse_frame(1, &data[..n], data.len(), &Config::default());
        assert_eq!(
            f.malformed,
            damage(layer, MalformedKind::CutBySnaplen { needed, available }),
            "{n} bytes captured"
        );
        assert_eq!(f.orig_len, 62);
    }
    // An orig_len below the captured length is raised to it.
    let f = parse_frame(1, &data, 10, &Config::default());
    assert_eq!(f.orig_len, 62);
    assert_eq!(status(&f), Some(IcrcStatus::Valid));
}

// ----------------------------------------------------------------------------------------------------
// Link types.

#[test]
fn linux_sll_carrying_roce() {
    let ack = hex(WRITE_BW_ACK);
    // tshark: packet type 4 (outgoing), hatype 1, address 00:50:56:a7:12:9f, protocol 0x0800.
    let mut data = hex("0004 0001 0006 005056a7129f0000 0800");
    data.extend_from_slice(&ack[14..]);
    let f = parse_frame(113, &data, data.len(), &Config::default());
    assert_eq!(f.malformed, None);
    let Some(Link::Sll(h)) = f.link else { panic!() };
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
    assert_eq!(f.roce.unwrap().bth.psn, 5_454_385);
    assert_eq!(status(&f), Some(IcrcStatus::Valid));
}

#[test]
fn linux_sll2_carrying_roce() {
    let ack = hex(WRITE_BW_ACK);
    // tshark: packet type 4, hatype 1, address 00:50:56:a7:12:9f, protocol 0x0800, interface 3.
    let mut data = hex("0800 0000 00000003 0001 04 06 005056a7129f0000");
    data.extend_from_slice(&ack[14..]);
    let f = parse_frame(276, &data, data.len(), &Config::default());
    assert_eq!(f.malformed, None);
    let Some(Link::Sll(h)) = f.link else { panic!() };
    assert_eq!(
        (h.version, h.ifindex, h.packet_type, h.protocol),
        (2, 3, 4, 0x0800)
    );
    assert_eq!(h.src_mac(), Some([0x00, 0x50, 0x56, 0xA7, 0x12, 0x9F]));
    assert_eq!(status(&f), Some(IcrcStatus::Valid));
    // SLL2 over IPv6.
    let v6 = hex(IPV6_SEND_ONLY);
    let mut data = hex("86dd 0000 00000001 0001 00 06 020000000001 0000");
    data.extend_from_slice(&v6[14..]);
    let f = parse_frame(276, &data, data.len(), &Config::default());
    assert_eq!(f.malformed, None);
    assert_eq!(f.roce.unwrap().payload, b"RoCEv2 + IPv6");
    assert_eq!(status(&f), Some(IcrcStatus::Valid));
    // Cut inside the SLL2 header.
    let f = parse_frame(276, &data[..12], data.len(), &Config::default());
    assert_eq!(
        f.malformed,
        damage(
            Layer::LinuxSll,
            MalformedKind::CutBySnaplen {
                needed: 20,
                available: 12
            }
        )
    );
}

#[test]
fn raw_ip_link_types() {
    let v4 = hex(WRITE_BW_ACK);
    let v6 = hex(IPV6_SEND_ONLY);
    for lt in [101u16, 228] {
        let f = parse_frame(lt, &v4[14..], 48, &Config::default());
        assert_eq!(f.link, Some(Link::RawIp), "link type {lt}");
        assert_eq!(f.malformed, None);
        assert_eq!(f.roce.unwrap().bth.psn, 5_454_385);
        assert_eq!(status(&f), Some(IcrcStatus::Valid));
    }
    for lt in [101u16, 229] {
        let f = parse_frame(lt, &v6[14..], 80, &Config::default());
        assert_eq!(f.link, Some(Link::RawIp), "link type {lt}");
        assert_eq!(f.ethertype, Some(0x86DD));
        assert_eq!(f.malformed, None);
        assert_eq!(status(&f), Some(IcrcStatus::Valid));
    }
    // Raw IP that is neither version 4 nor 6.
    let mut bad = v4[14..].to_vec();
    bad[0] = 0x55;
    let f = parse_frame(101, &bad, bad.len(), &Config::default());
    assert_eq!(
        f.malformed,
        damage(Layer::Ipv4, MalformedKind::BadVersion(5))
    );
}

// ----------------------------------------------------------------------------------------------------
// MAC control.

#[test]
fn pfc_through_parse_frame() {
    // tshark: CBFC, class-enable 0x00a8 (C3, C5, C7), pause times 1, 0, 0, 65535, 0, 256, 51, 0.
    let mut data =
        hex("0180c2000001 021122334455 8808 0101 00a8 0001 0000 0000 ffff 0000 0100 0033 0000");
    data.resize(60, 0);
    let f = parse(&data);
    assert_eq!(f.malformed, None);
    assert_eq!(f.ethertype, Some(0x8808));
    let mc = f.mac_control.unwrap();
    assert_eq!(
        mc,
        MacControl::Pfc {
            class_enable: 0x00A8,
            quanta: [1, 0, 0, 0xFFFF, 0, 0x0100, 0x0033, 0],
        }
    );
    assert_eq!(mc.xoff_mask(), 0b0010_1000);
    assert_eq!((f.ip, f.roce), (None, None));

    // PAUSE behind a VLAN tag, and a PFC frame cut short on the wire.
    let mut pause = hex("0180c2000001 021122334455 8100 6000 8808 0001 0100");
    pause.resize(64, 0);
    let f = parse(&pause);
    assert_eq!(f.malformed, None);
    assert_eq!(f.vlans[0].unwrap().pcp, 3);
    assert_eq!(f.mac_control, Some(MacControl::Pause { quanta: 0x0100 }));
    let f = parse(&data[..20]);
    assert_eq!(
        f.malformed,
        damage(
            Layer::MacControl,
            MalformedKind::Truncated {
                needed: 20,
                available: 6
            }
        )
    );
}

#[test]
fn builder_mac_control_frame() {
    let control = MacControl::Pfc {
        class_enable: 0x0008,
        quanta: [0, 0, 0, 0xFFFF, 0, 0, 0, 0],
    };
    let data = parsers::builder::mac_control_frame([2, 0, 0, 0, 0, 9], &[], control);
    assert_eq!(
        data,
        hex(
            "0180c2000001 020000000009 8808 0101 0008 0000 0000 0000 ffff 0000 0000 0000 0000 \
             0000000000000000000000000000000000000000000000000000"
        )
    );
    assert_eq!(parse(&data).mac_control, Some(control));
}

// ----------------------------------------------------------------------------------------------------
// Wire order of the extended headers, on frames written here byte by byte (ICRC from common::icrc_of).

#[test]
fn rd_send_only_imm_order() {
    // BTH, RDETH, DETH, ImmDt, payload.
    let data = rocev2_v4(&hex(
        "45000000 00000033 00000001  00 00abcd  11223344 00 000022  cafebabe  0102030405060708",
    ));
    let f = parse(&data);
    assert_eq!(f.malformed, None);
    let r = f.roce.unwrap();
    assert_eq!(
        r.ext.rdeth,
        Some(Rdeth {
            reserved: 0,
            ee_context: 0xABCD
        })
    );
    assert_eq!(
        r.ext.deth,
        Some(Deth {
            q_key: 0x1122_3344,
            reserved: 0,
            src_qp: 0x22,
        })
    );
    assert_eq!(r.ext.immdt, Some(ImmDt(0xCAFE_BABE)));
    assert_eq!(r.payload, [1, 2, 3, 4, 5, 6, 7, 8]);
    assert_eq!(r.icrc_status, Some(IcrcStatus::Valid));
}

#[test]
fn rd_responses_and_atomics_order() {
    // RD ATOMIC_ACKNOWLEDGE: RDETH, AETH, AtomicAckETH.
    let data = rocev2_v4(&hex(
        "52000000 00000033 00000001  00 000077  0a000009  0000000000000063",
    ));
    let r = parse(&data).roce.unwrap();
    assert_eq!(r.ext.rdeth.unwrap().ee_context, 0x77);
    assert_eq!(r.ext.deth, None);
    assert_eq!(
        r.ext.aeth,
        Some(Aeth {
            syndrome: 0x0A,
            msn: 9
        })
    );
    assert_eq!(
        r.ext.atomic_ack_eth,
        Some(AtomicAckEth { orig_rem_data: 99 })
    );
    assert_eq!(
        (r.payload_len, r.icrc_status),
        (Some(0), Some(IcrcStatus::Valid))
    );

    // RD COMPARE_SWAP: RDETH, DETH, AtomicETH.
    let data = rocev2_v4(&hex(
        "53000000 00000033 00000001  00 000077  00000011 00 000022  \
         0000000000001000 00000005 0000000000000002 0000000000000001",
    ));
    let r = parse(&data).roce.unwrap();
    assert_eq!(r.ext.rdeth.unwrap().ee_context, 0x77);
    assert_eq!(r.ext.deth.unwrap().src_qp, 0x22);
    assert_eq!(
        r.ext.atomic_eth,
        Some(AtomicEth {
            va: 0x1000,
            r_key: 5,
            swap_add: 2,
            compare: 1,
        })
    );
    assert_eq!(r.icrc_status, Some(IcrcStatus::Valid));
}

#[test]
fn xrc_order() {
    // XRC WRITE_FIRST: XRCETH, RETH, payload.
    let data = rocev2_v4(&hex(
        "a6000000 00000044 00000001  00 000777  0000000000001000 00000042 00002000  aabbccdd",
    ));
    let r = parse(&data).roce.unwrap();
    assert_eq!(
        r.ext.xrceth,
        Some(Xrceth {
            reserved: 0,
            xrc_srq: 0x777
        })
    );
    assert_eq!(
        r.ext.reth,
        Some(Reth {
            va: 0x1000,
            r_key: 0x42,
            dma_len: 0x2000,
        })
    );
    assert_eq!(r.payload, [0xAA, 0xBB, 0xCC, 0xDD]);
    assert_eq!(r.icrc_status, Some(IcrcStatus::Valid));

    // XRC SEND_ONLY_INVALIDATE: XRCETH, IETH, payload (3 bytes + 1 pad).
    let data = rocev2_v4(&hex(
        "b7100000 00000044 00000001  00 000778  00abcdef  616263 00",
    ));
    let r = parse(&data).roce.unwrap();
    assert_eq!(r.ext.xrceth.unwrap().xrc_srq, 0x778);
    assert_eq!(r.ext.ieth, Some(Ieth { r_key: 0xAB_CDEF }));
    assert_eq!(r.payload, b"abc");
    assert_eq!(r.icrc_status, Some(IcrcStatus::Valid));

    // XRC ACKNOWLEDGE: AETH only (no XRCETH on responses).
    let data = rocev2_v4(&hex("b1000000 00000044 00000001  1f000003"));
    let r = parse(&data).roce.unwrap();
    assert_eq!(r.ext.xrceth, None);
    assert_eq!(
        r.ext.aeth,
        Some(Aeth {
            syndrome: 0x1F,
            msn: 3
        })
    );
    assert_eq!(r.icrc_status, Some(IcrcStatus::Valid));
}

#[test]
fn flush_atomic_write_cnp_and_unknown() {
    // RC FLUSH: FETH, then RETH.
    let data = rocev2_v4(&hex(
        "1c000000 00000010 80000005  00000012  0000000000004000 00000099 00000040",
    ));
    let r = parse(&data).roce.unwrap();
    assert_eq!(r.ext.feth, Some(Feth { bits: 0x12 }));
    assert_eq!(
        r.ext.reth,
        Some(Reth {
            va: 0x4000,
            r_key: 0x99,
            dma_len: 0x40,
        })
    );
    assert_eq!(
        (r.payload_len, r.icrc_status),
        (Some(0), Some(IcrcStatus::Valid))
    );

    // RC ATOMIC_WRITE: RETH, then the 8-byte value as payload.
    let data = rocev2_v4(&hex(
        "1d000000 00000010 80000006  0000000000004000 00000099 00000008  0123456789abcdef",
    ));
    let r = parse(&data).roce.unwrap();
    assert_eq!(r.ext.reth.unwrap().dma_len, 8);
    assert_eq!(r.payload, hex("0123456789abcdef"));
    assert_eq!(r.icrc_status, Some(IcrcStatus::Valid));

    // CNP: BECN set, P_Key 0xffff, 16 reserved bytes.
    let data = rocev2_v4(&hex(
        "8100ffff 40000011 00000000  00000000000000000000000000000000",
    ));
    let r = parse(&data).roce.unwrap();
    assert!(r.bth.becn && !r.bth.fecn);
    assert_eq!(r.bth.dest_qp, 0x11);
    assert_eq!(r.ext.cnp, Some(Cnp { reserved: [0; 16] }));
    assert_eq!(
        (r.payload_len, r.icrc_status),
        (Some(0), Some(IcrcStatus::Valid))
    );

    // Unknown opcode 0x15: no extended headers are guessed; everything up to the ICRC is payload.
    let data = rocev2_v4(&hex("15000000 00000010 00000007  0102030405060708"));
    let r = parse(&data).roce.unwrap();
    assert_eq!(r.ext, parsers::frame::ExtHeaders::default());
    assert_eq!(r.payload, [1, 2, 3, 4, 5, 6, 7, 8]);
    assert_eq!(r.icrc_status, Some(IcrcStatus::Valid));
}

#[test]
fn missing_extended_header_is_truncated_at_its_layer() {
    // A READ_REQUEST whose UDP length leaves 10 of the 16 RETH bytes.
    let data = rocev2_v4(&hex("0c000000 00000010 80000005  00000000000040000000"));
    // rocev2_v4 appended 4 ICRC bytes, which the parser takes as RETH bytes 11-14: then 2 are missing.
    let f = parse(&data);
    assert_eq!(
        f.malformed,
        damage(
            Layer::Reth,
            MalformedKind::Truncated {
                needed: 16,
                available: 14
            }
        )
    );
    assert_eq!(f.roce.unwrap().bth.opcode, 0x0C);
}

// ----------------------------------------------------------------------------------------------------
// The field list: Wireshark names, values as tshark shows them, header offsets.

#[derive(Default)]
struct Collect<'a> {
    headers: Vec<(&'static str, usize, usize)>,
    fields: Vec<Field<'a>>,
}

impl<'a> Visitor<'a> for Collect<'a> {
    fn header(&mut self, title: &'static str, offset: usize, len: usize) {
        self.headers.push((title, offset, len));
    }
    fn field(&mut self, field: Field<'a>) {
        self.fields.push(field);
    }
}

impl Collect<'_> {
    fn value(&self, key: &str) -> Value<'_> {
        self.fields
            .iter()
            .find(|f| f.key == key)
            .unwrap_or_else(|| panic!("no field {key}"))
            .value
    }
}

#[test]
fn visit_matches_tshark() {
    let data = hex(WRITE_BW_ACK);
    let f = parse(&data);
    let mut c = Collect::default();
    f.visit(&mut c);
    // tshark -T fields on rdma_write_bw.pcap frame 25.
    assert_eq!(c.value("ip.ttl"), Value::Uint(64));
    assert_eq!(c.value("ip.id"), Value::Hex(0x2CC4, 4));
    assert_eq!(c.value("udp.srcport"), Value::Uint(49935));
    assert_eq!(c.value("udp.length"), Value::Uint(28));
    assert_eq!(c.value("infiniband.bth.opcode"), Value::Uint(17));
    assert_eq!(c.value("infiniband.bth.p_key"), Value::Hex(65535, 4));
    assert_eq!(c.value("infiniband.bth.destqp"), Value::Hex(0x1D, 6));
    assert_eq!(c.value("infiniband.bth.psn"), Value::Uint(5_454_385));
    assert_eq!(c.value("infiniband.bth.a"), Value::Bool(false));
    assert_eq!(c.value("infiniband.aeth.syndrome"), Value::Hex(31, 2));
    assert_eq!(c.value("infiniband.aeth.msn"), Value::Uint(1));
    assert_eq!(
        c.value("infiniband.invariant.crc"),
        Value::Hex(0x0CF0_2F0E, 8)
    );
    let titles: Vec<(&str, usize, usize)> = c.headers.clone();
    assert!(titles.contains(&("Ethernet II", 0, 14)));
    assert!(titles.contains(&("Internet Protocol Version 4", 14, 20)));
    assert!(titles.contains(&("User Datagram Protocol", 34, 8)));
    assert!(titles.contains(&("Base Transport Header", 42, 12)));
    assert!(titles.contains(&("ACK Extended Transport Header", 54, 4)));
    assert!(titles.contains(&("Invariant CRC", 58, 4)));
}
