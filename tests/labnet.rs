//! `rocescope lab up | down | status` (src/lab/).
//!
//! (1) Here, on a machine whose kernel has no RDMA: `status` and `down` with no lab up (exit 1, one line);
//!     `lab up` fails at the rxe step with one line and leaves nothing behind (links, rules, routes, neighbours,
//!     sysctls and the state file as before), once in a fresh network namespace set up like a stock host
//!     (rp_filter on, so up has values to change and restore) and once in this machine's own namespace; `down`
//!     removes a lab recorded in a state file (built here by hand, rxe apart) and restores what it changed;
//!     `up` as another user, and with unusable options, fails in one line.
//! (2) In the Soft-RoCE lab (lab/README.md), scenario lab_updown: `lab up`, `lab status`, `gen loopback
//!     --capture` (write, send, read and fetch-add: PASS, gen's flows equal the capture's), `lab down`, with the network and RDMA
//!     state before and after identical.
//!
//! The state file goes to a test directory (ROCESCOPE_LAB_STATE); names, addresses, tables and preferences
//! are this test's own, so that tests running at the same time cannot collide. These tests need root (CI runs
//! them as root); without it the ones that change the network say so and return.
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

mod lab_support;
use lab_support::{bin, run_lab};

fn is_root() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

fn skip_unless_root(test: &str) -> bool {
    if is_root() {
        return false;
    }
    eprintln!(
        "{test}: skipped: needs root (it creates interfaces and network namespaces); CI runs it as root"
    );
    true
}

fn tmpdir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("labnet-{name}"));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).unwrap();
    d
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `rocescope lab ARGS` with the state file at `state`, in network namespace `ns` when given.
fn lab(ns: Option<&str>, state: &Path, args: &[&str]) -> Output {
    let mut c = match ns {
        Some(ns) => {
            let mut c = Command::new("ip");
            c.args(["netns", "exec", ns, bin()]);
            c
        }
        None => Command::new(bin()),
    };
    c.arg("lab")
        .args(args)
        .env("ROCESCOPE_LAB_STATE", state)
        .output()
        .expect("run rocescope lab")
}

/// Runs a shell script (in `ns` when given); panics when it fails.
fn sh(ns: Option<&str>, script: &str) -> String {
    let mut c = match ns {
        Some(ns) => {
            let mut c = Command::new("ip");
            c.args(["netns", "exec", ns, "sh", "-c", script]);
            c
        }
        None => {
            let mut c = Command::new("sh");
            c.args(["-c", script]);
            c
        }
    };
    let o = c.output().expect("run sh");
    assert!(
        o.status.success(),
        "{script}: {}\n{}",
        o.status,
        text(&o.stderr)
    );
    text(&o.stdout)
}

/// What `lab up` / `lab down` must leave as they found it.
fn snapshot(ns: Option<&str>) -> String {
    sh(
        ns,
        "set -e; echo '--- link'; ip -d link; echo '--- rule'; ip rule; echo '--- route'; \
         ip route show table all; echo '--- neigh'; ip neigh show nud permanent; echo '--- sysctl'; \
         grep -H '' /proc/sys/net/ipv4/conf/*/rp_filter /proc/sys/net/ipv4/conf/*/accept_local",
    )
}

/// A network namespace of its own, deleted on drop.
struct Netns(String);

impl Netns {
    fn new(tag: &str) -> Netns {
        let name = format!("rslab-{tag}-{}", std::process::id());
        let _ = Command::new("ip").args(["netns", "del", &name]).output();
        let o = Command::new("ip")
            .args(["netns", "add", &name])
            .output()
            .unwrap();
        assert!(o.status.success(), "ip netns add: {}", text(&o.stderr));
        Netns(name)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).output();
    }
}

fn one_error_line(o: &Output, what: &str) -> String {
    let err = text(&o.stderr);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(
        lines.len(),
        1,
        "{what}: one line on stderr, got:\n{err}\nstdout:\n{}",
        text(&o.stdout)
    );
    assert!(
        lines[0].starts_with("rocescope: lab: "),
        "{what}: {}",
        lines[0]
    );
    lines[0].to_string()
}

#[test]
fn status_and_down_when_not_up() {
    let dir = tmpdir("not-up");
    let state = dir.join("lab.json");
    for (cmd, says) in [
        ("status", "`rocescope lab up` builds it"),
        ("down", "nothing to remove"),
    ] {
        let o = lab(None, &state, &[cmd]);
        assert_eq!(o.status.code(), Some(1), "lab {cmd}: {}", text(&o.stderr));
        assert!(o.stdout.is_empty(), "lab {cmd}: stdout {}", text(&o.stdout));
        let l = one_error_line(&o, cmd);
        assert_eq!(
            l,
            format!(
                "rocescope: lab: not up (no state file {}): {says}",
                state.display()
            )
        );
    }
    assert!(!state.exists());
}

#[test]
fn up_refuses_unusable_options_and_other_users() {
    let dir = tmpdir("options");
    let state = dir.join("lab.json");
    let o = lab(None, &state, &["up", "--name", "a/b"]);
    assert_eq!(o.status.code(), Some(2), "usage error: {}", text(&o.stderr));
    let o = lab(None, &state, &["up", "--name", "fifteen_chars_x"]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "15 characters: NAME0 would not fit an interface name"
    );
    let o = lab(
        None,
        &state,
        &["up", "--addr-a", "10.79.99.1", "--addr-b", "10.79.99.1"],
    );
    assert_eq!(o.status.code(), Some(1));
    let l = one_error_line(&o, "same addresses");
    assert!(l.contains("both 10.79.99.1"), "{l}");
    let o = lab(None, &state, &["up", "--table", "253"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(one_error_line(&o, "table 253").contains("kernel table"));
    assert!(!state.exists());

    if skip_unless_root("up as another user") {
        return;
    }
    // The binary copied where any user may run it: the checkout may sit under a directory that user cannot
    // enter (a clone under a 0700 directory), and the state file's directory too, which `up` must not read
    // before it has checked its privilege.
    let shared = std::env::temp_dir().join(format!("rocescope-labnet-{}", std::process::id()));
    fs::create_dir_all(&shared).unwrap();
    let exe = shared.join("rocescope");
    fs::copy(bin(), &exe).unwrap();
    use std::os::unix::fs::PermissionsExt;
    for (p, mode) in [(&shared, 0o755), (&exe, 0o755), (&dir, 0o700)] {
        fs::set_permissions(p, fs::Permissions::from_mode(mode)).unwrap();
    }
    let o = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&exe)
        .args(["lab", "up", "--name", "rlnobody"])
        .env("ROCESCOPE_LAB_STATE", &state)
        .output()
        .expect("setpriv");
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let l = one_error_line(&o, "not root");
    assert!(l.contains("needs root") && l.contains("sudo"), "{l}");
    assert!(!state.exists());
    assert!(!Path::new("/sys/class/net/rlnobody0").exists());
    fs::remove_dir_all(&shared).unwrap();
}

/// `lab up` where rdma_rxe cannot run: everything before the rxe step is built (veth, sysctls, addresses,
/// routes, rules, the local rule move, neighbours), then undone. `ns`: run in that namespace.
fn up_fails_at_rxe_and_leaves_nothing(ns: Option<&str>, name: &str, extra: &[&str], what: &str) {
    let dir = tmpdir(what);
    let state = dir.join("lab.json");
    let before = snapshot(ns);
    let mut args = vec!["up", "--name", name];
    args.extend_from_slice(extra);
    let o = lab(ns, &state, &args);
    let after = snapshot(ns);
    if Path::new("/sys/class/infiniband_verbs").exists() {
        // not this project's machines: with RDMA, up may succeed; then down must restore everything
        eprintln!(
            "{what}: this host has RDMA: lab up exit {:?}",
            o.status.code()
        );
        if o.status.success() {
            let d = lab(ns, &state, &["down"]);
            assert!(d.status.success(), "{what}: down: {}", text(&d.stderr));
            assert_eq!(snapshot(ns), before, "{what}: after up and down");
            return;
        }
    }
    assert_eq!(o.status.code(), Some(1), "{what}: {}", text(&o.stderr));
    assert!(o.stdout.is_empty(), "{what}: stdout {}", text(&o.stdout));
    let l = one_error_line(&o, what);
    let want = format!(
        "rocescope: lab: cannot create the rxe device rxe_{name}0 on {name}0 (`rdma link add` said: "
    );
    assert!(l.starts_with(&want), "{what}: {l}");
    assert!(
        l.contains("`modprobe rdma_rxe`") && l.ends_with("; lab up undid everything it had done"),
        "{what}: {l}"
    );
    // The package named is this distribution's (Debian ships rdma_rxe in linux-image, Ubuntu in
    // linux-modules-extra).
    let os = fs::read_to_string("/etc/os-release").unwrap_or_default();
    if os.lines().any(|l| l == "ID=debian") {
        assert!(
            l.contains("apt install linux-image-") && !l.contains("linux-modules-extra"),
            "{what}: {l}"
        );
    }
    assert!(!state.exists(), "{what}: state file left behind");
    assert!(
        fs::read_dir(&dir).unwrap().next().is_none(),
        "{what}: files left in the state directory"
    );
    if before != after {
        let b: Vec<&str> = before.lines().collect();
        let a: Vec<&str> = after.lines().collect();
        let gone: Vec<&&str> = b.iter().filter(|l| !a.contains(l)).collect();
        let new: Vec<&&str> = a.iter().filter(|l| !b.contains(l)).collect();
        panic!("{what}: lab up left changes behind: lost {gone:?}, new {new:?}");
    }
    assert!(!after.contains(&format!("{name}0")), "{what}: {name}0 left");
}

#[test]
fn up_without_rdma_in_a_fresh_namespace_leaves_nothing_behind() {
    if skip_unless_root("up_without_rdma_in_a_fresh_namespace") {
        return;
    }
    let ns = Netns::new("up");
    // like a stock host: strict reverse-path filtering everywhere, so up must change and restore it (all) and
    // set it on its veths (default), and lo up
    sh(
        Some(&ns.0),
        "ip link set lo up; echo 1 > /proc/sys/net/ipv4/conf/all/rp_filter; \
         echo 2 > /proc/sys/net/ipv4/conf/default/rp_filter",
    );
    let before = snapshot(Some(&ns.0));
    assert!(before.contains("0:\tfrom all lookup local"), "{before}");
    assert!(before.contains("/proc/sys/net/ipv4/conf/all/rp_filter:1"));
    up_fails_at_rxe_and_leaves_nothing(Some(&ns.0), "rlab", &[], "fresh namespace");
}

#[test]
fn up_without_rdma_on_this_host_leaves_nothing_behind() {
    if skip_unless_root("up_without_rdma_on_this_host") {
        return;
    }
    let name = format!("rlh{}", std::process::id() % 100_000);
    up_fails_at_rxe_and_leaves_nothing(
        None,
        &name,
        &[
            "--addr-a",
            "10.79.95.1",
            "--addr-b",
            "10.79.95.2",
            "--table",
            "7995",
            "--pref",
            "20",
        ],
        "this host",
    );
}

/// `down` on a lab recorded in a state file: here the items are built by hand (no rxe on this machine) in a
/// namespace of their own; `status` finds them (and the missing rxe devices), `down` removes them and restores
/// the values they replaced.
#[test]
fn down_removes_what_the_state_records_and_restores_values() {
    if skip_unless_root("down_removes_what_the_state_records") {
        return;
    }
    let ns = Netns::new("down");
    let n = Some(ns.0.as_str());
    sh(
        n,
        "ip link set lo up; echo 1 > /proc/sys/net/ipv4/conf/all/rp_filter",
    );
    let before = snapshot(n);
    let mac = |dev: &str| {
        sh(n, &format!("cat /sys/class/net/{dev}/address"))
            .trim()
            .to_string()
    };
    sh(
        n,
        "set -e; ip link add fx0 type veth peer name fx1; ip link set fx0 up; ip link set fx1 up; \
         echo 0 > /proc/sys/net/ipv4/conf/all/rp_filter; \
         ip addr add 10.79.96.1/32 dev fx0; ip addr add 10.79.96.2/32 dev fx1; \
         ip route add 10.79.96.2/32 dev fx0 src 10.79.96.1 table 7996; \
         ip rule add pref 30 iif lo from 10.79.96.1 to 10.79.96.2 lookup 7996; \
         ip rule add pref 32 lookup local; ip rule del pref 0 lookup local",
    );
    let mac1 = mac("fx1");
    sh(
        n,
        &format!("ip neigh replace 10.79.96.2 lladdr {mac1} dev fx0 nud permanent"),
    );
    let during = snapshot(n);
    assert_ne!(during, before);
    let st = serde_json::json!({
        "version": 1,
        "complete": true,
        "config": {
            "veth_a": "fx0", "veth_b": "fx1", "rxe_a": "rxe_fx0", "rxe_b": "rxe_fx1",
            "addr_a": "10.79.96.1", "addr_b": "10.79.96.2", "table_a": 7996, "table_b": 7997,
            "pref_a": 30, "pref_b": 31, "pref_local": 32
        },
        "items": [
            {"kind": "veth", "a": "fx0", "b": "fx1"},
            {"kind": "sysctl", "key": "net/ipv4/conf/all/rp_filter", "previous": "1", "value": "0"},
            {"kind": "addr", "dev": "fx0", "addr": "10.79.96.1"},
            {"kind": "addr", "dev": "fx1", "addr": "10.79.96.2"},
            {"kind": "route", "table": 7996, "dst": "10.79.96.2", "dev": "fx0", "src": "10.79.96.1"},
            {"kind": "rule", "pref": 30, "from": "10.79.96.1", "to": "10.79.96.2", "table": 7996},
            {"kind": "local_rule_moved", "from": 0, "to": 32},
            {"kind": "neigh", "dev": "fx0", "addr": "10.79.96.2", "mac": mac1},
            // recorded but not there: status and down must say so
            {"kind": "rule", "pref": 31, "from": "10.79.96.2", "to": "10.79.96.1", "table": 7997}
        ]
    });
    let dir = tmpdir("down");
    let state = dir.join("lab.json");
    fs::write(&state, serde_json::to_vec_pretty(&st).unwrap()).unwrap();

    let o = lab(n, &state, &["status"]);
    let out = text(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(1),
        "status:\n{out}\n{}",
        text(&o.stderr)
    );
    assert_eq!(out.matches("\n  present  ").count(), 8, "status:\n{out}");
    assert!(
        out.contains("  MISSING  rule pref 31: iif lo from 10.79.96.2 to 10.79.96.1 lookup 7997"),
        "{out}"
    );
    assert!(out.contains("  present  local table rule moved from pref 0 to pref 32"));
    assert!(out.contains("  present  net.ipv4.conf.all.rp_filter = 0 (was 1)"));
    assert!(
        out.contains("  rxe_fx0: no such RDMA device")
            && out.contains("  rxe_fx1: no such RDMA device")
    );
    let l = one_error_line(&o, "status");
    assert_eq!(
        l,
        "rocescope: lab: partly broken: 1 of 9 items missing, rxe_fx0 missing, rxe_fx1 missing: \
         `rocescope lab down` removes the rest, then `rocescope lab up`"
    );
    // up refuses while a lab is recorded
    let o = lab(n, &state, &["up"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(one_error_line(&o, "up when up").contains("already up with other settings"));
    let same = [
        "up",
        "--name",
        "fx",
        "--addr-a",
        "10.79.96.1",
        "--addr-b",
        "10.79.96.2",
        "--table",
        "7996",
        "--pref",
        "30",
    ];
    let o = lab(n, &state, &same);
    assert_eq!(o.status.code(), Some(0), "up when up: {}", text(&o.stderr));
    assert_eq!(
        text(&o.stdout),
        format!(
            "lab: already up (rxe_fx0 on fx0, rxe_fx1 on fx1; state in {}): `rocescope lab status` checks \
             it, `rocescope lab down` removes it\n",
            state.display()
        )
    );
    assert_eq!(snapshot(n), during, "up when up changes nothing");

    let o = lab(n, &state, &["down"]);
    let out = text(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "down:\n{out}\n{}",
        text(&o.stderr)
    );
    let lines: Vec<&str> = out.lines().collect();
    // reverse order of the state file
    assert_eq!(
        lines,
        [
            "  already gone: rule pref 31: iif lo from 10.79.96.2 to 10.79.96.1 lookup 7997"
                .to_string(),
            format!("  removed static neighbour 10.79.96.2 lladdr {mac1} on fx0"),
            "  local table rule back at pref 0".into(),
            "  removed rule pref 30: iif lo from 10.79.96.1 to 10.79.96.2 lookup 7996".into(),
            "  removed route 10.79.96.2/32 dev fx0 src 10.79.96.1 table 7996".into(),
            "  removed address 10.79.96.2/32 on fx1".into(),
            "  removed address 10.79.96.1/32 on fx0".into(),
            "  restored net.ipv4.conf.all.rp_filter = 1".into(),
            "  removed veth pair fx0 <-> fx1".into(),
            "lab down: 9 undone (rxe_fx0 on fx0, rxe_fx1 on fx1)".into(),
        ]
    );
    assert!(!state.exists());
    assert_eq!(snapshot(n), before, "after down");
}

// ---------------------------------------------------------------------------------------------------------
// In the Soft-RoCE lab guest: the real thing.

const VETH_A: &str = "rlab0";
const VETH_B: &str = "rlab1";
const RXE_A: &str = "rxe_rlab0";
const RXE_B: &str = "rxe_rlab1";
const ADDR_A: &str = "10.79.91.1";
const ADDR_B: &str = "10.79.91.2";

fn u(v: &Value) -> u64 {
    v.as_u64()
        .unwrap_or_else(|| panic!("not an unsigned number: {v}"))
}

fn read(dir: &Path, f: &str) -> String {
    fs::read_to_string(dir.join(f)).unwrap_or_else(|e| panic!("lab_updown: {f} came back? {e}"))
}

/// The file's last line is "exit N"; returns the text before it.
fn exited(dir: &Path, f: &str, code: i32) -> String {
    let t = read(dir, f);
    let (body, last) = t.trim_end().rsplit_once('\n').unwrap_or(("", t.trim_end()));
    assert_eq!(last, format!("exit {code}"), "lab_updown: {f}:\n{t}");
    body.to_string()
}

fn psn_span(first: u64, last: u64) -> u64 {
    (last.wrapping_sub(first) & 0xff_ffff) + 1
}

/// One `gen loopback --capture rlab0 --json` run: exit 0, PASS, and gen's flows are the capture's.
fn check_gen(dir: &Path, op: &str) -> String {
    let log = exited(dir, &format!("gen-{op}.log"), 0);
    assert_eq!(log.trim(), "FABRIC CHECK: PASS", "gen {op}: standard error");
    let g: Value = serde_json::from_str(&read(dir, &format!("gen-{op}.json")))
        .unwrap_or_else(|e| panic!("gen-{op}.json: {e}"));
    assert!(g["error"].is_null(), "gen {op}: {}", g["error"]);
    assert_eq!(g["op"], op);
    assert_eq!(u(&g["messages"]), 32);
    assert_eq!(u(&g["completion_errors"]), 0);
    assert_eq!(
        g["data_check"]["status"], "passed",
        "gen {op}: {}",
        g["data_check"]
    );
    assert_eq!(
        u(&g["mtu"]),
        1024,
        "gen {op}: active MTU of a 1500-byte veth"
    );
    for (side, dev, netdev, ip) in [
        ("requester", RXE_A, VETH_A, ADDR_A),
        ("responder", RXE_B, VETH_B, ADDR_B),
    ] {
        let e = &g[side];
        assert_eq!(e["device"], dev, "gen {op}: {side}");
        assert_eq!(e["netdev"], netdev, "gen {op}: {side}");
        assert_eq!(e["gid"], format!("::ffff:{ip}"), "gen {op}: {side}");
        assert_eq!(e["gid_type"], "RoCE v2");
    }
    let cap = &g["capture"];
    let stats = &cap["report"]["capture_stats"];
    assert_eq!(stats["interface"], VETH_A);
    assert_eq!(u(&stats["dropped"]), 0, "gen {op}: capture drops");
    let check = &cap["check"];
    assert_eq!(check["status"], "pass", "gen {op}: {check}");
    assert_eq!(check["line"], "FABRIC CHECK: PASS");
    for k in [
        "gap_events",
        "missing",
        "naks",
        "rnr_naks",
        "retransmitted",
        "other_flows",
    ] {
        assert_eq!(u(&check[k]), 0, "gen {op}: check {k}");
    }

    let mut captured: BTreeMap<(String, String, u64), &Value> = BTreeMap::new();
    for f in cap["report"]["flows"].as_array().expect("capture flows") {
        let key = (
            f["src"].as_str().unwrap().to_string(),
            f["dst"].as_str().unwrap().to_string(),
            u(&f["dest_qp"]),
        );
        assert!(captured.insert(key, f).is_none(), "gen {op}: two flows {f}");
    }
    let gf = g["flows"].as_array().expect("gen flows");
    assert_eq!(gf.len(), 2, "gen {op}: flows {}", g["flows"]);
    assert_eq!(
        captured.len(),
        2,
        "gen {op}: captured {:?}",
        captured.keys()
    );
    // requests go A -> B to the responder's QP, answers B -> A to the requester's
    assert_eq!(
        (gf[0]["src"].as_str(), gf[0]["dst"].as_str()),
        (Some(ADDR_A), Some(ADDR_B))
    );
    assert_eq!(u(&gf[0]["dest_qp"]), u(&g["responder"]["qpn"]));
    assert_eq!(u(&gf[1]["dest_qp"]), u(&g["requester"]["qpn"]));
    // 32 x 4096 bytes at MTU 1024: 128 WRITE or SEND packets, or 32 READ requests of 4 PSNs each and 128
    // responses; 32 FETCH_ADDs of one PSN each and their 32 ATOMIC_ACKNOWLEDGEs
    let (requests, psns) = match op {
        "read" => (32, 128),
        "fetch-add" => (32, 32),
        _ => (128, 128),
    };
    for (i, e) in gf.iter().enumerate() {
        let key = (
            e["src"].as_str().unwrap().to_string(),
            e["dst"].as_str().unwrap().to_string(),
            u(&e["dest_qp"]),
        );
        let f = captured.get(&key).unwrap_or_else(|| {
            panic!("gen {op}: flow {key:?} not captured: {:?}", captured.keys())
        });
        let what = format!("gen {op}: flow {key:?} ({})", e["carries"]);
        assert_eq!(f["role"], e["role"], "{what}");
        assert_eq!(f["psn"]["first"], e["psn_first"], "{what}: first PSN");
        assert_eq!(f["psn"]["last"], e["psn_last"], "{what}: last PSN");
        // the requests and READ responses use the requester's 128 PSNs; ACKs (coalesced) end on its last
        let (first, last) = (u(&g["requester"]["sq_psn"]), u(&gf[0]["psn_last"]));
        assert_eq!(psn_span(first, last), psns, "{what}: PSNs used");
        assert_eq!(u(&e["psn_last"]), last, "{what}");
        if e["carries"] != "ACKs" {
            assert_eq!(u(&e["psn_first"]), first, "{what}");
        }
        if e["carries"] == "ACKs" {
            assert!(
                (1..=u(&e["packets"])).contains(&u(&f["packets"])),
                "{what}: {}",
                f["packets"]
            );
        } else {
            assert_eq!(f["packets"], e["packets"], "{what}: packets");
        }
        if i == 0 {
            assert_eq!(u(&f["packets"]), requests, "{what}: request packets");
        } else if op == "read" {
            assert_eq!(u(&f["packets"]), 128, "{what}: READ responses");
        } else if op == "fetch-add" {
            assert_eq!(u(&f["packets"]), 32, "{what}: ATOMIC_ACKNOWLEDGEs");
        }
        for k in ["gap_events", "missing", "retransmitted", "duplicates"] {
            assert_eq!(u(&f["psn"][k]), 0, "{what}: {k}");
        }
    }
    format!(
        "{op}: QPN {:#x} -> {:#x}, PSN {}..{}, {} request packets on {VETH_A}, FABRIC CHECK: PASS",
        u(&g["requester"]["qpn"]),
        u(&g["responder"]["qpn"]),
        gf[0]["psn_first"],
        gf[0]["psn_last"],
        requests
    )
}

/// lab_updown (lab/guest/scenarios.sh): the guest is put in a stock host's state (local rule at pref 0,
/// all.rp_filter 1), then `lab up` with the defaults, `lab status`, gen write, send, read and fetch-add with `--capture rlab0`,
/// `lab down`, `lab status` again.
#[test]
fn lab_up_gen_down_in_the_soft_roce_lab() {
    let (out, secs) = run_lab("lab-updown", &["lab_updown"]);
    let d = out.join("lab_updown");

    let up = exited(&d, "up.txt", 0);
    for want in [
        format!("lab up: Soft-RoCE loopback over the veth pair {VETH_A} <-> {VETH_B}"),
        format!(
            "  {RXE_A:<12} on {VETH_A:<8} {ADDR_A}/32  GID index 1  ::ffff:{ADDR_A}  port ACTIVE"
        ),
        format!(
            "  {RXE_B:<12} on {VETH_B:<8} {ADDR_B}/32  GID index 1  ::ffff:{ADDR_B}  port ACTIVE"
        ),
        "local table rule moved from pref 0 to 12".to_string(),
        "  changed: net.ipv4.conf.all.rp_filter 1 -> 0 (lab down restores it)".into(),
        format!("next: rocescope gen loopback -d {RXE_A} --peer-device {RXE_B} "),
        format!(" --capture {VETH_A}\n"),
    ] {
        assert!(up.contains(&want), "lab up: no '{want}' in:\n{up}");
    }

    let status = exited(&d, "status.txt", 0);
    // 13 items: veth, all.rp_filter (the guest's defaults need no per-veth sysctl), 2 addresses, 2 routes,
    // 2 rules, the local rule move, 2 neighbours, 2 rxe devices
    assert_eq!(status.matches("\n  present  ").count(), 13, "{status}");
    assert!(!status.contains("MISSING"), "{status}");
    for (rxe, veth, ip) in [(RXE_A, VETH_A, ADDR_A), (RXE_B, VETH_B, ADDR_B)] {
        let line = status
            .lines()
            .find(|l| l.starts_with(&format!("  {rxe}: port 1 ")))
            .unwrap_or_else(|| panic!("lab status lists no {rxe}:\n{status}"));
        assert!(
            line.starts_with(&format!("  {rxe}: port 1 ACTIVE (LinkUp), GIDs: ")),
            "{line}"
        );
        assert!(
            line.contains(&format!(" ::ffff:{ip} (RoCE v2, {veth})")),
            "{line}"
        );
    }
    assert!(status.contains("lab: up, all 13 items present"), "{status}");

    let mut summary = Vec::new();
    for op in ["write", "send", "read", "fetch-add"] {
        summary.push(check_gen(&d, op));
    }

    let down = exited(&d, "down.txt", 0);
    assert!(!down.contains("already gone"), "{down}");
    for want in [
        format!(
            "  removed rxe device {RXE_B} on {VETH_B}\n  removed rxe device {RXE_A} on {VETH_A}\n"
        ),
        "  local table rule back at pref 0\n".to_string(),
        "  restored net.ipv4.conf.all.rp_filter = 1\n".into(),
        format!("  removed veth pair {VETH_A} <-> {VETH_B}\nlab down: 13 undone"),
    ] {
        assert!(down.contains(&want), "lab down: no '{want}' in:\n{down}");
    }
    let after_status = exited(&d, "status-after.txt", 1);
    assert!(
        after_status.starts_with("rocescope: lab: not up (no state file /run/rocescope/lab.json)")
            && after_status.lines().count() == 1,
        "{after_status}"
    );

    let before = read(&d, "before.txt");
    let during = read(&d, "during.txt");
    let after = read(&d, "after.txt");
    // the snapshots hold what they should: the guest's own lab, and the stock starting point
    for want in [
        "0:\tfrom all lookup local\n",
        "100:\tfrom 10.0.0.1 to 10.0.0.2 iif lo lookup 100\n",
        "link rxe0/1 state ACTIVE physical_state LINK_UP netdev eth0",
        "link rxe1/1 state ACTIVE physical_state LINK_UP netdev eth1",
        "/proc/sys/net/ipv4/conf/all/rp_filter:1\n",
    ] {
        assert!(before.contains(want), "before: no '{want}' in:\n{before}");
    }
    for want in [
        format!("10:\tfrom {ADDR_A} to {ADDR_B} iif lo lookup 7991\n"),
        format!("11:\tfrom {ADDR_B} to {ADDR_A} iif lo lookup 7992\n"),
        "12:\tfrom all lookup local\n".into(),
        "100:\tfrom 10.0.0.1 to 10.0.0.2 iif lo lookup 100\n".into(),
        format!("{ADDR_B} dev {VETH_A} table 7991 scope link src {ADDR_A}"),
        format!("{ADDR_A} dev {VETH_B} table 7992 scope link src {ADDR_B}"),
        format!("link {RXE_A}/1 state ACTIVE physical_state LINK_UP netdev {VETH_A}"),
        format!("link {RXE_B}/1 state ACTIVE physical_state LINK_UP netdev {VETH_B}"),
        "link rxe0/1 state ACTIVE physical_state LINK_UP netdev eth0".into(),
        "/proc/sys/net/ipv4/conf/all/rp_filter:0\n".into(),
        format!("/proc/sys/net/ipv4/conf/{VETH_B}/accept_local:1\n"),
    ] {
        assert!(during.contains(&want), "during: no '{want}' in:\n{during}");
    }
    assert!(
        !during.contains("\n0:\tfrom all lookup local"),
        "the local rule moved"
    );
    assert_eq!(after, before, "lab down left the guest as it found it");
    eprintln!(
        "lab_updown: {} ({secs:.1} s with boot): up/status/down as recorded, before == after ({} lines)",
        summary.join("; "),
        before.lines().count()
    );
}
