//! Congestion control as the host exposes it: the ECN sysctl, the device's DCQCN/ECN knobs (mlx5's
//! `/sys/class/net/IF/ecn/roce_np|roce_rp/enable/P`), PFC from netlink DCB.
use serde::Serialize;

use super::read::Root;
use super::{Layer, Scan, calls};

/// mlx5's ECN knobs: the priorities on which the device reacts to CE as notification point (sends CNPs)
/// and as reaction point (slows down on CNPs).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Ecn {
    pub np_enabled: Vec<u8>,
    pub rp_enabled: Vec<u8>,
}

/// PFC as netlink DCB (IEEE) gives it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Pfc {
    /// The priorities PFC is enabled on, and how many the device supports.
    Read { capable: u8, enabled: Vec<u8> },
    /// The driver has no DCB interface (virtio, rxe's netdev, most software devices).
    NotExposed { why: String },
    /// Not asked: a recorded tree (netlink answers only on the running system), or not Linux.
    NotRead,
}

/// The ECN knobs of `name`, when its driver has them; none (and the files' findings) when one of the 16
/// gave no value: "off on every priority" is concluded only from all of them.
pub fn ecn(scan: &mut Scan, name: &str, dev: &str, port: u32) -> Option<Ecn> {
    let d = format!("sys/class/net/{name}/ecn");
    if !scan.root.is_dir(&d) {
        return None;
    }
    let mut all = true;
    let mut enabled = |point: &str| -> Vec<u8> {
        (0..8u8)
            .filter(|p| {
                let f = format!("{d}/{point}/enable/{p}");
                match scan.value(&f, Layer::Congestion, Some(dev), Some(port)) {
                    Some(v) => v == "1",
                    None => {
                        all = false;
                        false
                    }
                }
            })
            .collect()
    };
    let np_enabled = enabled("roce_np");
    let rp_enabled = enabled("roce_rp");
    all.then_some(Ecn {
        np_enabled,
        rp_enabled,
    })
}

pub fn pfc(root: &Root, name: &str) -> Pfc {
    calls::pfc(root, name)
}

/// The priorities set in a bit mask (bit n = priority n).
pub fn priorities(mask: u8) -> Vec<u8> {
    (0..8).filter(|p| mask & (1 << p) != 0).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn priorities_of_a_mask() {
        assert_eq!(super::priorities(0b0000_1000), [3]);
        assert_eq!(super::priorities(0), Vec::<u8>::new());
        assert_eq!(super::priorities(0x81), [0, 7]);
    }
}
