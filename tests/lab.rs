//! `rocescope capture` on real kernel RoCE: the Soft-RoCE lab (lab/README.md) boots its QEMU guest with this
//! test's own `rocescope` binary in it and runs the `capture_write` scenario: `ib_write_bw` between rxe0 and
//! rxe1, its client run as `rocescope capture -i eth0 -q -w own.pcapng --json -- ib_write_bw ...` inside the
//! guest, on one end of the cable, while QEMU's filter-dump records the same cable from the host.
//!
//! Asserted:
//! (a) the guest's own capture and the host-side cable capture hold the same RoCEv2 (UDP 4791) frames, byte
//!     for byte, in the same order in each direction (the two directions may interleave differently: the
//!     guest taps its TX path before the NIC and its RX path after it);
//! (b) capture's JSON report agrees with `rocescope analyze --json` of the host-side file: frames, RoCE frames,
//!     the flows (packets, bytes, opcodes, PSN first/last, messages), no gap, NAK, RNR NAK, retransmission or
//!     bad ICRC, verdict pass on both sides; and it equals `analyze --json` of the guest's own file;
//! (c) the wrapped command exited 0, and the write flow (10.0.0.1 -> 10.0.0.2, RC_WRITE_*) is among the flows
//!     that appeared while it ran;
//! (d) ib_write_bw's own output shows the test completed (32 iterations of 4096 bytes) on both sides.
//!
//! Needs what `lab/setup` installs (it is run here; idempotent, apt-get via sudo when not root, ~16 s the first
//! time) and about 20-50 s of emulated guest (TCG, no KVM needed). It fails, with the reason, when the lab
//! cannot run: it never skips. Everything runs under hard timeouts.
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use rocescope::source::FileSource;
use serde_json::Value;

mod lab_support;
use lab_support::{analyze_json, run_lab, tail};

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

fn flow_key(f: &Value) -> String {
    format!("{} -> {} QP {}", f["src"], f["dst"], f["dest_qp"])
}

/// The flows of a report by (source, destination, QP), with the fields both sides must agree on.
fn flow_summary(r: &Value) -> BTreeMap<String, Value> {
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
                flow_key(f),
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
                    "messages": f["messages"],
                    "icrc_bad": f["icrc_bad"],
                    "malformed": f["malformed"],
                }),
            )
        })
        .collect()
}

/// A report without what differs between a live capture and the same frames read back from its file.
fn comparable(r: &Value) -> Value {
    let mut r = r.clone();
    let o = r.as_object_mut().unwrap();
    o.remove("capture_stats");
    o["capture"].as_object_mut().unwrap().remove("file");
    r
}

#[test]
fn capture_in_the_soft_roce_lab_matches_the_cable() {
    let t0 = std::time::Instant::now();
    // --- the lab: packages and guest kernel (idempotent), then one guest run
    let (lab_out, setup_run_secs) = run_lab("lab-capture", &["capture_write"]);
    let sc = lab_out.join("capture_write");
    let perf_log = sc.join("perftest.log");

    // --- (a) the guest's own file and the host-side cable capture: same RoCE frames, byte for byte
    let cable = frames(&sc.join("cable.pcap"));
    let own = frames(&sc.join("own.pcapng"));
    let cable_dir = by_direction(&cable);
    let own_dir = by_direction(&own);
    let cable_roce: usize = cable_dir.values().map(Vec::len).sum();
    let own_roce: usize = own_dir.values().map(Vec::len).sum();
    assert!(
        cable_roce >= 160,
        "the cable carried {cable_roce} RoCE frames; ib_write_bw -s 4096 -n 32 at MTU 1024 makes at least 160"
    );
    assert_eq!(
        own_roce, cable_roce,
        "RoCE frames: the guest's capture has {own_roce}, the cable {cable_roce}"
    );
    assert_eq!(
        own_dir.keys().collect::<Vec<_>>(),
        cable_dir.keys().collect::<Vec<_>>(),
        "directions (source addresses) differ"
    );
    for (src, c) in &cable_dir {
        let g = &own_dir[src];
        assert_eq!(g.len(), c.len(), "frames from {src:?}");
        for (i, (a, b)) in g.iter().zip(c).enumerate() {
            assert!(
                a == b,
                "frame {} from {src:?} differs: guest {} bytes, cable {} bytes; first difference at byte {:?}",
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

    // --- (b) capture's report vs analyze on the host-side file (and on the guest's own file)
    let cap: Value = serde_json::from_slice(
        &fs::read(sc.join("capture.json")).expect("capture.json came back from the guest"),
    )
    .expect("capture.json is JSON");
    let host = analyze_json(&sc.join("cable.pcap"));
    let own_rep = analyze_json(&sc.join("own.pcapng"));
    assert_eq!(
        comparable(&cap),
        comparable(&own_rep),
        "capture's live report differs from analyze of the file it wrote"
    );
    let c = &cap["capture"];
    let h = &host["capture"];
    assert_eq!(c["roce_frames"].as_u64(), Some(cable_roce as u64));
    assert_eq!(c["roce_frames"], h["roce_frames"], "RoCE frames");
    // the guest's capture filter passes RoCE (and PFC) only; the cable cut may in principle hold other frames
    assert_eq!(
        c["frames"], c["roce_frames"],
        "the guest's capture: non-RoCE frames"
    );
    assert_eq!(
        h["frames"].as_u64().unwrap() - h["other_frames"].as_u64().unwrap(),
        c["frames"].as_u64().unwrap(),
        "frames"
    );
    for k in ["malformed", "icrc_bad", "icrc_unverifiable"] {
        assert_eq!(c[k].as_u64(), Some(0), "capture: {k}");
        assert_eq!(h[k].as_u64(), Some(0), "analyze: {k}");
    }
    // RoCE bytes: the cable may also carry a frame that is not RoCE (ARP, IPv6 neighbour discovery), which the
    // guest's capture filter leaves out.
    let roce_bytes = |r: &Value| {
        r["flows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["bytes"].as_u64().unwrap())
            .sum::<u64>()
    };
    assert_eq!(roce_bytes(&cap), roce_bytes(&host), "RoCE bytes");
    assert_eq!(cap["config"]["mtu"], host["config"]["mtu"], "path MTU");
    let cf = flow_summary(&cap);
    let hf = flow_summary(&host);
    assert_eq!(
        cf, hf,
        "per-flow results: capture (left) vs analyze of the cable (right)"
    );
    assert_eq!(cf.len(), 2, "one write flow and its ACK flow: {cf:#?}");
    for (k, f) in &cf {
        for n in [
            "gap_events",
            "missing",
            "retransmitted",
            "naks",
            "rnr_naks",
            "icrc_bad",
            "malformed",
        ] {
            assert_eq!(f[n].as_u64(), Some(0), "flow {k}: {n}");
        }
    }
    assert_eq!(
        cap["verdict"]["status"], "pass",
        "capture verdict: {}",
        cap["verdict"]
    );
    assert_eq!(
        host["verdict"]["status"], "pass",
        "analyze verdict: {}",
        host["verdict"]
    );

    // --- (c) the wrapped command and its flows
    let stats = &cap["capture_stats"];
    let command = &stats["command"];
    assert_eq!(
        command["exit_status"].as_i64(),
        Some(0),
        "command: {command}"
    );
    assert_eq!(stats["stopped_by"], "command");
    assert_eq!(stats["interface"], "eth0");
    assert_eq!(stats["linktype"].as_u64(), Some(1));
    assert_eq!(stats["dropped"].as_u64(), Some(0), "kernel drops: {stats}");
    assert_eq!(stats["written"]["frames"].as_u64(), Some(own.len() as u64));
    assert_eq!(stats["written"]["format"], "pcapng");
    let argv: Vec<&str> = command["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    let perf = fs::read_to_string(&perf_log).expect("perftest.log");
    let client_cmd = perf
        .lines()
        .find_map(|l| l.strip_prefix("+ client: "))
        .expect("the client command in perftest.log");
    assert_eq!(argv.join(" "), client_cmd, "the wrapped command");
    let flows = cap["flows"].as_array().unwrap();
    let write_flow = flows
        .iter()
        .find(|f| {
            f["src"] == "10.0.0.1"
                && f["dst"] == "10.0.0.2"
                && f["role"] == "requester"
                && f["opcodes"]["RC_WRITE_FIRST"].as_u64() == Some(32)
        })
        .unwrap_or_else(|| panic!("no write flow 10.0.0.1 -> 10.0.0.2 in {:#?}", cf));
    assert_eq!(write_flow["messages"]["count"].as_u64(), Some(32));
    assert_eq!(write_flow["messages"]["min_size"].as_u64(), Some(4096));
    assert_eq!(write_flow["messages"]["max_size"].as_u64(), Some(4096));
    let during: Vec<&Value> = command["flows"].as_array().unwrap().iter().collect();
    assert!(
        during.contains(&&write_flow["id"]),
        "the write flow #{} is not among the flows that appeared during the command: {during:?}",
        write_flow["id"]
    );

    // --- (d) ib_write_bw says it completed, on both sides
    let client = fs::read_to_string(sc.join("client.log")).expect("client.log");
    let result_line = |log: &str| {
        log.lines().any(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            w.len() >= 5 && w[0] == "4096" && w[1] == "32"
        })
    };
    assert!(
        client.contains("RDMA_Write BW Test") && result_line(&client),
        "ib_write_bw (client) shows no result line '4096 32 ...':\n{client}"
    );
    assert!(
        perf.contains("--- server output (exit 0)") && perf.contains("--- client output (exit 0)"),
        "perf_pair: server or client failed:\n{}",
        tail(&perf_log, 40)
    );
    let server = perf
        .split("--- server output (exit 0)")
        .nth(1)
        .and_then(|s| s.split("--- client output").next())
        .unwrap_or("");
    assert!(
        result_line(server),
        "ib_write_bw (server) shows no result line:\n{server}"
    );

    eprintln!(
        "lab capture_write: {cable_roce} RoCE frames identical in the guest's capture and on the cable \
         (the two directions interleave differently at {} positions), {} flows agree with analyze, verdict \
         pass; setup + guest run {setup_run_secs:.1} s, total {:.1} s",
        interleave_diff,
        cf.len(),
        t0.elapsed().as_secs_f64()
    );
}
