//! One MAD of any bytes (the payload of a UD SEND to QP 1), and one CM message under any attribute ID: the
//! MAD and CM parsers and every field's value must never panic, and what parses emits back to its bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use parsers::cm::CmMessage;
use parsers::fields::{Field, Visitor};
use parsers::mad::Mad;

struct Sink(usize);

impl<'a> Visitor<'a> for Sink {
    fn header(&mut self, title: &'static str, offset: usize, len: usize) {
        self.0 += title.len() + offset + len;
    }
    fn field(&mut self, field: Field<'a>) {
        self.0 += format!("{field:?}").len();
    }
}

fuzz_target!(|data: &[u8]| {
    let mut sink = Sink(0);
    if let Ok((mad, _)) = Mad::parse(data) {
        mad.visit(0, &mut sink);
        let mut out = Vec::new();
        mad.emit(&mut out);
        assert_eq!(out, data[..Mad::LEN]);
    }
    // The first two bytes choose the attribute, the rest is the message.
    if let Some((id, rest)) = data.split_first_chunk::<2>() {
        if let Ok(message) = CmMessage::parse(u16::from_be_bytes(*id), rest) {
            message.visit(0, &mut sink);
            let mut out = Vec::new();
            message.emit(&mut out);
            assert_eq!(out, rest[..CmMessage::LEN]);
        }
    }
});
