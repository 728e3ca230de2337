//! `rocescope dissect`: one line, a field tree, a JSON object or tshark's `-T fields` columns per frame,
//! for the frames the quick selections (`--all`, `--qp`, `--opcode`) and the display filter (`-Y`) pass.
mod fields;
mod json;
mod line;
pub(crate) mod tree;

use std::io::{self, BufWriter, Write};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parsers::opcode::Opcode;
use parsers::{Config, Frame};

use crate::analysis::{Classified, Engine, FlowId};
use crate::filter::{self, Analysis, Matcher, Subject};
use crate::pipeline::{self, EngineSide};
use crate::source::{CaptureFormat, FileSource, Packet};

pub use fields::{Column, Columns, FieldsError, FieldsOption, Occurrence, Quote};

/// Why the frames could not be shown.
#[derive(Debug, thiserror::Error)]
pub enum DissectError {
    #[error(
        "rocescope.event and rocescope.severity need the capture twice (the events come from the whole \
         analysis): give a file, not standard input"
    )]
    EventsFromStdin,
    #[error(transparent)]
    Source(#[from] crate::source::SourceError),
    #[error(transparent)]
    Pipeline(#[from] pipeline::PipelineError),
    #[error("cannot write the output")]
    Write(#[source] io::Error),
}

/// How each frame is shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Style {
    Line,
    Tree,
    Json,
    /// `-T fields`: the `-e` fields' values.
    Fields(Columns),
}

/// The quick selections: which frames are shown besides the display filter.
#[derive(Debug, Clone)]
pub struct Selection {
    /// Show non-RoCE frames too.
    pub all: bool,
    /// Frames of either direction of the connection of this QP.
    pub qp: Option<u32>,
    /// Opcodes to show; `None` shows every opcode.
    pub opcodes: Option<[bool; 256]>,
    /// Stop after this many shown frames (0: show none).
    pub count: Option<u64>,
}

impl Selection {
    fn accepts(&self, frame: &Frame, c: Classified, engine: &Engine, pre: &Prepass) -> bool {
        let Some(roce) = &frame.roce else {
            let unfiltered = self.qp.is_none() && self.opcodes.is_none();
            let filtered = pre.filtered;
            return unfiltered
                && (self.all || filtered || frame.to_roce || frame.malformed.is_some());
        };
        self.qp.is_none_or(|qp| {
            roce.bth.dest_qp == qp
                || roce.ext.deth.is_some_and(|d| d.src_qp == qp)
                || c.flow.is_some_and(|f| match &pre.qp_flows {
                    Some(numbers) => numbers.binary_search(&f.number()).is_ok(),
                    None => paired_to(engine, f, qp),
                })
        }) && self
            .opcodes
            .as_ref()
            .is_none_or(|set| set[usize::from(roce.bth.opcode)])
    }
}

/// Flow `id` is paired with a flow to `qp` (an RC connection's responses and ACKs go to the requester's
/// QP).
fn paired_to(engine: &Engine, id: FlowId, qp: u32) -> bool {
    let flow = |id: FlowId| engine.flows.get(id);
    flow(id)
        .and_then(|f| f.paired_with)
        .and_then(flow)
        .is_some_and(|peer| peer.key.dest_qp == qp)
}

/// The opcodes a `--opcode` argument names: a full name (`RC_SEND_ONLY`), a name without its transport
/// (`SEND_ONLY` matches RC, UC, RD, UD and XRC), or a number (`0x11`). Case does not matter.
pub fn opcode_set(arg: &str) -> Option<[bool; 256]> {
    let mut set = [false; 256];
    if let Some(op) = Opcode::from_name(arg) {
        set[usize::from(op.0)] = true;
        return Some(set);
    }
    let mut any = false;
    for op in (0..=255u8).map(Opcode) {
        let name = op.name();
        let suffix_match = name
            .len()
            .checked_sub(arg.len() + 1)
            .and_then(|cut| name.get(cut..))
            .is_some_and(|tail| tail.starts_with('_') && tail[1..].eq_ignore_ascii_case(arg));
        if op.is_known() && suffix_match {
            set[usize::from(op.0)] = true;
            any = true;
        }
    }
    any.then_some(set)
}

pub struct Options {
    /// Capture files, each dissected in turn as by a run of its own; `-` is standard input.
    pub files: Vec<PathBuf>,
    pub style: Style,
    pub hex: bool,
    pub selection: Selection,
    /// `-Y`: only the frames it passes (of every kind: it stands for `--all`).
    pub display: Option<Arc<filter::Filter>>,
    pub config: Config,
}

impl Options {
    /// The analysis' events are needed before the frames are shown: a first pass finds them.
    fn needs_events(&self) -> bool {
        let fields = matches!(&self.style, Style::Fields(c) if c.uses_events());
        fields || self.display.as_ref().is_some_and(|f| f.events)
    }
}

/// Totals printed after the frames.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Totals {
    pub frames: u64,
    pub roce: u64,
    pub shown: u64,
}

/// What a first pass of the analysis over the file gives the second, which shows the frames: the events
/// by frame, and the flows of `--qp`'s connection (without a first pass, standard input, the pairs known
/// so far).
#[derive(Default)]
struct Prepass {
    events: FrameEvents,
    /// The numbers of the flows `--qp` shows (ascending).
    qp_flows: Option<Vec<u64>>,
    /// A display filter decides which frames are shown, of every kind.
    filtered: bool,
}

impl Prepass {
    fn of(file: &Path, opts: &Options) -> Result<Prepass, DissectError> {
        let stdin = file == Path::new("-");
        let filtered = opts.display.is_some();
        if !opts.needs_events() && (opts.selection.qp.is_none() || stdin) {
            return Ok(Prepass {
                filtered,
                ..Prepass::default()
            });
        }
        if stdin {
            return Err(DissectError::EventsFromStdin);
        }
        let mut source = FileSource::open(file)?;
        let cfg = pipeline::Config {
            parse: opts.config,
            ..Default::default()
        };
        let engine = pipeline::run(&mut source, &cfg, &mut (), ())?.engine;
        let qp_flows = opts.selection.qp.map(|qp| {
            engine
                .flows
                .in_order()
                .iter()
                .filter(|f| f.key.dest_qp == qp || paired_to(&engine, f.id, qp))
                .map(|f| f.id.number())
                .collect()
        });
        Ok(Prepass {
            events: FrameEvents::of(&engine),
            qp_flows,
            filtered,
        })
    }
}

/// The events of a capture by frame: `frames[i]` is the frame of `tags[i]`, in frame order.
#[derive(Default)]
struct FrameEvents {
    frames: Vec<u64>,
    tags: Vec<(&'static str, &'static str)>,
    next: usize,
}

impl FrameEvents {
    /// The events of a whole analysis (`Events::LIMIT` at most, as `analyze` keeps).
    fn of(engine: &Engine) -> FrameEvents {
        let mut list: Vec<_> = engine.events.kept().collect();
        list.sort_by_key(|e| e.frame);
        FrameEvents {
            frames: list.iter().map(|e| e.frame).collect(),
            tags: list
                .iter()
                .map(|e| (e.kind.name(), e.kind.severity().name()))
                .collect(),
            next: 0,
        }
    }

    /// The events of frame `number`; frames are asked for in order.
    fn of_frame(&mut self, number: u64) -> &[(&'static str, &'static str)] {
        while self.frames.get(self.next).is_some_and(|f| *f < number) {
            self.next += 1;
        }
        let end = self.next
            + self.frames[self.next..]
                .iter()
                .take_while(|f| **f == number)
                .count();
        &self.tags[self.next..end]
    }
}

/// Shows the frames of `file` on standard output; returns the totals.
pub fn run(opts: &Options, file: &Path) -> Result<Totals, DissectError> {
    let pre = Prepass::of(file, opts)?;
    let mut source = FileSource::open(file)?;
    let cfg = pipeline::Config {
        parse: opts.config,
        ..Default::default()
    };
    let show = Show {
        opts,
        out: BufWriter::with_capacity(1 << 16, io::stdout()),
        totals: Totals::default(),
        first_ts: None,
        failed: None,
        display: opts.display.clone().map(Matcher::new),
        pre,
        pcapng: source.format() == CaptureFormat::PcapNg,
        scratch: fields::Scratch::default(),
    };
    let run = pipeline::run(&mut source, &cfg, &mut (), show)?;
    let mut show = run.engine_side;
    if let Some(e) = show.failed {
        return if e.kind() == io::ErrorKind::BrokenPipe {
            Ok(show.totals)
        } else {
            Err(DissectError::Write(e))
        };
    }
    match show.out.flush() {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => return Err(DissectError::Write(e)),
        _ => {}
    }
    match run.error {
        Some(e) => Err(e.into()),
        None => Ok(show.totals),
    }
}

/// `-T fields -E header=y`: the header line, once before the first file's frames.
pub fn write_header(opts: &Options) -> Result<(), DissectError> {
    let Style::Fields(columns) = &opts.style else {
        return Ok(());
    };
    let mut out = io::stdout().lock();
    columns.write_header(&mut out).map_err(DissectError::Write)
}

/// The dissector as the pipeline's engine side: every frame whole, shown in capture order.
struct Show<'o> {
    opts: &'o Options,
    out: BufWriter<io::Stdout>,
    totals: Totals,
    first_ts: Option<u64>,
    /// The output failed (a closed pipe ends the run quietly).
    failed: Option<io::Error>,
    display: Option<Matcher>,
    pre: Prepass,
    /// pcapng has interfaces (`frame.interface_id`); pcap does not.
    pcapng: bool,
    scratch: fields::Scratch,
}

impl EngineSide for Show<'_> {
    const WHOLE_FRAMES: bool = true;

    fn frame(
        &mut self,
        number: u64,
        packet: &Packet,
        frame: &Frame,
        classified: Classified,
        engine: &Engine,
    ) -> ControlFlow<()> {
        self.totals.frames = number;
        self.totals.roce += u64::from(frame.to_roce);
        let start = *self.first_ts.get_or_insert(packet.ts_nanos);
        let opts = self.opts;
        if opts.selection.count.is_some_and(|c| self.totals.shown >= c) {
            return ControlFlow::Break(());
        }
        if !opts.selection.accepts(frame, classified, engine, &self.pre) {
            return ControlFlow::Continue(());
        }
        let subject = Subject {
            number,
            packet,
            frame,
            interface: self.pcapng.then_some(packet.interface),
            analysis: Some(Analysis {
                counted: classified.counted(),
                events: self.pre.events.of_frame(number),
            }),
        };
        if self.display.as_mut().is_some_and(|m| !m.matches(&subject)) {
            return ControlFlow::Continue(());
        }
        self.totals.shown += 1;
        let shown = Shown {
            number,
            rel_nanos: packet.ts_nanos.saturating_sub(start),
            packet,
        };
        let out = &mut self.out;
        let written = match &opts.style {
            Style::Line => line::write(out, &shown, frame),
            Style::Tree => tree::write(out, &shown, frame),
            Style::Json => json::write(out, &shown, frame),
            Style::Fields(c) => c.write(out, &shown, &subject, &mut self.scratch),
        };
        let written = written.and_then(|()| {
            if opts.hex {
                tree::write_hex(out, packet.data)
            } else {
                Ok(())
            }
        });
        if let Err(e) = written {
            self.failed = Some(e);
            return ControlFlow::Break(());
        }
        if opts.selection.count.is_some_and(|c| self.totals.shown >= c) {
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    }
}

/// A frame being shown: its number in the file and its time since the first frame.
pub(crate) struct Shown<'p, 'a> {
    pub number: u64,
    pub rel_nanos: u64,
    pub packet: &'p Packet<'a>,
}

pub(crate) fn write_addr(out: &mut impl Write, frame: &Frame) -> io::Result<()> {
    match (frame.src(), frame.dst()) {
        (Some(s), Some(d)) => write!(out, "{s} → {d}"),
        _ => match frame.link {
            Some(parsers::frame::Link::Ethernet(e)) => {
                write!(out, "{} → {}", Mac(e.src), Mac(e.dst))
            }
            _ => write!(out, "? → ?"),
        },
    }
}

pub(crate) struct Mac(pub [u8; 6]);

impl std::fmt::Display for Mac {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let m = self.0;
        write!(
            f,
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            m[0], m[1], m[2], m[3], m[4], m[5]
        )
    }
}
