//! Tests of `rocescope::source` (pcap / pcapng reader).
//!
//! The expected values are derived by hand from the byte arrays (written per the
//! pcap and pcapng specifications) or come from tshark 4.0.17, never from the
//! reader's own output.

use std::io::{self, Cursor, Read};
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use rocescope::source::{CaptureFormat, FileSource, Packet, SourceError, TruncatedIn};

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/corpus/public");

/// A packet with owned data, to compare whole captures.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Owned {
    ts_nanos: u64,
    linktype: u16,
    interface: u32,
    data: Vec<u8>,
    orig_len: u32,
}

impl From<Packet<'_>> for Owned {
    fn from(p: Packet<'_>) -> Owned {
        Owned {
            ts_nanos: p.ts_nanos,
            linktype: p.linktype,
            interface: p.interface,
            data: p.data.to_vec(),
            orig_len: p.orig_len,
        }
    }
}

fn from_bytes(name: &str, bytes: &[u8]) -> Result<FileSource, SourceError> {
    FileSource::from_reader(name.to_string(), Box::new(Cursor::new(bytes.to_vec())))
}

/// All packets, or the first error.
fn read_all(src: &mut FileSource) -> Result<Vec<Owned>, SourceError> {
    let mut v = Vec::new();
    while let Some(p) = src.next_packet()? {
        v.push(Owned::from(p));
    }
    Ok(v)
}

fn all_from_bytes(name: &str, bytes: &[u8]) -> Vec<Owned> {
    let mut src = from_bytes(name, bytes).expect("open");
    read_all(&mut src).expect("read")
}

fn pkt(ts_nanos: u64, linktype: u16, interface: u32, data: &[u8], orig_len: u32) -> Owned {
    Owned {
        ts_nanos,
        linktype,
        interface,
        data: data.to_vec(),
        orig_len,
    }
}

/// A reader returning at most one byte per `read` call.
struct OneByte<R>(R);

impl<R: Read> Read for OneByte<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = buf.len().min(1);
        self.0.read(&mut buf[..n])
    }
}

/// A reader that fails with `Interrupted` before every successful read and
/// returns chunks of the given sizes (cycling).
struct Choppy {
    data: Vec<u8>,
    pos: usize,
    chunks: Vec<usize>,
    calls: usize,
}

impl Read for Choppy {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.calls += 1;
        if self.calls % 2 == 1 {
            return Err(io::Error::new(io::ErrorKind::Interrupted, "signal"));
        }
        let want = self.chunks[(self.calls / 2) % self.chunks.len()].max(1);
        let n = want.min(buf.len()).min(self.data.len() - self.pos);
        buf[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

// ---------------------------------------------------------------------------
// Hand-built captures
// ---------------------------------------------------------------------------

/// pcap, little-endian, microsecond timestamps, Ethernet, two records.
const PCAP_LE_US: &[u8] = &[
    // file header
    0xd4, 0xc3, 0xb2, 0xa1, // magic 0xa1b2c3d4 written little-endian
    0x02, 0x00, 0x04, 0x00, // version 2.4
    0x00, 0x00, 0x00, 0x00, // thiszone
    0x00, 0x00, 0x00, 0x00, // sigfigs
    0xff, 0xff, 0x00, 0x00, // snaplen 65535
    0x01, 0x00, 0x00, 0x00, // linktype 1 (Ethernet)
    // record 1
    0x00, 0x10, 0x5e, 0x5f, // ts_sec 0x5f5e1000 = 1_600_000_000
    0x40, 0xe2, 0x01, 0x00, // ts_usec 0x0001e240 = 123_456
    0x04, 0x00, 0x00, 0x00, // caplen 4
    0x3c, 0x00, 0x00, 0x00, // orig_len 60
    0xde, 0xad, 0xbe, 0xef, // data
    // record 2
    0x01, 0x10, 0x5e, 0x5f, // ts_sec 1_600_000_001
    0x3f, 0x42, 0x0f, 0x00, // ts_usec 0x000f423f = 999_999
    0x02, 0x00, 0x00, 0x00, // caplen 2
    0x02, 0x00, 0x00, 0x00, // orig_len 2
    0xaa, 0xbb, // data
];

/// pcap, big-endian, nanosecond timestamps, Linux SLL, one record.
const PCAP_BE_NS: &[u8] = &[
    // file header
    0xa1, 0xb2, 0x3c, 0x4d, // magic 0xa1b23c4d written big-endian
    0x00, 0x02, 0x00, 0x04, // version 2.4
    0x00, 0x00, 0x00, 0x00, // thiszone
    0x00, 0x00, 0x00, 0x00, // sigfigs
    0x00, 0x04, 0x00, 0x00, // snaplen 262144
    0x00, 0x00, 0x00, 0x71, // linktype 113 (Linux SLL)
    // record
    0x5f, 0x5e, 0x10, 0x00, // ts_sec 1_600_000_000
    0x07, 0x5b, 0xcd, 0x15, // ts_nsec 0x075bcd15 = 123_456_789
    0x00, 0x00, 0x00, 0x03, // caplen 3
    0x00, 0x00, 0x00, 0x64, // orig_len 100
    0x01, 0x02, 0x03, // data
];

/// pcapng, little-endian: interface 0 = Ethernet with if_tsresol 9 (ns),
/// interface 1 = Linux SLL with the default resolution (us); one packet on
/// each, with a statistics block and a custom block (to be skipped) in between.
const PCAPNG_TWO_IFACES: &[u8] = &[
    // Section Header Block
    0x0a, 0x0d, 0x0d, 0x0a, // block type
    0x1c, 0x00, 0x00, 0x00, // block length 28
    0x4d, 0x3c, 0x2b, 0x1a, // byte-order magic (little-endian)
    0x01, 0x00, 0x00, 0x00, // version 1.0
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // section length -1
    0x1c, 0x00, 0x00, 0x00, // block length 28
    // Interface Description Block, interface 0
    0x01, 0x00, 0x00, 0x00, // block type 1
    0x20, 0x00, 0x00, 0x00, // block length 32
    0x01, 0x00, 0x00, 0x00, // linktype 1, reserved
    0x00, 0x00, 0x04, 0x00, // snaplen 262144
    0x09, 0x00, 0x01, 0x00, 0x09, 0x00, 0x00, 0x00, // if_tsresol = 9, padded
    0x00, 0x00, 0x00, 0x00, // opt_endofopt
    0x20, 0x00, 0x00, 0x00, // block length 32
    // Interface Description Block, interface 1
    0x01, 0x00, 0x00, 0x00, // block type 1
    0x14, 0x00, 0x00, 0x00, // block length 20
    0x71, 0x00, 0x00, 0x00, // linktype 113, reserved
    0x00, 0x00, 0x00, 0x00, // snaplen 0 (no limit)
    0x14, 0x00, 0x00, 0x00, // block length 20
    // Enhanced Packet Block, interface 1
    0x06, 0x00, 0x00, 0x00, // block type 6
    0x28, 0x00, 0x00, 0x00, // block length 40
    0x01, 0x00, 0x00, 0x00, // interface 1
    0x31, 0xaf, 0x05, 0x00, // ts high 0x0005af31
    0xf1, 0xfb, 0xad,
    0x07, // ts low 0x07adfbf1: 0x0005af31_07adfbf1 = 1_600_000_000_654_321 us
    0x05, 0x00, 0x00, 0x00, // caplen 5
    0x05, 0x00, 0x00, 0x00, // orig_len 5
    0x11, 0x22, 0x33, 0x44, 0x55, 0x00, 0x00, 0x00, // data + padding
    0x28, 0x00, 0x00, 0x00, // block length 40
    // Interface Statistics Block (skipped)
    0x05, 0x00, 0x00, 0x00, // block type 5
    0x18, 0x00, 0x00, 0x00, // block length 24
    0x00, 0x00, 0x00, 0x00, // interface 0
    0x00, 0x00, 0x00, 0x00, // ts high
    0x00, 0x00, 0x00, 0x00, // ts low
    0x18, 0x00, 0x00, 0x00, // block length 24
    // Custom Block (skipped)
    0xad, 0x0b, 0x00, 0x00, // block type 0x00000bad
    0x14, 0x00, 0x00, 0x00, // block length 20
    0x7b, 0x00, 0x00, 0x00, // private enterprise number
    0xca, 0xfe, 0xca, 0xfe, // custom data
    0x14, 0x00, 0x00, 0x00, // block length 20
    // Enhanced Packet Block, interface 0
    0x06, 0x00, 0x00, 0x00, // block type 6
    0x24, 0x00, 0x00, 0x00, // block length 36
    0x00, 0x00, 0x00, 0x00, // interface 0
    0x85, 0x57, 0x34, 0x16, // ts high 0x16345785
    0x15, 0xcd, 0xfb,
    0xdf, // ts low 0xdffbcd15: 0x16345785_dffbcd15 = 1_600_000_000_123_456_789 ns
    0x03, 0x00, 0x00, 0x00, // caplen 3
    0x3c, 0x00, 0x00, 0x00, // orig_len 60
    0x0a, 0x0b, 0x0c, 0x00, // data + padding
    0x24, 0x00, 0x00, 0x00, // block length 36
];

/// pcapng, little-endian, one Ethernet interface with if_tsresol 0x8a
/// (2^-10 s units), two packets.
const PCAPNG_TSRESOL_2_10: &[u8] = &[
    // Section Header Block
    0x0a, 0x0d, 0x0d, 0x0a, 0x1c, 0x00, 0x00, 0x00, // type, length 28
    0x4d, 0x3c, 0x2b, 0x1a, 0x01, 0x00, 0x00, 0x00, // byte-order magic, version 1.0
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // section length -1
    0x1c, 0x00, 0x00, 0x00, // length 28
    // Interface Description Block
    0x01, 0x00, 0x00, 0x00, 0x1c, 0x00, 0x00, 0x00, // type 1, length 28
    0x01, 0x00, 0x00, 0x00, // linktype 1, reserved
    0x00, 0x00, 0x00, 0x00, // snaplen 0
    0x09, 0x00, 0x01, 0x00, 0x8a, 0x00, 0x00, 0x00, // if_tsresol = 0x8a (2^-10), padded
    0x1c, 0x00, 0x00, 0x00, // length 28 (no opt_endofopt: it is optional)
    // Enhanced Packet Block
    0x06, 0x00, 0x00, 0x00, 0x24, 0x00, 0x00, 0x00, // type 6, length 36
    0x00, 0x00, 0x00, 0x00, // interface 0
    // ts 0x17d_78400200 = 1_638_400_000_512 = 1_600_000_000 * 1024 + 512
    0x7d, 0x01, 0x00, 0x00, // ts high 0x0000017d
    0x00, 0x02, 0x40, 0x78, // ts low 0x78400200
    0x04, 0x00, 0x00, 0x00, // caplen 4
    0x40, 0x00, 0x00, 0x00, // orig_len 64
    0x01, 0x02, 0x03, 0x04, // data
    0x24, 0x00, 0x00, 0x00, // length 36
    // Enhanced Packet Block
    0x06, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, 0x00, // type 6, length 32
    0x00, 0x00, 0x00, 0x00, // interface 0
    // ts 0x17d_78400001 = 1_600_000_000 * 1024 + 1
    0x7d, 0x01, 0x00, 0x00, // ts high 0x0000017d
    0x01, 0x00, 0x40, 0x78, // ts low 0x78400001
    0x00, 0x00, 0x00, 0x00, // caplen 0
    0x00, 0x00, 0x00, 0x00, // orig_len 0
    0x20, 0x00, 0x00, 0x00, // length 32
];

/// pcapng, little-endian, default resolution (us) and if_tsoffset = 1_000_000_000 s.
const PCAPNG_TSOFFSET: &[u8] = &[
    // Section Header Block
    0x0a, 0x0d, 0x0d, 0x0a, 0x1c, 0x00, 0x00, 0x00, // type, length 28
    0x4d, 0x3c, 0x2b, 0x1a, 0x01, 0x00, 0x00, 0x00, // byte-order magic, version 1.0
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // section length -1
    0x1c, 0x00, 0x00, 0x00, // length 28
    // Interface Description Block
    0x01, 0x00, 0x00, 0x00, 0x24, 0x00, 0x00, 0x00, // type 1, length 36
    0x01, 0x00, 0x00, 0x00, // linktype 1, reserved
    0x00, 0x00, 0x00, 0x00, // snaplen 0
    0x0e, 0x00, 0x08, 0x00, // if_tsoffset, length 8
    0x00, 0xca, 0x9a, 0x3b, 0x00, 0x00, 0x00, 0x00, // 0x3b9aca00 = 1_000_000_000 s
    0x00, 0x00, 0x00, 0x00, // opt_endofopt
    0x24, 0x00, 0x00, 0x00, // length 36
    // Enhanced Packet Block
    0x06, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, 0x00, // type 6, length 32
    0x00, 0x00, 0x00, 0x00, // interface 0
    0xb2, 0x21, 0x02, 0x00, // ts high 0x000221b2
    0x01, 0x80, 0xdd, 0x62, // ts low 0x62dd8001: 600_000_000_000_001 us
    0x00, 0x00, 0x00, 0x00, // caplen 0
    0x00, 0x00, 0x00, 0x00, // orig_len 0
    0x20, 0x00, 0x00, 0x00, // length 32
];

/// pcapng with two sections: a little-endian one (Ethernet, us) and a
/// big-endian one (Linux SLL, if_tsresol 3 = ms). The second Section Header
/// Block resets the interface list: its packet on interface 0 is on SLL.
const PCAPNG_TWO_SECTIONS: &[u8] = &[
    // Section 1: Section Header Block, little-endian
    0x0a, 0x0d, 0x0d, 0x0a, 0x1c, 0x00, 0x00, 0x00, // type, length 28
    0x4d, 0x3c, 0x2b, 0x1a, 0x01, 0x00, 0x00, 0x00, // byte-order magic, version 1.0
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // section length -1
    0x1c, 0x00, 0x00, 0x00, // length 28
    // Interface Description Block: Ethernet, default resolution
    0x01, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, // type 1, length 20
    0x01, 0x00, 0x00, 0x00, // linktype 1, reserved
    0x00, 0x00, 0x00, 0x00, // snaplen 0
    0x14, 0x00, 0x00, 0x00, // length 20
    // Enhanced Packet Block, interface 0
    0x06, 0x00, 0x00, 0x00, 0x24, 0x00, 0x00, 0x00, // type 6, length 36
    0x00, 0x00, 0x00, 0x00, // interface 0
    0x31, 0xaf, 0x05, 0x00, // ts high 0x0005af31
    0xf1, 0xfb, 0xad, 0x07, // ts low 0x07adfbf1: 1_600_000_000_654_321 us
    0x02, 0x00, 0x00, 0x00, // caplen 2
    0x02, 0x00, 0x00, 0x00, // orig_len 2
    0xe1, 0xe2, 0x00, 0x00, // data + padding
    0x24, 0x00, 0x00, 0x00, // length 36
    // Section 2: Section Header Block, big-endian
    0x0a, 0x0d, 0x0d, 0x0a, 0x00, 0x00, 0x00, 0x1c, // type, length 28
    0x1a, 0x2b, 0x3c, 0x4d, 0x00, 0x01, 0x00,
    0x00, // byte-order magic (big-endian), version 1.0
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // section length -1
    0x00, 0x00, 0x00, 0x1c, // length 28
    // Interface Description Block: Linux SLL, if_tsresol 3
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x1c, // type 1, length 28
    0x00, 0x71, 0x00, 0x00, // linktype 113, reserved
    0x00, 0x00, 0xff, 0xff, // snaplen 65535
    0x00, 0x09, 0x00, 0x01, 0x03, 0x00, 0x00, 0x00, // if_tsresol = 3, padded
    0x00, 0x00, 0x00, 0x1c, // length 28
    // Enhanced Packet Block, interface 0
    0x00, 0x00, 0x00, 0x06, 0x00, 0x00, 0x00, 0x24, // type 6, length 36
    0x00, 0x00, 0x00, 0x00, // interface 0
    0x00, 0x00, 0x01, 0x74, // ts high 0x00000174
    0x87, 0x6e, 0x80, 0x00, // ts low 0x876e8000: 0x174_876e8000 = 1_600_000_000_000 ms
    0x00, 0x00, 0x00, 0x04, // caplen 4
    0x00, 0x00, 0x00, 0x50, // orig_len 80
    0xf1, 0xf2, 0xf3, 0xf4, // data
    0x00, 0x00, 0x00, 0x24, // length 36
];

/// pcapng, little-endian, one Ethernet interface with snaplen 4, two Simple
/// Packet Blocks and an obsolete Packet Block.
const PCAPNG_SIMPLE: &[u8] = &[
    // Section Header Block
    0x0a, 0x0d, 0x0d, 0x0a, 0x1c, 0x00, 0x00, 0x00, // type, length 28
    0x4d, 0x3c, 0x2b, 0x1a, 0x01, 0x00, 0x00, 0x00, // byte-order magic, version 1.0
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // section length -1
    0x1c, 0x00, 0x00, 0x00, // length 28
    // Interface Description Block
    0x01, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, // type 1, length 20
    0x01, 0x00, 0x00, 0x00, // linktype 1, reserved
    0x04, 0x00, 0x00, 0x00, // snaplen 4
    0x14, 0x00, 0x00, 0x00, // length 20
    // Simple Packet Block: orig_len 6, cut to the snaplen (4 bytes of data)
    0x03, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, // type 3, length 20
    0x06, 0x00, 0x00, 0x00, // orig_len 6
    0x51, 0x52, 0x53, 0x54, // data
    0x14, 0x00, 0x00, 0x00, // length 20
    // Simple Packet Block: orig_len 3
    0x03, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, // type 3, length 20
    0x03, 0x00, 0x00, 0x00, // orig_len 3
    0x61, 0x62, 0x63, 0x00, // data + padding
    0x14, 0x00, 0x00, 0x00, // length 20
    // Packet Block (obsolete)
    0x02, 0x00, 0x00, 0x00, 0x24, 0x00, 0x00, 0x00, // type 2, length 36
    0x00, 0x00, // interface 0
    0x00, 0x00, // drops count
    0x31, 0xaf, 0x05, 0x00, // ts high 0x0005af31
    0x31, 0xde, 0xaf,
    0x07, // ts low 0x07afde31: 0x0005af31_07afde31 = 1_600_000_000_777_777 us
    0x03, 0x00, 0x00, 0x00, // caplen 3
    0x09, 0x00, 0x00, 0x00, // orig_len 9
    0x71, 0x72, 0x73, 0x00, // data + padding
    0x24, 0x00, 0x00, 0x00, // length 36
];

/// Section Header Block + two IDBs + a packet on interface 0, then a packet
/// on interface 3.
const PCAPNG_BAD_IFACE: &[u8] = &[
    // Section Header Block
    0x0a, 0x0d, 0x0d, 0x0a, 0x1c, 0x00, 0x00, 0x00, // type, length 28
    0x4d, 0x3c, 0x2b, 0x1a, 0x01, 0x00, 0x00, 0x00, // byte-order magic, version 1.0
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // section length -1
    0x1c, 0x00, 0x00, 0x00, // length 28
    // Interface Description Block 0
    0x01, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, // type 1, length 20
    0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // linktype 1, snaplen 0
    0x14, 0x00, 0x00, 0x00, // length 20
    // Interface Description Block 1
    0x01, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, // type 1, length 20
    0x71, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // linktype 113, snaplen 0
    0x14, 0x00, 0x00, 0x00, // length 20
    // Enhanced Packet Block, interface 0
    0x06, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, 0x00, // type 6, length 32
    0x00, 0x00, 0x00, 0x00, // interface 0
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // ts 0
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // caplen 0, orig_len 0
    0x20, 0x00, 0x00, 0x00, // length 32
    // Enhanced Packet Block, interface 3
    0x06, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, 0x00, // type 6, length 32
    0x03, 0x00, 0x00, 0x00, // interface 3
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // ts 0
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // caplen 0, orig_len 0
    0x20, 0x00, 0x00, 0x00, // length 32
];

#[test]
fn pcap_little_endian_microseconds() {
    let mut src = from_bytes("le.pcap", PCAP_LE_US).unwrap();
    assert_eq!(src.format(), CaptureFormat::Pcap);
    let p = src.next_packet().unwrap().unwrap();
    assert_eq!(
        p,
        Packet {
            ts_nanos: 1_600_000_000_123_456_000,
            linktype: 1,
            interface: 0,
            data: &[0xde, 0xad, 0xbe, 0xef],
            orig_len: 60,
        }
    );
    let p = src.next_packet().unwrap().unwrap();
    assert_eq!(
        p,
        Packet {
            ts_nanos: 1_600_000_001_999_999_000,
            linktype: 1,
            interface: 0,
            data: &[0xaa, 0xbb],
            orig_len: 2,
        }
    );
    assert_eq!(src.next_packet().unwrap(), None);
    assert_eq!(src.next_packet().unwrap(), None);
    assert_eq!(src.packets_read(), 2);
}

#[test]
fn pcap_big_endian_nanoseconds() {
    let mut src = from_bytes("be.pcap", PCAP_BE_NS).unwrap();
    assert_eq!(src.format(), CaptureFormat::Pcap);
    assert_eq!(
        read_all(&mut src).unwrap(),
        vec![pkt(1_600_000_000_123_456_789, 113, 0, &[1, 2, 3], 100)]
    );
}

#[test]
fn pcap_other_two_magics() {
    // Big-endian microseconds and little-endian nanoseconds: same records as
    // above with the other magic (and the byte order of every field swapped).
    let mut be_us = PCAP_BE_NS.to_vec();
    be_us[..4].copy_from_slice(&[0xa1, 0xb2, 0xc3, 0xd4]);
    assert_eq!(
        all_from_bytes("be-us.pcap", &be_us),
        // ts_usec field 123_456_789 read as microseconds
        vec![pkt(1_600_000_123_456_789_000, 113, 0, &[1, 2, 3], 100)]
    );
    let mut le_ns = PCAP_LE_US.to_vec();
    le_ns[..4].copy_from_slice(&[0x4d, 0x3c, 0xb2, 0xa1]);
    assert_eq!(
        all_from_bytes("le-ns.pcap", &le_ns),
        vec![
            pkt(
                1_600_000_000_000_123_456,
                1,
                0,
                &[0xde, 0xad, 0xbe, 0xef],
                60
            ),
            pkt(1_600_000_001_000_999_999, 1, 0, &[0xaa, 0xbb], 2),
        ]
    );
}

#[test]
fn pcap_modified_format() {
    // Kuznetsov's patched format (magic 0xa1b2cd34, little-endian): 24-byte
    // record headers (ifindex, protocol, pkt_type and a pad byte follow orig_len).
    let v: &[u8] = &[
        0x34, 0xcd, 0xb2, 0xa1, 0x02, 0x00, 0x04, 0x00, // magic, version 2.4
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // thiszone, sigfigs
        0xff, 0xff, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, // snaplen 65535, linktype 1
        0x00, 0x10, 0x5e, 0x5f, // ts_sec 1_600_000_000
        0x01, 0x00, 0x00, 0x00, // ts_usec 1
        0x02, 0x00, 0x00, 0x00, // caplen 2
        0x08, 0x00, 0x00, 0x00, // orig_len 8
        0x02, 0x00, 0x00, 0x00, // ifindex
        0x08, 0x00, 0x00, 0x00, // protocol, pkt_type, pad
        0xc1, 0xc2, // data
    ];
    assert_eq!(
        all_from_bytes("mod.pcap", v),
        vec![pkt(1_600_000_000_000_001_000, 1, 0, &[0xc1, 0xc2], 8)]
    );
}

#[test]
fn pcap_linktype_ignores_fcs_bits() {
    // Upper bits of the link-type field carry FCS information (libpcap LT_LINKTYPE).
    let mut v = PCAP_LE_US.to_vec();
    v[20..24].copy_from_slice(&[0x01, 0x00, 0x00, 0x14]); // 0x14000001: FCS length 1 (x2 bytes) present
    let pkts = all_from_bytes("fcs.pcap", &v);
    assert_eq!(pkts.len(), 2);
    assert!(pkts.iter().all(|p| p.linktype == 1));
}

#[test]
fn pcapng_two_interfaces_different_linktypes_and_resolutions() {
    let mut src = from_bytes("two.pcapng", PCAPNG_TWO_IFACES).unwrap();
    assert_eq!(src.format(), CaptureFormat::PcapNg);
    assert_eq!(
        read_all(&mut src).unwrap(),
        vec![
            pkt(
                1_600_000_000_654_321_000,
                113,
                1,
                &[0x11, 0x22, 0x33, 0x44, 0x55],
                5
            ),
            pkt(1_600_000_000_123_456_789, 1, 0, &[0x0a, 0x0b, 0x0c], 60),
        ]
    );
}

#[test]
fn pcapng_binary_tsresol() {
    assert_eq!(
        all_from_bytes("tsresol.pcapng", PCAPNG_TSRESOL_2_10),
        vec![
            // 1_600_000_000 s + 512/1024 s
            pkt(1_600_000_000_500_000_000, 1, 0, &[1, 2, 3, 4], 64),
            // 1_600_000_000 s + 1/1024 s = 976_562.5 ns, rounded down
            pkt(1_600_000_000_000_976_562, 1, 0, &[], 0),
        ]
    );
}

#[test]
fn pcapng_tsoffset() {
    // 600_000_000.000001 s + 1_000_000_000 s
    assert_eq!(
        all_from_bytes("tsoffset.pcapng", PCAPNG_TSOFFSET),
        vec![pkt(1_600_000_000_000_001_000, 1, 0, &[], 0)]
    );
}

#[test]
fn pcapng_second_section_resets_interfaces_and_byte_order() {
    assert_eq!(
        all_from_bytes("sections.pcapng", PCAPNG_TWO_SECTIONS),
        vec![
            pkt(1_600_000_000_654_321_000, 1, 0, &[0xe1, 0xe2], 2),
            pkt(
                1_600_000_000_000_000_000,
                113,
                0,
                &[0xf1, 0xf2, 0xf3, 0xf4],
                80
            ),
        ]
    );
}

#[test]
fn pcapng_big_endian_first_section() {
    // The big-endian second section alone is a complete file.
    let be = &PCAPNG_TWO_SECTIONS[84..];
    assert_eq!(be[..4], [0x0a, 0x0d, 0x0d, 0x0a]);
    assert_eq!(
        all_from_bytes("be.pcapng", be),
        vec![pkt(
            1_600_000_000_000_000_000,
            113,
            0,
            &[0xf1, 0xf2, 0xf3, 0xf4],
            80
        )]
    );
}

#[test]
fn pcapng_simple_and_obsolete_packet_blocks() {
    assert_eq!(
        all_from_bytes("simple.pcapng", PCAPNG_SIMPLE),
        vec![
            // caplen = min(orig_len 6, snaplen 4, 4 bytes in the block) = 4; no timestamp
            pkt(0, 1, 0, &[0x51, 0x52, 0x53, 0x54], 6),
            // caplen = min(3, 4, 4) = 3
            pkt(0, 1, 0, &[0x61, 0x62, 0x63], 3),
            pkt(1_600_000_000_777_777_000, 1, 0, &[0x71, 0x72, 0x73], 9),
        ]
    );
}

#[test]
fn simple_packet_block_caplen_clamped_to_block() {
    // Not per the specification, but possible: an SPB whose data field is
    // shorter than min(orig_len, snaplen). Interface 0 has snaplen 0 (no limit),
    // orig_len is 6, the block holds 4 bytes: caplen = 4.
    let mut v = PCAPNG_TWO_SECTIONS[..48].to_vec(); // SHB + IDB (Ethernet, snaplen 0)
    v.extend_from_slice(&[
        0x03, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, // type 3, length 20
        0x06, 0x00, 0x00, 0x00, // orig_len 6
        0x51, 0x52, 0x53, 0x54, // data field of 4 bytes
        0x14, 0x00, 0x00, 0x00, // length 20
        0x03, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, // type 3, length 16
        0x06, 0x00, 0x00, 0x00, // orig_len 6, no data at all
        0x10, 0x00, 0x00, 0x00, // length 16
    ]);
    assert_eq!(
        all_from_bytes("spb.pcapng", &v),
        vec![
            pkt(0, 1, 0, &[0x51, 0x52, 0x53, 0x54], 6),
            pkt(0, 1, 0, &[], 6)
        ]
    );
}

#[test]
fn simple_packet_block_without_interface_is_an_error() {
    let mut v = PCAPNG_SIMPLE[..28].to_vec(); // SHB only
    v.extend_from_slice(&PCAPNG_SIMPLE[48..68]); // first SPB
    let mut src = from_bytes("spb.pcapng", &v).unwrap();
    let e = src.next_packet().unwrap_err();
    assert_eq!(
        e.to_string(),
        "'spb.pcapng': packet 1 refers to interface 0, but no interface was described"
    );
}

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

#[test]
fn error_empty_input() {
    let e = from_bytes("empty.pcap", &[]).unwrap_err();
    assert!(matches!(e, SourceError::Empty { .. }));
    assert_eq!(
        e.to_string(),
        "'empty.pcap' is empty (0 bytes), not a pcap or pcapng file"
    );

    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("source-test-empty.pcap");
    std::fs::write(&path, b"").unwrap();
    let e = FileSource::open(&path).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "'{}' is empty (0 bytes), not a pcap or pcapng file",
            path.display()
        )
    );
}

#[test]
fn error_not_a_capture() {
    let e = from_bytes("x.txt", b"hello world\n").unwrap_err();
    assert!(matches!(e, SourceError::NotCapture { .. }));
    assert_eq!(
        e.to_string(),
        "'x.txt' is not a pcap or pcapng file (it starts with 0x68656c6c)"
    );
    let e = from_bytes("x.pcap.gz", &[0x1f, 0x8b, 0x08, 0x00, 0x00]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "'x.pcap.gz' is not a pcap or pcapng file (it starts with 0x1f8b0800); \
         it is gzip-compressed: decompress it first, e.g. with gunzip"
    );
    let e = from_bytes("short", &[0xd4, 0xc3]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "'short' is not a pcap or pcapng file (it is only 2 bytes long)"
    );
    let e = from_bytes("-", b"GET / HTTP/1.1\r\n").unwrap_err();
    assert_eq!(
        e.to_string(),
        "standard input is not a pcap or pcapng file (it starts with 0x47455420)"
    );
}

#[test]
fn error_truncated_file_header() {
    for cut in [4, 10, 23] {
        let e = from_bytes("x.pcap", &PCAP_LE_US[..cut]).unwrap_err();
        assert!(matches!(
            e,
            SourceError::Truncated {
                within: TruncatedIn::FileHeader,
                ..
            }
        ));
        assert_eq!(
            e.to_string(),
            "'x.pcap' ends in the middle of the file header (file truncated?)"
        );
    }
    for cut in [4, 11, 27] {
        let e = from_bytes("x.pcapng", &PCAPNG_TWO_IFACES[..cut]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "'x.pcapng' ends in the middle of the file header (file truncated?)"
        );
    }
}

/// A little-endian microsecond pcap with `n` 10-byte records (record i has
/// ts_sec = i and data [i as u8; 10]).
fn pcap_with(n: u32) -> Vec<u8> {
    let mut v = PCAP_LE_US[..24].to_vec();
    for i in 0..n {
        v.extend_from_slice(&i.to_le_bytes()); // ts_sec
        v.extend_from_slice(&0u32.to_le_bytes()); // ts_usec
        v.extend_from_slice(&10u32.to_le_bytes()); // caplen
        v.extend_from_slice(&10u32.to_le_bytes()); // orig_len
        v.extend_from_slice(&[i as u8; 10]);
    }
    v
}

#[test]
fn error_truncated_packet() {
    let full = pcap_with(42);
    assert_eq!(full.len(), 24 + 42 * 26);
    // Cut inside the 42nd record's header, and inside its data.
    for cut in [full.len() - 20, full.len() - 1] {
        let mut src = from_bytes("x.pcap", &full[..cut]).unwrap();
        for i in 0..41u64 {
            let p = src.next_packet().unwrap().unwrap();
            assert_eq!(p.ts_nanos, i * 1_000_000_000);
            assert_eq!(p.data, &[i as u8; 10]);
        }
        let e = src.next_packet().unwrap_err();
        assert!(matches!(
            e,
            SourceError::Truncated {
                packets: 41,
                within: TruncatedIn::Packet,
                ..
            }
        ));
        assert_eq!(
            e.to_string(),
            "'x.pcap' ends in the middle of a packet after 41 complete packets (file truncated?)"
        );
        // The source stays finished after an error.
        assert_eq!(src.next_packet().unwrap(), None);
    }
    // pcapng: cut in the last Enhanced Packet Block (after 1 packet), and in the
    // statistics block that follows the first packet.
    let mut src = from_bytes(
        "x.pcapng",
        &PCAPNG_TWO_IFACES[..PCAPNG_TWO_IFACES.len() - 5],
    )
    .unwrap();
    assert!(src.next_packet().unwrap().is_some());
    assert_eq!(
        src.next_packet().unwrap_err().to_string(),
        "'x.pcapng' ends in the middle of a packet after 1 complete packet (file truncated?)"
    );
    let mut src = from_bytes("x.pcapng", &PCAPNG_TWO_IFACES[..130]).unwrap();
    assert!(src.next_packet().unwrap().is_some());
    assert_eq!(
        src.next_packet().unwrap_err().to_string(),
        "'x.pcapng' ends in the middle of a pcapng block after 1 complete packet (file truncated?)"
    );
}

#[test]
fn error_truncated_real_file() {
    // rping.pcap has 65 packets (SOURCES.md / tshark); cut 10 bytes off the end.
    let bytes = std::fs::read(format!("{CORPUS}/rping.pcap")).unwrap();
    let mut src = from_bytes("rping.pcap", &bytes[..bytes.len() - 10]).unwrap();
    let mut n = 0;
    let e = loop {
        match src.next_packet() {
            Ok(Some(_)) => n += 1,
            Ok(None) => panic!("no error"),
            Err(e) => break e,
        }
    };
    assert_eq!(n, 64);
    assert_eq!(
        e.to_string(),
        "'rping.pcap' ends in the middle of a packet after 64 complete packets (file truncated?)"
    );
}

#[test]
fn every_truncation_of_a_real_file() {
    // Cutting the file anywhere gives a prefix of its packets, then a clean end
    // (cut on a block boundary) or a "truncated" error; never anything else.
    let name = "RoCE_capture_1_packet (1).pcapng";
    let bytes = std::fs::read(corpus(name)).unwrap();
    let full = read_all(&mut FileSource::open(&corpus(name)).unwrap()).unwrap();
    assert_eq!(full.len(), 27); // SOURCES.md (tshark)
    let mut clean_ends = 0;
    for cut in 0..bytes.len() {
        let mut src = match from_bytes(name, &bytes[..cut]) {
            Ok(s) => s,
            Err(SourceError::Empty { .. }) => {
                assert_eq!(cut, 0);
                continue;
            }
            Err(e) => {
                assert!(
                    matches!(
                        e,
                        SourceError::Truncated {
                            within: TruncatedIn::FileHeader,
                            ..
                        } | SourceError::NotCapture { .. }
                    ),
                    "cut {cut}: {e}"
                );
                continue;
            }
        };
        let mut got = Vec::new();
        loop {
            match src.next_packet() {
                Ok(Some(p)) => got.push(Owned::from(p)),
                Ok(None) => {
                    clean_ends += 1;
                    break;
                }
                Err(e) => {
                    assert!(matches!(e, SourceError::Truncated { .. }), "cut {cut}: {e}");
                    break;
                }
            }
        }
        assert_eq!(got[..], full[..got.len()], "cut {cut}");
    }
    // One clean end per block boundary after the first block: blocks = packets + the rest.
    assert!(clean_ends > full.len(), "{clean_ends}");
}

#[test]
fn error_missing_file() {
    let e = FileSource::open(Path::new("/nonexistent-dir/x.pcap")).unwrap_err();
    assert!(matches!(e, SourceError::Open { .. }));
    assert_eq!(
        e.to_string(),
        "cannot open '/nonexistent-dir/x.pcap': No such file or directory (os error 2)"
    );
}

#[test]
fn error_undeclared_interface() {
    let mut src = from_bytes("x.pcapng", PCAPNG_BAD_IFACE).unwrap();
    assert_eq!(
        Owned::from(src.next_packet().unwrap().unwrap()),
        pkt(0, 1, 0, &[], 0)
    );
    let e = src.next_packet().unwrap_err();
    assert!(matches!(
        e,
        SourceError::UndeclaredInterface {
            packet: 2,
            interface: 3,
            described: 2,
            ..
        }
    ));
    assert_eq!(
        e.to_string(),
        "'x.pcapng': packet 2 refers to interface 3, but only 2 interfaces were described"
    );

    // After a new section, interface 1 of the previous section is gone.
    let mut v = PCAPNG_BAD_IFACE[..28 + 20 + 20].to_vec(); // SHB + 2 IDBs
    v.extend_from_slice(&PCAPNG_BAD_IFACE[..28 + 20]); // new SHB + 1 IDB
    let at = v.len();
    v.extend_from_slice(&PCAPNG_BAD_IFACE[100..132]); // EPB on interface 3
    v[at + 8] = 1; // ... now on interface 1
    let mut src = from_bytes("y.pcapng", &v).unwrap();
    assert_eq!(
        src.next_packet().unwrap_err().to_string(),
        "'y.pcapng': packet 1 refers to interface 1, but only 1 interface was described"
    );
}

#[test]
fn error_caplen_larger_than_block() {
    // First EPB of PCAPNG_BAD_IFACE with caplen 8 in a 32-byte block (no room for data).
    let mut v = PCAPNG_BAD_IFACE[..100].to_vec();
    v[68 + 20] = 8;
    let mut src = from_bytes("cap.pcapng", &v).unwrap();
    let e = src.next_packet().unwrap_err();
    assert!(matches!(e, SourceError::Malformed { offset: 68, .. }));
    assert_eq!(
        e.to_string(),
        "'cap.pcapng' is corrupt at byte offset 68 (after 0 complete packets): \
         packet 1: captured length 8 does not fit in its 32-byte block"
    );
}

#[test]
fn error_block_lengths() {
    // Trailer length differs from the header length.
    let mut v = PCAPNG_BAD_IFACE[..100].to_vec();
    v[96] = 0x24;
    let e = read_all(&mut from_bytes("t.pcapng", &v).unwrap()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "'t.pcapng' is corrupt at byte offset 68 (after 0 complete packets): \
         pcapng block of type 0x00000006 has length 32 in its header but 36 in its trailer"
    );
    // Length not a multiple of 4.
    let mut v = PCAPNG_BAD_IFACE[..100].to_vec();
    v[72] = 0x21;
    let e = read_all(&mut from_bytes("t.pcapng", &v).unwrap()).unwrap_err();
    assert!(matches!(e, SourceError::Malformed { offset: 68, .. }));
    // A block that claims 0xfffffff0 bytes is refused without reading or allocating it.
    let mut v = PCAPNG_BAD_IFACE[..100].to_vec();
    v[72..76].copy_from_slice(&[0xf0, 0xff, 0xff, 0xff]);
    let e = read_all(&mut from_bytes("t.pcapng", &v).unwrap()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "'t.pcapng': the record at byte offset 68 (after 0 complete packets) claims \
         4294967280 bytes, more than the limit of 64 MiB (corrupt file?)"
    );
}

#[test]
fn error_pcap_record_too_large() {
    let mut v = PCAP_LE_US.to_vec();
    v[32..36].copy_from_slice(&[0xf0, 0xff, 0xff, 0xff]); // caplen 0xfffffff0
    let e = read_all(&mut from_bytes("big.pcap", &v).unwrap()).unwrap_err();
    assert!(matches!(
        e,
        SourceError::TooLarge {
            offset: 24,
            size: 4_294_967_296,
            ..
        }
    ));
    assert_eq!(
        e.to_string(),
        "'big.pcap': the record at byte offset 24 (after 0 complete packets) claims \
         4294967296 bytes, more than the limit of 64 MiB (corrupt file?)"
    );
}

#[test]
fn bad_byte_order_magic_and_version() {
    let mut v = PCAPNG_TSOFFSET.to_vec();
    v[8] = 0x00;
    let e = from_bytes("bom.pcapng", &v).unwrap_err();
    assert_eq!(
        e.to_string(),
        "'bom.pcapng' is corrupt at byte offset 0 (after 0 complete packets): \
         section header block with an invalid byte-order magic 0x003c2b1a"
    );
    let mut v = PCAPNG_TSOFFSET.to_vec();
    v[12] = 2;
    let e = from_bytes("ver.pcapng", &v).unwrap_err();
    assert_eq!(
        e.to_string(),
        "'ver.pcapng' is corrupt at byte offset 0 (after 0 complete packets): \
         unsupported pcapng version 2.0"
    );
}

// ---------------------------------------------------------------------------
// Oversized packets: the buffer grows for one block and the data stays right.
// ---------------------------------------------------------------------------

#[test]
fn packet_larger_than_read_buffer() {
    let big_len: u32 = 3 * 1024 * 1024 + 3; // larger than the 256 KiB read buffer
    let mut v = PCAP_LE_US[..24].to_vec();
    v.extend_from_slice(&7u32.to_le_bytes()); // ts_sec
    v.extend_from_slice(&0u32.to_le_bytes()); // ts_usec
    v.extend_from_slice(&big_len.to_le_bytes()); // caplen
    v.extend_from_slice(&big_len.to_le_bytes()); // orig_len
    v.extend((0..big_len).map(|i| (i % 251) as u8));
    v.extend_from_slice(&PCAP_LE_US[24..44]); // then a small record
    for reader in 0..2 {
        let r: Box<dyn Read + Send> = if reader == 0 {
            Box::new(Cursor::new(v.clone()))
        } else {
            Box::new(Choppy {
                data: v.clone(),
                pos: 0,
                chunks: vec![100_000, 7, 300_000],
                calls: 0,
            })
        };
        let mut src = FileSource::from_reader("big.pcap".into(), r).unwrap();
        let p = src.next_packet().unwrap().unwrap();
        assert_eq!(p.ts_nanos, 7_000_000_000);
        assert_eq!(p.data.len(), big_len as usize);
        assert!(
            p.data
                .iter()
                .enumerate()
                .all(|(i, &b)| b == (i % 251) as u8)
        );
        let p = src.next_packet().unwrap().unwrap();
        assert_eq!(p.data, &[0xde, 0xad, 0xbe, 0xef]);
        assert_eq!(src.next_packet().unwrap(), None);
    }
}

#[test]
fn many_packets_cross_buffer_refills() {
    // 30_000 records of 26 bytes: about 3 read buffers.
    let v = pcap_with(30_000);
    let mut src = from_bytes("many.pcap", &v).unwrap();
    let mut n = 0u64;
    while let Some(p) = src.next_packet().unwrap() {
        assert_eq!(p.ts_nanos, n * 1_000_000_000);
        assert_eq!(p.data, &[n as u8; 10]);
        n += 1;
    }
    assert_eq!(n, 30_000);
}

// ---------------------------------------------------------------------------
// Real captures
// ---------------------------------------------------------------------------

/// (file name, packet count) from the table in SOURCES.md.
fn corpus_counts() -> Vec<(String, u64)> {
    let md = std::fs::read_to_string(format!("{CORPUS}/SOURCES.md")).unwrap();
    let mut rows = Vec::new();
    for line in md.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let name = cells[1].trim_matches('`').to_string();
        let packets = cells[5].parse().unwrap();
        rows.push((name, packets));
    }
    rows
}

fn corpus(name: &str) -> PathBuf {
    Path::new(CORPUS).join(name)
}

#[test]
fn real_files_packet_counts() {
    let rows = corpus_counts();
    // SOURCES.md: "Totals: 34 files, 8335 frames".
    assert_eq!(rows.len(), 34);
    assert_eq!(rows.iter().map(|r| r.1).sum::<u64>(), 8335);
    for (name, expected) in rows {
        let mut src = FileSource::open(&corpus(&name)).unwrap();
        let want = if name.ends_with(".pcapng") {
            CaptureFormat::PcapNg
        } else {
            CaptureFormat::Pcap
        };
        assert_eq!(src.format(), want, "{name}");
        let mut n = 0u64;
        while let Some(p) = src.next_packet().unwrap_or_else(|e| panic!("{e}")) {
            assert_eq!(p.linktype, 1, "{name}"); // all Ethernet (capinfos)
            assert!(p.data.len() <= p.orig_len as usize, "{name}");
            n += 1;
        }
        assert_eq!(n, expected, "{name}");
    }
}

#[test]
fn real_files_first_timestamps() {
    // Values printed by tshark 4.0.17:
    // `tshark -r FILE -c 1 -T fields -e frame.time_epoch -e frame.len -e frame.cap_len`
    let cases: [(&str, u64, usize); 3] = [
        // 1781684412.357518000 322 322
        ("rping.pcap", 1_781_684_412_357_518_000, 322),
        // 1670493999.089195493 322 322 (nanosecond if_tsresol)
        ("capture_S10000_C1.pcapng", 1_670_493_999_089_195_493, 322),
        // 1668761831.141471700 92 92 (if_tsresol 9)
        (
            "RoCE_capture_1_packet (1).pcapng",
            1_668_761_831_141_471_700,
            92,
        ),
    ];
    for (name, ts, len) in cases {
        let mut src = FileSource::open(&corpus(name)).unwrap();
        let p = src.next_packet().unwrap().unwrap();
        assert_eq!(p.ts_nanos, ts, "{name}");
        assert_eq!(p.data.len(), len, "{name}");
        assert_eq!(p.orig_len as usize, len, "{name}");
        assert_eq!(p.interface, 0, "{name}");
    }
    // Last packets, also from tshark 4.0.17 (frame.number, frame.time_epoch):
    // rping.pcap 65 1781684412.383613000; capture_S10000_C1.pcapng 18 1670493999.092585696
    for (name, ts) in [
        ("rping.pcap", 1_781_684_412_383_613_000u64),
        ("capture_S10000_C1.pcapng", 1_670_493_999_092_585_696),
    ] {
        let mut src = FileSource::open(&corpus(name)).unwrap();
        let mut last = None;
        while let Some(p) = src.next_packet().unwrap() {
            last = Some(p.ts_nanos);
        }
        assert_eq!(last, Some(ts), "{name}");
    }
}

// ---------------------------------------------------------------------------
// Readers: Cursor (standard input), one byte at a time, choppy
// ---------------------------------------------------------------------------

#[test]
fn from_reader_matches_open() {
    for name in [
        "rping.pcap",
        "nccl_node0.pcap",
        "capture_S10000_C1.pcapng",
        "Roce_PacketSize_5000_bytes.pcapng",
    ] {
        let path = corpus(name);
        let via_open = read_all(&mut FileSource::open(&path).unwrap()).unwrap();
        assert!(!via_open.is_empty());
        let bytes = std::fs::read(&path).unwrap();

        let mut src =
            FileSource::from_reader("-".into(), Box::new(Cursor::new(bytes.clone()))).unwrap();
        assert_eq!(read_all(&mut src).unwrap(), via_open, "{name} cursor");

        let mut src =
            FileSource::from_reader("-".into(), Box::new(OneByte(Cursor::new(bytes.clone()))))
                .unwrap();
        assert_eq!(read_all(&mut src).unwrap(), via_open, "{name} one byte");

        let choppy = Choppy {
            data: bytes,
            pos: 0,
            chunks: vec![1, 13, 4096, 3, 70_000],
            calls: 0,
        };
        let mut src = FileSource::from_reader("-".into(), Box::new(choppy)).unwrap();
        assert_eq!(read_all(&mut src).unwrap(), via_open, "{name} choppy");
    }
}

#[test]
fn open_dash_reads_standard_input() {
    // Re-runs this test binary as a child whose standard input is a capture.
    if std::env::var_os("ROCESCOPE_SOURCE_STDIN_CHILD").is_some() {
        let mut src = FileSource::open(Path::new("-")).unwrap();
        assert_eq!(src.name(), "-");
        let n = read_all(&mut src).unwrap().len();
        println!("packets={n}");
        return;
    }
    let file = std::fs::File::open(corpus("rping.pcap")).unwrap();
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "open_dash_reads_standard_input", "--nocapture"])
        .env("ROCESCOPE_SOURCE_STDIN_CHILD", "1")
        .stdin(file)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    // 65 packets: SOURCES.md (tshark).
    assert!(stdout.contains("packets=65"), "{stdout}");
}

#[test]
fn file_source_is_send() {
    fn assert_send<T: Send>() {}
    assert_send::<FileSource>();
    assert_send::<SourceError>();
}

#[test]
fn one_byte_reader_hand_built() {
    for (name, bytes) in [
        ("le.pcap", PCAP_LE_US),
        ("be.pcap", PCAP_BE_NS),
        ("two.pcapng", PCAPNG_TWO_IFACES),
        ("sections.pcapng", PCAPNG_TWO_SECTIONS),
        ("simple.pcapng", PCAPNG_SIMPLE),
    ] {
        let expected = all_from_bytes(name, bytes);
        let mut src =
            FileSource::from_reader(name.into(), Box::new(OneByte(Cursor::new(bytes.to_vec()))))
                .unwrap();
        assert_eq!(read_all(&mut src).unwrap(), expected, "{name}");
    }
}

#[test]
fn read_error_is_reported() {
    struct Failing(usize);
    impl Read for Failing {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.0 >= PCAP_LE_US.len() - 2 {
                return Err(io::Error::other("device gone"));
            }
            let n = buf.len().min(PCAP_LE_US.len() - 2 - self.0);
            buf[..n].copy_from_slice(&PCAP_LE_US[self.0..self.0 + n]);
            self.0 += n;
            Ok(n)
        }
    }
    let mut src = FileSource::from_reader("r.pcap".into(), Box::new(Failing(0))).unwrap();
    assert!(src.next_packet().unwrap().is_some());
    let e = src.next_packet().unwrap_err();
    assert!(matches!(e, SourceError::Read { packets: 1, .. }));
    assert_eq!(
        e.to_string(),
        "cannot read 'r.pcap' after 1 complete packet: device gone"
    );
}

// ---------------------------------------------------------------------------
// Property tests: no panic, always terminates
// ---------------------------------------------------------------------------

/// Reads until the end or an error; fails if it takes more calls than a
/// packet per 12 bytes allows.
fn drain(src: Result<FileSource, SourceError>, input_len: usize) -> Result<(), TestCaseError> {
    let Ok(mut src) = src else { return Ok(()) };
    let limit = input_len / 12 + 2;
    for _ in 0..limit {
        match src.next_packet() {
            Ok(Some(p)) => prop_assert!(p.data.len() <= input_len),
            Ok(None) | Err(_) => {
                // Finished, and stays finished.
                prop_assert!(matches!(src.next_packet(), Ok(None)));
                return Ok(());
            }
        }
    }
    prop_assert!(false, "did not terminate within {} calls", limit);
    Ok(())
}

/// A reader over `data` with cycling chunk sizes.
fn chunked(data: Vec<u8>, chunks: Vec<usize>) -> Box<dyn Read + Send> {
    Box::new(Choppy {
        data,
        pos: 0,
        chunks,
        calls: 0,
    })
}

/// Some pcapng-like blocks: (type, body, length adjustment) with a consistent trailer
/// unless the adjustment is nonzero.
fn ng_blocks() -> impl Strategy<Value = Vec<u8>> {
    let block = (
        prop_oneof![
            Just(1u32),
            Just(2),
            Just(3),
            Just(5),
            Just(6),
            Just(0x0a0d_0d0a),
            any::<u32>()
        ],
        prop::collection::vec(any::<u8>(), 0..64),
        prop_oneof![4 => Just(0i32), 1 => -8i32..8],
        any::<bool>(),
    )
        .prop_map(|(ty, mut body, adj, bom)| {
            if ty == 0x0a0d_0d0a && bom && body.len() >= 4 {
                body[..4].copy_from_slice(&[0x4d, 0x3c, 0x2b, 0x1a]);
            }
            while body.len() % 4 != 0 {
                body.push(0);
            }
            let len = (body.len() as i64 + 12 + i64::from(adj)).max(0) as u32;
            let mut b = ty.to_le_bytes().to_vec();
            b.extend_from_slice(&len.to_le_bytes());
            b.extend_from_slice(&body);
            b.extend_from_slice(&len.to_le_bytes());
            b
        });
    prop::collection::vec(block, 0..12).prop_map(|v| v.concat())
}

proptest! {
    #[test]
    fn pcap_header_then_arbitrary_bytes(
        magic in 0usize..4,
        tail in prop::collection::vec(any::<u8>(), 0..2048),
        chunks in prop::collection::vec(1usize..64, 1..4),
    ) {
        let mut v = match magic {
            0 | 1 => PCAP_LE_US[..24].to_vec(),
            _ => PCAP_BE_NS[..24].to_vec(),
        };
        if magic == 1 {
            v[..4].copy_from_slice(&[0x4d, 0x3c, 0xb2, 0xa1]); // LE ns
        }
        if magic == 3 {
            v[..4].copy_from_slice(&[0xa1, 0xb2, 0xc3, 0xd4]); // BE us
        }
        v.extend_from_slice(&tail);
        let n = v.len();
        drain(from_bytes("p.pcap", &v), n)?;
        drain(FileSource::from_reader("p.pcap".into(), chunked(v, chunks)), n)?;
    }

    #[test]
    fn pcapng_shb_then_arbitrary_bytes(
        big_endian in any::<bool>(),
        tail in prop::collection::vec(any::<u8>(), 0..2048),
    ) {
        let mut v = if big_endian {
            PCAPNG_TWO_SECTIONS[84..112].to_vec()
        } else {
            PCAPNG_TWO_IFACES[..28].to_vec()
        };
        v.extend_from_slice(&tail);
        let n = v.len();
        drain(from_bytes("p.pcapng", &v), n)?;
    }

    #[test]
    fn pcapng_shb_idb_then_block_like_bytes(
        blocks in ng_blocks(),
        chunks in prop::collection::vec(1usize..64, 1..4),
    ) {
        // SHB + 2 IDBs, then arbitrary blocks.
        let mut v = PCAPNG_BAD_IFACE[..68].to_vec();
        v.extend_from_slice(&blocks);
        let n = v.len();
        drain(from_bytes("p.pcapng", &v), n)?;
        drain(FileSource::from_reader("p.pcapng".into(), chunked(v, chunks)), n)?;
    }

    #[test]
    fn mutated_hand_built_files(
        file in 0usize..6,
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
        cut in any::<prop::sample::Index>(),
    ) {
        let base = [
            PCAP_LE_US,
            PCAP_BE_NS,
            PCAPNG_TWO_IFACES,
            PCAPNG_TSRESOL_2_10,
            PCAPNG_TWO_SECTIONS,
            PCAPNG_SIMPLE,
        ][file];
        let mut v = base.to_vec();
        for (at, byte) in edits {
            let i = at.index(v.len());
            v[i] = byte;
        }
        v.truncate(cut.index(v.len() + 1));
        let n = v.len();
        drain(from_bytes("m", &v), n)?;
    }

    #[test]
    fn chunked_reads_match_cursor(
        file in 0usize..6,
        chunks in prop::collection::vec(1usize..40, 1..5),
    ) {
        let base = [
            PCAP_LE_US,
            PCAP_BE_NS,
            PCAPNG_TWO_IFACES,
            PCAPNG_TSRESOL_2_10,
            PCAPNG_TWO_SECTIONS,
            PCAPNG_SIMPLE,
        ][file];
        let expected = all_from_bytes("c", base);
        let mut src = FileSource::from_reader("c".into(), chunked(base.to_vec(), chunks)).unwrap();
        prop_assert_eq!(read_all(&mut src).unwrap(), expected);
    }
}
