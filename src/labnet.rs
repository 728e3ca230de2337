//! `rocescope lab up | down | status`: the two-NIC Soft-RoCE loopback of the lab note, built on this host from a
//! veth pair (/32 addresses, per-direction policy routes ahead of the `local` table, static neighbours, rxe on
//! each end), so that traffic between the two rxe devices crosses a wire one can capture on. `up` records what
//! it creates and every value it changes in a state file; `down` undoes exactly that, in reverse order.
//!
//! The network is set up by running iproute2's `ip` and `rdma`, the commands an engineer would type (the
//! netlink details stay iproute2's); sysctls are written through /proc/sys.

use std::fs;
use std::io::Write;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use clap::{Args, Subcommand};
use serde::{Deserialize, Serialize};
use serde_json::Value;

const DEFAULT_STATE: &str = "/run/rocescope/lab.json";
/// println! that ignores a closed standard output (`lab status | head -1`) instead of panicking.
macro_rules! say {
    ($($t:tt)*) => {{
        let _ = writeln!(std::io::stdout(), $($t)*);
    }};
}

/// How long `up` waits for the RoCE v2 IPv4-mapped GIDs to appear.
const GID_WAIT: Duration = Duration::from_secs(5);

#[derive(Subcommand)]
pub enum LabCommand {
    /// Build the loopback: veth pair NAME0/NAME1, rxe_NAME0/rxe_NAME1 on them, routes that force traffic between
    /// them over the veth (needs root and the rdma_rxe module).
    Up(UpArgs),
    /// Remove exactly what `lab up` created and restore the values it changed, in reverse order.
    Down,
    /// Check what `lab up` recorded against the system; the rxe devices with port state and GIDs. Exit 0 when
    /// everything is in place, 1 otherwise.
    Status,
}

#[derive(Args, Debug, Clone)]
pub struct UpArgs {
    /// Name prefix: veths NAME0 and NAME1, rxe devices rxe_NAME0 and rxe_NAME1.
    #[arg(long, default_value = "rlab", value_parser = parse_name)]
    pub name: String,
    /// Address of NAME0 (a /32).
    #[arg(long, default_value = "10.79.91.1")]
    pub addr_a: Ipv4Addr,
    /// Address of NAME1 (a /32).
    #[arg(long, default_value = "10.79.91.2")]
    pub addr_b: Ipv4Addr,
    /// Routing tables TABLE (NAME0 -> NAME1) and TABLE+1 (back); both must be empty.
    #[arg(long, default_value_t = 7991, value_parser = clap::value_parser!(u32).range(1..=0xFFFF_FF00))]
    pub table: u32,
    /// Rule preferences PREF and PREF+1; a `local` table rule still at pref 0 moves to PREF+2.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=32000))]
    pub pref: u32,
}

fn parse_name(s: &str) -> Result<String, String> {
    let ok = (1..=14).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok {
        Ok(s.to_string())
    } else {
        Err(format!(
            "'{s}' is not usable: 1 to 14 letters, digits, '_' or '-' (NAME0 must fit an interface name)"
        ))
    }
}

/// What `up` was asked to build.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
struct Config {
    veth_a: String,
    veth_b: String,
    rxe_a: String,
    rxe_b: String,
    addr_a: Ipv4Addr,
    addr_b: Ipv4Addr,
    table_a: u32,
    table_b: u32,
    pref_a: u32,
    pref_b: u32,
    /// Where the `local` rule goes when it is still at pref 0.
    pref_local: u32,
}

impl Config {
    fn from_args(a: &UpArgs) -> Result<Config, String> {
        for (opt, ip) in [("--addr-a", a.addr_a), ("--addr-b", a.addr_b)] {
            if ip.is_unspecified() || ip.is_loopback() || ip.is_multicast() || ip.is_broadcast() {
                return Err(format!("{opt} {ip} is not a usable unicast address"));
            }
        }
        if a.addr_a == a.addr_b {
            return Err(format!(
                "--addr-a and --addr-b are both {}: the two ends need two addresses",
                a.addr_a
            ));
        }
        let (ta, tb) = (a.table, a.table + 1);
        if [ta, tb].iter().any(|t| (253..=255).contains(t)) {
            return Err(format!(
                "--table {ta}: tables {ta} and {tb} would include a kernel table (253 default, 254 main, 255 local)"
            ));
        }
        Ok(Config {
            veth_a: format!("{}0", a.name),
            veth_b: format!("{}1", a.name),
            rxe_a: format!("rxe_{}0", a.name),
            rxe_b: format!("rxe_{}1", a.name),
            addr_a: a.addr_a,
            addr_b: a.addr_b,
            table_a: ta,
            table_b: tb,
            pref_a: a.pref,
            pref_b: a.pref + 1,
            pref_local: a.pref + 2,
        })
    }

    fn gen_command(&self) -> String {
        format!(
            "rocescope gen loopback -d {} --peer-device {} --op write -s 4096 -n 1000 --capture {}",
            self.rxe_a, self.rxe_b, self.veth_a
        )
    }
}

/// One thing `up` did, with what it takes to undo it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Item {
    Veth {
        a: String,
        b: String,
    },
    /// `key` is the path under /proc/sys (net/ipv4/conf/all/rp_filter).
    Sysctl {
        key: String,
        previous: String,
        value: String,
    },
    Addr {
        dev: String,
        addr: Ipv4Addr,
    },
    Route {
        table: u32,
        dst: Ipv4Addr,
        dev: String,
        src: Ipv4Addr,
    },
    Rule {
        pref: u32,
        from: Ipv4Addr,
        to: Ipv4Addr,
        table: u32,
    },
    LocalRuleMoved {
        from: u32,
        to: u32,
    },
    Neigh {
        dev: String,
        addr: Ipv4Addr,
        mac: String,
    },
    Rxe {
        name: String,
        netdev: String,
    },
}

impl Item {
    fn describe(&self) -> String {
        match self {
            Item::Veth { a, b } => format!("veth pair {a} <-> {b}"),
            Item::Sysctl {
                key,
                previous,
                value,
            } => format!("{} = {value} (was {previous})", key.replace('/', ".")),
            Item::Addr { dev, addr } => format!("address {addr}/32 on {dev}"),
            Item::Route {
                table,
                dst,
                dev,
                src,
            } => format!("route {dst}/32 dev {dev} src {src} table {table}"),
            Item::Rule {
                pref,
                from,
                to,
                table,
            } => format!("rule pref {pref}: iif lo from {from} to {to} lookup {table}"),
            Item::LocalRuleMoved { from, to } => {
                format!("local table rule moved from pref {from} to pref {to}")
            }
            Item::Neigh { dev, addr, mac } => {
                format!("static neighbour {addr} lladdr {mac} on {dev}")
            }
            Item::Rxe { name, netdev } => format!("rxe device {name} on {netdev}"),
        }
    }

    fn present(&self, net: &Net) -> bool {
        match self {
            Item::Veth { a, b } => netdev_exists(a) && netdev_exists(b),
            Item::Sysctl { key, value, .. } => sysctl_get(key).ok().as_deref() == Some(value),
            Item::Addr { dev, addr } => net.has_addr(dev, *addr),
            Item::Route {
                table, dst, dev, ..
            } => net.has_route(*table, *dst, dev),
            Item::Rule {
                pref,
                from,
                to,
                table,
            } => net.has_rule(*pref, *from, *to, *table),
            Item::LocalRuleMoved { from, to } => {
                let l = net.local_prefs();
                l.contains(to) && !l.contains(from)
            }
            Item::Neigh { dev, addr, mac } => net.has_neigh(dev, *addr, mac),
            Item::Rxe { name, .. } => rdma_dev_exists(name),
        }
    }

    /// Undoes this item when it is still there; says what was done.
    fn undo(&self, ctx: &Ctx, net: &Net) -> Result<String, String> {
        if let Item::Sysctl { key, .. } = self
            && let Ok(now) = sysctl_get(key)
            && !self.present(net)
        {
            // someone set it since: theirs stands
            return Ok(format!(
                "left {} = {now} (changed since lab up)",
                key.replace('/', ".")
            ));
        }
        if !self.present(net) && !matches!(self, Item::LocalRuleMoved { .. }) {
            return Ok(format!("already gone: {}", self.describe()));
        }
        match self {
            Item::Veth { a, .. } => {
                ctx.ip(&["link", "del", a])?;
                Ok(format!("removed {}", self.describe()))
            }
            Item::Sysctl { key, previous, .. } => {
                sysctl_set(key, previous)?;
                Ok(format!("restored {} = {previous}", key.replace('/', ".")))
            }
            Item::Addr { dev, addr } => {
                ctx.ip(&["addr", "del", &format!("{addr}/32"), "dev", dev])?;
                Ok(format!("removed {}", self.describe()))
            }
            Item::Route {
                table, dst, dev, ..
            } => {
                ctx.ip(&[
                    "route",
                    "del",
                    &format!("{dst}/32"),
                    "dev",
                    dev,
                    "table",
                    &table.to_string(),
                ])?;
                Ok(format!("removed {}", self.describe()))
            }
            Item::Rule {
                pref,
                from,
                to,
                table,
            } => {
                ctx.ip(&rule_args("del", *pref, *from, *to, *table))?;
                Ok(format!("removed {}", self.describe()))
            }
            Item::LocalRuleMoved { from, to } => {
                // add before delete: the host is never without a local table rule
                let l = net.local_prefs();
                if !l.contains(from) {
                    ctx.ip(&[
                        "-4",
                        "rule",
                        "add",
                        "pref",
                        &from.to_string(),
                        "lookup",
                        "local",
                    ])?;
                }
                if l.contains(to) {
                    ctx.ip(&[
                        "-4",
                        "rule",
                        "del",
                        "pref",
                        &to.to_string(),
                        "lookup",
                        "local",
                    ])?;
                }
                Ok(format!("local table rule back at pref {from}"))
            }
            Item::Neigh { dev, addr, .. } => {
                ctx.ip(&["neigh", "del", &addr.to_string(), "dev", dev])?;
                Ok(format!("removed {}", self.describe()))
            }
            Item::Rxe { name, .. } => {
                ctx.rdma(&["link", "delete", name])?;
                Ok(format!("removed {}", self.describe()))
            }
        }
    }
}

fn rule_args(verb: &str, pref: u32, from: Ipv4Addr, to: Ipv4Addr, table: u32) -> Vec<String> {
    [
        "-4",
        "rule",
        verb,
        "pref",
        &pref.to_string(),
        "iif",
        "lo",
        "from",
        &from.to_string(),
        "to",
        &to.to_string(),
        "lookup",
        &table.to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

#[derive(Serialize, Deserialize, Debug)]
struct State {
    version: u32,
    /// false while `up` runs (or when it was killed half-way)
    complete: bool,
    config: Config,
    items: Vec<Item>,
}

fn state_path() -> PathBuf {
    // tests point this elsewhere
    match std::env::var_os("ROCESCOPE_LAB_STATE") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => PathBuf::from(DEFAULT_STATE),
    }
}

fn load_state(path: &Path) -> Result<Option<State>, String> {
    match fs::read(path) {
        Ok(b) => serde_json::from_slice(&b).map(Some).map_err(|e| {
            format!(
                "the state file {} is not lab up's ({e}): move it away if no lab is up",
                path.display()
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!(
            "cannot read the state file {}: {e}",
            path.display()
        )),
    }
}

fn save_state(path: &Path, st: &State, first: bool) -> Result<(), String> {
    let err = |e: std::io::Error| format!("cannot write the state file {}: {e}", path.display());
    let body = serde_json::to_vec_pretty(st).map_err(|e| e.to_string())?;
    if first {
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).map_err(err)?;
        }
        // create_new: two `lab up` at once cannot both own the lab
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(err)?;
        return f.write_all(&body).map_err(err);
    }
    let tmp = path.with_extension("json.tmp");
    fs::write(&tmp, &body).map_err(err)?;
    fs::rename(&tmp, path).map_err(err)
}

/// Removes the state file, and /run/rocescope when that is left empty.
fn remove_state(path: &Path) {
    let _ = fs::remove_file(path);
    if path == Path::new(DEFAULT_STATE)
        && let Some(dir) = path.parent()
    {
        let _ = fs::remove_dir(dir);
    }
}

fn netdev_exists(name: &str) -> bool {
    Path::new("/sys/class/net").join(name).exists()
}

fn rdma_dev_exists(name: &str) -> bool {
    Path::new("/sys/class/infiniband").join(name).exists()
}

fn sysctl_get(key: &str) -> Result<String, String> {
    let p = Path::new("/proc/sys").join(key);
    fs::read_to_string(&p)
        .map(|s| s.trim().to_string())
        .map_err(|e| format!("cannot read {}: {e}", p.display()))
}

fn sysctl_set(key: &str, value: &str) -> Result<(), String> {
    let p = Path::new("/proc/sys").join(key);
    fs::write(&p, value).map_err(|e| format!("cannot write {} to {}: {e}", value, p.display()))
}

/// The programs this module runs.
struct Ctx {
    ip: PathBuf,
    rdma: PathBuf,
}

/// A full path when one of the usual directories has it: in the lab guest, busybox's `ip` applet comes first
/// on PATH and cannot do policy routing or JSON.
fn find_tool(name: &str, dirs: &[&str]) -> PathBuf {
    dirs.iter()
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from(name))
}

impl Ctx {
    fn find() -> Result<Ctx, String> {
        let ctx = Ctx {
            ip: find_tool("ip", &["/usr/sbin", "/sbin", "/usr/bin", "/bin"]),
            rdma: find_tool("rdma", &["/usr/bin", "/usr/sbin", "/bin", "/sbin"]),
        };
        let v = Command::new(&ctx.ip)
            .arg("-V")
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run {}: {e}: install iproute2", ctx.ip.display()))?;
        let text =
            String::from_utf8_lossy(&v.stdout).into_owned() + &String::from_utf8_lossy(&v.stderr);
        if !text.contains("iproute2") {
            return Err(format!(
                "{} is not iproute2's ip (busybox's cannot do this): install iproute2",
                ctx.ip.display()
            ));
        }
        Ok(ctx)
    }

    fn run<S: AsRef<str>>(&self, prog: &Path, args: &[S]) -> Result<String, String> {
        let args: Vec<&str> = args.iter().map(|s| s.as_ref()).collect();
        let name = prog
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let o = Command::new(prog)
            .args(&args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run {}: {e}", prog.display()))?;
        if o.status.success() {
            return Ok(String::from_utf8_lossy(&o.stdout).into_owned());
        }
        let err = String::from_utf8_lossy(&o.stderr);
        let out = String::from_utf8_lossy(&o.stdout);
        let why = err
            .lines()
            .chain(out.lines())
            .map(str::trim)
            .find(|l| !l.is_empty())
            .map(str::to_string)
            .unwrap_or_else(|| o.status.to_string());
        Err(format!("`{name} {}` failed: {why}", args.join(" ")))
    }

    fn ip<S: AsRef<str>>(&self, args: &[S]) -> Result<String, String> {
        self.run(&self.ip, args)
    }

    fn rdma<S: AsRef<str>>(&self, args: &[S]) -> Result<String, String> {
        self.run(&self.rdma, args)
    }

    fn ip_json(&self, args: &[&str]) -> Result<Vec<Value>, String> {
        let mut a = vec!["-j"];
        a.extend_from_slice(args);
        let out = self.ip(&a)?;
        if out.trim().is_empty() {
            return Ok(Vec::new());
        }
        match serde_json::from_str::<Value>(&out) {
            Ok(Value::Array(v)) => Ok(v),
            _ => Err(format!("`ip {}` did not print a JSON array", a.join(" "))),
        }
    }

    fn snapshot(&self) -> Result<Net, String> {
        Ok(Net {
            rules: self.ip_json(&["-4", "rule", "show"])?,
            routes: self.ip_json(&["-4", "route", "show", "table", "all"])?,
            addrs: self.ip_json(&["-4", "addr", "show"])?,
            neighs: self.ip_json(&["-4", "neigh", "show"])?,
        })
    }
}

/// The IPv4 rules, routes, addresses and neighbours, as `ip -j` prints them.
struct Net {
    rules: Vec<Value>,
    routes: Vec<Value>,
    addrs: Vec<Value>,
    neighs: Vec<Value>,
}

fn s<'a>(v: &'a Value, k: &str) -> &'a str {
    v[k].as_str().unwrap_or("")
}

impl Net {
    fn rule_pref(r: &Value) -> Option<u32> {
        r["priority"].as_u64().and_then(|p| u32::try_from(p).ok())
    }

    fn local_prefs(&self) -> Vec<u32> {
        self.rules
            .iter()
            .filter(|r| s(r, "table") == "local")
            .filter_map(Net::rule_pref)
            .collect()
    }

    fn has_rule(&self, pref: u32, from: Ipv4Addr, to: Ipv4Addr, table: u32) -> bool {
        self.rules.iter().any(|r| {
            Net::rule_pref(r) == Some(pref)
                && s(r, "src") == from.to_string()
                && s(r, "dst") == to.to_string()
                && r.get("srclen").is_none_or(|l| l == 32)
                && r.get("dstlen").is_none_or(|l| l == 32)
                && s(r, "iif") == "lo"
                && s(r, "table") == table.to_string()
        })
    }

    fn has_route(&self, table: u32, dst: Ipv4Addr, dev: &str) -> bool {
        self.routes.iter().any(|r| {
            s(r, "table") == table.to_string()
                && s(r, "dst") == dst.to_string()
                && s(r, "dev") == dev
        })
    }

    fn table_in_use(&self, table: u32) -> bool {
        let t = table.to_string();
        self.routes.iter().any(|r| s(r, "table") == t)
            || self.rules.iter().any(|r| s(r, "table") == t)
    }

    /// (interface, address, prefix length) of every IPv4 address.
    fn addr_list(&self) -> Vec<(String, String, u64)> {
        let mut v = Vec::new();
        for l in &self.addrs {
            for a in l["addr_info"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
                if s(a, "family") == "inet" {
                    v.push((
                        s(l, "ifname").to_string(),
                        s(a, "local").to_string(),
                        a["prefixlen"].as_u64().unwrap_or(0),
                    ));
                }
            }
        }
        v
    }

    fn has_addr(&self, dev: &str, addr: Ipv4Addr) -> bool {
        self.addr_list()
            .iter()
            .any(|(d, a, len)| d == dev && *a == addr.to_string() && *len == 32)
    }

    fn has_neigh(&self, dev: &str, addr: Ipv4Addr, mac: &str) -> bool {
        self.neighs.iter().any(|n| {
            s(n, "dev") == dev
                && s(n, "dst") == addr.to_string()
                && s(n, "lladdr").eq_ignore_ascii_case(mac)
        })
    }
}

/// The checks before anything is changed; returns whether the local rule must move.
fn preflight(cfg: &Config, net: &Net) -> Result<bool, String> {
    let redo = "`rocescope lab down` if an earlier lab left it, or choose another --name";
    for n in [&cfg.veth_a, &cfg.veth_b] {
        if netdev_exists(n) {
            return Err(format!("interface {n} already exists: {redo}"));
        }
    }
    for n in [&cfg.rxe_a, &cfg.rxe_b] {
        if rdma_dev_exists(n) {
            return Err(format!("RDMA device {n} already exists: {redo}"));
        }
    }
    for (opt, ip) in [("--addr-a", cfg.addr_a), ("--addr-b", cfg.addr_b)] {
        if let Some((dev, ..)) = net
            .addr_list()
            .iter()
            .find(|(_, a, _)| *a == ip.to_string())
        {
            return Err(format!(
                "{ip} is already an address of {dev}: choose another {opt}"
            ));
        }
    }
    for t in [cfg.table_a, cfg.table_b] {
        if net.table_in_use(t) {
            return Err(format!(
                "routing table {t} is already in use: choose another --table"
            ));
        }
    }
    let prefs: Vec<u32> = net.rules.iter().filter_map(Net::rule_pref).collect();
    for p in [cfg.pref_a, cfg.pref_b] {
        if prefs.contains(&p) {
            return Err(format!(
                "rule preference {p} is already in use: choose another --pref"
            ));
        }
    }
    let local = net.local_prefs();
    let Some(&first_local) = local.iter().min() else {
        return Err("no IPv4 rule looks up the local table: this host's policy routing is unusual, lab up will not touch it".into());
    };
    if first_local != 0 {
        // already moved (as in the lab guest): it only has to come after the lab's rules
        if first_local <= cfg.pref_b {
            return Err(format!(
                "the local table rule is at pref {first_local}, before the lab's rules: choose a --pref below {}",
                first_local.saturating_sub(1)
            ));
        }
        return Ok(false);
    }
    // moved to pref_local, the local table must still come before every other rule
    if let Some(p) = prefs
        .iter()
        .find(|&&p| p > 0 && p <= cfg.pref_local && !local.contains(&p))
    {
        return Err(format!(
            "rule pref {p} would come before the local table once it moves to pref {}: choose a --pref below {}",
            cfg.pref_local,
            p.saturating_sub(2).max(1)
        ));
    }
    Ok(true)
}

/// A RoCE v2 GID of an rxe device.
struct Gid {
    index: u32,
    gid: Ipv6Addr,
    kind: String,
    ndev: String,
}

fn port_dir(dev: &str) -> PathBuf {
    Path::new("/sys/class/infiniband").join(dev).join("ports/1")
}

fn read_trim(p: &Path) -> Option<String> {
    fs::read_to_string(p).ok().map(|s| s.trim().to_string())
}

/// The non-empty GIDs of port 1, by index.
fn gids(dev: &str) -> Vec<Gid> {
    let dir = port_dir(dev);
    let mut v: Vec<Gid> = fs::read_dir(dir.join("gids"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let index: u32 = e.file_name().to_str()?.parse().ok()?;
            let gid: Ipv6Addr = read_trim(&e.path())?.parse().ok()?;
            if gid.is_unspecified() {
                return None;
            }
            let attr =
                |what: &str| read_trim(&dir.join("gid_attrs").join(what).join(index.to_string()));
            Some(Gid {
                index,
                gid,
                kind: attr("types").unwrap_or_default(),
                ndev: attr("ndevs").unwrap_or_default(),
            })
        })
        .collect();
    v.sort_by_key(|g| g.index);
    v
}

fn roce_v2_ipv4_gid(dev: &str, addr: Ipv4Addr) -> Option<Gid> {
    gids(dev)
        .into_iter()
        .find(|g| g.kind == "RoCE v2" && g.gid.to_ipv4_mapped() == Some(addr))
}

/// "ACTIVE" from "4: ACTIVE".
fn port_state(dev: &str, what: &str) -> String {
    read_trim(&port_dir(dev).join(what))
        .map(|s| s.split_once(": ").map_or(s.clone(), |(_, n)| n.to_string()))
        .unwrap_or_else(|| "unknown".into())
}

fn os_release() -> String {
    read_trim(Path::new("/proc/sys/kernel/osrelease")).unwrap_or_else(|| "$(uname -r)".into())
}

/// Does the step, records it in the state file, and stops at the first failure.
struct Builder<'a> {
    ctx: &'a Ctx,
    st: &'a mut State,
    path: &'a Path,
}

impl Builder<'_> {
    fn record(&mut self, item: Item) -> Result<(), String> {
        self.st.items.push(item);
        save_state(self.path, self.st, false)
    }

    /// Sets a sysctl when it differs, recording the previous value.
    fn sysctl(&mut self, key: &str, value: &str) -> Result<(), String> {
        let previous = sysctl_get(key)?;
        if previous == value {
            return Ok(());
        }
        sysctl_set(key, value)?;
        self.record(Item::Sysctl {
            key: key.to_string(),
            previous,
            value: value.to_string(),
        })
    }

    fn build(&mut self, move_local: bool) -> Result<(), String> {
        let c = self.st.config.clone();
        let ctx = self.ctx;
        ctx.ip(&[
            "link", "add", &c.veth_a, "type", "veth", "peer", "name", &c.veth_b,
        ])?;
        self.record(Item::Veth {
            a: c.veth_a.clone(),
            b: c.veth_b.clone(),
        })?;
        for dev in [&c.veth_a, &c.veth_b] {
            // no router solicitations or DAD probes on the wire being captured
            for k in ["router_solicitations", "dad_transmits"] {
                let key = format!("net/ipv6/conf/{dev}/{k}");
                if Path::new("/proc/sys").join(&key).exists() {
                    self.sysctl(&key, "0")?;
                }
            }
            // the peer's packets come from a local address; rp_filter is max(all, dev), accept_local is or
            self.sysctl(&format!("net/ipv4/conf/{dev}/accept_local"), "1")?;
            self.sysctl(&format!("net/ipv4/conf/{dev}/rp_filter"), "0")?;
        }
        self.sysctl("net/ipv4/conf/all/rp_filter", "0")?;
        let mac = |dev: &str| {
            read_trim(&Path::new("/sys/class/net").join(dev).join("address"))
                .ok_or_else(|| format!("cannot read the MAC address of {dev}"))
        };
        let (mac_a, mac_b) = (mac(&c.veth_a)?, mac(&c.veth_b)?);
        for (dev, addr) in [(&c.veth_a, c.addr_a), (&c.veth_b, c.addr_b)] {
            ctx.ip(&["link", "set", dev, "up"])?;
            ctx.ip(&["addr", "add", &format!("{addr}/32"), "dev", dev])?;
            self.record(Item::Addr {
                dev: dev.clone(),
                addr,
            })?;
        }
        let dirs = [
            (&c.veth_a, c.addr_a, c.addr_b, c.table_a, c.pref_a),
            (&c.veth_b, c.addr_b, c.addr_a, c.table_b, c.pref_b),
        ];
        for &(dev, src, dst, table, _) in &dirs {
            ctx.ip(&[
                "route",
                "add",
                &format!("{dst}/32"),
                "dev",
                dev,
                "src",
                &src.to_string(),
                "table",
                &table.to_string(),
            ])?;
            self.record(Item::Route {
                table,
                dst,
                dev: dev.clone(),
                src,
            })?;
        }
        for &(_, from, to, table, pref) in &dirs {
            ctx.ip(&rule_args("add", pref, from, to, table))?;
            self.record(Item::Rule {
                pref,
                from,
                to,
                table,
            })?;
        }
        if move_local {
            // add before delete: the host is never without a local table rule
            let to = c.pref_local.to_string();
            ctx.ip(&["-4", "rule", "add", "pref", &to, "lookup", "local"])?;
            if let Err(e) = ctx.ip(&["-4", "rule", "del", "pref", "0", "lookup", "local"]) {
                let _ = ctx.ip(&["-4", "rule", "del", "pref", &to, "lookup", "local"]);
                return Err(e);
            }
            self.record(Item::LocalRuleMoved {
                from: 0,
                to: c.pref_local,
            })?;
        }
        for (dev, peer, mac) in [(&c.veth_a, c.addr_b, &mac_b), (&c.veth_b, c.addr_a, &mac_a)] {
            ctx.ip(&[
                "neigh",
                "replace",
                &peer.to_string(),
                "lladdr",
                mac,
                "dev",
                dev,
                "nud",
                "permanent",
            ])?;
            self.record(Item::Neigh {
                dev: dev.clone(),
                addr: peer,
                mac: mac.clone(),
            })?;
        }
        for (rxe, dev) in [(&c.rxe_a, &c.veth_a), (&c.rxe_b, &c.veth_b)] {
            if let Err(e) = ctx.rdma(&["link", "add", rxe, "type", "rxe", "netdev", dev]) {
                let why = e.split_once("failed: ").map_or(e.as_str(), |(_, w)| w);
                let what = if why.contains("NETLINK_RDMA") {
                    "the kernel has no RDMA support loaded: load Soft-RoCE with"
                } else {
                    "is Soft-RoCE there? try"
                };
                return Err(format!(
                    "cannot create the rxe device {rxe} on {dev} (`rdma link add` said: {why}): {what} \
                     `modprobe rdma_rxe` (Ubuntu: apt install linux-modules-extra-{})",
                    os_release()
                ));
            }
            self.record(Item::Rxe {
                name: rxe.clone(),
                netdev: dev.clone(),
            })?;
        }
        let t0 = Instant::now();
        loop {
            let missing: Vec<String> = [(&c.rxe_a, c.addr_a), (&c.rxe_b, c.addr_b)]
                .iter()
                .filter(|(d, a)| roce_v2_ipv4_gid(d, *a).is_none())
                .map(|(d, a)| format!("{d} (::ffff:{a})"))
                .collect();
            if missing.is_empty() {
                return Ok(());
            }
            if t0.elapsed() > GID_WAIT {
                return Err(format!(
                    "no RoCE v2 IPv4-mapped GID on {} after {} s",
                    missing.join(" and "),
                    GID_WAIT.as_secs()
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// Undoes every item, last first; returns what was done and the items that could not be undone.
fn undo_all(ctx: &Ctx, items: &[Item]) -> (Vec<String>, Vec<(Item, String)>) {
    let (mut done, mut failed) = (Vec::new(), Vec::new());
    let net = match ctx.snapshot() {
        Ok(n) => n,
        Err(e) => return (done, items.iter().map(|i| (i.clone(), e.clone())).collect()),
    };
    for it in items.iter().rev() {
        match it.undo(ctx, &net) {
            Ok(s) => done.push(s),
            Err(e) => failed.push((it.clone(), e)),
        }
    }
    failed.reverse();
    (done, failed)
}

fn require_root() -> Result<(), String> {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Err("needs root (it creates interfaces, routes, rules and RDMA devices): run it as root, e.g. with sudo".into());
    }
    Ok(())
}

pub fn main(cmd: LabCommand) -> ExitCode {
    let r = match cmd {
        LabCommand::Up(a) => up(&a),
        LabCommand::Down => down(),
        LabCommand::Status => status(),
    };
    match r {
        Ok(code) => code,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "rocescope: lab: {e}");
            ExitCode::from(1)
        }
    }
}

fn up(args: &UpArgs) -> Result<ExitCode, String> {
    let path = state_path();
    let cfg = Config::from_args(args)?;
    if let Some(st) = load_state(&path)? {
        let c = &st.config;
        if !st.complete {
            return Err(format!(
                "an earlier `lab up` did not finish (state in {}): run `rocescope lab down` first",
                path.display()
            ));
        }
        if *c != cfg {
            return Err(format!(
                "already up with other settings ({} on {}, {} on {}; state in {}): `rocescope lab down` first",
                c.rxe_a,
                c.veth_a,
                c.rxe_b,
                c.veth_b,
                path.display()
            ));
        }
        say!(
            "lab: already up ({} on {}, {} on {}; state in {}): `rocescope lab status` checks it, `rocescope lab down` removes it",
            c.rxe_a,
            c.veth_a,
            c.rxe_b,
            c.veth_b,
            path.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    require_root()?;
    let ctx = Ctx::find()?;
    let net = ctx.snapshot()?;
    let move_local = preflight(&cfg, &net)?;
    let mut st = State {
        version: 1,
        complete: false,
        config: cfg.clone(),
        items: Vec::new(),
    };
    save_state(&path, &st, true)?;
    let built = Builder {
        ctx: &ctx,
        st: &mut st,
        path: &path,
    }
    .build(move_local);
    if let Err(e) = built {
        let (_, failed) = undo_all(&ctx, &st.items);
        if failed.is_empty() {
            remove_state(&path);
            return Err(format!("{e}; lab up undid everything it had done"));
        }
        let n = failed.len();
        let first = failed[0].1.clone();
        st.items = failed.into_iter().map(|(i, _)| i).collect();
        let _ = save_state(&path, &st, false);
        return Err(format!(
            "{e}; undoing it failed too for {n} item(s) ({first}): see `rocescope lab status`, then `rocescope lab down` (state in {})",
            path.display()
        ));
    }
    st.complete = true;
    save_state(&path, &st, false)?;

    say!(
        "lab up: Soft-RoCE loopback over the veth pair {} <-> {}",
        cfg.veth_a,
        cfg.veth_b
    );
    for (rxe, dev, addr) in [
        (&cfg.rxe_a, &cfg.veth_a, cfg.addr_a),
        (&cfg.rxe_b, &cfg.veth_b, cfg.addr_b),
    ] {
        let g = roce_v2_ipv4_gid(rxe, addr);
        say!(
            "  {rxe:<12} on {dev:<8} {addr}/32  GID index {}  {}  port {}",
            g.as_ref().map_or("?".into(), |g| g.index.to_string()),
            g.as_ref().map_or("?".into(), |g| g.gid.to_string()),
            port_state(rxe, "state")
        );
    }
    let moved = if move_local {
        format!("; local table rule moved from pref 0 to {}", cfg.pref_local)
    } else {
        String::new()
    };
    say!(
        "  routing: rules pref {}/{} (iif lo) -> tables {}/{}{moved}; static neighbours",
        cfg.pref_a,
        cfg.pref_b,
        cfg.table_a,
        cfg.table_b
    );
    for it in &st.items {
        if let Item::Sysctl {
            key,
            previous,
            value,
        } = it
            && key.contains("/all/")
        {
            say!(
                "  changed: {} {previous} -> {value} (lab down restores it)",
                key.replace('/', ".")
            );
        }
    }
    say!("  capture on: {} (it carries both directions)", cfg.veth_a);
    say!("  state: {}", path.display());
    say!("next: {}", cfg.gen_command());
    say!("then: rocescope lab down");
    Ok(ExitCode::SUCCESS)
}

fn down() -> Result<ExitCode, String> {
    let path = state_path();
    let Some(mut st) = load_state(&path)? else {
        return Err(format!(
            "not up (no state file {}): nothing to remove",
            path.display()
        ));
    };
    require_root()?;
    let ctx = Ctx::find()?;
    let (done, failed) = undo_all(&ctx, &st.items);
    for d in &done {
        say!("  {d}");
    }
    if !failed.is_empty() {
        let n = failed.len();
        let first = failed[0].1.clone();
        st.items = failed.into_iter().map(|(i, _)| i).collect();
        save_state(&path, &st, false)?;
        return Err(format!(
            "{n} item(s) could not be undone ({first}); they stay in {}: fix that and run `rocescope lab down` again",
            path.display()
        ));
    }
    fs::remove_file(&path).map_err(|e| {
        format!(
            "undone, but cannot remove the state file {}: {e}",
            path.display()
        )
    })?;
    remove_state(&path);
    say!(
        "lab down: {} undone ({} on {}, {} on {})",
        done.len(),
        st.config.rxe_a,
        st.config.veth_a,
        st.config.rxe_b,
        st.config.veth_b
    );
    Ok(ExitCode::SUCCESS)
}

fn status() -> Result<ExitCode, String> {
    let path = state_path();
    let Some(st) = load_state(&path)? else {
        return Err(format!(
            "not up (no state file {}): `rocescope lab up` builds it",
            path.display()
        ));
    };
    let ctx = Ctx::find()?;
    let net = ctx.snapshot()?;
    let c = &st.config;
    say!("lab: state {}", path.display());
    let mut missing = Vec::new();
    for it in &st.items {
        let ok = it.present(&net);
        say!(
            "  {:<8} {}",
            if ok { "present" } else { "MISSING" },
            it.describe()
        );
        if !ok {
            missing.push(it.describe());
        }
    }
    let mut broken = Vec::new();
    for (rxe, addr) in [(&c.rxe_a, c.addr_a), (&c.rxe_b, c.addr_b)] {
        if !rdma_dev_exists(rxe) {
            say!("  {rxe}: no such RDMA device");
            broken.push(format!("{rxe} missing"));
            continue;
        }
        let state = port_state(rxe, "state");
        let gl: Vec<String> = gids(rxe)
            .iter()
            .map(|g| format!("{} {} ({}, {})", g.index, g.gid, g.kind, g.ndev))
            .collect();
        say!(
            "  {rxe}: port 1 {state} ({}), GIDs: {}",
            port_state(rxe, "phys_state"),
            if gl.is_empty() {
                "none".into()
            } else {
                gl.join(", ")
            }
        );
        if state != "ACTIVE" {
            broken.push(format!("{rxe} port {state}"));
        }
        if roce_v2_ipv4_gid(rxe, addr).is_none() {
            broken.push(format!("{rxe} has no RoCE v2 GID ::ffff:{addr}"));
        }
    }
    if !st.complete {
        broken.insert(0, "lab up did not finish".into());
    }
    if missing.is_empty() && broken.is_empty() {
        say!(
            "lab: up, all {} items present; next: {}",
            st.items.len(),
            c.gen_command()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let mut why = broken;
    if !missing.is_empty() {
        why.insert(
            0,
            format!("{} of {} items missing", missing.len(), st.items.len()),
        );
    }
    Err(format!(
        "partly broken: {}: `rocescope lab down` removes the rest, then `rocescope lab up`",
        why.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> Config {
        Config::from_args(&UpArgs {
            name: "rlab".into(),
            addr_a: Ipv4Addr::new(10, 79, 91, 1),
            addr_b: Ipv4Addr::new(10, 79, 91, 2),
            table: 7991,
            pref: 10,
        })
        .unwrap()
    }

    fn net(rules: &str) -> Net {
        Net {
            rules: serde_json::from_str(rules).unwrap(),
            routes: Vec::new(),
            addrs: Vec::new(),
            neighs: Vec::new(),
        }
    }

    #[test]
    fn names_and_checks() {
        let c = cfg();
        assert_eq!(
            (c.veth_a.as_str(), c.rxe_b.as_str()),
            ("rlab0", "rxe_rlab1")
        );
        assert_eq!((c.pref_b, c.pref_local, c.table_b), (11, 12, 7992));
        assert!(parse_name("abcdefghijklmn").is_ok());
        assert!(parse_name("abcdefghijklmno").is_err());
        assert!(parse_name("a/b").is_err() && parse_name("").is_err());
    }

    #[test]
    fn local_rule_placement() {
        let c = cfg();
        let host = r#"[{"priority":0,"src":"all","table":"local"},{"priority":32766,"src":"all","table":"main"}]"#;
        assert_eq!(preflight(&c, &net(host)), Ok(true));
        // the lab guest: local already at 200, after rules 100/101
        let guest = r#"[{"priority":100,"src":"10.0.0.1","dst":"10.0.0.2","iif":"lo","table":"100"},
            {"priority":200,"src":"all","table":"local"},{"priority":32766,"src":"all","table":"main"}]"#;
        assert_eq!(preflight(&c, &net(guest)), Ok(false));
        let early = r#"[{"priority":5,"src":"all","table":"local"}]"#;
        assert!(preflight(&c, &net(early)).unwrap_err().contains("pref 5"));
        let in_way = r#"[{"priority":0,"src":"all","table":"local"},{"priority":12,"src":"all","table":"9"}]"#;
        assert!(
            preflight(&c, &net(in_way))
                .unwrap_err()
                .contains("rule pref 12")
        );
        let taken = r#"[{"priority":0,"src":"all","table":"local"},{"priority":11,"src":"all","table":"9"}]"#;
        assert!(
            preflight(&c, &net(taken))
                .unwrap_err()
                .contains("preference 11")
        );
    }

    #[test]
    fn rules_match_exactly() {
        let n = net(
            r#"[{"priority":10,"src":"10.79.91.1","dst":"10.79.91.2","iif":"lo","table":"7991"},
                {"priority":11,"src":"10.79.91.2","srclen":24,"dst":"10.79.91.1","iif":"lo","table":"7992"}]"#,
        );
        let (a, b) = (Ipv4Addr::new(10, 79, 91, 1), Ipv4Addr::new(10, 79, 91, 2));
        assert!(n.has_rule(10, a, b, 7991));
        assert!(!n.has_rule(10, b, a, 7991));
        assert!(!n.has_rule(11, b, a, 7992), "a /24 is not the lab's rule");
    }

    #[test]
    fn state_round_trip() {
        let st = State {
            version: 1,
            complete: true,
            config: cfg(),
            items: vec![
                Item::Sysctl {
                    key: "net/ipv4/conf/all/rp_filter".into(),
                    previous: "2".into(),
                    value: "0".into(),
                },
                Item::LocalRuleMoved { from: 0, to: 12 },
            ],
        };
        let j = serde_json::to_string(&st).unwrap();
        assert!(j.contains(r#""kind":"local_rule_moved""#), "{j}");
        let back: State = serde_json::from_str(&j).unwrap();
        assert_eq!(back.items, st.items);
        assert_eq!(back.config, st.config);
    }
}
