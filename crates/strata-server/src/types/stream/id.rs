//! Stream entry ids: `<ms>-<seq>`, two 64-bit halves, ordered by `ms` then `seq`. Parsed as
//! Redis parses them (its `string2ull` on each half, `-` and `+` for the least and greatest
//! id, an incomplete `<ms>` taking a chosen `seq`, `<ms>-*` for XADD), written as decimal
//! text, and stored as 16 big-endian bytes so that byte order is id order.

use std::fmt;

/// A stream id.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamId {
    /// Milliseconds part.
    pub ms: u64,
    /// Sequence part.
    pub seq: u64,
}

impl StreamId {
    /// `0-0`: below every entry (no entry has it).
    pub const MIN: StreamId = StreamId { ms: 0, seq: 0 };
    /// `18446744073709551615-18446744073709551615`.
    pub const MAX: StreamId = StreamId { ms: u64::MAX, seq: u64::MAX };

    /// The id `ms-seq`.
    pub const fn new(ms: u64, seq: u64) -> StreamId {
        StreamId { ms, seq }
    }

    /// Whether this is `0-0`.
    pub fn is_zero(self) -> bool {
        self == StreamId::MIN
    }

    /// The next id; `None` after the greatest.
    pub fn incr(self) -> Option<StreamId> {
        match (self.ms, self.seq) {
            (u64::MAX, u64::MAX) => None,
            (ms, u64::MAX) => Some(StreamId::new(ms + 1, 0)),
            (ms, seq) => Some(StreamId::new(ms, seq + 1)),
        }
    }

    /// The previous id; `None` before the least.
    pub fn decr(self) -> Option<StreamId> {
        match (self.ms, self.seq) {
            (0, 0) => None,
            (ms, 0) => Some(StreamId::new(ms - 1, u64::MAX)),
            (ms, seq) => Some(StreamId::new(ms, seq - 1)),
        }
    }

    /// 16 bytes, `ms` then `seq`, big-endian: byte order is id order.
    pub fn to_be_bytes(self) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&self.ms.to_be_bytes());
        b[8..].copy_from_slice(&self.seq.to_be_bytes());
        b
    }

    /// Reads [`StreamId::to_be_bytes`]'s form from the first 16 bytes of `b`.
    pub fn from_be_bytes(b: &[u8]) -> Option<StreamId> {
        let ms = u64::from_be_bytes(b.get(..8)?.try_into().ok()?);
        let seq = u64::from_be_bytes(b.get(8..16)?.try_into().ok()?);
        Some(StreamId::new(ms, seq))
    }

    /// 16 bytes, `ms` then `seq`, little-endian (inside record values).
    pub fn to_le_bytes(self) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&self.ms.to_le_bytes());
        b[8..].copy_from_slice(&self.seq.to_le_bytes());
        b
    }

    /// Reads [`StreamId::to_le_bytes`]'s form from the first 16 bytes of `b`.
    pub fn from_le_bytes(b: &[u8]) -> Option<StreamId> {
        let ms = u64::from_le_bytes(b.get(..8)?.try_into().ok()?);
        let seq = u64::from_le_bytes(b.get(8..16)?.try_into().ok()?);
        Some(StreamId::new(ms, seq))
    }
}

impl fmt::Display for StreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

/// How an id argument may be written.
#[derive(Debug, Clone, Copy)]
pub struct IdSyntax {
    /// The `seq` an id written as `<ms>` alone takes.
    pub missing_seq: u64,
    /// Whether `-` and `+` are refused.
    pub strict: bool,
    /// Whether `<ms>-*` is accepted (XADD).
    pub seq_star: bool,
}

impl IdSyntax {
    /// An exact id: no `-`/`+`, an incomplete one taking `seq` 0.
    pub const STRICT: IdSyntax = IdSyntax { missing_seq: 0, strict: true, seq_star: false };
    /// An id or `-`/`+`, an incomplete one taking `seq` 0.
    pub const LOOSE: IdSyntax = IdSyntax { missing_seq: 0, strict: false, seq_star: false };
}

/// A parsed id argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParsedId {
    /// The id (`seq` 0 for `<ms>-*`).
    pub id: StreamId,
    /// False for `<ms>-*`: the sequence is to be chosen.
    pub seq_given: bool,
}

/// Parses an id argument; `None` when it is not one (Redis's "Invalid stream ID").
pub fn parse(arg: &[u8], syn: IdSyntax) -> Option<ParsedId> {
    if arg.len() > 127 {
        return None;
    }
    // Redis reads the argument as a C string: it ends at a NUL byte.
    let s = arg.iter().position(|&b| b == 0).map_or(arg, |n| &arg[..n]);
    let given = |id| Some(ParsedId { id, seq_given: true });
    match s {
        b"-" | b"+" if syn.strict => None,
        b"-" => given(StreamId::MIN),
        b"+" => given(StreamId::MAX),
        _ => match s.iter().position(|&b| b == b'-') {
            None => given(StreamId::new(parse_u64(s)?, syn.missing_seq)),
            Some(dash) => {
                let ms = parse_u64(&s[..dash])?;
                let rest = &s[dash + 1..];
                if syn.seq_star && rest == b"*" {
                    return Some(ParsedId { id: StreamId::new(ms, 0), seq_given: false });
                }
                given(StreamId::new(ms, parse_u64(rest)?))
            }
        },
    }
}

/// Redis's `string2ull`: a strict non-negative integer, or else what C's `strtoull` reads
/// when it consumes the whole text (leading white space, a sign, decimal digits, no
/// overflow; a `-` negates modulo 2^64).
pub fn parse_u64(s: &[u8]) -> Option<u64> {
    if let Some(v) = crate::types::number::parse_int_strict(s) {
        return u64::try_from(v).ok();
    }
    let mut i = 0;
    while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r') {
        i += 1;
    }
    let negative = match s.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let digits = &s[i..];
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut v: u64 = 0;
    for &d in digits {
        v = v.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    Some(if negative { v.wrapping_neg() } else { v })
}

/// A bound of an interval argument (XRANGE, XPENDING, XAUTOCLAIM): `(` in front excludes
/// the id (and refuses `-`/`+`).
pub fn parse_interval(arg: &[u8], missing_seq: u64) -> Option<(StreamId, bool)> {
    let exclusive = arg.len() > 1 && arg[0] == b'(';
    let (text, strict) = if exclusive { (&arg[1..], true) } else { (arg, false) };
    let p = parse(text, IdSyntax { missing_seq, strict, seq_star: false })?;
    Some((p.id, exclusive))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str, syn: IdSyntax) -> Option<ParsedId> {
        parse(s.as_bytes(), syn)
    }

    fn id(s: &str) -> Option<StreamId> {
        p(s, IdSyntax::LOOSE).map(|p| p.id)
    }

    #[test]
    fn ids_parse_like_redis() {
        assert_eq!(id("5-3"), Some(StreamId::new(5, 3)));
        assert_eq!(id("5"), Some(StreamId::new(5, 0)));
        assert_eq!(id("-"), Some(StreamId::MIN));
        assert_eq!(id("+"), Some(StreamId::MAX));
        let max = "18446744073709551615-18446744073709551615";
        assert_eq!(id(max), Some(StreamId::MAX));
        assert_eq!(id("18446744073709551616-0"), None);
        assert_eq!(id("1-18446744073709551616"), None);
        for bad in ["", "a", "1-", "-1", "1-a", "1.5", "1-2-3", "0x10", " ", "1 -2", "--"] {
            assert_eq!(id(bad), None, "{bad}");
        }
        // strtoull's leniency: white space, a plus sign, a wrapping minus on the sequence.
        assert_eq!(id(" 7"), Some(StreamId::new(7, 0)));
        assert_eq!(id("+7-+2"), Some(StreamId::new(7, 2)));
        assert_eq!(id("7--18446744073709551615"), Some(StreamId::new(7, 1)));
        assert_eq!(id("7--1"), None);
        assert_eq!(id("007-01"), Some(StreamId::new(7, 1)));
        // A NUL ends the text; a long argument is refused.
        assert_eq!(parse(b"9-1\0junk", IdSyntax::LOOSE).map(|p| p.id), Some(StreamId::new(9, 1)));
        assert_eq!(id(&"1".repeat(128)), None);
    }

    #[test]
    fn strictness_incomplete_ids_and_star() {
        assert_eq!(p("-", IdSyntax::STRICT), None);
        assert_eq!(p("+", IdSyntax::STRICT), None);
        let end = IdSyntax { missing_seq: u64::MAX, strict: false, seq_star: false };
        assert_eq!(p("5", end).map(|p| p.id), Some(StreamId::new(5, u64::MAX)));
        let xadd = IdSyntax { seq_star: true, ..IdSyntax::STRICT };
        assert_eq!(p("5-*", xadd), Some(ParsedId { id: StreamId::new(5, 0), seq_given: false }));
        assert_eq!(p("5-*", IdSyntax::STRICT), None);
        assert_eq!(p("*", xadd), None);
        assert_eq!(p("5-3", xadd), Some(ParsedId { id: StreamId::new(5, 3), seq_given: true }));
    }

    #[test]
    fn intervals() {
        assert_eq!(parse_interval(b"(5-1", 0), Some((StreamId::new(5, 1), true)));
        assert_eq!(parse_interval(b"(", 0), None);
        assert_eq!(parse_interval(b"(-", 0), None);
        assert_eq!(parse_interval(b"(+", 0), None);
        assert_eq!(parse_interval(b"+", 0), Some((StreamId::MAX, false)));
        assert_eq!(parse_interval(b"7", u64::MAX), Some((StreamId::new(7, u64::MAX), false)));
    }

    #[test]
    fn successor_predecessor_order_and_bytes() {
        assert_eq!(StreamId::new(1, u64::MAX).incr(), Some(StreamId::new(2, 0)));
        assert_eq!(StreamId::MAX.incr(), None);
        assert_eq!(StreamId::new(2, 0).decr(), Some(StreamId::new(1, u64::MAX)));
        assert_eq!(StreamId::MIN.decr(), None);
        let ids = [StreamId::MIN, StreamId::new(0, 1), StreamId::new(1, 0), StreamId::MAX];
        for w in ids.windows(2) {
            assert!(w[0] < w[1]);
            assert!(w[0].to_be_bytes() < w[1].to_be_bytes());
        }
        for i in ids {
            assert_eq!(StreamId::from_be_bytes(&i.to_be_bytes()), Some(i));
            assert_eq!(StreamId::from_le_bytes(&i.to_le_bytes()), Some(i));
            assert_eq!(id(&i.to_string()), Some(i));
        }
        assert_eq!(StreamId::MAX.to_string(), "18446744073709551615-18446744073709551615");
        assert_eq!(StreamId::from_be_bytes(&[0; 15]), None);
    }
}
