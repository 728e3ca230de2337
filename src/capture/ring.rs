//! The live TUI's memory of the capture: the last frames captured, in a ring bounded both in frames and in
//! bytes, shared between the capture thread (which appends a batch at a time) and the TUI (which reads a
//! screen of frames, a flow's frames, or all of them to save). Frames are numbered from 1 in capture order,
//! so the ring always holds a contiguous run of numbers.
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::writer::Writer;

/// Frames kept by default.
pub const MAX_FRAMES: usize = 100_000;
/// Bytes kept by default (frame data plus a fixed overhead per frame).
pub const MAX_BYTES: usize = 64 << 20;
/// What one frame costs beyond its bytes (the record, its `Arc`, the ring slot).
const OVERHEAD: usize = 64;

/// One captured frame.
#[derive(Debug)]
pub struct Rec {
    pub number: u64,
    pub ts_nanos: u64,
    pub orig_len: u32,
    pub data: Box<[u8]>,
}

#[derive(Debug)]
pub struct Ring {
    recs: VecDeque<Arc<Rec>>,
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

    /// Appends frames (numbered one after the other), dropping the oldest past either bound.
    pub fn extend(&mut self, batch: impl IntoIterator<Item = Arc<Rec>>) {
        for r in batch {
            self.first_ts.get_or_insert(r.ts_nanos);
            self.bytes += r.data.len() + OVERHEAD;
            self.recs.push_back(r);
        }
        while self.recs.len() > self.max_frames
            || (self.bytes > self.max_bytes && self.recs.len() > 1)
        {
            if let Some(old) = self.recs.pop_front() {
                self.bytes -= old.data.len() + OVERHEAD;
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

    /// Number of the oldest frame held.
    pub fn first_number(&self) -> Option<u64> {
        self.recs.front().map(|r| r.number)
    }

    /// Frame `number`, if still held.
    pub fn get(&self, number: u64) -> Option<Arc<Rec>> {
        let first = self.first_number()?;
        let i = usize::try_from(number.checked_sub(first)?).ok()?;
        self.recs.get(i).cloned()
    }

    /// Every frame held, oldest first (cheap: the frames are shared, not copied).
    pub fn all(&self) -> Vec<Arc<Rec>> {
        self.recs.iter().cloned().collect()
    }
}

/// Writes `recs` as a pcapng file at `path`; returns the frames written.
pub fn save(
    recs: &[Arc<Rec>],
    path: &Path,
    linktype: u16,
    snaplen: u32,
    interface: &str,
) -> Result<u64, String> {
    let mut w = Writer::create(path, linktype, snaplen, interface)?;
    for r in recs {
        w.write(r.ts_nanos, &r.data, r.orig_len)
            .map_err(|e| w.describe(&e))?;
    }
    w.flush().map_err(|e| w.describe(&e))?;
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
    let (y, mo, d) = civil_from_days((unix_secs / 86_400) as i64);
    let s = unix_secs % 86_400;
    let stem = format!(
        "rocescope-{iface}-{y:04}{mo:02}{d:02}-{:02}{:02}{:02}Z",
        s / 3600,
        s / 60 % 60,
        s % 60
    );
    let mut path = dir.join(format!("{stem}.pcapng"));
    let mut n = 2;
    while path.exists() {
        path = dir.join(format!("{stem}-{n}.pcapng"));
        n += 1;
    }
    path
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(number: u64, len: usize) -> Arc<Rec> {
        Arc::new(Rec {
            number,
            ts_nanos: number * 1000,
            orig_len: len as u32,
            data: vec![0u8; len].into_boxed_slice(),
        })
    }

    #[test]
    fn bounded_in_frames_and_bytes() {
        let mut r = Ring::new(3, 1 << 20, 1, 65535, "lo");
        r.extend((1..=5).map(|n| rec(n, 100)));
        assert_eq!(r.len(), 3);
        assert_eq!(r.first_number(), Some(3));
        assert!(r.get(2).is_none());
        assert_eq!(r.get(5).unwrap().number, 5);
        assert!(r.get(6).is_none());
        assert_eq!(r.first_ts, Some(1000), "the capture's first time stays");
        let mut r = Ring::new(100, 3 * (1000 + OVERHEAD), 1, 65535, "lo");
        r.extend((1..=10).map(|n| rec(n, 1000)));
        assert_eq!(r.len(), 3);
        assert_eq!(r.first_number(), Some(8));
        assert!(r.bytes() <= r.max_bytes);
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
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        let _ = std::fs::remove_dir_all(dir);
    }
}
