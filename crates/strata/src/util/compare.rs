//! Bytewise comparison of keys, the engine's one key order.
//!
//! `<[u8]>::cmp` calls the C library's `memcmp` through the dynamic linker's table, whose
//! vector code pays its set-up on every call: for the short keys of a typical LSM (user keys
//! of 8 to 32 bytes) that set-up is most of the cost, and a point read compares keys some
//! twenty times (binary searches of the index and data blocks, then the scan of a restart
//! interval). Keys up to [`INLINE_MAX`] bytes are compared here, eight bytes at a time as
//! big-endian words (a word's integer order is the order of its bytes); longer keys go to
//! `memcmp`, which is faster once its set-up is amortized.
//!
//! Contract: `compare_bytes(a, b) == a.cmp(b)` for all `a` and `b` (checked by the property
//! test below).

use std::cmp::Ordering;

/// The shorter key length above which [`compare_bytes`] hands over to `memcmp`.
pub const INLINE_MAX: usize = 32;

/// Lexicographic order of byte strings, the same as `a.cmp(b)`.
#[inline]
pub fn compare_bytes(a: &[u8], b: &[u8]) -> Ordering {
    let n = a.len().min(b.len());
    if n > INLINE_MAX {
        return a.cmp(b);
    }
    let (wa, ta) = a[..n].as_chunks::<8>();
    let (wb, tb) = b[..n].as_chunks::<8>();
    for (x, y) in wa.iter().zip(wb) {
        let (x, y) = (u64::from_be_bytes(*x), u64::from_be_bytes(*y));
        if x != y {
            return x.cmp(&y);
        }
    }
    // The tails have the same length, under eight bytes.
    for (x, y) in ta.iter().zip(tb) {
        if x != y {
            return x.cmp(y);
        }
    }
    a.len().cmp(&b.len())
}

/// Byte equality, the same as `a == b`: [`compare_bytes`]'s inline words for short keys
/// instead of a `bcmp` call (the per-entry same-user-key tests of flushes and compactions).
#[inline]
pub fn equal_bytes(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && compare_bytes(a, b) == Ordering::Equal
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn edges() {
        let cases: &[(&[u8], &[u8])] = &[
            (b"", b""),
            (b"", b"a"),
            (b"a", b""),
            (b"abcdefgh", b"abcdefgh"),
            (b"abcdefgh", b"abcdefgi"),
            (b"abcdefgh", b"abcdefghi"),
            (b"abcdefghi", b"abcdefgh\x00"),
            (&[0xff; 8], &[0x00; 9]),
            (&[0x80, 0, 0, 0, 0, 0, 0, 0, 1], &[0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]),
            (&[7; 32], &[7; 33]),
            (&[7; 33], &[7; 32]),
            (&[7; 40], &[8; 40]),
        ];
        for (a, b) in cases {
            assert_eq!(compare_bytes(a, b), a.cmp(b), "{a:?} vs {b:?}");
            assert_eq!(compare_bytes(b, a), b.cmp(a), "{b:?} vs {a:?}");
        }
    }

    proptest! {
        // Keys from a small alphabet share long prefixes, so words and tails both decide.
        #[test]
        fn same_order_as_slices(
            prefix in proptest::collection::vec(0u8..3, 0..40),
            a in proptest::collection::vec(prop_oneof![Just(0u8), Just(1u8), Just(255u8)], 0..12),
            b in proptest::collection::vec(prop_oneof![Just(0u8), Just(1u8), Just(255u8)], 0..12),
        ) {
            let a = [prefix.as_slice(), &a].concat();
            let b = [prefix.as_slice(), &b].concat();
            prop_assert_eq!(compare_bytes(&a, &b), a.cmp(&b));
            prop_assert_eq!(equal_bytes(&a, &b), a == b);
            prop_assert_eq!(compare_bytes(&a, &a), Ordering::Equal);
        }
    }
}
