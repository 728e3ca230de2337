//! Datagram Extended Transport Header (8 bytes): Q_Key and source QP of UD and RD packets.
use nom::Parser;

use crate::be::{put_u24, u8, u24, u32};
use crate::error::{Layer, Malformed, need, short};
use crate::fields::{Field, Value, Visitor};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Deth {
    pub q_key: u32,
    pub reserved: u8,
    pub src_qp: u32,
}

impl Deth {
    pub const LEN: usize = 8;

    pub fn parse(input: &[u8]) -> Result<(Self, &[u8]), Malformed> {
        need(Layer::Deth, input, Self::LEN)?;
        let (rest, (q_key, reserved, src_qp)) =
            (u32, u8, u24)
                .parse(input)
                .map_err(short(Layer::Deth, Self::LEN, input))?;
        Ok((
            Deth {
                q_key,
                reserved,
                src_qp,
            },
            rest,
        ))
    }

    pub fn emit(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.q_key.to_be_bytes());
        out.push(self.reserved);
        put_u24(out, self.src_qp);
    }

    pub fn visit<'a>(&self, offset: usize, v: &mut impl Visitor<'a>) {
        v.header("Datagram Extended Transport Header", offset, Self::LEN);
        v.field(Field::new(
            "infiniband.deth.q_key",
            "Queue key",
            Value::Hex(self.q_key.into(), 8),
        ));
        v.field(Field::new(
            "infiniband.deth.srcqp",
            "Source QP",
            Value::Hex(self.src_qp.into(), 6),
        ));
    }
}
