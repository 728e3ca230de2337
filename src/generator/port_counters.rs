//! One port's counters around a run (the hw_counters and counters that moved), and its link speed: the
//! evidence `gen mesh` holds against `--lossless` and `--expect-gbps N%`.

use std::collections::BTreeMap;

use rocescope::host::counters::{Delta, Deltas, Layout, Snapshot};
use rocescope::host::rdma::CLASS;
use rocescope::host::read::Root;
use rocescope::mesh::verdict::parse_rate;

pub struct PortReading {
    root: Root,
    layout: Layout,
    before: Snapshot,
}

impl PortReading {
    /// None when the port's counters cannot be read (then the run has no counter evidence).
    pub fn start(device: &str, port: u8) -> Option<PortReading> {
        let root = Root::live();
        let mut layout = Layout::find(&root, Some(device)).ok()?;
        layout.ports.retain(|p| p.port == u32::from(port));
        layout.extra.clear();
        let before = Snapshot::take(&root, &layout);
        Some(PortReading {
            root,
            layout,
            before,
        })
    }

    /// What moved since `start` (a counter that went backwards is left out: the device was reset).
    pub fn moved(&self) -> BTreeMap<String, u64> {
        let after = Snapshot::take(&self.root, &self.layout);
        let d = Deltas::between(&self.before, &after, false);
        d.ports
            .iter()
            .flat_map(|p| p.hw_counters.iter().chain(&p.counters))
            .filter_map(|(n, v)| match v {
                Delta::Rose(v) => Some((n.clone(), *v)),
                Delta::Reset(_) => None,
            })
            .collect()
    }
}

/// The port's link speed in Gb/s, from its sysfs `rate`.
pub fn link_gbps(device: &str, port: u8) -> Option<f64> {
    let text = Root::live()
        .text(&format!("{CLASS}/{device}/ports/{port}/rate"))
        .ok()?;
    parse_rate(&text)
}
