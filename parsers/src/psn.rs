//! Packet sequence numbers: 24 bits that wrap (IBTA 9.7.1), compared in serial arithmetic, and the PSNs
//! a request consumes.

/// PSNs are 24 bits and wrap: 0xFFFFFF + 1 = 0.
pub const PSN_MASK: u32 = 0xFF_FFFF;

/// The path MTUs a RoCE QP can use (IBTA: 256 to 4096 bytes).
pub const MTUS: [u32; 5] = [256, 512, 1024, 2048, 4096];

/// `psn + n`, wrapped to 24 bits (`n` may be any `u32`: `add(p, u32::MAX)` is the PSN before `p`).
pub const fn add(psn: u32, n: u32) -> u32 {
    psn.wrapping_add(n) & PSN_MASK
}

/// `psn + n` for a count that may exceed 32 bits (the messages of a long run), wrapped to 24 bits.
pub const fn add_wide(psn: u32, n: u64) -> u32 {
    (((psn & PSN_MASK) as u64).wrapping_add(n) & PSN_MASK as u64) as u32
}

/// Serial difference `a - b` in (-2^23, 2^23]: positive when `a` is ahead of `b`.
pub const fn diff(a: u32, b: u32) -> i32 {
    let d = a.wrapping_sub(b) & PSN_MASK;
    if d > 0x80_0000 {
        d as i32 - 0x100_0000
    } else {
        d as i32
    }
}

/// PSNs a READ request of `dma_len` bytes consumes at path MTU `mtu`: one per response packet, at least
/// one (a zero-length READ is answered by one READ_RESPONSE_ONLY).
pub const fn read_psns(dma_len: u32, mtu: u32) -> u32 {
    let mtu = if mtu == 0 { 1 } else { mtu };
    let n = dma_len.div_ceil(mtu);
    if n == 0 { 1 } else { n }
}

/// Packets (and so PSNs) a SEND or WRITE of `len` bytes takes at path MTU `mtu`: at least one.
pub const fn packets(len: u64, mtu: u32) -> u64 {
    let mtu = if mtu == 0 { 1 } else { mtu as u64 };
    let n = len.div_ceil(mtu);
    if n == 0 { 1 } else { n }
}

/// `true` when `mtu` is one of the path MTUs.
pub fn is_mtu(mtu: u32) -> bool {
    MTUS.contains(&mtu)
}

/// A PSN as rocescope writes it in prose (events, the text report): decimal, as tshark and `dissect` show
/// PSNs, with the 24-bit hex in parentheses: `7488513 (0x724401)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shown(pub u32);

impl core::fmt::Display for Shown {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{} (0x{:06x})", self.0, self.0)
    }
}

/// Unwraps 24-bit PSNs into a line that does not wrap (for charts): each PSN is placed at its serial
/// distance from the one before.
#[derive(Debug, Clone, Copy, Default)]
pub struct Unwrapper {
    last: Option<(u32, i64)>,
}

impl Unwrapper {
    /// The unwrapped value of `psn` (the first PSN is its own value); moves the reference to it.
    pub fn unwrap(&mut self, psn: u32) -> i64 {
        let u = self.peek(psn);
        self.last = Some((psn, u));
        u
    }

    /// The unwrapped value of `psn` relative to the last one, without moving the reference.
    pub fn peek(&self, psn: u32) -> i64 {
        match self.last {
            Some((lp, lu)) => lu + i64::from(diff(psn, lp)),
            None => i64::from(psn & PSN_MASK),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serial_arithmetic_wraps() {
        assert_eq!(add(0xFF_FFFF, 1), 0);
        assert_eq!(add(0, u32::MAX), 0xFF_FFFF);
        assert_eq!(add_wide(PSN_MASK, 1), 0);
        assert_eq!(add_wide(14_488_144, 32 * 4 - 1), 14_488_271);
        assert_eq!(add_wide(5, 1 << 24), 5);
        assert_eq!(diff(0, 0xFF_FFFF), 1);
        assert_eq!(diff(0xFF_FFFF, 0), -1);
        assert_eq!(diff(5, 3), 2);
        assert_eq!(diff(0x80_0000, 0), 0x80_0000);
        assert_eq!(diff(0x80_0001, 0), -0x7F_FFFF);
    }

    #[test]
    fn psns_consumed() {
        assert_eq!(read_psns(3000, 1024), 3);
        assert_eq!(read_psns(0, 1024), 1);
        assert_eq!(read_psns(1024, 1024), 1);
        assert_eq!(read_psns(1025, 1024), 2);
        assert_eq!(read_psns(5, 0), 5);
        assert_eq!(packets(0, 4096), 1);
        assert_eq!(packets(65536, 1024), 64);
        assert_eq!(packets(65537, 1024), 65);
        assert!(is_mtu(2048) && !is_mtu(1500));
    }

    #[test]
    fn shown_in_prose() {
        assert_eq!(Shown(7_488_513).to_string(), "7488513 (0x724401)");
        assert_eq!(Shown(0xFF_FFFF).to_string(), "16777215 (0xffffff)");
        assert_eq!(Shown(102).to_string(), "102 (0x000066)");
    }

    #[test]
    fn unwrapping_crosses_the_wrap() {
        let mut u = Unwrapper::default();
        assert_eq!(u.unwrap(0xFF_FFFE), 0xFF_FFFE);
        assert_eq!(u.unwrap(1), 0x100_0001);
        assert_eq!(u.peek(0xFF_FFFF), 0xFF_FFFF);
        assert_eq!(u.unwrap(0), 0x100_0000);
    }
}
