//! Loss localised between capture points on real Soft-RoCE traffic: the lab (lab/README.md) boots its guest
//! with this test's `rocescope` in it and a lossy hop on the cable (`lab/run points_write`): `ib_write_bw -s
//! 4096 -n 50 -t 4` (rxe0 -> rxe1) under the guest's own capture (`rocescope capture -i eth0 -w own.pcapng`,
//! the guest's clock), the host's dumps of the two ends of the cable, cable.pcap (eth0's end) and
//! cable-b.pcap (eth1's end, both the host's clock), and between the two ends `lab/relay.py`, which drops
//! every 25th RoCE frame from eth0 to eth1 and every 5th back, and writes what it dropped to drops.pcap.
//!
//! Asserted from tshark's decoding of the four files, not from rocescope: that the hop dropped what it says
//! (cable.pcap less cable-b.pcap one way, the reverse the other way) and that the guest's capture holds what
//! eth0's end of the cable carried; then `rocescope analyze --points own.pcapng cable.pcap cable-b.pcap`
//! must localise every dropped frame to the hop (its flow, PSN and direction), report nothing lost on the
//! guest-to-cable segment and nothing missed, and state offsets that the frame times allow: a point's offset
//! against the point before it is the middle of `[-min r, min d]` (d: a request's time at the point less
//! its time at the one before, r: a response's time at the one before less its time at the point), and the
//! frame times of the two host dumps, which share one clock, allow them the offset 0. Then the same three captures exported
//! as the points of one path (`export --points`) and the fleet job on one machine (jobs/duckdb/fleet.sql):
//! its `per_segment` finds the same loss, segment by segment and each way.
//!
//! Needs what `lab/setup` installs (it is run here) and about 20 s of emulated guest. It fails, with the
//! reason, when the lab cannot run: it never skips.
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

mod lab_support;
use lab_support::{bin, run_lab, tshark_fields};

/// A RoCE frame's identity across captures (as rocescope matches them: flow, PSN, opcode, ICRC, IP ID).
type Key = (String, String, u64, u64, u64, String, String);

/// One RoCE frame: its identity and its time in nanoseconds.
struct Seen {
    key: Key,
    request: bool,
    ns: i128,
}

fn int(s: &str) -> u64 {
    lab_support::number(s).unwrap_or_else(|| panic!("tshark left a field empty"))
}

/// tshark's `frame.time_epoch` ("1796139384.253488660") in nanoseconds, without a float's rounding.
fn epoch_ns(s: &str) -> i128 {
    let (secs, frac) = s.split_once('.').unwrap_or((s, ""));
    let frac = format!("{frac:0<9}");
    i128::from(int(secs)) * 1_000_000_000 + i128::from(int(&frac[..9]))
}

fn roce_frames(path: &Path) -> Vec<Seen> {
    let fields = [
        "frame.time_epoch",
        "ip.src",
        "ip.dst",
        "udp.dstport",
        "infiniband.bth.destqp",
        "infiniband.bth.opcode",
        "infiniband.bth.psn",
        "infiniband.invariant.crc",
        "ip.id",
    ];
    tshark_fields(path, &fields)
        .into_iter()
        .filter(|f| f[3] == "4791")
        .map(|f| {
            let op = int(&f[5]);
            Seen {
                // RC requests: SEND, WRITE, READ request (0-12), the atomics (19, 20), SEND with
                // invalidate (22, 23)
                request: op < 13 || matches!(op, 19 | 20 | 22 | 23),
                ns: epoch_ns(&f[0]),
                key: (
                    f[1].clone(),
                    f[2].clone(),
                    int(&f[4]),
                    op,
                    int(&f[6]),
                    f[7].clone(),
                    f[8].clone(),
                ),
            }
        })
        .collect()
}

fn count(frames: &[Seen], request: bool) -> BTreeMap<Key, i64> {
    let mut m = BTreeMap::new();
    for f in frames.iter().filter(|f| f.request == request) {
        *m.entry(f.key.clone()).or_default() += 1;
    }
    m
}

/// `a` less `b`, as multisets: what `a` holds that `b` does not.
fn less(a: &BTreeMap<Key, i64>, b: &BTreeMap<Key, i64>) -> BTreeMap<Key, i64> {
    a.iter()
        .filter_map(|(k, n)| {
            let left = n - b.get(k).copied().unwrap_or(0);
            (left > 0).then(|| (k.clone(), left))
        })
        .collect()
}

/// The interval `[-min r, min d]` that a point's clock offset against the reference must lie in (ns).
fn offset_interval(reference: &[Seen], point: &[Seen]) -> (i128, i128) {
    let mut at_ref: BTreeMap<&Key, i128> = BTreeMap::new();
    for f in reference {
        at_ref.entry(&f.key).or_insert(f.ns);
    }
    let (mut min_d, mut min_r) = (i128::MAX, i128::MAX);
    for f in point {
        if let Some(&t0) = at_ref.get(&f.key) {
            if f.request {
                min_d = min_d.min(f.ns - t0);
            } else {
                min_r = min_r.min(t0 - f.ns);
            }
        }
    }
    assert!(
        min_d < i128::MAX && min_r < i128::MAX,
        "no frame in common both ways"
    );
    (-min_r, min_d)
}

#[test]
fn loss_between_two_host_dumps_and_the_guests_own_capture() {
    let (out, secs) = run_lab("lab_points", &["points_write"]);
    let dir = out.join("points_write");
    let [own, cable, cable_b, drops] =
        ["own.pcapng", "cable.pcap", "cable-b.pcap", "drops.pcap"].map(|f| dir.join(f));
    let (f_own, f_cable, f_b, f_drops) = (
        roce_frames(&own),
        roce_frames(&cable),
        roce_frames(&cable_b),
        roce_frames(&drops),
    );
    // The hop dropped what it says it dropped, and only that.
    let (drop_fwd, drop_rev) = (count(&f_drops, true), count(&f_drops, false));
    let sum = |m: &BTreeMap<Key, i64>| m.values().sum::<i64>();
    assert!(
        sum(&drop_fwd) >= 3 && sum(&drop_rev) >= 3,
        "too few drops to test: {} requests, {} responses",
        sum(&drop_fwd),
        sum(&drop_rev)
    );
    assert_eq!(less(&count(&f_cable, true), &count(&f_b, true)), drop_fwd);
    assert_eq!(less(&count(&f_b, false), &count(&f_cable, false)), drop_rev);
    assert!(less(&count(&f_b, true), &count(&f_cable, true)).is_empty());
    assert!(less(&count(&f_cable, false), &count(&f_b, false)).is_empty());
    // The guest's capture holds what eth0's end of the cable carried, both ways.
    for request in [true, false] {
        assert_eq!(count(&f_own, request), count(&f_cable, request));
    }

    let o = Command::new(bin())
        .args(["analyze", "--json", "--points"])
        .args([&own, &cable, &cable_b])
        .output()
        .expect("run rocescope analyze --points");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    let names = [&own, &cable, &cable_b].map(|p| p.display().to_string());
    let seg = &r["segments"];
    assert_eq!(
        (&seg[0]["lost_forward"], &seg[0]["lost_reverse"]),
        (&0.into(), &0.into()),
        "{seg}"
    );
    assert_eq!(seg[1]["lost_forward"], sum(&drop_fwd), "{seg}");
    assert_eq!(seg[1]["lost_reverse"], sum(&drop_rev), "{seg}");
    for i in 0..3 {
        assert_eq!(r["points"][i]["missed"], 0, "point {i}");
    }
    assert_eq!(r["lost_events"], sum(&drop_fwd) + sum(&drop_rev));
    // Every lost_between event is a dropped frame: flow, PSN, and the point that saw it last.
    let mut got: Vec<(String, String, String, u64, u64)> = r["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            assert_eq!(e["kind"], "lost_between");
            let d = &e["detail"];
            let s = |k: &str| d[k].as_str().unwrap().to_string();
            (
                s("from"),
                s("src"),
                s("dst"),
                d["dest_qp"].as_u64().unwrap(),
                e["psn"].as_u64().unwrap(),
            )
        })
        .collect();
    let mut want: Vec<(String, String, String, u64, u64)> = Vec::new();
    for (from, m) in [(&names[1], &drop_fwd), (&names[2], &drop_rev)] {
        for (k, n) in m {
            for _ in 0..*n {
                want.push((from.clone(), k.0.clone(), k.1.clone(), k.2, k.4));
            }
        }
    }
    got.sort();
    want.sort();
    assert_eq!(got, want);

    // The clock offsets: each point against the one before it, the middle of what the frame times allow
    // (the interval [-min r, min d] of the two captures), added up along the path, bounds too.
    let (mut off_before, mut bound_before) = (0i128, 0i128);
    let (mut steps, mut guest) = (Vec::new(), (0, 0));
    for (i, before, f) in [(1, &f_own, &f_cable), (2, &f_cable, &f_b)] {
        let p = &r["points"][i];
        let (lo, hi) = offset_interval(before, f);
        let off = (p["clock_offset_us"].as_f64().unwrap() * 1e3).round() as i128;
        let bound = (p["clock_offset_bound_us"].as_f64().unwrap() * 1e3).round() as i128;
        assert_eq!(p["offset_from"], "both directions");
        let (step, step_bound) = (off - off_before, bound - bound_before);
        assert!(
            (step - (lo + hi) / 2).abs() <= 2 && (step_bound - (hi - lo) / 2).abs() <= 2,
            "point {i}: offset {step} ± {step_bound} ns against the point before, not the middle of \
             [{lo}, {hi}]"
        );
        (off_before, bound_before) = (off, bound);
        steps.push((lo, hi));
        if i == 1 {
            guest = (off, bound);
        }
    }
    // cable.pcap and cable-b.pcap share the host's clock: the frame times allow them the offset 0.
    let (lo, hi) = steps[1];
    assert!(
        lo <= 0 && 0 <= hi,
        "the two host dumps (one clock) cannot be 0 apart: [{lo}, {hi}] ns"
    );

    // The fleet job on one machine (jobs/duckdb/fleet.sql) over the export of the three points finds the
    // same loss per segment, without clocks: the drops on the hop, nothing between the guest and the cable.
    let export = out.join("export");
    let o = Command::new(bin())
        .args(["export", "--parquet"])
        .arg(&export)
        .arg("--points")
        .args([&own, &cable, &cable_b])
        .output()
        .expect("run rocescope export --points");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let sql = lab_support::root().join("jobs/duckdb/fleet.sql");
    let o = Command::new("python3")
        .args([
            "-c",
            "import duckdb, sys; c = duckdb.connect(); c.execute('SET VARIABLE root = ?', [sys.argv[1]]); \
             c.execute(open(sys.argv[2]).read()).fetchall(); \
             [print(*r, sep='\\t') for r in c.sql('SELECT segment, lost_forward, lost_reverse \
             FROM per_segment ORDER BY segment').fetchall()]",
        ])
        .arg(&export)
        .arg(&sql)
        .output()
        .expect("run python3 with duckdb (scripts/test installs it)");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        format!("0\t0\t0\n1\t{}\t{}\n", sum(&drop_fwd), sum(&drop_rev))
    );
    eprintln!(
        "lab_points: {secs:.1} s; hop dropped {} requests and {} responses; guest clock offset {} ± {} ns",
        sum(&drop_fwd),
        sum(&drop_rev),
        guest.0,
        guest.1
    );
}
