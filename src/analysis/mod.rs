//! The streaming analysis engine: fed one parsed frame at a time by any source (file, live capture), it keeps
//! per-flow transport state in memory bounded by the number of flows, not by the capture size.
pub mod events;
pub mod flow;
pub mod psn;
pub mod series;

use parsers::aeth::{NakCode, Syndrome};
use parsers::frame::{Addr, Frame, Roce};
use parsers::icrc::IcrcStatus;
use parsers::mac_control::MacControl;
use parsers::opcode::{CNP, Position};
use rustc_hash::FxHashMap;

use events::{Event, Events, Kind};
use flow::{Flow, FlowKey, Timing};
use psn::{MTUS as MTU_CANDIDATES, Step};

/// What the analysis assumes where the wire does not say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// Path MTU in bytes; inferred from the largest FIRST/MIDDLE payload when not given.
    pub mtu: Option<u32>,
    /// Link speed for converting pause quanta to time, bits per second.
    pub link_speed_bps: u64,
    /// A CE-marked packet counts as answered when a CNP toward its sender follows within this time.
    pub cnp_window_nanos: u64,
    /// RNR NAKs on one flow within one second that make a storm.
    pub rnr_storm: u64,
}

impl Config {
    /// `--cnp-window-us`: a DCQCN notification point answers within tens of microseconds; a millisecond
    /// leaves room for a slow host.
    pub const DEFAULT_CNP_WINDOW_US: u64 = 1000;
    /// `--link-speed`, when not given.
    pub const DEFAULT_LINK_SPEED_BPS: u64 = 100_000_000_000;
}

impl Default for Config {
    fn default() -> Self {
        Config {
            mtu: None,
            link_speed_bps: Self::DEFAULT_LINK_SPEED_BPS,
            cnp_window_nanos: Self::DEFAULT_CNP_WINDOW_US * 1000,
            rnr_storm: 10,
        }
    }
}

/// Capture-wide counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    pub frames: u64,
    pub roce_frames: u64,
    pub other_frames: u64,
    pub malformed: u64,
    pub icrc_bad: u64,
    pub icrc_unverifiable: u64,
    pub first_ts: Option<u64>,
    pub last_ts: u64,
    pub bytes: u64,
}

/// PAUSE and PFC frames for one priority.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PriorityPause {
    pub frames: u64,
    pub xoff: u64,
    pub xon: u64,
    pub quanta: u64,
    /// Time and frame number of the first XOFF.
    pub first_xoff: Option<(u64, u64)>,
}

/// What the engine made of one frame: the flow it counted it in and how, so that views mark frames exactly
/// as the analysis counted them (the TUI's PSN chart, the SVG plots) instead of judging them again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Classified {
    /// Index into [`Engine::flows`].
    pub flow: Option<u32>,
    pub class: Class,
}

/// How the engine counted a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum Class {
    /// Not RoCE, or RoCE the analysis does not count as a request or response (UD, unknown opcodes).
    #[default]
    Other,
    /// A request at the next expected PSN (or the flow's first).
    Request,
    /// A request ahead of the next expected PSN: the PSNs between are missing.
    Gap,
    /// A request at or behind the highest PSN seen (go-back-N, a duplicate).
    Retransmission,
    /// A response that acknowledges (ACK, READ response, atomic ACK).
    Response,
    /// A NAK (PSN sequence error, invalid request, remote access or operational error).
    Nak,
    RnrNak,
    Cnp,
    /// A bad ICRC: the receiver drops it, so nothing else is counted.
    BadIcrc,
    Malformed,
}

impl Class {
    /// A request as the PSN chart shows it (the three request classes).
    pub fn is_request(self) -> bool {
        matches!(self, Class::Request | Class::Gap | Class::Retransmission)
    }

    /// A NAK of either kind, as the PSN chart marks it on the requester's line.
    pub fn is_nak(self) -> bool {
        matches!(self, Class::Nak | Class::RnrNak)
    }
}

pub struct Engine {
    pub cfg: Config,
    pub totals: Totals,
    pub flows: Vec<Flow>,
    index: FxHashMap<FlowKey, u32>,
    /// Flows that carried requests, by (source, destination): candidates for pairing with responses.
    requesters: FxHashMap<(Addr, Addr), Vec<u32>>,
    /// The last flow looked up: consecutive packets usually belong to one flow.
    last: Option<(FlowKey, u32)>,
    /// PFC frames per priority 0-7.
    pub pause: [PriorityPause; 8],
    /// 802.3x PAUSE frames: they pause the whole link.
    pub link_pause: PriorityPause,
    pub events: Events,
    inferred_mtu: u32,
}

impl Engine {
    pub fn new(cfg: Config) -> Engine {
        Engine {
            cfg,
            totals: Totals::default(),
            flows: Vec::new(),
            index: FxHashMap::default(),
            requesters: FxHashMap::default(),
            last: None,
            pause: [PriorityPause::default(); 8],
            link_pause: PriorityPause::default(),
            events: Events::default(),
            inferred_mtu: 0,
        }
    }

    /// Feeds one frame: `number` is its position in the capture (from 1), `ts` its time in nanoseconds.
    /// Returns how it was counted.
    pub fn ingest(&mut self, number: u64, ts: u64, frame: &Frame) -> Classified {
        let t = &mut self.totals;
        t.frames += 1;
        t.bytes += frame.orig_len as u64;
        t.first_ts.get_or_insert(ts);
        t.last_ts = ts;
        if frame.to_roce {
            t.roce_frames += 1;
        } else {
            t.other_frames += 1;
        }
        if let Some(mc) = frame.mac_control {
            self.pause_frame(number, ts, mc);
        }
        let flow_id = match (&frame.roce, frame.src(), frame.dst()) {
            (Some(r), Some(src), Some(dst)) => Some(self.flow_id(
                FlowKey {
                    src,
                    dst,
                    dest_qp: r.bth.dest_qp,
                },
                ts,
                number,
            )),
            _ => None,
        };
        if let Some(m) = frame.malformed {
            self.totals.malformed += 1;
            if let Some(id) = flow_id {
                self.flows[id as usize].malformed += 1;
            }
            self.events.push(Event {
                ts_nanos: ts,
                flow: flow_id,
                frame: number,
                kind: Kind::Malformed(m),
            });
        }
        let (Some(id), Some(roce)) = (flow_id, &frame.roce) else {
            let class = if frame.malformed.is_some() {
                Class::Malformed
            } else {
                Class::Other
            };
            return Classified {
                flow: flow_id,
                class,
            };
        };
        let class = self.roce(id, number, ts, frame, roce);
        Classified {
            flow: Some(id),
            class,
        }
    }

    /// The per-flow part of [`Engine::ingest`] for a RoCE frame of flow `id`.
    fn roce(&mut self, id: u32, number: u64, ts: u64, frame: &Frame, roce: &Roce) -> Class {
        let start = self.totals.first_ts.unwrap_or(ts);
        let f = &mut self.flows[id as usize];
        f.packets += 1;
        f.bytes += frame.orig_len as u64;
        if f.packets == 1 {
            f.first_psn = roce.bth.psn;
        }
        f.last_psn = roce.bth.psn;
        f.last_ts = ts;
        f.series
            .add(ts.saturating_sub(start), frame.orig_len as u64);
        let bth = roce.bth;
        f.count_opcode(bth.opcode);
        f.fecn += u64::from(bth.fecn);
        f.becn += u64::from(bth.becn);
        f.pcp = frame.vlans.iter().flatten().last().map(|v| v.pcp).or(f.pcp);
        f.dscp = frame.dscp();
        let ecn = frame.ecn().unwrap_or(0);
        f.ecn[usize::from(ecn & 3)] += 1;
        match roce.icrc_status {
            Some(IcrcStatus::Bad { expected, found }) => {
                f.icrc_bad += 1;
                self.totals.icrc_bad += 1;
                self.events.push(Event {
                    ts_nanos: ts,
                    flow: Some(id),
                    frame: number,
                    kind: Kind::BadIcrc { expected, found },
                });
                // A packet that failed its CRC is dropped by the receiver: do not analyse its contents.
                return Class::BadIcrc;
            }
            Some(IcrcStatus::Unverifiable) => {
                f.icrc_unverifiable += 1;
                self.totals.icrc_unverifiable += 1;
            }
            _ => {}
        }
        if frame.malformed.is_some() {
            return Class::Malformed;
        }
        let op = bth.op();
        let payload = roce.payload_len.unwrap_or(0) as u64;
        f.payload_bytes += payload;
        if bth.opcode == CNP {
            f.cnp += 1;
            self.cnp_received(id, ts);
            return Class::Cnp;
        }
        if let Some(deth) = roce.ext.deth {
            f.src_qp = Some(deth.src_qp);
        }
        if ecn == 3 {
            self.ce_marked(id, ts);
        }
        if op.is_request() {
            self.request(id, number, ts, frame)
        } else if op.is_response() {
            self.response(id, number, ts, frame)
        } else {
            Class::Other
        }
    }

    fn flow_id(&mut self, key: FlowKey, ts: u64, number: u64) -> u32 {
        if let Some((k, id)) = self.last
            && k == key
        {
            return id;
        }
        let flows = &mut self.flows;
        let id = *self.index.entry(key).or_insert_with(|| {
            flows.push(Flow::new(key, ts, number));
            (flows.len() - 1) as u32
        });
        self.last = Some((key, id));
        id
    }

    fn pause_frame(&mut self, number: u64, ts: u64, mc: MacControl) {
        let count = |stats: &mut PriorityPause, q: u16| {
            stats.frames += 1;
            stats.quanta += u64::from(q);
            if q == 0 {
                stats.xon += 1;
            } else {
                stats.xoff += 1;
                stats.first_xoff.get_or_insert((ts, number));
            }
        };
        match mc {
            MacControl::Pause { quanta } => count(&mut self.link_pause, quanta),
            MacControl::Pfc {
                class_enable,
                quanta,
            } => {
                for (p, (stats, q)) in self.pause.iter_mut().zip(quanta).enumerate() {
                    if class_enable & (1 << p) != 0 {
                        count(stats, q);
                    }
                }
            }
            MacControl::Other { .. } => {}
        }
    }

    /// The path MTU in use: configured, or inferred from full-size segments.
    pub fn mtu(&self) -> Option<u32> {
        self.cfg.mtu.or_else(|| {
            MTU_CANDIDATES
                .iter()
                .copied()
                .find(|m| *m == self.inferred_mtu)
        })
    }

    /// Pause time implied by `quanta` at the configured link speed (one quantum = 512 bit times), in µs.
    pub fn pause_us(&self, quanta: u64) -> f64 {
        quanta as f64 * 512.0 * 1e6 / self.cfg.link_speed_bps.max(1) as f64
    }

    fn request(&mut self, id: u32, number: u64, ts: u64, frame: &Frame) -> Class {
        let Some(roce) = &frame.roce else {
            return Class::Other;
        };
        let bth = roce.bth;
        let op = bth.op();
        let payload = roce.payload_len.unwrap_or(0) as u64;
        let mtu = self.mtu();
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
        let f = &mut self.flows[id as usize];
        f.requests += 1;
        let (step, taken) = f.psn.request(bth.psn, consumes, read_len.unwrap_or(0));
        let retransmitted = matches!(step, Step::Retransmit { .. });
        let class = match step {
            Step::Gap { .. } => Class::Gap,
            Step::Retransmit { .. } => Class::Retransmission,
            Step::First | Step::InOrder => Class::Request,
        };
        match step {
            Step::Gap { expected, missing } => {
                let after = psn::add(expected, u32::MAX);
                self.events.push(Event {
                    ts_nanos: ts,
                    flow: Some(id),
                    frame: number,
                    kind: Kind::PsnGap { missing, after },
                });
            }
            Step::Retransmit { rewind: true, .. } => {
                let behind = (-psn::diff(bth.psn, f.psn.next)) as u32;
                let after_nak_us = f.nak_ts.take().map(|nak| ts.saturating_sub(nak) / 1000);
                let after_progress_us = ts.saturating_sub(f.progress_ts) / 1000;
                self.events.push(Event {
                    ts_nanos: ts,
                    flow: Some(id),
                    frame: number,
                    kind: Kind::GoBackN {
                        from: bth.psn,
                        behind,
                        after_nak_us,
                        after_progress_us,
                    },
                });
            }
            _ => {}
        }
        let f = &mut self.flows[id as usize];
        if retransmitted {
            f.retransmitted_bytes += payload;
        } else {
            f.progress_ts = ts;
        }
        // Timing: every new request waits for its ACK; READs also for their first response.
        let t = &mut f.timing;
        if t.outstanding.len() == Timing::PENDING_LIMIT {
            t.outstanding.pop_front();
        }
        // READs are timed to their first response, not here; retransmissions are ambiguous (Karn).
        t.outstanding
            .push_back((bth.psn, ts, retransmitted || read_len.is_some()));
        if read_len.is_some() && !retransmitted {
            if t.reads.len() == Timing::PENDING_LIMIT {
                t.reads.pop_front();
            }
            t.reads.push_back((bth.psn, ts));
        }
        if taken {
            self.message(id, ts, number, frame);
        }
        let f = &mut self.flows[id as usize];
        if !f.registered {
            f.registered = true;
            self.requesters
                .entry((f.key.src, f.key.dst))
                .or_default()
                .push(id);
        }
        class
    }

    fn message(&mut self, id: u32, ts: u64, number: u64, frame: &Frame) {
        let Some(roce) = &frame.roce else { return };
        let op = roce.bth.op();
        if !op.is_send_or_write() {
            return;
        }
        let payload = roce.payload_len.unwrap_or(0) as u64;
        let dma_len = roce.ext.reth.map(|r| r.dma_len);
        let m = &mut self.flows[id as usize].messages;
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

    /// The requester flow whose requests this response (from B to A) answers: the flow already paired, or
    /// a flow from A to B whose PSN space holds `psn`.
    fn pair(&mut self, id: u32, psn: u32) -> Option<u32> {
        let f = &self.flows[id as usize];
        if let Some(p) = f.paired_with {
            return Some(p);
        }
        let candidates = self.requesters.get(&(f.key.dst, f.key.src))?;
        let found = candidates.iter().copied().find(|c| {
            let r = &self.flows[*c as usize];
            r.paired_with.is_none() && (r.psn.covers(psn) || r.psn.next == psn)
        })?;
        self.flows[id as usize].paired_with = Some(found);
        self.flows[found as usize].paired_with = Some(id);
        Some(found)
    }

    fn response(&mut self, id: u32, number: u64, ts: u64, frame: &Frame) -> Class {
        let Some(roce) = &frame.roce else {
            return Class::Other;
        };
        let bth = roce.bth;
        let op = bth.op();
        let requester = self.pair(id, bth.psn);
        self.flows[id as usize].responses += 1;
        if op.is_read_response() {
            self.read_response(id, requester, number, ts, frame);
        }
        let Some(aeth) = roce.ext.aeth else {
            return Class::Response;
        };
        let syndrome = aeth.decoded();
        let f = &mut self.flows[id as usize];
        match syndrome {
            Syndrome::Ack { .. } => {
                if op.is_ack() {
                    f.resp.acks += 1;
                    if f.resp.last_ack == Some((bth.psn, aeth.msn)) {
                        f.resp.duplicate_acks += 1;
                    }
                    f.resp.last_ack = Some((bth.psn, aeth.msn));
                } else if op.is_atomic_ack() {
                    f.resp.atomic_acks += 1;
                }
                if let Some(r) = requester {
                    self.acknowledged(r, bth.psn, ts);
                }
                Class::Response
            }
            Syndrome::RnrNak { timer } => {
                let r = &mut f.resp;
                r.rnr_naks += 1;
                r.rnr_timers[usize::from(timer & 31)] += 1;
                if r.rnr_naks == 1 {
                    r.first_rnr_ts = ts;
                }
                r.last_rnr_ts = ts;
                if r.rnr_naks <= self.cfg.rnr_storm {
                    let timer_us = syndrome.rnr_micros().unwrap_or(0);
                    self.events.push(Event {
                        ts_nanos: ts,
                        flow: Some(id),
                        frame: number,
                        kind: Kind::RnrNak {
                            psn: bth.psn,
                            timer_us,
                        },
                    });
                }
                if let Some(r) = requester {
                    self.flows[r as usize].nak_ts = Some(ts);
                }
                Class::RnrNak
            }
            Syndrome::Nak(code) => {
                let n = &mut f.resp.naks;
                match code {
                    NakCode::PsnSequenceError => n.psn_seq_err += 1,
                    NakCode::InvalidRequest => n.invalid_request += 1,
                    NakCode::RemoteAccessError => n.remote_access += 1,
                    NakCode::RemoteOperationalError => n.remote_op += 1,
                    NakCode::InvalidRdRequest => n.invalid_rd_request += 1,
                    NakCode::Reserved(_) => n.reserved += 1,
                }
                self.events.push(Event {
                    ts_nanos: ts,
                    flow: Some(id),
                    frame: number,
                    kind: Kind::Nak { code, psn: bth.psn },
                });
                if let Some(r) = requester {
                    self.flows[r as usize].nak_ts = Some(ts);
                    // A NAK for PSN n acknowledges every PSN before n.
                    self.acknowledged(r, psn::add(bth.psn, u32::MAX), ts);
                }
                Class::Nak
            }
            Syndrome::Reserved { .. } => Class::Response,
        }
    }

    fn read_response(
        &mut self,
        id: u32,
        requester: Option<u32>,
        number: u64,
        ts: u64,
        frame: &Frame,
    ) {
        let Some(roce) = &frame.roce else { return };
        let bth = roce.bth;
        let f = &mut self.flows[id as usize];
        f.resp.read_responses += 1;
        let position = bth.op().position();
        if matches!(position, Some(Position::Middle | Position::Last))
            && let Some(expected) = f.resp.next_read_psn
            && psn::diff(bth.psn, expected) > 0
        {
            f.resp.implied_naks += 1;
            self.events.push(Event {
                ts_nanos: ts,
                flow: Some(id),
                frame: number,
                kind: Kind::ImpliedNak {
                    expected,
                    got: bth.psn,
                },
            });
        }
        let f = &mut self.flows[id as usize];
        f.resp.next_read_psn = Some(psn::add(bth.psn, 1));
        if matches!(position, Some(Position::First | Position::Middle)) {
            let payload = roce.payload_len.unwrap_or(0) as u32;
            self.inferred_mtu = self.inferred_mtu.max(payload);
        }
        if let (Some(r), Some(Position::First | Position::Only)) = (requester, position) {
            let t = &mut self.flows[r as usize].timing;
            while let Some(&(psn, sent)) = t.reads.front() {
                if psn::diff(psn, bth.psn) > 0 {
                    break;
                }
                t.reads.pop_front();
                if psn == bth.psn {
                    Timing::record(&mut t.read, ts.saturating_sub(sent));
                }
            }
        }
    }

    /// An ACK for `psn` covers every outstanding request up to it: sample the latency of the one it names.
    fn acknowledged(&mut self, requester: u32, psn: u32, ts: u64) {
        let t = &mut self.flows[requester as usize].timing;
        while let Some(&(p, sent, unsampled)) = t.outstanding.front() {
            if psn::diff(p, psn) > 0 {
                break;
            }
            t.outstanding.pop_front();
            if p == psn && !unsampled {
                Timing::record(&mut t.ack, ts.saturating_sub(sent));
            }
        }
    }

    fn ce_marked(&mut self, id: u32, ts: u64) {
        let f = &mut self.flows[id as usize];
        f.expire_ce(ts.saturating_sub(self.cfg.cnp_window_nanos));
        if f.ce_pending.len() == flow::CE_PENDING_LIMIT {
            // More marks within one window than a link carries: the oldest is settled as unanswered.
            f.expire_ce(u64::MAX);
        }
        f.ce_pending.push_back(ts);
    }

    /// A CNP in flow `id` (from B to A) answers the CE marks of the flow it is paired with, or of every flow
    /// from A to B when it is not paired.
    fn cnp_received(&mut self, id: u32, ts: u64) {
        let f = &self.flows[id as usize];
        if let Some(p) = f.paired_with {
            self.answer_ce(p, ts);
            return;
        }
        let reverse = (f.key.dst, f.key.src);
        let n = self.requesters.get(&reverse).map_or(0, Vec::len);
        for i in 0..n {
            if let Some(t) = self
                .requesters
                .get(&reverse)
                .and_then(|v| v.get(i))
                .copied()
            {
                self.answer_ce(t, ts);
            }
        }
    }

    /// A CNP at `ts` toward the sender of flow `id`: its pending CE marks are answered if within the window.
    fn answer_ce(&mut self, id: u32, ts: u64) {
        let f = &mut self.flows[id as usize];
        f.expire_ce(ts.saturating_sub(self.cfg.cnp_window_nanos));
        f.ce_pending.clear();
    }

    /// Closes what only the end of the capture settles: pending CE marks, RNR storms, PFC summaries.
    pub fn finish(&mut self) {
        let end = self.totals.last_ts;
        let window = self.cfg.cnp_window_nanos;
        let mtu = self.mtu();
        for (id, f) in self.flows.iter_mut().enumerate() {
            f.psn.settle(mtu);
            // Marks within the last window of the capture may have been answered after it ended.
            f.expire_ce(end.saturating_sub(window));
            if f.ce_without_cnp > 0 {
                self.events.push(Event {
                    ts_nanos: f.last_ts,
                    flow: Some(id as u32),
                    frame: f.first_frame,
                    kind: Kind::CeWithoutCnp {
                        count: f.ce_without_cnp,
                    },
                });
            }
            let r = &f.resp;
            let span = r.last_rnr_ts.saturating_sub(r.first_rnr_ts);
            if r.rnr_naks >= self.cfg.rnr_storm
                && span <= r.rnr_naks / self.cfg.rnr_storm.max(1) * 1_000_000_000
            {
                self.events.push(Event {
                    ts_nanos: r.first_rnr_ts,
                    flow: Some(id as u32),
                    frame: f.first_frame,
                    kind: Kind::RnrStorm {
                        count: r.rnr_naks,
                        span_us: span / 1000,
                    },
                });
            }
        }
        let priorities = self
            .pause
            .iter()
            .enumerate()
            .map(|(p, s)| (Some(p as u8), *s));
        for (priority, stats) in priorities
            .chain([(None, self.link_pause)])
            .collect::<Vec<_>>()
        {
            if let Some((ts, frame)) = stats.first_xoff {
                let pause_us = self.pause_us(stats.quanta) as u64;
                self.events.push(Event {
                    ts_nanos: ts,
                    flow: None,
                    frame,
                    kind: Kind::Pause {
                        priority,
                        frames: stats.xoff,
                        pause_us,
                    },
                });
            }
        }
        self.events.list.sort_by_key(|e| e.ts_nanos);
    }
}
