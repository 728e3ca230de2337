//! The report's `ecmp` section: per directed host pair, its QPs' UDP source ports and how a group of
//! `--ecmp-members` would carry their bytes under each hash ([`crate::analysis::ecmp`]).
use std::collections::BTreeMap;

use serde::Serialize;

use crate::analysis::Engine;
use crate::analysis::ecmp::{Hash, PairSpread};

/// The ports listed per pair (the count is exact up to `analysis::ecmp::PORTS_KEPT`).
pub const PORTS_LISTED: usize = 64;

#[derive(Debug, Serialize)]
pub struct EcmpReport {
    pub members: u16,
    pub hashes: Vec<&'static str>,
    /// Directed host pairs with at least one RC or UC QP over UDP, in address order.
    pub pairs: Vec<EcmpPair>,
    /// Pairs past the first 1024 came, not listed.
    pub more_pairs: bool,
}

#[derive(Debug, Serialize)]
pub struct EcmpPair {
    pub src: String,
    pub dst: String,
    pub qps: u32,
    pub source_ports: u32,
    /// More distinct ports came than were counted.
    pub more_ports: bool,
    /// The first [`PORTS_LISTED`] distinct ports, ascending.
    pub ports: Vec<u16>,
    pub bytes: u64,
    /// Per hash: the bytes each member carries.
    pub load: BTreeMap<&'static str, Vec<u64>>,
    /// Per hash: the busiest member's bytes over the mean member's (1: even; `members`: all on one).
    pub imbalance: BTreeMap<&'static str, Option<f64>>,
}

impl EcmpPair {
    fn of(p: &PairSpread) -> EcmpPair {
        EcmpPair {
            src: p.src.to_string(),
            dst: p.dst.to_string(),
            qps: p.ports.qps,
            source_ports: p.ports.distinct(),
            more_ports: p.ports.more_ports,
            ports: p.ports.ports.iter().copied().take(PORTS_LISTED).collect(),
            bytes: p.bytes(),
            load: Hash::ALL
                .iter()
                .map(|h| (h.name(), p.load.members(*h).to_vec()))
                .collect(),
            imbalance: Hash::ALL
                .iter()
                .map(|h| (h.name(), p.imbalance(*h)))
                .collect(),
        }
    }

    /// The worst of the hashes' imbalances.
    pub fn worst(&self) -> f64 {
        self.imbalance
            .values()
            .flatten()
            .copied()
            .fold(0.0, f64::max)
    }
}

pub fn build(engine: &Engine) -> EcmpReport {
    EcmpReport {
        members: engine.cfg.ecmp_members,
        hashes: Hash::ALL.iter().map(|h| h.name()).collect(),
        pairs: engine.ecmp_spread().iter().map(EcmpPair::of).collect(),
        more_pairs: engine.ecmp_more_pairs(),
    }
}

/// The text report's lines: the pairs with more than one QP, the most unevenly spread first (at most
/// `limit`); none when no pair has two.
pub fn lines(r: &EcmpReport, limit: usize) -> Vec<String> {
    let mut shared: Vec<&EcmpPair> = r.pairs.iter().filter(|p| p.qps > 1).collect();
    shared.sort_by(|a, b| b.worst().total_cmp(&a.worst()));
    let mut out: Vec<String> = shared
        .iter()
        .take(limit)
        .map(|p| {
            let imb = |h: &str| {
                p.imbalance[h].map_or_else(|| "-".to_string(), |x| format!("{x:.1}"))
            };
            format!(
                "{} → {}: {} QPs on {} UDP source port{}; busiest member {}× its share (crc16), {}× (crc32), {}× (xor)",
                p.src,
                p.dst,
                p.qps,
                p.source_ports,
                if p.source_ports == 1 { "" } else { "s" },
                imb("crc16"),
                imb("crc32"),
                imb("xor"),
            )
        })
        .collect();
    if shared.len() > limit {
        out.push(format!("... and {} more host pairs", shared.len() - limit));
    }
    out
}
