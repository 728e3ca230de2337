//! The verbs a generator side needs, on top of `sideway`: open a device with its GID, PD, registered buffer,
//! CQs and RC QP, and walk the QP from RESET to RTS toward a peer.
//!
//! As verified on rxe (see the project notes): the basic CQ (`ibv_create_cq`/`ibv_poll_cq`, not the
//! extended one, whose rxe provider in rdma-core < 55 returns phantom completions), the basic QP
//! (`ibv_post_send`), max_rd_atomic and max_dest_rd_atomic >= 1, the RoCE v2 GID with an IPv4-mapped
//! address, and a path MTU the network device can carry.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use sideway::ibverbs::AccessFlags;
use sideway::ibverbs::address::{AddressHandleAttribute, Gid, GidType};
use sideway::ibverbs::completion::BasicCompletionQueue;
use sideway::ibverbs::device::{DeviceInfo, DeviceList, GetDeviceListErrorKind};
use sideway::ibverbs::device_context::{DeviceContext, Mtu};
use sideway::ibverbs::memory_region::MemoryRegion;
use sideway::ibverbs::protection_domain::ProtectionDomain;
use sideway::ibverbs::queue_pair::{
    BasicQueuePair, ModifyQueuePairError, QueuePair, QueuePairAttribute, QueuePairAttributeMask,
    QueuePairState, SetScatterGatherEntry,
};

use super::config::PortConfig;
use super::plan::{self, PathEnd, ipv4_mapped, mtu_bytes};
use super::records::Endpoint;
use rocescope::report::format::error_line;

/// Memory the device reads and writes: 8-byte aligned, never moved, freed after the MR is deregistered.
/// Owned through a raw pointer (from `Box::into_raw`): the device and this process both write it.
pub struct Buffer {
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
    pub fn new(len: usize) -> Buffer {
        let words = len.div_ceil(8).max(1);
        let mem = vec![0u64; words].into_boxed_slice();
        Buffer {
            ptr: Box::into_raw(mem).cast::<u8>(),
            len,
            words,
        }
    }

    pub fn addr(&self, off: usize) -> u64 {
        self.ptr as u64 + off as u64
    }

    /// # Safety
    /// No work request that targets `off..off + len` may be outstanding.
    pub unsafe fn slice_mut(&mut self, off: usize, len: usize) -> &mut [u8] {
        assert!(off + len <= self.len);
        // SAFETY: in bounds (checked above); the caller guarantees the device does not touch it now.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(off), len) }
    }

    /// # Safety
    /// No work request that writes `off..off + len` may be outstanding.
    pub unsafe fn slice(&self, off: usize, len: usize) -> &[u8] {
        assert!(off + len <= self.len);
        // SAFETY: as for slice_mut.
        unsafe { std::slice::from_raw_parts(self.ptr.add(off), len) }
    }
}

pub struct GidInfo {
    pub index: u8,
    pub gid: Gid,
    pub gid_type: GidType,
    pub ip: Option<Ipv4Addr>,
    pub netdev: Option<String>,
    pub choice: String,
}

/// Field order is drop order: the QP before its CQs, the MR before the PD, the buffer last.
pub struct Side {
    pub qp: BasicQueuePair,
    pub send_cq: Arc<BasicCompletionQueue>,
    pub recv_cq: Arc<BasicCompletionQueue>,
    pub mr: Arc<MemoryRegion>,
    _pd: Arc<ProtectionDomain>,
    _ctx: Arc<DeviceContext>,
    pub buf: Buffer,
    pub name: String,
    pub gid: GidInfo,
    pub active_mtu: u32,
    pub netdev_mtu: Option<u32>,
    /// min(max_qp_rd_atom, max_qp_init_rd_atom) of the device
    pub max_rd_atom: u32,
    pub sq_psn: u32,
}

/// A sideway error (each wraps the io::Error of the verbs call).
type Cause = Box<dyn std::error::Error + Send + Sync>;

/// A verbs call that failed, on which device, and what to do when RDMA is missing.
#[derive(Debug, thiserror::Error)]
pub enum VerbsError {
    #[error(
        "no RDMA here: libibverbs (libibverbs.so.1) could not be loaded; install libibverbs1 and \
         ibverbs-providers (rdma-core), then make a Soft-RoCE device on this host with `sudo rocescope lab up`"
    )]
    NoLibibverbs,
    #[error(
        "no RDMA here: this kernel has no RDMA support (libibverbs: ibv_get_device_list failed with ENOSYS); \
         run where RDMA devices exist, or on a kernel with rdma_rxe and `sudo rocescope lab up`"
    )]
    NoKernelRdma,
    /// `why` is in the middle of the line, before what to do: not a source.
    #[error(
        "no RDMA here: libibverbs cannot list the RDMA devices: {why}; `sudo rocescope lab up` makes a \
         Soft-RoCE device"
    )]
    CannotList { why: Cause },
    #[error(
        "no RDMA device here (libibverbs found none; Soft-RoCE: rdma link add rxe0 type rxe netdev ETH)"
    )]
    NoDevice,
    #[error(
        "no RDMA device with a RoCE v2 IPv4-mapped GID on port {port} (devices: {}); give one with -d, or a \
         GID with -x",
        .seen.join(", ")
    )]
    NoRoceDevice { port: u8, seen: Vec<String> },
    #[error("no RDMA device '{name}' (devices: {})", names_or_none(.devices))]
    UnknownDevice { name: String, devices: Vec<String> },
    #[error("{dev}: cannot open")]
    Open {
        dev: String,
        #[source]
        source: Cause,
    },
    #[error("{dev}: cannot read the GID table")]
    GidTable {
        dev: String,
        #[source]
        source: Cause,
    },
    /// `gids`: the port's GIDs, "index GID (type)" each.
    #[error("{dev} port {port} has no GID index {index}; its GIDs: {gids}")]
    NoGidIndex {
        dev: String,
        port: u8,
        index: u8,
        gids: String,
    },
    #[error(
        "{dev} port {port} has no RoCE v2 GID with an IPv4-mapped address (::ffff:a.b.c.d); its GIDs: {gids}; \
         give one with -x"
    )]
    NoRoceGid { dev: String, port: u8, gids: String },
    #[error("{dev}: cannot query port {port}")]
    QueryPort {
        dev: String,
        port: u8,
        #[source]
        source: Cause,
    },
    #[error("{dev}: cannot query the device")]
    QueryDevice {
        dev: String,
        #[source]
        source: Cause,
    },
    #[error("{dev}: cannot allocate a protection domain")]
    AllocPd {
        dev: String,
        #[source]
        source: Cause,
    },
    /// `why` is in the middle of the line, before what to do: not a source.
    #[error(
        "{dev}: cannot register {bytes} bytes of memory: {} (non-root users: raise RLIMIT_MEMLOCK, ulimit -l)",
        error_line(.why.as_ref())
    )]
    Register {
        dev: String,
        bytes: usize,
        why: Cause,
    },
    #[error("{dev}: cannot create a completion queue")]
    CreateCq {
        dev: String,
        #[source]
        source: Cause,
    },
    #[error("{dev}: cannot create an RC QP")]
    CreateQp {
        dev: String,
        #[source]
        source: Cause,
    },
    /// `state`: INIT, RTR or RTS.
    #[error("{dev}: QP {qpn:#x} to {state}")]
    Modify {
        dev: String,
        qpn: u32,
        state: &'static str,
        #[source]
        source: Cause,
    },
    #[error("{dev}: post receive")]
    PostRecv {
        dev: String,
        #[source]
        source: Cause,
    },
}

fn names_or_none(names: &[String]) -> String {
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    }
}

/// The RDMA devices of this host, or one line saying why there are none and what to do.
pub fn devices() -> Result<DeviceList, VerbsError> {
    let list = DeviceList::new().map_err(|e| {
        let errno = match &e.0 {
            GetDeviceListErrorKind::Ibverbs(io) => io.raw_os_error(),
            _ => None,
        };
        no_rdma(errno, e.into())
    })?;
    if list.is_empty() {
        return Err(VerbsError::NoDevice);
    }
    Ok(list)
}

/// `-d` or, without it, the first device whose port has a RoCE v2 IPv4-mapped GID (or the GID `-x` names).
pub fn device_name(
    list: &DeviceList,
    given: Option<&str>,
    port: &PortConfig,
) -> Result<String, VerbsError> {
    if let Some(d) = given {
        return Ok(d.to_string());
    }
    let mut seen = Vec::new();
    for dev in list.iter() {
        let name = dev.name();
        if let Ok(ctx) = dev.open()
            && pick_gid(&ctx, &name, port.ib_port, port.gid_index).is_ok()
        {
            return Ok(name);
        }
        seen.push(name);
    }
    Err(VerbsError::NoRoceDevice {
        port: port.ib_port,
        seen,
    })
}

/// Why libibverbs lists no device: `e`, with the errno of its call if any.
fn no_rdma(errno: Option<i32>, e: Cause) -> VerbsError {
    match errno {
        Some(libc::EOPNOTSUPP) => VerbsError::NoLibibverbs,
        Some(libc::ENOSYS) => VerbsError::NoKernelRdma,
        _ => VerbsError::CannotList { why: e },
    }
}

pub fn mtu_enum(bytes: u32) -> Mtu {
    match bytes {
        256 => Mtu::Mtu256,
        512 => Mtu::Mtu512,
        1024 => Mtu::Mtu1024,
        2048 => Mtu::Mtu2048,
        _ => Mtu::Mtu4096,
    }
}

pub fn gid_type_name(t: GidType) -> &'static str {
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
) -> Result<GidInfo, VerbsError> {
    let table = ctx.query_gid_table().map_err(|e| VerbsError::GidTable {
        dev: dev.to_string(),
        source: e.into(),
    })?;
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
            .ok_or_else(|| VerbsError::NoGidIndex {
                dev: dev.to_string(),
                port,
                index: i,
                gids: describe(),
            })?,
        None => entries
            .iter()
            .find(|e| e.gid_type() == GidType::RoceV2 && ipv4_mapped(&e.gid().raw).is_some())
            .ok_or_else(|| VerbsError::NoRoceGid {
                dev: dev.to_string(),
                port,
                gids: if entries.is_empty() {
                    "none".to_string()
                } else {
                    describe()
                },
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

/// What a side's QP is created with: queue depths and the completion queue size.
pub struct Queues {
    pub send: u32,
    pub recv: u32,
    pub cqe: u32,
}

/// A side's device context, PD, registered buffer of `buf_len` bytes, CQs and RC QP (in RESET) on `port`
/// of device `name`.
pub fn open_side(
    list: &DeviceList,
    name: &str,
    port: &PortConfig,
    buf_len: usize,
    q: &Queues,
) -> Result<Side, VerbsError> {
    let dev = || name.to_string();
    let ctx = open_device(list, name)?;
    let pattr = ctx
        .query_port(port.ib_port)
        .map_err(|e| VerbsError::QueryPort {
            dev: dev(),
            port: port.ib_port,
            source: e.into(),
        })?;
    let active_mtu = mtu_bytes(pattr.active_mtu() as u32).unwrap_or(1024);
    let dattr = ctx.query_device().map_err(|e| VerbsError::QueryDevice {
        dev: dev(),
        source: e.into(),
    })?;
    let max_rd_atom = dattr
        .max_qp_rd_atom()
        .min(dattr.max_qp_init_rd_atom())
        .max(0) as u32;
    let gid = pick_gid(&ctx, name, port.ib_port, port.gid_index)?;
    let netdev_mtu = gid.netdev.as_deref().and_then(netdev_mtu);
    let pd = ctx.alloc_pd().map_err(|e| VerbsError::AllocPd {
        dev: dev(),
        source: e.into(),
    })?;
    let buf = Buffer::new(buf_len);
    let mr = register(&pd, &buf, name)?;
    let (qp, send_cq, recv_cq) = create_qp(&ctx, &pd, name, q)?;
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

/// Does device `name` stamp completions with its clock? None when it cannot be asked.
pub fn completion_timestamps(name: &str) -> Option<bool> {
    let list = devices().ok()?;
    let ctx = open_device(&list, name).ok()?;
    let attr = ctx.query_device().ok()?;
    Some(attr.completion_timestamp_mask() != 0)
}

fn open_device(list: &DeviceList, name: &str) -> Result<Arc<DeviceContext>, VerbsError> {
    let dev = list
        .iter()
        .find(|d| d.name() == name)
        .ok_or_else(|| VerbsError::UnknownDevice {
            name: name.to_string(),
            devices: list.iter().map(|d| d.name()).collect(),
        })?;
    dev.open().map_err(|e| VerbsError::Open {
        dev: name.to_string(),
        source: e.into(),
    })
}

/// The MTU of network device `netdev`, from sysfs.
fn netdev_mtu(netdev: &str) -> Option<u32> {
    std::fs::read_to_string(format!("/sys/class/net/{netdev}/mtu"))
        .ok()
        .and_then(|s| s.trim().parse().ok())
}

/// Registers `buf` for local and remote access (READ, WRITE, atomics).
fn register(
    pd: &Arc<ProtectionDomain>,
    buf: &Buffer,
    name: &str,
) -> Result<Arc<MemoryRegion>, VerbsError> {
    // SAFETY: buf lives in the Side, after the MR in drop order, and is never moved or freed before it.
    unsafe {
        pd.reg_mr(
            buf.ptr as usize,
            buf.len,
            AccessFlags::LocalWrite
                | AccessFlags::RemoteWrite
                | AccessFlags::RemoteRead
                | AccessFlags::RemoteAtomic,
        )
    }
    .map_err(|e| VerbsError::Register {
        dev: name.to_string(),
        bytes: buf.len,
        why: e.into(),
    })
}

/// The send and receive CQs and the RC QP on them.
fn create_qp(
    ctx: &Arc<DeviceContext>,
    pd: &Arc<ProtectionDomain>,
    name: &str,
    q: &Queues,
) -> Result<
    (
        BasicQueuePair,
        Arc<BasicCompletionQueue>,
        Arc<BasicCompletionQueue>,
    ),
    VerbsError,
> {
    let mut cqb = ctx.create_cq_builder();
    cqb.setup_cqe(q.cqe);
    let cq_error =
        |e: sideway::ibverbs::completion::CreateCompletionQueueError| VerbsError::CreateCq {
            dev: name.to_string(),
            source: e.into(),
        };
    let send_cq = cqb.build().map_err(cq_error)?;
    let recv_cq = cqb.build().map_err(cq_error)?;
    let mut qpb = pd.create_qp_builder();
    qpb.setup_send_cq(send_cq.clone())
        .setup_recv_cq(recv_cq.clone())
        .setup_max_send_wr(q.send)
        .setup_max_recv_wr(q.recv)
        .setup_max_send_sge(1)
        .setup_max_recv_sge(1)
        .setup_max_inline_data(0);
    let qp = qpb.build().map_err(|e| VerbsError::CreateQp {
        dev: name.to_string(),
        source: e.into(),
    })?;
    Ok((qp, send_cq, recv_cq))
}

pub struct ConnectParams {
    pub port: u8,
    pub mtu: u32,
    pub timeout: u8,
    pub rd_atomic: u8,
    pub tclass: u8,
    /// The GRH flow label (0: the kernel derives the UDP source port from the two QP numbers).
    pub flow_label: u32,
    pub retry_count: u8,
    pub rnr_retry: u8,
    /// The RNR NAK timer this side's RNR NAKs carry (IBTA's 5-bit encoding).
    pub min_rnr_timer: u8,
}

/// The RNR NAK timer a QP is given unless told otherwise: 12, 0.64 ms.
pub const MIN_RNR_TIMER: u8 = 12;

/// RESET -> INIT -> RTR -> RTS toward the peer (its QPN, GID, and the PSN it will send first).
pub fn connect(
    side: &mut Side,
    peer_qpn: u32,
    peer_gid: &Gid,
    peer_sq_psn: u32,
    p: &ConnectParams,
) -> Result<(), VerbsError> {
    let name = side.name.clone();
    let qpn = side.qp.qp_number();
    let step = |state: &'static str| {
        let dev = name.clone();
        move |e: ModifyQueuePairError| VerbsError::Modify {
            dev,
            qpn,
            state,
            source: e.into(),
        }
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
    side.qp.modify(&a).map_err(step("INIT"))?;

    let mut a = QueuePairAttribute::new();
    a.setup_state(QueuePairState::ReadyToReceive)
        .setup_path_mtu(mtu_enum(p.mtu))
        .setup_dest_qp_num(peer_qpn)
        .setup_rq_psn(peer_sq_psn)
        .setup_max_dest_read_atomic(p.rd_atomic)
        .setup_min_rnr_timer(p.min_rnr_timer);
    let mut ah = AddressHandleAttribute::new();
    ah.setup_dest_lid(0)
        .setup_port(p.port)
        .setup_service_level(0)
        .setup_grh(peer_gid, p.flow_label, side.gid.index, 64, p.tclass);
    a.setup_address_vector(&ah);
    side.qp.modify(&a).map_err(step("RTR"))?;

    let mut a = QueuePairAttribute::new();
    a.setup_state(QueuePairState::ReadyToSend)
        .setup_sq_psn(side.sq_psn)
        .setup_timeout(p.timeout)
        .setup_retry_cnt(p.retry_count)
        .setup_rnr_retry(p.rnr_retry)
        .setup_max_read_atomic(p.rd_atomic);
    side.qp.modify(&a).map_err(step("RTS"))?;
    Ok(())
}

pub fn post_recv(side: &mut Side, wqe: u64, size: u32, depth: u32) -> Result<(), VerbsError> {
    let slot = (wqe % u64::from(depth)) as usize;
    let addr = side.buf.addr(slot * size as usize);
    let lkey = side.mr.lkey();
    let mut g = side.qp.start_post_recv();
    // SAFETY: the slot is inside the registered buffer, which outlives the QP.
    unsafe { g.construct_wr(wqe).setup_sge(lkey, addr, size) };
    g.post().map_err(|e| VerbsError::PostRecv {
        dev: side.name.clone(),
        source: e.into(),
    })
}

impl Side {
    /// This side as one end of the path MTU choice.
    pub fn path_end(&self) -> PathEnd {
        PathEnd {
            source: self.name.clone(),
            device: self.name.clone(),
            active_mtu: self.active_mtu,
            netdev: self.gid.netdev.clone(),
            netdev_mtu: self.netdev_mtu,
        }
    }

    pub fn qp_state_now(&self) -> String {
        match self.qp.query(QueuePairAttributeMask::State) {
            Ok((a, _)) => format!("{:?}", a.state()),
            Err(e) => format!("unknown ({})", error_line(&e)),
        }
    }
}

pub fn endpoint(s: &Side, port: u8, rq_psn: u32) -> Endpoint {
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
