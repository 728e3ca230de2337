//! The `rocescope` binary: parse the command line, turn it into configuration, dispatch.
// Without live capture the capture command's options are parsed, not used.
#![cfg_attr(not(all(feature = "live", unix)), allow(dead_code))]
use std::process::ExitCode;

use clap::Parser;

mod cli;
mod commands;
#[cfg(all(feature = "rdma", target_os = "linux"))]
mod generator;
#[cfg(all(feature = "rdma", target_os = "linux"))]
mod lab;

use cli::{Cli, Command};

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Dissect(a) => commands::dissect::run(&a.config()),
        Command::Analyze(a) => match a.config() {
            Ok(c) => commands::analyze::run(&c),
            Err(e) => commands::fail(e),
        },
        Command::Capture(a) => commands::capture::run(&a.config()),
        Command::Tui(a) => match a.config() {
            Ok(c) => commands::tui::run(&c),
            Err(e) => commands::fail(e),
        },
        Command::Doctor(a) => commands::doctor::run(&a.config()),
        Command::Counters(a) => commands::counters::run(&a.config()),
        #[cfg(all(feature = "rdma", target_os = "linux"))]
        Command::Gen(cmd) => generator::main(cmd.into()),
        #[cfg(all(feature = "rdma", target_os = "linux"))]
        Command::Lab(cmd) => lab::main(cmd.into()),
    }
}
