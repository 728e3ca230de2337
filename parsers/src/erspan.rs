//! ERSPAN header (draft-foschiano-erspan-03): type II (8 bytes, GRE protocol 0x88BE) and type III (12
//! bytes and an optional 8-byte platform-specific subheader, GRE protocol 0x22EB), then the mirrored
//! Ethernet frame. Type I (0x88BE without a GRE sequence number) has no header at all.
use nom::Parser;

use crate::be::{u16, u32, u64};
use crate::error::{Layer, Malformed, MalformedKind, need, short};
use crate::fields::{Field, Value, Visitor};

/// The version field of type II.
pub const VERSION_II: u8 = 1;
/// The version field of type III.
pub const VERSION_III: u8 = 2;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Erspan {
    /// 1: type II, 2: type III.
    pub version: u8,
    /// The VLAN of the mirrored frame.
    pub vlan: u16,
    /// Class of service of the mirrored frame.
    pub cos: u8,
    /// Type II: En, how the frame was tagged; type III: BSO (bad, short or oversized frame).
    pub encap: u8,
    /// The mirror copy was truncated by the switch: the frame's end (its ICRC) is missing.
    pub truncated: bool,
    pub session_id: u16,
    /// Type II: 12 reserved bits and the 20-bit port index.
    pub reserved: u16,
    pub index: u32,
    /// Type III: the timestamp's low 32 bits, in units of `granularity`.
    pub timestamp: u32,
    /// Type III: security group tag, the P (Ethernet PDU) bit, frame type, hardware ID.
    pub sgt: u16,
    pub pdu: bool,
    pub frame_type: u8,
    pub hw_id: u8,
    /// Type III: the frame was mirrored on egress (else ingress).
    pub egress: bool,
    /// Type III timestamp granularity: 0 100 µs, 1 100 ns, 2 IEEE 1588, 3 user-defined.
    pub granularity: u8,
    /// Type III platform-specific subheader (present when the O bit is set): platform ID in the top 6 bits.
    pub platform: Option<u64>,
}

impl Erspan {
    pub const LEN_II: usize = 8;
    pub const LEN_III: usize = 12;
    pub const PLATFORM_LEN: usize = 8;

    /// Parses a type II or III header, as its version field says.
    pub fn parse(input: &[u8]) -> Result<(Self, &[u8]), Malformed> {
        need(Layer::Erspan, input, 4)?;
        let (rest, (w0, w1)) = (u16, u16)
            .parse(input)
            .map_err(short(Layer::Erspan, 4, input))?;
        let h = Erspan {
            version: (w0 >> 12) as u8,
            vlan: w0 & 0x0FFF,
            cos: (w1 >> 13) as u8,
            encap: ((w1 >> 11) & 3) as u8,
            truncated: w1 & 0x0400 != 0,
            session_id: w1 & 0x03FF,
            ..Erspan::default()
        };
        match h.version {
            VERSION_II => h.parse_ii(input, rest),
            VERSION_III => h.parse_iii(input, rest),
            v => Err(Malformed::new(Layer::Erspan, MalformedKind::BadVersion(v))),
        }
    }

    fn parse_ii<'i>(
        mut self,
        input: &'i [u8],
        rest: &'i [u8],
    ) -> Result<(Self, &'i [u8]), Malformed> {
        need(Layer::Erspan, input, Self::LEN_II)?;
        let (rest, w) = u32(rest).map_err(short(Layer::Erspan, Self::LEN_II, input))?;
        self.reserved = (w >> 20) as u16;
        self.index = w & 0x000F_FFFF;
        Ok((self, rest))
    }

    fn parse_iii<'i>(
        mut self,
        input: &'i [u8],
        rest: &'i [u8],
    ) -> Result<(Self, &'i [u8]), Malformed> {
        need(Layer::Erspan, input, Self::LEN_III)?;
        let (rest, (timestamp, sgt, bits)) =
            (u32, u16, u16)
                .parse(rest)
                .map_err(short(Layer::Erspan, Self::LEN_III, input))?;
        self.timestamp = timestamp;
        self.sgt = sgt;
        self.pdu = bits & 0x8000 != 0;
        self.frame_type = ((bits >> 10) & 0x1F) as u8;
        self.hw_id = ((bits >> 4) & 0x3F) as u8;
        self.egress = bits & 0x0008 != 0;
        self.granularity = ((bits >> 1) & 3) as u8;
        if bits & 1 == 0 {
            return Ok((self, rest));
        }
        let len = Self::LEN_III + Self::PLATFORM_LEN;
        need(Layer::Erspan, input, len)?;
        let (rest, platform) = u64(rest).map_err(short(Layer::Erspan, len, input))?;
        self.platform = Some(platform);
        Ok((self, rest))
    }

    pub fn header_len(&self) -> usize {
        match (self.version, self.platform) {
            (VERSION_II, _) => Self::LEN_II,
            (_, None) => Self::LEN_III,
            (_, Some(_)) => Self::LEN_III + Self::PLATFORM_LEN,
        }
    }

    pub fn emit(&self, out: &mut Vec<u8>) {
        let w0 = (u16::from(self.version & 0xF) << 12) | (self.vlan & 0x0FFF);
        let w1 = (u16::from(self.cos & 7) << 13)
            | (u16::from(self.encap & 3) << 11)
            | (u16::from(self.truncated) << 10)
            | (self.session_id & 0x03FF);
        out.extend_from_slice(&w0.to_be_bytes());
        out.extend_from_slice(&w1.to_be_bytes());
        if self.version == VERSION_II {
            let w = (u32::from(self.reserved & 0x0FFF) << 20) | (self.index & 0x000F_FFFF);
            out.extend_from_slice(&w.to_be_bytes());
            return;
        }
        let bits = (u16::from(self.pdu) << 15)
            | (u16::from(self.frame_type & 0x1F) << 10)
            | (u16::from(self.hw_id & 0x3F) << 4)
            | (u16::from(self.egress) << 3)
            | (u16::from(self.granularity & 3) << 1)
            | u16::from(self.platform.is_some());
        out.extend_from_slice(&self.timestamp.to_be_bytes());
        out.extend_from_slice(&self.sgt.to_be_bytes());
        out.extend_from_slice(&bits.to_be_bytes());
        if let Some(p) = self.platform {
            out.extend_from_slice(&p.to_be_bytes());
        }
    }

    pub fn visit<'a>(&self, offset: usize, v: &mut impl Visitor<'a>) {
        let (title, encap) = if self.version == VERSION_II {
            (
                "Encapsulated Remote Switch Packet Analysis (type II)",
                "erspan.encap",
            )
        } else {
            (
                "Encapsulated Remote Switch Packet Analysis (type III)",
                "erspan.bso",
            )
        };
        v.header(title, offset, self.header_len());
        let uint = |n: u16| Value::Uint(n.into());
        v.field(Field::new(
            "erspan.version",
            "Version",
            uint(self.version.into()),
        ));
        v.field(Field::new("erspan.vlan", "VLAN", uint(self.vlan)));
        v.field(Field::new(
            "erspan.cos",
            "Class of service",
            uint(self.cos.into()),
        ));
        v.field(Field::new(encap, "Encapsulation", uint(self.encap.into())));
        let t = Field::new("erspan.truncated", "Truncated", uint(self.truncated.into()));
        v.field(if self.truncated {
            t.meaning("the copy is cut short: its ICRC cannot be checked")
        } else {
            t
        });
        v.field(Field::new(
            "erspan.spanid",
            "Session ID",
            uint(self.session_id),
        ));
        if self.version == VERSION_II {
            v.field(Field::new(
                "erspan.reserved",
                "Reserved",
                uint(self.reserved),
            ));
            v.field(Field::new(
                "erspan.index",
                "Index",
                Value::Uint(self.index.into()),
            ));
        } else {
            self.visit_iii(v);
        }
    }

    fn visit_iii<'a>(&self, v: &mut impl Visitor<'a>) {
        let uint = |n: u16| Value::Uint(n.into());
        v.field(
            Field::new(
                "erspan.timestamp",
                "Timestamp",
                Value::Uint(self.timestamp.into()),
            )
            .meaning(granularity_name(self.granularity)),
        );
        v.field(Field::new(
            "erspan.sgt",
            "Security group tag",
            uint(self.sgt),
        ));
        v.field(Field::new(
            "erspan.p",
            "Has Ethernet PDU",
            uint(self.pdu.into()),
        ));
        v.field(Field::new(
            "erspan.ft",
            "Frame type",
            uint(self.frame_type.into()),
        ));
        v.field(Field::new(
            "erspan.hw",
            "Hardware ID",
            uint(self.hw_id.into()),
        ));
        v.field(
            Field::new("erspan.direction", "Direction", Value::Bool(self.egress))
                .meaning(if self.egress { "egress" } else { "ingress" }),
        );
        v.field(Field::new(
            "erspan.gra",
            "Timestamp granularity",
            uint(self.granularity.into()),
        ));
        v.field(Field::new(
            "erspan.o",
            "Optional subheader",
            uint(self.platform.is_some().into()),
        ));
        if let Some(p) = self.platform {
            v.field(Field::new(
                "erspan.platid",
                "Platform ID",
                Value::Uint(p >> 58),
            ));
            v.field(Field::new(
                "rocescope.erspan.platform_info",
                "Platform-specific information",
                Value::Hex(p & ((1 << 58) - 1), 15),
            ));
        }
    }
}

fn granularity_name(g: u8) -> &'static str {
    match g & 3 {
        0 => "units of 100 µs",
        1 => "units of 100 ns",
        2 => "IEEE 1588",
        _ => "user-defined units",
    }
}
