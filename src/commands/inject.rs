//! `rocescope inject`: the injector on this host's output path (NFQUEUE), or in the wire between two
//! interfaces (`--bridge`), until a signal, `--duration` or the command it runs ends; every action a JSON line of the log, the counts its last line and one line on
//! standard error.
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::process::{Child, Command, ExitCode};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;

use rocescope::inject::bump::Bump;
use rocescope::inject::nfqueue::{self, Queue};
use rocescope::inject::rules::Rule;
use rocescope::inject::{Counts, Injector};

use super::fail;

/// Where the injector stands.
#[derive(Debug, Clone)]
pub enum Where {
    /// This host's output path.
    Output(nfqueue::Path),
    /// Between two interfaces.
    Bridge([String; 2]),
}

#[derive(Debug, Clone)]
pub struct Config {
    pub rules: Vec<Rule>,
    pub path: Where,
    /// `-`: standard output.
    pub log: PathBuf,
    pub duration: Option<Duration>,
    pub command: Vec<String>,
}

pub fn run(cfg: &Config) -> ExitCode {
    match inject(cfg) {
        Ok(status) => status,
        Err(e) => fail(e),
    }
}

fn inject(cfg: &Config) -> anyhow::Result<ExitCode> {
    let mut log: Box<dyn Write> = if cfg.log.as_os_str() == "-" {
        Box::new(io::stdout().lock())
    } else {
        let f = File::create(&cfg.log)
            .with_context(|| format!("cannot write the log {}", cfg.log.display()))?;
        Box::new(BufWriter::new(f))
    };
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop)).context("cannot catch signals")?;
    }
    let mut path = match &cfg.path {
        Where::Output(p) => Path::Output(Queue::open(p.clone()).context("inject")?),
        Where::Bridge([a, b]) => Path::Bridge(Bump::open(a, b).context("inject")?),
    };
    let mut injector = Injector::new(cfg.rules.clone());
    let mut child = start(&cfg.command)?;
    let mut status = None;
    let deadline = cfg.duration.map(|d| Instant::now() + d);
    let stopped = || {
        if let Some(c) = child.as_mut()
            && let Ok(Some(s)) = c.try_wait()
        {
            status = Some(s);
            return true;
        }
        stop.load(Ordering::Relaxed) || deadline.is_some_and(|d| Instant::now() >= d)
    };
    let forwarded = match &mut path {
        Path::Output(queue) => {
            queue
                .run(&mut injector, &mut *log, stopped)
                .context("inject")?;
            None
        }
        Path::Bridge(bump) => {
            bump.run(&mut injector, &mut *log, stopped)
                .context("inject")?;
            Some(bump.forwarded)
        }
    };
    drop(path);
    summary(&injector.counts, forwarded, &mut *log)?;
    if let (Some(mut c), None) = (child, status) {
        let _ = c.kill();
        status = c.wait().ok();
    }
    Ok(match status.and_then(|s| s.code()) {
        Some(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        None if status.is_some() => ExitCode::from(1),
        None => ExitCode::SUCCESS,
    })
}

/// The injector on its path.
enum Path {
    Output(Queue),
    Bridge(Bump),
}

fn start(command: &[String]) -> anyhow::Result<Option<Child>> {
    let Some((program, args)) = command.split_first() else {
        return Ok(None);
    };
    Command::new(program)
        .args(args)
        .spawn()
        .map(Some)
        .with_context(|| format!("cannot run {program}"))
}

/// The counts (and on a bridge the frames forwarded each way), as the log's last line and one line on
/// standard error.
fn summary(
    counts: &Counts,
    forwarded: Option<[u64; 2]>,
    log: &mut dyn Write,
) -> anyhow::Result<()> {
    let mut line = serde_json::json!({ "summary": counts });
    if let Some(f) = forwarded {
        line["summary"]["forwarded"] = serde_json::json!(f);
    }
    writeln!(log, "{line}")
        .and_then(|()| log.flush())
        .context("cannot write the log")?;
    let by_rule: Vec<String> = counts.by_rule.iter().map(u64::to_string).collect();
    let bridged = forwarded.map_or(String::new(), |[a, b]| {
        format!("; frames forwarded {a} one way, {b} the other")
    });
    eprintln!(
        "inject: {} datagrams seen, {} RoCE, {} matched a rule, {} acted on (per rule: {}){bridged}",
        counts.seen,
        counts.roce,
        counts.matched,
        counts.acted,
        by_rule.join(", ")
    );
    Ok(())
}
