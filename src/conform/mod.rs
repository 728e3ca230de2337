//! `rocescope conform`: NIC conformance. Each scenario of the [`suite`] runs the generator's traffic
//! through `rocescope inject`'s rules, captured on the requester's interface; the [`judge`] holds what the
//! capture shows after each action of the injector's log against the rule of the reliable service the NICs
//! must follow, with the latencies of their reactions and the frames that show them. The judge reads files
//! ([`wire`]), so a run can be judged again from its capture and log.
pub mod counters;
pub mod judge;
pub mod suite;
pub mod table;
pub mod wire;

use std::path::PathBuf;

use serde::Serialize;

use judge::{Outcome, Verdict};
use suite::Scenario;

/// One run of one scenario.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub scenario: &'static str,
    /// Its number among the scenario's runs (from 1; `--repeat`).
    pub run: u32,
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
    /// Those counters held to what the wire and the injector's log say they must show (rxe's names; none
    /// for another NIC's).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub counters_held: Vec<counters::Held>,
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
            run: 1,
            op: s.op,
            inject: s.rules,
            control: s.control,
            rule: s.reaction.rule(),
            cite: s.reaction.cite(),
            verdict,
            capture,
            log,
            counters: None,
            counters_held: Vec::new(),
        }
    }
}

/// A rule broken by the NIC, or a control the judge did not catch.
pub fn failed(rows: &[Row]) -> bool {
    rows.iter()
        .any(|r| (r.verdict.outcome == Outcome::Fail) != r.control)
}

/// Where the suite ran, for the report's title.
#[derive(Debug, Clone, Serialize)]
pub struct Bench {
    pub device: String,
    pub peer_device: String,
    /// The requester's interface, the injector on its output path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interface: Option<String>,
    /// The bump's two interfaces.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bridge: Option<[String; 2]>,
}

/// The whole report: where it ran (not for `--judge`), the table (a line per scenario) and every run.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub bench: Option<Bench>,
    /// Runs of each scenario.
    pub repeat: u32,
    pub table: Vec<table::Line>,
    pub scenarios: Vec<Row>,
}

impl Report {
    pub fn new(bench: Option<Bench>, repeat: u32, scenarios: Vec<Row>) -> Report {
        Report {
            bench,
            repeat,
            table: table::table(&scenarios),
            scenarios,
        }
    }
}

/// A verdict as the text shows it: a control's failure is the judge's success.
fn label(outcome: Outcome, control: bool) -> &'static str {
    match (outcome, control) {
        (Outcome::Pass, false) => "PASS",
        (Outcome::Fail, false) => "FAIL",
        (Outcome::NotSupported, false) => "NOT SUPPORTED",
        (Outcome::Fail, true) => "CAUGHT",
        (_, true) => "MISSED",
    }
}

/// The report as text: a line per run (verdict, latencies), what was seen and the rule beneath it; with
/// several runs of each scenario, the table of their medians and maxima; the counts.
pub fn text(report: &Report) -> String {
    let mut out = String::from("NIC conformance");
    if let Some(b) = &report.bench {
        let via = match (&b.bridge, &b.interface) {
            (Some([x, y]), _) => format!("through a bump between {x} and {y}"),
            (None, Some(i)) => format!("injected on {i}'s output path"),
            (None, None) => String::new(),
        };
        out += &format!(": {} -> {} ({via})", b.device, b.peer_device);
    }
    out += "\n";
    let several = report.repeat > 1;
    for r in &report.scenarios {
        run_text(&mut out, r, several);
    }
    if several {
        out += &format!("Over {} runs each (latencies p50 / max):\n", report.repeat);
        for l in &report.table {
            let latencies: Vec<String> = l
                .latencies_us
                .iter()
                .map(|(k, s)| format!("{k} {:.1} / {:.1} us", s.p50, s.max))
                .collect();
            out += &format!(
                "  {:<20} {:<14} {} pass, {} fail, {} not supported; {}\n",
                l.scenario,
                label(l.outcome, l.control),
                l.pass,
                l.fail,
                l.not_supported,
                latencies.join(", ")
            );
        }
    }
    let count = |o: Outcome| {
        report
            .table
            .iter()
            .filter(|l| !l.control && l.outcome == o)
            .count()
    };
    let controls = report.table.iter().filter(|l| l.control).count();
    let caught = report
        .table
        .iter()
        .filter(|l| l.control && l.outcome == Outcome::Fail && l.pass + l.not_supported == 0)
        .count();
    out += &format!(
        "{} scenarios: {} pass, {} fail, {} not supported; controls caught {caught} of {controls}\n",
        report.table.len() - controls,
        count(Outcome::Pass),
        count(Outcome::Fail),
        count(Outcome::NotSupported)
    );
    out
}

/// One run's lines.
fn run_text(out: &mut String, r: &Row, several: bool) {
    let latencies: Vec<String> = r
        .verdict
        .latencies_us
        .iter()
        .map(|(k, v)| format!("{k} {v:.1} us"))
        .collect();
    let name = if several {
        format!("{} #{}", r.scenario, r.run)
    } else {
        r.scenario.to_string()
    };
    *out += &format!(
        "  {:<20} {:<14} {}\n",
        name,
        label(r.verdict.outcome, r.control),
        latencies.join(", ")
    );
    *out += &format!("      seen: {}\n", r.verdict.seen);
    if let Some(c) = &r.counters {
        let moved: Vec<String> = c
            .iter()
            .flat_map(|(dev, deltas)| {
                deltas
                    .iter()
                    .map(move |(name, v)| format!("{dev} {name} +{v}"))
            })
            .collect();
        *out += &format!("      counters: {}\n", moved.join(", "));
    }
    if !r.counters_held.is_empty() {
        let held: Vec<String> = r
            .counters_held
            .iter()
            .map(|h| {
                let verdict = if h.agrees() {
                    "as the wire says"
                } else {
                    "the wire says"
                };
                format!(
                    "{} {} +{} ({verdict} {})",
                    h.device, h.counter, h.seen, h.expected
                )
            })
            .collect();
        *out += &format!("      counters held: {}\n", held.join(", "));
    }
    *out += &format!("      rule: {} ({})\n", r.rule, r.cite);
    let frames: Vec<String> = r.verdict.evidence.iter().map(u64::to_string).collect();
    *out += &format!(
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
