//! Integer encodings used by every on-disk format: fixed-width little-endian and LEB128 varints.
//!
//! Decoding goes through [`Reader`], a cursor whose methods return `None` on truncated or
//! malformed input; the caller turns that into a `Corruption` naming the file and offset.

#[cfg(test)]
/// Maximum encoded length of a varint64.
pub const MAX_VARINT64_LEN: usize = 10;

/// Where the encoders append: a `Vec` or a [`GrowBuf`](super::grow_buf::GrowBuf).
pub trait ByteSink {
    fn push(&mut self, b: u8);
    fn extend_from_slice(&mut self, bytes: &[u8]);
}

impl ByteSink for Vec<u8> {
    #[inline]
    fn push(&mut self, b: u8) {
        Vec::push(self, b);
    }

    #[inline]
    fn extend_from_slice(&mut self, bytes: &[u8]) {
        Vec::extend_from_slice(self, bytes);
    }
}

impl ByteSink for super::grow_buf::GrowBuf<u8> {
    #[inline]
    fn push(&mut self, b: u8) {
        super::grow_buf::GrowBuf::push(self, b);
    }

    #[inline]
    fn extend_from_slice(&mut self, bytes: &[u8]) {
        super::grow_buf::GrowBuf::extend_from_slice(self, bytes);
    }
}

#[inline]
pub fn put_fixed32(buf: &mut impl ByteSink, v: u32) {
    buf.extend_from_slice(&v.to_le_bytes());
}

#[inline]
pub fn put_fixed64(buf: &mut impl ByteSink, v: u64) {
    buf.extend_from_slice(&v.to_le_bytes());
}

#[inline]
pub fn put_varint32(buf: &mut impl ByteSink, v: u32) {
    put_varint64(buf, u64::from(v));
}

#[inline]
pub fn put_varint64(buf: &mut impl ByteSink, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

/// Appends `varint(len) | bytes`.
#[inline]
pub fn put_length_prefixed(buf: &mut Vec<u8>, data: &[u8]) {
    put_varint64(buf, data.len() as u64);
    buf.extend_from_slice(data);
}

/// Encoded length of `v` as a varint.
#[inline]
pub fn varint_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

/// Reads a little-endian u32 at `pos`; caller guarantees `pos + 4 <= buf.len()`.
#[inline]
pub fn decode_fixed32(buf: &[u8], pos: usize) -> u32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&buf[pos..pos + 4]);
    u32::from_le_bytes(b)
}

/// Reads a little-endian u64 at `pos`; caller guarantees `pos + 8 <= buf.len()`.
#[inline]
pub fn decode_fixed64(buf: &[u8], pos: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&buf[pos..pos + 8]);
    u64::from_le_bytes(b)
}

/// Decodes a varint64 at `*pos`, advancing it. `None` when truncated or longer than 10 bytes.
#[inline]
pub fn get_varint64(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let mut result: u64 = 0;
    let mut shift = 0u32;
    while shift <= 63 {
        let b = *buf.get(*pos)?;
        *pos += 1;
        result |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(result);
        }
        shift += 7;
    }
    None
}

/// Decodes a varint32 at `*pos`, advancing it. `None` when truncated or out of range.
#[inline]
pub fn get_varint32(buf: &[u8], pos: &mut usize) -> Option<u32> {
    // Fast path: one byte.
    if let Some(&b) = buf.get(*pos) {
        if b < 0x80 {
            *pos += 1;
            return Some(u32::from(b));
        }
    }
    let v = get_varint64(buf, pos)?;
    u32::try_from(v).ok()
}

/// A bounds-checked cursor over an encoded buffer.
#[derive(Clone, Debug)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    /// Bytes consumed so far.
    pub fn position(&self) -> usize {
        self.pos
    }

    pub fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    pub fn u8(&mut self) -> Option<u8> {
        let b = *self.buf.get(self.pos)?;
        self.pos += 1;
        Some(b)
    }

    pub fn fixed32(&mut self) -> Option<u32> {
        let s = self.bytes(4)?;
        Some(decode_fixed32(s, 0))
    }

    pub fn fixed64(&mut self) -> Option<u64> {
        let s = self.bytes(8)?;
        Some(decode_fixed64(s, 0))
    }

    pub fn varint32(&mut self) -> Option<u32> {
        get_varint32(self.buf, &mut self.pos)
    }

    pub fn varint64(&mut self) -> Option<u64> {
        get_varint64(self.buf, &mut self.pos)
    }

    /// The next `n` bytes.
    pub fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let s = self.buf.get(self.pos..end)?;
        self.pos = end;
        Some(s)
    }

    /// A `varint(len) | bytes` slice.
    pub fn length_prefixed(&mut self) -> Option<&'a [u8]> {
        let n = usize::try_from(self.varint64()?).ok()?;
        self.bytes(n)
    }

    /// Everything not yet consumed.
    pub fn rest(&mut self) -> &'a [u8] {
        let s = &self.buf[self.pos..];
        self.pos = self.buf.len();
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_roundtrip_edges() {
        let vals =
            [0u64, 1, 127, 128, 255, 300, 16383, 16384, u32::MAX as u64, u64::MAX - 1, u64::MAX];
        let mut buf = Vec::new();
        for &v in &vals {
            put_varint64(&mut buf, v);
        }
        let mut r = Reader::new(&buf);
        for &v in &vals {
            assert_eq!(r.varint64(), Some(v));
        }
        assert!(r.is_empty());
        for &v in &vals {
            let mut b = Vec::new();
            put_varint64(&mut b, v);
            assert_eq!(b.len(), varint_len(v));
        }
    }

    #[test]
    fn varint_rejects_truncated_and_overlong() {
        let mut buf = Vec::new();
        put_varint64(&mut buf, 1 << 40);
        buf.pop();
        assert_eq!(Reader::new(&buf).varint64(), None);
        let overlong = [0x80u8; 11];
        assert_eq!(Reader::new(&overlong).varint64(), None);
        let mut big = Vec::new();
        put_varint64(&mut big, 1 << 33);
        assert_eq!(Reader::new(&big).varint32(), None);
    }

    #[test]
    fn reader_bounds() {
        let mut buf = Vec::new();
        put_fixed32(&mut buf, 7);
        put_length_prefixed(&mut buf, b"abc");
        put_fixed64(&mut buf, 9);
        let mut r = Reader::new(&buf);
        assert_eq!(r.fixed32(), Some(7));
        assert_eq!(r.length_prefixed(), Some(&b"abc"[..]));
        assert_eq!(r.fixed64(), Some(9));
        assert_eq!(r.u8(), None);
        assert_eq!(Reader::new(&[5, b'a']).length_prefixed(), None);
    }
}
