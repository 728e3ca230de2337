//! `gen mesh --hosts FILE`: the controller. It plans the pattern's rounds, asks each pair's requester agent
//! for the run (a Task; the agent answers with the Outcome), a round's pairs at the same time and the rounds
//! one after the other, then judges every pair, locates the suspects and writes the map.

use std::fs;
use std::io::{BufReader, BufWriter, Read};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use rocescope::mesh::locate::{Topology, locate};
use rocescope::mesh::map::{MeshReport, Ran};
use rocescope::mesh::plan::{Pair, probe_round, rounds};
use rocescope::mesh::verdict::{Expect, Outcome};
use rocescope::mesh::{Host, parse_hosts};
use rocescope::report::format::error_line;

use super::config::{ConfigError, MeshConfig, Probe, WorkConfig};
use super::oob;
use super::plan::Rate;
use super::records::{Msg, Op, Task};

/// Largest hosts or topology file read.
const MAX_FILE: u64 = 4 << 20;
/// How long past its own deadline a task may take to answer (connecting, the handshake, the summary).
const TASK_SLACK: Duration = Duration::from_secs(120);

pub fn mesh(cfg: &MeshConfig, stop: &AtomicBool) -> anyhow::Result<ExitCode> {
    refuse_flags(&cfg.work, cfg.probe.is_some())?;
    let hosts = parse_hosts(&read_bounded(&cfg.hosts)?, cfg.tcp_port)
        .with_context(|| cfg.hosts.display().to_string())?;
    let topology = match &cfg.topology {
        Some(p) => {
            Topology::parse(&read_bounded(p)?, &hosts).with_context(|| p.display().to_string())?
        }
        None => Topology::default(),
    };
    if let Some(probe) = &cfg.probe {
        return probes(cfg, probe, &hosts, &topology, stop);
    }
    let plan = rounds(cfg.pattern, hosts.len(), cfg.per_host)?;
    let started = now();
    let mut ran = Vec::new();
    for (round, pairs) in plan.iter().enumerate() {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        eprintln!(
            "gen mesh: round {} of {}: {}",
            round + 1,
            plan.len(),
            names(&hosts, pairs)
        );
        ran.extend(run_round(cfg, &cfg.work, cfg.expect, &hosts, pairs, round));
    }
    let report = judged(
        started,
        cfg.pattern.to_string(),
        &hosts,
        &topology,
        plan.len(),
        ran,
        None,
    );
    write_report(cfg, &report)?;
    Ok(exit_status(&report, stop))
}

/// `--probe`: window after window, each host probing `--probe-targets` others at once with 64-byte WRITEs,
/// one at a time, at `--probe-rate` a second; each window judged and located as a round of its own, and
/// written as it ends (one JSON document per line with --json).
fn probes(
    cfg: &MeshConfig,
    probe: &Probe,
    hosts: &[Host],
    topology: &Topology,
    stop: &AtomicBool,
) -> anyhow::Result<ExitCode> {
    let work = WorkConfig {
        op: Op::Write,
        size: 64,
        qps: 1,
        depth: 1,
        duration: Some(probe.window),
        rate: Some(Rate::MessagesPerSec(probe.rate)),
        mtu: cfg.work.mtu,
        tclass: cfg.work.tclass,
        qp_timeout: cfg.work.qp_timeout,
        retry_count: cfg.work.retry_count,
        rnr_retry: cfg.work.rnr_retry,
        timeout: cfg.work.timeout,
        ..WorkConfig::DEFAULT
    };
    // A window at the probe rate holds window × rate probes (one at a time per pair): fewer than half
    // completed is a path that lost some (each loss holds the QP until its timer).
    let expect = Expect {
        min_messages: Some((probe.window * probe.rate / 2.0).floor() as u64),
        ..cfg.expect
    };
    let mut failed_any = false;
    let mut window = 0u64;
    while (probe.windows == 0 || window < probe.windows) && !stop.load(Ordering::Relaxed) {
        let pairs = probe_round(hosts.len(), probe.targets, window);
        let started = now();
        let ran = run_round(cfg, &work, expect, hosts, &pairs, 0);
        let report = judged(
            started,
            "probe".into(),
            hosts,
            topology,
            1,
            ran,
            Some(window),
        );
        failed_any |= report.failed > 0;
        if cfg.work.json {
            println!("{}", serde_json::to_string(&report)?);
        } else {
            print!("{}", report.text());
        }
        if let Some(p) = &cfg.parquet {
            let file = p.with_file_name(format!(
                "{}.{window}.parquet",
                p.file_stem().map_or("mesh".into(), |s| s.to_string_lossy())
            ));
            write_parquet(&file, &report)?;
        }
        window += 1;
    }
    Ok(if stop.load(Ordering::Relaxed) {
        ExitCode::from(130)
    } else if failed_any {
        ExitCode::from(3)
    } else {
        ExitCode::SUCCESS
    })
}

fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

fn names(hosts: &[Host], pairs: &[Pair]) -> String {
    pairs
        .iter()
        .map(|p| format!("{}->{}", hosts[p.src], hosts[p.dst]))
        .collect::<Vec<_>>()
        .join(" ")
}

/// One round's pairs at the same time, each judged.
fn run_round(
    cfg: &MeshConfig,
    work: &WorkConfig,
    expect: Expect,
    hosts: &[Host],
    pairs: &[Pair],
    round: usize,
) -> Vec<Ran> {
    let outcomes: Vec<Outcome> = std::thread::scope(|s| {
        let handles: Vec<_> = pairs
            .iter()
            .map(|&p| {
                let shared = shares_a_host(pairs, p);
                s.spawn(move || run_pair(cfg, work, hosts, p, shared))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| failed("the pair's thread panicked".into()))
            })
            .collect()
    });
    pairs
        .iter()
        .zip(outcomes)
        .map(|(&pair, outcome)| Ran {
            pair,
            round,
            verdict: expect.judge(&outcome),
            outcome,
        })
        .collect()
}

fn judged(
    started: f64,
    pattern: String,
    hosts: &[Host],
    topology: &Topology,
    rounds: usize,
    ran: Vec<Ran>,
    window: Option<u64>,
) -> MeshReport {
    let results: Vec<(Pair, bool)> = ran.iter().map(|r| (r.pair, r.verdict.pass)).collect();
    let located = locate(hosts, topology, &results);
    let mut report = MeshReport::new(started, pattern, hosts, rounds, ran, &located);
    report.window = window;
    report
}

fn write_report(cfg: &MeshConfig, report: &MeshReport) -> anyhow::Result<()> {
    if let Some(p) = &cfg.svg {
        fs::write(p, report.svg()).with_context(|| format!("cannot write {}", p.display()))?;
    }
    if let Some(p) = &cfg.parquet {
        write_parquet(p, report)?;
    }
    if cfg.work.json {
        println!("{}", serde_json::to_string_pretty(report)?);
    } else {
        print!("{}", report.text());
    }
    Ok(())
}

fn exit_status(report: &MeshReport, stop: &AtomicBool) -> ExitCode {
    if stop.load(Ordering::Relaxed) {
        ExitCode::from(130)
    } else if report.failed > 0 {
        ExitCode::from(3)
    } else {
        ExitCode::SUCCESS
    }
}

#[cfg(feature = "export")]
fn write_parquet(p: &Path, report: &MeshReport) -> anyhow::Result<()> {
    rocescope::export::write_mesh(p, &report.rows())
        .map(|_| ())
        .with_context(|| format!("--parquet {}", p.display()))
}

#[cfg(not(feature = "export"))]
fn write_parquet(_: &Path, _: &MeshReport) -> anyhow::Result<()> {
    anyhow::bail!("--parquet: this rocescope was built without Parquet (the export feature)")
}

/// What a pair's run cannot have (each pair runs as `gen client` runs; a probe's rate is --probe-rate).
fn refuse_flags(w: &WorkConfig, probe: bool) -> Result<(), ConfigError> {
    let flag = if w.rate.is_some() && probe {
        "--rate (with --probe: --probe-rate)"
    } else if w.fault.is_some() {
        "--fault"
    } else if w.capture.is_some() {
        "--capture"
    } else if w.source_ports.is_some() {
        "--source-port"
    } else {
        return w.buffer_len(u64::from(w.depth)).map(|_| ());
    };
    Err(ConfigError::NotInMesh { flag })
}

fn read_bounded(p: &Path) -> anyhow::Result<String> {
    let f = fs::File::open(p).with_context(|| format!("cannot open {}", p.display()))?;
    let mut text = String::new();
    f.take(MAX_FILE + 1)
        .read_to_string(&mut text)
        .with_context(|| format!("cannot read {} (text expected)", p.display()))?;
    anyhow::ensure!(
        text.len() as u64 <= MAX_FILE,
        "{}: larger than {MAX_FILE} bytes",
        p.display()
    );
    Ok(text)
}

/// Does either host of `p` take part in another pair of the round?
fn shares_a_host(round: &[Pair], p: Pair) -> bool {
    round
        .iter()
        .filter(|q| [q.src, q.dst].iter().any(|h| *h == p.src || *h == p.dst))
        .count()
        > 1
}

fn failed(message: String) -> Outcome {
    Outcome {
        error: Some(message),
        ..Outcome::default()
    }
}

/// One pair: the task to the requester's agent, its outcome (an unreachable or silent agent is the pair's
/// error).
fn run_pair(cfg: &MeshConfig, w: &WorkConfig, hosts: &[Host], p: Pair, shared: bool) -> Outcome {
    let (src, dst) = (&hosts[p.src], &hosts[p.dst]);
    let task = Task {
        version: oob::VERSION,
        peer: dst.address.clone(),
        peer_port: dst.port,
        op: w.op,
        size: w.size,
        qps: w.qps,
        depth: w.depth,
        iters: w.iters_limit(),
        duration: w.duration,
        mtu: w.mtu,
        tclass: w.tclass,
        qp_timeout: w.qp_timeout,
        retry_count: w.retry_count,
        rnr_retry: w.rnr_retry,
        timeout: w.timeout,
        rate: w.rate.map(|r| r.messages_per_sec(w.message_size())),
        shared,
    };
    let patience = Duration::from_secs_f64(w.duration.unwrap_or(0.0) + w.timeout) + TASK_SLACK;
    match ask(src, &task, cfg.connect_timeout, patience) {
        Ok(o) => o,
        Err(e) => failed(format!("agent {src} ({}:{}): {e:#}", src.address, src.port)),
    }
}

fn ask(
    agent: &Host,
    task: &Task,
    connect_timeout: f64,
    patience: Duration,
) -> anyhow::Result<Outcome> {
    let stream = connect(agent, Duration::from_secs_f64(connect_timeout))?;
    stream.set_read_timeout(Some(patience))?;
    let _ = stream.set_nodelay(true);
    oob::send(
        &mut BufWriter::new(stream.try_clone()?),
        &Msg::Task(task.clone()),
    )?;
    let outcome = oob::expect(&mut BufReader::new(stream), "outcome", |m| match m {
        Msg::Outcome(o) => Some(o),
        _ => None,
    })
    .map_err(|e| anyhow::anyhow!(error_line(&e)))?;
    Ok(outcome)
}

fn connect(agent: &Host, patience: Duration) -> anyhow::Result<TcpStream> {
    let t0 = Instant::now();
    loop {
        let mut last = None;
        for a in (agent.address.as_str(), agent.port)
            .to_socket_addrs()
            .with_context(|| format!("cannot resolve '{}'", agent.address))?
        {
            match TcpStream::connect_timeout(&a, Duration::from_secs(2)) {
                Ok(s) => return Ok(s),
                Err(e) => last = Some(e),
            }
        }
        if t0.elapsed() >= patience {
            anyhow::bail!(
                "unreachable ({}): start `rocescope gen agent` there",
                last.map_or("no address".to_string(), |e| e.to_string())
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}
