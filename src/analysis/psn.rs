//! The requester-side PSN tracker (the 24-bit arithmetic is `parsers::psn`).
pub use parsers::psn::{MTUS, add, diff, read_psns};

/// How far behind the highest PSN a response may still acknowledge, on a long connection (half the PSN
/// space: serial arithmetic cannot tell further).
const WINDOW_BEHIND: i32 = 1 << 22;

/// True when the READ `(psn, len)` before a request at `next` ends there: at the path MTU `mtu`, or at
/// some MTU when it is not known.
fn ends_at((read_psn, len): (u32, u32), next: u32, mtu: Option<u32>) -> bool {
    match mtu {
        Some(m) => add(read_psn, read_psns(len, m)) == next,
        None => MTUS
            .iter()
            .any(|m| add(read_psn, read_psns(len, *m)) == next),
    }
}

/// Which request PSNs were seen, for the last `WINDOW` PSNs up to the highest: enough to tell a
/// go-back-N duplicate from the first copy of a PSN that had been missing, in bounded memory. A flow whose
/// PSNs all fall within 128 of its first keeps them in 16 inline bytes; the 512-byte window is allocated
/// when one falls outside (most flows of a scan or a short connection never need it).
#[derive(Debug, Clone, Default)]
pub struct SeenWindow {
    bits: Bits,
    /// The highest PSN marked so far.
    top: u32,
    started: bool,
}

#[derive(Debug, Clone)]
enum Bits {
    /// PSNs `base` to `base` + 127, bit i for `base` + i.
    Small { base: u32, bits: u128 },
    /// PSN p at bit p % WINDOW.
    Full(Box<[u64; SeenWindow::WORDS]>),
}

impl Default for Bits {
    fn default() -> Self {
        Bits::Small { base: 0, bits: 0 }
    }
}

impl SeenWindow {
    pub const WINDOW: u32 = 4096;
    const WORDS: usize = (Self::WINDOW / 64) as usize;
    /// How far before its first PSN the inline bits reach (a resend of requests sent before the capture).
    const SMALL_BEHIND: u32 = 32;

    fn slot(psn: u32) -> (usize, u64) {
        let i = psn % Self::WINDOW;
        ((i / 64) as usize, 1u64 << (i % 64))
    }

    /// Marks `psn` and returns whether it had been seen. PSNs older than the window count as seen.
    pub fn mark(&mut self, psn: u32) -> bool {
        if !self.started {
            self.started = true;
            self.top = psn;
            let base = add(psn, Self::SMALL_BEHIND.wrapping_neg());
            self.bits = Bits::Small {
                base,
                bits: 1 << Self::SMALL_BEHIND,
            };
            return false;
        }
        if let Bits::Small { base, bits } = &mut self.bits {
            let at = diff(psn, *base);
            if (0..128).contains(&at) {
                // Every PSN marked lies in the inline range: a bit set is a PSN seen, as in the full window.
                let bit = 1u128 << at;
                let seen = *bits & bit != 0;
                *bits |= bit;
                if diff(psn, self.top) > 0 {
                    self.top = psn;
                }
                return seen;
            }
            self.bits = Bits::Full(Self::spread(*base, *bits));
        }
        self.mark_full(psn)
    }

    /// The inline bits at their places in the full window.
    fn spread(base: u32, bits: u128) -> Box<[u64; Self::WORDS]> {
        let mut full = Box::new([0u64; Self::WORDS]);
        for i in (0..128).filter(|i| bits & (1u128 << i) != 0) {
            let (w, b) = Self::slot(add(base, i));
            if let Some(word) = full.get_mut(w) {
                *word |= b;
            }
        }
        full
    }

    fn mark_full(&mut self, psn: u32) -> bool {
        let Bits::Full(bits) = &mut self.bits else {
            return false;
        };
        let ahead = diff(psn, self.top);
        if ahead > 0 {
            // Clear the slots between the old top and the new one: they have not been seen.
            let steps = (ahead as u32).min(Self::WINDOW);
            for k in 1..=steps {
                let (w, b) = Self::slot(add(self.top, k));
                bits[w] &= !b;
            }
            self.top = psn;
        } else if -ahead >= Self::WINDOW as i32 {
            return true;
        }
        let (w, b) = Self::slot(psn);
        let seen = bits[w] & b != 0;
        bits[w] |= b;
        seen
    }
}

/// What one request packet did to the PSN sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The first request of the flow.
    First,
    /// The expected next PSN.
    InOrder,
    /// Ahead of the expected PSN: `missing` PSNs were skipped.
    Gap { expected: u32, missing: u32 },
    /// At or behind the highest PSN: a retransmission. `rewind` when it starts a go-back-N episode,
    /// `duplicate` when this exact PSN was already seen.
    Retransmit { duplicate: bool, rewind: bool },
    /// Behind the expected PSN, on a PSN a READ consumed but did not start (a READ request is resent from
    /// its first PSN): a new request reusing the READ's PSNs, not a retransmission.
    Reuse { read_psn: u32, read_psns: u32 },
}

/// What [`RequestPsns::request`] made of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Taken {
    pub step: Step,
    /// The responder takes it (it carries the responder's expected PSN).
    pub taken: bool,
    /// It was taken as in order by guessing the path MTU of the READ before it (PSN, DMA length): to be
    /// checked once the MTU is known.
    pub guessed_read: Option<(u32, u32)>,
}

/// READs remembered for telling a reuse of their PSNs from a resend.
const READS_KEPT: usize = 8;

/// The requester-side PSN state of a flow.
#[derive(Debug, Clone, Default)]
pub struct RequestPsns {
    pub first: u32,
    /// The highest request PSN seen (serially).
    pub highest: u32,
    /// The PSN the next new request should carry.
    pub next: u32,
    /// The successor of the previous request packet, whatever it was: a retransmission behind it starts a
    /// new go-back-N episode.
    prev_next: u32,
    pub(crate) started: bool,
    /// A READ whose PSN consumption is not known yet (path MTU unknown): (PSN, DMA length).
    pending_read: Option<(u32, u32)>,
    /// The responder's expected PSN, as an RC responder keeps it: it takes only the request carrying it
    /// and drops the rest until go-back-N brings it. Messages are built from what it takes.
    epsn: u32,
    /// The last request taken was a READ of unknown PSN consumption: (PSN, DMA length).
    epsn_read: Option<(u32, u32)>,
    seen: SeenWindow,
    /// The last READs: (first PSN, PSNs it takes), newest at `reads_at - 1`.
    reads: [(u32, u32); READS_KEPT],
    reads_at: usize,
    pub gap_events: u64,
    pub missing: u64,
    pub retransmitted: u64,
    pub duplicates: u64,
    pub episodes: u64,
    /// New requests on PSNs a READ consumed.
    pub reused: u64,
    /// Requests the responder found ahead of its expected PSN (out of sequence: it drops them) and behind
    /// it (duplicates of requests it had taken), as an RC responder receiving exactly these requests would.
    pub ahead_epsn: u64,
    pub behind_epsn: u64,
}

impl RequestPsns {
    /// Feeds one request. `consumes` is the number of PSNs it takes (READ: one per response packet),
    /// or `None` for a READ of `read_len` bytes while the path MTU is unknown; `mtu` is the path MTU known
    /// now, if any (it settles the PSNs of a READ before this request). Returns what it did to the
    /// sequence.
    pub fn request(
        &mut self,
        psn: u32,
        consumes: Option<u32>,
        read_len: u32,
        mtu: Option<u32>,
    ) -> Taken {
        let width = consumes.unwrap_or(1);
        let unknown_read = consumes.is_none().then_some((psn, read_len));
        if width > 1 {
            self.remember_read(psn, width);
        }
        if !self.started {
            self.started = true;
            self.first = psn;
            self.highest = add(psn, width - 1);
            self.next = add(psn, width);
            self.prev_next = self.next;
            self.pending_read = unknown_read;
            self.epsn = self.next;
            self.epsn_read = unknown_read;
            self.mark(psn, width);
            return Taken {
                step: Step::First,
                taken: true,
                guessed_read: None,
            };
        }
        let taken = psn == self.epsn || self.epsn_read.is_some_and(|r| ends_at(r, psn, mtu));
        if !taken && self.epsn_read.is_none() {
            // What the responder makes of it: ahead of its expected PSN (out of sequence) or behind it
            // (a duplicate of a request it had taken).
            let d = diff(psn, self.epsn);
            self.ahead_epsn += u64::from(d > 0);
            self.behind_epsn += u64::from(d < 0);
        }
        if taken {
            self.epsn = add(psn, width);
            self.epsn_read = unknown_read;
        }
        let (expected, guessed_read) = self.settle_read_before(psn, mtu);
        let ahead = diff(psn, expected);
        let step = if ahead == 0 {
            Step::InOrder
        } else if ahead > 0 {
            self.gap_events += 1;
            self.missing += ahead as u64;
            Step::Gap {
                expected,
                missing: ahead as u32,
            }
        } else if let Some((read_psn, read_psns)) = self.read_inside(psn) {
            self.reused += 1;
            Step::Reuse {
                read_psn,
                read_psns,
            }
        } else {
            self.resend(psn)
        };
        let end = add(psn, width);
        self.prev_next = end;
        if diff(end, self.next) > 0 {
            self.next = end;
            self.highest = add(end, u32::MAX);
            self.pending_read = unknown_read;
        }
        self.mark(psn, width);
        Taken {
            step,
            taken,
            guessed_read: guessed_read.filter(|_| step == Step::InOrder),
        }
    }

    /// The PSN expected now: a READ of unknown PSN consumption before this request took one PSN per
    /// response packet, at the known path MTU, or else at any MTU whose consumption ends at `psn` (then
    /// the READ is returned as guessed).
    fn settle_read_before(&mut self, psn: u32, mtu: Option<u32>) -> (u32, Option<(u32, u32)>) {
        let Some((read_psn, len)) = self.pending_read.take() else {
            return (self.next, None);
        };
        let width = match mtu {
            Some(m) => Some(read_psns(len, m)),
            None => MTUS
                .iter()
                .map(|m| read_psns(len, *m))
                .find(|n| add(read_psn, *n) == psn),
        };
        let Some(n) = width else {
            return (self.next, None);
        };
        self.remember_read(read_psn, n);
        let expected = add(read_psn, n);
        if diff(expected, self.next) > 0 {
            self.next = expected;
            self.highest = add(expected, u32::MAX);
        }
        (self.next, mtu.is_none().then_some((read_psn, len)))
    }

    /// A request behind the expected PSN that is not a reuse: a retransmission.
    fn resend(&mut self, psn: u32) -> Step {
        // A resend of a PSN shortly before the first one seen (within a window): its first copy was
        // lost before the capture point, or the capture started after it. The flow's PSN space starts
        // there. (Far behind is not a resend: a new connection on the QP number.)
        let before_first = diff(psn, self.first);
        if before_first < 0 && before_first > -(SeenWindow::WINDOW as i32) {
            self.first = psn;
        }
        let duplicate = self.seen_before(psn);
        // Going back starts an episode; a skip forward within the resends is a resend lost before the
        // capture point, not a new go-back-N.
        let rewind = diff(psn, self.prev_next) < 0;
        self.retransmitted += 1;
        self.duplicates += u64::from(duplicate);
        self.episodes += u64::from(rewind);
        Step::Retransmit { duplicate, rewind }
    }

    fn remember_read(&mut self, psn: u32, width: u32) {
        if let Some(slot) = self.reads.get_mut(self.reads_at % READS_KEPT) {
            *slot = (psn, width);
        }
        self.reads_at += 1;
    }

    /// The READ (first PSN, PSNs) whose PSNs hold `psn` past its first, if one of the last ones does.
    fn read_inside(&self, psn: u32) -> Option<(u32, u32)> {
        let kept = self.reads_at.min(READS_KEPT);
        (1..=kept)
            .filter_map(|back| self.reads.get((self.reads_at - back) % READS_KEPT))
            .copied()
            .find(|&(start, width)| {
                let into = diff(psn, start);
                into > 0 && (into as u32) < width
            })
    }

    /// A new connection on the flow's QP number: the PSN space starts again at the next request (the
    /// counts are kept).
    pub fn new_epoch(&mut self) {
        *self = RequestPsns {
            gap_events: self.gap_events,
            missing: self.missing,
            retransmitted: self.retransmitted,
            duplicates: self.duplicates,
            episodes: self.episodes,
            reused: self.reused,
            ahead_epsn: self.ahead_epsn,
            behind_epsn: self.behind_epsn,
            ..RequestPsns::default()
        };
    }

    /// The PSNs a response may name: from the first request of the connection (or a window behind the
    /// highest, on a long one) to the highest, widened for a READ whose consumption is not known yet.
    pub fn window(&self) -> (u32, u32) {
        let hi = match self.pending_read {
            Some((psn, len)) => add(psn, read_psns(len, MTUS[0]) - 1),
            None => self.highest,
        };
        let span = diff(hi, self.first);
        let lo = if (0..WINDOW_BEHIND).contains(&span) {
            self.first
        } else {
            add(hi, (WINDOW_BEHIND as u32).wrapping_neg())
        };
        (lo, hi)
    }

    /// At the end of the capture: the last READ's PSN consumption, with the path MTU known by then.
    pub fn settle(&mut self, mtu: Option<u32>) {
        if let (Some((psn, len)), Some(m)) = (self.pending_read, mtu) {
            let end = add(psn, read_psns(len, m));
            if diff(end, self.next) > 0 {
                self.next = end;
                self.highest = add(end, u32::MAX);
            }
            self.pending_read = None;
        }
    }

    fn seen_before(&mut self, psn: u32) -> bool {
        self.seen.mark(psn)
    }

    fn mark(&mut self, psn: u32, width: u32) {
        for k in 0..width.min(SeenWindow::WINDOW) {
            self.seen.mark(add(psn, k));
        }
    }

    /// True when `psn` lies in the PSN space this flow has used (for pairing responses with requests).
    pub fn covers(&self, psn: u32) -> bool {
        self.started && diff(psn, self.first) >= 0 && diff(psn, self.next) < 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A window that is full from the start: what the inline bits must answer like.
    fn full_window() -> SeenWindow {
        SeenWindow {
            bits: Bits::Full(Box::new([0; SeenWindow::WORDS])),
            ..SeenWindow::default()
        }
    }

    fn mark_full_from_start(w: &mut SeenWindow, psn: u32) -> bool {
        if !w.started {
            w.started = true;
            w.top = psn;
        }
        w.mark_full(psn)
    }

    /// The inline bits and their spread into the full window answer exactly as a full window does, for
    /// sequences that stay within the inline range, leave it forward or backward, and wrap the PSN space.
    #[test]
    fn small_window_answers_as_the_full_one() {
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = |n: u32| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % u64::from(n)) as u32
        };
        for start in [0, 1000, 0xff_ffc0] {
            for spread in [40, 130, 300, 9000] {
                let (mut small, mut full) = (SeenWindow::default(), full_window());
                let mut small_was_used = false;
                for i in 0..400 {
                    let psn = add(start, next(spread)).wrapping_sub(spread / 4) & 0xff_ffff;
                    let (a, b) = (small.mark(psn), mark_full_from_start(&mut full, psn));
                    assert_eq!(a, b, "start {start} spread {spread} mark {i} of PSN {psn}");
                    small_was_used |= matches!(small.bits, Bits::Small { .. }) && i > 0;
                }
                assert!(
                    small_was_used || spread > 128,
                    "start {start} spread {spread}"
                );
                assert_eq!(small.top, full.top);
            }
        }
        // A one-packet flow allocates nothing.
        let mut w = SeenWindow::default();
        w.mark(7);
        assert!(matches!(w.bits, Bits::Small { .. }));
    }

    #[test]
    fn gap_then_go_back_n() {
        let mut t = RequestPsns::default();
        // 1, 2, (3 and 4 lost), 5, 6, then go-back-N from 3: 3, 4, 5, 6, then 7.
        // The responder drops 5 and 6 (it expects 3) and takes the resent 3-6.
        let expected = [
            (1, Step::First, true),
            (2, Step::InOrder, true),
            (
                5,
                Step::Gap {
                    expected: 3,
                    missing: 2,
                },
                false,
            ),
            (6, Step::InOrder, false),
            (
                3,
                Step::Retransmit {
                    duplicate: false,
                    rewind: true,
                },
                true,
            ),
            (
                4,
                Step::Retransmit {
                    duplicate: false,
                    rewind: false,
                },
                true,
            ),
            (
                5,
                Step::Retransmit {
                    duplicate: true,
                    rewind: false,
                },
                true,
            ),
            (
                6,
                Step::Retransmit {
                    duplicate: true,
                    rewind: false,
                },
                true,
            ),
            (7, Step::InOrder, true),
        ];
        for (psn, step, taken) in expected {
            let got = t.request(psn, Some(1), 0, None);
            assert_eq!((got.step, got.taken), (step, taken), "PSN {psn}");
        }
        assert_eq!(
            (
                t.gap_events,
                t.missing,
                t.retransmitted,
                t.duplicates,
                t.episodes
            ),
            (1, 2, 4, 2, 1)
        );
    }

    /// What the responder counts (rxe's and mlx5's out-of-sequence and duplicate_request): 5 and 6 arrive
    /// while it expects 3 (ahead), the go-back-N 3-6 is taken, then 6 and 7 again after 7 was taken (behind).
    #[test]
    fn the_responders_view_of_the_same_requests() {
        let mut t = RequestPsns::default();
        for psn in [1, 2, 5, 6, 3, 4, 5, 6, 7, 6, 7, 8] {
            t.request(psn, Some(1), 0, None);
        }
        assert_eq!((t.ahead_epsn, t.behind_epsn), (2, 2));
    }

    #[test]
    fn a_first_request_lost_before_the_capture_point_starts_the_psn_space() {
        let mut t = RequestPsns::default();
        // PSN 10 was lost before the capture: 11 and 12 come first, then go-back-N resends 10, 11, 12.
        for psn in [11, 12, 10, 11, 12, 13] {
            t.request(psn, Some(1), 0, None);
        }
        assert_eq!((t.first, t.highest, t.next), (10, 13, 14));
        assert_eq!((t.retransmitted, t.episodes, t.gap_events), (3, 1, 0));
        assert!(t.covers(10) && !t.covers(9));
    }

    #[test]
    fn a_copy_seen_before_the_loss_point_is_taken_once() {
        let mut t = RequestPsns::default();
        // 2 reached the capture but not the responder: NAK, then 2 and 3 again.
        for (psn, taken) in [
            (1, true),
            (2, true),
            (3, true),
            (2, false),
            (3, false),
            (4, true),
        ] {
            assert_eq!(t.request(psn, Some(1), 0, None).taken, taken, "PSN {psn}");
        }
    }

    #[test]
    fn read_with_unknown_mtu_is_not_a_gap() {
        let mut t = RequestPsns::default();
        t.request(100, None, 3000, None);
        // At MTU 1024 the READ took PSNs 100-102.
        let next = t.request(103, Some(1), 0, None);
        assert_eq!((next.step, next.taken), (Step::InOrder, true));
        // Guessed at MTU 1024: to be checked once the MTU is known.
        assert_eq!(next.guessed_read, Some((100, 3000)));
        assert_eq!(t.gap_events, 0);
    }

    #[test]
    fn a_request_on_a_psn_the_read_consumed_is_a_reuse_not_a_resend() {
        // The corpus' rping stall: a READ of 2400 bytes at PSN 7488511, path MTU 1024 (learnt from its
        // first response), takes 7488511-7488513; the next SEND carries 7488513.
        let mut t = RequestPsns::default();
        t.request(7_488_511, None, 2400, None);
        let send = t.request(7_488_513, Some(1), 0, Some(1024));
        assert_eq!(
            send.step,
            Step::Reuse {
                read_psn: 7_488_511,
                read_psns: 3
            }
        );
        assert_eq!((t.reused, t.retransmitted, t.next), (1, 0, 7_488_514));
        // The READ resent from its first PSN is a retransmission.
        let again = t.request(7_488_511, None, 2400, Some(1024));
        assert!(matches!(again.step, Step::Retransmit { .. }));
        // With the MTU known from the start the READ takes 3 PSNs at once.
        let mut k = RequestPsns::default();
        k.request(10, Some(3), 2400, Some(1024));
        assert!(matches!(
            k.request(12, Some(1), 0, Some(1024)).step,
            Step::Reuse { .. }
        ));
    }

    #[test]
    fn the_response_window_spans_the_connection() {
        let mut t = RequestPsns::default();
        for psn in [0xFF_FFFE, 0xFF_FFFF, 0, 1] {
            t.request(psn, Some(1), 0, None);
        }
        assert_eq!(t.window(), (0xFF_FFFE, 1));
        // An unknown READ widens the top by what it could take at the smallest MTU.
        t.request(2, None, 1024, None);
        assert_eq!(t.window(), (0xFF_FFFE, 5));
        t.new_epoch();
        t.request(500, Some(1), 0, None);
        assert_eq!((t.first, t.window()), (500, (500, 500)));
    }
}
