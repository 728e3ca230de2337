//! InfiniBand Local Route Header (8 bytes, IBTA Vol. 1 §7.7): the link header of every native InfiniBand
//! packet, and the VCRC that ends it.
use nom::Parser;

use crate::be::{u8, u16};
use crate::error::{Layer, Malformed, need, short};
use crate::fields::{Field, Value, Visitor};

/// LINKTYPE_INFINIBAND: the packet starts at the LRH (tcpdump.org's link-layer header types).
pub const LINKTYPE_INFINIBAND: u16 = 247;

/// Link Next Header: what follows the LRH.
pub const LNH_RAW: u8 = 0;
pub const LNH_IP_NON_IBA: u8 = 1;
/// IBA local: a BTH follows.
pub const LNH_IBA_LOCAL: u8 = 2;
/// IBA global: a GRH, then a BTH.
pub const LNH_IBA_GLOBAL: u8 = 3;

/// The Variant CRC after the packet: 2 bytes.
pub const VCRC_LEN: usize = 2;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Lrh {
    /// Virtual lane (4 bits): 15 is the management lane.
    pub vl: u8,
    /// Link version (4 bits).
    pub lver: u8,
    /// Service level (4 bits).
    pub sl: u8,
    pub reserved2: u8,
    /// Link next header (2 bits).
    pub lnh: u8,
    pub dlid: u16,
    pub reserved5: u8,
    /// Packet length in 4-byte words, from the LRH to the ICRC, without the VCRC (11 bits).
    pub pkt_len: u16,
    pub slid: u16,
}

impl Lrh {
    pub const LEN: usize = 8;

    pub fn parse(input: &[u8]) -> Result<(Self, &[u8]), Malformed> {
        need(Layer::Lrh, input, Self::LEN)?;
        let (rest, (vl_lver, sl_lnh, dlid, len, slid)) = (u8, u8, u16, u16, u16)
            .parse(input)
            .map_err(short(Layer::Lrh, Self::LEN, input))?;
        let lrh = Lrh {
            vl: vl_lver >> 4,
            lver: vl_lver & 0x0F,
            sl: sl_lnh >> 4,
            reserved2: (sl_lnh >> 2) & 3,
            lnh: sl_lnh & 3,
            dlid,
            reserved5: (len >> 11) as u8,
            pkt_len: len & 0x07FF,
            slid,
        };
        Ok((lrh, rest))
    }

    pub fn emit(&self, out: &mut Vec<u8>) {
        out.push((self.vl << 4) | (self.lver & 0x0F));
        out.push((self.sl << 4) | ((self.reserved2 & 3) << 2) | (self.lnh & 3));
        out.extend_from_slice(&self.dlid.to_be_bytes());
        let len = (u16::from(self.reserved5 & 0x1F) << 11) | (self.pkt_len & 0x07FF);
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(&self.slid.to_be_bytes());
    }

    /// The packet's length in bytes from the LRH to the end of the ICRC.
    pub fn packet_bytes(&self) -> usize {
        usize::from(self.pkt_len) * 4
    }

    pub const TITLE: &'static str = "Local Route Header";

    pub fn visit<'a>(&self, offset: usize, v: &mut impl Visitor<'a>) {
        v.header(Self::TITLE, offset, Self::LEN);
        let fields = [
            (
                "infiniband.lrh.vl",
                "Virtual Lane",
                Value::Hex(self.vl.into(), 2),
            ),
            (
                "infiniband.lrh.lver",
                "Link Version",
                Value::Uint(self.lver.into()),
            ),
            (
                "infiniband.lrh.sl",
                "Service Level",
                Value::Uint(self.sl.into()),
            ),
            (
                "infiniband.lrh.lnh",
                "Link Next Header",
                Value::Hex(self.lnh.into(), 2),
            ),
            (
                "infiniband.lrh.dlid",
                "Destination Local ID",
                Value::Uint(self.dlid.into()),
            ),
            (
                "infiniband.lrh.pktlen",
                "Packet Length",
                Value::Uint(self.pkt_len.into()),
            ),
            (
                "infiniband.lrh.slid",
                "Source Local ID",
                Value::Uint(self.slid.into()),
            ),
        ];
        for (key, label, value) in fields {
            let field = Field::new(key, label, value);
            v.field(match key {
                "infiniband.lrh.lnh" => field.meaning(lnh_name(self.lnh)),
                _ => field,
            });
        }
    }
}

fn lnh_name(lnh: u8) -> &'static str {
    match lnh {
        LNH_RAW => "raw",
        LNH_IP_NON_IBA => "IP, non-IBA transport",
        LNH_IBA_LOCAL => "IBA local (BTH)",
        _ => "IBA global (GRH)",
    }
}
