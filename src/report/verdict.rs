//! The verdict: which conditions are present, whether the capture passes, and the exit status that goes with
//! it (`--fail-on`): the verdict line and the exit status tell one story.
use serde::Serialize;

use super::Report;
use crate::analysis::{Diagnosis, Engine};

#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    pub status: Status,
    /// Conditions present, by `--fail-on` name.
    pub problems: Vec<Condition>,
    /// The `--fail-on` conditions asked for.
    pub fail_on: Vec<Condition>,
    /// Those of them present: they make the exit status 3.
    pub failed_on: Vec<Condition>,
    /// The exit status this verdict gives: 0, 3 (a `--fail-on` condition is present) or 4 (the capture
    /// was cut short; analysed up to the cut).
    pub exit_status: u8,
    pub text: String,
}

/// The verdict's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Pass,
    Fail,
    /// No RoCE frame at all.
    NoRoce,
}

/// A condition the verdict notes and `--fail-on` can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Condition {
    Gaps,
    Naks,
    Rnr,
    Retransmissions,
    Ce,
    Cnp,
    Icrc,
    Malformed,
    /// Requests unanswered past the stall time (`stall` events).
    Stall,
    /// An RC requester that never heard back (`no_response`).
    NoResponse,
    /// Timeout retransmissions, retries or RNR retries exhausted.
    Timeouts,
    /// Protocol violations: ACKs out of window, PSN reuse, MSN regressions, READ response mismatches.
    Violations,
    /// Connections that broke or that the data path contradicts: CM rejects and timeouts, data toward
    /// unannounced QPNs, first PSNs other than announced.
    Connections,
    /// The lossless machinery failed: pause storms, RoCE on a priority PFC does not protect, senders that
    /// ignored their CNPs.
    Lossless,
    /// No RoCE frame in the capture.
    NoRoce,
}

/// The exit status of a `--fail-on` condition present.
pub const EXIT_FAIL_ON: u8 = 3;
/// The exit status of a capture cut short (analysed up to the cut) with no `--fail-on` condition present.
pub const EXIT_TRUNCATED: u8 = 4;

impl Condition {
    /// Every condition, in the order the verdict lists them (`--fail-on all`).
    pub const ALL: [Condition; 15] = [
        Condition::Gaps,
        Condition::Naks,
        Condition::Rnr,
        Condition::Retransmissions,
        Condition::Ce,
        Condition::Cnp,
        Condition::Icrc,
        Condition::Malformed,
        Condition::Stall,
        Condition::NoResponse,
        Condition::Timeouts,
        Condition::Violations,
        Condition::Connections,
        Condition::Lossless,
        Condition::NoRoce,
    ];

    /// The `--fail-on` name.
    pub fn name(self) -> &'static str {
        match self {
            Condition::Gaps => "gaps",
            Condition::Naks => "naks",
            Condition::Rnr => "rnr",
            Condition::Retransmissions => "retransmissions",
            Condition::Ce => "ce",
            Condition::Cnp => "cnp",
            Condition::Icrc => "icrc",
            Condition::Malformed => "malformed",
            Condition::Stall => "stall",
            Condition::NoResponse => "no_response",
            Condition::Timeouts => "timeouts",
            Condition::Violations => "violations",
            Condition::Connections => "connections",
            Condition::Lossless => "lossless",
            Condition::NoRoce => "no_roce",
        }
    }

    pub fn from_name(name: &str) -> Option<Condition> {
        Condition::ALL.into_iter().find(|c| c.name() == name)
    }

    /// Congestion marking is a signal, not a failure: the verdict fails on loss, NAKs, damage, stalls,
    /// silence, timeouts and violations.
    pub fn fails(self) -> bool {
        !matches!(self, Condition::Ce | Condition::Cnp | Condition::NoRoce)
    }
}

/// What every flow adds up to (listed in the report or not): what the verdict counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct FlowTotals {
    pub flows: u64,
    pub gap_events: u64,
    pub missing: u64,
    pub naks: u64,
    pub rnr_naks: u64,
    pub retransmitted: u64,
    pub ce: u64,
    pub cnp: u64,
}

impl FlowTotals {
    pub fn of(engine: &Engine) -> FlowTotals {
        let mut t = FlowTotals {
            flows: engine.flows.len() as u64,
            ..FlowTotals::default()
        };
        for f in engine.flows.iter() {
            t.gap_events += f.req.psn.gap_events;
            t.missing += f.req.psn.missing;
            t.naks += f.resp.naks.total();
            t.rnr_naks += f.resp.rnr_naks;
            t.retransmitted += f.req.psn.retransmitted;
            t.ce += f.ecn[3];
            t.cnp += f.cnp;
        }
        let e = &engine.evicted;
        t.flows += e.flows;
        t.gap_events += e.gap_events;
        t.missing += e.missing;
        t.naks += e.naks;
        t.rnr_naks += e.rnr_naks;
        t.retransmitted += e.retransmitted;
        t.ce += e.ce;
        t.cnp += e.cnp;
        t
    }
}

/// The conditions present, each with the words the verdict says of it.
fn findings(r: &Report, d: &Diagnosis) -> Vec<(Condition, String)> {
    let t = &r.flow_totals;
    let (gaps, missing, naks, rnr) = (t.gap_events, t.missing, t.naks, t.rnr_naks);
    let (retx, ce, cnp) = (t.retransmitted, t.ce, t.cnp);
    let icrc = r.capture.icrc_bad;
    let malformed = r.capture.malformed;
    let all = [
        (
            gaps,
            Condition::Gaps,
            format!("{gaps} PSN gaps ({missing} PSNs missing)"),
        ),
        (naks, Condition::Naks, format!("{naks} NAKs")),
        (rnr, Condition::Rnr, format!("{rnr} RNR NAKs")),
        (
            retx,
            Condition::Retransmissions,
            format!("{retx} retransmitted requests"),
        ),
        (ce, Condition::Ce, format!("{ce} CE-marked packets")),
        (cnp, Condition::Cnp, format!("{cnp} CNPs")),
        (icrc, Condition::Icrc, format!("{icrc} bad ICRCs")),
        (
            malformed,
            Condition::Malformed,
            format!("{malformed} malformed frames"),
        ),
        (d.stalls, Condition::Stall, format!("{} stalls", d.stalls)),
        (
            d.no_response,
            Condition::NoResponse,
            format!("{} requesters with no response", d.no_response),
        ),
        (
            d.timeouts,
            Condition::Timeouts,
            format!("{} timeouts", d.timeouts),
        ),
        (
            d.violations,
            Condition::Violations,
            format!("{} protocol violations", d.violations),
        ),
        (
            d.connections,
            Condition::Connections,
            format!("{} connection problems", d.connections),
        ),
        (
            d.lossless,
            Condition::Lossless,
            format!(
                "{} lossless-machinery failures (pause storms, unprotected priorities, ignored CNPs, traffic classes \
                 other than set)",
                d.lossless
            ),
        ),
    ];
    all.into_iter()
        .filter(|(n, _, _)| *n > 0)
        .map(|(_, c, text)| (c, text))
        .collect()
}

impl Verdict {
    /// The verdict on `r` with `d`'s diagnosis, for the `--fail-on` conditions `fail_on`, of a capture
    /// cut short or not.
    pub fn of(r: &Report, d: &Diagnosis, fail_on: &[Condition], truncated: bool) -> Verdict {
        let roce = r.capture.roce_frames;
        let mut found = findings(r, d);
        if roce == 0 {
            found.push((Condition::NoRoce, String::new()));
        }
        let problems: Vec<Condition> = found.iter().map(|(c, _)| *c).collect();
        let failed_on: Vec<Condition> = problems
            .iter()
            .copied()
            .filter(|c| fail_on.contains(c))
            .collect();
        let failing = problems.iter().any(|c| c.fails());
        let status = if roce == 0 {
            Status::NoRoce
        } else if failing || !failed_on.is_empty() {
            Status::Fail
        } else {
            Status::Pass
        };
        let exit_status = if !failed_on.is_empty() {
            EXIT_FAIL_ON
        } else if truncated {
            EXIT_TRUNCATED
        } else {
            0
        };
        let parts: Vec<&str> = found
            .iter()
            .map(|(_, t)| t.as_str())
            .filter(|t| !t.is_empty())
            .collect();
        let text = story(r, status, &parts, fail_on, &failed_on, truncated);
        Verdict {
            status,
            problems,
            fail_on: fail_on.to_vec(),
            failed_on,
            exit_status,
            text,
        }
    }
}

fn names(c: &[Condition]) -> String {
    c.iter().map(|c| c.name()).collect::<Vec<_>>().join(",")
}

/// The verdict line: what was found, and why the exit status is what it is.
fn story(
    r: &Report,
    status: Status,
    parts: &[&str],
    fail_on: &[Condition],
    failed_on: &[Condition],
    truncated: bool,
) -> String {
    let head = match status {
        Status::NoRoce => format!(
            "NO ROCE TRAFFIC: {} frames, none of them RoCE (UDP to the RoCEv2 port, or RoCEv1). Likely causes: \
             the wrong interface, the wrong --port, a capture filter, or NIC offload hiding RDMA traffic \
             from the kernel (capture on a switch mirror port or with the NIC's own sniffer)",
            r.capture.frames
        ),
        Status::Fail => format!("FAIL: {}", parts.join(", ")),
        Status::Pass if parts.is_empty() => format!(
            "PASS: {} RoCE frames in {} flows, no gaps, NAKs, retransmissions, stalls or damage",
            r.capture.roce_frames, r.flow_totals.flows
        ),
        Status::Pass => format!("PASS with congestion signals: {}", parts.join(", ")),
    };
    let exit = if !failed_on.is_empty() {
        format!(" (exit status 3: --fail-on {})", names(failed_on))
    } else if status == Status::Fail && fail_on.is_empty() {
        " (exit status 0: no --fail-on given; --fail-on all makes failures exit 3)".to_string()
    } else if status == Status::Fail {
        format!(
            " (exit status 0: none of --fail-on {} is present)",
            names(fail_on)
        )
    } else {
        String::new()
    };
    let cut = if truncated {
        if failed_on.is_empty() {
            "; the capture is cut short: analysed up to the cut (exit status 4)"
        } else {
            "; the capture is cut short: analysed up to the cut"
        }
    } else {
        ""
    };
    format!("{head}{exit}{cut}")
}
