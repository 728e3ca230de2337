//! The default view: one tshark-like line per frame.
use std::io::{self, Write};

use parsers::aeth::Syndrome;
use parsers::cm::{CmMessage, ServiceId};
use parsers::frame::{Frame, Roce};
use parsers::icrc::IcrcStatus;
use parsers::mac_control::MacControl;
use parsers::mad::Mad;
use parsers::psn::Shown as Psn;

use super::{Shown, write_addr};

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
    Ok(())
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
        return write!(out, " UDP {} → {} len={}", u.src_port, u.dst_port, u.length);
    }
    match frame.ethertype {
        Some(t) => write!(out, " {} (0x{t:04x})", parsers::ethernet::ethertype_name(t)),
        None => write!(out, " unsupported link type"),
    }
}
