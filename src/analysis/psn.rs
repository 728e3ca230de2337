//! The requester-side PSN tracker (the 24-bit arithmetic is `parsers::psn`).
use std::cmp::Ordering;

use super::recent::Recent;
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
/// go-back-N duplicate from the first copy of a PSN that had been missing, in bounded memory. The last 128
/// PSNs up to the highest are held in 16 inline bytes, and the PSNs below them never seen as a few ranges
/// ([`Holes`]): a flow whose missing PSNs all came (held up, or resent by its go-back-N) keeps the whole
/// window inline. The 512-byte window is allocated only when more ranges stay unseen than the inline
/// place holds (docs/speed.md "Many flows").
#[derive(Debug, Clone, Default)]
pub struct SeenWindow {
    bits: Bits,
    /// The highest PSN marked so far.
    top: u32,
    started: bool,
}

#[derive(Debug, Clone)]
enum Bits {
    Inline(Inline),
    /// PSN p at bit p % WINDOW.
    Full(Box<[u64; SeenWindow::WORDS]>),
}

impl Default for Bits {
    fn default() -> Self {
        Bits::Inline(Inline::default())
    }
}

/// The window inline: PSNs `base` to `base` + 127 in `bits` (bit i for `base` + i; the highest PSN is
/// among them); below `base`, every PSN of the window was seen but those in `holes`.
#[derive(Debug, Clone, Copy, Default)]
struct Inline {
    base: u32,
    /// The 128 bits as two words: a `u128` would align the window, and the flow's state, to 16 bytes.
    bits: [u64; 2],
    holes: Holes,
}

/// PSN ranges never seen, in PSN order, at most [`Holes::MAX`].
#[derive(Debug, Clone, Copy, Default)]
struct Holes {
    ranges: [Hole; Holes::MAX],
    len: u8,
}

/// PSNs `from` to `from` + `len` - 1.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Hole {
    from: u32,
    len: u32,
}

impl Hole {
    fn holds(self, psn: u32) -> bool {
        (0..self.len as i64).contains(&i64::from(diff(psn, self.from)))
    }
}

impl Holes {
    /// The PSNs before a flow's first, one lost request and one more: past that, the full window.
    const MAX: usize = 3;

    fn iter(&self) -> impl Iterator<Item = Hole> + '_ {
        self.ranges.iter().take(usize::from(self.len)).copied()
    }

    fn holds(&self, psn: u32) -> bool {
        self.iter().any(|h| h.holds(psn))
    }

    /// Adds the range `hole`, after every range held, less its PSNs before `lowest`. False when there is
    /// no room for it.
    fn push(&mut self, hole: Hole, lowest: u32) -> bool {
        let cut = diff(lowest, hole.from).max(0) as u32;
        if cut >= hole.len {
            return true;
        }
        let hole = Hole {
            from: add(hole.from, cut),
            len: hole.len - cut,
        };
        let n = usize::from(self.len);
        if let Some(last) = n.checked_sub(1).and_then(|i| self.ranges.get_mut(i))
            && add(last.from, last.len) == hole.from
        {
            last.len += hole.len;
            return true;
        }
        let Some(slot) = self.ranges.get_mut(n) else {
            return false;
        };
        *slot = hole;
        self.len += 1;
        true
    }

    /// Forgets the PSNs before `lowest`: older than the window, they count as seen.
    fn forget_before(&mut self, lowest: u32) {
        let kept = *self;
        *self = Holes::default();
        for h in kept.iter() {
            self.push(h, lowest);
        }
    }

    /// `psn` was seen: it leaves its range. Returns whether it had been seen (in no range), or `None` when
    /// splitting its range takes more room than there is.
    fn fill(&mut self, psn: u32) -> Option<bool> {
        let n = usize::from(self.len);
        let Some(i) = self.iter().position(|h| h.holds(psn)) else {
            return Some(true);
        };
        let h = self.ranges[i];
        let into = diff(psn, h.from) as u32;
        let before = Hole {
            from: h.from,
            len: into,
        };
        let after = Hole {
            from: add(psn, 1),
            len: h.len - into - 1,
        };
        match (before.len > 0, after.len > 0) {
            (true, true) => {
                if n == Self::MAX {
                    return None;
                }
                self.ranges.copy_within(i + 1..n, i + 2);
                (self.ranges[i], self.ranges[i + 1]) = (before, after);
                self.len += 1;
            }
            (true, false) => self.ranges[i] = before,
            (false, true) => self.ranges[i] = after,
            (false, false) => {
                self.ranges.copy_within(i + 1..n, i);
                self.len -= 1;
            }
        }
        Some(false)
    }
}

impl Inline {
    fn bits(&self) -> u128 {
        u128::from(self.bits[0]) | (u128::from(self.bits[1]) << 64)
    }

    fn set_bits(&mut self, bits: u128) {
        self.bits = [bits as u64, (bits >> 64) as u64];
    }

    /// Marks `psn` when that changes no range: a PSN within the bits, or the next ones ahead of them, the
    /// PSNs leaving the bits all seen (a flow in order). Returns whether it had been seen.
    fn mark_in_place(&mut self, psn: u32) -> Option<bool> {
        let at = diff(psn, self.base);
        let bits = self.bits();
        if (0..128).contains(&at) {
            let bit = 1u128 << at;
            self.set_bits(bits | bit);
            return Some(bits & bit != 0);
        }
        let shift = u32::try_from(at - 127)
            .ok()
            .filter(|s| (1..128).contains(s))?;
        let leaving = (1u128 << shift) - 1;
        if bits & leaving != leaving {
            return None;
        }
        self.set_bits((bits >> shift) | 1 << 127);
        self.base = add(self.base, shift);
        // A range wholly older than the window goes: 2^24 PSNs later it would name new PSNs.
        let lowest = SeenWindow::lowest(psn);
        let oldest = self.holes.iter().next();
        if oldest.is_some_and(|h| diff(lowest, add(h.from, h.len)) >= 0) {
            self.holes.forget_before(lowest);
        }
        Some(false)
    }

    /// Marks `psn`, not older than the window behind the highest PSN. Returns whether it had been seen, or
    /// `None` when the PSNs never seen take more ranges than there is room for.
    fn mark(&mut self, psn: u32) -> Option<bool> {
        let at = diff(psn, self.base);
        if at < 0 {
            return self.holes.fill(psn);
        }
        if at >= 128 {
            // Ahead of the highest: the bits move up to end at it.
            self.slide((at - 127) as u32, psn)?;
        }
        self.mark_in_place(psn)
    }

    /// Moves the bits `shift` PSNs up, `top` the new highest: the PSNs leaving them unseen become ranges.
    fn slide(&mut self, shift: u32, top: u32) -> Option<()> {
        let lowest = SeenWindow::lowest(top);
        self.holes.forget_before(lowest);
        let (bits, leaving) = (self.bits(), shift.min(128));
        let mut i = 0;
        while i < leaving {
            let unseen = (bits >> i).trailing_zeros().min(leaving - i);
            if unseen > 0 {
                let hole = Hole {
                    from: add(self.base, i),
                    len: unseen,
                };
                self.holes.push(hole, lowest).then_some(())?;
            }
            i += unseen;
            if i < leaving {
                i += (bits >> i).trailing_ones().min(leaving - i);
            }
        }
        if shift > 128 {
            // The PSNs between the bits and the new highest were never seen.
            let hole = Hole {
                from: add(self.base, 128),
                len: shift - 128,
            };
            self.holes.push(hole, lowest).then_some(())?;
        }
        self.set_bits(bits.checked_shr(shift).unwrap_or(0));
        self.base = add(self.base, shift);
        Some(())
    }

    /// Whether `psn`, within the window behind the highest and not ahead of it, was seen.
    fn contains(&self, psn: u32) -> bool {
        let at = diff(psn, self.base);
        if at < 0 {
            !self.holes.holds(psn)
        } else {
            at < 128 && self.bits() & (1u128 << at) != 0
        }
    }

    /// The same window, at its places in the full one (`top`: the highest PSN).
    fn spread(&self, top: u32) -> Box<[u64; SeenWindow::WORDS]> {
        let mut full = Box::new([u64::MAX; SeenWindow::WORDS]);
        let mut set = |psn: u32, seen: bool| {
            let (w, b) = SeenWindow::slot(psn);
            if let Some(word) = full.get_mut(w) {
                *word = if seen { *word | b } else { *word & !b };
            }
        };
        let lowest = SeenWindow::lowest(top);
        let mut holes = self.holes;
        holes.forget_before(lowest);
        for h in holes.iter() {
            for k in 0..h.len {
                set(add(h.from, k), false);
            }
        }
        let bits = self.bits();
        for i in (0..128).filter(|i| diff(add(self.base, *i), top) <= 0) {
            set(add(self.base, i), bits & (1u128 << i) != 0);
        }
        full
    }
}

impl SeenWindow {
    pub const WINDOW: u32 = 4096;
    const WORDS: usize = (Self::WINDOW / 64) as usize;
    /// How far before its first PSN the inline bits reach (a resend of requests sent before the capture).
    const SMALL_BEHIND: u32 = 32;

    /// The oldest PSN of the window whose highest is `top`.
    fn lowest(top: u32) -> u32 {
        add(top, 1u32.wrapping_sub(Self::WINDOW))
    }

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
            let lowest = Self::lowest(psn);
            // Nothing before the first PSN was seen.
            let mut holes = Holes::default();
            let before = Hole {
                from: lowest,
                len: diff(base, lowest) as u32,
            };
            holes.push(before, lowest);
            let mut inline = Inline {
                base,
                holes,
                ..Inline::default()
            };
            inline.set_bits(1 << Self::SMALL_BEHIND);
            self.bits = Bits::Inline(inline);
            return false;
        }
        let ahead = diff(psn, self.top);
        if let Bits::Inline(inline) = &mut self.bits {
            if -ahead >= Self::WINDOW as i32 {
                return true;
            }
            // In place when no range changes (a flow in order); else on a copy: a mark that finds no room
            // leaves the window as it was, to be spread.
            let marked = inline.mark_in_place(psn).or_else(|| {
                let mut next = *inline;
                let seen = next.mark(psn)?;
                *inline = next;
                Some(seen)
            });
            if let Some(seen) = marked {
                if ahead > 0 {
                    self.top = psn;
                }
                return seen;
            }
            self.bits = Bits::Full(inline.spread(self.top));
        }
        self.mark_full(psn)
    }

    /// Whether `psn` was seen, without marking it (PSNs older than the window count as seen).
    pub fn contains(&self, psn: u32) -> bool {
        if !self.started {
            return false;
        }
        let ahead = diff(psn, self.top);
        if ahead > 0 {
            return false;
        }
        if -ahead >= Self::WINDOW as i32 {
            return true;
        }
        match &self.bits {
            Bits::Inline(inline) => inline.contains(psn),
            Bits::Full(bits) => {
                let (w, b) = Self::slot(psn);
                bits[w] & b != 0
            }
        }
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
    /// `duplicate` when this exact PSN was already seen, `resumed` for a READ resumed mid-message (at the
    /// PSN of its first missing response, its VA and length advanced to it: IBTA 9.7.5.1.4).
    Retransmit {
        duplicate: bool,
        rewind: bool,
        resumed: bool,
    },
    /// Behind the highest PSN, the first copy of a PSN a recent gap skipped, soon after it and with no NAK
    /// that a resend could answer, outside any go-back-N under way: it was held up on the way (reordered by
    /// the network), not resent.
    /// `depth`: how many PSNs behind the highest it came.
    Reordered { depth: u32 },
    /// Behind the expected PSN, on a PSN a READ consumed but did not start, and not that READ resumed: a new
    /// request reusing the READ's PSNs, not a retransmission.
    Reuse { read_psn: u32, read_psns: u32 },
}

/// A READ request's RETH: what a resumed READ is held to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReadReth {
    pub va: u64,
    pub len: u32,
}

/// A READ the flow sent: its first PSN, the PSNs it takes (0 while the path MTU is not known), its RETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Read {
    psn: u32,
    psns: u32,
    reth: ReadReth,
    /// Its PSNs guessed from the request after it, the path MTU not known then.
    guessed: bool,
}

/// When a request came, and for how long after a gap a PSN it skipped may still be on its way (held up by
/// the network, not lost; 0: never).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Arrival {
    pub ts: u64,
    pub reorder_window: u64,
    /// The request's IPv4 ID.
    pub ip_id: Option<u16>,
    /// The flow's IDs, this one's included, follow the order its requests were sent in ([`SendOrder`]):
    /// set by `RequestPsns::request`.
    pub ids_in_send_order: bool,
}

/// Whether a flow's IPv4 IDs follow the order its requests were sent in, as the kernel's per-destination
/// counter (Soft-RoCE) and RNICs that count IDs do: an ID older than that of the request that opened a gap
/// was then sent before it, a first copy held up on the way however long it waited, never a resend. IDs
/// that stay the same (0, as some NICs send) or jump about (random) tell nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct SendOrder {
    newest: Option<u16>,
    /// Requests whose ID was near the newest before them, a counter's step after it (other flows' packets
    /// to the same host between) or a little behind it (held up on the way), and those whose ID was the
    /// same or far from it.
    near: u32,
    erratic: u32,
}

impl SendOrder {
    /// Near: within this many of the newest ID.
    const NEAR: i16 = 256;
    /// Near this many times first, and at least four near for each erratic ID.
    const TRUSTED_AFTER: u32 = 4;

    /// `at`, saying whether the flow's IDs, this one's included, follow its send order.
    fn vouch(&mut self, at: Arrival) -> Arrival {
        let Some(id) = at.ip_id else { return at };
        if let Some(newest) = self.newest {
            let d = id.wrapping_sub(newest) as i16;
            if d != 0 && (-Self::NEAR..=Self::NEAR).contains(&d) {
                self.near = self.near.saturating_add(1);
            } else {
                self.erratic = self.erratic.saturating_add(1);
            }
        }
        if self.newest.is_none_or(|newest| sent_before(newest, id)) {
            self.newest = Some(id);
        }
        let trusted =
            self.near >= Self::TRUSTED_AFTER && self.erratic.saturating_mul(4) <= self.near;
        Arrival {
            ids_in_send_order: trusted,
            ..at
        }
    }
}

/// IPv4 ID `a` came before `b` in a counter that wraps at 2^16.
fn sent_before(a: u16, b: u16) -> bool {
    (a.wrapping_sub(b) as i16) < 0
}

/// The last requests behind the highest PSN taken as resends although they may have been held up: a NAK
/// was there to answer, or a go-back-N was under way, and a gap that skipped them was recent. A run of
/// them in sequence (the PSNs a gap skipped, coming late one after the other, or a go-back-N's resends)
/// waits for what tells: the run's first PSN again (they were held up, this is the resend), a PSN seen
/// before (the go-back-N goes on: resends), or the reorder window's end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Unsure {
    psn: u32,
    /// The PSN after the run.
    next: u32,
    /// Requests in the run.
    count: u32,
    rewind: bool,
    /// How far behind the highest PSN the first came.
    depth: u32,
    /// The first PSN of the gap that skipped them.
    gap: u32,
    /// When the first came.
    ts: u64,
}

/// The longest run of unsure requests: past it, they are taken as resent.
pub(crate) const UNSURE_RUN: u32 = 16;

/// What the request after an unsure run made of it.
enum Told {
    Settled(Settled),
    /// Nothing yet: the run, and whether this request may join it.
    Waits {
        joins: bool,
    },
}

/// The PSNs a gap skipped, how many of them came since, held up, and when it came. `missing` 0: no gap.
/// `counted`: a gap of the sequence (`gap_events`, `missing`), not the PSNs before the first one seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Gap {
    from: u32,
    missing: u32,
    came: u32,
    ts: u64,
    counted: bool,
    /// The IPv4 ID of the request that opened it.
    sent: Option<u16>,
}

impl Gap {
    /// Whether the request at `at` was sent before (`Less`) or after (`Greater`) the one that opened the
    /// gap, as the flow's IPv4 IDs tell where they follow its send order.
    fn sent_against_opener(&self, at: Arrival) -> Option<Ordering> {
        let (id, opener) = at.ip_id.zip(self.sent).filter(|_| at.ids_in_send_order)?;
        if sent_before(id, opener) {
            Some(Ordering::Less)
        } else if sent_before(opener, id) {
            Some(Ordering::Greater)
        } else {
            None
        }
    }
}

/// The gaps remembered: a PSN of any of them may come late (the network holds several packets at once;
/// a loaded lab run's netem reordering opened 5 gaps in a burst of 30 requests, the first one's PSNs came
/// last).
pub(crate) const GAPS_KEPT: usize = 8;

/// A go-back-N under way: from a PSN a NAK named to the highest PSN sent when it began. A first copy of a
/// PSN in it may be its resend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct GoBack {
    from: u32,
    to: u32,
}

/// The PSN after the last resend of a go-back-N in sequence, and when that resend came.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ResentTo {
    next: u32,
    ts: u64,
}

/// What the request after an unsure one told of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settled {
    /// It was resent (go-back-N from it continued): a retransmission, as counted.
    Resent,
    /// The run's first PSN came again: the `count` first copies had been held up (the first `depth` PSNs
    /// behind the highest, each next one one less), this one is the resend. Counted again as reordered;
    /// `closes_gap`: the first PSN of their gap, when they were the last PSNs of that gap to come.
    HeldUp {
        depth: u32,
        count: u32,
        closes_gap: Option<u32>,
    },
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
    /// A first copy behind the highest PSN that may have been held up: the next request tells
    /// ([`Taken::settled`]).
    pub unsure: bool,
    /// What this request told of the unsure one before it.
    pub settled: Option<Settled>,
    /// It was held up, the last of the PSNs a gap skipped to come: nothing of that gap (its first PSN) was
    /// lost.
    pub closes_gap: Option<u32>,
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
    /// A READ whose PSN consumption is not known yet (path MTU unknown).
    pending_read: Option<Read>,
    /// The responder's expected PSN, as an RC responder keeps it: it takes only the request carrying it
    /// and drops the rest until go-back-N brings it. Messages are built from what it takes.
    epsn: u32,
    /// The last request taken was a READ of unknown PSN consumption: (PSN, DMA length).
    epsn_read: Option<(u32, u32)>,
    seen: SeenWindow,
    /// The last READs whose PSN consumption is known.
    reads: Recent<Read, READS_KEPT>,
    /// Some READ kept has its PSNs guessed.
    reads_guessed: bool,
    /// The last gaps.
    gaps: Recent<Gap, GAPS_KEPT>,
    /// The lowest PSN a NAK (sequence error or RNR) named that no resend answered yet.
    nak_from: Option<u32>,
    go_back: Option<GoBack>,
    /// Where the resends of the go-back-N under way have come to.
    resent_to: Option<ResentTo>,
    unsure: Option<Unsure>,
    order: SendOrder,
    pub gap_events: u64,
    pub missing: u64,
    pub retransmitted: u64,
    pub duplicates: u64,
    pub episodes: u64,
    /// New requests on PSNs a READ consumed.
    pub reused: u64,
    /// READs resumed mid-message (counted in `retransmitted` too).
    pub resumed_reads: u64,
    /// Requests that came behind the highest PSN, the first copy of their PSN, held up on the way.
    pub reordered: u64,
    /// The deepest of them, PSNs behind the highest.
    pub reorder_depth_max: u32,
    /// Requests the responder found ahead of its expected PSN (out of sequence: it drops them) and behind
    /// it (duplicates of requests it had taken), as an RC responder receiving exactly these requests would.
    pub ahead_epsn: u64,
    pub behind_epsn: u64,
}

impl RequestPsns {
    /// Feeds one request. `consumes` is the number of PSNs it takes (READ: one per response packet),
    /// or `None` for a READ while the path MTU is unknown; `read` is a READ's RETH; `mtu` is the path MTU
    /// known now, if any (it settles the PSNs of a READ before this request); `at` when it came. Returns
    /// what it did to the sequence.
    pub fn request(
        &mut self,
        psn: u32,
        consumes: Option<u32>,
        read: Option<ReadReth>,
        mtu: Option<u32>,
        at: Arrival,
    ) -> Taken {
        let at = self.order.vouch(at);
        let width = consumes.unwrap_or(1);
        let unknown_read = read.filter(|_| consumes.is_none()).map(|reth| Read {
            psn,
            psns: 0,
            reth,
            guessed: false,
        });
        let mut settled = None;
        let mut joins = false;
        if let Some(u) = self.unsure.take() {
            match self.settle_unsure(u, psn, at) {
                Told::Settled(s) => settled = Some(s),
                Told::Waits { joins: j } => {
                    self.unsure = Some(u);
                    joins = j;
                }
            }
        }
        if let Some(m) = mtu {
            self.settle_guessed_reads(m);
        }
        if !self.started {
            self.started = true;
            self.first = psn;
            self.highest = add(psn, width - 1);
            self.next = add(psn, width);
            self.prev_next = self.next;
            self.pending_read = unknown_read;
            self.epsn = self.next;
            self.epsn_read = unknown_read.map(|r| (psn, r.reth.len));
            self.mark(psn, width);
            if let Some(reth) = read.filter(|_| width > 1) {
                self.remember_read(psn, width, reth, false);
            }
            // The PSNs just before the first one seen may still come, overtaken by it on the way: as if a
            // gap had skipped them (not counted as one: the capture may have begun after them).
            self.remember_gap(Gap {
                from: add(psn, SeenWindow::SMALL_BEHIND.wrapping_neg()),
                missing: SeenWindow::SMALL_BEHIND,
                came: 0,
                ts: at.ts,
                counted: false,
                sent: at.ip_id,
            });
            return Taken {
                step: Step::First,
                taken: true,
                guessed_read: None,
                unsure: false,
                settled,
                closes_gap: None,
            };
        }
        let may_answer = self.may_answer_nak(psn);
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
            self.epsn_read = unknown_read.map(|r| (psn, r.reth.len));
        }
        // The same READ again (one resumed before, resent whole) is a resend, not another resumption; a
        // READ resumed mid-message settles the consumption of the READ it resumes.
        let repeat = read.is_some_and(|r| self.keeps_read(psn, r));
        let resumed = read
            .filter(|_| !repeat)
            .and_then(|r| self.resumes(psn, r, mtu));
        let (expected, guessed_read) = self.settle_read_before(psn, mtu);
        let ahead = diff(psn, expected);
        let mut unsure = false;
        let step = if ahead == 0 {
            Step::InOrder
        } else if ahead > 0 {
            self.gap_events += 1;
            self.missing += ahead as u64;
            self.remember_gap(Gap {
                from: expected,
                missing: ahead as u32,
                came: 0,
                ts: at.ts,
                counted: true,
                sent: at.ip_id,
            });
            Step::Gap {
                expected,
                missing: ahead as u32,
            }
        } else if resumed.is_some() {
            self.resumed_reads += 1;
            self.resend(psn, true, at)
        } else if repeat {
            self.resend(psn, false, at)
        } else if let Some(r) = self.read_inside(psn) {
            self.reused += 1;
            Step::Reuse {
                read_psn: r.psn,
                read_psns: r.psns,
            }
        } else if let Some(gap) = self
            .recent_gap_skipping(psn, at)
            .filter(|_| !self.seen.contains(psn))
        {
            let depth = diff(self.highest, psn).max(0) as u32;
            // Sent before the request that opened the gap (its ID older, in a flow whose IDs follow its
            // send order): a first copy however a NAK or a go-back-N stands, never a resend.
            if may_answer && !self.sent_before_gap(gap, at) {
                // Held up, or resent for the NAK: the requests after it tell.
                let step = self.resend(psn, false, at);
                if let Step::Retransmit { rewind, .. } = step {
                    match &mut self.unsure {
                        Some(run) if joins => {
                            run.next = add(psn, 1);
                            run.count += 1;
                        }
                        waiting => {
                            if waiting.is_some() {
                                settled = Some(Settled::Resent);
                            }
                            *waiting = Some(Unsure {
                                psn,
                                next: add(psn, 1),
                                count: 1,
                                rewind,
                                depth,
                                gap,
                                ts: at.ts,
                            });
                        }
                    }
                    unsure = true;
                }
                step
            } else {
                let closes_gap = self.count_reordered(depth, gap);
                if diff(psn, self.first) < 0 {
                    self.first = psn;
                }
                self.mark(psn, width);
                // It does not move the sequence: a go-back-N after it is measured from where it was.
                return Taken {
                    step: Step::Reordered { depth },
                    taken,
                    guessed_read: None,
                    unsure: false,
                    settled,
                    closes_gap,
                };
            }
        } else {
            self.resend(psn, false, at)
        };
        // A resumed READ is kept whatever its width, so that its resend is known for one.
        if let Some(reth) = read.filter(|_| width > 1 || resumed.is_some()) {
            self.remember_read(psn, width, reth, false);
        }
        self.follow_go_back(psn, step);
        let end = add(psn, width);
        self.resent_to = match step {
            Step::Retransmit { rewind: true, .. } => Some(ResentTo {
                next: end,
                ts: at.ts,
            }),
            Step::Retransmit { .. } if self.resent_to.is_some_and(|r| r.next == psn) => {
                Some(ResentTo {
                    next: end,
                    ts: at.ts,
                })
            }
            // New requests: the go-back-N is over.
            Step::InOrder | Step::Gap { .. } => None,
            _ => self.resent_to,
        };
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
            unsure,
            settled,
            closes_gap: None,
        }
    }

    /// A NAK (PSN sequence error or RNR) named `psn`: the requester resends from there.
    pub fn nak(&mut self, psn: u32) {
        self.nak_from = Some(match self.nak_from {
            Some(p) if diff(p, psn) < 0 => p,
            _ => psn,
        });
    }

    /// A request at `psn` may be a resend a NAK asked for: a NAK not answered yet named it or a PSN before
    /// it, or a go-back-N under way covers it.
    fn may_answer_nak(&self, psn: u32) -> bool {
        self.nak_from.is_some_and(|p| diff(psn, p) >= 0)
            || self
                .go_back
                .is_some_and(|g| diff(psn, g.from) >= 0 && diff(psn, g.to) <= 0)
    }

    /// A resend at or before the PSN a NAK named answers it: a go-back-N from there to the highest PSN
    /// runs; a request past that ends it.
    fn follow_go_back(&mut self, psn: u32, step: Step) {
        if let Some(p) = self.nak_from
            && matches!(step, Step::Retransmit { .. })
            && diff(psn, p) <= 0
        {
            self.nak_from = None;
            self.go_back = Some(GoBack {
                from: psn,
                to: self.highest,
            });
        } else if self.go_back.is_some_and(|g| diff(psn, g.to) > 0) {
            self.go_back = None;
        }
    }

    /// The unsure run `u` was followed by a request at `psn`: the run's first PSN again means its first
    /// copies had been held up and this is the resend; the PSN after the run, a first copy of the same
    /// gap, may join it; a new PSN tells nothing yet; anything else, or the reorder window's end, that
    /// they were resent.
    fn settle_unsure(&mut self, u: Unsure, psn: u32, at: Arrival) -> Told {
        if psn == u.psn {
            return Told::Settled(self.held_up(u, psn));
        }
        let soon = at.ts.saturating_sub(u.ts) <= at.reorder_window;
        let joins = psn == u.next
            && u.count < UNSURE_RUN
            && !self.seen.contains(psn)
            && self.recent_gap_skipping(psn, at) == Some(u.gap);
        if soon && (joins || diff(psn, self.highest) > 0) {
            return Told::Waits { joins };
        }
        Told::Settled(Settled::Resent)
    }

    /// The unsure run `u` was held up on the way; `psn`, its first PSN again, is the resend.
    fn held_up(&mut self, u: Unsure, psn: u32) -> Settled {
        self.retransmitted = self.retransmitted.saturating_sub(u64::from(u.count));
        self.episodes -= u64::from(u.rewind);
        let mut closes_gap = None;
        for i in 0..u.count {
            closes_gap = closes_gap.or(self.count_reordered(u.depth.saturating_sub(i), u.gap));
        }
        // The resend starts the go-back-N the NAK asked for.
        self.prev_next = add(psn, 1);
        self.resent_to = None;
        Settled::HeldUp {
            depth: u.depth,
            count: u.count,
            closes_gap,
        }
    }

    /// A PSN of the gap at `from` came, held up: it was not missing. Returns `from` when it was the gap's
    /// last to come: the gap was no loss.
    fn count_reordered(&mut self, depth: u32, from: u32) -> Option<u32> {
        self.reordered += 1;
        self.reorder_depth_max = self.reorder_depth_max.max(depth);
        let g = self
            .gaps
            .slots_mut()
            .iter_mut()
            .find(|g| g.missing > 0 && g.from == from)?;
        if !g.counted {
            return None;
        }
        self.missing = self.missing.saturating_sub(1);
        g.came += 1;
        if g.came < g.missing {
            return None;
        }
        *g = Gap::default();
        self.gap_events = self.gap_events.saturating_sub(1);
        Some(from)
    }

    fn remember_gap(&mut self, gap: Gap) {
        self.gaps.keep(gap);
    }

    /// The request at `at` was sent before the one that opened the gap at `from`, as the flow's IPv4 IDs
    /// tell where they follow its send order.
    fn sent_before_gap(&self, from: u32, at: Arrival) -> bool {
        self.gaps.slots().iter().any(|g| {
            g.missing > 0 && g.from == from && g.sent_against_opener(at) == Some(Ordering::Less)
        })
    }

    /// The first PSN of the newest gap within the reorder window (or, however long ago, one whose opener
    /// the request's ID says it was sent before) that skipped `psn`. A request sent after a gap's opener is
    /// a resend of a PSN lost before the capture point, never a first copy held up: no gap skipped it.
    fn recent_gap_skipping(&self, psn: u32, at: Arrival) -> Option<u32> {
        self.gaps
            .slots()
            .iter()
            .filter(|g| {
                let recent = at.ts.saturating_sub(g.ts) <= at.reorder_window;
                let sent = g.sent_against_opener(at);
                let may_be_first_copy =
                    (recent || sent == Some(Ordering::Less)) && sent != Some(Ordering::Greater);
                g.missing > 0 && at.reorder_window > 0 && may_be_first_copy
            })
            .filter(|g| {
                let into = diff(psn, g.from);
                into >= 0 && (into as u32) < g.missing
            })
            .max_by_key(|g| g.ts)
            .map(|g| g.from)
    }

    /// A READ request at `psn` with `reth` resumes an earlier READ mid-message: its PSN is the READ's PSN +
    /// k (k > 0, within the READ's PSNs), its VA the READ's + k × MTU and its length the READ's − k × MTU,
    /// at the path MTU when known, else at the MTU the advance shows. Returns that MTU; a READ of unknown
    /// consumption it resumes is settled at it.
    fn resumes(&mut self, psn: u32, reth: ReadReth, mtu: Option<u32>) -> Option<u32> {
        let fits = |r: &Read| -> Option<u32> {
            let k = diff(psn, r.psn);
            if k <= 0 || (r.psns > 0 && k as u32 >= r.psns) {
                return None;
            }
            let advanced = reth.va.wrapping_sub(r.reth.va);
            let m = advanced / k as u64;
            let same_mtu = mtu.is_none_or(|known| u64::from(known) == m);
            (advanced.is_multiple_of(k as u64)
                && same_mtu
                && MTUS.iter().any(|c| u64::from(*c) == m)
                && u64::from(r.reth.len) == advanced + u64::from(reth.len))
            .then_some(m as u32)
        };
        if let Some(pending) = self.pending_read
            && let Some(m) = fits(&pending)
        {
            // The READ's consumption is known now: it is what the responses at this MTU take.
            let n = read_psns(pending.reth.len, m);
            if diff(psn, add(pending.psn, n)) < 0 {
                self.pending_read = None;
                self.remember_read(pending.psn, n, pending.reth, false);
                self.mark(pending.psn, n);
                let end = add(pending.psn, n);
                if self.prev_next == add(pending.psn, 1) {
                    // It was the last request: the next one follows all of its PSNs.
                    self.prev_next = end;
                }
                if diff(end, self.next) > 0 {
                    self.next = end;
                    self.highest = add(end, u32::MAX);
                }
                return Some(m);
            }
        }
        self.reads_kept().find_map(|r| fits(&r))
    }

    /// The PSN expected now: a READ of unknown PSN consumption before this request took one PSN per
    /// response packet, at the known path MTU, or else at any MTU whose consumption ends at `psn` (then
    /// the READ is returned as guessed).
    fn settle_read_before(&mut self, psn: u32, mtu: Option<u32>) -> (u32, Option<(u32, u32)>) {
        let Some(read) = self.pending_read.take() else {
            return (self.next, None);
        };
        let (read_psn, len) = (read.psn, read.reth.len);
        let width = match mtu {
            Some(m) => Some(read_psns(len, m)),
            None => MTUS
                .iter()
                .map(|m| read_psns(len, *m))
                .find(|n| add(read_psn, *n) == psn),
        };
        let Some(n) = width else {
            if diff(psn, read_psn) <= 0 {
                // A resend from before it (a NAK's go-back-N): the READ's consumption is still to learn.
                self.pending_read = Some(read);
            }
            return (self.next, None);
        };
        self.remember_read(read_psn, n, read.reth, mtu.is_none());
        self.mark(read_psn, n);
        let expected = add(read_psn, n);
        if self.prev_next == add(read_psn, 1) {
            self.prev_next = expected;
        }
        if diff(expected, self.next) > 0 {
            self.next = expected;
            self.highest = add(expected, u32::MAX);
        }
        (self.next, mtu.is_none().then_some((read_psn, len)))
    }

    /// A request behind the expected PSN that is not a reuse: a retransmission (`resumed`: a READ resumed
    /// mid-message).
    fn resend(&mut self, psn: u32, resumed: bool, at: Arrival) -> Step {
        // A resend of a PSN shortly before the first one seen (within a window): its first copy was
        // lost before the capture point, or the capture started after it. The flow's PSN space starts
        // there. (Far behind is not a resend: a new connection on the QP number.)
        let before_first = diff(psn, self.first);
        if before_first < 0 && before_first > -(SeenWindow::WINDOW as i32) {
            self.first = psn;
        }
        let duplicate = self.seen_before(psn);
        // Going back starts an episode; a skip forward within the resends is a resend lost before the
        // capture point, not a new go-back-N, and so is the resend after the last one of a go-back-N that
        // others came between, soon after it (the network held it up), unless a NAK asks for it.
        let continues = self
            .resent_to
            .is_some_and(|r| r.next == psn && at.ts.saturating_sub(r.ts) <= at.reorder_window)
            && self.nak_from.is_none_or(|p| diff(psn, p) < 0);
        let rewind = diff(psn, self.prev_next) < 0 && !continues;
        self.retransmitted += 1;
        self.duplicates += u64::from(duplicate);
        self.episodes += u64::from(rewind);
        Step::Retransmit {
            duplicate,
            rewind,
            resumed,
        }
    }

    fn remember_read(&mut self, psn: u32, psns: u32, reth: ReadReth, guessed: bool) {
        // A READ resent whole is kept once: its copies would push the READs before it out (a requester that
        // resends four READs twice, a resumed READ among those before them, whose responses are still on the
        // way).
        if self.keeps_read(psn, reth) {
            return;
        }
        self.reads.keep(Read {
            psn,
            psns,
            reth,
            guessed,
        });
        self.reads_guessed |= guessed;
    }

    /// The path MTU is known: the READs kept whose PSNs were guessed take what their responses take at it
    /// (the request after a READ may have been ahead of it, one lost between them).
    fn settle_guessed_reads(&mut self, mtu: u32) {
        if !std::mem::take(&mut self.reads_guessed) {
            return;
        }
        for r in self.reads.slots_mut().iter_mut().filter(|r| r.guessed) {
            r.psns = read_psns(r.reth.len, mtu);
            r.guessed = false;
        }
    }

    /// This READ (its PSN, VA and length) is among the last READs.
    fn keeps_read(&self, psn: u32, reth: ReadReth) -> bool {
        self.reads_kept().any(|k| k.psn == psn && k.reth == reth)
    }

    /// The READs kept, newest first.
    fn reads_kept(&self) -> impl Iterator<Item = Read> + '_ {
        self.reads.newest_first()
    }

    /// The newest of the last READs whose PSNs hold `psn` (at `mtu` where its consumption is not known
    /// yet): its first PSN and DMA length.
    pub fn read_holding(&self, psn: u32, mtu: u32) -> Option<(u32, u32)> {
        let pending = self.pending_read.map(|r| Read {
            psns: read_psns(r.reth.len, mtu),
            ..r
        });
        pending
            .into_iter()
            .chain(self.reads_kept())
            .find(|r| {
                let into = diff(psn, r.psn);
                into >= 0 && (into as u32) < r.psns
            })
            .map(|r| (r.psn, r.reth.len))
    }

    /// The READ whose PSNs hold `psn` past its first, if one of the last ones does.
    /// A READ whose PSNs were guessed (the path MTU not known yet) holds none for certain: the guess came
    /// from the request after it, and a request lost between them stretches it (its resend then falls
    /// inside).
    fn read_inside(&self, psn: u32) -> Option<Read> {
        self.reads_kept().filter(|r| !r.guessed).find(|r| {
            let into = diff(psn, r.psn);
            into > 0 && (into as u32) < r.psns
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
            resumed_reads: self.resumed_reads,
            reordered: self.reordered,
            reorder_depth_max: self.reorder_depth_max,
            ahead_epsn: self.ahead_epsn,
            behind_epsn: self.behind_epsn,
            ..RequestPsns::default()
        };
    }

    /// The PSNs a response may name: from the first request of the connection (or a window behind the
    /// highest, on a long one) to the highest, widened for a READ whose consumption is not known yet.
    pub fn window(&self) -> (u32, u32) {
        let hi = match self.pending_read {
            Some(r) => add(r.psn, read_psns(r.reth.len, MTUS[0]) - 1),
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
    pub fn settle(&mut self, mtu: Option<u32>) -> Option<Settled> {
        let unsure = self.unsure.take().map(|_| Settled::Resent);
        if let (Some(r), Some(m)) = (self.pending_read, mtu) {
            let end = add(r.psn, read_psns(r.reth.len, m));
            if diff(end, self.next) > 0 {
                self.next = end;
                self.highest = add(end, u32::MAX);
            }
            self.pending_read = None;
        }
        unsure
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
    use proptest::prelude::*;

    fn vouched(ids: &[u16]) -> Vec<bool> {
        let mut order = SendOrder::default();
        ids.iter()
            .map(|id| {
                let at = Arrival {
                    ip_id: Some(*id),
                    ..Arrival::default()
                };
                order.vouch(at).ids_in_send_order
            })
            .collect()
    }

    #[test]
    fn ids_are_send_order_after_four_near_ones_even_held_up() {
        // A counter with other flows' packets between (steps of 1 and 3), 0x1003 held up behind 0x1004
        // (near too): trusted from the fourth near one on.
        let ids = [0x1000, 0x1001, 0x1004, 0x1003, 0x1005, 0x1006, 0x1007];
        assert_eq!(
            vouched(&ids),
            [false, false, false, false, true, true, true]
        );
        // The lab's write_reorder_req: one request overtakes nine; the ninth held up is trusted.
        let ids = [
            0xb141, 0xb142, 0xb14c, 0xb143, 0xb144, 0xb145, 0xb146, 0xb147, 0xb148, 0xb149,
        ];
        assert_eq!(vouched(&ids)[4..], [true; 6]);
        // Across the wrap: 0x0001 is two after 0xffff, 0xfffe three behind it.
        let ids = [0xfffa, 0xfffb, 0xfffc, 0xfffd, 0xffff, 0x0001, 0xfffe];
        assert_eq!(
            vouched(&ids),
            [false, false, false, false, true, true, true]
        );
        assert!(sent_before(0xfffe, 0x0001) && !sent_before(0x0001, 0xfffe));
    }

    #[test]
    fn ids_that_stay_the_same_or_jump_about_are_never_send_order() {
        assert!(vouched(&[0; 40]).iter().all(|t| !t));
        // IDs that jump by about 5,000 each time (a hash of a counter): no small steps.
        let random: Vec<u16> = (0u32..40)
            .map(|i| (i.wrapping_mul(40503) >> 3) as u16)
            .collect();
        assert!(vouched(&random).iter().all(|t| !t));
    }

    fn reth(va: u64, len: u32) -> Option<ReadReth> {
        Some(ReadReth { va, len })
    }

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

    /// How a test sequence moves on from the highest PSN `top`.
    #[derive(Debug, Clone, Copy)]
    enum Move {
        Next,
        Skip(u32),
        Back(u32),
    }

    impl Move {
        fn psn(self, top: u32) -> u32 {
            match self {
                Move::Next => add(top, 1),
                Move::Skip(n) => add(top, n + 1),
                Move::Back(n) => add(top, n.wrapping_neg()),
            }
        }
    }

    fn moves() -> impl Strategy<Value = Vec<Move>> {
        let one = prop_oneof![
            8 => Just(Move::Next),
            1 => (1u32..40).prop_map(Move::Skip),
            1 => (1u32..9000).prop_map(Move::Skip),
            2 => (0u32..300).prop_map(Move::Back),
            1 => (0u32..5000).prop_map(Move::Back),
        ];
        proptest::collection::vec(one, 1..700)
    }

    proptest! {
        /// The inline window (bits, ranges never seen, its spread into the full one) answers every mark and
        /// every question exactly as a full window from the start does: in-order runs that slide it, gaps
        /// small and past the window, resends near and far, across the wrap of the PSN space.
        #[test]
        fn the_inline_window_answers_as_the_full_one(start in 0u32..(1 << 24), moves in moves()) {
            let (mut inline, mut full) = (SeenWindow::default(), full_window());
            for (i, m) in moves.iter().enumerate() {
                let psn = if i == 0 { start } else { m.psn(full.top) };
                prop_assert_eq!(inline.mark(psn), mark_full_from_start(&mut full, psn), "mark {} of {}", i, psn);
                prop_assert_eq!(inline.top, full.top);
                for back in [0, 1, 31, 32, 33, 127, 128, 129, 300, 4095, 4096, 5000] {
                    let q = add(full.top, u32::wrapping_neg(back));
                    prop_assert_eq!(inline.contains(q), full.contains(q), "PSN {} after mark {}", q, i);
                }
                prop_assert!(!inline.contains(add(full.top, 1)));
            }
        }
    }

    /// A long flow whose lost PSNs were all resent keeps its window inline; PSNs that stay unseen in more
    /// ranges than the inline place holds take the full window.
    #[test]
    fn the_window_stays_inline_while_what_was_missing_comes() {
        let mut w = SeenWindow::default();
        w.mark(7);
        assert!(
            matches!(w.bits, Bits::Inline(_)),
            "a one-packet flow allocates nothing"
        );
        let mut w = SeenWindow::default();
        for psn in (0..10_000).filter(|p| p % 1000 != 500) {
            w.mark(psn);
            if psn % 1000 == 510 {
                // The go-back-N resends the lost PSN (and the ten after it, seen already).
                assert!(!w.mark(psn - 10));
                assert!(w.mark(psn - 9));
            }
        }
        assert!(matches!(w.bits, Bits::Inline(_)), "{:?}", w.bits);
        assert!(w.contains(9_500) && w.contains(5_900) && !w.contains(10_000));
        // Before the first PSN: never seen, within the window.
        let mut w = SeenWindow::default();
        w.mark(5_000);
        assert!(!w.contains(4_999) && !w.contains(1_000) && w.contains(904));
        // Two PSNs lost for good, 300 apart, then a third: the PSNs before the first, and three ranges.
        for psn in (5_001..6_000).filter(|p| ![5_100, 5_400, 5_700].contains(p)) {
            w.mark(psn);
        }
        assert!(matches!(w.bits, Bits::Full(_)));
        assert!(
            !w.contains(5_100) && !w.contains(5_700) && w.contains(5_101) && !w.contains(4_999)
        );
    }

    /// A flow in order through the whole PSN space and past it: the PSNs before its first, never seen
    /// then, are seen when they come round again.
    #[test]
    fn a_flow_round_the_psn_space_sees_its_first_psns_again() {
        let mut w = SeenWindow::default();
        for n in 0..(1u32 << 24) + 100 {
            w.mark(add(5_000, n));
        }
        assert!(matches!(w.bits, Bits::Inline(_)));
        for behind in [1u32, 127, 128, 1_000, 4_095] {
            assert!(
                w.contains(add(5_099, behind.wrapping_neg())),
                "{behind} behind"
            );
        }
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
                    resumed: false,
                },
                true,
            ),
            (
                4,
                Step::Retransmit {
                    duplicate: false,
                    rewind: false,
                    resumed: false,
                },
                true,
            ),
            (
                5,
                Step::Retransmit {
                    duplicate: true,
                    rewind: false,
                    resumed: false,
                },
                true,
            ),
            (
                6,
                Step::Retransmit {
                    duplicate: true,
                    rewind: false,
                    resumed: false,
                },
                true,
            ),
            (7, Step::InOrder, true),
        ];
        for (psn, step, taken) in expected {
            let got = t.request(psn, Some(1), None, None, Arrival::default());
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
            t.request(psn, Some(1), None, None, Arrival::default());
        }
        assert_eq!((t.ahead_epsn, t.behind_epsn), (2, 2));
    }

    #[test]
    fn a_first_request_lost_before_the_capture_point_starts_the_psn_space() {
        let mut t = RequestPsns::default();
        // PSN 10 was lost before the capture: 11 and 12 come first, then go-back-N resends 10, 11, 12.
        for psn in [11, 12, 10, 11, 12, 13] {
            t.request(psn, Some(1), None, None, Arrival::default());
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
            assert_eq!(
                t.request(psn, Some(1), None, None, Arrival::default())
                    .taken,
                taken,
                "PSN {psn}"
            );
        }
    }

    #[test]
    fn read_with_unknown_mtu_is_not_a_gap() {
        let mut t = RequestPsns::default();
        t.request(100, None, reth(0, 3000), None, Arrival::default());
        // At MTU 1024 the READ took PSNs 100-102.
        let next = t.request(103, Some(1), None, None, Arrival::default());
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
        t.request(7_488_511, None, reth(0, 2400), None, Arrival::default());
        let send = t.request(7_488_513, Some(1), None, Some(1024), Arrival::default());
        assert_eq!(
            send.step,
            Step::Reuse {
                read_psn: 7_488_511,
                read_psns: 3
            }
        );
        assert_eq!((t.reused, t.retransmitted, t.next), (1, 0, 7_488_514));
        // The READ resent from its first PSN is a retransmission.
        let again = t.request(
            7_488_511,
            None,
            reth(0, 2400),
            Some(1024),
            Arrival::default(),
        );
        assert!(matches!(again.step, Step::Retransmit { .. }));
        // With the MTU known from the start the READ takes 3 PSNs at once.
        let mut k = RequestPsns::default();
        k.request(10, Some(3), reth(0, 2400), Some(1024), Arrival::default());
        assert!(matches!(
            k.request(12, Some(1), None, Some(1024), Arrival::default())
                .step,
            Step::Reuse { .. }
        ));
    }

    /// rxe's and every RNIC's READ retry: a READ of 8 KiB at PSN 100 (path MTU 1024: PSNs 100-107, VA
    /// 0x1000) lost its last response; the requester asks again for just the rest: PSN 107, VA 0x1000 + 7 ×
    /// 1024, 1024 bytes (IBTA 9.7.5.1.4). A retransmission at 107, not a new request on the READ's PSNs.
    #[test]
    fn a_read_resumed_mid_message_is_a_retransmission() {
        for mtu in [Some(1024), None] {
            let mut t = RequestPsns::default();
            let none = Arrival::default();
            let consumes = mtu.map(|m| read_psns(8192, m));
            t.request(100, consumes, reth(0x1000, 8192), mtu, none);
            let resumed = t.request(
                107,
                mtu.map(|_| 1),
                reth(0x1000 + 7 * 1024, 1024),
                mtu,
                none,
            );
            assert_eq!(
                resumed.step,
                // Its PSN was the READ's: the responder takes it as a duplicate request.
                Step::Retransmit {
                    duplicate: true,
                    rewind: true,
                    resumed: true
                },
                "MTU {mtu:?}"
            );
            assert_eq!(
                (t.resumed_reads, t.retransmitted, t.reused, t.next),
                (1, 1, 0, 108),
                "MTU {mtu:?}"
            );
            // The next READ is in order.
            let next = t.request(108, mtu.map(|_| 8), reth(0x3000, 8192), mtu, none);
            assert_eq!(next.step, Step::InOrder, "MTU {mtu:?}");
        }
    }

    /// READs of 4096 bytes at 115 and 119, then one at 127 while the path MTU is not known: 119 is guessed
    /// to take 8 PSNs (MTU 512). 123, lost before the capture point and resent, is a retransmission, not a
    /// request reusing 119's PSNs: once the MTU is known (1024: 4 PSNs), and also before any response told
    /// it (the lab's read_loss_req, READs four at a time, 10 % of the requests lost), 119's PSNs being a
    /// guess.
    #[test]
    fn a_read_whose_psns_were_guessed_takes_them_at_the_mtu_learnt() {
        let none = Arrival::default();
        for mtu in [Some(1024), None] {
            let mut t = RequestPsns::default();
            t.request(115, None, reth(0, 4096), None, none);
            t.request(119, None, reth(0, 4096), None, none);
            let third = t.request(127, None, reth(0, 4096), None, none);
            assert_eq!(third.guessed_read, Some((119, 4096)));
            let resent = t.request(123, Some(4), reth(0, 4096), mtu, none);
            assert!(
                matches!(resent.step, Step::Retransmit { .. }),
                "{mtu:?}: {resent:?}"
            );
            assert_eq!((t.reused, t.retransmitted), (0, 1), "{mtu:?}");
        }
    }

    /// A resumed READ resent whole (its PSN, VA and length again) is one more retransmission, not one more
    /// resumed READ.
    #[test]
    fn a_resumed_read_resent_whole_is_resumed_once() {
        let none = Arrival::default();
        let mut t = RequestPsns::default();
        t.request(100, Some(8), reth(0x1000, 8192), Some(1024), none);
        t.request(108, Some(1), None, Some(1024), none);
        for _ in 0..2 {
            let got = t.request(101, Some(7), reth(0x1400, 7168), Some(1024), none);
            assert!(matches!(got.step, Step::Retransmit { .. }), "{got:?}");
        }
        assert_eq!((t.resumed_reads, t.retransmitted), (1, 2));
    }

    /// A READ resumed at its last PSN (one response to ask again for) resent whole is resumed once too: the
    /// lab's gen_read_loss, where the resumed READ's one response was lost as well.
    #[test]
    fn a_one_psn_resumed_read_resent_whole_is_resumed_once() {
        let none = Arrival::default();
        let mut t = RequestPsns::default();
        t.request(100, Some(8), reth(0x1000, 8192), Some(1024), none);
        t.request(108, Some(1), None, Some(1024), none);
        for _ in 0..2 {
            let got = t.request(
                107,
                Some(1),
                reth(0x1000 + 7 * 1024, 1024),
                Some(1024),
                none,
            );
            assert!(matches!(got.step, Step::Retransmit { .. }), "{got:?}");
        }
        assert_eq!((t.resumed_reads, t.retransmitted, t.reused), (1, 2, 0));
    }

    /// A READ resumed mid-message stays known while the READs after it are resent whole: the lab's
    /// read_reorder_resp (rxe, 4 READs of 4096 bytes in flight, path MTU 1024): READ 97 resumed at 99, then
    /// READs 105, 109, 113 and 117 sent and resent; a response at 99, held up on the way, comes after them.
    #[test]
    fn reads_resent_whole_do_not_push_out_the_reads_before_them() {
        let none = Arrival::default();
        let mut t = RequestPsns::default();
        let mtu = Some(1024);
        t.request(97, Some(4), reth(0x1000, 4096), mtu, none);
        t.request(99, Some(2), reth(0x1800, 2048), mtu, none);
        t.request(101, Some(4), reth(0x2000, 4096), mtu, none);
        for _ in 0..2 {
            for psn in [105, 109, 113, 117] {
                t.request(psn, Some(4), reth(0x3000, 4096), mtu, none);
            }
        }
        assert_eq!(t.read_holding(99, 1024), Some((99, 2048)));
        assert_eq!(t.read_holding(98, 1024), Some((97, 4096)));
        assert_eq!(t.read_holding(118, 1024), Some((117, 4096)));
    }

    /// The lab's read_loss_req (rxe, READs of 4096 bytes, path MTU 1024 not known yet): READ 70 lost before
    /// the capture point, READs 74, 78 and 82 seen, then the NAK's go-back-N resends 70 to 82. The last READ's
    /// PSNs are still to learn: the responses may name PSNs up to its end at the smallest MTU (256: 16 PSNs,
    /// 82 to 97), not only 82.
    #[test]
    fn a_go_back_n_keeps_the_last_reads_consumption_to_learn() {
        let none = Arrival::default();
        let mut t = RequestPsns::default();
        for psn in [74, 78, 82, 70, 74, 78, 82] {
            t.request(psn, None, reth(0x1000, 4096), None, none);
        }
        assert_eq!(t.window(), (70, 97));
    }

    /// A request inside a READ's PSNs that does not continue it (another VA, a length that does not shrink
    /// by the advance, a SEND) is a reuse of the READ's PSNs: the requester counted the READ as one PSN.
    #[test]
    fn a_request_inside_a_read_that_does_not_resume_it_is_a_reuse() {
        let none = Arrival::default();
        for (va, len) in [
            (0x1000 + 7 * 1024, 2048),
            (0x9000, 1024),
            (0x1000 + 7 * 512, 1024),
        ] {
            let mut t = RequestPsns::default();
            t.request(100, Some(8), reth(0x1000, 8192), Some(1024), none);
            let got = t.request(107, Some(1), reth(va, len), Some(1024), none);
            assert!(
                matches!(
                    got.step,
                    Step::Reuse {
                        read_psn: 100,
                        read_psns: 8
                    }
                ),
                "VA {va:#x} len {len}: {got:?}"
            );
            assert_eq!((t.reused, t.resumed_reads, t.retransmitted), (1, 0, 0));
        }
    }

    const MS: u64 = 1_000_000;

    /// Requests 1 ms apart (`true`: a NAK for that PSN came just before it), with a reorder window of
    /// `window_ms`.
    fn feed(t: &mut RequestPsns, psns: &[(u32, bool)], window_ms: u64) -> Vec<Taken> {
        let without_ids: Vec<(u32, bool, Option<u16>)> =
            psns.iter().map(|&(p, nak)| (p, nak, None)).collect();
        feed_ids(t, &without_ids, window_ms)
    }

    /// As [`feed`], each request with its IPv4 ID.
    fn feed_ids(
        t: &mut RequestPsns,
        psns: &[(u32, bool, Option<u16>)],
        window_ms: u64,
    ) -> Vec<Taken> {
        psns.iter()
            .enumerate()
            .map(|(i, &(p, nak, ip_id))| {
                if nak {
                    t.nak(p);
                }
                let at = Arrival {
                    ts: i as u64 * MS,
                    reorder_window: window_ms * MS,
                    ip_id,
                    ids_in_send_order: false,
                };
                t.request(p, Some(1), None, None, at)
            })
            .collect()
    }

    /// 1, 2, 4 (3 skipped), then 3 soon after with no NAK to answer: held up on the way, one PSN behind 4;
    /// 5 follows in order. With a NAK there to answer, 3 is taken as a resend until the next request: 3
    /// again says the first 3 was held up (and this one is the resend); 4 again says it was the resend.
    /// Long after the gap (a timer), 3 is a resend.
    #[test]
    fn a_first_copy_soon_after_its_gap_is_reordered_unless_it_was_resent() {
        let q = |p| (p, false);
        let mut t = RequestPsns::default();
        let got = feed(&mut t, &[q(1), q(2), q(4), q(3), q(5)], 5);
        assert_eq!(got[3].step, Step::Reordered { depth: 1 });
        assert_eq!(got[3].closes_gap, Some(3));
        assert_eq!(got[4].step, Step::InOrder);
        assert_eq!(
            (t.reordered, t.retransmitted, t.reorder_depth_max),
            (1, 0, 1)
        );
        // Nothing was missing after all.
        assert_eq!((t.gap_events, t.missing), (0, 0));
        // Two skipped, one held up: the gap stays, one PSN missing.
        let mut t = RequestPsns::default();
        let got = feed(&mut t, &[q(1), q(2), q(5), q(3), q(6)], 5);
        assert_eq!(got[3].closes_gap, None);
        assert_eq!((t.gap_events, t.missing, t.reordered), (1, 1, 1));
        // Held up behind a NAK's resend.
        let mut t = RequestPsns::default();
        let got = feed(&mut t, &[q(1), q(2), q(4), (3, true), q(3), q(4)], 5);
        assert!(got[3].unsure && matches!(got[3].step, Step::Retransmit { rewind: true, .. }));
        assert_eq!(
            got[4].settled,
            Some(Settled::HeldUp {
                depth: 1,
                count: 1,
                closes_gap: Some(3)
            })
        );
        assert!(matches!(
            got[4].step,
            Step::Retransmit {
                duplicate: true,
                rewind: true,
                ..
            }
        ));
        assert_eq!((t.reordered, t.retransmitted, t.episodes), (1, 2, 1));
        // The resend for the NAK.
        let mut t = RequestPsns::default();
        let got = feed(&mut t, &[q(1), q(2), q(4), (3, true), q(4)], 5);
        assert_eq!(got[4].settled, Some(Settled::Resent));
        assert_eq!((t.reordered, t.retransmitted, t.episodes), (0, 2, 1));
        // Unsure at the end of the capture: resent, as counted.
        let mut t = RequestPsns::default();
        feed(&mut t, &[q(1), q(2), q(4), (3, true)], 5);
        assert_eq!(t.settle(None), Some(Settled::Resent));
        // Long after the gap: 6 ms, past a window of 5.
        let mut t = RequestPsns::default();
        let mut got = feed(&mut t, &[q(1), q(2), q(4)], 5);
        let late = Arrival {
            ts: 8 * MS,
            reorder_window: 5 * MS,
            ip_id: None,
            ids_in_send_order: false,
        };
        got.push(t.request(3, Some(1), None, None, late));
        assert!(matches!(got[3].step, Step::Retransmit { rewind: true, .. }));
        assert_eq!((t.reordered, t.retransmitted), (0, 1));
    }

    /// Two gaps at once (3 and 4 skipped by 5, 6 and 7 by 8): each PSN that comes late is held up, whichever
    /// gap skipped it, and each gap closes when its last PSN came.
    #[test]
    fn the_psns_of_several_recent_gaps_come_late() {
        let mut t = RequestPsns::default();
        let psns = [1, 2, 5, 8, 6, 3, 7, 4, 9].map(|p| (p, false));
        let got = feed(&mut t, &psns, 10);
        let steps: Vec<Step> = got.iter().map(|g| g.step).collect();
        assert_eq!(
            &steps[4..8],
            &[
                Step::Reordered { depth: 2 },
                Step::Reordered { depth: 5 },
                Step::Reordered { depth: 1 },
                Step::Reordered { depth: 4 },
            ]
        );
        let closed: Vec<Option<u32>> = got.iter().map(|g| g.closes_gap).collect();
        assert_eq!(&closed[4..8], &[None, None, Some(6), Some(3)]);
        assert_eq!(steps[8], Step::InOrder);
        assert_eq!(
            (t.reordered, t.retransmitted, t.gap_events, t.missing),
            (4, 0, 0, 0)
        );
    }

    /// The first request seen overtook the ones before it (5, then 3 and 4 soon after, no NAK): they were
    /// held up, not resent, and nothing is missing; long after (a timer), they are resends.
    #[test]
    fn requests_overtaken_by_the_first_one_seen_are_reordered() {
        let mut t = RequestPsns::default();
        let got = feed(&mut t, &[(5, false), (3, false), (4, false), (6, false)], 5);
        assert_eq!(got[1].step, Step::Reordered { depth: 2 });
        assert_eq!(got[2].step, Step::Reordered { depth: 1 });
        assert_eq!(got[3].step, Step::InOrder);
        assert_eq!((t.first, t.reordered, t.retransmitted), (3, 2, 0));
        assert_eq!((t.gap_events, t.missing), (0, 0));
        let mut t = RequestPsns::default();
        let got = feed(&mut t, &[(5, false), (6, false), (3, false)], 1);
        assert!(matches!(got[2].step, Step::Retransmit { .. }), "{got:?}");
        assert_eq!((t.first, t.reordered, t.retransmitted), (3, 0, 1));
    }

    /// The lab's atomic_loss: 6 lost before the capture point, 7 came, a NAK named 6, and 6 came with an
    /// ID newer than 7's: sent after it, the NAK's resend, though the first copy seen. A later 6 (the
    /// timer's resend) tells nothing of it: it was never held up. Without IDs, the later 6 says the first
    /// was held up (as a_first_copy_soon_after_its_gap_is_reordered_unless_it_was_resent shows).
    #[test]
    fn a_first_copy_seen_sent_after_its_gap_is_a_resend_whatever_follows() {
        let q = |p: u32, nak, id: u16| (p, nak, Some(id));
        let sent = [
            q(1, false, 10),
            q(2, false, 11),
            q(3, false, 12),
            q(4, false, 13),
        ];
        let mut requests = sent.to_vec();
        requests.extend([
            q(5, false, 14),
            q(7, false, 16),
            q(6, true, 17),
            q(6, false, 40),
        ]);
        let mut t = RequestPsns::default();
        let got = feed_ids(&mut t, &requests, 5);
        assert!(
            matches!(got[6].step, Step::Retransmit { rewind: true, .. }) && !got[6].unsure,
            "{:?}",
            got[6]
        );
        assert_eq!(got[7].settled, None);
        assert_eq!((t.reordered, t.retransmitted), (0, 2));
        assert_eq!((t.gap_events, t.missing), (1, 1));
    }

    /// A go-back-N for a NAK runs from the PSN it named to the highest PSN sent: every first copy in it
    /// may be its resend (taken as one until the requests after it tell); past it, a NAK answered long ago
    /// makes nothing a resend.
    #[test]
    fn a_first_copy_inside_a_go_back_n_may_be_a_resend_one_after_it_is_held_up() {
        let q = |p| (p, false);
        // 1, 2, 5 (3, 4 lost), NAK 3, go-back-N 3, 4, then 6, 7 and the reorder window's end: both
        // resends, the gap stays.
        let mut t = RequestPsns::default();
        let got = feed(&mut t, &[q(1), q(2), q(5), (3, true), q(4), q(6), q(7)], 5);
        assert!(got[3].unsure && got[4].unsure, "3 and 4 are one run");
        assert_eq!(got[4].settled, None);
        assert_eq!(got[5].settled, None, "a new PSN tells nothing");
        assert_eq!(got[5].step, Step::InOrder);
        let late = Arrival {
            ts: 9 * MS,
            reorder_window: 5 * MS,
            ip_id: None,
            ids_in_send_order: false,
        };
        assert_eq!(
            t.request(8, Some(1), None, None, late).settled,
            Some(Settled::Resent)
        );
        assert_eq!(
            (t.retransmitted, t.reordered, t.gap_events, t.missing),
            (2, 0, 1, 2)
        );
        // The same go-back-N going on into a PSN seen before (5): resends, at once.
        let mut t = RequestPsns::default();
        let got = feed(&mut t, &[q(1), q(2), q(5), (3, true), q(4), q(5)], 5);
        assert_eq!(got[5].settled, Some(Settled::Resent));
        assert_eq!((t.retransmitted, t.reordered), (3, 0));
        // The NAK for 3 answered by the go-back-N 3, 4, 5; then 8 skips 6 and 7, which come soon after:
        // held up.
        let mut t = RequestPsns::default();
        let psns = [q(1), q(2), q(4), (3, true), q(4), q(5), q(8), q(6), q(7)];
        let got = feed(&mut t, &psns, 5);
        assert_eq!(got[7].step, Step::Reordered { depth: 2 });
        assert_eq!(got[8].step, Step::Reordered { depth: 1 });
        assert_eq!(got[8].closes_gap, Some(6));
    }

    /// The lab's write_reorder_req (testdata/lab, frames 37-46): 4 and 5 held up by the network behind
    /// 6, a NAK for 4, then 4 and 5 (the first copies, late), 7 (new), and 4 again, the NAK's resend.
    /// The first 4 and 5 were held up, not a go-back-N; the second 4 begins the one the NAK asked for.
    #[test]
    fn a_run_of_late_first_copies_is_held_up_when_its_first_psn_comes_again() {
        let q = |p| (p, false);
        let mut t = RequestPsns::default();
        let got = feed(
            &mut t,
            &[q(1), q(2), q(3), q(6), (4, true), q(5), q(7), q(4)],
            5,
        );
        assert!(got[4].unsure && got[5].unsure);
        assert_eq!((got[5].settled, got[6].settled), (None, None));
        assert_eq!(
            got[7].settled,
            Some(Settled::HeldUp {
                depth: 2,
                count: 2,
                closes_gap: Some(4)
            })
        );
        assert!(matches!(
            got[7].step,
            Step::Retransmit {
                duplicate: true,
                rewind: true,
                ..
            }
        ));
        // Nothing was lost: the gap closed; one resend, one go-back-N.
        assert_eq!(
            (
                t.reordered,
                t.retransmitted,
                t.episodes,
                t.gap_events,
                t.missing
            ),
            (2, 1, 1, 0, 0)
        );
    }

    /// A go-back-N from 3 (resends 3, 4) with three resends of later PSNs (7, 8, 9) held up among them:
    /// 5, the next of the go-back-N, soon after, goes on with it; long after (a timer), it begins
    /// another.
    #[test]
    fn the_next_resend_of_a_go_back_n_after_others_goes_on_with_it() {
        let q = |p| (p, false);
        let psns = [
            q(1),
            q(2),
            q(3),
            q(4),
            q(5),
            q(6),
            q(7),
            q(8),
            q(9),
            q(10),
            q(3),
            q(4),
        ];
        let mut t = RequestPsns::default();
        let mut got = feed(&mut t, &psns, 5);
        for (i, p) in [7, 8, 9, 5].into_iter().enumerate() {
            let at = Arrival {
                ts: (12 + i as u64) * MS / 4 + 11 * MS,
                reorder_window: 5 * MS,
                ip_id: None,
                ids_in_send_order: false,
            };
            got.push(t.request(p, Some(1), None, None, at));
        }
        let rewinds: Vec<bool> = got[10..]
            .iter()
            .map(|g| matches!(g.step, Step::Retransmit { rewind: true, .. }))
            .collect();
        assert_eq!(rewinds, [true, false, false, false, false, false]);
        assert_eq!(t.episodes, 1);
        let mut t = RequestPsns::default();
        feed(&mut t, &psns, 5);
        for p in [7, 8, 9] {
            t.request(
                p,
                Some(1),
                None,
                None,
                Arrival {
                    ts: 12 * MS,
                    reorder_window: 5 * MS,
                    ip_id: None,
                    ids_in_send_order: false,
                },
            );
        }
        let late = Arrival {
            ts: 40 * MS,
            reorder_window: 5 * MS,
            ip_id: None,
            ids_in_send_order: false,
        };
        let step = t.request(5, Some(1), None, None, late).step;
        assert!(
            matches!(step, Step::Retransmit { rewind: true, .. }),
            "{step:?}"
        );
    }

    #[test]
    fn the_response_window_spans_the_connection() {
        let mut t = RequestPsns::default();
        for psn in [0xFF_FFFE, 0xFF_FFFF, 0, 1] {
            t.request(psn, Some(1), None, None, Arrival::default());
        }
        assert_eq!(t.window(), (0xFF_FFFE, 1));
        // An unknown READ widens the top by what it could take at the smallest MTU.
        t.request(2, None, reth(0, 1024), None, Arrival::default());
        assert_eq!(t.window(), (0xFF_FFFE, 5));
        t.new_epoch();
        t.request(500, Some(1), None, None, Arrival::default());
        assert_eq!((t.first, t.window()), (500, (500, 500)));
    }
}
