//! `rocescope doctor`, `rocescope counters` and the capture's NIC counters on real kernel RoCE: the Soft-RoCE lab
//! (lab/README.md) boots its guest with this test's binary and runs `info` (it takes the IPv6 chatter of
//! link-up), then
//!
//! - counters_loss: netem drops 3% of eth0's egress; `rocescope counters --interval 0.25 --json` runs while
//!   `rocescope capture -i eth0 -q --json -- rocescope gen loopback ... --op write -s 4096 -n 128 --depth 4`
//!   captures in the guest (where rxe's counters are); then the same with -n 16 as text;
//! - doctor: `rocescope doctor` on the healthy pair (and the tree it read, returned as tree.tar), after
//!   `ip link set eth1 down`, after `ip link set eth0 mtu 1000`, and mended.
//!
//! Held, with figures derived independently: the cable capture (tshark) of counters_loss, the guest shell's own
//! readings of rxe's hw_counters over the scenario, netem's drop count (tc -s qdisc), and the tree the guest
//! recorded. The relations measured (and written in docs/json.md): rxe1's rcvd_pkts = the requests on the cable,
//! its sent_pkts = the answers, its out_of_seq_request = the PSN sequence error NAKs it sent, its
//! duplicate_request = the requests behind the PSN a responder expects; rxe0's rcvd_pkts = the answers, its
//! completer_retry_err = the go-back-N rounds, its rcvd_seq_err <= the NAKs; rxe0's sent_pkts - the requests on
//! the cable = what netem dropped (the capture point is after the qdisc).
//!
//! Needs what `lab/setup` installs (it is run here) and about 20-30 s of emulated guest. It fails, with the
//! reason, when the lab cannot run: it never skips.
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

mod lab_support;
use lab_support::run_lab;

const PSN_MOD: u64 = 1 << 24;

/// A RoCE frame of the cable, as tshark decodes it.
struct Frame {
    src: String,
    qp: u64,
    psn: u64,
    syndrome: Option<u64>,
}

fn num(s: &str) -> Option<u64> {
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

fn roce_frames(cable: &Path) -> Vec<Frame> {
    let o = Command::new("tshark")
        .args(["-n", "-r"])
        .arg(cable)
        .args([
            "-Y",
            "udp.dstport == 4791",
            "-T",
            "fields",
            "-E",
            "occurrence=f",
        ])
        .args([
            "-e",
            "ip.src",
            "-e",
            "infiniband.bth.destqp",
            "-e",
            "infiniband.bth.psn",
            "-e",
            "infiniband.aeth.syndrome",
        ])
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
            let v: Vec<&str> = l.split('\t').chain(std::iter::repeat("")).take(4).collect();
            Frame {
                src: v[0].to_string(),
                qp: num(v[1]).unwrap(),
                psn: num(v[2]).unwrap(),
                syndrome: num(v[3]),
            }
        })
        .collect()
}

/// `a` not after `b`, serially.
fn not_after(a: u64, b: u64) -> bool {
    let d = (a + PSN_MOD - b) % PSN_MOD;
    d == 0 || d >= PSN_MOD / 2
}

/// What the cable shows of one gen run (its QPs): requests, answers, sequence error NAKs, go-back-N rounds (a
/// request not after the one before it), and the requests a responder finds behind the PSN it expects
/// (duplicates), two ways: as the capture can tell it (`seen`: the first request seen set the expected PSN)
/// and as rxe counts it (`nic`: its sequence error NAKs name the PSN it expects; they differ when the QP's
/// first request was lost before the cable, and its resend is then no duplicate).
#[derive(Debug, Default, PartialEq)]
struct Cable {
    requests: u64,
    answers: u64,
    seq_naks: u64,
    rounds: u64,
    seen: Behind,
    nic: Behind,
}

/// A responder's expected PSN and the requests behind it, of which `unanswered` came after the responder's
/// last packet: rxe ACKs each duplicate WRITE packet it checks (C9-105), so these were still queued when the
/// QP was destroyed (a timer's resend crossing the last ACK in a slow run) and rxe never counted them.
#[derive(Debug, Default, PartialEq)]
struct Behind {
    epsn: Option<u64>,
    behind: u64,
    unanswered: u64,
}

impl Behind {
    fn request(&mut self, psn: u64) {
        match self.epsn {
            None => self.epsn = Some((psn + 1) % PSN_MOD),
            Some(e) if e == psn => self.epsn = Some((e + 1) % PSN_MOD),
            Some(e) if not_after(psn, e) => {
                self.behind += 1;
                self.unanswered += 1;
            }
            Some(_) => {}
        }
    }

    /// The responder sent something: the requests behind its expected PSN so far were answered.
    fn answered(&mut self) {
        self.unanswered = 0;
    }

    /// Counted by rxe: behind it, and answered.
    fn counted(&self) -> u64 {
        self.behind - self.unanswered
    }
}

fn cable(frames: &[Frame], requester_qp: u64, responder_qp: u64) -> Cable {
    let mut c = Cable::default();
    let mut prev = None::<u64>;
    for f in frames {
        if f.src == "10.0.0.1" && f.qp == requester_qp {
            c.requests += 1;
            c.rounds += u64::from(prev.is_some_and(|p| not_after(f.psn, p)));
            prev = Some(f.psn);
            c.seen.request(f.psn);
            c.nic.request(f.psn);
        } else if f.src == "10.0.0.2" && f.qp == responder_qp {
            c.answers += 1;
            c.seen.answered();
            c.nic.answered();
            if f.syndrome == Some(0x60) {
                c.seq_naks += 1;
                c.nic.epsn = Some(f.psn);
            }
        }
    }
    c
}

/// "rxeN counter +D" lines after "--- rxe hw_counters that changed" (lab/guest/scenarios.sh, run_scenario).
fn changed(log: &str) -> BTreeMap<String, u64> {
    log.split("--- rxe hw_counters that changed")
        .nth(1)
        .expect("no hw_counters in perftest.log")
        .lines()
        .filter_map(|l| match l.split_whitespace().collect::<Vec<_>>()[..] {
            [dev, c, d] if dev.starts_with("rxe") => Some((
                format!("{dev} {c}"),
                d.trim_start_matches('+').parse().ok()?,
            )),
            _ => None,
        })
        .collect()
}

fn relation<'a>(counters: &'a Value, dev: &str, counter: &str) -> &'a Value {
    counters["relations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["device"] == dev && r["counter"] == counter)
        .unwrap_or_else(|| panic!("no relation {dev} {counter}: {counters:#}"))
}

fn pair(r: &Value) -> (u64, u64) {
    (r["nic"].as_u64().unwrap(), r["capture"].as_u64().unwrap())
}

#[test]
fn doctor_counters_and_the_capture_on_soft_roce() {
    let (out, secs) = run_lab("lab-doctor", &["info", "counters_loss", "doctor"]);
    eprintln!("lab run: {secs:.1} s");
    counters_and_capture(&out.join("counters_loss"));
    doctor(&out.join("doctor"));
}

fn read(dir: &Path, f: &str) -> String {
    fs::read_to_string(dir.join(f))
        .unwrap_or_else(|e| panic!("{}: {e} (did the guest return it?)", dir.join(f).display()))
}

fn counters_and_capture(dir: &Path) {
    let log = read(dir, "perftest.log");
    let report: Value = serde_json::from_str(&read(dir, "capture.json")).expect("capture.json");
    let frames = roce_frames(&dir.join("cable.pcap"));
    // the JSON run's QPs: its two flows' destination QPs
    let flows = report["flows"].as_array().unwrap();
    let qp_of = |src: &str| {
        flows.iter().find(|f| f["src"] == src).unwrap()["dest_qp"]
            .as_u64()
            .unwrap()
    };
    let c = cable(&frames, qp_of("10.0.0.1"), qp_of("10.0.0.2"));
    assert!(
        c.seq_naks > 0 && c.rounds > 0,
        "3 % loss of 512 requests gave no NAK: {c:?}"
    );
    let n = &report["counters"];
    // the capture's figures are the cable's
    assert_eq!(
        pair(relation(n, "rxe1", "rcvd_pkts")),
        (c.requests, c.requests)
    );
    assert_eq!(
        pair(relation(n, "rxe1", "sent_pkts")),
        (c.answers, c.answers)
    );
    assert_eq!(
        pair(relation(n, "rxe0", "rcvd_pkts")),
        (c.answers, c.answers)
    );
    assert_eq!(
        pair(relation(n, "rxe1", "out_of_seq_request")),
        (c.seq_naks, c.seq_naks)
    );
    assert_eq!(
        pair(relation(n, "rxe0", "completer_retry_err")),
        (c.rounds, c.rounds)
    );
    assert_eq!(
        pair(relation(n, "rxe1", "duplicate_request")),
        (c.nic.counted(), c.seen.behind)
    );
    let seq = relation(n, "rxe0", "rcvd_seq_err");
    assert!(
        seq["holds"] == true && pair(seq).0 <= c.seq_naks && pair(seq).1 == c.seq_naks,
        "{seq}"
    );
    // rxe0 counted what netem dropped before the capture point: the one relation that does not hold
    let sent = relation(n, "rxe0", "sent_pkts");
    let (nic_sent, seen) = pair(sent);
    assert_eq!(seen, c.requests);
    assert_eq!(
        n["disagreements"],
        u64::from(nic_sent > c.requests),
        "{n:#}"
    );
    assert_eq!(sent["holds"], nic_sent == c.requests);
    // over the whole scenario (both runs), the guest shell's readings and netem's count
    let requests = frames.iter().filter(|f| f.src == "10.0.0.1").count() as u64;
    let naks = frames
        .iter()
        .filter(|f| f.src == "10.0.0.2" && f.syndrome == Some(0x60))
        .count() as u64;
    let shell = changed(&log);
    // tc -s qdisc: " Sent 748186 bytes 689 pkt (dropped 24, overlimits 0 requeues 0)"
    let dropped: u64 = log
        .lines()
        .find_map(|l| {
            l.trim_start()
                .strip_prefix("Sent ")?
                .split("pkt (dropped ")
                .nth(1)?
                .split(',')
                .next()?
                .parse()
                .ok()
        })
        .expect("netem's statistics in the log");
    assert_eq!(shell["rxe1 rcvd_pkts"], requests);
    assert_eq!(shell["rxe1 out_of_seq_request"], naks);
    assert_eq!(
        shell["rxe0 sent_pkts"] - requests,
        dropped,
        "rxe0 sent what the cable carried and netem dropped"
    );
    assert!(nic_sent - c.requests <= dropped);
    // the capture interface's statistics
    let eth0 = n["netdevs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["netdev"] == "eth0")
        .unwrap();
    assert!(
        eth0["statistics"]["tx_packets"].as_u64().unwrap() >= c.requests,
        "{eth0}"
    );
    assert!(
        eth0["statistics"]["rx_packets"].as_u64().unwrap() >= c.answers,
        "{eth0}"
    );
    counters_lines(dir, &c, nic_sent);
    let text = read(dir, "capture.txt");
    assert!(
        text.contains("NIC counters over the capture")
            && text.contains("rxe1/1 out_of_seq_request +"),
        "{text}"
    );
}

/// `counters --json`: rising counters in an interval, the intervals adding up to the total, the total
/// the JSON run's figures (it ran around that run only).
fn counters_lines(dir: &Path, c: &Cable, nic_sent: u64) {
    let lines: Vec<Value> = read(dir, "counters.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let (total, intervals) = lines.split_last().expect("counters wrote nothing");
    assert_eq!(total["kind"], "total");
    let hw = |l: &Value, dev: &str, name: &str| -> u64 {
        l["ports"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["device"] == dev)
            .unwrap()["hw_counters"][name]
            .as_u64()
            .unwrap_or(0)
    };
    let rising = intervals
        .iter()
        .filter(|l| hw(l, "rxe0", "completer_retry_err") > 0)
        .count();
    // At least one interval shows it rising; how many depends on how fast the emulated guest runs the
    // workload (a CI run under load did it within one).
    assert!(
        rising >= 1,
        "completer_retry_err rose in {rising} of {} intervals",
        intervals.len()
    );
    for (dev, name) in [
        ("rxe0", "sent_pkts"),
        ("rxe0", "completer_retry_err"),
        ("rxe1", "out_of_seq_request"),
        ("rxe1", "rcvd_pkts"),
    ] {
        let sum: u64 = intervals.iter().map(|l| hw(l, dev, name)).sum();
        assert_eq!(sum, hw(total, dev, name), "{dev} {name}");
    }
    assert_eq!(hw(total, "rxe1", "rcvd_pkts"), c.requests);
    assert_eq!(hw(total, "rxe1", "out_of_seq_request"), c.seq_naks);
    assert_eq!(hw(total, "rxe0", "completer_retry_err"), c.rounds);
    assert_eq!(hw(total, "rxe0", "sent_pkts"), nic_sent);
}

fn doctor(dir: &Path) {
    let tree = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("lab-doctor")
        .join("tree");
    let _ = fs::remove_dir_all(&tree);
    fs::create_dir_all(&tree).unwrap();
    let st = Command::new("tar")
        .arg("-C")
        .arg(&tree)
        .arg("-xf")
        .arg(dir.join("tree.tar"))
        .status()
        .unwrap();
    assert!(st.success());
    let json = |tag: &str| -> (u64, Value) {
        let code = read(dir, &format!("doctor-{tag}.exit"))
            .trim()
            .parse()
            .unwrap();
        (
            code,
            serde_json::from_str(&read(dir, &format!("doctor-{tag}.json"))).unwrap(),
        )
    };
    let errors = |v: &Value| -> Vec<String> {
        v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["severity"] == "error")
            .map(|f| f["code"].as_str().unwrap().to_string())
            .collect()
    };
    let find = |v: &Value, code: &str| -> Value {
        v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["code"] == code)
            .cloned()
            .unwrap_or_else(|| panic!("no {code}: {v:#}"))
    };
    // healthy: no error, the RoCE v2 IPv4 GID index the guest's own tree holds, the MTU libibverbs gives
    let (code, v) = json("healthy");
    assert_eq!((code, errors(&v)), (0, vec![]), "{:#}", v["findings"]);
    for (dev, ip_hex) in [("rxe0", "0a00:0001"), ("rxe1", "0a00:0002")] {
        let p = tree.join(format!("sys/class/infiniband/{dev}/ports/1"));
        let index = (0..8)
            .find(|i| {
                fs::read_to_string(p.join(format!("gids/{i}")))
                    .is_ok_and(|g| g.trim().ends_with(&format!("ffff:{ip_hex}")))
                    && fs::read_to_string(p.join(format!("gid_attrs/types/{i}")))
                        .is_ok_and(|t| t.trim() == "RoCE v2")
            })
            .unwrap();
        assert_eq!(v["gid_index"][format!("{dev}/1")]["roce_v2_ipv4"], index);
        let port = &v["devices"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["name"] == dev)
            .unwrap()["ports"][0];
        assert_eq!(
            (port["active_mtu"].as_u64(), port["mtu_source"].as_str()),
            (Some(1024), Some("verbs"))
        );
    }
    assert!(
        read(dir, "doctor-healthy.txt").ends_with("doctor: no error (exit status 0)\nexit 0\n")
    );
    // eth1 down: rxe1's port is DOWN, and the fix brings eth1 up
    let (code, v) = json("down");
    assert_eq!((code, errors(&v)), (1, vec!["port_down".to_string()]));
    let f = find(&v, "port_down");
    assert_eq!(
        (f["device"].as_str(), f["fix"].as_str()),
        (Some("rxe1"), Some("ip link set eth1 up"))
    );
    assert!(
        f["evidence"].as_str().unwrap().contains("state: 1: DOWN"),
        "{f}"
    );
    // eth0 at MTU 1000: rxe0's active MTU fell to 512; the finding says what 1024 needs
    let (code, v) = json("mtu");
    assert_eq!(
        (code, errors(&v)),
        (1, vec!["netdev_mtu_too_small".to_string()])
    );
    let f = find(&v, "netdev_mtu_too_small");
    assert_eq!(f["device"], "rxe0");
    assert!(
        f["evidence"]
            .as_str()
            .unwrap()
            .contains("eth0/mtu: 1000, which carries IB MTU 512 at most"),
        "{f}"
    );
    assert!(
        f["evidence"]
            .as_str()
            .unwrap()
            .ends_with("the port's active MTU: 512 (verbs)"),
        "{f}"
    );
    assert!(
        f["fix"]
            .as_str()
            .unwrap()
            .starts_with("ip link set eth0 mtu 1500 (at least 1104)"),
        "{f}"
    );
    // mended: no error; rxe1's link_downed counted the bounce
    let (code, v) = json("mended");
    assert_eq!((code, errors(&v)), (0, vec![]));
    let f = find(&v, "counter_link_errors");
    assert!(
        f["device"] == "rxe1" && f["evidence"].as_str().unwrap().ends_with("link_downed: 1"),
        "{f}"
    );
}
