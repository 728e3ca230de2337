//! One live capture session, for `capture`, `capture --tui`, `tui -i` and `gen --capture`: a
//! [`LiveSource`] run through the [`pipeline`](crate::pipeline), with the `-w` file and (for the TUI) the
//! ring of recent frames on the reading side, and a [`Watcher`] on the engine side that looks at the
//! analysis every so often (a status line, a TUI snapshot, the fabric check's latest report).
//!
//! A stop (by `-c`, `--duration`, a signal, the command's end, the watcher) first reads on for
//! [`DRAIN`]: the frames of the kernel's current block.
use std::ops::ControlFlow;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::ring::{self, Ring};
use super::writer::{Writer, WriterError};
use super::{CaptureError, Config, Control, FlushError, Request};
use crate::analysis::{Classified, Counted, Engine};
use crate::host::Root;
use crate::host::counters::{Layout, Snapshot};
use crate::pipeline::{self, EngineSide, ReadSide};
use crate::report::capture::{CaptureStats, StoppedBy, Written};
use crate::report::counters::{self, NicCounters};
use crate::report::format::error_line;
use crate::source::Packet;
use crate::source::live::{DRAIN, LiveSource, PcapCounters};

/// What else ends a capture (a signal, a wrapped command): asked whenever frames are handed to the engine,
/// and at least every 50 ms.
pub trait Until {
    fn check(&mut self, now: Instant) -> Option<StoppedBy>;
}

impl<F: FnMut(Instant) -> Option<StoppedBy>> Until for F {
    fn check(&mut self, now: Instant) -> Option<StoppedBy> {
        self(now)
    }
}

/// What looks at the analysis while the capture runs, on the engine thread.
pub trait Watcher: Send {
    /// How often it wants a look.
    fn every(&self) -> Duration;
    /// How long after the start it wants the first look (at once by default).
    fn first(&self) -> Duration {
        Duration::ZERO
    }
    /// The analysis so far, with libpcap's counters, what `-w` wrote and the NIC's counters now. `Break`
    /// stops the capture (the TUI went away).
    fn look(&mut self, engine: &Engine, stats: &CaptureStats, nic: &Nic) -> ControlFlow<()>;

    /// The capture is over, the end-of-capture pass comes next: what to hand the engine that was learnt
    /// meanwhile (the wrapped command's printout of its connections).
    fn ending(&mut self, _engine: &mut Engine) {}
}

/// No watcher: only the final report counts (`gen --capture`).
impl Watcher for () {
    fn every(&self) -> Duration {
        Duration::from_secs(3600)
    }

    fn look(&mut self, _engine: &Engine, _stats: &CaptureStats, _nic: &Nic) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }
}

/// The NIC's counters during a capture: the RDMA ports (and the capture interface's netdev) read at the
/// start and now.
pub struct Nic<'a> {
    pub layout: &'a Layout,
    pub start: &'a Snapshot,
    pub now: &'a Snapshot,
    pub interface: &'a str,
}

impl Nic<'_> {
    /// Held against the engine's figures (`dropped`: libpcap's drops).
    pub fn counters(&self, engine: &Engine, dropped: u64) -> NicCounters {
        counters::build(
            engine,
            self.layout,
            self.start,
            self.now,
            self.interface,
            dropped,
        )
    }
}

/// The NIC's counters at the start and the end of a capture.
pub struct NicSpan {
    pub layout: Layout,
    pub start: Snapshot,
    pub end: Snapshot,
    pub interface: String,
}

impl NicSpan {
    /// The counters now, at the end of the capture.
    fn end(layout: Layout, start: Snapshot, interface: String) -> NicSpan {
        let end = Snapshot::take(&Root::live(), &layout);
        NicSpan {
            layout,
            start,
            end,
            interface,
        }
    }

    pub fn counters(&self, engine: &Engine, dropped: u64) -> NicCounters {
        counters::build(
            engine,
            &self.layout,
            &self.start,
            &self.end,
            &self.interface,
            dropped,
        )
    }
}

/// The RDMA ports of this host and the capture interface, and their counters now (before the first
/// frame).
fn nic_start(interface: &str) -> (Layout, Snapshot) {
    let root = Root::live();
    let mut layout = Layout::find(&root, None).unwrap_or_default();
    if interface != "any" {
        layout.extra.push(interface.to_string());
    }
    let start = Snapshot::take(&root, &layout);
    (layout, start)
}

/// How the session ended: the engine after its end-of-capture pass, the capture statistics with why it
/// stopped, the error that stopped it (a failed write or capture), and the watcher back.
pub struct Ended<W> {
    pub engine: Engine,
    pub stats: CaptureStats,
    pub error: Option<String>,
    pub watcher: W,
    pub nic: NicSpan,
}

/// An open capture, ready to run: opened (with its `-w` file) before anything else happens so that errors
/// are one line.
pub struct Session {
    source: LiveSource,
    writer: Option<Writer>,
    ring: Option<Arc<Mutex<Ring>>>,
    cfg: Config,
    layout: Layout,
    nic_start: Snapshot,
}

impl Session {
    pub fn open(cfg: &Config) -> Result<Session, CaptureError> {
        let source = LiveSource::open(&cfg.live)?;
        let writer = match &cfg.write {
            Some(p) => Some(Writer::rotating(
                p,
                source.linktype,
                cfg.live.snaplen,
                &cfg.live.interface,
                cfg.rotation,
            )?),
            None => None,
        };
        let ring = cfg.ring.then(|| {
            Arc::new(Mutex::new(Ring::new(
                ring::MAX_FRAMES,
                ring::MAX_BYTES,
                source.linktype,
                cfg.live.snaplen,
                &cfg.live.interface,
            )))
        });
        // The counters' first reading: once the capture is open, before anything it watches starts.
        let (layout, nic_start) = nic_start(&cfg.live.interface);
        Ok(Session {
            source,
            writer,
            ring,
            cfg: cfg.clone(),
            layout,
            nic_start,
        })
    }

    /// The ring of recent frames (when the configuration asked for one).
    pub fn ring(&self) -> Option<Arc<Mutex<Ring>>> {
        self.ring.clone()
    }

    /// True when `-w` was given.
    pub fn writes(&self) -> bool {
        self.writer.is_some()
    }

    pub fn filter(&self) -> &str {
        &self.source.filter
    }

    pub fn linktype(&self) -> u16 {
        self.source.linktype
    }

    /// Captures until `-c`, `--duration`, `until`, the watcher or an error stops it.
    pub fn run<U: Until, W: Watcher>(
        mut self,
        until: U,
        control: Option<Control>,
        watcher: W,
    ) -> Result<Ended<W>, CaptureError> {
        let shared = Arc::new(Mutex::new(Shared::default()));
        let base = CaptureStats {
            interface: self.cfg.live.interface.clone(),
            filter: self.source.filter.clone(),
            snaplen: self.cfg.live.snaplen,
            promiscuous: self.cfg.live.promiscuous,
            linktype: self.source.linktype,
            ..Default::default()
        };
        let start = Instant::now();
        let mut reading = Reading {
            cfg: &self.cfg,
            until,
            control,
            writer: self.writer.take(),
            ring: self.ring.clone(),
            staged: ring::Batch::new(),
            shared: Arc::clone(&shared),
            deadline: self.cfg.duration.map(|d| start + d),
            next_flush: start + Duration::from_secs(1),
            stopping: None,
            stopped: None,
            error: None,
            counters: None,
        };
        let first_look = start + watcher.first();
        let looking = Looking {
            watcher,
            base: base.clone(),
            shared: Arc::clone(&shared),
            ring: self.ring.clone(),
            classes: Vec::new(),
            next_look: first_look,
            layout: self.layout.clone(),
            nic_start: self.nic_start.clone(),
            interface: self.cfg.live.interface.clone(),
        };
        let run = pipeline::run(&mut self.source, &self.cfg.pipeline, &mut reading, looking)?;
        reading.finish(&mut self.source);
        let stopped_by = match (&run.error, reading.stopped) {
            (_, Some(s)) => s,
            (Some(_), None) => StoppedBy::CaptureError,
            (None, None) => StoppedBy::Signal,
        };
        let error = reading
            .error
            .take()
            .or_else(|| run.error.as_ref().map(|e| e.to_string()));
        let stats = reading.stats(&base, stopped_by, error.clone());
        Ok(Ended {
            engine: run.engine,
            stats,
            error,
            watcher: run.engine_side.watcher,
            nic: NicSpan::end(self.layout, self.nic_start, self.cfg.live.interface),
        })
    }
}

/// What the reading side tells the engine side: libpcap's counters and what `-w` wrote, as of the last
/// hand-over.
#[derive(Default)]
struct Shared {
    counters: Option<PcapCounters>,
    written: Option<Written>,
    /// The watcher said stop.
    quit: bool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn written(w: &Writer) -> Written {
    Written {
        file: w.name.clone(),
        format: w.format.name(),
        frames: w.frames,
        bytes: w.bytes,
        files: w.files,
        error: None,
    }
}

/// The reading side: `-w`, the ring, requests, stop conditions.
struct Reading<'c, U> {
    cfg: &'c Config,
    until: U,
    control: Option<Control>,
    writer: Option<Writer>,
    ring: Option<Arc<Mutex<Ring>>>,
    /// Frames for the ring since the last hand-over (allocated once, reused).
    staged: ring::Batch,
    shared: Arc<Mutex<Shared>>,
    deadline: Option<Instant>,
    next_flush: Instant,
    /// Stopping: why, and until when to read on.
    stopping: Option<(StoppedBy, Instant)>,
    stopped: Option<StoppedBy>,
    error: Option<String>,
    counters: Option<PcapCounters>,
}

impl<U: Until> Reading<'_, U> {
    /// Why to stop now, if anything says so.
    fn stop_reason(&mut self, now: Instant) -> Option<StoppedBy> {
        if self.deadline.is_some_and(|d| now >= d) {
            return Some(StoppedBy::Duration);
        }
        if lock(&self.shared).quit {
            return Some(StoppedBy::Signal);
        }
        self.until.check(now)
    }

    fn flush(&mut self) -> Result<(), WriterError> {
        match &mut self.writer {
            Some(w) => w.flush().map_err(|e| w.describe(e)),
            None => Ok(()),
        }
    }

    fn requests(&mut self) -> ControlFlow<()> {
        let Some(c) = &self.control else {
            return ControlFlow::Continue(());
        };
        let asked: Vec<Request> = c.requests.try_iter().collect();
        for Request::Flush in asked {
            let answer = self
                .flush()
                .map_err(FlushError::from)
                .and_then(|()| match &self.writer {
                    Some(w) => Ok(format!("{} frames written to {}", w.frames, w.name)),
                    None => Err(FlushError::NoFile),
                });
            let failed = answer.as_ref().err().map(|e| error_line(e));
            if let Some(c) = &mut self.control {
                (c.answer)(answer);
            }
            if let Some(e) = failed.filter(|_| self.writer.is_some()) {
                return self.stop_now(StoppedBy::WriteError, Some(e));
            }
        }
        ControlFlow::Continue(())
    }

    fn stop_now(&mut self, why: StoppedBy, error: Option<String>) -> ControlFlow<()> {
        self.stopped = Some(why);
        if error.is_some() {
            self.error = error;
        }
        ControlFlow::Break(())
    }

    /// After the last frame: the last of `-w`, the last frames into the ring, libpcap's final counters.
    fn finish(&mut self, source: &mut LiveSource) {
        self.append_ring();
        if self.error.is_none()
            && let Err(e) = self.flush()
        {
            self.error = Some(error_line(&e));
        }
        self.counters = source.counters();
    }

    fn append_ring(&mut self) {
        if let Some(ring) = &self.ring
            && !self.staged.is_empty()
        {
            // One lock and one allocation for the whole batch (the chunk its frames share), none per frame.
            lock(ring).append(&mut self.staged);
        }
    }

    fn stats(
        &self,
        base: &CaptureStats,
        stopped_by: StoppedBy,
        error: Option<String>,
    ) -> CaptureStats {
        let c = self.counters.unwrap_or_default();
        CaptureStats {
            received: c.received,
            dropped: c.dropped,
            if_dropped: c.if_dropped,
            stopped_by,
            written: self.writer.as_ref().map(|w| Written {
                error: error.filter(|_| stopped_by == StoppedBy::WriteError),
                ..written(w)
            }),
            ..base.clone()
        }
    }
}

impl<U: Until> ReadSide<LiveSource> for Reading<'_, U> {
    fn frame(&mut self, number: u64, p: &Packet, _offset: u64) -> ControlFlow<()> {
        if let Some(w) = &mut self.writer
            && let Err(e) = w.write(p.ts_nanos, p.data, p.orig_len)
        {
            let e = w.describe(e).to_string();
            return self.stop_now(StoppedBy::WriteError, Some(e));
        }
        if self.ring.is_some() {
            self.staged.push(number, p.ts_nanos, p.orig_len, p.data);
            if self.staged.is_full() {
                self.append_ring();
            }
        }
        if self.cfg.count.is_some_and(|n| number >= n) {
            return self.stop_now(StoppedBy::Count, None);
        }
        ControlFlow::Continue(())
    }

    fn handed_over(
        &mut self,
        source: &mut LiveSource,
        _frames: u64,
        _offset: u64,
        _idle: bool,
    ) -> ControlFlow<()> {
        self.counters = source.counters();
        self.append_ring();
        let now = Instant::now();
        if let Some((why, until)) = self.stopping {
            return if now >= until {
                self.stop_now(why, None)
            } else {
                ControlFlow::Continue(())
            };
        }
        self.requests()?;
        if now >= self.next_flush {
            if let Err(e) = self.flush() {
                return self.stop_now(StoppedBy::WriteError, Some(error_line(&e)));
            }
            self.next_flush = now + Duration::from_secs(1);
        }
        {
            let mut s = lock(&self.shared);
            s.counters = self.counters;
            s.written = self.writer.as_ref().map(written);
        }
        if let Some(why) = self.stop_reason(now) {
            self.stopping = Some((why, now + DRAIN));
        }
        ControlFlow::Continue(())
    }
}

/// The engine side: the ring's classifications and the watcher's looks.
struct Looking<W> {
    watcher: W,
    base: CaptureStats,
    shared: Arc<Mutex<Shared>>,
    ring: Option<Arc<Mutex<Ring>>>,
    /// How the frames of the current batch were counted, for the ring.
    classes: Vec<(u64, Counted)>,
    next_look: Instant,
    layout: Layout,
    nic_start: Snapshot,
    interface: String,
}

impl<W: Watcher> EngineSide for Looking<W> {
    fn examined(
        &mut self,
        number: u64,
        _ts_nanos: u64,
        _frame: &parsers::Frame,
        classified: Classified,
        _engine: &Engine,
    ) {
        if self.ring.is_some() {
            self.classes.push((number, classified.counted()));
        }
    }

    fn batch_done(&mut self, engine: &Engine) {
        if let Some(ring) = &self.ring {
            lock(ring).classify(&self.classes);
            self.classes.clear();
        }
        let now = Instant::now();
        if now < self.next_look {
            return;
        }
        let stats = {
            let s = lock(&self.shared);
            let c = s.counters.unwrap_or_default();
            CaptureStats {
                received: c.received,
                dropped: c.dropped,
                if_dropped: c.if_dropped,
                written: s.written.clone(),
                ..self.base.clone()
            }
        };
        let reading = Snapshot::take(&Root::live(), &self.layout);
        let nic = Nic {
            layout: &self.layout,
            start: &self.nic_start,
            now: &reading,
            interface: &self.interface,
        };
        if self.watcher.look(engine, &stats, &nic).is_break() {
            lock(&self.shared).quit = true;
        }
        self.next_look = next_on_grid(self.next_look, self.watcher.every(), now);
    }

    fn ending(&mut self, engine: &mut Engine) {
        self.watcher.ending(engine);
    }
}

/// The first time after `now` of `next + k × every` (k ≥ 1), in one step however far behind `now` is: a
/// loop adding `every` until past `now` never ends for a zero interval (`--report-every 0` spun at 100 %
/// CPU, deaf to --duration and to signals). An interval under 1 ms counts as 1 ms.
pub fn next_on_grid(next: Instant, every: Duration, now: Instant) -> Instant {
    let every = every.max(Duration::from_millis(1));
    let behind = now.saturating_duration_since(next).as_nanos();
    let steps = behind / every.as_nanos() + 1;
    let ahead = every.saturating_mul(u32::try_from(steps).unwrap_or(u32::MAX));
    next.checked_add(ahead).unwrap_or(now + every)
}

#[cfg(test)]
mod grid_tests {
    use super::*;

    #[test]
    fn the_next_look_is_one_step_past_now() {
        let t0 = Instant::now();
        let s = Duration::from_secs(1);
        assert_eq!(next_on_grid(t0, s, t0), t0 + s);
        assert_eq!(
            next_on_grid(t0, s, t0 + Duration::from_millis(2500)),
            t0 + 3 * s
        );
        // behind by a day at 1 ms: one step, not 86 million
        let day = Duration::from_secs(86_400);
        let ms = Duration::from_millis(1);
        assert_eq!(next_on_grid(t0, ms, t0 + day), t0 + day + ms);
        // zero and 1e-10 s count as 1 ms
        assert_eq!(next_on_grid(t0, Duration::ZERO, t0), t0 + ms);
        assert_eq!(
            next_on_grid(t0, Duration::from_secs_f64(1e-10), t0 + s),
            t0 + s + ms
        );
    }
}
