use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
mod cli;
mod generator;
mod lab;
use rocescope::analyze;
use rocescope::dissect::{self, Filter, Style};

/// RoCEv2 packet dissector and transport analyzer.
#[derive(Parser)]
#[command(name = "rocescope", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Decode every frame of a pcap or pcapng capture (`-` reads standard input).
    Dissect {
        /// Capture file (pcap or pcapng), or `-` for standard input.
        file: PathBuf,
        /// Show every field as a tree (like `tshark -V`).
        #[arg(short = 'V', long = "verbose", conflicts_with = "json")]
        tree: bool,
        /// Add a hex dump of each frame.
        #[arg(short = 'x', long = "hex", conflicts_with = "json")]
        hex: bool,
        /// One JSON object per frame, keyed with Wireshark's field names.
        #[arg(long)]
        json: bool,
        /// Show non-RoCE frames too (they are counted and hidden by default).
        #[arg(long)]
        all: bool,
        /// Stop after showing N frames.
        #[arg(short = 'c', long = "count", value_name = "N")]
        count: Option<u64>,
        /// Only frames to this destination QP (decimal or 0x-prefixed hex).
        #[arg(long = "qp", value_name = "QPN", value_parser = parse_qpn)]
        qp: Option<u32>,
        /// Only this opcode: a name (RC_SEND_ONLY, or SEND_ONLY for every transport) or a number (0x11).
        #[arg(long, value_name = "NAME", value_parser = parse_opcode)]
        opcode: Option<OpcodeSet>,
        /// UDP destination port of RoCEv2.
        #[arg(long, default_value_t = parsers::udp::ROCEV2_PORT)]
        port: u16,
    },
    /// Per-QP transport analysis of a capture: PSN gaps, retransmissions, NAKs, RNR, ECN/CNP, PFC, ICRC,
    /// latency and throughput.
    Analyze {
        /// Capture file (pcap or pcapng), or `-` for standard input.
        file: PathBuf,
        /// One JSON document instead of the text report (schema in the README).
        #[arg(long)]
        json: bool,
        /// Path MTU in bytes (256, 512, 1024, 2048, 4096); inferred from full-size segments by default.
        #[arg(long, value_parser = parse_mtu)]
        mtu: Option<u32>,
        /// Link speed for turning pause quanta into time: 10G, 25G, 100G, 400G, or bits per second.
        #[arg(long, default_value = "100G", value_parser = analyze::parse_speed)]
        link_speed: u64,
        /// A CE mark counts as answered by a CNP toward its sender within this many microseconds.
        #[arg(long, default_value_t = 1000, value_name = "US")]
        cnp_window_us: u64,
        /// Exit with status 3 when any of these is present (comma list): gaps, naks, rnr,
        /// retransmissions, ce, cnp, icrc, malformed.
        #[arg(long, value_name = "LIST", value_parser = analyze::parse_fail_on)]
        fail_on: Option<FailOn>,
        /// UDP destination port of RoCEv2.
        #[arg(long, default_value_t = parsers::udp::ROCEV2_PORT)]
        port: u16,
        /// No progress bar (it shows only on a terminal, for files over 64 MiB).
        #[arg(long)]
        no_progress: bool,
        /// Also write SVG pictures to DIR: an overview of throughput and, per requester flow, its PSN
        /// timeline (requests, gaps, retransmissions, NAKs) and throughput.
        #[arg(long, value_name = "DIR")]
        plot: Option<PathBuf>,
    },
    /// Live capture (libpcap) with the same analysis as `analyze`, optionally written to a file and
    /// optionally around a command (`-- COMMAND ARGS...`).
    Capture(rocescope::capture::CaptureArgs),
    /// Verbs traffic generator (libibverbs, loaded at run time): `gen loopback` runs RC QP pairs on two
    /// devices of this host against each other, with a data check and the QPNs/PSNs to match a capture.
    #[command(subcommand)]
    Gen(cli::r#gen::GenCommand),
    /// The two-NIC Soft-RoCE loopback on this host (Linux, root, rdma_rxe): `lab up` builds a veth pair with rxe
    /// on each end so that `gen loopback` traffic crosses a wire one can capture on; `lab down` removes it.
    #[command(subcommand)]
    Lab(cli::lab::LabCommand),
    /// Terminal UI over a capture file, or over a live capture (`-i IFACE`): flows, a flow's PSN chart and
    /// events, packets with their tree and hex.
    Tui(rocescope::tui::TuiArgs),
}

type FailOn = Vec<&'static str>;

fn parse_mtu(s: &str) -> Result<u32, String> {
    match s.parse::<u32>() {
        Ok(m) if [256, 512, 1024, 2048, 4096].contains(&m) => Ok(m),
        _ => Err(format!(
            "'{s}' is not an InfiniBand path MTU (256, 512, 1024, 2048 or 4096)"
        )),
    }
}

#[derive(Clone)]
struct OpcodeSet(Box<[bool; 256]>);

fn parse_qpn(s: &str) -> Result<u32, String> {
    let v = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16),
        None => s.parse(),
    }
    .map_err(|_| format!("'{s}' is not a QP number (use decimal or 0x-prefixed hex)"))?;
    if v > 0xFF_FFFF {
        return Err(format!("QP number {s} does not fit in 24 bits"));
    }
    Ok(v)
}

fn parse_opcode(s: &str) -> Result<OpcodeSet, String> {
    dissect::opcode_set(s)
        .map(|set| OpcodeSet(Box::new(set)))
        .ok_or_else(|| format!("unknown opcode '{s}' (try RC_SEND_ONLY, WRITE_FIRST, ACKNOWLEDGE, CNP or a number like 0x11)"))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Capture(args) => rocescope::capture::main(args),
        Command::Gen(cmd) => generator::main(cmd.into()),
        Command::Lab(cmd) => lab::main(cmd.into()),
        Command::Tui(args) => rocescope::tui::main(args),
        Command::Analyze {
            file,
            json,
            mtu,
            link_speed,
            cnp_window_us,
            fail_on,
            port,
            no_progress,
            plot,
        } => {
            let opts = analyze::Options {
                file,
                json,
                parse: parsers::Config { roce_port: port },
                analysis: rocescope::analysis::Config {
                    mtu,
                    link_speed_bps: link_speed,
                    cnp_window_nanos: cnp_window_us.saturating_mul(1000),
                    ..Default::default()
                },
                fail_on: fail_on.unwrap_or_default(),
                progress: !no_progress,
            };
            let report = match analyze::run(&opts) {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("rocescope: {e}");
                    return ExitCode::from(1);
                }
            };
            if let Err(e) = analyze::write(&report, json) {
                eprintln!("rocescope: {e}");
                return ExitCode::from(1);
            }
            if let Some(dir) = plot {
                match rocescope::tui::plot::write_for_file(
                    &opts.file,
                    opts.parse,
                    opts.analysis,
                    &dir,
                ) {
                    Ok(files) => eprintln!("wrote {} pictures to {}", files.len(), dir.display()),
                    Err(e) => {
                        eprintln!("rocescope: cannot write the pictures: {e}");
                        return ExitCode::from(1);
                    }
                }
            }
            let present = report.present();
            if opts.fail_on.iter().any(|c| present.contains(c)) {
                ExitCode::from(3)
            } else {
                ExitCode::SUCCESS
            }
        }
        Command::Dissect {
            file,
            tree,
            hex,
            json,
            all,
            count,
            qp,
            opcode,
            port,
        } => {
            let style = if json {
                Style::Json
            } else if tree {
                Style::Tree
            } else {
                Style::Line
            };
            let opts = dissect::Options {
                file,
                style,
                hex,
                filter: Filter {
                    all,
                    dest_qp: qp,
                    opcodes: opcode.map(|o| *o.0),
                    count,
                },
                config: parsers::Config { roce_port: port },
            };
            match dissect::run(&opts) {
                Ok(t) => {
                    if style == Style::Line {
                        let hint = if t.shown < t.frames && !all {
                            "; --all shows the others"
                        } else {
                            ""
                        };
                        eprintln!(
                            "{} frames ({} RoCE, {} other), {} shown{hint}",
                            t.frames,
                            t.roce,
                            t.frames - t.roce,
                            t.shown
                        );
                    }
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("rocescope: {e}");
                    ExitCode::from(1)
                }
            }
        }
    }
}
