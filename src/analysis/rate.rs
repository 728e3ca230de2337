//! A flow's rate in windows of `--rate-window-us` (counted from the capture's start), and the reaction
//! point's answer to each CNP: the rate in the window before it against the two windows after it. Fixed
//! state per flow: the current and the previous window, and, once a CNP reaches the flow, one reaction in
//! measurement and a histogram of the reductions.

/// The bytes (on the wire) and packets of a flow per window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rate {
    /// The current window (its index since the capture's start), its bytes and packets.
    window: u64,
    bytes: u64,
    packets: u32,
    /// Window `window - 1`: bytes and packets (0 when the flow sent nothing in it).
    prev_bytes: u64,
    prev_packets: u32,
    /// The most bytes one window held.
    pub peak_bytes: u64,
}

/// The reaction to one CNP, in measurement: its times and frame, its window, the bytes of the window before
/// it, the fewest bytes of the two after it so far, when the sender's rate first fell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Pending {
    /// The CNP's time since the capture's start (the windows' clock), and in capture time.
    cnp_offset: u64,
    cnp_ts: u64,
    cnp_frame: u64,
    window: u64,
    before: u64,
    after: Option<u64>,
    time_to: Option<u64>,
}

/// A reduction is visible when the rate after is at most this share (in tenths) of the rate before: a 10 %
/// cut stands out of a steady sender's jitter, and DCQCN's first cut halves the rate.
const VISIBLE_TENTHS: u128 = 9;

/// Packets the window before a CNP must hold for a rate to be measured at all.
const MIN_PACKETS: u32 = 4;

/// The CNPs that reached a flow's sender and what it did after them.
#[derive(Debug, Clone, PartialEq)]
pub struct Reaction {
    /// CNPs toward the flow's source QP.
    pub cnps: u64,
    /// Of them, those whose reaction was measured.
    pub measured: u64,
    /// Measured, with no visible reduction (the rate after above 90 % of the rate before).
    pub no_reduction: u64,
    /// The first CNP with no visible reduction: time, frame.
    pub first_ignored: Option<(u64, u64)>,
    /// The smallest reduction measured (the CNP the sender reacted to least), 0 to 1.
    pub worst: f64,
    /// Reductions by whole percent (rounded down), for the median: the percents met, in order, each with
    /// its count. A flow's CNPs are mostly few, so a list, not a table of 101 counts (404 bytes).
    percent: Vec<Share>,
    /// Time from the CNP to the first packet sent at the reduced rate: count, sum and maximum, nanoseconds.
    pub times: u64,
    pub time_sum: u64,
    pub time_max: u64,
    pending: Option<Pending>,
}

/// Reductions of one whole percent, and how many.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Share {
    percent: u8,
    count: u32,
}

impl Default for Reaction {
    fn default() -> Self {
        Reaction {
            cnps: 0,
            measured: 0,
            no_reduction: 0,
            first_ignored: None,
            worst: 1.0,
            percent: Vec::new(),
            times: 0,
            time_sum: 0,
            time_max: 0,
            pending: None,
        }
    }
}

impl Reaction {
    /// The median reduction (the lower median), to the whole percent.
    pub fn median(&self) -> Option<f64> {
        let rank = self.measured.div_ceil(2);
        let mut seen = 0u64;
        self.percent.iter().find_map(|share| {
            seen += u64::from(share.count);
            (seen >= rank && rank > 0).then_some(f64::from(share.percent) / 100.0)
        })
    }

    /// The windows `window..next` closed: `bytes` in `window`, nothing in those after. Once both windows
    /// after the CNP's are closed, the reaction is settled.
    fn closed(&mut self, window: u64, bytes: u64, next: u64) {
        let Some(p) = &mut self.pending else {
            return;
        };
        for w in [p.window.saturating_add(1), p.window.saturating_add(2)] {
            let b = if w == window {
                bytes
            } else if window < w && w < next {
                0
            } else {
                continue;
            };
            p.after = Some(p.after.map_or(b, |a| a.min(b)));
        }
        if next > p.window.saturating_add(2) {
            self.settle();
        }
    }

    fn count_reduction(&mut self, pct: u8) {
        match self
            .percent
            .binary_search_by_key(&pct, |share| share.percent)
        {
            Ok(i) => self.percent[i].count = self.percent[i].count.saturating_add(1),
            Err(i) => self.percent.insert(
                i,
                Share {
                    percent: pct,
                    count: 1,
                },
            ),
        }
    }

    fn settle(&mut self) {
        let Some(p) = self.pending.take() else {
            return;
        };
        let after = p.after.unwrap_or(0).min(p.before);
        self.measured += 1;
        let reduction = 1.0 - after as f64 / p.before as f64;
        self.worst = self.worst.min(reduction);
        // floor(100 × (1 − after / before)) = 100 − ceil(100 × after / before).
        let pct = 100
            - (u128::from(after) * 100)
                .div_ceil(u128::from(p.before))
                .min(100) as u8;
        self.count_reduction(pct);
        if u128::from(after) * 10 > VISIBLE_TENTHS * u128::from(p.before) {
            self.no_reduction += 1;
            self.first_ignored.get_or_insert((p.cnp_ts, p.cnp_frame));
        } else if let Some(t) = p.time_to {
            self.times += 1;
            self.time_sum += t;
            self.time_max = self.time_max.max(t);
        }
    }

    /// A packet of `bytes` at `offset`, `gap` after the flow's previous one, in windows of `width`: the
    /// first one sent at a rate visibly below the rate before the CNP marks the time to the reduction.
    fn packet(&mut self, offset: u64, gap: u64, bytes: u64, width: u64) {
        let Some(p) = &mut self.pending else {
            return;
        };
        // bytes / gap <= 0.9 × before / width.
        let slower = u128::from(bytes) * u128::from(width) * 10
            <= VISIBLE_TENTHS * u128::from(p.before) * u128::from(gap);
        if p.time_to.is_none() && offset > p.cnp_offset && gap > 0 && slower {
            p.time_to = Some(offset - p.cnp_offset);
        }
    }
}

/// `sum / count`, rounded to the nearest whole number.
pub fn rounded_mean(sum: u64, count: u64) -> u64 {
    ((u128::from(sum) + u128::from(count) / 2) / u128::from(count.max(1))) as u64
}

/// The times between consecutive events (the CNPs of a flow: the notification point's CNP interval).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Intervals {
    /// The first and the last time, nanoseconds.
    pub first: Option<u64>,
    pub last: u64,
    pub min: u64,
    pub max: u64,
    /// The intervals seen (one less than the events).
    pub count: u64,
}

impl Intervals {
    pub(crate) fn add(&mut self, ts: u64) {
        if self.first.is_some() {
            let gap = ts.saturating_sub(self.last);
            self.min = if self.count == 0 {
                gap
            } else {
                self.min.min(gap)
            };
            self.max = self.max.max(gap);
            self.count += 1;
        }
        self.first.get_or_insert(ts);
        self.last = ts;
    }

    /// The mean interval, nanoseconds (rounded to the nearest), when there is one.
    pub fn mean(&self) -> Option<u64> {
        let first = self.first?;
        (self.count > 0).then(|| rounded_mean(self.last.saturating_sub(first), self.count))
    }
}

impl Rate {
    /// A packet of `bytes` at `offset` nanoseconds after the capture's start, `gap` after the flow's
    /// previous packet; windows of `width` nanoseconds.
    pub(crate) fn add(
        &mut self,
        mut reaction: Option<&mut Reaction>,
        (offset, gap): (u64, u64),
        bytes: u64,
        width: u64,
    ) {
        let k = offset / width.max(1);
        if k > self.window {
            if let Some(r) = reaction.as_deref_mut() {
                r.closed(self.window, self.bytes, k);
            }
            (self.prev_bytes, self.prev_packets) = if self.window.checked_add(1) == Some(k) {
                (self.bytes, self.packets)
            } else {
                (0, 0)
            };
            (self.window, self.bytes, self.packets) = (k, 0, 0);
        }
        if let Some(r) = reaction {
            r.packet(offset, gap, bytes, width);
        }
        self.bytes += bytes;
        self.packets = self.packets.saturating_add(1);
        self.peak_bytes = self.peak_bytes.max(self.bytes);
    }

    /// Bytes and packets of window `k`, as far as the flow's windows so far tell (before it sends again).
    fn of(&self, k: u64) -> (u64, u32) {
        if k == self.window {
            (self.bytes, self.packets)
        } else if k.checked_add(1) == Some(self.window) {
            (self.prev_bytes, self.prev_packets)
        } else {
            (0, 0)
        }
    }

    /// A CNP at `offset` (frame `frame`, capture time `ts`) reached the sender: its reaction is measured
    /// when none is being measured, the window before the CNP's holds at least [`MIN_PACKETS`] and lies
    /// wholly after the flow's first packet (`first_offset`).
    pub(crate) fn cnp(
        &self,
        r: &mut Reaction,
        (offset, ts, frame): (u64, u64, u64),
        first_offset: u64,
        width: u64,
    ) {
        r.cnps += 1;
        let k = offset / width.max(1);
        if r.pending.is_some() || k == 0 || self.window > k {
            return;
        }
        let (before, packets) = self.of(k - 1);
        if packets < MIN_PACKETS || (k - 1) * width < first_offset {
            return;
        }
        r.pending = Some(Pending {
            cnp_offset: offset,
            cnp_ts: ts,
            cnp_frame: frame,
            window: k,
            before,
            after: None,
            time_to: None,
        });
    }

    /// The end of the flow at `offset`: a reaction whose two windows after the CNP's ended by then is
    /// settled; one cut off by the end is not measured.
    pub(crate) fn finish(&self, r: &mut Reaction, offset: u64, width: u64) {
        let Some(p) = r.pending else {
            return;
        };
        if offset >= p.window.saturating_add(3).saturating_mul(width) {
            r.closed(self.window, self.bytes, p.window.saturating_add(3));
        }
        r.pending = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: u64 = 100;

    /// Reductions of 70, 20, 50 and 20 %, in that order: the lower median of four is the 2nd smallest,
    /// 20 %; a fifth, of 90 %, makes it the 3rd, 50 %.
    #[test]
    fn the_median_reduction_is_the_lower_median_of_all() {
        let mut r = Reaction::default();
        for pct in [70, 20, 50, 20] {
            r.count_reduction(pct);
            r.measured += 1;
        }
        assert_eq!(r.median(), Some(0.2));
        r.count_reduction(90);
        r.measured += 1;
        assert_eq!(r.median(), Some(0.5));
    }

    /// One packet of 10 bytes every 1 ns until 250, every 2 ns after; a CNP at 250: before, window 1
    /// (100-199) holds 100 packets, 1000 bytes; after, windows 3 and 4 hold 50 packets (500 bytes) each:
    /// a 50 % reduction, first seen on the packet at 252 (its gap of 2 is half the rate): 2 ns after.
    #[test]
    fn a_sender_that_halves() {
        let (mut rate, mut r) = (Rate::default(), Reaction::default());
        let mut last = 0;
        let mut t = 0;
        while t <= 600 {
            if t == 250 {
                rate.cnp(&mut r, (250, 250, 7), 0, W);
            }
            rate.add(Some(&mut r), (t, t - last), 10, W);
            last = t;
            t += if t < 250 { 1 } else { 2 };
        }
        rate.finish(&mut r, 600, W);
        assert_eq!((r.cnps, r.measured, r.no_reduction), (1, 1, 0));
        assert_eq!(r.median(), Some(0.5));
        assert_eq!(r.worst, 0.5);
        assert_eq!((r.times, r.time_sum), (1, 2));
        assert_eq!(rate.peak_bytes, 1000);
    }

    /// A sender that keeps its rate: no visible reduction; a sender that stops: 100 %.
    #[test]
    fn a_sender_that_ignores_and_one_that_stops() {
        let (mut rate, mut r) = (Rate::default(), Reaction::default());
        for t in 0..=500 {
            if t == 250 {
                rate.cnp(&mut r, (250, 250, 9), 0, W);
            }
            rate.add(Some(&mut r), (t, 1), 10, W);
        }
        rate.finish(&mut r, 500, W);
        assert_eq!(
            (r.measured, r.no_reduction, r.first_ignored),
            (1, 1, Some((250, 9)))
        );
        assert_eq!((r.median(), r.worst), (Some(0.0), 0.0));

        // Every 1 ns until 260, then nothing: windows 3 and 4 after the CNP at 261 are empty, 100 %; the
        // end at 500 is when window 4 ends.
        let (mut rate, mut r) = (Rate::default(), Reaction::default());
        for t in 0..=260 {
            rate.add(Some(&mut r), (t, 1), 10, W);
        }
        rate.cnp(&mut r, (261, 261, 3), 0, W);
        rate.finish(&mut r, 500, W);
        assert_eq!((r.measured, r.no_reduction, r.median()), (1, 0, Some(1.0)));
        // A CNP whose windows after it outlast the capture is not measured; nor one after an empty window.
        let (mut rate, mut r) = (Rate::default(), Reaction::default());
        for t in 0..=480 {
            rate.add(Some(&mut r), (t, 1), 10, W);
        }
        rate.cnp(&mut r, (450, 450, 4), 0, W);
        rate.finish(&mut r, 480, W);
        rate.cnp(&mut r, (900, 900, 5), 0, W);
        assert_eq!((r.cnps, r.measured), (2, 0));
    }
}
