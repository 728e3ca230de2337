//! `rocescope gen`: a verbs traffic generator (libibverbs through the `sideway` crate, which loads
//! libibverbs.so.1 at run time: on a machine without RDMA only `gen` fails, the rest of rocescope works).
//!
//! `gen loopback`: RC QP pairs (`-q`) on two devices of one host in one process (no out-of-band exchange),
//! RDMA WRITE, SEND/RECV, RDMA READ, or the 8-byte atomics FETCH_ADD and COMPARE_SWAP, with a data check and
//! a report whose QPNs, PSN ranges and opcodes can be matched with a capture (`rocescope analyze --json`);
//! `--tclass` sets the GRH traffic class (the IP TOS on rxe: 2 = ECT(0)); `--capture` is the fabric check.
//!
//! The modules build on each other in this order, without a cycle: records (the report and the
//! out-of-band messages); plan, pattern and wire (pure computations); config (what a run is asked to do);
//! verbs (the devices); oob (the exchange); run (the requester's run); check and output (the fabric check,
//! what is printed); port_counters (a port's counters around a run); loopback and remote (the three
//! commands); agent and mesh (`gen agent`, `gen mesh`: many hosts, on remote's client and server); this file
//! (signals, exit statuses).

mod agent;
mod check;
pub mod config;
mod loopback;
mod mesh;
mod oob;
mod output;
pub mod pattern;
pub mod plan;
mod port_counters;
pub mod records;
mod remote;
mod run;
mod verbs;
mod wire;

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use config::{Command, WorkConfig};
use output::print_report;
use records::{Report, StoppedBy};
use rocescope::report::format::error_line;

pub fn main(cmd: Command) -> ExitCode {
    // Ctrl-C / SIGTERM: stop posting, let what is in flight complete, report, tear down (the verbs objects
    // are released as they drop)
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        if let Err(e) = signal_hook::flag::register(sig, Arc::clone(&stop)) {
            eprintln!("rocescope: gen: cannot handle signal {sig}: {e}");
            return ExitCode::from(1);
        }
    }
    match cmd {
        Command::Loopback(cfg) => requester(&cfg.work, &stop, |s| loopback::run(&cfg, s)),
        Command::Client(cfg) => requester(&cfg.work, &stop, |s| Ok(remote::client(&cfg, s)?)),
        Command::Agent(cfg) => match agent::agent(&cfg, &stop) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("rocescope: gen agent: {}", error_line(&e));
                ExitCode::from(1)
            }
        },
        Command::Mesh(cfg) => mesh::mesh(&cfg, &stop).unwrap_or_else(|e| {
            eprintln!("rocescope: gen mesh: {e:#}");
            ExitCode::from(1)
        }),
        Command::Server(cfg) => match remote::serve(&cfg, &stop) {
            Ok(true) => ExitCode::SUCCESS,
            Ok(false) => ExitCode::from(1),
            Err(e) => {
                eprintln!("rocescope: gen server: {}", error_line(&e));
                ExitCode::from(1)
            }
        },
    }
}

/// Exit status of a requester run: 0, 1 on an error, 130 when interrupted; --capture adds 3 on FAIL.
fn requester(
    w: &WorkConfig,
    stop: &AtomicBool,
    run: impl FnOnce(&AtomicBool) -> anyhow::Result<Report>,
) -> ExitCode {
    if let Some(iface) = &w.capture {
        return with_capture(w, iface, stop, run);
    }
    match run(stop) {
        Ok(report) => {
            print_report(&report, w.json);
            exit_status(&report)
        }
        Err(e) => {
            eprintln!("rocescope: gen: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn exit_status(r: &Report) -> ExitCode {
    if r.stopped_by == StoppedBy::Signal {
        ExitCode::from(130)
    } else if r.error.is_some() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// `--capture IFACE`: exit 0 on PASS, 3 on FAIL, 1 when the generator or the capture failed.
fn with_capture(
    w: &WorkConfig,
    iface: &str,
    stop: &AtomicBool,
    run: impl FnOnce(&AtomicBool) -> anyhow::Result<Report>,
) -> ExitCode {
    // the capture is active before the generator opens a device, let alone posts
    let running = match check::start(iface, w.mtu) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("rocescope: gen: {}", error_line(&e));
            return ExitCode::from(1);
        }
    };
    let report = match run(stop) {
        Ok(r) => r,
        Err(e) => {
            running.abort();
            eprintln!("rocescope: gen: {e:#}");
            return ExitCode::from(1);
        }
    };
    let captured = match running.finish(Duration::from_secs_f64(w.capture_grace)) {
        Ok(c) => c,
        Err(e) => {
            print_report(&report, w.json);
            eprintln!("rocescope: gen: --capture {iface}: {}", error_line(&e));
            return ExitCode::from(1);
        }
    };
    let result = check::verify(&report, &captured);
    if let Err(e) = output::print_checked(&report, &captured, &result, w.json) {
        eprintln!("rocescope: gen: {e:#}");
        return ExitCode::from(1);
    }
    if report.error.is_some() || report.stopped_by == StoppedBy::Signal {
        exit_status(&report)
    } else if result.status == check::Verdict::Pass {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(3)
    }
}
