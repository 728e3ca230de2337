//! The judge: what a capture shows after one injected action, held against the rule of the reliable
//! service (IBTA Vol. 1, chapter 9.7) the NICs must follow, with the latencies of their reactions and the
//! frames that show them. Pure: packets and an action in, a verdict out.
use std::collections::BTreeMap;

use parsers::aeth::{NakCode, Syndrome};
use parsers::opcode::{CNP, Opcode, rc};
use parsers::psn::diff;
use serde::Serialize;

use super::wire::{Action, Packet, SenderReaction};

/// The reaction a fault calls for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reaction {
    /// A request lost: one PSN sequence error NAK for the PSN the responder expects, then the requester
    /// goes back to that PSN (go-back-N).
    RequestLost,
    /// A request with a bad ICRC: the responder drops it silently, then as for a lost request.
    CorruptRequest,
    /// A READ response lost: the requester asks again from the missing response's PSN, the VA and length
    /// advanced to it.
    ReadResponseLost,
    /// An ACK lost: a later ACK covers it (ACKs are cumulative), or the requester's timer resends and the
    /// responder acknowledges the resend.
    AckLost,
    /// A request marked CE: the responder sends a CNP toward its sender.
    CeMarked,
    /// Every answer lost: the requester's local ACK timer resends the oldest request no sooner than 4.096 µs
    /// × 2^timeout apart, its retry count of times, and then gives up.
    AckTimeout,
    /// The responder has no receive posted: it sends RNR NAKs carrying its RNR timer, and the requester
    /// waits that long before each retry, its RNR retry count of times, and then gives up.
    RnrRetry,
}

/// What the responder's RNR NAKs must carry and how often the requester may retry on them (`gen loopback
/// --min-rnr-timer`, `--rnr-retry`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RnrSettings {
    /// The responder's RNR NAK timer, IBTA's 5-bit encoding.
    pub min_rnr_timer: u8,
    /// The requester's RNR retry count (7: for ever).
    pub rnr_retry: u8,
}

/// What the requester's QP was set up with (`gen --qp-timeout`, `--retry-count`), for the reactions that hold
/// its timer to them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct QpSettings {
    /// The local ACK timeout exponent: 4.096 µs × 2^timeout.
    pub timeout: u8,
    pub retry_count: u8,
}

impl Reaction {
    /// The rule, as the report states it.
    pub fn rule(self) -> &'static str {
        match self {
            Reaction::RequestLost => {
                "the responder sends one PSN sequence error NAK for the PSN it expects; the requester resends from that PSN (go-back-N)"
            }
            Reaction::CorruptRequest => {
                "a packet with a bad ICRC is dropped silently (no ACK, no NAK for it); the next request draws the NAK of a lost one"
            }
            Reaction::ReadResponseLost => {
                "the requester asks again from the first missing response's PSN, with the VA and length advanced to it"
            }
            Reaction::AckLost => {
                "a later ACK covers the lost one, or the requester's timer resends and the responder acknowledges the resend"
            }
            Reaction::CeMarked => {
                "the responder sends a CNP toward the sender of a CE-marked packet, and the sender slows down"
            }
            Reaction::AckTimeout => {
                "unanswered, the requester resends on its local ACK timer no sooner than 4.096 us x 2^timeout apart, retry-count times, then gives up"
            }
            Reaction::RnrRetry => {
                "the responder's RNR NAK carries its RNR timer; the requester retries no sooner than that timer after it, rnr-retry times, then gives up"
            }
        }
    }

    /// Where the rule is written.
    pub fn cite(self) -> &'static str {
        match self {
            Reaction::RequestLost | Reaction::CorruptRequest => {
                "IBTA Vol. 1 9.7.4 (responder: PSN checks, NAK) and 9.7.5 (requester: retry)"
            }
            Reaction::ReadResponseLost => {
                "IBTA Vol. 1 9.7.5.1.4 (READ retried from the missing response)"
            }
            Reaction::AckLost => "IBTA Vol. 1 9.7.5 (ACKs are cumulative; local ACK timeout)",
            Reaction::CeMarked => "IBTA Vol. 1 Annex A17 (RoCEv2 congestion management)",
            Reaction::AckTimeout => {
                "IBTA Vol. 1 9.7.6.1.3 (local ACK timeout) and 9.7.6.1.4 (retry count)"
            }
            Reaction::RnrRetry => {
                "IBTA Vol. 1 9.7.5.2.8 (RNR NAK), 9.7.6.1.5 (RNR timer) and 9.7.6.1.4 (RNR retry count)"
            }
        }
    }
}

/// What the judge found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Pass,
    Fail,
    /// The NIC does not do this at all (the capture shows none of it anywhere).
    NotSupported,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    pub reaction: Reaction,
    pub outcome: Outcome,
    /// What was seen, in words.
    pub seen: String,
    /// The reactions' latencies, microseconds, by name (`loss_to_nak`, `nak_to_resend`, ...).
    pub latencies_us: BTreeMap<&'static str, f64>,
    /// The frames that show it.
    pub evidence: Vec<u64>,
}

impl Verdict {
    fn new(reaction: Reaction, outcome: Outcome, seen: String, evidence: Vec<u64>) -> Verdict {
        Verdict {
            reaction,
            outcome,
            seen,
            latencies_us: BTreeMap::new(),
            evidence,
        }
    }

    fn latency(self, name: &'static str, from: &Packet, to: &Packet) -> Verdict {
        self.latency_from_ts(name, from.ts, to)
    }

    fn latency_from_ts(mut self, name: &'static str, from: u64, to: &Packet) -> Verdict {
        self.latencies_us
            .insert(name, to.ts.saturating_sub(from) as f64 / 1000.0);
        self
    }
}

/// The two directions of the action's connection: requests (requester → responder) and their answers.
struct Connection<'p> {
    packets: &'p [Packet],
    requester: std::net::Ipv4Addr,
    responder: std::net::Ipv4Addr,
    /// The responder's QP, that the requests name (`None`: any, where the action was an answer, which names
    /// the requester's QP).
    qp: Option<u32>,
}

impl<'p> Connection<'p> {
    /// The connection of an action on a request (from the requester to the responder's QP).
    fn of_request(action: &Action, packets: &'p [Packet]) -> Connection<'p> {
        Connection {
            packets,
            requester: action.src,
            responder: action.dst,
            qp: Some(action.dest_qp),
        }
    }

    /// The connection of an action on an answer (from the responder to the requester).
    fn of_answer(action: &Action, packets: &'p [Packet]) -> Connection<'p> {
        Connection {
            packets,
            requester: action.dst,
            responder: action.src,
            qp: None,
        }
    }

    fn requests(&self, after: u64) -> impl DoubleEndedIterator<Item = &'p Packet> + '_ {
        self.packets.iter().filter(move |p| {
            p.ts >= after
                && p.src == self.requester
                && p.dst == self.responder
                && self.qp.is_none_or(|qp| p.dest_qp == qp)
                && Opcode(p.opcode).is_request()
        })
    }

    fn answers(&self, after: u64) -> impl DoubleEndedIterator<Item = &'p Packet> + '_ {
        self.packets.iter().filter(move |p| {
            p.ts >= after
                && p.src == self.responder
                && p.dst == self.requester
                && Opcode(p.opcode).is_response()
        })
    }
}

/// An ACKNOWLEDGE's syndrome, decoded.
fn syndrome(p: &Packet) -> Option<Syndrome> {
    p.syndrome
        .filter(|_| p.opcode == rc::ACKNOWLEDGE)
        .map(Syndrome::from_byte)
}

fn is_ack(p: &Packet) -> bool {
    matches!(syndrome(p), Some(Syndrome::Ack { .. }))
}

/// A PSN sequence error NAK, for whatever PSN.
pub(super) fn is_any_sequence_nak(p: &Packet) -> bool {
    syndrome(p) == Some(Syndrome::Nak(NakCode::PsnSequenceError))
}

fn is_sequence_nak(p: &Packet, psn: u32) -> bool {
    p.psn == psn && is_any_sequence_nak(p)
}

/// Judges what `packets` show after `action` as `reaction` calls for (`qp`: the requester's settings, for
/// the reactions that hold its timer).
pub fn judge(
    reaction: Reaction,
    action: &Action,
    packets: &[Packet],
    qp: Option<QpSettings>,
) -> Verdict {
    let request_side = Connection::of_request(action, packets);
    match reaction {
        Reaction::RequestLost => {
            request_lost(reaction, action, &request_side, action.ts, Vec::new())
        }
        Reaction::CorruptRequest => corrupt_request(action, &request_side),
        Reaction::ReadResponseLost => read_response_lost(action, packets),
        Reaction::AckLost => ack_lost(action, packets),
        Reaction::CeMarked => ce_marked(action, &request_side, packets),
        Reaction::RnrRetry => rnr_judged_without_an_action(),
        Reaction::AckTimeout => match qp {
            Some(qp) => ack_timeout(action, packets, qp),
            None => Verdict::new(
                reaction,
                Outcome::Fail,
                "no QP timeout and retry count to hold the timer to".to_string(),
                Vec::new(),
            ),
        },
    }
}

/// A CE mark's verdict that found its CNP, held to what the sender then did (`reaction`: as `analyze`
/// measures it over the capture; `None` when no CNP reached it there): it fails when every CNP measured
/// was followed by no reduction of the sender's rate, and says so when none could be measured (too few
/// packets around it).
pub fn with_rate_reaction(mut v: Verdict, reaction: Option<SenderReaction>) -> Verdict {
    let Some(r) = reaction else {
        v.seen += "; the analysis tied no CNP to the sender";
        return v;
    };
    if r.measured == 0 {
        v.seen += "; the sender's rate reaction not measurable (too few packets around the CNP)";
    } else if r.no_reduction == r.measured {
        v.outcome = Outcome::Fail;
        v.seen += &format!(
            "; the sender kept its rate after it ({} of {} CNPs measured with no reduction)",
            r.no_reduction, r.measured
        );
    } else {
        v.seen += &format!(
            "; the sender's rate fell by {:.0} % (the median of {} CNPs measured)",
            r.median.unwrap_or(0.0) * 100.0,
            r.measured
        );
        if let Some(t) = r.time_max {
            v.latencies_us
                .insert("cnp_to_reduced_rate", t as f64 / 1000.0);
        }
    }
    v
}

/// An RNR scenario has no injected action: [`rnr_retry`] judges it.
fn rnr_judged_without_an_action() -> Verdict {
    Verdict::new(
        Reaction::RnrRetry,
        Outcome::Fail,
        "an RNR NAK is the responder's own, not an injected action's: judged without one"
            .to_string(),
        Vec::new(),
    )
}

pub(super) fn is_rnr_nak(p: &Packet) -> bool {
    matches!(syndrome(p), Some(Syndrome::RnrNak { .. }))
}

/// The responder had no receive posted (no injected action): its first RNR NAK names the connection. Each of
/// its RNR NAKs carries the timer the responder was given; the requester sends the NAK's PSN again no sooner
/// than that timer after it (a sixteenth early allowed, as for the local ACK timer: a kernel timer fires up
/// to a tick early), and after `rnr_retry` retries (7: for ever) it stops. Requests of later PSNs in the
/// timer's time are not judged: a requester sends those until it has taken the NAK in, which the cable
/// cannot time (rxe in the slow lab guest: up to 1.4 ms after the NAK).
pub fn rnr_retry(packets: &[Packet], rnr: RnrSettings) -> Verdict {
    let reaction = Reaction::RnrRetry;
    let Some(first) = packets.iter().find(|p| is_rnr_nak(p)) else {
        return Verdict::new(
            reaction,
            Outcome::Fail,
            "no RNR NAK in the capture: the responder answered without a receive posted".into(),
            Vec::new(),
        );
    };
    let c = Connection {
        packets,
        requester: first.dst,
        responder: first.src,
        qp: None,
    };
    let timer = Syndrome::RnrNak {
        timer: rnr.min_rnr_timer & 0x1f,
    };
    let timer_ns = u64::from(timer.rnr_micros().unwrap_or(0)) * 1000;
    let ms = |ns: u64| ns as f64 / 1e6;
    let naks: Vec<&Packet> = c.answers(0).filter(|a| is_rnr_nak(a)).collect();
    let mut v = Verdict::new(reaction, Outcome::Pass, String::new(), Vec::new());
    let mut waits = Vec::new();
    for n in &naks {
        v.evidence.push(n.frame);
        let timer = n.syndrome.unwrap_or(0) & 0x1f;
        if timer != rnr.min_rnr_timer {
            v.outcome = Outcome::Fail;
            v.seen = format!(
                "the RNR NAK (frame {}) carries timer {timer} where the responder was given {}",
                n.frame, rnr.min_rnr_timer
            );
            return v;
        }
        let Some(next) = c.requests(n.ts).find(|r| r.psn == n.psn) else {
            continue;
        };
        v.evidence.push(next.frame);
        let wait = next.ts.saturating_sub(n.ts);
        if crate::analysis::diagnosis::on_time(wait) < timer_ns {
            v.outcome = Outcome::Fail;
            v.seen = format!(
                "PSN {} sent again (frame {}) {:.2} ms after its RNR NAK (frame {}), sooner than its timer {} ({:.2} ms)",
                next.psn,
                next.frame,
                ms(wait),
                n.frame,
                rnr.min_rnr_timer,
                ms(timer_ns)
            );
            return v;
        }
        waits.push(wait);
    }
    if let (Some(&shortest), Some(&longest)) = (waits.iter().min(), waits.iter().max()) {
        v.latencies_us
            .insert("rnr_nak_to_retry", shortest as f64 / 1000.0);
        v.latencies_us
            .insert("rnr_nak_to_retry_max", longest as f64 / 1000.0);
    }
    v.seen = format!(
        "{} RNR NAKs for PSN {} with timer {} ({:.2} ms), {} retries {}",
        naks.len(),
        first.psn,
        rnr.min_rnr_timer,
        ms(timer_ns),
        waits.len(),
        match (waits.iter().min(), waits.iter().max()) {
            (Some(&a), Some(&b)) => format!("{:.2}-{:.2} ms after their NAK", ms(a), ms(b)),
            _ => "at all".to_string(),
        }
    );
    if rnr.rnr_retry < 7 && waits.len() != usize::from(rnr.rnr_retry) {
        v.outcome = Outcome::Fail;
        v.seen += &format!(
            ": {} retries where the RNR retry count allows {} before the QP gives up",
            waits.len(),
            rnr.rnr_retry
        );
    } else if rnr.rnr_retry < 7 {
        v.seen += ", then nothing: the QP gave up";
    }
    v
}

/// Every answer to the requester lost (the action: the first): its first request's PSN sent again on the
/// timer, each time no sooner than 4.096 µs × 2^timeout after the last (a sixteenth early allowed: a kernel
/// timer fires up to a tick early), `retry_count` times, and then never again. With two resends or more the
/// pace is held between resends: the first send may have waited in the injector (its queue on the path holds
/// every packet, and the first longest), which the timer, started when the NIC sent it, did not.
fn ack_timeout(action: &Action, packets: &[Packet], qp: QpSettings) -> Verdict {
    let reaction = Reaction::AckTimeout;
    let c = Connection::of_answer(action, packets);
    let Some(first) = c.requests(0).next() else {
        return Verdict::new(reaction, Outcome::Fail, "no request".into(), Vec::new());
    };
    let sends: Vec<&Packet> = c.requests(0).filter(|r| r.psn == first.psn).collect();
    let evidence: Vec<u64> = sends.iter().map(|s| s.frame).collect();
    let timed = if sends.len() > 2 {
        &sends[1..]
    } else {
        &sends[..]
    };
    let intervals: Vec<u64> = timed.windows(2).map(|w| w[1].ts - w[0].ts).collect();
    let timeout_ns = 4096u64 << qp.timeout.min(31);
    let ms = |ns: u64| ns as f64 / 1e6;
    let resends = sends.len() - 1;
    let mut v = Verdict::new(reaction, Outcome::Pass, String::new(), evidence);
    if let (Some(&shortest), Some(&longest)) = (intervals.iter().min(), intervals.iter().max()) {
        v.latencies_us
            .insert("timeout_resend", shortest as f64 / 1000.0);
        v.latencies_us
            .insert("timeout_resend_max", longest as f64 / 1000.0);
    }
    let early = intervals
        .iter()
        .find(|&&i| crate::analysis::diagnosis::on_time(i) < timeout_ns);
    let pace = match (intervals.iter().min(), intervals.iter().max()) {
        (Some(&a), Some(&b)) => format!("{:.1}-{:.1} ms apart", ms(a), ms(b)),
        _ => "never resent".to_string(),
    };
    v.seen = format!(
        "PSN {} sent {} times ({resends} resends, {pace}; the timeout 4.096 us x 2^{} = {:.1} ms, the retry count {})",
        first.psn,
        sends.len(),
        qp.timeout,
        ms(timeout_ns),
        qp.retry_count
    );
    if let Some(&i) = early {
        v.outcome = Outcome::Fail;
        v.seen += &format!(
            ": a resend {:.1} ms after the one before, sooner than the timeout",
            ms(i)
        );
    } else if resends != usize::from(qp.retry_count) {
        v.outcome = Outcome::Fail;
        v.seen += &format!(
            ": {resends} resends where the retry count allows {} before the QP gives up",
            qp.retry_count
        );
    } else {
        v.seen += ", then nothing: the QP gave up";
    }
    v
}

/// After `from`: one sequence error NAK for the action's PSN, and the requester back at that PSN. The
/// requester may resend on that NAK or on its timer first (a slow responder's NAK can come after the
/// timer's go-back-N, which starts at the oldest PSN the requester holds unacknowledged): both keep the
/// rule, and the verdict says which it was.
fn request_lost(
    reaction: Reaction,
    action: &Action,
    c: &Connection<'_>,
    from: u64,
    mut evidence: Vec<u64>,
) -> Verdict {
    let p = action.psn;
    let trigger = c.requests(from).find(|r| r.psn != p);
    let Some(resend) = c.requests(from).find(|r| r.psn == p) else {
        return Verdict::new(
            reaction,
            Outcome::Fail,
            format!("PSN {p} was never sent again"),
            evidence,
        );
    };
    // The responder's answers to the sequence error: up to its first ACK of PSN p or later.
    let acked = c
        .answers(from)
        .find(|a| is_ack(a) && diff(a.psn, p) >= 0)
        .map_or(u64::MAX, |a| a.ts);
    let naks: Vec<&Packet> = c
        .answers(from)
        .filter(|a| a.ts <= acked && is_sequence_nak(a, p))
        .collect();
    evidence.extend(trigger.map(|t| t.frame));
    evidence.extend(naks.iter().map(|n| n.frame));
    evidence.push(resend.frame);
    let Some(nak) = naks.first() else {
        return Verdict::new(
            reaction,
            Outcome::Fail,
            format!(
                "no PSN sequence error NAK for PSN {p}: the requester's timer resent it (frame {}, {:.1} us after the fault)",
                resend.frame,
                resend.ts.saturating_sub(action.ts) as f64 / 1000.0
            ),
            evidence,
        );
    };
    if naks.len() > 1 {
        return Verdict::new(
            reaction,
            Outcome::Fail,
            format!(
                "{} PSN sequence error NAKs for PSN {p} before the responder took it: one is due",
                naks.len()
            ),
            evidence,
        );
    }
    // Go-back-N: what follows the resend goes on from it, not from where the requester had got to.
    let next = c.requests(resend.ts).find(|r| r.frame > resend.frame);
    if let Some(n) = next.filter(|n| diff(n.psn, p) > 1 && n.opcode != rc::READ_REQUEST) {
        evidence.push(n.frame);
        return Verdict::new(
            reaction,
            Outcome::Fail,
            format!(
                "after resending PSN {p} the requester went on at PSN {}, not {}",
                n.psn,
                parsers::psn::add(p, 1)
            ),
            evidence,
        );
    }
    let began = go_back_start(c, from).unwrap_or(resend);
    let on_nak = nak.ts <= began.ts;
    let how = if on_nak {
        format!(
            "resent from PSN {} on it (frame {})",
            began.psn, began.frame
        )
    } else {
        format!(
            "the requester's timer went back to PSN {} first (frame {}, the NAK behind it)",
            began.psn, began.frame
        )
    };
    let mut v = Verdict::new(
        reaction,
        Outcome::Pass,
        format!(
            "one PSN sequence error NAK for PSN {p} (frame {}); {how}",
            nak.frame
        ),
        evidence,
    );
    if let Some(t) = trigger.filter(|t| t.ts <= nak.ts) {
        v = v.latency("loss_to_nak", t, nak);
    }
    if on_nak {
        v.latency("nak_to_resend", nak, began)
    } else {
        v.latency_from_ts("fault_to_timer_resend", action.ts, began)
    }
}

/// The first request after `from` that goes back (its PSN not after the highest sent before it): where
/// the go-back-N began.
fn go_back_start<'p>(c: &Connection<'p>, from: u64) -> Option<&'p Packet> {
    let mut highest: Option<u32> = None;
    for r in c.requests(0) {
        if r.ts >= from && highest.is_some_and(|h| diff(r.psn, h) <= 0) {
            return Some(r);
        }
        if highest.is_none_or(|h| diff(r.psn, h) > 0) {
            highest = Some(r.psn);
        }
    }
    None
}

fn corrupt_request(action: &Action, c: &Connection<'_>) -> Verdict {
    let reaction = Reaction::CorruptRequest;
    let p = action.psn;
    let Some(bad) = c.requests(action.ts).find(|r| r.psn == p) else {
        return Verdict::new(
            reaction,
            Outcome::Fail,
            format!("the corrupted PSN {p} is not in the capture"),
            vec![],
        );
    };
    if !bad.icrc_bad {
        return Verdict::new(
            reaction,
            Outcome::Fail,
            format!(
                "PSN {p} (frame {}) is on the cable with a right ICRC: the fault was not made",
                bad.frame
            ),
            vec![bad.frame],
        );
    }
    let resend = c
        .requests(bad.ts)
        .find(|r| r.frame > bad.frame && r.psn == p);
    let until = resend.map_or(u64::MAX, |r| r.ts);
    if let Some(ack) = c
        .answers(bad.ts)
        .find(|a| a.ts <= until && is_ack(a) && diff(a.psn, p) >= 0)
    {
        return Verdict::new(
            reaction,
            Outcome::Fail,
            format!(
                "the responder acknowledged PSN {} (frame {}) though PSN {p}'s ICRC was wrong (frame {})",
                ack.psn, ack.frame, bad.frame
            ),
            vec![bad.frame, ack.frame],
        );
    }
    // What follows is a lost request's story, from just after the bad copy.
    request_lost(
        reaction,
        action,
        c,
        bad.ts.saturating_add(1),
        vec![bad.frame],
    )
}

fn read_response_lost(action: &Action, packets: &[Packet]) -> Verdict {
    let reaction = Reaction::ReadResponseLost;
    let p = action.psn;
    let c = Connection::of_answer(action, packets);
    let reads = |after: u64| c.requests(after).filter(|q| q.opcode == rc::READ_REQUEST);
    let mtu = packets
        .iter()
        .filter(|q| q.src == c.responder && Opcode(q.opcode).is_read_response())
        .map(|q| q.payload_len as u32)
        .max()
        .unwrap_or(0);
    let Some(read) = reads(0).rfind(|r| r.ts <= action.ts && diff(p, r.psn) >= 0) else {
        return Verdict::new(
            reaction,
            Outcome::Fail,
            format!("no READ request holds PSN {p}"),
            vec![],
        );
    };
    let Some((va, len)) = read.reth else {
        return Verdict::new(
            reaction,
            Outcome::Fail,
            "the READ request has no RETH".into(),
            vec![read.frame],
        );
    };
    let Some(again) = reads(action.ts).find(|r| diff(r.psn, read.psn) >= 0 && diff(p, r.psn) >= 0)
    else {
        return Verdict::new(
            reaction,
            Outcome::Fail,
            format!(
                "the READ at PSN {} (frame {}) was never asked again",
                read.psn, read.frame
            ),
            vec![read.frame],
        );
    };
    let evidence = vec![read.frame, again.frame];
    let (got_va, got_len) = again.reth.unwrap_or_default();
    // Asked again from PSN q, the READ's VA and length advanced to q: from the missing response (q = p), or
    // from before it when the requester had not taken the responses between (a slow completer, its timer):
    // what it asks for covers the missing response either way.
    // In 64 bits: a hostile capture's PSNs and payloads may be 2^23 apart and 64 KiB long.
    let advanced = u64::from(diff(again.psn, read.psn) as u32) * u64::from(mtu);
    let at = (
        va.wrapping_add(advanced),
        u64::from(len).saturating_sub(advanced),
    );
    if (got_va, u64::from(got_len)) != at {
        return Verdict::new(
            reaction,
            Outcome::Fail,
            format!(
                "the READ at PSN {} (frame {}) asked again from PSN {} with VA {got_va:#x}, {got_len} bytes (frame {}): from PSN {} it is VA {:#x}, {} bytes",
                read.psn, read.frame, again.psn, again.frame, again.psn, at.0, at.1
            ),
            evidence,
        );
    }
    let from = if again.psn == p {
        "from the missing response's PSN".to_string()
    } else {
        format!(
            "from PSN {}, before the missing response's PSN {p} (the responses between asked for again)",
            again.psn
        )
    };
    let v = Verdict::new(
        reaction,
        Outcome::Pass,
        format!(
            "the READ at PSN {} (frame {}) asked again {from}: VA {va:#x} + {}, {got_len} bytes (frame {})",
            read.psn, read.frame, advanced, again.frame
        ),
        evidence,
    );
    let revealed = c
        .answers(action.ts)
        .find(|a| Opcode(a.opcode).is_read_response() && diff(a.psn, p) > 0);
    match revealed.filter(|r| r.ts <= again.ts) {
        Some(r) => v.latency("gap_to_request", r, again),
        None => v,
    }
}

fn ack_lost(action: &Action, packets: &[Packet]) -> Verdict {
    let reaction = Reaction::AckLost;
    let p = action.psn;
    let c = Connection::of_answer(action, packets);
    let covering = c
        .answers(action.ts)
        .find(|a| is_ack(a) && diff(a.psn, p) > 0);
    let resend = c.requests(action.ts).find(|q| diff(q.psn, p) <= 0);
    match (covering, resend) {
        (Some(a), r) if r.is_none_or(|r| a.ts <= r.ts) => Verdict::new(
            reaction,
            Outcome::Pass,
            format!("the ACK for PSN {} (frame {}) covered the lost ACK for PSN {p}", a.psn, a.frame),
            vec![a.frame],
        )
        .latency_from_ts("loss_to_covering_ack", action.ts, a),
        (_, Some(r)) => match c.answers(r.ts).find(|a| is_ack(a) && diff(a.psn, r.psn) >= 0) {
            Some(a) => Verdict::new(
                reaction,
                Outcome::Pass,
                format!(
                    "the requester resent PSN {} (frame {}) and the responder acknowledged it (frame {})",
                    r.psn, r.frame, a.frame
                ),
                vec![r.frame, a.frame],
            )
            .latency_from_ts("loss_to_resend", action.ts, r),
            None => Verdict::new(
                reaction,
                Outcome::Fail,
                format!("the requester resent PSN {} (frame {}) and no ACK answered it", r.psn, r.frame),
                vec![r.frame],
            ),
        },
        _ => Verdict::new(
            reaction,
            Outcome::Fail,
            format!("nothing covered the lost ACK for PSN {p}: no later ACK, no resend"),
            vec![],
        ),
    }
}

fn ce_marked(action: &Action, c: &Connection<'_>, packets: &[Packet]) -> Verdict {
    let reaction = Reaction::CeMarked;
    let p = action.psn;
    let Some(marked) = c.requests(action.ts).find(|r| r.psn == p && r.ecn == 3) else {
        return Verdict::new(
            reaction,
            Outcome::Fail,
            format!("PSN {p} is not on the cable with ECN CE: the fault was not made"),
            vec![],
        );
    };
    let cnp = |q: &&Packet| q.opcode == CNP && q.src == action.dst && q.dst == action.src;
    match packets.iter().filter(|q| q.ts >= marked.ts).find(cnp) {
        Some(n) => Verdict::new(
            reaction,
            Outcome::Pass,
            format!(
                "a CNP (frame {}) for the CE mark on PSN {p} (frame {})",
                n.frame, marked.frame
            ),
            vec![marked.frame, n.frame],
        )
        .latency("ce_to_cnp", marked, n),
        None if packets.iter().any(|q| q.opcode == CNP) => Verdict::new(
            reaction,
            Outcome::Fail,
            format!(
                "no CNP after the CE mark on PSN {p} (frame {}), though CNPs were sent before it",
                marked.frame
            ),
            vec![marked.frame],
        ),
        None => Verdict::new(
            reaction,
            Outcome::NotSupported,
            format!(
                "no CNP anywhere in the capture after the CE mark on PSN {p} (frame {}): the responder sends no congestion notification",
                marked.frame
            ),
            vec![marked.frame],
        ),
    }
}

#[cfg(test)]
mod tests;
