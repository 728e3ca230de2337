//! XRC Extended Transport Header (4 bytes): the XRC shared receive queue of XRC requests.
//! Wireshark 4.0 does not parse it; the names are ours.
use nom::Parser;

use crate::be::{put_u24, u8, u24};
use crate::error::{Layer, Malformed, need, short};
use crate::fields::{Field, Value, Visitor};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Xrceth {
    pub reserved: u8,
    pub xrc_srq: u32,
}

impl Xrceth {
    pub const LEN: usize = 4;

    pub fn parse(input: &[u8]) -> Result<(Self, &[u8]), Malformed> {
        need(Layer::Xrceth, input, Self::LEN)?;
        let (rest, (reserved, xrc_srq)) =
            (u8, u24)
                .parse(input)
                .map_err(short(Layer::Xrceth, Self::LEN, input))?;
        Ok((Xrceth { reserved, xrc_srq }, rest))
    }

    pub fn emit(&self, out: &mut Vec<u8>) {
        out.push(self.reserved);
        put_u24(out, self.xrc_srq);
    }

    pub fn visit<'a>(&self, offset: usize, v: &mut impl Visitor<'a>) {
        v.header("XRC Extended Transport Header", offset, Self::LEN);
        v.field(Field::new(
            "rocescope.xrceth.xrcsrq",
            "XRC SRQ",
            Value::Hex(self.xrc_srq.into(), 6),
        ));
    }
}
