//! `rocescope gen`: a verbs traffic generator (libibverbs through the `sideway` crate, which loads
//! libibverbs.so.1 at run time: on a machine without RDMA only `gen` fails, the rest of rocescope works).
//!
//! `gen loopback`: RC QP pairs (`-q`) on two devices of one host in one process (no out-of-band exchange),
//! RDMA WRITE, SEND/RECV, RDMA READ, or the 8-byte atomics FETCH_ADD and COMPARE_SWAP, with a data check and
//! a report whose QPNs, PSN ranges and opcodes can be matched with a capture (`rocescope analyze --json`);
//! `--tclass` sets the GRH traffic class (the IP TOS on rxe: 2 = ECT(0)); `--capture` is the fabric check.

mod check;
mod loopback;
mod oob;
pub mod pattern;
pub mod plan;
mod remote;
mod run;
mod verbs;

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use clap::{Args, Subcommand, ValueEnum};

#[derive(Subcommand)]
pub enum GenCommand {
    /// Two RC QPs on two RDMA devices of this host, connected to each other in one process (no TCP
    /// exchange): the requester on the first posts to the responder on the second, with a data check.
    Loopback(LoopbackArgs),
    /// The responder of a two-host run: waits for `gen client` on a TCP port (default 18516), creates its
    /// QPs, checks the data it receives or is written, and sends the client a summary.
    Server(ServerArgs),
    /// The requester of a two-host run against `gen server HOST`: exchanges QPNs, PSNs, GIDs, MTU, R_Keys
    /// and buffer addresses over TCP, then posts as `gen loopback` does.
    Client(ClientArgs),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Op {
    Write,
    /// RDMA WRITE with immediate data (the message number): consumes a receive on the responder
    WriteImm,
    Send,
    Read,
    /// 8-byte atomic FETCH_ADD on an 8-byte-aligned remote word (-s is ignored: 8 bytes)
    FetchAdd,
    /// 8-byte atomic COMPARE_SWAP on an 8-byte-aligned remote word (-s is ignored: 8 bytes)
    CmpSwap,
}

impl Op {
    /// The two 8-byte atomics: one request packet and one ATOMIC_ACKNOWLEDGE per message.
    pub fn is_atomic(self) -> bool {
        matches!(self, Op::FetchAdd | Op::CmpSwap)
    }

    /// SEND and WRITE with immediate consume a receive work request on the responder.
    pub fn consumes_receive(self) -> bool {
        matches!(self, Op::Send | Op::WriteImm)
    }

    /// The operation as the verbs / the wire name it.
    pub fn name(self) -> &'static str {
        match self {
            Op::Write => "WRITE",
            Op::WriteImm => "WRITE_WITH_IMM",
            Op::Send => "SEND",
            Op::Read => "READ",
            Op::FetchAdd => "FETCH_ADD",
            Op::CmpSwap => "COMPARE_SWAP",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fault {
    BadRkey,
}

#[derive(Args, Debug, Clone)]
pub struct LoopbackArgs {
    /// The requester's RDMA device (e.g. rxe0).
    #[arg(short = 'd', long = "device", value_name = "DEV")]
    pub device: String,
    /// The responder's RDMA device (e.g. rxe1).
    #[arg(long = "peer-device", value_name = "DEV")]
    pub peer_device: String,
    #[command(flatten)]
    pub port: PortArgs,
    #[command(flatten)]
    pub work: WorkArgs,
}

#[derive(Args, Debug, Clone)]
pub struct ClientArgs {
    /// The server's host name or address (the out-of-band TCP exchange; the RDMA traffic goes between the
    /// two devices' GIDs).
    pub host: String,
    /// This host's RDMA device; by default the first one with a RoCE v2 IPv4-mapped GID on --ib-port.
    #[arg(short = 'd', long = "device", value_name = "DEV")]
    pub device: Option<String>,
    /// TCP port of the server's out-of-band exchange.
    #[arg(short = 'p', long = "port", default_value_t = remote::DEFAULT_PORT)]
    pub tcp_port: u16,
    /// Keep trying to reach the server for this many seconds (it may still be starting).
    #[arg(long = "connect-timeout", value_name = "SECS", default_value_t = 10.0, value_parser = parse_duration)]
    pub connect_timeout: f64,
    #[command(flatten)]
    pub port: PortArgs,
    #[command(flatten)]
    pub work: WorkArgs,
}

#[derive(Args, Debug, Clone)]
pub struct ServerArgs {
    /// This host's RDMA device; by default the first one with a RoCE v2 IPv4-mapped GID on --ib-port.
    #[arg(short = 'd', long = "device", value_name = "DEV")]
    pub device: Option<String>,
    /// TCP port of the out-of-band exchange.
    #[arg(short = 'p', long = "port", default_value_t = remote::DEFAULT_PORT)]
    pub tcp_port: u16,
    /// Address to listen on.
    #[arg(long, default_value = "0.0.0.0")]
    pub bind: String,
    /// Serve this many client runs, one after the other, then exit (0: until stopped).
    #[arg(long, default_value_t = 1)]
    pub runs: u32,
    #[command(flatten)]
    pub port: PortArgs,
    /// Give up a run when neither a completion nor a word from the client arrives for this many seconds.
    #[arg(long, default_value_t = 10.0, value_name = "SECS", value_parser = parse_duration)]
    pub timeout: f64,
    /// One JSON document per run.
    #[arg(long)]
    pub json: bool,
}

/// Where the traffic starts and ends on a device.
#[derive(Args, Debug, Clone)]
pub struct PortArgs {
    /// Port number on the device(s).
    #[arg(long = "ib-port", default_value_t = 1)]
    pub ib_port: u8,
    /// GID index; by default the RoCE v2 GID with an IPv4-mapped address (::ffff:a.b.c.d).
    #[arg(short = 'x', long = "gid-index", value_name = "GID_INDEX")]
    pub gid_index: Option<u8>,
}

/// What the requester posts, and how: shared by `gen loopback` and `gen client`.
#[derive(Args, Debug, Clone)]
pub struct WorkArgs {
    /// Operation the requester posts.
    #[arg(long, value_enum, default_value_t = Op::Write)]
    pub op: Op,
    /// Message size in bytes (the atomics always move 8 bytes).
    #[arg(short = 's', long, default_value_t = 65536, value_parser = clap::value_parser!(u32).range(1..=(1 << 30)))]
    pub size: u32,
    /// Number of messages (per QP pair).
    #[arg(short = 'n', long = "iters", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    pub iters: u64,
    /// Instead of -n: post for this many seconds, then stop posting and wait for the messages in flight
    /// (the report says which way the run ended and how many messages that was).
    #[arg(long, value_name = "SECS", conflicts_with = "iters", value_parser = parse_duration)]
    pub duration: Option<f64>,
    /// Pace the posting (over all QP pairs): R messages per second, or a payload bit rate in Gb/s with a
    /// `g` suffix (`2g`); the report gives the target and the rate achieved. By default, as fast as the
    /// window (--depth) allows.
    #[arg(long, value_name = "R", value_parser = plan::Rate::parse)]
    pub rate: Option<plan::Rate>,
    /// QP pairs, each with its own PSNs, each running -n messages (posted round-robin across the pairs).
    #[arg(short = 'q', long = "qps", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub qps: u32,
    /// Messages in flight at most per QP (send queue depth).
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub depth: u32,
    /// Path MTU in bytes (256..4096); by default the smaller active MTU of the two ports. One larger than
    /// the network device allows is refused.
    #[arg(long, value_parser = parse_mtu)]
    pub mtu: Option<u32>,
    /// Traffic class of the GRH (0..255); rxe copies it into the IP TOS byte: 2 is ECN ECT(0), so that an
    /// ECN-capable queue marks CE instead of dropping.
    #[arg(long, default_value_t = 0, value_name = "T")]
    pub tclass: u8,
    /// QP timeout exponent (4.096 us * 2^N); 17 is about 0.5 s (rxe in a slow guest retransmits
    /// spuriously with 14).
    #[arg(long = "qp-timeout", default_value_t = 17, value_parser = clap::value_parser!(u8).range(1..=31))]
    pub qp_timeout: u8,
    /// Retransmissions after a timeout or a sequence NAK before the QP fails with "retry counter exceeded"
    /// (0..7).
    #[arg(long = "retry-count", default_value_t = 7, value_parser = clap::value_parser!(u8).range(0..=7))]
    pub retry_count: u8,
    /// Retries after an RNR NAK (0..7; 7 retries for ever).
    #[arg(long = "rnr-retry", default_value_t = 7, value_parser = clap::value_parser!(u8).range(0..=7))]
    pub rnr_retry: u8,
    /// Give up when no completion arrives for this many seconds.
    #[arg(long, default_value_t = 10.0, value_name = "SECS")]
    pub timeout: f64,
    /// One JSON document (with the QPNs and PSN ranges, to match a capture).
    #[arg(long)]
    pub json: bool,
    /// Fault injection, for testing what sees the traffic: `bad-rkey` posts the last message (WRITE or READ)
    /// with a wrong R_Key; the responder answers with a NAK (remote access error) and the run ends with
    /// IBV_WC_REM_ACCESS_ERR (exit 1).
    #[arg(long, value_enum, value_name = "FAULT")]
    pub fault: Option<Fault>,
    /// The fabric check: capture on IFACE (as `rocescope capture -i IFACE`, default filter) from before
    /// the first work request until --capture-grace after the last completion, then check that every flow
    /// of the run is on the wire with its PSN range, that the request packets number what was posted, and
    /// that there is no PSN gap, NAK or retransmission (CE marks and CNPs are reported, not failing).
    /// Prints the capture's analysis and a last line `FABRIC CHECK: PASS` or `FABRIC CHECK: FAIL: ...`
    /// (with --json: the document gets a `capture` key, the line goes to standard error). Exit status 3 on
    /// FAIL.
    #[arg(long, value_name = "IFACE")]
    pub capture: Option<String>,
    /// With --capture: keep capturing this many seconds after the last completion.
    #[arg(long, value_name = "SECS", default_value_t = 0.5, requires = "capture", value_parser = parse_grace)]
    pub capture_grace: f64,
}

fn parse_grace(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.0..=60.0).contains(&v) => Ok(v),
        _ => Err(format!("'{s}' is not a number of seconds from 0 to 60")),
    }
}

fn parse_duration(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v <= 86400.0 => Ok(v),
        _ => Err(format!(
            "'{s}' is not a number of seconds above 0 (at most 86400)"
        )),
    }
}

fn parse_mtu(s: &str) -> Result<u32, String> {
    match s.parse::<u32>() {
        Ok(m) if [256, 512, 1024, 2048, 4096].contains(&m) => Ok(m),
        _ => Err(format!(
            "'{s}' is not an InfiniBand path MTU (256, 512, 1024, 2048 or 4096)"
        )),
    }
}

pub fn main(cmd: GenCommand) -> ExitCode {
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
        GenCommand::Loopback(args) => requester(&args.work, &stop, |s| loopback::run(&args, s)),
        GenCommand::Client(args) => requester(&args.work, &stop, |s| remote::client(&args, s)),
        GenCommand::Server(args) => match remote::serve(&args, &stop) {
            Ok(true) => ExitCode::SUCCESS,
            Ok(false) => ExitCode::from(1),
            Err(e) => {
                eprintln!("rocescope: gen server: {e}");
                ExitCode::from(1)
            }
        },
    }
}

/// Exit status of a requester run: 0, 1 on an error, 130 when interrupted; --capture adds 3 on FAIL.
fn requester(
    w: &WorkArgs,
    stop: &AtomicBool,
    run: impl FnOnce(&AtomicBool) -> Result<run::Report, String>,
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
            eprintln!("rocescope: gen: {e}");
            ExitCode::from(1)
        }
    }
}

fn exit_status(r: &run::Report) -> ExitCode {
    if r.stopped_by == "signal" {
        ExitCode::from(130)
    } else if r.error.is_some() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// The `capture` key of the JSON document: the capture's report and the fabric check.
#[derive(serde::Serialize)]
struct CaptureSection<'a> {
    report: &'a rocescope::report::Report,
    check: &'a check::Check,
}

#[derive(serde::Serialize)]
struct WithCapture<'a> {
    #[serde(flatten)]
    generator: &'a run::Report,
    capture: CaptureSection<'a>,
}

/// `--capture IFACE`: exit 0 on PASS, 3 on FAIL, 1 when the generator or the capture failed.
fn with_capture(
    w: &WorkArgs,
    iface: &str,
    stop: &AtomicBool,
    run: impl FnOnce(&AtomicBool) -> Result<run::Report, String>,
) -> ExitCode {
    // the capture is active before the generator opens a device, let alone posts
    let running = match check::start(iface, w.mtu) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("rocescope: gen: {e}");
            return ExitCode::from(1);
        }
    };
    let report = match run(stop) {
        Ok(r) => r,
        Err(e) => {
            running.abort();
            eprintln!("rocescope: gen: {e}");
            return ExitCode::from(1);
        }
    };
    let captured = match running.finish(Duration::from_secs_f64(w.capture_grace)) {
        Ok(c) => c,
        Err(e) => {
            print_report(&report, w.json);
            eprintln!("rocescope: gen: --capture {iface}: {e}");
            return ExitCode::from(1);
        }
    };
    let result = check::verify(&report, &captured);
    if w.json {
        let doc = WithCapture {
            generator: &report,
            capture: CaptureSection {
                report: &captured,
                check: &result,
            },
        };
        println!(
            "{}",
            serde_json::to_string_pretty(&doc).expect("report serializes")
        );
        if let Some(e) = &report.error {
            eprintln!("rocescope: gen: {e}");
        }
        eprintln!("{}", result.line);
    } else {
        print_report(&report, false);
        println!();
        let mut out = std::io::stdout().lock();
        if let Err(e) = rocescope::report::text::write(&mut out, &captured) {
            eprintln!("rocescope: gen: cannot write the capture report: {e}");
            return ExitCode::from(1);
        }
        drop(out);
        for l in check::detail_lines(&result) {
            println!("{l}");
        }
        println!("{}", result.line);
    }
    if report.error.is_some() || report.stopped_by == "signal" {
        exit_status(&report)
    } else if result.status == "pass" {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(3)
    }
}

fn print_report(r: &run::Report, json: bool) {
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(r).expect("report serializes")
        );
    } else {
        for e in r.pairs.iter().flat_map(|p| [&p.requester, &p.responder]) {
            println!(
                "{} port {}: QPN {:#08x}, GID index {} {} ({}), SQ PSN {}, RQ PSN {}",
                e.device, e.port, e.qpn, e.gid_index, e.gid, e.gid_choice, e.sq_psn, e.rq_psn
            );
        }
        if r.qps > 1 {
            println!("{} QP pairs, each:", r.qps);
        }
        println!(
            "{} {} x {} bytes, depth {}, path MTU {} ({}), QP timeout {}",
            r.op.name(),
            r.iterations,
            r.size,
            r.depth,
            r.mtu,
            r.mtu_source,
            r.qp_timeout
        );
        for f in &r.flows {
            println!(
                "flow {} -> {} QP {:#08x} ({}): PSN {}..{} ({} packets)",
                f.src.as_deref().unwrap_or("?"),
                f.dst.as_deref().unwrap_or("?"),
                f.dest_qp,
                f.role,
                f.psn_first,
                f.psn_last,
                f.packets
            );
        }
        match (r.stopped_by, r.duration) {
            ("signal", _) => println!(
                "interrupted after {:.6} s of posting; drained the messages in flight",
                r.posting_seconds
            ),
            (_, Some(d)) => println!(
                "stopped by --duration {d} s: posted for {:.6} s, then drained the messages in flight",
                r.posting_seconds
            ),
            _ => println!("stopped by -n {}", r.iterations),
        }
        println!(
            "{} messages, {} bytes in {:.6} s: {:.3} Gb/s, {:.0} messages/s",
            r.messages, r.bytes, r.seconds, r.gbps, r.messages_per_sec
        );
        if let Some(p) = &r.rate {
            println!(
                "rate: target {} ({:.0} messages/s, {:.3} Gb/s), achieved {:.0} messages/s, {:.3} Gb/s",
                p.requested, p.target_messages_per_sec, p.target_gbps, r.messages_per_sec, r.gbps
            );
        }
        println!(
            "latency (post to completion) us: p50 {:.1}, p99 {:.1}, max {:.1}",
            r.latency_us.p50, r.latency_us.p99, r.latency_us.max
        );
        if let Some(s) = &r.server {
            println!(
                "server: {} messages received, {} WRITE slots checked in its memory",
                s.received, s.memory_checked
            );
        }
        println!(
            "completion errors: {}; data check: {} ({} checked, {} mismatches)",
            r.completion_errors, r.data_check.status, r.data_check.checked, r.data_check.mismatches
        );
    }
    if let Some(e) = &r.error {
        eprintln!("rocescope: gen: {e}");
    }
}
