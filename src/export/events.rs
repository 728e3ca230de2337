//! The events table: one row per event of the analyze JSON, each field a column of the same name
//! (`detail`, whose figures depend on the kind, as JSON text).
use std::path::Path;
use std::sync::Arc;

use arrow_array::ArrayRef;
use arrow_array::builder::{
    ArrayBuilder, Float64Builder, Int32Builder, Int64Builder, StringBuilder,
};

use super::table::{BATCH_ROWS, Table, TableError};
use super::{ExportError, Point};
use crate::report::EventReport;

columns!(Columns {
    file: StringBuilder = "capture.file",
    point: StringBuilder = "capture.point",
    path: StringBuilder = "capture.path",
    point_index: Int32Builder = "capture.point_index",
    time: Float64Builder = "time",
    severity: StringBuilder = "severity",
    kind: StringBuilder = "kind",
    flow: Int64Builder = "flow",
    frame: Int64Builder = "frame",
    psn: Int64Builder = "psn",
    detail: StringBuilder = "detail",
    message: StringBuilder = "message",
});

pub struct Events {
    columns: Columns,
    table: Table,
}

impl Events {
    pub fn create(path: &Path) -> Result<Events, TableError> {
        Ok(Events {
            table: Table::create(
                path,
                Columns::NAMES,
                Columns::new().finish(),
                &["frame"],
                &[],
            )?,
            columns: Columns::new(),
        })
    }

    /// The row of event `e` of capture `file`, taken at `point`.
    pub fn push(&mut self, file: &str, point: &Point, e: &EventReport) -> Result<(), ExportError> {
        let c = &mut self.columns;
        c.file.append_value(file);
        c.point.append_value(&point.name);
        c.path.append_option(point.path.as_deref());
        c.point_index.append_option(point.index);
        c.time.append_value(e.time);
        c.severity.append_value(e.severity.name());
        c.kind.append_value(e.kind);
        c.flow.append_option(e.flow.map(|f| f as i64));
        c.frame.append_value(e.frame as i64);
        c.psn.append_option(e.psn.map(i64::from));
        let detail = serde_json::to_string(&e.detail)?;
        c.detail.append_value(detail);
        c.message.append_value(&e.message);
        if c.len() >= BATCH_ROWS {
            self.table.write(c.finish())?;
        }
        Ok(())
    }

    /// Writes the rows left and closes the table; returns the rows written.
    pub fn close(mut self) -> Result<u64, TableError> {
        self.table.write(self.columns.finish())?;
        self.table.close()
    }
}
