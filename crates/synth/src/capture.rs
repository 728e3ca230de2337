//! The capture the mirror writes: classic pcap, nanosecond timestamps, Ethernet, frames in time order, with
//! the one-packet noise flows mixed in.
use std::io::{self, Write};

use parsers::builder::{Net, RoceFrame};
use parsers::frame::LINKTYPE_ETHERNET;
use parsers::savefile::{Format, Writer};

pub(crate) struct Capture<W: Write> {
    out: Writer<W>,
    /// The simulation's frames written (the noise is not counted).
    pub(crate) frames: u64,
    noise: Noise,
    pub(crate) bytes: u64,
    pub(crate) first_ts: u64,
    pub(crate) last_ts: u64,
}

impl<W: Write> Capture<W> {
    /// A capture of `frames` simulated frames with `noise_flows` one-packet flows among them.
    pub(crate) fn new(out: W, frames: u64, noise_flows: u64) -> io::Result<Capture<W>> {
        // pcap has no place for an interface name.
        let out = Writer::new(out, Format::Pcap, LINKTYPE_ETHERNET, 65_535, "")?;
        Ok(Capture {
            out,
            frames: 0,
            noise: Noise {
                flows: noise_flows,
                written: 0,
                frames,
            },
            bytes: 0,
            first_ts: 0,
            last_ts: 0,
        })
    }

    /// Writes a frame of the simulation, captured whole, at `ts` (or 1 ns after the previous frame), and the
    /// noise due after it at the same time (so that the noise moves no frame of the simulation: its flows are
    /// the same with and without it); returns the time written.
    pub(crate) fn write(&mut self, ts: u64, data: &[u8]) -> io::Result<u64> {
        let ts = self.put(ts, data)?;
        self.frames += 1;
        while let Some(frame) = self.noise.due(self.frames) {
            self.out.write(ts, &frame, frame.len() as u32)?;
            self.bytes += frame.len() as u64;
        }
        Ok(ts)
    }

    fn put(&mut self, ts: u64, data: &[u8]) -> io::Result<u64> {
        let ts = if self.bytes == 0 {
            self.first_ts = ts;
            ts
        } else {
            ts.max(self.last_ts + 1)
        };
        self.out.write(ts, data, data.len() as u32)?;
        self.bytes += data.len() as u64;
        self.last_ts = ts;
        Ok(ts)
    }

    /// The noise not written yet (all of it, when the simulation wrote no frame), `gap_ns` apart; then
    /// flushes.
    pub(crate) fn flush(&mut self, start_ns: u64, gap_ns: u64) -> io::Result<()> {
        let mut ts = if self.bytes == 0 {
            start_ns
        } else {
            self.last_ts
        };
        while let Some(frame) = self.noise.next() {
            ts = self.put(ts.saturating_add(gap_ns), &frame)?;
        }
        self.out.flush()
    }
}

/// The one-packet noise flows, spread evenly among the simulation's frames.
struct Noise {
    flows: u64,
    written: u64,
    /// The simulation's frames, over which the noise is spread.
    frames: u64,
}

impl Noise {
    /// The next noise frame due once `done` of the simulation's frames are written.
    fn due(&mut self, done: u64) -> Option<Vec<u8>> {
        let due =
            (u128::from(self.flows) * u128::from(done) / u128::from(self.frames.max(1))) as u64;
        (self.written < due.min(self.flows))
            .then(|| self.next())
            .flatten()
    }

    /// Noise flow `written`: an RC SEND_ONLY of 64 bytes from 10.128.0.0/9 (address i) to 10.0.0.1, QP i + 2.
    fn next(&mut self) -> Option<Vec<u8>> {
        if self.written >= self.flows {
            return None;
        }
        let i = self.written;
        self.written += 1;
        let mut f = RoceFrame::new(0x04);
        if let Net::V4(ip) = &mut f.net {
            let a = 0x0a80_0000 | (i as u32 & 0x7f_ffff);
            ip.src = a.to_be_bytes();
            ip.dst = [10, 0, 0, 1];
        }
        f.bth.dest_qp = (i as u32 % 0xff_fffd) + 2;
        f.bth.psn = (i as u32).wrapping_mul(2_654_435_761) & 0xff_ffff;
        f.payload = vec![0x5a; 64];
        Some(f.build())
    }
}
