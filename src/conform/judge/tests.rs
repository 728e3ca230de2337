//! Each reaction judged on packets written out by hand: the rule kept, and each way of breaking it.
use std::net::Ipv4Addr;

use super::*;

const A: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const B: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
/// The responder's QP (the requests') and the requester's (the answers').
const QP_B: u32 = 0x12;
const QP_A: u32 = 0x11;
const PSN_SEQ_ERR: u8 = 0x60;

/// Packets, one every 10 us from frame 1: (from A?, opcode, PSN, syndrome or RETH, ...).
struct Wire(Vec<Packet>);

impl Wire {
    fn new() -> Wire {
        Wire(Vec::new())
    }

    fn push(&mut self, from_requester: bool, opcode: u8, psn: u32) -> &mut Packet {
        let n = self.0.len() as u64 + 1;
        let (src, dst, qp) = if from_requester {
            (A, B, QP_B)
        } else {
            (B, A, QP_A)
        };
        self.0.push(Packet {
            frame: n,
            ts: n * 10_000,
            src,
            dst,
            ip_id: n as u16,
            ecn: 2,
            opcode,
            dest_qp: qp,
            psn,
            syndrome: None,
            reth: None,
            payload_len: 0,
            icrc_bad: false,
        });
        self.0.last_mut().unwrap()
    }

    fn req(&mut self, psn: u32) -> &mut Self {
        self.push(true, rc::WRITE_ONLY, psn).payload_len = 1024;
        self
    }

    fn ack(&mut self, psn: u32) -> &mut Self {
        self.push(false, rc::ACKNOWLEDGE, psn).syndrome = Some(0x1f);
        self
    }

    fn nak(&mut self, psn: u32) -> &mut Self {
        self.push(false, rc::ACKNOWLEDGE, psn).syndrome = Some(PSN_SEQ_ERR);
        self
    }
}

/// The action `inject` logs for `psn`, decided at `at_frame`'s time less 1 us.
fn action(w: &Wire, at_frame: u64, psn: u32, from_requester: bool, what: &str) -> Action {
    let (src, dst, qp) = if from_requester {
        (A, B, QP_B)
    } else {
        (B, A, QP_A)
    };
    Action {
        ts: at_frame * 10_000 - 1000,
        rule: 0,
        text: String::new(),
        action: what.into(),
        src,
        dst,
        ip_id: 0,
        dest_qp: qp,
        psn,
        opcode: w.0.first().map_or(0, |p| p.opcode),
        class: String::new(),
    }
}

#[test]
fn a_lost_request_draws_one_nak_then_go_back_n() {
    // PSN 3 dropped before frame 4: 4 reveals the gap, B NAKs 3 once, A resends 3, 4.
    let mut w = Wire::new();
    w.req(0).req(1).req(2).req(4).nak(3).req(3).req(4).ack(4);
    let v = judge(
        Reaction::RequestLost,
        &action(&w, 4, 3, true, "drop"),
        &w.0,
        None,
    );
    assert_eq!(v.outcome, Outcome::Pass, "{}", v.seen);
    assert_eq!(v.evidence, [4, 5, 6]);
    assert_eq!(v.latencies_us["loss_to_nak"], 10.0);
    assert_eq!(v.latencies_us["nak_to_resend"], 10.0);

    // No NAK: the resend came from the timer.
    let mut w = Wire::new();
    w.req(0).req(1).req(2).req(4).req(3).req(4).ack(4);
    let v = judge(
        Reaction::RequestLost,
        &action(&w, 4, 3, true, "drop"),
        &w.0,
        None,
    );
    assert_eq!(v.outcome, Outcome::Fail);
    assert!(
        v.seen.starts_with("no PSN sequence error NAK for PSN 3"),
        "{}",
        v.seen
    );

    // A slow responder: the requester's timer goes back to 1 (its oldest unacknowledged) before the NAK.
    let mut w = Wire::new();
    w.req(0)
        .req(1)
        .req(2)
        .req(4)
        .ack(0)
        .req(1)
        .req(2)
        .req(3)
        .nak(3)
        .req(4)
        .ack(4);
    let v = judge(
        Reaction::RequestLost,
        &action(&w, 4, 3, true, "drop"),
        &w.0,
        None,
    );
    assert_eq!(v.outcome, Outcome::Pass, "{}", v.seen);
    assert!(
        v.seen.ends_with(
            "the requester's timer went back to PSN 1 first (frame 6, the NAK behind it)"
        ),
        "{}",
        v.seen
    );
    assert_eq!(v.latencies_us["fault_to_timer_resend"], 21.0);

    // Two NAKs for one sequence error.
    let mut w = Wire::new();
    w.req(0)
        .req(1)
        .req(2)
        .req(4)
        .nak(3)
        .req(5)
        .nak(3)
        .req(3)
        .req(4);
    let v = judge(
        Reaction::RequestLost,
        &action(&w, 4, 3, true, "drop"),
        &w.0,
        None,
    );
    assert_eq!(v.outcome, Outcome::Fail);
    assert!(
        v.seen.starts_with("2 PSN sequence error NAKs"),
        "{}",
        v.seen
    );

    // Not go-back-N: 3 resent alone, then on to 6.
    let mut w = Wire::new();
    w.req(0).req(1).req(2).req(4).req(5).nak(3).req(3).req(6);
    let v = judge(
        Reaction::RequestLost,
        &action(&w, 4, 3, true, "drop"),
        &w.0,
        None,
    );
    assert_eq!(v.outcome, Outcome::Fail);
    assert!(v.seen.contains("went on at PSN 6, not 4"), "{}", v.seen);

    // Never resent.
    let mut w = Wire::new();
    w.req(0).req(1).req(2).req(4).nak(3);
    let v = judge(
        Reaction::RequestLost,
        &action(&w, 4, 3, true, "drop"),
        &w.0,
        None,
    );
    assert_eq!(
        (v.outcome, v.seen.as_str()),
        (Outcome::Fail, "PSN 3 was never sent again")
    );
}

#[test]
fn a_corrupted_request_is_dropped_silently() {
    let mut w = Wire::new();
    w.req(0).req(1).req(2);
    w.req(3).0.last_mut().unwrap().icrc_bad = true;
    w.req(4).nak(3).req(3).req(4).ack(4);
    let v = judge(
        Reaction::CorruptRequest,
        &action(&w, 4, 3, true, "corrupt"),
        &w.0,
        None,
    );
    assert_eq!(v.outcome, Outcome::Pass, "{}", v.seen);
    assert_eq!(v.evidence, [4, 5, 6, 7]);

    // Acknowledged although its ICRC was wrong.
    let mut w = Wire::new();
    w.req(0).req(1).req(2);
    w.req(3).0.last_mut().unwrap().icrc_bad = true;
    w.ack(3).req(4).ack(4);
    let v = judge(
        Reaction::CorruptRequest,
        &action(&w, 4, 3, true, "corrupt"),
        &w.0,
        None,
    );
    assert_eq!(v.outcome, Outcome::Fail);
    assert!(
        v.seen
            .starts_with("the responder acknowledged PSN 3 (frame 5)"),
        "{}",
        v.seen
    );

    // The packet went out whole: nothing was tested.
    let mut w = Wire::new();
    w.req(0).req(1).req(2).req(3).ack(3);
    let v = judge(
        Reaction::CorruptRequest,
        &action(&w, 4, 3, true, "corrupt"),
        &w.0,
        None,
    );
    assert_eq!(v.outcome, Outcome::Fail);
    assert!(v.seen.contains("with a right ICRC"), "{}", v.seen);
}

#[test]
fn a_lost_read_response_is_asked_for_again_from_its_psn() {
    // A READ of 4096 bytes at PSN 10 (MTU 1024: responses 10-13); 12 lost; 13 reveals it.
    let read = |w: &mut Wire, psn: u32, va: u64, len: u32| {
        w.push(true, rc::READ_REQUEST, psn).reth = Some((va, len));
    };
    let resp = |w: &mut Wire, op: u8, psn: u32| {
        w.push(false, op, psn).payload_len = 1024;
    };
    let mut w = Wire::new();
    read(&mut w, 10, 0x1000, 4096);
    resp(&mut w, rc::READ_RESPONSE_FIRST, 10);
    resp(&mut w, rc::READ_RESPONSE_MIDDLE, 11);
    resp(&mut w, rc::READ_RESPONSE_LAST, 13);
    read(&mut w, 12, 0x1800, 2048);
    let v = judge(
        Reaction::ReadResponseLost,
        &action(&w, 4, 12, false, "drop"),
        &w.0,
        None,
    );
    assert_eq!(v.outcome, Outcome::Pass, "{}", v.seen);
    assert_eq!(v.evidence, [1, 5]);
    assert_eq!(v.latencies_us["gap_to_request"], 10.0);

    // Asked again whole, from the READ's own PSN (the requester had not taken 10 and 11 yet): it covers 12.
    w.0.pop();
    read(&mut w, 10, 0x1000, 4096);
    let v = judge(
        Reaction::ReadResponseLost,
        &action(&w, 4, 12, false, "drop"),
        &w.0,
        None,
    );
    assert_eq!(v.outcome, Outcome::Pass, "{}", v.seen);
    assert!(
        v.seen
            .contains("from PSN 10, before the missing response's PSN 12"),
        "{}",
        v.seen
    );

    // From PSN 12 but with the READ's own VA: the responder would send the wrong bytes.
    w.0.pop();
    read(&mut w, 12, 0x1000, 4096);
    let v = judge(
        Reaction::ReadResponseLost,
        &action(&w, 4, 12, false, "drop"),
        &w.0,
        None,
    );
    assert_eq!(v.outcome, Outcome::Fail);
    assert!(
        v.seen.ends_with("from PSN 12 it is VA 0x1800, 2048 bytes"),
        "{}",
        v.seen
    );
}

#[test]
fn a_lost_ack_is_covered() {
    // The ACK for 0 dropped (not on the cable): the one for 1 covers it.
    let mut w = Wire::new();
    w.req(0).req(1).ack(1);
    let v = judge(
        Reaction::AckLost,
        &action(&w, 3, 0, false, "drop"),
        &w.0,
        None,
    );
    assert_eq!(v.outcome, Outcome::Pass, "{}", v.seen);
    assert_eq!(v.evidence, [3]);
    assert_eq!(v.latencies_us["loss_to_covering_ack"], 1.0);

    // The only ACK lost: the timer resends 0, and the resend is acknowledged.
    let mut w = Wire::new();
    w.req(0).req(0).ack(0);
    let v = judge(
        Reaction::AckLost,
        &action(&w, 2, 0, false, "drop"),
        &w.0,
        None,
    );
    assert_eq!(v.outcome, Outcome::Pass, "{}", v.seen);
    assert!(
        v.seen.starts_with("the requester resent PSN 0"),
        "{}",
        v.seen
    );

    // Resent and never answered.
    let mut w = Wire::new();
    w.req(0).req(0);
    let v = judge(
        Reaction::AckLost,
        &action(&w, 2, 0, false, "drop"),
        &w.0,
        None,
    );
    assert_eq!(v.outcome, Outcome::Fail);
}

#[test]
fn a_ce_mark_draws_a_cnp_or_is_not_supported() {
    let mut w = Wire::new();
    w.req(0);
    w.req(1).0.last_mut().unwrap().ecn = 3;
    w.ack(1);
    let v = judge(
        Reaction::CeMarked,
        &action(&w, 2, 1, true, "ce"),
        &w.0,
        None,
    );
    assert_eq!(v.outcome, Outcome::NotSupported, "{}", v.seen);
    w.push(false, CNP, 0);
    let v = judge(
        Reaction::CeMarked,
        &action(&w, 2, 1, true, "ce"),
        &w.0,
        None,
    );
    assert_eq!(v.outcome, Outcome::Pass, "{}", v.seen);
    assert_eq!(v.latencies_us["ce_to_cnp"], 20.0);
    assert_eq!(v.evidence, [2, 4]);
}

#[test]
fn a_hostile_read_neither_overflows_nor_passes() {
    // A READ and its resend 2^23 - 1 PSNs apart, with 64 KiB responses: the advance passes 32 bits.
    let mut w = Wire::new();
    w.push(true, rc::READ_REQUEST, 0).reth = Some((0, u32::MAX));
    w.push(false, rc::READ_RESPONSE_FIRST, 0).payload_len = 65_535;
    w.push(true, rc::READ_REQUEST, 0x7f_ffff).reth = Some((0, u32::MAX));
    let v = judge(
        Reaction::ReadResponseLost,
        &action(&w, 2, 0x7f_ffff, false, "drop"),
        &w.0,
        None,
    );
    assert_eq!(v.outcome, Outcome::Fail, "{}", v.seen);
}

/// Every ACK lost, the QP at timeout 14 (67.1 ms) and retry count 3: requests 0-3, then PSN 0 three more times
/// on the timer (with the others behind it), each `gaps_ms` after the one before.
fn timed_out(gaps_ms: &[f64]) -> (Wire, Action) {
    let mut w = Wire::new();
    w.req(0).req(1).req(2).req(3);
    let first = w.0[0].ts;
    let mut t = first;
    for gap in gaps_ms {
        t += (gap * 1e6) as u64;
        for psn in 0..4 {
            w.req(psn);
            w.0.last_mut().unwrap().ts = t + u64::from(psn) * 10_000;
        }
    }
    // The first ACK, dropped before it reached the wire: decided just after the first request.
    let mut a = action(&w, 1, 0, false, "drop");
    a.ts = first + 5000;
    a.opcode = rc::ACKNOWLEDGE;
    (w, a)
}

const TIMER: QpSettings = QpSettings {
    timeout: 14,
    retry_count: 3,
};

#[test]
fn the_timer_resends_its_retry_count_of_times() {
    // rxe at HZ 250: 17 ticks asked, from 64 to 68 ms each (66.9 ms a sixteenth early is on time); the
    // first send held 22 ms in the injector after the NIC sent it: its resend 44.6 ms after it on the wire
    let (w, a) = timed_out(&[44.6, 66.9, 71.8]);
    let v = judge(Reaction::AckTimeout, &a, &w.0, Some(TIMER));
    assert_eq!(v.outcome, Outcome::Pass, "{}", v.seen);
    assert_eq!(v.evidence, vec![1, 5, 9, 13]);
    assert_eq!(
        (
            v.latencies_us["timeout_resend"],
            v.latencies_us["timeout_resend_max"]
        ),
        (66_900.0, 71_800.0)
    );
    assert!(
        v.seen
            .starts_with("PSN 0 sent 4 times (3 resends, 66.9-71.8 ms apart"),
        "{}",
        v.seen
    );
}

#[test]
fn a_timer_too_soon_or_retries_miscounted_fail() {
    // 60 ms between resends: more than a sixteenth before 67.1 ms
    let (w, a) = timed_out(&[67.2, 60.0, 67.2]);
    let v = judge(Reaction::AckTimeout, &a, &w.0, Some(TIMER));
    assert_eq!(v.outcome, Outcome::Fail);
    assert!(
        v.seen
            .ends_with("a resend 60.0 ms after the one before, sooner than the timeout"),
        "{}",
        v.seen
    );
    // Resent twice, or four times, where the retry count is 3
    for gaps in [&[67.2, 67.2][..], &[67.2, 67.2, 67.2, 67.2][..]] {
        let (w, a) = timed_out(gaps);
        let v = judge(Reaction::AckTimeout, &a, &w.0, Some(TIMER));
        assert_eq!(v.outcome, Outcome::Fail, "{}", v.seen);
        assert!(
            v.seen.ends_with(&format!(
                ": {} resends where the retry count allows 3 before the QP gives up",
                gaps.len()
            )),
            "{}",
            v.seen
        );
    }
    // Without the QP's settings there is nothing to hold the timer to
    let (w, a) = timed_out(&[67.2, 67.2, 67.2]);
    assert_eq!(
        judge(Reaction::AckTimeout, &a, &w.0, None).outcome,
        Outcome::Fail
    );
}

/// No receive posted, the responder's RNR timer 28 (163.84 ms by IBTA's table) and the requester's RNR retry
/// count 3: a SEND (PSN 7), then for each wait in `waits_ms` an RNR NAK of it 30 us later and the SEND again
/// that wait after the NAK; the last SEND's NAK too. `timer` is the timer the NAKs carry.
fn rnr_naked(waits_ms: &[f64], timer: u8) -> Wire {
    let mut w = Wire::new();
    w.push(true, rc::SEND_ONLY, 7);
    let mut t = w.0[0].ts;
    for wait in waits_ms.iter().map(Some).chain([None]) {
        t += 30_000;
        w.push(false, rc::ACKNOWLEDGE, 7).syndrome = Some(0x20 | timer);
        w.0.last_mut().unwrap().ts = t;
        if let Some(wait) = wait {
            t += (wait * 1e6) as u64;
            w.push(true, rc::SEND_ONLY, 7);
            w.0.last_mut().unwrap().ts = t;
        }
    }
    w
}

const RNR: RnrSettings = RnrSettings {
    min_rnr_timer: 28,
    rnr_retry: 3,
};

#[test]
fn the_rnr_timer_is_waited_and_the_rnr_retry_count_kept() {
    // rxe at HZ 250: 40 ticks for 163.84 ms, the first up to a tick short: 156.1 ms is within a sixteenth
    let w = rnr_naked(&[156.1, 160.0, 163.9], 28);
    let v = rnr_retry(&w.0, RNR);
    assert_eq!(v.outcome, Outcome::Pass, "{}", v.seen);
    assert_eq!(v.evidence, vec![2, 3, 4, 5, 6, 7, 8]);
    assert_eq!(
        (
            v.latencies_us["rnr_nak_to_retry"],
            v.latencies_us["rnr_nak_to_retry_max"]
        ),
        (156_100.0, 163_900.0)
    );
    assert_eq!(
        v.seen,
        "4 RNR NAKs for PSN 7 with timer 28 (163.84 ms), 3 retries 156.10-163.90 ms after their NAK, then \
         nothing: the QP gave up"
    );
    // with an RNR retry count of 7 the requester retries for ever: no count to hold it to
    let v = rnr_retry(
        &w.0,
        RnrSettings {
            rnr_retry: 7,
            ..RNR
        },
    );
    assert_eq!(v.outcome, Outcome::Pass, "{}", v.seen);
}

#[test]
fn an_rnr_retry_too_soon_miscounted_or_a_wrong_timer_fails() {
    // 153 ms: more than a sixteenth short of 163.84 ms (153.6 ms is the least on time)
    let v = rnr_retry(&rnr_naked(&[163.9, 153.0, 163.9], 28).0, RNR);
    assert_eq!(v.outcome, Outcome::Fail);
    assert_eq!(
        v.seen,
        "PSN 7 sent again (frame 5) 153.00 ms after its RNR NAK (frame 4), sooner than its timer 28 (163.84 ms)"
    );
    // a later PSN sent in the timer's time (rxe in the lab, until it has taken the NAK in) is not judged
    let mut w = rnr_naked(&[163.9, 163.9, 163.9], 28);
    let at = w.0[1].ts + 1_400_000;
    w.0.insert(2, w.0[0]);
    w.0[2].psn = 8;
    w.0[2].ts = at;
    w.0.iter_mut()
        .enumerate()
        .for_each(|(i, p)| p.frame = i as u64 + 1);
    let v = rnr_retry(&w.0, RNR);
    assert_eq!(v.outcome, Outcome::Pass, "{}", v.seen);
    for waits in [&[163.9, 163.9][..], &[163.9; 4][..]] {
        let v = rnr_retry(&rnr_naked(waits, 28).0, RNR);
        assert_eq!(v.outcome, Outcome::Fail);
        assert!(
            v.seen.ends_with(&format!(
                ": {} retries where the RNR retry count allows 3 before the QP gives up",
                waits.len()
            )),
            "{}",
            v.seen
        );
    }
    // the responder was given 28 and its NAKs say 12 (0.64 ms)
    let v = rnr_retry(&rnr_naked(&[163.9; 3], 12).0, RNR);
    assert_eq!(v.outcome, Outcome::Fail);
    assert_eq!(
        v.seen,
        "the RNR NAK (frame 2) carries timer 12 where the responder was given 28"
    );
    // a receive was there: ACKs, no RNR NAK
    let mut w = Wire::new();
    w.req(0).ack(0);
    assert_eq!(rnr_retry(&w.0, RNR).outcome, Outcome::Fail);
}

#[test]
fn a_cnp_is_held_to_what_the_sender_did_then() {
    let found = || {
        let mut w = Wire::new();
        w.req(0).push(true, rc::WRITE_ONLY, 1).ecn = 3;
        w.push(false, CNP, 0);
        let a = action(&w, 2, 1, true, "ce");
        judge(Reaction::CeMarked, &a, &w.0, None)
    };
    assert_eq!(found().outcome, Outcome::Pass);
    let r = |measured, no_reduction, median| SenderReaction {
        cnps: 2,
        measured,
        no_reduction,
        median,
        time_max: Some(34_000),
    };
    let v = with_rate_reaction(found(), Some(r(2, 1, Some(0.25))));
    assert_eq!(v.outcome, Outcome::Pass);
    assert!(
        v.seen
            .ends_with("; the sender's rate fell by 25 % (the median of 2 CNPs measured)")
    );
    assert_eq!(v.latencies_us["cnp_to_reduced_rate"], 34.0);
    let v = with_rate_reaction(found(), Some(r(2, 2, Some(0.0))));
    assert_eq!(v.outcome, Outcome::Fail);
    // too few packets around the CNP, or no CNP tied to the sender: the CNP's pass stands, said so
    let v = with_rate_reaction(found(), Some(r(0, 0, None)));
    assert_eq!(v.outcome, Outcome::Pass);
    assert!(
        v.seen
            .ends_with("not measurable (too few packets around the CNP)")
    );
    assert!(!v.latencies_us.contains_key("cnp_to_reduced_rate"));
    let v = with_rate_reaction(found(), None);
    assert_eq!(v.outcome, Outcome::Pass);
    assert!(v.seen.ends_with("; the analysis tied no CNP to the sender"));
}
