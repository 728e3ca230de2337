//! Zero-copy parsers for RoCE frames, from the link layer to the ICRC.
//!
//! Each header has its own module in the manner of smoltcp's `wire`: the byte layout written once (a nom
//! parser that reads fields in layout order after a checked length), a plain `Copy` struct of the decoded
//! fields, `parse` from bytes, `emit` back to bytes (used by tests and the builders), and `visit`, which
//! lists every field with its Wireshark name, label and meaning so that the JSON output and the `-V` tree are
//! driven by one field list. [`frame::parse_frame`] walks the layers and stops at the first damage, keeping
//! every header that did parse.
#![deny(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

pub mod aeth;
pub mod atomic;
pub mod bth;
pub mod builder;
pub mod cm;
pub mod cnp;
pub mod deth;
pub mod erf;
pub mod error;
pub mod erspan;
pub mod ethernet;
pub mod feth;
pub mod fields;
pub mod frame;
pub mod gre;
pub mod grh;
pub mod icrc;
pub mod imm;
pub mod ipoib;
pub mod ipv4;
pub mod ipv6;
pub mod lrh;
pub mod mac_control;
pub mod mad;
pub mod opcode;
pub mod other;
pub mod psn;
pub mod rdeth;
pub mod reth;
pub mod savefile;
pub mod sll;
pub mod udp;
pub mod vlan;
pub mod vxlan;
pub mod xrceth;

mod be;

pub use error::{Layer, Malformed, MalformedKind};
pub use fields::{Field, Value, Visitor};
pub use frame::{Config, Frame, parse_frame, parse_frame_deferred};
