//! `rocescope conform`: runs the conformance suite on two RDMA devices of this host (the generator's
//! traffic through the injector, captured on the requester's interface) and judges each scenario; or, with
//! `--judge`, judges a capture and its injection log again.
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use rocescope::conform::judge::{self, Outcome, Verdict, judge};
use rocescope::conform::suite::Scenario;
use rocescope::conform::{self, Row, wire};

use super::fail;

#[derive(Debug, Clone)]
pub enum Mode {
    /// Run these scenarios: the requester on `device`, the responder on `peer`, captured on `interface`,
    /// the files in `out`.
    Run {
        device: String,
        peer: String,
        interface: String,
        scenarios: Vec<&'static Scenario>,
        out: PathBuf,
    },
    /// Judge `capture` and `log` (the injector's, where the scenario has rules) as `scenario` says.
    Judge {
        scenario: &'static Scenario,
        capture: PathBuf,
        log: Option<PathBuf>,
    },
}

#[derive(Debug, Clone)]
pub struct Config {
    pub mode: Mode,
    pub json: bool,
}

/// The verdict on one scenario's files (`log`: the injector's, for a scenario with rules).
fn judged(s: &'static Scenario, capture: PathBuf, log: Option<PathBuf>) -> anyhow::Result<Row> {
    let packets = wire::packets(&capture)?;
    let verdict = match (s.rnr, &log) {
        (Some(rnr), _) => judge::rnr_retry(&packets, rnr),
        (None, None) => anyhow::bail!("{} is judged with the injector's log (--log)", s.name),
        (None, Some(log)) => {
            let actions = wire::actions(log)?;
            match actions.iter().find(|a| a.rule == 0) {
                Some(a) => judge(s.reaction, a, &packets, s.qp),
                None => Verdict {
                    reaction: s.reaction,
                    outcome: Outcome::Fail,
                    seen: format!(
                        "the rule '{}' acted on no packet: nothing was tested",
                        s.rules.first().copied().unwrap_or_default()
                    ),
                    latencies_us: Default::default(),
                    evidence: Vec::new(),
                },
            }
        }
    };
    Ok(Row::new(s, verdict, capture, log))
}

pub fn run(cfg: &Config) -> ExitCode {
    let rows = match &cfg.mode {
        Mode::Judge {
            scenario,
            capture,
            log,
        } => judged(scenario, capture.clone(), log.clone()).map(|r| vec![r]),
        Mode::Run {
            device,
            peer,
            interface,
            scenarios,
            out,
        } => scenarios
            .iter()
            .map(|s| {
                run_one(s, device, peer, interface, out)
                    .with_context(|| format!("conform: {}", s.name))
            })
            .collect(),
    };
    let rows = match rows {
        Ok(r) => r,
        Err(e) => return fail(e),
    };
    if cfg.json {
        match serde_json::to_string_pretty(&serde_json::json!({ "scenarios": rows })) {
            Ok(j) => println!("{j}"),
            Err(e) => return fail(e),
        }
    } else {
        print!("{}", conform::text(&rows));
    }
    if conform::failed(&rows) {
        ExitCode::from(3)
    } else {
        ExitCode::SUCCESS
    }
}

/// One scenario: `capture -- inject -- gen loopback` (no `inject` where the fault is the generator's), each
/// this binary, then the judge over its files.
fn run_one(
    s: &'static Scenario,
    device: &str,
    peer: &str,
    interface: &str,
    out: &std::path::Path,
) -> anyhow::Result<Row> {
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let exe = std::env::current_exe().context("cannot tell where rocescope is")?;
    let capture = out.join(format!("{}.pcap", s.name));
    let log = (!s.rules.is_empty()).then(|| out.join(format!("{}.inject.jsonl", s.name)));
    let said = out.join(format!("{}.log", s.name));
    let said_file = std::fs::File::create(&said)
        .with_context(|| format!("cannot create {}", said.display()))?;
    let reported = out.join(format!("{}.capture.json", s.name));
    let reported_file = std::fs::File::create(&reported)
        .with_context(|| format!("cannot create {}", reported.display()))?;
    let mut cmd = std::process::Command::new(&exe);
    cmd.args([
        "capture", "-i", interface, "-q", "--json", "--grace", "0.5", "-w",
    ])
    .arg(&capture)
    .arg("--");
    if let Some(log) = &log {
        cmd.arg(&exe)
            .arg("inject")
            .args(s.rules.iter().flat_map(|r| ["--rule", r]))
            .arg("--log")
            .arg(log)
            .arg("--");
    }
    let st = cmd
        .arg(&exe)
        .args(gen_args(s, device, peer))
        .stdout(reported_file)
        .stderr(said_file)
        .status()
        .context("cannot start rocescope capture")?;
    // A scenario whose QP must give up ends with gen's one error line saying so.
    let given_up = s.gives_up.is_some_and(|error| {
        st.code() == Some(1) && std::fs::read_to_string(&said).is_ok_and(|t| t.contains(error))
    });
    if !st.success() && !given_up {
        let text = std::fs::read_to_string(&said).unwrap_or_default();
        let last = text.lines().last().unwrap_or("").to_string();
        anyhow::bail!(
            "the run failed ({st}): {last} (all of it in {})",
            said.display()
        );
    }
    let mut row = judged(s, capture, log)?;
    // the capture's report: the NICs' counters over the run
    let report = rocescope::source::printout::read_regular(&reported, 64 << 20)
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok());
    row.counters = report.as_ref().map(conform::counters_of);
    Ok(row)
}

/// `gen loopback` as the scenario runs it.
fn gen_args(s: &Scenario, device: &str, peer: &str) -> Vec<String> {
    let mut args: Vec<String> = [
        "gen",
        "loopback",
        "-d",
        device,
        "--peer-device",
        peer,
        "--op",
        s.op,
    ]
    .map(String::from)
    .into();
    let mut flag = |name: &str, value: String| args.extend([name.to_string(), value]);
    flag("-s", s.size.to_string());
    flag("-n", s.iters.to_string());
    if let Some(q) = s.qp {
        flag("--qp-timeout", q.timeout.to_string());
        flag("--retry-count", q.retry_count.to_string());
    }
    if let Some(r) = s.rnr {
        flag("--min-rnr-timer", r.min_rnr_timer.to_string());
        flag("--rnr-retry", r.rnr_retry.to_string());
    }
    if let Some(f) = s.fault {
        flag("--fault", f.to_string());
    }
    args
}
