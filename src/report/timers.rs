//! A flow's `timers`: its local ACK timer as its resends show it ([`crate::analysis::timers`]), held
//! against the timeout and retry count its connection's handshake (or `--retry-count`) gave.
use serde::Serialize;

use crate::analysis::Engine;
use crate::analysis::flow::Flow;

#[derive(Debug, Serialize)]
pub struct TimersReport {
    /// Timeout retransmissions (`timeout_retransmission` events).
    pub resends: u64,
    /// The first 16 intervals, whole microseconds.
    pub intervals_us: Vec<u64>,
    pub min_interval_us: u64,
    pub max_interval_us: u64,
    /// The exponent the shortest interval implies (4.096 µs × 2^n within it).
    pub timeout_exponent: u8,
    /// The CM REQ's Local ACK Timeout; null without a handshake.
    pub configured_exponent: Option<u8>,
    /// A resend sooner than the configured timeout; null when none is known.
    pub adaptive: Option<bool>,
    /// At least two intervals in a row each 1.5× the one before.
    pub backoff: bool,
    /// From the CM REQ, else `--retry-count`; null when neither.
    pub retry_count: Option<u8>,
    /// The resends in a row of the PSN resent last.
    pub last_retry: u32,
    /// The last resend was still unanswered when the capture ended.
    pub unanswered: bool,
    /// Unanswered: how long until the QP gives up at that pace (seconds), with a retry count known.
    pub gives_up_in_s: Option<f64>,
}

/// Flow `f`'s timers; null when its timer never fired.
pub fn build(engine: &Engine, f: &Flow) -> Option<TimersReport> {
    let t = f.timers.as_deref()?;
    let conn = f
        .conn
        .and_then(|l| engine.connections.list.get(l.connection as usize));
    let configured = conn.and_then(|c| c.ack_timeout);
    let retry_count = conn.and_then(|c| c.retry_count).or(engine.cfg.retry_count);
    let unanswered = f.req.rc.resent.is_some();
    let us = |ns: u64| ns / 1000;
    Some(TimersReport {
        resends: t.resends,
        intervals_us: t.intervals_ns.iter().map(|n| us(*n)).collect(),
        min_interval_us: us(t.min_ns),
        max_interval_us: us(t.max_ns),
        timeout_exponent: t.implied_exponent(),
        configured_exponent: configured,
        adaptive: configured.map(|c| t.adaptive(c)),
        backoff: t.backs_off(),
        retry_count,
        last_retry: t.last_retry,
        unanswered,
        gives_up_in_s: retry_count
            .filter(|_| unanswered)
            .map(|r| t.gives_up_in_ns(r) as f64 / 1e9),
    })
}
