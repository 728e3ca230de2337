//! Immediate data (ImmDt, 4 bytes) and the Invalidate Extended Transport Header (IETH, 4 bytes: an R_Key).
use crate::be::u32;
use crate::error::{Layer, Malformed, need, short};
use crate::fields::{Field, Value, Visitor};

/// A 4-byte header holding one 32-bit value.
fn parse_word(layer: Layer, input: &[u8]) -> Result<(u32, &[u8]), Malformed> {
    need(layer, input, 4)?;
    let (rest, value) = u32(input).map_err(short(layer, 4, input))?;
    Ok((value, rest))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ImmDt(pub u32);

impl ImmDt {
    pub const LEN: usize = 4;

    pub fn parse(input: &[u8]) -> Result<(Self, &[u8]), Malformed> {
        parse_word(Layer::ImmDt, input).map(|(v, rest)| (ImmDt(v), rest))
    }

    pub fn emit(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.0.to_be_bytes());
    }

    pub fn visit<'a>(&self, offset: usize, v: &mut impl Visitor<'a>) {
        v.header("Immediate Data", offset, Self::LEN);
        v.field(Field::new(
            "infiniband.immdt",
            "Immediate data",
            Value::Hex(self.0.into(), 8),
        ));
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Ieth {
    /// The R_Key to invalidate.
    pub r_key: u32,
}

impl Ieth {
    pub const LEN: usize = 4;

    pub fn parse(input: &[u8]) -> Result<(Self, &[u8]), Malformed> {
        parse_word(Layer::Ieth, input).map(|(r_key, rest)| (Ieth { r_key }, rest))
    }

    pub fn emit(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.r_key.to_be_bytes());
    }

    pub fn visit<'a>(&self, offset: usize, v: &mut impl Visitor<'a>) {
        v.header("Invalidate Extended Transport Header", offset, Self::LEN);
        v.field(Field::new(
            "infiniband.ieth",
            "R_Key to invalidate",
            Value::Hex(self.r_key.into(), 8),
        ));
    }
}
