//! Communication Management messages (IBTA Vol. 1 chapter 12, management class 0x07): the 232 data bytes of
//! a CM MAD, one layout per attribute ID (tables 106 to 120; Linux writes the same bit positions in
//! include/rdma/ibta_vol1_c12.h), and the RDMA IP CM private data of REQ and SIDR_REQ (Annex A11).
//! Field names are Wireshark's where it has the field (`infiniband.cm.*`); Wireshark 4.0 decodes neither
//! MRA nor SIDR, whose fields are `rocescope.cm.*`.
use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use nom::Parser;

use crate::be::{In, Res, array, bytes, put_field, put_u24, u8, u16, u24, u32, u64};
use crate::error::{Layer, Malformed, MalformedKind, need, short};
use crate::fields::{Field, Value, Visitor};

pub const ATTR_REQ: u16 = 0x0010;
pub const ATTR_MRA: u16 = 0x0011;
pub const ATTR_REJ: u16 = 0x0012;
pub const ATTR_REP: u16 = 0x0013;
pub const ATTR_RTU: u16 = 0x0014;
pub const ATTR_DREQ: u16 = 0x0015;
pub const ATTR_DREP: u16 = 0x0016;
pub const ATTR_SIDR_REQ: u16 = 0x0017;
pub const ATTR_SIDR_REP: u16 = 0x0018;

/// The CM attributes: ID, Wireshark's name (its `CM_Attributes`) and the title of its tree.
const ATTRIBUTES: [(u16, &str, &str); 12] = [
    (0x0001, "ClassPortInfo", "CM ClassPortInfo"),
    (ATTR_REQ, "ConnectRequest", "CM ConnectRequest"),
    (ATTR_MRA, "MsgRcptAck", "CM MsgRcptAck"),
    (ATTR_REJ, "ConnectReject", "CM ConnectReject"),
    (ATTR_REP, "ConnectReply", "CM ConnectReply"),
    (ATTR_RTU, "ReadyToUse", "CM ReadyToUse"),
    (ATTR_DREQ, "DisconnectRequest", "CM DisconnectRequest"),
    (ATTR_DREP, "DisconnectReply", "CM DisconnectReply"),
    (ATTR_SIDR_REQ, "ServiceIDResReq", "CM ServiceIDResReq"),
    (
        ATTR_SIDR_REP,
        "ServiceIDResReqResp",
        "CM ServiceIDResReqResp",
    ),
    (0x0019, "LoadAlternatePath", "CM LoadAlternatePath"),
    (0x001A, "AlternatePathResponse", "CM AlternatePathResponse"),
];

fn attribute(id: u16) -> (&'static str, &'static str) {
    ATTRIBUTES.iter().find(|(a, ..)| *a == id).map_or(
        ("Unknown CM Attribute", "CM (Unknown CM Attribute)"),
        |&(_, name, title)| (name, title),
    )
}

/// The CM attribute as Wireshark names it (`ConnectRequest`, `Unknown CM Attribute`).
pub fn attribute_name(id: u16) -> &'static str {
    attribute(id).0
}

/// REJ reasons (IBTA Vol. 1 table 107).
pub fn reject_reason_name(reason: u16) -> Option<&'static str> {
    Some(match reason {
        1 => "No QP available",
        2 => "No EEC available",
        3 => "No resources available",
        4 => "Timeout",
        5 => "Unsupported request",
        6 => "Invalid Communication ID",
        7 => "Invalid Communication Instance",
        8 => "Invalid Service ID",
        9 => "Invalid Transport Service Type",
        10 => "Stale connection",
        11 => "RDC does not exist",
        12 => "Primary Remote Port GID rejected",
        13 => "Primary Remote Port LID rejected",
        14 => "Invalid Primary SL",
        15 => "Invalid Primary Traffic Class",
        16 => "Invalid Primary Hop Limit",
        17 => "Invalid Primary Packet Rate",
        18 => "Alternate Remote Port GID rejected",
        19 => "Alternate Remote Port LID rejected",
        20 => "Invalid Alternate SL",
        21 => "Invalid Alternate Traffic Class",
        22 => "Invalid Alternate Hop Limit",
        23 => "Invalid Alternate Packet Rate",
        24 => "Port CM Redirection",
        25 => "Port Redirection",
        26 => "Invalid Path MTU",
        27 => "Insufficient Responder Resources",
        28 => "Consumer Reject",
        29 => "RNR Retry Count Reject",
        30 => "Duplicate Local Communication ID",
        31 => "Unsupported Class Version",
        32 => "Invalid Primary Flow Label",
        33 => "Invalid Alternate Flow Label",
        35 => "Vendor Option Not Supported",
        _ => return None,
    })
}

/// SIDR_REP status (IBTA Vol. 1 table 121).
pub fn sidr_status_name(status: u8) -> Option<&'static str> {
    Some(match status {
        0 => "QPN valid",
        1 => "Service ID not supported",
        2 => "Rejected by the service provider",
        3 => "No QP available",
        4 => "Redirect",
        5 => "Unsupported class version",
        _ => return None,
    })
}

/// Which message a REJ rejects or an MRA acknowledges (2 bits).
fn message_name(code: u8, third: &'static str) -> &'static str {
    match code {
        0 => "REQ",
        1 => "REP",
        2 => third,
        _ => "reserved",
    }
}

/// The path MTU codes of REQ (IBTA 9.6.1): code, bytes, as Wireshark names it.
const PATH_MTUS: [(u8, u32, &str); 5] = [
    (1, 256, "256"),
    (2, 512, "512"),
    (3, 1024, "1024"),
    (4, 2048, "2048"),
    (5, 4096, "4096"),
];

/// The path MTU in bytes of a REQ's path MTU code.
pub fn path_mtu_bytes(code: u8) -> Option<u32> {
    PATH_MTUS.iter().find(|m| m.0 == code).map(|m| m.1)
}

fn mtu_name(code: u8) -> Option<&'static str> {
    PATH_MTUS.iter().find(|m| m.0 == code).map(|m| m.2)
}

/// The static rate code of a path (Linux `enum ib_rate`).
fn rate_name(code: u8) -> Option<&'static str> {
    Some(match code {
        2 => "2.5 Gb/s",
        3 => "10 Gb/s",
        4 => "30 Gb/s",
        5 => "5 Gb/s",
        6 => "20 Gb/s",
        7 => "40 Gb/s",
        8 => "60 Gb/s",
        9 => "80 Gb/s",
        10 => "120 Gb/s",
        11 => "14 Gb/s",
        12 => "56 Gb/s",
        13 => "112 Gb/s",
        14 => "168 Gb/s",
        15 => "25 Gb/s",
        16 => "100 Gb/s",
        17 => "200 Gb/s",
        18 => "300 Gb/s",
        19 => "28 Gb/s",
        20 => "50 Gb/s",
        21 => "400 Gb/s",
        22 => "600 Gb/s",
        _ => return None,
    })
}

/// A hex field of a table: Wireshark's name, label, value, hex digits, and the value's name if it has one.
type HexField = (&'static str, &'static str, u64, u8, Option<&'static str>);

fn put<'a>(v: &mut impl Visitor<'a>, fields: &[HexField]) {
    for &(key, label, n, digits, meaning) in fields {
        let field = Field::new(key, label, Value::Hex(n, digits));
        v.field(match meaning {
            Some(m) => field.meaning(m),
            None => field,
        });
    }
}

fn put_bytes<'a>(v: &mut impl Visitor<'a>, key: &'static str, label: &'static str, data: &'a [u8]) {
    v.field(Field::new(key, label, Value::Bytes(data)));
}

/// The IPv4 address of an IPv4-mapped GID (`::ffff:a.b.c.d`, the GIDs of RoCEv2 over IPv4), which
/// Wireshark shows as an IPv4 address.
fn ipv4_mapped(gid: [u8; 16]) -> Option<[u8; 4]> {
    match gid {
        [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, a, b, c, d] => Some([a, b, c, d]),
        _ => None,
    }
}

/// A service ID. RDMA CM's (Annex A11) are IP CM service IDs: prefix 0x0000000001, then the port space
/// (6 TCP, 0x11 UDP, 0x3F IB) and the destination port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ServiceId(pub u64);

impl ServiceId {
    pub const IP_PREFIX: u64 = 0x00_0000_0001;

    pub fn ip(protocol: u8, port: u16) -> ServiceId {
        ServiceId((Self::IP_PREFIX << 24) | (u64::from(protocol) << 16) | u64::from(port))
    }

    pub fn is_ip(self) -> bool {
        self.0 >> 24 == Self::IP_PREFIX
    }

    pub fn prefix(self) -> u64 {
        self.0 >> 24
    }

    pub fn protocol(self) -> u8 {
        (self.0 >> 16) as u8
    }

    pub fn port(self) -> u16 {
        self.0 as u16
    }

    /// The destination port, when this is an IP CM service ID.
    pub fn ip_port(self) -> Option<u16> {
        self.is_ip().then_some(self.port())
    }

    pub fn protocol_name(self) -> Option<&'static str> {
        Some(match self.protocol() {
            0x06 => "TCP",
            0x11 => "UDP",
            0x3F => "IB",
            _ => return None,
        })
    }

    /// `keys`: the service ID, and for an IP CM one its prefix, protocol and destination port.
    fn visit<'a>(self, keys: [&'static str; 4], v: &mut impl Visitor<'a>) {
        let [id, prefix, protocol, port] = keys;
        let ip = self.is_ip();
        put(
            v,
            &[(id, "ServiceID", self.0, 16, ip.then_some("IP CM ServiceID"))],
        );
        if ip {
            #[rustfmt::skip]
            let fields: &[HexField] = &[
                (prefix, "Prefix", self.prefix(), 10, None),
                (protocol, "Protocol", self.protocol().into(), 2, self.protocol_name()),
                (port, "Destination Port", self.port().into(), 4, None),
            ];
            put(v, fields);
        }
    }
}

/// The RDMA IP CM private data (Annex A11): the first 36 private-data bytes of a REQ or SIDR_REQ to an IP
/// CM service ID; the consumer's own private data follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IpCm<'a> {
    pub major_version: u8,
    pub minor_version: u8,
    /// 4 or 6.
    pub ip_version: u8,
    /// The low 4 bits of byte 1.
    pub reserved: u8,
    pub src_port: u16,
    /// An IPv4 address is in the last 4 bytes, the first 12 zero.
    pub src_ip: [u8; 16],
    pub dst_ip: [u8; 16],
    pub consumer: &'a [u8],
}

/// Wireshark's names of an IP CM private data, in layout order: versions, IP version, reserved, source
/// port, IPv4 source and destination, IPv6 source and destination, consumer private data.
struct IpCmKeys([&'static str; 10]);

const REQ_IP_CM: IpCmKeys = IpCmKeys([
    "infiniband.cm.req.ip_cm.majv",
    "infiniband.cm.req.ip_cm.minv",
    "infiniband.cm.req.ip_cm.ipv",
    "infiniband.cm.req.ip_cm.reserved",
    "infiniband.cm.req.ip_cm.sport",
    "infiniband.cm.req.ip_cm.sip4",
    "infiniband.cm.req.ip_cm.dip4",
    "infiniband.cm.req.ip_cm.sip6",
    "infiniband.cm.req.ip_cm.dip6",
    "infiniband.cm.req.ip_cm.private",
]);

const SIDR_REQ_IP_CM: IpCmKeys = IpCmKeys([
    "rocescope.cm.sidr_req.ip_cm.majv",
    "rocescope.cm.sidr_req.ip_cm.minv",
    "rocescope.cm.sidr_req.ip_cm.ipv",
    "rocescope.cm.sidr_req.ip_cm.reserved",
    "rocescope.cm.sidr_req.ip_cm.sport",
    "rocescope.cm.sidr_req.ip_cm.sip4",
    "rocescope.cm.sidr_req.ip_cm.dip4",
    "rocescope.cm.sidr_req.ip_cm.sip6",
    "rocescope.cm.sidr_req.ip_cm.dip6",
    "rocescope.cm.sidr_req.ip_cm.private",
]);

impl<'a> IpCm<'a> {
    pub const LEN: usize = 36;

    /// Parses `private`, the whole private data: the consumer's part is the rest of it.
    pub fn parse(private: &'a [u8]) -> Result<Self, Malformed> {
        need(Layer::Cm, private, Self::LEN)?;
        let (consumer, (versions, ip, src_port, src_ip, dst_ip)) =
            (u8, u8, u16, array::<16>, array::<16>)
                .parse(private)
                .map_err(short(Layer::Cm, Self::LEN, private))?;
        Ok(IpCm {
            major_version: versions >> 4,
            minor_version: versions & 0x0F,
            ip_version: ip >> 4,
            reserved: ip & 0x0F,
            src_port,
            src_ip,
            dst_ip,
            consumer,
        })
    }

    /// An IPv4 address in the form the header holds it (12 zero bytes, then the address).
    pub fn v4(addr: [u8; 4]) -> [u8; 16] {
        let [a, b, c, d] = addr;
        [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, a, b, c, d]
    }

    pub fn emit(&self, out: &mut Vec<u8>) {
        out.push((self.major_version << 4) | (self.minor_version & 0x0F));
        out.push((self.ip_version << 4) | (self.reserved & 0x0F));
        out.extend_from_slice(&self.src_port.to_be_bytes());
        out.extend_from_slice(&self.src_ip);
        out.extend_from_slice(&self.dst_ip);
        out.extend_from_slice(self.consumer);
    }

    /// The source address (IPv4 when the IP version says 4).
    pub fn src(&self) -> IpAddr {
        self.addr(self.src_ip)
    }

    pub fn dst(&self) -> IpAddr {
        self.addr(self.dst_ip)
    }

    fn addr(&self, a: [u8; 16]) -> IpAddr {
        match a {
            [.., w, x, y, z] if self.ip_version == 4 => Ipv4Addr::new(w, x, y, z).into(),
            _ => Ipv6Addr::from(a).into(),
        }
    }

    fn visit(&self, keys: &IpCmKeys, v: &mut impl Visitor<'a>) {
        let [
            majv,
            minv,
            ipv,
            reserved,
            sport,
            sip4,
            dip4,
            sip6,
            dip6,
            private,
        ] = keys.0;
        #[rustfmt::skip]
        let fields: &[HexField] = &[
            (majv, "IP CM Major Version", self.major_version.into(), 1, None),
            (minv, "IP CM Minor Version", self.minor_version.into(), 1, None),
            (ipv, "IP CM IP Version", self.ip_version.into(), 1, None),
            (reserved, "IP CM Reserved", self.reserved.into(), 1, None),
            (sport, "IP CM Source Port", self.src_port.into(), 4, None),
        ];
        put(v, fields);
        let value = |a| match a {
            IpAddr::V4(a) => Value::Ipv4(a.octets()),
            IpAddr::V6(a) => Value::Ipv6(a.octets()),
        };
        let v4 = self.ip_version == 4;
        let (src, dst) = if v4 { (sip4, dip4) } else { (sip6, dip6) };
        v.field(Field::new(src, "IP CM Source IP", value(self.src())));
        v.field(Field::new(dst, "IP CM Destination IP", value(self.dst())));
        put_bytes(v, private, "IP CM Consumer PrivateData", self.consumer);
    }
}

/// One path of a REQ (primary or alternate, 44 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Path {
    pub local_lid: u16,
    pub remote_lid: u16,
    pub local_gid: [u8; 16],
    pub remote_gid: [u8; 16],
    /// 20 bits.
    pub flow_label: u32,
    /// 6 bits between the flow label and the packet rate.
    pub reserved0: u8,
    /// 6 bits: the static rate code.
    pub packet_rate: u8,
    pub traffic_class: u8,
    pub hop_limit: u8,
    /// 4 bits.
    pub sl: u8,
    pub subnet_local: bool,
    /// The low 3 bits after the subnet-local bit.
    pub reserved1: u8,
    /// 5 bits: 4.096 µs × 2^n.
    pub local_ack_timeout: u8,
    /// The low 3 bits of the last byte.
    pub reserved2: u8,
}

/// Wireshark's names of a path, in layout order: LIDs, GIDs, flow label, reserved, packet rate,
/// traffic class, hop limit, SL, subnet local, reserved, local ACK timeout, reserved; and the GIDs' names
/// when they hold IPv4 addresses.
struct PathKeys {
    fields: [(&'static str, &'static str); 14],
    ipv4_gids: Option<[(&'static str, &'static str); 2]>,
}

const PRIMARY: PathKeys = PathKeys {
    fields: [
        ("infiniband.cm.req.prim_locallid", "Primary Local Port LID"),
        (
            "infiniband.cm.req.prim_remotelid",
            "Primary Remote Port LID",
        ),
        ("infiniband.cm.req.prim_localgid", "Primary Local Port GID"),
        (
            "infiniband.cm.req.prim_remotegid",
            "Primary Remote Port GID",
        ),
        ("infiniband.cm.req.prim_flowlabel", "Primary Flow Label"),
        ("infiniband.cm.req.prim_reserved0", "Reserved"),
        ("infiniband.cm.req.prim_pktrate", "Primary Packet Rate"),
        ("infiniband.cm.req.prim_tfcclass", "Primary Traffic Class"),
        ("infiniband.cm.req.prim_hoplim", "Primary Hop Limit"),
        ("infiniband.cm.req.prim_sl", "Primary SL"),
        ("infiniband.cm.req.prim_subnetlocal", "Primary Subnet Local"),
        ("infiniband.cm.req.prim_reserved1", "Reserved"),
        (
            "infiniband.cm.req.prim_localacktout",
            "Primary Local ACK Timeout",
        ),
        ("infiniband.cm.req.prim_reserved2", "Reserved"),
    ],
    ipv4_gids: Some([
        (
            "infiniband.cm.req.prim_localgid_ipv4",
            "Primary Local Port GID",
        ),
        (
            "infiniband.cm.req.prim_remotegid_ipv4",
            "Primary Remote Port GID",
        ),
    ]),
};

/// Wireshark 4.0 shows the alternate GIDs as bytes (rocescope: as IPv6 addresses), and names the last
/// reserved bits like the ones before (rocescope: `alt_reserved2`).
const ALTERNATE: PathKeys = PathKeys {
    fields: [
        ("infiniband.cm.req.alt_locallid", "Alternate Local Port LID"),
        (
            "infiniband.cm.req.alt_remotelid",
            "Alternate Remote Port LID",
        ),
        ("infiniband.cm.req.alt_localgid", "Alternate Local Port GID"),
        (
            "infiniband.cm.req.alt_remotegid",
            "Alternate Remote Port GID",
        ),
        ("infiniband.cm.req.alt_flowlabel", "Alternate Flow Label"),
        ("infiniband.cm.req.alt_reserved0", "Reserved"),
        ("infiniband.cm.req.alt_pktrate", "Alternate Packet Rate"),
        ("infiniband.cm.req.alt_tfcclass", "Alternate Traffic Class"),
        ("infiniband.cm.req.alt_hoplim", "Alternate Hop Limit"),
        ("infiniband.cm.req.alt_sl", "Alternate SL"),
        (
            "infiniband.cm.req.alt_subnetlocal",
            "Alternate Subnet Local",
        ),
        ("infiniband.cm.req.alt_reserved1", "Reserved"),
        (
            "infiniband.cm.req.alt_localacktout",
            "Alternate Local ACK Timeout",
        ),
        ("rocescope.cm.req.alt_reserved2", "Reserved"),
    ],
    ipv4_gids: None,
};

impl Path {
    pub const LEN: usize = 44;

    fn parse(i: In) -> Res<Path> {
        let (
            rest,
            (
                local_lid,
                remote_lid,
                local_gid,
                remote_gid,
                flow,
                traffic_class,
                hop_limit,
                sl_byte,
                ack,
            ),
        ) = (u16, u16, array::<16>, array::<16>, u32, u8, u8, u8, u8).parse(i)?;
        let path = Path {
            local_lid,
            remote_lid,
            local_gid,
            remote_gid,
            flow_label: flow >> 12,
            reserved0: ((flow >> 6) & 0x3F) as u8,
            packet_rate: (flow & 0x3F) as u8,
            traffic_class,
            hop_limit,
            sl: sl_byte >> 4,
            subnet_local: sl_byte & 0x08 != 0,
            reserved1: sl_byte & 0x07,
            local_ack_timeout: ack >> 3,
            reserved2: ack & 0x07,
        };
        Ok((rest, path))
    }

    fn emit(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.local_lid.to_be_bytes());
        out.extend_from_slice(&self.remote_lid.to_be_bytes());
        out.extend_from_slice(&self.local_gid);
        out.extend_from_slice(&self.remote_gid);
        let flow = ((self.flow_label & 0xF_FFFF) << 12)
            | (u32::from(self.reserved0 & 0x3F) << 6)
            | u32::from(self.packet_rate & 0x3F);
        out.extend_from_slice(&flow.to_be_bytes());
        out.push(self.traffic_class);
        out.push(self.hop_limit);
        out.push((self.sl << 4) | (u8::from(self.subnet_local) << 3) | (self.reserved1 & 0x07));
        out.push((self.local_ack_timeout << 3) | (self.reserved2 & 0x07));
    }

    fn visit<'a>(&self, keys: &PathKeys, v: &mut impl Visitor<'a>) {
        let [
            llid,
            rlid,
            lgid,
            rgid,
            flow,
            res0,
            rate,
            tc,
            hop,
            sl,
            subnet,
            res1,
            ack,
            res2,
        ] = keys.fields;
        v.field(Field::new(
            llid.0,
            llid.1,
            Value::Uint(self.local_lid.into()),
        ));
        v.field(Field::new(
            rlid.0,
            rlid.1,
            Value::Uint(self.remote_lid.into()),
        ));
        let [lgid4, rgid4] = keys
            .ipv4_gids
            .map_or([None, None], |[l, r]| [Some(l), Some(r)]);
        for (gid, v6, v4) in [
            (self.local_gid, lgid, lgid4),
            (self.remote_gid, rgid, rgid4),
        ] {
            let (key, value) = match (ipv4_mapped(gid), v4) {
                (Some(addr), Some(key)) => (key, Value::Ipv4(addr)),
                _ => (v6, Value::Ipv6(gid)),
            };
            v.field(Field::new(key.0, key.1, value));
        }
        #[rustfmt::skip]
        let fields: &[HexField] = &[
            (flow.0, flow.1, self.flow_label.into(), 5, None),
            (res0.0, res0.1, self.reserved0.into(), 2, None),
            (rate.0, rate.1, self.packet_rate.into(), 2, rate_name(self.packet_rate)),
            (tc.0, tc.1, self.traffic_class.into(), 2, None),
            (hop.0, hop.1, self.hop_limit.into(), 2, None),
            (sl.0, sl.1, self.sl.into(), 1, None),
            (subnet.0, subnet.1, self.subnet_local.into(), 1, None),
            (res1.0, res1.1, self.reserved1.into(), 1, None),
            (ack.0, ack.1, self.local_ack_timeout.into(), 2, None),
            (res2.0, res2.1, self.reserved2.into(), 1, None),
        ];
        put(v, fields);
    }
}

/// REQ (table 106): the active side asks to connect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Req<'a> {
    pub local_comm_id: u32,
    /// Bytes 4-7.
    pub reserved0: u32,
    pub service_id: ServiceId,
    pub local_ca_guid: u64,
    /// Bytes 24-27.
    pub reserved1: u32,
    pub local_qkey: u32,
    pub local_qpn: u32,
    pub responder_resources: u8,
    pub local_eecn: u32,
    pub initiator_depth: u8,
    pub remote_eecn: u32,
    /// 5 bits: 4.096 µs × 2^n.
    pub remote_cm_response_timeout: u8,
    /// 2 bits: 0 RC, 1 UC, 2 RD.
    pub transport_service_type: u8,
    pub end_to_end_flow_control: bool,
    /// The first PSN the active side's QP expects: the passive side sends from it (as every REQ in the
    /// corpus shows; the REP's starting PSN is the active side's first).
    pub starting_psn: u32,
    pub local_cm_response_timeout: u8,
    /// 3 bits.
    pub retry_count: u8,
    pub pkey: u16,
    /// 4 bits: 1 = 256 bytes ... 5 = 4096 bytes.
    pub path_mtu: u8,
    pub rdc_exists: bool,
    pub rnr_retry_count: u8,
    /// 4 bits.
    pub max_cm_retries: u8,
    pub srq: bool,
    /// 3 bits.
    pub extended_transport: u8,
    pub primary: Path,
    pub alternate: Path,
    /// 92 bytes (RDMA CM: the IP CM private data, [`Req::ip_cm`]).
    pub private: &'a [u8],
}

impl<'a> Req<'a> {
    pub const PRIVATE_LEN: usize = 92;

    fn parse(data: &'a [u8]) -> Result<Self, Malformed> {
        let ids = (u32, u32, u64, u64, u32, u32, u24, u8, u24, u8, u24, u8);
        let flags = (u24, u8, u16, u8, u8);
        let tail = (Path::parse, Path::parse, bytes(Self::PRIVATE_LEN));
        let (_, (ids, flags, tail)) =
            (ids, flags, tail)
                .parse(data)
                .map_err(short(Layer::Cm, CmMessage::LEN, data))?;
        let (
            local_comm_id,
            reserved0,
            sid,
            local_ca_guid,
            reserved1,
            local_qkey,
            local_qpn,
            responder_resources,
            local_eecn,
            initiator_depth,
            remote_eecn,
            b43,
        ) = ids;
        let (starting_psn, b47, pkey, b50, b51) = flags;
        let (primary, alternate, private) = tail;
        Ok(Req {
            local_comm_id,
            reserved0,
            service_id: ServiceId(sid),
            local_ca_guid,
            reserved1,
            local_qkey,
            local_qpn,
            responder_resources,
            local_eecn,
            initiator_depth,
            remote_eecn,
            remote_cm_response_timeout: b43 >> 3,
            transport_service_type: (b43 >> 1) & 3,
            end_to_end_flow_control: b43 & 1 != 0,
            starting_psn,
            local_cm_response_timeout: b47 >> 3,
            retry_count: b47 & 7,
            pkey,
            path_mtu: b50 >> 4,
            rdc_exists: b50 & 0x08 != 0,
            rnr_retry_count: b50 & 7,
            max_cm_retries: b51 >> 4,
            srq: b51 & 0x08 != 0,
            extended_transport: b51 & 7,
            primary,
            alternate,
            private,
        })
    }

    fn emit(&self, out: &mut Vec<u8>) {
        for word in [self.local_comm_id, self.reserved0] {
            out.extend_from_slice(&word.to_be_bytes());
        }
        out.extend_from_slice(&self.service_id.0.to_be_bytes());
        out.extend_from_slice(&self.local_ca_guid.to_be_bytes());
        out.extend_from_slice(&self.reserved1.to_be_bytes());
        out.extend_from_slice(&self.local_qkey.to_be_bytes());
        put_u24(out, self.local_qpn);
        out.push(self.responder_resources);
        put_u24(out, self.local_eecn);
        out.push(self.initiator_depth);
        put_u24(out, self.remote_eecn);
        out.push(
            (self.remote_cm_response_timeout << 3)
                | ((self.transport_service_type & 3) << 1)
                | u8::from(self.end_to_end_flow_control),
        );
        put_u24(out, self.starting_psn);
        out.push((self.local_cm_response_timeout << 3) | (self.retry_count & 7));
        out.extend_from_slice(&self.pkey.to_be_bytes());
        out.push(
            (self.path_mtu << 4) | (u8::from(self.rdc_exists) << 3) | (self.rnr_retry_count & 7),
        );
        out.push(
            (self.max_cm_retries << 4) | (u8::from(self.srq) << 3) | (self.extended_transport & 7),
        );
        self.primary.emit(out);
        self.alternate.emit(out);
        put_field(out, self.private, Self::PRIVATE_LEN);
    }

    /// The RDMA IP CM private data, when the service ID is an IP CM one.
    pub fn ip_cm(&self) -> Option<IpCm<'a>> {
        if self.service_id.is_ip() {
            IpCm::parse(self.private).ok()
        } else {
            None
        }
    }

    fn visit(&self, v: &mut impl Visitor<'a>) {
        let id = self.local_comm_id.into();
        put(
            v,
            &[("infiniband.cm.req", "Local Communication ID", id, 8, None)],
        );
        self.service_id.visit(
            [
                "infiniband.cm.req.serviceid",
                "infiniband.cm.req.serviceid.prefix",
                "infiniband.cm.req.serviceid.protocol",
                "infiniband.cm.req.serviceid.dport",
            ],
            v,
        );
        let transport = match self.transport_service_type {
            0 => "RC",
            1 => "UC",
            2 => "RD",
            _ => "reserved",
        };
        #[rustfmt::skip]
        let fields: &[HexField] = &[
            ("infiniband.cm.req.localcaguid", "Local CA GUID", self.local_ca_guid, 16, None),
            ("infiniband.cm.req.localqkey", "Local Q_Key", self.local_qkey.into(), 8, None),
            ("infiniband.cm.req.localqpn", "Local QPN", self.local_qpn.into(), 6, None),
            ("infiniband.cm.req.responderres", "Responder Resources", self.responder_resources.into(), 2, None),
            ("infiniband.cm.req.localeecn", "Local EECN", self.local_eecn.into(), 6, None),
            ("infiniband.cm.req.initdepth", "Initiator Depth", self.initiator_depth.into(), 2, None),
            ("infiniband.cm.req.remoteeecn", "Remote EECN", self.remote_eecn.into(), 6, None),
            ("infiniband.cm.req.remoteresptout", "Remote CM Response Timeout", self.remote_cm_response_timeout.into(), 2, None),
            ("infiniband.cm.req.transpsvctype", "Transport Service Type", self.transport_service_type.into(), 1, Some(transport)),
            ("infiniband.cm.req.e2eflowctrl", "End-to-End Flow Control", self.end_to_end_flow_control.into(), 1, None),
            ("infiniband.cm.req.startpsn", "Starting PSN", self.starting_psn.into(), 6, None),
            ("infiniband.cm.req.localresptout", "Local CM Response Timeout", self.local_cm_response_timeout.into(), 2, None),
            ("infiniband.cm.req.retrcount", "Retry Count", self.retry_count.into(), 1, None),
            ("infiniband.cm.req.pkey", "Partition Key", self.pkey.into(), 4, None),
            ("infiniband.cm.req.pppmtu", "Path Packet Payload MTU", self.path_mtu.into(), 1, mtu_name(self.path_mtu)),
            ("infiniband.cm.req.rdcexist", "RDC Exists", self.rdc_exists.into(), 1, None),
            ("infiniband.cm.req.rnrretrcount", "RNR Retry Count", self.rnr_retry_count.into(), 1, None),
            ("infiniband.cm.req.maxcmretr", "Max CM Retries", self.max_cm_retries.into(), 1, None),
            ("infiniband.cm.req.srq", "SRQ", self.srq.into(), 1, None),
            ("infiniband.cm.req.ext_transport", "Extended Transport", self.extended_transport.into(), 1, None),
        ];
        put(v, fields);
        self.primary.visit(&PRIMARY, v);
        self.alternate.visit(&ALTERNATE, v);
        match self.ip_cm() {
            Some(ip) => ip.visit(&REQ_IP_CM, v),
            None => put_bytes(v, "infiniband.cm.req.private", "PrivateData", self.private),
        }
    }
}

/// MRA (table 107): message receipt acknowledged, the answer will take longer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Mra<'a> {
    pub local_comm_id: u32,
    pub remote_comm_id: u32,
    /// 2 bits: 0 REQ, 1 REP, 2 LAP.
    pub message_mraed: u8,
    /// The low 6 bits of byte 8.
    pub reserved0: u8,
    /// 5 bits: the sender needs 4.096 µs × 2^n more.
    pub service_timeout: u8,
    /// The low 3 bits of byte 9.
    pub reserved1: u8,
    /// 222 bytes.
    pub private: &'a [u8],
}

impl<'a> Mra<'a> {
    pub const PRIVATE_LEN: usize = 222;

    fn parse(data: &'a [u8]) -> Result<Self, Malformed> {
        let (_, (local_comm_id, remote_comm_id, b8, b9, private)) =
            (u32, u32, u8, u8, bytes(Self::PRIVATE_LEN))
                .parse(data)
                .map_err(short(Layer::Cm, CmMessage::LEN, data))?;
        Ok(Mra {
            local_comm_id,
            remote_comm_id,
            message_mraed: b8 >> 6,
            reserved0: b8 & 0x3F,
            service_timeout: b9 >> 3,
            reserved1: b9 & 7,
            private,
        })
    }

    fn emit(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.local_comm_id.to_be_bytes());
        out.extend_from_slice(&self.remote_comm_id.to_be_bytes());
        out.push((self.message_mraed << 6) | (self.reserved0 & 0x3F));
        out.push((self.service_timeout << 3) | (self.reserved1 & 7));
        put_field(out, self.private, Self::PRIVATE_LEN);
    }

    /// The 2-bit message code as a name: REQ, REP or LAP.
    pub fn message_name(&self) -> &'static str {
        message_name(self.message_mraed, "LAP")
    }

    fn visit(&self, v: &mut impl Visitor<'a>) {
        #[rustfmt::skip]
        let fields: &[HexField] = &[
            ("rocescope.cm.mra.localcommid", "Local Communication ID", self.local_comm_id.into(), 8, None),
            ("rocescope.cm.mra.remotecommid", "Remote Communication ID", self.remote_comm_id.into(), 8, None),
            ("rocescope.cm.mra.msgmraed", "Message MRAed", self.message_mraed.into(), 1, Some(self.message_name())),
            ("rocescope.cm.mra.reserved0", "Reserved", self.reserved0.into(), 2, None),
            ("rocescope.cm.mra.servicetimeout", "Service Timeout", self.service_timeout.into(), 2, None),
            ("rocescope.cm.mra.reserved1", "Reserved", self.reserved1.into(), 1, None),
        ];
        put(v, fields);
        put_bytes(v, "rocescope.cm.mra.private", "PrivateData", self.private);
    }
}

/// REJ (table 108): a REQ or REP refused, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Rej<'a> {
    pub local_comm_id: u32,
    pub remote_comm_id: u32,
    /// 2 bits: 0 REQ, 1 REP, 2 no message (a connection not yet or no longer known).
    pub message_rejected: u8,
    /// The low 6 bits of byte 8.
    pub reserved0: u8,
    /// 7 bits: how many ARI bytes are meaningful (at most 72).
    pub reject_info_length: u8,
    /// The low bit of byte 9.
    pub reserved1: u8,
    /// [`reject_reason_name`].
    pub reason: u16,
    /// Additional reject information, 72 bytes.
    pub ari: &'a [u8],
    /// 148 bytes.
    pub private: &'a [u8],
}

impl<'a> Rej<'a> {
    pub const ARI_LEN: usize = 72;
    pub const PRIVATE_LEN: usize = 148;

    fn parse(data: &'a [u8]) -> Result<Self, Malformed> {
        let (_, (local_comm_id, remote_comm_id, b8, b9, reason, ari, private)) = (
            u32,
            u32,
            u8,
            u8,
            u16,
            bytes(Self::ARI_LEN),
            bytes(Self::PRIVATE_LEN),
        )
            .parse(data)
            .map_err(short(Layer::Cm, CmMessage::LEN, data))?;
        let rej = Rej {
            local_comm_id,
            remote_comm_id,
            message_rejected: b8 >> 6,
            reserved0: b8 & 0x3F,
            reject_info_length: b9 >> 1,
            reserved1: b9 & 1,
            reason,
            ari,
            private,
        };
        length_fits(rej.reject_info_length, Self::ARI_LEN)?;
        Ok(rej)
    }

    fn emit(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.local_comm_id.to_be_bytes());
        out.extend_from_slice(&self.remote_comm_id.to_be_bytes());
        out.push((self.message_rejected << 6) | (self.reserved0 & 0x3F));
        out.push((self.reject_info_length << 1) | (self.reserved1 & 1));
        out.extend_from_slice(&self.reason.to_be_bytes());
        put_field(out, self.ari, Self::ARI_LEN);
        put_field(out, self.private, Self::PRIVATE_LEN);
    }

    pub fn reason_name(&self) -> Option<&'static str> {
        reject_reason_name(self.reason)
    }

    /// The 2-bit message code as a name: REQ, REP or "no message".
    pub fn message_name(&self) -> &'static str {
        message_name(self.message_rejected, "no message")
    }

    /// Wireshark 4.0 shows 2 of the 6 reserved bits of byte 8 (its mask is 0x03).
    fn visit(&self, v: &mut impl Visitor<'a>) {
        #[rustfmt::skip]
        let fields: &[HexField] = &[
            ("infiniband.cm.rej.localcommid", "Local Communication ID", self.local_comm_id.into(), 8, None),
            ("infiniband.cm.rej.remotecommid", "Remote Communication ID", self.remote_comm_id.into(), 8, None),
            ("infiniband.cm.rej.msgrej", "Message REJected", self.message_rejected.into(), 1, Some(self.message_name())),
            ("infiniband.cm.rej.reserved0", "Reserved", self.reserved0.into(), 2, None),
            ("infiniband.cm.rej.rejinfolen", "Reject Info Length", self.reject_info_length.into(), 2, None),
            ("infiniband.cm.rej.reserved1", "Reserved", self.reserved1.into(), 1, None),
            ("infiniband.cm.rej.reason", "Reason", self.reason.into(), 4, self.reason_name()),
        ];
        put(v, fields);
        put_bytes(
            v,
            "infiniband.cm.rej.ari",
            "Additional Reject Information (ARI)",
            self.ari,
        );
        put_bytes(v, "infiniband.cm.rej.private", "PrivateData", self.private);
    }
}

/// An information-length field must not claim more bytes than its 72-byte area.
fn length_fits(claimed: u8, area: usize) -> Result<(), Malformed> {
    let claimed = usize::from(claimed);
    if claimed > area {
        return Err(Malformed::new(
            Layer::Cm,
            MalformedKind::LengthBeyondFrame {
                claimed,
                available: area,
            },
        ));
    }
    Ok(())
}

/// REP (table 110): the passive side accepts, with its QP and first PSN.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Rep<'a> {
    pub local_comm_id: u32,
    pub remote_comm_id: u32,
    pub local_qkey: u32,
    pub local_qpn: u32,
    pub local_eecn: u32,
    /// The first PSN the passive side's QP expects: the active side sends from it.
    pub starting_psn: u32,
    /// The bytes after the QPN, the EECN and the PSN (15, 19, 23): reserved.
    pub reserved: [u8; 3],
    pub responder_resources: u8,
    pub initiator_depth: u8,
    /// 5 bits: 4.096 µs × 2^n.
    pub target_ack_delay: u8,
    /// 2 bits: 0 accepted, 1 not supported, 2 rejected.
    pub failover_accepted: u8,
    pub end_to_end_flow_control: bool,
    /// 3 bits.
    pub rnr_retry_count: u8,
    pub srq: bool,
    /// The low 4 bits of byte 27.
    pub reserved2: u8,
    pub local_ca_guid: u64,
    /// 196 bytes.
    pub private: &'a [u8],
}

impl<'a> Rep<'a> {
    pub const PRIVATE_LEN: usize = 196;

    fn parse(data: &'a [u8]) -> Result<Self, Malformed> {
        let ids = (u32, u32, u32, u24, u8, u24, u8, u24, u8);
        let rest = (u8, u8, u8, u8, u64, bytes(Self::PRIVATE_LEN));
        let (_, (ids, rest)) =
            (ids, rest)
                .parse(data)
                .map_err(short(Layer::Cm, CmMessage::LEN, data))?;
        let (
            local_comm_id,
            remote_comm_id,
            local_qkey,
            local_qpn,
            r15,
            local_eecn,
            r19,
            starting_psn,
            r23,
        ) = ids;
        let (responder_resources, initiator_depth, b26, b27, local_ca_guid, private) = rest;
        Ok(Rep {
            local_comm_id,
            remote_comm_id,
            local_qkey,
            local_qpn,
            local_eecn,
            starting_psn,
            reserved: [r15, r19, r23],
            responder_resources,
            initiator_depth,
            target_ack_delay: b26 >> 3,
            failover_accepted: (b26 >> 1) & 3,
            end_to_end_flow_control: b26 & 1 != 0,
            rnr_retry_count: b27 >> 5,
            srq: b27 & 0x10 != 0,
            reserved2: b27 & 0x0F,
            local_ca_guid,
            private,
        })
    }

    fn emit(&self, out: &mut Vec<u8>) {
        for word in [self.local_comm_id, self.remote_comm_id, self.local_qkey] {
            out.extend_from_slice(&word.to_be_bytes());
        }
        let [r15, r19, r23] = self.reserved;
        for (value, reserved) in [
            (self.local_qpn, r15),
            (self.local_eecn, r19),
            (self.starting_psn, r23),
        ] {
            put_u24(out, value);
            out.push(reserved);
        }
        out.push(self.responder_resources);
        out.push(self.initiator_depth);
        out.push(
            (self.target_ack_delay << 3)
                | ((self.failover_accepted & 3) << 1)
                | u8::from(self.end_to_end_flow_control),
        );
        out.push((self.rnr_retry_count << 5) | (u8::from(self.srq) << 4) | (self.reserved2 & 0x0F));
        out.extend_from_slice(&self.local_ca_guid.to_be_bytes());
        put_field(out, self.private, Self::PRIVATE_LEN);
    }

    fn visit(&self, v: &mut impl Visitor<'a>) {
        let failover = match self.failover_accepted {
            0 => "accepted",
            1 => "not supported",
            2 => "rejected",
            _ => "reserved",
        };
        #[rustfmt::skip]
        let fields: &[HexField] = &[
            ("infiniband.cm.rep", "Local Communication ID", self.local_comm_id.into(), 8, None),
            ("infiniband.cm.rep.remotecommid", "Remote Communication ID", self.remote_comm_id.into(), 8, None),
            ("infiniband.cm.rep.localqkey", "Local Q_Key", self.local_qkey.into(), 8, None),
            ("infiniband.cm.rep.localqpn", "Local QPN", self.local_qpn.into(), 6, None),
            ("infiniband.cm.rep.localeecn", "Local EE Context Number", self.local_eecn.into(), 6, None),
            ("infiniband.cm.rep.startpsn", "Starting PSN", self.starting_psn.into(), 6, None),
            ("infiniband.cm.rep.respres", "Responder Resources", self.responder_resources.into(), 2, None),
            ("infiniband.cm.rep.initdepth", "Initiator Depth", self.initiator_depth.into(), 2, None),
            ("infiniband.cm.rep.tgtackdelay", "Target ACK Delay", self.target_ack_delay.into(), 2, None),
            ("infiniband.cm.rep.failoveracc", "Failover Accepted", self.failover_accepted.into(), 1, Some(failover)),
            ("infiniband.cm.rep.e2eflowctrl", "End-To-End Flow Control", self.end_to_end_flow_control.into(), 1, None),
            ("infiniband.cm.rep.rnrretrcount", "RNR Retry Count", self.rnr_retry_count.into(), 1, None),
            ("infiniband.cm.rep.srq", "SRQ", self.srq.into(), 1, None),
            ("infiniband.cm.rep.reserved", "Reserved", self.reserved2.into(), 1, None),
            ("infiniband.cm.rep.localcaguid", "Local CA GUID", self.local_ca_guid, 16, None),
        ];
        put(v, fields);
        put_bytes(v, "infiniband.cm.rep.private", "PrivateData", self.private);
    }
}

/// RTU (table 111) and DREP (table 113): the two communication IDs and private data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CommIds<'a> {
    pub local_comm_id: u32,
    pub remote_comm_id: u32,
    /// 224 bytes.
    pub private: &'a [u8],
}

/// Wireshark's names of an RTU's or DREP's fields: local and remote communication IDs, private data.
type IdKeys = [&'static str; 3];

const RTU_KEYS: IdKeys = [
    "infiniband.cm.rtu.localcommid",
    "infiniband.cm.rtu.remotecommid",
    "infiniband.cm.rtu.private",
];

const DREP_KEYS: IdKeys = [
    "infiniband.cm.drsp.localcommid",
    "infiniband.cm.drsp.remotecommid",
    "infiniband.cm.drsp.private",
];

impl<'a> CommIds<'a> {
    pub const PRIVATE_LEN: usize = 224;

    fn parse(data: &'a [u8]) -> Result<Self, Malformed> {
        let (_, (local_comm_id, remote_comm_id, private)) = (u32, u32, bytes(Self::PRIVATE_LEN))
            .parse(data)
            .map_err(short(Layer::Cm, CmMessage::LEN, data))?;
        Ok(CommIds {
            local_comm_id,
            remote_comm_id,
            private,
        })
    }

    fn emit(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.local_comm_id.to_be_bytes());
        out.extend_from_slice(&self.remote_comm_id.to_be_bytes());
        put_field(out, self.private, Self::PRIVATE_LEN);
    }

    fn visit(&self, keys: IdKeys, v: &mut impl Visitor<'a>) {
        let [local, remote, private] = keys;
        #[rustfmt::skip]
        let fields: &[HexField] = &[
            (local, "Local Communication ID", self.local_comm_id.into(), 8, None),
            (remote, "Remote Communication ID", self.remote_comm_id.into(), 8, None),
        ];
        put(v, fields);
        put_bytes(v, private, "PrivateData", self.private);
    }
}

/// DREQ (table 112): one side disconnects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Dreq<'a> {
    pub local_comm_id: u32,
    pub remote_comm_id: u32,
    /// The QP (or EE context) of the side receiving the DREQ.
    pub remote_qpn_eecn: u32,
    /// Byte 11.
    pub reserved: u8,
    /// 220 bytes.
    pub private: &'a [u8],
}

impl<'a> Dreq<'a> {
    pub const PRIVATE_LEN: usize = 220;

    fn parse(data: &'a [u8]) -> Result<Self, Malformed> {
        let (_, (local_comm_id, remote_comm_id, remote_qpn_eecn, reserved, private)) =
            (u32, u32, u24, u8, bytes(Self::PRIVATE_LEN))
                .parse(data)
                .map_err(short(Layer::Cm, CmMessage::LEN, data))?;
        Ok(Dreq {
            local_comm_id,
            remote_comm_id,
            remote_qpn_eecn,
            reserved,
            private,
        })
    }

    fn emit(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.local_comm_id.to_be_bytes());
        out.extend_from_slice(&self.remote_comm_id.to_be_bytes());
        put_u24(out, self.remote_qpn_eecn);
        out.push(self.reserved);
        put_field(out, self.private, Self::PRIVATE_LEN);
    }

    fn visit(&self, v: &mut impl Visitor<'a>) {
        // Wireshark files the remote QPN under `req`.
        #[rustfmt::skip]
        let fields: &[HexField] = &[
            ("infiniband.cm.dreq.localcommid", "Local Communication ID", self.local_comm_id.into(), 8, None),
            ("infiniband.cm.dreq.remotecommid", "Remote Communication ID", self.remote_comm_id.into(), 8, None),
            ("infiniband.cm.req.remoteqpneecn", "Remote QPN/EECN", self.remote_qpn_eecn.into(), 6, None),
        ];
        put(v, fields);
        put_bytes(v, "infiniband.cm.dreq.private", "PrivateData", self.private);
    }
}

/// SIDR_REQ (table 119): which QP serves this service ID (UD; RDMA CM's UDP port space).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SidrReq<'a> {
    pub request_id: u32,
    pub pkey: u16,
    /// Bytes 6-7.
    pub reserved: u16,
    pub service_id: ServiceId,
    /// 216 bytes (RDMA CM: the IP CM private data, [`SidrReq::ip_cm`]).
    pub private: &'a [u8],
}

impl<'a> SidrReq<'a> {
    pub const PRIVATE_LEN: usize = 216;

    fn parse(data: &'a [u8]) -> Result<Self, Malformed> {
        let (_, (request_id, pkey, reserved, sid, private)) =
            (u32, u16, u16, u64, bytes(Self::PRIVATE_LEN))
                .parse(data)
                .map_err(short(Layer::Cm, CmMessage::LEN, data))?;
        Ok(SidrReq {
            request_id,
            pkey,
            reserved,
            service_id: ServiceId(sid),
            private,
        })
    }

    fn emit(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.request_id.to_be_bytes());
        out.extend_from_slice(&self.pkey.to_be_bytes());
        out.extend_from_slice(&self.reserved.to_be_bytes());
        out.extend_from_slice(&self.service_id.0.to_be_bytes());
        put_field(out, self.private, Self::PRIVATE_LEN);
    }

    /// The RDMA IP CM private data, when the service ID is an IP CM one.
    pub fn ip_cm(&self) -> Option<IpCm<'a>> {
        if self.service_id.is_ip() {
            IpCm::parse(self.private).ok()
        } else {
            None
        }
    }

    fn visit(&self, v: &mut impl Visitor<'a>) {
        #[rustfmt::skip]
        let fields: &[HexField] = &[
            ("rocescope.cm.sidr_req.requestid", "Request ID", self.request_id.into(), 8, None),
            ("rocescope.cm.sidr_req.pkey", "Partition Key", self.pkey.into(), 4, None),
            ("rocescope.cm.sidr_req.reserved", "Reserved", self.reserved.into(), 4, None),
        ];
        put(v, fields);
        self.service_id.visit(
            [
                "rocescope.cm.sidr_req.serviceid",
                "rocescope.cm.sidr_req.serviceid.prefix",
                "rocescope.cm.sidr_req.serviceid.protocol",
                "rocescope.cm.sidr_req.serviceid.dport",
            ],
            v,
        );
        match self.ip_cm() {
            Some(ip) => ip.visit(&SIDR_REQ_IP_CM, v),
            None => put_bytes(
                v,
                "rocescope.cm.sidr_req.private",
                "PrivateData",
                self.private,
            ),
        }
    }
}

/// SIDR_REP (table 120): the QP and Q_Key that serve the service ID, or why not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SidrRep<'a> {
    pub request_id: u32,
    /// [`sidr_status_name`].
    pub status: u8,
    /// How many additional-information bytes are meaningful (at most 72).
    pub additional_info_length: u8,
    /// Bytes 6-7.
    pub reserved0: u16,
    pub qpn: u32,
    /// Byte 11.
    pub reserved1: u8,
    pub service_id: ServiceId,
    pub qkey: u32,
    /// 72 bytes (a ClassPortInfo on a redirect).
    pub additional_info: &'a [u8],
    /// 136 bytes.
    pub private: &'a [u8],
}

impl<'a> SidrRep<'a> {
    pub const INFO_LEN: usize = 72;
    pub const PRIVATE_LEN: usize = 136;

    fn parse(data: &'a [u8]) -> Result<Self, Malformed> {
        let fields = (u32, u8, u8, u16, u24, u8, u64, u32);
        let tail = (bytes(Self::INFO_LEN), bytes(Self::PRIVATE_LEN));
        let (_, (fields, (additional_info, private))) = (fields, tail)
            .parse(data)
            .map_err(short(Layer::Cm, CmMessage::LEN, data))?;
        let (request_id, status, additional_info_length, reserved0, qpn, reserved1, sid, qkey) =
            fields;
        length_fits(additional_info_length, Self::INFO_LEN)?;
        Ok(SidrRep {
            request_id,
            status,
            additional_info_length,
            reserved0,
            qpn,
            reserved1,
            service_id: ServiceId(sid),
            qkey,
            additional_info,
            private,
        })
    }

    fn emit(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.request_id.to_be_bytes());
        out.push(self.status);
        out.push(self.additional_info_length);
        out.extend_from_slice(&self.reserved0.to_be_bytes());
        put_u24(out, self.qpn);
        out.push(self.reserved1);
        out.extend_from_slice(&self.service_id.0.to_be_bytes());
        out.extend_from_slice(&self.qkey.to_be_bytes());
        put_field(out, self.additional_info, Self::INFO_LEN);
        put_field(out, self.private, Self::PRIVATE_LEN);
    }

    pub fn status_name(&self) -> Option<&'static str> {
        sidr_status_name(self.status)
    }

    fn visit(&self, v: &mut impl Visitor<'a>) {
        #[rustfmt::skip]
        let fields: &[HexField] = &[
            ("rocescope.cm.sidr_rep.requestid", "Request ID", self.request_id.into(), 8, None),
            ("rocescope.cm.sidr_rep.status", "Status", self.status.into(), 2, self.status_name()),
            ("rocescope.cm.sidr_rep.addinfolen", "Additional Information Length", self.additional_info_length.into(), 2, None),
            ("rocescope.cm.sidr_rep.reserved0", "Reserved", self.reserved0.into(), 4, None),
            ("rocescope.cm.sidr_rep.qpn", "QPN", self.qpn.into(), 6, None),
            ("rocescope.cm.sidr_rep.reserved1", "Reserved", self.reserved1.into(), 2, None),
            ("rocescope.cm.sidr_rep.serviceid", "ServiceID", self.service_id.0, 16, None),
            ("rocescope.cm.sidr_rep.qkey", "Q_Key", self.qkey.into(), 8, None),
        ];
        put(v, fields);
        put_bytes(
            v,
            "rocescope.cm.sidr_rep.addinfo",
            "Additional Information",
            self.additional_info,
        );
        put_bytes(
            v,
            "rocescope.cm.sidr_rep.private",
            "PrivateData",
            self.private,
        );
    }
}

/// A CM message, by attribute ID.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmMessage<'a> {
    Req(Req<'a>),
    Mra(Mra<'a>),
    Rej(Rej<'a>),
    Rep(Rep<'a>),
    Rtu(CommIds<'a>),
    Dreq(Dreq<'a>),
    Drep(CommIds<'a>),
    SidrReq(SidrReq<'a>),
    SidrRep(SidrRep<'a>),
    /// An attribute rocescope does not decode (ClassPortInfo, LAP, APR, ...): its 232 bytes.
    Other {
        attribute_id: u16,
        data: &'a [u8],
    },
}

impl<'a> CmMessage<'a> {
    /// The data area of a MAD.
    pub const LEN: usize = 232;

    /// Parses the 232 data bytes of a CM MAD with this attribute ID.
    pub fn parse(attribute_id: u16, data: &'a [u8]) -> Result<Self, Malformed> {
        need(Layer::Cm, data, Self::LEN)?;
        Ok(match attribute_id {
            ATTR_REQ => CmMessage::Req(Req::parse(data)?),
            ATTR_MRA => CmMessage::Mra(Mra::parse(data)?),
            ATTR_REJ => CmMessage::Rej(Rej::parse(data)?),
            ATTR_REP => CmMessage::Rep(Rep::parse(data)?),
            ATTR_RTU => CmMessage::Rtu(CommIds::parse(data)?),
            ATTR_DREQ => CmMessage::Dreq(Dreq::parse(data)?),
            ATTR_DREP => CmMessage::Drep(CommIds::parse(data)?),
            ATTR_SIDR_REQ => CmMessage::SidrReq(SidrReq::parse(data)?),
            ATTR_SIDR_REP => CmMessage::SidrRep(SidrRep::parse(data)?),
            _ => CmMessage::Other {
                attribute_id,
                data: data.get(..Self::LEN).unwrap_or(data),
            },
        })
    }

    pub fn attribute_id(&self) -> u16 {
        match self {
            CmMessage::Req(_) => ATTR_REQ,
            CmMessage::Mra(_) => ATTR_MRA,
            CmMessage::Rej(_) => ATTR_REJ,
            CmMessage::Rep(_) => ATTR_REP,
            CmMessage::Rtu(_) => ATTR_RTU,
            CmMessage::Dreq(_) => ATTR_DREQ,
            CmMessage::Drep(_) => ATTR_DREP,
            CmMessage::SidrReq(_) => ATTR_SIDR_REQ,
            CmMessage::SidrRep(_) => ATTR_SIDR_REP,
            CmMessage::Other { attribute_id, .. } => *attribute_id,
        }
    }

    /// Wireshark's name of the message (`ConnectRequest`, ...).
    pub fn name(&self) -> &'static str {
        attribute_name(self.attribute_id())
    }

    /// The 232 data bytes (private data cut or zero-filled to its field).
    pub fn emit(&self, out: &mut Vec<u8>) {
        match self {
            CmMessage::Req(m) => m.emit(out),
            CmMessage::Mra(m) => m.emit(out),
            CmMessage::Rej(m) => m.emit(out),
            CmMessage::Rep(m) => m.emit(out),
            CmMessage::Rtu(m) | CmMessage::Drep(m) => m.emit(out),
            CmMessage::Dreq(m) => m.emit(out),
            CmMessage::SidrReq(m) => m.emit(out),
            CmMessage::SidrRep(m) => m.emit(out),
            CmMessage::Other { data, .. } => put_field(out, data, Self::LEN),
        }
    }

    pub fn visit(&self, offset: usize, v: &mut impl Visitor<'a>) {
        v.header(attribute(self.attribute_id()).1, offset, Self::LEN);
        match self {
            CmMessage::Req(m) => m.visit(v),
            CmMessage::Mra(m) => m.visit(v),
            CmMessage::Rej(m) => m.visit(v),
            CmMessage::Rep(m) => m.visit(v),
            CmMessage::Rtu(m) => m.visit(RTU_KEYS, v),
            CmMessage::Dreq(m) => m.visit(v),
            CmMessage::Drep(m) => m.visit(DREP_KEYS, v),
            CmMessage::SidrReq(m) => m.visit(v),
            CmMessage::SidrRep(m) => m.visit(v),
            CmMessage::Other { .. } => {}
        }
    }
}
