//! `gen loopback`: requester QP on one device, responder QP on another, both in this process.
//!
//! Verbs as verified on rxe (see the project notes): the basic CQ (`ibv_create_cq`/`ibv_poll_cq`, not the
//! extended one, whose rxe provider in rdma-core < 55 returns phantom completions), the basic QP
//! (`ibv_post_send`), max_rd_atomic and max_dest_rd_atomic >= 1, the RoCE v2 GID with an IPv4-mapped
//! address, a path MTU the network device can carry, completions checked for order and wr_id, and a
//! deadline on every wait.

use std::collections::BTreeMap;
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::Serialize;
use sideway::ibverbs::AccessFlags;
use sideway::ibverbs::address::{AddressHandleAttribute, Gid, GidType};
use sideway::ibverbs::completion::BasicCompletionQueue;
use sideway::ibverbs::device::{DeviceInfo, DeviceList, GetDeviceListErrorKind};
use sideway::ibverbs::device_context::{DeviceContext, Mtu};
use sideway::ibverbs::memory_region::MemoryRegion;
use sideway::ibverbs::protection_domain::ProtectionDomain;
use sideway::ibverbs::queue_pair::{
    BasicQueuePair, PostSendGuard, QueuePair, QueuePairAttribute, QueuePairAttributeMask,
    QueuePairState, SetScatterGatherEntry, WorkRequestFlags,
};

use super::plan::{self, ipv4_mapped, mtu_bytes, packets_per_message, psn_add, wc_status_name};
use super::{Fault, LoopbackArgs, Op, pattern};

#[derive(Serialize)]
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

/// One direction on the wire, as `rocescope analyze` keys flows: source and destination address and the
/// destination QP.
#[derive(Serialize)]
pub struct Flow {
    pub src: Option<String>,
    pub dst: Option<String>,
    pub dest_qp: u32,
    pub role: &'static str,
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

#[derive(Serialize)]
pub struct DataCheck {
    pub status: &'static str,
    pub checked: u64,
    pub mismatches: u64,
    pub first_mismatch: Option<String>,
}

#[derive(Serialize)]
pub struct Report {
    pub op: Op,
    pub size: u32,
    /// Messages per QP pair: -n, or with --duration those the first pair posted before the time was up.
    pub iterations: u64,
    /// How the posting ended: "iters" (-n messages posted) or "duration" (--duration elapsed).
    pub stopped_by: &'static str,
    /// --duration in seconds, if given.
    pub duration: Option<f64>,
    /// From the first post to the last (with --duration: to the moment the time was up).
    pub posting_seconds: f64,
    /// --rate: the target and what was achieved (messages and payload over `seconds`).
    pub rate: Option<RateReport>,
    pub depth: u32,
    pub mtu: u32,
    pub mtu_source: String,
    pub qp_timeout: u8,
    pub max_rd_atomic: u8,
    /// GRH traffic class (--tclass; rxe puts it in the IP TOS byte: the low 2 bits are the ECN field).
    pub traffic_class: u8,
    pub fault: Option<Fault>,
    /// QP pairs (-q); each runs `iterations` messages with PSNs of its own.
    pub qps: u32,
    /// The first pair's endpoints (the only pair without -q).
    pub requester: Endpoint,
    pub responder: Endpoint,
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
    /// Why the run stopped early (a completion error, a deadline, a post failure); exit status 1.
    pub error: Option<String>,
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
}

/// One QP pair of the run (requester QP on `a`, responder QP on `b`) and its progress.
struct Pair {
    a: Side,
    b: Side,
    aq: u32,
    bq: u32,
    apsn: u32,
    bpsn: u32,
    /// The messages this pair runs: -n, or with --duration unbounded until the time is up, then `posted`.
    limit: u64,
    posted: u64,
    completed: u64,
    recv_posted: u64,
    recv_done: u64,
    post_time: Vec<Instant>,
    src_ip: Option<String>,
    dst_ip: Option<String>,
}

/// Memory the device reads and writes: 8-byte aligned, never moved, freed after the MR is deregistered.
/// Owned through a raw pointer (from `Box::into_raw`): the device and this process both write it.
struct Buffer {
    ptr: *mut u8,
    len: usize,
    words: usize,
}

impl Drop for Buffer {
    fn drop(&mut self) {
        // SAFETY: ptr and words come from Box::into_raw in Buffer::new; dropped once.
        drop(unsafe {
            Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                self.ptr.cast::<u64>(),
                self.words,
            ))
        });
    }
}

impl Buffer {
    fn new(len: usize) -> Buffer {
        let words = len.div_ceil(8).max(1);
        let mem = vec![0u64; words].into_boxed_slice();
        Buffer {
            ptr: Box::into_raw(mem).cast::<u8>(),
            len,
            words,
        }
    }

    fn addr(&self, off: usize) -> u64 {
        self.ptr as u64 + off as u64
    }

    /// # Safety
    /// No work request that targets `off..off + len` may be outstanding.
    unsafe fn slice_mut(&mut self, off: usize, len: usize) -> &mut [u8] {
        assert!(off + len <= self.len);
        // SAFETY: in bounds (checked above); the caller guarantees the device does not touch it now.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(off), len) }
    }

    /// # Safety
    /// No work request that writes `off..off + len` may be outstanding.
    unsafe fn slice(&self, off: usize, len: usize) -> &[u8] {
        assert!(off + len <= self.len);
        // SAFETY: as for slice_mut.
        unsafe { std::slice::from_raw_parts(self.ptr.add(off), len) }
    }
}

struct GidInfo {
    index: u8,
    gid: Gid,
    gid_type: GidType,
    ip: Option<Ipv4Addr>,
    netdev: Option<String>,
    choice: String,
}

/// Field order is drop order: the QP before its CQs, the MR before the PD, the buffer last.
struct Side {
    qp: BasicQueuePair,
    send_cq: Arc<BasicCompletionQueue>,
    recv_cq: Arc<BasicCompletionQueue>,
    mr: Arc<MemoryRegion>,
    _pd: Arc<ProtectionDomain>,
    _ctx: Arc<DeviceContext>,
    buf: Buffer,
    name: String,
    gid: GidInfo,
    active_mtu: u32,
    netdev_mtu: Option<u32>,
    /// min(max_qp_rd_atom, max_qp_init_rd_atom) of the device
    max_rd_atom: u32,
    sq_psn: u32,
}

fn no_rdma_message(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::EOPNOTSUPP) => "no RDMA here: libibverbs (libibverbs.so.1) could not be loaded; install \
             libibverbs1 and ibverbs-providers (rdma-core), or run in the Soft-RoCE lab (lab/README.md)"
            .to_string(),
        Some(libc::ENOSYS) => "no RDMA here: this kernel has no RDMA support (libibverbs: \
             ibv_get_device_list failed with ENOSYS); run where RDMA devices exist, e.g. the Soft-RoCE lab \
             (lab/README.md)"
            .to_string(),
        _ => format!("no RDMA here: libibverbs cannot list the RDMA devices: {e}"),
    }
}

fn io_of<E: std::error::Error>(e: &E) -> String {
    // sideway's errors wrap an io::Error whose text is the useful part
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(inner) = src {
        let t = inner.to_string();
        if !s.contains(&t) {
            s = format!("{s}: {t}");
        }
        src = inner.source();
    }
    s
}

fn mtu_enum(bytes: u32) -> Mtu {
    match bytes {
        256 => Mtu::Mtu256,
        512 => Mtu::Mtu512,
        1024 => Mtu::Mtu1024,
        2048 => Mtu::Mtu2048,
        _ => Mtu::Mtu4096,
    }
}

fn gid_type_name(t: GidType) -> &'static str {
    match t {
        GidType::InfiniBand => "IB",
        GidType::RoceV1 => "RoCE v1",
        GidType::RoceV2 => "RoCE v2",
    }
}

fn pick_gid(
    ctx: &DeviceContext,
    dev: &str,
    port: u8,
    forced: Option<u8>,
) -> Result<GidInfo, String> {
    let table = ctx
        .query_gid_table()
        .map_err(|e| format!("{dev}: cannot read the GID table: {}", io_of(&e)))?;
    let entries: Vec<_> = table
        .iter()
        .filter(|e| e.port_num() == u32::from(port) && !e.gid().is_zero())
        .collect();
    let describe = || {
        entries
            .iter()
            .map(|e| {
                format!(
                    "{} {} ({})",
                    e.gid_index(),
                    Ipv6Addr::from(e.gid()),
                    gid_type_name(e.gid_type())
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let entry = match forced {
        Some(i) => entries
            .iter()
            .find(|e| e.gid_index() == u32::from(i))
            .ok_or_else(|| {
                format!(
                    "{dev} port {port} has no GID index {i}; its GIDs: {}",
                    describe()
                )
            })?,
        None => entries
            .iter()
            .find(|e| e.gid_type() == GidType::RoceV2 && ipv4_mapped(&e.gid().raw).is_some())
            .ok_or_else(|| {
                format!(
                    "{dev} port {port} has no RoCE v2 GID with an IPv4-mapped address (::ffff:a.b.c.d); its \
                     GIDs: {}; give one with -x",
                    if entries.is_empty() {
                        "none".to_string()
                    } else {
                        describe()
                    }
                )
            })?,
    };
    let ip = ipv4_mapped(&entry.gid().raw);
    let choice = match forced {
        Some(_) => format!(
            "-x: {}{}",
            gid_type_name(entry.gid_type()),
            if ip.is_some() { ", IPv4-mapped" } else { "" }
        ),
        None => "auto: RoCE v2 and IPv4-mapped".to_string(),
    };
    Ok(GidInfo {
        index: entry.gid_index() as u8,
        gid: entry.gid(),
        gid_type: entry.gid_type(),
        ip,
        netdev: entry.netdev_name().ok(),
        choice,
    })
}

fn open_side(
    list: &DeviceList,
    name: &str,
    args: &LoopbackArgs,
    buf_len: usize,
    cqe: u32,
) -> Result<Side, String> {
    let dev = list.iter().find(|d| d.name() == name).ok_or_else(|| {
        let names: Vec<String> = list.iter().map(|d| d.name()).collect();
        format!(
            "no RDMA device '{name}' (devices: {})",
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            }
        )
    })?;
    let ctx = dev
        .open()
        .map_err(|e| format!("{name}: cannot open: {}", io_of(&e)))?;
    let pattr = ctx
        .query_port(args.port)
        .map_err(|e| format!("{name}: cannot query port {}: {}", args.port, io_of(&e)))?;
    let active_mtu = mtu_bytes(pattr.active_mtu() as u32).unwrap_or(1024);
    let dattr = ctx
        .query_device()
        .map_err(|e| format!("{name}: cannot query the device: {}", io_of(&e)))?;
    let max_rd_atom = dattr
        .max_qp_rd_atom()
        .min(dattr.max_qp_init_rd_atom())
        .max(0) as u32;
    let gid = pick_gid(&ctx, name, args.port, args.gid_index)?;
    let netdev_mtu = gid.netdev.as_ref().and_then(|n| {
        std::fs::read_to_string(format!("/sys/class/net/{n}/mtu"))
            .ok()
            .and_then(|s| s.trim().parse().ok())
    });
    let pd = ctx
        .alloc_pd()
        .map_err(|e| format!("{name}: cannot allocate a protection domain: {}", io_of(&e)))?;
    let buf = Buffer::new(buf_len);
    // SAFETY: buf lives in the Side, after the MR in drop order, and is never moved or freed before it.
    let mr = unsafe {
        pd.reg_mr(
            buf.ptr as usize,
            buf.len,
            AccessFlags::LocalWrite
                | AccessFlags::RemoteWrite
                | AccessFlags::RemoteRead
                | AccessFlags::RemoteAtomic,
        )
    }
    .map_err(|e| {
        format!(
            "{name}: cannot register {buf_len} bytes of memory: {} (non-root users: raise RLIMIT_MEMLOCK, \
             ulimit -l)",
            io_of(&e)
        )
    })?;
    let mut cqb = ctx.create_cq_builder();
    cqb.setup_cqe(cqe);
    let send_cq = cqb
        .build()
        .map_err(|e| format!("{name}: cannot create a completion queue: {}", io_of(&e)))?;
    let recv_cq = cqb
        .build()
        .map_err(|e| format!("{name}: cannot create a completion queue: {}", io_of(&e)))?;
    let mut qpb = pd.create_qp_builder();
    qpb.setup_send_cq(send_cq.clone())
        .setup_recv_cq(recv_cq.clone())
        .setup_max_send_wr(args.depth)
        .setup_max_recv_wr(args.depth)
        .setup_max_send_sge(1)
        .setup_max_recv_sge(1)
        .setup_max_inline_data(0);
    let qp = qpb
        .build()
        .map_err(|e| format!("{name}: cannot create an RC QP: {}", io_of(&e)))?;
    Ok(Side {
        qp,
        send_cq,
        recv_cq,
        mr,
        _pd: pd,
        _ctx: ctx,
        buf,
        name: name.to_string(),
        gid,
        active_mtu,
        max_rd_atom,
        netdev_mtu,
        sq_psn: plan::random_psn(),
    })
}

struct ConnectParams {
    port: u8,
    mtu: u32,
    timeout: u8,
    rd_atomic: u8,
    tclass: u8,
}

/// RESET -> INIT -> RTR -> RTS toward the peer (its QPN, GID, and the PSN it will send first).
fn connect(
    side: &mut Side,
    peer_qpn: u32,
    peer_gid: &Gid,
    peer_sq_psn: u32,
    p: &ConnectParams,
) -> Result<(), String> {
    let name = side.name.clone();
    let qpn = side.qp.qp_number();
    let step = |what: &str, e: &dyn std::error::Error| {
        let mut s = format!("{name}: QP {qpn:#x} to {what}: {e}");
        if let Some(src) = e.source() {
            s = format!("{s}: {src}");
        }
        s
    };
    let mut a = QueuePairAttribute::new();
    a.setup_state(QueuePairState::Init)
        .setup_pkey_index(0)
        .setup_port(p.port)
        .setup_access_flags(
            AccessFlags::LocalWrite
                | AccessFlags::RemoteWrite
                | AccessFlags::RemoteRead
                | AccessFlags::RemoteAtomic,
        );
    side.qp.modify(&a).map_err(|e| step("INIT", &e))?;

    let mut a = QueuePairAttribute::new();
    a.setup_state(QueuePairState::ReadyToReceive)
        .setup_path_mtu(mtu_enum(p.mtu))
        .setup_dest_qp_num(peer_qpn)
        .setup_rq_psn(peer_sq_psn)
        .setup_max_dest_read_atomic(p.rd_atomic)
        .setup_min_rnr_timer(12);
    let mut ah = AddressHandleAttribute::new();
    ah.setup_dest_lid(0)
        .setup_port(p.port)
        .setup_service_level(0)
        .setup_grh(peer_gid, 0, side.gid.index, 64, p.tclass);
    a.setup_address_vector(&ah);
    side.qp.modify(&a).map_err(|e| step("RTR", &e))?;

    let mut a = QueuePairAttribute::new();
    a.setup_state(QueuePairState::ReadyToSend)
        .setup_sq_psn(side.sq_psn)
        .setup_timeout(p.timeout)
        .setup_retry_cnt(7)
        .setup_rnr_retry(7)
        .setup_max_read_atomic(p.rd_atomic);
    side.qp.modify(&a).map_err(|e| step("RTS", &e))?;
    Ok(())
}

fn post_recv(side: &mut Side, wqe: u64, size: u32, depth: u32) -> Result<(), String> {
    let slot = (wqe % u64::from(depth)) as usize;
    let addr = side.buf.addr(slot * size as usize);
    let lkey = side.mr.lkey();
    let mut g = side.qp.start_post_recv();
    // SAFETY: the slot is inside the registered buffer, which outlives the QP.
    unsafe { g.construct_wr(wqe).setup_sge(lkey, addr, size) };
    g.post()
        .map_err(|e| format!("{}: post receive: {}", side.name, io_of(&e)))
}

impl Side {
    fn qp_state_now(&self) -> String {
        match self.qp.query(QueuePairAttributeMask::State) {
            Ok((a, _)) => format!("{:?}", a.state()),
            Err(e) => format!("unknown ({})", io_of(&e)),
        }
    }
}

/// The opcodes of `n` messages of `ppm` packets each: `PREFIX_ONLY`, or `_FIRST`, `_MIDDLE`, `_LAST`.
fn segments(prefix: &str, n: u64, ppm: u64) -> BTreeMap<String, u64> {
    let name = |s: &str| format!("{prefix}_{s}");
    let mut m = BTreeMap::new();
    if ppm == 1 {
        m.insert(name("ONLY"), n);
    } else {
        m.insert(name("FIRST"), n);
        if ppm > 2 {
            m.insert(name("MIDDLE"), n * (ppm - 2));
        }
        m.insert(name("LAST"), n);
    }
    m
}

fn endpoint(s: &Side, port: u8, rq_psn: u32) -> Endpoint {
    Endpoint {
        device: s.name.clone(),
        port,
        netdev: s.gid.netdev.clone(),
        netdev_mtu: s.netdev_mtu,
        active_mtu: s.active_mtu,
        gid_index: s.gid.index,
        gid: Ipv6Addr::from(s.gid.gid).to_string(),
        gid_type: gid_type_name(s.gid.gid_type).to_string(),
        gid_choice: s.gid.choice.clone(),
        ip: s.gid.ip.map(|i| i.to_string()),
        qpn: s.qp.qp_number(),
        sq_psn: s.sq_psn,
        rq_psn,
    }
}

/// The two flows of pair `p` after `n` messages: the requests, and the ACKs / responses.
fn pair_flows(op: Op, size32: u32, mtu: u32, p: &Pair, n: u64) -> [Flow; 2] {
    let ppm = if op.is_atomic() {
        1
    } else {
        packets_per_message(u64::from(size32), mtu)
    };
    let total_psns = n * ppm;
    let (req_carries, reply_carries) = match op {
        Op::Write => ("RDMA WRITE requests", "ACKs"),
        Op::Send => ("SEND requests", "ACKs"),
        Op::Read => ("RDMA READ requests", "RDMA READ responses"),
        Op::FetchAdd => ("FETCH_ADD requests", "ATOMIC_ACKNOWLEDGEs"),
        Op::CmpSwap => ("COMPARE_SWAP requests", "ATOMIC_ACKNOWLEDGEs"),
    };
    let (reply_first, reply_packets) = match op {
        // an ACK at least for each message's last packet (rxe sets AckReq there); coalescing may drop some
        Op::Write | Op::Send => (psn_add(p.apsn, ppm - 1), n),
        Op::Read | Op::FetchAdd | Op::CmpSwap => (p.apsn, total_psns),
    };
    let req_opcodes = match op {
        Op::Write => segments("RC_WRITE", n, ppm),
        Op::Send => segments("RC_SEND", n, ppm),
        Op::Read => BTreeMap::from([("RC_READ_REQUEST".to_string(), n)]),
        Op::FetchAdd => BTreeMap::from([("RC_FETCH_ADD".to_string(), n)]),
        Op::CmpSwap => BTreeMap::from([("RC_COMPARE_SWAP".to_string(), n)]),
    };
    let reply_opcodes = match op {
        Op::Write | Op::Send => BTreeMap::new(),
        Op::Read => segments("RC_READ_RESPONSE", n, ppm),
        Op::FetchAdd | Op::CmpSwap => BTreeMap::from([("RC_ATOMIC_ACKNOWLEDGE".to_string(), n)]),
    };
    [
        Flow {
            src: p.src_ip.clone(),
            dst: p.dst_ip.clone(),
            dest_qp: p.bq,
            role: "requester",
            carries: req_carries,
            opcodes: req_opcodes,
            psn_first: p.apsn,
            // READ requests advance the PSN by the response packets they ask for
            psn_last: psn_add(p.apsn, total_psns - 1),
            packets: if op == Op::Read { n } else { total_psns },
            // the analyzer counts SEND/WRITE messages (FIRST..LAST, ONLY), not READs or atomics
            messages: if matches!(op, Op::Write | Op::Send) {
                n
            } else {
                0
            },
        },
        Flow {
            src: p.dst_ip.clone(),
            dst: p.src_ip.clone(),
            dest_qp: p.aq,
            role: "responder",
            carries: reply_carries,
            opcodes: reply_opcodes,
            psn_first: reply_first,
            psn_last: psn_add(p.apsn, total_psns - 1),
            packets: reply_packets,
            messages: 0,
        },
    ]
}

pub fn run(args: &LoopbackArgs) -> Result<Report, String> {
    if !(args.timeout > 0.0 && args.timeout.is_finite()) {
        return Err(format!(
            "--timeout {} is not a positive number of seconds",
            args.timeout
        ));
    }
    let list = DeviceList::new().map_err(|e| match &e.0 {
        GetDeviceListErrorKind::Ibverbs(io) => no_rdma_message(io),
        _ => format!("no RDMA here: libibverbs cannot list the RDMA devices: {e}"),
    })?;
    if list.is_empty() {
        return Err(
            "no RDMA device here (libibverbs found none; Soft-RoCE: rdma link add rxe0 type rxe \
                    netdev ETH)"
                .to_string(),
        );
    }
    if args.fault.is_some() && args.duration.is_some() {
        return Err("--fault needs -n (the faulty message is the last one)".to_string());
    }
    if args.fault == Some(Fault::BadRkey) && args.op == Op::Send {
        return Err(
            "--fault bad-rkey needs --op write or read (a SEND carries no R_Key)".to_string(),
        );
    }
    if args.device == args.peer_device {
        return Err(format!(
            "--peer-device must differ from -d ({}): rxe loops a device's traffic to itself inside the \
             driver, nothing would reach the wire",
            args.device
        ));
    }
    // the atomics move one 8-byte word: the remote one at offset 0 of the responder's buffer (8-byte
    // aligned), the original values into the requester's slots
    let size32 = if args.op.is_atomic() { 8 } else { args.size };
    let size = size32 as usize;
    let depth = args.depth as usize;
    let buf_len = size
        .checked_mul(depth)
        .filter(|&l| l <= 1 << 32)
        .ok_or_else(|| {
            format!(
                "-s {} x --depth {} is more than 4 GiB of buffers",
                args.size, args.depth
            )
        })?;
    let cqe = args.depth * 2 + 2;
    // one device context, PD, MR, CQs and QP per side of each QP pair
    let mut sides = Vec::with_capacity(args.qps as usize);
    for _ in 0..args.qps {
        let a = open_side(&list, &args.device, args, buf_len, cqe)?;
        let b = open_side(&list, &args.peer_device, args, buf_len, cqe)?;
        sides.push((a, b));
    }
    let (a, b) = (&sides[0].0, &sides[0].1);

    // path MTU: the ports' active MTU unless given; never more than the network devices carry
    let active = a.active_mtu.min(b.active_mtu);
    let (mtu, mtu_source) = match args.mtu {
        Some(m) => (m, "--mtu".to_string()),
        None => (
            active,
            format!(
                "active MTU of {} ({}) and {} ({})",
                a.name, a.active_mtu, b.name, b.active_mtu
            ),
        ),
    };
    for s in [a, b] {
        if let Some(n) = s.netdev_mtu {
            let limit = plan::max_path_mtu_for_netdev(n);
            if limit.is_none_or(|l| mtu > l) {
                return Err(format!(
                    "path MTU {mtu} is larger than {} ({}, MTU {n}) allows ({}): rxe would put nothing on the \
                     wire and no completion would come",
                    s.gid.netdev.as_deref().unwrap_or("?"),
                    s.name,
                    match limit {
                        Some(l) => format!(
                            "at most {l} after {} header bytes",
                            plan::RXE_MAX_HDR_LENGTH
                        ),
                        None => "not even 256".to_string(),
                    }
                ));
            }
        }
    }

    // one outstanding READ per message in flight, within what both devices take (at most 16), and at least
    // 1: with 0, READs hang silently (no packet, no completion, the QP still in RTS)
    let rd_atomic = args
        .depth
        .min(16)
        .min(a.max_rd_atom)
        .min(b.max_rd_atom)
        .max(1) as u8;
    let p = ConnectParams {
        port: args.port,
        mtu,
        timeout: args.qp_timeout,
        rd_atomic,
        tclass: args.tclass,
    };
    let n = args.iters;
    let mut pairs = Vec::with_capacity(sides.len());
    for (mut a, mut b) in sides {
        let (aq, bq) = (a.qp.qp_number(), b.qp.qp_number());
        let (ag, bg) = (a.gid.gid, b.gid.gid);
        let (apsn, bpsn) = (a.sq_psn, b.sq_psn);
        connect(&mut a, bq, &bg, bpsn, &p)?;
        connect(&mut b, aq, &ag, apsn, &p)?;

        pairs.push(Pair {
            aq,
            bq,
            bpsn,
            apsn,
            limit: if args.duration.is_some() { u64::MAX } else { n },
            posted: 0,
            completed: 0,
            recv_posted: 0,
            recv_done: 0,
            post_time: vec![Instant::now(); depth],
            src_ip: a.gid.ip.map(|i| i.to_string()),
            dst_ip: b.gid.ip.map(|i| i.to_string()),
            a,
            b,
        });
    }

    // --- the run
    let deadline = Duration::from_secs_f64(args.timeout);
    let mut hist = Histogram::<u64>::new(3).expect("histogram");
    let mut check = DataCheck {
        status: "passed",
        checked: 0,
        mismatches: 0,
        first_mismatch: None,
    };
    let mut completion_errors = 0u64;
    let mut error: Option<String> = None;
    if args.op == Op::Send {
        for p in &mut pairs {
            while p.recv_posted < p.limit.min(depth as u64) {
                post_recv(&mut p.b, p.recv_posted, args.size, args.depth)?;
                p.recv_posted += 1;
            }
        }
    }
    let mismatch = |check: &mut DataCheck, what: String| {
        check.mismatches += 1;
        check.status = "failed";
        if check.first_mismatch.is_none() {
            check.first_mismatch = Some(what);
        }
    };
    if args.op.is_atomic() {
        for p in &mut pairs {
            // SAFETY: nothing is posted yet.
            unsafe { p.b.buf.slice_mut(0, 8) }
                .copy_from_slice(&pattern::atomic_value(p.aq, 0).to_ne_bytes());
        }
    }
    let rate_mps = args.rate.map(|r| r.messages_per_sec(size32));
    let run_for = args.duration.map(Duration::from_secs_f64);
    let mut total_posted = 0u64;
    let t0 = Instant::now();
    let mut last_progress = t0;
    let mut t_end = t0;
    let mut t_last_post = t0;
    let mut stopped_at: Option<Instant> = None;
    'run: while pairs
        .iter()
        .any(|p| p.completed < p.limit || (args.op == Op::Send && p.recv_done < p.limit))
    {
        if let Some(d) = run_for
            && stopped_at.is_none()
        {
            let now = Instant::now();
            if now.duration_since(t0) >= d {
                stopped_at = Some(now);
                for p in &mut pairs {
                    p.limit = p.posted;
                }
            }
        }
        for pair in &mut pairs {
            let Pair {
                a,
                b,
                aq,
                bq,
                limit,
                posted,
                completed,
                recv_posted,
                recv_done,
                post_time,
                ..
            } = pair;
            let (aq, bq) = (*aq, *bq);
            // post while the window (and, for SEND, the receives posted) allow
            while *posted < *limit
                && *posted - *completed < depth as u64
                && (args.op != Op::Send || *posted < *recv_posted)
                && rate_mps.is_none_or(|mps| t0.elapsed() >= plan::post_due(total_posted, mps))
            {
                let slot = (*posted % depth as u64) as usize;
                let off = slot * size;
                // SAFETY: message `posted - depth` used this slot and has completed.
                unsafe {
                    match args.op {
                        Op::Write | Op::Send => {
                            pattern::fill(a.buf.slice_mut(off, size), aq, *posted)
                        }
                        Op::Read => pattern::fill(b.buf.slice_mut(off, size), aq, *posted),
                        // not the value the atomic must return: a slot the device did not write shows
                        Op::FetchAdd | Op::CmpSwap => a
                            .buf
                            .slice_mut(off, 8)
                            .copy_from_slice(&(!pattern::atomic_value(aq, *posted)).to_ne_bytes()),
                    }
                }
                let (laddr, lkey) = (a.buf.addr(off), a.mr.lkey());
                let raddr = if args.op.is_atomic() {
                    b.buf.addr(0)
                } else {
                    b.buf.addr(off)
                };
                let mut rkey = b.mr.rkey();
                if args.fault == Some(Fault::BadRkey) && *posted == n - 1 {
                    // same MR index, another key byte: rxe finds the MR and refuses the key
                    rkey ^= 0x80;
                }
                let now = Instant::now();
                post_time[slot] = now;
                if *posted == *completed {
                    // nothing was in flight (paced by --rate): the completion deadline starts now
                    last_progress = now;
                }
                let mut g = a.qp.start_post_send();
                let wr = g.construct_wr(*posted, WorkRequestFlags::Signaled);
                let h = match args.op {
                    Op::Write => wr.setup_write(rkey, raddr),
                    Op::Send => wr.setup_send(),
                    Op::Read => wr.setup_read(rkey, raddr),
                    Op::FetchAdd => wr.setup_atomic_fetch_add(rkey, raddr, pattern::ATOMIC_ADD),
                    Op::CmpSwap => wr.setup_atomic_compare_swap(
                        rkey,
                        raddr,
                        pattern::atomic_value(aq, *posted),
                        pattern::atomic_value(aq, *posted + 1),
                    ),
                };
                // SAFETY: the slot is inside a's registered buffer.
                unsafe { h.setup_sge(lkey, laddr, size32) };
                if let Err(e) = g.post() {
                    error = Some(format!(
                        "{}: QP {aq:#x}: post send of message {posted}: {}",
                        a.name,
                        io_of(&e)
                    ));
                    break 'run;
                }
                *posted += 1;
                total_posted += 1;
                t_last_post = now;
            }
            // the responder's receives (SEND): check the data, post the receive again
            if args.op == Op::Send
                && let Ok(poller) = b.recv_cq.start_poll()
            {
                let wcs: Vec<(u64, u32, u32, u32)> = poller
                    .map(|wc| (wc.wr_id(), wc.status(), wc.byte_len(), wc.vendor_err()))
                    .collect();
                for (wr_id, status, byte_len, vendor_err) in wcs {
                    let now = Instant::now();
                    last_progress = now;
                    if status != 0 {
                        completion_errors += 1;
                        error = Some(format!(
                            "{}: QP {bq:#x}: receive {wr_id} completed with {} (status {status}, vendor error \
                         {vendor_err:#x})",
                            b.name,
                            wc_status_name(status)
                        ));
                        break 'run;
                    }
                    if wr_id != *recv_done {
                        error = Some(format!(
                            "{}: QP {bq:#x}: receive completion out of order: wr_id {wr_id}, expected {recv_done}",
                            b.name
                        ));
                        break 'run;
                    }
                    let off = (*recv_done % depth as u64) as usize * size;
                    check.checked += 1;
                    if byte_len != args.size {
                        mismatch(
                            &mut check,
                            format!(
                                "message {recv_done}: received {byte_len} bytes, sent {}",
                                args.size
                            ),
                        );
                    } else if let Some(at) =
                        // SAFETY: this receive has completed and the slot is not posted again yet.
                        pattern::check(
                            unsafe { b.buf.slice(off, size) },
                            aq,
                            *recv_done,
                        )
                    {
                        mismatch(
                            &mut check,
                            format!("message {recv_done}: byte {at} differs"),
                        );
                    }
                    *recv_done += 1;
                    t_end = now;
                    if *recv_posted < *limit {
                        post_recv(b, *recv_posted, args.size, args.depth)?;
                        *recv_posted += 1;
                    }
                }
            }
            // the requester's completions: in posting order, then the data check
            if let Ok(poller) = a.send_cq.start_poll() {
                let wcs: Vec<(u64, u32, u32)> = poller
                    .map(|wc| (wc.wr_id(), wc.status(), wc.vendor_err()))
                    .collect();
                for (wr_id, status, vendor_err) in wcs {
                    let now = Instant::now();
                    last_progress = now;
                    if status != 0 {
                        completion_errors += 1;
                        error = Some(format!(
                            "{}: QP {aq:#x}: message {wr_id} completed with {} (status {status}, vendor error \
                         {vendor_err:#x}); QP state now {}",
                            a.name,
                            wc_status_name(status),
                            a.qp_state_now()
                        ));
                        break 'run;
                    }
                    if wr_id != *completed {
                        error = Some(format!(
                            "{}: QP {aq:#x}: completion out of order or phantom: wr_id {wr_id}, expected {completed}",
                            a.name
                        ));
                        break 'run;
                    }
                    let slot = (*completed % depth as u64) as usize;
                    let lat = now.duration_since(post_time[slot]);
                    let _ = hist.record(lat.as_nanos().max(1) as u64);
                    let off = slot * size;
                    let bad = match args.op {
                        // SAFETY: the message completed; nothing else targets its slot until it is posted again.
                        Op::Write => {
                            pattern::check(unsafe { b.buf.slice(off, size) }, aq, *completed)
                        }
                        Op::Read => {
                            pattern::check(unsafe { a.buf.slice(off, size) }, aq, *completed)
                        }
                        Op::Send => None, // checked at the receive
                        Op::FetchAdd | Op::CmpSwap => {
                            // the original value the responder returned: the sequence of the remote word
                            let mut w = [0u8; 8];
                            // SAFETY: as above.
                            w.copy_from_slice(unsafe { a.buf.slice(off, 8) });
                            let got = u64::from_ne_bytes(w);
                            let want = pattern::atomic_value(aq, *completed);
                            if got != want {
                                mismatch(
                                    &mut check,
                                    format!(
                                        "message {completed}: {} returned {got:#018x}, expected {want:#018x}",
                                        args.op.name()
                                    ),
                                );
                            }
                            None
                        }
                    };
                    if args.op != Op::Send {
                        check.checked += 1;
                        if let Some(at) = bad {
                            mismatch(
                                &mut check,
                                format!("message {completed}: byte {at} differs"),
                            );
                        }
                    }
                    *completed += 1;
                    t_end = t_end.max(now);
                }
            }
        }
        let in_flight = pairs
            .iter()
            .any(|p| p.completed < p.posted || (args.op == Op::Send && p.recv_done < p.posted));
        if let Some(mps) = rate_mps
            && !in_flight
        {
            // paced and idle: sleep until the next message is due (at most 10 ms, the duration is checked
            // at the top of the loop)
            let wait = plan::post_due(total_posted, mps).saturating_sub(t0.elapsed());
            if wait > Duration::from_micros(200) {
                std::thread::sleep(wait.min(Duration::from_millis(10)));
            }
        }
        if in_flight && last_progress.elapsed() > deadline {
            error = Some(format!(
                "no completion for {:.1} s: {} of {} messages completed{}; {}",
                args.timeout,
                pairs.iter().map(|p| p.completed).sum::<u64>(),
                pairs
                    .iter()
                    .map(|p| if args.duration.is_some() { p.posted } else { n })
                    .sum::<u64>(),
                if args.op == Op::Send {
                    format!(
                        ", {} received",
                        pairs.iter().map(|p| p.recv_done).sum::<u64>()
                    )
                } else {
                    String::new()
                },
                pairs
                    .iter()
                    .map(|p| format!(
                        "QP {:#x} ({}) is {}, QP {:#x} ({}) is {}",
                        p.aq,
                        p.a.name,
                        p.a.qp_state_now(),
                        p.bq,
                        p.b.name,
                        p.b.qp_state_now()
                    ))
                    .collect::<Vec<_>>()
                    .join("; ")
            ));
            break 'run;
        }
    }
    // the remote word after the last atomic
    if args.op.is_atomic() && error.is_none() {
        for p in &pairs {
            let mut w = [0u8; 8];
            // SAFETY: every atomic has completed.
            w.copy_from_slice(unsafe { p.b.buf.slice(0, 8) });
            let (got, want) = (
                u64::from_ne_bytes(w),
                pattern::atomic_value(p.aq, p.completed),
            );
            if got != want {
                mismatch(
                    &mut check,
                    format!(
                        "QP {:#x}: the remote word is {got:#018x} after {} messages, expected {want:#018x}",
                        p.aq, p.completed
                    ),
                );
            }
        }
    }
    // messages per pair: -n, or with --duration those posted
    let planned = |p: &Pair| if args.duration.is_some() { p.posted } else { n };
    let total = pairs.iter().map(planned).sum::<u64>();
    let flows: Vec<Flow> = pairs
        .iter()
        .filter(|p| planned(p) > 0) // --duration ended before this pair posted anything
        .flat_map(|p| pair_flows(args.op, size32, mtu, p, planned(p)))
        .collect();
    // the SEND payload is checked only where it was received
    if error.is_some() && check.status == "passed" && check.checked < total {
        check.status = "incomplete";
    }
    let messages = pairs
        .iter()
        .map(|p| {
            if args.op == Op::Send {
                p.completed.min(p.recv_done)
            } else {
                p.completed
            }
        })
        .sum::<u64>();
    let seconds = t_end.duration_since(t0).as_secs_f64();
    let bytes = messages * u64::from(size32);
    let us = |v: u64| v as f64 / 1000.0;
    let latency_us = if hist.is_empty() {
        Latency::default()
    } else {
        Latency {
            p50: us(hist.value_at_quantile(0.5)),
            p99: us(hist.value_at_quantile(0.99)),
            max: us(hist.max()),
        }
    };
    let report = Report {
        op: args.op,
        size: size32,
        iterations: planned(&pairs[0]),
        stopped_by: if args.duration.is_some() {
            "duration"
        } else {
            "iters"
        },
        duration: args.duration,
        posting_seconds: stopped_at
            .unwrap_or(t_last_post)
            .duration_since(t0)
            .as_secs_f64(),
        rate: args.rate.map(|r| RateReport {
            requested: match r {
                plan::Rate::MessagesPerSec(m) => format!("{m} messages/s"),
                plan::Rate::Gbps(g) => format!("{g} Gb/s"),
            },
            target_messages_per_sec: r.messages_per_sec(size32),
            target_gbps: r.gbps(size32),
            achieved_messages_per_sec: if seconds > 0.0 {
                messages as f64 / seconds
            } else {
                0.0
            },
            achieved_gbps: if seconds > 0.0 {
                bytes as f64 * 8.0 / seconds / 1e9
            } else {
                0.0
            },
        }),
        depth: args.depth,
        mtu,
        mtu_source,
        qp_timeout: args.qp_timeout,
        max_rd_atomic: rd_atomic,
        traffic_class: args.tclass,
        fault: args.fault,
        qps: args.qps,
        requester: endpoint(&pairs[0].a, args.port, pairs[0].bpsn),
        responder: endpoint(&pairs[0].b, args.port, pairs[0].apsn),
        pairs: pairs
            .iter()
            .map(|p| PairEndpoints {
                requester: endpoint(&p.a, args.port, p.bpsn),
                responder: endpoint(&p.b, args.port, p.apsn),
            })
            .collect(),
        flows,
        messages,
        bytes,
        seconds,
        gbps: if seconds > 0.0 {
            bytes as f64 * 8.0 / seconds / 1e9
        } else {
            0.0
        },
        messages_per_sec: if seconds > 0.0 {
            messages as f64 / seconds
        } else {
            0.0
        },
        latency_us,
        completion_errors,
        data_check: check,
        error,
    };
    if report.data_check.status == "failed" && report.error.is_none() {
        let mut r = report;
        r.error = Some(format!(
            "data check failed: {} of {} messages differ ({})",
            r.data_check.mismatches,
            r.data_check.checked,
            r.data_check.first_mismatch.clone().unwrap_or_default()
        ));
        return Ok(r);
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::segments;

    #[test]
    fn opcodes_of_segmented_messages() {
        let m = segments("RC_WRITE", 32, 4);
        assert_eq!(m.len(), 3);
        assert_eq!(
            (
                m["RC_WRITE_FIRST"],
                m["RC_WRITE_MIDDLE"],
                m["RC_WRITE_LAST"]
            ),
            (32, 64, 32)
        );
        let m = segments("RC_SEND", 8, 2);
        assert_eq!(m.len(), 2);
        assert_eq!(
            segments("RC_READ_RESPONSE", 5, 1)["RC_READ_RESPONSE_ONLY"],
            5
        );
    }
}
