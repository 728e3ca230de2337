//! Capture sources: files (pcap, pcapng, standard input) and, behind [`PacketSource`], live capture.
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
mod input;
pub mod joblog;
#[cfg(all(feature = "live", unix))]
pub mod live;
mod merge;
mod pcap;
mod pcapng;
pub mod printout;

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use pcap_parser::pcap::parse_pcap_header;
use pcap_parser::pcapng::SHB_MAGIC;

use input::Input;
use pcap::{PcapState, next_pcap};
use pcapng::{NgState, next_pcapng, pcapng_block};

pub use error::{SourceError, TruncatedIn};
pub use merge::{MergeSource, expand, open_point};

/// Size of the read buffer.
pub const BUFFER_SIZE: usize = 256 * 1024;

/// Largest pcap record (header included) or pcapng block accepted.
pub const MAX_BLOCK_SIZE: usize = 64 * 1024 * 1024;

/// Most interfaces accepted in one pcapng section (bounds memory).
pub const MAX_INTERFACES: usize = 65_536;

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

/// What a [`PacketSource`] has next.
#[derive(Debug)]
pub enum Next<'a> {
    /// A packet, and the input's offset just after its record (0 where offsets mean nothing). `stable`:
    /// its bytes stay where they are, unchanged, until the source is dropped (a memory-mapped file), so
    /// another thread may read them later without a copy.
    Packet {
        packet: Packet<'a>,
        end: u64,
        stable: bool,
    },
    /// Nothing for now (a live capture without traffic): ask again.
    Idle,
    /// The end of the input.
    End,
}

/// Where the pipeline's packets come from: a capture file or standard input ([`FileSource`]), a live
/// libpcap handle.
pub trait PacketSource {
    fn next(&mut self) -> Result<Next<'_>, SourceError>;

    /// Every packet that ended at or before input offset `offset` has been dealt with: a source that holds
    /// them (a mapped file) may let their bytes go.
    fn done_before(&mut self, _offset: u64) {}
}

impl PacketSource for FileSource {
    fn done_before(&mut self, offset: u64) {
        self.input.done_before(offset);
    }

    fn next(&mut self) -> Result<Next<'_>, SourceError> {
        let stable = self.input.is_mapped();
        Ok(match self.next_with_end()? {
            Some((packet, end)) => Next::Packet {
                packet,
                end,
                stable,
            },
            None => Next::End,
        })
    }
}

/// What to capture, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveConfig {
    /// Interface to capture on (`any`: every interface, Linux cooked capture).
    pub interface: String,
    /// Capture filter (BPF) replacing the default (`live::default_filter`).
    pub filter: Option<String>,
    /// UDP destination port of RoCEv2, for the default filter.
    pub roce_port: u16,
    pub promiscuous: bool,
    /// Kernel capture buffer, bytes.
    pub buffer_size: u32,
    /// Bytes kept of each frame.
    pub snaplen: u32,
}

impl LiveConfig {
    pub const DEFAULT_BUFFER_SIZE: u32 = 32 << 20;
    /// The largest frame libpcap keeps: every frame whole.
    pub const MAX_SNAPLEN: u32 = 262_144;
    pub const MIN_SNAPLEN: u32 = 64;

    /// The defaults on `interface`: the default filter, promiscuous, whole frames.
    pub fn new(interface: &str) -> LiveConfig {
        LiveConfig {
            interface: interface.to_string(),
            filter: None,
            roce_port: parsers::udp::ROCEV2_PORT,
            promiscuous: true,
            buffer_size: Self::DEFAULT_BUFFER_SIZE,
            snaplen: Self::MAX_SNAPLEN,
        }
    }
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
            Ok(f) => match Input::mapped(&f) {
                Some(input) => FileSource::with_input(name, input),
                None => FileSource::from_reader(name, Box::new(f)),
            },
            Err(source) => Err(SourceError::Open { name, source }),
        }
    }

    /// Reads a capture from any reader; `name` is used in error messages ("-"
    /// is shown as "standard input").
    pub fn from_reader(
        name: String,
        reader: Box<dyn Read + Send>,
    ) -> Result<FileSource, SourceError> {
        FileSource::with_input(name, Input::new(reader))
    }

    fn with_input(name: String, input: Input) -> Result<FileSource, SourceError> {
        let mut src = FileSource {
            name,
            input,
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
        Ok(self.next_with_end()?.map(|(p, _)| p))
    }

    /// [`FileSource::next_packet`], with the input's offset just after the packet's record.
    fn next_with_end(&mut self) -> Result<Option<(Packet<'_>, u64)>, SourceError> {
        if self.done {
            return Ok(None);
        }
        let found = match &mut self.state {
            State::Pcap(st) => next_pcap(&mut self.input, st),
            State::PcapNg(st) => next_pcapng(&mut self.input, st, self.packets),
        };
        // A file that shrank ends where it ends now: said so, not taken for its end or a cut.
        let shrank = self.input.shrank();
        match found {
            Ok(None) | Err(Fail::Truncated(_)) if shrank.is_some() => {
                self.done = true;
                let s = shrank.unwrap_or_default();
                Err(SourceError::Shrank {
                    name: self.name.clone(),
                    packets: self.packets,
                    at_open: s.at_open,
                    now: s.now,
                    read: s.read,
                })
            }
            Ok(Some(p)) => {
                self.packets += 1;
                let end = self.input.offset;
                let packet = Packet {
                    ts_nanos: p.ts_nanos,
                    linktype: p.linktype,
                    interface: p.interface,
                    data: &self.input.bytes()[p.start..p.start + p.len],
                    orig_len: p.orig_len,
                };
                Ok(Some((packet, end)))
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
pub(crate) enum Fail {
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
pub(crate) struct Found {
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
