//! A large realistic RoCEv2 capture with its ground truth, for tests and benchmarks: RC connections between a
//! few hosts with SEND/WRITE/READ/atomics, coalesced ACKs, losses (before and after the capture point) with
//! NAKs and go-back-N, CE marks and CNPs. The model is described in the `synth` crate (`crates/synth`).
//!
//! ```sh
//! cargo run --release --example synth -- --frames 2000000 --qps 64 --seed 1 --loss 0.0003 \
//!     --out target/bench/synth.pcap --truth target/bench/synth.truth.json
//! ```
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

/// Writes a synthetic RoCEv2 capture (pcap, nanosecond timestamps) and, optionally, its ground truth.
#[derive(Parser)]
#[command(name = "synth")]
struct Args {
    /// Frames to write.
    #[arg(long, default_value_t = 100_000)]
    frames: u64,
    /// RC connections (two QPs each).
    #[arg(long, default_value_t = 8)]
    qps: u32,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Probability that a new request packet is lost (half before the capture point, half after).
    #[arg(long, default_value_t = 0.0003)]
    loss: f64,
    /// Probability that a request packet is CE-marked.
    #[arg(long, default_value_t = 0.005)]
    ce: f64,
    /// Fraction of CE marks left without a CNP (where that is unambiguous).
    #[arg(long, default_value_t = 0.05)]
    unanswered: f64,
    /// Path MTU (256, 512, 1024, 2048, 4096).
    #[arg(long, default_value_t = 1024)]
    mtu: u32,
    /// Hosts (10.0.0.1 up).
    #[arg(long, default_value_t = 4)]
    hosts: u8,
    /// The CNP window the truth counts "CE without CNP" with (as `rocescope analyze --cnp-window-us`).
    #[arg(long, default_value_t = 1000)]
    cnp_window_us: u64,
    /// One-packet flows to mix in (each an RC SEND from an address and to a QP of its own), for memory
    /// benchmarks; not in the truth.
    #[arg(long, default_value_t = 0)]
    noise_flows: u64,
    /// Microseconds between the noise frames after the simulated ones (all of them, with --frames 0): 3333
    /// spreads 300,000 flows over 1,000 s.
    #[arg(long, default_value_t = 1)]
    noise_gap_us: u64,
    /// Output capture.
    #[arg(long)]
    out: PathBuf,
    /// Ground truth, JSON, in the words of `rocescope analyze --json`.
    #[arg(long)]
    truth: Option<PathBuf>,
}

fn run(args: &Args) -> Result<(), String> {
    let params = synth::Params {
        frames: args.frames,
        qps: args.qps,
        seed: args.seed,
        loss: args.loss,
        ce: args.ce,
        unanswered: args.unanswered,
        mtu: args.mtu,
        hosts: args.hosts,
        cnp_window_us: args.cnp_window_us,
        noise_flows: args.noise_flows,
        noise_gap_ns: args.noise_gap_us.saturating_mul(1000),
        ..synth::Params::default()
    };
    params.check().map_err(|e| e.to_string())?;
    let file = File::create(&args.out).map_err(|e| format!("{}: {e}", args.out.display()))?;
    let truth = synth::generate(&params, BufWriter::with_capacity(1 << 20, file))
        .map_err(|e| format!("{}: {e}", args.out.display()))?;
    if let Some(path) = &args.truth {
        let write = || -> std::io::Result<()> {
            let mut out = BufWriter::new(File::create(path)?);
            serde_json::to_writer_pretty(&mut out, &truth.to_json())?;
            writeln!(out)?;
            out.flush()
        };
        write().map_err(|e| format!("{}: {e}", path.display()))?;
    }
    let t = truth.totals();
    let (before, after) = truth.losses();
    eprintln!(
        "{}: {} frames, {} bytes, {:.3} s; losses {} before / {} after the mirror; {} gaps, {} retransmitted, {} NAKs, {} CE, {} CNPs, {} CE without CNP",
        args.out.display(),
        truth.frames,
        truth.bytes,
        (truth.last_ts - truth.first_ts) as f64 / 1e9,
        before,
        after,
        t["gap_events"],
        t["retransmitted"],
        t["psn_seq_err_naks"],
        t["ce"],
        t["cnp"],
        t["ce_without_cnp"],
    );
    Ok(())
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("synth: {e}");
            ExitCode::from(1)
        }
    }
}
