//! Several capture files of one capture point (split files, tcpdump's `-C` and `-G` rotations) read as one
//! time-ordered stream: a k-way merge by timestamp over the files open at once. A file is opened only when
//! the merge reaches its first packet's time, so rotated files, which follow each other, are read one or two
//! at a time; memory is one packet per open file, whatever the files' sizes.
use std::path::{Path, PathBuf};

use super::{FileSource, Next, Packet, PacketSource, SourceError};

/// A packet copied out of its file, so that the next packet of every open file can wait beside it.
#[derive(Default)]
struct Owned {
    ts_nanos: u64,
    linktype: u16,
    interface: u32,
    orig_len: u32,
    data: Vec<u8>,
}

impl Owned {
    fn set(&mut self, p: &Packet) {
        self.ts_nanos = p.ts_nanos;
        self.linktype = p.linktype;
        self.interface = p.interface;
        self.orig_len = p.orig_len;
        self.data.clear();
        self.data.extend_from_slice(p.data);
    }

    fn packet(&self) -> Packet<'_> {
        Packet {
            ts_nanos: self.ts_nanos,
            linktype: self.linktype,
            interface: self.interface,
            data: &self.data,
            orig_len: self.orig_len,
        }
    }
}

/// An open file and its next packet.
struct Head {
    /// The position of the file among those given: ties in time go to the earlier.
    order: usize,
    source: FileSource,
    next: Owned,
}

/// The files given, merged by time.
pub struct MergeSource {
    /// Files not opened yet: (first packet's time, position, path), the earliest last.
    pending: Vec<(u64, usize, PathBuf)>,
    open: Vec<Head>,
    current: Owned,
    /// Bytes of the files read so far (for progress).
    consumed: u64,
    /// A file's error, returned after the packet before it.
    error: Option<SourceError>,
    /// The files left out: cut before their first whole packet (the piece a rotating tcpdump has just
    /// begun: its magic, part of its header or of its first record). They hold no packet, so nothing of
    /// the capture is lost by leaving them out; the caller says so.
    pub skipped: Vec<SourceError>,
}

impl MergeSource {
    /// Opens each file long enough to read its first packet's time; a file cut before its first whole
    /// packet is left out ([`MergeSource::skipped`]), any other error fails the whole.
    pub fn open(paths: &[PathBuf]) -> Result<MergeSource, SourceError> {
        let mut pending = Vec::with_capacity(paths.len());
        let mut skipped = Vec::new();
        for (order, path) in paths.iter().enumerate() {
            let mut src = match FileSource::open(path) {
                Ok(s) => s,
                Err(e @ SourceError::Truncated { .. }) => {
                    skipped.push(e);
                    continue;
                }
                Err(e) => return Err(e),
            };
            match src.next_packet() {
                Ok(Some(p)) => pending.push((p.ts_nanos, order, path.clone())),
                Ok(None) => {}
                Err(e @ SourceError::Truncated { packets: 0, .. }) => skipped.push(e),
                Err(e) => return Err(e),
            }
        }
        pending.sort_by_key(|p| std::cmp::Reverse((p.0, p.1)));
        Ok(MergeSource {
            pending,
            open: Vec::new(),
            current: Owned::default(),
            consumed: 0,
            error: None,
            skipped,
        })
    }

    /// Opens the files whose first packet is due: no later than the earliest packet waiting.
    fn open_due(&mut self) -> Result<(), SourceError> {
        while let Some(&(first, _, _)) = self.pending.last() {
            let earliest = self.open.iter().map(|h| h.next.ts_nanos).min();
            if earliest.is_some_and(|t| t < first) {
                break;
            }
            let Some((_, order, path)) = self.pending.pop() else {
                break;
            };
            let mut head = Head {
                order,
                source: FileSource::open(&path)?,
                next: Owned::default(),
            };
            if advance(&mut head)? {
                self.open.push(head);
            }
        }
        Ok(())
    }
}

/// Copies the file's next packet into its head (and lets the file's pages go); false at its end.
fn advance(head: &mut Head) -> Result<bool, SourceError> {
    let end = match head.source.next()? {
        Next::Packet { packet, end, .. } => {
            head.next.set(&packet);
            end
        }
        Next::Idle | Next::End => return Ok(false),
    };
    head.source.done_before(end);
    Ok(true)
}

impl PacketSource for MergeSource {
    fn next(&mut self) -> Result<Next<'_>, SourceError> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.open_due()?;
        let Some(i) =
            (0..self.open.len()).min_by_key(|&i| (self.open[i].next.ts_nanos, self.open[i].order))
        else {
            return Ok(Next::End);
        };
        let head = &mut self.open[i];
        std::mem::swap(&mut self.current, &mut head.next);
        match advance(head) {
            Ok(true) => {}
            Ok(false) => {
                self.consumed += head.source.bytes_read();
                self.open.swap_remove(i);
            }
            Err(e) => {
                self.error = Some(e);
                self.open.swap_remove(i);
            }
        }
        let reading: u64 = self.open.iter().map(|h| h.source.bytes_read()).sum();
        Ok(Next::Packet {
            packet: self.current.packet(),
            end: self.consumed + reading,
            stable: false,
        })
    }
}

/// One capture point's packets: a file, read in place, or the capture files of a directory (its pieces:
/// tcpdump's `-C`/`-G` rotations) merged by time.
pub fn open_point(path: &Path) -> Result<Box<dyn PacketSource>, SourceError> {
    if !path.is_dir() {
        return Ok(Box::new(FileSource::open(path)?));
    }
    let files = expand(&[path.to_path_buf()])?;
    if files.is_empty() {
        return Err(SourceError::NoCaptureIn {
            name: path.display().to_string(),
        });
    }
    Ok(Box::new(MergeSource::open(&files)?))
}

/// The capture files `args` name: each file, and a directory's files (in name order) that start with a
/// pcap or pcapng magic (tcpdump's `-C` rotations have no extension).
pub fn expand(args: &[PathBuf]) -> Result<Vec<PathBuf>, SourceError> {
    let mut out = Vec::new();
    for arg in args {
        if !arg.is_dir() {
            out.push(arg.clone());
            continue;
        }
        let entries = std::fs::read_dir(arg).map_err(|source| SourceError::Open {
            name: arg.display().to_string(),
            source,
        })?;
        let mut files: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_file() && is_capture(p))
            .collect();
        files.sort();
        out.extend(files);
    }
    Ok(out)
}

fn is_capture(path: &Path) -> bool {
    const MAGICS: [[u8; 4]; 7] = [
        [0xd4, 0xc3, 0xb2, 0xa1],
        [0xa1, 0xb2, 0xc3, 0xd4],
        [0x4d, 0x3c, 0xb2, 0xa1],
        [0xa1, 0xb2, 0x3c, 0x4d],
        [0x34, 0xcd, 0xb2, 0xa1],
        [0xa1, 0xb2, 0xcd, 0x34],
        [0x0a, 0x0d, 0x0d, 0x0a],
    ];
    let hidden = path
        .file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with('.'));
    let mut head = [0u8; 4];
    let read = std::fs::File::open(path)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
        .is_ok();
    !hidden && read && MAGICS.contains(&head)
}

#[cfg(test)]
mod tests {
    use super::*;
    use parsers::savefile::{self, Resolution};

    /// A pcap of one-byte frames at these microseconds.
    fn pcap(dir: &Path, name: &str, times_us: &[u64]) -> PathBuf {
        let mut out = Vec::new();
        savefile::pcap_file_header(&mut out, Resolution::Micros, 65535, 1);
        for &t in times_us {
            savefile::pcap_record(&mut out, Resolution::Micros, t, &[t as u8], 1);
        }
        let path = dir.join(name);
        std::fs::write(&path, out).unwrap();
        path
    }

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("rocescope-merge-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// Every packet's time, and the most files open at once.
    fn drain(m: &mut MergeSource) -> (Vec<u64>, usize) {
        let (mut times, mut most) = (Vec::new(), 0);
        while let Ok(Next::Packet { packet, .. }) = m.next() {
            times.push(packet.ts_nanos / 1000);
            most = most.max(m.open.len());
        }
        (times, most)
    }

    #[test]
    fn interleaved_files_come_out_in_time_order_ties_to_the_earlier_file() {
        let d = dir("interleaved");
        let a = pcap(&d, "a.pcap", &[1, 4, 5, 9]);
        let b = pcap(&d, "b.pcap", &[2, 4, 7]);
        let c = pcap(&d, "c.pcap", &[]);
        let mut m = MergeSource::open(&[b.clone(), a, c]).unwrap();
        let (times, most) = drain(&mut m);
        assert_eq!(times, [1, 2, 4, 4, 5, 7, 9]);
        assert_eq!(most, 2);
        // The tie at 4: b was named first.
        let mut m = MergeSource::open(&[b, d.join("a.pcap")]).unwrap();
        let mut data = Vec::new();
        while let Ok(Next::Packet { packet, .. }) = m.next() {
            data.push((packet.ts_nanos / 1000, packet.data[0]));
        }
        assert_eq!(data[2..4], [(4, 4), (4, 4)]);
    }

    #[test]
    fn rotated_files_are_opened_one_at_a_time() {
        let d = dir("rotated");
        let files: Vec<PathBuf> = (0..50u64)
            .map(|i| pcap(&d, &format!("trace{i:02}"), &[3 * i, 3 * i + 1, 3 * i + 2]))
            .rev()
            .collect();
        let mut m = MergeSource::open(&files).unwrap();
        let (times, most) = drain(&mut m);
        assert_eq!(times, (0..150).collect::<Vec<_>>());
        assert_eq!(most, 1);
        let found = expand(std::slice::from_ref(&d)).unwrap();
        assert_eq!(found.len(), 50);
        assert!(found.windows(2).all(|w| w[0] < w[1]));
        std::fs::write(d.join("notes.txt"), "not a capture").unwrap();
        assert_eq!(expand(&[d]).unwrap().len(), 50);
    }

    /// A piece holding only its magic (or a header and part of a first record) holds no packet: left out,
    /// said in `skipped`, and the others are read; a piece cut after a packet still ends the stream.
    #[test]
    fn a_piece_cut_before_its_first_packet_is_left_out() {
        let d = dir("partial");
        let a = pcap(&d, "a.pcap", &[1, 3, 5]);
        let b = d.join("b.pcap");
        std::fs::write(&b, [0xd4, 0xc3, 0xb2, 0xa1]).unwrap();
        let c = pcap(&d, "c.pcap", &[7]);
        let whole = std::fs::read(&c).unwrap();
        std::fs::write(&c, &whole[..whole.len() - 1]).unwrap();
        let e = pcap(&d, "e.pcap", &[2, 6]);
        let found = expand(std::slice::from_ref(&d)).unwrap();
        assert_eq!(found, [a, b, c, e]);
        let mut m = MergeSource::open(&found).unwrap();
        let skipped: Vec<String> = m.skipped.iter().map(|e| e.to_string()).collect();
        assert_eq!(
            skipped,
            [
                format!(
                    "'{}' ends in the middle of the file header (file truncated?)",
                    d.join("b.pcap").display()
                ),
                format!(
                    "'{}' ends in the middle of a packet after 0 complete packets (file truncated?)",
                    d.join("c.pcap").display()
                ),
            ]
        );
        assert_eq!(drain(&mut m).0, [1, 2, 3, 5, 6]);
    }

    #[test]
    fn a_cut_file_ends_the_stream_after_its_last_whole_packet() {
        // As with one file: analysed up to the cut (the other files' later packets are not read).
        let d = dir("cut");
        let a = pcap(&d, "a.pcap", &[1, 3, 5]);
        let whole = std::fs::read(&a).unwrap();
        std::fs::write(&a, &whole[..whole.len() - 1]).unwrap();
        let b = pcap(&d, "b.pcap", &[2, 4, 6]);
        let mut m = MergeSource::open(&[a, b]).unwrap();
        let mut times = Vec::new();
        let err = loop {
            match m.next() {
                Ok(Next::Packet { packet, .. }) => times.push(packet.ts_nanos / 1000),
                Ok(_) => break None,
                Err(e) => break Some(e),
            }
        };
        assert_eq!(times, [1, 2, 3]);
        assert!(
            matches!(err, Some(SourceError::Truncated { packets: 2, .. })),
            "{err:?}"
        );
    }
}
