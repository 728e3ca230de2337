//! The job's logs in the report (`--expect` NCCL and UCX logs): each flow's owner (a flow's `job`), the
//! processes the logs name, and each failure they tell with the flows it is about (docs/json.md `job`).
use std::io::{self, Write};

use serde::Serialize;

use crate::analysis::Engine;
use crate::analysis::flow::Flow;
use crate::analysis::jobs::{Jobs, Way};
use crate::source::joblog::{Failure, Library, Qp, Side, WC_STATUS};

/// Whose QP a flow leaves or reaches, as the logs tell it.
#[derive(Debug, Serialize)]
pub struct FlowJob {
    pub library: Library,
    /// The log that names the QP, and the line.
    pub log: String,
    pub line: u32,
    /// The process that logged the QP.
    pub host: String,
    pub pid: u32,
    pub rank: Option<u32>,
    /// The rank at the other end of its connection, and NCCL's channel.
    pub peer_rank: Option<u32>,
    pub channel: Option<u32>,
    /// The HCA and port of the QP.
    pub device: Option<String>,
    pub port: Option<u8>,
    /// The logged QP, its side (`send`: the requester, `receive`: NCCL's receiving side) and the QP it is
    /// connected to.
    pub qpn: u32,
    pub side: Side,
    pub remote_qpn: Option<u32>,
    /// The path MTU its line gave (bytes).
    pub mtu: Option<u32>,
    /// `from`: the flow leaves the logged QP; `to`: it reaches it.
    pub way: Way,
}

impl FlowJob {
    /// `NCCL rank 0 → rank 1 channel 0 (rxe0:1): data`, as the story and the TUI say it.
    pub fn label(&self) -> String {
        let who = match self.rank {
            Some(r) => format!("rank {r}"),
            None => format!("{} pid {}", self.host, self.pid),
        };
        let peer = self
            .peer_rank
            .map_or("its peer".to_string(), |r| format!("rank {r}"));
        // The sending side's requests leave it; what reaches it answers them.
        let (from, to, what) = match (self.side, self.way) {
            (Side::Send, Way::From) => (who, peer, "data"),
            (Side::Send, Way::To) => (who, peer, "ACKs and CTS"),
            (Side::Receive, _) => (peer, who, "data"),
        };
        let mut s = format!("{} {from} → {to}", self.library.name());
        if let Some(c) = self.channel {
            s.push_str(&format!(" channel {c}"));
        }
        if let Some(d) = &self.device {
            s.push_str(&format!(" ({d}:{})", self.port.unwrap_or(1)));
        }
        format!("{s}: {what}")
    }
}

/// Flow `f`'s owner in the job's logs.
pub fn of_flow(engine: &Engine, f: &Flow) -> Option<FlowJob> {
    let jobs = engine.jobs.as_ref()?;
    let owner = jobs.owners[f.job?.owner as usize];
    let q = &jobs.log.qps[owner.qp as usize];
    let p = &jobs.log.processes[q.process as usize];
    Some(FlowJob {
        library: p.library,
        log: jobs
            .log
            .files
            .get(usize::from(p.file))
            .cloned()
            .unwrap_or_default(),
        line: q.line,
        host: p.host.clone(),
        pid: p.pid,
        rank: p.rank,
        peer_rank: q.peer_rank,
        channel: q.channel,
        device: q.device.clone(),
        port: q.port,
        qpn: q.qpn,
        side: q.side,
        remote_qpn: q.remote_qpn,
        mtu: q.mtu,
        way: owner.way,
    })
}

/// The logs' processes and failures.
#[derive(Debug, Serialize)]
pub struct JobReport {
    pub processes: Vec<ProcessReport>,
    pub failures: Vec<FailureReport>,
}

#[derive(Debug, Serialize)]
pub struct ProcessReport {
    pub library: Library,
    pub log: String,
    pub host: String,
    pub pid: u32,
    pub version: Option<String>,
    pub rank: Option<u32>,
    pub nranks: Option<u32>,
    /// The out-of-band (bootstrap) address.
    pub oob: Option<String>,
    /// `rxe0:1/RoCE`.
    pub devices: Vec<String>,
    pub traffic_class: Option<u8>,
    pub fifo_traffic_class: Option<u8>,
    pub service_level: Option<u8>,
    pub gid_index: Option<u32>,
    pub timeout: Option<u8>,
    pub retry_count: Option<u8>,
    /// The QPs it logged.
    pub qps: usize,
}

#[derive(Debug, Serialize)]
pub struct FailureReport {
    pub library: Library,
    pub log: String,
    pub line: u32,
    pub host: String,
    pub pid: u32,
    pub rank: Option<u32>,
    pub text: String,
    /// The `ibv_wc_status`, its name and its words.
    pub status: Option<u32>,
    pub status_name: Option<&'static str>,
    pub status_text: Option<&'static str>,
    pub vendor_err: Option<u32>,
    pub device: Option<String>,
    pub qpn: Option<u32>,
    pub remote_qpn: Option<u32>,
    /// The flows it is about (the failing QP's both directions), and how they were found: `qpn` (the QP
    /// the lines name), `gids` (the two hosts' GIDs the line names), `peer` (the peer's bootstrap address:
    /// the process's connections to that rank).
    pub flows: Vec<u64>,
    pub matched_by: Option<&'static str>,
}

impl FailureReport {
    /// `NCCL on node0 (rank 0), node0.log:57`.
    pub fn who(&self) -> String {
        let rank = self.rank.map_or(String::new(), |r| format!(", rank {r}"));
        format!(
            "{} on {} (pid {}{rank}), {}:{}",
            self.library.name(),
            self.host,
            self.pid,
            self.log,
            self.line
        )
    }

    /// `IBV_WC_RETRY_EXC_ERR (transport retry counter exceeded)`, or the log's own words.
    pub fn what(&self) -> String {
        match (self.status_name, self.status_text) {
            (Some(n), Some(t)) => format!("{n} ({t})"),
            _ => self.text.clone(),
        }
    }
}

/// The job section of the report, when `--expect` gave NCCL or UCX logs.
pub fn build(engine: &Engine) -> Option<JobReport> {
    let jobs = engine.jobs.as_ref()?;
    let log = &jobs.log;
    let file = |i: u16| log.files.get(usize::from(i)).cloned().unwrap_or_default();
    let processes = log
        .processes
        .iter()
        .enumerate()
        .map(|(i, p)| ProcessReport {
            library: p.library,
            log: file(p.file),
            host: p.host.clone(),
            pid: p.pid,
            version: p.version.clone(),
            rank: p.rank,
            nranks: p.nranks,
            oob: p.oob.map(|a| a.to_string()),
            devices: p
                .devices
                .iter()
                .map(|d| format!("{}:{}/{}", d.name, d.port, d.link))
                .collect(),
            traffic_class: p.settings.traffic_class,
            fifo_traffic_class: p.settings.fifo_traffic_class,
            service_level: p.settings.service_level,
            gid_index: p.settings.gid_index,
            timeout: p.settings.timeout,
            retry_count: p.settings.retry_count,
            qps: log.qps.iter().filter(|q| q.process == i as u32).count(),
        })
        .collect();
    let failures = log
        .failures
        .iter()
        .map(|f| {
            let p = &log.processes[f.process as usize];
            let (flows, matched_by) = flows_of(engine, jobs, f);
            let status = f.status.and_then(|s| WC_STATUS.get(s as usize));
            FailureReport {
                library: p.library,
                log: file(p.file),
                line: f.line,
                host: p.host.clone(),
                pid: p.pid,
                rank: p.rank,
                text: f.text.clone(),
                status: f.status,
                status_name: status.map(|s| s.0),
                status_text: status.map(|s| s.1),
                vendor_err: f.vendor_err,
                device: f.device.clone(),
                qpn: f.qpn,
                remote_qpn: f.remote_qpn,
                flows,
                matched_by,
            }
        })
        .collect();
    Some(JobReport {
        processes,
        failures,
    })
}

/// The flows failure `f` is about: its QP's two directions (by the QP its lines name, or the one it is
/// connected to), else the flows between the two GIDs the line names (of the process's logged QPs when it
/// logged some there), else the process's connections to the rank whose bootstrap address is the peer.
fn flows_of(engine: &Engine, jobs: &Jobs, f: &Failure) -> (Vec<u64>, Option<&'static str>) {
    let log = &jobs.log;
    let owned_by =
        |flow: &Flow, pick: &dyn Fn(&Qp) -> bool| flow.job.is_some_and(|j| pick(jobs.qp(j.owner)));
    let by_qpn = |flow: &Flow| {
        let k = flow.key;
        owned_by(flow, &|q| q.process == f.process && Some(q.qpn) == f.qpn)
            || (f.qpn == Some(k.dest_qp) && f.local_gid == Some(k.dst))
            || (f.remote_qpn == Some(k.dest_qp) && f.remote_gid == Some(k.dst))
    };
    let found = with_pairs(engine, by_qpn);
    if !found.is_empty() {
        return (found, Some("qpn"));
    }
    if let (Some(l), Some(r)) = (f.local_gid, f.remote_gid) {
        let between = |flow: &Flow| {
            let k = flow.key;
            flow.reliable && ((k.src, k.dst) == (l, r) || (k.src, k.dst) == (r, l))
        };
        let mine = |flow: &Flow| between(flow) && owned_by(flow, &|q| q.process == f.process);
        let found = with_pairs(engine, mine);
        let found = if found.is_empty() {
            with_pairs(engine, between)
        } else {
            found
        };
        if !found.is_empty() {
            return (found, Some("gids"));
        }
    }
    let peer_rank = f.peer.and_then(|peer| {
        let mut ranks = log
            .processes
            .iter()
            .filter(|p| p.library == Library::Nccl && p.oob == Some(peer))
            .filter_map(|p| p.rank);
        let r = ranks.next()?;
        ranks.next().is_none().then_some(r)
    });
    if let Some(rank) = peer_rank {
        let to_peer = |flow: &Flow| {
            owned_by(flow, &|q| {
                q.process == f.process && q.peer_rank == Some(rank)
            })
        };
        let found = with_pairs(engine, to_peer);
        if !found.is_empty() {
            return (found, Some("peer"));
        }
    }
    (Vec::new(), None)
}

/// The numbers of the live flows `pick` takes and of the flows paired with them, in order.
fn with_pairs(engine: &Engine, pick: impl Fn(&Flow) -> bool) -> Vec<u64> {
    let mut ids: Vec<u64> = engine
        .flows
        .iter()
        .filter(|f| pick(f))
        .flat_map(|f| [Some(f.id.number()), engine.number_of(f.paired_with)])
        .flatten()
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// Flows the text report's job section names with their owner (the JSON has every one).
const OWNERS_SHOWN: usize = 20;

/// The job section of the text report: the processes, whose QPs the flows are, the failures.
pub fn write_text(
    out: &mut impl Write,
    j: &JobReport,
    flows: &[super::FlowReport],
) -> io::Result<()> {
    writeln!(out, "Job (--expect logs)")?;
    for p in &j.processes {
        let rank = match (p.rank, p.nranks) {
            (Some(r), Some(n)) => format!("rank {r} of {n}"),
            (Some(r), None) => format!("rank {r}"),
            _ => "no rank".to_string(),
        };
        let mut facts = vec![format!("{} {}", p.library.name(), rank)];
        if let Some(v) = &p.version {
            facts.push(format!("version {v}"));
        }
        if !p.devices.is_empty() {
            facts.push(p.devices.join(" "));
        }
        if let Some(tc) = p.traffic_class {
            facts.push(format!("traffic class {tc} (DSCP {})", tc >> 2));
        }
        if let Some(tc) = p.fifo_traffic_class {
            facts.push(format!("FIFO traffic class {tc} (DSCP {})", tc >> 2));
        }
        facts.push(match p.qps {
            1 => "1 QP logged".to_string(),
            n => format!("{n} QPs logged"),
        });
        writeln!(
            out,
            "  {} pid {} ({}): {}",
            p.host,
            p.pid,
            p.log,
            facts.join(", ")
        )?;
    }
    let owned: Vec<&super::FlowReport> = flows.iter().filter(|f| f.job.is_some()).collect();
    for f in owned.iter().take(OWNERS_SHOWN) {
        if let Some(job) = &f.job {
            writeln!(
                out,
                "  #{} {} → {} QP 0x{:06x}: {}",
                f.id,
                f.src,
                f.dst,
                f.dest_qp,
                job.label()
            )?;
        }
    }
    if owned.len() > OWNERS_SHOWN {
        writeln!(
            out,
            "  ... and {} more flows the logs name (--json: each flow's job)",
            owned.len() - OWNERS_SHOWN
        )?;
    }
    for f in &j.failures {
        let flows: Vec<String> = f.flows.iter().map(|id| format!("#{id}")).collect();
        let flows = if flows.is_empty() {
            "no captured flow".to_string()
        } else {
            format!(
                "flows {} (by {})",
                flows.join(", "),
                f.matched_by.unwrap_or("")
            )
        };
        writeln!(out, "  FAILED {}: {}: {flows}", f.who(), f.what())?;
    }
    Ok(())
}
