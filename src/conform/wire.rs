//! What the judge reads: the RoCEv2 packets of a capture, each reduced to the facts a rule is judged on, and
//! the actions of `inject`'s log. Both bounded: a scenario's run is small, a file that is not is refused.
use std::io::{BufRead, BufReader, Read};
use std::net::Ipv4Addr;
use std::path::Path;

use parsers::frame::{Ip, parse_frame};
use parsers::icrc::IcrcStatus;
use serde::Deserialize;

use crate::source::{Next, SourceError, open_point};

/// The most packets a scenario's capture may hold.
pub const PACKETS_MAX: usize = 1 << 20;
/// The most actions read from a log, and the longest line.
pub const ACTIONS_MAX: usize = 1 << 16;
const LINE_MAX: u64 = 64 * 1024;

/// Why a capture or a log could not be read.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    #[error(transparent)]
    Source(#[from] SourceError),
    #[error("cannot analyse the capture")]
    Analysis(#[from] crate::pipeline::PipelineError),
    #[error("{file}: more than {PACKETS_MAX} RoCE packets: not one scenario's run")]
    TooLarge { file: String },
    #[error("cannot read the log {file}")]
    Log {
        file: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{file} line {line}: not an action of `rocescope inject`'s log ({reason})")]
    BadAction {
        file: String,
        line: usize,
        reason: String,
    },
}

/// A RoCEv2 packet over IPv4, as the judge sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet {
    /// Its frame number in the capture (from 1).
    pub frame: u64,
    pub ts: u64,
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub ip_id: u16,
    pub ecn: u8,
    pub opcode: u8,
    pub dest_qp: u32,
    pub psn: u32,
    /// The AETH's syndrome, if one.
    pub syndrome: Option<u8>,
    /// The RETH's virtual address and DMA length, if one.
    pub reth: Option<(u64, u32)>,
    pub payload_len: usize,
    /// The ICRC was checked and is wrong.
    pub icrc_bad: bool,
}

/// The RoCEv2-over-IPv4 packets of `file`, in capture order.
pub fn packets(file: &Path) -> Result<Vec<Packet>, WireError> {
    let mut source = open_point(file)?;
    let cfg = parsers::Config::default();
    let mut out = Vec::new();
    let mut frame = 0;
    loop {
        let packet = match source.next()? {
            Next::Packet { packet, .. } => packet,
            Next::Idle => continue,
            Next::End => break,
        };
        frame += 1;
        let f = parse_frame(packet.linktype, packet.data, packet.orig_len as usize, &cfg);
        let (Some(Ip::V4(ip)), Some(r)) = (f.ip, f.roce) else {
            continue;
        };
        if out.len() == PACKETS_MAX {
            return Err(WireError::TooLarge {
                file: file.display().to_string(),
            });
        }
        out.push(Packet {
            frame,
            ts: packet.ts_nanos,
            src: Ipv4Addr::from(ip.src),
            dst: Ipv4Addr::from(ip.dst),
            ip_id: ip.id,
            ecn: ip.ecn,
            opcode: r.bth.opcode,
            dest_qp: r.bth.dest_qp,
            psn: r.bth.psn,
            syndrome: r.ext.aeth.map(|a| a.syndrome),
            reth: r.ext.reth.map(|h| (h.va, h.dma_len)),
            payload_len: r.payload_len.unwrap_or(0),
            icrc_bad: matches!(r.icrc_status, Some(IcrcStatus::Bad { .. })),
        });
    }
    Ok(out)
}

/// What a flow's sender did after the CNPs that reached it, as `analyze` measures it (its `cnp_reaction`,
/// docs/analysis.md).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SenderReaction {
    pub cnps: u64,
    /// Of them, those whose reaction could be measured (enough packets around them).
    pub measured: u64,
    /// Measured, with no visible reduction.
    pub no_reduction: u64,
    /// The median reduction of the rate, 0 to 1.
    pub median: Option<f64>,
    /// The longest time from a CNP to the first packet at the reduced rate, nanoseconds.
    pub time_max: Option<u64>,
}

/// The sender's reaction in `file` for the flow from `src` to `dst`'s QP `dest_qp`, the analysis of the
/// whole capture at its defaults; `None` when no CNP reached that sender.
pub fn sender_reaction(
    file: &Path,
    src: Ipv4Addr,
    dst: Ipv4Addr,
    dest_qp: u32,
) -> Result<Option<SenderReaction>, WireError> {
    let mut source = open_point(file)?;
    let run = crate::pipeline::run(
        &mut *source,
        &crate::pipeline::Config::default(),
        &mut (),
        (),
    )?;
    let key = crate::analysis::flow::FlowKey {
        src: parsers::frame::Addr::V4(src.octets()),
        dst: parsers::frame::Addr::V4(dst.octets()),
        dest_qp,
    };
    let flow = run.engine.flows.iter().find(|f| f.key == key);
    Ok(flow
        .and_then(|f| f.reaction.as_deref())
        .map(|r| SenderReaction {
            cnps: r.cnps,
            measured: r.measured,
            no_reduction: r.no_reduction,
            median: r.median(),
            time_max: (r.times > 0).then_some(r.time_max),
        }))
}

/// One action of `rocescope inject`'s log (docs/inject.md, "The log").
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Action {
    /// Seconds since 1970, when the injector decided: nanoseconds here.
    #[serde(rename = "time", deserialize_with = "nanos")]
    pub ts: u64,
    pub rule: usize,
    pub text: String,
    pub action: String,
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub ip_id: u16,
    pub dest_qp: u32,
    pub psn: u32,
    pub opcode: u8,
    pub class: String,
}

fn nanos<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    let s = f64::deserialize(d)?;
    if !(s.is_finite() && s >= 0.0) {
        return Err(serde::de::Error::custom("time is not a time"));
    }
    Ok((s * 1e9) as u64)
}

/// The actions of the log `file` (its summary line left out).
pub fn actions(file: &Path) -> Result<Vec<Action>, WireError> {
    let name = file.display().to_string();
    let f = std::fs::File::open(file).map_err(|source| WireError::Log {
        file: name.clone(),
        source,
    })?;
    actions_from(BufReader::new(f), &name)
}

pub fn actions_from(mut r: impl BufRead, name: &str) -> Result<Vec<Action>, WireError> {
    let mut out = Vec::new();
    let mut line = String::new();
    for n in 1.. {
        line.clear();
        let read = (&mut r)
            .take(LINE_MAX)
            .read_line(&mut line)
            .map_err(|source| WireError::Log {
                file: name.to_string(),
                source,
            })?;
        if read == 0 {
            break;
        }
        let bad = |reason: String| WireError::BadAction {
            file: name.to_string(),
            line: n,
            reason,
        };
        if !line.ends_with('\n') && read as u64 == LINE_MAX {
            return Err(bad(format!("longer than {LINE_MAX} bytes")));
        }
        let text = line.trim();
        if text.is_empty() || text.starts_with("{\"summary\"") {
            continue;
        }
        if out.len() == ACTIONS_MAX {
            return Err(bad(format!("more than {ACTIONS_MAX} actions")));
        }
        out.push(serde_json::from_str(text).map_err(|e| bad(e.to_string()))?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_is_its_actions() {
        let log = concat!(
            r#"{"time":1767225600.5,"rule":0,"text":"req psn=+5 drop","action":"drop","src":"10.0.0.1","dst":"10.0.0.2","ip_id":7,"dest_qp":17,"psn":105,"opcode":10,"class":"request","qp":0,"resend":0,"psn_from_first":5}"#,
            "\n",
            r#"{"summary":{"seen":40,"roce":40,"matched":1,"acted":1,"by_rule":[1]}}"#,
            "\n"
        );
        let a = actions_from(log.as_bytes(), "log").unwrap();
        assert_eq!(a.len(), 1);
        assert_eq!(a[0].ts, 1_767_225_600_500_000_000);
        assert_eq!(
            (a[0].psn, a[0].dest_qp, a[0].action.as_str()),
            (105, 17, "drop")
        );
        let bad = actions_from("{\"time\":-1}\n".as_bytes(), "log").unwrap_err();
        assert!(
            bad.to_string().starts_with("log line 1: not an action"),
            "{bad}"
        );
        let long = "x".repeat(LINE_MAX as usize + 10);
        assert!(actions_from(long.as_bytes(), "log").is_err());
    }
}
