//! Which flows a report lists in full, and what the others add up to: a capture of a million one-packet
//! flows (a scan, a misbehaving sender on a mirror port) gets a report of proportionate size.
use std::collections::BTreeMap;

use parsers::frame::Addr;
use rustc_hash::FxHashMap;
use serde::Serialize;

use crate::analysis::flow::{Flow, Role};
use crate::analysis::{Engine, FlowId};

/// Which flows a report lists in full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listing {
    /// Every flow with trouble (loss, damage, congestion marks) and the `n` busiest others; the rest are
    /// added up in `other_flows`.
    Top(usize),
    All,
}

impl Listing {
    /// `--report-flows`: a thousand flows are a few megabytes of JSON and more than a person reads, and a
    /// fabric of a thousand QPs is listed whole.
    pub const DEFAULT_FLOWS: usize = 1000;
}

impl Default for Listing {
    fn default() -> Self {
        Listing::Top(Self::DEFAULT_FLOWS)
    }
}

/// The flows a report lists, in the order they were first seen.
pub fn listed(engine: &Engine, listing: Listing) -> Vec<FlowId> {
    let all = engine.flows.in_order();
    let Listing::Top(n) = listing else {
        return all.iter().map(|f| f.id).collect();
    };
    if all.len() <= n {
        return all.iter().map(|f| f.id).collect();
    }
    let (mut troubled, mut others): (Vec<&Flow>, Vec<&Flow>) =
        all.into_iter().partition(|f| f.trouble().any());
    if others.len() > n {
        // The busiest n, in O(flows).
        let packets = |f: &&Flow| std::cmp::Reverse((f.packets, std::cmp::Reverse(f.id)));
        others.select_nth_unstable_by_key(n, packets);
        others.truncate(n);
    }
    troubled.extend(others);
    let mut ids: Vec<FlowId> = troubled.iter().map(|f| f.id).collect();
    ids.sort_unstable();
    ids
}

/// Flows, packets and bytes added up.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Sum {
    pub flows: u64,
    pub packets: u64,
    pub bytes: u64,
}

impl Sum {
    fn add(&mut self, packets: u64, bytes: u64) {
        self.flows += 1;
        self.packets += packets;
        self.bytes += bytes;
    }
}

/// One address pair's share of the flows not listed.
#[derive(Debug, Clone, Serialize)]
pub struct PairSum {
    pub src: String,
    pub dst: String,
    #[serde(flatten)]
    pub sum: Sum,
}

/// The flows a report does not list, added up.
#[derive(Debug, Clone, Serialize)]
pub struct OtherFlows {
    #[serde(flatten)]
    pub sum: Sum,
    /// By role (`requester`, `responder`, ...).
    pub by_role: BTreeMap<&'static str, Sum>,
    /// By address pair, the first [`PAIRS_KEPT`] pairs met (in flow order); `other_pairs` holds the rest.
    pub by_pair: Vec<PairSum>,
    pub other_pairs: Sum,
}

/// Address pairs kept in `by_pair`: bounded, whatever the capture holds.
pub const PAIRS_KEPT: usize = 1000;

fn role_name(r: Role) -> &'static str {
    match r {
        Role::Requester => "requester",
        Role::Responder => "responder",
        Role::Both => "both",
        Role::Datagram => "datagram",
        Role::Cnp => "cnp",
        Role::Unknown => "unknown",
    }
}

/// What the flows not in `listed` (in the order first seen) add up to; `None` when every flow is listed.
pub fn others(engine: &Engine, listed: &[FlowId]) -> Option<OtherFlows> {
    if listed.len() == engine.flows.len() {
        return None;
    }
    let mut out = OtherFlows {
        sum: Sum::default(),
        by_role: BTreeMap::new(),
        by_pair: Vec::new(),
        other_pairs: Sum::default(),
    };
    let mut pairs: FxHashMap<(Addr, Addr), usize> = FxHashMap::default();
    let mut next = listed.iter().peekable();
    for f in engine.flows.in_order() {
        if next.peek() == Some(&&f.id) {
            next.next();
            continue;
        }
        out.sum.add(f.packets, f.bytes);
        out.by_role
            .entry(role_name(f.role()))
            .or_default()
            .add(f.packets, f.bytes);
        let key = (f.key.src, f.key.dst);
        let at = match pairs.get(&key) {
            Some(&at) => Some(at),
            None if pairs.len() < PAIRS_KEPT => {
                pairs.insert(key, out.by_pair.len());
                out.by_pair.push(PairSum {
                    src: key.0.to_string(),
                    dst: key.1.to_string(),
                    sum: Sum::default(),
                });
                Some(out.by_pair.len() - 1)
            }
            None => None,
        };
        match at.and_then(|at| out.by_pair.get_mut(at)) {
            Some(p) => p.sum.add(f.packets, f.bytes),
            None => out.other_pairs.add(f.packets, f.bytes),
        }
    }
    Some(out)
}
