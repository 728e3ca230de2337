//! The TUI's access to a capture file: one analysis pass that also indexes the frames (frame number ->
//! byte offset), random access to any frame through that index, the per-flow PSN/time points of the flow
//! chart, and the packet list rows, `-V` trees and hex dumps of single frames.
use std::fs::File;
use std::io::{self, Cursor, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use std::ops::ControlFlow;

use parsers::aeth::Syndrome;
use parsers::psn::Unwrapper;
use parsers::{Frame, parse_frame};

use crate::analysis::{Class, Classified, Counted};
use crate::capture::ring::{Rec, Ring};
use crate::dissect::{self, Mac, Shown};
use crate::filter::{Analysis, Filter, Matcher, Subject};
use crate::pipeline::{self, EngineSide, ReadSide};
use crate::report::Report;
use crate::report::format::round_step;
use crate::source::{CaptureFormat, FileSource, Packet};

/// Why frames, a flow's series or a packet could not be read.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    #[error("filter")]
    Filter(#[source] crate::filter::FilterError),
    #[error(
        "filter: rocescope.event and rocescope.severity are rocescope dissect -Y's (the packet list has \
         the analysis' classes: rocescope.class, .flow, .retransmission)"
    )]
    EventsFilter,
    /// The capture file at `path` could not be read again.
    #[error("{}", .path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(transparent)]
    Source(#[from] crate::source::SourceError),
    #[error(transparent)]
    Pipeline(#[from] pipeline::PipelineError),
    #[error("no flow {0}")]
    NoFlow(u64),
    #[error("frame {0} is not in the capture")]
    NoFrame(u64),
    /// Live capture: the frame has left the ring.
    #[error(
        "frame {frame} has left the capture buffer (it keeps the last {} frames or {} MiB)",
        crate::capture::ring::MAX_FRAMES,
        crate::capture::ring::MAX_BYTES >> 20
    )]
    LeftRing { frame: u64 },
}

/// The frames of the file the display filter `text` passes, each with how the engine counted it
/// (`rocescope.class`, `.flow`, `.retransmission`; the events are `dissect -Y`'s).
pub fn matching(index: &Index, text: &str) -> Result<Vec<u64>, DataError> {
    let filter = Filter::new(text).map_err(DataError::Filter)?;
    if filter.events {
        return Err(DataError::EventsFilter);
    }
    let mut m = Matcher::new(Arc::new(filter));
    let all: Vec<u64> = (1..=index.len()).collect();
    let pcapng = index.format == CaptureFormat::PcapNg;
    let mut out = Vec::new();
    index.read_frames(&all, |n, p, frame| {
        let s = Subject {
            number: n,
            packet: p,
            frame,
            interface: pcapng.then_some(p.interface),
            analysis: Some(Analysis {
                counted: index.counted(n),
                events: &[],
            }),
        };
        if m.matches(&s) {
            out.push(n);
        }
    })?;
    Ok(out)
}

/// Most PSN/time points kept for one flow's chart (downsampled past this; gaps, retransmissions and NAKs
/// are always kept).
pub const MAX_POINTS: usize = 100_000;

/// Most frame numbers kept for one flow's packet list.
pub const MAX_FLOW_FRAMES: usize = 2_000_000;

/// Frame number -> where its record ends in the file, for reading any frame again without a pass.
#[derive(Debug, Clone)]
pub struct Index {
    pub path: PathBuf,
    pub format: CaptureFormat,
    /// pcap: the 24-byte file header, put before a record to read it alone. pcapng whose packets are
    /// plain enhanced packet blocks one after the other: the blocks before the first packet (section
    /// header, interfaces), put before a block to read it alone. Empty for other pcapng files, which are
    /// read sequentially.
    header: Vec<u8>,
    /// End offset of frame n+1's record (frame numbers start at 1).
    ends: Vec<u64>,
    /// Time of the first frame (nanoseconds since the epoch), for relative times.
    pub first_ts: u64,
    pub parse: parsers::Config,
    /// How the engine counted frame n+1: its flow ([`NO_FLOW`] for none) and class.
    flows: Vec<u32>,
    classes: Vec<Class>,
}

impl Index {
    /// Number of frames indexed.
    pub fn len(&self) -> u64 {
        self.ends.len() as u64
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Reads the frames `numbers` (1-based, ascending) and hands each one, parsed, to `f`. pcap: each
    /// record is read on its own, from its offset; pcapng (whose records need the interfaces declared
    /// before them): one sequential pass from the start up to the last frame wanted.
    pub fn read_frames(
        &self,
        numbers: &[u64],
        mut f: impl FnMut(u64, &Packet, &Frame),
    ) -> Result<(), DataError> {
        if numbers.is_empty() {
            return Ok(());
        }
        // Many frames (a flow's chart): one pass reads them faster than a seek each.
        let dense = numbers.len() as u64 > self.len() / 16;
        match self.format {
            CaptureFormat::Pcap | CaptureFormat::PcapNg if !self.header.is_empty() && !dense => {
                let mut file = File::open(&self.path).map_err(|e| self.err(e))?;
                for &n in numbers {
                    let Some((start, end)) = self.span(n) else {
                        continue;
                    };
                    file.seek(SeekFrom::Start(start)).map_err(|e| self.err(e))?;
                    let mut rec = vec![0; (end - start) as usize];
                    file.read_exact(&mut rec).map_err(|e| self.err(e))?;
                    let mut bytes = self.header.clone();
                    bytes.extend_from_slice(&rec);
                    let mut src =
                        FileSource::from_reader(self.name(), Box::new(Cursor::new(bytes)))?;
                    if let Some(p) = src.next_packet()? {
                        let frame =
                            parse_frame(p.linktype, p.data, p.orig_len as usize, &self.parse);
                        f(n, &p, &frame);
                    }
                }
                Ok(())
            }
            _ => {
                let mut src = FileSource::open(&self.path)?;
                let last = *numbers.iter().max().unwrap_or(&0);
                let mut wanted = numbers.iter().copied().peekable();
                let mut n = 0u64;
                while n < last {
                    let Some(p) = src.next_packet()? else {
                        break;
                    };
                    n += 1;
                    while wanted.next_if(|w| *w < n).is_some() {}
                    if wanted.next_if_eq(&n).is_some() {
                        let frame =
                            parse_frame(p.linktype, p.data, p.orig_len as usize, &self.parse);
                        f(n, &p, &frame);
                    }
                }
                Ok(())
            }
        }
    }

    /// How the engine counted frame `n` (1-based).
    pub fn counted(&self, n: u64) -> Counted {
        let i = n.saturating_sub(1) as usize;
        Counted {
            flow: self
                .flows
                .get(i)
                .copied()
                .filter(|&f| f != NO_FLOW)
                .map(u64::from),
            class: self.classes.get(i).copied().unwrap_or_default(),
        }
    }

    /// The frames (ascending) the engine counted in any of `flows`.
    pub fn frames_of(&self, flows: &[u64]) -> Vec<u64> {
        (1..=self.len())
            .filter(|&n| self.counted(n).flow.is_some_and(|f| flows.contains(&f)))
            .collect()
    }

    /// True when any frame is read from its offset (else by a sequential pass).
    pub fn random_access(&self) -> bool {
        !self.header.is_empty()
    }

    /// Byte range of frame `n`'s record or block.
    fn span(&self, n: u64) -> Option<(u64, u64)> {
        let i = usize::try_from(n.checked_sub(1)?).ok()?;
        let end = *self.ends.get(i)?;
        let start = if i == 0 {
            self.header.len() as u64
        } else {
            self.ends[i - 1]
        };
        Some((start, end))
    }

    fn name(&self) -> String {
        self.path.display().to_string()
    }

    fn err(&self, source: io::Error) -> DataError {
        DataError::Read {
            path: self.path.clone(),
            source,
        }
    }
}

/// Why [`analyze`] gave no report.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The progress callback said stop (the user quit).
    #[error("stopped")]
    Stopped,
    /// The capture could not be read.
    #[error(transparent)]
    Failed(#[from] DataError),
}

impl From<crate::source::SourceError> for LoadError {
    fn from(e: crate::source::SourceError) -> LoadError {
        LoadError::Failed(e.into())
    }
}

impl From<pipeline::PipelineError> for LoadError {
    fn from(e: pipeline::PipelineError) -> LoadError {
        LoadError::Failed(e.into())
    }
}

/// Analyses the capture and indexes its frames in one pass of the pipeline: where each record ends (reading
/// thread) and how the engine counted each frame (engine thread). `progress(frames, bytes_read)` is called
/// every few thousand frames; returning false from it stops the pass (the user quit).
pub fn analyze(
    path: &Path,
    cfg: &pipeline::Config,
    progress: impl FnMut(u64, u64) -> bool,
) -> Result<(Report, Index), LoadError> {
    let mut src = FileSource::open(path)?;
    let format = src.format();
    let mut indexing = Indexing {
        ends: Vec::new(),
        first_ts: None,
        ng_prefix: None,
        ng_plain: format == CaptureFormat::PcapNg,
        progress,
        stopped: false,
    };
    let run = pipeline::run(&mut src, cfg, &mut indexing, Classes::default())?;
    if indexing.stopped {
        return Err(LoadError::Stopped);
    }

    let header = match format {
        CaptureFormat::Pcap => read_prefix(path, 24)?,
        CaptureFormat::PcapNg => plain_pcapng_prefix(path, &indexing)?,
    };
    let mut report = Report::build(&run.engine, src.name());
    if let Some(e) = run.error {
        // A capture cut short (a killed tcpdump): what was read is analysed, and the report says so.
        report.cut_short(e.to_string());
    }
    let classes = run.engine_side;
    let index = Index {
        path: path.to_path_buf(),
        format,
        header,
        ends: indexing.ends,
        first_ts: indexing.first_ts.unwrap_or(0),
        parse: cfg.parse,
        flows: classes.flows,
        classes: classes.classes,
    };
    Ok((report, index))
}

/// The reading side of [`analyze`]: where each record ends, and whether a pcapng's packets are plain
/// enhanced packet blocks one after the other (then any one can be read alone, after the blocks before the
/// first).
struct Indexing<P> {
    ends: Vec<u64>,
    first_ts: Option<u64>,
    /// pcapng: where the first packet block starts.
    ng_prefix: Option<u64>,
    ng_plain: bool,
    progress: P,
    stopped: bool,
}

impl<P: FnMut(u64, u64) -> bool> ReadSide<FileSource> for Indexing<P> {
    fn frame(&mut self, _number: u64, p: &Packet, end: u64) -> ControlFlow<()> {
        self.first_ts.get_or_insert(p.ts_nanos);
        // An enhanced packet block without options: 32 bytes of framing and the padded data.
        let block = 32 + (p.data.len() as u64).div_ceil(4) * 4;
        if self.ng_plain {
            match self.ends.last() {
                None => self.ng_prefix = end.checked_sub(block),
                Some(&prev) => self.ng_plain = end - prev == block,
            }
        }
        self.ends.push(end);
        ControlFlow::Continue(())
    }

    fn handed_over(
        &mut self,
        _source: &mut FileSource,
        frames: u64,
        offset: u64,
        _idle: bool,
    ) -> ControlFlow<()> {
        if frames.is_multiple_of(4096) && !(self.progress)(frames, offset) {
            self.stopped = true;
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    }
}

/// The engine side of [`analyze`]: each frame's flow and class.
#[derive(Default)]
struct Classes {
    flows: Vec<u32>,
    classes: Vec<Class>,
}

impl EngineSide for Classes {
    fn examined(
        &mut self,
        _number: u64,
        _ts_nanos: u64,
        _frame: &parsers::Frame,
        c: Classified,
        _engine: &crate::analysis::Engine,
    ) {
        // A flow numbered past u32 (four billion flows) is shown as none.
        let number = c.flow.map(|f| f.number());
        self.flows.push(
            number
                .and_then(|n| u32::try_from(n).ok())
                .unwrap_or(NO_FLOW),
        );
        self.classes.push(c.class);
    }
}

/// A frame the engine counted in no flow.
const NO_FLOW: u32 = u32::MAX;

/// The error of reading `path` again.
fn reading(path: &Path) -> impl FnOnce(io::Error) -> DataError {
    let path = path.to_path_buf();
    |source| DataError::Read { path, source }
}

fn read_prefix(path: &Path, len: usize) -> Result<Vec<u8>, DataError> {
    let mut header = vec![0; len];
    File::open(path)
        .and_then(|mut f| f.read_exact(&mut header))
        .map_err(reading(path))?;
    Ok(header)
}

/// The blocks before the first packet of a pcapng whose packets are plain enhanced packet blocks (empty
/// otherwise: its frames are read by a sequential pass).
fn plain_pcapng_prefix<P>(path: &Path, ix: &Indexing<P>) -> Result<Vec<u8>, DataError> {
    let Some(len) = ix
        .ng_prefix
        .filter(|&l| ix.ng_plain && l > 0 && l <= 1 << 20)
    else {
        return Ok(Vec::new());
    };
    let header = read_prefix(path, len as usize)?;
    // The block there must be an enhanced packet block (type 6, either byte order).
    let mut head = [0u8; 4];
    File::open(path)
        .and_then(|mut f| {
            f.seek(SeekFrom::Start(len))?;
            f.read_exact(&mut head)
        })
        .map_err(reading(path))?;
    Ok(if head == [6, 0, 0, 0] || head == [0, 0, 0, 6] {
        header
    } else {
        Vec::new()
    })
}

/// What a point of the PSN chart is: the engine's own classification of the frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PointKind {
    /// A request at the next expected PSN.
    Request,
    /// A request ahead of the next expected PSN (the PSNs between are missing).
    Gap,
    /// A request at or behind the highest PSN seen.
    Retransmission,
    /// A NAK (or RNR NAK) from the paired responder, at the PSN it names.
    Nak,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PsnPoint {
    /// Seconds since the first frame of the capture.
    pub t: f64,
    /// PSN unwrapped past 24 bits (the first request PSN is its own value).
    pub psn: i64,
    pub kind: PointKind,
    pub frame: u64,
}

/// A flow's PSN/time points and its frames (with its paired flow's), read when its detail opens.
#[derive(Debug, Clone, Default)]
pub struct FlowSeries {
    pub flow: u64,
    pub points: Vec<PsnPoint>,
    /// Request points kept one in `stride` (1 when none was dropped).
    pub stride: u64,
    /// Frame numbers of the flow and of its paired flow, ascending.
    pub frames: Vec<u64>,
    /// More frames than [`MAX_FLOW_FRAMES`]: the list stops there.
    pub frames_truncated: bool,
    /// The flow's bytes on the wire in slices of its life, at most [`THROUGHPUT_BUCKETS`].
    pub throughput: Vec<u64>,
    /// Width of one slice, seconds: a round figure (1, 2 or 5 × 10^k).
    pub bucket_s: f64,
    /// The slices in which a CNP toward the flow's sender passed (a CNP of the paired flow).
    pub cnp_marks: Vec<bool>,
}

impl FlowSeries {
    /// The time and PSN ranges of the points: (first time, last time, lowest PSN, highest PSN); `None`
    /// without points.
    pub fn bounds(&self) -> Option<(f64, f64, f64, f64)> {
        let first = self.points.first()?;
        let init = (first.t, first.t, first.psn as f64, first.psn as f64);
        Some(self.points.iter().fold(init, |(t0, t1, p0, p1), p| {
            (
                t0.min(p.t),
                t1.max(p.t),
                p0.min(p.psn as f64),
                p1.max(p.psn as f64),
            )
        }))
    }
}

/// Slices of a flow's life in its detail's throughput graph.
pub const THROUGHPUT_BUCKETS: usize = 200;

/// One flow's series as its frames come in, in capture order: the points are the frames the engine
/// classified as the flow's requests and its paired flow's NAKs.
struct SeriesBuilder {
    out: FlowSeries,
    pair: Option<u64>,
    first_ts: u64,
    first_ns: u64,
    /// The last request's PSN: the reference for unwrapping.
    unwrap: Unwrapper,
    requests_seen: u64,
}

impl SeriesBuilder {
    fn new(report: &Report, flow: u64, first_ts: u64) -> Result<SeriesBuilder, DataError> {
        let f = report.flow(flow).ok_or(DataError::NoFlow(flow))?;
        let life_ns = ((f.last_time - f.first_time) * 1e9).max(1.0);
        let bucket_s = round_step(life_ns / 1e9 / THROUGHPUT_BUCKETS as f64);
        let buckets = ((life_ns / 1e9 / bucket_s).floor() as usize + 1).min(THROUGHPUT_BUCKETS);
        Ok(SeriesBuilder {
            out: FlowSeries {
                flow,
                stride: 1,
                throughput: vec![0; buckets],
                cnp_marks: vec![false; buckets],
                bucket_s,
                ..Default::default()
            },
            pair: f.paired_with,
            first_ts,
            first_ns: (f.first_time * 1e9) as u64,
            unwrap: Unwrapper::default(),
            requests_seen: 0,
        })
    }

    /// True when frames counted in `flow` belong to this series.
    fn wants(&self, flow: Option<u64>) -> bool {
        flow.is_some() && (flow == Some(self.out.flow) || flow == self.pair)
    }

    /// Adds a frame the engine counted as `c` (in this flow or its pair), with its time, length and PSN.
    fn frame(&mut self, number: u64, ts: u64, orig_len: u32, psn: u32, c: Counted) {
        if self.out.frames.len() < MAX_FLOW_FRAMES {
            self.out.frames.push(number);
        } else {
            self.out.frames_truncated = true;
        }
        let mine = c.flow == Some(self.out.flow);
        let t = ts.saturating_sub(self.first_ts) as f64 / 1e9;
        let at = ts.saturating_sub(self.first_ns) as f64 / 1e9 / self.out.bucket_s;
        let b = (at as usize).min(self.out.throughput.len() - 1);
        if mine {
            self.out.throughput[b] += u64::from(orig_len);
        } else if c.class == Class::Cnp {
            self.out.cnp_marks[b] = true;
        }
        let kind = match c.class {
            // Held up on the way: a request in its place.
            Class::Request | Class::Reordered if mine => PointKind::Request,
            Class::Gap if mine => PointKind::Gap,
            Class::Retransmission if mine => PointKind::Retransmission,
            Class::Nak | Class::RnrNak if !mine => PointKind::Nak,
            _ => return,
        };
        let psn = if kind == PointKind::Nak {
            self.unwrap.peek(psn)
        } else {
            self.unwrap.unwrap(psn)
        };
        if kind == PointKind::Request {
            self.requests_seen += 1;
            if !self.requests_seen.is_multiple_of(self.out.stride) {
                return;
            }
        }
        self.out.points.push(PsnPoint {
            t,
            psn,
            kind,
            frame: number,
        });
        if self.out.points.len() >= MAX_POINTS {
            self.downsample();
        }
    }

    /// Every other plain request goes; the marked points stay.
    fn downsample(&mut self) {
        self.out.stride *= 2;
        let mut i = 0u64;
        self.out.points.retain(|pt| {
            if pt.kind != PointKind::Request {
                return true;
            }
            i += 1;
            i.is_multiple_of(2)
        });
        if self.out.points.len() >= MAX_POINTS {
            // Only marked points left: keep the first ones.
            self.out.points.truncate(MAX_POINTS / 2);
        }
    }
}

/// Bytes on the wire of each of `flows` in `buckets` slices of `bucket_s` seconds from the capture's first
/// frame, in one read of their frames.
pub fn throughput_of(
    index: &Index,
    flows: &[u64],
    bucket_s: f64,
    buckets: usize,
) -> Result<Vec<Vec<u64>>, DataError> {
    let mut out = vec![vec![0u64; buckets.max(1)]; flows.len()];
    index.read_frames(&index.frames_of(flows), |n, p, _| {
        let Some(i) = index
            .counted(n)
            .flow
            .and_then(|f| flows.iter().position(|&x| x == f))
        else {
            return;
        };
        let at = p.ts_nanos.saturating_sub(index.first_ts) as f64 / 1e9 / bucket_s;
        let line = &mut out[i];
        let last = line.len() - 1;
        line[(at as usize).min(last)] += u64::from(p.orig_len);
    })?;
    Ok(out)
}

/// The series of one flow, from its frames in the file.
pub fn flow_series(index: &Index, report: &Report, flow: u64) -> Result<FlowSeries, DataError> {
    let mut all = series_of(index, report, &[flow])?;
    all.pop().ok_or(DataError::NoFlow(flow))
}

/// The series of several flows in one read of their frames (at most one pass over the file).
pub fn series_of(
    index: &Index,
    report: &Report,
    flows: &[u64],
) -> Result<Vec<FlowSeries>, DataError> {
    let mut builders = flows
        .iter()
        .map(|&f| SeriesBuilder::new(report, f, index.first_ts))
        .collect::<Result<Vec<_>, _>>()?;
    let numbers: Vec<u64> = (1..=index.len())
        .filter(|&n| {
            let c = index.counted(n);
            builders.iter().any(|b| b.wants(c.flow))
        })
        .collect();
    index.read_frames(&numbers, |n, p, frame| {
        let (Some(r), c) = (&frame.roce, index.counted(n)) else {
            return;
        };
        for b in builders.iter_mut().filter(|b| b.wants(c.flow)) {
            b.frame(n, p.ts_nanos, p.orig_len, r.bth.psn, c);
        }
    })?;
    Ok(builders.into_iter().map(|b| b.out).collect())
}

/// One line of the packet list.
#[derive(Debug, Clone, PartialEq)]
pub struct PacketRow {
    pub number: u64,
    /// Seconds since the first frame.
    pub time: f64,
    pub src: String,
    pub dst: String,
    pub qp: Option<u32>,
    /// Opcode name, or the protocol of a non-RoCE frame.
    pub opcode: String,
    /// The opcode's short name (`WR_F`) for narrow terminals; the protocol of a non-RoCE frame.
    pub opcode_short: String,
    pub psn: Option<u32>,
    /// SE, AckReq, FECN, BECN, CE, then ACK/NAK/RNR, ICRC and damage notes.
    pub info: String,
    /// Something is wrong with it (NAK, bad ICRC, malformed).
    pub bad: bool,
    /// The flow the engine counted it in (its number).
    pub flow: Option<u64>,
}

/// The list row of a frame.
pub fn packet_row(number: u64, p: &Packet, frame: &Frame, first_ts: u64) -> PacketRow {
    let (src, dst) = match (frame.src(), frame.dst()) {
        (Some(s), Some(d)) => (s.to_string(), d.to_string()),
        _ => match frame.link {
            Some(parsers::frame::Link::Ethernet(e)) => {
                (Mac(e.src).to_string(), Mac(e.dst).to_string())
            }
            _ => ("?".into(), "?".into()),
        },
    };
    let mut info = Vec::new();
    let mut bad = false;
    let (qp, opcode, psn) = match &frame.roce {
        Some(r) => {
            let b = &r.bth;
            info.extend(b.flag_names().map(str::to_string));
            if frame.ecn() == Some(3) {
                info.push("CE".into());
            }
            if let Some(aeth) = r.ext.aeth {
                match aeth.decoded() {
                    Syndrome::Ack { .. } => info.push(format!("ACK MSN={}", aeth.msn)),
                    s @ Syndrome::RnrNak { .. } => {
                        bad = true;
                        let us = s.rnr_micros().unwrap_or(0);
                        info.push(format!("RNR-NAK {}.{:02}ms", us / 1000, (us % 1000) / 10));
                    }
                    Syndrome::Nak(code) => {
                        bad = true;
                        info.push(format!("NAK({})", code.name()));
                    }
                    Syndrome::Reserved { value } => info.push(format!("syndrome {value}")),
                }
            }
            if let Some(reth) = r.ext.reth {
                info.push(format!("len={}", reth.dma_len));
            }
            if let Some(parsers::icrc::IcrcStatus::Bad { .. }) = r.icrc_status {
                bad = true;
                info.push("[ICRC bad]".into());
            }
            let names = (b.op().name().to_string(), b.op().short_name().to_string());
            (Some(b.dest_qp), names, Some(b.psn))
        }
        None => {
            let proto = if frame.mac_control.is_some() {
                "PAUSE/PFC".to_string()
            } else if frame.udp.is_some() {
                "UDP".to_string()
            } else if frame.ip.is_some() {
                "IP".to_string()
            } else {
                match frame.ethertype {
                    Some(t) => format!("0x{t:04x}"),
                    None => "?".to_string(),
                }
            };
            (None, (proto.clone(), proto), None)
        }
    };
    if let Some(m) = &frame.malformed {
        bad = true;
        info.push(format!("[malformed: {m}]"));
    }
    PacketRow {
        number,
        time: p.ts_nanos.saturating_sub(first_ts) as f64 / 1e9,
        src,
        dst,
        qp,
        opcode: opcode.0,
        opcode_short: opcode.1,
        psn,
        info: info.join(" "),
        bad,
        flow: None,
    }
}

/// One open packet: its `-V` tree (header lines and indented fields) and its hex dump.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PacketDetail {
    pub number: u64,
    /// (is a header line, text).
    pub tree: Vec<(bool, String)>,
    pub hex: Vec<String>,
    /// The tree line it opens at: the BTH's, else the first.
    pub opens_at: u16,
}

/// The `-V` tree and hex dump of a frame, as `dissect -V -x` writes them.
pub fn packet_detail(number: u64, p: &Packet, frame: &Frame) -> PacketDetail {
    let shown = Shown {
        number,
        rel_nanos: 0,
        packet: p,
    };
    let mut tree = Vec::new();
    let mut hex = Vec::new();
    // Writing into a Vec cannot fail.
    let _ = dissect::tree::write(&mut tree, &shown, frame);
    let _ = dissect::tree::write_hex(&mut hex, p.data);
    let lines = |bytes: Vec<u8>| -> Vec<String> {
        String::from_utf8_lossy(&bytes)
            .lines()
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect()
    };
    let tree: Vec<(bool, String)> = lines(tree)
        .into_iter()
        .map(|l| match l.strip_prefix("    ") {
            Some(field) => (false, field.to_string()),
            None => (true, l),
        })
        .collect();
    let opens_at = tree
        .iter()
        .position(|(header, l)| *header && l.starts_with(parsers::bth::Bth::TITLE))
        .unwrap_or(0);
    PacketDetail {
        number,
        tree,
        hex: lines(hex),
        opens_at: u16::try_from(opens_at).unwrap_or(0),
    }
}

/// Reads list rows for `numbers`.
pub fn rows(index: &Index, numbers: &[u64]) -> Result<Vec<PacketRow>, DataError> {
    let mut out = Vec::with_capacity(numbers.len());
    index.read_frames(numbers, |n, p, f| {
        out.push(PacketRow {
            flow: index.counted(n).flow,
            ..packet_row(n, p, f, index.first_ts)
        })
    })?;
    Ok(out)
}

/// Reads the tree and hex of frame `number`.
pub fn detail(index: &Index, number: u64) -> Result<PacketDetail, DataError> {
    let mut out = None;
    index.read_frames(&[number], |n, p, f| out = Some(packet_detail(n, p, f)))?;
    out.ok_or(DataError::NoFrame(number))
}

/// Live capture: the frames of `numbers` still in the ring, with the ring's link type and first time (the
/// lock is held only to take the frames, not to parse them).
fn ring_frames(ring: &Mutex<Ring>, numbers: &[u64]) -> (Vec<Rec>, u16, u64) {
    let r = ring.lock().unwrap_or_else(|p| p.into_inner());
    let recs = numbers.iter().filter_map(|&n| r.get(n)).collect();
    (recs, r.linktype, r.first_ts.unwrap_or(0))
}

fn rec_packet(rec: &Rec, linktype: u16) -> Packet<'_> {
    Packet {
        ts_nanos: rec.ts_nanos,
        linktype,
        interface: 0,
        data: rec.data(),
        orig_len: rec.orig_len,
    }
}

/// Live capture: list rows for `numbers` (a frame that has left the ring gets a row saying so).
pub fn ring_rows(ring: &Mutex<Ring>, parse: parsers::Config, numbers: &[u64]) -> Vec<PacketRow> {
    let (recs, linktype, first_ts) = ring_frames(ring, numbers);
    let mut out: Vec<PacketRow> = recs
        .iter()
        .map(|rec| {
            let p = rec_packet(rec, linktype);
            let frame = parse_frame(linktype, p.data, p.orig_len as usize, &parse);
            PacketRow {
                flow: rec.classified.flow,
                ..packet_row(rec.number, &p, &frame, first_ts)
            }
        })
        .collect();
    for &n in numbers {
        if !recs.iter().any(|r| r.number == n) {
            out.push(PacketRow {
                number: n,
                time: 0.0,
                src: String::new(),
                dst: String::new(),
                qp: None,
                opcode: "(left the buffer)".to_string(),
                opcode_short: "(gone)".to_string(),
                psn: None,
                info: String::new(),
                bad: false,
                flow: None,
            });
        }
    }
    out
}

/// Live capture: the tree and hex of frame `number`, if the ring still holds it.
pub fn ring_detail(
    ring: &Mutex<Ring>,
    parse: parsers::Config,
    number: u64,
) -> Result<PacketDetail, DataError> {
    let (recs, linktype, _) = ring_frames(ring, &[number]);
    let rec = recs.first().ok_or(DataError::LeftRing { frame: number })?;
    let p = rec_packet(rec, linktype);
    let frame = parse_frame(linktype, p.data, p.orig_len as usize, &parse);
    Ok(packet_detail(number, &p, &frame))
}

/// Live capture: a flow's PSN points and frames, from the frames the ring holds.
pub fn ring_series(
    ring: &Mutex<Ring>,
    parse: parsers::Config,
    report: &Report,
    flow: u64,
) -> Result<FlowSeries, DataError> {
    let (recs, linktype, first_ts) = {
        let r = ring.lock().unwrap_or_else(|p| p.into_inner());
        (r.all(), r.linktype, r.first_ts.unwrap_or(0))
    };
    let mut b = SeriesBuilder::new(report, flow, first_ts)?;
    for rec in &recs {
        if !b.wants(rec.classified.flow) {
            continue;
        }
        let p = rec_packet(rec, linktype);
        let frame = parse_frame(linktype, p.data, p.orig_len as usize, &parse);
        if let Some(r) = frame.roce {
            b.frame(
                rec.number,
                rec.ts_nanos,
                rec.orig_len,
                r.bth.psn,
                rec.classified,
            );
        }
    }
    Ok(b.out)
}
