//! What the live TUI pays every 250 ms: `Report::build` over the engine (the capture thread's snapshot) and
//! the model taking it (sorting and filtering the flow rows), with 1,000 and 10,000 flows whose gap events fill
//! the event list (10,000 events). `cargo bench --bench snapshot`.
use std::sync::Arc;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use parsers::builder::{Net, RoceFrame};
use rocescope::analysis::Engine;
use rocescope::report::Report;
use rocescope::tui::model::{Model, Msg, update};

/// An engine that has seen `flows` SEND flows, 40 packets each, every 3rd round skipping a PSN (13 gaps per
/// flow: the event list is full).
fn engine(flows: u32) -> Engine {
    let mut engine = Engine::new(Default::default());
    let mut n = 0u64;
    for round in 0..40u32 {
        for flow in 0..flows {
            let mut f = RoceFrame::new(0x04);
            if let Net::V4(h) = &mut f.net {
                h.src = [10, (flow >> 16) as u8, (flow >> 8) as u8, flow as u8];
                h.dst = [10, 200, 0, 1];
            }
            f.bth.dest_qp = 0x100 + flow;
            f.bth.psn = round + round / 3;
            f.payload = vec![0; 256];
            let bytes = f.build();
            let frame = parsers::parse_frame(1, &bytes, bytes.len(), &Default::default());
            n += 1;
            engine.ingest(n, n * 1000, &frame);
        }
    }
    engine
}

fn snapshot(c: &mut Criterion) {
    let mut g = c.benchmark_group("live snapshot");
    g.sample_size(20);
    for flows in [1_000u32, 10_000] {
        let engine = engine(flows);
        assert_eq!(engine.flows.len(), flows as usize);
        g.bench_with_input(BenchmarkId::new("Report::build", flows), &engine, |b, e| {
            b.iter(|| Report::build(e, "live capture on lo"))
        });
        let report = Arc::new(Report::build(&engine, "live capture on lo"));
        g.bench_with_input(BenchmarkId::new("model update", flows), &report, |b, r| {
            let mut m = Model::new_live("lo", false);
            b.iter(|| {
                update(&mut m, Msg::Snapshot(Arc::clone(r), 0));
                m.visible_flows().len()
            })
        });
    }
    g.finish();
}

criterion_group!(benches, snapshot);
criterion_main!(benches);
