//! `rocescope analyze`: the analysis engine over a capture file, as a text report or a JSON document.
use std::fs::File;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, sync_channel};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use memmap2::Mmap;
use parsers::{Frame, parse_frame};

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
///
/// A regular file is memory-mapped and analysed by two threads: this one walks the records and parses the
/// frames, the other checks their ICRCs and feeds the engine, in capture order (frames go over in batches).
/// Standard input and other streams are read and analysed on one thread.
pub fn run(opts: &Options) -> Result<Report, String> {
    let is_file =
        opts.file != Path::new("-") && std::fs::metadata(&opts.file).is_ok_and(|m| m.is_file());
    let name = opts.file.display().to_string();
    let engine = if is_file {
        run_mapped(opts, &name)?
    } else {
        run_streaming(opts)?
    };
    Ok(Report::build(&engine, &name))
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

fn run_streaming(opts: &Options) -> Result<Engine, String> {
    let mut source = FileSource::open(&opts.file).map_err(|e| e.to_string())?;
    let mut engine = Engine::new(opts.analysis);
    let mut number = 0u64;
    while let Some(p) = source.next_packet().map_err(|e| e.to_string())? {
        number += 1;
        let frame = parse_frame(p.linktype, p.data, p.orig_len as usize, &opts.parse);
        engine.ingest(number, p.ts_nanos, &frame);
    }
    engine.finish();
    Ok(engine)
}

/// Frames handed from the parsing thread to the engine thread at a time.
const BATCH: usize = 2048;

/// Frames (number, time, frame) and where in the file the last one ends.
struct Batch<'m> {
    frames: Vec<(u64, u64, Frame<'m>)>,
    end: usize,
}

impl Batch<'_> {
    fn new() -> Self {
        Batch {
            frames: Vec::with_capacity(BATCH),
            end: 0,
        }
    }
}

/// Maps in the pages up to `WINDOW` bytes ahead of `at` in one call: faulting them in one by one as the
/// parser first touches each packet costs more than parsing it.
fn prefetch(map: &Mmap, populated: &mut usize, at: usize) {
    const WINDOW: usize = 8 << 20;
    if at + WINDOW / 2 > *populated && *populated < map.len() {
        let len = WINDOW.min(map.len() - *populated);
        #[cfg(target_os = "linux")]
        let _ = map.advise_range(memmap2::Advice::PopulateRead, *populated, len);
        *populated += len;
    }
}

/// Gives back the pages of the mapped capture below `upto`, which no frame refers to any more, so memory
/// stays bounded by the batches in flight rather than growing with the file.
fn release(map: &Mmap, released: &mut usize, upto: usize) {
    const PAGE: usize = 4096;
    let upto = upto / PAGE * PAGE;
    if upto > *released {
        // SAFETY: the map is shared and read-only; the pages are dropped from this process only and would
        // be read again from the file if touched. No frame points below `upto`: every batch holding such
        // frames came back empty from the analysis thread.
        #[cfg(unix)]
        let _ = unsafe {
            map.unchecked_advise_range(
                memmap2::UncheckedAdvice::DontNeed,
                *released,
                upto - *released,
            )
        };
        *released = upto;
    }
}

fn run_mapped(opts: &Options, name: &str) -> Result<Engine, String> {
    let file = File::open(&opts.file).map_err(|e| format!("cannot open '{name}': {e}"))?;
    // SAFETY: the map is only read. If another program truncates the file while it is being read, the
    // process gets SIGBUS; that is the documented trade of memory-mapped reading (ripgrep makes it too).
    let map = unsafe { Mmap::map(&file) }.map_err(|e| format!("cannot read '{name}': {e}"))?;
    #[cfg(unix)]
    let _ = map.advise(memmap2::Advice::Sequential);
    let mut source = FileSource::from_slice(name.to_string(), &map).map_err(|e| e.to_string())?;
    let bar = progress_bar(opts, map.len() as u64);
    let parse = parsers::Config {
        defer_icrc: true,
        ..opts.parse
    };
    let analysis = opts.analysis;
    let result = std::thread::scope(|s| {
        let (full_tx, full_rx) = sync_channel::<Batch>(4);
        let (empty_tx, empty_rx) = channel::<Batch>();
        let engine = s.spawn(move || {
            let mut engine = Engine::new(analysis);
            for mut batch in full_rx {
                // In place: a frame is a few hundred bytes, not worth moving again.
                for (number, ts, frame) in batch.frames.iter_mut() {
                    frame.check_icrc();
                    engine.ingest(*number, *ts, frame);
                }
                batch.frames.clear();
                // The parser may have stopped already: then the batch is simply dropped.
                let _ = empty_tx.send(batch);
            }
            engine
        });
        let mut number = 0u64;
        let mut batch = Batch::new();
        let mut released = 0;
        let mut populated = 0;
        prefetch(&map, &mut populated, 0);
        let read = loop {
            match source.next_packet() {
                Ok(Some(p)) => {
                    number += 1;
                    let frame = parse_frame(p.linktype, p.data, p.orig_len as usize, &parse);
                    batch.frames.push((number, p.ts_nanos, frame));
                }
                Ok(None) => break Ok(()),
                Err(e) => break Err(e.to_string()),
            }
            if batch.frames.len() == BATCH {
                batch.end = source.bytes_read() as usize;
                prefetch(&map, &mut populated, batch.end);
                let next = match empty_rx.try_recv() {
                    Ok(done) => {
                        release(&map, &mut released, done.end);
                        done
                    }
                    Err(_) => Batch::new(),
                };
                if full_tx.send(std::mem::replace(&mut batch, next)).is_err() {
                    break Err("the analysis thread stopped".to_string());
                }
                if let Some(bar) = &bar
                    && number.is_multiple_of(64 * BATCH as u64)
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
    let mut engine = result?;
    engine.finish();
    Ok(engine)
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
