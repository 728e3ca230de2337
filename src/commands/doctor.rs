//! `rocescope doctor`: the host's RDMA set-up examined layer by layer, as text or JSON; exit 0 (no error),
//! 1 (a finding of severity error), 4 (no RDMA here).
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use rocescope::host::doctor::{self, Examination, Finding, Severity};
use rocescope::host::netdev::Netdev;
use rocescope::host::rdma::{self, Device, Port};
use rocescope::host::{Root, congestion::Pfc};

use super::fail;

#[derive(Debug, Clone)]
pub struct Config {
    /// A recorded tree instead of `/`.
    pub root: Option<PathBuf>,
    pub device: Option<String>,
    pub json: bool,
}

/// GID entries the text lists per port; the JSON has them all.
const GIDS_SHOWN: usize = 16;

pub fn run(cfg: &Config) -> ExitCode {
    let root = match &cfg.root {
        Some(d) => match Root::recorded(d) {
            Ok(r) => r,
            Err(e) => return fail(anyhow::Error::from(e).context("doctor")),
        },
        None => Root::live(),
    };
    let exam = match doctor::examine(&root, cfg.device.as_deref()) {
        Ok(e) => e,
        Err(e) => return fail(anyhow::Error::from(e).context("doctor")),
    };
    let mut out = BufWriter::new(io::stdout().lock());
    let written = if cfg.json {
        serde_json::to_writer_pretty(&mut out, &exam)
            .map_err(io::Error::other)
            .and_then(|()| writeln!(out))
    } else {
        text(&mut out, &exam)
    };
    match written.and_then(|()| out.flush()) {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => {
            fail(anyhow::Error::from(e).context("cannot write the report"))
        }
        _ => ExitCode::from(exam.exit_status()),
    }
}

fn text(out: &mut dyn Write, e: &Examination) -> io::Result<()> {
    let h = &e.host;
    writeln!(
        out,
        "Host {}: kernel {}; RDMA subsystem {}; libibverbs {}; net.ipv4.tcp_ecn {}; kernel log {}",
        h.root,
        h.kernel.as_deref().unwrap_or("unknown"),
        if e.findings
            .iter()
            .any(|f| f.code == "file_unreadable" && f.layer == rocescope::host::Layer::Kernel)
        {
            "unreadable"
        } else if h.rdma_subsystem {
            "present"
        } else {
            "absent"
        },
        h.libibverbs.as_deref().unwrap_or(if h.libraries_recorded {
            "not found"
        } else {
            "not recorded"
        }),
        h.tcp_ecn.map_or("unknown".to_string(), |v| v.to_string()),
        h.kernel_log
    )?;
    for d in &e.devices {
        device(out, e, d)?;
    }
    findings(out, &e.findings)?;
    let verdict = match e.exit_status() {
        doctor::NO_RDMA => "no RDMA here".to_string(),
        1 => format!("{} error(s)", e.count(Severity::Error)),
        _ => "no error".to_string(),
    };
    writeln!(out, "\ndoctor: {verdict} (exit status {})", e.exit_status())
}

fn device(out: &mut dyn Write, e: &Examination, d: &Device) -> io::Result<()> {
    writeln!(
        out,
        "\n{}: driver {}{}, provider {} ({}), node {} GUID {}, firmware {}",
        d.name,
        d.driver.as_deref().unwrap_or("unknown"),
        d.parent
            .as_ref()
            .map_or(String::new(), |p| format!(" on {p}")),
        d.provider.as_deref().unwrap_or("unknown"),
        d.provider_library
            .as_deref()
            .unwrap_or(if e.host.libraries_recorded {
                "library not found"
            } else {
                "library not recorded"
            }),
        d.node_type.as_deref().unwrap_or("?"),
        d.node_guid.as_deref().unwrap_or("?"),
        d.fw_ver.as_deref().unwrap_or("not exposed")
    )?;
    for p in &d.ports {
        port(out, e, d, p)?;
    }
    Ok(())
}

fn port(out: &mut dyn Write, e: &Examination, d: &Device, p: &Port) -> io::Result<()> {
    let state = |s: &Option<rdma::State>| s.as_ref().map_or("?".to_string(), |s| s.name.clone());
    writeln!(
        out,
        "  port {}: {}, {}, {}, {}",
        p.port,
        state(&p.state),
        state(&p.phys_state),
        p.link_layer.as_deref().unwrap_or("?"),
        p.rate.as_deref().unwrap_or("rate unknown")
    )?;
    writeln!(
        out,
        "    MTU: active {}{}",
        p.active_mtu
            .map_or("unknown".to_string(), |m| m.to_string()),
        match (p.max_mtu, p.mtu_source) {
            (Some(m), Some(s)) => format!(" (max {m}; from {s})"),
            _ if !e.host.live =>
                " (not in sysfs; not recorded: no ibv_devinfo in the tree)".to_string(),
            _ => " (not in sysfs; libibverbs not asked)".to_string(),
        }
    )?;
    gids(out, e, d, p)?;
    for n in &p.netdevs {
        netdev(out, n)?;
    }
    writeln!(
        out,
        "    counters: {} hw_counters, {} port counters (the findings name those that indicate trouble)",
        p.hw_counters.len(),
        p.counters.len()
    )
}

/// The GID table's first entries and the RoCE v2 indices.
fn gids(out: &mut dyn Write, e: &Examination, d: &Device, p: &Port) -> io::Result<()> {
    let listed: Vec<String> = p
        .gids
        .iter()
        .take(GIDS_SHOWN)
        .map(|g| {
            format!(
                "{} {} {} {}",
                g.index,
                g.gid,
                g.kind,
                g.netdev.as_deref().unwrap_or("-")
            )
        })
        .collect();
    let more = p.gids.len().saturating_sub(GIDS_SHOWN);
    writeln!(
        out,
        "    GIDs: {}{}",
        if listed.is_empty() {
            "none".to_string()
        } else {
            listed.join("; ")
        },
        if more > 0 {
            format!("; {more} more")
        } else {
            String::new()
        }
    )?;
    if let Some(i) = e.gid_index.get(&format!("{}/{}", d.name, p.port)) {
        let idx = |v: Option<u32>| v.map_or("none".to_string(), |i| format!("GID index {i}"));
        writeln!(
            out,
            "    RoCE v2 over IPv4: {}; over IPv6: {}",
            idx(i.roce_v2_ipv4),
            idx(i.roce_v2_ipv6)
        )?;
    }
    Ok(())
}

fn netdev(out: &mut dyn Write, n: &Netdev) -> io::Result<()> {
    let neigh: Vec<String> = n
        .neighbours
        .iter()
        .map(|x| format!("{} {} {}", x.address, x.state, x.mac))
        .collect();
    writeln!(
        out,
        "    netdev {}: {}{}, MTU {} (carries IB MTU {}), speed {}, {}; addresses {}; neighbours {}",
        n.name,
        n.operstate.as_deref().unwrap_or("?"),
        match n.carrier {
            Some(true) => " (carrier)",
            Some(false) => " (no carrier)",
            None => "",
        },
        n.mtu.map_or("?".to_string(), |m| m.to_string()),
        n.ib_mtu_allowed
            .map_or("none".to_string(), |m| m.to_string()),
        n.speed_mbps
            .map_or("unknown".to_string(), |s| format!("{s} Mb/s")),
        n.vlan.as_ref().map_or("no VLAN".to_string(), |v| format!(
            "VLAN {} on {}",
            v.id, v.parent
        )),
        if n.addresses.is_empty() {
            "none".to_string()
        } else {
            n.addresses.join(", ")
        },
        if neigh.is_empty() {
            "none".to_string()
        } else {
            neigh.join(", ")
        }
    )?;
    let pfc = match &n.pfc {
        Pfc::Read { enabled, .. } if enabled.is_empty() => "PFC enabled on no priority".to_string(),
        Pfc::Read { enabled, .. } => format!("PFC on priorities {enabled:?}"),
        Pfc::NotExposed { .. } => "PFC not exposed by the driver".to_string(),
        Pfc::NotRead => "PFC not read (netlink: the running system only)".to_string(),
    };
    let ecn = n.ecn.as_ref().map_or("no ECN knobs".to_string(), |e| {
        format!(
            "ECN notification point on {:?}, reaction point on {:?}",
            e.np_enabled, e.rp_enabled
        )
    });
    writeln!(
        out,
        "    congestion: {ecn}; {pfc}; {} pause counters",
        n.pause.len()
    )
}

fn findings(out: &mut dyn Write, f: &[Finding]) -> io::Result<()> {
    let n = |s| f.iter().filter(|x| x.severity == s).count();
    writeln!(
        out,
        "\nFindings: {} errors, {} warnings, {} notes",
        n(Severity::Error),
        n(Severity::Warning),
        n(Severity::Note)
    )?;
    for x in f {
        let place = match (&x.device, x.port) {
            (Some(d), Some(p)) => format!("{d}/{p}"),
            (Some(d), None) => d.clone(),
            _ => "host".to_string(),
        };
        writeln!(
            out,
            "  {:<7}  {}  {}  {}",
            x.severity.name(),
            x.layer.name(),
            place,
            x.code
        )?;
        writeln!(out, "      evidence: {}", x.evidence)?;
        writeln!(out, "      meaning:  {}", x.meaning)?;
        writeln!(out, "      fix:      {}", x.fix)?;
    }
    Ok(())
}
