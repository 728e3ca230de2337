//! `export --trace FILE.json`: the captures as a timeline in the Chrome trace event format (JSON), which
//! Perfetto (ui.perfetto.dev, its trace processor) and chrome://tracing load, to lay beside NCCL's profiler
//! traces. A process per capture; in it a track per flow for its messages (the SEND and WRITE messages the
//! analysis reassembled: `messages.count` slices), one for its go-back-N episodes (`psn.
//! retransmission_episodes` slices) and events (the report's, as instants), a track per priority for the
//! pauses in effect (PFC, and 802.3x PAUSE), and one for the events of no flow. Times are the capture's, in
//! microseconds since 1970 (Perfetto reads them as doubles: about a quarter of a microsecond apart).
//!
//! The per-frame path writes into a buffered file and allocates nothing; what it keeps is a few words per
//! live flow (evicted flows' tracks are closed and forgotten) and per priority.
use std::fmt;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use parsers::frame::Frame;
use parsers::opcode::{Opcode, rc};
use rustc_hash::FxHashMap;

use super::ExportError;
use crate::analysis::flow::Flow;
use crate::analysis::{Class, Classified, Engine, FlowId};
use crate::pipeline::{self, EngineSide};
use crate::report::Report;
use crate::source::open_point;

/// Tracks of a capture's process: the events of no flow, the priorities' pauses (0-7, then the link's
/// PAUSE), then two per flow.
const EVENTS_TID: u64 = 0;
const PAUSE_TID: u64 = 1;
const LINK_PAUSE: usize = 8;
const FLOW_TID: u64 = 16;

/// How often (batches) the tracks of evicted flows are closed and forgotten.
const SWEEP_BATCHES: u32 = 64;

/// What the trace holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Traced {
    pub messages: u64,
    pub episodes: u64,
    pub pauses: u64,
    pub events: u64,
    /// The captures cut short: what the reader said of each.
    pub truncated: Vec<String>,
}

/// Nanoseconds written as microseconds, exactly (three decimals).
struct Micros(u64);

impl fmt::Display for Micros {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:03}", self.0 / 1000, self.0 % 1000)
    }
}

/// The trace file: a JSON object whose `traceEvents` are written one per line as they come.
struct Out {
    w: BufWriter<File>,
    first: bool,
    /// The first write that failed; nothing is written after it.
    error: Option<io::Error>,
}

impl Out {
    fn create(path: &Path) -> io::Result<Out> {
        let mut w = BufWriter::with_capacity(256 * 1024, File::create(path)?);
        w.write_all(b"{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n")?;
        Ok(Out {
            w,
            first: true,
            error: None,
        })
    }

    /// One event (a JSON object's text).
    fn event(&mut self, args: fmt::Arguments<'_>) {
        if self.error.is_some() {
            return;
        }
        let sep: &[u8] = if self.first { b"" } else { b",\n" };
        self.first = false;
        if let Err(e) = self.w.write_all(sep).and_then(|()| self.w.write_fmt(args)) {
            self.error = Some(e);
        }
    }

    fn slice(&mut self, s: Slice<'_>) {
        self.event(format_args!(
            "{{\"ph\":\"X\",\"cat\":\"{}\",\"name\":\"{}\",\"pid\":{},\"tid\":{},\"ts\":{},\"dur\":{},\"args\":{{{}}}}}",
            s.cat,
            s.name,
            s.pid,
            s.tid,
            Micros(s.from),
            Micros(s.to.saturating_sub(s.from)),
            s.args
        ));
    }

    fn name_track(&mut self, pid: u64, tid: u64, name: &str) {
        let name = serde_json::Value::from(name);
        self.event(format_args!(
            "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{pid},\"tid\":{tid},\"args\":{{\"name\":{name}}}}}"
        ));
        self.event(format_args!(
            "{{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":{pid},\"tid\":{tid},\"args\":{{\"sort_index\":{tid}}}}}"
        ));
    }

    fn finish(mut self) -> io::Result<()> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.w.write_all(b"\n]}\n")?;
        self.w.flush()
    }
}

/// A complete event ("X").
struct Slice<'a> {
    cat: &'a str,
    name: &'a str,
    pid: u64,
    tid: u64,
    from: u64,
    to: u64,
    args: fmt::Arguments<'a>,
}

/// A flow's go-back-N episode under way: from its first resend to its last.
#[derive(Debug, Clone, Copy)]
struct Episode {
    from: u64,
    to: u64,
    psn: u32,
    resends: u64,
}

/// What a flow's tracks have shown so far, to tell what the frame just taken changed.
#[derive(Debug, Clone, Copy, Default)]
struct FlowTrack {
    messages: u64,
    bytes: u64,
    /// The message being reassembled: since when, its first PSN, SEND or WRITE.
    open: Option<(u64, u32, &'static str)>,
    episodes: u64,
    episode: Option<Episode>,
}

/// The pause in effect on a priority, as the track shows it.
#[derive(Debug, Clone, Copy, Default)]
struct PauseTrack {
    named: bool,
    open: Option<(u64, u64)>,
}

/// The engine side that writes one capture's tracks.
struct Tracer<'o> {
    out: &'o mut Out,
    pid: u64,
    flows: FxHashMap<FlowId, FlowTrack>,
    pauses: [PauseTrack; 9],
    last_ts: u64,
    batches: u32,
    counts: Traced,
}

fn operation(op: Opcode) -> &'static str {
    match op.operation() {
        rc::WRITE_FIRST..=rc::WRITE_ONLY_IMM => "WRITE",
        _ => "SEND",
    }
}

impl Tracer<'_> {
    fn flow_tid(id: u64) -> u64 {
        FLOW_TID + 2 * id
    }

    fn close_episode(&mut self, id: FlowId, e: Episode) {
        self.counts.episodes += 1;
        self.out.slice(Slice {
            cat: "retransmission",
            name: "go-back-N",
            pid: self.pid,
            tid: Self::flow_tid(id.number()) + 1,
            from: e.from,
            to: e.to,
            args: format_args!("\"psn\":{},\"resends\":{}", e.psn, e.resends),
        });
    }

    fn new_flow(&mut self, id: FlowId, f: &Flow) {
        let n = id.number();
        let label = format!(
            "#{n} {} → {} QP {:#08x}",
            f.key.src, f.key.dst, f.key.dest_qp
        );
        self.out
            .name_track(self.pid, Self::flow_tid(n), &format!("{label} messages"));
        self.out.name_track(
            self.pid,
            Self::flow_tid(n) + 1,
            &format!("{label} resends, events"),
        );
    }

    fn messages(&mut self, t: &mut FlowTrack, id: FlowId, ts: u64, frame: &Frame, f: &Flow) {
        let (count, bytes, open) = (
            f.req.messages.count,
            f.req.messages.bytes,
            f.req.messages.open.is_some(),
        );
        if count > t.messages {
            let (from, psn, op) = t.open.take().unwrap_or((ts, 0, "SEND"));
            let size = bytes.saturating_sub(t.bytes);
            (t.messages, t.bytes) = (count, bytes);
            self.counts.messages += 1;
            let tid = Self::flow_tid(id.number());
            self.out.slice(Slice {
                cat: "message",
                name: op,
                pid: self.pid,
                tid,
                from,
                to: ts,
                args: format_args!("\"psn\":{psn},\"bytes\":{size}"),
            });
        } else if open && t.open.is_none() {
            let op = frame.roce.map(|r| Opcode(r.bth.opcode));
            t.open = Some((
                ts,
                frame.roce.map_or(0, |r| r.bth.psn),
                op.map_or("SEND", operation),
            ));
        }
    }

    fn resends(
        &mut self,
        t: &mut FlowTrack,
        id: FlowId,
        ts: u64,
        class: Class,
        frame: &Frame,
        f: &Flow,
    ) {
        let episodes = f.req.psn.episodes;
        let mut ended: [Option<Episode>; 2] = [None, None];
        if episodes > t.episodes {
            t.episodes = episodes;
            ended[0] = t.episode.replace(Episode {
                from: ts,
                to: ts,
                psn: frame.roce.map_or(0, |r| r.bth.psn),
                resends: 0,
            });
        }
        match class {
            Class::Retransmission => {
                if let Some(e) = t.episode.as_mut() {
                    e.to = ts;
                    e.resends += 1;
                }
            }
            // New data: the go-back-N is over.
            Class::Request | Class::Gap => ended[1] = t.episode.take(),
            _ => {}
        }
        for e in ended.into_iter().flatten() {
            self.close_episode(id, e);
        }
    }

    /// After a PAUSE or PFC frame: the pauses that ended or began.
    fn pauses(&mut self, ts: u64, engine: &Engine) {
        for p in 0..=LINK_PAUSE {
            let state = if p == LINK_PAUSE {
                &engine.link_pause
            } else {
                &engine.pause[p]
            };
            let now = state.in_effect();
            let track = self.pauses[p];
            match (track.open, now) {
                (Some((since, _)), Some((s2, until))) if since == s2 => {
                    self.pauses[p].open = Some((since, until));
                }
                (Some(open), now) => {
                    self.close_pause(p, open, now.map_or(ts, |(s2, _)| s2).min(ts));
                    self.pauses[p].open = now;
                }
                (None, now) => self.pauses[p].open = now,
            }
            if now.is_some() && !track.named {
                self.pauses[p].named = true;
                let name = if p == LINK_PAUSE {
                    "PAUSE (802.3x)".to_string()
                } else {
                    format!("PFC priority {p}")
                };
                self.out.name_track(self.pid, PAUSE_TID + p as u64, &name);
            }
        }
    }

    /// The pause `open` (since, until) ended by `end` at the latest.
    fn close_pause(&mut self, p: usize, (since, until): (u64, u64), end: u64) {
        self.counts.pauses += 1;
        self.out.slice(Slice {
            cat: "pause",
            name: "paused",
            pid: self.pid,
            tid: PAUSE_TID + p as u64,
            from: since,
            to: until.min(end).max(since),
            args: format_args!("\"priority\":{p}"),
        });
    }

    /// The tracks of flows the engine no longer holds: their episodes closed, their state dropped.
    fn sweep(&mut self, engine: &Engine) {
        let gone: Vec<(FlowId, Option<Episode>)> = self
            .flows
            .iter()
            .filter(|(id, _)| engine.flows.get(**id).is_none())
            .map(|(id, t)| (*id, t.episode))
            .collect();
        for (id, episode) in gone {
            self.flows.remove(&id);
            if let Some(e) = episode {
                self.close_episode(id, e);
            }
        }
    }

    fn finish(&mut self) {
        let open: Vec<(FlowId, Episode)> = self
            .flows
            .iter()
            .filter_map(|(id, t)| t.episode.map(|e| (*id, e)))
            .collect();
        for (id, e) in open {
            self.close_episode(id, e);
        }
        self.flows.clear();
        for p in 0..=LINK_PAUSE {
            if let Some(open) = self.pauses[p].open.take() {
                self.close_pause(p, open, open.1.min(self.last_ts.max(open.0)));
            }
        }
    }
}

impl EngineSide for Tracer<'_> {
    fn examined(
        &mut self,
        _number: u64,
        ts_nanos: u64,
        frame: &Frame,
        classified: Classified,
        engine: &Engine,
    ) {
        self.last_ts = self.last_ts.max(ts_nanos);
        if frame.mac_control.is_some() {
            self.pauses(ts_nanos, engine);
        }
        let Some((id, f)) = classified
            .flow
            .and_then(|id| Some((id, engine.flows.get(id)?)))
        else {
            return;
        };
        // The flow's track taken out and put back: one lookup and one store a frame.
        let mut t = match self.flows.get(&id) {
            Some(t) => *t,
            None => {
                self.new_flow(id, f);
                FlowTrack::default()
            }
        };
        self.messages(&mut t, id, ts_nanos, frame, f);
        self.resends(&mut t, id, ts_nanos, classified.class, frame, f);
        self.flows.insert(id, t);
    }

    fn batch_done(&mut self, engine: &Engine) {
        self.batches += 1;
        if self.batches.is_multiple_of(SWEEP_BATCHES) {
            self.sweep(engine);
        }
    }
}

/// The report's events as instants on their flows' tracks (or the capture's).
fn events(out: &mut Out, pid: u64, report: &Report) -> u64 {
    for e in &report.events {
        let tid = e.flow.map_or(EVENTS_TID, |n| Tracer::flow_tid(n) + 1);
        let message = serde_json::Value::from(e.message.as_str());
        let psn = e.psn.map_or("null".to_string(), |p| p.to_string());
        out.event(format_args!(
            "{{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"event\",\"name\":\"{}\",\"pid\":{pid},\"tid\":{tid},\"ts\":{},\"args\":{{\"frame\":{},\"psn\":{psn},\"message\":{message}}}}}",
            e.kind,
            Micros(e.ts_nanos),
            e.frame
        ));
    }
    report.events.len() as u64
}

/// What to trace, and how to analyse it.
#[derive(Debug, Clone)]
pub struct Config {
    /// The trace file (JSON).
    pub path: PathBuf,
    /// The captures, each a process of the trace.
    pub files: Vec<PathBuf>,
    pub pipeline: pipeline::Config,
}

/// Analyses each capture and writes the trace (under a name of its own until it is whole, then renamed
/// into place).
pub fn write(trace: &Config) -> Result<Traced, ExportError> {
    let (files, cfg, path) = (&trace.files, &trace.pipeline, trace.path.as_path());
    let staged = path.with_file_name(format!(
        ".{}.part",
        path.file_name()
            .map_or("trace".into(), |n| n.to_string_lossy())
    ));
    let cannot = |source| ExportError::Trace {
        path: path.to_path_buf(),
        source,
    };
    let written = (|| {
        let mut out = Out::create(&staged).map_err(cannot)?;
        let mut traced = Traced::default();
        for (i, file) in files.iter().enumerate() {
            let pid = i as u64 + 1;
            let name = file.display().to_string();
            let label = serde_json::Value::from(format!("capture {name}"));
            out.event(format_args!(
                "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{pid},\"args\":{{\"name\":{label}}}}}"
            ));
            out.name_track(pid, EVENTS_TID, "events of no flow");
            let mut source = open_point(file)?;
            let tracer = Tracer {
                out: &mut out,
                pid,
                flows: FxHashMap::default(),
                pauses: Default::default(),
                last_ts: 0,
                batches: 0,
                counts: Traced::default(),
            };
            let pipeline::Outcome {
                engine,
                engine_side: mut tracer,
                error,
                ..
            } = pipeline::run(&mut *source, cfg, &mut (), tracer)?;
            tracer.finish();
            let counts = tracer.counts;
            traced.messages += counts.messages;
            traced.episodes += counts.episodes;
            traced.pauses += counts.pauses;
            let report = Report::build(&engine, &name);
            traced.events += events(&mut out, pid, &report);
            if let Some(e) = error {
                traced.truncated.push(format!("{name}: {e}"));
            }
        }
        out.finish().map_err(cannot)?;
        std::fs::rename(&staged, path).map_err(cannot)?;
        Ok(traced)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&staged);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn micros_are_exact() {
        assert_eq!(
            Micros(1_796_276_874_185_127_701).to_string(),
            "1796276874185127.701"
        );
        assert_eq!(Micros(5).to_string(), "0.005");
        assert_eq!(operation(Opcode(rc::WRITE_ONLY)), "WRITE");
        assert_eq!(operation(Opcode(rc::SEND_LAST)), "SEND");
    }
}
