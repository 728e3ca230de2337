//! rocescope: RoCEv2 capture sources, dissection output and analysis.
// Without live capture the TUI's reading of the live ring cannot be reached: it is built, not used.
#![cfg_attr(not(all(feature = "live", unix)), allow(dead_code))]
// The filter grammar's parser, derived by pest_derive without its std feature (Cargo.toml), names `::alloc`.
extern crate alloc;

pub mod analysis;
pub mod capture;
pub mod conform;
pub mod dissect;
#[cfg(feature = "export")]
pub mod export;
pub mod filter;
pub mod host;
pub mod inject;
pub mod mesh;
pub mod pipeline;
pub mod report;
pub mod source;
pub mod tui;
