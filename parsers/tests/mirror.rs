//! Mirror encapsulations: ERSPAN type II and III, GRE transparent Ethernet bridging and VXLAN around a
//! real corpus frame, written byte by byte here (outer IP checksums computed by hand with RFC 1071), then
//! parsed (the encapsulated frame reads exactly as the frame captured directly) and built again
//! (`builder::Mirror` writes the same bytes). Truncated copies, nesting and every prefix.
mod common;

use common::*;
use parsers::builder::Mirror;
use parsers::erspan::Erspan;
use parsers::frame::{Frame, Ip, Link, MAX_ENCAP, Tunnel};
use parsers::icrc::IcrcStatus;
use parsers::{Config, Field, Layer, Malformed, MalformedKind, Visitor, parse_frame};

fn parse(data: &[u8]) -> Frame<'_> {
    parse_frame(1, data, data.len(), &Config::default())
}

/// Inserts bytes (VLAN tags) after the two MAC addresses.
fn with_tags(frame: &[u8], tags: &str) -> Vec<u8> {
    let mut out = frame[..12].to_vec();
    out.extend_from_slice(&hex(tags));
    out.extend_from_slice(&frame[12..]);
    out
}

const OUTER_ETH: &str = "02000000000b02000000000a0800";

/// Checks that the encapsulated frame of `f` reads as `direct` does, header by header.
fn same_inner(f: &Frame, direct: &Frame) {
    assert_eq!(f.link, direct.link);
    assert_eq!(f.vlans, direct.vlans);
    assert_eq!(f.ip, direct.ip);
    assert_eq!(f.udp, direct.udp);
    assert_eq!(
        f.roce.map(|r| (r.bth, r.ext, r.payload_len, r.icrc)),
        direct.roce.map(|r| (r.bth, r.ext, r.payload_len, r.icrc))
    );
    assert_eq!(f.malformed, direct.malformed);
}

fn icrc(f: &Frame) -> Option<IcrcStatus> {
    f.roce.and_then(|r| r.icrc_status)
}

#[test]
fn erspan_type_ii() {
    let inner = hex(WRITE_BW_ACK);
    let data = hex(&format!(
        "{OUTER_ETH} 45000062 00054000 402fb664 c0000201 c0000202 \
         100088be 00000005 10000155 00000000 {WRITE_BW_ACK}"
    ));
    let f = parse(&data);
    same_inner(&f, &parse(&inner));
    assert_eq!(icrc(&f), Some(IcrcStatus::Valid));
    let e = f.outer()[0].unwrap();
    assert!(f.outer()[1].is_none());
    assert!(matches!(e.link, Some(Link::Ethernet(h)) if h.dst == [2, 0, 0, 0, 0, 0x0b]));
    assert!(matches!(e.ip, Some(Ip::V4(h)) if h.src == [192, 0, 2, 1] && h.protocol == 47));
    let Tunnel::Gre { gre, erspan } = e.tunnel else {
        panic!("GRE")
    };
    assert_eq!((gre.proto, gre.sequence), (0x88BE, Some(5)));
    let erspan = erspan.unwrap();
    assert_eq!(
        (erspan.version, erspan.session_id, erspan.truncated),
        (1, 0x155, false)
    );
    assert_eq!((e.inner_start, e.inner_len), (50, 62));
    assert_eq!(
        (f.inner_offset(), f.wire_len(), f.mirror_truncated()),
        (50, 62, false)
    );
    let built = Mirror::ErspanII { session: 0x155 }.wrap(&inner, 62, 5, 0);
    assert_eq!(built, (data.clone(), data.len()));
}

#[test]
fn erspan_type_iii_truncated_copies_are_unverifiable() {
    let hdr = |len: &str, id: &str, sum: &str| {
        format!(
            "{OUTER_ETH} 4500{len} {id}4000 402f{sum} c0000201 c0000202 \
             100022eb 0000{id} 20000403 00000064 0000000a"
        )
    };
    // The whole frame, T set anyway: the switch says it cut the copy, so the ICRC is not judged.
    let whole = hex(&(hdr("0066", "0006", "b65f") + WRITE_BW_ACK));
    let f = parse(&whole);
    let e = f.outer()[0].unwrap().erspan().unwrap();
    assert_eq!(
        (e.version, e.truncated, e.session_id, e.timestamp),
        (2, true, 3, 100)
    );
    assert_eq!((e.egress, e.granularity, e.platform), (true, 1, None));
    assert_eq!(icrc(&f), Some(IcrcStatus::Unverifiable));
    assert_eq!((f.malformed, f.mirror_truncated()), (None, true));
    // The copy cut before the ICRC (outer lengths say 58 bytes of a 62-byte frame): inner IP's length is
    // beyond the copy, which is the cut, not damage.
    let ack = hex(WRITE_BW_ACK);
    let mut cut = hex(&hdr("0062", "0007", "b662"));
    cut.extend_from_slice(&ack[..58]);
    let f = parse(&cut);
    assert_eq!(f.malformed, None);
    assert_eq!(icrc(&f), Some(IcrcStatus::Unverifiable));
    assert_eq!(f.roce.unwrap().bth.psn, parse(&ack).roce.unwrap().bth.psn);
    assert_eq!(f.wire_len(), 58);
    let built = Mirror::ErspanIII {
        session: 3,
        egress: true,
    }
    .wrap(&ack, 62, 6, 100);
    let mut expected = whole.clone();
    expected[14 + 20 + 8 + 2] &= !0x04; // the builder does not set T
    assert_eq!(built.0, expected);
}

#[test]
fn gre_teb_with_qinq_inside() {
    let inner = with_tags(&hex(WRITE_BW_ACK), "88a80064 81006003");
    let mut data = hex(&format!(
        "{OUTER_ETH} 4500005e 00094000 402fb664 c0000201 c0000202 00006558"
    ));
    data.extend_from_slice(&inner);
    let f = parse(&data);
    same_inner(&f, &parse(&inner));
    assert_eq!(f.vlans[0].map(|t| (t.tpid, t.vid)), Some((0x88A8, 100)));
    assert_eq!(f.vlans[1].map(|t| (t.pcp, t.vid)), Some((3, 3)));
    assert_eq!(icrc(&f), Some(IcrcStatus::Valid));
    assert!(matches!(
        f.outer()[0].unwrap().tunnel,
        Tunnel::Gre { erspan: None, .. }
    ));
    assert_eq!(Mirror::GreTeb.wrap(&inner, 70, 9, 0).0, data);
}

#[test]
fn vxlan_with_a_vlan_inside() {
    let inner = with_tags(&hex(WRITE_BW_ACK), "81006064");
    let mut data = hex(&format!(
        "{OUTER_ETH} 45000066 000a4000 4011b679 c0000201 c0000202 \
         c00a12b5 00520000 08000000 00abcd00"
    ));
    data.extend_from_slice(&inner);
    let f = parse(&data);
    same_inner(&f, &parse(&inner));
    assert_eq!(f.vlans[0].map(|t| (t.pcp, t.vid)), Some((3, 100)));
    let e = f.outer()[0].unwrap();
    assert_eq!(e.udp.map(|u| u.dst_port), Some(4789));
    let Tunnel::Vxlan(v) = e.tunnel else {
        panic!("VXLAN")
    };
    assert_eq!((v.flags, v.vni), (0x0800, 0xABCD));
    assert_eq!(icrc(&f), Some(IcrcStatus::Valid));
    assert_eq!(
        Mirror::Vxlan { vni: 0xABCD }.wrap(&inner, 66, 10, 0).0,
        data
    );
}

fn nest(frame: &[u8], depth: usize) -> Vec<u8> {
    (0..depth).fold(frame.to_vec(), |f, i| {
        let m = if i % 2 == 0 {
            Mirror::Vxlan { vni: 7 }
        } else {
            Mirror::ErspanII { session: 1 }
        };
        m.wrap(&f, f.len(), i as u32, 0).0
    })
}

#[test]
fn nesting_is_bounded() {
    let ack = hex(WRITE_BW_ACK);
    let two = nest(&ack, MAX_ENCAP);
    let f = parse(&two);
    same_inner(&f, &parse(&ack));
    assert!(matches!(f.outer()[0].unwrap().tunnel, Tunnel::Gre { .. }));
    assert!(matches!(f.outer()[1].unwrap().tunnel, Tunnel::Vxlan(_)));
    assert_eq!(f.wire_len(), 62);
    let three = nest(&ack, MAX_ENCAP + 1);
    let f = parse(&three);
    assert_eq!(
        f.malformed,
        Some(Malformed::new(
            Layer::Vxlan,
            MalformedKind::TooManyEncapsulations { limit: MAX_ENCAP }
        ))
    );
    assert!(f.outer().iter().all(|e| e.is_some()) && f.roce.is_none());
}

#[test]
fn every_prefix_of_a_nested_copy_is_a_cut() {
    let two = nest(&hex(WRITE_BW_ACK), 2);
    for len in 0..=two.len() {
        let f = parse_frame(1, &two[..len], two.len(), &Config::default());
        assert!(
            f.malformed.is_none_or(|m| m.is_snaplen()),
            "{len}: {:?}",
            f.malformed
        );
        if len < two.len() && f.roce.is_some_and(|r| r.payload_len.is_some()) {
            assert_eq!(icrc(&f), Some(IcrcStatus::Unverifiable), "{len}");
        }
        // A copy whose outer lengths claim the cut bytes is damage of the outer headers, never a panic.
        let _ = parse(&two[..len]);
    }
}

#[test]
fn bad_gre_and_erspan_headers() {
    // C, K and S set: 16 bytes of GRE header claimed, 8 present.
    let data = hex(&format!(
        "{OUTER_ETH} 4500001c 00014000 402f0000 c0000201 c0000202 b00088be 00000000"
    ));
    assert_eq!(
        parse(&data).malformed,
        Some(Malformed::new(
            Layer::Gre,
            MalformedKind::Truncated {
                needed: 16,
                available: 8
            }
        ))
    );
    // ERSPAN version 3 does not exist.
    let data = hex(&format!(
        "{OUTER_ETH} 45000024 00014000 402f0000 c0000201 c0000202 100088be 00000000 30000001 00000000"
    ));
    let f = parse(&data);
    assert_eq!(
        f.malformed,
        Some(Malformed::new(Layer::Erspan, MalformedKind::BadVersion(3)))
    );
    assert!(f.outer()[0].is_some() && f.link.is_none());
    // GRE carrying IPv4, or with a routing list, is not followed: the frame stays a GRE packet.
    for flags_proto in ["00000800", "400088be"] {
        let data = hex(&format!(
            "{OUTER_ETH} 4500001c 00014000 402f0000 c0000201 c0000202 {flags_proto} 00000000"
        ));
        let f = parse(&data);
        assert!(f.outer()[0].is_none() && f.ip.is_some() && f.malformed.is_none());
    }
}

#[derive(Default)]
struct Keys {
    keys: Vec<String>,
}

impl<'a> Visitor<'a> for Keys {
    fn header(&mut self, _title: &'static str, _offset: usize, _len: usize) {}
    fn field(&mut self, f: Field<'a>) {
        self.keys.push(f.key.to_string());
    }
    fn begin_outer(&mut self) {
        self.keys.push("(".into());
    }
    fn end_outer(&mut self) {
        self.keys.push(")".into());
    }
}

#[test]
fn visit_lists_the_outer_headers_first() {
    let inner = hex(WRITE_BW_ACK);
    let (data, _) = Mirror::ErspanII { session: 1 }.wrap(&inner, 62, 0, 0);
    let mut outer = Keys::default();
    parse(&data).visit(&mut outer);
    let mut direct = Keys::default();
    parse(&inner).visit(&mut direct);
    let close = outer.keys.iter().position(|k| k == ")").unwrap();
    assert_eq!(outer.keys[0], "(");
    assert_eq!(outer.keys[1], "eth.dst");
    for key in [
        "ip.src",
        "gre.proto",
        "gre.sequence_number",
        "erspan.spanid",
        "erspan.index",
    ] {
        assert!(outer.keys[..close].iter().any(|k| k == key), "{key}");
    }
    assert_eq!(outer.keys[close + 1..], direct.keys[..]);
    assert_eq!(Erspan::LEN_II, 8);
}

struct Kinds(Vec<String>);

impl<'a> Visitor<'a> for Kinds {
    fn header(&mut self, _title: &'static str, _offset: usize, _len: usize) {}
    fn field(&mut self, f: Field<'a>) {
        if parsers::fields::kind_of(f.key) != Some(f.value.kind()) {
            self.0.push(f.key.to_string());
        }
    }
}

#[test]
fn every_mirror_field_is_listed_with_its_kind() {
    let ack = hex(WRITE_BW_ACK);
    let mut frames: Vec<Vec<u8>> = [
        Mirror::ErspanII { session: 1 },
        Mirror::ErspanIII {
            session: 1,
            egress: true,
        },
        Mirror::GreTeb,
        Mirror::Vxlan { vni: 1 },
    ]
    .iter()
    .map(|m| m.wrap(&ack, ack.len(), 1, 1).0)
    .collect();
    // GRE's checksum, key and sequence number, ERSPAN III's platform subheader, VXLAN's GBP.
    frames.push(hex(&format!(
        "{OUTER_ETH} 45000038 00014000 402f0000 c0000201 c0000202 b00022eb 00000000 00000001 \
         00000002 20000001 00000000 00000001 0c000000 00000042"
    )));
    frames.push(hex(&format!(
        "{OUTER_ETH} 45000024 00014000 40110000 c0000201 c0000202 c00012b5 00100000 88000001 00000100"
    )));
    let mut wrong = Kinds(Vec::new());
    for f in &frames {
        let f = parse(f);
        assert!(f.outer()[0].is_some());
        f.visit(&mut wrong);
    }
    assert!(wrong.0.is_empty(), "{:?}", wrong.0);
}
