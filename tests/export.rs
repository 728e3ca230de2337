//! `rocescope export --parquet`: every capture of testdata/ and of the public corpus exported in one run,
//! read back with pyarrow (tests/python/export_check.py) and held against tshark (which frames are RoCE)
//! and `rocescope analyze --json --all-flows` (every flow's figures, every event); the fleet jobs of jobs/
//! (Spark, DuckDB) over a tree of exports, flow by flow against the same JSON.
#![cfg(feature = "export")]
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

#[path = "common/pieces.rs"]
mod pieces;

const BIN: &str = env!("CARGO_BIN_EXE_rocescope");

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every capture of testdata/ and ../shared/corpus/public, relative to the repository root (as the
/// tables name them).
fn captures() -> Vec<String> {
    let mut out = Vec::new();
    let dirs = ["testdata", "../shared/corpus"];
    for top in dirs {
        let Ok(subs) = std::fs::read_dir(root().join(top)) else {
            continue;
        };
        for sub in subs.flatten().filter(|e| e.path().is_dir()) {
            for e in std::fs::read_dir(sub.path())
                .into_iter()
                .flatten()
                .flatten()
            {
                let name = e.file_name().to_string_lossy().into_owned();
                if name.ends_with(".pcap") || name.ends_with(".pcapng") {
                    let sub = sub.file_name().to_string_lossy().into_owned();
                    out.push(format!("{top}/{sub}/{name}"));
                }
            }
        }
    }
    out.sort();
    out
}

/// The frames tshark takes for RoCE (InfiniBand, or UDP to 4791), each as its frame number, IPv4
/// identification and ICRC (the innermost: a mirrored frame's), null where tshark shows none; `None` when
/// tshark cannot read the file.
fn tshark_roce(file: &str) -> Option<Vec<Value>> {
    let out = Command::new("tshark")
        .current_dir(root())
        .args(["-r", file, "-Y", "infiniband or udp.dstport == 4791"])
        .args(["-T", "fields", "-E", "occurrence=l"])
        .args(["-e", "frame.number", "-e", "ip.id"])
        .args(["-e", "infiniband.invariant.crc"])
        .output()
        .expect("run tshark (scripts/test installs it)");
    if !out.status.success() {
        return None;
    }
    let hex = |s: Option<&str>| {
        s.and_then(|s| s.strip_prefix("0x"))
            .map(|h| u64::from_str_radix(h, 16).expect("a hexadecimal field"))
    };
    Some(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| {
                let mut f = l.split('\t');
                let number: u64 = f.next().unwrap().trim().parse().expect("a frame number");
                json!([number, hex(f.next()), hex(f.next())])
            })
            .collect(),
    )
}

/// The analyze JSON of `file`, as written (parsing it here would round its times).
fn analyze(file: &str) -> String {
    let out = Command::new(BIN)
        .current_dir(root())
        .args(["analyze", file, "--json", "--all-flows", "--no-progress"])
        .output()
        .expect("run rocescope analyze");
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    serde_json::from_str::<Value>(&text).unwrap_or_else(|e| panic!("{file}: analyze JSON: {e}"));
    text
}

/// What the tables are held against, for each of `files`: its name, tshark's RoCE frames (with `tshark`)
/// and its analyze JSON, as one JSON array. tshark mostly waits (it starts slowly): several run at once.
fn expected(files: &[String], tshark: bool) -> String {
    let tshark: Vec<Option<Vec<Value>>> = std::thread::scope(|s| {
        if !tshark {
            return vec![None; files.len()];
        }
        let runs: Vec<_> = files
            .chunks(files.len().div_ceil(8))
            .map(|part| s.spawn(move || part.iter().map(|f| tshark_roce(f)).collect::<Vec<_>>()))
            .collect();
        runs.into_iter()
            .flat_map(|r| r.join().expect("tshark thread"))
            .collect()
    });
    let rows: Vec<String> = files
        .iter()
        .zip(tshark)
        .map(|(f, t)| {
            let head = json!({ "file": f, "tshark": t }).to_string();
            format!("{},\"report\":{}}}", &head[..head.len() - 1], analyze(f))
        })
        .collect();
    format!("[{}]", rows.join(","))
}

/// Exports `files` into `dir` (relative paths from the repository root).
pub fn export(dir: &Path, files: &[String]) {
    let out = Command::new(BIN)
        .current_dir(root())
        .arg("export")
        .arg("--parquet")
        .arg(dir)
        .args(files)
        .output()
        .expect("run rocescope export");
    assert!(
        out.status.success(),
        "export failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Exports the capture points `files` of one path into `dir` (`export --points`).
fn export_points(dir: &Path, files: &[&str]) {
    let out = Command::new(BIN)
        .args(["export", "--parquet"])
        .arg(dir)
        .arg("--points")
        .args(files)
        .output()
        .expect("run rocescope export");
    assert!(
        out.status.success(),
        "export --points failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn python(script: &str, args: &[&Path]) -> String {
    let out = Command::new("python3")
        .arg(root().join("tests/python").join(script))
        .args(args)
        .current_dir(root())
        .output()
        .expect("run python3");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{script}:\n{text}");
    text
}

#[test]
fn every_capture_round_trips_through_parquet() {
    let files = captures();
    assert!(files.len() > 80, "testdata and the corpus: {}", files.len());
    let dir =
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("export-{}", std::process::id()));
    export(&dir, &files);
    let path = dir.join("expected.json");
    std::fs::write(&path, expected(&files, true)).unwrap();
    let said = python("export_check.py", &[&dir, &path]);
    eprintln!("{said}");
    // Every capture was held against its tables.
    assert!(
        said.contains(&format!("rows of {} captures", files.len())),
        "{said}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The fleet jobs (jobs/spark/fleet.py in Spark's local mode, one session for all; jobs/duckdb/fleet.sql)
/// over a tree of exports, one directory per directory of captures: each flow's figures, counted from the
/// packets table, equal to its analyze JSON, and every result the same from both jobs
/// (tests/python/fleet_check.py); and, from an export of two capture points made with known drops, the
/// loss per segment each way equal to the drops.
#[test]
fn the_fleet_jobs_agree_with_analyze_flow_by_flow() {
    let files = captures();
    let tree =
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("fleet-{}", std::process::id()));
    let mut groups: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for f in &files {
        // testdata-edge, shared-corpus-public: Spark skips names that start with `_` or `.`.
        let parent = Path::new(f)
            .parent()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let dir = parent.trim_start_matches("../").replace('/', "-");
        groups.entry(dir).or_default().push(f.clone());
    }
    for (dir, group) in &groups {
        export(&tree.join(dir), group);
    }
    // Two capture points of one path with known drops (tests/common/pieces.rs), exported as a path.
    let made = tree.with_extension("points");
    let two = pieces::two_points(&root().join("testdata/lab/write_loss.pcap"), &made);
    // A as tcpdump -C would leave it: a directory of pieces, exported as one capture point.
    let rotated = made.join("A-rotated");
    pieces::rotate(&two.a, &rotated, 3);
    let (a, b) = (rotated.display().to_string(), two.b.display().to_string());
    export_points(&tree.join("points-write_loss"), &[&a, &b]);
    let segments = json!([{
        "capture_path": format!("{a} > {b}"), "segment": 0, "from_point": a, "to_point": b,
        "lost_forward": two.lost_forward.len(), "lost_reverse": two.lost_reverse.len(),
    }]);
    assert!(two.lost_forward.len() >= 3 && !two.lost_reverse.is_empty());
    let path = tree.join("expected.json");
    std::fs::write(&path, expected(&files, false)).unwrap();
    let seg_path = tree.join("segments.json");
    std::fs::write(&seg_path, segments.to_string()).unwrap();
    let said = python("fleet_check.py", &[&tree, &path, &seg_path]);
    eprintln!("{said}");
    for job in ["spark", "duckdb"] {
        assert!(said.contains(&format!("{job}: ")), "{said}");
    }
    assert!(said.contains("per_segment: 1 rows"), "{said}");
    let _ = std::fs::remove_dir_all(&made);
    let _ = std::fs::remove_dir_all(&tree);
}

/// One capture exported as a file, as a directory holding it and from standard input: the same tables
/// (capture.* aside), every RoCE frame a packet row, the CM's on QP 1 too (tshark: 96 RoCE frames in
/// rdma_cm.pcap, 12 of them CM MADs).
#[test]
fn a_file_a_directory_holding_it_and_standard_input_export_the_same() {
    let file = "testdata/public/rdma_cm.pcap";
    let frames = tshark_roce(file).expect("tshark reads the capture").len();
    let base = std::env::temp_dir().join(format!("rocescope-export-same-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let (of_file, of_dir, of_stdin, holding) = (
        base.join("file"),
        base.join("dir"),
        base.join("stdin"),
        base.join("holding"),
    );
    std::fs::create_dir_all(&holding).unwrap();
    std::fs::copy(root().join(file), holding.join("rdma_cm.pcap")).unwrap();
    export(&of_file, &[file.to_string()]);
    export(&of_dir, &[holding.display().to_string()]);
    let out = Command::new(BIN)
        .args(["export", "--parquet"])
        .arg(&of_stdin)
        .arg("-")
        .stdin(std::fs::File::open(root().join(file)).unwrap())
        .output()
        .expect("run rocescope export -");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = python("same_tables.py", &[&of_file, &of_dir, &of_stdin]);
    assert!(said.contains(&format!("packets: {frames} rows")), "{said}");
    assert_eq!(frames, 96, "tshark's RoCE frames of {file}");
    std::fs::remove_dir_all(&base).unwrap();
}

/// A failed export (a mistyped input after a good one) leaves the tables there before as they were, and
/// an input that is one of the tables is refused in one line before anything is written (it was truncated
/// before it was read).
#[test]
fn a_failed_export_keeps_the_tables_there_before() {
    let dir = std::env::temp_dir().join(format!("rocescope-export-safe-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    export(&dir, &["testdata/public/rdma_cm.pcap".to_string()]);
    let before: Vec<Vec<u8>> = TABLES_WRITTEN
        .iter()
        .map(|t| std::fs::read(dir.join(t)).unwrap())
        .collect();
    let run = |args: &[&std::ffi::OsStr]| {
        Command::new(BIN)
            .current_dir(root())
            .args(["export", "--parquet"])
            .arg(&dir)
            .args(args)
            .output()
            .expect("run rocescope export")
    };
    let typo = run(&[
        "testdata/public/rdma_write_bw.pcap".as_ref(),
        "no/such/capture.pcap".as_ref(),
    ]);
    assert!(!typo.status.success());
    let table = dir.join("packets.parquet");
    let onto = run(&[table.as_os_str()]);
    assert!(!onto.status.success());
    let said = String::from_utf8_lossy(&onto.stderr);
    assert_eq!(said.trim().lines().count(), 1, "{said}");
    assert!(said.contains("is a table this export writes"), "{said}");
    for (t, was) in TABLES_WRITTEN.iter().zip(&before) {
        assert_eq!(&std::fs::read(dir.join(t)).unwrap(), was, "{t} changed");
    }
    let left: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !TABLES_WRITTEN.contains(&n.as_str()))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

const TABLES_WRITTEN: [&str; 3] = ["packets.parquet", "flows.parquet", "events.parquet"];

/// Three flows over 600 s, as built here: X (10.0.0.1 to QP 0x11) a WRITE every second for 10 s, then idle;
/// Y (10.0.0.2 to QP 0x12) one every 10 s from 0 to 600 s (61); Z (10.0.0.3 to QP 0x13) one a second from 500
/// s to 519 s (20). X goes idle past the 300 s flow timeout and is evicted; with `--max-flows 2` (and no
/// timeout) the least recently seen, X, goes when Z comes. Either way the DuckDB job's per-flow counts, joined on the
/// packets' flow id, equal `flows.parquet` for every flow there (Y 61 packets, Z 20: flow ids are never
/// reused), which they did not when an eviction renumbered the flows.
#[test]
fn per_flow_counts_join_their_flows_after_evictions() {
    use parsers::builder::{Net, RoceFrame};
    use parsers::savefile::{self, Resolution};
    let write = |src: u8, qp: u32, psn: u32| {
        let mut f = RoceFrame::new(0x0A);
        if let Net::V4(ip) = &mut f.net {
            ip.src = [10, 0, 0, src];
            ip.dst = [10, 0, 0, 100];
        }
        f.bth.dest_qp = qp;
        f.bth.psn = psn;
        f.ext.reth = Some(parsers::reth::Reth {
            va: 0x1000,
            r_key: 7,
            dma_len: 16,
        });
        f.payload = vec![psn as u8; 16];
        f.build()
    };
    const S: u64 = 1_000_000_000;
    let start = 1_767_225_600 * S;
    let mut frames: Vec<(u64, Vec<u8>)> = Vec::new();
    frames.extend((0..10u32).map(|i| (start + u64::from(i) * S, write(1, 0x11, i))));
    frames.extend((0..=60u32).map(|i| (start + u64::from(i) * 10 * S + 1, write(2, 0x12, i))));
    frames.extend((0..20u32).map(|i| (start + (500 + u64::from(i)) * S + 2, write(3, 0x13, i))));
    frames.sort_by_key(|f| f.0);
    let base = std::env::temp_dir().join(format!("rocescope-evicted-joins-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(&base).unwrap();
    let capture = base.join("come_and_go.pcap");
    let mut out = Vec::new();
    savefile::pcap_file_header(&mut out, Resolution::Nanos, 262_144, 1);
    for (t, d) in &frames {
        savefile::pcap_record(&mut out, Resolution::Nanos, *t, d, d.len() as u32);
    }
    std::fs::write(&capture, out).unwrap();
    let by_table = vec!["--max-flows", "2", "--flow-timeout", "0"];
    for (name, args) in [("timeout", vec![]), ("max-flows", by_table)] {
        let tree = base.join(name);
        let dir = tree.join("export");
        let o = Command::new(BIN)
            .args(["export", "--parquet"])
            .arg(&dir)
            .arg(&capture)
            .args(&args)
            .output()
            .expect("run rocescope export");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let rows = read_columns(&dir.join("flows.parquet"), &["src", "packets"]);
        let packets = |src: &str| rows.iter().find(|r| r[0] == src).map(|r| r[1].clone());
        assert_eq!(packets("10.0.0.1"), None, "{name}: X was evicted");
        assert_eq!(packets("10.0.0.2").as_deref(), Some("61"), "{name}");
        assert_eq!(packets("10.0.0.3").as_deref(), Some("20"), "{name}");
        let said = python("per_flow_check.py", &[&tree]);
        assert!(said.contains("compared 2 flows"), "{name}: {said}");
    }
    std::fs::remove_dir_all(&base).unwrap();
}

/// The columns `names` of a table, each value as text (null as "").
fn read_columns(path: &Path, names: &[&str]) -> Vec<Vec<String>> {
    use arrow_array::Array;
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    let file = std::fs::File::open(path).expect("open the table");
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .and_then(|b| b.build())
        .expect("read the table");
    let mut rows = Vec::new();
    for batch in reader {
        let batch = batch.expect("a batch");
        for i in 0..batch.num_rows() {
            let row = names
                .iter()
                .map(|n| {
                    let c = batch.column_by_name(n).expect("the column");
                    if c.is_null(i) {
                        String::new()
                    } else if let Some(s) = c.as_string_opt::<i32>() {
                        s.value(i).to_string()
                    } else {
                        c.as_primitive::<Int64Type>().value(i).to_string()
                    }
                })
                .collect();
            rows.push(row);
        }
    }
    rows
}

/// A capture larger than a row group: every frame a row, in row groups of at most 65,536 rows (what the
/// writer holds at once), and each flow's packets, PSN gaps and missing PSNs those of the generator's
/// ground truth.
#[test]
fn a_large_capture_is_written_in_bounded_row_groups() {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let capture = tmp.join(format!("export-synth-{}.pcap", std::process::id()));
    let params = synth::Params {
        frames: 150_000,
        qps: 8,
        seed: 3,
        ..synth::Params::default()
    };
    let file = std::fs::File::create(&capture).expect("create the capture");
    let truth = synth::generate(&params, std::io::BufWriter::new(file)).expect("generate");
    let dir = tmp.join(format!("export-synth-{}", std::process::id()));
    export(&dir, &[capture.to_string_lossy().into_owned()]);
    let packets = std::fs::File::open(dir.join("packets.parquet")).unwrap();
    let reader = SerializedFileReader::new(packets).expect("read packets.parquet");
    let rows: Vec<i64> = reader
        .metadata()
        .row_groups()
        .iter()
        .map(|g| g.num_rows())
        .collect();
    assert_eq!(rows, [65536, 65536, 150_000 - 2 * 65536]);
    let columns = [
        "src",
        "dst",
        "dest_qp",
        "packets",
        "psn.gap_events",
        "psn.missing",
    ];
    let mut flows = read_columns(&dir.join("flows.parquet"), &columns);
    flows.sort();
    let mut want = Vec::new();
    for c in &truth.conns {
        let r = &c.req;
        let (qp, resp_qp) = (c.responder_qpn.to_string(), c.requester_qpn.to_string());
        want.push(vec![
            c.requester.clone(),
            c.responder.clone(),
            qp,
            r.packets.to_string(),
            r.gap_events.to_string(),
            r.missing.to_string(),
        ]);
        want.push(vec![
            c.responder.clone(),
            c.requester.clone(),
            resp_qp,
            c.resp.packets.to_string(),
            "0".into(),
            "0".into(),
        ]);
    }
    want.sort();
    assert_eq!(flows, want);
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&capture);
}
