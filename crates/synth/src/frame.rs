//! The frames between the simulated hosts: their addresses, the headers a frame is built from, and the
//! building (by `parsers::builder::RoceFrame`: lengths, IPv4 checksum, pad, ICRC).
use parsers::bth::Bth;
use parsers::builder::{Net, RoceFrame};
use parsers::frame::ExtHeaders;
use parsers::ipv4::{self, Ipv4Header};

pub(crate) fn ip(host: u8) -> [u8; 4] {
    [10, 0, 0, host + 1]
}

pub(crate) fn mac(host: u8) -> [u8; 6] {
    [0x02, 0, 0, 0, 0, host + 1]
}

pub(crate) fn ip_text(host: u8) -> String {
    let a = ip(host);
    format!("{}.{}.{}.{}", a[0], a[1], a[2], a[3])
}

/// Nanoseconds to put `bytes` on a 25 Gb/s link, with the preamble and inter-frame gap.
pub(crate) fn wire_ns(bytes: usize) -> u64 {
    ((bytes as u64 + 24) * 8).div_ceil(25)
}

/// The headers of a frame to build, between two hosts.
pub(crate) struct Header {
    pub(crate) from: u8,
    pub(crate) to: u8,
    pub(crate) udp_src: u16,
    pub(crate) dscp: u8,
    pub(crate) ecn: u8,
    pub(crate) bth: Bth,
    pub(crate) ext: ExtHeaders,
    pub(crate) payload: u32,
}

/// Builds frames: the hosts' IPv4 identification counters and the bytes payloads are cut from.
pub(crate) struct FrameBuilder {
    ip_id: Vec<u16>,
    /// Payload bytes: slices of this.
    pattern: Vec<u8>,
}

impl FrameBuilder {
    pub(crate) fn new(hosts: u8, pattern: Vec<u8>) -> FrameBuilder {
        FrameBuilder {
            ip_id: vec![0; usize::from(hosts)],
            pattern,
        }
    }

    pub(crate) fn build(&mut self, h: &Header, salt: u32) -> Vec<u8> {
        let id = &mut self.ip_id[usize::from(h.from)];
        *id = id.wrapping_add(1);
        let off = (salt % 256) as usize;
        let payload = self.pattern[off..off + h.payload as usize].to_vec();
        RoceFrame {
            eth_dst: mac(h.to),
            eth_src: mac(h.from),
            vlans: Vec::new(),
            net: Net::V4(Ipv4Header {
                header_len: 20,
                dscp: h.dscp,
                ecn: h.ecn,
                total_len: 0,
                id: *id,
                dont_fragment: true,
                more_fragments: false,
                reserved_flag: false,
                frag_offset: 0,
                ttl: 64,
                protocol: ipv4::PROTO_UDP,
                checksum: 0,
                src: ip(h.from),
                dst: ip(h.to),
            }),
            udp_src: h.udp_src,
            udp_dst: 4791,
            udp_checksum: 0,
            bth: h.bth,
            ext: h.ext,
            payload,
            pad: None,
            icrc: None,
        }
        .build()
    }
}
