//! Damage reports: which layer broke, and why.
use core::fmt;

/// The protocol layer where a frame stopped parsing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Layer {
    Ethernet,
    LinuxSll,
    /// The ERF record header of link type 197.
    Erf,
    /// IP over InfiniBand's pseudo-header and encapsulation header (link type 242).
    Ipoib,
    /// InfiniBand's Local Route Header.
    Lrh,
    Vlan,
    MacControl,
    Ipv4,
    Ipv6,
    Grh,
    Udp,
    /// The GRE header of a tunnel or mirror session.
    Gre,
    Erspan,
    Vxlan,
    Bth,
    Rdeth,
    Deth,
    Xrceth,
    Feth,
    Reth,
    AtomicEth,
    Aeth,
    AtomicAckEth,
    ImmDt,
    Ieth,
    Cnp,
    Payload,
    Icrc,
    /// The management datagram a UD SEND to QP 1 carries.
    Mad,
    /// The Communication Management message inside a MAD.
    Cm,
}

impl Layer {
    pub fn name(self) -> &'static str {
        match self {
            Layer::Ethernet => "Ethernet",
            Layer::LinuxSll => "Linux cooked capture",
            Layer::Erf => "ERF",
            Layer::Ipoib => "IPoIB",
            Layer::Lrh => "LRH",
            Layer::Vlan => "802.1Q",
            Layer::MacControl => "MAC control",
            Layer::Ipv4 => "IPv4",
            Layer::Ipv6 => "IPv6",
            Layer::Grh => "GRH",
            Layer::Udp => "UDP",
            Layer::Gre => "GRE",
            Layer::Erspan => "ERSPAN",
            Layer::Vxlan => "VXLAN",
            Layer::Bth => "BTH",
            Layer::Rdeth => "RDETH",
            Layer::Deth => "DETH",
            Layer::Xrceth => "XRCETH",
            Layer::Feth => "FETH",
            Layer::Reth => "RETH",
            Layer::AtomicEth => "AtomicETH",
            Layer::Aeth => "AETH",
            Layer::AtomicAckEth => "AtomicAckETH",
            Layer::ImmDt => "ImmDt",
            Layer::Ieth => "IETH",
            Layer::Cnp => "CNP",
            Layer::Payload => "payload",
            Layer::Icrc => "ICRC",
            Layer::Mad => "MAD",
            Layer::Cm => "CM",
        }
    }
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What was wrong at that layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MalformedKind {
    /// The header needs `needed` bytes and only `available` were in the frame as sent.
    Truncated { needed: usize, available: usize },
    /// The header was cut by the capture's snap length (the frame on the wire was longer).
    CutBySnaplen { needed: usize, available: usize },
    /// A length field claims more bytes than the frame holds.
    LengthBeyondFrame { claimed: usize, available: usize },
    /// A length field is smaller than the headers it must contain.
    LengthTooShort { claimed: usize, minimum: usize },
    /// IPv4 version nibble is not 4, IPv6 not 6.
    BadVersion(u8),
    /// BTH PadCnt is larger than the payload it pads.
    PadBeyondPayload { pad: u8, payload: usize },
    /// Too many stacked VLAN tags (more than two).
    TooManyVlanTags,
    /// No room for the 4-byte ICRC after the headers.
    NoRoomForIcrc { available: usize },
    /// Encapsulations (GRE, ERSPAN, VXLAN) nested deeper than `limit`: the rest is not followed.
    TooManyEncapsulations { limit: usize },
}

/// A frame's damage: the layer where parsing stopped and the reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Malformed {
    pub layer: Layer,
    pub kind: MalformedKind,
}

impl Malformed {
    pub fn new(layer: Layer, kind: MalformedKind) -> Self {
        Malformed { layer, kind }
    }

    pub(crate) fn truncated(layer: Layer, needed: usize, available: usize) -> Self {
        Malformed::new(layer, MalformedKind::Truncated { needed, available })
    }

    /// True when the damage is only the capture's snap length, not the frame itself.
    pub fn is_snaplen(&self) -> bool {
        matches!(self.kind, MalformedKind::CutBySnaplen { .. })
    }
}

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let layer = self.layer;
        match self.kind {
            MalformedKind::Truncated { needed, available } => {
                write!(
                    f,
                    "{layer} truncated: needs {needed} bytes, {available} present"
                )
            }
            MalformedKind::CutBySnaplen { needed, available } => write!(
                f,
                "{layer} cut by the capture snaplen: needs {needed} bytes, {available} captured"
            ),
            MalformedKind::LengthBeyondFrame { claimed, available } => write!(
                f,
                "{layer} length {claimed} exceeds the {available} bytes in the frame"
            ),
            MalformedKind::LengthTooShort { claimed, minimum } => {
                write!(
                    f,
                    "{layer} length {claimed} is less than the minimum {minimum}"
                )
            }
            MalformedKind::BadVersion(v) => write!(f, "{layer} version field is {v}"),
            MalformedKind::PadBeyondPayload { pad, payload } => write!(
                f,
                "{layer} PadCnt {pad} is larger than the {payload}-byte payload"
            ),
            MalformedKind::TooManyVlanTags => write!(f, "{layer}: more than two stacked tags"),
            MalformedKind::TooManyEncapsulations { limit } => {
                write!(f, "{layer}: encapsulated more than {limit} deep")
            }
            MalformedKind::NoRoomForIcrc { available } => {
                write!(
                    f,
                    "{layer}: {available} bytes left, no room for the 4-byte ICRC"
                )
            }
        }
    }
}

/// Checks that `input` holds a whole `len`-byte header of `layer`.
pub(crate) fn need(layer: Layer, input: &[u8], len: usize) -> Result<(), Malformed> {
    if input.len() < len {
        Err(Malformed::truncated(layer, len, input.len()))
    } else {
        Ok(())
    }
}

/// nom cannot fail after `need` succeeded; this maps the impossible case to a report instead of a panic.
pub(crate) fn short<E>(layer: Layer, needed: usize, input: &[u8]) -> impl FnOnce(E) -> Malformed {
    let available = input.len();
    move |_| Malformed::truncated(layer, needed, available)
}
