//! Ethernet II header (destination, source, EtherType).
use nom::Parser;

use crate::be::{mac, u16};
use crate::error::{Layer, Malformed, need, short};
use crate::fields::{Field, Value, Visitor};

pub const ETHERTYPE_IPV4: u16 = 0x0800;
pub const ETHERTYPE_IPV6: u16 = 0x86DD;
pub const ETHERTYPE_VLAN: u16 = 0x8100;
pub const ETHERTYPE_QINQ: u16 = 0x88A8;
/// Pre-standard QinQ TPID still used by some switches.
pub const ETHERTYPE_QINQ_OLD: u16 = 0x9100;
pub const ETHERTYPE_MAC_CONTROL: u16 = 0x8808;
pub const ETHERTYPE_ROCEV1: u16 = 0x8915;
/// Values up to 1500 in the type position are an 802.3 length (an LLC frame follows), not an EtherType.
pub const MAX_8023_LENGTH: u16 = 1500;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EthernetHeader {
    pub dst: [u8; 6],
    pub src: [u8; 6],
    pub ethertype: u16,
}

impl EthernetHeader {
    pub const LEN: usize = 14;

    pub fn parse(input: &[u8]) -> Result<(Self, &[u8]), Malformed> {
        need(Layer::Ethernet, input, Self::LEN)?;
        let (rest, (dst, src, ethertype)) =
            (mac, mac, u16)
                .parse(input)
                .map_err(short(Layer::Ethernet, Self::LEN, input))?;
        Ok((
            EthernetHeader {
                dst,
                src,
                ethertype,
            },
            rest,
        ))
    }

    pub fn emit(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.dst);
        out.extend_from_slice(&self.src);
        out.extend_from_slice(&self.ethertype.to_be_bytes());
    }

    pub fn visit<'a>(&self, offset: usize, v: &mut impl Visitor<'a>) {
        v.header("Ethernet II", offset, Self::LEN);
        v.field(Field::new("eth.dst", "Destination", Value::Mac(self.dst)));
        v.field(Field::new("eth.src", "Source", Value::Mac(self.src)));
        if self.ethertype <= MAX_8023_LENGTH {
            v.field(Field::new(
                "eth.len",
                "Length (802.3)",
                Value::Uint(self.ethertype.into()),
            ));
        } else {
            v.field(
                Field::new("eth.type", "Type", Value::Hex(self.ethertype.into(), 4))
                    .meaning(ethertype_name(self.ethertype)),
            );
        }
    }
}

pub fn ethertype_name(ethertype: u16) -> &'static str {
    match ethertype {
        ETHERTYPE_IPV4 => "IPv4",
        ETHERTYPE_IPV6 => "IPv6",
        ETHERTYPE_VLAN => "802.1Q VLAN",
        ETHERTYPE_QINQ | ETHERTYPE_QINQ_OLD => "802.1ad QinQ",
        ETHERTYPE_MAC_CONTROL => "MAC control",
        ETHERTYPE_ROCEV1 => "RoCE (v1)",
        crate::other::ETHERTYPE_ARP => "ARP",
        crate::other::ETHERTYPE_LLDP => "LLDP",
        _ => "other",
    }
}

pub fn is_vlan_tpid(ethertype: u16) -> bool {
    matches!(
        ethertype,
        ETHERTYPE_VLAN | ETHERTYPE_QINQ | ETHERTYPE_QINQ_OLD
    )
}
