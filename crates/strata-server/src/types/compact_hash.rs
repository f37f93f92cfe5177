//! The compact encoding of a small hash: every (field, value) pair inside the hash's metadata
//! entry, so that reading the whole hash (HGETALL) or one field (HGET) is one point lookup
//! instead of a sub-key scan. The payload follows the metadata header (see
//! [`super::metadata`], format 1):
//!
//! ```text
//!  +-------------+------------------------------------------------------------+
//!  | count u32LE | pair 0 | pair 1 | ... | pair count-1                         |
//!  +-------------+------------------------------------------------------------+
//!  pair:  field_len u32LE | field | value_len u32LE | value
//! ```
//!
//! Invariants: fields are strictly ascending (bytewise, the order of sub-keys, so both
//! encodings list a hash in the same order), `count` is the number of pairs, and nothing
//! follows the last pair. [`validate`] checks all of it; the readers here trust a validated
//! payload but never panic on a bad one (they stop early).
//!
//! A hash is kept compact while it fits [`Limits`]: at most `entries` pairs, every field and
//! every value at most `value` bytes (Redis's `hash-max-listpack-entries` and
//! `hash-max-listpack-value`). A write that takes it past a limit converts it to one sub-key
//! per field at a fresh version; a hash never converts back (RENAME copies it as it is).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Default of `hash-max-listpack-entries`.
pub const DEFAULT_MAX_ENTRIES: usize = 128;
/// Default of `hash-max-listpack-value` (Redis uses 64; 128 keeps records of 100-byte
/// values, YCSB's, compact).
pub const DEFAULT_MAX_VALUE: usize = 128;

/// The limits a compact hash stays within (settable at run time: CONFIG SET).
#[derive(Debug)]
pub struct Limits {
    entries: AtomicUsize,
    value: AtomicUsize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits::new(DEFAULT_MAX_ENTRIES, DEFAULT_MAX_VALUE)
    }
}

impl Limits {
    /// Limits of `entries` pairs and `value` bytes per field or value (`entries` 0: every
    /// hash uses sub-keys).
    pub fn new(entries: usize, value: usize) -> Limits {
        Limits { entries: AtomicUsize::new(entries), value: AtomicUsize::new(value) }
    }

    /// The largest number of pairs.
    pub fn entries(&self) -> usize {
        self.entries.load(Ordering::Relaxed)
    }

    /// The largest field or value, in bytes.
    pub fn value(&self) -> usize {
        self.value.load(Ordering::Relaxed)
    }

    /// Sets the largest number of pairs.
    pub fn set_entries(&self, n: usize) {
        self.entries.store(n, Ordering::Relaxed);
    }

    /// Sets the largest field or value.
    pub fn set_value(&self, n: usize) {
        self.value.store(n, Ordering::Relaxed);
    }
}

/// The payload of an empty hash.
pub fn empty() -> Vec<u8> {
    0u32.to_le_bytes().to_vec()
}

/// The pairs of a payload, in field order.
pub struct Pairs<'a> {
    rest: &'a [u8],
    left: u32,
}

impl<'a> Iterator for Pairs<'a> {
    type Item = (&'a [u8], &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        let (field, rest) = take_chunk(self.rest)?;
        let (value, rest) = take_chunk(rest)?;
        self.rest = rest;
        self.left -= 1;
        Some((field, value))
    }
}

/// A length-prefixed chunk (`len u32LE | bytes`) at the head of `b`, and what follows it.
pub(super) fn take_chunk(b: &[u8]) -> Option<(&[u8], &[u8])> {
    let len = u32::from_le_bytes(b.get(..4)?.try_into().ok()?) as usize;
    let end = 4usize.checked_add(len)?;
    Some((b.get(4..end)?, b.get(end..)?))
}

/// The pair count at the head of `payload` (None if it is too short to state one).
fn stated_count(payload: &[u8]) -> Option<u32> {
    Some(u32::from_le_bytes(payload.get(..4)?.try_into().ok()?))
}

/// The pairs of `payload` (a validated one; a malformed one ends early).
pub fn iter(payload: &[u8]) -> Pairs<'_> {
    match stated_count(payload) {
        Some(left) => Pairs { rest: &payload[4..], left },
        None => Pairs { rest: &[], left: 0 },
    }
}

/// The pair count a payload states (0 if it is too short to state one).
pub fn count(payload: &[u8]) -> u64 {
    stated_count(payload).map_or(0, u64::from)
}

/// Appends one pair's encoding (`len | field | len | value`) to `out`.
pub(super) fn push_pair(out: &mut Vec<u8>, f: &[u8], v: &[u8]) {
    push_chunk(out, f);
    push_chunk(out, v);
}

/// Appends `b` as a length-prefixed chunk (`len u32LE | bytes`) to `out`.
pub(super) fn push_chunk(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u32).to_le_bytes());
    out.extend_from_slice(b);
}

/// The value of `field` in `payload`.
pub fn get<'a>(payload: &'a [u8], field: &[u8]) -> Option<&'a [u8]> {
    for (f, v) in iter(payload) {
        match f.cmp(field) {
            std::cmp::Ordering::Less => {}
            std::cmp::Ordering::Equal => return Some(v),
            std::cmp::Ordering::Greater => return None,
        }
    }
    None
}

/// The pairs of `payload` as a map borrowing from it (to edit and [`encode`] again).
pub fn to_map(payload: &[u8]) -> BTreeMap<&[u8], &[u8]> {
    iter(payload).collect()
}

/// The payload of `pairs`.
pub fn encode(pairs: &BTreeMap<&[u8], &[u8]>) -> Vec<u8> {
    let bytes: usize = pairs.iter().map(|(f, v)| 8 + f.len() + v.len()).sum();
    let mut out = Vec::with_capacity(4 + bytes);
    out.extend_from_slice(&(pairs.len() as u32).to_le_bytes());
    for (f, v) in pairs {
        push_pair(&mut out, f, v);
    }
    out
}

/// A change to one field.
#[derive(Debug, Clone, Copy)]
pub enum Edit<'a> {
    /// Sets the field to the value.
    Put(&'a [u8], &'a [u8]),
    /// Removes the field.
    Del(&'a [u8]),
}

impl<'a> Edit<'a> {
    fn field(&self) -> &'a [u8] {
        match *self {
            Edit::Put(f, _) | Edit::Del(f) => f,
        }
    }
}

/// The payload of `payload` after `edits` (in order: a later edit of a field wins) and its
/// number of pairs, or `None` when the result does not fit `limits` (the caller converts the
/// hash). One merge of the sorted edits into the payload; no map is built.
pub fn apply(payload: &[u8], edits: &[Edit], limits: &Limits) -> Option<(Vec<u8>, u64)> {
    let mut sorted: Vec<Edit> = edits.to_vec();
    // Stable: of the edits of one field, the last stays last; only it is applied.
    sorted.sort_by(|a, b| a.field().cmp(b.field()));
    let (max_entries, max_len) = (limits.entries(), limits.value());
    let extra: usize = sorted
        .iter()
        .map(|e| match e {
            Edit::Put(f, v) => 8 + f.len() + v.len(),
            Edit::Del(_) => 0,
        })
        .sum();
    let mut out = Vec::with_capacity(payload.len() + extra);
    out.extend_from_slice(&[0; 4]);
    let mut count = 0usize;
    let mut push = |out: &mut Vec<u8>, f: &[u8], v: &[u8]| {
        count += 1;
        push_pair(out, f, v);
        count <= max_entries && f.len() <= max_len && v.len() <= max_len
    };
    let mut old = iter(payload).peekable();
    let mut i = 0;
    while i < sorted.len() {
        let f = sorted[i].field();
        if sorted.get(i + 1).is_some_and(|n| n.field() == f) {
            i += 1;
            continue;
        }
        while let Some((of, ov)) = old.next_if(|(of, _)| *of < f) {
            if !push(&mut out, of, ov) {
                return None;
            }
        }
        old.next_if(|(of, _)| *of == f);
        if let Edit::Put(_, v) = sorted[i] {
            if !push(&mut out, f, v) {
                return None;
            }
        }
        i += 1;
    }
    for (of, ov) in old {
        if !push(&mut out, of, ov) {
            return None;
        }
    }
    out[..4].copy_from_slice(&(count as u32).to_le_bytes());
    Some((out, count as u64))
}

/// Checks every invariant of `payload`; returns its number of pairs, or what is wrong (with
/// the byte offset, counted from the payload's start).
pub fn validate(payload: &[u8]) -> Result<u64, String> {
    let Some(count) = stated_count(payload) else {
        return Err(format!("compact hash of {} bytes, expected a count", payload.len()));
    };
    let mut at = 4;
    let mut prev: Option<&[u8]> = None;
    for i in 0..count {
        let Some((field, rest)) = take_chunk(&payload[at..]) else {
            return Err(format!("compact hash pair {i} of {count}: field truncated at byte {at}"));
        };
        let vat = payload.len() - rest.len();
        let Some((_, rest)) = take_chunk(rest) else {
            return Err(format!("compact hash pair {i} of {count}: value truncated at byte {vat}"));
        };
        if prev.is_some_and(|p| p >= field) {
            return Err(format!("compact hash pair {i}: field at byte {at} out of order"));
        }
        prev = Some(field);
        at = payload.len() - rest.len();
    }
    if at != payload.len() {
        return Err(format!(
            "compact hash of {count} pairs ends at byte {at}, {} bytes follow",
            payload.len() - at
        ));
    }
    Ok(u64::from(count))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map<'a>(v: &[(&'a [u8], &'a [u8])]) -> BTreeMap<&'a [u8], &'a [u8]> {
        v.iter().copied().collect()
    }

    #[test]
    fn round_trips_in_field_order() {
        let m = map(&[(b"b", b"2"), (b"a", b""), (b"", b"empty field"), (b"ccc", b"3")]);
        let p = encode(&m);
        assert_eq!(validate(&p), Ok(4));
        let got: Vec<_> = iter(&p).collect();
        assert_eq!(got, m.iter().map(|(f, v)| (*f, *v)).collect::<Vec<_>>());
        assert_eq!(to_map(&p), m);
        assert_eq!(get(&p, b"b"), Some(&b"2"[..]));
        assert_eq!(get(&p, b""), Some(&b"empty field"[..]));
        assert_eq!(get(&p, b"bb"), None);
        assert_eq!(get(&p, b"d"), None);
        assert_eq!(validate(&empty()), Ok(0));
        assert_eq!(iter(&empty()).count(), 0);
    }

    #[test]
    fn malformed_payloads_are_errors_and_read_without_panics() {
        let p = encode(&map(&[(b"a", b"1"), (b"b", b"2")]));
        for cut in 0..p.len() {
            assert!(validate(&p[..cut]).is_err(), "cut at {cut}");
            let _ = iter(&p[..cut]).count();
            let _ = get(&p[..cut], b"b");
        }
        let mut long = p.clone();
        long.push(0);
        assert!(validate(&long).unwrap_err().contains("1 bytes follow"));
        // Fields out of order or repeated.
        let mut swapped = 2u32.to_le_bytes().to_vec();
        for f in [b"b", b"a"] {
            swapped.extend_from_slice(&1u32.to_le_bytes());
            swapped.extend_from_slice(f);
            swapped.extend_from_slice(&0u32.to_le_bytes());
        }
        assert!(validate(&swapped).unwrap_err().contains("out of order"));
        // A huge length never overflows.
        let mut huge = 1u32.to_le_bytes().to_vec();
        huge.extend_from_slice(&u32::MAX.to_le_bytes());
        assert!(validate(&huge).is_err());
        assert_eq!(iter(&huge).count(), 0);
    }

    #[test]
    fn edits_merge_like_a_map() {
        let l = Limits::new(4, 5);
        let p = encode(&map(&[(b"b", b"2"), (b"d", b"4")]));
        let edits = [
            Edit::Put(b"c", b"x"),
            Edit::Del(b"b"),
            Edit::Put(b"a", b"1"),
            Edit::Put(b"c", b"3"),
            Edit::Del(b"zz"),
            Edit::Put(b"b", b"22"),
            Edit::Del(b"d"),
            Edit::Put(b"e", b""),
        ];
        let (q, n) = apply(&p, &edits, &l).unwrap();
        let want = map(&[(b"a", b"1"), (b"b", b"22"), (b"c", b"3"), (b"e", b"")]);
        assert_eq!((to_map(&q), n), (want.clone(), 4));
        assert_eq!(q, encode(&want));
        assert_eq!(validate(&q), Ok(4));
        // Past a limit: no payload.
        assert!(apply(&q, &[Edit::Put(b"f", b"")], &l).is_none());
        assert!(apply(&q, &[Edit::Put(b"a", b"123456")], &l).is_none());
        assert!(apply(&q, &[Edit::Put(b"abcdef", b"")], &l).is_none());
        // Removing everything leaves the empty payload.
        let all = [Edit::Del(b"a"), Edit::Del(b"b"), Edit::Del(b"c"), Edit::Del(b"e")];
        assert_eq!(apply(&q, &all, &l), Some((empty(), 0)));
        // Against a map, random edits.
        let mut seed = 7u64;
        let mut rnd = |n: u64| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        let names: Vec<Vec<u8>> = (0..8).map(|i| vec![b'a' + i]).collect();
        let big = Limits::new(100, 100);
        let mut model: BTreeMap<&[u8], &[u8]> = BTreeMap::new();
        let mut payload = empty();
        for _ in 0..300 {
            let edits: Vec<Edit> = (0..rnd(4))
                .map(|_| {
                    let f = &names[rnd(8) as usize][..];
                    if rnd(3) == 0 {
                        Edit::Del(f)
                    } else {
                        Edit::Put(f, &names[rnd(8) as usize][..])
                    }
                })
                .collect();
            for e in &edits {
                match *e {
                    Edit::Put(f, v) => model.insert(f, v),
                    Edit::Del(f) => model.remove(f),
                };
            }
            let (next, n) = apply(&payload, &edits, &big).unwrap();
            assert_eq!(next, encode(&model));
            assert_eq!(n, model.len() as u64);
            payload = next;
        }
    }

    #[test]
    fn limits_bound_pairs_and_lengths() {
        let l = Limits::new(2, 3);
        let fit = |pairs: &[(&[u8], &[u8])]| {
            let edits: Vec<Edit> = pairs.iter().map(|&(f, v)| Edit::Put(f, v)).collect();
            apply(&empty(), &edits, &l).is_some()
        };
        assert!(fit(&[(b"abc", b"xyz"), (b"b", b"")]));
        assert!(!fit(&[(b"a", b""), (b"b", b""), (b"c", b"")]));
        assert!(!fit(&[(b"abcd", b"")]));
        assert!(!fit(&[(b"a", b"wxyz")]));
        l.set_entries(0);
        assert!(!fit(&[(b"a", b"")]));
        assert!(fit(&[]));
        // Lowered limits: an existing pair past them counts too.
        let p = encode(&map(&[(b"a", b"xyz")]));
        l.set_entries(2);
        l.set_value(2);
        assert!(apply(&p, &[Edit::Put(b"b", b"")], &l).is_none());
    }
}
