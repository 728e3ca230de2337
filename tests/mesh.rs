//! `gen mesh` against stand-in agents (TCP servers in this test that answer each task with an outcome made up
//! here): the controller's rounds, verdicts, suspects, text, JSON, SVG and Parquet, and its handling of agents
//! that lie or are not there. The outcomes are this test's, so every figure expected is worked out by hand
//! from them; the agents' real runs are tests/lab_mesh.rs'.
//!
//! Four hosts a, b, c, d, every pair one at a time (`--pattern pairs`, 6 rounds), `--lossless`: each pair
//! src->dst runs at (src + 1) + (dst + 1) / 10 Gb/s (a->b: 1.2); a pair with c counts loss (as requester,
//! completer_retry_err +2; as responder, duplicate_request +5); d's agent answers with a line that is not a
//! gen message. So 8 of 12 pairs fail: the 6 with c and d->a, d->b. The suspects: host c (its 6 pairs, none
//! passing), then for d->a and d->b the component whose pairs fail most often: host d (c->d, d->a, d->b,
//! d->c failed; a->d, b->d passed: 4 of 6; host a and host b fail 3 of 6).
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A stand-in agent for host `me` (index) on a port of its own; `ports` maps a peer's port to its index.
fn agent(me: usize, listener: TcpListener, ports: BTreeMap<u16, usize>, garbage: bool) {
    agent_with(me, listener, ports, garbage, None);
}

/// `probe`: the task must be a probe's (64-byte WRITEs one at a time for `--window` seconds at the rate
/// given); the outcome's median latency is 10 + 10 * src + dst us and c's device stamps completions.
fn agent_with(
    me: usize,
    listener: TcpListener,
    ports: BTreeMap<u16, usize>,
    garbage: bool,
    probe: Option<(f64, f64)>,
) {
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut rd = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            if rd.read_line(&mut line).is_err() {
                continue;
            }
            let mut wr = stream;
            if garbage {
                let _ = wr.write_all(b"this is not a gen message\n");
                continue;
            }
            let task: Value = serde_json::from_str(&line).unwrap();
            assert_eq!(task["msg"], "task");
            let dst = ports[&(task["peer_port"].as_u64().unwrap() as u16)];
            let mut requester = json!({"sent_pkts": 400});
            let mut responder = json!({"rcvd_pkts": 400});
            if let Some((window, rate)) = probe {
                let got = (
                    &task["op"],
                    &task["size"],
                    &task["depth"],
                    &task["qps"],
                    &task["duration"],
                    &task["rate"],
                    &task["iters"],
                );
                assert_eq!(
                    got,
                    (
                        &json!("write"),
                        &json!(64),
                        &json!(1),
                        &json!(1),
                        &json!(window),
                        &json!(rate),
                        &Value::Null
                    ),
                    "{task}"
                );
                let outcome = json!({
                    "msg": "outcome", "error": null, "messages": 2, "bytes": 128, "seconds": window,
                    "gbps": 0.001, "p50_us": (10 + 10 * me + dst) as f64, "p99_us": 50.0, "max_us": 60.0,
                    "completion_errors": 0, "data_check": "passed", "link_gbps": 25.0,
                    "requester_counters": {}, "responder_counters": {}, "shared": true,
                    "completion_timestamps": me == 2,
                });
                let _ = writeln!(wr, "{outcome}");
                continue;
            }
            if me == 2 {
                requester["completer_retry_err"] = json!(2);
            }
            if dst == 2 {
                responder["duplicate_request"] = json!(5);
            }
            let outcome = json!({
                "msg": "outcome", "error": null, "messages": 100, "bytes": 409600, "seconds": 0.5,
                "gbps": (me + 1) as f64 + (dst + 1) as f64 / 10.0, "p50_us": 10.0, "p99_us": 20.0,
                "max_us": 30.0, "completion_errors": 0, "data_check": "passed", "link_gbps": 25.0,
                "requester_counters": requester, "responder_counters": responder, "shared": false,
            });
            let _ = writeln!(wr, "{outcome}");
        }
    });
}

fn rocescope(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_rocescope"))
        .args(args)
        .output()
        .expect("run rocescope")
}

/// Stand-in agents for `names` (d, the fourth, answering with garbage), and the hosts file naming them.
fn stand_ins(dir: &Path, names: &[&str], probe: Option<(f64, f64)>) -> PathBuf {
    let listeners: Vec<TcpListener> = names
        .iter()
        .map(|_| TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    let ports: Vec<u16> = listeners
        .iter()
        .map(|l| l.local_addr().unwrap().port())
        .collect();
    let by_port: BTreeMap<u16, usize> = ports.iter().enumerate().map(|(i, p)| (*p, i)).collect();
    for (i, l) in listeners.into_iter().enumerate() {
        agent_with(i, l, by_port.clone(), i == 3, probe);
    }
    let hosts = dir.join("hosts");
    let text: String = names
        .iter()
        .zip(&ports)
        .map(|(n, p)| format!("{n} 127.0.0.1:{p}\n"))
        .collect();
    std::fs::write(&hosts, text).unwrap();
    hosts
}

fn tmp(name: &str) -> PathBuf {
    let d =
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn a_mesh_of_four_stand_in_agents() {
    let dir = tmp("mesh");
    let hosts = stand_ins(&dir, &["a", "b", "c", "d"], None);
    let (svg, parquet) = (dir.join("mesh.svg"), dir.join("run1").join("mesh.parquet"));
    std::fs::create_dir_all(parquet.parent().unwrap()).unwrap();
    let h = hosts.to_str().unwrap();
    let o = rocescope(&[
        "gen",
        "mesh",
        "--hosts",
        h,
        "--lossless",
        "--json",
        "--svg",
        svg.to_str().unwrap(),
        "--parquet",
        parquet.to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let m: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (
            m["rounds"].as_u64(),
            m["passed"].as_u64(),
            m["failed"].as_u64()
        ),
        (Some(6), Some(4), Some(8))
    );
    let pairs = m["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 12);
    let names = ["a", "b", "c", "d"];
    for p in pairs {
        let (s, d) = (p["src"].as_str().unwrap(), p["dst"].as_str().unwrap());
        let (si, di) = (
            names.iter().position(|n| *n == s).unwrap(),
            names.iter().position(|n| *n == d).unwrap(),
        );
        let fails = si == 2 || di == 2 || si == 3;
        assert_eq!(p["pass"], !fails, "{p:#}");
        let kinds: Vec<&str> = p["reasons"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["kind"].as_str().unwrap())
            .collect();
        if si == 3 {
            assert_eq!(kinds, ["error"], "{p:#}");
            let why = p["why"].as_str().unwrap();
            assert!(
                why.starts_with("agent d (127.0.0.1:")
                    && why.contains("not a rocescope gen message"),
                "{why}"
            );
        } else {
            assert_eq!(
                p["outcome"]["gbps"],
                (si + 1) as f64 + (di + 1) as f64 / 10.0
            );
            let want: Vec<&str> = [si == 2, di == 2]
                .iter()
                .filter(|x| **x)
                .map(|_| "loss")
                .collect();
            assert_eq!(kinds, want, "{p:#}");
        }
    }
    assert_eq!(
        m["suspects"],
        json!([
            {"components": ["host c"], "partial": false,
             "implicated": ["a->c", "b->c", "c->a", "c->b", "c->d", "d->c"], "cleared": []},
            {"components": ["host d"], "partial": true,
             "implicated": ["c->d", "d->a", "d->b", "d->c"], "cleared": ["a->d", "b->d"]},
        ])
    );
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert_eq!(svg.matches("<rect").count(), 16);
    assert_eq!(svg.matches("fill=\"#d03030\"").count(), 8);

    // the text report of the same mesh
    let o = rocescope(&["gen", "mesh", "--hosts", h, "--lossless"]);
    assert_eq!(o.status.code(), Some(3));
    let text = String::from_utf8_lossy(&o.stdout);
    let matrix: Vec<&str> = text.lines().skip(2).take(5).collect();
    assert_eq!(
        matrix,
        [
            "                a       b       c       d",
            "        a       -    1.20    FAIL    1.40",
            "        b    2.10       -    FAIL    2.40",
            "        c    FAIL    FAIL       -    FAIL",
            "        d    FAIL    FAIL    FAIL       -",
        ],
        "{text}"
    );
    assert!(
        text.contains("  suspect: host c (6 failing pair(s) through it, none passed)\n"),
        "{text}"
    );
    assert!(
        text.contains("  suspect (partial): host d (4 failing pair(s) through it, 2 passed)\n"),
        "{text}"
    );

    // the mesh table, read back, and the fleet jobs' mesh_hosts from it
    let expected = json!({
        "rows": 12,
        "mesh_hosts": [
            {"host": "a", "pairs": 6, "failed": 3, "failed_sending": 1, "failed_receiving": 2, "gbps_sending": 1.3},
            {"host": "b", "pairs": 6, "failed": 3, "failed_sending": 1, "failed_receiving": 2, "gbps_sending": 2.25},
            {"host": "c", "pairs": 6, "failed": 6, "failed_sending": 3, "failed_receiving": 3, "gbps_sending": null},
            {"host": "d", "pairs": 6, "failed": 4, "failed_sending": 3, "failed_receiving": 1, "gbps_sending": null},
        ],
    });
    let want = dir.join("expected.json");
    std::fs::write(&want, expected.to_string()).unwrap();
    let out = Command::new("python3")
        .arg(root().join("tests/python/mesh_check.py"))
        .arg(&dir)
        .arg(&want)
        .output()
        .expect("run python3");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "mesh_check.py:\n{said}");
    for job in [
        "parquet: 12 rows",
        "duckdb: mesh_hosts",
        "spark: mesh_hosts",
    ] {
        assert!(said.contains(job), "{said}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// An agent that is not there fails its pairs with the reason, in about --connect-timeout; a bad hosts file,
/// pattern or flag is one line and exit 1.
#[test]
fn an_agent_out_of_reach_and_bad_input() {
    let dir = tmp("mesh-unreachable");
    let free = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = free.local_addr().unwrap().port();
    drop(free);
    let live = TcpListener::bind("127.0.0.1:0").unwrap();
    let live_port = live.local_addr().unwrap().port();
    let by_port: BTreeMap<u16, usize> = [(live_port, 0), (port, 1)].into_iter().collect();
    agent(0, live, by_port, false);
    let hosts = dir.join("hosts");
    std::fs::write(
        &hosts,
        format!("a 127.0.0.1:{live_port}\nb 127.0.0.1:{port}\n"),
    )
    .unwrap();
    let h = hosts.to_str().unwrap();
    let o = rocescope(&[
        "gen",
        "mesh",
        "--hosts",
        h,
        "--connect-timeout",
        "1",
        "--json",
    ]);
    assert_eq!(
        o.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let m: Value = serde_json::from_slice(&o.stdout).unwrap();
    let ab = &m["pairs"][0];
    assert_eq!(
        (ab["src"].as_str(), ab["pass"].as_bool()),
        (Some("a"), Some(true)),
        "{m:#}"
    );
    let ba = &m["pairs"][1];
    let why = ba["why"].as_str().unwrap();
    assert!(
        why.starts_with(&format!("agent b (127.0.0.1:{port}): unreachable ("))
            && why.ends_with("start `rocescope gen agent` there"),
        "{why}"
    );

    for (args, want) in [
        (
            vec!["--pattern", "incast 2:1"],
            "needs 3 hosts; the hosts file has 2",
        ),
        (
            vec!["--pattern", "star"],
            "'star': pairs, ring, 'incast N:1', all-to-all or bisection expected",
        ),
        (vec!["--fault", "bad-rkey"], "--fault is not for gen mesh"),
        (
            vec!["--expect-gbps", "150%"],
            "'150%': Gb/s (25) or a share of the link speed (90%) expected",
        ),
    ] {
        let mut a = vec!["gen", "mesh", "--hosts", h];
        a.extend(args);
        let o = rocescope(&a);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            matches!(o.status.code(), Some(1) | Some(2)) && err.contains(want),
            "{a:?}: {err}"
        );
    }
    std::fs::write(&hosts, "a 10.0.0.1\na 10.0.0.2\n").unwrap();
    let o = rocescope(&["gen", "mesh", "--hosts", h]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("hosts file line 2: host 'a' named twice"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--probe`: two windows of every host probing its two targets (all of them, of three hosts), each window a
/// report with its number, the task a probe's (the stand-ins check it), the matrix of median RTTs and the
/// statement of what the RTT holds (a and b give no completion timestamps).
#[test]
fn probe_windows() {
    let dir = tmp("mesh-probe");
    let hosts = stand_ins(&dir, &["a", "b", "c"], Some((1.0, 4.0)));
    let h = hosts.to_str().unwrap();
    let probe = [
        "--probe",
        "--window",
        "1",
        "--windows",
        "2",
        "--probe-rate",
        "4",
        "--probe-targets",
        "2",
    ];
    let mut args = vec![
        "gen",
        "mesh",
        "--hosts",
        h,
        "--expect-p99-us",
        "100",
        "--json",
    ];
    args.extend(probe);
    let o = rocescope(&args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let docs: Vec<Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(docs.len(), 2);
    for (w, d) in docs.iter().enumerate() {
        assert_eq!(
            (d["window"].as_u64(), d["pattern"].as_str()),
            (Some(w as u64), Some("probe"))
        );
        assert_eq!(
            (d["passed"].as_u64(), d["failed"].as_u64()),
            (Some(6), Some(0)),
            "{d:#}"
        );
    }
    let args = [
        "gen",
        "mesh",
        "--hosts",
        h,
        "--probe",
        "--window",
        "1",
        "--windows",
        "1",
        "--probe-rate",
        "4",
        "--probe-targets",
        "2",
    ];
    let o = rocescope(&args);
    let text = String::from_utf8_lossy(&o.stdout);
    let want = "\
window 0: mesh: probe over 3 hosts, 1 round(s): 6 of 6 pairs pass
           (median RTT in us; rows send, columns receive)
                a       b       c
        a       -    11.0    12.0
        b    20.0       -    22.0
        c    30.0    31.0       -
  RTTs: completion latencies, the hosts' delay included (no completion timestamps from a, b)
";
    assert_eq!(text, want);
    let o = rocescope(&["gen", "mesh", "--hosts", h, "--probe", "--rate", "5"]);
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("--rate (with --probe: --probe-rate) is not for gen mesh")
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// An agent that takes its task and never answers (a hung host) fails its pair once the task's time and the
/// controller's slack (120 s) are up, with a reason that names it; the other pair of the round runs and passes.
#[test]
fn an_agent_that_hangs_is_named_not_waited_on() {
    let dir = tmp("mesh-hang");
    let hung = TcpListener::bind("127.0.0.1:0").unwrap();
    let live = TcpListener::bind("127.0.0.1:0").unwrap();
    let (hung_port, live_port) = (
        hung.local_addr().unwrap().port(),
        live.local_addr().unwrap().port(),
    );
    let by_port: BTreeMap<u16, usize> = [(hung_port, 0), (live_port, 1)].into_iter().collect();
    agent(1, live, by_port, false);
    // a: reads the task, holds the connection, says nothing
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in hung.incoming().flatten() {
            let mut line = String::new();
            let _ = BufReader::new(stream.try_clone().unwrap()).read_line(&mut line);
            held.push(stream);
        }
    });
    let hosts = dir.join("hosts");
    std::fs::write(
        &hosts,
        format!("a 127.0.0.1:{hung_port}\nb 127.0.0.1:{live_port}\n"),
    )
    .unwrap();
    let t0 = std::time::Instant::now();
    let o = rocescope(&[
        "gen",
        "mesh",
        "--hosts",
        hosts.to_str().unwrap(),
        "--pattern",
        "ring",
        "--timeout",
        "1",
        "--json",
    ]);
    let secs = t0.elapsed().as_secs_f64();
    assert_eq!(
        o.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let m: Value = serde_json::from_slice(&o.stdout).unwrap();
    let pair = |src: &str| {
        m["pairs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["src"] == src)
            .unwrap()
            .clone()
    };
    let (ab, ba) = (pair("a"), pair("b"));
    assert_eq!(ba["pass"], true, "{ba:#}");
    assert_eq!(ab["pass"], false);
    let why = ab["why"].as_str().unwrap();
    assert!(
        why.starts_with(&format!("agent a (127.0.0.1:{hung_port}): ")),
        "{why}"
    );
    // its task's 1 s and the 120 s of slack, not for ever
    assert!((121.0..140.0).contains(&secs), "{secs} s: {why}");
    let _ = std::fs::remove_dir_all(&dir);
}
