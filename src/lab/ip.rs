//! iproute2's `ip` and `rdma`, run as an engineer would type them, and what `ip -j` says of the IPv4 rules,
//! routes, addresses and neighbours.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

/// Why `ip` or `rdma` did not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// `why` is in the middle of the line, before what to do: not a source.
    #[error("cannot run {}: {why}: install iproute2", .prog.display())]
    NoIp { prog: PathBuf, why: std::io::Error },
    #[error("{} is not iproute2's ip (busybox's cannot do this): install iproute2", .prog.display())]
    NotIproute2 { prog: PathBuf },
    #[error("cannot run {}", .prog.display())]
    Run {
        prog: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The command ran and failed; `why`: the first line it said (or its exit status).
    #[error("`{command}` failed: {why}")]
    Failed { command: String, why: String },
    #[error("`ip {args}` did not print a JSON array")]
    NotJson { args: String },
}

/// The programs this module runs.
pub struct Tools {
    ip: PathBuf,
    rdma: PathBuf,
}

/// A full path when one of the usual directories has it: in the lab guest, busybox's `ip` applet comes first
/// on PATH and cannot do policy routing or JSON.
fn find_tool(name: &str, dirs: &[&str]) -> PathBuf {
    dirs.iter()
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from(name))
}

impl Tools {
    pub fn find() -> Result<Tools, ToolError> {
        let ctx = Tools {
            ip: find_tool("ip", &["/usr/sbin", "/sbin", "/usr/bin", "/bin"]),
            rdma: find_tool("rdma", &["/usr/bin", "/usr/sbin", "/bin", "/sbin"]),
        };
        let v = Command::new(&ctx.ip)
            .arg("-V")
            .stdin(Stdio::null())
            .output()
            .map_err(|why| ToolError::NoIp {
                prog: ctx.ip.clone(),
                why,
            })?;
        let text =
            String::from_utf8_lossy(&v.stdout).into_owned() + &String::from_utf8_lossy(&v.stderr);
        if !text.contains("iproute2") {
            return Err(ToolError::NotIproute2 { prog: ctx.ip });
        }
        Ok(ctx)
    }

    fn run<S: AsRef<str>>(&self, prog: &Path, args: &[S]) -> Result<String, ToolError> {
        let args: Vec<&str> = args.iter().map(|s| s.as_ref()).collect();
        let name = prog
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let o = Command::new(prog)
            .args(&args)
            .stdin(Stdio::null())
            .output()
            .map_err(|source| ToolError::Run {
                prog: prog.to_path_buf(),
                source,
            })?;
        if o.status.success() {
            return Ok(String::from_utf8_lossy(&o.stdout).into_owned());
        }
        let err = String::from_utf8_lossy(&o.stderr);
        let out = String::from_utf8_lossy(&o.stdout);
        let why = err
            .lines()
            .chain(out.lines())
            .map(str::trim)
            .find(|l| !l.is_empty())
            .map(str::to_string)
            .unwrap_or_else(|| o.status.to_string());
        Err(ToolError::Failed {
            command: format!("{name} {}", args.join(" ")),
            why,
        })
    }

    pub fn ip<S: AsRef<str>>(&self, args: &[S]) -> Result<String, ToolError> {
        self.run(&self.ip, args)
    }

    pub fn rdma<S: AsRef<str>>(&self, args: &[S]) -> Result<String, ToolError> {
        self.run(&self.rdma, args)
    }

    fn ip_json(&self, args: &[&str]) -> Result<Vec<Value>, ToolError> {
        let mut a = vec!["-j"];
        a.extend_from_slice(args);
        let out = self.ip(&a)?;
        if out.trim().is_empty() {
            return Ok(Vec::new());
        }
        match serde_json::from_str::<Value>(&out) {
            Ok(Value::Array(v)) => Ok(v),
            _ => Err(ToolError::NotJson { args: a.join(" ") }),
        }
    }

    pub fn snapshot(&self) -> Result<Net, ToolError> {
        Ok(Net {
            rules: self.ip_json(&["-4", "rule", "show"])?,
            routes: self.ip_json(&["-4", "route", "show", "table", "all"])?,
            addrs: self.ip_json(&["-4", "addr", "show"])?,
            neighs: self.ip_json(&["-4", "neigh", "show"])?,
        })
    }
}

/// The IPv4 rules, routes, addresses and neighbours, as `ip -j` prints them.
pub struct Net {
    pub rules: Vec<Value>,
    routes: Vec<Value>,
    addrs: Vec<Value>,
    neighs: Vec<Value>,
}

fn s<'a>(v: &'a Value, k: &str) -> &'a str {
    v[k].as_str().unwrap_or("")
}

impl Net {
    pub fn rule_pref(r: &Value) -> Option<u32> {
        r["priority"].as_u64().and_then(|p| u32::try_from(p).ok())
    }

    pub fn local_prefs(&self) -> Vec<u32> {
        self.rules
            .iter()
            .filter(|r| s(r, "table") == "local")
            .filter_map(Net::rule_pref)
            .collect()
    }

    pub fn has_rule(&self, pref: u32, from: Ipv4Addr, to: Ipv4Addr, table: u32) -> bool {
        self.rules.iter().any(|r| {
            Net::rule_pref(r) == Some(pref)
                && s(r, "src") == from.to_string()
                && s(r, "dst") == to.to_string()
                && r.get("srclen").is_none_or(|l| l == 32)
                && r.get("dstlen").is_none_or(|l| l == 32)
                && s(r, "iif") == "lo"
                && s(r, "table") == table.to_string()
        })
    }

    pub fn has_route(&self, table: u32, dst: Ipv4Addr, dev: &str) -> bool {
        self.routes.iter().any(|r| {
            s(r, "table") == table.to_string()
                && s(r, "dst") == dst.to_string()
                && s(r, "dev") == dev
        })
    }

    pub fn table_in_use(&self, table: u32) -> bool {
        let t = table.to_string();
        self.routes.iter().any(|r| s(r, "table") == t)
            || self.rules.iter().any(|r| s(r, "table") == t)
    }

    /// (interface, address, prefix length) of every IPv4 address.
    pub fn addr_list(&self) -> Vec<(String, String, u64)> {
        let mut v = Vec::new();
        for l in &self.addrs {
            for a in l["addr_info"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
                if s(a, "family") == "inet" {
                    v.push((
                        s(l, "ifname").to_string(),
                        s(a, "local").to_string(),
                        a["prefixlen"].as_u64().unwrap_or(0),
                    ));
                }
            }
        }
        v
    }

    pub fn has_addr(&self, dev: &str, addr: Ipv4Addr) -> bool {
        self.addr_list()
            .iter()
            .any(|(d, a, len)| d == dev && *a == addr.to_string() && *len == 32)
    }

    pub fn has_neigh(&self, dev: &str, addr: Ipv4Addr, mac: &str) -> bool {
        self.neighs.iter().any(|n| {
            s(n, "dev") == dev
                && s(n, "dst") == addr.to_string()
                && s(n, "lladdr").eq_ignore_ascii_case(mac)
        })
    }
}

pub fn rule_args(verb: &str, pref: u32, from: Ipv4Addr, to: Ipv4Addr, table: u32) -> Vec<String> {
    [
        "-4",
        "rule",
        verb,
        "pref",
        &pref.to_string(),
        "iif",
        "lo",
        "from",
        &from.to_string(),
        "to",
        &to.to_string(),
        "lookup",
        &table.to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

#[cfg(test)]
pub(super) fn with_rules(rules: &str) -> Net {
    Net {
        rules: serde_json::from_str(rules).unwrap(),
        routes: Vec::new(),
        addrs: Vec::new(),
        neighs: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_match_exactly() {
        let n = with_rules(
            r#"[{"priority":10,"src":"10.79.91.1","dst":"10.79.91.2","iif":"lo","table":"7991"},
                {"priority":11,"src":"10.79.91.2","srclen":24,"dst":"10.79.91.1","iif":"lo","table":"7992"}]"#,
        );
        let (a, b) = (Ipv4Addr::new(10, 79, 91, 1), Ipv4Addr::new(10, 79, 91, 2));
        assert!(n.has_rule(10, a, b, 7991));
        assert!(!n.has_rule(10, b, a, 7991));
        assert!(!n.has_rule(11, b, a, 7992), "a /24 is not the lab's rule");
    }
}
