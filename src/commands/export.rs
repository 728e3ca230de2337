//! `rocescope export --parquet DIR --trace FILE.json FILE...`: the tables, the timeline, and a line on
//! standard error for each saying what was written.
use std::process::ExitCode;

use rocescope::export::{self, trace};

use super::fail;

/// What to write: either or both.
#[derive(Debug, Clone)]
pub struct Config {
    pub tables: Option<export::Config>,
    pub trace: Option<trace::Config>,
}

pub fn run(cfg: &Config) -> ExitCode {
    if let Some(tables) = &cfg.tables {
        match export::export(tables) {
            Ok(s) => {
                for why in &s.truncated {
                    eprintln!("rocescope: warning: {why}: exported up to the cut");
                }
                eprintln!(
                    "{} frames of {} captures: {} packets, {} flows, {} events written to {}",
                    s.frames,
                    tables.files.len(),
                    s.packets,
                    s.flows,
                    s.events,
                    tables.dir.display()
                );
            }
            Err(e) => return fail(e),
        }
    }
    if let Some(t) = &cfg.trace {
        match trace::write(t) {
            Ok(s) => {
                for why in &s.truncated {
                    eprintln!("rocescope: warning: {why}: traced up to the cut");
                }
                eprintln!(
                    "{} captures: {} messages, {} go-back-N episodes, {} pauses, {} events traced to {}",
                    t.files.len(),
                    s.messages,
                    s.episodes,
                    s.pauses,
                    s.events,
                    t.path.display()
                );
            }
            Err(e) => return fail(e),
        }
    }
    ExitCode::SUCCESS
}
