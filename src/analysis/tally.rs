//! What the flows of each host pair carried on each priority, added up over the live flows and those
//! evicted: the series of the metrics endpoint, in bounded memory (the first [`PAIRS_KEPT`] host pairs seen
//! apart, each on its priorities; the flows of every later pair added up as one, for the capture's life, so
//! that no counter moves from one series to another).
use std::collections::BTreeMap;

use parsers::frame::Addr;
use rustc_hash::FxHashSet;

use super::Engine;
use super::flow::{Flow, NakCounts};

/// The host pairs kept apart.
pub const PAIRS_KEPT: usize = 1024;

/// The host pairs kept apart: the first [`PAIRS_KEPT`] seen, for good.
#[derive(Debug, Default)]
pub(crate) struct KeptPairs(FxHashSet<(Addr, Addr)>);

impl KeptPairs {
    /// A new flow from `src` to `dst`: its pair is kept apart while there is room.
    pub(crate) fn note(&mut self, src: Addr, dst: Addr) {
        if self.0.len() < PAIRS_KEPT {
            self.0.insert((src, dst));
        }
    }

    fn holds(&self, key: &PairKey) -> bool {
        self.0.contains(&(key.src, key.dst))
    }
}

/// A host pair (the flow's source and destination) on a priority (`None`: no PCP and no DSCP mapped).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PairKey {
    pub src: Addr,
    pub dst: Addr,
    pub priority: Option<u8>,
}

/// What the flows of a pair carried, in the direction of the pair (a responder's NAKs count for the pair
/// from the responder to the requester).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PairCounts {
    pub flows: u64,
    pub packets: u64,
    pub bytes: u64,
    pub requests: u64,
    pub retransmitted: u64,
    pub gap_events: u64,
    pub missing: u64,
    pub naks: NakCounts,
    pub rnr_naks: u64,
    pub ce: u64,
    pub cnp: u64,
    pub icrc_bad: u64,
}

impl PairCounts {
    fn add(&mut self, f: &Flow) {
        self.merge(&PairCounts {
            flows: 1,
            packets: f.packets,
            bytes: f.bytes,
            requests: f.requests,
            retransmitted: f.req.psn.retransmitted,
            gap_events: f.req.psn.gap_events,
            missing: f.req.psn.missing,
            naks: f.resp.naks,
            rnr_naks: f.resp.rnr_naks,
            ce: f.ecn[3],
            cnp: f.cnp,
            icrc_bad: f.icrc_bad,
        });
    }

    fn merge(&mut self, o: &PairCounts) {
        self.flows += o.flows;
        self.packets += o.packets;
        self.bytes += o.bytes;
        self.requests += o.requests;
        self.retransmitted += o.retransmitted;
        self.gap_events += o.gap_events;
        self.missing += o.missing;
        self.naks.add(&o.naks);
        self.rnr_naks += o.rnr_naks;
        self.ce += o.ce;
        self.cnp += o.cnp;
        self.icrc_bad += o.icrc_bad;
    }
}

/// Pairs and their counts: at most [`PAIRS_KEPT`] apart, the rest together.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PairTally {
    pub pairs: BTreeMap<PairKey, PairCounts>,
    pub others: PairCounts,
}

impl PairTally {
    pub(crate) fn add(&mut self, key: PairKey, f: &Flow, kept: &KeptPairs) {
        if kept.holds(&key) {
            self.pairs.entry(key).or_default().add(f);
        } else {
            self.others.add(f);
        }
    }
}

impl Engine {
    /// The pair and priority flow `f` counts for.
    pub(crate) fn pair_of(&self, f: &Flow) -> PairKey {
        PairKey {
            src: f.key.src,
            dst: f.key.dst,
            priority: f.priority(&self.cfg.dscp_map),
        }
    }

    /// Every pair's counts so far: the flows evicted and the live ones. Counts only grow (the evicted
    /// flows' are kept), as metrics counters must; a pair first seen past [`PAIRS_KEPT`] counts with the
    /// others.
    pub fn pair_tally(&self) -> PairTally {
        let mut t = self.evicted_pairs.clone();
        for f in self.flows.iter() {
            let key = self.pair_of(f);
            t.add(key, f, &self.kept_pairs);
        }
        t
    }
}
