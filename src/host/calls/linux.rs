//! The Linux system calls: SIOCETHTOOL (statistics), rtnetlink (addresses, DCB), `/dev/kmsg`. Every
//! length the kernel returns is bounded before it sizes a buffer; every message is parsed with bounds
//! checks (`attrs`).
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;

use super::super::congestion::{Pfc, priorities};
use super::super::read::{MAX_TABLE, ReadError};

/// More statistics than this from one driver is not believed (mlx5 has about 1,500 with every queue).
const MAX_STATS: u32 = 1 << 16;
const ETH_GSTRING_LEN: usize = 32;

fn socket(domain: i32, kind: i32, protocol: i32) -> io::Result<OwnedFd> {
    // SAFETY: socket(2) with constant arguments; the descriptor is owned from here on.
    let fd = unsafe { libc::socket(domain, kind | libc::SOCK_CLOEXEC, protocol) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    data: *mut libc::c_void,
    _pad: [u8; 16],
}

/// One SIOCETHTOOL request on `name` with `buf` as its data (the command in its first word).
fn ethtool(fd: &OwnedFd, name: &str, buf: *mut libc::c_void) -> io::Result<()> {
    let mut req = IfReq {
        name: [0; libc::IFNAMSIZ],
        data: buf,
        _pad: [0; 16],
    };
    let b = name.as_bytes();
    if b.len() >= libc::IFNAMSIZ || b.contains(&0) {
        return Err(io::Error::from_raw_os_error(libc::ENODEV));
    }
    req.name[..b.len()].copy_from_slice(b);
    // SAFETY: req lives across the call and points at a buffer sized for the command in it.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), libc::SIOCETHTOOL, &mut req) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `ethtool -S`: the names (ETHTOOL_GSTRINGS) and values (ETHTOOL_GSTATS) of the statistics set.
pub fn ethtool_stats(name: &str) -> io::Result<BTreeMap<String, u64>> {
    const GSSET_INFO: u32 = 0x37;
    const GSTRINGS: u32 = 0x1b;
    const GSTATS: u32 = 0x1d;
    const SS_STATS: u32 = 1;
    let fd = socket(libc::AF_INET, libc::SOCK_DGRAM, 0)?;
    // ethtool_sset_info: cmd, reserved, sset_mask (u64), data[1] (u32)
    let mut info = [0u64; 3];
    info[0] = u64::from(GSSET_INFO);
    info[1] = 1 << SS_STATS;
    ethtool(&fd, name, info.as_mut_ptr().cast())?;
    let n = if info[1] & (1 << SS_STATS) != 0 {
        info[2] as u32
    } else {
        0
    };
    if n == 0 || n > MAX_STATS {
        return Ok(BTreeMap::new());
    }
    let len = n as usize * ETH_GSTRING_LEN;
    // ethtool_gstrings: cmd, string_set, len, then the names (32 bytes each)
    let mut strings = vec![0u32; 3 + len / 4];
    strings[0] = GSTRINGS;
    strings[1] = SS_STATS;
    strings[2] = n;
    ethtool(&fd, name, strings.as_mut_ptr().cast())?;
    // ethtool_stats: cmd, n_stats, then the values
    let mut stats = vec![0u64; 1 + n as usize];
    stats[0] = u64::from(GSTATS) | (u64::from(n) << 32);
    ethtool(&fd, name, stats.as_mut_ptr().cast())?;
    let got = ((stats[0] >> 32) as u32).min(n) as usize;
    let bytes: Vec<u8> = strings[3..].iter().flat_map(|w| w.to_ne_bytes()).collect();
    Ok(bytes
        .chunks(ETH_GSTRING_LEN)
        .zip(stats[1..].iter())
        .take(got)
        .map(|(s, v)| {
            let end = s.iter().position(|&c| c == 0).unwrap_or(s.len());
            (String::from_utf8_lossy(&s[..end]).into_owned(), *v)
        })
        .collect())
}

const NLMSG_HDR: usize = 16;
const NLMSG_DONE: u16 = 3;
const NLMSG_ERROR: u16 = 2;

fn align4(n: usize) -> usize {
    (n + 3) & !3
}

/// Sends one rtnetlink request and reads the answers (a dump: until NLMSG_DONE), each message's type and
/// payload; an NLMSG_ERROR with a code is the error.
fn rtnetlink(kind: u16, flags: u16, body: &[u8]) -> io::Result<Vec<(u16, Vec<u8>)>> {
    let fd = socket(libc::AF_NETLINK, libc::SOCK_RAW, libc::NETLINK_ROUTE)?;
    send(&fd, kind, flags, body)?;
    let mut out = Vec::new();
    let mut file = File::from(fd);
    let mut buf = vec![0u8; 1 << 16];
    let mut total = 0usize;
    loop {
        let n = file.read(&mut buf)?;
        total += n;
        if n == 0 || total > MAX_TABLE as usize {
            return Ok(out);
        }
        let data = &buf[..n];
        let mut at = 0;
        while let Some(h) = data.get(at..at + NLMSG_HDR) {
            let mlen = u32::from_ne_bytes([h[0], h[1], h[2], h[3]]) as usize;
            let mtype = u16::from_ne_bytes([h[4], h[5]]);
            let Some(payload) = data
                .get(at + NLMSG_HDR..at + mlen)
                .filter(|_| mlen >= NLMSG_HDR)
            else {
                return Ok(out);
            };
            match mtype {
                NLMSG_DONE => return Ok(out),
                NLMSG_ERROR => {
                    let code = payload
                        .get(..4)
                        .map_or(0, |c| i32::from_ne_bytes([c[0], c[1], c[2], c[3]]));
                    return if code != 0 {
                        Err(io::Error::from_raw_os_error(-code))
                    } else {
                        Ok(out)
                    };
                }
                t => out.push((t, payload.to_vec())),
            }
            if flags & libc::NLM_F_DUMP as u16 == 0 {
                return Ok(out);
            }
            at += align4(mlen);
        }
    }
}

/// The request: a netlink header (`kind`, `flags` and NLM_F_REQUEST, sequence 1), then `body`, to the kernel.
fn send(fd: &OwnedFd, kind: u16, flags: u16, body: &[u8]) -> io::Result<()> {
    let len = NLMSG_HDR + body.len();
    let mut msg = Vec::with_capacity(len);
    msg.extend_from_slice(&(len as u32).to_ne_bytes());
    msg.extend_from_slice(&kind.to_ne_bytes());
    msg.extend_from_slice(&(flags | libc::NLM_F_REQUEST as u16).to_ne_bytes());
    msg.extend_from_slice(&1u32.to_ne_bytes());
    msg.extend_from_slice(&0u32.to_ne_bytes());
    msg.extend_from_slice(body);
    // SAFETY: msg is a valid buffer of msg.len() bytes; the kernel is the destination (a zeroed address).
    let sent = unsafe {
        let mut to: libc::sockaddr_nl = std::mem::zeroed();
        to.nl_family = libc::AF_NETLINK as u16;
        libc::sendto(
            fd.as_raw_fd(),
            msg.as_ptr().cast(),
            msg.len(),
            0,
            (&to as *const libc::sockaddr_nl).cast(),
            std::mem::size_of::<libc::sockaddr_nl>() as u32,
        )
    };
    if sent < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The (type, value) attributes of a netlink payload from `from` on.
fn attrs(payload: &[u8], from: usize) -> Vec<(u16, &[u8])> {
    let mut out = Vec::new();
    let mut at = from;
    while let Some(h) = payload.get(at..at + 4) {
        let len = u16::from_ne_bytes([h[0], h[1]]) as usize;
        let kind = u16::from_ne_bytes([h[2], h[3]]) & 0x3fff;
        let Some(v) = payload.get(at + 4..at + len).filter(|_| len >= 4) else {
            break;
        };
        out.push((kind, v));
        at += align4(len);
    }
    out
}

/// RTM_GETADDR: the addresses of interface `ifindex`, `A/prefix`.
pub fn addresses(ifindex: u32) -> io::Result<Vec<String>> {
    const RTM_NEWADDR: u16 = 20;
    const RTM_GETADDR: u16 = 22;
    const IFA_ADDRESS: u16 = 1;
    const IFA_LOCAL: u16 = 2;
    let body = [0u8; 8]; // ifaddrmsg, family AF_UNSPEC: every family
    let msgs = rtnetlink(RTM_GETADDR, libc::NLM_F_DUMP as u16, &body)?;
    let mut out = Vec::new();
    for (_, p) in msgs.iter().filter(|(t, _)| *t == RTM_NEWADDR) {
        let Some(h) = p.get(..8) else { continue };
        if u32::from_ne_bytes([h[4], h[5], h[6], h[7]]) != ifindex {
            continue;
        }
        let a = attrs(p, 8);
        let pick = |k| a.iter().find(|(t, _)| *t == k).map(|(_, v)| *v);
        let addr = match pick(IFA_LOCAL).or(pick(IFA_ADDRESS)) {
            Some(v) if v.len() == 4 => {
                std::net::IpAddr::from(<[u8; 4]>::try_from(v).unwrap_or_default())
            }
            Some(v) if v.len() == 16 => {
                std::net::IpAddr::from(<[u8; 16]>::try_from(v).unwrap_or_default())
            }
            _ => continue,
        };
        out.push(format!("{addr}/{}", h[1]));
    }
    Ok(out)
}

/// RTM_GETDCB with DCB_CMD_IEEE_GET: the IEEE PFC of `name` (struct ieee_pfc: pfc_cap, pfc_en, ...).
pub fn pfc(name: &str) -> Pfc {
    const RTM_GETDCB: u16 = 78;
    const DCB_CMD_IEEE_GET: u8 = 21;
    const DCB_ATTR_IFNAME: u16 = 1;
    const DCB_ATTR_IEEE: u16 = 13;
    const DCB_ATTR_IEEE_PFC: u16 = 2;
    let mut body = vec![0u8, DCB_CMD_IEEE_GET, 0, 0];
    let nlen = 4 + name.len() + 1;
    body.extend_from_slice(&(nlen as u16).to_ne_bytes());
    body.extend_from_slice(&DCB_ATTR_IFNAME.to_ne_bytes());
    body.extend_from_slice(name.as_bytes());
    body.push(0);
    body.resize(align4(body.len()), 0);
    let msgs = match rtnetlink(RTM_GETDCB, 0, &body) {
        Ok(m) => m,
        Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => {
            return Pfc::NotExposed {
                why: format!("{name}'s driver has no DCB interface (netlink DCB: {e})"),
            };
        }
        Err(e) => {
            return Pfc::NotExposed {
                why: format!("netlink DCB for {name}: {e}"),
            };
        }
    };
    let pfc = msgs.iter().find_map(|(_, p)| {
        let ieee = attrs(p, 4)
            .into_iter()
            .find(|(t, _)| *t == DCB_ATTR_IEEE)?
            .1;
        let v = attrs(ieee, 0)
            .into_iter()
            .find(|(t, _)| *t == DCB_ATTR_IEEE_PFC)?
            .1;
        Some((*v.first()?, *v.get(1)?))
    });
    match pfc {
        Some((capable, en)) => Pfc::Read {
            capable,
            enabled: priorities(en),
        },
        None => Pfc::NotExposed {
            why: format!("{name}'s DCB reports no IEEE PFC"),
        },
    }
}

/// `/dev/kmsg`, non-blocking: one record per read until none is left (a record overwritten meanwhile
/// answers EPIPE: read on).
pub fn kmsg() -> Result<String, ReadError> {
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open("/dev/kmsg")
        .map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => ReadError::Missing,
            _ => ReadError::Unreadable(e.to_string()),
        })?;
    let mut out = String::new();
    let mut buf = vec![0u8; 16 << 10];
    while (out.len() as u64) < MAX_TABLE {
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                let rec = String::from_utf8_lossy(&buf[..n]);
                out.push_str(rec.trim_end_matches('\n'));
                out.push('\n');
            }
            Err(e) if e.raw_os_error() == Some(libc::EPIPE) => continue,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) => return Err(ReadError::Unreadable(e.to_string())),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_are_bounded() {
        // two attributes (type 1: 4 bytes, type 2: 1 byte + padding), then one claiming 200 bytes
        let mut p = vec![8, 0, 1, 0, 1, 2, 3, 4, 5, 0, 2, 0, 9, 0, 0, 0];
        p.extend_from_slice(&[200, 0, 3, 0, 1]);
        let a = attrs(&p, 0);
        assert_eq!(a, vec![(1, &[1u8, 2, 3, 4][..]), (2, &[9u8][..])]);
        assert!(
            attrs(&[3, 0, 1, 0], 0).is_empty(),
            "a length below the header"
        );
        assert!(attrs(&p, 100).is_empty());
    }

    /// The loopback interface, on every Linux: index 1, 127.0.0.1/8, no DCB.
    #[test]
    fn netlink_answers_for_the_loopback() {
        let a = addresses(1).unwrap();
        assert!(a.iter().any(|x| x == "127.0.0.1/8"), "{a:?}");
        assert!(
            matches!(pfc("lo"), Pfc::NotExposed { .. }),
            "{:?}",
            pfc("lo")
        );
        assert!(matches!(pfc("nosuch0"), Pfc::NotExposed { .. }));
    }

    #[test]
    fn names_that_do_not_fit_ifreq_are_refused() {
        let fd = socket(libc::AF_INET, libc::SOCK_DGRAM, 0).unwrap();
        let mut x = 0u64;
        let e = ethtool(&fd, &"x".repeat(40), (&mut x as *mut u64).cast()).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENODEV));
    }
}
