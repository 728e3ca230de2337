//! Synthetic RoCEv2 traffic with its ground truth: a discrete-event simulation of RC connections between a
//! few hosts, as a switch port mirror sees them, streamed to a classic pcap (nanosecond timestamps, Ethernet).
//! Used by `examples/synth.rs` (the command `benches/compare.sh` and `benches/capture.sh` run),
//! `tests/synth.rs` (which checks `rocescope analyze` against the truth) and `tests/alloc.rs`.
//!
//! A second scenario, [`generate_lossless`] (module `lossless`, its model there): paced senders reacting to
//! CNPs as DCQCN does, or ignoring them, and a PFC pause storm, with the truth of the figures of
//! `cnp_reaction`, `cnp_interval_us` and `pfc`.
//!
//! [`Params`] is what to simulate; [`generate`] runs the simulation (module `sim`: the requesters and the
//! responders; `frame` builds the frames, `capture` writes them) and returns the [`Truth`].
//!
//! # Model
//!
//! - Hosts 10.0.0.1..=10.0.0.N (MAC 02:00:00:00:00:0N) on one switch; the capture is a mirror of the switch.
//!   Each connection joins two hosts (connections are spread over the host pairs, in either direction) and has
//!   two QPNs: the requester sends requests to the responder's QPN, the responder sends ACKs, NAKs, READ
//!   responses, atomic ACKs and CNPs to the requester's QPN. Start PSNs are random; one connection in four
//!   starts a little below 0xFFFFFF so that its PSNs wrap.
//! - Requesters post messages after an exponential think time: RDMA WRITE (40 %), SEND (30 %), READ (20 %),
//!   FETCH_ADD / CMP_SWAP (10 %), weights varied per connection. SEND and WRITE are segmented at the path MTU
//!   (FIRST/MIDDLE/LAST or ONLY, some with immediate data; WRITE FIRST/ONLY carry a RETH with the message
//!   length; LAST/ONLY ask for an ACK). A READ request takes one PSN per response packet. Packets of a message
//!   leave back to back at 25 Gb/s; the requester does not wait for ACKs (no window).
//! - Responders accept in-order requests only. They ACK every `ack_every` (4, 8 or 16) SEND/WRITE packets and
//!   every packet with AckReq (coalesced ACK for the last in-order PSN, with the MSN), answer a READ with its
//!   response packets (FIRST/MIDDLE/LAST or ONLY; AETH on all but MIDDLE) and an atomic with an ATOMIC
//!   ACKNOWLEDGE. A request ahead of the expected PSN gets one NAK (PSN sequence error, PSN = the expected
//!   PSN); further out-of-sequence requests are dropped silently until the expected PSN arrives.
//! - A requester receiving that NAK goes back N: it resends every packet from the NAKed PSN on, then goes on
//!   with new ones.
//! - Loss: a new request packet is lost with probability `loss`, unless its connection is still recovering
//!   from a previous loss (from the drop until the requester sends a new packet after its go-back-N), so that
//!   every loss is one clean episode. Losses alternate between two places:
//!   - before the mirror (odd losses: the 1st, 3rd, ...): the capture never sees the packet. It shows a PSN
//!     gap at the next request (the PSNs the lost packet used are missing), the NAK, and the go-back-N: the
//!     resent lost PSN is a retransmission seen for the first time, the PSNs after it are duplicates.
//!   - after the mirror (even losses): the switch drops it on the way out, after the copy. The capture sees
//!     the packet once, then the NAK, then every resent PSN again: retransmissions that are all duplicates.
//! - ECN: senders use ECT(0). The switch marks a request packet CE with probability `ce` (lost packets are
//!   not marked). The receiver answers each CE mark with a CNP (opcode 0x81, BECN set, DestQP = the sender's
//!   QPN, from the receiver to the sender, DSCP 48, Not-ECT) 1-9 µs after the packet arrives, except for a
//!   fraction `unanswered` of the marks it leaves without a CNP. To keep "not followed by a CNP within the
//!   window" exact, a mark is only left unanswered when no CNP toward that sender is still due, once every
//!   connection has had its first response (so the analyzer has paired the directions), and its connection
//!   gets no other CE mark for twice the CNP window after it.
//! - Every frame is built whole by `parsers::builder::RoceFrame` (lengths, IPv4 checksum, pad, ICRC). Frames
//!   are written as the simulation produces them, in time order; timestamps strictly increase (ties are
//!   pushed 1 ns apart). Memory is bounded by the connections and the packets in flight.
//!
//! # Ground truth
//!
//! Counted from the simulation as each frame is written (so a capture cut after N frames counts only what
//! it holds), in the words of the `rocescope analyze --json` schema, per flow (src, dst, dest_qp) and in
//! total: a PSN gap is the first request captured after a loss before the mirror (missing = the PSNs the lost
//! packet took); retransmitted = resent packets; duplicates = resent packets whose earlier copy was captured;
//! retransmission episodes = go-back-N rewinds; NAKs and CNPs as sent; CE = CE-marked packets;
//! CE without CNP = marks left unanswered, more than the window before the end of the capture; messages =
//! SEND/WRITE messages every packet of which was captured at least once (each message once, however often
//! resent).

mod capture;
mod frame;
mod lossless;
mod params;
mod rng;
mod sim;
mod truth;

pub use lossless::{LosslessParams, LosslessTruth, SenderTruth, generate_lossless};
pub use params::{Params, ParamsError};
pub use sim::generate;
pub use truth::{ConnTruth, RequesterTruth, ResponderTruth, Truth};
