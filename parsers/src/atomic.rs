//! Atomic Extended Transport Header (28 bytes) and Atomic ACK Extended Transport Header (8 bytes).
use nom::Parser;

use crate::be::{u32, u64};
use crate::error::{Layer, Malformed, need, short};
use crate::fields::{Field, Value, Visitor};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AtomicEth {
    pub va: u64,
    pub r_key: u32,
    /// Swap value (CmpSwap) or the addend (FetchAdd).
    pub swap_add: u64,
    pub compare: u64,
}

impl AtomicEth {
    pub const LEN: usize = 28;

    pub fn parse(input: &[u8]) -> Result<(Self, &[u8]), Malformed> {
        need(Layer::AtomicEth, input, Self::LEN)?;
        let (rest, (va, r_key, swap_add, compare)) = (u64, u32, u64, u64)
            .parse(input)
            .map_err(short(Layer::AtomicEth, Self::LEN, input))?;
        Ok((
            AtomicEth {
                va,
                r_key,
                swap_add,
                compare,
            },
            rest,
        ))
    }

    pub fn emit(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.va.to_be_bytes());
        out.extend_from_slice(&self.r_key.to_be_bytes());
        out.extend_from_slice(&self.swap_add.to_be_bytes());
        out.extend_from_slice(&self.compare.to_be_bytes());
    }

    pub fn visit<'a>(&self, offset: usize, v: &mut impl Visitor<'a>) {
        v.header("Atomic Extended Transport Header", offset, Self::LEN);
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
            "infiniband.atomiceth.swapdt",
            "Swap (or add) data",
            Value::Hex(self.swap_add, 16),
        ));
        v.field(Field::new(
            "infiniband.atomiceth.cmpdt",
            "Compare data",
            Value::Hex(self.compare, 16),
        ));
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AtomicAckEth {
    /// The remote data before the atomic operation.
    pub orig_rem_data: u64,
}

impl AtomicAckEth {
    pub const LEN: usize = 8;

    pub fn parse(input: &[u8]) -> Result<(Self, &[u8]), Malformed> {
        need(Layer::AtomicAckEth, input, Self::LEN)?;
        let (rest, orig_rem_data) =
            u64(input).map_err(short(Layer::AtomicAckEth, Self::LEN, input))?;
        Ok((AtomicAckEth { orig_rem_data }, rest))
    }

    pub fn emit(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.orig_rem_data.to_be_bytes());
    }

    pub fn visit<'a>(&self, offset: usize, v: &mut impl Visitor<'a>) {
        v.header("Atomic ACK Extended Transport Header", offset, Self::LEN);
        v.field(Field::new(
            "infiniband.atomicacketh.origremdt",
            "Original remote data",
            Value::Hex(self.orig_rem_data, 16),
        ));
    }
}
