//! The NIC's counters held against a capture (`counters` in a live capture's report), on the hand-built
//! capture testdata/analysis/gap_nak_go_back_n.pcap with counter readings made up for it. What the capture
//! shows (its frames, written out by hand in the test): 10.0.0.1 sends PSNs 100, 101, 102, 105 (103 and 104
//! lost before the capture point), 103, 104, 105, 106 to QP 0x11: 8 requests, one go-back-N round; 10.0.0.2
//! answers with 3 packets, one of them a PSN sequence error NAK. A responder that got exactly these requests
//! found one ahead of the PSN it expected (105, while it expected 103) and none behind it (the second 105
//! comes after 103 and 104: it is the expected one, not a duplicate).
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use rocescope::host::counters::{Layout, PortPlace, PortValues, Snapshot};
use rocescope::report::counters::{Holds, NicCounters, build};
use rocescope::source::FileSource;

fn engine() -> rocescope::analysis::Engine {
    let file =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata/analysis/gap_nak_go_back_n.pcap");
    let mut source = FileSource::open(&file).unwrap();
    rocescope::pipeline::run(&mut source, &Default::default(), &mut (), ())
        .unwrap()
        .engine
}

fn place(device: &str, netdev: &str, addr: &str) -> PortPlace {
    PortPlace {
        device: device.into(),
        port: 1,
        netdevs: vec![netdev.into()],
        addresses: vec![addr.parse::<IpAddr>().unwrap()],
    }
}

fn values(device: &str, v: &[(&str, u64)]) -> PortValues {
    PortValues {
        device: device.into(),
        port: 1,
        hw_counters: v.iter().map(|(n, x)| (n.to_string(), *x)).collect(),
        counters: BTreeMap::new(),
    }
}

fn nic(before: &[(&str, &[(&str, u64)])], after: &[(&str, &[(&str, u64)])]) -> NicCounters {
    let layout = Layout {
        ports: vec![
            place("rxe0", "eth0", "10.0.0.1"),
            place("mlx5_0", "ens1", "10.0.0.2"),
            place("rxe9", "eth9", "10.9.9.9"),
        ],
        extra: vec!["eth0".into()],
    };
    let at = Instant::now();
    let snap = |s: &[(&str, &[(&str, u64)])], at| Snapshot {
        at,
        ports: s.iter().map(|(d, v)| values(d, v)).collect(),
        netdevs: Vec::new(),
    };
    build(
        &engine(),
        &layout,
        &snap(before, at),
        &snap(after, at + Duration::from_secs(2)),
        "eth0",
        0,
    )
}

fn relation<'a>(
    n: &'a NicCounters,
    device: &str,
    counter: &str,
) -> &'a rocescope::report::counters::Relation {
    n.relations
        .iter()
        .find(|r| r.device == device && r.counter == counter)
        .unwrap_or_else(|| panic!("no relation for {device} {counter}: {:?}", n.relations))
}

#[test]
fn counters_that_match_the_capture_hold() {
    let zero: &[(&str, u64)] = &[
        ("sent_pkts", 100),
        ("rcvd_pkts", 50),
        ("rcvd_seq_err", 0),
        ("completer_retry_err", 0),
        ("duplicate_request", 0),
    ];
    let rxe0: &[(&str, u64)] = &[
        ("sent_pkts", 108),
        ("rcvd_pkts", 53),
        ("rcvd_seq_err", 1),
        ("completer_retry_err", 1),
        ("duplicate_request", 0),
    ];
    let m0: &[(&str, u64)] = &[
        ("out_of_sequence", 0),
        ("duplicate_request", 0),
        ("packet_seq_err", 0),
    ];
    let m1: &[(&str, u64)] = &[
        ("out_of_sequence", 1),
        ("duplicate_request", 0),
        ("packet_seq_err", 0),
    ];
    let n = nic(
        &[("rxe0", zero), ("mlx5_0", m0), ("rxe9", zero)],
        &[("rxe0", rxe0), ("mlx5_0", m1), ("rxe9", rxe0)],
    );
    assert_eq!(n.disagreements, 0, "{:#?}", n.relations);
    assert_eq!(n.interval_s, 2.0);
    let who: Vec<(&str, &str)> = n.ports.iter().map(|p| (p.device.as_str(), p.why)).collect();
    assert_eq!(
        who,
        [("rxe0", "interface"), ("mlx5_0", "address")],
        "rxe9 is neither"
    );
    let r = relation(&n, "rxe0", "sent_pkts");
    assert_eq!((r.nic, r.capture, r.relation), (8, 8, Holds::Equal));
    assert_eq!(
        (
            relation(&n, "rxe0", "rcvd_pkts").nic,
            relation(&n, "rxe0", "rcvd_pkts").capture
        ),
        (3, 3)
    );
    assert_eq!(
        relation(&n, "rxe0", "rcvd_seq_err").capture,
        1,
        "the NAK sent to 10.0.0.1"
    );
    assert_eq!(
        relation(&n, "rxe0", "completer_retry_err").capture,
        1,
        "one go-back-N round"
    );
    assert_eq!(
        relation(&n, "mlx5_0", "out_of_sequence").capture,
        1,
        "105 while 103 was expected"
    );
    assert_eq!(
        relation(&n, "mlx5_0", "duplicate_request").capture,
        0,
        "the second 105 was expected"
    );
    assert_eq!(
        relation(&n, "mlx5_0", "packet_seq_err").capture,
        0,
        "no NAK was sent to 10.0.0.2"
    );
    assert_eq!(
        n.ports[0].deltas.len(),
        4,
        "what moved: duplicate_request did not"
    );
}

#[test]
fn counters_that_do_not_match_say_which_way() {
    let a: &[(&str, u64)] = &[
        ("sent_pkts", 0),
        ("duplicate_request", 0),
        ("rcvd_seq_err", 0),
    ];
    // rxe0 sent 2 more than the wire shows; counts a duplicate the capture's responder model does not; got
    // 2 NAKs where the capture saw 1 (the NIC's count may only be lower)
    let b: &[(&str, u64)] = &[
        ("sent_pkts", 10),
        ("duplicate_request", 1),
        ("rcvd_seq_err", 2),
    ];
    let n = nic(&[("rxe0", a)], &[("rxe0", b)]);
    assert_eq!(n.disagreements, 3, "{:#?}", n.relations);
    let sent = relation(&n, "rxe0", "sent_pkts");
    assert!(!sent.holds);
    assert!(
        sent.meaning
            .as_deref()
            .unwrap()
            .starts_with("the NIC counted 2 more than the capture saw"),
        "{sent:?}"
    );
    let dup = relation(&n, "rxe0", "duplicate_request");
    assert_eq!((dup.nic, dup.capture), (1, 0));
    let seq = relation(&n, "rxe0", "rcvd_seq_err");
    assert_eq!((seq.relation, seq.holds), (Holds::AtMost, false));
    // a counter that went backwards (a reset) is not held against anything
    let n = nic(&[("rxe0", b)], &[("rxe0", a)]);
    assert!(n.relations.is_empty());
}
