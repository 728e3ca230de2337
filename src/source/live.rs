//! Live capture with libpcap (the `pcap` crate) as a [`PacketSource`]: the handle is non-blocking and
//! waited on with poll(2) for at most [`WAIT`], so that a capture without traffic still comes back to its
//! caller ([`Next::Idle`]) to check the clock, signals and requests.
use std::os::fd::AsRawFd;
use std::time::Duration;

use super::{LiveConfig, Next, Packet, PacketSource, SourceError};

/// The kernel hands a block of frames over when it is full or this old (ms).
const BLOCK_TIMEOUT_MS: i32 = 100;
/// Reading on after a stop: the last block comes within the block timeout.
pub const DRAIN: Duration = Duration::from_millis(BLOCK_TIMEOUT_MS as u64 + 50);
/// The longest wait for frames before [`Next::Idle`].
pub const WAIT: Duration = Duration::from_millis(50);

/// libpcap's counters (pcap_stats).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PcapCounters {
    /// Packets that passed the filter.
    pub received: u64,
    /// Dropped for lack of room in the kernel buffer.
    pub dropped: u64,
    /// Dropped by the interface or its driver.
    pub if_dropped: u64,
}

/// An active capture handle.
pub struct LiveSource {
    cap: pcap::Capture<pcap::Active>,
    /// The capture filter in force.
    pub filter: String,
    /// LINKTYPE of the interface.
    pub linktype: u16,
    /// 1 when libpcap gives nanoseconds, 1000 when microseconds.
    ts_scale: u64,
    interface: String,
    /// The last read found nothing: wait before the next.
    drained: bool,
}

impl std::fmt::Debug for LiveSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveSource")
            .field("interface", &self.interface)
            .field("filter", &self.filter)
            .field("linktype", &self.linktype)
            .finish_non_exhaustive()
    }
}

unsafe extern "C" {
    // In libpcap since 1.5; the pcap crate links it but does not expose it.
    fn pcap_get_tstamp_precision(p: *mut libc::c_void) -> libc::c_int;
}

impl LiveSource {
    /// Opens and activates the capture with its filter set, or says in one line what is wrong and how to
    /// fix it.
    pub fn open(cfg: &LiveConfig) -> Result<LiveSource, LiveError> {
        let iface = cfg.interface.as_str();
        check_interface(iface)?;
        // Not immediate mode: libpcap then uses TPACKET_V3, whose blocks pack frames by their length and are
        // handed over full or after the 100 ms timeout. Immediate mode's TPACKET_V2 ring has one slot of the
        // snaplen (~64 KiB) per frame: 512 frames in 32 MiB, and drops from 200,000 frames/s
        // (benches/capture.sh).
        let cannot = |source| LiveError::Cannot {
            iface: iface.to_string(),
            source,
        };
        let cap = pcap::Capture::from_device(iface)
            .map_err(cannot)?
            .promisc(cfg.promiscuous)
            .snaplen(cfg.snaplen as i32)
            .buffer_size(cfg.buffer_size as i32)
            .timeout(BLOCK_TIMEOUT_MS)
            .precision(pcap::Precision::Nano);
        let cap = cap.open().map_err(|e| activation_error(iface, &e))?;
        let mut cap = cap.setnonblock().map_err(cannot)?;
        // `any`: Linux cooked capture v2 (it names the interface of each frame) when libpcap offers it.
        if iface == "any"
            && cap
                .list_datalinks()
                .is_ok_and(|l| l.contains(&pcap::Linktype(276)))
        {
            let _ = cap.set_datalink(pcap::Linktype(276));
        }
        let filter = match &cfg.filter {
            Some(f) => f.clone(),
            None => default_filter(cfg.roce_port, cap.get_datalink().0 as u16),
        };
        if let Err(e) = cap.filter(&filter, true).or_else(|e| {
            // libpcap compiles no filter for InfiniBand (not even an empty one on some versions).
            if filter.is_empty() { Ok(()) } else { Err(e) }
        }) {
            let reason = libpcap_message(&e);
            return Err(LiveError::BadFilter { filter, reason });
        }
        let linktype = cap.get_datalink().0 as u16;
        // SAFETY: the handle is live for the duration of the call.
        let nano = unsafe { pcap_get_tstamp_precision(cap.as_ptr().cast()) } == 1;
        Ok(LiveSource {
            cap,
            filter,
            linktype,
            ts_scale: if nano { 1 } else { 1000 },
            interface: cfg.interface.clone(),
            drained: false,
        })
    }

    /// libpcap's counters so far (`None` when it cannot say).
    pub fn counters(&mut self) -> Option<PcapCounters> {
        self.cap.stats().ok().map(|s| PcapCounters {
            received: u64::from(s.received),
            dropped: u64::from(s.dropped),
            if_dropped: u64::from(s.if_dropped),
        })
    }

    /// Waits until frames are there, at most [`WAIT`].
    fn wait(&self) {
        let mut pfd = libc::pollfd {
            fd: self.cap.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        unsafe { libc::poll(&mut pfd, 1, WAIT.as_millis() as i32) };
    }
}

impl PacketSource for LiveSource {
    fn next(&mut self) -> Result<Next<'_>, SourceError> {
        if std::mem::take(&mut self.drained) {
            self.wait();
        }
        let scale = self.ts_scale;
        match self.cap.next_packet() {
            Ok(p) => {
                let h = p.header;
                let ts = (h.ts.tv_sec as u64)
                    .saturating_mul(1_000_000_000)
                    .saturating_add((h.ts.tv_usec as u64).saturating_mul(scale));
                let packet = Packet {
                    ts_nanos: ts,
                    linktype: self.linktype,
                    interface: 0,
                    data: p.data,
                    orig_len: h.len,
                };
                Ok(Next::Packet {
                    packet,
                    end: 0,
                    stable: false,
                })
            }
            Err(pcap::Error::TimeoutExpired) => {
                self.drained = true;
                Ok(Next::Idle)
            }
            Err(e) => Err(SourceError::Capture {
                name: self.interface.clone(),
                reason: e.to_string(),
            }),
        }
    }
}

/// The default capture filter for a RoCEv2 port on a link of `linktype`: RoCEv2, VLAN-tagged RoCEv2 (Ethernet
/// links only: libpcap has no VLAN support on Linux cooked capture), RoCEv1 and MAC control (PAUSE, PFC); none
/// on InfiniBand (LINKTYPE_INFINIBAND, libpcap's sniffer of an RDMA device: every frame is the transport's,
/// and libpcap compiles no filter for it).
pub fn default_filter(port: u16, linktype: u16) -> String {
    match linktype {
        1 => format!(
            "udp dst port {port} or (vlan and udp dst port {port}) or ether proto 0x8915 or ether proto 0x8808"
        ),
        parsers::lrh::LINKTYPE_INFINIBAND => String::new(),
        _ => format!("udp dst port {port} or ether proto 0x8915 or ether proto 0x8808"),
    }
}

/// The network interfaces libpcap can capture on, by name, in its order, and `any` (Wireshark's extcap
/// lists them). On Linux, libpcap's other sources (nflog, nfqueue, D-Bus, Bluetooth) carry no RoCE: only
/// the netdevs are kept, and the RDMA devices libpcap sniffs (its rdmasniff: native InfiniBand frames).
pub fn interfaces() -> Vec<String> {
    let netdev = |name: &str| {
        !cfg!(target_os = "linux")
            || name == "any"
            || std::path::Path::new("/sys/class/net").join(name).exists()
            || std::path::Path::new("/sys/class/infiniband")
                .join(name)
                .exists()
    };
    let mut names: Vec<String> = pcap::Device::list()
        .unwrap_or_default()
        .into_iter()
        .map(|d| d.name)
        .filter(|n| netdev(n))
        .collect();
    names.dedup();
    names
}

/// Whether libpcap compiles `filter` for frames of `linktype`, without capturing (Wireshark asks an extcap
/// whether the capture filter typed in its dialog is valid).
pub fn check_filter(filter: &str, linktype: u16) -> Result<(), LiveError> {
    let bad = |e: pcap::Error| LiveError::BadFilter {
        filter: filter.to_string(),
        reason: libpcap_message(&e),
    };
    let dead = pcap::Capture::dead(pcap::Linktype(i32::from(linktype))).map_err(bad)?;
    dead.compile(filter, true).map(drop).map_err(bad)
}

/// Why a live capture could not start: one line that says what is wrong and, where it can, how to fix it.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    #[error("no such interface '{iface}' (available: {})", list_or_none(.available))]
    NoSuchInterface {
        iface: String,
        available: Vec<String>,
    },
    /// libpcap found no such device when activating (its message in `reason`).
    #[error("no such interface '{iface}' ({reason})")]
    NoDevice { iface: String, reason: String },
    #[error("interface '{iface}' is down (bring it up: ip link set {iface} up)")]
    Down { iface: String },
    /// `reason` is libpcap's, `exe` the binary to give the capabilities to.
    #[error(
        "not permitted to capture on '{iface}' ({reason}): run as root, or give the binary the capabilities: \
         sudo setcap cap_net_raw,cap_net_admin=eip {exe}"
    )]
    NotPermitted {
        iface: String,
        reason: String,
        exe: String,
    },
    /// Activation failed otherwise (libpcap's message in `reason`).
    #[error("cannot capture on '{iface}': {reason}")]
    Refused { iface: String, reason: String },
    #[error("cannot capture on '{iface}': {source}")]
    Cannot {
        iface: String,
        #[source]
        source: pcap::Error,
    },
    #[error("bad capture filter '{filter}': {reason} (see man 7 pcap-filter)")]
    BadFilter { filter: String, reason: String },
}

fn list_or_none(names: &[String]) -> String {
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    }
}

/// libpcap's own words for an error (the pcap crate's `Display` prefixes them).
fn libpcap_message(e: &pcap::Error) -> String {
    match e {
        pcap::Error::PcapError(m) => m.clone(),
        other => other.to_string(),
    }
}

/// An interface that exists and is up (`any` always is), or the one line that says otherwise.
fn check_interface(iface: &str) -> Result<(), LiveError> {
    let devices = pcap::Device::list().unwrap_or_default();
    let device = devices.iter().find(|d| d.name == iface);
    if device.is_none() && iface != "any" {
        let mut available: Vec<String> = devices.iter().map(|d| d.name.clone()).collect();
        available.dedup();
        return Err(LiveError::NoSuchInterface {
            iface: iface.to_string(),
            available,
        });
    }
    if let Some(d) = device
        && iface != "any"
        && !d.flags.is_up()
    {
        return Err(LiveError::Down {
            iface: iface.to_string(),
        });
    }
    Ok(())
}

fn activation_error(iface: &str, e: &pcap::Error) -> LiveError {
    let msg = libpcap_message(e);
    let lower = msg.to_ascii_lowercase();
    let iface = iface.to_string();
    if lower.contains("permission") || lower.contains("not permitted") || lower.is_empty() {
        let exe = std::env::current_exe()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| "rocescope".to_string());
        let reason = if msg.is_empty() {
            "permission denied".to_string()
        } else {
            msg
        };
        LiveError::NotPermitted { iface, reason, exe }
    } else if lower.contains("no such device") {
        LiveError::NoDevice { iface, reason: msg }
    } else if lower.contains("not up") {
        LiveError::Down { iface }
    } else {
        LiveError::Refused { iface, reason: msg }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The default filter of each link libpcap may give compiles for it (libpcap itself is the judge); on
    /// InfiniBand there is none.
    #[test]
    fn the_default_filter_of_each_link() {
        for linktype in [1, 113, 276] {
            let f = default_filter(4791, linktype);
            assert!(f.contains("udp dst port 4791"), "{linktype}: {f}");
            check_filter(&f, linktype).unwrap_or_else(|e| panic!("{linktype}: {e}"));
        }
        assert_eq!(default_filter(4791, parsers::lrh::LINKTYPE_INFINIBAND), "");
    }
}
