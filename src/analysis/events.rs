//! Expert events, like Wireshark's expert info: severity, time, flow, the frame that shows it and what
//! happened. Bounded: after `LIMIT` events only counts are kept.
use std::fmt;

use parsers::aeth::NakCode;
use parsers::error::Malformed;
use parsers::psn::Shown;
use rustc_hash::{FxHashMap, FxHashSet};

use super::table::FlowId;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Note,
    Warning,
    Error,
}

impl Severity {
    /// As the JSON writes it.
    pub fn name(self) -> &'static str {
        match self {
            Severity::Note => "note",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// What a READ's responses got wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadMismatch {
    /// A response PSN outside the READ's PSNs.
    PsnOutside { psn: u32, psns: u32 },
    /// The responses' payload does not add up to the DMA length.
    Length { got: u64, dma_len: u32 },
    /// More or fewer response packets than the path MTU implies.
    Packets { got: u32, expected: u32, mtu: u32 },
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
    /// A sender that kept its rate after CNPs: of the `cnps` that reached it, `measured` had their
    /// reaction measured, `no_reduction` of those showed none.
    CnpIgnored {
        cnps: u64,
        measured: u64,
        no_reduction: u64,
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
    /// One priority (`None`: 802.3x PAUSE) paused without a break for longer than the storm threshold:
    /// how long, and by how many XOFF frames.
    PauseStorm {
        priority: Option<u8>,
        duration_us: u64,
        xoff: u64,
    },
    /// PFC paused a priority that none of the RoCE flows is on (`carried`: bit p, the priorities they are
    /// on).
    PauseOnIdlePriority {
        priority: u8,
        xoff: u64,
        pause_us: u64,
        carried: u8,
    },
    /// A RoCE flow on a priority no PFC frame paused while PFC paused others (`paused`: bit p); `dscp`
    /// when its priority came from `--dscp-map` (untagged).
    RoceUnprotected {
        priority: u8,
        dscp: Option<u8>,
        paused: u8,
    },
    /// Requests unacknowledged for longer than the stall time: the oldest outstanding PSN, how many PSNs
    /// are outstanding, since when it waited (ns since the epoch) and how long (µs, until the capture ended
    /// or the answer came), and whether the capture ended with them still outstanding.
    Stall {
        psn: u32,
        outstanding: u32,
        since_ns: u64,
        waited_us: u64,
        at_end: bool,
    },
    /// An RC requester that never received any response from its destination.
    NoResponse {
        requests: u64,
        first_psn: u32,
        waited_us: u64,
    },
    /// A resend that no NAK explains: the requester's local ACK timer fired after `interval_us`; the
    /// timeout exponent it implies (4.096 µs × 2^n) and the how-manieth resend of this PSN it is.
    TimeoutRetransmission {
        psn: u32,
        interval_us: u64,
        timeout_exp: u8,
        retry: u32,
    },
    /// The same PSN resent `resends` times, then silence from the requester for `silent_us` until the end
    /// of the capture: it gave up (IBV_WC_RETRY_EXC_ERR).
    RetryExhausted {
        psn: u32,
        resends: u32,
        silent_us: u64,
    },
    /// The same PSN RNR-NAKed `naks` times, then silence from the requester for `silent_us` until the end
    /// of the capture: IBV_WC_RNR_RETRY_EXC_ERR.
    RnrExhausted {
        psn: u32,
        naks: u32,
        silent_us: u64,
    },
    /// A response for a PSN the requester never sent (outside `lo..=hi`).
    AckOutOfWindow {
        psn: u32,
        lo: u32,
        hi: u32,
    },
    /// A new request carrying a PSN that an earlier request (a READ of `read_psns` PSNs from `read_psn`)
    /// already consumed.
    PsnReuse {
        psn: u32,
        read_psn: u32,
        read_psns: u32,
    },
    /// The MSN in an AETH went backwards.
    MsnRegression {
        msn: u32,
        previous: u32,
    },
    ReadResponseMismatch {
        read_psn: u32,
        what: ReadMismatch,
    },
    /// A packet that came `depth` PSNs behind the highest PSN its direction had carried (`highest`), the
    /// first copy of its PSN, with nothing a resend could answer: held up on the way (network reordering).
    Reordered {
        psn: u32,
        highest: u32,
        depth: u32,
        /// A response (else a request).
        response: bool,
    },
    /// A request far from the PSN the flow expected, after a long idle time: a new connection on a reused
    /// QP number. The flow's PSN figures restart.
    NewEpoch {
        psn: u32,
        expected: u32,
        idle_us: u64,
    },
    /// A connection (`connection`: its index in the table) established: the RTU came.
    Connection {
        connection: u32,
        qpns: [u32; 2],
        mtu: Option<u32>,
    },
    /// A DREQ: the connection is going away.
    Disconnect {
        connection: u32,
        qpns: [u32; 2],
    },
    /// A REJ, with its reason code (IBTA table 107).
    CmReject {
        connection: u32,
        reason: u16,
    },
    /// A REQ with no REP, or a REP with no RTU: `sent` times, the first `waited_us` before the end.
    CmTimeout {
        connection: u32,
        waiting_for: &'static str,
        sent: u32,
        waited_us: u64,
    },
    /// RC data between a connection's addresses toward a QPN no handshake between them announced.
    UnexpectedQp {
        qpn: u32,
        connection: u32,
    },
    /// A direction's first request PSN is not the starting PSN its side announced.
    StartPsnMismatch {
        connection: u32,
        psn: u32,
        announced: u32,
    },
}

impl Kind {
    /// A sign that the lossless machinery (PFC, ECN and CNPs) did not do its job.
    pub fn is_lossless_failure(&self) -> bool {
        matches!(
            self,
            Kind::PauseStorm { .. } | Kind::RoceUnprotected { .. } | Kind::CnpIgnored { .. }
        )
    }

    pub fn severity(&self) -> Severity {
        match self {
            Kind::PsnGap { .. }
            | Kind::Nak { .. }
            | Kind::BadIcrc { .. }
            | Kind::Malformed(_)
            | Kind::RnrStorm { .. }
            | Kind::LengthMismatch { .. }
            | Kind::Stall { .. }
            | Kind::NoResponse { .. }
            | Kind::RetryExhausted { .. }
            | Kind::RnrExhausted { .. }
            | Kind::AckOutOfWindow { .. }
            | Kind::PsnReuse { .. }
            | Kind::MsnRegression { .. }
            | Kind::ReadResponseMismatch { .. }
            | Kind::CmReject { .. }
            | Kind::PauseStorm { .. }
            | Kind::CmTimeout { .. }
            | Kind::UnexpectedQp { .. }
            | Kind::StartPsnMismatch { .. } => Severity::Error,
            Kind::GoBackN { .. }
            | Kind::ImpliedNak { .. }
            | Kind::CeWithoutCnp { .. }
            | Kind::CnpIgnored { .. }
            | Kind::RnrNak { .. }
            | Kind::RoceUnprotected { .. }
            | Kind::TimeoutRetransmission { .. } => Severity::Warning,
            Kind::Pause { .. }
            | Kind::PauseOnIdlePriority { .. }
            | Kind::NewEpoch { .. }
            | Kind::Reordered { .. }
            | Kind::Connection { .. }
            | Kind::Disconnect { .. } => Severity::Note,
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
            Kind::CnpIgnored { .. } => "cnp_ignored",
            Kind::BadIcrc { .. } => "bad_icrc",
            Kind::Malformed(_) => "malformed",
            Kind::LengthMismatch { .. } => "length_mismatch",
            Kind::Pause { .. } => "pause",
            Kind::PauseStorm { .. } => "pause_storm",
            Kind::PauseOnIdlePriority { .. } => "pause_on_idle_priority",
            Kind::RoceUnprotected { .. } => "roce_unprotected",
            Kind::Stall { .. } => "stall",
            Kind::NoResponse { .. } => "no_response",
            Kind::TimeoutRetransmission { .. } => "timeout_retransmission",
            Kind::RetryExhausted { .. } => "retry_exhausted",
            Kind::RnrExhausted { .. } => "rnr_exhausted",
            Kind::AckOutOfWindow { .. } => "ack_out_of_window",
            Kind::PsnReuse { .. } => "psn_reuse",
            Kind::MsnRegression { .. } => "msn_regression",
            Kind::ReadResponseMismatch { .. } => "read_response_mismatch",
            Kind::NewEpoch { .. } => "new_epoch",
            Kind::Reordered { .. } => "reordered",
            Kind::Connection { .. } => "connection",
            Kind::Disconnect { .. } => "disconnect",
            Kind::CmReject { .. } => "cm_reject",
            Kind::CmTimeout { .. } => "cm_timeout",
            Kind::UnexpectedQp { .. } => "unexpected_qp",
            Kind::StartPsnMismatch { .. } => "start_psn_mismatch",
        }
    }

    /// The PSN the event is about, if one.
    pub fn psn(&self) -> Option<u32> {
        match *self {
            Kind::PsnGap { after, .. } => Some(parsers::psn::add(after, 1)),
            Kind::Nak { psn, .. }
            | Kind::RnrNak { psn, .. }
            | Kind::Stall { psn, .. }
            | Kind::TimeoutRetransmission { psn, .. }
            | Kind::RetryExhausted { psn, .. }
            | Kind::RnrExhausted { psn, .. }
            | Kind::AckOutOfWindow { psn, .. }
            | Kind::PsnReuse { psn, .. }
            | Kind::NewEpoch { psn, .. }
            | Kind::Reordered { psn, .. }
            | Kind::StartPsnMismatch { psn, .. } => Some(psn),
            Kind::GoBackN { from, .. } => Some(from),
            Kind::NoResponse { first_psn, .. } => Some(first_psn),
            Kind::ImpliedNak { got, .. } => Some(got),
            Kind::ReadResponseMismatch { read_psn, .. } => Some(read_psn),
            _ => None,
        }
    }
}

fn ms(us: u64) -> String {
    format!("{}.{:03} ms", us / 1000, us % 1000)
}

/// The priorities of a bit mask, as "3" or "3, 4".
fn priorities(mask: u8) -> String {
    let v: Vec<String> = (0..8)
        .filter(|p| mask & (1 << p) != 0)
        .map(|p| p.to_string())
        .collect();
    v.join(", ")
}

/// `1 PSN`, `3 PSNs`.
fn psns(n: u32) -> String {
    if n == 1 {
        "1 PSN".to_string()
    } else {
        format!("{n} PSNs")
    }
}

/// Seconds with three decimals, from microseconds.
fn secs(us: u64) -> String {
    format!("{}.{:03} s", us / 1_000_000, (us % 1_000_000) / 1000)
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Kind::PsnGap { missing, after } => {
                write!(f, "PSN gap: {missing} missing after PSN {}", Shown(after))
            }
            Kind::Nak { code, psn } => {
                write!(f, "NAK ({}) for PSN {}", code.name(), Shown(psn))
            }
            Kind::GoBackN {
                from,
                behind,
                after_nak_us,
                after_progress_us,
            } => {
                write!(
                    f,
                    "go-back-N: resent from PSN {} ({behind} behind)",
                    Shown(from)
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
                "RNR NAK for PSN {}, retry in {}",
                Shown(psn),
                ms(u64::from(timer_us))
            ),
            Kind::RnrStorm { count, span_us } => {
                write!(
                    f,
                    "RNR NAK storm: {count} in {} (the receiver posts no receives: an empty receive queue)",
                    ms(span_us)
                )
            }
            Kind::ImpliedNak { expected, got } => {
                write!(
                    f,
                    "implied NAK: a response for PSN {} came while PSN {} (of a READ or an atomic) had no \
                     answer: its response was lost, and the requester asks again from it",
                    Shown(got),
                    Shown(expected)
                )
            }
            Kind::CeWithoutCnp { count } => write!(
                f,
                "CE marks without CNP: {count} CE-marked packets not answered by a CNP"
            ),
            Kind::CnpIgnored {
                cnps,
                measured,
                no_reduction,
            } => write!(
                f,
                "CNPs ignored: the sender kept its rate after {no_reduction} of the {measured} CNPs whose \
                 reaction was measured ({cnps} reached it): congestion control is off or not reacting on \
                 this QP (rp_cnp_ignored on mlx5)"
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
            Kind::PauseStorm {
                priority,
                duration_us,
                xoff,
            } => {
                match priority {
                    Some(p) => write!(f, "PFC pause storm on priority {p}")?,
                    None => write!(f, "802.3x PAUSE storm of the whole link")?,
                }
                write!(
                    f,
                    ": paused without a break for {} by {xoff} XOFF frames (a stuck receiver or a PFC \
                     deadlock: traffic on it is halted, and the pauses spread upstream)",
                    ms(duration_us)
                )
            }
            Kind::PauseOnIdlePriority {
                priority,
                xoff,
                pause_us,
                carried,
            } => write!(
                f,
                "PFC paused priority {priority} ({xoff} XOFF frames, {} in effect), which carries none of the \
                 captured RoCE traffic (on priority {})",
                ms(pause_us),
                priorities(carried)
            ),
            Kind::RoceUnprotected {
                priority,
                dscp,
                paused,
            } => {
                write!(f, "RoCE on priority {priority} (")?;
                match dscp {
                    Some(d) => write!(f, "DSCP {d} by --dscp-map")?,
                    None => write!(f, "VLAN PCP {priority}")?,
                }
                write!(
                    f,
                    "), which no PFC frame paused while priority {} was paused: this traffic is not lossless \
                     (PFC enabled on another priority than RoCE is sent on)",
                    priorities(paused)
                )
            }
            Kind::Stall {
                psn,
                outstanding,
                waited_us,
                at_end,
                ..
            } => {
                write!(f, "stall: PSN {}", Shown(psn))?;
                if outstanding > 1 {
                    write!(f, " and {} PSNs after it", outstanding - 1)?;
                }
                write!(f, " unacknowledged for {}", secs(waited_us))?;
                if at_end {
                    write!(
                        f,
                        ", until the capture ended (check the responder: is it alive, its QP in RTS?)"
                    )
                } else {
                    write!(f, " before the answer came")
                }
            }
            Kind::NoResponse {
                requests,
                first_psn,
                waited_us,
            } => write!(
                f,
                "no response: {requests} requests from PSN {} and nothing back in {} (wrong destination QPN, \
                 remote QP not in RTR, a firewall, or a peer that is down)",
                Shown(first_psn),
                secs(waited_us)
            ),
            Kind::TimeoutRetransmission {
                psn,
                interval_us,
                timeout_exp,
                retry,
            } => write!(
                f,
                "timeout retransmission: PSN {} resent {} after it was sent with no NAK (local ACK timeout \
                 about 4.096 µs × 2^{timeout_exp}), retry {retry}",
                Shown(psn),
                ms(interval_us)
            ),
            Kind::RetryExhausted {
                psn,
                resends,
                silent_us,
            } => write!(
                f,
                "retry exhausted: PSN {} resent {resends} times, then the requester went silent for {} \
                 (IBV_WC_RETRY_EXC_ERR on the host: the responder never answered)",
                Shown(psn),
                secs(silent_us)
            ),
            Kind::RnrExhausted {
                psn,
                naks,
                silent_us,
            } => write!(
                f,
                "RNR retry exhausted: PSN {} RNR-NAKed {naks} times, then the requester went silent for {} \
                 (IBV_WC_RNR_RETRY_EXC_ERR: the receiver never posted a receive)",
                Shown(psn),
                secs(silent_us)
            ),
            Kind::AckOutOfWindow { psn, lo, hi } => write!(
                f,
                "response for PSN {}, which was never sent (requests span {} to {})",
                Shown(psn),
                Shown(lo),
                Shown(hi)
            ),
            Kind::PsnReuse {
                psn,
                read_psn,
                read_psns,
            } => write!(
                f,
                "PSN reuse: a new request carries PSN {}, which the READ at PSN {} already consumed (it takes \
                 {read_psns} PSNs, one per response packet): the requester counted the READ as one PSN",
                Shown(psn),
                Shown(read_psn)
            ),
            Kind::MsnRegression { msn, previous } => {
                write!(f, "MSN went backwards: {msn} after {previous}")
            }
            Kind::ReadResponseMismatch { read_psn, what } => {
                write!(f, "READ at PSN {}: ", Shown(read_psn))?;
                match what {
                    ReadMismatch::PsnOutside { psn, psns } => {
                        write!(f, "response PSN {} is outside its {psns} PSNs", Shown(psn))
                    }
                    ReadMismatch::Length { got, dma_len } => write!(
                        f,
                        "responses carry {got} bytes for a DMA length of {dma_len}"
                    ),
                    ReadMismatch::Packets { got, expected, mtu } => write!(
                        f,
                        "{got} response packets where path MTU {mtu} implies {expected}"
                    ),
                }
            }
            Kind::NewEpoch {
                psn,
                expected,
                idle_us,
            } => write!(
                f,
                "new connection on this QP number: PSN {} after {} idle, where {} was expected (not a \
                 retransmission)",
                Shown(psn),
                secs(idle_us),
                Shown(expected)
            ),
            Kind::Reordered {
                psn,
                highest,
                depth,
                response: false,
            } => write!(
                f,
                "reordered: request PSN {} came {} behind PSN {}, its first copy, not a resend (held up on the \
                 way: reordering in the network)",
                Shown(psn),
                psns(depth),
                Shown(highest)
            ),
            Kind::Reordered {
                psn,
                highest,
                depth,
                response: true,
            } => write!(
                f,
                "reordered: the response for PSN {} came after the one for PSN {}, {} ahead, with nothing \
                 resent between (held up on the way: reordering in the network)",
                Shown(psn),
                Shown(highest),
                psns(depth)
            ),
            Kind::Connection {
                connection,
                qpns,
                mtu,
            } => {
                write!(
                    f,
                    "connection #{connection} established: QP 0x{:06x} ⇄ QP 0x{:06x}",
                    qpns[0], qpns[1]
                )?;
                match mtu {
                    Some(m) => write!(f, ", path MTU {m}"),
                    None => Ok(()),
                }
            }
            Kind::Disconnect { connection, qpns } => write!(
                f,
                "connection #{connection} (QP 0x{:06x} ⇄ QP 0x{:06x}) disconnecting: DREQ",
                qpns[0], qpns[1]
            ),
            Kind::CmReject { connection, reason } => write!(
                f,
                "connection #{connection} rejected: REJ reason {reason}, {} ({})",
                parsers::cm::reject_reason_name(reason).unwrap_or("unassigned"),
                crate::analysis::connections::reject_meaning(reason)
            ),
            Kind::CmTimeout {
                connection,
                waiting_for,
                sent,
                waited_us,
            } => write!(
                f,
                "connection #{connection} handshake timed out: sent {sent} times, no {waiting_for} in {} (is \
                 the peer's CM up, the port right, a firewall in the way?)",
                secs(waited_us)
            ),
            Kind::UnexpectedQp { qpn, connection } => write!(
                f,
                "RC data to QPN 0x{qpn:06x}, which no connection between these addresses announced (see \
                 connection #{connection}): a QP pointing at the wrong peer"
            ),
            Kind::StartPsnMismatch {
                connection,
                psn,
                announced,
            } => write!(
                f,
                "first request PSN {} of connection #{connection}, where its side announced {}: the QP \
                 was set up with another PSN than it told its peer",
                Shown(psn),
                Shown(announced)
            ),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Event {
    pub ts_nanos: u64,
    /// The flow it is about.
    pub flow: Option<FlowId>,
    /// Frame number in the capture.
    pub frame: u64,
    pub kind: Kind,
}

#[derive(Debug, Default, Clone)]
pub struct Events {
    pub list: Vec<Event>,
    /// Events not kept: the list was full, or their flow had many of their kind already.
    pub dropped: u64,
    /// Per flow and kind: how many came, and the slot of the last kept (the one the newest replaces).
    per_kind: FxHashMap<(FlowId, &'static str), (u32, usize)>,
    /// Events that say the lossless machinery failed ([`Kind::is_lossless_failure`]), kept or not.
    pub lossless_failures: u64,
    /// The kinds raised for the newest frame that raised any, kept or not (the export's per-frame column).
    pub raised: Raised,
    /// The places in `list` of events taken back (a gap whose PSNs came after all, held up on the way):
    /// left out of every report, and out of the list at the end.
    retracted: FxHashSet<usize>,
}

/// The kinds of the events raised for one frame, each once, in the order raised (up to [`Raised::MAX`]:
/// one frame raises two or three at most).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Raised {
    pub frame: u64,
    kinds: [&'static str; Raised::MAX],
    len: u8,
}

impl Raised {
    pub const MAX: usize = 8;

    fn add(&mut self, frame: u64, kind: &'static str) {
        if frame < self.frame {
            // Settled late (a request the next one explained): that frame has gone by.
            return;
        }
        if frame != self.frame {
            *self = Raised {
                frame,
                ..Raised::default()
            };
        }
        if !self.kinds().contains(&kind) && usize::from(self.len) < Self::MAX {
            self.kinds[usize::from(self.len)] = kind;
            self.len += 1;
        }
    }

    pub fn kinds(&self) -> &[&'static str] {
        &self.kinds[..usize::from(self.len)]
    }

    /// The kinds raised for frame `frame` (none when the newest events were for another).
    pub fn of(&self, frame: u64) -> &[&'static str] {
        if self.frame == frame {
            self.kinds()
        } else {
            &[]
        }
    }
}

impl Events {
    pub const LIMIT: usize = 10_000;
    /// Events of one kind kept per flow: the first this many and the newest, so that one flow in an RNR
    /// storm or a loss burst does not crowd out the others.
    pub const PER_FLOW_KIND: u32 = 8;

    /// Keeps the event; returns where it is in the list (`None` when it was not kept).
    pub fn push(&mut self, e: Event) -> Option<usize> {
        self.lossless_failures += u64::from(e.kind.is_lossless_failure());
        self.raised.add(e.frame, e.kind.name());
        if let Some(flow) = e.flow {
            let seen = self
                .per_kind
                .entry((flow, e.kind.name()))
                .or_insert((0, usize::MAX));
            seen.0 = seen.0.saturating_add(1);
            if seen.0 > Self::PER_FLOW_KIND + 1
                && let Some(last) = self.list.get_mut(seen.1)
            {
                *last = e;
                self.retracted.remove(&seen.1);
                self.dropped += 1;
                return Some(seen.1);
            }
            if self.list.len() < Self::LIMIT {
                seen.1 = self.list.len();
            }
        }
        if self.list.len() < Self::LIMIT {
            self.list.push(e);
            Some(self.list.len() - 1)
        } else {
            self.dropped += 1;
            None
        }
    }

    /// The event at `at` told of something that was not (its place, as [`Events::push`] gave it).
    pub(crate) fn retract(&mut self, at: usize) {
        if at < self.list.len() {
            self.retracted.insert(at);
        }
    }

    /// The events kept and not taken back, in the order kept.
    pub fn kept(&self) -> impl Iterator<Item = &Event> {
        self.list
            .iter()
            .enumerate()
            .filter(|(i, _)| !self.retracted.contains(i))
            .map(|(_, e)| e)
    }

    /// At the end: the events taken back leave the list, which is then in time order.
    pub(crate) fn settle(&mut self) {
        if !self.retracted.is_empty() {
            let mut at = 0;
            let retracted = std::mem::take(&mut self.retracted);
            self.list.retain(|_| {
                at += 1;
                !retracted.contains(&(at - 1))
            });
        }
        self.list.sort_by_key(|e| (e.ts_nanos, e.frame));
    }

    /// Flows were evicted: their counts go (their events stay, naming flows no longer alive).
    pub(crate) fn forget(&mut self, gone: impl Fn(FlowId) -> bool) {
        self.per_kind.retain(|(flow, _), _| !gone(*flow));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gap(flow: u64, frame: u64) -> Event {
        Event {
            ts_nanos: frame,
            flow: Some(FlowId::for_test(flow)),
            frame,
            kind: Kind::PsnGap {
                missing: 1,
                after: 0,
            },
        }
    }

    /// The kinds raised for the newest frame, each once, kept or not; another frame's start afresh.
    #[test]
    fn the_kinds_raised_for_a_frame_are_kept_until_the_next_frame_raises_any() {
        let mut e = Events::default();
        for _ in 0..12 {
            e.push(gap(0, 7));
        }
        e.push(Event {
            kind: Kind::CeWithoutCnp { count: 1 },
            ..gap(0, 7)
        });
        assert_eq!(e.raised.of(7), ["psn_gap", "ce_without_cnp"]);
        assert!(e.raised.of(6).is_empty());
        e.push(gap(1, 9));
        assert_eq!(e.raised.of(9), ["psn_gap"]);
        assert!(e.raised.of(7).is_empty());
    }

    /// One flow's 20 gaps keep its first 8 and its newest; another flow's 3 are all kept.
    #[test]
    fn a_flow_keeps_the_first_and_the_newest_of_a_kind() {
        let mut e = Events::default();
        for frame in 1..=20 {
            e.push(gap(0, frame));
        }
        for frame in 21..=23 {
            e.push(gap(1, frame));
        }
        let frames: Vec<u64> = e.list.iter().map(|e| e.frame).collect();
        assert_eq!(frames, vec![1, 2, 3, 4, 5, 6, 7, 8, 20, 21, 22, 23]);
        assert_eq!(e.dropped, 11);
        // Another kind of the same flow has its own count.
        e.push(Event {
            kind: Kind::CeWithoutCnp { count: 1 },
            ..gap(0, 24)
        });
        assert_eq!(e.list.len(), 13);
        // After flow 0's eviction its counts go, its events stay; flow 1 keeps its count.
        e.forget(|id| id.number() == 0);
        assert!(e.list.iter().take(9).all(|e| e.flow.is_some()));
        for frame in 25..=30 {
            e.push(gap(1, frame));
        }
        // Flow 1 had 3: 6 more make 9, all kept (the 9th is the slot the newest takes over).
        assert_eq!(e.list.len(), 13 + 6);
        e.push(gap(1, 31));
        assert_eq!(e.list.len(), 13 + 6, "the 10th takes the newest's slot");
    }
}
