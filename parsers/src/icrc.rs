//! The invariant CRC of RoCE packets (IBTA annex A17): CRC-32 over the packet with the variant fields
//! (those a router may change) replaced by ones.
use crc32fast::Hasher;

/// The CRC-32 of the eight 0xFF bytes that stand in for the masked LRH, as a finished CRC value.
/// (0xDEBB20E3, often quoted as the seed, is the same state before the final inversion.)
const LRH_MASK_CRC: u32 = 0x2144_DF1C;

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
#[derive(Debug, Clone, Copy)]
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
    let mut hasher = Hasher::new_with_initial(LRH_MASK_CRC);
    let mut buf = [0u8; 60];
    match net {
        NetHeader::Ipv4(h) => {
            let len = h.len().min(buf.len());
            let masked = masked(&mut buf, h, len);
            for i in [1, 8, 10, 11] {
                if let Some(b) = masked.get_mut(i) {
                    *b = 0xFF;
                }
            }
            hasher.update(masked);
        }
        NetHeader::Ipv6(h) => {
            let len = h.len().min(40);
            let masked = masked(&mut buf, h, len);
            if let Some(b) = masked.get_mut(0) {
                *b |= 0x0F;
            }
            for i in [1, 2, 3, 7] {
                if let Some(b) = masked.get_mut(i) {
                    *b = 0xFF;
                }
            }
            hasher.update(masked);
        }
    }
    if let Some(udp) = udp {
        let mut u = [0u8; 8];
        let masked = masked(&mut u, udp, udp.len().min(8));
        for i in [6, 7] {
            if let Some(b) = masked.get_mut(i) {
                *b = 0xFF;
            }
        }
        hasher.update(masked);
    }
    let (bth_head, rest) = transport.split_at(transport.len().min(5));
    let mut head = [0u8; 5];
    let masked = masked(&mut head, bth_head, bth_head.len());
    if let Some(b) = masked.get_mut(4) {
        *b = 0xFF;
    }
    hasher.update(masked);
    hasher.update(rest);
    hasher.finalize().swap_bytes()
}

/// Copies the first `len` bytes of `src` into `buf` and returns that part of `buf`.
fn masked<'b>(buf: &'b mut [u8], src: &[u8], len: usize) -> &'b mut [u8] {
    let dst = buf.get_mut(..len).unwrap_or_default();
    if let Some(s) = src.get(..dst.len()) {
        dst.copy_from_slice(s);
    }
    dst
}
