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
//! A family with timestamps holds puts and deletions only (merges and range deletions are
//! refused at the write: `db/write`), so there is nothing to resolve across entries.

use std::sync::Arc;

use super::iter::RawCursor;
use super::SuperVersion;
use crate::comparator::{KeyOrder, UserTimestamps};
use crate::error::{Error, Result};
use crate::iterator::InternalIterator;
use crate::key::{make_internal_key, parse_internal_key};
use crate::merge_operator::MergeOperator;
use crate::types::{SeqNo, ValueType};

/// One entry of the internal iterator, split: key without timestamp, timestamp, sequence
/// number and type.
struct Entry<'a> {
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
    order: KeyOrder,
    read_ts: Vec<u8>,
    lower: Option<Vec<u8>>,
    upper: Option<Vec<u8>>,
    merge_operator: Option<Arc<dyn MergeOperator>>,
    /// Reads values kept in blob files (read as the cursor lands on them).
    blobs: Arc<dyn crate::iterator::BlobFetch>,
    valid: bool,
    /// The current key (without timestamp), value and timestamp.
    key: Vec<u8>,
    value: Vec<u8>,
    ts: Vec<u8>,
    error: Option<Error>,
    steps: u64,
    /// Whether `inner` sits at the current key's deciding entry (after a forward move) or
    /// before the current key's entries (after a backward one).
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
    pub lower: Option<Vec<u8>>,
    pub upper: Option<Vec<u8>>,
    pub merge_operator: Option<Arc<dyn MergeOperator>>,
    pub blobs: Arc<dyn crate::iterator::BlobFetch>,
}

/// The entry deciding a key when moving backward: its type, timestamp, value, and stored key
/// (`key || timestamp`, which a blob's record holds).
type Deciding = (ValueType, Vec<u8>, Vec<u8>, Vec<u8>);

impl TsCursor {
    pub(crate) fn new(p: TsCursorParts) -> TsCursor {
        TsCursor {
            inner: p.inner,
            _sv: p.sv,
            sequence: p.sequence,
            timestamps: p.timestamps,
            order: p.order,
            read_ts: p.read_ts,
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
        Ok(Entry { key, ts, seq: p.seq, value_type: p.value_type })
    }

    fn visible(&self, e: &Entry<'_>) -> bool {
        e.seq <= self.sequence
            && self.timestamps.compare_ts(e.ts, &self.read_ts) != std::cmp::Ordering::Greater
    }

    fn before_lower(&self, key: &[u8]) -> bool {
        let t = &self.timestamps;
        self.lower.as_deref().is_some_and(|l| t.compare_keys(key, l) == std::cmp::Ordering::Less)
    }

    fn past_upper(&self, key: &[u8]) -> bool {
        let t = &self.timestamps;
        self.upper.as_deref().is_some_and(|u| t.compare_keys(key, u) != std::cmp::Ordering::Less)
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

    /// Settles forward from the inner position on the first key (not `skip`) whose deciding
    /// version is a value.
    fn settle_forward(&mut self, mut skip: Option<Vec<u8>>) {
        self.valid = false;
        self.forward = true;
        while self.inner.valid() {
            self.steps += 1;
            // What the entry decides, copied out of the iterator.
            let step = match self.entry() {
                Err(err) => Err(err),
                Ok(e) if skip.as_deref() == Some(e.key) || !self.visible(&e) => Ok(None),
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
            match value_type {
                ValueType::Value | ValueType::BlobIndex | ValueType::Entity => {
                    self.value = if value_type == ValueType::BlobIndex {
                        let stored_key = crate::key::user_key(self.inner.key());
                        match self.blobs.fetch(stored_key, self.inner.value()) {
                            Ok(v) => v,
                            Err(e) => return self.fail(e),
                        }
                    } else if value_type == ValueType::Entity {
                        // Families with timestamps refuse entities; an ingested one reads
                        // as its default column.
                        match crate::wide_columns::default_value(self.inner.value()) {
                            Ok(v) => v.to_vec(),
                            Err(e) => return self.fail(e),
                        }
                    } else {
                        self.inner.value().to_vec()
                    };
                    self.key = key;
                    self.ts = ts;
                    self.valid = true;
                    return;
                }
                ValueType::Deletion | ValueType::SingleDeletion => {
                    skip = Some(key);
                    self.inner.next();
                }
                ValueType::Merge | ValueType::RangeDeletion => {
                    let k = String::from_utf8_lossy(&key).into_owned();
                    return self.fail(Error::NotSupported(format!(
                        "key {k:?}: a merge or range deletion in a family with user-defined \
                         timestamps"
                    )));
                }
            }
        }
        self.check_inner();
    }

    /// Settles backward from the inner position (the last entry of some key, or before it)
    /// on the last key whose deciding version is a value.
    fn settle_backward(&mut self) {
        self.valid = false;
        self.forward = false;
        while self.inner.valid() {
            let group = match self.entry() {
                Ok(e) => e.key.to_vec(),
                Err(err) => return self.fail(err),
            };
            if self.before_lower(&group) {
                return;
            }
            // The key's entries, oldest first: the last visible one met decides (with its
            // stored key, which a blob's record holds).
            let mut deciding: Option<Deciding> = None;
            while self.inner.valid() {
                self.steps += 1;
                let step = match self.entry() {
                    Err(err) => Err(err),
                    Ok(e) if e.key != group.as_slice() => Ok(None),
                    Ok(e) => Ok(Some(self.visible(&e).then(|| (e.value_type, e.ts.to_vec())))),
                };
                match step {
                    Err(err) => return self.fail(err),
                    Ok(None) => break,
                    Ok(Some(Some((t, ts)))) => {
                        let stored_key = crate::key::user_key(self.inner.key()).to_vec();
                        deciding = Some((t, ts, self.inner.value().to_vec(), stored_key));
                    }
                    Ok(Some(None)) => {}
                }
                self.inner.prev();
            }
            if self.past_upper(&group) {
                continue;
            }
            match deciding {
                Some((t @ (ValueType::Value | ValueType::BlobIndex), ts, value, stored_key)) => {
                    self.value = if t == ValueType::BlobIndex {
                        match self.blobs.fetch(&stored_key, &value) {
                            Ok(v) => v,
                            Err(e) => return self.fail(e),
                        }
                    } else {
                        value
                    };
                    self.key = group;
                    self.ts = ts;
                    self.valid = true;
                    return;
                }
                Some((ValueType::Merge | ValueType::RangeDeletion, ..)) => {
                    let k = String::from_utf8_lossy(&group).into_owned();
                    return self.fail(Error::NotSupported(format!(
                        "key {k:?}: a merge or range deletion in a family with user-defined \
                         timestamps"
                    )));
                }
                _ => {}
            }
        }
        self.check_inner();
    }

    /// Moves the inner iterator past the last entry of `key` (onto the next key's first).
    fn skip_past(&mut self, key: &[u8]) {
        let target = self.seek_key(key);
        self.inner.seek(&target);
        while self.inner.valid() {
            match self.entry() {
                Ok(e) if e.key == key => self.inner.next(),
                Ok(_) => return,
                Err(err) => return self.fail(err),
            }
        }
    }

    /// Moves the inner iterator before the first entry of `key` (onto the previous key's
    /// last), from an entry of `key`.
    fn back_before(&mut self, key: &[u8]) {
        while self.inner.valid() {
            match self.entry() {
                Ok(e) if e.key == key => self.inner.prev(),
                Ok(_) => return,
                Err(err) => return self.fail(err),
            }
        }
    }
}

impl RawCursor for TsCursor {
    fn valid(&self) -> bool {
        self.valid
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
            Some(l) if self.timestamps.compare_keys(target, l) == std::cmp::Ordering::Less => {
                l.clone()
            }
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
        self.skip_past(target);
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
        let key = std::mem::take(&mut self.key);
        if self.forward {
            self.inner.next();
        } else {
            self.skip_past(&key);
        }
        self.settle_forward(Some(key));
    }

    fn prev(&mut self) {
        let key = std::mem::take(&mut self.key);
        if self.forward {
            self.back_before(&key);
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
}
