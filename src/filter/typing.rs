//! From a value's text to a typed [`Expr`], as tshark 4.0 types it: a name is a field or protocol when
//! rocescope has one by it, else a literal read as the type of what it is compared with; arithmetic takes
//! its left operand's type; functions take what tshark's take.
use pest::iterators::Pair;

use parsers::fields::Kind;

use super::compile::{Compiler, FilterError, Problem, Rule, bare};
use super::expr::{Expr, Extent, Func, Op, Piece, Ty, Val};
use super::literal::{self, Form};
use super::names::{self, Resolved};
use super::{FieldSlot, Layer, ProtoSlot, time, widths};

/// The protocols whose bytes a filter may read (slices, `len()`, `contains`), by their header's title in
/// `Frame::visit`.
const PROTOCOL_TITLES: &[(&str, &str)] = &[
    ("eth", "Ethernet II"),
    ("frame", "Frame"),
    ("ip", "Internet Protocol Version 4"),
    ("ipv6", "Internet Protocol Version 6"),
    ("udp", "User Datagram Protocol"),
];

/// What a name refers to.
enum Reference {
    Field(FieldSlot, Ty),
    Protocol(ProtoSlot, Ty),
}

/// The type of a field of `kind` named `name` (a number as wide as tshark holds it).
fn ty_of(kind: Kind, name: &str) -> Ty {
    match kind {
        Kind::Uint => Ty::Num(widths::max(name).map_or(64, |m| m.count_ones() as u8)),
        Kind::Bool => Ty::Bool,
        Kind::Mac => Ty::Mac,
        Kind::Ipv4 => Ty::Ipv4,
        Kind::Ipv6 => Ty::Ipv6,
        Kind::Text => Ty::Text,
        Kind::Bytes => Ty::Bytes,
    }
}

fn reference(word: &str) -> Option<Reference> {
    let name = word.strip_prefix('.').unwrap_or(word);
    if let Some(&(key, ty)) = time::TIME_FIELDS.iter().find(|(n, _)| *n == name) {
        let slot = FieldSlot {
            keys: Vec::new(),
            time: Some(key),
            layer: None,
        };
        return Some(Reference::Field(slot, ty));
    }
    let field = |keys, ty| {
        let slot = FieldSlot {
            keys,
            time: None,
            layer: None,
        };
        Reference::Field(slot, ty)
    };
    Some(match names::resolve(name)? {
        Resolved::Fields(keys, kind) => field(keys, ty_of(kind, name)),
        Resolved::Header(key) => field(vec![key], Ty::Present),
        Resolved::Protocol => {
            let title = PROTOCOL_TITLES
                .iter()
                .find(|(p, _)| *p == name)
                .map(|(_, t)| *t);
            let slot = ProtoSlot {
                prefix: format!("{name}."),
                title,
            };
            let ty = if title.is_some() {
                Ty::Proto
            } else {
                Ty::Present
            };
            Reference::Protocol(slot, ty)
        }
    })
}

/// The index of `item` in `slots`, added when new.
fn slot<T: PartialEq>(slots: &mut Vec<T>, item: T) -> usize {
    match slots.iter().position(|s| *s == item) {
        Some(i) => i,
        None => {
            slots.push(item);
            slots.len() - 1
        }
    }
}

fn max_of(bits: u8) -> i128 {
    (1i128 << bits.min(64)) - 1
}

impl<'t> Compiler<'t> {
    /// Whether the value has no field, protocol or function in it.
    pub(super) fn constant(&self, p: &Pair<'t, Rule>) -> bool {
        match p.as_rule() {
            Rule::word => reference(p.as_str()).is_none(),
            Rule::string | Rule::charconst => true,
            Rule::call => false,
            _ => p.clone().into_inner().all(|q| self.constant(&q)),
        }
    }

    /// The value `p` (its literals read as `want`), for a test of the field `name`.
    pub(super) fn value_for(
        &mut self,
        name: &str,
        p: Pair<'t, Rule>,
        want: Option<Ty>,
    ) -> Result<(Expr, Ty), FilterError> {
        let at = p.as_span().start();
        match p.as_rule() {
            Rule::bitand | Rule::sum | Rule::product => self.chain(name, p, want),
            Rule::signed => self.signed(name, p, want),
            Rule::sliced => self.sliced(name, p, want),
            Rule::call => self.call(name, p, want),
            Rule::word => self.word(name, p, want),
            Rule::string => self.literal(name, p, want, Form::Quoted),
            Rule::charconst => self.literal(name, p, want, Form::Char),
            _ => Err(self.error(at, Problem::Expected(vec!["a value"]))),
        }
    }

    pub(super) fn value(
        &mut self,
        p: Pair<'t, Rule>,
        want: Option<Ty>,
    ) -> Result<(Expr, Ty), FilterError> {
        let name = p.as_str().trim().to_string();
        self.value_for(&name, p, want)
    }

    /// `a op b op c ...`, left to right, in the type of its first operand that is not a constant.
    fn chain(
        &mut self,
        name: &str,
        p: Pair<'t, Rule>,
        want: Option<Ty>,
    ) -> Result<(Expr, Ty), FilterError> {
        let at = p.as_span().start();
        // `&` takes byte strings too (`eth[0] & 1`), byte by byte.
        let bytes_ok = p.as_rule() == Rule::bitand;
        let items: Vec<Pair<'t, Rule>> = p.into_inner().collect();
        if let [only] = items.as_slice() {
            return self.value_for(name, only.clone(), want);
        }
        let operands = items.iter().step_by(2);
        // Constants are read as the type of the first operand that is not one, and named after it.
        let (ty, name) = match operands.clone().find(|q| !self.constant(q)) {
            Some(q) => {
                let field = bare(q.clone()).as_str().to_string();
                (self.value_for(&field, q.clone(), None)?.1, field)
            }
            None => {
                let ty = want.ok_or_else(|| self.error(at, Problem::ConstantArithmetic))?;
                (ty, name.to_string())
            }
        };
        let name = name.as_str();
        let mut acc: Option<Expr> = None;
        let mut op = Op::Add;
        for q in &items {
            let rule = q.as_rule();
            if matches!(rule, Rule::add_op | Rule::mul_op | Rule::bitand_op) {
                op = operator(q.as_str());
                continue;
            }
            let operand_at = q.as_span().start();
            let text = q.as_str().to_string();
            let arithmetic_ok = |t: Ty| matches!(t, Ty::Num(_)) || (bytes_ok && t == Ty::Bytes);
            if bare(q.clone()).as_rule() == Rule::charconst {
                return Err(self.error(operand_at, Problem::NotArithmetic(text)));
            }
            let (e, t) = self.value_for(name, q.clone(), Some(ty))?;
            let first = acc.is_none();
            if !arithmetic_ok(t) || (first && !arithmetic_ok(ty)) {
                return Err(self.error(operand_at, Problem::NotArithmetic(text)));
            }
            acc = Some(match acc {
                None => e,
                Some(a) => fold(op, a, e),
            });
        }
        let e = acc.ok_or_else(|| self.error(at, Problem::ConstantArithmetic))?;
        Ok((e, ty))
    }

    /// `-x` (and `+x`): a number's negation.
    fn signed(
        &mut self,
        name: &str,
        p: Pair<'t, Rule>,
        want: Option<Ty>,
    ) -> Result<(Expr, Ty), FilterError> {
        let mut negate = false;
        let mut signs = false;
        let mut value = None;
        for q in p.into_inner() {
            match q.as_rule() {
                Rule::minus => {
                    signs = true;
                    negate ^= q.as_str() == "-";
                }
                _ => value = Some(q),
            }
        }
        let Some(q) = value else {
            return Err(FilterError::NoField);
        };
        if !signs {
            return self.value_for(name, q, want);
        }
        let at = q.as_span().start();
        let text = q.as_str().to_string();
        if q.as_str().starts_with('{') {
            return Err(self.error(at, Problem::Unexpected("{".into())));
        }
        let (e, ty) = self.value_for(name, q, want)?;
        if !matches!(ty, Ty::Num(_) | Ty::RelTime) {
            return Err(self.error(at, Problem::NotArithmetic(text)));
        }
        Ok(match (negate, e) {
            (false, e) => (e, ty),
            (true, Expr::Const(Val::Num(n))) => (Expr::Const(Val::Num(-n)), ty),
            (true, e) => (Expr::Neg(Box::new(e)), ty),
        })
    }

    /// `x[...]`: bytes (or text) of a field, protocol or string().
    fn sliced(
        &mut self,
        name: &str,
        p: Pair<'t, Rule>,
        want: Option<Ty>,
    ) -> Result<(Expr, Ty), FilterError> {
        let mut inner = p
            .into_inner()
            .filter(|q| q.as_rule() != Rule::rbrace)
            .peekable();
        let Some(atom) = inner.next() else {
            return Err(FilterError::NoField);
        };
        let layer = inner.next_if(|q| q.as_rule() == Rule::layer);
        let at = atom.as_span().start();
        let text = atom.as_str().to_string();
        let (e, ty) = match layer {
            Some(l) => self.layer(atom, l)?,
            None => {
                let Some(_) = inner.peek() else {
                    return self.value_for(name, atom, want);
                };
                if self.constant(&atom) {
                    return Err(self.error(at, Problem::ConstantSlice(text)));
                }
                self.value_for(name, atom, None)?
            }
        };
        let Some(slice) = inner.next() else {
            return Ok((e, ty));
        };
        if ty == Ty::Present {
            return Err(self.error(at, Problem::Protocol(text)));
        }
        if !ty.sliceable() {
            let kind = literal::ty_words(ty);
            return Err(self.error(at, Problem::NotSliceable(text, kind)));
        }
        let mut pieces = Vec::new();
        for r in slice.into_inner().filter(|r| r.as_rule() == Rule::range) {
            pieces.push(self.piece(r)?);
        }
        let out = if ty == Ty::Text { Ty::Text } else { Ty::Bytes };
        Ok((Expr::Slice(Box::new(e), pieces), out))
    }

    /// `field#N`: the field's values in the `N`-th header of its protocol.
    fn layer(
        &mut self,
        atom: Pair<'t, Rule>,
        layer: Pair<'t, Rule>,
    ) -> Result<(Expr, Ty), FilterError> {
        let at = layer.as_span().start();
        let name = atom.as_str().trim_start_matches('.');
        let protocol = name.split('.').next().unwrap_or_default();
        let title = PROTOCOL_TITLES
            .iter()
            .find(|(p, _)| *p == protocol)
            .map(|(_, t)| *t);
        let n = layer.as_str().trim_start_matches('#').parse::<u32>().ok();
        let reference = (atom.as_rule() == Rule::word)
            .then(|| reference(atom.as_str()))
            .flatten();
        let (Some(title), Some(n), Some(Reference::Field(mut s, ty))) = (title, n, reference)
        else {
            return Err(self.error(at, Problem::Layer(name.to_string())));
        };
        if s.time.is_some() {
            return Err(self.error(at, Problem::Layer(name.to_string())));
        }
        self.names(name);
        s.layer = Some(Layer { n, title });
        Ok((Expr::Field(slot(&mut self.fields, s)), ty))
    }

    /// One range of a slice: `i`, `i:n`, `i:`, `:n`, `i-j`.
    fn piece(&self, r: Pair<'t, Rule>) -> Result<Piece, FilterError> {
        let at = r.as_span().start();
        let text = r.as_str().to_string();
        let bad = || self.error(at, Problem::BadRange(text.clone()));
        let int = |s: &str| s.parse::<i32>().map(i64::from).map_err(|_| bad());
        let (mut start, mut sep, mut n) = (0i64, None, None);
        for q in r.into_inner() {
            match q.as_rule() {
                Rule::index => start = int(q.as_str())?,
                Rule::colon | Rule::dash => sep = Some(q.as_rule()),
                _ => n = Some(int(q.as_str())?),
            }
        }
        let len = match (sep, n) {
            (None, _) => Some(1),
            (Some(Rule::colon), n) => n,
            (_, Some(end)) => Some(end - start + 1),
            (_, None) => None,
        };
        if len.is_some_and(|l| l <= 0) {
            return Err(bad());
        }
        Ok(Piece { start, len })
    }

    fn word(
        &mut self,
        name: &str,
        p: Pair<'t, Rule>,
        want: Option<Ty>,
    ) -> Result<(Expr, Ty), FilterError> {
        let text = p.as_str();
        let Some(r) = reference(text) else {
            // A leading "." makes a name a field's.
            if let Some(field) = text.strip_prefix('.') {
                let at = p.as_span().start();
                return Err(self.error(at, Problem::Unknown(field.to_string())));
            }
            return self.literal(name, p, want, Form::Word);
        };
        self.names(text.trim_start_matches('.'));
        Ok(match r {
            Reference::Field(s, ty) => (Expr::Field(slot(&mut self.fields, s)), ty),
            Reference::Protocol(s, ty) => {
                let i = slot(&mut self.protos, s);
                (Expr::Proto(i, Extent::Header), ty)
            }
        })
    }

    fn literal(
        &mut self,
        name: &str,
        p: Pair<'t, Rule>,
        want: Option<Ty>,
        form: Form,
    ) -> Result<(Expr, Ty), FilterError> {
        let at = p.as_span().start();
        let text = match form {
            Form::Word => p.as_str(),
            _ => p.into_inner().next().map_or("", |t| t.as_str()),
        };
        let Some(ty) = want else {
            return Err(self.error(at, Problem::LeftConstant(text.to_string())));
        };
        if ty == Ty::Present {
            return Err(self.error(at, Problem::Protocol(name.to_string())));
        }
        if form == Form::Word && text.ends_with(':') && !text.ends_with("::") {
            return Err(self.error(at + text.len() - 1, Problem::Unexpected(":".into())));
        }
        let v = literal::read(ty, name, text, form, &mut self.pool)
            .map_err(|e| self.error(at, e.into()))?;
        if let (Val::Num(n), Ty::Num(bits)) = (v, ty)
            && n > max_of(bits)
        {
            let (text, name) = (text.to_string(), name.to_string());
            let max = max_of(bits) as u64;
            return Err(self.error(at, Problem::TooBig { text, name, max }));
        }
        Ok((Expr::Const(v), ty))
    }

    fn call(
        &mut self,
        name: &str,
        p: Pair<'t, Rule>,
        want: Option<Ty>,
    ) -> Result<(Expr, Ty), FilterError> {
        let at = p.as_span().start();
        let mut inner = p.into_inner();
        let fname = inner.next().map_or("", |f| f.as_str());
        let f = Func::named(fname)
            .ok_or_else(|| self.error(at, Problem::NoFunction(fname.to_string())))?;
        let args: Vec<Pair<'t, Rule>> = inner.filter(|a| a.as_rule() == Rule::bitand).collect();
        let func = func_name(f);
        let wrong = |what| Problem::Argument { func, what };
        let one_field = |c: &Self| match args.as_slice() {
            [a] if bare(a.clone()).as_rule() == Rule::word && !c.constant(a) => Ok(a.clone()),
            _ => Err(c.error(at, wrong(WHAT_FIELD))),
        };
        match f {
            Func::Len | Func::Count | Func::String | Func::Upper | Func::Lower => {
                let a = one_field(self)?;
                let (e, ty) = self.value_for(name, a, None)?;
                let ok = match f {
                    Func::Len => ty.sliceable(),
                    Func::Count => !matches!(e, Expr::Proto(..)),
                    Func::String => !matches!(ty, Ty::Proto | Ty::Present),
                    _ => ty == Ty::Text,
                };
                if !ok {
                    return Err(self.error(at, wrong(what(f))));
                }
                let out = match f {
                    Func::Len | Func::Count => Ty::Num(32),
                    _ => Ty::Text,
                };
                Ok((Expr::Call(f, vec![e]), out))
            }
            Func::Abs => {
                let [a] = args.as_slice() else {
                    return Err(self.error(at, wrong(WHAT_NUMBER)));
                };
                let (e, ty) = self.value_for(name, a.clone(), want)?;
                if !matches!(ty, Ty::Num(_)) {
                    return Err(self.error(at, wrong(WHAT_NUMBER)));
                }
                Ok((Expr::Call(f, vec![e]), ty))
            }
            Func::Max | Func::Min => self.extreme(name, f, args, at),
        }
    }

    /// `max()` and `min()`: fields (or values of fields) of one type.
    fn extreme(
        &mut self,
        name: &str,
        f: Func,
        args: Vec<Pair<'t, Rule>>,
        at: usize,
    ) -> Result<(Expr, Ty), FilterError> {
        let func = func_name(f);
        let mut exprs = Vec::new();
        let mut ty = None;
        for a in args {
            let a_at = a.as_span().start();
            if self.constant(&a) {
                let what = "fields or values of fields, not constants";
                return Err(self.error(a_at, Problem::Argument { func, what }));
            }
            let (e, t) = self.value_for(name, a, None)?;
            if !matches!(t, Ty::Num(_)) || ty.is_some_and(|ty| ty != t) {
                let what =
                    "numbers of one type (as wide as each other: ip.ttl is 8 bits, udp.port 16)";
                return Err(self.error(a_at, Problem::Argument { func, what }));
            }
            ty = Some(t);
            exprs.push(e);
        }
        let ty = ty.ok_or_else(|| {
            self.error(
                at,
                Problem::Argument {
                    func,
                    what: WHAT_NUMBER,
                },
            )
        })?;
        Ok((Expr::Call(f, exprs), ty))
    }
}

const WHAT_FIELD: &str = "one field";
const WHAT_NUMBER: &str = "one number";

fn what(f: Func) -> &'static str {
    match f {
        Func::Len => "a field or protocol with bytes (eth.src, ip, frame)",
        Func::Count => "a field",
        Func::String => "a field (not a protocol)",
        _ => "a field of text",
    }
}

fn func_name(f: Func) -> &'static str {
    match f {
        Func::Len => "len",
        Func::Count => "count",
        Func::String => "string",
        Func::Upper => "upper",
        Func::Lower => "lower",
        Func::Abs => "abs",
        Func::Max => "max",
        Func::Min => "min",
    }
}

fn operator(s: &str) -> Op {
    match s {
        "+" => Op::Add,
        "-" => Op::Sub,
        "*" => Op::Mul,
        "/" => Op::Div,
        "%" => Op::Rem,
        _ => Op::And,
    }
}

/// `a op b`, computed now when both are numbers known now.
fn fold(op: Op, a: Expr, b: Expr) -> Expr {
    if let (Expr::Const(Val::Num(x)), Expr::Const(Val::Num(y))) = (&a, &b) {
        let v = match op {
            Op::Add => x.checked_add(*y),
            Op::Sub => x.checked_sub(*y),
            Op::Mul => x.checked_mul(*y),
            Op::Div => x.checked_div(*y),
            Op::Rem => x.checked_rem(*y),
            Op::And => Some(x & y),
        };
        if let Some(v) = v {
            return Expr::Const(Val::Num(v));
        }
    }
    Expr::Arith(op, Box::new(a), Box::new(b))
}
