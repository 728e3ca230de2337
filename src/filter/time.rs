//! The time fields (`frame.time`, `frame.time_delta`, ...) and their literals as tshark 4.0 reads them:
//! an absolute time is a quoted date ("Dec 31, 2002 13:55:31.3", "2002-12-31 13:55:31.3", in local time,
//! or UTC with " UTC" or "Z" after it); an offset is seconds (`0.000295`, `-2`). Both are held in
//! nanoseconds.
use chrono::{Local, NaiveDateTime, TimeZone, Utc};

use super::expr::Ty;

/// The time fields, sorted, and their types (`tshark -G fields`: `frame.time` is FT_ABSOLUTE_TIME, the
/// others FT_RELATIVE_TIME).
pub(super) const TIME_FIELDS: &[(&str, Ty)] = &[
    ("frame.time", Ty::AbsTime),
    ("frame.time_delta", Ty::RelTime),
    ("frame.time_delta_displayed", Ty::RelTime),
    ("frame.time_epoch", Ty::RelTime),
    ("frame.time_relative", Ty::RelTime),
];

/// A time a frame's time fields hold: the packet's, the first's, the previous one's and the previous
/// shown one's, in nanoseconds since 1970.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Clock {
    pub now: u64,
    pub first: u64,
    pub previous: u64,
    pub previous_shown: u64,
}

impl Clock {
    /// The value of the time field `name` (one of [`TIME_FIELDS`]).
    pub(super) fn value(&self, name: &str) -> i128 {
        let now = i128::from(self.now);
        match name {
            "frame.time_delta" => now - i128::from(self.previous),
            "frame.time_delta_displayed" => now - i128::from(self.previous_shown),
            "frame.time_relative" => now - i128::from(self.first),
            _ => now,
        }
    }
}

/// Seconds with an optional fraction, as nanoseconds (`0.069736`, `7`).
pub(super) fn seconds(text: &str) -> Option<i128> {
    let (whole, frac) = text.split_once('.').unwrap_or((text, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if (whole.is_empty() && frac.is_empty()) || !digits(whole) || !digits(frac) || frac.len() > 9 {
        return None;
    }
    let whole: i128 = if whole.is_empty() {
        0
    } else {
        whole.parse().ok()?
    };
    let nanos: i128 = format!("{frac:0<9}").parse().ok()?;
    whole.checked_mul(1_000_000_000)?.checked_add(nanos)
}

/// A date and time as tshark 4.0 takes it, as nanoseconds since 1970.
pub(super) fn absolute(text: &str) -> Option<i128> {
    let (text, utc) = match text.strip_suffix(" UTC").or_else(|| text.strip_suffix('Z')) {
        Some(t) => (t, true),
        None => (text, false),
    };
    // The fraction after the seconds (a fraction needs seconds: "13:55.3" is refused, as tshark does).
    let (clock, nanos) = match text.rsplit_once('.') {
        Some((head, frac)) if head.matches(':').count() == 2 => {
            (head, seconds(&format!("0.{frac}"))?)
        }
        Some(_) => return None,
        None => (text, 0),
    };
    let naive = [
        "%b %d, %Y %H:%M:%S",
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%dT%H:%M:%S",
        "%b %d, %Y %H:%M",
        "%Y-%m-%d %H:%M",
    ]
    .iter()
    .find_map(|f| NaiveDateTime::parse_from_str(clock, f).ok())?;
    let secs = if utc {
        Utc.from_utc_datetime(&naive).timestamp()
    } else {
        Local.from_local_datetime(&naive).earliest()?.timestamp()
    };
    i128::from(secs)
        .checked_mul(1_000_000_000)?
        .checked_add(nanos)
}
