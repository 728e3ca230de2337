//! `rocescope inject`: acts on chosen RoCE packets on their way (drop, CE mark, corrupt, delay, duplicate,
//! reorder) and logs every action, so that a NIC's reaction can be judged against what was done.
//!
//! [`Injector`] is the decision, pure: it takes each IPv4 datagram the path hands it (as NFQUEUE does, from
//! the IP header on) and says what to do, with the facts of the packet for the log; [`edit`] changes the bytes
//! (CE, a flipped bit). Where it stands on the path is the backend's: `nfqueue` (Linux, nftables' queue on
//! the output hook: kernel-path RoCE, Soft-RoCE) or `bump` (Linux, a bump in the wire between two
//! interfaces, AF_PACKET: any NIC's traffic, a box between two hosts). Both log each action with
//! [`log_action`].
use std::net::Ipv4Addr;

use parsers::aeth::{Aeth, Syndrome};
use parsers::bth::Bth;
use parsers::ipv4::{Ipv4Header, PROTO_UDP};
use parsers::opcode::{CNP, Opcode};
use parsers::psn::{PSN_MASK, add};
use parsers::udp::{ROCEV2_PORT, UdpHeader};
use rustc_hash::FxHashMap;
use serde::Serialize;

#[cfg(target_os = "linux")]
pub mod bump;
pub mod edit;
pub mod hold;
#[cfg(target_os = "linux")]
pub mod nfqueue;
pub mod rules;

use rules::{Action, Class, Direction, PsnSelector, QpSelector, Rule};

/// The (PSN, flow) pairs whose transmissions are counted at most: past it the counts start again (a
/// resend rule then takes a later PSN's transmission for its first).
const OCCURRENCES_KEPT: usize = 1 << 20;

/// The flows given an index at most: a flow first seen past them has none ([`NO_INDEX`], which no `qp=N`
/// names) and its first PSN is each packet's own.
const FLOWS_KEPT: usize = 1 << 16;
pub const NO_INDEX: u32 = u32::MAX;

/// A RoCE packet as the injector sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Seen {
    #[serde(serialize_with = "as_text")]
    pub src: Ipv4Addr,
    #[serde(serialize_with = "as_text")]
    pub dst: Ipv4Addr,
    /// The IPv4 identification: which frame of a capture it is (a resend has another).
    pub ip_id: u16,
    pub dest_qp: u32,
    pub psn: u32,
    pub opcode: u8,
    #[serde(serialize_with = "class_name")]
    pub class: Class,
    /// The flow's index among the flows of its direction, in the order first seen.
    pub qp: u32,
    /// Its PSN's transmissions before this one, in its flow (0: the first).
    pub resend: u32,
    /// Its PSN less the flow's first PSN seen (mod 2^24).
    pub psn_from_first: u32,
}

fn as_text<S: serde::Serializer>(a: &Ipv4Addr, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(a)
}

fn class_name<S: serde::Serializer>(c: &Class, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(c.name())
}

/// One line of the log: what was done to which packet, when.
#[derive(Debug, Serialize)]
struct Logged<'a> {
    /// Seconds since the Unix epoch.
    time: f64,
    rule: usize,
    text: &'a str,
    action: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    delay_us: Option<u64>,
    #[serde(flatten)]
    packet: &'a Seen,
    /// `ce`: the ECN field before.
    #[serde(skip_serializing_if = "Option::is_none")]
    ecn_before: Option<u8>,
}

/// Writes the log's line for `action` of rule `rule` on `seen`, now, and flushes it (the judge may read the
/// log while the run goes on).
pub fn log_action(
    log: &mut dyn std::io::Write,
    injector: &Injector,
    rule: usize,
    action: Action,
    seen: &Seen,
    ecn_before: Option<u8>,
) -> std::io::Result<()> {
    let line = Logged {
        time: std::time::SystemTime::now()
            .duration_since(std::time::SystemTime::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64()),
        rule,
        text: injector.rules().get(rule).map_or("", |r| r.text.as_str()),
        action: action.name(),
        delay_us: match action {
            Action::Delay(d) => Some(d.as_micros() as u64),
            _ => None,
        },
        packet: seen,
        ecn_before,
    };
    serde_json::to_writer(&mut *log, &line)?;
    writeln!(log)?;
    log.flush()
}

/// What to do with one datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Not RoCE, or no rule for it: let it go as it is.
    Pass,
    /// Rule `rule` acts on it.
    Act {
        rule: usize,
        action: Action,
        seen: Seen,
    },
}

/// How many datagrams the injector saw, of them RoCE, matched by a rule, acted on.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub seen: u64,
    pub roce: u64,
    pub matched: u64,
    pub acted: u64,
    /// Per rule, in the order given: the packets it acted on.
    pub by_rule: Vec<u64>,
}

/// A flow: its direction, addresses and destination QP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FlowKey {
    pub requests: bool,
    pub src: [u8; 4],
    pub dst: [u8; 4],
    pub dest_qp: u32,
}

/// What the injector reads of a RoCEv2 datagram: its flow, IPv4 identification, BTH and class.
#[derive(Debug, Clone, Copy)]
pub struct Roce {
    pub flow: FlowKey,
    pub ip_id: u16,
    pub bth: Bth,
    pub class: Class,
}

impl Roce {
    /// `None` when `datagram` (from its IPv4 header on) is no RoCEv2 packet: a fragment, another protocol or
    /// port, a damaged header.
    pub fn read(datagram: &[u8]) -> Option<Roce> {
        let (ip, rest) = Ipv4Header::parse(datagram).ok()?;
        if ip.protocol != PROTO_UDP || ip.is_fragment() {
            return None;
        }
        let (udp, rest) = UdpHeader::parse(rest).ok()?;
        if udp.dst_port != ROCEV2_PORT {
            return None;
        }
        let (bth, rest) = Bth::parse(rest).ok()?;
        let class = class_of(bth.op(), rest)?;
        let flow = FlowKey {
            requests: class == Class::Request,
            src: ip.src,
            dst: ip.dst,
            dest_qp: bth.dest_qp,
        };
        Some(Roce {
            flow,
            ip_id: ip.id,
            bth,
            class,
        })
    }
}

#[derive(Debug, Clone, Copy)]
struct FlowState {
    index: u32,
    first_psn: u32,
}

/// The rules and what the run has seen: flows in the order first seen, each PSN's transmissions.
#[derive(Debug)]
pub struct Injector {
    rules: Vec<Rule>,
    flows: FxHashMap<FlowKey, FlowState>,
    /// Flows first seen, per direction: [responses, requests].
    flows_seen: [u32; 2],
    transmissions: FxHashMap<(FlowKey, u32), u32>,
    pub counts: Counts,
}

impl Injector {
    pub fn new(rules: Vec<Rule>) -> Injector {
        let n = rules.len();
        Injector {
            rules,
            flows: FxHashMap::default(),
            flows_seen: [0; 2],
            transmissions: FxHashMap::default(),
            counts: Counts {
                by_rule: vec![0; n],
                ..Counts::default()
            },
        }
    }

    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// What to do with `datagram` (from its IPv4 header on).
    pub fn decide(&mut self, datagram: &[u8]) -> Decision {
        self.counts.seen += 1;
        let Some(seen) = self.look(datagram) else {
            return Decision::Pass;
        };
        self.counts.roce += 1;
        // The first rule that matches it and has not yet acted as often as it may.
        let mut matched = false;
        let mut chosen = None;
        for (i, r) in self.rules.iter().enumerate() {
            if !matches(r, &seen) {
                continue;
            }
            matched = true;
            let done = self.counts.by_rule.get(i).copied().unwrap_or(0);
            if r.times.is_none_or(|budget| done < budget) {
                chosen = Some((i, r.action));
                break;
            }
        }
        self.counts.matched += u64::from(matched);
        let Some((rule, action)) = chosen else {
            return Decision::Pass;
        };
        if let Some(n) = self.counts.by_rule.get_mut(rule) {
            *n += 1;
        }
        self.counts.acted += 1;
        Decision::Act { rule, action, seen }
    }

    /// The packet's facts, its flow and its PSN's transmissions counted; `None` when it is no RoCEv2
    /// packet over IPv4.
    fn look(&mut self, datagram: &[u8]) -> Option<Seen> {
        let Roce {
            flow: key,
            ip_id,
            bth,
            class,
        } = Roce::read(datagram)?;
        let next = &mut self.flows_seen[usize::from(key.requests)];
        let new = FlowState {
            index: NO_INDEX,
            first_psn: bth.psn,
        };
        let flow = match self.flows.get(&key) {
            Some(f) => *f,
            None if self.flows.len() >= FLOWS_KEPT => new,
            None => {
                let f = FlowState {
                    index: *next,
                    ..new
                };
                *next += 1;
                self.flows.insert(key, f);
                f
            }
        };
        if self.transmissions.len() >= OCCURRENCES_KEPT {
            self.transmissions.clear();
        }
        let sent = self.transmissions.entry((key, bth.psn)).or_insert(0);
        let resend = *sent;
        *sent += 1;
        Some(Seen {
            src: Ipv4Addr::from(key.src),
            dst: Ipv4Addr::from(key.dst),
            ip_id,
            dest_qp: bth.dest_qp,
            psn: bth.psn,
            opcode: bth.opcode,
            class,
            qp: flow.index,
            resend,
            psn_from_first: add(bth.psn, flow.first_psn.wrapping_neg()) & PSN_MASK,
        })
    }
}

/// The class of a packet with opcode `op`, `rest` after its BTH.
fn class_of(op: Opcode, rest: &[u8]) -> Option<Class> {
    if op.0 == CNP {
        return Some(Class::Cnp);
    }
    if op.is_request() {
        return Some(Class::Request);
    }
    if op.is_read_response() {
        return Some(Class::ReadResponse);
    }
    if op.is_atomic_ack() {
        return Some(Class::AtomicAck);
    }
    if op.is_ack() {
        let (aeth, _) = Aeth::parse(rest).ok()?;
        return Some(match aeth.decoded() {
            Syndrome::Ack { .. } => Class::Ack,
            Syndrome::RnrNak { .. } => Class::RnrNak,
            _ => Class::Nak,
        });
    }
    None
}

fn matches(rule: &Rule, seen: &Seen) -> bool {
    let direction = match rule.direction {
        Direction::Requests => seen.class == Class::Request,
        Direction::Responses => seen.class != Class::Request,
        Direction::Any => true,
    };
    let qp = match rule.qp {
        None => true,
        Some(QpSelector::Index(i)) => seen.qp == i,
        Some(QpSelector::Qpn(n)) => seen.dest_qp == n,
    };
    let psn = match rule.psn {
        None => true,
        Some(PsnSelector::Absolute(p)) => seen.psn == p,
        Some(PsnSelector::FromFirst(k)) => seen.psn_from_first == k,
    };
    direction
        && qp
        && psn
        && rule.class.is_none_or(|c| c == seen.class)
        && rule.resend.is_none_or(|r| seen.resend == r)
}

#[cfg(test)]
mod tests;
