//! Mirror sessions end to end: the Ethernet captures of testdata/ and the public corpus, every frame
//! encapsulated in ERSPAN type II, ERSPAN type III, GRE transparent Ethernet bridging and VXLAN
//! (`parsers::builder::Mirror`, the copy cut where the original was cut). tshark decodes the outer and the
//! inner headers as rocescope does; the analysis of a mirrored capture is the analysis of the original but
//! for the capture-level figures that describe the file (`file`, `bytes`, `encapsulated`); a capture in
//! which every frame was mirrored twice (ERSPAN III ingress and egress copies, 1 ns apart) gives the same
//! flows as the single copy, with every second copy a mirror duplicate.
use std::path::{Path, PathBuf};
use std::process::Command;

use parsers::builder::Mirror;
use parsers::savefile::{self, Resolution};
use rocescope::source::{FileSource, Next, PacketSource};
use serde_json::Value;

const MIRRORS: [Mirror; 4] = [
    Mirror::ErspanII { session: 5 },
    Mirror::ErspanIII {
        session: 6,
        egress: false,
    },
    Mirror::GreTeb,
    Mirror::Vxlan { vni: 0xABCD },
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rocescope-mirror-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// The captures whose every frame is Ethernet (a mirror session carries Ethernet frames).
fn ethernet_captures() -> Vec<PathBuf> {
    let dirs = [
        "analysis",
        "connections",
        "diagnosis",
        "edge",
        "lab",
        "public",
    ]
    .iter()
    .map(|d| root().join("testdata").join(d))
    .chain([root().join("../shared/corpus/public")]);
    let mut out = Vec::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let is_capture = p.extension().is_some_and(|x| x == "pcap" || x == "pcapng");
            if is_capture && packets(&p).iter().all(|p| p.linktype == 1) {
                out.push(p);
            }
        }
    }
    out.sort();
    assert!(out.len() >= 40, "{} Ethernet captures", out.len());
    out
}

struct Owned {
    ts: u64,
    linktype: u16,
    data: Vec<u8>,
    orig_len: u32,
}

fn packets(file: &Path) -> Vec<Owned> {
    let mut src = FileSource::open(file).unwrap();
    let mut out = Vec::new();
    while let Ok(Next::Packet { packet: p, .. }) = src.next() {
        out.push(Owned {
            ts: p.ts_nanos,
            linktype: p.linktype,
            data: p.data.to_vec(),
            orig_len: p.orig_len,
        });
    }
    out
}

/// Writes `file` with every frame wrapped by each of `copies` (one frame's copies 1 ns apart).
fn mirrored(file: &Path, copies: &[Mirror], name: &str) -> PathBuf {
    let mut out = Vec::new();
    savefile::pcap_file_header(&mut out, Resolution::Nanos, 262_144, 1);
    for (seq, p) in packets(file).iter().enumerate() {
        for (k, m) in copies.iter().enumerate() {
            let ts_100ns = (p.ts / 100) as u32;
            let (data, len) = m.wrap(&p.data, p.orig_len as usize, seq as u32, ts_100ns);
            savefile::pcap_record(
                &mut out,
                Resolution::Nanos,
                p.ts + k as u64,
                &data,
                len as u32,
            );
        }
    }
    let path = tmp(name);
    std::fs::write(&path, out).unwrap();
    path
}

fn analyze(file: &Path) -> Value {
    let o = Command::new(env!("CARGO_BIN_EXE_rocescope"))
        .args(["analyze", "--json"])
        .arg(file)
        .output()
        .unwrap();
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

fn name(m: &Mirror) -> &'static str {
    match m {
        Mirror::ErspanII { .. } => "erspan2",
        Mirror::ErspanIII { .. } => "erspan3",
        Mirror::GreTeb => "gre_teb",
        Mirror::Vxlan { .. } => "vxlan",
    }
}

/// Captures whose frames lie in their own length fields (damage on the wire): inside a mirror copy a
/// length beyond the copy is the switch's truncation, so the copy's frame is cut, not malformed.
fn damaged_on_the_wire(file: &Path) -> bool {
    let name = file.file_name().unwrap().to_string_lossy();
    ["damaged.pcap"].contains(&name.as_ref())
}

#[test]
fn mirrored_captures_analyse_like_the_originals() {
    let mut wrong = Vec::new();
    for file in ethernet_captures() {
        if damaged_on_the_wire(&file) {
            continue;
        }
        let mut want = analyze(&file);
        let roce_frames = want["capture"]["roce_frames"].clone();
        for m in MIRRORS {
            let copy = mirrored(&file, &[m], &format!("{}.pcap", name(&m)));
            let mut got = analyze(&copy);
            assert_eq!(
                got["capture"]["encapsulated"],
                roce_frames,
                "{}",
                file.display()
            );
            for c in [&mut want["capture"], &mut got["capture"]] {
                for key in ["file", "bytes", "encapsulated"] {
                    c.as_object_mut().unwrap().remove(key);
                }
            }
            if got != want {
                wrong.push(format!("{} in {}", file.display(), name(&m)));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "analysed differently:\n{}",
        wrong.join("\n")
    );
}

/// The frame numbers of the single copy, from a capture where each frame is at 2n - 1.
fn renumber(v: &mut Value) {
    match v {
        Value::Object(o) => {
            for (k, x) in o.iter_mut() {
                match x.as_u64() {
                    Some(n) if k.ends_with("frame") => *x = n.div_ceil(2).into(),
                    _ => renumber(x),
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(renumber),
        _ => {}
    }
}

#[test]
fn a_capture_mirrored_twice_counts_every_frame_once() {
    let twice = [
        Mirror::ErspanIII {
            session: 6,
            egress: false,
        },
        Mirror::ErspanIII {
            session: 6,
            egress: true,
        },
    ];
    let mut wrong = Vec::new();
    for file in ethernet_captures() {
        // A frame whose BTH did not parse is not compared with others (it is no retransmission either).
        if damaged_on_the_wire(&file) {
            continue;
        }
        let once = analyze(&mirrored(&file, &twice[..1], "once.pcap"));
        let mut got = analyze(&mirrored(&file, &twice, "twice.pcap"));
        renumber(&mut got);
        let c = &got["capture"];
        if c["mirror_duplicates"] != once["capture"]["roce_frames"]
            || c["roce_frames"].as_u64() != once["capture"]["roce_frames"].as_u64().map(|n| 2 * n)
        {
            wrong.push(format!("{}: capture {c}", file.display()));
        }
        for key in ["flows", "flow_totals"] {
            if got[key] != once[key] {
                wrong.push(format!("{}: {key} differ", file.display()));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

const TSHARK_FIELDS: &[&str] = &[
    "eth.src",
    "eth.dst",
    "vlan.id",
    "ieee8021ad.id",
    "ip.src",
    "ip.dst",
    "ip.id",
    "ip.proto",
    "udp.srcport",
    "udp.dstport",
    "udp.length",
    "gre.flags_and_version",
    "gre.flags.sequence_number",
    "gre.flags.key",
    "gre.proto",
    "gre.sequence_number",
    "erspan.version",
    "erspan.vlan",
    "erspan.cos",
    "erspan.encap",
    "erspan.bso",
    "erspan.truncated",
    "erspan.spanid",
    "erspan.index",
    "erspan.timestamp",
    "erspan.sgt",
    "erspan.p",
    "erspan.ft",
    "erspan.hw",
    "erspan.direction",
    "erspan.gra",
    "erspan.o",
    "vxlan.flags",
    "vxlan.flag_i",
    "vxlan.vni",
    "vxlan.reserved8",
    "infiniband.bth.opcode",
    "infiniband.bth.destqp",
    "infiniband.bth.psn",
];

fn fields(program: &str, args: &[&str], file: &Path) -> String {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .arg("-r")
        .arg(file)
        .args(["-T", "fields", "-E", "occurrence=a"]);
    for f in TSHARK_FIELDS {
        cmd.args(["-e", f]);
    }
    let o = cmd.output().expect("tshark is installed (scripts/test)");
    assert!(
        o.status.success(),
        "{program}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn tshark_decodes_the_outer_and_inner_headers_as_rocescope_does() {
    let dir = root().join("testdata/analysis");
    let mut compared = 0;
    for file in [
        "gap_nak_go_back_n.pcap",
        "read_burst.pcap",
        "ecn_cnp.pcap",
        "pfc.pcap",
    ] {
        for m in MIRRORS {
            let copy = mirrored(&dir.join(file), &[m], &format!("tshark-{}.pcap", name(&m)));
            let ours = fields(
                env!("CARGO_BIN_EXE_rocescope"),
                &["dissect", "--all"],
                &copy,
            );
            let theirs = fields("tshark", &[], &copy);
            for (n, (a, b)) in ours.lines().zip(theirs.lines()).enumerate() {
                assert_eq!(a, b, "{file} in {}, frame {}", name(&m), n + 1);
                compared += 1;
            }
            assert_eq!(ours.lines().count(), theirs.lines().count());
        }
    }
    assert!(compared > 100, "{compared} frames compared");
}
