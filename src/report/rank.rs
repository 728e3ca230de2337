//! How much trouble a flow shows, and its health: the one ranking behind the text report's "most trouble
//! first", the TUI's trouble sort and colours, the choice of flows the SVG plots draw and of the flows a
//! report of many lists in full.
use super::FlowReport;
use crate::analysis::flow::trouble_score;

/// The ranking of `analysis::flow::trouble_score`, of a flow's report.
pub fn trouble(f: &FlowReport) -> u64 {
    trouble_score(
        [
            f.psn.gap_events,
            f.psn.missing,
            f.psn.retransmitted,
            f.naks.total(),
            f.rnr_naks,
            f.implied_naks,
            f.icrc_bad,
            f.malformed,
        ],
        [f.ecn.ce, f.cnp, f.ce_without_cnp],
    )
}

/// Flows most trouble first; equal trouble in flow order.
pub fn by_trouble<'a>(flows: impl IntoIterator<Item = &'a FlowReport>) -> Vec<&'a FlowReport> {
    let mut order: Vec<&FlowReport> = flows.into_iter().collect();
    order.sort_by(|a, b| trouble(b).cmp(&trouble(a)).then(a.id.cmp(&b.id)));
    order
}

/// Health of a flow, for its colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Health {
    Good,
    /// Congestion signals (CE, CNP, FECN/BECN) but no loss.
    Congested,
    /// Loss, NAKs, retransmissions or damage.
    Bad,
}

pub fn health(f: &FlowReport) -> Health {
    let t = trouble(f);
    if t >= 1_000_000 {
        Health::Bad
    } else if t > 0 || f.fecn + f.becn > 0 {
        Health::Congested
    } else {
        Health::Good
    }
}

/// Bytes per second over the flow's life.
pub fn throughput(f: &FlowReport) -> f64 {
    let d = f.last_time - f.first_time;
    if d > 0.0 { f.bytes as f64 / d } else { 0.0 }
}
