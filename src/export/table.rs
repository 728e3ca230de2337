//! One Parquet file written on a thread of its own: the caller hands it Arrow record batches and goes on
//! (the packets' columns are filled on the engine thread, encoded and compressed here).
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{SyncSender, sync_channel};
use std::thread::JoinHandle;

use arrow_array::builder::{BooleanBuilder, ListBuilder, PrimitiveBuilder, StringBuilder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{Field, Schema, SchemaRef};
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::errors::ParquetError;
use parquet::file::properties::EnabledStatistics;
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;

/// Rows of a row group at most: what the writer holds before it writes one (encoded and compressed, a
/// few MB for the packets' columns), whatever the capture's size.
pub const ROW_GROUP: usize = 64 * 1024;

/// Rows the caller gathers before it hands them over (a quarter of a row group: the batches in flight and
/// the row group being encoded bound the memory).
pub const BATCH_ROWS: usize = ROW_GROUP / 4;

/// Batches on their way to the writer at most.
const IN_FLIGHT: usize = 2;

/// zstd level 1: most of the size gain of higher levels at a fraction of their time (export speed is a
/// goal: at least half of `analyze`'s frames/s).
const ZSTD_LEVEL: i32 = 1;

/// Why a table could not be written.
#[derive(Debug, thiserror::Error)]
pub enum TableError {
    #[error("cannot create {}", .path.display())]
    Create {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Parquet(#[from] ParquetError),
    /// The writer of the table at `path` failed.
    #[error("{}", .path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: ParquetError,
    },
    /// Columns that make no batch of the table's schema.
    #[error("{}", .path.display())]
    Batch {
        path: PathBuf,
        #[source]
        source: arrow_schema::ArrowError,
    },
    #[error("cannot start the Parquet writer")]
    Thread(#[source] std::io::Error),
    #[error("the Parquet writer panicked")]
    Panicked,
}

pub struct Table {
    path: PathBuf,
    schema: SchemaRef,
    rows: SyncSender<RecordBatch>,
    writer: JoinHandle<Result<u64, TableError>>,
}

impl Table {
    /// Creates `path` for columns like `empty` (named by `names`, one empty array each: their types are the
    /// schema's) and starts its writer. `sequences` are the integer columns that grow row by row (frame
    /// numbers, times), `scattered` those with many values in no order.
    pub fn create(
        path: &Path,
        names: &[&str],
        empty: Vec<ArrayRef>,
        sequences: &[&str],
        scattered: &[&str],
    ) -> Result<Table, TableError> {
        let fields: Vec<Field> = names
            .iter()
            .zip(&empty)
            .map(|(n, a)| Field::new(*n, a.data_type().clone(), true))
            .collect();
        let schema = Arc::new(Schema::new(fields));
        let file = File::create(path).map_err(|source| TableError::Create {
            path: path.to_path_buf(),
            source,
        })?;
        let mut props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::try_new(ZSTD_LEVEL)?))
            // Statistics cost a comparison per value in every column: only the columns a query selects
            // ranges of (times, frame numbers) keep them, per column chunk.
            .set_statistics_enabled(EnabledStatistics::None)
            .set_max_row_group_size(ROW_GROUP)
            // The encoder works through a column this many values at a time, with buffers of its own
            // each time: a batch at a time, not the default 1024.
            .set_write_batch_size(BATCH_ROWS)
            // A page per column and row group where the values allow (1 MB at most): every page costs
            // a compression context and headers.
            .set_data_page_row_count_limit(ROW_GROUP);
        for name in sequences {
            // A new value nearly every row: a dictionary would fill up for nothing; deltas are small.
            let column = ColumnPath::from(*name);
            props = props
                .set_column_dictionary_enabled(column.clone(), false)
                .set_column_encoding(column.clone(), Encoding::DELTA_BINARY_PACKED)
                .set_column_statistics_enabled(column, EnabledStatistics::Chunk);
        }
        for name in scattered {
            // Many values, in no order (PSNs of many flows, addresses in memory): hashing each into a
            // dictionary costs more than compressing them plain.
            props = props.set_column_dictionary_enabled(ColumnPath::from(*name), false);
        }
        let props = props.build();
        let (rows, batches) = sync_channel::<RecordBatch>(IN_FLIGHT);
        let at = path.to_path_buf();
        let columns = Arc::clone(&schema);
        let writer = std::thread::Builder::new()
            .name("parquet".to_string())
            .spawn(move || {
                super::encode::write(file, columns, props, batches)
                    .map_err(|source| TableError::Write { path: at, source })
            })
            .map_err(TableError::Thread)?;
        Ok(Table {
            path: path.to_path_buf(),
            schema,
            rows,
            writer,
        })
    }

    /// Hands the columns of some rows over (in the schema's order).
    pub fn write(&self, columns: Vec<ArrayRef>) -> Result<(), TableError> {
        let batch = RecordBatch::try_new(Arc::clone(&self.schema), columns).map_err(|source| {
            TableError::Batch {
                path: self.path.clone(),
                source,
            }
        })?;
        if batch.num_rows() == 0 {
            return Ok(());
        }
        // A writer that stopped said why: `close` reports it.
        let _ = self.rows.send(batch);
        Ok(())
    }

    /// Writes what is left and the footer; returns the rows written.
    pub fn close(self) -> Result<u64, TableError> {
        drop(self.rows);
        self.writer.join().map_err(|_| TableError::Panicked)?
    }
}

/// A column's builder with room for a batch of rows: it grows rarely, if ever, within one.
pub trait Fresh {
    fn fresh() -> Self;
}

impl<T: arrow_array::types::ArrowPrimitiveType> Fresh for PrimitiveBuilder<T> {
    fn fresh() -> Self {
        PrimitiveBuilder::with_capacity(BATCH_ROWS)
    }
}

impl Fresh for BooleanBuilder {
    fn fresh() -> Self {
        BooleanBuilder::with_capacity(BATCH_ROWS)
    }
}

impl Fresh for StringBuilder {
    fn fresh() -> Self {
        // Names and addresses: 16 bytes a row is most of them.
        StringBuilder::with_capacity(BATCH_ROWS, BATCH_ROWS * 16)
    }
}

impl Fresh for ListBuilder<StringBuilder> {
    fn fresh() -> Self {
        // Event kinds: few frames raise any.
        ListBuilder::with_capacity(StringBuilder::new(), BATCH_ROWS)
    }
}

/// Declares the builders of a table's columns once: their column names and the arrays they make.
macro_rules! columns {
    ($name:ident { $($field:ident: $builder:ty = $column:literal,)* }) => {
        struct $name {
            $($field: $builder,)*
        }

        impl $name {
            const NAMES: &[&str] = &[$($column),*];

            fn new() -> Self {
                $name { $($field: $crate::export::table::Fresh::fresh(),)* }
            }

            /// The columns so far; the builders start again, each with room for a batch.
            fn finish(&mut self) -> Vec<ArrayRef> {
                vec![$(Arc::new(
                    std::mem::replace(&mut self.$field, $crate::export::table::Fresh::fresh()).finish(),
                ) as ArrayRef),*]
            }

            fn len(&self) -> usize {
                self.file.len()
            }
        }
    };
}
