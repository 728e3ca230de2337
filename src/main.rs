//! The `rocescope` binary: parse the command line, turn it into configuration, dispatch.
use std::process::ExitCode;

use clap::Parser;

mod cli;
mod commands;
#[path = "gen/mod.rs"]
mod generator;
mod labnet;

use cli::{Cli, Command};

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Dissect(a) => commands::dissect::run(&a.config()),
        Command::Analyze(a) => commands::analyze::run(&a.config()),
        Command::Capture(a) => commands::capture::run(&a.config()),
        Command::Tui(a) => match a.config() {
            Ok(c) => commands::tui::run(&c),
            Err(e) => commands::fail(e),
        },
        Command::Gen(cmd) => generator::main(cmd),
        Command::Lab(cmd) => labnet::main(cmd),
    }
}
