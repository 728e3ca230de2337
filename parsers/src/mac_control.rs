//! 802.3 MAC control frames (EtherType 0x8808): 802.3x PAUSE and 802.1Qbb priority flow control (PFC).
use nom::Parser;

use crate::be::u16;
use crate::error::{Layer, Malformed, need, short};
use crate::fields::{Field, Value, Visitor};

pub const OPCODE_PAUSE: u16 = 0x0001;
pub const OPCODE_PFC: u16 = 0x0101;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MacControl {
    /// 802.3x PAUSE: one pause time for the whole link, in quanta of 512 bit times.
    Pause {
        quanta: u16,
    },
    /// 802.1Qbb PFC: bit n of `class_enable` means `quanta[n]` applies to priority n; 0 quanta = resume.
    Pfc {
        class_enable: u16,
        quanta: [u16; 8],
    },
    Other {
        opcode: u16,
    },
}

const PFC_KEYS: [&str; 8] = [
    "macc.cbfc.pause_time.c0",
    "macc.cbfc.pause_time.c1",
    "macc.cbfc.pause_time.c2",
    "macc.cbfc.pause_time.c3",
    "macc.cbfc.pause_time.c4",
    "macc.cbfc.pause_time.c5",
    "macc.cbfc.pause_time.c6",
    "macc.cbfc.pause_time.c7",
];
const PFC_LABELS: [&str; 8] = [
    "Priority 0 quanta",
    "Priority 1 quanta",
    "Priority 2 quanta",
    "Priority 3 quanta",
    "Priority 4 quanta",
    "Priority 5 quanta",
    "Priority 6 quanta",
    "Priority 7 quanta",
];

impl MacControl {
    pub fn parse(input: &[u8]) -> Result<(Self, &[u8]), Malformed> {
        need(Layer::MacControl, input, 2)?;
        let (rest, opcode) = u16(input).map_err(short(Layer::MacControl, 2, input))?;
        match opcode {
            OPCODE_PAUSE => {
                need(Layer::MacControl, input, 4)?;
                let (rest, quanta) = u16(rest).map_err(short(Layer::MacControl, 4, input))?;
                Ok((MacControl::Pause { quanta }, rest))
            }
            OPCODE_PFC => {
                need(Layer::MacControl, input, 20)?;
                let (rest, (class_enable, q)) = (u16, (u16, u16, u16, u16, u16, u16, u16, u16))
                    .parse(rest)
                    .map_err(short(Layer::MacControl, 20, input))?;
                let quanta = [q.0, q.1, q.2, q.3, q.4, q.5, q.6, q.7];
                Ok((
                    MacControl::Pfc {
                        class_enable,
                        quanta,
                    },
                    rest,
                ))
            }
            opcode => Ok((MacControl::Other { opcode }, rest)),
        }
    }

    pub fn opcode(&self) -> u16 {
        match *self {
            MacControl::Pause { .. } => OPCODE_PAUSE,
            MacControl::Pfc { .. } => OPCODE_PFC,
            MacControl::Other { opcode } => opcode,
        }
    }

    pub fn emit(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.opcode().to_be_bytes());
        match *self {
            MacControl::Pause { quanta } => out.extend_from_slice(&quanta.to_be_bytes()),
            MacControl::Pfc {
                class_enable,
                quanta,
            } => {
                out.extend_from_slice(&class_enable.to_be_bytes());
                for q in quanta {
                    out.extend_from_slice(&q.to_be_bytes());
                }
            }
            MacControl::Other { .. } => {}
        }
    }

    /// Pause quanta for `priority` if this frame addresses it (PAUSE addresses every priority).
    pub fn quanta_for(&self, priority: usize) -> Option<u16> {
        match *self {
            MacControl::Pause { quanta } => Some(quanta),
            MacControl::Pfc {
                class_enable,
                quanta,
            } if priority < 8 && class_enable & (1 << priority) != 0 => {
                quanta.get(priority).copied()
            }
            _ => None,
        }
    }

    /// Bit n set when this frame pauses priority n (enabled with non-zero quanta).
    pub fn xoff_mask(&self) -> u8 {
        (0..8).fold(0u8, |m, p| match self.quanta_for(p) {
            Some(q) if q != 0 => m | (1 << p),
            _ => m,
        })
    }

    pub fn visit<'a>(&self, offset: usize, v: &mut impl Visitor<'a>) {
        let (title, len) = match self {
            MacControl::Pause { .. } => ("MAC control: PAUSE (802.3x)", 4),
            MacControl::Pfc { .. } => ("MAC control: priority flow control (802.1Qbb)", 20),
            MacControl::Other { .. } => ("MAC control", 2),
        };
        v.header(title, offset, len);
        v.field(Field::new(
            "macc.opcode",
            "Opcode",
            Value::Hex(self.opcode().into(), 4),
        ));
        match *self {
            MacControl::Pause { quanta } => {
                v.field(Field::new(
                    "macc.pause_time",
                    "Pause time (quanta)",
                    Value::Uint(quanta.into()),
                ));
            }
            MacControl::Pfc {
                class_enable,
                quanta,
            } => {
                v.field(Field::new(
                    "macc.cbfc.enbv",
                    "Class-enable vector",
                    Value::Hex(class_enable.into(), 4),
                ));
                v.field(Field::new(
                    "rocescope.pfc.xoff",
                    "Priorities paused (bit n = priority n)",
                    Value::Hex(self.xoff_mask().into(), 2),
                ));
                for (p, q) in quanta.iter().enumerate() {
                    if let (Some(key), Some(label)) = (PFC_KEYS.get(p), PFC_LABELS.get(p)) {
                        let f = Field::new(key, label, Value::Uint((*q).into()));
                        v.field(match (class_enable & (1 << p) != 0, *q) {
                            (false, _) => f.meaning("class not enabled"),
                            (true, 0) => f.meaning("XON (resume)"),
                            (true, _) => f.meaning("XOFF"),
                        });
                    }
                }
            }
            MacControl::Other { .. } => {}
        }
    }
}
