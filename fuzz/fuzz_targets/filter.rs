//! Any text as a display filter (`-Y`): compiling must never panic nor hang, and what compiles runs on
//! frames of every kind (a WRITE with RETH, a CM REQ, a PFC frame) without a panic.
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use parsers::builder::{RoceFrame, mac_control_frame};
use parsers::cm::{CmMessage, Req};
use parsers::mac_control::MacControl;
use parsers::mad::Mad;
use rocescope::filter::{Filter, Matcher, Subject};
use rocescope::source::Packet;

fuzz_target!(|data: &[u8]| {
    let Ok(filter) = Filter::new(&String::from_utf8_lossy(data)) else {
        return;
    };
    let mut m = Matcher::new(Arc::new(filter));
    let mut write = RoceFrame::new(parsers::opcode::rc::WRITE_FIRST);
    write.payload = vec![1; 64];
    let frames = [
        write.build(),
        RoceFrame::gsi(&Mad::cm_send(1, CmMessage::Req(Req::default()))).build(),
        mac_control_frame([2, 0, 0, 0, 0, 1], &[], MacControl::Pause { quanta: 3 }),
    ];
    for (number, data) in frames.iter().enumerate() {
        let packet = Packet {
            ts_nanos: 0,
            linktype: 1,
            interface: 0,
            data,
            orig_len: data.len() as u32,
        };
        let frame = parsers::parse_frame(1, data, data.len(), &Default::default());
        let s = Subject {
            number: number as u64 + 1,
            packet: &packet,
            frame: &frame,
            interface: None,
            analysis: None,
        };
        let _ = m.matches(&s);
    }
});
