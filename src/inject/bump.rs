//! The injector as a bump in the wire: two interfaces, each Ethernet frame received on one sent out of the
//! other (AF_PACKET raw sockets, promiscuous), the RoCEv2-over-IPv4 frames decided by [`Injector`] on the way.
//! It stands between two hosts (a Linux box with two ports between a NIC under test and its peer, or two
//! veths), so that any NIC's RoCE can be acted on, not only the kernel's own. The frames are forwarded as
//! they are: a NIC's receive offloads on the bump's ports (GRO, LRO, VLAN stripping) must be off, or the
//! frames seen are not the frames sent.
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Instant;

use super::hold::{HeldFlow, Holding, flow_of};
use super::rules::{Action, REORDER_HOLD};
use super::{Decision, Injector, edit};

/// The largest frame taken: a 64 KiB datagram and its Ethernet and VLAN headers (a GRO-merged frame, if
/// the offload was left on, is cut here and sent cut).
const FRAME_MAX: usize = 65_536 + 22;

/// Frames read from one port before the other is looked at.
const BURST: usize = 64;

const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_VLAN: [u16; 2] = [0x8100, 0x88a8];

/// What went wrong on the wire.
#[derive(Debug, thiserror::Error)]
pub enum BumpError {
    #[error("no interface {0} (ip link shows them)")]
    NoInterface(String),
    #[error("cannot open a packet socket on {port} (root, or CAP_NET_RAW)")]
    Open {
        port: String,
        #[source]
        source: io::Error,
    },
    #[error("{port}")]
    Port {
        port: String,
        #[source]
        source: io::Error,
    },
    #[error("cannot write the log")]
    Log(#[source] io::Error),
}

/// One side of the bump: a raw socket bound to its interface.
struct Port {
    name: String,
    fd: OwnedFd,
}

/// A raw packet socket bound to interface `name`, opened with `flags` (`SOCK_NONBLOCK`, ...), taking the frames
/// of `protocol` (`ETH_P_ALL`: all; 0: none, a socket that only sends), and the interface's index.
pub fn bound_socket(name: &str, flags: i32, protocol: u16) -> Result<(OwnedFd, i32), BumpError> {
    let cname =
        std::ffi::CString::new(name).map_err(|_| BumpError::NoInterface(name.to_string()))?;
    // SAFETY: a NUL-terminated name.
    let index = unsafe { libc::if_nametoindex(cname.as_ptr()) };
    if index == 0 {
        return Err(BumpError::NoInterface(name.to_string()));
    }
    let failed = |source| BumpError::Open {
        port: name.to_string(),
        source,
    };
    let protocol = protocol.to_be();
    // SAFETY: socket(2) returns a new descriptor or -1.
    let fd = unsafe {
        libc::socket(
            libc::AF_PACKET,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC | flags,
            i32::from(protocol),
        )
    };
    if fd < 0 {
        return Err(failed(io::Error::last_os_error()));
    }
    // SAFETY: fd is a descriptor just opened and owned by no one else; it closes when dropped.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: sockaddr_ll is plain data; all-zero is a valid value.
    let mut at: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    at.sll_family = libc::AF_PACKET as u16;
    at.sll_protocol = protocol;
    at.sll_ifindex = index as i32;
    // SAFETY: a sockaddr_ll of the length given, on a valid descriptor.
    let rc = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&raw const at).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(failed(io::Error::last_os_error()));
    }
    Ok((fd, index as i32))
}

impl Port {
    fn open(name: &str) -> Result<Port, BumpError> {
        let (fd, index) = bound_socket(name, libc::SOCK_NONBLOCK, libc::ETH_P_ALL as u16)?;
        let failed = |source| BumpError::Open {
            port: name.to_string(),
            source,
        };
        // Promiscuous: the frames are for the hosts on either side, not for this one.
        // SAFETY: packet_mreq is plain data; all-zero is a valid value.
        let mut promisc: libc::packet_mreq = unsafe { std::mem::zeroed() };
        promisc.mr_ifindex = index;
        promisc.mr_type = libc::PACKET_MR_PROMISC as u16;
        // SAFETY: a packet_mreq of its size, on a valid descriptor.
        let rc = unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_ADD_MEMBERSHIP,
                (&raw const promisc).cast(),
                std::mem::size_of::<libc::packet_mreq>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(failed(io::Error::last_os_error()));
        }
        Ok(Port {
            name: name.to_string(),
            fd,
        })
    }

    /// The next frame that arrived on the port (not one sent from it) into `buf`: its length, `None` when
    /// there is none now.
    fn recv(&self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        loop {
            // SAFETY: sockaddr_ll is plain data; all-zero is a valid value.
            let mut from: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
            let mut len = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
            // SAFETY: the buffer and the address are valid for the lengths given.
            let n = unsafe {
                libc::recvfrom(
                    self.fd.as_raw_fd(),
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    0,
                    (&raw mut from).cast(),
                    &mut len,
                )
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                return match e.kind() {
                    io::ErrorKind::WouldBlock => Ok(None),
                    io::ErrorKind::Interrupted => continue,
                    _ => Err(e),
                };
            }
            // What this port sent (the other side's frames forwarded) comes back as outgoing: not a frame to
            // forward again.
            if from.sll_pkttype != libc::PACKET_OUTGOING {
                return Ok(Some((n as usize).min(buf.len())));
            }
        }
    }

    fn send(&self, frame: &[u8]) -> io::Result<()> {
        // SAFETY: the buffer is valid for its length, on a valid descriptor.
        let n = unsafe { libc::send(self.fd.as_raw_fd(), frame.as_ptr().cast(), frame.len(), 0) };
        if n < 0 {
            let e = io::Error::last_os_error();
            // A full transmit queue drops the frame, as a switch would: the NIC's recovery is under test.
            if e.kind() != io::ErrorKind::WouldBlock {
                return Err(e);
            }
        }
        Ok(())
    }
}

/// Where the IPv4 header of an Ethernet frame starts (after up to two VLAN tags), if it carries IPv4.
pub fn ipv4_offset(frame: &[u8]) -> Option<usize> {
    let mut at = 12;
    for _ in 0..3 {
        let ethertype = u16::from_be_bytes([*frame.get(at)?, *frame.get(at + 1)?]);
        if ethertype == ETHERTYPE_IPV4 {
            return Some(at + 2);
        }
        if !ETHERTYPE_VLAN.contains(&ethertype) {
            return None;
        }
        at += 4;
    }
    None
}

/// A frame held back, and the port it goes out of.
struct Out {
    port: usize,
    frame: Vec<u8>,
}

/// The two ports, bound.
pub struct Bump {
    ports: [Port; 2],
    held: Holding<Out>,
    buf: Vec<u8>,
    /// Frames forwarded each way: [first to second, second to first].
    pub forwarded: [u64; 2],
}

impl Bump {
    pub fn open(first: &str, second: &str) -> Result<Bump, BumpError> {
        Ok(Bump {
            ports: [Port::open(first)?, Port::open(second)?],
            held: Holding::default(),
            buf: vec![0; FRAME_MAX],
            forwarded: [0; 2],
        })
    }

    /// Forwards both ways until `stop` says so, each RoCE frame decided by `injector`; every action a line
    /// of `log`.
    pub fn run(
        &mut self,
        injector: &mut Injector,
        log: &mut dyn io::Write,
        mut stop: impl FnMut() -> bool,
    ) -> Result<(), BumpError> {
        while !stop() {
            self.poll(1)?;
            for port in 0..2 {
                for _ in 0..BURST {
                    let Some(n) = self.ports[port]
                        .recv(&mut self.buf)
                        .map_err(|e| self.failed(port, e))?
                    else {
                        break;
                    };
                    self.take(port, n, injector, log)?;
                }
            }
            self.release(Instant::now(), None)?;
        }
        let ports = &self.ports;
        self.held
            .release_all(|o| ports[o.port].send(&o.frame).map_err(|e| (o.port, e)))
            .map_err(|(port, e)| self.failed(port, e))
    }

    /// Waits up to `ms` milliseconds for a frame on either port (what is held is let go at that pace: a
    /// `delay` is kept to the millisecond).
    fn poll(&self, ms: i32) -> Result<(), BumpError> {
        let mut fds = self.ports.each_ref().map(|p| libc::pollfd {
            fd: p.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        });
        // SAFETY: two pollfds, as counted.
        let rc = unsafe { libc::poll(fds.as_mut_ptr(), 2, ms) };
        if rc < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(self.failed(0, e));
            }
        }
        Ok(())
    }

    /// The frame of `n` bytes in the buffer, arrived on port `from`: decided, acted on, sent on.
    fn take(
        &mut self,
        from: usize,
        n: usize,
        injector: &mut Injector,
        log: &mut dyn io::Write,
    ) -> Result<(), BumpError> {
        let to = 1 - from;
        let frame = &mut self.buf[..n];
        let ip = ipv4_offset(frame);
        let decision = ip.map_or(Decision::Pass, |at| injector.decide(&frame[at..]));
        let Decision::Act { rule, action, seen } = decision else {
            let gone = ip
                .filter(|_| !self.held.is_empty())
                .and_then(|at| flow_of(&frame[at..]));
            return self.forward(to, n, gone);
        };
        let at = ip.unwrap_or(0);
        let ecn_before = match action {
            Action::Ce => edit::mark_ce(&mut frame[at..]),
            Action::Corrupt => {
                edit::corrupt(&mut frame[at..]);
                None
            }
            _ => None,
        };
        super::log_action(log, injector, rule, action, &seen, ecn_before)
            .map_err(BumpError::Log)?;
        let flow = (seen.src, seen.dst, seen.dest_qp);
        let now = Instant::now();
        let out = |frame: &[u8]| Out {
            port: to,
            frame: frame.to_vec(),
        };
        match action {
            Action::Drop => Ok(()),
            Action::Ce | Action::Corrupt => self.forward(to, n, Some(flow)),
            Action::Duplicate => {
                self.forward(to, n, Some(flow))?;
                self.forward(to, n, None)
            }
            Action::Delay(d) => {
                self.held.hold(out(&self.buf[..n]), now + d, None);
                Ok(())
            }
            Action::Reorder => {
                self.held
                    .hold(out(&self.buf[..n]), now + REORDER_HOLD, Some(flow));
                Ok(())
            }
        }
    }

    /// Sends the buffer's first `n` bytes out of port `to`; a frame of flow `gone` lets those reordered
    /// behind it go after it.
    fn forward(&mut self, to: usize, n: usize, gone: Option<HeldFlow>) -> Result<(), BumpError> {
        self.ports[to]
            .send(&self.buf[..n])
            .map_err(|e| self.failed(to, e))?;
        self.forwarded[1 - to] += 1;
        match gone {
            Some(f) if self.held.waits_for(f) => self.release(Instant::now(), Some(f)),
            _ => Ok(()),
        }
    }

    fn release(&mut self, now: Instant, gone: Option<HeldFlow>) -> Result<(), BumpError> {
        let ports = &self.ports;
        let forwarded = &mut self.forwarded;
        self.held
            .release(now, gone, |o| {
                forwarded[1 - o.port] += 1;
                ports[o.port].send(&o.frame).map_err(|e| (o.port, e))
            })
            .map_err(|(port, e)| self.failed(port, e))
    }

    fn failed(&self, port: usize, source: io::Error) -> BumpError {
        BumpError::Port {
            port: self.ports[port].name.clone(),
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv4_is_found_behind_vlan_tags_and_nothing_else_is() {
        let mut f = vec![0u8; 64];
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        assert_eq!(ipv4_offset(&f), Some(14));
        f[12..14].copy_from_slice(&[0x81, 0x00]);
        f[16..18].copy_from_slice(&[0x08, 0x00]);
        assert_eq!(ipv4_offset(&f), Some(18));
        f[16..18].copy_from_slice(&[0x81, 0x00]);
        f[20..22].copy_from_slice(&[0x08, 0x00]);
        assert_eq!(ipv4_offset(&f), Some(22));
        // IPv6, ARP, a frame too short for its EtherType
        f[12..14].copy_from_slice(&[0x86, 0xdd]);
        assert_eq!(ipv4_offset(&f), None);
        f[12..14].copy_from_slice(&[0x08, 0x06]);
        assert_eq!(ipv4_offset(&f), None);
        assert_eq!(ipv4_offset(&f[..13]), None);
    }
}
