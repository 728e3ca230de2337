//! A pair's verdict: what its run did (`Outcome`, from the requester's agent) against the expectations
//! (`Expect`), with the reasons it failed.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// What one pair's run did, as the requester's agent reports it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// Why the run did not happen or stopped early (an agent out of reach, a completion error, ...).
    pub error: Option<String>,
    pub messages: u64,
    pub bytes: u64,
    pub seconds: f64,
    pub gbps: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
    pub completion_errors: u64,
    /// The data check's status: passed, failed or incomplete.
    pub data_check: String,
    /// The requester port's link speed (its sysfs `rate`), when the device gives one.
    pub link_gbps: Option<f64>,
    /// What the requester's and the responder's ports counted over the run (the hw_counters and counters
    /// that moved). A device in several pairs at a time counts them all: see `shared`.
    pub requester_counters: BTreeMap<String, u64>,
    pub responder_counters: BTreeMap<String, u64>,
    /// The requester's or the responder's host ran other pairs at the same time (its counters cover them).
    pub shared: bool,
    /// The requester's device stamps completions with its clock (`ibv_query_device_ex`'s
    /// completion_timestamp_mask not 0), which would take the hosts' delay out of an RTT; null when unknown.
    #[serde(default)]
    pub completion_timestamps: Option<bool>,
    /// `gen agent --capture IFACE`: the fabric check of the pair's flows on the requester's interface.
    #[serde(default)]
    pub capture: Option<CaptureCheck>,
}

/// The fabric check of one pair (`gen --capture`'s, docs/json.md): `pass` when every flow of the run is on
/// the wire with its PSNs and no gap, NAK or retransmission.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CaptureCheck {
    pub interface: String,
    pub pass: bool,
    pub reasons: Vec<String>,
    pub gap_events: u64,
    pub retransmitted: u64,
    pub naks: u64,
    pub ce: u64,
    pub cnp: u64,
    pub capture_dropped: u64,
}

/// What every pair must do.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Expect {
    pub gbps: Option<Speed>,
    pub p99_us: Option<f64>,
    /// No retransmission, NAK, timeout or CE mark, as the two ports' counters show them.
    pub lossless: bool,
    /// The fewest messages a pair must complete (probes: half of what a window at the probe rate holds).
    pub min_messages: Option<u64>,
}

/// `--expect-gbps`: Gb/s, or a share of the requester's link speed (`90%`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Speed {
    Gbps(f64),
    LinkShare(f64),
}

/// The counters that say a packet was lost, resent, refused or marked, by the kernel's names (rxe's and
/// mlx5's), and which end counts them.
pub const LOSS_COUNTERS: [(End, &str, &str); 13] = [
    (
        End::Requester,
        "completer_retry_err",
        "go-back-N resend rounds (rxe)",
    ),
    (
        End::Requester,
        "rcvd_seq_err",
        "PSN sequence error NAKs received (rxe)",
    ),
    (
        End::Requester,
        "retry_exceeded_err",
        "retries used up (rxe)",
    ),
    (End::Requester, "rcvd_rnr_err", "RNR NAKs received (rxe)"),
    (
        End::Requester,
        "local_ack_timeout_err",
        "ACK timeouts (mlx5)",
    ),
    (
        End::Requester,
        "packet_seq_err",
        "PSN sequence error NAKs received (mlx5)",
    ),
    (
        End::Requester,
        "implied_nak_seq_err",
        "READ responses missing (mlx5)",
    ),
    (
        End::Requester,
        "rnr_nak_retry_err",
        "RNR NAKs received (mlx5)",
    ),
    (
        End::Responder,
        "duplicate_request",
        "requests received twice (rxe, mlx5)",
    ),
    (
        End::Responder,
        "out_of_seq_request",
        "PSN sequence error NAKs sent (rxe)",
    ),
    (
        End::Responder,
        "out_of_sequence",
        "requests ahead of the PSN expected (mlx5)",
    ),
    (End::Responder, "send_rnr_err", "RNR NAKs sent (rxe)"),
    (
        End::Responder,
        "np_ecn_marked_roce_packets",
        "CE-marked packets received (mlx5)",
    ),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum End {
    Requester,
    Responder,
}

/// Why a pair failed.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Reason {
    /// The run did not happen or stopped early.
    Error {
        message: String,
    },
    /// Messages completed with an error status.
    CompletionErrors {
        count: u64,
    },
    /// The responder found data it was not sent.
    DataCheck {
        status: String,
    },
    SlowerThan {
        gbps: f64,
        expected_gbps: f64,
    },
    /// `--expect-gbps N%` without a link speed from the requester's device.
    NoLinkSpeed,
    LatencyAbove {
        p99_us: f64,
        expected_p99_us: f64,
    },
    /// Fewer messages completed than a window's probes should: a probe unanswered holds its QP (one at a
    /// time) until its local ACK timer.
    TooFew {
        messages: u64,
        expected_at_least: u64,
    },
    /// The requester's agent captured the pair's flows and the fabric check failed.
    Capture {
        interface: String,
        reasons: Vec<String>,
    },
    /// `--lossless`: a counter of `LOSS_COUNTERS` moved.
    Loss {
        end: End,
        counter: String,
        delta: u64,
        what: String,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    pub pass: bool,
    pub reasons: Vec<Reason>,
}

impl Expect {
    pub fn judge(&self, o: &Outcome) -> Verdict {
        let mut reasons = Vec::new();
        if let Some(message) = &o.error {
            reasons.push(Reason::Error {
                message: message.clone(),
            });
        }
        if let Some(c) = o.capture.as_ref().filter(|c| !c.pass) {
            reasons.push(Reason::Capture {
                interface: c.interface.clone(),
                reasons: c.reasons.clone(),
            });
        }
        if o.completion_errors > 0 {
            reasons.push(Reason::CompletionErrors {
                count: o.completion_errors,
            });
        }
        if o.error.is_none() && o.data_check != "passed" {
            reasons.push(Reason::DataCheck {
                status: o.data_check.clone(),
            });
        }
        let ran = o.error.is_none();
        match self.gbps {
            Some(Speed::Gbps(want)) if ran && o.gbps < want => reasons.push(Reason::SlowerThan {
                gbps: o.gbps,
                expected_gbps: want,
            }),
            Some(Speed::LinkShare(share)) if ran => match o.link_gbps {
                Some(link) if o.gbps < link * share => reasons.push(Reason::SlowerThan {
                    gbps: o.gbps,
                    expected_gbps: link * share,
                }),
                Some(_) => {}
                None => reasons.push(Reason::NoLinkSpeed),
            },
            _ => {}
        }
        if let Some(least) = self.min_messages.filter(|&m| ran && o.messages < m) {
            reasons.push(Reason::TooFew {
                messages: o.messages,
                expected_at_least: least,
            });
        }
        if let Some(want) = self.p99_us
            && ran
            && o.p99_us > want
        {
            reasons.push(Reason::LatencyAbove {
                p99_us: o.p99_us,
                expected_p99_us: want,
            });
        }
        if self.lossless {
            for (end, counter, what) in LOSS_COUNTERS {
                let counters = match end {
                    End::Requester => &o.requester_counters,
                    End::Responder => &o.responder_counters,
                };
                if let Some(&delta) = counters.get(counter).filter(|&&d| d > 0) {
                    reasons.push(Reason::Loss {
                        end,
                        counter: counter.to_string(),
                        delta,
                        what: what.to_string(),
                    });
                }
            }
        }
        Verdict {
            pass: reasons.is_empty(),
            reasons,
        }
    }
}

/// `--expect-gbps` as written: `25` (Gb/s) or `90%` (of the requester's link speed).
pub fn parse_speed(s: &str) -> Result<Speed, String> {
    let bad = || format!("'{s}': Gb/s (25) or a share of the link speed (90%) expected");
    match s.strip_suffix('%') {
        Some(p) => match p.parse::<f64>() {
            Ok(v) if v > 0.0 && v <= 100.0 => Ok(Speed::LinkShare(v / 100.0)),
            _ => Err(bad()),
        },
        None => match s.parse::<f64>() {
            Ok(v) if v > 0.0 && v.is_finite() => Ok(Speed::Gbps(v)),
            _ => Err(bad()),
        },
    }
}

/// A port's sysfs `rate` ("100 Gb/sec (4X EDR)", rxe's "10 Gb/sec (1X QDR)") in Gb/s.
pub fn parse_rate(text: &str) -> Option<f64> {
    let (num, unit) = text.trim().split_once(' ')?;
    let v: f64 = num.parse().ok()?;
    (unit.starts_with("Gb/sec") && v > 0.0 && v.is_finite()).then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ran(gbps: f64, p99_us: f64) -> Outcome {
        Outcome {
            messages: 1000,
            gbps,
            p99_us,
            data_check: "passed".into(),
            link_gbps: Some(10.0),
            ..Outcome::default()
        }
    }

    #[test]
    fn a_clean_run_passes_every_expectation() {
        let e = Expect {
            gbps: Some(Speed::LinkShare(0.9)),
            p99_us: Some(50.0),
            lossless: true,
            min_messages: Some(1000),
        };
        let mut o = ran(9.2, 40.0);
        o.requester_counters.insert("sent_pkts".into(), 5000);
        assert_eq!(
            e.judge(&o),
            Verdict {
                pass: true,
                reasons: vec![]
            }
        );
    }

    #[test]
    fn each_expectation_fails_on_its_own() {
        let e = Expect {
            gbps: Some(Speed::Gbps(9.5)),
            p99_us: Some(30.0),
            lossless: true,
            min_messages: Some(1001),
        };
        let mut o = ran(9.2, 40.0);
        o.responder_counters.insert("duplicate_request".into(), 16);
        o.requester_counters.insert("completer_retry_err".into(), 0);
        assert_eq!(
            e.judge(&o).reasons,
            [
                Reason::SlowerThan {
                    gbps: 9.2,
                    expected_gbps: 9.5
                },
                Reason::TooFew {
                    messages: 1000,
                    expected_at_least: 1001
                },
                Reason::LatencyAbove {
                    p99_us: 40.0,
                    expected_p99_us: 30.0
                },
                Reason::Loss {
                    end: End::Responder,
                    counter: "duplicate_request".into(),
                    delta: 16,
                    what: "requests received twice (rxe, mlx5)".into()
                },
            ]
        );
        let mut no_link = ran(9.2, 1.0);
        no_link.link_gbps = None;
        let share = Expect {
            gbps: Some(Speed::LinkShare(0.5)),
            ..Expect::default()
        };
        assert_eq!(share.judge(&no_link).reasons, [Reason::NoLinkSpeed]);
    }

    /// The requester's capture: a failed fabric check fails the pair, with its reasons.
    #[test]
    fn a_failed_fabric_check_fails_the_pair() {
        let mut o = ran(9.2, 40.0);
        o.capture = Some(CaptureCheck {
            interface: "eth0".into(),
            pass: false,
            reasons: vec!["3 retransmitted".into()],
            retransmitted: 3,
            ..CaptureCheck::default()
        });
        assert_eq!(
            Expect::default().judge(&o).reasons,
            [Reason::Capture {
                interface: "eth0".into(),
                reasons: vec!["3 retransmitted".into()]
            }]
        );
        o.capture.as_mut().unwrap().pass = true;
        assert!(Expect::default().judge(&o).pass);
    }

    /// A run that did not happen fails on its error alone (no speed or latency of a run that was not).
    #[test]
    fn an_error_is_the_reason() {
        let e = Expect {
            gbps: Some(Speed::Gbps(1.0)),
            p99_us: Some(1.0),
            lossless: false,
            min_messages: Some(5),
        };
        let o = Outcome {
            error: Some("agent b unreachable".into()),
            ..Outcome::default()
        };
        assert_eq!(
            e.judge(&o).reasons,
            [Reason::Error {
                message: "agent b unreachable".into()
            }]
        );
    }

    #[test]
    fn speeds_and_rates_as_written() {
        assert_eq!(parse_speed("25"), Ok(Speed::Gbps(25.0)));
        assert_eq!(parse_speed("90%"), Ok(Speed::LinkShare(0.9)));
        assert!(parse_speed("120%").is_err() && parse_speed("0").is_err());
        assert_eq!(parse_rate("100 Gb/sec (4X EDR)\n"), Some(100.0));
        assert_eq!(parse_rate("10 Gb/sec (1X QDR)"), Some(10.0));
        assert_eq!(parse_rate("invalid"), None);
    }
}
