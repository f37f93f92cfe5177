//! Fixed-width little-endian coding of the crate's records and messages.
//!
//! Writers append to a `Vec<u8>`; a [`Reader`] takes values from the front of a slice and
//! fails with a [`DecodeError`] saying what it wanted and where, never panics: every stored
//! or received byte string may be damaged. Callers add what was being read (group, index).

use std::fmt;

/// Why bytes could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    /// What was being read (`u64`, `membership config count`, ...).
    pub what: String,
    /// Byte offset into the record where it failed.
    pub offset: usize,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot decode {} at byte {}", self.what, self.offset)
    }
}

impl std::error::Error for DecodeError {}

pub(crate) fn put_u8(out: &mut Vec<u8>, v: u8) {
    out.push(v);
}

pub(crate) fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

pub(crate) fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

pub(crate) fn put_bool(out: &mut Vec<u8>, v: bool) {
    out.push(u8::from(v));
}

/// A length-prefixed (u32) byte string.
pub(crate) fn put_bytes(out: &mut Vec<u8>, v: &[u8]) {
    put_u32(out, v.len() as u32);
    out.extend_from_slice(v);
}

/// Reads values from the front of a byte slice.
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    fn err(&self, what: &str) -> DecodeError {
        DecodeError { what: what.to_string(), offset: self.pos }
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], DecodeError> {
        let end = self.pos.checked_add(n).ok_or_else(|| self.err(what))?;
        let s = self.buf.get(self.pos..end).ok_or_else(|| self.err(what))?;
        self.pos = end;
        Ok(s)
    }

    pub(crate) fn u8(&mut self, what: &str) -> Result<u8, DecodeError> {
        Ok(self.take(1, what)?[0])
    }

    pub(crate) fn u32(&mut self, what: &str) -> Result<u32, DecodeError> {
        let s = self.take(4, what)?;
        Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    }

    pub(crate) fn u64(&mut self, what: &str) -> Result<u64, DecodeError> {
        let s = self.take(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(s);
        Ok(u64::from_le_bytes(a))
    }

    pub(crate) fn bool(&mut self, what: &str) -> Result<bool, DecodeError> {
        match self.u8(what)? {
            0 => Ok(false),
            1 => Ok(true),
            _ => {
                self.pos -= 1;
                Err(self.err(&format!("{what} (a flag other than 0 or 1)")))
            }
        }
    }

    /// A length-prefixed byte string; the length must fit in what is left.
    pub(crate) fn bytes(&mut self, what: &str) -> Result<&'a [u8], DecodeError> {
        let n = self.u32(what)? as usize;
        self.take(n, what)
    }

    /// A count of items each at least `min_item` bytes long, checked against the bytes left
    /// so that a damaged count cannot make the caller allocate without bound.
    pub(crate) fn count(&mut self, what: &str, min_item: usize) -> Result<usize, DecodeError> {
        let n = self.u32(what)? as usize;
        if n.saturating_mul(min_item.max(1)) > self.remaining() {
            self.pos -= 4;
            return Err(self.err(&format!("{what} ({n} is more than the record holds)")));
        }
        Ok(n)
    }

    pub(crate) fn string(&mut self, what: &str) -> Result<String, DecodeError> {
        let at = self.pos;
        let b = self.bytes(what)?;
        String::from_utf8(b.to_vec())
            .map_err(|_| DecodeError { what: format!("{what} (not UTF-8)"), offset: at })
    }

    /// Everything not read yet.
    pub(crate) fn rest(&mut self) -> &'a [u8] {
        let s = &self.buf[self.pos..];
        self.pos = self.buf.len();
        s
    }

    pub(crate) fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Fails unless every byte was read.
    pub(crate) fn finish(&self, what: &str) -> Result<(), DecodeError> {
        if self.remaining() == 0 {
            Ok(())
        } else {
            Err(self.err(&format!("the end of {what} ({} bytes left over)", self.remaining())))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_and_short_input_is_an_error_not_a_panic() {
        let mut out = Vec::new();
        put_u8(&mut out, 7);
        put_u32(&mut out, 0xdead_beef);
        put_u64(&mut out, u64::MAX - 1);
        put_bool(&mut out, true);
        put_bytes(&mut out, b"abc");
        let mut r = Reader::new(&out);
        assert_eq!(r.u8("a").unwrap(), 7);
        assert_eq!(r.u32("b").unwrap(), 0xdead_beef);
        assert_eq!(r.u64("c").unwrap(), u64::MAX - 1);
        assert!(r.bool("d").unwrap());
        assert_eq!(r.bytes("e").unwrap(), b"abc");
        r.finish("test").unwrap();
        for cut in 0..out.len() {
            let mut r = Reader::new(&out[..cut]);
            let all = r
                .u8("a")
                .and_then(|_| r.u32("b"))
                .and_then(|_| r.u64("c"))
                .and_then(|_| r.bool("d"))
                .and_then(|_| r.bytes("e").map(|_| true));
            assert!(all.is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn a_huge_count_is_refused_before_allocating() {
        let mut out = Vec::new();
        put_u32(&mut out, u32::MAX);
        let e = Reader::new(&out).count("nodes", 8).unwrap_err();
        assert!(e.to_string().contains("more than the record holds"), "{e}");
    }
}
