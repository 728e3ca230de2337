//! `rocescope analyze --points A B ...`: captures of the same traffic at several points of its path, in path
//! order from the senders' side. Each point is analysed on its own (its figures), the points' clock offsets
//! are estimated from the first packets they share, a first merge of the points follows each clock's drift
//! through the captures, then a second merge in corrected time matches every packet across them
//! (`analysis::points`) and tells where packets were lost.
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use anyhow::bail;
use serde_json::{Value, json};

use rocescope::analysis::clock::{Clock, Jump};
use rocescope::analysis::points::{self, Clocks, Lost, Matcher, Offset, Sighting};
use rocescope::pipeline;
use rocescope::report::{Output, Report};
use rocescope::source::{self, Next, PacketSource, SourceError};

use super::analyze::Config;
use super::fail;

/// Packets of each point read to estimate the clock offsets.
const OFFSET_SAMPLE: usize = 20_000;
/// A packet not seen at the next point within this time (corrected clocks) after the last point that saw
/// it was lost: far beyond a fabric's one-way delay, and the bound of the matcher's memory.
const WINDOW_NANOS: u64 = 100_000_000;
/// `lost_between` events listed at most (all are counted).
const MAX_EVENTS: usize = 10_000;

pub fn run(cfg: &Config) -> ExitCode {
    match localise(cfg) {
        Ok(out) => match write(io::stdout().lock(), &out, cfg.output == Output::Json) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => fail(e),
        },
        Err(e) => fail(e),
    }
}

struct Outcome {
    names: Vec<String>,
    reports: Vec<Report>,
    matched: Matched,
}

/// The points' packets matched across them.
struct Matched {
    clocks: Clocks,
    matcher: Matcher,
    /// The first [`MAX_EVENTS`] `lost_between` events.
    events: Vec<Lost>,
    lost_events: u64,
}

fn localise(cfg: &Config) -> anyhow::Result<Outcome> {
    let files = &cfg.points;
    if files.len() > points::MAX_POINTS {
        bail!("--points takes at most {} captures", points::MAX_POINTS);
    }
    if files.iter().any(|f| f.as_os_str() == "-") {
        bail!(
            "--points reads each capture more than once (the clocks, then the matching), so not from \
             standard input: save it to a file and give that"
        );
    }
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    // Each point's own analysis runs beside the matching, which reads every point again.
    std::thread::scope(|s| {
        let reports = s.spawn(|| reports(cfg, files));
        let matched = matching(cfg, files);
        // A point that cannot be analysed says so first, as when the points were taken one by one.
        let reports = joined(reports)?;
        Ok(Outcome {
            names,
            reports,
            matched: matched?,
        })
    })
}

/// Each point's report, as many at once as half the threads `-j` allows (each analysis runs on two), in
/// the points' order.
fn reports(cfg: &Config, files: &[PathBuf]) -> anyhow::Result<Vec<Report>> {
    let at_once = (cfg.pipeline.threads / 2).max(1);
    let cfg = &Config {
        pipeline: pipeline::Config {
            threads: 2,
            ..cfg.pipeline.clone()
        },
        ..cfg.clone()
    };
    let mut reports = Vec::with_capacity(files.len());
    for group in files.chunks(at_once) {
        let done: Vec<_> = std::thread::scope(|s| {
            let running: Vec<_> = group
                .iter()
                .map(|f| s.spawn(move || super::analyze::analyze(cfg, std::slice::from_ref(f))))
                .collect();
            running.into_iter().map(joined).collect()
        });
        for r in done {
            reports.push(r?);
        }
    }
    Ok(reports)
}

/// What a thread returned; its panic goes on.
fn joined<T>(thread: std::thread::ScopedJoinHandle<'_, T>) -> T {
    thread
        .join()
        .unwrap_or_else(|p| std::panic::resume_unwind(p))
}

/// The points' clocks, then every packet matched across them.
fn matching(cfg: &Config, files: &[PathBuf]) -> Result<Matched, SourceError> {
    let sample = std::thread::scope(|s| {
        let reading: Vec<_> = files
            .iter()
            .map(|f| s.spawn(move || sightings(f, cfg, OFFSET_SAMPLE)))
            .collect();
        reading
            .into_iter()
            .map(joined)
            .collect::<Result<Vec<_>, _>>()
    })?;
    let offsets = points::offsets(&sample);
    let constant = |i: usize| offsets.get(i).map_or(0, |o| o.nanos);
    // A first merge on the offsets of the first packets follows each clock through the captures: the
    // packets are then matched on clocks corrected as they drifted.
    let mut follow = Matcher::new(files.len(), WINDOW_NANOS).following_clocks();
    merge(files, cfg, &|i, _| constant(i), &mut follow, &mut |_| {})?;
    follow.finish(&mut |_| {});
    let clocks = Clocks {
        tracks: follow.tracks(),
        offsets,
    };
    // Its window's packets go before the second merge gathers its own.
    drop(follow);
    let drifting = |i: usize, ts: u64| clocks.offset_at(i, ts);
    let mut matcher = Matcher::new(files.len(), WINDOW_NANOS);
    let (mut events, mut lost_events) = (Vec::new(), 0u64);
    let mut on_lost = |l: Lost| {
        lost_events += 1;
        if events.len() < MAX_EVENTS {
            events.push(l);
        }
    };
    merge(files, cfg, &drifting, &mut matcher, &mut on_lost)?;
    matcher.finish(&mut on_lost);
    Ok(Matched {
        clocks,
        matcher,
        events,
        lost_events,
    })
}

/// A point's packets: its file, or the files of its directory (one point's pieces) merged by time.
fn open(point: &Path) -> Result<Box<dyn PacketSource>, SourceError> {
    source::open_point(point)
}

/// The first `limit` RoCE packets of a point: (time, sighting).
fn sightings(file: &Path, cfg: &Config, limit: usize) -> Result<Vec<(u64, Sighting)>, SourceError> {
    let mut stream = Stream::open(file)?;
    let mut out = Vec::new();
    while out.len() < limit {
        let Some(s) = stream.next(|_| 0, cfg)? else {
            break;
        };
        out.push(s);
    }
    Ok(out)
}

/// A packet seen at a point, at a time.
type Timed = (u64, Sighting);

/// A point's RoCE packets on its clock as the analysis follows it (`analysis::clock`): a step back held at
/// the time before it, a leap held until the next packet tells, a first packet stamped far ahead of the
/// second taken at the second's time (it is read one ahead for that): a wrong stamp holds up no merge and
/// makes no loss.
struct Stream {
    src: Box<dyn PacketSource>,
    clock: Clock,
    packets: u64,
    /// The second packet, read to judge the first.
    ahead: Option<(u64, Sighting)>,
}

impl Stream {
    fn open(point: &Path) -> Result<Stream, SourceError> {
        Ok(Stream {
            src: open(point)?,
            clock: Clock::default(),
            packets: 0,
            ahead: None,
        })
    }

    /// The next packet, its time corrected by the point's offset at that time.
    fn next(
        &mut self,
        offset: impl Fn(u64) -> i64,
        cfg: &Config,
    ) -> Result<Option<(u64, Sighting)>, SourceError> {
        let correct =
            |(t, s): (u64, Sighting)| (t.saturating_add_signed(offset(t).saturating_neg()), s);
        if let Some(a) = self.ahead.take() {
            return Ok(Some(correct(a)));
        }
        let Some(first) = self.stamped(cfg)? else {
            return Ok(None);
        };
        if self.packets > 1 {
            return Ok(Some(correct(first)));
        }
        // The first packet: its time is the second's when the second says it was stamped wrong.
        let Some((second, jump)) = self.stamped_judging(cfg)? else {
            return Ok(Some(correct(first)));
        };
        let first_ts = if jump.is_some_and(|j| j.first) {
            second.0
        } else {
            first.0
        };
        self.ahead = Some(second);
        Ok(Some(correct((first_ts, first.1))))
    }

    fn stamped(&mut self, cfg: &Config) -> Result<Option<(u64, Sighting)>, SourceError> {
        Ok(self.stamped_judging(cfg)?.map(|(p, _)| p))
    }

    /// The next packet at its time on the followed clock, and the jump it showed, if one.
    fn stamped_judging(
        &mut self,
        cfg: &Config,
    ) -> Result<Option<(Timed, Option<Jump>)>, SourceError> {
        let Some((ts, s)) = next_sighting(&mut *self.src, cfg)? else {
            return Ok(None);
        };
        self.packets += 1;
        let (at, jump) = self.clock.stamp(self.packets, ts);
        Ok(Some(((at, s), jump)))
    }
}

/// A point's next RoCE packet, at its stamp.
fn next_sighting(
    src: &mut dyn PacketSource,
    cfg: &Config,
) -> Result<Option<(u64, Sighting)>, SourceError> {
    loop {
        let (found, end) = match src.next()? {
            Next::Packet { packet: p, end, .. } => {
                let f = parsers::parse_frame_deferred(
                    p.linktype,
                    p.data,
                    p.orig_len as usize,
                    &cfg.pipeline.parse,
                );
                let s = f.roce.as_ref().and_then(|r| Sighting::of(&f, r));
                (s.map(|s| (p.ts_nanos, s)), end)
            }
            Next::Idle | Next::End => return Ok(None),
        };
        // A mapped file's pages go once read: memory stays that of the window, not of the files.
        src.done_before(end);
        if found.is_some() {
            return Ok(found);
        }
    }
}

/// Feeds the matcher every point's RoCE packets in corrected time order (a k-way merge: one packet per
/// point waits); `offset(point, time)` is a point's clock offset at a time of its own clock. Each point is
/// read and parsed on a thread of its own ([`Feed`]); the merge takes its packets in the same order.
fn merge(
    files: &[PathBuf],
    cfg: &Config,
    offset: &(impl Fn(usize, u64) -> i64 + Sync),
    matcher: &mut Matcher,
    lost: &mut impl FnMut(Lost),
) -> Result<(), SourceError> {
    std::thread::scope(|s| {
        let mut feeds: Vec<Feed> = files
            .iter()
            .enumerate()
            .map(|(i, f)| Feed::start(s, f, cfg, move |t| offset(i, t)))
            .collect();
        let mut heads = Vec::with_capacity(feeds.len());
        for feed in &mut feeds {
            heads.push(feed.next()?);
        }
        while let Some(i) = (0..heads.len())
            .filter(|&i| heads[i].is_some())
            .min_by_key(|&i| heads[i].map(|h| h.0))
        {
            if let Some((ts, s)) = heads[i] {
                matcher.see(i, ts, s, lost);
            }
            heads[i] = feeds[i].next()?;
        }
        Ok(())
    })
}

/// Packets handed from a point's reading thread to the merge at a time.
const FEED_BATCH: usize = 4096;

/// A point's packets in its corrected time, read and parsed on a thread of its own and handed over in
/// batches of [`FEED_BATCH`] (at most two waiting, so memory stays bounded); an error ends them, after the
/// packets before it.
struct Feed {
    batches: Receiver<Result<Vec<Timed>, SourceError>>,
    batch: std::vec::IntoIter<Timed>,
}

impl Feed {
    fn start<'scope>(
        s: &'scope std::thread::Scope<'scope, '_>,
        file: &'scope Path,
        cfg: &'scope Config,
        offset: impl Fn(u64) -> i64 + Send + 'scope,
    ) -> Feed {
        let (tx, batches) = sync_channel(2);
        s.spawn(move || {
            if let Err(e) = Self::read(file, cfg, offset, &tx) {
                // The merge may have stopped already: then nobody waits for the error.
                let _ = tx.send(Err(e));
            }
        });
        Feed {
            batches,
            batch: Vec::new().into_iter(),
        }
    }

    fn read(
        file: &Path,
        cfg: &Config,
        offset: impl Fn(u64) -> i64,
        tx: &SyncSender<Result<Vec<Timed>, SourceError>>,
    ) -> Result<(), SourceError> {
        let mut stream = Stream::open(file)?;
        let mut batch = Vec::with_capacity(FEED_BATCH);
        let ended = loop {
            match stream.next(&offset, cfg) {
                Ok(Some(t)) => batch.push(t),
                ended => break ended.map(|_| ()),
            }
            if batch.len() == FEED_BATCH {
                let full = std::mem::replace(&mut batch, Vec::with_capacity(FEED_BATCH));
                if tx.send(Ok(full)).is_err() {
                    // The merge stopped (another point's error).
                    return Ok(());
                }
            }
        };
        // The packets before the end, or before the error that ended them, go first.
        if !batch.is_empty() {
            let _ = tx.send(Ok(batch));
        }
        ended
    }

    fn next(&mut self) -> Result<Option<Timed>, SourceError> {
        loop {
            if let Some(t) = self.batch.next() {
                return Ok(Some(t));
            }
            match self.batches.recv() {
                Ok(batch) => self.batch = batch?.into_iter(),
                // The point's packets ended.
                Err(_) => return Ok(None),
            }
        }
    }
}

/// How a point's offset was found.
fn offset_from(point: usize, o: &Offset) -> &'static str {
    match (point, o.matched, o.both_directions()) {
        (0, _, _) => "reference",
        (_, 0, _) => "no packet in common (0 assumed)",
        (_, _, true) => "both directions",
        _ => "one direction (delay taken as 0)",
    }
}

fn name(o: &Outcome, i: usize) -> &str {
    o.names.get(i).map_or("?", |n| n.as_str())
}

fn document(o: &Outcome) -> Value {
    let m = &o.matched.matcher;
    let mut segments: Vec<Value> = Vec::new();
    for i in 0..o.names.len().saturating_sub(1) {
        let d = m.delay[i];
        let delay = (d.samples > 0).then(|| {
            let mean = (d.sum / i128::from(d.samples)) as f64 / 1e3;
            json!({"samples": d.samples, "min": d.min as f64 / 1e3, "mean": mean,
                   "max": d.max as f64 / 1e3})
        });
        let lost = |a: usize, b: usize| m.lost.get(&(a, b)).copied().unwrap_or(0);
        segments.push(json!({
            "from": name(o, i), "to": name(o, i + 1),
            "lost_forward": lost(i, i + 1), "lost_reverse": lost(i + 1, i),
            "one_way_delay_us": delay,
        }));
    }
    let mut flows: Vec<_> = m.lost_by_flow.iter().collect();
    flows.sort_by_key(|((f, a, b), _)| (f.src, f.dst, f.dest_qp, *a, *b));
    let flows: Vec<Value> = flows
        .into_iter()
        .map(|((f, a, b), n)| {
            json!({"src": f.src.to_string(), "dst": f.dst.to_string(), "dest_qp": f.dest_qp,
                   "from": name(o, *a), "to": name(o, *b), "lost": n})
        })
        .collect();
    let events: Vec<Value> = o
        .matched
        .events
        .iter()
        .map(|l| {
            json!({"time": l.ts as f64 / 1e9, "severity": "error", "kind": "lost_between", "psn": l.psn,
                   "detail": {"src": l.flow.src.to_string(), "dst": l.flow.dst.to_string(),
                              "dest_qp": l.flow.dest_qp, "from": name(o, l.from), "to": name(o, l.to)},
                   "message": format!("PSN {:#08x} seen at point {}, not at point {}: lost between {} and {}",
                       l.psn, name(o, l.from), name(o, l.to), name(o, l.from), name(o, l.to))})
        })
        .collect();
    let points: Vec<Value> = o
        .reports
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let c = &o.matched.clocks;
            let off = c.offsets.get(i);
            json!({"file": name(o, i), "clock_offset_us": off.map(|x| x.nanos as f64 / 1e3),
                   "clock_offset_bound_us": off.and_then(|x| x.bound_nanos).map(|b| b as f64 / 1e3),
                   "clock_drift_ppm": c.drift_ppm(i),
                   "clock_offset_at_end_us": c.offset_at_end(i).map(|e| e as f64 / 1e3),
                   "clock_marks": c.tracks.get(i).map_or(0, |t| t.marks.len()),
                   "offset_from": off.map(|x| offset_from(i, x)),
                   "offset_matched": off.map(|x| x.matched),
                   "offset_rejected": off.map(|x| x.rejected),
                   "missed": m.missed.get(i), "late": m.late.get(i),
                   "report": serde_json::to_value(r).unwrap_or(Value::Null)})
        })
        .collect();
    json!({"points": points, "reached_the_end": m.complete, "segments": segments,
           "flows": flows, "events": events, "lost_events": o.matched.lost_events,
           "events_dropped": o.matched.lost_events.saturating_sub(o.matched.events.len() as u64)})
}

fn write(mut out: impl Write, o: &Outcome, json: bool) -> anyhow::Result<()> {
    let doc = document(o);
    let text = if json {
        serde_json::to_string_pretty(&doc)? + "\n"
    } else {
        text(o, &doc)
    };
    Ok(out.write_all(text.as_bytes())?)
}

fn text(o: &Outcome, doc: &Value) -> String {
    let mut s = String::from("Capture points (path order from the senders' side)\n");
    for p in doc["points"].as_array().into_iter().flatten() {
        let c = &p["report"]["capture"];
        let bound = match p["clock_offset_bound_us"].as_f64() {
            Some(b) => format!(" ± {b}"),
            None => String::new(),
        };
        let drift = match (
            p["clock_drift_ppm"].as_f64(),
            p["clock_offset_at_end_us"].as_f64(),
        ) {
            (Some(d), Some(end)) => format!(", {end} µs at the end (drift {d:.1} ppm)"),
            _ => String::new(),
        };
        let rejected = match p["offset_rejected"].as_u64() {
            Some(n) if n > 0 => format!(
                ", {n} offset samples left out (their bounds contradicted the others': stamped wrong)"
            ),
            _ => String::new(),
        };
        let late = match p["late"].as_u64() {
            Some(n) if n > 0 => format!(", {n} stamped late (after their packet was judged)"),
            _ => String::new(),
        };
        s += &format!(
            "  {}: {} RoCE frames, clock offset {}{bound} µs ({}){drift}{rejected}, {} missed{late}\n",
            p["file"].as_str().unwrap_or("?"),
            c["roce_frames"],
            p["clock_offset_us"],
            p["offset_from"].as_str().unwrap_or("?"),
            p["missed"]
        );
    }
    s += "Segments\n";
    for g in doc["segments"].as_array().into_iter().flatten() {
        let d = &g["one_way_delay_us"];
        let delay = match (d["min"].as_f64(), d["mean"].as_f64(), d["max"].as_f64()) {
            (Some(min), Some(mean), Some(max)) => format!(
                "one-way delay {min:.1} / {mean:.1} / {max:.1} µs min / mean / max ({} requests)",
                d["samples"]
            ),
            _ => "no request seen at both: no one-way delay".to_string(),
        };
        s += &format!(
            "  {} → {}: {} requests lost, {} responses lost (on their way back); {delay}\n",
            g["from"].as_str().unwrap_or("?"),
            g["to"].as_str().unwrap_or("?"),
            g["lost_forward"],
            g["lost_reverse"],
        );
    }
    for e in doc["events"].as_array().into_iter().flatten().take(20) {
        s += &format!("  {}\n", e["message"].as_str().unwrap_or(""));
    }
    if o.matched.lost_events > 20 {
        s += &format!("  ... {} packets lost in all\n", o.matched.lost_events);
    }
    s
}
