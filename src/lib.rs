//! rocescope: RoCEv2 capture sources, dissection output and analysis.
pub mod dissect;
pub mod source;
