//! The NIC counters at one moment, and what moved between two moments: every port's `hw_counters/` and
//! `counters/`, every RoCE netdev's `statistics/` and ethtool statistics, by the kernel's names (discovered
//! at run time: they differ between kernels and drivers).
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Instant;

use serde::Serialize;

use super::read::Root;
use super::{Layer, Scan, calls, rdma};

/// One port's counters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortValues {
    pub device: String,
    pub port: u32,
    pub hw_counters: BTreeMap<String, u64>,
    pub counters: BTreeMap<String, u64>,
}

/// One netdev's statistics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetdevValues {
    pub name: String,
    pub statistics: BTreeMap<String, u64>,
    pub ethtool: BTreeMap<String, u64>,
}

/// Which ports and netdevs a snapshot reads (found once: the GID table is too long to scan every second).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Layout {
    pub ports: Vec<PortPlace>,
    /// Netdevs read besides the ports' (a capture interface).
    pub extra: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortPlace {
    pub device: String,
    pub port: u32,
    /// The netdevs its GIDs name (the first is its own: GID 0's).
    pub netdevs: Vec<String>,
    /// The IP addresses of its GIDs.
    pub addresses: Vec<IpAddr>,
}

impl Layout {
    /// Every port of every device (or of device `only`) under the root. An error line when `only` is not
    /// there; no devices at all is an empty layout.
    pub fn find(root: &Root, only: Option<&str>) -> Result<Layout, super::HostError> {
        let names = rdma::device_names(root).unwrap_or_default();
        if let Some(d) = only
            && !names.iter().any(|n| n == d)
        {
            return Err(super::no_such_device(d, &names));
        }
        let mut scan = Scan::new(root);
        let ports = names
            .iter()
            .filter(|n| only.is_none_or(|d| d == n.as_str()))
            .flat_map(|n| {
                let dev = rdma::device(&mut scan, n);
                dev.ports
                    .into_iter()
                    .map(|p| place(&dev.name, dev.parent.as_deref(), &p))
                    .collect::<Vec<_>>()
            })
            .collect();
        Ok(Layout {
            ports,
            extra: Vec::new(),
        })
    }

    /// Every netdev its ports sit on, once.
    pub fn netdevs(&self) -> Vec<String> {
        let mut v: Vec<String> = Vec::new();
        for n in self
            .ports
            .iter()
            .flat_map(|p| &p.netdevs)
            .chain(&self.extra)
        {
            if !v.contains(n) {
                v.push(n.clone());
            }
        }
        v
    }
}

fn place(device: &str, parent: Option<&str>, p: &rdma::Port) -> PortPlace {
    let mut netdevs: Vec<String> = parent.map(str::to_string).into_iter().collect();
    for g in &p.gids {
        if let Some(n) = &g.netdev
            && !netdevs.contains(n)
        {
            netdevs.push(n.clone());
        }
    }
    PortPlace {
        device: device.to_string(),
        port: p.port,
        netdevs,
        addresses: p.gids.iter().filter_map(rdma::Gid::ip).collect(),
    }
}

/// The counters of a layout at one moment.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub at: Instant,
    pub ports: Vec<PortValues>,
    pub netdevs: Vec<NetdevValues>,
}

impl Snapshot {
    pub fn take(root: &Root, layout: &Layout) -> Snapshot {
        let at = Instant::now();
        let mut scan = Scan::new(root);
        let ports = layout
            .ports
            .iter()
            .map(|p| {
                let dir = format!("{}/{}/ports/{}", rdma::CLASS, p.device, p.port);
                PortValues {
                    device: p.device.clone(),
                    port: p.port,
                    hw_counters: scan.counters(&format!("{dir}/hw_counters"), &p.device, p.port),
                    counters: scan.counters(&format!("{dir}/counters"), &p.device, p.port),
                }
            })
            .collect();
        let netdevs = layout
            .netdevs()
            .into_iter()
            .map(|name| NetdevValues {
                statistics: statistics(&mut scan, &name),
                ethtool: calls::ethtool_stats(root, &name).unwrap_or_default(),
                name,
            })
            .collect();
        Snapshot { at, ports, netdevs }
    }
}

fn statistics(scan: &mut Scan, name: &str) -> BTreeMap<String, u64> {
    let dir = format!("sys/class/net/{name}/statistics");
    let names = scan.root.list(&dir).unwrap_or_default();
    names
        .into_iter()
        .filter_map(|n| {
            let v = scan.number(&format!("{dir}/{n}"), Layer::Counters, None, None)?;
            Some((n, v))
        })
        .collect()
}

/// How much a counter moved: `None` when it went backwards (the device or the counter was reset).
pub fn moved(before: Option<u64>, after: u64) -> Option<u64> {
    after.checked_sub(before.unwrap_or(0))
}

/// What moved between two snapshots, by name; counters that did not move are left out unless `all`.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Deltas {
    pub ports: Vec<PortDeltas>,
    pub netdevs: Vec<NetdevDeltas>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct PortDeltas {
    pub device: String,
    pub port: u32,
    pub hw_counters: BTreeMap<String, Delta>,
    pub counters: BTreeMap<String, Delta>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct NetdevDeltas {
    pub netdev: String,
    pub statistics: BTreeMap<String, Delta>,
    pub ethtool: BTreeMap<String, Delta>,
}

/// A counter's movement: how much it rose, or that it went backwards (`"reset"` in the JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Delta {
    Rose(u64),
    Reset(&'static str),
}

/// `+N`, or `reset`: how the text reports write a delta.
impl std::fmt::Display for Delta {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Delta::Rose(v) => write!(f, "+{v}"),
            Delta::Reset(_) => write!(f, "reset"),
        }
    }
}

fn diff_maps(
    a: &BTreeMap<String, u64>,
    b: &BTreeMap<String, u64>,
    all: bool,
) -> BTreeMap<String, Delta> {
    b.iter()
        .filter_map(|(n, v)| {
            let d = match moved(a.get(n).copied(), *v) {
                Some(d) => Delta::Rose(d),
                None => Delta::Reset("reset"),
            };
            (all || d != Delta::Rose(0)).then(|| (n.clone(), d))
        })
        .collect()
}

impl Deltas {
    pub fn between(a: &Snapshot, b: &Snapshot, all: bool) -> Deltas {
        let ports = b
            .ports
            .iter()
            .map(|pb| {
                let pa = a
                    .ports
                    .iter()
                    .find(|p| p.device == pb.device && p.port == pb.port);
                let empty = BTreeMap::new();
                PortDeltas {
                    device: pb.device.clone(),
                    port: pb.port,
                    hw_counters: diff_maps(
                        pa.map_or(&empty, |p| &p.hw_counters),
                        &pb.hw_counters,
                        all,
                    ),
                    counters: diff_maps(pa.map_or(&empty, |p| &p.counters), &pb.counters, all),
                }
            })
            .collect();
        let netdevs = b
            .netdevs
            .iter()
            .map(|nb| {
                let na = a.netdevs.iter().find(|n| n.name == nb.name);
                let empty = BTreeMap::new();
                NetdevDeltas {
                    netdev: nb.name.clone(),
                    statistics: diff_maps(
                        na.map_or(&empty, |n| &n.statistics),
                        &nb.statistics,
                        all,
                    ),
                    ethtool: diff_maps(na.map_or(&empty, |n| &n.ethtool), &nb.ethtool, all),
                }
            })
            .collect();
        Deltas { ports, netdevs }
    }

    /// How much `name` of port `device/port` rose (hw_counters first, then counters); 0 when it is not there.
    pub fn port(&self, device: &str, port: u32, name: &str) -> Option<Delta> {
        let p = self
            .ports
            .iter()
            .find(|p| p.device == device && p.port == port)?;
        p.hw_counters
            .get(name)
            .or_else(|| p.counters.get(name))
            .copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(v: &[(&str, u64)]) -> BTreeMap<String, u64> {
        v.iter().map(|(n, x)| (n.to_string(), *x)).collect()
    }

    #[test]
    fn deltas_rise_or_reset() {
        let a = map(&[("sent_pkts", 10), ("rcvd_pkts", 5), ("send_err", 3)]);
        let b = map(&[
            ("sent_pkts", 25),
            ("rcvd_pkts", 5),
            ("send_err", 1),
            ("new", 2),
        ]);
        let d = diff_maps(&a, &b, false);
        assert_eq!(d.get("sent_pkts"), Some(&Delta::Rose(15)));
        assert_eq!(d.get("rcvd_pkts"), None, "did not move");
        assert_eq!(d.get("send_err"), Some(&Delta::Reset("reset")));
        assert_eq!(d.get("new"), Some(&Delta::Rose(2)), "appeared: from 0");
        assert_eq!(
            diff_maps(&a, &b, true).get("rcvd_pkts"),
            Some(&Delta::Rose(0))
        );
        assert_eq!(
            serde_json::to_string(&diff_maps(&a, &b, false)).unwrap(),
            r#"{"new":2,"send_err":"reset","sent_pkts":15}"#
        );
    }
}
