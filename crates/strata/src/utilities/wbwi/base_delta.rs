//! A cursor over a DB cursor with a batch's updates on top (RocksDB's base-delta iterator):
//! the keys the DB would hold after the batch is written, in order, both ways.
//!
//! Two sorted sources are merged: the base cursor (the DB, within its read options' bounds and
//! prefix) and the batch's index of one column family (`index.rs`), limited to the same
//! bounds and prefix. At each step the smaller key (the larger going backward) is taken: a key
//! the batch touches is resolved from its chain, with the base's value when the base is at
//! the same key and the chain needs it; a base key the batch does not name is hidden when one
//! of the batch's range deletions covers it. Keys that resolve to nothing are skipped.
//!
//! Wide columns (`columns()`): a key whose batch entry is an entity, or whose base entry is
//! one, keeps its columns (merges applying to the default column, as the DB's reads do);
//! any other key is one default column, its value.
//!
//! Going forward the base is at the first key >= the current one; going backward at the last
//! key <= it. A change of direction repositions the base with a seek. The batch's index is a
//! copy the cursor shares (taken when it was made): later updates to the batch are not seen.

use std::ops::Bound;
use std::sync::Arc;

use super::index::{Base, CfIndex, Chain};
use crate::db::{DbRawIterator, RawCursor};
use crate::error::{Error, Result};
use crate::merge_operator::MergeOperator;
use crate::wide_columns::WideColumns;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Dir {
    Forward,
    Reverse,
}

pub(crate) struct BaseDelta {
    base: DbRawIterator,
    index: Arc<CfIndex>,
    dir: Dir,
    valid: bool,
    key: Vec<u8>,
    value: Vec<u8>,
    /// The current key's columns when it is an entity (module docs); else its value is its
    /// one default column.
    columns: Option<WideColumns>,
    error: Option<Error>,
}

impl BaseDelta {
    pub(crate) fn new(base: DbRawIterator, index: Arc<CfIndex>) -> BaseDelta {
        BaseDelta {
            base,
            index,
            dir: Dir::Forward,
            valid: false,
            key: Vec::new(),
            value: Vec::new(),
            columns: None,
            error: None,
        }
    }

    fn fail(&mut self, e: Error) {
        self.valid = false;
        if self.error.is_none() {
            self.error = Some(e);
        }
    }

    /// Settles on the first visible key at or after `from` going forward, or the last at or
    /// before it going backward; the base is at or past `from` the same way. Keys are copied
    /// only to become the current one or the next bound.
    fn settle(&mut self, dir: Dir, from: Bound<Vec<u8>>) {
        self.dir = dir;
        // Held apart from `self`, so the batch's entries are borrowed while `self` changes.
        let index = Arc::clone(&self.index);
        let mut from = from;
        loop {
            if self.base.status().is_err() {
                self.valid = false;
                return;
            }
            let batch = batch_entry(&index, &self.base, dir, as_ref(&from));
            let base_key = self.base.key();
            let order = index.order();
            let take_batch = match (batch, base_key) {
                (Some((k, _)), Some(b)) => match dir {
                    Dir::Forward => order.le(k, b),
                    Dir::Reverse => order.le(b, k),
                },
                (Some(_), None) => true,
                (None, _) => false,
            };
            if let (true, Some((k, chain))) = (take_batch, batch) {
                let same = base_key == Some(k.as_slice());
                let db = if same { self.base.value() } else { None };
                let op = self.base.merge_operator().map(|o| o.as_ref() as &dyn MergeOperator);
                match chain.resolve(k, db, op) {
                    Err(e) => return self.fail(e),
                    Ok(Some(v)) => {
                        let columns = match self.chain_columns(k, chain, same, op) {
                            Ok(c) => c,
                            Err(e) => return self.fail(e),
                        };
                        self.set(k.clone(), v);
                        self.columns = columns;
                        return;
                    }
                    Ok(None) => {
                        if same {
                            self.step_base(dir);
                        }
                        from = Bound::Excluded(k.clone());
                    }
                }
            } else if let Some(b) = base_key {
                if index.range_deleted(b) {
                    from = Bound::Excluded(b.to_vec());
                    self.step_base(dir);
                } else {
                    let (k, v) = (b.to_vec(), self.base.value().unwrap_or_default().to_vec());
                    let columns = self.base_columns();
                    self.set(k, v);
                    self.columns = columns;
                    return;
                }
            } else {
                self.valid = false;
                return;
            }
        }
    }

    fn step_base(&mut self, dir: Dir) {
        match dir {
            Dir::Forward => self.base.next(),
            Dir::Reverse => self.base.prev(),
        }
    }

    /// The base's columns at its current key when it is an entity (more than one default
    /// column).
    fn base_columns(&self) -> Option<WideColumns> {
        let c = self.base.columns()?;
        if c.len() == 1 && c[0].0.is_empty() {
            return None;
        }
        // Names come from a validated entity: sorted and unique.
        WideColumns::from_columns(&c).ok()
    }

    /// The columns `chain` makes of `key` (`same`: the base is at `key`) when they are not
    /// its value alone: a batch entity, or merges over a base entity.
    fn chain_columns(
        &self,
        key: &[u8],
        chain: &Chain,
        same: bool,
        op: Option<&dyn MergeOperator>,
    ) -> Result<Option<WideColumns>> {
        let db = match chain.base {
            Base::Entity(_) => None,
            Base::Db if same => match self.base_columns() {
                Some(c) => Some(c),
                None => return Ok(None),
            },
            _ => return Ok(None),
        };
        chain.resolve_entity(key, db, op)
    }

    fn set(&mut self, key: Vec<u8>, value: Vec<u8>) {
        self.key = key;
        self.value = value;
        self.columns = None;
        self.valid = true;
    }
}

impl RawCursor for BaseDelta {
    fn valid(&self) -> bool {
        self.valid
    }

    fn seek_to_first(&mut self) {
        self.error = None;
        self.base.seek_to_first();
        self.settle(Dir::Forward, Bound::Unbounded);
    }

    fn seek_to_last(&mut self) {
        self.error = None;
        self.base.seek_to_last();
        self.settle(Dir::Reverse, Bound::Unbounded);
    }

    fn seek(&mut self, key: &[u8]) {
        self.error = None;
        self.base.seek(key);
        self.settle(Dir::Forward, Bound::Included(key.to_vec()));
    }

    fn seek_for_prev(&mut self, key: &[u8]) {
        self.error = None;
        self.base.seek_for_prev(key);
        self.settle(Dir::Reverse, Bound::Included(key.to_vec()));
    }

    fn next(&mut self) {
        let current = std::mem::take(&mut self.key);
        if self.dir == Dir::Reverse {
            self.base.seek(&current);
        }
        if self.base.key() == Some(current.as_slice()) {
            self.base.next();
        }
        self.settle(Dir::Forward, Bound::Excluded(current));
    }

    fn prev(&mut self) {
        let current = std::mem::take(&mut self.key);
        if self.dir == Dir::Forward {
            self.base.seek_for_prev(&current);
        }
        if self.base.key() == Some(current.as_slice()) {
            self.base.prev();
        }
        self.settle(Dir::Reverse, Bound::Excluded(current));
    }

    fn key(&self) -> &[u8] {
        &self.key
    }

    fn value(&self) -> &[u8] {
        &self.value
    }

    fn columns(&self) -> Vec<(&[u8], &[u8])> {
        match &self.columns {
            Some(c) => c.iter().collect(),
            None => vec![(crate::wide_columns::DEFAULT_COLUMN_NAME, self.value.as_slice())],
        }
    }

    fn status(&self) -> Result<()> {
        match &self.error {
            Some(e) => Err(e.duplicate()),
            None => self.base.status(),
        }
    }

    fn internal_steps(&self) -> u64 {
        self.base.internal_steps()
    }

    fn bounds(&self) -> (Option<&[u8]>, Option<&[u8]>) {
        self.base.bounds()
    }

    fn excludes(&self, ukey: &[u8]) -> bool {
        self.base.excludes(ukey)
    }

    fn merge_operator(&self) -> Option<&Arc<dyn MergeOperator>> {
        self.base.merge_operator()
    }

    fn order(&self) -> &crate::comparator::KeyOrder {
        self.base.order()
    }

    fn timestamp(&self) -> Option<&[u8]> {
        self.valid.then_some(&[][..])
    }
}

fn as_ref(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(k) => Bound::Included(k.as_slice()),
        Bound::Excluded(k) => Bound::Excluded(k.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// The batch's next key from `from` the way `dir` goes (at or after it forward, at or before
/// it backward), within `base`'s bounds and prefix; `None` past them.
fn batch_entry<'i>(
    index: &'i CfIndex,
    base: &DbRawIterator,
    dir: Dir,
    from: Bound<&[u8]>,
) -> Option<(&'i Vec<u8>, &'i Chain)> {
    let (lower, upper) = base.bounds();
    let order = index.order();
    let key = |b: Bound<&[u8]>| match b {
        Bound::Included(k) => Bound::Included(index.key(k)),
        Bound::Excluded(k) => Bound::Excluded(index.key(k)),
        Bound::Unbounded => Bound::Unbounded,
    };
    let found = match dir {
        Dir::Forward => {
            let from = match (from, lower) {
                (Bound::Unbounded, Some(l)) => Bound::Included(l),
                (Bound::Included(k) | Bound::Excluded(k), Some(l)) if order.lt(k, l) => {
                    Bound::Included(l)
                }
                (f, _) => f,
            };
            index.keys.range((key(from), Bound::Unbounded)).next()
        }
        Dir::Reverse => {
            let to = match (from, upper) {
                (Bound::Unbounded, Some(u)) => Bound::Excluded(u),
                (Bound::Included(k) | Bound::Excluded(k), Some(u)) if !order.lt(k, u) => {
                    Bound::Excluded(u)
                }
                (t, _) => t,
            };
            index.keys.range((Bound::Unbounded, key(to))).next_back()
        }
    }?;
    let found = (&found.0.bytes, found.1);
    (!base.excludes(found.0)).then_some(found)
}
