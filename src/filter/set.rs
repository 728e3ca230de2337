//! A set's members (`in {6, 8..10, 0x11}`) as sorted, merged intervals: membership is a binary search, so a
//! set of 14,000 frame numbers costs a frame what a set of three does. Every member of one set is of the
//! kind of its field, so one representation serves a set: numbers (numbers, booleans, IPv4 and IPv6
//! addresses and networks, each an interval of integers) or byte strings (MACs, bytes, text).
use std::cmp::Ordering;

use super::expr::{Span, Val};

/// The members of one set: numbers (numbers, times, booleans, addresses and networks, each an interval of
/// integers, keyed so that their order is kept) or byte strings (MACs, bytes, text).
#[derive(Debug)]
pub(super) struct Set {
    numbers: Vec<(u128, u128)>,
    strings: Vec<(Vec<u8>, Vec<u8>)>,
}

impl Set {
    /// The set of `members` (each a value, or a range of two), as the compiler read them, their bytes in
    /// `pool`; a range whose low end is above its high end holds nothing (tshark's `{8..6}` matches no
    /// frame).
    pub(super) fn new(members: Vec<(Val, Option<Val>)>, pool: &[u8]) -> Set {
        let mut numbers = Vec::new();
        let mut strings = Vec::new();
        let text = |s: Span| {
            let at = s.start as usize;
            pool.get(at..at + s.len as usize)
                .unwrap_or_default()
                .to_vec()
        };
        for (lo, hi) in members {
            let hi = hi.unwrap_or(lo);
            match (key(lo, true), key(hi, false), span(lo), span(hi)) {
                (Some(a), Some(b), ..) => numbers.push((a, b)),
                (_, _, Some(a), Some(b)) => strings.push((text(a), text(b))),
                _ => {}
            }
        }
        Set {
            numbers: merged(numbers, |a, b| a <= b || b.checked_add(1) == Some(*a)),
            strings: merged(strings, |a, b| a <= b),
        }
    }

    /// Whether `v` is a member (`bytes` gives a span's bytes).
    pub(super) fn holds<'b>(&self, v: Val, bytes: impl Fn(Span) -> &'b [u8]) -> bool {
        if let Some(n) = key(v, true) {
            return within(&self.numbers, &n, |lo, x| lo.cmp(x));
        }
        span(v).is_some_and(|s| within(&self.strings, bytes(s), |lo, x| lo.as_slice().cmp(x)))
    }

    /// How many intervals the members came to (after merging).
    #[cfg(test)]
    pub(super) fn intervals(&self) -> usize {
        self.numbers.len() + self.strings.len()
    }
}

/// A value (or a network's first, `low`, or last address) as an ordered key.
fn key(v: Val, low: bool) -> Option<u128> {
    Some(match v {
        // The sign bit flipped: negative offsets sort below positive ones.
        Val::Num(n) => (n as u128) ^ (1 << 127),
        Val::Bool(b) => b.into(),
        Val::Ipv4(net, prefix) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            let end = if low { net & mask } else { net | !mask };
            end.into()
        }
        Val::Ipv6(net, prefix) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            if low { net & mask } else { net | !mask }
        }
        Val::Bytes(_) | Val::Text(_) => return None,
    })
}

fn span(v: Val) -> Option<Span> {
    match v {
        Val::Bytes(s) | Val::Text(s) => Some(s),
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
