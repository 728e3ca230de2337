//! Property tests: built frames parse back to exactly what was built (for every one of the 256 opcodes),
//! every prefix of a frame is reported as damage or as unverifiable, arbitrary input never panics, and an
//! independent implementation (etherparse) reads the Ethernet/VLAN/IP/UDP headers the same way.
//!
//! Expected values never come from the code under test: header lists and lengths come from the opcode
//! table in `common`, the ICRC from `common::icrc_of`, the IP checksum from `common::ones_sum`.
mod common;

use common::*;
use parsers::bth::Bth;
use parsers::builder::{Net, RoceFrame};
use parsers::ethernet::EthernetHeader;
use parsers::frame::{ExtHeaders, Frame, Ip, Link};
use parsers::grh::Grh;
use parsers::icrc::IcrcStatus;
use parsers::ipv4::Ipv4Header;
use parsers::ipv6::Ipv6Header;
use parsers::udp::UdpHeader;
use parsers::vlan::VlanTag;
use parsers::{
    Config, Field, aeth::Aeth, atomic::AtomicAckEth, atomic::AtomicEth, cnp::Cnp, deth::Deth,
    feth::Feth, imm::Ieth, imm::ImmDt, parse_frame, rdeth::Rdeth, reth::Reth, xrceth::Xrceth,
};
use proptest::prelude::*;
use proptest::test_runner::{Config as RunnerConfig, TestCaseError, TestRunner};

// ----------------------------------------------------------------------------------------------------
// Strategies.

fn u24() -> impl Strategy<Value = u32> {
    prop_oneof![Just(0u32), Just(0xFF_FFFF), Just(1), 0..0x100_0000u32]
}

fn bth(opcode: u8) -> impl Strategy<Value = Bth> {
    (
        any::<bool>(),
        any::<bool>(),
        0..16u8,
        any::<u16>(),
        any::<bool>(),
        any::<bool>(),
        0..64u8,
        u24(),
        any::<bool>(),
        0..128u8,
        u24(),
    )
        .prop_map(
            move |(
                se,
                migreq,
                tver,
                pkey,
                fecn,
                becn,
                reserved6,
                dest_qp,
                ack_req,
                reserved7,
                psn,
            )| {
                Bth {
                    opcode,
                    se,
                    migreq,
                    pad_count: 0,
                    tver,
                    pkey,
                    fecn,
                    becn,
                    reserved6,
                    dest_qp,
                    ack_req,
                    reserved7,
                    psn,
                }
            },
        )
}

fn ext() -> impl Strategy<Value = ExtHeaders> {
    (
        (any::<u8>(), u24()),
        (any::<u32>(), any::<u8>(), u24()),
        (any::<u8>(), u24()),
        any::<u32>(),
        (any::<u64>(), any::<u32>(), any::<u32>()),
        (any::<u64>(), any::<u32>(), any::<u64>(), any::<u64>()),
        (any::<u8>(), u24()),
        any::<u64>(),
        any::<u32>(),
        any::<u32>(),
        any::<[u8; 16]>(),
    )
        .prop_map(|(rd, de, xr, fe, re, at, ae, aa, im, ie, cnp)| ExtHeaders {
            rdeth: Some(Rdeth {
                reserved: rd.0,
                ee_context: rd.1,
            }),
            deth: Some(Deth {
                q_key: de.0,
                reserved: de.1,
                src_qp: de.2,
            }),
            xrceth: Some(Xrceth {
                reserved: xr.0,
                xrc_srq: xr.1,
            }),
            feth: Some(Feth { bits: fe }),
            reth: Some(Reth {
                va: re.0,
                r_key: re.1,
                dma_len: re.2,
            }),
            atomic_eth: Some(AtomicEth {
                va: at.0,
                r_key: at.1,
                swap_add: at.2,
                compare: at.3,
            }),
            aeth: Some(Aeth {
                syndrome: ae.0,
                msn: ae.1,
            }),
            atomic_ack_eth: Some(AtomicAckEth { orig_rem_data: aa }),
            immdt: Some(ImmDt(im)),
            ieth: Some(Ieth { r_key: ie }),
            cnp: Some(Cnp { reserved: cnp }),
        })
}

fn v6_fields() -> impl Strategy<Value = Ipv6Header> {
    (
        0..64u8,
        0..4u8,
        prop_oneof![Just(0u32), Just(0xF_FFFF), 0..0x10_0000u32],
        any::<u8>(),
        any::<[u8; 16]>(),
        any::<[u8; 16]>(),
    )
        .prop_map(|(dscp, ecn, flow_label, hop_limit, src, dst)| Ipv6Header {
            dscp,
            ecn,
            flow_label,
            payload_len: 0,
            next_header: 0,
            hop_limit,
            src,
            dst,
        })
}

fn net(with_v1: bool) -> BoxedStrategy<Net> {
    let v4 = (
        0..64u8,
        0..4u8,
        any::<u16>(),
        any::<bool>(),
        any::<u8>(),
        any::<[u8; 4]>(),
        any::<[u8; 4]>(),
    )
        .prop_map(|(dscp, ecn, id, df, ttl, src, dst)| {
            Net::V4(Ipv4Header {
                header_len: 20,
                dscp,
                ecn,
                total_len: 0,
                id,
                dont_fragment: df,
                more_fragments: false,
                reserved_flag: false,
                frag_offset: 0,
                ttl,
                protocol: 17,
                checksum: 0,
                src,
                dst,
            })
        });
    let v6 = v6_fields().prop_map(Net::V6);
    if with_v1 {
        prop_oneof![v4, v6, v6_fields().prop_map(Net::V1)].boxed()
    } else {
        prop_oneof![v4, v6].boxed()
    }
}

fn vlans() -> impl Strategy<Value = Vec<VlanTag>> {
    prop::collection::vec(
        (
            prop::sample::select(vec![0x8100u16, 0x88A8, 0x9100]),
            0..8u8,
            any::<bool>(),
            prop_oneof![Just(0u16), Just(4095), 0..4096u16],
        )
            .prop_map(|(tpid, pcp, dei, vid)| VlanTag {
                tpid,
                pcp,
                dei,
                vid,
                ethertype: 0,
            }),
        0..=2,
    )
}

fn roce_frame(
    opcode: BoxedStrategy<u8>,
    with_v1: bool,
    max_payload: usize,
) -> impl Strategy<Value = RoceFrame> {
    (
        opcode.prop_flat_map(bth),
        ext(),
        net(with_v1),
        vlans(),
        prop::collection::vec(any::<u8>(), 0..=max_payload),
        (
            any::<[u8; 6]>(),
            any::<[u8; 6]>(),
            any::<u16>(),
            any::<u16>(),
        ),
    )
        .prop_map(
            |(bth, ext, net, vlans, mut payload, (eth_dst, eth_src, udp_src, udp_checksum))| {
                // A UD SEND to QP 1 carries a 256-byte MAD (IBTA 13.4.2; tests/cm.rs has the rest):
                // such a frame gets one, of a class whose data is not decoded (0x04, performance).
                if bth.dest_qp == 1 && matches!(bth.opcode, 0x64 | 0x65) {
                    payload.resize(256, 0);
                    payload[1] = 0x04;
                }
                RoceFrame {
                    eth_dst,
                    eth_src,
                    vlans,
                    net,
                    udp_src,
                    udp_dst: 4791,
                    udp_checksum,
                    bth,
                    ext,
                    payload,
                    pad: None,
                    icrc: None,
                }
            },
        )
}

fn one_opcode(op: u8) -> BoxedStrategy<u8> {
    Just(op).boxed()
}

fn runner(cases: u32) -> TestRunner {
    TestRunner::new(RunnerConfig {
        cases,
        failure_persistence: None,
        ..RunnerConfig::default()
    })
}

// ----------------------------------------------------------------------------------------------------
// What a built frame must parse to, worked out from the spec.

fn net_ethertype(net: &Net) -> u16 {
    match net {
        Net::V4(_) => 0x0800,
        Net::V6(_) => 0x86DD,
        Net::V1(_) => 0x8915,
    }
}

struct Expected {
    pad: u8,
    /// BTH through ICRC.
    roce_len: usize,
    /// Offset of the first payload byte and one past the ICRC.
    payload_at: usize,
    end: usize,
    ext: ExtHeaders,
}

fn expected(spec: &RoceFrame) -> Expected {
    let op = spec.bth.opcode;
    let pad = ((4 - spec.payload.len() % 4) % 4) as u8;
    let names = expected_headers(op);
    let ext_len: usize = names.iter().map(|n| header_len(n)).sum();
    let roce_len = 12 + ext_len + spec.payload.len() + usize::from(pad) + 4;
    let below_bth = match spec.net {
        Net::V4(_) => 20 + 8,
        Net::V6(_) => 40 + 8,
        Net::V1(_) => 40,
    };
    let end = 14 + 4 * spec.vlans.len() + below_bth + roce_len;
    let payload_at = end - roce_len + 12 + ext_len;
    let given = spec.ext;
    let pick = |name: &str| names.contains(&name);
    let ext = ExtHeaders {
        rdeth: given.rdeth.filter(|_| pick("RDETH")),
        deth: given.deth.filter(|_| pick("DETH")),
        xrceth: given.xrceth.filter(|_| pick("XRCETH")),
        feth: given.feth.filter(|_| pick("FETH")),
        reth: given.reth.filter(|_| pick("RETH")),
        atomic_eth: given.atomic_eth.filter(|_| pick("ATOMIC")),
        aeth: given.aeth.filter(|_| pick("AETH")),
        atomic_ack_eth: given.atomic_ack_eth.filter(|_| pick("ATOMICACK")),
        immdt: given.immdt.filter(|_| pick("IMMDT")),
        ieth: given.ieth.filter(|_| pick("IETH")),
        cnp: given.cnp.filter(|_| pick("CNP")),
    };
    Expected {
        pad,
        roce_len,
        payload_at,
        end,
        ext,
    }
}

fn check_roundtrip(spec: &RoceFrame) -> Result<(), TestCaseError> {
    let data = spec.build();
    let e = expected(spec);
    prop_assert_eq!(
        data.len(),
        e.end.max(60),
        "frame length (Ethernet minimum 60)"
    );
    let f = parse_frame(1, &data, data.len(), &Config::default());
    prop_assert_eq!(f.malformed, None);
    prop_assert!(!f.fragment);

    let ethertype = net_ethertype(&spec.net);
    let first = spec.vlans.first().map_or(ethertype, |t| t.tpid);
    prop_assert_eq!(
        f.link,
        Some(Link::Ethernet(EthernetHeader {
            dst: spec.eth_dst,
            src: spec.eth_src,
            ethertype: first,
        }))
    );
    for i in 0..2 {
        let want = spec.vlans.get(i).map(|t| VlanTag {
            ethertype: spec.vlans.get(i + 1).map_or(ethertype, |n| n.tpid),
            ..*t
        });
        prop_assert_eq!(f.vlans[i], want, "VLAN tag {}", i);
    }
    prop_assert_eq!(f.ethertype, Some(ethertype));

    let net_at = 14 + 4 * spec.vlans.len();
    match spec.net {
        Net::V4(h) => {
            let header = &data[net_at..net_at + 20];
            prop_assert_eq!(ones_sum(header), 0xFFFF, "IPv4 header checksum");
            prop_assert_eq!(
                f.ip,
                Some(Ip::V4(Ipv4Header {
                    header_len: 20,
                    total_len: (28 + e.roce_len) as u16,
                    protocol: 17,
                    checksum: u16::from_be_bytes([header[10], header[11]]),
                    ..h
                }))
            );
        }
        Net::V6(h) => {
            prop_assert_eq!(
                f.ip,
                Some(Ip::V6(Ipv6Header {
                    payload_len: (8 + e.roce_len) as u16,
                    next_header: 17,
                    ..h
                }))
            );
        }
        Net::V1(_) => prop_assert_eq!(f.ip, None),
    }
    let udp = match spec.net {
        Net::V1(_) => None,
        _ => Some(UdpHeader {
            src_port: spec.udp_src,
            dst_port: 4791,
            length: (8 + e.roce_len) as u16,
            checksum: spec.udp_checksum,
        }),
    };
    prop_assert_eq!(f.udp, udp);

    let r = f.roce.ok_or_else(|| TestCaseError::fail("not RoCE"))?;
    let grh = match spec.net {
        Net::V1(h) => Some(Grh(Ipv6Header {
            payload_len: e.roce_len as u16,
            next_header: 0x1B,
            ..h
        })),
        _ => None,
    };
    prop_assert_eq!(r.grh, grh);
    prop_assert_eq!(
        r.bth,
        Bth {
            pad_count: e.pad,
            ..spec.bth
        }
    );
    prop_assert_eq!(r.ext, e.ext);
    prop_assert_eq!(r.payload, &spec.payload[..]);
    prop_assert_eq!(
        &data[e.payload_at..e.payload_at + spec.payload.len()],
        &spec.payload[..]
    );
    prop_assert_eq!(r.payload_len, Some(spec.payload.len()));
    prop_assert_eq!(r.icrc, Some(icrc_of(&data)));
    prop_assert_eq!(r.icrc_status, Some(IcrcStatus::Valid));
    Ok(())
}

/// (a) Every opcode (an opcode outside the table is built and parsed with no extended headers), arbitrary
/// header values, payload 0-300 bytes, IPv4 / IPv6 / RoCEv1, 0-2 VLAN tags.
#[test]
fn every_opcode_roundtrips() {
    for op in 0..=255u8 {
        runner(24)
            .run(&roce_frame(one_opcode(op), true, 300), |spec| {
                check_roundtrip(&spec)
            })
            .unwrap_or_else(|e| panic!("opcode {op:#04x}: {e}"));
    }
}

/// Layers parsed from a prefix must equal those of the whole frame.
fn same_layers(part: &Frame<'_>, full: &Frame<'_>) -> Result<(), TestCaseError> {
    if part.link.is_some() {
        prop_assert_eq!(part.link, full.link);
    }
    for i in 0..2 {
        if part.vlans[i].is_some() {
            prop_assert_eq!(part.vlans[i], full.vlans[i]);
        }
    }
    if part.ip.is_some() {
        prop_assert_eq!(part.ip, full.ip);
    }
    if part.udp.is_some() {
        prop_assert_eq!(part.udp, full.udp);
    }
    if let (Some(p), Some(w)) = (part.roce, full.roce) {
        prop_assert_eq!(p.bth, w.bth);
        prop_assert_eq!(p.grh, w.grh);
    }
    Ok(())
}

fn check_prefixes(spec: &RoceFrame) -> Result<(), TestCaseError> {
    let data = spec.build();
    let e = expected(spec);
    let full = parse_frame(1, &data, data.len(), &Config::default());
    // The 256-byte MAD of a UD SEND to QP 1 is its last header: a cut inside it is the snap length's damage.
    let gsi = spec.bth.dest_qp == 1 && matches!(spec.bth.opcode, 0x64 | 0x65);
    let headers_end = e.payload_at + if gsi { 256 } else { 0 };
    for n in 0..data.len() {
        let cut = &data[..n];
        // The capture lost the tail: the damage, if any, is the snap length's.
        let f = parse_frame(1, cut, data.len(), &Config::default());
        same_layers(&f, &full)?;
        let st = f.roce.and_then(|r| r.icrc_status);
        if n < headers_end {
            let m = f
                .malformed
                .ok_or_else(|| TestCaseError::fail(format!("{n}: no damage")))?;
            prop_assert!(m.is_snaplen(), "{} bytes of {}: {:?}", n, data.len(), m);
        } else if n < e.end {
            prop_assert_eq!(f.malformed, None, "{} bytes", n);
            prop_assert_eq!(st, Some(IcrcStatus::Unverifiable), "{} bytes", n);
        } else {
            // Only Ethernet padding is missing.
            prop_assert_eq!(f.malformed, None, "{} bytes", n);
            prop_assert_eq!(st, Some(IcrcStatus::Valid), "{} bytes", n);
        }
        // The prefix is all there was: real damage, never blamed on the snap length.
        let f = parse_frame(1, cut, n, &Config::default());
        same_layers(&f, &full)?;
        if n < e.end {
            let m = f
                .malformed
                .ok_or_else(|| TestCaseError::fail(format!("{n}: no damage")))?;
            prop_assert!(!m.is_snaplen(), "{} bytes: {:?}", n, m);
        } else {
            prop_assert_eq!(f.roce.and_then(|r| r.icrc_status), Some(IcrcStatus::Valid));
        }
    }
    Ok(())
}

/// (b) Every prefix of every built frame, as a snapped capture and as a short frame.
#[test]
fn every_prefix_is_damage_or_unverifiable() {
    for op in 0..=255u8 {
        runner(2)
            .run(&roce_frame(one_opcode(op), true, 40), |spec| {
                check_prefixes(&spec)
            })
            .unwrap_or_else(|e| panic!("opcode {op:#04x}: {e}"));
    }
}

#[derive(Default)]
struct Sink(usize);

impl<'a> parsers::Visitor<'a> for Sink {
    fn header(&mut self, _title: &'static str, offset: usize, len: usize) {
        self.0 = self.0.wrapping_add(offset ^ len);
    }
    fn field(&mut self, _field: Field<'a>) {
        self.0 += 1;
    }
}

fn link_type() -> impl Strategy<Value = u16> {
    prop_oneof![
        prop::sample::select(vec![1u16, 101, 113, 228, 229, 276]),
        any::<u16>()
    ]
}

proptest! {
    #![proptest_config(RunnerConfig { cases: 3000, failure_persistence: None, ..RunnerConfig::default() })]

    /// (c) Arbitrary bytes under any link type never panic, and the field list can always be walked.
    #[test]
    fn arbitrary_bytes_never_panic(
        lt in link_type(),
        data in prop::collection::vec(any::<u8>(), 0..400),
        extra in prop_oneof![Just(0usize), 0..2000usize],
        port in prop_oneof![Just(4791u16), any::<u16>()],
    ) {
        let f = parse_frame(lt, &data, data.len() + extra, &Config { roce_port: port });
        prop_assert_eq!(f.orig_len, data.len() + extra);
        prop_assert_eq!(f.data, &data[..]);
        let mut sink = Sink::default();
        f.visit(&mut sink);
        // Shorter orig_len than captured is clamped.
        let g = parse_frame(lt, &data, 0, &Config::default());
        prop_assert_eq!(g.orig_len, data.len());
    }
}

proptest! {
    #![proptest_config(RunnerConfig { cases: 1000, failure_persistence: None, ..RunnerConfig::default() })]

    /// (c) Valid frames with a few bytes overwritten reach the deep layers with damage; never a panic.
    #[test]
    fn corrupted_frames_never_panic(
        spec in roce_frame(any::<u8>().boxed(), true, 64),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..5),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut data = spec.build();
        for (at, byte) in edits {
            let i = at.index(data.len());
            data[i] = byte;
        }
        let f = parse_frame(1, &data, data.len(), &Config::default());
        let mut sink = Sink::default();
        f.visit(&mut sink);
        let n = cut.index(data.len() + 1);
        let f = parse_frame(1, &data[..n], data.len(), &Config::default());
        f.visit(&mut sink);
    }
}

proptest! {
    #![proptest_config(RunnerConfig { cases: 512, failure_persistence: None, ..RunnerConfig::default() })]

    /// (d) etherparse, an independent implementation, reads the Ethernet, VLAN, IP and UDP headers of the
    /// built frames exactly as we do, and the UDP payload is our BTH-to-ICRC.
    #[test]
    fn etherparse_agrees(spec in roce_frame(any::<u8>().boxed(), false, 300)) {
        let data = spec.build();
        let ours = parse_frame(1, &data, data.len(), &Config::default());
        prop_assert_eq!(ours.malformed, None);
        let theirs = etherparse::PacketHeaders::from_ethernet_slice(&data)
            .map_err(|e| TestCaseError::fail(format!("etherparse: {e:?}")))?;

        let Some(etherparse::LinkHeader::Ethernet2(eth)) = &theirs.link else {
            return Err(TestCaseError::fail("etherparse: no Ethernet II header"));
        };
        prop_assert_eq!(
            ours.link,
            Some(Link::Ethernet(EthernetHeader {
                dst: eth.destination,
                src: eth.source,
                ethertype: eth.ether_type.0,
            }))
        );

        let their_tags: Vec<(u8, bool, u16, u16)> = theirs
            .link_exts
            .iter()
            .map(|x| match x {
                etherparse::LinkExtHeader::Vlan(v) => Ok((
                    v.pcp.value(),
                    v.drop_eligible_indicator,
                    v.vlan_id.value(),
                    v.ether_type.0,
                )),
                other => Err(TestCaseError::fail(format!("etherparse: {other:?}"))),
            })
            .collect::<Result<_, _>>()?;
        let our_tags: Vec<(u8, bool, u16, u16)> = ours
            .vlans
            .iter()
            .flatten()
            .map(|t| (t.pcp, t.dei, t.vid, t.ethertype))
            .collect();
        prop_assert_eq!(our_tags, their_tags);

        match (&theirs.net, ours.ip) {
            (Some(etherparse::NetHeaders::Ipv4(t, _)), Some(Ip::V4(o))) => {
                prop_assert_eq!(o.header_len, t.header_len() as u8);
                prop_assert_eq!(o.dscp, t.dscp.value());
                prop_assert_eq!(o.ecn, t.ecn.value());
                prop_assert_eq!(o.total_len, t.total_len);
                prop_assert_eq!(o.id, t.identification);
                prop_assert_eq!(o.dont_fragment, t.dont_fragment);
                prop_assert_eq!(o.more_fragments, t.more_fragments);
                prop_assert_eq!(o.frag_offset, t.fragment_offset.value());
                prop_assert_eq!(o.ttl, t.time_to_live);
                prop_assert_eq!(o.protocol, t.protocol.0);
                prop_assert_eq!(o.checksum, t.header_checksum);
                prop_assert_eq!(o.checksum, t.calc_header_checksum());
                prop_assert_eq!(o.src, t.source);
                prop_assert_eq!(o.dst, t.destination);
            }
            (Some(etherparse::NetHeaders::Ipv6(t, _)), Some(Ip::V6(o))) => {
                prop_assert_eq!(o.traffic_class(), t.traffic_class);
                prop_assert_eq!(o.flow_label, t.flow_label.value());
                prop_assert_eq!(o.payload_len, t.payload_length);
                prop_assert_eq!(o.next_header, t.next_header.0);
                prop_assert_eq!(o.hop_limit, t.hop_limit);
                prop_assert_eq!(o.src, t.source);
                prop_assert_eq!(o.dst, t.destination);
            }
            (t, o) => return Err(TestCaseError::fail(format!("IP differs: {t:?} / {o:?}"))),
        }

        let Some(etherparse::TransportHeader::Udp(u)) = &theirs.transport else {
            return Err(TestCaseError::fail("etherparse: no UDP header"));
        };
        prop_assert_eq!(
            ours.udp,
            Some(UdpHeader {
                src_port: u.source_port,
                dst_port: u.destination_port,
                length: u.length,
                checksum: u.checksum,
            })
        );
        // The UDP payload etherparse hands out is what we parsed as BTH .. ICRC.
        let e = expected(&spec);
        prop_assert_eq!(theirs.payload.slice(), &data[e.end - e.roce_len..e.end]);
    }
}
