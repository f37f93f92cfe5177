//! The DB iterator: turns the merged stream of internal entries into the user's view at one
//! sequence number: newest visible version of each user key, deletions and older versions
//! hidden, merge operands resolved, bounds applied.

use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

use super::{BlobFetch, InternalIterator};
use crate::comparator::KeyOrder;
use crate::error::{Error, Result};
use crate::key::{append_internal_key, make_internal_key, parse_internal_key};
use crate::merge_operator::MergeOperator;
use crate::perf_context::{self, PerfMetric};
use crate::prefix::PrefixExtractor;
use crate::range_del::{Fragment, FragmentedTombstones};
use crate::statistics::{self, Histogram, Statistics, Ticker};
use crate::types::{SeqNo, ValueType};

/// The range tombstones of a DB iterator's sources. Source `s` of a list with offset `o` is
/// child `o + s` of the merging iterator, whose children are numbered newest first. By the
/// LSM order, a tombstone of one child covers only older entries in the children after it, so
/// such a child can jump over the whole fragment at once; entries covered by a tombstone of
/// their own child are skipped one at a time.
pub(crate) struct RangeDelView {
    lists: Vec<(Arc<FragmentedTombstones>, usize, AtomicUsize)>,
}

/// Whether an entry is range-deleted.
enum Cover<'a> {
    No,
    Yes,
    /// Deleted by a tombstone of a newer child: that child's entries in the fragment all are.
    Jump(&'a Fragment),
}

impl RangeDelView {
    /// `lists`: (fragments, offset of their sources among the children).
    pub fn new(lists: Vec<(Arc<FragmentedTombstones>, usize)>) -> Self {
        let lists = lists
            .into_iter()
            .filter(|(l, _)| !l.is_empty())
            .map(|(l, o)| (l, o, AtomicUsize::new(0)))
            .collect();
        RangeDelView { lists }
    }

    fn is_empty(&self) -> bool {
        self.lists.is_empty()
    }

    fn cover(&self, ukey: &[u8], seq: SeqNo, read_seq: SeqNo, child: usize) -> Cover<'_> {
        let mut covered = false;
        for (list, offset, hint) in &self.lists {
            let Some(f) = list.fragment_for_hinted(ukey, hint) else { continue };
            for &(t, src) in &f.seqs {
                if t > read_seq {
                    continue;
                }
                if t <= seq {
                    break; // newest first: the rest are older than the entry too
                }
                if offset + (src as usize) < child {
                    return Cover::Jump(f);
                }
                covered = true;
            }
        }
        if covered {
            Cover::Yes
        } else {
            Cover::No
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Direction {
    Forward,
    Reverse,
}

/// Going forward the inner iterator is at the current entry (or, after a merge, just past the
/// current user key's entries); going backward it is just before the current user key's
/// entries. `value_in_saved` tells whether the value lives in `saved_value`.
pub(crate) struct DbIter {
    inner: Box<dyn InternalIterator>,
    sequence: SeqNo,
    merge_operator: Option<Arc<dyn MergeOperator>>,
    lower_bound: Option<Vec<u8>>,
    upper_bound: Option<Vec<u8>>,
    /// Keys must start with this prefix (prefix_same_as_start); set at each seek.
    prefix: Option<Vec<u8>>,
    prefix_extractor: Option<PrefixExtractor>,
    direction: Direction,
    valid: bool,
    saved_key: Vec<u8>,
    saved_value: Vec<u8>,
    value_in_saved: bool,
    error: Option<Error>,
    operands: Vec<Vec<u8>>,
    /// Scratch for the internal key of a seek.
    seek_key: Vec<u8>,
    range_dels: Option<RangeDelView>,
    /// Inner entries examined (see [`DbIter::internal_steps`]).
    steps: u64,
    /// The user's statistics: seeks, steps, entries found and their bytes.
    statistics: Option<Arc<Statistics>>,
    /// Keeps whatever the inner iterators read from alive.
    _pin: Option<Arc<dyn std::any::Any + Send + Sync>>,
    /// Bytes every value ends with that `value` leaves out (a TTL DB's write time); an
    /// entry whose value is shorter stops the iterator with `Corruption`.
    value_suffix: usize,
    /// The order of the user keys.
    order: KeyOrder,
    /// Reads values kept in blob files.
    blobs: Option<Arc<dyn BlobFetch>>,
    /// What the current value (in `saved_value` or the inner iterator) is: a plain value
    /// (`Value`); a blob index (`BlobIndex`), whose blob `value` reads the first time it is
    /// asked for, into `blob_value`, so a scan of keys never reads a blob file; or a
    /// wide-column entity's encoding (`Entity`), checked when the iterator came to it,
    /// whose default column `value` returns and whose columns `columns` does. One field, so
    /// a plain value's step and `value` test it once.
    stored: ValueType,
    /// The blob of the current entry once read, or the error reading it (then `status`
    /// reports it, and the next move makes it the iterator's error).
    blob_value: std::cell::OnceCell<Result<Vec<u8>>>,
}

/// What a DB iterator is built with.
pub(crate) struct DbIterOptions {
    pub sequence: SeqNo,
    pub merge_operator: Option<Arc<dyn MergeOperator>>,
    pub lower_bound: Option<Vec<u8>>,
    pub upper_bound: Option<Vec<u8>>,
    /// With `prefix_same_as_start`: the DB's prefix extractor.
    pub prefix_extractor: Option<PrefixExtractor>,
    pub pin: Option<Arc<dyn std::any::Any + Send + Sync>>,
    /// Range tombstones of the inner iterator's children; `None` when there are none.
    pub range_dels: Option<RangeDelView>,
    /// Where to count the iterator's moves (none: nothing counted but the perf context).
    pub statistics: Option<Arc<Statistics>>,
    /// Bytes every value ends with that the iterator strips (`DbIter::value_suffix`).
    pub value_suffix: usize,
    /// The order of the user keys.
    pub order: KeyOrder,
    /// Reads values kept in blob files (none: the sources hold no blob index).
    pub blobs: Option<Arc<dyn BlobFetch>>,
}

impl DbIterOptions {
    /// Reads at `sequence`, with no merge operator, bounds, prefix mode, pin or tombstones.
    pub(crate) fn at(sequence: SeqNo) -> Self {
        DbIterOptions {
            sequence,
            merge_operator: None,
            lower_bound: None,
            upper_bound: None,
            prefix_extractor: None,
            pin: None,
            range_dels: None,
            statistics: None,
            value_suffix: 0,
            order: KeyOrder::Bytewise,
            blobs: None,
        }
    }
}

/// Hidden entries of one user key stepped over one by one before the forward scan seeks past
/// the rest of them (RocksDB's `max_sequential_skip_in_iterations`).
const MAX_SEQUENTIAL_SKIPS: usize = 8;

/// Builds the internal key `(ukey, seq, t)` in `buf`, the iterator's kept scratch: a seek
/// allocates nothing once the buffer has grown to the key size.
fn set_seek_key(buf: &mut Vec<u8>, ukey: &[u8], seq: SeqNo, t: ValueType) {
    buf.clear();
    append_internal_key(buf, ukey, seq, t);
}

impl DbIter {
    #[inline]
    pub fn new(inner: Box<dyn InternalIterator>, o: DbIterOptions) -> DbIter {
        DbIter {
            inner,
            sequence: o.sequence,
            merge_operator: o.merge_operator,
            lower_bound: o.lower_bound,
            upper_bound: o.upper_bound,
            prefix: None,
            prefix_extractor: o.prefix_extractor,
            direction: Direction::Forward,
            valid: false,
            saved_key: Vec::new(),
            saved_value: Vec::new(),
            value_in_saved: false,
            error: None,
            operands: Vec::new(),
            seek_key: Vec::new(),
            range_dels: o.range_dels.filter(|r| !r.is_empty()),
            steps: 0,
            statistics: o.statistics,
            _pin: o.pin,
            value_suffix: o.value_suffix,
            order: o.order,
            blobs: o.blobs,
            stored: ValueType::Value,
            blob_value: std::cell::OnceCell::new(),
        }
    }

    pub fn valid(&self) -> bool {
        self.valid
    }

    /// Inner (internal-key) entries examined since creation: how much work hidden entries
    /// (old versions, deletions, range-deleted keys) cost.
    pub fn internal_steps(&self) -> u64 {
        self.steps
    }

    /// Whether the inner iterator's current entry `(ukey, seq)` is range-deleted.
    fn range_cover(&self, ukey: &[u8], seq: SeqNo) -> Cover<'_> {
        match &self.range_dels {
            None => Cover::No,
            Some(r) => r.cover(ukey, seq, self.sequence, self.inner.current_child()),
        }
    }

    /// The current user key; requires `valid()`.
    pub fn key(&self) -> &[u8] {
        debug_assert!(self.valid);
        &self.saved_key
    }

    /// The current value; requires `valid()`. A value kept in a blob file is read here, the
    /// first time it is asked for; if that fails, the value is empty and `status` tells why.
    #[inline]
    pub fn value(&self) -> &[u8] {
        debug_assert!(self.valid);
        let v = self.stored_value();
        let v = match self.stored {
            ValueType::Value => v,
            ValueType::BlobIndex => self.blob(v),
            _ => return self.entity_default(),
        };
        &v[..v.len().saturating_sub(self.value_suffix)]
    }

    /// The default column of the current entity (out of the plain values' path).
    #[cold]
    #[inline(never)]
    fn entity_default(&self) -> &[u8] {
        // Checked by `become_valid`.
        crate::wide_columns::default_value(self.stored_value()).unwrap_or_default()
    }

    /// The current entry's columns (RocksDB's `Iterator::columns`): a wide-column entity's,
    /// or a plain value as one default column. Requires `valid()`.
    pub fn columns(&self) -> Vec<(&[u8], &[u8])> {
        debug_assert!(self.valid);
        if self.stored == ValueType::Entity {
            // Checked by `become_valid`.
            return crate::wide_columns::decode(self.stored_value()).unwrap_or_default();
        }
        vec![(crate::wide_columns::DEFAULT_COLUMN_NAME, self.value())]
    }

    /// The current entry's value as its source holds it (a blob index for a blob).
    fn stored_value(&self) -> &[u8] {
        if self.value_in_saved {
            &self.saved_value[..]
        } else {
            self.inner.value()
        }
    }

    /// The blob the index `index` of the current key points at.
    #[cold]
    fn blob(&self, index: &[u8]) -> &[u8] {
        match self.blob_value.get_or_init(|| self.fetch_blob(index)) {
            Ok(v) => v,
            Err(_) => &[],
        }
    }

    /// Forgets the current entry's blob; a failed read of it becomes the iterator's error
    /// (false: the move must not go on).
    fn leave_blob(&mut self) -> bool {
        self.stored = ValueType::Value;
        match self.blob_value.take() {
            Some(Err(e)) => {
                self.fail(e);
                false
            }
            _ => true,
        }
    }

    pub fn status(&self) -> Result<()> {
        if let Some(Err(e)) = self.blob_value.get() {
            return Err(e.duplicate());
        }
        match &self.error {
            Some(e) => Err(e.duplicate()),
            None => self.inner.status(),
        }
    }

    fn fail(&mut self, e: Error) {
        self.valid = false;
        if self.error.is_none() {
            self.error = Some(e);
        }
    }

    /// Makes the current entry the iterator's position, unless its value is too short to end
    /// with the suffix.
    #[inline(always)]
    fn become_valid(&mut self) {
        if self.stored == ValueType::Value && self.value_suffix == 0 {
            self.valid = true;
        } else {
            self.become_valid_checked();
        }
    }

    /// [`Self::become_valid`] for a blob index, an entity or a value with a suffix.
    #[cold]
    #[inline(never)]
    fn become_valid_checked(&mut self) {
        match self.stored {
            ValueType::Entity => self.become_valid_entity(),
            // A blob's length is known once it is read (`value`).
            ValueType::BlobIndex => self.valid = true,
            _ => self.become_valid_with_suffix(),
        }
    }

    /// [`Self::become_valid`] when values carry a suffix (a TTL DB): out of the common path.
    #[cold]
    #[inline(never)]
    fn become_valid_with_suffix(&mut self) {
        let len =
            if self.value_in_saved { self.saved_value.len() } else { self.inner.value().len() };
        if len < self.value_suffix {
            let k = String::from_utf8_lossy(&self.saved_key).into_owned();
            let n = self.value_suffix;
            self.fail(Error::corruption(
                "",
                0,
                format!("value of key {k:?} is {len} bytes, shorter than its {n}-byte write time"),
            ));
            return;
        }
        self.valid = true;
    }

    /// [`Self::become_valid`] at a wide-column entity: its encoding is checked once here, so
    /// `value` and `columns` need not report damage.
    #[cold]
    #[inline(never)]
    fn become_valid_entity(&mut self) {
        if let Err(e) = crate::wide_columns::decode(self.stored_value()) {
            let k = String::from_utf8_lossy(&self.saved_key).into_owned();
            self.fail(Error::corruption("", 0, format!("key {k:?}: {e}")));
            return;
        }
        self.valid = true;
    }

    fn fail_malformed(&mut self) {
        let n = self.inner.key().len();
        self.fail(Error::corruption("", 0, format!("malformed internal key of {n} bytes")));
    }

    /// Replaces the read options' bounds, `[lower, upper)`: the iterator is unpositioned
    /// until its next seek.
    pub(crate) fn set_bounds(&mut self, lower: Option<Vec<u8>>, upper: Option<Vec<u8>>) {
        (self.lower_bound, self.upper_bound) = (lower, upper);
        self.valid = false;
    }

    /// The read options' bounds: `[lower, upper)`.
    pub(crate) fn bounds(&self) -> (Option<&[u8]>, Option<&[u8]>) {
        (self.lower_bound.as_deref(), self.upper_bound.as_deref())
    }

    /// Whether this iterator would never yield `ukey` from where it was last sought: outside
    /// the bounds or, with `prefix_same_as_start`, of another prefix than the seek's.
    pub(crate) fn excludes(&self, ukey: &[u8]) -> bool {
        self.past_upper(ukey) || self.before_lower(ukey)
    }

    /// The order of the user keys.
    pub(crate) fn order(&self) -> &KeyOrder {
        &self.order
    }

    /// The family's merge operator it resolves merges with.
    pub(crate) fn merge_operator(&self) -> Option<&Arc<dyn MergeOperator>> {
        self.merge_operator.as_ref()
    }

    fn past_upper(&self, ukey: &[u8]) -> bool {
        self.upper_bound.as_deref().is_some_and(|u| !self.order.lt(ukey, u))
            || self.outside_prefix(ukey)
    }

    fn before_lower(&self, ukey: &[u8]) -> bool {
        self.lower_bound.as_deref().is_some_and(|l| self.order.lt(ukey, l))
            || self.outside_prefix(ukey)
    }

    /// With `prefix_same_as_start`: whether `ukey`'s prefix differs from the start's. Prefixes
    /// are compared as the extractor takes them (RocksDB's rule), so a key that merely starts
    /// with a short seek target, but whose own prefix is longer, is outside.
    fn outside_prefix(&self, ukey: &[u8]) -> bool {
        match (&self.prefix, self.prefix_extractor) {
            (Some(p), Some(x)) => x.prefix(ukey) != p.as_slice(),
            _ => false,
        }
    }

    fn set_prefix(&mut self, target: &[u8]) {
        self.prefix = self.prefix_extractor.map(|p| p.prefix(target).to_vec());
    }

    /// After `seek_to_first`/`seek_to_last` with `prefix_same_as_start`: the iteration stays
    /// within the prefix of the key it landed on (RocksDB's rule).
    fn take_prefix_of_current(&mut self) {
        self.prefix = None;
        if self.valid {
            if let Some(x) = self.prefix_extractor {
                self.prefix = Some(x.prefix(&self.saved_key).to_vec());
            }
        }
    }

    fn check_inner_error(&mut self) {
        if let Err(e) = self.inner.status() {
            self.fail(e);
        }
    }

    pub fn seek_to_first(&mut self) {
        let before = self.steps;
        let start = statistics::start_timer(self.statistics.as_ref());
        self.seek_to_first_uncounted();
        statistics::stop_timer(self.statistics.as_ref(), Histogram::DbSeek, start);
        self.count_move(before, Ticker::NumberDbSeek, Ticker::NumberDbSeekFound);
    }

    fn seek_to_first_uncounted(&mut self) {
        self.prefix = None;
        match &self.lower_bound {
            Some(l) => {
                set_seek_key(&mut self.seek_key, l, self.sequence, ValueType::FOR_SEEK);
                self.seek_forward();
            }
            None => {
                self.inner.seek_to_first();
                self.direction = Direction::Forward;
                self.find_next_user_entry(false);
            }
        }
        self.take_prefix_of_current();
    }

    /// Positions at the first key >= `target` (and >= the lower bound).
    pub fn seek(&mut self, target: &[u8]) {
        let before = self.steps;
        let start = statistics::start_timer(self.statistics.as_ref());
        self.seek_uncounted(target);
        statistics::stop_timer(self.statistics.as_ref(), Histogram::DbSeek, start);
        self.count_move(before, Ticker::NumberDbSeek, Ticker::NumberDbSeekFound);
    }

    fn seek_uncounted(&mut self, target: &[u8]) {
        self.set_prefix(target);
        let start = match &self.lower_bound {
            Some(l) if self.order.lt(target, l) => l.as_slice(),
            _ => target,
        };
        set_seek_key(&mut self.seek_key, start, self.sequence, ValueType::FOR_SEEK);
        self.seek_forward();
    }

    /// Seeks the inner iterator to `seek_key` and settles forward from there.
    fn seek_forward(&mut self) {
        self.error = None;
        self.direction = Direction::Forward;
        self.inner.seek(&self.seek_key);
        self.find_next_user_entry(false);
    }

    pub fn seek_to_last(&mut self) {
        let before = self.steps;
        let start = statistics::start_timer(self.statistics.as_ref());
        self.seek_to_last_uncounted();
        statistics::stop_timer(self.statistics.as_ref(), Histogram::DbSeek, start);
        self.count_move(before, Ticker::NumberDbSeek, Ticker::NumberDbSeekFound);
    }

    fn seek_to_last_uncounted(&mut self) {
        self.prefix = None;
        self.error = None;
        self.direction = Direction::Reverse;
        match &self.upper_bound {
            Some(u) => {
                // The last entry before every version of `u`.
                set_seek_key(&mut self.seek_key, u, SeqNo::MAX, ValueType::FOR_SEEK);
                self.inner.seek(&self.seek_key);
                if self.inner.valid() {
                    self.inner.prev();
                } else {
                    self.check_inner_error();
                    if self.error.is_some() {
                        return;
                    }
                    self.inner.seek_to_last();
                }
            }
            None => self.inner.seek_to_last(),
        }
        self.find_prev_user_entry();
        self.take_prefix_of_current();
    }

    /// Positions at the last key <= `target` (and < the upper bound).
    pub fn seek_for_prev(&mut self, target: &[u8]) {
        let before = self.steps;
        let start = statistics::start_timer(self.statistics.as_ref());
        self.seek_for_prev_uncounted(target);
        statistics::stop_timer(self.statistics.as_ref(), Histogram::DbSeek, start);
        self.count_move(before, Ticker::NumberDbSeek, Ticker::NumberDbSeekFound);
    }

    fn seek_for_prev_uncounted(&mut self, target: &[u8]) {
        self.set_prefix(target);
        if let Some(u) = self.upper_bound.as_deref() {
            if !self.order.lt(target, u) {
                let saved_prefix = self.prefix.take();
                self.seek_to_last_uncounted();
                self.prefix = saved_prefix;
                if self.valid && self.before_lower(&self.saved_key) {
                    self.valid = false;
                }
                return;
            }
        }
        self.error = None;
        self.direction = Direction::Reverse;
        // The last internal key of `target` has sequence 0 and the smallest type.
        set_seek_key(&mut self.seek_key, target, SeqNo::ZERO, ValueType::Deletion);
        self.inner.seek_for_prev(&self.seek_key);
        self.find_prev_user_entry();
    }

    pub fn next(&mut self) {
        // A forward step re-reads the entry it is at (the current key's newest) first: not
        // an entry skipped.
        let reread = u64::from(self.direction == Direction::Forward);
        let before = self.steps + reread;
        self.next_uncounted();
        self.count_move(before, Ticker::NumberDbNext, Ticker::NumberDbNextFound);
    }

    fn next_uncounted(&mut self) {
        debug_assert!(self.valid);
        if !self.leave_blob() {
            return;
        }
        if self.direction == Direction::Reverse {
            self.direction = Direction::Forward;
            // The inner iterator is before the current key's entries: step onto them. With
            // range tombstones it may be far before them (children jumped over deleted
            // ranges), so seek instead.
            if self.range_dels.is_some() {
                let k = make_internal_key(&self.saved_key, SeqNo::MAX, ValueType::FOR_SEEK);
                self.inner.seek(&k);
            } else if self.inner.valid() {
                self.inner.next();
            } else {
                self.check_inner_error();
                if self.error.is_some() {
                    return;
                }
                self.inner.seek_to_first();
            }
        }
        self.find_next_user_entry(true);
    }

    pub fn prev(&mut self) {
        let before = self.steps;
        self.prev_uncounted();
        self.count_move(before, Ticker::NumberDbPrev, Ticker::NumberDbPrevFound);
    }

    /// Counts a move that began at `steps_before` internal steps: in this thread's perf
    /// context the entries stepped over and the bytes found, in the statistics the move
    /// (`moved`), whether it found an entry (`found`) and its bytes.
    #[inline]
    fn count_move(&self, steps_before: u64, moved: Ticker, found: Ticker) {
        // A blob not read yet counts as its index: counting must not read it.
        let value_len = if self.stored == ValueType::BlobIndex && self.blob_value.get().is_none() {
            self.stored_value().len()
        } else if self.valid {
            self.value().len()
        } else {
            0
        };
        let bytes = if self.valid { (self.key().len() + value_len) as u64 } else { 0 };
        let landed = u64::from(self.valid);
        let skipped = self.steps.saturating_sub(steps_before).saturating_sub(landed);
        perf_context::count(PerfMetric::InternalKeySkippedCount, skipped);
        perf_context::count(PerfMetric::IterReadBytes, bytes);
        if let Some(s) = &self.statistics {
            s.tick(moved, 1);
            if self.valid {
                s.tick(found, 1);
                s.tick(Ticker::IterBytesRead, bytes);
            }
        }
    }

    fn prev_uncounted(&mut self) {
        debug_assert!(self.valid);
        if !self.leave_blob() {
            return;
        }
        if self.direction == Direction::Forward {
            // Move the inner iterator before every entry of the current key.
            if !self.inner.valid() {
                self.check_inner_error();
                if self.error.is_some() {
                    return;
                }
                self.inner.seek_to_last();
            }
            while self.inner.valid() {
                let Some(p) = parse_internal_key(self.inner.key()) else {
                    self.fail_malformed();
                    return;
                };
                if self.order.lt(p.user_key, &self.saved_key) {
                    break;
                }
                self.inner.prev();
            }
            self.direction = Direction::Reverse;
        }
        self.find_prev_user_entry();
    }

    /// Moves forward to the next visible entry. With `skipping`, entries of user keys up to
    /// `saved_key` are hidden (they belong to the current key or a deleted one).
    fn find_next_user_entry(&mut self, mut skipping: bool) {
        self.valid = false;
        self.value_in_saved = false;
        self.stored = ValueType::Value;
        self.blob_value = std::cell::OnceCell::new();
        let mut hidden_run = 0usize;
        while self.inner.valid() {
            self.steps += 1;
            let sequence = self.sequence;
            let Some(p) = parse_internal_key(self.inner.key()) else {
                self.fail_malformed();
                return;
            };
            if p.seq > sequence {
                self.inner.next();
                continue;
            }
            if skipping && self.order.le(p.user_key, &self.saved_key) {
                hidden_run += 1;
                if hidden_run > MAX_SEQUENTIAL_SKIPS && p.user_key == self.saved_key.as_slice() {
                    // Many older versions of the key just passed (a hot key's overwrites in
                    // the memtable): one seek past its last possible entry instead of a step
                    // per version.
                    hidden_run = 0;
                    set_seek_key(
                        &mut self.seek_key,
                        &self.saved_key,
                        SeqNo::ZERO,
                        ValueType::Deletion,
                    );
                    self.inner.seek(&self.seek_key);
                    continue;
                }
                self.inner.next();
                continue;
            }
            if self.past_upper(p.user_key) {
                return;
            }
            match self.range_cover(p.user_key, p.seq) {
                Cover::No => {}
                Cover::Yes => {
                    self.inner.next();
                    continue;
                }
                Cover::Jump(f) => {
                    let target = make_internal_key(&f.end, SeqNo::MAX, ValueType::FOR_SEEK);
                    if !self.inner.seek_current_child(&target, true) {
                        self.inner.next();
                    }
                    continue;
                }
            }
            match p.value_type {
                ValueType::Deletion | ValueType::SingleDeletion => {
                    self.saved_key.clear();
                    self.saved_key.extend_from_slice(p.user_key);
                    skipping = true;
                    self.inner.next();
                }
                ValueType::Value | ValueType::BlobIndex | ValueType::Entity => {
                    self.saved_key.clear();
                    self.saved_key.extend_from_slice(p.user_key);
                    self.stored = p.value_type;
                    self.become_valid();
                    return;
                }
                ValueType::Merge => {
                    self.saved_key.clear();
                    self.saved_key.extend_from_slice(p.user_key);
                    self.merge_forward();
                    return;
                }
                ValueType::RangeDeletion => self.inner.next(),
            }
        }
        self.check_inner_error();
    }

    /// At the newest visible merge operand of `saved_key`: collects operands forward until a
    /// base value, a deletion or another key, and leaves the merged value in `saved_value`.
    fn merge_forward(&mut self) {
        let Some(op) = self.merge_operator.clone() else {
            let k = String::from_utf8_lossy(&self.saved_key).into_owned();
            self.fail(Error::InvalidArgument(format!(
                "key {k:?} holds merge operands but no merge operator is configured"
            )));
            return;
        };
        self.operands.clear();
        self.operands.push(self.inner.value().to_vec());
        self.inner.next();
        let mut base: Option<Vec<u8>> = None;
        let mut entity: Option<Vec<u8>> = None;
        while self.inner.valid() {
            let Some(p) = parse_internal_key(self.inner.key()) else {
                self.fail_malformed();
                return;
            };
            if p.user_key != self.saved_key.as_slice() {
                break;
            }
            self.steps += 1;
            if !matches!(self.range_cover(p.user_key, p.seq), Cover::No) {
                break; // range-deleted: a deletion ends the operands
            }
            match p.value_type {
                ValueType::Merge => {
                    let v = self.inner.value().to_vec();
                    self.operands.push(v);
                    self.inner.next();
                }
                ValueType::Value => {
                    base = Some(self.inner.value().to_vec());
                    self.inner.next();
                    break;
                }
                ValueType::BlobIndex => {
                    match self.fetch_blob(self.inner.value()) {
                        Ok(v) => base = Some(v),
                        Err(e) => {
                            self.fail(e);
                            return;
                        }
                    }
                    self.inner.next();
                    break;
                }
                ValueType::Entity => {
                    match crate::wide_columns::default_value(self.inner.value()) {
                        Ok(d) => base = Some(d.to_vec()),
                        Err(e) => {
                            self.fail(e);
                            return;
                        }
                    }
                    entity = Some(self.inner.value().to_vec());
                    self.inner.next();
                    break;
                }
                ValueType::Deletion | ValueType::SingleDeletion => {
                    self.inner.next();
                    break;
                }
                ValueType::RangeDeletion => self.inner.next(),
            }
        }
        self.check_inner_error();
        if self.error.is_some() {
            return;
        }
        self.operands.reverse();
        self.finish_merge(&*op, base.as_deref(), entity.as_deref());
    }

    /// Reads the blob `index` of the current key (for `value`, or a merge's base value).
    fn fetch_blob(&self, index: &[u8]) -> Result<Vec<u8>> {
        match &self.blobs {
            Some(b) => b.fetch(&self.saved_key, index),
            None => Err(super::no_blob_source(&self.saved_key)),
        }
    }

    /// Merges the operands onto `base`; onto a wide-column `entity`'s default column (then
    /// `base`), the current value is the entity with the merged default column.
    fn finish_merge(&mut self, op: &dyn MergeOperator, base: Option<&[u8]>, entity: Option<&[u8]>) {
        let ops: Vec<&[u8]> = self.operands.iter().map(Vec::as_slice).collect();
        match op.full_merge(&self.saved_key, base, &ops) {
            Some(v) => {
                self.saved_value = match entity {
                    Some(e) => match crate::wide_columns::with_default_value(e, &v) {
                        Ok(merged) => merged,
                        Err(err) => return self.fail(err),
                    },
                    None => v,
                };
                self.stored = if entity.is_some() { ValueType::Entity } else { ValueType::Value };
                self.value_in_saved = true;
                self.become_valid();
            }
            None => {
                let k = String::from_utf8_lossy(&self.saved_key).into_owned();
                self.fail(Error::corruption(
                    "",
                    0,
                    format!("Merge operator failed: {} on key {k:?}", op.name()),
                ));
            }
        }
    }

    /// Moves backward to the previous visible entry: scans the entries of one user key
    /// (oldest first) to find its visible state, skipping keys whose state is deleted.
    fn find_prev_user_entry(&mut self) {
        #[derive(PartialEq)]
        enum State {
            Deleted,
            Value,
            Merged,
        }
        self.valid = false;
        self.value_in_saved = true;
        self.stored = ValueType::Value;
        self.blob_value = std::cell::OnceCell::new();
        let mut state = State::Deleted;
        // The newest base value seen for the current key lives in `saved_value` (a blob
        // index or an entity as `base_type` says).
        let mut has_base = false;
        let mut base_type = ValueType::Value;
        self.operands.clear();
        while self.inner.valid() {
            self.steps += 1;
            let sequence = self.sequence;
            let Some(p) = parse_internal_key(self.inner.key()) else {
                self.fail_malformed();
                return;
            };
            if p.seq <= sequence && p.value_type != ValueType::RangeDeletion {
                if state != State::Deleted && self.order.lt(p.user_key, &self.saved_key) {
                    break; // the current key is decided; this entry belongs to an older key
                }
                if self.before_lower(p.user_key) {
                    break; // nothing at or below this key is in range
                }
                if p.user_key != self.saved_key.as_slice() {
                    // Starting a new key (the previous candidate was deleted).
                    has_base = false;
                    self.operands.clear();
                    self.saved_key.clear();
                    self.saved_key.extend_from_slice(p.user_key);
                }
                let jump = match self.range_cover(p.user_key, p.seq) {
                    Cover::No => None,
                    Cover::Yes => Some(None),
                    Cover::Jump(f) => {
                        Some(Some(make_internal_key(&f.start, SeqNo::MAX, ValueType::FOR_SEEK)))
                    }
                };
                if let Some(jump) = jump {
                    // Range-deleted: like a deletion of this key.
                    state = State::Deleted;
                    has_base = false;
                    self.operands.clear();
                    if let Some(target) = jump {
                        if self.inner.seek_current_child(&target, false) {
                            continue;
                        }
                    }
                    self.inner.prev();
                    continue;
                }
                match p.value_type {
                    ValueType::Deletion | ValueType::SingleDeletion => {
                        state = State::Deleted;
                        has_base = false;
                        self.operands.clear();
                    }
                    ValueType::Value | ValueType::BlobIndex | ValueType::Entity => {
                        state = State::Value;
                        has_base = true;
                        base_type = p.value_type;
                        self.saved_value.clear();
                        self.saved_value.extend_from_slice(self.inner.value());
                        self.operands.clear();
                    }
                    ValueType::Merge => {
                        state = State::Merged;
                        self.operands.push(self.inner.value().to_vec());
                    }
                    ValueType::RangeDeletion => {}
                }
            }
            self.inner.prev();
        }
        self.check_inner_error();
        if self.error.is_some() || state == State::Deleted {
            return;
        }
        if self.before_lower(&self.saved_key) || self.past_upper(&self.saved_key) {
            return;
        }
        if self.operands.is_empty() {
            // A plain value (or blob index), already in `saved_value`.
            self.stored = base_type;
            self.become_valid();
            return;
        }
        let Some(op) = self.merge_operator.clone() else {
            let k = String::from_utf8_lossy(&self.saved_key).into_owned();
            self.fail(Error::InvalidArgument(format!(
                "key {k:?} holds merge operands but no merge operator is configured"
            )));
            return;
        };
        let mut base = has_base.then(|| std::mem::take(&mut self.saved_value));
        if let (ValueType::BlobIndex, Some(index)) = (base_type, &base) {
            match self.fetch_blob(index) {
                Ok(v) => base = Some(v),
                Err(e) => {
                    self.fail(e);
                    return;
                }
            }
        }
        let mut entity = None;
        if has_base && base_type == ValueType::Entity {
            entity = base.take();
            match crate::wide_columns::default_value(entity.as_deref().unwrap_or_default()) {
                Ok(d) => base = Some(d.to_vec()),
                Err(e) => return self.fail(e),
            }
        }
        self.finish_merge(&*op, base.as_deref(), entity.as_deref());
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::iterator::conformance::VecIter;
    use crate::key::compare_internal;
    use crate::merge_operator::builtin_merge_operator;

    /// Stepping from a key with thousands of older versions to the next key seeks past the
    /// versions instead of visiting each (1000+ steps without the reseek).
    #[test]
    fn many_hidden_versions_are_jumped_with_a_seek() {
        let mut entries = Vec::new();
        for seq in 1..=1000u64 {
            entries.push((make_internal_key(b"a", SeqNo(seq), ValueType::Value), b"v".to_vec()));
        }
        entries.push((make_internal_key(b"b", SeqNo(1001), ValueType::Value), b"w".to_vec()));
        entries.sort_by(|x, y| compare_internal(&x.0, &y.0));
        let mut it = DbIter::new(Box::new(VecIter::new(entries)), DbIterOptions::at(SeqNo(2000)));
        it.seek_to_first();
        assert!(it.valid());
        assert_eq!(it.key(), b"a");
        assert_eq!(it.value(), b"v");
        it.next();
        assert!(it.valid());
        assert_eq!(it.key(), b"b");
        assert!(it.internal_steps() < 30, "{} steps", it.internal_steps());
        it.next();
        assert!(!it.valid());
    }

    /// Random histories of puts, deletes and merges (stringappend) on few keys; the DB
    /// iterator at several sequence numbers must agree with a model built by replaying the
    /// history up to that sequence.
    #[test]
    fn matches_model_at_every_snapshot_with_bounds() {
        let mut rng = 0x1234_5678_u64;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let op = builtin_merge_operator("stringappend").unwrap();
        for round in 0..60 {
            let nkeys = 1 + next() % 12;
            let nops = next() % 80;
            let mut entries = Vec::new();
            let mut history = Vec::new();
            for seq in 1..=nops {
                let k = format!("k{:02}", next() % nkeys).into_bytes();
                let t = match next() % 6 {
                    0 => ValueType::Deletion,
                    1 | 2 => ValueType::Merge,
                    _ => ValueType::Value,
                };
                let v = if t == ValueType::Deletion {
                    Vec::new()
                } else {
                    format!("{seq}").into_bytes()
                };
                entries.push((make_internal_key(&k, SeqNo(seq), t), v.clone()));
                history.push((k, t, v));
            }
            entries.sort_by(|a, b| compare_internal(&a.0, &b.0));
            for snap in [0, nops / 3, nops / 2, nops] {
                let mut model: BTreeMap<Vec<u8>, Option<Vec<u8>>> = BTreeMap::new();
                for (k, t, v) in history.iter().take(snap as usize) {
                    let cur = model.get(k).cloned().flatten();
                    let new = match t {
                        ValueType::Deletion => None,
                        ValueType::Value => Some(v.clone()),
                        _ => op.full_merge(k, cur.as_deref(), &[v.as_slice()]),
                    };
                    model.insert(k.clone(), new);
                }
                let model: Vec<(Vec<u8>, Vec<u8>)> =
                    model.into_iter().filter_map(|(k, v)| v.map(|v| (k, v))).collect();
                for (lo, hi) in [
                    (None, None),
                    (Some(b"k03".to_vec()), None),
                    (None, Some(b"k07".to_vec())),
                    (Some(b"k02".to_vec()), Some(b"k05".to_vec())),
                ] {
                    let expect: Vec<(Vec<u8>, Vec<u8>)> = model
                        .iter()
                        .filter(|(k, _)| {
                            lo.as_ref().is_none_or(|l| k >= l) && hi.as_ref().is_none_or(|h| k < h)
                        })
                        .cloned()
                        .collect();
                    let mut it = DbIter::new(
                        Box::new(VecIter::new(entries.clone())),
                        DbIterOptions {
                            merge_operator: Some(op.clone()),
                            lower_bound: lo.clone(),
                            upper_bound: hi.clone(),
                            ..DbIterOptions::at(SeqNo(snap))
                        },
                    );
                    check_user_iterator(&mut it, &expect, round);
                }
            }
        }
    }

    /// Forward, backward, seeks and direction changes against a sorted model of user keys.
    pub(crate) fn check_user_iterator(it: &mut DbIter, model: &[(Vec<u8>, Vec<u8>)], ctx: u64) {
        let collect_fwd = |it: &mut DbIter| {
            let mut v = Vec::new();
            while it.valid() {
                v.push((it.key().to_vec(), it.value().to_vec()));
                it.next();
            }
            v
        };
        it.seek_to_first();
        assert_eq!(collect_fwd(it), model, "forward {ctx}");
        it.status().unwrap();
        it.seek_to_last();
        let mut back = Vec::new();
        while it.valid() {
            back.push((it.key().to_vec(), it.value().to_vec()));
            it.prev();
        }
        back.reverse();
        assert_eq!(back, model, "backward {ctx}");
        let mut targets: Vec<Vec<u8>> = model.iter().map(|(k, _)| k.clone()).collect();
        targets.extend([
            b"".to_vec(),
            b"k".to_vec(),
            b"k05x".to_vec(),
            b"z".to_vec(),
            b"k00".to_vec(),
        ]);
        for t in &targets {
            let ge = model.partition_point(|(k, _)| k < t);
            it.seek(t);
            assert_eq!(it.valid(), ge < model.len(), "seek {t:?} {ctx}");
            if ge < model.len() {
                assert_eq!(it.key(), model[ge].0.as_slice());
                assert_eq!(it.value(), model[ge].1.as_slice());
                it.prev();
                assert_eq!(it.valid(), ge > 0, "seek+prev {ctx}");
                if ge > 0 {
                    assert_eq!(it.key(), model[ge - 1].0.as_slice());
                    it.next();
                    assert_eq!(it.key(), model[ge].0.as_slice(), "seek+prev+next {ctx}");
                }
            }
            let le = model.partition_point(|(k, _)| k <= t);
            it.seek_for_prev(t);
            assert_eq!(it.valid(), le > 0, "seek_for_prev {t:?} {ctx}");
            if le > 0 {
                assert_eq!(it.key(), model[le - 1].0.as_slice());
                assert_eq!(it.value(), model[le - 1].1.as_slice());
                it.next();
                assert_eq!(it.valid(), le < model.len(), "sfp+next {ctx}");
                if le < model.len() {
                    assert_eq!(it.key(), model[le].0.as_slice());
                    it.prev();
                    assert_eq!(it.key(), model[le - 1].0.as_slice(), "sfp+next+prev {ctx}");
                }
            }
        }
    }
}
