//! The NICs' counters beside a verdict: what the wire and the injector's log say each counter must have moved
//! by over the run, held against what it did. rxe's names (Linux's hw_counters of rdma_rxe): a device whose
//! counters do not have them (`sent_pkts`, which every run moves) is not held.
use serde::Serialize;

use super::Counters;
use super::judge::{Reaction, is_any_sequence_nak, is_rnr_nak};
use super::suite::Scenario;
use super::wire::{Action, Packet};

/// One counter held to the wire.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Held {
    pub device: String,
    pub counter: &'static str,
    /// What the wire (and the log) say it must have risen by.
    pub expected: u64,
    /// What it rose by.
    pub seen: u64,
}

impl Held {
    pub fn agrees(&self) -> bool {
        self.expected == self.seen
    }
}

/// Which end of the run a counter is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    Requester,
    Responder,
}

/// What each counter must have risen by over `s`'s run, from its capture's packets and the injector's
/// actions: the responder counts each PSN sequence error NAK it sends (those on the wire and those the
/// injector dropped on their way), its RNR NAKs, and the requester those it takes, its timer's rounds and the
/// times it gives up.
fn expected(s: &Scenario, packets: &[Packet], actions: &[Action]) -> Vec<(End, &'static str, u64)> {
    let count = |f: &dyn Fn(&Packet) -> bool| packets.iter().filter(|p| f(p)).count() as u64;
    let sequence_naks = count(&is_any_sequence_nak)
        + actions
            .iter()
            .filter(|a| a.class == "nak" && a.action == "drop")
            .count() as u64;
    let mut out = vec![(End::Responder, "out_of_seq_request", sequence_naks)];
    match (s.reaction, s.qp, s.rnr) {
        (Reaction::AckTimeout, Some(qp), _) => out.extend([
            (
                End::Requester,
                "completer_retry_err",
                u64::from(qp.retry_count),
            ),
            (End::Requester, "retry_exceeded_err", 1),
        ]),
        (Reaction::RnrRetry, _, Some(rnr)) if rnr.rnr_retry < 7 => {
            let rnr_naks = count(&is_rnr_nak);
            out.extend([
                (End::Responder, "send_rnr_err", rnr_naks),
                (End::Requester, "rcvd_rnr_err", rnr_naks),
                (End::Requester, "retry_rnr_exceeded_err", 1),
            ]);
        }
        _ => {}
    }
    out
}

/// The counters of `counters` (the run's, by device) held to what `s`'s run shows; `requester` and
/// `responder` the two devices. Only the devices whose counters have rxe's names.
pub fn held(
    s: &Scenario,
    packets: &[Packet],
    actions: &[Action],
    counters: &Counters,
    requester: &str,
    responder: &str,
) -> Vec<Held> {
    // The counters are those that moved: every run moves rxe's packet counters
    let rxe_like = |device: &str| {
        counters
            .get(device)
            .is_some_and(|c| c.contains_key("sent_pkts"))
    };
    if !rxe_like(requester) || !rxe_like(responder) {
        return Vec::new();
    }
    expected(s, packets, actions)
        .into_iter()
        .map(|(end, counter, expected)| {
            let device = match end {
                End::Requester => requester,
                End::Responder => responder,
            };
            let seen = counters
                .get(device)
                .and_then(|c| c.get(counter))
                .and_then(serde_json::Value::as_u64)
                .unwrap_or(0);
            Held {
                device: device.to_string(),
                counter,
                expected,
                seen,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conform::suite::find;
    use std::net::Ipv4Addr;

    fn answer(syndrome: u8) -> Packet {
        Packet {
            frame: 1,
            ts: 0,
            src: Ipv4Addr::new(10, 0, 0, 2),
            dst: Ipv4Addr::new(10, 0, 0, 1),
            ip_id: 0,
            ecn: 0,
            opcode: 17,
            dest_qp: 0x11,
            psn: 5,
            syndrome: Some(syndrome),
            reth: None,
            payload_len: 0,
            icrc_bad: false,
        }
    }

    fn counters(rxe0: serde_json::Value, rxe1: serde_json::Value) -> Counters {
        serde_json::from_value(serde_json::json!({"rxe0": rxe0, "rxe1": rxe1})).unwrap()
    }

    #[test]
    fn the_wire_says_what_each_counter_must_show() {
        // one sequence error NAK on the wire, an ACK: rxe1 counted 1
        let packets = [answer(0x60), answer(0x1f)];
        let c = counters(
            serde_json::json!({"sent_pkts": 43, "rcvd_seq_err": 1}),
            serde_json::json!({"sent_pkts": 33, "out_of_seq_request": 1}),
        );
        let s = find("write_request_lost").unwrap();
        let h = held(s, &packets, &[], &c, "rxe0", "rxe1");
        assert_eq!(
            h,
            [Held {
                device: "rxe1".into(),
                counter: "out_of_seq_request",
                expected: 1,
                seen: 1
            }]
        );
        assert!(h[0].agrees());
        // RNR: four RNR NAKs (timer 28), the requester gave up once; rxe0 counted only 3 of them
        let packets = [answer(0x3c), answer(0x3c), answer(0x3c), answer(0x3c)];
        let c = counters(
            serde_json::json!({"sent_pkts": 16, "rcvd_rnr_err": 3, "retry_rnr_exceeded_err": 1}),
            serde_json::json!({"sent_pkts": 4, "send_rnr_err": 4}),
        );
        let h = held(
            find("rnr_retry").unwrap(),
            &packets,
            &[],
            &c,
            "rxe0",
            "rxe1",
        );
        let disagree: Vec<(&str, u64, u64)> = h
            .iter()
            .filter(|h| !h.agrees())
            .map(|h| (h.counter, h.expected, h.seen))
            .collect();
        assert_eq!(h.len(), 4);
        assert_eq!(disagree, [("rcvd_rnr_err", 4, 3)]);
        // another NIC's names: not held
        let c = counters(
            serde_json::json!({"packet_seq_err": 1, "out_of_sequence": 0}),
            serde_json::json!({"out_of_sequence": 1}),
        );
        assert!(held(s, &[answer(0x60)], &[], &c, "rxe0", "rxe1").is_empty());
    }
}
