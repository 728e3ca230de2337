//! `--expect` with the job's logs (NCCL, UCX): whose QP each flow is, the traffic class held against the one
//! set, failures tied to their flows.
//!
//! The NCCL runs are the public corpus' (testdata/public: the captures and NCCL 2.20.5's own logs of the same
//! runs, `NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH`). The expectations are read off the logs by hand (each sender's QP
//! line and the `set_ece` line after it, which in 2.20 names the remote QP) and the flows off the captures by
//! tshark; the failures are log lines written in NCCL's and UCX's formats (src/source/joblog.rs quotes them)
//! for the lab's `gen --fault wrong-qpn` capture, whose QPs gen's own output names.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// A directory of this test's own (removed first: a run before may have left it).
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rocescope-joblog-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("testdata")
        .join(name)
}

fn rocescope(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rocescope"))
        .args(args)
        .output()
        .expect("run rocescope")
}

fn analyze(capture: &Path, logs: &[PathBuf], extra: &[&str]) -> (Value, Output) {
    let mut args = vec!["analyze", "--json", capture.to_str().unwrap()];
    for l in logs {
        args.extend(["--expect", l.to_str().unwrap()]);
    }
    args.extend_from_slice(extra);
    let o = rocescope(&args);
    let r = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)));
    (r, o)
}

/// The RoCE flows of a capture as tshark sees them: (source, destination, destination QP) -> frames.
fn tshark_flows(capture: &Path) -> BTreeMap<(String, String, u64), u64> {
    let o = Command::new("tshark")
        .args([
            "-r",
            capture.to_str().unwrap(),
            "-Y",
            "infiniband",
            "-T",
            "fields",
        ])
        .args([
            "-e",
            "ip.src",
            "-e",
            "ip.dst",
            "-e",
            "infiniband.bth.destqp",
        ])
        .output()
        .expect("tshark");
    let mut flows = BTreeMap::new();
    for l in String::from_utf8(o.stdout).unwrap().lines() {
        let f: Vec<&str> = l.split('\t').collect();
        let qp = u64::from_str_radix(f[2].trim_start_matches("0x"), 16).unwrap();
        *flows
            .entry((f[0].to_string(), f[1].to_string(), qp))
            .or_insert(0) += 1;
    }
    flows
}

/// A logged sending QP of the ring run: its rank and address, its QPN, the remote QPN, the receiving rank.
struct Sender {
    rank: u64,
    addr: &'static str,
    qpn: u64,
    remote: u64,
    to: u64,
}

/// Read off ring2_node{0,1,2}.log by hand: the `[send]` channel line, the `NET/IB: NCCL Dev` line after it
/// (qpn, GID) and its `set_ece` line (the remote QPN). The tree connections (0->2, 2->1) carried nothing.
const RING: [Sender; 5] = [
    Sender {
        rank: 0,
        addr: "172.30.0.25",
        qpn: 34,
        remote: 35,
        to: 1,
    },
    Sender {
        rank: 0,
        addr: "172.30.0.25",
        qpn: 36,
        remote: 42,
        to: 2,
    },
    Sender {
        rank: 1,
        addr: "172.30.0.11",
        qpn: 34,
        remote: 40,
        to: 2,
    },
    Sender {
        rank: 2,
        addr: "172.30.0.12",
        qpn: 39,
        remote: 35,
        to: 0,
    },
    Sender {
        rank: 2,
        addr: "172.30.0.12",
        qpn: 41,
        remote: 36,
        to: 1,
    },
];

fn ring_logs() -> Vec<PathBuf> {
    (0..3)
        .map(|n| data(&format!("public/ring2_node{n}.log")))
        .collect()
}

/// Every RoCE flow of the three ring captures is a logged connection's: its data (from the sender's
/// address to the remote QPN) or what came back (to the sender's QP), with the ranks, channel and HCA.
#[test]
fn the_ring_runs_flows_are_their_ranks() {
    for node in 0..3 {
        let capture = data(&format!("public/ring2_node{node}.pcap"));
        let wire = tshark_flows(&capture);
        let (r, o) = analyze(&capture, &ring_logs(), &[]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let flows = r["flows"].as_array().unwrap();
        assert_eq!(flows.len(), wire.len(), "ring2_node{node}");
        for ((src, dst, qp), frames) in &wire {
            let f = flows
                .iter()
                .find(|f| f["src"] == *src && f["dst"] == *dst && f["dest_qp"] == *qp)
                .unwrap_or_else(|| panic!("no flow {src} -> {dst} QP {qp}"));
            assert_eq!(f["packets"], *frames);
            let data = RING.iter().find(|s| s.addr == src && s.remote == *qp);
            let back = RING.iter().find(|s| s.addr == dst && s.qpn == *qp);
            let (s, way) = match (data, back) {
                (Some(s), None) => (s, "from"),
                (None, Some(s)) => (s, "to"),
                _ => panic!("{src} -> {dst} QP {qp}: the logs name it once"),
            };
            let job = &f["job"];
            assert_eq!(
                (
                    &job["rank"],
                    &job["peer_rank"],
                    &job["qpn"],
                    &job["remote_qpn"],
                    &job["way"]
                ),
                (
                    &Value::from(s.rank),
                    &Value::from(s.to),
                    &Value::from(s.qpn),
                    &Value::from(s.remote),
                    &Value::from(way)
                ),
                "{src} -> {dst} QP {qp}: {job:#}"
            );
            assert_eq!(
                (
                    &job["library"],
                    &job["side"],
                    &job["channel"],
                    &job["device"],
                    &job["port"]
                ),
                (
                    &Value::from("nccl"),
                    &Value::from("send"),
                    &Value::from(0),
                    &Value::from("rxe0"),
                    &Value::from(1)
                )
            );
        }
        // The text report's job section names each flow's owner: the connection (sender → receiver) and what
        // the flow carries of it.
        let mut args = vec!["analyze", capture.to_str().unwrap()];
        let logs = ring_logs();
        for l in &logs {
            args.extend(["--expect", l.to_str().unwrap()]);
        }
        let text = String::from_utf8(rocescope(&args).stdout).unwrap();
        for f in flows {
            let (src, dst, qp) = (&f["src"], &f["dst"], f["dest_qp"].as_u64().unwrap());
            let (s, what) = match RING.iter().find(|s| s.addr == src && s.remote == qp) {
                Some(s) => (s, "data"),
                None => (
                    RING.iter().find(|s| s.addr == dst && s.qpn == qp).unwrap(),
                    "ACKs and CTS",
                ),
            };
            let line = format!(
                "  #{} {} → {} QP 0x{qp:06x}: NCCL rank {} → rank {} channel 0 (rxe0:1): {what}",
                f["id"],
                src.as_str().unwrap(),
                dst.as_str().unwrap(),
                s.rank,
                s.to
            );
            assert!(text.lines().any(|l| l == line), "{line}\n{text}");
        }
        // No class was set: nothing to hold, nothing wrong.
        assert!(
            r["events"]
                .as_array()
                .unwrap()
                .iter()
                .all(|e| e["kind"] != "tc_mismatch")
        );
        let procs = r["job"]["processes"].as_array().unwrap();
        let ranks: Vec<(&Value, &Value, &Value)> = procs
            .iter()
            .map(|p| (&p["host"], &p["rank"], &p["oob"]))
            .collect();
        assert_eq!(
            ranks,
            vec![
                (&"node0".into(), &0.into(), &"172.30.0.25".into()),
                (&"node1".into(), &1.into(), &"172.30.0.11".into()),
                (&"node2".into(), &2.into(), &"172.30.0.12".into()),
            ]
        );
        // Only node0's log printed the version banner.
        assert_eq!(procs[0]["version"], "2.20.5+cuda12.4");
        assert_eq!(procs[1]["version"], Value::Null);
    }
}

/// Rank 0 told to use traffic class 106 (DSCP 26) while everything its host sent went out with DSCP 0:
/// `tc_mismatch` on both flows it sends, its data to rank 1 and what its receiving QP sends rank 2 (CTS
/// writes, ACKs: in 2.20 a receiver's QP takes its own NCCL_IB_TC), none on the others (ranks 1 and 2 set
/// nothing); a lossless failure.
#[test]
fn a_traffic_class_other_than_set() {
    let dir = scratch("tc");
    let mut logs = ring_logs();
    let text = std::fs::read_to_string(&logs[0]).unwrap();
    let told = dir.join("ring2_node0.log");
    std::fs::write(
        &told,
        format!("{text}node0:4744:4763 [0] NCCL INFO NCCL_IB_TC set by environment to 106.\n"),
    )
    .unwrap();
    logs[0] = told;
    let capture = data("public/ring2_node0.pcap");
    let (r, o) = analyze(
        &capture,
        &logs,
        &["--fail-on", "lossless", "--dscp-map", "26=3,0=0"],
    );
    let flows = r["flows"].as_array().unwrap();
    let mut told: Vec<(String, String, u64, u64)> = Vec::new();
    for e in r["events"].as_array().unwrap() {
        if e["kind"] != "tc_mismatch" {
            continue;
        }
        let d = &e["detail"];
        assert_eq!(
            (
                &d["dscp"],
                &d["configured_dscp"],
                &d["setting"],
                &d["rank"],
                &d["priority"],
                &d["configured_priority"]
            ),
            (
                &0.into(),
                &26.into(),
                &"NCCL_IB_TC".into(),
                &0.into(),
                &0.into(),
                &3.into()
            )
        );
        let f = flows.iter().find(|f| f["id"] == e["flow"]).unwrap();
        told.push((
            f["src"].as_str().unwrap().to_string(),
            f["dst"].as_str().unwrap().to_string(),
            f["dest_qp"].as_u64().unwrap(),
            e["frame"].as_u64().unwrap(),
        ));
    }
    told.sort();
    // Each at the flow's first frame, as tshark numbers it.
    let first = |dst: &str, qp: u64| -> u64 {
        let o = Command::new("tshark")
            .args(["-r", capture.to_str().unwrap(), "-Y"])
            .arg(format!(
                "ip.src == 172.30.0.25 && ip.dst == {dst} && infiniband.bth.destqp == {qp}"
            ))
            .args(["-T", "fields", "-e", "frame.number"])
            .output()
            .unwrap();
        String::from_utf8(o.stdout)
            .unwrap()
            .lines()
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    let src = "172.30.0.25".to_string();
    assert_eq!(
        told,
        vec![
            (
                src.clone(),
                "172.30.0.11".into(),
                35,
                first("172.30.0.11", 35)
            ),
            (src, "172.30.0.12".into(), 39, first("172.30.0.12", 39)),
        ]
    );
    assert_eq!(o.status.code(), Some(3), "--fail-on lossless");
    assert_eq!(r["verdict"]["failed_on"], serde_json::json!(["lossless"]));
}

/// The lab's `gen --fault wrong-qpn` run (gen's output in the log: QP 0x11 on rxe0, 10.0.0.1, connected to
/// QPN 0x111; the requester gave up with IBV_WC_RETRY_EXC_ERR), told as NCCL 2.20.5 would have logged it: the
/// QP line and its `set_ece` (the remote QPN) name the flow, and the failure (no QPN in 2.20) is the
/// process's flow between the two GIDs it names.
#[test]
fn a_failure_names_its_flow() {
    let dir = scratch("nccl");
    let generator = std::fs::read_to_string(data("lab/wrong_qpn.log")).unwrap();
    assert!(generator.contains("QP 0x11 (rxe0) connected to destination QPN 0x111"));
    let nccl = dir.join("nccl.log");
    std::fs::write(
        &nccl,
        "NCCL version 2.20.5+cuda12.4\n\
         lab:100:100 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1 commId 0x2 - Init START\n\
         lab:100:100 [0] NCCL INFO NET/IB : Using [0]rxe0:1/RoCE [RO]; OOB lo:127.0.0.1<0>\n\
         lab:100:100 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0\n\
         lab:100:101 [0] NCCL INFO NET/IB: NCCL Dev 0 IbDev 0 Port 1 qpn 17 mtu 3 query_ece={supported=0, \
         vendor_id=0x0, options=0x0, comp_mask=0x0} GID 1 (0/0100000AFFFF0000) fifoRkey=0x1 fifoLkey=0x1\n\
         lab:100:101 [0] NCCL INFO NET/IB: IbDev 0 Port 1 qpn 273 set_ece={supported=0, vendor_id=0x0, \
         options=0x0, comp_mask=0x0}\n\
         \n\
         lab:100:101 [0] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<40000> \
         with status=12 opcode=1 len=0 vendor err 0 (Send) localGid ::ffff:10.0.0.1 remoteGids::ffff:10.0.0.2\n",
    )
    .unwrap();
    let capture = data("lab/wrong_qpn.pcap");
    let (r, _) = analyze(&capture, std::slice::from_ref(&nccl), &[]);
    let failures = r["job"]["failures"].as_array().unwrap();
    assert_eq!(failures.len(), 1);
    let f = &failures[0];
    assert_eq!(
        (
            &f["status"],
            &f["status_name"],
            &f["qpn"],
            &f["matched_by"],
            &f["line"]
        ),
        (
            &12.into(),
            &"IBV_WC_RETRY_EXC_ERR".into(),
            &Value::Null,
            &"gids".into(),
            &8.into()
        )
    );
    // The requests to QPN 0x111: the only flow of the capture (nothing answered them), rank 0's data.
    let flows = r["flows"].as_array().unwrap();
    assert_eq!(flows.len(), 1);
    let requests = &flows[0];
    assert_eq!(requests["dest_qp"], 0x111);
    assert_eq!(
        (&requests["job"]["qpn"], &requests["job"]["way"]),
        (&17.into(), &"from".into())
    );
    assert_eq!(f["flows"], serde_json::json!([requests["id"]]));
    // "What happened" tells it with the owner.
    let text = rocescope(&[
        "analyze",
        capture.to_str().unwrap(),
        "--expect",
        nccl.to_str().unwrap(),
    ]);
    let text = String::from_utf8(text.stdout).unwrap();
    let line = text
        .lines()
        .find(|l| l.contains("QP 0x000111"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.contains("(NCCL rank 0 → rank 1 channel 0 (rxe0:1): data)")
            && line.contains("NCCL on lab (pid 100, rank 0), ")
            && line.contains("IBV_WC_RETRY_EXC_ERR (transport retry counter exceeded)"),
        "{line}"
    );
}

/// The same run as UCX logs it: the failing QP, the remote QPN and GID, and the traffic class it was set up
/// with (106: DSCP 26, where the capture's frames carry DSCP 0: tc_mismatch).
#[test]
fn a_ucx_failure_and_its_class() {
    let dir = scratch("ucx");
    let ucx = dir.join("ucx.log");
    std::fs::write(
        &ucx,
        "[1796121785.100000] [lab:200  :0]     ib_mlx5_log.c:179  UCX  ERROR Transport retry count exceeded on \
         rxe0:1/RoCE (synd 0x15 vend 0x81 hw_synd 0/0)\n\
         [1796121785.100000] [lab:200  :0]     ib_mlx5_log.c:179  UCX  ERROR RC QP 0x11 wqe[0]: RDMA_WRITE s-- \
         [rva 0x7f00 rkey 0x5] [va 0x7f10 len 4096 lkey 0x6] [rqpn 0x111 dlid=0 sl=0 port=1 src_path_bits=0 \
         dgid=::ffff:10.0.0.2 flow_label=0x0 sgid_index=1 traffic_class=106]\n",
    )
    .unwrap();
    let (r, _) = analyze(&data("lab/wrong_qpn.pcap"), &[ucx], &[]);
    let f = &r["job"]["failures"][0];
    assert_eq!(
        (
            &f["library"],
            &f["qpn"],
            &f["remote_qpn"],
            &f["vendor_err"],
            &f["matched_by"]
        ),
        (
            &"ucx".into(),
            &0x11.into(),
            &0x111.into(),
            &0x81.into(),
            &"qpn".into()
        )
    );
    let flow = r["flows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["dest_qp"] == 0x111)
        .unwrap();
    assert_eq!(f["flows"], serde_json::json!([flow["id"]]));
    assert_eq!(flow["job"]["way"], "from");
    let tc: Vec<&Value> = r["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "tc_mismatch")
        .collect();
    assert_eq!(tc.len(), 1);
    assert_eq!(
        (
            &tc[0]["flow"],
            &tc[0]["detail"]["setting"],
            &tc[0]["detail"]["rank"]
        ),
        (&flow["id"], &"traffic_class".into(), &Value::Null)
    );
}

/// A log that names nothing rocescope reads is refused in one line.
#[test]
fn a_log_of_nothing_read_is_refused() {
    let dir = scratch("empty");
    let log = dir.join("empty.log");
    std::fs::write(&log, "hello\nNCCL INFO nothing\n").unwrap();
    let o = rocescope(&[
        "analyze",
        data("public/ring2_node0.pcap").to_str().unwrap(),
        "--expect",
        log.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8(o.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("no NCCL or UCX line"), "{err}");
}

/// The corpus' all-reduce run with NCCL's logs at the default subsystems (no `NET`: no QP line): the three
/// processes and their ranks, NCCL_IB_GID_INDEX 1 as the environment set it, and no flow claimed for anyone
/// (nothing says which QP is whose), so no traffic class held.
#[test]
fn default_subsystems_name_processes_not_qps() {
    let logs: Vec<PathBuf> = (0..3)
        .map(|n| data(&format!("public/nccl_node{n}.log")))
        .collect();
    let (r, o) = analyze(&data("public/nccl_node0.pcap"), &logs, &[]);
    assert!(o.status.success());
    let procs = r["job"]["processes"].as_array().unwrap();
    let got: Vec<(&Value, &Value, &Value, &Value)> = procs
        .iter()
        .map(|p| (&p["host"], &p["rank"], &p["gid_index"], &p["qps"]))
        .collect();
    let v = |x: Value| x;
    assert_eq!(
        got,
        vec![
            (&v("node0".into()), &v(0.into()), &v(1.into()), &v(0.into())),
            (&v("node1".into()), &v(1.into()), &v(1.into()), &v(0.into())),
            (&v("node2".into()), &v(2.into()), &v(1.into()), &v(0.into())),
        ]
    );
    assert!(
        r["flows"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f.get("job").is_none())
    );
    assert!(
        r["events"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["kind"] != "tc_mismatch")
    );
    assert_eq!(r["job"]["failures"], serde_json::json!([]));
}
