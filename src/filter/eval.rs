//! Running a filter: one walk of a frame's fields records, per test, whether its field occurred and
//! whether any or every occurrence passed; the tree of and/or/not then reads those records.
use std::cmp::Ordering;
use std::sync::Arc;

use parsers::fields::{Field, Value, Visitor};

use super::{Cmp, Filter, Keys, Leaf, Lit, Node, Subject, Test};

#[derive(Clone, Copy)]
struct State {
    seen: bool,
    any: bool,
    all: bool,
}

const FRESH: State = State {
    seen: false,
    any: false,
    all: true,
};

/// A filter with its per-test records, reused from frame to frame.
pub struct Matcher {
    filter: Arc<Filter>,
    state: Vec<State>,
}

impl Matcher {
    pub fn new(filter: Arc<Filter>) -> Matcher {
        let state = vec![FRESH; filter.leaves.len()];
        Matcher { filter, state }
    }

    pub fn filter(&self) -> &Filter {
        &self.filter
    }

    /// True when the frame passes the filter.
    pub fn matches(&mut self, s: &Subject) -> bool {
        self.state.fill(FRESH);
        s.visit(&mut Observe {
            leaves: &self.filter.leaves,
            state: &mut self.state,
        });
        eval(&self.filter.root, &self.filter.leaves, &self.state)
    }
}

struct Observe<'m> {
    leaves: &'m [Leaf],
    state: &'m mut [State],
}

impl<'a> Visitor<'a> for Observe<'_> {
    fn header(&mut self, _title: &'static str, _offset: usize, _len: usize) {}

    fn field(&mut self, f: Field<'a>) {
        for (leaf, st) in self.leaves.iter().zip(self.state.iter_mut()) {
            if !leaf.keys.has(f.key) {
                continue;
            }
            st.seen = true;
            if let Some(pass) = leaf.test.holds(&f.value) {
                st.any |= pass;
                st.all &= pass;
            }
        }
    }
}

fn eval(node: &Node, leaves: &[Leaf], state: &[State]) -> bool {
    match node {
        Node::Or(nodes) => nodes.iter().any(|n| eval(n, leaves, state)),
        Node::And(nodes) => nodes.iter().all(|n| eval(n, leaves, state)),
        Node::Not(n) => !eval(n, leaves, state),
        Node::Leaf(i) => match (leaves.get(*i), state.get(*i)) {
            (Some(leaf), Some(st)) => match leaf.test {
                Test::Exists => st.seen,
                Test::Compare { all: true, .. } => st.seen && st.all,
                _ => st.any,
            },
            _ => false,
        },
    }
}

impl Keys {
    fn has(&self, key: &str) -> bool {
        match self {
            Keys::Exact(keys) => keys.contains(&key),
            Keys::Prefix(p) => key.starts_with(p.as_str()),
        }
    }
}

impl Test {
    /// Whether one occurrence passes; `None` for a presence test.
    fn holds(&self, v: &Value) -> Option<bool> {
        Some(match self {
            Test::Exists => return None,
            Test::Compare { op, rhs, .. } => order(v, rhs).is_some_and(|o| op.holds(o)),
            Test::In(set) => set.holds(v),
            Test::Contains(needle) => contains(v, needle),
            Test::BitAnd(mask) => uint(v).is_some_and(|n| n & mask != 0),
        })
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

fn uint(v: &Value) -> Option<u64> {
    match *v {
        Value::Uint(n) | Value::Hex(n, _) => Some(n),
        Value::Micros(us) => Some(us.into()),
        Value::Bool(b) => Some(b.into()),
        _ => None,
    }
}

/// A value against a literal of its kind; an address inside a network is equal to it.
fn order(v: &Value, lit: &Lit) -> Option<Ordering> {
    match (v, lit) {
        (Value::Bool(b), Lit::Bool(l)) => Some(b.cmp(l)),
        (_, Lit::Uint(n)) => uint(v).map(|u| u.cmp(n)),
        (Value::Ipv4(a), Lit::Ipv4(net, prefix)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(*prefix)).unwrap_or(0);
            Some(network(u32::from_be_bytes(*a), *net, mask))
        }
        (Value::Ipv6(a), Lit::Ipv6(net, prefix)) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(*prefix)).unwrap_or(0);
            Some(network(u128::from_be_bytes(*a), *net, mask))
        }
        (Value::Mac(m), Lit::Bytes(b)) => Some(m.as_slice().cmp(b)),
        (Value::Bytes(a), Lit::Bytes(b)) => Some((*a).cmp(b.as_slice())),
        (Value::Text(t), Lit::Text(s)) => Some((*t).cmp(s.as_str())),
        (Value::Damage(m), Lit::Text(s)) => Some(m.to_string().as_str().cmp(s)),
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

fn contains(v: &Value, needle: &Lit) -> bool {
    let needle: &[u8] = match needle {
        Lit::Bytes(b) => b,
        Lit::Text(t) => t.as_bytes(),
        _ => return false,
    };
    let within = |hay: &[u8]| needle.is_empty() || hay.windows(needle.len()).any(|w| w == needle);
    match v {
        Value::Mac(m) => within(m),
        Value::Bytes(b) => within(b),
        Value::Text(t) => within(t.as_bytes()),
        Value::Damage(m) => within(m.to_string().as_bytes()),
        _ => false,
    }
}
