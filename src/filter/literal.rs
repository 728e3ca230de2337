//! Literals read as the kind of the field they are compared with, the way Wireshark reads them.
use std::net::{Ipv4Addr, Ipv6Addr};

use parsers::fields::Kind;

use super::Lit;

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
    /// `\xHH` whose two characters (`hex`) are no ASCII character's code.
    #[error("\\x{hex} is not an ASCII character")]
    NotAscii { hex: String },
    /// A backslash before `escaped` (nothing at the end of the string).
    #[error("\\{} is not an escape (\\\", \\\\, \\n, \\t, \\r, \\xHH)", .escaped.map(String::from).unwrap_or_default())]
    Escape { escaped: Option<char> },
}

/// Reads `text` (unquoted, or the inside of a quoted string) as a value of `kind`; the error says what
/// was expected.
pub(super) fn read(kind: Kind, text: &str, quoted: bool) -> Result<Lit, LiteralError> {
    let not = |what: &'static str| {
        Err(LiteralError::Not {
            text: text.to_string(),
            what,
        })
    };
    match kind {
        Kind::Text => Ok(Lit::Text(if quoted {
            unescape(text)?
        } else {
            text.to_string()
        })),
        Kind::Bytes if quoted => Ok(Lit::Bytes(unescape(text)?.into_bytes())),
        _ if quoted => Err(LiteralError::Quoted {
            text: text.to_string(),
            kind: kind_words(kind),
        }),
        Kind::Uint => number(text)
            .map(Lit::Uint)
            .ok_or(())
            .or_else(|()| not("a number")),
        Kind::Bool => match text {
            "True" | "true" | "TRUE" => Ok(Lit::Bool(true)),
            "False" | "false" | "FALSE" => Ok(Lit::Bool(false)),
            _ => match number(text) {
                Some(n) => Ok(Lit::Bool(n != 0)),
                None => not("a boolean (1, 0, True or False)"),
            },
        },
        Kind::Ipv4 => {
            let (addr, prefix) = network(text, 32)?;
            match addr.parse::<Ipv4Addr>() {
                Ok(a) => Ok(Lit::Ipv4(a.into(), prefix)),
                Err(_) => not("an IPv4 address"),
            }
        }
        Kind::Ipv6 => {
            let (addr, prefix) = network(text, 128)?;
            match addr.parse::<Ipv6Addr>() {
                Ok(a) => Ok(Lit::Ipv6(a.into(), prefix)),
                Err(_) => not("an IPv6 address"),
            }
        }
        Kind::Mac => match bytes(text) {
            Some(b) if b.len() == 6 => Ok(Lit::Bytes(b)),
            _ => not("a MAC address (00:11:22:33:44:55)"),
        },
        Kind::Bytes => match bytes(text) {
            Some(b) => Ok(Lit::Bytes(b)),
            None => not("a byte string (00:11:22, or \"text\")"),
        },
    }
}

/// What a field of `kind` holds, in words.
pub(super) fn kind_words(kind: Kind) -> &'static str {
    match kind {
        Kind::Uint => "a number",
        Kind::Bool => "a boolean",
        Kind::Mac => "a MAC address",
        Kind::Ipv4 => "an IPv4 address",
        Kind::Ipv6 => "an IPv6 address",
        Kind::Text => "text",
        Kind::Bytes => "bytes",
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

/// The inside of a quoted string: `\"`, `\\`, `\n`, `\t`, `\r` and `\xHH`.
fn unescape(s: &str) -> Result<String, LiteralError> {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('"') => out.push('"'),
            Some('\\') => out.push('\\'),
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('x') => {
                let hex: String = chars.by_ref().take(2).collect();
                match u8::from_str_radix(&hex, 16) {
                    Ok(b) if b.is_ascii() => out.push(char::from(b)),
                    _ => return Err(LiteralError::NotAscii { hex }),
                }
            }
            escaped => return Err(LiteralError::Escape { escaped }),
        }
    }
    Ok(out)
}
