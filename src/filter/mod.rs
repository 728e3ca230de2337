//! Display filters (`-Y`): Wireshark's display-filter language as tshark 4.0 reads it, over every field
//! rocescope emits (`Frame::visit`'s, `frame.*` and the analysis' `rocescope.*`). The grammar is a pest
//! PEG (`grammar.pest`); `compile` resolves names and types values as tshark does, `expr` holds the values
//! (slices, arithmetic, functions) and evaluates them, `time` reads the time fields' literals; a compiled
//! filter runs in one walk of a frame's fields, without allocating per frame.
mod compile;
mod eval;
mod expr;
mod literal;
mod names;
mod set;
mod time;
mod typing;
pub mod widths;

use std::fmt;

use parsers::fields::{Field, Value, Visitor};
use parsers::frame::Frame;

use crate::analysis::{Class, Counted};
use crate::source::Packet;

pub use compile::{FilterError, Place, Problem};
pub use eval::Matcher;
use expr::Expr;
pub use literal::LiteralError;
pub use names::{ANALYSIS_FIELDS, Resolved, resolve};

/// A compiled display filter.
pub struct Filter {
    text: String,
    root: Node,
    /// The fields its values read, one slot each.
    fields: Vec<FieldSlot>,
    /// The protocols it reads, one slot each.
    protos: Vec<ProtoSlot>,
    /// The constants' bytes.
    pool: Vec<u8>,
    /// It names `rocescope.event` or `rocescope.severity`: the analysis' events, some of them known only at
    /// the end of the capture.
    pub events: bool,
    /// It names a field of the analysis (`rocescope.class`, `.flow`, `.retransmission`, the events).
    pub analysis: bool,
}

impl Filter {
    /// Compiles `text`; a bad filter is one line naming the column and the problem.
    pub fn new(text: &str) -> Result<Filter, FilterError> {
        compile::compile(text)
    }

    pub fn text(&self) -> &str {
        &self.text
    }
}

impl fmt::Debug for Filter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Filter({:?})", self.text)
    }
}

impl PartialEq for Filter {
    fn eq(&self, other: &Filter) -> bool {
        self.text == other.text
    }
}

impl Eq for Filter {}

enum Node {
    Or(Vec<Node>),
    And(Vec<Node>),
    Not(Box<Node>),
    Test(Test),
}

/// One field a filter reads (or the fields an alias such as `ip.addr` stands for).
#[derive(Debug, PartialEq, Eq)]
struct FieldSlot {
    /// The keys whose values go into it.
    keys: Vec<&'static str>,
    /// A time field, filled from the packet's time rather than from the walk.
    time: Option<&'static str>,
    /// Only the values in this header of the frame (`ip.addr#2`).
    layer: Option<Layer>,
}

/// The `n`-th header (from 1) titled `title`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Layer {
    n: u32,
    title: &'static str,
}

/// One protocol a filter reads: present when a field under it is; its bytes those of its headers.
#[derive(Debug, PartialEq, Eq)]
struct ProtoSlot {
    /// `eth.`: the prefix of its fields' keys.
    prefix: String,
    /// The title of its header in `Frame::visit` (none: a protocol whose bytes are not read).
    title: Option<&'static str>,
}

enum Test {
    /// A field or protocol is present, or a slice of one has bytes.
    Exists(Expr),
    /// A value is not zero (`ip.flags & 0x02`).
    Truthy(Expr),
    /// `all`: every pair of values must compare so (`!=`, `===`); else any one.
    Compare {
        op: Cmp,
        all: bool,
        lhs: Expr,
        rhs: Expr,
    },
    In(Expr, set::Set),
    Contains(Expr, Expr),
    Matches(Expr, regex::bytes::Regex),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Cmp {
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
}

/// A frame as the filter (and `-T fields`) sees it: `frame.*`, its headers, and the analysis' view of it
/// when there is one.
pub struct Subject<'s, 'a> {
    pub number: u64,
    pub packet: &'s Packet<'a>,
    pub frame: &'s Frame<'a>,
    /// The pcapng interface (tshark has no `frame.interface_id` for pcap files).
    pub interface: Option<u32>,
    pub analysis: Option<Analysis<'s>>,
}

/// How the engine counted a frame, and the events it ties to it.
#[derive(Clone, Copy)]
pub struct Analysis<'s> {
    pub counted: Counted,
    /// (kind, severity) of each event whose frame this is.
    pub events: &'s [(&'static str, &'static str)],
}

impl<'a> Subject<'_, 'a> {
    /// Every field in order: `frame.*`, the headers, then the analysis'.
    pub fn visit(&self, v: &mut impl Visitor<'a>) {
        let p = self.packet;
        v.header("Frame", 0, p.data.len());
        v.field(Field::new(
            "frame.number",
            "Number",
            Value::Uint(self.number),
        ));
        if let Some(i) = self.interface {
            v.field(Field::new(
                "frame.interface_id",
                "Interface",
                Value::Uint(i.into()),
            ));
        }
        v.field(Field::new(
            "frame.len",
            "Length",
            Value::Uint(p.orig_len.into()),
        ));
        v.field(Field::new(
            "frame.cap_len",
            "Captured length",
            Value::Uint(p.data.len() as u64),
        ));
        self.frame.visit(v);
        let Some(a) = self.analysis else {
            return;
        };
        v.header("Analysis", 0, 0);
        let c = a.counted;
        if let Some(flow) = c.flow {
            v.field(Field::new("rocescope.flow", "Flow", Value::Uint(flow)));
        }
        if let Some(name) = class_name(c.class) {
            v.field(Field::new(
                "rocescope.class",
                "Counted as",
                Value::Text(name),
            ));
        }
        if c.class == Class::Retransmission {
            v.field(Field::new(
                "rocescope.retransmission",
                "Retransmission",
                Value::Bool(true),
            ));
        }
        for &(kind, severity) in a.events {
            v.field(Field::new("rocescope.event", "Event", Value::Text(kind)));
            v.field(Field::new(
                "rocescope.severity",
                "Severity",
                Value::Text(severity),
            ));
        }
    }
}

/// `rocescope.class`: how the engine counted the frame (nothing for `Other`).
pub fn class_name(c: Class) -> Option<&'static str> {
    Some(match c {
        Class::Other => return None,
        Class::Request => "request",
        Class::Gap => "gap",
        Class::Retransmission => "retransmission",
        Class::Reordered => "reordered",
        Class::Response => "response",
        Class::Nak => "nak",
        Class::RnrNak => "rnr_nak",
        Class::Cnp => "cnp",
        Class::BadIcrc => "bad_icrc",
        Class::Malformed => "malformed",
        Class::MirrorDuplicate => "mirror_duplicate",
    })
}

#[cfg(test)]
mod tests;
