//! What broke, from the wire: the RC requester/responder state the checks need beyond the PSN tracker,
//! the stall sweep while the capture goes on, and what only the end of the capture settles (stalls, no
//! response, retries and RNR retries exhausted, PSN reuse of READs whose PSNs were guessed).
use parsers::psn::{self, read_psns};
use smallvec::SmallVec;

use super::events::{Event, Group, Kind};
use super::psn::GAPS_KEPT;
use super::recent::Recent;
use super::{Engine, Flow, FlowId};

/// A requester flow's RC state for the diagnosis, what its responder answered included (it is part of
/// [`super::flow::Requesting`]: a flow that only answers holds none).
#[derive(Debug, Clone, Default)]
pub struct Rc {
    /// The stall of the current episode (outstanding requests unanswered past the stall time): when the
    /// oldest waited from, and its event's place in the list, to update when the answer comes.
    pub(crate) stall: Option<(u64, Option<usize>)>,
    /// The PSN the requester went back to last, without a NAK: how many times in a row, the last time.
    pub(crate) resent: Option<Repeat>,
    /// The PSN the responder RNR-NAKed last: how many times in a row, the last time.
    pub(crate) rnr: Option<Repeat>,
    /// The last go-back-N, for whatever reason: to which PSN, when.
    pub(crate) went_back: Option<(u32, u64)>,
    /// The last resends (a go-back-N's first or a later one, a resumed READ): what a response behind the
    /// highest may answer.
    pub(crate) resends: Resends,
    /// The interval of the last timeout retransmission: the requester's local ACK timer.
    pub(crate) timer_ns: u64,
    /// The RNR timer of the last RNR NAK.
    pub(crate) rnr_timer_us: u64,
    /// When the requester last sent anything.
    pub(crate) last_request_ts: u64,
    /// READs taken as in order by guessing their path MTU: (READ PSN, DMA length, the request after it:
    /// PSN, frame, time), checked once the MTU is known.
    pub(crate) guessed: Vec<(u32, u32, u32, u64, u64)>,
    /// New connections seen on this flow's QP number after the first.
    pub epochs: u64,
    /// As requester: some response from its destination came.
    pub(crate) answered: bool,
    /// The `psn_gap` events of the last gaps: a packet they skipped may still come, held up on the way.
    pub(crate) gap_events: GapEvents,
    /// Requests behind the highest PSN whose events wait for the requests after them.
    pub(crate) unsure: Option<Box<UnsureRun>>,
}

/// The places in the event list of the last gaps' `psn_gap` events, by the gap's first PSN (as many as
/// the PSN tracker keeps gaps).
#[derive(Debug, Clone, Default)]
pub(crate) struct GapEvents(Recent<(u32, usize), GAPS_KEPT>);

impl GapEvents {
    pub(crate) fn keep(&mut self, from: u32, event: usize) {
        self.0.keep((from, event));
    }

    /// The event of the gap from `from`, forgotten.
    pub(crate) fn take(&mut self, from: u32) -> Option<usize> {
        let slot = self
            .0
            .slots_mut()
            .iter_mut()
            .find(|(f, e)| *f == from && *e != usize::MAX)?;
        Some(std::mem::replace(&mut slot.1, usize::MAX))
    }
}

/// A resent request: its first PSN, the PSNs it takes (a READ's responses), when.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Resend {
    pub psn: u32,
    pub psns: u32,
    pub ts: u64,
}

/// How many resends a requester keeps: more than a go-back-N of a deep send queue resends before its
/// responses come back.
const RESENDS_KEPT: usize = 64;

/// The last resends of a requester, kept from its first (most flows never resend: they allocate nothing).
#[derive(Debug, Clone, Default)]
pub(crate) struct Resends(Recent<Resend, RESENDS_KEPT>);

impl Resends {
    pub(crate) fn keep(&mut self, r: Resend) {
        self.0.keep(r);
    }

    pub(crate) fn last(&self) -> Option<Resend> {
        self.0.newest()
    }

    /// A kept resend whose PSNs hold `psn`: a response for it may answer that resend.
    pub(crate) fn covers(&self, psn: u32) -> bool {
        self.0.slots().iter().any(|r| {
            let into = psn::diff(psn, r.psn);
            into >= 0 && (into as u32) < r.psns.max(1)
        })
    }
}

/// Requests in sequence that may have been resends or packets held up on the way: what their events need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UnsureRun {
    /// The first one's step (the go-back-N it would begin).
    pub step: super::psn::Step,
    pub psn: u32,
    /// The highest PSN seen when the first came.
    pub highest: u32,
    /// Each one's frame and time, the first first (PSN `psn`, then one more each).
    pub requests: SmallVec<[UnsureRequest; 2]>,
    /// Their payload bytes, counted as retransmitted.
    pub payload: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct UnsureRequest {
    pub frame: u64,
    pub ts: u64,
}

/// The same PSN met again and again (resent, or RNR-NAKed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Repeat {
    pub psn: u32,
    pub count: u32,
    /// The last time, and its frame.
    pub ts: u64,
    pub frame: u64,
}

impl Repeat {
    /// `psn` again at `ts`: one more if it is the same PSN, else the first of a new series.
    pub(crate) fn again(last: Option<Repeat>, psn: u32, ts: u64, frame: u64) -> Repeat {
        let count = match last {
            Some(r) if r.psn == psn => r.count + 1,
            _ => 1,
        };
        Repeat {
            psn,
            count,
            ts,
            frame,
        }
    }
}

/// The responses of one READ as they come.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ReadResponse {
    pub read_psn: u32,
    pub dma_len: u32,
    pub bytes: u64,
    pub packets: u32,
    /// A response packet was missing (an implied NAK): the READ will be asked again, its lengths do not
    /// tell.
    pub skipped: bool,
    /// It answers a READ whose responses all came before (the requester resent it): its packets are
    /// duplicates, some of which may have come already, interleaved with the first answer's.
    pub duplicate: bool,
    /// The response PSNs already counted: a second copy of one (the answers to a READ and to its resend
    /// interleaved by reordering on the path) adds no bytes.
    pub seen: SeenOffsets,
}

/// Which offsets (PSNs after a READ's own) of a READ's responses came, in a window of the last 128 from
/// the highest; one older than the window counts as seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct SeenOffsets {
    /// The offset of bit 0.
    base: u32,
    bits: u128,
}

impl SeenOffsets {
    const WINDOW: u32 = u128::BITS;

    /// Marks `offset` seen; whether it was new.
    pub fn first_time(&mut self, offset: u32) -> bool {
        if offset < self.base {
            return false;
        }
        if offset - self.base >= Self::WINDOW {
            let base = offset - (Self::WINDOW - 1);
            let shift = base - self.base;
            self.bits = if shift >= Self::WINDOW {
                0
            } else {
                self.bits >> shift
            };
            self.base = base;
        }
        let bit = 1u128 << (offset - self.base);
        let new = self.bits & bit == 0;
        self.bits |= bit;
        new
    }
}

/// Guessed READs kept per flow at most (each is a few bytes; a READ-heavy flow settles its MTU early).
const GUESSED_KEPT: usize = 64;

impl Rc {
    pub(crate) fn guessed(&mut self, read: (u32, u32), next: u32, frame: u64, ts: u64) {
        if self.guessed.len() < GUESSED_KEPT {
            self.guessed.push((read.0, read.1, next, frame, ts));
        }
    }
}

/// The local ACK timeout exponent a timer that fired after `interval` ns implies: the largest n with
/// 4.096 µs × 2^n at most the interval (IBTA 9.7.6.1.3) and a sixteenth more ([`on_time`]).
pub fn timeout_exponent(interval_ns: u64) -> u8 {
    let units = on_time(interval_ns) / 4096;
    if units == 0 {
        0
    } else {
        (63 - units.leading_zeros()).min(31) as u8
    }
}

/// An interval as the timer that ended it meant it: a sixteenth longer. A kernel timer set for n ticks fires
/// up to one tick early (rxe at HZ 250, qp-timeout 14: 67.1 ms asked, 66.9 ms on the cable), and the capture's
/// clock is not the sender's.
pub fn on_time(interval_ns: u64) -> u64 {
    interval_ns.saturating_add(interval_ns / 16)
}

impl Engine {
    /// Every so often while the capture goes on: requests unanswered for longer than the stall time are
    /// a stall, reported once per episode (the event is updated when the answer comes, or at the end).
    pub(crate) fn sweep(&mut self, now: u64) {
        self.evict_idle(now);
        let stall = self.cfg.stall_nanos;
        let stalled: Vec<(FlowId, u64, u64, Kind)> = self
            .flows
            .iter()
            .filter(|f| f.req.rc.stall.is_none())
            .filter_map(|f| {
                let o = f.req.timing.outstanding.front()?;
                (now.saturating_sub(o.sent) > stall).then(|| {
                    (
                        f.id,
                        o.sent,
                        o.frame,
                        stall_kind(f, o.psn(), o.sent, now, false),
                    )
                })
            })
            .collect();
        for (id, since, frame, kind) in stalled {
            let at = self.raise(Event {
                ts_nanos: now,
                flow: Some(id),
                frame,
                kind,
            });
            self.diagnosis.stalls += 1;
            self.flows[id].req.rc.stall = Some((since, at));
        }
    }

    /// The requester `id`'s oldest outstanding requests were answered at `ts`: a stall it was in is over.
    pub(crate) fn stall_ends(&mut self, id: FlowId, ts: u64) {
        if let Some((since, Some(at))) = self.flows[id].req.rc.stall.take()
            && let Some(Kind::Stall { waited_us, .. }) =
                self.events.list.get_mut(at).map(|e| &mut e.kind)
        {
            *waited_us = ts.saturating_sub(since) / 1000;
        }
    }

    /// At the end of flow `id` (`end`: the end of the capture, or its eviction): a stall still going on, no
    /// response ever, a requester that gave up, READs whose guessed PSNs another request reused.
    pub(crate) fn diagnose_flow(&mut self, id: FlowId, end: u64) {
        let stall = self.cfg.stall_nanos;
        let mtu = self.mtu();
        let mut found = Vec::new();
        let f = &self.flows[id];
        let answered = f.req.rc.answered;
        let rc_requests = f.requests > 0 && f.reliable;
        if rc_requests && !answered && end.saturating_sub(f.first_ts) > stall {
            found.push((
                f.first_frame,
                f.first_ts,
                Kind::NoResponse {
                    requests: f.requests,
                    first_psn: f.req.psn.first,
                    waited_us: end.saturating_sub(f.first_ts) / 1000,
                },
            ));
        } else if let Some(o) = f.req.timing.outstanding.front() {
            found.extend(end_of_stall(f, o.psn(), o.sent, o.frame, end, stall));
        }
        found.extend(gave_up(f, end, stall));
        if let Some(m) = f.mtu_or(mtu) {
            found.extend(reused_guessed_reads(f, m));
        }
        for (frame, ts, kind) in found {
            self.note_end(id, frame, ts, kind);
        }
    }

    fn note_end(&mut self, id: FlowId, frame: u64, ts: u64, kind: Kind) {
        match kind {
            Kind::Stall {
                waited_us, at_end, ..
            } => {
                // Reported during the capture already: the event says how long it lasted, and that it
                // lasted to the end.
                if let Some((_, at)) = self.flows[id].req.rc.stall {
                    if let Some(Kind::Stall {
                        waited_us: w,
                        at_end: e,
                        ..
                    }) = at
                        .and_then(|at| self.events.list.get_mut(at))
                        .map(|e| &mut e.kind)
                    {
                        *w = waited_us;
                        *e = at_end;
                    }
                    return;
                }
                self.diagnosis.stalls += 1;
            }
            Kind::NoResponse { .. } => {
                self.diagnosis.no_response += 1;
                self.flows[id].raised |= Group::NoResponse.bit();
                // A stall reported while the capture went on was this silence: it is the no response.
                if let Some((_, at)) = self.flows[id].req.rc.stall.take() {
                    self.diagnosis.stalls -= 1;
                    if let Some(e) = at.and_then(|at| self.events.list.get_mut(at)) {
                        *e = Event {
                            ts_nanos: ts,
                            flow: Some(id),
                            frame,
                            kind,
                        };
                        return;
                    }
                }
            }
            _ => {}
        }
        self.raise(Event {
            ts_nanos: ts,
            flow: Some(id),
            frame,
            kind,
        });
    }
}

/// The stall of `f` whose oldest outstanding request (`psn`, sent at `since`) waited until `until`.
fn stall_kind(f: &Flow, psn: u32, since: u64, until: u64, at_end: bool) -> Kind {
    let acked_to = psn::add(psn, u32::MAX);
    let outstanding = psn::diff(f.req.psn.next, psn::add(acked_to, 1)).max(1) as u32;
    Kind::Stall {
        psn,
        outstanding,
        since_ns: since,
        waited_us: until.saturating_sub(since) / 1000,
        at_end,
    }
}

/// Outstanding requests at the end of the capture that waited longer than the stall time.
fn end_of_stall(
    f: &Flow,
    psn: u32,
    since: u64,
    frame: u64,
    end: u64,
    stall: u64,
) -> Option<(u64, u64, Kind)> {
    (end.saturating_sub(since) > stall || f.req.rc.stall.is_some())
        .then(|| (frame, since, stall_kind(f, psn, since, end, true)))
}

/// A requester that resent one PSN on its timer, or was RNR-NAKed on one, and then went silent with the
/// PSN unacknowledged, for longer than the stall time and than two of its timer intervals: it gave up
/// (IBV_WC_RETRY_EXC_ERR, IBV_WC_RNR_RETRY_EXC_ERR) rather than wait for its next try.
fn gave_up(f: &Flow, end: u64, stall: u64) -> Option<(u64, u64, Kind)> {
    let oldest = f.req.timing.outstanding.front().map(|o| o.psn())?;
    let silent = end.saturating_sub(f.req.rc.last_request_ts);
    let retried_after =
        |ts: u64, psn: u32| f.req.rc.went_back.is_some_and(|(p, t)| p == psn && t > ts);
    match (f.req.rc.resent, f.req.rc.rnr) {
        // The last word on the oldest PSN was an RNR NAK, and the requester did not try it again.
        (_, Some(r)) if r.psn == oldest && !retried_after(r.ts, r.psn) => {
            (silent > stall.max(f.req.rc.rnr_timer_us.saturating_mul(2000))).then(|| {
                let (psn, naks, silent_us) = (r.psn, r.count, silent / 1000);
                (
                    r.frame,
                    r.ts,
                    Kind::RnrExhausted {
                        psn,
                        naks,
                        silent_us,
                    },
                )
            })
        }
        // The last go-back-N was the timer's, to the oldest PSN, and nothing answered it.
        (Some(r), _) if r.psn == oldest && !retried_after(r.ts, r.psn) => {
            (silent > stall.max(f.req.rc.timer_ns.saturating_mul(2))).then(|| {
                let (psn, resends, silent_us) = (r.psn, r.count, silent / 1000);
                (
                    r.frame,
                    r.ts,
                    Kind::RetryExhausted {
                        psn,
                        resends,
                        silent_us,
                    },
                )
            })
        }
        _ => None,
    }
}

/// READs taken as in order by guessing their path MTU, whose PSNs at the MTU learnt later the request after
/// them reused.
fn reused_guessed_reads(f: &Flow, mtu: u32) -> Vec<(u64, u64, Kind)> {
    f.req
        .rc
        .guessed
        .iter()
        .filter_map(|&(read_psn, len, next, frame, ts)| {
            let width = read_psns(len, mtu);
            let into = psn::diff(next, read_psn);
            (into > 0 && (into as u32) < width).then_some((
                frame,
                ts,
                Kind::PsnReuse {
                    psn: next,
                    read_psn,
                    read_psns: width,
                },
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seen_offsets_count_each_once_in_a_window_of_128() {
        let mut seen = SeenOffsets::default();
        // The lab's interleaved answers: 0, 1, 2, 2 again, 3.
        let firsts: Vec<bool> = [0, 1, 2, 2, 3].map(|o| seen.first_time(o)).to_vec();
        assert_eq!(firsts, [true, true, true, false, true]);
        // Reordered within the window: 5 before 4, each new once.
        assert!(seen.first_time(5) && seen.first_time(4) && !seen.first_time(5));
        // 200 moves the window to 73..=200: 72 is older than it (seen), 73 and 199 are new.
        assert!(seen.first_time(200));
        assert!(!seen.first_time(72));
        assert!(seen.first_time(73) && seen.first_time(199) && !seen.first_time(200));
        // A jump past the whole window forgets it.
        assert!(seen.first_time(10_000) && seen.first_time(9_999) && !seen.first_time(9_872));
        assert!(seen.first_time(9_873));
    }

    #[test]
    fn timeout_exponents() {
        // 4.096 µs × 2^14 = 67.1 ms; 2^17 = 537 ms (rxe's resend interval at qp-timeout 17).
        assert_eq!(timeout_exponent(67_108_864), 14);
        // up to a sixteenth early: 67_108_864 × 16 / 17 = 63_161_283.8
        assert_eq!(timeout_exponent(66_949_000), 14);
        assert_eq!(timeout_exponent(63_161_284), 14);
        assert_eq!(timeout_exponent(63_161_283), 13);
        assert_eq!(timeout_exponent(540_000_000), 17);
        assert_eq!(timeout_exponent(1000), 0);
        assert_eq!(timeout_exponent(u64::MAX), 31);
    }
}
