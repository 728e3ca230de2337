//! rocescope: RoCEv2 capture sources, dissection output and analysis.
pub mod analysis;
pub mod capture;
pub mod dissect;
pub mod pipeline;
pub mod report;
pub mod source;
pub mod tui;
