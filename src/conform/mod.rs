//! `rocescope conform`: NIC conformance. Each scenario of the [`suite`] runs the generator's traffic
//! through `rocescope inject`'s rules, captured on the requester's interface; the [`judge`] holds what the
//! capture shows after each action of the injector's log against the rule of the reliable service the NICs
//! must follow, with the latencies of their reactions and the frames that show them. The judge reads files
//! ([`wire`]), so a run can be judged again from its capture and log.
pub mod judge;
pub mod suite;
pub mod wire;

use std::path::PathBuf;

use serde::Serialize;

use judge::{Outcome, Verdict};
use suite::Scenario;

/// One scenario's line of the report.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub scenario: &'static str,
    pub op: &'static str,
    /// The injector's rules.
    pub inject: &'static [&'static str],
    /// A control: its reaction was broken on purpose, and must be judged a failure.
    pub control: bool,
    /// The rule of the reliable service judged, and where it is written.
    pub rule: &'static str,
    pub cite: &'static str,
    #[serde(flatten)]
    pub verdict: Verdict,
    /// The files judged (no injection log where the fault was the generator's).
    pub capture: PathBuf,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log: Option<PathBuf>,
    /// What each NIC's counters did over the run ({device: {counter: rise}}, the capture's `counters`), where
    /// the run was this one's (not `--judge`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counters: Option<Counters>,
}

/// {device: {counter: rise, or "reset"}}.
pub type Counters = std::collections::BTreeMap<String, serde_json::Map<String, serde_json::Value>>;

/// The NICs' counters of a capture's JSON report (`capture --json`: `counters.ports[].deltas`).
pub fn counters_of(report: &serde_json::Value) -> Counters {
    report["counters"]["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| {
            let device = p["device"].as_str()?.to_string();
            Some((device, p["deltas"].as_object()?.clone()))
        })
        .collect()
}

impl Row {
    pub fn new(s: &Scenario, verdict: Verdict, capture: PathBuf, log: Option<PathBuf>) -> Row {
        Row {
            scenario: s.name,
            op: s.op,
            inject: s.rules,
            control: s.control,
            rule: s.reaction.rule(),
            cite: s.reaction.cite(),
            verdict,
            capture,
            log,
            counters: None,
        }
    }
}

/// A rule broken by the NIC, or a control the judge did not catch.
pub fn failed(rows: &[Row]) -> bool {
    rows.iter()
        .any(|r| (r.verdict.outcome == Outcome::Fail) != r.control)
}

/// The report as text: a line per scenario (verdict, latencies), what was seen and the rule beneath it.
pub fn text(rows: &[Row]) -> String {
    let mut out = String::from("NIC conformance\n");
    for r in rows {
        let outcome = match (r.verdict.outcome, r.control) {
            (Outcome::Pass, false) => "PASS",
            (Outcome::Fail, false) => "FAIL",
            (Outcome::NotSupported, false) => "NOT SUPPORTED",
            (Outcome::Fail, true) => "CAUGHT",
            (_, true) => "MISSED",
        };
        let latencies: Vec<String> = r
            .verdict
            .latencies_us
            .iter()
            .map(|(k, v)| format!("{k} {v:.1} us"))
            .collect();
        out += &format!(
            "  {:<20} {:<14} {}\n",
            r.scenario,
            outcome,
            latencies.join(", ")
        );
        out += &format!("      seen: {}\n", r.verdict.seen);
        if let Some(c) = &r.counters {
            let moved: Vec<String> = c
                .iter()
                .flat_map(|(dev, deltas)| {
                    deltas
                        .iter()
                        .map(move |(name, v)| format!("{dev} {name} +{v}"))
                })
                .collect();
            out += &format!("      counters: {}\n", moved.join(", "));
        }
        out += &format!("      rule: {} ({})\n", r.rule, r.cite);
        let frames: Vec<String> = r.verdict.evidence.iter().map(u64::to_string).collect();
        out += &format!(
            "      frames {} of {} ({})\n",
            if frames.is_empty() {
                "-".to_string()
            } else {
                frames.join(", ")
            },
            r.capture.display(),
            match &r.log {
                Some(log) => format!("inject: {}; log {}", r.inject.join(" ; "), log.display()),
                None => "no injector: the generator's fault".to_string(),
            }
        );
    }
    let count = |o: Outcome| {
        rows.iter()
            .filter(|r| !r.control && r.verdict.outcome == o)
            .count()
    };
    let controls = rows.iter().filter(|r| r.control).count();
    let caught = rows
        .iter()
        .filter(|r| r.control && r.verdict.outcome == Outcome::Fail)
        .count();
    out += &format!(
        "{} scenarios: {} pass, {} fail, {} not supported; controls caught {caught} of {controls}\n",
        rows.len() - controls,
        count(Outcome::Pass),
        count(Outcome::Fail),
        count(Outcome::NotSupported)
    );
    out
}
