//! Errors of the capture-file sources.

use std::fmt;
use std::io;

/// Where a file ended early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TruncatedIn {
    /// In the pcap file header or the first pcapng Section Header Block.
    FileHeader,
    /// In a packet record (pcap) or a packet block (pcapng).
    Packet,
    /// In a pcapng block that does not carry a packet (or whose type is not known yet).
    Block,
}

/// Why a capture source could not be opened or read further.
///
/// `Display` gives one line that names the file (as `'name'`, or "standard input" for `-`),
/// the reason and, where useful, what to do.
#[derive(Debug)]
#[non_exhaustive]
pub enum SourceError {
    /// The file could not be opened.
    Open { name: String, source: io::Error },
    /// Reading failed (I/O error) after `packets` packets had been returned.
    Read {
        name: String,
        packets: u64,
        source: io::Error,
    },
    /// The input holds no byte at all.
    Empty { name: String },
    /// The first bytes are no pcap or pcapng magic; `head` holds up to the first 4 bytes.
    NotCapture { name: String, head: Vec<u8> },
    /// The input ends in the middle of a header, packet or block, after `packets` complete packets.
    Truncated {
        name: String,
        packets: u64,
        within: TruncatedIn,
    },
    /// A pcapng packet (1-based number `packet`) names an interface that its section did not describe.
    UndeclaredInterface {
        name: String,
        packet: u64,
        interface: u32,
        described: u32,
    },
    /// A record or block claims `size` bytes, more than [`super::MAX_BLOCK_SIZE`].
    TooLarge {
        name: String,
        packets: u64,
        offset: u64,
        size: u64,
    },
    /// The structure is invalid at byte `offset` of the input.
    Malformed {
        name: String,
        packets: u64,
        offset: u64,
        reason: String,
    },
    /// A live capture on interface `name` failed.
    Capture { name: String, reason: String },
    /// A directory given as the pieces of one capture point holds no capture file.
    NoCaptureIn { name: String },
    /// The file was shorter than at opening when it was read (truncated, as a restarted `tcpdump -w`
    /// does): `read` bytes of it were, `packets` complete packets in them.
    Shrank {
        name: String,
        packets: u64,
        at_open: u64,
        now: u64,
        read: u64,
    },
}

impl SourceError {
    /// The name of the file (or `-` for standard input) the error is about.
    pub fn name(&self) -> &str {
        match self {
            SourceError::Open { name, .. }
            | SourceError::Read { name, .. }
            | SourceError::Empty { name }
            | SourceError::NotCapture { name, .. }
            | SourceError::Truncated { name, .. }
            | SourceError::UndeclaredInterface { name, .. }
            | SourceError::TooLarge { name, .. }
            | SourceError::Malformed { name, .. }
            | SourceError::Capture { name, .. }
            | SourceError::NoCaptureIn { name }
            | SourceError::Shrank { name, .. } => name,
        }
    }
}

/// `'name'`, or `standard input` for `-`.
struct Quoted<'a>(&'a str);

impl fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 == "-" {
            f.write_str("standard input")
        } else {
            write!(f, "'{}'", self.0)
        }
    }
}

/// "1 complete packet", "2 complete packets".
fn complete_packets(n: u64) -> String {
    if n == 1 {
        "1 complete packet".to_string()
    } else {
        format!("{n} complete packets")
    }
}

/// Advice for well-known non-capture file types, by their first bytes.
fn hint_for(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(&[0x1f, 0x8b]) {
        Some("it is gzip-compressed: decompress it first, e.g. with gunzip")
    } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        Some("it is zstd-compressed: decompress it first, e.g. with unzstd")
    } else if head.starts_with(&[0xfd, b'7', b'z', b'X']) {
        Some("it is xz-compressed: decompress it first, e.g. with unxz")
    } else if head.starts_with(b"BZh") {
        Some("it is bzip2-compressed: decompress it first, e.g. with bunzip2")
    } else {
        None
    }
}

impl fmt::Display for SourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SourceError::Open { name, source } => {
                write!(f, "cannot open {}: {source}", Quoted(name))
            }
            SourceError::Read {
                name,
                packets,
                source,
            } => {
                if *packets == 0 {
                    write!(f, "cannot read {}: {source}", Quoted(name))
                } else {
                    write!(
                        f,
                        "cannot read {} after {}: {source}",
                        Quoted(name),
                        complete_packets(*packets)
                    )
                }
            }
            SourceError::Empty { name } => write!(
                f,
                "{} is empty (0 bytes), not a pcap or pcapng file",
                Quoted(name)
            ),
            SourceError::NotCapture { name, head } => {
                write!(f, "{} is not a pcap or pcapng file (", Quoted(name))?;
                if head.len() < 4 {
                    let s = if head.len() == 1 { "" } else { "s" };
                    write!(f, "it is only {} byte{s} long)", head.len())
                } else {
                    f.write_str("it starts with 0x")?;
                    for b in head {
                        write!(f, "{b:02x}")?;
                    }
                    f.write_str(")")?;
                    match hint_for(head) {
                        Some(h) => write!(f, "; {h}"),
                        None => Ok(()),
                    }
                }
            }
            SourceError::Truncated {
                name,
                packets,
                within,
            } => match within {
                TruncatedIn::FileHeader => write!(
                    f,
                    "{} ends in the middle of the file header (file truncated?)",
                    Quoted(name)
                ),
                TruncatedIn::Packet => write!(
                    f,
                    "{} ends in the middle of a packet after {} (file truncated?)",
                    Quoted(name),
                    complete_packets(*packets)
                ),
                TruncatedIn::Block => write!(
                    f,
                    "{} ends in the middle of a pcapng block after {} (file truncated?)",
                    Quoted(name),
                    complete_packets(*packets)
                ),
            },
            SourceError::UndeclaredInterface {
                name,
                packet,
                interface,
                described,
            } => {
                write!(
                    f,
                    "{}: packet {packet} refers to interface {interface}, but ",
                    Quoted(name)
                )?;
                match described {
                    0 => f.write_str("no interface was described"),
                    1 => f.write_str("only 1 interface was described"),
                    n => write!(f, "only {n} interfaces were described"),
                }
            }
            SourceError::TooLarge {
                name,
                packets,
                offset,
                size,
            } => write!(
                f,
                "{}: the record at byte offset {offset} (after {}) claims {size} bytes, \
                 more than the limit of {} MiB (corrupt file?)",
                Quoted(name),
                complete_packets(*packets),
                super::MAX_BLOCK_SIZE >> 20
            ),
            SourceError::Malformed {
                name,
                packets,
                offset,
                reason,
            } => write!(
                f,
                "{} is corrupt at byte offset {offset} (after {}): {reason}",
                Quoted(name),
                complete_packets(*packets)
            ),
            SourceError::Capture { name, reason } => {
                write!(f, "capture on '{name}' failed: {reason}")
            }
            SourceError::Shrank {
                name,
                packets,
                at_open,
                now,
                read,
            } => write!(
                f,
                "{} shrank from {at_open} to {now} bytes while it was read (truncated by another program, \
                 as a restarted tcpdump -w does): {read} bytes read, {}",
                Quoted(name),
                complete_packets(*packets)
            ),
            SourceError::NoCaptureIn { name } => write!(
                f,
                "no capture file in the directory '{name}' (none starts with a pcap or pcapng magic)"
            ),
        }
    }
}

// The I/O error is part of the one-line message already, so it is not also
// returned by `source()` (error reporters would print it twice); it stays
// reachable through the `source` field of `Open` and `Read`.
impl std::error::Error for SourceError {}
