//! Captures of the lossless machinery at work or not (testdata/analysis/): PFC pauses over time, storms,
//! priorities that do not match the RoCE traffic's, and senders that do or do not slow down after CNPs; each
//! beside the figures worked out by hand (`NAME.expected.json`, as in analysis.rs).
use std::path::Path;

use parsers::builder::{Net, mac_control_frame};
use parsers::mac_control::MacControl;
use parsers::vlan::VlanTag;
use serde_json::json;

use super::analysis::{AB, write};
use super::{Capture, tag};

const SWITCH: [u8; 6] = [0x02, 0, 0, 0, 0, 0x09];

/// A PFC frame pausing priority `p` for `quanta` (0: XON).
fn pfc(p: usize, quanta: u16) -> Vec<u8> {
    let mut q = [0u16; 8];
    q[p] = quanta;
    mac_control_frame(
        SWITCH,
        &[],
        MacControl::Pfc {
            class_enable: 1 << p,
            quanta: q,
        },
    )
}

/// A 64-byte WRITE_ONLY of PSN `psn` and the ACK of it, tagged `vlans`.
fn write_on(psn: u32, vlans: &[VlanTag]) -> Vec<u8> {
    let mut w = AB.write(psn);
    w.vlans = vlans.to_vec();
    w.build()
}

fn ack_on(psn: u32, vlans: &[VlanTag]) -> Vec<u8> {
    let mut a = AB.aeth(
        0x11,
        psn,
        parsers::aeth::Syndrome::Ack { credits: 31 },
        psn + 1,
    );
    a.vlans = vlans.to_vec();
    a.build()
}

/// WRITEs at 0, 50, ... µs (PSN 0, 1, ...) up to `last_us`, and the ACK of the last at `ack_us`.
fn writes(c: &mut Capture, last_us: u64, ack_us: u64, vlans: &[VlanTag]) {
    let none = json!({});
    for (psn, at) in (0..=last_us).step_by(50).enumerate() {
        c.add_at(at, write_on(psn as u32, vlans), none.clone());
    }
    c.add_at(ack_us, ack_on((last_us / 50) as u32, vlans), none);
}

/// A 300 ms pause storm on priority 3, which the RoCE traffic (PCP 3) is on: ten WRITEs 100 µs apart and
/// their ACK, then 1200 XOFFs of 65535 quanta (335.5392 µs at 100 Gb/s) 250 µs apart from 1000 µs (each
/// replaces the pause in effect before it runs out), an XON at 301000 µs, a WRITE and its ACK after.
fn pause_storm(dir: &Path) {
    let mut c = Capture::new(1);
    let none = json!({});
    let p3 = [tag(0x8100, 3, false, 10)];
    for psn in 0..10u32 {
        c.add_at(u64::from(psn) * 100, write_on(psn, &p3), none.clone());
    }
    c.add_at(950, ack_on(9, &p3), none.clone());
    for k in 0..1200u64 {
        c.add_at(1000 + 250 * k, pfc(3, 0xFFFF), none.clone());
    }
    c.add_at(301_000, pfc(3, 0), none.clone());
    c.add_at(301_500, write_on(10, &p3), none.clone());
    c.add_at(301_600, ack_on(10, &p3), none.clone());
    // Paused from the first XOFF (frame 12, 1000 µs) to the XON (301000 µs): 300000 µs without a break, past
    // the 100 ms threshold. 1200 x 65535 = 78642000 quanta. The capture lasts 301600 µs: 300000 / 301600.
    // By bucket: 1024 buckets of 100 µs do not hold 301 ms, nor of 200; of 400 µs they do: 800-1200 paused
    // from 1000 (0.5), 1200-300800 wholly (buckets 3-751), 300800-301200 until 301000 (0.5): 753 buckets.
    let mut by_bucket = vec![0.0, 0.0, 0.5];
    by_bucket.extend([1.0; 749]);
    by_bucket.push(0.5);
    // Its life, 301600 µs from the first WRITE to the last ACK: each WRITE of the first ten a new most
    // outstanding (0-900 µs sending), 900-950 at the window of 10; from the ACK at 950 nothing outstanding
    // until 301500 but 300000 µs of it paused (550 idle); 301500-301600 one outstanding, below the window.
    let life = json!({"seconds": 0.3016, "window": 10, "dominant": "paused",
        "shares": {"paused": 0.9947, "sending": 0.0033, "window_limited": 0.0002, "idle": 0.0018,
            "rate_limited": 0.0, "recovering": 0.0, "rnr_wait": 0.0}});
    write(
        dir,
        "pause_storm",
        &c,
        json!({
            "capture": {"frames": 1214, "roce_frames": 13, "other_frames": 1201},
            "pfc": [{"priority": 3, "frames": 1201, "xoff": 1200, "xon": 1, "quanta": 78_642_000u64,
                     "pause_us": 300_000.0, "longest_pause_us": 300_000.0,
                     "paused_fraction": 300_000.0 / 301_600.0,
                     "paused_series": {"bucket_us": 400.0, "fraction": by_bucket}}],
            "flows": [{"src": "10.0.0.1", "dst": "10.0.0.2", "dest_qp": 0x11, "pcp": 3, "paused_priority": true,
                       "life": life}],
            "event_counts": {"pause_storm": 1, "pause": 1, "pause_on_idle_priority": 0, "roce_unprotected": 0},
            "events": [
                {"kind": "pause_storm", "frame": 12, "detail": {"priority": 3, "duration_s": 0.3, "xoff": 1200}},
                {"kind": "pause", "frame": 12, "detail": {"priority": 3, "frames": 1200, "pause_s": 0.3}}
            ],
            "events_text": ["PFC pause storm on priority 3: paused without a break for 300.000 ms by 1200 XOFF \
                             frames (a stuck receiver or a PFC deadlock: traffic on it is halted, and the pauses \
                             spread upstream)"]
        }),
    );
}

/// "PFC enabled on priority 3, RoCE sent on priority 0": WRITEs tagged PCP 0 every 50 µs (0-450) and
/// their ACK at 500 µs, while PFC pauses priority 3: 1000 quanta (5.12 µs) at 110 µs, renewed at 112 µs
/// (until 117.12 µs), and 65535 quanta at 305 µs, still in effect when the capture ends at 500 µs.
fn pause_wrong_priority(dir: &Path) {
    let mut c = Capture::new(1);
    let none = json!({});
    writes(&mut c, 450, 500, &[tag(0x8100, 0, false, 10)]);
    c.add_at(110, pfc(3, 1000), none.clone());
    c.add_at(112, pfc(3, 1000), none.clone());
    c.add_at(305, pfc(3, 0xFFFF), none.clone());
    c.frames.sort_by_key(|f| f.0);
    // Frames by time: WRITEs at 0, 50, 100 (1-3), XOFFs at 110, 112 (4, 5), WRITEs 150-300 (6-9), the XOFF
    // at 305 (10), WRITEs 350-450 (11-13), the ACK (14). Paused 110 to 117.12 (the XOFF at 112 replaces the
    // one at 110: 7.12 µs, not 2 x 5.12) and 305 to the end, 500 (195 µs): 202.12 µs of 500.
    // Priority 0 carries 10 tagged WRITEs (142 bytes) and the tagged ACK (66): 1486 bytes, 640 of payload,
    // over 500 µs: 1486 x 8 / 500000 ns = 0.023776 Gb/s, goodput 0.01024.
    write(
        dir,
        "pause_wrong_priority",
        &c,
        json!({
            "capture": {"frames": 14, "roce_frames": 11, "other_frames": 3},
            "pfc": [{"priority": 3, "frames": 3, "xoff": 3, "xon": 0, "quanta": 67535,
                     "pause_us": 202.12, "longest_pause_us": 195.0, "paused_fraction": 202.12 / 500.0}],
            "flows": [
                {"src": "10.0.0.1", "dst": "10.0.0.2", "dest_qp": 0x11, "pcp": 0, "paused_priority": false},
                {"src": "10.0.0.2", "dst": "10.0.0.1", "dest_qp": 0x22, "pcp": 0, "paused_priority": false}
            ],
            "priorities": [{"priority": 0, "flows": 2, "bytes": 1486, "goodput_bytes": 640, "gbps": 0.023776,
                            "goodput_gbps": 0.01024, "link_share": 0.00023776}],
            "event_counts": {"pause_on_idle_priority": 1, "roce_unprotected": 2, "pause_storm": 0},
            "events": [
                {"kind": "pause_on_idle_priority", "frame": 4,
                 "detail": {"priority": 3, "xoff": 3, "pause_s": 0.000202, "roce_priorities": [0]}},
                {"kind": "roce_unprotected", "frame": 1,
                 "detail": {"priority": 0, "dscp": null, "paused_priorities": [3]}},
                {"kind": "roce_unprotected", "frame": 14,
                 "detail": {"priority": 0, "dscp": null, "paused_priorities": [3]}}
            ],
            "events_text": ["RoCE on priority 0 (VLAN PCP 0), which no PFC frame paused while priority 3 was \
                             paused: this traffic is not lossless (PFC enabled on another priority than RoCE is \
                             sent on)"]
        }),
    );
}

/// Untagged RoCE (DSCP 26) while PFC pauses priority 3 (1000 quanta, 5.12 µs, at 110 µs): with
/// `--dscp-map 26=0,48=6` the switch puts it on priority 0, which is never paused.
fn dscp_unprotected(dir: &Path) {
    let mut c = Capture::new(1);
    writes(&mut c, 450, 500, &[]);
    c.add_at(110, pfc(3, 1000), json!({}));
    c.frames.sort_by_key(|f| f.0);
    write(
        dir,
        "dscp_unprotected",
        &c,
        json!({
            "args": ["--dscp-map", "26=0,48=6"],
            "config": {"dscp_map": {"26": 0, "48": 6}},
            "pfc": [{"priority": 3, "frames": 1, "xoff": 1, "xon": 0, "quanta": 1000, "pause_us": 5.12,
                     "longest_pause_us": 5.12, "paused_fraction": 5.12 / 500.0}],
            "flows": [{"src": "10.0.0.1", "dst": "10.0.0.2", "dest_qp": 0x11, "pcp": null, "dscp": 26,
                       "paused_priority": false}],
            "event_counts": {"pause_on_idle_priority": 1, "roce_unprotected": 2},
            "events": [
                {"kind": "pause_on_idle_priority", "frame": 4,
                 "detail": {"priority": 3, "xoff": 1, "roce_priorities": [0]}},
                {"kind": "roce_unprotected", "frame": 1,
                 "detail": {"priority": 0, "dscp": 26, "paused_priorities": [3]}}
            ],
            "events_text": ["RoCE on priority 0 (DSCP 26 by --dscp-map), which no PFC frame paused while \
                             priority 3 was paused: this traffic is not lossless (PFC enabled on another \
                             priority than RoCE is sent on)"]
        }),
    );
}

/// An XON ends a pause early: WRITEs on PCP 3 every 50 µs (0-350), the ACK at 400 µs; XOFF 65535 quanta at
/// 105 µs (until 440.5392) ended by an XON at 155; XOFF 100 quanta (0.512 µs) at 205 runs out by itself;
/// the XON at 305 finds no pause in effect.
fn xon_ends_pause(dir: &Path) {
    let mut c = Capture::new(1);
    let none = json!({});
    writes(&mut c, 350, 400, &[tag(0x8100, 3, false, 10)]);
    for (at, q) in [(105, 0xFFFF), (155, 0), (205, 100), (305, 0)] {
        c.add_at(at, pfc(3, q), none.clone());
    }
    c.frames.sort_by_key(|f| f.0);
    // 50 + 0.512 = 50.512 µs paused of 400; 65535 + 100 = 65635 quanta. By 100 µs bucket (the rate
    // window): none in 0-100, 105-155 in 100-200 (0.5), 205-205.512 in 200-300 (0.00512).
    write(
        dir,
        "xon_ends_pause",
        &c,
        json!({
            "pfc": [{"priority": 3, "frames": 4, "xoff": 2, "xon": 2, "quanta": 65635, "pause_us": 50.512,
                     "longest_pause_us": 50.0, "paused_fraction": 50.512 / 400.0,
                     "paused_series": {"bucket_us": 100.0, "fraction": [0.0, 0.5, 0.00512]}}],
            "flows": [{"src": "10.0.0.1", "dst": "10.0.0.2", "dest_qp": 0x11, "pcp": 3, "paused_priority": true}],
            "event_counts": {"pause": 1, "pause_storm": 0, "pause_on_idle_priority": 0, "roce_unprotected": 0},
            "events": [{"kind": "pause", "frame": 4, "detail": {"priority": 3, "frames": 2, "pause_s": 0.00005}}],
            "verdict": {"status": "pass"}
        }),
    );
}

/// A requester sending 64-byte WRITEs (138 bytes on the wire) at `times` (PSN 0, 1, ...), CE marks on the
/// WRITEs at 249 and 648 µs and a CNP back toward its QP 1 or 2 µs after each (250, 650), an ACK of PSN 1 at
/// 1 µs (the pairing) and of the last PSN 1 µs after the last WRITE.
fn cnp_sender(times: &[u64]) -> Capture {
    let mut c = Capture::new(1);
    let none = json!({});
    for (psn, &at) in times.iter().enumerate() {
        let mut w = AB.write(psn as u32);
        if let Net::V4(ip) = &mut w.net {
            ip.ecn = if at == 249 || at == 648 { 3 } else { 2 };
        }
        c.add_at(at, w.build(), none.clone());
    }
    for at in [250, 650] {
        let mut cnp = AB.frame(false, 0x81, 0);
        cnp.bth.becn = true;
        c.add_at(at, cnp.build(), none.clone());
    }
    c.add_at(1, AB.ack(1, 2), none.clone());
    let last = times.len() as u32 - 1;
    c.add_at(times[last as usize] + 1, AB.ack(last, last + 1), none);
    // Stable: a WRITE before the ACK or CNP of the same microsecond.
    c.frames.sort_by_key(|f| f.0);
    c
}

/// A sender that halves its rate within 50 µs of each CNP (windows of 100 µs, the default): a WRITE every
/// µs from 0 to 280, every 2 µs from 282 to 680, every 4 µs from 684 to 1000.
fn cnp_halving(dir: &Path) {
    let times: Vec<u64> = (0..=280)
        .chain((282..=680).step_by(2))
        .chain((684..=1000).step_by(4))
        .collect();
    // 281 + 200 + 80 = 561 WRITEs.
    assert_eq!(times.len(), 561);
    let c = cnp_sender(&times);
    // CNP at 250 (window 2, 200-299): before, window 1 (100-199) holds 100 WRITEs (13800 bytes); after,
    // windows 3 (300-399) and 4 (400-499) hold the even µs, 50 each (6900): 1 - 6900/13800 = 0.5. The first
    // WRITE at the lower rate is at 282 (gap 2 µs: 69 bytes/µs, below 0.9 x 138): 32 µs after the CNP.
    // CNP at 650 (window 6): before, window 5 holds 50 (6900); after, windows 7 (700, 704, ... 796) and 8
    // hold 25 each (3450): 0.5 again. First at 684 (gap 4: 34.5 bytes/µs, below 0.9 x 69): 34 µs.
    // Mean time 33 µs, max 34. The CNPs are 400 µs apart. Both CE marks are answered 1-2 µs later.
    // Throughput: 561 x 138 = 77418 bytes from 0 to 1000 µs: 77418 x 8 / 1e6 ns = 0.619344 Gb/s, of
    // 100 Gb/s; goodput 561 x 64 = 35904 bytes: 0.287232 Gb/s. The busiest window is window 0 (or 1): 100
    // WRITEs, 13800 bytes in 100 µs: 1.104 Gb/s. The reverse flow: 2 ACKs (62 bytes) and 2 CNPs (74): 272.
    // Untagged, no --dscp-map: no known priority, 77690 bytes over the capture's 1001 µs.
    write(
        dir,
        "cnp_halving",
        &c,
        json!({
            "config": {"rate_window_us": 100},
            "flows": [
                {"src": "10.0.0.1", "dst": "10.0.0.2", "dest_qp": 0x11, "packets": 561, "ecn": {"ce": 2},
                 "ce_without_cnp": 0, "counters": {"np_cnp_sent": 2},
                 "cnp_reaction": {"cnps": 2, "measured": 2, "no_reduction": 0, "median_reduction": 0.5,
                                  "worst_reduction": 0.5, "mean_time_to_reduction_us": 33.0,
                                  "max_time_to_reduction_us": 34.0},
                 "throughput": {"gbps": 0.619344, "goodput_gbps": 0.287232, "link_share": 0.00619344,
                                "peak_gbps": 1.104, "peak_link_share": 0.01104}},
                {"src": "10.0.0.2", "dst": "10.0.0.1", "dest_qp": 0x22, "cnp": 2, "cnp_reaction": null,
                 "cnp_interval_us": {"min": 400.0, "mean": 400.0, "max": 400.0}}
            ],
            "priorities": [{"priority": null, "flows": 2, "bytes": 77690, "goodput_bytes": 35904,
                            "gbps": 77690.0 * 8.0 / 1_001_000.0, "goodput_gbps": 35904.0 * 8.0 / 1_001_000.0,
                            "link_share": 77690.0 * 8.0 / 1_001_000.0 / 100.0}],
            "event_counts": {"cnp_ignored": 0, "ce_without_cnp": 0}
        }),
    );
}

/// A sender that ignores CNPs: a WRITE every µs from 0 to 1000, the same CE marks and CNPs.
fn cnp_ignored(dir: &Path) {
    let times: Vec<u64> = (0..=1000).collect();
    let c = cnp_sender(&times);
    // Both CNPs: 100 WRITEs in the window before and in each of the two after: no reduction (0), two
    // measured, both with none: cnp_ignored, at the first CNP. Frames: WRITEs at 0 and 1 (1, 2), the ACK
    // at 1 (3), WRITEs 2-250 (4-252), the CNP at 250: frame 253.
    write(
        dir,
        "cnp_ignored",
        &c,
        json!({
            "flows": [
                {"src": "10.0.0.1", "dst": "10.0.0.2", "dest_qp": 0x11, "packets": 1001,
                 "cnp_reaction": {"cnps": 2, "measured": 2, "no_reduction": 2, "median_reduction": 0.0,
                                  "worst_reduction": 0.0, "mean_time_to_reduction_us": null,
                                  "max_time_to_reduction_us": null}}
            ],
            "event_counts": {"cnp_ignored": 1},
            "events": [{"kind": "cnp_ignored", "frame": 253,
                        "detail": {"cnps": 2, "measured": 2, "no_reduction": 2}}],
            "events_text": ["CNPs ignored: the sender kept its rate after 2 of the 2 CNPs whose reaction was \
                             measured (2 reached it): congestion control is off or not reacting on this QP \
                             (rp_cnp_ignored on mlx5)"]
        }),
    );
}

pub fn write_all(dir: &Path) {
    cnp_halving(dir);
    cnp_ignored(dir);
    pause_storm(dir);
    pause_wrong_priority(dir);
    dscp_unprotected(dir);
    xon_ends_pause(dir);
}
