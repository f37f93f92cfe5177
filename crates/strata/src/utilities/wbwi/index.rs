//! The index of a [`super::WriteBatchWithIndex`]: per column family, what the batch's updates
//! make of each key, so reads see them without replaying the batch.
//!
//! For a key the batch touches, a [`Chain`]: the base the batch gives it (a put's value, a
//! deletion, or the DB's value when only merges touched it) and the merge operands after that
//! base, oldest first. A put or deletion of the key replaces its chain; a range deletion
//! replaces the chain of every key it covers with a deletion, and is kept in a set of
//! disjoint ranges so that DB keys the batch never named are hidden too. A merge on a key
//! without a chain starts one whose base is a deletion when a range deletion covers the key,
//! else the DB's value. The batch's order is thereby folded in: what a read sees is what the
//! DB would hold after the batch is written.

use std::collections::BTreeMap;
use std::ops::Bound;

use crate::error::{Error, Result};
use crate::merge_operator::MergeOperator;

/// What the batch makes the key's value before its merges.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Base {
    /// The DB's value (only merges touched the key, after no range deletion covering it).
    Db,
    /// A put's value.
    Put(Vec<u8>),
    /// A deletion (point or range).
    Deleted,
}

/// What the batch does to one key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Chain {
    pub base: Base,
    /// Merge operands after the base, oldest first.
    pub merges: Vec<Vec<u8>>,
}

impl Chain {
    /// Whether the chain needs the DB's value to be resolved.
    pub fn needs_db(&self) -> bool {
        self.base == Base::Db
    }

    /// The key's value: the base (`db` when the base is the DB's) with the merges applied
    /// through `op`. `None`: the key has no value.
    pub fn resolve(
        &self,
        key: &[u8],
        db: Option<&[u8]>,
        op: Option<&dyn MergeOperator>,
    ) -> Result<Option<Vec<u8>>> {
        let base = match &self.base {
            Base::Db => db,
            Base::Put(v) => Some(v.as_slice()),
            Base::Deleted => None,
        };
        if self.merges.is_empty() {
            return Ok(base.map(<[u8]>::to_vec));
        }
        let Some(op) = op else {
            return Err(Error::InvalidArgument(format!(
                "key {:?} has merge operands in the batch but no merge operator is configured",
                String::from_utf8_lossy(key)
            )));
        };
        let operands: Vec<&[u8]> = self.merges.iter().map(Vec::as_slice).collect();
        match op.full_merge(key, base, &operands) {
            Some(v) => Ok(Some(v)),
            None => Err(Error::corruption(
                "",
                0,
                format!(
                    "Merge operator failed: {} on key {:?} of the batch",
                    op.name(),
                    String::from_utf8_lossy(key)
                ),
            )),
        }
    }
}

/// Disjoint, non-adjacent ranges `[begin, end)`: the union of a batch's range deletions.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct RangeSet {
    /// begin -> end.
    ranges: BTreeMap<Vec<u8>, Vec<u8>>,
}

impl RangeSet {
    /// Adds `[begin, end)` (nothing when empty), joining the ranges it overlaps or touches.
    pub fn insert(&mut self, begin: &[u8], end: &[u8]) {
        if begin >= end {
            return;
        }
        let (mut lo, mut hi) = (begin.to_vec(), end.to_vec());
        // A range starting at or before `begin` that reaches it.
        if let Some((b, e)) =
            self.ranges.range::<[u8], _>((Bound::Unbounded, Bound::Included(begin))).next_back()
        {
            if e.as_slice() >= begin {
                lo.clone_from(b);
                if *e > hi {
                    hi.clone_from(e);
                }
            }
        }
        // Ranges starting inside `[lo, hi]` are absorbed.
        let inside: Vec<Vec<u8>> = self
            .ranges
            .range::<[u8], _>((Bound::Included(lo.as_slice()), Bound::Included(hi.as_slice())))
            .map(|(b, _)| b.clone())
            .collect();
        for b in inside {
            if let Some(e) = self.ranges.remove(&b) {
                if e > hi {
                    hi = e;
                }
            }
        }
        self.ranges.insert(lo, hi);
    }

    /// Whether some range holds `key`.
    pub fn covers(&self, key: &[u8]) -> bool {
        self.ranges
            .range::<[u8], _>((Bound::Unbounded, Bound::Included(key)))
            .next_back()
            .is_some_and(|(_, e)| key < e.as_slice())
    }
}

/// One column family's part of the index.
#[derive(Clone, Debug, Default)]
pub(crate) struct CfIndex {
    pub keys: BTreeMap<Vec<u8>, Chain>,
    pub deleted: RangeSet,
}

impl CfIndex {
    pub fn put(&mut self, key: &[u8], value: &[u8]) {
        let chain = Chain { base: Base::Put(value.to_vec()), merges: Vec::new() };
        self.keys.insert(key.to_vec(), chain);
    }

    pub fn delete(&mut self, key: &[u8]) {
        self.keys.insert(key.to_vec(), Chain { base: Base::Deleted, merges: Vec::new() });
    }

    pub fn merge(&mut self, key: &[u8], operand: &[u8]) {
        if let Some(chain) = self.keys.get_mut(key) {
            chain.merges.push(operand.to_vec());
            return;
        }
        let base = if self.deleted.covers(key) { Base::Deleted } else { Base::Db };
        self.keys.insert(key.to_vec(), Chain { base, merges: vec![operand.to_vec()] });
    }

    pub fn delete_range(&mut self, begin: &[u8], end: &[u8]) {
        if begin >= end {
            return;
        }
        let range = (Bound::Included(begin), Bound::Excluded(end));
        for (_, chain) in self.keys.range_mut::<[u8], _>(range) {
            *chain = Chain { base: Base::Deleted, merges: Vec::new() };
        }
        self.deleted.insert(begin, end);
    }

    /// What the batch does to `key`: its chain, or a deletion by a range, or nothing.
    pub fn lookup(&self, key: &[u8]) -> Lookup<'_> {
        match self.keys.get(key) {
            Some(c) => Lookup::Chain(c),
            None if self.deleted.covers(key) => Lookup::RangeDeleted,
            None => Lookup::Untouched,
        }
    }
}

/// What the batch does to one key.
pub(crate) enum Lookup<'a> {
    Chain(&'a Chain),
    RangeDeleted,
    Untouched,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_join_when_they_overlap_or_touch_and_cover_half_open() {
        let mut r = RangeSet::default();
        r.insert(b"c", b"e");
        r.insert(b"x", b"x"); // empty
        r.insert(b"e", b"g"); // touches
        r.insert(b"a", b"b");
        r.insert(b"k", b"m");
        r.insert(b"bb", b"l"); // joins c..g and k..m
        let got: Vec<_> = r.ranges.iter().map(|(b, e)| (b.clone(), e.clone())).collect();
        assert_eq!(got, vec![(b"a".to_vec(), b"b".to_vec()), (b"bb".to_vec(), b"m".to_vec())]);
        assert!(r.covers(b"a") && r.covers(b"ab") && !r.covers(b"b") && r.covers(b"bb"));
        assert!(r.covers(b"lzz") && !r.covers(b"m") && !r.covers(b"0"));
    }

    #[test]
    fn a_merge_after_a_range_deletion_starts_from_nothing() {
        let mut ix = CfIndex::default();
        ix.put(b"k1", b"v");
        ix.delete_range(b"k0", b"k5");
        ix.merge(b"k2", b"m");
        ix.merge(b"k9", b"m");
        assert!(matches!(ix.lookup(b"k1"), Lookup::Chain(c) if c.base == Base::Deleted));
        assert!(matches!(ix.lookup(b"k2"), Lookup::Chain(c) if c.base == Base::Deleted));
        assert!(matches!(ix.lookup(b"k9"), Lookup::Chain(c) if c.base == Base::Db));
        assert!(matches!(ix.lookup(b"k3"), Lookup::RangeDeleted));
        assert!(matches!(ix.lookup(b"k7"), Lookup::Untouched));
    }
}
