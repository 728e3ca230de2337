//! The default view: one tshark-like line per frame.
use std::io::{self, Write};

use parsers::aeth::Syndrome;
use parsers::frame::Frame;
use parsers::icrc::IcrcStatus;
use parsers::mac_control::MacControl;

use super::{Shown, write_addr};

pub fn write(out: &mut impl Write, shown: &Shown, frame: &Frame) -> io::Result<()> {
    let secs = shown.rel_nanos / 1_000_000_000;
    let micros = (shown.rel_nanos % 1_000_000_000) / 1_000;
    write!(out, "{:>6} {secs:>4}.{micros:06} ", shown.number)?;
    write_addr(out, frame)?;
    match &frame.roce {
        Some(r) => {
            let b = &r.bth;
            write!(
                out,
                " QP=0x{:06x} {} PSN={}",
                b.dest_qp,
                b.op().name(),
                b.psn
            )?;
            for flag in b.flag_names() {
                write!(out, " {flag}")?;
            }
            if frame.ecn() == Some(3) {
                write!(out, " CE")?;
            }
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
                    Syndrome::Ack { credits } => {
                        write!(out, " ACK MSN={} credits={credits}", aeth.msn)?
                    }
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
