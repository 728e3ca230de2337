//! Where the failing pairs point: each pair's path as components (hosts, NICs, host-ToR links, ToRs, the
//! spine layer, or the components a topology file lists for it), and the smallest set of components that
//! explains every failing pair. A component is a clean suspect when every pair through it failed; equivalent
//! suspects (the same failing pairs, none passing: a host, its NIC and its link when only its pairs fail) are
//! one suspect. The set is chosen greedily (the suspect that explains most of what is left first: set cover
//! is NP-hard, greedy is within ln(n) of the smallest); failing pairs no clean suspect explains (a spine that
//! drops some of the ECMP paths through it) get the partial suspect whose pairs fail most often. A host's link
//! is also each of its two directions (`link a->tor1`, `link tor1->a`), suspected only when clean: a link that
//! fails one way only (the receiver's link of an incast, a port congested toward its host).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::Host;
use super::plan::Pair;

/// `--topology FILE` (JSON): each host's NIC and ToR, the spines above the ToRs, and paths given by hand.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Topology {
    #[serde(default)]
    pub hosts: BTreeMap<String, Place>,
    /// Every ToR connects to every spine: a pair across two ToRs crosses one of them (which one, ECMP
    /// decides), written as the one component `spines`.
    #[serde(default)]
    pub spines: Vec<String>,
    /// Components of a pair's path between its two hosts' NICs, in place of the ToRs and spines.
    #[serde(default)]
    pub paths: Vec<PathVia>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Place {
    pub nic: Option<String>,
    pub tor: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathVia {
    pub src: String,
    pub dst: String,
    pub via: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum TopologyError {
    #[error("topology file: {0}")]
    Json(#[from] serde_json::Error),
    #[error("topology file: host '{0}' is not in the hosts file")]
    UnknownHost(String),
}

impl Topology {
    pub fn parse(text: &str, hosts: &[Host]) -> Result<Topology, TopologyError> {
        let t: Topology = serde_json::from_str(text)?;
        let known = |n: &String| hosts.iter().any(|h| &h.name == n);
        let named = t
            .hosts
            .keys()
            .chain(t.paths.iter().flat_map(|p| [&p.src, &p.dst]));
        if let Some(n) = named.into_iter().find(|n| !known(n)) {
            return Err(TopologyError::UnknownHost(n.clone()));
        }
        Ok(t)
    }

    /// The components of `pair`'s path, from the requester's host to the responder's.
    pub fn path(&self, hosts: &[Host], pair: Pair) -> Vec<String> {
        let (s, d) = (&hosts[pair.src].name, &hosts[pair.dst].name);
        let place = |h: &String| self.hosts.get(h).cloned().unwrap_or_default();
        let (ps, pd) = (place(s), place(d));
        let mut out = vec![format!("host {s}")];
        out.extend(ps.nic.iter().map(|n| format!("nic {s}/{n}")));
        if let Some(p) = self.paths.iter().find(|p| &p.src == s && &p.dst == d) {
            out.extend(p.via.iter().cloned());
        } else {
            out.extend(ps.tor.iter().map(|t| format!("link {s}-{t}")));
            out.extend(ps.tor.iter().map(|t| format!("link {s}->{t}")));
            out.extend(ps.tor.iter().map(|t| format!("tor {t}")));
            if ps.tor != pd.tor {
                if !self.spines.is_empty() && ps.tor.is_some() && pd.tor.is_some() {
                    out.push(format!("spines {}", self.spines.join(",")));
                }
                out.extend(pd.tor.iter().map(|t| format!("tor {t}")));
            }
            out.extend(pd.tor.iter().map(|t| format!("link {t}->{d}")));
            out.extend(pd.tor.iter().map(|t| format!("link {d}-{t}")));
        }
        out.extend(pd.nic.iter().map(|n| format!("nic {d}/{n}")));
        out.push(format!("host {d}"));
        out
    }
}

/// A set of equivalent components and the pairs that implicate them (failed through them) and clear them
/// (passed through them).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Suspect {
    pub components: Vec<String>,
    pub implicated: Vec<Pair>,
    pub cleared: Vec<Pair>,
    /// Some pairs through it passed: it explains the failures only if it fails some of the time.
    pub partial: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Located {
    pub suspects: Vec<Suspect>,
    /// How many pairs failed.
    pub failing: usize,
}

/// The suspects for `results` (each pair and whether it passed).
pub fn locate(hosts: &[Host], topology: &Topology, results: &[(Pair, bool)]) -> Located {
    // component -> (failing pairs, passing pairs)
    let mut through: BTreeMap<String, (BTreeSet<Pair>, BTreeSet<Pair>)> = BTreeMap::new();
    let mut failing = BTreeSet::new();
    for &(pair, pass) in results {
        for c in topology.path(hosts, pair) {
            let e = through.entry(c).or_default();
            if pass {
                e.1.insert(pair)
            } else {
                e.0.insert(pair)
            };
        }
        if !pass {
            failing.insert(pair);
        }
    }
    // equivalent components: the same failing and passing pairs, in the order they were first met; one
    // direction of a link only when every pair through it failed (as a partial suspect it would only stand
    // for its link's pairs more thinly)
    let mut groups: Vec<(Vec<String>, BTreeSet<Pair>, BTreeSet<Pair>)> = Vec::new();
    let one_way = |c: &str, good: &BTreeSet<Pair>| c.contains("->") && !good.is_empty();
    for (c, (bad, good)) in through
        .into_iter()
        .filter(|(c, (bad, good))| !bad.is_empty() && !one_way(c, good))
    {
        match groups.iter_mut().find(|g| g.1 == bad && g.2 == good) {
            Some(g) => g.0.push(c),
            None => groups.push((vec![c], bad, good)),
        }
    }
    let mut left = failing.clone();
    let mut suspects = Vec::new();
    while !left.is_empty() {
        // clean suspects first, by how much of what is left they explain; then the partial ones, by the share
        // of their pairs that fail
        let best = groups
            .iter()
            .enumerate()
            .map(|(i, g)| {
                let explains = g.1.intersection(&left).count();
                let clean = g.2.is_empty();
                let share = g.1.len() as f64 / (g.1.len() + g.2.len()) as f64;
                (i, explains, clean, share)
            })
            .filter(|&(_, explains, _, _)| explains > 0)
            .max_by(|a, b| {
                (a.2, if a.2 { 0.0 } else { a.3 }, a.1)
                    .partial_cmp(&(b.2, if b.2 { 0.0 } else { b.3 }, b.1))
                    .unwrap_or(std::cmp::Ordering::Equal)
                    .then(b.0.cmp(&a.0))
            });
        let Some((i, _, clean, _)) = best else { break };
        let (components, bad, good) = groups.swap_remove(i);
        left.retain(|p| !bad.contains(p));
        suspects.push(Suspect {
            components,
            implicated: bad.into_iter().collect(),
            cleared: good.into_iter().collect(),
            partial: !clean,
        });
    }
    Located {
        suspects,
        failing: failing.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(n: usize) -> Vec<Host> {
        (0..n)
            .map(|i| Host {
                name: ((b'a' + i as u8) as char).to_string(),
                address: format!("10.0.0.{}", i + 1),
                port: 1,
            })
            .collect()
    }

    /// Every ordered pair of `n` hosts, failing where `bad` says.
    fn mesh(n: usize, bad: impl Fn(usize, usize) -> bool) -> Vec<(Pair, bool)> {
        (0..n)
            .flat_map(|s| (0..n).filter(move |&d| d != s).map(move |d| (s, d)))
            .map(|(src, dst)| (Pair { src, dst }, !bad(src, dst)))
            .collect()
    }

    /// Two racks: a, b on tor1, c, d on tor2, two spines.
    fn racks() -> Topology {
        Topology::parse(
            r#"{"hosts": {"a": {"nic": "mlx5_0", "tor": "tor1"}, "b": {"tor": "tor1"},
                          "c": {"nic": "mlx5_0", "tor": "tor2"}, "d": {"tor": "tor2"}},
                "spines": ["s1", "s2"]}"#,
            &hosts(4),
        )
        .unwrap()
    }

    #[test]
    fn paths_from_the_topology() {
        let t = racks();
        let h = hosts(4);
        assert_eq!(
            t.path(&h, Pair { src: 0, dst: 2 }),
            [
                "host a",
                "nic a/mlx5_0",
                "link a-tor1",
                "link a->tor1",
                "tor tor1",
                "spines s1,s2",
                "tor tor2",
                "link tor2->c",
                "link c-tor2",
                "nic c/mlx5_0",
                "host c"
            ]
        );
        assert_eq!(
            t.path(&h, Pair { src: 1, dst: 0 }),
            [
                "host b",
                "link b-tor1",
                "link b->tor1",
                "tor tor1",
                "link tor1->a",
                "link a-tor1",
                "nic a/mlx5_0",
                "host a"
            ]
        );
        let bad = Topology::parse(r#"{"hosts": {"z": {}}}"#, &h).unwrap_err();
        assert_eq!(
            bad.to_string(),
            "topology file: host 'z' is not in the hosts file"
        );
        assert!(Topology::parse(r#"{"hostz": {}}"#, &h).is_err());
    }

    /// Without a topology: the host that fails with everyone, alone (its peers pass with the others).
    #[test]
    fn the_host_that_fails_with_everyone() {
        let l = locate(
            &hosts(4),
            &Topology::default(),
            &mesh(4, |s, d| s == 2 || d == 2),
        );
        assert_eq!(l.failing, 6);
        assert_eq!(l.suspects.len(), 1);
        assert_eq!(l.suspects[0].components, ["host c"]);
        assert_eq!(l.suspects[0].implicated.len(), 6);
        assert!(!l.suspects[0].partial);
    }

    /// c's NIC bad: its host, NIC and link are one suspect (nothing tells them apart), tor2 is cleared by d's
    /// pairs.
    #[test]
    fn a_nic_its_host_and_its_link_are_one_suspect() {
        let l = locate(&hosts(4), &racks(), &mesh(4, |s, d| s == 2 || d == 2));
        assert_eq!(l.suspects.len(), 1);
        assert_eq!(
            l.suspects[0].components,
            ["host c", "link c-tor2", "nic c/mlx5_0"]
        );
    }

    /// tor2 bad: every pair through it fails, a-b passes; tor2 explains all ten, before c and d.
    #[test]
    fn a_switch_explains_more_than_its_hosts() {
        let under = |h: usize| h >= 2;
        let l = locate(&hosts(4), &racks(), &mesh(4, |s, d| under(s) || under(d)));
        assert_eq!(l.failing, 10);
        assert_eq!(l.suspects.len(), 1);
        assert_eq!(l.suspects[0].components, ["tor tor2"]);
    }

    /// One spine of two drops: some cross-rack pairs fail, others pass through the other spine. No clean
    /// suspect: the spine layer, partial, with the pairs that clear it.
    #[test]
    fn a_spine_that_drops_some_paths() {
        let l = locate(
            &hosts(4),
            &racks(),
            &mesh(4, |s, d| (s, d) == (0, 2) || (s, d) == (3, 1)),
        );
        assert_eq!(l.suspects.len(), 1, "{l:#?}");
        let s = &l.suspects[0];
        assert_eq!(s.components, ["spines s1,s2"]);
        assert!(s.partial);
        assert_eq!(
            s.implicated,
            [Pair { src: 0, dst: 2 }, Pair { src: 3, dst: 1 }]
        );
        assert_eq!(s.cleared.len(), 6);
    }

    /// c's link congested toward c only (an incast's receiver): the pairs into c fail, c's own pass. c's host,
    /// NIC and link are cleared by c's sends; the direction tor2->c is the one clean suspect.
    #[test]
    fn a_link_that_fails_one_way() {
        let l = locate(&hosts(4), &racks(), &mesh(4, |_, d| d == 2));
        assert_eq!(l.failing, 3);
        assert_eq!(l.suspects.len(), 1, "{l:#?}");
        assert_eq!(l.suspects[0].components, ["link tor2->c"]);
        assert!(!l.suspects[0].partial);
    }

    /// Two bad hosts: two suspects; a pass everywhere: none.
    #[test]
    fn two_faults_and_none() {
        let l = locate(
            &hosts(5),
            &Topology::default(),
            &mesh(5, |s, d| [s, d].contains(&1) || [s, d].contains(&4)),
        );
        let names: Vec<&Vec<String>> = l.suspects.iter().map(|s| &s.components).collect();
        assert_eq!(
            names,
            [&vec!["host b".to_string()], &vec!["host e".to_string()]]
        );
        assert_eq!(
            locate(&hosts(3), &Topology::default(), &mesh(3, |_, _| false)),
            Located::default()
        );
    }
}
