//! Live capture: one [`session::Session`] (libpcap through the pipeline, the `-w` file, the ring of recent
//! frames) behind `capture`, `capture --tui`, `tui -i` and `gen --capture`; what each shows is its
//! [`session::Watcher`]. The session needs libpcap on a Unix (the `live` feature); its configuration and
//! the ring are plain data, built everywhere.
use std::path::PathBuf;
use std::sync::mpsc::Receiver;
use std::time::Duration;

use crate::pipeline;
use crate::source::LiveConfig;

pub mod annotate;
pub mod endpoint;
pub mod ring;
#[cfg(all(feature = "live", unix))]
pub mod session;
pub mod writer;

/// What this build says when asked to capture live without libpcap.
pub const NOT_BUILT: &str = "live capture is not in this build of rocescope: it needs libpcap on Linux or \
    another Unix (build with the default features)";

/// What a capture session does.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub live: LiveConfig,
    pub pipeline: pipeline::Config,
    /// Also write the frames here (pcapng when the name ends in `.pcapng`; `-` is standard output).
    pub write: Option<PathBuf>,
    /// When `write` goes on in a new file.
    pub rotation: writer::Rotation,
    /// Stop after this many frames.
    pub count: Option<u64>,
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// Keep the newest frames in a [`Ring`] (the live TUI's packet list).
    pub ring: bool,
}

impl Config {
    /// `rocescope capture -i IFACE`'s defaults.
    pub fn new(interface: &str) -> Config {
        Config {
            live: LiveConfig::new(interface),
            pipeline: pipeline::Config::default(),
            write: None,
            rotation: writer::Rotation::default(),
            count: None,
            duration: None,
            ring: false,
        }
    }
}

/// A request to the reading thread while it captures.
pub enum Request {
    /// Hand what `-w` gathered to the kernel now; the answer says where the frames went, or what failed.
    Flush,
}

/// Why a capture could not start or run.
#[cfg(all(feature = "live", unix))]
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    #[error(transparent)]
    Live(#[from] crate::source::live::LiveError),
    #[error(transparent)]
    Writer(#[from] writer::WriterError),
    #[error(transparent)]
    Pipeline(#[from] pipeline::PipelineError),
}

/// Why a [`Request::Flush`] did not flush.
#[derive(Debug, thiserror::Error)]
pub enum FlushError {
    #[error("no -w file to flush")]
    NoFile,
    #[error(transparent)]
    Write(#[from] writer::WriterError),
}

/// Requests, and where their answers go.
pub struct Control {
    pub requests: Receiver<Request>,
    pub answer: Box<dyn FnMut(Result<String, FlushError>) + Send>,
}
