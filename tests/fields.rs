//! `parsers::fields::FIELDS` (the names and kinds a display filter resolves) against what `Frame::visit`
//! emits on every capture of testdata and the public corpus, and against every field name in the parsers'
//! source, so that a field added to a header cannot be missing from the filter's list.
use std::path::{Path, PathBuf};

use parsers::fields::{FIELDS, Field, Visitor, kind_of};
use rocescope::source::{FileSource, Next, PacketSource};

struct Check<'m> {
    wrong: &'m mut Vec<String>,
    seen: &'m mut std::collections::BTreeSet<&'static str>,
}

impl<'a> Visitor<'a> for Check<'_> {
    fn header(&mut self, _title: &'static str, _offset: usize, _len: usize) {}

    fn field(&mut self, f: Field<'a>) {
        self.seen.insert(f.key);
        if kind_of(f.key) != Some(f.value.kind()) {
            self.wrong.push(format!(
                "{}: emitted as {:?}, listed as {:?}",
                f.key,
                f.value.kind(),
                kind_of(f.key)
            ));
        }
    }
}

fn captures() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dirs = [
        "edge",
        "public",
        "lab",
        "connections",
        "analysis",
        "diagnosis",
    ]
    .iter()
    .map(|d| root.join("testdata").join(d))
    .chain([root.join("../shared/corpus/public")]);
    let external = root.join("../shared/corpus/external");
    let mut files = vec![
        external.join("wireshark-wiki-samplecaptures/infiniband.pcap"),
        external.join("tcpdump-tests/ipoib.pcap"),
    ];
    for dir in dirs {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "pcap" || x == "pcapng") {
                files.push(p);
            }
        }
    }
    files
}

#[test]
fn every_emitted_field_is_listed_with_its_kind() {
    let (mut wrong, mut seen) = (Vec::new(), Default::default());
    for file in captures() {
        let mut src = FileSource::open(&file).unwrap();
        while let Ok(Next::Packet { packet: p, .. }) = src.next() {
            let f =
                parsers::parse_frame(p.linktype, p.data, p.orig_len as usize, &Default::default());
            f.visit(&mut Check {
                wrong: &mut wrong,
                seen: &mut seen,
            });
        }
    }
    wrong.sort();
    wrong.dedup();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(seen.len() > 200, "{} fields seen", seen.len());
    assert!(
        FIELDS.windows(2).all(|w| w[0].0 < w[1].0),
        "FIELDS is sorted"
    );
}

#[test]
fn every_field_name_in_the_parsers_is_listed() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("parsers/src");
    let prefixes = [
        "eth.",
        "vlan.",
        "ieee8021ad.",
        "sll.",
        "erf.",
        "ipoib.",
        "macc.",
        "ip.",
        "ipv6.",
        "udp.",
        "gre.",
        "erspan.",
        "vxlan.",
        "infiniband.",
        "rocescope.",
    ];
    let mut missing = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let text = std::fs::read_to_string(e.path()).unwrap();
        for quoted in text.split('"').skip(1).step_by(2) {
            let is_key = prefixes.iter().any(|p| quoted.starts_with(p))
                && quoted
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "._".contains(c));
            if is_key && kind_of(quoted).is_none() {
                missing.push(quoted.to_string());
            }
        }
    }
    assert!(missing.is_empty(), "not in FIELDS: {missing:?}");
}
