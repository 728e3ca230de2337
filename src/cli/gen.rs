//! The flags of `rocescope gen`, and their conversion to the generator's configuration
//! (src/generator/config.rs, whose defaults they show).

use clap::builder::PossibleValue;
use clap::{Args, Subcommand, ValueEnum};

use super::values::{ValueError, parse_mtu};
use rocescope::mesh::plan::{Pattern, PatternError};
use rocescope::mesh::verdict::{Expect, Speed, parse_speed};

use crate::generator::config::{
    AgentConfig, ClientConfig, Command, DEFAULT_TCP_PORT, LoopbackConfig, MeshConfig, PortConfig,
    Probe, ServerConfig, SourcePorts, WorkConfig,
};
use crate::generator::plan::Rate;
use crate::generator::records::{Fault, Op};

#[derive(Subcommand)]
pub enum GenCommand {
    /// Two RC QPs on two RDMA devices of this host, connected to each other in one process (no TCP
    /// exchange): the requester on the first posts to the responder on the second, with a data check.
    Loopback(LoopbackArgs),
    /// The responder of a two-host run: waits for `gen client` on a TCP port (default 18516), creates its
    /// QPs, checks the data it receives or is written, and sends the client a summary.
    Server(ServerArgs),
    /// The requester of a two-host run against `gen server` running on HOST (`gen client HOST`): exchanges
    /// QPNs, PSNs, GIDs, MTU, R_Keys and buffer addresses over TCP, then posts as `gen loopback` does.
    Client(ClientArgs),
    /// A host's part in `gen mesh`: serves other hosts' requesters as `gen server` does (several at once,
    /// until stopped) and runs the requesters `gen mesh` asks for, against other hosts' agents, on the same
    /// TCP port (default 18516).
    Agent(AgentArgs),
    /// Validate a fabric: run a pattern of pairs (every pair, a ring, incast N:1, all-to-all, bisection)
    /// across the hosts of --hosts FILE, each running `gen agent`; judge every pair against the
    /// expectations, print the matrix and the smallest set of hosts, NICs, links and switches that explains
    /// the failing pairs. Exit status 3 when a pair fails.
    Mesh(MeshArgs),
}

impl ValueEnum for Op {
    fn value_variants<'a>() -> &'a [Self] {
        &[
            Op::Write,
            Op::WriteImm,
            Op::Send,
            Op::Read,
            Op::FetchAdd,
            Op::CmpSwap,
        ]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(match self {
            Op::Write => PossibleValue::new("write"),
            Op::WriteImm => PossibleValue::new("write-imm").help(
                "RDMA WRITE with immediate data (the message number): consumes a receive on the responder",
            ),
            Op::Send => PossibleValue::new("send"),
            Op::Read => PossibleValue::new("read"),
            Op::FetchAdd => PossibleValue::new("fetch-add").help(
                "8-byte atomic FETCH_ADD on an 8-byte-aligned remote word (-s is ignored: 8 bytes)",
            ),
            Op::CmpSwap => PossibleValue::new("cmp-swap").help(
                "8-byte atomic COMPARE_SWAP on an 8-byte-aligned remote word (-s is ignored: 8 bytes)",
            ),
        })
    }
}

impl ValueEnum for Fault {
    fn value_variants<'a>() -> &'a [Self] {
        &[Fault::BadRkey, Fault::WrongQpn, Fault::NoReceive]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        let v = PossibleValue::new(self.name());
        Some(match self {
            Fault::BadRkey => v.help(
                "the last message (WRITE or READ) with a wrong R_Key: a NAK (remote access error), \
                 IBV_WC_REM_ACCESS_ERR",
            ),
            Fault::WrongQpn => v.help(
                "gen loopback: the requester QP connected to the responder's QPN + 0x100, which no QP has: \
                 nothing answers, --retry-count resends, IBV_WC_RETRY_EXC_ERR",
            ),
            Fault::NoReceive => v.help(
                "gen loopback, --op send or write-imm: the responder posts no receives: RNR NAKs until \
                 --rnr-retry is used up, IBV_WC_RNR_RETRY_EXC_ERR",
            ),
        })
    }
}

#[derive(Args, Debug, Clone)]
pub struct LoopbackArgs {
    /// The requester's RDMA device (e.g. rxe0).
    #[arg(short = 'd', long = "device", value_name = "DEV")]
    pub device: String,
    /// The responder's RDMA device (e.g. rxe1).
    #[arg(long = "peer-device", value_name = "DEV")]
    pub peer_device: String,
    /// The responder's RNR NAK timer (0..31, IBTA's encoding: 12 is 0.64 ms, 28 is 163.84 ms, 0 is
    /// 655.36 ms): how long its RNR NAKs tell the requester to wait before it retries.
    #[arg(long = "min-rnr-timer", value_name = "N", default_value_t = LoopbackConfig::DEFAULT_MIN_RNR_TIMER, value_parser = clap::value_parser!(u8).range(0..=31))]
    pub min_rnr_timer: u8,
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
    #[arg(short = 'p', long = "port", default_value_t = DEFAULT_TCP_PORT)]
    pub tcp_port: u16,
    /// Keep trying to reach the server for this many seconds (it may still be starting).
    #[arg(long = "connect-timeout", value_name = "SECS", default_value_t = ClientConfig::DEFAULT_CONNECT_TIMEOUT, value_parser = parse_duration)]
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
    #[arg(short = 'p', long = "port", default_value_t = DEFAULT_TCP_PORT)]
    pub tcp_port: u16,
    /// Address to listen on.
    #[arg(long, default_value = ServerConfig::DEFAULT_BIND)]
    pub bind: String,
    /// Serve this many client runs, one after the other, then exit (0: until stopped).
    #[arg(long, default_value_t = ServerConfig::DEFAULT_RUNS)]
    pub runs: u32,
    #[command(flatten)]
    pub port: PortArgs,
    /// Give up a run when neither a completion nor a word from the client arrives for this many seconds.
    #[arg(long, default_value_t = ServerConfig::DEFAULT_TIMEOUT, value_name = "SECS", value_parser = parse_duration)]
    pub timeout: f64,
    /// One JSON document per run.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug, Clone)]
pub struct AgentArgs {
    #[command(flatten)]
    pub serve: ServerArgs,
    /// Keep trying to reach a task's peer agent for this many seconds.
    #[arg(long = "connect-timeout", value_name = "SECS", default_value_t = ClientConfig::DEFAULT_CONNECT_TIMEOUT, value_parser = parse_duration)]
    pub connect_timeout: f64,
    /// Capture each task's traffic on IFACE (as `gen client --capture`) and add the fabric check to its
    /// outcome: a pair whose check fails fails.
    #[arg(long, value_name = "IFACE")]
    pub capture: Option<String>,
}

#[derive(Args, Debug, Clone)]
pub struct MeshArgs {
    /// The hosts: one per line, `NAME ADDRESS[:PORT]` or `ADDRESS[:PORT]`, `#` comments; each runs
    /// `rocescope gen agent` (the address is also where its RDMA device's GID is reached).
    #[arg(long, value_name = "FILE")]
    pub hosts: std::path::PathBuf,
    /// pairs (every ordered pair, --per-host at a time), ring, 'incast N:1' (N hosts to one at once, each
    /// host the receiver in turn), all-to-all (every pair at once) or bisection (the first half of the
    /// hosts with the second, both ways at once).
    #[arg(long, default_value = "pairs", value_parser = parse_pattern)]
    pub pattern: Pattern,
    /// With --pattern pairs: the pairs a host takes part in at a time (as requester or responder).
    #[arg(long = "per-host", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub per_host: u32,
    /// The fabric as JSON, to locate the failing pairs' cause: {"hosts": {"NAME": {"nic": "mlx5_0", "tor":
    /// "tor1"}}, "spines": ["spine1", ...], "paths": [{"src": "a", "dst": "b", "via": ["COMPONENT", ...]}]}.
    /// Without it the suspects are hosts.
    #[arg(long, value_name = "FILE")]
    pub topology: Option<std::path::PathBuf>,
    /// Each pair at least this fast: Gb/s (25), or a share of the requester's link speed (90%).
    #[arg(long = "expect-gbps", value_name = "GBPS|N%", value_parser = parse_speed)]
    pub expect_gbps: Option<Speed>,
    /// Each pair's 99th percentile completion latency at most this many microseconds.
    #[arg(long = "expect-p99-us", value_name = "US", value_parser = parse_positive)]
    pub expect_p99_us: Option<f64>,
    /// No retransmission, NAK, timeout or CE mark: none of the ports' loss counters may move (rxe's and
    /// mlx5's names, docs/cli.md).
    #[arg(long)]
    pub lossless: bool,
    /// The agents' TCP port, for hosts the file gives none.
    #[arg(short = 'p', long = "port", default_value_t = DEFAULT_TCP_PORT)]
    pub tcp_port: u16,
    /// Also write the matrix as an SVG heat map.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<std::path::PathBuf>,
    /// Also write the pairs as a Parquet table (`mesh`: one row per pair, the JSON's fields by their paths)
    /// for the fleet jobs (jobs/spark/mesh.py, jobs/duckdb/mesh.sql).
    #[arg(long, value_name = "FILE")]
    pub parquet: Option<std::path::PathBuf>,
    /// Keep trying to reach an agent for this many seconds.
    #[arg(long = "connect-timeout", value_name = "SECS", default_value_t = ClientConfig::DEFAULT_CONNECT_TIMEOUT, value_parser = parse_duration)]
    pub connect_timeout: f64,
    /// Probe mode instead of --pattern: window after window, each host sends 64-byte WRITEs, one at a time,
    /// to --probe-targets others at --probe-rate a second each; every window's RTTs and verdicts (use
    /// --expect-p99-us, --lossless) as a report of its own (one JSON document per line with --json).
    #[arg(long, conflicts_with_all = ["pattern", "per_host"])]
    pub probe: bool,
    /// With --probe: seconds per window.
    #[arg(long, value_name = "SECS", default_value_t = 30.0, requires = "probe", value_parser = parse_duration)]
    pub window: f64,
    /// With --probe: windows to run (0: until stopped).
    #[arg(long, default_value_t = 0, requires = "probe")]
    pub windows: u64,
    /// With --probe: probes a second to each target (at most 100).
    #[arg(long = "probe-rate", value_name = "R", default_value_t = 2.0, requires = "probe", value_parser = parse_probe_rate)]
    pub probe_rate: f64,
    /// With --probe: targets each host probes at once (the next ones each window, until every pair was).
    #[arg(long = "probe-targets", value_name = "N", default_value_t = 8, requires = "probe", value_parser = clap::value_parser!(u32).range(1..=32))]
    pub probe_targets: u32,
    #[command(flatten)]
    pub work: WorkArgs,
}

fn parse_probe_rate(s: &str) -> Result<f64, ValueError> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v <= 100.0 => Ok(v),
        _ => Err(not(
            s,
            "probes a second to each target, above 0 and at most 100",
        )),
    }
}

fn parse_pattern(s: &str) -> Result<Pattern, String> {
    s.parse().map_err(|e: PatternError| e.to_string())
}

fn parse_positive(s: &str) -> Result<f64, ValueError> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v.is_finite() => Ok(v),
        _ => Err(not(s, "a positive number")),
    }
}

/// Where the traffic starts and ends on a device.
#[derive(Args, Debug, Clone)]
pub struct PortArgs {
    /// Port number on the device(s).
    #[arg(long = "ib-port", default_value_t = PortConfig::DEFAULT.ib_port)]
    pub ib_port: u8,
    /// GID index; by default the RoCE v2 GID with an IPv4-mapped address (::ffff:a.b.c.d).
    #[arg(short = 'x', long = "gid-index", value_name = "GID_INDEX")]
    pub gid_index: Option<u8>,
}

/// What the requester posts, and how: shared by `gen loopback` and `gen client`.
#[derive(Args, Debug, Clone)]
pub struct WorkArgs {
    /// Operation the requester posts.
    #[arg(long, value_enum, default_value_t = WorkConfig::DEFAULT.op)]
    pub op: Op,
    /// Message size in bytes (the atomics always move 8 bytes).
    #[arg(short = 's', long, default_value_t = WorkConfig::DEFAULT.size, value_parser = clap::value_parser!(u32).range(1..=(1 << 30)))]
    pub size: u32,
    /// Number of messages (per QP pair).
    #[arg(short = 'n', long = "iters", default_value_t = WorkConfig::DEFAULT.iters, value_parser = clap::value_parser!(u64).range(1..))]
    pub iters: u64,
    /// Instead of -n: post for this many seconds, then stop posting and wait for the messages in flight
    /// (the report says which way the run ended and how many messages that was).
    #[arg(long, value_name = "SECS", conflicts_with = "iters", value_parser = parse_duration)]
    pub duration: Option<f64>,
    /// Pace the posting (over all QP pairs): R messages per second, or a payload bit rate in Gb/s with a
    /// `g` suffix (`2g`); the report gives the target and the rate achieved. By default, as fast as the
    /// window (--depth) allows.
    #[arg(long, value_name = "R", value_parser = parse_rate)]
    pub rate: Option<Rate>,
    /// QP pairs, each with its own PSNs, each running -n messages (posted round-robin across the pairs).
    #[arg(short = 'q', long = "qps", default_value_t = WorkConfig::DEFAULT.qps, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub qps: u32,
    /// Messages in flight at most per QP (send queue depth).
    #[arg(long, default_value_t = WorkConfig::DEFAULT.depth, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub depth: u32,
    /// Path MTU in bytes (256..4096); by default the smaller active MTU of the two ports. One larger than
    /// the network device allows is refused.
    #[arg(long, value_parser = parse_mtu)]
    pub mtu: Option<u32>,
    /// Traffic class of the GRH (0..255); rxe copies it into the IP TOS byte: 2 is ECN ECT(0), so that an
    /// ECN-capable queue marks CE instead of dropping.
    #[arg(long, default_value_t = WorkConfig::DEFAULT.tclass, value_name = "T")]
    pub tclass: u8,
    /// UDP source port of the QPs (49152-65535), or a range FIRST-LAST that QP pair i takes port FIRST + i
    /// of (wrapping): one port for every QP makes the ECMP entropy none. Through the GRH flow label, which
    /// rxe turns into the port (loopback only).
    #[arg(long = "source-port", value_name = "PORT[-LAST]", value_parser = parse_source_ports)]
    pub source_ports: Option<SourcePorts>,
    /// QP timeout exponent (4.096 us * 2^N); 17 is about 0.5 s (rxe in a slow guest retransmits
    /// spuriously with 14).
    #[arg(long = "qp-timeout", default_value_t = WorkConfig::DEFAULT.qp_timeout, value_parser = clap::value_parser!(u8).range(1..=31))]
    pub qp_timeout: u8,
    /// Retransmissions after a timeout or a sequence NAK before the QP fails with "retry counter exceeded"
    /// (0..7).
    #[arg(long = "retry-count", default_value_t = WorkConfig::DEFAULT.retry_count, value_parser = clap::value_parser!(u8).range(0..=7))]
    pub retry_count: u8,
    /// Retries after an RNR NAK (0..7; 7 retries for ever).
    #[arg(long = "rnr-retry", default_value_t = WorkConfig::DEFAULT.rnr_retry, value_parser = clap::value_parser!(u8).range(0..=7))]
    pub rnr_retry: u8,
    /// Give up when no completion arrives for this many seconds.
    #[arg(long, default_value_t = WorkConfig::DEFAULT.timeout, value_name = "SECS")]
    pub timeout: f64,
    /// One JSON document (with the QPNs and PSN ranges, to match a capture).
    #[arg(long)]
    pub json: bool,
    /// Fault injection, for testing what sees the traffic; the run ends with the completion error (exit 1)
    /// and the report names the fault and the QPNs or keys it used (`fault`, `fault_detail`, `dest_qpn`).
    /// `bad-rkey` posts the last message (WRITE or READ) with a wrong R_Key: the responder answers with a
    /// NAK (remote access error), IBV_WC_REM_ACCESS_ERR. `wrong-qpn` (gen loopback) connects the requester
    /// QP to the responder's QPN + 0x100, which no QP has: the requests go out, nothing answers, and after
    /// --retry-count resends (on the --qp-timeout timer) IBV_WC_RETRY_EXC_ERR. `no-receive` (gen loopback,
    /// --op send or write-imm): the responder posts no receive work requests: RNR NAKs until --rnr-retry is
    /// used up, IBV_WC_RNR_RETRY_EXC_ERR. With a retry count of 7 (the default) rxe retries for ever.
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
    #[arg(long, value_name = "SECS", default_value_t = WorkConfig::DEFAULT.capture_grace, requires = "capture", value_parser = parse_grace)]
    pub capture_grace: f64,
}

/// `'ARG' is not WHAT`.
fn not(arg: &str, what: &'static str) -> ValueError {
    ValueError::Not {
        arg: arg.to_string(),
        what,
    }
}

/// `--source-port PORT` or `FIRST-LAST`, within 49152-65535.
fn parse_source_ports(s: &str) -> Result<SourcePorts, ValueError> {
    let what = "a UDP source port from 49152 to 65535, or a range FIRST-LAST of them";
    let port = |t: &str| {
        t.trim()
            .parse::<u16>()
            .ok()
            .filter(|p| *p >= SourcePorts::MIN)
    };
    let (first, last) = match s.split_once('-') {
        Some((a, b)) => (port(a), port(b)),
        None => (port(s), port(s)),
    };
    match (first, last) {
        (Some(first), Some(last)) if first <= last => Ok(SourcePorts { first, last }),
        _ => Err(not(s, what)),
    }
}

fn parse_grace(s: &str) -> Result<f64, ValueError> {
    match s.parse::<f64>() {
        Ok(v) if (0.0..=60.0).contains(&v) => Ok(v),
        _ => Err(not(s, "a number of seconds from 0 to 60")),
    }
}

fn parse_duration(s: &str) -> Result<f64, ValueError> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v <= 86400.0 => Ok(v),
        _ => Err(not(s, "a number of seconds above 0 (at most 86400)")),
    }
}

/// `--rate`: `R` (messages per second) or `Rg` (Gb/s of payload, `2g`, `0.5G`); positive and finite.
fn parse_rate(s: &str) -> Result<Rate, ValueError> {
    let t = s.trim();
    let (num, gbps) = match t.strip_suffix(['g', 'G']) {
        Some(n) => (n, true),
        None => (t, false),
    };
    match num.parse::<f64>() {
        Ok(v) if v > 0.0 && v.is_finite() => Ok(if gbps {
            Rate::Gbps(v)
        } else {
            Rate::MessagesPerSec(v)
        }),
        _ => Err(not(
            s,
            "a rate: messages per second (1000) or Gb/s with a g suffix (2g)",
        )),
    }
}

impl From<GenCommand> for Command {
    fn from(c: GenCommand) -> Command {
        match c {
            GenCommand::Loopback(a) => Command::Loopback(a.into()),
            GenCommand::Server(a) => Command::Server(a.into()),
            GenCommand::Client(a) => Command::Client(a.into()),
            GenCommand::Agent(a) => Command::Agent(AgentConfig {
                serve: ServerConfig {
                    runs: 0,
                    ..a.serve.into()
                },
                connect_timeout: a.connect_timeout,
                capture: a.capture,
            }),
            GenCommand::Mesh(a) => Command::Mesh(MeshConfig {
                hosts: a.hosts,
                topology: a.topology,
                pattern: a.pattern,
                per_host: a.per_host as usize,
                expect: Expect {
                    gbps: a.expect_gbps,
                    p99_us: a.expect_p99_us,
                    lossless: a.lossless,
                    // probes only: set per window from the window and the rate
                    min_messages: None,
                },
                tcp_port: a.tcp_port,
                svg: a.svg,
                parquet: a.parquet,
                connect_timeout: a.connect_timeout,
                probe: a.probe.then_some(Probe {
                    window: a.window,
                    windows: a.windows,
                    rate: a.probe_rate,
                    targets: a.probe_targets as usize,
                }),
                work: a.work.into(),
            }),
        }
    }
}

impl From<LoopbackArgs> for LoopbackConfig {
    fn from(a: LoopbackArgs) -> LoopbackConfig {
        LoopbackConfig {
            device: a.device,
            peer_device: a.peer_device,
            min_rnr_timer: a.min_rnr_timer,
            port: a.port.into(),
            work: a.work.into(),
        }
    }
}

impl From<ClientArgs> for ClientConfig {
    fn from(a: ClientArgs) -> ClientConfig {
        ClientConfig {
            host: a.host,
            device: a.device,
            tcp_port: a.tcp_port,
            connect_timeout: a.connect_timeout,
            port: a.port.into(),
            work: a.work.into(),
        }
    }
}

impl From<ServerArgs> for ServerConfig {
    fn from(a: ServerArgs) -> ServerConfig {
        ServerConfig {
            device: a.device,
            tcp_port: a.tcp_port,
            bind: a.bind,
            runs: a.runs,
            port: a.port.into(),
            timeout: a.timeout,
            json: a.json,
        }
    }
}

impl From<PortArgs> for PortConfig {
    fn from(a: PortArgs) -> PortConfig {
        PortConfig {
            ib_port: a.ib_port,
            gid_index: a.gid_index,
        }
    }
}

impl From<WorkArgs> for WorkConfig {
    fn from(a: WorkArgs) -> WorkConfig {
        WorkConfig {
            op: a.op,
            size: a.size,
            iters: a.iters,
            duration: a.duration,
            rate: a.rate,
            qps: a.qps,
            depth: a.depth,
            mtu: a.mtu,
            tclass: a.tclass,
            source_ports: a.source_ports,
            qp_timeout: a.qp_timeout,
            retry_count: a.retry_count,
            rnr_retry: a.rnr_retry,
            timeout: a.timeout,
            json: a.json,
            fault: a.fault,
            capture: a.capture,
            capture_grace: a.capture_grace,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates() {
        assert_eq!(parse_rate("1000"), Ok(Rate::MessagesPerSec(1000.0)));
        assert_eq!(parse_rate("2g"), Ok(Rate::Gbps(2.0)));
        assert_eq!(parse_rate("0.5G"), Ok(Rate::Gbps(0.5)));
        for bad in ["0", "-1", "g", "", "x", "infg", "NaN"] {
            assert!(parse_rate(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn source_ports() {
        let one = SourcePorts {
            first: 49152,
            last: 49152,
        };
        assert_eq!(parse_source_ports("49152"), Ok(one));
        assert_eq!(
            parse_source_ports("49200-49207"),
            Ok(SourcePorts {
                first: 49200,
                last: 49207
            })
        );
        for bad in ["49151", "65536", "49300-49200", "x", "", "-", "49152-"] {
            assert!(parse_source_ports(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn every_op_and_fault_has_a_value() {
        assert_eq!(Op::value_variants().len(), 6);
        assert_eq!(Op::from_str("cmp-swap", false), Ok(Op::CmpSwap));
        assert_eq!(Fault::from_str("bad-rkey", false), Ok(Fault::BadRkey));
        assert_eq!(Fault::from_str("wrong-qpn", false), Ok(Fault::WrongQpn));
        assert_eq!(Fault::from_str("no-receive", false), Ok(Fault::NoReceive));
        for f in Fault::value_variants() {
            assert_eq!(f.to_possible_value().unwrap().get_name(), f.name());
        }
    }
}
