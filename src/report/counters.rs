//! The NIC's counters beside a live capture (`counters` in the report): what the RDMA ports on the capture
//! interface, and those whose addresses the capture saw, counted over the capture's interval, each counter
//! held against the capture's own figure for the same packets by the relation that should hold, and
//! whether it does.
use std::collections::BTreeMap;
use std::io::{self, Write};
use std::net::IpAddr;

use serde::Serialize;

use crate::analysis::Engine;
use crate::analysis::flow::Flow;
use crate::host::counters::{Delta, Deltas, Layout, NetdevDeltas, PortPlace, Snapshot};

#[derive(Debug, Clone, Serialize)]
pub struct NicCounters {
    /// Seconds between the two readings (the capture's start and end).
    pub interval_s: f64,
    pub ports: Vec<PortCounters>,
    /// The capture interface's statistics (sysfs and ethtool), when it is a netdev of an RDMA port.
    pub netdevs: Vec<NetdevDeltas>,
    pub relations: Vec<Relation>,
    /// Relations that do not hold.
    pub disagreements: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct PortCounters {
    pub device: String,
    pub port: u32,
    pub netdevs: Vec<String>,
    pub addresses: Vec<String>,
    /// `interface` (it sits on the capture interface) or `address` (the capture saw its address).
    pub why: &'static str,
    /// What moved, hw_counters and port counters, by the kernel's names.
    pub deltas: BTreeMap<String, Delta>,
}

/// How a NIC counter and a capture figure should compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Holds {
    #[serde(rename = "=")]
    Equal,
    /// The NIC counts at most what the capture saw (it skips some).
    #[serde(rename = "<=")]
    AtMost,
    /// The NIC counts at least what the capture saw (what happens after the capture point adds to it).
    #[serde(rename = ">=")]
    AtLeast,
}

impl Holds {
    fn test(self, nic: u64, seen: u64) -> bool {
        match self {
            Holds::Equal => nic == seen,
            Holds::AtMost => nic <= seen,
            Holds::AtLeast => nic >= seen,
        }
    }

    fn sign(self) -> &'static str {
        match self {
            Holds::Equal => "=",
            Holds::AtMost => "<=",
            Holds::AtLeast => ">=",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Relation {
    pub device: String,
    pub port: u32,
    pub counter: &'static str,
    pub nic: u64,
    /// The capture's figure, and what it is.
    pub capture: u64,
    pub capture_figure: &'static str,
    /// `nic RELATION capture` should hold.
    pub relation: Holds,
    pub holds: bool,
    /// What a disagreement means (null when it holds).
    pub meaning: Option<String>,
}

/// A capture figure: summed over the flows from (or to) a port's addresses.
#[derive(Clone, Copy)]
enum Figure {
    PacketsFrom,
    PacketsTo,
    SeqNaksFrom,
    SeqNaksTo,
    RnrNaksFrom,
    RnrNaksTo,
    AheadTo,
    BehindTo,
    ResendRoundsFrom,
    CnpsFrom,
    CeTo,
    BadIcrcTo,
}

impl Figure {
    fn of(self, f: &Flow) -> u64 {
        match self {
            Figure::PacketsFrom | Figure::PacketsTo => f.packets,
            Figure::SeqNaksFrom | Figure::SeqNaksTo => f.resp.naks.psn_seq_err,
            Figure::RnrNaksFrom | Figure::RnrNaksTo => f.resp.rnr_naks,
            Figure::AheadTo => f.req.psn.ahead_epsn,
            Figure::BehindTo => f.req.psn.behind_epsn,
            Figure::ResendRoundsFrom => f.req.psn.episodes,
            Figure::CnpsFrom => f.cnp,
            Figure::CeTo => f.ecn[3],
            Figure::BadIcrcTo => f.icrc_bad,
        }
    }

    /// The figure counts flows from the port (else to it).
    fn from(self) -> bool {
        matches!(
            self,
            Figure::PacketsFrom
                | Figure::SeqNaksFrom
                | Figure::RnrNaksFrom
                | Figure::ResendRoundsFrom
                | Figure::CnpsFrom
        )
    }
}

/// The relations, by the kernel's counter names (rxe's measured in the Soft-RoCE lab, mlx5's from its
/// documentation): counter, relation, capture figure, what the figure is.
const RULES: [(&str, Holds, Figure, &str); 14] = [
    (
        "sent_pkts",
        Holds::Equal,
        Figure::PacketsFrom,
        "RoCE packets from its addresses",
    ),
    (
        "rcvd_pkts",
        Holds::Equal,
        Figure::PacketsTo,
        "RoCE packets to its addresses",
    ),
    // at most: a duplicate still queued when its QP is destroyed is never checked (a timer resend whose ACK
    // came just after it, in a slow lab run: rxe received 16 and counted none)
    (
        "duplicate_request",
        Holds::AtMost,
        Figure::BehindTo,
        "requests to it behind the PSN it expected",
    ),
    (
        "out_of_seq_request",
        Holds::Equal,
        Figure::SeqNaksFrom,
        "PSN sequence error NAKs it sent",
    ),
    (
        "rcvd_seq_err",
        Holds::AtMost,
        Figure::SeqNaksTo,
        "PSN sequence error NAKs sent to it",
    ),
    (
        "completer_retry_err",
        Holds::Equal,
        Figure::ResendRoundsFrom,
        "go-back-N resend rounds of its requests",
    ),
    (
        "rcvd_rnr_err",
        Holds::Equal,
        Figure::RnrNaksTo,
        "RNR NAKs sent to it",
    ),
    (
        "send_rnr_err",
        Holds::Equal,
        Figure::RnrNaksFrom,
        "RNR NAKs it sent",
    ),
    (
        "out_of_sequence",
        Holds::Equal,
        Figure::AheadTo,
        "requests to it ahead of the PSN it expected",
    ),
    (
        "packet_seq_err",
        Holds::Equal,
        Figure::SeqNaksTo,
        "PSN sequence error NAKs sent to it",
    ),
    (
        "rnr_nak_retry_err",
        Holds::Equal,
        Figure::RnrNaksTo,
        "RNR NAKs sent to it",
    ),
    (
        "np_cnp_sent",
        Holds::Equal,
        Figure::CnpsFrom,
        "CNPs it sent",
    ),
    (
        "np_ecn_marked_roce_packets",
        Holds::AtLeast,
        Figure::CeTo,
        "CE-marked packets to it",
    ),
    (
        "rx_icrc_encapsulated",
        Holds::AtLeast,
        Figure::BadIcrcTo,
        "packets to it with a bad ICRC",
    ),
];

/// The NIC's counters over the capture (`start` and `end` of the ports in `layout`), held against the
/// engine's figures; `interface` is the capture's, `dropped` libpcap's drops.
pub fn build(
    engine: &Engine,
    layout: &Layout,
    start: &Snapshot,
    end: &Snapshot,
    interface: &str,
    dropped: u64,
) -> NicCounters {
    // every counter for the relations (one that stayed at 0 is held too), what moved for the listing
    let all = Deltas::between(start, end, true);
    let moved = Deltas::between(start, end, false);
    let seen: Vec<IpAddr> = engine
        .flows
        .iter()
        .flat_map(|f| [ip(&f.key.src), ip(&f.key.dst)].into_iter().flatten())
        .collect();
    let mut ports = Vec::new();
    let mut relations = Vec::new();
    for place in &layout.ports {
        let Some(why) = why(place, interface, &seen) else {
            continue;
        };
        for (counter, holds, figure, what) in RULES {
            if let Some(Delta::Rose(nic)) = all.port(&place.device, place.port, counter) {
                let capture = sum(engine, &place.addresses, figure);
                relations.push(relation(place, counter, nic, capture, holds, what, dropped));
            }
        }
        let Some(d) = moved
            .ports
            .iter()
            .find(|d| d.device == place.device && d.port == place.port)
        else {
            continue;
        };
        ports.push(PortCounters {
            device: place.device.clone(),
            port: place.port,
            netdevs: place.netdevs.clone(),
            addresses: place.addresses.iter().map(IpAddr::to_string).collect(),
            why,
            deltas: d
                .hw_counters
                .iter()
                .chain(&d.counters)
                .map(|(n, v)| (n.clone(), *v))
                .collect(),
        });
    }
    NicCounters {
        interval_s: end.at.duration_since(start.at).as_secs_f64(),
        disagreements: relations.iter().filter(|r| !r.holds).count(),
        ports,
        netdevs: moved
            .netdevs
            .into_iter()
            .filter(|n| n.netdev == interface)
            .collect(),
        relations,
    }
}

/// Why a port is in the report: it sits on the capture interface (or the capture is on `any`), or the
/// capture saw its address; `None`: it is not.
fn why(place: &PortPlace, interface: &str, seen: &[IpAddr]) -> Option<&'static str> {
    if interface == "any" || place.netdevs.iter().any(|n| n == interface) {
        Some("interface")
    } else if place.addresses.iter().any(|a| seen.contains(a)) {
        Some("address")
    } else {
        None
    }
}

/// A LID is no IP address: a RoCE port's counters never count an InfiniBand flow.
fn ip(a: &parsers::frame::Addr) -> Option<IpAddr> {
    match *a {
        parsers::frame::Addr::V4(b) => Some(IpAddr::from(b)),
        parsers::frame::Addr::V6(b) => Some(IpAddr::from(b)),
        parsers::frame::Addr::Lid(_) => None,
    }
}

fn sum(engine: &Engine, addresses: &[IpAddr], figure: Figure) -> u64 {
    engine
        .flows
        .iter()
        .filter(|f| {
            ip(if figure.from() {
                &f.key.src
            } else {
                &f.key.dst
            })
            .is_some_and(|a| addresses.contains(&a))
        })
        .map(|f| figure.of(f))
        .sum()
}

fn relation(
    place: &PortPlace,
    counter: &'static str,
    nic: u64,
    capture: u64,
    holds: Holds,
    what: &'static str,
    dropped: u64,
) -> Relation {
    let ok = holds.test(nic, capture);
    let meaning = (!ok).then(|| {
        let drops = if dropped > 0 {
            format!(" (libpcap dropped {dropped} frames: the sniffer missed packets)")
        } else {
            String::new()
        };
        if nic > capture {
            format!(
                "the NIC counted {} more than the capture saw: packets the capture point did not see (dropped \
                 before it, by a qdisc such as netem or the kernel's buffers, or sent on another path){drops}",
                nic - capture
            )
        } else {
            format!(
                "the capture saw {} more than the NIC counted: packets lost after the capture point before the \
                 NIC counted them, or traffic of another device with the same address{drops}",
                capture - nic
            )
        }
    });
    Relation {
        device: place.device.clone(),
        port: place.port,
        counter,
        nic,
        capture,
        capture_figure: what,
        relation: holds,
        holds: ok,
        meaning,
    }
}

impl NicCounters {
    /// What each port counted, a line each.
    fn ports_text(&self, out: &mut dyn Write) -> io::Result<()> {
        for p in &self.ports {
            let moved: Vec<String> = p.deltas.iter().map(|(n, d)| format!("{n} {d}")).collect();
            writeln!(
                out,
                "  {}/{} ({}, {}): {}",
                p.device,
                p.port,
                p.netdevs.join(" "),
                if p.why == "interface" {
                    "on the capture interface"
                } else {
                    "its address is in the capture"
                },
                if moved.is_empty() {
                    "nothing moved".to_string()
                } else {
                    moved.join(", ")
                }
            )?;
        }
        Ok(())
    }

    /// The text report's section.
    pub fn write_text(&self, out: &mut dyn Write) -> io::Result<()> {
        if self.ports.is_empty() {
            return writeln!(
                out,
                "NIC counters: none (no RDMA port on the capture interface or at an address it saw)"
            );
        }
        writeln!(
            out,
            "NIC counters over the capture ({:.3} s): {}",
            self.interval_s,
            match (self.relations.len(), self.disagreements) {
                (0, _) => "no counter to hold against the capture".to_string(),
                (n, 0) => format!("all {n} relations hold"),
                (n, d) => format!("{d} of {n} relations do NOT hold"),
            }
        )?;
        self.ports_text(out)?;
        for r in &self.relations {
            writeln!(
                out,
                "    {}/{} {} +{} vs {} {} (should be {}): {}",
                r.device,
                r.port,
                r.counter,
                r.nic,
                r.capture,
                r.capture_figure,
                r.relation.sign(),
                r.meaning
                    .as_deref()
                    .map_or("holds".to_string(), |m| format!("DISAGREES: {m}"))
            )?;
        }
        Ok(())
    }
}
