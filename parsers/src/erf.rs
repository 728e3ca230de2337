//! Endace's Extensible Record Format header (16 bytes, then any extension headers), as pcap link type 197
//! carries it: each packet is one ERF record. Layout: the ERF Types reference (Endace EDM11-01), as
//! Wireshark's packet-erf.c reads it. rocescope reads record type 21 (InfiniBand: the LRH follows).
use nom::Parser;

use crate::be::{array, u8, u16};
use crate::error::{Layer, Malformed, need, short};
use crate::fields::{Field, Value, Visitor};

/// LINKTYPE_ERF.
pub const LINKTYPE_ERF: u16 = 197;

/// ERF record type 21: a native InfiniBand packet from the LRH on.
pub const TYPE_INFINIBAND: u8 = 21;

/// Type byte bit 7: an 8-byte extension header follows (and in each extension header, another).
const EXT_HEADER_PRESENT: u8 = 0x80;
const EXT_HEADER_LEN: usize = 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ErfHeader {
    /// 32.32 fixed-point seconds since 1970, little-endian on the wire.
    pub timestamp: u64,
    /// The record type (the type byte's low 7 bits).
    pub record_type: u8,
    /// How many extension headers follow the 16 bytes.
    pub ext_headers: u8,
    /// Capture interface (bits 0-1), varying length (2), truncated (3), RX error (4), DS error (5).
    pub flags: u8,
    /// Record length, header and padding included.
    pub rlen: u16,
    /// Loss counter: records lost between this one and the previous.
    pub lctr: u16,
    /// The packet's length on the wire.
    pub wlen: u16,
}

impl ErfHeader {
    pub const LEN: usize = 16;

    pub fn parse(input: &[u8]) -> Result<(Self, &[u8]), Malformed> {
        need(Layer::Erf, input, Self::LEN)?;
        let (mut rest, (ts, type_byte, flags, rlen, lctr, wlen)) =
            (array::<8>, u8, u8, u16, u16, u16)
                .parse(input)
                .map_err(short(Layer::Erf, Self::LEN, input))?;
        let mut h = ErfHeader {
            timestamp: u64::from_le_bytes(ts),
            record_type: type_byte & !EXT_HEADER_PRESENT,
            ext_headers: 0,
            flags,
            rlen,
            lctr,
            wlen,
        };
        // Each extension header says in its first bit whether another follows; at most one per 8 bytes of
        // the record, so the loop is bounded by the input.
        let mut more = type_byte & EXT_HEADER_PRESENT != 0;
        while more {
            let needed = Self::LEN + EXT_HEADER_LEN * (usize::from(h.ext_headers) + 1);
            let Some((ext, after)) = rest.split_first_chunk::<EXT_HEADER_LEN>() else {
                return Err(Malformed::truncated(Layer::Erf, needed, input.len()));
            };
            let [first, ..] = *ext;
            more = first & EXT_HEADER_PRESENT != 0;
            h.ext_headers = h.ext_headers.saturating_add(1);
            rest = after;
        }
        Ok((h, rest))
    }

    /// The header with its extension headers (emitted as zeros but for the chaining bit).
    pub fn header_len(&self) -> usize {
        Self::LEN + EXT_HEADER_LEN * usize::from(self.ext_headers)
    }

    pub fn emit(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.timestamp.to_le_bytes());
        let ext = if self.ext_headers > 0 {
            EXT_HEADER_PRESENT
        } else {
            0
        };
        out.push(self.record_type | ext);
        out.push(self.flags);
        out.extend_from_slice(&self.rlen.to_be_bytes());
        out.extend_from_slice(&self.lctr.to_be_bytes());
        out.extend_from_slice(&self.wlen.to_be_bytes());
        for i in 0..self.ext_headers {
            let more = if i + 1 < self.ext_headers {
                EXT_HEADER_PRESENT
            } else {
                0
            };
            out.push(more);
            out.extend_from_slice(&[0; EXT_HEADER_LEN - 1]);
        }
    }

    /// The record type's name, as the ERF Types reference names it (the ones rocescope can name).
    pub fn type_name(&self) -> &'static str {
        match self.record_type {
            1 => "HDLC_POS",
            2 => "ETH",
            3 => "ATM",
            4 => "AAL5",
            10 => "COLOR_ETH",
            16 => "DSM_COLOR_ETH",
            TYPE_INFINIBAND => "INFINIBAND",
            22 => "IPV4",
            23 => "IPV6",
            24 => "RAW_LINK",
            25 => "INFINIBAND_LINK",
            _ => "unknown",
        }
    }

    pub fn visit<'a>(&self, offset: usize, v: &mut impl Visitor<'a>) {
        v.header("Extensible Record Format", offset, self.header_len());
        let bit = |n: u8| Value::Uint(u64::from((self.flags >> n) & 1));
        let fields = [
            ("erf.ts", "Timestamp", Value::Hex(self.timestamp, 16)),
            (
                "erf.types.type",
                "Type",
                Value::Uint(self.record_type.into()),
            ),
            ("erf.flags", "Flags", Value::Hex(self.flags.into(), 2)),
            (
                "erf.flags.cap",
                "Capture interface",
                Value::Uint((self.flags & 3).into()),
            ),
            ("erf.flags.vlen", "Varying record length", bit(2)),
            ("erf.flags.trunc", "Truncated", bit(3)),
            ("erf.flags.rxe", "RX error", bit(4)),
            ("erf.flags.dse", "DS error", bit(5)),
            ("erf.rlen", "Record length", Value::Uint(self.rlen.into())),
            ("erf.lctr", "Loss counter", Value::Uint(self.lctr.into())),
            ("erf.wlen", "Wire length", Value::Uint(self.wlen.into())),
        ];
        for (key, label, value) in fields {
            let field = Field::new(key, label, value);
            v.field(match key {
                "erf.types.type" => field.meaning(self.type_name()),
                _ => field,
            });
        }
    }
}
