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
use rocescope::mesh::plan::{Pair, rounds};
use rocescope::mesh::verdict::Outcome;
use rocescope::mesh::{Host, parse_hosts};
use rocescope::report::format::error_line;

use super::config::{ConfigError, MeshConfig, WorkConfig};
use super::oob;
use super::records::{Msg, Task};

/// Largest hosts or topology file read.
const MAX_FILE: u64 = 4 << 20;
/// How long past its own deadline a task may take to answer (connecting, the handshake, the summary).
const TASK_SLACK: Duration = Duration::from_secs(120);

pub fn mesh(cfg: &MeshConfig, stop: &AtomicBool) -> anyhow::Result<ExitCode> {
    refuse_flags(&cfg.work)?;
    let hosts = parse_hosts(&read_bounded(&cfg.hosts)?, cfg.tcp_port)
        .with_context(|| cfg.hosts.display().to_string())?;
    let topology = match &cfg.topology {
        Some(p) => {
            Topology::parse(&read_bounded(p)?, &hosts).with_context(|| p.display().to_string())?
        }
        None => Topology::default(),
    };
    let plan = rounds(cfg.pattern, hosts.len(), cfg.per_host)?;
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let mut ran = Vec::new();
    for (round, pairs) in plan.iter().enumerate() {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        eprintln!(
            "gen mesh: round {} of {}: {}",
            round + 1,
            plan.len(),
            pairs
                .iter()
                .map(|p| format!("{}->{}", hosts[p.src], hosts[p.dst]))
                .collect::<Vec<_>>()
                .join(" ")
        );
        let outcomes: Vec<Outcome> = std::thread::scope(|s| {
            let handles: Vec<_> = pairs
                .iter()
                .map(|&p| {
                    let shared = shares_a_host(pairs, p);
                    let (hosts, cfg) = (&hosts, cfg);
                    s.spawn(move || run_pair(cfg, hosts, p, shared))
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
        for (&pair, outcome) in pairs.iter().zip(outcomes) {
            let verdict = cfg.expect.judge(&outcome);
            ran.push(Ran {
                pair,
                round,
                outcome,
                verdict,
            });
        }
    }
    let results: Vec<(Pair, bool)> = ran.iter().map(|r| (r.pair, r.verdict.pass)).collect();
    let located = locate(&hosts, &topology, &results);
    let report = MeshReport::new(
        started,
        cfg.pattern.to_string(),
        &hosts,
        plan.len(),
        ran,
        &located,
    );
    if let Some(p) = &cfg.svg {
        fs::write(p, report.svg()).with_context(|| format!("cannot write {}", p.display()))?;
    }
    if let Some(p) = &cfg.parquet {
        write_parquet(p, &report)?;
    }
    if cfg.work.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.text());
    }
    Ok(if stop.load(Ordering::Relaxed) {
        ExitCode::from(130)
    } else if report.failed > 0 {
        ExitCode::from(3)
    } else {
        ExitCode::SUCCESS
    })
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

/// What a pair's run cannot have (each pair runs as `gen client` runs).
fn refuse_flags(w: &WorkConfig) -> Result<(), ConfigError> {
    let flag = if w.rate.is_some() {
        "--rate"
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
fn run_pair(cfg: &MeshConfig, hosts: &[Host], p: Pair, shared: bool) -> Outcome {
    let (src, dst) = (&hosts[p.src], &hosts[p.dst]);
    let w = &cfg.work;
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
