//! A set's members (`in {6, 8..10, 0x11}`) as sorted, merged intervals: membership is a binary search, so a
//! set of 14,000 frame numbers costs a frame what a set of three does. Every member of one set is of the
//! kind of its field, so one representation serves a set: numbers (numbers, booleans, IPv4 and IPv6
//! addresses and networks, each an interval of integers) or byte strings (MACs, bytes, text).
use std::cmp::Ordering;

use parsers::fields::Value;

use super::Lit;

/// What the members are, and so how a value is read to be looked up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Domain {
    /// Numbers: `Uint`, `Hex`, `Micros` and `Bool` values read as numbers.
    Uint,
    /// `Bool` values only.
    Bool,
    Ipv4,
    Ipv6,
    /// `Mac` and `Bytes` values.
    Bytes,
    /// `Text` and `Damage` values.
    Text,
}

/// The members of one set.
#[derive(Debug)]
pub(super) struct Set {
    domain: Domain,
    numbers: Vec<(u128, u128)>,
    strings: Vec<(Vec<u8>, Vec<u8>)>,
}

impl Set {
    /// The set of `members` (each a value, or a range of two), as the compiler read them; a range whose
    /// low end is above its high end holds nothing (tshark's `{8..6}` matches no frame).
    pub(super) fn new(members: Vec<(Lit, Option<Lit>)>) -> Set {
        let mut domain = Domain::Uint;
        let mut numbers = Vec::new();
        let mut strings = Vec::new();
        for (lo, hi) in members {
            let hi = hi.unwrap_or_else(|| lo.clone());
            match (number(&lo, true), number(&hi, false)) {
                (Some((d, a)), Some((_, b))) => {
                    domain = d;
                    numbers.push((a, b));
                }
                _ => {
                    if let (Some((d, a)), Some((_, b))) = (string(lo), string(hi)) {
                        domain = d;
                        strings.push((a, b));
                    }
                }
            }
        }
        Set {
            domain,
            numbers: merged(numbers, |a, b| a <= b || b.checked_add(1) == Some(*a)),
            strings: merged(strings, |a, b| a <= b),
        }
    }

    /// Whether `v` is a member.
    pub(super) fn holds(&self, v: &Value) -> bool {
        match self.domain {
            Domain::Bytes | Domain::Text => {
                let bytes: std::borrow::Cow<[u8]> = match (self.domain, v) {
                    (Domain::Bytes, Value::Mac(m)) => m.as_slice().into(),
                    (Domain::Bytes, Value::Bytes(b)) => (*b).into(),
                    (Domain::Text, Value::Text(t)) => t.as_bytes().into(),
                    (Domain::Text, Value::Damage(m)) => m.to_string().into_bytes().into(),
                    _ => return false,
                };
                within(&self.strings, bytes.as_ref(), |lo, x| lo.as_slice().cmp(x))
            }
            _ => {
                let n = match (self.domain, v) {
                    (Domain::Uint, Value::Uint(n) | Value::Hex(n, _)) => u128::from(*n),
                    (Domain::Uint, Value::Micros(us)) => u128::from(*us),
                    (Domain::Uint | Domain::Bool, Value::Bool(b)) => u128::from(*b),
                    (Domain::Ipv4, Value::Ipv4(a)) => u128::from(u32::from_be_bytes(*a)),
                    (Domain::Ipv6, Value::Ipv6(a)) => u128::from_be_bytes(*a),
                    _ => return false,
                };
                within(&self.numbers, &n, |lo, x| lo.cmp(x))
            }
        }
    }

    /// How many intervals the members came to (after merging).
    #[cfg(test)]
    pub(super) fn intervals(&self) -> usize {
        self.numbers.len() + self.strings.len()
    }
}

/// A member's end as a number: the network's first (`low`) or last address.
fn number(lit: &Lit, low: bool) -> Option<(Domain, u128)> {
    Some(match *lit {
        Lit::Uint(n) => (Domain::Uint, n.into()),
        Lit::Bool(b) => (Domain::Bool, b.into()),
        Lit::Ipv4(net, prefix) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            let end = if low { net & mask } else { net | !mask };
            (Domain::Ipv4, end.into())
        }
        Lit::Ipv6(net, prefix) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            (Domain::Ipv6, if low { net & mask } else { net | !mask })
        }
        Lit::Bytes(_) | Lit::Text(_) => return None,
    })
}

fn string(lit: Lit) -> Option<(Domain, Vec<u8>)> {
    match lit {
        Lit::Bytes(b) => Some((Domain::Bytes, b)),
        Lit::Text(t) => Some((Domain::Text, t.into_bytes())),
        _ => None,
    }
}

/// The intervals sorted by their low end, empty ones dropped, overlapping (or, for numbers, adjacent:
/// `touches`) ones merged.
fn merged<T: Ord>(mut v: Vec<(T, T)>, touches: impl Fn(&T, &T) -> bool) -> Vec<(T, T)> {
    v.retain(|(a, b)| a <= b);
    v.sort_by(|x, y| x.0.cmp(&y.0));
    let mut out: Vec<(T, T)> = Vec::with_capacity(v.len());
    for (a, b) in v {
        match out.last_mut() {
            Some(last) if touches(&a, &last.1) => {
                if b > last.1 {
                    last.1 = b;
                }
            }
            _ => out.push((a, b)),
        }
    }
    out
}

/// `x` within one of the sorted, disjoint `intervals`: the last one starting at or before `x` ends at
/// or after it.
fn within<T: Ord + ?Sized, S: std::borrow::Borrow<T>>(
    intervals: &[(S, S)],
    x: &T,
    cmp: impl Fn(&S, &T) -> Ordering,
) -> bool {
    let after = intervals.partition_point(|(lo, _)| cmp(lo, x) != Ordering::Greater);
    after
        .checked_sub(1)
        .and_then(|i| intervals.get(i))
        .is_some_and(|(_, hi)| hi.borrow() >= x)
}
