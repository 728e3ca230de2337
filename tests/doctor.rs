//! `rocescope doctor --root DIR` on trees the tests build (sysfs, procfs, the provider's files, the kernel log:
//! each laid out as the kernel and rdma-core lay them out) and on the tree recorded in the Soft-RoCE lab
//! (testdata/host/rxe). Every finding is asserted from what the test put in the tree: it fires on the
//! failure, and the healthy trees have none of the failures' codes. Hostile trees (missing and unreadable
//! files, a FIFO, counters that are not numbers, a huge file) are reported, never a panic or a hang.
use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// A tree under target/tmp, written file by file.
struct Tree {
    dir: PathBuf,
}

impl Tree {
    fn new(name: &str) -> Tree {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join("doctor")
            .join(name);
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        Tree { dir }
    }

    fn file(&self, rel: &str, content: &str) -> &Tree {
        let p = self.dir.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(&p, content).unwrap();
        self
    }

    fn remove(&self, rel: &str) -> &Tree {
        let p = self.dir.join(rel);
        if p.is_dir() {
            fs::remove_dir_all(&p).unwrap();
        } else {
            fs::remove_file(&p).unwrap();
        }
        self
    }

    /// The host around the devices: kernel release, sysctl, ib_core, libibverbs, an empty kernel log.
    fn host(&self) -> &Tree {
        self.file("proc/sys/kernel/osrelease", "6.1.0-57-amd64\n")
            .file("proc/sys/net/ipv4/tcp_ecn", "2\n")
            .file("sys/module/ib_core/refcnt", "2\n")
            .file("usr/lib/x86_64-linux-gnu/libibverbs.so.1", "")
            .file("dev/kmsg", "")
            .file(
                "proc/net/arp",
                "IP address       HW type     Flags       HW address            Mask     Device\n",
            )
    }

    /// A provider: its driver file and library.
    fn provider(&self, name: &str) -> &Tree {
        self.file(
            &format!("etc/libibverbs.d/{name}.driver"),
            &format!("driver {name}\n"),
        )
        .file(
            &format!("usr/lib/x86_64-linux-gnu/libibverbs/lib{name}-rdmav34.so"),
            "",
        )
    }

    /// A netdev: MTU, operstate, IFF_UP in flags (admin up), speed.
    fn netdev(&self, name: &str, mtu: u32, operstate: &str, admin_up: bool, speed: &str) -> &Tree {
        let d = format!("sys/class/net/{name}");
        self.file(&format!("{d}/mtu"), &format!("{mtu}\n"))
            .file(&format!("{d}/operstate"), &format!("{operstate}\n"))
            .file(
                &format!("{d}/flags"),
                if admin_up { "0x1003\n" } else { "0x1002\n" },
            )
            .file(&format!("{d}/speed"), &format!("{speed}\n"))
            .file(
                &format!("{d}/carrier"),
                if operstate == "up" { "1\n" } else { "0\n" },
            )
            .file(&format!("{d}/statistics/rx_packets"), "0\n")
    }

    /// GID entry `i` of `dev`/1: the address as sysfs writes it, its type and netdev.
    fn gid(&self, dev: &str, i: u32, gid: &str, kind: &str, ndev: &str) -> &Tree {
        let p = format!("sys/class/infiniband/{dev}/ports/1");
        self.file(&format!("{p}/gids/{i}"), &format!("{gid}\n"))
            .file(&format!("{p}/gid_attrs/types/{i}"), &format!("{kind}\n"))
            .file(&format!("{p}/gid_attrs/ndevs/{i}"), &format!("{ndev}\n"))
    }

    /// A port's state files and link layer.
    fn port(&self, dev: &str, state: &str, phys: &str) -> &Tree {
        let p = format!("sys/class/infiniband/{dev}/ports/1");
        self.file(&format!("{p}/state"), &format!("{state}\n"))
            .file(&format!("{p}/phys_state"), &format!("{phys}\n"))
            .file(&format!("{p}/link_layer"), "Ethernet\n")
            .file(&format!("{p}/rate"), "2.5 Gb/sec (1X SDR)\n")
    }

    /// A Soft-RoCE device as rdma_rxe makes it (the lab's layout): `parent`, no bus device, the link-local GID
    /// at 0 and the IPv4-mapped one at 1 (both RoCE v2), empty entries after them, rxe's hw_counters.
    fn rxe(&self, dev: &str, netdev: &str, mac_low: &str, ip_hex: &str) -> &Tree {
        let d = format!("sys/class/infiniband/{dev}");
        self.file(&format!("{d}/parent"), &format!("{netdev}\n"))
            .file(&format!("{d}/node_type"), "1: CA\n")
            .file(
                &format!("{d}/node_guid"),
                &format!("5054:00ff:fe12:{mac_low}\n"),
            )
            .file(&format!("{d}/fw_ver"), "\n")
            .port(dev, "4: ACTIVE", "5: LinkUp")
            .gid(
                dev,
                0,
                &format!("fe80:0000:0000:0000:5054:00ff:fe12:{mac_low}"),
                "RoCE v2",
                netdev,
            )
            .gid(
                dev,
                1,
                &format!("0000:0000:0000:0000:0000:ffff:{ip_hex}"),
                "RoCE v2",
                netdev,
            )
            .file(
                &format!("{d}/ports/1/gids/2"),
                "0000:0000:0000:0000:0000:0000:0000:0000\n",
            );
        for c in RXE_COUNTERS {
            self.file(&format!("{d}/ports/1/hw_counters/{c}"), "0\n");
        }
        self.file(&format!("{d}/ports/1/hw_counters/lifespan"), "12\n")
    }

    fn path(&self) -> &Path {
        &self.dir
    }
}

/// rxe's hw_counters in kernel 6.1 (lab/README.md), `lifespan` aside.
const RXE_COUNTERS: [&str; 15] = [
    "sent_pkts",
    "rcvd_pkts",
    "duplicate_request",
    "out_of_seq_request",
    "rcvd_rnr_err",
    "send_rnr_err",
    "rcvd_seq_err",
    "ack_deferred",
    "retry_exceeded_err",
    "retry_rnr_exceeded_err",
    "completer_retry_err",
    "send_err",
    "link_downed",
    "rdma_sends",
    "rdma_recvs",
];

/// The lab's pair: rxe0 on eth0 (10.0.0.1), rxe1 on eth1 (10.0.0.2), MTU 1500, speed unknown (-1).
fn healthy_rxe(name: &str) -> Tree {
    let t = Tree::new(name);
    t.host()
        .provider("rxe")
        .rxe("rxe0", "eth0", "3401", "0a00:0001")
        .rxe("rxe1", "eth1", "3402", "0a00:0002")
        .netdev("eth0", 1500, "up", true, "-1")
        .netdev("eth1", 1500, "up", true, "-1");
    t
}

/// A ConnectX-like device: `device/driver` -> mlx5_core, firmware, GIDs in mlx5's order (each address as RoCE v1
/// then RoCE v2: IPv6 link-local at 0 and 1, IPv4 at 2 and 3, a global IPv6 at 4 and 5), mlx5's hw_counters and
/// the IB port counters, ECN knobs on priority 3, ethtool statistics, ibv_devinfo's MTUs.
fn healthy_mlx5(name: &str, active_mtu: u32) -> Tree {
    let t = Tree::new(name);
    let d = "sys/class/infiniband/mlx5_0";
    t.host()
        .provider("mlx5")
        .netdev("ens1f0", 1500, "up", true, "100000");
    fs::create_dir_all(t.dir.join("sys/bus/pci/drivers/mlx5_core")).unwrap();
    fs::create_dir_all(t.dir.join(format!("{d}/device"))).unwrap();
    symlink(
        "../../../../bus/pci/drivers/mlx5_core",
        t.dir.join(format!("{d}/device/driver")),
    )
    .unwrap();
    t.file(&format!("{d}/node_type"), "1: CA\n")
        .file(&format!("{d}/node_guid"), "b859:9f03:00a1:b2c4\n")
        .file(&format!("{d}/fw_ver"), "16.35.2000\n")
        .port("mlx5_0", "4: ACTIVE", "5: LinkUp")
        .file(&format!("{d}/ports/1/rate"), "100 Gb/sec (4X EDR)\n")
        .gid(
            "mlx5_0",
            0,
            "fe80:0000:0000:0000:ba59:9fff:fea1:b2c4",
            "IB/RoCE v1",
            "ens1f0",
        )
        .gid(
            "mlx5_0",
            1,
            "fe80:0000:0000:0000:ba59:9fff:fea1:b2c4",
            "RoCE v2",
            "ens1f0",
        )
        .gid(
            "mlx5_0",
            2,
            "0000:0000:0000:0000:0000:ffff:c0a8:010a",
            "IB/RoCE v1",
            "ens1f0",
        )
        .gid(
            "mlx5_0",
            3,
            "0000:0000:0000:0000:0000:ffff:c0a8:010a",
            "RoCE v2",
            "ens1f0",
        )
        .gid(
            "mlx5_0",
            4,
            "2001:0db8:0000:0000:0000:0000:0000:0010",
            "IB/RoCE v1",
            "ens1f0",
        )
        .gid(
            "mlx5_0",
            5,
            "2001:0db8:0000:0000:0000:0000:0000:0010",
            "RoCE v2",
            "ens1f0",
        );
    for c in [
        "out_of_sequence",
        "packet_seq_err",
        "local_ack_timeout_err",
        "rnr_nak_retry_err",
        "np_cnp_sent",
    ] {
        t.file(&format!("{d}/ports/1/hw_counters/{c}"), "0\n");
    }
    for c in ["port_rcv_packets", "port_xmit_packets", "symbol_error"] {
        t.file(&format!("{d}/ports/1/counters/{c}"), "0\n");
    }
    for p in 0..8 {
        let on = if p == 3 { "1\n" } else { "0\n" };
        t.file(&format!("sys/class/net/ens1f0/ecn/roce_np/enable/{p}"), on)
            .file(&format!("sys/class/net/ens1f0/ecn/roce_rp/enable/{p}"), on);
    }
    t.file("ethtool/ens1f0", "NIC statistics:\n     rx_packets: 100\n     rx_prio3_pause: 0\n     tx_prio3_pause: 0\n")
        .file(
            "ibv_devinfo",
            &format!(
                "hca_id:\tmlx5_0\n\tfw_ver:\t\t\t\t16.35.2000\n\t\tport:\t1\n\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n\
                 \t\t\tmax_mtu:\t\t4096 (5)\n\t\t\tactive_mtu:\t\t{active_mtu} ({})\n",
                [256, 512, 1024, 2048, 4096].iter().position(|m| *m == active_mtu).unwrap() + 1
            ),
        );
    t
}

/// `rocescope doctor --root DIR ARGS --json`: exit status and document (killed after 20 s: nothing may hang).
fn doctor(t: &Tree, args: &[&str]) -> (i32, Value) {
    let (code, out, err) = run(t, args, true);
    let v =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("doctor --json: {e}\n{out}\n{err}"));
    (code, v)
}

fn run(t: &Tree, args: &[&str], json: bool) -> (i32, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rocescope"));
    cmd.arg("doctor").arg("--root").arg(t.path()).args(args);
    if json {
        cmd.arg("--json");
    }
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read as it writes: a report larger than a pipe's buffer would block it.
    let drain = |mut r: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut b = Vec::new();
            let _ = r.read_to_end(&mut b);
            b
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let t0 = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if t0.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("rocescope doctor --root {} hung", t.path().display());
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (
        status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.join().unwrap()).into_owned(),
        String::from_utf8_lossy(&err.join().unwrap()).into_owned(),
    )
}

fn findings<'a>(v: &'a Value, code: &str) -> Vec<&'a Value> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == code)
        .collect()
}

fn codes(v: &Value) -> Vec<String> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap().to_string())
        .collect()
}

fn one<'a>(v: &'a Value, code: &str) -> &'a Value {
    let f = findings(v, code);
    assert_eq!(
        f.len(),
        1,
        "one {code} finding expected, got {:?}",
        codes(v)
    );
    f[0]
}

/// The codes of the failures: none may appear on a healthy tree.
const FAILURES: [&str; 23] = [
    "no_rdma_subsystem",
    "no_devices",
    "no_libibverbs",
    "no_provider",
    "port_down",
    "port_not_active",
    "no_netdev",
    "ib_mtu_above_netdev",
    "netdev_mtu_too_small",
    "no_gid",
    "no_roce_v2_gid",
    "no_ipv4_gid",
    "netdev_down",
    "vlan_parent_down",
    "neighbour_incomplete",
    "ecn_disabled",
    "pfc_disabled",
    "kernel_log_error",
    "file_missing",
    "not_recorded",
    "file_unreadable",
    "not_a_number",
    "counter_sequence_errors",
];

fn no_failures(v: &Value) {
    for c in codes(v) {
        assert!(
            !FAILURES.contains(&c.as_str()),
            "a healthy tree has {c}: {:#}",
            v["findings"]
        );
    }
}

#[test]
fn a_healthy_rxe_pair_has_no_error_and_the_ipv4_gid_index() {
    let t = healthy_rxe("healthy_rxe");
    let (code, v) = doctor(&t, &[]);
    assert_eq!(code, 0, "{:#}", v["findings"]);
    no_failures(&v);
    // What the tree holds: the IPv4-mapped RoCE v2 GID at 1, no global IPv6 GID, the notes of rxe on virtio.
    for dev in ["rxe0", "rxe1"] {
        assert_eq!(v["gid_index"][format!("{dev}/1")]["roce_v2_ipv4"], 1);
        assert_eq!(
            v["gid_index"][format!("{dev}/1")]["roce_v2_ipv6"],
            Value::Null
        );
    }
    let mut c = codes(&v);
    c.sort();
    assert_eq!(
        c,
        [
            "gid0_link_local",
            "gid0_link_local",
            "no_dcqcn",
            "no_dcqcn",
            "speed_unknown",
            "speed_unknown"
        ]
    );
    let d = &v["devices"][0];
    assert_eq!(
        (
            d["name"].as_str(),
            d["driver"].as_str(),
            d["provider"].as_str()
        ),
        (Some("rxe0"), Some("rdma_rxe"), Some("rxe"))
    );
    assert_eq!(
        d["provider_library"],
        t.path()
            .join("usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so")
            .display()
            .to_string()
    );
    assert_eq!(d["fw_ver"], Value::Null, "rxe's fw_ver is empty");
    let p = &d["ports"][0];
    // rxe derives its active MTU from the netdev's: 1500 - 80 header bytes carries 1024
    assert_eq!(
        (p["active_mtu"].as_u64(), p["mtu_source"].as_str()),
        (Some(1024), Some("rxe"))
    );
    assert_eq!(
        p["gids"].as_array().unwrap().len(),
        2,
        "the empty entry is not a GID"
    );
    assert_eq!(p["gids"][1]["address"], "10.0.0.1");
    assert_eq!(
        p["hw_counters"].as_object().unwrap().len(),
        RXE_COUNTERS.len(),
        "lifespan is not a counter"
    );
    let (_, text, _) = run(&t, &[], false);
    assert!(
        text.contains("RoCE v2 over IPv4: GID index 1; over IPv6: none"),
        "{text}"
    );
    assert!(
        text.ends_with("doctor: no error (exit status 0)\n"),
        "{text}"
    );
}

#[test]
fn a_healthy_mlx5_layout_warns_only_that_index_0_is_roce_v1() {
    let t = healthy_mlx5("healthy_mlx5", 1024);
    let (code, v) = doctor(&t, &[]);
    assert_eq!(code, 0, "{:#}", v["findings"]);
    no_failures(&v);
    assert_eq!(codes(&v), ["gid0_not_roce_v2"]);
    let f = one(&v, "gid0_not_roce_v2");
    assert_eq!(f["severity"], "warning");
    assert!(f["fix"].as_str().unwrap().contains("-x 3"), "{f}");
    assert_eq!(v["gid_index"]["mlx5_0/1"]["roce_v2_ipv4"], 3);
    assert_eq!(v["gid_index"]["mlx5_0/1"]["roce_v2_ipv6"], 5);
    let d = &v["devices"][0];
    assert_eq!(
        (
            d["driver"].as_str(),
            d["provider"].as_str(),
            d["fw_ver"].as_str()
        ),
        (Some("mlx5_core"), Some("mlx5"), Some("16.35.2000"))
    );
    let p = &d["ports"][0];
    assert_eq!(
        (
            p["active_mtu"].as_u64(),
            p["max_mtu"].as_u64(),
            p["mtu_source"].as_str()
        ),
        (Some(1024), Some(4096), Some("ibv_devinfo"))
    );
    assert_eq!(
        p["gids"][0]["type"], "RoCE v1",
        "IB/RoCE v1 on an Ethernet port"
    );
    let n = &p["netdevs"][0];
    assert_eq!(
        (n["speed_mbps"].as_u64(), n["ib_mtu_allowed"].as_u64()),
        (Some(100000), Some(1024))
    );
    assert_eq!(n["ecn"]["np_enabled"], serde_json::json!([3]));
    assert_eq!(n["pause"].as_array().unwrap().len(), 2);
    assert_eq!(n["pfc"]["status"], "not_read");
    assert_eq!(p["counters"]["symbol_error"], 0);
}

#[test]
fn only_roce_v1_gids_is_an_error() {
    let t = healthy_rxe("roce_v1");
    t.gid(
        "rxe0",
        0,
        "fe80:0000:0000:0000:5054:00ff:fe12:3401",
        "IB/RoCE v1",
        "eth0",
    )
    .gid(
        "rxe0",
        1,
        "0000:0000:0000:0000:0000:ffff:0a00:0001",
        "IB/RoCE v1",
        "eth0",
    );
    let (code, v) = doctor(&t, &["-d", "rxe0"]);
    assert_eq!(code, 1);
    let f = one(&v, "no_roce_v2_gid");
    assert_eq!(
        (
            f["severity"].as_str(),
            f["device"].as_str(),
            f["port"].as_u64()
        ),
        (Some("error"), Some("rxe0"), Some(1))
    );
    assert!(
        f["evidence"]
            .as_str()
            .unwrap()
            .contains("GID 1 ::ffff:10.0.0.1 RoCE v1"),
        "{f}"
    );
    assert_eq!(v["gid_index"]["rxe0/1"]["roce_v2_ipv4"], Value::Null);
    assert!(
        findings(&v, "gid0_not_roce_v2").is_empty(),
        "no RoCE v2 at all is the one finding"
    );
    assert_eq!(v["devices"].as_array().unwrap().len(), 1, "-d rxe0");
}

#[test]
fn index_0_not_roce_v2_is_a_warning_naming_the_index_to_use() {
    let t = healthy_rxe("index0");
    t.gid(
        "rxe1",
        0,
        "fe80:0000:0000:0000:5054:00ff:fe12:3402",
        "IB/RoCE v1",
        "eth1",
    );
    let (code, v) = doctor(&t, &[]);
    assert_eq!(code, 0, "a warning is not an error");
    let f = one(&v, "gid0_not_roce_v2");
    assert_eq!(
        (f["device"].as_str(), f["severity"].as_str()),
        (Some("rxe1"), Some("warning"))
    );
    assert!(
        f["evidence"]
            .as_str()
            .unwrap()
            .ends_with("gid_attrs/types/0: RoCE v1 (fe80::5054:ff:fe12:3402)"),
        "{f}"
    );
    assert!(
        f["fix"].as_str().unwrap().contains("-x 1") && f["fix"].as_str().unwrap().contains("-g 1"),
        "{f}"
    );
}

#[test]
fn ports_in_init_or_down_are_errors_with_the_cause() {
    let t = healthy_rxe("port_states");
    t.port("rxe0", "2: INIT", "5: LinkUp")
        .port("rxe1", "1: DOWN", "3: Disabled")
        .netdev("eth1", 1500, "down", false, "-1");
    let (code, v) = doctor(&t, &[]);
    assert_eq!(code, 1);
    let init = one(&v, "port_not_active");
    assert_eq!(init["device"], "rxe0");
    assert!(
        init["evidence"]
            .as_str()
            .unwrap()
            .contains("state: 2: INIT; phys_state: 5: LinkUp"),
        "{init}"
    );
    let down = one(&v, "port_down");
    assert_eq!(down["device"], "rxe1");
    assert!(
        down["evidence"]
            .as_str()
            .unwrap()
            .contains("eth1: operstate down, administratively down"),
        "{down}"
    );
    assert_eq!(down["fix"], "ip link set eth1 up");
    assert!(
        findings(&v, "netdev_down").is_empty(),
        "the port's finding says it"
    );
    // up administratively, no carrier: the fix is the cable, not ip link
    t.netdev("eth1", 1500, "down", true, "-1");
    let (_, v) = doctor(&t, &[]);
    assert!(
        one(&v, "port_down")["fix"]
            .as_str()
            .unwrap()
            .starts_with("eth1 has no carrier"),
        "{v:#}"
    );
}

#[test]
fn an_ib_mtu_above_what_the_netdev_carries_is_an_error() {
    let t = healthy_mlx5("mtu_above", 4096);
    let (code, v) = doctor(&t, &[]);
    assert_eq!(code, 1);
    let f = one(&v, "ib_mtu_above_netdev");
    let e = f["evidence"].as_str().unwrap();
    // 1500 - 96 (ib_core's headers) = 1404: IB MTU 1024 at most
    assert!(
        e.starts_with("active MTU 4096 (ibv_devinfo);")
            && e.contains("ens1f0/mtu: 1500, which carries IB MTU 1024 at most"),
        "{e}"
    );
    assert!(
        f["fix"]
            .as_str()
            .unwrap()
            .starts_with("ip link set ens1f0 mtu 4192"),
        "{f}"
    );
    assert!(
        f["fix"].as_str().unwrap().contains("path MTU of 1024"),
        "{f}"
    );
    assert!(findings(&v, "netdev_mtu_too_small").is_empty());
    // jumbo frames carry it
    t.netdev("ens1f0", 9000, "up", true, "100000");
    let (code, v) = doctor(&t, &[]);
    assert_eq!(code, 0, "{:#}", v["findings"]);
    assert!(findings(&v, "ib_mtu_above_netdev").is_empty());
}

#[test]
fn a_netdev_mtu_below_what_ib_mtu_1024_needs_is_an_error() {
    let t = healthy_rxe("mtu_small");
    t.netdev("eth0", 1000, "up", true, "-1");
    let (code, v) = doctor(&t, &[]);
    assert_eq!(code, 1);
    let f = one(&v, "netdev_mtu_too_small");
    assert_eq!(f["device"], "rxe0");
    // rxe keeps 80 bytes: 1000 carries 512, 1024 needs 1104
    assert!(
        f["evidence"]
            .as_str()
            .unwrap()
            .contains("eth0/mtu: 1000, which carries IB MTU 512 at most (1000 - 80 header bytes)"),
        "{f}"
    );
    assert!(
        f["fix"]
            .as_str()
            .unwrap()
            .starts_with("ip link set eth0 mtu 1500 (at least 1104)"),
        "{f}"
    );
    assert_eq!(v["devices"][0]["ports"][0]["active_mtu"], 512);
    t.netdev("eth0", 1104, "up", true, "-1");
    assert!(
        findings(&doctor(&t, &[]).1, "netdev_mtu_too_small").is_empty(),
        "1104 is enough"
    );
}

/// A recorded tree's missing file is one the tree does not record: a note, never a claim about the host.
#[test]
fn missing_files_are_not_recorded_notes_and_the_rest_is_checked() {
    let t = healthy_rxe("missing");
    t.remove("sys/class/infiniband/rxe0/ports/1/state")
        .remove("sys/class/net/eth1/mtu")
        .remove("dev/kmsg");
    let (code, v) = doctor(&t, &[]);
    assert_eq!(code, 0, "{:#}", v["findings"]);
    let at = |rel: &str| t.path().join(rel).display().to_string();
    let notes: Vec<(String, String)> = findings(&v, "not_recorded")
        .iter()
        .map(|f| {
            (
                f["severity"].as_str().unwrap().to_string(),
                f["evidence"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let note = |e: String| ("note".to_string(), e);
    // rxe derives its active MTU from the netdev's: without eth1's MTU (and no ibv_devinfo), rxe1's is unknown
    assert_eq!(
        notes,
        [
            note(format!(
                "{}: not recorded; active MTU unknown for rxe1/1",
                at("ibv_devinfo")
            )),
            note(format!("{}: not recorded", at("dev/kmsg"))),
            note(format!(
                "{}: missing",
                at("sys/class/infiniband/rxe0/ports/1/state")
            )),
            note(format!("{}: missing", at("sys/class/net/eth1/mtu"))),
        ]
    );
    assert!(findings(&v, "file_missing").is_empty());
    assert!(findings(&v, "kernel_log_unreadable").is_empty());
    assert_eq!(v["host"]["kernel_log"], "not recorded");
    assert_eq!(
        v["gid_index"]["rxe0/1"]["roce_v2_ipv4"], 1,
        "the GIDs are still read"
    );
}

/// A tree of sysfs and procfs alone (no /usr/lib, no /etc: what a recording of /sys and /proc holds) of the
/// lab's healthy pair: libibverbs and the providers are not recorded, a note; no `no_libibverbs`, no exit 4.
#[test]
fn a_recorded_tree_without_libraries_is_healthy_with_a_note() {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata/host/rxe");
    let t = Tree::new("lab_tree_no_libraries");
    let copied = Command::new("cp")
        .arg("-a")
        .arg(format!("{}/.", src.display()))
        .arg(t.path())
        .status()
        .unwrap();
    assert!(copied.success());
    t.remove("usr").remove("etc");
    let (code, v) = doctor(&t, &[]);
    assert_eq!(code, 0, "{:#}", v["findings"]);
    let f = one(&v, "not_recorded");
    let shown = |d: &str| t.path().join(d).display().to_string();
    assert_eq!(
        (
            f["severity"].as_str(),
            f["layer"].as_str(),
            f["evidence"].as_str()
        ),
        (
            Some("note"),
            Some("provider"),
            Some(
                format!(
                    "{}, {}, {}, {}: not recorded",
                    shown("usr/lib64"),
                    shown("lib64"),
                    shown("usr/lib"),
                    shown("lib")
                )
                .as_str()
            )
        )
    );
    assert!(findings(&v, "no_libibverbs").is_empty() && findings(&v, "no_provider").is_empty());
    assert_eq!(
        (&v["host"]["libibverbs"], &v["host"]["libraries_recorded"]),
        (&Value::Null, &Value::Bool(false))
    );
    // The rest is what the lab tree says of its two rxe devices (the_recorded_lab_tree_is_healthy reads
    // them): a note each that rxe has no DCQCN, that GID 0 is the link-local one while the IPv4 one is at 1,
    // that virtio's speed is -1.
    for dev in ["rxe0", "rxe1"] {
        let mut c: Vec<String> = v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["device"] == dev)
            .map(|f| f["code"].as_str().unwrap().to_string())
            .collect();
        c.sort();
        assert_eq!(c, ["gid0_link_local", "no_dcqcn", "speed_unknown"], "{dev}");
    }
    assert_eq!(v["findings"].as_array().unwrap().len(), 7);
    let (_, text, _) = run(&t, &[], false);
    assert!(text.contains("libibverbs not recorded;"), "{text}");
    assert!(
        text.contains("provider rxe (library not recorded)"),
        "{text}"
    );
    assert!(
        text.ends_with("doctor: no error (exit status 0)\n"),
        "{text}"
    );
    // libibverbs recorded, the providers' list not: the providers are not recorded, libibverbs is found
    t.file("usr/lib/x86_64-linux-gnu/libibverbs.so.1", "");
    let (code, v) = doctor(&t, &[]);
    assert_eq!(code, 0, "{:#}", v["findings"]);
    assert_eq!(
        one(&v, "not_recorded")["evidence"],
        format!("{}: not recorded", shown("etc/libibverbs.d"))
    );
    assert_eq!(
        v["host"]["libibverbs"],
        shown("usr/lib/x86_64-linux-gnu/libibverbs.so.1")
    );
}

/// What a layer's files do not record concludes nothing: GID types and netdevs, ECN knobs, the speed, the
/// active MTU (ibv_devinfo) absent from an otherwise healthy ConnectX tree.
#[test]
fn what_a_tree_does_not_record_concludes_nothing() {
    let t = healthy_mlx5("unrecorded_gid_attrs", 1024);
    let p = "sys/class/infiniband/mlx5_0/ports/1";
    t.remove(&format!("{p}/gid_attrs"));
    let (code, v) = doctor(&t, &[]);
    assert_eq!(code, 0, "{:#}", v["findings"]);
    // 6 GID entries, each with its type and its netdev not recorded; nothing about the table or a netdev
    let mut expected: Vec<String> = Vec::new();
    for kind in ["types", "ndevs"] {
        for i in 0..6 {
            expected.push(format!(
                "{}: missing",
                t.path().join(format!("{p}/gid_attrs/{kind}/{i}")).display()
            ));
        }
    }
    expected.sort();
    let mut got: Vec<String> = findings(&v, "not_recorded")
        .iter()
        .map(|f| f["evidence"].as_str().unwrap().to_string())
        .collect();
    got.sort();
    assert_eq!(got, expected);
    assert_eq!(codes(&v).len(), 12, "{:?}", codes(&v));
    assert_eq!(
        v["devices"][0]["ports"][0]["gids"][3]["type"], "unknown",
        "the entry is read, its type is not"
    );

    let t = healthy_mlx5("unrecorded_knobs", 1024);
    for p in 0..8 {
        t.file(
            &format!("sys/class/net/ens1f0/ecn/roce_np/enable/{p}"),
            "0\n",
        )
        .file(
            &format!("sys/class/net/ens1f0/ecn/roce_rp/enable/{p}"),
            "0\n",
        );
    }
    t.remove("sys/class/net/ens1f0/ecn/roce_rp/enable/5")
        .remove("sys/class/net/ens1f0/speed")
        .remove("ibv_devinfo");
    let (code, v) = doctor(&t, &[]);
    assert_eq!(code, 0, "{:#}", v["findings"]);
    let mut c = codes(&v);
    c.sort();
    assert_eq!(
        c,
        [
            "gid0_not_roce_v2",
            "not_recorded",
            "not_recorded",
            "not_recorded"
        ]
    );
    let ev: Vec<&str> = findings(&v, "not_recorded")
        .iter()
        .map(|f| f["evidence"].as_str().unwrap())
        .collect();
    let at = |rel: &str| t.path().join(rel).display().to_string();
    assert_eq!(
        ev,
        [
            format!(
                "{}: not recorded; active MTU unknown for mlx5_0/1",
                at("ibv_devinfo")
            ),
            format!("{}: missing", at("sys/class/net/ens1f0/speed")),
            format!(
                "{}: missing",
                at("sys/class/net/ens1f0/ecn/roce_rp/enable/5")
            ),
        ]
    );
    assert_eq!(
        v["devices"][0]["ports"][0]["netdevs"][0]["ecn"],
        Value::Null,
        "15 of 16 knobs read: no conclusion"
    );
    let (_, text, _) = run(&t, &[], false);
    assert!(
        text.contains(
            "MTU: active unknown (not in sysfs; not recorded: no ibv_devinfo in the tree)"
        ),
        "{text}"
    );
}

#[test]
fn unreadable_files_and_fifos_are_findings_not_hangs() {
    let t = healthy_rxe("unreadable");
    let phys = "sys/class/infiniband/rxe0/ports/1/phys_state";
    t.remove(phys);
    fs::create_dir_all(t.path().join(phys)).unwrap();
    let gid = t.path().join("sys/class/infiniband/rxe1/ports/1/gids/1");
    fs::remove_file(&gid).unwrap();
    let made = Command::new("mkfifo").arg(&gid).status().unwrap();
    assert!(made.success());
    let (_, v) = doctor(&t, &[]);
    let u: Vec<String> = findings(&v, "file_unreadable")
        .iter()
        .map(|f| f["evidence"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        u,
        [
            format!("{}: unreadable: a directory", t.path().join(phys).display()),
            format!("{}: unreadable: not a regular file", gid.display())
        ]
    );
    assert_eq!(
        v["gid_index"]["rxe1/1"]["roce_v2_ipv4"],
        Value::Null,
        "the FIFO's GID is not read"
    );
    // what the entry might have held is not concluded: no no_ipv4_gid, no note about index 0
    let mut rxe1: Vec<&str> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["device"] == "rxe1")
        .map(|f| f["code"].as_str().unwrap())
        .collect();
    rxe1.sort();
    assert_eq!(rxe1, ["file_unreadable", "no_dcqcn", "speed_unknown"]);
}

#[test]
fn counters_that_are_not_numbers_are_left_out() {
    let t = healthy_rxe("not_numbers");
    let c = "sys/class/infiniband/rxe0/ports/1/hw_counters";
    t.file(&format!("{c}/rcvd_seq_err"), "abc\n")
        .file(&format!("{c}/sent_pkts"), "-5\n")
        .file(&format!("{c}/rcvd_pkts"), "99999999999999999999999\n")
        .file(&format!("{c}/send_err"), &"7".repeat(100_000));
    let (code, v) = doctor(&t, &[]);
    assert_eq!(code, 0);
    let nan: Vec<&str> = findings(&v, "not_a_number")
        .iter()
        .map(|f| f["evidence"].as_str().unwrap())
        .collect();
    assert_eq!(nan.len(), 3, "{nan:?}");
    assert!(
        nan.iter()
            .any(|e| e.ends_with("rcvd_seq_err: not a number: \"abc\"")),
        "{nan:?}"
    );
    let big = one(&v, "file_unreadable");
    assert!(
        big["evidence"]
            .as_str()
            .unwrap()
            .ends_with("send_err: too large (100000 bytes)"),
        "{big}"
    );
    let hw = v["devices"][0]["ports"][0]["hw_counters"]
        .as_object()
        .unwrap();
    assert_eq!(hw.len(), RXE_COUNTERS.len() - 4);
    assert!(!hw.contains_key("sent_pkts") && hw.contains_key("completer_retry_err"));
}

#[test]
fn counters_that_indicate_trouble_are_called_out() {
    let t = healthy_rxe("trouble");
    let c = "sys/class/infiniband/rxe1/ports/1/hw_counters";
    t.file(&format!("{c}/out_of_seq_request"), "3\n")
        .file(&format!("{c}/rcvd_seq_err"), "2\n")
        .file(&format!("{c}/retry_exceeded_err"), "1\n")
        .file(&format!("{c}/sent_pkts"), "1000\n");
    let (code, v) = doctor(&t, &[]);
    assert_eq!(code, 0, "history, not a current fault: warnings");
    let seq = one(&v, "counter_sequence_errors");
    let dir = t.path().join(c).display().to_string();
    assert_eq!(
        seq["evidence"],
        format!("{dir}/out_of_seq_request: 3, {dir}/rcvd_seq_err: 2")
    );
    assert_eq!(
        (seq["device"].as_str(), seq["severity"].as_str()),
        (Some("rxe1"), Some("warning"))
    );
    assert_eq!(
        one(&v, "counter_retry_exceeded")["evidence"],
        format!("{dir}/retry_exceeded_err: 1")
    );
    assert!(
        findings(&v, "counter_duplicates").is_empty(),
        "duplicate_request is 0"
    );
}

#[test]
fn the_kernel_log_quotes_rdma_errors_and_link_downs() {
    let t = healthy_rxe("kernel_log");
    t.file(
        "dev/kmsg",
        "6,100,2886280,-;infiniband rxe0: set active\n\
         3,101,5000000,-;rdma_rxe: rxe0: qp#17 moved to error state\n\
         \x20SUBSYSTEM=infiniband\n\
         3,102,6000000,-;rdma_rxe: rxe0: qp#17 moved to error state\n\
         6,103,7000000,-;virtio_net virtio1 eth1: Link is Down\n\
         4,104,8000000,-;eth0 speed is unknown, defaulting to 1000\n",
    );
    let (_, v) = doctor(&t, &[]);
    let e = one(&v, "kernel_log_error");
    assert_eq!(
        e["evidence"],
        "kernel log at 5.000 s (2 times, last at 6.000 s): \"rdma_rxe: rxe0: qp#17 moved to error state\""
    );
    assert_eq!(
        (e["device"].as_str(), e["severity"].as_str()),
        (Some("rxe0"), Some("warning"))
    );
    assert!(
        one(&v, "link_down_logged")["evidence"]
            .as_str()
            .unwrap()
            .contains("eth1: Link is Down")
    );
    assert!(
        findings(&v, "kernel_log_warning").is_empty(),
        "the speed message names no RDMA word"
    );
    assert_eq!(v["host"]["kernel_log"], "5 lines read");
}

#[test]
fn netdev_vlan_neighbours_congestion_and_pauses() {
    let t = healthy_mlx5("netdev", 1024);
    // RoCE on VLAN 100 of ens1f0, which is down; an ARP entry without an answer; ECN off; pauses counted
    t.gid("mlx5_0", 6, "0000:0000:0000:0000:0000:ffff:0a64:0001", "RoCE v2", "ens1f0.100")
        .netdev("ens1f0.100", 1500, "lowerlayerdown", true, "-1")
        .netdev("ens1f0", 1500, "down", false, "-1")
        .file("proc/net/vlan/config", "VLAN Dev name    | VLAN ID\nName-Type: VLAN_NAME_TYPE_RAW_PLUS_VID_NO_PAD\nens1f0.100     | 100  | ens1f0\n")
        .file(
            "proc/net/arp",
            "IP address       HW type     Flags       HW address            Mask     Device\n\
             10.100.0.2       0x1         0x0         00:00:00:00:00:00     *        ens1f0.100\n\
             10.100.0.3       0x1         0x2         b8:59:9f:00:00:03     *        ens1f0.100\n",
        )
        .file("ethtool/ens1f0", "NIC statistics:\n     rx_prio3_pause: 12\n     tx_prio3_pause: 0\n");
    for p in 0..8 {
        t.file(
            &format!("sys/class/net/ens1f0/ecn/roce_np/enable/{p}"),
            "0\n",
        )
        .file(
            &format!("sys/class/net/ens1f0/ecn/roce_rp/enable/{p}"),
            "0\n",
        );
    }
    let (code, v) = doctor(&t, &[]);
    assert_eq!(code, 1);
    let vl = one(&v, "vlan_parent_down");
    assert!(
        vl["evidence"]
            .as_str()
            .unwrap()
            .contains("VLAN 100 on ens1f0"),
        "{vl}"
    );
    assert_eq!(vl["fix"], "ip link set ens1f0 up");
    let nd: Vec<&str> = findings(&v, "netdev_down")
        .iter()
        .map(|f| f["evidence"].as_str().unwrap())
        .collect();
    assert_eq!(
        nd.len(),
        2,
        "ens1f0 and its VLAN, the port still ACTIVE: {nd:?}"
    );
    let nb = one(&v, "neighbour_incomplete");
    assert!(
        nb["evidence"]
            .as_str()
            .unwrap()
            .contains("10.100.0.2 on ens1f0.100 incomplete"),
        "{nb}"
    );
    assert!(
        one(&v, "ecn_disabled")["evidence"]
            .as_str()
            .unwrap()
            .ends_with("roce_rp/enable/0..7: all 0")
    );
    assert_eq!(
        one(&v, "pause_frames")["evidence"],
        "ens1f0 ethtool statistics: rx_prio3_pause 12"
    );
    let vlan = &v["devices"][0]["ports"][0]["netdevs"][1];
    assert_eq!(
        (vlan["name"].as_str(), vlan["vlan"]["id"].as_u64()),
        (Some("ens1f0.100"), Some(100))
    );
}

#[test]
fn no_rdma_here_says_which_and_exits_4() {
    let t = Tree::new("no_rdma");
    t.file("proc/sys/kernel/osrelease", "6.1.0-57-amd64\n")
        .file("sys/class/net/eth0/mtu", "1500\n");
    // a tree of sysfs without /sys/module and /lib/modules: ib_core was not loaded, the modules not recorded
    let (code, v) = doctor(&t, &[]);
    assert_eq!(code, 4);
    let f = one(&v, "no_rdma_subsystem");
    let at = |rel: &str| t.path().join(rel).display().to_string();
    assert_eq!(
        f["evidence"],
        format!(
            "{}: missing; {}: not recorded; {}: not recorded",
            at("sys/class/infiniband"),
            at("sys/module/ib_core"),
            at("lib/modules/6.1.0-57-amd64/kernel/drivers/infiniband")
        )
    );
    assert!(
        f["meaning"]
            .as_str()
            .unwrap()
            .starts_with("ib_core was not loaded when the tree was recorded"),
        "{f}"
    );
    // the modules recorded, none of them RDMA's: no RDMA in this kernel
    t.file("sys/module/e1000/refcnt", "0\n")
        .file("lib/modules/6.1.0-57-amd64/kernel/drivers/net/e1000.ko", "");
    let (code, v) = doctor(&t, &[]);
    assert_eq!(code, 4);
    let f = one(&v, "no_rdma_subsystem");
    assert_eq!(
        f["evidence"],
        format!(
            "{}: missing; {}: missing; {}: missing",
            at("sys/class/infiniband"),
            at("sys/module/ib_core"),
            at("lib/modules/6.1.0-57-amd64/kernel/drivers/infiniband")
        )
    );
    assert!(
        f["meaning"]
            .as_str()
            .unwrap()
            .starts_with("no RDMA subsystem in this kernel"),
        "{f}"
    );
    // the modules are there: ib_core is only not loaded
    t.file(
        "lib/modules/6.1.0-57-amd64/kernel/drivers/infiniband/core/ib_core.ko",
        "",
    );
    let (code, v) = doctor(&t, &[]);
    assert_eq!(code, 4);
    assert!(
        one(&v, "no_rdma_subsystem")["fix"]
            .as_str()
            .unwrap()
            .starts_with("modprobe ib_core")
    );
    // the subsystem, no device
    fs::create_dir_all(t.path().join("sys/class/infiniband")).unwrap();
    let (code, v) = doctor(&t, &[]);
    assert_eq!((code, codes(&v)), (4, vec!["no_devices".to_string()]));
    // devices, no libibverbs
    let t = healthy_rxe("no_libibverbs");
    t.remove("usr/lib/x86_64-linux-gnu/libibverbs.so.1");
    let (code, v) = doctor(&t, &[]);
    assert_eq!(code, 4);
    assert_eq!(one(&v, "no_libibverbs")["severity"], "error");
    // libibverbs, no provider for rxe
    let t = healthy_rxe("no_provider");
    t.remove("etc/libibverbs.d/rxe.driver");
    let (code, v) = doctor(&t, &[]);
    assert_eq!(code, 4);
    assert_eq!(findings(&v, "no_provider").len(), 2, "both devices");
    let (_, text, _) = run(&t, &[], false);
    assert!(
        text.ends_with("doctor: no RDMA here (exit status 4)\n"),
        "{text}"
    );
}

#[test]
fn a_device_that_is_not_there_is_one_line() {
    let t = healthy_rxe("no_such_device");
    let (code, out, err) = run(&t, &["-d", "mlx5_9"], true);
    assert_eq!((code, out.as_str()), (1, ""));
    assert_eq!(
        err,
        "rocescope: doctor: no RDMA device 'mlx5_9' (devices here: rxe0, rxe1); give one of them with -d, or none \
         for all\n"
    );
    let (code, _, err) = run(
        &Tree {
            dir: PathBuf::from("/nonexistent/tree"),
        },
        &[],
        true,
    );
    assert_eq!(code, 1);
    assert!(
        err.starts_with("rocescope: doctor: --root /nonexistent/tree: "),
        "{err}"
    );
    // a directory that records no sys/class (the wrong directory, most likely): one line, nothing examined
    let t = Tree::new("not_a_tree");
    t.file("proc/sys/kernel/osrelease", "6.1.0-57-amd64\n");
    let (code, out, err) = run(&t, &[], true);
    assert_eq!((code, out.as_str()), (1, ""));
    assert_eq!(
        err,
        format!(
            "rocescope: doctor: --root {}: no sys/class in it: not a recorded host tree (one holds the host's \
             /sys/class/infiniband, /sys/class/net, /proc/... under the same paths: testdata/host/README.md)\n",
            t.path().display()
        )
    );
}

/// The tree recorded in the lab guest (lab/run doctor, host_tree in lab/guest/scenarios.sh): what its files say.
#[test]
fn the_recorded_lab_tree_is_healthy() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata/host/rxe");
    let t = Tree { dir: dir.clone() };
    let (code, v) = doctor(&t, &[]);
    assert_eq!(code, 0, "{:#}", v["findings"]);
    no_failures(&v);
    let read = |rel: &str| {
        fs::read_to_string(dir.join(rel))
            .unwrap()
            .trim()
            .to_string()
    };
    let devinfo = read("ibv_devinfo");
    for dev in ["rxe0", "rxe1"] {
        let p = format!("sys/class/infiniband/{dev}/ports/1");
        // the IPv4-mapped RoCE v2 GID: the first entry whose address has ffff in its sixth group
        let v4 = (0..8)
            .find(|i| {
                let g = dir.join(format!("{p}/gids/{i}"));
                g.exists()
                    && read(&format!("{p}/gids/{i}")).contains(":ffff:")
                    && read(&format!("{p}/gid_attrs/types/{i}")) == "RoCE v2"
            })
            .unwrap();
        assert_eq!(v["gid_index"][format!("{dev}/1")]["roce_v2_ipv4"], v4);
        let port = v["devices"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["name"] == dev)
            .unwrap()["ports"][0]
            .clone();
        assert_eq!(
            port["state"]["name"],
            read(&format!("{p}/state")).split(": ").nth(1).unwrap()
        );
        // ibv_devinfo's active_mtu of this device: the first after its hca_id line
        let section = devinfo
            .split("hca_id:")
            .find(|s| s.trim_start().starts_with(dev))
            .unwrap();
        let active: u64 = section
            .split("active_mtu:")
            .nth(1)
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(
            (port["active_mtu"].as_u64(), port["mtu_source"].as_str()),
            (Some(active), Some("ibv_devinfo"))
        );
        assert_eq!(
            port["netdevs"][0]["name"],
            read(&format!("sys/class/infiniband/{dev}/parent"))
        );
    }
}

/// What `rocescope counters` and the capture read: the layout of a tree's ports and two snapshots of it,
/// the counters changed in between by the test.
#[test]
fn counter_snapshots_of_a_tree_move_as_the_files_do() {
    use rocescope::host::Root;
    use rocescope::host::counters::{Delta, Deltas, Layout, Snapshot};
    let t = healthy_rxe("snapshots");
    let root = Root::recorded(t.path()).unwrap();
    let e = Layout::find(&root, Some("mlx5_0")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "no RDMA device 'mlx5_0' (devices here: rxe0, rxe1); give one of them with -d, or none for all"
    );
    let layout = Layout::find(&root, None).unwrap();
    let places: Vec<(String, Vec<String>, Vec<String>)> = layout
        .ports
        .iter()
        .map(|p| {
            (
                p.device.clone(),
                p.netdevs.clone(),
                p.addresses.iter().map(|a| a.to_string()).collect(),
            )
        })
        .collect();
    assert_eq!(
        places,
        [
            (
                "rxe0".to_string(),
                vec!["eth0".to_string()],
                vec![
                    "fe80::5054:ff:fe12:3401".to_string(),
                    "10.0.0.1".to_string()
                ]
            ),
            (
                "rxe1".to_string(),
                vec!["eth1".to_string()],
                vec![
                    "fe80::5054:ff:fe12:3402".to_string(),
                    "10.0.0.2".to_string()
                ]
            ),
        ]
    );
    let a = Snapshot::take(&root, &layout);
    let c = "sys/class/infiniband/rxe0/ports/1/hw_counters";
    t.file(&format!("{c}/sent_pkts"), "120\n")
        .file(&format!("{c}/rcvd_seq_err"), "not a number\n")
        .file("sys/class/net/eth0/statistics/rx_packets", "7\n");
    let b = Snapshot::take(&root, &layout);
    let d = Deltas::between(&a, &b, false);
    assert_eq!(d.port("rxe0", 1, "sent_pkts"), Some(Delta::Rose(120)));
    assert_eq!(
        d.port("rxe0", 1, "rcvd_seq_err"),
        None,
        "not a number: left out"
    );
    assert_eq!(d.ports[1].hw_counters.len(), 0, "rxe1: nothing moved");
    assert_eq!(
        d.netdevs[0].statistics.get("rx_packets"),
        Some(&Delta::Rose(7))
    );
    t.file(&format!("{c}/sent_pkts"), "5\n");
    let d = Deltas::between(&b, &Snapshot::take(&root, &layout), false);
    assert_eq!(d.port("rxe0", 1, "sent_pkts"), Some(Delta::Reset("reset")));
}

/// What cannot be read is not a claim about the host (issue 27): sys/class/infiniband as a symbolic link
/// loop, or as a regular file, is `file_unreadable` (an error: nothing could be examined), never "no RDMA
/// subsystem" or "no device: load the NIC's RDMA driver" (exit 4).
#[test]
fn an_unreadable_class_directory_concludes_nothing() {
    for (name, make) in [("class_loop", 0), ("class_file", 1)] {
        let t = healthy_rxe(name);
        let class = t.path().join("sys/class/infiniband");
        fs::remove_dir_all(&class).unwrap();
        let why = if make == 0 {
            symlink("infiniband", &class).unwrap();
            "Too many levels of symbolic links (os error 40)"
        } else {
            fs::write(&class, "").unwrap();
            "not a directory (a regular file where the class directory should be)"
        };
        let (code, v) = doctor(&t, &[]);
        assert_eq!(code, 1, "{:#}", v["findings"]);
        assert_eq!(codes(&v), ["file_unreadable"], "{name}");
        let f = one(&v, "file_unreadable");
        assert_eq!(
            (f["severity"].as_str(), f["layer"].as_str()),
            (Some("error"), Some("kernel"))
        );
        assert_eq!(
            f["evidence"],
            format!("{}: unreadable: {why}", class.display())
        );
        let (_, text, _) = run(&t, &[], false);
        assert!(text.contains("RDMA subsystem unreadable;"), "{text}");
        assert!(
            text.ends_with("doctor: 1 error(s) (exit status 1)\n"),
            "{text}"
        );
    }
}

/// 200 names of one device, each with 200 names of one port (symbolic links: 3,500 inodes, the recipe
/// that ran about 50 minutes): each device and port is read once, the duplicates said in one note, and the
/// rest is what the healthy pair gives.
#[test]
fn many_names_of_one_device_and_port_are_read_once() {
    let t = healthy_rxe("many_names");
    let class = t.path().join("sys/class/infiniband");
    for i in 2..=200 {
        symlink("rxe0", class.join(format!("rxe{i}"))).unwrap();
        symlink("1", class.join(format!("rxe0/ports/{i}"))).unwrap();
    }
    let t0 = Instant::now();
    let (code, v) = doctor(&t, &[]);
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    assert_eq!(code, 0, "{:#}", v["findings"]);
    let names: Vec<&str> = v["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["rxe0", "rxe1"]);
    assert_eq!(v["devices"][0]["ports"].as_array().unwrap().len(), 1);
    let at = |rel: &str| class.join(rel).display().to_string();
    assert_eq!(
        one(&v, "duplicate_paths")["evidence"],
        format!(
            "398 name(s) lead to a device or port read already (the first: {}, the same as {}); 397 more",
            at("rxe0/ports/2"),
            at("rxe0/ports/1")
        )
    );
    let mut c = codes(&v);
    c.sort();
    assert_eq!(
        c,
        [
            "duplicate_paths",
            "gid0_link_local",
            "gid0_link_local",
            "no_dcqcn",
            "no_dcqcn",
            "speed_unknown",
            "speed_unknown"
        ]
    );
}

/// More devices than doctor reads (256), and more ports in all (1024): the rest is not read, one warning
/// says what, and nothing is concluded from it.
#[test]
fn the_work_is_bounded_in_total() {
    let t = healthy_rxe("bounded_devices");
    // 300 devices more, each only its node type (its ports not recorded: a note each)
    for i in 100..400 {
        t.file(&format!("sys/class/infiniband/rxe{i}/node_type"), "1: CA\n");
    }
    let t0 = Instant::now();
    let (code, v) = doctor(&t, &[]);
    assert!(t0.elapsed() < Duration::from_secs(20), "{:?}", t0.elapsed());
    assert_eq!(code, 0, "{:?}", codes(&v));
    assert_eq!(v["devices"].as_array().unwrap().len(), 256);
    // natural order: rxe0, rxe1 (4 characters), then rxe100 ... by name: the 257th is rxe354
    assert_eq!(v["devices"][255]["name"], "rxe353");
    assert_eq!(
        one(&v, "examination_cut")["evidence"],
        "not read: 46 device(s) (from rxe354 on): past the 256 read in all"
    );
    assert_eq!(one(&v, "examination_cut")["severity"], "warning");

    let t = healthy_rxe("bounded_ports");
    let ports = t.path().join("sys/class/infiniband/rxe0/ports");
    for p in 2..=1030 {
        t.file(
            &format!("sys/class/infiniband/rxe0/ports/{p}/link_layer"),
            "InfiniBand\n",
        );
    }
    let (_, v) = doctor(&t, &[]);
    assert_eq!(v["devices"][0]["ports"].as_array().unwrap().len(), 1024);
    assert_eq!(
        one(&v, "examination_cut")["evidence"],
        "not read: 6 port(s) of rxe0 (from port 1025 on): past the 1024 ports read in all; 1 port(s) of rxe1 \
         (from port 1 on): past the 1024 ports read in all"
    );
    assert!(ports.join("1030").is_dir());
}
