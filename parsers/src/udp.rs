//! UDP header.
use nom::Parser;

use crate::be::u16;
use crate::error::{Layer, Malformed, need, short};
use crate::fields::{Field, Value, Visitor};

/// IANA port of RoCEv2.
pub const ROCEV2_PORT: u16 = 4791;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpHeader {
    pub src_port: u16,
    pub dst_port: u16,
    pub length: u16,
    pub checksum: u16,
}

impl UdpHeader {
    pub const LEN: usize = 8;

    pub fn parse(input: &[u8]) -> Result<(Self, &[u8]), Malformed> {
        need(Layer::Udp, input, Self::LEN)?;
        let (rest, (src_port, dst_port, length, checksum)) = (u16, u16, u16, u16)
            .parse(input)
            .map_err(short(Layer::Udp, Self::LEN, input))?;
        Ok((
            UdpHeader {
                src_port,
                dst_port,
                length,
                checksum,
            },
            rest,
        ))
    }

    pub fn emit(&self, out: &mut Vec<u8>) {
        for v in [self.src_port, self.dst_port, self.length, self.checksum] {
            out.extend_from_slice(&v.to_be_bytes());
        }
    }

    pub fn visit<'a>(&self, offset: usize, v: &mut impl Visitor<'a>) {
        v.header("User Datagram Protocol", offset, Self::LEN);
        v.field(Field::new(
            "udp.srcport",
            "Source port",
            Value::Uint(self.src_port.into()),
        ));
        v.field(Field::new(
            "udp.dstport",
            "Destination port",
            Value::Uint(self.dst_port.into()),
        ));
        v.field(Field::new(
            "udp.length",
            "Length",
            Value::Uint(self.length.into()),
        ));
        let checksum = Field::new(
            "udp.checksum",
            "Checksum",
            Value::Hex(self.checksum.into(), 4),
        );
        v.field(if self.checksum == 0 {
            checksum.meaning("not computed (usual for RoCE)")
        } else {
            checksum
        });
    }
}
