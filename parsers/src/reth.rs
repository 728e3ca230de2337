//! RDMA Extended Transport Header (16 bytes): remote address, key and length of a WRITE or READ.
use nom::Parser;

use crate::be::{u32, u64};
use crate::error::{Layer, Malformed, need, short};
use crate::fields::{Field, Value, Visitor};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Reth {
    pub va: u64,
    pub r_key: u32,
    pub dma_len: u32,
}

impl Reth {
    pub const LEN: usize = 16;

    pub fn parse(input: &[u8]) -> Result<(Self, &[u8]), Malformed> {
        need(Layer::Reth, input, Self::LEN)?;
        let (rest, (va, r_key, dma_len)) =
            (u64, u32, u32)
                .parse(input)
                .map_err(short(Layer::Reth, Self::LEN, input))?;
        Ok((Reth { va, r_key, dma_len }, rest))
    }

    pub fn emit(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.va.to_be_bytes());
        out.extend_from_slice(&self.r_key.to_be_bytes());
        out.extend_from_slice(&self.dma_len.to_be_bytes());
    }

    pub fn visit<'a>(&self, offset: usize, v: &mut impl Visitor<'a>) {
        v.header("RDMA Extended Transport Header", offset, Self::LEN);
        v.field(Field::new(
            "infiniband.reth.va",
            "Virtual address",
            Value::Hex(self.va, 16),
        ));
        v.field(Field::new(
            "infiniband.reth.r_key",
            "Remote key",
            Value::Hex(self.r_key.into(), 8),
        ));
        v.field(Field::new(
            "infiniband.reth.dmalen",
            "DMA length",
            Value::Uint(self.dma_len.into()),
        ));
    }
}
