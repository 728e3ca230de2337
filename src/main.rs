use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
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
}

#[derive(Clone)]
struct OpcodeSet([bool; 256]);

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
        .map(OpcodeSet)
        .ok_or_else(|| format!("unknown opcode '{s}' (try RC_SEND_ONLY, WRITE_FIRST, ACKNOWLEDGE, CNP or a number like 0x11)"))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
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
                    opcodes: opcode.map(|o| o.0),
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
