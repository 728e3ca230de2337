//! Connections on real kernel RoCE (issue 12), the traffic facts a connection table must agree with: the
//! Soft-RoCE lab (lab/README.md) boots its QEMU guest with this test's own `rocescope` binary in it and runs, in
//! one guest, `info` (first: it takes the IPv6 chatter of link-up), then
//!
//! - conn_rping: `rping -s -a 10.0.0.2 -p 7174 -C 4 -S 64 -V` and `rping -c -a 10.0.0.2 -I 10.0.0.1 ...`: one RDMA
//!   CM connection (REQ, REP, RTU, 4 pings, DREQ, DREP);
//! - conn_write_cm: `ib_write_bw -R` (16 WRITEs of 4096 bytes): two RDMA CM connections, perftest's exchange and
//!   the test's QP;
//! - conn_reject: rping's and `ib_write_bw -R`'s clients to ports nobody listens on: REQ, REJ;
//! - conn_write: `ib_write_bw` without CM (16 WRITEs of 4096 bytes) under `rocescope capture -i eth0 ... --`;
//! - conn_rc_pingpong: `ibv_rc_pingpong -s 1024 -n 8`.
//!
//! Asserted on the fresh cable captures with tshark (not with rocescope's analysis) and the tools' printouts: the
//! CM messages of each connection in order, tied together by their communication IDs, from the side that must
//! send them; the REQ's and REP's QPNs against what perftest printed; every RC frame to the QPN the peer announced
//! (in the REQ or REP, or, without CM, in the tool's printout), and nothing else on the cable; the first request
//! PSN each way equal to the starting PSN the peer announced (Linux's ib_cm: a side announces the PSN its receive
//! queue expects, so the REQ's starting PSN is the passive side's first PSN and the REP's the active side's), the
//! requests' PSNs consecutive from it, the responses in the other way's PSN range; the REQ's path MTU (1024),
//! retry and RNR retry counts, responder resources and initiator depth as the tools ask for them; the service ID
//! with the port of the command; no data after the first DREQ; the REJ with reason 8 (invalid service ID) for the
//! REQ it names, and the error the client printed with that reason; perftest -R's PSN lines, which its QPs do not
//! use; without CM, the QPNs and first PSNs perftest and ibv_rc_pingpong printed; request counts from the
//! commands' sizes and counts; rxe's sent_pkts against the frames each side put on the cable. A loaded machine's
//! rxe resends now and then with nothing lost (its retransmit timer is armed once and not pushed back): those
//! copies are held to what the protocol allows and to rxe's counters (`Scenario::copies`, `sent_counts`), the
//! rest to what a quiet run has.
//!
//! Needs what `lab/setup` installs (it is run here) and about 25-60 s of emulated guest. It fails, with the
//! reason, when the lab cannot run: it never skips. Everything runs under hard timeouts.
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

mod lab_support;
use lab_support::{number as num, run_lab};
use serde_json::Value;

const CLIENT: &str = "10.0.0.1";
const SERVER: &str = "10.0.0.2";
const PSN_MOD: u64 = 1 << 24;
/// An RDMA CM service ID in the TCP port space (RDMA_PS_TCP, 0x0106): 0x0000_0000_0106_PPPP, PPPP the port.
const PS_TCP: u64 = 0x0106_0000;
/// Management class of the communication manager (CM MADs).
const MGMT_CLASS_CM: u64 = 7;
/// Path MTU code 3 = 1024 bytes: rxe's active MTU on the lab's 1500-byte links.
const MTU_1024: u64 = 3;
/// REJ reason 8 (IBTA Table 112): invalid service ID, ib_cm's answer to a REQ no listener takes.
const REJ_INVALID_SERVICE_ID: u64 = 8;

const FIELDS: &[&str] = &[
    "frame.number",
    "frame.time_relative",
    "ip.src",
    "ip.dst",
    "udp.dstport",
    "infiniband.bth.opcode",
    "infiniband.bth.destqp",
    "infiniband.bth.psn",
    "infiniband.mad.mgmtclass",
    "infiniband.mad.attributeid",
    "infiniband.cm.req",
    "infiniband.cm.req.serviceid",
    "infiniband.cm.req.localqpn",
    "infiniband.cm.req.startpsn",
    "infiniband.cm.req.pppmtu",
    "infiniband.cm.req.retrcount",
    "infiniband.cm.req.rnrretrcount",
    "infiniband.cm.req.responderres",
    "infiniband.cm.req.initdepth",
    "infiniband.cm.req.transpsvctype",
    "infiniband.cm.req.prim_localgid_ipv4",
    "infiniband.cm.req.prim_remotegid_ipv4",
    "infiniband.cm.req.ip_cm.sip4",
    "infiniband.cm.req.ip_cm.dip4",
    "infiniband.cm.rep",
    "infiniband.cm.rep.remotecommid",
    "infiniband.cm.rep.localqpn",
    "infiniband.cm.rep.startpsn",
    "infiniband.cm.rep.rnrretrcount",
    "infiniband.cm.rep.respres",
    "infiniband.cm.rep.initdepth",
    "infiniband.cm.rtu.localcommid",
    "infiniband.cm.rtu.remotecommid",
    "infiniband.cm.rej.localcommid",
    "infiniband.cm.rej.remotecommid",
    "infiniband.cm.rej.msgrej",
    "infiniband.cm.rej.reason",
    "infiniband.cm.dreq.localcommid",
    "infiniband.cm.dreq.remotecommid",
    "infiniband.cm.req.remoteqpneecn",
    "infiniband.cm.drsp.localcommid",
    "infiniband.cm.drsp.remotecommid",
];

/// One frame as tshark decodes it: the FIELDS values, "" where absent.
#[derive(Debug)]
struct Frame {
    v: Vec<String>,
}

impl Frame {
    fn s(&self, field: &str) -> &str {
        let i = FIELDS
            .iter()
            .position(|f| *f == field)
            .unwrap_or_else(|| panic!("{field} is not in FIELDS"));
        &self.v[i]
    }
    fn n(&self, field: &str) -> Option<u64> {
        num(self.s(field))
    }
    /// A field that must be there.
    fn u(&self, field: &str) -> u64 {
        self.n(field)
            .unwrap_or_else(|| panic!("frame {}: no {field}: {:?}", self.no(), self.v))
    }
    fn no(&self) -> u64 {
        num(&self.v[0]).unwrap()
    }
    fn t(&self) -> f64 {
        self.v[1].parse().unwrap()
    }
    fn src(&self) -> &str {
        self.s("ip.src")
    }
    fn dst(&self) -> &str {
        self.s("ip.dst")
    }
    fn roce(&self) -> bool {
        self.s("udp.dstport") == "4791"
    }
    fn qp(&self) -> u64 {
        self.u("infiniband.bth.destqp")
    }
    fn op(&self) -> u64 {
        self.u("infiniband.bth.opcode")
    }
    fn psn(&self) -> u64 {
        self.u("infiniband.bth.psn")
    }
    /// Every opcode but the READ responses, ACKNOWLEDGE and ATOMIC ACKNOWLEDGE.
    fn is_request(&self) -> bool {
        !(13..=18).contains(&(self.op() & 0x1f))
    }
}

fn tshark_frames(path: &Path) -> Vec<Frame> {
    lab_support::tshark_fields(path, FIELDS)
        .into_iter()
        .map(|v| Frame { v })
        .collect()
}

fn psn_add(p: u64, n: u64) -> u64 {
    (p + n) % PSN_MOD
}

/// `p` in [first, last], serial arithmetic.
fn psn_in(p: u64, first: u64, last: u64) -> bool {
    (p + PSN_MOD - first) % PSN_MOD <= (last + PSN_MOD - first) % PSN_MOD
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Msg {
    Req,
    Rej,
    Rep,
    Rtu,
    Dreq,
    Drep,
    Other(u64),
}

fn msg(f: &Frame) -> Msg {
    match f.u("infiniband.mad.attributeid") {
        0x10 => Msg::Req,
        0x12 => Msg::Rej,
        0x13 => Msg::Rep,
        0x14 => Msg::Rtu,
        0x15 => Msg::Dreq,
        0x16 => Msg::Drep,
        a => Msg::Other(a),
    }
}

/// One REQ and the CM messages that name its communication IDs.
struct Conn<'a> {
    req: &'a Frame,
    active_id: u64,
    passive_id: Option<u64>,
    rep: Vec<&'a Frame>,
    rtu: Vec<&'a Frame>,
    rej: Vec<&'a Frame>,
    dreq: Vec<&'a Frame>,
    drep: Vec<&'a Frame>,
    /// every message, in frame order
    all: Vec<&'a Frame>,
}

impl Conn<'_> {
    fn client_qpn(&self) -> u64 {
        self.req.u("infiniband.cm.req.localqpn")
    }
    fn server_qpn(&self) -> u64 {
        self.rep[0].u("infiniband.cm.rep.localqpn")
    }
    fn port(&self) -> u64 {
        self.req.u("infiniband.cm.req.serviceid") & 0xffff
    }
}

/// One scenario's cable and log.
struct Scenario {
    name: &'static str,
    dir: PathBuf,
    log: String,
    frames: Vec<Frame>,
    counters: BTreeMap<String, i64>,
}

impl Scenario {
    fn load(lab_out: &Path, name: &'static str) -> Scenario {
        let dir = lab_out.join(name);
        let log = fs::read_to_string(dir.join("perftest.log"))
            .unwrap_or_else(|e| panic!("{name}: perftest.log: {e}"));
        let counters = log
            .split("--- rxe hw_counters that changed")
            .nth(1)
            .unwrap_or_else(|| panic!("{name}: no hw_counters in perftest.log"))
            .lines()
            .filter_map(|l| {
                let w: Vec<&str> = l.split_whitespace().collect();
                match w[..] {
                    [dev, c, d] if dev.starts_with("rxe") => {
                        Some((format!("{dev} {c}"), d.parse::<i64>().ok()?))
                    }
                    _ => None,
                }
            })
            .collect();
        let frames = tshark_frames(&dir.join("cable.pcap"));
        Scenario {
            name,
            dir,
            log,
            frames,
            counters,
        }
    }

    fn counter(&self, key: &str) -> i64 {
        self.counters.get(key).copied().unwrap_or(0)
    }

    /// The CM messages (to QP 1), each a MAD of the CM class; every frame of the capture is RoCEv2 between the
    /// two addresses (the lab's marker pings are cut off), so the rest are the RC data frames: those of a quiet
    /// run, without the copies rxe adds under load (`copies`, held to the counters by `sent_counts`).
    fn split(&self) -> (Vec<&Frame>, Vec<&Frame>) {
        let (cm, data) = self.split_all();
        let (resent, repeated) = self.copies();
        let copy: Vec<u64> = resent.iter().chain(&repeated).map(|f| f.no()).collect();
        (
            cm,
            data.into_iter()
                .filter(|f| !copy.contains(&f.no()))
                .collect(),
        )
    }

    /// The copies of data frames a loaded machine adds, with nothing lost: (the requests whose PSN their
    /// direction, source and destination QP, carried before; the responses whose PSN their direction carried
    /// before). rxe's retransmit timer is armed once and not pushed back as ACKs arrive, so a slow guest now
    /// and then outlasts it (ibv_rc_pingpong's QP timeout is 14, about 67 ms) and the requester goes back to
    /// the oldest PSN it holds unacknowledged, as the protocol allows (IBTA 9.7.6.1.3); the responder takes
    /// such a request as a duplicate and answers it again (an ACK of the last PSN it acknowledged, C9-105; a
    /// READ's responses again).
    fn copies(&self) -> (Vec<&Frame>, Vec<&Frame>) {
        let (_, data) = self.split_all();
        let mut seen: std::collections::BTreeSet<(String, u64, u64)> = Default::default();
        let (mut resent, mut repeated) = (Vec::new(), Vec::new());
        for f in data {
            if !seen.insert((f.src().to_string(), f.qp(), f.psn())) {
                if f.is_request() {
                    resent.push(f);
                } else {
                    repeated.push(f);
                }
            }
        }
        (resent, repeated)
    }

    fn split_all(&self) -> (Vec<&Frame>, Vec<&Frame>) {
        let name = self.name;
        for f in &self.frames {
            assert!(
                f.roce()
                    && ((f.src() == CLIENT && f.dst() == SERVER)
                        || (f.src() == SERVER && f.dst() == CLIENT)),
                "{name}: frame {} is not RoCEv2 between {CLIENT} and {SERVER}: {:?}",
                f.no(),
                f.v
            );
        }
        let (cm, data): (Vec<&Frame>, Vec<&Frame>) = self.frames.iter().partition(|f| f.qp() == 1);
        for f in &cm {
            assert_eq!(
                f.op(),
                100,
                "{name}: frame {}: QP 1 but not UD_SEND_ONLY",
                f.no()
            );
            assert_eq!(
                f.n("infiniband.mad.mgmtclass"),
                Some(MGMT_CLASS_CM),
                "{name}: frame {}: a MAD to QP 1 not of the CM class",
                f.no()
            );
        }
        (cm, data)
    }

    /// rxe's sent_pkts of each device against the frames its side put on the cable (the CM MADs and the copies
    /// count); the copies (`copies`) against the counters: each resend round of a sender is one
    /// `completer_retry_err` (rxe counts a retry when it starts one, and the round resends at least the oldest
    /// PSN), none without a resend; each duplicate the receiver took (`duplicate_request`) is a resend that
    /// reached it and was answered at least once again (a resend that comes after the receiving process ended
    /// finds no QP and is dropped uncounted and unanswered, as a wrong QPN is: so at most as many as the resends).
    fn sent_counts(&self) {
        let name = self.name;
        for (dev, ip) in [("rxe0", CLIENT), ("rxe1", SERVER)] {
            let n = self.frames.iter().filter(|f| f.src() == ip).count() as i64;
            assert_eq!(
                self.counter(&format!("{dev} sent_pkts")),
                n,
                "{name}: {dev} sent_pkts against the frames from {ip} on the cable",
            );
        }
        let (resent, repeated) = self.copies();
        for (sender, ip, receiver) in [("rxe0", CLIENT, "rxe1"), ("rxe1", SERVER, "rxe0")] {
            let r = resent.iter().filter(|f| f.src() == ip).count() as i64;
            let a = repeated.iter().filter(|f| f.src() != ip).count() as i64;
            let retry = self.counter(&format!("{sender} completer_retry_err"));
            let dup = self.counter(&format!("{receiver} duplicate_request"));
            assert!(
                (r == 0 && retry == 0) || (1..=r).contains(&retry),
                "{name}: {r} requests resent by {ip}, {sender} completer_retry_err {retry}"
            );
            assert!(
                dup <= r && a >= dup && (a == 0 || r > 0),
                "{name}: {r} requests resent by {ip}, {receiver} duplicate_request {dup}, {a} responses repeated \
                 toward {ip}"
            );
        }
    }

    /// Each tool run's printout: (side, exit status, lines), in the order of the log.
    fn runs(&self) -> Vec<(String, i32, Vec<String>)> {
        let mut runs: Vec<(String, i32, Vec<String>)> = Vec::new();
        let mut open = false;
        for l in self.log.lines() {
            if let Some(rest) = l
                .strip_prefix("--- server output (exit ")
                .map(|r| ("server", r))
                .or_else(|| {
                    l.strip_prefix("--- client output (exit ")
                        .map(|r| ("client", r))
                })
            {
                let code = rest.1.trim_end_matches(')').parse().unwrap();
                runs.push((rest.0.to_string(), code, Vec::new()));
                open = true;
            } else if l.starts_with("--- ") || l.starts_with("@@@ ") || l.starts_with("+ ") {
                open = false;
            } else if open {
                runs.last_mut().unwrap().2.push(l.to_string());
            }
        }
        runs
    }

    /// The one run of `side`: its exit status and lines.
    fn run(&self, side: &str) -> (i32, Vec<String>) {
        let v: Vec<_> = self.runs().into_iter().filter(|r| r.0 == side).collect();
        assert_eq!(v.len(), 1, "{}: {side} runs in the log", self.name);
        let (_, code, lines) = v.into_iter().next().unwrap();
        (code, lines)
    }
}

/// The connections of a capture's CM messages: one per REQ, the others tied to it by the communication IDs they
/// name, each from the side that must send it. Panics on a message that names no REQ.
fn connections<'a>(name: &str, cm: &[&'a Frame]) -> Vec<Conn<'a>> {
    let mut conns: Vec<Conn<'a>> = Vec::new();
    for f in cm {
        let m = msg(f);
        if m == Msg::Req {
            assert_eq!(
                f.src(),
                CLIENT,
                "{name}: frame {}: a REQ from the server",
                f.no()
            );
            conns.push(Conn {
                req: f,
                active_id: f.u("infiniband.cm.req"),
                passive_id: None,
                rep: vec![],
                rtu: vec![],
                rej: vec![],
                dreq: vec![],
                drep: vec![],
                all: vec![f],
            });
            continue;
        }
        let (local, remote) = match m {
            Msg::Rep => (
                f.u("infiniband.cm.rep"),
                f.u("infiniband.cm.rep.remotecommid"),
            ),
            Msg::Rtu => (
                f.u("infiniband.cm.rtu.localcommid"),
                f.u("infiniband.cm.rtu.remotecommid"),
            ),
            Msg::Rej => (
                f.u("infiniband.cm.rej.localcommid"),
                f.u("infiniband.cm.rej.remotecommid"),
            ),
            Msg::Dreq => (
                f.u("infiniband.cm.dreq.localcommid"),
                f.u("infiniband.cm.dreq.remotecommid"),
            ),
            Msg::Drep => (
                f.u("infiniband.cm.drsp.localcommid"),
                f.u("infiniband.cm.drsp.remotecommid"),
            ),
            _ => panic!("{name}: frame {}: unexpected CM message {m:?}", f.no()),
        };
        let from_client = f.src() == CLIENT;
        // the sender's own communication ID is "local", its peer's "remote"
        let c = conns
            .iter_mut()
            .find(|c| {
                if from_client {
                    local == c.active_id
                } else {
                    remote == c.active_id
                }
            })
            .unwrap_or_else(|| {
                panic!(
                    "{name}: frame {} {m:?} names comm IDs {local:#x}/{remote:#x}, no REQ's",
                    f.no()
                )
            });
        match m {
            Msg::Rep => {
                assert!(
                    !from_client,
                    "{name}: frame {}: a REP from the client",
                    f.no()
                );
                c.passive_id = Some(local);
                c.rep.push(f);
            }
            Msg::Rej => {
                assert!(
                    !from_client,
                    "{name}: frame {}: a REJ from the client",
                    f.no()
                );
                c.rej.push(f);
            }
            Msg::Rtu => {
                assert!(
                    from_client,
                    "{name}: frame {}: an RTU from the server",
                    f.no()
                );
                c.rtu.push(f);
            }
            Msg::Dreq => c.dreq.push(f),
            Msg::Drep => c.drep.push(f),
            _ => unreachable!(),
        }
        if !matches!(m, Msg::Rep | Msg::Rej) {
            // RTU, DREQ, DREP name both IDs
            let (mine, peer) = if from_client {
                (local, remote)
            } else {
                (remote, local)
            };
            assert_eq!(
                (mine, Some(peer)),
                (c.active_id, c.passive_id),
                "{name}: frame {} {m:?}: comm IDs against the REQ's and the REP's",
                f.no()
            );
        }
        c.all.push(f);
    }
    conns
}

/// What a command asked of the CM, and what its connection must carry.
struct Expect {
    port: u64,
    retry: u64,
    rnr_retry: u64,
    /// REQ responder resources and initiator depth (the REP's: the same)
    rd_atomic: u64,
}

/// An established connection: REQ, REP, RTU in that order and once each, then DREQ(s) and DREP(s); its data
/// frames to the QPNs the REQ and REP announced, the first request each way at the announced starting PSN, the
/// requests' PSNs consecutive, the responses in the other way's PSN range, nothing after the first DREQ.
/// Returns (client -> server, server -> client) data frames.
fn check_established<'a>(
    name: &str,
    c: &Conn,
    data: &[&'a Frame],
    e: &Expect,
) -> (Vec<&'a Frame>, Vec<&'a Frame>) {
    let req = c.req;
    let at = format!("{name}: the connection of REQ frame {}", req.no());
    assert!(
        c.rej.is_empty(),
        "{at}: a REJ (reason {:?})",
        c.rej[0].n("infiniband.cm.rej.reason")
    );
    assert_eq!((c.rep.len(), c.rtu.len()), (1, 1), "{at}: REPs, RTUs");
    let (rep, rtu) = (c.rep[0], c.rtu[0]);
    assert!(
        req.no() < rep.no() && rep.no() < rtu.no(),
        "{at}: REQ {}, REP {}, RTU {} out of order",
        req.no(),
        rep.no(),
        rtu.no()
    );
    assert!(
        !c.dreq.is_empty() && !c.drep.is_empty() && c.dreq[0].no() < c.drep[0].no(),
        "{at}: DREQ frames {:?}, DREP frames {:?}",
        c.dreq.iter().map(|f| f.no()).collect::<Vec<_>>(),
        c.drep.iter().map(|f| f.no()).collect::<Vec<_>>()
    );
    let messages: Vec<Msg> = c.all.iter().map(|f| msg(f)).collect();
    assert!(
        messages[..3] == [Msg::Req, Msg::Rep, Msg::Rtu]
            && messages[3..]
                .iter()
                .all(|m| matches!(m, Msg::Dreq | Msg::Drep)),
        "{at}: messages {messages:?}"
    );
    // the DREQ names the QPN of the side it goes to
    let (cq, sq) = (c.client_qpn(), c.server_qpn());
    assert_ne!(
        cq, sq,
        "{at}: both ends have QPN {cq:#x} (qpn_skew should have moved rxe1's on)"
    );
    for d in &c.dreq {
        let want = if d.src() == CLIENT { sq } else { cq };
        assert_eq!(
            d.n("infiniband.cm.req.remoteqpneecn"),
            Some(want),
            "{at}: DREQ frame {}: remote QPN",
            d.no()
        );
    }
    // what the command asked for, as the REQ and REP carry it
    assert_eq!(c.port(), e.port, "{at}: the service ID's port");
    assert_eq!(
        req.u("infiniband.cm.req.serviceid"),
        PS_TCP | e.port,
        "{at}: service ID (RDMA CM, TCP port space)"
    );
    for (field, want) in [
        ("infiniband.cm.req.pppmtu", MTU_1024),
        ("infiniband.cm.req.transpsvctype", 0),
        ("infiniband.cm.req.retrcount", e.retry),
        ("infiniband.cm.req.rnrretrcount", e.rnr_retry),
        ("infiniband.cm.req.responderres", e.rd_atomic),
        ("infiniband.cm.req.initdepth", e.rd_atomic),
    ] {
        assert_eq!(req.n(field), Some(want), "{at}: REQ {field}");
    }
    for (field, want) in [
        ("infiniband.cm.rep.rnrretrcount", e.rnr_retry),
        ("infiniband.cm.rep.respres", e.rd_atomic),
        ("infiniband.cm.rep.initdepth", e.rd_atomic),
    ] {
        assert_eq!(rep.n(field), Some(want), "{at}: REP {field}");
    }
    for (field, want) in [
        ("infiniband.cm.req.prim_localgid_ipv4", CLIENT),
        ("infiniband.cm.req.prim_remotegid_ipv4", SERVER),
        ("infiniband.cm.req.ip_cm.sip4", CLIENT),
        ("infiniband.cm.req.ip_cm.dip4", SERVER),
    ] {
        assert_eq!(req.s(field), want, "{at}: REQ {field}");
    }
    // the data: to the announced QPNs; the REQ's starting PSN is where the server's requests start, the REP's
    // where the client's start (each side announces the PSN its receive queue expects first)
    let c2s: Vec<&Frame> = data
        .iter()
        .copied()
        .filter(|f| f.src() == CLIENT && f.qp() == sq)
        .collect();
    let s2c: Vec<&Frame> = data
        .iter()
        .copied()
        .filter(|f| f.src() == SERVER && f.qp() == cq)
        .collect();
    let req_psn = req.u("infiniband.cm.req.startpsn");
    let rep_psn = rep.u("infiniband.cm.rep.startpsn");
    for (dir, fs, peer, psn0) in [
        ("client -> server", &c2s, &s2c, rep_psn),
        ("server -> client", &s2c, &c2s, req_psn),
    ] {
        let requests: Vec<&&Frame> = fs.iter().filter(|f| f.is_request()).collect();
        if let Some(first) = requests.first() {
            assert_eq!(
                first.psn(),
                psn0,
                "{at}: {dir}: the first request (frame {}) against the announced starting PSN",
                first.no()
            );
        }
        let psns: Vec<u64> = requests.iter().map(|f| f.psn()).collect();
        assert_eq!(
            psns,
            (0..psns.len() as u64)
                .map(|i| psn_add(psn0, i))
                .collect::<Vec<_>>(),
            "{at}: {dir}: request PSNs, consecutive from {psn0:#x}"
        );
        // the responses this way answer the other way's requests: their PSNs are in that range
        let other: Vec<u64> = peer
            .iter()
            .filter(|f| f.is_request())
            .map(|f| f.psn())
            .collect();
        for f in fs.iter().filter(|f| !f.is_request()) {
            assert!(
                !other.is_empty() && psn_in(f.psn(), other[0], other[other.len() - 1]),
                "{at}: {dir}: response frame {} PSN {:#x} outside the other way's requests",
                f.no(),
                f.psn()
            );
        }
    }
    let first_dreq = c.dreq[0].no();
    for f in c2s.iter().chain(&s2c) {
        assert!(
            rep.no() < f.no() && f.no() < first_dreq,
            "{at}: data frame {} not between the REP ({}) and the first DREQ ({first_dreq})",
            f.no(),
            rep.no()
        );
    }
    (c2s, s2c)
}

/// Every data frame belongs to one of the connections (to the QPN its peer announced).
fn all_claimed(name: &str, data: &[&Frame], conns: &[&Conn]) {
    for f in data {
        let n = conns
            .iter()
            .filter(|c| {
                !c.rep.is_empty()
                    && ((f.src() == CLIENT && f.qp() == c.server_qpn())
                        || (f.src() == SERVER && f.qp() == c.client_qpn()))
            })
            .count();
        assert_eq!(
            n,
            1,
            "{name}: data frame {} ({} -> {}, QP {:#x}) belongs to {n} connections",
            f.no(),
            f.src(),
            f.dst(),
            f.qp()
        );
    }
}

fn count_ops(fs: &[&Frame]) -> BTreeMap<u64, usize> {
    let mut m = BTreeMap::new();
    for f in fs {
        *m.entry(f.op()).or_default() += 1;
    }
    m
}

/// A perftest or ibv_*_pingpong "local address" / "remote address" line: (QPN, PSN, GID).
#[derive(Debug, Clone, PartialEq)]
struct Addr {
    qpn: u64,
    psn: u64,
    gid: String,
}

/// perftest prints " local address: LID 0000 QPN 0x0011 PSN 0x3d8265[ RKey 0x... VAddr 0x...]" and, on the next
/// line, " GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:00:00:01" (the GID's 16 bytes in decimal);
/// ibv_rc_pingpong "  local address:  LID 0x0000, QPN 0x000011, PSN 0x2b7c8d, GID ::ffff:10.0.0.1".
fn addresses(name: &str, lines: &[String]) -> (Addr, Addr) {
    let mut found: BTreeMap<&str, Addr> = BTreeMap::new();
    for (i, l) in lines.iter().enumerate() {
        for which in ["local", "remote"] {
            let Some(rest) = l.trim_start().strip_prefix(&format!("{which} address:")) else {
                continue;
            };
            let w: Vec<&str> = rest
                .split(|c: char| c.is_whitespace() || c == ',')
                .filter(|s| !s.is_empty())
                .collect();
            let after = |key: &str| {
                let k = w.iter().position(|s| *s == key).unwrap_or_else(|| {
                    panic!("{name}: no {key} in {l:?}");
                });
                w[k + 1]
            };
            let qpn = num(after("QPN")).unwrap();
            let psn = num(after("PSN")).unwrap();
            let gid = if w.contains(&"GID") {
                after("GID").to_string()
            } else {
                // perftest: the next line
                let g = lines
                    .get(i + 1)
                    .and_then(|n| n.trim().strip_prefix("GID: "))
                    .unwrap_or_else(|| panic!("{name}: no GID line after {l:?}"));
                let b: Vec<u8> = g.split(':').map(|x| x.parse().unwrap()).collect();
                assert_eq!(b.len(), 16, "{name}: GID {g:?}");
                assert_eq!(
                    &b[..12],
                    &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 255, 255],
                    "{name}: GID {g:?}"
                );
                format!("::ffff:{}.{}.{}.{}", b[12], b[13], b[14], b[15])
            };
            assert!(
                found.insert(which, Addr { qpn, psn, gid }).is_none(),
                "{name}: two {which} address lines"
            );
        }
    }
    (
        found
            .remove("local")
            .unwrap_or_else(|| panic!("{name}: no local address line in {lines:?}")),
        found
            .remove("remote")
            .unwrap_or_else(|| panic!("{name}: no remote address line in {lines:?}")),
    )
}

/// rocescope's analysis of the scenario's cable capture, with `args` (`--expect LOG`...).
fn analysis(s: &Scenario, args: &[&str]) -> Value {
    let cable = s.dir.join("cable.pcap");
    let o = Command::new(env!("CARGO_BIN_EXE_rocescope"))
        .args(["analyze", "--json"])
        .arg(&cable)
        .args(args)
        .output()
        .expect("run rocescope analyze");
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "{}: analyze --json: {e}: {}",
            s.name,
            String::from_utf8_lossy(&o.stderr)
        )
    })
}

/// The first request frame from `src` to QP `qpn`: (frame, PSN).
fn first_request(data: &[&Frame], src: &str, qpn: u64) -> Option<(u64, u64)> {
    data.iter()
        .find(|f| f.src() == src && f.qp() == qpn && f.is_request())
        .map(|f| (f.no(), f.psn()))
}

/// rocescope's connection table of a CM scenario against the handshakes tshark decoded: one connection per
/// REQ, in order, with its QPNs, the starting PSNs as each side sends from them (the passive side from the
/// REQ's, the active side from the REP's), the path MTU, retry counts and port of the REQ, the frames of
/// its messages, its state (rejected on a REJ, disconnected on a DREQ), each side's first request as tshark
/// found it, and matched; as many cm_reject events as REJs, and no other connection problem.
fn told_cm(s: &Scenario, conns: &[Conn], data: &[&Frame]) {
    let name = s.name;
    let r = analysis(s, &[]);
    let got = r["connections"].as_array().expect("connections");
    assert_eq!(
        got.len(),
        conns.len(),
        "{name}: rocescope's connections: {got:?}"
    );
    for (c, g) in conns.iter().zip(got) {
        let at = format!("{name}: connection of REQ frame {}: {g}", c.req.no());
        let req = |f: &str| c.req.u(&format!("infiniband.cm.req.{f}"));
        assert_eq!(g["origin"], "cm", "{at}");
        assert_eq!(g["handshake"]["req"]["frame"], c.req.no(), "{at}");
        assert_eq!(g["sides"][0]["address"], CLIENT, "{at}");
        assert_eq!(g["sides"][0]["qpn"], req("localqpn"), "{at}");
        assert_eq!(g["sides"][1]["start_psn"], req("startpsn"), "{at}");
        assert_eq!(g["mtu"], 128u64 << req("pppmtu"), "{at}");
        assert_eq!(
            (&g["retry_count"], &g["rnr_retry_count"], &g["port"]),
            (
                &Value::from(req("retrcount")),
                &Value::from(req("rnrretrcount")),
                &Value::from(c.port())
            ),
            "{at}"
        );
        if let Some(rej) = c.rej.first() {
            assert_eq!(g["state"], "rejected", "{at}");
            assert_eq!(
                g["handshake"]["rej_reason"],
                rej.u("infiniband.cm.rej.reason"),
                "{at}"
            );
            continue;
        }
        let (rep, rtu) = (c.rep[0], c.rtu[0]);
        assert_eq!(g["handshake"]["rep"]["frame"], rep.no(), "{at}");
        assert_eq!(g["handshake"]["rtu"]["frame"], rtu.no(), "{at}");
        assert_eq!(g["sides"][1]["qpn"], c.server_qpn(), "{at}");
        assert_eq!(
            g["sides"][0]["start_psn"],
            rep.u("infiniband.cm.rep.startpsn"),
            "{at}"
        );
        let state = if c.dreq.is_empty() {
            "established"
        } else {
            "disconnected"
        };
        assert_eq!(g["state"], state, "{at}");
        for (side, src, to) in [(0, CLIENT, c.server_qpn()), (1, SERVER, c.client_qpn())] {
            let first = first_request(data, src, to);
            assert_eq!(
                (
                    g["sides"][side]["first_frame"].as_u64(),
                    g["sides"][side]["first_psn"].as_u64()
                ),
                (first.map(|f| f.0), first.map(|f| f.1)),
                "{at}: side {side}"
            );
        }
        assert_eq!(g["matched"], true, "{at}");
    }
    let kinds = |k: &str| {
        r["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["kind"] == k)
            .count()
    };
    let rejs: usize = conns.iter().map(|c| c.rej.len().min(1)).sum();
    assert_eq!(kinds("cm_reject"), rejs, "{name}: cm_reject events");
    for k in ["cm_timeout", "unexpected_qp", "start_psn_mismatch"] {
        assert_eq!(kinds(k), 0, "{name}: {k} events");
    }
}

/// rocescope's connection table of a scenario without CM, from both hosts' printouts (`--expect` of the
/// scenario's log): one printed connection, the client's QPN and PSN and the server's as they printed them,
/// matched, no connection problem; and held against another log (the wrong expectation), flagged.
fn told_printed(s: &Scenario, client: &Addr, server: &Addr) {
    let name = s.name;
    let log = s.dir.join("perftest.log");
    let r = analysis(
        s,
        &[
            "--expect",
            log.to_str().unwrap(),
            "--fail-on",
            "connections",
        ],
    );
    let got = r["connections"].as_array().expect("connections");
    assert_eq!(got.len(), 1, "{name}: {got:?}");
    let g = &got[0];
    let side = |addr: &str| {
        g["sides"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["address"] == addr)
            .unwrap_or_else(|| panic!("{name}: no side {addr} in {g}"))
            .clone()
    };
    for (addr, printed) in [(CLIENT, client), (SERVER, server)] {
        let s = side(addr);
        assert_eq!(
            (&s["qpn"], &s["start_psn"]),
            (&Value::from(printed.qpn), &Value::from(printed.psn)),
            "{name}: {g}"
        );
    }
    assert_eq!(
        (&g["origin"], &g["matched"]),
        (&Value::from("printout"), &Value::from(true)),
        "{name}: {g}"
    );
    assert_eq!(r["verdict"]["exit_status"], 0, "{name}: {}", r["verdict"]);
}

/// The report of `rocescope capture -- ib_write_bw` in the guest (capture.json): the connection the client
/// printed (its own address and the server's), its first request at its printed PSN, matched.
fn told_wrapped(s: &Scenario, client: &Addr, server: &Addr) {
    let name = s.name;
    let text = fs::read_to_string(s.dir.join("capture.json")).expect("capture.json");
    let r: Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{name}: capture.json is not JSON: {e}"));
    let got = r["connections"].as_array().expect("connections");
    assert_eq!(got.len(), 1, "{name}: capture.json connections: {got:?}");
    let g = &got[0];
    let want = |i: usize, a: &Addr, ip: &str| {
        let side = &g["sides"][i];
        assert_eq!(
            (&side["address"], &side["qpn"], &side["start_psn"]),
            (&Value::from(ip), &Value::from(a.qpn), &Value::from(a.psn)),
            "{name}: capture.json side {i}: {g}"
        );
    };
    want(0, client, CLIENT);
    want(1, server, SERVER);
    assert_eq!(g["sides"][0]["first_psn"], client.psn, "{name}: {g}");
    assert_eq!(
        (&g["origin"], &g["matched"]),
        (&Value::from("printout"), &Value::from(true)),
        "{name}: {g}"
    );
}

fn check_rping(s: &Scenario) -> String {
    let name = s.name;
    let (cm, data) = s.split();
    let conns = connections(name, &cm);
    assert_eq!(conns.len(), 1, "{name}: REQs");
    let c = &conns[0];
    // rping's rdma_conn_param: responder resources 1, initiator depth 1, retry count 7, RNR retry count 7 (the
    // server accepts with librdmacm's defaults: the REQ's resources, RNR retry count 7)
    let pings = 4;
    let (c2s, s2c) = check_established(
        name,
        c,
        &data,
        &Expect {
            port: 7174,
            retry: 7,
            rnr_retry: 7,
            rd_atomic: 1,
        },
    );
    all_claimed(name, &data, &[c]);
    // per ping (one 64-byte packet each): the client's SEND (its source buffer), the server's READ of it (the
    // client's READ response), the server's SEND, the client's SEND (its sink buffer), the server's WRITE, the
    // server's SEND; every request acknowledged but the READ (its response is the acknowledgement)
    let (cq, sq) = (c.client_qpn(), c.server_qpn());
    let want_c2s: BTreeMap<u64, usize> = [(4, 2 * pings), (16, pings), (17, 3 * pings)].into();
    let want_s2c: BTreeMap<u64, usize> =
        [(4, 2 * pings), (10, pings), (12, pings), (17, 2 * pings)].into();
    assert_eq!(
        count_ops(&c2s),
        want_c2s,
        "{name}: client -> server opcodes"
    );
    assert_eq!(
        count_ops(&s2c),
        want_s2c,
        "{name}: server -> client opcodes"
    );
    let (sc, _) = s.run("server");
    let (cc, lines) = s.run("client");
    // rping's client exits 255 now and then after its pings, its CM event thread reading the event channel its
    // main thread destroys (lab/guest/scenarios.sh, sc_conn_rping): the only exit but 0 taken
    assert!(
        sc == 0
            && (cc == 0
                || (cc == 255
                    && lines
                        .iter()
                        .any(|l| l == "rdma_get_cm_event: Bad file descriptor"))),
        "{name}: exit statuses: server {sc}, client {cc}: {lines:?}"
    );
    let printed: Vec<&String> = lines
        .iter()
        .filter(|l| l.starts_with("ping data: "))
        .collect();
    assert_eq!(printed.len(), pings, "{name}: ping data lines: {lines:?}");
    for (i, l) in printed.iter().enumerate() {
        assert!(
            l.starts_with(&format!("ping data: rdma-ping-{i}: ")),
            "{name}: {l:?}"
        );
    }
    s.sent_counts();
    told_cm(s, &conns, &data);
    format!(
        "{name}: client QP {cq:#x} (REQ PSN {:#x}) <-> server QP {sq:#x} (REP PSN {:#x}): REQ {}, REP {}, RTU {}, \
         DREQ {:?}, DREP {:?}; {} + {} data frames; client exit {cc}",
        c.req.u("infiniband.cm.req.startpsn"),
        c.rep[0].u("infiniband.cm.rep.startpsn"),
        c.req.no(),
        c.rep[0].no(),
        c.rtu[0].no(),
        c.dreq.iter().map(|f| f.no()).collect::<Vec<_>>(),
        c.drep.iter().map(|f| f.no()).collect::<Vec<_>>(),
        c2s.len(),
        s2c.len()
    )
}

fn check_write_cm(s: &Scenario) -> String {
    let name = s.name;
    let (cm, data) = s.split();
    let conns = connections(name, &cm);
    assert_eq!(
        conns.len(),
        2,
        "{name}: REQs (perftest's exchange, the test's QP)"
    );
    // perftest -R for ib_write_bw: retry count 7, RNR retry count 7, no READ resources
    let e = Expect {
        port: 18540,
        retry: 7,
        rnr_retry: 7,
        rd_atomic: 0,
    };
    let dirs: Vec<_> = conns
        .iter()
        .map(|c| check_established(name, c, &data, &e))
        .collect();
    all_claimed(name, &data, &conns.iter().collect::<Vec<_>>());
    // the first connection is perftest's exchange (SENDs both ways), the second the test: 16 WRITEs of 4096
    // bytes at path MTU 1024 (the REQ's): 16 x (First, 2 Middle, Last), one ACK per message
    let (messages, packets) = (16, 4);
    for (c2s, s2c) in &dirs[..1] {
        assert!(
            c2s.iter().chain(s2c).all(|f| matches!(f.op(), 4 | 17)),
            "{name}: perftest's exchange: opcodes other than SEND_ONLY and ACKNOWLEDGE"
        );
    }
    let (c2s, s2c) = &dirs[1];
    let want: BTreeMap<u64, usize> =
        [(6, messages), (7, messages * (packets - 2)), (8, messages)].into();
    assert_eq!(count_ops(c2s), want, "{name}: the test's WRITEs");
    let acks: BTreeMap<u64, usize> = [(17, messages)].into();
    assert_eq!(count_ops(s2c), acks, "{name}: the test's ACKs");
    // what perftest printed: the test QP's QPNs (the second connection's), GIDs; PSNs its QPs do not use
    let test = &conns[1];
    let (sc, slines) = s.run("server");
    let (cc, clines) = s.run("client");
    assert_eq!((sc, cc), (0, 0), "{name}: exit statuses (server, client)");
    let (cl, cr) = addresses(name, &clines);
    let (sl, sr) = addresses(name, &slines);
    assert_eq!(
        (cl.clone(), sl.clone()),
        (sr.clone(), cr.clone()),
        "{name}: each side's remote is the other's local"
    );
    assert_eq!(
        (cl.qpn, sl.qpn),
        (test.client_qpn(), test.server_qpn()),
        "{name}: perftest's QPNs against the test connection's REQ and REP"
    );
    assert_eq!(
        (cl.gid.as_str(), sl.gid.as_str()),
        ("::ffff:10.0.0.1", "::ffff:10.0.0.2"),
        "{name}: perftest's GIDs"
    );
    let (wire_c, wire_s) = (
        test.rep[0].u("infiniband.cm.rep.startpsn"),
        test.req.u("infiniband.cm.req.startpsn"),
    );
    assert!(
        cl.psn != wire_c && sl.psn != wire_s,
        "{name}: perftest -R printed PSNs {:#x}/{:#x}; the CM's are {wire_c:#x}/{wire_s:#x} (perftest prints its \
         own, which its rdma_cm QPs do not use: if they now agree, the README and the facts must say so)",
        cl.psn,
        sl.psn
    );
    s.sent_counts();
    told_cm(s, &conns, &data);
    format!(
        "{name}: exchange client QP {:#x} <-> server QP {:#x}; test client QP {:#x} (WRITEs from PSN {wire_c:#x}, \
         perftest printed {:#x}) <-> server QP {:#x} (REQ PSN {wire_s:#x}, printed {:#x}); REQs {} and {}",
        conns[0].client_qpn(),
        conns[0].server_qpn(),
        cl.qpn,
        cl.psn,
        sl.qpn,
        sl.psn,
        conns[0].req.no(),
        test.req.no()
    )
}

fn check_reject(s: &Scenario) -> String {
    let name = s.name;
    let (cm, data) = s.split();
    assert!(data.is_empty(), "{name}: {} data frames", data.len());
    let conns = connections(name, &cm);
    assert_eq!(conns.len(), 2, "{name}: REQs (rping, perftest)");
    let runs = s.runs();
    assert_eq!(runs.len(), 2, "{name}: client runs");
    let mut out = Vec::new();
    for (i, (c, (port, exit, line))) in conns
        .iter()
        .zip([
            (7999, 255, "cma event RDMA_CM_EVENT_REJECTED, error "),
            (18541, 1, "Unexpected CM event bl blka "),
        ])
        .enumerate()
    {
        assert_eq!(c.port(), port, "{name}: REQ frame {}: port", c.req.no());
        assert_eq!(c.req.u("infiniband.cm.req.serviceid"), PS_TCP | port);
        assert!(
            c.rep.is_empty() && c.rtu.is_empty() && c.dreq.is_empty() && c.drep.is_empty(),
            "{name}: REQ frame {}: more than a REJ",
            c.req.no()
        );
        assert_eq!(c.rej.len(), 1, "{name}: REQ frame {}: REJs", c.req.no());
        let rej = c.rej[0];
        let reason = rej.u("infiniband.cm.rej.reason");
        assert_eq!(
            reason,
            REJ_INVALID_SERVICE_ID,
            "{name}: REJ frame {}: reason",
            rej.no()
        );
        assert_eq!(
            rej.n("infiniband.cm.rej.msgrej"),
            Some(0),
            "{name}: the REJ rejects the REQ"
        );
        assert_eq!(
            rej.n("infiniband.cm.rej.localcommid"),
            Some(0),
            "{name}: REJ frame {}: no comm ID on the rejecting side",
            rej.no()
        );
        assert!(
            c.req.no() < rej.no() && conns.get(i + 1).is_none_or(|n| rej.no() < n.req.no()),
            "{name}: REJ frame {} not between its REQ and the next",
            rej.no()
        );
        let (side, code, lines) = &runs[i];
        assert_eq!(
            (side.as_str(), *code),
            ("client", exit),
            "{name}: run {i}: {lines:?}"
        );
        assert_eq!(
            lines.first().map(String::as_str),
            Some(format!("{line}{reason}").as_str()),
            "{name}: run {i}: the client's first line names the REJ's reason"
        );
        out.push(format!(
            "REQ {} (port {port}, QP {:#x}) -> REJ {} reason {reason} after {:.3} s",
            c.req.no(),
            c.client_qpn(),
            rej.no(),
            rej.t() - c.req.t()
        ));
    }
    s.sent_counts();
    told_cm(s, &conns, &[]);
    format!("{name}: {}", out.join("; "))
}

/// Without CM: the client's requests to the server's printed QPN from the client's printed PSN, consecutive,
/// `requests` of them; the server's to the client's QPN from its own printed PSN; each side's remote line the
/// other's local line. Returns the (client, server) printed addresses.
fn check_printed(s: &Scenario, c2s_requests: usize, s2c_requests: usize) -> (Addr, Addr) {
    let name = s.name;
    let (cm, data) = s.split();
    assert!(cm.is_empty(), "{name}: {} CM frames", cm.len());
    let (sc, slines) = s.run("server");
    let (cc, clines) = s.run("client");
    assert_eq!((sc, cc), (0, 0), "{name}: exit statuses (server, client)");
    let (cl, cr) = addresses(name, &clines);
    let (sl, sr) = addresses(name, &slines);
    assert_eq!(
        (cl.clone(), sl.clone()),
        (sr, cr),
        "{name}: each side's remote is the other's local"
    );
    assert_eq!(
        (cl.gid.as_str(), sl.gid.as_str()),
        ("::ffff:10.0.0.1", "::ffff:10.0.0.2"),
        "{name}: GIDs"
    );
    assert_ne!(cl.qpn, sl.qpn, "{name}: both ends have QPN {:#x}", cl.qpn);
    for (dir, src, to, own_psn, n, peer_psn) in [
        (
            "client -> server",
            CLIENT,
            &sl,
            cl.psn,
            c2s_requests,
            sl.psn,
        ),
        (
            "server -> client",
            SERVER,
            &cl,
            sl.psn,
            s2c_requests,
            cl.psn,
        ),
    ] {
        let fs: Vec<&&Frame> = data.iter().filter(|f| f.src() == src).collect();
        assert!(
            fs.iter().all(|f| f.qp() == to.qpn),
            "{name}: {dir}: frames to QPs other than the printed {:#x}: {:?}",
            to.qpn,
            fs.iter()
                .filter(|f| f.qp() != to.qpn)
                .map(|f| (f.no(), f.qp()))
                .collect::<Vec<_>>()
        );
        let psns: Vec<u64> = fs
            .iter()
            .filter(|f| f.is_request())
            .map(|f| f.psn())
            .collect();
        assert_eq!(
            psns,
            (0..n as u64)
                .map(|i| psn_add(own_psn, i))
                .collect::<Vec<_>>(),
            "{name}: {dir}: request PSNs, consecutive from the printed {own_psn:#x}"
        );
        // the responses this way (ACKs) are in the peer's PSN space
        let peer_n = (if src == CLIENT {
            s2c_requests
        } else {
            c2s_requests
        }) as u64;
        for f in fs.iter().filter(|f| !f.is_request()) {
            assert!(
                peer_n > 0 && psn_in(f.psn(), peer_psn, psn_add(peer_psn, peer_n - 1)),
                "{name}: {dir}: response frame {} PSN {:#x} outside the peer's requests",
                f.no(),
                f.psn()
            );
        }
    }
    s.sent_counts();
    (cl, sl)
}

fn check_write(lab_out: &Path, s: &Scenario) -> String {
    let name = s.name;
    // ib_write_bw -s 4096 -n 16 at MTU 1024: 16 x 4 WRITE packets, 16 ACKs
    let (messages, packets) = (16, 4);
    let (c, sv) = check_printed(s, messages * packets, 0);
    let (_, data) = s.split();
    let want: BTreeMap<u64, usize> = [
        (6, messages),
        (7, messages * 2),
        (8, messages),
        (17, messages),
    ]
    .into();
    assert_eq!(count_ops(&data), want, "{name}: opcodes");
    // the wrapper: rocescope capture ran it and wrote its report (not checked here: traffic facts only)
    assert!(
        lab_out.join(name).join("capture.json").is_file(),
        "{name}: no capture.json"
    );
    assert!(
        s.log
            .contains("+ client wrapped: /usr/local/bin/rocescope capture -i eth0 "),
        "{name}: the client did not run under rocescope capture"
    );
    told_printed(s, &c, &sv);
    told_wrapped(s, &c, &sv);
    format!(
        "{name}: client QP {:#x} (PSN {:#x}) -> server QP {:#x} (printed PSN {:#x}): {} WRITE packets from the \
         printed PSN",
        c.qpn,
        c.psn,
        sv.qpn,
        sv.psn,
        messages * packets
    )
}

fn check_rc_pingpong(s: &Scenario) -> String {
    let name = s.name;
    // ibv_rc_pingpong -s 1024 -n 8: 8 SENDs each way (one packet each at MTU 1024), each acknowledged
    let (iters, size) = (8, 1024);
    let (c, sv) = check_printed(s, iters, iters);
    let (_, data) = s.split();
    let want: BTreeMap<u64, usize> = [(4, 2 * iters), (17, 2 * iters)].into();
    assert_eq!(count_ops(&data), want, "{name}: opcodes");
    for side in ["server", "client"] {
        let (_, lines) = s.run(side);
        let want = format!("{} bytes in ", 2 * iters * size);
        assert!(
            lines.iter().any(|l| l.starts_with(&want))
                && lines
                    .iter()
                    .any(|l| l.starts_with(&format!("{iters} iters in "))),
            "{name}: {side}: no '{want}...' / '{iters} iters in ...' line: {lines:?}"
        );
    }
    told_printed(s, &c, &sv);
    let (resent, repeated) = s.copies();
    format!(
        "{name}: client QP {:#x} (PSN {:#x}) <-> server QP {:#x} (PSN {:#x}): {iters} SENDs each way from the \
         printed PSNs; rxe's timer resends: {} (frames {:?}), answered again: {}",
        c.qpn,
        c.psn,
        sv.qpn,
        sv.psn,
        resent.len(),
        resent.iter().map(|f| f.no()).collect::<Vec<_>>(),
        repeated.len()
    )
}

#[test]
fn connections_in_the_soft_roce_lab() {
    let t0 = std::time::Instant::now();
    let scenarios = [
        "info",
        "conn_rping",
        "conn_write_cm",
        "conn_reject",
        "conn_write",
        "conn_rc_pingpong",
    ];
    let (lab_out, secs) = run_lab("lab-connections", &scenarios);
    let load = |name| Scenario::load(&lab_out, name);
    let summary = [
        check_rping(&load("conn_rping")),
        check_write_cm(&load("conn_write_cm")),
        check_reject(&load("conn_reject")),
        check_write(&lab_out, &load("conn_write")),
        check_rc_pingpong(&load("conn_rc_pingpong")),
    ];
    eprintln!(
        "{}\nlab setup + guest run {secs:.1} s, total {:.1} s",
        summary.join("\n"),
        t0.elapsed().as_secs_f64()
    );
}

/// A run is repeated only for a scenario that failed on a known race, and only when nothing else failed.
#[test]
fn only_known_races_are_run_again() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("lab-races");
    let _ = fs::remove_dir_all(&dir);
    let log = |name: &str, rc: u32, lines: &str| {
        fs::create_dir_all(dir.join(name)).unwrap();
        let end = format!("@@@ LAB-END 1 {name} rc={rc} uptime=21.58");
        fs::write(
            dir.join(name).join("perftest.log"),
            format!("@@@ LAB-BEGIN 1 {name}\n{lines}\n{end}\n"),
        )
        .unwrap();
    };
    let rejected =
        "RDMA CM event error:\nEvent: RDMA_CM_EVENT_REJECTED; error: 8.\nSegmentation fault";
    log("conn_rping", 0, "ping data: rdma-ping-0");
    log("conn_write_cm", 1, rejected);
    let raced = lab_support::raced(&["conn_rping", "conn_write_cm"], &dir);
    assert_eq!(
        raced.iter().map(|r| r.0).collect::<Vec<_>>(),
        ["conn_write_cm"]
    );
    log("conn_rping", 1, rejected);
    assert!(
        lab_support::raced(&["conn_rping", "conn_write_cm"], &dir).is_empty(),
        "not rping's race"
    );
    log("conn_rping", 0, "");
    log(
        "conn_write_cm",
        1,
        "Event: RDMA_CM_EVENT_REJECTED; error: 28.",
    );
    assert!(
        lab_support::raced(&["conn_rping", "conn_write_cm"], &dir).is_empty(),
        "another reason"
    );
    assert!(
        lab_support::raced(&["conn_rping", "conn_reject"], &dir).is_empty(),
        "a missing log is a failure"
    );
}
