//! A whole capture file of any bytes (pcap or pcapng, any header, any record): the streaming reader, the
//! parser, the analysis engine and both reports must never panic, hang or grow without bound.
#![no_main]

use libfuzzer_sys::fuzz_target;
use parsers::frame::parse_frame;
use rocescope::analysis::{Config, Engine};
use rocescope::report::Report;
use rocescope::source::FileSource;

fuzz_target!(|data: &[u8]| {
    let Ok(mut src) = FileSource::from_reader(
        "fuzz".to_string(),
        Box::new(std::io::Cursor::new(data.to_vec())),
    ) else {
        return;
    };
    let cfg = parsers::Config::default();
    let mut engine = Engine::new(Config::default());
    let mut number = 0;
    while let Ok(Some(p)) = src.next_packet() {
        number += 1;
        let frame = parse_frame(p.linktype, p.data, p.orig_len as usize, &cfg);
        engine.ingest(number, p.ts_nanos, &frame);
    }
    engine.finish();
    let report = Report::build(&engine, "fuzz");
    let _ = serde_json::to_vec(&report);
    let mut text = Vec::new();
    let _ = rocescope::report::text::write(&mut text, &report, Some(3));
});
