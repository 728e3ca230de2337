//! How much trouble a flow shows, and its health: the one ranking behind the text report's "most trouble
//! first", the TUI's trouble sort and colours, the choice of flows the SVG plots draw and of the flows a
//! report of many lists in full.
use super::{FlowReport, Report};
pub use crate::analysis::flow::State;

/// The flow's trouble ([`crate::analysis::flow::Trouble`]) as one number that sorts the same.
pub fn trouble(f: &FlowReport) -> u64 {
    f.trouble
}

/// The report's flows (indices into `flows`) most trouble first, equal trouble in flow order, the sides of a
/// connection side by side: the text report's order and the TUI's default.
pub fn order(r: &Report) -> Vec<usize> {
    let mut ids: Vec<usize> = (0..r.flows.len()).collect();
    ids.sort_by(|&a, &b| {
        trouble(&r.flows[b])
            .cmp(&trouble(&r.flows[a]))
            .then(a.cmp(&b))
    });
    together(r, ids)
}

/// The two directions of a connection side by side, where the first of them sorts.
pub fn together(r: &Report, ids: Vec<usize>) -> Vec<usize> {
    let mut visible = vec![false; r.flows.len()];
    for &i in &ids {
        visible[i] = true;
    }
    let mut placed = vec![false; r.flows.len()];
    let mut out = Vec::with_capacity(ids.len());
    for i in ids {
        if std::mem::replace(&mut placed[i], true) {
            continue;
        }
        out.push(i);
        let c = r.flows[i]
            .connection
            .and_then(|c| r.connections.get(c as usize));
        for id in c.iter().flat_map(|c| c.sides.iter().filter_map(|s| s.flow)) {
            let Some(p) = r.place_of(id) else {
                continue;
            };
            if p < visible.len() && visible[p] && !std::mem::replace(&mut placed[p], true) {
                out.push(p);
            }
        }
    }
    out
}

/// Health of a flow, for its colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Health {
    Good,
    /// Congestion signals (CE, CNP, FECN/BECN) or a lossless failure, but no loss.
    Congested,
    /// A diagnosis, loss, NAKs, retransmissions or damage.
    Bad,
}

/// The colour of its `state`.
pub fn health(f: &FlowReport) -> Health {
    match f.state {
        State::Ok => Health::Good,
        State::Congested => Health::Congested,
        _ => Health::Bad,
    }
}

/// Bytes per second over the flow's life.
pub fn throughput(f: &FlowReport) -> f64 {
    let d = f.last_time - f.first_time;
    if d > 0.0 { f.bytes as f64 / d } else { 0.0 }
}
