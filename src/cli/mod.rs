//! The command line: every clap type and flag group (declared once, flattened where several subcommands
//! take it), and the one place where flags become the typed configurations the library takes
//! ([`analysis::Config`], [`pipeline::Config`], the capture session's, the TUI's, the dissector's).
#[cfg(all(feature = "live", unix))]
pub mod extcap;
#[cfg(all(feature = "rdma", target_os = "linux"))]
pub mod r#gen;
#[cfg(all(feature = "rdma", target_os = "linux"))]
pub mod lab;
mod values;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::anyhow;
use clap::{Args, Parser, Subcommand};

use rocescope::analysis;
use rocescope::capture;
use rocescope::dissect::{self, Style};
use rocescope::filter::Filter;
use rocescope::pipeline;
use rocescope::report::{Condition, Listing, Output};
use rocescope::source::{LiveConfig, joblog, printout};
use rocescope::tui;
use values::{
    FailOn, OpcodeSet, parse_column, parse_dscp_map, parse_ecmp_members, parse_fail_on,
    parse_fields_option, parse_interval, parse_mtu, parse_opcode, parse_qpn, parse_secs,
    parse_size, parse_speed, parse_threads,
};

use crate::commands;

/// RoCEv2 packet dissector and transport analyzer.
#[derive(Parser)]
#[command(name = "rocescope", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Decode every frame of a pcap or pcapng capture (`-` reads standard input).
    Dissect(DissectArgs),
    /// Per-QP transport analysis of a capture: PSN gaps, retransmissions, NAKs, RNR, ECN/CNP, PFC, ICRC,
    /// latency and throughput.
    Analyze(AnalyzeArgs),
    /// The analysis of capture files as Parquet tables (packets, flows, events) for Spark, DuckDB or
    /// pyarrow: `export --parquet DIR FILE...` (schema in docs/export.md).
    #[cfg(feature = "export")]
    Export(ExportArgs),
    /// Live capture (libpcap) with the same analysis as `analyze`, optionally written to a file and
    /// optionally around a command (`-- COMMAND ARGS...`).
    Capture(CaptureArgs),
    /// A headless live capture for long runs: the analysis as OpenMetrics at http://ADDR:PORT/metrics
    /// for Prometheus (docs/metrics.md), until a signal or --duration; no report.
    Monitor(MonitorArgs),
    /// Wireshark's extcap interface: Wireshark and tshark list rocescope-IFACE among their interfaces and
    /// capture through rocescope, with its report and metrics (`rocescope extcap --install` once).
    #[cfg(all(feature = "live", unix))]
    Extcap(extcap::ExtcapArgs),
    /// Verbs traffic generator (libibverbs, loaded at run time): `gen loopback` runs RC QP pairs on two
    /// devices of this host against each other, with a data check and the QPNs/PSNs to match a capture.
    #[cfg(all(feature = "rdma", target_os = "linux"))]
    #[command(subcommand)]
    Gen(r#gen::GenCommand),
    /// The two-NIC Soft-RoCE loopback on this host (Linux, root, rdma_rxe): `lab up` builds a veth pair with rxe
    /// on each end so that `gen loopback` traffic crosses a wire one can capture on; `lab down` removes it.
    #[cfg(all(feature = "rdma", target_os = "linux"))]
    #[command(subcommand)]
    Lab(lab::LabCommand),
    /// Terminal UI over a capture file, or over a live capture (`-i IFACE`): flows, a flow's PSN chart and
    /// events, packets with their tree and hex.
    Tui(TuiArgs),
    /// Read-only checks of every RDMA device and port (sysfs, procfs, netlink, the kernel log), layer by
    /// layer, each finding with its evidence, its meaning and the fix. Exit 0: no error; 1: an error
    /// finding; 4: no RDMA here.
    Doctor(DoctorArgs),
    /// NIC conformance: faults injected at chosen packets of the generator's traffic between two RDMA devices
    /// of this host (Linux, root), each reaction judged against the rule it must follow, with its latency and
    /// evidence frames; or `--judge CAPTURE --log LOG` again.
    Conform(ConformArgs),
    /// Acts on chosen RoCE packets on their way out of this host (Linux, root, nftables' NFQUEUE): drop,
    /// CE-mark, corrupt, delay, duplicate or reorder them by direction, QP, PSN, class and resend; every
    /// action logged as JSON.
    #[cfg(target_os = "linux")]
    Inject(InjectArgs),
    /// The RDMA ports' hw_counters and their netdevs' statistics (per-priority pause frames included where
    /// the driver has them) as deltas per interval, by the kernel's names; the whole run's at the end.
    Counters(CountersArgs),
}

/// `rocescope conform` options.
#[derive(Args, Debug, Clone)]
pub struct ConformArgs {
    /// The requester's RDMA device (e.g. rxe0).
    #[arg(
        short = 'd',
        long = "device",
        value_name = "DEV",
        required_unless_present = "judge"
    )]
    pub device: Option<String>,
    /// The responder's RDMA device (e.g. rxe1).
    #[arg(long, value_name = "DEV", required_unless_present = "judge")]
    pub peer_device: Option<String>,
    /// The requester's network interface, where each run is captured.
    #[arg(
        short = 'i',
        long = "interface",
        value_name = "IFACE",
        required_unless_present_any = ["judge", "bridge"]
    )]
    pub interface: Option<String>,
    /// The faults made by a bump in the wire between these two network devices of this host (`inject
    /// --bridge`), the two devices' traffic cabled through them, each run captured as the bump sends it on.
    #[arg(long, value_name = "FIRST,SECOND", value_parser = values::parse_bridge, conflicts_with_all = ["interface", "judge"])]
    pub bridge: Option<[String; 2]>,
    /// Run each scenario this many times: the table gives each latency's median and maximum over the runs,
    /// and the verdict fails if one run failed.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000), conflicts_with = "judge")]
    pub repeat: u32,
    /// Only this scenario (repeat for more; default: the whole suite, docs/conform.md).
    #[arg(long, value_name = "NAME")]
    pub scenario: Vec<String>,
    /// Where each scenario's capture, injection log and output go.
    #[arg(long, value_name = "DIR", default_value = "conform")]
    pub out: PathBuf,
    /// Judge this capture and --log's injection log as the one --scenario says, instead of running.
    #[arg(long, value_name = "CAPTURE")]
    pub judge: Option<PathBuf>,
    /// With --judge: the injection log (`rocescope inject --log`), for a scenario with injector rules.
    #[arg(long, value_name = "FILE", requires = "judge")]
    pub log: Option<PathBuf>,
    /// The report as one JSON document.
    #[arg(long)]
    pub json: bool,
}

impl ConformArgs {
    pub fn config(&self) -> Result<commands::conform::Config, ConfigError> {
        use rocescope::conform::suite;
        let usage = |m: String| ConfigError::Usage(anyhow::Error::msg(m));
        let mut scenarios = Vec::new();
        for name in &self.scenario {
            match suite::find(name) {
                Some(s) => scenarios.push(s),
                None => {
                    return Err(usage(format!(
                        "no scenario '{name}' (the suite: {})",
                        suite::names()
                    )));
                }
            }
        }
        let mode = match &self.judge {
            Some(capture) => match scenarios.as_slice() {
                [one] if self.log.is_none() && !one.rules.is_empty() => {
                    return Err(usage(format!(
                        "--judge with --scenario {} takes the injection log: --log FILE",
                        one.name
                    )));
                }
                [one] => commands::conform::Mode::Judge {
                    scenario: one,
                    capture: capture.clone(),
                    log: self.log.clone(),
                },
                _ => {
                    return Err(usage(
                        "--judge takes one --scenario: the one the capture ran".into(),
                    ));
                }
            },
            None => commands::conform::Mode::Run {
                device: self.device.clone().unwrap_or_default(),
                peer: self.peer_device.clone().unwrap_or_default(),
                at: match &self.bridge {
                    Some(ports) => commands::conform::Stand::Bridge(ports.clone()),
                    None => commands::conform::Stand::Output {
                        interface: self.interface.clone().unwrap_or_default(),
                    },
                },
                scenarios: if scenarios.is_empty() {
                    suite::SUITE.iter().collect()
                } else {
                    scenarios
                },
                repeat: self.repeat,
                out: self.out.clone(),
            },
        };
        Ok(commands::conform::Config {
            mode,
            json: self.json,
        })
    }
}

/// `rocescope doctor` options.
#[derive(Args, Debug, Clone)]
pub struct DoctorArgs {
    /// Only this RDMA device (as /sys/class/infiniband names it).
    #[arg(short = 'd', long = "device", value_name = "DEV")]
    pub device: Option<String>,
    /// One JSON document (schema and finding codes in docs/json.md).
    #[arg(long)]
    pub json: bool,
    /// Read DIR/sys, DIR/proc, DIR/etc, DIR/dev/kmsg, ... instead of the running system's (a recorded tree;
    /// DIR/ibv_devinfo and DIR/ethtool/IF stand for what only system calls give).
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
}

impl DoctorArgs {
    pub fn config(&self) -> commands::doctor::Config {
        commands::doctor::Config {
            root: self.root.clone(),
            device: self.device.clone(),
            json: self.json,
        }
    }
}

/// `rocescope counters` options.
#[derive(Args, Debug, Clone)]
pub struct CountersArgs {
    /// Only this RDMA device.
    #[arg(short = 'd', long = "device", value_name = "DEV")]
    pub device: Option<String>,
    /// Seconds between two readings (the deltas' interval).
    #[arg(long, value_name = "SECS", default_value = "1", value_parser = parse_interval)]
    pub interval: f64,
    /// Stop after N intervals (by default at Ctrl-C or SIGTERM).
    #[arg(short = 'c', long = "count", value_name = "N")]
    pub count: Option<u64>,
    /// One JSON object a line (JSON Lines): each interval's deltas, then the whole run's.
    #[arg(long)]
    pub json: bool,
}

impl CountersArgs {
    pub fn config(&self) -> commands::counters::Config {
        commands::counters::Config {
            device: self.device.clone(),
            interval: Duration::from_secs_f64(self.interval),
            count: self.count,
            json: self.json,
        }
    }
}

/// What is RoCE: `--port`.
#[derive(Args, Debug, Clone)]
pub struct RoceFlags {
    /// UDP destination port of RoCEv2 (the decoder and a live capture's default filter follow it).
    #[arg(long, default_value_t = parsers::udp::ROCEV2_PORT)]
    pub port: u16,
}

impl RoceFlags {
    fn config(&self) -> parsers::Config {
        parsers::Config {
            roce_port: self.port,
        }
    }
}

/// What the analysis assumes where the wire does not say.
#[derive(Args, Debug, Clone)]
pub struct AnalysisFlags {
    /// Requests unanswered for longer than this many milliseconds are a stall (and a requester silent this
    /// long after resending gave up).
    #[arg(long, default_value_t = analysis::Config::DEFAULT_STALL_MS, value_name = "MS")]
    pub stall_ms: u64,
    /// Path MTU in bytes (256, 512, 1024, 2048, 4096); inferred from full-size segments by default.
    #[arg(long, value_parser = parse_mtu)]
    pub mtu: Option<u32>,
    /// Link speed for turning pause quanta into time: 10G, 25G, 100G, 400G, or bits per second.
    #[arg(long, default_value = "100G", value_parser = parse_speed)]
    pub link_speed: u64,
    /// A CE mark counts as answered by a CNP toward its sender within this many microseconds.
    #[arg(long, default_value_t = analysis::Config::DEFAULT_CNP_WINDOW_US, value_name = "US")]
    pub cnp_window_us: u64,
    /// Measure a flow's rate in windows of this many microseconds (the CNP reaction compares the window
    /// before a CNP with the two after it).
    #[arg(long, default_value_t = analysis::Config::DEFAULT_RATE_WINDOW_US, value_name = "US")]
    pub rate_window_us: u64,
    /// A priority paused without a break for longer than this many milliseconds is a pause storm.
    #[arg(long, default_value_t = analysis::Config::DEFAULT_PAUSE_STORM_MS, value_name = "MS")]
    pub pause_storm_ms: u64,
    /// The switch's DSCP -> PFC priority mapping for untagged traffic: DSCP=PRIORITY pairs, e.g. 26=3,48=6
    /// (untagged traffic whose DSCP it does not map has no known priority).
    #[arg(long, value_name = "MAP", value_parser = parse_dscp_map)]
    pub dscp_map: Option<analysis::DscpMap>,
    /// Keep at most N flows: when the table is full the least recently seen quarter is finished, added up
    /// (`evicted`) and dropped. 0: no limit.
    #[arg(long, value_name = "N", default_value_t = analysis::Config::DEFAULT_MAX_FLOWS)]
    pub max_flows: usize,
    /// A flow idle this many seconds (capture time) is finished, added up and dropped. 0: never.
    #[arg(long, value_name = "SECS", default_value_t = analysis::Config::DEFAULT_FLOW_TIMEOUT_S)]
    pub flow_timeout: u64,
    /// The same RoCE frame again within this many microseconds is a mirror duplicate (the ingress and
    /// egress copies of a mirror session), counted once. 0: never.
    #[arg(long, value_name = "US", default_value_t = analysis::Config::DEFAULT_MIRROR_WINDOW_US)]
    pub mirror_window_us: u64,
    /// A request or response that comes behind a later one, held up on the way by at most this many
    /// microseconds, is reordered, not resent (with no NAK a resend could answer).
    #[arg(long, value_name = "US", default_value_t = analysis::Config::DEFAULT_REORDER_WINDOW_US)]
    pub reorder_window_us: u64,
    /// Show how an ECMP group (or a bond) of N members would spread each host pair's QPs by their UDP
    /// source ports (2-256).
    #[arg(long, value_name = "N", default_value_t = analysis::Config::DEFAULT_ECMP_MEMBERS, value_parser = parse_ecmp_members)]
    pub ecmp_members: u16,
    /// The requesters' retry count (0-7) where no CM handshake gives it: how many timer resends of one PSN
    /// before a QP gives up (each flow's `timers`).
    #[arg(long = "retry-count", value_name = "N", value_parser = clap::value_parser!(u8).range(0..=7))]
    pub retry_count: Option<u8>,
    /// Threads the analysis may use (by default the cores available): one reads, one analyses, one or two
    /// more parse and check ICRCs; `--points` analyses half as many points at once. The result is the same
    /// at any N (at least 1).
    #[arg(short = 'j', long, value_name = "N", default_value_t = available_cores(), value_parser = parse_threads)]
    pub threads: usize,
}

/// The cores this process may run on (1 when that cannot be told).
fn available_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

impl AnalysisFlags {
    fn config(&self) -> analysis::Config {
        analysis::Config {
            mtu: self.mtu,
            link_speed_bps: self.link_speed,
            cnp_window_nanos: self.cnp_window_us.saturating_mul(1000),
            pause_storm_nanos: self.pause_storm_ms.saturating_mul(1_000_000),
            dscp_map: self.dscp_map.unwrap_or_default(),
            rate_window_nanos: self.rate_window_us.saturating_mul(1000).max(1),
            stall_nanos: self.stall_ms.saturating_mul(1_000_000).max(1),
            max_flows: (self.max_flows > 0).then_some(self.max_flows),
            flow_timeout_nanos: (self.flow_timeout > 0)
                .then(|| self.flow_timeout.saturating_mul(1_000_000_000)),
            mirror_window_nanos: self.mirror_window_us.saturating_mul(1000),
            reorder_window_nanos: self.reorder_window_us.saturating_mul(1000),
            ecmp_members: self.ecmp_members,
            retry_count: self.retry_count,
            ..Default::default()
        }
    }
}

/// The pipeline's configuration from `--port` and the analysis flags.
fn pipeline_config(roce: &RoceFlags, analysis: &AnalysisFlags) -> pipeline::Config {
    pipeline::Config {
        parse: roce.config(),
        analysis: analysis.config(),
        expected: Default::default(),
        filter: None,
        threads: analysis.threads,
    }
}

/// `--fail-on`.
#[derive(Args, Debug, Clone)]
pub struct FailOnFlag {
    /// Exit with status 3 when any of these is present (comma list): gaps, naks, rnr,
    /// retransmissions, ce, cnp, icrc, malformed, stall, no_response, timeouts, violations, connections, lossless,
    /// no_roce; all for every one.
    #[arg(long, value_name = "LIST", value_parser = parse_fail_on)]
    pub fail_on: Option<FailOn>,
}

impl FailOnFlag {
    fn conditions(&self) -> Vec<Condition> {
        self.fail_on.clone().unwrap_or_default().0
    }
}

/// How to capture live (the interface itself is declared by each subcommand: required by `capture`, an
/// alternative to a file for `tui`).
#[derive(Args, Debug, Clone)]
pub struct LiveFlags {
    /// Capture filter (BPF, pcap-filter(7)) replacing the default: RoCEv2 to the UDP port, VLAN-tagged
    /// RoCEv2, RoCEv1 and MAC control (PFC/PAUSE).
    #[arg(short = 'f', long = "filter", value_name = "BPF")]
    pub filter: Option<String>,
    /// Do not put the interface in promiscuous mode.
    #[arg(long)]
    pub no_promisc: bool,
    /// Kernel capture buffer size: bytes, or with K, M or G (binary).
    #[arg(long, value_name = "BYTES", value_parser = parse_size, default_value = "32M")]
    pub buffer_size: u32,
    /// Bytes kept of each frame; 128 keeps the headers (ICRCs are then reported unverifiable).
    #[arg(long, value_name = "BYTES", default_value_t = LiveConfig::MAX_SNAPLEN,
          value_parser = clap::value_parser!(u32).range(i64::from(LiveConfig::MIN_SNAPLEN)..=i64::from(LiveConfig::MAX_SNAPLEN)))]
    pub snaplen: u32,
    /// Also write the frames to FILE (pcap; pcapng when the name ends in .pcapng); `-` is standard output
    /// (the report then goes to standard error).
    #[arg(short = 'w', long = "write", value_name = "FILE")]
    pub write: Option<PathBuf>,
    /// With -w FILE: go on in a new file (FILE, STEM.1.EXT, STEM.2.EXT, ...) once this many millions of bytes
    /// are written (as tcpdump's -C).
    #[arg(short = 'C', value_name = "MB", requires = "write", value_parser = clap::value_parser!(u64).range(1..))]
    pub file_size: Option<u64>,
    /// With -w FILE: go on in a new file every this many seconds of capture (as tcpdump's -G).
    #[arg(short = 'G', value_name = "SECS", requires = "write", value_parser = clap::value_parser!(u64).range(1..))]
    pub file_seconds: Option<u64>,
}

impl LiveFlags {
    /// `-C`, `-G`; standard output is one stream, never rotated.
    fn rotation(&self) -> capture::writer::Rotation {
        if self.write.as_deref() == Some(std::path::Path::new("-")) {
            return Default::default();
        }
        capture::writer::Rotation {
            bytes: self.file_size.map(|mb| mb.saturating_mul(1_000_000)),
            nanos: self.file_seconds.map(|s| s.saturating_mul(1_000_000_000)),
        }
    }

    fn config(&self, interface: &str, port: u16) -> LiveConfig {
        LiveConfig {
            interface: interface.to_string(),
            filter: self.filter.clone(),
            roce_port: port,
            promiscuous: !self.no_promisc,
            buffer_size: self.buffer_size,
            snaplen: self.snaplen,
        }
    }
}

/// What went wrong turning flags into a configuration: a usage error (exit status 2) or a runtime one
/// (1: a file that cannot be read).
#[derive(Debug)]
pub enum ConfigError {
    Usage(anyhow::Error),
    Runtime(anyhow::Error),
}

/// An `--expect` log that gives no connections.
#[derive(Debug, thiserror::Error)]
pub enum ExpectError {
    /// The log could not be read (the reason is told in the middle of the line).
    #[error(
        "--expect {}: {error} (--expect reads a saved output of perftest or ibv_*_pingpong, or an NCCL or UCX \
         log)",
        .log.display()
    )]
    Read {
        log: PathBuf,
        error: printout::ReadFailure,
    },
    #[error(
        "{}: no \"local address\" and \"remote address\" lines (perftest, ibv_*_pingpong) and no NCCL or UCX \
         line that names a process (--expect reads their outputs)",
        .log.display()
    )]
    NothingRead { log: PathBuf },
}

/// `-Y`: tshark's display filter.
#[derive(Args, Debug, Clone)]
pub struct DisplayFilterFlag {
    /// Display filter, in Wireshark's language over the fields rocescope decodes (`infiniband.bth.destqp
    /// == 0x11 && !infiniband.aeth`, `ip.addr in {10.0.0.1, 10.0.0.2}`; docs/cli.md#display-filters).
    #[arg(short = 'Y', long = "display-filter", value_name = "FILTER")]
    pub display_filter: Option<String>,
}

impl DisplayFilterFlag {
    /// The compiled filter (none for an empty one, as tshark); `before_analysis`: it selects what is
    /// analysed, so it cannot name what the analysis finds.
    fn filter(&self, before_analysis: bool) -> Result<Option<Arc<Filter>>, ConfigError> {
        let Some(text) = self
            .display_filter
            .as_deref()
            .filter(|t| !t.trim().is_empty())
        else {
            return Ok(None);
        };
        let f = Filter::new(text).map_err(|e| ConfigError::Usage(anyhow!(e).context("-Y")))?;
        if before_analysis && f.analysis {
            return Err(ConfigError::Usage(anyhow!(
                "-Y: the analysis' fields (rocescope.class, .flow, .retransmission, .event, .severity) come \
                 from the analysis this filter selects frames for: filter on them with rocescope dissect -Y"
            )));
        }
        Ok(Some(Arc::new(f)))
    }
}

/// The capture files: `FILE...` or `-r FILE` (repeated); `-` is standard input. Several files, or a
/// directory's, are pieces of one capture point read as one time-ordered stream.
#[derive(Args, Debug, Clone)]
#[group(required = true, multiple = false)]
pub struct ReadFlag {
    /// Capture files (pcap or pcapng) or directories of them, or `-` for standard input.
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// A capture file, as tshark takes it (pcap or pcapng; `-` is standard input); repeat for more.
    #[arg(short = 'r', long = "read", value_name = "FILE")]
    pub read: Vec<PathBuf>,
    /// Captures of the same traffic at several points of its path, in path order from the senders' side
    /// (a directory: one point's pieces): where packets were lost, the one-way delay and clock offset
    /// between points, figures per point.
    #[arg(long, value_name = "FILE", num_args = 2..)]
    pub points: Vec<PathBuf>,
}

impl ReadFlag {
    fn paths(&self) -> Vec<PathBuf> {
        if self.read.is_empty() {
            self.files.clone()
        } else {
            self.read.clone()
        }
    }
}

#[derive(Args, Debug, Clone)]
#[command(group(clap::ArgGroup::new("input").required(true).args(["file", "read"])))]
pub struct DissectArgs {
    /// Capture file (pcap or pcapng), or `-` for standard input.
    #[arg(value_name = "FILE", conflicts_with = "read")]
    pub file: Option<PathBuf>,
    /// A capture file, as tshark takes it (`-` is standard input); several `-r` are dissected in turn,
    /// each as by a run of its own.
    #[arg(short = 'r', long = "read", value_name = "FILE")]
    pub read: Vec<PathBuf>,
    /// Show every field as a tree (like `tshark -V`).
    #[arg(short = 'V', long = "verbose", conflicts_with_all = ["json", "format"])]
    pub tree: bool,
    /// Add a hex dump of each frame.
    #[arg(short = 'x', long = "hex", conflicts_with_all = ["json", "format"])]
    pub hex: bool,
    /// One JSON object per frame, keyed with Wireshark's field names.
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
    /// `-T fields`: the values of the `-e` fields, one line per frame, as tshark prints them; `-T json` or
    /// `-T ek`: --json's objects (one per line, Wireshark's names as flat keys, not tshark's layers tree).
    #[arg(short = 'T', value_name = "FORMAT", value_parser = ["fields", "json", "ek"],
          requires_if("fields", "fields"))]
    pub format: Option<String>,
    /// With -T fields: a field to print (Wireshark's name; repeat for more columns).
    #[arg(short = 'e', value_name = "FIELD", value_parser = parse_column, requires = "format")]
    pub fields: Vec<dissect::Column>,
    /// With -T fields: header=y, separator=/t|/s|C, quote=d|s|n, occurrence=f|l|a|N, aggregator=C (as
    /// tshark's -E).
    #[arg(short = 'E', value_name = "OPTION=VALUE", value_parser = parse_fields_option, requires = "format")]
    pub fields_options: Vec<dissect::FieldsOption>,
    /// Show non-RoCE frames too (they are counted and hidden by default).
    #[arg(long)]
    pub all: bool,
    /// Stop after showing N frames (0 shows none).
    #[arg(short = 'c', long = "count", value_name = "N")]
    pub count: Option<u64>,
    /// Only frames of this QP's connection, both ways: to it, from it (UD), and the flow the analysis
    /// pairs with the flow to it (decimal or 0x-prefixed hex).
    #[arg(long = "qp", value_name = "QPN", value_parser = parse_qpn)]
    pub qp: Option<u32>,
    /// Only this opcode: a name (RC_SEND_ONLY, or SEND_ONLY for every transport) or a number (0x11).
    #[arg(long, value_name = "NAME", value_parser = parse_opcode)]
    pub opcode: Option<OpcodeSet>,
    #[command(flatten)]
    pub display: DisplayFilterFlag,
    #[command(flatten)]
    pub roce: RoceFlags,
}

impl DissectArgs {
    pub fn config(&self) -> Result<dissect::Options, ConfigError> {
        let style = if self.format.as_deref() == Some("fields") {
            Style::Fields(dissect::Columns::new(
                self.fields.clone(),
                &self.fields_options,
            ))
        } else if self.json || self.format.is_some() {
            Style::Json
        } else if self.tree {
            Style::Tree
        } else {
            Style::Line
        };
        let files = match &self.file {
            Some(f) => vec![f.clone()],
            None => self.read.clone(),
        };
        Ok(dissect::Options {
            files,
            style,
            hex: self.hex,
            selection: dissect::Selection {
                all: self.all,
                qp: self.qp,
                opcodes: self.opcode.as_ref().map(|o| *o.0),
                count: self.count,
            },
            display: self.display.filter(false)?,
            config: self.roce.config(),
        })
    }
}

#[derive(Args, Debug, Clone)]
pub struct AnalyzeArgs {
    #[command(flatten)]
    pub input: ReadFlag,
    /// Analyse only the frames this display filter passes (Wireshark's language, as `dissect -Y`; not the
    /// analysis' own `rocescope.*` fields).
    #[command(flatten)]
    pub display: DisplayFilterFlag,
    /// One JSON document instead of the text report (schema in docs/json.md).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub analysis: AnalysisFlags,
    #[command(flatten)]
    pub fail_on: FailOnFlag,
    #[command(flatten)]
    pub roce: RoceFlags,
    /// No progress bar (it shows only on a terminal, for files over 64 MiB).
    #[arg(long)]
    pub no_progress: bool,
    /// Also write SVG pictures to DIR: an overview of throughput and, per requester flow, its PSN
    /// timeline (requests, gaps, retransmissions, NAKs) and throughput.
    #[arg(long, value_name = "DIR")]
    pub plot: Option<PathBuf>,
    /// Also write the capture to OUT as pcapng with a comment on every frame an event names (kind, message,
    /// flow): Wireshark shows them, `frame.comment contains "stall"` finds them.
    #[arg(long, value_name = "OUT.pcapng")]
    pub annotate: Option<PathBuf>,
    #[command(flatten)]
    pub expect: ExpectFlag,
    #[command(flatten)]
    pub listing: ListingFlags,
}

impl AnalyzeArgs {
    pub fn config(&self) -> Result<commands::analyze::Config, ConfigError> {
        Ok(commands::analyze::Config {
            files: self.input.paths(),
            points: self.input.points.clone(),
            output: self.listing.output(self.json),
            pipeline: pipeline::Config {
                expected: self
                    .expect
                    .expected()
                    .map_err(|e| ConfigError::Runtime(e.into()))?,
                filter: self.display.filter(true)?,
                ..pipeline_config(&self.roce, &self.analysis)
            },
            fail_on: self.fail_on.conditions(),
            progress: !self.no_progress,
            plot: self.plot.clone(),
            annotate: self.annotate.clone(),
            listing: self.listing.listing(),
        })
    }
}

/// `rocescope export` options.
#[cfg(feature = "export")]
#[derive(Args, Debug, Clone)]
pub struct ExportArgs {
    /// Write DIR/packets.parquet, DIR/flows.parquet and DIR/events.parquet (DIR is created if missing).
    #[arg(long, value_name = "DIR", required_unless_present = "trace")]
    pub parquet: Option<PathBuf>,
    /// Write a timeline of the captures to FILE in the Chrome trace format that Perfetto loads: a track per
    /// flow with its messages, its go-back-N episodes and events, and the pauses per priority.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    #[command(flatten)]
    pub captures: ExportCaptures,
    /// The capture point every FILE was taken at (a host, a port, a mirror session): `capture.point`
    /// (default: each file is a point of its own, named by the file).
    #[arg(long, value_name = "NAME", conflicts_with = "points")]
    pub point: Option<String>,
    #[command(flatten)]
    pub analysis: AnalysisFlags,
    #[command(flatten)]
    pub roce: RoceFlags,
}

/// What `rocescope export` reads: captures, or the capture points of one path.
#[cfg(feature = "export")]
#[derive(Args, Debug, Clone)]
#[group(required = true, multiple = false)]
pub struct ExportCaptures {
    /// Capture files (pcap or pcapng), each analysed on its own (a directory: its files merged by time, the
    /// pieces of one capture); `capture.file` tells their rows apart.
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Captures of the same traffic at several points of its path, in path order from the senders' side
    /// (as `analyze --points`; a directory: one point's pieces): `capture.point_index` and `capture.path`
    /// say where each was taken.
    #[arg(long, value_name = "FILE", num_args = 2..)]
    pub points: Vec<PathBuf>,
}

#[cfg(feature = "export")]
impl ExportArgs {
    pub fn config(&self) -> commands::export::Config {
        use rocescope::export::Points;
        let c = &self.captures;
        let (files, points) = match &self.point {
            _ if !c.points.is_empty() => (c.points.clone(), Points::Path),
            Some(name) => (c.files.clone(), Points::Named(name.clone())),
            None => (c.files.clone(), Points::EachFile),
        };
        let pipeline = pipeline_config(&self.roce, &self.analysis);
        commands::export::Config {
            tables: self.parquet.clone().map(|dir| rocescope::export::Config {
                dir,
                files: files.clone(),
                points,
                pipeline: pipeline.clone(),
            }),
            trace: self
                .trace
                .clone()
                .map(|path| rocescope::export::trace::Config {
                    path,
                    files,
                    pipeline,
                }),
        }
    }
}

/// Which flows a report lists in full: `--report-flows`, `--all-flows`.
#[derive(Args, Debug, Clone)]
pub struct ListingFlags {
    /// List every flow with trouble and the N busiest others in full; add up the rest (`other_flows`).
    #[arg(long, value_name = "N", default_value_t = Listing::DEFAULT_FLOWS)]
    pub report_flows: usize,
    /// List every flow (the JSON is then written flow by flow, never held whole in memory).
    #[arg(long, conflicts_with = "report_flows")]
    pub all_flows: bool,
    /// The text report's flow table shows the N flows with the most trouble (the JSON lists what
    /// --report-flows says).
    #[arg(long, value_name = "N")]
    pub top: Option<usize>,
}

impl ListingFlags {
    fn listing(&self) -> Listing {
        if self.all_flows {
            Listing::All
        } else {
            Listing::Top(self.report_flows)
        }
    }

    fn output(&self, json: bool) -> Output {
        if json {
            Output::Json
        } else {
            Output::Text { top: self.top }
        }
    }
}

/// `--expect`.
#[derive(Args, Debug, Clone)]
pub struct ExpectFlag {
    /// The output of perftest or ibv_*_pingpong (its "local address" / "remote address" lines): the
    /// connections it set up are held against the wire; or an NCCL (NCCL_DEBUG=INFO, with NET in
    /// NCCL_DEBUG_SUBSYS for the QPs) or UCX log: each flow's rank, channel and HCA, its traffic class against
    /// the one set (tc_mismatch), the failures tied to their flows. Once per log.
    #[arg(long, value_name = "LOG")]
    pub expect: Vec<PathBuf>,
}

impl ExpectFlag {
    /// What the logs say; a log that says nothing rocescope reads is an error that says what is read.
    fn expected(&self) -> Result<pipeline::Expected, ExpectError> {
        let mut exchanges = Vec::new();
        let mut jobs = joblog::Reader::default();
        for log in &self.expect {
            let text = printout::read_regular(log, printout::MAX_LOG).map_err(|error| {
                ExpectError::Read {
                    log: log.clone(),
                    error,
                }
            })?;
            let text = String::from_utf8_lossy(&text);
            let found = printout::exchanges(&text);
            let name = log.display().to_string();
            let before = jobs.facts();
            jobs.file(&name);
            text.lines().for_each(|l| jobs.line(l));
            if found.is_empty() && jobs.facts() == before {
                return Err(ExpectError::NothingRead { log: log.clone() });
            }
            exchanges.extend(found);
        }
        Ok(pipeline::Expected {
            exchanges: exchanges.into(),
            jobs: Arc::new(jobs.finish()),
        })
    }
}

/// `rocescope inject` options.
#[cfg(target_os = "linux")]
#[derive(Args, Debug, Clone)]
pub struct InjectArgs {
    /// What to do to which RoCE packets, as DIRECTION [SELECTOR...] ACTION (repeat for more; the first rule
    /// that matches a packet and has not acted `times` yet acts): 'req qp=0 psn=+5 drop', 'resp psn=+3 drop',
    /// 'req psn=+9 ce', 'resp class=ack delay 20ms' (docs/inject.md).
    #[arg(long = "rule", value_name = "RULE", required_unless_present = "bridge", value_parser = rocescope::inject::rules::Rule::parse)]
    pub rules: Vec<rocescope::inject::rules::Rule>,
    /// Only the RoCE datagrams leaving through this network device (default: every one the host sends).
    #[arg(short = 'd', long = "device", value_name = "DEV", value_parser = values::parse_netdev)]
    pub device: Option<String>,
    /// The NFQUEUE number (and of the nftables table rocescope_inject_N).
    #[arg(long, value_name = "N", default_value = "0")]
    pub queue: u16,
    /// Stand in the wire between these two network devices instead of on this host's output path: every
    /// frame that arrives on one leaves by the other (AF_PACKET, promiscuous), the RoCE ones acted on as the
    /// rules say. For a box between a NIC under test and its peer; turn the ports' receive offloads off
    /// (ethtool -K DEV gro off lro off rxvlan off).
    #[arg(long, value_name = "FIRST,SECOND", value_parser = values::parse_bridge, conflicts_with_all = ["device", "queue"])]
    pub bridge: Option<[String; 2]>,
    /// Where each action goes, one JSON line each, and the counts at the end (`-`: standard output).
    #[arg(long, value_name = "FILE", default_value = "-")]
    pub log: PathBuf,
    /// Stop after this many seconds.
    #[arg(long, value_name = "SECS", value_parser = parse_secs)]
    pub duration: Option<f64>,
    /// A command to run once the injector stands on the path: it stops when the command exits, and the
    /// exit status is the command's.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

#[cfg(target_os = "linux")]
impl InjectArgs {
    pub fn config(&self) -> commands::inject::Config {
        commands::inject::Config {
            rules: self.rules.clone(),
            path: match &self.bridge {
                Some(ports) => commands::inject::Where::Bridge(ports.clone()),
                None => commands::inject::Where::Output(rocescope::inject::nfqueue::Path {
                    queue: self.queue,
                    device: self.device.clone(),
                }),
            },
            log: self.log.clone(),
            duration: self.duration.map(Duration::from_secs_f64),
            command: self.command.clone(),
        }
    }
}

/// `rocescope capture` options.
#[derive(Args, Debug, Clone)]
pub struct CaptureArgs {
    /// Interface to capture on (`any`: every interface, Linux cooked capture).
    #[arg(short = 'i', long = "interface", value_name = "IFACE")]
    pub interface: String,
    #[command(flatten)]
    pub live: LiveFlags,
    #[command(flatten)]
    pub roce: RoceFlags,
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
    #[command(flatten)]
    pub analysis: AnalysisFlags,
    #[command(flatten)]
    pub fail_on: FailOnFlag,
    #[command(flatten)]
    pub listing: ListingFlags,
    /// Write the report so far every SECS seconds (at least 0.01), one JSON line each, to --reports FILE.
    #[arg(long, value_name = "SECS", requires = "reports", value_parser = parse_interval)]
    pub report_every: Option<f64>,
    /// Where --report-every writes (`-`: standard error).
    #[arg(long, value_name = "FILE", requires = "report_every")]
    pub reports: Option<PathBuf>,
    /// Analyse and report only the frames this display filter passes (as `analyze -Y`); `-w` still writes
    /// every frame captured.
    #[command(flatten)]
    pub display: DisplayFilterFlag,
    /// Show the capture in the terminal UI as it runs (the same as `rocescope tui -i IFACE`): space pauses
    /// the display, w saves the frames.
    #[arg(long, conflicts_with_all = ["json", "command", "fail_on", "quiet", "metrics"])]
    pub tui: bool,
    /// Serve the analysis so far as OpenMetrics at http://ADDR:PORT/metrics (docs/metrics.md).
    #[arg(long, value_name = "ADDR:PORT")]
    pub metrics: Option<std::net::SocketAddr>,
    /// A command to run once the capture is active: the capture stops `--grace` seconds after it exits,
    /// and the exit status is the command's (unless --fail-on fires).
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// `rocescope monitor` options.
#[derive(Args, Debug, Clone)]
pub struct MonitorArgs {
    /// Interface to capture on (`any`: every interface, Linux cooked capture).
    #[arg(short = 'i', long = "interface", value_name = "IFACE")]
    pub interface: String,
    /// Where to serve the metrics: http://ADDR:PORT/metrics.
    #[arg(long, value_name = "ADDR:PORT")]
    pub metrics: std::net::SocketAddr,
    #[command(flatten)]
    pub live: LiveFlags,
    #[command(flatten)]
    pub roce: RoceFlags,
    /// Stop after this many seconds (default: at SIGINT or SIGTERM).
    #[arg(long, value_name = "SECS", value_parser = parse_secs)]
    pub duration: Option<f64>,
    #[command(flatten)]
    pub analysis: AnalysisFlags,
    /// Analyse only the frames this display filter passes (as `analyze -Y`).
    #[command(flatten)]
    pub display: DisplayFilterFlag,
}

impl MonitorArgs {
    pub fn config(&self) -> Result<commands::capture::Config, ConfigError> {
        let session = capture::Config {
            live: self.live.config(&self.interface, self.roce.port),
            pipeline: pipeline::Config {
                filter: self.display.filter(true)?,
                ..pipeline_config(&self.roce, &self.analysis)
            },
            write: self.live.write.clone(),
            rotation: self.live.rotation(),
            count: None,
            duration: self.duration.map(Duration::from_secs_f64),
            ring: false,
        };
        Ok(commands::capture::Config {
            session,
            command: Vec::new(),
            grace: Duration::ZERO,
            quiet: true,
            output: Output::Json,
            fail_on: Vec::new(),
            listing: Listing::default(),
            reports: None,
            tui: false,
            metrics: Some(self.metrics),
            announce_metrics: true,
            report: commands::capture::ReportTo::Nowhere,
        })
    }
}

impl CaptureArgs {
    fn session(&self) -> Result<capture::Config, ConfigError> {
        Ok(capture::Config {
            live: self.live.config(&self.interface, self.roce.port),
            pipeline: pipeline::Config {
                filter: self.display.filter(true)?,
                ..pipeline_config(&self.roce, &self.analysis)
            },
            write: self.live.write.clone(),
            rotation: self.live.rotation(),
            count: self.count,
            duration: self.duration.map(Duration::from_secs_f64),
            ring: false,
        })
    }

    pub fn config(&self) -> Result<commands::capture::Config, ConfigError> {
        Ok(commands::capture::Config {
            session: self.session()?,
            command: self.command.clone(),
            grace: Duration::from_secs_f64(self.grace),
            quiet: self.quiet,
            output: self.listing.output(self.json),
            fail_on: self.fail_on.conditions(),
            listing: self.listing.listing(),
            reports: self
                .report_every
                .zip(self.reports.clone())
                .map(|(s, f)| (Duration::from_secs_f64(s), f)),
            tui: self.tui,
            metrics: self.metrics,
            announce_metrics: true,
            report: commands::capture::ReportTo::Standard,
        })
    }
}

/// `rocescope tui`: a capture file, or a live capture with `-i IFACE`.
#[derive(Args, Debug, Clone)]
#[command(group(clap::ArgGroup::new("source").required(true).args(["file", "interface"])))]
#[command(group(clap::ArgGroup::new("live_only").multiple(true).conflicts_with("file")
    .args(["filter", "no_promisc", "buffer_size", "snaplen", "write"])))]
pub struct TuiArgs {
    /// Capture file (pcap or pcapng).
    pub file: Option<PathBuf>,
    /// Capture live on this interface instead (root, or the capabilities `rocescope capture` names):
    /// space pauses the display, w saves the frames.
    #[arg(
        short = 'i',
        long = "interface",
        value_name = "IFACE",
        conflicts_with = "file"
    )]
    pub interface: Option<String>,
    #[command(flatten)]
    pub live: LiveFlags,
    #[command(flatten)]
    pub roce: RoceFlags,
    #[command(flatten)]
    pub analysis: AnalysisFlags,
    #[command(flatten)]
    pub expect: ExpectFlag,
}

impl TuiArgs {
    pub fn config(&self) -> Result<commands::tui::Config, ConfigError> {
        let pipeline = pipeline::Config {
            expected: self
                .expect
                .expected()
                .map_err(|e| ConfigError::Runtime(e.into()))?,
            ..pipeline_config(&self.roce, &self.analysis)
        };
        match (&self.file, &self.interface) {
            (_, Some(iface)) => Ok(commands::tui::Config::Live(capture::Config {
                live: self.live.config(iface, self.roce.port),
                pipeline,
                write: self.live.write.clone(),
                rotation: self.live.rotation(),
                count: None,
                duration: None,
                ring: true,
            })),
            // The TUI indexes every frame of a file with its flow: it keeps every flow.
            (Some(file), None) => Ok(commands::tui::Config::File(tui::FileConfig {
                file: file.clone(),
                pipeline: pipeline::Config {
                    analysis: analysis::Config {
                        max_flows: None,
                        flow_timeout_nanos: None,
                        ..pipeline.analysis
                    },
                    ..pipeline
                },
            })),
            (None, None) => Err(ConfigError::Usage(anyhow!(
                "tui: give a capture file or -i IFACE"
            ))),
        }
    }
}
