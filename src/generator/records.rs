//! The generator's plain records: what a run reports (JSON with `--json`) and the out-of-band messages of
//! `gen client` and `gen server` (src/generator/oob.rs frames and checks them). Nothing here talks to a device
//! or a socket; every other module of the generator builds on these.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Op {
    Write,
    WriteImm,
    Send,
    Read,
    FetchAdd,
    CmpSwap,
}

impl Op {
    /// The two 8-byte atomics: one request packet and one ATOMIC_ACKNOWLEDGE per message.
    pub fn is_atomic(self) -> bool {
        matches!(self, Op::FetchAdd | Op::CmpSwap)
    }

    /// SEND and WRITE with immediate consume a receive work request on the responder.
    pub fn consumes_receive(self) -> bool {
        matches!(self, Op::Send | Op::WriteImm)
    }

    /// The operation as the verbs / the wire name it.
    pub fn name(self) -> &'static str {
        match self {
            Op::Write => "WRITE",
            Op::WriteImm => "WRITE_WITH_IMM",
            Op::Send => "SEND",
            Op::Read => "READ",
            Op::FetchAdd => "FETCH_ADD",
            Op::CmpSwap => "COMPARE_SWAP",
        }
    }
}

/// `--fault`: a failure injected on purpose, for testing what sees the traffic.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fault {
    /// The last message (WRITE or READ) carries a wrong R_Key: a NAK (remote access error).
    BadRkey,
    /// The requester QP is connected to a destination QPN that no QP has (`plan::wrong_qpn`): its requests
    /// go out and nothing answers; after --retry-count resends, IBV_WC_RETRY_EXC_ERR.
    WrongQpn,
    /// The responder posts no receive work requests (SEND, WRITE with immediate): RNR NAKs until
    /// --rnr-retry is used up, then IBV_WC_RNR_RETRY_EXC_ERR.
    NoReceive,
}

impl Fault {
    /// The name on the command line and in the JSON.
    pub fn name(self) -> &'static str {
        match self {
            Fault::BadRkey => "bad-rkey",
            Fault::WrongQpn => "wrong-qpn",
            Fault::NoReceive => "no-receive",
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Endpoint {
    pub device: String,
    pub port: u8,
    pub netdev: Option<String>,
    pub netdev_mtu: Option<u32>,
    pub active_mtu: u32,
    pub gid_index: u8,
    pub gid: String,
    pub gid_type: String,
    pub gid_choice: String,
    pub ip: Option<String>,
    pub qpn: u32,
    /// First PSN this QP sends (its requests, or its responses/ACKs for the responder).
    pub sq_psn: u32,
    /// First PSN this QP expects.
    pub rq_psn: u32,
}

/// Which end of a QP pair sends a flow's packets.
#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Requester,
    Responder,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Requester => "requester",
            Role::Responder => "responder",
        }
    }
}

/// One direction on the wire, as `rocescope analyze` keys flows: source and destination address and the
/// destination QP.
#[derive(Serialize)]
pub struct Flow {
    pub src: Option<String>,
    pub dst: Option<String>,
    pub dest_qp: u32,
    pub role: Role,
    /// What the packets carry: WRITE/SEND/READ/FETCH_ADD/COMPARE_SWAP requests, READ responses, ACKs or
    /// ATOMIC_ACKNOWLEDGEs.
    pub carries: &'static str,
    /// The opcodes of the direction on the wire when nothing is lost, as `analyze` names them (per flow
    /// `opcodes`); empty for ACKs, which may be coalesced.
    pub opcodes: BTreeMap<String, u64>,
    pub psn_first: u32,
    pub psn_last: u32,
    /// Packets of the direction when nothing is lost (ACK packets: at most).
    pub packets: u64,
    /// Messages (WRITE/SEND) the analyzer counts on the requester flow; 0 for READ and for replies.
    pub messages: u64,
}

#[derive(Serialize, Default)]
pub struct Latency {
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
}

/// The outcome of a data check.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum CheckStatus {
    Passed,
    Failed,
    /// The run stopped before every message was checked.
    Incomplete,
}

impl CheckStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            CheckStatus::Passed => "passed",
            CheckStatus::Failed => "failed",
            CheckStatus::Incomplete => "incomplete",
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct DataCheck {
    pub status: CheckStatus,
    pub checked: u64,
    pub mismatches: u64,
    pub first_mismatch: Option<String>,
}

impl DataCheck {
    /// Nothing checked yet, nothing wrong.
    pub fn passed() -> DataCheck {
        DataCheck {
            status: CheckStatus::Passed,
            checked: 0,
            mismatches: 0,
            first_mismatch: None,
        }
    }

    /// Counts a mismatch; the first one is kept in words.
    pub fn mismatch(&mut self, what: String) {
        self.mismatches += 1;
        self.status = CheckStatus::Failed;
        if self.first_mismatch.is_none() {
            self.first_mismatch = Some(what);
        }
    }
}

/// How the posting ended.
#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum StoppedBy {
    /// -n messages posted.
    Iters,
    /// --duration elapsed.
    Duration,
    /// SIGINT/SIGTERM: the messages in flight were completed.
    Signal,
}

#[derive(Serialize)]
pub struct Report {
    pub op: Op,
    pub size: u32,
    /// Messages per QP pair: -n, or with --duration those the first pair posted before the time was up.
    pub iterations: u64,
    pub stopped_by: StoppedBy,
    /// --duration in seconds, if given.
    pub duration: Option<f64>,
    /// From the first post to the last (with --duration: to the moment the time was up).
    pub posting_seconds: f64,
    /// From the first post to the first completion with error (the QP's IBV_WC_RETRY_EXC_ERR: when it gave
    /// up); null without one.
    pub error_after_s: Option<f64>,
    /// --rate: the target and what was achieved (messages and payload over `seconds`).
    pub rate: Option<RateReport>,
    pub depth: u32,
    pub mtu: u32,
    pub mtu_source: String,
    pub qp_timeout: u8,
    pub retry_count: u8,
    pub rnr_retry: u8,
    pub max_rd_atomic: u8,
    /// GRH traffic class (--tclass; rxe puts it in the IP TOS byte: the low 2 bits are the ECN field).
    pub traffic_class: u8,
    pub fault: Option<Fault>,
    /// What the fault did, in words, with the QPNs and keys it used (None without --fault).
    pub fault_detail: Option<String>,
    /// QP pairs (-q); each runs `iterations` messages with PSNs of its own.
    pub qps: u32,
    /// The first pair's endpoints (the only pair without -q).
    pub requester: Endpoint,
    pub responder: Endpoint,
    /// The destination QPN the first pair's requester QP was connected to: the responder's QPN, or with
    /// --fault wrong-qpn one that no QP has.
    pub dest_qpn: u32,
    /// Every pair's endpoints, in the order of `flows` (requester flow, responder flow per pair).
    pub pairs: Vec<PairEndpoints>,
    pub flows: Vec<Flow>,
    pub messages: u64,
    pub bytes: u64,
    pub seconds: f64,
    pub gbps: f64,
    pub messages_per_sec: f64,
    pub latency_us: Latency,
    pub completion_errors: u64,
    pub data_check: DataCheck,
    /// `gen client`: the server's summary of what it received and found in its memory.
    pub server: Option<Summary>,
    /// Why the run stopped early (a completion error, a deadline, a post failure); exit status 1.
    pub error: Option<String>,
}

impl Report {
    /// A failed data check is the run's error when nothing else went wrong first.
    pub fn fail_on_data_check(&mut self) {
        if self.data_check.status == CheckStatus::Failed && self.error.is_none() {
            self.error = Some(format!(
                "data check failed: {} of {} messages differ ({})",
                self.data_check.mismatches,
                self.data_check.checked,
                self.data_check.first_mismatch.clone().unwrap_or_default()
            ));
        }
    }
}

#[derive(Serialize)]
pub struct RateReport {
    /// As given: "N messages/s" or "G Gb/s".
    pub requested: String,
    pub target_messages_per_sec: f64,
    pub target_gbps: f64,
    pub achieved_messages_per_sec: f64,
    pub achieved_gbps: f64,
}

#[derive(Serialize)]
pub struct PairEndpoints {
    pub requester: Endpoint,
    pub responder: Endpoint,
    /// The destination QPN the requester QP was connected to (`responder.qpn` but with --fault wrong-qpn).
    pub dest_qpn: u32,
}

/// One server run, as printed and in JSON.
#[derive(Serialize)]
pub struct ServerReport {
    pub client: String,
    pub op: Option<Op>,
    pub size: u32,
    pub slots: u64,
    pub qps: Vec<Endpoint>,
    /// The client's QPNs, in the order of `qps`.
    pub client_qpns: Vec<u32>,
    pub mtu: u32,
    pub posted_by_client: Vec<u64>,
    #[serde(flatten)]
    pub summary: Summary,
    pub seconds: f64,
}

/// The out-of-band messages, one JSON object per line.
#[derive(Serialize, Deserialize, Debug)]
#[serde(tag = "msg", rename_all = "snake_case")]
pub enum Msg {
    Hello(Hello),
    Welcome(Welcome),
    Connect(Connect),
    Ready,
    Done(Done),
    Summary(Summary),
    Error {
        message: String,
    },
    /// `gen mesh` to an agent: run one pair's requester against the agent at `peer`.
    Task(Task),
    /// The agent's answer to a task: what the pair's run did.
    Outcome(rocescope::mesh::verdict::Outcome),
}

/// One pair's run, as `gen mesh` asks the requester's agent for it (checked like a Hello: the controller is
/// not trusted either).
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct Task {
    pub version: u32,
    /// The responder's agent (host name or address) and its TCP port.
    pub peer: String,
    pub peer_port: u16,
    pub op: Op,
    pub size: u32,
    pub qps: u32,
    pub depth: u32,
    /// -n, or None with `duration`.
    pub iters: Option<u64>,
    pub duration: Option<f64>,
    pub mtu: Option<u32>,
    pub tclass: u8,
    pub qp_timeout: u8,
    pub retry_count: u8,
    pub rnr_retry: u8,
    /// Seconds without a completion before the run is given up.
    pub timeout: f64,
    /// Messages per second at most (`gen mesh --probe`); None: as fast as the window allows.
    #[serde(default)]
    pub rate: Option<f64>,
    /// Other pairs run on the two hosts at the same time (their counters cover those too).
    pub shared: bool,
}

#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct Hello {
    pub version: u32,
    pub op: Op,
    /// Bytes per message on the wire (8 for the atomics).
    pub size: u32,
    pub qps: u32,
    pub depth: u32,
    /// Message slots the server gives each QP: message k uses slot k % slots.
    pub slots: u64,
    /// -n, or None with --duration.
    pub iters: Option<u64>,
}

#[derive(Serialize, Deserialize, Debug)]
pub struct ServerQp {
    pub endpoint: Endpoint,
    pub addr: u64,
    pub rkey: u32,
}

#[derive(Serialize, Deserialize, Debug)]
pub struct Welcome {
    pub qps: Vec<ServerQp>,
    pub max_rd_atom: u32,
}

#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct ClientQp {
    pub qpn: u32,
    pub psn: u32,
    /// The GID as an IPv6 address (::ffff:a.b.c.d for RoCE v2 over IPv4).
    pub gid: String,
}

#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct Connect {
    pub mtu: u32,
    pub rd_atomic: u8,
    pub qp_timeout: u8,
    pub retry_count: u8,
    pub rnr_retry: u8,
    pub tclass: u8,
    /// In the order of Welcome's QPs.
    pub qps: Vec<ClientQp>,
}

#[derive(Serialize, Deserialize, Debug)]
pub struct Done {
    /// Per QP, messages posted and completed (in Welcome's order).
    pub posted: Vec<u64>,
    pub completed: Vec<u64>,
}

#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct Summary {
    /// Messages that consumed a receive (SEND, WRITE with immediate), over all QPs.
    pub received: u64,
    /// WRITE messages whose slot was checked at the end (the last `slots` per QP).
    pub memory_checked: u64,
    pub data_check: DataCheck,
    pub error: Option<String>,
    /// What the server's port counted over the run (hw_counters and counters that moved).
    #[serde(default)]
    pub counters: BTreeMap<String, u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(v: impl Serialize) -> String {
        serde_json::to_string(&v).unwrap()
    }

    /// The JSON spells the states as the text output does, and as when they were strings.
    #[test]
    fn states_are_spelled_as_before() {
        for s in [
            CheckStatus::Passed,
            CheckStatus::Failed,
            CheckStatus::Incomplete,
        ] {
            assert_eq!(json(s), format!("\"{}\"", s.as_str()));
        }
        for r in [Role::Requester, Role::Responder] {
            assert_eq!(json(r), format!("\"{}\"", r.as_str()));
        }
        assert_eq!(
            [StoppedBy::Iters, StoppedBy::Duration, StoppedBy::Signal].map(json),
            ["\"iters\"", "\"duration\"", "\"signal\""]
        );
        let back: CheckStatus = serde_json::from_str("\"incomplete\"").unwrap();
        assert_eq!(back, CheckStatus::Incomplete);
    }

    #[test]
    fn faults_are_spelled_as_on_the_command_line() {
        for f in [Fault::BadRkey, Fault::WrongQpn, Fault::NoReceive] {
            assert_eq!(json(f), format!("\"{}\"", f.name()));
        }
    }
}
