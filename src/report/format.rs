//! How figures are written, in one place for the text report, the status line, the TUI and the SVG plots.

/// An error and its causes on one line, as the command line prints them (`{:#}` of the edge's errors):
/// `cannot create out.pcap: Permission denied (os error 13)`.
pub fn error_line(e: &dyn std::error::Error) -> String {
    let mut line = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        line.push_str(": ");
        line.push_str(&c.to_string());
        cause = c.source();
    }
    line
}

/// A bit rate from bytes per second, short: `1.2Gb/s`, `350.0kb/s`.
pub fn bit_rate(bytes_per_s: f64) -> String {
    let bits = bytes_per_s * 8.0;
    let (v, unit) = if bits >= 1e9 {
        (bits / 1e9, "Gb/s")
    } else if bits >= 1e6 {
        (bits / 1e6, "Mb/s")
    } else if bits >= 1e3 {
        (bits / 1e3, "kb/s")
    } else {
        (bits, "b/s")
    };
    format!("{v:.1}{unit}")
}

/// A count per second with an SI prefix, short: `1.5M`, `12.0k`, `7`.
pub fn per_second(v: f64) -> String {
    if v >= 1e9 {
        format!("{:.1}G", v / 1e9)
    } else if v >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

/// A duration in seconds, short: `1.25s`, `3.10ms`, `12.0µs`.
pub fn duration(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.2}s")
    } else if s >= 1e-3 {
        format!("{:.2}ms", s * 1e3)
    } else {
        format!("{:.1}µs", s * 1e6)
    }
}

/// The smallest 1, 2 or 5 × 10^k at or above `x`: a round width for buckets and ticks (1 for a width that
/// is not positive).
pub fn round_step(x: f64) -> f64 {
    if !(x.is_finite() && x > 0.0) {
        return 1.0;
    }
    let p = 10f64.powf(x.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * p)
        .find(|&s| s >= x * (1.0 - 1e-9))
        .unwrap_or(10.0 * p)
}

/// A time of day in UTC, from seconds since 1970-01-01 (proleptic Gregorian).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Utc {
    pub year: i64,
    pub month: u32,
    pub day: u32,
    pub hour: u64,
    pub minute: u64,
    pub second: u64,
}

impl Utc {
    pub fn of(unix_secs: u64) -> Utc {
        let (year, month, day) = civil_from_days((unix_secs / 86_400) as i64);
        let s = unix_secs % 86_400;
        Utc {
            year,
            month,
            day,
            hour: s / 3600,
            minute: s / 60 % 60,
            second: s % 60,
        }
    }
}

/// `2026-12-01 09:30:05`.
impl std::fmt::Display for Utc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:04}-{:02}-{:02} {:02}:{:02}:{:02}",
            self.year, self.month, self.day, self.hour, self.minute, self.second
        )
    }
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

/// Milliseconds from microseconds, as the RNR timer table writes them: `0.01`, `655.36`.
pub fn millis(us: u32) -> String {
    format!("{}.{:02}", us / 1000, (us % 1000) / 10)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures() {
        assert_eq!(bit_rate(125_000_000.0), "1.0Gb/s");
        assert_eq!(bit_rate(1_000.0), "8.0kb/s");
        assert_eq!(bit_rate(10.0), "80.0b/s");
        assert_eq!(per_second(1_500_000.0), "1.5M");
        assert_eq!(per_second(999.4), "999");
        assert_eq!(duration(1.254), "1.25s");
        assert_eq!(duration(0.0031), "3.10ms");
        assert_eq!(duration(0.000012), "12.0µs");
        assert_eq!(millis(10), "0.01");
        assert_eq!(millis(655_360), "655.36");
        assert_eq!(round_step(0.0118), 0.02);
        assert_eq!(round_step(0.3), 0.5);
        assert_eq!(round_step(1.0), 1.0);
        assert_eq!(round_step(7.0), 10.0);
        assert_eq!(round_step(0.0), 1.0);
        // date -u -d @1795972934: Sun Nov 29 17:22:14 UTC 2026; @951782400: Tue Feb 29 00:00:00 UTC 2000.
        assert_eq!(Utc::of(1_795_972_934).to_string(), "2026-11-29 17:22:14");
        assert_eq!(Utc::of(951_782_400).to_string(), "2000-02-29 00:00:00");
        assert_eq!(Utc::of(0).to_string(), "1970-01-01 00:00:00");
    }
}
