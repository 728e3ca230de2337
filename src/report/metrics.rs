//! The OpenMetrics text of a capture so far (`capture --metrics`, `monitor`): what the packets show, per
//! host pair and priority (the series [`analysis::tally`] keeps, bounded), the flows by state, the
//! diagnosis, PFC, libpcap's drops, and the RDMA ports' counters. No QPN or GID label but on the bounded
//! `rdma_roce_worst_flow_info`. Names and labels: docs/metrics.md.
use std::fmt::{Display, Write};

use crate::analysis::Engine;
use crate::analysis::flow::{NakCounts, State};
use crate::analysis::tally::{PairCounts, PairKey};
use crate::host::counters::{PortValues, Snapshot};

use super::capture::CaptureStats;

/// The content type the endpoint answers with.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The flows `rdma_roce_worst_flow_info` names.
pub const WORST_FLOWS: usize = 5;

/// A counter of each host pair and priority: its name (without `_total`), its help, its value.
type PairCounter = (&'static str, &'static str, fn(&PairCounts) -> u64);

const PAIR_COUNTERS: [PairCounter; 11] = [
    (
        "rdma_roce_flows_seen",
        "RoCE flows (QP and direction) seen",
        |c| c.flows,
    ),
    ("rdma_roce_packets", "RoCE packets", |c| c.packets),
    (
        "rdma_roce_wire_bytes",
        "bytes on the wire of the RoCE packets",
        |c| c.bytes,
    ),
    ("rdma_roce_requests", "request packets", |c| c.requests),
    (
        "rdma_roce_retransmitted_requests",
        "request packets resent (PSN seen before, resumed READs)",
        |c| c.retransmitted,
    ),
    (
        "rdma_roce_psn_gaps",
        "PSN gaps in the requests (loss before the capture point or on the way)",
        |c| c.gap_events,
    ),
    ("rdma_roce_missing_psns", "PSNs the gaps skipped", |c| {
        c.missing
    }),
    ("rdma_roce_rnr_naks", "RNR NAKs sent", |c| c.rnr_naks),
    ("rdma_roce_ce_marked_packets", "packets with ECN CE", |c| {
        c.ce
    }),
    ("rdma_roce_cnps", "CNPs sent", |c| c.cnp),
    (
        "rdma_roce_icrc_bad_packets",
        "packets whose ICRC is wrong",
        |c| c.icrc_bad,
    ),
];

/// A NAK code: its label value and its count.
type NakCode = (&'static str, fn(&NakCounts) -> u64);

const NAK_CODES: [NakCode; 6] = [
    ("psn_sequence_error", |n| n.psn_seq_err),
    ("invalid_request", |n| n.invalid_request),
    ("remote_access_error", |n| n.remote_access),
    ("remote_operational_error", |n| n.remote_op),
    ("invalid_rd_request", |n| n.invalid_rd_request),
    ("reserved", |n| n.reserved),
];

/// The OpenMetrics exposition of `engine` so far, with libpcap's `stats` and the ports' counters `nic`.
pub fn render(engine: &Engine, stats: &CaptureStats, nic: Option<&Snapshot>) -> String {
    let mut m = Exposition::default();
    pairs(&mut m, engine);
    flows(&mut m, engine);
    capture(&mut m, engine, stats);
    pfc(&mut m, engine);
    if let Some(nic) = nic {
        ports(&mut m, nic);
    }
    m.text.push_str("# EOF\n");
    m.text
}

fn pairs(m: &mut Exposition, engine: &Engine) {
    let tally = engine.pair_tally();
    let mut series: Vec<(Vec<(&str, String)>, &PairCounts)> = tally
        .pairs
        .iter()
        .map(|(k, c)| (pair_labels(k), c))
        .collect();
    if tally.others.flows > 0 {
        let other = || "other".to_string();
        series.push((
            vec![("src", other()), ("dst", other()), ("priority", other())],
            &tally.others,
        ));
    }
    for (name, help, value) in PAIR_COUNTERS {
        m.family(name, "counter", help);
        for (labels, c) in &series {
            m.sample(&format!("{name}_total"), labels, value(c));
        }
    }
    m.family("rdma_roce_naks", "counter", "NAKs sent, by code");
    for (labels, c) in &series {
        for (code, count) in NAK_CODES {
            let mut l = labels.clone();
            l.push(("code", code.to_string()));
            m.sample("rdma_roce_naks_total", &l, count(&c.naks));
        }
    }
}

fn pair_labels(k: &PairKey) -> Vec<(&'static str, String)> {
    vec![
        ("src", k.src.to_string()),
        ("dst", k.dst.to_string()),
        (
            "priority",
            k.priority.map_or("none".to_string(), |p| p.to_string()),
        ),
    ]
}

fn flows(m: &mut Exposition, engine: &Engine) {
    let mut by_state = [0u64; State::ALL.len()];
    for f in engine.flows.iter() {
        if let Some(i) = State::ALL.iter().position(|s| *s == f.state()) {
            by_state[i] += 1;
        }
    }
    m.family(
        "rdma_roce_flows",
        "gauge",
        "flows in the table now, by state",
    );
    for (s, n) in State::ALL.iter().zip(by_state) {
        m.sample("rdma_roce_flows", &[("state", s.name().to_string())], n);
    }
    m.family(
        "rdma_roce_flows_evicted",
        "counter",
        "flows that left the table (idle, or the table full)",
    );
    m.sample(
        "rdma_roce_flows_evicted_total",
        NO_LABELS,
        engine.evicted.flows,
    );
    let d = &engine.diagnosis;
    m.family(
        "rdma_roce_diagnosis_events",
        "counter",
        "diagnosis events, by condition",
    );
    for (condition, n) in [
        ("stall", d.stalls),
        ("no_response", d.no_response),
        ("timeout", d.timeouts),
        ("violation", d.violations),
        ("connection", d.connections),
        ("lossless", d.lossless),
    ] {
        m.sample(
            "rdma_roce_diagnosis_events_total",
            &[("condition", condition.to_string())],
            n,
        );
    }
    let mut worst: Vec<_> = engine.flows.iter().filter(|f| f.trouble().any()).collect();
    worst.sort_by(|a, b| b.trouble().cmp(&a.trouble()).then(a.id.cmp(&b.id)));
    m.family(
        "rdma_roce_worst_flow",
        "info",
        "the flows with the most trouble now, worst first",
    );
    for (rank, f) in worst.iter().take(WORST_FLOWS).enumerate() {
        let labels = [
            ("rank", (rank + 1).to_string()),
            ("flow", f.id.number().to_string()),
            ("src", f.key.src.to_string()),
            ("dst", f.key.dst.to_string()),
            ("dest_qp", f.key.dest_qp.to_string()),
            ("state", f.state().name().to_string()),
        ];
        m.sample("rdma_roce_worst_flow_info", &labels, 1);
    }
}

fn capture(m: &mut Exposition, engine: &Engine, stats: &CaptureStats) {
    let t = &engine.totals;
    for (name, help, n) in [
        (
            "rdma_capture_frames",
            "frames captured (after the filter)",
            t.frames,
        ),
        ("rdma_capture_roce_frames", "RoCE frames", t.roce_frames),
        (
            "rdma_capture_malformed_frames",
            "frames damaged at some layer",
            t.malformed,
        ),
        (
            "rdma_capture_received_packets",
            "packets libpcap passed (pcap_stats ps_recv)",
            stats.received,
        ),
    ] {
        m.family(name, "counter", help);
        m.sample(&format!("{name}_total"), NO_LABELS, n);
    }
    m.family(
        "rdma_capture_dropped_packets",
        "counter",
        "packets the capture lost (libpcap's ps_drop: kernel, ps_ifdrop: interface)",
    );
    for (at, n) in [("kernel", stats.dropped), ("interface", stats.if_dropped)] {
        m.sample(
            "rdma_capture_dropped_packets_total",
            &[("where", at.to_string())],
            n,
        );
    }
}

fn pfc(m: &mut Exposition, engine: &Engine) {
    let priorities = engine
        .pause
        .iter()
        .enumerate()
        .map(|(p, pause)| (p.to_string(), pause))
        .chain(std::iter::once(("link".to_string(), &engine.link_pause)));
    let priorities: Vec<_> = priorities.collect();
    m.family(
        "rdma_pfc_pause_frames",
        "counter",
        "PFC frames naming the priority (link: 802.3x PAUSE)",
    );
    for (p, pause) in &priorities {
        m.sample(
            "rdma_pfc_pause_frames_total",
            &[("priority", p.clone())],
            pause.frames,
        );
    }
    m.family(
        "rdma_pfc_paused_seconds",
        "counter",
        "time the priority was paused, by the quanta of its pause frames",
    );
    for (p, pause) in &priorities {
        let secs = pause.paused_nanos as f64 / 1e9;
        m.sample(
            "rdma_pfc_paused_seconds_total",
            &[("priority", p.clone())],
            secs,
        );
    }
}

fn ports(m: &mut Exposition, nic: &Snapshot) {
    let kinds: [(&str, &str, PortCounters); 2] = [
        (
            "rdma_port_hw_counter",
            "an RDMA port's hw_counters (the kernel's names)",
            |p| &p.hw_counters,
        ),
        (
            "rdma_port_counter",
            "an RDMA port's counters (the kernel's names)",
            |p| &p.counters,
        ),
    ];
    for (family, help, pick) in kinds {
        m.family(family, "counter", help);
        for p in &nic.ports {
            for (counter, v) in pick(p) {
                let labels = [
                    ("device", p.device.clone()),
                    ("port", p.port.to_string()),
                    ("counter", counter.clone()),
                ];
                m.sample(&format!("{family}_total"), &labels, *v);
            }
        }
    }
}

const NO_LABELS: &[(&str, &str)] = &[];

/// An RDMA port's counters of one kind.
type PortCounters = for<'a> fn(&'a PortValues) -> &'a std::collections::BTreeMap<String, u64>;

/// The text being written.
#[derive(Default)]
struct Exposition {
    text: String,
}

impl Exposition {
    fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.text, "# TYPE {name} {kind}\n# HELP {name} {help}");
    }

    fn sample<L: AsRef<str>>(&mut self, name: &str, labels: &[(&str, L)], value: impl Display) {
        self.text.push_str(name);
        if !labels.is_empty() {
            self.text.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.text.push(',');
                }
                let _ = write!(self.text, "{k}=\"{}\"", escape(v.as_ref()));
            }
            self.text.push('}');
        }
        let _ = writeln!(self.text, " {value}");
    }
}

/// A label value as OpenMetrics writes it: backslash, double quote and line feed escaped.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every series docs/grafana/rocescope.json queries is one the endpoint serves.
    #[test]
    fn the_dashboard_queries_only_series_served() {
        let engine = crate::analysis::Engine::new(Default::default());
        let mut served = render(&engine, &CaptureStats::default(), None);
        for (name, _, _) in PAIR_COUNTERS {
            served.push_str(&format!("{name}_total\n"));
        }
        // The series an empty capture has no sample of yet.
        served.push_str(
            "rdma_roce_naks_total\nrdma_port_hw_counter_total\nrdma_roce_worst_flow_info\n",
        );
        let dashboard: serde_json::Value =
            serde_json::from_str(include_str!("../../docs/grafana/rocescope.json")).unwrap();
        let mut queried = Vec::new();
        for panel in dashboard["panels"].as_array().unwrap() {
            for t in panel["targets"].as_array().unwrap() {
                let expr = t["expr"].as_str().unwrap();
                for (at, _) in expr.match_indices("rdma_") {
                    let name: String = expr[at..]
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    queried.push(name);
                }
            }
        }
        assert!(queried.len() >= 10, "{queried:?}");
        let missing: Vec<&String> = queried
            .iter()
            .filter(|q| {
                !served
                    .lines()
                    .any(|l| l.split(['{', ' ']).next() == Some(q.as_str()))
            })
            .collect();
        assert!(missing.is_empty(), "not served: {missing:?}");
    }

    #[test]
    fn label_values_are_escaped() {
        let mut m = Exposition::default();
        m.sample("x_total", &[("a", "q\"b\\c\nd")], 3);
        assert_eq!(m.text, "x_total{a=\"q\\\"b\\\\c\\nd\"} 3\n");
    }
}
