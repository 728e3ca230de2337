//! The flows table: rows made from the analyze JSON's flows, each
//! figure a column named by its path in the JSON (`psn.gap_events`), so that the tables say exactly what
//! `analyze --json` says. Per flow, not per frame: a JSON value each is affordable.
use std::sync::Arc;

use arrow_array::ArrayRef;
use arrow_array::builder::{
    BooleanBuilder, Float64Builder, Int64Builder, ListBuilder, MapBuilder, StringBuilder,
};
use serde_json::Value;

use super::table::{Table, TableError};

/// What a column holds, and how its JSON value is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Int,
    Float,
    Text,
    Bool,
    /// An object of counts by name (`opcodes`, `rnr_timers_ms`): a map column.
    Counts,
    /// An array of counts (`series.packets`): a list column.
    Ints,
}

use Kind::*;

/// Every figure of a pair of `gen mesh --json` (docs/json.md), by its path, with the run's `started` (seconds
/// since the epoch) and `pattern` beside it: the `mesh` table of `gen mesh --parquet`.
pub const MESH: &[(&str, Kind)] = &[
    ("started", Float),
    ("pattern", Text),
    ("src", Text),
    ("dst", Text),
    ("round", Int),
    ("pass", Bool),
    ("why", Text),
    ("outcome.error", Text),
    ("outcome.messages", Int),
    ("outcome.bytes", Int),
    ("outcome.seconds", Float),
    ("outcome.gbps", Float),
    ("outcome.p50_us", Float),
    ("outcome.p99_us", Float),
    ("outcome.max_us", Float),
    ("outcome.completion_errors", Int),
    ("outcome.data_check", Text),
    ("outcome.link_gbps", Float),
    ("outcome.requester_counters", Counts),
    ("outcome.responder_counters", Counts),
    ("outcome.shared", Bool),
    ("outcome.completion_timestamps", Bool),
    ("outcome.capture.pass", Bool),
    ("outcome.capture.gap_events", Int),
    ("outcome.capture.retransmitted", Int),
    ("outcome.capture.naks", Int),
    ("outcome.capture.ce", Int),
    ("outcome.capture.cnp", Int),
];

/// Every figure of a flow in the analyze JSON (docs/json.md), by its path; where it was captured first.
pub const FLOW: &[(&str, Kind)] = &[
    ("capture.file", Text),
    ("capture.point", Text),
    ("capture.path", Text),
    ("capture.point_index", Int),
    ("id", Int),
    ("src", Text),
    ("dst", Text),
    ("dest_qp", Int),
    ("role", Text),
    ("paired_with", Int),
    ("paired_by", Text),
    ("state", Text),
    ("connection", Int),
    ("src_qp", Int),
    ("packets", Int),
    ("bytes", Int),
    ("payload_bytes", Int),
    ("retransmitted_bytes", Int),
    ("first_time", Float),
    ("last_time", Float),
    ("opcodes", Counts),
    ("psn.first", Int),
    ("psn.last", Int),
    ("psn.gap_events", Int),
    ("psn.missing", Int),
    ("psn.retransmitted", Int),
    ("psn.duplicates", Int),
    ("psn.retransmission_episodes", Int),
    ("psn.reused", Int),
    ("psn.resumed_reads", Int),
    ("psn.reordered", Int),
    ("psn.epochs", Int),
    ("acks", Int),
    ("duplicate_acks", Int),
    ("naks.psn_seq_err", Int),
    ("naks.invalid_request", Int),
    ("naks.remote_access", Int),
    ("naks.remote_op", Int),
    ("naks.invalid_rd_request", Int),
    ("naks.reserved", Int),
    ("rnr_naks", Int),
    ("rnr_timers_ms", Counts),
    ("read_responses", Int),
    ("atomic_acks", Int),
    ("implied_naks", Int),
    ("reordered_responses", Int),
    ("reorder_depth_max", Int),
    ("cnp", Int),
    ("ecn.not_ect", Int),
    ("ecn.ect0", Int),
    ("ecn.ect1", Int),
    ("ecn.ce", Int),
    ("ce_without_cnp", Int),
    ("fecn", Int),
    ("becn", Int),
    ("icrc_bad", Int),
    ("icrc_unverifiable", Int),
    ("malformed", Int),
    ("messages.count", Int),
    ("messages.bytes", Int),
    ("messages.min_size", Int),
    ("messages.max_size", Int),
    ("messages.length_mismatches", Int),
    ("latency_us.samples", Int),
    ("latency_us.min", Float),
    ("latency_us.p50", Float),
    ("latency_us.p90", Float),
    ("latency_us.p99", Float),
    ("latency_us.max", Float),
    ("read_latency_us.samples", Int),
    ("read_latency_us.min", Float),
    ("read_latency_us.p50", Float),
    ("read_latency_us.p90", Float),
    ("read_latency_us.p99", Float),
    ("read_latency_us.max", Float),
    ("pcp", Int),
    ("dscp", Int),
    ("priority", Int),
    ("paused_priority", Bool),
    ("throughput.gbps", Float),
    ("throughput.goodput_gbps", Float),
    ("throughput.link_share", Float),
    ("throughput.peak_gbps", Float),
    ("throughput.peak_link_share", Float),
    ("cnp_reaction.cnps", Int),
    ("cnp_reaction.measured", Int),
    ("cnp_reaction.no_reduction", Int),
    ("cnp_reaction.median_reduction", Float),
    ("cnp_reaction.worst_reduction", Float),
    ("cnp_reaction.mean_time_to_reduction_us", Float),
    ("cnp_reaction.max_time_to_reduction_us", Float),
    ("cnp_interval_us.min", Float),
    ("cnp_interval_us.mean", Float),
    ("cnp_interval_us.max", Float),
    ("counters.out_of_sequence", Int),
    ("counters.duplicate_request", Int),
    ("counters.packet_seq_err", Int),
    ("counters.rnr_nak_retry_err", Int),
    ("counters.implied_nak_seq_err", Int),
    ("counters.np_ecn_marked_roce_packets", Int),
    ("counters.np_cnp_sent", Int),
    ("counters.rx_icrc_encapsulated", Int),
    ("series.bucket_seconds", Int),
    ("series.first_bucket", Int),
    ("series.packets", Ints),
    ("series.bytes", Ints),
    ("udp_src_port", Int),
    ("timers.resends", Int),
    ("timers.intervals_us", Ints),
    ("timers.min_interval_us", Int),
    ("timers.max_interval_us", Int),
    ("timers.timeout_exponent", Int),
    ("timers.configured_exponent", Int),
    ("timers.adaptive", Bool),
    ("timers.backoff", Bool),
    ("timers.retry_count", Int),
    ("timers.last_retry", Int),
    ("timers.unanswered", Bool),
    ("timers.gives_up_in_s", Float),
    ("life.seconds", Float),
    ("life.window", Int),
    ("life.shares.idle", Float),
    ("life.shares.paused", Float),
    ("life.shares.rate_limited", Float),
    ("life.shares.recovering", Float),
    ("life.shares.rnr_wait", Float),
    ("life.shares.sending", Float),
    ("life.shares.window_limited", Float),
    ("life.dominant", Text),
];

enum Builder {
    Int(Int64Builder),
    Float(Float64Builder),
    Text(StringBuilder),
    Bool(BooleanBuilder),
    Counts(MapBuilder<StringBuilder, Int64Builder>),
    Ints(ListBuilder<Int64Builder>),
}

impl Builder {
    fn new(kind: Kind) -> Builder {
        match kind {
            Int => Builder::Int(Int64Builder::new()),
            Float => Builder::Float(Float64Builder::new()),
            Text => Builder::Text(StringBuilder::new()),
            Bool => Builder::Bool(BooleanBuilder::new()),
            Counts => Builder::Counts(MapBuilder::new(
                None,
                StringBuilder::new(),
                Int64Builder::new(),
            )),
            Ints => Builder::Ints(ListBuilder::new(Int64Builder::new())),
        }
    }

    /// Appends `v` (null when absent or null).
    fn push(&mut self, v: Option<&Value>) {
        let v = v.filter(|v| !v.is_null());
        match self {
            Builder::Int(b) => b.append_option(v.and_then(Value::as_i64)),
            Builder::Float(b) => b.append_option(v.and_then(Value::as_f64)),
            Builder::Text(b) => b.append_option(v.and_then(Value::as_str)),
            Builder::Bool(b) => b.append_option(v.and_then(Value::as_bool)),
            Builder::Counts(b) => {
                for (k, n) in v.and_then(Value::as_object).into_iter().flatten() {
                    b.keys().append_value(k);
                    b.values().append_option(n.as_i64());
                }
                // Only a JSON object is a map; anything else is null.
                let _ = b.append(v.is_some_and(Value::is_object));
            }
            Builder::Ints(b) => {
                for n in v.and_then(Value::as_array).into_iter().flatten() {
                    b.values().append_option(n.as_i64());
                }
                b.append(v.is_some_and(Value::is_array));
            }
        }
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            Builder::Int(b) => Arc::new(b.finish()),
            Builder::Float(b) => Arc::new(b.finish()),
            Builder::Text(b) => Arc::new(b.finish()),
            Builder::Bool(b) => Arc::new(b.finish()),
            Builder::Counts(b) => Arc::new(b.finish()),
            Builder::Ints(b) => Arc::new(b.finish()),
        }
    }
}

/// A table of JSON objects, one row each.
pub struct Rows {
    /// Each column's path in the JSON, split (`["psn", "gap_events"]`).
    paths: Vec<Vec<&'static str>>,
    builders: Vec<Builder>,
    rows: usize,
    table: Table,
}

impl Rows {
    /// Creates the table at `path` with `columns`.
    pub fn create(
        path: &std::path::Path,
        columns: &'static [(&'static str, Kind)],
    ) -> Result<Rows, TableError> {
        let mut builders: Vec<Builder> = columns.iter().map(|(_, k)| Builder::new(*k)).collect();
        let names: Vec<&str> = columns.iter().map(|(n, _)| *n).collect();
        let empty = builders.iter_mut().map(Builder::finish).collect();
        Ok(Rows {
            paths: columns
                .iter()
                .map(|(n, _)| n.split('.').collect())
                .collect(),
            builders,
            rows: 0,
            table: Table::create(path, &names, empty, &[], &[])?,
        })
    }

    /// One row: each column's value at its path in `object`.
    pub fn push(&mut self, object: &Value) -> Result<(), TableError> {
        for (b, path) in self.builders.iter_mut().zip(&self.paths) {
            // Not `Value::pointer`, which allocates for every step.
            b.push(path.iter().try_fold(object, |v, step| v.get(step)));
        }
        self.rows += 1;
        if self.rows >= super::table::BATCH_ROWS {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), TableError> {
        self.rows = 0;
        self.table
            .write(self.builders.iter_mut().map(Builder::finish).collect())
    }

    /// Writes the rows left and closes the table; returns the rows written.
    pub fn close(mut self) -> Result<u64, TableError> {
        self.flush()?;
        self.table.close()
    }
}
