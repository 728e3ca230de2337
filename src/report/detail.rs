//! The figures of an event by name, for the JSON's `detail`: what the one-line message is made of, so that a
//! script need not parse it.
use serde_json::{Map, Value, json};

use crate::analysis::events::{Kind, ReadMismatch};

fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

fn us_to_s(us: u64) -> f64 {
    us as f64 / 1e6
}

/// The priorities of a bit mask, in order.
fn bits(mask: u8) -> Vec<u8> {
    (0..8).filter(|p| mask & (1 << p) != 0).collect()
}

/// `detail` of an event of kind `k`.
pub fn of(k: &Kind) -> Map<String, Value> {
    let v = match *k {
        Kind::PsnGap { missing, after } => json!({"after": after, "missing": missing}),
        Kind::Nak { code, psn } => json!({"psn": psn, "code": code.name()}),
        Kind::GoBackN {
            from,
            behind,
            after_nak_us,
            after_progress_us,
        } => json!({"from": from, "behind": behind,
                     "after_nak_s": after_nak_us.map(us_to_s),
                     "after_progress_s": us_to_s(after_progress_us)}),
        Kind::RnrNak { psn, timer_us } => {
            json!({"psn": psn, "timer_s": us_to_s(u64::from(timer_us))})
        }
        Kind::RnrStorm { count, span_us } => json!({"count": count, "span_s": us_to_s(span_us)}),
        Kind::ImpliedNak { expected, got } => json!({"expected": expected, "got": got}),
        Kind::Reordered {
            psn,
            highest,
            depth,
            response,
        } => json!({"psn": psn, "highest": highest, "depth": depth,
                     "of": if response { "response" } else { "request" }}),
        Kind::CeWithoutCnp { count } => json!({"count": count}),
        Kind::CnpIgnored {
            cnps,
            measured,
            no_reduction,
        } => json!({"cnps": cnps, "measured": measured, "no_reduction": no_reduction}),
        Kind::BadIcrc { expected, found } => json!({"expected": expected, "found": found}),
        Kind::Malformed(m) => json!({"layer": m.layer.name(), "reason": m.to_string()}),
        Kind::LengthMismatch { dma_len, payload } => {
            json!({"dma_len": dma_len, "payload": payload})
        }
        Kind::Pause {
            priority,
            frames,
            pause_us,
        } => json!({"priority": priority, "frames": frames, "pause_s": us_to_s(pause_us)}),
        Kind::PauseStorm {
            priority,
            duration_us,
            xoff,
        } => json!({"priority": priority, "duration_s": us_to_s(duration_us), "xoff": xoff}),
        Kind::PauseOnIdlePriority {
            priority,
            xoff,
            pause_us,
            carried,
        } => json!({"priority": priority, "xoff": xoff, "pause_s": us_to_s(pause_us),
                     "roce_priorities": bits(carried)}),
        Kind::RoceUnprotected {
            priority,
            dscp,
            paused,
        } => json!({"priority": priority, "dscp": dscp, "paused_priorities": bits(paused)}),
        Kind::Stall {
            psn,
            outstanding,
            since_ns,
            waited_us,
            at_end,
        } => json!({"psn": psn, "outstanding": outstanding, "since": secs(since_ns),
                     "waited_s": us_to_s(waited_us), "at_end": at_end}),
        Kind::NoResponse {
            requests,
            first_psn,
            waited_us,
        } => json!({"requests": requests, "first_psn": first_psn, "waited_s": us_to_s(waited_us)}),
        Kind::TimeoutRetransmission {
            psn,
            interval_us,
            timeout_exp,
            retry,
        } => {
            json!({"psn": psn, "interval_s": us_to_s(interval_us), "timeout_exponent": timeout_exp,
                     "retry": retry})
        }
        Kind::RetryExhausted {
            psn,
            resends,
            silent_us,
        } => json!({"psn": psn, "resends": resends, "silent_s": us_to_s(silent_us)}),
        Kind::RnrExhausted {
            psn,
            naks,
            silent_us,
        } => json!({"psn": psn, "rnr_naks": naks, "silent_s": us_to_s(silent_us)}),
        Kind::AckOutOfWindow { psn, lo, hi } => {
            json!({"psn": psn, "window_first": lo, "window_last": hi})
        }
        Kind::PsnReuse {
            psn,
            read_psn,
            read_psns,
        } => json!({"psn": psn, "read_psn": read_psn, "read_psns": read_psns}),
        Kind::MsnRegression { msn, previous } => json!({"msn": msn, "previous": previous}),
        Kind::ReadResponseMismatch { read_psn, what } => match what {
            ReadMismatch::PsnOutside { psn, psns } => {
                json!({"read_psn": read_psn, "problem": "psn_outside", "psn": psn, "read_psns": psns})
            }
            ReadMismatch::Length { got, dma_len } => {
                json!({"read_psn": read_psn, "problem": "length", "bytes": got, "dma_len": dma_len})
            }
            ReadMismatch::Packets { got, expected, mtu } => json!({"read_psn": read_psn,
                "problem": "packets", "packets": got, "expected": expected, "mtu": mtu}),
        },
        Kind::NewEpoch {
            psn,
            expected,
            idle_us,
        } => json!({"psn": psn, "expected": expected, "idle_s": us_to_s(idle_us)}),
        Kind::Connection {
            connection,
            qpns,
            mtu,
        } => json!({"connection": connection, "qpns": qpns, "mtu": mtu}),
        Kind::Disconnect { connection, qpns } => json!({"connection": connection, "qpns": qpns}),
        Kind::CmReject { connection, reason } => json!({"connection": connection, "reason": reason,
            "name": parsers::cm::reject_reason_name(reason),
            "meaning": crate::analysis::connections::reject_meaning(reason)}),
        Kind::CmTimeout {
            connection,
            waiting_for,
            sent,
            waited_us,
        } => json!({"connection": connection, "waiting_for": waiting_for, "sent": sent,
                     "waited_s": us_to_s(waited_us)}),
        Kind::UnexpectedQp { qpn, connection } => json!({"qpn": qpn, "connection": connection}),
        Kind::StartPsnMismatch {
            connection,
            psn,
            announced,
        } => json!({"connection": connection, "psn": psn, "announced": announced}),
    };
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}
