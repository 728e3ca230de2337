//! `rocescope doctor`: every RDMA device and port examined layer by layer (the kernel's RDMA subsystem,
//! the provider library, the device, the port, its MTU against its netdev's, the GID table, the netdev,
//! congestion control, the kernel log, the counters), each problem a [`Finding`] with its evidence (the
//! file or value read), what it means and the fix.
mod environment;
mod port;
mod signals;

use std::collections::BTreeMap;

use serde::Serialize;

use super::read::Root;
use super::{Layer, Scan, calls, netdev, rdma};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Error,
    Warning,
    Note,
}

impl Severity {
    pub fn name(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "note",
        }
    }
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Finding {
    pub severity: Severity,
    pub layer: Layer,
    pub device: Option<String>,
    pub port: Option<u32>,
    /// One of the codes docs/json.md lists.
    pub code: &'static str,
    /// What was read: the file and its value.
    pub evidence: String,
    pub meaning: String,
    pub fix: String,
}

/// Where findings are about: a device's port, a device, or the host (both `None`).
#[derive(Debug, Clone, Copy)]
pub struct At<'a> {
    pub device: Option<&'a str>,
    pub port: Option<u32>,
}

impl At<'_> {
    pub const HOST: At<'static> = At {
        device: None,
        port: None,
    };

    pub fn finding(
        self,
        severity: Severity,
        layer: Layer,
        code: &'static str,
        evidence: String,
        meaning: impl Into<String>,
        fix: impl Into<String>,
    ) -> Finding {
        Finding {
            severity,
            layer,
            device: self.device.map(str::to_string),
            port: self.port,
            code,
            evidence,
            meaning: meaning.into(),
            fix: fix.into(),
        }
    }
}

/// The GID indices a port offers for RoCE v2 (`gid_index` in the JSON).
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
pub struct GidIndex {
    pub roce_v2_ipv4: Option<u32>,
    pub roce_v2_ipv6: Option<u32>,
}

/// What the host is, beyond its devices.
#[derive(Debug, Clone, Serialize)]
pub struct HostFacts {
    /// `/`, or the recorded tree.
    pub root: String,
    pub kernel: Option<String>,
    /// /sys/class/infiniband is there.
    pub rdma_subsystem: bool,
    /// Where libibverbs.so.1 is, if anywhere.
    pub libibverbs: Option<String>,
    /// The library directories and `etc/libibverbs.d` are there to be checked (always on the running
    /// system; false for a recorded tree without them: libibverbs and the providers are not recorded).
    pub libraries_recorded: bool,
    /// `net.ipv4.tcp_ecn` (TCP's: RoCE's ECN is the NIC's DCQCN).
    pub tcp_ecn: Option<u64>,
    /// How many kernel log lines were read, or why none.
    pub kernel_log: String,
    /// The running system (false: a recorded tree).
    #[serde(skip)]
    pub live: bool,
}

/// The whole examination: `doctor --json` writes it.
#[derive(Debug, Clone, Serialize)]
pub struct Examination {
    pub host: HostFacts,
    pub devices: Vec<rdma::Device>,
    pub findings: Vec<Finding>,
    pub gid_index: BTreeMap<String, GidIndex>,
}

/// The codes that say there is no usable RDMA here (exit status [`NO_RDMA`]).
pub const NO_RDMA_CODES: [&str; 4] = [
    "no_rdma_subsystem",
    "no_devices",
    "no_libibverbs",
    "no_provider",
];
/// `doctor`'s exit status for "no RDMA here".
pub const NO_RDMA: u8 = 4;

impl Examination {
    /// 4 when there is no usable RDMA here (no subsystem, no device, no libibverbs, or no provider for
    /// any device), 1 with a finding of severity error, else 0.
    pub fn exit_status(&self) -> u8 {
        let has = |c: &str| self.findings.iter().any(|f| f.code == c);
        let environment = NO_RDMA_CODES[..3].iter().any(|c| has(c));
        let unserved = !self.devices.is_empty()
            && self.devices.iter().all(|d| {
                self.findings.iter().any(|f| {
                    f.code == "no_provider" && f.device.as_deref() == Some(d.name.as_str())
                })
            });
        if environment || unserved {
            NO_RDMA
        } else if self.findings.iter().any(|f| f.severity == Severity::Error) {
            1
        } else {
            0
        }
    }

    pub fn count(&self, s: Severity) -> usize {
        self.findings.iter().filter(|f| f.severity == s).count()
    }
}

/// Examines every device (or `only`) under the root. An error line when `only` names no device.
pub fn examine(root: &Root, only: Option<&str>) -> Result<Examination, super::HostError> {
    let mut host = HostFacts {
        root: root.name(),
        kernel: root.text("proc/sys/kernel/osrelease").ok(),
        rdma_subsystem: root.is_dir(rdma::CLASS),
        libibverbs: None,
        libraries_recorded: root.live,
        tcp_ecn: root.number("proc/sys/net/ipv4/tcp_ecn").ok(),
        kernel_log: "not read".to_string(),
        live: root.live,
    };
    let libs = environment::Libraries::find(root);
    host.libibverbs = libs.libibverbs.clone();
    host.libraries_recorded = libs.recorded && libs.drivers_recorded;
    let mut findings = Vec::new();
    let names = match environment::devices(root, &host, &mut findings) {
        Some(n) => n,
        None => {
            return Ok(Examination {
                host,
                devices: Vec::new(),
                findings,
                gid_index: BTreeMap::new(),
            });
        }
    };
    if let Some(d) = only
        && !names.iter().any(|n| n == d)
    {
        return Err(super::no_such_device(d, &names));
    }
    let mtus = calls::port_mtus(root);
    let mut scan = Scan::new(root);
    let chosen: Vec<&String> = names
        .iter()
        .filter(|n| only.is_none_or(|d| d == n.as_str()))
        .collect();
    let mut devices: Vec<rdma::Device> = Vec::new();
    // Each device once, however many names lead to it, and no more than MAX_DEVICES.
    let mut seen: Vec<(std::path::PathBuf, String)> = Vec::new();
    for (i, n) in chosen.iter().enumerate() {
        let rel = format!("{}/{n}", rdma::CLASS);
        let canonical = match root.canonical(&rel) {
            Ok(c) => c,
            Err(e) => {
                scan.unread(&rel, e, Layer::Device, Some(n), None);
                continue;
            }
        };
        if let Some((_, first)) = seen.iter().find(|(c, _)| *c == canonical) {
            scan.duplicates.push((root.show(&rel), first.clone()));
            continue;
        }
        if devices.len() == MAX_DEVICES {
            scan.cut.push(format!(
                "{} device(s) (from {n} on): past the {MAX_DEVICES} read in all",
                chosen.len() - i
            ));
            break;
        }
        seen.push((canonical, root.show(&rel)));
        devices.push(read_device(&mut scan, n, &libs, &mtus));
    }
    environment::provider_findings(&libs, &mtus, &devices, &mut findings);
    if let Some(f) = mtus_not_recorded(root, &mtus, &devices) {
        findings.push(f);
    }
    for d in &devices {
        for p in &d.ports {
            port::findings(root, d, p, &mut findings);
            signals::congestion(root, d, p, &mut findings);
            signals::counters(root, d, p, &mut findings);
        }
    }
    host.kernel_log = signals::kernel_log(root, &devices, &mut findings);
    findings.extend(scan.unread.iter().map(signals::unread));
    findings.extend(bounds(&scan));
    findings.sort_by_key(|f| f.severity);
    let gid_index = gid_index(&devices);
    Ok(Examination {
        host,
        devices,
        findings,
        gid_index,
    })
}

/// The most devices examined in one pass.
pub const MAX_DEVICES: usize = 256;

/// What was read once for several names, and what was left unread past a bound.
fn bounds(scan: &Scan) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Some((name, first)) = scan.duplicates.first() {
        let more = scan.duplicates.len() - 1;
        out.push(At::HOST.finding(
            Severity::Note,
            Layer::Device,
            "duplicate_paths",
            format!(
                "{} name(s) lead to a device or port read already (the first: {name}, the same as {first}){}",
                scan.duplicates.len(),
                if more > 0 {
                    format!("; {more} more")
                } else {
                    String::new()
                }
            ),
            "several names of one device or port (symbolic links to one place): each is examined once",
            "none on a running system (sysfs has one name each); in a recorded tree, record each device once",
        ));
    }
    if !scan.cut.is_empty() {
        out.push(At::HOST.finding(
            Severity::Warning,
            Layer::Device,
            "examination_cut",
            format!("not read: {}", scan.cut.join("; ")),
            "doctor's work is bounded in total: what lies past a bound is not examined, and nothing is \
             concluded from it (the GID table of a port cut short concludes nothing from what it lacks)",
            "examine one device at a time (-d DEV)",
        ));
    }
    out
}

/// A recorded tree without `ibv_devinfo`: the active MTU of the ports whose driver does not derive it from
/// the netdev's (every driver but rxe) is not recorded, and the MTU check against the netdev is skipped.
fn mtus_not_recorded(
    root: &Root,
    mtus: &calls::PortMtus,
    devices: &[rdma::Device],
) -> Option<Finding> {
    if root.live || mtus.source.is_some() {
        return None;
    }
    let unknown: Vec<String> = devices
        .iter()
        .flat_map(|d| d.ports.iter().map(move |p| (d, p)))
        .filter(|(_, p)| p.active_mtu.is_none() && p.link_layer.as_deref() == Some("Ethernet"))
        .map(|(d, p)| format!("{}/{}", d.name, p.port))
        .collect();
    (!unknown.is_empty()).then(|| {
        At::HOST.finding(
            Severity::Note,
            Layer::Mtu,
            "not_recorded",
            format!(
                "{}: not recorded; active MTU unknown for {}",
                root.show("ibv_devinfo"),
                unknown.join(", ")
            ),
            "the tree records no ibv_devinfo: the ports' active IB MTU is not known, and is not held against \
             the netdevs' MTU",
            "record `ibv_devinfo -v` as DIR/ibv_devinfo (testdata/host/README.md), or run doctor on the host",
        )
    })
}

/// Each port's RoCE v2 GID indices, by "DEV/PORT".
fn gid_index(devices: &[rdma::Device]) -> BTreeMap<String, GidIndex> {
    devices
        .iter()
        .flat_map(|d| d.ports.iter().map(move |p| (d, p)))
        .map(|(d, p)| {
            let (v4, v6) = rdma::roce_v2_indices(&p.gids);
            let index = GidIndex {
                roce_v2_ipv4: v4,
                roce_v2_ipv6: v6,
            };
            (format!("{}/{}", d.name, p.port), index)
        })
        .collect()
}

/// A device with its provider library, its ports' MTUs and netdevs.
fn read_device(
    scan: &mut Scan,
    name: &str,
    libs: &environment::Libraries,
    mtus: &calls::PortMtus,
) -> rdma::Device {
    let mut d = rdma::device(scan, name);
    d.provider_library = d.provider.as_deref().and_then(|p| libs.provider(p));
    let headers = rdma::headers(d.driver.as_deref());
    for p in &mut d.ports {
        let mut names: Vec<String> = d.parent.clone().into_iter().collect();
        for g in &p.gids {
            if let Some(n) = g.netdev.as_ref().filter(|n| !names.contains(n)) {
                names.push(n.clone());
            }
        }
        p.netdevs = names
            .iter()
            .map(|n| {
                let addrs: Vec<String> = p
                    .gids
                    .iter()
                    .filter(|g| g.netdev.as_deref() == Some(n.as_str()))
                    .map(|g| g.address.clone())
                    .collect();
                netdev::read(scan, n, headers, &addrs, name, p.port)
            })
            .collect();
        if let Some((active, max)) = mtus.mtus.get(&(name.to_string(), p.port)) {
            (p.active_mtu, p.max_mtu, p.mtu_source) = (Some(*active), Some(*max), mtus.source);
        } else if d.driver.as_deref() == Some("rdma_rxe") {
            // rxe sets the port's active MTU from its netdev's (rxe_set_mtu); its max is 4096.
            let own = p.netdevs.first().and_then(|n| n.ib_mtu_allowed);
            (p.active_mtu, p.max_mtu, p.mtu_source) = (own, Some(4096), own.map(|_| "rxe"));
        }
    }
    d
}
