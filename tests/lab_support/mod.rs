//! What the Soft-RoCE lab tests share (tests/lab*.rs, tests/gen.rs): running lab/setup and lab/run under hard
//! timeouts with their logs, `rocescope analyze --json`, the cable's RoCE frames as tshark reads them. Each test
//! file uses part of it.
#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// `tshark -n -r PATH -T fields -E occurrence=f -e F ...`: per frame the first value of each of `fields`, ""
/// where the frame has none.
pub fn tshark_fields(path: &Path, fields: &[&str]) -> Vec<Vec<String>> {
    let mut cmd = Command::new("tshark");
    cmd.args(["-n", "-r"])
        .arg(path)
        .args(["-T", "fields", "-E", "occurrence=f"]);
    for f in fields {
        cmd.args(["-e", f]);
    }
    let o = cmd.output().expect("run tshark");
    assert!(
        o.status.success(),
        "tshark {}: {}",
        path.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| {
            let mut v: Vec<String> = l.split('\t').map(str::to_string).collect();
            v.resize(fields.len(), String::new());
            v
        })
        .collect()
}

/// A number as tshark writes a field (decimal, or hexadecimal with 0x); `None` for an empty field (the frame
/// has none). Anything else is tshark saying something this test does not expect: a panic.
pub fn number(s: &str) -> Option<u64> {
    if s.is_empty() {
        None
    } else if let Some(h) = s.strip_prefix("0x") {
        Some(u64::from_str_radix(h, 16).unwrap_or_else(|e| panic!("{s}: {e}")))
    } else {
        Some(s.parse().unwrap_or_else(|e| panic!("{s}: {e}")))
    }
}

/// lab/setup: the first run installs packages and downloads the guest kernel.
pub const SETUP_TIMEOUT: Duration = Duration::from_secs(900);
/// lab/run, the outer bound (QEMU itself is under LAB_TIMEOUT inside lab/run).
pub const RUN_TIMEOUT: Duration = Duration::from_secs(360);
pub const LAB_TIMEOUT_SECS: &str = "300";

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_rocescope")
}

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn tail(path: &Path, lines: usize) -> String {
    match fs::read_to_string(path) {
        Ok(s) => {
            let v: Vec<&str> = s.lines().collect();
            v[v.len().saturating_sub(lines)..].join("\n")
        }
        Err(e) => format!("({}: {e})", path.display()),
    }
}

/// Runs `cmd` with its output in `log`, killing it (SIGTERM, then SIGKILL: lab/run's trap stops QEMU) at
/// `limit`. Returns the exit code, or panics with `what` and the log on a timeout.
pub fn run_logged(mut cmd: Command, what: &str, log: &Path, limit: Duration) -> i32 {
    let out = fs::File::create(log).unwrap_or_else(|e| panic!("{}: {e}", log.display()));
    let err = out.try_clone().unwrap();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .unwrap_or_else(|e| panic!("lab test: cannot run {what}: {e}"));
    let t0 = Instant::now();
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st.code().unwrap_or(-1);
        }
        if t0.elapsed() > limit {
            // SAFETY: kill(2) on our own child's pid.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
            let t1 = Instant::now();
            while t1.elapsed() < Duration::from_secs(15) {
                if child.try_wait().unwrap().is_some() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(200));
            }
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "lab test: {what} did not finish within {} s (killed); its output:\n{}",
                limit.as_secs(),
                tail(log, 60)
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

pub fn analyze_json(path: &Path) -> Value {
    analyze_json_with(path, &[])
}

/// `rocescope analyze --json PATH ARGS...` (e.g. `--expect LOG`).
pub fn analyze_json_with(path: &Path, args: &[&str]) -> Value {
    let o = Command::new(bin())
        .args(["analyze", "--json"])
        .arg(path)
        .args(args)
        .output()
        .expect("run rocescope analyze");
    assert!(
        o.status.success(),
        "rocescope analyze --json {}: {}\n{}",
        path.display(),
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).expect("analyze JSON")
}

/// Runs `lab/setup`, then `lab/run SCENARIOS` with this test's binary in the guest, into
/// `target/tmp/<dir>/out`; panics with the logs when either fails. A scenario that failed on one of
/// `KNOWN_RACES` (and only such failures) is run once more in a new guest. Returns the output directory and
/// the seconds it took.
pub fn run_lab(dir: &str, scenarios: &[&str]) -> (PathBuf, f64) {
    // One lab run at a time in this test binary: its tests run on threads of their own, and one waiting for
    // another's run on lab/run's lock would count that run against its own time (a fabric run of 247 s once
    // outlasted the 240 s wait). A test that failed while holding it leaves it to the next.
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let t0 = Instant::now();
    let lab = root().join("lab");
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(dir);
    let _ = fs::remove_dir_all(&out);
    fs::create_dir_all(&out).unwrap();
    let setup_log = out.join("setup.log");
    let rc = run_logged(
        Command::new(lab.join("setup")),
        "lab/setup",
        &setup_log,
        SETUP_TIMEOUT,
    );
    assert_eq!(
        rc,
        0,
        "lab test: lab/setup failed (exit {rc}); the lab cannot run here. Its output:\n{}",
        tail(&setup_log, 40)
    );
    let lab_out = out.join("out");
    let mut run_log = out.join("run.log");
    let mut rc = lab_run(scenarios, &lab_out, &run_log);
    // A known race of the guest's tools may strike a run again (a loaded machine's guest is slow): up to
    // three more runs of only the scenarios it struck.
    for again in 1..=3 {
        let raced = if rc == 0 {
            Vec::new()
        } else {
            raced(scenarios, &lab_out)
        };
        if raced.is_empty() {
            break;
        }
        // Only these scenarios, in a new guest: split_run replaces their files and leaves the others'.
        let names: Vec<&str> = raced.iter().map(|(name, _)| *name).collect();
        for (name, why) in &raced {
            eprintln!(
                "lab test: {name} failed on a known race of the guest's tools ({why}): running it again"
            );
        }
        run_log = out.join(format!("run-again-{again}.log"));
        rc = lab_run(&names, &lab_out, &run_log);
    }
    let logs: String = scenarios
        .iter()
        .map(|s| {
            format!(
                "--- {s}:\n{}\n",
                tail(&lab_out.join(s).join("perftest.log"), 40)
            )
        })
        .collect();
    assert_eq!(
        rc,
        0,
        "lab test: lab/run failed (exit {rc}). lab/run said:\n{}\n{logs}--- guest console (end):\n{}",
        tail(&run_log, 30),
        tail(&lab_out.join("_run/console.log"), 20)
    );
    (lab_out, t0.elapsed().as_secs_f64())
}

/// Failures of the guest's own tools, not of rocescope, that come now and then under QEMU's emulation and
/// that a second run clears: (scenario, a line its log then has, what happened).
const KNOWN_RACES: &[(&str, &str, &str)] = &[(
    "conn_write_cm",
    "Event: RDMA_CM_EVENT_REJECTED; error: 8.",
    "perftest's client sent the test QP's REQ before its server listened for it again: \
     a REJ with reason 8, invalid service ID",
)];

/// `lab/run SCENARIOS` into `lab_out` with this test's binary in the guest; its exit code.
fn lab_run(scenarios: &[&str], lab_out: &Path, run_log: &Path) -> i32 {
    let mut cmd = Command::new(root().join("lab/run"));
    cmd.args(scenarios)
        .env("EXTRA_BINARIES", bin())
        .env("LAB_OUT", lab_out)
        .env("LAB_TIMEOUT", LAB_TIMEOUT_SECS)
        .env("LAB_LOCK_WAIT", "240");
    run_logged(
        cmd,
        &format!("lab/run {}", scenarios.join(" ")),
        run_log,
        RUN_TIMEOUT,
    )
}

/// The scenarios of a run that failed, with what happened, when every one that failed (its log's
/// `@@@ LAB-END ... rc=N` not 0, or missing) failed on a known race; empty otherwise.
pub fn raced(scenarios: &[&str], lab_out: &Path) -> Vec<(&'static str, &'static str)> {
    let mut raced = Vec::new();
    for s in scenarios {
        let log = fs::read_to_string(lab_out.join(s).join("perftest.log")).unwrap_or_default();
        let ended_well = log
            .lines()
            .any(|l| l.starts_with("@@@ LAB-END ") && l.contains(" rc=0 "));
        if ended_well {
            continue;
        }
        match KNOWN_RACES
            .iter()
            .find(|(name, line, _)| name == s && log.lines().any(|l| l.trim() == *line))
        {
            Some(&(name, _, why)) => raced.push((name, why)),
            None => return Vec::new(),
        }
    }
    raced
}

/// A RoCE frame of a lab capture as tshark reads it: what the lab tests hold the injector's actions and the
/// NICs' reactions to.
#[derive(Debug, Clone)]
pub struct CableFrame {
    pub no: u64,
    pub src: String,
    pub ip_id: u64,
    pub ecn: u64,
    pub op: u64,
    pub psn: u64,
    pub syndrome: Option<u64>,
    /// Seconds since the epoch.
    pub t: f64,
}

/// The RoCE frames of `path`, in order.
pub fn cable(path: &Path) -> Vec<CableFrame> {
    let fields = [
        "frame.number",
        "ip.src",
        "ip.id",
        "ip.dsfield.ecn",
        "infiniband.bth.opcode",
        "infiniband.bth.psn",
        "infiniband.aeth.syndrome",
        "frame.time_epoch",
    ];
    tshark_fields(path, &fields)
        .into_iter()
        .filter(|r| !r[4].is_empty())
        .map(|r| CableFrame {
            no: number(&r[0]).unwrap(),
            src: r[1].clone(),
            ip_id: number(&r[2]).unwrap(),
            ecn: number(&r[3]).unwrap(),
            op: number(&r[4]).unwrap(),
            psn: number(&r[5]).unwrap(),
            syndrome: number(&r[6]),
            t: r[7].parse().unwrap(),
        })
        .collect()
}
