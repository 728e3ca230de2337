//! What the hosts believed: the QP addresses perftest (`ib_write_bw` and the rest) and the
//! `ibv_*_pingpong` examples print once they have exchanged them out of band, read from their output.
//!
//! perftest, one pair of lines per QP (`--qp N` prints N `local address` lines, then N `remote address`
//! lines), the GID in decimal bytes on the next line:
//!
//! ```text
//!  local address: LID 0000 QPN 0x0011 PSN 0xdd1250 RKey 0x000243 VAddr 0x0056065cea7000
//!  GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:00:00:01
//!  remote address: LID 0000 QPN 0x0011 PSN 0x3adf1a RKey 0x000261 VAddr 0x0055b50d3bf000
//!  GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:00:00:02
//! ```
//!
//! and its path MTU as ` Mtu             : 1024[B]`. ibv_rc_pingpong (and uc, ud, srq, xsrq), one line each,
//! the GID as an IPv6 address (`::` when it has none):
//!
//! ```text
//!   local address:  LID 0x0000, QPN 0x000011, PSN 0x2b7c8d, GID ::ffff:10.0.0.1
//!   remote address: LID 0x0000, QPN 0x000012, PSN 0x6f0fbb, GID ::ffff:10.0.0.2
//! ```
//!
//! In both, the PSN a side prints as its own is the first PSN it sends with (the peer's expected PSN).
use std::io::Read;
use std::path::Path;

use parsers::frame::Addr;

/// One side's address as a tool printed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QpAddress {
    pub lid: u16,
    pub qpn: u32,
    /// The PSN this side sends from.
    pub psn: u32,
    /// The GID as an IP address (IPv4-mapped GIDs as IPv4); `None` when zero or not printed.
    pub gid: Option<Addr>,
}

/// A QP's local address and its peer's, as one host printed them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exchange {
    pub local: QpAddress,
    pub remote: QpAddress,
    /// The path MTU the tool printed (perftest's `Mtu` line).
    pub mtu: Option<u32>,
}

/// The most of one tool's output `--expect` reads: perftest's largest run (`--qp` 65,536, about 400 bytes of
/// output a QP) prints less than half of it.
pub const MAX_LOG: u64 = 64 << 20;

/// The bytes of the saved file `path`, at most `limit`: a regular file only (a device such as /dev/zero has
/// no end, a FIFO may block), refused when larger than `limit`; never more than `limit` + 1 bytes read, even
/// from a file that grows while it is read. The error is one line, without the path (the caller says what
/// the file is for).
pub fn read_regular(path: &Path, limit: u64) -> Result<Vec<u8>, ReadFailure> {
    let meta = std::fs::metadata(path).map_err(ReadFailure::Io)?;
    if !meta.is_file() {
        return Err(ReadFailure::NotRegular(kind_of(&meta)));
    }
    if meta.len() > limit {
        return Err(ReadFailure::TooLarge(meta.len(), limit));
    }
    let mut buf = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(limit + 1).read_to_end(&mut buf))
        .map_err(ReadFailure::Io)?;
    if buf.len() as u64 > limit {
        return Err(ReadFailure::TooLarge(buf.len() as u64, limit));
    }
    Ok(buf)
}

/// Why [`read_regular`] gave nothing.
#[derive(Debug)]
pub enum ReadFailure {
    Io(std::io::Error),
    /// What it is instead: `a directory`, `a character device`, ...
    NotRegular(&'static str),
    /// Its size (or what was read of it), and the bound.
    TooLarge(u64, u64),
}

impl std::fmt::Display for ReadFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadFailure::Io(e) => write!(f, "{e}"),
            ReadFailure::NotRegular(what) => write!(f, "{what}, not a regular file"),
            ReadFailure::TooLarge(n, limit) => {
                write!(
                    f,
                    "{n} bytes, more than the {} MiB read at most",
                    limit >> 20
                )
            }
        }
    }
}

fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    if meta.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let t = meta.file_type();
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    "not a file"
}

/// Exchanges kept from one output at most: perftest's `--qp` goes to a few thousand; memory stays bounded
/// whatever the output holds.
pub const EXCHANGES_KEPT: usize = 65_536;

/// Reads a tool's output line by line: the addresses it printed, paired in order (the n-th local address with
/// the n-th remote one).
#[derive(Debug, Default)]
pub struct Reader {
    local: Vec<QpAddress>,
    remote: Vec<QpAddress>,
    mtu: Option<u32>,
    /// The address line before, whose GID line may follow (perftest): local or remote.
    gid_for: Option<bool>,
}

impl Reader {
    /// One line of the output (without its newline).
    pub fn line(&mut self, line: &str) {
        let t = line.trim();
        let gid_for = self.gid_for.take();
        if let Some(rest) = t.strip_prefix("local address:") {
            self.address(rest, true);
        } else if let Some(rest) = t.strip_prefix("remote address:") {
            self.address(rest, false);
        } else if let (Some(local), Some(rest)) = (gid_for, t.strip_prefix("GID:")) {
            let list = if local {
                &mut self.local
            } else {
                &mut self.remote
            };
            if let Some(a) = list.last_mut() {
                a.gid = decimal_gid(rest.trim());
            }
        } else if let Some(rest) = t.strip_prefix("Mtu") {
            self.mtu = rest
                .trim_start()
                .strip_prefix(':')
                .and_then(|v| v.trim().trim_end_matches("[B]").parse().ok())
                .or(self.mtu);
        }
    }

    fn address(&mut self, rest: &str, local: bool) {
        let Some(a) = address(rest) else { return };
        let list = if local {
            &mut self.local
        } else {
            &mut self.remote
        };
        if list.len() < EXCHANGES_KEPT {
            list.push(a);
            self.gid_for = Some(local);
        }
    }

    /// The exchanges read: as many as there are both a local and a remote address.
    pub fn exchanges(&self) -> Vec<Exchange> {
        self.local
            .iter()
            .zip(&self.remote)
            .map(|(&local, &remote)| Exchange {
                local,
                remote,
                mtu: self.mtu,
            })
            .collect()
    }
}

/// The exchanges of a whole output.
pub fn exchanges(text: &str) -> Vec<Exchange> {
    let mut r = Reader::default();
    text.lines().for_each(|l| r.line(l));
    r.exchanges()
}

/// `LID 0000 QPN 0x0011 PSN 0xdd1250 ...` (perftest) or `LID 0x0000, QPN 0x000011, PSN 0x2b7c8d, GID ...`
/// (pingpong).
fn address(rest: &str) -> Option<QpAddress> {
    let mut words = rest.split([' ', ',']).filter(|w| !w.is_empty());
    let (mut lid, mut qpn, mut psn, mut gid) = (None, None, None, None);
    while let Some(key) = words.next() {
        let value = words.next();
        match key {
            "LID" => lid = value.and_then(hex).and_then(|v| u16::try_from(v).ok()),
            "QPN" => qpn = value.and_then(hex).filter(|v| *v < 1 << 24),
            "PSN" => psn = value.and_then(hex).filter(|v| *v < 1 << 24),
            "GID" => gid = value.and_then(|v| v.parse::<std::net::Ipv6Addr>().ok()),
            _ => {}
        }
    }
    Some(QpAddress {
        lid: lid?,
        qpn: qpn?,
        psn: psn?,
        gid: gid.and_then(|g| gid_addr(g.octets())),
    })
}

/// Hexadecimal with or without `0x` (C's `%#x` prints 0 without it).
fn hex(s: &str) -> Option<u32> {
    let digits = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    u32::from_str_radix(digits, 16).ok()
}

/// perftest's `00:00:...:255:255:10:00:00:01`: 16 decimal bytes.
fn decimal_gid(s: &str) -> Option<Addr> {
    let mut gid = [0u8; 16];
    let mut parts = s.split(':');
    for b in &mut gid {
        *b = parts.next()?.parse().ok()?;
    }
    if parts.next().is_some() {
        return None;
    }
    gid_addr(gid)
}

/// A RoCEv2 GID is the interface's IP address: IPv4-mapped for IPv4. Zero is no GID.
fn gid_addr(gid: [u8; 16]) -> Option<Addr> {
    match gid {
        [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, a, b, c, d] => Some(Addr::V4([a, b, c, d])),
        g if g == [0; 16] => None,
        g => Some(Addr::V6(g)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// testdata/lab/write.log, the client's (rxe0, 10.0.0.1) part of ib_write_bw's output.
    const PERFTEST: &str = " Mtu             : 1024[B]
 Link type       : Ethernet
 GID index       : 1
---------------------------------------------------------------------------------------
 local address: LID 0000 QPN 0x0011 PSN 0xdd1250 RKey 0x000243 VAddr 0x0056065cea7000
 GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:00:00:01
 remote address: LID 0000 QPN 0x0011 PSN 0x3adf1a RKey 0x000261 VAddr 0x0055b50d3bf000
 GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:00:00:02
---------------------------------------------------------------------------------------
";

    #[test]
    fn perftest_addresses() {
        let x = exchanges(PERFTEST);
        assert_eq!(
            x,
            vec![Exchange {
                local: QpAddress {
                    lid: 0,
                    qpn: 0x11,
                    psn: 0xdd1250,
                    gid: Some(Addr::V4([10, 0, 0, 1])),
                },
                remote: QpAddress {
                    lid: 0,
                    qpn: 0x11,
                    psn: 0x3adf1a,
                    gid: Some(Addr::V4([10, 0, 0, 2])),
                },
                mtu: Some(1024),
            }]
        );
    }

    #[test]
    fn pingpong_addresses() {
        let out = "  local address:  LID 0x0000, QPN 0x000011, PSN 0x2b7c8d, GID ::ffff:10.0.0.1\n  \
                   remote address: LID 0x0001, QPN 0x000012, PSN 0x6f0fbb, GID fe80::1\n";
        let x = exchanges(out);
        assert_eq!(x.len(), 1);
        assert_eq!(
            (x[0].local.qpn, x[0].local.psn, x[0].local.gid),
            (0x11, 0x2b7c8d, Some(Addr::V4([10, 0, 0, 1])))
        );
        let mut fe80 = [0u8; 16];
        fe80[0] = 0xfe;
        fe80[1] = 0x80;
        fe80[15] = 1;
        assert_eq!(
            (x[0].remote.lid, x[0].remote.qpn, x[0].remote.gid),
            (1, 0x12, Some(Addr::V6(fe80)))
        );
        assert_eq!(x[0].mtu, None);
        // No GID (an InfiniBand port): `::`.
        let ib = "  local address:  LID 0x0003, QPN 0x000011, PSN 0x000001, GID ::\n  \
                  remote address: LID 0x0004, QPN 0x000012, PSN 0x000002, GID ::\n";
        assert_eq!(exchanges(ib)[0].local.gid, None);
    }

    #[test]
    fn several_qps_pair_in_order() {
        let out = " local address: LID 0000 QPN 0x0011 PSN 0x000001\n local address: LID 0000 QPN 0x0012 PSN \
                   0x000002\n remote address: LID 0000 QPN 0x0021 PSN 0x000003\n remote address: LID 0000 QPN \
                   0x0022 PSN 0x000004\n";
        let x = exchanges(out);
        let pairs: Vec<(u32, u32)> = x.iter().map(|e| (e.local.qpn, e.remote.qpn)).collect();
        assert_eq!(pairs, vec![(0x11, 0x21), (0x12, 0x22)]);
        assert!(x.iter().all(|e| e.local.gid.is_none()));
    }

    #[test]
    fn damaged_lines_are_skipped() {
        for bad in [
            " local address: LID 0000 QPN 0x1000000 PSN 0x000001",
            " local address: LID 0000 QPN zz PSN 0x000001",
            " local address: LID 0000 QPN",
            " local address:",
            " local address: LID 10000000 QPN 0x11 PSN 0x1",
        ] {
            let out = format!("{bad}\n remote address: LID 0000 QPN 0x0012 PSN 0x000002\n");
            assert!(exchanges(&out).is_empty(), "{bad}");
        }
        // A GID line that is not 16 decimal bytes leaves the GID out.
        let out = " local address: LID 0000 QPN 0x0011 PSN 0x000001\n GID: 1:2:3\n remote address: LID 0000 QPN \
                   0x0012 PSN 0x000002\n GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:00:00:300\n";
        let x = exchanges(out);
        assert_eq!((x[0].local.gid, x[0].remote.gid), (None, None));
    }
}
