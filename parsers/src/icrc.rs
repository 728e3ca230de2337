//! The invariant CRC of RoCE packets (IBTA annex A17): CRC-32 over the packet with the variant fields
//! (those a router may change) replaced by ones.
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
    // The masked LRH, network header, UDP header and BTH go through the CRC as one block (short updates
    // are slow); the rest of the packet is hashed in place.
    let mut head = Head {
        buf: [0xFF; 8 + 60 + 8 + 12],
        len: 8,
    };
    match net {
        NetHeader::Ipv4(h) => {
            head.put(h.get(..60).unwrap_or(h), &[1, 8, 10, 11]);
        }
        NetHeader::Ipv6(h) => {
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
