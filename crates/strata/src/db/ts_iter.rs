//! The cursor over a family with user-defined timestamps (`crate::comparator::UserTimestamps`)
//! read at a timestamp: each key appears once, as its newest version at or below the read
//! timestamp (the newest write of that version at the read's sequence number), unless that
//! version is a deletion.
//!
//! Stored keys are `key | timestamp`, ordered by the family's order: a key's versions are
//! adjacent, newest timestamp first, and each version's writes newest first. So, going
//! forward, a key's first visible entry (timestamp at or below the read's, sequence number at
//! or below it) decides the key; going backward the last one visited before the previous key
//! does. Bounds and positions name keys without timestamps, compared with the family's
//! order of keys without them.
//!
//! A version that is a merge operand reads as the operator's merge of it and the key's older
//! visible entries down to the first value (the base) or deletion (none), across timestamps
//! (`TsCursor::merge_down`), as a point read at its timestamp would see it; GetMergeOperands
//! walks the same entries without merging them (`TsCursor::operands_of`).
//!
//! **History** (`ReadOptions::set_iter_start_ts`, RocksDB's `iter_start_ts`): the cursor
//! returns every version whose timestamp lies between the start and the read timestamp, each
//! version (`key | timestamp`) once as its newest write at the read's sequence number,
//! deletions included (with an empty value); a key's versions come newest timestamp first
//! going forward. As in RocksDB, `key()` is then the version's internal key (`key |
//! timestamp | trailer`, the trailer as in `docs/format/sstable.md`), which names its
//! timestamp, sequence number and type; `timestamp()` is its timestamp.

use std::cmp::Ordering;
use std::sync::Arc;

use super::iter::RawCursor;
use super::SuperVersion;
use crate::comparator::{KeyOrder, UserTimestamps};
use crate::error::{Error, Result};
use crate::iterator::InternalIterator;
use crate::key::{make_internal_key, parse_internal_key};
use crate::merge_operator::MergeOperator;
use crate::types::{SeqNo, ValueType};

/// One entry of the internal iterator, split: stored key (`key | timestamp`), key without
/// timestamp, timestamp, sequence number and type.
struct Entry<'a> {
    stored: &'a [u8],
    key: &'a [u8],
    ts: &'a [u8],
    seq: SeqNo,
    value_type: ValueType,
}

pub(crate) struct TsCursor {
    inner: Box<dyn InternalIterator>,
    /// Keeps what `inner` reads alive.
    _sv: Arc<SuperVersion>,
    sequence: SeqNo,
    timestamps: Arc<UserTimestamps>,
    /// The order of the keys it yields (`RawCursor::order`).
    order: KeyOrder,
    read_ts: Vec<u8>,
    /// Set for a history cursor: the oldest timestamp it returns versions of (module docs).
    start_ts: Option<Vec<u8>>,
    lower: Option<Vec<u8>>,
    upper: Option<Vec<u8>>,
    merge_operator: Option<Arc<dyn MergeOperator>>,
    /// Reads values kept in blob files (read as the cursor lands on them).
    blobs: Arc<dyn crate::iterator::BlobFetch>,
    valid: bool,
    /// The current key (without timestamp; a history cursor's: the internal key), value and
    /// timestamp.
    key: Vec<u8>,
    value: Vec<u8>,
    ts: Vec<u8>,
    error: Option<Error>,
    steps: u64,
    /// Whether `inner` sits at the current entry's deciding entry (after a forward move) or
    /// before the current group's entries (after a backward one).
    forward: bool,
}

/// What a [`TsCursor`] reads and how.
pub(crate) struct TsCursorParts {
    pub inner: Box<dyn InternalIterator>,
    pub sv: Arc<SuperVersion>,
    pub sequence: SeqNo,
    pub timestamps: Arc<UserTimestamps>,
    pub order: KeyOrder,
    pub read_ts: Vec<u8>,
    pub start_ts: Option<Vec<u8>>,
    pub lower: Option<Vec<u8>>,
    pub upper: Option<Vec<u8>>,
    pub merge_operator: Option<Arc<dyn MergeOperator>>,
    pub blobs: Arc<dyn crate::iterator::BlobFetch>,
}

/// The entry deciding a group when moving backward: its type, timestamp, value and internal
/// key (a blob's record holds the stored key; a history cursor returns the internal key).
type Deciding = (ValueType, Vec<u8>, Vec<u8>, Vec<u8>);

/// A walk down a key from a merge operand: the operands newest first, and the value under
/// them if the walk reached one (`TsCursor::walk_down`).
type Walk = (Vec<Vec<u8>>, Option<Vec<u8>>);

impl TsCursor {
    pub(crate) fn new(p: TsCursorParts) -> TsCursor {
        // The order of the keys the cursor yields: keys without timestamps, or a history's
        // internal keys (the family's order of stored keys, then newest write first).
        let order = match p.start_ts {
            Some(_) => {
                let family = p.order;
                KeyOrder::custom(
                    format!("{}#versions", family.name()),
                    Box::new(move |a: &[u8], b: &[u8]| family.compare_internal(a, b)),
                )
            }
            None => {
                let t = p.timestamps.clone();
                KeyOrder::custom(
                    format!("{}#keys", p.order.name()),
                    Box::new(move |a: &[u8], b: &[u8]| t.compare_keys(a, b)),
                )
            }
        };
        TsCursor {
            inner: p.inner,
            _sv: p.sv,
            sequence: p.sequence,
            timestamps: p.timestamps,
            order,
            read_ts: p.read_ts,
            start_ts: p.start_ts,
            lower: p.lower,
            upper: p.upper,
            merge_operator: p.merge_operator,
            blobs: p.blobs,
            valid: false,
            key: Vec::new(),
            value: Vec::new(),
            ts: Vec::new(),
            error: None,
            steps: 0,
            forward: true,
        }
    }

    fn fail(&mut self, e: Error) {
        self.valid = false;
        if self.error.is_none() {
            self.error = Some(e);
        }
    }

    fn history(&self) -> bool {
        self.start_ts.is_some()
    }

    /// The inner iterator's entry, split; `Err` for a key too short for its parts.
    fn entry(&self) -> Result<Entry<'_>> {
        let k = self.inner.key();
        let p = parse_internal_key(k).ok_or_else(|| {
            Error::corruption("", 0, format!("malformed internal key of {} bytes", k.len()))
        })?;
        let (key, ts) = self.timestamps.split(p.user_key).ok_or_else(|| {
            Error::corruption(
                "",
                0,
                format!(
                    "key {:?} is shorter than the family's {}-byte timestamp",
                    String::from_utf8_lossy(p.user_key),
                    self.timestamps.size()
                ),
            )
        })?;
        Ok(Entry { stored: p.user_key, key, ts, seq: p.seq, value_type: p.value_type })
    }

    /// What the cursor returns once: a key (its versions decided together), or for a history
    /// cursor a version (`key | timestamp`).
    fn group<'e>(&self, e: &Entry<'e>) -> &'e [u8] {
        if self.history() {
            e.stored
        } else {
            e.key
        }
    }

    /// The group of the current entry (`key`'s field).
    fn current_group(&self) -> Vec<u8> {
        if self.history() {
            crate::key::user_key(&self.key).to_vec()
        } else {
            self.key.clone()
        }
    }

    fn visible(&self, e: &Entry<'_>) -> bool {
        let t = &self.timestamps;
        e.seq <= self.sequence
            && t.compare_ts(e.ts, &self.read_ts) != Ordering::Greater
            && self.start_ts.as_deref().is_none_or(|s| t.compare_ts(e.ts, s) != Ordering::Less)
    }

    fn before_lower(&self, key: &[u8]) -> bool {
        let t = &self.timestamps;
        self.lower.as_deref().is_some_and(|l| t.compare_keys(key, l) == Ordering::Less)
    }

    fn past_upper(&self, key: &[u8]) -> bool {
        let t = &self.timestamps;
        self.upper.as_deref().is_some_and(|u| t.compare_keys(key, u) != Ordering::Less)
    }

    /// The internal key a seek to `key` (without timestamp) at the read timestamp lands on.
    fn seek_key(&self, key: &[u8]) -> Vec<u8> {
        let mut k = key.to_vec();
        k.extend_from_slice(&self.read_ts);
        make_internal_key(&k, SeqNo::MAX, ValueType::FOR_SEEK)
    }

    fn check_inner(&mut self) {
        if let Err(e) = self.inner.status() {
            self.fail(e);
        }
    }

    /// The user's value of the entry under the inner iterator, of type `t` (a value, a blob
    /// index or an entity).
    fn stored_value(&self, t: ValueType) -> Result<Vec<u8>> {
        match t {
            ValueType::BlobIndex => {
                let stored_key = crate::key::user_key(self.inner.key());
                self.blobs.fetch(stored_key, self.inner.value())
            }
            // Families with timestamps refuse entities; an ingested one reads as its default
            // column.
            ValueType::Entity => {
                crate::wide_columns::default_value(self.inner.value()).map(<[u8]>::to_vec)
            }
            _ => Ok(self.inner.value().to_vec()),
        }
    }

    /// The operand under the inner iterator (an entry of `key`) and the key's older entries
    /// at the read's sequence number down to a value or a deletion: the operands newest
    /// first, and the value under them (`None` after a deletion or at the key's end).
    /// `continue_cb`, asked of each operand, ends the walk with the operands seen (the refused
    /// one included, no value). Leaves the inner iterator anywhere after the operand.
    fn walk_down(
        &mut self,
        key: &[u8],
        continue_cb: Option<super::merge_operands::OperandCallback<'_>>,
    ) -> Result<Walk> {
        let mut operands = Vec::new();
        loop {
            let v = self.inner.value().to_vec();
            let go_on = continue_cb.is_none_or(|cb| cb(&v));
            operands.push(v);
            if !go_on {
                return Ok((operands, None));
            }
            // The next entry of `key` the read sees, and its type.
            let below = loop {
                self.inner.next();
                if !self.inner.valid() {
                    break None;
                }
                self.steps += 1;
                let e = self.entry()?;
                if e.key != key {
                    break None;
                }
                if e.seq <= self.sequence {
                    break Some(e.value_type);
                }
            };
            match below {
                Some(ValueType::Merge) => {}
                None | Some(ValueType::Deletion | ValueType::SingleDeletion) => break,
                Some(ValueType::RangeDeletion) => return Err(range_deletion(key)),
                Some(t) => return Ok((operands, Some(self.stored_value(t)?))),
            }
        }
        self.inner.status()?;
        Ok((operands, None))
    }

    /// The merge of the operand under the inner iterator (an entry of `key`) with the key's
    /// older visible entries down to a base value or a deletion (module docs). Leaves the
    /// inner iterator anywhere after the operand.
    fn merge_down(&mut self, key: &[u8]) -> Result<Vec<u8>> {
        let Some(op) = self.merge_operator.clone() else {
            return Err(Error::InvalidArgument(format!(
                "key {:?} holds merge operands but no merge operator is configured",
                String::from_utf8_lossy(key)
            )));
        };
        let (operands, base) = self.walk_down(key, None)?;
        let oldest_first: Vec<&[u8]> = operands.iter().rev().map(Vec::as_slice).collect();
        op.full_merge(key, base.as_deref(), &oldest_first).ok_or_else(|| {
            Error::corruption(
                "",
                0,
                format!(
                    "Merge operator failed: {} on key {:?}",
                    op.name(),
                    String::from_utf8_lossy(key)
                ),
            )
        })
    }

    /// What a read of `key` at the cursor's timestamp merges, unmerged (GetMergeOperands,
    /// `db/merge_operands.rs`): the operands of its deciding version and those under it down
    /// to a value, oldest first, that value first; a value alone when the version is one;
    /// `None` for a deletion or no version. `continue_cb`, asked of each operand newest first,
    /// ends the walk with the operands seen (the refused one included).
    pub(crate) fn operands_of(
        mut self,
        key: &[u8],
        continue_cb: Option<super::merge_operands::OperandCallback<'_>>,
    ) -> Result<Option<Vec<Vec<u8>>>> {
        let target = self.seek_key(key);
        self.inner.seek(&target);
        // The deciding entry: the key's first the read sees.
        let deciding = loop {
            if !self.inner.valid() {
                break None;
            }
            let e = self.entry()?;
            if e.key != key {
                break None;
            }
            if self.visible(&e) {
                break Some(e.value_type);
            }
            self.inner.next();
        };
        self.inner.status()?;
        match deciding {
            None | Some(ValueType::Deletion | ValueType::SingleDeletion) => Ok(None),
            Some(ValueType::RangeDeletion) => Err(range_deletion(key)),
            Some(ValueType::Merge) => {
                let (mut operands, base) = self.walk_down(key, continue_cb)?;
                operands.extend(base);
                operands.reverse();
                Ok(Some(operands))
            }
            Some(t) => Ok(Some(vec![self.stored_value(t)?])),
        }
    }

    /// Settles forward from the inner position on the first group (not `skip`) whose deciding
    /// version is a value (for a history cursor, any version).
    fn settle_forward(&mut self, mut skip: Option<Vec<u8>>) {
        self.valid = false;
        self.forward = true;
        while self.inner.valid() {
            self.steps += 1;
            // What the entry decides, copied out of the iterator.
            let step = match self.entry() {
                Err(err) => Err(err),
                Ok(e) if skip.as_deref() == Some(self.group(&e)) || !self.visible(&e) => Ok(None),
                Ok(e) => Ok(Some((e.value_type, e.key.to_vec(), e.ts.to_vec()))),
            };
            let (value_type, key, ts) = match step {
                Err(err) => return self.fail(err),
                Ok(None) => {
                    self.inner.next();
                    continue;
                }
                Ok(Some(d)) => d,
            };
            if self.past_upper(&key) {
                return;
            }
            let value = match value_type {
                ValueType::Value | ValueType::BlobIndex | ValueType::Entity => {
                    self.stored_value(value_type)
                }
                ValueType::Deletion | ValueType::SingleDeletion if self.history() => Ok(Vec::new()),
                ValueType::Deletion | ValueType::SingleDeletion => {
                    skip = Some(key);
                    self.inner.next();
                    continue;
                }
                ValueType::Merge => {
                    // The walk leaves the deciding entry: come back to it, where the next
                    // move starts.
                    let ikey = self.inner.key().to_vec();
                    let merged = self.merge_down(&key);
                    self.inner.seek(&ikey);
                    merged
                }
                ValueType::RangeDeletion => Err(range_deletion(&key)),
            };
            match value {
                Ok(v) => self.value = v,
                Err(e) => return self.fail(e),
            }
            self.key = if self.history() { self.inner.key().to_vec() } else { key };
            self.ts = ts;
            self.valid = true;
            return;
        }
        self.check_inner();
    }

    /// Settles backward from the inner position (the last entry of some group, or before it)
    /// on the last group whose deciding version is a value (for a history cursor, any).
    fn settle_backward(&mut self) {
        self.valid = false;
        self.forward = false;
        while self.inner.valid() {
            let (group, key) = match self.entry() {
                Ok(e) => (self.group(&e).to_vec(), e.key.to_vec()),
                Err(err) => return self.fail(err),
            };
            if self.before_lower(&key) {
                return;
            }
            // The group's entries, oldest first: the last visible one met decides.
            let mut deciding: Option<Deciding> = None;
            while self.inner.valid() {
                self.steps += 1;
                let step = match self.entry() {
                    Err(err) => Err(err),
                    Ok(e) if self.group(&e) != group.as_slice() => Ok(None),
                    Ok(e) => Ok(Some(self.visible(&e).then(|| (e.value_type, e.ts.to_vec())))),
                };
                match step {
                    Err(err) => return self.fail(err),
                    Ok(None) => break,
                    Ok(Some(Some((t, ts)))) => {
                        let ikey = self.inner.key().to_vec();
                        deciding = Some((t, ts, self.inner.value().to_vec(), ikey));
                    }
                    Ok(Some(None)) => {}
                }
                self.inner.prev();
            }
            if self.past_upper(&key) {
                continue;
            }
            let Some((t, ts, value, ikey)) = deciding else { continue };
            let value = match t {
                ValueType::Value => Ok(value),
                ValueType::BlobIndex => self.blobs.fetch(crate::key::user_key(&ikey), &value),
                ValueType::Entity => crate::wide_columns::default_value(&value).map(<[u8]>::to_vec),
                ValueType::Deletion | ValueType::SingleDeletion if self.history() => Ok(Vec::new()),
                ValueType::Deletion | ValueType::SingleDeletion => continue,
                ValueType::Merge => {
                    // Walk down from the operand, then return before the group.
                    self.inner.seek(&ikey);
                    let merged = self.merge_down(&key);
                    self.inner.seek(&ikey);
                    self.back_before(&group);
                    merged
                }
                ValueType::RangeDeletion => Err(range_deletion(&key)),
            };
            match value {
                Ok(v) => self.value = v,
                Err(e) => return self.fail(e),
            }
            self.key = if self.history() { ikey } else { key };
            self.ts = ts;
            self.valid = true;
            return;
        }
        self.check_inner();
    }

    /// Whether the entry `e` belongs to `group`, a key without timestamp (`by_version`
    /// false) or a version (`key | timestamp`).
    fn in_group(e: &Entry<'_>, group: &[u8], by_version: bool) -> bool {
        (if by_version { e.stored } else { e.key }) == group
    }

    /// Moves the inner iterator past the last entry of `group` (onto the next one's first):
    /// a key without timestamp, or a version when `by_version`.
    fn skip_past(&mut self, group: &[u8], by_version: bool) {
        let target = if by_version {
            make_internal_key(group, SeqNo::MAX, ValueType::FOR_SEEK)
        } else {
            self.seek_key(group)
        };
        self.inner.seek(&target);
        while self.inner.valid() {
            match self.entry() {
                Ok(e) if Self::in_group(&e, group, by_version) => self.inner.next(),
                Ok(_) => return,
                Err(err) => return self.fail(err),
            }
        }
    }

    /// Moves the inner iterator before the first entry of `group` (onto the previous one's
    /// last), from an entry of it; `group` is the cursor's kind of group.
    fn back_before(&mut self, group: &[u8]) {
        let by_version = self.history();
        while self.inner.valid() {
            match self.entry() {
                Ok(e) if Self::in_group(&e, group, by_version) => self.inner.prev(),
                Ok(_) => return,
                Err(err) => return self.fail(err),
            }
        }
    }
}

/// `NotSupported` for a range deletion met in a family with timestamps (refused at the
/// write; one can only come from an ingested file).
fn range_deletion(key: &[u8]) -> Error {
    Error::NotSupported(format!(
        "key {:?}: a range deletion in a family with user-defined timestamps",
        String::from_utf8_lossy(key)
    ))
}

impl RawCursor for TsCursor {
    fn valid(&self) -> bool {
        self.valid
    }

    fn set_bounds(&mut self, lower: Option<Vec<u8>>, upper: Option<Vec<u8>>) -> Result<()> {
        (self.lower, self.upper) = (lower, upper);
        self.valid = false;
        Ok(())
    }

    fn seek_to_first(&mut self) {
        self.error = None;
        match self.lower.clone() {
            Some(l) => self.seek(&l),
            None => {
                self.inner.seek_to_first();
                self.settle_forward(None);
            }
        }
    }

    fn seek_to_last(&mut self) {
        self.error = None;
        match self.upper.clone() {
            Some(u) => {
                // Just before the first entry at or after `u`'s at the read timestamp (the
                // keys at or past `u` met going back are skipped).
                let target = self.seek_key(&u);
                self.inner.seek(&target);
                if self.inner.valid() {
                    self.inner.prev();
                } else {
                    self.check_inner();
                    if self.error.is_some() {
                        return;
                    }
                    self.inner.seek_to_last();
                }
            }
            None => self.inner.seek_to_last(),
        }
        self.settle_backward();
    }

    fn seek(&mut self, target: &[u8]) {
        self.error = None;
        let t = match &self.lower {
            Some(l) if self.timestamps.compare_keys(target, l) == Ordering::Less => l.clone(),
            _ => target.to_vec(),
        };
        let k = self.seek_key(&t);
        self.inner.seek(&k);
        self.settle_forward(None);
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.error = None;
        if self.past_upper(target) {
            return self.seek_to_last();
        }
        self.skip_past(target, false);
        if self.error.is_some() {
            return;
        }
        if self.inner.valid() {
            self.inner.prev();
        } else {
            self.check_inner();
            if self.error.is_some() {
                return;
            }
            self.inner.seek_to_last();
        }
        self.settle_backward();
    }

    fn next(&mut self) {
        let group = self.current_group();
        if self.forward {
            self.inner.next();
        } else {
            self.skip_past(&group, self.history());
        }
        self.settle_forward(Some(group));
    }

    fn prev(&mut self) {
        let group = self.current_group();
        if self.forward {
            self.back_before(&group);
        }
        self.settle_backward();
    }

    fn key(&self) -> &[u8] {
        &self.key
    }

    fn value(&self) -> &[u8] {
        &self.value
    }

    fn timestamp(&self) -> Option<&[u8]> {
        self.valid.then_some(self.ts.as_slice())
    }

    fn status(&self) -> Result<()> {
        match &self.error {
            Some(e) => Err(e.duplicate()),
            None => self.inner.status(),
        }
    }

    fn internal_steps(&self) -> u64 {
        self.steps
    }

    fn bounds(&self) -> (Option<&[u8]>, Option<&[u8]>) {
        (self.lower.as_deref(), self.upper.as_deref())
    }

    fn excludes(&self, ukey: &[u8]) -> bool {
        self.before_lower(ukey) || self.past_upper(ukey)
    }

    fn merge_operator(&self) -> Option<&Arc<dyn MergeOperator>> {
        self.merge_operator.as_ref()
    }

    fn order(&self) -> &KeyOrder {
        &self.order
    }

    fn yields_versions(&self) -> bool {
        self.history()
    }
}
