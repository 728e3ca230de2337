//! Generic Routing Encapsulation header (RFC 2784, RFC 2890; RFC 1701's flags): the 4-byte base and the
//! optional checksum, key and sequence number its flags announce.
use nom::Parser;

use crate::be::u16;
use crate::error::{Layer, Malformed, need, short};
use crate::fields::{Field, Value, Visitor};

/// IP protocol number of GRE.
pub const PROTO_GRE: u8 = 47;
/// GRE protocol type of ERSPAN types I and II.
pub const PROTO_ERSPAN_II: u16 = 0x88BE;
/// GRE protocol type of ERSPAN type III.
pub const PROTO_ERSPAN_III: u16 = 0x22EB;
/// GRE protocol type of transparent Ethernet bridging (an Ethernet frame follows).
pub const PROTO_TEB: u16 = 0x6558;

const C: u16 = 0x8000;
const R: u16 = 0x4000;
const K: u16 = 0x2000;
const S: u16 = 0x1000;
const STRICT: u16 = 0x0800;
const RECUR: u16 = 0x0700;
const A: u16 = 0x0080;
const RESERVED: u16 = 0x0078;
const VERSION: u16 = 0x0007;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GreHeader {
    /// Flags (C R K S s Recur A Flags) and version, as on the wire.
    pub flags_version: u16,
    pub proto: u16,
    /// Checksum and offset: present when C or R is set.
    pub checksum: Option<(u16, u16)>,
    pub key: Option<u32>,
    pub sequence: Option<u32>,
    /// Acknowledgment number of enhanced GRE (version 1, A set).
    pub ack: Option<u32>,
}

impl GreHeader {
    pub const BASE_LEN: usize = 4;

    pub fn parse(input: &[u8]) -> Result<(Self, &[u8]), Malformed> {
        need(Layer::Gre, input, Self::BASE_LEN)?;
        let (rest, (flags_version, proto)) =
            (u16, u16)
                .parse(input)
                .map_err(short(Layer::Gre, Self::BASE_LEN, input))?;
        let mut h = GreHeader {
            flags_version,
            proto,
            checksum: None,
            key: None,
            sequence: None,
            ack: None,
        };
        need(Layer::Gre, input, h.header_len())?;
        let word = |at: usize| {
            let b = input.get(at..at + 4).unwrap_or_default();
            b.try_into().map(u32::from_be_bytes).unwrap_or_default()
        };
        let mut at = Self::BASE_LEN;
        let mut next = |present: bool| {
            present.then(|| {
                at += 4;
                word(at - 4)
            })
        };
        h.checksum = next(h.has(C) || h.has(R)).map(|w| ((w >> 16) as u16, w as u16));
        h.key = next(h.has(K));
        h.sequence = next(h.has(S));
        h.ack = next(h.version() == 1 && h.has(A));
        Ok((
            h,
            rest.get(h.header_len() - Self::BASE_LEN..)
                .unwrap_or_default(),
        ))
    }

    fn has(&self, flag: u16) -> bool {
        self.flags_version & flag != 0
    }

    pub fn version(&self) -> u16 {
        self.flags_version & VERSION
    }

    /// Routing information (RFC 1701's R bit) follows the header: a list rocescope does not walk.
    pub fn has_routing(&self) -> bool {
        self.has(R)
    }

    /// Header length with its optional fields (routing excluded).
    pub fn header_len(&self) -> usize {
        let optional = [
            self.has(C) || self.has(R),
            self.has(K),
            self.has(S),
            self.version() == 1 && self.has(A),
        ];
        Self::BASE_LEN + 4 * optional.iter().filter(|&&p| p).count()
    }

    /// Emits the header; the optional fields are written as the flags say (zero where a value is absent).
    pub fn emit(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.flags_version.to_be_bytes());
        out.extend_from_slice(&self.proto.to_be_bytes());
        if self.has(C) || self.has(R) {
            let (sum, offset) = self.checksum.unwrap_or_default();
            out.extend_from_slice(&sum.to_be_bytes());
            out.extend_from_slice(&offset.to_be_bytes());
        }
        for (present, value) in [
            (self.has(K), self.key),
            (self.has(S), self.sequence),
            (self.version() == 1 && self.has(A), self.ack),
        ] {
            if present {
                out.extend_from_slice(&value.unwrap_or_default().to_be_bytes());
            }
        }
    }

    pub fn visit<'a>(&self, offset: usize, v: &mut impl Visitor<'a>) {
        v.header("Generic Routing Encapsulation", offset, self.header_len());
        let fv = self.flags_version;
        v.field(Field::new(
            "gre.flags_and_version",
            "Flags and version",
            Value::Hex(fv.into(), 4),
        ));
        for (key, label, flag) in [
            ("gre.flags.checksum", "Checksum present", C),
            ("gre.flags.routing", "Routing present", R),
            ("gre.flags.key", "Key present", K),
            ("gre.flags.sequence_number", "Sequence number present", S),
            (
                "gre.flags.strict_source_route",
                "Strict source route",
                STRICT,
            ),
        ] {
            v.field(Field::new(key, label, Value::Bool(fv & flag != 0)));
        }
        v.field(Field::new(
            "gre.flags.recursion_control",
            "Recursion control",
            Value::Uint(((fv & RECUR) >> 8).into()),
        ));
        if self.version() == 1 {
            v.field(Field::new(
                "gre.flags.ack",
                "Acknowledgment present",
                Value::Bool(self.has(A)),
            ));
        }
        v.field(Field::new(
            "gre.flags.reserved",
            "Flags (reserved)",
            Value::Uint(((fv & RESERVED) >> 3).into()),
        ));
        v.field(Field::new(
            "gre.flags.version",
            "Version",
            Value::Uint(self.version().into()),
        ));
        v.field(
            Field::new(
                "gre.proto",
                "Protocol type",
                Value::Hex(self.proto.into(), 4),
            )
            .meaning(proto_name(self.proto)),
        );
        self.visit_optional(v);
    }

    fn visit_optional<'a>(&self, v: &mut impl Visitor<'a>) {
        if let Some((sum, offset)) = self.checksum {
            if self.has(C) {
                v.field(Field::new(
                    "gre.checksum",
                    "Checksum",
                    Value::Hex(sum.into(), 4),
                ));
            }
            if self.has(R) {
                v.field(Field::new(
                    "gre.offset",
                    "Offset",
                    Value::Uint(offset.into()),
                ));
            }
        }
        if let Some(key) = self.key {
            v.field(Field::new("gre.key", "Key", Value::Hex(key.into(), 8)));
        }
        if let Some(seq) = self.sequence {
            v.field(Field::new(
                "gre.sequence_number",
                "Sequence number",
                Value::Uint(seq.into()),
            ));
        }
        if let Some(ack) = self.ack {
            v.field(Field::new(
                "gre.ack_number",
                "Acknowledgment number",
                Value::Uint(ack.into()),
            ));
        }
    }
}

pub fn proto_name(proto: u16) -> &'static str {
    match proto {
        PROTO_ERSPAN_II => "ERSPAN (type I or II)",
        PROTO_ERSPAN_III => "ERSPAN (type III)",
        PROTO_TEB => "Transparent Ethernet bridging",
        p => crate::ethernet::ethertype_name(p),
    }
}
