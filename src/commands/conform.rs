//! `rocescope conform`: runs the conformance suite on two RDMA devices of this host (the generator's
//! traffic through the injector, captured on the requester's interface) and judges each scenario; or, with
//! `--judge`, judges a capture and its injection log again.
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use rocescope::conform::judge::{self, Outcome, Reaction, Verdict, judge};
use rocescope::conform::suite::Scenario;
use rocescope::conform::{self, Row, wire};

use super::fail;

#[derive(Debug, Clone)]
pub enum Mode {
    /// Run these scenarios: the requester on `device`, the responder on `peer`, the injector where `at`
    /// says, the files in `out`.
    Run {
        device: String,
        peer: String,
        at: Stand,
        scenarios: Vec<&'static Scenario>,
        /// Runs of each scenario.
        repeat: u32,
        out: PathBuf,
    },
    /// Judge `capture` and `log` (the injector's, where the scenario has rules) as `scenario` says.
    Judge {
        scenario: &'static Scenario,
        capture: PathBuf,
        log: Option<PathBuf>,
    },
}

/// Where the injector stands, and so where each run is captured.
#[derive(Debug, Clone)]
pub enum Stand {
    /// On this host's output path (`inject`'s NFQUEUE); captured on the requester's interface, where the
    /// requests leave after the injector and the answers arrive.
    Output { interface: String },
    /// A bump in the wire between two interfaces (`inject --bridge`); captured as it sends on, both ways
    /// (`-i any`, outbound on the two).
    Bridge([String; 2]),
}

impl Stand {
    /// `capture`'s arguments for a run: where, and with what filter.
    fn capture_args(&self) -> anyhow::Result<Vec<String>> {
        Ok(match self {
            Stand::Output { interface } => vec!["-i".into(), interface.clone()],
            Stand::Bridge([a, b]) => vec![
                "-i".into(),
                "any".into(),
                "-f".into(),
                format!(
                    "outbound and (ifindex {} or ifindex {}) and udp dst port {}",
                    ifindex(a)?,
                    ifindex(b)?,
                    parsers::udp::ROCEV2_PORT
                ),
            ],
        })
    }
}

/// The interface's index, as libpcap's `ifindex` names it.
fn ifindex(name: &str) -> anyhow::Result<u32> {
    let path = format!("/sys/class/net/{name}/ifindex");
    std::fs::read_to_string(&path)
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .with_context(|| format!("no interface {name} (ip link shows them)"))
}

#[derive(Debug, Clone)]
pub struct Config {
    pub mode: Mode,
    pub json: bool,
}

/// What a run of this command's own adds to its files: the NICs' counters over it, and which device was
/// which.
struct Ran<'a> {
    counters: conform::Counters,
    requester: &'a str,
    responder: &'a str,
}

/// The verdict on one scenario's files (`log`: the injector's, for a scenario with rules); for a run of
/// this command's, its counters held to the same files.
fn judged(
    s: &'static Scenario,
    capture: PathBuf,
    log: Option<PathBuf>,
    ran: Option<Ran<'_>>,
) -> anyhow::Result<Row> {
    let packets = wire::packets(&capture)?;
    let actions = match &log {
        Some(log) => wire::actions(log)?,
        None => Vec::new(),
    };
    let verdict = match (s.rnr, &log) {
        (Some(rnr), _) => judge::rnr_retry(&packets, rnr),
        (None, None) => anyhow::bail!("{} is judged with the injector's log (--log)", s.name),
        (None, Some(_)) => {
            match actions.iter().find(|a| a.rule == 0) {
                Some(a) => match judge(s.reaction, a, &packets, s.qp) {
                    // the CNP came: what the sender did then, as analyze measures it
                    v if s.reaction == Reaction::CeMarked && v.outcome == Outcome::Pass => {
                        let r = wire::sender_reaction(&capture, a.src, a.dst, a.dest_qp)?;
                        judge::with_rate_reaction(v, r)
                    }
                    v => v,
                },
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
    let mut row = Row::new(s, verdict, capture, log);
    if let Some(r) = ran {
        row.counters_held =
            conform::counters::held(s, &packets, &actions, &r.counters, r.requester, r.responder);
        row.counters = Some(r.counters);
    }
    Ok(row)
}

pub fn run(cfg: &Config) -> ExitCode {
    let report = match &cfg.mode {
        Mode::Judge {
            scenario,
            capture,
            log,
        } => judged(scenario, capture.clone(), log.clone(), None)
            .map(|r| conform::Report::new(None, 1, vec![r])),
        Mode::Run {
            device,
            peer,
            at,
            scenarios,
            repeat,
            out,
        } => run_suite(device, peer, at, scenarios, *repeat, out),
    };
    let report = match report {
        Ok(r) => r,
        Err(e) => return fail(e),
    };
    if cfg.json {
        match serde_json::to_string_pretty(&report) {
            Ok(j) => println!("{j}"),
            Err(e) => return fail(e),
        }
    } else {
        print!("{}", conform::text(&report));
    }
    if conform::failed(&report.scenarios) {
        ExitCode::from(3)
    } else {
        ExitCode::SUCCESS
    }
}

/// Each scenario `repeat` times (all of one before the next), judged.
fn run_suite(
    device: &str,
    peer: &str,
    at: &Stand,
    scenarios: &[&'static Scenario],
    repeat: u32,
    out: &std::path::Path,
) -> anyhow::Result<conform::Report> {
    let mut rows = Vec::new();
    for s in scenarios {
        for k in 1..=repeat {
            // NAME.pcap for one run, NAME.K.pcap for several
            let stem = match repeat {
                1 => s.name.to_string(),
                _ => format!("{}.{k}", s.name),
            };
            let mut row = run_one(s, device, peer, at, out, &stem)
                .with_context(|| format!("conform: {stem}"))?;
            row.run = k;
            rows.push(row);
        }
    }
    let bench = conform::Bench {
        device: device.to_string(),
        peer_device: peer.to_string(),
        interface: match at {
            Stand::Output { interface } => Some(interface.clone()),
            Stand::Bridge(_) => None,
        },
        bridge: match at {
            Stand::Bridge(ports) => Some(ports.clone()),
            Stand::Output { .. } => None,
        },
    };
    Ok(conform::Report::new(Some(bench), repeat, rows))
}

/// One scenario: `capture -- inject -- gen loopback` (on the output path, no `inject` where the fault is the
/// generator's; a bump always stands, to carry the traffic), each this binary, then the judge over its files.
fn run_one(
    s: &'static Scenario,
    device: &str,
    peer: &str,
    at: &Stand,
    out: &std::path::Path,
    stem: &str,
) -> anyhow::Result<Row> {
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let exe = std::env::current_exe().context("cannot tell where rocescope is")?;
    let capture = out.join(format!("{stem}.pcap"));
    let bridge = match at {
        Stand::Bridge(ports) => Some(ports.join(",")),
        Stand::Output { .. } => None,
    };
    let injected = !s.rules.is_empty() || bridge.is_some();
    let log = injected.then(|| out.join(format!("{stem}.inject.jsonl")));
    let said = out.join(format!("{stem}.log"));
    let said_file = std::fs::File::create(&said)
        .with_context(|| format!("cannot create {}", said.display()))?;
    let reported = out.join(format!("{stem}.capture.json"));
    let reported_file = std::fs::File::create(&reported)
        .with_context(|| format!("cannot create {}", reported.display()))?;
    let mut cmd = std::process::Command::new(&exe);
    cmd.arg("capture")
        .args(at.capture_args()?)
        .args(["-q", "--json", "--grace", "0.5", "-w"])
        .arg(&capture)
        .arg("--");
    if let Some(log) = &log {
        cmd.arg(&exe)
            .arg("inject")
            .args(bridge.iter().flat_map(|b| ["--bridge", b]))
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
    // the capture's report: the NICs' counters over the run
    let report = rocescope::source::printout::read_regular(&reported, 64 << 20)
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok());
    let counters = report.as_ref().map(conform::counters_of);
    let ran = counters.map(|counters| Ran {
        counters,
        requester: device,
        responder: peer,
    });
    judged(s, capture, log, ran)
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
