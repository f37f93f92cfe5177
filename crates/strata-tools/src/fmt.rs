//! How keys and values are written on the command line and in output (`docs/cli.md`).
//!
//! - *escaped* (the default): printable ASCII as is, `\` as `\\`, every other byte as `\xNN`
//!   (two lowercase hex digits); arguments are read back the same way;
//! - *hex* (`--hex`): two lowercase hex digits per byte, for output and arguments;
//! - JSON (`--json`): one object per line, its strings in the chosen form above, with `"` and
//!   `\` escaped as JSON requires.

use std::fmt::Write as _;

use anyhow::{bail, Result};

/// How bytes are shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bytes {
    /// Printable ASCII as is, the rest `\xNN`.
    Escaped,
    /// Lowercase hex.
    Hex,
}

impl Bytes {
    /// `--hex` or not.
    pub fn from_flag(hex: bool) -> Bytes {
        if hex {
            Bytes::Hex
        } else {
            Bytes::Escaped
        }
    }

    /// `b` in this form.
    pub fn show(self, b: &[u8]) -> String {
        match self {
            Bytes::Hex => b.iter().fold(String::with_capacity(2 * b.len()), |mut s, x| {
                let _ = write!(s, "{x:02x}");
                s
            }),
            Bytes::Escaped => {
                let mut s = String::with_capacity(b.len());
                for &x in b {
                    match x {
                        b'\\' => s.push_str("\\\\"),
                        0x20..=0x7e => s.push(x as char),
                        _ => {
                            let _ = write!(s, "\\x{x:02x}");
                        }
                    }
                }
                s
            }
        }
    }

    /// Reads an argument written in this form; `what` names it in the error.
    pub fn parse(self, arg: &str, what: &str) -> Result<Vec<u8>> {
        match self {
            Bytes::Hex => parse_hex(arg, what),
            Bytes::Escaped => parse_escaped(arg, what),
        }
    }
}

fn hex_digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

fn parse_hex(arg: &str, what: &str) -> Result<Vec<u8>> {
    let b = arg.as_bytes();
    if !b.len().is_multiple_of(2) {
        bail!("{what} {arg:?} is not hex: odd number of digits");
    }
    b.chunks(2)
        .map(|p| match (hex_digit(p[0]), hex_digit(p[1])) {
            (Some(h), Some(l)) => Ok(h << 4 | l),
            _ => bail!(
                "{what} {arg:?} is not hex: {:?} is not a hex byte",
                String::from_utf8_lossy(p)
            ),
        })
        .collect()
}

fn parse_escaped(arg: &str, what: &str) -> Result<Vec<u8>> {
    let b = arg.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            out.push(b[i]);
            i += 1;
            continue;
        }
        match b.get(i + 1) {
            Some(b'\\') => {
                out.push(b'\\');
                i += 2;
            }
            Some(b'x') => {
                let byte = b
                    .get(i + 2..i + 4)
                    .and_then(|p| Some(hex_digit(p[0])? << 4 | hex_digit(p[1])?));
                let Some(byte) = byte else {
                    bail!("{what} {arg:?}: \\x at byte {i} must be followed by two hex digits");
                };
                out.push(byte);
                i += 4;
            }
            _ => bail!("{what} {arg:?}: a \\ at byte {i} must start \\\\ or \\xNN"),
        }
    }
    Ok(out)
}

/// `s` as a JSON string literal.
pub fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaped_and_hex_round_trip() {
        let all: Vec<u8> = (0..=255).collect();
        for f in [Bytes::Escaped, Bytes::Hex] {
            assert_eq!(f.parse(&f.show(&all), "key").unwrap(), all);
        }
        assert_eq!(Bytes::Escaped.show(b"a\\b\x00\n"), "a\\\\b\\x00\\x0a");
        assert_eq!(Bytes::Hex.show(b"\x01\xff"), "01ff");
    }

    #[test]
    fn bad_arguments_say_what_is_wrong() {
        assert!(Bytes::Hex.parse("abc", "key").unwrap_err().to_string().contains("odd"));
        assert!(Bytes::Hex.parse("zz", "key").is_err());
        assert!(Bytes::Escaped.parse("a\\q", "key").unwrap_err().to_string().contains("\\xNN"));
        assert!(Bytes::Escaped.parse("a\\x4", "key").is_err());
    }

    #[test]
    fn json_strings_escape_quotes_and_controls() {
        assert_eq!(json_string("a\"b\\c\u{1}"), "\"a\\\"b\\\\c\\u0001\"");
    }
}
