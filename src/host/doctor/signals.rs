//! What the host says happened or will happen under load: congestion control, the counters that indicate
//! trouble, the kernel log; and the files that could not be read.
use super::super::congestion::Pfc;
use super::super::read::ReadError;
use super::super::{Layer, Unread, klog, rdma};
use super::{At, Finding, Root, Severity};

/// Counters that indicate trouble when non-zero, by what they mean (mlx5 and rxe names, IB port counters).
struct Group {
    code: &'static str,
    counters: &'static [&'static str],
    meaning: &'static str,
    fix: &'static str,
}

const GROUPS: [Group; 10] = [
    Group {
        code: "counter_sequence_errors",
        counters: &[
            "out_of_sequence",
            "packet_seq_err",
            "implied_nak_seq_err",
            "out_of_seq_request",
            "rcvd_seq_err",
        ],
        meaning: "packets arrived out of sequence, or the requester got PSN sequence error NAKs: packets were lost \
                  (or reordered) between the two ends",
        fix: "find the loss: the switches' drop counters, PFC or ECN on the RoCE priority, the links' errors \
              (ethtool -S); rocescope capture shows where the gaps are",
    },
    Group {
        code: "counter_duplicates",
        counters: &["duplicate_request"],
        meaning: "the responder got requests it had already executed: ACKs lost, or a requester timer shorter than \
                  the round trip",
        fix: "look for loss of ACKs; raise the QP timeout (perftest -u, rocescope gen --qp-timeout)",
    },
    Group {
        code: "counter_timeouts",
        counters: &["local_ack_timeout_err", "completer_retry_err"],
        meaning: "the requester resent (on its ACK timer, or after a NAK: rxe's completer_retry_err counts both): \
                  answers were lost, slow, or never came",
        fix: "look for loss toward the responder, a responder that is gone, a QP timeout too short",
    },
    Group {
        code: "counter_retry_exceeded",
        counters: &["retry_exceeded_err"],
        meaning: "a requester gave up after its retry count: IBV_WC_RETRY_EXC_ERR, its QP went to the error state",
        fix: "the responder was unreachable, dead or had no such QP, or the loss persisted: check it and the path",
    },
    Group {
        code: "counter_rnr",
        counters: &[
            "rnr_nak_retry_err",
            "rcvd_rnr_err",
            "send_rnr_err",
            "retry_rnr_exceeded_err",
        ],
        meaning: "receiver not ready: a SEND found no receive posted (send_rnr_err: this device answered RNR; \
                  rcvd_rnr_err, rnr_nak_retry_err: its peer did; retry_rnr_exceeded_err: a requester gave up)",
        fix: "post receives before the peer sends (a deeper receive queue, an SRQ), or raise the RNR retry count",
    },
    Group {
        code: "counter_icrc",
        counters: &["rx_icrc_encapsulated"],
        meaning: "RoCE packets arrived with a bad ICRC: damaged on the way, or a middlebox rewrote covered fields",
        fix: "check the links' errors (ethtool -S, cables, optics); rocescope capture names the damaged frames",
    },
    Group {
        code: "counter_send_errors",
        counters: &["send_err"],
        meaning: "rxe failed to send packets: typically a path MTU larger than the netdev carries (nothing reaches \
                  the wire), or no route or neighbour",
        fix: "compare the path MTU with the netdev MTU (the MTU findings) and check the route to the peer",
    },
    Group {
        code: "counter_link_errors",
        counters: &[
            "link_downed",
            "link_error_recovery",
            "symbol_error",
            "port_rcv_errors",
            "port_rcv_remote_physical_errors",
            "local_link_integrity_errors",
            "excessive_buffer_overrun_errors",
        ],
        meaning: "the link went down, or had physical errors, since the counters started",
        fix: "check the cable, the optics and the switch port; the kernel log says when the link went down",
    },
    Group {
        code: "counter_discards",
        counters: &[
            "out_of_buffer",
            "port_xmit_discards",
            "port_rcv_constraint_errors",
            "port_xmit_constraint_errors",
        ],
        meaning: "the device dropped packets: no receive buffer (out_of_buffer), or congestion and constraints",
        fix: "post more receives (out_of_buffer); against congestion, PFC or ECN on the RoCE priority",
    },
    Group {
        code: "counter_completion_errors",
        counters: &[
            "req_cqe_error",
            "resp_cqe_error",
            "req_remote_access_errors",
            "req_remote_invalid_request",
            "resp_local_length_error",
            "resp_remote_access_errors",
        ],
        meaning: "work requests completed in error: a wrong R_Key or address (remote access), a receive too small \
                  (local length), an invalid request",
        fix: "check the application's keys, buffer sizes and QP attributes; the completion status names which",
    },
];

pub fn counters(root: &Root, d: &rdma::Device, p: &rdma::Port, out: &mut Vec<Finding>) {
    let at = At {
        device: Some(&d.name),
        port: Some(p.port),
    };
    let dir = root.show(&format!("{}/{}/ports/{}", rdma::CLASS, d.name, p.port));
    let dir = dir.as_str();
    for g in &GROUPS {
        let moved: Vec<String> = [("hw_counters", &p.hw_counters), ("counters", &p.counters)]
            .iter()
            .flat_map(|(sub, m)| {
                m.iter()
                    .filter(|(n, v)| **v > 0 && g.counters.contains(&n.as_str()))
                    .map(move |(n, v)| format!("{dir}/{sub}/{n}: {v}"))
            })
            .collect();
        if !moved.is_empty() {
            out.push(at.finding(
                Severity::Warning,
                Layer::Counters,
                g.code,
                moved.join(", "),
                g.meaning,
                g.fix,
            ));
        }
    }
}

pub fn congestion(root: &Root, d: &rdma::Device, p: &rdma::Port, out: &mut Vec<Finding>) {
    let at = At {
        device: Some(&d.name),
        port: Some(p.port),
    };
    let rxe = d.driver.as_deref() == Some("rdma_rxe");
    if rxe && p.link_layer.as_deref() == Some("Ethernet") {
        out.push(at.finding(
            Severity::Note,
            Layer::Congestion,
            "no_dcqcn",
            format!("{}: driver rdma_rxe", d.name),
            "Soft-RoCE has no congestion control: it sends no CNPs and does not slow down on CE marks (kernel \
             6.1), and its netdevs have no PFC: congestion means loss and go-back-N",
            "none in rxe; for congestion control, a NIC with DCQCN",
        ));
    }
    for n in &p.netdevs {
        if n.ecn
            .as_ref()
            .is_some_and(|e| e.np_enabled.is_empty() && e.rp_enabled.is_empty())
        {
            let ecn = root.show(&format!("sys/class/net/{}/ecn", n.name));
            out.push(at.finding(
                Severity::Warning,
                Layer::Congestion,
                "ecn_disabled",
                format!("{ecn}/roce_np/enable/0..7 and roce_rp/enable/0..7: all 0"),
                "DCQCN is off on every priority: the device neither answers CE marks with CNPs nor slows down on \
                 CNPs; a congested fabric drops or pauses instead",
                format!(
                    "echo 1 > /sys/class/net/{0}/ecn/roce_np/enable/3 and .../roce_rp/enable/3 (the RoCE priority), \
                     and ECN marking on the switches",
                    n.name
                ),
            ));
        }
        pfc(&at, rxe, n, out);
        let paused: Vec<String> = n
            .pause
            .iter()
            .filter(|c| c.value > 0)
            .map(|c| format!("{} {}", c.name, c.value))
            .collect();
        if !paused.is_empty() {
            out.push(at.finding(
                Severity::Note,
                Layer::Congestion,
                "pause_frames",
                format!("{} ethtool statistics: {}", n.name, paused.join(", ")),
                "PAUSE or PFC frames were counted: rx, the peer asked this port to stop (congestion \
                 downstream); tx, this port asked the peer to stop (its buffers filled)",
                "none when rare; when many, find the congested point (the switches' buffer counters) and check \
                 that ECN/DCQCN keeps the queues below the pause threshold",
            ));
        }
    }
}

fn pfc(at: &At, rxe: bool, n: &super::super::netdev::Netdev, out: &mut Vec<Finding>) {
    match &n.pfc {
        Pfc::Read { capable, enabled } if enabled.is_empty() => out.push(at.finding(
            Severity::Warning,
            Layer::Congestion,
            "pfc_disabled",
            format!("netlink DCB (IEEE) of {}: PFC on {capable} priorities at most, enabled on none", n.name),
            "no priority is lossless: under congestion the switch drops RoCE packets and RC recovers by go-back-N \
             (throughput collapses), unless ECN/DCQCN keeps the queues short",
            format!("dcb pfc set dev {} prio-pfc 3:on (the RoCE priority), and the same on the switch port", n.name),
        )),
        Pfc::NotExposed { why } if !rxe => out.push(at.finding(
            Severity::Note,
            Layer::Congestion,
            "dcb_not_exposed",
            why.clone(),
            format!("PFC state of {} unknown: its driver exposes no DCB through netlink", n.name),
            "the NIC's own tool shows it (e.g. mlnx_qos -i IF); or the switch port's configuration",
        )),
        _ => {}
    }
}

/// Quotes the RDMA-related errors, warnings and link-downs of the log; returns what was read.
pub fn kernel_log(root: &Root, devices: &[rdma::Device], out: &mut Vec<Finding>) -> String {
    let lines = match klog::read(root) {
        Ok(l) => l,
        Err(ReadError::Missing) if !root.live => {
            out.push(At::HOST.finding(
                Severity::Note,
                Layer::KernelLog,
                "not_recorded",
                format!("{}: not recorded", root.show("dev/kmsg")),
                "the tree records no kernel log: its RDMA errors and link-downs are not quoted",
                "record `dmesg -r` as DIR/dev/kmsg (testdata/host/README.md), or run doctor on the host",
            ));
            return "not recorded".to_string();
        }
        Err(e) => {
            let place = if root.live {
                "/dev/kmsg".to_string()
            } else {
                root.show("dev/kmsg")
            };
            out.push(At::HOST.finding(
                Severity::Note,
                Layer::KernelLog,
                "kernel_log_unreadable",
                format!("{place}: {e}"),
                "the kernel log was not read: its RDMA errors and link-downs are not quoted",
                if root.live {
                    "run as root (or sysctl kernel.dmesg_restrict=0)"
                } else {
                    "record `dmesg -r` as a regular file DIR/dev/kmsg (testdata/host/README.md)"
                },
            ));
            return format!("not read ({place}: {e})");
        }
    };
    let netdevs: Vec<String> = devices
        .iter()
        .flat_map(|d| {
            d.ports
                .iter()
                .flat_map(|p| p.netdevs.iter().map(|n| n.name.clone()))
        })
        .collect();
    for q in klog::quoted(&lines, &netdevs) {
        let device = devices.iter().find(|d| q.text.contains(d.name.as_str()));
        out.push(quote(&q, device.map(|d| d.name.as_str())));
    }
    format!("{} lines read", lines.len())
}

/// A kernel log message as a finding, about `device` when it names one.
fn quote(q: &klog::Quoted, device: Option<&str>) -> Finding {
    let (sev, code, meaning) = if q.link_down {
        (
            Severity::Note,
            "link_down_logged",
            "a RoCE netdev's link went down since boot",
        )
    } else if q.level <= 3 {
        (
            Severity::Warning,
            "kernel_log_error",
            "the kernel's RDMA stack reported an error since boot",
        )
    } else {
        (
            Severity::Note,
            "kernel_log_warning",
            "the kernel's RDMA stack warned since boot",
        )
    };
    let times = if q.count > 1 {
        format!(" ({} times, last at {:.3} s)", q.count, q.last_s)
    } else {
        String::new()
    };
    At { device, port: None }.finding(
        sev,
        Layer::KernelLog,
        code,
        format!("kernel log at {:.3} s{times}: \"{}\"", q.first_s, q.text),
        meaning,
        "read the message: it names the device and the cause; the device's state now is checked above",
    )
}

/// A file that should have given a value and did not.
pub fn unread(u: &Unread) -> Finding {
    let mut severity = Severity::Warning;
    let (code, meaning, fix) = match &u.error {
        ReadError::Missing if !u.live => {
            severity = Severity::Note;
            (
                "not_recorded",
                "the tree does not record this file: the checks that need it are skipped, and nothing is \
                 concluded from its absence",
                "record it with the tree (testdata/host/README.md lists what doctor reads), or run doctor on \
                 the host",
            )
        }
        ReadError::Missing => (
            "file_missing",
            "an expected file is not there: the checks that need it are skipped (an older kernel, a driver \
             without it, or a tree recorded without it)",
            "none if the driver does not have it; otherwise reload the driver",
        ),
        ReadError::NotANumber(_) => (
            "not_a_number",
            "a value that should be a number is not: it is left out",
            "none from here: a driver bug or a damaged recorded tree",
        ),
        ReadError::Unreadable(_) | ReadError::TooLarge(_) => (
            "file_unreadable",
            "the file is there but gave no value: the checks that need it are skipped",
            "run as root; if it still fails, the driver does not answer (see the kernel log)",
        ),
    };
    At {
        device: u.device.as_deref(),
        port: u.port,
    }
    .finding(
        severity,
        u.layer,
        code,
        format!("{}: {}", u.path, u.error),
        meaning,
        fix,
    )
}

#[cfg(test)]
mod tests {
    use super::super::super::netdev::Netdev;
    use super::*;

    fn netdev(pfc: Pfc) -> Netdev {
        Netdev {
            name: "ens1f0".into(),
            operstate: Some("up".into()),
            admin_up: Some(true),
            carrier: Some(true),
            mtu: Some(1500),
            speed_mbps: Some(100_000),
            speed_read: true,
            ib_mtu_allowed: Some(1024),
            vlan: None,
            addresses: Vec::new(),
            neighbours: Vec::new(),
            ecn: None,
            pfc,
            pause: Vec::new(),
        }
    }

    fn pfc_codes(driver: &str, pfc: Pfc) -> Vec<&'static str> {
        let mut out = Vec::new();
        let at = At {
            device: Some("mlx5_0"),
            port: Some(1),
        };
        pfc_finding(&at, driver == "rdma_rxe", &netdev(pfc), &mut out);
        out.iter().map(|f| f.code).collect()
    }

    use super::pfc as pfc_finding;

    /// PFC comes from netlink DCB only (not in a recorded tree): the finding is held to the states it reads.
    #[test]
    fn pfc_off_on_every_priority_is_a_warning() {
        let off = Pfc::Read {
            capable: 8,
            enabled: vec![],
        };
        assert_eq!(pfc_codes("mlx5_core", off), ["pfc_disabled"]);
        let on = Pfc::Read {
            capable: 8,
            enabled: vec![3],
        };
        assert!(pfc_codes("mlx5_core", on).is_empty());
        let none = || Pfc::NotExposed {
            why: "no DCB".into(),
        };
        assert_eq!(pfc_codes("mlx5_core", none()), ["dcb_not_exposed"]);
        assert!(
            pfc_codes("rdma_rxe", none()).is_empty(),
            "no_dcqcn says it for rxe"
        );
        assert!(pfc_codes("mlx5_core", Pfc::NotRead).is_empty());
    }
}
