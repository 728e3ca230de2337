//! The responder's side of a flow: ACKs, NAKs, RNR NAKs, READ responses and atomic ACKs, what they
//! acknowledge on the paired requester, and what they get wrong (a PSN never sent, an MSN going back, READ
//! responses that do not match their READ).
use parsers::aeth::{Aeth, NakCode, Syndrome};
use parsers::frame::{Frame, Roce};
use parsers::opcode::Position;

use super::diagnosis::{ReadResponse, Repeat, SeenOffsets};
use super::events::{Event, Kind, ReadMismatch};
use super::flow::{Acknowledged, Awaits, PairedBy, Timing};
use super::psn::{self, read_psns};
use smallvec::SmallVec;

use super::{Class, Engine, FlowId};

impl Engine {
    /// The requester flow whose requests this response (from B to A) answers: the flow already paired, a
    /// flow from A to B whose PSN space holds `psn`, or, when it is the only requester from A to B left
    /// unpaired and this the only responder from B to A left unpaired, answering within the stall time of
    /// its last request, that one (by elimination: its answer names no PSN it sent, which `check_window`
    /// then tells).
    fn pair(&mut self, id: FlowId, psn: u32, ts: u64) -> Option<FlowId> {
        let f = &self.flows[id];
        if let Some(p) = f.paired_with {
            return Some(p);
        }
        let (forward, back) = ((f.key.dst, f.key.src), (f.key.src, f.key.dst));
        let unpaired = |ids: Option<&SmallVec<[FlowId; 2]>>| -> SmallVec<[FlowId; 2]> {
            ids.into_iter()
                .flatten()
                .copied()
                .filter(|c| self.flows.get(*c).is_some_and(|r| r.paired_with.is_none()))
                .collect()
        };
        let candidates = unpaired(self.requesters.get(&forward));
        if let Some(found) = candidates.iter().copied().find(|c| {
            let r = &self.flows[*c];
            r.req.psn.covers(psn) || r.req.psn.next == psn
        }) {
            self.pair_flows(id, found, PairedBy::Psn);
            return Some(found);
        }
        let stall = self.cfg.stall_nanos;
        let [only] = candidates.as_slice() else {
            return None;
        };
        let r = &self.flows[*only];
        let in_time = r.first_request.is_some_and(|(_, first)| first <= ts)
            && ts.saturating_sub(r.req.rc.last_request_ts) <= stall;
        let alone = unpaired(self.responders.get(&back)).as_slice() == [id];
        if !(in_time && alone && *only != id) {
            return None;
        }
        let only = *only;
        self.pair_flows(id, only, PairedBy::Elimination);
        Some(only)
    }

    pub(super) fn response(&mut self, id: FlowId, number: u64, ts: u64, frame: &Frame) -> Class {
        let Some(roce) = &frame.roce else {
            return Class::Other;
        };
        let bth = roce.bth;
        let op = bth.op();
        let f = &mut self.flows[id];
        f.responses += 1;
        if !f.answering {
            f.answering = true;
            self.responders
                .entry((f.key.src, f.key.dst))
                .or_default()
                .push(id);
        }
        let requester = self.pair(id, bth.psn, ts);
        if let Some(r) = requester {
            self.flows[r].req.rc.answered = true;
            self.check_window(id, r, number, ts, bth.psn);
        }
        // A NAK names the PSN the responder expects: it acknowledges the one before.
        let nak = roce
            .ext
            .aeth
            .is_some_and(|a| matches!(a.decoded(), Syndrome::Nak(_) | Syndrome::RnrNak { .. }));
        let seen = Acknowledged {
            acked: if nak {
                psn::add(bth.psn, u32::MAX)
            } else {
                bth.psn
            },
            psn: bth.psn,
        };
        let order = self.response_order(id, requester, number, ts, seen);
        // The READ this response answers (its first response names it; the others follow it).
        let read_answered = match op.position() {
            _ if !op.is_read_response() => None,
            Some(Position::First | Position::Only) => Some(bth.psn),
            _ => self.flows[id].resp.read.map(|r| r.read_psn),
        };
        if op.is_read_response() {
            self.read_response(id, requester, number, ts, roce);
        }
        // Held up on the way, unless it is a NAK (counted as one wherever it stands).
        let answered = if order == Order::HeldUp {
            Class::Reordered
        } else {
            Class::Response
        };
        let Some(aeth) = roce.ext.aeth else {
            return answered;
        };
        if order == Order::Ahead {
            self.check_msn(id, number, ts, aeth.msn);
        }
        match aeth.decoded() {
            Syndrome::Ack { .. } => {
                let f = &mut self.flows[id];
                if op.is_ack() {
                    f.resp.acks += 1;
                    if order != Order::HeldUp {
                        if f.resp.last_ack == Some((bth.psn, aeth.msn)) {
                            f.resp.duplicate_acks += 1;
                        }
                        f.resp.last_ack = Some((bth.psn, aeth.msn));
                    }
                } else if op.is_atomic_ack() {
                    f.resp.atomic_acks += 1;
                }
                let answer = match op.position() {
                    Some(Position::Last | Position::Only) => read_answered.map(ReadAnswer::Ends),
                    _ => read_answered.map(ReadAnswer::Part),
                };
                if let Some(r) = requester
                    && let Some(unanswered) = self.acknowledged(r, bth.psn, ts, answer)
                {
                    self.implied_nak(id, r, number, ts, unanswered, bth.psn);
                }
                answered
            }
            Syndrome::RnrNak { .. } => {
                self.rnr_nak(id, requester, number, ts, bth.psn, &aeth);
                Class::RnrNak
            }
            Syndrome::Nak(code) => {
                self.nak(id, requester, number, ts, bth.psn, code);
                Class::Nak
            }
            Syndrome::Reserved { .. } => answered,
        }
    }

    fn rnr_nak(
        &mut self,
        id: FlowId,
        requester: Option<FlowId>,
        number: u64,
        ts: u64,
        psn: u32,
        aeth: &Aeth,
    ) {
        let r = &mut self.flows[id].resp;
        r.rnr_naks += 1;
        let code = aeth.syndrome & 31;
        match r.rnr_timers.iter_mut().find(|(c, _)| *c == code) {
            Some((_, n)) => *n += 1,
            None => r.rnr_timers.push((code, 1)),
        }
        if r.rnr_naks == 1 {
            r.first_rnr_ts = ts;
            r.first_rnr_frame = number;
        }
        r.last_rnr_ts = ts;
        let timer_us = aeth.decoded().rnr_micros().unwrap_or(0);
        if r.rnr_naks <= self.cfg.rnr_storm {
            self.raise(Event {
                ts_nanos: ts,
                flow: Some(id),
                frame: number,
                kind: Kind::RnrNak { psn, timer_us },
            });
        }
        if let Some(r) = requester {
            let f = &mut self.flows[r];
            f.req.psn.nak(psn);
            f.naks.on_nak(ts, psn);
            f.req.rc.rnr = Some(Repeat::again(f.req.rc.rnr, psn, ts, number));
            f.req.rc.rnr_timer_us = u64::from(timer_us);
        }
    }

    fn nak(
        &mut self,
        id: FlowId,
        requester: Option<FlowId>,
        number: u64,
        ts: u64,
        psn: u32,
        code: NakCode,
    ) {
        let n = &mut self.flows[id].resp.naks;
        match code {
            NakCode::PsnSequenceError => n.psn_seq_err += 1,
            NakCode::InvalidRequest => n.invalid_request += 1,
            NakCode::RemoteAccessError => n.remote_access += 1,
            NakCode::RemoteOperationalError => n.remote_op += 1,
            NakCode::InvalidRdRequest => n.invalid_rd_request += 1,
            NakCode::Reserved(_) => n.reserved += 1,
        }
        self.raise(Event {
            ts_nanos: ts,
            flow: Some(id),
            frame: number,
            kind: Kind::Nak { code, psn },
        });
        if let Some(r) = requester {
            let f = &mut self.flows[r];
            if code == NakCode::PsnSequenceError {
                f.req.psn.nak(psn);
            }
            f.naks.on_nak(ts, psn);
            // A NAK for PSN n acknowledges every PSN before n (a READ or atomic before it is resent for
            // this NAK, not for an implied one).
            self.acknowledged(r, psn::add(psn, u32::MAX), ts, None);
        }
    }

    /// A response must name a PSN the requester `r` sent (a NAK may name the next one; responses to requests
    /// sent before the capture began may name PSNs a window before the first one seen).
    fn check_window(&mut self, id: FlowId, r: FlowId, number: u64, ts: u64, psn: u32) {
        let requests = &self.flows[r].req.psn;
        if !requests.started {
            return;
        }
        let (lo, hi) = requests.window();
        let before = -(psn::SeenWindow::WINDOW as i32);
        if psn::diff(psn, lo) >= before && psn::diff(psn, hi) <= 1 {
            return;
        }
        self.raise(Event {
            ts_nanos: ts,
            flow: Some(id),
            frame: number,
            kind: Kind::AckOutOfWindow { psn, lo, hi },
        });
    }

    /// Where response `seen` of responder `id` stands against the highest PSN its responses acknowledged:
    /// ahead (or
    /// at it), behind as the answer to one of the last resends of its requester whose PSNs hold it (or too
    /// far behind to have been held up: `ack_out_of_window` tells), or behind with nothing resent there:
    /// held up on the way (a `reordered` note, with how far behind). A resend sent before the highest
    /// response came may still be answered after it: the responder answers requests in order, and the
    /// resend may have reached it behind the requests the highest response answers.
    fn response_order(
        &mut self,
        id: FlowId,
        requester: Option<FlowId>,
        number: u64,
        ts: u64,
        seen: Acknowledged,
    ) -> Order {
        let f = &mut self.flows[id];
        let highest = match f.resp.highest {
            Some(h) if psn::diff(seen.acked, h.acked) < 0 => h,
            // The highest again: a duplicate ACK, or the answer to a resent request, which carries the MSN of
            // its answering (newer than that of responses for later PSNs still on the way: a duplicate READ's
            // responses, reordered ahead of the original's).
            Some(h) if seen.acked == h.acked => return Order::Again,
            _ => {
                f.resp.highest = Some(seen);
                return Order::Ahead;
            }
        };
        let psn = seen.psn;
        let resent = requester
            .and_then(|r| self.flows.get(r))
            .is_some_and(|r| r.req.rc.resends.covers(psn));
        if resent {
            return Order::Answer;
        }
        // How far behind, in the PSNs the frames carried.
        let depth = psn::diff(highest.psn, psn).max(0) as u32;
        if depth >= psn::SeenWindow::WINDOW {
            // Further behind than any reordering holds a packet: a response for a PSN never sent.
            return Order::Answer;
        }
        let r = &mut self.flows[id].resp;
        r.reordered += 1;
        r.reorder_depth_max = r.reorder_depth_max.max(depth);
        self.raise(Event {
            ts_nanos: ts,
            flow: Some(id),
            frame: number,
            kind: Kind::Reordered {
                psn,
                highest: highest.psn,
                depth,
                response: true,
            },
        });
        Order::HeldUp
    }

    /// The MSN of a responder's AETHs never goes back (a repeated one is a duplicate ACK). Checked on
    /// responses ahead of the highest PSN answered: one behind it was held up on the way, or answers a resend
    /// (a duplicate atomic is answered with its saved ACK, its MSN then), and may carry an older MSN; one at it
    /// again answers a resend with the MSN of then, which may be newer than that of the responses for later
    /// PSNs still on the way.
    fn check_msn(&mut self, id: FlowId, number: u64, ts: u64, msn: u32) {
        let resp = &mut self.flows[id].resp;
        let previous = resp.last_msn;
        if previous.is_none_or(|p| psn::diff(msn, p) > 0) {
            resp.last_msn = Some(msn);
        }
        if let Some(previous) = previous.filter(|p| psn::diff(msn, *p) < 0) {
            self.raise(Event {
                ts_nanos: ts,
                flow: Some(id),
                frame: number,
                kind: Kind::MsnRegression { msn, previous },
            });
        }
    }

    fn read_response(
        &mut self,
        id: FlowId,
        requester: Option<FlowId>,
        number: u64,
        ts: u64,
        roce: &Roce,
    ) {
        let bth = roce.bth;
        let capture_mtu = self.mtu();
        let f = &mut self.flows[id];
        f.resp.read_responses += 1;
        let position = bth.op().position();
        let mut skipped = false;
        // Nothing is missing from a duplicate answer: the requester has every response already.
        let duplicate = f.resp.read.is_some_and(|r| {
            r.duplicate && read_mismatch(&r, bth.psn, f.mtu_or(capture_mtu)).is_none()
        });
        if !duplicate
            && matches!(position, Some(Position::Middle | Position::Last))
            && let Some(expected) = f.resp.next_read_psn
            && psn::diff(bth.psn, expected) > 0
        {
            skipped = true;
            match requester {
                Some(r) => self.implied_nak(id, r, number, ts, expected, bth.psn),
                None => self.count_implied_nak(id, number, ts, expected, bth.psn),
            }
        }
        let f = &mut self.flows[id];
        // A READ's first response starts its PSNs afresh; one held up behind them moves nothing.
        let after = psn::add(bth.psn, 1);
        f.resp.next_read_psn = match (position, f.resp.next_read_psn) {
            (Some(Position::Middle | Position::Last), Some(n)) if psn::diff(after, n) < 0 => {
                Some(n)
            }
            _ => Some(after),
        };
        let payload = roce.payload_len.unwrap_or(0) as u64;
        if matches!(position, Some(Position::First | Position::Middle)) {
            self.inferred_mtu = self.inferred_mtu.max(payload as u32);
        }
        let mtu = self.flows[id].mtu_or(self.mtu());
        // The READ a first response starts: one waiting for its first response, or one answered before
        // (resent: its responses come again).
        let dma_len = match (requester, position) {
            (Some(r), Some(Position::First | Position::Only)) => {
                self.read_answered(r, ts, bth.psn).or_else(|| {
                    let at = mtu.unwrap_or(psn::MTUS[0]);
                    let read = self.flows[r].req.psn.read_holding(bth.psn, at);
                    read.filter(|(p, _)| *p == bth.psn).map(|(_, len)| len)
                })
            }
            _ => None,
        };
        let continued = matches!(position, Some(Position::Middle | Position::Last))
            .then(|| self.flows[id].resp.read)
            .flatten()
            .filter(|read| read_mismatch(read, bth.psn, mtu).is_none());
        // A middle or last response outside the READ being answered answers another READ of the requester
        // whose first response is still to come (held up on the way), or a READ resumed mid-message (rxe
        // answers it from a middle response).
        let other = match (position, continued) {
            (Some(Position::Middle | Position::Last), None) => requester.and_then(|r| {
                self.flows[r]
                    .req
                    .psn
                    .read_holding(bth.psn, mtu.unwrap_or(psn::MTUS[0]))
            }),
            _ => None,
        };
        let resp = &mut self.flows[id].resp;
        // A first response held up behind the middle ones of its READ goes on with them.
        let joins = resp
            .read
            .is_some_and(|r| r.skipped && r.read_psn == bth.psn);
        let start = dma_len
            .filter(|_| !joins)
            .map(|len| (bth.psn, len, false))
            .or(other.map(|(p, len)| (p, len, true)));
        if let Some((read_psn, dma_len, skipped)) = start {
            let duplicate = resp.read_completed == Some(read_psn);
            resp.read = Some(ReadResponse {
                read_psn,
                dma_len,
                bytes: 0,
                packets: 0,
                skipped: skipped || duplicate,
                duplicate,
                seen: SeenOffsets::default(),
            });
        }
        let Some(mut read) = resp.read else { return };
        let offset = u32::try_from(psn::diff(bth.psn, read.read_psn)).ok();
        if offset.is_none_or(|o| read.seen.first_time(o)) {
            read.bytes += payload;
            read.packets += 1;
        }
        read.skipped |= skipped;
        resp.read = Some(read);
        if let Some(what) = read_mismatch(&read, bth.psn, mtu) {
            self.raise(Event {
                ts_nanos: ts,
                flow: Some(id),
                frame: number,
                kind: Kind::ReadResponseMismatch {
                    read_psn: read.read_psn,
                    what,
                },
            });
            self.flows[id].resp.read = None;
        } else if matches!(position, Some(Position::Last | Position::Only)) {
            let resp = &mut self.flows[id].resp;
            if let (Some(m), false) = (mtu, read.skipped) {
                let ended = ended_mismatch(&read, m);
                resp.read = None;
                if ended.is_none() {
                    resp.read_completed = Some(read.read_psn);
                }
                if let Some(what) = ended {
                    self.raise(Event {
                        ts_nanos: ts,
                        flow: Some(id),
                        frame: number,
                        kind: Kind::ReadResponseMismatch {
                            read_psn: read.read_psn,
                            what,
                        },
                    });
                }
            } else {
                resp.read = None;
            }
        }
    }

    /// The first response to the READ at `psn` of requester `r` came at `ts`: its latency, and its DMA
    /// length, when the READ is known.
    fn read_answered(&mut self, r: FlowId, ts: u64, psn: u32) -> Option<u32> {
        let t = &mut self.flows[r].req.timing;
        let mut dma_len = None;
        while let Some(&r) = t.reads.front() {
            if psn::diff(r.psn, psn) > 0 {
                break;
            }
            t.reads.pop_front();
            if r.psn == psn {
                if r.sample {
                    Timing::record(&mut t.read, ts.saturating_sub(r.sent));
                }
                dma_len = Some(r.dma_len);
            }
        }
        dma_len
    }

    /// The responder `id` answered PSN `got` while the READ or atomic at `expected` of requester `r` was
    /// unanswered, or a READ's responses skipped `expected`: an implied NAK, which the requester answers by
    /// asking again from `expected` (a go-back-N after a NAK, not on its timer).
    fn implied_nak(
        &mut self,
        id: FlowId,
        r: FlowId,
        number: u64,
        ts: u64,
        expected: u32,
        got: u32,
    ) {
        self.count_implied_nak(id, number, ts, expected, got);
        let f = &mut self.flows[r];
        f.req.psn.nak(expected);
        f.naks.on_nak(ts, expected);
    }

    fn count_implied_nak(&mut self, id: FlowId, number: u64, ts: u64, expected: u32, got: u32) {
        self.flows[id].resp.implied_naks += 1;
        self.raise(Event {
            ts_nanos: ts,
            flow: Some(id),
            frame: number,
            kind: Kind::ImpliedNak { expected, got },
        });
    }

    /// An ACK for `psn` covers every outstanding request up to it: sample the latency of the one it names.
    /// A READ waits for the last of its own responses (`read`: this response answers a READ), an atomic for
    /// its atomic ACK. Returns the first READ or atomic passed unanswered (an answer for a later PSN came
    /// first): an implied NAK.
    pub(super) fn acknowledged(
        &mut self,
        requester: FlowId,
        psn: u32,
        ts: u64,
        read: Option<ReadAnswer>,
    ) -> Option<u32> {
        let mtu = self.flows[requester].mtu_or(self.mtu());
        let t = &mut self.flows[requester].req.timing;
        let mut progress = false;
        let mut unanswered = None;
        while let Some(&o) = t.outstanding.front() {
            let into = psn::diff(psn, o.psn());
            if into < 0 {
                break;
            }
            let own = match o.awaits() {
                None => true,
                Some(Awaits::AtomicAck) => into == 0,
                // Its responses, wherever they are (a PSN outside its PSNs is another event), or within
                // its PSNs (at the largest MTU while it is not known: its fewest).
                Some(Awaits::ReadResponses { dma_len }) => {
                    read.is_some_and(|a| a.read() == o.psn())
                        || (into as u32) < psn::read_psns(dma_len, mtu.unwrap_or(4096))
                }
            };
            let ends = matches!(read, Some(ReadAnswer::Ends(_)));
            if own && matches!(o.awaits(), Some(Awaits::ReadResponses { .. })) && !ends {
                // One of its responses, not its last: it waits on.
                break;
            }
            t.outstanding.pop_front();
            progress = true;
            if o.psn() == psn && o.sample() {
                Timing::record(&mut t.ack, ts.saturating_sub(o.sent));
            }
            if !own && o.awaits().is_some() {
                unanswered = unanswered.or(Some(o.psn()));
            }
        }
        if progress {
            let rc = &mut self.flows[requester].req.rc;
            rc.resent = None;
            rc.rnr = None;
            self.stall_ends(requester, ts);
        }
        unanswered
    }
}

/// A READ response: of the READ at its PSN, ending it or a part of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ReadAnswer {
    Part(u32),
    Ends(u32),
}

impl ReadAnswer {
    fn read(self) -> u32 {
        match self {
            ReadAnswer::Part(p) | ReadAnswer::Ends(p) => p,
        }
    }
}

/// Where a response stands against the highest PSN its flow's responses named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Order {
    /// Ahead of it (or the first).
    Ahead,
    /// At it again.
    Again,
    /// Behind it, answering a resend made since.
    Answer,
    /// Behind it, with nothing resent: held up on the way.
    HeldUp,
}

/// A READ response packet at `psn` outside its READ's PSNs (at the path MTU, or at the smallest when not
/// known yet).
fn read_mismatch(read: &ReadResponse, psn: u32, mtu: Option<u32>) -> Option<ReadMismatch> {
    let psns = read_psns(read.dma_len, mtu.unwrap_or(psn::MTUS[0]));
    let into = psn::diff(psn, read.read_psn);
    (into < 0 || into as u32 >= psns).then_some(ReadMismatch::PsnOutside { psn, psns })
}

/// A READ's last response came: its bytes must add up to the DMA length, its packets to what the path MTU
/// implies.
fn ended_mismatch(read: &ReadResponse, mtu: u32) -> Option<ReadMismatch> {
    let expected = read_psns(read.dma_len, mtu);
    if read.bytes != u64::from(read.dma_len) {
        Some(ReadMismatch::Length {
            got: read.bytes,
            dma_len: read.dma_len,
        })
    } else if read.packets != expected {
        Some(ReadMismatch::Packets {
            got: read.packets,
            expected,
            mtu,
        })
    } else {
        None
    }
}
