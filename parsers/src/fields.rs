//! The field list every header exposes: Wireshark's name, a human label, the value and its meaning.
//! The JSON output and the `-V` tree both walk it, so names and meanings live in one place.

/// A decoded field value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value<'a> {
    /// An unsigned integer shown in decimal.
    Uint(u64),
    /// An unsigned integer conventionally shown in hex, with this many hex digits.
    Hex(u64, u8),
    Bool(bool),
    Mac([u8; 6]),
    Ipv4([u8; 4]),
    Ipv6([u8; 16]),
    Text(&'static str),
    /// Microseconds (RNR timer), shown in milliseconds.
    Micros(u32),
    Bytes(&'a [u8]),
    /// Why the frame stopped parsing.
    Damage(crate::error::Malformed),
}

/// One field of one header.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Field<'a> {
    /// Wireshark's display-filter name where it has one (`infiniband.bth.psn`), else `rocescope.*`.
    pub key: &'static str,
    /// What a person calls it (`Packet Sequence Number`).
    pub label: &'static str,
    pub value: Value<'a>,
    /// What the value means (`RNR NAK`, `CE`), when that is not the value itself.
    pub meaning: Option<&'static str>,
}

impl<'a> Field<'a> {
    pub fn new(key: &'static str, label: &'static str, value: Value<'a>) -> Self {
        Field {
            key,
            label,
            value,
            meaning: None,
        }
    }

    pub fn meaning(mut self, meaning: &'static str) -> Self {
        self.meaning = Some(meaning);
        self
    }
}

/// Receives the headers of a frame in wire order.
pub trait Visitor<'a> {
    /// A header starts: `title` names it, `offset..offset+len` are its bytes in the frame.
    fn header(&mut self, title: &'static str, offset: usize, len: usize);
    fn field(&mut self, field: Field<'a>);
}
