//! How evenly ECMP (or a bond) can spread each host pair's QPs. Between two hosts every RoCEv2 packet has
//! the same addresses, protocol and destination port: the UDP source port, chosen per QP, is the only
//! entropy a switch's hash sees. Per directed host pair: the QPs (RC and UC flows) and their distinct source
//! ports, and the bytes each member of an N-way group would carry under the hashes switches commonly use
//! ([`Hash`]). Many QPs on few ports is `low_entropy` (ucx #11004, nvshmem #27: every process on one port,
//! one link carrying all of it).
//!
//! The QPs and ports are counted at a flow's first packet (the moment a pair first crowds is the event's
//! frame); the bytes when the report is made, from the live flows and those evicted.
use std::collections::BTreeSet;

use parsers::frame::Addr;
use rustc_hash::FxHashMap;

use super::table::FlowId;
use super::tally::PAIRS_KEPT;

/// `--ecmp-members`, when not given: a leaf's uplinks to its spines, or a spine's to the leaves, are
/// commonly 4 to 16.
pub const DEFAULT_MEMBERS: u16 = 8;
/// The largest group `--ecmp-members` takes (the widest ECMP groups of current switch ASICs).
pub const MAX_MEMBERS: u16 = 256;
/// The distinct ports kept per pair; more are counted as "at least" this many.
pub const PORTS_KEPT: usize = 4096;
/// `low_entropy` needs at least this many QPs in one direction between two hosts...
pub const CROWD_QPS: u32 = 4;
/// ...on at most one port per this many QPs. QPs whose ports a NIC draws from 14 bits (rxe, mlx5) collide
/// by chance about once in 16,384 pairs of QPs: half of them sharing is never chance.
pub const QPS_PER_PORT: u32 = 2;

/// The UDP/IP hash of a switch's ECMP or LAG member selection, over the packet's 5-tuple (source and
/// destination address, protocol 17, source and destination port, in network byte order). Real ASICs
/// seed, order and fold the fields their own way; what these show is how a handful of distinct tuples
/// spreads, which no hash spreads much better, and that one tuple cannot be spread at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hash {
    /// CRC-16/CCITT-FALSE (polynomial 0x1021, initial value 0xFFFF) over the tuple's bytes: the CRC16
    /// of Broadcom's and Mellanox's hash menus.
    Crc16,
    /// CRC-32 (IEEE 802.3, zlib's) over the tuple's bytes.
    Crc32,
    /// The XOR of the tuple's 16-bit words (each address's halves, the ports, the protocol).
    Xor,
}

impl Hash {
    pub const ALL: [Hash; 3] = [Hash::Crc16, Hash::Crc32, Hash::Xor];

    /// As the JSON and the report name it.
    pub fn name(self) -> &'static str {
        match self {
            Hash::Crc16 => "crc16",
            Hash::Crc32 => "crc32",
            Hash::Xor => "xor",
        }
    }

    /// The member of a `members`-way group that carries `t`'s packets (the hash modulo the group's size).
    pub fn member(self, t: &Tuple, members: u16) -> usize {
        let h = match self {
            Hash::Crc16 => u32::from(CRC16.checksum(t.bytes().as_slice())),
            Hash::Crc32 => crc32fast::hash(t.bytes().as_slice()),
            Hash::Xor => u32::from(t.xor16()),
        };
        (h % u32::from(members.max(1))) as usize
    }
}

const CRC16: crc::Crc<u16> = crc::Crc::<u16>::new(&crc::CRC_16_IBM_3740);
const UDP: u8 = 17;

/// A RoCEv2 QP's 5-tuple as a switch hashes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tuple {
    pub src: Addr,
    pub dst: Addr,
    pub ports: UdpPorts,
}

/// A flow's UDP ports (its first packet's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpPorts {
    pub src: u16,
    pub dst: u16,
}

/// The tuple's bytes, in a fixed buffer (IPv6: 37 bytes at most).
pub struct TupleBytes {
    buf: [u8; 37],
    len: usize,
}

impl TupleBytes {
    pub fn as_slice(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    fn push(&mut self, b: &[u8]) {
        self.buf[self.len..self.len + b.len()].copy_from_slice(b);
        self.len += b.len();
    }
}

fn addr_bytes(a: &Addr) -> &[u8] {
    match a {
        Addr::V4(b) => b,
        Addr::V6(b) => b,
        // Not UDP: a LID's flow has no ports, so it is never hashed.
        Addr::Lid(_) => &[],
    }
}

impl Tuple {
    /// Source address, destination address, protocol, source port, destination port.
    pub fn bytes(&self) -> TupleBytes {
        let mut b = TupleBytes {
            buf: [0; 37],
            len: 0,
        };
        b.push(addr_bytes(&self.src));
        b.push(addr_bytes(&self.dst));
        b.push(&[UDP]);
        b.push(&self.ports.src.to_be_bytes());
        b.push(&self.ports.dst.to_be_bytes());
        b
    }

    fn xor16(&self) -> u16 {
        let words = |a: &Addr| -> u16 {
            addr_bytes(a)
                .chunks(2)
                .fold(0, |x, w| x ^ u16::from_be_bytes([w[0], w[1]]))
        };
        words(&self.src) ^ words(&self.dst) ^ u16::from(UDP) ^ self.ports.src ^ self.ports.dst
    }
}

/// When a pair's QPs first shared too few ports: the flow whose first packet made it so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Crowded {
    pub flow: FlowId,
    pub frame: u64,
    pub ts: u64,
}

/// One directed host pair's QPs and ports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PairPorts {
    pub qps: u32,
    /// The distinct source ports, at most [`PORTS_KEPT`].
    pub ports: BTreeSet<u16>,
    /// More distinct ports came than were kept.
    pub more_ports: bool,
    pub crowded: Option<Crowded>,
}

impl PairPorts {
    /// The distinct ports (at least, when more came than were kept).
    pub fn distinct(&self) -> u32 {
        self.ports.len() as u32
    }

    /// Many QPs on few ports.
    pub fn is_crowded(&self) -> bool {
        !self.more_ports && self.qps >= CROWD_QPS && self.distinct() * QPS_PER_PORT <= self.qps
    }
}

/// The bytes each member of the group carries, per hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Load {
    /// `Hash::ALL.len()` rows of `members` bytes.
    by_hash: Vec<u64>,
    members: u16,
}

impl Load {
    pub fn new(members: u16) -> Load {
        Load {
            by_hash: vec![0; Hash::ALL.len() * usize::from(members)],
            members,
        }
    }

    /// A QP's bytes, on the member each hash picks for it.
    pub fn add(&mut self, t: &Tuple, bytes: u64) {
        for (row, h) in Hash::ALL.iter().enumerate() {
            let m = h.member(t, self.members);
            self.by_hash[row * usize::from(self.members) + m] += bytes;
        }
    }

    /// The bytes per member under `h`.
    pub fn members(&self, h: Hash) -> &[u64] {
        let row = Hash::ALL.iter().position(|x| *x == h).unwrap_or(0);
        let n = usize::from(self.members);
        &self.by_hash[row * n..(row + 1) * n]
    }

    /// The busiest member's bytes over the mean of the members `qps` QPs could fill (as many as there are
    /// members, or QPs if fewer): 1 is as even as that many QPs of equal size can be, `min(members, qps)`
    /// all on one; `None` with no bytes.
    pub fn imbalance(&self, h: Hash, qps: u32) -> Option<f64> {
        let m = self.members(h);
        let total: u64 = m.iter().sum();
        let max = m.iter().copied().max().unwrap_or(0);
        let fillable = u32::from(self.members).min(qps.max(1));
        (total > 0).then(|| max as f64 * f64::from(fillable) / total as f64)
    }
}

/// Every directed pair's QPs and ports (the first [`PAIRS_KEPT`] pairs), and the bytes of their flows
/// evicted so far.
#[derive(Debug, Clone, Default)]
pub struct EcmpTally {
    pairs: FxHashMap<(Addr, Addr), PairPorts>,
    evicted: FxHashMap<(Addr, Addr), Load>,
    /// QPs of pairs past [`PAIRS_KEPT`] came.
    pub more_pairs: bool,
}

impl EcmpTally {
    /// A QP's first packet, from `src` to `dst` on `port`, in flow `flow` (frame `frame`, at `ts`).
    pub(crate) fn first_packet(&mut self, src: Addr, dst: Addr, port: u16, at: Crowded) {
        let room = self.pairs.len() < PAIRS_KEPT;
        let Some(p) = (match self.pairs.get_mut(&(src, dst)) {
            Some(p) => Some(p),
            None if room => Some(self.pairs.entry((src, dst)).or_default()),
            None => None,
        }) else {
            self.more_pairs = true;
            return;
        };
        p.qps += 1;
        if p.ports.len() < PORTS_KEPT {
            p.ports.insert(port);
        } else if !p.ports.contains(&port) {
            p.more_ports = true;
        }
        if p.crowded.is_none() && p.is_crowded() {
            p.crowded = Some(at);
        }
    }

    /// An evicted QP's bytes.
    pub(crate) fn evicted(&mut self, t: &Tuple, bytes: u64, members: u16) {
        if self.pairs.contains_key(&(t.src, t.dst)) {
            self.evicted
                .entry((t.src, t.dst))
                .or_insert_with(|| Load::new(members))
                .add(t, bytes);
        }
    }

    /// Each pair's ports and load: the evicted QPs' bytes and `live`'s (each live QP's tuple and bytes),
    /// in address order.
    pub fn spread(
        &self,
        members: u16,
        live: impl Iterator<Item = (Tuple, u64)>,
    ) -> Vec<PairSpread<'_>> {
        let mut load: FxHashMap<(Addr, Addr), Load> = self.evicted.clone();
        for (t, bytes) in live {
            if self.pairs.contains_key(&(t.src, t.dst)) {
                load.entry((t.src, t.dst))
                    .or_insert_with(|| Load::new(members))
                    .add(&t, bytes);
            }
        }
        let mut out: Vec<PairSpread> = self
            .pairs
            .iter()
            .map(|(&(src, dst), ports)| PairSpread {
                src,
                dst,
                load: load
                    .remove(&(src, dst))
                    .unwrap_or_else(|| Load::new(members)),
                ports,
            })
            .collect();
        out.sort_by_key(|p| (p.src, p.dst));
        out
    }
}

/// One directed pair's ports and the load on each member.
#[derive(Debug, Clone)]
pub struct PairSpread<'a> {
    pub src: Addr,
    pub dst: Addr,
    pub ports: &'a PairPorts,
    pub load: Load,
}

impl PairSpread<'_> {
    pub fn bytes(&self) -> u64 {
        self.load.members(Hash::Crc32).iter().sum()
    }

    /// Under `h`: [`Load::imbalance`] for this pair's QPs, to two decimals.
    pub fn imbalance(&self, h: Hash) -> Option<f64> {
        self.load
            .imbalance(h, self.ports.qps)
            .map(|x| (x * 100.0).round() / 100.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tuple(sport: u16) -> Tuple {
        Tuple {
            src: Addr::V4([10, 0, 0, 1]),
            dst: Addr::V4([10, 0, 0, 2]),
            ports: UdpPorts {
                src: sport,
                dst: 4791,
            },
        }
    }

    #[test]
    fn the_tuple_is_addresses_protocol_and_ports_in_network_order() {
        let b = tuple(0xC001).bytes();
        assert_eq!(
            b.as_slice(),
            [10, 0, 0, 1, 10, 0, 0, 2, 17, 0xC0, 0x01, 0x12, 0xB7]
        );
    }

    // The check values of each algorithm's catalogue entry, on "123456789" (reveng's CRC catalogue:
    // CRC-16/IBM-3740 0x29B1, CRC-32/ISO-HDLC 0xCBF43926): the hashes are the algorithms named.
    #[test]
    fn the_crcs_are_the_catalogued_algorithms() {
        assert_eq!(CRC16.checksum(b"123456789"), 0x29B1);
        assert_eq!(crc32fast::hash(b"123456789"), 0xCBF4_3926);
    }

    // By hand: 0x0A00 ^ 0x0001 ^ 0x0A00 ^ 0x0002 ^ 0x0011 ^ 0xC001 ^ 0x12B7 = 0xD2A4 (53924);
    // 53924 % 8 = 4.
    #[test]
    fn xor_folds_the_words() {
        assert_eq!(tuple(0xC001).xor16(), 0xD2A4);
        assert_eq!(Hash::Xor.member(&tuple(0xC001), 8), 4);
    }

    #[test]
    fn one_port_for_every_qp_puts_everything_on_one_member() {
        let mut load = Load::new(8);
        for _ in 0..8 {
            load.add(&tuple(0xC001), 1000);
        }
        for h in Hash::ALL {
            assert_eq!(load.imbalance(h, 8), Some(8.0));
            assert_eq!(
                load.imbalance(h, 2),
                Some(2.0),
                "two QPs can fill two members"
            );
            assert_eq!(load.members(h).iter().filter(|b| **b > 0).count(), 1);
        }
    }

    fn at(n: u64) -> Crowded {
        Crowded {
            flow: FlowId::for_test(n),
            frame: n,
            ts: n,
        }
    }

    #[test]
    fn a_pair_crowds_at_the_fourth_qp_on_two_ports() {
        let (a, b) = (Addr::V4([10, 0, 0, 1]), Addr::V4([10, 0, 0, 2]));
        let mut t = EcmpTally::default();
        for (n, port) in [(1, 100), (2, 100), (3, 200)] {
            t.first_packet(a, b, port, at(n));
        }
        assert!(!t.pairs[&(a, b)].is_crowded());
        t.first_packet(a, b, 200, at(4));
        let p = &t.pairs[&(a, b)];
        assert!(p.is_crowded());
        assert_eq!(p.crowded.map(|c| c.frame), Some(4));
        // A fifth QP on a third port: 3 ports for 5 QPs is no longer crowded.
        t.first_packet(a, b, 300, at(5));
        assert!(!t.pairs[&(a, b)].is_crowded());
    }

    #[test]
    fn pairs_past_the_kept_ones_are_only_flagged() {
        let mut t = EcmpTally::default();
        for i in 0..=PAIRS_KEPT as u32 {
            t.first_packet(Addr::V4(i.to_be_bytes()), Addr::V4([1; 4]), 1, at(1));
        }
        assert_eq!(t.pairs.len(), PAIRS_KEPT);
        assert!(t.more_pairs);
    }
}
