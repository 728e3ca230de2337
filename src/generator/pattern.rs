//! The payload of message `msg` of the QP `qpn`: 8-byte words of splitmix64 over (QPN, message number, word
//! index), little endian, the last word cut to the message size. Any byte of another message (or of a stale
//! buffer) differs with overwhelming probability.

use super::records::Op;

fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn seed(qpn: u32, msg: u64) -> u64 {
    splitmix64((u64::from(qpn) << 40) ^ msg.wrapping_mul(0x2545_f491_4f6c_dd1d))
}

/// Fills `buf` with the pattern of (`qpn`, `msg`).
pub fn fill(buf: &mut [u8], qpn: u32, msg: u64) {
    let s = seed(qpn, msg);
    for (i, chunk) in buf.chunks_mut(8).enumerate() {
        let w = splitmix64(s ^ i as u64).to_le_bytes();
        chunk.copy_from_slice(&w[..chunk.len()]);
    }
}

/// The first byte offset where `buf` differs from the pattern of (`qpn`, `msg`), or None.
pub fn check(buf: &[u8], qpn: u32, msg: u64) -> Option<usize> {
    let s = seed(qpn, msg);
    for (i, chunk) in buf.chunks(8).enumerate() {
        let w = splitmix64(s ^ i as u64).to_le_bytes();
        if chunk != &w[..chunk.len()] {
            let j = chunk
                .iter()
                .zip(w.iter())
                .position(|(a, b)| a != b)
                .unwrap_or(0);
            return Some(i * 8 + j);
        }
    }
    None
}

/// What FETCH_ADD adds per message: a carry crosses the two 32-bit halves, so a byte-order or a half-word
/// error shows.
pub const ATOMIC_ADD: u64 = 0x0000_0001_8000_0001;

/// The remote word of QP `qpn`'s atomics before message `msg` (after `msg` messages): a start value derived
/// from the QPN plus `msg` times [`ATOMIC_ADD`]. FETCH_ADD message `msg` returns `atomic_value(qpn, msg)`;
/// COMPARE_SWAP message `msg` compares with it and swaps in `atomic_value(qpn, msg + 1)`.
pub fn atomic_value(qpn: u32, msg: u64) -> u64 {
    seed(qpn, u64::MAX).wrapping_add(msg.wrapping_mul(ATOMIC_ADD))
}

/// What is wrong with received message `k` (SEND payload, or WRITE with immediate: the written slot and the
/// immediate), if anything.
pub fn received_mismatch(
    op: Op,
    slot: &[u8],
    byte_len: u32,
    imm_be: u32,
    aq: u32,
    k: u64,
) -> Option<String> {
    if byte_len as usize != slot.len() {
        return Some(format!(
            "message {k}: received {byte_len} bytes, sent {}",
            slot.len()
        ));
    }
    if op == Op::WriteImm && u32::from_be(imm_be) != k as u32 {
        return Some(format!(
            "message {k}: immediate data {:#x}, expected {:#x}",
            u32::from_be(imm_be),
            k as u32
        ));
    }
    check(slot, aq, k).map(|at| format!("message {k}: byte {at} differs"))
}

/// The remote word after `completed` atomics of requester `aq` must be the next value of its sequence.
pub fn atomic_word_mismatch(got: u64, aq: u32, completed: u64) -> Option<String> {
    let want = atomic_value(aq, completed);
    (got != want).then(|| {
        format!(
            "QP {aq:#x}: the remote word is {got:#018x} after {completed} messages, expected {want:#018x}"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_sequence() {
        let v0 = atomic_value(0x11, 0);
        assert_eq!(atomic_value(0x11, 3), v0.wrapping_add(3 * ATOMIC_ADD));
        assert_ne!(atomic_value(0x12, 0), v0);
    }

    #[test]
    fn fill_then_check() {
        for size in [1usize, 7, 8, 9, 4096, 4099] {
            let mut b = vec![0u8; size];
            fill(&mut b, 0x11, 5);
            assert_eq!(check(&b, 0x11, 5), None);
            assert!(check(&b, 0x11, 6).is_some() || size < 2);
            assert!(check(&b, 0x12, 5).is_some() || size < 2);
            b[size - 1] ^= 1;
            assert_eq!(check(&b, 0x11, 5), Some(size - 1));
        }
    }
}
