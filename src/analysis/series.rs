//! A per-flow time series of packets and bytes in bounded memory: buckets start at one second and double in
//! width (merging pairs) whenever the series would exceed its capacity.

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct Bucket {
    pub packets: u64,
    pub bytes: u64,
}

#[derive(Debug, Clone)]
pub struct Series {
    /// Bucket width in nanoseconds.
    width: u64,
    buckets: Vec<Bucket>,
}

impl Default for Series {
    fn default() -> Self {
        Series {
            width: Self::SECOND,
            buckets: Vec::new(),
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
        if self.buckets.len() <= i {
            self.buckets.resize(i + 1, Bucket::default());
        }
        if let Some(b) = self.buckets.get_mut(i) {
            b.packets += 1;
            b.bytes += bytes;
        }
    }

    fn halve(&mut self) {
        self.width *= 2;
        let merged = self
            .buckets
            .chunks(2)
            .map(|pair| Bucket {
                packets: pair.iter().map(|b| b.packets).sum(),
                bytes: pair.iter().map(|b| b.bytes).sum(),
            })
            .collect();
        self.buckets = merged;
    }

    /// Bucket width in seconds.
    pub fn width_secs(&self) -> u64 {
        self.width / Self::SECOND
    }

    pub fn buckets(&self) -> &[Bucket] {
        &self.buckets
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_per_second_then_merge() {
        let mut s = Series::default();
        s.add(0, 10);
        s.add(500_000_000, 10);
        s.add(2_100_000_000, 5);
        assert_eq!(s.width_secs(), 1);
        assert_eq!(
            s.buckets(),
            &[
                Bucket {
                    packets: 2,
                    bytes: 20
                },
                Bucket::default(),
                Bucket {
                    packets: 1,
                    bytes: 5
                }
            ]
        );
        // A packet at 1500 s does not fit 1024 one-second buckets: widths double to 2 s.
        s.add(1500 * Series::SECOND, 1);
        assert_eq!(s.width_secs(), 2);
        assert_eq!(
            s.buckets()[0],
            Bucket {
                packets: 2,
                bytes: 20
            }
        );
        assert_eq!(
            s.buckets()[1],
            Bucket {
                packets: 1,
                bytes: 5
            }
        );
        assert_eq!(
            s.buckets()[750],
            Bucket {
                packets: 1,
                bytes: 1
            }
        );
    }
}
