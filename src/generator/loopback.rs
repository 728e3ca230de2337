//! `gen loopback`: requester QP on one device, responder QP on another, both in this process (no
//! out-of-band exchange): rxe0 and rxe1 on two cabled NICs, or the veth pair of `rocescope lab up`.

use std::sync::atomic::AtomicBool;

use sideway::ibverbs::queue_pair::QueuePair;

use super::config::LoopbackConfig;
use super::plan;
use super::records::{Fault, Report};
use super::run::{self, Pair, Peer, Setup};
use super::verbs::{self, ConnectParams, Queues, Side, VerbsError, connect, open_side};

pub fn run(cfg: &LoopbackConfig, stop: &AtomicBool) -> anyhow::Result<Report> {
    let w = &cfg.work;
    w.check_fault(true)?;
    let buf_len = w.buffer_len(u64::from(w.depth))?;
    let list = verbs::devices()?;
    if cfg.device == cfg.peer_device {
        anyhow::bail!(
            "--peer-device must differ from -d ({}): rxe loops a device's traffic to itself inside the \
             driver, nothing would reach the wire",
            cfg.device
        );
    }
    let q = Queues {
        send: w.depth,
        recv: w.depth,
        cqe: w.depth * 2 + 2,
    };
    // one device context, PD, MR, CQs and QP per side of each QP pair
    let mut sides = Vec::with_capacity(w.qps as usize);
    for _ in 0..w.qps {
        let a = open_side(&list, &cfg.device, &cfg.port, buf_len, &q)?;
        let b = open_side(&list, &cfg.peer_device, &cfg.port, buf_len, &q)?;
        sides.push((a, b));
    }
    let (a, b) = (&sides[0].0, &sides[0].1);
    let (mtu, mtu_source) = plan::path_mtu(w.mtu, &[a.path_end(), b.path_end()])?;
    let setup = Setup {
        port: cfg.port.ib_port,
        mtu,
        mtu_source,
        rd_atomic: plan::rd_atomic(w.depth, a.max_rd_atom, b.max_rd_atom),
    };
    let p = ConnectParams {
        port: cfg.port.ib_port,
        mtu,
        timeout: w.qp_timeout,
        rd_atomic: setup.rd_atomic,
        tclass: w.tclass,
        flow_label: 0,
        retry_count: w.retry_count,
        rnr_retry: w.rnr_retry,
        min_rnr_timer: cfg.min_rnr_timer,
    };
    let limit = w.iters_limit().unwrap_or(u64::MAX);
    // --fault wrong-qpn: none of this run's QPs may be the wrong destination
    let taken: Vec<u32> = sides
        .iter()
        .flat_map(|(a, b)| [a.qp.qp_number(), b.qp.qp_number()])
        .collect();
    let wrong = (w.fault == Some(Fault::WrongQpn)).then_some(taken.as_slice());
    let mut pairs = Vec::with_capacity(sides.len());
    for (i, (a, b)) in sides.into_iter().enumerate() {
        let p = ConnectParams {
            flow_label: w.source_ports.map_or(0, |s| s.flow_label(i as u32)),
            ..p
        };
        pairs.push(connect_pair(a, b, &p, limit, w.depth, wrong)?);
    }
    Ok(run::run(&mut pairs, w, &setup, stop)?)
}

/// Connects `a` and `b` to each other: a pair of `limit` messages. `wrong_qpn` (--fault wrong-qpn, with the
/// QPNs of the run): `a` is connected to a destination QPN that no QP has instead of `b`'s.
fn connect_pair(
    mut a: Side,
    mut b: Side,
    p: &ConnectParams,
    limit: u64,
    depth: u32,
    wrong_qpn: Option<&[u32]>,
) -> Result<Pair, VerbsError> {
    let (aq, bq) = (a.qp.qp_number(), b.qp.qp_number());
    let dest = wrong_qpn.map_or(bq, |taken| plan::wrong_qpn(bq, taken));
    let (ag, bg) = (a.gid.gid, b.gid.gid);
    let (apsn, bpsn) = (a.sq_psn, b.sq_psn);
    connect(&mut a, dest, &bg, bpsn, p)?;
    connect(&mut b, aq, &ag, apsn, p)?;
    let dst_ip = b.gid.ip.map(|i| i.to_string());
    Ok(Pair::new(
        a,
        Peer::Local(b),
        dest,
        bpsn,
        dst_ip,
        limit,
        depth,
    ))
}
