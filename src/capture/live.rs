//! Live capture for the terminal UI: the capture loop on its own thread, feeding the analysis engine, the
//! `-w` file and the [`Ring`] of recent frames, and handing the TUI a fresh [`Report`] snapshot every
//! [`SNAPSHOT_EVERY`] (with libpcap's counters in `capture_stats`). The TUI never touches the handle or the
//! engine: drawing cannot hold the capture up; the ring is locked once per batch of frames, and the TUI
//! holds that lock only to take the frames it shows (shared, not copied).
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use parsers::parse_frame;

use super::ring::{Batch, MAX_BYTES, MAX_FRAMES, Ring};
use super::writer::{Format, Writer};
use super::{CaptureArgs, CaptureStats, DRAIN, Written};
use crate::analysis::{Config, Engine};
use crate::report::Report;

/// How often the TUI gets a new snapshot.
pub const SNAPSHOT_EVERY: Duration = Duration::from_millis(250);

/// What the capture thread tells the TUI.
pub enum Update {
    /// The analysis so far, and how many frames the ring holds (the newest of the `report.capture.frames`
    /// captured).
    Snapshot(Arc<Report>, u64),
    /// The answer to [`Control::Flush`]: a line saying where the frames went, or what failed.
    Flushed(Result<String, String>),
    /// The capture stopped on an error (after its last snapshot).
    Failed(String),
}

/// What the TUI asks of the capture thread.
pub enum Control {
    /// Hand what `-w` gathered to the kernel now.
    Flush,
}

/// An open capture, ready to run: opened before the terminal changes so that errors are one line.
pub struct Live {
    cap: pcap::Capture<pcap::Active>,
    filter: String,
    linktype: u16,
    ts_scale: u64,
    writer: Option<Writer>,
    args: CaptureArgs,
    pub ring: Arc<Mutex<Ring>>,
}

impl Live {
    pub fn open(args: &CaptureArgs) -> Result<Live, String> {
        if args.write.as_deref() == Some(std::path::Path::new("-")) {
            return Err("-w - would write the capture over the terminal: give a file name".into());
        }
        let (cap, filter) = super::open(args)?;
        let linktype = cap.get_datalink().0 as u16;
        // SAFETY: the handle is live for the duration of the call.
        let nano = unsafe { super::pcap_get_tstamp_precision(cap.as_ptr().cast()) } == 1;
        let writer = match &args.write {
            Some(p) => Some(Writer::create(p, linktype, args.snaplen, &args.interface)?),
            None => None,
        };
        let ring = Ring::new(
            MAX_FRAMES,
            MAX_BYTES,
            linktype,
            args.snaplen,
            &args.interface,
        );
        Ok(Live {
            cap,
            filter,
            linktype,
            ts_scale: if nano { 1 } else { 1000 },
            writer,
            args: args.clone(),
            ring: Arc::new(Mutex::new(ring)),
        })
    }

    /// True when `-w FILE` was given.
    pub fn writes(&self) -> bool {
        self.writer.is_some()
    }

    pub fn parse_config(&self) -> parsers::Config {
        parsers::Config {
            roce_port: self.args.port,
        }
    }

    /// Captures until `stop` is set, `-c`/`--duration` is reached or the capture fails; `send` returns
    /// false when nobody listens any more. The last snapshot (after the engine's end-of-capture pass)
    /// names why it stopped in `capture_stats.stopped_by`.
    pub fn run(
        mut self,
        control: Receiver<Control>,
        stop: Arc<AtomicBool>,
        mut send: impl FnMut(Update) -> bool,
    ) {
        let args = self.args.clone();
        let parse_cfg = self.parse_config();
        let mut engine = Engine::new(Config {
            mtu: args.mtu,
            link_speed_bps: args.link_speed,
            cnp_window_nanos: args.cnp_window_us.saturating_mul(1000),
            ..Default::default()
        });
        let source = format!("live capture on {}", args.interface);
        let start = Instant::now();
        let deadline = args.duration.map(|d| start + Duration::from_secs_f64(d));
        let fd = self.cap.as_raw_fd();
        let mut number = 0u64;
        let mut next_snapshot = start;
        let mut next_flush = start + Duration::from_secs(1);
        let mut error: Option<String> = None;
        // The frames read since the ring was last appended to (allocated once, reused).
        let mut batch = Batch::new();
        // True when the last read stopped because the batch was full, not because nothing was left.
        let mut more = false;
        // A stop by signal or --duration first reads on for DRAIN: the frames of the kernel's current block
        let mut stopping: Option<(&str, Instant)> = None;
        let stopped_by: &str = 'capture: loop {
            let now = Instant::now();
            if stopping.is_none() {
                if stop.load(Ordering::Relaxed) {
                    stopping = Some(("signal", now + DRAIN));
                } else if deadline.is_some_and(|d| now >= d) {
                    stopping = Some(("duration", now + DRAIN));
                }
            }
            if let Some((why, until)) = stopping
                && now >= until
            {
                break why;
            }
            while let Ok(c) = control.try_recv() {
                match c {
                    Control::Flush => {
                        let answer = self.flush().and_then(|()| match &self.writer {
                            Some(w) => Ok(format!("{} frames written to {}", w.frames, w.name)),
                            None => Err("no -w file to flush".to_string()),
                        });
                        if let Err(e) = &answer {
                            error = Some(e.clone());
                        }
                        send(Update::Flushed(answer));
                        if error.is_some() {
                            break 'capture "write_error";
                        }
                    }
                }
            }
            // Wait for frames, at most 50 ms (unless the last batch was full: there is likely more), then
            // read what is there (a batch at most).
            if !more {
                let mut pfd = libc::pollfd {
                    fd,
                    events: libc::POLLIN,
                    revents: 0,
                };
                // SAFETY: one valid pollfd.
                unsafe { libc::poll(&mut pfd, 1, 50) };
            }
            let mut why = None;
            more = false;
            loop {
                if batch.is_full() {
                    more = true;
                    break;
                }
                if args.count.is_some_and(|n| number >= n) {
                    why = Some("count");
                    break;
                }
                match self.cap.next_packet() {
                    Ok(p) => {
                        number += 1;
                        let h = p.header;
                        let ts = (h.ts.tv_sec as u64)
                            .saturating_mul(1_000_000_000)
                            .saturating_add((h.ts.tv_usec as u64).saturating_mul(self.ts_scale));
                        let frame = parse_frame(self.linktype, p.data, h.len as usize, &parse_cfg);
                        engine.ingest(number, ts, &frame);
                        if let Some(w) = &mut self.writer
                            && let Err(e) = w.write(ts, p.data, h.len)
                        {
                            error = Some(w.describe(&e));
                            why = Some("write_error");
                        }
                        batch.push(number, ts, h.len, p.data);
                        if why.is_some() {
                            break;
                        }
                    }
                    Err(pcap::Error::TimeoutExpired) => break,
                    Err(e) => {
                        error = Some(format!("capture on '{}' failed: {e}", args.interface));
                        why = Some("capture_error");
                        break;
                    }
                }
            }
            if !batch.is_empty() {
                // The ring is locked once per batch (and once per snapshot, for its length).
                // One allocation for the whole batch (the chunk its frames share), none per frame.
                let mut ring = self.ring.lock().unwrap_or_else(|p| p.into_inner());
                ring.append(&mut batch);
            }
            if let Some(why) = why {
                break why;
            }
            let now = Instant::now();
            if now >= next_flush {
                if let Err(e) = self.flush() {
                    error = Some(e);
                    break "write_error";
                }
                next_flush = now + Duration::from_secs(1);
            }
            if now >= next_snapshot {
                let r = self.snapshot(&engine, &source, "", None);
                if !send(r) && stopping.is_none() {
                    stopping = Some(("signal", now + DRAIN));
                }
                while next_snapshot <= now {
                    next_snapshot += SNAPSHOT_EVERY;
                }
            }
        };
        if error.is_none()
            && let Err(e) = self.flush()
        {
            error = Some(e);
        }
        engine.finish();
        let last = self.snapshot(&engine, &source, stopped_by, error.clone());
        send(last);
        if let Some(e) = error {
            send(Update::Failed(e));
        }
    }

    /// Hands what `-w` gathered to the kernel (nothing to do without `-w`).
    fn flush(&mut self) -> Result<(), String> {
        match &mut self.writer {
            Some(w) => w.flush().map_err(|e| w.describe(&e)),
            None => Ok(()),
        }
    }

    /// The report so far, with libpcap's counters; `stopped_by` is empty while the capture runs.
    fn snapshot(
        &mut self,
        engine: &Engine,
        source: &str,
        stopped_by: &str,
        error: Option<String>,
    ) -> Update {
        let ring_len = self.ring.lock().map_or(0, |r| r.len() as u64);
        let pstats = self.cap.stats().ok();
        let mut report = Report::build(engine, source);
        report.capture_stats = Some(CaptureStats {
            interface: self.args.interface.clone(),
            filter: self.filter.clone(),
            snaplen: self.args.snaplen,
            promiscuous: !self.args.no_promisc,
            linktype: self.linktype,
            received: pstats.map_or(0, |s| u64::from(s.received)),
            dropped: pstats.map_or(0, |s| u64::from(s.dropped)),
            if_dropped: pstats.map_or(0, |s| u64::from(s.if_dropped)),
            stopped_by: stopped_by.to_string(),
            written: self.writer.as_ref().map(|w| Written {
                file: w.name.clone(),
                format: match w.format {
                    Format::Pcap => "pcap",
                    Format::PcapNg => "pcapng",
                },
                frames: w.frames,
                bytes: w.bytes,
                error: error.filter(|_| stopped_by == "write_error"),
            }),
            command: None,
        });
        Update::Snapshot(Arc::new(report), ring_len)
    }
}
