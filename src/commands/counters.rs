//! `rocescope counters`: the RDMA ports' hw_counters and port counters and their netdevs' statistics
//! (sysfs, and ethtool's: per-priority pause frames where the driver has them) as deltas per interval, by
//! the kernel's names; at the end (Ctrl-C, SIGTERM, `-c`) what moved over the whole run.
use std::io::{self, Write};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;

use rocescope::host::Root;
use rocescope::host::counters::{Delta, Deltas, Layout, Snapshot};
use rocescope::host::doctor::NO_RDMA;

use super::fail;

#[derive(Debug, Clone)]
pub struct Config {
    pub device: Option<String>,
    pub interval: Duration,
    /// Stop after this many intervals.
    pub count: Option<u64>,
    pub json: bool,
}

/// One JSON line: an interval's deltas, or the whole run's (`kind` `total`).
#[derive(Serialize)]
struct Line<'a> {
    kind: &'static str,
    /// Seconds since the start.
    time_s: f64,
    /// Seconds the deltas cover.
    interval_s: f64,
    #[serde(flatten)]
    deltas: &'a Deltas,
}

pub fn run(cfg: &Config) -> ExitCode {
    let root = Root::live();
    if !root.is_dir(rocescope::host::rdma::CLASS) {
        eprintln!(
            "rocescope: counters: no RDMA here: no RDMA subsystem in the kernel (/sys/class/infiniband is \
             missing); `rocescope doctor` says why"
        );
        return ExitCode::from(NO_RDMA);
    }
    let layout = match Layout::find(&root, cfg.device.as_deref()) {
        Ok(l) if l.ports.is_empty() => {
            eprintln!(
                "rocescope: counters: no RDMA here: no RDMA device (rdma link add rxe0 type rxe netdev ETH \
                 makes a Soft-RoCE one)"
            );
            return ExitCode::from(NO_RDMA);
        }
        Ok(l) => l,
        Err(e) => return fail(anyhow::Error::from(e).context("counters")),
    };
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        if let Err(e) = signal_hook::flag::register(sig, Arc::clone(&stop)) {
            return fail(anyhow::Error::from(e).context(format!("cannot handle signal {sig}")));
        }
    }
    let first = Snapshot::take(&root, &layout);
    let mut last = first.clone();
    let mut n = 0u64;
    let mut out = io::stdout().lock();
    while !stop.load(Ordering::Relaxed) && cfg.count.is_none_or(|c| n < c) {
        if !sleep(cfg.interval, &stop) {
            break;
        }
        let now = Snapshot::take(&root, &layout);
        if show(&mut out, cfg.json, "interval", &first, &last, &now).is_err() {
            return ExitCode::SUCCESS;
        }
        last = now;
        n += 1;
    }
    let end = Snapshot::take(&root, &layout);
    let _ = show(&mut out, cfg.json, "total", &first, &first, &end);
    ExitCode::SUCCESS
}

/// Sleeps `d` in short steps; false when a signal came meanwhile.
fn sleep(d: Duration, stop: &AtomicBool) -> bool {
    let until = Instant::now() + d;
    while Instant::now() < until {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        std::thread::sleep((until - Instant::now()).min(Duration::from_millis(50)));
    }
    true
}

fn show(
    out: &mut dyn Write,
    json: bool,
    kind: &'static str,
    first: &Snapshot,
    a: &Snapshot,
    b: &Snapshot,
) -> io::Result<()> {
    let deltas = Deltas::between(a, b, false);
    let line = Line {
        kind,
        time_s: b.at.duration_since(first.at).as_secs_f64(),
        interval_s: b.at.duration_since(a.at).as_secs_f64(),
        deltas: &deltas,
    };
    if json {
        serde_json::to_writer(&mut *out, &line).map_err(io::Error::other)?;
        writeln!(out)?;
    } else {
        text(out, &line)?;
    }
    out.flush()
}

fn text(out: &mut dyn Write, l: &Line) -> io::Result<()> {
    let what = if l.kind == "total" {
        "total over"
    } else {
        "interval"
    };
    writeln!(out, "--- {:.2} s ({what} {:.2} s)", l.time_s, l.interval_s)?;
    let fmt = |m: &std::collections::BTreeMap<String, Delta>| -> Vec<String> {
        m.iter().map(|(n, d)| format!("{n} {d}")).collect()
    };
    let mut moved = false;
    for p in &l.deltas.ports {
        let v: Vec<String> = fmt(&p.hw_counters)
            .into_iter()
            .chain(fmt(&p.counters))
            .collect();
        if !v.is_empty() {
            writeln!(out, "{}/{}: {}", p.device, p.port, v.join(", "))?;
            moved = true;
        }
    }
    for n in &l.deltas.netdevs {
        let ethtool = fmt(&n.ethtool).into_iter().map(|s| format!("ethtool {s}"));
        let v: Vec<String> = fmt(&n.statistics).into_iter().chain(ethtool).collect();
        if !v.is_empty() {
            writeln!(out, "{}: {}", n.netdev, v.join(", "))?;
            moved = true;
        }
    }
    if !moved {
        writeln!(out, "nothing moved")?;
    }
    Ok(())
}
