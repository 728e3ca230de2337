//! The injector on datagrams built byte by byte (parsers::builder), each expectation worked out from the
//! rule's words: which transmission of which PSN of which flow it names.
use parsers::aeth::Aeth;
use parsers::builder::RoceFrame;
use parsers::icrc::{self, NetHeader};
use parsers::opcode::rc;

use super::rules::{Action, Class, Rule};
use super::{Decision, Injector, edit};

/// The IPv4 datagram of a frame (after its 14-byte Ethernet header, to the IPv4 total length).
fn datagram(frame: &RoceFrame) -> Vec<u8> {
    let bytes = frame.build();
    let l3 = &bytes[14..];
    let total = usize::from(u16::from_be_bytes([l3[2], l3[3]]));
    l3[..total].to_vec()
}

fn write(psn: u32, dest_qp: u32) -> Vec<u8> {
    let mut f = RoceFrame::new(rc::WRITE_ONLY);
    f.bth.psn = psn;
    f.bth.dest_qp = dest_qp;
    f.payload = vec![0xab; 64];
    datagram(&f)
}

/// An ACK (syndrome 0) or NAK (0x60) from 10.0.0.2 back to 10.0.0.1's QP `dest_qp`.
fn answer(psn: u32, dest_qp: u32, syndrome: u8) -> Vec<u8> {
    let mut f = RoceFrame::new(rc::ACKNOWLEDGE);
    f.bth.psn = psn;
    f.bth.dest_qp = dest_qp;
    f.ext.aeth = Some(Aeth { syndrome, msn: 1 });
    if let parsers::builder::Net::V4(h) = &mut f.net {
        (h.src, h.dst) = ([10, 0, 0, 2], [10, 0, 0, 1]);
    }
    datagram(&f)
}

fn injector(rules: &[&str]) -> Injector {
    Injector::new(rules.iter().map(|r| Rule::parse(r).unwrap()).collect())
}

fn acted(d: Decision) -> Option<(usize, Action, u32, u32)> {
    match d {
        Decision::Act { rule, action, seen } => Some((rule, action, seen.psn, seen.resend)),
        Decision::Pass => None,
    }
}

/// `req qp=0 psn=+5 drop`: the first transmission of the first requester flow's sixth PSN, only it: not
/// its resend, not the same PSN offset of the second flow.
#[test]
fn a_drop_takes_the_first_transmission_of_the_psn_named() {
    let mut inj = injector(&["req qp=0 psn=+5 drop"]);
    let mut got = Vec::new();
    for psn in 1000..1010 {
        got.push(acted(inj.decide(&write(psn, 0x11))));
        got.push(acted(inj.decide(&write(psn + 50, 0x12))));
    }
    // go-back-N from 1005: its resend passes
    got.push(acted(inj.decide(&write(1005, 0x11))));
    let acts: Vec<_> = got.into_iter().flatten().collect();
    assert_eq!(acts, [(0, Action::Drop, 1005, 0)]);
    assert_eq!(
        (
            inj.counts.seen,
            inj.counts.roce,
            inj.counts.matched,
            inj.counts.acted
        ),
        (21, 21, 1, 1)
    );
}

/// `resp psn=+3 drop` acts on the responder's answers, not on requests of the same PSN; `resend=1` the
/// second transmission; `times=all` on every match.
#[test]
fn directions_resends_and_times() {
    let mut inj = injector(&["resp psn=+3 drop"]);
    assert_eq!(acted(inj.decide(&write(3, 0x11))), None);
    for psn in 0..3 {
        assert_eq!(acted(inj.decide(&answer(psn, 0x21, 0))), None);
    }
    assert_eq!(
        acted(inj.decide(&answer(3, 0x21, 0))),
        Some((0, Action::Drop, 3, 0))
    );

    let mut inj = injector(&["req psn=7 resend=1 ce"]);
    let first = acted(inj.decide(&write(7, 0x11)));
    let second = acted(inj.decide(&write(7, 0x11)));
    let third = acted(inj.decide(&write(7, 0x11)));
    assert_eq!(
        (first, second, third),
        (None, Some((0, Action::Ce, 7, 1)), None)
    );

    let mut inj = injector(&[
        "resp class=nak times=all drop",
        "resp class=ack times=2 duplicate",
    ]);
    let classes: Vec<_> = [(0, 0), (1, 0x60), (2, 0), (3, 0x60), (4, 0)]
        .iter()
        .map(|&(psn, syn)| acted(inj.decide(&answer(psn, 0x21, syn))).map(|a| a.1))
        .collect();
    assert_eq!(
        classes,
        [
            Some(Action::Duplicate),
            Some(Action::Drop),
            Some(Action::Duplicate),
            Some(Action::Drop),
            None
        ]
    );
    assert_eq!(inj.counts.by_rule, [2, 2]);
    assert_eq!((inj.counts.matched, inj.counts.acted), (5, 4));
}

/// Not RoCE (another UDP port, a damaged or cut datagram) passes, counted as seen only.
#[test]
fn what_is_not_roce_passes() {
    let mut inj = injector(&["any times=all drop"]);
    let mut other = write(1, 0x11);
    other[22..24].copy_from_slice(&53u16.to_be_bytes());
    let good = write(1, 0x11);
    for d in [
        &other[..],
        &good[..30],
        &[0x45][..],
        &[][..],
        &[0x60; 60][..],
    ] {
        assert_eq!(inj.decide(d), Decision::Pass);
    }
    assert_eq!((inj.counts.seen, inj.counts.roce), (5, 0));
    assert!(
        matches!(inj.decide(&good), Decision::Act { seen, .. } if seen.class == Class::Request)
    );
}

fn icrc_ok(d: &[u8]) -> bool {
    let (ip, rest) = d.split_at(20);
    let (udp, rest) = rest.split_at(8);
    let (transport, tail) = rest.split_at(rest.len() - 4);
    icrc::compute(NetHeader::Ipv4(ip), Some(udp), transport).to_be_bytes() == tail
}

/// CE: ECN 3, the IPv4 checksum right again, the ICRC still right (it masks the TOS byte). Corrupt: one
/// bit flipped, the ICRC wrong, the IPv4 header unchanged.
#[test]
fn ce_and_corrupt_bytes() {
    let mut d = write(9, 0x11);
    assert!(icrc_ok(&d));
    assert_eq!(edit::mark_ce(&mut d), Some(0));
    assert_eq!(d[1] & 3, 3);
    assert_eq!(
        parsers::ipv4::checksum(&d[..20]),
        0,
        "a right header sums to 0"
    );
    assert!(icrc_ok(&d));

    let before = write(9, 0x11);
    let mut d = before.clone();
    let at = edit::corrupt(&mut d).unwrap();
    assert_eq!(at, d.len() - 5);
    let differ: Vec<_> = (0..d.len()).filter(|&i| d[i] != before[i]).collect();
    assert_eq!(differ, [at]);
    assert_eq!(d[at] ^ before[at], 1);
    assert!(!icrc_ok(&d));

    // With a UDP checksum set, it is made right for the flipped bit.
    let mut f = RoceFrame::new(rc::WRITE_ONLY);
    f.udp_checksum = 0x1234;
    f.payload = vec![1; 8];
    let mut d = datagram(&f);
    edit::corrupt(&mut d).unwrap();
    let mut pseudo = d[12..20].to_vec();
    pseudo.extend_from_slice(&[0, 17]);
    pseudo.extend_from_slice(&((d.len() - 20) as u16).to_be_bytes());
    pseudo.extend_from_slice(&d[20..]);
    assert_eq!(parsers::ipv4::checksum(&pseudo), 0);

    // Too short to hold a BTH and an ICRC: nothing to flip.
    assert_eq!(edit::corrupt(&mut [0x45; 30]), None);
    assert_eq!(edit::mark_ce(&mut [0x41; 10]), None);
}
