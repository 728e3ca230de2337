//! `rocescope dissect`: one line, a field tree or a JSON object per frame.
mod json;
mod line;
pub(crate) mod tree;

use std::io::{self, BufWriter, Write};
use std::ops::ControlFlow;
use std::path::PathBuf;

use parsers::opcode::Opcode;
use parsers::{Config, Frame};

use crate::analysis::Classified;
use crate::pipeline::{self, EngineSide};
use crate::source::{FileSource, Packet};

/// How each frame is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    Line,
    Tree,
    Json,
}

/// Which frames are shown.
#[derive(Debug, Clone)]
pub struct Filter {
    /// Show non-RoCE frames too.
    pub all: bool,
    pub dest_qp: Option<u32>,
    /// Opcodes to show; `None` shows every opcode.
    pub opcodes: Option<[bool; 256]>,
    /// Stop after this many shown frames.
    pub count: Option<u64>,
}

impl Filter {
    fn accepts(&self, frame: &Frame) -> bool {
        let Some(roce) = &frame.roce else {
            let unfiltered = self.dest_qp.is_none() && self.opcodes.is_none();
            return unfiltered && (self.all || frame.to_roce || frame.malformed.is_some());
        };
        self.dest_qp.is_none_or(|qp| roce.bth.dest_qp == qp)
            && self
                .opcodes
                .as_ref()
                .is_none_or(|set| set[usize::from(roce.bth.opcode)])
    }
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
    pub file: PathBuf,
    pub style: Style,
    pub hex: bool,
    pub filter: Filter,
    pub config: Config,
}

/// Totals printed after the frames.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Totals {
    pub frames: u64,
    pub roce: u64,
    pub shown: u64,
}

/// Shows the frames of `opts.file` on standard output; returns the totals.
pub fn run(opts: &Options) -> Result<Totals, String> {
    let mut source = FileSource::open(&opts.file).map_err(|e| e.to_string())?;
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
    };
    let run = pipeline::run(&mut source, &cfg, &mut (), show)?;
    let mut show = run.engine_side;
    if let Some(e) = show.failed {
        return if e.kind() == io::ErrorKind::BrokenPipe {
            Ok(show.totals)
        } else {
            Err(format!("cannot write the output: {e}"))
        };
    }
    match show.out.flush() {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => {
            return Err(format!("cannot write the output: {e}"));
        }
        _ => {}
    }
    match run.error {
        Some(e) => Err(e.to_string()),
        None => Ok(show.totals),
    }
}

/// The dissector as the pipeline's engine side: every frame whole, shown in capture order.
struct Show<'o> {
    opts: &'o Options,
    out: BufWriter<io::Stdout>,
    totals: Totals,
    first_ts: Option<u64>,
    /// The output failed (a closed pipe ends the run quietly).
    failed: Option<io::Error>,
}

impl EngineSide for Show<'_> {
    const WHOLE_FRAMES: bool = true;

    fn frame(
        &mut self,
        number: u64,
        packet: &Packet,
        frame: &Frame,
        _classified: Classified,
    ) -> ControlFlow<()> {
        self.totals.frames = number;
        self.totals.roce += u64::from(frame.to_roce);
        let start = *self.first_ts.get_or_insert(packet.ts_nanos);
        let opts = self.opts;
        if !opts.filter.accepts(frame) {
            return ControlFlow::Continue(());
        }
        self.totals.shown += 1;
        let shown = Shown {
            number,
            rel_nanos: packet.ts_nanos.saturating_sub(start),
            packet,
        };
        let out = &mut self.out;
        let written = match opts.style {
            Style::Line => line::write(out, &shown, frame),
            Style::Tree => tree::write(out, &shown, frame),
            Style::Json => json::write(out, &shown, frame),
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
        if opts.filter.count.is_some_and(|c| self.totals.shown >= c) {
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
