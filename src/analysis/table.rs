//! The flow table: each flow's identity ([`FlowId`]) is handed out once, when the flow is first seen, and
//! never changes or names another flow, whatever goes before or after it. Evicting a flow frees its slot
//! for a later flow, which gets a new number: an id kept by anyone (a pair, a connection, an event, the
//! live ring, a plot, an exported row) stays valid for its flow, and names no flow once that one went.
use std::num::NonZeroU64;
use std::ops::{Index, IndexMut};

use super::flow::Flow;

/// A flow's identity: its number, in the order flows were first seen in the capture (from 0, never
/// reused), and where the table keeps it. Reports, filters and exports call a flow by its number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FlowId {
    /// The number plus one: an `Option<FlowId>` takes no more room than a `FlowId`.
    number_1: NonZeroU64,
    slot: u32,
}

impl FlowId {
    /// The flow's number: `id` in the report, `rocescope.flow` in filters and exports.
    pub fn number(self) -> u64 {
        self.number_1.get() - 1
    }

    fn new(number: u64, slot: u32) -> FlowId {
        FlowId {
            number_1: NonZeroU64::new(number.saturating_add(1)).unwrap_or(NonZeroU64::MAX),
            slot,
        }
    }

    /// An id for a unit test that needs no table.
    #[cfg(test)]
    pub(crate) fn for_test(number: u64) -> FlowId {
        FlowId::new(number, number as u32)
    }
}

/// The flows alive, in slots reused after an eviction.
#[derive(Debug, Default)]
pub struct FlowTable {
    slots: Vec<Option<Box<Flow>>>,
    free: Vec<u32>,
    next_number: u64,
    live: usize,
}

impl FlowTable {
    /// Makes a flow (`make` is told its id) and keeps it.
    pub fn insert(&mut self, make: impl FnOnce(FlowId) -> Flow) -> FlowId {
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.slots.push(None);
                (self.slots.len() - 1) as u32
            }
        };
        let id = FlowId::new(self.next_number, slot);
        self.next_number = self.next_number.saturating_add(1);
        self.slots[slot as usize] = Some(Box::new(make(id)));
        self.live += 1;
        id
    }

    /// Flow `id`, while it is alive.
    pub fn get(&self, id: FlowId) -> Option<&Flow> {
        self.slots
            .get(id.slot as usize)?
            .as_deref()
            .filter(|f| f.id == id)
    }

    pub fn get_mut(&mut self, id: FlowId) -> Option<&mut Flow> {
        self.slots
            .get_mut(id.slot as usize)?
            .as_deref_mut()
            .filter(|f| f.id == id)
    }

    /// Takes flow `id` out; its slot serves a later flow.
    pub fn remove(&mut self, id: FlowId) -> Option<Box<Flow>> {
        let slot = self.slots.get_mut(id.slot as usize)?;
        if slot.as_ref().is_none_or(|f| f.id != id) {
            return None;
        }
        self.free.push(id.slot);
        self.live -= 1;
        slot.take()
    }

    /// The flows alive.
    pub fn len(&self) -> usize {
        self.live
    }

    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Flows handed out so far, evicted ones too: the next flow's number.
    pub fn numbered(&self) -> u64 {
        self.next_number
    }

    /// The flows alive, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = &Flow> {
        self.slots.iter().filter_map(|s| s.as_deref())
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut Flow> {
        self.slots.iter_mut().filter_map(|s| s.as_deref_mut())
    }

    /// The ids of the flows alive, in no particular order.
    pub fn ids(&self) -> impl Iterator<Item = FlowId> + '_ {
        self.iter().map(|f| f.id)
    }

    /// The flows alive in the order they were first seen (by number): the order of a report.
    pub fn in_order(&self) -> Vec<&Flow> {
        let mut v: Vec<&Flow> = self.iter().collect();
        // Slots are filled in order until the first eviction: usually sorted already.
        if !v.is_sorted_by_key(|f| f.id.number_1) {
            v.sort_unstable_by_key(|f| f.id.number_1);
        }
        v
    }
}

/// The engine's own ids are of flows alive: an id of a flow that went is a bug, not an input.
impl Index<FlowId> for FlowTable {
    type Output = Flow;

    fn index(&self, id: FlowId) -> &Flow {
        self.get(id).expect("a flow id of a flow alive")
    }
}

impl IndexMut<FlowId> for FlowTable {
    fn index_mut(&mut self, id: FlowId) -> &mut Flow {
        self.get_mut(id).expect("a flow id of a flow alive")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::flow::FlowKey;
    use parsers::frame::Addr;

    fn key(qp: u32) -> FlowKey {
        FlowKey {
            src: Addr::V4([10, 0, 0, 1]),
            dst: Addr::V4([10, 0, 0, 2]),
            dest_qp: qp,
        }
    }

    /// A slot freed by an eviction serves the next flow under a new number; the old id names nothing.
    #[test]
    fn an_id_never_names_another_flow() {
        let mut t = FlowTable::default();
        let ids: Vec<FlowId> = (0..3)
            .map(|qp| t.insert(|id| Flow::new(id, key(qp), 0, 1)))
            .collect();
        assert_eq!(
            ids.iter().map(|i| i.number()).collect::<Vec<_>>(),
            [0, 1, 2]
        );
        assert!(t.remove(ids[1]).is_some());
        assert!(t.remove(ids[1]).is_none(), "gone already");
        let later = t.insert(|id| Flow::new(id, key(9), 0, 1));
        assert_eq!(later.number(), 3);
        assert_eq!(later.slot, ids[1].slot, "the freed slot serves it");
        assert!(t.get(ids[1]).is_none());
        assert_eq!(t[later].key.dest_qp, 9);
        assert_eq!(t[ids[2]].key.dest_qp, 2);
        assert_eq!((t.len(), t.numbered()), (3, 4));
        let order: Vec<u64> = t.in_order().iter().map(|f| f.id.number()).collect();
        assert_eq!(order, [0, 2, 3]);
    }
}
