//! A flow's latency samples: percentiles from HdrHistogram's buckets (10 ns units, two significant digits),
//! and the exact extremes. A flow's latencies mostly fall in a few buckets, so the buckets in use are kept
//! in a short sorted list (8 bytes each), and the dense table (about 5 KB for samples up to a millisecond)
//! is made only past 128 of them. Either way the percentiles are the same (tested below).
use std::sync::LazyLock;

use hdrhistogram::Histogram;

/// Latency samples of one flow and kind (request to ACK, READ to its first response).
#[derive(Debug, Clone)]
pub struct Latencies {
    counts: Counts,
    samples: u64,
    pub min: u64,
    pub max: u64,
}

#[derive(Debug, Clone)]
enum Counts {
    /// The buckets in use, by value; at most [`SPARSE_LIMIT`].
    Sparse(Vec<Bucket>),
    /// Sized to the largest sample so far (auto-resizing), not to 100 s (17 KB).
    Dense(Box<Histogram<u32>>),
}

/// One bucket of [`SHAPE`]: its lowest value, packed, and how many samples fell in it.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    lowest: Lowest,
    count: u32,
}

/// At 8 bytes a bucket, 128 take 1 KB: the dense table's size for samples of up to about 2.5 µs, a fifth
/// of it for samples up to a millisecond.
const SPARSE_LIMIT: usize = 128;

/// A bucket's lowest value in 16 bits. With two significant digits a bucket's lowest value has at most 8
/// significant bits (256 sub-buckets): the 8 bits, and the shift that places them. The order of the
/// packed values is that of the values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Lowest(u16);

impl Lowest {
    fn of(value: u64) -> Lowest {
        let lowest = SHAPE.lowest_equivalent(value);
        let shift = (u64::BITS - lowest.leading_zeros()).saturating_sub(8);
        let packed = Lowest((shift as u16) << 8 | (lowest >> shift) as u16);
        debug_assert_eq!(
            packed.value(),
            lowest,
            "a bucket of more than 8 significant bits"
        );
        packed
    }

    fn value(self) -> u64 {
        u64::from(self.0 & 0xff) << (self.0 >> 8)
    }
}

/// The buckets' arithmetic: an empty table of the same precision, whose counts are never written. Which
/// bucket a value falls in depends on the precision only, not on the table's size.
static SHAPE: LazyLock<Histogram<u32>> = LazyLock::new(new_table);

fn new_table() -> Histogram<u32> {
    let mut table = Histogram::new_with_bounds(1, 2, 2).expect("constant bounds are valid");
    table.auto(true);
    table
}

impl Latencies {
    const UNIT_NANOS: u64 = 10;

    /// Samples of more than 100 s count as 100 s.
    const MAX_UNITS: u64 = 10_000_000_000;

    pub(crate) fn new() -> Latencies {
        Latencies {
            counts: Counts::Sparse(Vec::new()),
            samples: 0,
            min: u64::MAX,
            max: 0,
        }
    }

    pub(crate) fn record(&mut self, nanos: u64) {
        let units = (nanos / Self::UNIT_NANOS).clamp(1, Self::MAX_UNITS);
        self.samples = self.samples.saturating_add(1);
        self.min = self.min.min(nanos);
        self.max = self.max.max(nanos);
        let buckets = match &mut self.counts {
            Counts::Dense(table) => return record_dense(table, units),
            Counts::Sparse(buckets) => buckets,
        };
        let lowest = Lowest::of(units);
        match buckets.binary_search_by_key(&lowest, |b| b.lowest) {
            Ok(i) => buckets[i].count = buckets[i].count.saturating_add(1),
            Err(i) if buckets.len() < SPARSE_LIMIT => {
                buckets.insert(i, Bucket { lowest, count: 1 })
            }
            Err(_) => self.counts = Counts::Dense(dense(buckets, units)),
        }
    }

    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// The `q` quantile in nanoseconds, within [min, max]: the highest value of the bucket where the
    /// samples up to it reach `q` of all (the lowest for `q` = 0), as HdrHistogram's `value_at_quantile`.
    pub fn quantile(&self, q: f64) -> u64 {
        let units = match &self.counts {
            Counts::Dense(table) => table.value_at_quantile(q),
            Counts::Sparse(buckets) => sparse_quantile(buckets, self.samples, q),
        };
        (units * Self::UNIT_NANOS).clamp(self.min, self.max)
    }
}

/// The dense table of the listed buckets and one more sample.
fn dense(buckets: &[Bucket], units: u64) -> Box<Histogram<u32>> {
    let mut table = Box::new(new_table());
    for b in buckets {
        // Growing the table fails only past usize's range, which 100 s does not reach.
        let _ = table.record_n(b.lowest.value(), b.count);
    }
    record_dense(&mut table, units);
    table
}

fn record_dense(table: &mut Histogram<u32>, units: u64) {
    // `record` grows the table; should growing fail, the sample counts at its top.
    if table.record(units).is_err() {
        table.saturating_record(units);
    }
}

fn sparse_quantile(buckets: &[Bucket], samples: u64, q: f64) -> u64 {
    let q = q.min(1.0);
    let target = ((q * samples as f64).ceil() as u64).max(1);
    let mut below = 0u64;
    for b in buckets {
        below += u64::from(b.count);
        if below >= target {
            let lowest = b.lowest.value();
            return if q == 0.0 {
                lowest
            } else {
                SHAPE.highest_equivalent(lowest)
            };
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// HdrHistogram itself, as the flow held it before the sparse list.
    fn reference(samples: &[u64]) -> Histogram<u32> {
        let mut table = new_table();
        for &nanos in samples {
            record_dense(&mut table, (nanos / 10).clamp(1, Latencies::MAX_UNITS));
        }
        table
    }

    fn agree(samples: &[u64]) {
        let mut latencies = Latencies::new();
        samples.iter().for_each(|&n| latencies.record(n));
        let table = reference(samples);
        let (min, max) = (
            *samples.iter().min().unwrap(),
            *samples.iter().max().unwrap(),
        );
        assert_eq!(latencies.samples(), table.len());
        for q in [0.0, 0.001, 0.25, 0.5, 0.9, 0.99, 0.999, 1.0] {
            let expected = (table.value_at_quantile(q) * 10).clamp(min, max);
            assert_eq!(
                latencies.quantile(q),
                expected,
                "quantile {q} of {samples:?}"
            );
        }
    }

    #[test]
    fn a_few_buckets_stay_a_short_list() {
        let mut latencies = Latencies::new();
        // Two significant digits: 256 sub-buckets, so units 256 to 511 fall in buckets 2 units wide.
        // 4,990 ns is 499 units (bucket 498-499), 5,010 and 5,019 ns are 501 (bucket 500-501).
        for nanos in [4_990, 5_010, 5_010, 4_990, 5_019] {
            latencies.record(nanos);
        }
        let Counts::Sparse(buckets) = &latencies.counts else {
            panic!("two buckets made a dense table");
        };
        let kept: Vec<(u64, u32)> = buckets
            .iter()
            .map(|b| (b.lowest.value(), b.count))
            .collect();
        assert_eq!(kept, [(498, 2), (500, 3)]);
        // The median is the 3rd sample: bucket 500-501, its highest value 5,010 ns.
        assert_eq!(latencies.quantile(0.5), 5_010);
        // The 2nd: bucket 498-499, 4,990 ns.
        assert_eq!(latencies.quantile(0.4), 4_990);
        // The lowest value of the first bucket, 4,980 ns, is below the least sample: the least.
        assert_eq!(latencies.quantile(0.0), 4_990);
    }

    #[test]
    fn past_the_limit_the_table_is_dense_and_the_same() {
        // 1 µs (100 units) apart from 10 µs: buckets are at most 64 units wide below 16,384 units, so the
        // first 154 samples fall in a bucket each.
        let samples: Vec<u64> = (0..200).map(|i| 10_000 + i * 1_000).collect();
        let mut fewer = Latencies::new();
        samples[..SPARSE_LIMIT]
            .iter()
            .for_each(|&n| fewer.record(n));
        assert!(matches!(fewer.counts, Counts::Sparse(_)));
        agree(&samples);
        let mut latencies = Latencies::new();
        samples.iter().for_each(|&n| latencies.record(n));
        assert!(matches!(latencies.counts, Counts::Dense(_)));
    }

    proptest! {
        #[test]
        fn percentiles_equal_hdrhistograms(
            samples in prop::collection::vec(
                prop_oneof![1u64..100, 1_000u64..60_000, 60_000u64..2_000_000_000_000], 1..300),
        ) {
            agree(&samples);
        }
    }
}
