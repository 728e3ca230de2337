//! One frame, every layer: walks from the link layer to the ICRC and stops at the first damage,
//! keeping every header that did parse.
use crate::aeth::Aeth;
use crate::atomic::{AtomicAckEth, AtomicEth};
use crate::bth::Bth;
use crate::cm::CmMessage;
use crate::cnp::Cnp;
use crate::deth::Deth;
use crate::erf::{self, ErfHeader};
use crate::error::{Layer, Malformed, MalformedKind};
use crate::erspan::Erspan;
use crate::ethernet::{self, EthernetHeader};
use crate::feth::Feth;
use crate::fields::{Field, Value, Visitor};
use crate::gre::{self, GreHeader};
use crate::grh::{self, Grh};
use crate::icrc::{self, IcrcStatus, NetHeader};
use crate::imm::{Ieth, ImmDt};
use crate::ipoib::{self, EncapHeader, IpoibHeader};
use crate::ipv4::{self, Ipv4Header};
use crate::ipv6::{self, Ipv6Header};
use crate::lrh::{self, Lrh};
use crate::mac_control::MacControl;
use crate::mad::{self, Mad};
use crate::opcode::{Headers, Transport};
use crate::rdeth::Rdeth;
use crate::reth::Reth;
use crate::sll::{self, SllHeader};
use crate::udp::UdpHeader as Udp;
use crate::udp::{self, UdpHeader};
use crate::vlan::VlanTag;
use crate::vxlan::{self, VxlanHeader};
use crate::xrceth::Xrceth;

pub const LINKTYPE_ETHERNET: u16 = 1;
pub const LINKTYPE_RAW: u16 = 101;
pub const LINKTYPE_IPV4: u16 = 228;
pub const LINKTYPE_IPV6: u16 = 229;

/// How many encapsulations deep the walk follows: a mirror copy of tunnelled traffic is two (ERSPAN around
/// VXLAN); deeper nesting is exotic or hostile, and stops the walk.
pub const MAX_ENCAP: usize = 2;

/// What to treat as RoCE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// UDP destination port of RoCEv2 (4791 unless a fabric uses another).
    pub roce_port: u16,
}

/// Where the network header of a RoCE packet lies in its frame.
#[derive(Debug, Clone, Copy)]
struct NetSpan {
    start: usize,
    len: usize,
    kind: NetKind,
}

/// What the ICRC covers before the BTH (besides a UDP header).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NetKind {
    Ipv4,
    /// An IPv6 header or a GRH (RoCEv1, global InfiniBand packets): the LRH is all ones.
    Ipv6,
    /// A local InfiniBand packet's LRH, with only its VL masked, and no network header.
    LocalLrh,
}

/// Where the bytes an ICRC covers lie in the frame, and the ICRC found: enough to check it later, from the
/// frame's bytes or a copy of them, without the parsed frame borrowing them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IcrcCover {
    net_start: u32,
    net_len: u8,
    net_kind: NetKind,
    udp_start: Option<u32>,
    /// BTH to the end of the pad.
    transport: (u32, u32),
    found: u32,
}

impl IcrcCover {
    /// Checks the ICRC against `data`, the frame's bytes.
    pub fn check(&self, data: &[u8]) -> IcrcStatus {
        let at = |from: u32, len: usize| {
            data.get(from as usize..from as usize + len)
                .unwrap_or_default()
        };
        let net = at(self.net_start, usize::from(self.net_len));
        let udp = self.udp_start.map(|u| at(u, Udp::LEN));
        let (from, to) = self.transport;
        let transport = data.get(from as usize..to as usize).unwrap_or_default();
        let expected = match self.net_kind {
            NetKind::Ipv4 => icrc::compute(NetHeader::Ipv4(net), udp, transport),
            NetKind::Ipv6 => icrc::compute(NetHeader::Ipv6(net), udp, transport),
            NetKind::LocalLrh => {
                icrc::compute_local(net.try_into().unwrap_or([0xFF; 8]), transport)
            }
        };
        if expected == self.found {
            IcrcStatus::Valid
        } else {
            IcrcStatus::Bad {
                expected,
                found: self.found,
            }
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            roce_port: udp::ROCEV2_PORT,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Link {
    Ethernet(EthernetHeader),
    Sll(SllHeader),
    /// Link types that start at the IP header.
    RawIp,
    /// IP over InfiniBand (LINKTYPE_IPOIB): the pseudo-header and EtherType before the IP packet.
    Ipoib(IpoibHeader),
    /// A native InfiniBand packet (LINKTYPE_INFINIBAND, or an ERF record of type 21).
    Infiniband(IbLink),
    /// An ERF record of a type rocescope does not read.
    Erf(ErfHeader),
}

/// The link layer of a native InfiniBand packet: its LRH, and the VCRC after the ICRC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IbLink {
    /// The ERF record header it came in (link type 197).
    pub erf: Option<ErfHeader>,
    pub lrh: Lrh,
    /// The VCRC as found on the wire (read big-endian), when captured.
    pub vcrc: Option<u16>,
    pub vcrc_status: IcrcStatus,
}

impl IbLink {
    /// Where the LRH starts in the captured bytes.
    pub fn lrh_offset(&self) -> usize {
        self.erf.map_or(0, |e| e.header_len())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ip {
    V4(Ipv4Header),
    V6(Ipv6Header),
}

/// An IP address of either family (or a GID), or an InfiniBand LID, for display and flow keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Addr {
    V4([u8; 4]),
    V6([u8; 16]),
    /// The LID of a local InfiniBand packet (no GRH), shown as Wireshark shows it: `LID: 4`.
    Lid(u16),
}

impl core::fmt::Display for Addr {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            Addr::V4(a) => core::net::Ipv4Addr::from(a).fmt(f),
            Addr::V6(a) => core::net::Ipv6Addr::from(a).fmt(f),
            Addr::Lid(lid) => write!(f, "LID: {lid}"),
        }
    }
}

/// The tunnel header of one encapsulation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tunnel {
    /// GRE, with ERSPAN's header for ERSPAN types II and III (type I and transparent Ethernet bridging have
    /// none).
    Gre {
        gre: GreHeader,
        erspan: Option<Erspan>,
    },
    Vxlan(VxlanHeader),
}

/// The headers around an encapsulated Ethernet frame: a mirror session's copy (ERSPAN, GRE) or a VXLAN
/// tunnel. The frame's own fields ([`Frame::link`] and on) are the encapsulated frame's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Encap {
    pub link: Option<Link>,
    pub vlans: [Option<VlanTag>; 2],
    pub ip: Option<Ip>,
    /// The UDP header that carried VXLAN.
    pub udp: Option<UdpHeader>,
    pub tunnel: Tunnel,
    /// Where the encapsulated frame starts in the captured bytes, and its length as the tunnel carried it.
    pub inner_start: u32,
    pub inner_len: u32,
}

impl Encap {
    /// The ERSPAN header, when the encapsulation is ERSPAN type II or III.
    pub fn erspan(&self) -> Option<Erspan> {
        match self.tunnel {
            Tunnel::Gre { erspan, .. } => erspan,
            Tunnel::Vxlan(_) => None,
        }
    }

    fn hash_place(&self, h: &mut impl core::hash::Hasher) {
        use core::hash::Hash;
        hash_link(self.link, &self.vlans, h);
        match self.ip {
            Some(Ip::V4(ip)) => (ip.src, ip.dst).hash(h),
            Some(Ip::V6(ip)) => (ip.src, ip.dst).hash(h),
            None => {}
        }
        match self.tunnel {
            Tunnel::Gre { gre, erspan } => {
                (gre.proto, gre.key).hash(h);
                if let Some(s) = erspan {
                    (s.version, s.vlan, s.cos, s.encap, s.session_id, s.index).hash(h);
                    (s.hw_id, s.egress).hash(h);
                }
            }
            Tunnel::Vxlan(v) => v.vni.hash(h),
        }
    }

    fn visit<'a>(&self, mut at: usize, v: &mut impl Visitor<'a>) {
        at = visit_link(self.link, &self.vlans, at, v);
        at = visit_ip_udp(self.ip, self.udp, at, v);
        match self.tunnel {
            Tunnel::Gre { gre, erspan } => {
                gre.visit(at, v);
                if let Some(e) = erspan {
                    e.visit(at + gre.header_len(), v);
                }
            }
            Tunnel::Vxlan(h) => h.visit(at, v),
        }
    }
}

/// What the analysis needs of a frame's encapsulations, kept in the frame (their headers are read again
/// from its bytes when shown: [`Frame::outer`]), so that a frame stays small on the per-packet path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Encapsulation {
    /// How many (1 or 2).
    pub levels: u8,
    /// Where the encapsulated frame starts in the captured bytes, and its length as the tunnel carried it.
    pub inner_start: u32,
    pub inner_len: u32,
    /// A mirror session marked the copy truncated (ERSPAN's T bit).
    pub truncated: bool,
    /// A digest of where the copy was taken: what tells two copies of one frame apart (the outer
    /// addresses and VLANs, ERSPAN's session, direction, port index and hardware ID, the VNI), and never a
    /// frame from its resend (GRE sequence numbers and ERSPAN timestamps are left out).
    pub place: u64,
    /// How the frame was walked, to walk it again.
    linktype: u16,
    roce_port: u16,
}

impl Encapsulation {
    fn of(
        outer: &[Option<Encap>; MAX_ENCAP],
        linktype: u16,
        roce_port: u16,
    ) -> Option<Encapsulation> {
        let inner = outer.iter().flatten().last()?;
        let mut h = std::collections::hash_map::DefaultHasher::new();
        for e in outer.iter().flatten() {
            e.hash_place(&mut h);
        }
        Some(Encapsulation {
            levels: outer.iter().flatten().count() as u8,
            inner_start: inner.inner_start,
            inner_len: inner.inner_len,
            truncated: outer
                .iter()
                .flatten()
                .any(|e| e.erspan().is_some_and(|s| s.truncated)),
            place: core::hash::Hasher::finish(&h),
            linktype,
            roce_port,
        })
    }
}

/// Hashes what tells a place on the path apart: the link's addresses and the VLAN tags.
pub fn hash_link(
    link: Option<Link>,
    vlans: &[Option<VlanTag>; 2],
    h: &mut impl core::hash::Hasher,
) {
    use core::hash::Hash;
    match link {
        Some(Link::Ethernet(e)) => (0u8, e.dst, e.src).hash(h),
        Some(Link::Sll(s)) => (1u8, s.addr, s.ifindex).hash(h),
        Some(Link::RawIp) => 2u8.hash(h),
        None => 3u8.hash(h),
        Some(Link::Ipoib(i)) => (4u8, i.dst_gid).hash(h),
        Some(Link::Infiniband(ib)) => (5u8, ib.lrh.slid, ib.lrh.dlid).hash(h),
        Some(Link::Erf(e)) => (6u8, e.record_type).hash(h),
    }
    for t in vlans.iter().flatten() {
        (t.tpid, t.pcp, t.dei, t.vid).hash(h);
    }
}

/// The extended transport headers present after the BTH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ExtHeaders {
    pub rdeth: Option<Rdeth>,
    pub deth: Option<Deth>,
    pub xrceth: Option<Xrceth>,
    pub feth: Option<Feth>,
    pub reth: Option<Reth>,
    pub atomic_eth: Option<AtomicEth>,
    pub aeth: Option<Aeth>,
    pub atomic_ack_eth: Option<AtomicAckEth>,
    pub immdt: Option<ImmDt>,
    pub ieth: Option<Ieth>,
    pub cnp: Option<Cnp>,
}

/// The InfiniBand transport part of a RoCE frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Roce<'a> {
    /// RoCEv1 frames carry a GRH instead of IP/UDP.
    pub grh: Option<Grh>,
    pub bth: Bth,
    pub ext: ExtHeaders,
    /// Payload bytes as captured (without pad); shorter than `payload_len` when the snap length cut them.
    pub payload: &'a [u8],
    /// Payload length on the wire, without pad and ICRC; `None` until the headers before it parsed.
    pub payload_len: Option<usize>,
    /// The ICRC as found on the wire (read big-endian), when captured.
    pub icrc: Option<u32>,
    /// `None` when the frame broke before the ICRC could be located, or its check is deferred.
    pub icrc_status: Option<IcrcStatus>,
    /// The ICRC check left for later ([`parse_frame_deferred`]).
    pub icrc_deferred: Option<IcrcCover>,
}

impl<'a> Roce<'a> {
    /// A UD SEND to QP 1, the General Services Interface: its payload is a MAD.
    pub fn is_gsi(&self) -> bool {
        self.bth.dest_qp == mad::GSI_QP && self.bth.op().transport() == Transport::Ud
    }

    /// The MAD of a GSI packet, parsed from the payload when asked (`None` for every other packet, so the
    /// per-packet path does not pay for it). Reads the payload's bytes: a detached frame has none.
    pub fn mad(&self) -> Option<Result<Mad<'a>, Malformed>> {
        let on_wire = self.payload_len.filter(|_| self.is_gsi())?;
        let cut = self.payload.len() < on_wire.min(Mad::LEN);
        Some(
            Mad::parse(self.payload)
                .map(|(m, _)| m)
                .map_err(|m| match m.kind {
                    // The MAD was whole on the wire: only the capture's snap length cut it.
                    MalformedKind::Truncated { needed, available } if cut && needed <= on_wire => {
                        Malformed::new(m.layer, MalformedKind::CutBySnaplen { needed, available })
                    }
                    _ => m,
                }),
        )
    }
}

/// An InfiniBand SEND's payload that is EtherType-encapsulated (IPoIB over the transport: RFC 4391's
/// header, then IP or ARP), as Wireshark takes it: the header, and the IP and UDP headers inside where they
/// parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EtherPayload {
    pub header: EncapHeader,
    pub ip: Option<Ip>,
    pub udp: Option<UdpHeader>,
}

impl<'a> Roce<'a> {
    /// The payload's EtherType encapsulation, parsed when asked (`None` for a MAD, for a payload whose
    /// reserved bits are not zero or whose EtherType rocescope does not decode, and on a detached frame).
    pub fn ether_payload(&self) -> Option<EtherPayload> {
        let management = |qp: u32| qp <= mad::GSI_QP;
        let src_qp = self.ext.deth.map(|d| d.src_qp);
        if management(self.bth.dest_qp) || src_qp.is_some_and(management) {
            return None;
        }
        let (header, inner) = EncapHeader::parse(self.payload).ok()?;
        if header.reserved != 0 {
            return None;
        }
        let ip = match header.ethertype {
            ethernet::ETHERTYPE_IPV4 => Ipv4Header::parse(inner).ok().map(|(h, r)| (Ip::V4(h), r)),
            ethernet::ETHERTYPE_IPV6 => Ipv6Header::parse(inner).ok().map(|(h, r)| (Ip::V6(h), r)),
            crate::other::ETHERTYPE_ARP => None,
            _ => return None,
        };
        let udp = ip.and_then(|(ip, rest)| {
            let (proto, fragment) = match ip {
                Ip::V4(h) => (h.protocol, h.is_fragment()),
                Ip::V6(h) => (h.next_header, false),
            };
            (proto == ipv4::PROTO_UDP && !fragment)
                .then(|| UdpHeader::parse(rest).ok().map(|(u, _)| u))
                .flatten()
        });
        Some(EtherPayload {
            header,
            ip: ip.map(|(ip, _)| ip),
            udp,
        })
    }
}

/// A parsed frame: every layer that parsed, and the damage if parsing stopped early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame<'a> {
    pub data: &'a [u8],
    /// Length on the wire (at least `data.len()`; larger when the snap length cut the frame).
    pub orig_len: usize,
    /// The encapsulations around the frame (a mirror session's copy, a VXLAN tunnel), when it came in one;
    /// the fields below are the encapsulated frame's, as if it had been captured directly. Their headers:
    /// [`Frame::outer`].
    pub encap: Option<Encapsulation>,
    pub link: Option<Link>,
    /// Outer tag first.
    pub vlans: [Option<VlanTag>; 2],
    /// The EtherType after the link header and any VLAN tags.
    pub ethertype: Option<u16>,
    pub mac_control: Option<MacControl>,
    pub ip: Option<Ip>,
    /// An IP fragment: reported, never parsed as RoCE.
    pub fragment: bool,
    pub udp: Option<UdpHeader>,
    /// The frame is addressed to RoCE (UDP to the RoCE port, or EtherType 0x8915), whether or not its
    /// BTH parsed.
    pub to_roce: bool,
    pub roce: Option<Roce<'a>>,
    pub malformed: Option<Malformed>,
}

impl<'a> Frame<'a> {
    /// The frame without its bytes (`data` and `payload` empty; lengths, fields and the ICRC verdict kept),
    /// to hand to another thread while the capture buffer moves on. `is_snapped` is not meaningful on it.
    pub fn detached(&self) -> Frame<'static> {
        let roce = self.roce.map(|r| Roce {
            grh: r.grh,
            bth: r.bth,
            ext: r.ext,
            payload: &[],
            payload_len: r.payload_len,
            icrc: r.icrc,
            icrc_status: r.icrc_status,
            icrc_deferred: r.icrc_deferred,
        });
        Frame {
            data: &[],
            orig_len: self.orig_len,
            encap: self.encap,
            link: self.link,
            vlans: self.vlans,
            ethertype: self.ethertype,
            mac_control: self.mac_control,
            ip: self.ip,
            fragment: self.fragment,
            udp: self.udp,
            to_roce: self.to_roce,
            roce,
            malformed: self.malformed,
        }
    }

    pub fn is_roce(&self) -> bool {
        self.roce.is_some()
    }

    /// The headers of the encapsulations around the frame, outermost first, read again from its bytes (a
    /// detached frame has none to read: only [`Frame::encap`]'s summary).
    pub fn outer(&self) -> [Option<Encap>; MAX_ENCAP] {
        let mut outer = [None; MAX_ENCAP];
        let Some(e) = self.encap else {
            return outer;
        };
        let mut scratch = empty(self.data, self.orig_len);
        let mut cur = Cursor {
            data: self.data,
            orig_len: self.orig_len,
            pos: 0,
            end: self.orig_len,
            defer_icrc: true,
            cut: false,
            outer: &mut outer,
        };
        let cfg = Config {
            roce_port: e.roce_port,
        };
        // The same walk as the first: it stops where the first did.
        let _ = walk(&mut scratch, &mut cur, e.linktype, &cfg);
        outer
    }

    /// Where the (innermost) frame starts in the captured bytes: 0 unless encapsulated.
    pub fn inner_offset(&self) -> usize {
        self.encap.map_or(0, |e| e.inner_start as usize)
    }

    /// The frame's length on the wire: the encapsulated frame's when it came in a tunnel or mirror session.
    pub fn wire_len(&self) -> usize {
        self.encap.map_or(self.orig_len, |e| e.inner_len as usize)
    }

    /// A mirror session marked the copy truncated (ERSPAN's T bit).
    pub fn mirror_truncated(&self) -> bool {
        self.encap.is_some_and(|e| e.truncated)
    }

    /// True when the capture kept fewer bytes than the frame had.
    pub fn is_snapped(&self) -> bool {
        self.data.len() < self.orig_len
    }

    /// The GRH of a RoCEv1 or native InfiniBand packet.
    fn grh(&self) -> Option<&Grh> {
        self.roce.as_ref().and_then(|r| r.grh.as_ref())
    }

    /// The source: the IP address, else the GRH's GID, else a native InfiniBand packet's SLID.
    pub fn src(&self) -> Option<Addr> {
        // By reference: a frame's headers are a few hundred bytes, and this runs several times a frame.
        match (&self.ip, self.grh(), &self.link) {
            (Some(Ip::V4(h)), _, _) => Some(Addr::V4(h.src)),
            (Some(Ip::V6(h)), _, _) => Some(Addr::V6(h.src)),
            (None, Some(g), _) => Some(Addr::V6(g.0.src)),
            (None, None, Some(Link::Infiniband(ib))) => Some(Addr::Lid(ib.lrh.slid)),
            _ => None,
        }
    }

    /// The destination: the IP address, else the GRH's GID, else a native InfiniBand packet's DLID.
    pub fn dst(&self) -> Option<Addr> {
        match (&self.ip, self.grh(), &self.link) {
            (Some(Ip::V4(h)), _, _) => Some(Addr::V4(h.dst)),
            (Some(Ip::V6(h)), _, _) => Some(Addr::V6(h.dst)),
            (None, Some(g), _) => Some(Addr::V6(g.0.dst)),
            (None, None, Some(Link::Infiniband(ib))) => Some(Addr::Lid(ib.lrh.dlid)),
            _ => None,
        }
    }

    /// The ECN codepoint of the IP header (or of the GRH traffic class for RoCEv1).
    pub fn ecn(&self) -> Option<u8> {
        match (&self.ip, self.grh()) {
            (Some(Ip::V4(h)), _) => Some(h.ecn),
            (Some(Ip::V6(h)), _) => Some(h.ecn),
            (None, Some(g)) => Some(g.0.ecn),
            _ => None,
        }
    }

    pub fn dscp(&self) -> Option<u8> {
        match (&self.ip, self.grh()) {
            (Some(Ip::V4(h)), _) => Some(h.dscp),
            (Some(Ip::V6(h)), _) => Some(h.dscp),
            (None, Some(g)) => Some(g.0.dscp),
            _ => None,
        }
    }

    /// The Communication Management message a GSI packet carries (parsed from the payload when asked).
    pub fn cm(&self) -> Option<CmMessage<'a>> {
        let mad = self.roce.as_ref()?.mad()?.ok()?;
        mad.cm().copied()
    }

    /// Lists every header and field in wire order, then rocescope's own verdicts on the frame.
    pub fn visit(&self, v: &mut impl Visitor<'a>) {
        let mut at = 0;
        for e in self.outer().iter().flatten() {
            v.begin_outer();
            e.visit(at, v);
            v.end_outer();
            at = e.inner_start as usize;
        }
        at = visit_link(self.link, &self.vlans, at, v);
        if let Some(mc) = self.mac_control {
            mc.visit(at, v);
        }
        at = visit_ip_udp(self.ip, self.udp, at, v);
        if let Some(r) = self.roce {
            if let Some(g) = r.grh {
                g.visit(at, v);
                at += Grh::LEN;
            }
            visit_transport(&r, at, v);
        }
        if let Some(Link::Infiniband(ib)) = self.link {
            visit_vcrc(&ib, v);
        }
        if self.fragment {
            v.field(Field::new(
                "rocescope.ip_fragment",
                "IP fragment (not reassembled)",
                Value::Bool(true),
            ));
        }
        if let Some(m) = self.malformed {
            v.header("Malformed", self.data.len(), 0);
            v.field(Field::new(
                "rocescope.malformed",
                "Malformed",
                Value::Damage(m),
            ));
            v.field(Field::new(
                "rocescope.malformed_layer",
                "Layer",
                Value::Text(m.layer.name()),
            ));
        }
    }
}

/// Visits the link header and VLAN tags from `at`; returns where they end.
fn visit_link<'a>(
    link: Option<Link>,
    vlans: &[Option<VlanTag>; 2],
    mut at: usize,
    v: &mut impl Visitor<'a>,
) -> usize {
    match link {
        Some(Link::Ethernet(h)) => {
            h.visit(at, v);
            at += EthernetHeader::LEN;
        }
        Some(Link::Sll(h)) => {
            h.visit(at, v);
            at += h.header_len();
        }
        Some(Link::Ipoib(h)) => {
            h.visit(at, v);
            at += IpoibHeader::LEN;
        }
        Some(Link::Infiniband(ib)) => {
            if let Some(e) = ib.erf {
                e.visit(at, v);
                at += e.header_len();
            }
            ib.lrh.visit(at, v);
            at += Lrh::LEN;
        }
        Some(Link::Erf(e)) => {
            e.visit(at, v);
            at += e.header_len();
        }
        Some(Link::RawIp) | None => {}
    }
    let mut q_tags = 0;
    for tag in vlans.iter().flatten() {
        let is_q = tag.tpid == ethernet::ETHERTYPE_VLAN;
        tag.visit(at, is_q && q_tags > 0, v);
        q_tags += usize::from(is_q);
        at += VlanTag::LEN;
    }
    at
}

/// Visits the IP and UDP headers from `at`; returns where they end.
fn visit_ip_udp<'a>(
    ip: Option<Ip>,
    udp: Option<UdpHeader>,
    mut at: usize,
    v: &mut impl Visitor<'a>,
) -> usize {
    match ip {
        Some(Ip::V4(h)) => {
            h.visit(at, v);
            at += usize::from(h.header_len);
        }
        Some(Ip::V6(h)) => {
            h.visit(at, v);
            at += Ipv6Header::LEN;
        }
        None => {}
    }
    if let Some(u) = udp {
        u.visit(at, v);
        at += UdpHeader::LEN;
    }
    at
}

fn visit_transport<'a>(r: &Roce<'a>, mut at: usize, v: &mut impl Visitor<'a>) {
    r.bth.visit(at, v);
    at += Bth::LEN;
    let e = &r.ext;
    macro_rules! ext {
        ($field:ident, $ty:ty) => {
            if let Some(h) = e.$field {
                h.visit(at, v);
                at += <$ty>::LEN;
            }
        };
    }
    ext!(rdeth, Rdeth);
    ext!(deth, Deth);
    ext!(xrceth, Xrceth);
    ext!(feth, Feth);
    ext!(reth, Reth);
    ext!(atomic_eth, AtomicEth);
    ext!(aeth, Aeth);
    ext!(atomic_ack_eth, AtomicAckEth);
    ext!(immdt, ImmDt);
    ext!(ieth, Ieth);
    ext!(cnp, Cnp);
    if let Some(len) = r.payload_len {
        v.header("Payload", at, r.payload.len());
        v.field(Field::new(
            "rocescope.payload_len",
            "Payload length",
            Value::Uint(len as u64),
        ));
        v.field(Field::new(
            "rocescope.pad",
            "Pad",
            Value::Uint(r.bth.pad_count.into()),
        ));
        if let Some(Ok(mad)) = r.mad() {
            mad.visit(at, v);
        } else if let Some(e) = r.ether_payload() {
            e.header.visit(at, v);
            visit_ip_udp(e.ip, e.udp, at + EncapHeader::LEN, v);
        }
    }
    if let Some(status) = r.icrc_status {
        let icrc_at = at + r.payload_len.unwrap_or(0) + usize::from(r.bth.pad_count);
        v.header("Invariant CRC", icrc_at, 4);
        if let Some(found) = r.icrc {
            v.field(Field::new(
                "infiniband.invariant.crc",
                "Invariant CRC",
                Value::Hex(found.into(), 8),
            ));
        }
        v.field(Field::new(
            "rocescope.icrc_status",
            "ICRC status",
            Value::Text(status.name()),
        ));
        if let IcrcStatus::Bad { expected, .. } = status {
            v.field(Field::new(
                "rocescope.icrc_expected",
                "Expected ICRC",
                Value::Hex(expected.into(), 8),
            ));
        }
    }
    v.field(
        Field::new(
            "rocescope.opcode_name",
            "Opcode name",
            Value::Text(r.bth.op().name()),
        )
        .meaning(transport_name(r.bth.op())),
    );
}

fn visit_vcrc<'a>(ib: &IbLink, v: &mut impl Visitor<'a>) {
    v.header(
        "Variant CRC",
        ib.lrh_offset() + ib.lrh.packet_bytes(),
        lrh::VCRC_LEN,
    );
    if let Some(found) = ib.vcrc {
        v.field(Field::new(
            "infiniband.variant.crc",
            "Variant CRC",
            Value::Hex(found.into(), 4),
        ));
    }
    v.field(Field::new(
        "rocescope.vcrc_status",
        "VCRC status",
        Value::Text(ib.vcrc_status.name()),
    ));
    if let IcrcStatus::Bad { expected, .. } = ib.vcrc_status {
        v.field(Field::new(
            "rocescope.vcrc_expected",
            "Expected VCRC",
            Value::Hex(expected.into(), 4),
        ));
    }
}

fn transport_name(op: crate::opcode::Opcode) -> &'static str {
    use crate::opcode::Transport::*;
    match op.transport() {
        Rc => "reliable connection",
        Uc => "unreliable connection",
        Rd => "reliable datagram",
        Ud => "unreliable datagram",
        Cnp => "congestion notification",
        Xrc => "extended reliable connection",
        Unknown => "unknown opcode",
    }
}

/// Reads headers from the frame, bounded by the current layer's length on the wire.
struct Cursor<'a, 'o> {
    data: &'a [u8],
    orig_len: usize,
    pos: usize,
    /// Where the current layer ends on the wire (absolute offset).
    end: usize,
    defer_icrc: bool,
    /// A mirror session truncated the copy (ERSPAN's T bit): the ICRC cannot be checked.
    cut: bool,
    /// The encapsulations walked so far, outermost first.
    outer: &'o mut [Option<Encap>; MAX_ENCAP],
}

impl<'a> Cursor<'a, '_> {
    /// The captured bytes from the cursor to the end of the current layer.
    fn rest(&self) -> &'a [u8] {
        let end = self.end.min(self.data.len());
        self.data.get(self.pos..end).unwrap_or_default()
    }

    fn take<T>(
        &mut self,
        parse: impl FnOnce(&'a [u8]) -> Result<(T, &'a [u8]), Malformed>,
    ) -> Result<T, Malformed> {
        let rest = self.rest();
        match parse(rest) {
            Ok((value, left)) => {
                self.pos += rest.len() - left.len();
                Ok(value)
            }
            Err(mut m) => {
                if let MalformedKind::Truncated { needed, available } = m.kind {
                    let fits_on_wire = self.pos + needed <= self.end.min(self.orig_len);
                    let hit_capture_end = self.pos + available >= self.data.len();
                    if fits_on_wire && hit_capture_end && self.data.len() < self.orig_len {
                        m.kind = MalformedKind::CutBySnaplen { needed, available };
                    }
                }
                Err(m)
            }
        }
    }

    /// Narrows the current layer to `len` bytes from `start`, checking the claim against the wire frame.
    fn bound(&mut self, layer: Layer, start: usize, len: usize) -> Result<(), Malformed> {
        let available = self.end.saturating_sub(start);
        if len > available {
            return Err(Malformed::new(
                layer,
                MalformedKind::LengthBeyondFrame {
                    claimed: len,
                    available,
                },
            ));
        }
        self.end = start + len;
        Ok(())
    }

    fn slice(&self, from: usize, to: usize) -> &'a [u8] {
        self.data
            .get(from..to.min(self.data.len()))
            .unwrap_or_default()
    }
}

/// Parses one captured frame. `orig_len` is its length on the wire (`data.len()` if unknown).
pub fn parse_frame<'a>(linktype: u16, data: &'a [u8], orig_len: usize, cfg: &Config) -> Frame<'a> {
    parse(linktype, data, orig_len, cfg, false)
}

/// Parses one frame but leaves its ICRC check for later (`Roce::icrc_deferred`, [`IcrcCover::check`]),
/// for example to another thread with a copy of the bytes.
pub fn parse_frame_deferred<'a>(
    linktype: u16,
    data: &'a [u8],
    orig_len: usize,
    cfg: &Config,
) -> Frame<'a> {
    parse(linktype, data, orig_len, cfg, true)
}

fn parse<'a>(
    linktype: u16,
    data: &'a [u8],
    orig_len: usize,
    cfg: &Config,
    defer_icrc: bool,
) -> Frame<'a> {
    let orig_len = orig_len.max(data.len());
    let mut frame = empty(data, orig_len);
    let mut outer = [None; MAX_ENCAP];
    let mut cur = Cursor {
        data,
        orig_len,
        pos: 0,
        end: orig_len,
        defer_icrc,
        cut: false,
        outer: &mut outer,
    };
    if let Err(m) = walk(&mut frame, &mut cur, linktype, cfg) {
        frame.malformed = Some(m);
    }
    frame.encap = Encapsulation::of(&outer, linktype, cfg.roce_port);
    frame
}

/// A frame of which nothing parsed yet.
fn empty(data: &[u8], orig_len: usize) -> Frame<'_> {
    Frame {
        data,
        orig_len,
        encap: None,
        link: None,
        vlans: [None; 2],
        ethertype: None,
        mac_control: None,
        ip: None,
        fragment: false,
        udp: None,
        to_roce: false,
        roce: None,
        malformed: None,
    }
}

fn walk<'a>(
    f: &mut Frame<'a>,
    cur: &mut Cursor<'a, '_>,
    linktype: u16,
    cfg: &Config,
) -> Result<(), Malformed> {
    let mut ethertype = match linktype {
        LINKTYPE_ETHERNET => {
            let eth = cur.take(EthernetHeader::parse)?;
            f.link = Some(Link::Ethernet(eth));
            eth.ethertype
        }
        sll::LINKTYPE_LINUX_SLL | sll::LINKTYPE_LINUX_SLL2 => {
            let h = if linktype == sll::LINKTYPE_LINUX_SLL {
                cur.take(SllHeader::parse)?
            } else {
                cur.take(SllHeader::parse_v2)?
            };
            f.link = Some(Link::Sll(h));
            h.protocol
        }
        ipoib::LINKTYPE_IPOIB => {
            let h = cur.take(IpoibHeader::parse)?;
            f.link = Some(Link::Ipoib(h));
            h.ethertype
        }
        lrh::LINKTYPE_INFINIBAND => return walk_infiniband(f, cur, None),
        erf::LINKTYPE_ERF => {
            let erf = cur.take(ErfHeader::parse)?;
            if erf.record_type != erf::TYPE_INFINIBAND {
                f.link = Some(Link::Erf(erf));
                return Ok(());
            }
            cur.bound(Layer::Erf, cur.pos, usize::from(erf.wlen))?;
            return walk_infiniband(f, cur, Some(erf));
        }
        LINKTYPE_RAW | LINKTYPE_IPV4 | LINKTYPE_IPV6 => {
            f.link = Some(Link::RawIp);
            match cur.rest().first().map(|b| b >> 4) {
                Some(6) => ethernet::ETHERTYPE_IPV6,
                _ => ethernet::ETHERTYPE_IPV4,
            }
        }
        _ => return Ok(()),
    };
    for slot in 0..=f.vlans.len() {
        if !ethernet::is_vlan_tpid(ethertype) {
            break;
        }
        let Some(dst) = f.vlans.get_mut(slot) else {
            return Err(Malformed::new(Layer::Vlan, MalformedKind::TooManyVlanTags));
        };
        let tag = cur.take(|i| VlanTag::parse(ethertype, i))?;
        *dst = Some(tag);
        ethertype = tag.ethertype;
    }
    f.ethertype = Some(ethertype);
    match ethertype {
        ethernet::ETHERTYPE_MAC_CONTROL => {
            f.mac_control = Some(cur.take(MacControl::parse)?);
            Ok(())
        }
        ethernet::ETHERTYPE_IPV4 => walk_ipv4(f, cur, cfg),
        ethernet::ETHERTYPE_IPV6 => walk_ipv6(f, cur, cfg),
        ethernet::ETHERTYPE_ROCEV1 => walk_rocev1(f, cur),
        _ => Ok(()),
    }
}

fn walk_ipv4<'a>(
    f: &mut Frame<'a>,
    cur: &mut Cursor<'a, '_>,
    cfg: &Config,
) -> Result<(), Malformed> {
    let start = cur.pos;
    let ip = cur.take(Ipv4Header::parse)?;
    f.ip = Some(Ip::V4(ip));
    let header_len = usize::from(ip.header_len);
    let total = usize::from(ip.total_len);
    if total < header_len {
        return Err(Malformed::new(
            Layer::Ipv4,
            MalformedKind::LengthTooShort {
                claimed: total,
                minimum: header_len,
            },
        ));
    }
    cur.bound(Layer::Ipv4, start, total)?;
    if ip.is_fragment() {
        f.fragment = true;
        return Ok(());
    }
    if ip.protocol == gre::PROTO_GRE {
        return walk_gre(f, cur, cfg);
    }
    if ip.protocol != ipv4::PROTO_UDP {
        return Ok(());
    }
    let net = NetSpan {
        start,
        len: header_len,
        kind: NetKind::Ipv4,
    };
    walk_udp(f, cur, cfg, net)
}

fn walk_ipv6<'a>(
    f: &mut Frame<'a>,
    cur: &mut Cursor<'a, '_>,
    cfg: &Config,
) -> Result<(), Malformed> {
    let start = cur.pos;
    let ip = cur.take(Ipv6Header::parse)?;
    f.ip = Some(Ip::V6(ip));
    cur.bound(
        Layer::Ipv6,
        start + Ipv6Header::LEN,
        usize::from(ip.payload_len),
    )?;
    if ip.next_header == ipv6::NEXT_HEADER_FRAGMENT {
        f.fragment = true;
        return Ok(());
    }
    if ip.next_header == gre::PROTO_GRE {
        return walk_gre(f, cur, cfg);
    }
    if ip.next_header != ipv4::PROTO_UDP {
        return Ok(());
    }
    let net = NetSpan {
        start,
        len: Ipv6Header::LEN,
        kind: NetKind::Ipv6,
    };
    walk_udp(f, cur, cfg, net)
}

fn walk_udp<'a>(
    f: &mut Frame<'a>,
    cur: &mut Cursor<'a, '_>,
    cfg: &Config,
    net: NetSpan,
) -> Result<(), Malformed> {
    let start = cur.pos;
    let udp = cur.take(UdpHeader::parse)?;
    f.udp = Some(udp);
    let len = usize::from(udp.length);
    if len < UdpHeader::LEN {
        return Err(Malformed::new(
            Layer::Udp,
            MalformedKind::LengthTooShort {
                claimed: len,
                minimum: UdpHeader::LEN,
            },
        ));
    }
    cur.bound(Layer::Udp, start, len)?;
    if udp.dst_port == vxlan::VXLAN_PORT && udp.dst_port != cfg.roce_port {
        let h = cur.take(VxlanHeader::parse)?;
        enter(f, cur, Tunnel::Vxlan(h), Layer::Vxlan)?;
        return walk_inner(f, cur, cfg, false);
    }
    if udp.dst_port != cfg.roce_port {
        return Ok(());
    }
    f.to_roce = true;
    walk_transport(f, cur, None, net, Some(start))
}

/// GRE: followed into the frame it carries when that is an Ethernet frame (ERSPAN types I to III,
/// transparent Ethernet bridging) and the header is RFC 2784's (version 0, no routing list).
fn walk_gre<'a>(
    f: &mut Frame<'a>,
    cur: &mut Cursor<'a, '_>,
    cfg: &Config,
) -> Result<(), Malformed> {
    let gre = cur.take(GreHeader::parse)?;
    let carries_ethernet = matches!(
        gre.proto,
        gre::PROTO_ERSPAN_II | gre::PROTO_ERSPAN_III | gre::PROTO_TEB
    );
    if !carries_ethernet || gre.version() != 0 || gre.has_routing() {
        return Ok(());
    }
    enter(f, cur, Tunnel::Gre { gre, erspan: None }, Layer::Gre)?;
    // ERSPAN type I is 0x88BE without a sequence number, and has no header of its own (as Wireshark reads it).
    let type_i = gre.proto == gre::PROTO_ERSPAN_II && gre.sequence.is_none();
    if gre.proto == gre::PROTO_TEB || type_i {
        return walk_inner(f, cur, cfg, false);
    }
    let erspan = cur.take(Erspan::parse)?;
    if let Some(Encap {
        tunnel: Tunnel::Gre { erspan: e, .. },
        ..
    }) = cur.outer.iter_mut().flatten().last()
    {
        *e = Some(erspan);
    }
    walk_inner(f, cur, cfg, erspan.truncated)
}

/// Moves the headers walked so far into the next encapsulation slot: what follows is the encapsulated frame.
fn enter(f: &mut Frame, cur: &mut Cursor, tunnel: Tunnel, layer: Layer) -> Result<(), Malformed> {
    let Some(slot) = cur.outer.iter_mut().find(|e| e.is_none()) else {
        return Err(Malformed::new(
            layer,
            MalformedKind::TooManyEncapsulations { limit: MAX_ENCAP },
        ));
    };
    *slot = Some(Encap {
        link: f.link.take(),
        vlans: core::mem::take(&mut f.vlans),
        ip: f.ip.take(),
        udp: f.udp.take(),
        tunnel,
        inner_start: 0,
        inner_len: 0,
    });
    f.ethertype = None;
    Ok(())
}

/// Walks the Ethernet frame a tunnel carries from the cursor to the end of the tunnel's payload. A mirror
/// session may have cut it short (ERSPAN's T bit, or a copy shorter than its own IP header says): its length
/// on the wire is unknown, so what is missing is a cut, as if by a snap length, never damage.
fn walk_inner<'a>(
    f: &mut Frame<'a>,
    cur: &mut Cursor<'a, '_>,
    cfg: &Config,
    truncated: bool,
) -> Result<(), Malformed> {
    let (start, end) = (cur.pos, cur.end.min(cur.orig_len));
    if let Some(e) = cur.outer.iter_mut().flatten().last() {
        e.inner_start = start as u32;
        e.inner_len = end.saturating_sub(start) as u32;
    }
    let mut inner = Cursor {
        data: cur.data.get(..end.min(cur.data.len())).unwrap_or_default(),
        orig_len: usize::MAX,
        pos: start,
        end: usize::MAX,
        defer_icrc: cur.defer_icrc,
        cut: cur.cut || truncated,
        outer: &mut *cur.outer,
    };
    walk(f, &mut inner, LINKTYPE_ETHERNET, cfg)
}

/// A native InfiniBand packet from its LRH: the LRH's length bounds the packet (the VCRC after it), its
/// LNH says whether a BTH (local) or a GRH and a BTH (global) follow; from the BTH on it is RoCE's walk.
fn walk_infiniband<'a>(
    f: &mut Frame<'a>,
    cur: &mut Cursor<'a, '_>,
    erf: Option<ErfHeader>,
) -> Result<(), Malformed> {
    let start = cur.pos;
    let lrh = cur.take(Lrh::parse)?;
    let packet = lrh.packet_bytes();
    if packet < Lrh::LEN {
        return Err(Malformed::new(
            Layer::Lrh,
            MalformedKind::LengthTooShort {
                claimed: packet,
                minimum: Lrh::LEN,
            },
        ));
    }
    cur.bound(Layer::Lrh, start, packet + lrh::VCRC_LEN)?;
    let vcrc = cur
        .data
        .get(start + packet..start + packet + lrh::VCRC_LEN)
        .and_then(|b| <[u8; 2]>::try_from(b).ok())
        .map(u16::from_be_bytes);
    let vcrc_status = match (vcrc, cur.data.get(start..start + packet)) {
        (Some(found), Some(covered)) => match icrc::vcrc(covered) {
            expected if expected == found => IcrcStatus::Valid,
            expected => IcrcStatus::Bad {
                expected: expected.into(),
                found: found.into(),
            },
        },
        _ => IcrcStatus::Unverifiable,
    };
    f.link = Some(Link::Infiniband(IbLink {
        erf,
        lrh,
        vcrc,
        vcrc_status,
    }));
    cur.bound(Layer::Lrh, start, packet)?;
    match lrh.lnh {
        lrh::LNH_IBA_LOCAL => {
            f.to_roce = true;
            let net = NetSpan {
                start,
                len: Lrh::LEN,
                kind: NetKind::LocalLrh,
            };
            walk_transport(f, cur, None, net, None)
        }
        lrh::LNH_IBA_GLOBAL => walk_rocev1(f, cur),
        _ => Ok(()),
    }
}

fn walk_rocev1<'a>(f: &mut Frame<'a>, cur: &mut Cursor<'a, '_>) -> Result<(), Malformed> {
    let start = cur.pos;
    f.to_roce = true;
    let grh = cur.take(Grh::parse)?;
    cur.bound(Layer::Grh, start + Grh::LEN, usize::from(grh.0.payload_len))?;
    if grh.0.next_header != grh::NEXT_HEADER_BTH {
        return Ok(());
    }
    let net = NetSpan {
        start,
        len: Grh::LEN,
        kind: NetKind::Ipv6,
    };
    walk_transport(f, cur, Some(grh), net, None)
}

fn walk_transport<'a>(
    f: &mut Frame<'a>,
    cur: &mut Cursor<'a, '_>,
    grh: Option<Grh>,
    net: NetSpan,
    udp: Option<usize>,
) -> Result<(), Malformed> {
    let start = cur.pos;
    let bth = cur.take(Bth::parse)?;
    let roce = f.roce.insert(Roce {
        grh,
        bth,
        ext: ExtHeaders::default(),
        payload: &[],
        payload_len: None,
        icrc: None,
        icrc_status: None,
        icrc_deferred: None,
    });
    let headers = bth.op().headers();
    let e = &mut roce.ext;
    macro_rules! ext {
        ($flag:ident, $field:ident, $ty:ty) => {
            if headers.has(Headers::$flag) {
                e.$field = Some(cur.take(<$ty>::parse)?);
            }
        };
    }
    ext!(RDETH, rdeth, Rdeth);
    ext!(DETH, deth, Deth);
    ext!(XRCETH, xrceth, Xrceth);
    ext!(FETH, feth, Feth);
    ext!(RETH, reth, Reth);
    ext!(ATOMIC_ETH, atomic_eth, AtomicEth);
    ext!(AETH, aeth, Aeth);
    ext!(ATOMIC_ACK_ETH, atomic_ack_eth, AtomicAckEth);
    ext!(IMMDT, immdt, ImmDt);
    ext!(IETH, ieth, Ieth);
    ext!(CNP, cnp, Cnp);

    let left = cur.end - cur.pos;
    if left < 4 {
        return Err(Malformed::new(
            Layer::Icrc,
            MalformedKind::NoRoomForIcrc { available: left },
        ));
    }
    let padded = left - 4;
    let pad = usize::from(bth.pad_count);
    if pad > padded {
        return Err(Malformed::new(
            Layer::Bth,
            MalformedKind::PadBeyondPayload {
                pad: bth.pad_count,
                payload: padded,
            },
        ));
    }
    let payload_len = padded - pad;
    roce.payload_len = Some(payload_len);
    roce.payload = cur.slice(cur.pos, cur.pos + payload_len);
    let icrc_at = cur.end - 4;
    let found = cur
        .data
        .get(icrc_at..cur.end)
        .and_then(|b| <[u8; 4]>::try_from(b).ok())
        .map(u32::from_be_bytes);
    roce.icrc = found;
    match found {
        Some(found) if !cur.cut => {
            let cover = IcrcCover {
                net_start: net.start as u32,
                net_len: net.len as u8,
                net_kind: net.kind,
                udp_start: udp.map(|u| u as u32),
                transport: (start as u32, icrc_at as u32),
                found,
            };
            if cur.defer_icrc {
                roce.icrc_deferred = Some(cover);
            } else {
                roce.icrc_status = Some(cover.check(cur.data));
            }
        }
        _ => roce.icrc_status = Some(IcrcStatus::Unverifiable),
    }
    // The MAD is the last layer of a GSI packet; every other packet skips this at the first compare.
    match roce.mad() {
        Some(Err(m)) => Err(m),
        _ => Ok(()),
    }
}
