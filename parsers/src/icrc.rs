//! The invariant CRC of RoCE and InfiniBand packets (IBTA Vol. 1 §7.8.1, annex A17): CRC-32 over the packet
//! with the variant fields (those a switch or router may change) replaced by ones; and the variant CRC of
//! native InfiniBand packets (§7.8.2), which a switch recomputes on every hop.
//!
//! Which LRH bits the ICRC covers depends on the GRH (§7.8.1, as NVIDIA's forum quotes it in "How to
//! calculate the CRC32 for BF2 RDMA", and Shanley's *InfiniBand Network Architecture* ch. 25, "Packet
//! CRCs"): a local packet (no GRH) is covered from its LRH on with only the VL masked; a global packet
//! (GRH) has a router rewrite its LRH, so the whole LRH is masked (8 bytes of ones, what RoCE, which has
//! no LRH, puts in its place: rxe_icrc.c's seed 0xdebb20e3 is the CRC of those 8 bytes), and the GRH's
//! traffic class, flow label and hop limit too. infiniband.pcap's frames verify by this rule and by no
//! other.
use crc32fast::Hasher;

/// Result of checking a packet's ICRC. Values are as the 4 bytes read on the wire, big-endian,
/// the way Wireshark shows `infiniband.invariant.crc`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IcrcStatus {
    Valid,
    Bad {
        expected: u32,
        found: u32,
    },
    /// The capture's snap length cut the packet: the ICRC cannot be checked.
    Unverifiable,
}

impl IcrcStatus {
    pub fn name(self) -> &'static str {
        match self {
            IcrcStatus::Valid => "valid",
            IcrcStatus::Bad { .. } => "bad",
            IcrcStatus::Unverifiable => "unverifiable",
        }
    }
}

/// The network header the ICRC covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetHeader<'a> {
    /// IPv4 header with options: TOS, TTL and header checksum are masked.
    Ipv4(&'a [u8]),
    /// IPv6 header (RoCEv2) or GRH (RoCEv1): traffic class, flow label and hop limit are masked.
    Ipv6(&'a [u8]),
}

/// Computes the ICRC over `net`, the UDP header (`udp`, RoCEv2 only; its checksum is masked) and
/// `transport` (BTH through pad, without the ICRC; BTH byte 4 is masked). Returns the 4 bytes as they
/// appear on the wire, read big-endian.
pub fn compute(net: NetHeader<'_>, udp: Option<&[u8]>, transport: &[u8]) -> u32 {
    compute_from([0xFF; 8], Some(net), udp, transport)
}

/// Computes the ICRC of a local InfiniBand packet (no GRH): `lrh` with its VL masked, then `transport` as
/// for [`compute`].
pub fn compute_local(lrh: [u8; 8], transport: &[u8]) -> u32 {
    let mut masked = lrh;
    if let Some(vl_lver) = masked.first_mut() {
        *vl_lver |= 0xF0;
    }
    compute_from(masked, None, None, transport)
}

fn compute_from(
    lrh: [u8; 8],
    net: Option<NetHeader<'_>>,
    udp: Option<&[u8]>,
    transport: &[u8],
) -> u32 {
    // The masked LRH, network header, UDP header and BTH go through the CRC as one block (short updates
    // are slow); the rest of the packet is hashed in place.
    let mut head = Head {
        buf: [0xFF; 8 + 60 + 8 + 12],
        len: 8,
    };
    if let Some(b) = head.buf.get_mut(..8) {
        b.copy_from_slice(&lrh);
    }
    match net {
        None => {}
        Some(NetHeader::Ipv4(h)) => {
            head.put(h.get(..60).unwrap_or(h), &[1, 8, 10, 11]);
        }
        Some(NetHeader::Ipv6(h)) => {
            let start = head.put(h.get(..40).unwrap_or(h), &[1, 2, 3, 7]);
            // Traffic class and flow label start in the low nibble of byte 0.
            if let Some(b) = head.buf.get_mut(start).filter(|_| !h.is_empty()) {
                *b |= 0x0F;
            }
        }
    }
    if let Some(udp) = udp {
        head.put(udp.get(..8).unwrap_or(udp), &[6, 7]);
    }
    let (bth, rest) = transport.split_at(transport.len().min(12));
    head.put(bth, &[4]);
    let mut hasher = Hasher::new();
    hasher.update(head.buf.get(..head.len).unwrap_or_default());
    hasher.update(rest);
    hasher.finalize().swap_bytes()
}

/// The masked headers, copied: 8 bytes of ones for the LRH, then each header with its variant fields set
/// to ones.
struct Head {
    buf: [u8; 8 + 60 + 8 + 12],
    len: usize,
}

impl Head {
    /// Appends `bytes` with the bytes at offsets `masked` set to 0xFF; returns where they start.
    fn put(&mut self, bytes: &[u8], masked: &[usize]) -> usize {
        let start = self.len;
        let n = bytes.len().min(self.buf.len() - start);
        if let (Some(dst), Some(src)) = (self.buf.get_mut(start..start + n), bytes.get(..n)) {
            dst.copy_from_slice(src);
        }
        self.len += n;
        for &i in masked {
            if let Some(b) = self.buf.get_mut(start + i).filter(|_| i < n) {
                *b = 0xFF;
            }
        }
        start
    }
}

/// The variant CRC of a native InfiniBand packet: CRC-16 with polynomial 0x100B, reflected, initial value and
/// final XOR all ones, over `packet` (the LRH to the ICRC). Returns the 2 bytes as they appear on the wire,
/// read big-endian (as Wireshark shows `infiniband.variant.crc`).
pub fn vcrc(packet: &[u8]) -> u16 {
    let crc = packet.iter().fold(0xFFFF_u16, |crc, &b| {
        let i = usize::from((crc ^ u16::from(b)) as u8);
        VCRC_TABLE.get(i).copied().unwrap_or_default() ^ (crc >> 8)
    });
    (!crc).swap_bytes()
}

/// The reflected 0x100B (0xD008) polynomial's byte table (computed by the compiler: an index out of range
/// fails the build).
#[allow(clippy::indexing_slicing)]
const VCRC_TABLE: [u16; 256] = {
    let mut table = [0u16; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = i as u16;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xD008
            } else {
                crc >> 1
            };
            bit += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
};
