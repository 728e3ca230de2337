//! Linux cooked capture headers (`tcpdump -i any`): SLL (link type 113) and SLL2 (link type 276).
use nom::Parser;

use crate::be::{array, u8, u16, u32};
use crate::error::{Layer, Malformed, need, short};
use crate::fields::{Field, Value, Visitor};

pub const LINKTYPE_LINUX_SLL: u16 = 113;
pub const LINKTYPE_LINUX_SLL2: u16 = 276;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SllHeader {
    /// 2 for SLL2 (link type 276), 1 for SLL.
    pub version: u8,
    /// 0 to us, 1 broadcast, 2 multicast, 3 to another host, 4 sent by us.
    pub packet_type: u16,
    pub arphrd_type: u16,
    pub addr_len: u16,
    pub addr: [u8; 8],
    /// SLL2 only: the interface index.
    pub ifindex: u32,
    /// The EtherType of the payload.
    pub protocol: u16,
}

impl SllHeader {
    pub const LEN: usize = 16;
    pub const LEN2: usize = 20;

    pub fn parse(input: &[u8]) -> Result<(Self, &[u8]), Malformed> {
        need(Layer::LinuxSll, input, Self::LEN)?;
        let (rest, (packet_type, arphrd_type, addr_len, addr, protocol)) =
            (u16, u16, u16, array::<8>, u16)
                .parse(input)
                .map_err(short(Layer::LinuxSll, Self::LEN, input))?;
        let h = SllHeader {
            version: 1,
            packet_type,
            arphrd_type,
            addr_len,
            addr,
            ifindex: 0,
            protocol,
        };
        Ok((h, rest))
    }

    pub fn parse_v2(input: &[u8]) -> Result<(Self, &[u8]), Malformed> {
        need(Layer::LinuxSll, input, Self::LEN2)?;
        let (rest, (protocol, _reserved, ifindex, arphrd_type, packet_type, addr_len, addr)) =
            (u16, u16, u32, u16, u8, u8, array::<8>)
                .parse(input)
                .map_err(short(Layer::LinuxSll, Self::LEN2, input))?;
        let h = SllHeader {
            version: 2,
            packet_type: packet_type.into(),
            arphrd_type,
            addr_len: addr_len.into(),
            addr,
            ifindex,
            protocol,
        };
        Ok((h, rest))
    }

    pub fn header_len(&self) -> usize {
        if self.version == 2 {
            Self::LEN2
        } else {
            Self::LEN
        }
    }

    pub fn emit(&self, out: &mut Vec<u8>) {
        if self.version == 2 {
            out.extend_from_slice(&self.protocol.to_be_bytes());
            out.extend_from_slice(&[0, 0]);
            out.extend_from_slice(&self.ifindex.to_be_bytes());
            out.extend_from_slice(&self.arphrd_type.to_be_bytes());
            out.push(self.packet_type as u8);
            out.push(self.addr_len as u8);
        } else {
            out.extend_from_slice(&self.packet_type.to_be_bytes());
            out.extend_from_slice(&self.arphrd_type.to_be_bytes());
            out.extend_from_slice(&self.addr_len.to_be_bytes());
        }
        out.extend_from_slice(&self.addr);
        if self.version != 2 {
            out.extend_from_slice(&self.protocol.to_be_bytes());
        }
    }

    /// The link-layer source address (the first `addr_len` bytes, at most 6 shown as a MAC).
    pub fn src_mac(&self) -> Option<[u8; 6]> {
        if self.addr_len == 6 {
            let mut mac = [0u8; 6];
            mac.copy_from_slice(self.addr.get(..6)?);
            Some(mac)
        } else {
            None
        }
    }

    pub fn visit<'a>(&self, offset: usize, v: &mut impl Visitor<'a>) {
        v.header("Linux cooked capture", offset, self.header_len());
        v.field(
            Field::new(
                "sll.pkttype",
                "Packet type",
                Value::Uint(self.packet_type.into()),
            )
            .meaning(packet_type_name(self.packet_type)),
        );
        v.field(Field::new(
            "sll.hatype",
            "Link-layer address type",
            Value::Uint(self.arphrd_type.into()),
        ));
        if let Some(mac) = self.src_mac() {
            v.field(Field::new("sll.src.eth", "Source", Value::Mac(mac)));
        }
        if self.version == 2 {
            v.field(Field::new(
                "sll.ifindex",
                "Interface index",
                Value::Uint(self.ifindex.into()),
            ));
        }
        v.field(
            Field::new("sll.etype", "Protocol", Value::Hex(self.protocol.into(), 4))
                .meaning(crate::ethernet::ethertype_name(self.protocol)),
        );
    }
}

fn packet_type_name(t: u16) -> &'static str {
    match t {
        0 => "unicast to us",
        1 => "broadcast",
        2 => "multicast",
        3 => "unicast to another host",
        4 => "sent by us",
        _ => "unknown",
    }
}
