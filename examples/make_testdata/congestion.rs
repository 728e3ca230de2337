//! Captures of the lossless machinery at work or not (testdata/analysis/): PFC pauses over time, storms,
//! priorities that do not match the RoCE traffic's, and senders that do or do not slow down after CNPs; each
//! beside the figures worked out by hand (`NAME.expected.json`, as in analysis.rs).
use std::path::Path;

use parsers::builder::mac_control_frame;
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
    write(
        dir,
        "pause_storm",
        &c,
        json!({
            "capture": {"frames": 1214, "roce_frames": 13, "other_frames": 1201},
            "pfc": [{"priority": 3, "frames": 1201, "xoff": 1200, "xon": 1, "quanta": 78_642_000u64,
                     "pause_us": 300_000.0, "longest_pause_us": 300_000.0,
                     "paused_fraction": 300_000.0 / 301_600.0}],
            "flows": [{"src": "10.0.0.1", "dst": "10.0.0.2", "dest_qp": 0x11, "pcp": 3, "paused_priority": true}],
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
    // 50 + 0.512 = 50.512 µs paused of 400; 65535 + 100 = 65635 quanta.
    write(
        dir,
        "xon_ends_pause",
        &c,
        json!({
            "pfc": [{"priority": 3, "frames": 4, "xoff": 2, "xon": 2, "quanta": 65635, "pause_us": 50.512,
                     "longest_pause_us": 50.0, "paused_fraction": 50.512 / 400.0}],
            "flows": [{"src": "10.0.0.1", "dst": "10.0.0.2", "dest_qp": 0x11, "pcp": 3, "paused_priority": true}],
            "event_counts": {"pause": 1, "pause_storm": 0, "pause_on_idle_priority": 0, "roce_unprotected": 0},
            "events": [{"kind": "pause", "frame": 4, "detail": {"priority": 3, "frames": 2, "pause_s": 0.00005}}],
            "verdict": {"status": "pass"}
        }),
    );
}

pub fn write_all(dir: &Path) {
    pause_storm(dir);
    pause_wrong_priority(dir);
    dscp_unprotected(dir);
    xon_ends_pause(dir);
}
