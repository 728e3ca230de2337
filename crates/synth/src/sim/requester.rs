//! The requesters: messages segmented into request packets, sent (and lost, and CE-marked) on their way
//! to the responder, and sent again from a NAKed PSN (go-back-N).
use std::io::{self, Write};

use parsers::atomic::AtomicEth;
use parsers::bth::Bth;
use parsers::frame::ExtHeaders;
use parsers::imm::ImmDt;
use parsers::opcode::rc::{
    COMPARE_SWAP, FETCH_ADD, READ_REQUEST, READ_RESPONSE_LAST, READ_RESPONSE_ONLY, SEND_FIRST,
    WRITE_FIRST,
};
use parsers::psn::{PSN_MASK, add as psn_add, diff as psn_diff};
use parsers::reth::Reth;

use super::{Conn, Ev, Req, Resp, Sim};
use crate::frame::{Header, wire_ns};

/// Offsets from SEND_FIRST / WRITE_FIRST.
const FIRST: u8 = 0;
const MIDDLE: u8 = 1;
const LAST: u8 = 2;
const LAST_IMM: u8 = 3;
const ONLY: u8 = 4;
const ONLY_IMM: u8 = 5;

/// What becomes of a request packet sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    Delivered,
    LostBeforeMirror,
    LostAfterMirror,
}

/// The operation a message is.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Write,
    Send,
    Read,
    Atomic,
}

impl<W: Write> Sim<'_, W> {
    fn pick_len(&mut self, small: f64) -> u32 {
        let mtu = self.p.mtu;
        if self.rng.chance(small) {
            self.rng.range(1, u64::from(mtu)) as u32
        } else {
            let packets = self.rng.range(2, 16) as u32;
            (packets - 1) * mtu + self.rng.range(1, u64::from(mtu)) as u32
        }
    }

    /// Queues the packets of a new message on connection `c`.
    fn new_message(&mut self, c: usize) {
        let mtu = self.p.mtu;
        let r = self.rng.f64();
        let mix = self.conns[c].mix;
        let kind = match mix.iter().position(|w| r < *w) {
            Some(0) => Kind::Write,
            Some(1) => Kind::Send,
            Some(2) => Kind::Read,
            _ => Kind::Atomic,
        };
        let len = match kind {
            Kind::Write => self.pick_len(0.35),
            Kind::Send => self.pick_len(0.7),
            Kind::Read => self.pick_len(0.35),
            Kind::Atomic => 8,
        };
        let imm = matches!(kind, Kind::Write | Kind::Send) && self.rng.chance(0.1);
        let imm_value = self.rng.u64() as u32;
        let operand = self.rng.u64();
        let compare = self.rng.u64();
        let cmp_swap = self.rng.chance(0.4);
        let conn = &mut self.conns[c];
        let va = conn.va + conn.va_offset;
        conn.va_offset = (conn.va_offset + u64::from(len).next_multiple_of(64)) % (1 << 30);
        let base = Req {
            psn: 0,
            width: 1,
            opcode: 0,
            payload: 0,
            reth: None,
            atomic: None,
            imm: None,
            ack_req: false,
            msg: None,
            ends_message: false,
            sent: false,
            captured: false,
        };
        let reth = Reth {
            va,
            r_key: conn.rkey,
            dma_len: len,
        };
        let push = |conn: &mut Conn, req: Req| {
            let req = Req {
                psn: conn.next_psn,
                ..req
            };
            conn.next_psn = psn_add(conn.next_psn, req.width);
            conn.buf.push_back(req);
        };
        match kind {
            Kind::Write | Kind::Send => {
                let packets = len.div_ceil(mtu).max(1);
                let msg = conn.next_msg;
                conn.next_msg += 1;
                conn.open_msgs.push_back((msg, packets, u64::from(len)));
                let first_op = if matches!(kind, Kind::Write) {
                    WRITE_FIRST
                } else {
                    SEND_FIRST
                };
                let write = matches!(kind, Kind::Write);
                for i in 0..packets {
                    let last = i + 1 == packets;
                    let position = match (packets, i) {
                        (1, _) if imm => ONLY_IMM,
                        (1, _) => ONLY,
                        (_, 0) => FIRST,
                        _ if last && imm => LAST_IMM,
                        _ if last => LAST,
                        _ => MIDDLE,
                    };
                    let payload = if last { len - mtu * (packets - 1) } else { mtu };
                    push(
                        conn,
                        Req {
                            opcode: first_op + position,
                            payload,
                            reth: (write && i == 0).then_some(reth),
                            imm: (last && imm).then_some(imm_value),
                            ack_req: last,
                            msg: Some(msg),
                            ends_message: last,
                            ..base
                        },
                    );
                }
            }
            Kind::Read => push(
                conn,
                Req {
                    opcode: READ_REQUEST,
                    width: len.div_ceil(mtu).max(1),
                    reth: Some(reth),
                    ..base
                },
            ),
            Kind::Atomic => push(
                conn,
                Req {
                    opcode: if cmp_swap { COMPARE_SWAP } else { FETCH_ADD },
                    atomic: Some(AtomicEth {
                        va: va & !7,
                        r_key: conn.rkey,
                        swap_add: operand,
                        compare: if cmp_swap { compare } else { 0 },
                    }),
                    ..base
                },
            ),
        }
    }

    fn request_frame(&mut self, c: usize, req: &Req, ce: bool) -> Vec<u8> {
        let conn = &self.conns[c];
        let bth = Bth {
            opcode: req.opcode,
            pkey: 0xFFFF,
            dest_qp: conn.resp_qpn,
            ack_req: req.ack_req,
            psn: req.psn,
            ..Bth::default()
        };
        let ext = ExtHeaders {
            reth: req.reth,
            atomic_eth: req.atomic,
            immdt: req.imm.map(ImmDt),
            ..ExtHeaders::default()
        };
        let h = Header {
            from: conn.req_host,
            to: conn.resp_host,
            udp_src: conn.req_port,
            dscp: 26,
            ecn: if ce { 3 } else { 2 },
            bth,
            ext,
            payload: req.payload,
        };
        self.builder.build(&h, req.psn)
    }

    pub(super) fn send(&mut self, now: u64, c: usize, generation: u32) -> io::Result<()> {
        if generation != self.conns[c].generation {
            return Ok(());
        }
        let conn = &mut self.conns[c];
        if conn.cursor >= conn.buf.len() {
            if !conn.thought {
                conn.thought = true;
                let think = self.rng.exp(conn.think_ns) as u64 + 1;
                self.at(
                    now + think,
                    Ev::Send {
                        c: c as u32,
                        generation,
                    },
                );
                return Ok(());
            }
            conn.thought = false;
            self.new_message(c);
        }
        let conn = &mut self.conns[c];
        let i = conn.cursor;
        conn.cursor += 1;
        let req = conn.buf[i];
        let resend = req.sent;
        conn.buf[i].sent = true;
        if conn.recovering && conn.rewound && !resend {
            conn.recovering = false;
        }
        let lose = !resend && !conn.recovering && self.rng.chance(self.p.loss);
        let fate = if !lose {
            Fate::Delivered
        } else {
            self.losses += 1;
            if self.losses % 2 == 1 {
                Fate::LostBeforeMirror
            } else {
                Fate::LostAfterMirror
            }
        };
        let window = self.p.cnp_window_us * 1000;
        let conn = &self.conns[c];
        let ce =
            fate == Fate::Delivered && now >= conn.ce_quiet_until && self.rng.chance(self.p.ce);
        let may_leave = self.responded == self.conns.len() && conn.cnp_due < now;
        let unanswered = ce && may_leave && self.rng.chance(self.p.unanswered);
        let frame = self.request_frame(c, &req, ce);
        let mut ts = now;
        if fate != Fate::LostBeforeMirror {
            ts = self.capture.write(now, &frame)?;
            let conn = &mut self.conns[c];
            let t = &mut conn.truth.req;
            t.packets += 1;
            t.bytes += frame.len() as u64;
            t.payload_bytes += u64::from(req.payload);
            t.first_psn.get_or_insert(req.psn);
            let end = psn_add(req.psn, req.width);
            if t.packets == 1 || psn_diff(end, t.end_psn) > 0 {
                t.end_psn = end;
            }
            if ce {
                t.ce += 1;
            } else {
                t.ect0 += 1;
            }
            if !resend && conn.pending_gap > 0 {
                t.gap_events += 1;
                t.missing += u64::from(conn.pending_gap);
                conn.pending_gap = 0;
            }
            if resend {
                t.retransmitted += 1;
                t.retransmitted_bytes += u64::from(req.payload);
                t.duplicates += u64::from(req.captured);
                if conn.episode_start {
                    t.episodes += 1;
                    conn.episode_start = false;
                }
            }
            if !req.captured {
                conn.buf[i].captured = true;
                if let Some(m) = req.msg
                    && let Some(k) = conn.open_msgs.iter().position(|o| o.0 == m)
                {
                    conn.open_msgs[k].1 -= 1;
                    if conn.open_msgs[k].1 == 0 {
                        let size = conn.open_msgs[k].2;
                        conn.open_msgs.remove(k);
                        let t = &mut conn.truth.req;
                        t.messages += 1;
                        t.message_bytes += size;
                        t.message_min = Some(t.message_min.map_or(size, |m| m.min(size)));
                        t.message_max = t.message_max.max(size);
                    }
                }
            }
        }
        let conn = &mut self.conns[c];
        match fate {
            Fate::Delivered => {
                let arrival = (ts + 800 + self.rng.range(0, 400)).max(conn.last_arrival + 1);
                conn.last_arrival = arrival;
                self.at(arrival, Ev::Arrive { c: c as u32, req });
                let conn = &mut self.conns[c];
                if unanswered {
                    conn.truth.unanswered_ce.push(ts);
                    conn.ce_quiet_until = ts + 2 * window;
                } else if ce {
                    let due = arrival + self.rng.range(1_000, 9_000);
                    conn.cnp_due = conn.cnp_due.max(due);
                    self.at(due, Ev::Cnp { c: c as u32 });
                }
            }
            Fate::LostBeforeMirror | Fate::LostAfterMirror => {
                let before = fate == Fate::LostBeforeMirror;
                if before {
                    conn.pending_gap += req.width;
                }
                conn.recovering = true;
                conn.rewound = false;
                conn.truth.losses.push((req.psn, before));
            }
        }
        let next = ts + wire_ns(frame.len()) + self.rng.range(0, 30);
        self.at(
            next,
            Ev::Send {
                c: c as u32,
                generation,
            },
        );
        Ok(())
    }

    /// The requester learns that every PSN up to `psn` arrived: forget those packets.
    fn acknowledge(&mut self, c: usize, psn: u32) {
        let conn = &mut self.conns[c];
        while conn.cursor > 0 {
            let Some(front) = conn.buf.front() else { break };
            if psn_diff(psn_add(front.psn, front.width - 1), psn) > 0 {
                break;
            }
            conn.buf.pop_front();
            conn.cursor -= 1;
        }
    }

    pub(super) fn deliver(&mut self, now: u64, c: usize, resp: Resp) {
        match resp {
            Resp::Ack { psn, .. } | Resp::Atomic { psn, .. } => self.acknowledge(c, psn),
            Resp::Read { psn, opcode, .. } => {
                if matches!(opcode, READ_RESPONSE_LAST | READ_RESPONSE_ONLY) {
                    self.acknowledge(c, psn);
                }
            }
            Resp::Nak { psn, .. } => {
                self.acknowledge(c, psn_add(psn, PSN_MASK));
                let react = 300 + self.rng.range(0, 700);
                let conn = &mut self.conns[c];
                debug_assert_eq!(conn.buf.front().map(|r| r.psn), Some(psn));
                // Go back N: resend from the NAKed PSN.
                conn.cursor = 0;
                conn.generation += 1;
                conn.rewound = true;
                conn.episode_start = true;
                conn.thought = false;
                let generation = conn.generation;
                self.at(
                    now + react,
                    Ev::Send {
                        c: c as u32,
                        generation,
                    },
                );
            }
        }
    }
}
