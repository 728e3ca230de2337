//! `rocescope capture`: a capture session with a status line on standard error, optionally around a
//! command (`-- COMMAND ARGS...`), ending with the analyze report (plus `capture_stats`); or, with `--tui`,
//! the live terminal UI.
use std::process::ExitCode;
use std::time::Duration;

use rocescope::capture;
use rocescope::report::{Condition, Listing, Output};

use super::fail;

#[derive(Debug, Clone)]
pub struct Config {
    pub session: capture::Config,
    /// Run this once the capture is active; stop `grace` after it exits.
    pub command: Vec<String>,
    pub grace: Duration,
    /// No status line and no start message.
    pub quiet: bool,
    pub output: Output,
    pub fail_on: Vec<Condition>,
    /// Which flows the report lists in full.
    pub listing: Listing,
    /// Write the report so far every so often, one JSON line each, to this file (`-`: standard error).
    pub reports: Option<(Duration, std::path::PathBuf)>,
    /// The live terminal UI instead of the status line and the report.
    pub tui: bool,
    /// Serve the metrics of the capture so far at http://ADDR/metrics.
    pub metrics: Option<std::net::SocketAddr>,
    /// Say where the metrics are, even when quiet (not to Wireshark, which takes an extcap's words on
    /// standard error for an error).
    pub announce_metrics: bool,
    /// Where the report goes at the end.
    pub report: ReportTo,
}

/// Where a capture's report goes when it ends.
#[derive(Debug, Clone, PartialEq)]
pub enum ReportTo {
    /// Nowhere (`monitor`: its figures are the metrics).
    Nowhere,
    /// Standard output, or standard error when `-w -` takes standard output.
    Standard,
    /// This file (`extcap --report`: Wireshark holds the extcap's standard output).
    File(std::path::PathBuf),
}

pub fn run(cfg: &Config) -> ExitCode {
    if cfg.tui {
        return match rocescope::tui::run_live(&cfg.session) {
            Ok(status) => ExitCode::from(status),
            Err(e) => fail(e),
        };
    }
    #[cfg(all(feature = "live", unix))]
    let done = live::capture(cfg);
    #[cfg(not(all(feature = "live", unix)))]
    let done: anyhow::Result<u8> = Err(anyhow::Error::msg(capture::NOT_BUILT));
    match done {
        Ok(code) => ExitCode::from(code),
        Err(e) => fail(e),
    }
}

/// The capture itself: libpcap on a Unix.
#[cfg(all(feature = "live", unix))]
mod live {
    use std::io::{self, BufRead, BufReader, IsTerminal, Write};
    use std::ops::ControlFlow;
    use std::path::Path;
    use std::process::{Child, ChildStdout, Stdio};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

    use anyhow::Context;
    use rocescope::analysis::Engine;
    use rocescope::capture::endpoint::Endpoint;
    use rocescope::capture::session::{Nic, Session, Watcher};
    use rocescope::host::counters::{Deltas, Snapshot};
    use rocescope::report::capture::{CaptureStats, CommandReport, StoppedBy};
    use rocescope::report::format::per_second;
    use rocescope::report::{self, Listing, Report};
    use rocescope::source::printout;

    use super::{Config, ReportTo};

    fn now_nanos() -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0)
    }

    /// Runs the capture; returns the exit status (0, the command's, or 3 for --fail-on; 1 after a write error).
    pub fn capture(cfg: &Config) -> anyhow::Result<u8> {
        let live = Session::open(&cfg.session)?;
        let signal = Arc::new(AtomicUsize::new(0));
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            signal_hook::flag::register_usize(sig, Arc::clone(&signal), sig as usize)
                .with_context(|| format!("cannot handle signal {sig}"))?;
        }
        let tty = io::stderr().is_terminal();
        if !cfg.quiet {
            eprintln!(
                "rocescope: capturing on {} (link type {}), filter: {}",
                cfg.session.live.interface,
                live.linktype(),
                live.filter()
            );
        }
        // The capture is active: now the command may start.
        let mut wrapped = match cfg.command.split_first() {
            Some((prog, rest)) => {
                // The command's output goes where the report does not: ours when that is text, standard
                // error when it is JSON or the capture itself (`-w -`).
                let to_stderr = cfg.output == super::Output::Json
                    || cfg.session.write.as_deref() == Some(Path::new("-"));
                Some(Wrapped::start(
                    prog,
                    rest,
                    &cfg.command,
                    cfg.grace,
                    to_stderr,
                )?)
            }
            None => None,
        };
        let printout = wrapped.as_ref().map(|w| Arc::clone(&w.printout));
        let until = |now: Instant| match &mut wrapped {
            Some(w) => w.until(now, signal.load(Ordering::SeqCst) as i32),
            None => (signal.load(Ordering::SeqCst) != 0).then_some(StoppedBy::Signal),
        };
        let reports = match &cfg.reports {
            Some((every, path)) => Some(Snapshots::open(*every, path, cfg)?),
            None => None,
        };
        let endpoint = match cfg.metrics {
            Some(addr) => {
                let e = Endpoint::serve(addr).with_context(|| {
                    format!(
                        "cannot serve metrics on {addr} (in use? give --metrics another ADDR:PORT)"
                    )
                })?;
                // Where to scrape (the port the system chose for port 0).
                if cfg.announce_metrics {
                    eprintln!("rocescope: metrics at http://{}/metrics", e.addr());
                }
                Some(e)
            }
            None => None,
        };
        let status = StatusLine {
            printout,
            reports,
            endpoint,
            on: !cfg.quiet,
            tty,
            shown: false,
            last: Counts::default(),
            last_at: Instant::now(),
            start: Instant::now(),
            last_nic: None,
        };
        let ended = live.run(until, None, status)?;
        if ended.watcher.shown && tty {
            eprintln!();
        }
        if let Some(e) = &ended.error {
            eprintln!("rocescope: {e}");
        }
        let command = wrapped.map(|mut w| w.report(&ended.engine));
        if cfg.report == ReportTo::Nowhere {
            return Ok(if ended.stats.stopped_by == StoppedBy::WriteError {
                1
            } else {
                0
            });
        }
        let mut report = Report::build_listing(
            &ended.engine,
            &format!("live capture on {}", cfg.session.live.interface),
            cfg.listing,
        );
        let write_error = ended.stats.stopped_by == StoppedBy::WriteError;
        report.counters = Some(
            ended
                .nic
                .counters(&ended.engine, ended.stats.dropped + ended.stats.if_dropped),
        );
        report.capture_stats = Some(CaptureStats {
            command: command.clone(),
            ..ended.stats
        });
        report.judge(&cfg.fail_on);
        match &cfg.report {
            ReportTo::File(path) => {
                let file = std::fs::File::create(path)
                    .with_context(|| format!("cannot write the report to {}", path.display()))?;
                report::write(file, &report, cfg.output)
                    .with_context(|| format!("cannot write the report to {}", path.display()))?;
            }
            _ if cfg.session.write.as_deref() == Some(Path::new("-")) => {
                report::write(io::stderr().lock(), &report, cfg.output)?
            }
            _ => report::write(io::stdout().lock(), &report, cfg.output)?,
        }
        if !report.verdict.failed_on.is_empty() {
            return Ok(report.exit_status());
        }
        if write_error {
            return Ok(1);
        }
        if let Some(c) = &command {
            // Still running after a signal: the shell's status for that signal.
            let sig = signal.load(Ordering::SeqCst) as i32;
            let status = c
                .exit_status
                .unwrap_or(if sig != 0 { 128 + sig } else { 1 });
            return Ok(u8::try_from(status.clamp(0, 255)).unwrap_or(1));
        }
        Ok(0)
    }

    /// The command `capture -- COMMAND` runs, and how it went.
    struct Wrapped {
        child: Child,
        /// Its standard output, passed on and read for the connections it printed (perftest's and
        /// ibv_*_pingpong's address lines).
        printout: Arc<Mutex<printout::Reader>>,
        report: CommandReport,
        started_ns: u64,
        grace: Duration,
        done: Option<Instant>,
        signalled: Option<Instant>,
    }

    impl Wrapped {
        fn start(
            prog: &str,
            rest: &[String],
            argv: &[String],
            grace: Duration,
            to_stderr: bool,
        ) -> anyhow::Result<Wrapped> {
            let started_ns = now_nanos();
            let mut child = std::process::Command::new(prog)
                .args(rest)
                .stdout(Stdio::piped())
                .spawn()
                .with_context(|| format!("cannot run '{prog}'"))?;
            let printout = Arc::new(Mutex::new(printout::Reader::default()));
            if let Some(out) = child.stdout.take() {
                let reader = Arc::clone(&printout);
                std::thread::spawn(move || pass_on(out, &reader, to_stderr));
            }
            Ok(Wrapped {
                child,
                printout,
                report: CommandReport {
                    argv: argv.to_vec(),
                    start_time: started_ns as f64 / 1e9,
                    end_time: None,
                    exit_status: None,
                    flows: Vec::new(),
                },
                started_ns,
                grace,
                done: None,
                signalled: None,
            })
        }

        /// Why to stop now: `grace` after the command ended (by `signal` if one came), or after a signal the
        /// command outlived by `grace` (at least a second).
        fn until(&mut self, now: Instant, signal: i32) -> Option<StoppedBy> {
            if signal != 0 && self.done.is_none() {
                if self.signalled.is_none() {
                    // A terminal's Ctrl-C reaches the command too (same process group): pass on SIGTERM only.
                    if signal == libc::SIGTERM {
                        // SAFETY: kill(2) on our own child's pid.
                        unsafe { libc::kill(self.child.id() as libc::pid_t, signal) };
                    }
                    self.signalled = Some(now);
                }
                if self
                    .signalled
                    .is_some_and(|t| now >= t + self.grace.max(Duration::from_secs(1)))
                {
                    return Some(StoppedBy::Signal);
                }
            }
            if self.done.is_none() && self.ended() {
                self.done = Some(now);
            }
            if self.done.is_some_and(|t| now >= t + self.grace) {
                return Some(if signal != 0 {
                    StoppedBy::Signal
                } else {
                    StoppedBy::Command
                });
            }
            None
        }

        /// True once the command has exited (its status is then recorded).
        fn ended(&mut self) -> bool {
            if self.report.exit_status.is_some() {
                return true;
            }
            match self.child.try_wait() {
                Ok(Some(st)) => {
                    self.report.end_time = Some(now_nanos() as f64 / 1e9);
                    self.report.exit_status = Some(exit_status(st));
                    true
                }
                _ => false,
            }
        }

        /// The command's part of the report: how it ended (if it did: one still running after a signal it
        /// ignored is left be) and the flows that appeared while it ran.
        fn report(&mut self, engine: &Engine) -> CommandReport {
            self.ended();
            self.report.flows = engine
                .flows
                .iter()
                .enumerate()
                .filter(|(_, f)| f.first_ts >= self.started_ns)
                .map(|(i, _)| i as u32)
                .collect();
            self.report.clone()
        }
    }

    /// Copies the command's output to ours (or to standard error), line by line, and reads each line for
    /// addresses.
    fn pass_on(out: ChildStdout, reader: &Mutex<printout::Reader>, to_stderr: bool) {
        let mut lines = BufReader::new(out);
        let mut line = Vec::new();
        loop {
            line.clear();
            match lines.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            let _ = if to_stderr {
                io::stderr().lock().write_all(&line)
            } else {
                let mut stdout = io::stdout().lock();
                stdout.write_all(&line).and_then(|()| stdout.flush())
            };
            if let Ok(mut r) = reader.lock() {
                r.line(String::from_utf8_lossy(&line).trim_end());
            }
        }
    }

    fn exit_status(s: std::process::ExitStatus) -> i32 {
        use std::os::unix::process::ExitStatusExt;
        match (s.code(), s.signal()) {
            (Some(c), _) => c,
            (None, Some(sig)) => 128 + sig,
            _ => 1,
        }
    }

    /// What the status line counts from.
    #[derive(Default, Clone, Copy)]
    struct Counts {
        frames: u64,
        roce: u64,
        bytes: u64,
    }

    /// `--report-every S --reports FILE`: the report so far, one JSON line every S seconds, so that a capture
    /// that runs for days says how it goes (memory stays flat: flows are evicted, the report lists a bounded
    /// number).
    struct Snapshots {
        every: Duration,
        next: Instant,
        out: Box<dyn Write + Send>,
        source: String,
        listing: Listing,
        written: u64,
    }

    impl Snapshots {
        fn open(every: Duration, path: &Path, cfg: &Config) -> anyhow::Result<Snapshots> {
            let out: Box<dyn Write + Send> = if path == Path::new("-") {
                Box::new(io::stderr())
            } else {
                let f = std::fs::File::create(path)
                    .with_context(|| format!("cannot create {}", path.display()))?;
                Box::new(io::BufWriter::new(f))
            };
            Ok(Snapshots {
                every,
                next: Instant::now() + every,
                out,
                source: format!("live capture on {}", cfg.session.live.interface),
                listing: cfg.listing,
                written: 0,
            })
        }

        fn look(&mut self, engine: &Engine, stats: &CaptureStats) {
            let now = Instant::now();
            if now < self.next || self.every.is_zero() {
                return;
            }
            self.next = rocescope::capture::session::next_on_grid(self.next, self.every, now);
            let mut report = Report::build_listing(engine, &self.source, self.listing);
            report.capture_stats = Some(stats.clone());
            self.written += 1;
            // A failed write (a full disk) loses a snapshot, never the capture.
            let _ = serde_json::to_writer(&mut self.out, &report)
                .map_err(io::Error::from)
                .and_then(|()| writeln!(self.out))
                .and_then(|()| self.out.flush());
        }
    }

    /// A status line on standard error every second: rates, flows, trouble, libpcap's drops.
    struct StatusLine {
        /// The wrapped command's output, read for its connections.
        printout: Option<Arc<Mutex<printout::Reader>>>,
        /// `--report-every`.
        reports: Option<Snapshots>,
        /// `--metrics`: what it serves, published at every look.
        endpoint: Option<Endpoint>,
        on: bool,
        tty: bool,
        shown: bool,
        last: Counts,
        last_at: Instant,
        start: Instant,
        /// The NIC's counters at the last look.
        last_nic: Option<Snapshot>,
    }

    impl Watcher for StatusLine {
        fn every(&self) -> Duration {
            Duration::from_secs(1)
        }

        fn first(&self) -> Duration {
            Duration::from_secs(1)
        }

        fn look(&mut self, engine: &Engine, stats: &CaptureStats, nic: &Nic) -> ControlFlow<()> {
            if let Some(r) = &mut self.reports {
                r.look(engine, stats);
            }
            if let Some(e) = &self.endpoint {
                e.publish(report::metrics::render(engine, stats, Some(nic.now)));
            }
            if !self.on {
                return ControlFlow::Continue(());
            }
            let now = Instant::now();
            let mut line = self.line(engine, stats, now);
            let since = self.last_nic.as_ref().unwrap_or(nic.start);
            line.push_str(&nic_moved(since, nic.now));
            self.last_nic = Some(nic.now.clone());
            if self.tty {
                eprint!("\r\x1b[K{line}");
            } else {
                eprintln!("{line}");
            }
            self.shown = true;
            ControlFlow::Continue(())
        }

        fn ending(&mut self, engine: &mut Engine) {
            let Some(reader) = &self.printout else { return };
            if let Ok(r) = reader.lock() {
                for x in r.exchanges() {
                    engine.announce(&x);
                }
            }
        }
    }

    /// The status line's NIC part: what each RDMA port counted since the last look.
    fn nic_moved(a: &Snapshot, b: &Snapshot) -> String {
        let d = Deltas::between(a, b, false);
        let ports: Vec<String> = d
            .ports
            .iter()
            .filter(|p| !p.hw_counters.is_empty() || !p.counters.is_empty())
            .map(|p| {
                let moved: Vec<String> = p
                    .hw_counters
                    .iter()
                    .chain(&p.counters)
                    .map(|(n, v)| format!("{n} {v}"))
                    .collect();
                format!("{}/{}: {}", p.device, p.port, moved.join(", "))
            })
            .collect();
        if ports.is_empty() {
            String::new()
        } else {
            format!(" | NIC {}", ports.join("; "))
        }
    }

    impl StatusLine {
        fn line(&mut self, engine: &Engine, stats: &CaptureStats, now: Instant) -> String {
            let t = &engine.totals;
            let counts = Counts {
                frames: t.frames,
                roce: t.roce_frames,
                bytes: t.bytes,
            };
            let secs = now.duration_since(self.last_at).as_secs_f64();
            let rate = |a: u64, b: u64| (a - b) as f64 / secs.max(1e-3);
            let (mut gaps, mut naks, mut rnr, mut cnp, mut ce) = (0, 0, 0, 0, 0);
            for f in engine.flows.iter() {
                gaps += f.req.psn.gap_events;
                naks += f.resp.naks.total();
                rnr += f.resp.rnr_naks;
                cnp += f.cnp;
                ce += f.ecn[3];
            }
            let line = format!(
                "[{:>5.0}s] {} frames/s, {} RoCE/s, {}B/s | {} flows, gaps {gaps}, NAKs {naks}, RNR {rnr}, CNP {cnp}, CE {ce} | drops {} (kernel) {} (interface) of {}",
                now.duration_since(self.start).as_secs_f64(),
                per_second(rate(counts.frames, self.last.frames)),
                per_second(rate(counts.roce, self.last.roce)),
                per_second(rate(counts.bytes, self.last.bytes)),
                engine.flows.len(),
                stats.dropped,
                stats.if_dropped,
                stats.received,
            );
            self.last = counts;
            self.last_at = now;
            line
        }
    }

    #[cfg(test)]
    mod tests {
        use std::time::Instant;

        use rocescope::host::counters::{PortValues, Snapshot};

        fn snap(v: &[(&str, &str, u64)]) -> Snapshot {
            let mut ports: Vec<PortValues> = Vec::new();
            for (dev, name, x) in v {
                let p = match ports.iter_mut().find(|p| p.device == *dev) {
                    Some(p) => p,
                    None => {
                        ports.push(PortValues {
                            device: dev.to_string(),
                            port: 1,
                            hw_counters: Default::default(),
                            counters: Default::default(),
                        });
                        ports.last_mut().unwrap()
                    }
                };
                p.hw_counters.insert(name.to_string(), *x);
            }
            Snapshot {
                at: Instant::now(),
                ports,
                netdevs: Vec::new(),
            }
        }

        /// The status line's NIC part: what each port counted since the last look; nothing when none moved.
        #[test]
        fn the_status_line_names_what_moved() {
            let a = snap(&[
                ("rxe0", "sent_pkts", 10),
                ("rxe0", "rcvd_pkts", 4),
                ("rxe1", "rcvd_pkts", 9),
            ]);
            let b = snap(&[
                ("rxe0", "sent_pkts", 130),
                ("rxe0", "rcvd_pkts", 4),
                ("rxe1", "rcvd_pkts", 129),
            ]);
            assert_eq!(
                super::nic_moved(&a, &b),
                " | NIC rxe0/1: sent_pkts +120; rxe1/1: rcvd_pkts +120"
            );
            assert_eq!(super::nic_moved(&b, &b), "");
        }
    }
}
