//! The default view: one tshark-like line per frame.
use std::io::{self, Write};

use parsers::aeth::Syndrome;
use parsers::cm::{CmMessage, ServiceId};
use parsers::ethernet::ethertype_name;
use parsers::frame::{EtherPayload, Frame, Roce};
use parsers::frame::{Ip, Link};
use parsers::icrc::IcrcStatus;
use parsers::mac_control::MacControl;
use parsers::mad::Mad;
use parsers::other::{self, Summary};
use parsers::psn::Shown as Psn;
use std::net::{Ipv4Addr, Ipv6Addr};

use super::{Mac, Shown, write_addr};

pub fn write(out: &mut impl Write, shown: &Shown, frame: &Frame) -> io::Result<()> {
    let secs = shown.rel_nanos / 1_000_000_000;
    let micros = (shown.rel_nanos % 1_000_000_000) / 1_000;
    write!(out, "{:>6} {secs:>4}.{micros:06} ", shown.number)?;
    write_addr(out, frame)?;
    match &frame.roce {
        Some(r) => {
            write!(out, " QP=0x{:06x}", r.bth.dest_qp)?;
            // A MAD replaces the UD details: its message is what the frame says.
            match r.mad().and_then(Result::ok) {
                Some(mad) => {
                    write_mad(out, &mad)?;
                    write_ce(out, frame)?;
                }
                None => write_transport(out, frame, r)?,
            }
            match r.icrc_status {
                Some(IcrcStatus::Bad { expected, found }) => write!(
                    out,
                    " [ICRC BAD: found 0x{found:08x}, expected 0x{expected:08x}]"
                )?,
                Some(IcrcStatus::Unverifiable) => write!(out, " [ICRC unverifiable: snaplen]")?,
                _ => {}
            }
        }
        None => write_other(out, frame)?,
    }
    if let Some(Link::Infiniband(ib)) = frame.link
        && let IcrcStatus::Bad { expected, found } = ib.vcrc_status
    {
        write!(
            out,
            " [VCRC BAD: found 0x{found:04x}, expected 0x{expected:04x}]"
        )?;
    }
    if let Some(m) = frame.malformed {
        write!(out, " [malformed: {m}]")?;
    }
    writeln!(out)
}

fn write_ce(out: &mut impl Write, frame: &Frame) -> io::Result<()> {
    if frame.ecn() == Some(3) {
        write!(out, " CE")?;
    }
    Ok(())
}

/// Opcode, PSN, flags, the extended headers' values and the payload length.
fn write_transport(out: &mut impl Write, frame: &Frame, r: &Roce) -> io::Result<()> {
    let b = &r.bth;
    write!(out, " {} PSN={}", b.op().name(), b.psn)?;
    for flag in b.flag_names() {
        write!(out, " {flag}")?;
    }
    write_ce(out, frame)?;
    let e = &r.ext;
    if let Some(reth) = e.reth {
        write!(
            out,
            " len={} rkey=0x{:08x} va=0x{:x}",
            reth.dma_len, reth.r_key, reth.va
        )?;
    }
    if let Some(aeth) = e.aeth {
        match aeth.decoded() {
            Syndrome::Ack { credits } => write!(out, " ACK MSN={} credits={credits}", aeth.msn)?,
            s @ Syndrome::RnrNak { .. } => {
                let us = s.rnr_micros().unwrap_or(0);
                write!(
                    out,
                    " RNR-NAK timer={}.{:02}ms MSN={}",
                    us / 1000,
                    (us % 1000) / 10,
                    aeth.msn
                )?
            }
            Syndrome::Nak(code) => write!(out, " NAK({}) MSN={}", code.name(), aeth.msn)?,
            Syndrome::Reserved { value } => {
                write!(out, " reserved-syndrome({value}) MSN={}", aeth.msn)?
            }
        }
    }
    if let Some(deth) = e.deth {
        write!(
            out,
            " srcQP=0x{:06x} qkey=0x{:08x}",
            deth.src_qp, deth.q_key
        )?;
    }
    if let Some(a) = e.atomic_eth {
        write!(
            out,
            " va=0x{:x} swap/add=0x{:x} cmp=0x{:x}",
            a.va, a.swap_add, a.compare
        )?;
    }
    if let Some(a) = e.atomic_ack_eth {
        write!(out, " orig=0x{:x}", a.orig_rem_data)?;
    }
    if let Some(imm) = e.immdt {
        write!(out, " imm=0x{:08x}", imm.0)?;
    }
    if let Some(ieth) = e.ieth {
        write!(out, " inv_rkey=0x{:08x}", ieth.r_key)?;
    }
    if let Some(len) = r.payload_len.filter(|len| *len > 0) {
        write!(out, " payload={len}")?;
    }
    if let Some(inner) = r.ether_payload() {
        write_ether_payload(out, &inner)?;
    }
    Ok(())
}

/// What an EtherType-encapsulated payload (IPoIB) carries: `[IPoIB: 10.0.0.36 → 10.0.0.255 UDP 49501 →
/// 49501]`, `[IPoIB: ARP]`.
fn write_ether_payload(out: &mut impl Write, inner: &EtherPayload) -> io::Result<()> {
    write!(out, " [IPoIB: ")?;
    match inner.ip {
        Some(Ip::V4(h)) => write!(out, "{} → {}", Ipv4Addr::from(h.src), Ipv4Addr::from(h.dst))?,
        Some(Ip::V6(h)) => write!(out, "{} → {}", Ipv6Addr::from(h.src), Ipv6Addr::from(h.dst))?,
        None => write!(out, "{}", ethertype_name(inner.header.ethertype))?,
    }
    if let Some(u) = inner.udp {
        write!(out, " UDP {} → {}", u.src_port, u.dst_port)?;
    }
    write!(out, "]")
}

/// A MAD like tshark's Info column (`CM ConnectRequest`), then what identifies the message: communication
/// IDs (local → remote), QPNs and starting PSNs, the service, a reject's reason.
fn write_mad(out: &mut impl Write, mad: &Mad) -> io::Result<()> {
    let Some(cm) = mad.cm() else {
        let h = &mad.header;
        write!(out, " MAD {} (0x{:02x})", h.class_name(), h.mgmt_class)?;
        match h.method_name() {
            Some(method) => write!(out, " {method}")?,
            None => write!(out, " method 0x{:02x}", h.method)?,
        }
        return write!(out, " attribute 0x{:04x}", h.attribute_id);
    };
    write!(out, " CM {}", cm.name())?;
    let ids = |out: &mut dyn Write, local: u32, remote: u32| {
        write!(out, " comm 0x{local:08x} → 0x{remote:08x}")
    };
    match cm {
        CmMessage::Req(m) => {
            write!(
                out,
                " comm 0x{:08x} QPN 0x{:06x} PSN {}",
                m.local_comm_id,
                m.local_qpn,
                Psn(m.starting_psn)
            )?;
            write_service(out, m.service_id)
        }
        CmMessage::Rep(m) => {
            ids(out, m.local_comm_id, m.remote_comm_id)?;
            write!(
                out,
                " QPN 0x{:06x} PSN {}",
                m.local_qpn,
                Psn(m.starting_psn)
            )
        }
        CmMessage::Rtu(m) | CmMessage::Drep(m) => ids(out, m.local_comm_id, m.remote_comm_id),
        CmMessage::Rej(m) => {
            ids(out, m.local_comm_id, m.remote_comm_id)?;
            write!(out, " rejects {}: ", m.message_name())?;
            match m.reason_name() {
                Some(name) => write!(out, "{name} (reason {})", m.reason),
                None => write!(out, "reason {}", m.reason),
            }
        }
        CmMessage::Mra(m) => {
            ids(out, m.local_comm_id, m.remote_comm_id)?;
            // 4.096 µs × 2^timeout (IBTA 12.6.6).
            let ns = 4096u64 << m.service_timeout.min(31);
            write!(
                out,
                " acknowledges {}, service timeout {} ({}.{:02} ms)",
                m.message_name(),
                m.service_timeout,
                ns / 1_000_000,
                ns % 1_000_000 / 10_000
            )
        }
        CmMessage::Dreq(m) => {
            ids(out, m.local_comm_id, m.remote_comm_id)?;
            write!(out, " QPN 0x{:06x}", m.remote_qpn_eecn)
        }
        CmMessage::SidrReq(m) => {
            write!(out, " request 0x{:08x}", m.request_id)?;
            write_service(out, m.service_id)
        }
        CmMessage::SidrRep(m) => {
            write!(out, " request 0x{:08x} status {}", m.request_id, m.status)?;
            if let Some(name) = m.status_name() {
                write!(out, " ({name})")?;
            }
            write!(out, " QPN 0x{:06x} Q_Key 0x{:08x}", m.qpn, m.qkey)
        }
        CmMessage::Other { .. } => Ok(()),
    }
}

/// `→ service 0x…`, and the port of an IP CM service ID.
fn write_service(out: &mut impl Write, sid: ServiceId) -> io::Result<()> {
    write!(out, " → service 0x{:016x}", sid.0)?;
    match sid.ip_port() {
        Some(port) => write!(out, " port {port}"),
        None => Ok(()),
    }
}

fn write_other(out: &mut impl Write, frame: &Frame) -> io::Result<()> {
    if let Some(mc) = frame.mac_control {
        return match mc {
            MacControl::Pause { quanta } => write!(out, " PAUSE quanta={quanta}"),
            MacControl::Pfc {
                class_enable,
                quanta,
            } => {
                write!(out, " PFC")?;
                for (p, q) in quanta.iter().enumerate() {
                    if class_enable & (1 << p) != 0 {
                        write!(
                            out,
                            " p{p}={}",
                            if *q == 0 {
                                "XON".to_string()
                            } else {
                                format!("XOFF({q})")
                            }
                        )?;
                    }
                }
                Ok(())
            }
            MacControl::Other { opcode } => write!(out, " MAC-control opcode=0x{opcode:04x}"),
        };
    }
    if frame.fragment {
        return write!(out, " IP fragment");
    }
    if let Some(u) = frame.udp {
        // tshark's Len: the payload, not the header's length field.
        let len = u.length.saturating_sub(parsers::udp::UdpHeader::LEN as u16);
        return write!(out, " UDP {} → {} Len={len}", u.src_port, u.dst_port);
    }
    if let Some(summary) = other::summary(frame) {
        return write_summary(out, &summary, frame);
    }
    match (frame.ip, frame.ethertype) {
        (Some(Ip::V4(h)), _) => write_protocol(out, "IPv4 protocol", h.protocol),
        (Some(Ip::V6(h)), _) => write_protocol(out, "IPv6 next header", h.next_header),
        (None, Some(t)) => write!(out, " {} (0x{t:04x})", parsers::ethernet::ethertype_name(t)),
        (None, None) => match frame.link {
            Some(Link::Erf(e)) => write!(
                out,
                " ERF record type {} ({}) not read: rocescope reads type 21 (InfiniBand)",
                e.record_type,
                e.type_name()
            ),
            Some(Link::Infiniband(ib)) => {
                write!(out, " InfiniBand LNH {} (no BTH)", ib.lrh.lnh)
            }
            _ => write!(out, " unsupported link type"),
        },
    }
}

fn write_protocol(out: &mut impl Write, what: &str, p: u8) -> io::Result<()> {
    write!(out, " {what} {p}")?;
    match other::protocol_name(p) {
        Some(name) => write!(out, " ({name})"),
        None => Ok(()),
    }
}

/// TCP, ICMP, ICMPv6, IGMP, ARP, LLDP and LLC frames as tshark's Info column has them.
fn write_summary(out: &mut impl Write, s: &Summary, frame: &Frame) -> io::Result<()> {
    match *s {
        Summary::Tcp(t) => {
            write!(out, " TCP {} → {} [", t.src_port, t.dst_port)?;
            const FLAGS: [&str; 8] = ["FIN", "SYN", "RST", "PSH", "ACK", "URG", "ECE", "CWR"];
            let mut set = FLAGS
                .iter()
                .enumerate()
                .filter(|(i, _)| t.flags & (1 << i) != 0);
            match set.next() {
                None => write!(out, "<None>")?,
                Some((_, first)) => {
                    write!(out, "{first}")?;
                    set.try_for_each(|(_, f)| write!(out, ", {f}"))?;
                }
            }
            // Not the window: tshark shows it scaled by what the SYNs agreed.
            write!(out, "] Len={}", t.payload_len)
        }
        Summary::Icmp { kind, code, echo } => {
            let name = other::icmp_name(kind, code);
            match (echo, frame.ip, name) {
                // As tshark: the name padded to 21, the sequence number read both ways, the TTL.
                (Some(e), Some(Ip::V4(h)), Some(name)) => write!(
                    out,
                    " ICMP {name:<21}id=0x{:04x}, seq={}/{}, ttl={}",
                    e.id,
                    e.seq,
                    e.seq.swap_bytes(),
                    h.ttl
                ),
                (_, _, Some(name)) => write!(out, " ICMP {name}"),
                _ => write!(out, " ICMP type {kind} code {code}"),
            }
        }
        Summary::Icmpv6(i) => write_icmpv6(out, &i),
        Summary::Igmp { kind, group } => write_igmp(out, kind, group),
        Summary::Arp(a) => write_arp(out, &a),
        Summary::Lldp(l) => write_lldp(out, &l),
        Summary::Llc { length, dsap, ssap } => {
            write!(
                out,
                " LLC DSAP 0x{dsap:02x} SSAP 0x{ssap:02x} (802.3 length {length})"
            )?;
            if dsap == 0x42 {
                write!(out, " STP")?;
            }
            Ok(())
        }
    }
}

fn write_igmp(out: &mut impl Write, kind: u8, group: [u8; 4]) -> io::Result<()> {
    let g = Ipv4Addr::from(group);
    match (kind, other::igmp_name(kind)) {
        (0x11, _) if group == [0; 4] => write!(out, " IGMP Membership Query, general"),
        (0x11, _) => write!(out, " IGMP Membership Query, specific for group {g}"),
        (0x12 | 0x16, _) => write!(out, " IGMP Membership Report group {g}"),
        (0x17, _) => write!(out, " IGMP Leave Group {g}"),
        (_, Some(name)) => write!(out, " IGMP {name}"),
        (_, None) => write!(out, " IGMP type 0x{kind:02x}"),
    }
}

/// ARP as tshark words it: probes (no sender address) and announcements (sender = target) apart.
fn write_arp(out: &mut impl Write, a: &other::Arp) -> io::Result<()> {
    let (sender, target) = (Ipv4Addr::from(a.sender_ip), Ipv4Addr::from(a.target_ip));
    match a.op {
        1 if a.sender_ip == [0; 4] => write!(out, " ARP Who has {target}? (ARP Probe)"),
        1 if a.sender_ip == a.target_ip => write!(out, " ARP ARP Announcement for {sender}"),
        1 => write!(out, " ARP Who has {target}? Tell {sender}"),
        2 => match <[u8; 6]>::try_from(a.sender_hw) {
            Ok(mac) => write!(out, " ARP {sender} is at {}", Mac(mac)),
            // As tshark writes an address that is no MAC (IPoIB's 20 bytes): plain hex digits.
            Err(_) => {
                write!(out, " ARP {sender} is at ")?;
                a.sender_hw.iter().try_for_each(|b| write!(out, "{b:02x}"))
            }
        },
        op => write!(out, " ARP opcode {op}"),
    }
}

fn write_echo(out: &mut impl Write, echo: Option<other::Echo>) -> io::Result<()> {
    match echo {
        Some(e) => write!(out, " id=0x{:04x}, seq={}", e.id, e.seq),
        None => Ok(()),
    }
}

fn write_icmpv6(out: &mut impl Write, i: &other::Icmpv6) -> io::Result<()> {
    match other::icmpv6_name(i.kind) {
        Some(name) => write!(out, " ICMPv6 {name}")?,
        None => write!(out, " ICMPv6 type {} code {}", i.kind, i.code)?,
    }
    if let Some(t) = i.target {
        let verb = if i.kind == 135 { " for" } else { "" };
        write!(out, "{verb} {}", Ipv6Addr::from(t))?;
    }
    if i.kind == 136 {
        let flags: Vec<&str> = [(0x80, "rtr"), (0x40, "sol"), (0x20, "ovr")]
            .into_iter()
            .filter(|(bit, _)| i.na_flags & bit != 0)
            .map(|(_, name)| name)
            .collect();
        if !flags.is_empty() {
            write!(out, " ({})", flags.join(", "))?;
        }
    }
    if let Some(mac) = i.link_addr {
        let how = if i.kind == 136 { "is at" } else { "from" };
        write!(out, " {how} {}", Mac(mac))?;
    }
    write_echo(out, i.echo)
}

/// LLDP: the chassis and port IDs (a MAC address as such, a name as text), the time to live, the system.
fn write_lldp(out: &mut impl Write, l: &other::Lldp) -> io::Result<()> {
    write!(out, " LLDP")?;
    // Chassis subtype 4 and port subtype 3 are MAC addresses.
    for (what, id, mac) in [("chassis", l.chassis, 4), ("port", l.port, 3)] {
        let Some((subtype, bytes)) = id else { continue };
        write!(out, " {what} ")?;
        match <[u8; 6]>::try_from(bytes) {
            Ok(m) if subtype == mac => write!(out, "{}", Mac(m))?,
            _ => write_text(out, bytes)?,
        }
    }
    if let Some(ttl) = l.ttl {
        write!(out, " ttl {ttl}")?;
    }
    if let Some(name) = l.system_name {
        write!(out, " system ")?;
        write_text(out, name)?;
    }
    Ok(())
}

/// Printable ASCII as itself, anything else as `.`.
fn write_text(out: &mut impl Write, b: &[u8]) -> io::Result<()> {
    let text: String = b
        .iter()
        .map(|&c| {
            if c.is_ascii_graphic() || c == b' ' {
                c as char
            } else {
                '.'
            }
        })
        .collect();
    write!(out, "{text}")
}
