//! The conformance table: each scenario's runs taken together (`conform --repeat N`), its verdict, how many
//! runs gave which, and each latency's median and maximum over the runs.
use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;

use super::Row;
use super::judge::Outcome;

/// A latency over the runs that measured it, microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Spread {
    /// The median: the lower middle of an even count (nearest rank).
    pub p50: f64,
    pub max: f64,
    /// The runs that measured it.
    pub n: usize,
}

impl Spread {
    fn of(mut values: Vec<f64>) -> Option<Spread> {
        values.sort_by(f64::total_cmp);
        let n = values.len();
        Some(Spread {
            p50: *values.get(n.checked_sub(1)? / 2)?,
            max: *values.last()?,
            n,
        })
    }
}

/// One scenario's line of the table.
#[derive(Debug, Clone, Serialize)]
pub struct Line {
    pub scenario: &'static str,
    pub control: bool,
    pub rule: &'static str,
    pub cite: &'static str,
    /// `fail` if a run failed, else `pass` if one passed, else `not_supported`.
    pub outcome: Outcome,
    pub runs: usize,
    pub pass: usize,
    pub fail: usize,
    pub not_supported: usize,
    pub latencies_us: BTreeMap<&'static str, Spread>,
    /// The frames of the run that decided the outcome (the first that failed, else the first), and its
    /// capture.
    pub evidence: Vec<u64>,
    pub capture: PathBuf,
    /// That run's number (from 1).
    pub run: u32,
}

/// The table of `rows` (each run's), a line per scenario in the order first run.
pub fn table(rows: &[Row]) -> Vec<Line> {
    let mut names: Vec<&'static str> = Vec::new();
    for r in rows {
        if !names.contains(&r.scenario) {
            names.push(r.scenario);
        }
    }
    names
        .into_iter()
        .filter_map(|name| line(rows.iter().filter(|r| r.scenario == name).collect()))
        .collect()
}

fn line(runs: Vec<&Row>) -> Option<Line> {
    let count = |o: Outcome| runs.iter().filter(|r| r.verdict.outcome == o).count();
    let (pass, fail, not_supported) = (
        count(Outcome::Pass),
        count(Outcome::Fail),
        count(Outcome::NotSupported),
    );
    let outcome = match (fail, pass) {
        (1.., _) => Outcome::Fail,
        (0, 1..) => Outcome::Pass,
        _ => Outcome::NotSupported,
    };
    let decisive = runs
        .iter()
        .find(|r| r.verdict.outcome == Outcome::Fail)
        .or(runs.first())?;
    let mut values: BTreeMap<&'static str, Vec<f64>> = BTreeMap::new();
    for r in &runs {
        for (name, v) in &r.verdict.latencies_us {
            values.entry(name).or_default().push(*v);
        }
    }
    Some(Line {
        scenario: decisive.scenario,
        control: decisive.control,
        rule: decisive.rule,
        cite: decisive.cite,
        outcome,
        runs: runs.len(),
        pass,
        fail,
        not_supported,
        latencies_us: values
            .into_iter()
            .filter_map(|(name, v)| Some((name, Spread::of(v)?)))
            .collect(),
        evidence: decisive.verdict.evidence.clone(),
        capture: decisive.capture.clone(),
        run: decisive.run,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conform::judge::{Reaction, Verdict};
    use crate::conform::suite::find;

    fn run(name: &str, run: u32, outcome: Outcome, latencies: &[(&'static str, f64)]) -> Row {
        let mut r = Row::new(
            find(name).unwrap(),
            Verdict {
                reaction: Reaction::RequestLost,
                outcome,
                seen: String::new(),
                latencies_us: latencies.iter().copied().collect(),
                evidence: vec![u64::from(run) * 10],
            },
            format!("{name}.{run}.pcap").into(),
            None,
        );
        r.run = run;
        r
    }

    #[test]
    fn runs_are_taken_together_by_scenario() {
        let rows = [
            run(
                "write_request_lost",
                1,
                Outcome::Pass,
                &[("loss_to_nak", 40.0), ("nak_to_resend", 7.0)],
            ),
            run("ce_marked_request", 1, Outcome::NotSupported, &[]),
            run(
                "write_request_lost",
                2,
                Outcome::Pass,
                &[("loss_to_nak", 10.0)],
            ),
            run("ce_marked_request", 2, Outcome::NotSupported, &[]),
            run(
                "write_request_lost",
                3,
                Outcome::Fail,
                &[("loss_to_nak", 25.0), ("nak_to_resend", 9.0)],
            ),
            run(
                "write_request_lost",
                4,
                Outcome::Pass,
                &[("loss_to_nak", 30.0)],
            ),
        ];
        let t = table(&rows);
        assert_eq!(t.len(), 2);
        let w = &t[0];
        assert_eq!(
            (
                w.scenario,
                w.outcome,
                w.runs,
                w.pass,
                w.fail,
                w.not_supported
            ),
            ("write_request_lost", Outcome::Fail, 4, 3, 1, 0)
        );
        // 10, 25, 30, 40: the lower middle 25; 7, 9: 7
        assert_eq!(
            w.latencies_us["loss_to_nak"],
            Spread {
                p50: 25.0,
                max: 40.0,
                n: 4
            }
        );
        assert_eq!(
            w.latencies_us["nak_to_resend"],
            Spread {
                p50: 7.0,
                max: 9.0,
                n: 2
            }
        );
        // the failing run decides: its frames and capture
        assert_eq!((w.run, &w.evidence[..]), (3, &[30][..]));
        assert_eq!(w.capture, PathBuf::from("write_request_lost.3.pcap"));
        let c = &t[1];
        assert_eq!(
            (c.outcome, c.not_supported, c.run),
            (Outcome::NotSupported, 2, 1)
        );
        assert!(c.latencies_us.is_empty());
        assert!(table(&[]).is_empty());
    }
}
