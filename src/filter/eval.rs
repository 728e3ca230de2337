//! Running a filter: one walk of a frame's fields collects the values of the fields the filter reads and
//! where its protocols' headers are; the tree of and/or/not then evaluates its tests over them. The
//! buffers are the matcher's, reused from frame to frame: a frame allocates nothing once they have grown.
use std::cmp::Ordering;
use std::sync::Arc;

use parsers::fields::{Field, Value, Visitor};

use super::expr::{Ctx, Expr, Span, Src, Val};
use super::time::Clock;
use super::{Cmp, Filter, Node, Subject, Test};

/// What the walk of one frame collected.
#[derive(Default)]
struct Seen {
    fields: Vec<Vec<Val>>,
    spans: Vec<Vec<(u32, u32)>>,
    present: Vec<bool>,
    /// Per field slot with a layer: how many of its protocol's headers the walk has passed.
    layers: Vec<u32>,
    scratch: Vec<u8>,
    stack: Vec<Val>,
}

/// A filter with its buffers, reused from frame to frame; it sees the frames in order (for the time
/// fields' offsets).
pub struct Matcher {
    filter: Arc<Filter>,
    seen: Seen,
    clock: Option<Clock>,
}

impl Matcher {
    pub fn new(filter: Arc<Filter>) -> Matcher {
        let seen = Seen {
            fields: (0..filter.fields.len()).map(|_| Vec::new()).collect(),
            spans: (0..filter.protos.len()).map(|_| Vec::new()).collect(),
            present: vec![false; filter.protos.len()],
            layers: vec![0; filter.fields.len()],
            ..Seen::default()
        };
        Matcher {
            filter,
            seen,
            clock: None,
        }
    }

    pub fn filter(&self) -> &Filter {
        &self.filter
    }

    /// True when the frame passes the filter.
    pub fn matches(&mut self, s: &Subject) -> bool {
        let now = s.packet.ts_nanos;
        let clock = match self.clock {
            Some(c) => Clock { now, ..c },
            None => Clock {
                now,
                first: now,
                previous: now,
                previous_shown: now,
            },
        };
        let f = &*self.filter;
        let seen = &mut self.seen;
        seen.clear();
        for (slot, vals) in f.fields.iter().zip(seen.fields.iter_mut()) {
            if let Some(name) = slot.time {
                vals.push(Val::Num(clock.value(name)));
            }
        }
        let data = s.packet.data;
        s.visit(&mut Collect { filter: f, seen });
        let mut ctx = Ctx {
            packet: data,
            pool: &f.pool,
            fields: &seen.fields,
            protos: &seen.spans,
            scratch: &mut seen.scratch,
            stack: &mut seen.stack,
        };
        let pass = eval(&f.root, &mut ctx, &seen.present);
        self.clock = Some(Clock {
            previous: now,
            previous_shown: if pass { now } else { clock.previous_shown },
            ..clock
        });
        pass
    }
}

impl Seen {
    fn clear(&mut self) {
        self.fields.iter_mut().for_each(Vec::clear);
        self.spans.iter_mut().for_each(Vec::clear);
        self.present.fill(false);
        self.layers.fill(0);
        self.scratch.clear();
        self.stack.clear();
    }
}

struct Collect<'m> {
    filter: &'m Filter,
    seen: &'m mut Seen,
}

impl<'a> Visitor<'a> for Collect<'_> {
    fn header(&mut self, title: &'static str, offset: usize, len: usize) {
        let slots = self.filter.fields.iter();
        for (slot, n) in slots.zip(self.seen.layers.iter_mut()) {
            *n += u32::from(slot.layer.is_some_and(|l| l.title == title));
        }
        let protos = self.filter.protos.iter();
        for ((p, spans), present) in protos
            .zip(self.seen.spans.iter_mut())
            .zip(self.seen.present.iter_mut())
        {
            if p.title == Some(title) {
                spans.push((offset as u32, len as u32));
                *present = true;
            }
        }
    }

    fn field(&mut self, f: Field<'a>) {
        let protos = self.filter.protos.iter();
        // A protocol with a header title is present where its header is (an IPv6 header's ip.version
        // is no IPv4 header, as in tshark); any other where a field under it is.
        for (p, present) in protos.zip(self.seen.present.iter_mut()) {
            *present |= p.title.is_none() && f.key.starts_with(p.prefix.as_str());
        }
        let slots = self.filter.fields.iter().zip(&self.seen.layers);
        for ((slot, layer), vals) in slots.zip(self.seen.fields.iter_mut()) {
            let in_layer = slot.layer.is_none_or(|l| l.n == *layer);
            if slot.time.is_none() && in_layer && slot.keys.contains(&f.key) {
                vals.push(value(&f.value, &mut self.seen.scratch));
            }
        }
    }
}

/// A field's value as a filter's value (bytes and text copied to `scratch`).
fn value(v: &Value, scratch: &mut Vec<u8>) -> Val {
    let start = scratch.len() as u32;
    let span = |scratch: &Vec<u8>| Span {
        src: Src::Scratch,
        start,
        len: scratch.len() as u32 - start,
    };
    match *v {
        Value::Uint(n) | Value::Hex(n, _) => Val::Num(n.into()),
        Value::Micros(us) => Val::Num(us.into()),
        Value::Bool(b) => Val::Bool(b),
        Value::Ipv4(a) => Val::Ipv4(u32::from_be_bytes(a), 32),
        Value::Ipv6(a) => Val::Ipv6(u128::from_be_bytes(a), 128),
        Value::Mac(m) => {
            scratch.extend_from_slice(&m);
            Val::Bytes(span(scratch))
        }
        Value::Bytes(b) => {
            scratch.extend_from_slice(b);
            Val::Bytes(span(scratch))
        }
        Value::Text(t) => {
            scratch.extend_from_slice(t.as_bytes());
            Val::Text(span(scratch))
        }
        Value::Damage(m) => {
            use std::io::Write as _;
            let _ = write!(scratch, "{m}");
            Val::Text(span(scratch))
        }
    }
}

fn eval(node: &Node, ctx: &mut Ctx, present: &[bool]) -> bool {
    match node {
        Node::Or(nodes) => nodes.iter().any(|n| eval(n, ctx, present)),
        Node::And(nodes) => nodes.iter().all(|n| eval(n, ctx, present)),
        Node::Not(n) => !eval(n, ctx, present),
        Node::Test(t) => {
            let mark = ctx.stack.len();
            let pass = test(t, ctx, present);
            ctx.stack.truncate(mark);
            pass
        }
    }
}

fn test(t: &Test, ctx: &mut Ctx, present: &[bool]) -> bool {
    match t {
        Test::Exists(Expr::Proto(slot, _)) => present.get(*slot).copied().unwrap_or(false),
        Test::Exists(e) => !ctx.eval(e).is_empty(),
        Test::Truthy(e) => {
            let r = ctx.eval(e);
            r.into_iter().any(|i| match ctx.stack.get(i).copied() {
                Some(Val::Num(n)) => n != 0,
                Some(Val::Bytes(s)) => ctx.bytes(s).iter().any(|b| *b != 0),
                _ => false,
            })
        }
        Test::Compare { op, all, lhs, rhs } => compare(ctx, *op, *all, lhs, rhs),
        Test::In(e, set) => {
            let r = ctx.eval(e);
            r.into_iter().any(|i| {
                ctx.stack
                    .get(i)
                    .is_some_and(|v| set.holds(*v, |s| ctx.bytes(s)))
            })
        }
        Test::Contains(hay, needle) => contains(ctx, hay, needle),
        Test::Matches(e, re) => {
            let r = ctx.eval(e);
            r.into_iter()
                .any(|i| bytes_of(ctx, i).is_some_and(|b| re.is_match(b)))
        }
    }
}

/// Whether any pair of values compares so (`all`: every pair, and there is one).
fn compare(ctx: &mut Ctx, op: Cmp, all: bool, lhs: &Expr, rhs: &Expr) -> bool {
    let (a, b) = (ctx.eval(lhs), ctx.eval(rhs));
    let holds = |i: usize, j: usize| {
        let (x, y) = (ctx.stack.get(i).copied(), ctx.stack.get(j).copied());
        x.zip(y)
            .and_then(|(x, y)| order(ctx, x, y))
            .is_some_and(|o| op.holds(o))
    };
    let mut pairs = a.flat_map(|i| b.clone().map(move |j| (i, j)));
    if all {
        let mut any = false;
        pairs.all(|(i, j)| {
            any = true;
            holds(i, j)
        }) && any
    } else {
        pairs.any(|(i, j)| holds(i, j))
    }
}

/// Whether any value's bytes hold any needle's.
fn contains(ctx: &mut Ctx, hay: &Expr, needle: &Expr) -> bool {
    let (a, b) = (ctx.eval(hay), ctx.eval(needle));
    a.into_iter().any(|i| {
        b.clone().any(|j| {
            let (Some(h), Some(n)) = (bytes_of(ctx, i), bytes_of(ctx, j)) else {
                return false;
            };
            n.is_empty() || h.windows(n.len()).any(|w| w == n)
        })
    })
}

/// The bytes of the stack's `i`-th value, when it has bytes.
fn bytes_of<'c>(ctx: &'c Ctx, i: usize) -> Option<&'c [u8]> {
    match ctx.stack.get(i)? {
        Val::Bytes(s) | Val::Text(s) => Some(ctx.bytes(*s)),
        _ => None,
    }
}

/// Two values of compatible types; an address inside a network is equal to it.
fn order(ctx: &Ctx, x: Val, y: Val) -> Option<Ordering> {
    match (x, y) {
        (Val::Num(a), Val::Num(b)) => Some(a.cmp(&b)),
        (Val::Bool(a), Val::Bool(b)) => Some(a.cmp(&b)),
        (Val::Ipv4(a, p), Val::Ipv4(b, q)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(p.min(q))).unwrap_or(0);
            Some(network(a, b, mask))
        }
        (Val::Ipv6(a, p), Val::Ipv6(b, q)) => {
            let mask = u128::MAX
                .checked_shl(128 - u32::from(p.min(q)))
                .unwrap_or(0);
            Some(network(a, b, mask))
        }
        (Val::Bytes(a) | Val::Text(a), Val::Bytes(b) | Val::Text(b)) => {
            Some(ctx.bytes(a).cmp(ctx.bytes(b)))
        }
        _ => None,
    }
}

fn network<T: Ord + Copy + std::ops::BitAnd<Output = T>>(a: T, net: T, mask: T) -> Ordering {
    if a & mask == net & mask {
        Ordering::Equal
    } else {
        a.cmp(&net)
    }
}

impl Cmp {
    fn holds(self, o: Ordering) -> bool {
        match self {
            Cmp::Eq => o.is_eq(),
            Cmp::Ne => o.is_ne(),
            Cmp::Gt => o.is_gt(),
            Cmp::Ge => o.is_ge(),
            Cmp::Lt => o.is_lt(),
            Cmp::Le => o.is_le(),
        }
    }
}
