//! The host side of a diagnosis, read-only: the RDMA devices and ports (sysfs), their netdevs (sysfs,
//! procfs, netlink), congestion control, the kernel log, the NIC counters; `doctor` turns them into
//! findings. Everything is read behind a [`Root`] (`/`, or a recorded tree for `--root`), every file as
//! hostile input ([`read`]).
pub mod calls;
pub mod congestion;
pub mod counters;
pub mod doctor;
pub mod klog;
pub mod netdev;
pub mod rdma;
pub mod read;

use std::collections::BTreeMap;
use std::io;
use std::path::PathBuf;

use serde::Serialize;

use read::ReadError;
pub use read::Root;

/// Where a finding (or a file that could not be read) belongs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Layer {
    /// The kernel's RDMA subsystem and the devices it has.
    Kernel,
    /// libibverbs and the provider library of a device.
    Provider,
    Device,
    Port,
    Mtu,
    Gid,
    Netdev,
    Congestion,
    KernelLog,
    Counters,
}

impl Layer {
    /// The name the JSON and the text give it.
    pub fn name(self) -> &'static str {
        match self {
            Layer::Kernel => "kernel",
            Layer::Provider => "provider",
            Layer::Device => "device",
            Layer::Port => "port",
            Layer::Mtu => "mtu",
            Layer::Gid => "gid",
            Layer::Netdev => "netdev",
            Layer::Congestion => "congestion",
            Layer::KernelLog => "kernel_log",
            Layer::Counters => "counters",
        }
    }
}

/// A file that should have given a value and did not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unread {
    pub layer: Layer,
    pub device: Option<String>,
    pub port: Option<u32>,
    pub path: String,
    pub error: ReadError,
    /// Read on the running system (false: a recorded tree, where a missing file is one it does not record).
    pub live: bool,
}

/// The most ports read in one pass, over every device.
pub const MAX_PORTS: usize = 1024;
/// The most GID entries read in one pass, over every port (rxe's table has 1024, mlx5's 256).
pub const MAX_GID_ENTRIES: usize = 131_072;

/// A pass over the root that remembers what it could not read, what it read once for two names, and what
/// it did not read past its bounds: the work is bounded in total (ports, GID entries), not per directory.
pub struct Scan<'r> {
    pub root: &'r Root,
    pub unread: Vec<Unread>,
    /// (a name, the name read before that leads to the same place), as evidence shows them.
    pub duplicates: Vec<(String, String)>,
    /// What was left unread past a bound, in words.
    pub cut: Vec<String>,
    pub ports_left: usize,
    pub gid_entries_left: usize,
}

impl<'r> Scan<'r> {
    pub fn new(root: &'r Root) -> Scan<'r> {
        Scan {
            root,
            unread: Vec::new(),
            duplicates: Vec::new(),
            cut: Vec::new(),
            ports_left: MAX_PORTS,
            gid_entries_left: MAX_GID_ENTRIES,
        }
    }

    /// Remembers that `rel` could not be read.
    pub fn unread(
        &mut self,
        rel: &str,
        error: ReadError,
        layer: Layer,
        dev: Option<&str>,
        port: Option<u32>,
    ) {
        self.unread.push(Unread {
            layer,
            device: dev.map(str::to_string),
            port,
            path: self.root.show(rel),
            error,
            live: self.root.live,
        });
    }

    /// A value file that should be there.
    pub fn value(
        &mut self,
        rel: &str,
        layer: Layer,
        dev: Option<&str>,
        port: Option<u32>,
    ) -> Option<String> {
        self.root
            .text(rel)
            .map_err(|e| self.unread(rel, e, layer, dev, port))
            .ok()
    }

    /// A number file that should be there.
    pub fn number(
        &mut self,
        rel: &str,
        layer: Layer,
        dev: Option<&str>,
        port: Option<u32>,
    ) -> Option<u64> {
        self.root
            .number(rel)
            .map_err(|e| self.unread(rel, e, layer, dev, port))
            .ok()
    }

    /// Every counter file of directory `dir` (none when it is not there), by name. `lifespan` is not a
    /// counter: it is how long the kernel caches the values (milliseconds).
    pub fn counters(&mut self, dir: &str, dev: &str, port: u32) -> BTreeMap<String, u64> {
        let names = self.root.list(dir).unwrap_or_default();
        names
            .into_iter()
            .filter(|n| n != "lifespan")
            .filter_map(|n| {
                let v = self.number(
                    &format!("{dir}/{n}"),
                    Layer::Counters,
                    Some(dev),
                    Some(port),
                )?;
                Some((n, v))
            })
            .collect()
    }
}

/// Why the host could not be examined.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// `-d NAME` names no device; `devices` are the ones there.
    #[error(
        "no RDMA device '{name}' (devices here: {}); give one of them with -d, or none for all",
        list_or_none(.devices)
    )]
    NoSuchDevice { name: String, devices: Vec<String> },
    /// `--root DIR` is a directory without `sys/class`: most likely the wrong one.
    #[error(
        "--root {}: no sys/class in it: not a recorded host tree (one holds the host's \
         /sys/class/infiniband, /sys/class/net, /proc/... under the same paths: \
         testdata/host/README.md)",
        .dir.display()
    )]
    NotHostTree { dir: PathBuf },
    #[error("--root {}: not a directory", .dir.display())]
    NotDirectory { dir: PathBuf },
    #[error("--root {}", .dir.display())]
    Root {
        dir: PathBuf,
        #[source]
        source: io::Error,
    },
}

fn list_or_none(names: &[String]) -> String {
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    }
}

/// The error for a device that is not there.
pub fn no_such_device(name: &str, names: &[String]) -> HostError {
    HostError::NoSuchDevice {
        name: name.to_string(),
        devices: names.to_vec(),
    }
}
