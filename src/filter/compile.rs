//! From the text of a filter to a [`Filter`]: pest parses it by `grammar.pest`; names and literals are
//! resolved here, each error one line with the column it is at.
use pest::Parser;
use pest::error::{Error, ErrorVariant, InputLocation};
use pest::iterators::Pair;

use super::expr::{Expr, Ty, Val};
use super::literal::LiteralError;
use super::set::Set;
use super::{Cmp, FieldSlot, Filter, Node, ProtoSlot, Test};

#[derive(pest_derive::Parser)]
#[grammar = "filter/grammar.pest"]
pub(super) struct Grammar;

/// Parentheses, braces and brackets nested deeper than this are refused before parsing: the parser, the
/// compiler and the evaluator recurse.
pub(super) const MAX_DEPTH: usize = 64;

/// A filter that does not compile: one line with the column it is at (when it is at one) and the problem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FilterError {
    #[error("the filter is empty")]
    Empty,
    #[error("expected a field name")]
    NoField,
    #[error("{place} {problem}")]
    At { place: Place, problem: Problem },
}

/// Where in the filter's text: its column (from 1) and the token there (empty at the end).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub column: usize,
    pub token: String,
}

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Place { column, token } = self;
        if token.is_empty() {
            write!(f, "column {column} (at the end):")
        } else {
            write!(f, "column {column} (at \"{token}\"):")
        }
    }
}

/// What is wrong at a [`Place`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    /// The grammar wanted one of these there (in words; none: a character it takes nowhere).
    #[error("{}", expected_words(.0))]
    Expected(Vec<&'static str>),
    /// pest's own message.
    #[error("{0}")]
    Grammar(String),
    #[error("parentheses nested deeper than {MAX_DEPTH}")]
    TooDeep,
    /// A control character, or one beyond ASCII, outside a quoted string (tshark refuses them).
    #[error("non-printable or non-ASCII characters may only appear inside double quotes")]
    NonPrintable,
    /// A token tshark 4.0 does not take here (`fc:`: a byte string does not end with ":").
    #[error("\"{0}\" was unexpected in this context")]
    Unexpected(String),
    /// A constant where tshark wants a field or a function (`6 == ip.proto`).
    #[error("the left side of a test must be a field or function, not {0}")]
    LeftConstant(String),
    #[error("constant arithmetic expression on the left side is invalid")]
    ConstantArithmetic,
    #[error("{0} and {1} are not of compatible types")]
    Incompatible(String, String),
    #[error("\"{0}\" holds {1} and cannot be sliced into a sequence of bytes")]
    NotSliceable(String, &'static str),
    #[error("range is not supported for the constant {0}")]
    ConstantSlice(String),
    #[error("\"{0}\": a slice's start and length must be within ±2147483647, its length positive")]
    BadRange(String),
    #[error(
        "function '{0}' does not exist (tshark 4.0's: len, count, string, upper, lower, abs, max, min)"
    )]
    NoFunction(String),
    /// A function's argument that is not what it takes (in words).
    #[error("{func}() takes {what}")]
    Argument {
        func: &'static str,
        what: &'static str,
    },
    #[error("you cannot test whether a function is present: compare its value (len(eth.src) == 6)")]
    FunctionAlone,
    #[error("a value alone is not a test: compare it (udp.port + 1 == 4792)")]
    NotATest,
    #[error("{0} is not a valid arithmetic operand")]
    NotArithmetic(String),
    #[error("\"matches\" requires a double-quoted string (a regular expression) on the right side")]
    MatchesString,
    #[error("regular expression: {0}")]
    Regex(String),
    #[error("only a field may be tested for membership in a set")]
    SetLeft,
    #[error("{0}: rocescope counts the layers (#N) of the fields of frame, eth, ip, ipv6 and udp")]
    Layer(String),
    #[error(
        "expected \",\" or \"}}\": set members are separated by commas, as in tshark 4.0, which \
         refuses whitespace too: {{6, 7, 8}}, {{6..8, 17}}"
    )]
    SetSeparator,
    #[error("expected a field name")]
    NoField,
    #[error(
        "\"{0}\" is neither a field nor a protocol rocescope decodes (the fields: docs/cli.md#display-filters)"
    )]
    Unknown(String),
    #[error("{0} is a protocol: test it alone (\"{0}\") or compare one of its fields")]
    Protocol(String),
    /// `contains` or `matches` on a field of `kind` (in words).
    #[error("{name} holds {kind}: \"{op}\" needs bytes or text")]
    NotContainable {
        name: String,
        kind: &'static str,
        op: &'static str,
    },
    #[error("{0} holds a MAC address: \"contains\" takes bytes (50:56), not a string")]
    MacContainsString(String),
    #[error("{0} is not a number: \"&\" needs one")]
    NotANumber(String),
    #[error("only == and != take a network (ADDR/PREFIX) or a boolean")]
    Unordered,
    #[error("a range needs two single values")]
    Range,
    /// `text` is more than `max`, the most tshark holds in the field `name`.
    #[error(
        "\"{text}\" is too big for {name}, which tshark holds in {} bits: at most {max}",
        .max.count_ones()
    )]
    TooBig {
        text: String,
        name: String,
        max: u64,
    },
    #[error(transparent)]
    Literal(#[from] LiteralError),
}

fn expected_words(expected: &[&str]) -> String {
    match expected.split_last() {
        None => "unexpected character".to_string(),
        Some((last, [])) => format!("expected {last}"),
        Some((last, rest)) => format!("expected {} or {last}", rest.join(", ")),
    }
}

pub(super) fn compile(text: &str) -> Result<Filter, FilterError> {
    precheck(text)?;
    let filter = Grammar::parse(Rule::filter, text)
        .map_err(|e| syntax(text, &e))?
        .next()
        .and_then(|f| f.into_inner().next())
        .ok_or(FilterError::Empty)?;
    let mut c = Compiler::new(text);
    let root = c.or_expr(filter)?;
    Ok(c.finish(root))
}

/// What tshark refuses before parsing: nesting deeper than [`MAX_DEPTH`], control and non-ASCII
/// characters outside a quoted string.
fn precheck(text: &str) -> Result<(), FilterError> {
    let (mut depth, mut quoted, mut escaped) = (0usize, false, false);
    for (at, c) in text.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            _ if quoted => {}
            '(' | '{' | '[' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Err(at_place(text, at, Problem::TooDeep));
                }
            }
            ')' | '}' | ']' => depth = depth.saturating_sub(1),
            ' ' => {}
            _ if !c.is_ascii_graphic() => return Err(at_place(text, at, Problem::NonPrintable)),
            _ => {}
        }
    }
    Ok(())
}

fn at_place(text: &str, at: usize, problem: Problem) -> FilterError {
    FilterError::At {
        place: place(text, at),
        problem,
    }
}

/// The column of byte `at` and the token there.
fn place(text: &str, at: usize) -> Place {
    let at = at.min(text.len());
    let column = text.get(..at).map_or(0, |s| s.chars().count()) + 1;
    let rest = text.get(at..).unwrap_or_default();
    let token: String = rest
        .chars()
        .take_while(|c| !c.is_whitespace())
        .take(24)
        .collect();
    Place { column, token }
}

fn syntax(text: &str, e: &Error<Rule>) -> FilterError {
    let at = match e.location {
        InputLocation::Pos(p) => p,
        InputLocation::Span((s, _)) => s,
    };
    let what = match &e.variant {
        ErrorVariant::ParsingError { positives, .. } => {
            let mut expected: Vec<&str> = Vec::new();
            // What may come there first, the end last.
            // A slice or an operator may follow any value: named only where nothing else may come.
            let mut rules = positives.clone();
            let rest = |r: &Rule| {
                !matches!(
                    r,
                    Rule::slice | Rule::layer | Rule::bitand_op | Rule::add_op | Rule::mul_op
                )
            };
            if rules.iter().any(rest) {
                rules.retain(rest);
            }
            rules.sort_by_key(|r| matches!(r, Rule::and_op | Rule::or_op | Rule::EOI));
            for w in rules.iter().map(|r| words(*r)) {
                if !expected.contains(&w) {
                    expected.push(w);
                }
            }
            Problem::Expected(expected)
        }
        ErrorVariant::CustomError { message } => Problem::Grammar(message.clone()),
    };
    // A second value where a set wants "," or "}": whitespace-separated members, which Wireshark 3 took
    // and 4.0 refuses as this does.
    let in_set = matches!(&e.variant, ErrorVariant::ParsingError { positives, .. }
        if positives.contains(&Rule::comma) && positives.contains(&Rule::rbrace));
    let value_next = text
        .get(at..)
        .and_then(|r| r.chars().next())
        .is_some_and(|c| c == '"' || c.is_ascii_alphanumeric() || c == '_' || c == ':' || c == '-');
    if in_set && value_next {
        return at_place(text, at, Problem::SetSeparator);
    }
    at_place(text, at, what)
}

/// A rule as an error message names it.
fn words(r: Rule) -> &'static str {
    match r {
        Rule::cmp_op | Rule::set_op | Rule::contains_op | Rule::matches_op => {
            "a comparison (==, !=, >, <, >=, <=, in, contains, matches)"
        }
        Rule::bitand_op | Rule::add_op | Rule::mul_op => "an operator (&, +, -, *, /, %)",
        Rule::layer => "a layer (#2)",
        Rule::slice | Rule::range | Rule::index | Rule::count | Rule::colon | Rule::dash => {
            "a slice ([0:3], [1-2], [4])"
        }
        Rule::rbracket => "\"]\"",
        Rule::or_op => "\"or\"",
        Rule::and_op => "\"and\"",
        Rule::EOI => "the end of the filter",
        Rule::set => "a set ({1, 2..5})",
        Rule::member
        | Rule::word
        | Rule::string
        | Rule::text
        | Rule::charconst
        | Rule::chartext
        | Rule::bitand
        | Rule::sum
        | Rule::product
        | Rule::signed
        | Rule::sliced
        | Rule::call
        | Rule::func
        | Rule::minus => "a value",
        Rule::rparen => "\")\"",
        Rule::rbrace => "\"}\"",
        Rule::comma => "\",\"",
        Rule::dots => "\"..\"",
        _ => "a field name",
    }
}

/// The filter being compiled: its slots and constants so far.
pub(super) struct Compiler<'t> {
    pub(super) text: &'t str,
    pub(super) fields: Vec<FieldSlot>,
    pub(super) protos: Vec<ProtoSlot>,
    pub(super) pool: Vec<u8>,
    events: bool,
    analysis: bool,
}

impl<'t> Compiler<'t> {
    fn new(text: &'t str) -> Compiler<'t> {
        Compiler {
            text,
            fields: Vec::new(),
            protos: Vec::new(),
            pool: Vec::new(),
            events: false,
            analysis: false,
        }
    }

    fn finish(self, root: Node) -> Filter {
        Filter {
            text: self.text.to_string(),
            root,
            fields: self.fields,
            protos: self.protos,
            pool: self.pool,
            events: self.events,
            analysis: self.analysis,
        }
    }

    pub(super) fn error(&self, at: usize, problem: Problem) -> FilterError {
        at_place(self.text, at, problem)
    }

    /// Notes that the filter names `name` (the analysis' fields make it need the analysis).
    pub(super) fn names(&mut self, name: &str) {
        let (analysis, events) = super::names::of_analysis(name);
        self.analysis |= analysis;
        self.events |= events;
    }

    fn or_expr(&mut self, p: Pair<'t, Rule>) -> Result<Node, FilterError> {
        let mut nodes = Vec::new();
        for q in p.into_inner().filter(|q| q.as_rule() == Rule::and_expr) {
            nodes.push(self.and_expr(q)?);
        }
        Ok(one_or(nodes, Node::Or))
    }

    fn and_expr(&mut self, p: Pair<'t, Rule>) -> Result<Node, FilterError> {
        let mut nodes = Vec::new();
        for q in p.into_inner().filter(|q| q.as_rule() == Rule::unary) {
            nodes.push(self.unary(q)?);
        }
        Ok(one_or(nodes, Node::And))
    }

    fn unary(&mut self, p: Pair<'t, Rule>) -> Result<Node, FilterError> {
        let at = p.as_span().start();
        let mut negate = false;
        let mut node = None;
        for q in p.into_inner() {
            match q.as_rule() {
                Rule::not_op => negate = !negate,
                Rule::or_expr => node = Some(self.or_expr(q)?),
                Rule::relation => node = Some(self.relation(q)?),
                _ => {}
            }
        }
        let node = node.ok_or_else(|| self.error(at, Problem::NoField))?;
        Ok(if negate {
            Node::Not(Box::new(node))
        } else {
            node
        })
    }

    fn relation(&mut self, p: Pair<'t, Rule>) -> Result<Node, FilterError> {
        let mut inner = p.into_inner().peekable();
        let quantifier = inner
            .next_if(|q| q.as_rule() == Rule::quantifier)
            .map(|q| q.as_str() == "all");
        let Some(lhs) = inner.next() else {
            return Err(FilterError::NoField);
        };
        let (Some(op), Some(rhs)) = (inner.next(), inner.next()) else {
            return self.alone(lhs).map(Node::Test);
        };
        let lhs_at = lhs.as_span().start();
        if self.constant(&lhs) {
            let problem = if op.as_rule() == Rule::set_op {
                Problem::SetLeft
            } else if has_operator(&lhs) {
                Problem::ConstantArithmetic
            } else {
                self.unknown_or_constant(&lhs)
            };
            return Err(self.error(lhs_at, problem));
        }
        let (lhs_expr, ty) = self.value(lhs.clone(), None)?;
        let name = lhs.as_str().trim().to_string();
        let test = match op.as_rule() {
            Rule::set_op => {
                let set = self.set(&name, ty, rhs)?;
                let test = Test::In(lhs_expr, set);
                if op.as_str().starts_with("not") {
                    return Ok(Node::Not(Box::new(Node::Test(test))));
                }
                test
            }
            Rule::contains_op => self.contains(&name, lhs_expr, ty, rhs)?,
            Rule::matches_op => self.matches(&name, lhs_expr, ty, rhs)?,
            _ => self.compare(&name, op, quantifier, lhs_expr, ty, rhs)?,
        };
        Ok(Node::Test(test))
    }

    /// A value alone as a test: a field or protocol present, a slice with bytes, `x & mask` not zero.
    fn alone(&mut self, p: Pair<'t, Rule>) -> Result<Test, FilterError> {
        let at = p.as_span().start();
        if self.constant(&p) {
            let problem = if has_operator(&p) {
                Problem::ConstantArithmetic
            } else {
                self.unknown_or_constant(&p)
            };
            return Err(self.error(at, problem));
        }
        let bitand = p.as_rule() == Rule::bitand && p.clone().into_inner().count() > 1;
        let bare = bare(p.clone());
        let (e, ty) = self.value(p, None)?;
        match e {
            Expr::Call(..) => Err(self.error(at, Problem::FunctionAlone)),
            Expr::Field(_) | Expr::Proto(..) | Expr::Slice(..) => Ok(Test::Exists(e)),
            Expr::Arith(..) if bitand && matches!(ty, Ty::Num(_) | Ty::Bytes) => {
                Ok(Test::Truthy(e))
            }
            Expr::Neg(_) => Err(self.error(
                bare.as_span().start(),
                Problem::NotArithmetic(bare.as_str().to_string()),
            )),
            _ => Err(self.error(at, Problem::NotATest)),
        }
    }

    /// Why a constant where a field must be is refused: an unknown name, or a constant.
    fn unknown_or_constant(&self, p: &Pair<'t, Rule>) -> Problem {
        let b = bare(p.clone());
        let text = b.as_str();
        let name_like = b.as_rule() == Rule::word
            && text.starts_with(|c: char| c.is_ascii_alphabetic() || c == '.')
            && !text.contains(':');
        if name_like {
            Problem::Unknown(text.trim_start_matches('.').to_string())
        } else {
            Problem::LeftConstant(text.to_string())
        }
    }

    fn compare(
        &mut self,
        name: &str,
        op: Pair<'t, Rule>,
        quantifier: Option<bool>,
        lhs: Expr,
        ty: Ty,
        rhs: Pair<'t, Rule>,
    ) -> Result<Test, FilterError> {
        let rhs_at = rhs.as_span().start();
        let (cmp, all) = cmp_op(op.as_str());
        let (rhs_expr, rhs_ty) = self.value_for(name, rhs.clone(), Some(ty))?;
        if !ty.compatible(rhs_ty) {
            let problem = Problem::Incompatible(name.to_string(), rhs.as_str().to_string());
            return Err(self.error(rhs_at, problem));
        }
        let unordered = match &rhs_expr {
            Expr::Const(Val::Ipv4(_, p)) => *p != 32,
            Expr::Const(Val::Ipv6(_, p)) => *p != 128,
            _ => ty == Ty::Bool,
        };
        if !matches!(cmp, Cmp::Eq | Cmp::Ne) && unordered {
            return Err(self.error(rhs_at, Problem::Unordered));
        }
        Ok(Test::Compare {
            op: cmp,
            all: quantifier.unwrap_or(all),
            lhs,
            rhs: rhs_expr,
        })
    }

    fn contains(
        &mut self,
        name: &str,
        lhs: Expr,
        ty: Ty,
        rhs: Pair<'t, Rule>,
    ) -> Result<Test, FilterError> {
        let lhs = containable(self, name, lhs, ty, "contains", rhs.as_span().start())?;
        // tshark reads a MAC field's `contains` operand as bytes only: a string, even "", is refused.
        if ty == Ty::Mac && bare(rhs.clone()).as_rule() == Rule::string {
            let problem = Problem::MacContainsString(name.to_string());
            return Err(self.error(rhs.as_span().start(), problem));
        }
        let want = if ty == Ty::Text { Ty::Text } else { Ty::Bytes };
        let (needle, _) = self.value_for(name, rhs, Some(want))?;
        Ok(Test::Contains(lhs, needle))
    }

    fn matches(
        &mut self,
        name: &str,
        lhs: Expr,
        ty: Ty,
        rhs: Pair<'t, Rule>,
    ) -> Result<Test, FilterError> {
        let at = rhs.as_span().start();
        let lhs = containable(self, name, lhs, ty, "matches", at)?;
        let b = bare(rhs);
        if b.as_rule() != Rule::string {
            return Err(self.error(at, Problem::MatchesString));
        }
        let (pattern, _) = self.value_for(name, b, Some(Ty::Text))?;
        let Expr::Const(Val::Text(span)) = pattern else {
            return Err(self.error(at, Problem::MatchesString));
        };
        let start = span.start as usize;
        let bytes = self
            .pool
            .get(start..start + span.len as usize)
            .unwrap_or_default();
        let text = String::from_utf8_lossy(bytes).into_owned();
        let re = regex::bytes::RegexBuilder::new(&text)
            .unicode(false)
            .build()
            .map_err(|e| self.error(at, Problem::Regex(first_line(&e.to_string()))))?;
        Ok(Test::Matches(lhs, re))
    }

    fn set(&mut self, name: &str, ty: Ty, set: Pair<'t, Rule>) -> Result<Set, FilterError> {
        let mut members = Vec::new();
        for m in set.into_inner().filter(|m| m.as_rule() == Rule::member) {
            let at = m.as_span().start();
            let mut values = m.into_inner().filter(|v| v.as_rule() != Rule::dots);
            let Some(lo) = values.next() else { continue };
            let lo = self.constant_for(name, ty, lo)?;
            let hi = values
                .next()
                .map(|v| self.constant_for(name, ty, v))
                .transpose()?;
            let network = matches!(lo, Val::Ipv4(_, p) if p != 32)
                || matches!(lo, Val::Ipv6(_, p) if p != 128);
            if hi.is_some() && (network || ty == Ty::Bool) {
                return Err(self.error(at, Problem::Range));
            }
            members.push((lo, hi));
        }
        Ok(Set::new(members, &self.pool))
    }

    /// A set member: a constant of the type `ty`.
    fn constant_for(&mut self, name: &str, ty: Ty, p: Pair<'t, Rule>) -> Result<Val, FilterError> {
        let at = p.as_span().start();
        let text = p.as_str().to_string();
        match self.value_for(name, p, Some(ty))? {
            (Expr::Const(v), _) => Ok(v),
            _ => Err(self.error(at, Problem::LeftConstant(text))),
        }
    }
}

/// The bytes `contains` and `matches` search: a protocol's from its start to the end of the packet.
fn containable(
    c: &Compiler,
    name: &str,
    lhs: Expr,
    ty: Ty,
    op: &'static str,
    at: usize,
) -> Result<Expr, FilterError> {
    if !matches!(ty, Ty::Bytes | Ty::Mac | Ty::Text | Ty::Proto) {
        let name = name.to_string();
        let kind = super::literal::ty_words(ty);
        return Err(c.error(at, Problem::NotContainable { name, kind, op }));
    }
    Ok(match lhs {
        Expr::Proto(slot, _) => Expr::Proto(slot, super::expr::Extent::ToEnd),
        e => e,
    })
}

fn first_line(s: &str) -> String {
    s.lines()
        .rfind(|l| !l.trim().is_empty())
        .unwrap_or(s)
        .trim()
        .to_string()
}

/// The pair under single-child wrappers (`bitand` of one `sum` of one `product` ...).
pub(super) fn bare(p: Pair<Rule>) -> Pair<Rule> {
    let mut p = p;
    loop {
        let wrapper = matches!(
            p.as_rule(),
            Rule::bitand | Rule::sum | Rule::product | Rule::signed | Rule::sliced
        );
        let mut inner = p.clone().into_inner();
        match (wrapper, inner.next(), inner.next()) {
            (true, Some(only), None) => p = only,
            _ => return p,
        }
    }
}

/// Whether a value has an arithmetic operator (or a unary minus) in it.
fn has_operator(p: &Pair<Rule>) -> bool {
    p.clone().into_inner().flatten().any(|q| {
        matches!(
            q.as_rule(),
            Rule::add_op | Rule::mul_op | Rule::bitand_op | Rule::minus
        )
    })
}

fn one_or(mut nodes: Vec<Node>, many: fn(Vec<Node>) -> Node) -> Node {
    match nodes.len() {
        1 => nodes.pop().unwrap_or(Node::And(Vec::new())),
        _ => many(nodes),
    }
}

/// A comparison and whether every pair of values must satisfy it (Wireshark 4.0: `!=` is "all not
/// equal", `~=` and `!==` "any not equal", `===` "all equal").
fn cmp_op(op: &str) -> (Cmp, bool) {
    match op {
        "!=" | "ne" | "all_ne" => (Cmp::Ne, true),
        "~=" | "!==" | "any_ne" => (Cmp::Ne, false),
        "===" | "all_eq" => (Cmp::Eq, true),
        ">" | "gt" => (Cmp::Gt, false),
        ">=" | "ge" => (Cmp::Ge, false),
        "<" | "lt" => (Cmp::Lt, false),
        "<=" | "le" => (Cmp::Le, false),
        _ => (Cmp::Eq, false),
    }
}
