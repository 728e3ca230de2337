//! The steps of `lab down`: each item `up` recorded, checked against the system and undone, last first.

use rocescope::report::format::error_line;

use super::ip::{Net, ToolError, Tools, rule_args};
use super::state::Item;
use super::system::{netdev_exists, rdma_dev_exists, sysctl_get, sysctl_set};

impl Item {
    pub fn present(&self, net: &Net) -> bool {
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
    fn undo(&self, ctx: &Tools, net: &Net) -> anyhow::Result<String> {
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
                restore_local_rule(ctx, net, *from, *to)?;
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

/// The `local` table rule back from pref `to` at pref `from` (whichever of the two is still to be done).
fn restore_local_rule(ctx: &Tools, net: &Net, from: u32, to: u32) -> Result<(), ToolError> {
    // add before delete: the host is never without a local table rule
    let l = net.local_prefs();
    let rule = |verb: &str, pref: u32| {
        ctx.ip(&[
            "-4",
            "rule",
            verb,
            "pref",
            &pref.to_string(),
            "lookup",
            "local",
        ])
    };
    if !l.contains(&from) {
        rule("add", from)?;
    }
    if l.contains(&to) {
        rule("del", to)?;
    }
    Ok(())
}

/// Undoes every item, last first; returns what was done and the items that could not be undone, each with
/// its error's line (what `lab` says of it).
pub fn undo_all(ctx: &Tools, items: &[Item]) -> (Vec<String>, Vec<(Item, String)>) {
    let (mut done, mut failed) = (Vec::new(), Vec::new());
    let net = match ctx.snapshot() {
        Ok(n) => n,
        Err(e) => {
            let e = error_line(&e);
            return (done, items.iter().map(|i| (i.clone(), e.clone())).collect());
        }
    };
    for it in items.iter().rev() {
        match it.undo(ctx, &net) {
            Ok(s) => done.push(s),
            Err(e) => failed.push((it.clone(), format!("{e:#}"))),
        }
    }
    failed.reverse();
    (done, failed)
}
