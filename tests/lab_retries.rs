//! What real NICs legitimately do under loss and reordering, which rocescope's analysis must not call a
//! protocol violation: READs resumed mid-message, atomics resent, requests and responses reordered on the path.
//! On real Soft-RoCE traffic: the lab (lab/README.md) boots its QEMU guest with this test's own `rocescope`
//! binary in it and runs, in one guest, `info` (first: it takes the IPv6 chatter of link-up), then
//!
//! - read_loss_resp: `ib_read_bw -s 8192 -n 32 -t 4 -o 4`, netem loss 4% on eth1 (the READ responses): READs
//!   resumed mid-message (PSN + k, VA + k x MTU, length - k x MTU) and READs resent whole;
//! - read_loss_req: `ib_read_bw -s 4096 -n 64 -t 4 -o 4`, loss 10% on eth0 (the READ requests): NAKs and
//!   READs resent whole;
//! - gen_read_loss: `rocescope gen loopback --op read -s 8192 -n 32 --depth 4`, loss 4% on eth1;
//! - atomic_loss: `ib_atomic_bw -A FETCH_AND_ADD -n 100 -t 4 -o 4`, loss 5% each way: atomics resent with the
//!   same PSN and operands;
//! - write_reorder_req, write_reorder_resp, read_reorder_resp: netem `delay 1ms reorder 25% 50%` on eth0 (the
//!   WRITE requests), on eth1 (the ACKs of one-packet WRITEs), on eth1 (READ responses), nothing dropped.
//!
//! The facts come from the capture with tshark and from the scenario's log, by lab/retry_facts.py, not from
//! rocescope (its docstring defines each): every READ request classified new, whole resend or resumed; atomic
//! resends; per direction the frames out of order (the first copy of a PSN behind a higher one, with its depth),
//! which of them were overtaken on the path (their IPv4 identification says they were sent before the higher
//! one) and which no analysis can take for a resend (`unambiguous`); MSN regressions; NAKs; rxe's hw_counters.
//! The facts are first held against the commands and the counters (so that the interesting thing happened and
//! the capture is complete), then `rocescope analyze --json` and `rocescope dissect -Y` against the facts:
//!
//! - no `psn_reuse`, `ack_out_of_window`, `msn_regression` or `read_response_mismatch` event;
//! - every resumed READ's frame is a retransmission at its PSN (`rocescope.retransmission`), and so is every
//!   request frame with a PSN seen before; every request frame behind the highest PSN consumed is either a
//!   retransmission or `rocescope.class == "reordered"`, and nothing else is;
//! - the requester flow's `psn.resumed_reads` is the number of resumed READs; `psn.retransmitted` +
//!   `psn.reordered` the number of request frames behind the highest PSN consumed;
//! - `psn.reordered`, `reordered_responses` and `reorder_depth_max` between the unambiguous frames and all the
//!   frames out of order (equal to them where the two are the same: see `bounded`); the frames `reordered` in
//!   `-Y` toward the responder `psn.reordered`, less at most those out of order whose resend came later
//!   (`resent_later`: only a later resend tells, after the frame was classed); each `reordered` event
//!   (a note) at a frame out of order with its PSN, highest PSN and depth;
//! - every flow's `state` one of the documented ones, none `violation`; `ok` where nothing was lost, resent
//!   or NAKed.
//!
//! `retries_in_the_soft_roce_lab` runs the lab (about 60 s of emulated guest; it needs what `lab/setup`
//! installs, runs it, and fails with the reason when the lab cannot run: it never skips);
//! `retries_in_testdata` holds the copies in testdata/lab/ (made by lab/make_testdata.py from such a run) to the
//! same facts without the lab, in seconds. Every failed assertion of a capture is gathered and reported
//! together, capture by capture.
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

mod lab_support;
use lab_support::{analyze_json, bin, root, run_lab};

const REQUESTER: &str = "10.0.0.1";
const RESPONDER: &str = "10.0.0.2";

/// A scenario and the READs or atomics its command posts (its `-n`: the `new` ones on the cable).
struct Scenario {
    name: &'static str,
    new_reads: u64,
    new_atomics: u64,
}

const SCENARIOS: [Scenario; 7] = [
    Scenario {
        name: "read_loss_resp",
        new_reads: 32,
        new_atomics: 0,
    },
    Scenario {
        name: "read_loss_req",
        new_reads: 64,
        new_atomics: 0,
    },
    Scenario {
        name: "gen_read_loss",
        new_reads: 32,
        new_atomics: 0,
    },
    Scenario {
        name: "atomic_loss",
        new_reads: 0,
        new_atomics: 100,
    },
    Scenario {
        name: "write_reorder_req",
        new_reads: 0,
        new_atomics: 0,
    },
    Scenario {
        name: "write_reorder_resp",
        new_reads: 0,
        new_atomics: 0,
    },
    Scenario {
        name: "read_reorder_resp",
        new_reads: 32,
        new_atomics: 0,
    },
];

/// The event kinds that say a protocol was violated: none of them is what a NIC does under loss or reordering.
const VIOLATIONS: [&str; 4] = [
    "psn_reuse",
    "ack_out_of_window",
    "msn_regression",
    "read_response_mismatch",
];

/// A flow's `state` (docs/json.md).
const STATES: [&str; 8] = [
    "ok",
    "congested",
    "lossy",
    "stalled",
    "no_response",
    "gave_up",
    "violation",
    "misconnected",
];

/// lab/retry_facts.py CAPTURE LOG: the facts, as JSON.
fn retry_facts(pcap: &Path, log: &Path) -> Value {
    let o = Command::new("python3")
        .arg(root().join("lab/retry_facts.py"))
        .arg(pcap)
        .arg(log)
        .output()
        .expect("run python3 lab/retry_facts.py");
    assert!(
        o.status.success(),
        "lab/retry_facts.py {}: {}",
        pcap.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).expect("retry_facts JSON")
}

/// `rocescope dissect -r CAPTURE -Y FILTER -T fields -e frame.number -e infiniband.bth.psn -e ip.src`:
/// (frame, PSN, source address) per frame shown.
fn dissect(pcap: &Path, filter: &str) -> Vec<(u64, u64, String)> {
    let o = Command::new(bin())
        .args(["dissect", "-r"])
        .arg(pcap)
        .args(["-Y", filter, "-T", "fields", "-e", "frame.number"])
        .args(["-e", "infiniband.bth.psn", "-e", "ip.src"])
        .output()
        .expect("run rocescope dissect");
    assert!(
        o.status.success(),
        "rocescope dissect -Y '{filter}' {}: {}",
        pcap.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let v: Vec<&str> = l.split('\t').collect();
            let n = |i: usize| {
                v.get(i)
                    .and_then(|s| s.parse::<u64>().ok())
                    .unwrap_or_else(|| panic!("dissect -Y '{filter}': line {l:?}"))
            };
            (n(0), n(1), v.get(2).unwrap_or(&"").to_string())
        })
        .collect()
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn arr(v: &Value) -> &Vec<Value> {
    v.as_array().unwrap_or_else(|| panic!("not an array: {v}"))
}

/// The assertions of one capture: every one is tried, the failures gathered.
struct Check {
    name: String,
    failed: Vec<String>,
}

impl Check {
    fn that(&mut self, ok: bool, what: impl FnOnce() -> String) {
        if !ok {
            self.failed.push(what());
        }
    }

    fn eq<T: PartialEq + std::fmt::Debug>(&mut self, got: T, want: T, what: &str) {
        self.that(got == want, || format!("{what}: {got:?}, want {want:?}"));
    }

    /// An analysis figure `got` (None: the analysis does not give it) within what the facts allow: at
    /// least `least` (the frames no analysis can take for anything else) and at most `most` (every frame out
    /// of order on the wire); equal to them where they are the same.
    fn bounded(&mut self, got: Option<u64>, least: u64, most: u64, what: &str) {
        match got {
            None => self
                .failed
                .push(format!("{what}: missing from the analysis")),
            Some(g) if least == most => self.eq(g, least, what),
            Some(g) => self.that((least..=most).contains(&g), || {
                format!("{what}: {g}, want {least}..={most}")
            }),
        }
    }
}

/// One direction of the facts: the source, destination and destination QP of its frames.
fn direction<'a>(f: &'a Value, src: &str) -> Option<&'a Value> {
    arr(&f["directions"]).iter().find(|d| d["src"] == src)
}

fn frames_of(d: Option<&Value>, key: &str) -> BTreeSet<u64> {
    d.map(|d| {
        arr(&d[key])
            .iter()
            .map(|x| x.as_u64().unwrap_or_else(|| u(&x["frame"])))
            .collect()
    })
    .unwrap_or_default()
}

fn out_of_order(d: Option<&Value>) -> Vec<&Value> {
    d.map(|d| arr(&d["out_of_order"]).iter().collect())
        .unwrap_or_default()
}

fn counter(f: &Value, name: &str) -> i64 {
    f["log"]["counters"][name].as_i64().unwrap_or(0)
}

/// netem's (packets sent, dropped) on `dev`, if the scenario had netem there.
fn netem(f: &Value, dev: &str) -> Option<(u64, u64)> {
    arr(&f["log"]["netem"])
        .iter()
        .find(|n| n["dev"] == dev)
        .map(|n| (u(&n["sent"]), u(&n["dropped"])))
}

/// Holds one capture (and its scenario's log) to its facts; returns a summary line and the failures.
fn check(s: &Scenario, pcap: &Path, log: &Path) -> (String, Vec<String>) {
    let f = retry_facts(pcap, log);
    let mut c = Check {
        name: s.name.to_string(),
        failed: Vec::new(),
    };
    let req = direction(&f, REQUESTER);
    let resp = direction(&f, RESPONDER);
    let (Some(reqd), Some(respd)) = (req, resp) else {
        return (
            format!("{}: no traffic both ways", s.name),
            vec![format!("{}: directions {}", s.name, f["directions"])],
        );
    };
    let qp = u(&reqd["dest_qp"]);
    let reads = arr(&f["reads"]);
    let resumed: Vec<&Value> = reads.iter().filter(|r| r["class"] == "resumed").collect();
    let rc = &f["read_counts"];
    let ac = &f["atomic_counts"];
    let seen_before = frames_of(req, "retransmitted");
    let ooo_req = out_of_order(req);
    let ooo_resp = out_of_order(resp);
    let naks = arr(&f["naks"]).len() as u64;
    let drop0 = netem(&f, "eth0").map_or(0, |n| n.1);
    let drop1 = netem(&f, "eth1").map_or(0, |n| n.1);

    // -- the facts against the commands and the counters: the capture holds what the scenario is for, whole
    c.eq(
        u(&rc["new"]),
        s.new_reads,
        "new READ requests (the command's -n)",
    );
    c.eq(
        u(&ac["new"]),
        s.new_atomics,
        "new atomics (the command's -n)",
    );
    c.eq(
        u(&rc["overlap"]),
        0,
        "READs on an earlier READ's PSNs that resume nothing",
    );
    c.eq(
        u(&ac["reuse"]),
        0,
        "atomics on an earlier atomic's PSN with other operands",
    );
    match s.name {
        "read_loss_resp" | "gen_read_loss" => {
            c.that(!resumed.is_empty(), || {
                "no resumed READ: the loss fell only on whole READs".into()
            });
        }
        "read_loss_req" => c.that(naks > 0 && u(&rc["resend"]) > 0, || {
            format!("read_loss_req: {naks} NAKs, {} READs resent", rc["resend"])
        }),
        "atomic_loss" => c.that(u(&ac["resend"]) > 0, || "no atomic resent".into()),
        "write_reorder_req" => c.that(u(&reqd["on_the_path"]) > 0, || {
            "no request reordered on the path".into()
        }),
        "write_reorder_resp" => c.that(
            u(&respd["on_the_path"]) > 0 && !arr(&respd["msn_regressions"]).is_empty(),
            || "no ACK reordered with a lower MSN".into(),
        ),
        "read_reorder_resp" => c.that(u(&respd["on_the_path"]) > 0, || {
            "no READ response reordered on the path".into()
        }),
        _ => unreachable!(),
    }
    if s.name.contains("reorder") {
        c.eq(
            (drop0, drop1),
            (0, 0),
            "netem drops in a reordering scenario",
        );
    }
    // rxe counts what it sent, netem drops some of it before the cable
    let frames_req = u(&reqd["packets"]) as i64;
    let frames_resp = u(&respd["packets"]) as i64;
    c.eq(
        counter(&f, "rxe0 sent_pkts"),
        frames_req + drop0 as i64,
        "rxe0 sent_pkts = request frames + netem's drops on eth0",
    );
    c.eq(
        counter(&f, "rxe1 sent_pkts"),
        frames_resp + drop1 as i64,
        "rxe1 sent_pkts = response frames + netem's drops on eth1",
    );
    if drop0 == 0 && ooo_req.is_empty() {
        // every request reached the responder, in order: those with a PSN seen before are its duplicates (a
        // request reordered makes the responder drop the ones behind it as out of sequence, and their resends
        // are then no duplicates to it)
        c.eq(
            counter(&f, "rxe1 duplicate_request"),
            seen_before.len() as i64,
            "rxe1 duplicate_request = request frames with a PSN seen before",
        );
    }
    if drop1 == 0 {
        // every NAK reached the requester's side of the cable: one per sequence error the responder counted
        c.eq(
            counter(&f, "rxe1 out_of_seq_request"),
            naks as i64,
            "rxe1 out_of_seq_request = NAKs on the cable",
        );
    }

    // -- rocescope against the facts
    let r = analyze_json(pcap);
    for e in arr(&r["events"]) {
        c.that(
            !VIOLATIONS.contains(&e["kind"].as_str().unwrap_or("")),
            || {
                format!(
                    "event {} at frame {} PSN {}: {}",
                    e["kind"], e["frame"], e["psn"], e["message"]
                )
            },
        );
    }
    let flows = arr(&r["flows"]);
    for fl in flows {
        let st = fl["state"].as_str();
        c.that(
            st.is_some_and(|x| STATES.contains(&x) && x != "violation"),
            || {
                format!(
                    "flow {} {} -> {} QP {}: state {}",
                    fl["id"], fl["src"], fl["dst"], fl["dest_qp"], fl["state"]
                )
            },
        );
    }
    let Some(rq) = flows
        .iter()
        .find(|x| x["src"] == REQUESTER && x["dest_qp"] == qp && x["role"] == "requester")
    else {
        c.failed
            .push(format!("no requester flow toward QP {qp:#x}"));
        return (String::new(), c.failed);
    };
    let rs = rq["paired_with"]
        .as_u64()
        .and_then(|id| flows.iter().find(|x| x["id"] == id));
    let nothing_went_wrong =
        drop0 + drop1 == 0 && naks == 0 && seen_before.is_empty() && ooo_req.is_empty();
    if nothing_went_wrong {
        c.eq(
            rq["state"].as_str(),
            Some("ok"),
            "the requester flow's state (nothing lost, resent or NAKed)",
        );
    }

    // retransmissions, frame by frame
    let retx: BTreeMap<u64, u64> = dissect(pcap, "rocescope.retransmission")
        .into_iter()
        .filter(|(_, _, src)| src == REQUESTER)
        .map(|(n, p, _)| (n, p))
        .collect();
    for rd in &resumed {
        let (n, p) = (u(&rd["frame"]), u(&rd["psn"]));
        c.that(retx.get(&n) == Some(&p), || {
            format!(
                "resumed READ frame {n} PSN {p} (frame {}'s + {}, VA {:#x}, length {}) is not a retransmission at its PSN",
                rd["of"], rd["k"], u(&rd["va"]), rd["len"]
            )
        });
    }
    let missing: Vec<u64> = seen_before
        .iter()
        .copied()
        .filter(|n| !retx.contains_key(n))
        .collect();
    c.that(missing.is_empty(), || {
        format!("request frames with a PSN seen before, not retransmissions: {missing:?}")
    });
    let reordered: BTreeMap<u64, String> = dissect(pcap, "rocescope.class == \"reordered\"")
        .into_iter()
        .map(|(n, _, src)| (n, src))
        .collect();
    // every request frame behind the highest PSN consumed is a retransmission or reordered, nothing else is
    let behind: BTreeSet<u64> = seen_before
        .iter()
        .copied()
        .chain(ooo_req.iter().map(|o| u(&o["frame"])))
        .collect();
    let counted: BTreeSet<u64> = retx
        .keys()
        .copied()
        .chain(
            reordered
                .iter()
                .filter(|(_, s)| *s == REQUESTER)
                .map(|(n, _)| *n),
        )
        .collect();
    c.that(behind == counted, || {
        format!(
            "request frames behind the highest PSN consumed (facts) but neither retransmitted nor reordered: {:?}; \
             retransmitted or reordered but not behind it: {:?}",
            behind.difference(&counted).collect::<Vec<_>>(),
            counted.difference(&behind).collect::<Vec<_>>()
        )
    });
    let ooo_all: BTreeMap<u64, &Value> = ooo_req
        .iter()
        .chain(ooo_resp.iter())
        .map(|o| (u(&o["frame"]), *o))
        .collect();
    let stray: Vec<u64> = reordered
        .keys()
        .copied()
        .filter(|n| !ooo_all.contains_key(n))
        .collect();
    c.that(stray.is_empty(), || {
        format!("frames `reordered` that are not out of order on the wire: {stray:?}")
    });
    let unamb: Vec<u64> = ooo_all
        .iter()
        .filter(|(_, o)| o["unambiguous"] == true)
        .map(|(n, _)| *n)
        .filter(|n| !reordered.contains_key(n))
        .collect();
    c.that(unamb.is_empty(), || {
        format!("frames overtaken on the path (ip.id), with nothing that asked for them again, not `reordered`: {unamb:?}")
    });

    // the requester flow's figures
    let psn = &rq["psn"];
    c.eq(
        psn["resumed_reads"].as_u64(),
        Some(resumed.len() as u64),
        "psn.resumed_reads",
    );
    let (retransmitted, reord) = (psn["retransmitted"].as_u64(), psn["reordered"].as_u64());
    c.eq(
        retransmitted.zip(reord).map(|(a, b)| a + b),
        Some(behind.len() as u64),
        "psn.retransmitted + psn.reordered (request frames behind the highest PSN consumed)",
    );
    c.that(
        retransmitted.unwrap_or(0) >= seen_before.len() as u64,
        || {
            format!(
                "psn.retransmitted {retransmitted:?} < {} request frames with a PSN seen before",
                seen_before.len()
            )
        },
    );
    // Out of order on the wire (`most`) and overtaken on the path beyond doubt (`least`) differ where a NAK or
    // a resend came between: a first copy after a NAK for it looks like the go-back-N resend, which the
    // wire alone cannot tell (only the IPv4 identification does), and the resend of a PSN netem dropped before
    // the cable is its first copy; so the analysis' count is held between the two.
    c.bounded(
        reord,
        u(&reqd["unambiguous"]),
        ooo_req.len() as u64,
        "psn.reordered",
    );
    // on whichever flow of the pair the analysis keeps it
    let pair_max = |key: &str| -> Option<u64> {
        [Some(rq), rs]
            .into_iter()
            .flatten()
            .map(|x| x[key].as_u64())
            .reduce(|a, b| match (a, b) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            })
            .flatten()
    };
    c.bounded(
        pair_max("reordered_responses"),
        u(&respd["unambiguous"]),
        ooo_resp.len() as u64,
        "reordered_responses",
    );
    c.bounded(
        pair_max("reorder_depth_max"),
        u(&reqd["unambiguous_depth_max"]).max(u(&respd["unambiguous_depth_max"])),
        u(&reqd["depth_max"]).max(u(&respd["depth_max"])),
        "reorder_depth_max",
    );
    // A frame's class is given as it is read: a first copy that only a later resend shows to have been
    // held up is classed a retransmission, and counted reordered once that resend came.
    let classed = reordered.values().filter(|s| *s == REQUESTER).count() as u64;
    let told_later = arr(&reqd["resent_later"]).len() as u64;
    c.that(
        reord.is_some_and(|n| classed <= n && n - classed <= told_later),
        || {
            format!(
                "frames `reordered` in -Y toward the responder: {classed}, psn.reordered {reord:?} \
                 (at most {told_later} fewer: the frames out of order resent later)"
            )
        },
    );

    // the `reordered` events: notes, at frames out of order, with their PSN, highest PSN and depth
    let events: Vec<&Value> = arr(&r["events"])
        .iter()
        .filter(|e| e["kind"] == "reordered")
        .collect();
    c.that(events.is_empty() == reordered.is_empty(), || {
        format!(
            "{} reordered events, {} frames `reordered`",
            events.len(),
            reordered.len()
        )
    });
    for e in &events {
        let n = e["frame"].as_u64().unwrap_or(0);
        let ok = e["severity"] == "note"
            && ooo_all.get(&n).is_some_and(|o| {
                e["psn"] == o["psn"]
                    && e["detail"]["psn"] == o["psn"]
                    && e["detail"]["highest"] == o["highest"]
                    && e["detail"]["depth"] == o["depth"]
            });
        c.that(ok, || {
            format!(
                "reordered event {e} against the facts {:?}",
                ooo_all.get(&n)
            )
        });
    }

    let summary = format!(
        "{}: {} frames; READs {} new, {} whole resends, {} resumed; atomics {} new, {} resent; {} NAKs; \
         requests: {} with a PSN seen before, {} out of order ({} on the path, {} unambiguous); responses: {} out \
         of order ({} on the path, {} unambiguous), {} MSN regressions; netem dropped {drop0} requests, {drop1} \
         responses; counters {}",
        s.name,
        f["roce_frames"],
        rc["new"],
        rc["resend"],
        rc["resumed"],
        ac["new"],
        ac["resend"],
        naks,
        seen_before.len(),
        ooo_req.len(),
        reqd["on_the_path"],
        reqd["unambiguous"],
        ooo_resp.len(),
        respd["on_the_path"],
        respd["unambiguous"],
        arr(&respd["msn_regressions"]).len(),
        f["log"]["counters"]
    );
    let failed = c
        .failed
        .into_iter()
        .map(|m| format!("{}: {m}", c.name))
        .collect();
    (summary, failed)
}

/// Checks every scenario's capture and log (`files(name)`), then fails with every failure of every one.
fn check_all(files: impl Fn(&str) -> (std::path::PathBuf, std::path::PathBuf)) {
    let mut summaries = Vec::new();
    let mut failed = Vec::new();
    for s in &SCENARIOS {
        let (pcap, log) = files(s.name);
        assert!(
            pcap.exists() && log.exists(),
            "{}: no {} or {}",
            s.name,
            pcap.display(),
            log.display()
        );
        let (summary, f) = check(s, &pcap, &log);
        summaries.push(summary);
        failed.extend(f);
    }
    eprintln!("{}", summaries.join("\n"));
    assert!(
        failed.is_empty(),
        "{} failed assertions:\n{}",
        failed.len(),
        failed.join("\n")
    );
}

#[test]
fn retries_in_the_soft_roce_lab() {
    let t0 = std::time::Instant::now();
    let mut names = vec!["info"];
    names.extend(SCENARIOS.iter().map(|s| s.name));
    let (lab_out, secs) = run_lab("lab-retries", &names);
    // gen's own data check of the READs it resumed
    let report = fs::read_to_string(lab_out.join("gen_read_loss/gen.json"))
        .expect("gen_read_loss: gen.json");
    let report: Value = serde_json::from_str(&report).expect("gen.json");
    assert_eq!(
        report["data_check"]["status"], "passed",
        "gen_read_loss: {}",
        report["data_check"]
    );
    assert_eq!(report["messages"], 32, "gen_read_loss: messages completed");
    check_all(|name| {
        let d = lab_out.join(name);
        (d.join("cable.pcap"), d.join("perftest.log"))
    });
    eprintln!(
        "lab setup + guest run {secs:.1} s, total {:.1} s",
        t0.elapsed().as_secs_f64()
    );
}

#[test]
fn retries_in_testdata() {
    let dir = root().join("testdata/lab");
    check_all(|name| {
        (
            dir.join(format!("{name}.pcap")),
            dir.join(format!("{name}.log")),
        )
    });
}
