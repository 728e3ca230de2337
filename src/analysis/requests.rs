//! The requester's side of a flow: each request's PSN step, its messages, its timing.
use parsers::frame::Frame;
use parsers::opcode::{Position, Transport};

use super::diagnosis::{Rc, Repeat, timeout_exponent};
use super::events::{Event, Kind};
use super::flow::Timing;
use super::psn::{self, SeenWindow, Step};
use super::{Class, Engine, FlowId};

impl Engine {
    pub(super) fn request(&mut self, id: FlowId, number: u64, ts: u64, frame: &Frame) -> Class {
        let Some(roce) = &frame.roce else {
            return Class::Other;
        };
        let bth = roce.bth;
        let op = bth.op();
        let payload = roce.payload_len.unwrap_or(0) as u64;
        let mtu = self.flows[id].mtu_or(self.mtu());
        let read_len = if op.is_read_request() {
            roce.ext.reth.map(|r| r.dma_len)
        } else {
            None
        };
        let consumes = op.psns_consumed(read_len, mtu);
        // Full-size segments reveal the path MTU.
        if matches!(op.position(), Some(Position::First | Position::Middle))
            && payload as u32 > self.inferred_mtu
        {
            self.inferred_mtu = payload as u32;
        }
        self.new_epoch_if(id, number, ts, bth.psn);
        let f = &mut self.flows[id];
        f.requests += 1;
        let reliable = matches!(op.transport(), Transport::Rc | Transport::Xrc);
        f.reliable |= reliable;
        let first = f.first_request.is_none();
        if first {
            f.first_request = Some((number, ts));
        }
        let pending = f.conn.is_some_and(|l| l.first_pending);
        let taken = f.psn.request(bth.psn, consumes, read_len.unwrap_or(0), mtu);
        if let Some(read) = taken.guessed_read {
            f.rc.guessed(read, bth.psn, number, ts);
        }
        let step = taken.step;
        let retransmitted = matches!(step, Step::Retransmit { .. });
        let class = match step {
            Step::Gap { .. } => Class::Gap,
            Step::Retransmit { .. } => Class::Retransmission,
            Step::First | Step::InOrder | Step::Reuse { .. } => Class::Request,
        };
        self.step_events(id, number, ts, bth.psn, step, reliable);
        if pending {
            self.first_request(id, number, ts, bth.psn);
        }
        let f = &mut self.flows[id];
        f.rc.last_request_ts = ts;
        if retransmitted {
            f.retransmitted_bytes += payload;
        } else {
            f.progress_ts = ts;
        }
        // Timing: every new request of a reliable transport waits for its ACK (UC and UD get none); READs
        // also for their first response.
        let t = &mut f.timing;
        if t.outstanding.len() == Timing::PENDING_LIMIT {
            t.outstanding.pop_front();
        }
        if reliable {
            // READs are timed to their first response, not here; retransmissions are ambiguous (Karn).
            t.outstanding
                .push_back((bth.psn, ts, number, retransmitted || read_len.is_some()));
        }
        if let Some(len) = read_len.filter(|_| !retransmitted) {
            if t.reads.len() == Timing::PENDING_LIMIT {
                t.reads.pop_front();
            }
            t.reads.push_back((bth.psn, ts, len));
        }
        if taken.taken {
            self.message(id, ts, number, frame);
        }
        let f = &mut self.flows[id];
        if !f.registered {
            f.registered = true;
            self.requesters
                .entry((f.key.src, f.key.dst))
                .or_default()
                .push(id);
        }
        class
    }

    /// The events of a request's PSN step: a gap, and for a reliable transport (RC, XRC) a go-back-N (and,
    /// with no NAK to explain it, a timeout retransmission) or a reuse of a READ's PSN. UC and UD requesters
    /// never resend: a PSN seen again there is a copy, not a timer.
    fn step_events(
        &mut self,
        id: FlowId,
        number: u64,
        ts: u64,
        psn: u32,
        step: Step,
        reliable: bool,
    ) {
        let event = |kind| Event {
            ts_nanos: ts,
            flow: Some(id),
            frame: number,
            kind,
        };
        match step {
            Step::Gap { expected, missing } => {
                let after = psn::add(expected, u32::MAX);
                self.events.push(event(Kind::PsnGap { missing, after }));
            }
            Step::Retransmit { rewind: true, .. } if reliable => {
                let f = &mut self.flows[id];
                f.rc.went_back = Some((psn, ts));
                let behind = (-psn::diff(psn, f.psn.next)) as u32;
                // Each NAK since the last go-back-N explains one.
                let nak = f.nak_ts.filter(|_| f.naks_unanswered > 0);
                f.naks_unanswered = f.naks_unanswered.saturating_sub(1);
                if f.naks_unanswered == 0 {
                    f.nak_ts = None;
                }
                let after_nak_us = nak.map(|nak| ts.saturating_sub(nak) / 1000);
                let after_progress_us = ts.saturating_sub(f.progress_ts) / 1000;
                self.events.push(event(Kind::GoBackN {
                    from: psn,
                    behind,
                    after_nak_us,
                    after_progress_us,
                }));
                if nak.is_none() {
                    let timeout = self.timed_out(id, number, ts, psn);
                    self.violation(event(timeout));
                }
            }
            Step::Reuse {
                read_psn,
                read_psns,
            } if reliable => self.violation(event(Kind::PsnReuse {
                psn,
                read_psn,
                read_psns,
            })),
            _ => {}
        }
    }

    /// A go-back-N to `psn` that no NAK explains: the requester's local ACK timer fired. The interval runs
    /// from the last time this PSN was sent (its first send, or its last resend).
    fn timed_out(&mut self, id: FlowId, number: u64, ts: u64, psn: u32) -> Kind {
        let f = &mut self.flows[id];
        let last_sent = match f.rc.resent {
            Some(r) if r.psn == psn => r.ts,
            _ => f
                .timing
                .outstanding
                .iter()
                .find(|o| o.0 == psn)
                .map_or(f.progress_ts, |o| o.1),
        };
        let resent = Repeat::again(f.rc.resent, psn, ts, number);
        f.rc.resent = Some(resent);
        let interval = ts.saturating_sub(last_sent);
        f.rc.timer_ns = interval;
        Kind::TimeoutRetransmission {
            psn,
            interval_us: interval / 1000,
            timeout_exp: timeout_exponent(interval),
            retry: resent.count,
        }
    }

    /// A request far from the PSN the flow expects, after the flow was idle longer than the stall time, is a
    /// new connection on the same QP number: a new epoch, not a retransmission or a gap. So is the first
    /// request after a handshake named the flow's QPs again.
    fn new_epoch_if(&mut self, id: FlowId, number: u64, ts: u64, psn: u32) {
        let f = &mut self.flows[id];
        let idle = ts.saturating_sub(f.prev_ts);
        let far = psn::diff(psn, f.psn.next).unsigned_abs() > SeenWindow::WINDOW;
        let handshake = f.conn.is_some_and(|l| l.new_epoch);
        if let Some(l) = &mut f.conn {
            l.new_epoch = false;
        }
        if !f.psn.started || !(handshake || far && idle > self.cfg.stall_nanos) {
            return;
        }
        let expected = f.psn.next;
        self.events.push(Event {
            ts_nanos: ts,
            flow: Some(id),
            frame: number,
            kind: Kind::NewEpoch {
                psn,
                expected,
                idle_us: idle / 1000,
            },
        });
        // The old connection's responder may answer for another QP now: pair afresh.
        self.flows[id].paired_by = None;
        if let Some(old) = self.flows[id]
            .paired_with
            .take()
            .and_then(|p| self.flows.get_mut(p))
        {
            // Its responder side belonged to the old connection; its own requests, if any, stay as they are.
            old.paired_with = None;
            old.paired_by = None;
            old.rc.last_msn = None;
            old.rc.read = None;
            old.resp.next_read_psn = None;
        }
        let f = &mut self.flows[id];
        f.psn.new_epoch();
        f.timing.outstanding.clear();
        f.timing.reads.clear();
        f.rc = Rc {
            epochs: f.rc.epochs + 1,
            answered: f.rc.answered,
            ..Rc::default()
        };
        f.nak_ts = None;
        f.naks_unanswered = 0;
    }

    fn message(&mut self, id: FlowId, ts: u64, number: u64, frame: &Frame) {
        let Some(roce) = &frame.roce else { return };
        let op = roce.bth.op();
        if !op.is_send_or_write() {
            return;
        }
        let payload = roce.payload_len.unwrap_or(0) as u64;
        let dma_len = roce.ext.reth.map(|r| r.dma_len);
        let m = &mut self.flows[id].messages;
        let finished = match op.position() {
            Some(Position::Only) => Some((dma_len, payload)),
            Some(Position::First) => {
                m.open = Some((dma_len, payload));
                None
            }
            Some(Position::Middle) => {
                if let Some(open) = &mut m.open {
                    open.1 += payload;
                }
                None
            }
            Some(Position::Last) => m.open.take().map(|(len, bytes)| (len, bytes + payload)),
            None => None,
        };
        if let Some((len, size)) = finished {
            m.complete(size);
            if let Some(len) = len.filter(|len| u64::from(*len) != size) {
                m.length_mismatches += 1;
                self.events.push(Event {
                    ts_nanos: ts,
                    flow: Some(id),
                    frame: number,
                    kind: Kind::LengthMismatch {
                        dma_len: len,
                        payload: size,
                    },
                });
            }
        }
    }
}
