//! Literals read as the kind of the field they are compared with, the way Wireshark reads them.
use std::net::{Ipv4Addr, Ipv6Addr};

use super::expr::{Span, Src, Ty, Val};
use super::time;

/// A literal that is not a value of its field's kind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LiteralError {
    /// `what` was expected ("a number", "an IPv4 address", ...).
    #[error("\"{text}\" is not {what}")]
    Not { text: String, what: &'static str },
    /// A quoted string for a field of `kind` (in words), which takes none.
    #[error("\"{text}\" is a string; this field holds {kind}: write it without quotes")]
    Quoted { text: String, kind: &'static str },
    #[error("\"{text}\": the prefix length must be 0 to {max}")]
    Prefix { text: String, max: u8 },
    /// A backslash before `escaped` (nothing at the end of the string).
    #[error("\\{} is not an escape (\\\", \\\\, \\n, \\t, \\r, \\xHH, \\NNN, \\uXXXX)", .escaped.map(String::from).unwrap_or_default())]
    Escape { escaped: Option<char> },
    /// `\u` or `\U` naming no character a string may hold that way (C's rule, as tshark's: not below U+00A0).
    #[error("\\{0} is not a valid universal character name")]
    Universal(String),
    #[error("'{0}' isn't a valid character constant")]
    Char(String),
    /// A quoted string for a boolean that is neither of its two names.
    #[error("\"{text}\" cannot be found among the possible values ({names})")]
    Names { text: String, names: &'static str },
}

/// How a literal was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Form {
    /// Unquoted: a number, an address, bytes, a name.
    Word,
    /// "A string" (the text inside the quotes).
    Quoted,
    /// 'c' (the text inside the quotes).
    Char,
}

/// The names of a boolean's two values, as a quoted literal may give them (tshark's true/false strings):
/// `ip.flags.df == "Set"`.
const BOOL_NAMES: &[(&str, &str, &str)] = &[
    ("ip.flags.df", "Set", "Not set"),
    ("ip.flags.mf", "Set", "Not set"),
    ("ip.flags.rb", "Set", "Not set"),
];

/// Reads `text` as a value of type `ty` for the field `name`; bytes go to `pool`. The error says what was
/// expected.
pub(super) fn read(
    ty: Ty,
    name: &str,
    text: &str,
    form: Form,
    pool: &mut Vec<u8>,
) -> Result<Val, LiteralError> {
    match form {
        Form::Char => read_char(ty, text, pool),
        Form::Quoted => read_quoted(ty, name, text, pool),
        Form::Word => read_word(ty, text, pool),
    }
}

/// `bytes` kept in the constants' pool.
fn keep(pool: &mut Vec<u8>, bytes: &[u8]) -> Span {
    let start = pool.len() as u32;
    pool.extend_from_slice(bytes);
    Span {
        src: Src::Pool,
        start,
        len: bytes.len() as u32,
    }
}

fn not(text: &str, what: &'static str) -> Result<Val, LiteralError> {
    Err(LiteralError::Not {
        text: text.to_string(),
        what,
    })
}

/// 'c': a number, or one byte.
fn read_char(ty: Ty, text: &str, pool: &mut Vec<u8>) -> Result<Val, LiteralError> {
    let c = char_value(text)?;
    match ty {
        Ty::Num(_) => Ok(Val::Num(c.into())),
        Ty::Text => Ok(Val::Text(keep(pool, &[c]))),
        Ty::Bytes | Ty::Mac | Ty::Proto => Ok(Val::Bytes(keep(pool, &[c]))),
        _ => Err(LiteralError::Char(text.to_string())),
    }
}

/// "a string": text, bytes, a date, a flag's value name.
fn read_quoted(ty: Ty, name: &str, text: &str, pool: &mut Vec<u8>) -> Result<Val, LiteralError> {
    match ty {
        Ty::Text => Ok(Val::Text(keep(pool, &unescape(text)?))),
        Ty::Bytes | Ty::Proto => Ok(Val::Bytes(keep(pool, &unescape(text)?))),
        Ty::AbsTime => match time::absolute(text) {
            Some(ns) => Ok(Val::Num(ns)),
            None => not(
                text,
                "a valid absolute time (\"Nov 12, 1999 08:55:44.123\" or \"2011-07-04 12:34:56\")",
            ),
        },
        Ty::Bool => bool_name(name, text),
        _ => Err(LiteralError::Quoted {
            text: text.to_string(),
            kind: ty_words(ty),
        }),
    }
}

/// An unquoted literal: a number, an address, bytes, a time offset, text.
fn read_word(ty: Ty, text: &str, pool: &mut Vec<u8>) -> Result<Val, LiteralError> {
    let not = |what| not(text, what);
    match ty {
        Ty::Text => Ok(Val::Text(keep(pool, text.as_bytes()))),
        Ty::Num(_) => number(text)
            .map(|n| Val::Num(n.into()))
            .ok_or(())
            .or_else(|()| not("a valid number")),
        Ty::RelTime => time::seconds(text)
            .map(Val::Num)
            .ok_or(())
            .or_else(|()| not("a time offset in seconds (0.25)")),
        Ty::Present => not("a value of a field"),
        Ty::AbsTime => not("a valid absolute time: quote it (\"Nov 12, 1999 08:55:44.123\")"),
        Ty::Bool => match text {
            "True" | "true" | "TRUE" => Ok(Val::Bool(true)),
            "False" | "false" | "FALSE" => Ok(Val::Bool(false)),
            _ => match number(text) {
                Some(n) => Ok(Val::Bool(n != 0)),
                None => not("a boolean (1, 0, True or False)"),
            },
        },
        Ty::Ipv4 => {
            let (addr, prefix) = network(text, 32)?;
            match addr.parse::<Ipv4Addr>() {
                Ok(a) => Ok(Val::Ipv4(a.into(), prefix)),
                Err(_) => not("an IPv4 address"),
            }
        }
        Ty::Ipv6 => {
            let (addr, prefix) = network(text, 128)?;
            match addr.parse::<Ipv6Addr>() {
                Ok(a) => Ok(Val::Ipv6(a.into(), prefix)),
                Err(_) => not("an IPv6 address"),
            }
        }
        Ty::Mac => match bytes(text) {
            Some(b) if b.len() == 6 => Ok(Val::Bytes(keep(pool, &b))),
            _ => not("a MAC address (00:11:22:33:44:55)"),
        },
        Ty::Bytes | Ty::Proto => match byte_literal(text) {
            Some(b) => Ok(Val::Bytes(keep(pool, &b))),
            None => not("a valid byte string (00:11:22, or \"text\")"),
        },
    }
}

fn bool_name(name: &str, text: &str) -> Result<Val, LiteralError> {
    let Some((_, yes, no)) = BOOL_NAMES.iter().find(|(n, ..)| *n == name) else {
        return Err(LiteralError::Quoted {
            text: text.to_string(),
            kind: "a boolean",
        });
    };
    match text {
        t if t == *yes => Ok(Val::Bool(true)),
        t if t == *no => Ok(Val::Bool(false)),
        _ => Err(LiteralError::Names {
            text: text.to_string(),
            names: "\"Set\", \"Not set\"",
        }),
    }
}

/// Bytes as tshark reads an unquoted literal for a byte field: hex bytes (`00:11:22`, `:fc`, `00.11`,
/// `0011`), one byte in hex (`0xaa`), or, for digits that are none of those (`153`), their characters.
fn byte_literal(text: &str) -> Option<Vec<u8>> {
    let bare = text.strip_prefix(':').unwrap_or(text);
    if let Some(b) = bytes(bare) {
        return Some(b);
    }
    if let Some(h) = text.strip_prefix("0x")
        && (1..=2).contains(&h.len())
    {
        return u8::from_str_radix(h, 16).ok().map(|b| vec![b]);
    }
    text.bytes()
        .all(|b| b.is_ascii_digit())
        .then(|| text.as_bytes().to_vec())
}

/// A character constant's value: `'H'`, `'\n'`, `'\x41'`, `'\101'`, `'\\'`, `'\''`.
pub(super) fn char_value(text: &str) -> Result<u8, LiteralError> {
    let bad = || LiteralError::Char(text.to_string());
    let Some(rest) = text.strip_prefix('\\') else {
        let mut chars = text.chars();
        return match (chars.next(), chars.next()) {
            (Some(c), None) if c.is_ascii() => Ok(c as u8),
            _ => Err(bad()),
        };
    };
    let simple = match rest {
        "n" => Some(b'\n'),
        "t" => Some(b'\t'),
        "r" => Some(b'\r'),
        "a" => Some(7),
        "b" => Some(8),
        "f" => Some(12),
        "v" => Some(11),
        "\\" | "'" | "\"" => rest.bytes().next(),
        _ => None,
    };
    if let Some(b) = simple {
        return Ok(b);
    }
    let number = match rest.strip_prefix('x') {
        Some(h) if (1..=2).contains(&h.len()) => u32::from_str_radix(h, 16).ok(),
        Some(_) => None,
        None if (1..=3).contains(&rest.len()) => u32::from_str_radix(rest, 8).ok(),
        None => None,
    };
    number.and_then(|n| u8::try_from(n).ok()).ok_or_else(bad)
}

/// What a value of `ty` is, in words.
pub(super) fn ty_words(ty: Ty) -> &'static str {
    match ty {
        Ty::Num(_) => "a number",
        Ty::Bool => "a boolean",
        Ty::Mac => "a MAC address",
        Ty::Ipv4 => "an IPv4 address",
        Ty::Ipv6 => "an IPv6 address",
        Ty::Text => "text",
        Ty::Bytes => "bytes",
        Ty::AbsTime => "an absolute time",
        Ty::RelTime => "a time offset",
        Ty::Proto | Ty::Present => "a protocol",
    }
}

/// Decimal, `0x` hex, `0b` binary or `0`-prefixed octal, as C and Wireshark write numbers.
pub(super) fn number(s: &str) -> Option<u64> {
    let (digits, radix) = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        (h, 16)
    } else if let Some(b) = s.strip_prefix("0b").or_else(|| s.strip_prefix("0B")) {
        (b, 2)
    } else if s.len() > 1 && s.starts_with('0') {
        (&s[1..], 8)
    } else {
        (s, 10)
    };
    // from_str_radix takes a sign; a number here has none.
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

/// `ADDR` or `ADDR/PREFIX`, the prefix at most `max`.
fn network(text: &str, max: u8) -> Result<(&str, u8), LiteralError> {
    let Some((addr, len)) = text.split_once('/') else {
        return Ok((text, max));
    };
    match len.parse::<u8>() {
        Ok(n) if n <= max => Ok((addr, n)),
        _ => Err(LiteralError::Prefix {
            text: text.to_string(),
            max,
        }),
    }
}

/// Hex bytes as Wireshark takes them: `00:11:22`, `00-11-22`, `0011.2233.4455` or `001122`.
pub(super) fn bytes(text: &str) -> Option<Vec<u8>> {
    let pair = |s: &str| {
        let hex = !s.is_empty() && s.len() <= 2 && s.bytes().all(|b| b.is_ascii_hexdigit());
        hex.then(|| u8::from_str_radix(s, 16).ok())?
    };
    for sep in [':', '-'] {
        if text.contains(sep) {
            return text.split(sep).map(pair).collect();
        }
    }
    let digits: String = text.chars().filter(|c| *c != '.').collect();
    if digits.is_empty() || !digits.len().is_multiple_of(2) || !digits.is_ascii() {
        return None;
    }
    (0..digits.len())
        .step_by(2)
        .map(|i| digits.get(i..i + 2).and_then(pair))
        .collect()
}

/// The inside of a quoted string, as bytes: `\"`, `\\`, `\n`, `\t`, `\r`, `\a`, `\b`, `\f`, `\v`,
/// `\xH[H]`, `\NNN` (octal), `\uXXXX` and `\UXXXXXXXX` (UTF-8).
fn unescape(s: &str) -> Result<Vec<u8>, LiteralError> {
    let mut out = Vec::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            let mut buf = [0; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            continue;
        }
        let Some(e) = chars.next() else {
            return Err(LiteralError::Escape { escaped: None });
        };
        let simple = match e {
            '"' | '\\' | '\'' => Some(e as u8),
            'n' => Some(b'\n'),
            't' => Some(b'\t'),
            'r' => Some(b'\r'),
            'a' => Some(7),
            'b' => Some(8),
            'f' => Some(12),
            'v' => Some(11),
            _ => None,
        };
        if let Some(b) = simple {
            out.push(b);
            continue;
        }
        escape(e, &mut chars, &mut out)?;
    }
    Ok(out)
}

/// The numeric escapes after a backslash (`e` the character after it): `\xH[H]`, `\NNN`, `\uXXXX`,
/// `\UXXXXXXXX`.
fn escape(
    e: char,
    chars: &mut std::iter::Peekable<std::str::Chars>,
    out: &mut Vec<u8>,
) -> Result<(), LiteralError> {
    match e {
        'x' => {
            let hex = take(chars, 2, |c| c.is_ascii_hexdigit());
            let b = u8::from_str_radix(&hex, 16)
                .map_err(|_| LiteralError::Escape { escaped: Some('x') })?;
            out.push(b);
        }
        '0'..='7' => {
            let more = take(chars, 2, |c| ('0'..='7').contains(&c));
            let n = u32::from_str_radix(&format!("{e}{more}"), 8).unwrap_or(256);
            out.push(u8::try_from(n).map_err(|_| LiteralError::Escape { escaped: Some(e) })?);
        }
        'u' | 'U' => {
            let want = if e == 'u' { 4 } else { 8 };
            let hex = take(chars, want, |c| c.is_ascii_hexdigit());
            let code = u32::from_str_radix(&hex, 16)
                .ok()
                .filter(|_| hex.len() == want);
            let named = format!("{e}{hex}");
            let c = code
                .filter(|&n| n >= 0xa0 || [0x24, 0x40, 0x60].contains(&n))
                .and_then(char::from_u32)
                .ok_or(LiteralError::Universal(named))?;
            let mut buf = [0; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
        }
        other => {
            return Err(LiteralError::Escape {
                escaped: Some(other),
            });
        }
    }
    Ok(())
}

/// Up to `n` characters that satisfy `ok`.
fn take(
    chars: &mut std::iter::Peekable<std::str::Chars>,
    n: usize,
    ok: impl Fn(char) -> bool,
) -> String {
    let mut out = String::new();
    while out.len() < n {
        match chars.peek() {
            Some(&c) if ok(c) => {
                out.push(c);
                chars.next();
            }
            _ => break,
        }
    }
    out
}
