//! The index of a [`super::WriteBatchWithIndex`]: per column family, what the batch's updates
//! make of each key, so reads see them without replaying the batch.
//!
//! For a key the batch touches, a [`Chain`]: the base the batch gives it (a put's value, a
//! wide-column entity, a deletion, or the DB's value when only merges touched it) and the
//! merge operands after that base, oldest first. A put or deletion of the key replaces its chain; a range deletion
//! replaces the chain of every key it covers with a deletion, and is kept in a set of
//! disjoint ranges so that DB keys the batch never named are hidden too. A merge on a key
//! without a chain starts one whose base is a deletion when a range deletion covers the key,
//! else the DB's value. The batch's order is thereby folded in: what a read sees is what the
//! DB would hold after the batch is written.

use std::collections::BTreeMap;
use std::ops::Bound;

use crate::comparator::KeyOrder;
use crate::error::{Error, Result};
use crate::merge_operator::MergeOperator;
use crate::wide_columns::{self, WideColumns};

/// What the batch makes the key's value before its merges.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Base {
    /// The DB's value (only merges touched the key, after no range deletion covering it).
    Db,
    /// A put's value.
    Put(Vec<u8>),
    /// A wide-column entity's encoding (`WriteBatch::put_entity`): plain reads see its default
    /// column, entity reads its columns.
    Entity(Vec<u8>),
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
            Base::Entity(e) => Some(wide_columns::default_value(e)?),
            Base::Deleted => None,
        };
        if self.merges.is_empty() {
            return Ok(base.map(<[u8]>::to_vec));
        }
        self.merged(key, base, op).map(Some)
    }

    /// The key's columns, as [`Chain::resolve`] its value (`db`: the DB's columns when the
    /// base is the DB's): a plain value is one default column; merges apply to the default
    /// column (an absent one is an empty base) and keep the others, as the DB's reads do.
    pub fn resolve_entity(
        &self,
        key: &[u8],
        db: Option<WideColumns>,
        op: Option<&dyn MergeOperator>,
    ) -> Result<Option<WideColumns>> {
        let base = match &self.base {
            Base::Db => db,
            Base::Put(v) => Some(WideColumns::from_plain_value(v.clone())),
            Base::Entity(e) => Some(WideColumns::decode(e)?),
            Base::Deleted => None,
        };
        if self.merges.is_empty() {
            return Ok(base);
        }
        let default = base.as_ref().map(|c| c.default_value().unwrap_or_default());
        let merged = self.merged(key, default, op)?;
        Ok(Some(match base {
            Some(columns) => columns.with_default_value(merged),
            None => WideColumns::from_plain_value(merged),
        }))
    }

    /// The merges applied to `base` through `op`.
    fn merged(
        &self,
        key: &[u8],
        base: Option<&[u8]>,
        op: Option<&dyn MergeOperator>,
    ) -> Result<Vec<u8>> {
        let Some(op) = op else {
            return Err(Error::InvalidArgument(format!(
                "key {:?} has merge operands in the batch but no merge operator is configured",
                String::from_utf8_lossy(key)
            )));
        };
        let operands: Vec<&[u8]> = self.merges.iter().map(Vec::as_slice).collect();
        match op.full_merge(key, base, &operands) {
            Some(v) => Ok(v),
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

/// A key of the index, ordered by its family's order. Two keys are equal when their bytes
/// are (the order's contract: `Equal` only for the same bytes).
#[derive(Clone, Debug)]
pub(crate) struct OrdKey {
    pub bytes: Vec<u8>,
    order: KeyOrder,
}

impl PartialEq for OrdKey {
    fn eq(&self, other: &OrdKey) -> bool {
        self.bytes == other.bytes
    }
}

impl Eq for OrdKey {}

impl PartialOrd for OrdKey {
    fn partial_cmp(&self, other: &OrdKey) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for OrdKey {
    fn cmp(&self, other: &OrdKey) -> std::cmp::Ordering {
        self.order.compare(&self.bytes, &other.bytes)
    }
}

/// Disjoint, non-adjacent ranges `[begin, end)`: the union of a batch's range deletions.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct RangeSet {
    /// begin -> end.
    ranges: BTreeMap<OrdKey, Vec<u8>>,
}

impl RangeSet {
    /// Adds `[begin, end)` (nothing when empty), joining the ranges it overlaps or touches.
    pub fn insert(&mut self, begin: &[u8], end: &[u8], order: &KeyOrder) {
        if !order.lt(begin, end) {
            return;
        }
        let key = |k: &[u8]| OrdKey { bytes: k.to_vec(), order: order.clone() };
        let (mut lo, mut hi) = (begin.to_vec(), end.to_vec());
        // A range starting at or before `begin` that reaches it.
        if let Some((b, e)) =
            self.ranges.range((Bound::Unbounded, Bound::Included(key(begin)))).next_back()
        {
            if order.le(begin, e) {
                lo.clone_from(&b.bytes);
                if order.lt(&hi, e) {
                    hi.clone_from(e);
                }
            }
        }
        // Ranges starting inside `[lo, hi]` are absorbed.
        let inside: Vec<OrdKey> = self
            .ranges
            .range((Bound::Included(key(&lo)), Bound::Included(key(&hi))))
            .map(|(b, _)| b.clone())
            .collect();
        for b in inside {
            if let Some(e) = self.ranges.remove(&b) {
                if order.lt(&hi, &e) {
                    hi = e;
                }
            }
        }
        self.ranges.insert(key(&lo), hi);
    }

    /// Whether some range holds `key`.
    pub fn covers(&self, key: &[u8], order: &KeyOrder) -> bool {
        let k = OrdKey { bytes: key.to_vec(), order: order.clone() };
        self.ranges
            .range((Bound::Unbounded, Bound::Included(k)))
            .next_back()
            .is_some_and(|(_, e)| order.lt(key, e))
    }
}

/// One column family's part of the index, its keys in the family's order.
#[derive(Clone, Debug, Default)]
pub(crate) struct CfIndex {
    pub keys: BTreeMap<OrdKey, Chain>,
    deleted: RangeSet,
    order: KeyOrder,
}

impl CfIndex {
    /// An empty index of keys in `order`.
    pub fn new(order: KeyOrder) -> CfIndex {
        CfIndex { keys: BTreeMap::new(), deleted: RangeSet::default(), order }
    }

    /// The order of the keys.
    pub fn order(&self) -> &KeyOrder {
        &self.order
    }

    /// `k` as a key of this index.
    pub fn key(&self, k: &[u8]) -> OrdKey {
        OrdKey { bytes: k.to_vec(), order: self.order.clone() }
    }

    /// Whether a range deletion of the batch covers `key`.
    pub fn range_deleted(&self, key: &[u8]) -> bool {
        self.deleted.covers(key, &self.order)
    }

    pub fn put(&mut self, key: &[u8], value: &[u8]) {
        let chain = Chain { base: Base::Put(value.to_vec()), merges: Vec::new() };
        self.keys.insert(self.key(key), chain);
    }

    /// Puts the entity of encoding `entity` (validated) to `key`.
    pub fn put_entity(&mut self, key: &[u8], entity: &[u8]) {
        let chain = Chain { base: Base::Entity(entity.to_vec()), merges: Vec::new() };
        self.keys.insert(self.key(key), chain);
    }

    pub fn delete(&mut self, key: &[u8]) {
        self.keys.insert(self.key(key), Chain { base: Base::Deleted, merges: Vec::new() });
    }

    pub fn merge(&mut self, key: &[u8], operand: &[u8]) {
        let k = self.key(key);
        if let Some(chain) = self.keys.get_mut(&k) {
            chain.merges.push(operand.to_vec());
            return;
        }
        let base = if self.range_deleted(key) { Base::Deleted } else { Base::Db };
        self.keys.insert(k, Chain { base, merges: vec![operand.to_vec()] });
    }

    pub fn delete_range(&mut self, begin: &[u8], end: &[u8]) {
        if !self.order.lt(begin, end) {
            return;
        }
        let range = (Bound::Included(self.key(begin)), Bound::Excluded(self.key(end)));
        for (_, chain) in self.keys.range_mut(range) {
            *chain = Chain { base: Base::Deleted, merges: Vec::new() };
        }
        self.deleted.insert(begin, end, &self.order);
    }

    /// What the batch does to `key`: its chain, or a deletion by a range, or nothing.
    pub fn lookup(&self, key: &[u8]) -> Lookup<'_> {
        match self.keys.get(&self.key(key)) {
            Some(c) => Lookup::Chain(c),
            None if self.range_deleted(key) => Lookup::RangeDeleted,
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
        let o = &KeyOrder::Bytewise;
        r.insert(b"c", b"e", o);
        r.insert(b"x", b"x", o); // empty
        r.insert(b"e", b"g", o); // touches
        r.insert(b"a", b"b", o);
        r.insert(b"k", b"m", o);
        r.insert(b"bb", b"l", o); // joins c..g and k..m
        let got: Vec<_> = r.ranges.iter().map(|(b, e)| (b.bytes.clone(), e.clone())).collect();
        assert_eq!(got, vec![(b"a".to_vec(), b"b".to_vec()), (b"bb".to_vec(), b"m".to_vec())]);
        assert!(r.covers(b"a", o) && r.covers(b"ab", o) && !r.covers(b"b", o));
        assert!(r.covers(b"bb", o) && r.covers(b"lzz", o) && !r.covers(b"m", o));
        assert!(!r.covers(b"0", o));
    }

    #[test]
    fn a_reverse_order_index_keeps_keys_and_ranges_in_that_order() {
        let reverse = KeyOrder::custom("reverse", Box::new(|a: &[u8], b: &[u8]| b.cmp(a)));
        let mut ix = CfIndex::new(reverse);
        for k in [b"a", b"c", b"e", b"g"] {
            ix.put(k, b"v");
        }
        ix.delete_range(b"f", b"b"); // f down to (not including) b
        let keys: Vec<_> = ix.keys.keys().map(|k| k.bytes.clone()).collect();
        assert_eq!(keys, vec![b"g".to_vec(), b"e".to_vec(), b"c".to_vec(), b"a".to_vec()]);
        assert!(matches!(ix.lookup(b"e"), Lookup::Chain(c) if c.base == Base::Deleted));
        assert!(matches!(ix.lookup(b"c"), Lookup::Chain(c) if c.base == Base::Deleted));
        assert!(matches!(ix.lookup(b"g"), Lookup::Chain(c) if matches!(c.base, Base::Put(_))));
        assert!(matches!(ix.lookup(b"a"), Lookup::Chain(c) if matches!(c.base, Base::Put(_))));
        assert!(matches!(ix.lookup(b"d"), Lookup::RangeDeleted));
        assert!(matches!(ix.lookup(b"b"), Lookup::Untouched), "the end is exclusive");
        ix.delete_range(b"b", b"f"); // empty in reverse order
        assert!(matches!(ix.lookup(b"a"), Lookup::Chain(c) if matches!(c.base, Base::Put(_))));
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
