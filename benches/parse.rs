//! Parsing speed on a realistic RoCEv2 frame mix, in frames per second (criterion's throughput).
//! `cargo bench --bench parse`
use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use parsers::aeth::Aeth;
use parsers::atomic::{AtomicAckEth, AtomicEth};
use parsers::builder::RoceFrame;
use parsers::opcode::{CNP, rc};
use parsers::psn;
use parsers::reth::Reth;
use parsers::{Config, parse_frame};

/// WRITE FIRST/MIDDLE/LAST of 1 KiB segments with ACKs, READ request and 2-packet response, SEND_ONLY,
/// FETCH_ADD with its atomic ACK, a CE-marked packet and a CNP: the shape of RDMA storage/AI traffic.
fn frame_mix() -> Vec<Vec<u8>> {
    let mut frames = Vec::new();
    let mut psn = 0u32;
    let mut next = |op: u8| {
        let mut f = RoceFrame::new(op);
        f.bth.psn = psn;
        psn = psn::add(psn, 1);
        f
    };
    for i in 0..16u32 {
        let mut first = next(rc::WRITE_FIRST);
        first.ext.reth = Some(Reth {
            va: 0x7f00_0000_0000 + u64::from(i) * 4096,
            r_key: 0x1234,
            dma_len: 3072,
        });
        first.payload = vec![0xAB; 1024];
        frames.push(first.build());
        let mut mid = next(rc::WRITE_MIDDLE);
        mid.payload = vec![0xCD; 1024];
        frames.push(mid.build());
        let mut last = next(rc::WRITE_LAST);
        last.bth.ack_req = true;
        last.payload = vec![0xEF; 1024];
        frames.push(last.build());
        let mut ack = next(rc::ACKNOWLEDGE);
        ack.ext.aeth = Some(Aeth {
            syndrome: 0x1F,
            msn: i,
        });
        frames.push(ack.build());
    }
    let mut read = next(rc::READ_REQUEST);
    read.ext.reth = Some(Reth {
        va: 0x1000,
        r_key: 7,
        dma_len: 2048,
    });
    frames.push(read.build());
    for op in [rc::READ_RESPONSE_FIRST, rc::READ_RESPONSE_LAST] {
        let mut resp = next(op);
        resp.ext.aeth = Some(Aeth {
            syndrome: 0x1F,
            msn: 1,
        });
        resp.payload = vec![0x11; 1024];
        frames.push(resp.build());
    }
    let mut send = next(rc::SEND_ONLY);
    send.payload = vec![0x22; 64];
    frames.push(send.build());
    let mut fadd = next(rc::FETCH_ADD);
    fadd.ext.atomic_eth = Some(AtomicEth {
        va: 0x2000,
        r_key: 8,
        swap_add: 1,
        compare: 0,
    });
    frames.push(fadd.build());
    let mut aack = next(rc::ATOMIC_ACKNOWLEDGE);
    aack.ext.aeth = Some(Aeth {
        syndrome: 0x1F,
        msn: 2,
    });
    aack.ext.atomic_ack_eth = Some(AtomicAckEth { orig_rem_data: 41 });
    frames.push(aack.build());
    let mut cnp = next(CNP);
    cnp.bth.becn = true;
    frames.push(cnp.build());
    frames
}

fn parse(c: &mut Criterion) {
    let frames = frame_mix();
    let cfg = Config::default();
    let mut group = c.benchmark_group("parse_frame");
    group.throughput(Throughput::Elements(frames.len() as u64));
    group.bench_function("roce_mix_with_icrc", |b| {
        b.iter(|| {
            let mut valid = 0usize;
            for f in &frames {
                let frame = parse_frame(1, black_box(f), f.len(), &cfg);
                valid += usize::from(frame.roce.is_some_and(|r| r.icrc_status.is_some()));
            }
            assert_eq!(valid, frames.len());
            valid
        })
    });
    // Headers only: the same mix cut at 128 bytes, as a 100G mirror port with snaplen 128 delivers it.
    group.bench_function("roce_mix_snaplen_128", |b| {
        b.iter(|| {
            frames
                .iter()
                .map(|f| {
                    parse_frame(1, black_box(&f[..f.len().min(128)]), f.len(), &cfg)
                        .roce
                        .is_some() as usize
                })
                .sum::<usize>()
        })
    });
    group.finish();
}

criterion_group!(benches, parse);
criterion_main!(benches);
