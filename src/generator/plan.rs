//! The pure parts of the generator: the path MTU and its limits, GID and work completion names, rates and
//! pacing (PSN arithmetic is `parsers::psn`).
use parsers::psn::PSN_MASK;
pub use rocescope::host::rdma::mtu_bytes;
use rocescope::host::rdma::{RXE_HEADERS, ib_mtu_for};

/// The largest InfiniBand path MTU that fits a network device MTU of `netdev_mtu` bytes after rxe's header
/// bytes, if any: a path MTU beyond it never reaches the wire.
pub fn max_path_mtu_for_netdev(netdev_mtu: u32) -> Option<u32> {
    ib_mtu_for(netdev_mtu, RXE_HEADERS)
}

/// One end of the path, as far as the path MTU goes.
pub struct PathEnd {
    /// How the MTU source names it ("rxe1", "the server's rxe1").
    pub source: String,
    /// How a refusal names it ("rxe1", "rxe1 on the server").
    pub device: String,
    pub active_mtu: u32,
    pub netdev: Option<String>,
    pub netdev_mtu: Option<u32>,
}

/// A path MTU the network device of one end cannot carry: rxe would put nothing on the wire and no
/// completion would come.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "path MTU {mtu} is larger than {netdev} ({device}, MTU {netdev_mtu}) allows ({}): rxe would put nothing on \
     the wire and no completion would come",
    limit_text(*.limit)
)]
pub struct MtuTooLarge {
    pub mtu: u32,
    /// The RDMA device ("rxe1", "rxe1 on the server") and its network device.
    pub device: String,
    pub netdev: String,
    pub netdev_mtu: u32,
    /// The largest path MTU it carries, if any.
    pub limit: Option<u32>,
}

fn limit_text(limit: Option<u32>) -> String {
    match limit {
        Some(l) => format!("at most {l} after {RXE_HEADERS} header bytes"),
        None => "not even 256".to_string(),
    }
}

/// The path MTU and where it comes from: `given` (--mtu), or the smaller active MTU of the two ends; never
/// more than either network device carries.
pub fn path_mtu(given: Option<u32>, ends: &[PathEnd; 2]) -> Result<(u32, String), MtuTooLarge> {
    let [a, b] = ends;
    let (mtu, source) = match given {
        Some(m) => (m, "--mtu".to_string()),
        None => (
            a.active_mtu.min(b.active_mtu),
            format!(
                "active MTU of {} ({}) and {} ({})",
                a.source, a.active_mtu, b.source, b.active_mtu
            ),
        ),
    };
    for e in ends {
        check_netdev_mtu(&e.device, e.netdev.as_deref(), e.netdev_mtu, mtu)?;
    }
    Ok((mtu, source))
}

/// The path MTU must fit the network device `netdev` of device `name` (rxe puts nothing on the wire
/// otherwise).
pub fn check_netdev_mtu(
    name: &str,
    netdev: Option<&str>,
    netdev_mtu: Option<u32>,
    mtu: u32,
) -> Result<(), MtuTooLarge> {
    if let Some(n) = netdev_mtu {
        let limit = max_path_mtu_for_netdev(n);
        if limit.is_none_or(|l| mtu > l) {
            return Err(MtuTooLarge {
                mtu,
                device: name.to_string(),
                netdev: netdev.unwrap_or("?").to_string(),
                netdev_mtu: n,
                limit,
            });
        }
    }
    Ok(())
}

/// One outstanding READ or atomic per message in flight, within what both devices take (at most 16), and
/// at least 1: with 0, READs hang silently (no packet, no completion, the QP still in RTS).
pub fn rd_atomic(depth: u32, a: u32, b: u32) -> u8 {
    depth.min(16).min(a).min(b).max(1) as u8
}

/// The IPv4 address of an IPv4-mapped GID (::ffff:a.b.c.d).
pub fn ipv4_mapped(raw: &[u8; 16]) -> Option<std::net::Ipv4Addr> {
    (raw[..10].iter().all(|&b| b == 0) && raw[10] == 0xff && raw[11] == 0xff)
        .then(|| std::net::Ipv4Addr::new(raw[12], raw[13], raw[14], raw[15]))
}

/// The name libibverbs gives a work completion status (ibv_wc_status_str), by number.
pub fn wc_status_name(status: u32) -> &'static str {
    const NAMES: [&str; 24] = [
        "IBV_WC_SUCCESS",
        "IBV_WC_LOC_LEN_ERR",
        "IBV_WC_LOC_QP_OP_ERR",
        "IBV_WC_LOC_EEC_OP_ERR",
        "IBV_WC_LOC_PROT_ERR",
        "IBV_WC_WR_FLUSH_ERR",
        "IBV_WC_MW_BIND_ERR",
        "IBV_WC_BAD_RESP_ERR",
        "IBV_WC_LOC_ACCESS_ERR",
        "IBV_WC_REM_INV_REQ_ERR",
        "IBV_WC_REM_ACCESS_ERR",
        "IBV_WC_REM_OP_ERR",
        "IBV_WC_RETRY_EXC_ERR",
        "IBV_WC_RNR_RETRY_EXC_ERR",
        "IBV_WC_LOC_RDD_VIOL_ERR",
        "IBV_WC_REM_INV_RD_REQ_ERR",
        "IBV_WC_REM_ABORT_ERR",
        "IBV_WC_INV_EECN_ERR",
        "IBV_WC_INV_EEC_STATE_ERR",
        "IBV_WC_FATAL_ERR",
        "IBV_WC_RESP_TIMEOUT_ERR",
        "IBV_WC_GENERAL_ERR",
        "IBV_WC_TM_ERR",
        "IBV_WC_TM_RNDV_INCOMPLETE",
    ];
    NAMES
        .get(status as usize)
        .copied()
        .unwrap_or("unknown status")
}

/// What a failed work completion of the request at `psn` to `dest_qp` means, in words (None: the name
/// says it).
pub fn wc_status_meaning(status: u32, psn: u32, dest_qp: u32) -> Option<String> {
    let at = format!("PSN {psn:#x} on QP {dest_qp:#x}");
    Some(match status {
        1 => "local length error: a buffer is too small for the message".to_string(),
        4 => "local protection error: the local buffer is outside its memory region".to_string(),
        5 => "flushed: the QP was already in the error state".to_string(),
        7 => format!("bad response: the peer answered {at} with something not asked for"),
        9 => {
            format!("remote invalid request: the peer refused {at} (opcode, length or queue state)")
        }
        10 => format!("remote access error: the peer refused the R_Key, address or length of {at}"),
        11 => format!("remote operation error: the peer could not complete {at}"),
        12 => format!("retry counter exceeded: the peer did not acknowledge {at}"),
        13 => format!("RNR retry counter exceeded: the peer had no receive posted for {at}"),
        _ => return None,
    })
}

/// QPNs are 24 bits; 0xffffff is the multicast QPN.
pub const QPN_MASK: u32 = 0xff_ffff;

/// How far `--fault wrong-qpn` moves the destination QPN away from the responder's.
pub const WRONG_QPN_OFFSET: u32 = 0x100;

/// `--fault wrong-qpn`: the destination QPN a requester is connected to instead of the responder's
/// `responder_qpn`: `WRONG_QPN_OFFSET` above it (mod 2^24), moved on past the QPNs of this run (`taken`) and
/// past those with a meaning of their own (0 and 1, the special QPs; 0xffffff, multicast). rxe numbers its
/// QPs upward from 0x11 and drops a packet for a QPN it does not have without an answer.
pub fn wrong_qpn(responder_qpn: u32, taken: &[u32]) -> u32 {
    let mut q = responder_qpn.wrapping_add(WRONG_QPN_OFFSET) & QPN_MASK;
    while q <= 1 || q == QPN_MASK || taken.contains(&q) {
        q = (q + 1) & QPN_MASK;
    }
    q
}

/// `--fault bad-rkey`: the R_Key the faulty message carries instead of `rkey`: the same MR index, another
/// key byte, so that rxe finds the MR and refuses the key (remote access error).
pub fn bad_rkey(rkey: u32) -> u32 {
    rkey ^ 0x80
}

/// A 24-bit random PSN (getrandom(2); the clock if that fails).
pub fn random_psn() -> u32 {
    let mut b = [0u8; 4];
    // SAFETY: getrandom writes at most b.len() bytes into b.
    let n = unsafe { libc::getrandom(b.as_mut_ptr().cast(), b.len(), 0) };
    let v = if n == 4 {
        u32::from_ne_bytes(b)
    } else {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos() ^ (d.as_secs() as u32))
            .unwrap_or(0x5a5a5a)
    };
    v & PSN_MASK
}

/// `--rate`: messages per second, or a bit rate in Gb/s of payload (`2g`, `0.5G`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Rate {
    MessagesPerSec(f64),
    Gbps(f64),
}

impl Rate {
    /// The message rate that `self` means for messages of `size` bytes.
    pub fn messages_per_sec(self, size: u32) -> f64 {
        match self {
            Rate::MessagesPerSec(m) => m,
            Rate::Gbps(g) => g * 1e9 / 8.0 / f64::from(size.max(1)),
        }
    }

    /// The payload bit rate in Gb/s that `self` means for messages of `size` bytes.
    pub fn gbps(self, size: u32) -> f64 {
        match self {
            Rate::MessagesPerSec(m) => m * f64::from(size) * 8.0 / 1e9,
            Rate::Gbps(g) => g,
        }
    }
}

/// As the report gives the target: "N messages/s" or "G Gb/s".
impl std::fmt::Display for Rate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Rate::MessagesPerSec(m) => write!(f, "{m} messages/s"),
            Rate::Gbps(g) => write!(f, "{g} Gb/s"),
        }
    }
}

/// Pacing: when message `k` (0-based, counted over all QP pairs) may be posted, as an offset from the start
/// of the run, at `mps` messages per second (message 0 at once).
pub fn post_due(k: u64, mps: f64) -> std::time::Duration {
    std::time::Duration::from_secs_f64(k as f64 / mps)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn netdev_limits() {
        assert_eq!(max_path_mtu_for_netdev(1500), Some(1024));
        assert_eq!(max_path_mtu_for_netdev(9000), Some(4096));
        assert_eq!(max_path_mtu_for_netdev(4200), Some(4096));
        assert_eq!(max_path_mtu_for_netdev(4000), Some(2048));
        assert_eq!(max_path_mtu_for_netdev(300), None);
        assert_eq!(mtu_bytes(3), Some(1024));
        assert_eq!(mtu_bytes(5), Some(4096));
        assert_eq!(mtu_bytes(0), None);
    }

    #[test]
    fn path_mtu_of_two_ends() {
        let ends = || {
            let end = |source: &str, device: &str, active_mtu, netdev_mtu| PathEnd {
                source: source.to_string(),
                device: device.to_string(),
                active_mtu,
                netdev: Some("eth0".to_string()),
                netdev_mtu: Some(netdev_mtu),
            };
            [
                end("rxe0", "rxe0", 4096, 9000),
                end("the server's rxe1", "rxe1 on the server", 1024, 1500),
            ]
        };
        assert_eq!(
            path_mtu(None, &ends()),
            Ok((
                1024,
                "active MTU of rxe0 (4096) and the server's rxe1 (1024)".to_string()
            ))
        );
        assert_eq!(path_mtu(Some(512), &ends()), Ok((512, "--mtu".to_string())));
        assert!(
            path_mtu(Some(2048), &ends())
                .unwrap_err()
                .to_string()
                .starts_with("path MTU 2048 is larger than eth0 (rxe1 on the server, MTU 1500) allows (at most 1024 after 80 header bytes)")
        );
    }

    #[test]
    fn completion_errors_in_words() {
        // ibv_wc_status: 12 = IBV_WC_RETRY_EXC_ERR, 10 = IBV_WC_REM_ACCESS_ERR, 0 = success
        assert_eq!(
            wc_status_meaning(12, 0x1234, 0x11).as_deref(),
            Some("retry counter exceeded: the peer did not acknowledge PSN 0x1234 on QP 0x11")
        );
        assert_eq!(wc_status_name(10), "IBV_WC_REM_ACCESS_ERR");
        assert!(
            wc_status_meaning(10, 1, 2)
                .unwrap()
                .starts_with("remote access error")
        );
        assert_eq!(wc_status_meaning(0, 1, 2), None);
    }

    #[test]
    fn wrong_qpns() {
        assert_eq!(wrong_qpn(0x12, &[0x11, 0x12]), 0x112);
        // one of this run's own QPs is skipped, and so are the special and the multicast QPNs
        assert_eq!(wrong_qpn(0x12, &[0x112, 0x113]), 0x114);
        assert_eq!(wrong_qpn(0xfffeff, &[]), 2);
        assert_eq!(wrong_qpn(0xffff00, &[2]), 3);
        for q in [0x11, 0x7f_ffff, 0xff_fffe] {
            let w = wrong_qpn(q, &[q]);
            assert!(w != q && w > 1 && w < QPN_MASK, "{q:#x} -> {w:#x}");
        }
    }

    #[test]
    fn gids_and_names() {
        let mut g = [0u8; 16];
        g[10] = 0xff;
        g[11] = 0xff;
        g[12..].copy_from_slice(&[10, 0, 0, 1]);
        assert_eq!(ipv4_mapped(&g), Some(std::net::Ipv4Addr::new(10, 0, 0, 1)));
        g[0] = 0xfe;
        assert_eq!(ipv4_mapped(&g), None);
        assert_eq!(wc_status_name(12), "IBV_WC_RETRY_EXC_ERR");
        assert_eq!(wc_status_name(99), "unknown status");
        assert!(random_psn() <= PSN_MASK);
    }

    #[test]
    fn rates_and_pacing() {
        use std::time::Duration;
        // 2 Gb/s of 65536-byte messages: 250 MB/s / 64 KiB = 3814.7 messages/s
        let r = Rate::Gbps(2.0);
        assert!((r.messages_per_sec(65536) - 3814.697265625).abs() < 1e-9);
        assert!((r.gbps(65536) - 2.0).abs() < 1e-12);
        let m = Rate::MessagesPerSec(1000.0);
        assert_eq!(m.messages_per_sec(4096), 1000.0);
        assert!((m.gbps(4096) - 0.032768).abs() < 1e-12);
        // message 0 at once, message k at k/mps
        assert_eq!(post_due(0, 1000.0), Duration::ZERO);
        assert_eq!(post_due(500, 1000.0), Duration::from_millis(500));
        assert_eq!(post_due(1, 4.0), Duration::from_millis(250));
        // 2 Gb/s of 64 KiB: one message every 262.144 us
        assert_eq!(
            post_due(1, r.messages_per_sec(65536)),
            Duration::from_nanos(262_144)
        );
    }
}
