//! Every kind of event, each declared once: its name (JSON `kind`, `-Y rocescope.event`), severity, what it
//! tells of its flow (its group: the flow's `state`, the diagnosis' counts), the PSN it is about, its JSON
//! `detail`, its lines in docs/json.md and docs/analysis.md (held to them by a test), and its message.
//! A new kind touches this table only.
use std::fmt;

use parsers::aeth::NakCode;
use parsers::error::Malformed;
use parsers::frame::Addr;
use parsers::psn::Shown;
use serde_json::{Value, json};

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

/// What an event tells of its flow: the flow's `state` (the worst group of its events, or of its counts),
/// and which count of the diagnosis it adds to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Group {
    /// Tells of no trouble (a connection made, a pause, a packet held up on the way).
    None,
    /// Congestion signals: CE marks no CNP answered.
    Congestion,
    /// Loss and damage: gaps, NAKs, resends, bad ICRCs, malformed frames.
    Loss,
    /// The requester's timer fired.
    Timeout,
    /// The lossless machinery failed: a pause storm, RoCE on an unprotected priority, CNPs ignored.
    Lossless,
    /// A connection that broke or that the data path contradicts.
    Connection,
    /// A protocol violation.
    Violation,
    /// Requests unanswered past the stall time.
    Stall,
    /// A requester that gave up its retries.
    GaveUp,
    /// A requester that never heard back.
    NoResponse,
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

/// A kind's lines in the docs: docs/json.md's event kinds (`name`, `severity`, `detail`) and
/// docs/analysis.md's events (`name`, `severity`, `condition`, `fires`, `frame`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KindDoc {
    pub name: &'static str,
    pub severity: Severity,
    /// The verdict's condition (`--fail-on` name) it counts in, or "".
    pub condition: &'static str,
    pub detail: &'static str,
    pub fires: &'static str,
    pub frame: &'static str,
}

impl KindDoc {
    /// Its row of docs/json.md's table of event kinds.
    pub fn json_row(&self) -> String {
        format!(
            "| `{}` | `{}` | {} |",
            self.name,
            self.severity.name(),
            self.detail
        )
    }

    /// Its row of docs/analysis.md's table of events.
    pub fn analysis_row(&self) -> String {
        let condition = if self.condition.is_empty() {
            " ".to_string()
        } else {
            format!(" `{}` ", self.condition)
        };
        format!(
            "| `{}` | {} |{condition}| {} | {} |",
            self.name,
            self.severity.name(),
            self.fires,
            self.frame
        )
    }
}

macro_rules! event_kinds {
    ($(
        $(#[$doc:meta])*
        $variant:ident { $($field:ident : $ty:ty),* $(,)? } => {
            name: $name:literal,
            severity: $severity:ident,
            group: $group:ident,
            condition: $condition:literal,
            psn: $psn:expr,
            detail: $detail:expr,
            json: $json:literal,
            fires: $fires:literal,
            frame: $frame:literal,
            message($f:ident): $message:expr,
        }
    )*) => {
        #[derive(Debug, Clone, Copy, PartialEq)]
        pub enum Kind {
            $( $(#[$doc])* $variant { $($field: $ty),* }, )*
        }

        impl Kind {
            /// Every kind's lines in the docs, in declaration order.
            pub const DOCS: &'static [KindDoc] = &[$(KindDoc {
                name: $name,
                severity: Severity::$severity,
                condition: $condition,
                detail: $json,
                fires: $fires,
                frame: $frame,
            }),*];

            /// The short machine name for filters and JSON.
            pub fn name(&self) -> &'static str {
                match self {
                    $( Kind::$variant { .. } => $name, )*
                }
            }

            pub fn severity(&self) -> Severity {
                match self {
                    $( Kind::$variant { .. } => Severity::$severity, )*
                }
            }

            /// What it tells of its flow.
            pub fn group(&self) -> Group {
                match self {
                    $( Kind::$variant { .. } => Group::$group, )*
                }
            }

            /// The PSN the event is about, if one.
            #[allow(unused_variables)]
            pub fn psn(&self) -> Option<u32> {
                match *self {
                    $( Kind::$variant { $($field),* } => $psn, )*
                }
            }

            /// Its figures by name, for the JSON's `detail`: what the message is made of, so that a script
            /// need not parse it.
            #[allow(unused_variables)]
            pub fn detail(&self) -> serde_json::Map<String, Value> {
                let v = match *self {
                    $( Kind::$variant { $($field),* } => $detail, )*
                };
                match v {
                    Value::Object(m) => m,
                    _ => serde_json::Map::new(),
                }
            }
        }

        impl fmt::Display for Kind {
            #[allow(unused_variables)]
            fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                match *self {
                    $( Kind::$variant { $($field),* } => {
                        let $f = &mut *formatter;
                        $message
                    } )*
                }
            }
        }
    };
}

impl Group {
    /// Its bit in a flow's set of the groups its events fell in.
    pub fn bit(self) -> u16 {
        1 << self as u16
    }
}

impl Kind {
    /// A sign that the lossless machinery (PFC, ECN and CNPs) did not do its job.
    pub fn is_lossless_failure(&self) -> bool {
        self.group() == Group::Lossless
    }
}

fn ms(us: u64) -> String {
    format!("{}.{:03} ms", us / 1000, us % 1000)
}

/// The priorities of a bit mask, as "3" or "3, 4".
fn priorities(mask: u8) -> String {
    let v: Vec<String> = bits(mask).iter().map(|p| p.to_string()).collect();
    v.join(", ")
}

/// The priorities of a bit mask, in order.
fn bits(mask: u8) -> Vec<u8> {
    (0..8).filter(|p| mask & (1 << p) != 0).collect()
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

fn us_to_s(us: u64) -> f64 {
    us as f64 / 1e6
}

fn secs_of_ns(ns: u64) -> f64 {
    ns as f64 / 1e9
}

event_kinds! {
    /// A request ahead of the next expected PSN: `missing` PSNs skipped after `after`.
    PsnGap { missing: u32, after: u32 } => {
        name: "psn_gap",
        severity: Error,
        group: Loss,
        condition: "gaps",
        psn: Some(parsers::psn::add(after, 1)),
        detail: json!({"after": after, "missing": missing}),
        json: "`after` (the last PSN before the gap), `missing`",
        fires: "a request ahead of the next expected PSN (PSNs skipped: lost before the capture point)",
        frame: "the request",
        message(f): write!(f, "PSN gap: {missing} missing after PSN {}", Shown(after)),
    }
    /// A NAK, by code.
    Nak { code: NakCode, psn: u32 } => {
        name: "nak",
        severity: Error,
        group: Loss,
        condition: "naks",
        psn: Some(psn),
        detail: json!({"psn": psn, "code": code.name()}),
        json: "`psn`, `code` (`PSN sequence error`, `invalid request`, `remote access error`, `remote operational error`, `invalid RD request`, `reserved N`)",
        fires: "a NAK, by code",
        frame: "the NAK",
        message(f): write!(f, "NAK ({}) for PSN {}", code.name(), Shown(psn)),
    }
    /// The requester went back to `from`, `behind` PSNs behind the next new one: `after_nak_us` after the NAK that asked for it, if one did, and `after_progress_us` after its last new request.
    GoBackN { from: u32, behind: u32, after_nak_us: Option<u64>, after_progress_us: u64 } => {
        name: "go_back_n",
        severity: Warning,
        group: Loss,
        condition: "retransmissions",
        psn: Some(from),
        detail: json!({"from": from, "behind": behind, "after_nak_s": after_nak_us.map(us_to_s), "after_progress_s": us_to_s(after_progress_us)}),
        json: "`from`, `behind`, `after_nak_s` (null when no NAK explains it), `after_progress_s`",
        fires: "the requester went back to an earlier PSN",
        frame: "the first resend",
        message(f): {
            write!(f, "go-back-N: resent from PSN {} ({behind} behind)", Shown(from))?;
            match after_nak_us {
                Some(us) => write!(f, ", {} after the NAK", ms(us)),
                None => write!(f, ", {} after the last progress (timeout?)", ms(after_progress_us)),
            }
        },
    }
    /// An RNR NAK, with the timer it asks for.
    RnrNak { psn: u32, timer_us: u32 } => {
        name: "rnr_nak",
        severity: Warning,
        group: Loss,
        condition: "rnr",
        psn: Some(psn),
        detail: json!({"psn": psn, "timer_s": us_to_s(u64::from(timer_us))}),
        json: "`psn`, `timer_s`",
        fires: "an RNR NAK (the first 10 of a flow)",
        frame: "the NAK",
        message(f): write!(f, "RNR NAK for PSN {}, retry in {}", Shown(psn), ms(u64::from(timer_us))),
    }
    /// `count` RNR NAKs on one flow within `span_us`: an empty receive queue.
    RnrStorm { count: u64, span_us: u64 } => {
        name: "rnr_storm",
        severity: Error,
        group: Loss,
        condition: "rnr",
        psn: None,
        detail: json!({"count": count, "span_s": us_to_s(span_us)}),
        json: "`count`, `span_s`",
        fires: "at least 10 RNR NAKs a second on one flow: an empty receive queue",
        frame: "the first RNR NAK",
        message(f): write!(f, "RNR NAK storm: {count} in {} (the receiver posts no receives: an empty receive queue)", ms(span_us)),
    }
    /// A response for PSN `got` while `expected` waited for its own (a READ's or an atomic's), or a READ's responses skipping `expected`: the requester asks again from it.
    ImpliedNak { expected: u32, got: u32 } => {
        name: "implied_nak",
        severity: Warning,
        group: Loss,
        condition: "",
        psn: Some(got),
        detail: json!({"expected": expected, "got": got}),
        json: "`expected`, `got`",
        fires: "a response for a later PSN while a READ or an atomic waited for its own, or a READ response PSN skipping ahead within its READ: the requester asks again from the first missing (a NAK for the go-back-N after it)",
        frame: "the response",
        message(f): write!(f, "implied NAK: a response for PSN {} came while PSN {} (of a READ or an atomic) had no answer: its response was lost, and the requester asks again from it", Shown(got), Shown(expected)),
    }
    /// CE-marked packets no CNP answered within the window.
    CeWithoutCnp { count: u64 } => {
        name: "ce_without_cnp",
        severity: Warning,
        group: Congestion,
        condition: "ce",
        psn: None,
        detail: json!({"count": count}),
        json: "`count`",
        fires: "CE marks not answered by a CNP within `--cnp-window-us`",
        frame: "the first such CE-marked frame",
        message(f): write!(f, "CE marks without CNP: {count} CE-marked packets not answered by a CNP"),
    }
    /// A sender that kept its rate after CNPs: of the `cnps` that reached it, `measured` had their reaction measured, `no_reduction` of those showed none.
    CnpIgnored { cnps: u64, measured: u64, no_reduction: u64 } => {
        name: "cnp_ignored",
        severity: Warning,
        group: Lossless,
        condition: "lossless",
        psn: None,
        detail: json!({"cnps": cnps, "measured": measured, "no_reduction": no_reduction}),
        json: "`cnps` (that reached the sender), `measured`, `no_reduction`",
        fires: "a sender that kept its rate after at least half of its measured CNPs (two at least)",
        frame: "the first CNP with no visible reduction",
        message(f): write!(f, "CNPs ignored: the sender kept its rate after {no_reduction} of the {measured} CNPs whose reaction was measured ({cnps} reached it): congestion control is off or not reacting on this QP (rp_cnp_ignored on mlx5)"),
    }
    /// A bad ICRC: the receiver drops the packet.
    BadIcrc { expected: u32, found: u32 } => {
        name: "bad_icrc",
        severity: Error,
        group: Loss,
        condition: "icrc",
        psn: None,
        detail: json!({"expected": expected, "found": found}),
        json: "`expected`, `found`",
        fires: "a bad ICRC",
        frame: "the frame",
        message(f): write!(f, "bad ICRC: found 0x{found:08x}, expected 0x{expected:08x}"),
    }
    /// A damaged frame: at which layer, and why.
    Malformed { what: Malformed } => {
        name: "malformed",
        severity: Error,
        group: Loss,
        condition: "malformed",
        psn: None,
        detail: json!({"layer": what.layer.name(), "reason": what.to_string()}),
        json: "`layer`, `reason`",
        fires: "a damaged frame",
        frame: "the frame",
        message(f): write!(f, "malformed: {what}"),
    }
    /// A message whose payload differs from its RETH DMA length.
    LengthMismatch { dma_len: u32, payload: u64 } => {
        name: "length_mismatch",
        severity: Error,
        group: Loss,
        condition: "",
        psn: None,
        detail: json!({"dma_len": dma_len, "payload": payload}),
        json: "`dma_len`, `payload`",
        fires: "a message's payload differs from its RETH DMA length",
        frame: "its last packet",
        message(f): write!(f, "message payload {payload} bytes differs from RETH DMA length {dma_len}"),
    }
    /// PFC pause of one priority, or (`None`) 802.3x PAUSE of the whole link.
    Pause { priority: Option<u8>, frames: u64, pause_us: u64 } => {
        name: "pause",
        severity: Note,
        group: None,
        condition: "",
        psn: None,
        detail: json!({"priority": priority, "frames": frames, "pause_s": us_to_s(pause_us)}),
        json: "`priority` (null for 802.3x PAUSE: `flow` is null too), `frames` (XOFFs), `pause_s` (time paused)",
        fires: "PFC pause of a priority, or 802.3x PAUSE: its XOFFs and the time paused",
        frame: "the first XOFF",
        message(f): match priority {
            Some(p) => write!(f, "PFC pause on priority {p}: {frames} XOFF frames, {} of pause", ms(pause_us)),
            None => write!(f, "802.3x PAUSE of the whole link: {frames} frames, {} of pause", ms(pause_us)),
        },
    }
    /// One priority (`None`: 802.3x PAUSE) paused without a break for longer than the storm threshold: how long, and by how many XOFF frames.
    PauseStorm { priority: Option<u8>, duration_us: u64, xoff: u64 } => {
        name: "pause_storm",
        severity: Error,
        group: Lossless,
        condition: "lossless",
        psn: None,
        detail: json!({"priority": priority, "duration_s": us_to_s(duration_us), "xoff": xoff}),
        json: "`priority` (null for 802.3x PAUSE), `duration_s` (paused without a break), `xoff` (the XOFF frames in it); `flow` is null",
        fires: "a priority (or the link) paused without a break for longer than `--pause-storm-ms`",
        frame: "the XOFF that began it",
        message(f): {
            match priority {
                Some(p) => write!(f, "PFC pause storm on priority {p}")?,
                None => write!(f, "802.3x PAUSE storm of the whole link")?,
            }
            write!(f, ": paused without a break for {} by {xoff} XOFF frames (a stuck receiver or a PFC deadlock: traffic on it is halted, and the pauses spread upstream)", ms(duration_us))
        },
    }
    /// PFC paused a priority that none of the RoCE flows is on (`carried`: bit p, the priorities they are on).
    PauseOnIdlePriority { priority: u8, xoff: u64, pause_us: u64, carried: u8 } => {
        name: "pause_on_idle_priority",
        severity: Note,
        group: None,
        condition: "",
        psn: None,
        detail: json!({"priority": priority, "xoff": xoff, "pause_s": us_to_s(pause_us), "roce_priorities": bits(carried)}),
        json: "`priority`, `xoff`, `pause_s`, `roce_priorities` (the priorities the RoCE flows are on); `flow` is null",
        fires: "PFC paused a priority none of the RoCE flows is on",
        frame: "its first XOFF",
        message(f): write!(f, "PFC paused priority {priority} ({xoff} XOFF frames, {} in effect), which carries none of the captured RoCE traffic (on priority {})", ms(pause_us), priorities(carried)),
    }
    /// A RoCE flow on a priority no PFC frame paused while PFC paused others (`paused`: bit p); `dscp` when its priority came from `--dscp-map` (untagged).
    RoceUnprotected { priority: u8, dscp: Option<u8>, paused: u8 } => {
        name: "roce_unprotected",
        severity: Warning,
        group: Lossless,
        condition: "lossless",
        psn: None,
        detail: json!({"priority": priority, "dscp": dscp, "paused_priorities": bits(paused)}),
        json: "`priority` (the flow's), `dscp` (when the priority came from `--dscp-map`, else null), `paused_priorities`",
        fires: "a RoCE flow on a priority no PFC frame paused while others were paused",
        frame: "the flow's first frame",
        message(f): {
            write!(f, "RoCE on priority {priority} (")?;
            match dscp {
                Some(d) => write!(f, "DSCP {d} by --dscp-map")?,
                None => write!(f, "VLAN PCP {priority}")?,
            }
            write!(f, "), which no PFC frame paused while priority {} was paused: this traffic is not lossless (PFC enabled on another priority than RoCE is sent on)", priorities(paused))
        },
    }
    /// A flow whose DSCP is not the one the job's log set for its sending QP (`setting`, `traffic_class`: the
    /// whole TOS byte; `rank`: the process that set it); `priority` its priority (PCP, or `--dscp-map`'s for its
    /// DSCP), `configured_priority` the one `--dscp-map` gives the configured DSCP.
    TcMismatch { dscp: u8, traffic_class: u8, setting: &'static str, rank: Option<u32>, priority: Option<u8>, configured_priority: Option<u8> } => {
        name: "tc_mismatch",
        severity: Warning,
        group: Lossless,
        condition: "lossless",
        psn: None,
        detail: json!({"dscp": dscp, "configured_traffic_class": traffic_class, "configured_dscp": traffic_class >> 2, "setting": setting, "rank": rank, "priority": priority, "configured_priority": configured_priority}),
        json: "`dscp` (the flow's), `configured_traffic_class` (the TOS byte the log set), `configured_dscp`, `setting` (`NCCL_IB_TC`, `NCCL_IB_FIFO_TC`, `UCX_IB_TRAFFIC_CLASS`, `traffic_class`: UCX's QP line), `rank` (of the process whose log set it; null for UCX), `priority` (the flow's: PCP, or `--dscp-map`), `configured_priority` (`--dscp-map`'s for the configured DSCP; null untagged without a map, or tagged)",
        fires: "a flow whose DSCP is not the one the `--expect` NCCL or UCX log set for the QP that sends it (`NCCL_IB_TC` for a sender's data, the receiver's `NCCL_IB_FIFO_TC` or `NCCL_IB_TC` for its CTS writes and ACKs, UCX's traffic class); the ECN bits are the network's and not compared; once per flow",
        frame: "the flow's first frame with another DSCP",
        message(f): {
            write!(f, "traffic class mismatch: DSCP {dscp} on the wire, where {setting}={traffic_class} (DSCP {})", traffic_class >> 2)?;
            match rank {
                Some(r) => write!(f, " was set for the QP of rank {r} that sends it")?,
                None => write!(f, " was set for the QP that sends it")?,
            }
            match (priority, configured_priority) {
                (Some(p), Some(c)) if p != c => write!(f, ": it rides priority {p}, not the configured class's priority {c} (a lossy priority if PFC protects only that one)"),
                (None, Some(c)) => write!(f, ": --dscp-map gives its DSCP no priority, the configured class priority {c}"),
                _ => write!(f, " (another DSCP than configured: a QP set up with another traffic class, or a switch that re-marks)"),
            }
        },
    }
    /// Requests unacknowledged for longer than the stall time: the oldest outstanding PSN, how many PSNs are outstanding, since when it waited (ns since the epoch) and how long (µs, until the capture ended or the answer came), and whether the capture ended with them still outstanding.
    Stall { psn: u32, outstanding: u32, since_ns: u64, waited_us: u64, at_end: bool } => {
        name: "stall",
        severity: Error,
        group: Stall,
        condition: "stall",
        psn: Some(psn),
        detail: json!({"psn": psn, "outstanding": outstanding, "since": secs_of_ns(since_ns), "waited_s": us_to_s(waited_us), "at_end": at_end}),
        json: "`psn` (the oldest outstanding), `outstanding` (PSNs), `since`, `waited_s`, `at_end`",
        fires: "requests unacknowledged for longer than the stall time, while the capture goes on (updated when the answer comes) or until its end (`at_end`); names the oldest outstanding PSN, how many are outstanding, since when and how long",
        frame: "the oldest outstanding request",
        message(f): {
            write!(f, "stall: PSN {}", Shown(psn))?;
            if outstanding > 1 {
                write!(f, " and {} PSNs after it", outstanding - 1)?;
            }
            write!(f, " unacknowledged for {}", secs(waited_us))?;
            if at_end {
                write!(f, ", until the capture ended (check the responder: is it alive, its QP in RTS?)")
            } else {
                write!(f, " before the answer came")
            }
        },
    }
    /// An RC requester that never received any response from its destination.
    NoResponse { requests: u64, first_psn: u32, waited_us: u64 } => {
        name: "no_response",
        severity: Error,
        group: NoResponse,
        condition: "no_response",
        psn: Some(first_psn),
        detail: json!({"requests": requests, "first_psn": first_psn, "waited_s": us_to_s(waited_us)}),
        json: "`requests`, `first_psn`, `waited_s`",
        fires: "an RC requester that never received any response from its destination, for longer than the stall time: wrong destination QPN, remote QP not in RTR, a firewall, a peer that is down (or a capture of one direction)",
        frame: "its first request",
        message(f): write!(f, "no response: {requests} requests from PSN {} and nothing back in {} (wrong destination QPN, remote QP not in RTR, a firewall, or a peer that is down)", Shown(first_psn), secs(waited_us)),
    }
    /// A resend that no NAK explains: the requester's local ACK timer fired after `interval_us`; the timeout exponent it implies (4.096 µs × 2^n) and the how-manieth resend of this PSN it is.
    TimeoutRetransmission { psn: u32, interval_us: u64, timeout_exp: u8, retry: u32 } => {
        name: "timeout_retransmission",
        severity: Warning,
        group: Timeout,
        condition: "timeouts",
        psn: Some(psn),
        detail: json!({"psn": psn, "interval_s": us_to_s(interval_us), "timeout_exponent": timeout_exp, "retry": retry}),
        json: "`psn`, `interval_s`, `timeout_exponent`, `retry`",
        fires: "a go-back-N that no NAK explains, at least `--reorder-window-us` after the PSN was last sent: the local ACK timer fired; the interval since that PSN was last sent, the timeout exponent n it implies (4.096 µs × 2^n at most the interval and a sixteenth more: a timer may fire a tick early), the retry count",
        frame: "the resend",
        message(f): write!(f, "timeout retransmission: PSN {} resent {} after it was sent with no NAK (local ACK timeout about 4.096 µs × 2^{timeout_exp}), retry {retry}", Shown(psn), ms(interval_us)),
    }
    /// The same PSN resent `resends` times, then silence from the requester for `silent_us` until the end of the capture: it gave up (IBV_WC_RETRY_EXC_ERR).
    RetryExhausted { psn: u32, resends: u32, silent_us: u64 } => {
        name: "retry_exhausted",
        severity: Error,
        group: GaveUp,
        condition: "timeouts",
        psn: Some(psn),
        detail: json!({"psn": psn, "resends": resends, "silent_s": us_to_s(silent_us)}),
        json: "`psn`, `resends`, `silent_s`",
        fires: "the oldest outstanding PSN resent on the timer and not resent since, then the requester silent (from its last request to the end of the capture) for longer than the stall time and than twice its timer interval, the PSN unacknowledged: IBV_WC_RETRY_EXC_ERR on the host",
        frame: "the last resend",
        message(f): write!(f, "retry exhausted: PSN {} resent {resends} times, then the requester went silent for {} (IBV_WC_RETRY_EXC_ERR on the host: the responder never answered)", Shown(psn), secs(silent_us)),
    }
    /// The same PSN RNR-NAKed `naks` times, then silence from the requester for `silent_us` until the end of the capture: IBV_WC_RNR_RETRY_EXC_ERR.
    RnrExhausted { psn: u32, naks: u32, silent_us: u64 } => {
        name: "rnr_exhausted",
        severity: Error,
        group: GaveUp,
        condition: "timeouts",
        psn: Some(psn),
        detail: json!({"psn": psn, "rnr_naks": naks, "silent_s": us_to_s(silent_us)}),
        json: "`psn`, `rnr_naks`, `silent_s`",
        fires: "the oldest outstanding PSN RNR-NAKed and not resent after the last RNR NAK, then the requester silent (from its last request) for longer than the stall time and than twice the RNR timer: IBV_WC_RNR_RETRY_EXC_ERR",
        frame: "the last RNR NAK",
        message(f): write!(f, "RNR retry exhausted: PSN {} RNR-NAKed {naks} times, then the requester went silent for {} (IBV_WC_RNR_RETRY_EXC_ERR: the receiver never posted a receive)", Shown(psn), secs(silent_us)),
    }
    /// A response for a PSN the requester never sent (outside `lo..=hi`).
    AckOutOfWindow { psn: u32, lo: u32, hi: u32 } => {
        name: "ack_out_of_window",
        severity: Error,
        group: Violation,
        condition: "violations",
        psn: Some(psn),
        detail: json!({"psn": psn, "window_first": lo, "window_last": hi}),
        json: "`psn`, `window_first`, `window_last`",
        fires: "an ACK, NAK, READ response or atomic ACK for a PSN the requester never sent (outside its first PSN, less a window for requests before the capture, to its highest; a NAK may name the next)",
        frame: "the response",
        message(f): write!(f, "response for PSN {}, which was never sent (requests span {} to {}; a responder answers only the PSNs it was sent)", Shown(psn), Shown(lo), Shown(hi)),
    }
    /// A new request carrying a PSN that an earlier request (a READ of `read_psns` PSNs from `read_psn`) already consumed, and not resuming it.
    PsnReuse { psn: u32, read_psn: u32, read_psns: u32 } => {
        name: "psn_reuse",
        severity: Error,
        group: Violation,
        condition: "violations",
        psn: Some(psn),
        detail: json!({"psn": psn, "read_psn": read_psn, "read_psns": read_psns}),
        json: "`psn`, `read_psn`, `read_psns`",
        fires: "a new request on a PSN a READ consumed past its first (a READ takes one PSN per response packet) that does not resume that READ (a resumed READ is a retransmission), also found at the end when the path MTU was learnt after the READ",
        frame: "the request",
        message(f): write!(f, "PSN reuse: a new request carries PSN {}, which the READ at PSN {} already consumed (it takes {read_psns} PSNs, one per response packet): the requester counted the READ as one PSN", Shown(psn), Shown(read_psn)),
    }
    /// The MSN in an AETH went backwards on a response at or ahead of the highest PSN answered.
    MsnRegression { msn: u32, previous: u32 } => {
        name: "msn_regression",
        severity: Error,
        group: Violation,
        condition: "violations",
        psn: None,
        detail: json!({"msn": msn, "previous": previous}),
        json: "`msn`, `previous`",
        fires: "the MSN of a responder's AETH went backwards on a response at or ahead of the highest PSN answered (behind it, the response was held up on the way or answers a resend)",
        frame: "the response",
        message(f): write!(f, "MSN went backwards: {msn} after {previous} on a response for a later PSN (the MSN counts the messages completed: it never goes back as the PSNs go forward)"),
    }
    /// READ responses that do not match their READ.
    ReadResponseMismatch { read_psn: u32, what: ReadMismatch } => {
        name: "read_response_mismatch",
        severity: Error,
        group: Violation,
        condition: "violations",
        psn: Some(read_psn),
        detail: match what {
            ReadMismatch::PsnOutside { psn, psns } => json!({"read_psn": read_psn, "problem": "psn_outside", "psn": psn, "read_psns": psns}),
            ReadMismatch::Length { got, dma_len } => json!({"read_psn": read_psn, "problem": "length", "bytes": got, "dma_len": dma_len}),
            ReadMismatch::Packets { got, expected, mtu } => json!({"read_psn": read_psn, "problem": "packets", "packets": got, "expected": expected, "mtu": mtu}),
        },
        json: "`read_psn`, `problem` (`psn_outside`: `psn`, `read_psns`; `length`: `bytes`, `dma_len`; `packets`: `packets`, `expected`, `mtu`)",
        fires: "a READ response PSN outside the READ's PSNs, or responses whose bytes do not add up to the DMA length, or more or fewer packets than the path MTU implies (not checked when a response packet was lost)",
        frame: "the response",
        message(f): {
            write!(f, "READ at PSN {}: ", Shown(read_psn))?;
            match what {
                ReadMismatch::PsnOutside { psn, psns } => write!(f, "response PSN {} is outside its {psns} PSNs", Shown(psn))?,
                ReadMismatch::Length { got, dma_len } => write!(f, "responses carry {got} bytes for a DMA length of {dma_len}")?,
                ReadMismatch::Packets { got, expected, mtu } => write!(f, "{got} response packets where path MTU {mtu} implies {expected}")?,
            }
            write!(f, " (a READ's responses take its PSNs, one per path MTU of its DMA length, and carry that length)")
        },
    }
    /// A packet that came `depth` PSNs behind the highest PSN its direction had carried (`highest`), with nothing a resend could answer: held up on the way (network reordering). A response (`response`), else a request, the first copy of its PSN.
    Reordered { psn: u32, highest: u32, depth: u32, response: bool } => {
        name: "reordered",
        severity: Note,
        group: None,
        condition: "",
        psn: Some(psn),
        detail: json!({"psn": psn, "highest": highest, "depth": depth, "of": if response { "response" } else { "request" }}),
        json: "`psn`, `highest` (the highest PSN its direction had carried), `depth` (PSNs behind it), `of` (`request`, `response`)",
        fires: "a packet held up on the way: a request behind the highest PSN, the first copy of its PSN, one a gap skipped (one of the last 8 gaps), within `--reorder-window-us` of that gap or sent before the request that opened it (its IPv4 ID older, where the flow's IDs follow its send order), with no NAK a resend could answer and outside any go-back-N under way (with one there, the next request tells: the same PSN again says the first was held up); or a response behind the highest PSN answered, in none of the requester's last 64 resends' PSNs; `depth`: PSNs behind the highest",
        frame: "the packet",
        message(f): if response {
            write!(f, "reordered: the response for PSN {} came after the one for PSN {}, {} ahead, with nothing resent between (held up on the way: reordering in the network)", Shown(psn), Shown(highest), psns(depth))
        } else {
            write!(f, "reordered: request PSN {} came {} behind PSN {}, its first copy, not a resend (held up on the way: reordering in the network)", Shown(psn), psns(depth), Shown(highest))
        },
    }
    /// A request far from the PSN the flow expected, after a long idle time: a new connection on a reused QP number. The flow's PSN figures restart.
    NewEpoch { psn: u32, expected: u32, idle_us: u64 } => {
        name: "new_epoch",
        severity: Note,
        group: None,
        condition: "",
        psn: Some(psn),
        detail: json!({"psn": psn, "expected": expected, "idle_s": us_to_s(idle_us)}),
        json: "`psn`, `expected`, `idle_s`",
        fires: "a request more than 4096 PSNs from the expected one after the flow was idle longer than the stall time, or the first request after a handshake named the flow's QPs again: a new connection on a reused QP number; no gap or retransmission is counted, the flow's PSN figures restart (`psn.epochs`), and the flow is paired anew",
        frame: "the request",
        message(f): write!(f, "new connection on this QP number: PSN {} after {} idle, where {} was expected (not a retransmission)", Shown(psn), secs(idle_us), Shown(expected)),
    }
    /// The capture's clock jumped at frame `frame`: stamped `by_ms` after the time before it (negative:
    /// before), and `kept` when the frames after followed it (a new clock, or a long silence), else that
    /// frame was analysed at the time before it, kept out of every timing judgment.
    ClockJump { by_ms: i64, kept: bool } => {
        name: "clock_jump",
        severity: Note,
        group: None,
        condition: "",
        psn: None,
        detail: json!({"by_s": by_ms as f64 / 1e3, "kept": kept}),
        json: "`by_s` (the frame's stamp less the time before it, seconds; negative: back), `kept` (true: the frames after followed it, a new clock or a long silence; false: that frame was analysed at the time before it); `flow` is null",
        fires: "a frame stamped more than a second before the frame before it, or more than an hour after it (the next frame tells whether the clock moved or that frame was stamped wrong); such a frame is analysed at the time before it, so that no stall, timeout, idle eviction or rate rests on it; a frame stamped up to a second before the one before it is taken as stamped and counted (`capture.clock_steps_back`)",
        frame: "the frame",
        message(f): {
            let s = by_ms.unsigned_abs() as f64 / 1e3;
            match (kept, by_ms < 0) {
                (true, _) => write!(f, "clock jump: the capture's clock leapt {s:.3} s ahead and the frames after followed it (a new clock or a long silence): times from here on are the new clock's"),
                (false, true) => write!(f, "clock jump: a frame stamped {s:.3} s before the frame before it: analysed at that time (no stall, timeout or rate rests on its stamp)"),
                (false, false) => write!(f, "clock jump: a frame stamped {s:.3} s after the frame before it, and the next frame back on the old clock: a wrong stamp, analysed at the time before it (no stall, timeout or rate rests on it)"),
            }
        },
    }
    /// `qps` QPs from `src` to `dst` (RC and UC flows) on only `ports` distinct UDP source ports: an ECMP group of `members` (or a bond) cannot spread them; `imbalance`: the busiest member's bytes over the mean member's under each of [`super::ecmp::Hash::ALL`].
    LowEntropy { src: Addr, dst: Addr, qps: u32, ports: u32, members: u16, imbalance: [f64; 3] } => {
        name: "low_entropy",
        severity: Warning,
        group: None,
        condition: "",
        psn: None,
        detail: json!({"src": src.to_string(), "dst": dst.to_string(), "qps": qps, "source_ports": ports, "members": members, "imbalance": {"crc16": imbalance[0], "crc32": imbalance[1], "xor": imbalance[2]}}),
        json: "`src`, `dst` (the host pair), `qps`, `source_ports` (distinct), `members` (`--ecmp-members`), `imbalance` {`crc16`, `crc32`, `xor`} (the busiest member's bytes over the mean of the members the QPs could fill: 1 as even as the QPs allow, the lesser of `members` and `qps` all on one)",
        fires: "at least 4 QPs (RC and UC flows) in one direction between two hosts on at most one UDP source port per two QPs, at the end of the capture (the source port is the only entropy an ECMP or LAG hash sees between two hosts); not a verdict condition: the traffic is healthy, the fabric cannot spread it",
        frame: "the first packet of the QP that made the pair's ports too few",
        message(f): {
            write!(f, "low entropy: {qps} QPs from {src} to {dst} on {} UDP source port{}: ", ports, if ports == 1 { "" } else { "s" })?;
            write!(f, "with {members} ECMP members the busiest would carry {:.1}× its share (crc16), {:.1}× (crc32), {:.1}× (xor); 1.0 is even, {}.0 all on one", imbalance[0], imbalance[1], imbalance[2], u32::from(members).min(qps))
        },
    }
    /// A connection (`connection`: its index in the table) established: the RTU came.
    Connection { connection: u32, qpns: [u32; 2], mtu: Option<u32> } => {
        name: "connection",
        severity: Note,
        group: None,
        condition: "",
        psn: None,
        detail: json!({"connection": connection, "qpns": qpns, "mtu": mtu}),
        json: "`connection`, `qpns` [active, passive], `mtu`",
        fires: "a CM connection established (the RTU)",
        frame: "the RTU",
        message(f): {
            write!(f, "connection #{connection} established: QP 0x{:06x} ⇄ QP 0x{:06x}", qpns[0], qpns[1])?;
            match mtu {
                Some(m) => write!(f, ", path MTU {m}"),
                None => Ok(()),
            }
        },
    }
    /// A DREQ: the connection is going away.
    Disconnect { connection: u32, qpns: [u32; 2] } => {
        name: "disconnect",
        severity: Note,
        group: None,
        condition: "",
        psn: None,
        detail: json!({"connection": connection, "qpns": qpns}),
        json: "`connection`, `qpns`",
        fires: "a DREQ",
        frame: "the DREQ",
        message(f): write!(f, "connection #{connection} (QP 0x{:06x} ⇄ QP 0x{:06x}) disconnecting: DREQ", qpns[0], qpns[1]),
    }
    /// A REJ, with its reason code (IBTA table 107).
    CmReject { connection: u32, reason: u16 } => {
        name: "cm_reject",
        severity: Error,
        group: Connection,
        condition: "connections",
        psn: None,
        detail: json!({"connection": connection, "reason": reason, "name": parsers::cm::reject_reason_name(reason), "meaning": super::connections::reject_meaning(reason)}),
        json: "`connection`, `reason` (IBTA table 107), `name` (the table's), `meaning`",
        fires: "a REJ, with its reason in words (8: nothing listens on that port; 28: the application refused)",
        frame: "the REJ",
        message(f): write!(f, "connection #{connection} rejected: REJ reason {reason}, {} ({})", parsers::cm::reject_reason_name(reason).unwrap_or("unassigned"), super::connections::reject_meaning(reason)),
    }
    /// A REQ with no REP, or a REP with no RTU: `sent` times, the first `waited_us` before the end.
    CmTimeout { connection: u32, waiting_for: &'static str, sent: u32, waited_us: u64 } => {
        name: "cm_timeout",
        severity: Error,
        group: Connection,
        condition: "connections",
        psn: None,
        detail: json!({"connection": connection, "waiting_for": waiting_for, "sent": sent, "waited_s": us_to_s(waited_us)}),
        json: "`connection`, `waiting_for` (`REP`, `RTU`), `sent`, `waited_s`",
        fires: "a REQ with no REP, REJ or MRA, or a REP with no RTU and no data from the active side, retried or unanswered longer than its CM response timeout (4.096 µs × 2^n from the REQ) by the end of the capture",
        frame: "the last REQ or REP",
        message(f): write!(f, "connection #{connection} handshake timed out: sent {sent} times, no {waiting_for} in {} (is the peer's CM up, the port right, a firewall in the way?)", secs(waited_us)),
    }
    /// RC data between a connection's addresses toward a QPN no handshake between them announced.
    UnexpectedQp { qpn: u32, connection: u32 } => {
        name: "unexpected_qp",
        severity: Error,
        group: Connection,
        condition: "connections",
        psn: None,
        detail: json!({"qpn": qpn, "connection": connection}),
        json: "`qpn` (the QPN the data went to), `connection` (the connection between the same addresses)",
        fires: "RC requests between a connection's addresses toward a QPN that no connection between them announced",
        frame: "the first request",
        message(f): write!(f, "RC data to QPN 0x{qpn:06x}, which no connection between these addresses announced (see connection #{connection}): a QP pointing at the wrong peer"),
    }
    /// A direction's first request PSN is not the starting PSN its side announced.
    StartPsnMismatch { connection: u32, psn: u32, announced: u32 } => {
        name: "start_psn_mismatch",
        severity: Error,
        group: Connection,
        condition: "connections",
        psn: Some(psn),
        detail: json!({"connection": connection, "psn": psn, "announced": announced}),
        json: "`connection`, `psn` (the first request's), `announced`",
        fires: "a connection's direction whose first request is not at the PSN its side announced",
        frame: "that request",
        message(f): write!(f, "first request PSN {} of connection #{connection}, where its side announced {}: the QP was set up with another PSN than it told its peer", Shown(psn), Shown(announced)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/json.md's table of event kinds and docs/analysis.md's table of events hold each kind's row as
    /// declared here, in this order (`lost_between`, `analyze --points`' own, stays where it is).
    /// `ROCESCOPE_BLESS=1` writes the declared rows into the docs.
    #[test]
    fn the_docs_tables_are_the_declarations() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        type Row = fn(&KindDoc) -> String;
        let rows: [(&str, Row); 2] = [
            ("docs/json.md", KindDoc::json_row),
            ("docs/analysis.md", KindDoc::analysis_row),
        ];
        for (doc, row) in rows {
            let path = root.join(doc);
            let text = std::fs::read_to_string(&path).unwrap();
            let lines: Vec<&str> = text.lines().collect();
            // The table whose header's first column is `kind`: its rows up to the first line not a row.
            let header = lines
                .iter()
                .position(|l| l.starts_with("| `kind` |"))
                .unwrap_or_else(|| panic!("{doc}: no table of kinds"));
            let end = (header + 2..lines.len())
                .find(|&i| !lines[i].starts_with('|'))
                .unwrap_or(lines.len());
            let is_kind_row = |l: &str| {
                Kind::DOCS
                    .iter()
                    .any(|k| l.starts_with(&format!("| `{}` |", k.name)))
            };
            let want: Vec<String> = Kind::DOCS.iter().map(row).collect();
            let table = &lines[header + 2..end];
            let got: Vec<&str> = table.iter().copied().filter(|l| is_kind_row(l)).collect();
            if std::env::var_os("ROCESCOPE_BLESS").is_some() {
                let mut next = want.iter();
                let mut out: Vec<String> =
                    lines[..header + 2].iter().map(|l| l.to_string()).collect();
                for l in table {
                    if is_kind_row(l) {
                        out.extend(next.next().cloned());
                    } else {
                        out.push(l.to_string());
                    }
                }
                out.extend(next.cloned());
                out.extend(lines[end..].iter().map(|l| l.to_string()));
                std::fs::write(&path, out.join("\n") + "\n").unwrap();
                continue;
            }
            assert_eq!(
                got, want,
                "{doc} (ROCESCOPE_BLESS=1 writes the declared rows)"
            );
        }
    }

    /// Every kind has a name of its own, and its detail holds the fields its docs name first.
    #[test]
    fn names_are_unique() {
        let mut names: Vec<&str> = Kind::DOCS.iter().map(|k| k.name).collect();
        names.sort_unstable();
        let n = names.len();
        names.dedup();
        assert_eq!(names.len(), n);
    }
}
