//! ACK Extended Transport Header (4 bytes): the syndrome (ACK, RNR NAK or NAK) and the MSN.
use nom::Parser;

use crate::be::{put_u24, u8, u24};
use crate::error::{Layer, Malformed, need, short};
use crate::fields::{Field, Value, Visitor};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Aeth {
    pub syndrome: u8,
    /// Message sequence number.
    pub msn: u32,
}

/// NAK codes (syndrome bits 4-0 when bits 6-5 are 11).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NakCode {
    PsnSequenceError,
    InvalidRequest,
    RemoteAccessError,
    RemoteOperationalError,
    InvalidRdRequest,
    Reserved(u8),
}

impl NakCode {
    pub fn from_code(code: u8) -> NakCode {
        match code {
            0 => NakCode::PsnSequenceError,
            1 => NakCode::InvalidRequest,
            2 => NakCode::RemoteAccessError,
            3 => NakCode::RemoteOperationalError,
            4 => NakCode::InvalidRdRequest,
            c => NakCode::Reserved(c),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            NakCode::PsnSequenceError => "PSN sequence error",
            NakCode::InvalidRequest => "invalid request",
            NakCode::RemoteAccessError => "remote access error",
            NakCode::RemoteOperationalError => "remote operational error",
            NakCode::InvalidRdRequest => "invalid RD request",
            NakCode::Reserved(_) => "reserved NAK code",
        }
    }
}

/// The decoded syndrome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syndrome {
    /// Credit count code 0-30; 31 means no credit information (invalid).
    Ack {
        credits: u8,
    },
    /// Receiver not ready: retry after the timer (`timer` is the 5-bit code).
    RnrNak {
        timer: u8,
    },
    Nak(NakCode),
    /// Syndrome type 10 (reserved).
    Reserved {
        value: u8,
    },
}

/// RNR NAK timer codes to microseconds (IBTA table "Encoding for RNR NAK timer field").
pub const RNR_TIMER_MICROS: [u32; 32] = [
    655_360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1_280, 1_920, 2_560, 3_840,
    5_120, 7_680, 10_240, 15_360, 20_480, 30_720, 40_960, 61_440, 81_920, 122_880, 163_840,
    245_760, 327_680, 491_520,
];

impl Syndrome {
    pub fn from_byte(syndrome: u8) -> Syndrome {
        let value = syndrome & 0x1F;
        match (syndrome >> 5) & 3 {
            0 => Syndrome::Ack { credits: value },
            1 => Syndrome::RnrNak { timer: value },
            3 => Syndrome::Nak(NakCode::from_code(value)),
            _ => Syndrome::Reserved { value },
        }
    }

    pub fn to_byte(self) -> u8 {
        match self {
            Syndrome::Ack { credits } => credits & 0x1F,
            Syndrome::RnrNak { timer } => 0x20 | (timer & 0x1F),
            Syndrome::Reserved { value } => 0x40 | (value & 0x1F),
            Syndrome::Nak(code) => {
                let c = match code {
                    NakCode::PsnSequenceError => 0,
                    NakCode::InvalidRequest => 1,
                    NakCode::RemoteAccessError => 2,
                    NakCode::RemoteOperationalError => 3,
                    NakCode::InvalidRdRequest => 4,
                    NakCode::Reserved(c) => c,
                };
                0x60 | (c & 0x1F)
            }
        }
    }

    /// The RNR retry delay this NAK asks for, in microseconds.
    pub fn rnr_micros(self) -> Option<u32> {
        match self {
            Syndrome::RnrNak { timer } => RNR_TIMER_MICROS.get(usize::from(timer)).copied(),
            _ => None,
        }
    }

    pub fn kind_name(self) -> &'static str {
        match self {
            Syndrome::Ack { .. } => "ACK",
            Syndrome::RnrNak { .. } => "RNR NAK",
            Syndrome::Nak(code) => code.name(),
            Syndrome::Reserved { .. } => "reserved syndrome",
        }
    }
}

impl Aeth {
    pub const LEN: usize = 4;

    pub fn parse(input: &[u8]) -> Result<(Self, &[u8]), Malformed> {
        need(Layer::Aeth, input, Self::LEN)?;
        let (rest, (syndrome, msn)) =
            (u8, u24)
                .parse(input)
                .map_err(short(Layer::Aeth, Self::LEN, input))?;
        Ok((Aeth { syndrome, msn }, rest))
    }

    pub fn decoded(&self) -> Syndrome {
        Syndrome::from_byte(self.syndrome)
    }

    pub fn emit(&self, out: &mut Vec<u8>) {
        out.push(self.syndrome);
        put_u24(out, self.msn);
    }

    pub fn visit<'a>(&self, offset: usize, v: &mut impl Visitor<'a>) {
        v.header("ACK Extended Transport Header", offset, Self::LEN);
        let s = self.decoded();
        v.field(
            Field::new(
                "infiniband.aeth.syndrome",
                "Syndrome",
                Value::Hex(self.syndrome.into(), 2),
            )
            .meaning(s.kind_name()),
        );
        match s {
            Syndrome::Ack { credits } => {
                let f = Field::new(
                    "infiniband.aeth.syndrome.credit_count",
                    "Credit count",
                    Value::Uint(credits.into()),
                );
                v.field(if credits == 31 {
                    f.meaning("invalid (no credit information)")
                } else {
                    f
                });
            }
            Syndrome::RnrNak { timer } => {
                v.field(Field::new(
                    "infiniband.aeth.syndrome.timer",
                    "RNR timer code",
                    Value::Uint(timer.into()),
                ));
                if let Some(us) = s.rnr_micros() {
                    v.field(Field::new(
                        "rocescope.aeth.rnr_timer_us",
                        "RNR timer",
                        Value::Micros(us),
                    ));
                }
            }
            Syndrome::Nak(code) => {
                let c = s.to_byte() & 0x1F;
                v.field(
                    Field::new(
                        "infiniband.aeth.syndrome.error_code",
                        "NAK code",
                        Value::Uint(c.into()),
                    )
                    .meaning(code.name()),
                );
            }
            Syndrome::Reserved { .. } => {}
        }
        v.field(Field::new(
            "infiniband.aeth.msn",
            "Message sequence number",
            Value::Uint(self.msn.into()),
        ));
    }
}
