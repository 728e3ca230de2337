//! `rocescope analyze`: the pipeline over a capture file, as a text report or a JSON document, optionally
//! with SVG plots.
use std::io::{self, IsTerminal};
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{anyhow, bail};
use indicatif::{ProgressBar, ProgressStyle};

use rocescope::capture::annotate;
use rocescope::pipeline::{self, ReadSide};
use rocescope::report::{self, Condition, Listing, Output, Report};
use rocescope::source::{self, FileSource, MergeSource, PacketSource};
use rocescope::tui::{data, plot};

use super::fail;

#[derive(Debug, Clone)]
pub struct Config {
    /// One capture, or the pieces of one capture point (files, directories) merged by time.
    pub files: Vec<PathBuf>,
    /// `--points`: captures of the same traffic at points of its path, instead of `files`.
    pub points: Vec<PathBuf>,
    pub output: Output,
    pub pipeline: pipeline::Config,
    /// Conditions that make the exit status 3.
    pub fail_on: Vec<Condition>,
    /// A progress bar on a terminal, for large files.
    pub progress: bool,
    /// Also write SVG plots into this directory.
    pub plot: Option<PathBuf>,
    /// Also write the capture here with the events as frame comments (pcapng).
    pub annotate: Option<PathBuf>,
    /// Which flows the report lists in full.
    pub listing: Listing,
}

pub fn run(cfg: &Config) -> ExitCode {
    if !cfg.points.is_empty() {
        return super::points::run(cfg);
    }
    if let Some(why) = annotate_refused(cfg) {
        return fail(anyhow!(why));
    }
    // --plot: the pass that analyses also records how each frame was counted; the plots then read the
    // plotted flows' frames once more.
    let analysed = match (&cfg.plot, single(&cfg.files)) {
        (Some(_), None) => Err(anyhow!("--plot reads one capture file")),
        (Some(_), Some(file)) if file.as_os_str() == "-" => Err(anyhow!(
            "--plot reads the capture twice (the plotted flows' frames once more), so not from standard \
             input: save it to a file and give that"
        )),
        (Some(_), Some(file)) => data::analyze(file, &cfg.pipeline, |_, _| true)
            .map(|(r, i)| (r, Some(i)))
            .map_err(anyhow::Error::from),
        (None, _) => analyze(cfg, &cfg.files).map(|r| (r, None)),
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
            Err(e) => return fail(anyhow::Error::from(e).context("cannot write the pictures")),
        }
    }
    if let (Some(out), Some(file)) = (&cfg.annotate, single(&cfg.files)) {
        let comments = annotate::Comments::of(&report);
        match annotate::write(file, &comments, out) {
            Ok(a) => {
                if let Some(why) = &a.cut {
                    eprintln!("rocescope: warning: {why}: the annotated copy ends there");
                }
                eprintln!(
                    "wrote {} frames to {}, {} with comments",
                    a.frames,
                    out.display(),
                    a.commented
                )
            }
            Err(e) => return fail(e),
        }
        if report.events_dropped > 0 {
            eprintln!(
                "rocescope: warning: {} events beyond the report's list are not on their frames",
                report.events_dropped
            );
        }
    }
    ExitCode::from(report.exit_status())
}

/// Why `--annotate` cannot be done for these inputs: it reads the capture a second time, one file.
fn annotate_refused(cfg: &Config) -> Option<&'static str> {
    cfg.annotate.as_ref()?;
    match single(&cfg.files) {
        None => Some("--annotate writes one capture file again: give one file"),
        Some(f) if f.as_os_str() == "-" => Some(
            "--annotate reads the capture twice, so not from standard input: save it to a file and give that",
        ),
        Some(_) => None,
    }
}

/// The one file `files` names, when it names one (not a directory).
fn single(files: &[PathBuf]) -> Option<&PathBuf> {
    match files {
        [file] if !file.is_dir() => Some(file),
        _ => None,
    }
}

/// The report of `paths` (files and directories: the pieces of one capture point), with a progress bar on
/// a terminal for inputs over 64 MiB. One file is read in place; several are merged by time.
pub(super) fn analyze(cfg: &Config, paths: &[PathBuf]) -> anyhow::Result<Report> {
    if let Some(file) = single(paths) {
        return report_of(cfg, file);
    }
    let files = pieces(paths)?;
    let name = paths
        .iter()
        .map(|f| f.display().to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let mut source = MergeSource::open(&files)?;
    for e in &source.skipped {
        eprintln!(
            "rocescope: warning: {e}: left out (it holds no whole packet); the other files are analysed"
        );
    }
    analyze_source(cfg, &mut source, &files, &name)
}

/// The capture files of `paths`, directories expanded.
pub(super) fn pieces(paths: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    if paths.iter().any(|f| f.as_os_str() == "-") {
        bail!("standard input (-) is read alone, not with other files");
    }
    let files = source::expand(paths)?;
    if files.is_empty() {
        bail!("no capture file in the directories given");
    }
    Ok(files)
}

/// The report of one capture file, read in place.
pub(super) fn report_of(cfg: &Config, file: &PathBuf) -> anyhow::Result<Report> {
    let mut source = FileSource::open(file)?;
    let name = source.name().to_string();
    analyze_source(cfg, &mut source, std::slice::from_ref(file), &name)
}

fn analyze_source<S: PacketSource>(
    cfg: &Config,
    source: &mut S,
    files: &[PathBuf],
    name: &str,
) -> anyhow::Result<Report> {
    let len = files
        .iter()
        .map(|f| std::fs::metadata(f).map(|m| m.len()).unwrap_or(0))
        .sum();
    let mut bar = Progress(progress_bar(cfg, len));
    let run = pipeline::run(source, &cfg.pipeline, &mut bar, ())?;
    if let Some(bar) = bar.0 {
        bar.finish_and_clear();
    }
    let mut report = Report::build_listing(&run.engine, name, cfg.listing);
    if let Some(e) = run.error {
        report.cut_short(e.to_string());
    }
    Ok(report)
}

/// The reading side of `analyze`: the progress bar, if any.
struct Progress(Option<ProgressBar>);

impl<S> ReadSide<S> for Progress {
    fn handed_over(
        &mut self,
        _source: &mut S,
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
