//! `rocescope analyze`: the analysis engine over a capture file, as a text report or a JSON document.
use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::PathBuf;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use parsers::parse_frame;

use crate::analysis::{Config, Engine};
use crate::report::{CONDITIONS, Report, text};
use crate::source::FileSource;

pub struct Options {
    pub file: PathBuf,
    pub json: bool,
    pub parse: parsers::Config,
    pub analysis: Config,
    /// Conditions that make the exit status 3.
    pub fail_on: Vec<&'static str>,
    pub progress: bool,
}

/// Parses a `--fail-on` list: names from [`CONDITIONS`], separated by commas.
pub fn parse_fail_on(s: &str) -> Result<Vec<&'static str>, String> {
    s.split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(|n| {
            CONDITIONS.iter().copied().find(|c| *c == n).ok_or_else(|| {
                format!(
                    "unknown condition '{n}' (choose from {})",
                    CONDITIONS.join(",")
                )
            })
        })
        .collect()
}

/// Parses a link speed: `100G`, `25g`, `400G`, `10000M`, or bits per second.
pub fn parse_speed(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (digits, scale) = match t.char_indices().last() {
        Some((i, 'G' | 'g')) => (&t[..i], 1_000_000_000),
        Some((i, 'M' | 'm')) => (&t[..i], 1_000_000),
        _ => (t, 1),
    };
    match digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
    {
        Some(bps) if bps > 0 => Ok(bps),
        _ => Err(format!("'{s}' is not a link speed (try 25G, 100G, 400G)")),
    }
}

/// Runs the analysis; returns the report (the caller decides the exit status).
pub fn run(opts: &Options) -> Result<Report, String> {
    let mut source = FileSource::open(&opts.file).map_err(|e| e.to_string())?;
    let file_len = std::fs::metadata(&opts.file).map(|m| m.len()).unwrap_or(0);
    let bar = (opts.progress && io::stderr().is_terminal() && file_len > 64 << 20).then(|| {
        let bar = ProgressBar::new(file_len);
        bar.set_style(
            ProgressStyle::with_template("{bar:40} {bytes}/{total_bytes} {msg} ETA {eta}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar.enable_steady_tick(Duration::from_millis(200));
        bar
    });
    let mut engine = Engine::new(opts.analysis);
    let mut number = 0u64;
    let result = loop {
        match source.next_packet() {
            Ok(Some(p)) => {
                number += 1;
                let frame = parse_frame(p.linktype, p.data, p.orig_len as usize, &opts.parse);
                engine.ingest(number, p.ts_nanos, &frame);
            }
            Ok(None) => break Ok(()),
            Err(e) => break Err(e.to_string()),
        }
        if number.is_multiple_of(65_536)
            && let Some(bar) = &bar
        {
            bar.set_position(source.bytes_read());
            bar.set_message(format!("{number} frames"));
        }
    };
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    result?;
    engine.finish();
    Ok(Report::build(&engine, source.name()))
}

pub fn write(report: &Report, json: bool) -> Result<(), String> {
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let written = if json {
        serde_json::to_writer_pretty(&mut out, report)
            .map_err(io::Error::other)
            .and_then(|()| writeln!(out))
    } else {
        text::write(&mut out, report)
    };
    match written.and_then(|()| out.flush()) {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => {
            Err(format!("cannot write the report: {e}"))
        }
        _ => Ok(()),
    }
}
