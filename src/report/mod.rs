//! The analysis report: one data model built from the engine's state, written as text or as JSON.
//! The JSON form is a stable interface, documented in the README ("analyze JSON schema").
pub mod capture;
pub mod format;
pub mod rank;
pub mod text;

use std::collections::BTreeMap;
use std::io::{self, BufWriter, Write};

use serde::Serialize;

use crate::analysis::events::Severity;
use crate::analysis::flow::{Flow, NakCounts, Role};
use crate::analysis::{Engine, series};
use parsers::aeth::RNR_TIMER_MICROS;
use parsers::opcode::Opcode;

#[derive(Debug, Serialize)]
pub struct Report {
    pub capture: Capture,
    pub config: ConfigUsed,
    pub flows: Vec<FlowReport>,
    pub pfc: Vec<PriorityReport>,
    /// 802.3x PAUSE (whole link), when any.
    pub link_pause: Option<PriorityReport>,
    pub events: Vec<EventReport>,
    pub events_dropped: u64,
    pub verdict: Verdict,
    /// Live capture only (`rocescope capture`): libpcap's counters, what was written, the wrapped command.
    /// Absent for a capture file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capture_stats: Option<capture::CaptureStats>,
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
    pub bytes: u64,
    /// Seconds since the Unix epoch, nanosecond precision.
    pub first_time: Option<f64>,
    pub last_time: Option<f64>,
    pub duration_s: f64,
}

#[derive(Debug, Serialize)]
pub struct ConfigUsed {
    pub mtu: Option<u32>,
    /// "option", "inferred" (largest FIRST/MIDDLE payload) or "unknown".
    pub mtu_source: &'static str,
    pub link_speed_bps: u64,
    pub cnp_window_us: u64,
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

#[derive(Debug, Serialize)]
pub struct SeriesReport {
    pub bucket_seconds: u64,
    pub packets: Vec<u64>,
    pub bytes: Vec<u64>,
}

#[derive(Debug, Serialize)]
pub struct FlowReport {
    pub id: u32,
    pub src: String,
    pub dst: String,
    pub dest_qp: u32,
    pub role: Role,
    pub paired_with: Option<u32>,
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
    /// The flow's priority was paused by PFC (or PAUSE) during the capture.
    pub paused_priority: bool,
    pub counters: Counters,
    pub series: SeriesReport,
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
    pub quanta: u64,
    /// Pause time the quanta imply at the link speed, microseconds.
    pub pause_us: f64,
}

#[derive(Debug, Serialize)]
pub struct EventReport {
    pub time: f64,
    pub severity: Severity,
    pub kind: &'static str,
    pub flow: Option<u32>,
    pub frame: u64,
    pub message: String,
}

#[derive(Debug, Serialize)]
pub struct Verdict {
    pub status: Status,
    /// Conditions present, by `--fail-on` name.
    pub problems: Vec<Condition>,
    pub text: String,
}

/// The verdict's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pass,
    Fail,
}

/// A condition the verdict notes and `--fail-on` can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Condition {
    Gaps,
    Naks,
    Rnr,
    Retransmissions,
    Ce,
    Cnp,
    Icrc,
    Malformed,
}

impl Condition {
    /// Every condition, in the order the verdict lists them.
    pub const ALL: [Condition; 8] = [
        Condition::Gaps,
        Condition::Naks,
        Condition::Rnr,
        Condition::Retransmissions,
        Condition::Ce,
        Condition::Cnp,
        Condition::Icrc,
        Condition::Malformed,
    ];

    /// The `--fail-on` name.
    pub fn name(self) -> &'static str {
        match self {
            Condition::Gaps => "gaps",
            Condition::Naks => "naks",
            Condition::Rnr => "rnr",
            Condition::Retransmissions => "retransmissions",
            Condition::Ce => "ce",
            Condition::Cnp => "cnp",
            Condition::Icrc => "icrc",
            Condition::Malformed => "malformed",
        }
    }

    pub fn from_name(name: &str) -> Option<Condition> {
        Condition::ALL.into_iter().find(|c| c.name() == name)
    }

    /// Congestion marking is a signal, not a failure: the verdict fails on loss, NAKs and damage.
    pub fn fails(self) -> bool {
        !matches!(self, Condition::Ce | Condition::Cnp)
    }
}

fn secs(nanos: u64) -> f64 {
    nanos as f64 / 1e9
}

/// Microseconds: min and max exact, percentiles to the histogram's precision (two significant digits).
fn latency(l: &Option<Box<crate::analysis::flow::Latencies>>) -> Option<Latency> {
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
    pub fn build(engine: &Engine, file: &str) -> Report {
        let t = &engine.totals;
        let first = t.first_ts.unwrap_or(0);
        let paused: Vec<bool> = engine.pause.iter().map(|p| p.xoff > 0).collect();
        let flows: Vec<FlowReport> = engine
            .flows
            .iter()
            .enumerate()
            .map(|(id, f)| flow_report(engine, id as u32, f, &paused))
            .collect();
        let priority = |i: usize, p: &crate::analysis::PriorityPause| PriorityReport {
            priority: i as u8,
            frames: p.frames,
            xoff: p.xoff,
            xon: p.xon,
            quanta: p.quanta,
            pause_us: engine.pause_us(p.quanta),
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
            .list
            .iter()
            .map(|e| EventReport {
                time: secs(e.ts_nanos),
                severity: e.kind.severity(),
                kind: e.kind.name(),
                flow: e.flow,
                frame: e.frame,
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
                bytes: t.bytes,
                first_time: t.first_ts.map(secs),
                last_time: t.first_ts.map(|_| secs(t.last_ts)),
                duration_s: secs(t.last_ts.saturating_sub(first)),
            },
            config: ConfigUsed {
                mtu: engine.mtu(),
                mtu_source,
                link_speed_bps: engine.cfg.link_speed_bps,
                cnp_window_us: engine.cfg.cnp_window_nanos / 1000,
            },
            flows,
            pfc,
            link_pause,
            events,
            events_dropped: engine.events.dropped,
            verdict: Verdict {
                status: Status::Pass,
                problems: Vec::new(),
                text: String::new(),
            },
            capture_stats: None,
        };
        report.verdict = verdict(&report);
        report
    }

    /// The conditions that are present.
    pub fn present(&self) -> &[Condition] {
        &self.verdict.problems
    }

    /// True when any of `fail_on` is present (`--fail-on`: exit status 3).
    pub fn fails_on(&self, fail_on: &[Condition]) -> bool {
        fail_on.iter().any(|c| self.present().contains(c))
    }
}

fn flow_report(engine: &Engine, id: u32, f: &Flow, paused: &[bool]) -> FlowReport {
    let paired = f.paired_with.and_then(|p| engine.flows.get(p as usize));
    let has_requests = f.requests > 0;
    let s = &f.series;
    let series = SeriesReport {
        bucket_seconds: s.width_secs(),
        packets: s
            .buckets()
            .iter()
            .map(|b: &series::Bucket| b.packets)
            .collect(),
        bytes: s.buckets().iter().map(|b| b.bytes).collect(),
    };
    FlowReport {
        id,
        src: f.key.src.to_string(),
        dst: f.key.dst.to_string(),
        dest_qp: f.key.dest_qp,
        role: f.role(),
        paired_with: f.paired_with,
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
            .map(|(op, n)| (Opcode(*op).name(), *n))
            .collect(),
        psn: PsnReport {
            first: if has_requests {
                f.psn.first
            } else {
                f.first_psn
            },
            last: if has_requests {
                f.psn.highest
            } else {
                f.last_psn
            },
            gap_events: f.psn.gap_events,
            missing: f.psn.missing,
            retransmitted: f.psn.retransmitted,
            duplicates: f.psn.duplicates,
            retransmission_episodes: f.psn.episodes,
        },
        acks: f.resp.acks,
        duplicate_acks: f.resp.duplicate_acks,
        naks: f.resp.naks,
        rnr_naks: f.resp.rnr_naks,
        rnr_timers_ms: f
            .resp
            .rnr_timers
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(code, n)| (rnr_ms(code), *n))
            .collect(),
        read_responses: f.resp.read_responses,
        atomic_acks: f.resp.atomic_acks,
        implied_naks: f.resp.implied_naks,
        cnp: f.cnp,
        ecn: EcnReport {
            not_ect: f.ecn[0],
            ect1: f.ecn[1],
            ect0: f.ecn[2],
            ce: f.ecn[3],
        },
        ce_without_cnp: f.ce_without_cnp,
        fecn: f.fecn,
        becn: f.becn,
        icrc_bad: f.icrc_bad,
        icrc_unverifiable: f.icrc_unverifiable,
        malformed: f.malformed,
        messages: MessagesReport {
            count: f.messages.count,
            bytes: f.messages.bytes,
            min_size: f.messages.min_size,
            max_size: f.messages.max_size,
            length_mismatches: f.messages.length_mismatches,
        },
        latency_us: latency(&f.timing.ack),
        read_latency_us: latency(&f.timing.read),
        pcp: f.pcp,
        dscp: f.dscp,
        paused_priority: f
            .pcp
            .is_some_and(|p| paused.get(usize::from(p)).copied().unwrap_or(false))
            || engine.link_pause.xoff > 0,
        counters: Counters {
            out_of_sequence: f.psn.gap_events,
            duplicate_request: f.psn.duplicates,
            packet_seq_err: paired.map_or(0, |p| p.resp.naks.psn_seq_err),
            rnr_nak_retry_err: paired.map_or(0, |p| p.resp.rnr_naks),
            implied_nak_seq_err: paired.map_or(0, |p| p.resp.implied_naks),
            np_ecn_marked_roce_packets: f.ecn[3],
            np_cnp_sent: paired.map_or(0, |p| p.cnp),
            rx_icrc_encapsulated: f.icrc_bad,
        },
        series,
    }
}

fn verdict(r: &Report) -> Verdict {
    let sum = |g: &dyn Fn(&FlowReport) -> u64| r.flows.iter().map(g).sum::<u64>();
    let gaps = sum(&|f| f.psn.gap_events);
    let missing = sum(&|f| f.psn.missing);
    let naks = sum(&|f| f.naks.total());
    let rnr = sum(&|f| f.rnr_naks);
    let retx = sum(&|f| f.psn.retransmitted);
    let ce = sum(&|f| f.ecn.ce);
    let cnp = sum(&|f| f.cnp);
    let icrc = r.capture.icrc_bad;
    let malformed = r.capture.malformed;
    let mut problems = Vec::new();
    let mut parts = Vec::new();
    let mut note = |present: bool, name: Condition, text: String| {
        if present {
            problems.push(name);
            parts.push(text);
        }
    };
    note(
        gaps > 0,
        Condition::Gaps,
        format!("{gaps} PSN gaps ({missing} PSNs missing)"),
    );
    note(naks > 0, Condition::Naks, format!("{naks} NAKs"));
    note(rnr > 0, Condition::Rnr, format!("{rnr} RNR NAKs"));
    note(
        retx > 0,
        Condition::Retransmissions,
        format!("{retx} retransmitted requests"),
    );
    note(ce > 0, Condition::Ce, format!("{ce} CE-marked packets"));
    note(cnp > 0, Condition::Cnp, format!("{cnp} CNPs"));
    note(icrc > 0, Condition::Icrc, format!("{icrc} bad ICRCs"));
    note(
        malformed > 0,
        Condition::Malformed,
        format!("{malformed} malformed frames"),
    );
    let failing = problems.iter().any(|p| p.fails());
    let status = if failing { Status::Fail } else { Status::Pass };
    let text = if parts.is_empty() {
        format!(
            "PASS: {} RoCE frames in {} flows, no gaps, NAKs, retransmissions or damage",
            r.capture.roce_frames,
            r.flows.len()
        )
    } else if failing {
        format!("FAIL: {}", parts.join(", "))
    } else {
        format!("PASS with congestion signals: {}", parts.join(", "))
    };
    Verdict {
        status,
        problems,
        text,
    }
}

/// The report of a capture file (or `-`, standard input): the pipeline over it, nothing else.
pub fn analyze_file(
    path: &std::path::Path,
    cfg: &crate::pipeline::Config,
) -> Result<Report, String> {
    let mut source = crate::source::FileSource::open(path).map_err(|e| e.to_string())?;
    let run = crate::pipeline::run(&mut source, cfg, &mut (), ())?;
    if let Some(e) = run.error {
        return Err(e.to_string());
    }
    Ok(Report::build(&run.engine, source.name()))
}

/// Writes the report as JSON or text to `sink` (buffered); a reader that went away (a closed pipe) is not an
/// error.
pub fn write(sink: impl Write, report: &Report, json: bool) -> Result<(), String> {
    let mut out = BufWriter::new(sink);
    let written = if json {
        serde_json::to_writer_pretty(&mut out, report)
            .map_err(io::Error::other)
            .and_then(|()| writeln!(out))
    } else {
        text::write(&mut out, report)
    };
    match written.and_then(|()| out.flush()) {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => {
            Err(format!("cannot write the report: {e}"))
        }
        _ => Ok(()),
    }
}
