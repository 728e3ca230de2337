//! What the kernel gives only to system calls: a port's active MTU (uverbs, through libibverbs), a netdev's
//! ethtool statistics (SIOCETHTOOL), its addresses and PFC state (rtnetlink, DCB), the kernel log
//! (`/dev/kmsg`). Asked on the running system only; a recorded tree (`--root`) stands for two of them with
//! the output of the tools that print them: `DIR/ibv_devinfo` (`ibv_devinfo -v`) and `DIR/ethtool/IF`
//! (`ethtool -S IF`). The addresses and PFC are not read from a recorded tree.
use std::collections::BTreeMap;

use super::congestion::Pfc;
use super::read::{ReadError, Root};

#[cfg(target_os = "linux")]
mod linux;
#[cfg(all(feature = "rdma", target_os = "linux"))]
mod verbs;

/// What libibverbs said when asked for its devices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listed {
    /// The devices it lists (those a provider serves).
    Devices(Vec<String>),
    /// libibverbs.so.1 could not be loaded.
    NoLibrary,
    /// It failed otherwise (the error).
    Failed(String),
}

/// The ports' IB MTUs (device, port) -> (active, max) in bytes, and where they come from.
#[derive(Debug, Clone, Default)]
pub struct PortMtus {
    pub source: Option<&'static str>,
    pub mtus: BTreeMap<(String, u32), (u32, u32)>,
    /// libibverbs' own list (the running system with the verbs built in).
    pub listed: Option<Listed>,
}

pub fn port_mtus(root: &Root) -> PortMtus {
    if !root.live {
        return match root.table("ibv_devinfo") {
            Ok(t) => PortMtus {
                source: Some("ibv_devinfo"),
                mtus: parse_ibv_devinfo(&t),
                listed: None,
            },
            Err(_) => PortMtus::default(),
        };
    }
    #[cfg(all(feature = "rdma", target_os = "linux"))]
    return verbs::port_mtus();
    #[cfg(not(all(feature = "rdma", target_os = "linux")))]
    PortMtus::default()
}

/// `ibv_devinfo -v`: `hca_id: DEV`, then per port `port: N`, `max_mtu: 4096 (5)`, `active_mtu: 1024 (3)`.
pub fn parse_ibv_devinfo(text: &str) -> BTreeMap<(String, u32), (u32, u32)> {
    let mut out = BTreeMap::new();
    let (mut dev, mut port, mut max) = (None::<String>, None::<u32>, None::<u32>);
    for l in text.lines() {
        let Some((k, v)) = l.split_once(':') else {
            continue;
        };
        let v = v.trim();
        let first = v.split_whitespace().next().unwrap_or("");
        match k.trim() {
            "hca_id" => (dev, port, max) = (Some(v.to_string()), None, None),
            "port" => (port, max) = (first.parse().ok(), None),
            "max_mtu" => max = first.parse().ok(),
            "active_mtu" => {
                if let (Some(d), Some(p), Some(m), Ok(a)) = (&dev, port, max, first.parse()) {
                    out.insert((d.clone(), p), (a, m));
                }
            }
            _ => {}
        }
    }
    out
}

/// A netdev's ethtool statistics by name: the ioctl on the running system, `DIR/ethtool/IF` in a tree.
pub fn ethtool_stats(root: &Root, name: &str) -> Option<BTreeMap<String, u64>> {
    if !root.live {
        return root
            .table(&format!("ethtool/{name}"))
            .ok()
            .map(|t| parse_ethtool_s(&t));
    }
    #[cfg(target_os = "linux")]
    return linux::ethtool_stats(name).ok();
    #[cfg(not(target_os = "linux"))]
    None
}

/// `ethtool -S IF`: `NIC statistics:` then `     name: value` lines.
pub fn parse_ethtool_s(text: &str) -> BTreeMap<String, u64> {
    text.lines()
        .filter_map(|l| {
            let (k, v) = l.rsplit_once(':')?;
            Some((k.trim().to_string(), v.trim().parse().ok()?))
        })
        .collect()
}

/// The addresses (`A/prefix`) of the interface with index `ifindex` (netlink; the running system only).
pub fn addresses(root: &Root, ifindex: u64) -> Option<Vec<String>> {
    if !root.live {
        return None;
    }
    #[cfg(target_os = "linux")]
    return linux::addresses(u32::try_from(ifindex).ok()?).ok();
    #[cfg(not(target_os = "linux"))]
    {
        let _ = ifindex;
        None
    }
}

/// PFC of `name` from netlink DCB (the running system only).
pub fn pfc(root: &Root, name: &str) -> Pfc {
    if !root.live {
        return Pfc::NotRead;
    }
    #[cfg(target_os = "linux")]
    return linux::pfc(name);
    #[cfg(not(target_os = "linux"))]
    {
        let _ = name;
        Pfc::NotRead
    }
}

/// The running system's kernel log records, one a line.
pub fn kmsg() -> Result<String, ReadError> {
    #[cfg(target_os = "linux")]
    return linux::kmsg();
    #[cfg(not(target_os = "linux"))]
    Err(ReadError::Missing)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lab guest's `ibv_devinfo -v` (rxe0, kernel 6.1, rdma-core 44), trimmed.
    #[test]
    fn ibv_devinfo_ports() {
        let t = "hca_id:\trxe0\n\tfw_ver:\t\t\t\t0.0.0\n\tphys_port_cnt:\t\t\t1\n\t\tport:\t1\n\t\t\t\
                 state:\t\t\tPORT_ACTIVE (4)\n\t\t\tmax_mtu:\t\t4096 (5)\n\t\t\tactive_mtu:\t\t1024 (3)\n\
                 hca_id:\trxe1\n\t\tport:\t1\n\t\t\tmax_mtu:\t\t4096 (5)\n\t\t\tactive_mtu:\t\t512 (2)\n";
        let m = parse_ibv_devinfo(t);
        assert_eq!(m.get(&("rxe0".to_string(), 1)), Some(&(1024, 4096)));
        assert_eq!(m.get(&("rxe1".to_string(), 1)), Some(&(512, 4096)));
        assert_eq!(m.len(), 2);
        assert!(parse_ibv_devinfo("active_mtu: 1024 (3)\ngarbage").is_empty());
    }

    #[test]
    fn ethtool_s_lines() {
        let m = parse_ethtool_s(
            "NIC statistics:\n     rx_prio3_pause: 12\n     tx_bytes: x\n     a: b: 3\n",
        );
        assert_eq!(m.get("rx_prio3_pause"), Some(&12));
        assert_eq!(m.get("tx_bytes"), None);
        assert_eq!(m.get("a: b"), Some(&3));
    }
}
