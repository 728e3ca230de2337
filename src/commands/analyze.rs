//! `rocescope analyze`: the pipeline over a capture file, as a text report or a JSON document, optionally
//! with SVG plots.
use std::io::{self, IsTerminal};
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

use rocescope::pipeline::{self, ReadSide};
use rocescope::report::{self, Condition, Listing, Output, Report};
use rocescope::source::FileSource;
use rocescope::tui::{data, plot};

use super::fail;

#[derive(Debug, Clone)]
pub struct Config {
    pub file: PathBuf,
    pub output: Output,
    pub pipeline: pipeline::Config,
    /// Conditions that make the exit status 3.
    pub fail_on: Vec<Condition>,
    /// A progress bar on a terminal, for large files.
    pub progress: bool,
    /// Also write SVG plots into this directory.
    pub plot: Option<PathBuf>,
    /// Which flows the report lists in full.
    pub listing: Listing,
}

pub fn run(cfg: &Config) -> ExitCode {
    // --plot: the pass that analyses also records how each frame was counted; the plots then read the
    // plotted flows' frames once more.
    let analysed = match &cfg.plot {
        Some(_) => data::analyze(&cfg.file, &cfg.pipeline, |_, _| true)
            .map(|(r, i)| (r, Some(i)))
            .map_err(|e| e.to_string()),
        None => analyze(cfg).map(|r| (r, None)),
    };
    let (mut report, index) = match analysed {
        Ok(r) => r,
        Err(e) => return fail(e),
    };
    report.judge(&cfg.fail_on);
    if let Some(why) = &report.capture.truncation {
        eprintln!("rocescope: warning: {why}: analysed up to the cut");
    }
    if let Err(e) = report::write(io::stdout().lock(), &report, cfg.output) {
        return fail(e);
    }
    if let (Some(dir), Some(index)) = (&cfg.plot, index) {
        match plot::write(&index, &report, dir) {
            Ok(files) => eprintln!("wrote {} pictures to {}", files.len(), dir.display()),
            Err(e) => return fail(format!("cannot write the pictures: {e}")),
        }
    }
    ExitCode::from(report.exit_status())
}

/// The report of the file, with a progress bar on a terminal for files over 64 MiB.
fn analyze(cfg: &Config) -> Result<Report, String> {
    let mut source = FileSource::open(&cfg.file).map_err(|e| e.to_string())?;
    let len = std::fs::metadata(&cfg.file).map(|m| m.len()).unwrap_or(0);
    let mut bar = Progress(progress_bar(cfg, len));
    let run = pipeline::run(&mut source, &cfg.pipeline, &mut bar, ())?;
    if let Some(bar) = bar.0 {
        bar.finish_and_clear();
    }
    let mut report = Report::build_listing(&run.engine, source.name(), cfg.listing);
    if let Some(e) = run.error {
        report.cut_short(e.to_string());
    }
    Ok(report)
}

/// The reading side of `analyze`: the progress bar, if any.
struct Progress(Option<ProgressBar>);

impl ReadSide<FileSource> for Progress {
    fn handed_over(
        &mut self,
        _source: &mut FileSource,
        frames: u64,
        offset: u64,
        _idle: bool,
    ) -> ControlFlow<()> {
        if let Some(bar) = self
            .0
            .as_ref()
            .filter(|_| frames.is_multiple_of(64 * pipeline::BATCH as u64))
        {
            bar.set_position(offset);
            bar.set_message(format!("{frames} frames"));
        }
        ControlFlow::Continue(())
    }
}

fn progress_bar(cfg: &Config, len: u64) -> Option<ProgressBar> {
    (cfg.progress && io::stderr().is_terminal() && len > 64 << 20).then(|| {
        let bar = ProgressBar::new(len);
        bar.set_style(
            ProgressStyle::with_template("{bar:40} {bytes}/{total_bytes} {msg} ETA {eta}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar.enable_steady_tick(Duration::from_millis(200));
        bar
    })
}
