//! A port, layer by layer: its state, its MTU against its netdevs', its GID table, its netdevs.
use std::net::IpAddr;

use super::super::netdev::Netdev;
use super::super::{Layer, rdma};
use super::{At, Finding, Root, Severity};

pub fn findings(root: &Root, d: &rdma::Device, p: &rdma::Port, out: &mut Vec<Finding>) {
    let at = At {
        device: Some(&d.name),
        port: Some(p.port),
    };
    let base = root.show(&format!("{}/{}/ports/{}", rdma::CLASS, d.name, p.port));
    let down = state(&at, &base, p, out);
    match p.link_layer.as_deref() {
        Some("Ethernet") => {}
        Some("InfiniBand") => {
            out.push(at.finding(
                Severity::Note,
                Layer::Port,
                "infiniband_port",
                format!("{base}/link_layer: InfiniBand"),
                "an InfiniBand port, not RoCE: its GIDs and netdev are not checked",
                "nothing, unless RoCE was meant: then the port's link type (mlxconfig LINK_TYPE_P1=ETH)",
            ));
            return;
        }
        _ => return,
    }
    // A GID entry or its netdev that gave no value may name the netdev: no conclusion from its absence.
    if p.netdevs.is_empty() && !p.gids_incomplete && !p.ndevs_incomplete {
        out.push(at.finding(
            Severity::Error,
            Layer::Netdev,
            "no_netdev",
            format!("{base}/gid_attrs/ndevs: no netdev named; no parent"),
            "a RoCE port with no network device: nothing can carry its packets",
            "check that the NIC's Ethernet driver is loaded and the netdev exists (ip link)",
        ));
    }
    gids(&at, &base, p, out);
    for n in &p.netdevs {
        mtu(&at, root, d, p, n, out);
        netdev(&at, root, p, n, down, out);
    }
}

/// Port state: DOWN (with the netdev's cause) or not ACTIVE. True when either was found.
fn state(at: &At, base: &str, p: &rdma::Port, out: &mut Vec<Finding>) -> bool {
    let Some(s) = &p.state else { return false };
    if s.code == 4 {
        return false;
    }
    let phys = p
        .phys_state
        .as_ref()
        .map_or("?".to_string(), |s| format!("{}: {}", s.code, s.name));
    let own = p.netdevs.first();
    let link = own.map_or(String::new(), |n| {
        format!(
            "; {}: operstate {}, {}",
            n.name,
            n.operstate.as_deref().unwrap_or("?"),
            match n.admin_up {
                Some(false) => "administratively down",
                Some(true) => "administratively up",
                None => "flags unreadable",
            }
        )
    });
    let evidence = format!(
        "{base}/state: {}: {}; phys_state: {phys}{link}",
        s.code, s.name
    );
    if s.code == 1 {
        let name = own.map_or("the netdev", |n| n.name.as_str());
        let fix = match own.and_then(|n| n.admin_up) {
            Some(false) => format!("ip link set {name} up"),
            _ => format!(
                "{name} has no carrier: check the cable, the peer's port and the switch port (ip link show {name})"
            ),
        };
        out.push(at.finding(
            Severity::Error,
            Layer::Port,
            "port_down",
            evidence,
            format!("the port is DOWN because {name} is: no RDMA traffic can leave or arrive; QPs on it stall"),
            fix,
        ));
    } else {
        out.push(at.finding(
            Severity::Error,
            Layer::Port,
            "port_not_active",
            evidence,
            format!(
                "the port is {} (not ACTIVE): the link may be up but the port does not pass traffic yet; \
                 QPs cannot reach RTR",
                s.name
            ),
            "RoCE: bring the netdev up and check the driver's messages (dmesg); InfiniBand: start a subnet \
             manager (opensm)",
        ));
    }
    true
}

/// The active MTU against what `n`'s MTU carries.
fn mtu(at: &At, root: &Root, d: &rdma::Device, p: &rdma::Port, n: &Netdev, out: &mut Vec<Finding>) {
    let Some(nm) = n.mtu else { return };
    let headers = rdma::headers(d.driver.as_deref());
    let allowed = n.ib_mtu_allowed;
    let file = root.show(&format!("sys/class/net/{}/mtu", n.name));
    let carries = match allowed {
        Some(a) => format!("carries IB MTU {a} at most ({nm} - {headers} header bytes)"),
        None => format!("carries no IB MTU ({nm} - {headers} header bytes is below 256)"),
    };
    let active = p.active_mtu.filter(|_| p.mtu_source != Some("rxe"));
    if let Some(a) = active.filter(|a| allowed.is_none_or(|l| *a > l)) {
        out.push(at.finding(
            Severity::Error,
            Layer::Mtu,
            "ib_mtu_above_netdev",
            format!(
                "active MTU {a} ({}); {file}: {nm}, which {carries}",
                p.mtu_source.unwrap_or("?")
            ),
            format!(
                "a full-size segment ({a} bytes and headers) does not fit {}'s MTU: the kernel drops it before \
                 the wire and the QP hangs with no completion and no error (rxe: send_err rises)",
                n.name
            ),
            format!(
                "ip link set {} mtu {} (and the same on every host and switch port of the path), or use a \
                 path MTU of {} (perftest -m, gen --mtu)",
                n.name,
                a + headers,
                allowed.map_or("none".to_string(), |l| l.to_string())
            ),
        ));
    } else if allowed.is_none_or(|l| l < 1024) {
        out.push(at.finding(
            Severity::Error,
            Layer::Mtu,
            "netdev_mtu_too_small",
            format!(
                "{file}: {nm}, which {carries}; the port's active MTU: {}",
                p.active_mtu.map_or("unknown".to_string(), |a| format!("{a} ({})", p.mtu_source.unwrap_or("?")))
            ),
            format!(
                "{}'s MTU is below the {} bytes IB MTU 1024 needs: a connection whose path MTU is 1024 (a peer \
                 on a 1500-byte link, or a tool asking for it) sends segments this link cannot carry, and the \
                 QP hangs silently",
                n.name,
                1024 + headers
            ),
            format!(
                "ip link set {} mtu 1500 (at least {}), the same on both ends and every switch port; or a \
                 path MTU of {} on both ends",
                n.name,
                1024 + headers,
                allowed.map_or("none".to_string(), |l| l.to_string())
            ),
        ));
    }
}

/// The GID table: a RoCE v2 entry, index 0, an IPv4 GID. What the table lacks is concluded only when every
/// entry was read (`gids_incomplete`: a file of it gave no value, and its finding says which).
fn gids(at: &At, base: &str, p: &rdma::Port, out: &mut Vec<Finding>) {
    let complete = !p.gids_incomplete;
    if p.gids.is_empty() && complete {
        out.push(at.finding(
            Severity::Error,
            Layer::Gid,
            "no_gid",
            format!("{base}/gids: no entry holds a GID"),
            "the port has no GID: no RoCE connection can be addressed (the table is filled from the netdev's \
             MAC and addresses)",
            "bring the netdev up with an address (ip link set IF up; ip addr add A/N dev IF)",
        ));
        return;
    }
    let (v4, _) = rdma::roce_v2_indices(&p.gids);
    let listing = |g: &rdma::Gid| format!("GID {} {} {}", g.index, g.gid, g.kind);
    if p.gids.is_empty() {
        return;
    }
    if !p.gids.iter().any(rdma::Gid::is_v2) && complete {
        out.push(at.finding(
            Severity::Error,
            Layer::Gid,
            "no_roce_v2_gid",
            format!("{base}/gid_attrs/types: {}", p.gids.iter().map(listing).collect::<Vec<_>>().join(", ")),
            "only RoCE v1 GIDs: RoCE v2 (UDP 4791, routable) cannot be used on this port; tools asking for a \
             RoCE v2 GID find none",
            "enable RoCE v2 in the driver or firmware (mlx4: options mlx4_core roce_mode=2; mlx5: the \
             firmware's RoCE mode), or use RoCE v1 on a single L2 segment",
        ));
        return;
    }
    index0(at, base, p, v4, complete, out);
    if v4.is_none() && complete {
        let n = p.netdevs.first().map_or("the netdev", |n| n.name.as_str());
        out.push(at.finding(
            Severity::Warning,
            Layer::Gid,
            "no_ipv4_gid",
            format!("{base}/gids: no RoCE v2 GID with an IPv4-mapped address (::ffff:a.b.c.d)"),
            format!(
                "RoCE v2 over IPv4 is impossible on this port: {n} has no IPv4 address (the kernel makes a GID \
                 for each address of the netdev)"
            ),
            format!("ip addr add A/N dev {n} (the GID appears at once)"),
        ));
    }
}

/// GID index 0, the tools' default: RoCE v1 or empty (a warning), or the IPv6 link-local GID while the
/// IPv4 one (index `v4`) is elsewhere (a note).
fn index0(
    at: &At,
    base: &str,
    p: &rdma::Port,
    v4: Option<u32>,
    complete: bool,
    out: &mut Vec<Finding>,
) {
    let first = p.gids.iter().find(|g| g.index == 0);
    let use_v2 = v4.or_else(|| p.gids.iter().find(|g| g.is_v2()).map(|g| g.index));
    let idx = use_v2.map_or("N".to_string(), |i| i.to_string());
    match first {
        Some(g) if !g.is_v2() && g.kind != rdma::UNKNOWN_TYPE => out.push(at.finding(
            Severity::Warning,
            Layer::Gid,
            "gid0_not_roce_v2",
            format!("{base}/gid_attrs/types/0: {} ({})", g.kind, g.gid),
            "tools that default to GID index 0 (perftest without -x, ibv_*_pingpong without -g) use RoCE v1: \
             not routable, and not what a RoCE v2 peer expects",
            format!("give the RoCE v2 index: -x {idx} (perftest, rocescope gen), -g {idx} (ibv_rc_pingpong)"),
        )),
        Some(g) if v4.is_some_and(|i| i != 0) && matches!(g.ip(), Some(IpAddr::V6(a)) if a.segments()[0] == 0xfe80) => {
            out.push(at.finding(
                Severity::Note,
                Layer::Gid,
                "gid0_link_local",
                format!("{base}/gids/0: {} ({})", g.gid, g.kind),
                "GID index 0 is the IPv6 link-local GID: tools that default to index 0 talk RoCE v2 over IPv6 \
                 link-local, which reaches only this link",
                format!("for RoCE v2 over IPv4 give -x {idx} (perftest, rocescope gen), -g {idx} (ibv_rc_pingpong)"),
            ))
        }
        None if complete => out.push(at.finding(
            Severity::Warning,
            Layer::Gid,
            "gid0_not_roce_v2",
            format!("{base}/gids/0: empty"),
            "GID index 0 is empty: tools that default to index 0 fail to create an address handle",
            format!("give the RoCE v2 index: -x {idx} (perftest, rocescope gen), -g {idx} (ibv_rc_pingpong)"),
        )),
        _ => {}
    }
}

/// The netdev: down (when the port did not say so), its VLAN's parent, its speed, its neighbours, its
/// addresses without a GID.
fn netdev(
    at: &At,
    root: &Root,
    p: &rdma::Port,
    n: &Netdev,
    port_down: bool,
    out: &mut Vec<Finding>,
) {
    link(at, root, p, n, port_down, out);
    for nb in n.neighbours.iter().filter(|nb| nb.state == "incomplete") {
        out.push(at.finding(
            Severity::Warning,
            Layer::Netdev,
            "neighbour_incomplete",
            format!("{}: {} on {} incomplete (no MAC)", root.show("proc/net/arp"), nb.address, n.name),
            format!(
                "{} does not answer ARP on {}: RoCE connections to it cannot resolve its MAC (rdma_cm: \
                 address resolution times out)",
                nb.address, n.name
            ),
            format!(
                "check that {0} is up and on {1}'s subnet and VLAN (ping -I {1} {0})",
                nb.address, n.name
            ),
        ));
    }
    let gid_addrs: Vec<IpAddr> = p.gids.iter().filter_map(rdma::Gid::ip).collect();
    for a in &n.addresses {
        let ip: Option<IpAddr> = a.split('/').next().and_then(|s| s.parse().ok());
        if let Some(IpAddr::V4(v4)) = ip
            && !gid_addrs.contains(&IpAddr::V4(v4))
        {
            out.push(at.finding(
                Severity::Warning,
                Layer::Gid,
                "address_without_gid",
                format!("{} has {a} (netlink); no GID of the port holds it", n.name),
                format!("RoCE v2 cannot use {v4}: the GID table has no entry for it"),
                format!(
                    "delete and add the address again (ip addr del {a} dev {0}; ip addr add {a} dev {0})",
                    n.name
                ),
            ));
        }
    }
}

/// The link: down (when the port did not say so), its VLAN's parent down, no speed.
fn link(at: &At, root: &Root, p: &rdma::Port, n: &Netdev, port_down: bool, out: &mut Vec<Finding>) {
    let dir = root.show(&format!("sys/class/net/{}", n.name));
    let op = n.operstate.as_deref().unwrap_or("");
    let is_down = |s: &str| matches!(s, "down" | "lowerlayerdown" | "notpresent");
    if is_down(op) && !port_down {
        out.push(at.finding(
            Severity::Error,
            Layer::Netdev,
            "netdev_down",
            format!("{dir}/operstate: {op}"),
            format!("{} is {op}: RoCE traffic of its GIDs cannot flow", n.name),
            match n.admin_up {
                Some(false) => format!("ip link set {} up", n.name),
                _ => format!(
                    "{} has no carrier: check the cable, the peer's port and the switch port",
                    n.name
                ),
            },
        ));
    }
    if let Some(v) = n
        .vlan
        .as_ref()
        .filter(|v| v.parent_operstate.as_deref().is_some_and(is_down))
    {
        out.push(at.finding(
            Severity::Error,
            Layer::Netdev,
            "vlan_parent_down",
            format!(
                "{}: VLAN {} on {}; {}/operstate: {}",
                root.show("proc/net/vlan/config"),
                v.id,
                v.parent,
                root.show(&format!("sys/class/net/{}", v.parent)),
                v.parent_operstate.as_deref().unwrap_or("?")
            ),
            format!(
                "{} sits on {}, which is down: nothing leaves",
                n.name, v.parent
            ),
            format!("ip link set {} up", v.parent),
        ));
    }
    if op == "up" && n.speed_read && n.speed_mbps.is_none() {
        out.push(at.finding(
            Severity::Note,
            Layer::Netdev,
            "speed_unknown",
            format!("{dir}/speed: unknown (-1 or unreadable); port rate: {}", p.rate.as_deref().unwrap_or("?")),
            "the driver reports no link speed: the port's rate is a default, not the link's (ib_core assumes \
             1000 Mb/s and logs 'speed is unknown')",
            "none for a virtual NIC (virtio, veth); on hardware, check the link (ethtool IF)",
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Addresses come from netlink (the running system only): an IPv4 address no GID holds is a warning.
    #[test]
    fn an_ipv4_address_without_a_gid_is_a_warning() {
        let n = Netdev {
            name: "eth0".into(),
            operstate: Some("up".into()),
            admin_up: Some(true),
            carrier: Some(true),
            mtu: Some(1500),
            speed_mbps: Some(1000),
            speed_read: true,
            ib_mtu_allowed: Some(1024),
            vlan: None,
            addresses: vec![
                "10.0.0.1/24".into(),
                "10.0.0.9/24".into(),
                "fe80::1/64".into(),
            ],
            neighbours: Vec::new(),
            ecn: None,
            pfc: super::super::super::congestion::Pfc::NotRead,
            pause: Vec::new(),
        };
        let gid = |i, a: &str| rdma::Gid {
            index: i,
            gid: String::new(),
            kind: "RoCE v2".into(),
            netdev: Some("eth0".into()),
            address: a.into(),
        };
        let p = rdma::Port {
            port: 1,
            state: None,
            phys_state: None,
            link_layer: Some("Ethernet".into()),
            rate: None,
            active_mtu: None,
            max_mtu: None,
            mtu_source: None,
            gids: vec![gid(0, "fe80::5054:ff:fe12:3401"), gid(1, "10.0.0.1")],
            netdevs: Vec::new(),
            hw_counters: Default::default(),
            counters: Default::default(),
            gids_incomplete: false,
            ndevs_incomplete: false,
        };
        let at = At {
            device: Some("rxe0"),
            port: Some(1),
        };
        let mut out = Vec::new();
        netdev(&at, &Root::live(), &p, &n, false, &mut out);
        let codes: Vec<&str> = out.iter().map(|f| f.code).collect();
        assert_eq!(
            codes,
            ["address_without_gid"],
            "10.0.0.9 only; the link-local is not checked"
        );
        assert!(out[0].evidence.starts_with("eth0 has 10.0.0.9/24"));
    }
}
