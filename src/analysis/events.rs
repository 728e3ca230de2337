//! Expert events, like Wireshark's expert info: severity, time, flow and what happened. Bounded: after
//! `LIMIT` events only counts are kept.
use std::fmt;

use parsers::aeth::NakCode;
use parsers::error::Malformed;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Note,
    Warning,
    Error,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind {
    PsnGap {
        missing: u32,
        after: u32,
    },
    Nak {
        code: NakCode,
        psn: u32,
    },
    GoBackN {
        from: u32,
        behind: u32,
        after_nak_us: Option<u64>,
        after_progress_us: u64,
    },
    RnrNak {
        psn: u32,
        timer_us: u32,
    },
    RnrStorm {
        count: u64,
        span_us: u64,
    },
    ImpliedNak {
        expected: u32,
        got: u32,
    },
    CeWithoutCnp {
        count: u64,
    },
    BadIcrc {
        expected: u32,
        found: u32,
    },
    Malformed(Malformed),
    LengthMismatch {
        dma_len: u32,
        payload: u64,
    },
    /// PFC pause of one priority, or (`None`) 802.3x PAUSE of the whole link.
    Pause {
        priority: Option<u8>,
        frames: u64,
        pause_us: u64,
    },
}

impl Kind {
    pub fn severity(&self) -> Severity {
        match self {
            Kind::PsnGap { .. }
            | Kind::Nak { .. }
            | Kind::BadIcrc { .. }
            | Kind::Malformed(_)
            | Kind::RnrStorm { .. }
            | Kind::LengthMismatch { .. } => Severity::Error,
            Kind::GoBackN { .. }
            | Kind::ImpliedNak { .. }
            | Kind::CeWithoutCnp { .. }
            | Kind::RnrNak { .. } => Severity::Warning,
            Kind::Pause { .. } => Severity::Note,
        }
    }

    /// A short machine name for filters and JSON.
    pub fn name(&self) -> &'static str {
        match self {
            Kind::PsnGap { .. } => "psn_gap",
            Kind::Nak { .. } => "nak",
            Kind::GoBackN { .. } => "go_back_n",
            Kind::RnrNak { .. } => "rnr_nak",
            Kind::RnrStorm { .. } => "rnr_storm",
            Kind::ImpliedNak { .. } => "implied_nak",
            Kind::CeWithoutCnp { .. } => "ce_without_cnp",
            Kind::BadIcrc { .. } => "bad_icrc",
            Kind::Malformed(_) => "malformed",
            Kind::LengthMismatch { .. } => "length_mismatch",
            Kind::Pause { .. } => "pause",
        }
    }
}

fn ms(us: u64) -> String {
    format!("{}.{:03} ms", us / 1000, us % 1000)
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Kind::PsnGap { missing, after } => {
                write!(f, "PSN gap: {missing} missing after 0x{after:06x}")
            }
            Kind::Nak { code, psn } => write!(f, "NAK ({}) for PSN 0x{psn:06x}", code.name()),
            Kind::GoBackN {
                from,
                behind,
                after_nak_us,
                after_progress_us,
            } => {
                write!(
                    f,
                    "go-back-N: resent from PSN 0x{from:06x} ({behind} behind)"
                )?;
                match after_nak_us {
                    Some(us) => write!(f, ", {} after the NAK", ms(us)),
                    None => write!(
                        f,
                        ", {} after the last progress (timeout?)",
                        ms(after_progress_us)
                    ),
                }
            }
            Kind::RnrNak { psn, timer_us } => write!(
                f,
                "RNR NAK for PSN 0x{psn:06x}, retry in {}",
                ms(u64::from(timer_us))
            ),
            Kind::RnrStorm { count, span_us } => {
                write!(f, "RNR NAK storm: {count} in {}", ms(span_us))
            }
            Kind::ImpliedNak { expected, got } => {
                write!(
                    f,
                    "READ response PSN 0x{got:06x} skips ahead of 0x{expected:06x} (implied NAK)"
                )
            }
            Kind::CeWithoutCnp { count } => write!(
                f,
                "CE marks without CNP: {count} CE-marked packets not answered by a CNP"
            ),
            Kind::BadIcrc { expected, found } => write!(
                f,
                "bad ICRC: found 0x{found:08x}, expected 0x{expected:08x}"
            ),
            Kind::Malformed(m) => write!(f, "malformed: {m}"),
            Kind::LengthMismatch { dma_len, payload } => {
                write!(
                    f,
                    "message payload {payload} bytes differs from RETH DMA length {dma_len}"
                )
            }
            Kind::Pause {
                priority: Some(p),
                frames,
                pause_us,
            } => {
                write!(
                    f,
                    "PFC pause on priority {p}: {frames} XOFF frames, {} of pause",
                    ms(pause_us)
                )
            }
            Kind::Pause {
                priority: None,
                frames,
                pause_us,
            } => {
                write!(
                    f,
                    "802.3x PAUSE of the whole link: {frames} frames, {} of pause",
                    ms(pause_us)
                )
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Event {
    pub ts_nanos: u64,
    /// Index of the flow in the engine's table.
    pub flow: Option<u32>,
    /// Frame number in the capture.
    pub frame: u64,
    pub kind: Kind,
}

#[derive(Debug, Default, Clone)]
pub struct Events {
    pub list: Vec<Event>,
    /// Events not kept because the list was full.
    pub dropped: u64,
}

impl Events {
    pub const LIMIT: usize = 10_000;

    pub fn push(&mut self, e: Event) {
        if self.list.len() < Self::LIMIT {
            self.list.push(e);
        } else {
            self.dropped += 1;
        }
    }
}
