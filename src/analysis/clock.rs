//! The capture's clock, as evidence with limits: a frame stamped well before the one before it, or far after
//! it, is not taken at its word. A step back of up to [`BACK_NANOS`] (merged interfaces, a NIC's timestamp
//! queue) is taken as stamped, every judgment saturating; a longer one is held at the time before it; a leap
//! forward beyond [`LEAP_NANOS`] is held too until the next frame says
//! whether the clock moved (it follows the leap: a new clock, or a long silence, taken from there on) or one
//! frame was stamped wrong (it follows the old clock: that frame is kept out of every timing judgment:
//! stalls, timeouts, idle flows, rates). Steps back beyond [`BACK_NANOS`] and every leap are told
//! (`clock_jump`). The first frame has no frame before it: when the second is stamped more than
//! [`LEAP_NANOS`] before it, the first was stamped wrong (`first`), and the clock takes the second's.
//! (Which of two frames alone is wrong cannot be told; a capture's first frame ahead of every other is what a
//! clock set wrong at the start, or one glitched stamp, gives.)

/// A leap forward longer than this is checked by the next frame: longer than a capture's usual silences
/// (the idle flow timeout is 300 s), shorter than a wrong year or a clock set from another epoch.
pub const LEAP_NANOS: u64 = 3600 * 1_000_000_000;

/// A step back longer than this is told: merged interfaces and NIC timestamp queues step back by
/// microseconds, a clock set back by hand by seconds.
pub const BACK_NANOS: u64 = 1_000_000_000;

/// A jump of the capture's clock, told at the frame that showed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Jump {
    pub frame: u64,
    /// The frame's stamp less the time before it, nanoseconds (negative: back).
    pub by_nanos: i64,
    /// The clock kept the jump (a leap the next frame followed); else the frame was analysed at the time
    /// before it.
    pub kept: bool,
    /// It was the capture's first frame, stamped after the second by more than a leap: the clock starts
    /// again at the second (what was timed by the first must follow).
    pub first: bool,
}

/// The clock as the analysis follows it.
#[derive(Debug, Default, Clone)]
pub struct Clock {
    /// The time of the last frame analysed.
    last: Option<u64>,
    /// A leap not yet settled: its frame and stamp.
    leap: Option<(u64, u64)>,
    /// The first frame, until the second tells whether it was stamped wrong.
    first: Option<u64>,
    /// Frames stamped before the one before them, however little.
    pub steps_back: u64,
}

fn signed(a: u64, b: u64) -> i64 {
    if a >= b {
        i64::try_from(a - b).unwrap_or(i64::MAX)
    } else {
        i64::try_from(b - a).map_or(i64::MIN, |d| -d)
    }
}

impl Clock {
    /// The time frame `number`, stamped `ts`, is analysed at, and the jump it settles or shows, if any.
    pub fn stamp(&mut self, number: u64, ts: u64) -> (u64, Option<Jump>) {
        let Some(last) = self.last else {
            self.last = Some(ts);
            self.first = Some(number);
            return (ts, None);
        };
        if let Some(first) = self.first.take()
            && last > ts
            && last - ts > LEAP_NANOS
        {
            self.last = Some(ts);
            let jump = Jump {
                frame: first,
                by_nanos: signed(last, ts),
                kept: false,
                first: true,
            };
            return (ts, Some(jump));
        }
        let mut told = None;
        if let Some((frame, leapt)) = self.leap.take() {
            let follows = ts >= leapt && ts - leapt <= LEAP_NANOS;
            told = Some(Jump {
                frame,
                by_nanos: signed(leapt, last),
                kept: follows,
                first: false,
            });
            if follows {
                self.last = Some(ts);
                return (ts, told);
            }
        }
        if ts < last {
            self.steps_back += 1;
            if last - ts <= BACK_NANOS {
                // Interfaces merged, a NIC's timestamp queue: taken as stamped (every judgment saturates).
                return (ts, told);
            }
            if told.is_none() {
                told = Some(Jump {
                    frame: number,
                    by_nanos: signed(ts, last),
                    kept: false,
                    first: false,
                });
            }
            return (last, told);
        }
        if ts - last > LEAP_NANOS {
            // Held until the next frame tells; a leap settled now is told now, this one later.
            self.leap = Some((number, ts));
            return (last, told);
        }
        self.last = Some(ts);
        (ts, told)
    }

    /// At the end of the capture: a leap no frame followed was one frame stamped wrong.
    pub fn finish(&mut self) -> Option<Jump> {
        let (frame, leapt) = self.leap.take()?;
        Some(Jump {
            frame,
            by_nanos: signed(leapt, self.last.unwrap_or(leapt)),
            kept: false,
            first: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    /// One frame stamped 80 years late among frames a millisecond apart: analysed at the time before it,
    /// told when the next frame follows the old clock.
    #[test]
    fn a_frame_stamped_far_ahead_is_held_at_the_time_before_it() {
        let mut c = Clock::default();
        assert_eq!(c.stamp(1, 100 * S), (100 * S, None));
        let far = 100 * S + 80 * 365 * 86_400 * S;
        assert_eq!(c.stamp(2, far), (100 * S, None));
        let (t, jump) = c.stamp(3, 100 * S + 1_000_000);
        assert_eq!(t, 100 * S + 1_000_000);
        assert_eq!(
            jump,
            Some(Jump {
                frame: 2,
                by_nanos: (far - 100 * S) as i64,
                kept: false,
                first: false
            })
        );
    }

    /// A leap the next frame follows is a new clock (or a long silence): kept from there on.
    #[test]
    fn a_leap_the_next_frame_follows_is_kept() {
        let mut c = Clock::default();
        c.stamp(1, 10 * S);
        assert_eq!(c.stamp(2, 10_000 * S), (10 * S, None));
        let (t, jump) = c.stamp(3, 10_000 * S + 5);
        assert_eq!(t, 10_000 * S + 5);
        assert_eq!(jump.map(|j| (j.frame, j.kept)), Some((2, true)));
        // A leap at the very end: the last frame stamped wrong.
        assert_eq!(c.stamp(4, u64::MAX), (10_000 * S + 5, None));
        assert_eq!(c.finish().map(|j| (j.frame, j.kept)), Some((4, false)));
    }

    /// A first frame stamped 70 years ahead of the second: the first was wrong, the clock starts at the
    /// second; a first frame a minute ahead is a step back of the second (held).
    #[test]
    fn a_first_frame_far_ahead_of_the_second_was_stamped_wrong() {
        let mut c = Clock::default();
        let far = 70 * 365 * 86_400 * S;
        assert_eq!(c.stamp(1, far), (far, None));
        let (t, jump) = c.stamp(2, 5 * S);
        assert_eq!(t, 5 * S);
        assert_eq!(
            jump.map(|j| (j.frame, j.first, j.kept)),
            Some((1, true, false))
        );
        assert_eq!(c.stamp(3, 6 * S), (6 * S, None));
        let mut c = Clock::default();
        c.stamp(1, 65 * S);
        assert_eq!(c.stamp(2, 5 * S).0, 65 * S);
    }

    /// Steps back of up to a second are taken as stamped; longer ones are held at the time before, and
    /// told.
    #[test]
    fn steps_back_never_move_the_clock_back() {
        let mut c = Clock::default();
        c.stamp(1, 5 * S);
        assert_eq!(c.stamp(2, 5 * S - 10), (5 * S - 10, None));
        let (t, jump) = c.stamp(3, 2 * S);
        assert_eq!(t, 5 * S);
        assert_eq!(
            jump,
            Some(Jump {
                frame: 3,
                by_nanos: -3 * S as i64,
                kept: false,
                first: false
            })
        );
        assert_eq!(c.steps_back, 2);
        assert_eq!(c.stamp(4, 5 * S + 1), (5 * S + 1, None));
    }
}
