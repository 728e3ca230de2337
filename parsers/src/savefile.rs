//! Capture files as written: classic pcap (file header, record header) and pcapng (Section Header,
//! Interface Description and Enhanced Packet Blocks), little-endian, each layout written once.
//!
//! The functions append to a buffer and do no I/O; [`Format`] is what rocescope writes (one interface,
//! nanosecond timestamps) and [`Writer`] streams it to any [`Write`]. Layouts: pcap,
//! draft-ietf-opsawg-pcap §4-5; pcapng, draft-ietf-opsawg-pcapng §3-4.
use std::io::{self, Write};

/// pcap magic of a file with microsecond timestamps.
const PCAP_MAGIC_MICROS: u32 = 0xa1b2_c3d4;
/// pcap magic of a file with nanosecond timestamps.
const PCAP_MAGIC_NANOS: u32 = 0xa1b2_3c4d;

const SHB_TYPE: u32 = 0x0A0D_0D0A;
const IDB_TYPE: u32 = 1;
const EPB_TYPE: u32 = 6;
/// Written in the writer's byte order: a reader learns the section's endianness from it.
const BYTE_ORDER_MAGIC: u32 = 0x1A2B_3C4D;

const OPT_ENDOFOPT: u16 = 0;
/// opt_comment: UTF-8 text, on any block (Wireshark shows it as `frame.comment` on a packet's).
const OPT_COMMENT: u16 = 1;
const IF_NAME: u16 = 2;
const IF_TSRESOL: u16 = 9;

/// The unit of the timestamps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolution {
    Micros,
    Nanos,
}

impl Resolution {
    const fn per_second(self) -> u64 {
        match self {
            Resolution::Micros => 1_000_000,
            Resolution::Nanos => 1_000_000_000,
        }
    }

    const fn pcap_magic(self) -> u32 {
        match self {
            Resolution::Micros => PCAP_MAGIC_MICROS,
            Resolution::Nanos => PCAP_MAGIC_NANOS,
        }
    }

    /// The if_tsresol value: the unit is 10^-value seconds.
    const fn tsresol(self) -> u8 {
        match self {
            Resolution::Micros => 6,
            Resolution::Nanos => 9,
        }
    }
}

/// The pcap file header: version 2.4, times in UTC, no accuracy claimed.
pub fn pcap_file_header(out: &mut Vec<u8>, resolution: Resolution, snaplen: u32, linktype: u16) {
    out.extend_from_slice(&resolution.pcap_magic().to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&4u16.to_le_bytes());
    // thiszone, sigfigs
    out.extend_from_slice(&0i32.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&snaplen.to_le_bytes());
    out.extend_from_slice(&u32::from(linktype).to_le_bytes());
}

/// One pcap record: its header, then the captured bytes. `ts` counts the file's unit since the epoch.
pub fn pcap_record(out: &mut Vec<u8>, resolution: Resolution, ts: u64, data: &[u8], orig_len: u32) {
    let per_second = resolution.per_second();
    out.extend_from_slice(&((ts / per_second) as u32).to_le_bytes());
    out.extend_from_slice(&((ts % per_second) as u32).to_le_bytes());
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    out.extend_from_slice(&orig_len.to_le_bytes());
    out.extend_from_slice(data);
}

/// A Section Header Block: version 1.0, section length not given (-1, so that it can be streamed), no
/// options.
pub fn section_header_block(out: &mut Vec<u8>) {
    block(out, SHB_TYPE, |b| {
        b.extend_from_slice(&BYTE_ORDER_MAGIC.to_le_bytes());
        b.extend_from_slice(&1u16.to_le_bytes());
        b.extend_from_slice(&0u16.to_le_bytes());
        b.extend_from_slice(&(-1i64).to_le_bytes());
    });
}

/// An Interface Description Block, with the if_name and if_tsresol options given (without if_tsresol
/// a reader assumes microseconds). The options end with opt_endofopt when there are any.
pub fn interface_description_block(
    out: &mut Vec<u8>,
    linktype: u16,
    snaplen: u32,
    name: Option<&str>,
    resolution: Option<Resolution>,
) {
    block(out, IDB_TYPE, |b| {
        b.extend_from_slice(&linktype.to_le_bytes());
        b.extend_from_slice(&0u16.to_le_bytes());
        b.extend_from_slice(&snaplen.to_le_bytes());
        if let Some(name) = name {
            option(b, IF_NAME, name.as_bytes());
        }
        if let Some(r) = resolution {
            option(b, IF_TSRESOL, &[r.tsresol()]);
        }
        if name.is_some() || resolution.is_some() {
            option(b, OPT_ENDOFOPT, &[]);
        }
    });
}

/// An Enhanced Packet Block, no options. `ts` counts the interface's unit (its if_tsresol) since the epoch.
pub fn enhanced_packet_block(
    out: &mut Vec<u8>,
    interface_id: u32,
    ts: u64,
    data: &[u8],
    orig_len: u32,
) {
    enhanced_packet_block_with_comments(out, interface_id, ts, data, orig_len, &[]);
}

/// An Enhanced Packet Block with an opt_comment per comment (none: no options at all).
pub fn enhanced_packet_block_with_comments(
    out: &mut Vec<u8>,
    interface_id: u32,
    ts: u64,
    data: &[u8],
    orig_len: u32,
    comments: &[String],
) {
    block(out, EPB_TYPE, |b| {
        b.extend_from_slice(&interface_id.to_le_bytes());
        b.extend_from_slice(&((ts >> 32) as u32).to_le_bytes());
        b.extend_from_slice(&(ts as u32).to_le_bytes());
        b.extend_from_slice(&(data.len() as u32).to_le_bytes());
        b.extend_from_slice(&orig_len.to_le_bytes());
        b.extend_from_slice(data);
        pad32(b, data.len());
        for c in comments {
            option(b, OPT_COMMENT, c.as_bytes());
        }
        if !comments.is_empty() {
            option(b, OPT_ENDOFOPT, &[]);
        }
    });
}

/// A pcapng block: type, total length, the body padded to 32 bits, the total length again.
fn block(out: &mut Vec<u8>, block_type: u32, body: impl FnOnce(&mut Vec<u8>)) {
    let start = out.len();
    out.extend_from_slice(&block_type.to_le_bytes());
    // The total length, filled in once the body is written.
    out.extend_from_slice(&0u32.to_le_bytes());
    body(out);
    pad32(out, out.len() - start);
    let total = ((out.len() - start + 4) as u32).to_le_bytes();
    out.extend_from_slice(&total);
    if let Some(field) = out.get_mut(start + 4..start + 8) {
        field.copy_from_slice(&total);
    }
}

/// A pcapng option: code, length, value padded to 32 bits. A value has at most 65,535 bytes.
fn option(out: &mut Vec<u8>, code: u16, value: &[u8]) {
    let value = value.get(..usize::from(u16::MAX)).unwrap_or(value);
    out.extend_from_slice(&code.to_le_bytes());
    out.extend_from_slice(&(value.len() as u16).to_le_bytes());
    out.extend_from_slice(value);
    pad32(out, value.len());
}

/// Zeros up to the next multiple of 4 bytes after `len`.
fn pad32(out: &mut Vec<u8>, len: usize) {
    out.extend(std::iter::repeat_n(0u8, (4 - len % 4) % 4));
}

/// What rocescope writes: one interface, nanosecond timestamps, as classic pcap or as pcapng.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Classic pcap, nanosecond timestamps (magic 0xa1b23c4d).
    Pcap,
    /// pcapng: one section, one interface with nanosecond timestamps, Enhanced Packet Blocks.
    PcapNg,
}

impl Format {
    /// The format's name, as file names end and reports say: `pcap`, `pcapng`.
    pub const fn name(self) -> &'static str {
        match self {
            Format::Pcap => "pcap",
            Format::PcapNg => "pcapng",
        }
    }

    /// The format a file name asks for: pcapng when it ends in `.pcapng` (any case), else pcap.
    pub fn for_name(name: &str) -> Format {
        if name.to_ascii_lowercase().ends_with(".pcapng") {
            Format::PcapNg
        } else {
            Format::Pcap
        }
    }

    /// The start of the file: the pcap file header, or the Section Header Block and the interface's
    /// description (pcapng; `interface` is its if_name, which pcap has no place for).
    pub fn header(self, out: &mut Vec<u8>, linktype: u16, snaplen: u32, interface: &str) {
        match self {
            Format::Pcap => pcap_file_header(out, Resolution::Nanos, snaplen, linktype),
            Format::PcapNg => {
                section_header_block(out);
                interface_description_block(
                    out,
                    linktype,
                    snaplen,
                    Some(interface),
                    Some(Resolution::Nanos),
                );
            }
        }
    }

    /// One frame captured at `ts_nanos` (since the epoch).
    pub fn record(self, out: &mut Vec<u8>, ts_nanos: u64, data: &[u8], orig_len: u32) {
        match self {
            Format::Pcap => pcap_record(out, Resolution::Nanos, ts_nanos, data, orig_len),
            Format::PcapNg => enhanced_packet_block(out, 0, ts_nanos, data, orig_len),
        }
    }
}

/// A capture in [`Format`] streamed to `out`: the header at once, then one record per frame.
pub struct Writer<W: Write> {
    out: W,
    format: Format,
    /// The record being written, reused from frame to frame.
    record: Vec<u8>,
}

impl<W: Write> Writer<W> {
    pub fn new(
        mut out: W,
        format: Format,
        linktype: u16,
        snaplen: u32,
        interface: &str,
    ) -> io::Result<Writer<W>> {
        let mut header = Vec::new();
        format.header(&mut header, linktype, snaplen, interface);
        out.write_all(&header)?;
        Ok(Writer {
            out,
            format,
            record: Vec::new(),
        })
    }

    pub fn write(&mut self, ts_nanos: u64, data: &[u8], orig_len: u32) -> io::Result<()> {
        self.record.clear();
        self.format
            .record(&mut self.record, ts_nanos, data, orig_len);
        self.out.write_all(&self.record)
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use pcap_parser::Linktype;
    use pcap_parser::pcap::{parse_pcap_frame, parse_pcap_header};
    use pcap_parser::pcapng::{
        parse_enhancedpacketblock_le, parse_interfacedescriptionblock_le, parse_sectionheaderblock,
    };
    use pcap_parser::traits::PcapNGPacketBlock;
    use pcap_parser::{Block, PcapCapture, PcapNGCapture};

    use super::*;

    /// 2026-01-01T00:00:00Z plus 5 ns.
    const TS_NANOS: u64 = 1_767_225_600_000_000_005;

    const PCAP_HEADER_NANOS: [u8; 24] = [
        0x4d, 0x3c, 0xb2, 0xa1, // magic, nanoseconds
        0x02, 0x00, 0x04, 0x00, // version 2.4
        0x00, 0x00, 0x00, 0x00, // thiszone
        0x00, 0x00, 0x00, 0x00, // sigfigs
        0xff, 0xff, 0x00, 0x00, // snaplen 65535
        0x01, 0x00, 0x00, 0x00, // linktype 1 (Ethernet)
    ];

    const PCAP_RECORD_NANOS: [u8; 19] = [
        0x00, 0xb9, 0x55, 0x69, // seconds 1767225600
        0x05, 0x00, 0x00, 0x00, // nanoseconds 5
        0x03, 0x00, 0x00, 0x00, // captured 3
        0x3c, 0x00, 0x00, 0x00, // on the wire 60
        0xaa, 0xbb, 0xcc,
    ];

    const SHB: [u8; 28] = [
        0x0a, 0x0d, 0x0d, 0x0a, // block type
        0x1c, 0x00, 0x00, 0x00, // total length 28
        0x4d, 0x3c, 0x2b, 0x1a, // byte-order magic
        0x01, 0x00, 0x00, 0x00, // version 1.0
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // section length -1: not given
        0x1c, 0x00, 0x00, 0x00, // total length 28
    ];

    const IDB_LO_NANOS: [u8; 40] = [
        0x01, 0x00, 0x00, 0x00, // block type
        0x28, 0x00, 0x00, 0x00, // total length 40
        0x01, 0x00, 0x00, 0x00, // linktype 1, reserved
        0x00, 0x00, 0x04, 0x00, // snaplen 262144
        0x02, 0x00, 0x02, 0x00, b'l', b'o', 0x00, 0x00, // if_name "lo", padded
        0x09, 0x00, 0x01, 0x00, 0x09, 0x00, 0x00, 0x00, // if_tsresol 9 (nanoseconds), padded
        0x00, 0x00, 0x00, 0x00, // opt_endofopt
        0x28, 0x00, 0x00, 0x00, // total length 40
    ];

    const IDB_NO_OPTIONS: [u8; 20] = [
        0x01, 0x00, 0x00, 0x00, // block type
        0x14, 0x00, 0x00, 0x00, // total length 20
        0x71, 0x00, 0x00, 0x00, // linktype 113 (Linux SLL), reserved
        0xff, 0xff, 0x00, 0x00, // snaplen 65535
        0x14, 0x00, 0x00, 0x00, // total length 20
    ];

    const EPB: [u8; 40] = [
        0x06, 0x00, 0x00, 0x00, // block type
        0x28, 0x00, 0x00, 0x00, // total length 40
        0x00, 0x00, 0x00, 0x00, // interface 0
        0x51, 0x72, 0x86, 0x18, // timestamp, high 32 bits
        0x05, 0x00, 0xfa, 0xed, // timestamp, low 32 bits
        0x05, 0x00, 0x00, 0x00, // captured 5
        0x40, 0x00, 0x00, 0x00, // on the wire 64
        0x01, 0x02, 0x03, 0x04, 0x05, 0x00, 0x00, 0x00, // data, padded
        0x28, 0x00, 0x00, 0x00, // total length 40
    ];

    /// [`EPB`] with two comments: opt_comment "stall" (padded), opt_comment "gap #2", opt_endofopt.
    const EPB_COMMENTED: [u8; 68] = [
        0x06, 0x00, 0x00, 0x00, // block type
        0x44, 0x00, 0x00, 0x00, // total length 68
        0x00, 0x00, 0x00, 0x00, // interface 0
        0x51, 0x72, 0x86, 0x18, // timestamp, high 32 bits
        0x05, 0x00, 0xfa, 0xed, // timestamp, low 32 bits
        0x05, 0x00, 0x00, 0x00, // captured 5
        0x40, 0x00, 0x00, 0x00, // on the wire 64
        0x01, 0x02, 0x03, 0x04, 0x05, 0x00, 0x00, 0x00, // data, padded
        0x01, 0x00, 0x05, 0x00, b's', b't', b'a', b'l', b'l', 0x00, 0x00,
        0x00, // opt_comment, padded
        0x01, 0x00, 0x06, 0x00, b'g', b'a', b'p', b' ', b'#', b'2', 0x00,
        0x00, // opt_comment, padded
        0x00, 0x00, 0x00, 0x00, // opt_endofopt
        0x44, 0x00, 0x00, 0x00, // total length 68
    ];

    fn written(f: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
        let mut out = Vec::new();
        f(&mut out);
        out
    }

    /// The tests' failures: pcap-parser's errors borrow the input, so they are kept as their `Debug` text.
    type Failed = Box<dyn std::error::Error>;

    fn err(e: impl std::fmt::Debug) -> Failed {
        format!("{e:?}").into()
    }

    #[test]
    fn format_names() {
        assert_eq!(Format::for_name("a.pcapng"), Format::PcapNg);
        assert_eq!(Format::for_name("A.PCAPNG"), Format::PcapNg);
        assert_eq!(Format::for_name("a.pcap"), Format::Pcap);
        assert_eq!(Format::for_name("-"), Format::Pcap);
        assert_eq!(Format::PcapNg.name(), "pcapng");
        assert_eq!(Format::Pcap.name(), "pcap");
    }

    #[test]
    fn pcap_header_and_record() -> Result<(), Failed> {
        assert_eq!(
            written(|b| pcap_file_header(b, Resolution::Nanos, 65535, 1)),
            PCAP_HEADER_NANOS
        );
        let (rest, h) = parse_pcap_header(&PCAP_HEADER_NANOS).map_err(err)?;
        assert!(rest.is_empty());
        assert_eq!(h.magic_number, PCAP_MAGIC_NANOS);
        assert!(h.is_nanosecond_precision() && !h.is_bigendian());
        assert_eq!((h.version_major, h.version_minor), (2, 4));
        assert_eq!((h.snaplen, h.network), (65535, Linktype::ETHERNET));

        assert_eq!(
            written(|b| pcap_record(b, Resolution::Nanos, TS_NANOS, &[0xaa, 0xbb, 0xcc], 60)),
            PCAP_RECORD_NANOS
        );
        let (rest, r) = parse_pcap_frame(&PCAP_RECORD_NANOS).map_err(err)?;
        assert!(rest.is_empty());
        assert_eq!((r.ts_sec, r.ts_usec), (1_767_225_600, 5));
        assert_eq!((r.caplen, r.origlen), (3, 60));
        assert_eq!(r.data, [0xaa, 0xbb, 0xcc]);
        Ok(())
    }

    #[test]
    fn pcap_in_microseconds() -> Result<(), Failed> {
        let mut file = written(|b| pcap_file_header(b, Resolution::Micros, 262_144, 276));
        assert_eq!(
            file,
            [
                0xd4, 0xc3, 0xb2, 0xa1, 0x02, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x14, 0x01, 0x00, 0x00,
            ]
        );
        pcap_record(
            &mut file,
            Resolution::Micros,
            1_767_225_600_000_007,
            &[9],
            1,
        );
        let capture = PcapCapture::from_file(&file).map_err(err)?;
        assert!(!capture.header.is_nanosecond_precision());
        assert_eq!(capture.header.network, Linktype::LINUX_SLL2);
        let [r] = capture.blocks.as_slice() else {
            return Err(format!("{} records", capture.blocks.len()).into());
        };
        assert_eq!(
            (r.ts_sec, r.ts_usec, r.data),
            (1_767_225_600, 7, &[9u8][..])
        );
        Ok(())
    }

    #[test]
    fn section_header() -> Result<(), Failed> {
        assert_eq!(written(section_header_block), SHB);
        let (rest, shb) = parse_sectionheaderblock(&SHB).map_err(err)?;
        assert!(rest.is_empty() && !shb.big_endian());
        assert_eq!((shb.major_version, shb.minor_version), (1, 0));
        assert_eq!(shb.section_len, -1);
        assert!(shb.options.is_empty());
        Ok(())
    }

    #[test]
    fn interface_description() -> Result<(), Failed> {
        let idb = written(|b| {
            interface_description_block(b, 1, 262_144, Some("lo"), Some(Resolution::Nanos))
        });
        assert_eq!(idb, IDB_LO_NANOS);
        let (rest, idb) = parse_interfacedescriptionblock_le(&IDB_LO_NANOS).map_err(err)?;
        assert!(rest.is_empty());
        assert_eq!((idb.linktype, idb.snaplen), (Linktype::ETHERNET, 262_144));
        assert!(matches!(idb.if_name(), Some(Ok("lo"))));
        assert_eq!(idb.ts_resolution(), Some(1_000_000_000));

        assert_eq!(
            written(|b| interface_description_block(b, 113, 65535, None, None)),
            IDB_NO_OPTIONS
        );
        let (_, idb) = parse_interfacedescriptionblock_le(&IDB_NO_OPTIONS).map_err(err)?;
        assert_eq!(idb.linktype, Linktype::LINUX_SLL);
        assert!(idb.options.is_empty());
        assert_eq!(
            idb.ts_resolution(),
            Some(1_000_000),
            "microseconds by default"
        );
        Ok(())
    }

    #[test]
    fn enhanced_packet() -> Result<(), Failed> {
        let epb = written(|b| enhanced_packet_block(b, 0, TS_NANOS, &[1, 2, 3, 4, 5], 64));
        assert_eq!(epb, EPB);
        let (rest, epb) = parse_enhancedpacketblock_le(&EPB).map_err(err)?;
        assert!(rest.is_empty());
        assert_eq!(epb.if_id, 0);
        assert_eq!(
            (u64::from(epb.ts_high) << 32) | u64::from(epb.ts_low),
            TS_NANOS
        );
        assert_eq!((epb.caplen, epb.origlen), (5, 64));
        assert_eq!(epb.packet_data(), [1, 2, 3, 4, 5]);
        // A length already a multiple of 4 takes no padding.
        let epb = written(|b| enhanced_packet_block(b, 3, 0, &[7; 8], 8));
        assert_eq!(epb.len(), 32 + 8);
        let (_, epb) = parse_enhancedpacketblock_le(&epb).map_err(err)?;
        assert_eq!((epb.if_id, epb.packet_data()), (3, &[7u8; 8][..]));
        Ok(())
    }

    #[test]
    fn enhanced_packet_with_comments() -> Result<(), Failed> {
        let comments = ["stall".to_string(), "gap #2".to_string()];
        let epb = written(|b| {
            enhanced_packet_block_with_comments(b, 0, TS_NANOS, &[1, 2, 3, 4, 5], 64, &comments)
        });
        assert_eq!(epb, EPB_COMMENTED);
        let (rest, epb) = parse_enhancedpacketblock_le(&EPB_COMMENTED).map_err(err)?;
        assert!(rest.is_empty());
        assert_eq!(epb.packet_data(), [1, 2, 3, 4, 5]);
        let read: Vec<_> = epb
            .options
            .iter()
            .filter(|o| o.code == pcap_parser::pcapng::OptionCode::Comment)
            // pcap-parser's value holds the padding too: the option's length says where it ends.
            .map(|o| {
                o.value
                    .get(..usize::from(o.len))
                    .unwrap_or_default()
                    .to_vec()
            })
            .collect();
        assert_eq!(read, [b"stall".to_vec(), b"gap #2".to_vec()]);
        Ok(())
    }

    #[test]
    fn formats_are_the_blocks() {
        let header = written(|b| Format::Pcap.header(b, 1, 65535, "ignored"));
        assert_eq!(header, PCAP_HEADER_NANOS);
        let record = written(|b| Format::Pcap.record(b, TS_NANOS, &[0xaa, 0xbb, 0xcc], 60));
        assert_eq!(record, PCAP_RECORD_NANOS);
        let header = written(|b| Format::PcapNg.header(b, 1, 262_144, "lo"));
        assert_eq!(header, [&SHB[..], &IDB_LO_NANOS].concat());
        let record = written(|b| Format::PcapNg.record(b, TS_NANOS, &[1, 2, 3, 4, 5], 64));
        assert_eq!(record, EPB);
    }

    #[test]
    fn writer_streams_a_readable_capture() -> Result<(), Failed> {
        let frames: [&[u8]; 3] = [&[1, 2, 3, 4, 5], &[], &[6; 61]];
        for format in [Format::Pcap, Format::PcapNg] {
            let mut w = Writer::new(Vec::new(), format, 1, 262_144, "lo").map_err(err)?;
            for (i, data) in frames.iter().enumerate() {
                w.write(TS_NANOS + i as u64, data, data.len() as u32 + 4)
                    .map_err(err)?;
            }
            w.flush().map_err(err)?;
            let file = w.out;
            let expected = written(|b| {
                format.header(b, 1, 262_144, "lo");
                for (i, data) in frames.iter().enumerate() {
                    format.record(b, TS_NANOS + i as u64, data, data.len() as u32 + 4);
                }
            });
            assert_eq!(file, expected, "{format:?}");
            let read: Vec<(u64, Vec<u8>, u32)> = match format {
                Format::Pcap => {
                    let capture = PcapCapture::from_file(&file).map_err(err)?;
                    capture
                        .blocks
                        .iter()
                        .map(|r| {
                            let ts = u64::from(r.ts_sec) * 1_000_000_000 + u64::from(r.ts_usec);
                            (ts, r.data.to_vec(), r.origlen)
                        })
                        .collect()
                }
                Format::PcapNg => {
                    let capture = PcapNGCapture::from_file(&file).map_err(err)?;
                    let [section] = capture.sections.as_slice() else {
                        return Err(format!("{} sections", capture.sections.len()).into());
                    };
                    assert_eq!(section.iter_interfaces().count(), 1);
                    section
                        .blocks
                        .iter()
                        .filter_map(|b| match b {
                            Block::EnhancedPacket(epb) => Some((
                                (u64::from(epb.ts_high) << 32) | u64::from(epb.ts_low),
                                epb.packet_data().to_vec(),
                                epb.origlen,
                            )),
                            _ => None,
                        })
                        .collect()
                }
            };
            let sent: Vec<(u64, Vec<u8>, u32)> = frames
                .iter()
                .enumerate()
                .map(|(i, d)| (TS_NANOS + i as u64, d.to_vec(), d.len() as u32 + 4))
                .collect();
            assert_eq!(read, sent, "{format:?}");
        }
        Ok(())
    }
}
