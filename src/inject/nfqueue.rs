//! The injector on a Linux host's output path: an nftables table queues every UDP 4791 datagram the host
//! sends (Soft-RoCE's requests and responses alike leave through the output hook) to NFQUEUE, where
//! [`Injector`] decides and the verdict drops, changes, holds or copies it. The table goes when [`Queue`] is
//! dropped; `bypass` lets traffic through if rocescope dies without removing it.
use std::io::{self, Write};
use std::net::Ipv4Addr;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::hold::{HeldFlow, Holding, flow_of};
use super::rules::{Action, REORDER_HOLD};
use super::{Decision, Injector, edit};

/// The mark of the copies `duplicate` sends, which the table lets through instead of queueing them again.
const COPY_MARK: u32 = 0x5253_4350;

/// What went wrong on the path.
#[derive(Debug, thiserror::Error)]
pub enum NfqueueError {
    #[error("cannot run nft (inject needs nftables: apt-get install nftables)")]
    NoNft(#[source] io::Error),
    #[error(
        "nft refused the queue's table ({0}); is this root, with nf_tables and nfnetlink_queue?"
    )]
    Table(String),
    #[error("cannot open NFQUEUE {queue} (root, and the nfnetlink_queue module)")]
    Open {
        queue: u16,
        #[source]
        source: io::Error,
    },
    #[error("NFQUEUE {queue}")]
    Queue {
        queue: u16,
        #[source]
        source: io::Error,
    },
    #[error("cannot send the duplicate")]
    Copy(#[source] io::Error),
    #[error("cannot write the log")]
    Log(#[source] io::Error),
}

/// Where the injector stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Path {
    pub queue: u16,
    /// Only datagrams leaving through this device (all when `None`).
    pub device: Option<String>,
}

impl Path {
    fn table(&self) -> String {
        format!("rocescope_inject_{}", self.queue)
    }

    fn script(&self) -> String {
        let oif = self
            .device
            .as_ref()
            .map(|d| format!("oifname \"{d}\" "))
            .unwrap_or_default();
        format!(
            "table inet {t} {{\n chain output {{\n  type filter hook output priority 0; policy accept;\n  \
             meta mark {COPY_MARK:#x} accept\n  {oif}udp dport {port} queue num {q} bypass\n }}\n}}\n",
            t = self.table(),
            port = parsers::udp::ROCEV2_PORT,
            q = self.queue,
        )
    }
}

fn nft(script: &str) -> Result<(), NfqueueError> {
    let mut child = Command::new("nft")
        .args(["-f", "-"])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(NfqueueError::NoNft)?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(script.as_bytes())
            .map_err(NfqueueError::NoNft)?;
    }
    let out = child.wait_with_output().map_err(NfqueueError::NoNft)?;
    if out.status.success() {
        return Ok(());
    }
    let why = String::from_utf8_lossy(&out.stderr);
    let why = why
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    Err(NfqueueError::Table(why.to_string()))
}

/// The queue, bound, with its nftables table in place.
pub struct Queue {
    path: Path,
    queue: nfq::Queue,
    held: Holding<nfq::Message>,
}

impl Queue {
    pub fn open(path: Path) -> Result<Queue, NfqueueError> {
        let open = |source| NfqueueError::Open {
            queue: path.queue,
            source,
        };
        let mut queue = nfq::Queue::open().map_err(open)?;
        queue.bind(path.queue).map_err(open)?;
        queue.set_nonblocking(true);
        // Before the table: a packet queued with nobody bound would pass (bypass) unjudged.
        nft(&path.script())?;
        Ok(Queue {
            path,
            queue,
            held: Holding::default(),
        })
    }

    /// Takes the packets until `stop` says so, each decided by `injector`; every action a line of `log`.
    pub fn run(
        &mut self,
        injector: &mut Injector,
        log: &mut dyn Write,
        mut stop: impl FnMut() -> bool,
    ) -> Result<(), NfqueueError> {
        let q = self.path.queue;
        let failed = |source| NfqueueError::Queue { queue: q, source };
        loop {
            match self.queue.recv() {
                Ok(msg) => self.take(msg, injector, log)?,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.release(Instant::now(), None)?;
                    if stop() {
                        break;
                    }
                    let pause = if self.held.is_empty() { 1000 } else { 100 };
                    std::thread::sleep(Duration::from_micros(pause));
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(failed(e)),
            }
        }
        // What is still held goes now.
        let queue = &mut self.queue;
        self.held
            .release_all(|msg| queue.verdict(msg))
            .map_err(failed)
    }

    fn take(
        &mut self,
        mut msg: nfq::Message,
        injector: &mut Injector,
        log: &mut dyn Write,
    ) -> Result<(), NfqueueError> {
        let decision = injector.decide(msg.get_payload());
        let Decision::Act { rule, action, seen } = decision else {
            // A packet let through may be the one a reordered packet waits for.
            let flow = (!self.held.is_empty())
                .then(|| flow_of(msg.get_payload()))
                .flatten();
            msg.set_verdict(nfq::Verdict::Accept);
            return self.verdict(msg, flow);
        };
        let flow = (seen.src, seen.dst, seen.dest_qp);
        let ecn_before = match action {
            Action::Ce => edit::mark_ce(msg.get_payload_mut()),
            Action::Corrupt => {
                edit::corrupt(msg.get_payload_mut());
                None
            }
            _ => None,
        };
        super::log_action(log, injector, rule, action, &seen, ecn_before)
            .map_err(NfqueueError::Log)?;
        let now = Instant::now();
        match action {
            Action::Drop => {
                msg.set_verdict(nfq::Verdict::Drop);
                self.verdict(msg, None)
            }
            Action::Ce | Action::Corrupt => {
                msg.set_verdict(nfq::Verdict::Accept);
                self.verdict(msg, Some(flow))
            }
            Action::Duplicate => {
                let copy = msg.get_payload().to_vec();
                msg.set_verdict(nfq::Verdict::Accept);
                self.verdict(msg, Some(flow))?;
                self.send_copy(&copy, seen.src, seen.dst)
            }
            Action::Delay(d) => {
                msg.set_verdict(nfq::Verdict::Accept);
                self.held.hold(msg, now + d, None);
                Ok(())
            }
            Action::Reorder => {
                msg.set_verdict(nfq::Verdict::Accept);
                self.held.hold(msg, now + REORDER_HOLD, Some(flow));
                Ok(())
            }
        }
    }

    /// Gives `msg` its verdict; a packet of `flow` that goes lets the packets held for reordering behind it
    /// go after it.
    fn verdict(&mut self, msg: nfq::Message, flow: Option<HeldFlow>) -> Result<(), NfqueueError> {
        self.queue.verdict(msg).map_err(|e| self.failed(e))?;
        match flow {
            Some(f) if self.held.waits_for(f) => self.release(Instant::now(), Some(f)),
            _ => Ok(()),
        }
    }

    /// The held packets due at `now`, and those reordered behind a packet of `gone` that just went.
    fn release(&mut self, now: Instant, gone: Option<HeldFlow>) -> Result<(), NfqueueError> {
        let q = self.path.queue;
        let queue = &mut self.queue;
        self.held
            .release(now, gone, |msg| queue.verdict(msg))
            .map_err(|source| NfqueueError::Queue { queue: q, source })
    }

    fn failed(&self, source: io::Error) -> NfqueueError {
        NfqueueError::Queue {
            queue: self.path.queue,
            source,
        }
    }

    /// Sends a copy of `datagram` (a raw IPv4 socket, the header as it is), marked so that the table lets
    /// it through, and bound to its source address: routed as the original is (a host's policy rules may
    /// pick the device by the source; unbound, a copy to a local address would take the loopback).
    fn send_copy(
        &mut self,
        datagram: &[u8],
        src: Ipv4Addr,
        dst: Ipv4Addr,
    ) -> Result<(), NfqueueError> {
        use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
        let failed = || NfqueueError::Copy(io::Error::last_os_error());
        // SAFETY: socket(2) returns a new descriptor or -1.
        let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_RAW, libc::IPPROTO_RAW) };
        if fd < 0 {
            return Err(failed());
        }
        // SAFETY: fd is a descriptor just opened and owned by no one else; it closes when dropped.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let mark = COPY_MARK;
        // SAFETY: a u32 option value of its size, on a valid descriptor.
        let rc = unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_MARK,
                (&raw const mark).cast(),
                std::mem::size_of::<u32>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(failed());
        }
        let addr = |a: Ipv4Addr| libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: 0,
            sin_addr: libc::in_addr {
                s_addr: u32::from(a).to_be(),
            },
            sin_zero: [0; 8],
        };
        let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        let (from, to) = (addr(src), addr(dst));
        // SAFETY: a sockaddr_in of the length given, on a valid descriptor.
        if unsafe { libc::bind(fd.as_raw_fd(), (&raw const from).cast(), len) } != 0 {
            return Err(failed());
        }
        // SAFETY: the buffer and the address are valid for the lengths given.
        let sent = unsafe {
            libc::sendto(
                fd.as_raw_fd(),
                datagram.as_ptr().cast(),
                datagram.len(),
                0,
                (&raw const to).cast(),
                len,
            )
        };
        if sent < 0 {
            return Err(failed());
        }
        Ok(())
    }
}

impl Drop for Queue {
    fn drop(&mut self) {
        let _ = nft(&format!("delete table inet {}\n", self.path.table()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_queues_roce_and_lets_the_copies_through() {
        let p = Path {
            queue: 3,
            device: Some("eth0".into()),
        };
        assert_eq!(
            p.script(),
            "table inet rocescope_inject_3 {\n chain output {\n  type filter hook output priority 0; \
             policy accept;\n  meta mark 0x52534350 accept\n  oifname \"eth0\" udp dport 4791 queue num 3 \
             bypass\n }\n}\n"
        );
    }
}
