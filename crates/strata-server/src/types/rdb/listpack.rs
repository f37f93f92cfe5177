//! Listpacks, Redis 7.0's packed sequence of strings and integers: the body of a small hash
//! or sorted set, of each node of a list (quicklist 2) and of each node of a stream.
//!
//! ```text
//!  +-------------+-------------+---------+-----+---------+------+
//!  | bytes u32LE | count u16LE | entry 0 | ... | entry n | 0xFF |
//!  +-------------+-------------+---------+-----+---------+------+
//!  bytes: the whole listpack's size; count: the entries, 65535 when there are more
//!  entry: encoding and data | backlen (the size of encoding and data, in 1 to 5 bytes)
//!   0xxxxxxx                      an integer 0..127
//!   10xxxxxx + bytes              a string of up to 63 bytes
//!   110xxxxx yyyyyyyy             a 13-bit signed integer
//!   1110xxxx yyyyyyyy + bytes     a string of up to 4095 bytes (length big-endian in 12 bits)
//!   11110000 + u32LE + bytes      a longer string
//!   11110001 + i16LE, 11110010 + i24LE, 11110011 + i32LE, 11110100 + i64LE
//!  backlen: 7 bits a byte, most significant first; every byte but the first has its top
//!  bit set, so it reads from the entry's end backwards
//! ```
//!
//! A string that reads as a canonical integer (Redis's `string2ll`) is written as an integer,
//! as redis-server does, so readers give integers back as their decimal text.

use super::BadData;
use crate::types::number::parse_int_strict;

/// The header's size: total bytes and entry count.
pub const HEADER: usize = 6;
/// The end marker.
const END: u8 = 0xff;
/// The count a header gives when there are too many entries to count in 16 bits.
const COUNT_UNKNOWN: u16 = u16::MAX;

/// One entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Elem<'a> {
    /// An integer.
    Int(i64),
    /// A string.
    Str(&'a [u8]),
}

impl Elem<'_> {
    /// The entry as bytes (an integer as its decimal text).
    pub fn to_vec(self) -> Vec<u8> {
        match self {
            Elem::Int(v) => v.to_string().into_bytes(),
            Elem::Str(s) => s.to_vec(),
        }
    }

    /// The entry as an integer: an integer entry, or a string that is a canonical one.
    pub fn as_int(self) -> Option<i64> {
        match self {
            Elem::Int(v) => Some(v),
            Elem::Str(s) => parse_int_strict(s),
        }
    }
}

/// The size of a backlen stating `len`.
fn backlen_size(len: usize) -> usize {
    match len {
        0..=127 => 1,
        128..=16382 => 2,
        16383..=2_097_150 => 3,
        2_097_151..=268_435_454 => 4,
        _ => 5,
    }
}

/// Appends the backlen of an entry of `len` bytes.
fn push_backlen(out: &mut Vec<u8>, len: usize) {
    let n = backlen_size(len);
    for i in (0..n).rev() {
        let group = ((len >> (7 * i)) & 0x7f) as u8;
        out.push(if i == n - 1 { group } else { group | 0x80 });
    }
}

/// The size of an integer entry, backlen included.
pub fn int_entry_size(v: i64) -> usize {
    let enc = int_encoding_size(v);
    enc + backlen_size(enc)
}

fn int_encoding_size(v: i64) -> usize {
    match v {
        0..=127 => 1,
        -4096..=4095 => 2,
        -32768..=32767 => 3,
        -8_388_608..=8_388_607 => 4,
        -2_147_483_648..=2_147_483_647 => 5,
        _ => 9,
    }
}

/// Sign-extends the low `bits` of `u`.
fn signed(u: u64, bits: u32) -> i64 {
    let shift = 64 - bits;
    ((u << shift) as i64) >> shift
}

fn le(b: &[u8]) -> u64 {
    b.iter().rev().fold(0u64, |acc, &x| acc << 8 | u64::from(x))
}

/// Decodes the entry at the start of `b`: the entry and the size of its encoding and data.
fn entry(b: &[u8]) -> Result<(Elem<'_>, usize), BadData> {
    let bad = BadData("listpack entry");
    let first = *b.first().ok_or(bad)?;
    let take =
        |from: usize, n: usize| from.checked_add(n).and_then(|end| b.get(from..end)).ok_or(bad);
    Ok(match first {
        0x00..=0x7f => (Elem::Int(i64::from(first)), 1),
        0x80..=0xbf => {
            let n = usize::from(first & 0x3f);
            (Elem::Str(take(1, n)?), 1 + n)
        }
        0xc0..=0xdf => {
            let u = u64::from(first & 0x1f) << 8 | u64::from(take(1, 1)?[0]);
            (Elem::Int(signed(u, 13)), 2)
        }
        0xe0..=0xef => {
            let n = usize::from(first & 0x0f) << 8 | usize::from(take(1, 1)?[0]);
            (Elem::Str(take(2, n)?), 2 + n)
        }
        0xf0 => {
            let n = le(take(1, 4)?) as usize;
            (Elem::Str(take(5, n)?), 5 + n)
        }
        0xf1 => (Elem::Int(signed(le(take(1, 2)?), 16)), 3),
        0xf2 => (Elem::Int(signed(le(take(1, 3)?), 24)), 4),
        0xf3 => (Elem::Int(signed(le(take(1, 4)?), 32)), 5),
        0xf4 => (Elem::Int(le(take(1, 8)?) as i64), 9),
        _ => return Err(bad),
    })
}

/// Decodes a whole listpack, checking every part of it: the header's size and count, each
/// entry and its backlen, the end marker.
pub fn decode(lp: &[u8]) -> Result<Vec<Elem<'_>>, BadData> {
    let bad = BadData("listpack");
    if lp.len() < HEADER + 1 || le(&lp[..4]) != lp.len() as u64 || lp[lp.len() - 1] != END {
        return Err(bad);
    }
    let count = le(&lp[4..6]) as u16;
    let body = &lp[HEADER..lp.len() - 1];
    let mut out = Vec::with_capacity(usize::from(count).min(body.len()));
    let mut at = 0;
    let mut back = Vec::with_capacity(5);
    while at < body.len() {
        let (e, size) = entry(&body[at..])?;
        back.clear();
        push_backlen(&mut back, size);
        let end = at + size;
        if body.get(end..end + back.len()) != Some(&back[..]) {
            return Err(bad);
        }
        out.push(e);
        at = end + back.len();
    }
    if count != COUNT_UNKNOWN && usize::from(count) != out.len() {
        return Err(bad);
    }
    Ok(out)
}

/// Builds a listpack entry by entry.
pub struct Writer {
    buf: Vec<u8>,
    count: usize,
}

impl Default for Writer {
    fn default() -> Self {
        Writer::new()
    }
}

impl Writer {
    /// An empty listpack.
    pub fn new() -> Writer {
        Writer { buf: vec![0; HEADER], count: 0 }
    }

    /// The entries so far.
    pub fn count(&self) -> usize {
        self.count
    }

    /// The listpack's size if it ended now.
    pub fn bytes(&self) -> usize {
        self.buf.len() + 1
    }

    /// Appends `s`: as an integer when it is a canonical one, else as a string.
    pub fn push(&mut self, s: &[u8]) {
        match parse_int_strict(s) {
            Some(v) => self.push_int(v),
            None => self.push_str(s),
        }
    }

    /// Appends a string entry.
    pub fn push_str(&mut self, s: &[u8]) {
        let start = self.buf.len();
        let n = s.len();
        if n < 64 {
            self.buf.push(0x80 | n as u8);
        } else if n < 4096 {
            self.buf.push(0xe0 | (n >> 8) as u8);
            self.buf.push((n & 0xff) as u8);
        } else {
            self.buf.push(0xf0);
            self.buf.extend_from_slice(&(n as u32).to_le_bytes());
        }
        self.buf.extend_from_slice(s);
        let size = self.buf.len() - start;
        push_backlen(&mut self.buf, size);
        self.count += 1;
    }

    /// Appends an integer entry, in its smallest encoding.
    pub fn push_int(&mut self, v: i64) {
        let size = int_encoding_size(v);
        match size {
            1 => self.buf.push(v as u8),
            2 => {
                let u = (v as u64) & 0x1fff;
                self.buf.push(0xc0 | (u >> 8) as u8);
                self.buf.push((u & 0xff) as u8);
            }
            _ => {
                self.buf.push(match size {
                    3 => 0xf1,
                    4 => 0xf2,
                    5 => 0xf3,
                    _ => 0xf4,
                });
                self.buf.extend_from_slice(&v.to_le_bytes()[..size - 1]);
            }
        }
        push_backlen(&mut self.buf, size);
        self.count += 1;
    }

    /// The finished listpack.
    pub fn finish(mut self) -> Vec<u8> {
        self.buf.push(END);
        let total = self.buf.len() as u32;
        self.buf[..4].copy_from_slice(&total.to_le_bytes());
        let count = u16::try_from(self.count).unwrap_or(COUNT_UNKNOWN);
        self.buf[4..6].copy_from_slice(&count.to_le_bytes());
        self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_encoding_round_trips() {
        let ints = [
            0,
            127,
            128,
            -1,
            4095,
            -4096,
            4096,
            -32768,
            32767,
            8_388_607,
            -8_388_608,
            i64::from(i32::MAX),
            i64::from(i32::MIN),
            i64::MAX,
            i64::MIN,
        ];
        let strings: Vec<Vec<u8>> =
            [0usize, 1, 63, 64, 4095, 4096, 70000].iter().map(|&n| vec![b'x'; n]).collect();
        let mut w = Writer::new();
        for &v in &ints {
            w.push_int(v);
        }
        for s in &strings {
            w.push(s);
        }
        w.push(b"-0");
        w.push(b"12");
        let lp = w.finish();
        let got = decode(&lp).unwrap();
        let mut want: Vec<Elem> = ints.iter().map(|&v| Elem::Int(v)).collect();
        want.extend(strings.iter().map(|s| Elem::Str(s)));
        want.push(Elem::Str(b"-0"));
        want.push(Elem::Int(12));
        assert_eq!(got, want);
        for (&v, e) in ints.iter().zip(&got) {
            let mut one = Writer::new();
            one.push_int(v);
            assert_eq!(one.bytes() - HEADER - 1, int_entry_size(v), "{v}");
            assert_eq!(e.as_int(), Some(v));
        }
    }

    #[test]
    fn a_known_listpack_decodes() {
        // Redis's encoding of ["a", 5, -2]: header, "a", 5, 13-bit -2, end.
        let lp = [0x11, 0, 0, 0, 3, 0, 0x81, b'a', 2, 0x05, 1, 0xdf, 0xfe, 2, 0xff];
        // 6 + 3 + 2 + 3 + 1 = 15 bytes, but the header says 17: refused.
        assert!(decode(&lp).is_err());
        let mut good = lp;
        good[0] = 15;
        assert_eq!(decode(&good).unwrap(), vec![Elem::Str(b"a"), Elem::Int(5), Elem::Int(-2)]);
    }

    #[test]
    fn truncations_and_flips_never_panic() {
        let mut w = Writer::new();
        for s in [&b"field"[..], b"1", b"-300", &[b'v'; 200]] {
            w.push(s);
        }
        let lp = w.finish();
        assert!(decode(&lp).is_ok());
        for cut in 0..lp.len() {
            assert!(decode(&lp[..cut]).is_err(), "cut at {cut}");
        }
        for i in 0..lp.len() {
            for bit in 0..8 {
                let mut bad = lp.clone();
                bad[i] ^= 1 << bit;
                let _ = decode(&bad);
            }
        }
    }
}
