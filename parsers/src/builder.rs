//! Builders of whole frames from header values, for tests, test captures and benchmarks.
//! Lengths, checksum, pad and ICRC are filled in unless a test overrides them to make damage.
use crate::bth::Bth;
use crate::deth::Deth;
use crate::erspan::{self, Erspan};
use crate::ethernet::{self, EthernetHeader};
use crate::frame::ExtHeaders;
use crate::gre::{self, GreHeader};
use crate::grh::{self, Grh};
use crate::icrc::{self, NetHeader};
use crate::ipv4::{self, Ipv4Header};
use crate::ipv6::Ipv6Header;
use crate::lrh::{self, Lrh};
use crate::mac_control::MacControl;
use crate::mad::{self, Mad};
use crate::opcode::{self, Headers};
use crate::udp::{self, UdpHeader};
use crate::vlan::VlanTag;
use crate::vxlan::{self, VxlanHeader};

/// The network layer of a built frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Net {
    /// RoCEv2 over IPv4 (total length, protocol and checksum are computed).
    V4(Ipv4Header),
    /// RoCEv2 over IPv6 (payload length and next header are computed).
    V6(Ipv6Header),
    /// RoCEv1: a GRH (payload length and next header are computed).
    V1(Ipv6Header),
}

/// A RoCE frame to build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoceFrame {
    pub eth_dst: [u8; 6],
    pub eth_src: [u8; 6],
    /// Outer first; each tag's `ethertype` is filled in.
    pub vlans: Vec<VlanTag>,
    pub net: Net,
    pub udp_src: u16,
    pub udp_dst: u16,
    pub udp_checksum: u16,
    /// `pad_count` is computed from the payload unless `pad` is set.
    pub bth: Bth,
    /// The headers the opcode implies are emitted, with these values (or zeros where absent).
    pub ext: ExtHeaders,
    pub payload: Vec<u8>,
    pub pad: Option<u8>,
    /// A wrong ICRC to put on the wire (read big-endian), instead of the right one.
    pub icrc: Option<u32>,
}

impl RoceFrame {
    /// An RoCEv2 IPv4 frame 10.0.0.1 -> 10.0.0.2 (DSCP 26, ECT(0) off, TTL 64) to QP 0x11, PSN 0.
    pub fn new(opcode: u8) -> RoceFrame {
        RoceFrame {
            eth_dst: [0x02, 0, 0, 0, 0, 0x02],
            eth_src: [0x02, 0, 0, 0, 0, 0x01],
            vlans: Vec::new(),
            net: Net::V4(Ipv4Header {
                header_len: 20,
                dscp: 26,
                ecn: 0,
                total_len: 0,
                id: 1,
                dont_fragment: true,
                more_fragments: false,
                reserved_flag: false,
                frag_offset: 0,
                ttl: 64,
                protocol: ipv4::PROTO_UDP,
                checksum: 0,
                src: [10, 0, 0, 1],
                dst: [10, 0, 0, 2],
            }),
            udp_src: 49152,
            udp_dst: udp::ROCEV2_PORT,
            udp_checksum: 0,
            bth: Bth {
                opcode,
                pkey: 0xFFFF,
                dest_qp: 0x11,
                ..Bth::default()
            },
            ext: ExtHeaders::default(),
            payload: Vec::new(),
            pad: None,
            icrc: None,
        }
    }

    /// A UD SEND_ONLY to QP 1 carrying `mad`, as the GSI sends CM messages: DETH with QP 1's Q_Key
    /// 0x80010000 and source QP 1; addresses and the rest as [`RoceFrame::new`]. For example
    /// `RoceFrame::gsi(&Mad::cm_send(tid, CmMessage::Rtu(rtu))).build()`.
    pub fn gsi(mad: &Mad) -> RoceFrame {
        let mut frame = RoceFrame::new(opcode::UD_SEND_ONLY);
        frame.bth.dest_qp = mad::GSI_QP;
        frame.ext.deth = Some(Deth {
            q_key: mad::GSI_QKEY,
            reserved: 0,
            src_qp: mad::GSI_QP,
        });
        frame.payload = Vec::with_capacity(Mad::LEN);
        mad.emit(&mut frame.payload);
        frame
    }

    /// The same frame over IPv6 between two addresses.
    pub fn ipv6(mut self, src: [u8; 16], dst: [u8; 16]) -> RoceFrame {
        self.net = Net::V6(v6_header(src, dst));
        self
    }

    /// The same frame as RoCEv1 with a GRH between two GIDs.
    pub fn rocev1(mut self, sgid: [u8; 16], dgid: [u8; 16]) -> RoceFrame {
        self.net = Net::V1(v6_header(sgid, dgid));
        self
    }

    fn transport(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 + self.payload.len());
        let pad = self.pad.unwrap_or(((4 - self.payload.len() % 4) % 4) as u8);
        Bth {
            pad_count: pad,
            ..self.bth
        }
        .emit(&mut out);
        let h = self.bth.op().headers();
        let e = &self.ext;
        macro_rules! ext {
            ($flag:ident, $field:ident) => {
                if h.has(Headers::$flag) {
                    e.$field.unwrap_or_default().emit(&mut out);
                }
            };
        }
        ext!(RDETH, rdeth);
        ext!(DETH, deth);
        ext!(XRCETH, xrceth);
        ext!(FETH, feth);
        ext!(RETH, reth);
        ext!(ATOMIC_ETH, atomic_eth);
        ext!(AETH, aeth);
        ext!(ATOMIC_ACK_ETH, atomic_ack_eth);
        ext!(IMMDT, immdt);
        ext!(IETH, ieth);
        ext!(CNP, cnp);
        out.extend_from_slice(&self.payload);
        out.extend(std::iter::repeat_n(0u8, usize::from(pad)));
        out
    }

    pub fn build(&self) -> Vec<u8> {
        let transport = self.transport();
        let roce_len = transport.len() + 4;
        let mut l3 = Vec::with_capacity(48 + roce_len);
        let (ethertype, icrc) = match self.net {
            Net::V4(h) => {
                let ip = Ipv4Header {
                    total_len: (20 + 8 + roce_len) as u16,
                    protocol: ipv4::PROTO_UDP,
                    ..h
                };
                ip.emit(&mut l3);
                let udp = self.udp_header(roce_len);
                udp.emit(&mut l3);
                let (iph, udph) = l3.split_at(20);
                (
                    ethernet::ETHERTYPE_IPV4,
                    icrc::compute(NetHeader::Ipv4(iph), Some(udph), &transport),
                )
            }
            Net::V6(h) => {
                let ip = Ipv6Header {
                    payload_len: (8 + roce_len) as u16,
                    next_header: ipv4::PROTO_UDP,
                    ..h
                };
                ip.emit(&mut l3);
                self.udp_header(roce_len).emit(&mut l3);
                let (iph, udph) = l3.split_at(40);
                (
                    ethernet::ETHERTYPE_IPV6,
                    icrc::compute(NetHeader::Ipv6(iph), Some(udph), &transport),
                )
            }
            Net::V1(h) => {
                let g = Grh(Ipv6Header {
                    payload_len: roce_len as u16,
                    next_header: grh::NEXT_HEADER_BTH,
                    ..h
                });
                g.emit(&mut l3);
                (
                    ethernet::ETHERTYPE_ROCEV1,
                    icrc::compute(NetHeader::Ipv6(&l3), None, &transport),
                )
            }
        };
        l3.extend_from_slice(&transport);
        l3.extend_from_slice(&self.icrc.unwrap_or(icrc).to_be_bytes());
        ethernet_frame(self.eth_dst, self.eth_src, &self.vlans, ethertype, &l3)
    }

    /// The packet as native InfiniBand (LINKTYPE_INFINIBAND), from `lrh` (its LNH and packet length are
    /// computed) to the VCRC: global, with the GRH, when the frame is RoCEv1 ([`Net::V1`]), else local. The
    /// Ethernet, IP and UDP fields are not used; `icrc` overrides the ICRC as for [`RoceFrame::build`].
    pub fn build_infiniband(&self, lrh: Lrh) -> Vec<u8> {
        let grh = match self.net {
            Net::V1(h) => Some(h),
            Net::V4(_) | Net::V6(_) => None,
        };
        let transport = self.transport();
        let after_grh = transport.len() + 4;
        let grh_len = grh.map_or(0, |_| Grh::LEN);
        let lrh = Lrh {
            lnh: if grh.is_some() {
                lrh::LNH_IBA_GLOBAL
            } else {
                lrh::LNH_IBA_LOCAL
            },
            pkt_len: ((Lrh::LEN + grh_len + after_grh) / 4) as u16,
            ..lrh
        };
        let mut out = Vec::with_capacity(Lrh::LEN + grh_len + after_grh + lrh::VCRC_LEN);
        lrh.emit(&mut out);
        let lrh_bytes: [u8; Lrh::LEN] = out.as_slice().try_into().unwrap_or_default();
        let icrc = match grh {
            Some(h) => {
                Grh(Ipv6Header {
                    payload_len: after_grh as u16,
                    next_header: grh::NEXT_HEADER_BTH,
                    ..h
                })
                .emit(&mut out);
                icrc::compute(NetHeader::Ipv6(out.split_at(Lrh::LEN).1), None, &transport)
            }
            None => icrc::compute_local(lrh_bytes, &transport),
        };
        out.extend_from_slice(&transport);
        out.extend_from_slice(&self.icrc.unwrap_or(icrc).to_be_bytes());
        let vcrc = icrc::vcrc(&out);
        out.extend_from_slice(&vcrc.to_be_bytes());
        out
    }

    fn udp_header(&self, roce_len: usize) -> UdpHeader {
        UdpHeader {
            src_port: self.udp_src,
            dst_port: self.udp_dst,
            length: (8 + roce_len) as u16,
            checksum: self.udp_checksum,
        }
    }
}

fn v6_header(src: [u8; 16], dst: [u8; 16]) -> Ipv6Header {
    Ipv6Header {
        dscp: 26,
        ecn: 0,
        flow_label: 0,
        payload_len: 0,
        next_header: 0,
        hop_limit: 64,
        src,
        dst,
    }
}

/// An Ethernet frame (with VLAN tags) around `payload`, padded to the 60-byte minimum.
pub fn ethernet_frame(
    dst: [u8; 6],
    src: [u8; 6],
    vlans: &[VlanTag],
    ethertype: u16,
    payload: &[u8],
) -> Vec<u8> {
    let mut out = Vec::with_capacity(14 + 4 * vlans.len() + payload.len());
    let first = vlans.first().map_or(ethertype, |t| t.tpid);
    EthernetHeader {
        dst,
        src,
        ethertype: first,
    }
    .emit(&mut out);
    for (i, tag) in vlans.iter().enumerate() {
        let next = vlans.get(i + 1).map_or(ethertype, |t| t.tpid);
        VlanTag {
            ethertype: next,
            ..*tag
        }
        .emit(&mut out);
    }
    out.extend_from_slice(payload);
    if out.len() < 60 {
        out.resize(60, 0);
    }
    out
}

/// A MAC control frame (PAUSE or PFC) to the reserved multicast address 01:80:c2:00:00:01.
pub fn mac_control_frame(src: [u8; 6], vlans: &[VlanTag], control: MacControl) -> Vec<u8> {
    let mut body = Vec::with_capacity(20);
    control.emit(&mut body);
    ethernet_frame(
        [0x01, 0x80, 0xC2, 0, 0, 0x01],
        src,
        vlans,
        ethernet::ETHERTYPE_MAC_CONTROL,
        &body,
    )
}

/// A mirror session or tunnel to wrap a captured frame in (test captures of mirror ports).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mirror {
    /// ERSPAN type II of this session (GRE with a sequence number).
    ErspanII { session: u16 },
    /// ERSPAN type III of this session, direction egress or ingress, timestamps in 100 ns units.
    ErspanIII { session: u16, egress: bool },
    /// GRE transparent Ethernet bridging.
    GreTeb,
    /// VXLAN with this network identifier.
    Vxlan { vni: u32 },
}

impl Mirror {
    /// The mirror copy of a frame: outer Ethernet (02:00:00:00:00:0a -> :0b), IPv4 (192.0.2.1 ->
    /// 192.0.2.2, identification `seq`) and the session's headers around `frame`, the captured bytes of a
    /// frame `orig_len` long on the wire. Returns the copy's bytes and its length on the wire: a frame the
    /// capture cut is a copy the capture cut at the same byte. `ts_100ns` is ERSPAN III's timestamp.
    pub fn wrap(&self, frame: &[u8], orig_len: usize, seq: u32, ts_100ns: u32) -> (Vec<u8>, usize) {
        let mut tunnel = Vec::with_capacity(32);
        let protocol = self.tunnel(&mut tunnel, orig_len, seq, ts_100ns);
        let ip = Ipv4Header {
            header_len: 20,
            dscp: 0,
            ecn: 0,
            total_len: (20 + tunnel.len() + orig_len) as u16,
            id: seq as u16,
            dont_fragment: true,
            more_fragments: false,
            reserved_flag: false,
            frag_offset: 0,
            ttl: 64,
            protocol,
            checksum: 0,
            src: [192, 0, 2, 1],
            dst: [192, 0, 2, 2],
        };
        let mut out = Vec::with_capacity(34 + tunnel.len() + frame.len());
        EthernetHeader {
            dst: [0x02, 0, 0, 0, 0, 0x0b],
            src: [0x02, 0, 0, 0, 0, 0x0a],
            ethertype: ethernet::ETHERTYPE_IPV4,
        }
        .emit(&mut out);
        ip.emit(&mut out);
        out.extend_from_slice(&tunnel);
        let outer = out.len();
        out.extend_from_slice(frame);
        (out, outer + orig_len)
    }

    /// Writes the tunnel's headers (after the outer IP header); returns the IP protocol that carries them.
    fn tunnel(&self, out: &mut Vec<u8>, inner_len: usize, seq: u32, ts: u32) -> u8 {
        let gre = |proto: u16, sequence: Option<u32>| GreHeader {
            flags_version: if sequence.is_some() { 0x1000 } else { 0 },
            proto,
            checksum: None,
            key: None,
            sequence,
            ack: None,
        };
        match *self {
            Mirror::ErspanII { session } => {
                gre(gre::PROTO_ERSPAN_II, Some(seq)).emit(out);
                Erspan {
                    version: erspan::VERSION_II,
                    session_id: session,
                    ..Erspan::default()
                }
                .emit(out);
            }
            Mirror::ErspanIII { session, egress } => {
                gre(gre::PROTO_ERSPAN_III, Some(seq)).emit(out);
                Erspan {
                    version: erspan::VERSION_III,
                    session_id: session,
                    timestamp: ts,
                    egress,
                    granularity: 1,
                    ..Erspan::default()
                }
                .emit(out);
            }
            Mirror::GreTeb => gre(gre::PROTO_TEB, None).emit(out),
            Mirror::Vxlan { vni } => {
                let len = UdpHeader::LEN + VxlanHeader::LEN + inner_len;
                UdpHeader {
                    src_port: 49152 | (seq as u16 & 0x3FFF),
                    dst_port: vxlan::VXLAN_PORT,
                    length: len as u16,
                    checksum: 0,
                }
                .emit(out);
                VxlanHeader {
                    flags: 0x0800,
                    vni,
                    ..VxlanHeader::default()
                }
                .emit(out);
                return ipv4::PROTO_UDP;
            }
        }
        gre::PROTO_GRE
    }
}
