//! Values in a filter, as tshark 4.0 types them: fields, protocols, slices (`eth.src[0:3]`), arithmetic
//! (`udp.port + 1`), functions (`len(eth)`) and constants; and their evaluation over one frame's collected
//! fields into a stack and a byte buffer that are reused from frame to frame, so that a frame allocates
//! nothing once they have grown.
use std::ops::Range;

/// What a value is, as tshark types it (a number's width matters to `max()` and `min()`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ty {
    /// An unsigned integer field of this many bits (arithmetic keeps its left operand's type).
    Num(u8),
    Bool,
    Mac,
    Ipv4,
    Ipv6,
    Text,
    Bytes,
    /// `frame.time`: nanoseconds since 1970.
    AbsTime,
    /// `frame.time_delta` and the other offsets: nanoseconds.
    RelTime,
    /// A protocol (`eth`, `frame`): its bytes.
    Proto,
    /// A protocol or header whose bytes a filter does not read (`infiniband.aeth`): present or not.
    Present,
}

impl Ty {
    /// Whether two values of these types compare (tshark: "are not of compatible types").
    pub(super) fn compatible(self, other: Ty) -> bool {
        use Ty::*;
        matches!(
            (self, other),
            (Num(_), Num(_))
                | (Bool, Bool)
                | (Ipv4, Ipv4)
                | (Ipv6, Ipv6)
                | (Text, Text)
                | (AbsTime, AbsTime)
                | (RelTime, RelTime)
                | (Mac | Bytes | Proto, Mac | Bytes | Proto)
        )
    }

    /// Whether it has bytes to slice, search and measure.
    pub(super) fn sliceable(self) -> bool {
        matches!(
            self,
            Ty::Mac | Ty::Ipv4 | Ty::Ipv6 | Ty::Text | Ty::Bytes | Ty::Proto
        )
    }
}

/// Where a span's bytes are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Src {
    /// The packet's own bytes.
    Packet,
    /// The frame's scratch buffer (fields' bytes, slices joined, strings made).
    Scratch,
    /// The filter's constants.
    Pool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Span {
    pub src: Src,
    pub start: u32,
    pub len: u32,
}

/// One value of one frame (or a constant).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Val {
    /// Numbers and times (nanoseconds).
    Num(i128),
    Bool(bool),
    /// An address and its prefix length (32 for one address).
    Ipv4(u32, u8),
    Ipv6(u128, u8),
    Bytes(Span),
    Text(Span),
}

/// A slice's range, as written: `[i:n]`, `[i-j]`, `[i:]`, `[:n]`, `[i]`; a negative start counts from the
/// end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Piece {
    pub start: i64,
    /// How many bytes; `None`: to the end.
    pub len: Option<i64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Op {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    And,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Func {
    Len,
    Count,
    String,
    Upper,
    Lower,
    Abs,
    Max,
    Min,
}

impl Func {
    /// tshark 4.0's functions, by their (case-sensitive) names.
    pub(super) fn named(name: &str) -> Option<Func> {
        Some(match name {
            "len" => Func::Len,
            "count" => Func::Count,
            "string" => Func::String,
            "upper" => Func::Upper,
            "lower" => Func::Lower,
            "abs" => Func::Abs,
            "max" => Func::Max,
            "min" => Func::Min,
            _ => return None,
        })
    }
}

/// Which bytes of a protocol: its header (`len(eth)`, `eth[0:6]`) or all from its start to the end of the
/// packet (`eth contains ...`, as tshark searches a protocol's data).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Extent {
    Header,
    ToEnd,
}

#[derive(Debug)]
pub(super) enum Expr {
    /// The occurrences of a field (its slot).
    Field(usize),
    /// The occurrences of a protocol (its slot).
    Proto(usize, Extent),
    Const(Val),
    Slice(Box<Expr>, Vec<Piece>),
    Arith(Op, Box<Expr>, Box<Expr>),
    Neg(Box<Expr>),
    Call(Func, Vec<Expr>),
}

/// What the walk of a frame collected, and the buffers evaluation writes into.
pub(super) struct Ctx<'c> {
    pub packet: &'c [u8],
    pub pool: &'c [u8],
    /// Each field slot's occurrences.
    pub fields: &'c [Vec<Val>],
    /// Each protocol slot's occurrences: (header start, header length).
    pub protos: &'c [Vec<(u32, u32)>],
    pub scratch: &'c mut Vec<u8>,
    pub stack: &'c mut Vec<Val>,
}

impl Ctx<'_> {
    /// The bytes of a span.
    pub(super) fn bytes(&self, s: Span) -> &[u8] {
        let all: &[u8] = match s.src {
            Src::Packet => self.packet,
            Src::Scratch => self.scratch,
            Src::Pool => self.pool,
        };
        let start = s.start as usize;
        all.get(start..start + s.len as usize).unwrap_or_default()
    }

    fn push_scratch(&mut self, bytes: &[u8]) -> Span {
        let start = self.scratch.len() as u32;
        self.scratch.extend_from_slice(bytes);
        Span {
            src: Src::Scratch,
            start,
            len: bytes.len() as u32,
        }
    }

    /// A value's bytes as a span (addresses written out).
    fn span_of(&mut self, v: Val) -> Option<Span> {
        match v {
            Val::Bytes(s) | Val::Text(s) => Some(s),
            Val::Ipv4(a, _) => Some(self.push_scratch(&a.to_be_bytes())),
            Val::Ipv6(a, _) => Some(self.push_scratch(&a.to_be_bytes())),
            Val::Num(_) | Val::Bool(_) => None,
        }
    }

    /// Evaluates `e`: its values are the stack's entries in the range returned (its operands' values,
    /// pushed first, are overwritten by its results).
    pub(super) fn eval(&mut self, e: &Expr) -> Range<usize> {
        let from = self.stack.len();
        match e {
            Expr::Field(slot) => {
                if let Some(vals) = self.fields.get(*slot) {
                    self.stack.extend_from_slice(vals);
                }
            }
            Expr::Proto(slot, extent) => self.proto(*slot, *extent),
            Expr::Const(v) => self.stack.push(*v),
            Expr::Slice(inner, pieces) => {
                let r = self.eval(inner);
                let mid = self.stack.len();
                for i in r {
                    if let Some(v) = self.stack.get(i).copied()
                        && let Some(s) = self.slice(v, pieces)
                    {
                        self.stack.push(s);
                    }
                }
                self.settle(from, mid);
            }
            Expr::Arith(op, a, b) => {
                let (ra, rb) = (self.eval(a), self.eval(b));
                let mid = self.stack.len();
                for i in ra {
                    for j in rb.clone() {
                        let (x, y) = (self.stack.get(i).copied(), self.stack.get(j).copied());
                        if let Some(v) = x.zip(y).and_then(|(x, y)| self.arith(*op, x, y)) {
                            self.stack.push(v);
                        }
                    }
                }
                self.settle(from, mid);
            }
            Expr::Neg(a) => {
                let r = self.eval(a);
                let mid = self.stack.len();
                for i in r {
                    if let Some(Val::Num(n)) = self.stack.get(i).copied() {
                        self.stack.push(Val::Num(-n));
                    }
                }
                self.settle(from, mid);
            }
            Expr::Call(f, args) => {
                for a in args {
                    self.eval(a);
                }
                let mid = self.stack.len();
                self.call(*f, from..mid);
                self.settle(from, mid);
            }
        }
        from..self.stack.len()
    }

    /// Moves the results (from `mid`) down over the operands (from `from`).
    fn settle(&mut self, from: usize, mid: usize) {
        let end = self.stack.len();
        if mid > from && mid <= end {
            self.stack.copy_within(mid..end, from);
            self.stack.truncate(from + (end - mid));
        }
    }

    fn proto(&mut self, slot: usize, extent: Extent) {
        let end = self.packet.len() as u32;
        let spans = self.protos.get(slot).map(Vec::as_slice).unwrap_or_default();
        for &(start, len) in spans {
            let len = match extent {
                Extent::Header => len,
                Extent::ToEnd => end.saturating_sub(start),
            };
            let src = Src::Packet;
            self.stack.push(Val::Bytes(Span { src, start, len }));
        }
    }

    /// The bytes of `v` the pieces name, or none when one reaches past its end.
    fn slice(&mut self, v: Val, pieces: &[Piece]) -> Option<Val> {
        let text = matches!(v, Val::Text(_));
        let span = self.span_of(v)?;
        let part = |p: &Piece| {
            let len = i64::from(span.len);
            let start = if p.start < 0 { len + p.start } else { p.start };
            let count = p.len.unwrap_or(len - start);
            let fits = start >= 0 && count > 0 && start + count <= len;
            fits.then(|| Span {
                start: span.start + start as u32,
                len: count as u32,
                ..span
            })
        };
        let out = match pieces {
            [one] => part(one)?,
            many => {
                // The pieces joined, in the scratch buffer.
                let from = self.scratch.len();
                for p in many {
                    let Some(s) = part(p) else {
                        self.scratch.truncate(from);
                        return None;
                    };
                    self.copy_to_scratch(s);
                }
                Span {
                    src: Src::Scratch,
                    start: from as u32,
                    len: (self.scratch.len() - from) as u32,
                }
            }
        };
        Some(if text {
            Val::Text(out)
        } else {
            Val::Bytes(out)
        })
    }

    /// Appends a span's bytes to the scratch buffer.
    fn copy_to_scratch(&mut self, s: Span) {
        let at = s.start as usize..(s.start + s.len) as usize;
        match s.src {
            Src::Scratch => {
                if at.end <= self.scratch.len() {
                    self.scratch.extend_from_within(at);
                }
            }
            Src::Packet => self
                .scratch
                .extend_from_slice(self.packet.get(at).unwrap_or_default()),
            Src::Pool => self
                .scratch
                .extend_from_slice(self.pool.get(at).unwrap_or_default()),
        }
    }

    /// Pushes what `f` makes of its arguments' values (`all`).
    fn call(&mut self, f: Func, all: Range<usize>) {
        match f {
            Func::Count => self.stack.push(Val::Num(all.len() as i128)),
            Func::Max | Func::Min => {
                let pick = all
                    .filter_map(|i| match self.stack.get(i) {
                        Some(Val::Num(n)) => Some(*n),
                        _ => None,
                    })
                    .reduce(|a, b| if (f == Func::Max) == (b > a) { b } else { a });
                if let Some(n) = pick {
                    self.stack.push(Val::Num(n));
                }
            }
            _ => {
                for i in all {
                    if let Some(v) = self.stack.get(i).copied()
                        && let Some(r) = self.apply(f, v)
                    {
                        self.stack.push(r);
                    }
                }
            }
        }
    }

    /// A function of one value at a time.
    fn apply(&mut self, f: Func, v: Val) -> Option<Val> {
        Some(match (f, v) {
            (Func::Len, Val::Ipv4(..)) => Val::Num(4),
            (Func::Len, Val::Ipv6(..)) => Val::Num(16),
            (Func::Len, Val::Bytes(s) | Val::Text(s)) => Val::Num(s.len.into()),
            (Func::Abs, Val::Num(n)) => Val::Num(n.abs()),
            (Func::String, v) => Val::Text(self.string(v)),
            (Func::Upper | Func::Lower, Val::Text(s)) => {
                let from = self.scratch.len();
                self.copy_to_scratch(s);
                let made = self.scratch.get_mut(from..).unwrap_or_default();
                if f == Func::Upper {
                    made.make_ascii_uppercase();
                } else {
                    made.make_ascii_lowercase();
                }
                Val::Text(Span {
                    src: Src::Scratch,
                    start: from as u32,
                    len: (self.scratch.len() - from) as u32,
                })
            }
            _ => return None,
        })
    }

    /// A value as tshark's `string()` writes it.
    fn string(&mut self, v: Val) -> Span {
        use std::io::Write as _;
        let from = self.scratch.len();
        match v {
            Val::Num(n) => {
                let _ = write!(self.scratch, "{n}");
            }
            Val::Bool(b) => {
                let _ = write!(self.scratch, "{}", u8::from(b));
            }
            Val::Ipv4(a, _) => {
                let _ = write!(self.scratch, "{}", std::net::Ipv4Addr::from(a));
            }
            Val::Ipv6(a, _) => {
                let _ = write!(self.scratch, "{}", std::net::Ipv6Addr::from(a));
            }
            Val::Text(s) => self.copy_to_scratch(s),
            Val::Bytes(s) => {
                for i in 0..s.len {
                    let b = self
                        .bytes(Span {
                            start: s.start + i,
                            len: 1,
                            ..s
                        })
                        .first()
                        .copied();
                    let sep = if i > 0 { ":" } else { "" };
                    let _ = write!(self.scratch, "{sep}{:02x}", b.unwrap_or(0));
                }
            }
        }
        Span {
            src: Src::Scratch,
            start: from as u32,
            len: (self.scratch.len() - from) as u32,
        }
    }

    /// `x op y` for numbers; `&` of byte strings too (`eth[0] & 1`), byte by byte.
    fn arith(&mut self, op: Op, x: Val, y: Val) -> Option<Val> {
        if let (Op::And, Val::Bytes(a), Val::Bytes(b)) = (op, x, y) {
            let from = self.scratch.len();
            for i in 0..a.len.min(b.len) {
                let at = |s: Span| Span {
                    start: s.start + i,
                    len: 1,
                    ..s
                };
                let x = self.bytes(at(a)).first().copied().unwrap_or(0);
                let y = self.bytes(at(b)).first().copied().unwrap_or(0);
                self.scratch.push(x & y);
            }
            let len = (self.scratch.len() - from) as u32;
            return Some(Val::Bytes(Span {
                src: Src::Scratch,
                start: from as u32,
                len,
            }));
        }
        let (Val::Num(a), Val::Num(b)) = (x, y) else {
            return None;
        };
        Some(Val::Num(match op {
            Op::Add => a.checked_add(b)?,
            Op::Sub => a.checked_sub(b)?,
            Op::Mul => a.checked_mul(b)?,
            Op::Div => a.checked_div(b)?,
            Op::Rem => a.checked_rem(b)?,
            Op::And => a & b,
        }))
    }
}
