//! The RDMA devices as sysfs shows them (`/sys/class/infiniband/DEV/...`): driver, provider, firmware,
//! node GUID; each port's state, link layer, rate and GID table.
use std::net::{IpAddr, Ipv6Addr};

use serde::Serialize;

use super::read::{ReadError, Root};
use super::{Layer, Scan};

pub const CLASS: &str = "sys/class/infiniband";

#[derive(Debug, Clone, Serialize)]
pub struct Device {
    pub name: String,
    /// The kernel driver: the `device/driver` link, or `rdma_rxe` / `siw` for a software device (one with
    /// a `parent` netdev and no bus device).
    pub driver: Option<String>,
    /// The libibverbs provider that serves the driver (`rxe`, `mlx5`, ...), and its library if found.
    pub provider: Option<String>,
    pub provider_library: Option<String>,
    pub node_type: Option<String>,
    pub node_guid: Option<String>,
    /// Firmware version; null where the driver exposes none (rxe's is empty).
    pub fw_ver: Option<String>,
    /// A software device's netdev (rxe, siw).
    pub parent: Option<String>,
    pub ports: Vec<Port>,
}

/// A state file: `4: ACTIVE` is (4, "ACTIVE").
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct State {
    pub code: u32,
    pub name: String,
}

impl State {
    fn parse(s: &str) -> Option<State> {
        let (n, name) = s.split_once(':')?;
        Some(State {
            code: n.trim().parse().ok()?,
            name: name.trim().to_string(),
        })
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Port {
    pub port: u32,
    pub state: Option<State>,
    pub phys_state: Option<State>,
    pub link_layer: Option<String>,
    pub rate: Option<String>,
    /// IB MTUs in bytes, and where the active one comes from (`verbs`: ibv_query_port; `ibv_devinfo`: a
    /// recorded tree's; `rxe`: derived from the netdev MTU as rxe does).
    pub active_mtu: Option<u32>,
    pub max_mtu: Option<u32>,
    pub mtu_source: Option<&'static str>,
    pub gids: Vec<Gid>,
    pub netdevs: Vec<super::netdev::Netdev>,
    /// `hw_counters/` (the driver's) and `counters/` (the IB port counters), by the kernel's names.
    pub hw_counters: std::collections::BTreeMap<String, u64>,
    pub counters: std::collections::BTreeMap<String, u64>,
    /// A file of the GID table (its directory, an entry, an entry's type) gave no value: `gids` may lack
    /// entries, and nothing is concluded from what it lacks (the `file_unreadable` or `not_recorded` finding
    /// says which file).
    #[serde(skip)]
    pub gids_incomplete: bool,
    /// The netdev of a GID entry of an Ethernet port gave no value: `netdevs` may lack one.
    #[serde(skip)]
    pub ndevs_incomplete: bool,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Gid {
    pub index: u32,
    pub gid: String,
    /// `RoCE v2`, `RoCE v1` (an Ethernet port's `IB/RoCE v1`) or `IB`.
    #[serde(rename = "type")]
    pub kind: String,
    pub netdev: Option<String>,
    /// The IPv4 address of an IPv4-mapped GID, the IPv6 address otherwise.
    pub address: String,
}

impl Gid {
    pub fn is_v2(&self) -> bool {
        self.kind == "RoCE v2"
    }

    pub fn ip(&self) -> Option<IpAddr> {
        self.address.parse().ok()
    }
}

/// A GID as sysfs writes it (`fe80:0000:...:3401`); `None` for the empty entry (all zero) or garbage.
pub fn parse_gid(s: &str) -> Option<Ipv6Addr> {
    let groups: Vec<u16> = s
        .split(':')
        .map(|g| u16::from_str_radix(g, 16))
        .collect::<Result<_, _>>()
        .ok()?;
    let g: [u16; 8] = groups.try_into().ok()?;
    let a = Ipv6Addr::from(g);
    (!a.is_unspecified()).then_some(a)
}

/// The address a GID stands for: IPv4 for an IPv4-mapped one.
pub fn gid_address(a: &Ipv6Addr) -> IpAddr {
    match a.to_ipv4_mapped() {
        Some(v4) => IpAddr::V4(v4),
        None => IpAddr::V6(*a),
    }
}

/// The provider (libibverbs) that serves a kernel driver.
pub fn provider_of(driver: &str) -> Option<&'static str> {
    const PROVIDERS: [(&str, &str); 19] = [
        ("rdma_rxe", "rxe"),
        ("siw", "siw"),
        ("mlx5_core", "mlx5"),
        ("mlx4_core", "mlx4"),
        ("bnxt_en", "bnxt_re"),
        ("irdma", "irdma"),
        ("ice", "irdma"),
        ("i40e", "irdma"),
        ("efa", "efa"),
        ("hns3", "hns"),
        ("hns_roce_hw_v2", "hns"),
        ("qede", "qedr"),
        ("qedr", "qedr"),
        ("vmw_pvrdma", "vmw_pvrdma"),
        ("erdma", "erdma"),
        ("mana", "mana"),
        ("cxgb4", "cxgb4"),
        ("be2net", "ocrdma"),
        ("hfi1", "hfi1verbs"),
    ];
    PROVIDERS
        .iter()
        .find(|(d, _)| *d == driver)
        .map(|(_, p)| *p)
}

/// The devices under the root (all, or `only`), as names.
pub fn device_names(root: &Root) -> Result<Vec<String>, ReadError> {
    root.list(CLASS)
}

/// One device's facts (ports and GIDs included; the netdevs, MTUs and counters are added by the caller).
pub fn device(scan: &mut Scan, name: &str) -> Device {
    let d = format!("{CLASS}/{name}");
    let at = |f: &str| format!("{d}/{f}");
    let parent = scan.root.text(&at("parent")).ok().filter(|p| !p.is_empty());
    let node_type = scan.value(&at("node_type"), Layer::Device, Some(name), None);
    let driver = scan.root.link_name(&at("device/driver")).or_else(|| {
        parent.as_ref().map(|_| {
            let iwarp = node_type.as_deref().is_some_and(|t| t.starts_with('4'));
            if iwarp { "siw" } else { "rdma_rxe" }.to_string()
        })
    });
    let numbers: Vec<u32> = scan
        .root
        .list(&at("ports"))
        .map_err(|e| scan.unread(&at("ports"), e, Layer::Device, Some(name), None))
        .unwrap_or_default()
        .iter()
        .filter_map(|p| p.parse::<u32>().ok())
        .collect();
    // Each port once, however many names lead to it, and no more than the pass's bound in all.
    let mut seen: Vec<(std::path::PathBuf, String)> = Vec::new();
    let mut ports = Vec::new();
    for (i, &p) in numbers.iter().enumerate() {
        let rel = at(&format!("ports/{p}"));
        let canonical = match scan.root.canonical(&rel) {
            Ok(c) => c,
            Err(e) => {
                scan.unread(&rel, e, Layer::Port, Some(name), Some(p));
                continue;
            }
        };
        if let Some((_, first)) = seen.iter().find(|(c, _)| *c == canonical) {
            let first = first.clone();
            scan.duplicates.push((scan.root.show(&rel), first));
            continue;
        }
        if scan.ports_left == 0 {
            scan.cut.push(format!(
                "{} port(s) of {name} (from port {p} on): past the {} ports read in all",
                numbers.len() - i,
                super::MAX_PORTS
            ));
            break;
        }
        scan.ports_left -= 1;
        seen.push((canonical, scan.root.show(&rel)));
        ports.push(port(scan, name, p));
    }
    Device {
        name: name.to_string(),
        provider: driver.as_deref().and_then(provider_of).map(str::to_string),
        driver,
        provider_library: None,
        node_type,
        node_guid: scan.value(&at("node_guid"), Layer::Device, Some(name), None),
        fw_ver: scan.root.text(&at("fw_ver")).ok().filter(|v| !v.is_empty()),
        parent,
        ports,
    }
}

fn port(scan: &mut Scan, dev: &str, n: u32) -> Port {
    let p = format!("{CLASS}/{dev}/ports/{n}");
    let mut value = |f: &str| scan.value(&format!("{p}/{f}"), Layer::Port, Some(dev), Some(n));
    let state = value("state");
    let phys_state = value("phys_state");
    let link_layer = value("link_layer");
    let (gids, gids_incomplete, ndevs_incomplete) = gids(scan, dev, n);
    Port {
        port: n,
        state: state.as_deref().and_then(State::parse),
        phys_state: phys_state.as_deref().and_then(State::parse),
        link_layer,
        rate: scan.root.text(&format!("{p}/rate")).ok(),
        active_mtu: None,
        max_mtu: None,
        mtu_source: None,
        gids,
        netdevs: Vec::new(),
        hw_counters: scan.counters(&format!("{p}/hw_counters"), dev, n),
        counters: scan.counters(&format!("{p}/counters"), dev, n),
        gids_incomplete,
        ndevs_incomplete,
    }
}

/// The port's GID table: every non-empty entry with its type and netdev, and whether an entry or its type
/// (first flag) or an Ethernet entry's netdev (second) gave no value. The attributes of an empty entry cannot
/// be read (EINVAL), so they are read only for entries that hold a GID; an InfiniBand port's entries have no
/// netdev (EINVAL too).
fn gids(scan: &mut Scan, dev: &str, n: u32) -> (Vec<Gid>, bool, bool) {
    let p = format!("{CLASS}/{dev}/ports/{n}");
    let ethernet = scan
        .root
        .text(&format!("{p}/link_layer"))
        .is_ok_and(|l| l == "Ethernet");
    let indices = match scan.root.list(&format!("{p}/gids")) {
        Ok(v) => v,
        Err(e) => {
            scan.unread(&format!("{p}/gids"), e, Layer::Gid, Some(dev), Some(n));
            return (Vec::new(), true, false);
        }
    };
    let (mut incomplete, mut ndevs_incomplete) = (false, false);
    let mut out = Vec::new();
    for (at, i) in indices
        .iter()
        .filter_map(|i| i.parse::<u32>().ok())
        .enumerate()
    {
        if scan.gid_entries_left == 0 {
            scan.cut.push(format!(
                "{} GID entries of {dev}/{n} (from index {i} on): past the {} read in all",
                indices.len() - at,
                super::MAX_GID_ENTRIES
            ));
            incomplete = true;
            break;
        }
        scan.gid_entries_left -= 1;
        let Some(raw) = scan.value(&format!("{p}/gids/{i}"), Layer::Gid, Some(dev), Some(n)) else {
            incomplete = true;
            continue;
        };
        let Some(a) = parse_gid(&raw) else { continue };
        let kind = scan
            .value(
                &format!("{p}/gid_attrs/types/{i}"),
                Layer::Gid,
                Some(dev),
                Some(n),
            )
            .map(|t| match t.as_str() {
                "IB/RoCE v1" if ethernet => "RoCE v1".to_string(),
                "IB/RoCE v1" => "IB".to_string(),
                _ => t,
            });
        incomplete |= kind.is_none();
        let ndev = format!("{p}/gid_attrs/ndevs/{i}");
        let netdev = match scan.root.text(&ndev) {
            Ok(d) => Some(d),
            Err(e) if ethernet => {
                scan.unread(&ndev, e, Layer::Gid, Some(dev), Some(n));
                ndevs_incomplete = true;
                None
            }
            Err(_) => None,
        };
        out.push(Gid {
            index: i,
            gid: a.to_string(),
            kind: kind.unwrap_or_else(|| UNKNOWN_TYPE.to_string()),
            netdev: netdev.filter(|d| !d.is_empty()),
            address: gid_address(&a).to_string(),
        });
    }
    (out, incomplete, ndevs_incomplete)
}

/// The type of an entry whose `gid_attrs/types` file gave no value.
pub const UNKNOWN_TYPE: &str = "unknown";

/// The GID indices to use for RoCE v2: over IPv4 (an IPv4-mapped GID) and over IPv6 (a global, not
/// link-local, address).
pub fn roce_v2_indices(gids: &[Gid]) -> (Option<u32>, Option<u32>) {
    let v4 = gids
        .iter()
        .find(|g| g.is_v2() && matches!(g.ip(), Some(IpAddr::V4(_))))
        .map(|g| g.index);
    let v6 = gids
        .iter()
        .find(|g| {
            g.is_v2()
                && matches!(g.ip(), Some(IpAddr::V6(a)) if (a.segments()[0] & 0xffc0) != 0xfe80)
        })
        .map(|g| g.index);
    (v4, v6)
}

/// The IB MTU enum's bytes (1 = 256 ... 5 = 4096).
pub fn mtu_bytes(enum_value: u32) -> Option<u32> {
    (1..=5).contains(&enum_value).then(|| 128 << enum_value)
}

/// rxe reserves this much of the netdev MTU for headers (RXE_MAX_HDR_LENGTH) when it derives a port's
/// active MTU; ib_core's `iboe_get_mtu` (mlx4, mlx5 and most others) reserves the GRH, UDP, BTH, the
/// largest extended header and the ICRC.
pub const RXE_HEADERS: u32 = 80;
pub const IBOE_HEADERS: u32 = 40 + 8 + 12 + 4 + 28 + 4;

/// The bytes a driver keeps for headers out of the netdev MTU.
pub fn headers(driver: Option<&str>) -> u32 {
    if driver == Some("rdma_rxe") {
        RXE_HEADERS
    } else {
        IBOE_HEADERS
    }
}

/// The largest IB MTU a netdev MTU carries after `headers` bytes, if any.
pub fn ib_mtu_for(netdev_mtu: u32, headers: u32) -> Option<u32> {
    let room = netdev_mtu.checked_sub(headers)?;
    [4096, 2048, 1024, 512, 256]
        .into_iter()
        .find(|&m| m <= room)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gids_parse_as_sysfs_writes_them() {
        let a = parse_gid("fe80:0000:0000:0000:5054:00ff:fe12:3401").unwrap();
        assert_eq!(a.to_string(), "fe80::5054:ff:fe12:3401");
        let m = parse_gid("0000:0000:0000:0000:0000:ffff:0a00:0001").unwrap();
        assert_eq!(gid_address(&m).to_string(), "10.0.0.1");
        assert_eq!(parse_gid("0000:0000:0000:0000:0000:0000:0000:0000"), None);
        assert_eq!(parse_gid("fe80::1"), None, "sysfs writes all 8 groups");
        assert_eq!(parse_gid("zz80:0000:0000:0000:5054:00ff:fe12:3401"), None);
    }

    #[test]
    fn states_parse() {
        assert_eq!(
            State::parse("4: ACTIVE"),
            Some(State {
                code: 4,
                name: "ACTIVE".into()
            })
        );
        assert_eq!(State::parse("ACTIVE"), None);
        assert_eq!(State::parse("x: ACTIVE"), None);
    }

    /// rxe: IB MTU 1024 needs a netdev MTU of 1104 (lab: 1000 gave 512); ib_core's rule keeps 96 bytes.
    #[test]
    fn ib_mtu_of_a_netdev_mtu() {
        assert_eq!(ib_mtu_for(1500, RXE_HEADERS), Some(1024));
        assert_eq!(ib_mtu_for(1104, RXE_HEADERS), Some(1024));
        assert_eq!(ib_mtu_for(1103, RXE_HEADERS), Some(512));
        assert_eq!(ib_mtu_for(1000, RXE_HEADERS), Some(512));
        assert_eq!(ib_mtu_for(9000, IBOE_HEADERS), Some(4096));
        assert_eq!(ib_mtu_for(1119, IBOE_HEADERS), Some(512));
        assert_eq!(ib_mtu_for(300, RXE_HEADERS), None);
        assert_eq!(ib_mtu_for(10, RXE_HEADERS), None);
    }
}
