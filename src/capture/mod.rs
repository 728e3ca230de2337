//! Live capture: one [`session::Session`] (libpcap through the pipeline, the `-w` file, the ring of recent
//! frames) behind `capture`, `capture --tui`, `tui -i` and `gen --capture`; what each shows is its
//! [`session::Watcher`].
pub mod ring;
pub mod session;
pub mod writer;
