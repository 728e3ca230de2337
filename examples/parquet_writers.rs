//! The two ways arrow-rs writes Parquet, on the same 2,000,000 rows of 30 integer and 8 string columns
//! shaped like the packets table's (constants, per-flow values, sequences, mostly-null columns; zstd 1,
//! row groups of 65,536, no statistics, sequences without a dictionary, as `export` writes them): Arrow
//! record batches through `ArrowWriter` against the low-level column writer fed plain vectors with their
//! definition levels. The rows are made before the clock starts; one thread. docs/speed.md quotes it:
//!
//!     cargo run --release --example parquet_writers -- arrow
//!     cargo run --release --example parquet_writers -- low
use std::sync::Arc;
use std::time::Instant;

use arrow_array::builder::{Int64Builder, StringBuilder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use parquet::basic::{Compression, Repetition, Type as PhysicalType, ZstdLevel};
use parquet::data_type::{ByteArray, ByteArrayType, Int64Type};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::Type;

const ROWS: usize = 2_000_000;
const BATCH: usize = 16_384;
const INTS: usize = 30;
const STRS: usize = 8;

fn props() -> WriterProperties {
    let mut b = WriterProperties::builder();
    for c in (0..INTS).step_by(6) {
        b = b.set_column_dictionary_enabled(
            parquet::schema::types::ColumnPath::from(format!("i{c}")),
            false,
        );
    }
    b.set_compression(Compression::ZSTD(ZstdLevel::try_new(1).unwrap()))
        .set_statistics_enabled(EnabledStatistics::None)
        .set_max_row_group_size(65_536)
        .set_write_batch_size(BATCH)
        .set_data_page_row_count_limit(65_536)
        .build()
}

/// Integer column `c` at row `r`: a sequence, a constant, a per-flow value, a mostly-null one, an all-null
/// one, a PSN-like one.
fn int_val(c: usize, r: usize) -> Option<i64> {
    let flow = (r * 7919) % 64;
    match c % 6 {
        0 => Some(r as i64),
        1 => Some(4791),
        2 => Some(flow as i64 * 3 + 100),
        3 => r.is_multiple_of(5).then_some(r as i64 % 1000),
        4 => None,
        _ => Some((flow * 1000 + r / 64) as i64 & 0xFFFFFF),
    }
}

/// String column `c` at row `r`: a file name, an address, an opcode name, null.
fn str_val(c: usize, r: usize) -> Option<&'static str> {
    const ADDR: [&str; 4] = ["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"];
    match c % 4 {
        0 => Some("testdata/x.pcap"),
        1 => Some(ADDR[r % 4]),
        2 => Some(["RC_WRITE_FIRST", "RC_WRITE_MIDDLE", "RC_ACK"][r % 3]),
        _ => None,
    }
}

fn arrow_path() {
    let mut fields = Vec::new();
    for c in 0..INTS {
        fields.push(Field::new(format!("i{c}"), DataType::Int64, true));
    }
    for c in 0..STRS {
        fields.push(Field::new(format!("s{c}"), DataType::Utf8, true));
    }
    let schema = Arc::new(Schema::new(fields));
    let file = std::fs::File::create("/tmp/pq-arrow.parquet").unwrap();
    let mut w = parquet::arrow::ArrowWriter::try_new(file, schema.clone(), Some(props())).unwrap();
    let tb = Instant::now();
    let mut batches = Vec::new();
    let mut r0 = 0;
    while r0 < ROWS {
        let n = BATCH.min(ROWS - r0);
        let mut cols: Vec<ArrayRef> = Vec::new();
        for c in 0..INTS {
            let mut b = Int64Builder::with_capacity(n);
            for r in r0..r0 + n {
                b.append_option(int_val(c, r));
            }
            cols.push(Arc::new(b.finish()));
        }
        for c in 0..STRS {
            let mut b = StringBuilder::with_capacity(n, n * 16);
            for r in r0..r0 + n {
                b.append_option(str_val(c, r));
            }
            cols.push(Arc::new(b.finish()));
        }
        batches.push(RecordBatch::try_new(schema.clone(), cols).unwrap());
        r0 += n;
    }
    println!("arrow build: {:.2} s", tb.elapsed().as_secs_f64());
    let t = Instant::now();
    for b in &batches {
        w.write(b).unwrap();
    }
    w.close().unwrap();
    println!("arrow path: {:.2} s", t.elapsed().as_secs_f64());
}

fn low_path() {
    let mut fields = Vec::new();
    for c in 0..INTS {
        fields.push(Arc::new(
            Type::primitive_type_builder(&format!("i{c}"), PhysicalType::INT64)
                .with_repetition(Repetition::OPTIONAL)
                .build()
                .unwrap(),
        ));
    }
    for c in 0..STRS {
        fields.push(Arc::new(
            Type::primitive_type_builder(&format!("s{c}"), PhysicalType::BYTE_ARRAY)
                .with_repetition(Repetition::OPTIONAL)
                .with_logical_type(Some(parquet::basic::LogicalType::String))
                .build()
                .unwrap(),
        ));
    }
    let schema = Arc::new(
        Type::group_type_builder("schema")
            .with_fields(fields)
            .build()
            .unwrap(),
    );
    let file = std::fs::File::create("/tmp/pq-low.parquet").unwrap();
    let mut w = SerializedFileWriter::new(file, schema, Arc::new(props())).unwrap();
    let mut cache: std::collections::HashMap<&'static str, ByteArray> = Default::default();
    let group = 65_536;
    let mut groups = Vec::new();
    let mut r0 = 0;
    while r0 < ROWS {
        let n = group.min(ROWS - r0);
        let mut ints: Vec<(Vec<i64>, Vec<i16>)> =
            (0..INTS).map(|_| (Vec::new(), Vec::new())).collect();
        let mut strs: Vec<(Vec<ByteArray>, Vec<i16>)> =
            (0..STRS).map(|_| (Vec::new(), Vec::new())).collect();
        for r in r0..r0 + n {
            for (c, (v, d)) in ints.iter_mut().enumerate() {
                match int_val(c, r) {
                    Some(x) => {
                        v.push(x);
                        d.push(1);
                    }
                    None => d.push(0),
                }
            }
            for (c, (v, d)) in strs.iter_mut().enumerate() {
                match str_val(c, r) {
                    Some(x) => {
                        v.push(cache.entry(x).or_insert_with(|| ByteArray::from(x)).clone());
                        d.push(1);
                    }
                    None => d.push(0),
                }
            }
        }
        groups.push((ints, strs));
        r0 += n;
    }
    let t = Instant::now();
    for (ints, strs) in &groups {
        let mut g = w.next_row_group().unwrap();
        for (v, d) in ints {
            let mut col = g.next_column().unwrap().unwrap();
            col.typed::<Int64Type>()
                .write_batch(v, Some(d), None)
                .unwrap();
            col.close().unwrap();
        }
        for (v, d) in strs {
            let mut col = g.next_column().unwrap().unwrap();
            col.typed::<ByteArrayType>()
                .write_batch(v, Some(d), None)
                .unwrap();
            col.close().unwrap();
        }
        g.close().unwrap();
    }
    w.close().unwrap();
    println!("low path: {:.2} s", t.elapsed().as_secs_f64());
}

fn main() {
    match std::env::args().nth(1).as_deref() {
        Some("low") => low_path(),
        _ => arrow_path(),
    }
}
