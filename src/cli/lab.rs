//! The flags of `rocescope lab`, and their conversion to the lab's configuration (src/lab/layout.rs, whose
//! defaults they show).

use std::net::Ipv4Addr;

use clap::{Args, Subcommand};

use super::values::ValueError;
use crate::lab::{Command, Config};

#[derive(Subcommand)]
pub enum LabCommand {
    /// Build the loopback: veth pair NAME0/NAME1, rxe_NAME0/rxe_NAME1 on them, routes that force traffic between
    /// them over the veth (needs root and the rdma_rxe module).
    Up(UpArgs),
    /// Remove exactly what `lab up` created and restore the values it changed, in reverse order.
    Down,
    /// Check what `lab up` recorded against the system; the rxe devices with port state and GIDs. Exit 0 when
    /// everything is in place, 1 otherwise.
    Status,
}

#[derive(Args, Debug, Clone)]
pub struct UpArgs {
    /// Name prefix: veths NAME0 and NAME1, rxe devices rxe_NAME0 and rxe_NAME1.
    #[arg(long, default_value = Config::DEFAULT_NAME, value_parser = parse_name)]
    pub name: String,
    /// Address of NAME0 (a /32).
    #[arg(long, default_value_t = Config::DEFAULT_ADDR_A)]
    pub addr_a: Ipv4Addr,
    /// Address of NAME1 (a /32).
    #[arg(long, default_value_t = Config::DEFAULT_ADDR_B)]
    pub addr_b: Ipv4Addr,
    /// Routing tables TABLE (NAME0 -> NAME1) and TABLE+1 (back); both must be empty.
    #[arg(long, default_value_t = Config::DEFAULT_TABLE, value_parser = clap::value_parser!(u32).range(1..=0xFFFF_FF00))]
    pub table: u32,
    /// Rule preferences PREF and PREF+1; a `local` table rule still at pref 0 moves to PREF+2.
    #[arg(long, default_value_t = Config::DEFAULT_PREF, value_parser = clap::value_parser!(u32).range(1..=32000))]
    pub pref: u32,
}

/// 1 to 14 characters that can start an interface name (NAME0 and NAME1 must fit in 15).
fn parse_name(s: &str) -> Result<String, ValueError> {
    let ok = (1..=14).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok {
        Ok(s.to_string())
    } else {
        Err(ValueError::Name(s.to_string()))
    }
}

impl From<LabCommand> for Command {
    fn from(c: LabCommand) -> Command {
        match c {
            LabCommand::Up(a) => Command::Up(Config {
                name: a.name,
                addr_a: a.addr_a,
                addr_b: a.addr_b,
                table: a.table,
                pref: a.pref,
            }),
            LabCommand::Down => Command::Down,
            LabCommand::Status => Command::Status,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse_name;

    #[test]
    fn names() {
        assert!(parse_name("abcdefghijklmn").is_ok());
        assert!(parse_name("abcdefghijklmno").is_err());
        assert!(parse_name("a/b").is_err() && parse_name("").is_err());
    }
}
