//! `rocescope dissect`: the frames, then one line of totals on standard error (line view).
use std::process::ExitCode;

use rocescope::dissect::{self, Options, Style};

use super::fail;

pub fn run(opts: &Options) -> ExitCode {
    match dissect::run(opts) {
        Ok(t) => {
            if opts.style == Style::Line {
                let hint = if t.shown < t.frames && !opts.filter.all {
                    "; --all shows the others"
                } else {
                    ""
                };
                eprintln!(
                    "{} frames ({} RoCE, {} other), {} shown{hint}",
                    t.frames,
                    t.roce,
                    t.frames - t.roce,
                    t.shown
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => fail(e),
    }
}
