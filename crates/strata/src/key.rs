//! Internal keys and their order.
//!
//! ```text
//! internal key = user_key bytes | trailer: fixed64 little-endian = (seq << 8) | value_type
//! ```
//! on-disk: never change. Order: user key ascending (bytewise), then trailer descending, so
//! the newest version of a user key comes first, and a seek to `(key, seq, FOR_SEEK)` lands on the
//! newest entry visible at `seq`.

use std::cmp::Ordering;

use crate::types::{SeqNo, ValueType};
use crate::util::compare::compare_bytes;

/// Length of the trailer appended to every user key.
pub const TRAILER_LEN: usize = 8;

/// Packs a sequence number and value type into a trailer.
#[inline]
pub fn pack_trailer(seq: SeqNo, t: ValueType) -> u64 {
    debug_assert!(seq <= SeqNo::MAX);
    (seq.0 << 8) | t as u64
}

/// Appends the internal key for `(user_key, seq, t)` to `buf`.
#[inline]
pub fn append_internal_key(buf: &mut Vec<u8>, user_key: &[u8], seq: SeqNo, t: ValueType) {
    buf.extend_from_slice(user_key);
    buf.extend_from_slice(&pack_trailer(seq, t).to_le_bytes());
}

/// Builds an owned internal key.
pub fn make_internal_key(user_key: &[u8], seq: SeqNo, t: ValueType) -> Vec<u8> {
    let mut v = Vec::with_capacity(user_key.len() + TRAILER_LEN);
    append_internal_key(&mut v, user_key, seq, t);
    v
}

/// The user-key part. Callers guarantee `ikey.len() >= TRAILER_LEN` (checked by
/// [`parse_internal_key`] wherever keys come from disk).
#[inline]
pub fn user_key(ikey: &[u8]) -> &[u8] {
    debug_assert!(ikey.len() >= TRAILER_LEN);
    &ikey[..ikey.len() - TRAILER_LEN]
}

/// The trailer as an integer.
#[inline]
pub fn trailer(ikey: &[u8]) -> u64 {
    debug_assert!(ikey.len() >= TRAILER_LEN);
    let n = ikey.len();
    let mut b = [0u8; 8];
    b.copy_from_slice(&ikey[n - TRAILER_LEN..]);
    u64::from_le_bytes(b)
}

/// A decoded internal key borrowing its user key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParsedInternalKey<'a> {
    pub user_key: &'a [u8],
    pub seq: SeqNo,
    pub value_type: ValueType,
}

/// Decodes an internal key; `None` when it is too short or its type tag is unknown.
#[inline]
pub fn parse_internal_key(ikey: &[u8]) -> Option<ParsedInternalKey<'_>> {
    if ikey.len() < TRAILER_LEN {
        return None;
    }
    let t = trailer(ikey);
    let value_type = ValueType::from_u8((t & 0xff) as u8)?;
    Some(ParsedInternalKey { user_key: user_key(ikey), seq: SeqNo(t >> 8), value_type })
}

/// The total order of internal keys.
#[inline]
pub fn compare_internal(a: &[u8], b: &[u8]) -> Ordering {
    match compare_bytes(user_key(a), user_key(b)) {
        Ordering::Equal => trailer(b).cmp(&trailer(a)),
        o => o,
    }
}

/// The key a point lookup seeks to: the newest entry of `user_key` visible at `seq`.
pub fn lookup_key(user_key: &[u8], seq: SeqNo) -> Vec<u8> {
    make_internal_key(user_key, seq, ValueType::FOR_SEEK)
}

/// The internal key standing for a range tombstone's exclusive `end` as a table's largest
/// key: `(end, SeqNo::MAX, RangeDeletion)` sorts before every real entry of `end`, and marks
/// the bound as exclusive (no real entry has `SeqNo::MAX`).
pub fn range_end_bound(end: &[u8]) -> Vec<u8> {
    make_internal_key(end, SeqNo::MAX, ValueType::RangeDeletion)
}

/// True when `ikey` (a table's largest key) is an exclusive bound made by [`range_end_bound`].
#[inline]
pub fn is_exclusive_bound(ikey: &[u8]) -> bool {
    ikey.len() >= TRAILER_LEN && trailer(ikey) == pack_trailer(SeqNo::MAX, ValueType::RangeDeletion)
}

/// True when user key `ukey` lies after a table whose largest key is `largest` (exclusive
/// when it is a range end bound).
#[inline]
pub fn after_largest(ukey: &[u8], largest: &[u8]) -> bool {
    let u = user_key(largest);
    ukey > u || (ukey == u && is_exclusive_bound(largest))
}

/// Replaces `start` (an internal key) by a shorter internal key `k` with `start <= k < limit`,
/// when one exists; used for index-block separators. Keeps `start` unchanged otherwise.
///
/// With `i` the first byte where the user keys differ (`su[i] < lu[i]`), the separator is
/// `su[..=i]` with its last byte raised by one when that stays below `lu[i]`. When it does
/// not (`lu[i] == su[i] + 1`, as between consecutive keys of a sequential load, which would
/// otherwise keep the whole last key in every index entry), it is `su[..=j]` with its last
/// byte raised, for the first `j > i` where `su[j] < 0xff`: it still agrees with `su` before
/// `j` and is above it at `j`, and it agrees with `lu` before `i` and is below it at `i`.
pub fn shorten_separator(start: &mut Vec<u8>, limit: &[u8]) {
    let su = user_key(start);
    let lu = user_key(limit);
    let min_len = su.len().min(lu.len());
    let mut i = 0;
    while i < min_len && su[i] == lu[i] {
        i += 1;
    }
    if i >= min_len {
        return; // one is a prefix of the other: no shorter separator
    }
    let raise = if su[i] < 0xff && su[i] + 1 < lu[i] {
        i
    } else {
        match su[i + 1..].iter().position(|&b| b < 0xff) {
            Some(d) => i + 1 + d,
            None => return,
        }
    };
    if raise + 1 >= su.len() {
        return; // not shorter than `start`'s own user key
    }
    let mut sep = su[..=raise].to_vec();
    sep[raise] += 1;
    debug_assert!(sep.as_slice() > su && sep.as_slice() < lu);
    // The earliest possible trailer for the new user key keeps `sep` > every version of su.
    start.clear();
    append_internal_key(start, &sep, SeqNo::MAX, ValueType::FOR_SEEK);
}

/// Replaces `key` (an internal key) by a short internal key `>= key`; used for the last index
/// entry of a table.
pub fn shorten_successor(key: &mut Vec<u8>) {
    let u = user_key(key);
    if let Some(i) = u.iter().position(|&b| b != 0xff) {
        let mut succ = u[..=i].to_vec();
        succ[i] += 1;
        key.clear();
        append_internal_key(key, &succ, SeqNo::MAX, ValueType::FOR_SEEK);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_is_user_key_then_newest_first() {
        let a1 = make_internal_key(b"a", SeqNo(1), ValueType::Value);
        let a2 = make_internal_key(b"a", SeqNo(2), ValueType::Value);
        let b1 = make_internal_key(b"b", SeqNo(1), ValueType::Value);
        assert_eq!(compare_internal(&a2, &a1), Ordering::Less);
        assert_eq!(compare_internal(&a1, &b1), Ordering::Less);
        assert_eq!(compare_internal(&a1, &a1), Ordering::Equal);
        // Lookup key at seq 1 sorts before the entry at seq 1 and after the one at seq 2.
        let lk = lookup_key(b"a", SeqNo(1));
        assert_eq!(compare_internal(&lk, &a1), Ordering::Less);
        assert_eq!(compare_internal(&a2, &lk), Ordering::Less);
    }

    #[test]
    fn parse_roundtrip_and_rejects_bad() {
        let k = make_internal_key(b"hello", SeqNo(77), ValueType::Merge);
        let p = parse_internal_key(&k).unwrap();
        assert_eq!(p.user_key, b"hello");
        assert_eq!(p.seq, SeqNo(77));
        assert_eq!(p.value_type, ValueType::Merge);
        assert!(parse_internal_key(b"short").is_none());
        let mut bad = k.clone();
        let n = bad.len();
        bad[n - 8] = 200;
        assert!(parse_internal_key(&bad).is_none());
        // Empty user keys are allowed.
        let e = make_internal_key(b"", SeqNo(1), ValueType::Value);
        assert_eq!(parse_internal_key(&e).unwrap().user_key, b"");
    }

    /// Pairs whose first differing bytes are adjacent (`lu[i] == su[i] + 1`).
    const ADJACENT: &[(&[u8], &[u8])] = &[
        (b"\x00\x00\x4b000000", b"\x00\x00\x4c000000"),
        (b"ab\xff\xffzz", b"ac"),
        (b"ab\xff\xffz", b"ac"),
        (b"ab\xff\xff", b"ac"),
        (b"ab\xff", b"ac\x00"),
        (b"abq", b"ac"),
    ];

    #[test]
    fn adjacent_first_difference_still_shortens() {
        let expect: &[&[u8]] =
            &[b"\x00\x00\x4b1", b"ab\xff\xff{", b"ab\xff\xffz", b"ab\xff\xff", b"ab\xff", b"abq"];
        for ((s, l), want) in ADJACENT.iter().zip(expect) {
            let mut start = make_internal_key(s, SeqNo(5), ValueType::Value);
            let orig = start.clone();
            shorten_separator(&mut start, &make_internal_key(l, SeqNo(9), ValueType::Value));
            if start == orig {
                assert_eq!(s, want, "{s:?} {l:?} was left as it was");
            } else {
                assert_eq!(user_key(&start), *want, "{s:?} {l:?}");
                assert_eq!(trailer(&start), pack_trailer(SeqNo::MAX, ValueType::FOR_SEEK));
            }
        }
    }

    proptest::proptest! {
        // Bytes from a small alphabet with 0xff, so prefixes, adjacent bytes and runs of 0xff
        // are common.
        #[test]
        fn separator_is_between_and_no_longer(
            a in proptest::collection::vec(proptest::sample::select(vec![0u8, 1, 2, 0xfe, 0xff]), 0..10),
            b in proptest::collection::vec(proptest::sample::select(vec![0u8, 1, 2, 0xfe, 0xff]), 0..10),
            sa in 0u64..100,
            sb in 0u64..100,
        ) {
            let start = make_internal_key(&a, SeqNo(sa), ValueType::Value);
            let limit = make_internal_key(&b, SeqNo(sb), ValueType::Value);
            proptest::prop_assume!(compare_internal(&start, &limit) == Ordering::Less);
            let mut sep = start.clone();
            shorten_separator(&mut sep, &limit);
            proptest::prop_assert_ne!(compare_internal(&sep, &start), Ordering::Less);
            proptest::prop_assert_eq!(compare_internal(&sep, &limit), Ordering::Less);
            proptest::prop_assert!(sep.len() <= start.len());
        }
    }

    #[test]
    fn separators_stay_between() {
        let cases: &[(&[u8], &[u8])] = &[
            (b"abc", b"abz"),
            (b"abc", b"abd"),
            (b"ab", b"abc"),
            (b"a\xff\xff", b"b"),
            (b"", b"a"),
            (b"foo", b"foo"),
        ];
        for (s, l) in cases.iter().chain(ADJACENT) {
            let mut start = make_internal_key(s, SeqNo(5), ValueType::Value);
            let orig = start.clone();
            let limit = make_internal_key(l, SeqNo(9), ValueType::Value);
            if compare_internal(&orig, &limit) != Ordering::Less {
                continue;
            }
            shorten_separator(&mut start, &limit);
            assert_ne!(compare_internal(&start, &orig), Ordering::Less, "{s:?} {l:?}");
            assert_eq!(compare_internal(&start, &limit), Ordering::Less, "{s:?} {l:?}");
        }
        let mut k = make_internal_key(b"ab\xff", SeqNo(3), ValueType::Value);
        let orig = k.clone();
        shorten_successor(&mut k);
        assert_eq!(user_key(&k), b"b");
        assert_ne!(compare_internal(&k, &orig), Ordering::Less);
        let mut all_ff = make_internal_key(b"\xff\xff", SeqNo(3), ValueType::Value);
        let orig = all_ff.clone();
        shorten_successor(&mut all_ff);
        assert_eq!(all_ff, orig);
    }
}
