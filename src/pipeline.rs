//! The one frame pipeline: read a packet from any [`PacketSource`] (a file, standard input, a live libpcap
//! handle), parse it, check its ICRC, feed the analysis engine. `analyze`, `capture` (text, `--tui`,
//! `tui -i`, `gen --capture`), the TUI's file loading and the plots all run it; what each does besides
//! is given as a [`ReadSide`] (on the reading thread, with the packet's bytes: writing `-w`, the live ring,
//! the TUI's index, progress, stop conditions) and an [`EngineSide`] (on the engine thread, with how each
//! frame was counted: the chart's marks, live snapshots).
//!
//! Two threads: the reading thread parses (leaving the ICRC for later) and hands frames over in batches;
//! the engine thread checks the ICRCs, on a copy of the bytes that need it (cheaper than the check), and
//! ingests the frames in capture order. With more threads allowed (`-j`), the reading thread hands the
//! frames over whole, and one or two threads between it and the engine thread parse them and check their
//! ICRCs, a batch each in turn ([`lanes`]). An engine side that shows whole frames (the dissector) gets every
//! frame's bytes instead, and the engine thread parses them.
use std::ops::{ControlFlow, Range};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, channel, sync_channel};

use parsers::{Frame, parse_frame, parse_frame_deferred};

use crate::analysis::{self, Classified, Engine};
use crate::filter::{Filter, Matcher, Subject};
use crate::source::printout::Exchange;
use crate::source::{Next, Packet, PacketSource, SourceError};

/// `--expect`: the connections the hosts' tools printed (perftest, ibv_*_pingpong) and the job's NCCL and
/// UCX logs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Expected {
    pub exchanges: Arc<[Exchange]>,
    pub jobs: Arc<crate::source::joblog::JobLog>,
}

/// What the pipeline assumes: what RoCE is (the UDP port), the analysis' assumptions, what the hosts
/// printed of their connections and the job's logs (`--expect`), and which frames to analyse.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    pub parse: parsers::Config,
    pub analysis: analysis::Config,
    /// `--expect`: what the hosts printed and the job's logs.
    pub expected: Expected,
    /// `-Y`: only the frames this display filter passes are analysed (and shown to the engine side); the
    /// reading side still sees every frame (`-w` writes them all). It names no analysis field.
    pub filter: Option<Arc<Filter>>,
    /// `-j`: the threads the pipeline may run. One reads, one analyses; the others, if any, parse the frames
    /// and check their ICRCs, each a batch in turn. The result is the same at any number.
    pub threads: usize,
}

/// The reading thread's part beyond parsing, over a source of type `S`. Every method has a default that
/// does nothing.
pub trait ReadSide<S: ?Sized> {
    /// A frame was read: its number (from 1), the packet, and the input's offset after it. `Break` stops
    /// the reading (this frame is still analysed).
    fn frame(&mut self, _number: u64, _packet: &Packet, _offset: u64) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }

    /// A batch goes to the engine (called just before the engine sees it): every [`BATCH`] frames, and
    /// whenever a live source has nothing more for now (`idle`; `frames` may not have changed then). The
    /// place for what need not run per frame: clocks, signals, progress, the source's own counters.
    /// `Break` stops the reading (the batch is still analysed).
    fn handed_over(
        &mut self,
        _source: &mut S,
        _frames: u64,
        _offset: u64,
        _idle: bool,
    ) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }
}

/// The engine thread's part beyond ingesting. Every method has a default that does nothing.
pub trait EngineSide: Send {
    /// True when the side wants every frame whole, bytes and all ([`EngineSide::frame`]): the bytes of
    /// every frame then go to the engine thread, which parses them (the dissector's views).
    const WHOLE_FRAMES: bool = false;

    /// The engine took frame `number` (captured at `ts_nanos`), parsed as `frame` (its ICRC checked), and
    /// counted it as `classified`; `engine` is the analysis just after it (the export's rows: the flow's
    /// connection, the events the frame raised). Every frame the engine takes passes here, whatever the
    /// source and however it was parsed: the export, the plots, the TUI and the live ring see the same.
    fn examined(
        &mut self,
        _number: u64,
        _ts_nanos: u64,
        _frame: &Frame,
        _classified: Classified,
        _engine: &Engine,
    ) {
    }

    /// With [`EngineSide::WHOLE_FRAMES`]: frame `number` after the engine took it, with its packet (the
    /// bytes), its layers, how it was counted and the engine that counted it. `Break` stops the run.
    fn frame(
        &mut self,
        _number: u64,
        _packet: &Packet,
        _frame: &Frame,
        _classified: Classified,
        _engine: &Engine,
    ) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }

    /// A batch was ingested; `engine` holds the analysis so far.
    fn batch_done(&mut self, _engine: &Engine) {}

    /// The last frame was ingested; the end-of-capture pass comes next. The place to hand the engine what
    /// was learnt meanwhile (a wrapped command's printout).
    fn ending(&mut self, _engine: &mut Engine) {}
}

impl<S: ?Sized> ReadSide<S> for () {}
impl EngineSide for () {}

/// How a run ended: the engine after its end-of-capture pass, the engine side back, the frames read, and
/// the error that cut the input short, if one did (the frames before it are analysed).
pub struct Outcome<E> {
    pub engine: Engine,
    pub engine_side: E,
    pub frames: u64,
    pub error: Option<SourceError>,
}

/// Why a run could not be made (an input error is not one: the frames before it are analysed, [`Outcome`]).
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    #[error("cannot start the analysis thread")]
    Thread(#[source] std::io::Error),
    #[error("the analysis thread panicked")]
    Panicked,
}

/// Frames handed from the reading thread to the engine thread at a time.
pub const BATCH: usize = 1024;

/// Batches on their way to the engine at most: the reader waits beyond that, so memory stays bounded.
const IN_FLIGHT: usize = 4;

/// Threads that parse and check ICRCs at most: two take that off the reading and engine threads, which
/// are then the slower ones (docs/speed.md).
const MAX_PARSERS: usize = 2;

/// Runs the pipeline over `source` to its end (or until a side says stop).
pub fn run<S, R, E>(
    source: &mut S,
    cfg: &Config,
    read: &mut R,
    engine_side: E,
) -> Result<Outcome<E>, PipelineError>
where
    S: PacketSource + ?Sized,
    R: ReadSide<S> + ?Sized,
    E: EngineSide,
{
    let analysis = cfg.analysis;
    let parse = cfg.parse;
    let announced = Arc::clone(&cfg.expected.exchanges);
    let jobs = Arc::clone(&cfg.expected.jobs);
    let filter = cfg.filter.clone().map(Matcher::new);
    // The engine side said stop: the reader stops at its next hand-over.
    let halt = AtomicBool::new(false);
    // A filter reads whole frames (a MAD's fields come from its payload), as the dissector does: the engine
    // thread parses them.
    let engine_parses = E::WHOLE_FRAMES || cfg.filter.is_some();
    let parsers = if engine_parses {
        0
    } else {
        cfg.threads.saturating_sub(2).min(MAX_PARSERS)
    };
    std::thread::scope(|s| {
        let lanes = lanes(s, parsers, parse).map_err(PipelineError::Thread)?;
        let parsed = lanes.to_engine;
        let (empty_tx, empty_rx) = channel::<Batch>();
        let halt = &halt;
        let engine = std::thread::Builder::new()
            .name("engine".to_string())
            .spawn_scoped(s, move || {
                let mut engine = Ingest {
                    engine: Engine::new(analysis),
                    parse,
                    side: engine_side,
                    filter,
                };
                for x in announced.iter() {
                    engine.engine.announce(x);
                }
                engine.engine.expect_jobs(jobs);
                // The batches come in the order they were read: a lane each, in turn.
                for mut batch in parsed.iter().cycle().map_while(|lane| lane.recv().ok()) {
                    if engine.batch(&mut batch).is_break() {
                        halt.store(true, Ordering::Relaxed);
                    }
                    batch.clear();
                    // The reader may have stopped already: then the batch is simply dropped.
                    let _ = empty_tx.send(batch);
                }
                (engine.engine, engine.side)
            })
            .map_err(PipelineError::Thread)?;
        let mut reading = Reading {
            parse,
            // The parsing threads take the frames whole.
            whole: engine_parses || parsers > 0,
            full: lanes.from_reader,
            sent: 0,
            empty: empty_rx,
            halt,
        };
        let (frames, error) = reading.all(source, read);
        drop(reading);
        let (mut engine, mut engine_side) = engine.join().map_err(|_| PipelineError::Panicked)?;
        // A parsing thread that panicked ended its lane, and with it the engine's batches: said, not a
        // capture cut short in silence.
        for parser in lanes.threads {
            parser.join().map_err(|_| PipelineError::Panicked)?;
        }
        engine_side.ending(&mut engine);
        engine.finish();
        Ok(Outcome {
            engine,
            engine_side,
            frames,
            error,
        })
    })
}

/// The lanes from the reading thread to the engine thread: one, or one through each of a few threads that
/// parse the frames of the batches they pass and check their ICRCs. Batch i goes through lane i % lanes.
struct Lanes<'scope> {
    from_reader: Vec<SyncSender<Batch>>,
    to_engine: Vec<Receiver<Batch>>,
    /// The parsing threads, if any.
    threads: Vec<std::thread::ScopedJoinHandle<'scope, ()>>,
}

/// [`Lanes`] through `parsers` parsing threads (none: one lane, straight).
fn lanes<'scope>(
    s: &'scope std::thread::Scope<'scope, '_>,
    parsers: usize,
    parse: parsers::Config,
) -> std::io::Result<Lanes<'scope>> {
    if parsers == 0 {
        let (tx, rx) = sync_channel::<Batch>(IN_FLIGHT);
        return Ok(Lanes {
            from_reader: vec![tx],
            to_engine: vec![rx],
            threads: Vec::new(),
        });
    }
    let (mut to_parse, mut parsed, mut threads) = (Vec::new(), Vec::new(), Vec::new());
    for k in 0..parsers {
        // One waiting each way: whole frames are all their bytes when the source's move on (a live
        // capture, standard input), and the lanes together hold about as many as the one lane without.
        let (tx, unparsed) = sync_channel::<Batch>(1);
        let (done, rx) = sync_channel::<Batch>(1);
        let thread = std::thread::Builder::new()
            .name(format!("parse-{k}"))
            .spawn_scoped(s, move || {
                for mut batch in unparsed {
                    batch.parse_whole(&parse);
                    if done.send(batch).is_err() {
                        // The engine thread is gone (it panicked): `run` reports it.
                        break;
                    }
                }
            })?;
        to_parse.push(tx);
        parsed.push(rx);
        threads.push(thread);
    }
    Ok(Lanes {
        from_reader: to_parse,
        to_engine: parsed,
        threads,
    })
}

/// The reading thread's state.
struct Reading<'h> {
    parse: parsers::Config,
    /// Send whole frames (the engine thread parses) instead of parsed ones.
    whole: bool,
    /// The lanes to the engine thread ([`lanes`]).
    full: Vec<SyncSender<Batch>>,
    /// Batches sent so far: the next goes through lane `sent % lanes`.
    sent: usize,
    empty: Receiver<Batch>,
    halt: &'h AtomicBool,
}

impl Reading<'_> {
    /// Reads, parses and batches until the end, an error or a stop; returns the frames read and the
    /// error, if any.
    fn all<S, R>(&mut self, source: &mut S, read: &mut R) -> (u64, Option<SourceError>)
    where
        S: PacketSource + ?Sized,
        R: ReadSide<S> + ?Sized,
    {
        let mut number = 0u64;
        let mut batch = Batch::default();
        let mut offset = 0;
        let error = loop {
            match source.next() {
                Ok(Next::Packet {
                    packet,
                    end,
                    stable,
                }) => {
                    number += 1;
                    offset = end;
                    if self.whole {
                        batch.push_whole(number, &packet, stable);
                    } else {
                        batch.push_parsed(number, &packet, stable, &self.parse);
                    }
                    if read.frame(number, &packet, end).is_break() {
                        break None;
                    }
                }
                Ok(Next::Idle) => {
                    if self
                        .hand_over(source, read, &mut batch, number, offset, true)
                        .is_break()
                    {
                        break None;
                    }
                    continue;
                }
                Ok(Next::End) => break None,
                Err(e) => break Some(e),
            }
            if batch.len() == BATCH
                && self
                    .hand_over(source, read, &mut batch, number, offset, false)
                    .is_break()
            {
                break None;
            }
        };
        let _ = self.hand_over(source, read, &mut batch, number, offset, false);
        (number, error)
    }

    fn hand_over<S, R>(
        &mut self,
        source: &mut S,
        read: &mut R,
        batch: &mut Batch,
        number: u64,
        offset: u64,
        idle: bool,
    ) -> ControlFlow<()>
    where
        S: PacketSource + ?Sized,
        R: ReadSide<S> + ?Sized,
    {
        let flow = read.handed_over(source, number, offset, idle);
        // An empty batch too, when idle: the engine side's clock (live snapshots) runs without traffic.
        if batch.len() > 0 || idle {
            batch.end = offset;
            let next = match self.empty.try_recv() {
                Ok(done) => {
                    // The engine is done with every frame of that batch, and of those before it.
                    source.done_before(done.end);
                    done
                }
                Err(_) => Batch::default(),
            };
            let lane = &self.full[self.sent % self.full.len()];
            self.sent = self.sent.wrapping_add(1);
            if lane.send(std::mem::replace(batch, next)).is_err() {
                // The engine thread is gone (it panicked): `run` reports it.
                return ControlFlow::Break(());
            }
        }
        if self.halt.load(Ordering::Relaxed) {
            return ControlFlow::Break(());
        }
        flow
    }
}

/// The engine thread's state.
struct Ingest<E> {
    engine: Engine,
    parse: parsers::Config,
    side: E,
    filter: Option<Matcher>,
}

impl<E: EngineSide> Ingest<E> {
    /// ICRC checks and ingestion of one batch, in capture order.
    fn batch(&mut self, batch: &mut Batch) -> ControlFlow<()> {
        let mut flow = ControlFlow::Continue(());
        for w in &batch.whole {
            let data = w.bytes.get(&batch.copies);
            let packet = Packet {
                ts_nanos: w.ts_nanos,
                linktype: w.linktype,
                interface: w.interface,
                data,
                orig_len: w.orig_len,
            };
            let frame = parse_frame(w.linktype, data, w.orig_len as usize, &self.parse);
            if let Some(m) = &mut self.filter {
                let s = Subject {
                    number: w.number,
                    packet: &packet,
                    frame: &frame,
                    interface: None,
                    analysis: None,
                };
                if !m.matches(&s) {
                    continue;
                }
            }
            let classified = self.engine.ingest(w.number, w.ts_nanos, &frame);
            self.side
                .examined(w.number, w.ts_nanos, &frame, classified, &self.engine);
            if flow.is_continue() {
                flow = self
                    .side
                    .frame(w.number, &packet, &frame, classified, &self.engine);
            }
        }
        // In place: a frame is a few hundred bytes, not worth moving again.
        let Batch { parsed, copies, .. } = batch;
        for p in parsed.iter_mut() {
            if p.parsed_again() {
                let bytes = p.bytes.get(copies);
                let frame = parse_frame(p.linktype, bytes, p.frame.orig_len, &self.parse);
                let classified = self.engine.ingest(p.number, p.ts_nanos, &frame);
                self.side
                    .examined(p.number, p.ts_nanos, &frame, classified, &self.engine);
                continue;
            }
            p.check_icrc(copies);
            let classified = self.engine.ingest(p.number, p.ts_nanos, &p.frame);
            self.side
                .examined(p.number, p.ts_nanos, &p.frame, classified, &self.engine);
        }
        self.side.batch_done(&self.engine);
        flow
    }
}

/// Where a frame's bytes are for the engine thread.
enum Bytes {
    /// Not needed (no ICRC to check).
    None,
    /// Copied into [`Batch::copies`].
    Copied(Range<usize>),
    /// In place in the source (a memory-mapped file), which outlives the run.
    Stable(*const u8, usize),
}

impl Bytes {
    /// The bytes, from `copies` (the batch's) or in place.
    fn get<'b>(&'b self, copies: &'b [u8]) -> &'b [u8] {
        match self {
            Bytes::None => &[],
            Bytes::Copied(r) => copies.get(r.clone()).unwrap_or_default(),
            // SAFETY: see `Send for Batch`: the source's bytes outlive the batch, unchanged.
            Bytes::Stable(ptr, len) => unsafe { std::slice::from_raw_parts(*ptr, *len) },
        }
    }
}

/// A frame parsed on the reading thread, without its bytes (but those its ICRC check needs).
struct Parsed {
    number: u64,
    ts_nanos: u64,
    /// For a GSI frame read from a copy, parsed again on the engine thread.
    linktype: u16,
    frame: Frame<'static>,
    bytes: Bytes,
}

/// A frame to parse on the engine thread: its packet and its bytes.
struct Whole {
    number: u64,
    ts_nanos: u64,
    linktype: u16,
    interface: u32,
    orig_len: u32,
    bytes: Bytes,
}

impl Parsed {
    /// A MAD is read from the payload, which a detached frame lacks: the engine thread parses its copy
    /// again.
    fn parsed_again(&self) -> bool {
        self.frame.data.is_empty() && self.frame.roce.is_some_and(|r| r.is_gsi())
    }

    /// Checks the ICRC left for later, if it was.
    fn check_icrc(&mut self, copies: &[u8]) {
        if let Some(r) = &mut self.frame.roce
            && let Some(cover) = r.icrc_deferred.take()
        {
            r.icrc_status = Some(cover.check(self.bytes.get(copies)));
        }
    }
}

/// `data` parsed, the ICRC left for later, into a frame that outlives the borrow: over the bytes in place
/// when they are stable, else detached from them.
fn parse_kept(
    linktype: u16,
    data: &[u8],
    orig_len: u32,
    stable: bool,
    parse: &parsers::Config,
) -> Frame<'static> {
    if stable {
        // SAFETY: see `Send for Batch`: stable bytes outlive the run, unchanged; the frame borrows them for
        // no longer.
        let data: &'static [u8] = unsafe { std::slice::from_raw_parts(data.as_ptr(), data.len()) };
        return parse_frame_deferred(linktype, data, orig_len as usize, parse);
    }
    parse_frame_deferred(linktype, data, orig_len as usize, parse).detached()
}

/// Frames going to the engine thread, one kind or the other.
#[derive(Default)]
struct Batch {
    parsed: Vec<Parsed>,
    whole: Vec<Whole>,
    copies: Vec<u8>,
    /// The input's offset after its last frame.
    end: u64,
}

// SAFETY: a batch's `Bytes::Stable` pointers point into a source whose bytes stay in place and unchanged
// until it is dropped ([`Next::Packet`]'s `stable`); `run` borrows the source until the engine thread has
// ended, so the bytes outlive every batch, and no one writes to them.
unsafe impl Send for Batch {}

impl Batch {
    fn len(&self) -> usize {
        self.parsed.len() + self.whole.len()
    }

    fn push_parsed(&mut self, number: u64, p: &Packet, stable: bool, parse: &parsers::Config) {
        let frame = parse_kept(p.linktype, p.data, p.orig_len, stable, parse);
        let bytes = if stable
            || frame
                .roce
                .is_some_and(|r| r.icrc_deferred.is_some() || r.is_gsi())
        {
            self.keep(p.data, stable)
        } else {
            Bytes::None
        };
        self.parsed.push(Parsed {
            number,
            ts_nanos: p.ts_nanos,
            linktype: p.linktype,
            frame,
            bytes,
        });
    }

    fn push_whole(&mut self, number: u64, p: &Packet, stable: bool) {
        let bytes = self.keep(p.data, stable);
        self.whole.push(Whole {
            number,
            ts_nanos: p.ts_nanos,
            linktype: p.linktype,
            interface: p.interface,
            orig_len: p.orig_len,
            bytes,
        });
    }

    /// Where the engine thread will find `data`: in place when it is stable, else in a copy.
    fn keep(&mut self, data: &[u8], stable: bool) -> Bytes {
        if stable {
            return Bytes::Stable(data.as_ptr(), data.len());
        }
        let at = self.copies.len();
        self.copies.extend_from_slice(data);
        Bytes::Copied(at..self.copies.len())
    }

    /// Parses the frames read whole, as the reading thread would have, and checks their ICRCs (but those
    /// of MADs, which the engine thread parses again).
    fn parse_whole(&mut self, parse: &parsers::Config) {
        let Batch {
            parsed,
            whole,
            copies,
            ..
        } = self;
        for w in whole.drain(..) {
            let stable = matches!(w.bytes, Bytes::Stable(..));
            let frame = parse_kept(w.linktype, w.bytes.get(copies), w.orig_len, stable, parse);
            let mut p = Parsed {
                number: w.number,
                ts_nanos: w.ts_nanos,
                linktype: w.linktype,
                frame,
                bytes: w.bytes,
            };
            if !p.parsed_again() {
                p.check_icrc(copies);
            }
            parsed.push(p);
        }
    }

    fn clear(&mut self) {
        self.parsed.clear();
        self.whole.clear();
        self.copies.clear();
    }
}
