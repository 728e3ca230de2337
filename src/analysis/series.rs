//! A per-flow time series of packets and bytes in bounded memory: buckets start at one second and double in
//! width (merging pairs) whenever the series would exceed its capacity.

use smallvec::SmallVec;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct Bucket {
    pub packets: u64,
    pub bytes: u64,
}

#[derive(Debug, Clone)]
pub struct Series {
    /// Bucket width in nanoseconds.
    width: u64,
    /// The index, counted in buckets from the capture's start, of the first bucket held: a flow that starts
    /// late in a long capture holds none of the empty buckets before it (with 1,024 of them at most, a flow
    /// seen once at the end would otherwise hold 16 KB of zeros).
    first: usize,
    /// The buckets from `first` on; the first in place (no allocation for a flow of one second).
    buckets: SmallVec<[Bucket; 1]>,
}

impl Default for Series {
    fn default() -> Self {
        Series {
            width: Self::SECOND,
            first: 0,
            buckets: SmallVec::new(),
        }
    }
}

impl Series {
    pub const SECOND: u64 = 1_000_000_000;
    pub const CAPACITY: usize = 1024;

    /// Adds a packet at `offset` nanoseconds after the start of the capture.
    pub fn add(&mut self, offset: u64, bytes: u64) {
        let mut i = (offset / self.width) as usize;
        while i >= Self::CAPACITY {
            self.halve();
            i = (offset / self.width) as usize;
        }
        if self.buckets.is_empty() {
            self.first = i;
        } else if i < self.first {
            // Out of time order, before the first bucket held.
            let before = std::iter::repeat_n(Bucket::default(), self.first - i);
            self.buckets.insert_many(0, before);
            self.first = i;
        }
        let at = i - self.first;
        if self.buckets.len() <= at {
            self.buckets.resize(at + 1, Bucket::default());
        }
        if let Some(b) = self.buckets.get_mut(at) {
            b.packets += 1;
            b.bytes += bytes;
        }
    }

    /// Doubles the width: buckets 2k and 2k+1 (from the capture's start) become bucket k.
    fn halve(&mut self) {
        self.width *= 2;
        let Some(last) = (self.first + self.buckets.len()).checked_sub(1) else {
            return;
        };
        let first = self.first / 2;
        let mut merged: SmallVec<[Bucket; 1]> =
            smallvec::smallvec![Bucket::default(); last / 2 - first + 1];
        for (at, b) in self.buckets.iter().enumerate() {
            let m = &mut merged[(self.first + at) / 2 - first];
            m.packets += b.packets;
            m.bytes += b.bytes;
        }
        self.first = first;
        self.buckets = merged;
    }

    /// Bucket width in seconds.
    pub fn width_secs(&self) -> u64 {
        self.width / Self::SECOND
    }

    /// The index of its first bucket held, counted in buckets from the capture's start.
    pub fn first_bucket(&self) -> usize {
        self.first
    }

    /// Its buckets from its first to its last.
    pub fn held(&self) -> impl Iterator<Item = Bucket> + '_ {
        self.buckets.iter().copied()
    }

    /// Every bucket from the capture's start to the flow's last (those before its first empty).
    pub fn buckets(&self) -> impl Iterator<Item = Bucket> + '_ {
        std::iter::repeat_n(Bucket::default(), self.first).chain(self.buckets.iter().copied())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bucket(packets: u64, bytes: u64) -> Bucket {
        Bucket { packets, bytes }
    }

    #[test]
    fn buckets_per_second_then_merge() {
        let mut s = Series::default();
        s.add(0, 10);
        s.add(500_000_000, 10);
        s.add(2_100_000_000, 5);
        assert_eq!(s.width_secs(), 1);
        let all: Vec<Bucket> = s.buckets().collect();
        assert_eq!(all, [bucket(2, 20), Bucket::default(), bucket(1, 5)]);
        assert_eq!(s.first_bucket(), 0);
        assert_eq!(s.held().collect::<Vec<_>>(), all);
        // A packet at 1500 s does not fit 1024 one-second buckets: widths double to 2 s.
        s.add(1500 * Series::SECOND, 1);
        assert_eq!(s.width_secs(), 2);
        let all: Vec<Bucket> = s.buckets().collect();
        assert_eq!(all.len(), 751);
        assert_eq!(all[0], bucket(2, 20));
        assert_eq!(all[1], bucket(1, 5));
        assert_eq!(all[750], bucket(1, 1));
    }

    /// A flow first seen 1,000 s into the capture holds its own buckets only, and reads as if it held the
    /// empty ones before it; merging keeps pairs aligned to the capture's start whatever the first bucket.
    #[test]
    fn a_late_flow_holds_only_its_own_buckets() {
        let mut s = Series::default();
        s.add(1001 * Series::SECOND + 1, 7);
        s.add(1002 * Series::SECOND, 3);
        assert_eq!(
            s.buckets.len(),
            2,
            "1001 s and 1002 s, not the 1001 before them"
        );
        assert_eq!(s.first_bucket(), 1001);
        assert_eq!(s.held().collect::<Vec<_>>(), [bucket(1, 7), bucket(1, 3)]);
        let all: Vec<Bucket> = s.buckets().collect();
        assert_eq!(all.len(), 1003);
        assert_eq!(&all[1001..], [bucket(1, 7), bucket(1, 3)]);
        assert!(all[..1001].iter().all(|b| *b == Bucket::default()));
        // Out of order, before the first bucket held.
        s.add(999 * Series::SECOND, 1);
        let all: Vec<Bucket> = s.buckets().collect();
        assert_eq!(
            &all[999..],
            [bucket(1, 1), Bucket::default(), bucket(1, 7), bucket(1, 3)]
        );
        // 2,050 s is bucket 1,025 of 2 s: 4 s buckets (999 s -> 249, 1001 s and 1002 s -> 250, 2050 s -> 512).
        s.add(2050 * Series::SECOND, 2);
        assert_eq!(s.width_secs(), 4);
        let all: Vec<Bucket> = s.buckets().collect();
        assert_eq!(&all[249..251], [bucket(1, 1), bucket(2, 10)]);
        assert_eq!(all[512], bucket(1, 2));
        assert_eq!(all.len(), 513);
        s.add(4100 * Series::SECOND, 4);
        assert_eq!(
            s.width_secs(),
            8,
            "4,100 s needs 8 s buckets to stay under 1,024"
        );
        let all: Vec<Bucket> = s.buckets().collect();
        // 8 s buckets: 999 s -> 124, 1001 s and 1002 s -> 125, 2050 s -> 256, 4100 s -> 512.
        assert_eq!(&all[124..126], [bucket(1, 1), bucket(2, 10)]);
        assert_eq!(all[256], bucket(1, 2));
        assert_eq!(all[512], bucket(1, 4));
        assert_eq!(all.len(), 513);
        assert_eq!(s.buckets.len(), 513 - 124);
    }
}
