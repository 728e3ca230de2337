//! The kernel log since boot (`/dev/kmsg`, or a recorded tree's `dev/kmsg`), and the RDMA-related
//! errors, warnings and link-downs in it.
use serde::Serialize;

use super::read::{ReadError, Root};

/// One message: its level (0 emerg ... 7 debug), seconds since boot, text.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub level: u8,
    pub time_s: f64,
    pub text: String,
}

/// A message worth quoting: how often it came, first and last time.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Quoted {
    pub level: u8,
    pub text: String,
    pub count: u64,
    pub first_s: f64,
    pub last_s: f64,
    /// A link-down message of a RoCE netdev (any level), not an RDMA error or warning.
    pub link_down: bool,
}

/// The most distinct messages quoted.
pub const MAX_QUOTED: usize = 40;

/// Reads the log: the running system's `/dev/kmsg` (one record per read, non-blocking), or a recorded
/// tree's `dev/kmsg` file (its records one a line; `dmesg -r` lines, `<4>[  4.99] text`, are read too).
pub fn read(root: &Root) -> Result<Vec<Line>, ReadError> {
    let text = if root.live {
        super::calls::kmsg()?
    } else {
        root.table("dev/kmsg")?
    };
    Ok(text.lines().filter_map(parse).collect())
}

/// A kmsg record (`6,339,5140900,-;text`; continuation lines start with a space and are skipped) or a
/// `dmesg -r` line.
pub fn parse(line: &str) -> Option<Line> {
    if line.starts_with(' ') {
        return None;
    }
    if let Some(rest) = line.strip_prefix('<') {
        let (pri, rest) = rest.split_once('>')?;
        let (ts, text) = rest.strip_prefix('[')?.split_once(']')?;
        return Some(Line {
            level: (pri.parse::<u32>().ok()? & 7) as u8,
            time_s: ts.trim().parse().ok()?,
            text: text.trim().to_string(),
        });
    }
    let (head, text) = line.split_once(';')?;
    let mut f = head.split(',');
    let pri: u32 = f.next()?.parse().ok()?;
    let _seq = f.next()?;
    let usec: u64 = f.next()?.parse().ok()?;
    Some(Line {
        level: (pri & 7) as u8,
        time_s: usec as f64 / 1e6,
        text: text.to_string(),
    })
}

/// Words that make a message RDMA's: the drivers, the core, GIDs.
const RDMA_WORDS: [&str; 16] = [
    "rxe",
    "rdma",
    "infiniband",
    "ib_core",
    "ib_uverbs",
    "ib_cm",
    "roce",
    "gid",
    "mlx5",
    "mlx4",
    "bnxt_re",
    "irdma",
    "siw",
    "hns_roce",
    "qedr",
    "efa",
];

/// A word of the message starts with one of [`RDMA_WORDS`] (`rdma_rxe:`, `mlx5_core`, `rxe0`, `GID`; not
/// `default`, which holds `efa`).
fn is_rdma(text: &str) -> bool {
    let t = text.to_ascii_lowercase();
    t.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .any(|word| RDMA_WORDS.iter().any(|w| word.starts_with(w)))
}

/// A link-down message naming one of `netdevs` ("eth0: Link is Down", "mlx5_core ...: Link down").
fn is_link_down(text: &str, netdevs: &[String]) -> bool {
    let t = text.to_ascii_lowercase();
    let down =
        t.contains("link is down") || t.contains("link down") || t.contains("nic link is down");
    down && netdevs.iter().any(|n| names(&t, &n.to_ascii_lowercase()))
}

/// `word` appears in `t` as a whole name (not `eth0` inside `veth0`).
fn names(t: &str, word: &str) -> bool {
    t.match_indices(word).any(|(i, _)| {
        let before = t[..i].chars().next_back();
        let after = t[i + word.len()..].chars().next();
        let part = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '.');
        !part(before) && !part(after)
    })
}

/// The RDMA errors and warnings (level 4 or more urgent) and the link-downs of `netdevs`, identical texts
/// merged, in the order they first came; at most [`MAX_QUOTED`].
pub fn quoted(lines: &[Line], netdevs: &[String]) -> Vec<Quoted> {
    let mut out: Vec<Quoted> = Vec::new();
    for l in lines {
        let link_down = is_link_down(&l.text, netdevs);
        let rdma_trouble = l.level <= 4 && is_rdma(&l.text);
        if !(link_down || rdma_trouble) {
            continue;
        }
        if let Some(q) = out.iter_mut().find(|q| q.text == l.text) {
            q.count += 1;
            q.last_s = l.time_s;
            q.level = q.level.min(l.level);
        } else if out.len() < MAX_QUOTED {
            out.push(Quoted {
                level: l.level,
                text: l.text.clone(),
                count: 1,
                first_s: l.time_s,
                last_s: l.time_s,
                link_down,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_parse() {
        assert_eq!(
            parse("4,512,2876818,-;eth0 speed is unknown, defaulting to 1000"),
            Some(Line {
                level: 4,
                time_s: 2.876818,
                text: "eth0 speed is unknown, defaulting to 1000".into()
            })
        );
        assert_eq!(
            parse("<3>[    5.294892] infiniband rxe0: bad thing").map(|l| (l.level, l.time_s)),
            Some((3, 5.294892))
        );
        assert_eq!(parse(" SUBSYSTEM=net"), None);
        assert_eq!(parse("garbage"), None);
        assert_eq!(parse("x,1,2;text"), None);
        assert_eq!(parse("<a>[1.0] t"), None);
    }

    #[test]
    fn rdma_errors_and_link_downs_are_quoted_once_each() {
        let l = |level, t: f64, text: &str| Line {
            level,
            time_s: t,
            text: text.into(),
        };
        let lines = [
            l(6, 1.0, "infiniband rxe0: set active"),
            l(3, 2.0, "rdma_rxe: qp#17 moved to error state"),
            l(3, 3.0, "rdma_rxe: qp#17 moved to error state"),
            l(6, 4.0, "virtio_net virtio0 eth0: Link is Down"),
            l(6, 5.0, "veth0: Link is Down"),
            l(4, 6.0, "usb 1-1: device descriptor read error"),
            l(4, 7.0, "eth0 speed is unknown, defaulting to 1000"),
        ];
        let q = quoted(&lines, &["eth0".to_string()]);
        assert_eq!(q.len(), 2, "{q:?}");
        assert_eq!((q[0].count, q[0].first_s, q[0].last_s), (2, 2.0, 3.0));
        assert!(!q[0].link_down);
        assert!(q[1].link_down && q[1].text.contains("eth0"));
    }
}
