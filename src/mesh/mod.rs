//! Validating a fabric across many hosts (`gen mesh`): the hosts file, the patterns as rounds of pairs
//! (`plan`), each pair's verdict against the expectations (`verdict`), the smallest set of hosts, NICs, links
//! and switches that explains the failing pairs (`locate`) and the map of the pairs (`map`). Pure: the agents
//! and the controller that run the pairs are the generator's (src/generator/agent.rs, mesh.rs).

pub mod locate;
pub mod map;
pub mod plan;
pub mod verdict;

use std::fmt;

/// One host of the mesh: the name the report uses and where its `gen agent` listens.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Host {
    pub name: String,
    pub address: String,
    pub port: u16,
}

/// Most hosts a hosts file may name (a mesh of every pair of 4096 hosts is 16 M runs already).
pub const MAX_HOSTS: usize = 4096;
const MAX_LINE: usize = 1024;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum HostsError {
    #[error("hosts file line {line}: {why}")]
    Line { line: usize, why: String },
    #[error("hosts file: more than {MAX_HOSTS} hosts")]
    TooMany,
    #[error("hosts file: {0} host(s); a mesh needs at least 2")]
    TooFew(usize),
}

/// The hosts file: one host per line, `NAME ADDRESS[:PORT]` or `ADDRESS[:PORT]` (the name is then the
/// address), `#` to the end of a line a comment; names unique. `default_port`: the agents' TCP port.
pub fn parse_hosts(text: &str, default_port: u16) -> Result<Vec<Host>, HostsError> {
    let mut hosts: Vec<Host> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let bad = |why: String| HostsError::Line { line, why };
        if raw.len() > MAX_LINE {
            return Err(bad(format!("longer than {MAX_LINE} bytes")));
        }
        let words: Vec<&str> = raw
            .split('#')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect();
        let (name, at) = match words[..] {
            [] => continue,
            [at] => (None, at),
            [name, at] => (Some(name), at),
            _ => {
                return Err(bad(format!(
                    "'{}': NAME ADDRESS[:PORT] expected",
                    raw.trim()
                )));
            }
        };
        let (address, port) = split_port(at, default_port).map_err(bad)?;
        let name = name.unwrap_or(&address);
        if hosts.iter().any(|h| h.name == name) {
            return Err(bad(format!("host '{name}' named twice")));
        }
        if hosts.len() == MAX_HOSTS {
            return Err(HostsError::TooMany);
        }
        hosts.push(Host {
            name: name.to_string(),
            address,
            port,
        });
    }
    if hosts.len() < 2 {
        return Err(HostsError::TooFew(hosts.len()));
    }
    Ok(hosts)
}

/// `ADDRESS[:PORT]`, `[IPv6]:PORT` or a bare IPv6 address.
fn split_port(at: &str, default_port: u16) -> Result<(String, u16), String> {
    let port = |p: &str| {
        p.parse::<u16>()
            .ok()
            .filter(|&p| p > 0)
            .ok_or_else(|| format!("'{p}' is not a TCP port (1-65535)"))
    };
    if let Some(rest) = at.strip_prefix('[') {
        let (addr, tail) = rest
            .split_once(']')
            .ok_or_else(|| format!("'{at}': no ']' after the IPv6 address"))?;
        return match tail.strip_prefix(':') {
            Some(p) => Ok((addr.to_string(), port(p)?)),
            None if tail.is_empty() => Ok((addr.to_string(), default_port)),
            None => Err(format!("'{at}': ':PORT' expected after ']'")),
        };
    }
    match at.matches(':').count() {
        0 => Ok((at.to_string(), default_port)),
        1 => {
            let (addr, p) = at.split_once(':').unwrap_or((at, ""));
            Ok((addr.to_string(), port(p)?))
        }
        _ => Ok((at.to_string(), default_port)),
    }
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_by_name_address_and_port() {
        let h = parse_hosts(
            "# the rack\nnode-a 10.0.0.1\n10.0.0.2:7000  # no name\nnode-c [fe80::1]:9\n  \n",
            18516,
        )
        .unwrap();
        let got: Vec<(&str, &str, u16)> = h
            .iter()
            .map(|h| (h.name.as_str(), h.address.as_str(), h.port))
            .collect();
        assert_eq!(
            got,
            [
                ("node-a", "10.0.0.1", 18516),
                ("10.0.0.2", "10.0.0.2", 7000),
                ("node-c", "fe80::1", 9)
            ]
        );
    }

    #[test]
    fn hosts_refused_with_the_line() {
        let e = |t: &str| parse_hosts(t, 1).unwrap_err().to_string();
        assert_eq!(
            e("a 10.0.0.1\na 10.0.0.2\n"),
            "hosts file line 2: host 'a' named twice"
        );
        assert_eq!(
            e("a 10.0.0.1:0\nb x\n"),
            "hosts file line 1: '0' is not a TCP port (1-65535)"
        );
        assert_eq!(
            e("a b c\n"),
            "hosts file line 1: 'a b c': NAME ADDRESS[:PORT] expected"
        );
        assert_eq!(
            e("a 10.0.0.1\n"),
            "hosts file: 1 host(s); a mesh needs at least 2"
        );
        let long = format!("a {}\n", "x".repeat(2000));
        assert_eq!(e(&long), "hosts file line 1: longer than 1024 bytes");
    }
}
