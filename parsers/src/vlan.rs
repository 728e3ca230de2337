//! 802.1Q / 802.1ad VLAN tag: the 4 bytes after a VLAN TPID (TCI then the inner EtherType).
use nom::Parser;

use crate::be::u16;
use crate::error::{Layer, Malformed, need, short};
use crate::fields::{Field, Value, Visitor};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VlanTag {
    /// The TPID that introduced this tag (0x8100, 0x88a8 or 0x9100).
    pub tpid: u16,
    /// Priority code point: the PFC priority.
    pub pcp: u8,
    /// Drop eligible indicator.
    pub dei: bool,
    pub vid: u16,
    /// EtherType of what follows the tag.
    pub ethertype: u16,
}

impl VlanTag {
    pub const LEN: usize = 4;

    pub fn parse(tpid: u16, input: &[u8]) -> Result<(Self, &[u8]), Malformed> {
        need(Layer::Vlan, input, Self::LEN)?;
        let (rest, (tci, ethertype)) =
            (u16, u16)
                .parse(input)
                .map_err(short(Layer::Vlan, Self::LEN, input))?;
        let tag = VlanTag {
            tpid,
            pcp: (tci >> 13) as u8,
            dei: tci & 0x1000 != 0,
            vid: tci & 0x0FFF,
            ethertype,
        };
        Ok((tag, rest))
    }

    /// Emits the TCI and inner EtherType (the TPID belongs to the header before).
    pub fn emit(&self, out: &mut Vec<u8>) {
        let tci =
            (u16::from(self.pcp & 7) << 13) | (u16::from(self.dei) << 12) | (self.vid & 0x0FFF);
        out.extend_from_slice(&tci.to_be_bytes());
        out.extend_from_slice(&self.ethertype.to_be_bytes());
    }

    /// Names follow Wireshark: an 802.1ad service tag is `ieee8021ad.*`, an 802.1Q tag `vlan.*`; a second
    /// 802.1Q tag (`second_q`), which Wireshark names like the first, is `rocescope.vlan_inner.*`.
    pub fn visit<'a>(&self, offset: usize, second_q: bool, v: &mut impl Visitor<'a>) {
        let service = self.tpid != crate::ethernet::ETHERTYPE_VLAN;
        let title = if service {
            "802.1ad Service VLAN"
        } else {
            "802.1Q Virtual LAN"
        };
        v.header(title, offset, Self::LEN);
        let [pcp, dei, vid, etype] = if service {
            [
                "ieee8021ad.priority",
                "ieee8021ad.dei",
                "ieee8021ad.id",
                "ieee8021ad.etype",
            ]
        } else if second_q {
            [
                "rocescope.vlan_inner.priority",
                "rocescope.vlan_inner.dei",
                "rocescope.vlan_inner.id",
                "rocescope.vlan_inner.etype",
            ]
        } else {
            ["vlan.priority", "vlan.dei", "vlan.id", "vlan.etype"]
        };
        v.field(Field::new(pcp, "Priority", Value::Uint(self.pcp.into())));
        v.field(Field::new(dei, "DEI", Value::Bool(self.dei)));
        v.field(Field::new(vid, "ID", Value::Uint(self.vid.into())));
        v.field(
            Field::new(etype, "Type", Value::Hex(self.ethertype.into(), 4))
                .meaning(crate::ethernet::ethertype_name(self.ethertype)),
        );
    }
}
