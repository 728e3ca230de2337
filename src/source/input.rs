//! The read buffer of a [`FileSource`](super::FileSource): one buffer over the reader, refilled as the
//! records and blocks are consumed, grown for one oversized block and shrunk back after it.
use std::io::{self, Read};

use super::{BUFFER_SIZE, MAX_BLOCK_SIZE};

/// The read buffer over the reader. `buf[start..end]` holds unconsumed bytes;
/// `offset` is the position in the input of `buf[start]`.
pub(super) struct Input {
    reader: Box<dyn Read + Send>,
    pub(super) buf: Vec<u8>,
    pub(super) start: usize,
    end: usize,
    eof: bool,
    pub(super) offset: u64,
}

impl Input {
    pub(super) fn new(reader: Box<dyn Read + Send>) -> Input {
        Input {
            reader,
            buf: vec![0; BUFFER_SIZE],
            start: 0,
            end: 0,
            eof: false,
            offset: 0,
        }
    }

    pub(super) fn available(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    /// Reads until at least `n` (at most [`MAX_BLOCK_SIZE`]) bytes are available.
    /// Returns false if the input ends first.
    pub(super) fn fill(&mut self, n: usize) -> io::Result<bool> {
        debug_assert!(n <= MAX_BLOCK_SIZE);
        if self.buf.len() > BUFFER_SIZE && n <= BUFFER_SIZE && self.end - self.start <= BUFFER_SIZE
        {
            // The oversized block is gone: back to the normal size. (Not done in
            // `consume`, as the packet returned last may still point at the bytes.)
            self.compact();
            self.buf.truncate(BUFFER_SIZE);
            self.buf.shrink_to_fit();
        }
        while self.end - self.start < n {
            if self.eof {
                return Ok(false);
            }
            if self.start > 0 && self.start + n > self.buf.len() {
                self.compact();
            }
            if self.end == self.buf.len() {
                // Only reached when start == 0 and n > buf.len(): grow, at most
                // doubling, so the allocation follows the data actually read.
                let len = self.buf.len();
                self.buf.resize(n.min(len.saturating_mul(2)), 0);
            }
            match self.reader.read(&mut self.buf[self.end..]) {
                Ok(0) => self.eof = true,
                // min(): never trust a reader to report more than it was given.
                Ok(k) => self.end = (self.end + k).min(self.buf.len()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }

    /// Moves the unconsumed bytes to the front.
    fn compact(&mut self) {
        self.buf.copy_within(self.start..self.end, 0);
        self.end -= self.start;
        self.start = 0;
    }

    pub(super) fn consume(&mut self, n: usize) {
        debug_assert!(n <= self.end - self.start);
        self.start += n;
        self.offset += n as u64;
        if self.start == self.end {
            // Bytes stay in place: a packet returned just before may still point at them.
            self.start = 0;
            self.end = 0;
        }
    }
}

pub(super) fn u32_at(b: &[u8], at: usize, big_endian: bool) -> u32 {
    let a = [b[at], b[at + 1], b[at + 2], b[at + 3]];
    if big_endian {
        u32::from_be_bytes(a)
    } else {
        u32::from_le_bytes(a)
    }
}

pub(super) fn u16_at(b: &[u8], at: usize, big_endian: bool) -> u16 {
    let a = [b[at], b[at + 1]];
    if big_endian {
        u16::from_be_bytes(a)
    } else {
        u16::from_le_bytes(a)
    }
}

/// Rounds up to a multiple of 4.
pub(super) fn pad4(n: u64) -> u64 {
    n.div_ceil(4) * 4
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::BUFFER_SIZE;
    use std::io::Cursor;

    fn input(bytes: Vec<u8>) -> Input {
        Input::new(Box::new(Cursor::new(bytes)))
    }

    #[test]
    fn buffer_grows_for_one_block_then_shrinks_back() {
        let big = 3 * BUFFER_SIZE + 5;
        let mut data: Vec<u8> = (0..big).map(|i| i as u8).collect();
        data.extend_from_slice(&[7; 100]);
        let mut inp = input(data);
        assert!(inp.fill(16).unwrap());
        assert_eq!(inp.buf.len(), BUFFER_SIZE);
        assert!(inp.fill(big).unwrap());
        assert!(inp.buf.len() >= big && inp.buf.len() <= 2 * big);
        assert_eq!(inp.available()[big - 1], (big - 1) as u8);
        inp.consume(big);
        assert!(inp.fill(100).unwrap());
        assert_eq!(inp.buf.len(), BUFFER_SIZE);
        assert_eq!(&inp.available()[..100], &[7; 100][..]);
        assert_eq!(inp.offset, big as u64);
    }

    #[test]
    fn growth_follows_the_data_present() {
        // A claim of 60 MiB over a 1 MiB input allocates about 1-2 MiB, not 60.
        let mut inp = input(vec![0; 1 << 20]);
        assert!(!inp.fill(60 << 20).unwrap());
        assert!(inp.buf.len() <= 2 << 20, "{}", inp.buf.len());
        assert_eq!(inp.available().len(), 1 << 20);
    }
}
