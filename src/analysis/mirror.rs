//! Mirror duplicates: a frame mirrored twice (the ingress and the egress copy of a session, or two ports of
//! one path) reaches the capture twice, with the same bytes where a switch does not change them, a few
//! microseconds apart. Seen from another place (another ERSPAN direction, port index or session, another
//! collector, VLAN, MAC, TTL or ECN mark) within the mirror window, it is a copy. Seen from the same place (a
//! plain SPAN port mirroring the ingress and the egress of one port sends it twice, byte for byte), it is a
//! copy when it follows sooner than any resend could ([`SAME_PLACE_NANOS`]) and nothing came between that a
//! resend would answer (a NAK toward its sender, or, for a response, a resend of its requester): the engine
//! says which ([`MirrorWindow::copy_of`]'s `caused`). Counted once: the second copy is no retransmission
//! and no duplicate request.
use std::hash::{Hash, Hasher};

use parsers::frame::{Frame, Ip, Roce, hash_link};
use rustc_hash::FxHasher;

/// A copy from the same place must follow within this time: a switch sends a port's ingress and egress copy
/// microseconds apart, and a requester resends no sooner than a NAK's round trip or its local ACK timer
/// (4.096 µs × 2^n, n above 8 in practice); a resend that quick comes after a NAK, which the engine sees.
pub(crate) const SAME_PLACE_NANOS: u64 = 50_000;

/// Recent RoCE frames by a digest of what a switch leaves unchanged (the PSN, QP, opcode and payload length,
/// and the ICRC found, which covers the addresses, IPv4 identification, UDP ports, BTH and payload; without
/// an ICRC, those themselves) and one of where the copy was seen. A direct-mapped table: memory is fixed, and a collision only forgets the older frame.
pub(crate) struct MirrorWindow {
    /// (digest, place, time)
    slots: Box<[(u64, u64, u64)]>,
    window_nanos: u64,
}

impl MirrorWindow {
    /// Slots of the table: a copy is recognised when fewer frames than this (about) came between.
    const SLOTS: usize = 1024;

    pub(crate) fn new(window_nanos: u64) -> MirrorWindow {
        MirrorWindow {
            slots: vec![(0, 0, 0); Self::SLOTS].into_boxed_slice(),
            window_nanos,
        }
    }

    /// True when the frame is a copy of one seen less than the window before `ts`: from another place, or
    /// from the same place within [`SAME_PLACE_NANOS`] with nothing that would make it a resend (`caused`,
    /// asked with the first copy's time, says whether something since could have). Else remembers it.
    pub(crate) fn copy_of(
        &mut self,
        frame: &Frame,
        roce: &Roce,
        ts: u64,
        caused: impl FnOnce(u64) -> bool,
    ) -> bool {
        if self.window_nanos == 0 {
            return false;
        }
        let digest = identity(frame, roce) | 1;
        let place = place(frame);
        let slot = &mut self.slots[digest as usize % Self::SLOTS];
        let after = ts.saturating_sub(slot.2);
        if slot.0 == digest && after <= self.window_nanos {
            let elsewhere = slot.1 != place;
            if elsewhere || (after <= SAME_PLACE_NANOS.min(self.window_nanos) && !caused(slot.2)) {
                // The first copy's time stays: a third frame later than the window is a resend.
                return true;
            }
        }
        *slot = (digest, place, ts);
        false
    }
}

/// What tells one packet from another, and a copy of it (mirrored, or seen at another capture point) from
/// the packet itself: a digest of what a switch leaves unchanged (see [`MirrorWindow`]). A resend differs:
/// its IPv4 identification, and with it the ICRC.
pub(crate) fn identity(frame: &Frame, roce: &Roce) -> u64 {
    let b = roce.bth;
    let head = u64::from(b.psn) | (u64::from(b.dest_qp) << 24) | (u64::from(b.opcode) << 48);
    let mut h = FxHasher::default();
    h.write_u64(head);
    h.write_usize(roce.payload_len.unwrap_or(usize::MAX));
    match roce.icrc {
        // The ICRC covers the rest: addresses, IPv4 identification, UDP ports, the BTH, the payload.
        Some(icrc) => h.write_u32(icrc),
        // A copy cut before it.
        None => {
            (frame.src(), frame.dst()).hash(&mut h);
            frame.udp.map(|u| u.src_port).hash(&mut h);
            if let Some(Ip::V4(ip)) = frame.ip {
                ip.id.hash(&mut h);
            }
            (b.se, b.migreq, b.pad_count, b.tver, b.pkey, b.ack_req).hash(&mut h);
        }
    }
    h.finish()
}

/// Where a copy was seen: what differs between two copies of one frame and never between a frame and its
/// resend (the encapsulation's part is [`parsers::frame::Encapsulation::place`]).
fn place(frame: &Frame) -> u64 {
    let mut h = FxHasher::default();
    hash_link(frame.link, &frame.vlans, &mut h);
    match frame.ip {
        Some(Ip::V4(ip)) => (ip.ttl, ip.dscp, ip.ecn).hash(&mut h),
        Some(Ip::V6(ip)) => (ip.hop_limit, ip.dscp, ip.ecn).hash(&mut h),
        None => {}
    }
    frame.encap.map(|e| e.place).hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use parsers::builder::{Mirror, RoceFrame};
    use parsers::frame::parse_frame;

    fn copy(m: Mirror, frame: &[u8]) -> Vec<u8> {
        m.wrap(frame, frame.len(), 0, 0).0
    }

    /// Whether the window takes the frame `second` (at `after_us`) for a copy of `first` (at 0), `caused`
    /// saying whether something came between that a resend would answer.
    fn copied(first: &[u8], second: &[u8], window_us: u64, after_us: u64, caused: bool) -> bool {
        let mut w = MirrorWindow::new(window_us * 1000);
        let cfg = Default::default();
        let (a, b) = (
            parse_frame(1, first, first.len(), &cfg),
            parse_frame(1, second, second.len(), &cfg),
        );
        assert!(!w.copy_of(&a, &a.roce.unwrap(), 0, |_| false));
        w.copy_of(&b, &b.roce.unwrap(), after_us * 1000, |since| {
            assert_eq!(since, 0, "asked with the first copy's time");
            caused
        })
    }

    /// Whether the window takes the frame `second` (at 10 µs) for a copy of `first` (at 0), nothing between.
    fn seen_twice(first: &[u8], second: &[u8], window_us: u64) -> bool {
        copied(first, second, window_us, 10, false)
    }

    const INGRESS: Mirror = Mirror::ErspanIII {
        session: 1,
        egress: false,
    };
    const EGRESS: Mirror = Mirror::ErspanIII {
        session: 1,
        egress: true,
    };

    #[test]
    fn a_copy_from_another_place_within_the_window_is_a_duplicate() {
        let f = RoceFrame::new(0x04).build();
        assert!(seen_twice(&copy(INGRESS, &f), &copy(EGRESS, &f), 1000));
        // Two sessions, or a VLAN rewritten between the ports.
        let other_session = Mirror::ErspanII { session: 2 };
        assert!(seen_twice(
            &copy(Mirror::ErspanII { session: 1 }, &f),
            &copy(other_session, &f),
            1000
        ));
        let mut tagged = RoceFrame::new(0x04);
        tagged.vlans = vec![parsers::vlan::VlanTag {
            tpid: 0x8100,
            pcp: 3,
            dei: false,
            vid: 200,
            ethertype: 0,
        }];
        assert!(seen_twice(&f, &tagged.build(), 1000));
    }

    /// A plain SPAN port's two copies of one frame, byte for byte, 10 µs apart: one frame. From the same
    /// place 60 µs later (past any copy's delay), or after something a resend answers (a NAK), a resend.
    #[test]
    fn the_same_frame_from_the_same_place_is_a_copy_only_when_nothing_could_resend_it() {
        let f = RoceFrame::new(0x04).build();
        assert!(seen_twice(&f, &f, 1000));
        assert!(seen_twice(&copy(INGRESS, &f), &copy(INGRESS, &f), 1000));
        assert!(!copied(&f, &f, 1000, 60, false), "later than a copy comes");
        assert!(!copied(&f, &f, 1000, 10, true), "after a NAK: a resend");
        assert!(!copied(&f, &f, 5, 10, false), "outside a smaller window");
        // Another place is a copy whatever came between.
        assert!(copied(
            &copy(INGRESS, &f),
            &copy(EGRESS, &f),
            1000,
            500,
            true
        ));
    }

    #[test]
    fn outside_the_window_or_another_frame_is_not_a_duplicate() {
        let f = RoceFrame::new(0x04).build();
        assert!(!seen_twice(&copy(INGRESS, &f), &copy(EGRESS, &f), 5));
        assert!(!seen_twice(&copy(INGRESS, &f), &copy(EGRESS, &f), 0));
        let mut next = RoceFrame::new(0x04);
        next.bth.psn = 1;
        assert!(!seen_twice(
            &copy(INGRESS, &f),
            &copy(EGRESS, &next.build()),
            1000
        ));
    }
}
