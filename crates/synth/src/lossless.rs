//! A scenario of the lossless machinery with its ground truth: paced senders that get CNPs and cut their
//! rate as DCQCN does (or ignore them), and a PFC pause storm on their priority.
//!
//! # Model
//!
//! - `senders` requesters, host i+1 (10.0.0.(i+2)) to host 0 (10.0.0.1), each one RC QP pair: 256-byte WRITE
//!   ONLYs (334 bytes on the wire) tagged VLAN 10, PCP 3, ECT(0); an ACK back from host 0 (PCP 3) after every
//!   64th WRITE, 1 µs later. Sender i starts at `i` µs and sends one WRITE every `gap_ns` (a paced rate).
//! - DCQCN, with α at 1 (CNPs often enough that it never decays): CNP j toward sender i passes the capture at
//!   c = start + (j + 1) × 8W + W/2 + i µs, W the window `window_ns`; the WRITE before it (at or before
//!   c − 2 µs) is CE-marked (the notification point answers 2 µs later, one CNP per 8W per QP: the CNP
//!   interval). A reacting sender cuts its rate by α/2 (halves it: the gap doubles) 3 µs after the CNP
//!   passes, and restores it 4W after the CNP (DCQCN's rate increase, in one step). The last `ignoring`
//!   senders keep their rate.
//! - The gaps (`gap_ns`, twice it) divide W, so any window of W at one rate holds exactly W / gap WRITEs; the
//!   window before each CNP and the two after it are each at one rate (the cut falls before the window after
//!   the CNP's, the restoration after the second), so the analyzer's windows measure exactly the model's cut.
//! - PFC storm (`storm_ms` > 0): from (CNPs + 2) × 8W after the start, the switch sends XOFFs of 65535 quanta
//!   (335.5392 µs at 100 Gb/s) for priority 3 every 200 µs for `storm_ms`, then an XON; the senders send
//!   nothing while paused, and go on after the XON for 4W.
//!
//! # Ground truth
//!
//! Per sender: WRITEs, CE marks, CNPs; the reaction as the model made it (every CNP measured; a reacting
//! sender's reduction is 0.5 each time and its time to the reduction, from the CNP to its first WRITE at the
//! lower rate, is known per CNP; an ignoring sender's is 0 and it is `cnp_ignored`); the CNP interval 8W. For
//! priority 3: the XOFFs, the XON, the quanta, the time paused (the storm's length) and the storm.
use std::io::{self, Write};

use parsers::aeth::{Aeth, Syndrome};
use parsers::builder::{Net, RoceFrame, mac_control_frame};
use parsers::mac_control::MacControl;
use parsers::opcode::CNP;
use parsers::reth::Reth;
use parsers::savefile::{self, Resolution};
use parsers::vlan::VlanTag;
use serde_json::{Value, json};

/// What to simulate.
#[derive(Debug, Clone)]
pub struct LosslessParams {
    pub senders: u8,
    /// Of them, the last this many ignore CNPs.
    pub ignoring: u8,
    /// CNPs toward each sender.
    pub cnps: u32,
    /// The rate window the analysis is run with (`--rate-window-us`), nanoseconds.
    pub window_ns: u64,
    /// Between two WRITEs of a sender at its full rate; with twice it, it must divide `window_ns`.
    pub gap_ns: u64,
    /// The PFC storm's length (0: none), milliseconds.
    pub storm_ms: u64,
    /// Time of the first frame, nanoseconds since the Unix epoch.
    pub start_ns: u64,
}

impl Default for LosslessParams {
    fn default() -> Self {
        LosslessParams {
            senders: 4,
            ignoring: 1,
            cnps: 4,
            window_ns: 128_000,
            gap_ns: 1000,
            storm_ms: 120,
            start_ns: 1_767_225_600_000_000_000,
        }
    }
}

/// Each sender as the generator made it.
#[derive(Debug, Clone, Default)]
pub struct SenderTruth {
    pub src: String,
    pub dst: String,
    pub dest_qp: u32,
    /// The QPN CNPs and ACKs go to.
    pub qpn: u32,
    pub writes: u64,
    /// The WRITEs' bytes on the wire.
    pub bytes: u64,
    pub ce: u64,
    pub cnps: u64,
    pub reacts: bool,
    /// Per CNP, from the CNP to the first WRITE at the lower rate (reacting senders), nanoseconds.
    pub times_to_reduction: Vec<u64>,
}

#[derive(Debug, Clone, Default)]
pub struct LosslessTruth {
    pub frames: u64,
    pub first_ts: u64,
    pub last_ts: u64,
    pub senders: Vec<SenderTruth>,
    pub xoff: u64,
    pub xon: u64,
    pub quanta: u64,
    /// The storm: from its first XOFF to its XON, nanoseconds (0: none).
    pub storm_ns: u64,
    /// The rate window the model's figures are exact for.
    pub window_ns: u64,
    /// The RoCE frames' bytes (every one on priority 3).
    pub roce_bytes: u64,
}

const PCP: u8 = 3;
const PAYLOAD: usize = 256;
const STORM_XOFF_EVERY_NS: u64 = 200_000;

fn ip(host: u8) -> [u8; 4] {
    [10, 0, 0, host + 1]
}

fn tagged(mut f: RoceFrame, from: u8, to: u8) -> RoceFrame {
    f.vlans = vec![VlanTag {
        tpid: 0x8100,
        pcp: PCP,
        dei: false,
        vid: 10,
        ethertype: 0,
    }];
    f.eth_src = [0x02, 0, 0, 0, 0, from + 1];
    f.eth_dst = [0x02, 0, 0, 0, 0, to + 1];
    if let Net::V4(h) = &mut f.net {
        h.src = ip(from);
        h.dst = ip(to);
    }
    f
}

/// Sender `i` (host i + 1): its QPN and its responder's.
fn qpns(i: u8) -> (u32, u32) {
    (0x100 + u32::from(i), 0x200 + u32::from(i))
}

/// One sender's frames and truth, from `start` (the capture's origin) to `end`.
struct Sender<'a> {
    p: &'a LosslessParams,
    i: u8,
    frames: &'a mut Vec<(u64, Vec<u8>)>,
    truth: SenderTruth,
    psn: u32,
}

impl Sender<'_> {
    fn write(&mut self, ts: u64, ce: bool) {
        let (_, dest) = qpns(self.i);
        let mut w = tagged(RoceFrame::new(0x0A), self.i + 1, 0);
        w.bth.dest_qp = dest;
        w.bth.psn = self.psn;
        w.ext.reth = Some(Reth {
            va: 0x1000,
            r_key: 0x77,
            dma_len: PAYLOAD as u32,
        });
        w.payload = vec![self.i; PAYLOAD];
        if let Net::V4(h) = &mut w.net {
            h.ecn = if ce { 3 } else { 2 };
        }
        let frame = w.build();
        self.truth.bytes += frame.len() as u64;
        self.frames.push((ts, frame));
        self.truth.writes += 1;
        self.truth.ce += u64::from(ce);
        if self.truth.writes.is_multiple_of(64) {
            let (qpn, _) = qpns(self.i);
            let mut a = tagged(RoceFrame::new(0x11), 0, self.i + 1);
            a.bth.dest_qp = qpn;
            a.bth.psn = self.psn;
            a.ext.aeth = Some(Aeth {
                syndrome: Syndrome::Ack { credits: 31 }.to_byte(),
                msn: self.truth.writes as u32,
            });
            self.frames.push((ts + 1000, a.build()));
        }
        self.psn = (self.psn + 1) & 0xFF_FFFF;
    }

    fn cnp(&mut self, ts: u64) {
        let (qpn, _) = qpns(self.i);
        let mut c = tagged(RoceFrame::new(CNP), 0, self.i + 1);
        c.bth.dest_qp = qpn;
        c.bth.becn = true;
        c.bth.pkey = 0xFFFF;
        if let Net::V4(h) = &mut c.net {
            h.dscp = 48;
        }
        self.frames.push((ts, c.build()));
        self.truth.cnps += 1;
    }

    /// WRITEs from `from` every `gap` up to (not including) `until`; the one at or just before `mark` is
    /// CE-marked. Returns the time of the last.
    fn run(&mut self, from: u64, gap: u64, until: u64, mark: Option<u64>) -> u64 {
        let mut t = from;
        let mut last = from;
        while t < until {
            let ce = mark.is_some_and(|m| t <= m && m < t + gap);
            self.write(t, ce);
            last = t;
            t += gap;
        }
        last
    }
}

/// Generates the capture into `out` and returns the ground truth.
pub fn generate_lossless<W: Write>(p: &LosslessParams, mut out: W) -> io::Result<LosslessTruth> {
    let w = p.window_ns;
    if p.gap_ns == 0 || !w.is_multiple_of(2 * p.gap_ns) || p.ignoring > p.senders {
        return Err(io::Error::other(
            "twice gap_ns must divide window_ns, and ignoring be at most senders",
        ));
    }
    let start = p.start_ns;
    let storm_at = start + (u64::from(p.cnps) + 2) * 8 * w;
    let storm_ns = p.storm_ms * 1_000_000;
    let end = storm_at + storm_ns + 4 * w;
    let mut frames: Vec<(u64, Vec<u8>)> = Vec::new();
    let mut truth = LosslessTruth {
        window_ns: w,
        ..LosslessTruth::default()
    };
    for i in 0..p.senders {
        let reacts = i < p.senders - p.ignoring;
        let mut s = Sender {
            p,
            i,
            frames: &mut frames,
            truth: SenderTruth {
                src: format!("10.0.0.{}", i + 2),
                dst: "10.0.0.1".into(),
                dest_qp: qpns(i).1,
                qpn: qpns(i).0,
                reacts,
                ..Default::default()
            },
            psn: 0,
        };
        sender(&mut s, start + u64::from(i) * 1000, storm_at, reacts);
        if storm_ns > 0 {
            let resume = storm_at + storm_ns;
            s.run(resume, p.gap_ns, end, None);
        }
        truth.senders.push(s.truth);
    }
    truth.roce_bytes = frames.iter().map(|f| f.1.len() as u64).sum();
    if storm_ns > 0 {
        storm(&mut frames, &mut truth, storm_at, storm_ns);
    }
    // In time order; frames of one time in the order made (stable).
    frames.sort_by_key(|f| f.0);
    let mut buf = Vec::new();
    savefile::pcap_file_header(&mut buf, Resolution::Nanos, 65535, 1);
    for (ts, data) in &frames {
        savefile::pcap_record(&mut buf, Resolution::Nanos, *ts, data, data.len() as u32);
    }
    out.write_all(&buf)?;
    out.flush()?;
    truth.frames = frames.len() as u64;
    truth.first_ts = frames.first().map_or(0, |f| f.0);
    truth.last_ts = frames.last().map_or(0, |f| f.0);
    Ok(truth)
}

/// Sender `s` from `first` until `stop`: its CNPs, and its rate cut and restored around each.
fn sender(s: &mut Sender, first: u64, stop: u64, reacts: bool) {
    let (w, g) = (s.p.window_ns, s.p.gap_ns);
    let start = s.p.start_ns;
    let mut t = first;
    for j in 0..u64::from(s.p.cnps) {
        let c = start + (j + 1) * 8 * w + w / 2 + u64::from(s.i) * 1000;
        let cut = c + 3000;
        // At the full rate until the cut, the WRITE before the CNP's 2 µs marked.
        let last = s.run(t, g, cut + 1, Some(c - 2000));
        s.cnp(c);
        if !reacts {
            t = last + g;
            continue;
        }
        // At half the rate from the last full-rate WRITE until the restoration, 4W after the CNP.
        s.truth.times_to_reduction.push(last + 2 * g - c);
        let last = s.run(last + 2 * g, 2 * g, c + 4 * w, None);
        t = last + g;
    }
    s.run(t, g, stop, None);
}

/// The storm: XOFFs every 200 µs from `at` for `nanos`, then the XON.
fn storm(frames: &mut Vec<(u64, Vec<u8>)>, truth: &mut LosslessTruth, at: u64, nanos: u64) {
    let pfc = |q: u16| {
        let mut quanta = [0u16; 8];
        quanta[usize::from(PCP)] = q;
        mac_control_frame(
            [0x02, 0, 0, 0, 0, 0xFE],
            &[],
            MacControl::Pfc {
                class_enable: 1 << PCP,
                quanta,
            },
        )
    };
    let mut t = at;
    while t < at + nanos {
        frames.push((t, pfc(0xFFFF)));
        truth.xoff += 1;
        truth.quanta += 0xFFFF;
        t += STORM_XOFF_EVERY_NS;
    }
    frames.push((at + nanos, pfc(0)));
    truth.xon += 1;
    truth.storm_ns = nanos;
}

impl LosslessTruth {
    /// The truth in the words of the `rocescope analyze --json` report: `flows` (every key a key of the
    /// report's flow, with its value), `pfc` (the report's array) and the event counts.
    pub fn to_json(&self) -> Value {
        let mut flows = Vec::new();
        let mut ignored = 0;
        for s in &self.senders {
            let reduction = if s.reacts { 0.5 } else { 0.0 };
            let times = &s.times_to_reduction;
            let us = |ns: u64| ns as f64 / 1000.0;
            let mean = (!times.is_empty()).then(|| {
                let sum: u64 = times.iter().sum();
                us((sum + times.len() as u64 / 2) / times.len() as u64)
            });
            ignored += u64::from(!s.reacts && s.cnps >= 2);
            // The CNPs' flow: one CNP every 8W toward the sender's QP.
            let interval = (s.cnps >= 2).then(|| us(8 * self.window_ns));
            flows.push(json!({
                "src": s.dst, "dst": s.src, "dest_qp": s.qpn, "cnp": s.cnps,
                "cnp_interval_us": interval.map(|i| json!({"min": i, "mean": i, "max": i})),
                "cnp_reaction": null,
            }));
            flows.push(json!({
                "src": s.src, "dst": s.dst, "dest_qp": s.dest_qp, "packets": s.writes, "bytes": s.bytes,
                "pcp": PCP,
                "ecn": {"ce": s.ce}, "ce_without_cnp": 0, "counters": {"np_cnp_sent": s.cnps},
                "paused_priority": self.xoff > 0,
                "cnp_reaction": {
                    "cnps": s.cnps, "measured": s.cnps,
                    "no_reduction": if s.reacts { 0 } else { s.cnps },
                    "median_reduction": reduction, "worst_reduction": reduction,
                    "mean_time_to_reduction_us": mean,
                    "max_time_to_reduction_us": times.iter().max().map(|t| us(*t)),
                },
            }));
        }
        let duration = self.last_ts - self.first_ts;
        let pfc = if self.xoff > 0 {
            json!([{"priority": PCP, "frames": self.xoff + self.xon, "xoff": self.xoff, "xon": self.xon,
                    "quanta": self.quanta, "pause_us": self.storm_ns as f64 / 1000.0,
                    "longest_pause_us": self.storm_ns as f64 / 1000.0,
                    "paused_fraction": self.storm_ns as f64 / duration as f64}])
        } else {
            json!([])
        };
        json!({
            "capture": {"frames": self.frames},
            "flows": flows,
            "pfc": pfc,
            "priorities": [{"priority": PCP, "flows": 2 * self.senders.len(), "bytes": self.roce_bytes}],
            "events": {"cnp_ignored": ignored, "pause_storm": u64::from(self.storm_ns > 100_000_000),
                       "pause_on_idle_priority": 0, "roce_unprotected": 0, "ce_without_cnp": 0},
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The model's own arithmetic: sender 0's first CNP is at 8W + W/2 = 1088 µs after the start; its last
    /// full-rate WRITE is at 1091 µs (the cut, 3 µs after), the first at half rate at 1093: 5 µs after.
    #[test]
    fn the_first_reduction_is_5_us_after_the_cnp() {
        let p = LosslessParams {
            storm_ms: 0,
            ..LosslessParams::default()
        };
        let mut out = Vec::new();
        let t = generate_lossless(&p, &mut out).unwrap();
        assert_eq!(t.senders[0].times_to_reduction[0], 5000);
        assert_eq!(t.senders[0].cnps, 4);
        assert!(t.senders[3].times_to_reduction.is_empty());
    }
}
