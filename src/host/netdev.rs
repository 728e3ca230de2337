//! The network device under a RoCE port: link, carrier, MTU, speed, the VLAN it sits on, its addresses,
//! its neighbours (`/proc/net/arp`), its congestion knobs and pause counters.
use std::collections::BTreeMap;

use serde::Serialize;

use super::congestion::{self, Ecn, Pfc};
use super::read::Root;
use super::{Layer, Scan, calls};

#[derive(Debug, Clone, Serialize)]
pub struct Netdev {
    pub name: String,
    pub operstate: Option<String>,
    /// The administrative state (IFF_UP in `flags`): false after `ip link set IF down`.
    pub admin_up: Option<bool>,
    /// null when the kernel gives none (an interface that is down answers EINVAL).
    pub carrier: Option<bool>,
    pub mtu: Option<u32>,
    /// Mb/s; null when the driver reports none (-1: virtio, a link that is down).
    pub speed_mbps: Option<u64>,
    /// The speed file gave a value (-1 or a speed): `speed_mbps` null without it says nothing of the driver.
    #[serde(skip)]
    pub speed_read: bool,
    /// The largest IB MTU this MTU carries (after the driver's header bytes).
    pub ib_mtu_allowed: Option<u32>,
    pub vlan: Option<Vlan>,
    /// Its IP addresses: netlink's on the running system; the GID table's in a recorded tree.
    pub addresses: Vec<String>,
    pub neighbours: Vec<Neighbour>,
    pub ecn: Option<Ecn>,
    pub pfc: Pfc,
    /// Pause and PFC counters among its ethtool statistics (name, priority when the name has one, value).
    pub pause: Vec<PauseCounter>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Vlan {
    pub id: u32,
    pub parent: String,
    pub parent_operstate: Option<String>,
    pub parent_mtu: Option<u32>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Neighbour {
    pub address: String,
    pub mac: String,
    /// `permanent`, `complete` or `incomplete` (no answer to ARP).
    pub state: &'static str,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct PauseCounter {
    pub name: String,
    pub priority: Option<u8>,
    pub value: u64,
}

/// Reads netdev `name` (`headers`: the bytes its RDMA driver keeps out of the MTU; `gid_addresses`: the
/// addresses its GIDs carry, the recorded tree's only source of them).
pub fn read(
    scan: &mut Scan,
    name: &str,
    headers: u32,
    gid_addresses: &[String],
    dev: &str,
    port: u32,
) -> Netdev {
    let d = format!("sys/class/net/{name}");
    let root = scan.root;
    let mut value = |f: &str| scan.value(&format!("{d}/{f}"), Layer::Netdev, Some(dev), Some(port));
    let operstate = value("operstate");
    let mtu = scan
        .number(&format!("{d}/mtu"), Layer::Netdev, Some(dev), Some(port))
        .and_then(|m| u32::try_from(m).ok());
    let stats = calls::ethtool_stats(root, name).unwrap_or_default();
    // The kernel answers EINVAL for the speed of a link that is down: unread only matters for one that is up.
    let speed = match root.signed(&format!("{d}/speed")) {
        Ok(s) => Some(s),
        Err(e) => {
            if operstate.as_deref() == Some("up") {
                scan.unread(
                    &format!("{d}/speed"),
                    e,
                    Layer::Netdev,
                    Some(dev),
                    Some(port),
                );
            }
            None
        }
    };
    let ecn = congestion::ecn(scan, name, dev, port);
    Netdev {
        name: name.to_string(),
        operstate,
        admin_up: root
            .text(&format!("{d}/flags"))
            .ok()
            .and_then(|f| u32::from_str_radix(f.trim_start_matches("0x"), 16).ok())
            .map(|f| f & 1 != 0),
        carrier: root.text(&format!("{d}/carrier")).ok().map(|c| c == "1"),
        speed_mbps: speed.and_then(|s| u64::try_from(s).ok()),
        speed_read: speed.is_some(),
        ib_mtu_allowed: mtu.and_then(|m| super::rdma::ib_mtu_for(m, headers)),
        mtu,
        vlan: vlan(root, name),
        addresses: addresses(root, name, gid_addresses),
        neighbours: neighbours(root, name),
        ecn,
        pfc: congestion::pfc(root, name),
        pause: pause_counters(&stats),
    }
}

/// The VLAN a device is (`/proc/net/vlan/config`: `eth0.100 | 100 | eth0`), with its parent's state.
fn vlan(root: &Root, name: &str) -> Option<Vlan> {
    let table = root.table("proc/net/vlan/config").ok()?;
    let (id, parent) = table.lines().find_map(|l| {
        let f: Vec<&str> = l.split('|').map(str::trim).collect();
        match f[..] {
            [dev, id, parent] if dev == name => Some((id.parse().ok()?, parent.to_string())),
            _ => None,
        }
    })?;
    let p = format!("sys/class/net/{parent}");
    Some(Vlan {
        id,
        parent_operstate: root.text(&format!("{p}/operstate")).ok(),
        parent_mtu: root
            .number(&format!("{p}/mtu"))
            .ok()
            .and_then(|m| u32::try_from(m).ok()),
        parent,
    })
}

/// Its addresses: netlink's on the running system, else (a recorded tree, netlink unanswered) the GIDs'.
fn addresses(root: &Root, name: &str, gid_addresses: &[String]) -> Vec<String> {
    let ifindex = root.number(&format!("sys/class/net/{name}/ifindex")).ok();
    match ifindex.and_then(|i| calls::addresses(root, i)) {
        Some(v) => v,
        None => gid_addresses.to_vec(),
    }
}

/// The ARP entries on `name` (flags: 0x2 complete, 0x4 permanent; 0 is an entry waiting for an answer).
pub fn neighbours(root: &Root, name: &str) -> Vec<Neighbour> {
    let Ok(table) = root.table("proc/net/arp") else {
        return Vec::new();
    };
    table
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let [ip, _hw, flags, mac, _mask, dev] = f[..] else {
                return None;
            };
            let flags = u32::from_str_radix(flags.trim_start_matches("0x"), 16).ok()?;
            (dev == name).then(|| Neighbour {
                address: ip.to_string(),
                mac: mac.to_string(),
                state: if flags & 0x4 != 0 {
                    "permanent"
                } else if flags & 0x2 != 0 {
                    "complete"
                } else {
                    "incomplete"
                },
            })
        })
        .collect()
}

/// The pause and PFC counters among ethtool statistics, whatever the driver calls them (`rx_prio3_pause`,
/// `tx_pause_ctrl_phy`, `rx_pfc_frames_pri3`, ...): a name with pause, pfc, xon or xoff in it.
pub fn pause_counters(stats: &BTreeMap<String, u64>) -> Vec<PauseCounter> {
    stats
        .iter()
        .filter(|(n, _)| {
            let n = n.to_ascii_lowercase();
            ["pause", "pfc", "xon", "xoff"]
                .iter()
                .any(|w| n.contains(w))
        })
        .map(|(n, v)| PauseCounter {
            name: n.clone(),
            priority: priority_in(n),
            value: *v,
        })
        .collect()
}

/// The priority a counter's name carries: the digit after `prio`, `pri` or `priority` (`rx_prio3_pause`,
/// `rx_pfc_frames_pri3`, `rx_priority_3_xon`).
fn priority_in(name: &str) -> Option<u8> {
    let at = name.find("pri")?;
    let rest = name[at..].trim_start_matches(|c: char| c.is_ascii_alphabetic() || c == '_');
    let d = rest.chars().next()?.to_digit(10)?;
    let two = rest.chars().nth(1).is_some_and(|c| c.is_ascii_digit());
    (d < 8 && !two).then_some(d as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priorities_of_pause_counter_names() {
        assert_eq!(priority_in("rx_prio3_pause"), Some(3));
        assert_eq!(priority_in("tx_prio7_pause_duration"), Some(7));
        assert_eq!(priority_in("rx_pfc_frames_pri3"), Some(3));
        assert_eq!(priority_in("rx_priority_5_xoff.nic"), Some(5));
        assert_eq!(priority_in("tx_pause_ctrl_phy"), None);
        assert_eq!(priority_in("rx_prio12_pause"), None);
    }

    #[test]
    fn pause_counters_are_found_by_name() {
        let stats: BTreeMap<String, u64> = [
            ("rx_prio3_pause", 4),
            ("tx_pause_ctrl_phy", 1),
            ("rx_packets", 9),
            ("rx_queue_0_bytes", 10),
        ]
        .into_iter()
        .map(|(n, v)| (n.to_string(), v))
        .collect();
        let p = pause_counters(&stats);
        assert_eq!(p.len(), 2);
        assert_eq!(
            p[0],
            PauseCounter {
                name: "rx_prio3_pause".into(),
                priority: Some(3),
                value: 4
            }
        );
        assert_eq!(p[1].priority, None);
    }
}
