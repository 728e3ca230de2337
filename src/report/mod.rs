//! The analysis report: one data model built from the engine's state, written as text or as JSON.
//! The JSON form is a stable interface, documented in docs/json.md.
pub mod capture;
pub mod connections;
pub mod counters;
pub mod ecmp;
pub mod format;
pub mod jobs;
pub mod life;
pub mod listing;
pub mod metrics;
pub mod rank;
pub mod story;
pub mod text;
pub mod timers;
pub mod verdict;

pub use listing::Listing;
pub use verdict::{Condition, FlowTotals, Status, Verdict};

use std::collections::BTreeMap;
use std::io::{self, BufWriter, Write};

use serde::Serialize;

use crate::analysis::events::Severity;
use crate::analysis::flow::{Flow, NakCounts, PairedBy, Role, State};
use crate::analysis::{Diagnosis, Engine, series};
use parsers::aeth::RNR_TIMER_MICROS;
use parsers::opcode::Opcode;

#[derive(Debug, Serialize)]
pub struct Report {
    pub capture: Capture,
    pub config: ConfigUsed,
    /// The flows listed in full (all of them, or those a `Listing` picks), most trouble first
    /// ([`rank::order`]).
    pub flows: Vec<FlowReport>,
    /// Where each flow is in `flows`, by id: (id, place), ascending ids.
    #[serde(skip)]
    by_id: Vec<(u64, usize)>,
    /// What the flows not listed add up to, when some are not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub other_flows: Option<listing::OtherFlows>,
    /// What every flow adds up to: what the verdict counts.
    pub flow_totals: FlowTotals,
    /// The flows evicted (idle past `--flow-timeout`, or beyond `--max-flows`), added up; absent when none
    /// was. The flows listed are exact.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evicted: Option<EvictedReport>,
    /// The connections the CM handshakes and the hosts' printouts name (docs/json.md).
    pub connections: Vec<connections::ConnectionReport>,
    pub pfc: Vec<PriorityReport>,
    /// Traffic by priority (every flow's, the evicted ones' too), over the capture's duration.
    pub priorities: Vec<PriorityTraffic>,
    /// 802.3x PAUSE (whole link), when any.
    pub link_pause: Option<PriorityReport>,
    /// How an ECMP group would spread each host pair's QPs (docs/json.md).
    pub ecmp: ecmp::EcmpReport,
    /// The job's processes and failures, from `--expect` NCCL or UCX logs; absent without them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job: Option<jobs::JobReport>,
    pub events: Vec<EventReport>,
    pub events_dropped: u64,
    pub verdict: Verdict,
    /// Live capture only (`rocescope capture`): libpcap's counters, what was written, the wrapped command.
    /// Absent for a capture file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capture_stats: Option<capture::CaptureStats>,
    /// Live capture only: the NIC's counters over the capture, held against what the capture saw
    /// (docs/json.md). Absent for a capture file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counters: Option<counters::NicCounters>,
    /// The diagnosis' counts by condition (the verdict is judged again from them).
    #[serde(skip)]
    pub diagnosis: Diagnosis,
}

#[derive(Debug, Serialize)]
pub struct Capture {
    pub file: String,
    pub frames: u64,
    pub roce_frames: u64,
    pub other_frames: u64,
    pub malformed: u64,
    pub icrc_bad: u64,
    pub icrc_unverifiable: u64,
    /// RoCE frames that came in a mirror session or tunnel (ERSPAN, GRE, VXLAN), analysed as the frames
    /// they carry.
    pub encapsulated: u64,
    /// RoCE frames seen a second time within the mirror window (`--mirror-window-us`): not counted.
    pub mirror_duplicates: u64,
    /// Jumps of the capture's clock told (`clock_jump` events).
    pub clock_jumps: u64,
    /// Frames stamped before the frame before them, however little (up to a second taken as stamped, more
    /// analysed at the time before them).
    pub clock_steps_back: u64,
    pub bytes: u64,
    /// Seconds since the Unix epoch, nanosecond precision.
    pub first_time: Option<f64>,
    pub last_time: Option<f64>,
    pub duration_s: f64,
    /// The capture ended in the middle of a packet or block (a killed tcpdump): analysed up to the cut.
    pub truncated: bool,
    /// What the reader said of the cut, when truncated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncation: Option<String>,
}

/// The flows evicted, added up.
#[derive(Debug, Serialize)]
pub struct EvictedReport {
    pub flows: u64,
    pub packets: u64,
    pub bytes: u64,
    pub requesters: u64,
    /// Responders, and flows that were both.
    pub responders: u64,
    pub others: u64,
    /// With loss, damage or congestion marks (their events are in `events`, with a null `flow`).
    pub with_trouble: u64,
}

impl EvictedReport {
    fn of(e: &crate::analysis::Evicted) -> EvictedReport {
        EvictedReport {
            flows: e.flows,
            packets: e.packets,
            bytes: e.bytes,
            requesters: e.by_role[0],
            responders: e.by_role[1],
            others: e.by_role[2],
            with_trouble: e.troubled,
        }
    }
}

#[derive(Debug, Serialize)]
pub struct ConfigUsed {
    pub mtu: Option<u32>,
    /// "option", "inferred" (largest FIRST/MIDDLE payload) or "unknown".
    pub mtu_source: &'static str,
    pub link_speed_bps: u64,
    pub cnp_window_us: u64,
    /// `--pause-storm-ms`.
    pub pause_storm_ms: u64,
    /// `--dscp-map`: {DSCP: priority}.
    pub dscp_map: BTreeMap<String, u8>,
    /// `--rate-window-us`.
    pub rate_window_us: u64,
}

#[derive(Debug, Serialize)]
pub struct PsnReport {
    pub first: u32,
    pub last: u32,
    pub gap_events: u64,
    pub missing: u64,
    pub retransmitted: u64,
    pub duplicates: u64,
    pub retransmission_episodes: u64,
    /// New requests on PSNs a READ consumed (`psn_reuse` events).
    pub reused: u64,
    /// READs resumed mid-message (counted in `retransmitted` too).
    pub resumed_reads: u64,
    /// Requests that came behind a higher PSN, the first copy of theirs, held up on the way (`reordered`
    /// events).
    pub reordered: u64,
    /// New connections on the flow's QP number after the first (`new_epoch` events); `first` and `last`
    /// are the last connection's.
    pub epochs: u64,
}

#[derive(Debug, Serialize)]
pub struct EcnReport {
    pub not_ect: u64,
    pub ect0: u64,
    pub ect1: u64,
    pub ce: u64,
}

#[derive(Debug, Serialize)]
pub struct MessagesReport {
    pub count: u64,
    pub bytes: u64,
    pub min_size: Option<u64>,
    pub max_size: u64,
    pub length_mismatches: u64,
}

#[derive(Debug, Serialize, Clone, Copy)]
pub struct Latency {
    pub samples: u64,
    pub min: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
}

/// The figures NIC counters (mlx5 hw_counters, `ethtool -S`) report, as seen from this flow's requester.
#[derive(Debug, Serialize)]
pub struct Counters {
    /// Requests that arrived ahead of the expected PSN (responder's out-of-sequence events).
    pub out_of_sequence: u64,
    /// Requests whose exact PSN had been seen before.
    pub duplicate_request: u64,
    /// PSN sequence error NAKs this flow's requester received.
    pub packet_seq_err: u64,
    /// RNR NAKs this flow's requester received (the NIC counts retries exhausted; the wire shows each NAK).
    pub rnr_nak_retry_err: u64,
    /// READ response packets that skipped ahead (the requester's implied NAKs).
    pub implied_nak_seq_err: u64,
    /// CE-marked RoCE packets arriving at this flow's destination.
    pub np_ecn_marked_roce_packets: u64,
    /// CNPs the destination sent back toward this flow's source QP.
    pub np_cnp_sent: u64,
    /// Packets with a bad ICRC.
    pub rx_icrc_encapsulated: u64,
}

/// A flow's packets and bytes per bucket, from its first bucket to its last: a flow that came late in a
/// long capture lists its own seconds, not the empty ones before it.
#[derive(Debug, Serialize)]
pub struct SeriesReport {
    pub bucket_seconds: u64,
    /// Where the lists start: buckets from the capture's start.
    pub first_bucket: u64,
    pub packets: Vec<u64>,
    pub bytes: Vec<u64>,
}

#[derive(Debug, Serialize)]
pub struct FlowReport {
    /// Its number, in the order flows were first seen (never reused: after evictions the listed flows'
    /// ids have gaps).
    pub id: u64,
    pub src: String,
    pub dst: String,
    pub dest_qp: u32,
    pub role: Role,
    pub paired_with: Option<u64>,
    /// How the pair was found: `cm`, `printout`, `psn`, `elimination`.
    pub paired_by: Option<PairedBy>,
    /// What it came to: `ok`, `congested`, `lossy`, `misconnected`, `violation`, `stalled`, `gave_up`,
    /// `no_response` (its worst diagnosis, else loss, else congestion).
    pub state: State,
    /// Its trouble (`analysis::flow::Trouble::score`): what the views rank by.
    #[serde(skip)]
    pub trouble: u64,
    /// The connection it belongs to (an index into `connections`).
    pub connection: Option<u32>,
    /// UD: the DETH source QP.
    pub src_qp: Option<u32>,
    pub packets: u64,
    pub bytes: u64,
    pub payload_bytes: u64,
    pub retransmitted_bytes: u64,
    pub first_time: f64,
    pub last_time: f64,
    pub opcodes: BTreeMap<&'static str, u64>,
    pub psn: PsnReport,
    pub acks: u64,
    pub duplicate_acks: u64,
    pub naks: NakCounts,
    pub rnr_naks: u64,
    /// RNR NAK timer values (milliseconds, as text) and how often each was asked for.
    pub rnr_timers_ms: BTreeMap<String, u64>,
    pub read_responses: u64,
    pub atomic_acks: u64,
    pub implied_naks: u64,
    /// Responses that came behind the highest PSN answered, with nothing resent (`reordered` events).
    pub reordered_responses: u64,
    /// The deepest of the packets this flow saw held up (requests or responses), PSNs behind the highest.
    pub reorder_depth_max: u32,
    pub cnp: u64,
    pub ecn: EcnReport,
    pub ce_without_cnp: u64,
    pub fecn: u64,
    pub becn: u64,
    pub icrc_bad: u64,
    pub icrc_unverifiable: u64,
    pub malformed: u64,
    pub messages: MessagesReport,
    pub latency_us: Option<Latency>,
    pub read_latency_us: Option<Latency>,
    pub pcp: Option<u8>,
    pub dscp: Option<u8>,
    /// Its PFC priority: the VLAN PCP, or the priority `--dscp-map` gives its DSCP; null when neither.
    pub priority: Option<u8>,
    /// The flow's priority was paused by PFC (or PAUSE) during the capture.
    pub paused_priority: bool,
    pub counters: Counters,
    pub series: SeriesReport,
    /// The CNPs that reached this flow's sender and what its rate did after them; null when none did.
    pub cnp_reaction: Option<CnpReaction>,
    /// The times between this flow's CNPs (the notification point's CNP interval); null with fewer than two.
    pub cnp_interval_us: Option<IntervalReport>,
    pub throughput: Throughput,
    /// Its local ACK timer's firings against the configured timeout and retry count; null when it never
    /// fired.
    pub timers: Option<timers::TimersReport>,
    /// An RC or UC QP over UDP: the UDP source port of its first packet (the `ecmp` section's).
    pub udp_src_port: Option<u16>,
    /// As requester: the share of its life in each state (docs/analysis.md); null otherwise.
    pub life: Option<life::LifeReport>,
    /// Whose QP it leaves or reaches, as `--expect` NCCL or UCX logs tell it; absent when they do not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job: Option<jobs::FlowJob>,
}

/// A flow's rates at the link's speed (docs/analysis.md).
#[derive(Debug, Serialize)]
pub struct Throughput {
    /// Bytes on the wire and payload less retransmitted payload, over the time from its first frame to its
    /// last, Gb/s; null for a flow of no duration.
    pub gbps: Option<f64>,
    pub goodput_gbps: Option<f64>,
    /// `gbps` over `--link-speed`.
    pub link_share: Option<f64>,
    /// The busiest `--rate-window-us` window, Gb/s, and over `--link-speed`.
    pub peak_gbps: f64,
    pub peak_link_share: f64,
}

/// One priority's traffic (`priority` null: flows of no known priority).
#[derive(Debug, Serialize)]
pub struct PriorityTraffic {
    pub priority: Option<u8>,
    pub flows: u64,
    pub bytes: u64,
    pub goodput_bytes: u64,
    /// Over the capture's duration (null for a capture of no duration), Gb/s, and over `--link-speed`.
    pub gbps: Option<f64>,
    pub goodput_gbps: Option<f64>,
    pub link_share: Option<f64>,
}

/// What a flow's sender (the reaction point) did after the CNPs that reached it (docs/analysis.md).
#[derive(Debug, Serialize)]
pub struct CnpReaction {
    /// CNPs toward the flow's source QP.
    pub cnps: u64,
    /// Those whose reaction was measured (the window before full enough, the two after within the capture,
    /// no reaction to an earlier CNP in measurement).
    pub measured: u64,
    /// Measured with no visible reduction (the rate after above 90 % of the rate before).
    pub no_reduction: u64,
    /// Reductions, 0 to 1: the median (to the whole percent) and the smallest (the worst reaction).
    pub median_reduction: Option<f64>,
    pub worst_reduction: Option<f64>,
    /// From the CNP to the first packet sent at the reduced rate, over the visible reductions: mean and
    /// maximum, microseconds.
    pub mean_time_to_reduction_us: Option<f64>,
    pub max_time_to_reduction_us: Option<f64>,
}

#[derive(Debug, Serialize)]
pub struct IntervalReport {
    pub min: f64,
    pub mean: f64,
    pub max: f64,
}

impl FlowReport {
    /// The short names of [`FlowReport::counters`].
    pub const COUNTERS: [&'static str; 10] = [
        "gaps", "miss", "retx", "dup", "epis", "NAK", "RNR", "CNP", "CE", "ICRC",
    ];

    /// The counters the text report's table and the TUI's flow detail show, in their order: PSN gaps,
    /// missing PSNs, retransmitted requests, duplicates, go-back-N episodes, NAKs, RNR NAKs, CNPs, CE
    /// marks, bad ICRCs.
    pub fn counters(&self) -> [u64; 10] {
        [
            self.psn.gap_events,
            self.psn.missing,
            self.psn.retransmitted,
            self.psn.duplicates,
            self.psn.retransmission_episodes,
            self.naks.total(),
            self.rnr_naks,
            self.cnp,
            self.ecn.ce,
            self.icrc_bad,
        ]
    }
}

#[derive(Debug, Serialize)]
pub struct PriorityReport {
    /// 0-7 (0 for 802.3x PAUSE, which has no priority).
    pub priority: u8,
    pub frames: u64,
    pub xoff: u64,
    pub xon: u64,
    /// The quanta the XOFFs asked for, added up.
    pub quanta: u64,
    /// Time a pause was in effect (each XOFF pauses for its quanta at the link speed until a later XOFF
    /// replaces it or an XON ends it), up to the end of the capture, microseconds.
    pub pause_us: f64,
    /// `pause_us` over the capture's duration.
    pub paused_fraction: f64,
    /// The longest time paused without a break, microseconds.
    pub longest_pause_us: f64,
    /// The share of each bucket of time it was paused.
    pub paused_series: PausedSeriesReport,
}

/// Buckets of `bucket_us` from the capture's start (at first `--rate-window-us`, doubling past 1024), up to
/// the last with a pause: the share of each that the priority was paused.
#[derive(Debug, Serialize)]
pub struct PausedSeriesReport {
    pub bucket_us: f64,
    pub fraction: Vec<f64>,
}

#[derive(Debug, Serialize)]
pub struct EventReport {
    pub time: f64,
    /// `time` exactly (the trace's instants).
    #[serde(skip)]
    pub ts_nanos: u64,
    pub severity: Severity,
    pub kind: &'static str,
    /// The flow's `id`; null once the flow was evicted.
    pub flow: Option<u64>,
    /// The frame that shows it.
    pub frame: u64,
    /// The PSN it is about, if one.
    pub psn: Option<u32>,
    /// The figures it is made of (PSNs, counts, times: see docs/json.md), by name.
    pub detail: serde_json::Map<String, serde_json::Value>,
    pub message: String,
}

fn secs(nanos: u64) -> f64 {
    nanos as f64 / 1e9
}

/// Microseconds: min and max exact, percentiles to the histogram's precision (two significant digits).
fn latency(l: &Option<Box<crate::analysis::latencies::Latencies>>) -> Option<Latency> {
    let l = l.as_ref()?;
    let us = |nanos: u64| nanos as f64 / 1000.0;
    Some(Latency {
        samples: l.samples(),
        min: us(l.min),
        p50: us(l.quantile(0.50)),
        p90: us(l.quantile(0.90)),
        p99: us(l.quantile(0.99)),
        max: us(l.max),
    })
}

fn rnr_ms(code: usize) -> String {
    format::millis(RNR_TIMER_MICROS.get(code).copied().unwrap_or(0))
}

impl Report {
    /// The report of every flow.
    pub fn build(engine: &Engine, file: &str) -> Report {
        Report::build_listing(engine, file, Listing::All)
    }

    /// The report, with the flows `listing` picks in full.
    pub fn build_listing(engine: &Engine, file: &str, listing: Listing) -> Report {
        let t = &engine.totals;
        let first = t.first_ts.unwrap_or(0);
        let paused = engine.paused_priorities();
        let ids = listing::listed(engine, listing);
        let flows: Vec<FlowReport> = ids
            .iter()
            .map(|&id| flow_report(engine, &engine.flows[id], paused))
            .collect();
        let priority = |i: usize, p: &crate::analysis::PriorityPause| PriorityReport {
            priority: i as u8,
            frames: p.frames,
            xoff: p.xoff,
            xon: p.xon,
            quanta: p.quanta,
            pause_us: p.paused_nanos as f64 / 1000.0,
            paused_fraction: fraction(p.paused_nanos, t.last_ts.saturating_sub(first)),
            longest_pause_us: p.longest_nanos as f64 / 1000.0,
            paused_series: PausedSeriesReport {
                bucket_us: p.series.width() as f64 / 1000.0,
                fraction: p
                    .series
                    .buckets()
                    .iter()
                    .map(|b| fraction(*b, p.series.width()))
                    .collect(),
            },
        };
        let pfc = engine
            .pause
            .iter()
            .enumerate()
            .filter(|(_, p)| p.frames > 0)
            .map(|(i, p)| priority(i, p))
            .collect();
        let link_pause = (engine.link_pause.frames > 0).then(|| priority(0, &engine.link_pause));
        let events = engine
            .events
            .kept()
            .map(|e| EventReport {
                time: secs(e.ts_nanos),
                ts_nanos: e.ts_nanos,
                severity: e.kind.severity(),
                kind: e.kind.name(),
                flow: engine.number_of(e.flow),
                frame: e.frame,
                psn: e.kind.psn(),
                detail: e.kind.detail(),
                message: e.kind.to_string(),
            })
            .collect();
        let mtu_source = match (engine.cfg.mtu, engine.mtu()) {
            (Some(_), _) => "option",
            (None, Some(_)) => "inferred",
            (None, None) => "unknown",
        };
        let mut report = Report {
            capture: Capture {
                file: file.to_string(),
                frames: t.frames,
                roce_frames: t.roce_frames,
                other_frames: t.other_frames,
                malformed: t.malformed,
                icrc_bad: t.icrc_bad,
                icrc_unverifiable: t.icrc_unverifiable,
                encapsulated: t.encapsulated,
                mirror_duplicates: t.mirror_duplicates,
                clock_jumps: t.clock_jumps,
                clock_steps_back: t.clock_steps_back,
                bytes: t.bytes,
                first_time: t.first_ts.map(secs),
                last_time: t.first_ts.map(|_| secs(t.last_ts)),
                duration_s: secs(t.last_ts.saturating_sub(first)),
                truncated: false,
                truncation: None,
            },
            config: ConfigUsed {
                mtu: engine.mtu(),
                mtu_source,
                link_speed_bps: engine.cfg.link_speed_bps,
                cnp_window_us: engine.cfg.cnp_window_nanos / 1000,
                pause_storm_ms: engine.cfg.pause_storm_nanos / 1_000_000,
                dscp_map: engine
                    .cfg
                    .dscp_map
                    .pairs()
                    .map(|(d, p)| (d.to_string(), p))
                    .collect(),
                rate_window_us: engine.cfg.rate_window_nanos / 1000,
            },
            flows,
            by_id: Vec::new(),
            other_flows: listing::others(engine, &ids),
            flow_totals: FlowTotals::of(engine),
            evicted: (engine.evicted.flows > 0).then(|| EvictedReport::of(&engine.evicted)),
            connections: connections::build(engine),
            pfc,
            priorities: priorities(engine, t.last_ts.saturating_sub(first)),
            link_pause,
            ecmp: ecmp::build(engine),
            job: jobs::build(engine),
            events,
            events_dropped: engine.events.dropped,
            verdict: Verdict {
                status: Status::Pass,
                problems: Vec::new(),
                fail_on: Vec::new(),
                failed_on: Vec::new(),
                exit_status: 0,
                text: String::new(),
            },
            capture_stats: None,
            counters: None,
            diagnosis: Diagnosis {
                lossless: engine.events.lossless_failures,
                ..engine.diagnosis
            },
        };
        report.index_flows();
        let order = rank::order(&report);
        let mut flows: Vec<Option<FlowReport>> = report.flows.drain(..).map(Some).collect();
        report.flows = order.iter().filter_map(|&i| flows[i].take()).collect();
        report.index_flows();
        report.judge(&[]);
        report
    }

    /// `by_id` for the flows as they are now.
    fn index_flows(&mut self) {
        self.by_id = self
            .flows
            .iter()
            .enumerate()
            .map(|(i, f)| (f.id, i))
            .collect();
        self.by_id.sort_unstable();
    }

    /// The place in `flows` of flow `id`, when it is listed.
    pub fn place_of(&self, id: u64) -> Option<usize> {
        self.by_id
            .binary_search_by_key(&id, |(id, _)| *id)
            .ok()
            .and_then(|at| self.by_id.get(at))
            .map(|(_, place)| *place)
    }

    /// The report of flow `id`, when it is listed.
    pub fn flow(&self, id: u64) -> Option<&FlowReport> {
        self.place_of(id).and_then(|at| self.flows.get(at))
    }

    /// The conditions that are present.
    pub fn present(&self) -> &[Condition] {
        &self.verdict.problems
    }

    /// Judges the verdict again for the `--fail-on` conditions `fail_on`.
    pub fn judge(&mut self, fail_on: &[Condition]) {
        self.verdict = Verdict::of(self, &self.diagnosis, fail_on, self.capture.truncated);
    }

    /// The capture was cut short after the frames analysed: `why` is the reader's one line.
    pub fn cut_short(&mut self, why: String) {
        self.capture.truncated = true;
        self.capture.truncation = Some(why);
        let fail_on = self.verdict.fail_on.clone();
        self.judge(&fail_on);
    }

    /// The exit status the verdict gives.
    pub fn exit_status(&self) -> u8 {
        self.verdict.exit_status
    }
}

/// `part` of `whole`, 0 when `whole` is.
fn fraction(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// `paused`: the priorities PFC paused (bit p), for `paused_priority`.
fn flow_report(engine: &Engine, f: &Flow, paused: u8) -> FlowReport {
    let paired = f.paired_with.and_then(|p| engine.flows.get(p));
    // The PSN tracker follows the connected transports' requests; a UD flow's PSNs are as seen.
    let has_requests = f.requests > 0 && f.role() != crate::analysis::flow::Role::Datagram;
    let s = &f.series;
    let series = SeriesReport {
        bucket_seconds: s.width_secs(),
        first_bucket: s.first_bucket() as u64,
        packets: s.held().map(|b: series::Bucket| b.packets).collect(),
        bytes: s.held().map(|b| b.bytes).collect(),
    };
    FlowReport {
        id: f.id.number(),
        src: f.key.src.to_string(),
        dst: f.key.dst.to_string(),
        dest_qp: f.key.dest_qp,
        role: f.role(),
        paired_with: engine.number_of(f.paired_with),
        paired_by: f.paired_by,
        state: f.state(),
        trouble: f.trouble().score(),
        connection: f.conn.map(|l| l.connection),
        src_qp: f.src_qp,
        packets: f.packets,
        bytes: f.bytes,
        payload_bytes: f.payload_bytes,
        retransmitted_bytes: f.retransmitted_bytes,
        first_time: secs(f.first_ts),
        last_time: secs(f.last_ts),
        opcodes: f
            .opcodes
            .iter()
            .map(|(op, n)| (Opcode(op).name(), n))
            .collect(),
        psn: PsnReport {
            first: if has_requests {
                f.req.psn.first
            } else {
                f.first_psn
            },
            last: if has_requests {
                f.req.psn.highest
            } else {
                f.last_psn
            },
            gap_events: f.req.psn.gap_events,
            missing: f.req.psn.missing,
            retransmitted: f.req.psn.retransmitted,
            duplicates: f.req.psn.duplicates,
            retransmission_episodes: f.req.psn.episodes,
            reused: f.req.psn.reused,
            resumed_reads: f.req.psn.resumed_reads,
            reordered: f.req.psn.reordered,
            epochs: f.req.rc.epochs,
        },
        acks: f.resp.acks,
        duplicate_acks: f.resp.duplicate_acks,
        naks: f.resp.naks,
        rnr_naks: f.resp.rnr_naks,
        rnr_timers_ms: f
            .resp
            .rnr_timers
            .iter()
            .map(|&(code, n)| (rnr_ms(usize::from(code)), n))
            .collect(),
        read_responses: f.resp.read_responses,
        atomic_acks: f.resp.atomic_acks,
        implied_naks: f.resp.implied_naks,
        reordered_responses: f.resp.reordered,
        reorder_depth_max: f.req.psn.reorder_depth_max.max(f.resp.reorder_depth_max),
        cnp: f.cnp,
        ecn: EcnReport {
            not_ect: f.ecn[0],
            ect1: f.ecn[1],
            ect0: f.ecn[2],
            ce: f.ecn[3],
        },
        ce_without_cnp: f.ce.without_cnp,
        fecn: f.fecn,
        becn: f.becn,
        icrc_bad: f.icrc_bad,
        icrc_unverifiable: f.icrc_unverifiable,
        malformed: f.malformed,
        messages: MessagesReport {
            count: f.req.messages.count,
            bytes: f.req.messages.bytes,
            min_size: f.req.messages.min_size,
            max_size: f.req.messages.max_size,
            length_mismatches: f.req.messages.length_mismatches,
        },
        latency_us: latency(&f.req.timing.ack),
        read_latency_us: latency(&f.req.timing.read),
        pcp: f.pcp,
        dscp: f.dscp,
        priority: f.priority(&engine.cfg.dscp_map),
        paused_priority: f
            .priority(&engine.cfg.dscp_map)
            .is_some_and(|p| paused & (1 << p) != 0)
            || engine.link_pause.xoff > 0,
        counters: Counters {
            out_of_sequence: f.req.psn.gap_events,
            duplicate_request: f.req.psn.duplicates,
            packet_seq_err: paired.map_or(0, |p| p.resp.naks.psn_seq_err),
            rnr_nak_retry_err: paired.map_or(0, |p| p.resp.rnr_naks),
            implied_nak_seq_err: paired.map_or(0, |p| p.resp.implied_naks),
            np_ecn_marked_roce_packets: f.ecn[3],
            np_cnp_sent: paired.map_or(0, |p| p.cnp),
            rx_icrc_encapsulated: f.icrc_bad,
        },
        series,
        cnp_reaction: f.reaction.as_deref().map(cnp_reaction),
        cnp_interval_us: interval(&f.cnp_intervals),
        throughput: throughput(engine, f),
        timers: timers::build(engine, f),
        udp_src_port: f.udp.map(|u| u.src),
        life: life::build(f),
        job: jobs::of_flow(engine, f),
    }
}

/// Gb/s of `bytes` over `nanos` (bits per nanosecond); none over no time.
fn gbps(bytes: u64, nanos: u64) -> Option<f64> {
    (nanos > 0).then(|| bytes as f64 * 8.0 / nanos as f64)
}

fn throughput(engine: &Engine, f: &Flow) -> Throughput {
    let link = engine.cfg.link_speed_bps as f64 / 1e9;
    let span = f.last_ts.saturating_sub(f.first_ts);
    let rate = gbps(f.bytes, span);
    let peak = gbps(f.rate.peak_bytes, engine.cfg.rate_window_nanos).unwrap_or(0.0);
    Throughput {
        gbps: rate,
        goodput_gbps: gbps(f.goodput_bytes(), span),
        link_share: rate.map(|r| r / link),
        peak_gbps: peak,
        peak_link_share: peak / link,
    }
}

/// Every flow's traffic by priority, with the evicted flows', over the capture's duration.
fn priorities(engine: &Engine, duration: u64) -> Vec<PriorityTraffic> {
    let mut by = engine.evicted.by_priority;
    for f in engine.flows.iter() {
        let p = f.priority(&engine.cfg.dscp_map).map_or(8, usize::from);
        by[p.min(8)].add(f);
    }
    let link = engine.cfg.link_speed_bps as f64 / 1e9;
    by.iter()
        .enumerate()
        .filter(|(_, t)| t.flows > 0)
        .map(|(p, t)| {
            let rate = gbps(t.bytes, duration);
            PriorityTraffic {
                priority: (p < 8).then_some(p as u8),
                flows: t.flows,
                bytes: t.bytes,
                goodput_bytes: t.goodput_bytes,
                gbps: rate,
                goodput_gbps: gbps(t.goodput_bytes, duration),
                link_share: rate.map(|r| r / link),
            }
        })
        .collect()
}

fn cnp_reaction(r: &crate::analysis::rate::Reaction) -> CnpReaction {
    use crate::analysis::rate::rounded_mean;
    let us = |nanos: u64| nanos as f64 / 1000.0;
    let measured = r.measured > 0;
    let timed = r.times > 0;
    CnpReaction {
        cnps: r.cnps,
        measured: r.measured,
        no_reduction: r.no_reduction,
        median_reduction: r.median(),
        worst_reduction: measured.then_some(r.worst),
        mean_time_to_reduction_us: timed.then(|| us(rounded_mean(r.time_sum, r.times))),
        max_time_to_reduction_us: timed.then(|| us(r.time_max)),
    }
}

fn interval(i: &crate::analysis::rate::Intervals) -> Option<IntervalReport> {
    let mean = i.mean()?;
    Some(IntervalReport {
        min: i.min as f64 / 1000.0,
        mean: mean as f64 / 1000.0,
        max: i.max as f64 / 1000.0,
    })
}

/// Why a report could not be made or written.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error(transparent)]
    Source(#[from] crate::source::SourceError),
    #[error(transparent)]
    Pipeline(#[from] crate::pipeline::PipelineError),
    #[error("cannot write the report")]
    Write(#[source] io::Error),
}

/// The report of a capture file (or `-`, standard input): the pipeline over it, nothing else.
pub fn analyze_file(
    path: &std::path::Path,
    cfg: &crate::pipeline::Config,
) -> Result<Report, ReportError> {
    let mut source = crate::source::FileSource::open(path)?;
    let run = crate::pipeline::run(&mut source, cfg, &mut (), ())?;
    let mut report = Report::build(&run.engine, source.name());
    if let Some(e) = run.error {
        report.cut_short(e.to_string());
    }
    Ok(report)
}

/// Writes the report as JSON or text to `sink` (buffered); a reader that went away (a closed pipe) is not an
/// error.
/// How a report is written: one JSON document, or the text report (its flow table cut to the `top` flows
/// with the most trouble, when given).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    Json,
    Text { top: Option<usize> },
}

pub fn write(sink: impl Write, report: &Report, output: Output) -> Result<(), ReportError> {
    let mut out = BufWriter::new(sink);
    let written = match output {
        Output::Json => serde_json::to_writer_pretty(&mut out, report)
            .map_err(io::Error::other)
            .and_then(|()| writeln!(out)),
        Output::Text { top } => text::write(&mut out, report, top),
    };
    match written.and_then(|()| out.flush()) {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => Err(ReportError::Write(e)),
        _ => Ok(()),
    }
}
