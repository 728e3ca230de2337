//! `rocescope analyze`: the analysis engine over a capture file, as a text report or a JSON document.
use std::io::{self, IsTerminal};
use std::ops::Range;
use std::path::PathBuf;
use std::sync::mpsc::{channel, sync_channel};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use parsers::{Frame, parse_frame_deferred};

use crate::analysis::{Config, Engine};
use crate::report::{CONDITIONS, Report};
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
///
/// Two threads: this one reads the capture and parses the frames; the other checks their ICRCs (on a copy
/// of the bytes, which is cheaper than the check) and feeds the engine, in capture order, batch by batch.
pub fn run(opts: &Options) -> Result<Report, String> {
    let mut source = FileSource::open(&opts.file).map_err(|e| e.to_string())?;
    let len = std::fs::metadata(&opts.file).map(|m| m.len()).unwrap_or(0);
    let bar = progress_bar(opts, len);
    let analysis = opts.analysis;
    let engine = std::thread::scope(|s| {
        let (full_tx, full_rx) = sync_channel::<Batch>(4);
        let (empty_tx, empty_rx) = channel::<Batch>();
        let engine = s.spawn(move || {
            let mut engine = Engine::new(analysis);
            for mut batch in full_rx {
                // In place: a frame is a few hundred bytes, not worth moving again.
                for (number, ts, frame, bytes) in batch.frames.iter_mut() {
                    if let Some(r) = &mut frame.roce
                        && let Some(cover) = r.icrc_deferred.take()
                    {
                        r.icrc_status =
                            Some(cover.check(batch.bytes.get(bytes.clone()).unwrap_or_default()));
                    }
                    engine.ingest(*number, *ts, frame);
                }
                batch.clear();
                // The reader may have stopped already: then the batch is simply dropped.
                let _ = empty_tx.send(batch);
            }
            engine
        });
        let mut number = 0u64;
        let mut batch = Batch::default();
        let read = loop {
            match source.next_packet() {
                Ok(Some(p)) => {
                    number += 1;
                    let frame =
                        parse_frame_deferred(p.linktype, p.data, p.orig_len as usize, &opts.parse);
                    let bytes = if frame.roce.is_some_and(|r| r.icrc_deferred.is_some()) {
                        let at = batch.bytes.len();
                        batch.bytes.extend_from_slice(p.data);
                        at..batch.bytes.len()
                    } else {
                        0..0
                    };
                    batch
                        .frames
                        .push((number, p.ts_nanos, frame.detached(), bytes));
                }
                Ok(None) => break Ok(()),
                Err(e) => break Err(e.to_string()),
            }
            if batch.frames.len() == BATCH {
                let next = empty_rx.try_recv().unwrap_or_default();
                if full_tx.send(std::mem::replace(&mut batch, next)).is_err() {
                    break Err("the analysis thread stopped".to_string());
                }
                if let Some(bar) = bar
                    .as_ref()
                    .filter(|_| number.is_multiple_of(64 * BATCH as u64))
                {
                    bar.set_position(source.bytes_read());
                    bar.set_message(format!("{number} frames"));
                }
            }
        };
        let _ = full_tx.send(batch);
        drop(full_tx);
        let engine = engine
            .join()
            .map_err(|_| "the analysis thread panicked".to_string());
        read.and(engine)
    });
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let mut engine = engine?;
    engine.finish();
    Ok(Report::build(&engine, source.name()))
}

/// Frames handed from the reading thread to the engine thread at a time.
const BATCH: usize = 1024;

/// Frames going to the engine thread: (frame number, time, frame without its bytes, where its bytes are
/// in `bytes` when its ICRC is still to check).
#[derive(Default)]
struct Batch {
    frames: Vec<(u64, u64, Frame<'static>, Range<usize>)>,
    bytes: Vec<u8>,
}

impl Batch {
    fn clear(&mut self) {
        self.frames.clear();
        self.bytes.clear();
    }
}

fn progress_bar(opts: &Options, len: u64) -> Option<ProgressBar> {
    (opts.progress && io::stderr().is_terminal() && len > 64 << 20).then(|| {
        let bar = ProgressBar::new(len);
        bar.set_style(
            ProgressStyle::with_template("{bar:40} {bytes}/{total_bytes} {msg} ETA {eta}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar.enable_steady_tick(Duration::from_millis(200));
        bar
    })
}

pub fn write(report: &Report, json: bool) -> Result<(), String> {
    crate::report::write(io::stdout().lock(), report, json)
}
