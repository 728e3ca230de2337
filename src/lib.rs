//! rocescope: RoCEv2 capture sources, dissection output and analysis.
pub mod analysis;
pub mod analyze;
pub mod dissect;
pub mod report;
pub mod source;
