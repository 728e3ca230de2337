//! What `lab up` did, item by item, with what it takes to undo it, and the state file that records it.

use std::fs;
use std::io::Write;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

use anyhow::{Context, anyhow};
use serde::{Deserialize, Serialize};

use super::layout::Layout;

const DEFAULT_STATE: &str = "/run/rocescope/lab.json";

/// One thing `up` did, with what it takes to undo it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Item {
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
    pub fn describe(&self) -> String {
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
}

#[derive(Serialize, Deserialize, Debug)]
pub struct State {
    pub version: u32,
    /// false while `up` runs (or when it was killed half-way)
    pub complete: bool,
    #[serde(rename = "config")]
    pub layout: Layout,
    pub items: Vec<Item>,
}

pub fn state_path() -> PathBuf {
    // tests point this elsewhere
    match std::env::var_os("ROCESCOPE_LAB_STATE") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => PathBuf::from(DEFAULT_STATE),
    }
}

/// The most a state file is read: `lab up` writes a few KB.
pub const MAX_STATE: u64 = 1 << 20;

/// The state file's content, None when there is none. The causes of "not lab up's" are in the middle of
/// the line, before what to do.
pub fn load_state(path: &Path) -> anyhow::Result<Option<State>> {
    use rocescope::source::printout::{ReadFailure, read_regular};
    match read_regular(path, MAX_STATE) {
        Ok(b) => serde_json::from_slice(&b).map(Some).map_err(|e| {
            anyhow!(
                "the state file {} is not lab up's ({e}): move it away if no lab is up",
                path.display()
            )
        }),
        Err(ReadFailure::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e @ (ReadFailure::NotRegular(_) | ReadFailure::TooLarge(..))) => Err(anyhow!(
            "the state file {} is {e}: not lab up's; move it away if no lab is up",
            path.display()
        )),
        // ReadFailure is a Display, not an Error: its text is the cause
        Err(e) => Err(anyhow!(
            "cannot read the state file {}: {e}",
            path.display()
        )),
    }
}

pub fn save_state(path: &Path, st: &State, first: bool) -> anyhow::Result<()> {
    let body = serde_json::to_vec_pretty(st).context("cannot encode the lab's state")?;
    let written = || -> std::io::Result<()> {
        if first {
            if let Some(dir) = path.parent() {
                fs::create_dir_all(dir)?;
            }
            // create_new: two `lab up` at once cannot both own the lab
            let mut f = fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(path)?;
            return f.write_all(&body);
        }
        let tmp = path.with_extension("json.tmp");
        fs::write(&tmp, &body)?;
        fs::rename(&tmp, path)
    };
    written().with_context(|| format!("cannot write the state file {}", path.display()))
}

/// Removes the state file, and /run/rocescope when that is left empty.
pub fn remove_state(path: &Path) {
    let _ = fs::remove_file(path);
    if path == Path::new(DEFAULT_STATE)
        && let Some(dir) = path.parent()
    {
        let _ = fs::remove_dir(dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_round_trip() {
        let st = State {
            version: 1,
            complete: true,
            layout: crate::lab::layout::example(),
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
        assert_eq!(back.layout, st.layout);
    }
}
