//! The text report: capture summary, flows sorted by trouble, PFC, events, verdict.
use std::io::{self, Write};

use super::{FlowReport, Report, format};

/// Host pairs the ECMP section shows (the JSON has them all).
const ECMP_PAIRS_SHOWN: usize = 8;

/// Widths of the counter columns of the flow table ([`FlowReport::counters`]).
const COUNTER_WIDTHS: [usize; 10] = [5, 6, 6, 5, 4, 5, 5, 5, 6, 4];

/// Events listed in the text report (all are in the JSON).
pub const EVENTS_SHOWN: usize = 50;

/// A flow's latency, p50/p99 in adaptive units: request → ACK, or for READs request → first response.
fn lat(f: &FlowReport) -> String {
    let us = |v: f64| format::duration(v * 1e-6);
    match f.latency_us.as_ref().or(f.read_latency_us.as_ref()) {
        Some(l) => format!("{}/{}", us(l.p50), us(l.p99)),
        None => "-".to_string(),
    }
}

/// What the flow table's short headers mean.
pub const LEGEND: &str = "state: what the flow came to (ok, congested, lossy, misconnected, violation, stalled, \
     gave_up, no_response); pair: the flow of the other direction; rate: bits/s over the flow's life; gaps: PSN \
     gaps; miss: PSNs never seen; retx: retransmitted requests; dup: duplicates; epis: go-back-N episodes; NAK, \
     RNR: NAKs, RNR NAKs; CNP: CNPs; CE: ECN CE marks; ICRC: bad ICRCs; latency: request → ACK (READ: → first \
     response), p50/p99";

/// The text report: what happened, the capture, the flows, PFC, the events, the verdict.
pub fn write(out: &mut impl Write, r: &Report, top: Option<usize>) -> io::Result<()> {
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
    flows(out, r, top)?;
    if !r.connections.is_empty() {
        writeln!(out)?;
        super::connections::write_text(out, &r.connections)?;
    }
    if let Some(j) = &r.job {
        writeln!(out)?;
        super::jobs::write_text(out, j, &r.flows)?;
    }
    if !r.pfc.is_empty() || r.link_pause.is_some() {
        writeln!(out)?;
        pauses(out, r)?;
    }
    if r.flows
        .iter()
        .any(|f| f.cnp_reaction.is_some() || f.cnp_interval_us.is_some())
    {
        writeln!(out)?;
        reactions(out, r)?;
    }
    if !r.priorities.is_empty() {
        writeln!(out)?;
        throughput(out, r)?;
    }
    let held = super::life::lines(r);
    if !held.is_empty() {
        writeln!(out)?;
        writeln!(
            out,
            "Where the time went (the largest share of each requester's life):"
        )?;
        for l in held {
            writeln!(out, "  {l}")?;
        }
    }
    let spread = super::ecmp::lines(&r.ecmp, ECMP_PAIRS_SHOWN);
    if !spread.is_empty() {
        writeln!(out)?;
        writeln!(
            out,
            "ECMP spread ({}-way group, by UDP source port; --ecmp-members):",
            r.ecmp.members
        )?;
        for l in spread {
            writeln!(out, "  {l}")?;
        }
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
    if c.clock_jumps > 0 {
        writeln!(
            out,
            "  WARNING: the capture's clock jumped {} times (clock_jump events below): those frames' stamps \
             were not taken for timing",
            c.clock_jumps
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

/// The flow table, most trouble first (the first `top` of them, when given), and its legend.
fn flows(out: &mut impl Write, r: &Report, top: Option<usize>) -> io::Result<()> {
    let order = super::rank::order(r);
    let shown = top.unwrap_or(usize::MAX).min(order.len());
    writeln!(out, "Flows (most trouble first)")?;
    write!(
        out,
        "  {:>4} {:<34} {:>8} {:<9} {:<12} {:>4} {:>8} {:>11} {:>9}",
        "id", "source → destination", "QP", "role", "state", "pair", "packets", "bytes", "rate",
    )?;
    for (name, width) in FlowReport::COUNTERS.iter().zip(COUNTER_WIDTHS) {
        write!(out, " {name:>width$}")?;
    }
    writeln!(out, " {:>17}", "latency p50/p99")?;
    for f in order[..shown].iter().map(|&i| &r.flows[i]) {
        let endpoints = format!("{} → {}", f.src, f.dst);
        write!(
            out,
            "  {:>4} {:<34} {:>8} {:<9} {:<12} {:>4} {:>8} {:>11} {:>9}",
            f.id,
            endpoints,
            format!("0x{:06x}", f.dest_qp),
            serde_json::to_value(f.role)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            f.state.name(),
            f.paired_with.map_or("-".to_string(), |p| p.to_string()),
            f.packets,
            f.bytes,
            format::bit_rate(super::rank::throughput(f)),
        )?;
        for (value, width) in f.counters().iter().zip(COUNTER_WIDTHS) {
            write!(out, " {value:>width$}")?;
        }
        writeln!(out, " {:>17}", lat(f))?;
    }
    if shown < order.len() {
        writeln!(
            out,
            "  ... and {} more (a larger --top shows them; --json lists them)",
            order.len() - shown
        )?;
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
    legend(out)
}

/// [`LEGEND`], wrapped at 110 columns.
fn legend(out: &mut impl Write) -> io::Result<()> {
    let mut line = String::from("  Legend:");
    for word in LEGEND.split(' ') {
        if line.chars().count() + 1 + word.chars().count() > 110 {
            writeln!(out, "{line}")?;
            line = String::from("   ");
        }
        line.push(' ');
        line.push_str(word);
    }
    writeln!(out, "{line}")
}

/// PFC per priority and 802.3x PAUSE, and the flows on a paused priority.
fn pauses(out: &mut impl Write, r: &Report) -> io::Result<()> {
    writeln!(
        out,
        "PFC / PAUSE (pause time at {} Gb/s)",
        r.config.link_speed_bps / 1_000_000_000
    )?;
    if let Some(p) = &r.link_pause {
        writeln!(out, "  802.3x PAUSE (whole link): {}", pause_line(p))?;
    }
    for p in &r.pfc {
        writeln!(out, "  priority {}: {}", p.priority, pause_line(p))?;
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

/// The CNPs' side of each flow: what its sender did after them, how often its destination sent them.
fn reactions(out: &mut impl Write, r: &Report) -> io::Result<()> {
    writeln!(
        out,
        "CNPs and rates (rate windows of {} µs)",
        r.config.rate_window_us
    )?;
    let pct = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{:.0}%", x * 100.0));
    let us = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{x:.1} µs"));
    for f in &r.flows {
        let place = format!("#{} {} → {} QP 0x{:06x}", f.id, f.src, f.dst, f.dest_qp);
        if let Some(c) = &f.cnp_reaction {
            writeln!(
                out,
                "  {place}: {} CNPs reached its sender, {} measured: rate cut by {} (median), {} at least, \
                 {} to the cut ({} at most); {} with no visible cut",
                c.cnps,
                c.measured,
                pct(c.median_reduction),
                pct(c.worst_reduction),
                us(c.mean_time_to_reduction_us),
                us(c.max_time_to_reduction_us),
                c.no_reduction
            )?;
        }
        if let Some(i) = &f.cnp_interval_us {
            writeln!(
                out,
                "  {place}: CNPs every {:.1} µs on average ({:.1} at least, {:.1} at most)",
                i.mean, i.min, i.max
            )?;
        }
    }
    Ok(())
}

/// Traffic per priority at the link's speed.
fn throughput(out: &mut impl Write, r: &Report) -> io::Result<()> {
    let link = r.config.link_speed_bps as f64 / 1e9;
    writeln!(out, "Throughput by priority (of {link} Gb/s)")?;
    for p in &r.priorities {
        let name = p
            .priority
            .map_or("no known priority".to_string(), |p| format!("priority {p}"));
        let gbps = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{x:.3} Gb/s"));
        writeln!(
            out,
            "  {name}: {} flows, {} bytes, {} ({:.2}% of the link), goodput {}",
            p.flows,
            p.bytes,
            gbps(p.gbps),
            p.link_share.unwrap_or(0.0) * 100.0,
            gbps(p.goodput_gbps)
        )?;
    }
    Ok(())
}

/// One priority's frames, quanta and the time its pause was in effect.
fn pause_line(p: &super::PriorityReport) -> String {
    format!(
        "{} frames ({} XOFF, {} XON), {} quanta; paused {:.3} µs ({:.1}% of the capture), longest {:.3} µs",
        p.frames,
        p.xoff,
        p.xon,
        p.quanta,
        p.pause_us,
        p.paused_fraction * 100.0,
        p.longest_pause_us
    )
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
