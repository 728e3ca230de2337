//! The connection table of the report: each connection's two sides, its handshake, and whether the wire
//! matched what the hosts believed.
use std::io::{self, Write};

use parsers::psn::Shown;
use serde::Serialize;

use rustc_hash::FxHashMap;

use crate::analysis::Engine;
use crate::analysis::connections::{Connection, Origin, Seen, State};

#[derive(Debug, Serialize)]
pub struct ConnectionReport {
    pub id: u32,
    pub origin: Origin,
    pub state: State,
    /// The active side (CM client, or the first printout's host) first.
    pub sides: [SideReport; 2],
    pub mtu: Option<u32>,
    pub retry_count: Option<u8>,
    pub rnr_retry_count: Option<u8>,
    /// The RDMA CM port (from the service ID).
    pub port: Option<u16>,
    /// CM only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handshake: Option<HandshakeReport>,
    /// The wire agrees with the handshake or the printout: data toward the announced QPNs, from the
    /// announced PSNs, and nothing toward other QPNs between the two addresses.
    pub matched: bool,
    /// What did not match, in words.
    pub mismatches: Vec<String>,
    /// What else is worth knowing, in words (a host that printed other PSNs than the handshake set).
    pub notes: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct SideReport {
    pub address: Option<String>,
    pub qpn: u32,
    /// The PSN it announced it sends from.
    pub start_psn: Option<u32>,
    /// Its first request on the wire: PSN and frame.
    pub first_psn: Option<u32>,
    pub first_frame: Option<u64>,
    /// The flow of its requests (toward the other side's QPN): its `id`, while it is alive.
    pub flow: Option<u64>,
}

#[derive(Debug, Serialize)]
pub struct HandshakeReport {
    pub req: Option<MessageReport>,
    pub mra: Option<MessageReport>,
    pub rep: Option<MessageReport>,
    pub rtu: Option<MessageReport>,
    pub rej: Option<MessageReport>,
    pub rej_reason: Option<u16>,
    pub dreq: Option<MessageReport>,
    pub drep: Option<MessageReport>,
    /// From the first REQ to the REP, and from the REP to the RTU, in seconds.
    pub req_to_rep_s: Option<f64>,
    pub rep_to_rtu_s: Option<f64>,
    pub comm_ids: [Option<u32>; 2],
}

#[derive(Debug, Serialize)]
pub struct MessageReport {
    pub frame: u64,
    pub time: f64,
    /// How many times it came (a retried REQ or REP comes again).
    pub count: u32,
}

fn message(s: Option<Seen>) -> Option<MessageReport> {
    s.map(|s| MessageReport {
        frame: s.frame,
        time: s.ts as f64 / 1e9,
        count: s.count,
    })
}

fn between(a: Option<Seen>, b: Option<Seen>) -> Option<f64> {
    Some(b?.first_ts.saturating_sub(a?.first_ts) as f64 / 1e9)
}

/// The report of every connection of `engine` (a printout of the same QPs as a handshake is the
/// handshake's).
pub fn build(engine: &Engine) -> Vec<ConnectionReport> {
    let list = &engine.connections.list;
    // What each connection's lines need from the others, gathered in one pass each: the printouts a
    // handshake superseded, the events that name it.
    let mut twins: FxHashMap<u32, Vec<&Connection>> = FxHashMap::default();
    for p in list {
        if let Some(cm) = p.superseded_by {
            twins.entry(cm).or_default().push(p);
        }
    }
    let mut unexpected: FxHashMap<u32, Vec<(u32, u64)>> = FxHashMap::default();
    for e in engine.events.kept() {
        if let crate::analysis::events::Kind::UnexpectedQp { qpn, connection } = e.kind {
            unexpected
                .entry(connection)
                .or_default()
                .push((qpn, e.frame));
        }
    }
    list.iter()
        .enumerate()
        .filter(|(_, c)| c.superseded_by.is_none())
        .map(|(id, c)| {
            let id = id as u32;
            let printed = twins.get(&id).map_or(&[][..], Vec::as_slice);
            let unexpected = unexpected.get(&id).map_or(&[][..], Vec::as_slice);
            connection(engine, id, c, printed, unexpected)
        })
        .collect()
}

/// Connection `id`'s report; `printed`: the printouts of its QPs it superseded, `unexpected`: the data
/// toward QPNs it did not announce (QPN, frame).
fn connection(
    engine: &Engine,
    id: u32,
    c: &Connection,
    printed: &[&Connection],
    unexpected: &[(u32, u64)],
) -> ConnectionReport {
    let side = |d: usize| {
        let s = c.sides[d];
        SideReport {
            address: s.addr.map(|a| a.to_string()),
            qpn: s.qpn,
            start_psn: s.start_psn,
            first_psn: c.first_request[d].map(|r| r.0),
            first_frame: c.first_request[d].map(|r| r.1),
            flow: engine.number_of(c.flows[d]),
        }
    };
    let h = &c.handshake;
    let handshake = (c.origin == Origin::Cm).then(|| HandshakeReport {
        req: message(h.req),
        mra: message(h.mra),
        rep: message(h.rep),
        rtu: message(h.rtu),
        rej: message(h.rej.map(|r| r.0)),
        rej_reason: h.rej.map(|r| r.1),
        dreq: message(h.dreq),
        drep: message(h.drep),
        req_to_rep_s: between(h.req, h.rep),
        rep_to_rtu_s: between(h.rep, h.rtu),
        comm_ids: [Some(h.comm_ids.0), h.comm_ids.1],
    });
    let mismatches = mismatches(c, unexpected);
    ConnectionReport {
        id,
        origin: c.origin,
        state: c.state,
        sides: [side(0), side(1)],
        mtu: c.mtu,
        retry_count: c.retry_count,
        rnr_retry_count: c.rnr_retry_count,
        port: c.port,
        handshake,
        matched: mismatches.is_empty(),
        mismatches,
        notes: printed_otherwise(c, printed),
    }
}

/// The PSNs a host printed for the QPs of CM connection `c`, where they differ from the handshake's:
/// perftest -R prints PSNs of its own that its QPs do not use.
fn printed_otherwise(c: &Connection, printed: &[&Connection]) -> Vec<String> {
    let mut out = Vec::new();
    for p in printed {
        for printed in p.sides {
            let Some(side) = c.sides.iter().find(|s| s.qpn == printed.qpn) else {
                continue;
            };
            if let (Some(shown), Some(set)) = (printed.start_psn, side.start_psn)
                && shown != set
            {
                out.push(format!(
                    "the host printed PSN {} for QP 0x{:06x}; the handshake set {} (perftest -R prints PSNs its \
                     QPs do not use)",
                    Shown(shown),
                    printed.qpn,
                    Shown(set)
                ));
            }
        }
    }
    out
}

/// What the wire contradicts of connection `c`: a first PSN other than announced, data toward a QPN no
/// connection announced (the `unexpected_qp` events that name it), a side that announced and never sent
/// (once established: a requester must send for the connection to be used).
fn mismatches(c: &Connection, unexpected: &[(u32, u64)]) -> Vec<String> {
    let mut out = Vec::new();
    let used = c.first_request.iter().any(Option::is_some);
    for d in 0..2 {
        let (from, to) = (c.sides[d], c.sides[1 - d]);
        if let (Some(start), Some((psn, frame))) = (from.start_psn, c.first_request[d])
            && start != psn
        {
            out.push(format!(
                "QP 0x{:06x} started at PSN {} (frame {frame}), not the announced {}",
                from.qpn,
                Shown(psn),
                Shown(start)
            ));
        }
        if c.state == State::Established && !used && d == 0 {
            out.push(format!(
                "no data toward QP 0x{:06x} or QP 0x{:06x} in the capture",
                to.qpn, from.qpn
            ));
        }
    }
    for (qpn, frame) in unexpected {
        out.push(format!(
            "data toward QP 0x{qpn:06x} (frame {frame}), which it did not announce"
        ));
    }
    out
}

/// One line per connection: the two sides, the state, what the handshake said, and whether the wire matched.
pub fn write_text(out: &mut impl Write, list: &[ConnectionReport]) -> io::Result<()> {
    writeln!(out, "Connections")?;
    for c in list {
        // Before a REP, the passive side is its address and the port asked for.
        let unanswered = c.handshake.as_ref().is_some_and(|h| h.rep.is_none());
        let side = |s: &SideReport, passive: bool| {
            let addr = s.address.as_deref().unwrap_or("?");
            if passive && unanswered {
                return match c.port {
                    Some(p) => format!("{addr} port {p}"),
                    None => addr.to_string(),
                };
            }
            let psn = s
                .start_psn
                .map_or(String::new(), |p| format!(" PSN {}", Shown(p)));
            format!("{addr} QP 0x{:06x}{psn}", s.qpn)
        };
        let origin = match c.origin {
            Origin::Cm => "CM",
            Origin::Printout => "printed",
        };
        write!(
            out,
            "  #{} {origin} {}: {} ⇄ {}",
            c.id,
            c.state.words(),
            side(&c.sides[0], false),
            side(&c.sides[1], true)
        )?;
        if let Some(m) = c.mtu {
            write!(out, ", MTU {m}")?;
        }
        if let Some(h) = &c.handshake {
            if let Some(t) = h.req_to_rep_s {
                write!(out, ", REQ→REP {:.3} ms", t * 1e3)?;
            }
            if let Some(t) = h.rep_to_rtu_s {
                write!(out, ", REP→RTU {:.3} ms", t * 1e3)?;
            }
            if let Some(r) = h.rej_reason {
                write!(
                    out,
                    ", REJ reason {r} ({})",
                    crate::analysis::connections::reject_meaning(r)
                )?;
            }
        }
        for n in &c.notes {
            write!(out, " ({n})")?;
        }
        match (c.matched, c.state) {
            (true, State::Established | State::Disconnected) => {
                writeln!(out, ": the wire matches")?
            }
            (true, _) => writeln!(out, ": never established")?,
            (false, _) => writeln!(out, ": MISMATCH: {}", c.mismatches.join("; "))?,
        }
    }
    Ok(())
}
