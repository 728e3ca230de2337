//! Encoding a table's row groups with its columns shared among threads: most of an export's time is the
//! encoding and compression of the packets' columns, which are independent of each other (the way arrow-rs
//! documents for `ArrowColumnWriter`).
use std::fs::File;
use std::iter::Peekable;
use std::sync::mpsc::{Receiver, channel};

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_writer::{
    ArrowColumnChunk, ArrowColumnWriter, ArrowLeafColumn, ArrowRowGroupWriterFactory,
    compute_leaves,
};
use parquet::errors::ParquetError;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;

use super::table::ROW_GROUP;

/// Threads that encode at most (each takes every n-th column).
const ENCODERS: usize = 4;

/// Writes every batch of `batches` to `file` in row groups of at most [`ROW_GROUP`] rows; returns the rows
/// written.
pub fn write(
    file: File,
    schema: SchemaRef,
    props: WriterProperties,
    batches: Receiver<RecordBatch>,
) -> Result<u64, ParquetError> {
    let (mut writer, factory) =
        ArrowWriter::try_new(file, schema.clone(), Some(props))?.into_serialized_writer()?;
    let encoders = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(ENCODERS);
    let mut batches = batches.into_iter().peekable();
    let mut written = 0;
    let mut group = 0;
    while batches.peek().is_some() {
        written += row_group(
            &mut writer,
            &factory,
            group,
            &schema,
            &mut batches,
            encoders,
        )?;
        group += 1;
    }
    writer.close()?;
    Ok(written)
}

/// One row group: the batches that fit, encoded by `encoders` threads, appended in column order.
fn row_group(
    writer: &mut SerializedFileWriter<File>,
    factory: &ArrowRowGroupWriterFactory,
    group: usize,
    schema: &SchemaRef,
    batches: &mut Peekable<impl Iterator<Item = RecordBatch>>,
    encoders: usize,
) -> Result<u64, ParquetError> {
    let mut shares: Vec<Vec<(usize, ArrowColumnWriter)>> =
        (0..encoders).map(|_| Vec::new()).collect();
    for (i, w) in factory
        .create_column_writers(group)?
        .into_iter()
        .enumerate()
    {
        shares[i % encoders].push((i, w));
    }
    let mut rows = 0;
    let mut chunks: Vec<(usize, ArrowColumnChunk)> = std::thread::scope(|s| {
        let mut senders = Vec::new();
        let mut handles = Vec::new();
        for share in shares {
            let (tx, rx) = channel::<Vec<ArrowLeafColumn>>();
            senders.push(tx);
            handles.push(s.spawn(move || encode(share, rx)));
        }
        while let Some(b) = batches.next_if(|b| rows + b.num_rows() <= ROW_GROUP || rows == 0) {
            rows += b.num_rows();
            let mut parts: Vec<Vec<ArrowLeafColumn>> = (0..encoders).map(|_| Vec::new()).collect();
            let mut leaf = 0;
            for (field, array) in schema.fields().iter().zip(b.columns()) {
                for l in compute_leaves(field, array)? {
                    parts[leaf % encoders].push(l);
                    leaf += 1;
                }
            }
            for (tx, part) in senders.iter().zip(parts) {
                // An encoder that stopped said why: its result below.
                let _ = tx.send(part);
            }
        }
        drop(senders);
        let mut all = Vec::new();
        for h in handles {
            all.extend(
                h.join()
                    .map_err(|_| ParquetError::General("an encoder panicked".into()))??,
            );
        }
        Ok::<_, ParquetError>(all)
    })?;
    chunks.sort_by_key(|(i, _)| *i);
    let mut group_writer = writer.next_row_group()?;
    for (_, chunk) in chunks {
        chunk.append_to_row_group(&mut group_writer)?;
    }
    group_writer.close()?;
    Ok(rows as u64)
}

/// An encoder's columns: each message holds one leaf for each of them, in order.
fn encode(
    mut share: Vec<(usize, ArrowColumnWriter)>,
    leaves: Receiver<Vec<ArrowLeafColumn>>,
) -> Result<Vec<(usize, ArrowColumnChunk)>, ParquetError> {
    for part in leaves {
        for ((_, w), l) in share.iter_mut().zip(&part) {
            w.write(l)?;
        }
    }
    share
        .into_iter()
        .map(|(i, w)| Ok((i, w.close()?)))
        .collect()
}
