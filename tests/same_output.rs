//! The outputs of `analyze` (JSON and text) and `dissect` (JSON, line view, `-V -x`) on every capture of
//! testdata/ and of the public corpus, held against a recorded digest of each (testdata/golden.tsv: the
//! command, the CRC-32 and length of its standard output, its exit status).
//!
//! This is a regression guard, not a statement of correctness (the other tests derive their figures
//! independently): it proves that a change meant to keep every output as it was (a restructuring, a speed-up)
//! did. A change meant to alter an output re-records the digests, in the same commit, with
//! `ROCESCOPE_BLESS=1 cargo test --test same_output`, and says why.
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

const VIEWS: [(&str, &[&str]); 5] = [
    ("analyze-json", &["analyze", "--json"]),
    ("analyze-text", &["analyze"]),
    ("dissect-json", &["dissect", "--json", "--all"]),
    ("dissect-line", &["dissect", "--all"]),
    ("dissect-tree", &["dissect", "-V", "-x"]),
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every capture, as a path relative to the repository root (the report names the file it was given).
fn captures() -> Vec<String> {
    let mut out = Vec::new();
    let mut add = |dir: &Path, shown: &str| {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.ends_with(".pcap") || name.ends_with(".pcapng") {
                out.push(format!("{shown}/{name}"));
            }
        }
    };
    for sub in [
        "analysis",
        "connections",
        "diagnosis",
        "edge",
        "lab",
        "public",
    ] {
        add(
            &root().join("testdata").join(sub),
            &format!("testdata/{sub}"),
        );
    }
    add(
        &root().join("../shared/corpus/public"),
        "../shared/corpus/public",
    );
    out.sort();
    out
}

fn digest(view: &[&str], capture: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_rocescope"))
        .args(view)
        .arg(capture)
        .current_dir(root())
        .env("NO_COLOR", "1")
        .output()
        .expect("rocescope runs");
    format!(
        "{:08x}\t{}\t{}",
        crc32fast::hash(&out.stdout),
        out.stdout.len(),
        out.status.code().unwrap_or(-1)
    )
}

#[test]
fn outputs_are_as_recorded() {
    let golden = root().join("testdata/golden.tsv");
    let mut now = String::new();
    for capture in captures() {
        for (name, view) in VIEWS {
            writeln!(now, "{name}\t{capture}\t{}", digest(view, &capture)).unwrap();
        }
    }
    if std::env::var_os("ROCESCOPE_BLESS").is_some() {
        std::fs::write(&golden, &now).unwrap();
        return;
    }
    let recorded = std::fs::read_to_string(&golden).expect("testdata/golden.tsv");
    let key = |l: &str| l.splitn(3, '\t').take(2).collect::<Vec<_>>().join("\t");
    let mut differ = Vec::new();
    for line in now.lines() {
        let k = key(line);
        match recorded.lines().find(|r| key(r) == k) {
            Some(r) if r == line => {}
            Some(r) => differ.push(format!("changed: {line}  (recorded: {r})")),
            // A capture not recorded (the corpus absent when it was recorded, or a new file): say so.
            None => differ.push(format!("not recorded: {line}")),
        }
    }
    assert!(
        differ.is_empty(),
        "{} outputs differ from testdata/golden.tsv:\n{}",
        differ.len(),
        differ.join("\n")
    );
}

/// `-j` changes how many threads run, not what they find: the JSON report of every capture, its ICRCs
/// checked on two threads of their own (`-j 4`) and by the one analysing thread (`-j 1`), is the one
/// recorded.
#[test]
fn the_report_is_the_same_at_any_thread_count() {
    let recorded =
        std::fs::read_to_string(root().join("testdata/golden.tsv")).expect("testdata/golden.tsv");
    let mut differ = Vec::new();
    for capture in captures() {
        let prefix = format!("analyze-json\t{capture}\t");
        // A capture not recorded is told by `outputs_are_as_recorded`.
        let Some(want) = recorded.lines().find_map(|l| l.strip_prefix(&prefix)) else {
            continue;
        };
        for threads in ["1", "4"] {
            let got = digest(&["analyze", "--json", "-j", threads], &capture);
            if got != want {
                differ.push(format!("-j {threads} {capture}: {got} (recorded: {want})"));
            }
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}
