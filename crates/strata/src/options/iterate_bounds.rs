//! Iterator bounds given as one range (the `rocksdb` crate's `IterateBounds`,
//! `ReadOptions::set_iterate_range`): `..`, `a..b`, `a..`, `..b`, or every key with a prefix
//! ([`PrefixRange`]).

use super::ReadOptions;

/// A range of keys that sets both iterator bounds: `(lower, upper)`, the lower inclusive and
/// the upper exclusive, `None` for no bound.
pub trait IterateBounds {
    /// The lower and upper bound.
    fn into_bounds(self) -> (Option<Vec<u8>>, Option<Vec<u8>>);
}

impl IterateBounds for std::ops::RangeFull {
    fn into_bounds(self) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
        (None, None)
    }
}

impl<K: Into<Vec<u8>>> IterateBounds for std::ops::Range<K> {
    fn into_bounds(self) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
        (Some(self.start.into()), Some(self.end.into()))
    }
}

impl<K: Into<Vec<u8>>> IterateBounds for std::ops::RangeFrom<K> {
    fn into_bounds(self) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
        (Some(self.start.into()), None)
    }
}

impl<K: Into<Vec<u8>>> IterateBounds for std::ops::RangeTo<K> {
    fn into_bounds(self) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
        (None, Some(self.end.into()))
    }
}

/// Every key starting with the given bytes. An empty prefix is every key; a prefix of only
/// `0xff` bytes has no upper bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrefixRange<K>(pub K);

impl<K: Into<Vec<u8>>> IterateBounds for PrefixRange<K> {
    fn into_bounds(self) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
        let start: Vec<u8> = self.0.into();
        if start.is_empty() {
            return (None, None);
        }
        let end = prefix_successor(&start);
        (Some(start), end)
    }
}

/// The smallest key greater than every key starting with `prefix`, if one exists.
pub(crate) fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut p = prefix.to_vec();
    while let Some(last) = p.pop() {
        if last < 0xff {
            p.push(last + 1);
            return Some(p);
        }
    }
    None
}

impl ReadOptions {
    /// Sets both iterator bounds from `range`, replacing any set before.
    pub fn set_iterate_range(&mut self, range: impl IterateBounds) {
        let (lower, upper) = range.into_bounds();
        self.iterate_lower_bound = lower;
        self.iterate_upper_bound = upper;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_bounds() {
        let b = |p: &[u8]| PrefixRange(p).into_bounds();
        assert_eq!(b(b""), (None, None));
        assert_eq!(b(b"a"), (Some(b"a".to_vec()), Some(b"b".to_vec())));
        assert_eq!(b(b"a\xff\xff"), (Some(b"a\xff\xff".to_vec()), Some(b"b".to_vec())));
        assert_eq!(b(b"\xff\xff"), (Some(b"\xff\xff".to_vec()), None));
    }

    #[test]
    fn ranges_replace_both_bounds() {
        let mut o = ReadOptions::default();
        o.set_iterate_range(b"c".to_vec()..b"d".to_vec());
        assert_eq!(
            (o.iterate_lower_bound.as_deref(), o.iterate_upper_bound.as_deref()),
            (Some(&b"c"[..]), Some(&b"d"[..]))
        );
        o.set_iterate_range(..);
        assert_eq!((o.iterate_lower_bound.clone(), o.iterate_upper_bound.clone()), (None, None));
        o.set_iterate_range(b"x".to_vec()..);
        assert_eq!(o.iterate_upper_bound, None);
    }
}
