//! What to simulate: the scenario's size, its seed, the rates of loss and congestion marks.

/// What to simulate.
#[derive(Debug, Clone)]
pub struct Params {
    /// Frames to write.
    pub frames: u64,
    /// RC connections (each is two QPs).
    pub qps: u32,
    pub seed: u64,
    /// Probability that a new request packet is lost.
    pub loss: f64,
    /// Probability that a request packet is CE-marked.
    pub ce: f64,
    /// Fraction of CE marks (where allowed, see the model) left without a CNP.
    pub unanswered: f64,
    /// Path MTU: 256, 512, 1024, 2048 or 4096.
    pub mtu: u32,
    /// Hosts, 2 to 254.
    pub hosts: u8,
    /// The window within which a CNP answers a CE mark (`rocescope analyze --cnp-window-us`).
    pub cnp_window_us: u64,
    /// Time of the first frame, nanoseconds since the Unix epoch.
    pub start_ns: u64,
    /// One-packet flows mixed in (a scan, a misbehaving sender on a mirror port): each an RC SEND from an
    /// address of its own to a QP of its own, spread evenly among the simulated frames (after them, when
    /// there are none). Not in the truth, and not counted in `frames`.
    pub noise_flows: u64,
    /// The time between noise frames after the simulated ones (all of them, when there are none).
    pub noise_gap_ns: u64,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            frames: 100_000,
            qps: 8,
            seed: 1,
            loss: 0.0003,
            ce: 0.005,
            unanswered: 0.05,
            mtu: 1024,
            hosts: 4,
            cnp_window_us: 1000,
            // 2026-01-01T00:00:00Z
            start_ns: 1_767_225_600_000_000_000,
            noise_flows: 0,
            noise_gap_ns: 1000,
        }
    }
}

/// A parameter out of its range.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ParamsError {
    #[error("MTU {0} is not 256, 512, 1024, 2048 or 4096")]
    Mtu(u32),
    #[error("hosts must be 2 to 254")]
    Hosts(u8),
    #[error("qps must be 1 to 100000")]
    Qps(u32),
    /// `name` (loss, ce, unanswered) is not in 0 to 1.
    #[error("{name} must be a probability (0 to 1)")]
    Probability { name: &'static str, value: f64 },
}

impl Params {
    pub fn check(&self) -> Result<(), ParamsError> {
        if ![256, 512, 1024, 2048, 4096].contains(&self.mtu) {
            return Err(ParamsError::Mtu(self.mtu));
        }
        if !(2..=254).contains(&self.hosts) {
            return Err(ParamsError::Hosts(self.hosts));
        }
        if self.qps == 0 || self.qps > 100_000 {
            return Err(ParamsError::Qps(self.qps));
        }
        for (name, p) in [
            ("loss", self.loss),
            ("ce", self.ce),
            ("unanswered", self.unanswered),
        ] {
            if !(0.0..=1.0).contains(&p) {
                return Err(ParamsError::Probability { name, value: p });
            }
        }
        Ok(())
    }
}
