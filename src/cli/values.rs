//! The value parsers of the command line: each turns one argument into a typed value, or into the one
//! line clap shows after "invalid value".
use rocescope::analysis::{self, DscpMap};
use rocescope::dissect::FieldsError;
use rocescope::report::Condition;

/// An argument that is not a value of its flag (clap shows it after "invalid value"); each holds the
/// argument, or the part of it that is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    #[error("'{0}' is not an InfiniBand path MTU (256, 512, 1024, 2048 or 4096)")]
    Mtu(String),
    #[error("'{0}' is not a link speed (try 25G, 100G, 400G)")]
    Speed(String),
    #[error("'{0}' is not DSCP=PRIORITY (DSCP 0-63, priority 0-7; e.g. 26=3,48=6)")]
    DscpPair(String),
    #[error("'{0}' is not a buffer size (try 64M)")]
    Size(String),
    #[error("'{0}' is not a number of seconds")]
    Secs(String),
    #[error("'{0}' is not a network device name (1-15 letters, digits, '.', '-', '_', '@', ':')")]
    Netdev(String),
    #[error("'{0}' is not two network devices, FIRST,SECOND (not the same one twice)")]
    Bridge(String),
    #[error("'{0}': the interval must be at least 0.01 seconds")]
    Interval(String),
    #[error("'{0}' is not a QP number (use decimal or 0x-prefixed hex)")]
    Qpn(String),
    #[error("QP number {0} does not fit in 24 bits")]
    QpnWide(String),
    #[error(
        "unknown opcode '{0}' (try RC_SEND_ONLY, WRITE_FIRST, ACKNOWLEDGE, CNP or a number like 0x11)"
    )]
    Opcode(String),
    #[error(transparent)]
    Fields(#[from] FieldsError),
    /// `known`: the condition names, comma-separated.
    #[error("unknown condition '{name}' (choose from {known}, or all)")]
    Condition { name: String, known: String },
    /// `gen`: `what` says the range ("a number of seconds from 0 to 60", ...).
    #[error("'{arg}' is not {what}")]
    Not { arg: String, what: &'static str },
    /// `lab`: a name that cannot start an interface name.
    #[error(
        "'{0}' is not usable: 1 to 14 letters, digits, '_' or '-' (NAME0 must fit an interface name)"
    )]
    Name(String),
}

/// An InfiniBand path MTU: 256, 512, 1024, 2048 or 4096.
pub fn parse_mtu(s: &str) -> Result<u32, ValueError> {
    match s.parse::<u32>() {
        Ok(m) if parsers::psn::is_mtu(m) => Ok(m),
        _ => Err(ValueError::Mtu(s.to_string())),
    }
}

/// `--ecmp-members`: 2 to [`analysis::ecmp::MAX_MEMBERS`].
pub fn parse_ecmp_members(s: &str) -> Result<u16, ValueError> {
    match s.parse::<u16>() {
        Ok(n) if (2..=analysis::ecmp::MAX_MEMBERS).contains(&n) => Ok(n),
        _ => Err(ValueError::Not {
            arg: s.to_string(),
            what: "a number of ECMP members from 2 to 256",
        }),
    }
}

/// Threads for `-j`: at least 1 (one thread then reads and another analyses, as with 2).
pub fn parse_threads(s: &str) -> Result<usize, ValueError> {
    match s.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(ValueError::Not {
            arg: s.to_string(),
            what: "a number of threads, 1 or more",
        }),
    }
}

/// A link speed: `100G`, `25g`, `400G`, `10000M`, or bits per second.
pub fn parse_speed(s: &str) -> Result<u64, ValueError> {
    let t = s.trim();
    let (digits, scale) = match t.char_indices().last() {
        Some((i, 'G' | 'g')) => (&t[..i], 1_000_000_000),
        Some((i, 'M' | 'm')) => (&t[..i], 1_000_000),
        _ => (t, 1),
    };
    match digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
    {
        Some(bps) if bps > 0 => Ok(bps),
        _ => Err(ValueError::Speed(s.to_string())),
    }
}

/// `--dscp-map`: `DSCP=PRIORITY` pairs, comma-separated (`26=3,48=6`), DSCP 0-63, priority 0-7.
pub fn parse_dscp_map(s: &str) -> Result<DscpMap, ValueError> {
    let mut map = DscpMap::default();
    for pair in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let parsed = pair.split_once('=').and_then(|(d, p)| {
            let d = d.trim().parse::<u8>().ok().filter(|d| *d < 64)?;
            let p = p.trim().parse::<u8>().ok().filter(|p| *p < 8)?;
            Some((d, p))
        });
        let Some((d, p)) = parsed else {
            return Err(ValueError::DscpPair(pair.to_string()));
        };
        map.0[usize::from(d)] = Some(p);
    }
    Ok(map)
}

/// A byte size: `1048576`, `64K`, `32M`, `1G` (binary units).
pub fn parse_size(s: &str) -> Result<u32, ValueError> {
    let t = s.trim();
    let (digits, scale) = match t.char_indices().last() {
        Some((i, 'K' | 'k')) => (&t[..i], 1u64 << 10),
        Some((i, 'M' | 'm')) => (&t[..i], 1 << 20),
        Some((i, 'G' | 'g')) => (&t[..i], 1 << 30),
        _ => (t, 1),
    };
    match digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
    {
        Some(n) if n > 0 && n <= i32::MAX as u64 => Ok(n as u32),
        _ => Err(ValueError::Size(s.to_string())),
    }
}

/// A number of seconds, 0 or more.
pub fn parse_secs(s: &str) -> Result<f64, ValueError> {
    match s.parse::<f64>() {
        Ok(v) if (0.0..1e9).contains(&v) => Ok(v),
        _ => Err(ValueError::Secs(s.to_string())),
    }
}

/// A Linux network device's name, as the kernel allows it (IFNAMSIZ - 1 bytes, no '/', no space), of the
/// characters that need no quoting where rocescope passes it on (an nftables rule).
pub fn parse_netdev(s: &str) -> Result<String, ValueError> {
    let fits = (1..16).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-@:".contains(&b));
    fits.then(|| s.to_string())
        .ok_or_else(|| ValueError::Netdev(s.to_string()))
}

/// `--bridge FIRST,SECOND`: two network devices, not the same.
pub fn parse_bridge(s: &str) -> Result<[String; 2], ValueError> {
    let bad = || ValueError::Bridge(s.to_string());
    let (a, b) = s.split_once(',').ok_or_else(bad)?;
    let (a, b) = (
        parse_netdev(a).map_err(|_| bad())?,
        parse_netdev(b).map_err(|_| bad())?,
    );
    if a == b {
        return Err(bad());
    }
    Ok([a, b])
}

/// An interval between readings: seconds, more than 0 (at least 10 ms).
pub fn parse_interval(s: &str) -> Result<f64, ValueError> {
    match parse_secs(s)? {
        v if v >= 0.01 => Ok(v),
        _ => Err(ValueError::Interval(s.to_string())),
    }
}

/// A QP number: decimal or 0x-prefixed hex, 24 bits.
pub fn parse_qpn(s: &str) -> Result<u32, ValueError> {
    let v = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16),
        None => s.parse(),
    }
    .map_err(|_| ValueError::Qpn(s.to_string()))?;
    if v > parsers::psn::PSN_MASK {
        return Err(ValueError::QpnWide(s.to_string()));
    }
    Ok(v)
}

/// The opcodes a `--opcode` argument names (see [`rocescope::dissect::opcode_set`]).
pub fn parse_opcode(s: &str) -> Result<OpcodeSet, ValueError> {
    rocescope::dissect::opcode_set(s)
        .map(|set| OpcodeSet(Box::new(set)))
        .ok_or_else(|| ValueError::Opcode(s.to_string()))
}

/// A `-e` field (see [`rocescope::dissect::Column::new`]).
pub fn parse_column(s: &str) -> Result<rocescope::dissect::Column, ValueError> {
    Ok(rocescope::dissect::Column::new(s)?)
}

/// A `-E` option (see [`rocescope::dissect::FieldsOption::parse`]).
pub fn parse_fields_option(s: &str) -> Result<rocescope::dissect::FieldsOption, ValueError> {
    Ok(rocescope::dissect::FieldsOption::parse(s)?)
}

/// Opcodes to show, by number.
#[derive(Clone, Debug)]
pub struct OpcodeSet(pub Box<[bool; 256]>);

/// The `--fail-on` conditions (a newtype, so that clap takes the comma list as one value).
#[derive(Clone, Debug, Default)]
pub struct FailOn(pub Vec<Condition>);

/// A `--fail-on` list: condition names separated by commas; `all` is every condition.
pub fn parse_fail_on(s: &str) -> Result<FailOn, ValueError> {
    let mut out: Vec<Condition> = Vec::new();
    for n in s.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let named: Vec<Condition> = if n == "all" {
            Condition::ALL.to_vec()
        } else {
            let c = Condition::from_name(n).ok_or_else(|| {
                let names: Vec<&str> = Condition::ALL.iter().map(|c| c.name()).collect();
                ValueError::Condition {
                    name: n.to_string(),
                    known: names.join(","),
                }
            })?;
            vec![c]
        };
        for c in named {
            if !out.contains(&c) {
                out.push(c);
            }
        }
    }
    Ok(FailOn(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values() {
        assert_eq!(parse_mtu("1024"), Ok(1024));
        assert!(parse_mtu("1500").is_err());
        assert_eq!(parse_speed("25G"), Ok(25_000_000_000));
        // `--link-speed`'s default as clap writes it is the analysis' default.
        assert_eq!(
            parse_speed("100G"),
            Ok(rocescope::analysis::Config::DEFAULT_LINK_SPEED_BPS)
        );
        assert_eq!(parse_speed("10000m"), Ok(10_000_000_000));
        assert!(parse_speed("0").is_err());
        let map = parse_dscp_map("26=3, 48=6").unwrap();
        assert_eq!(
            (map.get(26), map.get(48), map.get(0)),
            (Some(3), Some(6), None)
        );
        assert!(parse_dscp_map("64=3").is_err());
        assert!(parse_dscp_map("26=8").is_err());
        assert!(parse_dscp_map("26").is_err());
        assert_eq!(parse_size("32M"), Ok(32 << 20));
        assert!(parse_size("4G").is_err());
        assert_eq!(parse_qpn("0x11"), Ok(17));
        assert!(parse_qpn("0x1000000").is_err());
        assert_eq!(
            parse_fail_on("gaps, ce").map(|f| f.0),
            Ok(vec![Condition::Gaps, Condition::Ce])
        );
        assert!(parse_fail_on("loss").is_err());
        assert_eq!(
            parse_fail_on("stall,no_response,timeouts,violations,no_roce").map(|f| f.0.len()),
            Ok(5)
        );
        assert_eq!(
            parse_fail_on("gaps,all").map(|f| f.0),
            Ok(Condition::ALL.to_vec())
        );
    }
}
