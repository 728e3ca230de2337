//! `rocescope dissect`: each file's frames in turn (a `==> FILE <==` line before each when there are
//! several, in the line and tree views), then one line of totals on standard error (line view).
use std::process::ExitCode;

use rocescope::dissect::{self, Options, Style};

use super::fail;

pub fn run(opts: &Options) -> ExitCode {
    if let Err(e) = dissect::write_header(opts) {
        return fail(e);
    }
    let several = opts.files.len() > 1;
    for file in &opts.files {
        let views = matches!(opts.style, Style::Line | Style::Tree);
        if several && views {
            println!("==> {} <==", file.display());
        }
        match dissect::run(opts, file) {
            Ok(t) if opts.style == Style::Line => {
                let hint = if t.shown < t.frames && !opts.selection.all && opts.display.is_none() {
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
            Ok(_) => {}
            Err(e) => return fail(e),
        }
    }
    ExitCode::SUCCESS
}
