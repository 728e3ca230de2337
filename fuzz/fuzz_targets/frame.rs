//! One frame of any bytes, under each link type rocescope reads: the parser, its ICRC check (deferred and
//! not) and every field's value must never panic, hang or read out of bounds.
#![no_main]

use libfuzzer_sys::fuzz_target;
use parsers::fields::{Field, Visitor};
use parsers::frame::{parse_frame, parse_frame_deferred};

/// The link types of FileSource and libpcap that rocescope decodes: Ethernet, Linux cooked v1 and v2,
/// InfiniBand, ERF, IP over InfiniBand, and one it does not (the frame must still come back, as not RoCE).
const LINKTYPES: [u16; 7] = [1, 113, 276, 247, 197, 242, 105];

struct Sink(usize);

impl<'a> Visitor<'a> for Sink {
    fn header(&mut self, title: &'static str, offset: usize, len: usize) {
        self.0 += title.len() + offset + len;
    }
    fn field(&mut self, field: Field<'a>) {
        // formatting every value is what dissect and the TUI do with it
        self.0 += format!("{field:?}").len();
    }
}

fuzz_target!(|input: &[u8]| {
    let Some((&sel, data)) = input.split_first() else {
        return;
    };
    let linktype = LINKTYPES[usize::from(sel) % LINKTYPES.len()];
    let cfg = parsers::Config::default();
    // orig_len longer than the bytes: the frame was cut by the snaplen
    for orig_len in [data.len(), data.len() + usize::from(sel >> 2)] {
        let frame = parse_frame(linktype, data, orig_len, &cfg);
        let mut sink = Sink(0);
        frame.visit(&mut sink);
        let _ = parsers::other::summary(&frame);
        let _ = (
            frame.is_roce(),
            frame.src(),
            frame.dst(),
            frame.ecn(),
            frame.dscp(),
        );
        let deferred = parse_frame_deferred(linktype, data, orig_len, &cfg);
        if let Some(cover) = deferred.roce.and_then(|r| r.icrc_deferred) {
            let _ = cover.check(data);
        }
        let _ = deferred.detached().is_roce();
    }
});
