//! The responders: in-order requests acknowledged (coalesced), READs answered, one NAK per PSN sequence
//! error, CNPs for CE marks.
use std::io::{self, Write};

use parsers::aeth::{Aeth, NakCode, Syndrome};
use parsers::atomic::AtomicAckEth;
use parsers::bth::Bth;
use parsers::cnp::Cnp;
use parsers::frame::ExtHeaders;
use parsers::opcode::CNP;
use parsers::opcode::rc::{
    ACKNOWLEDGE, ATOMIC_ACKNOWLEDGE, COMPARE_SWAP, FETCH_ADD, READ_REQUEST, READ_RESPONSE_FIRST,
    READ_RESPONSE_LAST, READ_RESPONSE_MIDDLE, READ_RESPONSE_ONLY,
};
use parsers::psn::{PSN_MASK, add as psn_add, diff as psn_diff};

use super::{Ev, Req, Resp, Sim};
use crate::frame::{Header, wire_ns};

impl<W: Write> Sim<'_, W> {
    fn respond(&mut self, now: u64, c: usize, resp: Resp, bytes: usize) {
        let ready = now + 300 + self.rng.range(0, 500);
        let conn = &mut self.conns[c];
        let t = ready.max(conn.tx_free);
        conn.tx_free = t + wire_ns(bytes);
        self.at(t, Ev::Transmit { c: c as u32, resp });
    }

    pub(super) fn arrive(&mut self, now: u64, c: usize, req: Req) {
        let mtu = self.p.mtu;
        let conn = &mut self.conns[c];
        let ahead = psn_diff(req.psn, conn.epsn);
        if ahead > 0 {
            if !conn.nak_sent {
                conn.nak_sent = true;
                let resp = Resp::Nak {
                    psn: conn.epsn,
                    msn: conn.msn,
                };
                self.respond(now, c, resp, 62);
            }
            return;
        }
        if ahead < 0 {
            // A duplicate: cannot happen here (go-back-N restarts at the expected PSN); a NIC re-ACKs it.
            let resp = Resp::Ack {
                psn: psn_add(conn.epsn, PSN_MASK),
                msn: conn.msn,
            };
            self.respond(now, c, resp, 62);
            return;
        }
        conn.nak_sent = false;
        conn.epsn = psn_add(conn.epsn, req.width);
        match req.opcode {
            READ_REQUEST => {
                conn.msn += 1;
                conn.since_ack = 0;
                let msn = conn.msn;
                let len = req.reth.map_or(0, |r| r.dma_len);
                for k in 0..req.width {
                    let opcode = match (req.width, k) {
                        (1, _) => READ_RESPONSE_ONLY,
                        (_, 0) => READ_RESPONSE_FIRST,
                        _ if k + 1 == req.width => READ_RESPONSE_LAST,
                        _ => READ_RESPONSE_MIDDLE,
                    };
                    let payload = if k + 1 == req.width {
                        len - mtu * k
                    } else {
                        mtu
                    };
                    let resp = Resp::Read {
                        psn: psn_add(req.psn, k),
                        opcode,
                        payload,
                        msn,
                    };
                    self.respond(now, c, resp, payload as usize + 66);
                }
            }
            COMPARE_SWAP | FETCH_ADD => {
                conn.msn += 1;
                conn.since_ack = 0;
                let resp = Resp::Atomic {
                    psn: req.psn,
                    msn: conn.msn,
                    orig: self.rng.u64(),
                };
                self.respond(now, c, resp, 70);
            }
            _ => {
                conn.since_ack += 1;
                if req.ends_message {
                    conn.msn += 1;
                }
                if req.ack_req || conn.since_ack >= conn.ack_every {
                    conn.since_ack = 0;
                    let resp = Resp::Ack {
                        psn: req.psn,
                        msn: conn.msn,
                    };
                    self.respond(now, c, resp, 62);
                }
            }
        }
    }

    pub(super) fn transmit(&mut self, now: u64, c: usize, resp: Resp) -> io::Result<()> {
        let conn = &self.conns[c];
        let (opcode, psn, syndrome, msn, payload) = match resp {
            Resp::Ack { psn, msn } => (ACKNOWLEDGE, psn, Syndrome::Ack { credits: 31 }, msn, 0),
            Resp::Nak { psn, msn } => (
                ACKNOWLEDGE,
                psn,
                Syndrome::Nak(NakCode::PsnSequenceError),
                msn,
                0,
            ),
            Resp::Read {
                psn,
                opcode,
                payload,
                msn,
            } => (opcode, psn, Syndrome::Ack { credits: 31 }, msn, payload),
            Resp::Atomic { psn, msn, .. } => (
                ATOMIC_ACKNOWLEDGE,
                psn,
                Syndrome::Ack { credits: 31 },
                msn,
                0,
            ),
        };
        let ext = ExtHeaders {
            aeth: Some(Aeth {
                syndrome: syndrome.to_byte(),
                msn,
            }),
            atomic_ack_eth: match resp {
                Resp::Atomic { orig, .. } => Some(AtomicAckEth {
                    orig_rem_data: orig,
                }),
                _ => None,
            },
            ..ExtHeaders::default()
        };
        let h = Header {
            from: conn.resp_host,
            to: conn.req_host,
            udp_src: conn.resp_port,
            dscp: 26,
            ecn: 2,
            bth: Bth {
                opcode,
                pkey: 0xFFFF,
                dest_qp: conn.req_qpn,
                psn,
                ..Bth::default()
            },
            ext,
            payload,
        };
        let frame = self.builder.build(&h, psn);
        let ts = self.capture.write(now, &frame)?;
        let conn = &mut self.conns[c];
        if !conn.responded {
            conn.responded = true;
            self.responded += 1;
        }
        let t = &mut conn.truth.resp;
        t.packets += 1;
        t.bytes += frame.len() as u64;
        t.payload_bytes += u64::from(payload);
        t.ect0 += 1;
        match resp {
            Resp::Ack { .. } => t.acks += 1,
            Resp::Nak { .. } => t.naks += 1,
            Resp::Read { .. } => t.read_responses += 1,
            Resp::Atomic { .. } => t.atomic_acks += 1,
        }
        let back = ts + 800 + self.rng.range(0, 400);
        self.at(back, Ev::Deliver { c: c as u32, resp });
        Ok(())
    }

    pub(super) fn cnp(&mut self, now: u64, c: usize) -> io::Result<()> {
        let conn = &self.conns[c];
        let h = Header {
            from: conn.resp_host,
            to: conn.req_host,
            udp_src: conn.resp_port,
            dscp: 48,
            ecn: 0,
            bth: Bth {
                opcode: CNP,
                pkey: 0xFFFF,
                becn: true,
                dest_qp: conn.req_qpn,
                psn: 0,
                ..Bth::default()
            },
            ext: ExtHeaders {
                cnp: Some(Cnp::default()),
                ..ExtHeaders::default()
            },
            payload: 0,
        };
        let frame = self.builder.build(&h, 0);
        self.capture.write(now, &frame)?;
        let t = &mut self.conns[c].truth.resp;
        t.packets += 1;
        t.bytes += frame.len() as u64;
        t.cnp += 1;
        Ok(())
    }
}
