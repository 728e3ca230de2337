//! Captures of why a flow is slow (testdata/analysis/): the share of a requester's life in each state,
//! worked out by hand beside each (`NAME.expected.json`, as in analysis.rs). Times in µs.
use std::path::Path;

use serde_json::{Value, json};

use super::Capture;
use super::analysis::{AB, write};

/// Shares in the JSON's order, 0 for the states not given.
fn shares(given: &[(&str, f64)]) -> Value {
    let mut all = serde_json::Map::new();
    for s in [
        "idle",
        "paused",
        "rate_limited",
        "recovering",
        "rnr_wait",
        "sending",
        "window_limited",
    ] {
        let v = given.iter().find(|(n, _)| *n == s).map_or(0.0, |(_, v)| *v);
        all.insert(s.into(), json!(v));
    }
    Value::Object(all)
}

/// One WRITE at a time (a send queue of depth 1): PSN 0, 1, 2 at 0, 110, 220 µs, each ACKed 100 µs later.
/// From the first WRITE to the last ACK, 320 µs: 300 waiting for the ACK with the one request it ever has
/// outstanding (window-limited, 0.9375), 20 with nothing outstanding (idle, 0.0625).
fn one_at_a_time(dir: &Path) {
    let mut c = Capture::new(1);
    for (psn, at) in [0u64, 110, 220].into_iter().enumerate() {
        c.add_at(at, AB.write(psn as u32).build(), json!({}));
        c.add_at(at + 100, AB.ack(psn as u32, psn as u32 + 1), json!({}));
    }
    let expected = json!({
        "flows": [{"src": "10.0.0.1", "dst": "10.0.0.2", "dest_qp": 0x11, "packets": 3,
            "life": {"seconds": 0.00032, "window": 1, "dominant": "window_limited",
                "shares": shares(&[("window_limited", 0.9375), ("idle", 0.0625)])}}],
        "diagnosis": {},
        "verdict": {"status": "pass"},
    });
    write(dir, "life_one_at_a_time", &c, expected);
}

/// Four WRITEs 10 µs apart (PSN 0-3 at 0-30 µs), one ACK for them at 130; again from 140 (PSN 4-7 at
/// 140-170, ACK at 270). The first ramp (1, 2, 3 outstanding, each the most only until the next: 30 µs)
/// and the second (below the window of 4: 30 µs) are sending, 60; at 4 outstanding, 30-130 and 170-270:
/// 200 window-limited; 130-140 idle. Of 270 µs: 0.7407, 0.2222, 0.037.
fn window_of_four(dir: &Path) {
    let mut c = Capture::new(1);
    for start in [0u64, 140] {
        let first = if start == 0 { 0 } else { 4 };
        for k in 0..4u32 {
            c.add_at(
                start + 10 * u64::from(k),
                AB.write(first + k).build(),
                json!({}),
            );
        }
        c.add_at(start + 130, AB.ack(first + 3, first / 4 + 1), json!({}));
    }
    let expected = json!({
        "flows": [{"src": "10.0.0.1", "dst": "10.0.0.2", "dest_qp": 0x11, "packets": 8,
            "life": {"seconds": 0.00027, "window": 4, "dominant": "window_limited",
                "shares": shares(&[("window_limited", 0.7407), ("sending", 0.2222), ("idle", 0.037)])}}],
        "diagnosis": {},
        "verdict": {"status": "pass"},
    });
    write(dir, "life_window_of_four", &c, expected);
}

pub fn write_all(dir: &Path) {
    one_at_a_time(dir);
    window_of_four(dir);
}
