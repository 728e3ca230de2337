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

use cli::{Cli, Command, ConfigError};

fn main() -> ExitCode {
    let run = |c: Result<ExitCode, ConfigError>| match c {
        Ok(status) => status,
        Err(ConfigError::Usage(e)) => commands::usage(e),
        Err(ConfigError::Runtime(e)) => commands::fail(e),
    };
    match Cli::parse().command {
        Command::Dissect(a) => run(a.config().map(|c| commands::dissect::run(&c))),
        Command::Analyze(a) => run(a.config().map(|c| commands::analyze::run(&c))),
        #[cfg(feature = "export")]
        Command::Export(a) => commands::export::run(&a.config()),
        Command::Capture(a) => run(a.config().map(|c| commands::capture::run(&c))),
        Command::Monitor(a) => run(a.config().map(|c| commands::capture::run(&c))),
        #[cfg(all(feature = "live", unix))]
        Command::Extcap(a) => run(a.config().map(commands::extcap::run)),
        Command::Tui(a) => run(a.config().map(|c| commands::tui::run(&c))),
        Command::Doctor(a) => commands::doctor::run(&a.config()),
        Command::Conform(a) => run(a.config().map(|c| commands::conform::run(&c))),
        Command::Counters(a) => commands::counters::run(&a.config()),
        #[cfg(target_os = "linux")]
        Command::Inject(a) => commands::inject::run(&a.config()),
        #[cfg(all(feature = "rdma", target_os = "linux"))]
        Command::Gen(cmd) => generator::main(cmd.into()),
        #[cfg(all(feature = "rdma", target_os = "linux"))]
        Command::Lab(cmd) => lab::main(cmd.into()),
    }
}
