//! The scenarios: the generator's traffic, the fault the injector makes, and the reaction it calls for.
//! Sizes at path MTU 1024 (the generator's on Soft-RoCE): 1024-byte messages are one packet each, a
//! 4096-byte READ is answered by four responses.
use serde::Serialize;

use super::judge::{QpSettings, Reaction, RnrSettings};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Scenario {
    pub name: &'static str,
    /// `gen loopback --op`.
    pub op: &'static str,
    /// Message size (bytes) and count.
    pub size: u32,
    pub iters: u32,
    /// The injector's rules (docs/inject.md): the first makes the fault judged (once); a control's
    /// others break the reaction on purpose. None: the fault is the generator's (`fault`), and the run has
    /// no injector.
    pub rules: &'static [&'static str],
    /// `gen --fault`: a fault of the verbs, not of the path.
    pub fault: Option<&'static str>,
    pub reaction: Reaction,
    /// A control: the reaction is broken on purpose, and the judge must say so (a pass is the bench's
    /// failure, not the NIC's success).
    pub control: bool,
    /// The requester's QP timeout and retry count (gen's `--qp-timeout`, `--retry-count`), where the reaction
    /// is held to them; gen's defaults otherwise.
    pub qp: Option<QpSettings>,
    /// The responder's RNR timer and the requester's RNR retry count (`gen loopback --min-rnr-timer`,
    /// `--rnr-retry`), where the reaction is held to them.
    pub rnr: Option<RnrSettings>,
    /// The requester's QP must give up: gen ends with this completion error (exit status 1).
    pub gives_up: Option<&'static str>,
}

const fn scenario(
    name: &'static str,
    op: &'static str,
    size: u32,
    iters: u32,
    rules: &'static [&'static str],
    reaction: Reaction,
) -> Scenario {
    Scenario {
        name,
        op,
        size,
        iters,
        rules,
        fault: None,
        reaction,
        control: false,
        qp: None,
        rnr: None,
        gives_up: None,
    }
}

/// Every scenario, in the order `conform` runs them.
pub const SUITE: [Scenario; 10] = [
    scenario(
        "write_request_lost",
        "write",
        1024,
        32,
        &["req psn=+5 drop"],
        Reaction::RequestLost,
    ),
    scenario(
        "send_request_lost",
        "send",
        1024,
        32,
        &["req psn=+5 drop"],
        Reaction::RequestLost,
    ),
    scenario(
        "read_request_lost",
        "read",
        1024,
        32,
        &["req psn=+5 drop"],
        Reaction::RequestLost,
    ),
    // The third response of the second READ (responses +4 to +7): the fourth, right behind it, shows the gap.
    scenario(
        "read_response_lost",
        "read",
        4096,
        16,
        &["resp class=read_response psn=+6 drop"],
        Reaction::ReadResponseLost,
    ),
    scenario(
        "corrupt_request",
        "write",
        1024,
        32,
        &["req psn=+5 corrupt"],
        Reaction::CorruptRequest,
    ),
    scenario(
        "ce_marked_request",
        "write",
        1024,
        32,
        &["req psn=+5 ce"],
        Reaction::CeMarked,
    ),
    scenario(
        "ack_lost",
        "write",
        1024,
        32,
        &["resp class=ack drop"],
        Reaction::AckLost,
    ),
    // Every ACK lost (the resends' too): the timer resends the first WRITE every 537 ms (4.096 us x 2^17), 3
    // times, and the QP gives up (IBV_WC_RETRY_EXC_ERR). Measured on the wire after the injector, whose
    // queue holds each packet a little (up to 25 ms seen in the lab's slow guest): a timeout long enough that
    // this stays within the sixteenth allowed.
    Scenario {
        qp: Some(QpSettings {
            timeout: 17,
            retry_count: 3,
        }),
        gives_up: Some("IBV_WC_RETRY_EXC_ERR"),
        ..scenario(
            "acks_all_lost",
            "write",
            1024,
            4,
            &["resp class=ack resend=any times=all drop"],
            Reaction::AckTimeout,
        )
    },
    // No receive posted (gen's fault): the responder RNR NAKs the first SEND with its timer, 28 (163.84 ms:
    // a kernel timer of 4 ms ticks, as rxe's is, early by up to a tick stays within the sixteenth allowed),
    // the requester goes back to it 3 times, and the QP gives up (IBV_WC_RNR_RETRY_EXC_ERR). Four SENDs, so
    // that the requester has others to send in its place.
    Scenario {
        fault: Some("no-receive"),
        rnr: Some(RnrSettings {
            min_rnr_timer: 28,
            rnr_retry: 3,
        }),
        gives_up: Some("IBV_WC_RNR_RETRY_EXC_ERR"),
        ..scenario("rnr_retry", "send", 1024, 4, &[], Reaction::RnrRetry)
    },
    // The control: the lost request's NAK dropped too, so that only the timer can resend it.
    Scenario {
        control: true,
        ..scenario(
            "control_nak_dropped",
            "write",
            1024,
            32,
            &["req psn=+5 drop", "resp class=nak times=all drop"],
            Reaction::RequestLost,
        )
    },
];

pub fn find(name: &str) -> Option<&'static Scenario> {
    SUITE.iter().find(|s| s.name == name)
}

/// The scenarios' names, for a usage error.
pub fn names() -> String {
    SUITE.iter().map(|s| s.name).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_parses_and_names_are_unique() {
        for s in &SUITE {
            for r in s.rules {
                assert!(crate::inject::rules::Rule::parse(r).is_ok(), "{r}");
            }
            assert_eq!(SUITE.iter().filter(|t| t.name == s.name).count(), 1);
        }
    }
}
