//! The packets table: one row per RoCE frame, filled on the engine thread as the engine counts each frame
//! (its flow, its class, the events it raised), handed to the table's writer every [`BATCH_ROWS`] rows.
//! The per-frame path appends to the column buffers only (no allocation per frame: an address is
//! formatted once and kept).
use std::fmt::Write;
use std::sync::Arc;

use arrow_array::ArrayRef;
use arrow_array::builder::{
    ArrayBuilder, BooleanBuilder, Int32Builder, Int64Builder, ListBuilder, StringBuilder,
    UInt64Builder,
};
use parsers::frame::{Addr, Frame, Ip};
use parsers::opcode::Opcode;
use rustc_hash::FxHashMap;

use super::Point;
use super::table::{BATCH_ROWS, Table, TableError};
use crate::analysis::{Classified, Engine};
use crate::filter::class_name;
use crate::pipeline::EngineSide;

columns!(Columns {
    file: StringBuilder = "capture.file",
    point: StringBuilder = "capture.point",
    path: StringBuilder = "capture.path",
    point_index: Int32Builder = "capture.point_index",
    number: Int64Builder = "frame.number",
    time: Int64Builder = "frame.time_epoch_ns",
    len: Int64Builder = "frame.len",
    src: StringBuilder = "src",
    dst: StringBuilder = "dst",
    src_port: Int32Builder = "udp.srcport",
    dst_port: Int32Builder = "udp.dstport",
    vlan: Int32Builder = "vlan.id",
    pcp: Int32Builder = "vlan.priority",
    ip_id: Int32Builder = "ip.id",
    dscp: Int32Builder = "ip.dsfield.dscp",
    ecn: Int32Builder = "ip.dsfield.ecn",
    dest_qp: Int64Builder = "infiniband.bth.destqp",
    deth_src_qp: Int64Builder = "infiniband.deth.srcqp",
    src_qp: Int64Builder = "rocescope.src_qp",
    opcode: Int32Builder = "infiniband.bth.opcode",
    opcode_name: StringBuilder = "rocescope.opcode_name",
    psn: Int64Builder = "infiniband.bth.psn",
    se: BooleanBuilder = "infiniband.bth.se",
    migreq: BooleanBuilder = "infiniband.bth.m",
    ack_req: BooleanBuilder = "infiniband.bth.a",
    fecn: BooleanBuilder = "rocescope.bth.fecn",
    becn: BooleanBuilder = "rocescope.bth.becn",
    pkey: Int32Builder = "infiniband.bth.p_key",
    syndrome: Int32Builder = "infiniband.aeth.syndrome",
    msn: Int64Builder = "infiniband.aeth.msn",
    va: UInt64Builder = "infiniband.reth.va",
    r_key: Int64Builder = "infiniband.reth.r_key",
    dma_len: Int64Builder = "infiniband.reth.dmalen",
    payload_len: Int64Builder = "rocescope.payload_len",
    icrc_value: Int64Builder = "infiniband.invariant.crc",
    icrc: StringBuilder = "rocescope.icrc_status",
    malformed: StringBuilder = "rocescope.malformed",
    malformed_layer: StringBuilder = "rocescope.malformed_layer",
    flow: Int64Builder = "rocescope.flow",
    connection: Int64Builder = "rocescope.connection",
    class: StringBuilder = "rocescope.class",
    events: ListBuilder<StringBuilder> = "rocescope.event",
});

/// Addresses formatted at most: past that the cache starts again (hostile input with many addresses).
const ADDRESSES: usize = 4096;

/// Each address formatted once (the per-frame path does not allocate).
#[derive(Default)]
struct Addresses(FxHashMap<Addr, Box<str>>);

impl Addresses {
    fn get(&mut self, a: Option<Addr>) -> Option<&str> {
        let a = a?;
        if self.0.len() >= ADDRESSES && !self.0.contains_key(&a) {
            self.0.clear();
        }
        Some(self.0.entry(a).or_insert_with(|| a.to_string().into()))
    }
}

/// The packets table being written, as the pipeline's engine side.
pub struct Packets<'t> {
    /// `capture.file` of every row.
    file: String,
    /// `capture.point`, `.path`, `.point_index` of every row.
    point: Point,
    columns: Columns,
    table: &'t Table,
    addresses: Addresses,
    /// The first error of the table's writer.
    error: Option<TableError>,
}

impl<'t> Packets<'t> {
    /// The table's file, created.
    pub fn create(path: &std::path::Path) -> Result<Table, TableError> {
        Table::create(
            path,
            Columns::NAMES,
            Columns::new().finish(),
            &["frame.number", "frame.time_epoch_ns"],
            &[
                "infiniband.bth.psn",
                "infiniband.aeth.msn",
                "infiniband.reth.va",
                "infiniband.invariant.crc",
                "ip.id",
            ],
        )
    }

    /// Rows for the frames of capture `file`, taken at `point`, into `table`.
    pub fn new(file: &str, point: &Point, table: &'t Table) -> Packets<'t> {
        Packets {
            file: file.to_string(),
            point: point.clone(),
            columns: Columns::new(),
            table,
            addresses: Addresses::default(),
            error: None,
        }
    }

    /// Hands the rows gathered over; returns the first error of the whole capture.
    pub fn flush(&mut self) -> Result<(), TableError> {
        self.hand_over();
        self.error.take().map_or(Ok(()), Err)
    }

    /// Hands the rows gathered over, keeping the first error.
    fn hand_over(&mut self) {
        if self.columns.len() > 0
            && let Err(e) = self.table.write(self.columns.finish())
        {
            self.error.get_or_insert(e);
        }
    }

    /// The row of RoCE frame `number`.
    fn row(&mut self, number: u64, ts: u64, frame: &Frame, c: Classified, engine: &Engine) {
        let col = &mut self.columns;
        col.file.append_value(&self.file);
        col.point.append_value(&self.point.name);
        col.path.append_option(self.point.path.as_deref());
        col.point_index.append_option(self.point.index);
        col.number.append_value(number as i64);
        col.time.append_value(ts as i64);
        col.len.append_value(frame.orig_len as i64);
        col.src.append_option(self.addresses.get(frame.src()));
        col.dst.append_option(self.addresses.get(frame.dst()));
        col.src_port
            .append_option(frame.udp.map(|u| i32::from(u.src_port)));
        col.dst_port
            .append_option(frame.udp.map(|u| i32::from(u.dst_port)));
        let tag = frame.vlans.iter().flatten().last();
        col.vlan.append_option(tag.map(|t| i32::from(t.vid)));
        col.pcp.append_option(tag.map(|t| i32::from(t.pcp)));
        col.ip_id.append_option(match frame.ip {
            Some(Ip::V4(ip)) => Some(i32::from(ip.id)),
            _ => None,
        });
        col.dscp.append_option(frame.dscp().map(i32::from));
        col.ecn.append_option(frame.ecn().map(i32::from));
        let flow = c.flow.and_then(|id| engine.flows.get(id));
        let roce = frame.roce;
        let bth = roce.map(|r| r.bth);
        let ext = roce.map(|r| r.ext).unwrap_or_default();
        col.dest_qp.append_option(bth.map(|b| i64::from(b.dest_qp)));
        col.deth_src_qp
            .append_option(ext.deth.map(|d| i64::from(d.src_qp)));
        // RC and UC carry no source QP: it is the destination QP of the flow the other way.
        let paired = flow
            .and_then(|f| f.paired_with)
            .and_then(|p| engine.flows.get(p));
        let src_qp = ext
            .deth
            .map(|d| d.src_qp)
            .or(flow.and_then(|f| f.src_qp))
            .or(paired.map(|p| p.key.dest_qp));
        col.src_qp.append_option(src_qp.map(i64::from));
        col.opcode.append_option(bth.map(|b| i32::from(b.opcode)));
        col.opcode_name
            .append_option(bth.map(|b| Opcode(b.opcode).name()));
        col.psn.append_option(bth.map(|b| i64::from(b.psn)));
        col.se.append_option(bth.map(|b| b.se));
        col.migreq.append_option(bth.map(|b| b.migreq));
        col.ack_req.append_option(bth.map(|b| b.ack_req));
        col.fecn.append_option(bth.map(|b| b.fecn));
        col.becn.append_option(bth.map(|b| b.becn));
        col.pkey.append_option(bth.map(|b| i32::from(b.pkey)));
        col.syndrome
            .append_option(ext.aeth.map(|a| i32::from(a.syndrome)));
        col.msn.append_option(ext.aeth.map(|a| i64::from(a.msn)));
        col.va.append_option(ext.reth.map(|r| r.va));
        col.r_key
            .append_option(ext.reth.map(|r| i64::from(r.r_key)));
        col.dma_len
            .append_option(ext.reth.map(|r| i64::from(r.dma_len)));
        col.payload_len
            .append_option(roce.and_then(|r| r.payload_len).map(|l| l as i64));
        col.icrc_value
            .append_option(roce.and_then(|r| r.icrc).map(i64::from));
        col.icrc
            .append_option(roce.and_then(|r| r.icrc_status).map(|s| s.name()));
        match frame.malformed {
            Some(m) => {
                // Written into the column's buffer: no string of its own.
                let _ = write!(col.malformed, "{m}");
                col.malformed.append_value("");
                col.malformed_layer.append_value(m.layer.name());
            }
            None => {
                col.malformed.append_null();
                col.malformed_layer.append_null();
            }
        }
        col.flow.append_option(c.flow.map(|f| f.number() as i64));
        col.connection
            .append_option(flow.and_then(|f| f.conn).map(|l| i64::from(l.connection)));
        col.class.append_option(class_name(c.class));
        for kind in engine.events.raised.of(number) {
            col.events.values().append_value(kind);
        }
        col.events.append(true);
    }
}

impl EngineSide for Packets<'_> {
    fn examined(
        &mut self,
        number: u64,
        ts_nanos: u64,
        frame: &Frame,
        classified: Classified,
        engine: &Engine,
    ) {
        if !frame.to_roce {
            return;
        }
        self.row(number, ts_nanos, frame, classified, engine);
        if self.columns.len() >= BATCH_ROWS {
            self.hand_over();
        }
    }
}
