//! The injector's rules: which RoCE packets to act on and what to do to them, as `--rule` gives them:
//! `DIRECTION [SELECTOR...] ACTION [ARGUMENT]`, e.g. `req qp=0 psn=+5 drop`, `resp psn=+3 drop`,
//! `req psn=+9 ce`, `resp class=ack resend=1 delay 20ms` (docs/inject.md).
use std::fmt;
use std::time::Duration;

/// Which way a packet goes: from a requester (requests) or from a responder (responses, CNPs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Requests,
    Responses,
    Any,
}

/// What a packet is, as a rule selects it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    Request,
    Ack,
    Nak,
    RnrNak,
    ReadResponse,
    AtomicAck,
    Cnp,
}

impl Class {
    pub const ALL: [(Class, &'static str); 7] = [
        (Class::Request, "request"),
        (Class::Ack, "ack"),
        (Class::Nak, "nak"),
        (Class::RnrNak, "rnr_nak"),
        (Class::ReadResponse, "read_response"),
        (Class::AtomicAck, "atomic_ack"),
        (Class::Cnp, "cnp"),
    ];

    pub fn name(self) -> &'static str {
        Class::ALL
            .iter()
            .find(|(c, _)| *c == self)
            .map_or("", |(_, n)| n)
    }
}

/// A PSN as a rule gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PsnSelector {
    /// This PSN.
    Absolute(u32),
    /// The flow's first PSN seen plus this many (mod 2^24).
    FromFirst(u32),
}

/// Which flow: the n-th flow of the rule's direction first seen in the run (from 0), or a destination QP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QpSelector {
    Index(u32),
    Qpn(u32),
}

/// What to do to a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Drop,
    /// Set the IP ECN field to CE (3).
    Ce,
    /// Flip one bit the ICRC covers: the receiver must drop the packet as damaged.
    Corrupt,
    /// Let it go this much later (the packets behind it go on).
    Delay(Duration),
    /// Let it go, and a copy of it right behind.
    Duplicate,
    /// Hold it until the next packet of its flow has gone (at most [`REORDER_HOLD`]).
    Reorder,
}

/// The longest a `reorder` holds a packet that no other packet of its flow follows.
pub const REORDER_HOLD: Duration = Duration::from_millis(100);

/// The longest `delay`: beyond any retransmission timer a test would wait out (2^31 × 4.096 µs is 2.4 h;
/// a delay that long is a drop).
pub const MAX_DELAY: Duration = Duration::from_secs(10);

impl Action {
    pub fn name(self) -> &'static str {
        match self {
            Action::Drop => "drop",
            Action::Ce => "ce",
            Action::Corrupt => "corrupt",
            Action::Delay(_) => "delay",
            Action::Duplicate => "duplicate",
            Action::Reorder => "reorder",
        }
    }
}

/// One `--rule`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub text: String,
    pub direction: Direction,
    pub qp: Option<QpSelector>,
    pub psn: Option<PsnSelector>,
    pub class: Option<Class>,
    /// The n-th resend of the packet's PSN in its flow (0: its first transmission; `None`: any).
    pub resend: Option<u32>,
    /// How many packets it acts on (`None`: every one it matches).
    pub times: Option<u64>,
    pub action: Action,
}

/// A rule that does not parse: the rule, and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{problem} (a rule is DIRECTION [SELECTOR...] ACTION, e.g. 'req psn=+5 drop': docs/inject.md)"
)]
pub struct RuleError {
    pub rule: String,
    pub problem: String,
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Direction::Requests => "req",
            Direction::Responses => "resp",
            Direction::Any => "any",
        })
    }
}

/// A number in decimal or with 0x in hex.
fn number(s: &str) -> Option<u64> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

/// `20ms`, `500us`, `1s`, `1.5ms`.
fn duration(s: &str) -> Option<Duration> {
    let (value, unit) = ["us", "ms", "s"]
        .iter()
        .find_map(|u| s.strip_suffix(u).map(|v| (v, *u)))?;
    let value: f64 = value
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite() && *v >= 0.0)?;
    let secs = match unit {
        "us" => value / 1e6,
        "ms" => value / 1e3,
        _ => value,
    };
    Duration::try_from_secs_f64(secs).ok()
}

impl Rule {
    pub fn parse(text: &str) -> Result<Rule, RuleError> {
        let fail = |problem: String| RuleError {
            rule: text.to_string(),
            problem,
        };
        let mut words = text.split_whitespace();
        let direction = match words.next() {
            Some("req") => Direction::Requests,
            Some("resp") => Direction::Responses,
            Some("any") => Direction::Any,
            Some(w) => return Err(fail(format!("it begins with '{w}', not req, resp or any"))),
            None => return Err(fail("it is empty".into())),
        };
        let mut rule = Rule {
            text: text.split_whitespace().collect::<Vec<_>>().join(" "),
            direction,
            qp: None,
            psn: None,
            class: None,
            resend: Some(0),
            times: Some(1),
            action: Action::Drop,
        };
        let mut action = None;
        while let Some(word) = words.next() {
            if action.is_some() {
                return Err(fail(format!("'{word}' after the action")));
            }
            let Some((key, value)) = word.split_once('=') else {
                action = Some(match word {
                    "drop" => Action::Drop,
                    "ce" => Action::Ce,
                    "corrupt" => Action::Corrupt,
                    "duplicate" => Action::Duplicate,
                    "reorder" => Action::Reorder,
                    "delay" => {
                        let d = words
                            .next()
                            .ok_or_else(|| fail("delay needs a duration (delay 20ms)".into()))?;
                        let d = duration(d).ok_or_else(|| {
                            fail(format!("'{d}' is not a duration (20ms, 500us, 1s)"))
                        })?;
                        if d > MAX_DELAY {
                            return Err(fail(format!(
                                "delay {d:?} is over {MAX_DELAY:?}: a packet held that long is a drop"
                            )));
                        }
                        Action::Delay(d)
                    }
                    w => {
                        return Err(fail(format!(
                            "'{w}' is no action (drop, ce, corrupt, delay D, duplicate, reorder) nor KEY=VALUE"
                        )));
                    }
                });
                continue;
            };
            let bad = || fail(format!("'{word}': {key} takes {}", expects(key)));
            match key {
                "qp" => rule.qp = Some(QpSelector::Index(small(value).ok_or_else(bad)?)),
                "qpn" => {
                    rule.qp = Some(QpSelector::Qpn(
                        number(value).filter(|n| *n < 1 << 24).ok_or_else(bad)? as u32,
                    ))
                }
                "psn" => {
                    let (from_first, n) = match value.strip_prefix('+') {
                        Some(n) => (true, n),
                        None => (false, value),
                    };
                    let n = number(n).filter(|n| *n < 1 << 24).ok_or_else(bad)? as u32;
                    rule.psn = Some(if from_first {
                        PsnSelector::FromFirst(n)
                    } else {
                        PsnSelector::Absolute(n)
                    });
                }
                "class" => {
                    rule.class = Some(
                        Class::ALL
                            .iter()
                            .find(|(_, n)| *n == value)
                            .map(|(c, _)| *c)
                            .ok_or_else(bad)?,
                    )
                }
                "resend" => {
                    rule.resend = match value {
                        "any" => None,
                        v => Some(small(v).ok_or_else(bad)?),
                    }
                }
                "times" => {
                    rule.times = match value {
                        "all" => None,
                        v => Some(u64::from(small(v).filter(|n| *n > 0).ok_or_else(bad)?)),
                    }
                }
                _ => {
                    return Err(fail(format!(
                        "'{key}' is no selector (qp, qpn, psn, class, resend, times)"
                    )));
                }
            }
        }
        rule.action = action.ok_or_else(|| {
            fail("it has no action (drop, ce, corrupt, delay D, duplicate, reorder)".into())
        })?;
        if rule.direction == Direction::Requests && rule.class.is_some_and(|c| c != Class::Request)
        {
            return Err(fail(
                "req selects requests: its class can only be request".into(),
            ));
        }
        if rule.direction == Direction::Responses && rule.class == Some(Class::Request) {
            return Err(fail(
                "resp selects responses: class=request is never one".into(),
            ));
        }
        Ok(rule)
    }
}

/// A count small enough for a rule (below 2^24).
fn small(s: &str) -> Option<u32> {
    number(s).filter(|n| *n < 1 << 24).map(|n| n as u32)
}

fn expects(key: &str) -> &'static str {
    match key {
        "qp" => "the flow's index in the run (0 for the first)",
        "qpn" => "a destination QP number below 2^24 (decimal or 0x hex)",
        "psn" => "a PSN below 2^24, or +N from the flow's first",
        "class" => "request, ack, nak, rnr_nak, read_response, atomic_ack or cnp",
        "resend" => "the resend's number (0: the first transmission), or any",
        "times" => "a count above 0, or all",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_issue_s_examples() {
        let r = Rule::parse("req qp=0 psn=+5 drop").unwrap();
        assert_eq!(
            (r.direction, r.qp, r.psn, r.action, r.resend, r.times),
            (
                Direction::Requests,
                Some(QpSelector::Index(0)),
                Some(PsnSelector::FromFirst(5)),
                Action::Drop,
                Some(0),
                Some(1)
            )
        );
        let r = Rule::parse("resp psn=+3 drop").unwrap();
        assert_eq!(
            (r.direction, r.psn),
            (Direction::Responses, Some(PsnSelector::FromFirst(3)))
        );
        let r = Rule::parse("req  psn=0x10   ce").unwrap();
        assert_eq!(
            (r.psn, r.action, r.text.as_str()),
            (
                Some(PsnSelector::Absolute(16)),
                Action::Ce,
                "req psn=0x10 ce"
            )
        );
        assert_eq!(
            Rule::parse("resp class=ack resend=any times=all drop")
                .unwrap()
                .resend,
            None
        );
        let r = Rule::parse("resp class=ack resend=1 times=all delay 1.5ms").unwrap();
        assert_eq!(
            (r.class, r.resend, r.times, r.action),
            (
                Some(Class::Ack),
                Some(1),
                None,
                Action::Delay(Duration::from_micros(1500))
            )
        );
        let r = Rule::parse("any qpn=0x11 class=cnp duplicate").unwrap();
        assert_eq!(
            (r.qp, r.class),
            (Some(QpSelector::Qpn(17)), Some(Class::Cnp))
        );
    }

    #[test]
    fn hostile_rules_say_what_is_wrong() {
        for (rule, says) in [
            ("", "it is empty"),
            ("drop", "begins with 'drop'"),
            ("req psn=+5", "no action"),
            ("req psn=16777216 drop", "psn takes"),
            ("req psn=+-1 drop", "psn takes"),
            ("req qp=x drop", "qp takes"),
            ("req class=ack drop", "its class can only be request"),
            ("resp class=request drop", "never one"),
            ("req drop ce", "'ce' after the action"),
            ("req delay", "needs a duration"),
            ("req delay 5", "not a duration"),
            ("req delay -5ms", "not a duration"),
            ("req delay 1e400s", "not a duration"),
            ("req delay 11s", "is a drop"),
            ("req times=0 drop", "times takes"),
            ("req colour=red drop", "no selector"),
            ("req explode", "no action"),
        ] {
            let e = Rule::parse(rule).expect_err(rule).to_string();
            assert!(e.contains(says), "{rule}: {e}");
            assert_eq!(e.lines().count(), 1, "{e}");
        }
    }
}
