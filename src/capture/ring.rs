//! The live TUI's memory of the capture: the last frames captured, in a ring bounded both in frames and in
//! bytes, shared between the capture thread (which appends a batch at a time) and the TUI (which reads a
//! screen of frames, a flow's frames, or all of them to save). Frames are numbered from 1 in capture order,
//! so the ring always holds a contiguous run of numbers.
//!
//! No allocation per frame: the capture thread copies each frame's bytes into a [`Batch`] (a staging buffer
//! reused from batch to batch), and [`Ring::append`] turns the batch into one shared chunk (`Arc<[u8]>`, one
//! allocation, exactly the batch's size) and one small [`Rec`] per frame (its number, time, length and
//! place in the chunk) in the ring's `VecDeque`, which stops growing once it has held `max_frames` and a
//! batch. A `Rec` is cloned by incrementing the chunk's count: [`Ring::get`] and [`Ring::all`] copy no
//! frame bytes.
//!
//! Memory: the ring counts each frame as its captured bytes plus [`OVERHEAD`] and drops the oldest frames
//! while the count exceeds `max_bytes` (or the ring holds more than `max_frames`), as it always has. A
//! chunk is freed when the last of its frames leaves the ring, so only the oldest chunk can be partly
//! dropped yet still held: what the ring keeps alive is at most `max_bytes` plus one chunk, and a chunk is
//! at most [`CHUNK_BYTES`] plus one frame (a [`Batch`] reports itself full past that). The capture thread's
//! staging [`Batch`] adds one more chunk's worth, allocated once. Frames the TUI has taken out (to save
//! them, say) keep their chunks alive until it lets them go.
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::writer::{Writer, WriterError};
use crate::analysis::Counted;
use crate::report::format::Utc;

/// Frames kept by default.
pub const MAX_FRAMES: usize = 100_000;
/// Bytes kept by default (frame data plus a fixed overhead per frame).
pub const MAX_BYTES: usize = 64 << 20;
/// What one frame costs beyond its bytes (its record in the ring, and its share of the chunk's).
const OVERHEAD: usize = 80;
const _: () = assert!(std::mem::size_of::<Rec>() <= OVERHEAD);
/// Frames in a batch, at most.
pub const BATCH_FRAMES: usize = 4096;
/// A batch is full once its frames' bytes reach this (so one chunk is at most this plus one frame).
pub const CHUNK_BYTES: usize = 4 << 20;
/// The largest frame a capture keeps (`--snaplen` at most): the staging buffer's slack past
/// [`CHUNK_BYTES`].
const MAX_FRAME: usize = 262_144;

/// One captured frame: its bytes are a range of a chunk shared with the other frames of its batch, so a
/// clone is an atomic increment, not a copy.
#[derive(Debug, Clone)]
pub struct Rec {
    pub number: u64,
    pub ts_nanos: u64,
    pub orig_len: u32,
    /// How the analysis counted it (set once the engine has taken it).
    pub classified: Counted,
    chunk: Arc<[u8]>,
    /// Where its bytes lie in the chunk (a chunk is at most [`CHUNK_BYTES`] plus one frame).
    start: u32,
    end: u32,
}

impl Rec {
    /// The captured bytes.
    pub fn data(&self) -> &[u8] {
        self.chunk
            .get(self.start as usize..self.end as usize)
            .unwrap_or_default()
    }

    fn len(&self) -> usize {
        (self.end - self.start) as usize
    }
}

/// Frames captured since the ring was last appended to: their bytes one after the other in a buffer that
/// is reused (its capacity is kept), and where each one starts and ends.
#[derive(Debug)]
pub struct Batch {
    bytes: Vec<u8>,
    /// (number, time, length on the wire, end of its bytes in `bytes`).
    frames: Vec<(u64, u64, u32, usize)>,
}

impl Default for Batch {
    fn default() -> Self {
        Batch::new()
    }
}

impl Batch {
    /// An empty batch with room for a full one ([`BATCH_FRAMES`] frames, [`CHUNK_BYTES`] plus one frame),
    /// so that filling it never allocates.
    pub fn new() -> Batch {
        Batch {
            bytes: Vec::with_capacity(CHUNK_BYTES + MAX_FRAME),
            frames: Vec::with_capacity(BATCH_FRAMES),
        }
    }

    /// Adds a frame (its bytes are copied).
    pub fn push(&mut self, number: u64, ts_nanos: u64, orig_len: u32, data: &[u8]) {
        self.bytes.extend_from_slice(data);
        self.frames
            .push((number, ts_nanos, orig_len, self.bytes.len()));
    }

    /// True when the batch should go to the ring before another frame is added: [`BATCH_FRAMES`] frames,
    /// or [`CHUNK_BYTES`] of them.
    pub fn is_full(&self) -> bool {
        self.frames.len() >= BATCH_FRAMES || self.bytes.len() >= CHUNK_BYTES
    }

    pub fn len(&self) -> usize {
        self.frames.len()
    }

    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    /// Bytes of the frames held.
    pub fn bytes(&self) -> usize {
        self.bytes.len()
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.frames.clear();
    }
}

#[derive(Debug)]
pub struct Ring {
    recs: VecDeque<Rec>,
    bytes: usize,
    pub max_frames: usize,
    pub max_bytes: usize,
    /// Time of the first frame of the capture (kept when it leaves the ring: times are relative to it).
    pub first_ts: Option<u64>,
    pub linktype: u16,
    pub snaplen: u32,
    pub interface: String,
}

impl Ring {
    pub fn new(
        max_frames: usize,
        max_bytes: usize,
        linktype: u16,
        snaplen: u32,
        interface: &str,
    ) -> Ring {
        Ring {
            recs: VecDeque::new(),
            bytes: 0,
            max_frames: max_frames.max(1),
            max_bytes,
            first_ts: None,
            linktype,
            snaplen,
            interface: interface.to_string(),
        }
    }

    /// Appends the batch's frames (numbered one after the other), dropping the oldest past either bound,
    /// and empties the batch for the next frames. One allocation: the chunk the frames share (and, until
    /// the ring holds `max_frames`, now and then the ring's own growth).
    pub fn append(&mut self, batch: &mut Batch) {
        if batch.is_empty() {
            return;
        }
        let chunk: Arc<[u8]> = Arc::from(batch.bytes.as_slice());
        let mut start = 0;
        for &(number, ts_nanos, orig_len, end) in &batch.frames {
            self.first_ts.get_or_insert(ts_nanos);
            self.bytes += end - start + OVERHEAD;
            self.recs.push_back(Rec {
                number,
                ts_nanos,
                orig_len,
                classified: Counted::default(),
                chunk: Arc::clone(&chunk),
                start: start as u32,
                end: end as u32,
            });
            start = end;
        }
        batch.clear();
        while self.recs.len() > self.max_frames
            || (self.bytes > self.max_bytes && self.recs.len() > 1)
        {
            if let Some(old) = self.recs.pop_front() {
                self.bytes -= old.len() + OVERHEAD;
            }
        }
    }

    pub fn len(&self) -> usize {
        self.recs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.recs.is_empty()
    }

    /// Bytes held (frame data and overhead).
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Records how the engine counted frames it took (those no longer held are skipped).
    pub fn classify(&mut self, classes: &[(u64, Counted)]) {
        let Some(first) = self.first_number() else {
            return;
        };
        for &(number, c) in classes {
            if let Some(rec) = number
                .checked_sub(first)
                .and_then(|i| usize::try_from(i).ok())
                .and_then(|i| self.recs.get_mut(i))
            {
                rec.classified = c;
            }
        }
    }

    /// Number of the oldest frame held.
    pub fn first_number(&self) -> Option<u64> {
        self.recs.front().map(|r| r.number)
    }

    /// Frame `number`, if still held.
    pub fn get(&self, number: u64) -> Option<Rec> {
        let first = self.first_number()?;
        let i = usize::try_from(number.checked_sub(first)?).ok()?;
        self.recs.get(i).cloned()
    }

    /// Every frame held, oldest first (cheap: the frames' bytes are shared, not copied).
    pub fn all(&self) -> Vec<Rec> {
        self.recs.iter().cloned().collect()
    }
}

/// Writes `recs` as a pcapng file at `path`; returns the frames written.
pub fn save(
    recs: &[Rec],
    path: &Path,
    linktype: u16,
    snaplen: u32,
    interface: &str,
) -> Result<u64, WriterError> {
    let mut w = Writer::create(path, linktype, snaplen, interface)?;
    for r in recs {
        w.write(r.ts_nanos, r.data(), r.orig_len)
            .map_err(|e| w.describe(e))?;
    }
    w.flush().map_err(|e| w.describe(e))?;
    Ok(w.frames)
}

/// `rocescope-IFACE-YYYYMMDD-HHMMSSZ.pcapng` in `dir` (UTC), with `-2`, `-3`... when the name is taken.
pub fn timestamped_path(dir: &Path, interface: &str, unix_secs: u64) -> PathBuf {
    let iface: String = interface
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let t = Utc::of(unix_secs);
    let stem = format!(
        "rocescope-{iface}-{:04}{:02}{:02}-{:02}{:02}{:02}Z",
        t.year, t.month, t.day, t.hour, t.minute, t.second
    );
    let mut path = dir.join(format!("{stem}.pcapng"));
    let mut n = 2;
    while path.exists() {
        path = dir.join(format!("{stem}-{n}.pcapng"));
        n += 1;
    }
    path
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Appends frames `numbers`, each `len` bytes of its number's low byte, as one batch.
    fn append(r: &mut Ring, numbers: impl IntoIterator<Item = u64>, len: usize) {
        let mut b = Batch::new();
        for n in numbers {
            b.push(n, n * 1000, len as u32 + 4, &vec![n as u8; len]);
        }
        r.append(&mut b);
        assert!(b.is_empty(), "appending empties the batch");
    }

    #[test]
    fn bounded_in_frames_and_bytes() {
        let mut r = Ring::new(3, 1 << 20, 1, 65535, "lo");
        append(&mut r, 1..=5, 100);
        assert_eq!(r.len(), 3);
        assert_eq!(r.first_number(), Some(3));
        assert!(r.get(2).is_none());
        assert_eq!(r.get(5).unwrap().number, 5);
        assert!(r.get(6).is_none());
        assert_eq!(r.first_ts, Some(1000), "the capture's first time stays");
        let mut r = Ring::new(100, 3 * (1000 + OVERHEAD), 1, 65535, "lo");
        for n in 1..=10 {
            append(&mut r, [n], 1000);
        }
        assert_eq!(r.len(), 3);
        assert_eq!(r.first_number(), Some(8));
        assert!(r.bytes() <= r.max_bytes);
        // Batching does not change what is kept: the newest frames that fit.
        let mut r = Ring::new(100, 3 * (1000 + OVERHEAD), 1, 65535, "lo");
        append(&mut r, 1..=4, 1000);
        append(&mut r, 5..=10, 1000);
        assert_eq!((r.len(), r.first_number()), (3, Some(8)));
        assert_eq!(r.bytes(), 3 * (1000 + OVERHEAD));
        // One frame larger than the bound is still kept.
        let mut r = Ring::new(100, 10, 1, 65535, "lo");
        append(&mut r, 1..=2, 1000);
        assert_eq!((r.len(), r.first_number()), (1, Some(2)));
    }

    #[test]
    fn frames_share_their_batch_chunk() {
        let mut r = Ring::new(6, 1 << 20, 1, 65535, "lo");
        append(&mut r, 1..=4, 10);
        append(&mut r, 5..=8, 20);
        assert_eq!(r.first_number(), Some(3));
        for n in 3..=8 {
            let rec = r.get(n).unwrap();
            let len = if n <= 4 { 10 } else { 20 };
            assert_eq!(rec.data(), vec![n as u8; len].as_slice(), "frame {n}");
            assert_eq!(rec.orig_len, len as u32 + 4);
            assert_eq!(rec.ts_nanos, n * 1000);
        }
        let all = r.all();
        assert_eq!(
            all.iter().map(|x| x.number).collect::<Vec<_>>(),
            [3, 4, 5, 6, 7, 8]
        );
        assert!(Arc::ptr_eq(&all[0].chunk, &all[1].chunk));
        assert!(Arc::ptr_eq(&all[2].chunk, &all[5].chunk));
        assert!(!Arc::ptr_eq(&all[1].chunk, &all[2].chunk));
        assert_eq!(
            all[0].chunk.len(),
            40,
            "a chunk is exactly its batch's bytes"
        );
        let first = Arc::clone(&all[0].chunk);
        drop(all);
        // Ring (frames 3, 4), `first`.
        assert_eq!(Arc::strong_count(&first), 3);
        append(&mut r, 9..=10, 20);
        // Frames 3 and 4 have left: the first chunk is no longer held by the ring.
        assert_eq!(r.first_number(), Some(5));
        assert_eq!(Arc::strong_count(&first), 1);
    }

    #[test]
    fn memory_held_is_the_bound_plus_one_chunk_at_most() {
        // Jumbo frames and the default bounds: the bytes bound is what holds. The chunks the ring keeps
        // alive exceed the count only by the part of the oldest one whose frames have left.
        let mut r = Ring::new(MAX_FRAMES, MAX_BYTES, 1, 65535, "eth0");
        let mut b = Batch::new();
        let data = vec![7u8; 9000];
        let mut worst = 0;
        for n in 1..=40_000u64 {
            if b.is_full() {
                r.append(&mut b);
                let mut chunks: Vec<&Arc<[u8]>> = r.recs.iter().map(|x| &x.chunk).collect();
                chunks.dedup_by(|x, y| Arc::ptr_eq(x, y));
                let held: usize = chunks.iter().map(|c| c.len()).sum();
                assert!(r.bytes() <= MAX_BYTES, "{}", r.bytes());
                assert!(held <= r.bytes() + CHUNK_BYTES + MAX_FRAME, "{held}");
                assert!(chunks.iter().all(|c| c.len() <= CHUNK_BYTES + MAX_FRAME));
                worst = worst.max(held);
            }
            b.push(n, n, 9000, &data);
        }
        assert!(
            r.len() < 40_000 && worst > MAX_BYTES / 2,
            "{} {worst}",
            r.len()
        );
        assert!(
            b.bytes.capacity() == CHUNK_BYTES + MAX_FRAME,
            "the batch never grew"
        );
    }

    #[test]
    fn names_are_utc_and_unique() {
        let dir = std::env::temp_dir().join(format!("rocescope-ring-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // 2026-11-29 18:05:09 UTC
        let t = 1_795_975_509;
        let p = timestamped_path(&dir, "eth0/x", t);
        assert_eq!(
            p.file_name().unwrap().to_str().unwrap(),
            "rocescope-eth0_x-20261129-180509Z.pcapng"
        );
        std::fs::write(&p, b"").unwrap();
        let q = timestamped_path(&dir, "eth0/x", t);
        assert!(q.to_str().unwrap().ends_with("180509Z-2.pcapng"), "{q:?}");
        let _ = std::fs::remove_dir_all(dir);
    }
}
