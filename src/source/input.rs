//! The bytes of a [`FileSource`](super::FileSource): a regular file is memory-mapped (no copy from the page
//! cache, the pages already read are given back as reading moves on); standard input, a pipe or a file that
//! cannot be mapped goes through one read buffer, refilled as the records and blocks are consumed, grown for
//! one oversized block and shrunk back after it.
use std::fs::File;
use std::io::{self, Read};

use super::{BUFFER_SIZE, MAX_BLOCK_SIZE};

/// Where the bytes come from.
enum Backing {
    Reader {
        reader: Box<dyn Read + Send>,
        buf: Vec<u8>,
    },
    Mapped(memmap2::Mmap),
}

/// The input's bytes. `bytes()[start..end]` holds unconsumed bytes; `offset` is the position in the input
/// of `bytes()[start]`.
pub(super) struct Input {
    backing: Backing,
    pub(super) start: usize,
    end: usize,
    eof: bool,
    pub(super) offset: u64,
    /// Mapped: bytes before this have been given back to the kernel.
    released: usize,
}

/// A mapped file gives back what its reader is done with in steps of at least this many bytes.
const RELEASE_STEP: usize = 1 << 20;

impl Input {
    pub(super) fn new(reader: Box<dyn Read + Send>) -> Input {
        Input {
            backing: Backing::Reader {
                reader,
                buf: vec![0; BUFFER_SIZE],
            },
            start: 0,
            end: 0,
            eof: false,
            offset: 0,
            released: 0,
        }
    }

    /// A regular file, mapped; `None` when it cannot be (then it is read).
    pub(super) fn mapped(file: &File) -> Option<Input> {
        if !file.metadata().ok()?.is_file() {
            return None;
        }
        // SAFETY: the map is read-only and private to this reader. A file truncated by another process while
        // it is read would fault; capture files are appended to, not cut, while they are analysed.
        let map = unsafe { memmap2::Mmap::map(file) }.ok()?;
        #[cfg(unix)]
        let _ = map.advise(memmap2::Advice::Sequential);
        let end = map.len();
        Some(Input {
            backing: Backing::Mapped(map),
            start: 0,
            end,
            eof: true,
            offset: 0,
            released: 0,
        })
    }

    /// True for a mapped file: the bytes stay in place, unchanged, while the input lives (pages given back
    /// are read again from the file when touched).
    pub(super) fn is_mapped(&self) -> bool {
        matches!(self.backing, Backing::Mapped(_))
    }

    /// Every byte held: the read buffer, or the whole mapped file.
    pub(super) fn bytes(&self) -> &[u8] {
        match &self.backing {
            Backing::Reader { buf, .. } => buf,
            Backing::Mapped(map) => map,
        }
    }

    pub(super) fn available(&self) -> &[u8] {
        &self.bytes()[self.start..self.end]
    }

    /// Reads until at least `n` (at most [`MAX_BLOCK_SIZE`]) bytes are available.
    /// Returns false if the input ends first.
    pub(super) fn fill(&mut self, n: usize) -> io::Result<bool> {
        debug_assert!(n <= MAX_BLOCK_SIZE);
        let Backing::Reader { reader, buf } = &mut self.backing else {
            return Ok(self.end - self.start >= n);
        };
        if buf.len() > BUFFER_SIZE && n <= BUFFER_SIZE && self.end - self.start <= BUFFER_SIZE {
            // The oversized block is gone: back to the normal size. (Not done in
            // `consume`, as the packet returned last may still point at the bytes.)
            compact(buf, &mut self.start, &mut self.end);
            buf.truncate(BUFFER_SIZE);
            buf.shrink_to_fit();
        }
        while self.end - self.start < n {
            if self.eof {
                return Ok(false);
            }
            if self.start > 0 && self.start + n > buf.len() {
                compact(buf, &mut self.start, &mut self.end);
            }
            if self.end == buf.len() {
                // Only reached when start == 0 and n > buf.len(): grow, at most
                // doubling, so the allocation follows the data actually read.
                let len = buf.len();
                buf.resize(n.min(len.saturating_mul(2)), 0);
            }
            match reader.read(&mut buf[self.end..]) {
                Ok(0) => self.eof = true,
                // min(): never trust a reader to report more than it was given.
                Ok(k) => self.end = (self.end + k).min(buf.len()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }

    pub(super) fn consume(&mut self, n: usize) {
        debug_assert!(n <= self.end - self.start);
        self.start += n;
        self.offset += n as u64;
        match &self.backing {
            Backing::Reader { .. } if self.start == self.end => {
                // Bytes stay in place: a packet returned just before may still point at them.
                self.start = 0;
                self.end = 0;
            }
            _ => {}
        }
    }
}

impl Input {
    /// A mapped file: the bytes before input offset `offset` are no longer needed (every frame before it has
    /// been analysed); their pages are given back, so the resident set does not grow with the file.
    pub(super) fn done_before(&mut self, offset: u64) {
        let upto = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(self.start);
        if let Backing::Mapped(map) = &self.backing
            && upto >= self.released + RELEASE_STEP
        {
            release(map, self.released, upto);
            self.released = upto;
        }
    }
}

/// Moves the unconsumed bytes to the front.
fn compact(buf: &mut [u8], start: &mut usize, end: &mut usize) {
    buf.copy_within(*start..*end, 0);
    *end -= *start;
    *start = 0;
}

/// Drops the pages of `map[from..to]` from the process (they stay in the page cache, and would be read
/// again from it): the resident set does not grow with the file.
#[cfg(unix)]
fn release(map: &memmap2::Mmap, from: usize, to: usize) {
    let page = 4096;
    let from = from.div_ceil(page) * page;
    let to = to / page * page;
    if to > from {
        // SAFETY: a read-only file mapping: pages given back are read again from the file if touched.
        let _ = unsafe {
            map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, from, to - from)
        };
    }
}

#[cfg(not(unix))]
fn release(_map: &memmap2::Mmap, _from: usize, _to: usize) {}

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
        assert_eq!(inp.bytes().len(), BUFFER_SIZE);
        assert!(inp.fill(big).unwrap());
        assert!(inp.bytes().len() >= big && inp.bytes().len() <= 2 * big);
        assert_eq!(inp.available()[big - 1], (big - 1) as u8);
        inp.consume(big);
        assert!(inp.fill(100).unwrap());
        assert_eq!(inp.bytes().len(), BUFFER_SIZE);
        assert_eq!(&inp.available()[..100], &[7; 100][..]);
        assert_eq!(inp.offset, big as u64);
    }

    #[test]
    fn growth_follows_the_data_present() {
        // A claim of 60 MiB over a 1 MiB input allocates about 1-2 MiB, not 60.
        let mut inp = input(vec![0; 1 << 20]);
        assert!(!inp.fill(60 << 20).unwrap());
        assert!(inp.bytes().len() <= 2 << 20, "{}", inp.bytes().len());
        assert_eq!(inp.available().len(), 1 << 20);
    }
}
