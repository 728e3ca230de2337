//! A requester flow's `life`: the share of it in each state ([`crate::analysis::life`]) and the one it
//! spent most in.
use std::collections::BTreeMap;

use serde::Serialize;

use crate::analysis::flow::Flow;
use crate::analysis::life::LifeState;

#[derive(Debug, Serialize)]
pub struct LifeReport {
    /// The time accounted: its first request to the last packet either direction carried for it.
    pub seconds: f64,
    /// The most PSNs it had outstanding (the oldest unacknowledged to the highest sent).
    pub window: u32,
    /// Each state's share of `seconds` (0 to 1, to four decimals).
    pub shares: BTreeMap<&'static str, f64>,
    pub dominant: Option<LifeState>,
}

pub fn build(f: &Flow) -> Option<LifeReport> {
    let l = f.req.life.as_ref()?;
    let total = l.total();
    let share = |n: u64| {
        if total == 0 {
            0.0
        } else {
            (n as f64 / total as f64 * 1e4).round() / 1e4
        }
    };
    Some(LifeReport {
        seconds: total as f64 / 1e9,
        window: l.window,
        shares: LifeState::ALL
            .iter()
            .zip(l.nanos)
            .map(|(s, n)| (s.name(), share(n)))
            .collect(),
        dominant: l.dominant().map(|(s, _)| s),
    })
}

/// The flows told in "Where the time went" at most.
pub const FLOWS_TOLD: usize = 8;

/// "Where the time went": the flows whose life went mostly to something other than sending or idling, the
/// largest share first.
pub fn lines(r: &super::Report) -> Vec<String> {
    let mut held: Vec<(&super::FlowReport, &LifeReport, LifeState, f64)> = r
        .flows
        .iter()
        .filter_map(|f| {
            let l = f.life.as_ref()?;
            let d = l.dominant?;
            let share = l.shares.get(d.name()).copied().unwrap_or(0.0);
            (!matches!(d, LifeState::Sending | LifeState::Idle)).then_some((f, l, d, share))
        })
        .collect();
    held.sort_by(|a, b| b.3.total_cmp(&a.3).then(a.0.id.cmp(&b.0.id)));
    let mut out: Vec<String> = held
        .iter()
        .take(FLOWS_TOLD)
        .map(|(f, l, d, share)| {
            let pct = share * 100.0;
            let why = match d {
                LifeState::WindowLimited => format!(
                    "{pct:.0} % of its life waiting for ACKs with its window of {} PSNs outstanding (the \
                     send queue depth, credits or the bandwidth-delay product is the limit)",
                    l.window
                ),
                LifeState::Paused => format!("{pct:.0} % of its life paused by PFC on its priority"),
                LifeState::RateLimited => {
                    format!("{pct:.0} % of its life rate-limited after CNPs toward it")
                }
                LifeState::Recovering => {
                    format!("{pct:.0} % of its life recovering from loss (NAKs, resends)")
                }
                _ => format!(
                    "{pct:.0} % of its life waiting out RNR NAKs (the receiver posts too few receives)"
                ),
            };
            format!("#{} QP 0x{:06x} {} → {}: {why}", f.id, f.dest_qp, f.src, f.dst)
        })
        .collect();
    if held.len() > FLOWS_TOLD {
        out.push(format!("... and {} more flows", held.len() - FLOWS_TOLD));
    }
    out
}
