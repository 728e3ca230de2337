//! What `lab up` is asked for, and the layout it makes of it: the names of the veths and the rxe devices, the
//! addresses, the routing tables and the rule preferences (recorded in the state file).

use std::net::Ipv4Addr;

use serde::{Deserialize, Serialize};

/// What `lab up` is asked to build (src/cli/lab.rs makes it from the command line, with these defaults).
pub struct Config {
    /// Name prefix: veths NAME0 and NAME1, rxe devices rxe_NAME0 and rxe_NAME1.
    pub name: String,
    pub addr_a: Ipv4Addr,
    pub addr_b: Ipv4Addr,
    /// Routing tables `table` (NAME0 -> NAME1) and `table + 1` (back).
    pub table: u32,
    /// Rule preferences `pref` and `pref + 1`.
    pub pref: u32,
}

impl Config {
    pub const DEFAULT_NAME: &str = "rlab";
    pub const DEFAULT_ADDR_A: Ipv4Addr = Ipv4Addr::new(10, 79, 91, 1);
    pub const DEFAULT_ADDR_B: Ipv4Addr = Ipv4Addr::new(10, 79, 91, 2);
    pub const DEFAULT_TABLE: u32 = 7991;
    pub const DEFAULT_PREF: u32 = 10;
}

/// What `up` builds, as recorded.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Layout {
    pub veth_a: String,
    pub veth_b: String,
    pub rxe_a: String,
    pub rxe_b: String,
    pub addr_a: Ipv4Addr,
    pub addr_b: Ipv4Addr,
    pub table_a: u32,
    pub table_b: u32,
    pub pref_a: u32,
    pub pref_b: u32,
    /// Where the `local` rule goes when it is still at pref 0.
    pub pref_local: u32,
}

impl Layout {
    pub fn of(a: &Config) -> anyhow::Result<Layout> {
        for (opt, ip) in [("--addr-a", a.addr_a), ("--addr-b", a.addr_b)] {
            if ip.is_unspecified() || ip.is_loopback() || ip.is_multicast() || ip.is_broadcast() {
                anyhow::bail!("{opt} {ip} is not a usable unicast address");
            }
        }
        if a.addr_a == a.addr_b {
            anyhow::bail!(
                "--addr-a and --addr-b are both {}: the two ends need two addresses",
                a.addr_a
            );
        }
        let (ta, tb) = (a.table, a.table + 1);
        if [ta, tb].iter().any(|t| (253..=255).contains(t)) {
            anyhow::bail!(
                "--table {ta}: tables {ta} and {tb} would include a kernel table (253 default, 254 main, 255 local)"
            );
        }
        Ok(Layout {
            veth_a: format!("{}0", a.name),
            veth_b: format!("{}1", a.name),
            rxe_a: format!("rxe_{}0", a.name),
            rxe_b: format!("rxe_{}1", a.name),
            addr_a: a.addr_a,
            addr_b: a.addr_b,
            table_a: ta,
            table_b: tb,
            pref_a: a.pref,
            pref_b: a.pref + 1,
            pref_local: a.pref + 2,
        })
    }

    /// The `gen loopback` that uses the lab, with the fabric check.
    pub fn gen_command(&self) -> String {
        format!(
            "rocescope gen loopback -d {} --peer-device {} --op write -s 4096 -n 1000 --capture {}",
            self.rxe_a, self.rxe_b, self.veth_a
        )
    }
}

#[cfg(test)]
pub(super) fn example() -> Layout {
    Layout::of(&Config {
        name: "rlab".into(),
        addr_a: Ipv4Addr::new(10, 79, 91, 1),
        addr_b: Ipv4Addr::new(10, 79, 91, 2),
        table: 7991,
        pref: 10,
    })
    .unwrap()
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_and_checks() {
        let c = super::example();
        assert_eq!(
            (c.veth_a.as_str(), c.rxe_b.as_str()),
            ("rlab0", "rxe_rlab1")
        );
        assert_eq!((c.pref_b, c.pref_local, c.table_b), (11, 12, 7992));
    }
}
