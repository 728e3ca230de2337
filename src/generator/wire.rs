//! What a run puts on the wire when nothing is lost: per QP pair, the request flow and the reply flow with
//! their PSN ranges, packets and opcodes, as `rocescope analyze` counts them.

use std::collections::BTreeMap;

use super::records::{Flow, Op, Role};
use parsers::psn::{add_wide as psn_add, packets as packets_per_message};

/// The opcodes of `n` messages of `ppm` packets each: `PREFIX_ONLY`, or `_FIRST`, `_MIDDLE`, `_LAST`
/// (`_LAST` and `_ONLY` with `last_suffix`, e.g. `_IMM`).
fn segments(prefix: &str, n: u64, ppm: u64, last_suffix: &str) -> BTreeMap<String, u64> {
    let name = |s: &str| format!("{prefix}_{s}");
    let mut m = BTreeMap::new();
    if ppm == 1 {
        m.insert(name(&format!("ONLY{last_suffix}")), n);
    } else {
        m.insert(name("FIRST"), n);
        if ppm > 2 {
            m.insert(name("MIDDLE"), n * (ppm - 2));
        }
        m.insert(name(&format!("LAST{last_suffix}")), n);
    }
    m
}

/// A QP pair as the wire sees it.
pub struct PairIds<'a> {
    pub requester_ip: Option<&'a str>,
    pub responder_ip: Option<&'a str>,
    pub requester_qpn: u32,
    pub responder_qpn: u32,
    /// The first PSN of the requester's requests.
    pub requester_psn: u32,
}

/// The two flows of QP pair `p` after `n` messages of `size32` bytes at path MTU `mtu`: the requests, and
/// the ACKs / responses.
pub fn pair_flows(op: Op, size32: u32, mtu: u32, p: &PairIds, n: u64) -> [Flow; 2] {
    let ppm = if op.is_atomic() {
        1
    } else {
        packets_per_message(u64::from(size32), mtu)
    };
    let total_psns = n * ppm;
    let (req_carries, reply_carries) = carries(op);
    let (reply_first, reply_packets) = match op {
        // an ACK at least for each message's last packet (rxe sets AckReq there); coalescing may drop some
        Op::Write | Op::WriteImm | Op::Send => (psn_add(p.requester_psn, ppm - 1), n),
        Op::Read | Op::FetchAdd | Op::CmpSwap => (p.requester_psn, total_psns),
    };
    let (req_opcodes, reply_opcodes) = opcodes(op, n, ppm);
    [
        Flow {
            src: p.requester_ip.map(str::to_string),
            dst: p.responder_ip.map(str::to_string),
            dest_qp: p.responder_qpn,
            role: Role::Requester,
            carries: req_carries,
            opcodes: req_opcodes,
            psn_first: p.requester_psn,
            // READ requests advance the PSN by the response packets they ask for
            psn_last: psn_add(p.requester_psn, total_psns - 1),
            packets: if op == Op::Read { n } else { total_psns },
            // the analyzer counts SEND/WRITE messages (FIRST..LAST, ONLY), not READs or atomics
            messages: if matches!(op, Op::Write | Op::WriteImm | Op::Send) {
                n
            } else {
                0
            },
        },
        Flow {
            src: p.responder_ip.map(str::to_string),
            dst: p.requester_ip.map(str::to_string),
            dest_qp: p.requester_qpn,
            role: Role::Responder,
            carries: reply_carries,
            opcodes: reply_opcodes,
            psn_first: reply_first,
            psn_last: psn_add(p.requester_psn, total_psns - 1),
            packets: reply_packets,
            messages: 0,
        },
    ]
}

/// What the requests and the replies of `op` carry, in words.
fn carries(op: Op) -> (&'static str, &'static str) {
    match op {
        Op::Write => ("RDMA WRITE requests", "ACKs"),
        Op::WriteImm => ("RDMA WRITE with immediate requests", "ACKs"),
        Op::Send => ("SEND requests", "ACKs"),
        Op::Read => ("RDMA READ requests", "RDMA READ responses"),
        Op::FetchAdd => ("FETCH_ADD requests", "ATOMIC_ACKNOWLEDGEs"),
        Op::CmpSwap => ("COMPARE_SWAP requests", "ATOMIC_ACKNOWLEDGEs"),
    }
}

/// The opcodes of the requests and of the replies of `n` messages of `ppm` packets (none for ACKs).
fn opcodes(op: Op, n: u64, ppm: u64) -> (BTreeMap<String, u64>, BTreeMap<String, u64>) {
    let one = |name: &str| BTreeMap::from([(name.to_string(), n)]);
    let requests = match op {
        Op::Write => segments("RC_WRITE", n, ppm, ""),
        Op::WriteImm => segments("RC_WRITE", n, ppm, "_IMM"),
        Op::Send => segments("RC_SEND", n, ppm, ""),
        Op::Read => one("RC_READ_REQUEST"),
        Op::FetchAdd => one("RC_FETCH_ADD"),
        Op::CmpSwap => one("RC_COMPARE_SWAP"),
    };
    let replies = match op {
        Op::Write | Op::WriteImm | Op::Send => BTreeMap::new(),
        Op::Read => segments("RC_READ_RESPONSE", n, ppm, ""),
        Op::FetchAdd | Op::CmpSwap => one("RC_ATOMIC_ACKNOWLEDGE"),
    };
    (requests, replies)
}

#[cfg(test)]
mod tests {
    use super::segments;

    #[test]
    fn opcodes_of_segmented_messages() {
        let m = segments("RC_WRITE", 32, 4, "");
        assert_eq!(m.len(), 3);
        assert_eq!(
            (
                m["RC_WRITE_FIRST"],
                m["RC_WRITE_MIDDLE"],
                m["RC_WRITE_LAST"]
            ),
            (32, 64, 32)
        );
        let m = segments("RC_SEND", 8, 2, "");
        assert_eq!(m.len(), 2);
        assert_eq!(
            segments("RC_READ_RESPONSE", 5, 1, "")["RC_READ_RESPONSE_ONLY"],
            5
        );
        // IBTA opcodes 0x09 and 0x0B: the immediate rides on the last (or only) packet
        let m = segments("RC_WRITE", 3, 2, "_IMM");
        assert_eq!((m["RC_WRITE_FIRST"], m["RC_WRITE_LAST_IMM"]), (3, 3));
        assert_eq!(segments("RC_WRITE", 7, 1, "_IMM")["RC_WRITE_ONLY_IMM"], 7);
    }
}
