//! The packed encodings older Redis versions wrote and Redis 7.0 still reads: ziplists (lists,
//! hashes and sorted sets before 7.0; each node of a version-1 quicklist) and zipmaps (small
//! hashes before 2.6). Read only: nothing writes them any more.
//!
//! ```text
//!  ziplist:
//!  +-------------+------------+------------+---------+-----+---------+------+
//!  | bytes u32LE | tail u32LE | count u16LE| entry 0 | ... | entry n | 0xFF |
//!  +-------------+------------+------------+---------+-----+---------+------+
//!  tail: the offset of the last entry; count: 65535 when there are more entries
//!  entry: prevlen | encoding | data
//!   prevlen: the previous entry's size, in 1 byte (< 254) or 0xFE + u32LE
//!   00xxxxxx                  a string of up to 63 bytes
//!   01xxxxxx yyyyyyyy         a string of up to 16383 bytes (14 bits, big-endian)
//!   10______ + u32BE          a longer string
//!   11000000 + i16LE, 11010000 + i32LE, 11100000 + i64LE, 11110000 + i24LE,
//!   11111110 + i8             integers
//!   1111xxxx (0001..1101)     the integer xxxx - 1 (0..12), no data
//!
//!  zipmap:
//!  +-------------+--------------------------------------------------+------+
//!  | count u8    | (len | field | len | free u8 | value | free bytes)* | 0xFF |
//!  +-------------+--------------------------------------------------+------+
//!  count: the pairs, when below 254; len: 1 byte (< 254) or 0xFE + u32LE
//! ```

use super::listpack::Elem;
use super::BadData;

fn le(b: &[u8]) -> u64 {
    b.iter().rev().fold(0u64, |acc, &x| acc << 8 | u64::from(x))
}

/// Sign-extends the low `bits` of `u`.
fn signed(u: u64, bits: u32) -> i64 {
    let shift = 64 - bits;
    ((u << shift) as i64) >> shift
}

/// Decodes a whole ziplist, checking its header (size, tail, count), every entry (each
/// one's record of the previous entry's size included) and the end marker.
pub fn decode(zl: &[u8]) -> Result<Vec<Elem<'_>>, BadData> {
    let bad = BadData("ziplist");
    if zl.len() < 11 || le(&zl[..4]) != zl.len() as u64 || zl[zl.len() - 1] != 0xff {
        return Err(bad);
    }
    let tail = le(&zl[4..8]) as usize;
    let count = le(&zl[8..10]) as u16;
    let end = zl.len() - 1;
    let mut out = Vec::with_capacity(usize::from(count).min(end));
    let (mut at, mut prev_size, mut last_start) = (10, 0usize, None);
    while at < end {
        let start = at;
        let take = |from: usize, n: usize| {
            from.checked_add(n).filter(|&e| e <= end).map(|e| &zl[from..e]).ok_or(bad)
        };
        let prevlen = match zl[at] {
            0xfe => {
                let v = le(take(at + 1, 4)?) as usize;
                at += 5;
                v
            }
            0xff => return Err(bad),
            b => {
                at += 1;
                usize::from(b)
            }
        };
        if prevlen != prev_size {
            return Err(bad);
        }
        let enc = take(at, 1)?[0];
        at += 1;
        let e = match enc >> 6 {
            0 => {
                let n = usize::from(enc & 0x3f);
                let s = take(at, n)?;
                at += n;
                Elem::Str(s)
            }
            1 => {
                let n = usize::from(enc & 0x3f) << 8 | usize::from(take(at, 1)?[0]);
                let s = take(at + 1, n)?;
                at += 1 + n;
                Elem::Str(s)
            }
            2 => {
                let b = take(at, 4)?;
                let n = u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize;
                let s = take(at + 4, n)?;
                at += 4 + n;
                Elem::Str(s)
            }
            _ => {
                let (size, v) = match enc {
                    0xc0 => (2, signed(le(take(at, 2)?), 16)),
                    0xd0 => (4, signed(le(take(at, 4)?), 32)),
                    0xe0 => (8, le(take(at, 8)?) as i64),
                    0xf0 => (3, signed(le(take(at, 3)?), 24)),
                    0xfe => (1, signed(le(take(at, 1)?), 8)),
                    0xf1..=0xfd => (0, i64::from(enc & 0x0f) - 1),
                    _ => return Err(bad),
                };
                at += size;
                Elem::Int(v)
            }
        };
        out.push(e);
        prev_size = at - start;
        last_start = Some(start);
    }
    if at != end || last_start.is_some_and(|s| s != tail) || (last_start.is_none() && tail != 10) {
        return Err(bad);
    }
    if count != u16::MAX && usize::from(count) != out.len() {
        return Err(bad);
    }
    Ok(out)
}

/// A zipmap's (field, value).
pub type Pair<'a> = (&'a [u8], &'a [u8]);

/// Decodes a whole zipmap into its (field, value) pairs, checking every length against the
/// bytes there are, the end marker and the count.
pub fn decode_zipmap(zm: &[u8]) -> Result<Vec<Pair<'_>>, BadData> {
    let bad = BadData("zipmap");
    if zm.len() < 2 || zm[zm.len() - 1] != 0xff {
        return Err(bad);
    }
    let end = zm.len() - 1;
    let take = |from: usize, n: usize| {
        from.checked_add(n).filter(|&e| e <= end).map(|e| &zm[from..e]).ok_or(bad)
    };
    // A length: 1 byte below 254, else 254 and a u32LE (255 ends the map; no length).
    let len_at = |at: usize| -> Result<(usize, usize), BadData> {
        match take(at, 1)?[0] {
            0xfe => Ok((le(take(at + 1, 4)?) as usize, 5)),
            0xff => Err(bad),
            b => Ok((usize::from(b), 1)),
        }
    };
    let mut out = Vec::new();
    let mut at = 1;
    while at < end && zm[at] != 0xff {
        let (flen, s) = len_at(at)?;
        let field = take(at + s, flen)?;
        at += s + flen;
        let (vlen, s) = len_at(at)?;
        let free = usize::from(take(at + s, 1)?[0]);
        let value = take(at + s + 1, vlen)?;
        at += s + 1 + vlen;
        take(at, free)?;
        at += free;
        out.push((field, value));
    }
    if out.is_empty() || (zm[0] < 254 && usize::from(zm[0]) != out.len()) {
        return Err(bad);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ziplist of `entries` (prevlen and encoding bytes included), its header and end
    /// marker computed.
    pub(crate) fn ziplist(entries: &[&[u8]]) -> Vec<u8> {
        let body: usize = entries.iter().map(|e| e.len()).sum();
        let total = 10 + body + 1;
        let tail = 10 + body - entries.last().map_or(0, |e| e.len());
        let mut zl = Vec::with_capacity(total);
        zl.extend_from_slice(&(total as u32).to_le_bytes());
        zl.extend_from_slice(&(tail as u32).to_le_bytes());
        zl.extend_from_slice(&(entries.len() as u16).to_le_bytes());
        for e in entries {
            zl.extend_from_slice(e);
        }
        zl.push(0xff);
        zl
    }

    #[test]
    fn every_ziplist_encoding_decodes() {
        // Hand-assembled entries: prevlen, encoding, data.
        let e: Vec<Vec<u8>> = vec![
            vec![0, 0x03, b'a', b'b', b'c'],          // 6-bit string "abc"
            vec![5, 0xf1],                            // immediate 0
            vec![2, 0xfd],                            // immediate 12
            vec![2, 0xfe, 0x80],                      // i8 -128
            vec![3, 0xc0, 0xff, 0x7f],                // i16 32767
            vec![4, 0xf0, 0x00, 0x00, 0x80],          // i24 -8388608
            vec![5, 0xd0, 0xff, 0xff, 0xff, 0x7f],    // i32 2147483647
            vec![6, 0xe0, 0, 0, 0, 0, 0, 0, 0, 0x80], // i64 min
        ];
        let mut long = vec![10, 0x40, 100];
        long.extend_from_slice(&[b'y'; 100]); // 14-bit string
        let mut longer = vec![0xfe, 103, 0, 0, 0, 0x80, 0, 0, 0x40, 0];
        longer.extend_from_slice(&[b'z'; 16384]); // 32-bit string, 5-byte prevlen
        let mut all: Vec<&[u8]> = e.iter().map(Vec::as_slice).collect();
        all.push(&long);
        all.push(&longer);
        let zl = ziplist(&all);
        let got = decode(&zl).unwrap();
        let want_ints = [0, 12, -128, 32767, -8_388_608, 2_147_483_647, i64::MIN];
        assert_eq!(got[0], Elem::Str(b"abc"));
        for (g, w) in got[1..8].iter().zip(want_ints) {
            assert_eq!(*g, Elem::Int(w));
        }
        assert_eq!(got[8], Elem::Str(&[b'y'; 100]));
        assert_eq!(got[9], Elem::Str(&[b'z'; 16384]));
        for cut in 0..zl.len() {
            assert!(decode(&zl[..cut]).is_err());
        }
        // A wrong prevlen, a wrong tail, a wrong count.
        let mut bad = zl.clone();
        bad[10 + 5] = 4;
        assert!(decode(&bad).is_err());
        let mut bad = zl.clone();
        bad[4] ^= 1;
        assert!(decode(&bad).is_err());
        let mut bad = zl;
        bad[8] = 3;
        assert!(decode(&bad).is_err());
        assert_eq!(decode(&ziplist(&[])).unwrap(), vec![]);
    }

    #[test]
    fn a_zipmap_decodes() {
        // {"f": "vv", "g": ""} with one free byte after "vv".
        let zm = [2, 1, b'f', 2, 1, b'v', b'v', 0, 1, b'g', 0, 0, 0xff];
        assert_eq!(decode_zipmap(&zm).unwrap(), vec![(&b"f"[..], &b"vv"[..]), (b"g", b"")]);
        for cut in 0..zm.len() {
            assert!(decode_zipmap(&zm[..cut]).is_err());
        }
        let mut wrong_count = zm;
        wrong_count[0] = 3;
        assert!(decode_zipmap(&wrong_count).is_err());
        let mut unknown_count = zm;
        unknown_count[0] = 254;
        assert!(decode_zipmap(&unknown_count).is_ok());
        assert!(decode_zipmap(&[0, 0xff]).is_err());
    }
}
