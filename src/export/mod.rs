//! `rocescope export --parquet DIR`: the analysis of capture files as three Parquet tables for engines
//! that answer fleet-wide questions (Spark, DuckDB: `jobs/`): `packets` (one row per RoCE frame, with how
//! the engine counted it), `flows` (every per-flow figure of the analyze JSON) and `events`. The schema is
//! in docs/export.md. Memory does not grow with the captures: the packets' rows go to the writer in
//! batches, the writer writes bounded row groups.
#[macro_use]
mod table;
mod encode;
mod events;
mod packets;
mod rows;
pub mod trace;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::pipeline;
use crate::report::Report;
use crate::source::open_point;
use events::Events;
use packets::Packets;
use rows::{FLOW, Rows};

pub use table::TableError;

/// The `mesh` table (`gen mesh --parquet FILE`): one row per pair object (`rows::MESH`'s columns).
pub fn write_mesh(path: &std::path::Path, pairs: &[serde_json::Value]) -> Result<u64, TableError> {
    let mut rows = rows::Rows::create(path, rows::MESH)?;
    for p in pairs {
        rows.push(p)?;
    }
    rows.close()
}

/// Why an export failed (nothing is renamed into place then).
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("cannot create {}", .dir.display())]
    CreateDir {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The staged `table` could not be renamed into `dir`.
    #[error("cannot move {table} into {}", .dir.display())]
    Move {
        table: &'static str,
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{} is a table this export writes: give another directory (the tables there stay as they are)",
        .0.display()
    )]
    InputIsTable(PathBuf),
    #[error(transparent)]
    Table(#[from] TableError),
    #[error(transparent)]
    Source(#[from] crate::source::SourceError),
    #[error(transparent)]
    Pipeline(#[from] pipeline::PipelineError),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error("cannot write the trace {}", .path.display())]
    Trace {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// What to export, and how to analyse it.
#[derive(Debug, Clone)]
pub struct Config {
    /// The directory the tables go to (created if missing).
    pub dir: PathBuf,
    /// The captures, each analysed on its own (`capture.file` tells their rows apart).
    pub files: Vec<PathBuf>,
    /// Where the captures were taken.
    pub points: Points,
    pub pipeline: pipeline::Config,
}

/// Where the captures of an export were taken: the `capture.point`, `capture.path` and
/// `capture.point_index` columns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Points {
    /// Each capture is a capture point of its own, named by its file.
    EachFile,
    /// Every capture was taken at this point (a host, a mirror session): pieces of one capture point.
    Named(String),
    /// The captures are the points of one path, in path order from the senders' side (`analyze --points`):
    /// each named by its file, the path by the names joined with " > ".
    Path,
}

/// One capture's place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Point {
    pub name: String,
    pub path: Option<String>,
    pub index: Option<i32>,
}

impl Points {
    /// The place of each of `names` (the captures' names, in the order given).
    fn of(&self, names: &[String]) -> Vec<Point> {
        let path = names.join(" > ");
        names
            .iter()
            .enumerate()
            .map(|(i, n)| match self {
                Points::EachFile => Point {
                    name: n.clone(),
                    path: None,
                    index: None,
                },
                Points::Named(point) => Point {
                    name: point.clone(),
                    path: None,
                    index: None,
                },
                Points::Path => Point {
                    name: n.clone(),
                    path: Some(path.clone()),
                    index: i32::try_from(i).ok(),
                },
            })
            .collect()
    }
}

/// What was written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    pub frames: u64,
    pub packets: u64,
    pub flows: u64,
    pub events: u64,
    /// The captures cut short (a killed tcpdump): what the reader said of each; their frames before the
    /// cut are exported.
    pub truncated: Vec<String>,
}

/// The tables' file names in `dir`.
pub const TABLES: [&str; 3] = ["packets.parquet", "flows.parquet", "events.parquet"];

/// Analyses every capture of `cfg` and writes the three tables: under names of their own first
/// (`.packets.parquet.part`: no reader's `**/packets.parquet` takes them), each renamed into place (a reader
/// sees the old table or the new one whole) once all three are complete. On an error nothing is renamed and
/// the tables there before stay as they were. An input that is one of the tables is refused before anything
/// is written.
pub fn export(cfg: &Config) -> Result<Summary, ExportError> {
    let dir = &cfg.dir;
    std::fs::create_dir_all(dir).map_err(|source| ExportError::CreateDir {
        dir: dir.clone(),
        source,
    })?;
    refuse_inputs_among_tables(cfg)?;
    let staged = TABLES.map(|t| dir.join(format!(".{t}.part")));
    let written = tables(cfg, &staged).and_then(|summary| {
        for (from, t) in staged.iter().zip(TABLES) {
            std::fs::rename(from, dir.join(t)).map_err(|source| ExportError::Move {
                table: t,
                dir: dir.clone(),
                source,
            })?;
        }
        Ok(summary)
    });
    for s in &staged {
        let _ = std::fs::remove_file(s);
    }
    written
}

/// An input that is one of the tables this export writes would be overwritten before it is read.
fn refuse_inputs_among_tables(cfg: &Config) -> Result<(), ExportError> {
    let canonical = |p: &Path| std::fs::canonicalize(p).ok();
    let tables: Vec<PathBuf> = TABLES
        .iter()
        .filter_map(|t| canonical(&cfg.dir.join(t)))
        .collect();
    match cfg
        .files
        .iter()
        .find(|f| canonical(f).is_some_and(|c| tables.contains(&c)))
    {
        Some(f) => Err(ExportError::InputIsTable(f.clone())),
        None => Ok(()),
    }
}

/// The three tables written to `paths` (packets, flows, events).
fn tables(cfg: &Config, paths: &[PathBuf; 3]) -> Result<Summary, ExportError> {
    let packets = Packets::create(&paths[0])?;
    let mut flows = Rows::create(&paths[1], FLOW)?;
    let mut events = Events::create(&paths[2])?;
    let mut summary = Summary::default();
    let names: Vec<String> = cfg.files.iter().map(|f| f.display().to_string()).collect();
    for (file, point) in cfg.files.iter().zip(cfg.points.of(&names)) {
        let report = one(file, &point, &cfg.pipeline, &packets, &mut summary)?;
        let capture = json!({
            "file": report.capture.file,
            "point": point.name,
            "path": point.path,
            "point_index": point.index,
        });
        for f in &report.flows {
            flows.push(&with_capture(f, &capture)?)?;
        }
        for e in &report.events {
            events.push(&report.capture.file, &point, e)?;
        }
    }
    summary.packets = packets.close()?;
    summary.flows = flows.close()?;
    summary.events = events.close()?;
    Ok(summary)
}

/// The pipeline over `file`, its RoCE frames into `packets`; returns its report.
fn one(
    file: &Path,
    point: &Point,
    cfg: &pipeline::Config,
    packets: &table::Table,
    summary: &mut Summary,
) -> Result<Report, ExportError> {
    // A directory is the pieces of one capture point (tcpdump's rotations), merged by time.
    let mut source = open_point(file)?;
    let name = file.display().to_string();
    let run = pipeline::run(
        &mut *source,
        cfg,
        &mut (),
        Packets::new(&name, point, packets),
    )?;
    let mut side = run.engine_side;
    side.flush()?;
    summary.frames += run.frames;
    let mut report = Report::build(&run.engine, &name);
    if let Some(e) = run.error {
        summary.truncated.push(format!("{name}: {e}"));
        report.cut_short(e.to_string());
    }
    Ok(report)
}

/// The JSON object of `row` with `capture` (`file`, `point`, `path`, `point_index`) added.
fn with_capture(row: &impl serde::Serialize, capture: &Value) -> Result<Value, ExportError> {
    let mut v = serde_json::to_value(row)?;
    if let Some(o) = v.as_object_mut() {
        o.insert("capture".to_string(), capture.clone());
    }
    Ok(v)
}
