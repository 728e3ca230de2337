//! Packets held back by `delay` and `reorder`, for any path: each goes at its time, or once a packet of its
//! flow has gone (`reorder`).
use std::net::Ipv4Addr;
use std::time::Instant;

use super::Roce;

/// A RoCE flow as `reorder` follows it: source, destination, destination QP.
pub type HeldFlow = (Ipv4Addr, Ipv4Addr, u32);

/// The flow of a RoCE datagram (from its IPv4 header on).
pub fn flow_of(datagram: &[u8]) -> Option<HeldFlow> {
    let f = Roce::read(datagram)?.flow;
    Some((Ipv4Addr::from(f.src), Ipv4Addr::from(f.dst), f.dest_qp))
}

struct Held<T> {
    packet: T,
    until: Instant,
    flow: Option<HeldFlow>,
}

/// What is held, in the order it was held.
pub struct Holding<T> {
    held: Vec<Held<T>>,
}

impl<T> Default for Holding<T> {
    fn default() -> Self {
        Holding { held: Vec::new() }
    }
}

impl<T> Holding<T> {
    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    /// Holds `packet` until `until`, or (`flow`) until a packet of that flow has gone.
    pub fn hold(&mut self, packet: T, until: Instant, flow: Option<HeldFlow>) {
        self.held.push(Held {
            packet,
            until,
            flow,
        });
    }

    /// Whether a packet of `flow` going now would release one.
    pub fn waits_for(&self, flow: HeldFlow) -> bool {
        self.held.iter().any(|h| h.flow == Some(flow))
    }

    /// Lets go, in the order held, what is due at `now` and what waits for a packet of `gone` (one that just
    /// went).
    pub fn release<E>(
        &mut self,
        now: Instant,
        gone: Option<HeldFlow>,
        mut send: impl FnMut(T) -> Result<(), E>,
    ) -> Result<(), E> {
        let is_due = |h: &Held<T>| h.until <= now || (gone.is_some() && h.flow == gone);
        if !self.held.iter().any(is_due) {
            return Ok(());
        }
        let (due, kept) = std::mem::take(&mut self.held).into_iter().partition(is_due);
        self.held = kept;
        due.into_iter().try_for_each(|h: Held<T>| send(h.packet))
    }

    /// Everything held, now (the run ends).
    pub fn release_all<E>(&mut self, send: impl FnMut(T) -> Result<(), E>) -> Result<(), E> {
        std::mem::take(&mut self.held)
            .into_iter()
            .map(|h| h.packet)
            .try_for_each(send)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_packet_goes_at_its_time_or_behind_its_flow() {
        let t0 = Instant::now();
        let f: HeldFlow = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2), 0x11);
        let mut h = Holding::default();
        h.hold(1, t0 + Duration::from_millis(20), None);
        h.hold(2, t0 + Duration::from_millis(100), Some(f));
        h.hold(3, t0 + Duration::from_millis(5), None);
        assert!(h.waits_for(f));
        let mut sent = Vec::new();
        h.release(t0 + Duration::from_millis(10), None, |p| {
            sent.push(p);
            Ok::<(), ()>(())
        })
        .unwrap();
        assert_eq!(sent, [3]);
        h.release(t0 + Duration::from_millis(10), Some(f), |p| {
            sent.push(p);
            Ok::<(), ()>(())
        })
        .unwrap();
        assert_eq!(sent, [3, 2]);
        h.release_all(|p| {
            sent.push(p);
            Ok::<(), ()>(())
        })
        .unwrap();
        assert_eq!(sent, [3, 2, 1]);
        assert!(h.is_empty());
    }
}
