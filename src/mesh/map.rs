//! The mesh's report: every pair with its verdict, the suspects, as JSON, a text matrix and an SVG heat map.

use std::fmt::Write as _;

use serde::Serialize;

use super::Host;
use super::locate::Located;
use super::plan::Pair;
use super::verdict::{Outcome, Reason, Verdict};

#[derive(Debug, Clone, Serialize)]
pub struct MeshReport {
    /// When the mesh began, in seconds since the epoch.
    pub started: f64,
    pub pattern: String,
    /// `--probe`: the window's number (from 0); the matrix then shows each pair's median RTT.
    pub window: Option<u64>,
    pub hosts: Vec<Host>,
    pub rounds: usize,
    pub pairs: Vec<PairReport>,
    pub passed: usize,
    pub failed: usize,
    pub suspects: Vec<SuspectReport>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PairReport {
    pub src: String,
    pub dst: String,
    pub round: usize,
    pub pass: bool,
    pub reasons: Vec<Reason>,
    /// The reasons in words, `; ` between them (empty when the pair passed).
    pub why: String,
    pub outcome: Outcome,
}

#[derive(Debug, Clone, Serialize)]
pub struct SuspectReport {
    pub components: Vec<String>,
    pub partial: bool,
    /// `src->dst`, the pairs through it that failed and those that passed.
    pub implicated: Vec<String>,
    pub cleared: Vec<String>,
}

/// One pair's run: where it ran (`round`) and what came of it.
pub struct Ran {
    pub pair: Pair,
    pub round: usize,
    pub outcome: Outcome,
    pub verdict: Verdict,
}

impl MeshReport {
    pub fn new(
        started: f64,
        pattern: String,
        hosts: &[Host],
        rounds: usize,
        ran: Vec<Ran>,
        located: &Located,
    ) -> MeshReport {
        let name = |p: &Pair| format!("{}->{}", hosts[p.src].name, hosts[p.dst].name);
        let passed = ran.iter().filter(|r| r.verdict.pass).count();
        MeshReport {
            started,
            pattern,
            window: None,
            hosts: hosts.to_vec(),
            rounds,
            failed: ran.len() - passed,
            passed,
            pairs: ran
                .into_iter()
                .map(|r| PairReport {
                    src: hosts[r.pair.src].name.clone(),
                    dst: hosts[r.pair.dst].name.clone(),
                    round: r.round,
                    pass: r.verdict.pass,
                    why: r
                        .verdict
                        .reasons
                        .iter()
                        .map(reason_text)
                        .collect::<Vec<_>>()
                        .join("; "),
                    reasons: r.verdict.reasons,
                    outcome: r.outcome,
                })
                .collect(),
            suspects: located
                .suspects
                .iter()
                .map(|s| SuspectReport {
                    components: s.components.clone(),
                    partial: s.partial,
                    implicated: s.implicated.iter().map(name).collect(),
                    cleared: s.cleared.iter().map(name).collect(),
                })
                .collect(),
        }
    }

    /// The pairs as the rows of the `mesh` table: each pair's object with the run's `started` and `pattern`.
    pub fn rows(&self) -> Vec<serde_json::Value> {
        self.pairs
            .iter()
            .filter_map(|p| {
                let mut row = serde_json::to_value(p).ok()?;
                let o = row.as_object_mut()?;
                o.insert("started".into(), self.started.into());
                o.insert("pattern".into(), self.pattern.clone().into());
                Some(row)
            })
            .collect()
    }

    fn cell(&self, src: &str, dst: &str) -> Option<&PairReport> {
        // the last run of the pair (a pattern may run a pair more than once: incast, pairs with rounds)
        self.pairs
            .iter()
            .rev()
            .find(|p| p.src == src && p.dst == dst)
    }

    /// The matrix (rows: requesters, columns: responders; Gb/s of a pair that passed, FAIL, `.` not run),
    /// then each failing pair's reasons and the suspects.
    pub fn text(&self) -> String {
        let mut o = String::new();
        if let Some(w) = self.window {
            let _ = write!(o, "window {w}: ");
        }
        let _ = writeln!(
            o,
            "mesh: {} over {} hosts, {} round(s): {} of {} pairs {}",
            self.pattern,
            self.hosts.len(),
            self.rounds,
            if self.failed > 0 {
                self.failed
            } else {
                self.passed
            },
            self.pairs.len(),
            if self.failed > 0 { "FAIL" } else { "pass" }
        );
        let w = self
            .hosts
            .iter()
            .map(|h| h.name.len())
            .max()
            .unwrap_or(1)
            .max(7);
        let unit = if self.window.is_some() {
            "median RTT in us"
        } else {
            "Gb/s"
        };
        let _ = write!(
            o,
            "  {:>w$}  ({unit}; rows send, columns receive)\n  {:>w$}",
            "", ""
        );
        for h in &self.hosts {
            let _ = write!(o, " {:>w$}", h.name);
        }
        o.push('\n');
        for s in &self.hosts {
            let _ = write!(o, "  {:>w$}", s.name);
            for d in &self.hosts {
                let c = match self.cell(&s.name, &d.name) {
                    _ if s.name == d.name => "-".to_string(),
                    None => ".".to_string(),
                    Some(p) if p.pass && self.window.is_some() => {
                        format!("{:.1}", p.outcome.p50_us)
                    }
                    Some(p) if p.pass => format!("{:.2}", p.outcome.gbps),
                    Some(_) => "FAIL".to_string(),
                };
                let _ = write!(o, " {c:>w$}");
            }
            o.push('\n');
        }
        for p in self.pairs.iter().filter(|p| !p.pass) {
            let why: Vec<String> = p.reasons.iter().map(reason_text).collect();
            let _ = writeln!(
                o,
                "  FAIL {}->{} (round {}): {}",
                p.src,
                p.dst,
                p.round,
                why.join("; ")
            );
        }
        for s in &self.suspects {
            let _ = writeln!(
                o,
                "  suspect{}: {} ({} failing pair(s) through it{})",
                if s.partial { " (partial)" } else { "" },
                s.components.join(" or "),
                s.implicated.len(),
                if s.cleared.is_empty() {
                    ", none passed".to_string()
                } else {
                    format!(", {} passed", s.cleared.len())
                }
            );
        }
        if self.window.is_some() {
            o.push_str(&self.rtt_note());
        }
        o
    }

    /// What a probe's RTT holds: with no completion timestamps from a requester's device, the hosts' delay
    /// (posting, polling) is in it too.
    fn rtt_note(&self) -> String {
        let without: Vec<&str> = self
            .pairs
            .iter()
            .filter(|p| p.outcome.completion_timestamps != Some(true))
            .map(|p| p.src.as_str())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        if without.is_empty() {
            "  RTTs: completion latencies (every device stamps completions; rocescope does not read the stamps yet)\n"
                .to_string()
        } else {
            format!(
                "  RTTs: completion latencies, the hosts' delay included (no completion timestamps from {})\n",
                without.join(", ")
            )
        }
    }

    /// The matrix as an SVG heat map: green for a pair that passed (darker the faster, against the fastest),
    /// red for one that failed, grey for none.
    pub fn svg(&self) -> String {
        const CELL: usize = 28;
        let n = self.hosts.len();
        let label = self.hosts.iter().map(|h| h.name.len()).max().unwrap_or(1) * 7 + 8;
        let side = label + n * CELL;
        let best = self
            .pairs
            .iter()
            .filter(|p| p.pass)
            .map(|p| p.outcome.gbps)
            .fold(0.0, f64::max);
        let mut o = format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{side}\" height=\"{side}\" font-family=\"monospace\" font-size=\"11\">\n"
        );
        for (i, h) in self.hosts.iter().enumerate() {
            let at = label + i * CELL + CELL / 2;
            let name = xml(&h.name);
            let _ = writeln!(o, "<text x=\"4\" y=\"{}\">{name}</text>", at + 4);
            let _ = writeln!(
                o,
                "<text x=\"{at}\" y=\"{}\" text-anchor=\"start\" transform=\"rotate(-90 {at} {})\">{name}</text>",
                label - 4,
                label - 4
            );
        }
        for (i, s) in self.hosts.iter().enumerate() {
            for (j, d) in self.hosts.iter().enumerate() {
                let (fill, title) = match self.cell(&s.name, &d.name) {
                    _ if i == j => ("#ffffff".to_string(), String::new()),
                    None => (
                        "#cccccc".to_string(),
                        format!("{}->{}: not run", s.name, d.name),
                    ),
                    Some(p) if p.pass => {
                        let f = if best > 0.0 {
                            p.outcome.gbps / best
                        } else {
                            1.0
                        };
                        let g = (230.0 - 130.0 * f.clamp(0.0, 1.0)) as u8;
                        (
                            format!("#30{g:02x}50"),
                            format!("{}->{}: {:.2} Gb/s", s.name, d.name, p.outcome.gbps),
                        )
                    }
                    Some(p) => {
                        let why: Vec<String> = p.reasons.iter().map(reason_text).collect();
                        (
                            "#d03030".to_string(),
                            format!("{}->{}: FAIL: {}", s.name, d.name, why.join("; ")),
                        )
                    }
                };
                let _ = writeln!(
                    o,
                    "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{fill}\" stroke=\"#ffffff\"><title>{}</title></rect>",
                    label + j * CELL,
                    label + i * CELL,
                    CELL,
                    CELL,
                    xml(&title)
                );
            }
        }
        o.push_str("</svg>\n");
        o
    }
}

pub fn reason_text(r: &Reason) -> String {
    match r {
        Reason::Error { message } => message.clone(),
        Reason::Capture { interface, reasons } => {
            format!("fabric check on {interface}: {}", reasons.join(", "))
        }
        Reason::CompletionErrors { count } => format!("{count} completion error(s)"),
        Reason::DataCheck { status } => format!("data check {status}"),
        Reason::SlowerThan {
            gbps,
            expected_gbps,
        } => {
            // in the unit that shows them (a slow port's 0.9 Mb/s is not "0.00 Gb/s")
            let rate = |g: &f64| crate::report::format::bit_rate(g * 1e9 / 8.0);
            format!("{}, expected {}", rate(gbps), rate(expected_gbps))
        }
        Reason::TooFew {
            messages,
            expected_at_least,
        } => format!(
            "{messages} probes completed, at least {expected_at_least} expected (one unanswered holds its QP \
             until the local ACK timer: loss, or a path that does not answer)"
        ),
        Reason::NoLinkSpeed => {
            "no link speed from the requester's device for a share of it".to_string()
        }
        Reason::LatencyAbove {
            p99_us,
            expected_p99_us,
        } => {
            format!("p99 {p99_us:.1} us, expected at most {expected_p99_us:.1}")
        }
        Reason::Loss {
            end,
            counter,
            delta,
            what,
        } => {
            format!(
                "{} {counter} +{delta} ({what})",
                match end {
                    super::verdict::End::Requester => "requester",
                    super::verdict::End::Responder => "responder",
                }
            )
        }
    }
}

fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::locate::{Topology, locate};
    use crate::mesh::verdict::Expect;

    fn hosts() -> Vec<Host> {
        ["a", "b", "c"]
            .iter()
            .map(|n| Host {
                name: n.to_string(),
                address: n.to_string(),
                port: 1,
            })
            .collect()
    }

    #[test]
    fn matrix_reasons_and_suspects() {
        let h = hosts();
        let expect = Expect {
            lossless: true,
            ..Expect::default()
        };
        let mut ran = Vec::new();
        for (round, (src, dst, gbps, dup)) in [
            (0, 1, 9.5, 0),
            (1, 0, 9.25, 0),
            (0, 2, 3.0, 7),
            (2, 0, 4.0, 2),
            (1, 2, 5.0, 1),
            (2, 1, 6.0, 3),
        ]
        .into_iter()
        .enumerate()
        {
            let mut outcome = Outcome {
                gbps,
                data_check: "passed".into(),
                ..Outcome::default()
            };
            if dup > 0 {
                outcome
                    .responder_counters
                    .insert("duplicate_request".into(), dup);
            }
            let verdict = expect.judge(&outcome);
            ran.push(Ran {
                pair: Pair { src, dst },
                round,
                outcome,
                verdict,
            });
        }
        let results: Vec<(Pair, bool)> = ran.iter().map(|r| (r.pair, r.verdict.pass)).collect();
        let located = locate(&h, &Topology::default(), &results);
        let r = MeshReport::new(0.0, "pairs".into(), &h, 6, ran, &located);
        let text = r.text();
        let want = "\
mesh: pairs over 3 hosts, 6 round(s): 4 of 6 pairs FAIL
           (Gb/s; rows send, columns receive)
                a       b       c
        a       -    9.50    FAIL
        b    9.25       -    FAIL
        c    FAIL    FAIL       -
  FAIL a->c (round 2): responder duplicate_request +7 (requests received twice (rxe, mlx5))
  FAIL c->a (round 3): responder duplicate_request +2 (requests received twice (rxe, mlx5))
  FAIL b->c (round 4): responder duplicate_request +1 (requests received twice (rxe, mlx5))
  FAIL c->b (round 5): responder duplicate_request +3 (requests received twice (rxe, mlx5))
  suspect: host c (4 failing pair(s) through it, none passed)
";
        assert_eq!(text, want);
        let svg = r.svg();
        assert_eq!(svg.matches("<rect").count(), 9);
        assert_eq!(svg.matches("fill=\"#d03030\"").count(), 4);
        // the fastest pair darkest: 230 - 130 = 100 = 0x64
        assert!(
            svg.contains("fill=\"#306450\" stroke=\"#ffffff\"><title>a-&gt;b: 9.50 Gb/s"),
            "{svg}"
        );
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(
            json["suspects"][0]["implicated"],
            serde_json::json!(["a->c", "b->c", "c->a", "c->b"])
        );
        assert_eq!(json["pairs"][2]["reasons"][0]["kind"], "loss");
    }
}
