//! What a job's communication library logged, read as expectations (`--expect`): which process (host, rank)
//! owns which QP on which HCA, the traffic class it was told to use, and the completions that failed.
//!
//! NCCL (2.12 to 2.30.7, `NCCL_DEBUG=INFO` or `WARN`): the line prefix `host:pid:tid [cudaDev] NCCL INFO `
//! (WARN: `host:pid:tid [cudaDev] file:line NCCL WARN `, since 2.26 after a `[date time] ` stamp, in 2.30.7
//! with `(function)` before `NCCL WARN`), and these messages:
//!
//! ```text
//! Bootstrap : Using eth0:172.30.0.25<0>                                  (2.24+: "Bootstrap: Using")
//! NET/IB : Using [0]rxe0:1/RoCE [1]mlx5_1:1/RoCE [RO]; OOB eth0:172.30.0.25<0>
//! comm 0x74012c0 rank 0 nranks 3 cudaDev 0 nvmlDev 0 busId 80 commId 0xa753... - Init START
//! NCCL_IB_TC set by environment to 106.                                  (NCCL_ENV since 2.17)
//! Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0                        (the sender's; [receive] the receiver's)
//! NET/IB: NCCL Dev 0 IbDev 0 Port 1 qpn 34 mtu 3 query_ece={...} GID 1 (0/19001EACFFFF0000) fifoRkey=...
//! NET/IB: IbDev 0 Port 1 qpn 35 set_ece={...}                            (2.20.3-2.26.6: the REMOTE QPN)
//! NET/IB: ncclIbSenderQpsCreate: QP created: port=1 dev=0 devName=mlx5_0 ... qp_num=34 ...   (2.29.7+)
//! NET/IB : Got completion from peer 172.30.0.11<41234> with status=12 opcode=1 len=0 vendor err 129 (Send)
//!          localGid ::ffff:172.30.0.25 remoteGids::ffff:172.30.0.11 hca mlx5_0      (WARN; 2.12-2.17: "with
//!          error 12, opcode 1, len 0, vendor err 129"; 2.28.7+: "status=IBV_WC_RETRY_EXC_ERR(12)")
//! NET/IB: Got CQE with error (devIndex=0, req=0x.., comm=0x.. (send), wr_id=1, qp_num=34)   (2.29.7+, the
//!          WARN before the one above: the failing QP)
//! ```
//!
//! The QP lines need `NET` in `NCCL_DEBUG_SUBSYS` (the default subsystems print none); before 2.29.7 only the
//! sending side prints its QPs. `GID %ld (%lX/%lX)` is the GID's two halves as the (little-endian) host read
//! them: `19001EACFFFF0000` is `::ffff:172.30.0.25`. `mtu` is `enum ibv_mtu` (3: 1024 bytes).
//!
//! UCX (1.14 to 1.22): the prefix `[sec.usec] [host:pid:thread] file.c:line UCX LEVEL `, and:
//!
//! ```text
//! UCX  INFO  UCX_* env variables: UCX_IB_TRAFFIC_CLASS=106 UCX_NET_DEVICES=mlx5_0:1
//! UCX  ERROR Transport retry count exceeded on mlx5_0:1/RoCE (synd 0x15 vend 0x81 hw_synd 0/0)
//! UCX  ERROR RC QP 0x1b2 wqe[12]: RDMA_WRITE s-- [rva 0x7f.. rkey 0x..] [va 0x.. len 8 lkey 0x..] [rqpn 0x1b5
//!            dlid=0 sl=0 port=1 src_path_bits=0 dgid=::ffff:10.0.0.2 flow_label=0x0 sgid_index=3 traffic_class=106]
//! ```
//!
//! (UCX logs a completion with error as two lines, each with its own prefix; a handled one is logged at DIAG,
//! below the default level.) Anything else is skipped; what the lines hold is bounded (names, texts, counts).
use std::collections::HashMap;
use std::collections::VecDeque;

use parsers::frame::Addr;

/// Processes kept from the logs at most; QPs and failures likewise: memory stays bounded whatever they hold.
pub const MAX_PROCESSES: usize = 65_536;
pub const MAX_QPS: usize = 262_144;
pub const MAX_FAILURES: usize = 4_096;
/// Channel lines a process may have waiting for their QP lines.
const MAX_WAITING: usize = 4_096;
/// The longest name (host, HCA, version) and failure text kept.
const MAX_NAME: usize = 64;
const MAX_TEXT: usize = 400;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Library {
    Nccl,
    Ucx,
}

impl Library {
    pub fn name(self) -> &'static str {
        match self {
            Library::Nccl => "NCCL",
            Library::Ucx => "UCX",
        }
    }
}

/// What a process was told by its environment, as it logged it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Settings {
    /// `NCCL_IB_TC`, `UCX_IB_TRAFFIC_CLASS` (or another `UCX_*TRAFFIC_CLASS`): the GRH traffic class, the IP
    /// TOS byte (DSCP and ECN).
    pub traffic_class: Option<u8>,
    /// `NCCL_IB_FIFO_TC` (2.22+): the receiving side's QPs (CTS writes and ACKs) use it instead.
    pub fifo_traffic_class: Option<u8>,
    /// `NCCL_IB_SL`, `NCCL_IB_GID_INDEX`, `NCCL_IB_TIMEOUT`, `NCCL_IB_RETRY_CNT`.
    pub service_level: Option<u8>,
    pub gid_index: Option<u32>,
    pub timeout: Option<u8>,
    pub retry_count: Option<u8>,
    /// `NCCL_IB_QPS_PER_CONNECTION`: a connection's QP lines come this many at a time (1 when not said).
    pub qps_per_connection: Option<u32>,
}

/// An HCA port a process said it uses (`[0]mlx5_0:1/RoCE`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Device {
    pub index: u32,
    pub name: String,
    pub port: u8,
    /// `RoCE`, `IB`.
    pub link: String,
}

/// One process of the job (a host and a PID), as its lines tell it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Process {
    pub library: Library,
    /// Which of the logs given (`--expect`, in order) it is in.
    pub file: u16,
    pub host: String,
    pub pid: u32,
    /// `NCCL version 2.20.5+cuda12.4` (printed once, without a prefix: every process of its file).
    pub version: Option<String>,
    /// Its first communicator's rank and size.
    pub rank: Option<u32>,
    pub nranks: Option<u32>,
    /// The out-of-band (bootstrap) address: the peer address NCCL's failure lines name.
    pub oob: Option<Addr>,
    pub devices: Vec<Device>,
    pub settings: Settings,
}

impl Process {
    /// The NCCL version as (major, minor), when its file printed it.
    pub fn nccl_version(&self) -> Option<(u32, u32)> {
        let v = self.version.as_deref()?;
        let mut parts = v.split(['.', '+', '-']);
        Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
    }
}

/// Which side of a connection a QP is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    /// The requester: NCCL's sending side, a UCX QP whose requests failed.
    Send,
    /// NCCL's receiving side (it sends CTS writes and the ACKs).
    Receive,
}

/// A QP a process logged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Qp {
    /// Its process (an index into [`JobLog::processes`]).
    pub process: u32,
    pub side: Side,
    /// NCCL's channel and the rank at the other end (from the channel line it belongs to).
    pub channel: Option<u32>,
    pub peer_rank: Option<u32>,
    /// The HCA and port.
    pub device: Option<String>,
    pub port: Option<u8>,
    pub qpn: u32,
    /// The QP it is connected to, when the line says it.
    pub remote_qpn: Option<u32>,
    /// Its own address (the GID it printed: an IPv4-mapped GID as IPv4; a LID on InfiniBand).
    pub addr: Option<Addr>,
    /// The peer's address, when the line says it (UCX's `dgid`).
    pub peer_addr: Option<Addr>,
    /// The path MTU, bytes.
    pub mtu: Option<u32>,
    /// The traffic class printed with it (UCX).
    pub traffic_class: Option<u8>,
    /// Its line in its file (from 1).
    pub line: u32,
}

/// A completion with error (or a QP's fatal event) a process logged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub process: u32,
    pub line: u32,
    /// The message, without the prefix (at most a few hundred characters).
    pub text: String,
    /// The `ibv_wc_status` (12: IBV_WC_RETRY_EXC_ERR).
    pub status: Option<u32>,
    pub vendor_err: Option<u32>,
    /// NCCL: the peer's out-of-band address.
    pub peer: Option<Addr>,
    pub local_gid: Option<Addr>,
    pub remote_gid: Option<Addr>,
    pub device: Option<String>,
    /// The failing QP, and the QP it is connected to, when the lines say them.
    pub qpn: Option<u32>,
    pub remote_qpn: Option<u32>,
    pub traffic_class: Option<u8>,
}

/// Everything read from the logs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobLog {
    pub processes: Vec<Process>,
    pub qps: Vec<Qp>,
    pub failures: Vec<Failure>,
    /// The logs' names, in the order given (`Process::file`).
    pub files: Vec<String>,
}

impl JobLog {
    pub fn is_empty(&self) -> bool {
        self.processes.is_empty()
    }

    /// The process whose first communicator has rank `rank`, when exactly one has.
    pub fn of_rank(&self, rank: u32) -> Option<u32> {
        let mut found = self
            .processes
            .iter()
            .enumerate()
            .filter(|(_, p)| p.library == Library::Nccl && p.rank == Some(rank));
        let (i, _) = found.next()?;
        found.next().is_none().then_some(i as u32)
    }
}

/// The `ibv_wc_status` names (libibverbs' enum, in order) and what `ibv_wc_status_str` says of each.
pub const WC_STATUS: [(&str, &str); 24] = [
    ("IBV_WC_SUCCESS", "success"),
    ("IBV_WC_LOC_LEN_ERR", "local length error"),
    ("IBV_WC_LOC_QP_OP_ERR", "local QP operation error"),
    ("IBV_WC_LOC_EEC_OP_ERR", "local EE context operation error"),
    ("IBV_WC_LOC_PROT_ERR", "local protection error"),
    ("IBV_WC_WR_FLUSH_ERR", "Work Request Flushed Error"),
    ("IBV_WC_MW_BIND_ERR", "memory management operation error"),
    ("IBV_WC_BAD_RESP_ERR", "bad response error"),
    ("IBV_WC_LOC_ACCESS_ERR", "local access error"),
    ("IBV_WC_REM_INV_REQ_ERR", "remote invalid request error"),
    ("IBV_WC_REM_ACCESS_ERR", "remote access error"),
    ("IBV_WC_REM_OP_ERR", "remote operation error"),
    ("IBV_WC_RETRY_EXC_ERR", "transport retry counter exceeded"),
    ("IBV_WC_RNR_RETRY_EXC_ERR", "RNR retry counter exceeded"),
    ("IBV_WC_LOC_RDD_VIOL_ERR", "local RDD violation error"),
    ("IBV_WC_REM_INV_RD_REQ_ERR", "remote invalid RD request"),
    ("IBV_WC_REM_ABORT_ERR", "aborted error"),
    ("IBV_WC_INV_EECN_ERR", "invalid EE context number"),
    ("IBV_WC_INV_EEC_STATE_ERR", "invalid EE context state"),
    ("IBV_WC_FATAL_ERR", "fatal error"),
    ("IBV_WC_RESP_TIMEOUT_ERR", "response timeout error"),
    ("IBV_WC_GENERAL_ERR", "general error"),
    ("IBV_WC_TM_ERR", "TM error"),
    ("IBV_WC_TM_RNDV_INCOMPLETE", "TM rendezvous incomplete"),
];

/// UCX's words for a completion's error (`uct_ib_mlx5_completion_with_err`, both spellings since 1.16) and
/// the `ibv_wc_status` each is.
const UCX_ERRORS: [(&str, u32); 15] = [
    ("Transport retry count exceeded", 12),
    ("Receive-no-ready retry count exceeded", 13),
    ("Remote side aborted", 16),
    ("WR flushed because QP in error state", 5),
    ("Bad response", 7),
    ("Invalid request", 9),
    ("Remote access", 10),
    ("Remote OP", 11),
    ("Remote operation error", 11),
    ("Local length", 1),
    ("Local QP operation", 2),
    ("Local protection", 4),
    ("Memory window bind", 6),
    ("Local access", 8),
    ("Generic", 21),
];

/// What a process is waiting for the lines after to say.
#[derive(Debug, Default)]
struct Waiting {
    /// Channel lines (`via NET/IB`) whose QPs are still to come: the sender's, the receiver's.
    send: VecDeque<Channel>,
    receive: VecDeque<Channel>,
    /// The channel the last QP lines went to, and how many more QPs it takes (NCCL_IB_QPS_PER_CONNECTION).
    current: Option<(Channel, u32)>,
    /// The QPs of the connection being set up (for `set_ece`'s remote QPN).
    group: Vec<u32>,
    /// Their QP lines were 2.20.3-2.26.6's (`IbDev` and `query_ece=` on one line), whose `set_ece` line
    /// names the remote QP: even one numbered as the local one (two hosts number their QPs alike).
    ece_is_remote: bool,
    /// 2.29.7+: the failing QP of the `Got CQE with error` line, for the line after.
    cqe_qpn: Option<u32>,
    /// UCX: the failure whose QP line comes next.
    ucx_failure: Option<u32>,
}

#[derive(Debug, Clone, Copy)]
struct Channel {
    channel: u32,
    peer_rank: u32,
    device: u32,
}

/// Reads logs line by line ([`Reader::file`] before each log's lines).
#[derive(Debug, Default)]
pub struct Reader {
    log: JobLog,
    waiting: Vec<Waiting>,
    by_pid: HashMap<(String, u32), u32>,
    /// The file being read: its index, its version line, its line number.
    file: u16,
    version: Option<String>,
    line: u32,
}

/// A line's prefix, read.
struct Prefixed<'a> {
    library: Library,
    host: &'a str,
    pid: u32,
    /// WARN and worse (NCCL), ERROR and worse (UCX).
    warn: bool,
    message: &'a str,
}

impl Reader {
    /// The next log, named `name`.
    pub fn file(&mut self, name: &str) {
        self.file = self.log.files.len().min(usize::from(u16::MAX)) as u16;
        self.log.files.push(bounded(name, 4 * MAX_NAME));
        self.version = None;
        self.line = 0;
    }

    /// One line (without its newline).
    pub fn line(&mut self, line: &str) {
        self.line = self.line.saturating_add(1);
        let line = line.trim_end_matches('\r');
        if let Some(v) = line.trim().strip_prefix("NCCL version ") {
            let v = bounded(v.trim(), MAX_NAME);
            for p in self
                .log
                .processes
                .iter_mut()
                .filter(|p| p.file == self.file)
            {
                p.version = Some(v.clone());
            }
            self.version = Some(v);
            return;
        }
        let Some(pre) = nccl_prefix(line).or_else(|| ucx_prefix(line)) else {
            return;
        };
        let Some(p) = self.process(&pre) else { return };
        match (pre.library, pre.warn) {
            (Library::Nccl, false) => self.nccl_info(p, pre.message),
            (Library::Nccl, true) => self.nccl_warn(p, pre.message),
            (Library::Ucx, _) => self.ucx(p, pre.message),
        }
    }

    /// How much has been read: processes, QPs and failures (a log that adds none said nothing read here).
    pub fn facts(&self) -> usize {
        self.log.processes.len() + self.log.qps.len() + self.log.failures.len()
    }

    pub fn finish(self) -> JobLog {
        self.log
    }

    /// The process of a line: found, or new.
    fn process(&mut self, pre: &Prefixed) -> Option<u32> {
        let key = (bounded(pre.host, MAX_NAME), pre.pid);
        if let Some(&p) = self.by_pid.get(&key) {
            return Some(p);
        }
        if self.log.processes.len() >= MAX_PROCESSES {
            return None;
        }
        let p = self.log.processes.len() as u32;
        self.log.processes.push(Process {
            library: pre.library,
            file: self.file,
            host: key.0.clone(),
            pid: pre.pid,
            version: self.version.clone(),
            rank: None,
            nranks: None,
            oob: None,
            devices: Vec::new(),
            settings: Settings::default(),
        });
        self.waiting.push(Waiting::default());
        self.by_pid.insert(key, p);
        Some(p)
    }

    fn nccl_info(&mut self, p: u32, m: &str) {
        let process = &mut self.log.processes[p as usize];
        if let Some(rest) = m
            .strip_prefix("Bootstrap : Using")
            .or_else(|| m.strip_prefix("Bootstrap: Using"))
        {
            process.oob = process.oob.or_else(|| interface_address(rest));
        } else if let Some(rest) = m.strip_prefix("NET/IB : Using") {
            let (list, oob) = rest.split_once("; OOB").unwrap_or((rest, ""));
            if process.devices.is_empty() {
                process.devices = devices(list);
            }
            process.oob = process.oob.or_else(|| interface_address(oob));
        } else if let Some((name, value)) = m.split_once(" set by environment to ") {
            setting(&mut process.settings, name.trim(), value);
        } else if let Some(rest) = m.strip_prefix("Channel ") {
            self.channel(p, rest);
        } else if m.contains("comm ") && !m.contains("ncclCommSplit") && process.rank.is_none() {
            process.rank = word_after(m, "rank").and_then(|v| v.parse().ok());
            process.nranks = word_after(m, "nranks")
                .or_else(|| word_after(m, "nRanks"))
                .and_then(|v| v.parse().ok());
        } else if m.starts_with("NET/IB") && !m.contains("Flush QP") {
            self.nccl_qp(p, m);
        }
    }

    /// `00/0 : 0[0] -> 1[0] [send] via NET/IB/0` (only NET/IB connections have QPs).
    fn channel(&mut self, p: u32, rest: &str) {
        let Some((id, path)) = rest.split_once(" : ") else {
            return;
        };
        let Some(via) = path.split_once(" via NET/IB/").map(|(_, v)| v) else {
            return;
        };
        let mut words = path.split_whitespace();
        let rank = |w: Option<&str>| w?.split('[').next()?.parse::<u32>().ok();
        let (Some(from), _, Some(to), Some(side)) = (
            rank(words.next()),
            words.next(),
            rank(words.next()),
            words.next(),
        ) else {
            return;
        };
        let (Some(channel), Some(device)) = (
            id.split('/').next().and_then(|c| c.trim().parse().ok()),
            leading_number(via),
        ) else {
            return;
        };
        let w = &mut self.waiting[p as usize];
        let (queue, peer_rank) = match side {
            "[send]" => (&mut w.send, to),
            "[receive]" => (&mut w.receive, from),
            _ => return,
        };
        if queue.len() >= MAX_WAITING {
            queue.pop_front();
        }
        queue.push_back(Channel {
            channel,
            peer_rank,
            device,
        });
    }

    /// The QP lines of `NET/IB` (connect, `QP created`, `set_ece`).
    fn nccl_qp(&mut self, p: u32, m: &str) {
        let qpn = word_after(m, "qpn")
            .or_else(|| word_after(m, "qp_num"))
            .or_else(|| value_of(m, "qp_num="))
            .and_then(|v| v.trim_end_matches([',', ')']).parse::<u32>().ok())
            .filter(|&q| q < 1 << 24);
        let Some(qpn) = qpn else { return };
        if m.contains("set_ece=") {
            return self.remote_qpn(p, qpn);
        }
        let created = m.contains("QP created:");
        // 2.27+ print the ECE they queried on a line of its own.
        if !created && word_after(m, "mtu").is_none() {
            return;
        }
        let side = if m.contains("Receiver") {
            Side::Receive
        } else {
            Side::Send
        };
        let process = &self.log.processes[p as usize];
        let dev_index = word_after(m, "IbDev")
            .or_else(|| word_after(m, "Dev"))
            .and_then(|v| v.parse::<u32>().ok());
        let device = value_of(m, "devName=")
            .map(|n| bounded(n, MAX_NAME))
            .or_else(|| {
                let i = dev_index?;
                process
                    .devices
                    .iter()
                    .find(|d| d.index == i)
                    .map(|d| d.name.clone())
            });
        let port = word_after(m, "Port")
            .or_else(|| value_of(m, "port="))
            .and_then(|v| v.trim_end_matches(',').parse().ok());
        let addr = gid_halves(m).or_else(|| {
            word_after(m, "LID")
                .and_then(|v| v.parse().ok())
                .map(Addr::Lid)
        });
        let mtu = word_after(m, "mtu")
            .and_then(|v| v.parse::<u32>().ok())
            .filter(|v| (1..=5).contains(v))
            .map(|v| 128 << v);
        // 2.29.7+ print a QP twice (created, then connected): the second adds to the first.
        let known = self.waiting[p as usize]
            .group
            .iter()
            .copied()
            .find(|&i| self.log.qps[i as usize].qpn == qpn);
        if let Some(i) = known {
            let q = &mut self.log.qps[i as usize];
            q.addr = q.addr.or(addr);
            q.mtu = q.mtu.or(mtu);
            q.port = q.port.or(port);
            q.device = q.device.take().or(device);
            return;
        }
        if self.log.qps.len() >= MAX_QPS {
            return;
        }
        let per_connection = process.settings.qps_per_connection.unwrap_or(1).max(1);
        let channel = self.next_channel(p, side, per_connection);
        // A line without the HCA: the one the channel goes through (`via NET/IB/0`).
        let device = device.or_else(|| {
            let c = channel?;
            let devices = &self.log.processes[p as usize].devices;
            devices
                .iter()
                .find(|d| d.index == c.device)
                .map(|d| d.name.clone())
        });
        let w = &mut self.waiting[p as usize];
        if w.group.len() >= MAX_WAITING {
            w.group.clear();
        }
        w.group.push(self.log.qps.len() as u32);
        w.ece_is_remote = !created && m.contains("IbDev") && m.contains("query_ece=");
        self.log.qps.push(Qp {
            process: p,
            side,
            channel: channel.map(|c| c.channel),
            peer_rank: channel.map(|c| c.peer_rank),
            device,
            port,
            qpn,
            remote_qpn: None,
            addr,
            peer_addr: None,
            mtu,
            traffic_class: None,
            line: self.line,
        });
    }

    /// The channel a new QP of side `side` belongs to: the one the QPs before it went to while it takes
    /// more, else the oldest waiting (a new connection: its QPs start a new group).
    fn next_channel(&mut self, p: u32, side: Side, per_connection: u32) -> Option<Channel> {
        let w = &mut self.waiting[p as usize];
        if let Some((c, left)) = w.current.as_mut().filter(|_| side == Side::Send)
            && *left > 0
        {
            *left -= 1;
            return Some(*c);
        }
        let next = match side {
            Side::Send => w.send.pop_front(),
            Side::Receive => w.receive.pop_front(),
        };
        if side == Side::Send {
            w.group.clear();
            w.current = next.map(|c| (c, per_connection - 1));
        }
        next
    }

    /// `set_ece`'s QPN: in 2.20.3-2.26.6 the remote QP's, which the first of the connection's QPs without
    /// one takes (in 2.19 and 2.27+ the QP's own: nothing new).
    fn remote_qpn(&mut self, p: u32, qpn: u32) {
        let w = &self.waiting[p as usize];
        let qps = &mut self.log.qps;
        if !w.ece_is_remote {
            return;
        }
        if let Some(&i) = w
            .group
            .iter()
            .find(|&&i| qps[i as usize].remote_qpn.is_none())
        {
            qps[i as usize].remote_qpn = Some(qpn);
        }
    }

    fn nccl_warn(&mut self, p: u32, m: &str) {
        if m.contains("Got CQE with error") {
            self.waiting[p as usize].cqe_qpn =
                value_of(m, "qp_num=").and_then(|v| v.trim_end_matches([')', ',']).parse().ok());
            return;
        }
        let qp_event = m.contains("async fatal event on QP");
        if !m.contains("Got completion from peer") && !qp_event {
            return;
        }
        let (status, vendor_err) = nccl_status(m);
        let remote_gid = word_after(m, "remoteGid")
            .or_else(|| {
                m.split_whitespace()
                    .find_map(|w| w.strip_prefix("remoteGids"))
            })
            .and_then(gid_text);
        let cqe_qpn = self.waiting[p as usize].cqe_qpn.take();
        let qpn = cqe_qpn.or_else(|| value_of(m, "qpn=").and_then(|v| v.parse().ok()));
        self.failure(Failure {
            process: p,
            line: self.line,
            text: bounded(m.trim(), MAX_TEXT),
            status,
            vendor_err,
            peer: word_after(m, "peer").and_then(|w| interface_address(&format!(":{w}"))),
            local_gid: word_after(m, "localGid").and_then(gid_text),
            remote_gid,
            device: word_after(m, "hca").map(|h| bounded(h, MAX_NAME)),
            qpn,
            remote_qpn: None,
            traffic_class: None,
        });
    }

    fn failure(&mut self, f: Failure) -> Option<u32> {
        if self.log.failures.len() >= MAX_FAILURES {
            return None;
        }
        self.log.failures.push(f);
        Some(self.log.failures.len() as u32 - 1)
    }

    fn ucx(&mut self, p: u32, m: &str) {
        let waiting = self.waiting[p as usize].ucx_failure.take();
        if let Some((_, vars)) = m.split_once("env variable") {
            let vars = vars.split_once(':').map_or("", |(_, v)| v);
            for (name, value) in vars.split_whitespace().filter_map(|w| w.split_once('=')) {
                if name.ends_with("TRAFFIC_CLASS") {
                    let s = &mut self.log.processes[p as usize].settings;
                    s.traffic_class = value.parse().ok().or(s.traffic_class);
                }
            }
        } else if let Some((err, rest)) = m.split_once(" on ").filter(|_| m.contains(" (synd 0x")) {
            let status = UCX_ERRORS
                .iter()
                .find(|(words, _)| err.trim().starts_with(words))
                .map(|&(_, s)| s);
            let device = rest.split(':').next().map(|d| bounded(d.trim(), MAX_NAME));
            let vendor_err = word_after(m, "vend").and_then(hex);
            let f = self.failure(Failure {
                process: p,
                line: self.line,
                text: bounded(m.trim(), MAX_TEXT),
                status,
                vendor_err,
                peer: None,
                local_gid: None,
                remote_gid: None,
                device,
                qpn: None,
                remote_qpn: None,
                traffic_class: None,
            });
            self.waiting[p as usize].ucx_failure = f;
        } else if let Some(f) = waiting {
            self.ucx_qp_line(p, f, m);
        } else if let Some((_, rest)) = m.split_once("send completion with error:") {
            let qpn = word_after(rest, "[qpn").and_then(hex);
            self.failure(Failure {
                process: p,
                line: self.line,
                text: bounded(m.trim(), MAX_TEXT),
                status: None,
                vendor_err: value_of(rest, "vendor_err").and_then(hex),
                peer: None,
                local_gid: None,
                remote_gid: None,
                device: None,
                qpn,
                remote_qpn: None,
                traffic_class: None,
            });
        }
    }

    /// The line after a UCX failure: `RC QP 0x1b2 wqe[12]: ... [rqpn 0x1b5 ... dgid=... traffic_class=106]`
    /// (DCI: `[rqpn 0x.. ... dgid ::ffff:10.0.0.2 tc 106]`).
    fn ucx_qp_line(&mut self, p: u32, f: u32, m: &str) {
        let Some(qpn) = word_after(m, "QP").and_then(hex) else {
            return;
        };
        let remote_qpn = word_after(m, "[rqpn").and_then(hex);
        let dgid = value_of(m, "dgid=")
            .or_else(|| word_after(m, "dgid"))
            .and_then(gid_text);
        let tc = value_of(m, "traffic_class=")
            .or_else(|| word_after(m, "tc"))
            .and_then(|v| v.trim_end_matches(']').parse().ok());
        let failure = &mut self.log.failures[f as usize];
        failure.qpn = Some(qpn);
        failure.remote_qpn = remote_qpn;
        failure.remote_gid = dgid;
        failure.traffic_class = tc;
        failure.text = bounded(
            &format!("{}; {}", failure.text, bounded(m.trim(), MAX_TEXT)),
            MAX_TEXT,
        );
        let device = failure.device.clone();
        if self.log.qps.len() < MAX_QPS {
            self.log.qps.push(Qp {
                process: p,
                side: Side::Send,
                channel: None,
                peer_rank: None,
                device,
                port: None,
                qpn,
                remote_qpn,
                addr: None,
                peer_addr: dgid,
                mtu: None,
                traffic_class: tc,
                line: self.line,
            });
        }
    }
}

/// The job facts of a whole text (one log).
pub fn read(name: &str, text: &str) -> JobLog {
    let mut r = Reader::default();
    r.file(name);
    text.lines().for_each(|l| r.line(l));
    r.finish()
}

/// `host:pid:tid [dev] NCCL INFO msg`, `[date time] host:pid:tid [dev] file:line (func) NCCL WARN msg`.
fn nccl_prefix(line: &str) -> Option<Prefixed<'_>> {
    let (head, message, warn) = if let Some((h, m)) = line.split_once(" NCCL INFO ") {
        (h, m, false)
    } else {
        let (h, m) = line.split_once(" NCCL WARN ")?;
        (h, m, true)
    };
    let head = head.trim_start();
    // 2.26+: a `[date time] ` stamp before the prefix (WARN by default).
    let head = match head.strip_prefix('[') {
        Some(stamped) => stamped.split_once("] ")?.1,
        None => head,
    };
    let who = head.split_whitespace().next()?;
    let mut parts = who.rsplitn(3, ':');
    let (_tid, pid, host) = (parts.next()?, parts.next()?, parts.next()?);
    Some(Prefixed {
        library: Library::Nccl,
        host,
        pid: pid.parse().ok()?,
        warn,
        message,
    })
}

/// `[1700000000.123456] [host:1234 :0]     ib_mlx5_log.c:179  UCX  ERROR msg`.
fn ucx_prefix(line: &str) -> Option<Prefixed<'_>> {
    let (head, rest) = line.split_once(" UCX ")?;
    let rest = rest.trim_start();
    let (level, message) = rest.split_once(' ')?;
    let warn = match level {
        "FATAL" | "ERROR" | "WARN" => true,
        "DIAG" | "INFO" | "DEBUG" | "TRACE" => false,
        _ => return None,
    };
    let who = head.split_once("] [")?.1.split(']').next()?;
    let mut parts = who.split(':');
    let (host, pid) = (parts.next()?, parts.next()?.trim());
    Some(Prefixed {
        library: Library::Ucx,
        host,
        pid: pid.parse().ok()?,
        warn,
        message: message.trim_start(),
    })
}

/// The word after `key` (a whole word).
fn word_after<'a>(s: &'a str, key: &str) -> Option<&'a str> {
    let mut words = s.split_whitespace();
    words.by_ref().find(|w| *w == key)?;
    words.next()
}

/// What follows `key=` (which may end a word, as in `(qp_num=34)`), up to the next space or comma.
fn value_of<'a>(s: &'a str, key: &str) -> Option<&'a str> {
    let at = s.find(key)? + key.len();
    let v = s[at..].split([' ', ',', ')', ']']).next()?;
    (!v.is_empty()).then_some(v)
}

fn leading_number(s: &str) -> Option<u32> {
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    s[..end].parse().ok()
}

fn hex(s: &str) -> Option<u32> {
    let s = s.trim_end_matches([',', ']', ')', ':']);
    u32::from_str_radix(s.strip_prefix("0x").unwrap_or(s), 16).ok()
}

/// `" eth0:172.30.0.25<0>"` (NCCL's `ifname:address<port>`, an IPv6 address possibly with `%scope`).
fn interface_address(s: &str) -> Option<Addr> {
    let (_, rest) = s.trim().split_once(':')?;
    let address = rest.split('<').next()?.split('%').next()?;
    gid_text(address)
}

/// An address as text (`172.30.0.25`, `::ffff:172.30.0.25`, `fe80::1`): IPv4-mapped as IPv4.
fn gid_text(s: &str) -> Option<Addr> {
    let s = s.trim_end_matches([',', ']', ')']);
    match s.parse::<std::net::IpAddr>().ok()? {
        std::net::IpAddr::V4(a) => Some(Addr::V4(a.octets())),
        std::net::IpAddr::V6(a) => gid_addr(a.octets()),
    }
}

fn gid_addr(gid: [u8; 16]) -> Option<Addr> {
    match gid {
        [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, a, b, c, d] => Some(Addr::V4([a, b, c, d])),
        g if g == [0; 16] => None,
        g => Some(Addr::V6(g)),
    }
}

/// NCCL's `GID 1 (0/19001EACFFFF0000)`: the subnet prefix and interface ID as the host read them (`%lX` of
/// the 8 network-order bytes loaded as a little-endian integer).
fn gid_halves(m: &str) -> Option<Addr> {
    let halves = word_after(m, "GID")
        .and_then(|_| m.split_once("GID "))
        .and_then(|(_, rest)| rest.split_once('('))
        .and_then(|(_, rest)| rest.split(')').next())?;
    let (prefix, iid) = halves.split_once('/')?;
    let (prefix, iid) = (
        u64::from_str_radix(prefix, 16).ok()?,
        u64::from_str_radix(iid, 16).ok()?,
    );
    let mut gid = [0u8; 16];
    gid[..8].copy_from_slice(&prefix.to_le_bytes());
    gid[8..].copy_from_slice(&iid.to_le_bytes());
    gid_addr(gid)
}

/// `[0]rxe0:1/RoCE [1]mlx5_1:1/RoCE`, merged `[0]={[0] mlx5_0:1/RoCE, [1] mlx5_1:1/RoCE}`, 2.30.7's
/// `[0]mlx5_0:1:0/RoCE` (a rail).
fn devices(list: &str) -> Vec<Device> {
    let mut out = Vec::new();
    for entry in list.split('[').skip(1) {
        let Some((index, rest)) = entry.split_once(']') else {
            continue;
        };
        let rest = rest.trim_start_matches(['=', '{', ' ']).trim();
        let Some((name_port, link)) = rest.split_once('/') else {
            continue;
        };
        let mut parts = name_port.split(':');
        let (Some(name), Some(port)) = (parts.next(), parts.next()) else {
            continue;
        };
        let (Ok(index), Ok(port)) = (index.parse(), port.parse()) else {
            continue;
        };
        if out.len() < 64 {
            out.push(Device {
                index,
                name: bounded(name, MAX_NAME),
                port,
                link: bounded(
                    link.trim_end_matches([',', '}', ';'])
                        .split(' ')
                        .next()
                        .unwrap_or(""),
                    8,
                ),
            });
        }
    }
    out
}

/// `NCCL_IB_TC set by environment to 106.`
fn setting(s: &mut Settings, name: &str, value: &str) {
    let value = value.trim().trim_end_matches('.');
    let Ok(v) = value.parse::<i64>() else { return };
    let byte = u8::try_from(v).ok();
    match name {
        "NCCL_IB_TC" => s.traffic_class = byte,
        "NCCL_IB_FIFO_TC" => s.fifo_traffic_class = byte,
        "NCCL_IB_SL" => s.service_level = byte,
        "NCCL_IB_GID_INDEX" => s.gid_index = u32::try_from(v).ok(),
        "NCCL_IB_TIMEOUT" => s.timeout = byte,
        "NCCL_IB_RETRY_CNT" => s.retry_count = byte,
        "NCCL_IB_QPS_PER_CONNECTION" => {
            s.qps_per_connection = u32::try_from(v).ok().filter(|&n| (1..=128).contains(&n))
        }
        _ => {}
    }
}

/// The status and vendor error of NCCL's failure line, in each version's words: `with error 12, ... vendor
/// err 129`, `with status=12 ... vendor err 129`, `status=IBV_WC_RETRY_EXC_ERR(12) ... vendor_err=129`.
fn nccl_status(m: &str) -> (Option<u32>, Option<u32>) {
    let number = |v: &str| -> Option<u32> {
        let v = v.trim_end_matches(',');
        match v.split_once('(') {
            Some((_, n)) => n.trim_end_matches(')').parse().ok(),
            None => v.parse().ok(),
        }
    };
    let status = value_of(m, "status=")
        .and_then(number)
        .or_else(|| word_after(m, "error").and_then(number));
    let vendor = value_of(m, "vendor_err=").and_then(number).or_else(|| {
        m.split_once("vendor err ")
            .and_then(|(_, r)| r.split_whitespace().next())
            .and_then(number)
    });
    (status, vendor)
}

/// At most `max` bytes of `s`, cut at a character boundary.
fn bounded(s: &str, max: usize) -> String {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

#[cfg(test)]
mod tests;
