//! The frames around RoCE traffic, read far enough for a one-line summary like tshark's Info column: TCP
//! ports and flags, ICMP and ICMPv6 (echo, errors, neighbour discovery), IGMP, ARP, LLDP and 802.3 LLC.
//! Read from a parsed frame's bytes when a view asks ([`summary`]), never on the analysis' path.
use crate::ethernet::{self, MAX_8023_LENGTH};
use crate::frame::{Frame, Ip, Link};
use crate::sll::SllHeader;
use crate::vlan::VlanTag;

/// What a non-RoCE frame carries, as far as its summary needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Summary<'a> {
    Tcp(Tcp),
    Icmp {
        kind: u8,
        code: u8,
        echo: Option<Echo>,
    },
    Icmpv6(Icmpv6),
    Igmp {
        kind: u8,
        group: [u8; 4],
    },
    Arp(Arp<'a>),
    Lldp(Lldp<'a>),
    /// An 802.3 frame: its length field and LLC addresses.
    Llc {
        length: u16,
        dsap: u8,
        ssap: u8,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tcp {
    pub src_port: u16,
    pub dst_port: u16,
    /// FIN, SYN, RST, PSH, ACK, URG, ECE, CWR from bit 0 (as tshark lists them).
    pub flags: u8,
    /// Payload bytes on the wire (the IP payload less the TCP header).
    pub payload_len: usize,
}

/// An echo request's or reply's identifier and sequence number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Echo {
    pub id: u16,
    pub seq: u16,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Icmpv6 {
    pub kind: u8,
    pub code: u8,
    pub echo: Option<Echo>,
    /// Neighbour solicitation and advertisement: the target address.
    pub target: Option<[u8; 16]>,
    /// The link-layer address option (source or target), if any.
    pub link_addr: Option<[u8; 6]>,
    /// Neighbour advertisement: router, solicited and override flags (bits 7, 6, 5 of byte 4).
    pub na_flags: u8,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arp<'a> {
    pub op: u16,
    /// The sender's hardware address: a MAC on Ethernet, 20 bytes (flags, QPN, GID) over IPoIB.
    pub sender_hw: &'a [u8],
    pub sender_ip: [u8; 4],
    pub target_ip: [u8; 4],
}

/// The chassis and port IDs (subtype and bytes), the time to live and the system name of an LLDP frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lldp<'a> {
    pub chassis: Option<(u8, &'a [u8])>,
    pub port: Option<(u8, &'a [u8])>,
    pub ttl: Option<u16>,
    pub system_name: Option<&'a [u8]>,
}

pub const ETHERTYPE_ARP: u16 = 0x0806;
pub const ETHERTYPE_LLDP: u16 = 0x88cc;
const PROTO_ICMP: u8 = 1;
const PROTO_IGMP: u8 = 2;
const PROTO_TCP: u8 = 6;
const PROTO_ICMPV6: u8 = 58;
const NEXT_HOP_BY_HOP: u8 = 0;

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    b.get(at..at + 2)?.try_into().ok().map(u16::from_be_bytes)
}

fn array<const N: usize>(b: &[u8], at: usize) -> Option<[u8; N]> {
    b.get(at..at + N)?.try_into().ok()
}

/// Where the link layer's payload starts (after the VLAN tags), for the link types rocescope reads.
fn network_offset(frame: &Frame) -> Option<usize> {
    let link = match frame.link? {
        Link::Ethernet(_) => ethernet::EthernetHeader::LEN,
        Link::Sll(h) => SllHeader::header_len(&h),
        Link::RawIp => 0,
        Link::Ipoib(_) => crate::ipoib::IpoibHeader::LEN,
        // What a native InfiniBand packet carries is the transport's payload, not a network header.
        Link::Infiniband(_) | Link::Erf(_) => return None,
    };
    Some(frame.inner_offset() + link + VlanTag::LEN * frame.vlans.iter().flatten().count())
}

/// The summary of a frame that is neither RoCE nor UDP, when it is one of the protocols above and its
/// headers were captured.
pub fn summary<'a>(frame: &Frame<'a>) -> Option<Summary<'a>> {
    if frame.roce.is_some() || frame.udp.is_some() || frame.fragment {
        return None;
    }
    let at = network_offset(frame)?;
    let data = frame.data;
    match frame.ip {
        Some(Ip::V4(h)) => {
            let start = at + usize::from(h.header_len);
            let wire = usize::from(h.total_len).saturating_sub(usize::from(h.header_len));
            ip_payload(h.protocol, data.get(start..)?, wire)
        }
        Some(Ip::V6(h)) => {
            let start = at + crate::ipv6::Ipv6Header::LEN;
            let mut payload = data.get(start..)?;
            let mut wire = usize::from(h.payload_len);
            let mut next = h.next_header;
            // MLD and router alerts come after a hop-by-hop header.
            if next == NEXT_HOP_BY_HOP {
                let len = (usize::from(*payload.get(1)?) + 1) * 8;
                next = *payload.first()?;
                payload = payload.get(len..)?;
                wire = wire.saturating_sub(len);
            }
            ip_payload(next, payload, wire)
        }
        None => link_payload(frame, data.get(at..)?),
    }
}

fn ip_payload(protocol: u8, b: &[u8], wire: usize) -> Option<Summary<'_>> {
    let echo = |kinds: [u8; 2]| {
        kinds.contains(b.first()?).then_some(Echo {
            id: u16_at(b, 4)?,
            seq: u16_at(b, 6)?,
        })
    };
    Some(match protocol {
        PROTO_TCP => {
            let header = usize::from(b.get(12)? >> 4) * 4;
            Summary::Tcp(Tcp {
                src_port: u16_at(b, 0)?,
                dst_port: u16_at(b, 2)?,
                flags: *b.get(13)?,
                payload_len: wire.saturating_sub(header),
            })
        }
        PROTO_ICMP => Summary::Icmp {
            kind: *b.first()?,
            code: *b.get(1)?,
            echo: echo([0, 8]),
        },
        PROTO_ICMPV6 => Summary::Icmpv6(icmpv6(b, echo([128, 129]))?),
        PROTO_IGMP => Summary::Igmp {
            kind: *b.first()?,
            group: array(b, 4).unwrap_or_default(),
        },
        _ => return None,
    })
}

fn icmpv6(b: &[u8], echo: Option<Echo>) -> Option<Icmpv6> {
    let kind = *b.first()?;
    // Neighbour discovery: where the options start, and whether a target address precedes them.
    let (options, target) = match kind {
        133 => (8, false),
        134 => (16, false),
        135 | 136 => (24, true),
        _ => (usize::MAX, false),
    };
    let mut link_addr = None;
    let mut at = options;
    while let (Some(&t), Some(&len)) = (b.get(at), b.get(at.saturating_add(1))) {
        if len == 0 {
            break;
        }
        // Source (1) or target (2) link-layer address.
        if matches!(t, 1 | 2) {
            link_addr = array(b, at + 2);
        }
        at += usize::from(len) * 8;
    }
    Some(Icmpv6 {
        kind,
        code: *b.get(1)?,
        echo,
        target: if target { array(b, 8) } else { None },
        link_addr,
        na_flags: if kind == 136 { *b.get(4)? } else { 0 },
    })
}

fn link_payload<'a>(frame: &Frame, b: &'a [u8]) -> Option<Summary<'a>> {
    match frame.ethertype? {
        ETHERTYPE_ARP if u16_at(b, 2)? == ethernet::ETHERTYPE_IPV4 => {
            // The addresses' places follow the hardware address length (RFC 826).
            let hw = usize::from(*b.get(4)?);
            Some(Summary::Arp(Arp {
                op: u16_at(b, 6)?,
                sender_hw: b.get(8..8 + hw)?,
                sender_ip: array(b, 8 + hw)?,
                target_ip: array(b, 8 + 2 * hw + 4)?,
            }))
        }
        ETHERTYPE_LLDP => Some(Summary::Lldp(lldp(b))),
        length if length <= MAX_8023_LENGTH => Some(Summary::Llc {
            length,
            dsap: *b.first()?,
            ssap: *b.get(1)?,
        }),
        _ => None,
    }
}

fn lldp(mut b: &[u8]) -> Lldp<'_> {
    let mut l = Lldp {
        chassis: None,
        port: None,
        ttl: None,
        system_name: None,
    };
    while let Some(head) = u16_at(b, 0) {
        let (kind, len) = (head >> 9, usize::from(head & 0x1ff));
        let Some(value) = b.get(2..2 + len) else {
            break;
        };
        let sub = || value.split_first().map(|(s, rest)| (*s, rest));
        match kind {
            0 => break,
            1 => l.chassis = sub(),
            2 => l.port = sub(),
            3 => l.ttl = u16_at(value, 0),
            5 => l.system_name = Some(value),
            _ => {}
        }
        b = b.get(2 + len..).unwrap_or_default();
    }
    l
}

/// An IP protocol (IPv6 next header) by its IANA name.
pub fn protocol_name(p: u8) -> Option<&'static str> {
    Some(match p {
        0 => "IPv6 Hop-by-Hop Option",
        1 => "ICMP",
        2 => "IGMP",
        4 => "IPv4",
        6 => "TCP",
        17 => "UDP",
        41 => "IPv6",
        43 => "IPv6 Routing",
        44 => "IPv6 Fragment",
        47 => "GRE",
        50 => "ESP",
        51 => "AH",
        58 => "ICMPv6",
        59 => "IPv6 No Next Header",
        60 => "IPv6 Destination Options",
        89 => "OSPF",
        103 => "PIM",
        112 => "VRRP",
        132 => "SCTP",
        _ => return None,
    })
}

/// ICMP types and codes as tshark names them.
pub fn icmp_name(kind: u8, code: u8) -> Option<&'static str> {
    Some(match (kind, code) {
        (0, _) => "Echo (ping) reply",
        (3, 0) => "Destination unreachable (Network unreachable)",
        (3, 1) => "Destination unreachable (Host unreachable)",
        (3, 2) => "Destination unreachable (Protocol unreachable)",
        (3, 3) => "Destination unreachable (Port unreachable)",
        (3, 4) => "Destination unreachable (Fragmentation needed)",
        (3, _) => "Destination unreachable",
        (5, _) => "Redirect",
        (8, _) => "Echo (ping) request",
        (9, _) => "Router advertisement",
        (10, _) => "Router solicitation",
        (11, 0) => "Time-to-live exceeded (Time to live exceeded in transit)",
        (11, _) => "Time-to-live exceeded",
        (12, _) => "Parameter problem",
        (13, _) => "Timestamp request",
        (14, _) => "Timestamp reply",
        _ => return None,
    })
}

/// ICMPv6 types as tshark names them.
pub fn icmpv6_name(kind: u8) -> Option<&'static str> {
    Some(match kind {
        1 => "Destination Unreachable",
        2 => "Packet Too Big",
        3 => "Time Exceeded",
        4 => "Parameter Problem",
        128 => "Echo (ping) request",
        129 => "Echo (ping) reply",
        130 => "Multicast Listener Query",
        131 => "Multicast Listener Report",
        132 => "Multicast Listener Done",
        133 => "Router Solicitation",
        134 => "Router Advertisement",
        135 => "Neighbor Solicitation",
        136 => "Neighbor Advertisement",
        137 => "Redirect",
        143 => "Multicast Listener Report Message v2",
        _ => return None,
    })
}

/// IGMP message types as tshark names them.
pub fn igmp_name(kind: u8) -> Option<&'static str> {
    Some(match kind {
        0x11 => "Membership Query",
        0x12 => "Membership Report / Join group (v1)",
        0x16 => "Membership Report / Join group",
        0x17 => "Leave Group",
        0x22 => "Membership Report",
        _ => return None,
    })
}
