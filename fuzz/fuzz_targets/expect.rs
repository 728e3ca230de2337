//! Any bytes as a host's printout (`--expect LOG`): read as perftest's and ibv_*_pingpong's address lines,
//! announced to an engine that then takes a few frames toward the QPs they name, finishes and reports: no
//! panic, no hang, bounded work whatever the lines say.
#![no_main]

use libfuzzer_sys::fuzz_target;
use parsers::builder::{Net, RoceFrame};
use rocescope::analysis::{Config, Engine};
use rocescope::report::Report;
use rocescope::source::printout::exchanges;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let announced = exchanges(&text);
    let mut e = Engine::new(Config::default());
    for x in &announced {
        e.announce(x);
    }
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
    e.finish();
    let _ = Report::build(&e, "fuzz");
});
