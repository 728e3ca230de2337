//! From the text of a filter to a [`Filter`]: pest parses it by `grammar.pest`; names and literals are
//! resolved here, each error one line with the column it is at.
use parsers::fields::Kind;
use pest::Parser;
use pest::error::{Error, ErrorVariant, InputLocation};
use pest::iterators::Pair;

use super::literal::{self, LiteralError, kind_words};
use super::names::{self, Resolved};
use super::set::Set;
use super::{Cmp, Filter, Keys, Leaf, Lit, Node, Test, widths};

#[derive(pest_derive::Parser)]
#[grammar = "filter/grammar.pest"]
struct Grammar;

/// Parentheses nested deeper than this are refused before parsing: the parser and the evaluator recurse.
const MAX_DEPTH: usize = 64;

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
    /// `contains` on a field of `kind` (in words).
    #[error("{name} holds {kind}: \"contains\" needs bytes or text")]
    NotContainable { name: String, kind: &'static str },
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
    check_depth(text)?;
    let filter = Grammar::parse(Rule::filter, text)
        .map_err(|e| syntax(text, &e))?
        .next()
        .and_then(|f| f.into_inner().next())
        .ok_or(FilterError::Empty)?;
    let mut c = Compiler {
        text,
        leaves: Vec::new(),
        events: false,
        analysis: false,
    };
    let root = c.or_expr(filter)?;
    Ok(Filter {
        text: text.to_string(),
        root,
        leaves: c.leaves,
        events: c.events,
        analysis: c.analysis,
    })
}

fn check_depth(text: &str) -> Result<(), FilterError> {
    let (mut depth, mut quoted, mut escaped) = (0usize, false, false);
    for (at, c) in text.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            '(' if !quoted => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Err(at_place(text, at, Problem::TooDeep));
                }
            }
            ')' if !quoted => depth = depth.saturating_sub(1),
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
            let mut rules = positives.clone();
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
        Rule::cmp_op | Rule::set_op | Rule::contains_op | Rule::bitand_op => {
            "a comparison (==, !=, >, <, >=, <=, in, contains, &)"
        }
        Rule::or_op => "\"or\"",
        Rule::and_op => "\"and\"",
        Rule::EOI => "the end of the filter",
        Rule::set => "a set ({1, 2..5})",
        Rule::member | Rule::literal | Rule::string | Rule::text => "a value",
        Rule::rparen => "\")\"",
        Rule::rbrace => "\"}\"",
        Rule::comma => "\",\"",
        Rule::range => "\"..\"",
        _ => "a field name",
    }
}

struct Compiler<'t> {
    text: &'t str,
    leaves: Vec<Leaf>,
    events: bool,
    analysis: bool,
}

impl Compiler<'_> {
    fn error(&self, at: usize, problem: Problem) -> FilterError {
        at_place(self.text, at, problem)
    }

    fn or_expr(&mut self, p: Pair<Rule>) -> Result<Node, FilterError> {
        let mut nodes = Vec::new();
        for q in p.into_inner().filter(|q| q.as_rule() == Rule::and_expr) {
            nodes.push(self.and_expr(q)?);
        }
        Ok(one_or(nodes, Node::Or))
    }

    fn and_expr(&mut self, p: Pair<Rule>) -> Result<Node, FilterError> {
        let mut nodes = Vec::new();
        for q in p.into_inner().filter(|q| q.as_rule() == Rule::unary) {
            nodes.push(self.unary(q)?);
        }
        Ok(one_or(nodes, Node::And))
    }

    fn unary(&mut self, p: Pair<Rule>) -> Result<Node, FilterError> {
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

    fn relation(&mut self, p: Pair<Rule>) -> Result<Node, FilterError> {
        let mut inner = p.into_inner();
        let Some(field) = inner.next() else {
            return Err(FilterError::NoField);
        };
        let (name, at) = (field.as_str(), field.as_span().start());
        let resolved = names::resolve(name)
            .ok_or_else(|| self.error(at, Problem::Unknown(name.to_string())))?;
        let (analysis, events) = names::of_analysis(name);
        self.analysis |= analysis;
        self.events |= events;
        let (Some(op), Some(rhs)) = (inner.next(), inner.next()) else {
            let keys = match resolved {
                Resolved::Fields(keys, _) => Keys::Exact(keys),
                Resolved::Protocol => Keys::Prefix(format!("{name}.")),
                Resolved::Header(key) => Keys::Exact(vec![key]),
            };
            return Ok(self.leaf(keys, Test::Exists));
        };
        let Resolved::Fields(keys, kind) = resolved else {
            // A protocol or a header.
            return Err(self.error(op.as_span().start(), Problem::Protocol(name.to_string())));
        };
        let negated =
            op.as_rule() == Rule::set_op && op.as_str().to_ascii_lowercase().starts_with("not");
        let node = self.leaf(Keys::Exact(keys), self.test(name, kind, op, rhs)?);
        Ok(if negated {
            Node::Not(Box::new(node))
        } else {
            node
        })
    }

    /// The test `NAME OP RHS` makes of a field of `kind` (`not in` is `in`, negated by the caller).
    fn test(
        &self,
        name: &str,
        kind: Kind,
        op: Pair<Rule>,
        rhs: Pair<Rule>,
    ) -> Result<Test, FilterError> {
        let op_at = op.as_span().start();
        Ok(match op.as_rule() {
            Rule::set_op => self.set(name, kind, rhs)?,
            Rule::contains_op => {
                if !matches!(kind, Kind::Bytes | Kind::Mac | Kind::Text) {
                    let name = name.to_string();
                    let kind = kind_words(kind);
                    return Err(self.error(op_at, Problem::NotContainable { name, kind }));
                }
                // tshark reads a MAC field's `contains` operand as bytes only: a string, even "", is refused.
                if kind == Kind::Mac && rhs.as_rule() == Rule::string {
                    let problem = Problem::MacContainsString(name.to_string());
                    return Err(self.error(rhs.as_span().start(), problem));
                }
                let as_kind = if kind == Kind::Mac { Kind::Bytes } else { kind };
                Test::Contains(self.literal(name, as_kind, rhs)?)
            }
            Rule::bitand_op => match self.literal(name, kind, rhs)? {
                Lit::Uint(mask) if kind == Kind::Uint => Test::BitAnd(mask),
                _ => {
                    return Err(self.error(op_at, Problem::NotANumber(name.to_string())));
                }
            },
            _ => {
                let (cmp, all) = cmp_op(&op.as_str().to_ascii_lowercase());
                let rhs_at = rhs.as_span().start();
                let lit = self.literal(name, kind, rhs)?;
                if !matches!(cmp, Cmp::Eq | Cmp::Ne) && !ordered(&lit) {
                    return Err(self.error(rhs_at, Problem::Unordered));
                }
                Test::Compare {
                    op: cmp,
                    all,
                    rhs: lit,
                }
            }
        })
    }

    fn set(&self, name: &str, kind: Kind, set: Pair<Rule>) -> Result<Test, FilterError> {
        let mut members = Vec::new();
        for m in set.into_inner().filter(|m| m.as_rule() == Rule::member) {
            let at = m.as_span().start();
            let mut values = m.into_inner().filter(|v| v.as_rule() != Rule::range);
            let Some(lo) = values.next() else { continue };
            let lo = self.literal(name, kind, lo)?;
            let hi = values
                .next()
                .map(|v| self.literal(name, kind, v))
                .transpose()?;
            if hi.is_some() && !ordered(&lo) {
                return Err(self.error(at, Problem::Range));
            }
            members.push((lo, hi));
        }
        Ok(Test::In(Set::new(members)))
    }

    /// A literal of `kind` for the field `name`: a number wider than tshark holds the field is refused
    /// (`infiniband.bth.opcode == 256`), as tshark refuses it.
    fn literal(&self, name: &str, kind: Kind, p: Pair<Rule>) -> Result<Lit, FilterError> {
        let at = p.as_span().start();
        let (text, quoted) = match p.as_rule() {
            Rule::string => (p.into_inner().next().map_or("", |t| t.as_str()), true),
            _ => (p.as_str(), false),
        };
        let lit = literal::read(kind, text, quoted).map_err(|e| self.error(at, e.into()))?;
        if let (Lit::Uint(n), Some(max)) = (&lit, widths::max(name))
            && *n > max
        {
            let (text, name) = (text.to_string(), name.to_string());
            return Err(self.error(at, Problem::TooBig { text, name, max }));
        }
        Ok(lit)
    }

    fn leaf(&mut self, keys: Keys, test: Test) -> Node {
        self.leaves.push(Leaf { keys, test });
        Node::Leaf(self.leaves.len() - 1)
    }
}

fn one_or(mut nodes: Vec<Node>, many: fn(Vec<Node>) -> Node) -> Node {
    match nodes.len() {
        1 => nodes.pop().unwrap_or(Node::And(Vec::new())),
        _ => many(nodes),
    }
}

/// A comparison and whether every occurrence must satisfy it (Wireshark 4.0: `!=` is "all not equal",
/// `~=` and `!==` "any not equal", `===` "all equal").
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

/// A literal with an order: not a network, not a boolean.
fn ordered(lit: &Lit) -> bool {
    match lit {
        Lit::Ipv4(_, p) => *p == 32,
        Lit::Ipv6(_, p) => *p == 128,
        Lit::Bool(_) => false,
        _ => true,
    }
}
