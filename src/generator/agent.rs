//! `gen agent`: a host's part in `gen mesh`. It listens on one TCP port for two kinds of connection, told
//! apart by their first message: a requester's Hello (another host's agent, or `gen client`), served as
//! `gen server` serves one, each on a thread of its own and several at once; and a controller's Task, run
//! as `gen client` against the task's peer and answered with the run's Outcome. Anyone who reaches the port
//! can ask for traffic: run agents on a management network, as perftest's servers are.

use std::io::{BufReader, BufWriter};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use rocescope::mesh::verdict::{CaptureCheck, Outcome};
use rocescope::report::format::error_line;

use super::check;
use super::config::{AgentConfig, ClientConfig, PortConfig, WorkConfig};
use super::oob::{self, Invalid};
use super::output::print_server_report;
use super::plan::Rate;
use super::port_counters::{PortReading, link_gbps};
use super::records::{CheckStatus, Hello, Msg, Report, Task};
use super::remote::{self, ServeError};
use super::verbs;

/// Connections served at once at most (each a thread and, for a Hello, QPs and buffers).
const MAX_CONNECTIONS: usize = 64;

/// Until stopped.
pub fn agent(cfg: &AgentConfig, stop: &Arc<AtomicBool>) -> Result<(), ServeError> {
    let s = &cfg.serve;
    // each connection opens its own device list (a thread of its own)
    let (listener, _, dev) = remote::listen(s)?;
    eprintln!(
        "gen agent: {dev} port {}, waiting for gen mesh and peers on {}:{}",
        s.port.ib_port, s.bind, s.tcp_port
    );
    let busy = Arc::new(AtomicUsize::new(0));
    let cfg = Arc::new(cfg.clone());
    while let Some(stream) = remote::accept(&listener, stop)? {
        let _ = stream.set_nonblocking(false);
        if busy.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
            busy.fetch_sub(1, Ordering::SeqCst);
            let mut wr = BufWriter::new(stream);
            let message = format!("gen agent: {MAX_CONNECTIONS} connections already, try again");
            let _ = oob::send(&mut wr, &Msg::Error { message });
            continue;
        }
        let (cfg, dev, stop, busy) = (
            Arc::clone(&cfg),
            dev.clone(),
            Arc::clone(stop),
            Arc::clone(&busy),
        );
        std::thread::spawn(move || {
            connection(&cfg, &dev, stream, &stop);
            busy.fetch_sub(1, Ordering::SeqCst);
        });
    }
    Ok(())
}

/// One connection: its first message says what it is.
fn connection(cfg: &AgentConfig, dev: &str, stream: TcpStream, stop: &AtomicBool) {
    let peer = stream
        .peer_addr()
        .map_or_else(|_| "?".to_string(), |a| a.to_string());
    let _ = stream.set_read_timeout(Some(Duration::from_secs_f64(cfg.serve.timeout)));
    let mut rd = BufReader::new(stream);
    match oob::recv(&mut rd) {
        Ok(Msg::Hello(h)) => serve(cfg, dev, rd, h, &peer, stop),
        Ok(Msg::Task(t)) => {
            eprintln!(
                "gen agent: task from {peer}: {:?} to {}:{}",
                t.op, t.peer, t.peer_port
            );
            let outcome = task(cfg, dev, &t, stop);
            let line = outcome.error.as_deref().map_or_else(
                || format!("{:.3} Gb/s, p99 {:.1} us", outcome.gbps, outcome.p99_us),
                str::to_string,
            );
            eprintln!("gen agent: task to {}: {line}", t.peer);
            if let Ok(s) = rd.into_inner().try_clone() {
                let _ = oob::send(&mut BufWriter::new(s), &Msg::Outcome(outcome));
            }
        }
        Ok(_) => eprintln!("gen agent: {peer} began with neither a hello nor a task"),
        Err(e) => eprintln!("gen agent: {peer}: {}", error_line(&e)),
    }
}

fn serve(
    cfg: &AgentConfig,
    dev: &str,
    rd: BufReader<TcpStream>,
    h: Hello,
    peer: &str,
    stop: &AtomicBool,
) {
    match verbs::devices() {
        Ok(list) => {
            let r = remote::serve_connection(&cfg.serve, &list, dev, rd, Some(h), peer, stop);
            print_server_report(&r, cfg.serve.json);
        }
        Err(e) => eprintln!("gen agent: {peer}: {}", error_line(&e)),
    }
}

/// The requester's run a task asks for, with this port's counters around it.
fn task(cfg: &AgentConfig, dev: &str, t: &Task, stop: &AtomicBool) -> Outcome {
    let port = cfg.serve.port.ib_port;
    let mut outcome = match t.validate() {
        Err(e) => failed(format!("gen agent: {e}")),
        Ok(()) => {
            let reading = PortReading::start(dev, port);
            let client = ClientConfig {
                host: t.peer.clone(),
                device: Some(dev.to_string()),
                tcp_port: t.peer_port,
                connect_timeout: cfg.connect_timeout,
                port: PortConfig {
                    ib_port: port,
                    gid_index: cfg.serve.port.gid_index,
                },
                work: t.work(),
            };
            let mut o = match &cfg.capture {
                Some(iface) => captured(iface, &client, stop),
                None => match remote::client(&client, stop) {
                    Ok(r) => outcome_of(&r),
                    Err(e) => failed(error_line(&e)),
                },
            };
            o.requester_counters = reading.map(|r| r.moved()).unwrap_or_default();
            o
        }
    };
    outcome.link_gbps = link_gbps(dev, port);
    outcome.completion_timestamps = verbs::completion_timestamps(dev);
    outcome.shared = t.shared;
    outcome
}

fn failed(message: String) -> Outcome {
    Outcome {
        error: Some(message),
        ..Outcome::default()
    }
}

/// The task's run under the fabric check on `iface` (started before the run, as `gen client --capture`).
fn captured(iface: &str, client: &ClientConfig, stop: &AtomicBool) -> Outcome {
    let running = match check::start(iface, client.work.mtu) {
        Ok(r) => r,
        Err(e) => return failed(format!("gen agent --capture {iface}: {}", error_line(&e))),
    };
    let report = match remote::client(client, stop) {
        Ok(r) => r,
        Err(e) => {
            running.abort();
            return failed(error_line(&e));
        }
    };
    let mut o = outcome_of(&report);
    match running.finish(Duration::from_secs_f64(client.work.capture_grace)) {
        Ok(c) => {
            let v = check::verify(&report, &c);
            o.capture = Some(CaptureCheck {
                interface: iface.to_string(),
                pass: v.status == check::Verdict::Pass,
                reasons: v.reasons,
                gap_events: v.gap_events,
                retransmitted: v.retransmitted,
                naks: v.naks,
                ce: v.ce,
                cnp: v.cnp,
                capture_dropped: v.capture_dropped,
            });
        }
        Err(e) => o.error = Some(format!("gen agent --capture {iface}: {}", error_line(&e))),
    }
    o
}

fn outcome_of(r: &Report) -> Outcome {
    let status = |s: CheckStatus| match s {
        CheckStatus::Passed => "passed",
        CheckStatus::Failed => "failed",
        CheckStatus::Incomplete => "incomplete",
    };
    Outcome {
        error: r.error.clone(),
        messages: r.messages,
        bytes: r.bytes,
        seconds: r.seconds,
        gbps: r.gbps,
        p50_us: r.latency_us.p50,
        p99_us: r.latency_us.p99,
        max_us: r.latency_us.max,
        completion_errors: r.completion_errors,
        data_check: status(r.data_check.status).to_string(),
        responder_counters: r
            .server
            .as_ref()
            .map(|s| s.counters.clone())
            .unwrap_or_default(),
        ..Outcome::default()
    }
}

impl Task {
    /// The checks of a Hello (sizes, QPs, depth, what the peer registers) and of the rest.
    pub fn validate(&self) -> Result<(), Invalid> {
        let w = self.work();
        Hello {
            version: self.version,
            op: self.op,
            size: w.message_size(),
            qps: self.qps,
            depth: self.depth,
            slots: oob::slots_for(self.op, w.message_size(), self.depth, w.iters_limit()),
            iters: w.iters_limit(),
        }
        .validate()?;
        let duration_ok = self.duration.is_none_or(|d| d > 0.0 && d <= 86400.0);
        let iters_ok =
            self.duration.is_some() || self.iters.is_some_and(|n| (1..=1 << 40).contains(&n));
        let peer_ok = !self.peer.is_empty() && self.peer.len() <= 255;
        let timeout_ok = self.timeout > 0.0 && self.timeout <= 3600.0;
        let qp_ok =
            (1..=31).contains(&self.qp_timeout) && self.retry_count <= 7 && self.rnr_retry <= 7;
        let mtu_ok = self.mtu.is_none_or(|m| oob::MTUS.contains(&m));
        let rate_ok = self.rate.is_none_or(|r| r > 0.0 && r <= 1e6);
        if !(duration_ok
            && rate_ok
            && iters_ok
            && peer_ok
            && timeout_ok
            && qp_ok
            && mtu_ok
            && self.peer_port > 0)
        {
            return Err(Invalid::Task);
        }
        Ok(())
    }

    pub fn work(&self) -> WorkConfig {
        WorkConfig {
            op: self.op,
            size: self.size,
            iters: self.iters.unwrap_or(WorkConfig::DEFAULT.iters),
            duration: self.duration,
            qps: self.qps,
            depth: self.depth,
            mtu: self.mtu,
            tclass: self.tclass,
            qp_timeout: self.qp_timeout,
            retry_count: self.retry_count,
            rnr_retry: self.rnr_retry,
            timeout: self.timeout,
            rate: self.rate.map(Rate::MessagesPerSec),
            ..WorkConfig::DEFAULT
        }
    }
}
