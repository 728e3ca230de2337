//! The TUI's access to a capture file: one analysis pass that also indexes the frames (frame number ->
//! byte offset), random access to any frame through that index, the per-flow PSN/time points of the flow
//! chart, and the packet list rows, `-V` trees and hex dumps of single frames.
use std::fs::File;
use std::io::{self, Cursor, Read, Seek, SeekFrom};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use parsers::aeth::Syndrome;
use parsers::fields::{Field, Value, Visitor};
use parsers::frame::Addr;
use parsers::{Frame, parse_frame};

use crate::analysis::{Config, Engine};
use crate::capture::ring::{Rec, Ring};
use crate::report::{FlowReport, Report};
use crate::source::{CaptureFormat, FileSource, Packet};

/// Most PSN/time points kept for one flow's chart (downsampled past this; gaps, retransmissions and NAKs
/// are always kept).
pub const MAX_POINTS: usize = 100_000;

/// Most frame numbers kept for one flow's packet list.
pub const MAX_FLOW_FRAMES: usize = 2_000_000;

/// Frame number -> where its record ends in the file, for reading any frame again without a pass.
#[derive(Debug, Clone)]
pub struct Index {
    pub path: PathBuf,
    pub format: CaptureFormat,
    /// pcap: the 24-byte file header, put before a record to read it alone. pcapng whose packets are
    /// plain enhanced packet blocks one after the other: the blocks before the first packet (section
    /// header, interfaces), put before a block to read it alone. Empty for other pcapng files, which are
    /// read sequentially.
    header: Vec<u8>,
    /// End offset of frame n+1's record (frame numbers start at 1).
    ends: Vec<u64>,
    /// Time of the first frame (nanoseconds since the epoch), for relative times.
    pub first_ts: u64,
    pub parse: parsers::Config,
}

impl Index {
    /// Number of frames indexed.
    pub fn len(&self) -> u64 {
        self.ends.len() as u64
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Reads the frames `numbers` (1-based, ascending) and hands each one, parsed, to `f`. pcap: each
    /// record is read on its own, from its offset; pcapng (whose records need the interfaces declared
    /// before them): one sequential pass from the start up to the last frame wanted.
    pub fn read_frames(
        &self,
        numbers: &[u64],
        mut f: impl FnMut(u64, &Packet, &Frame),
    ) -> Result<(), String> {
        if numbers.is_empty() {
            return Ok(());
        }
        match self.format {
            CaptureFormat::Pcap | CaptureFormat::PcapNg if !self.header.is_empty() => {
                let mut file = File::open(&self.path).map_err(|e| self.err(e))?;
                for &n in numbers {
                    let Some((start, end)) = self.span(n) else {
                        continue;
                    };
                    file.seek(SeekFrom::Start(start)).map_err(|e| self.err(e))?;
                    let mut rec = vec![0; (end - start) as usize];
                    file.read_exact(&mut rec).map_err(|e| self.err(e))?;
                    let mut bytes = self.header.clone();
                    bytes.extend_from_slice(&rec);
                    let mut src =
                        FileSource::from_reader(self.name(), Box::new(Cursor::new(bytes)))
                            .map_err(|e| e.to_string())?;
                    if let Some(p) = src.next_packet().map_err(|e| e.to_string())? {
                        let frame =
                            parse_frame(p.linktype, p.data, p.orig_len as usize, &self.parse);
                        f(n, &p, &frame);
                    }
                }
                Ok(())
            }
            _ => {
                let mut src = FileSource::open(&self.path).map_err(|e| e.to_string())?;
                let last = *numbers.iter().max().unwrap_or(&0);
                let mut wanted = numbers.iter().copied().peekable();
                let mut n = 0u64;
                while n < last {
                    let Some(p) = src.next_packet().map_err(|e| e.to_string())? else {
                        break;
                    };
                    n += 1;
                    while wanted.next_if(|w| *w < n).is_some() {}
                    if wanted.next_if_eq(&n).is_some() {
                        let frame =
                            parse_frame(p.linktype, p.data, p.orig_len as usize, &self.parse);
                        f(n, &p, &frame);
                    }
                }
                Ok(())
            }
        }
    }

    /// True when any frame is read from its offset (else by a sequential pass).
    pub fn random_access(&self) -> bool {
        !self.header.is_empty()
    }

    /// Byte range of frame `n`'s record or block.
    fn span(&self, n: u64) -> Option<(u64, u64)> {
        let i = usize::try_from(n.checked_sub(1)?).ok()?;
        let end = *self.ends.get(i)?;
        let start = if i == 0 {
            self.header.len() as u64
        } else {
            self.ends[i - 1]
        };
        Some((start, end))
    }

    fn name(&self) -> String {
        self.path.display().to_string()
    }

    fn err(&self, e: io::Error) -> String {
        format!("{}: {e}", self.path.display())
    }
}

/// Analyses the capture and indexes its frames in one pass. `progress(frames, bytes_read)` is called every
/// few thousand frames; returning false from it stops the pass (the user quit).
pub fn analyze(
    path: &Path,
    parse: parsers::Config,
    cfg: Config,
    mut progress: impl FnMut(u64, u64) -> bool,
) -> Result<(Report, Index), String> {
    let mut src = FileSource::open(path).map_err(|e| e.to_string())?;
    let format = src.format();
    let mut header = Vec::new();
    if format == CaptureFormat::Pcap {
        header = vec![0; 24];
        File::open(path)
            .and_then(|mut f| f.read_exact(&mut header))
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    let mut engine = Engine::new(cfg);
    let mut ends = Vec::new();
    let mut number = 0u64;
    let mut first_ts = None;
    // pcapng: where the first packet block starts, while every packet is a plain EPB right after the last.
    let mut ng_prefix: Option<u64> = None;
    let mut ng_plain = format == CaptureFormat::PcapNg;
    loop {
        let p = match src.next_packet() {
            Ok(Some(p)) => p,
            Ok(None) => break,
            Err(e) => return Err(e.to_string()),
        };
        number += 1;
        first_ts.get_or_insert(p.ts_nanos);
        let frame = parse_frame(p.linktype, p.data, p.orig_len as usize, &parse);
        engine.ingest(number, p.ts_nanos, &frame);
        // An enhanced packet block without options: 32 bytes of framing and the padded data.
        let block = 32 + (p.data.len() as u64).div_ceil(4) * 4;
        let end = src.bytes_read();
        if ng_plain {
            match ends.last() {
                None => ng_prefix = end.checked_sub(block),
                Some(&prev) => ng_plain = end - prev == block,
            }
        }
        ends.push(end);
        if number.is_multiple_of(4096) && !progress(number, src.bytes_read()) {
            return Err("stopped".to_string());
        }
    }
    engine.finish();
    if ng_plain && let Some(len) = ng_prefix.filter(|&l| l > 0 && l <= 1 << 20) {
        header = vec![0; len as usize];
        File::open(path)
            .and_then(|mut f| f.read_exact(&mut header))
            .map_err(|e| format!("{}: {e}", path.display()))?;
        // The block there must be an enhanced packet block (type 6, either byte order).
        let mut head = [0u8; 4];
        File::open(path)
            .and_then(|mut f| {
                f.seek(SeekFrom::Start(len))?;
                f.read_exact(&mut head)
            })
            .map_err(|e| format!("{}: {e}", path.display()))?;
        if head != [6, 0, 0, 0] && head != [0, 0, 0, 6] {
            header.clear();
        }
    }
    let report = Report::build(&engine, src.name());
    let index = Index {
        path: path.to_path_buf(),
        format,
        header,
        ends,
        first_ts: first_ts.unwrap_or(0),
        parse,
    };
    Ok((report, index))
}

/// What a point of the PSN chart is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PointKind {
    /// A request at the next expected PSN.
    Request,
    /// A request ahead of the next expected PSN (the PSNs between are missing).
    Gap,
    /// A request at or behind the highest PSN seen.
    Retransmission,
    /// A NAK (or RNR NAK) from the paired responder, at the PSN it names.
    Nak,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PsnPoint {
    /// Seconds since the first frame of the capture.
    pub t: f64,
    /// PSN unwrapped past 24 bits (the first request PSN is its own value).
    pub psn: i64,
    pub kind: PointKind,
    pub frame: u64,
}

/// A flow's PSN/time points and its frames (with its paired flow's), read when its detail opens.
#[derive(Debug, Clone, Default)]
pub struct FlowSeries {
    pub flow: u32,
    pub points: Vec<PsnPoint>,
    /// Request points kept one in `stride` (1 when none was dropped).
    pub stride: u64,
    /// Frame numbers of the flow and of its paired flow, ascending.
    pub frames: Vec<u64>,
    /// More frames than [`MAX_FLOW_FRAMES`]: the list stops there.
    pub frames_truncated: bool,
    /// The flow's bytes on the wire in [`THROUGHPUT_BUCKETS`] equal slices of its life.
    pub throughput: Vec<u64>,
    /// Width of one slice, seconds.
    pub bucket_s: f64,
}

/// Slices of a flow's life in its detail's throughput graph.
pub const THROUGHPUT_BUCKETS: usize = 200;

fn addr_of(s: &str) -> Option<Addr> {
    match s.parse::<IpAddr>().ok()? {
        IpAddr::V4(a) => Some(Addr::V4(a.octets())),
        IpAddr::V6(a) => Some(Addr::V6(a.octets())),
    }
}

/// (src, dst, dest QP) of a flow, to match frames.
fn key(f: &FlowReport) -> Option<(Addr, Addr, u32)> {
    Some((addr_of(&f.src)?, addr_of(&f.dst)?, f.dest_qp))
}

/// Sign-extended difference of two 24-bit PSNs.
fn psn_delta(a: u32, b: u32) -> i64 {
    let d = a.wrapping_sub(b) & 0xFF_FFFF;
    if d & 0x80_0000 != 0 {
        i64::from(d) - 0x100_0000
    } else {
        i64::from(d)
    }
}

/// Re-reads the capture for one flow: its request PSNs over time (gaps and retransmissions marked, like
/// the analysis engine counts them), the NAKs of its paired flow, and the frame numbers of both.
pub fn flow_series(index: &Index, report: &Report, flow: u32) -> Result<FlowSeries, String> {
    flow_series_with(report, flow, index.first_ts, index.parse, |visit| {
        let mut src = FileSource::open(&index.path).map_err(|e| e.to_string())?;
        let mut number = 0u64;
        while let Some(p) = src.next_packet().map_err(|e| e.to_string())? {
            number += 1;
            visit(number, &p);
        }
        Ok(())
    })
}

/// [`flow_series`] over any source of frames: `packets` hands each frame, numbered, to the visitor it is
/// given, in capture order (a file pass, or the live ring). `first_ts` is the capture's first time.
pub fn flow_series_with(
    report: &Report,
    flow: u32,
    first_ts: u64,
    parse: parsers::Config,
    packets: impl FnOnce(&mut dyn FnMut(u64, &Packet)) -> Result<(), String>,
) -> Result<FlowSeries, String> {
    let f = report
        .flows
        .get(flow as usize)
        .ok_or_else(|| format!("no flow {flow}"))?;
    let mine = key(f);
    let pair = f
        .paired_with
        .and_then(|p| report.flows.get(p as usize))
        .and_then(key);
    let mtu = report.config.mtu;
    let first_ns = (f.first_time * 1e9) as u64;
    let life_ns = ((f.last_time - f.first_time) * 1e9).max(1.0);
    let mut out = FlowSeries {
        flow,
        stride: 1,
        throughput: vec![0; THROUGHPUT_BUCKETS],
        bucket_s: life_ns / 1e9 / THROUGHPUT_BUCKETS as f64,
        ..Default::default()
    };
    // Unwrapped PSN of the last request, the highest request PSN (unwrapped) and the next expected.
    let mut last: Option<(u32, i64)> = None;
    let mut highest: Option<i64> = None;
    let mut normal_seen = 0u64;
    let mut visit = |number: u64, p: &Packet| {
        let frame = parse_frame(p.linktype, p.data, p.orig_len as usize, &parse);
        let Some(r) = frame.roce else { return };
        let k = frame
            .src()
            .zip(frame.dst())
            .map(|(s, d)| (s, d, r.bth.dest_qp));
        let is_mine = k.is_some() && k == mine;
        let is_pair = k.is_some() && k == pair;
        if !is_mine && !is_pair {
            return;
        }
        if out.frames.len() < MAX_FLOW_FRAMES {
            out.frames.push(number);
        } else {
            out.frames_truncated = true;
        }
        let t = p.ts_nanos.saturating_sub(first_ts) as f64 / 1e9;
        if is_mine {
            let at = p.ts_nanos.saturating_sub(first_ns) as f64 / life_ns;
            let b = ((at * THROUGHPUT_BUCKETS as f64) as usize).min(THROUGHPUT_BUCKETS - 1);
            out.throughput[b] += u64::from(p.orig_len);
        }
        let op = r.bth.op();
        let unwrap = |last: &Option<(u32, i64)>, psn: u32| match last {
            Some((lp, lu)) => lu + psn_delta(psn, *lp),
            None => i64::from(psn),
        };
        if is_mine && op.is_request() {
            let u = unwrap(&last, r.bth.psn);
            last = Some((r.bth.psn, u));
            let kind = match highest {
                None => PointKind::Request,
                Some(h) if u <= h => PointKind::Retransmission,
                Some(h) if u == h + 1 => PointKind::Request,
                Some(_) => PointKind::Gap,
            };
            let span = match (op.operation(), r.ext.reth, mtu) {
                // READ request: ceil(DMA length / MTU) PSNs.
                (0x0C, Some(reth), Some(m)) if reth.dma_len > 0 => {
                    i64::from(reth.dma_len.div_ceil(m).max(1))
                }
                _ => 1,
            };
            if kind != PointKind::Retransmission {
                highest = Some(u + span - 1);
            }
            if kind == PointKind::Request {
                normal_seen += 1;
                if !normal_seen.is_multiple_of(out.stride) {
                    return;
                }
            }
            out.points.push(PsnPoint {
                t,
                psn: u,
                kind,
                frame: number,
            });
        } else if is_pair
            && let Some(aeth) = r.ext.aeth
            && !matches!(aeth.decoded(), Syndrome::Ack { .. })
        {
            let u = unwrap(&last, r.bth.psn);
            out.points.push(PsnPoint {
                t,
                psn: u,
                kind: PointKind::Nak,
                frame: number,
            });
        }
        if out.points.len() >= MAX_POINTS {
            // Downsample: every other plain request goes; the marked points stay.
            out.stride *= 2;
            let mut i = 0u64;
            out.points.retain(|pt| {
                if pt.kind != PointKind::Request {
                    return true;
                }
                i += 1;
                i.is_multiple_of(2)
            });
            if out.points.len() >= MAX_POINTS {
                // Only marked points left: keep the first ones.
                out.points.truncate(MAX_POINTS / 2);
            }
        }
    };
    packets(&mut visit)?;
    Ok(out)
}

/// One line of the packet list.
#[derive(Debug, Clone, PartialEq)]
pub struct PacketRow {
    pub number: u64,
    /// Seconds since the first frame.
    pub time: f64,
    pub src: String,
    pub dst: String,
    pub qp: Option<u32>,
    /// Opcode name, or the protocol of a non-RoCE frame.
    pub opcode: String,
    pub psn: Option<u32>,
    /// SE, AckReq, FECN, BECN, CE, then ACK/NAK/RNR, ICRC and damage notes.
    pub info: String,
    /// Something is wrong with it (NAK, bad ICRC, malformed).
    pub bad: bool,
}

/// The list row of a frame.
pub fn packet_row(number: u64, p: &Packet, frame: &Frame, first_ts: u64) -> PacketRow {
    let (src, dst) = match (frame.src(), frame.dst()) {
        (Some(s), Some(d)) => (s.to_string(), d.to_string()),
        _ => match frame.link {
            Some(parsers::frame::Link::Ethernet(e)) => (mac(e.src), mac(e.dst)),
            _ => ("?".into(), "?".into()),
        },
    };
    let mut info = Vec::new();
    let mut bad = false;
    let (qp, opcode, psn) = match &frame.roce {
        Some(r) => {
            let b = &r.bth;
            for (on, flag) in [
                (b.se, "SE"),
                (b.ack_req, "AckReq"),
                (b.fecn, "FECN"),
                (b.becn, "BECN"),
            ] {
                if on {
                    info.push(flag.to_string());
                }
            }
            if frame.ecn() == Some(3) {
                info.push("CE".into());
            }
            if let Some(aeth) = r.ext.aeth {
                match aeth.decoded() {
                    Syndrome::Ack { .. } => info.push(format!("ACK MSN={}", aeth.msn)),
                    s @ Syndrome::RnrNak { .. } => {
                        bad = true;
                        let us = s.rnr_micros().unwrap_or(0);
                        info.push(format!("RNR-NAK {}.{:02}ms", us / 1000, (us % 1000) / 10));
                    }
                    Syndrome::Nak(code) => {
                        bad = true;
                        info.push(format!("NAK({})", code.name()));
                    }
                    Syndrome::Reserved { value } => info.push(format!("syndrome {value}")),
                }
            }
            if let Some(reth) = r.ext.reth {
                info.push(format!("len={}", reth.dma_len));
            }
            if let Some(parsers::icrc::IcrcStatus::Bad { .. }) = r.icrc_status {
                bad = true;
                info.push("[ICRC bad]".into());
            }
            (Some(b.dest_qp), b.op().name().to_string(), Some(b.psn))
        }
        None => {
            let proto = if frame.mac_control.is_some() {
                "PAUSE/PFC".to_string()
            } else if frame.udp.is_some() {
                "UDP".to_string()
            } else if frame.ip.is_some() {
                "IP".to_string()
            } else {
                match frame.ethertype {
                    Some(t) => format!("0x{t:04x}"),
                    None => "?".to_string(),
                }
            };
            (None, proto, None)
        }
    };
    if let Some(m) = &frame.malformed {
        bad = true;
        info.push(format!("[malformed: {m}]"));
    }
    PacketRow {
        number,
        time: p.ts_nanos.saturating_sub(first_ts) as f64 / 1e9,
        src,
        dst,
        qp,
        opcode,
        psn,
        info: info.join(" "),
        bad,
    }
}

fn mac(m: [u8; 6]) -> String {
    format!(
        "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
        m[0], m[1], m[2], m[3], m[4], m[5]
    )
}

/// One open packet: its `-V` tree (header lines and indented fields) and its hex dump.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PacketDetail {
    pub number: u64,
    /// (is a header line, text).
    pub tree: Vec<(bool, String)>,
    pub hex: Vec<String>,
}

struct TreeLines(Vec<(bool, String)>);

impl<'a> Visitor<'a> for TreeLines {
    fn header(&mut self, title: &'static str, offset: usize, len: usize) {
        self.0
            .push((true, format!("{title}  [bytes {offset}..{}]", offset + len)));
    }

    fn field(&mut self, f: Field<'a>) {
        let mut s = format!("{}: {}", f.label, value(&f.value));
        if let Some(m) = f.meaning {
            s.push_str(&format!(" ({m})"));
        }
        s.push_str(&format!("  [{}]", f.key));
        self.0.push((false, s));
    }
}

fn value(v: &Value) -> String {
    match *v {
        Value::Uint(n) => n.to_string(),
        Value::Hex(n, digits) => format!("0x{n:0width$x}", width = usize::from(digits)),
        Value::Bool(b) => if b { "True" } else { "False" }.to_string(),
        Value::Mac(m) => mac(m),
        Value::Ipv4(a) => std::net::Ipv4Addr::from(a).to_string(),
        Value::Ipv6(a) => std::net::Ipv6Addr::from(a).to_string(),
        Value::Text(t) => t.to_string(),
        Value::Micros(us) => format!("{}.{:02} ms", us / 1000, (us % 1000) / 10),
        Value::Bytes(b) => b.iter().map(|x| format!("{x:02x}")).collect(),
        Value::Damage(m) => m.to_string(),
    }
}

/// The `-V` tree and hex dump of a frame.
pub fn packet_detail(number: u64, p: &Packet, frame: &Frame) -> PacketDetail {
    let mut t = TreeLines(vec![(
        true,
        format!(
            "Frame {number}: {} bytes on wire, {} bytes captured, interface {}, time {}.{:09}",
            p.orig_len,
            p.data.len(),
            p.interface,
            p.ts_nanos / 1_000_000_000,
            p.ts_nanos % 1_000_000_000
        ),
    )]);
    frame.visit(&mut t);
    let hex = p
        .data
        .chunks(16)
        .enumerate()
        .map(|(i, chunk)| {
            let mut s = format!("{:04x}  ", i * 16);
            for j in 0..16 {
                match chunk.get(j) {
                    Some(b) => s.push_str(&format!("{b:02x} ")),
                    None => s.push_str("   "),
                }
            }
            s.push(' ');
            s.extend(chunk.iter().map(|&b| {
                if b.is_ascii_graphic() || b == b' ' {
                    char::from(b)
                } else {
                    '.'
                }
            }));
            s
        })
        .collect();
    PacketDetail {
        number,
        tree: t.0,
        hex,
    }
}

/// Reads list rows for `numbers`.
pub fn rows(index: &Index, numbers: &[u64]) -> Result<Vec<PacketRow>, String> {
    let mut out = Vec::with_capacity(numbers.len());
    index.read_frames(numbers, |n, p, f| {
        out.push(packet_row(n, p, f, index.first_ts))
    })?;
    Ok(out)
}

/// Reads the tree and hex of frame `number`.
pub fn detail(index: &Index, number: u64) -> Result<PacketDetail, String> {
    let mut out = None;
    index.read_frames(&[number], |n, p, f| out = Some(packet_detail(n, p, f)))?;
    out.ok_or_else(|| format!("frame {number} is not in the capture"))
}

/// Live capture: the frames of `numbers` still in the ring, with the ring's link type and first time (the
/// lock is held only to take the frames, not to parse them).
fn ring_frames(ring: &Mutex<Ring>, numbers: &[u64]) -> (Vec<Rec>, u16, u64) {
    let r = ring.lock().unwrap_or_else(|p| p.into_inner());
    let recs = numbers.iter().filter_map(|&n| r.get(n)).collect();
    (recs, r.linktype, r.first_ts.unwrap_or(0))
}

fn rec_packet(rec: &Rec, linktype: u16) -> Packet<'_> {
    Packet {
        ts_nanos: rec.ts_nanos,
        linktype,
        interface: 0,
        data: rec.data(),
        orig_len: rec.orig_len,
    }
}

/// Live capture: list rows for `numbers` (a frame that has left the ring gets a row saying so).
pub fn ring_rows(ring: &Mutex<Ring>, parse: parsers::Config, numbers: &[u64]) -> Vec<PacketRow> {
    let (recs, linktype, first_ts) = ring_frames(ring, numbers);
    let mut out: Vec<PacketRow> = recs
        .iter()
        .map(|rec| {
            let p = rec_packet(rec, linktype);
            let frame = parse_frame(linktype, p.data, p.orig_len as usize, &parse);
            packet_row(rec.number, &p, &frame, first_ts)
        })
        .collect();
    for &n in numbers {
        if !recs.iter().any(|r| r.number == n) {
            out.push(PacketRow {
                number: n,
                time: 0.0,
                src: String::new(),
                dst: String::new(),
                qp: None,
                opcode: "(left the buffer)".to_string(),
                psn: None,
                info: String::new(),
                bad: false,
            });
        }
    }
    out
}

/// Live capture: the tree and hex of frame `number`, if the ring still holds it.
pub fn ring_detail(
    ring: &Mutex<Ring>,
    parse: parsers::Config,
    number: u64,
) -> Result<PacketDetail, String> {
    let (recs, linktype, _) = ring_frames(ring, &[number]);
    let rec = recs.first().ok_or_else(|| {
        format!(
            "frame {number} has left the capture buffer (it keeps the last {} frames or {} MiB)",
            crate::capture::ring::MAX_FRAMES,
            crate::capture::ring::MAX_BYTES >> 20
        )
    })?;
    let p = rec_packet(rec, linktype);
    let frame = parse_frame(linktype, p.data, p.orig_len as usize, &parse);
    Ok(packet_detail(number, &p, &frame))
}

/// Live capture: a flow's PSN points and frames, from the frames the ring holds.
pub fn ring_series(
    ring: &Mutex<Ring>,
    parse: parsers::Config,
    report: &Report,
    flow: u32,
) -> Result<FlowSeries, String> {
    let (recs, linktype, first_ts) = {
        let r = ring.lock().unwrap_or_else(|p| p.into_inner());
        (r.all(), r.linktype, r.first_ts.unwrap_or(0))
    };
    flow_series_with(report, flow, first_ts, parse, |visit| {
        for rec in &recs {
            visit(rec.number, &rec_packet(rec, linktype));
        }
        Ok(())
    })
}
