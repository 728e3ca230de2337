//! The ports' IB MTUs from libibverbs (ibv_query_port: uverbs asks the kernel), loaded at run time.
use sideway::ibverbs::device::{DeviceInfo, DeviceList, GetDeviceListErrorKind};

use super::super::rdma::mtu_bytes;
use super::{Listed, PortMtus};

pub fn port_mtus() -> PortMtus {
    let list = match DeviceList::new() {
        Ok(l) => l,
        Err(e) => {
            let listed = match &e.0 {
                GetDeviceListErrorKind::Ibverbs(io)
                    if io.raw_os_error() == Some(libc::EOPNOTSUPP) =>
                {
                    Listed::NoLibrary
                }
                _ => Listed::Failed(e.to_string()),
            };
            return PortMtus {
                source: None,
                mtus: Default::default(),
                listed: Some(listed),
            };
        }
    };
    let mut mtus = std::collections::BTreeMap::new();
    let mut names = Vec::new();
    for dev in list.iter() {
        let name = dev.name();
        names.push(name.clone());
        let Ok(ctx) = dev.open() else { continue };
        let ports = ctx.query_device().map_or(0, |a| a.phys_port_cnt());
        for p in 1..=ports {
            let Ok(a) = ctx.query_port(p) else { continue };
            if let (Some(act), Some(max)) = (
                mtu_bytes(a.active_mtu() as u32),
                mtu_bytes(a.max_mtu() as u32),
            ) {
                mtus.insert((name.clone(), u32::from(p)), (act, max));
            }
        }
    }
    PortMtus {
        source: Some("verbs"),
        mtus,
        listed: Some(Listed::Devices(names)),
    }
}
