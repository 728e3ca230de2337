//! The patterns of `gen mesh` as rounds of pairs: a round's pairs run at the same time, the rounds one after
//! the other. A pair is directed: `src` is the requester (its agent posts), `dst` the responder.

use std::fmt;
use std::str::FromStr;

/// A directed pair of hosts, by their index in the hosts file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub struct Pair {
    pub src: usize,
    pub dst: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    /// Every ordered pair, each host in at most `--per-host` pairs at a time.
    Pairs,
    /// Each host to the next (the last to the first), all at once.
    Ring,
    /// `senders` hosts to one at once, each host the receiver in turn (the pattern that fills a switch's
    /// egress queue: PFC and ECN at work).
    Incast { senders: usize },
    /// Every ordered pair at once.
    AllToAll,
    /// The first half of the hosts to the second half and back, host i with host i + n/2, all at once.
    Bisection,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PatternError {
    #[error("--pattern '{0}': pairs, ring, 'incast N:1', all-to-all or bisection expected")]
    Unknown(String),
    #[error("--pattern incast {senders}:1 needs {} hosts; the hosts file has {hosts}", senders + 1)]
    IncastTooWide { senders: usize, hosts: usize },
    #[error("--per-host 0: each host must take part in at least one pair at a time")]
    NoneAtATime,
}

impl FromStr for Pattern {
    type Err = PatternError;

    /// `incast N:1` is also read as `incast-N:1`, `incast:N:1` or `incastN:1`.
    fn from_str(s: &str) -> Result<Pattern, PatternError> {
        let unknown = || PatternError::Unknown(s.to_string());
        Ok(match s {
            "pairs" => Pattern::Pairs,
            "ring" => Pattern::Ring,
            "all-to-all" => Pattern::AllToAll,
            "bisection" => Pattern::Bisection,
            _ => {
                let n = s
                    .strip_prefix("incast")
                    .ok_or_else(unknown)?
                    .trim_start_matches([' ', '-', ':'])
                    .strip_suffix(":1")
                    .ok_or_else(unknown)?;
                match n.parse::<usize>() {
                    Ok(senders) if senders > 0 => Pattern::Incast { senders },
                    _ => return Err(unknown()),
                }
            }
        })
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pattern::Pairs => f.write_str("pairs"),
            Pattern::Ring => f.write_str("ring"),
            Pattern::Incast { senders } => write!(f, "incast {senders}:1"),
            Pattern::AllToAll => f.write_str("all-to-all"),
            Pattern::Bisection => f.write_str("bisection"),
        }
    }
}

/// The rounds of `pattern` over `hosts` hosts; `per_host`: for `pairs`, the pairs a host takes part in at a
/// time (as requester or responder).
pub fn rounds(
    pattern: Pattern,
    hosts: usize,
    per_host: usize,
) -> Result<Vec<Vec<Pair>>, PatternError> {
    let n = hosts;
    Ok(match pattern {
        Pattern::Pairs => {
            if per_host == 0 {
                return Err(PatternError::NoneAtATime);
            }
            schedule(&tournament(n), n, per_host)
        }
        Pattern::Ring => vec![
            (0..n)
                .map(|i| Pair {
                    src: i,
                    dst: (i + 1) % n,
                })
                .collect(),
        ],
        Pattern::Incast { senders } => {
            if senders >= n {
                return Err(PatternError::IncastTooWide { senders, hosts: n });
            }
            (0..n)
                .map(|dst| {
                    (1..=senders)
                        .map(|k| Pair {
                            src: (dst + k) % n,
                            dst,
                        })
                        .collect()
                })
                .collect()
        }
        Pattern::AllToAll => vec![
            (0..n)
                .flat_map(|src| {
                    (0..n)
                        .filter(move |&d| d != src)
                        .map(move |dst| Pair { src, dst })
                })
                .collect(),
        ],
        Pattern::Bisection => {
            let half = n / 2;
            vec![
                (0..half)
                    .flat_map(|i| {
                        [
                            Pair {
                                src: i,
                                dst: i + half,
                            },
                            Pair {
                                src: i + half,
                                dst: i,
                            },
                        ]
                    })
                    .collect(),
            ]
        }
    })
}

/// Probe window `window`'s pairs: each host probes `targets` of the others at once (at most all of them),
/// the next ones in the hosts' order after those of the window before, so that over (n - 1) / targets windows
/// every pair is probed.
pub fn probe_round(hosts: usize, targets: usize, window: u64) -> Vec<Pair> {
    let others = hosts.saturating_sub(1);
    let k = targets.min(others);
    if k == 0 {
        return Vec::new();
    }
    let first = (window % others as u64) as usize * k % others;
    (0..hosts)
        .flat_map(|src| {
            (0..k).map(move |j| Pair {
                src,
                dst: (src + 1 + (first + j) % others) % hosts,
            })
        })
        .collect()
}

/// Every ordered pair, in the order of a round-robin tournament (the circle method: in each of its rounds
/// every host meets another once), each meeting's two directions one after the other: so that the greedy
/// schedule with one pair per host at a time fills every round.
fn tournament(n: usize) -> Vec<Pair> {
    // an odd count plays with a bye (index n)
    let m = n + n % 2;
    let mut ring: Vec<usize> = (0..m).collect();
    let mut there = Vec::with_capacity(m / 2);
    let mut back = Vec::with_capacity(m / 2);
    let mut out = Vec::with_capacity(n * n.saturating_sub(1));
    for _ in 1..m {
        there.clear();
        back.clear();
        for k in 0..m / 2 {
            let (a, b) = (ring[k], ring[m - 1 - k]);
            if a < n && b < n {
                there.push(Pair { src: a, dst: b });
                back.push(Pair { src: b, dst: a });
            }
        }
        out.extend_from_slice(&there);
        out.extend_from_slice(&back);
        ring[1..].rotate_right(1);
    }
    out
}

/// The pairs into rounds, in their order, each host in at most `per_host` pairs of a round.
fn schedule(pairs: &[Pair], hosts: usize, per_host: usize) -> Vec<Vec<Pair>> {
    let mut left: Vec<Pair> = pairs.to_vec();
    let mut rounds = Vec::new();
    let mut load = vec![0usize; hosts];
    while !left.is_empty() {
        load.iter_mut().for_each(|l| *l = 0);
        let mut round = Vec::new();
        left.retain(|p| {
            if load[p.src] < per_host && load[p.dst] < per_host {
                load[p.src] += 1;
                load[p.dst] += 1;
                round.push(*p);
                false
            } else {
                true
            }
        });
        rounds.push(round);
    }
    rounds
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(src: usize, dst: usize) -> Pair {
        Pair { src, dst }
    }

    #[test]
    fn patterns_by_name() {
        assert_eq!("pairs".parse(), Ok(Pattern::Pairs));
        for s in ["incast 3:1", "incast-3:1", "incast:3:1", "incast3:1"] {
            assert_eq!(s.parse(), Ok(Pattern::Incast { senders: 3 }), "{s}");
        }
        for s in ["incast", "incast 0:1", "incast 3:2", "mesh"] {
            assert_eq!(
                s.parse::<Pattern>(),
                Err(PatternError::Unknown(s.into())),
                "{s}"
            );
        }
        assert_eq!(Pattern::Incast { senders: 3 }.to_string(), "incast 3:1");
    }

    /// Four hosts one pair at a time: 12 ordered pairs in 6 rounds of 2 disjoint pairs (the tournament's 3
    /// rounds, each way).
    #[test]
    fn pairs_one_at_a_time_fill_every_round() {
        let r = rounds(Pattern::Pairs, 4, 1).unwrap();
        assert_eq!(r.len(), 6);
        let mut all: Vec<Pair> = r.iter().flatten().copied().collect();
        for round in &r {
            assert_eq!(round.len(), 2);
            let mut hosts: Vec<usize> = round.iter().flat_map(|p| [p.src, p.dst]).collect();
            hosts.sort();
            assert_eq!(hosts, [0, 1, 2, 3], "{round:?}");
        }
        all.sort();
        let want: Vec<Pair> = (0..4)
            .flat_map(|s| (0..4).filter(move |&d| d != s).map(move |d| p(s, d)))
            .collect();
        assert_eq!(all, want);
        assert_eq!(r[0], [p(0, 3), p(1, 2)]);
        assert_eq!(r[1], [p(3, 0), p(2, 1)]);
    }

    /// Three hosts (a bye each round): 6 pairs, one per round at one pair per host; two per host: A->B with
    /// B->A, then the rest.
    #[test]
    fn pairs_of_an_odd_count() {
        let r = rounds(Pattern::Pairs, 3, 1).unwrap();
        assert_eq!(r.len(), 6);
        assert!(r.iter().all(|x| x.len() == 1));
        let r = rounds(Pattern::Pairs, 3, 2).unwrap();
        assert_eq!(r.iter().map(Vec::len).sum::<usize>(), 6);
        for round in &r {
            for h in 0..3 {
                assert!(round.iter().filter(|p| p.src == h || p.dst == h).count() <= 2);
            }
        }
    }

    /// Four hosts, two targets each: window 0 the next two, window 1 the third and the first again; all
    /// three when two would leave one out of every window.
    #[test]
    fn probe_windows_rotate_through_the_targets() {
        assert_eq!(
            probe_round(4, 2, 0),
            [
                p(0, 1),
                p(0, 2),
                p(1, 2),
                p(1, 3),
                p(2, 3),
                p(2, 0),
                p(3, 0),
                p(3, 1)
            ]
        );
        assert_eq!(
            probe_round(4, 2, 1),
            [
                p(0, 3),
                p(0, 1),
                p(1, 0),
                p(1, 2),
                p(2, 1),
                p(2, 3),
                p(3, 2),
                p(3, 0)
            ]
        );
        assert_eq!(probe_round(3, 8, 5).len(), 6);
        assert!(probe_round(1, 8, 0).is_empty());
    }

    #[test]
    fn ring_incast_all_to_all_bisection() {
        assert_eq!(
            rounds(Pattern::Ring, 3, 1).unwrap(),
            [vec![p(0, 1), p(1, 2), p(2, 0)]]
        );
        assert_eq!(
            rounds(Pattern::Incast { senders: 2 }, 3, 1).unwrap(),
            [
                vec![p(1, 0), p(2, 0)],
                vec![p(2, 1), p(0, 1)],
                vec![p(0, 2), p(1, 2)]
            ]
        );
        assert_eq!(
            rounds(Pattern::Incast { senders: 3 }, 3, 1),
            Err(PatternError::IncastTooWide {
                senders: 3,
                hosts: 3
            })
        );
        assert_eq!(rounds(Pattern::AllToAll, 3, 1).unwrap()[0].len(), 6);
        assert_eq!(
            rounds(Pattern::Bisection, 5, 1).unwrap(),
            [vec![p(0, 2), p(2, 0), p(1, 3), p(3, 1)]]
        );
        assert_eq!(rounds(Pattern::Pairs, 4, 0), Err(PatternError::NoneAtATime));
    }
}
