//! Hostile captures: every capture in testdata (and mirror copies of three, one and two encapsulations deep),
//! mutated many ways (bits flipped, bytes changed in headers,
//! records cut or lengthened), goes through the whole pipeline (reader, parser, engine, reports, dissect
//! views) without a panic, a hang or unbounded memory. Deterministic: a fixed-seed generator.
use std::io::Cursor;
use std::path::PathBuf;

use parsers::{Config, parse_frame};
use rocescope::analysis::{self, Engine};
use rocescope::report::{Report, text};
use rocescope::source::FileSource;

/// xorshift64*: a small deterministic generator, so a failure can be replayed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn mutate(rng: &mut Rng, original: &[u8]) -> Vec<u8> {
    let mut b = original.to_vec();
    for _ in 0..1 + rng.below(8) {
        match rng.below(5) {
            // Flip a bit anywhere.
            0 => {
                let i = rng.below(b.len());
                b[i] ^= 1 << rng.below(8);
            }
            // An extreme byte.
            1 => {
                let i = rng.below(b.len());
                b[i] = [0x00, 0xFF, 0x80, 0x7F][rng.below(4)];
            }
            // Cut the file.
            2 => {
                let n = rng.below(b.len());
                b.truncate(n.max(1));
            }
            // Duplicate a slice (shifts every record after it).
            3 => {
                let i = rng.below(b.len());
                let n = rng.below(64);
                let piece: Vec<u8> = b[i..(i + n).min(b.len())].to_vec();
                b.splice(i..i, piece);
            }
            // Overwrite 4 bytes with a large length-like value.
            _ if b.len() >= 4 => {
                let i = rng.below(b.len() - 3);
                let v = [0xFFFF_FFFFu32, 0x0001_0000, 0x4000_0000, 65535][rng.below(4)];
                b[i..i + 4].copy_from_slice(&v.to_le_bytes());
            }
            _ => {}
        }
        if b.is_empty() {
            break;
        }
    }
    b
}

/// The whole pipeline over one input; errors from the reader are fine, panics are not.
fn run(bytes: Vec<u8>) {
    let Ok(mut src) = FileSource::from_reader("mutant".into(), Box::new(Cursor::new(bytes))) else {
        return;
    };
    let cfg = Config::default();
    let mut engine = Engine::new(analysis::Config::default());
    let mut number = 0;
    let mut sink = Vec::new();
    while let Ok(Some(p)) = src.next_packet() {
        number += 1;
        let frame = parse_frame(p.linktype, p.data, p.orig_len as usize, &cfg);
        engine.ingest(number, p.ts_nanos, &frame);
        // The dissect views of every frame, too.
        frame.visit(&mut Sink);
        std::hint::black_box(parsers::other::summary(&frame));
        sink.clear();
    }
    engine.finish();
    let report = Report::build(&engine, "mutant");
    text::write(&mut sink, &report, None).unwrap();
    serde_json::to_writer(&mut sink, &report).unwrap();
}

struct Sink;

impl<'a> parsers::Visitor<'a> for Sink {
    fn header(&mut self, _: &'static str, _: usize, _: usize) {}
    fn field(&mut self, f: parsers::Field<'a>) {
        std::hint::black_box(format!("{:?}", f.value));
    }
}

/// Every input a fuzzer once crashed on (testdata/fuzz/README.md says what each found).
#[test]
fn fuzz_findings_never_panic() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata/fuzz");
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "pcap") {
            run(std::fs::read(&p).unwrap());
            n += 1;
        }
    }
    assert!(n >= 1);
}

#[test]
fn mutated_captures_never_panic() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata");
    let mut files = Vec::new();
    for dir in [
        "edge",
        "analysis",
        "diagnosis",
        "connections",
        "public",
        "lab",
    ] {
        for e in std::fs::read_dir(root.join(dir)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "pcap" || x == "pcapng") {
                files.push(p);
            }
        }
    }
    files.sort();
    let mut originals: Vec<Vec<u8>> = files.iter().map(|f| std::fs::read(f).unwrap()).collect();
    originals.extend(mirrored(&root));
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut runs = 0;
    for original in &originals {
        // Large captures get fewer mutants: the budget is about the same per file.
        let mutants = (4_000_000 / original.len().max(1)).clamp(8, 150);
        for _ in 0..mutants {
            run(mutate(&mut rng, original));
            runs += 1;
        }
    }
    assert!(runs > 1000, "{runs} mutants");
}

/// Mirror copies to mutate: every frame of three captures in ERSPAN II, and in ERSPAN III around VXLAN (two
/// encapsulations: the mutants reach a third, and every GRE, ERSPAN and VXLAN field).
fn mirrored(root: &std::path::Path) -> Vec<Vec<u8>> {
    use parsers::builder::Mirror;
    use parsers::savefile::{self, Resolution};
    let nests: [&[Mirror]; 2] = [
        &[Mirror::ErspanII { session: 1 }],
        &[
            Mirror::Vxlan { vni: 9 },
            Mirror::ErspanIII {
                session: 2,
                egress: true,
            },
        ],
    ];
    let mut out = Vec::new();
    for name in [
        "analysis/gap_nak_go_back_n.pcap",
        "analysis/read_burst.pcap",
        "edge/vlan.pcap",
    ] {
        for nest in nests {
            let mut src = FileSource::open(&root.join(name)).unwrap();
            let mut pcap = Vec::new();
            savefile::pcap_file_header(&mut pcap, Resolution::Nanos, 262_144, 1);
            let mut seq = 0;
            while let Ok(Some(p)) = src.next_packet() {
                let (mut data, mut len) = (p.data.to_vec(), p.orig_len as usize);
                for m in nest {
                    (data, len) = m.wrap(&data, len, seq, seq);
                }
                savefile::pcap_record(&mut pcap, Resolution::Nanos, p.ts_nanos, &data, len as u32);
                seq += 1;
            }
            out.push(pcap);
        }
    }
    out
}
