//! Sends a capture's frames out of a network interface as fast as this machine can, or at a rate: the traffic
//! generator of benches/capture.sh beyond tcpreplay's ceiling (about 410,000 frames/s here). The frames are
//! read into memory first, then sent with sendmmsg(2) on an AF_PACKET socket that bypasses the qdisc
//! (PACKET_QDISC_BYPASS), 64 a call, the whole file LOOPS times; with `--pps`, each call waits for its time.
//!
//!   cargo run --release --example blast -- --iface rsa [--pps N] [--loops N] FILE.pcap
//!
//! Prints one line: `sent N frames in S s: R frames/s (F failed)`. Linux only, root (or CAP_NET_RAW).
#[cfg(target_os = "linux")]
fn main() {
    if let Err(e) = linux::run() {
        eprintln!("blast: {e}");
        std::process::exit(1);
    }
}

#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!("blast: Linux only");
    std::process::exit(1);
}

#[cfg(target_os = "linux")]
mod linux {
    use std::os::fd::{AsRawFd, OwnedFd};
    use std::time::{Duration, Instant};

    use pcap_parser::traits::PcapReaderIterator;
    use pcap_parser::{LegacyPcapReader, PcapBlockOwned, PcapError};

    /// Frames per sendmmsg call.
    const BATCH: usize = 64;

    struct Args {
        iface: String,
        pps: Option<f64>,
        loops: u64,
        file: String,
    }

    fn args() -> Result<Args, String> {
        let mut it = std::env::args().skip(1);
        let (mut iface, mut pps, mut loops, mut file) = (None, None, 1, None);
        while let Some(a) = it.next() {
            let mut value = || it.next().ok_or(format!("{a} needs a value"));
            match a.as_str() {
                "--iface" => iface = Some(value()?),
                "--pps" => pps = Some(value()?.parse().map_err(|_| "--pps: a number")?),
                "--loops" => loops = value()?.parse().map_err(|_| "--loops: a number")?,
                _ if file.is_none() => file = Some(a),
                _ => return Err(format!("unexpected {a}")),
            }
        }
        Ok(Args {
            iface: iface.ok_or("--iface IFACE is needed")?,
            pps,
            loops,
            file: file.ok_or("a pcap file is needed")?,
        })
    }

    /// The file's frames, each whole.
    fn frames(path: &str) -> Result<Vec<Vec<u8>>, String> {
        let f = std::fs::File::open(path).map_err(|e| format!("{path}: {e}"))?;
        let mut reader = LegacyPcapReader::new(1 << 20, f)
            .map_err(|e| format!("{path}: not a pcap file ({e:?})"))?;
        let mut out = Vec::new();
        loop {
            match reader.next() {
                Ok((used, block)) => {
                    if let PcapBlockOwned::Legacy(b) = block {
                        out.push(b.data.to_vec());
                    }
                    reader.consume(used);
                }
                Err(PcapError::Eof) => break,
                Err(PcapError::Incomplete(_)) => {
                    reader.refill().map_err(|e| format!("{path}: {e:?}"))?
                }
                Err(e) => return Err(format!("{path}: {e:?}")),
            }
        }
        Ok(out)
    }

    /// A packet socket on `iface` that only sends, past the qdisc.
    fn socket(iface: &str) -> Result<OwnedFd, String> {
        let (fd, _) =
            rocescope::inject::bump::bound_socket(iface, 0, 0).map_err(|e| e.to_string())?;
        let one: libc::c_int = 1;
        // SAFETY: an int option of its size on a valid descriptor.
        unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_QDISC_BYPASS,
                (&raw const one).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        Ok(fd)
    }

    pub fn run() -> Result<(), String> {
        let a = args()?;
        let frames = frames(&a.file)?;
        if frames.is_empty() {
            return Err(format!("{}: no frames", a.file));
        }
        let fd = socket(&a.iface)?;
        let total = frames.len() as u64 * a.loops;
        let mut iov: Vec<libc::iovec> = frames
            .iter()
            .map(|f| libc::iovec {
                iov_base: f.as_ptr() as *mut libc::c_void,
                iov_len: f.len(),
            })
            .collect();
        // SAFETY: mmsghdr is plain data.
        let mut msgs: Vec<libc::mmsghdr> =
            (0..BATCH).map(|_| unsafe { std::mem::zeroed() }).collect();
        let (mut sent, mut failed) = (0u64, 0u64);
        let start = Instant::now();
        while sent + failed < total {
            let at = ((sent + failed) % frames.len() as u64) as usize;
            let n = BATCH
                .min(frames.len() - at)
                .min((total - sent - failed) as usize);
            for (m, v) in msgs.iter_mut().zip(&mut iov[at..at + n]) {
                m.msg_hdr.msg_iov = v;
                m.msg_hdr.msg_iovlen = 1;
            }
            if let Some(pps) = a.pps {
                let due = Duration::from_secs_f64((sent + failed) as f64 / pps);
                if let Some(wait) = due.checked_sub(start.elapsed()) {
                    std::thread::sleep(wait);
                }
            }
            // SAFETY: n initialised headers, each pointing at one live frame.
            let rc = unsafe { libc::sendmmsg(fd.as_raw_fd(), msgs.as_mut_ptr(), n as u32, 0) };
            match rc {
                r if r > 0 => sent += r as u64,
                _ => failed += 1,
            }
        }
        let secs = start.elapsed().as_secs_f64();
        println!(
            "sent {sent} frames in {secs:.3} s: {:.0} frames/s ({failed} failed)",
            sent as f64 / secs
        );
        Ok(())
    }
}
