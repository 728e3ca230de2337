//! VXLAN header (RFC 7348, 8 bytes; the group policy extension's bits as Wireshark reads them), then an
//! Ethernet frame.
use nom::Parser;

use crate::be::{u8, u16, u24};
use crate::error::{Layer, Malformed, need, short};
use crate::fields::{Field, Value, Visitor};

/// IANA UDP port of VXLAN.
pub const VXLAN_PORT: u16 = 4789;

const G: u16 = 0x8000;
const I: u16 = 0x0800;
const D: u16 = 0x0040;
const A: u16 = 0x0008;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct VxlanHeader {
    /// The flags byte and the following byte (the group policy extension's D and A bits), as Wireshark
    /// reads them.
    pub flags: u16,
    /// Group policy ID when G is set, else reserved.
    pub gbp: u16,
    /// VXLAN network identifier.
    pub vni: u32,
    pub reserved: u8,
}

impl VxlanHeader {
    pub const LEN: usize = 8;

    pub fn parse(input: &[u8]) -> Result<(Self, &[u8]), Malformed> {
        need(Layer::Vxlan, input, Self::LEN)?;
        let (rest, (flags, gbp, vni, reserved)) = (u16, u16, u24, u8)
            .parse(input)
            .map_err(short(Layer::Vxlan, Self::LEN, input))?;
        Ok((
            VxlanHeader {
                flags,
                gbp,
                vni,
                reserved,
            },
            rest,
        ))
    }

    pub fn emit(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.flags.to_be_bytes());
        out.extend_from_slice(&self.gbp.to_be_bytes());
        crate::be::put_u24(out, self.vni);
        out.push(self.reserved);
    }

    pub fn visit<'a>(&self, offset: usize, v: &mut impl Visitor<'a>) {
        v.header("Virtual eXtensible Local Area Network", offset, Self::LEN);
        let f = self.flags;
        v.field(Field::new("vxlan.flags", "Flags", Value::Hex(f.into(), 4)));
        for (key, label, bit) in [
            ("vxlan.flag_g", "GBP extension", G),
            ("vxlan.flag_i", "VNI present", I),
            ("vxlan.flag_d", "Don't learn", D),
            ("vxlan.flag_a", "Policy applied", A),
        ] {
            v.field(Field::new(key, label, Value::Bool(f & bit != 0)));
        }
        v.field(Field::new(
            "vxlan.flags_reserved",
            "Reserved flags",
            Value::Hex((f & !(G | I | D | A)).into(), 4),
        ));
        if f & G != 0 {
            v.field(Field::new(
                "vxlan.gbp",
                "Group policy ID",
                Value::Uint(self.gbp.into()),
            ));
        } else {
            v.field(Field::new(
                "vxlan.reserved_16",
                "Reserved",
                Value::Hex(self.gbp.into(), 4),
            ));
        }
        v.field(Field::new("vxlan.vni", "VNI", Value::Uint(self.vni.into())));
        v.field(Field::new(
            "vxlan.reserved8",
            "Reserved",
            Value::Uint(self.reserved.into()),
        ));
    }
}
