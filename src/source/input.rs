//! The bytes of a [`FileSource`](super::FileSource): a regular file is read into a region of memory of its
//! size (on Unix; mapped elsewhere) whose bytes stay in place while the reader lives, so that frames are
//! parsed and checked where they are, with no copy for the engine thread; the pages already read are given
//! back as reading moves on. Standard input, a pipe or a file that cannot be held so goes through one read
//! buffer, refilled as the records and blocks are consumed, grown for one oversized block and shrunk back
//! after it.
//!
//! A file is not memory-mapped on Unix: a file that shrinks while it is read (a restarted `tcpdump -w`
//! truncates its file) would make every touch of a mapped page past the new end a SIGBUS, in the reading
//! thread or in the engine's, and no report. Read with `pread` into memory of the process's own, a file
//! that shrinks ends where it ends now, with [`Input::shrank`] saying so, and the frames read before keep
//! their bytes.
use std::fs::File;
use std::io::{self, Read};

use super::{BUFFER_SIZE, MAX_BLOCK_SIZE};

/// Where the bytes come from.
enum Backing {
    Reader {
        reader: Box<dyn Read + Send>,
        buf: Vec<u8>,
    },
    /// Anonymous memory of the file's size at opening, filled by `pread` up to `filled`.
    #[cfg(unix)]
    Region {
        region: memmap2::MmapMut,
        file: File,
        filled: usize,
        /// Pages given back behind the reader were moved here, ahead of it (Linux): up to this offset the
        /// region ahead holds pages already, so reading into it faults and zeroes nothing.
        spare: usize,
    },
    #[cfg(not(unix))]
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
    /// The file was shorter than at opening when it was read.
    shrank: Option<Shrank>,
}

/// A file that shrank while it was read: its size at opening, when its new end was met, and how far it
/// had been read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Shrank {
    pub(super) at_open: u64,
    pub(super) now: u64,
    pub(super) read: u64,
}

/// A regular file is read into its region in steps of at least this many bytes.
#[cfg(unix)]
const READ_STEP: usize = 1 << 20;

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
            shrank: None,
        }
    }

    /// A regular file, held in place (read into a region of its size on Unix, mapped elsewhere); `None`
    /// when it cannot be (then it is read through the buffer).
    pub(super) fn mapped(file: &File) -> Option<Input> {
        let meta = file.metadata().ok()?;
        if !meta.is_file() || meta.len() == 0 {
            return None;
        }
        let len = usize::try_from(meta.len()).ok()?;
        #[cfg(unix)]
        let backing = {
            // Address space only: pages exist once read into, and go again once given back.
            let region = memmap2::MmapOptions::new()
                .len(len)
                .no_reserve_swap()
                .map_anon()
                .ok()?;
            Backing::Region {
                region,
                file: file.try_clone().ok()?,
                filled: 0,
                spare: 0,
            }
        };
        #[cfg(not(unix))]
        let backing = {
            // SAFETY: read-only and private to this reader; off Unix a mapped file cannot be truncated.
            let map = unsafe { memmap2::Mmap::map(file) }.ok()?;
            Backing::Mapped(map)
        };
        Some(Input {
            backing,
            start: 0,
            end: len,
            eof: true,
            offset: 0,
            released: 0,
            shrank: None,
        })
    }

    /// True for a file held in place: the bytes stay where they are, unchanged, while the input lives.
    pub(super) fn is_mapped(&self) -> bool {
        !matches!(self.backing, Backing::Reader { .. })
    }

    /// The file shrank while it was read.
    pub(super) fn shrank(&self) -> Option<Shrank> {
        self.shrank
    }

    /// Every byte held: the read buffer, or the whole file's region (read up to what `fill` asked for).
    pub(super) fn bytes(&self) -> &[u8] {
        match &self.backing {
            Backing::Reader { buf, .. } => buf,
            #[cfg(unix)]
            Backing::Region { region, .. } => region,
            #[cfg(not(unix))]
            Backing::Mapped(map) => map,
        }
    }

    /// The unconsumed bytes read so far (in a region, only what `fill` read: past it nothing is read yet).
    pub(super) fn available(&self) -> &[u8] {
        let end = match &self.backing {
            #[cfg(unix)]
            Backing::Region { filled, .. } => self.end.min(*filled),
            _ => self.end,
        };
        &self.bytes()[self.start..end]
    }

    /// Reads until at least `n` (at most [`MAX_BLOCK_SIZE`]) bytes are available.
    /// Returns false if the input ends first.
    pub(super) fn fill(&mut self, n: usize) -> io::Result<bool> {
        debug_assert!(n <= MAX_BLOCK_SIZE);
        #[cfg(unix)]
        if let Backing::Region {
            region,
            file,
            filled,
            ..
        } = &mut self.backing
        {
            let want = self.start.saturating_add(n).min(self.end);
            while *filled < want {
                let to = (*filled + READ_STEP.max(want - *filled)).min(self.end);
                match std::os::unix::fs::FileExt::read_at(
                    &*file,
                    &mut region[*filled..to],
                    *filled as u64,
                ) {
                    Ok(0) => {
                        // Shorter than at opening: the end is here now.
                        let now = file.metadata().map_or(*filled as u64, |m| m.len());
                        self.shrank = Some(Shrank {
                            at_open: self.end as u64,
                            now,
                            read: *filled as u64,
                        });
                        self.end = *filled;
                        break;
                    }
                    Ok(k) => *filled += k.min(to - *filled),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
            return Ok(self.end - self.start >= n);
        }
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
        if upto < self.released + RELEASE_STEP {
            return;
        }
        self.released = match &mut self.backing {
            #[cfg(unix)]
            Backing::Region {
                region,
                filled,
                spare,
                ..
            } => release(region, self.released, upto, *filled, self.end, spare),
            #[cfg(not(unix))]
            Backing::Mapped(map) => {
                release(map, self.released, upto);
                upto
            }
            Backing::Reader { .. } => return,
        };
    }
}

/// Moves the unconsumed bytes to the front.
fn compact(buf: &mut [u8], start: &mut usize, end: &mut usize) {
    buf.copy_within(*start..*end, 0);
    *end -= *start;
    *start = 0;
}

/// Gives back the pages of `region[from..to]`, whose frames have all been analysed, in whole steps of
/// [`RELEASE_STEP`]; returns how far they are given back. On Linux each step's pages are moved ahead of
/// the reader (past `filled` and every page moved before: `spare`), where the next reads go, and the
/// step behind is left as fresh, empty memory (touched again it would read zeros; nothing touches it again):
/// the resident set stays the frames in flight, and reading faults in and zeroes no new page. Elsewhere,
/// or when a move fails, the pages are freed.
#[cfg(unix)]
fn release(
    region: &mut memmap2::MmapMut,
    from: usize,
    to: usize,
    filled: usize,
    end: usize,
    spare: &mut usize,
) -> usize {
    let step = RELEASE_STEP;
    let from = from.div_ceil(step) * step;
    let to = to / step * step;
    let base = region.as_mut_ptr();
    for at in (from..to).step_by(step) {
        let ahead = (*spare).max(filled.div_ceil(step) * step);
        #[cfg(target_os = "linux")]
        if ahead + step <= end / step * step {
            // SAFETY: both steps lie within the region, which this reader owns: `at..at + step` holds only
            // frames every consumer is done with, `ahead..ahead + step` lies past every byte read (so no
            // frame points into it). MREMAP_DONTUNMAP moves the pages and leaves `at..` mapped, as empty
            // memory, in the same call: the region stays one mapping of its length, and no other thread's
            // mmap (malloc's, for a large allocation) can land in a hole between an unmap and a map again.
            // Kernels before 5.7 refuse the flag: the pages are then freed below.
            let moved = unsafe {
                let src = base.add(at).cast::<libc::c_void>();
                let dst = base.add(ahead).cast::<libc::c_void>();
                let flags = libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED | libc::MREMAP_DONTUNMAP;
                libc::mremap(src, step, step, flags, dst) == dst
            };
            if moved {
                *spare = ahead + step;
                continue;
            }
        }
        let _ = (ahead, end, base);
        // SAFETY: anonymous memory of this reader's own, every frame in which is done with.
        let _ =
            unsafe { region.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, at, step) };
    }
    to.max(from)
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
