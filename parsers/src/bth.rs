//! Base Transport Header (12 bytes).
use nom::Parser;

use crate::be::{put_u24, u8, u16, u24};
use crate::error::{Layer, Malformed, need, short};
use crate::fields::{Field, Value, Visitor};
use crate::opcode::Opcode;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Bth {
    pub opcode: u8,
    /// Solicited event.
    pub se: bool,
    /// MigReq.
    pub migreq: bool,
    pub pad_count: u8,
    pub tver: u8,
    pub pkey: u16,
    /// Forward ECN (byte 4 bit 7): congestion seen on the way to this packet's destination.
    pub fecn: bool,
    /// Backward ECN (byte 4 bit 6): set on CNPs.
    pub becn: bool,
    /// The low 6 bits of byte 4.
    pub reserved6: u8,
    pub dest_qp: u32,
    pub ack_req: bool,
    /// The low 7 bits of byte 8.
    pub reserved7: u8,
    pub psn: u32,
}

impl Bth {
    /// The names of the flags set, in wire order: `SE`, `AckReq`, `FECN`, `BECN` (as the line views show
    /// them).
    pub fn flag_names(&self) -> impl Iterator<Item = &'static str> {
        [
            (self.se, "SE"),
            (self.ack_req, "AckReq"),
            (self.fecn, "FECN"),
            (self.becn, "BECN"),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
    }

    pub const LEN: usize = 12;

    pub fn parse(input: &[u8]) -> Result<(Self, &[u8]), Malformed> {
        need(Layer::Bth, input, Self::LEN)?;
        let (rest, (opcode, flags, pkey, byte4, dest_qp, byte8, psn)) = (
            u8, u8, u16, u8, u24, u8, u24,
        )
            .parse(input)
            .map_err(short(Layer::Bth, Self::LEN, input))?;
        let bth = Bth {
            opcode,
            se: flags & 0x80 != 0,
            migreq: flags & 0x40 != 0,
            pad_count: (flags >> 4) & 3,
            tver: flags & 0x0F,
            pkey,
            fecn: byte4 & 0x80 != 0,
            becn: byte4 & 0x40 != 0,
            reserved6: byte4 & 0x3F,
            dest_qp,
            ack_req: byte8 & 0x80 != 0,
            reserved7: byte8 & 0x7F,
            psn,
        };
        Ok((bth, rest))
    }

    pub fn op(&self) -> Opcode {
        Opcode(self.opcode)
    }

    pub fn emit(&self, out: &mut Vec<u8>) {
        out.push(self.opcode);
        out.push(
            (u8::from(self.se) << 7)
                | (u8::from(self.migreq) << 6)
                | ((self.pad_count & 3) << 4)
                | (self.tver & 0x0F),
        );
        out.extend_from_slice(&self.pkey.to_be_bytes());
        out.push((u8::from(self.fecn) << 7) | (u8::from(self.becn) << 6) | (self.reserved6 & 0x3F));
        put_u24(out, self.dest_qp);
        out.push((u8::from(self.ack_req) << 7) | (self.reserved7 & 0x7F));
        put_u24(out, self.psn);
    }

    /// The header's title in the `-V` tree.
    pub const TITLE: &'static str = "Base Transport Header";

    pub fn visit<'a>(&self, offset: usize, v: &mut impl Visitor<'a>) {
        v.header(Self::TITLE, offset, Self::LEN);
        v.field(
            Field::new(
                "infiniband.bth.opcode",
                "Opcode",
                Value::Uint(self.opcode.into()),
            )
            .meaning(self.op().name()),
        );
        v.field(Field::new(
            "infiniband.bth.se",
            "Solicited event",
            Value::Bool(self.se),
        ));
        v.field(Field::new(
            "infiniband.bth.m",
            "MigReq",
            Value::Bool(self.migreq),
        ));
        v.field(Field::new(
            "infiniband.bth.padcnt",
            "Pad count",
            Value::Uint(self.pad_count.into()),
        ));
        v.field(Field::new(
            "infiniband.bth.tver",
            "Header version",
            Value::Uint(self.tver.into()),
        ));
        v.field(Field::new(
            "infiniband.bth.p_key",
            "Partition key",
            Value::Hex(self.pkey.into(), 4),
        ));
        v.field(Field::new(
            "rocescope.bth.fecn",
            "FECN",
            Value::Bool(self.fecn),
        ));
        v.field(Field::new(
            "rocescope.bth.becn",
            "BECN",
            Value::Bool(self.becn),
        ));
        v.field(Field::new(
            "infiniband.bth.destqp",
            "Destination QP",
            Value::Hex(self.dest_qp.into(), 6),
        ));
        v.field(Field::new(
            "infiniband.bth.a",
            "Acknowledge request",
            Value::Bool(self.ack_req),
        ));
        v.field(Field::new(
            "infiniband.bth.psn",
            "Packet sequence number",
            Value::Uint(self.psn.into()),
        ));
    }
}
