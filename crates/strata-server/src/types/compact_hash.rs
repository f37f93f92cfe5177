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
//! Invariants: fields are distinct, `count` is the number of pairs, and nothing follows the
//! last pair. [`validate`] checks all of it; the readers here trust a validated payload but
//! never panic on a bad one (they stop early).
//!
//! The pairs are in the order their fields were first set, as Redis keeps a small hash (its
//! listpack), so HGETALL, HKEYS, HVALS, HSCAN and DUMP list them as redis-server does: a
//! write to an existing field replaces its value in place, a new field goes last, and a
//! field deleted and set again goes last. Stores written before this order was kept hold
//! their pairs in byte order, a case of it. A version that kept byte order stopped a field
//! search at the first greater field, so a store that may hold pairs out of byte order is
//! marked for it first (`storage::LAYOUT_HASH_ORDER`; [`in_field_order`]).
//!
//! A hash is kept compact while it fits [`Limits`]: at most `entries` pairs, every field and
//! every value at most `value` bytes (Redis's `hash-max-listpack-entries` and
//! `hash-max-listpack-value`). A write that takes it past a limit converts it to one sub-key
//! per field at a fresh version (listed in field order from then on, as Redis's hash table
//! lists its fields in an order of its own); a hash never converts back (RENAME copies it as
//! it is).

use std::collections::HashMap;
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

/// The pairs of a payload, in the hash's order.
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
    iter(payload).find(|(f, _)| *f == field).map(|(_, v)| v)
}

/// The payload of `pairs` (distinct fields), in their order.
pub fn encode<'a, I>(pairs: I) -> Vec<u8>
where
    I: IntoIterator<Item = (&'a [u8], &'a [u8])>,
    I::IntoIter: Clone,
{
    let pairs = pairs.into_iter();
    let bytes: usize = pairs.clone().map(|(f, v)| 8 + f.len() + v.len()).sum();
    let mut out = Vec::with_capacity(4 + bytes);
    out.extend_from_slice(&[0; 4]);
    let mut count = 0u32;
    for (f, v) in pairs {
        push_pair(&mut out, f, v);
        count += 1;
    }
    out[..4].copy_from_slice(&count.to_le_bytes());
    out
}

/// Whether the fields of `payload` are strictly ascending bytewise (the only order a store
/// not marked `storage::LAYOUT_HASH_ORDER` may hold).
pub fn in_field_order(payload: &[u8]) -> bool {
    let mut prev: Option<&[u8]> = None;
    iter(payload).all(|(f, _)| {
        let ascending = prev.is_none_or(|p| p < f);
        prev = Some(f);
        ascending
    })
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

/// Past this many field comparisons, [`apply`] finds fields through a hash table and
/// [`validate`] finds repeats by sorting, instead of comparing each field with every pair
/// (`CONFIG SET` may allow compact hashes of any size).
const LINEAR_COMPARISONS: usize = 4096;

/// The pairs of a hash being edited, in order, a deleted one left as `None` so that the
/// positions of the others hold; found by field through a scan or, for many pairs and
/// edits, a table.
struct Slots<'a> {
    pairs: Vec<Option<(&'a [u8], &'a [u8])>>,
    index: Option<HashMap<&'a [u8], usize>>,
}

impl<'a> Slots<'a> {
    fn find(&self, field: &[u8]) -> Option<usize> {
        match &self.index {
            Some(index) => index.get(field).copied(),
            None => self.pairs.iter().position(|p| p.is_some_and(|(f, _)| f == field)),
        }
    }

    fn apply(&mut self, edit: Edit<'a>) {
        let f = edit.field();
        match (edit, self.find(f)) {
            (Edit::Put(_, v), Some(i)) => self.pairs[i] = Some((f, v)),
            (Edit::Put(_, v), None) => {
                if let Some(index) = &mut self.index {
                    index.insert(f, self.pairs.len());
                }
                self.pairs.push(Some((f, v)));
            }
            (Edit::Del(_), Some(i)) => {
                self.pairs[i] = None;
                if let Some(index) = &mut self.index {
                    index.remove(f);
                }
            }
            (Edit::Del(_), None) => {}
        }
    }

    /// The pairs left, in order.
    fn live(&self) -> impl Iterator<Item = (&'a [u8], &'a [u8])> + Clone + '_ {
        self.pairs.iter().flatten().copied()
    }

    /// The payload of the pairs left, and their count.
    fn encode(&self) -> (Vec<u8>, u64) {
        let out = encode(self.live());
        let n = count(&out);
        (out, n)
    }
}

/// The payload of `payload` after `edits`, applied in order as Redis applies writes to a
/// listpack (the module's order), and its number of pairs, or `None` when the result does
/// not fit `limits` (the caller converts the hash).
pub fn apply(payload: &[u8], edits: &[Edit], limits: &Limits) -> Option<(Vec<u8>, u64)> {
    let slots = edited(payload, edits);
    let (max_entries, max_len) = (limits.entries(), limits.value());
    let mut count = 0usize;
    for (f, v) in slots.live() {
        count += 1;
        if count > max_entries || f.len() > max_len || v.len() > max_len {
            return None;
        }
    }
    Some(slots.encode())
}

/// [`apply`] with no limits: for a hash converted to sub-keys, and for field deltas, whose
/// writer checked the limits.
pub fn apply_unlimited(payload: &[u8], edits: &[Edit]) -> (Vec<u8>, u64) {
    edited(payload, edits).encode()
}

/// The pairs of `payload` after `edits`.
fn edited<'a>(payload: &'a [u8], edits: &[Edit<'a>]) -> Slots<'a> {
    let pairs: Vec<_> = iter(payload).map(Some).collect();
    let most = pairs.len() + edits.len();
    let index = (most.saturating_mul(edits.len()) > LINEAR_COMPARISONS).then(|| {
        let mut index = HashMap::with_capacity(most);
        for (i, p) in pairs.iter().enumerate() {
            if let Some((f, _)) = p {
                index.insert(*f, i);
            }
        }
        index
    });
    let mut slots = Slots { pairs, index };
    for e in edits {
        slots.apply(*e);
    }
    slots
}

/// Checks every invariant of `payload`; returns its number of pairs, or what is wrong (with
/// the byte offset, counted from the payload's start).
pub fn validate(payload: &[u8]) -> Result<u64, String> {
    let Some(count) = stated_count(payload) else {
        return Err(format!("compact hash of {} bytes, expected a count", payload.len()));
    };
    let mut at = 4;
    // Each field with the byte it starts at.
    let mut fields: Vec<(&[u8], usize)> = Vec::with_capacity((count as usize).min(1024));
    for i in 0..count {
        let Some((field, rest)) = take_chunk(&payload[at..]) else {
            return Err(format!("compact hash pair {i} of {count}: field truncated at byte {at}"));
        };
        let vat = payload.len() - rest.len();
        let Some((_, rest)) = take_chunk(rest) else {
            return Err(format!("compact hash pair {i} of {count}: value truncated at byte {vat}"));
        };
        fields.push((field, at));
        at = payload.len() - rest.len();
    }
    if at != payload.len() {
        return Err(format!(
            "compact hash of {count} pairs ends at byte {at}, {} bytes follow",
            payload.len() - at
        ));
    }
    if let Some(at) = repeated(&fields) {
        return Err(format!("compact hash: the field at byte {at} repeats an earlier one"));
    }
    Ok(u64::from(count))
}

/// Where the first field of `fields` (each with its offset) that repeats an earlier one
/// starts, if one does.
fn repeated(fields: &[(&[u8], usize)]) -> Option<usize> {
    if fields.len().saturating_mul(fields.len()) / 2 <= LINEAR_COMPARISONS {
        return fields
            .iter()
            .enumerate()
            .find(|(i, (f, _))| fields[..*i].iter().any(|(g, _)| g == f))
            .map(|(_, (_, at))| *at);
    }
    let mut sorted = fields.to_vec();
    // By field, then offset: of equal fields the later one follows the first.
    sorted.sort_unstable();
    sorted.windows(2).filter(|w| w[0].0 == w[1].0).map(|w| w[1].1).min()
}

#[cfg(test)]
mod tests {
    use super::*;

    type Pair<'a> = (&'a [u8], &'a [u8]);

    #[test]
    fn round_trips_in_the_given_order() {
        let pairs: [Pair; 4] = [(b"b", b"2"), (b"a", b""), (b"", b"empty field"), (b"ccc", b"3")];
        let p = encode(pairs);
        assert_eq!(validate(&p), Ok(4));
        assert_eq!(iter(&p).collect::<Vec<_>>(), pairs);
        assert!(!in_field_order(&p));
        assert_eq!(get(&p, b"b"), Some(&b"2"[..]));
        assert_eq!(get(&p, b""), Some(&b"empty field"[..]));
        assert_eq!(get(&p, b"ccc"), Some(&b"3"[..]));
        assert_eq!(get(&p, b"bb"), None);
        assert_eq!(get(&p, b"d"), None);
        assert_eq!(validate(&empty()), Ok(0));
        assert_eq!(iter(&empty()).count(), 0);
        assert!(in_field_order(&empty()));
        assert!(in_field_order(&encode([(&b"a"[..], &b"2"[..]), (b"b", b"1")])));
        assert!(!in_field_order(&encode([(&b"a"[..], &b""[..]), (b"a", b"")])));
    }

    #[test]
    fn malformed_payloads_are_errors_and_read_without_panics() {
        let p = encode([(&b"a"[..], &b"1"[..]), (b"b", b"2")]);
        for cut in 0..p.len() {
            assert!(validate(&p[..cut]).is_err(), "cut at {cut}");
            let _ = iter(&p[..cut]).count();
            let _ = get(&p[..cut], b"b");
        }
        let mut long = p.clone();
        long.push(0);
        assert!(validate(&long).unwrap_err().contains("1 bytes follow"));
        // A repeated field, in a short payload and in one long enough to be sorted.
        let twice = encode([(&b"b"[..], &b""[..]), (b"a", b""), (b"b", b"")]);
        assert_eq!(
            validate(&twice).unwrap_err(),
            "compact hash: the field at byte 22 repeats an earlier one"
        );
        let names: Vec<Vec<u8>> = (0..500u32).map(|i| i.to_string().into_bytes()).collect();
        let mut many: Vec<Pair> = names.iter().map(|n| (&n[..], &b""[..])).collect();
        assert_eq!(validate(&encode(many.iter().copied())), Ok(500));
        many.insert(300, (b"7", b"x"));
        many.insert(400, (b"7", b"y"));
        let at = 4 + many[..300].iter().map(|(f, v)| 8 + f.len() + v.len()).sum::<usize>();
        let err = validate(&encode(many.iter().copied())).unwrap_err();
        assert_eq!(err, format!("compact hash: the field at byte {at} repeats an earlier one"));
        // A huge length never overflows.
        let mut huge = 1u32.to_le_bytes().to_vec();
        huge.extend_from_slice(&u32::MAX.to_le_bytes());
        assert!(validate(&huge).is_err());
        assert_eq!(iter(&huge).count(), 0);
    }

    /// Redis's listpack order as a model: the pairs in order, a write to an existing field in
    /// place, a new field last.
    fn model_apply<'a>(model: &mut Vec<Pair<'a>>, edit: Edit<'a>) {
        let at = model.iter().position(|(f, _)| *f == edit.field());
        match (edit, at) {
            (Edit::Put(_, v), Some(i)) => model[i].1 = v,
            (Edit::Put(f, v), None) => model.push((f, v)),
            (Edit::Del(_), Some(i)) => {
                model.remove(i);
            }
            (Edit::Del(_), None) => {}
        }
    }

    #[test]
    fn edits_keep_the_insertion_order() {
        let l = Limits::new(4, 5);
        let p = encode([(&b"d"[..], &b"4"[..]), (b"b", b"2")]);
        let edits = [
            Edit::Put(b"c", b"x"),
            Edit::Del(b"b"),
            Edit::Put(b"a", b"1"),
            Edit::Put(b"c", b"3"),
            Edit::Del(b"zz"),
            Edit::Put(b"b", b"22"),
            Edit::Put(b"d", b"44"),
            Edit::Put(b"e", b""),
            Edit::Del(b"c"),
        ];
        let (q, n) = apply(&p, &edits, &l).unwrap();
        let want: [Pair; 4] = [(b"d", b"44"), (b"a", b"1"), (b"b", b"22"), (b"e", b"")];
        assert_eq!((iter(&q).collect::<Vec<_>>(), n), (want.to_vec(), 4));
        assert_eq!(q, encode(want));
        assert_eq!(validate(&q), Ok(4));
        // Past a limit: no payload.
        assert!(apply(&q, &[Edit::Put(b"f", b"")], &l).is_none());
        assert!(apply(&q, &[Edit::Put(b"a", b"123456")], &l).is_none());
        assert!(apply(&q, &[Edit::Put(b"abcdef", b"")], &l).is_none());
        // Removing everything leaves the empty payload.
        let all = [Edit::Del(b"a"), Edit::Del(b"b"), Edit::Del(b"d"), Edit::Del(b"e")];
        assert_eq!(apply(&q, &all, &l), Some((empty(), 0)));
    }

    #[test]
    fn random_edits_match_the_model_with_and_without_the_table() {
        let mut seed = 7u64;
        let mut rnd = |n: u64| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        let big = Limits::new(usize::MAX, usize::MAX);
        // 8 names and at most 3 edits a write compare linearly; 200 names and 40 edits
        // (up to 240 x 40 comparisons) go through the table.
        for (names, most_edits) in [(8u32, 4u64), (200, 41)] {
            let names: Vec<Vec<u8>> = (0..names).map(|i| i.to_string().into_bytes()).collect();
            let pick = |r: u64| &names[(r % names.len() as u64) as usize][..];
            let mut model: Vec<Pair> = Vec::new();
            let mut payload = empty();
            for _ in 0..300 {
                let edits: Vec<Edit> = (0..rnd(most_edits))
                    .map(|_| {
                        let f = pick(rnd(1 << 20));
                        if rnd(3) == 0 {
                            Edit::Del(f)
                        } else {
                            Edit::Put(f, pick(rnd(1 << 20)))
                        }
                    })
                    .collect();
                for e in &edits {
                    model_apply(&mut model, *e);
                }
                let (next, n) = apply(&payload, &edits, &big).unwrap();
                assert_eq!(next, encode(model.iter().copied()));
                assert_eq!(n, model.len() as u64);
                assert_eq!(validate(&next), Ok(n));
                payload = next;
            }
        }
    }

    #[test]
    fn limits_bound_pairs_and_lengths() {
        let l = Limits::new(2, 3);
        let fit = |pairs: &[Pair]| {
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
        let p = encode([(&b"a"[..], &b"xyz"[..])]);
        l.set_entries(2);
        l.set_value(2);
        assert!(apply(&p, &[Edit::Put(b"b", b"")], &l).is_none());
    }
}
