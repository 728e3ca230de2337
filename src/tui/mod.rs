//! `rocescope tui`: a terminal UI over a capture, in the Elm architecture.
//!
//! - [`model`]: the [`Model`](model::Model) (view state plus the latest analysis snapshot, a
//!   [`Report`](crate::report::Report)), the [`Msg`](model::Msg)s (keys, ticks, snapshots, data read for a
//!   view) and [`update`](model::update), which returns the reads ([`Cmd`](model::Cmd)) it needs and never
//!   draws or reads a file.
//! - [`view`]: draws a model, changes nothing.
//! - [`data`]: the capture file: one pass that analyses and indexes it, random access to any frame, a
//!   flow's PSN points.
//! - [`plot`]: the same charts as SVG files (for `analyze --plot DIR`).
//! - this module: the runtime. It owns the terminal (restored on quit, error, panic and SIGTERM), turns
//!   terminal events and worker results into messages and runs the commands.
//!
//! Snapshots come over a channel as `Msg::Snapshot`: a file sends one when its pass ends; a live capture
//! can send one every second through the same channel.
pub mod data;
pub mod model;
pub mod plot;
pub mod view;

use std::io::{self, IsTerminal};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::Duration;

use ratatui::crossterm::event::{self, Event};

use data::Index;
use model::{Cmd, Model, Msg, Progress, update};

pub struct Options {
    pub file: PathBuf,
    pub parse: parsers::Config,
    pub analysis: crate::analysis::Config,
}

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

pub fn run(opts: &Options) -> Result<(), String> {
    if !io::stdout().is_terminal() {
        return Err("tui: standard output is not a terminal".to_string());
    }
    // Fail early on an unreadable file, before the screen changes.
    std::fs::File::open(&opts.file).map_err(|e| format!("{}: {e}", opts.file.display()))?;
    let keys = KeyInput::open()?;
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
        signal_hook::consts::SIGINT,
    ] {
        signal_hook::flag::register(sig, Arc::clone(&stop))
            .map_err(|e| format!("tui: cannot handle signal {sig}: {e}"))?;
    }
    // try_init: raw mode, alternate screen, and a panic hook that restores the terminal first.
    let mut terminal = ratatui::try_init().map_err(|e| format!("tui: {e}"))?;
    let _restore = Restore;
    // A panic in a worker restores the terminal too (ratatui's hook): then the loop must stop drawing.
    let restoring_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        PANICKED.store(true, Ordering::SeqCst);
        restoring_hook(info);
    }));
    let (tx, rx) = channel::<Work>();
    spawn_loader(opts, tx.clone(), Arc::clone(&stop));
    let size = terminal.size().map_err(|e| format!("tui: {e}"))?;
    let mut model = Model::new(opts.file.display().to_string(), color_wanted());
    update(&mut model, Msg::Resize(size.width, size.height));
    let mut index: Option<Arc<Index>> = None;
    let mut series_pending: Option<u32> = None;
    // Test hook: the end-to-end test checks that a panic leaves the terminal restored.
    let panic_after_draw = std::env::var_os("ROCESCOPE_TUI_TEST_PANIC").is_some();
    while !model.quit {
        if PANICKED.load(Ordering::SeqCst) {
            return Err("tui: a worker thread panicked".to_string());
        }
        terminal
            .draw(|f| view::view(&model, f))
            .map_err(|e| format!("tui: {e}"))?;
        if panic_after_draw && model.report.is_some() {
            panic!("ROCESCOPE_TUI_TEST_PANIC is set");
        }
        let mut msgs = Vec::new();
        match terminal_input(&keys, 100) {
            // The terminal is gone (its window closed, ssh dropped): nothing to draw on, quit.
            Input::HungUp => msgs.push(Msg::Quit),
            Input::Ready => {
                while event::poll(Duration::ZERO).map_err(|e| format!("tui: {e}"))? {
                    match event::read().map_err(|e| format!("tui: {e}"))? {
                        Event::Key(k) => msgs.push(Msg::Key(k)),
                        Event::Resize(w, h) => msgs.push(Msg::Resize(w, h)),
                        _ => {}
                    }
                }
            }
            Input::Idle => msgs.push(Msg::Tick),
        }
        drain(&rx, &mut msgs, &mut index, &mut series_pending);
        if stop.load(Ordering::Relaxed) {
            msgs.push(Msg::Quit);
        }
        for msg in msgs {
            let cmds = update(&mut model, msg);
            run_cmds(cmds, &mut model, index.as_ref(), &tx, &mut series_pending);
        }
    }
    stop.store(true, Ordering::Relaxed);
    Ok(())
}

enum Input {
    Ready,
    Idle,
    HungUp,
}

/// The terminal crossterm reads keys from: standard input when it is a terminal, else /dev/tty.
struct KeyInput {
    fd: std::os::fd::RawFd,
    _tty: Option<std::fs::File>,
}

impl KeyInput {
    fn open() -> Result<KeyInput, String> {
        use std::os::fd::AsRawFd;
        if io::stdin().is_terminal() {
            return Ok(KeyInput {
                fd: libc::STDIN_FILENO,
                _tty: None,
            });
        }
        let tty = std::fs::File::open("/dev/tty")
            .map_err(|e| format!("tui: no terminal to read keys from: {e}"))?;
        Ok(KeyInput {
            fd: tty.as_raw_fd(),
            _tty: Some(tty),
        })
    }
}

/// Waits up to `timeout_ms` for keys. Polled here rather than with crossterm's `poll`, which spins forever
/// once the terminal hangs up (each read returns end of file).
fn terminal_input(keys: &KeyInput, timeout_ms: i32) -> Input {
    let mut fd = libc::pollfd {
        fd: keys.fd,
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

fn drain(
    rx: &Receiver<Work>,
    msgs: &mut Vec<Msg>,
    index: &mut Option<Arc<Index>>,
    series_pending: &mut Option<u32>,
) {
    while let Ok(w) = rx.try_recv() {
        match w {
            Work::Msg(m) => {
                if let Msg::Series(s) = &m
                    && *series_pending == Some(s.flow)
                {
                    *series_pending = None;
                }
                msgs.push(m)
            }
            Work::Indexed(i) => *index = Some(Arc::from(i)),
        }
    }
}

/// The analysis pass, in a thread: progress, then the index and the snapshot.
fn spawn_loader(opts: &Options, tx: Sender<Work>, stop: Arc<AtomicBool>) {
    let file = opts.file.clone();
    let (parse, cfg) = (opts.parse, opts.analysis);
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
        match data::analyze(&file, parse, cfg, progress) {
            Ok((report, index)) => {
                let n = index.len();
                let _ = tx.send(Work::Indexed(Box::new(index)));
                let _ = tx.send(Work::Msg(Msg::Snapshot(Arc::new(report), n)));
            }
            Err(e) => {
                let _ = tx.send(Work::Msg(Msg::Error(e)));
            }
        }
    });
}

/// Runs the reads `update` asked for: a flow's points in a thread (a pass over the file), rows and a packet
/// here (a few records, read at their offsets).
fn run_cmds(
    cmds: Vec<Cmd>,
    model: &mut Model,
    index: Option<&Arc<Index>>,
    tx: &Sender<Work>,
    series_pending: &mut Option<u32>,
) {
    let (Some(index), Some(report)) = (index, model.report.clone()) else {
        return;
    };
    for cmd in cmds {
        let msg = match cmd {
            Cmd::LoadSeries(flow) => {
                if *series_pending != Some(flow) {
                    *series_pending = Some(flow);
                    let (index, tx) = (Arc::clone(index), tx.clone());
                    let report = Arc::clone(&report);
                    std::thread::spawn(move || {
                        let msg = match data::flow_series(&index, &report, flow) {
                            Ok(s) => Msg::Series(Arc::new(s)),
                            Err(e) => Msg::Error(e),
                        };
                        let _ = tx.send(Work::Msg(msg));
                    });
                }
                continue;
            }
            Cmd::LoadRows(numbers) => match data::rows(index, &numbers) {
                Ok(rows) => Msg::Rows(rows),
                Err(e) => Msg::Error(e),
            },
            Cmd::LoadPacket(n) => match data::detail(index, n) {
                Ok(d) => Msg::Packet(d),
                Err(e) => Msg::Error(e),
            },
        };
        let more = update(model, msg);
        run_cmds(more, model, Some(index), tx, series_pending);
    }
}
