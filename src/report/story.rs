//! "What happened": a few lines in plain words per flow in trouble, worst first, told from the requester's
//! side with what its responder did (the first lines of the text report).
use parsers::psn::Shown;

use super::jobs::FailureReport;
use super::{EventReport, FlowReport, Report};
use crate::analysis::events::Severity;
use crate::analysis::flow::Role;

/// The protocol violations' event kinds.
const VIOLATIONS: [&str; 4] = [
    "psn_reuse",
    "ack_out_of_window",
    "msn_regression",
    "read_response_mismatch",
];

/// Flows told at most; the rest are counted.
pub const FLOWS_TOLD: usize = 10;

fn num(e: &EventReport, key: &str) -> u64 {
    e.detail.get(key).and_then(|v| v.as_u64()).unwrap_or(0)
}

fn psn(e: &EventReport, key: &str) -> Shown {
    Shown(num(e, key) as u32)
}

/// `n thing` or `n things`.
fn many(n: u64, thing: &str) -> String {
    if n == 1 {
        format!("1 {thing}")
    } else {
        format!("{n} {thing}s")
    }
}

/// Seconds, short: `146 s`, `1.2 s`, `35 ms`.
fn took(s: f64) -> String {
    if s >= 10.0 {
        format!("{s:.0} s")
    } else if s >= 1.0 {
        format!("{s:.1} s")
    } else {
        format!("{:.0} ms", s * 1e3)
    }
}

/// The numbers of an array in `detail`, as "3" or "3, 4".
fn list(e: &EventReport, key: &str) -> String {
    let v: Vec<String> = e
        .detail
        .get(key)
        .and_then(|v| v.as_array())
        .into_iter()
        .flatten()
        .map(|n| n.to_string())
        .collect();
    v.join(", ")
}

fn secs(e: &EventReport, key: &str) -> String {
    took(e.detail.get(key).and_then(|v| v.as_f64()).unwrap_or(0.0))
}

/// A flow's story: what its requests met, in the order things happen.
struct Story<'r> {
    flow: &'r FlowReport,
    /// The flow of the other direction, when listed.
    pair: Option<&'r FlowReport>,
    mine: Vec<&'r EventReport>,
    /// The paired responder's events.
    theirs: Vec<&'r EventReport>,
    /// The failures the job's logs tell of this flow or its pair (`--expect`).
    failures: Vec<&'r FailureReport>,
}

impl<'r> Story<'r> {
    fn first(&self, kind: &str) -> Option<&'r EventReport> {
        self.mine.iter().copied().find(|e| e.kind == kind)
    }

    /// An event of what the responder did: its own flow's, or this flow's when it answered itself (a
    /// responder whose requester is not in the capture).
    fn first_theirs(&self, kind: &str) -> Option<&'r EventReport> {
        self.theirs
            .iter()
            .chain(&self.mine)
            .copied()
            .find(|e| e.kind == kind)
    }

    fn count(&self, kind: &str) -> usize {
        self.mine.iter().filter(|e| e.kind == kind).count()
    }

    fn worst(&self) -> Option<Severity> {
        let logged = (!self.failures.is_empty()).then_some(Severity::Error);
        self.mine
            .iter()
            .chain(&self.theirs)
            .filter(|e| e.kind != "new_epoch")
            .map(|e| e.severity)
            .max()
            .max(logged)
    }

    /// Its trouble is all on its responder side (what it answered), which its requester's story tells.
    fn told_by_its_pair(&self) -> bool {
        const ANSWERS: [&str; 8] = [
            "ack_out_of_window",
            "msn_regression",
            "read_response_mismatch",
            "rnr_nak",
            "rnr_storm",
            "nak",
            "implied_nak",
            "new_epoch",
        ];
        // Notes (a connection established, a disconnect) tell nothing of trouble.
        // A failure the job logged is told once, by the requester.
        (self.failures.is_empty() || self.flow.role == Role::Responder)
            && self.flow.paired_with.is_some()
            && self
                .mine
                .iter()
                .filter(|e| e.severity > Severity::Note)
                .all(|e| ANSWERS.contains(&e.kind))
    }

    /// Its requests and its responder's responses held up on the way.
    fn reordered(&self) -> u64 {
        self.flow.psn.reordered + self.pair.map_or(0, |p| p.reordered_responses)
    }

    /// The requester ran out of retries or RNR retries.
    fn gave_up(&self) -> bool {
        self.first("retry_exhausted").is_some() || self.first("rnr_exhausted").is_some()
    }

    fn verb(&self) -> &'static str {
        if self.first("no_response").is_some() {
            "got no response"
        } else if self.gave_up() {
            "gave up"
        } else if self.first("stall").is_some() {
            "stalled"
        } else if self.first("cm_reject").is_some() {
            "was refused a connection"
        } else if self.first("cm_timeout").is_some() {
            "could not connect"
        } else if self.first("unexpected_qp").is_some() {
            "sent to a QP no connection announced"
        } else if self.first("start_psn_mismatch").is_some() {
            "started at another PSN than announced"
        } else if self.first_theirs("rnr_storm").is_some() || self.first_theirs("rnr_nak").is_some()
        {
            "met a receiver not ready (RNR)"
        } else if VIOLATIONS
            .iter()
            .any(|k| self.first(k).is_some() || self.first_theirs(k).is_some())
        {
            "broke the protocol"
        } else if self.first("timeout_retransmission").is_some() {
            "timed out"
        } else if self.flow.psn.gap_events > 0
            || (self.flow.psn.retransmitted > 0 && self.reordered() == 0)
        {
            "lost packets"
        } else if self.reordered() > 0 {
            // Nothing missing: the resends answered the NAKs the reordering caused.
            "was reordered on the way"
        } else if self.first("ce_without_cnp").is_some() {
            "was marked for congestion"
        } else if self.flow.icrc_bad + self.flow.malformed > 0 {
            "was damaged"
        } else if self.first("cnp_ignored").is_some() {
            "did not slow down after its CNPs"
        } else if self.first("roce_unprotected").is_some() {
            "is not protected by PFC"
        } else if self.first("tc_mismatch").is_some() {
            "rides another traffic class than its job set"
        } else if !self.failures.is_empty() {
            "failed on its host"
        } else {
            "ran into trouble"
        }
    }

    /// What the flow's connection (handshake, printout) says went wrong.
    fn connection_clauses(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(e) = self.first("cm_reject") {
            out.push(format!(
                "connection #{} rejected with REJ reason {} ({})",
                num(e, "connection"),
                num(e, "reason"),
                e.detail
                    .get("meaning")
                    .and_then(|v| v.as_str())
                    .unwrap_or("")
            ));
        }
        if let Some(e) = self.first("cm_timeout") {
            out.push(format!(
                "connection #{}: no {} came in {} (sent {} times)",
                num(e, "connection"),
                e.detail
                    .get("waiting_for")
                    .and_then(|v| v.as_str())
                    .unwrap_or(""),
                secs(e, "waited_s"),
                num(e, "sent")
            ));
        }
        if let Some(e) = self.first("unexpected_qp") {
            out.push(format!(
                "its requests go to QP 0x{:06x}, which no connection between these addresses announced \
                 (connection #{} names the QPs meant)",
                num(e, "qpn"),
                num(e, "connection")
            ));
        }
        if let Some(e) = self.first("start_psn_mismatch") {
            out.push(format!(
                "its first request carried PSN {} where it announced {} (connection #{})",
                psn(e, "psn"),
                psn(e, "announced"),
                num(e, "connection")
            ));
        }
        out
    }

    fn clauses(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(e) = self.first("no_response") {
            out.push(format!(
                "{} requests from PSN {} and nothing back in {} (wrong destination QPN, remote QP not in RTR, \
                 a firewall, or a peer that is down)",
                num(e, "requests"),
                psn(e, "first_psn"),
                secs(e, "waited_s")
            ));
        }
        out.extend(self.connection_clauses());
        let f = self.flow;
        if f.psn.gap_events > 0 {
            out.push(format!(
                "{} ({} missing: loss before the capture point or on the way)",
                many(f.psn.gap_events, "PSN gap"),
                many(f.psn.missing, "PSN")
            ));
        }
        if f.psn.retransmitted > 0 {
            let resumed = match f.psn.resumed_reads {
                0 => String::new(),
                n => format!(" ({} resumed mid-message)", many(n, "READ")),
            };
            out.push(format!(
                "{}{resumed}",
                many(f.psn.retransmitted, "retransmitted request")
            ));
        }
        let implied = self
            .theirs
            .iter()
            .filter(|e| e.kind == "implied_nak")
            .count() as u64;
        if implied > 0 {
            out.push(format!(
                "{} (a READ's or an atomic's responses lost: it asked again)",
                many(implied, "implied NAK")
            ));
        }
        if self.reordered() > 0 {
            let deepest = f
                .reorder_depth_max
                .max(self.pair.map_or(0, |p| p.reorder_depth_max));
            out.push(format!(
                "{} held up on the way (reordered, up to {} behind: not a loss)",
                many(self.reordered(), "packet"),
                many(u64::from(deepest), "PSN")
            ));
        }
        // The responder's counts, not its events (the list keeps a few of each kind per flow).
        let (rnr_naks, naks) = self.pair.map_or((0, 0), |p| (p.rnr_naks, p.naks.total()));
        let storm = self.first_theirs("rnr_storm").is_some();
        let sent: Vec<String> = [(rnr_naks, "RNR NAK"), (naks, "NAK")]
            .into_iter()
            .filter(|&(n, what)| n > 0 && !(storm && what == "RNR NAK"))
            .map(|(n, what)| many(n, what))
            .collect();
        if !sent.is_empty() {
            out.push(format!("the responder sent {}", sent.join(" and ")));
        }
        let sent_naks = self.count("nak") + self.count("rnr_nak");
        if sent_naks > 0 && f.paired_with.is_none() {
            out.push(format!(
                "it sent {} to a requester not in the capture",
                many(sent_naks as u64, "NAK")
            ));
        }
        if f.icrc_bad > 0 {
            out.push(format!(
                "{} with a bad ICRC (the receiver drops them: a link or NIC corrupts frames)",
                many(f.icrc_bad, "frame")
            ));
        }
        if f.malformed > 0 {
            out.push(many(f.malformed, "malformed frame"));
        }
        if let Some(e) = self.first("psn_reuse") {
            out.push(format!(
                "PSN {} reused a PSN of the READ at PSN {} before it (the READ takes {} PSNs)",
                psn(e, "psn"),
                psn(e, "read_psn"),
                num(e, "read_psns")
            ));
        }
        if let Some(e) = self.first_theirs("ack_out_of_window") {
            out.push(format!(
                "the responder answered with a response for PSN {}, which was never sent",
                psn(e, "psn")
            ));
        }
        if let Some(e) = self.first_theirs("msn_regression") {
            out.push(format!(
                "the responder's MSN went back from {} to {}",
                num(e, "previous"),
                num(e, "msn")
            ));
        }
        if self.first_theirs("read_response_mismatch").is_some() {
            out.push("READ responses did not match their READ".to_string());
        }
        if let Some(e) = self.first_theirs("rnr_storm") {
            out.push(format!(
                "the responder sent {} RNR NAKs in {} (it posts no receives)",
                num(e, "count"),
                secs(e, "span_s")
            ));
        }
        let timeouts = self.count("timeout_retransmission");
        if let Some(e) = self.first("timeout_retransmission") {
            out.push(format!(
                "{} on the local ACK timer with no NAK (about 4.096 µs × 2^{})",
                many(timeouts as u64, "resend"),
                num(e, "timeout_exponent")
            ));
        }
        if let Some(e) = self.first("retry_exhausted") {
            out.push(format!(
                "PSN {} never acknowledged, then the requester went silent for {} (retry count exceeded: \
                 IBV_WC_RETRY_EXC_ERR on the host)",
                psn(e, "psn"),
                secs(e, "silent_s")
            ));
        }
        if let Some(e) = self.first("rnr_exhausted") {
            out.push(format!(
                "PSN {} RNR-NAKed {} (no receive posted), then the requester went silent for {} (RNR retry \
                 count exceeded: IBV_WC_RNR_RETRY_EXC_ERR on the host)",
                psn(e, "psn"),
                many(num(e, "rnr_naks"), "time"),
                secs(e, "silent_s")
            ));
        }
        if let Some(e) = self.first("ce_without_cnp") {
            out.push(format!(
                "{} not answered by a CNP within the window (is ECN/DCQCN on at the receiver's NIC?)",
                many(num(e, "count"), "CE mark")
            ));
        }
        if let Some(e) = self.first("cnp_ignored") {
            out.push(format!(
                "its sender kept its rate after {} of the {} CNPs measured (congestion control off or not \
                 reacting on this QP)",
                num(e, "no_reduction"),
                num(e, "measured")
            ));
        }
        if let Some(e) = self.first("roce_unprotected") {
            out.push(format!(
                "it runs on priority {}, which PFC never paused while it paused priority {} (not lossless: \
                 PFC is enabled on another priority)",
                num(e, "priority"),
                list(e, "paused_priorities")
            ));
        }
        if let Some(e) = self.first("tc_mismatch") {
            let s = |k: &str| e.detail.get(k).and_then(|v| v.as_str()).unwrap_or("");
            out.push(format!(
                "it carries DSCP {} where {}={} (DSCP {}) was set for the QP that sends it",
                num(e, "dscp"),
                s("setting"),
                num(e, "configured_traffic_class"),
                num(e, "configured_dscp")
            ));
        }
        for f in self.failures.iter().take(2) {
            out.push(format!("{} logged {}", f.who(), f.what()));
        }
        // A requester that gave up stalled because it did: the stall adds nothing.
        if let Some(e) = self.first("stall").filter(|_| !self.gave_up()) {
            let at_end = e.detail.get("at_end").and_then(|v| v.as_bool()) == Some(true);
            out.push(if at_end {
                format!(
                    "PSN {} is unacknowledged and nothing followed for {}",
                    psn(e, "psn"),
                    secs(e, "waited_s")
                )
            } else {
                format!(
                    "PSN {} waited {} for its answer",
                    psn(e, "psn"),
                    secs(e, "waited_s")
                )
            });
        }
        out
    }
}

/// The story of flow `f` of `r`.
fn story<'r>(r: &'r Report, f: &'r FlowReport) -> Story<'r> {
    let ours = |id: u64| id == f.id || Some(id) == f.paired_with;
    Story {
        failures: r
            .job
            .iter()
            .flat_map(|j| &j.failures)
            .filter(|x| x.flows.iter().any(|&id| ours(id)))
            .collect(),
        flow: f,
        pair: f.paired_with.and_then(|p| r.flow(p)),
        mine: r.events.iter().filter(|e| e.flow == Some(f.id)).collect(),
        theirs: f.paired_with.map_or_else(Vec::new, |p| {
            r.events.iter().filter(|e| e.flow == Some(p)).collect()
        }),
    }
}

/// Its line of "What happened".
fn line(s: &Story) -> String {
    let f = s.flow;
    let clauses = s.clauses();
    let told = if clauses.is_empty() {
        "see the events below".to_string()
    } else {
        clauses.join("; ")
    };
    let owner = f
        .job
        .as_ref()
        .map_or(String::new(), |j| format!(" ({})", j.label()));
    format!(
        "#{} QP 0x{:06x} {} → {}{owner} {}: {told}.",
        f.id,
        f.dest_qp,
        f.src,
        f.dst,
        s.verb()
    )
}

/// What happened to flow `id`, as "What happened" tells it: its own line, or its pair's when that tells
/// its trouble (a responder's NAKs are its requester's story); none when nothing did.
pub fn of_flow(r: &Report, id: u64) -> Option<String> {
    let f = r.flow(id)?;
    let s = story(r, f);
    if s.worst() >= Some(Severity::Warning) && !s.told_by_its_pair() {
        return Some(line(&s));
    }
    let p = f.paired_with.and_then(|p| r.flow(p))?;
    let s = story(r, p);
    (s.worst() >= Some(Severity::Warning)).then(|| line(&s))
}

/// The lines of "What happened" (empty when nothing did).
pub fn lines(r: &Report) -> Vec<String> {
    let mut stories: Vec<Story> = r
        .flows
        .iter()
        .map(|f| story(r, f))
        .filter(|s| s.worst() >= Some(Severity::Warning) && !s.told_by_its_pair())
        .collect();
    // Most trouble first, as every view ranks flows.
    stories.sort_by(|a, b| {
        super::rank::trouble(b.flow)
            .cmp(&super::rank::trouble(a.flow))
            .then(b.worst().cmp(&a.worst()))
            .then(a.flow.id.cmp(&b.flow.id))
    });
    let mut out: Vec<String> = stories.iter().take(FLOWS_TOLD).map(line).collect();
    out.extend(r.events.iter().filter(|e| e.kind == "pause_storm").map(|e| {
        let on = e
            .detail
            .get("priority")
            .and_then(|v| v.as_u64())
            .map_or("the whole link (802.3x PAUSE)".to_string(), |p| {
                format!("priority {p}")
            });
        format!(
            "PFC pause storm: {on} paused without a break for {} by {} (traffic on it halted: a stuck \
             receiver or a PFC deadlock).",
            secs(e, "duration_s"),
            many(num(e, "xoff"), "XOFF")
        )
    }));
    if stories.len() > FLOWS_TOLD {
        out.push(format!(
            "... and {} more flows in trouble (the flow table and the events below).",
            stories.len() - FLOWS_TOLD
        ));
    }
    out
}
