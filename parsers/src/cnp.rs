//! The 16 reserved bytes after the BTH of a RoCEv2 Congestion Notification Packet (opcode 0x81).
use crate::be::array;
use crate::error::{Layer, Malformed, need, short};
use crate::fields::{Field, Value, Visitor};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Cnp {
    pub reserved: [u8; 16],
}

impl Cnp {
    pub const LEN: usize = 16;

    pub fn parse(input: &[u8]) -> Result<(Self, &[u8]), Malformed> {
        need(Layer::Cnp, input, Self::LEN)?;
        let (rest, reserved) = array::<16>(input).map_err(short(Layer::Cnp, Self::LEN, input))?;
        Ok((Cnp { reserved }, rest))
    }

    pub fn emit(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.reserved);
    }

    pub fn visit<'a>(&self, offset: usize, v: &mut impl Visitor<'a>) {
        v.header("Congestion Notification Packet", offset, Self::LEN);
        let all_zero = self.reserved.iter().all(|b| *b == 0);
        let value = Value::Text(if all_zero { "zero" } else { "non-zero" });
        v.field(Field::new(
            "rocescope.cnp.reserved",
            "Reserved (16 bytes)",
            value,
        ));
    }
}
