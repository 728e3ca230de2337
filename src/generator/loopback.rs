//! `gen loopback`: requester QP on one device, responder QP on another, both in this process (no
//! out-of-band exchange): rxe0 and rxe1 on two cabled NICs, or the veth pair of `rocescope lab up`.

use std::sync::atomic::AtomicBool;

use super::run::{self, Pair, Peer, Report, Setup};
use sideway::ibverbs::queue_pair::QueuePair;

use super::verbs::{self, ConnectParams, Queues, connect, open_side};
use super::{Fault, LoopbackArgs, Op};

/// Checks the arguments every requester shares; returns the message size on the wire and the buffer length
/// of `slots` messages.
pub fn work_sizes(w: &super::WorkArgs, slots: u64) -> Result<(u32, usize), String> {
    if !(w.timeout > 0.0 && w.timeout.is_finite()) {
        return Err(format!(
            "--timeout {} is not a positive number of seconds",
            w.timeout
        ));
    }
    if w.fault.is_some() && w.duration.is_some() {
        return Err("--fault needs -n (the faulty message is the last one)".to_string());
    }
    if w.fault == Some(Fault::BadRkey) && w.op == Op::Send {
        return Err(
            "--fault bad-rkey needs --op write, write-imm or read (a SEND carries no R_Key)"
                .to_string(),
        );
    }
    // the atomics move one 8-byte word: the remote one at offset 0 of the responder's buffer (8-byte
    // aligned), the original values into the requester's slots
    let size32 = if w.op.is_atomic() { 8 } else { w.size };
    let buf_len = (size32 as u64)
        .checked_mul(slots)
        .filter(|&l| l <= 1 << 32)
        .ok_or_else(|| {
            format!(
                "-s {} x {slots} message slots is more than 4 GiB of buffers",
                w.size
            )
        })?;
    Ok((size32, buf_len as usize))
}

/// One outstanding READ or atomic per message in flight, within what both devices take (at most 16), and
/// at least 1: with 0, READs hang silently (no packet, no completion, the QP still in RTS).
pub fn rd_atomic(depth: u32, a: u32, b: u32) -> u8 {
    depth.min(16).min(a).min(b).max(1) as u8
}

pub fn run(args: &LoopbackArgs, stop: &AtomicBool) -> Result<Report, String> {
    let w = &args.work;
    let (_, buf_len) = work_sizes(w, u64::from(w.depth))?;
    let list = verbs::devices()?;
    if args.device == args.peer_device {
        return Err(format!(
            "--peer-device must differ from -d ({}): rxe loops a device's traffic to itself inside the \
             driver, nothing would reach the wire",
            args.device
        ));
    }
    let q = Queues {
        send: w.depth,
        recv: w.depth,
        cqe: w.depth * 2 + 2,
    };
    // one device context, PD, MR, CQs and QP per side of each QP pair
    let mut sides = Vec::with_capacity(w.qps as usize);
    for _ in 0..w.qps {
        let a = open_side(&list, &args.device, &args.port, buf_len, &q)?;
        let b = open_side(&list, &args.peer_device, &args.port, buf_len, &q)?;
        sides.push((a, b));
    }
    let (a, b) = (&sides[0].0, &sides[0].1);

    // path MTU: the ports' active MTU unless given; never more than the network devices carry
    let (mtu, mtu_source) = match w.mtu {
        Some(m) => (m, "--mtu".to_string()),
        None => (
            a.active_mtu.min(b.active_mtu),
            format!(
                "active MTU of {} ({}) and {} ({})",
                a.name, a.active_mtu, b.name, b.active_mtu
            ),
        ),
    };
    for s in [a, b] {
        verbs::check_netdev_mtu(&s.name, s.gid.netdev.as_deref(), s.netdev_mtu, mtu)?;
    }
    let setup = Setup {
        port: args.port.ib_port,
        mtu,
        mtu_source,
        rd_atomic: rd_atomic(w.depth, a.max_rd_atom, b.max_rd_atom),
    };
    let p = ConnectParams {
        port: args.port.ib_port,
        mtu,
        timeout: w.qp_timeout,
        rd_atomic: setup.rd_atomic,
        tclass: w.tclass,
        retry_count: w.retry_count,
        rnr_retry: w.rnr_retry,
    };
    let limit = if w.duration.is_some() {
        u64::MAX
    } else {
        w.iters
    };
    let mut pairs = Vec::with_capacity(sides.len());
    for (mut a, mut b) in sides {
        let (aq, bq) = (a.qp.qp_number(), b.qp.qp_number());
        let (ag, bg) = (a.gid.gid, b.gid.gid);
        let (apsn, bpsn) = (a.sq_psn, b.sq_psn);
        connect(&mut a, bq, &bg, bpsn, &p)?;
        connect(&mut b, aq, &ag, apsn, &p)?;
        let dst_ip = b.gid.ip.map(|i| i.to_string());
        pairs.push(Pair::new(
            a,
            Peer::Local(b),
            bq,
            bpsn,
            dst_ip,
            limit,
            w.depth,
        ));
    }
    run::run(&mut pairs, w, &setup, stop)
}
