//! FLUSH Extended Transport Header (4 bytes, IBTA 1.5 memory placement extensions): selectivity level
//! and placement type of an RDMA FLUSH. Wireshark 4.0 does not parse it; the names are ours.
use crate::be::u32;
use crate::error::{Layer, Malformed, need, short};
use crate::fields::{Field, Value, Visitor};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Feth {
    pub bits: u32,
}

impl Feth {
    pub const LEN: usize = 4;

    pub fn parse(input: &[u8]) -> Result<(Self, &[u8]), Malformed> {
        need(Layer::Feth, input, Self::LEN)?;
        let (rest, bits) = u32(input).map_err(short(Layer::Feth, Self::LEN, input))?;
        Ok((Feth { bits }, rest))
    }

    /// Placement type (bits 3-0): 1 global visibility, 2 persistence.
    pub fn placement_type(&self) -> u8 {
        (self.bits & 0x0F) as u8
    }

    /// Selectivity level (bits 5-4): 0 memory region range, 1 whole memory region.
    pub fn selectivity(&self) -> u8 {
        ((self.bits >> 4) & 3) as u8
    }

    pub fn emit(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.bits.to_be_bytes());
    }

    pub fn visit<'a>(&self, offset: usize, v: &mut impl Visitor<'a>) {
        v.header("FLUSH Extended Transport Header", offset, Self::LEN);
        v.field(Field::new(
            "rocescope.feth.sel",
            "Selectivity level",
            Value::Uint(self.selectivity().into()),
        ));
        v.field(Field::new(
            "rocescope.feth.plt",
            "Placement type",
            Value::Uint(self.placement_type().into()),
        ));
    }
}
