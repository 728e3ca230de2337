//! InfiniBand Global Route Header: the network header of RoCEv1 (EtherType 0x8915). Same layout as IPv6.
use crate::error::{Layer, Malformed};
use crate::fields::{Field, Value, Visitor};
use crate::ipv6::{Ipv6Header, parse_fixed};

/// GRH next header value announcing a BTH.
pub const NEXT_HEADER_BTH: u8 = 0x1B;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grh(pub Ipv6Header);

impl Grh {
    pub const LEN: usize = 40;

    pub fn parse(input: &[u8]) -> Result<(Self, &[u8]), Malformed> {
        parse_fixed(Layer::Grh, input).map(|(h, rest)| (Grh(h), rest))
    }

    pub fn emit(&self, out: &mut Vec<u8>) {
        self.0.emit(out);
    }

    pub fn visit<'a>(&self, offset: usize, v: &mut impl Visitor<'a>) {
        let h = &self.0;
        v.header("Global Route Header", offset, Self::LEN);
        v.field(Field::new(
            "infiniband.grh.tclass",
            "Traffic class",
            Value::Uint(h.traffic_class().into()),
        ));
        v.field(Field::new(
            "infiniband.grh.flowlabel",
            "Flow label",
            Value::Hex(h.flow_label.into(), 5),
        ));
        v.field(Field::new(
            "infiniband.grh.paylen",
            "Payload length",
            Value::Uint(h.payload_len.into()),
        ));
        v.field(Field::new(
            "infiniband.grh.nxthdr",
            "Next header",
            Value::Hex(h.next_header.into(), 2),
        ));
        v.field(Field::new(
            "infiniband.grh.hoplmt",
            "Hop limit",
            Value::Uint(h.hop_limit.into()),
        ));
        v.field(Field::new(
            "infiniband.grh.sgid",
            "Source GID",
            Value::Ipv6(h.src),
        ));
        v.field(Field::new(
            "infiniband.grh.dgid",
            "Destination GID",
            Value::Ipv6(h.dst),
        ));
    }
}
