//! The out-of-band exchange of `gen client` and `gen server`: one JSON object per line over TCP.
//!
//! client -> Hello (the workload)           server -> Welcome (its QPs, GIDs, R_Keys, buffer addresses)
//! client -> Connect (its QPs, MTU, ...)    server -> Ready (its QPs are in RTS)
//!           ... the RDMA traffic ...
//! client -> Done (messages posted)         server -> Summary (what it received and found in memory)
//! Either side may send Error instead and close. Lines are bounded and every number is checked: the peer
//! is not trusted. The messages themselves are records (src/generator/records.rs).

use std::io::{BufRead, Read, Write};

use super::records::{Connect, Done, Hello, Msg, Op, Welcome};

pub const VERSION: u32 = 1;
/// Longest line accepted (64 QPs of endpoints fit in well under this).
pub const MAX_LINE: u64 = 256 * 1024;
/// Most memory a server registers for one run (all QPs).
pub const MAX_SERVER_BYTES: u64 = 1 << 30;
/// Most message slots (and receives posted) per server QP.
pub const MAX_SLOTS: u64 = 4096;

/// A message whose numbers this end refuses: the peer is not trusted, every field is checked.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum Invalid {
    /// The peer runs another rocescope: nothing else in its message can be read the same way.
    #[error(
        "protocol version {got} (this server speaks {VERSION}): use the same rocescope on both hosts"
    )]
    Version { got: u32 },
    #[error(
        "a task out of range (its peer, -n or --duration, --timeout, --qp-timeout, --retry-count, --rnr-retry \
         or --mtu)"
    )]
    Task,
    #[error("message size {size} is out of range")]
    Size { size: u32 },
    #[error("{qps} QPs x depth {depth} is out of range (1..64, 1..4096)")]
    QpsOrDepth { qps: u32, depth: u32 },
    #[error("{slots} slots per QP is out of range ({depth}..{MAX_SLOTS})")]
    Slots { slots: u64, depth: u32 },
    #[error("{bytes} bytes of buffers asked for; this server registers at most {MAX_SERVER_BYTES}")]
    Bytes { bytes: u64 },
    /// `whose`: "its QP" (the server's), "a client QP".
    #[error("{whose}: QPN {qpn:#x} / PSN {psn:#x} do not fit in 24 bits")]
    Not24Bits {
        whose: &'static str,
        qpn: u32,
        psn: u32,
    },
    #[error("it offered {offered} QPs for {asked}")]
    QpsOffered { offered: usize, asked: usize },
    #[error("active MTU {mtu} is not an InfiniBand MTU")]
    ActiveMtu { mtu: u32 },
    #[error("{client} client QPs for {server} server QPs")]
    ClientQps { client: usize, server: usize },
    #[error("path MTU {mtu} / rd_atomic {rd_atomic} out of range")]
    MtuOrRdAtomic { mtu: u32, rd_atomic: u8 },
    #[error("QP timeout {timeout} / retry count {retry} / RNR retry {rnr_retry} out of range")]
    Retries {
        timeout: u8,
        retry: u8,
        rnr_retry: u8,
    },
    #[error("done: wrong number of QPs")]
    DoneQps,
    #[error("done: more messages completed than posted")]
    DoneMoreThanPosted,
    #[error("the peer sent '{text}' as a GID")]
    Gid { text: String },
}

/// Why a message could not be sent or received; the peer's own Error is one of them.
#[derive(Debug, thiserror::Error)]
pub enum OobError {
    #[error("cannot encode a message")]
    Encode(#[source] serde_json::Error),
    #[error("cannot send to the peer")]
    Send(#[source] std::io::Error),
    /// The read timed out (--timeout).
    #[error("the peer said nothing in time")]
    Silent,
    #[error("cannot read from the peer")]
    Read(#[source] std::io::Error),
    #[error("the peer closed the connection")]
    Closed,
    #[error("the peer closed the connection in the middle of a message")]
    ClosedMidMessage,
    #[error("the peer sent a line longer than {MAX_LINE} bytes")]
    LineTooLong,
    #[error("the peer sent something that is not a rocescope gen message")]
    NotAMessage(#[source] serde_json::Error),
    /// The peer gave up and said why (its Error message).
    #[error("the peer reported: {message}")]
    PeerReported { message: String },
    #[error("the peer sent '{got}' where '{due}' was due")]
    Unexpected { got: String, due: &'static str },
    #[error(transparent)]
    Invalid(#[from] Invalid),
}

impl Hello {
    /// The server's checks of a client's request; bounds what one run may allocate.
    pub fn validate(&self) -> Result<(), Invalid> {
        if self.version != VERSION {
            return Err(Invalid::Version { got: self.version });
        }
        let size_ok = if self.op.is_atomic() {
            self.size == 8
        } else {
            (1..=1 << 30).contains(&self.size)
        };
        if !size_ok {
            return Err(Invalid::Size { size: self.size });
        }
        if !(1..=64).contains(&self.qps) || !(1..=4096).contains(&self.depth) {
            return Err(Invalid::QpsOrDepth {
                qps: self.qps,
                depth: self.depth,
            });
        }
        if self.slots < u64::from(self.depth) || self.slots > MAX_SLOTS {
            return Err(Invalid::Slots {
                slots: self.slots,
                depth: self.depth,
            });
        }
        let bytes = u64::from(self.size) * self.slots * u64::from(self.qps);
        if bytes > MAX_SERVER_BYTES {
            return Err(Invalid::Bytes { bytes });
        }
        Ok(())
    }
}

pub const MTUS: [u32; 5] = [256, 512, 1024, 2048, 4096];

fn check_qp(whose: &'static str, qpn: u32, psn: u32) -> Result<(), Invalid> {
    if qpn > 0xff_ffff || psn > 0xff_ffff {
        return Err(Invalid::Not24Bits { whose, qpn, psn });
    }
    Ok(())
}

impl Welcome {
    /// The client's checks of the server's offer (`qps` QPs asked for).
    pub fn validate(&self, qps: usize) -> Result<(), Invalid> {
        if self.qps.len() != qps {
            return Err(Invalid::QpsOffered {
                offered: self.qps.len(),
                asked: qps,
            });
        }
        for q in &self.qps {
            let e = &q.endpoint;
            check_qp("its QP", e.qpn, e.sq_psn)?;
            if !MTUS.contains(&e.active_mtu) {
                return Err(Invalid::ActiveMtu { mtu: e.active_mtu });
            }
        }
        Ok(())
    }
}

impl Connect {
    /// The server's checks of the client's QPs and the parameters it chose (`qps` server QPs).
    pub fn validate(&self, qps: usize) -> Result<(), Invalid> {
        if self.qps.len() != qps {
            return Err(Invalid::ClientQps {
                client: self.qps.len(),
                server: qps,
            });
        }
        if !MTUS.contains(&self.mtu) || !(1..=16).contains(&self.rd_atomic) {
            return Err(Invalid::MtuOrRdAtomic {
                mtu: self.mtu,
                rd_atomic: self.rd_atomic,
            });
        }
        if self.qp_timeout > 31 || self.retry_count > 7 || self.rnr_retry > 7 {
            return Err(Invalid::Retries {
                timeout: self.qp_timeout,
                retry: self.retry_count,
                rnr_retry: self.rnr_retry,
            });
        }
        for q in &self.qps {
            check_qp("a client QP", q.qpn, q.psn)?;
        }
        Ok(())
    }
}

impl Done {
    /// Per QP (`qps` of them): messages completed never exceed those posted.
    pub fn validate(&self, qps: usize) -> Result<(), Invalid> {
        if self.posted.len() != qps || self.completed.len() != qps {
            return Err(Invalid::DoneQps);
        }
        if self.posted.iter().zip(&self.completed).any(|(p, c)| c > p) {
            return Err(Invalid::DoneMoreThanPosted);
        }
        Ok(())
    }
}

/// Slots per server QP for a workload: room for twice the window (the server reposts receives behind the
/// client) and, for WRITE/READ, up to 64 MiB or -n messages so that more of them are checked.
pub fn slots_for(op: Op, size: u32, depth: u32, iters: Option<u64>) -> u64 {
    let window = 2 * u64::from(depth);
    let want = match op {
        Op::Write | Op::Read => (64 << 20) / u64::from(size.max(1)),
        _ => window,
    };
    let want = iters.map_or(want, |n| want.min(n));
    want.max(window).min(MAX_SLOTS).max(u64::from(depth))
}

/// Sends one message as a line.
pub fn send(w: &mut impl Write, m: &Msg) -> Result<(), OobError> {
    let mut line = serde_json::to_vec(m).map_err(OobError::Encode)?;
    line.push(b'\n');
    w.write_all(&line)
        .and_then(|_| w.flush())
        .map_err(OobError::Send)
}

/// Reads one message; the peer closing the connection, an overlong line or bad JSON is an error.
pub fn recv<R: BufRead>(r: &mut R) -> Result<Msg, OobError> {
    let mut line = Vec::new();
    let n = Read::take(&mut *r, MAX_LINE + 1)
        .read_until(b'\n', &mut line)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => OobError::Silent,
            _ => OobError::Read(e),
        })?;
    if n == 0 {
        return Err(OobError::Closed);
    }
    if line.last() != Some(&b'\n') {
        return Err(if n as u64 > MAX_LINE {
            OobError::LineTooLong
        } else {
            OobError::ClosedMidMessage
        });
    }
    serde_json::from_slice(&line).map_err(OobError::NotAMessage)
}

/// Reads the message `due` names, turning the peer's Error into ours.
pub fn expect<T>(
    r: &mut impl BufRead,
    due: &'static str,
    pick: impl FnOnce(Msg) -> Option<T>,
) -> Result<T, OobError> {
    match recv(r)? {
        Msg::Error { message } => Err(OobError::PeerReported { message }),
        m => {
            let got = serde_json::to_value(&m)
                .ok()
                .and_then(|v| v.get("msg").and_then(|s| s.as_str()).map(str::to_string))
                .unwrap_or_default();
            pick(m).ok_or(OobError::Unexpected { got, due })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hello() -> Hello {
        Hello {
            version: VERSION,
            op: Op::Write,
            size: 4096,
            qps: 2,
            depth: 16,
            slots: 32,
            iters: Some(1000),
        }
    }

    #[test]
    fn messages_round_trip_as_lines() {
        let mut wire = Vec::new();
        send(&mut wire, &Msg::Hello(hello())).unwrap();
        send(&mut wire, &Msg::Ready).unwrap();
        assert_eq!(wire.iter().filter(|&&b| b == b'\n').count(), 2);
        assert!(wire.starts_with(b"{\"msg\":\"hello\",\"version\":1,\"op\":\"write\""));
        let mut r = &wire[..];
        match recv(&mut r).unwrap() {
            Msg::Hello(h) => assert_eq!((h.size, h.qps, h.slots), (4096, 2, 32)),
            m => panic!("{m:?}"),
        }
        assert!(matches!(recv(&mut r).unwrap(), Msg::Ready));
        assert!(matches!(recv(&mut r).unwrap_err(), OobError::Closed));
    }

    #[test]
    fn hostile_lines_are_refused_in_one_line() {
        let long = vec![b'x'; MAX_LINE as usize + 10];
        let e = recv(&mut &long[..]).unwrap_err().to_string();
        assert_eq!(
            e,
            format!("the peer sent a line longer than {MAX_LINE} bytes")
        );
        let e = recv(&mut &b"{\"msg\":\"ready\""[..])
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "the peer closed the connection in the middle of a message"
        );
        for bad in [
            &b"GET / HTTP/1.0\n"[..],
            b"{\"msg\":\"launch\"}\n",
            b"{\"msg\":\"hello\",\"size\":-1}\n",
        ] {
            let e = recv(&mut &bad[..]).unwrap_err();
            assert!(matches!(e, OobError::NotAMessage(_)), "{e}");
        }
        let mut r = &b"{\"msg\":\"error\",\"message\":\"no device\"}\n{\"msg\":\"ready\"}\n"[..];
        assert_eq!(
            expect(&mut r, "welcome", |_| Some(()))
                .unwrap_err()
                .to_string(),
            "the peer reported: no device"
        );
        assert_eq!(
            expect(&mut r, "welcome", |m| matches!(m, Msg::Welcome(_))
                .then_some(()))
            .unwrap_err()
            .to_string(),
            "the peer sent 'ready' where 'welcome' was due"
        );
    }

    #[test]
    fn the_server_bounds_what_a_client_may_ask_for() {
        assert_eq!(hello().validate(), Ok(()));
        let refuse = |f: fn(&mut Hello)| {
            let mut h = hello();
            f(&mut h);
            h.validate().unwrap_err().to_string()
        };
        assert!(refuse(|h| h.version = 2).starts_with("protocol version 2"));
        let mut h = hello();
        h.version = 2;
        assert_eq!(h.validate(), Err(Invalid::Version { got: 2 }));
        assert_eq!(refuse(|h| h.size = 0), "message size 0 is out of range");
        assert_eq!(
            refuse(|h| h.op = Op::FetchAdd),
            "message size 4096 is out of range"
        );
        assert!(refuse(|h| h.qps = 65).contains("out of range"));
        assert!(refuse(|h| h.slots = 8).contains("out of range (16..4096)"));
        // 64 QPs x 4096 slots x 1 MiB: far more than the server registers
        let e = refuse(|h| {
            h.qps = 64;
            h.slots = 4096;
            h.size = 1 << 20;
        });
        assert_eq!(
            e,
            format!(
                "{} bytes of buffers asked for; this server registers at most {MAX_SERVER_BYTES}",
                64u64 << 32
            )
        );
    }

    #[test]
    fn offers_and_answers_out_of_range_are_refused() {
        use crate::generator::records::{ClientQp, Endpoint, ServerQp};
        let endpoint = |qpn, psn, mtu| Endpoint {
            device: "rxe0".into(),
            port: 1,
            netdev: None,
            netdev_mtu: None,
            active_mtu: mtu,
            gid_index: 1,
            gid: "::ffff:10.0.0.2".into(),
            gid_type: "RoCE v2".into(),
            gid_choice: String::new(),
            ip: None,
            qpn,
            sq_psn: psn,
            rq_psn: 0,
        };
        let welcome = |qpn, psn, mtu| Welcome {
            qps: vec![ServerQp {
                endpoint: endpoint(qpn, psn, mtu),
                addr: 0,
                rkey: 0,
            }],
            max_rd_atom: 16,
        };
        assert_eq!(welcome(0x11, 0xff_ffff, 1024).validate(1), Ok(()));
        assert_eq!(
            welcome(0x11, 5, 1024).validate(2).unwrap_err().to_string(),
            "it offered 1 QPs for 2"
        );
        // an MTU of 0 would divide by zero when the client counts packets per message
        assert_eq!(
            welcome(0x11, 5, 0).validate(1).unwrap_err().to_string(),
            "active MTU 0 is not an InfiniBand MTU"
        );
        assert!(
            welcome(0x100_0000, 5, 1024)
                .validate(1)
                .unwrap_err()
                .to_string()
                .contains("24 bits")
        );
        let connect = |mtu, retry| Connect {
            mtu,
            rd_atomic: 1,
            qp_timeout: 17,
            retry_count: retry,
            rnr_retry: 7,
            tclass: 0,
            qps: vec![ClientQp {
                qpn: 0x12,
                psn: 0x1000,
                gid: "::ffff:10.0.0.1".into(),
            }],
        };
        assert_eq!(connect(4096, 7).validate(1), Ok(()));
        assert!(
            connect(3000, 7)
                .validate(1)
                .unwrap_err()
                .to_string()
                .starts_with("path MTU 3000")
        );
        assert!(
            connect(1024, 8)
                .validate(1)
                .unwrap_err()
                .to_string()
                .contains("retry count 8")
        );
        // a client claiming more completions than posts would send the server's memory check past its slots
        let done = |p: u64, c: u64| Done {
            posted: vec![p],
            completed: vec![c],
        };
        assert_eq!(done(32, 32).validate(1), Ok(()));
        assert_eq!(
            done(0, u64::MAX).validate(1).unwrap_err().to_string(),
            "done: more messages completed than posted"
        );
        assert!(done(1, 1).validate(2).is_err());
    }

    #[test]
    fn slots_cover_twice_the_window_and_up_to_64_mib_of_writes() {
        // SEND: receives for two windows
        assert_eq!(slots_for(Op::Send, 4096, 16, Some(1000)), 32);
        // WRITE: 64 MiB / 4 KiB = 16384, capped at 4096 slots, at most -n
        assert_eq!(slots_for(Op::Write, 4096, 16, None), 4096);
        assert_eq!(slots_for(Op::Write, 4096, 16, Some(100)), 100);
        assert_eq!(slots_for(Op::Write, 1 << 20, 16, Some(1000)), 64);
        // never fewer than two windows, even for -n 1
        assert_eq!(slots_for(Op::Read, 65536, 128, Some(1)), 256);
        assert_eq!(slots_for(Op::FetchAdd, 8, 4096, None), 4096);
    }
}
