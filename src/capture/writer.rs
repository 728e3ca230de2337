//! `-w FILE`: the captured frames written as pcap (nanosecond) or pcapng, to a file or to standard output.
//!
//! Frames are gathered in a buffer of whole records and handed to the kernel in chunks; when a write fails
//! (disk full, quota, broken pipe) the file is cut back to the last whole record the kernel took, so what was
//! written stays a valid capture, and the writer stops.
use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

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
    /// Bytes of whole records the kernel took.
    pub bytes: u64,
    /// Frames the kernel took.
    pub frames: u64,
}

/// A failed write: what happened, and what was kept.
#[derive(Debug)]
pub struct WriteError {
    pub disk_full: bool,
    pub broken_pipe: bool,
    pub error: io::Error,
}

impl Writer {
    /// Creates the file (pcapng when its name ends in `.pcapng`) or writes to standard output (`-`), and
    /// writes the header at once so that an unwritable destination is reported before the capture starts.
    pub fn create(
        path: &Path,
        linktype: u16,
        snaplen: u32,
        interface: &str,
    ) -> Result<Writer, String> {
        let name = path.display().to_string();
        let (out, format) = if path == Path::new("-") {
            (Out::Stdout(io::stdout()), Format::Pcap)
        } else {
            let format = Format::for_name(&name);
            let f = File::create(path).map_err(|e| format!("cannot create {name}: {e}"))?;
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
        };
        format.header(&mut w.buf, linktype, snaplen, interface);
        // The header is not a frame: no bound for it.
        w.flush()
            .map_err(|e| format!("cannot write {}: {}", w.name, e.error))?;
        Ok(w)
    }

    /// Adds one frame; writes a chunk when enough has gathered.
    pub fn write(&mut self, ts_nanos: u64, data: &[u8], orig_len: u32) -> Result<(), WriteError> {
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
                    let _ = f.set_len(self.bytes);
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

    /// One line: what failed and what was kept.
    pub fn describe(&self, e: &WriteError) -> String {
        let place = if self.name == "-" {
            "standard output".to_string()
        } else {
            self.name.clone()
        };
        if e.disk_full {
            format!(
                "disk full writing {place}: capture stopped; the first {} frames ({} bytes) were kept as a valid \
                 capture (free space, or -w to another disk)",
                self.frames, self.bytes
            )
        } else {
            format!(
                "cannot write {place}: {}; capture stopped; the first {} frames ({} bytes) were kept",
                e.error, self.frames, self.bytes
            )
        }
    }
}
