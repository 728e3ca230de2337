//! `rocescope conform`: runs the conformance suite on two RDMA devices of this host (the generator's
//! traffic through the injector, captured on the requester's interface) and judges each scenario; or, with
//! `--judge`, judges a capture and its injection log again.
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use rocescope::conform::judge::{Outcome, Verdict, judge};
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
    /// Judge `capture` and `log` as `scenario` says.
    Judge {
        scenario: &'static Scenario,
        capture: PathBuf,
        log: PathBuf,
    },
}

#[derive(Debug, Clone)]
pub struct Config {
    pub mode: Mode,
    pub json: bool,
}

/// The verdict on one scenario's files.
fn judged(s: &'static Scenario, capture: PathBuf, log: PathBuf) -> anyhow::Result<Row> {
    let packets = wire::packets(&capture)?;
    let actions = wire::actions(&log)?;
    let verdict = match actions.iter().find(|a| a.rule == 0) {
        Some(a) => judge(s.reaction, a, &packets, s.qp),
        None => Verdict {
            reaction: s.reaction,
            outcome: Outcome::Fail,
            seen: format!(
                "the rule '{}' acted on no packet: nothing was tested",
                s.rules[0]
            ),
            latencies_us: Default::default(),
            evidence: Vec::new(),
        },
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

/// One scenario: `capture -- inject -- gen loopback`, each this binary, then the judge over its files.
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
    let log = out.join(format!("{}.inject.jsonl", s.name));
    let said = out.join(format!("{}.log", s.name));
    let said_file = std::fs::File::create(&said)
        .with_context(|| format!("cannot create {}", said.display()))?;
    let reported = out.join(format!("{}.capture.json", s.name));
    let reported_file = std::fs::File::create(&reported)
        .with_context(|| format!("cannot create {}", reported.display()))?;
    let st = std::process::Command::new(&exe)
        .args([
            "capture", "-i", interface, "-q", "--json", "--grace", "0.5", "-w",
        ])
        .arg(&capture)
        .arg("--")
        .arg(&exe)
        .arg("inject")
        .args(s.rules.iter().flat_map(|r| ["--rule", r]))
        .arg("--log")
        .arg(&log)
        .arg("--")
        .arg(&exe)
        .args([
            "gen",
            "loopback",
            "-d",
            device,
            "--peer-device",
            peer,
            "--op",
            s.op,
        ])
        .args(["-s", &s.size.to_string(), "-n", &s.iters.to_string()])
        .args(s.qp.iter().flat_map(|q| {
            [
                "--qp-timeout".to_string(),
                q.timeout.to_string(),
                "--retry-count".to_string(),
                q.retry_count.to_string(),
            ]
        }))
        .stdout(reported_file)
        .stderr(said_file)
        .status()
        .context("cannot start rocescope capture")?;
    // A scenario whose QP must give up ends with gen's one error line saying so.
    let gave_up =
        || std::fs::read_to_string(&said).is_ok_and(|t| t.contains("IBV_WC_RETRY_EXC_ERR"));
    let given_up = s.gives_up && st.code() == Some(1) && gave_up();
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
