//! IP over InfiniBand as libpcap captures it from a Linux IPoIB interface (LINKTYPE_IPOIB, 242): a 40-byte
//! pseudo-header, then RFC 4391's 4-byte encapsulation header (EtherType, reserved) and the IP packet or ARP.
//! The pseudo-header's layout is Wireshark's (packet-ipoib.c): when its first 16 bits are zero (unicast, no
//! GRH) only the destination address is set, QPN in bytes 21-23 and GID in 24-39; otherwise it holds the
//! GRH's first word, the source QPN (bytes 5-7), the source GID (8-23) and the destination GID (24-39).
//! tcpdump (print-ipoib.c) reads the same 44 bytes and the EtherType at byte 40.
use nom::Parser;

use crate::be::{array, u8, u16, u24, u32};
use crate::error::{Layer, Malformed, need, short};
use crate::fields::{Field, Value, Visitor};

pub const LINKTYPE_IPOIB: u16 = 242;

/// Who sent the packet, when the pseudo-header carries a GRH's part.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IpoibSource {
    /// The GRH's first word: IP version, traffic class, flow label.
    pub version_class_flow: u32,
    pub qpn: u32,
    pub gid: [u8; 16],
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IpoibHeader {
    /// `None` for unicast (the pseudo-header's first 16 bits zero).
    pub source: Option<IpoibSource>,
    /// The destination's hardware address flags (byte 20; bit 7: connected mode) and QPN (unicast only: in a
    /// GRH pseudo-header these bytes are the source GID's).
    pub dst_qpn: u32,
    pub dst_gid: [u8; 16],
    /// The EtherType of the payload.
    pub ethertype: u16,
    pub reserved: u16,
}

impl IpoibHeader {
    pub const LEN: usize = 44;

    pub fn parse(input: &[u8]) -> Result<(Self, &[u8]), Malformed> {
        need(Layer::Ipoib, input, Self::LEN)?;
        let (rest, (word0, _, src_qpn, middle, dst_gid, ethertype, reserved)) =
            (u32, u8, u24, array::<16>, array::<16>, u16, u16)
                .parse(input)
                .map_err(short(Layer::Ipoib, Self::LEN, input))?;
        // Bytes 8-23: the source GID in a GRH pseudo-header; in a unicast one, zeros then the flags byte and
        // the destination QPN.
        let [.., flags, q0, q1, q2] = middle;
        let h = if word0 >> 16 != 0 {
            IpoibHeader {
                source: Some(IpoibSource {
                    version_class_flow: word0,
                    qpn: src_qpn,
                    gid: middle,
                }),
                dst_qpn: 0,
                dst_gid,
                ethertype,
                reserved,
            }
        } else {
            IpoibHeader {
                source: None,
                dst_qpn: u32::from_be_bytes([flags, q0, q1, q2]),
                dst_gid,
                ethertype,
                reserved,
            }
        };
        Ok((h, rest))
    }

    pub fn emit(&self, out: &mut Vec<u8>) {
        match self.source {
            Some(s) => {
                out.extend_from_slice(&s.version_class_flow.to_be_bytes());
                out.extend_from_slice(&s.qpn.to_be_bytes());
                out.extend_from_slice(&s.gid);
            }
            None => {
                out.extend_from_slice(&[0; 20]);
                out.extend_from_slice(&self.dst_qpn.to_be_bytes());
            }
        }
        out.extend_from_slice(&self.dst_gid);
        out.extend_from_slice(&self.ethertype.to_be_bytes());
        out.extend_from_slice(&self.reserved.to_be_bytes());
    }

    pub fn visit<'a>(&self, offset: usize, v: &mut impl Visitor<'a>) {
        v.header("IP over Infiniband", offset, Self::LEN);
        match self.source {
            Some(s) => {
                let w = s.version_class_flow;
                v.field(Field::new(
                    "ipoib.grh.ipver",
                    "IP Version",
                    Value::Uint((w >> 28).into()),
                ));
                v.field(Field::new(
                    "ipoib.grh.tclass",
                    "Traffic Class",
                    Value::Uint(((w >> 20) & 0xFF).into()),
                ));
                v.field(Field::new(
                    "ipoib.grh.flowlabel",
                    "Flow Label",
                    Value::Uint((w & 0xF_FFFF).into()),
                ));
                v.field(Field::new(
                    "ipoib.grh.sqpn",
                    "Source QPN",
                    Value::Hex(s.qpn.into(), 6),
                ));
                v.field(Field::new(
                    "ipoib.grh.sgid",
                    "Source GID",
                    Value::Ipv6(s.gid),
                ));
            }
            None => v.field(Field::new(
                "ipoib.daddr.qpn",
                "Destination QPN",
                Value::Hex((self.dst_qpn & 0xFF_FFFF).into(), 6),
            )),
        }
        v.field(Field::new(
            "ipoib.dgid",
            "Destination GID",
            Value::Ipv6(self.dst_gid),
        ));
        v.field(
            Field::new("ipoib.type", "Type", Value::Hex(self.ethertype.into(), 4))
                .meaning(crate::ethernet::ethertype_name(self.ethertype)),
        );
        v.field(Field::new(
            "ipoib.reserved",
            "Reserved",
            Value::Hex(self.reserved.into(), 4),
        ));
    }
}

/// RFC 4391's encapsulation header (section 6) where it rides an InfiniBand SEND's payload (an IPoIB
/// datagram or connected-mode message, not the pcap link type above): the EtherType of what follows and 16
/// reserved bits. Wireshark (packet-infiniband.c, `parse_PAYLOAD`) takes a payload that is not a MAD as such
/// when the reserved bits are zero and it has a dissector for the EtherType, and names the header's
/// EtherType `infiniband.rwh.etype`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EncapHeader {
    pub ethertype: u16,
    pub reserved: u16,
}

impl EncapHeader {
    pub const LEN: usize = 4;

    pub fn parse(input: &[u8]) -> Result<(Self, &[u8]), Malformed> {
        need(Layer::Ipoib, input, Self::LEN)?;
        let (rest, (ethertype, reserved)) =
            (u16, u16)
                .parse(input)
                .map_err(short(Layer::Ipoib, Self::LEN, input))?;
        Ok((
            EncapHeader {
                ethertype,
                reserved,
            },
            rest,
        ))
    }

    pub fn emit(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.ethertype.to_be_bytes());
        out.extend_from_slice(&self.reserved.to_be_bytes());
    }

    pub fn visit<'a>(&self, offset: usize, v: &mut impl Visitor<'a>) {
        v.header(
            "IBA Payload - appears to be EtherType encapsulated",
            offset,
            Self::LEN,
        );
        v.field(
            Field::new(
                "infiniband.rwh.etype",
                "Ethertype",
                Value::Hex(self.ethertype.into(), 4),
            )
            .meaning(crate::ethernet::ethertype_name(self.ethertype)),
        );
    }
}
