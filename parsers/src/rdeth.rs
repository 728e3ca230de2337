//! Reliable Datagram Extended Transport Header (4 bytes): the end-to-end context of RD packets.
use nom::Parser;

use crate::be::{put_u24, u8, u24};
use crate::error::{Layer, Malformed, need, short};
use crate::fields::{Field, Value, Visitor};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Rdeth {
    pub reserved: u8,
    pub ee_context: u32,
}

impl Rdeth {
    pub const LEN: usize = 4;

    pub fn parse(input: &[u8]) -> Result<(Self, &[u8]), Malformed> {
        need(Layer::Rdeth, input, Self::LEN)?;
        let (rest, (reserved, ee_context)) =
            (u8, u24)
                .parse(input)
                .map_err(short(Layer::Rdeth, Self::LEN, input))?;
        Ok((
            Rdeth {
                reserved,
                ee_context,
            },
            rest,
        ))
    }

    pub fn emit(&self, out: &mut Vec<u8>) {
        out.push(self.reserved);
        put_u24(out, self.ee_context);
    }

    pub fn visit<'a>(&self, offset: usize, v: &mut impl Visitor<'a>) {
        v.header(
            "Reliable Datagram Extended Transport Header",
            offset,
            Self::LEN,
        );
        v.field(Field::new(
            "infiniband.rdeth.eecnxt",
            "EE context",
            Value::Hex(self.ee_context.into(), 6),
        ));
    }
}
