//! Loss localisation between capture points of the same traffic (`analyze --points A B ...`, in path order
//! from the senders' side): the same packet is matched across points as a mirrored copy is recognised
//! (`mirror::identity`: PSN, QP, opcode, payload length and the ICRC, which covers the addresses, the IP
//! identification and the payload, so a resend is another packet), and a packet seen at one
//! point and at none after it on its path was lost between the two. Requests travel the points in the order
//! given, responses (ACKs, NAKs, READ responses, CNPs) in the reverse order.
//!
//! Fed in time order (each point's clock corrected by its estimated offset), the matcher keeps a packet until
//! the reordering window after it has passed: memory is bounded by the packets in one window, not by the
//! captures' sizes.
use std::cmp::Reverse;
use std::collections::BinaryHeap;

use parsers::frame::{Frame, Roce};
use rustc_hash::FxHashMap;

use super::flow::FlowKey;

/// Capture points compared at most.
pub const MAX_POINTS: usize = 8;

/// A packet's identity across points, and where it travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sighting {
    pub key: u64,
    pub flow: FlowKey,
    pub psn: u32,
    /// Travels the points in the reverse order (a response).
    pub reverse: bool,
}

impl Sighting {
    /// The sighting of a RoCE frame with an IP source and destination.
    pub fn of(frame: &Frame, roce: &Roce) -> Option<Sighting> {
        let flow = FlowKey {
            src: frame.src()?,
            dst: frame.dst()?,
            dest_qp: roce.bth.dest_qp,
        };
        Some(Sighting {
            key: super::mirror::identity(frame, roce),
            flow,
            psn: roce.bth.psn,
            reverse: !roce.bth.op().is_request(),
        })
    }
}

/// A packet lost between two points: the last point of its path that saw it and the next one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lost {
    pub flow: FlowKey,
    pub psn: u32,
    pub from: usize,
    pub to: usize,
    /// When the last point saw it (that point's clock corrected).
    pub ts: u64,
}

/// One segment's one-way delays (corrected clocks), nanoseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Delay {
    pub samples: u64,
    pub sum: i128,
    pub min: i64,
    pub max: i64,
}

impl Delay {
    fn add(&mut self, d: i64) {
        if self.samples == 0 {
            (self.min, self.max) = (d, d);
        }
        self.samples += 1;
        self.sum += i128::from(d);
        self.min = self.min.min(d);
        self.max = self.max.max(d);
    }
}

/// Packets judged remembered for late sightings: a window's worth at a few million packets a second.
const JUDGED_KEPT: usize = 1 << 16;

/// A packet judged: its key, and the points (bit by point) that missed it.
#[derive(Debug, Clone, Copy, Default)]
struct Judged {
    key: u64,
    missed: u16,
}

struct Pending {
    sighting: Sighting,
    /// When each point saw it (corrected), if it did.
    seen: [Option<u64>; MAX_POINTS],
}

/// The matcher over `points` capture points.
pub struct Matcher {
    points: usize,
    window_nanos: u64,
    pending: FxHashMap<u64, Pending>,
    /// (expiry, key), the soonest first: a packet stamped far ahead (a hostile or glitched clock) waits its
    /// own turn and holds up no other.
    expiry: BinaryHeap<Reverse<(u64, u64)>>,
    /// The packets judged lately: a sighting that comes after its packet was judged (its point's clock
    /// stamped it late) is that point's late sighting, not another packet. Direct-mapped: fixed memory.
    judged: Box<[Judged]>,
    /// Sightings that came after their packet was judged, per point (stamped late: the point had not
    /// missed them).
    pub late: [u64; MAX_POINTS],
    /// Packets lost per segment `(from, to)` of the path order (`from` the point that saw it last).
    pub lost: FxHashMap<(usize, usize), u64>,
    /// Packets lost per flow and segment.
    pub lost_by_flow: FxHashMap<(FlowKey, usize, usize), u64>,
    /// Packets a point missed although a point after it on the path saw them (the capture dropped them).
    pub missed: [u64; MAX_POINTS],
    /// One-way delay per forward segment `(i, i + 1)` of requests, indexed by `i`.
    pub delay: [Delay; MAX_POINTS],
    /// Packets that reached the last point of their path.
    pub complete: u64,
    /// Each point's clock against the one before it, followed packet by packet (empty unless asked for).
    drift: Vec<Drift>,
}

impl Matcher {
    pub fn new(points: usize, window_nanos: u64) -> Matcher {
        Matcher {
            points: points.min(MAX_POINTS),
            window_nanos,
            pending: FxHashMap::default(),
            expiry: BinaryHeap::new(),
            judged: vec![Judged::default(); JUDGED_KEPT].into_boxed_slice(),
            late: [0; MAX_POINTS],
            lost: FxHashMap::default(),
            lost_by_flow: FxHashMap::default(),
            missed: [0; MAX_POINTS],
            delay: [Delay::default(); MAX_POINTS],
            complete: 0,
            drift: Vec::new(),
        }
    }

    /// Also follows each point's clock against the one before it through the captures (see [`Drift`]).
    pub fn following_clocks(mut self) -> Matcher {
        self.drift = vec![Drift::default(); self.points];
        self
    }

    /// How each point's clock moved against the one before it, as far as followed.
    pub fn tracks(&self) -> Vec<Track> {
        self.drift.iter().map(Drift::track).collect()
    }

    /// Point `point` saw the packet at `ts` (its clock corrected); calls `lost` for each packet whose window
    /// has passed without the points after it seeing it.
    pub fn see(&mut self, point: usize, ts: u64, s: Sighting, lost: &mut impl FnMut(Lost)) {
        self.expire(ts, lost);
        if point >= self.points {
            return;
        }
        if !self.pending.contains_key(&s.key) && self.came_late(point, s.key) {
            return;
        }
        let p = self.pending.entry(s.key).or_insert_with(|| {
            self.expiry
                .push(Reverse((ts.saturating_add(self.window_nanos), s.key)));
            Pending {
                sighting: s,
                seen: [None; MAX_POINTS],
            }
        });
        p.seen[point].get_or_insert(ts);
    }

    /// Judges every packet still waiting (the end of the captures).
    pub fn finish(&mut self, lost: &mut impl FnMut(Lost)) {
        // Every one, also those whose window ends at the last nanosecond of u64 (hostile times).
        self.judge_while(|_| true, lost);
    }

    fn expire(&mut self, now: u64, lost: &mut impl FnMut(Lost)) {
        self.judge_while(|at| at < now, lost);
    }

    /// Judges the packets, soonest window's end first, while it is `due`.
    fn judge_while(&mut self, due: impl Fn(u64) -> bool, lost: &mut impl FnMut(Lost)) {
        while let Some(&Reverse((at, key))) = self.expiry.peek() {
            if !due(at) {
                break;
            }
            self.expiry.pop();
            if let Some(p) = self.pending.remove(&key) {
                self.judge(&p, lost);
            }
        }
    }

    /// Point `point` sees packet `key` after it was judged: when that point had missed it, it was stamped
    /// late, not missed (nor is it another packet, which would be lost after the point).
    fn came_late(&mut self, point: usize, key: u64) -> bool {
        let slot = &mut self.judged[key as usize % JUDGED_KEPT];
        if slot.key != key || slot.missed & (1 << point) == 0 {
            return false;
        }
        slot.missed &= !(1 << point);
        self.missed[point] = self.missed[point].saturating_sub(1);
        self.late[point] += 1;
        true
    }

    /// Judges a packet whose window has passed: where on its path it was seen last.
    fn judge(&mut self, p: &Pending, lost: &mut impl FnMut(Lost)) {
        let n = self.points;
        // The i-th point of the packet's path.
        let point = |i: usize| if p.sighting.reverse { n - 1 - i } else { i };
        let seen = |i: usize| p.seen[point(i)];
        let Some(last) = (0..n).rev().find(|&i| seen(i).is_some()) else {
            return;
        };
        // Each point's clock against the one before it on the path.
        for k in 1..self.drift.len() {
            if let (Some(t0), Some(t)) = (p.seen[k - 1], p.seen[k]) {
                self.drift[k].add(t0, apart(t, t0), p.sighting.reverse);
            }
        }
        let mut missed = 0u16;
        for i in 0..last {
            if seen(i).is_none() {
                self.missed[point(i)] += 1;
                missed |= 1 << point(i);
            }
        }
        self.judged[p.sighting.key as usize % JUDGED_KEPT] = Judged {
            key: p.sighting.key,
            missed,
        };
        if !p.sighting.reverse {
            for i in 1..=last {
                if let (Some(a), Some(b)) = (seen(i - 1), seen(i)) {
                    self.delay[i - 1].add(apart(b, a));
                }
            }
        }
        if last + 1 == n {
            self.complete += 1;
            return;
        }
        let (from, to) = (point(last), point(last + 1));
        *self.lost.entry((from, to)).or_default() += 1;
        *self
            .lost_by_flow
            .entry((p.sighting.flow, from, to))
            .or_default() += 1;
        lost(Lost {
            flow: p.sighting.flow,
            psn: p.sighting.psn,
            from,
            to,
            ts: seen(last).unwrap_or_default(),
        });
    }
}

/// The span of time over which a point's clock offset (against the point before it) is measured again:
/// a free-running clock (tens of ppm off) moves by a few µs in one, and a busy flow has packets both ways
/// in it.
pub const DRIFT_SPAN_NANOS: u64 = 100_000_000;
/// Spans kept at most per point: past that, neighbours merge and the span doubles, so memory stays bounded
/// whatever the captures' length (4096 spans of 100 ms are 7 minutes; a day is spans of 25.6 s).
const DRIFT_SPANS: usize = 4096;

/// The smallest apparent delay of one direction in a span, and when (the point before's time) it was seen.
type Least = Option<(i64, u64)>;

fn least(a: Least, b: Least) -> Least {
    match (a, b) {
        (Some(x), Some(y)) => Some(if y.0 < x.0 { y } else { x }),
        (x, None) => x,
        (None, y) => y,
    }
}

/// A point's clock against the one before it, followed through the captures: per span of the point
/// before's time, the smallest apparent delay each way (`d` of a request, `r` of a response, as for
/// [`Offset`]). A span with both bounds the offset there as [`offsets`] does, at the middle of the two
/// packets' times.
#[derive(Debug, Clone, Default)]
pub struct Drift {
    start: Option<u64>,
    width: u64,
    spans: Vec<(Least, Least)>,
}

impl Drift {
    /// A packet the point before saw at `t0` and this one `d` later (both clocks as corrected so far).
    fn add(&mut self, t0: u64, d: i64, reverse: bool) {
        let start = *self.start.get_or_insert(t0);
        if self.width == 0 {
            self.width = DRIFT_SPAN_NANOS;
        }
        let since = t0.saturating_sub(start);
        while since / self.width >= DRIFT_SPANS as u64 {
            self.merge_neighbours();
        }
        let i = (since / self.width) as usize;
        if self.spans.len() <= i {
            self.spans.resize(i + 1, (None, None));
        }
        let (fwd, rev) = &mut self.spans[i];
        if reverse {
            *rev = least(*rev, Some((d.saturating_neg(), t0)));
        } else {
            *fwd = least(*fwd, Some((d, t0)));
        }
    }

    fn merge_neighbours(&mut self) {
        self.spans = self
            .spans
            .chunks(2)
            .map(|c| {
                c.iter()
                    .fold((None, None), |(f, r), s| (least(f, s.0), least(r, s.1)))
            })
            .collect();
        self.width = self.width.saturating_mul(2);
    }

    /// The offsets the spans with both directions give.
    pub fn track(&self) -> Track {
        let marks = self
            .spans
            .iter()
            .filter_map(|s| match *s {
                (Some((d, td)), Some((r, tr))) => {
                    let (nanos, bound_nanos) = middle(d, r);
                    Some(Mark {
                        at: td / 2 + tr / 2,
                        nanos,
                        bound_nanos,
                    })
                }
                _ => None,
            })
            .collect();
        Track::new(marks)
    }
}

/// One measurement of a point's clock offset: at `at` (the first point's time), within `bound_nanos`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mark {
    pub at: u64,
    pub nanos: i64,
    pub bound_nanos: i64,
}

/// A point's clock offset over time, on top of the one it was corrected by: straight lines between the
/// marks, and before the first and after the last the line of the drift (the first mark's and the last's
/// offsets when there is no drift to tell); 0 without marks.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Track {
    pub marks: Vec<Mark>,
    ppm: Option<f64>,
}

impl Track {
    pub fn new(marks: Vec<Mark>) -> Track {
        let ppm = Track::fit(&marks);
        Track { marks, ppm }
    }

    pub fn at(&self, t: u64) -> i64 {
        let i = self.marks.partition_point(|m| m.at <= t);
        match (i.checked_sub(1).map(|j| self.marks[j]), self.marks.get(i)) {
            (Some(a), Some(b)) if b.at > a.at => {
                let f = (t - a.at) as f64 / (b.at - a.at) as f64;
                a.nanos
                    .saturating_add(((b.nanos as f64 - a.nanos as f64) * f).round() as i64)
            }
            (Some(a), _) => a.nanos.saturating_add(self.drifted(t as f64 - a.at as f64)),
            (None, Some(b)) => b.nanos.saturating_add(self.drifted(t as f64 - b.at as f64)),
            (None, None) => 0,
        }
    }

    /// How far the clock drifts in `nanos`.
    fn drifted(&self, nanos: f64) -> i64 {
        self.ppm.map_or(0, |ppm| (nanos * ppm / 1e6).round() as i64)
    }

    /// How fast the clock ran against the point before's, in parts per million: the slope of the straight
    /// line (what a crystal's error is) fitted through the marks, each weighted by how closely it bounds
    /// its offset; `None` with marks less than half a second apart.
    pub fn drift_ppm(&self) -> Option<f64> {
        self.ppm
    }

    fn fit(marks: &[Mark]) -> Option<f64> {
        let (a, b) = (marks.first()?, marks.last()?);
        b.at.checked_sub(a.at).filter(|&s| s >= 500_000_000)?;
        // Weighted least squares, times from the first mark (µs: no loss of precision in f64).
        let (mut sw, mut st, mut sy, mut stt, mut sty) = (0.0, 0.0, 0.0, 0.0, 0.0);
        for m in marks {
            let w = 1.0 / (m.bound_nanos as f64 + 1000.0).powi(2);
            let (t, y) = ((m.at - a.at) as f64 / 1e3, m.nanos as f64 / 1e3);
            sw += w;
            st += w * t;
            sy += w * y;
            stt += w * t * t;
            sty += w * t * y;
        }
        let spread = sw * stt - st * st;
        (spread > 0.0).then(|| (sw * sty - st * sy) / spread * 1e6)
    }
}

/// `t - t0` in nanoseconds, saturated (hostile times may lie anywhere in 64 bits).
fn apart(t: u64, t0: u64) -> i64 {
    (i128::from(t) - i128::from(t0)).clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

/// The middle of `[-r, d]` and half its width: an offset and its bound.
fn middle(d: i64, r: i64) -> (i64, i64) {
    let (d, r) = (i128::from(d), i128::from(r));
    let clamp = |x: i128| x.clamp(0, i128::from(i64::MAX)) as i64;
    (((d - r) / 2) as i64, clamp(((d + r) / 2).abs()))
}

/// The clock offset of a point against the point before it on the path (or, added up by [`offsets`],
/// against the first), from packets both saw. A request reaching the point `d` after the point before saw
/// it bounds the offset from above (`offset <= d`: its delay is not negative), a response reaching the
/// point before `r` after the point saw it bounds it from below (`offset >= -r`). With both directions the
/// offset lies in `[-min r, min d]`: the estimate is that interval's middle and its bound half its width
/// (half the smallest round trip), whatever the queueing; with one direction only, the one bound is taken
/// (the delay as 0) and no error bound can be given.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Offset {
    pub nanos: i64,
    /// The true offset lies within `nanos ± bound_nanos` (both directions matched).
    pub bound_nanos: Option<i64>,
    pub matched: usize,
    /// Samples left out: their bounds contradicted the others' (a packet stamped wrong at one point).
    pub rejected: usize,
}

impl Offset {
    pub fn both_directions(&self) -> bool {
        self.bound_nanos.is_some()
    }
}

/// Estimates the offset of each point against the first from `(first_ts, sighting)` lists (the first
/// packets of each point): each point against the one before it on the path, added up along the path (the
/// bounds too). Neighbours share the most packets, and each segment's delay then rests on its own round
/// trip: it is never negative, as it can be when two points are each measured against a third.
pub fn offsets(points: &[Vec<(u64, Sighting)>]) -> Vec<Offset> {
    let mut out: Vec<Offset> = Vec::with_capacity(points.len());
    for (i, p) in points.iter().enumerate() {
        let step = offset_between(&points[i.saturating_sub(1)], p);
        out.push(match out.last() {
            Some(before) => Offset {
                nanos: before.nanos.saturating_add(step.nanos),
                bound_nanos: before
                    .bound_nanos
                    .zip(step.bound_nanos)
                    .map(|(a, b)| a.saturating_add(b)),
                matched: step.matched,
                rejected: step.rejected,
            },
            None => step,
        });
    }
    out
}

/// The offset of point `p` against point `before`, from the packets both saw.
fn offset_between(before: &[(u64, Sighting)], p: &[(u64, Sighting)]) -> Offset {
    let mut at_before: FxHashMap<u64, u64> = FxHashMap::default();
    for (t, s) in before {
        at_before.entry(s.key).or_insert(*t);
    }
    // Each request's delay bounds the offset from above, each response's from below.
    let (mut above, mut below, mut matched) = (Vec::new(), Vec::new(), 0);
    let mut seen: FxHashMap<u64, ()> = FxHashMap::default();
    for (t, s) in p {
        let Some(&t0) = at_before.get(&s.key) else {
            continue;
        };
        if seen.insert(s.key, ()).is_some() {
            continue; // a resend with the same bytes: its first sighting is the one matched
        }
        matched += 1;
        let d = apart(*t, t0);
        if s.reverse {
            below.push(d);
        } else {
            above.push(d);
        }
    }
    let (fwd, low, rejected) = consistent_bounds(above, below);
    let rev = low.map(i64::saturating_neg);
    let (nanos, bound_nanos) = match (fwd, rev) {
        (Some(d), Some(r)) => {
            let (nanos, bound) = middle(d, r);
            (nanos, Some(bound))
        }
        (Some(d), None) => (d, None),
        (None, Some(r)) => (-r, None),
        (None, None) => (0, None),
    };
    Offset {
        nanos,
        bound_nanos,
        matched,
        rejected,
    }
}

/// The tightest upper bound (the least of `above`) and lower bound (the greatest of `below`) that do not
/// contradict each other, and how many samples were left out for it: while the lower bound lies above the
/// upper one, the more isolated of the two extremes (the farther from the next sample on its side) is a
/// packet stamped wrong, and goes.
fn consistent_bounds(
    mut above: Vec<i64>,
    mut below: Vec<i64>,
) -> (Option<i64>, Option<i64>, usize) {
    above.sort_unstable();
    below.sort_unstable_by(|a, b| b.cmp(a));
    let (mut i, mut j) = (0, 0);
    while let (Some(&up), Some(&low)) = (above.get(i), below.get(j)) {
        if low <= up {
            break;
        }
        let gap = |next: Option<&i64>, x: i64| {
            next.map_or(i128::MAX, |n| (i128::from(*n) - i128::from(x)).abs())
        };
        if gap(below.get(j + 1), low) >= gap(above.get(i + 1), up) {
            j += 1;
        } else {
            i += 1;
        }
    }
    (above.get(i).copied(), below.get(j).copied(), i + j)
}

/// Every point's clock against the first: the offsets of the first packets, and how each point's clock
/// then moved against the one before it.
pub struct Clocks {
    pub offsets: Vec<Offset>,
    /// `tracks[k]`: point k against point k - 1 (`tracks[0]` is empty).
    pub tracks: Vec<Track>,
}

impl Clocks {
    /// Point `k`'s offset against the first at `ts` of its own clock.
    pub fn offset_at(&self, k: usize, ts: u64) -> i64 {
        let c = self.offsets.get(k).map_or(0, |o| o.nanos);
        let t = ts.saturating_add_signed(c.saturating_neg());
        self.tracks
            .iter()
            .take(k + 1)
            .fold(c, |sum, tr| sum.saturating_add(tr.at(t)))
    }

    /// How fast point `k`'s clock ran against the first's (ppm), when every segment up to it tells (not
    /// for the first point itself).
    pub fn drift_ppm(&self, k: usize) -> Option<f64> {
        if k == 0 {
            return None;
        }
        (1..=k).map(|j| self.tracks.get(j)?.drift_ppm()).sum()
    }

    /// Point `k`'s offset as last measured, when every segment up to it was measured again (not for the
    /// first point itself).
    pub fn offset_at_end(&self, k: usize) -> Option<i64> {
        if k == 0 {
            return None;
        }
        let moved: Option<i64> = (1..=k)
            .map(|j| Some(self.tracks.get(j)?.marks.last()?.nanos))
            .sum();
        Some(self.offsets.get(k)?.nanos.saturating_add(moved?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parsers::frame::Addr;

    fn s(key: u64, reverse: bool) -> Sighting {
        Sighting {
            key,
            flow: FlowKey {
                src: Addr::V4([10, 0, 0, 1]),
                dst: Addr::V4([10, 0, 0, 2]),
                dest_qp: 7,
            },
            psn: key as u32,
            reverse,
        }
    }

    #[test]
    fn three_points_segments_misses_and_the_window() {
        let mut m = Matcher::new(3, 1000);
        let mut lost = Vec::new();
        let mut on = |l: Lost| lost.push((l.psn, l.from, l.to, l.ts));
        // Request 1 everywhere; request 2 lost between points 1 and 2; request 3 missed by point 1;
        // response 4 (path 2, 1, 0) seen at point 2 only.
        for (point, ts, key, rev) in [
            (0, 10, 1, false),
            (1, 20, 1, false),
            (2, 30, 1, false),
            (0, 40, 2, false),
            (1, 55, 2, false),
            (0, 60, 3, false),
            (2, 80, 3, false),
            (2, 90, 4, true),
        ] {
            m.see(point, ts, s(key, rev), &mut on);
        }
        assert_eq!(m.pending.len(), 4);
        // 2000 ns on: every window has passed.
        m.see(0, 2100, s(9, false), &mut on);
        assert_eq!(m.pending.len(), 1);
        m.finish(&mut on);
        assert!(m.pending.is_empty() && m.expiry.is_empty());
        assert_eq!(lost, [(2, 1, 2, 55), (4, 2, 1, 90), (9, 0, 1, 2100)]);
        assert_eq!(m.missed[..3], [0, 1, 0]);
        assert_eq!(m.complete, 2);
        assert_eq!(
            (m.delay[0].samples, m.delay[0].min, m.delay[0].max),
            (2, 10, 15)
        );
        assert_eq!((m.delay[1].samples, m.delay[1].min), (1, 10));
    }

    #[test]
    fn a_drift_is_followed_span_by_span_and_its_spans_stay_bounded() {
        // The point's clock gains 1 µs every 10 ms (100 ppm: offset t / 10^4); requests take 20 µs to
        // reach it, responses 20 µs to come back. A request at t: d = off(t) + 20 µs; a response at t:
        // d = off(t) - 20 µs.
        let off = |t: u64| (t / 10_000) as i64;
        let mut d = Drift::default();
        for i in 0..2_000u64 {
            let t = i * 1_000_000; // one packet each way every ms, for 2 s
            d.add(t, off(t) + 20_000, false);
            d.add(t + 500_000, off(t + 500_000) - 20_000, true);
        }
        let track = d.track();
        assert_eq!(track.marks.len(), 20, "one mark per 100 ms span");
        // Span 3 (300-400 ms): the smallest d is the first request's (300 ms: 30 + 20 µs), the smallest
        // -d the last response's (399.5 ms: 20 - 39.95 µs); the mark is the middle of the two times, the
        // offset there (34.975 µs), within half the apparent round trip.
        let m = track.marks[3];
        assert_eq!(
            (m.at, m.nanos, m.bound_nanos),
            (349_750_000, 34_975, (50_000 - 19_950) / 2)
        );
        let ppm = track.drift_ppm().unwrap();
        assert!((ppm - 100.0).abs() < 1e-6, "{ppm}");
        // Between marks a straight line; past the last one the drift's line.
        assert_eq!(track.at(1_000_000_000), 100_000);
        assert!((track.at(3_000_000_000) - 300_000).abs() <= 1);
        assert_eq!(Track::default().at(5), 0);
        // A hostile time far ahead merges spans instead of growing them.
        d.add(u64::MAX / 2, 0, false);
        assert!(d.spans.len() <= DRIFT_SPANS && d.width > DRIFT_SPAN_NANOS);
    }

    #[test]
    fn hostile_times_saturate() {
        let a = vec![(0, s(1, false)), (u64::MAX, s(2, true))];
        let b = vec![(u64::MAX, s(1, false)), (0, s(2, true))];
        // The request bounds the offset by i64::MAX from above, the response by -i64::MAX from below.
        let o = offsets(&[a, b]);
        assert_eq!((o[1].nanos, o[1].bound_nanos), (0, Some(i64::MAX)));
        let clocks = Clocks {
            offsets: o,
            tracks: vec![Track::default(), Track::default()],
        };
        assert_eq!(clocks.offset_at(1, u64::MAX), 0);
        let mut m = Matcher::new(2, 1000).following_clocks();
        let mut none = |_: Lost| {};
        m.see(0, 0, s(3, false), &mut none);
        m.see(1, u64::MAX, s(3, false), &mut none);
        m.finish(&mut none);
        assert_eq!(m.complete, 1);
        let _ = m.tracks();
    }

    #[test]
    fn offsets_from_both_directions_and_from_one() {
        // Point 1's clock is 1000 ahead; requests take 100 to reach it, responses 100 to come back, but
        // for request 3, held 700 in a queue, and response 4, 300. The offset lies in [1000 - 100,
        // 1000 + 100]: its middle, 1000, within 100.
        let first = vec![
            (0, s(1, false)),
            (500, s(2, true)),
            (600, s(3, false)),
            (900, s(4, true)),
        ];
        let second = vec![
            (1100, s(1, false)),
            (1400, s(2, true)),
            (2300, s(3, false)),
            (1600, s(4, true)),
            (2600, s(3, false)),
        ];
        let o = offsets(&[first.clone(), second]);
        assert_eq!(
            (o[1].nanos, o[1].bound_nanos, o[1].matched),
            (1000, Some(100), 4)
        );
        assert_eq!(o[0].nanos, 0);
        let one = offsets(&[first.clone(), vec![(1100, s(1, false))]]);
        assert_eq!((one[1].nanos, one[1].both_directions()), (1100, false));
        // A third point 300 ahead of the second, sharing packets with the second only: each point against
        // the one before it, added up (1000 + 300), the bounds too (100 + 50).
        let second = vec![
            (1100, s(1, false)),
            (1400, s(2, true)),
            (5000, s(7, false)),
            (5000, s(8, true)),
        ];
        let third = vec![(5350, s(7, false)), (5250, s(8, true))];
        let o = offsets(&[first, second, third]);
        assert_eq!(
            (o[2].nanos, o[2].bound_nanos, o[2].matched),
            (1300, Some(150), 2)
        );
    }
}
