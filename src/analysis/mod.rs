//! The streaming analysis engine: fed one parsed frame at a time by any source (file, live capture), it keeps
//! per-flow transport state in memory bounded by the number of flows, not by the capture size.
pub mod clock;
mod congestion;
pub mod connections;
pub mod diagnosis;
pub mod ecmp;
pub mod events;
mod evict;
pub mod flow;
mod handshake;
pub mod jobs;
mod kinds;
pub mod latencies;
pub mod life;
mod mirror;
mod on_use;
mod pfc;
pub mod points;
pub mod psn;
pub mod rate;
mod recent;
mod requests;
mod responses;
pub mod series;
pub mod table;
pub mod tally;
pub mod timers;
mod waiting;

use parsers::frame::{Addr, Frame, Roce};
use parsers::icrc::IcrcStatus;
use parsers::opcode::{CNP, Transport};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use events::{Event, Events, Group, Kind};
use flow::{Flow, FlowKey};
use psn::MTUS as MTU_CANDIDATES;
pub use table::{FlowId, FlowTable};

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
    /// Requests unanswered for longer than this are a stall (and, with nothing ever back, no response; a
    /// requester silent this long after resending gave up).
    pub stall_nanos: u64,
    /// At most this many flows are kept: the least recently seen quarter goes when the table is full.
    pub max_flows: Option<usize>,
    /// A flow idle for longer than this is finished and goes (within a sixteenth of it more).
    pub flow_timeout_nanos: Option<u64>,
    /// A priority paused continuously for longer than this is a pause storm.
    pub pause_storm_nanos: u64,
    /// The switch's DSCP -> priority mapping, for untagged traffic.
    pub dscp_map: DscpMap,
    /// Width of the windows a flow's rate is measured in (the CNP reaction, throughput peaks).
    pub rate_window_nanos: u64,
    /// The same RoCE frame seen again within this time is a mirror duplicate (0: never).
    pub mirror_window_nanos: u64,
    /// A request or response held up on the way by at most this long after one behind it came is
    /// reordered, not resent (with no NAK a resend could answer).
    pub reorder_window_nanos: u64,
    /// `--retry-count`: the requesters' retry count where no CM handshake gives it.
    pub retry_count: Option<u8>,
    /// The members of the ECMP group the host pairs' spread is shown for (2 to [`ecmp::MAX_MEMBERS`]).
    pub ecmp_members: u16,
}

/// DSCP (0-63) -> PFC priority (0-7), as `--dscp-map` states the switch maps it; unmapped DSCPs give no
/// priority.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DscpMap(pub [Option<u8>; 64]);

impl Default for DscpMap {
    fn default() -> Self {
        DscpMap([None; 64])
    }
}

impl DscpMap {
    pub fn get(&self, dscp: u8) -> Option<u8> {
        self.0.get(usize::from(dscp)).copied().flatten()
    }

    /// The mapped (DSCP, priority) pairs, in DSCP order.
    pub fn pairs(&self) -> impl Iterator<Item = (u8, u8)> + '_ {
        (0..64u8).filter_map(|d| self.get(d).map(|p| (d, p)))
    }
}

impl Config {
    /// `--cnp-window-us`: a DCQCN notification point answers within tens of microseconds; a millisecond
    /// leaves room for a slow host.
    pub const DEFAULT_CNP_WINDOW_US: u64 = 1000;
    /// `--link-speed`, when not given.
    pub const DEFAULT_LINK_SPEED_BPS: u64 = 100_000_000_000;
    /// `--stall-ms`: an RC responder acknowledges within microseconds; a second is past the local ACK
    /// timeout of perftest (4.096 µs × 2^14 = 67 ms) and of the generator (2^17: 0.54 s), so a request
    /// unanswered this long was resent at least once, or the requester waits on a peer that is gone.
    pub const DEFAULT_STALL_MS: u64 = 1000;
    /// `--max-flows`: a flow costs about 1.5 KB here, so 100,000 flows are about 150 MB, and more QPs than
    /// one capture point of a fabric usually sees at once.
    pub const DEFAULT_MAX_FLOWS: usize = 100_000;
    /// `--flow-timeout`: longer than any retry sequence a requester keeps up (7 retries of a 4.3 s local
    /// ACK timeout, 2^20 × 4.096 µs, are 30 s; RNR and CM retries are shorter), so only a flow that is done
    /// goes.
    pub const DEFAULT_FLOW_TIMEOUT_S: u64 = 300;
    /// `--pause-storm-ms`: a PFC pause is renewed every few hundred microseconds while a queue is full; a
    /// priority held paused for a tenth of a second without a break is stuck (a storm, a deadlock), not
    /// congested.
    pub const DEFAULT_PAUSE_STORM_MS: u64 = 100;
    /// `--rate-window-us`: DCQCN cuts a sender's rate within microseconds of a CNP and raises it again on a
    /// timer of a few hundred microseconds (mlx5's rpg_time_reset, 300 µs): two 100 µs windows after the
    /// CNP see the cut, and at 100 Gb/s one holds 1.25 MB.
    pub const DEFAULT_RATE_WINDOW_US: u64 = 100;
    /// `--mirror-window-us`: the two copies of a mirrored frame are a switch's forwarding and queueing
    /// delay apart: microseconds, up to a millisecond behind a deep buffer (12.5 MB drain in 1 ms at 100 Gb/s).
    pub const DEFAULT_MIRROR_WINDOW_US: u64 = 1000;
    /// `--reorder-window-us`: a network holds a packet back behind later ones for microseconds (ECMP paths
    /// of different length, adaptive routing), a deep buffer for a millisecond or two; a requester resends
    /// on its timer no sooner than its local ACK timeout, which is above 8 ms in practice (perftest's
    /// default 14 is 67 ms, NCCL's 18 is 1.07 s; exponent 11 is 8.4 ms).
    pub const DEFAULT_REORDER_WINDOW_US: u64 = 5000;
    /// `--ecmp-members`.
    pub const DEFAULT_ECMP_MEMBERS: u16 = ecmp::DEFAULT_MEMBERS;

    /// How long after a NAK its go-back-N's packets may still come out of order: the requester's answer
    /// (a loaded Soft-RoCE host took up to 9 ms in the lab) and the network's hold-up on top, twice the
    /// reorder window.
    pub(crate) fn nak_held_up(&self) -> u64 {
        self.reorder_window_nanos.saturating_mul(2)
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            mtu: None,
            link_speed_bps: Self::DEFAULT_LINK_SPEED_BPS,
            cnp_window_nanos: Self::DEFAULT_CNP_WINDOW_US * 1000,
            rnr_storm: 10,
            stall_nanos: Self::DEFAULT_STALL_MS * 1_000_000,
            max_flows: None,
            flow_timeout_nanos: None,
            pause_storm_nanos: Self::DEFAULT_PAUSE_STORM_MS * 1_000_000,
            dscp_map: DscpMap::default(),
            rate_window_nanos: Self::DEFAULT_RATE_WINDOW_US * 1000,
            mirror_window_nanos: Self::DEFAULT_MIRROR_WINDOW_US * 1000,
            reorder_window_nanos: Self::DEFAULT_REORDER_WINDOW_US * 1000,
            ecmp_members: Self::DEFAULT_ECMP_MEMBERS,
            retry_count: None,
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
    /// RoCE frames that came in a mirror session or tunnel (ERSPAN, GRE, VXLAN).
    pub encapsulated: u64,
    /// RoCE frames seen twice within the mirror window: counted once.
    pub mirror_duplicates: u64,
    /// Jumps of the capture's clock told (`clock_jump` events), and frames stamped before the one before
    /// them, however little.
    pub clock_jumps: u64,
    pub clock_steps_back: u64,
    pub first_ts: Option<u64>,
    pub last_ts: u64,
    pub bytes: u64,
}

/// What the engine made of one frame: the flow it counted it in and how, so that views mark frames exactly
/// as the analysis counted them (the TUI's PSN chart, the SVG plots) instead of judging them again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Classified {
    /// The flow it was counted in.
    pub flow: Option<FlowId>,
    pub class: Class,
}

impl Classified {
    /// As the views hold it: the flow by its number.
    pub fn counted(self) -> Counted {
        Counted {
            flow: self.flow.map(FlowId::number),
            class: self.class,
        }
    }
}

/// How the engine counted a frame, as the views keep it beside the frame (the TUI's index, the live ring, a
/// display filter): the flow by its number (the report's `id`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counted {
    pub flow: Option<u64>,
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
    /// A request at or behind the highest PSN seen (go-back-N, a duplicate, a READ resumed mid-message).
    Retransmission,
    /// Held up on the way (network reordering): a request behind the highest PSN seen, the first copy of
    /// its PSN, or a response behind the highest PSN its flow's responses named, answering no resend.
    Reordered,
    /// A response that acknowledges (ACK, READ response, atomic ACK).
    Response,
    /// A NAK (PSN sequence error, invalid request, remote access or operational error).
    Nak,
    RnrNak,
    Cnp,
    /// A bad ICRC: the receiver drops it, so nothing else is counted.
    BadIcrc,
    Malformed,
    /// The second copy of a frame mirrored twice: not counted.
    MirrorDuplicate,
}

pub struct Engine {
    pub cfg: Config,
    pub totals: Totals,
    pub flows: FlowTable,
    index: FxHashMap<FlowKey, FlowId>,
    /// Flows that carried requests, by (source, destination): candidates for pairing with responses.
    requesters: FxHashMap<(Addr, Addr), SmallVec<[FlowId; 2]>>,
    /// Flows that carried responses, by (source, destination): how many could answer a requester.
    responders: FxHashMap<(Addr, Addr), SmallVec<[FlowId; 2]>>,
    /// The last flow looked up: consecutive packets usually belong to one flow.
    last: Option<(FlowKey, FlowId)>,
    /// PFC frames per priority 0-7.
    pub pause: [PriorityPause; 8],
    /// 802.3x PAUSE frames: they pause the whole link.
    pub link_pause: PriorityPause,
    pub events: Events,
    /// The diagnosis' events by condition, counted whether or not the event list kept them.
    pub diagnosis: Diagnosis,
    inferred_mtu: u32,
    /// When the stall sweep runs next (capture time).
    next_sweep: u64,
    /// When the sweep looks for idle flows next (capture time).
    next_idle_eviction: u64,
    /// The connections the handshakes and the hosts' printouts name.
    pub connections: connections::Connections,
    /// The flows of the connections with both addresses known: flow key -> (connection, direction).
    conn_index: FxHashMap<FlowKey, (u32, u8)>,
    /// What the flows evicted carried.
    pub evicted: Evicted,
    /// What they carried by host pair and priority.
    evicted_pairs: tally::PairTally,
    /// The host pairs the metrics keep apart.
    kept_pairs: tally::KeptPairs,
    /// Each host pair's QPs and UDP source ports, and the evicted ones' bytes.
    ecmp: ecmp::EcmpTally,
    /// The priorities the RoCE flows finished so far were on (bit p: priority p), for
    /// `pause_on_idle_priority`.
    carried: u8,
    mirror: mirror::MirrorWindow,
    clock: clock::Clock,
    /// What the job's logs (`--expect` NCCL and UCX logs) name: the flows' owners.
    pub jobs: Option<jobs::Jobs>,
}

/// How many of the diagnosis' events each condition has.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Diagnosis {
    pub stalls: u64,
    pub no_response: u64,
    /// Timeout retransmissions, retries and RNR retries exhausted.
    pub timeouts: u64,
    /// ACKs out of window, PSN reuse, MSN regressions, READ response mismatches.
    pub violations: u64,
    /// CM rejects and timeouts, data toward unannounced QPNs, first PSNs other than announced.
    pub connections: u64,
    /// The lossless machinery failing: pause storms, RoCE on a priority PFC does not protect, senders that
    /// ignored their CNPs.
    pub lossless: u64,
}

pub use evict::{Evicted, Traffic};
pub use pfc::PriorityPause;

impl Engine {
    pub fn new(cfg: Config) -> Engine {
        Engine {
            cfg,
            totals: Totals::default(),
            flows: FlowTable::default(),
            index: FxHashMap::default(),
            requesters: FxHashMap::default(),
            responders: FxHashMap::default(),
            last: None,
            pause: Default::default(),
            link_pause: PriorityPause::default(),
            events: Events::default(),
            diagnosis: Diagnosis::default(),
            inferred_mtu: 0,
            next_sweep: 0,
            next_idle_eviction: 0,
            connections: connections::Connections::default(),
            conn_index: FxHashMap::default(),
            evicted: Evicted::default(),
            evicted_pairs: tally::PairTally::default(),
            kept_pairs: tally::KeptPairs::default(),
            ecmp: ecmp::EcmpTally::default(),
            carried: 0,
            mirror: mirror::MirrorWindow::new(cfg.mirror_window_nanos),
            clock: clock::Clock::default(),
            jobs: None,
        }
    }

    /// Keeps an event (returns where, as [`Events::push`]): its group marks its flow, and a diagnosis event
    /// counts in the diagnosis (a stall and a requester with no response are counted where they are
    /// settled: one replaces the other).
    pub(crate) fn raise(&mut self, e: Event) -> Option<usize> {
        let group = e.kind.group();
        let d = &mut self.diagnosis;
        match group {
            Group::Timeout | Group::GaveUp => d.timeouts += 1,
            Group::Violation => d.violations += 1,
            Group::Connection => d.connections += 1,
            _ => {}
        }
        if let Some(f) = e.flow.and_then(|f| self.flows.get_mut(f)) {
            f.raised |= group.bit();
        }
        self.events.push(e)
    }

    /// Feeds one frame: `number` is its position in the capture (from 1), `ts` its time in nanoseconds.
    /// Returns how it was counted.
    pub fn ingest(&mut self, number: u64, ts: u64, frame: &Frame) -> Classified {
        self.count_frame(frame);
        if let Some(r) = &frame.roce
            && self.mirrored(frame, r, ts)
        {
            // Not even its time counts (not on the clock either): the capture is analysed as if it held
            // one copy.
            self.totals.mirror_duplicates += 1;
            return Classified {
                flow: None,
                class: Class::MirrorDuplicate,
            };
        }
        let (ts, jump) = self.clock.stamp(number, ts);
        if let Some(j) = jump {
            self.clock_jump(j, ts);
        }
        self.totals.clock_steps_back = self.clock.steps_back;
        if ts >= self.next_sweep {
            if self.next_sweep > 0 {
                self.sweep(ts);
            }
            self.next_sweep = ts.saturating_add((self.cfg.stall_nanos / 4).max(1));
        }
        let t = &mut self.totals;
        t.first_ts.get_or_insert(ts);
        t.last_ts = ts;
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
                self.flows[id].malformed += 1;
            }
            self.raise(Event {
                ts_nanos: ts,
                flow: flow_id,
                frame: number,
                kind: Kind::Malformed { what: m },
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
        self.requester_life(id, ts, class);
        Classified {
            flow: Some(id),
            class,
        }
    }

    /// The frame is a mirror copy of one just seen ([`mirror::MirrorWindow`]): from the same place, only
    /// when nothing since the first copy asked for a resend of it (a NAK toward a request's sender, a resend
    /// of a response's requester).
    fn mirrored(&mut self, frame: &Frame, r: &Roce, ts: u64) -> bool {
        let (flows, index) = (&self.flows, &self.index);
        let request = r.bth.op().is_request();
        self.mirror.copy_of(frame, r, ts, |since| {
            // The flow is looked up only for a copy from the same place: most frames have no copy.
            let (Some(src), Some(dst)) = (frame.src(), frame.dst()) else {
                return false;
            };
            let key = FlowKey {
                src,
                dst,
                dest_qp: r.bth.dest_qp,
            };
            let flow = index.get(&key).and_then(|&id| flows.get(id));
            let after = |t: Option<u64>| t.is_some_and(|t| t >= since);
            flow.is_some_and(|f| {
                if request {
                    // A NAK since, one not yet answered by a go-back-N, or a go-back-N since (what
                    // follows its first resend is resent too).
                    f.naks.since(since)
                        || f.naks.waiting()
                        || f.req.rc.went_back.is_some_and(|(_, t)| t > since)
                } else {
                    let requester = f.paired_with.and_then(|p| flows.get(p));
                    requester.is_some_and(|q| after(q.req.rc.resends.last().map(|r| r.ts)))
                }
            })
        })
    }

    /// The capture's clock jumped (analysed at `ts`): told, and counted. A first frame stamped wrong had
    /// set the capture's start and its flow's times: they start at `ts` instead.
    fn clock_jump(&mut self, j: clock::Jump, ts: u64) {
        self.totals.clock_jumps += 1;
        if j.first {
            self.totals.first_ts = Some(ts);
            self.totals.last_ts = ts;
            self.next_sweep = 0;
            self.next_idle_eviction = 0;
            for f in self.flows.iter_mut().filter(|f| f.first_ts > ts) {
                (f.first_ts, f.last_ts, f.prev_ts, f.progress_ts) = (ts, ts, ts, ts);
            }
        }
        self.raise(Event {
            ts_nanos: ts,
            flow: None,
            frame: j.frame,
            kind: Kind::ClockJump {
                by_ms: j.by_nanos / 1_000_000,
                kept: j.kept,
            },
        });
    }

    /// The file's counts: every frame, mirror duplicates too.
    fn count_frame(&mut self, frame: &Frame) {
        let t = &mut self.totals;
        t.frames += 1;
        t.bytes += frame.orig_len as u64;
        if frame.to_roce {
            t.roce_frames += 1;
            t.encapsulated += u64::from(frame.encap.is_some());
        } else {
            t.other_frames += 1;
        }
    }

    /// The per-flow part of [`Engine::ingest`] for a RoCE frame of flow `id`.
    fn roce(&mut self, id: FlowId, number: u64, ts: u64, frame: &Frame, roce: &Roce) -> Class {
        let start = self.totals.first_ts.unwrap_or(ts);
        let f = &mut self.flows[id];
        f.packets += 1;
        f.bytes += frame.wire_len() as u64;
        if f.packets == 1 {
            f.first_psn = roce.bth.psn;
            self.first_packet(id, number, ts, frame, roce);
        }
        let f = &mut self.flows[id];
        f.last_psn = roce.bth.psn;
        f.prev_ts = f.last_ts;
        f.last_ts = ts;
        f.series
            .add(ts.saturating_sub(start), frame.wire_len() as u64);
        let offsets = (ts.saturating_sub(start), ts.saturating_sub(f.prev_ts));
        let width = self.cfg.rate_window_nanos;
        f.rate.add(
            f.reaction.as_deref_mut(),
            offsets,
            frame.wire_len() as u64,
            width,
        );
        let bth = roce.bth;
        f.count_opcode(bth.opcode);
        f.fecn += u64::from(bth.fecn);
        f.becn += u64::from(bth.becn);
        f.pcp = frame.vlans.iter().flatten().last().map(|v| v.pcp).or(f.pcp);
        f.dscp = frame.dscp();
        if f.job.is_some_and(|j| !j.told) {
            self.job_traffic_class(id, number, ts);
        }
        let f = &mut self.flows[id];
        let ecn = frame.ecn().unwrap_or(0);
        f.ecn[usize::from(ecn & 3)] += 1;
        match roce.icrc_status {
            Some(IcrcStatus::Bad { expected, found }) => {
                f.icrc_bad += 1;
                self.totals.icrc_bad += 1;
                self.raise(Event {
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
            f.cnp_intervals.add(ts);
            self.cnp_received(id, ts, number);
            return Class::Cnp;
        }
        if let Some(deth) = roce.ext.deth {
            f.src_qp = Some(deth.src_qp);
        }
        if ecn == 3 {
            self.ce_marked(id, ts, number);
        }
        if let (Some(m), Some(src), Some(dst)) = (frame.cm(), frame.src(), frame.dst()) {
            self.cm(id, number, ts, src, dst, &m);
        }
        if op.is_request() {
            self.request(id, number, ts, frame)
        } else if op.is_response() {
            self.response(id, number, ts, frame)
        } else {
            Class::Other
        }
    }

    /// A packet of requester flow `id`, or for it (a response, NAK or CNP of its pair's): its life moves on
    /// to `ts` ([`life::Life`]).
    fn requester_life(&mut self, id: FlowId, ts: u64, class: Class) {
        let requester = match class {
            Class::Request | Class::Gap | Class::Retransmission | Class::Reordered => Some(id),
            Class::Response | Class::Nak | Class::RnrNak | Class::Cnp => self.flows[id].paired_with,
            _ => None,
        };
        let Some(f) = requester.and_then(|r| self.flows.get(r)) else {
            return;
        };
        if f.requests == 0 || !f.reliable {
            return;
        }
        let oldest = f.req.timing.outstanding.front().map(|o| o.psn());
        let gone_back = f
            .req
            .rc
            .went_back
            .is_some_and(|(p, _)| oldest.is_some_and(|o| parsers::psn::diff(o, p) <= 0));
        let paused = f
            .priority(&self.cfg.dscp_map)
            .map_or(0, |p| self.pause[usize::from(p) & 7].paused_by(ts))
            + self.link_pause.paused_by(ts);
        // PSNs from the oldest unacknowledged request to the newest (the queue is in PSN order): a resend
        // adds none, and nothing the READs' unsettled PSN consumption moves counts.
        let newest = f.req.timing.outstanding.back().map(|o| o.psn());
        let outstanding = oldest
            .zip(newest)
            .map_or(0, |(o, n)| parsers::psn::diff(n, o).max(0) as u32 + 1);
        let facts = life::Facts {
            outstanding,
            rnr_waiting: f.req.rc.rnr.is_some(),
            recovering: f.naks.waiting() || f.req.rc.resent.is_some() || gone_back,
            paused_so_far: paused,
        };
        let window = self.cfg.rate_window_nanos;
        let Some(f) = requester.and_then(|r| self.flows.get_mut(r)) else {
            return;
        };
        let l = f.req.life.get_or_insert_with(Default::default);
        if class == Class::Cnp {
            l.cnp(ts);
        }
        l.at(ts, facts, window);
    }

    /// A flow's first packet: an RC or UC QP over UDP counts for its host pair's ECMP spread.
    fn first_packet(&mut self, id: FlowId, number: u64, ts: u64, frame: &Frame, roce: &Roce) {
        let qp = matches!(roce.bth.op().transport(), Transport::Rc | Transport::Uc);
        let (Some(udp), true) = (frame.udp, qp) else {
            return;
        };
        let f = &mut self.flows[id];
        f.udp = Some(ecmp::UdpPorts {
            src: udp.src_port,
            dst: udp.dst_port,
        });
        let at = ecmp::Crowded {
            flow: id,
            frame: number,
            ts,
        };
        self.ecmp
            .first_packet(f.key.src, f.key.dst, udp.src_port, at);
    }

    /// Each host pair's QPs, ports and the load on each member of a `--ecmp-members` group: the live
    /// flows and those evicted.
    pub fn ecmp_spread(&self) -> Vec<ecmp::PairSpread<'_>> {
        let live = self
            .flows
            .iter()
            .filter_map(|f| f.tuple().map(|t| (t, f.bytes)));
        self.ecmp.spread(self.cfg.ecmp_members, live)
    }

    /// QPs of host pairs past the first [`tally::PAIRS_KEPT`] came (their spread is not shown).
    pub fn ecmp_more_pairs(&self) -> bool {
        self.ecmp.more_pairs
    }

    /// QPs crowded on too few UDP source ports, told once the capture is over (their bytes settle how
    /// unevenly a group would carry them).
    fn crowded_pairs(&mut self) {
        let members = self.cfg.ecmp_members;
        let crowded: Vec<Event> = self
            .ecmp_spread()
            .iter()
            .filter(|p| p.ports.is_crowded())
            .filter_map(|p| {
                let at = p.ports.crowded?;
                let imbalance = ecmp::Hash::ALL.map(|h| p.imbalance(h).unwrap_or(0.0));
                Some(Event {
                    ts_nanos: at.ts,
                    flow: Some(at.flow),
                    frame: at.frame,
                    kind: Kind::LowEntropy {
                        src: p.src,
                        dst: p.dst,
                        qps: p.ports.qps,
                        ports: p.ports.distinct(),
                        members,
                        imbalance,
                    },
                })
            })
            .collect();
        for e in crowded {
            self.raise(e);
        }
    }

    fn flow_id(&mut self, key: FlowKey, ts: u64, number: u64) -> FlowId {
        if let Some((k, id)) = self.last
            && k == key
        {
            return id;
        }
        if let Some(&id) = self.index.get(&key) {
            self.last = Some((key, id));
            return id;
        }
        self.make_room(ts);
        let id = self.flows.insert(|id| Flow::new(id, key, ts, number));
        self.index.insert(key, id);
        self.last = Some((key, id));
        self.kept_pairs.note(key.src, key.dst);
        self.new_flow(id);
        if let Some(jobs) = &self.jobs {
            self.flows[id].job = jobs
                .owner_of(key.src, key.dst, key.dest_qp)
                .map(|owner| flow::JobLink { owner, told: false });
        }
        id
    }

    /// The job's logs (`--expect`): the flows they name, from the next frame on.
    pub fn expect_jobs(&mut self, log: std::sync::Arc<crate::source::joblog::JobLog>) {
        if !log.is_empty() {
            self.jobs = Some(jobs::Jobs::new(log));
        }
    }

    /// Flow `id`, whose owner's log set the traffic class its sending QP uses: does its DSCP match? Told
    /// once a flow.
    fn job_traffic_class(&mut self, id: FlowId, number: u64, ts: u64) {
        let f = &mut self.flows[id];
        let (Some(link), Some(dscp), Some(jobs)) = (f.job, f.dscp, &self.jobs) else {
            return;
        };
        let owner = jobs.owners[link.owner as usize];
        let Some(expected) = owner.expected.filter(|e| e.dscp() != dscp) else {
            return;
        };
        f.job = Some(flow::JobLink { told: true, ..link });
        let map = &self.cfg.dscp_map;
        let kind = Kind::TcMismatch {
            dscp,
            traffic_class: expected.traffic_class,
            setting: expected.setting,
            rank: jobs.log.processes[expected.process as usize].rank,
            priority: f.pcp.or_else(|| map.get(dscp)),
            configured_priority: f.pcp.map_or_else(|| map.get(expected.dscp()), |_| None),
        };
        self.raise(Event {
            ts_nanos: ts,
            flow: Some(id),
            frame: number,
            kind,
        });
    }

    /// Flows `a` and `b` are the two directions of one connection, as `by` found (a pair either had
    /// before comes apart).
    pub(crate) fn pair_flows(&mut self, a: FlowId, b: FlowId, by: flow::PairedBy) {
        for (x, y) in [(a, b), (b, a)] {
            let f = &mut self.flows[x];
            let before = f.paired_with.replace(y);
            f.paired_by = Some(by);
            if let Some(old) = before
                .filter(|o| *o != y)
                .and_then(|o| self.flows.get_mut(o))
                && old.paired_with == Some(x)
            {
                old.paired_with = None;
                old.paired_by = None;
            }
        }
    }

    /// The number of flow `id` while it is alive (what a report calls it by).
    pub fn number_of(&self, id: Option<FlowId>) -> Option<u64> {
        id.filter(|id| self.flows.get(*id).is_some())
            .map(FlowId::number)
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

    /// Closes what only the end of the capture settles: pending CE marks, RNR storms, PFC summaries.
    pub fn finish(&mut self) {
        if let Some(j) = self.clock.finish() {
            let at = self.totals.last_ts;
            self.clock_jump(j, at);
        }
        let end = self.totals.last_ts;
        let ids: Vec<FlowId> = self.flows.in_order().iter().map(|f| f.id).collect();
        for id in ids {
            self.close_flow(id, end);
        }
        self.finish_pauses();
        self.hold_connections();
        self.crowded_pairs();
        self.events.settle();
    }

    /// What the end of flow `id` settles, at `end` (the end of the capture, or its eviction): its PSNs, its
    /// CE marks, an RNR storm, and the diagnosis only the end tells.
    fn close_flow(&mut self, id: FlowId, end: u64) {
        let window = self.cfg.cnp_window_nanos;
        let engine_mtu = self.mtu();
        let dscp_map = self.cfg.dscp_map;
        let f = &mut self.flows[id];
        let reliable = f.reliable;
        let mtu = f.mtu_or(engine_mtu);
        if let Some(settled) = f.req.psn.settle(mtu) {
            self.settle_unsure(id, settled, reliable);
        }
        let f = &mut self.flows[id];
        if let Some(p) = f.priority(&dscp_map).filter(|_| f.carries_roce()) {
            self.carried |= 1 << p;
        }
        // Marks within the last window of the capture may have been answered after it ended.
        f.expire_ce(end.saturating_sub(window));
        if let Some((ce_ts, ce_frame)) = f.ce.first_unanswered {
            let count = f.ce.without_cnp;
            self.raise(Event {
                ts_nanos: ce_ts,
                flow: Some(id),
                frame: ce_frame,
                kind: Kind::CeWithoutCnp { count },
            });
        }
        self.settle_reaction(id, end);
        let r = &self.flows[id].resp;
        let span = r.last_rnr_ts.saturating_sub(r.first_rnr_ts);
        if r.rnr_naks >= self.cfg.rnr_storm
            && span <= r.rnr_naks / self.cfg.rnr_storm.max(1) * 1_000_000_000
        {
            let (ts_nanos, frame, count) = (r.first_rnr_ts, r.first_rnr_frame, r.rnr_naks);
            self.raise(Event {
                ts_nanos,
                flow: Some(id),
                frame,
                kind: Kind::RnrStorm {
                    count,
                    span_us: span / 1000,
                },
            });
        }
        self.diagnose_flow(id, end);
    }
}
