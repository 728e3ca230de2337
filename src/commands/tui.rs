//! `rocescope tui`: a capture file, or a live capture.
use std::process::ExitCode;

use rocescope::capture;
use rocescope::tui::{self, FileConfig};

use super::fail;

#[derive(Debug, Clone)]
pub enum Config {
    File(FileConfig),
    Live(capture::Config),
}

pub fn run(cfg: &Config) -> ExitCode {
    let result = match cfg {
        Config::File(f) => tui::run(f),
        Config::Live(l) => tui::run_live(l),
    };
    match result {
        Ok(status) => ExitCode::from(status),
        Err(e) => fail(e),
    }
}
