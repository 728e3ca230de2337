//! What `gen` prints: a run's report as text or JSON, with the fabric check when there is one, and a
//! server's report of each client run. Errors go to standard error, as `rocescope: gen: ...`.

use anyhow::Context;
use serde::Serialize;

use super::check::Check;
use super::records::{Report, ServerReport, StoppedBy};

fn print_json(doc: &impl Serialize) {
    println!(
        "{}",
        serde_json::to_string_pretty(doc).expect("report serializes")
    );
}

pub fn print_report(r: &Report, json: bool) {
    if json {
        print_json(r);
    } else {
        print_set_up(r);
        print_results(r);
    }
    if let Some(e) = &r.error {
        eprintln!("rocescope: gen: {e}");
    }
}

/// The endpoints, the parameters and the flows of the run.
fn print_set_up(r: &Report) {
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
    if let Some(d) = &r.fault_detail {
        println!("fault {d}");
    }
    for f in &r.flows {
        println!(
            "flow {} -> {} QP {:#08x} ({}): PSN {}..{} ({} packets)",
            f.src.as_deref().unwrap_or("?"),
            f.dst.as_deref().unwrap_or("?"),
            f.dest_qp,
            f.role.as_str(),
            f.psn_first,
            f.psn_last,
            f.packets
        );
    }
}

/// How the run ended and what it measured and checked.
fn print_results(r: &Report) {
    match (r.stopped_by, r.duration) {
        (StoppedBy::Signal, _) => println!(
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
    let c = &r.data_check;
    println!(
        "completion errors: {}; data check: {} ({} checked, {} mismatches)",
        r.completion_errors,
        c.status.as_str(),
        c.checked,
        c.mismatches
    );
}

/// The `capture` key of the JSON document: the capture's report and the fabric check.
#[derive(Serialize)]
struct CaptureSection<'a> {
    report: &'a rocescope::report::Report,
    check: &'a Check,
}

#[derive(Serialize)]
struct WithCapture<'a> {
    #[serde(flatten)]
    generator: &'a Report,
    capture: CaptureSection<'a>,
}

/// `--capture`: the run's report, the capture's analysis and the fabric check, the FABRIC CHECK line last
/// (with `json`, on standard error). Fails when the capture's analysis cannot be written.
pub fn print_checked(
    report: &Report,
    captured: &rocescope::report::Report,
    check: &Check,
    json: bool,
) -> anyhow::Result<()> {
    if json {
        print_json(&WithCapture {
            generator: report,
            capture: CaptureSection {
                report: captured,
                check,
            },
        });
        if let Some(e) = &report.error {
            eprintln!("rocescope: gen: {e}");
        }
        eprintln!("{}", check.line);
        return Ok(());
    }
    print_report(report, false);
    println!();
    let mut out = std::io::stdout().lock();
    rocescope::report::text::write(&mut out, captured, None)
        .context("cannot write the capture report")?;
    drop(out);
    for l in super::check::detail_lines(check) {
        println!("{l}");
    }
    println!("{}", check.line);
    Ok(())
}

pub fn print_server_report(r: &ServerReport, json: bool) {
    if json {
        print_json(r);
    } else {
        for (e, c) in r.qps.iter().zip(&r.client_qpns) {
            println!(
                "{} port {}: QPN {:#08x}, GID index {} {}, SQ PSN {}, RQ PSN {}; client QPN {c:#08x}",
                e.device, e.port, e.qpn, e.gid_index, e.gid, e.sq_psn, e.rq_psn
            );
        }
        println!(
            "client {}: {} x {} bytes per QP posted {:?}, path MTU {}, {} slots per QP",
            r.client,
            r.op.map_or("?", |o| o.name()),
            r.size,
            r.posted_by_client,
            r.mtu,
            r.slots
        );
        let c = &r.summary.data_check;
        println!(
            "received {} messages; memory checked for {} WRITEs; data check: {} ({} checked, {} mismatches)",
            r.summary.received,
            r.summary.memory_checked,
            c.status.as_str(),
            c.checked,
            c.mismatches
        );
    }
    if let Some(e) = &r.summary.error {
        eprintln!("rocescope: gen server: {e}");
    }
}
