//! Captures cut into pieces and made into capture points (tests/analyze.rs, tests/export.rs): a capture's
//! frames, written back as pcap files, and two capture points made from one capture with known drops.
#![allow(dead_code)]
use std::path::{Path, PathBuf};

/// The pieces of one capture: its frames as (time in ns, linktype, captured bytes, length on the wire).
pub type Frames = Vec<(u64, u16, Vec<u8>, u32)>;

pub fn frames_of(capture: &Path) -> Frames {
    use rocescope::source::{FileSource, Next, PacketSource};
    let mut src = FileSource::open(capture).unwrap();
    let mut out = Vec::new();
    while let Ok(Next::Packet { packet: p, .. }) = src.next() {
        out.push((p.ts_nanos, p.linktype, p.data.to_vec(), p.orig_len));
    }
    out
}

pub fn write_pcap(path: &Path, frames: &[&(u64, u16, Vec<u8>, u32)]) {
    use parsers::savefile::{self, Resolution};
    let mut out = Vec::new();
    let linktype = frames.first().map_or(1, |f| f.1);
    savefile::pcap_file_header(&mut out, Resolution::Nanos, 262_144, linktype);
    for (ts, _, data, len) in frames {
        savefile::pcap_record(&mut out, Resolution::Nanos, *ts, data, *len);
    }
    std::fs::write(path, out).unwrap();
}

/// Two capture points of one capture, A and B, written into `dir`.
pub struct TwoPoints {
    pub a: PathBuf,
    pub b: PathBuf,
    /// The PSNs of the requests B never saw (lost from A to B) and of the responses A never saw (lost on
    /// their way back from B to A), in capture order.
    pub lost_forward: Vec<u32>,
    pub lost_reverse: Vec<u32>,
}

/// B's clock runs 5 ms ahead; requests reach B 20 µs after A, responses reach A 20 µs after B. Every 37th
/// request is dropped at B and every 23rd response at A.
pub fn two_points(capture: &Path, dir: &Path) -> TwoPoints {
    two_points_drifting(capture, dir, 0.0)
}

/// As [`two_points`], B's clock also running `ppm` parts per million fast from the capture's first frame
/// on.
pub fn two_points_drifting(capture: &Path, dir: &Path, ppm: f64) -> TwoPoints {
    std::fs::create_dir_all(dir).unwrap();
    let frames = frames_of(capture);
    let t0 = frames.first().map_or(0, |f| f.0);
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let (mut requests, mut responses) = (0, 0);
    let (mut lost_forward, mut lost_reverse) = (Vec::new(), Vec::new());
    for f in frames {
        let parsed = parsers::parse_frame(f.1, &f.2, f.3 as usize, &Default::default());
        let Some(roce) = parsed.roce else {
            continue;
        };
        let request = roce.bth.op().is_request();
        let at_b = f.0 + 5_000_000 + ((f.0 - t0) as f64 * ppm / 1e6).round() as u64;
        let at_b = if request {
            at_b + 20_000
        } else {
            at_b - 20_000
        };
        let shifted = (at_b, f.1, f.2.clone(), f.3);
        if request {
            requests += 1;
        } else {
            responses += 1;
        }
        if request && requests % 37 == 0 {
            lost_forward.push(roce.bth.psn);
        } else {
            b.push(shifted);
        }
        if !request && responses % 23 == 0 {
            lost_reverse.push(roce.bth.psn);
        } else {
            a.push(f);
        }
    }
    b.sort_by_key(|f| f.0);
    let (pa, pb) = (dir.join("A.pcap"), dir.join("B.pcap"));
    write_pcap(&pa, &a.iter().collect::<Vec<_>>());
    write_pcap(&pb, &b.iter().collect::<Vec<_>>());
    TwoPoints {
        a: pa,
        b: pb,
        lost_forward,
        lost_reverse,
    }
}

/// Writes the frames of `capture` into `dir` as `pieces` files without extension (tcpdump -C's `trace`,
/// `trace1`, ...), in time order.
pub fn rotate(capture: &Path, dir: &Path, pieces: usize) {
    std::fs::create_dir_all(dir).unwrap();
    let frames = frames_of(capture);
    let all: Vec<_> = frames.iter().collect();
    for (i, piece) in all.chunks(all.len().div_ceil(pieces).max(1)).enumerate() {
        let name = if i == 0 {
            "trace".to_string()
        } else {
            format!("trace{i}")
        };
        write_pcap(&dir.join(name), piece);
    }
}
