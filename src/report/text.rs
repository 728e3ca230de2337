//! The text report: capture summary, flows sorted by trouble, PFC, events, verdict.
use std::io::{self, Write};

use super::{FlowReport, Report};

/// Widths of the counter columns of the flow table ([`FlowReport::counters`]).
const COUNTER_WIDTHS: [usize; 10] = [5, 6, 6, 5, 4, 5, 5, 5, 6, 4];

/// Events listed in the text report (all are in the JSON).
pub const EVENTS_SHOWN: usize = 50;

fn lat(l: &Option<super::Latency>) -> String {
    match l {
        Some(l) => format!("{:.1}/{:.1}", l.p50, l.p99),
        None => "-".to_string(),
    }
}

/// The text report: what happened, the capture, the flows, PFC, the events, the verdict.
pub fn write(out: &mut impl Write, r: &Report) -> io::Result<()> {
    let story = super::story::lines(r);
    if !story.is_empty() {
        writeln!(out, "What happened")?;
        for line in &story {
            writeln!(out, "  {line}")?;
        }
        writeln!(out)?;
    }
    capture(out, r)?;
    writeln!(out)?;
    flows(out, r)?;
    if !r.connections.is_empty() {
        writeln!(out)?;
        super::connections::write_text(out, &r.connections)?;
    }
    if !r.pfc.is_empty() || r.link_pause.is_some() {
        writeln!(out)?;
        pauses(out, r)?;
    }
    writeln!(out)?;
    events(out, r)?;
    writeln!(out)?;
    writeln!(out, "Verdict: {}", r.verdict.text)
}

fn capture(out: &mut impl Write, r: &Report) -> io::Result<()> {
    let c = &r.capture;
    writeln!(out, "Capture: {}", c.file)?;
    writeln!(
        out,
        "  {} frames ({} RoCE, {} other) over {:.6} s, {} flows; malformed {}, ICRC bad {}, ICRC unverifiable {}",
        c.frames,
        c.roce_frames,
        c.other_frames,
        c.duration_s,
        r.flow_totals.flows,
        c.malformed,
        c.icrc_bad,
        c.icrc_unverifiable
    )?;
    if c.encapsulated + c.mirror_duplicates > 0 {
        writeln!(
            out,
            "  {} RoCE frames came in a mirror session or tunnel; {} mirror duplicates (second copies, not counted)",
            c.encapsulated, c.mirror_duplicates
        )?;
    }
    match r.config.mtu {
        Some(m) => writeln!(out, "  path MTU {m} ({})", r.config.mtu_source)?,
        None => writeln!(
            out,
            "  path MTU unknown (no full-size segment; --mtu sets it)"
        )?,
    }
    if let Some(why) = &c.truncation {
        writeln!(out, "  WARNING: {why}: analysed up to the cut")?;
    }
    if let Some(s) = &r.capture_stats {
        s.write_text(out)?;
    }
    if let Some(c) = &r.counters {
        c.write_text(out)?;
    }
    Ok(())
}

/// The flow table, most trouble first.
fn flows(out: &mut impl Write, r: &Report) -> io::Result<()> {
    let order = super::rank::by_trouble(&r.flows);
    writeln!(out, "Flows (most trouble first)")?;
    write!(
        out,
        "  {:>4} {:<34} {:>8} {:<9} {:>4} {:>8} {:>11}",
        "id", "source → destination", "QP", "role", "pair", "packets", "bytes",
    )?;
    for (name, width) in FlowReport::COUNTERS.iter().zip(COUNTER_WIDTHS) {
        write!(out, " {name:>width$}")?;
    }
    writeln!(out, " {:>13}", "ack p50/p99µs")?;
    for f in &order {
        let endpoints = format!("{} → {}", f.src, f.dst);
        write!(
            out,
            "  {:>4} {:<34} {:>8} {:<9} {:>4} {:>8} {:>11}",
            f.id,
            endpoints,
            format!("0x{:06x}", f.dest_qp),
            serde_json::to_value(f.role)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            f.paired_with.map_or("-".to_string(), |p| p.to_string()),
            f.packets,
            f.bytes,
        )?;
        for (value, width) in f.counters().iter().zip(COUNTER_WIDTHS) {
            write!(out, " {value:>width$}")?;
        }
        writeln!(out, " {:>13}", lat(&f.latency_us))?;
    }
    if let Some(e) = &r.evicted {
        writeln!(
            out,
            "  {} flows were evicted ({} with trouble; {} packets, {} bytes): idle past --flow-timeout or beyond \
             --max-flows; the flows above are exact",
            e.flows, e.with_trouble, e.packets, e.bytes
        )?;
    }
    if let Some(o) = &r.other_flows {
        let roles: Vec<String> = o
            .by_role
            .iter()
            .map(|(role, s)| format!("{} {role}", s.flows))
            .collect();
        writeln!(
            out,
            "  ... and {} more flows without trouble ({}; {} packets, {} bytes): --report-flows N or \
             --all-flows lists them",
            o.sum.flows,
            roles.join(", "),
            o.sum.packets,
            o.sum.bytes
        )?;
    }
    Ok(())
}

/// PFC per priority and 802.3x PAUSE, and the flows on a paused priority.
fn pauses(out: &mut impl Write, r: &Report) -> io::Result<()> {
    writeln!(
        out,
        "PFC / PAUSE (pause time at {} Gb/s)",
        r.config.link_speed_bps / 1_000_000_000
    )?;
    if let Some(p) = &r.link_pause {
        writeln!(
            out,
            "  802.3x PAUSE (whole link): {} frames ({} XOFF, {} XON), {} quanta = {:.3} µs",
            p.frames, p.xoff, p.xon, p.quanta, p.pause_us
        )?;
    }
    for p in &r.pfc {
        writeln!(
            out,
            "  priority {}: {} frames ({} XOFF, {} XON), {} quanta = {:.3} µs",
            p.priority, p.frames, p.xoff, p.xon, p.quanta, p.pause_us
        )?;
    }
    let paused: Vec<String> = r
        .flows
        .iter()
        .filter(|f| f.paused_priority)
        .map(|f| format!("#{}", f.id))
        .collect();
    if !paused.is_empty() {
        writeln!(out, "  flows on a paused priority: {}", paused.join(" "))?;
    }
    Ok(())
}

/// The first [`EVENTS_SHOWN`] events.
fn events(out: &mut impl Write, r: &Report) -> io::Result<()> {
    let total = r.events.len() as u64 + r.events_dropped;
    writeln!(
        out,
        "Events ({total}{})",
        if total as usize > EVENTS_SHOWN {
            ", first 50 shown; --json has them all"
        } else {
            ""
        }
    )?;
    let start = r.capture.first_time.unwrap_or(0.0);
    for e in r.events.iter().take(EVENTS_SHOWN) {
        let flow = e.flow.and_then(|id| r.flow(id));
        let place = match flow {
            Some(f) => format!("#{} {} → {} QP 0x{:06x}", f.id, f.src, f.dst, f.dest_qp),
            None => "-".to_string(),
        };
        let severity = serde_json::to_value(e.severity)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        writeln!(
            out,
            "  {:<7} {:>12.6}  frame {:<8} {}  {}",
            severity,
            e.time - start,
            e.frame,
            place,
            e.message
        )?;
    }
    Ok(())
}
