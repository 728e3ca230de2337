//! Any bytes as a host's printout or a job's log (`--expect LOG`): read as perftest's and ibv_*_pingpong's
//! address lines and as NCCL's and UCX's lines, announced to an engine that then takes a few frames toward
//! the QPs they name (and from the QPs the job's log names), finishes and reports: no panic, no hang,
//! bounded work whatever the lines say.
#![no_main]

use libfuzzer_sys::fuzz_target;
use parsers::builder::{Net, RoceFrame};
use rocescope::analysis::{Config, Engine};
use rocescope::report::Report;
use rocescope::source::joblog;
use rocescope::source::printout::exchanges;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let announced = exchanges(&text);
    let jobs = std::sync::Arc::new(joblog::read("fuzz.log", &text));
    let mut e = Engine::new(Config::default());
    for x in &announced {
        e.announce(x);
    }
    e.expect_jobs(std::sync::Arc::clone(&jobs));
    // Data toward the first QPNs printed, and their answers, from and to the printed addresses.
    for (n, x) in announced.iter().take(4).enumerate() {
        for (i, (op, qp)) in [(0x04, x.remote.qpn), (0x11, x.local.qpn)]
            .into_iter()
            .enumerate()
        {
            let mut f = RoceFrame::new(op);
            if let (
                Net::V4(ip),
                Some(parsers::frame::Addr::V4(a)),
                Some(parsers::frame::Addr::V4(b)),
            ) = (&mut f.net, x.local.gid, x.remote.gid)
            {
                (ip.src, ip.dst) = if i == 0 { (a, b) } else { (b, a) };
            }
            f.bth.dest_qp = qp;
            f.bth.psn = x.local.psn;
            let bytes = f.build();
            let frame = parsers::parse_frame(1, &bytes, bytes.len(), &Default::default());
            e.ingest((2 * n + i + 1) as u64, (n * 1000 + i) as u64, &frame);
        }
    }
    // Each logged QP's requests to the QP it names, and its answers back, from and to its address.
    for (n, q) in jobs.qps.iter().take(4).enumerate() {
        let (Some(parsers::frame::Addr::V4(a)), Some(remote)) = (q.addr, q.remote_qpn) else {
            continue;
        };
        for (i, (op, qp)) in [(0x0a, remote), (0x11, q.qpn)].into_iter().enumerate() {
            let mut f = RoceFrame::new(op);
            if let Net::V4(ip) = &mut f.net {
                (ip.src, ip.dst) = if i == 0 {
                    (a, [10, 9, 9, 9])
                } else {
                    ([10, 9, 9, 9], a)
                };
                ip.dscp = 26;
            }
            f.bth.dest_qp = qp;
            let bytes = f.build();
            let frame = parsers::parse_frame(1, &bytes, bytes.len(), &Default::default());
            e.ingest(
                (100 + 2 * n + i) as u64,
                (10_000 + n * 1000 + i) as u64,
                &frame,
            );
        }
    }
    e.finish();
    let _ = Report::build(&e, "fuzz");
});
