//! `rocescope export --parquet DIR FILE...`: the tables, and one line on standard error saying what was
//! written.
use std::process::ExitCode;

use rocescope::export::{self, Config};

use super::fail;

pub fn run(cfg: &Config) -> ExitCode {
    match export::export(cfg) {
        Ok(s) => {
            for why in &s.truncated {
                eprintln!("rocescope: warning: {why}: exported up to the cut");
            }
            eprintln!(
                "{} frames of {} captures: {} packets, {} flows, {} events written to {}",
                s.frames,
                cfg.files.len(),
                s.packets,
                s.flows,
                s.events,
                cfg.dir.display()
            );
            ExitCode::SUCCESS
        }
        Err(e) => fail(e),
    }
}
