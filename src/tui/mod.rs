//! `rocescope tui`: a terminal UI over a capture, in the Elm architecture.
//!
//! - [`model`]: the [`Model`](model::Model) (view state plus the latest analysis snapshot, a
//!   [`Report`](crate::report::Report)), the [`Msg`](model::Msg)s (keys, ticks, snapshots, data read for a
//!   view) and [`update`](model::update), which returns the reads ([`Cmd`](model::Cmd)) it needs and never
//!   draws or reads a file.
//! - [`view`]: draws a model, changes nothing.
//! - [`keys`]: the key bindings as data (keys, where they apply, their action, their footer and help text),
//!   for the model's key handling and the view's footer and help.
//! - [`data`]: the capture file: one pass that analyses and indexes it, random access to any frame, a
//!   flow's PSN points.
//! - [`plot`]: the same charts as SVG files (for `analyze --plot DIR`).
//! - this module: the runtime. It owns the terminal (restored on quit, error, panic and SIGTERM), turns
//!   terminal events and worker results into messages and runs the commands.
//!
//! Snapshots come over a channel as `Msg::Snapshot`: a file sends one when its pass ends; a live capture
//! (`rocescope tui -i IFACE`, [`run_live`]) runs its capture loop on a thread of its own
//! ([`crate::capture::live`]) and sends one every 250 ms through the same channel, with libpcap's counters;
//! its packet list reads the ring of recent frames the capture thread fills.
pub mod data;
pub mod keys;
#[cfg(all(feature = "live", unix))]
mod live;
pub mod model;
pub mod plot;
pub mod view;

use std::io::{self, IsTerminal};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ratatui::crossterm::event::{self, Event};

use crate::capture::Request;
use crate::capture::ring::{self, Ring};
use crate::pipeline;
use crate::report::format::error_line;
use data::{DataError, Index};
use model::{Cmd, Model, Msg, Progress, update};

/// `rocescope tui FILE`.
#[derive(Debug, Clone, PartialEq)]
pub struct FileConfig {
    pub file: PathBuf,
    pub pipeline: pipeline::Config,
}

/// How often a live capture sends the TUI a new snapshot.
pub const SNAPSHOT_EVERY: Duration = Duration::from_millis(250);

/// Colours unless NO_COLOR is set to something (https://no-color.org).
pub fn color_wanted() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Set by the panic hook: some thread panicked (and the terminal was restored).
static PANICKED: AtomicBool = AtomicBool::new(false);

/// Restores the terminal when dropped (quit, error, early return).
struct Restore;

impl Drop for Restore {
    fn drop(&mut self) {
        ratatui::restore();
    }
}

/// What the workers send the runtime.
enum Work {
    Msg(Msg),
    Indexed(Box<Index>),
}

/// Where the frames of the packet list and of a flow's series come from.
enum Store {
    /// A file: its index, once the loading pass has built it.
    File(Option<Arc<Index>>),
    /// A live capture: its ring; `-w` or not, and the way to ask the capture thread to flush it.
    Live {
        ring: Arc<Mutex<Ring>>,
        parse: parsers::Config,
        writes: bool,
        control: Sender<Request>,
    },
}

/// Why the terminal UI could not run.
#[derive(Debug, thiserror::Error)]
pub enum TuiError {
    #[error("tui: standard output is not a terminal")]
    NotTerminal,
    /// The capture file at `path` cannot be opened.
    #[error("{}", .path.display())]
    Open {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("-w - would write the capture over the terminal: give a file name")]
    WriteToTerminal,
    #[error("the capture keeps no ring")]
    NoRing,
    #[error("tui: no terminal to read keys from")]
    NoKeys(#[source] io::Error),
    #[error("tui: cannot handle signal {signal}")]
    Signal {
        signal: i32,
        #[source]
        source: io::Error,
    },
    /// Drawing on the terminal, or reading its events, failed.
    #[error("tui")]
    Terminal(#[source] io::Error),
    #[error("tui: a worker thread panicked")]
    Panicked,
    #[error("{}", crate::capture::NOT_BUILT)]
    NotBuilt,
    #[cfg(all(feature = "live", unix))]
    #[error(transparent)]
    Capture(#[from] crate::capture::CaptureError),
}

/// Why `w` saved no frames.
#[derive(Debug, thiserror::Error)]
enum SaveError {
    #[error("w: no current directory")]
    NoDirectory(#[source] io::Error),
    #[error(transparent)]
    Write(#[from] crate::capture::writer::WriterError),
}

/// The terminal UI over a capture file. Returns the exit status the last report gives (4 when the capture
/// was cut short, as `analyze` says).
pub fn run(opts: &FileConfig) -> Result<u8, TuiError> {
    if !io::stdout().is_terminal() {
        return Err(TuiError::NotTerminal);
    }
    // Fail early on an unreadable file, before the screen changes.
    std::fs::File::open(&opts.file).map_err(|source| TuiError::Open {
        path: opts.file.clone(),
        source,
    })?;
    let model = Model::new(opts.file.display().to_string(), color_wanted());
    session(model, Store::File(None), |tx, stop| {
        spawn_loader(opts, tx, stop);
        None
    })
}

/// The terminal UI over a live capture (`rocescope tui -i IFACE`, `rocescope capture -i IFACE --tui`).
#[cfg(all(feature = "live", unix))]
pub fn run_live(cfg: &crate::capture::Config) -> Result<u8, TuiError> {
    live::run(cfg)
}

/// The terminal UI over a live capture: not in this build.
#[cfg(not(all(feature = "live", unix)))]
pub fn run_live(_cfg: &crate::capture::Config) -> Result<u8, TuiError> {
    Err(TuiError::NotBuilt)
}

/// The runtime: owns the terminal, starts the worker (`start`: the file's loading pass or the capture
/// thread), and turns keys and worker messages into updates until quit.
fn session(
    mut model: Model,
    mut store: Store,
    start: impl FnOnce(Sender<Work>, Arc<AtomicBool>) -> Option<std::thread::JoinHandle<()>>,
) -> Result<u8, TuiError> {
    let keys = KeyInput::open()?;
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [
        signal_hook::consts::SIGTERM,
        #[cfg(unix)]
        signal_hook::consts::SIGHUP,
        signal_hook::consts::SIGINT,
    ] {
        signal_hook::flag::register(sig, Arc::clone(&stop)).map_err(|source| TuiError::Signal {
            signal: sig,
            source,
        })?;
    }
    // try_init: raw mode, alternate screen, and a panic hook that restores the terminal first.
    let mut terminal = ratatui::try_init().map_err(TuiError::Terminal)?;
    let _restore = Restore;
    // A panic in a worker restores the terminal too (ratatui's hook): then the loop must stop drawing.
    let restoring_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        PANICKED.store(true, Ordering::SeqCst);
        restoring_hook(info);
    }));
    let (tx, rx) = channel::<Work>();
    let worker = start(tx.clone(), Arc::clone(&stop));
    let size = terminal.size().map_err(TuiError::Terminal)?;
    update(&mut model, Msg::Resize(size.width, size.height));
    let mut series_pending: Option<u64> = None;
    // Test hook: the end-to-end test checks that a panic leaves the terminal restored.
    let panic_after_draw = std::env::var_os("ROCESCOPE_TUI_TEST_PANIC").is_some();
    while !model.quit {
        if PANICKED.load(Ordering::SeqCst) {
            return Err(TuiError::Panicked);
        }
        terminal
            .draw(|f| view::view(&model, f))
            .map_err(TuiError::Terminal)?;
        if panic_after_draw && model.report.is_some() {
            panic!("ROCESCOPE_TUI_TEST_PANIC is set");
        }
        let mut msgs = Vec::new();
        match keys.wait(100) {
            // The terminal is gone (its window closed, ssh dropped): nothing to draw on, quit.
            Input::HungUp => msgs.push(Msg::Quit),
            Input::Ready => {
                while event::poll(Duration::ZERO).map_err(TuiError::Terminal)? {
                    match event::read().map_err(TuiError::Terminal)? {
                        Event::Key(k) => msgs.push(Msg::Key(k)),
                        Event::Resize(w, h) => msgs.push(Msg::Resize(w, h)),
                        _ => {}
                    }
                }
            }
            Input::Idle => msgs.push(Msg::Tick),
        }
        drain(&rx, &mut msgs, &mut store, &mut series_pending);
        if stop.load(Ordering::Relaxed) {
            msgs.push(Msg::Quit);
        }
        for msg in msgs {
            let cmds = update(&mut model, msg);
            run_cmds(cmds, &mut model, &store, &tx, &mut series_pending);
        }
    }
    stop.store(true, Ordering::Relaxed);
    // A live capture: let it close its file (it notices within 50 ms).
    if let Some(w) = worker {
        let _ = w.join();
    }
    drop(_restore);
    // Once the screen is back: what the reader said of the capture, as `analyze` says it.
    let report = model.report.as_deref();
    if let Some(why) = report.and_then(|r| r.capture.truncation.as_deref()) {
        eprintln!("rocescope: warning: {why}: analysed up to the cut");
    }
    Ok(report.map_or(0, |r| r.exit_status()))
}

enum Input {
    Ready,
    Idle,
    HungUp,
}

/// The terminal crossterm reads keys from: standard input when it is a terminal, else /dev/tty.
#[cfg(unix)]
struct KeyInput {
    fd: std::os::fd::RawFd,
    _tty: Option<std::fs::File>,
}

#[cfg(unix)]
impl KeyInput {
    fn open() -> Result<KeyInput, TuiError> {
        use std::os::fd::AsRawFd;
        if io::stdin().is_terminal() {
            return Ok(KeyInput {
                fd: libc::STDIN_FILENO,
                _tty: None,
            });
        }
        let tty = std::fs::File::open("/dev/tty").map_err(TuiError::NoKeys)?;
        Ok(KeyInput {
            fd: tty.as_raw_fd(),
            _tty: Some(tty),
        })
    }

    /// Waits up to `timeout_ms` for keys. Polled here rather than with crossterm's `poll`, which spins
    /// forever once the terminal hangs up (each read returns end of file).
    fn wait(&self, timeout_ms: i32) -> Input {
        let mut fd = libc::pollfd {
            fd: self.fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd, for the duration of the call.
        let n = unsafe { libc::poll(&mut fd, 1, timeout_ms) };
        if n > 0 && fd.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 {
            Input::HungUp
        } else if n > 0 {
            Input::Ready
        } else {
            Input::Idle
        }
    }
}

/// Elsewhere crossterm waits for the console's keys itself.
#[cfg(not(unix))]
struct KeyInput;

#[cfg(not(unix))]
impl KeyInput {
    fn open() -> Result<KeyInput, TuiError> {
        Ok(KeyInput)
    }

    fn wait(&self, timeout_ms: i32) -> Input {
        let timeout = Duration::from_millis(timeout_ms.max(0) as u64);
        match event::poll(timeout) {
            Ok(true) => Input::Ready,
            Ok(false) => Input::Idle,
            Err(_) => Input::HungUp,
        }
    }
}

fn drain(
    rx: &Receiver<Work>,
    msgs: &mut Vec<Msg>,
    store: &mut Store,
    series_pending: &mut Option<u64>,
) {
    while let Ok(w) = rx.try_recv() {
        match w {
            Work::Msg(m) => {
                if let Msg::Series(s) = &m
                    && *series_pending == Some(s.flow)
                {
                    *series_pending = None;
                }
                if matches!(m, Msg::Snapshot(..)) {
                    // A newer snapshot makes the older ones waiting here moot.
                    msgs.retain(|o| !matches!(o, Msg::Snapshot(..)));
                }
                msgs.push(m)
            }
            Work::Indexed(i) => *store = Store::File(Some(Arc::from(i))),
        }
    }
}

/// The analysis pass, in a thread: progress, then the index and the snapshot.
fn spawn_loader(opts: &FileConfig, tx: Sender<Work>, stop: Arc<AtomicBool>) {
    let file = opts.file.clone();
    let cfg = opts.pipeline.clone();
    let total_bytes = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
    std::thread::spawn(move || {
        let progress = |frames, bytes| {
            let p = Progress {
                frames,
                bytes,
                total_bytes,
            };
            tx.send(Work::Msg(Msg::Progress(p))).is_ok() && !stop.load(Ordering::Relaxed)
        };
        match data::analyze(&file, &cfg, progress) {
            Ok((report, index)) => {
                let n = index.len();
                let _ = tx.send(Work::Indexed(Box::new(index)));
                let _ = tx.send(Work::Msg(Msg::Snapshot(Arc::new(report), n)));
            }
            // The user quit: nobody is waiting for the report.
            Err(data::LoadError::Stopped) => {}
            Err(data::LoadError::Failed(e)) => {
                let _ = tx.send(Work::Msg(Msg::Error(error_line(&e))));
            }
        }
    });
}

/// Runs the reads `update` asked for: a flow's points in a thread (a pass over the file or the ring), rows
/// and a packet here (a few records, read at their offsets or taken from the ring), a save in a thread.
fn run_cmds(
    cmds: Vec<Cmd>,
    model: &mut Model,
    store: &Store,
    tx: &Sender<Work>,
    series_pending: &mut Option<u64>,
) {
    let Some(report) = model.report.clone() else {
        return;
    };
    if let Store::File(None) = store {
        return;
    }
    for cmd in cmds {
        let msg = match (cmd, store) {
            (Cmd::LoadSeries(flow), _) => {
                if *series_pending != Some(flow) {
                    *series_pending = Some(flow);
                    let tx = tx.clone();
                    let report = Arc::clone(&report);
                    let job: Box<dyn FnOnce() -> Result<data::FlowSeries, DataError> + Send> =
                        match store {
                            Store::File(Some(index)) => {
                                let index = Arc::clone(index);
                                Box::new(move || data::flow_series(&index, &report, flow))
                            }
                            Store::Live { ring, parse, .. } => {
                                let (ring, parse) = (Arc::clone(ring), *parse);
                                Box::new(move || data::ring_series(&ring, parse, &report, flow))
                            }
                            Store::File(None) => continue,
                        };
                    std::thread::spawn(move || {
                        let msg = match job() {
                            Ok(s) => Msg::Series(Arc::new(s)),
                            Err(e) => Msg::Error(error_line(&e)),
                        };
                        let _ = tx.send(Work::Msg(msg));
                    });
                }
                continue;
            }
            (Cmd::FilterPackets(text), Store::File(Some(index))) => {
                let (tx, index) = (tx.clone(), Arc::clone(index));
                std::thread::spawn(move || {
                    let msg = match data::matching(&index, &text) {
                        Ok(frames) => Msg::Filtered(frames),
                        Err(e) => Msg::Error(error_line(&e)),
                    };
                    let _ = tx.send(Work::Msg(msg));
                });
                continue;
            }
            (Cmd::FilterPackets(_), _) => Msg::Error(
                "the packet list's display filter reads a capture file: save the frames (w), then open them with rocescope tui FILE"
                    .to_string(),
            ),
            (Cmd::LoadRows(numbers), Store::File(Some(index))) => {
                match data::rows(index, &numbers) {
                    Ok(rows) => Msg::Rows(rows),
                    Err(e) => Msg::Error(error_line(&e)),
                }
            }
            (Cmd::LoadRows(numbers), Store::Live { ring, parse, .. }) => {
                Msg::Rows(data::ring_rows(ring, *parse, &numbers))
            }
            (Cmd::LoadPacket(n), Store::File(Some(index))) => match data::detail(index, n) {
                Ok(d) => Msg::Packet(d),
                Err(e) => Msg::Error(error_line(&e)),
            },
            (Cmd::LoadPacket(n), Store::Live { ring, parse, .. }) => {
                match data::ring_detail(ring, *parse, n) {
                    Ok(d) => Msg::Packet(d),
                    Err(e) => Msg::Error(error_line(&e)),
                }
            }
            (
                Cmd::Save,
                Store::Live {
                    writes: true,
                    control,
                    ..
                },
            ) => {
                // -w FILE: the capture thread owns the file; it answers with Msg::Saved.
                if control.send(Request::Flush).is_ok() {
                    continue;
                }
                // The capture has ended (-c, --duration, an error): it closed the file.
                let written = report
                    .capture_stats
                    .as_ref()
                    .and_then(|c| c.written.as_ref());
                Msg::Saved(match written {
                    Some(w) => Ok(format!(
                        "capture stopped; {} frames are in {}",
                        w.frames, w.file
                    )),
                    None => Err("the capture has stopped".to_string()),
                })
            }
            (Cmd::Save, Store::Live { ring, .. }) => {
                let (ring, tx) = (Arc::clone(ring), tx.clone());
                std::thread::spawn(move || {
                    let saved = save_ring(&ring).map_err(|e| error_line(&e));
                    let _ = tx.send(Work::Msg(Msg::Saved(saved)));
                });
                continue;
            }
            (_, Store::File(_)) => continue,
        };
        let more = update(model, msg);
        run_cmds(more, model, store, tx, series_pending);
    }
}

/// Writes the frames the ring holds to a new timestamped pcapng in the current directory.
fn save_ring(ring: &Mutex<Ring>) -> Result<String, SaveError> {
    let (recs, linktype, snaplen, iface) = {
        let r = ring.lock().unwrap_or_else(|p| p.into_inner());
        (r.all(), r.linktype, r.snaplen, r.interface.clone())
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let dir = std::env::current_dir().map_err(SaveError::NoDirectory)?;
    let path = ring::timestamped_path(&dir, &iface, now);
    let frames = ring::save(&recs, &path, linktype, snaplen, &iface)?;
    Ok(format!("{frames} frames saved to {}", path.display()))
}
