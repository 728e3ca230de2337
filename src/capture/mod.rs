//! `rocescope capture`: live capture with libpcap (the `pcap` crate), analysed as it arrives by the same
//! engine as `analyze`, optionally written to a file, optionally around a command (`-- COMMAND ARGS...`).
//!
//! The handle is non-blocking and waited on with poll(2) and a short timeout, so `--duration`, signals and
//! the status line work with no traffic at all (libpcap's TPACKET_V3 read can otherwise block forever).
pub mod live;
pub mod ring;
pub mod stats;
pub mod writer;

use std::io::{self, IsTerminal};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::process::{Child, ExitCode};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use parsers::parse_frame;

use crate::analysis::{Config, Engine};
use crate::report::Report;
pub use stats::{CaptureStats, CommandReport, Written};
use writer::{Format, Writer};

/// `rocescope capture` options.
#[derive(clap::Args, Debug, Clone)]
pub struct CaptureArgs {
    /// Interface to capture on (`any`: every interface, Linux cooked capture).
    #[arg(short = 'i', long = "interface", value_name = "IFACE")]
    pub interface: String,
    /// Capture filter (BPF, pcap-filter(7)) replacing the default: RoCEv2 to the UDP port, VLAN-tagged
    /// RoCEv2, RoCEv1 and MAC control (PFC/PAUSE).
    #[arg(short = 'f', long = "filter", value_name = "BPF")]
    pub filter: Option<String>,
    /// UDP destination port of RoCEv2 (the default filter and the decoder follow it).
    #[arg(long, default_value_t = parsers::udp::ROCEV2_PORT)]
    pub port: u16,
    /// Do not put the interface in promiscuous mode.
    #[arg(long)]
    pub no_promisc: bool,
    /// Kernel capture buffer size: bytes, or with K, M or G (binary).
    #[arg(long, value_name = "BYTES", value_parser = parse_size, default_value = "32M")]
    pub buffer_size: u32,
    /// Bytes kept of each frame; 128 keeps the headers (ICRCs are then reported unverifiable).
    #[arg(long, value_name = "BYTES", default_value_t = 262_144, value_parser = clap::value_parser!(u32).range(64..=262_144))]
    pub snaplen: u32,
    /// Also write the frames to FILE (pcap; pcapng when the name ends in .pcapng); `-` is standard output
    /// (the report then goes to standard error).
    #[arg(short = 'w', long = "write", value_name = "FILE")]
    pub write: Option<PathBuf>,
    /// Stop after N frames.
    #[arg(short = 'c', long = "count", value_name = "N")]
    pub count: Option<u64>,
    /// Stop after this many seconds.
    #[arg(long, value_name = "SECS", value_parser = parse_secs)]
    pub duration: Option<f64>,
    /// With a command: keep capturing this many seconds after it exits.
    #[arg(long, value_name = "SECS", default_value = "1", value_parser = parse_secs)]
    pub grace: f64,
    /// No status line and no start message on standard error.
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// The report as one JSON document (the analyze schema, plus `capture_stats`).
    #[arg(long)]
    pub json: bool,
    /// Path MTU in bytes (256, 512, 1024, 2048, 4096); inferred from full-size segments by default.
    #[arg(long, value_parser = parse_mtu)]
    pub mtu: Option<u32>,
    /// Link speed for turning pause quanta into time: 10G, 25G, 100G, 400G, or bits per second.
    #[arg(long, default_value = "100G", value_parser = crate::analyze::parse_speed)]
    pub link_speed: u64,
    /// A CE mark counts as answered by a CNP toward its sender within this many microseconds.
    #[arg(long, default_value_t = 1000, value_name = "US")]
    pub cnp_window_us: u64,
    /// Exit with status 3 when any of these is present (comma list): gaps, naks, rnr,
    /// retransmissions, ce, cnp, icrc, malformed.
    #[arg(long, value_name = "LIST", value_parser = crate::analyze::parse_fail_on)]
    pub fail_on: Option<FailOn>,
    /// Show the capture in the terminal UI as it runs (the same as `rocescope tui -i IFACE`): space pauses
    /// the display, w saves the frames.
    #[arg(long, conflicts_with_all = ["json", "command", "fail_on", "quiet"])]
    pub tui: bool,
    /// A command to run once the capture is active: the capture stops `--grace` seconds after it exits,
    /// and the exit status is the command's (unless --fail-on fires).
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// The `--fail-on` names (an alias, so that clap takes the list as one value).
pub type FailOn = Vec<&'static str>;

fn parse_mtu(s: &str) -> Result<u32, String> {
    match s.parse::<u32>() {
        Ok(m) if [256, 512, 1024, 2048, 4096].contains(&m) => Ok(m),
        _ => Err(format!(
            "'{s}' is not an InfiniBand path MTU (256, 512, 1024, 2048 or 4096)"
        )),
    }
}

/// Parses a byte size: `1048576`, `64K`, `32M`, `1G` (binary units).
pub fn parse_size(s: &str) -> Result<u32, String> {
    let t = s.trim();
    let (digits, scale) = match t.char_indices().last() {
        Some((i, 'K' | 'k')) => (&t[..i], 1u64 << 10),
        Some((i, 'M' | 'm')) => (&t[..i], 1 << 20),
        Some((i, 'G' | 'g')) => (&t[..i], 1 << 30),
        _ => (t, 1),
    };
    match digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
    {
        Some(n) if n > 0 && n <= i32::MAX as u64 => Ok(n as u32),
        _ => Err(format!("'{s}' is not a buffer size (try 64M)")),
    }
}

fn parse_secs(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.0..1e9).contains(&v) => Ok(v),
        _ => Err(format!("'{s}' is not a number of seconds")),
    }
}

/// The default capture filter for a RoCEv2 port: RoCEv2, VLAN-tagged RoCEv2 (Ethernet links only: libpcap
/// has no VLAN support on Linux cooked capture), RoCEv1 and MAC control (PAUSE, PFC).
pub fn default_filter(port: u16, ethernet: bool) -> String {
    if ethernet {
        format!(
            "udp dst port {port} or (vlan and udp dst port {port}) or ether proto 0x8915 or ether proto 0x8808"
        )
    } else {
        format!("udp dst port {port} or ether proto 0x8915 or ether proto 0x8808")
    }
}

/// The signal that asked us to stop (0: none).
static SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    SIGNAL.store(sig, Ordering::SeqCst);
}

fn install_signal_handlers() {
    // SAFETY: a handler that only stores into an atomic is async-signal-safe; sigaction is given a zeroed,
    // then filled, struct.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        sa.sa_flags = 0;
        libc::sigaction(libc::SIGINT, &sa, std::ptr::null_mut());
        libc::sigaction(libc::SIGTERM, &sa, std::ptr::null_mut());
    }
}

unsafe extern "C" {
    // In libpcap since 1.5; the pcap crate links it but does not expose it.
    fn pcap_get_tstamp_precision(p: *mut libc::c_void) -> libc::c_int;
}

fn now_nanos() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// Runs `rocescope capture`; returns the exit status. Errors are one line on standard error.
pub fn main(args: CaptureArgs) -> ExitCode {
    if args.tui {
        return match crate::tui::run_live(&args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("rocescope: {e}");
                ExitCode::from(1)
            }
        };
    }
    match run(&args) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("rocescope: {e}");
            ExitCode::from(1)
        }
    }
}

/// The kernel hands a block of frames over when it is full or this old (ms).
const BLOCK_TIMEOUT_MS: i32 = 100;
/// Reading on after a stop: the last block comes within the block timeout.
pub const DRAIN: Duration = Duration::from_millis(BLOCK_TIMEOUT_MS as u64 + 50);

/// Opens and activates the capture handle with the filter set, or says in one line what is wrong and how
/// to fix it.
fn open(args: &CaptureArgs) -> Result<(pcap::Capture<pcap::Active>, String), String> {
    let iface = args.interface.as_str();
    let devices = pcap::Device::list().unwrap_or_default();
    let device = devices.iter().find(|d| d.name == iface);
    if device.is_none() && iface != "any" {
        let mut names: Vec<&str> = devices.iter().map(|d| d.name.as_str()).collect();
        names.dedup();
        return Err(format!(
            "no such interface '{iface}' (available: {})",
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            }
        ));
    }
    if let Some(d) = device
        && iface != "any"
        && !d.flags.is_up()
    {
        return Err(format!(
            "interface '{iface}' is down (bring it up: ip link set {iface} up)"
        ));
    }
    // Not immediate mode: libpcap then uses TPACKET_V3, whose blocks pack frames by their length and are
    // handed over full or after the 100 ms timeout. Immediate mode's TPACKET_V2 ring has one slot of the
    // snaplen (~64 KiB) per frame: 512 frames in 32 MiB, and drops from 200,000 frames/s (benches/capture.sh).
    let cap = pcap::Capture::from_device(iface)
        .map_err(|e| format!("cannot capture on '{iface}': {e}"))?
        .promisc(!args.no_promisc)
        .snaplen(args.snaplen as i32)
        .buffer_size(args.buffer_size as i32)
        .timeout(BLOCK_TIMEOUT_MS)
        .precision(pcap::Precision::Nano);
    let cap = cap.open().map_err(|e| activation_error(iface, &e))?;
    let mut cap = cap
        .setnonblock()
        .map_err(|e| format!("cannot capture on '{iface}': {e}"))?;
    // `any`: Linux cooked capture v2 (it names the interface of each frame) when libpcap offers it.
    if iface == "any"
        && cap
            .list_datalinks()
            .is_ok_and(|l| l.contains(&pcap::Linktype(276)))
    {
        let _ = cap.set_datalink(pcap::Linktype(276));
    }
    let filter = match &args.filter {
        Some(f) => f.clone(),
        None => default_filter(args.port, cap.get_datalink().0 == 1),
    };
    cap.filter(&filter, true).map_err(|e| {
        let msg = match e {
            pcap::Error::PcapError(m) => m,
            other => other.to_string(),
        };
        format!("bad capture filter '{filter}': {msg} (see man 7 pcap-filter)")
    })?;
    Ok((cap, filter))
}

fn activation_error(iface: &str, e: &pcap::Error) -> String {
    let msg = match e {
        pcap::Error::PcapError(m) => m.clone(),
        other => other.to_string(),
    };
    let lower = msg.to_ascii_lowercase();
    if lower.contains("permission") || lower.contains("not permitted") || lower.is_empty() {
        let exe = std::env::current_exe()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| "rocescope".to_string());
        format!(
            "not permitted to capture on '{iface}' ({}): run as root, or give the binary the capabilities: \
             sudo setcap cap_net_raw,cap_net_admin=eip {exe}",
            if msg.is_empty() {
                "permission denied"
            } else {
                &msg
            }
        )
    } else if lower.contains("no such device") {
        format!("no such interface '{iface}' ({msg})")
    } else if lower.contains("not up") {
        format!("interface '{iface}' is down (bring it up: ip link set {iface} up)")
    } else {
        format!("cannot capture on '{iface}': {msg}")
    }
}

/// What the status line counts from.
#[derive(Default, Clone, Copy)]
struct Snapshot {
    frames: u64,
    roce: u64,
    bytes: u64,
}

fn status_line(
    engine: &Engine,
    last: Snapshot,
    secs: f64,
    elapsed: f64,
    pstats: Option<pcap::Stat>,
) -> (String, Snapshot) {
    let t = &engine.totals;
    let now = Snapshot {
        frames: t.frames,
        roce: t.roce_frames,
        bytes: t.bytes,
    };
    let rate = |a: u64, b: u64| (a - b) as f64 / secs.max(1e-3);
    let (mut gaps, mut naks, mut rnr, mut cnp, mut ce) = (0, 0, 0, 0, 0);
    for f in &engine.flows {
        gaps += f.psn.gap_events;
        naks += f.resp.naks.total();
        rnr += f.resp.rnr_naks;
        cnp += f.cnp;
        ce += f.ecn[3];
    }
    let drops = match pstats {
        Some(s) => format!(
            "drops {} (kernel) {} (interface) of {}",
            s.dropped, s.if_dropped, s.received
        ),
        None => "drops ?".to_string(),
    };
    let line = format!(
        "[{:>5.0}s] {} frames/s, {} RoCE/s, {}B/s | {} flows, gaps {gaps}, NAKs {naks}, RNR {rnr}, CNP {cnp}, CE {ce} | {drops}",
        elapsed,
        si(rate(now.frames, last.frames)),
        si(rate(now.roce, last.roce)),
        si(rate(now.bytes, last.bytes)),
        engine.flows.len(),
    );
    (line, now)
}

fn si(v: f64) -> String {
    if v >= 1e9 {
        format!("{:.1}G", v / 1e9)
    } else if v >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.0}")
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

/// Runs the capture; returns the exit status (0, the command's, or 3 for --fail-on; 1 after a write error).
pub fn run(args: &CaptureArgs) -> Result<u8, String> {
    let (mut cap, filter) = open(args)?;
    let linktype = cap.get_datalink().0 as u16;
    // SAFETY: the handle is live for the duration of the call.
    let nano = unsafe { pcap_get_tstamp_precision(cap.as_ptr().cast()) } == 1;
    let ts_scale: u64 = if nano { 1 } else { 1000 };
    let mut writer = match &args.write {
        Some(p) => Some(Writer::create(p, linktype, args.snaplen, &args.interface)?),
        None => None,
    };
    install_signal_handlers();
    let parse_cfg = parsers::Config {
        roce_port: args.port,
    };
    let mut engine = Engine::new(Config {
        mtu: args.mtu,
        link_speed_bps: args.link_speed,
        cnp_window_nanos: args.cnp_window_us.saturating_mul(1000),
        ..Default::default()
    });
    let status_on = !args.quiet;
    let tty = io::stderr().is_terminal();
    if status_on {
        eprintln!(
            "rocescope: capturing on {} (link type {linktype}), filter: {filter}",
            args.interface
        );
    }
    // The capture is active: now the command may start.
    let mut child: Option<Child> = None;
    let mut command: Option<CommandReport> = None;
    let mut command_start_ns = 0u64;
    if let Some((prog, rest)) = args.command.split_first() {
        command_start_ns = now_nanos();
        let c = std::process::Command::new(prog)
            .args(rest)
            .spawn()
            .map_err(|e| format!("cannot run '{prog}': {e}"))?;
        child = Some(c);
        command = Some(CommandReport {
            argv: args.command.clone(),
            start_time: command_start_ns as f64 / 1e9,
            end_time: None,
            exit_status: None,
            flows: Vec::new(),
        });
    }
    let start = Instant::now();
    let deadline = args.duration.map(|d| start + Duration::from_secs_f64(d));
    let grace = Duration::from_secs_f64(args.grace);
    let fd = cap.as_raw_fd();
    let mut number = 0u64;
    let mut next_status = start + Duration::from_secs(1);
    let mut last = Snapshot::default();
    let mut last_status = start;
    let mut write_error: Option<String> = None;
    let mut child_done: Option<Instant> = None;
    let mut signal_at: Option<Instant> = None;
    let mut status_shown = false;
    // A stop by signal, --duration or the command's end first reads on for DRAIN: the frames of the
    // kernel's current block
    let mut stopping: Option<(&str, Instant)> = None;
    let stopped_by: &str = 'capture: loop {
        let now = Instant::now();
        if let Some((why, until)) = stopping
            && now >= until
        {
            break why;
        }
        let sig = SIGNAL.load(Ordering::SeqCst);
        let why: Option<&'static str> = 'check: {
            if stopping.is_some() {
                break 'check None;
            }
            if sig != 0 {
                match &mut child {
                    // Pass it on, and wait (at most the grace period) for the command to end.
                    Some(c) if child_done.is_none() => {
                        if signal_at.is_none() {
                            // A terminal's Ctrl-C reaches the command too (same process group): pass on
                            // SIGTERM only.
                            if sig == libc::SIGTERM {
                                // SAFETY: kill(2) on our own child's pid.
                                unsafe { libc::kill(c.id() as libc::pid_t, sig) };
                            }
                            signal_at = Some(now);
                        }
                        if signal_at.is_some_and(|t| now >= t + grace.max(Duration::from_secs(1))) {
                            break 'check Some("signal");
                        }
                    }
                    _ => break 'check Some("signal"),
                }
            }
            if deadline.is_some_and(|d| now >= d) {
                break 'check Some("duration");
            }
            if let Some(c) = &mut child
                && child_done.is_none()
                && let Ok(Some(st)) = c.try_wait()
            {
                child_done = Some(now);
                if let Some(cr) = &mut command {
                    cr.end_time = Some(now_nanos() as f64 / 1e9);
                    cr.exit_status = Some(exit_status(st));
                }
            }
            if child_done.is_some_and(|t| now >= t + grace) {
                break 'check Some(if sig != 0 { "signal" } else { "command" });
            }
            None
        };
        if let Some(why) = why {
            stopping = Some((why, now + DRAIN));
        }
        // Wait for frames, at most 100 ms, then read what is there.
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        unsafe { libc::poll(&mut pfd, 1, 100) };
        let mut read = 0;
        loop {
            if args.count.is_some_and(|n| number >= n) {
                break 'capture "count";
            }
            match cap.next_packet() {
                Ok(p) => {
                    number += 1;
                    read += 1;
                    let h = p.header;
                    let ts = (h.ts.tv_sec as u64)
                        .saturating_mul(1_000_000_000)
                        .saturating_add((h.ts.tv_usec as u64).saturating_mul(ts_scale));
                    let frame = parse_frame(linktype, p.data, h.len as usize, &parse_cfg);
                    engine.ingest(number, ts, &frame);
                    if let Some(w) = &mut writer
                        && let Err(e) = w.write(ts, p.data, h.len)
                    {
                        write_error = Some(w.describe(&e));
                        break 'capture "write_error";
                    }
                }
                Err(pcap::Error::TimeoutExpired) => break,
                Err(e) => {
                    write_error = Some(format!("capture on '{}' failed: {e}", args.interface));
                    break 'capture "capture_error";
                }
            }
            if read >= 4096 {
                break;
            }
        }
        if args.count.is_some_and(|n| number >= n) {
            break "count";
        }
        let now = Instant::now();
        if now >= next_status {
            if let Some(w) = &mut writer
                && let Err(e) = w.flush()
            {
                write_error = Some(w.describe(&e));
                break "write_error";
            }
            if status_on {
                let secs = now.duration_since(last_status).as_secs_f64();
                let (line, snap) = status_line(
                    &engine,
                    last,
                    secs,
                    now.duration_since(start).as_secs_f64(),
                    cap.stats().ok(),
                );
                last = snap;
                if tty {
                    eprint!("\r\x1b[K{line}");
                } else {
                    eprintln!("{line}");
                }
                status_shown = true;
            }
            last_status = now;
            while next_status <= now {
                next_status += Duration::from_secs(1);
            }
        }
    };
    if status_shown && tty {
        eprintln!();
    }
    let pstats = cap.stats().ok();
    drop(cap);
    if let Some(w) = &mut writer
        && write_error.is_none()
        && let Err(e) = w.flush()
    {
        write_error = Some(w.describe(&e));
    }
    // The command, if still running (a signal it ignored): report it as such, leave it be.
    if let (Some(c), Some(cr)) = (&mut child, &mut command)
        && cr.exit_status.is_none()
        && let Ok(Some(st)) = c.try_wait()
    {
        cr.end_time = Some(now_nanos() as f64 / 1e9);
        cr.exit_status = Some(exit_status(st));
    }
    if let Some(e) = &write_error {
        eprintln!("rocescope: {e}");
    }
    engine.finish();
    if let Some(cr) = &mut command {
        cr.flows = engine
            .flows
            .iter()
            .enumerate()
            .filter(|(_, f)| f.first_ts >= command_start_ns)
            .map(|(i, _)| i as u32)
            .collect();
    }
    let mut report = Report::build(&engine, &format!("live capture on {}", args.interface));
    report.capture_stats = Some(CaptureStats {
        interface: args.interface.clone(),
        filter,
        snaplen: args.snaplen,
        promiscuous: !args.no_promisc,
        linktype,
        received: pstats.map_or(0, |s| u64::from(s.received)),
        dropped: pstats.map_or(0, |s| u64::from(s.dropped)),
        if_dropped: pstats.map_or(0, |s| u64::from(s.if_dropped)),
        stopped_by: stopped_by.to_string(),
        written: writer.as_ref().map(|w| Written {
            file: w.name.clone(),
            format: match w.format {
                Format::Pcap => "pcap",
                Format::PcapNg => "pcapng",
            },
            frames: w.frames,
            bytes: w.bytes,
            error: write_error.clone().filter(|_| stopped_by == "write_error"),
        }),
        command: command.clone(),
    });
    let to_stderr = args.write.as_deref() == Some(std::path::Path::new("-"));
    write_report(&report, args.json, to_stderr)?;
    let present = report.present();
    let fail_on = args.fail_on.clone().unwrap_or_default();
    if fail_on.iter().any(|c| present.contains(c)) {
        return Ok(3);
    }
    if write_error.is_some() {
        return Ok(1);
    }
    if let Some(cr) = &command {
        // Still running after a signal: the shell's status for that signal.
        let sig = SIGNAL.load(Ordering::SeqCst);
        let status = cr
            .exit_status
            .unwrap_or(if sig != 0 { 128 + sig } else { 1 });
        return Ok(u8::try_from(status.clamp(0, 255)).unwrap_or(1));
    }
    Ok(0)
}

fn write_report(report: &Report, json: bool, to_stderr: bool) -> Result<(), String> {
    if to_stderr {
        crate::report::write(io::stderr().lock(), report, json)
    } else {
        crate::report::write(io::stdout().lock(), report, json)
    }
}
