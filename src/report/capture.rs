//! The live-capture part of the report: `capture_stats` in the JSON, a few lines in the text report.
use std::io::{self, Write};

use serde::Serialize;

/// Why a live capture ended (`stopped_by`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum StoppedBy {
    /// Still capturing (a snapshot).
    #[default]
    #[serde(rename = "")]
    Running,
    /// `-c N` frames.
    Count,
    /// `--duration`.
    Duration,
    /// SIGINT or SIGTERM (or the TUI quit).
    Signal,
    /// The wrapped command ended (and the grace period passed).
    Command,
    /// `-w` failed (disk full, broken pipe).
    WriteError,
    /// libpcap failed.
    CaptureError,
    /// `gen --capture`: the generator finished.
    Generator,
}

impl StoppedBy {
    /// The name as the JSON and the text report give it.
    pub fn name(self) -> &'static str {
        match self {
            StoppedBy::Running => "",
            StoppedBy::Count => "count",
            StoppedBy::Duration => "duration",
            StoppedBy::Signal => "signal",
            StoppedBy::Command => "command",
            StoppedBy::WriteError => "write_error",
            StoppedBy::CaptureError => "capture_error",
            StoppedBy::Generator => "generator",
        }
    }
}

/// How a live capture went: what was asked of libpcap, what it counted, what was written, and the wrapped
/// command. Absent (None) for a capture file.
#[derive(Debug, Clone, Serialize, Default)]
pub struct CaptureStats {
    pub interface: String,
    pub filter: String,
    pub snaplen: u32,
    pub promiscuous: bool,
    /// LINKTYPE of the interface (1 Ethernet, 113 Linux SLL for `-i any`, ...).
    pub linktype: u16,
    /// libpcap's counters (pcap_stats): packets that passed the filter, dropped for lack of buffer space
    /// in the kernel, and dropped by the interface or its driver.
    pub received: u64,
    pub dropped: u64,
    pub if_dropped: u64,
    /// Why the capture ended: `count`, `duration`, `signal`, `command`, `write_error`, `capture_error`,
    /// `generator`; empty while it runs.
    pub stopped_by: StoppedBy,
    /// `-w`: where, the format, the frames and bytes written, and the error that stopped it, if any.
    pub written: Option<Written>,
    /// `-- COMMAND`: the wrapped command.
    pub command: Option<CommandReport>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Written {
    pub file: String,
    /// `pcap` or `pcapng`.
    pub format: &'static str,
    pub frames: u64,
    pub bytes: u64,
    /// Files written: more than one with `-C` or `-G` (`file`, then `STEM.1.EXT`, `STEM.2.EXT`, ...).
    pub files: u64,
    pub error: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct CommandReport {
    pub argv: Vec<String>,
    /// Seconds since the Unix epoch.
    pub start_time: f64,
    pub end_time: Option<f64>,
    /// The exit status (128 + n when killed by signal n); null when it was still running at the end.
    pub exit_status: Option<i32>,
    /// Flows whose first packet came after the command started (ids into `flows`).
    pub flows: Vec<u32>,
}

impl CaptureStats {
    /// The lines the text report shows under "Capture:".
    pub fn write_text(&self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(
            out,
            "  live on {} (link type {}), filter: {}; snaplen {}{}; stopped by {}",
            self.interface,
            self.linktype,
            self.filter,
            self.snaplen,
            if self.promiscuous {
                ", promiscuous"
            } else {
                ""
            },
            self.stopped_by.name()
        )?;
        writeln!(
            out,
            "  capture loss: libpcap received {}, dropped {} (kernel buffer), {} by the interface{}",
            self.received,
            self.dropped,
            self.if_dropped,
            if self.dropped + self.if_dropped > 0 {
                " -- gaps may be capture loss (--buffer-size, --snaplen 128)"
            } else {
                ""
            }
        )?;
        if let Some(w) = &self.written {
            write!(
                out,
                "  written: {} ({}, {} frames, {} bytes)",
                w.file, w.format, w.frames, w.bytes
            )?;
            match &w.error {
                Some(e) => writeln!(out, "; {e}")?,
                None => writeln!(out)?,
            }
        }
        if let Some(c) = &self.command {
            let status = match c.exit_status {
                Some(s) => format!("exited with status {s}"),
                None => "was still running".to_string(),
            };
            let ran = c
                .end_time
                .map(|e| format!(" after {:.3} s", e - c.start_time))
                .unwrap_or_default();
            let flows: Vec<String> = c.flows.iter().map(|f| format!("#{f}")).collect();
            writeln!(
                out,
                "  command `{}` {status}{ran}; flows that appeared while it ran: {}",
                c.argv
                    .iter()
                    .map(|a| {
                        if a.is_empty() || a.contains(|ch: char| ch.is_whitespace() || ch == '"') {
                            format!("{a:?}")
                        } else {
                            a.clone()
                        }
                    })
                    .collect::<Vec<_>>()
                    .join(" "),
                if flows.is_empty() {
                    "none".to_string()
                } else {
                    flows.join(" ")
                }
            )?;
        }
        Ok(())
    }
}
