//! The subcommands: each takes its typed configuration (built by `cli`) and returns the exit status;
//! errors are one line on standard error (an `anyhow::Error` with what was being done, and its causes).
pub mod analyze;
pub mod capture;
pub mod conform;
pub mod counters;
pub mod dissect;
pub mod doctor;
#[cfg(feature = "export")]
pub mod export;
#[cfg(all(feature = "live", unix))]
pub mod extcap;
#[cfg(target_os = "linux")]
pub mod inject;
pub mod points;
pub mod tui;

use std::process::ExitCode;

/// Status 2 with a usage error on one line (clap's status for the errors it finds).
pub fn usage(e: anyhow::Error) -> ExitCode {
    eprintln!("rocescope: {e:#}");
    ExitCode::from(2)
}

/// Status 1 with the error on one line, what was being done and each cause after it (what every subcommand
/// does with a runtime error).
pub fn fail(e: impl Into<anyhow::Error>) -> ExitCode {
    eprintln!("rocescope: {:#}", e.into());
    ExitCode::from(1)
}
