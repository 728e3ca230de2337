//! `-w FILE`: the captured frames written as pcap (nanosecond) or pcapng, to a file or to standard output.
//!
//! Frames are gathered in a buffer of whole records and handed to the kernel in chunks; when a write fails
//! (disk full, quota, broken pipe) the file is cut back to the last whole record the kernel took, so what was
//! written stays a valid capture, and the writer stops. With a [`Rotation`] (`-C`, `-G`, as tcpdump's) the
//! capture goes on in FILE's next file (`run.pcapng`, `run.1.pcapng`, `run.2.pcapng`, ...), each a whole
//! capture with its own header, so that a capture can run for days.
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Bytes gathered before they are written.
const CHUNK: usize = 256 * 1024;

/// Classic pcap or pcapng, nanosecond timestamps; the layouts are in `parsers::savefile`.
pub use parsers::savefile::Format;

enum Out {
    File(File),
    Stdout(io::Stdout),
}

pub struct Writer {
    /// As given on the command line ("-" for standard output).
    pub name: String,
    pub format: Format,
    out: Out,
    buf: Vec<u8>,
    /// End offset within `buf` of each frame record in it.
    bounds: Vec<usize>,
    /// Bytes of whole records the kernel took, in every file.
    pub bytes: u64,
    /// Frames the kernel took.
    pub frames: u64,
    /// Files written (more than one with a rotation).
    pub files: u64,
    rotation: Rotation,
    /// Bytes the kernel took of the current file, and when its first frame was.
    file_bytes: u64,
    file_start: Option<u64>,
    /// What a new file's header says.
    header: (u16, u32, String),
}

/// When `-w FILE` goes on in a new file: after this many bytes (`-C`), or this long (capture time, `-G`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rotation {
    pub bytes: Option<u64>,
    pub nanos: Option<u64>,
}

/// The `n`-th file of a rotation of `base`: `run.pcapng`, then `run.1.pcapng`, `run.2.pcapng`.
pub fn rotated(base: &Path, n: u64) -> PathBuf {
    if n == 0 {
        return base.to_path_buf();
    }
    let stem = base
        .file_stem()
        .map(|s| s.to_string_lossy())
        .unwrap_or_default();
    let name = match base.extension() {
        Some(ext) => format!("{stem}.{n}.{}", ext.to_string_lossy()),
        None => format!("{stem}.{n}"),
    };
    base.with_file_name(name)
}

/// A failed write: what happened, and what was kept.
#[derive(Debug)]
pub struct WriteError {
    pub disk_full: bool,
    pub broken_pipe: bool,
    pub error: io::Error,
}

/// Why the `-w` file could not be started, or why writing it stopped.
#[derive(Debug, thiserror::Error)]
pub enum WriterError {
    #[error("cannot create {name}")]
    Create {
        name: String,
        #[source]
        source: io::Error,
    },
    /// The header could not be written.
    #[error("cannot write {name}")]
    Header {
        name: String,
        #[source]
        source: io::Error,
    },
    /// A write failed during the capture: `place` is the file (or standard output); the first `frames`
    /// frames (`bytes` bytes) were kept. The I/O error is told in the middle of the line, not as a cause.
    #[error("{}", stopped_line(.place, .frames, .bytes, .error))]
    Stopped {
        place: String,
        frames: u64,
        bytes: u64,
        error: WriteError,
    },
}

fn stopped_line(place: &str, frames: &u64, bytes: &u64, e: &WriteError) -> String {
    if e.disk_full {
        format!(
            "disk full writing {place}: capture stopped; the first {frames} frames ({bytes} bytes) were kept as a \
             valid capture (free space, or -w to another disk)"
        )
    } else {
        format!(
            "cannot write {place}: {}; capture stopped; the first {frames} frames ({bytes} bytes) were kept",
            e.error
        )
    }
}

impl Writer {
    /// Creates the file (pcapng when its name ends in `.pcapng`) or writes to standard output (`-`), and
    /// writes the header at once so that an unwritable destination is reported before the capture starts.
    pub fn create(
        path: &Path,
        linktype: u16,
        snaplen: u32,
        interface: &str,
    ) -> Result<Writer, WriterError> {
        Writer::rotating(path, linktype, snaplen, interface, Rotation::default())
    }

    /// As [`Writer::create`], going on in a new file as `rotation` says.
    pub fn rotating(
        path: &Path,
        linktype: u16,
        snaplen: u32,
        interface: &str,
        rotation: Rotation,
    ) -> Result<Writer, WriterError> {
        let name = path.display().to_string();
        let (out, format) = if path == Path::new("-") {
            (Out::Stdout(io::stdout()), Format::Pcap)
        } else {
            let format = Format::for_name(&name);
            let f = match File::create(path) {
                Ok(f) => f,
                Err(source) => return Err(WriterError::Create { name, source }),
            };
            (Out::File(f), format)
        };
        let mut w = Writer {
            name,
            format,
            out,
            buf: Vec::with_capacity(CHUNK + 65_536),
            bounds: Vec::new(),
            bytes: 0,
            frames: 0,
            files: 1,
            rotation,
            file_bytes: 0,
            file_start: None,
            header: (linktype, snaplen, interface.to_string()),
        };
        format.header(&mut w.buf, linktype, snaplen, interface);
        // The header is not a frame: no bound for it.
        if let Err(e) = w.flush() {
            let name = w.name.clone();
            return Err(WriterError::Header {
                name,
                source: e.error,
            });
        }
        Ok(w)
    }

    /// The current file is full or old enough: the rest goes to the next one.
    fn due(&self, ts_nanos: u64) -> bool {
        let r = self.rotation;
        let full = r
            .bytes
            .is_some_and(|b| self.file_bytes + self.buf.len() as u64 >= b);
        let old = r
            .nanos
            .zip(self.file_start)
            .is_some_and(|(n, start)| ts_nanos.saturating_sub(start) >= n);
        // A file holds at least one frame, whatever the limits.
        self.file_start.is_some() && (full || old)
    }

    fn rotate(&mut self) -> Result<(), WriteError> {
        self.flush()?;
        let path = rotated(Path::new(&self.name), self.files);
        let f = File::create(&path).map_err(|error| WriteError {
            disk_full: false,
            broken_pipe: false,
            error,
        })?;
        self.out = Out::File(f);
        self.files += 1;
        self.file_bytes = 0;
        self.file_start = None;
        let (linktype, snaplen, interface) = &self.header;
        self.format
            .header(&mut self.buf, *linktype, *snaplen, interface);
        self.flush()
    }

    /// Adds one frame; writes a chunk when enough has gathered.
    pub fn write(&mut self, ts_nanos: u64, data: &[u8], orig_len: u32) -> Result<(), WriteError> {
        if self.rotation != Rotation::default() && self.due(ts_nanos) {
            self.rotate()?;
        }
        self.file_start.get_or_insert(ts_nanos);
        self.format.record(&mut self.buf, ts_nanos, data, orig_len);
        self.bounds.push(self.buf.len());
        if self.buf.len() >= CHUNK {
            self.flush()?;
        }
        Ok(())
    }

    /// Hands everything gathered to the kernel. On failure the file is cut back to the last whole record.
    pub fn flush(&mut self) -> Result<(), WriteError> {
        let mut done = 0;
        let result = loop {
            if done == self.buf.len() {
                break Ok(());
            }
            let r = match &mut self.out {
                Out::File(f) => f.write(&self.buf[done..]),
                Out::Stdout(s) => s.lock().write(&self.buf[done..]),
            };
            match r {
                Ok(0) => break Err(io::Error::from(io::ErrorKind::WriteZero)),
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break Err(e),
            }
        };
        let whole = match result {
            Ok(()) => self.buf.len(),
            // The header (no bounds) counts as whole only when written entirely.
            Err(_) => self
                .bounds
                .iter()
                .copied()
                .take_while(|&end| end <= done)
                .last()
                .unwrap_or(0),
        };
        let frames = self.bounds.iter().take_while(|&&end| end <= whole).count();
        self.frames += frames as u64;
        self.bytes += whole as u64;
        self.file_bytes += whole as u64;
        self.buf.clear();
        self.bounds.clear();
        if let Out::Stdout(s) = &mut self.out {
            let _ = s.flush();
        }
        match result {
            Ok(()) => Ok(()),
            Err(error) => {
                if let Out::File(f) = &mut self.out {
                    // Cutting a file back needs no space.
                    let _ = f.set_len(self.file_bytes);
                }
                Err(WriteError {
                    disk_full: matches!(
                        error.kind(),
                        io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded
                    ),
                    broken_pipe: error.kind() == io::ErrorKind::BrokenPipe,
                    error,
                })
            }
        }
    }

    /// The error of a failed write: what failed and what was kept.
    pub fn describe(&self, error: WriteError) -> WriterError {
        let place = if self.name == "-" {
            "standard output".to_string()
        } else {
            self.name.clone()
        };
        WriterError::Stopped {
            place,
            frames: self.frames,
            bytes: self.bytes,
            error,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotated_names_keep_the_extension() {
        let base = Path::new("/tmp/run.pcapng");
        assert_eq!(rotated(base, 0), PathBuf::from("/tmp/run.pcapng"));
        assert_eq!(rotated(base, 2), PathBuf::from("/tmp/run.2.pcapng"));
        assert_eq!(rotated(Path::new("dump"), 1), PathBuf::from("dump.1"));
    }

    /// 10 frames of 100 bytes with files of at most 350 bytes (-C) and then 1 s apart (-G): every file a
    /// whole capture, the frames split in order, none lost.
    #[test]
    fn a_rotation_splits_the_frames_into_whole_captures() {
        let dir = std::env::temp_dir().join(format!("rocescope-rotate-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for (name, rotation, per_file) in [
            (
                "size.pcap",
                Rotation {
                    bytes: Some(350),
                    nanos: None,
                },
                vec![3, 3, 3, 1],
            ),
            (
                "time.pcap",
                Rotation {
                    bytes: None,
                    nanos: Some(1_000_000_000),
                },
                vec![5, 5],
            ),
        ] {
            let base = dir.join(name);
            let mut w = Writer::rotating(&base, 1, 65535, "eth0", rotation).unwrap();
            for i in 0..10u64 {
                // 200 ms apart: 5 frames a second.
                w.write(1_000_000_000 + i * 200_000_000, &[i as u8; 100], 100)
                    .unwrap();
            }
            w.flush().unwrap();
            assert_eq!((w.frames, w.files), (10, per_file.len() as u64), "{name}");
            let mut first = 0u8;
            for (n, want) in per_file.iter().enumerate() {
                let path = rotated(&base, n as u64);
                let mut src = crate::source::FileSource::open(&path).unwrap();
                let mut got = Vec::new();
                while let Some(p) = src.next_packet().unwrap() {
                    got.push(p.data[0]);
                }
                let expect: Vec<u8> = (first..first + *want as u8).collect();
                assert_eq!(got, expect, "{name}: file {n}");
                first += *want as u8;
            }
        }
        let _ = std::fs::remove_dir_all(dir);
    }
}
