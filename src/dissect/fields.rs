//! `-T fields -e FIELD ... [-E OPTION=VALUE]`: the values of the named fields, one line per frame, written
//! as tshark 4.0 writes them (`tests/tshark_fields.rs` holds the bytes to tshark's).
use std::io::{self, Write};

use parsers::fields::{Field, Value, Visitor};

use super::Shown;
use crate::filter::{self, Resolved, Subject};

/// One `-e` column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    name: String,
    what: What,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum What {
    /// The values of these keys.
    Keys(Vec<&'static str>),
    TimeEpoch,
    TimeRelative,
}

/// A `-e` or `-E` argument rocescope does not take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FieldsError {
    #[error("{0} is a protocol: name one of its fields")]
    Protocol(String),
    #[error("rocescope has no field {0} (the fields: docs/cli.md#display-filters)")]
    NoField(String),
    #[error("'{0}' is not OPTION=VALUE (header=y, separator=, quote=d ...)")]
    NotOption(String),
    #[error(
        "'{0}': tshark's values are header=y|n, separator=/t|/s|C, quote=d|s|n, occurrence=f|l|a|N, aggregator=,|/s|C"
    )]
    Value(String),
}

impl Column {
    /// A `-e` argument: a field rocescope emits, by its Wireshark name.
    pub fn new(name: &str) -> Result<Column, FieldsError> {
        let what = match name {
            "frame.time_epoch" => What::TimeEpoch,
            "frame.time_relative" => What::TimeRelative,
            _ => match filter::resolve(name) {
                Some(Resolved::Fields(keys, _)) => What::Keys(keys),
                Some(Resolved::Protocol | Resolved::Header(_)) => {
                    return Err(FieldsError::Protocol(name.to_string()));
                }
                None => return Err(FieldsError::NoField(name.to_string())),
            },
        };
        Ok(Column {
            name: name.to_string(),
            what,
        })
    }
}

/// Which occurrences of a field a column shows (`-E occurrence=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Occurrence {
    All,
    First,
    Last,
    /// The n-th, from 1.
    Nth(usize),
}

/// How values are quoted (`-E quote=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quote {
    None,
    Double,
    Single,
}

/// One `-E` option.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldsOption {
    Header(bool),
    Separator(String),
    Quote(Quote),
    Occurrence(Occurrence),
    Aggregator(String),
}

impl FieldsOption {
    /// `header=y|n`, `separator=/t|/s|C`, `quote=d|s|n`, `occurrence=f|l|a|N`, `aggregator=,|/s|C`, as
    /// tshark takes them.
    pub fn parse(s: &str) -> Result<FieldsOption, FieldsError> {
        let (key, value) = s
            .split_once('=')
            .ok_or_else(|| FieldsError::NotOption(s.to_string()))?;
        // One character, as tshark takes it: `/t` a tab (the separator only), `/s` a space, `/` before
        // anything else a backslash, else the value's first character (tshark takes its first byte:
        // the same for ASCII, half a character otherwise); `separator=ab` is `a`.
        let sep = |v: &str, tab: bool| match v.strip_prefix('/') {
            Some(rest) => match rest.chars().next() {
                Some('t') if tab => "\t".to_string(),
                Some('s') => " ".to_string(),
                _ => "\\".to_string(),
            },
            None => v.chars().take(1).collect(),
        };
        let bad = || FieldsError::Value(s.to_string());
        Ok(match (key, value) {
            ("header", "y") => FieldsOption::Header(true),
            ("header", "n") => FieldsOption::Header(false),
            ("separator", v) if !v.is_empty() => FieldsOption::Separator(sep(v, true)),
            ("aggregator", v) if !v.is_empty() => FieldsOption::Aggregator(sep(v, false)),
            ("quote", "d") => FieldsOption::Quote(Quote::Double),
            ("quote", "s") => FieldsOption::Quote(Quote::Single),
            ("quote", "n") => FieldsOption::Quote(Quote::None),
            ("occurrence", "a") => FieldsOption::Occurrence(Occurrence::All),
            ("occurrence", "f") => FieldsOption::Occurrence(Occurrence::First),
            ("occurrence", "l") => FieldsOption::Occurrence(Occurrence::Last),
            ("occurrence", n) => match n.parse::<usize>() {
                Ok(n) if n > 0 => FieldsOption::Occurrence(Occurrence::Nth(n)),
                _ => return Err(bad()),
            },
            _ => return Err(bad()),
        })
    }
}

/// The columns and how they are written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Columns {
    columns: Vec<Column>,
    header: bool,
    separator: String,
    quote: Quote,
    occurrence: Occurrence,
    aggregator: String,
}

impl Columns {
    /// tshark's defaults (tab between columns, every occurrence joined by commas, no header, no quotes),
    /// changed by `options` in order.
    pub fn new(columns: Vec<Column>, options: &[FieldsOption]) -> Columns {
        let mut c = Columns {
            columns,
            header: false,
            separator: "\t".to_string(),
            quote: Quote::None,
            occurrence: Occurrence::All,
            aggregator: ",".to_string(),
        };
        for o in options {
            match o.clone() {
                FieldsOption::Header(h) => c.header = h,
                FieldsOption::Separator(s) => c.separator = s,
                FieldsOption::Quote(q) => c.quote = q,
                FieldsOption::Occurrence(o) => c.occurrence = o,
                FieldsOption::Aggregator(a) => c.aggregator = a,
            }
        }
        c
    }

    /// A column shows the analysis' events.
    pub fn uses_events(&self) -> bool {
        self.columns.iter().any(|c| match &c.what {
            What::Keys(keys) => keys
                .iter()
                .any(|k| matches!(*k, "rocescope.event" | "rocescope.severity")),
            _ => false,
        })
    }

    pub fn write_header(&self, out: &mut impl Write) -> io::Result<()> {
        if !self.header {
            return Ok(());
        }
        for (i, c) in self.columns.iter().enumerate() {
            if i > 0 {
                out.write_all(self.separator.as_bytes())?;
            }
            out.write_all(c.name.as_bytes())?;
        }
        writeln!(out)
    }

    pub(super) fn write(
        &self,
        out: &mut impl Write,
        shown: &Shown,
        subject: &Subject,
        scratch: &mut Scratch,
    ) -> io::Result<()> {
        scratch
            .values
            .resize_with(self.columns.len(), Default::default);
        for v in &mut scratch.values {
            v.text.clear();
            v.count = 0;
        }
        let ts = shown.packet.ts_nanos;
        for (c, v) in self.columns.iter().zip(scratch.values.iter_mut()) {
            let nanos = match c.what {
                What::TimeEpoch => ts,
                What::TimeRelative => shown.rel_nanos,
                What::Keys(_) => continue,
            };
            use std::fmt::Write as _;
            let _ = write!(
                v.text,
                "{}.{:09}",
                nanos / 1_000_000_000,
                nanos % 1_000_000_000
            );
        }
        subject.visit(&mut Collect {
            columns: self,
            values: &mut scratch.values,
        });
        for (i, v) in scratch.values.iter().enumerate() {
            if i > 0 {
                out.write_all(self.separator.as_bytes())?;
            }
            // tshark quotes values, not empty columns.
            let q = match self.quote {
                _ if v.text.is_empty() => "",
                Quote::None => "",
                Quote::Double => "\"",
                Quote::Single => "'",
            };
            write!(out, "{q}{}{q}", v.text)?;
        }
        writeln!(out)
    }
}

/// The columns' text, kept from frame to frame.
#[derive(Default)]
pub(super) struct Scratch {
    values: Vec<Collected>,
}

#[derive(Default)]
struct Collected {
    text: String,
    count: usize,
}

struct Collect<'c> {
    columns: &'c Columns,
    values: &'c mut [Collected],
}

impl<'a> Visitor<'a> for Collect<'_> {
    fn header(&mut self, _title: &'static str, _offset: usize, _len: usize) {}

    fn field(&mut self, f: Field<'a>) {
        for (c, v) in self.columns.columns.iter().zip(self.values.iter_mut()) {
            let What::Keys(keys) = &c.what else { continue };
            if !keys.contains(&f.key) {
                continue;
            }
            v.count += 1;
            let keep = match self.columns.occurrence {
                Occurrence::All => {
                    if v.count > 1 {
                        v.text.push_str(&self.columns.aggregator);
                    }
                    true
                }
                Occurrence::First => v.count == 1,
                Occurrence::Last => {
                    v.text.clear();
                    true
                }
                Occurrence::Nth(n) => v.count == n,
            };
            if keep {
                tshark_text(f.key, &f.value, &mut v.text);
            }
        }
    }
}

/// How tshark writes a field where the value's own form is not it.
#[derive(Clone, Copy)]
enum Form {
    Decimal,
    /// `0x` and this many hex digits (the width of the field's Wireshark type).
    Hex(usize),
    /// Plain hex digits, as for bytes.
    Digits,
}

/// The fields tshark 4.0 writes otherwise than their value says (found by tests/tshark_fields.rs).
const TSHARK: &[(&str, Form)] = &[
    ("infiniband.aeth.syndrome", Form::Decimal),
    ("infiniband.atomicacketh.origremdt", Form::Decimal),
    ("infiniband.atomiceth.cmpdt", Form::Decimal),
    ("infiniband.atomiceth.swapdt", Form::Decimal),
    ("infiniband.bth.p_key", Form::Decimal),
    ("infiniband.cm.req.alt_flowlabel", Form::Hex(8)),
    ("infiniband.cm.req.alt_localgid", Form::Digits),
    ("infiniband.cm.req.alt_pktrate", Form::Hex(8)),
    ("infiniband.cm.req.alt_remotegid", Form::Digits),
    ("infiniband.cm.req.alt_reserved0", Form::Hex(8)),
    ("infiniband.cm.req.prim_flowlabel", Form::Hex(8)),
    ("infiniband.cm.req.prim_pktrate", Form::Hex(8)),
    ("infiniband.cm.req.prim_reserved0", Form::Hex(8)),
    ("infiniband.cm.req.serviceid.prefix", Form::Digits),
    ("infiniband.deth.q_key", Form::Hex(16)),
    ("infiniband.deth.srcqp", Form::Hex(8)),
    ("infiniband.grh.flowlabel", Form::Decimal),
    ("infiniband.grh.nxthdr", Form::Decimal),
    ("infiniband.ieth", Form::Digits),
    ("infiniband.immdt", Form::Digits),
    ("infiniband.rdeth.eecnxt", Form::Decimal),
];

/// A value as tshark 4.0 prints it in `-T fields`: numbers in the base and width Wireshark gives the
/// field (hex ones to the width of a Wireshark integer type: 2, 4, 6, 8 or 16 digits), booleans 1 or 0,
/// bytes as plain hex digits.
fn tshark_text(key: &str, v: &Value, out: &mut String) {
    use std::fmt::Write as _;
    let form = TSHARK.iter().find(|(k, _)| *k == key).map(|(_, f)| *f);
    let _ = match (*v, form) {
        (Value::Hex(n, _) | Value::Uint(n), Some(Form::Decimal)) => write!(out, "{n}"),
        (Value::Hex(n, _) | Value::Uint(n), Some(Form::Hex(w))) => write!(out, "0x{n:0w$x}"),
        (Value::Hex(n, d), Some(Form::Digits)) => write!(out, "{n:0w$x}", w = usize::from(d)),
        (Value::Ipv6(a), Some(Form::Digits)) => a.iter().try_for_each(|x| write!(out, "{x:02x}")),
        (Value::Hex(n, d), _) => {
            let w = [2, 4, 6, 8, 16]
                .into_iter()
                .find(|w| *w >= usize::from(d))
                .unwrap_or(16);
            write!(out, "0x{n:0w$x}")
        }
        (Value::Bool(b), _) => write!(out, "{}", u8::from(b)),
        (Value::Bytes(b), _) => b.iter().try_for_each(|x| write!(out, "{x:02x}")),
        (ref other, _) => {
            let mut s = Vec::new();
            let _ = super::tree::write_value(&mut s, other);
            write!(out, "{}", String::from_utf8_lossy(&s))
        }
    };
}
