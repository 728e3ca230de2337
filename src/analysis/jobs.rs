//! The job's logs (`--expect` NCCL and UCX logs, [`crate::source::joblog`]) held against the flows: whose QP
//! each flow leaves or reaches (the process, its rank, the channel, the HCA), and the traffic class its
//! sending QP was told to use (`tc_mismatch`).
//!
//! A flow is (source, destination, destination QP). A logged QP with its own address reaches the flows to it
//! (its address, its QPN); one with the QPN it is connected to sends the flows from its address to that QPN
//! (or to the peer's address, when the line gives it, as UCX's `dgid`). Nothing is guessed from QPN alone:
//! every host numbers its QPs from the same few values.
use std::sync::Arc;

use parsers::frame::Addr;
use rustc_hash::FxHashMap;

use crate::source::joblog::{JobLog, Library, Qp, Side};

/// Which way a flow goes with respect to the logged QP it is matched to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Way {
    /// It leaves the QP: a sender's requests (NCCL's data).
    From,
    /// It reaches the QP: a sender's responses (ACKs, and NCCL's CTS writes), or a receiver's data.
    To,
}

/// The traffic class a flow's sending QP was told to use, and who told it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expected {
    pub traffic_class: u8,
    /// `NCCL_IB_TC`, `NCCL_IB_FIFO_TC`, `UCX_IB_TRAFFIC_CLASS`, or `traffic_class` (printed with the QP).
    pub setting: &'static str,
    /// The process whose log set it.
    pub process: u32,
}

impl Expected {
    /// The DSCP it stands for (the traffic class's upper 6 bits; the lower 2 are ECN, which the NIC and the
    /// network set).
    pub fn dscp(&self) -> u8 {
        self.traffic_class >> 2
    }
}

/// One direction of a logged QP's connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner {
    /// The QP (an index into [`JobLog::qps`]).
    pub qp: u32,
    pub way: Way,
    pub expected: Option<Expected>,
}

/// The logs, and the flows they name by what a flow's key holds.
#[derive(Debug, Default)]
pub struct Jobs {
    pub log: Arc<JobLog>,
    pub owners: Vec<Owner>,
    /// (destination, destination QP) -> owner.
    to: FxHashMap<(Addr, u32), u32>,
    /// (source, destination QP) -> owner.
    from: FxHashMap<(Addr, u32), u32>,
}

impl Jobs {
    pub fn new(log: Arc<JobLog>) -> Jobs {
        let mut jobs = Jobs {
            log: Arc::clone(&log),
            ..Jobs::default()
        };
        for (i, q) in log.qps.iter().enumerate() {
            let i = i as u32;
            // Toward the QP: from anywhere, to its address and QPN.
            if let Some(addr) = q.addr.or_else(|| receiver_address(&log, q)) {
                jobs.add(true, (addr, q.qpn), i, Way::To);
            }
            let Some(remote) = q.remote_qpn else { continue };
            if let Some(addr) = q.addr {
                jobs.add(false, (addr, remote), i, Way::From);
            }
            if let Some(peer) = q.peer_addr {
                jobs.add(true, (peer, remote), i, Way::From);
            }
        }
        jobs
    }

    fn add(&mut self, to: bool, key: (Addr, u32), qp: u32, way: Way) {
        let owner = self.owners.len() as u32;
        let map = if to { &mut self.to } else { &mut self.from };
        // Two QPs under one key (a log read twice): the first keeps it.
        if map.contains_key(&key) {
            return;
        }
        map.insert(key, owner);
        let expected = expected(&self.log, &self.log.qps[qp as usize], way);
        self.owners.push(Owner { qp, way, expected });
    }

    /// The owner of the flow from `src` to `dst`'s QP `dest_qp`, if the logs name it.
    pub fn owner_of(&self, src: Addr, dst: Addr, dest_qp: u32) -> Option<u32> {
        self.to
            .get(&(dst, dest_qp))
            .or_else(|| self.from.get(&(src, dest_qp)))
            .copied()
    }

    pub fn qp(&self, owner: u32) -> &Qp {
        &self.log.qps[self.owners[owner as usize].qp as usize]
    }
}

/// NCCL 2.29.7+'s receiver QP prints no GID: its process's address, when all of its QPs that did print one
/// print the same.
fn receiver_address(log: &JobLog, q: &Qp) -> Option<Addr> {
    if q.side != Side::Receive {
        return None;
    }
    let mut addrs = log
        .qps
        .iter()
        .filter(|o| o.process == q.process)
        .filter_map(|o| o.addr);
    let first = addrs.next()?;
    addrs.all(|a| a == first).then_some(first)
}

/// The traffic class the QP that sends a flow (`way` of `q`) was told to use, where a log says it. The sender
/// uses its own `NCCL_IB_TC`; the receiving side's QP (CTS writes and ACKs) its `NCCL_IB_FIFO_TC` if set,
/// else its `NCCL_IB_TC`; from 2.26 a receiver takes the sender's class when it sets none of its own, which
/// only the receiver's log would tell, so without it only a 2.26+ sender's is held.
fn expected(log: &JobLog, q: &Qp, way: Way) -> Option<Expected> {
    let own = &log.processes[q.process as usize];
    let peer = || q.peer_rank.and_then(|r| log.of_rank(r));
    let tc = |p: u32, receiving: bool| {
        let s = log.processes[p as usize].settings;
        let (tc, setting) = match (receiving, s.fifo_traffic_class) {
            (true, Some(fifo)) => (Some(fifo), "NCCL_IB_FIFO_TC"),
            _ => (s.traffic_class, "NCCL_IB_TC"),
        };
        tc.map(|traffic_class| Expected {
            traffic_class,
            setting,
            process: p,
        })
    };
    match (own.library, q.side, way) {
        (Library::Ucx, _, Way::From) => q
            .traffic_class
            .map(|traffic_class| Expected {
                traffic_class,
                setting: "traffic_class",
                process: q.process,
            })
            .or_else(|| {
                own.settings.traffic_class.map(|traffic_class| Expected {
                    traffic_class,
                    setting: "UCX_IB_TRAFFIC_CLASS",
                    process: q.process,
                })
            }),
        (Library::Ucx, _, Way::To) => None,
        // The sender's data.
        (Library::Nccl, Side::Send, Way::From) => tc(q.process, false),
        (Library::Nccl, Side::Receive, Way::To) => peer().and_then(|p| tc(p, false)),
        // The receiver's CTS writes and ACKs.
        (Library::Nccl, Side::Send, Way::To) => match peer() {
            Some(p) => tc(p, true).or_else(|| newer_sender(log, q.process)),
            None => newer_sender(log, q.process),
        },
        (Library::Nccl, Side::Receive, Way::From) => tc(q.process, true),
    }
}

/// A 2.26+ sender's `NCCL_IB_TC`, which its receivers take when they set none.
fn newer_sender(log: &JobLog, sender: u32) -> Option<Expected> {
    let p = &log.processes[sender as usize];
    if p.nccl_version()? < (2, 26) {
        return None;
    }
    p.settings.traffic_class.map(|traffic_class| Expected {
        traffic_class,
        setting: "NCCL_IB_TC",
        process: sender,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::joblog;

    const A: Addr = Addr::V4([10, 0, 0, 1]);
    const B: Addr = Addr::V4([10, 0, 0, 2]);

    /// Rank 0 on 10.0.0.1 sends to rank 1 (its QP 20, connected to QP 50); rank 1's log sets a FIFO class.
    fn two_ranks(version: &str, receiver_log: bool) -> Jobs {
        let mut r = joblog::Reader::default();
        r.file("a.log");
        for l in [
            &format!("NCCL version {version}+cuda12.4"),
            "a:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1 - Init START",
            "a:1:1 [0] NCCL INFO NCCL_IB_TC set by environment to 106.",
            "a:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0",
            "a:1:2 [0] NCCL INFO NET/IB: NCCL Dev 0 IbDev 0 Port 1 qpn 20 mtu 3 query_ece={supported=0} GID 1 \
             (0/0100000AFFFF0000)",
            "a:1:2 [0] NCCL INFO NET/IB: IbDev 0 Port 1 qpn 50 set_ece={supported=0}",
        ] {
            r.line(l);
        }
        if receiver_log {
            r.file("b.log");
            for l in [
                "b:2:2 [0] NCCL INFO comm 0x1 rank 1 nranks 2 cudaDev 0 busId 1 - Init START",
                "b:2:2 [0] NCCL INFO NCCL_IB_FIFO_TC set by environment to 184.",
            ] {
                r.line(l);
            }
        }
        Jobs::new(Arc::new(r.finish()))
    }

    #[test]
    fn each_direction_of_a_logged_connection() {
        let jobs = two_ranks("2.20.5", true);
        // The data: from the sender's address to the remote QPN, whatever the destination address.
        let data = jobs.owner_of(A, B, 50).expect("data");
        assert_eq!(jobs.owners[data as usize].way, Way::From);
        assert_eq!(
            jobs.owners[data as usize].expected,
            Some(Expected {
                traffic_class: 106,
                setting: "NCCL_IB_TC",
                process: 0
            })
        );
        // Toward the sender's QP: the receiver's FIFO class (184: DSCP 46).
        let back = jobs.owner_of(B, A, 20).expect("back");
        let e = jobs.owners[back as usize].expected.unwrap();
        assert_eq!(
            (jobs.owners[back as usize].way, e.setting, e.dscp()),
            (Way::To, "NCCL_IB_FIFO_TC", 46)
        );
        assert_eq!(jobs.qp(back).qpn, 20);
        // Not the same QPN from another host, nor another QPN.
        assert_eq!(jobs.owner_of(B, A, 50), None);
        assert_eq!(jobs.owner_of(A, B, 51), None);
    }

    /// Without the receiver's log, its side is held to nothing before 2.26, to the sender's class since.
    #[test]
    fn the_receivers_class_without_its_log() {
        let old = two_ranks("2.20.5", false);
        let back = old.owner_of(B, A, 20).unwrap();
        assert_eq!(old.owners[back as usize].expected, None);
        let new = two_ranks("2.26.6", false);
        let back = new.owner_of(B, A, 20).unwrap();
        assert_eq!(
            new.owners[back as usize].expected.map(|e| e.traffic_class),
            Some(106)
        );
    }
}
