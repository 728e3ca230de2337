//! Issue scenario 5, `rocescope capture` on real kernel RoCE: the Soft-RoCE lab (lab/README.md) boots its QEMU
//! guest with this test's own `rocescope` binary in it and runs capture_write, capture_send and capture_read in
//! one guest: `ib_write_bw`, `ib_send_bw` and `ib_read_bw` (-s 4096 -n 32) between rxe0 and rxe1, each client run
//! as `rocescope capture -i eth0 -q -w own.pcapng --json -- TOOL ...` inside the guest, on one end of the cable,
//! while QEMU's filter-dump records the same cable from the host.
//!
//! Asserted, for each tool:
//! (a) the guest's own capture and the host-side cable capture hold the same RoCEv2 (UDP 4791) frames, byte
//!     for byte, in the same order in each direction (the two directions may interleave differently: the
//!     guest taps its TX path before the NIC and its RX path after it);
//! (b) the cable, read by tshark, holds what the parameters make: two flows, the requests to the QPN and from
//!     the PSN that perftest printed, 32 messages of 4096 bytes at perftest's path MTU (1024: 4 packets each):
//!     WRITE or SEND First/Middle/Last on consecutive PSNs answered by ACKs up to the last PSN, or 32 READ
//!     requests 4 PSNs apart answered by 128 READ responses First/Middle/Last on consecutive PSNs;
//! (c) capture's JSON report equals `rocescope analyze --json` of the guest's own file and agrees with analyze
//!     of the host-side file (frames, RoCE frames and bytes, path MTU, per flow: role, packets, bytes, opcodes,
//!     PSN first/last, messages, ACKs, READ responses), and both agree with (b): the requester's PSN range is
//!     the 128 PSNs the 32 messages take, WRITE/SEND make 32 messages of 4096 bytes, READ 128 KiB of response
//!     payload; no gap, NAK, RNR NAK, retransmission or bad ICRC, verdict pass on both sides;
//! (d) the wrapped command exited 0 (argv: the client command perf_pair ran), no kernel drops, and the
//!     requester flow is among the flows that appeared while it ran;
//! (e) the tool's own output shows the test completed (32 iterations of 4096 bytes) on both sides.
//!
//! Needs what `lab/setup` installs (it is run here; idempotent, apt-get via sudo when not root, ~16 s the first
//! time) and about 20-60 s of emulated guest (TCG, no KVM needed). It fails, with the reason, when the lab
//! cannot run: it never skips. Everything runs under hard timeouts.
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use rocescope::source::FileSource;
use serde_json::Value;

mod lab_support;
use lab_support::{analyze_json, analyze_json_with, run_lab, tail, tshark_fields};

/// The frames of a capture file (Ethernet), in file order.
fn frames(path: &Path) -> Vec<Vec<u8>> {
    let mut src = FileSource::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut v = Vec::new();
    while let Some(p) = src
        .next_packet()
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    {
        assert_eq!(p.linktype, 1, "{}: not Ethernet", path.display());
        assert_eq!(
            p.data.len(),
            p.orig_len as usize,
            "{}: frame {} cut by the snap length",
            path.display(),
            v.len() + 1
        );
        v.push(p.data.to_vec());
    }
    v
}

/// Source IPv4 address if the frame is Ethernet/IPv4/UDP to port 4791 (RoCEv2), else None.
fn roce_src(f: &[u8]) -> Option<[u8; 4]> {
    if f.len() < 14 + 20 + 8 || f[12..14] != [0x08, 0x00] || f[14] >> 4 != 4 {
        return None;
    }
    let ip = &f[14..];
    let ihl = usize::from(ip[0] & 0x0f) * 4;
    if ip[9] != 17 || ip.len() < ihl + 8 {
        return None;
    }
    (u16::from_be_bytes([ip[ihl + 2], ip[ihl + 3]]) == 4791)
        .then(|| [ip[12], ip[13], ip[14], ip[15]])
}

/// RoCEv2 frames per source address, each direction in capture order.
fn by_direction(v: &[Vec<u8>]) -> BTreeMap<[u8; 4], Vec<&[u8]>> {
    let mut m: BTreeMap<[u8; 4], Vec<&[u8]>> = BTreeMap::new();
    for f in v {
        if let Some(src) = roce_src(f) {
            m.entry(src).or_default().push(f);
        }
    }
    m
}

/// perftest's parameters in capture_perf (lab/guest/scenarios.sh): -s 4096 -n 32.
const SIZE: u64 = 4096;
const ITERS: u64 = 32;
const PSN_MOD: u64 = 1 << 24;

/// BTH opcodes with rocescope's names: FIRST, MIDDLE, LAST, ONLY of a segmented operation, or the one
/// packet of an operation that takes one whatever its length (a READ request).
type Ops = &'static [(u64, &'static str)];

/// One perftest tool under `rocescope capture`.
struct Case {
    scenario: &'static str,
    /// perftest's banner
    title: &'static str,
    requests: Ops,
    /// READ responses; `None`: the responder answers with ACKs, coalesced as it likes
    responses: Option<Ops>,
}

const CASES: [Case; 3] = [
    Case {
        scenario: "capture_write",
        title: "RDMA_Write BW Test",
        requests: &[
            (0x06, "RC_WRITE_FIRST"),
            (0x07, "RC_WRITE_MIDDLE"),
            (0x08, "RC_WRITE_LAST"),
            (0x0a, "RC_WRITE_ONLY"),
        ],
        responses: None,
    },
    Case {
        scenario: "capture_send",
        title: "Send BW Test",
        requests: &[
            (0x00, "RC_SEND_FIRST"),
            (0x01, "RC_SEND_MIDDLE"),
            (0x02, "RC_SEND_LAST"),
            (0x04, "RC_SEND_ONLY"),
        ],
        responses: None,
    },
    Case {
        scenario: "capture_read",
        title: "RDMA_Read BW Test",
        requests: &[(0x0c, "RC_READ_REQUEST")],
        responses: Some(&[
            (0x0d, "RC_READ_RESPONSE_FIRST"),
            (0x0e, "RC_READ_RESPONSE_MIDDLE"),
            (0x0f, "RC_READ_RESPONSE_LAST"),
            (0x10, "RC_READ_RESPONSE_ONLY"),
        ]),
    },
];
const ACK: (u64, &str) = (0x11, "RC_ACKNOWLEDGE");

/// The packets one message of `k` path-MTU segments makes, per opcode.
fn per_message(ops: Ops, k: u64) -> Vec<((u64, &'static str), u64)> {
    match *ops {
        [one] => vec![(one, 1)],
        [first, middle, last, _] if k > 1 => vec![(first, 1), (middle, k - 2), (last, 1)]
            .into_iter()
            .filter(|(_, c)| *c > 0)
            .collect(),
        [.., only] => vec![(only, 1)],
        [] => unreachable!(),
    }
}

/// What perftest printed about its connection (the client's view).
struct PerfInfo {
    mtu: u64,
    local_qpn: u64,
    local_psn: u64,
    remote_qpn: u64,
}

fn hex(s: &str) -> u64 {
    u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap_or_else(|e| panic!("{s}: {e}"))
}

fn perftest_info(log: &str) -> PerfInfo {
    let field = |prefix: &str, name: &str| {
        log.lines()
            .find(|l| l.trim_start().starts_with(prefix))
            .and_then(|l| {
                let w: Vec<&str> = l.split_whitespace().collect();
                w.iter().position(|t| *t == name).map(|i| hex(w[i + 1]))
            })
            .unwrap_or_else(|| panic!("no '{prefix} ... {name}' in perftest's output:\n{log}"))
    };
    let mtu = log
        .lines()
        .find_map(|l| l.trim().strip_prefix("Mtu"))
        .and_then(|r| r.trim_start_matches([' ', ':']).strip_suffix("[B]"))
        .and_then(|m| m.parse().ok())
        .unwrap_or_else(|| panic!("no 'Mtu : N[B]' in perftest's output:\n{log}"));
    PerfInfo {
        mtu,
        local_qpn: field("local address:", "QPN"),
        local_psn: field("local address:", "PSN"),
        remote_qpn: field("remote address:", "QPN"),
    }
}

type FlowKey = (String, String, u64);

/// One flow of the cable as tshark decodes it.
#[derive(Default, Debug)]
struct WireFlow {
    packets: u64,
    bytes: u64,
    opcodes: BTreeMap<u64, u64>,
    psns: Vec<u64>,
}

/// RoCEv2 flows (source, destination, BTH destination QP) of a capture, by tshark.
fn tshark_flows(path: &Path) -> BTreeMap<FlowKey, WireFlow> {
    let fields = [
        "ip.src",
        "ip.dst",
        "infiniband.bth.destqp",
        "infiniband.bth.opcode",
        "infiniband.bth.psn",
        "frame.len",
        "udp.dstport",
    ];
    let mut m: BTreeMap<FlowKey, WireFlow> = BTreeMap::new();
    for v in tshark_fields(path, &fields)
        .into_iter()
        .filter(|v| v[6] == "4791")
    {
        assert_eq!(v.len(), 7, "tshark line {v:?}");
        let num = |s: &str| -> u64 { s.parse().unwrap_or_else(|e| panic!("tshark {v:?}: {e}")) };
        let f = m
            .entry((v[0].to_string(), v[1].to_string(), hex(&v[2])))
            .or_default();
        f.packets += 1;
        f.bytes += num(&v[5]);
        *f.opcodes.entry(num(&v[3])).or_default() += 1;
        f.psns.push(num(&v[4]));
    }
    m
}

fn key(f: &Value) -> FlowKey {
    (
        f["src"].as_str().unwrap().to_string(),
        f["dst"].as_str().unwrap().to_string(),
        f["dest_qp"].as_u64().unwrap(),
    )
}

/// The flows of a report by (source, destination, QP), with the fields both sides must agree on.
fn flow_summary(r: &Value) -> BTreeMap<FlowKey, Value> {
    r["flows"]
        .as_array()
        .expect("flows")
        .iter()
        .map(|f| {
            let naks: u64 = f["naks"]
                .as_object()
                .expect("naks")
                .values()
                .map(|n| n.as_u64().unwrap())
                .sum();
            (
                key(f),
                serde_json::json!({
                    "role": f["role"],
                    "packets": f["packets"],
                    "bytes": f["bytes"],
                    "payload_bytes": f["payload_bytes"],
                    "opcodes": f["opcodes"],
                    "psn_first": f["psn"]["first"],
                    "psn_last": f["psn"]["last"],
                    "gap_events": f["psn"]["gap_events"],
                    "missing": f["psn"]["missing"],
                    "retransmitted": f["psn"]["retransmitted"],
                    "naks": naks,
                    "rnr_naks": f["rnr_naks"],
                    "acks": f["acks"],
                    "read_responses": f["read_responses"],
                    "messages": f["messages"],
                    "icrc_bad": f["icrc_bad"],
                    "malformed": f["malformed"],
                }),
            )
        })
        .collect()
}

/// A report without what differs between a live capture and the same frames read back from its file (the
/// capture's statistics and the NIC's counters beside it).
fn comparable(r: &Value) -> Value {
    let mut r = r.clone();
    let o = r.as_object_mut().unwrap();
    o.remove("capture_stats");
    o.remove("counters");
    o["capture"].as_object_mut().unwrap().remove("file");
    r
}

/// Checks one capture_* scenario (see the module comment); returns a one-line summary.
fn check_capture(lab_out: &Path, case: &Case) -> String {
    let name = case.scenario;
    let sc = lab_out.join(name);
    let perf_log = sc.join("perftest.log");
    let perf =
        fs::read_to_string(&perf_log).unwrap_or_else(|e| panic!("{name}: perftest.log: {e}"));
    let client = fs::read_to_string(sc.join("client.log"))
        .unwrap_or_else(|e| panic!("{name}: client.log: {e}"));

    // --- (e) the tool says it completed, on both sides
    let result_line = |log: &str| {
        log.lines().any(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            w.len() >= 5 && w[0] == SIZE.to_string() && w[1] == ITERS.to_string()
        })
    };
    assert!(
        client.contains(case.title) && result_line(&client),
        "{name}: the client shows no '{}' and result line '{SIZE} {ITERS} ...':\n{client}",
        case.title
    );
    assert!(
        perf.contains("--- server output (exit 0)") && perf.contains("--- client output (exit 0)"),
        "{name}: perf_pair: server or client failed:\n{}",
        tail(&perf_log, 40)
    );
    let server = perf
        .split("--- server output (exit 0)")
        .nth(1)
        .and_then(|s| s.split("--- client output").next())
        .unwrap_or("");
    assert!(
        result_line(server),
        "{name}: the server shows no result line:\n{server}"
    );

    // --- (a) the guest's own file and the host-side cable capture: same RoCE frames, byte for byte
    let cable = frames(&sc.join("cable.pcap"));
    let own = frames(&sc.join("own.pcapng"));
    let cable_dir = by_direction(&cable);
    let own_dir = by_direction(&own);
    let cable_roce: usize = cable_dir.values().map(Vec::len).sum();
    let own_roce: usize = own_dir.values().map(Vec::len).sum();
    assert_eq!(
        own_roce, cable_roce,
        "{name}: RoCE frames: the guest's capture has {own_roce}, the cable {cable_roce}"
    );
    assert_eq!(
        own_dir.keys().collect::<Vec<_>>(),
        cable_dir.keys().collect::<Vec<_>>(),
        "{name}: directions (source addresses) differ"
    );
    for (src, c) in &cable_dir {
        let g = &own_dir[src];
        assert_eq!(g.len(), c.len(), "{name}: frames from {src:?}");
        for (i, (a, b)) in g.iter().zip(c).enumerate() {
            assert!(
                a == b,
                "{name}: frame {} from {src:?} differs: guest {} bytes, cable {} bytes; first difference at byte {:?}",
                i + 1,
                a.len(),
                b.len(),
                a.iter().zip(b.iter()).position(|(x, y)| x != y)
            );
        }
    }
    let interleave_diff = own
        .iter()
        .filter(|f| roce_src(f).is_some())
        .zip(cable.iter().filter(|f| roce_src(f).is_some()))
        .filter(|(a, b)| a != b)
        .count();

    // --- (b) the cable by tshark, against what the parameters make
    let pi = perftest_info(&client);
    assert_eq!(
        pi.mtu, 1024,
        "{name}: perftest's path MTU (rxe's active MTU on the lab's 1500-byte NICs)"
    );
    let k = SIZE.div_ceil(pi.mtu);
    let psn0 = pi.local_psn;
    let psn = |i: u64| (psn0 + i) % PSN_MOD;
    let psn_last = psn(ITERS * k - 1);
    let req_key = (
        "10.0.0.1".to_string(),
        "10.0.0.2".to_string(),
        pi.remote_qpn,
    );
    let resp_key = ("10.0.0.2".to_string(), "10.0.0.1".to_string(), pi.local_qpn);
    let wire = tshark_flows(&sc.join("cable.pcap"));
    assert_eq!(
        wire.keys().collect::<Vec<_>>(),
        [&req_key, &resp_key],
        "{name}: the flows tshark finds on the cable"
    );
    assert_eq!(
        wire.values().map(|f| f.packets).sum::<u64>(),
        cable_roce as u64,
        "{name}: tshark's RoCE frames"
    );
    let counts = |ops: Ops| -> Vec<((u64, &'static str), u64)> {
        per_message(ops, k)
            .into_iter()
            .map(|(op, c)| (op, c * ITERS))
            .collect()
    };
    let codes = |v: &[((u64, &str), u64)]| -> BTreeMap<u64, u64> {
        v.iter().map(|((code, _), c)| (*code, *c)).collect()
    };
    let names = |v: &[((u64, &str), u64)]| -> Value {
        v.iter()
            .map(|((_, n), c)| (n.to_string(), Value::from(*c)))
            .collect::<serde_json::Map<_, _>>()
            .into()
    };
    let want_req = counts(case.requests);
    let (wreq, wresp) = (&wire[&req_key], &wire[&resp_key]);
    assert_eq!(
        wreq.opcodes,
        codes(&want_req),
        "{name}: request opcodes on the cable"
    );
    // a READ request takes k PSNs, every other request packet one
    let stride = if case.requests.len() == 1 { k } else { 1 };
    let want_psns: Vec<u64> = (0..wreq.packets).map(|i| psn(i * stride)).collect();
    assert_eq!(wreq.psns, want_psns, "{name}: request PSNs on the cable");
    let want_resp = match case.responses {
        Some(ops) => {
            let want = counts(ops);
            assert_eq!(
                wresp.opcodes,
                codes(&want),
                "{name}: READ responses on the cable"
            );
            let want_psns: Vec<u64> = (0..ITERS * k).map(psn).collect();
            assert_eq!(
                wresp.psns, want_psns,
                "{name}: READ response PSNs on the cable"
            );
            want
        }
        None => {
            // ACKs may be coalesced: each for a PSN of the range, increasing, the last for the last PSN
            let m = wresp.packets;
            assert_eq!(wresp.opcodes, BTreeMap::from([(ACK.0, m)]), "{name}: ACKs");
            assert!((1..=ITERS * k).contains(&m), "{name}: {m} ACKs");
            let offs: Vec<u64> = wresp
                .psns
                .iter()
                .map(|p| (p + PSN_MOD - psn0) % PSN_MOD)
                .collect();
            assert!(
                offs.windows(2).all(|w| w[0] < w[1]) && offs.iter().all(|o| *o < ITERS * k),
                "{name}: ACK PSNs {:?} not increasing within {psn0}..={psn_last}",
                wresp.psns
            );
            assert_eq!(wresp.psns.last(), Some(&psn_last), "{name}: the last ACK");
            vec![(ACK, m)]
        }
    };

    // --- (c) capture's report vs analyze of both files, and both vs (b)
    let cap: Value = serde_json::from_slice(
        &fs::read(sc.join("capture.json")).expect("capture.json came back from the guest"),
    )
    .unwrap_or_else(|e| panic!("{name}: capture.json is not JSON: {e}"));
    let host = analyze_json(&sc.join("cable.pcap"));
    // The live report holds the connection the wrapped perftest printed; analyze learns it from the same
    // printout (client.log).
    let client_log = sc.join("client.log");
    let own_rep = analyze_json_with(
        &sc.join("own.pcapng"),
        &["--expect", client_log.to_str().unwrap()],
    );
    assert_eq!(
        cap["connections"].as_array().map(Vec::len),
        Some(1),
        "{name}: the connection perftest printed: {}",
        cap["connections"]
    );
    assert_eq!(
        comparable(&cap),
        comparable(&own_rep),
        "{name}: capture's live report differs from analyze of the file it wrote"
    );
    let c = &cap["capture"];
    let h = &host["capture"];
    assert_eq!(c["roce_frames"].as_u64(), Some(cable_roce as u64), "{name}");
    assert_eq!(c["roce_frames"], h["roce_frames"], "{name}: RoCE frames");
    // the guest's capture filter passes RoCE (and PFC) only; the cable cut may in principle hold other frames
    assert_eq!(
        c["frames"], c["roce_frames"],
        "{name}: the guest's capture: non-RoCE frames"
    );
    assert_eq!(
        h["frames"].as_u64().unwrap() - h["other_frames"].as_u64().unwrap(),
        c["frames"].as_u64().unwrap(),
        "{name}: frames"
    );
    for k in ["malformed", "icrc_bad", "icrc_unverifiable"] {
        assert_eq!(c[k].as_u64(), Some(0), "{name}: capture: {k}");
        assert_eq!(h[k].as_u64(), Some(0), "{name}: analyze: {k}");
    }
    assert_eq!(
        cap["config"]["mtu"], host["config"]["mtu"],
        "{name}: path MTU"
    );
    assert_eq!(
        cap["config"]["mtu"].as_u64(),
        Some(pi.mtu),
        "{name}: path MTU"
    );
    let cf = flow_summary(&cap);
    let hf = flow_summary(&host);
    assert_eq!(
        cf, hf,
        "{name}: per-flow results: capture (left) vs analyze of the cable (right)"
    );
    assert_eq!(
        cf.keys().collect::<Vec<_>>(),
        wire.keys().collect::<Vec<_>>(),
        "{name}: flows: capture vs tshark"
    );
    let read = case.responses.is_some();
    for (fk, f, role, w, want) in [
        (&req_key, &cf[&req_key], "requester", wreq, &want_req),
        (&resp_key, &cf[&resp_key], "responder", wresp, &want_resp),
    ] {
        let what = format!("{name}: flow {fk:?} ({role})");
        assert_eq!(f["role"], role, "{what}");
        assert_eq!(
            f["packets"].as_u64(),
            Some(w.packets),
            "{what}: packets (tshark)"
        );
        assert_eq!(f["bytes"].as_u64(), Some(w.bytes), "{what}: bytes (tshark)");
        assert_eq!(f["opcodes"], names(want), "{what}: opcodes");
        // the requester's PSN range is what its 32 messages take; a responder's, the PSNs it answered
        let first = if role == "requester" { psn0 } else { w.psns[0] };
        assert_eq!(f["psn_first"].as_u64(), Some(first), "{what}: first PSN");
        assert_eq!(f["psn_last"].as_u64(), Some(psn_last), "{what}: last PSN");
        for n in [
            "gap_events",
            "missing",
            "retransmitted",
            "naks",
            "rnr_naks",
            "icrc_bad",
            "malformed",
        ] {
            assert_eq!(f[n].as_u64(), Some(0), "{what}: {n}");
        }
        let payload = if read == (role == "responder") {
            ITERS * SIZE
        } else {
            0
        };
        assert_eq!(
            f["payload_bytes"].as_u64(),
            Some(payload),
            "{what}: payload bytes"
        );
        let (acks, read_responses) = match (role, read) {
            ("responder", false) => (w.packets, 0),
            ("responder", true) => (0, w.packets),
            _ => (0, 0),
        };
        assert_eq!(f["acks"].as_u64(), Some(acks), "{what}: ACKs");
        assert_eq!(
            f["read_responses"].as_u64(),
            Some(read_responses),
            "{what}: READ responses"
        );
    }
    let msgs = &cf[&req_key]["messages"];
    if !read {
        assert_eq!(
            (
                &msgs["count"],
                &msgs["min_size"],
                &msgs["max_size"],
                &msgs["bytes"]
            ),
            (
                &ITERS.into(),
                &SIZE.into(),
                &SIZE.into(),
                &(ITERS * SIZE).into()
            ),
            "{name}: messages {msgs}"
        );
    }
    assert_eq!(
        cap["verdict"]["status"], "pass",
        "{name}: capture verdict: {}",
        cap["verdict"]
    );
    assert_eq!(
        host["verdict"]["status"], "pass",
        "{name}: analyze verdict: {}",
        host["verdict"]
    );

    // --- (d) the wrapped command and its flows
    let stats = &cap["capture_stats"];
    let command = &stats["command"];
    assert_eq!(
        command["exit_status"].as_i64(),
        Some(0),
        "{name}: command: {command}"
    );
    assert_eq!(stats["stopped_by"], "command", "{name}");
    assert_eq!(stats["interface"], "eth0", "{name}");
    assert_eq!(stats["linktype"].as_u64(), Some(1), "{name}");
    assert_eq!(
        stats["dropped"].as_u64(),
        Some(0),
        "{name}: kernel drops: {stats}"
    );
    assert_eq!(
        stats["written"]["frames"].as_u64(),
        Some(own.len() as u64),
        "{name}"
    );
    assert_eq!(stats["written"]["format"], "pcapng", "{name}");
    let argv: Vec<&str> = command["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    let client_cmd = perf
        .lines()
        .find_map(|l| l.strip_prefix("+ client: "))
        .unwrap_or_else(|| panic!("{name}: no client command in perftest.log"));
    assert_eq!(argv.join(" "), client_cmd, "{name}: the wrapped command");
    let req_id = cap["flows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| key(f) == req_key)
        .map(|f| f["id"].clone())
        .unwrap();
    let during: Vec<&Value> = command["flows"].as_array().unwrap().iter().collect();
    assert!(
        during.contains(&&req_id),
        "{name}: the requester flow #{req_id} is not among the flows that appeared during the command: {during:?}"
    );

    format!(
        "{name}: {cable_roce} RoCE frames identical in the guest's capture and on the cable (the directions \
         interleave differently at {interleave_diff} positions); QP {:#x} PSN {psn0}..{psn_last}: {} request \
         packets, {} {}; tshark, capture and analyze agree; verdict pass",
        pi.remote_qpn,
        wreq.packets,
        wresp.packets,
        if read { "READ responses" } else { "ACKs" }
    )
}

#[test]
fn capture_in_the_soft_roce_lab_matches_the_cable() {
    let t0 = std::time::Instant::now();
    // one guest for the three tools: a boot costs 15-60 s here
    let scenarios: Vec<&str> = CASES.iter().map(|c| c.scenario).collect();
    let (lab_out, setup_run_secs) = run_lab("lab-capture", &scenarios);
    let summary: Vec<String> = CASES.iter().map(|c| check_capture(&lab_out, c)).collect();
    eprintln!(
        "{}\nlab setup + guest run {setup_run_secs:.1} s, total {:.1} s",
        summary.join("\n"),
        t0.elapsed().as_secs_f64()
    );
}
