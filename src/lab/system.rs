//! What `lab` reads and writes of this host outside iproute2: /sys (interfaces, RDMA devices, their ports and
//! GIDs) and /proc/sys (sysctls).

use std::fs;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};

use anyhow::Context;

pub fn netdev_exists(name: &str) -> bool {
    Path::new("/sys/class/net").join(name).exists()
}

pub fn rdma_dev_exists(name: &str) -> bool {
    Path::new("/sys/class/infiniband").join(name).exists()
}

pub fn sysctl_get(key: &str) -> anyhow::Result<String> {
    let p = Path::new("/proc/sys").join(key);
    fs::read_to_string(&p)
        .map(|s| s.trim().to_string())
        .with_context(|| format!("cannot read {}", p.display()))
}

pub fn sysctl_set(key: &str, value: &str) -> anyhow::Result<()> {
    let p = Path::new("/proc/sys").join(key);
    fs::write(&p, value).with_context(|| format!("cannot write {value} to {}", p.display()))
}

/// A RoCE v2 GID of an rxe device.
pub struct Gid {
    pub index: u32,
    pub gid: Ipv6Addr,
    pub kind: String,
    pub ndev: String,
}

pub fn port_dir(dev: &str) -> PathBuf {
    Path::new("/sys/class/infiniband").join(dev).join("ports/1")
}

pub fn read_trim(p: &Path) -> Option<String> {
    fs::read_to_string(p).ok().map(|s| s.trim().to_string())
}

/// The non-empty GIDs of port 1, by index.
pub fn gids(dev: &str) -> Vec<Gid> {
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

pub fn roce_v2_ipv4_gid(dev: &str, addr: Ipv4Addr) -> Option<Gid> {
    gids(dev)
        .into_iter()
        .find(|g| g.kind == "RoCE v2" && g.gid.to_ipv4_mapped() == Some(addr))
}

/// "ACTIVE" from "4: ACTIVE".
pub fn port_state(dev: &str, what: &str) -> String {
    read_trim(&port_dir(dev).join(what))
        .map(|s| s.split_once(": ").map_or(s.clone(), |(_, n)| n.to_string()))
        .unwrap_or_else(|| "unknown".into())
}

pub fn os_release() -> String {
    read_trim(Path::new("/proc/sys/kernel/osrelease")).unwrap_or_else(|| "$(uname -r)".into())
}

/// Where this distribution ships the rdma_rxe module, from /etc/os-release's ID and ID_LIKE.
pub fn rxe_package_hint() -> String {
    let os = fs::read_to_string("/etc/os-release").unwrap_or_default();
    let ids: Vec<&str> = os
        .lines()
        .filter_map(|l| l.strip_prefix("ID=").or_else(|| l.strip_prefix("ID_LIKE=")))
        .flat_map(|v| v.trim_matches('"').split(' '))
        .collect();
    let release = os_release();
    if ids.contains(&"ubuntu") {
        format!(
            "Ubuntu has it in linux-modules-extra-{release}: apt install linux-modules-extra-{release}"
        )
    } else if ids.contains(&"debian") {
        format!(
            "Debian's kernel packages include it: apt install linux-image-{release}, or boot a Debian kernel"
        )
    } else {
        "it is the kernel's rdma_rxe module (CONFIG_RDMA_RXE); install your distribution's package with it".into()
    }
}

pub fn require_root() -> anyhow::Result<()> {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        anyhow::bail!(
            "needs root (it creates interfaces, routes, rules and RDMA devices): run it as root, e.g. with sudo"
        );
    }
    Ok(())
}
