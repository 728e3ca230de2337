//! The BTH opcode table: transport and operation, the name, and which extended headers follow the BTH.

/// Bit set of the extended headers an opcode implies, in wire order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Headers(u16);

impl Headers {
    pub const RDETH: Headers = Headers(1 << 0);
    pub const DETH: Headers = Headers(1 << 1);
    pub const XRCETH: Headers = Headers(1 << 2);
    pub const FETH: Headers = Headers(1 << 3);
    pub const RETH: Headers = Headers(1 << 4);
    pub const ATOMIC_ETH: Headers = Headers(1 << 5);
    pub const AETH: Headers = Headers(1 << 6);
    pub const ATOMIC_ACK_ETH: Headers = Headers(1 << 7);
    pub const IMMDT: Headers = Headers(1 << 8);
    pub const IETH: Headers = Headers(1 << 9);
    pub const CNP: Headers = Headers(1 << 10);
    pub const NONE: Headers = Headers(0);

    pub const fn with(self, other: Headers) -> Headers {
        Headers(self.0 | other.0)
    }

    pub const fn has(self, other: Headers) -> bool {
        self.0 & other.0 == other.0 && other.0 != 0
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Transport {
    Rc,
    Uc,
    Rd,
    Ud,
    Cnp,
    Xrc,
    Unknown,
}

/// Where a packet stands in its message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Position {
    First,
    Middle,
    Last,
    Only,
}

/// A BTH opcode: top 3 bits the transport, low 5 bits the operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Opcode(pub u8);

pub const CNP: u8 = 0x81;
/// What the GSI sends its MADs with.
pub const UD_SEND_ONLY: u8 = 0x60 | rc::SEND_ONLY;

/// The RC opcodes by name (the transport bits are 0: the UC, RD, UD and XRC opcodes are these plus 0x20,
/// 0x40, 0x60 and 0xA0).
pub mod rc {
    pub const SEND_FIRST: u8 = 0x00;
    pub const SEND_MIDDLE: u8 = 0x01;
    pub const SEND_LAST: u8 = 0x02;
    pub const SEND_LAST_IMM: u8 = 0x03;
    pub const SEND_ONLY: u8 = 0x04;
    pub const SEND_ONLY_IMM: u8 = 0x05;
    pub const WRITE_FIRST: u8 = 0x06;
    pub const WRITE_MIDDLE: u8 = 0x07;
    pub const WRITE_LAST: u8 = 0x08;
    pub const WRITE_LAST_IMM: u8 = 0x09;
    pub const WRITE_ONLY: u8 = 0x0A;
    pub const WRITE_ONLY_IMM: u8 = 0x0B;
    pub const READ_REQUEST: u8 = 0x0C;
    pub const READ_RESPONSE_FIRST: u8 = 0x0D;
    pub const READ_RESPONSE_MIDDLE: u8 = 0x0E;
    pub const READ_RESPONSE_LAST: u8 = 0x0F;
    pub const READ_RESPONSE_ONLY: u8 = 0x10;
    pub const ACKNOWLEDGE: u8 = 0x11;
    pub const ATOMIC_ACKNOWLEDGE: u8 = 0x12;
    pub const COMPARE_SWAP: u8 = 0x13;
    pub const FETCH_ADD: u8 = 0x14;
    pub const SEND_LAST_INVALIDATE: u8 = 0x16;
    pub const SEND_ONLY_INVALIDATE: u8 = 0x17;
    pub const FLUSH: u8 = 0x1C;
    pub const ATOMIC_WRITE: u8 = 0x1D;
}

impl Opcode {
    pub const fn transport(self) -> Transport {
        if self.0 == CNP {
            return Transport::Cnp;
        }
        if !is_known(self.0) {
            return Transport::Unknown;
        }
        match self.0 >> 5 {
            0 => Transport::Rc,
            1 => Transport::Uc,
            2 => Transport::Rd,
            3 => Transport::Ud,
            5 => Transport::Xrc,
            _ => Transport::Unknown,
        }
    }

    /// The operation code (low 5 bits).
    pub const fn operation(self) -> u8 {
        self.0 & 0x1F
    }

    pub const fn is_known(self) -> bool {
        is_known(self.0)
    }

    /// `RC_SEND_FIRST`, `UD_SEND_ONLY`, `CNP`, or `UNKNOWN` for an opcode no transport defines.
    pub fn name(self) -> &'static str {
        match self.0 {
            0x00 => "RC_SEND_FIRST",
            0x01 => "RC_SEND_MIDDLE",
            0x02 => "RC_SEND_LAST",
            0x03 => "RC_SEND_LAST_IMM",
            0x04 => "RC_SEND_ONLY",
            0x05 => "RC_SEND_ONLY_IMM",
            0x06 => "RC_WRITE_FIRST",
            0x07 => "RC_WRITE_MIDDLE",
            0x08 => "RC_WRITE_LAST",
            0x09 => "RC_WRITE_LAST_IMM",
            0x0A => "RC_WRITE_ONLY",
            0x0B => "RC_WRITE_ONLY_IMM",
            0x0C => "RC_READ_REQUEST",
            0x0D => "RC_READ_RESPONSE_FIRST",
            0x0E => "RC_READ_RESPONSE_MIDDLE",
            0x0F => "RC_READ_RESPONSE_LAST",
            0x10 => "RC_READ_RESPONSE_ONLY",
            0x11 => "RC_ACKNOWLEDGE",
            0x12 => "RC_ATOMIC_ACKNOWLEDGE",
            0x13 => "RC_COMPARE_SWAP",
            0x14 => "RC_FETCH_ADD",
            0x16 => "RC_SEND_LAST_INVALIDATE",
            0x17 => "RC_SEND_ONLY_INVALIDATE",
            0x1C => "RC_FLUSH",
            0x1D => "RC_ATOMIC_WRITE",
            0x20 => "UC_SEND_FIRST",
            0x21 => "UC_SEND_MIDDLE",
            0x22 => "UC_SEND_LAST",
            0x23 => "UC_SEND_LAST_IMM",
            0x24 => "UC_SEND_ONLY",
            0x25 => "UC_SEND_ONLY_IMM",
            0x26 => "UC_WRITE_FIRST",
            0x27 => "UC_WRITE_MIDDLE",
            0x28 => "UC_WRITE_LAST",
            0x29 => "UC_WRITE_LAST_IMM",
            0x2A => "UC_WRITE_ONLY",
            0x2B => "UC_WRITE_ONLY_IMM",
            0x40 => "RD_SEND_FIRST",
            0x41 => "RD_SEND_MIDDLE",
            0x42 => "RD_SEND_LAST",
            0x43 => "RD_SEND_LAST_IMM",
            0x44 => "RD_SEND_ONLY",
            0x45 => "RD_SEND_ONLY_IMM",
            0x46 => "RD_WRITE_FIRST",
            0x47 => "RD_WRITE_MIDDLE",
            0x48 => "RD_WRITE_LAST",
            0x49 => "RD_WRITE_LAST_IMM",
            0x4A => "RD_WRITE_ONLY",
            0x4B => "RD_WRITE_ONLY_IMM",
            0x4C => "RD_READ_REQUEST",
            0x4D => "RD_READ_RESPONSE_FIRST",
            0x4E => "RD_READ_RESPONSE_MIDDLE",
            0x4F => "RD_READ_RESPONSE_LAST",
            0x50 => "RD_READ_RESPONSE_ONLY",
            0x51 => "RD_ACKNOWLEDGE",
            0x52 => "RD_ATOMIC_ACKNOWLEDGE",
            0x53 => "RD_COMPARE_SWAP",
            0x54 => "RD_FETCH_ADD",
            0x55 => "RD_RESYNC",
            0x64 => "UD_SEND_ONLY",
            0x65 => "UD_SEND_ONLY_IMM",
            0xA0 => "XRC_SEND_FIRST",
            0xA1 => "XRC_SEND_MIDDLE",
            0xA2 => "XRC_SEND_LAST",
            0xA3 => "XRC_SEND_LAST_IMM",
            0xA4 => "XRC_SEND_ONLY",
            0xA5 => "XRC_SEND_ONLY_IMM",
            0xA6 => "XRC_WRITE_FIRST",
            0xA7 => "XRC_WRITE_MIDDLE",
            0xA8 => "XRC_WRITE_LAST",
            0xA9 => "XRC_WRITE_LAST_IMM",
            0xAA => "XRC_WRITE_ONLY",
            0xAB => "XRC_WRITE_ONLY_IMM",
            0xAC => "XRC_READ_REQUEST",
            0xAD => "XRC_READ_RESPONSE_FIRST",
            0xAE => "XRC_READ_RESPONSE_MIDDLE",
            0xAF => "XRC_READ_RESPONSE_LAST",
            0xB0 => "XRC_READ_RESPONSE_ONLY",
            0xB1 => "XRC_ACKNOWLEDGE",
            0xB2 => "XRC_ATOMIC_ACKNOWLEDGE",
            0xB3 => "XRC_COMPARE_SWAP",
            0xB4 => "XRC_FETCH_ADD",
            0xB6 => "XRC_SEND_LAST_INVALIDATE",
            0xB7 => "XRC_SEND_ONLY_INVALIDATE",
            0x81 => "CNP",
            _ => "UNKNOWN",
        }
    }

    /// A name for narrow columns: the operation abbreviated (`SEND_F`, `WR_LI`, `RD_RSP_O`, `ACK`), after the
    /// transport unless that is RC (`UD SEND_O`); `CNP`; `UNKNOWN` as [`Opcode::name`].
    pub fn short_name(self) -> ShortName {
        ShortName(self)
    }

    /// Looks an opcode up by name, case-insensitively (`rc_send_only`), or by number (`4`, `0x11`).
    pub fn from_name(name: &str) -> Option<Opcode> {
        let parsed = match name.strip_prefix("0x").or_else(|| name.strip_prefix("0X")) {
            Some(hex) => u8::from_str_radix(hex, 16).ok(),
            None => name.parse::<u8>().ok(),
        };
        if let Some(op) = parsed {
            return Some(Opcode(op));
        }
        (0..=255u8)
            .map(Opcode)
            .find(|op| op.is_known() && op.name().eq_ignore_ascii_case(name))
    }

    /// True for requests (sends, writes, read requests, atomics, flush, resync): what a requester emits.
    pub fn is_request(self) -> bool {
        self.is_known() && self.0 != CNP && !self.is_response()
    }

    /// True for READ responses, ACKs and atomic ACKs: what a responder emits.
    pub fn is_response(self) -> bool {
        self.is_known() && self.0 != CNP && (0x0D..=0x12).contains(&self.operation())
    }

    pub fn is_read_response(self) -> bool {
        self.is_response() && (0x0D..=0x10).contains(&self.operation())
    }

    /// ACKNOWLEDGE: an ACK or a NAK (the AETH syndrome tells which).
    pub fn is_ack(self) -> bool {
        self.is_response() && self.operation() == rc::ACKNOWLEDGE
    }

    /// ATOMIC_ACKNOWLEDGE: the answer to a COMPARE_SWAP or FETCH_ADD, with the original value.
    pub fn is_atomic_ack(self) -> bool {
        self.is_response() && self.operation() == rc::ATOMIC_ACKNOWLEDGE
    }

    /// An RDMA READ request (RC, RD or XRC).
    pub fn is_read_request(self) -> bool {
        self.is_request() && self.operation() == rc::READ_REQUEST
    }

    /// COMPARE_SWAP or FETCH_ADD: one request packet, answered by an ATOMIC_ACKNOWLEDGE.
    pub fn is_atomic(self) -> bool {
        self.is_request() && matches!(self.operation(), rc::COMPARE_SWAP | rc::FETCH_ADD)
    }

    /// A segment of a SEND or WRITE message (FIRST, MIDDLE, LAST or ONLY, with immediate or invalidate):
    /// what the responder reassembles into messages.
    pub fn is_send_or_write(self) -> bool {
        self.is_request()
            && matches!(
                self.operation(),
                rc::SEND_FIRST
                    ..=rc::WRITE_ONLY_IMM | rc::SEND_LAST_INVALIDATE | rc::SEND_ONLY_INVALIDATE
            )
    }

    /// The packet carries an AETH (ACKs, NAKs, READ responses FIRST/LAST/ONLY, atomic ACKs).
    pub fn has_aeth(self) -> bool {
        self.headers().has(Headers::AETH)
    }

    /// PSNs this request consumes: one, or for a READ of `dma_len` bytes one per response packet at the path
    /// MTU (`None` while the MTU is unknown).
    pub fn psns_consumed(self, dma_len: Option<u32>, mtu: Option<u32>) -> Option<u32> {
        match dma_len {
            Some(len) if self.is_read_request() => mtu.map(|m| crate::psn::read_psns(len, m)),
            _ => Some(1),
        }
    }

    /// True when the packet may carry payload bytes.
    pub fn has_payload(self) -> bool {
        self.is_known()
            && self.0 != CNP
            && matches!(self.operation(), 0x00..=0x0B | 0x0D..=0x10 | 0x16 | 0x17 | 0x1D)
    }

    /// The packet's place in a multi-packet message, for sends, writes and READ responses.
    pub fn position(self) -> Option<Position> {
        if !self.is_known() || self.0 == CNP {
            return None;
        }
        match self.operation() {
            0x00 | 0x06 | 0x0D => Some(Position::First),
            0x01 | 0x07 | 0x0E => Some(Position::Middle),
            0x02 | 0x03 | 0x08 | 0x09 | 0x0F | 0x16 => Some(Position::Last),
            0x04 | 0x05 | 0x0A | 0x0B | 0x10 | 0x17 => Some(Position::Only),
            _ => None,
        }
    }

    /// The extended headers that follow the BTH, by transport and operation.
    pub fn headers(self) -> Headers {
        HEADERS
            .get(usize::from(self.0))
            .copied()
            .unwrap_or(Headers::NONE)
    }

    const fn compute_headers(self) -> Headers {
        let transport = self.transport();
        let op = match transport {
            Transport::Unknown => return Headers::NONE,
            Transport::Cnp => return Headers::CNP,
            _ => self.operation(),
        };
        let by_op = match op {
            0x03 | 0x05 | 0x09 => Headers::IMMDT,
            0x06 | 0x0A | 0x0C | 0x1D => Headers::RETH,
            0x0B => Headers::RETH.with(Headers::IMMDT),
            0x0D | 0x0F | 0x10 | 0x11 => Headers::AETH,
            0x12 => Headers::AETH.with(Headers::ATOMIC_ACK_ETH),
            0x13 | 0x14 => Headers::ATOMIC_ETH,
            0x16 | 0x17 => Headers::IETH,
            0x1C => Headers::FETH.with(Headers::RETH),
            _ => Headers::NONE,
        };
        let response = op >= 0x0D && op <= 0x12;
        let by_transport = match transport {
            Transport::Rd if response => Headers::RDETH,
            Transport::Rd => Headers::RDETH.with(Headers::DETH),
            Transport::Ud => Headers::DETH,
            Transport::Xrc if !response => Headers::XRCETH,
            _ => Headers::NONE,
        };
        by_transport.with(by_op)
    }
}

/// [`Opcode::short_name`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShortName(Opcode);

impl core::fmt::Display for ShortName {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let op = self.0;
        let transport = match op.transport() {
            Transport::Rc => "",
            Transport::Uc => "UC ",
            Transport::Rd => "RD ",
            Transport::Ud => "UD ",
            Transport::Xrc => "XRC ",
            Transport::Cnp | Transport::Unknown => return f.write_str(op.name()),
        };
        let operation = match op.operation() {
            rc::SEND_FIRST => "SEND_F",
            rc::SEND_MIDDLE => "SEND_M",
            rc::SEND_LAST => "SEND_L",
            rc::SEND_LAST_IMM => "SEND_LI",
            rc::SEND_ONLY => "SEND_O",
            rc::SEND_ONLY_IMM => "SEND_OI",
            rc::WRITE_FIRST => "WR_F",
            rc::WRITE_MIDDLE => "WR_M",
            rc::WRITE_LAST => "WR_L",
            rc::WRITE_LAST_IMM => "WR_LI",
            rc::WRITE_ONLY => "WR_O",
            rc::WRITE_ONLY_IMM => "WR_OI",
            rc::READ_REQUEST => "RD_REQ",
            rc::READ_RESPONSE_FIRST => "RD_RSP_F",
            rc::READ_RESPONSE_MIDDLE => "RD_RSP_M",
            rc::READ_RESPONSE_LAST => "RD_RSP_L",
            rc::READ_RESPONSE_ONLY => "RD_RSP_O",
            rc::ACKNOWLEDGE => "ACK",
            rc::ATOMIC_ACKNOWLEDGE => "AT_ACK",
            rc::COMPARE_SWAP => "CSWAP",
            rc::FETCH_ADD => "FADD",
            0x15 => "RESYNC",
            rc::SEND_LAST_INVALIDATE => "SEND_LINV",
            rc::SEND_ONLY_INVALIDATE => "SEND_OINV",
            rc::FLUSH => "FLUSH",
            rc::ATOMIC_WRITE => "AT_WRITE",
            _ => return f.write_str(op.name()),
        };
        write!(f, "{transport}{operation}")
    }
}

/// The opcodes some transport defines (the names above), as a test the compiler can run.
const fn is_known(op: u8) -> bool {
    matches!(op, 0x00..=0x14 | 0x16 | 0x17 | 0x1C | 0x1D | 0x20..=0x2B | 0x40..=0x55 | 0x64 | 0x65 | 0x81 | 0xA0..=0xB4 | 0xB6 | 0xB7)
}

/// `Opcode::headers` for every opcode, computed at compile time: the per-packet path only indexes it.
#[allow(clippy::indexing_slicing)] // const evaluation: `op` < 256 by the loop condition
static HEADERS: [Headers; 256] = {
    let mut table = [Headers::NONE; 256];
    let mut op = 0;
    while op < 256 {
        table[op] = Opcode(op as u8).compute_headers();
        op += 1;
    }
    table
};
