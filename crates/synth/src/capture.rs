//! The capture the mirror writes: classic pcap, nanosecond timestamps, Ethernet, frames in time order.
use std::io::{self, Write};

use parsers::frame::LINKTYPE_ETHERNET;
use parsers::savefile::{Format, Writer};

pub(crate) struct Capture<W: Write> {
    out: Writer<W>,
    pub(crate) frames: u64,
    pub(crate) bytes: u64,
    pub(crate) first_ts: u64,
    pub(crate) last_ts: u64,
}

impl<W: Write> Capture<W> {
    pub(crate) fn new(out: W) -> io::Result<Capture<W>> {
        // pcap has no place for an interface name.
        let out = Writer::new(out, Format::Pcap, LINKTYPE_ETHERNET, 65_535, "")?;
        Ok(Capture {
            out,
            frames: 0,
            bytes: 0,
            first_ts: 0,
            last_ts: 0,
        })
    }

    /// Writes a frame, captured whole, at `ts` (or 1 ns after the previous frame); returns the time written.
    pub(crate) fn write(&mut self, ts: u64, data: &[u8]) -> io::Result<u64> {
        let ts = if self.frames == 0 {
            self.first_ts = ts;
            ts
        } else {
            ts.max(self.last_ts + 1)
        };
        self.out.write(ts, data, data.len() as u32)?;
        self.frames += 1;
        self.bytes += data.len() as u64;
        self.last_ts = ts;
        Ok(ts)
    }

    pub(crate) fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}
