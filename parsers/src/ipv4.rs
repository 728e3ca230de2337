//! IPv4 header.
use nom::Parser;

use crate::be::{array, u8, u16};
use crate::error::{Layer, Malformed, MalformedKind, need, short};
use crate::fields::{Field, Value, Visitor};

pub const PROTO_UDP: u8 = 17;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4Header {
    /// Header length in bytes (IHL x 4).
    pub header_len: u8,
    pub dscp: u8,
    pub ecn: u8,
    pub total_len: u16,
    pub id: u16,
    pub dont_fragment: bool,
    pub more_fragments: bool,
    /// The reserved flag (RFC 791's bit 0 of the flags; RFC 3514's "evil bit").
    pub reserved_flag: bool,
    /// Fragment offset in 8-byte units.
    pub frag_offset: u16,
    pub ttl: u8,
    pub protocol: u8,
    pub checksum: u16,
    pub src: [u8; 4],
    pub dst: [u8; 4],
}

impl Ipv4Header {
    pub const MIN_LEN: usize = 20;

    /// Parses the header, options included; `rest` starts after the options.
    pub fn parse(input: &[u8]) -> Result<(Self, &[u8]), Malformed> {
        need(Layer::Ipv4, input, Self::MIN_LEN)?;
        let (rest, (vihl, tos, total_len, id, flags_frag, ttl, protocol, checksum, src, dst)) =
            (u8, u8, u16, u16, u16, u8, u8, u16, array::<4>, array::<4>)
                .parse(input)
                .map_err(short(Layer::Ipv4, Self::MIN_LEN, input))?;
        let version = vihl >> 4;
        if version != 4 {
            return Err(Malformed::new(
                Layer::Ipv4,
                MalformedKind::BadVersion(version),
            ));
        }
        let header_len = (vihl & 0x0F) * 4;
        if usize::from(header_len) < Self::MIN_LEN {
            return Err(Malformed::new(
                Layer::Ipv4,
                MalformedKind::LengthTooShort {
                    claimed: header_len.into(),
                    minimum: Self::MIN_LEN,
                },
            ));
        }
        let options_len = usize::from(header_len) - Self::MIN_LEN;
        need(Layer::Ipv4, input, header_len.into())?;
        let rest = rest.get(options_len..).unwrap_or_default();
        let header = Ipv4Header {
            header_len,
            dscp: tos >> 2,
            ecn: tos & 3,
            total_len,
            id,
            dont_fragment: flags_frag & 0x4000 != 0,
            more_fragments: flags_frag & 0x2000 != 0,
            reserved_flag: flags_frag & 0x8000 != 0,
            frag_offset: flags_frag & 0x1FFF,
            ttl,
            protocol,
            checksum,
            src,
            dst,
        };
        Ok((header, rest))
    }

    pub fn is_fragment(&self) -> bool {
        self.more_fragments || self.frag_offset != 0
    }

    /// Emits a 20-byte header (no options) with the checksum computed.
    pub fn emit(&self, out: &mut Vec<u8>) {
        let start = out.len();
        let flags_frag = (u16::from(self.reserved_flag) << 15)
            | (u16::from(self.dont_fragment) << 14)
            | (u16::from(self.more_fragments) << 13)
            | (self.frag_offset & 0x1FFF);
        out.push(0x45);
        out.push((self.dscp << 2) | (self.ecn & 3));
        out.extend_from_slice(&self.total_len.to_be_bytes());
        out.extend_from_slice(&self.id.to_be_bytes());
        out.extend_from_slice(&flags_frag.to_be_bytes());
        out.push(self.ttl);
        out.push(self.protocol);
        out.extend_from_slice(&[0, 0]);
        out.extend_from_slice(&self.src);
        out.extend_from_slice(&self.dst);
        let sum = checksum(out.get(start..).unwrap_or_default());
        if let Some(c) = out.get_mut(start + 10..start + 12) {
            c.copy_from_slice(&sum.to_be_bytes());
        }
    }

    pub fn visit<'a>(&self, offset: usize, v: &mut impl Visitor<'a>) {
        v.header(
            "Internet Protocol Version 4",
            offset,
            self.header_len.into(),
        );
        v.field(Field::new("ip.version", "Version", Value::Uint(4)));
        v.field(Field::new(
            "ip.hdr_len",
            "Header length",
            Value::Uint(self.header_len.into()),
        ));
        v.field(Field::new(
            "ip.dsfield",
            "Differentiated Services Field",
            Value::Hex(((self.dscp << 2) | (self.ecn & 3)).into(), 2),
        ));
        v.field(Field::new(
            "ip.dsfield.dscp",
            "DSCP",
            Value::Uint(self.dscp.into()),
        ));
        v.field(
            Field::new("ip.dsfield.ecn", "ECN", Value::Uint(self.ecn.into()))
                .meaning(ecn_name(self.ecn)),
        );
        v.field(Field::new(
            "ip.len",
            "Total length",
            Value::Uint(self.total_len.into()),
        ));
        v.field(Field::new(
            "ip.id",
            "Identification",
            Value::Hex(self.id.into(), 4),
        ));
        let flags = (u8::from(self.reserved_flag) << 2)
            | (u8::from(self.dont_fragment) << 1)
            | u8::from(self.more_fragments);
        v.field(Field::new("ip.flags", "Flags", Value::Hex(flags.into(), 2)));
        v.field(Field::new(
            "ip.flags.rb",
            "Reserved bit",
            Value::Bool(self.reserved_flag),
        ));
        v.field(Field::new(
            "ip.flags.df",
            "Don't fragment",
            Value::Bool(self.dont_fragment),
        ));
        v.field(Field::new(
            "ip.flags.mf",
            "More fragments",
            Value::Bool(self.more_fragments),
        ));
        v.field(Field::new(
            "ip.frag_offset",
            "Fragment offset",
            Value::Uint(self.frag_offset.into()),
        ));
        v.field(Field::new(
            "ip.ttl",
            "Time to live",
            Value::Uint(self.ttl.into()),
        ));
        let proto = Field::new("ip.proto", "Protocol", Value::Uint(self.protocol.into()));
        v.field(match crate::other::protocol_name(self.protocol) {
            Some(name) => proto.meaning(name),
            None => proto,
        });
        v.field(Field::new(
            "ip.checksum",
            "Header checksum",
            Value::Hex(self.checksum.into(), 4),
        ));
        // Not verified, as tshark's default leaves it (its status 2, "Unverified").
        v.field(
            Field::new(
                "ip.checksum.status",
                "Header checksum status",
                Value::Uint(2),
            )
            .meaning("Unverified"),
        );
        v.field(Field::new("ip.src", "Source", Value::Ipv4(self.src)));
        v.field(Field::new("ip.dst", "Destination", Value::Ipv4(self.dst)));
    }
}

/// The Internet checksum (RFC 1071) of `data`.
pub fn checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = data
        .chunks(2)
        .map(|c| match *c {
            [a, b] => u32::from(u16::from_be_bytes([a, b])),
            [a] => u32::from(a) << 8,
            _ => 0,
        })
        .sum();
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    !(sum as u16)
}

/// The ECN codepoint's name (RFC 3168): 0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE.
pub fn ecn_name(ecn: u8) -> &'static str {
    match ecn & 3 {
        0 => "Not-ECT",
        1 => "ECT(1)",
        2 => "ECT(0)",
        _ => "CE",
    }
}
