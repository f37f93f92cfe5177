//! LZF, the compression of strings in Redis's serialized values: redis-server compresses a
//! string longer than 20 bytes when that saves at least four bytes, and so does this server
//! ([`compress`], a greedy matcher of its own: its output is valid LZF, not byte for byte
//! what redis-server would write).
//!
//! ```text
//!  a sequence of runs, each led by a control byte c:
//!   c < 0x20                 literal: the next c + 1 bytes are copied as they are
//!   c >> 5 in 1..=6          back reference of (c >> 5) + 2 bytes
//!   c >> 5 == 7              back reference of 7 + next byte + 2 bytes
//!                            then one byte o: the copy starts ((c & 0x1f) << 8 | o) + 1
//!                            bytes before the end of the output so far (it may overlap
//!                            what it writes)
//! ```
//!
//! Nothing here trusts the input: a run past either end, or a reference before the start of
//! the output, is an error, and the output never grows past the size the caller expects.

/// The most bytes one input byte can stand for: a three-byte reference copies 264.
pub const MAX_EXPANSION: u64 = 88;

/// The longest back reference: 7 + 255 + 2 bytes.
const MAX_REF: usize = 264;
/// The farthest back a reference reaches.
const MAX_OFFSET: usize = 1 << 13;
/// The longest literal run.
const MAX_LITERAL: usize = 32;
/// Hash table size (bits) of the matcher, at most: a table has about two slots per input
/// byte up to this, so a short string (most values) does not pay for a large table.
const HASH_BITS: u32 = 14;

/// Compresses `input` if the result is at most `limit` bytes; `None` otherwise.
pub fn compress(input: &[u8], limit: usize) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(limit);
    let bits = (usize::BITS - input.len().leading_zeros() + 1).clamp(4, HASH_BITS);
    let mut table = vec![usize::MAX; 1 << bits];
    let mut lit_start = 0;
    let mut i = 0;
    let hash = |p: &[u8]| {
        let v = u32::from(p[0]) << 16 | u32::from(p[1]) << 8 | u32::from(p[2]);
        (v.wrapping_mul(0x9e37_79b1) >> (32 - bits)) as usize
    };
    let flush_literals = |out: &mut Vec<u8>, lits: &[u8]| {
        for run in lits.chunks(MAX_LITERAL) {
            out.push((run.len() - 1) as u8);
            out.extend_from_slice(run);
        }
    };
    while i + 2 < input.len() {
        let h = hash(&input[i..]);
        let cand = table[h];
        table[h] = i;
        if cand != usize::MAX && i - cand <= MAX_OFFSET && input[cand..cand + 3] == input[i..i + 3]
        {
            let most = MAX_REF.min(input.len() - i);
            let len = (3..most).find(|&l| input[cand + l] != input[i + l]).unwrap_or(most);
            flush_literals(&mut out, &input[lit_start..i]);
            let off = i - cand - 1;
            let code = len - 2;
            if code < 7 {
                out.push((code << 5 | off >> 8) as u8);
            } else {
                out.push((7 << 5 | off >> 8) as u8);
                out.push((code - 7) as u8);
            }
            out.push((off & 0xff) as u8);
            i += len;
            lit_start = i;
        } else {
            i += 1;
        }
        if out.len() > limit {
            return None;
        }
    }
    flush_literals(&mut out, &input[lit_start..]);
    (out.len() <= limit).then_some(out)
}

/// Decompresses `input`, which must produce exactly `expected` bytes; `None` otherwise.
pub fn decompress(input: &[u8], expected: usize) -> Option<Vec<u8>> {
    let bound = input.len().saturating_mul(MAX_EXPANSION as usize);
    if expected > bound {
        return None;
    }
    // Reserved whole up front (so the copies below never reallocate), and refused rather
    // than aborting when the allocator cannot give it.
    let mut out = Vec::new();
    out.try_reserve_exact(expected).ok()?;
    let mut at = 0;
    while at < input.len() {
        let ctrl = usize::from(input[at]);
        at += 1;
        if ctrl < 0x20 {
            let run = input.get(at..at + ctrl + 1)?;
            if out.len() + run.len() > expected {
                return None;
            }
            out.extend_from_slice(run);
            at += ctrl + 1;
            continue;
        }
        let mut len = ctrl >> 5;
        if len == 7 {
            len += usize::from(*input.get(at)?);
            at += 1;
        }
        len += 2;
        let back = ((ctrl & 0x1f) << 8 | usize::from(*input.get(at)?)) + 1;
        at += 1;
        if back > out.len() || out.len() + len > expected {
            return None;
        }
        let from = out.len() - back;
        // Byte by byte: the source may overlap the bytes this copy writes.
        for i in 0..len {
            let b = out[from + i];
            out.push(b);
        }
    }
    (out.len() == expected).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_and_overlapping_references() {
        // "abc" literally, then (7 + 0) + 2 = 9 bytes from 3 back, then "!" literally.
        let input = [2, b'a', b'b', b'c', 0xe0, 0, 2, 0, b'!'];
        let mut want = b"abc".repeat(4);
        want.push(b'!');
        assert_eq!(decompress(&input, 13).as_deref(), Some(&want[..]));
        // A short reference: (1 + 2) bytes from 1 back.
        assert_eq!(decompress(&[0, b'x', 1 << 5, 0], 4).as_deref(), Some(&b"xxxx"[..]));
    }

    #[test]
    fn compressed_text_decompresses_to_itself() {
        let mut inputs: Vec<Vec<u8>> = vec![
            b"abcdefghij".repeat(50),
            vec![b'q'; 70000],
            (0..5000u32).flat_map(|i| (i % 251).to_le_bytes()).collect(),
            b"element-1element-2element-3element-4element-5".to_vec(),
        ];
        inputs.push((0..20000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect());
        for input in inputs {
            if let Some(c) = compress(&input, input.len()) {
                assert_eq!(decompress(&c, input.len()).as_deref(), Some(&input[..]));
            }
        }
        assert!(compress(&vec![b'q'; 70000], 1000).is_some());
        // Bytes without repeats do not fit in less than they take.
        let random: Vec<u8> =
            (0..100u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 7) as u8).collect();
        assert_eq!(compress(&random, random.len() - 4), None);
    }

    proptest::proptest! {
        #[test]
        fn round_trips(input in proptest::collection::vec(0u8..4, 0..3000)) {
            if let Some(c) = compress(&input, input.len() + input.len() / 32 + 1) {
                proptest::prop_assert_eq!(decompress(&c, input.len()), Some(input));
            }
        }
    }

    #[test]
    fn bad_input_is_refused() {
        // The wrong size, a reference before the start, runs past the end.
        assert_eq!(decompress(&[0, b'x'], 2), None);
        assert_eq!(decompress(&[0, b'x'], 0), None);
        assert_eq!(decompress(&[1 << 5, 0], 3), None);
        assert_eq!(decompress(&[0, b'x', 1 << 5, 5], 4), None);
        assert_eq!(decompress(&[3, b'x'], 4), None);
        assert_eq!(decompress(&[0, b'x', 7 << 5], 12), None);
        assert_eq!(decompress(&[0, b'x', 1 << 5], 4), None);
        assert_eq!(decompress(&[], 0), Some(Vec::new()));
    }
}
