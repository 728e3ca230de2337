//! The ground truth, counted from the simulation as each frame is written (see the crate's documentation).
use parsers::psn::{PSN_MASK, add as psn_add};
use serde_json::{Value, json};

use crate::Params;

/// The requester's direction of a connection: (requester IP, responder IP, responder QPN).
#[derive(Debug, Clone, Default)]
pub struct RequesterTruth {
    pub packets: u64,
    pub bytes: u64,
    pub payload_bytes: u64,
    pub retransmitted_bytes: u64,
    pub first_psn: Option<u32>,
    /// The end (last PSN + 1) of the highest request captured.
    pub end_psn: u32,
    pub gap_events: u64,
    pub missing: u64,
    pub retransmitted: u64,
    pub duplicates: u64,
    pub episodes: u64,
    pub ect0: u64,
    pub ce: u64,
    pub ce_without_cnp: u64,
    pub messages: u64,
    pub message_bytes: u64,
    pub message_min: Option<u64>,
    pub message_max: u64,
}

/// The responder's direction: (responder IP, requester IP, requester QPN).
#[derive(Debug, Clone, Default)]
pub struct ResponderTruth {
    pub packets: u64,
    pub bytes: u64,
    pub payload_bytes: u64,
    pub acks: u64,
    pub naks: u64,
    pub read_responses: u64,
    pub atomic_acks: u64,
    pub cnp: u64,
    pub ect0: u64,
}

/// One connection as the generator made it.
#[derive(Debug, Clone)]
pub struct ConnTruth {
    pub requester: String,
    pub responder: String,
    pub requester_qpn: u32,
    pub responder_qpn: u32,
    pub start_psn: u32,
    pub req: RequesterTruth,
    pub resp: ResponderTruth,
    /// Losses of this connection's requests: (PSN, before the mirror).
    pub losses: Vec<(u32, bool)>,
    /// Times of the CE marks left without a CNP (nanoseconds since the epoch).
    pub unanswered_ce: Vec<u64>,
}

#[derive(Debug, Clone)]
pub struct Truth {
    pub params: Params,
    pub frames: u64,
    pub bytes: u64,
    pub first_ts: u64,
    pub last_ts: u64,
    pub conns: Vec<ConnTruth>,
}

impl Truth {
    pub fn losses(&self) -> (u64, u64) {
        let all = self.conns.iter().flat_map(|c| c.losses.iter());
        let before = all.clone().filter(|l| l.1).count() as u64;
        (before, all.count() as u64 - before)
    }

    /// The totals over the connections, keyed like the per-flow figures.
    pub fn totals(&self) -> Value {
        let sum = |f: &dyn Fn(&ConnTruth) -> u64| self.conns.iter().map(f).sum::<u64>();
        json!({
            "frames": self.frames,
            "requests": sum(&|c| c.req.packets),
            "responses": sum(&|c| c.resp.packets - c.resp.cnp),
            "gap_events": sum(&|c| c.req.gap_events),
            "missing": sum(&|c| c.req.missing),
            "retransmitted": sum(&|c| c.req.retransmitted),
            "duplicates": sum(&|c| c.req.duplicates),
            "retransmission_episodes": sum(&|c| c.req.episodes),
            "psn_seq_err_naks": sum(&|c| c.resp.naks),
            "cnp": sum(&|c| c.resp.cnp),
            "ce": sum(&|c| c.req.ce),
            "ce_without_cnp": sum(&|c| c.req.ce_without_cnp),
            "messages": sum(&|c| c.req.messages),
        })
    }

    /// The truth as JSON: per flow in the words of the `rocescope analyze --json` report (every key present
    /// is a key of the report's flow object, with the value the report must have), and in total.
    pub fn to_json(&self) -> Value {
        let p = &self.params;
        let mut flows = Vec::new();
        for c in &self.conns {
            let r = &c.req;
            flows.push(json!({
                "src": c.requester,
                "dst": c.responder,
                "dest_qp": c.responder_qpn,
                "role": "requester",
                "packets": r.packets,
                "bytes": r.bytes,
                "payload_bytes": r.payload_bytes,
                "retransmitted_bytes": r.retransmitted_bytes,
                "psn": {
                    "first": r.first_psn.unwrap_or(0),
                    "last": psn_add(r.end_psn, PSN_MASK),
                    "gap_events": r.gap_events,
                    "missing": r.missing,
                    "retransmitted": r.retransmitted,
                    "duplicates": r.duplicates,
                    "retransmission_episodes": r.episodes,
                },
                "ecn": {"not_ect": 0, "ect0": r.ect0, "ect1": 0, "ce": r.ce},
                "ce_without_cnp": r.ce_without_cnp,
                "messages": {
                    "count": r.messages,
                    "bytes": r.message_bytes,
                    "min_size": r.message_min,
                    "max_size": r.message_max,
                    "length_mismatches": 0,
                },
                "icrc_bad": 0,
                "malformed": 0,
                "counters": {
                    "out_of_sequence": r.gap_events,
                    "duplicate_request": r.duplicates,
                    "packet_seq_err": c.resp.naks,
                    "rnr_nak_retry_err": 0,
                    "implied_nak_seq_err": 0,
                    "np_ecn_marked_roce_packets": r.ce,
                    "np_cnp_sent": c.resp.cnp,
                    "rx_icrc_encapsulated": 0,
                },
            }));
            let s = &c.resp;
            flows.push(json!({
                "src": c.responder,
                "dst": c.requester,
                "dest_qp": c.requester_qpn,
                "role": "responder",
                "packets": s.packets,
                "bytes": s.bytes,
                "payload_bytes": s.payload_bytes,
                "acks": s.acks,
                "naks": {
                    "psn_seq_err": s.naks,
                    "invalid_request": 0,
                    "remote_access": 0,
                    "remote_op": 0,
                    "invalid_rd_request": 0,
                    "reserved": 0,
                },
                "rnr_naks": 0,
                "read_responses": s.read_responses,
                "atomic_acks": s.atomic_acks,
                "implied_naks": 0,
                "cnp": s.cnp,
                "ecn": {"not_ect": s.cnp, "ect0": s.ect0, "ect1": 0, "ce": 0},
                "ce_without_cnp": 0,
                "icrc_bad": 0,
                "malformed": 0,
            }));
        }
        let (before, after) = self.losses();
        let connections: Vec<Value> = self
            .conns
            .iter()
            .map(|c| {
                json!({
                    "requester": c.requester,
                    "requester_qpn": c.requester_qpn,
                    "responder": c.responder,
                    "responder_qpn": c.responder_qpn,
                    "start_psn": c.start_psn,
                    "losses": c.losses.iter().map(|(psn, before)| json!({
                        "psn": psn,
                        "where": if *before { "before_mirror" } else { "after_mirror" },
                    })).collect::<Vec<_>>(),
                    "unanswered_ce_times": c.unanswered_ce.iter()
                        .map(|t| *t as f64 / 1e9).collect::<Vec<_>>(),
                })
            })
            .collect();
        json!({
            "generator": {
                "frames": p.frames,
                "qps": p.qps,
                "seed": p.seed,
                "loss": p.loss,
                "ce": p.ce,
                "unanswered": p.unanswered,
                "mtu": p.mtu,
                "hosts": p.hosts,
                "cnp_window_us": p.cnp_window_us,
                "losses_before_mirror": before,
                "losses_after_mirror": after,
            },
            "capture": {
                "frames": self.frames,
                "roce_frames": self.frames,
                "other_frames": 0,
                "malformed": 0,
                "icrc_bad": 0,
                "icrc_unverifiable": 0,
                "bytes": self.bytes,
                "first_time": self.first_ts as f64 / 1e9,
                "last_time": self.last_ts as f64 / 1e9,
            },
            "config": {"mtu": p.mtu},
            "flows": flows,
            "totals": self.totals(),
            "connections": connections,
        })
    }
}
