//! IPv6 fixed header.
use nom::Parser;

use crate::be::{array, u8, u16, u32};
use crate::error::{Layer, Malformed, MalformedKind, need, short};
use crate::fields::{Field, Value, Visitor};

pub const NEXT_HEADER_FRAGMENT: u8 = 44;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv6Header {
    pub dscp: u8,
    pub ecn: u8,
    pub flow_label: u32,
    pub payload_len: u16,
    pub next_header: u8,
    pub hop_limit: u8,
    pub src: [u8; 16],
    pub dst: [u8; 16],
}

impl Ipv6Header {
    pub const LEN: usize = 40;

    pub fn parse(input: &[u8]) -> Result<(Self, &[u8]), Malformed> {
        parse_fixed(Layer::Ipv6, input)
    }

    pub fn traffic_class(&self) -> u8 {
        (self.dscp << 2) | (self.ecn & 3)
    }

    pub fn emit(&self, out: &mut Vec<u8>) {
        let word =
            (6u32 << 28) | (u32::from(self.traffic_class()) << 20) | (self.flow_label & 0xF_FFFF);
        out.extend_from_slice(&word.to_be_bytes());
        out.extend_from_slice(&self.payload_len.to_be_bytes());
        out.push(self.next_header);
        out.push(self.hop_limit);
        out.extend_from_slice(&self.src);
        out.extend_from_slice(&self.dst);
    }

    pub fn visit<'a>(&self, offset: usize, v: &mut impl Visitor<'a>) {
        v.header("Internet Protocol Version 6", offset, Self::LEN);
        // tshark names the version both ways in an IPv6 header.
        v.field(Field::new("ip.version", "Version", Value::Uint(6)));
        v.field(Field::new("ipv6.version", "Version", Value::Uint(6)));
        v.field(Field::new(
            "ipv6.tclass",
            "Traffic Class",
            Value::Hex(((self.dscp << 2) | (self.ecn & 3)).into(), 8),
        ));
        v.field(Field::new(
            "ipv6.tclass.dscp",
            "DSCP",
            Value::Uint(self.dscp.into()),
        ));
        v.field(
            Field::new("ipv6.tclass.ecn", "ECN", Value::Uint(self.ecn.into()))
                .meaning(crate::ipv4::ecn_name(self.ecn)),
        );
        v.field(Field::new(
            "ipv6.flow",
            "Flow label",
            Value::Hex(self.flow_label.into(), 5),
        ));
        v.field(Field::new(
            "ipv6.plen",
            "Payload length",
            Value::Uint(self.payload_len.into()),
        ));
        let next = Field::new(
            "ipv6.nxt",
            "Next header",
            Value::Uint(self.next_header.into()),
        );
        v.field(match crate::other::protocol_name(self.next_header) {
            Some(name) => next.meaning(name),
            None => next,
        });
        v.field(Field::new(
            "ipv6.hlim",
            "Hop limit",
            Value::Uint(self.hop_limit.into()),
        ));
        v.field(Field::new("ipv6.src", "Source", Value::Ipv6(self.src)));
        v.field(Field::new("ipv6.dst", "Destination", Value::Ipv6(self.dst)));
    }
}

/// The 40-byte IPv6 layout, shared with the GRH of RoCEv1 (same layout, other names).
pub(crate) fn parse_fixed(layer: Layer, input: &[u8]) -> Result<(Ipv6Header, &[u8]), Malformed> {
    need(layer, input, Ipv6Header::LEN)?;
    let (rest, (word, payload_len, next_header, hop_limit, src, dst)) =
        (u32, u16, u8, u8, array::<16>, array::<16>)
            .parse(input)
            .map_err(short(layer, Ipv6Header::LEN, input))?;
    let version = (word >> 28) as u8;
    if version != 6 {
        return Err(Malformed::new(layer, MalformedKind::BadVersion(version)));
    }
    let traffic_class = (word >> 20) as u8;
    let header = Ipv6Header {
        dscp: traffic_class >> 2,
        ecn: traffic_class & 3,
        flow_label: word & 0xF_FFFF,
        payload_len,
        next_header,
        hop_limit,
        src,
        dst,
    };
    Ok((header, rest))
}
