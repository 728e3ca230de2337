//! The steps of `lab up`: the checks before anything changes, then each item created and recorded in the
//! state file as soon as it exists.

use std::net::Ipv4Addr;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail};
use rocescope::report::format::error_line;

use super::ip::{Net, ToolError, Tools, rule_args};
use super::layout::Layout;
use super::state::{Item, State, save_state};
use super::system::{
    netdev_exists, rdma_dev_exists, read_trim, roce_v2_ipv4_gid, rxe_package_hint, sysctl_get,
    sysctl_set,
};

/// How long `up` waits for the RoCE v2 IPv4-mapped GIDs to appear.
const GID_WAIT: Duration = Duration::from_secs(5);

/// The checks before anything is changed; returns whether the local rule must move.
pub fn preflight(cfg: &Layout, net: &Net) -> anyhow::Result<bool> {
    let redo = "`rocescope lab down` if an earlier lab left it, or choose another --name";
    for n in [&cfg.veth_a, &cfg.veth_b] {
        if netdev_exists(n) {
            bail!("interface {n} already exists: {redo}");
        }
    }
    for n in [&cfg.rxe_a, &cfg.rxe_b] {
        if rdma_dev_exists(n) {
            bail!("RDMA device {n} already exists: {redo}");
        }
    }
    for (opt, ip) in [("--addr-a", cfg.addr_a), ("--addr-b", cfg.addr_b)] {
        if let Some((dev, ..)) = net
            .addr_list()
            .iter()
            .find(|(_, a, _)| *a == ip.to_string())
        {
            bail!("{ip} is already an address of {dev}: choose another {opt}");
        }
    }
    for t in [cfg.table_a, cfg.table_b] {
        if net.table_in_use(t) {
            bail!("routing table {t} is already in use: choose another --table");
        }
    }
    let prefs: Vec<u32> = net.rules.iter().filter_map(Net::rule_pref).collect();
    for p in [cfg.pref_a, cfg.pref_b] {
        if prefs.contains(&p) {
            bail!("rule preference {p} is already in use: choose another --pref");
        }
    }
    let local = net.local_prefs();
    let Some(&first_local) = local.iter().min() else {
        bail!(
            "no IPv4 rule looks up the local table: this host's policy routing is unusual, lab up will not touch it"
        );
    };
    if first_local != 0 {
        // already moved (as in the lab guest): it only has to come after the lab's rules
        if first_local <= cfg.pref_b {
            bail!(
                "the local table rule is at pref {first_local}, before the lab's rules: choose a --pref below {}",
                first_local.saturating_sub(1)
            );
        }
        return Ok(false);
    }
    // moved to pref_local, the local table must still come before every other rule
    if let Some(p) = prefs
        .iter()
        .find(|&&p| p > 0 && p <= cfg.pref_local && !local.contains(&p))
    {
        bail!(
            "rule pref {p} would come before the local table once it moves to pref {}: choose a --pref below {}",
            cfg.pref_local,
            p.saturating_sub(2).max(1)
        );
    }
    Ok(true)
}

/// Does the step, records it in the state file, and stops at the first failure.
pub struct Builder<'a> {
    pub ctx: &'a Tools,
    pub st: &'a mut State,
    pub path: &'a Path,
}

impl Builder<'_> {
    fn record(&mut self, item: Item) -> anyhow::Result<()> {
        self.st.items.push(item);
        save_state(self.path, self.st, false)
    }

    /// Sets a sysctl when it differs, recording the previous value.
    fn sysctl(&mut self, key: &str, value: &str) -> anyhow::Result<()> {
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

    /// Every item of the layout, in order; `move_local`: the `local` table rule is still at pref 0.
    pub fn build(&mut self, move_local: bool) -> anyhow::Result<()> {
        let c = self.st.layout.clone();
        self.ctx.ip(&[
            "link", "add", &c.veth_a, "type", "veth", "peer", "name", &c.veth_b,
        ])?;
        self.record(Item::Veth {
            a: c.veth_a.clone(),
            b: c.veth_b.clone(),
        })?;
        self.sysctls(&c)?;
        let mac = |dev: &str| {
            read_trim(&Path::new("/sys/class/net").join(dev).join("address"))
                .ok_or_else(|| anyhow!("cannot read the MAC address of {dev}"))
        };
        let (mac_a, mac_b) = (mac(&c.veth_a)?, mac(&c.veth_b)?);
        self.addresses(&c)?;
        self.routes_and_rules(&c)?;
        if move_local {
            self.move_local_rule(c.pref_local)?;
        }
        for (dev, peer, mac) in [(&c.veth_a, c.addr_b, &mac_b), (&c.veth_b, c.addr_a, &mac_a)] {
            self.neighbour(dev, peer, mac)?;
        }
        for (rxe, dev) in [(&c.rxe_a, &c.veth_a), (&c.rxe_b, &c.veth_b)] {
            self.rxe(rxe, dev)?;
        }
        wait_for_gids(&c)
    }

    fn sysctls(&mut self, c: &Layout) -> anyhow::Result<()> {
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
        self.sysctl("net/ipv4/conf/all/rp_filter", "0")
    }

    /// Each veth up with its /32.
    fn addresses(&mut self, c: &Layout) -> anyhow::Result<()> {
        for (dev, addr) in [(&c.veth_a, c.addr_a), (&c.veth_b, c.addr_b)] {
            self.ctx.ip(&["link", "set", dev, "up"])?;
            self.ctx
                .ip(&["addr", "add", &format!("{addr}/32"), "dev", dev])?;
            self.record(Item::Addr {
                dev: dev.clone(),
                addr,
            })?;
        }
        Ok(())
    }

    /// Per direction, a route to the peer's address over the veth, in a table of its own, and the rule that
    /// sends locally generated traffic from one address to the other there.
    fn routes_and_rules(&mut self, c: &Layout) -> anyhow::Result<()> {
        let dirs = [
            (&c.veth_a, c.addr_a, c.addr_b, c.table_a, c.pref_a),
            (&c.veth_b, c.addr_b, c.addr_a, c.table_b, c.pref_b),
        ];
        for &(dev, src, dst, table, _) in &dirs {
            self.ctx.ip(&[
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
            self.ctx.ip(&rule_args("add", pref, from, to, table))?;
            self.record(Item::Rule {
                pref,
                from,
                to,
                table,
            })?;
        }
        Ok(())
    }

    /// The `local` table rule from pref 0 to `to`, after the lab's rules.
    fn move_local_rule(&mut self, to: u32) -> anyhow::Result<()> {
        // add before delete: the host is never without a local table rule
        let pref = to.to_string();
        let ctx = self.ctx;
        ctx.ip(&["-4", "rule", "add", "pref", &pref, "lookup", "local"])?;
        if let Err(e) = ctx.ip(&["-4", "rule", "del", "pref", "0", "lookup", "local"]) {
            let _ = ctx.ip(&["-4", "rule", "del", "pref", &pref, "lookup", "local"]);
            return Err(e.into());
        }
        self.record(Item::LocalRuleMoved { from: 0, to })
    }

    /// The peer's MAC as a permanent neighbour: no ARP on the wire being captured.
    fn neighbour(&mut self, dev: &str, peer: Ipv4Addr, mac: &str) -> anyhow::Result<()> {
        self.ctx.ip(&[
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
            dev: dev.to_string(),
            addr: peer,
            mac: mac.to_string(),
        })
    }

    /// The rxe device `rxe` on `dev`, or why Soft-RoCE is not there.
    fn rxe(&mut self, rxe: &str, dev: &str) -> anyhow::Result<()> {
        if let Err(e) = self
            .ctx
            .rdma(&["link", "add", rxe, "type", "rxe", "netdev", dev])
        {
            let why = match &e {
                ToolError::Failed { why, .. } => why.clone(),
                e => error_line(e),
            };
            let what = if why.contains("NETLINK_RDMA") {
                "the kernel has no RDMA support loaded: load Soft-RoCE with"
            } else {
                "is Soft-RoCE there? try"
            };
            bail!(
                "cannot create the rxe device {rxe} on {dev} (`rdma link add` said: {why}): {what} \
                 `modprobe rdma_rxe` ({})",
                rxe_package_hint()
            );
        }
        self.record(Item::Rxe {
            name: rxe.to_string(),
            netdev: dev.to_string(),
        })
    }
}

/// Until both rxe devices have their RoCE v2 IPv4-mapped GID, at most [`GID_WAIT`].
fn wait_for_gids(c: &Layout) -> anyhow::Result<()> {
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
            bail!(
                "no RoCE v2 IPv4-mapped GID on {} after {} s",
                missing.join(" and "),
                GID_WAIT.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::ip::with_rules as net;

    #[test]
    fn local_rule_placement() {
        let c = crate::lab::layout::example();
        let host = r#"[{"priority":0,"src":"all","table":"local"},{"priority":32766,"src":"all","table":"main"}]"#;
        assert!(preflight(&c, &net(host)).unwrap());
        // the lab guest: local already at 200, after rules 100/101
        let guest = r#"[{"priority":100,"src":"10.0.0.1","dst":"10.0.0.2","iif":"lo","table":"100"},
            {"priority":200,"src":"all","table":"local"},{"priority":32766,"src":"all","table":"main"}]"#;
        assert!(!preflight(&c, &net(guest)).unwrap());
        let early = r#"[{"priority":5,"src":"all","table":"local"}]"#;
        assert!(
            preflight(&c, &net(early))
                .unwrap_err()
                .to_string()
                .contains("pref 5")
        );
        let in_way = r#"[{"priority":0,"src":"all","table":"local"},{"priority":12,"src":"all","table":"9"}]"#;
        assert!(
            preflight(&c, &net(in_way))
                .unwrap_err()
                .to_string()
                .contains("rule pref 12")
        );
        let taken = r#"[{"priority":0,"src":"all","table":"local"},{"priority":11,"src":"all","table":"9"}]"#;
        assert!(
            preflight(&c, &net(taken))
                .unwrap_err()
                .to_string()
                .contains("preference 11")
        );
    }
}
