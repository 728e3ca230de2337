//! The requester's side of a flow: each request's PSN step, its messages, its timing.
use parsers::frame::{Frame, Ip};
use parsers::opcode::{Position, Transport};
use smallvec::SmallVec;

use super::diagnosis::{Rc, Repeat, Resend, UnsureRequest, UnsureRun, timeout_exponent};
use super::events::{Event, Kind};
use super::flow::{Awaits, Outstanding, PendingRead};
use super::psn::{self, Arrival, ReadReth, SeenWindow, Settled, Step};
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
        let read = if op.is_read_request() {
            roce.ext.reth.map(|r| ReadReth {
                va: r.va,
                len: r.dma_len,
            })
        } else {
            None
        };
        let consumes = op.psns_consumed(read.map(|r| r.len), mtu);
        // Full-size segments reveal the path MTU.
        if matches!(op.position(), Some(Position::First | Position::Middle))
            && payload as u32 > self.inferred_mtu
        {
            self.inferred_mtu = payload as u32;
        }
        self.new_epoch_if(id, number, ts, bth.psn);
        let reorder_window = self.cfg.reorder_window_nanos;
        let f = &mut self.flows[id];
        f.requests += 1;
        let reliable = matches!(op.transport(), Transport::Rc | Transport::Xrc);
        f.reliable |= reliable;
        let first = f.first_request.is_none();
        if first {
            f.first_request = Some((number, ts));
        }
        // A UD QP numbers its sends in one PSN sequence whatever their destinations, and no receiver checks
        // it (IBTA 9.8): a flow's gaps there are the sender's other destinations, never loss.
        if op.transport() == Transport::Ud {
            return Class::Other;
        }
        let pending = f.conn.is_some_and(|l| l.first_pending);
        let ip_id = match frame.ip {
            Some(Ip::V4(h)) => Some(h.id),
            _ => None,
        };
        let at = Arrival {
            ts,
            reorder_window,
            ip_id,
            ids_in_send_order: false,
        };
        let taken = f.req.psn.request(bth.psn, consumes, read, mtu, at);
        if let Some(read) = taken.guessed_read {
            f.req.rc.guessed(read, bth.psn, number, ts);
        }
        if let Some(settled) = taken.settled {
            self.settle_unsure(id, settled, reliable);
        }
        let step = taken.step;
        let retransmitted = matches!(step, Step::Retransmit { .. });
        let class = match step {
            Step::Gap { .. } => Class::Gap,
            Step::Retransmit { .. } => Class::Retransmission,
            Step::Reordered { .. } => Class::Reordered,
            Step::First | Step::InOrder | Step::Reuse { .. } => Class::Request,
        };
        let f = &mut self.flows[id];
        if let Step::Retransmit { .. } = step {
            // A READ's responses take its PSNs: at the smallest path MTU while it is not known (the most).
            let psns = consumes.or_else(|| read.map(|r| psn::read_psns(r.len, psn::MTUS[0])));
            f.req.rc.resends.keep(Resend {
                psn: bth.psn,
                psns: psns.unwrap_or(1),
                ts,
            });
        }
        if taken.unsure {
            // Its events wait for the requests after it, which tell whether it was resent or held up.
            let request = UnsureRequest { frame: number, ts };
            let highest = f.req.psn.highest;
            let run = f.req.rc.unsure.get_or_insert_with(|| {
                Box::new(UnsureRun {
                    step,
                    psn: bth.psn,
                    highest,
                    requests: SmallVec::new(),
                    payload: 0,
                })
            });
            run.requests.push(request);
            run.payload += payload;
        } else {
            self.step_events(id, number, ts, bth.psn, step, reliable);
        }
        if let Some(gap) = taken.closes_gap {
            self.gap_filled(id, gap);
        }
        if pending {
            self.first_request(id, number, ts, bth.psn);
        }
        let f = &mut self.flows[id];
        f.req.rc.last_request_ts = ts;
        if retransmitted {
            f.retransmitted_bytes += payload;
        } else {
            f.progress_ts = ts;
        }
        // Timing: every request of a reliable transport waits for its ACK (UC and UD get none); READs
        // also for their first response. READs are timed to their first response, not to an ACK;
        // retransmissions are ambiguous (Karn's rule): neither is sampled.
        let t = &mut f.req.timing;
        if reliable {
            let awaits = if op.is_atomic() {
                Some(Awaits::AtomicAck)
            } else {
                read.map(|r| Awaits::ReadResponses { dma_len: r.len })
            };
            let sample = !retransmitted && read.is_none();
            let o = Outstanding::new(bth.psn, ts, number, sample, awaits);
            t.outstanding.wait(o, Outstanding::psn);
        }
        if let Some(r) = read {
            let pending = PendingRead {
                psn: bth.psn,
                sent: ts,
                dma_len: r.len,
                sample: !retransmitted,
            };
            t.reads.wait(pending, |r| r.psn);
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

    /// The requests after an unsure run (or the flow's end) told what it was: resent (the go-back-N events
    /// of its first come now) or held up on the way (reordered, and their retransmitted bytes were not).
    pub(super) fn settle_unsure(&mut self, id: FlowId, settled: Settled, reliable: bool) {
        let Some(u) = self.flows[id].req.rc.unsure.take() else {
            return;
        };
        match settled {
            Settled::Resent => {
                if let Some(first) = u.requests.first() {
                    self.step_events(id, first.frame, first.ts, u.psn, u.step, reliable);
                }
            }
            Settled::HeldUp {
                depth, closes_gap, ..
            } => {
                let f = &mut self.flows[id];
                f.retransmitted_bytes = f.retransmitted_bytes.saturating_sub(u.payload);
                for (i, r) in (0u32..).zip(&u.requests) {
                    let psn = psn::add(u.psn, i);
                    self.reordered(id, r.frame, r.ts, psn, u.highest, depth.saturating_sub(i));
                }
                if let Some(gap) = closes_gap {
                    self.gap_filled(id, gap);
                }
            }
        }
    }

    /// Every PSN the gap of flow `id` from PSN `from` skipped came after all, held up on the way: its
    /// `psn_gap` event told of a loss that was not.
    fn gap_filled(&mut self, id: FlowId, from: u32) {
        if let Some(at) = self.flows[id].req.rc.gap_events.take(from) {
            self.events.retract(at);
        }
    }

    /// A request of flow `id` (`psn`) came `depth` PSNs behind the highest seen: held up on the way.
    fn reordered(&mut self, id: FlowId, frame: u64, ts: u64, psn: u32, highest: u32, depth: u32) {
        self.raise(Event {
            ts_nanos: ts,
            flow: Some(id),
            frame,
            kind: Kind::Reordered {
                psn,
                highest,
                depth,
                response: false,
            },
        });
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
                if let Some(at) = self.raise(event(Kind::PsnGap { missing, after })) {
                    self.flows[id].req.rc.gap_events.keep(expected, at);
                }
            }
            Step::Retransmit { rewind: true, .. } if reliable => {
                let f = &mut self.flows[id];
                f.req.rc.went_back = Some((psn, ts));
                let behind = (-psn::diff(psn, f.req.psn.next)) as u32;
                // A NAK not yet answered explains it.
                let nak = f.naks.on_go_back(psn, ts, self.cfg.nak_held_up());
                let after_nak_us = nak.map(|nak| ts.saturating_sub(nak) / 1000);
                let after_progress_us = ts.saturating_sub(f.progress_ts) / 1000;
                self.raise(event(Kind::GoBackN {
                    from: psn,
                    behind,
                    after_nak_us,
                    after_progress_us,
                }));
                if nak.is_none()
                    && let Some(timeout) = self.timed_out(id, number, ts, psn)
                {
                    self.raise(event(timeout));
                }
            }
            Step::Reordered { depth } => {
                let highest = self.flows[id].req.psn.highest;
                self.reordered(id, number, ts, psn, highest, depth);
            }
            Step::Reuse {
                read_psn,
                read_psns,
            } if reliable => {
                self.raise(event(Kind::PsnReuse {
                    psn,
                    read_psn,
                    read_psns,
                }));
            }
            _ => {}
        }
    }

    /// A go-back-N to `psn` that no NAK explains: the requester's local ACK timer fired. The interval runs
    /// from the last time this PSN was sent (its first send, or its last resend). Within the reorder
    /// window (below any local ACK timeout in use) no timer fired: a resend whose NAK the capture missed,
    /// or one held up on the way; the go-back-N stands, no timeout is told.
    fn timed_out(&mut self, id: FlowId, number: u64, ts: u64, psn: u32) -> Option<Kind> {
        let reorder_window = self.cfg.reorder_window_nanos;
        let f = &mut self.flows[id];
        let last_sent = match f.req.rc.resent {
            Some(r) if r.psn == psn => r.ts,
            _ => f
                .req
                .timing
                .outstanding
                .iter()
                .find(|o| o.psn() == psn)
                .map_or(f.progress_ts, |o| o.sent),
        };
        let interval = ts.saturating_sub(last_sent);
        if interval < reorder_window {
            return None;
        }
        let resent = Repeat::again(f.req.rc.resent, psn, ts, number);
        f.req.rc.resent = Some(resent);
        f.req.rc.timer_ns = interval;
        f.timers
            .get_or_insert_with(Default::default)
            .on_resend(interval, resent.count);
        Some(Kind::TimeoutRetransmission {
            psn,
            interval_us: interval / 1000,
            timeout_exp: timeout_exponent(interval),
            retry: resent.count,
        })
    }

    /// A request far from the PSN the flow expects, after the flow was idle longer than the stall time, is a
    /// new connection on the same QP number: a new epoch, not a retransmission or a gap. So is the first
    /// request after a handshake named the flow's QPs again.
    fn new_epoch_if(&mut self, id: FlowId, number: u64, ts: u64, psn: u32) {
        let f = &mut self.flows[id];
        let idle = ts.saturating_sub(f.prev_ts);
        let far = psn::diff(psn, f.req.psn.next).unsigned_abs() > SeenWindow::WINDOW;
        let handshake = f.conn.is_some_and(|l| l.new_epoch);
        if let Some(l) = &mut f.conn {
            l.new_epoch = false;
        }
        if !f.req.psn.started || !(handshake || far && idle > self.cfg.stall_nanos) {
            return;
        }
        let expected = f.req.psn.next;
        self.raise(Event {
            ts_nanos: ts,
            flow: Some(id),
            frame: number,
            kind: Kind::NewEpoch {
                psn,
                expected,
                idle_us: idle / 1000,
            },
        });
        // The old connection's responder may answer for another QP now: pair afresh, unless the handshake
        // that made the new connection named this pair.
        let pair = self.flows[id].paired_with;
        if !handshake {
            self.flows[id].paired_with = None;
            self.flows[id].paired_by = None;
        }
        if let Some(old) = pair.and_then(|p| self.flows.get_mut(p)) {
            // Its responder side belonged to the old connection; its own requests, if any, stay as they are.
            if !handshake {
                old.paired_with = None;
                old.paired_by = None;
            }
            old.resp.last_msn = None;
            old.resp.read = None;
            old.resp.next_read_psn = None;
            old.resp.highest = None;
        }
        let f = &mut self.flows[id];
        f.req.psn.new_epoch();
        f.req.timing.outstanding.clear();
        f.req.timing.reads.clear();
        f.req.rc = Rc {
            epochs: f.req.rc.epochs + 1,
            answered: f.req.rc.answered,
            ..Rc::default()
        };
        if f.resp.used() {
            // As responder too (bidirectional traffic on the QP), it starts afresh.
            f.resp.last_msn = None;
            f.resp.read = None;
            f.resp.read_completed = None;
        }
        f.naks.on_new_epoch();
    }

    fn message(&mut self, id: FlowId, ts: u64, number: u64, frame: &Frame) {
        let Some(roce) = &frame.roce else { return };
        let op = roce.bth.op();
        if !op.is_send_or_write() {
            return;
        }
        let payload = roce.payload_len.unwrap_or(0) as u64;
        let dma_len = roce.ext.reth.map(|r| r.dma_len);
        let m = &mut self.flows[id].req.messages;
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
                self.raise(Event {
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
