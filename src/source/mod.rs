//! Capture sources: files (pcap, pcapng, standard input).
//!
//! [`FileSource`] reads a pcap or pcapng capture as a stream: it keeps one read
//! buffer of [`BUFFER_SIZE`] bytes and refills it, so memory does not depend on
//! the size of the input. A record or block larger than the buffer makes it grow
//! (in steps, as the data actually arrives) up to [`MAX_BLOCK_SIZE`]; a larger
//! claim is an error. Once the buffer is mostly free again it shrinks back.
//!
//! The record and block parsers of the `pcap-parser` crate decode the file
//! header, section headers, interface descriptions and packet blocks; the
//! framing (block lengths, buffering, refills) and the validation of lengths are
//! done here so that every malformed or truncated input gives a [`SourceError`].

mod error;

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use pcap_parser::pcap::{
    parse_pcap_frame, parse_pcap_frame_be, parse_pcap_frame_modified, parse_pcap_header,
};
use pcap_parser::pcapng::{
    BOM_MAGIC, EPB_MAGIC, IDB_MAGIC, InterfaceDescriptionBlock, SHB_MAGIC, SPB_MAGIC,
    parse_enhancedpacketblock_be, parse_enhancedpacketblock_le, parse_interfacedescriptionblock_be,
    parse_interfacedescriptionblock_le, parse_sectionheaderblock, parse_simplepacketblock_be,
    parse_simplepacketblock_le,
};

pub use error::{SourceError, TruncatedIn};

/// Size of the read buffer.
pub const BUFFER_SIZE: usize = 256 * 1024;

/// Largest pcap record (header included) or pcapng block accepted.
pub const MAX_BLOCK_SIZE: usize = 64 * 1024 * 1024;

/// Most interfaces accepted in one pcapng section (bounds memory).
pub const MAX_INTERFACES: usize = 65_536;

/// Block type of the obsolete pcapng Packet Block.
const PB_MAGIC: u32 = 0x0000_0002;

const NANOS_PER_SEC: u64 = 1_000_000_000;

/// One captured packet. It borrows the read buffer of its [`FileSource`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet<'a> {
    /// Timestamp in nanoseconds since the Unix epoch (0 for pcapng Simple Packet
    /// Blocks, which carry none). Saturates at 0 and `u64::MAX` (year 2554).
    pub ts_nanos: u64,
    /// LINKTYPE number of the packet's interface (1 Ethernet, 113 Linux SLL, 276 Linux SLL2, ...).
    pub linktype: u16,
    /// pcapng interface id within its section (0 for pcap).
    pub interface: u32,
    /// Captured bytes.
    pub data: &'a [u8],
    /// Original length on the wire.
    pub orig_len: u32,
}

/// Container format of a capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaptureFormat {
    /// Classic libpcap format (microsecond or nanosecond, either byte order).
    Pcap,
    /// pcapng.
    PcapNg,
}

/// A streaming reader of a pcap or pcapng file or of standard input.
pub struct FileSource {
    name: String,
    input: Input,
    state: State,
    /// Packets returned so far.
    packets: u64,
    /// Set after the end of the input or an error: no more packets.
    done: bool,
}

impl std::fmt::Debug for FileSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileSource")
            .field("name", &self.name)
            .field("format", &self.format())
            .field("packets", &self.packets)
            .field("offset", &self.input.offset)
            .finish_non_exhaustive()
    }
}

impl FileSource {
    /// Opens a capture file; `path` "-" means standard input. Detects pcap
    /// (microsecond and nanosecond magics, both byte orders; also the
    /// little-endian "modified" format 0xa1b2cd34) or pcapng (both byte orders)
    /// from the first bytes, and reads the file header.
    pub fn open(path: &Path) -> Result<FileSource, SourceError> {
        if path == Path::new("-") {
            return FileSource::from_reader("-".to_string(), Box::new(io::stdin()));
        }
        let name = path.display().to_string();
        match File::open(path) {
            Ok(f) => FileSource::from_reader(name, Box::new(f)),
            Err(source) => Err(SourceError::Open { name, source }),
        }
    }

    /// Reads a capture from any reader; `name` is used in error messages ("-"
    /// is shown as "standard input").
    pub fn from_reader(
        name: String,
        reader: Box<dyn Read + Send>,
    ) -> Result<FileSource, SourceError> {
        let mut src = FileSource {
            name,
            input: Input::new(reader),
            state: State::Pcap(PcapState::default()),
            packets: 0,
            done: false,
        };
        src.read_file_header().map_err(|f| src.error(f))?;
        Ok(src)
    }

    /// The container format of the input.
    pub fn format(&self) -> CaptureFormat {
        match self.state {
            State::Pcap(_) => CaptureFormat::Pcap,
            State::PcapNg(_) => CaptureFormat::PcapNg,
        }
    }

    /// The name given at creation (the path, or "-" for standard input).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Number of packets returned so far.
    pub fn packets_read(&self) -> u64 {
        self.packets
    }

    /// Bytes of the input consumed so far (for progress reports).
    pub fn bytes_read(&self) -> u64 {
        self.input.offset
    }

    /// The next packet, or `Ok(None)` at a clean end of the input.
    ///
    /// After an error, or once the end is reached, every further call returns `Ok(None)`.
    pub fn next_packet(&mut self) -> Result<Option<Packet<'_>>, SourceError> {
        if self.done {
            return Ok(None);
        }
        let found = match &mut self.state {
            State::Pcap(st) => next_pcap(&mut self.input, st),
            State::PcapNg(st) => next_pcapng(&mut self.input, st, self.packets),
        };
        match found {
            Ok(Some(p)) => {
                self.packets += 1;
                Ok(Some(Packet {
                    ts_nanos: p.ts_nanos,
                    linktype: p.linktype,
                    interface: p.interface,
                    data: &self.input.buf[p.start..p.start + p.len],
                    orig_len: p.orig_len,
                }))
            }
            Ok(None) => {
                self.done = true;
                Ok(None)
            }
            Err(f) => {
                self.done = true;
                Err(self.error(f))
            }
        }
    }

    /// Detects the format and reads the pcap file header or the first pcapng Section Header Block.
    fn read_file_header(&mut self) -> Result<(), Fail> {
        let input = &mut self.input;
        input.fill(4)?;
        let head = input.available();
        if head.is_empty() {
            return Err(Fail::Empty);
        }
        if head.len() < 4 {
            return Err(Fail::NotCapture(head.to_vec()));
        }
        let magic = [head[0], head[1], head[2], head[3]];
        if u32::from_le_bytes(magic) == SHB_MAGIC {
            let mut st = NgState::default();
            match pcapng_block(input, &mut st, 0) {
                Ok(_) => {}
                Err(Fail::Truncated(_)) => return Err(Fail::Truncated(TruncatedIn::FileHeader)),
                Err(f) => return Err(f),
            }
            self.state = State::PcapNg(st);
            return Ok(());
        }
        let m = u32::from_le_bytes(magic);
        if !matches!(
            m,
            0xa1b2_c3d4 | 0xd4c3_b2a1 | 0xa1b2_3c4d | 0x4d3c_b2a1 | 0xa1b2_cd34
        ) {
            return Err(Fail::NotCapture(magic.to_vec()));
        }
        if !input.fill(24)? {
            return Err(Fail::Truncated(TruncatedIn::FileHeader));
        }
        let hdr = match parse_pcap_header(&input.available()[..24]) {
            Ok((_, h)) => h,
            Err(_) => return Err(Fail::NotCapture(magic.to_vec())),
        };
        let st = PcapState {
            big_endian: hdr.is_bigendian(),
            nanos: hdr.is_nanosecond_precision(),
            modified: hdr.is_modified_format(),
            // The upper 16 bits may hold FCS information (libpcap's LT_LINKTYPE).
            linktype: (hdr.network.0 as u32 & 0xffff) as u16,
        };
        input.consume(24);
        self.state = State::Pcap(st);
        Ok(())
    }

    fn error(&self, f: Fail) -> SourceError {
        let name = self.name.clone();
        let packets = self.packets;
        let offset = self.input.offset;
        match f {
            Fail::Io(source) => SourceError::Read {
                name,
                packets,
                source,
            },
            Fail::Empty => SourceError::Empty { name },
            Fail::NotCapture(head) => SourceError::NotCapture { name, head },
            Fail::Truncated(within) => SourceError::Truncated {
                name,
                packets,
                within,
            },
            Fail::UndeclaredInterface {
                interface,
                described,
            } => SourceError::UndeclaredInterface {
                name,
                packet: packets + 1,
                interface,
                described,
            },
            Fail::TooLarge(size) => SourceError::TooLarge {
                name,
                packets,
                offset,
                size,
            },
            Fail::Malformed(reason) => SourceError::Malformed {
                name,
                packets,
                offset,
                reason,
            },
        }
    }
}

/// Internal failure, turned into a [`SourceError`] with the file name and position.
enum Fail {
    Io(io::Error),
    Empty,
    NotCapture(Vec<u8>),
    Truncated(TruncatedIn),
    UndeclaredInterface {
        interface: u32,
        described: u32,
    },
    TooLarge(u64),
    /// At the offset of the current record/block.
    Malformed(String),
}

impl From<io::Error> for Fail {
    fn from(e: io::Error) -> Fail {
        Fail::Io(e)
    }
}

/// A packet found in the buffer; `start..start+len` indexes `Input::buf`.
struct Found {
    ts_nanos: u64,
    linktype: u16,
    interface: u32,
    start: usize,
    len: usize,
    orig_len: u32,
}

enum State {
    Pcap(PcapState),
    PcapNg(NgState),
}

#[derive(Default)]
struct PcapState {
    big_endian: bool,
    nanos: bool,
    /// Alexey Kuznetsov's patched format: 24-byte record headers.
    modified: bool,
    linktype: u16,
}

#[derive(Default)]
struct NgState {
    big_endian: bool,
    interfaces: Vec<Interface>,
}

struct Interface {
    linktype: u16,
    snaplen: u32,
    /// Timestamp units per second (if_tsresol).
    units_per_sec: u64,
    /// if_tsoffset, seconds.
    offset_secs: i64,
}

/// The read buffer over the reader. `buf[start..end]` holds unconsumed bytes;
/// `offset` is the position in the input of `buf[start]`.
struct Input {
    reader: Box<dyn Read + Send>,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    eof: bool,
    offset: u64,
}

impl Input {
    fn new(reader: Box<dyn Read + Send>) -> Input {
        Input {
            reader,
            buf: vec![0; BUFFER_SIZE],
            start: 0,
            end: 0,
            eof: false,
            offset: 0,
        }
    }

    fn available(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    /// Reads until at least `n` (at most [`MAX_BLOCK_SIZE`]) bytes are available.
    /// Returns false if the input ends first.
    fn fill(&mut self, n: usize) -> io::Result<bool> {
        debug_assert!(n <= MAX_BLOCK_SIZE);
        if self.buf.len() > BUFFER_SIZE && n <= BUFFER_SIZE && self.end - self.start <= BUFFER_SIZE
        {
            // The oversized block is gone: back to the normal size. (Not done in
            // `consume`, as the packet returned last may still point at the bytes.)
            self.compact();
            self.buf.truncate(BUFFER_SIZE);
            self.buf.shrink_to_fit();
        }
        while self.end - self.start < n {
            if self.eof {
                return Ok(false);
            }
            if self.start > 0 && self.start + n > self.buf.len() {
                self.compact();
            }
            if self.end == self.buf.len() {
                // Only reached when start == 0 and n > buf.len(): grow, at most
                // doubling, so the allocation follows the data actually read.
                let len = self.buf.len();
                self.buf.resize(n.min(len.saturating_mul(2)), 0);
            }
            match self.reader.read(&mut self.buf[self.end..]) {
                Ok(0) => self.eof = true,
                // min(): never trust a reader to report more than it was given.
                Ok(k) => self.end = (self.end + k).min(self.buf.len()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }

    /// Moves the unconsumed bytes to the front.
    fn compact(&mut self) {
        self.buf.copy_within(self.start..self.end, 0);
        self.end -= self.start;
        self.start = 0;
    }

    fn consume(&mut self, n: usize) {
        debug_assert!(n <= self.end - self.start);
        self.start += n;
        self.offset += n as u64;
        if self.start == self.end {
            // Bytes stay in place: a packet returned just before may still point at them.
            self.start = 0;
            self.end = 0;
        }
    }
}

fn u32_at(b: &[u8], at: usize, big_endian: bool) -> u32 {
    let a = [b[at], b[at + 1], b[at + 2], b[at + 3]];
    if big_endian {
        u32::from_be_bytes(a)
    } else {
        u32::from_le_bytes(a)
    }
}

fn u16_at(b: &[u8], at: usize, big_endian: bool) -> u16 {
    let a = [b[at], b[at + 1]];
    if big_endian {
        u16::from_be_bytes(a)
    } else {
        u16::from_le_bytes(a)
    }
}

/// Rounds up to a multiple of 4.
fn pad4(n: u64) -> u64 {
    n.div_ceil(4) * 4
}

/// Timestamp in `units_per_sec` units plus `offset_secs` seconds, as nanoseconds,
/// rounded down and saturated to the u64 range.
fn to_nanos(ts: u64, units_per_sec: u64, offset_secs: i64) -> u64 {
    let ns = u128::from(ts) * u128::from(NANOS_PER_SEC) / u128::from(units_per_sec);
    let total = ns as i128 + i128::from(offset_secs) * i128::from(NANOS_PER_SEC);
    total.clamp(0, i128::from(u64::MAX)) as u64
}

fn next_pcap(input: &mut Input, st: &PcapState) -> Result<Option<Found>, Fail> {
    let hdr_len = if st.modified { 24 } else { 16 };
    if !input.fill(hdr_len)? {
        return if input.available().is_empty() {
            Ok(None)
        } else {
            Err(Fail::Truncated(TruncatedIn::Packet))
        };
    }
    let caplen = u32_at(input.available(), 8, st.big_endian);
    let total = hdr_len as u64 + u64::from(caplen);
    if total > MAX_BLOCK_SIZE as u64 {
        return Err(Fail::TooLarge(total));
    }
    let total = total as usize;
    if !input.fill(total)? {
        return Err(Fail::Truncated(TruncatedIn::Packet));
    }
    let rec = &input.available()[..total];
    let parsed = if st.modified {
        parse_pcap_frame_modified(rec)
    } else if st.big_endian {
        parse_pcap_frame_be(rec)
    } else {
        parse_pcap_frame(rec)
    };
    let frame =
        parsed.map_err(|_| Fail::Malformed(format!("invalid pcap record ({total} bytes)")))?;
    let b = frame.1;
    let frac_ns = if st.nanos {
        u64::from(b.ts_usec)
    } else {
        u64::from(b.ts_usec) * 1_000
    };
    let found = Found {
        ts_nanos: u64::from(b.ts_sec) * NANOS_PER_SEC + frac_ns,
        linktype: st.linktype,
        interface: 0,
        start: input.start + hdr_len,
        len: caplen as usize,
        orig_len: b.origlen,
    };
    input.consume(total);
    Ok(Some(found))
}

fn next_pcapng(input: &mut Input, st: &mut NgState, packets: u64) -> Result<Option<Found>, Fail> {
    loop {
        match pcapng_block(input, st, packets)? {
            Block::Packet(p) => return Ok(Some(p)),
            Block::Other => {}
            Block::End => return Ok(None),
        }
    }
}

enum Block {
    Packet(Found),
    Other,
    End,
}

/// Reads one pcapng block. `packets` is the number of packets before it (for messages).
fn pcapng_block(input: &mut Input, st: &mut NgState, packets: u64) -> Result<Block, Fail> {
    if !input.fill(8)? {
        let avail = input.available();
        if avail.is_empty() {
            return Ok(Block::End);
        }
        let within = if avail.len() >= 4 && is_packet_block(u32_at(avail, 0, st.big_endian)) {
            TruncatedIn::Packet
        } else {
            TruncatedIn::Block
        };
        return Err(Fail::Truncated(within));
    }
    let mut be = st.big_endian;
    let btype = u32_at(input.available(), 0, be);
    if btype == SHB_MAGIC {
        // The SHB magic reads the same in both byte orders; the byte-order magic
        // that follows the length sets the order of this section.
        if !input.fill(12)? {
            return Err(Fail::Truncated(TruncatedIn::Block));
        }
        let bom = &input.available()[8..12];
        be = if u32_at(bom, 0, false) == BOM_MAGIC {
            false
        } else if u32_at(bom, 0, true) == BOM_MAGIC {
            true
        } else {
            return Err(Fail::Malformed(format!(
                "section header block with an invalid byte-order magic 0x{:02x}{:02x}{:02x}{:02x}",
                bom[0], bom[1], bom[2], bom[3]
            )));
        };
    }
    let len = u32_at(input.available(), 4, be);
    if len < 12 || len & 3 != 0 {
        return Err(Fail::Malformed(format!(
            "pcapng block of type 0x{btype:08x} has an invalid length {len}"
        )));
    }
    if len as usize > MAX_BLOCK_SIZE {
        return Err(Fail::TooLarge(u64::from(len)));
    }
    let len = len as usize;
    if !input.fill(len)? {
        let within = if is_packet_block(btype) {
            TruncatedIn::Packet
        } else {
            TruncatedIn::Block
        };
        return Err(Fail::Truncated(within));
    }
    let block = &input.available()[..len];
    let trailer = u32_at(block, len - 4, be);
    if trailer as usize != len {
        return Err(Fail::Malformed(format!(
            "pcapng block of type 0x{btype:08x} has length {len} in its header \
             but {trailer} in its trailer"
        )));
    }
    let data_start = input.start;
    let result = match btype {
        SHB_MAGIC => {
            let (_, shb) = parse_sectionheaderblock(block).map_err(|_| {
                Fail::Malformed(format!("invalid section header block ({len} bytes)"))
            })?;
            if shb.major_version != 1 {
                return Err(Fail::Malformed(format!(
                    "unsupported pcapng version {}.{}",
                    shb.major_version, shb.minor_version
                )));
            }
            st.big_endian = be;
            st.interfaces.clear();
            Block::Other
        }
        IDB_MAGIC => {
            if len < 20 {
                return Err(Fail::Malformed(format!(
                    "interface description block too short ({len} bytes)"
                )));
            }
            let parsed = if be {
                parse_interfacedescriptionblock_be(block)
            } else {
                parse_interfacedescriptionblock_le(block)
            };
            let (_, idb) = parsed.map_err(|_| {
                Fail::Malformed(format!("invalid interface description block ({len} bytes)"))
            })?;
            if st.interfaces.len() >= MAX_INTERFACES {
                return Err(Fail::Malformed(format!(
                    "more than {MAX_INTERFACES} interfaces in one section"
                )));
            }
            let iface = interface_from(&idb, be, st.interfaces.len())?;
            st.interfaces.push(iface);
            Block::Other
        }
        EPB_MAGIC | PB_MAGIC => {
            if len < 32 {
                return Err(Fail::Malformed(format!(
                    "packet {}: packet block too short ({len} bytes)",
                    packets + 1
                )));
            }
            let if_id = if btype == EPB_MAGIC {
                u32_at(block, 8, be)
            } else {
                u32::from(u16_at(block, 8, be))
            };
            let ts_high = u32_at(block, 12, be);
            let ts_low = u32_at(block, 16, be);
            let caplen = u32_at(block, 20, be);
            let orig_len = u32_at(block, 24, be);
            let room = (len - 32) as u64;
            if pad4(u64::from(caplen)) > room {
                return Err(Fail::Malformed(format!(
                    "packet {}: captured length {caplen} does not fit in its {len}-byte block",
                    packets + 1
                )));
            }
            let iface = interface(st, if_id)?;
            if btype == EPB_MAGIC {
                // Full validation by pcap-parser (lengths, options framing).
                let parsed = if be {
                    parse_enhancedpacketblock_be(block)
                } else {
                    parse_enhancedpacketblock_le(block)
                };
                parsed.map_err(|_| {
                    Fail::Malformed(format!(
                        "packet {}: invalid enhanced packet block ({len} bytes)",
                        packets + 1
                    ))
                })?;
            }
            let ts = (u64::from(ts_high) << 32) | u64::from(ts_low);
            Block::Packet(Found {
                ts_nanos: to_nanos(ts, iface.units_per_sec, iface.offset_secs),
                linktype: iface.linktype,
                interface: if_id,
                start: data_start + 28,
                len: caplen as usize,
                orig_len,
            })
        }
        SPB_MAGIC => {
            if len < 16 {
                return Err(Fail::Malformed(format!(
                    "packet {}: simple packet block too short ({len} bytes)",
                    packets + 1
                )));
            }
            let parsed = if be {
                parse_simplepacketblock_be(block)
            } else {
                parse_simplepacketblock_le(block)
            };
            let (_, spb) = parsed.map_err(|_| {
                Fail::Malformed(format!(
                    "packet {}: invalid simple packet block ({len} bytes)",
                    packets + 1
                ))
            })?;
            let iface = interface(st, 0)?;
            // Captured length: the original length, cut to the snap length of
            // interface 0 and to the data actually present.
            let mut caplen = (spb.origlen as usize).min(len - 16);
            if iface.snaplen != 0 {
                caplen = caplen.min(iface.snaplen as usize);
            }
            Block::Packet(Found {
                ts_nanos: 0,
                linktype: iface.linktype,
                interface: 0,
                start: data_start + 12,
                len: caplen,
                orig_len: spb.origlen,
            })
        }
        // Name resolution, statistics, custom, decryption secrets, ...: skipped.
        _ => Block::Other,
    };
    input.consume(len);
    Ok(result)
}

fn is_packet_block(btype: u32) -> bool {
    matches!(btype, EPB_MAGIC | SPB_MAGIC | PB_MAGIC)
}

fn interface(st: &NgState, if_id: u32) -> Result<&Interface, Fail> {
    st.interfaces
        .get(if_id as usize)
        .ok_or(Fail::UndeclaredInterface {
            interface: if_id,
            described: st.interfaces.len() as u32,
        })
}

/// Link type, snap length and timestamp options (if_tsresol, if_tsoffset) of an IDB.
fn interface_from(
    idb: &InterfaceDescriptionBlock<'_>,
    big_endian: bool,
    index: usize,
) -> Result<Interface, Fail> {
    let mut tsresol: u8 = 6;
    let mut offset_secs: i64 = 0;
    // Options with a wrong length are ignored (as Wireshark does).
    for opt in &idb.options {
        let v = opt.value();
        match opt.code.0 {
            9 if opt.len == 1 && !v.is_empty() => tsresol = v[0],
            14 if opt.len == 8 && v.len() >= 8 => {
                let a = [v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]];
                offset_secs = if big_endian {
                    i64::from_be_bytes(a)
                } else {
                    i64::from_le_bytes(a)
                };
            }
            _ => {}
        }
    }
    let exp = u32::from(tsresol & 0x7f);
    let units_per_sec = if tsresol & 0x80 != 0 {
        2u64.checked_pow(exp)
    } else {
        10u64.checked_pow(exp)
    };
    let Some(units_per_sec) = units_per_sec else {
        return Err(Fail::Malformed(format!(
            "interface {index} has an unsupported timestamp resolution (if_tsresol 0x{tsresol:02x})"
        )));
    };
    Ok(Interface {
        linktype: idb.linktype.0 as u16,
        snaplen: idb.snaplen,
        units_per_sec,
        offset_secs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn input(bytes: Vec<u8>) -> Input {
        Input::new(Box::new(Cursor::new(bytes)))
    }

    #[test]
    fn buffer_grows_for_one_block_then_shrinks_back() {
        let big = 3 * BUFFER_SIZE + 5;
        let mut data: Vec<u8> = (0..big).map(|i| i as u8).collect();
        data.extend_from_slice(&[7; 100]);
        let mut inp = input(data);
        assert!(inp.fill(16).unwrap());
        assert_eq!(inp.buf.len(), BUFFER_SIZE);
        assert!(inp.fill(big).unwrap());
        assert!(inp.buf.len() >= big && inp.buf.len() <= 2 * big);
        assert_eq!(inp.available()[big - 1], (big - 1) as u8);
        inp.consume(big);
        assert!(inp.fill(100).unwrap());
        assert_eq!(inp.buf.len(), BUFFER_SIZE);
        assert_eq!(&inp.available()[..100], &[7; 100][..]);
        assert_eq!(inp.offset, big as u64);
    }

    #[test]
    fn growth_follows_the_data_present() {
        // A claim of 60 MiB over a 1 MiB input allocates about 1-2 MiB, not 60.
        let mut inp = input(vec![0; 1 << 20]);
        assert!(!inp.fill(60 << 20).unwrap());
        assert!(inp.buf.len() <= 2 << 20, "{}", inp.buf.len());
        assert_eq!(inp.available().len(), 1 << 20);
    }

    #[test]
    fn timestamps() {
        assert_eq!(to_nanos(1_500, 1_000, 0), 1_500_000_000);
        assert_eq!(to_nanos(1, 1 << 10, 0), 976_562);
        assert_eq!(to_nanos(1, 1, -2), 0);
        assert_eq!(to_nanos(u64::MAX, 1, i64::MAX), u64::MAX);
        assert_eq!(to_nanos(u64::MAX, 1 << 63, 0), 1_999_999_999);
    }
}
