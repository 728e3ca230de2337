//! `rocescope lab up | down | status`: the two-NIC Soft-RoCE loopback of the lab note, built on this host from a
//! veth pair (/32 addresses, per-direction policy routes ahead of the `local` table, static neighbours, rxe on
//! each end), so that traffic between the two rxe devices crosses a wire one can capture on. `up` records what
//! it creates and every value it changes in a state file; `down` undoes exactly that, in reverse order.
//!
//! The network is set up by running iproute2's `ip` and `rdma`, the commands an engineer would type (the
//! netlink details stay iproute2's); sysctls are written through /proc/sys.
//!
//! The modules: layout (what is asked for, and the names and numbers it makes), state (what `up` did, in its
//! file), system and ip (reading and changing the host), build and undo (the steps of `up` and `down`, item
//! by item), commands (up, down, status).

use std::io::Write;
use std::process::ExitCode;

/// println! that ignores a closed standard output (`lab status | head -1`) instead of panicking.
macro_rules! say {
    ($($t:tt)*) => {{
        let _ = writeln!(std::io::stdout(), $($t)*);
    }};
}

mod build;
mod commands;
mod ip;
mod layout;
mod state;
mod system;
mod undo;

pub use layout::Config;

pub enum Command {
    Up(Config),
    Down,
    Status,
}

pub fn main(cmd: Command) -> ExitCode {
    let r = match cmd {
        Command::Up(c) => commands::up(&c),
        Command::Down => commands::down(),
        Command::Status => commands::status(),
    };
    match r {
        Ok(code) => code,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "rocescope: lab: {e:#}");
            ExitCode::from(1)
        }
    }
}
