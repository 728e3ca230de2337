//! The live terminal UI: a capture session on its own thread sends the runtime a snapshot every
//! [`SNAPSHOT_EVERY`]; the packet list reads the ring of recent frames the session fills.
use std::io::{self, IsTerminal};
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::model::{Model, Msg};
use super::{SNAPSHOT_EVERY, Store, TuiError, Work, color_wanted, session};
use crate::analysis::Engine;
use crate::capture::ring::Ring;
use crate::capture::session::{Nic, Session, Watcher};
use crate::capture::{self, Control, Request};
use crate::report::Report;
use crate::report::capture::{CaptureStats, StoppedBy};
use crate::report::counters::NicCounters;
use crate::report::format::error_line;

/// The terminal UI over a live capture.
pub fn run(cfg: &capture::Config) -> Result<u8, TuiError> {
    if !io::stdout().is_terminal() {
        return Err(TuiError::NotTerminal);
    }
    if cfg.write.as_deref() == Some(std::path::Path::new("-")) {
        return Err(TuiError::WriteToTerminal);
    }
    // Open the capture (and the -w file) before the screen changes: its errors are one line.
    let cfg = capture::Config {
        ring: true,
        ..cfg.clone()
    };
    let live = Session::open(&cfg)?;
    let ring = live.ring().ok_or(TuiError::NoRing)?;
    let (requests, control_rx) = channel();
    let store = Store::Live {
        ring,
        parse: cfg.pipeline.parse,
        writes: live.writes(),
        control: requests,
    };
    let model = Model::new_live(&cfg.live.interface, color_wanted());
    let source = format!("live capture on {}", cfg.live.interface);
    session(model, store, move |tx, stop| {
        Some(std::thread::spawn(move || {
            capture_thread(live, source, control_rx, tx, stop)
        }))
    })
}

/// Sends the TUI a snapshot of the capture every [`SNAPSHOT_EVERY`], with the number of frames the ring
/// holds (the newest of the `report.capture.frames` captured).
struct Snapshots {
    tx: Sender<Work>,
    source: String,
    ring: Arc<Mutex<Ring>>,
}

impl Snapshots {
    fn send(&self, engine: &Engine, stats: CaptureStats, nic: NicCounters) -> bool {
        let held = self.ring.lock().map_or(0, |r| r.len() as u64);
        let mut report = Report::build(engine, &self.source);
        report.capture_stats = Some(stats);
        report.counters = Some(nic);
        self.tx
            .send(Work::Msg(Msg::Snapshot(Arc::new(report), held)))
            .is_ok()
    }
}

impl Watcher for Snapshots {
    fn every(&self) -> Duration {
        SNAPSHOT_EVERY
    }

    fn look(&mut self, engine: &Engine, stats: &CaptureStats, nic: &Nic) -> ControlFlow<()> {
        let counters = nic.counters(engine, stats.dropped + stats.if_dropped);
        if self.send(engine, stats.clone(), counters) {
            ControlFlow::Continue(())
        } else {
            ControlFlow::Break(())
        }
    }
}

/// The capture thread of the live TUI: runs the session until the TUI stops it, then sends the last
/// snapshot (after the engine's end-of-capture pass, naming why it stopped) and the error, if any.
fn capture_thread(
    live: Session,
    source: String,
    requests: Receiver<Request>,
    tx: Sender<Work>,
    stop: Arc<AtomicBool>,
) {
    let Some(ring) = live.ring() else { return };
    let answers = tx.clone();
    let errors = tx.clone();
    let control = Control {
        requests,
        answer: Box::new(move |a| {
            let _ = answers.send(Work::Msg(Msg::Saved(a.map_err(|e| error_line(&e)))));
        }),
    };
    let watcher = Snapshots { tx, source, ring };
    let until = move |_| stop.load(Ordering::Relaxed).then_some(StoppedBy::Signal);
    match live.run(until, Some(control), watcher) {
        Ok(ended) => {
            let w = ended.watcher;
            let nic = ended
                .nic
                .counters(&ended.engine, ended.stats.dropped + ended.stats.if_dropped);
            w.send(&ended.engine, ended.stats, nic);
            if let Some(e) = ended.error {
                let _ = w.tx.send(Work::Msg(Msg::Error(e)));
            }
        }
        Err(e) => {
            let _ = errors.send(Work::Msg(Msg::Error(error_line(&e))));
        }
    }
}
