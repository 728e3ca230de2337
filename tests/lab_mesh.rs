//! `rocescope gen agent` and `gen mesh` on real kernel RoCE: the Soft-RoCE lab (lab/README.md) runs two agents,
//! a on rxe0 (10.0.0.1) and b on rxe1 (10.0.0.2), and `gen mesh --pattern pairs --op write -s 4096 -n 256
//! --lossless --json` over them, on a clean cable (mesh_clean) and with netem dropping 3% of eth0's egress
//! (mesh_loss: a's requests to b, a's ACKs to b's requests); and `--pattern ring --op write` (mesh_ring: a->b
//! and b->a at once, each agent serving and requesting at the same time); and `--probe --window 2 --windows 2
//! --probe-rate 10` (mesh_probe).
//!
//! Each agent captures its NIC (`--capture eth0`, `eth1`): each pair's fabric check is in its outcome.
//!
//! Held, with figures derived independently of the program: the pairs the pattern must run (a->b, b->a, one at
//! a time), the messages and bytes asked for, the request packets each pair's requester sent (each 4096-byte
//! WRITE is 4 packets at rxe's path MTU of 1024; tshark counts them on the cable, resends included) against its
//! port's sent_pkts, the sequence error NAKs b sent (tshark) against its out_of_seq_request, and the suspects
//! the two-host logic allows (every pair goes through both hosts, so "host a or host b").
//!
//! Needs what `lab/setup` installs (it is run here). It fails, with the reason, when the lab cannot run.
use std::fs;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

mod lab_support;
use lab_support::run_lab;

fn mesh(dir: &Path) -> Value {
    let text = fs::read_to_string(dir.join("mesh.json"))
        .unwrap_or_else(|e| panic!("{}: {e} (did the guest return it?)", dir.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("mesh.json: {e}: {text}"))
}

/// Frames on the cable as (ip.src, AETH syndrome or None) for UDP 4791.
fn cable(dir: &Path) -> Vec<(String, Option<u64>)> {
    let o = Command::new("tshark")
        .args(["-n", "-r"])
        .arg(dir.join("cable.pcap"))
        .args([
            "-Y",
            "udp.dstport == 4791",
            "-T",
            "fields",
            "-E",
            "occurrence=f",
        ])
        .args(["-e", "ip.src", "-e", "infiniband.aeth.syndrome"])
        .output()
        .expect("run tshark");
    assert!(
        o.status.success(),
        "tshark: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| {
            let mut v = l.split('\t');
            let src = v.next().unwrap_or("").to_string();
            let syn = v.next().and_then(|s| {
                s.strip_prefix("0x")
                    .map_or_else(|| s.parse().ok(), |h| u64::from_str_radix(h, 16).ok())
            });
            (src, syn)
        })
        .collect()
}

fn pair<'a>(m: &'a Value, src: &str, dst: &str) -> &'a Value {
    m["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["src"] == src && p["dst"] == dst)
        .unwrap_or_else(|| panic!("no pair {src}->{dst}: {m:#}"))
}

fn counter(p: &Value, end: &str, name: &str) -> u64 {
    p["outcome"][format!("{end}_counters")][name]
        .as_u64()
        .unwrap_or(0)
}

#[test]
fn mesh_of_two_agents_on_soft_roce() {
    let (out, secs) = run_lab(
        "lab-mesh",
        &["mesh_clean", "mesh_ring", "mesh_probe", "mesh_loss"],
    );
    eprintln!("lab run: {secs:.1} s");

    let clean = out.join("mesh_clean");
    let m = mesh(&clean);
    assert_eq!(m["pattern"], "pairs");
    assert_eq!(
        m["rounds"], 2,
        "two hosts one pair at a time: a->b, then b->a"
    );
    assert_eq!(
        (m["passed"].as_u64(), m["failed"].as_u64()),
        (Some(2), Some(0)),
        "{m:#}"
    );
    assert_eq!(m["suspects"], serde_json::json!([]));
    let frames = cable(&clean);
    // requests: the frames without an AETH (WRITEs); a->b's go from 10.0.0.1, b->a's from 10.0.0.2
    let requests = |src: &str| {
        frames
            .iter()
            .filter(|f| f.0 == src && f.1.is_none())
            .count() as u64
    };
    for (src, dst, from) in [("a", "b", "10.0.0.1"), ("b", "a", "10.0.0.2")] {
        let p = pair(&m, src, dst);
        assert_eq!(p["pass"], true, "{p:#}");
        let o = &p["outcome"];
        assert_eq!(o["messages"], 256);
        assert_eq!(o["bytes"], 256 * 4096);
        assert_eq!(o["data_check"], "passed");
        assert!(o["gbps"].as_f64().unwrap() > 0.0);
        // a clean cable: 4 packets per WRITE, none resent; the requester's port counted them
        assert_eq!(
            requests(from),
            1024,
            "{src}->{dst}: WRITE packets on the cable"
        );
        assert_eq!(
            counter(p, "requester", "sent_pkts"),
            1024,
            "{src}->{dst}: {o:#}"
        );
        assert_eq!(
            counter(p, "responder", "rcvd_pkts"),
            1024,
            "{src}->{dst}: {o:#}"
        );
        assert_eq!(o["shared"], false);
        // the requester's agent captured its NIC: the fabric check passed
        assert_eq!(o["capture"]["pass"], true, "{o:#}");
    }

    // the ring of two: both pairs in one round, each host in two pairs at once (its counters shared)
    let ring = out.join("mesh_ring");
    let m = mesh(&ring);
    assert_eq!(
        (m["rounds"].as_u64(), m["passed"].as_u64()),
        (Some(1), Some(2)),
        "{m:#}"
    );
    let frames = cable(&ring);
    for (src, dst, from) in [("a", "b", "10.0.0.1"), ("b", "a", "10.0.0.2")] {
        let p = pair(&m, src, dst);
        assert_eq!(
            (p["round"].as_u64(), p["outcome"]["shared"].as_bool()),
            (Some(0), Some(true))
        );
        assert_eq!(p["outcome"]["messages"], 256, "{p:#}");
        assert_eq!(p["outcome"]["data_check"], "passed");
        // each host's port sent its own WRITEs and the ACKs of the other pair: the WRITE packets alone are on
        // the cable as frames without an AETH
        let writes = frames
            .iter()
            .filter(|f| f.0 == from && f.1.is_none())
            .count();
        assert_eq!(writes, 1024, "{src}->{dst}: WRITE packets on the cable");
    }

    // probes: two windows, both pairs at once in each; the probes each pair's requester completed are the
    // WRITE frames (one 64-byte packet each) of its direction on the cable, over both windows
    let probe = out.join("mesh_probe");
    let text = fs::read_to_string(probe.join("mesh.json")).unwrap();
    let windows: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(windows.len(), 2, "{text}");
    let frames = cable(&probe);
    for (src, dst, from) in [("a", "b", "10.0.0.1"), ("b", "a", "10.0.0.2")] {
        let mut probes = 0;
        for (i, w) in windows.iter().enumerate() {
            assert_eq!(w["window"], i as u64);
            let p = pair(w, src, dst);
            assert_eq!(p["pass"], true, "{p:#}");
            let o = &p["outcome"];
            assert!(o["p50_us"].as_f64().unwrap() > 0.0, "{o:#}");
            // rxe stamps no completions
            assert_eq!(o["completion_timestamps"], false, "{o:#}");
            probes += o["messages"].as_u64().unwrap();
        }
        let writes = frames
            .iter()
            .filter(|f| f.0 == from && f.1.is_none())
            .count() as u64;
        assert_eq!(
            probes, writes,
            "{src}->{dst}: probes against WRITE frames on the cable"
        );
        // 10 a second for 2 s, twice
        assert!((38..=42).contains(&probes), "{src}->{dst}: {probes} probes");
    }

    let loss = out.join("mesh_loss");
    let m = mesh(&loss);
    let frames = cable(&loss);
    let ab = pair(&m, "a", "b");
    assert_eq!(
        ab["pass"], false,
        "3% of a's 1024 requests lost and none resent? {ab:#}"
    );
    let naks = frames
        .iter()
        .filter(|f| f.0 == "10.0.0.2" && f.1 == Some(0x60))
        .count() as u64;
    assert!(naks > 0, "no sequence error NAK from b on the cable");
    assert_eq!(
        counter(ab, "responder", "out_of_seq_request"),
        naks,
        "{ab:#}"
    );
    let kinds: Vec<&str> = ab["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["kind"].as_str().unwrap())
        .collect();
    assert!(
        kinds.iter().all(|k| ["loss", "capture"].contains(k)),
        "{kinds:?}"
    );
    // a's capture is after netem (Linux taps egress after the qdisc): the requests netem dropped are gaps there,
    // and their resends retransmissions
    let c = &ab["outcome"]["capture"];
    assert_eq!(c["pass"], false, "{c:#}");
    assert!(c["retransmitted"].as_u64().unwrap() > 0, "{c:#}");
    assert!(kinds.contains(&"capture"), "{kinds:?}");
    assert!(
        ab["reasons"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["end"] == "responder"
                && r["counter"] == "out_of_seq_request"
                && r["delta"] == naks),
        "{ab:#}"
    );
    // b->a: only a's ACKs crossed the lossy egress; it fails exactly when a loss counter moved
    let ba = pair(&m, "b", "a");
    let moved = [
        "completer_retry_err",
        "rcvd_seq_err",
        "retry_exceeded_err",
        "rcvd_rnr_err",
    ]
    .iter()
    .any(|c| counter(ba, "requester", c) > 0)
        || ["duplicate_request", "out_of_seq_request", "send_rnr_err"]
            .iter()
            .any(|c| counter(ba, "responder", c) > 0);
    let ba_capture = ba["outcome"]["capture"]["pass"] == true;
    assert_eq!(ba["pass"], !moved && ba_capture, "{ba:#}");
    let moved = moved || !ba_capture;
    // every pair runs through both hosts: nothing tells them apart
    let s = &m["suspects"];
    assert_eq!(s.as_array().unwrap().len(), 1, "{s:#}");
    assert_eq!(s[0]["components"], serde_json::json!(["host a", "host b"]));
    // both pairs failed: a clean suspect; only a->b: b->a clears both hosts, a partial one
    assert_eq!(s[0]["partial"], !moved, "{s:#}");
    let log = fs::read_to_string(loss.join("mesh.log")).unwrap();
    assert!(log.contains("exit 3"), "{log}");
}

#[test]
fn a_fabric_of_four_hosts_on_soft_roce() {
    let (out, secs) = run_lab("lab-fabric", &["fabric4"]);
    eprintln!("lab run: {secs:.1} s");
    fabric(&out.join("fabric4"));
}

/// fabric4: four hosts on one bridge (in the guest), every pair one at a time, `--lossless`, the topology one
/// switch. Clean: all 12 pairs pass, no suspect. With 10% of h3's link lost both ways (netem on the bridge port
/// towards h3 and on h3's own veth): exactly the 6 pairs with h3 fail, and the one suspect is h3's host, NIC
/// and link (nothing in the results tells the three apart; the switch is cleared by the other pairs); one probe
/// window on the lossy fabric names the same within its 3 s. With h4's link slowed to 512 kbit/s (tbf) and every
/// pair held to 1.5 Mb/s, h4 alone; slowed toward h4 only, an incast names that direction of its link.
fn fabric(dir: &Path) {
    let read = |name: &str| -> Value {
        serde_json::from_str(&fs::read_to_string(dir.join(name)).unwrap()).unwrap()
    };
    let with = |h: &'static str| move |p: &Value| p["src"] == h || p["dst"] == h;
    let h3 = serde_json::json!(["host h3", "link h3-br0", "nic h3/rxe_h3"]);
    let h4 = serde_json::json!(["host h4", "link h4-br0", "nic h4/rxe_h4"]);
    // clean: every pair passes, nothing suspected
    let clean = read("clean.json");
    assert_eq!(clean["rounds"], 6);
    held(&clean, "clean", |_| false, None);
    // 10% of h3's link lost both ways: exactly h3's 6 pairs fail, h3's host, NIC and link one suspect
    let lossy = read("lossy.json");
    held(&lossy, "lossy", with("h3"), Some(&h3));
    let log = fs::read_to_string(dir.join("lossy.log")).unwrap();
    assert!(log.contains("exit 3"), "{log}");
    // one probe window of 3 s on the lossy fabric, all 12 pairs at once: each pair's own fabric check (the
    // agents capture their veths) fails exactly the pairs with h3, and the window names h3 alone
    let probe = read("probe.json");
    assert_eq!(probe["window"], 0);
    assert_eq!(probe["pairs"].as_array().unwrap().len(), 12);
    assert!(
        probe["pairs"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["outcome"]["shared"] == true)
    );
    held(&probe, "probe", with("h3"), Some(&h3));
    // h4's link at 512 kbit/s both ways (tbf), every pair held to 1.5 Mb/s: exactly the 6 pairs with h4 fail,
    // slower than expected, and the one suspect is h4's host, NIC and link
    let slow = read("slow.json");
    held(&slow, "slow", with("h4"), Some(&h4));
    for p in slow["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| with("h4")(p))
    {
        let gbps = p["outcome"]["gbps"].as_f64().unwrap();
        let why = p["why"].as_str().unwrap_or("");
        assert!(gbps < 0.0015 && why.contains("expected 1.5Mb/s"), "{p:#}");
    }
    // Then h4's link slow toward h4 only (tbf on its bridge port) and `--pattern incast-3:1` (the three others
    // into each host in turn): exactly the round into h4 fails, and the one suspect is that direction of its
    // link, the receiver's (h4's own sends, in the other rounds, clear its host, NIC and link as a whole)
    let incast = read("incast.json");
    assert_eq!(incast["rounds"], 4, "{incast:#}");
    held(
        &incast,
        "incast",
        |p| p["dst"] == "h4",
        Some(&serde_json::json!(["link br0->h4"])),
    );
    assert_eq!(
        incast["suspects"][0]["implicated"],
        serde_json::json!(["h1->h4", "h2->h4", "h3->h4"])
    );
}

/// A mesh run held to its facts: the pairs `bad` names fail and the first suspect, clean, is `suspect` (none
/// when `None`); any other pair passes, or fails on a loss the run really had, which the emulated guest's
/// network makes now and then on its own (seen once on a "clean" fabric beside a build: h3->h1 with one
/// sequence error NAK its responder counted, and the resend): that pair's reasons say so (the NIC's loss
/// counters, or the wire's resends and NAKs), at most two such pairs, and what they add to the suspects is
/// partial.
fn held(run: &Value, name: &str, bad: impl Fn(&Value) -> bool, suspect: Option<&Value>) {
    let mut stray = 0;
    for p in run["pairs"].as_array().unwrap() {
        if bad(p) {
            assert_eq!(p["pass"], false, "{name}: {p:#}");
        } else if p["pass"] == false {
            let why = p["why"].as_str().unwrap_or("");
            assert!(
                [
                    "out_of_seq_request",
                    "duplicate_request",
                    "retransmitted",
                    "NAK"
                ]
                .iter()
                .any(|w| why.contains(w)),
                "{name}: a pair failed without a loss: {p:#}"
            );
            stray += 1;
        }
    }
    assert!(
        stray <= 2,
        "{name}: {stray} pairs lost packets on their own: {run:#}"
    );
    let suspects = run["suspects"].as_array().unwrap();
    match suspect {
        Some(s) => {
            assert_eq!(&suspects[0]["components"], s, "{name}: {run:#}");
            assert_eq!(suspects[0]["partial"], false, "{name}");
        }
        None => assert!(
            suspects.is_empty() || stray > 0,
            "{name}: suspects on a clean run: {run:#}"
        ),
    }
    for s in suspects.iter().skip(usize::from(suspect.is_some())) {
        assert_eq!(
            s["partial"], true,
            "{name}: a second clean suspect: {run:#}"
        );
    }
}
