//! `--json`: one JSON object per line, keyed with Wireshark's field names (schema in docs/json.md).
use std::io::{self, Write};

use parsers::fields::{Field, Value, Visitor};
use parsers::frame::Frame;

use super::Shown;

pub fn write(out: &mut impl Write, shown: &Shown, frame: &Frame) -> io::Result<()> {
    let p = shown.packet;
    write!(
        out,
        "{{\"frame.number\":{},\"frame.time_epoch\":{}.{:09},\"frame.time_relative\":{}.{:09},\"frame.len\":{},\"frame.cap_len\":{},\"frame.interface_id\":{}",
        shown.number,
        p.ts_nanos / 1_000_000_000,
        p.ts_nanos % 1_000_000_000,
        shown.rel_nanos / 1_000_000_000,
        shown.rel_nanos % 1_000_000_000,
        p.orig_len,
        p.data.len(),
        p.interface
    )?;
    let mut obj = Object {
        out,
        result: Ok(()),
        outer: Outer::None,
    };
    frame.visit(&mut obj);
    obj.close_outer();
    obj.result?;
    writeln!(out, "}}")
}

struct Object<'w, W: Write> {
    out: &'w mut W,
    result: io::Result<()>,
    outer: Outer,
}

/// Where the members go: the encapsulations' headers are objects of the `rocescope.encap` array (outermost
/// first), so that the frame's own keys stay those of the frame captured directly.
#[derive(PartialEq, Eq)]
enum Outer {
    None,
    /// In an encapsulation's object; no member written in it yet.
    Opened,
    Inside,
    /// After an encapsulation's object, with the array still open.
    Closed,
}

impl<W: Write> Object<'_, W> {
    fn write(&mut self, s: &str) {
        if self.result.is_ok() {
            self.result = self.out.write_all(s.as_bytes());
        }
    }

    fn close_outer(&mut self) {
        if self.outer == Outer::Closed {
            self.write("]");
            self.outer = Outer::None;
        }
    }
}

impl<'a, W: Write> Visitor<'a> for Object<'_, W> {
    fn header(&mut self, _title: &'static str, _offset: usize, _len: usize) {}

    fn field(&mut self, field: Field<'a>) {
        self.close_outer();
        let first = self.outer == Outer::Opened;
        if first {
            self.outer = Outer::Inside;
        }
        if self.result.is_ok() {
            self.result = write_member(self.out, &field, first);
        }
    }

    fn begin_outer(&mut self) {
        let open = if self.outer == Outer::Closed {
            ",{"
        } else {
            ",\"rocescope.encap\":[{"
        };
        self.write(open);
        self.outer = Outer::Opened;
    }

    fn end_outer(&mut self) {
        self.write("}");
        self.outer = Outer::Closed;
    }
}

fn write_member(out: &mut impl Write, f: &Field, first: bool) -> io::Result<()> {
    let comma = if first { "" } else { "," };
    write!(out, "{comma}\"{}\":", f.key)?;
    match f.value {
        Value::Uint(n) | Value::Hex(n, _) => write!(out, "{n}"),
        Value::Bool(b) => write!(out, "{b}"),
        Value::Micros(us) => write!(out, "{us}"),
        Value::Text(t) => write_str(out, t),
        Value::Damage(m) => write_str(out, &m.to_string()),
        ref other => {
            let mut s = Vec::with_capacity(48);
            super::tree::write_value(&mut s, other)?;
            write_str(out, &String::from_utf8_lossy(&s))
        }
    }
}

fn write_str(out: &mut impl Write, s: &str) -> io::Result<()> {
    serde_json::to_writer(&mut *out, s).map_err(io::Error::other)
}
