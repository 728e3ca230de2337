//! `rocescope gen server` / `gen client HOST` across the Soft-RoCE lab's cable between two guests (lab/run
//! boots two for the duo_* scenarios; lab/README.md), with this test's own binary in both guests.
//!
//! duo_gen: guest b (10.0.0.2) runs `gen server -d rxe0 --runs 5 --json`; guest a (10.0.0.1) runs
//! `gen client 10.0.0.2 -d rxe0 --op OP -s 4096 -n 32 --capture eth0 --json` for WRITE, WRITE with immediate,
//! SEND, READ and FETCH_ADD. Expected, from those parameters and the lab's set-up (1500-byte NICs: path MTU
//! 1024, so 4 packets per 4096-byte message; GID index 1 = ::ffff:10.0.0.x): per run, exit 0 and
//! `FABRIC CHECK: PASS`; the client's and the server's QPNs and PSNs agree with each other; the host-side
//! cable capture (`rocescope analyze`) has exactly the two flows of the run with the PSN ranges both ends
//! used, the opcode counts worked out below, no gap, NAK or retransmission; the server received (SEND, WRITE
//! with immediate) or found in its memory (WRITE, the atomic word) what was posted; tshark reads the
//! immediates 0..31 off the wire.
//! A sixth client run (WRITE, --duration 60 at 50 messages/s) gets SIGINT after 3 s: it stops posting, lets
//! the messages in flight complete, reports `stopped_by: "signal"` and exits 130; the server still gets the
//! count and checks those messages in its memory; the cable carries exactly that many.
//! A seventh (WRITE, --duration 60, --timeout 3) loses its server (kill -9 once its traffic flows): the client
//! ends on its own within seconds, exit 1, one line naming the silence and the QPs' states.

mod lab_support;

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::process::Command;

use lab_support::{analyze_json, run_lab};
use serde_json::Value;

fn u(v: &Value) -> u64 {
    v.as_u64()
        .unwrap_or_else(|| panic!("not an unsigned number: {v}"))
}

const N: u64 = 32;
/// 4096-byte messages over a 1024-byte path MTU.
const PPM: u64 = 4;

fn psn_add(p: u64, k: u64) -> u64 {
    (p + k) & 0xff_ffff
}

/// The opcodes each direction carries for `op`, worked out from the IBTA rules: a 4-packet message is
/// FIRST, 2 x MIDDLE, LAST; a READ request asks for 4 response packets; an atomic is one request and one
/// ATOMIC_ACKNOWLEDGE. ACK-only directions are not counted (coalescing).
fn expected_opcodes(op: &str) -> (BTreeMap<String, u64>, BTreeMap<String, u64>) {
    let m = |v: &[(&str, u64)]| {
        v.iter()
            .map(|(k, n)| (k.to_string(), *n))
            .collect::<BTreeMap<_, _>>()
    };
    let segmented = |p: &str, last: &str| {
        m(&[
            (&format!("{p}_FIRST"), N),
            (&format!("{p}_MIDDLE"), 2 * N),
            (&format!("{p}_{last}"), N),
        ])
    };
    match op {
        "write" => (segmented("RC_WRITE", "LAST"), m(&[("RC_ACKNOWLEDGE", 0)])),
        "write-imm" => (
            segmented("RC_WRITE", "LAST_IMM"),
            m(&[("RC_ACKNOWLEDGE", 0)]),
        ),
        "send" => (segmented("RC_SEND", "LAST"), m(&[("RC_ACKNOWLEDGE", 0)])),
        "read" => (
            m(&[("RC_READ_REQUEST", N)]),
            segmented("RC_READ_RESPONSE", "LAST"),
        ),
        "fetch-add" => (
            m(&[("RC_FETCH_ADD", N)]),
            m(&[("RC_ATOMIC_ACKNOWLEDGE", N)]),
        ),
        _ => unreachable!(),
    }
}

/// The server's JSON documents, one per client run.
fn server_runs(path: &Path) -> Vec<Value> {
    let text = fs::read_to_string(path).expect("b-server.json came back from guest b");
    serde_json::Deserializer::from_str(&text)
        .into_iter::<Value>()
        .map(|v| v.expect("server JSON"))
        .collect()
}

fn check_run(sc: &Path, op: &str, server: &Value) -> String {
    let name = format!("duo_gen {op}");
    let log = fs::read_to_string(sc.join(format!("client-{op}.log"))).expect("client log");
    assert_eq!(
        log.trim(),
        "FABRIC CHECK: PASS\nexit 0",
        "{name}: the client's standard error and exit status"
    );
    let g: Value =
        serde_json::from_slice(&fs::read(sc.join(format!("client-{op}.json"))).expect("json"))
            .unwrap_or_else(|e| panic!("{name}: client JSON: {e}"));
    assert_eq!(g["op"], op);
    assert!(g["error"].is_null(), "{name}: {}", g["error"]);
    assert_eq!(g["capture"]["check"]["status"], "pass", "{name}");
    assert_eq!(u(&g["messages"]), N, "{name}");
    assert_eq!(u(&g["mtu"]), 1024, "{name}: path MTU on 1500-byte NICs");
    let (req, resp) = (&g["requester"], &g["responder"]);
    assert_eq!(req["ip"], "10.0.0.1", "{name}");
    assert_eq!(resp["ip"], "10.0.0.2", "{name}");
    assert_eq!(resp["gid"], "::ffff:10.0.0.2", "{name}");

    // both ends agree on who is who
    assert_eq!(server["op"], op, "{name}: server run order");
    assert_eq!(
        server["client_qpns"][0], req["qpn"],
        "{name}: the server's peer QP"
    );
    let sq = &server["qps"][0];
    assert_eq!(sq["qpn"], resp["qpn"], "{name}");
    assert_eq!(
        sq["rq_psn"], req["sq_psn"],
        "{name}: the server expects the client's first PSN"
    );
    assert_eq!(sq["sq_psn"], resp["sq_psn"], "{name}");
    assert_eq!(u(&server["posted_by_client"][0]), N, "{name}");
    assert!(
        server["error"].is_null(),
        "{name}: server {}",
        server["error"]
    );
    assert_eq!(
        server["data_check"]["status"], "passed",
        "{name}: server {}",
        server["data_check"]
    );
    let (received, in_memory, server_checked) = match op {
        "send" | "write-imm" => (N, 0, N),
        "write" => (0, N, N),
        "fetch-add" => (0, 0, 1), // the remote word after the last atomic
        _ => (0, 0, 0),           // READ: the client checks what it read
    };
    assert_eq!(u(&server["received"]), received, "{name}: received");
    assert_eq!(
        u(&server["memory_checked"]),
        in_memory,
        "{name}: WRITE slots checked"
    );
    assert_eq!(
        u(&server["data_check"]["checked"]),
        server_checked,
        "{name}"
    );
    // the client's check: its own (READ data, atomic originals) plus the server's
    let client_own = if matches!(op, "read" | "fetch-add") {
        N
    } else {
        0
    };
    assert_eq!(
        u(&g["data_check"]["checked"]),
        client_own + server_checked,
        "{name}"
    );
    assert_eq!(g["data_check"]["status"], "passed", "{name}");

    // the host-side cable capture
    let a = analyze_json(&sc.join("cable.pcap"));
    // this run's two directions: requests to the server's QP, replies to the client's
    let flows: Vec<&Value> = a["flows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| {
            (f["src"] == "10.0.0.1" && f["dest_qp"] == resp["qpn"])
                || (f["src"] == "10.0.0.2" && f["dest_qp"] == req["qpn"])
        })
        .collect();
    let (req_ops, resp_ops) = expected_opcodes(op);
    let first = u(&req["sq_psn"]);
    let last = flow_last(op, req);
    let mut seen = 0;
    for f in flows {
        let requests = f["src"] == "10.0.0.1";
        let what = format!(
            "{name}: flow {} -> {} QP {}",
            f["src"], f["dst"], f["dest_qp"]
        );
        let want = if requests { &req_ops } else { &resp_ops };
        let got: BTreeMap<String, u64> = f["opcodes"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), u(v)))
            .collect();
        if want.keys().any(|k| k == "RC_ACKNOWLEDGE") {
            assert_eq!(
                got.keys().collect::<Vec<_>>(),
                ["RC_ACKNOWLEDGE"],
                "{what}: ACKs only"
            );
            assert!((1..=N).contains(&got["RC_ACKNOWLEDGE"]), "{what}");
        } else {
            assert_eq!(&got, want, "{what}: opcodes");
        }
        assert_eq!(u(&f["psn"]["last"]), last, "{what}: last PSN");
        if requests || op == "read" || op == "fetch-add" {
            assert_eq!(u(&f["psn"]["first"]), first, "{what}: first PSN");
        }
        for k in ["gap_events", "missing", "retransmitted", "duplicates"] {
            assert_eq!(u(&f["psn"][k]), 0, "{what}: {k}");
        }
        let naks: u64 = f["naks"].as_object().unwrap().values().map(u).sum();
        assert_eq!(naks, 0, "{what}: NAKs");
        seen += 1;
    }
    assert_eq!(seen, 2, "{name}: both directions of the run on the cable");

    if op == "write-imm" {
        // the immediate is the message number, big-endian: tshark reads it off the wire
        let o = Command::new("tshark")
            .args(["-r"])
            .arg(sc.join("cable.pcap"))
            .args([
                "-Y",
                &format!(
                    "infiniband.immdt && infiniband.bth.destqp == {}",
                    resp["qpn"]
                ),
                "-T",
                "fields",
                "-e",
                "infiniband.immdt",
            ])
            .output()
            .expect("tshark");
        let imms: Vec<u64> = String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(|l| u64::from_str_radix(l.split(',').next().unwrap(), 16).unwrap())
            .collect();
        assert_eq!(
            imms,
            (0..N).collect::<Vec<_>>(),
            "{name}: immediates on the wire"
        );
    }
    format!(
        "{name}: client QP {:#x} -> server QP {:#x}, PSN {first}..{last}, {} messages, {:.3} Gb/s",
        u(&req["qpn"]),
        u(&resp["qpn"]),
        g["messages"],
        g["gbps"].as_f64().unwrap()
    )
}

fn check_sigint(sc: &Path, server: &Value) -> String {
    let log = fs::read_to_string(sc.join("client-sigint.log")).expect("client-sigint.log");
    let mut lines = log.lines().rev();
    assert_eq!(
        lines.next(),
        Some("exit 130"),
        "SIGINT: exit status 130:\n{log}"
    );
    assert!(
        lines
            .next()
            .is_some_and(|l| l.starts_with("rocescope: gen: interrupted: stopped posting after ")),
        "SIGINT: one line saying so:\n{log}"
    );
    let g: Value = serde_json::from_slice(&fs::read(sc.join("client-sigint.json")).unwrap())
        .expect("client-sigint.json");
    assert_eq!(g["stopped_by"], "signal");
    let m = u(&g["messages"]);
    // 3 s at 50 messages/s, in a slow emulated guest: clearly some, clearly not the 3000 of 60 s
    assert!((10..=300).contains(&m), "SIGINT: {m} messages");
    assert_eq!(g["data_check"]["status"], "passed");
    assert_eq!(
        u(&server["posted_by_client"][0]),
        m,
        "the server got the count"
    );
    assert_eq!(
        u(&server["memory_checked"]),
        m,
        "and checked each message in its memory"
    );
    assert_eq!(server["data_check"]["status"], "passed");
    let req = &g["requester"];
    let a = analyze_json(&sc.join("cable.pcap"));
    let f = a["flows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["src"] == "10.0.0.1" && f["dest_qp"] == g["responder"]["qpn"])
        .expect("the interrupted run's requests on the cable");
    assert_eq!(
        u(&f["messages"]["count"]),
        m,
        "SIGINT: messages on the cable"
    );
    assert_eq!(u(&f["packets"]), m * PPM);
    assert_eq!(u(&f["psn"]["first"]), u(&req["sq_psn"]));
    assert_eq!(
        u(&f["psn"]["last"]),
        psn_add(u(&req["sq_psn"]), m * PPM - 1)
    );
    format!("duo_gen SIGINT after 3 s: {m} messages, all completed and checked at both ends")
}

fn check_gone(sc: &Path) -> String {
    let log = fs::read_to_string(sc.join("client-gone.log")).expect("client-gone.log");
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(
        lines.len(),
        2,
        "server killed: one error line, then the exit status:\n{log}"
    );
    assert_eq!(lines[1], "exit 1", "server killed");
    assert!(
        lines[0].starts_with("rocescope: gen: no completion for 3.0 s: ")
            && lines[0].contains(" of the server (has it stopped?)"),
        "server killed: {}",
        lines[0]
    );
    let g: Value = serde_json::from_slice(&fs::read(sc.join("client-gone.json")).unwrap())
        .expect("client-gone.json");
    let completed = u(&g["messages"]);
    assert!(completed >= 1, "traffic flowed before the kill");
    // it ended by its deadline, not by --duration 60
    let posting = g["posting_seconds"].as_f64().unwrap();
    assert!(posting < 40.0, "server killed: posted for {posting} s");
    assert!(g["server"].is_null(), "no summary from a dead server");
    assert_eq!(g["data_check"]["status"], "incomplete");
    format!(
        "duo_gen server killed: the client ended after {posting:.1} s of posting, {completed} messages completed"
    )
}

/// The last PSN of the run: N messages of PPM PSNs each (an atomic takes one).
fn flow_last(op: &str, req: &Value) -> u64 {
    let per = if op == "fetch-add" { 1 } else { PPM };
    psn_add(u(&req["sq_psn"]), N * per - 1)
}

#[test]
fn gen_server_and_client_on_two_guests() {
    let (lab_out, secs) = run_lab("lab-duo", &["duo_gen"]);
    let sc = lab_out.join("duo_gen");
    let servers = server_runs(&sc.join("b-server.json"));
    let ops = ["write", "write-imm", "send", "read", "fetch-add"];
    assert_eq!(
        servers.len(),
        ops.len() + 1,
        "one server document per client run"
    );
    let blog = fs::read_to_string(sc.join("b-server.log")).unwrap();
    assert!(blog.trim_end().ends_with("exit 0"), "server: {blog}");
    for (op, s) in ops.iter().zip(&servers) {
        eprintln!("{}", check_run(&sc, op, s));
    }
    eprintln!("{}", check_sigint(&sc, &servers[ops.len()]));
    eprintln!("{}", check_gone(&sc));
    eprintln!("lab duo_gen: two guests booted and ran in {secs:.1} s");
}

/// gen_hostile_peer (one guest; busybox nc plays the other end): peers that lie end the run with one line
/// and exit 1, and a lying client gets the server's reason as an error message.
#[test]
fn peers_that_lie_are_refused_in_one_line() {
    let (lab_out, secs) = run_lab("lab-hostile", &["gen_hostile_peer"]);
    let sc = lab_out.join("gen_hostile_peer");
    let log = |i: u32| fs::read_to_string(sc.join(format!("hostile-{i}.log"))).unwrap();
    let last_two = |i: u32| {
        let l = log(i);
        let v: Vec<String> = l.lines().map(str::to_string).collect();
        assert!(v.len() >= 2, "hostile-{i}: {l}");
        (v[v.len() - 2].clone(), v[v.len() - 1].clone())
    };
    // 1: a "server" that answers HTTP
    let (line, exit) = last_two(1);
    assert_eq!(exit, "exit 1");
    assert!(
        line.starts_with(
            "rocescope: gen: gen server 127.0.0.1:18601: the peer sent something that is not a rocescope \
             gen message: "
        ),
        "{line}"
    );
    assert_eq!(log(1).lines().count(), 2, "one line, then the exit status");
    // 2: a welcome with an active MTU of 0
    let (line, exit) = last_two(2);
    assert_eq!(exit, "exit 1");
    assert_eq!(
        line,
        "rocescope: gen: gen server 127.0.0.1:18602: active MTU 0 is not an InfiniBand MTU"
    );
    // 3: a client asking for 64 QPs x 4096 slots x 1 GiB = 2^48 bytes
    let (line, exit) = last_two(3);
    assert_eq!(exit, "exit 1");
    let want = format!(
        "{} bytes of buffers asked for; this server registers at most {}",
        1u64 << 48,
        1u64 << 30
    );
    assert!(
        line.starts_with("rocescope: gen server: client 127.0.0.1:") && line.ends_with(&want),
        "{line}"
    );
    let got: Value = serde_json::from_str(
        fs::read_to_string(sc.join("hostile-3.got"))
            .unwrap()
            .lines()
            .next()
            .expect("the server answered"),
    )
    .unwrap();
    assert_eq!(got["msg"], "error");
    assert_eq!(got["message"], want.as_str());
    // 4: a client that says nothing: the server gives up after --timeout 2
    let (line, exit) = last_two(4);
    assert_eq!(exit, "exit 1");
    assert!(
        line.starts_with("rocescope: gen server: client 127.0.0.1:")
            && line.ends_with(": the peer said nothing in time"),
        "{line}"
    );
    eprintln!(
        "gen_hostile_peer: four lying peers refused in one line each ({secs:.1} s with the lab)"
    );
}
