//! Is there RDMA here at all: the kernel's subsystem, its devices, libibverbs and each device's provider.
use super::super::calls::{Listed, PortMtus};
use super::super::read::ReadError;
use super::super::{Layer, rdma};
use super::{At, Finding, HostFacts, Root, Severity};

/// The device names, or `None` after the finding that says why there are none.
pub fn devices(root: &Root, host: &HostFacts, findings: &mut Vec<Finding>) -> Option<Vec<String>> {
    // What cannot be read says nothing about the devices: no "no subsystem", no "no device".
    let unreadable = |why: String| {
        At::HOST.finding(
            Severity::Error,
            Layer::Kernel,
            "file_unreadable",
            format!("{}: unreadable: {why}", root.show(rdma::CLASS)),
            "the RDMA devices cannot be listed: nothing is concluded about them (not that there is none)",
            if root.live {
                "run as root; check that /sys is sysfs (mount -t sysfs sysfs /sys)"
            } else {
                "record DIR/sys/class/infiniband as the directory the host has (testdata/host/README.md)"
            },
        )
    };
    match root.metadata(rdma::CLASS) {
        Err(ReadError::Missing) => {
            findings.push(no_subsystem(root, host));
            return None;
        }
        Err(ReadError::Unreadable(why)) => {
            findings.push(unreadable(why));
            return None;
        }
        Err(e) => {
            findings.push(unreadable(e.to_string()));
            return None;
        }
        Ok(m) if !m.is_dir() => {
            findings.push(unreadable(
                "not a directory (a regular file where the class directory should be)".to_string(),
            ));
            return None;
        }
        Ok(_) => {}
    }
    let names = match rdma::device_names(root) {
        Ok(n) => n,
        Err(e) => {
            findings.push(unreadable(match e {
                ReadError::Unreadable(why) => why,
                e => e.to_string(),
            }));
            return None;
        }
    };
    if names.is_empty() {
        findings.push(At::HOST.finding(
            Severity::Error,
            Layer::Kernel,
            "no_devices",
            format!("{}: empty", root.show(rdma::CLASS)),
            "the kernel's RDMA subsystem is loaded but has no device: no driver has registered one",
            "load the NIC's RDMA driver (mlx5_ib, bnxt_re, irdma, ...) or make a Soft-RoCE device: \
             rdma link add rxe0 type rxe netdev ETH",
        ));
        return None;
    }
    Some(names)
}

/// No /sys/class/infiniband: ib_core not loaded (its module is there) or not in this kernel at all. A
/// recorded tree that records no `lib/modules` says nothing of the modules.
fn no_subsystem(root: &Root, host: &HostFacts) -> Finding {
    let modules = host
        .kernel
        .as_ref()
        .map(|k| format!("lib/modules/{k}/kernel/drivers/infiniband"));
    let has_modules = modules.as_deref().is_some_and(|m| root.is_dir(m));
    let modules_recorded = root.live || root.exists("lib/modules");
    let evidence = format!(
        "{}: missing; {}: {}{}",
        root.show(rdma::CLASS),
        root.show("sys/module/ib_core"),
        if root.exists("sys/module/ib_core") {
            "present"
        } else if root.live || root.exists("sys/module") {
            "missing"
        } else {
            "not recorded"
        },
        match &modules {
            Some(m) => format!(
                "; {}: {}",
                root.show(m),
                match (has_modules, modules_recorded) {
                    (true, _) => "present",
                    (false, true) => "missing",
                    (false, false) => "not recorded",
                }
            ),
            None => String::new(),
        }
    );
    let (meaning, fix) = if has_modules {
        (
            "this kernel has RDMA modules but ib_core is not loaded: no RDMA device can exist",
            "modprobe ib_core, then the NIC's RDMA driver (mlx5_ib, bnxt_re, ...) or rdma_rxe for Soft-RoCE",
        )
    } else if !modules_recorded {
        (
            "ib_core was not loaded when the tree was recorded: no RDMA device could exist (the tree records no \
             /lib/modules: whether the kernel has RDMA modules is not recorded)",
            "on the host: modprobe ib_core, then the NIC's RDMA driver (mlx5_ib, bnxt_re, ...) or rdma_rxe for \
             Soft-RoCE; if modprobe finds no module, boot a kernel with CONFIG_INFINIBAND",
        )
    } else {
        (
            "no RDMA subsystem in this kernel (ib_core neither loaded nor among its modules): RDMA cannot \
             run here",
            "boot a kernel with CONFIG_INFINIBAND (every distribution kernel has it), then `sudo rocescope \
             lab up` makes a Soft-RoCE device",
        )
    };
    At::HOST.finding(
        Severity::Error,
        Layer::Kernel,
        "no_rdma_subsystem",
        evidence,
        meaning,
        fix,
    )
}

/// Where the libraries are: libibverbs.so.1 and the providers (`libibverbs/lib<NAME>-rdmav*.so`) in the
/// library directories under the root, the drivers' files (`/etc/libibverbs.d/<NAME>.driver`).
pub struct Libraries {
    dirs: Vec<String>,
    pub libibverbs: Option<String>,
    /// The library directories are there (always on the running system; a recorded tree may hold none).
    pub recorded: bool,
    /// `etc/libibverbs.d` is there (the same).
    pub drivers_recorded: bool,
    root: Root,
}

impl Libraries {
    pub fn find(root: &Root) -> Libraries {
        let mut dirs: Vec<String> = ["usr/lib64", "lib64", "usr/lib", "lib"]
            .map(String::from)
            .to_vec();
        for base in ["usr/lib", "lib"] {
            for e in root.list(base).unwrap_or_default() {
                if e.contains("-linux-gnu") {
                    dirs.insert(0, format!("{base}/{e}"));
                }
            }
        }
        let libibverbs = dirs
            .iter()
            .map(|d| format!("{d}/libibverbs.so.1"))
            .find(|f| root.exists(f))
            .map(|f| root.show(&f));
        let recorded = root.live || dirs.iter().any(|d| root.is_dir(d));
        Libraries {
            dirs,
            libibverbs,
            recorded,
            drivers_recorded: root.live || root.exists("etc/libibverbs.d"),
            root: root.clone(),
        }
    }

    /// The provider library of `name`, when its driver file and library are both there.
    pub fn provider(&self, name: &str) -> Option<String> {
        if !self.root.exists(&format!("etc/libibverbs.d/{name}.driver")) {
            return None;
        }
        let prefix = format!("lib{name}-rdmav");
        self.dirs.iter().find_map(|d| {
            let dir = format!("{d}/libibverbs");
            let f = self
                .root
                .list(&dir)
                .unwrap_or_default()
                .into_iter()
                .find(|f| f.starts_with(&prefix) && f.ends_with(".so"))?;
            Some(self.root.show(&format!("{dir}/{f}")))
        })
    }
}

/// libibverbs missing; a device whose provider is missing or that libibverbs does not list.
pub fn provider_findings(
    libs: &Libraries,
    mtus: &PortMtus,
    devices: &[rdma::Device],
    out: &mut Vec<Finding>,
) {
    let shown = |dirs: &[String]| {
        dirs.iter()
            .map(|d| libs.root.show(d))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if !libs.recorded {
        out.push(At::HOST.finding(
            Severity::Note,
            Layer::Provider,
            "not_recorded",
            format!("{}: not recorded", shown(&libs.dirs)),
            "the tree records no library directory: whether libibverbs and the devices' providers are \
             installed is not known, and is not checked",
            "record them with the tree (DIR/usr/lib/*/libibverbs.so.1, DIR/usr/lib/*/libibverbs/, \
             DIR/etc/libibverbs.d: testdata/host/README.md), or run doctor on the host",
        ));
        return;
    }
    if libs.libibverbs.is_none() || mtus.listed == Some(Listed::NoLibrary) {
        out.push(At::HOST.finding(
            Severity::Error,
            Layer::Provider,
            "no_libibverbs",
            format!("libibverbs.so.1 in none of {}", shown(&libs.dirs)),
            "no verbs library: no application (perftest, rdma_cm users, rocescope gen) can open an RDMA device",
            "install rdma-core's libibverbs1 and ibverbs-providers (apt-get install libibverbs1 ibverbs-providers)",
        ));
        return;
    }
    if !libs.drivers_recorded {
        out.push(At::HOST.finding(
            Severity::Note,
            Layer::Provider,
            "not_recorded",
            format!("{}: not recorded", libs.root.show("etc/libibverbs.d")),
            "the tree records no provider list: whether libibverbs has a provider for each device is not \
             known, and is not checked",
            "record DIR/etc/libibverbs.d with the tree (testdata/host/README.md), or run doctor on the host",
        ));
        return;
    }
    let listed = match &mtus.listed {
        Some(Listed::Devices(n)) => Some(n.as_slice()),
        _ => None,
    };
    out.extend(devices.iter().filter_map(|d| no_provider(libs, listed, d)));
}

/// A device whose provider library is missing, or that libibverbs does not list (`listed`, when asked).
fn no_provider(libs: &Libraries, listed: Option<&[String]>, d: &rdma::Device) -> Option<Finding> {
    let unlisted = listed.filter(|n| !n.contains(&d.name));
    let served = d.provider.is_none() || d.provider_library.is_some();
    if served && unlisted.is_none() {
        return None;
    }
    let p = d.provider.as_deref().unwrap_or("its");
    let mut evidence = format!(
        "{} for driver {}: {}",
        libs.root.show(&format!("etc/libibverbs.d/{p}.driver")),
        d.driver.as_deref().unwrap_or("?"),
        if d.provider_library.is_some() {
            "present, with its library".to_string()
        } else {
            format!("missing, or no lib{p}-rdmav*.so beside libibverbs")
        }
    );
    if let Some(n) = unlisted {
        let names = if n.is_empty() {
            "no device".to_string()
        } else {
            n.join(", ")
        };
        evidence.push_str(&format!("; libibverbs lists {names}"));
    }
    let at = At {
        device: Some(&d.name),
        port: None,
    };
    Some(at.finding(
        Severity::Error,
        Layer::Provider,
        "no_provider",
        evidence,
        format!(
            "libibverbs has no provider for {}: applications do not see the device",
            d.name
        ),
        format!("install ibverbs-providers (it has the {p} provider), or check /etc/libibverbs.d"),
    ))
}
