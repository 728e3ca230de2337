//! `-V`: a Wireshark-style tree of every field, and `-x`: a hex dump.
use std::io::{self, Write};

use parsers::fields::{Field, Value, Visitor};
use parsers::frame::Frame;

use super::{Mac, Shown};
use crate::report::format::Utc;

pub fn write(out: &mut impl Write, shown: &Shown, frame: &Frame) -> io::Result<()> {
    let p = shown.packet;
    writeln!(
        out,
        "Frame {}: {} bytes on wire, {} bytes captured, interface {}, time {}.{:09} UTC (epoch {}.{:09})",
        shown.number,
        p.orig_len,
        p.data.len(),
        p.interface,
        Utc::of(p.ts_nanos / 1_000_000_000),
        p.ts_nanos % 1_000_000_000,
        p.ts_nanos / 1_000_000_000,
        p.ts_nanos % 1_000_000_000
    )?;
    let mut tree = Tree {
        out,
        result: Ok(()),
    };
    frame.visit(&mut tree);
    tree.result?;
    writeln!(out)
}

struct Tree<'w, W: Write> {
    out: &'w mut W,
    result: io::Result<()>,
}

impl<'a, W: Write> Visitor<'a> for Tree<'_, W> {
    fn header(&mut self, title: &'static str, offset: usize, len: usize) {
        if self.result.is_ok() {
            self.result = writeln!(self.out, "{title}  [bytes {offset}..{}]", offset + len);
        }
    }

    fn field(&mut self, field: Field<'a>) {
        if self.result.is_ok() {
            self.result = write_field(self.out, &field);
        }
    }
}

/// Byte fields longer than this are cut in the tree (as Wireshark does); JSON has them whole.
const TREE_BYTES: usize = 32;

fn write_field(out: &mut impl Write, f: &Field) -> io::Result<()> {
    write!(out, "    {}: ", f.label)?;
    match f.value {
        Value::Bytes(b) if b.len() > TREE_BYTES => {
            write_value(out, &Value::Bytes(b.get(..TREE_BYTES).unwrap_or(b)))?;
            write!(out, "… ({} bytes)", b.len())?;
        }
        ref value => write_value(out, value)?,
    }
    if let Some(m) = f.meaning {
        write!(out, " ({m})")?;
    }
    writeln!(out, "  [{}]", f.key)
}

pub(crate) fn write_value(out: &mut impl Write, v: &Value) -> io::Result<()> {
    match *v {
        Value::Uint(n) => write!(out, "{n}"),
        Value::Hex(n, digits) => write!(out, "0x{n:0width$x}", width = usize::from(digits)),
        Value::Bool(b) => write!(out, "{}", if b { "True" } else { "False" }),
        Value::Mac(m) => write!(out, "{}", Mac(m)),
        Value::Ipv4(a) => write!(out, "{}", std::net::Ipv4Addr::from(a)),
        Value::Ipv6(a) => write!(out, "{}", std::net::Ipv6Addr::from(a)),
        Value::Text(t) => write!(out, "{t}"),
        Value::Micros(us) => write!(out, "{}.{:02} ms", us / 1000, (us % 1000) / 10),
        Value::Bytes(b) => b.iter().try_for_each(|x| write!(out, "{x:02x}")),
        Value::Damage(m) => write!(out, "{m}"),
    }
}

/// 16 bytes a line: offset, hex, ASCII.
pub fn write_hex(out: &mut impl Write, data: &[u8]) -> io::Result<()> {
    for (i, chunk) in data.chunks(16).enumerate() {
        write!(out, "{:04x}  ", i * 16)?;
        for j in 0..16 {
            match chunk.get(j) {
                Some(b) => write!(out, "{b:02x} ")?,
                None => write!(out, "   ")?,
            }
        }
        let ascii: String = chunk
            .iter()
            .map(|&b| {
                if b.is_ascii_graphic() || b == b' ' {
                    b as char
                } else {
                    '.'
                }
            })
            .collect();
        writeln!(out, "  {ascii}")?;
    }
    writeln!(out)
}
