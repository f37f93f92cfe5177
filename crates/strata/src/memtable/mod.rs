//! The memtable: recent writes, sorted by internal key, in an arena-backed skiplist.
//!
//! Two representations, chosen per family (`Options::set_memtable_factory`): the skiplist,
//! linked as entries arrive, a batch at a time across writes (`LINK_BATCH`), and before
//! any read (the default, any load: `skiplist.rs`, "Batches across writes"), and the vector
//! (`MemtableFactory::Vector`, for bulk loads): entries are appended unlinked and sorted
//! into the same skiplist when something first reads them, a get, an iterator or the flush
//! (`skiplist.rs`, "Deferred linking"). Reads of a vector memtable under writes pay that
//! sort each time new entries are pending, as RocksDB's vector memtable does.
//!
//! Why our own skiplist rather than a crate or a `BTreeMap` behind a lock:
//! - memory layout and accounting: each entry is one arena allocation holding its links, key and
//!   value, copied exactly once; the DB decides when to flush from
//!   [`MemTable::approximate_memory_usage`], which is one atomic load;
//! - concurrency model: several writers insert at once (write groups in flight, and group
//!   members inserting their own batches with `allow_concurrent_memtable_write`), linking with
//!   compare-and-swap; readers walk the list without a lock once they have linked what was
//!   pending (iterators, the flush) or taken it under a short lock to merge into their walk
//!   (gets; one atomic load when nothing is pending), and no writer waits for a reader beyond
//!   that lock;
//! - no per-entry heap allocation and no per-entry drop: the arena is freed in one go when the
//!   last reference to the memtable (the DB's or an iterator's `Arc`) goes away.
//!
//! Files: `arena.rs` (chunk allocator), `skiplist.rs` (node layout and publication protocol),
//! `iter.rs` ([`MemTableIterator`]), `bloom.rs` (the optional whole-key filter point lookups
//! probe first).

mod arena;
mod bloom;
mod iter;
mod prefault;
mod skiplist;
mod sync;
pub mod write_buffer_manager;

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;

use bloom::MemBloom;
pub(crate) use iter::MemTableIterator;
use skiplist::SkipList;
use write_buffer_manager::MemoryTracker;
pub use write_buffer_manager::WriteBufferManager;

use crate::comparator::KeyOrder;
use crate::error::{Error, Result};
use crate::key::pack_trailer;
use crate::range_del::{FragmentedTombstones, RangeTombstone};
use crate::types::{SeqNo, ValueType};

/// An in-memory sorted buffer of internal-key entries. `Send + Sync`: any number of threads may
/// read while one writes.
pub struct MemTable {
    list: SkipList,
    /// Whole-key filter of the point entries' user keys (`bloom.rs`), when configured.
    bloom: Option<MemBloom>,
    num_entries: AtomicU64,
    num_deletes: AtomicU64,
    /// Smallest sequence number added; `u64::MAX` while empty (never a valid `SeqNo`).
    first_seqno: AtomicU64,
    /// The DB's last sequence number when this memtable became its family's active one:
    /// every write of the family published after it is here or in a newer memtable (the
    /// switch drains the write pipeline first). `u64::MAX` when not known.
    earliest_seqno: AtomicU64,
    /// Largest sequence number added plus one; 0 while empty.
    largest_seqno_plus1: AtomicU64,
    /// Range tombstones live beside the skiplist, never in it. `has_range_dels` lets reads of
    /// a memtable without tombstones skip the lock.
    has_range_dels: AtomicBool,
    range_dels: RwLock<MemRangeDels>,
    /// Bytes held by the tombstones (written under the `range_dels` lock).
    range_del_bytes: AtomicUsize,
    /// Some entry was written with the WAL disabled: this memtable is the only copy of it, so
    /// a clean close must flush it.
    unlogged: AtomicBool,
    /// The order of the keys.
    order: KeyOrder,
    /// What the DB keeps with this memtable and lets go with it: the blob file its values
    /// written at commit went to (`db/blob_log.rs`), which must stay readable for as long as
    /// any reader holds the memtable. Set once, by the writer that first needs it.
    attachment: std::sync::OnceLock<Arc<dyn std::any::Any + Send + Sync>>,
}

#[derive(Default)]
struct MemRangeDels {
    /// Reports the tombstones' bytes (and the filter's) to the write buffer manager the
    /// skiplist's arena reports to, so that they count in the budget as the entries do.
    tracker: Option<MemoryTracker>,
    list: Vec<RangeTombstone>,
    /// `list` fragmented, built on first use after a change.
    fragmented: Option<Arc<FragmentedTombstones>>,
}

impl Default for MemTable {
    fn default() -> Self {
        Self::new()
    }
}

impl MemTable {
    pub fn new() -> MemTable {
        Self::with_budget(None, 0, KeyOrder::Bytewise)
    }

    /// A memtable whose memory counts in `manager`'s budget (`write_buffer_manager.rs`), with
    /// a whole-key Bloom filter of about `bloom_bytes` bytes (none when 0) that [`Self::get`]
    /// probes first. The filter's bytes count in [`Self::approximate_memory_usage`] (and so
    /// in the write buffer's size) and in the manager's budget.
    /// Keys are kept in `order`.
    pub fn with_budget(
        manager: Option<&Arc<WriteBufferManager>>,
        bloom_bytes: usize,
        order: KeyOrder,
    ) -> MemTable {
        Self::with_rep(manager, bloom_bytes, order, false, 0)
    }

    /// [`Self::with_budget`], as a vector memtable when `vector` (the module's text), sized
    /// for `capacity` bytes (its write buffer): a large one takes its memory in huge-page
    /// chunks (`arena.rs`, `chunk_for`).
    pub fn with_rep(
        manager: Option<&Arc<WriteBufferManager>>,
        bloom_bytes: usize,
        order: KeyOrder,
        vector: bool,
        capacity: usize,
    ) -> MemTable {
        let chunk = arena::chunk_for(capacity);
        let bloom = (bloom_bytes > 0).then(|| MemBloom::with_bytes(bloom_bytes));
        // The filter counts in the manager's budget with the tombstones (side allocations).
        let mut side_tracker = manager.map(|m| MemoryTracker::new(m.clone()));
        if let (Some(t), Some(b)) = (&mut side_tracker, &bloom) {
            t.allocated(b.size());
        }
        let tracker = manager.map(|m| MemoryTracker::new(m.clone()));
        MemTable {
            list: if vector {
                SkipList::deferred(tracker, order.clone(), chunk)
            } else {
                SkipList::batched(tracker, order.clone(), chunk)
            },
            bloom,
            num_entries: AtomicU64::new(0),
            num_deletes: AtomicU64::new(0),
            first_seqno: AtomicU64::new(u64::MAX),
            earliest_seqno: AtomicU64::new(u64::MAX),
            largest_seqno_plus1: AtomicU64::new(0),
            has_range_dels: AtomicBool::new(false),
            range_dels: RwLock::new(MemRangeDels {
                tracker: side_tracker,
                ..MemRangeDels::default()
            }),
            range_del_bytes: AtomicUsize::new(0),
            unlogged: AtomicBool::new(false),
            order,
            attachment: std::sync::OnceLock::new(),
        }
    }

    /// The attachment (see the field), set by `init` if there is none yet.
    pub(crate) fn attachment_or_init(
        &self,
        init: impl FnOnce() -> Arc<dyn std::any::Any + Send + Sync>,
    ) -> &Arc<dyn std::any::Any + Send + Sync> {
        self.attachment.get_or_init(init)
    }

    /// The attachment, if one was set.
    pub(crate) fn attachment(&self) -> Option<&Arc<dyn std::any::Any + Send + Sync>> {
        self.attachment.get()
    }

    /// The memtable takes no more writes (it was switched out, to be flushed): its memory
    /// leaves its write buffer manager's mutable count. Idempotent.
    pub fn mark_immutable(&self) {
        self.list.mark_immutable();
        if let Some(t) = &mut self.range_dels.write().tracker {
            t.mark_immutable();
        }
    }

    /// Records that an entry of this memtable skipped the WAL.
    pub fn mark_unlogged(&self) {
        self.unlogged.store(true, Ordering::Release);
    }

    /// Whether an entry of this memtable skipped the WAL (it then exists nowhere else until
    /// the memtable is flushed).
    pub fn has_unlogged(&self) -> bool {
        self.unlogged.load(Ordering::Acquire)
    }

    /// Inserts one entry; see [`Self::add_batch`].
    #[cfg(test)]
    pub fn add(&self, seq: SeqNo, t: ValueType, user_key: &[u8], value: &[u8]) {
        self.add_batch(seq, std::iter::once((t, user_key, value)));
    }

    /// Inserts `entries` at consecutive sequence numbers from `first`; returns how many. Safe
    /// to call from any number of threads at once (the skiplist links with compare-and-swap);
    /// readers see each entry complete or not at all. The statistics are updated once per
    /// call, after the entries are in. The entries are linked several at a time, their
    /// searches interleaved, with those of earlier calls still waiting (`skiplist.rs`,
    /// "Batches across writes"): at the end of the call when a batch is due. Every read finds
    /// what waits (an iterator links it first, a point read merges it into its walk).
    ///
    /// The DB gives every entry a unique sequence number. Should the same internal key (user
    /// key, seq and type) be added twice anyway, both entries are kept: forward iteration and
    /// `get` see the later one first, then the earlier; backwards, `prev` from either steps to
    /// the entry before both.
    ///
    /// Panics if `user_key.len() + 8` or `value.len()` exceeds `u32::MAX` (the DB rejects such
    /// writes earlier).
    ///
    /// A `RangeDeletion` (key = start, value = exclusive end) goes to the tombstone list; an
    /// empty range (start >= end) is dropped.
    pub fn add_batch<'a>(
        &self,
        first: SeqNo,
        entries: impl IntoIterator<Item = (ValueType, &'a [u8], &'a [u8])>,
    ) -> u64 {
        let n = self.add_batch_unlinked(first, entries);
        self.link_due();
        n
    }

    /// [`Self::add_batch`] without its link: the caller calls [`Self::link_due`] after (the
    /// DB's write path, once the write is published). Until something links them, reads find
    /// them all the same (`skiplist.rs`, "Batches across writes").
    pub(crate) fn add_batch_unlinked<'a>(
        &self,
        first: SeqNo,
        entries: impl IntoIterator<Item = (ValueType, &'a [u8], &'a [u8])>,
    ) -> u64 {
        let (mut n, mut points, mut deletes) = (0u64, 0u64, 0u64);
        self.list.with_splice(|splice| {
            for (t, user_key, value) in entries {
                let seq = SeqNo(first.0 + n);
                n += 1;
                if t == ValueType::RangeDeletion {
                    self.add_range_tombstone(seq, user_key, value);
                    continue;
                }
                // Located before the insert, set after it, before the call returns (so before
                // the DB publishes the entry): `bloom.rs`, "Concurrency contract".
                let slot = self.bloom.as_ref().map(|b| (b, b.slot(user_key)));
                let trailer = pack_trailer(seq, t).to_le_bytes();
                self.list.add(splice, user_key, &trailer, value);
                if let Some((b, slot)) = slot {
                    b.add(slot);
                }
                points += 1;
                if matches!(t, ValueType::Deletion | ValueType::SingleDeletion) {
                    deletes += 1;
                }
            }
        });
        if n == 0 {
            return 0;
        }
        self.num_entries.fetch_add(points, Ordering::Relaxed);
        if deletes > 0 {
            self.num_deletes.fetch_add(deletes, Ordering::Relaxed);
        }
        // Read first: after the first batch the minimum rarely moves, so most calls make one
        // atomic read-modify-write here, not two.
        if first.0 < self.first_seqno.load(Ordering::Relaxed) {
            self.first_seqno.fetch_min(first.0, Ordering::Relaxed);
        }
        if first.0 + n > self.largest_seqno_plus1.load(Ordering::Relaxed) {
            self.largest_seqno_plus1.fetch_max(first.0 + n, Ordering::Relaxed);
        }
        n
    }

    /// Links the entries waiting to be linked once a whole batch of them waits, unless another
    /// thread is linking (it never waits for one). One atomic load while none is due.
    #[inline]
    pub(crate) fn link_due(&self) {
        self.list.link_due();
    }

    /// An error when the key order (a user comparator) panicked while entries were linked
    /// (`skiplist.rs`, `Deferred::poisoned`): some entries are then unreachable, so the
    /// memtable's iterators and the DB's point reads through it fail (a flush with them: the
    /// WAL keeps those entries) and the DB takes no more writes.
    #[inline]
    pub(crate) fn check_sound(&self) -> Result<()> {
        if self.is_poisoned() {
            return Err(poisoned());
        }
        Ok(())
    }

    /// Whether [`Self::check_sound`] fails.
    #[inline]
    pub(crate) fn is_poisoned(&self) -> bool {
        self.list.is_poisoned()
    }

    fn add_range_tombstone(&self, seq: SeqNo, start: &[u8], end: &[u8]) {
        if !self.order.lt(start, end) {
            return;
        }
        let mut r = self.range_dels.write();
        let bytes = start.len() + end.len() + std::mem::size_of::<RangeTombstone>();
        self.range_del_bytes.fetch_add(bytes, Ordering::Relaxed);
        if let Some(t) = &mut r.tracker {
            t.allocated(bytes);
        }
        r.list.push(RangeTombstone::new(start, end, seq));
        r.fragmented = None;
        self.has_range_dels.store(true, Ordering::Release);
    }

    /// True when the memtable holds range tombstones.
    #[inline]
    pub fn has_range_tombstones(&self) -> bool {
        self.has_range_dels.load(Ordering::Acquire)
    }

    /// The tombstones, in insertion order.
    pub fn range_tombstones(&self) -> Vec<RangeTombstone> {
        if !self.has_range_tombstones() {
            return Vec::new();
        }
        self.range_dels.read().list.clone()
    }

    /// The tombstones fragmented with source `source`, `None` when there are none. Cached
    /// until the next tombstone is added.
    pub fn fragmented_range_tombstones(&self) -> Option<Arc<FragmentedTombstones>> {
        if !self.has_range_tombstones() {
            return None;
        }
        if let Some(f) = &self.range_dels.read().fragmented {
            return Some(f.clone());
        }
        let mut w = self.range_dels.write();
        if let Some(f) = &w.fragmented {
            return Some(f.clone());
        }
        let f = Arc::new(FragmentedTombstones::from_tombstones(&w.list, 0, &self.order));
        w.fragmented = Some(f.clone());
        Some(f)
    }

    /// Calls `f(ikey, value)` for entries starting at the first entry `>= lookup_ikey` (an
    /// internal key, see [`crate::key::lookup_key`]), in order, until `f` returns false or the
    /// entries end. Allocates nothing; lock-free unless entries wait to be linked (it then takes
    /// the list's pending lock, to merge them into its walk: `SkipList::visit_from`).
    ///
    /// With a filter, entries of other user keys are not visited when the filter rules the
    /// lookup's user key out: callers read only the entries of that key.
    ///
    /// A memtable with no point entries is not searched (a freshly switched one, under a
    /// read-mostly load): the count sits beside the fields read anyway, where the filter or the
    /// list's head would each be a cache miss. Sound for any reader that may see an entry:
    /// `add_batch` counts a batch before it returns, and its entries become visible to other
    /// threads only through the sequence number the writer publishes after that (with
    /// `unordered_write` a reader may miss a published group still being inserted, counted or
    /// not, as that option allows).
    pub fn get(&self, lookup_ikey: &[u8], mut f: impl FnMut(&[u8], &[u8]) -> bool) {
        if self.num_entries.load(Ordering::Relaxed) == 0 {
            return;
        }
        if let Some(b) = &self.bloom {
            if !b.may_contain(crate::key::user_key(lookup_ikey)) {
                crate::perf_context::count(
                    crate::perf_context::PerfMetric::BloomMemtableMissCount,
                    1,
                );
                return;
            }
            crate::perf_context::count(crate::perf_context::PerfMetric::BloomMemtableHitCount, 1);
        }
        self.list.visit_from(lookup_ikey, |n| f(n.key(), n.value()));
    }

    /// An iterator that keeps the memtable alive (it owns an `Arc`). It sees every entry
    /// published before each of its positioning calls, and possibly later ones.
    pub fn iter(self: &Arc<Self>) -> MemTableIterator {
        self.list.settle();
        MemTableIterator::new(Arc::clone(self))
    }

    /// Arena bytes in use plus this struct plus the range tombstones; two atomic loads. Tracks
    /// resident memory (see the arena's doc): the arena reserves memory in 1 MiB chunks,
    /// touched as it is used.
    pub fn approximate_memory_usage(&self) -> usize {
        self.list.memory_usage()
            + std::mem::size_of::<Self>()
            + self.bloom.as_ref().map_or(0, MemBloom::size)
            + self.range_del_bytes.load(Ordering::Relaxed)
    }

    pub fn num_entries(&self) -> u64 {
        self.num_entries.load(Ordering::Relaxed)
    }

    /// About how many entries lie between the internal keys `start` (inclusive) and `end`
    /// (exclusive), and about how many bytes they hold (RocksDB's `ApproximateStats`): the
    /// skiplist's estimate ([`SkipList::estimate_between`]), at most the entries held, and
    /// that count times the arena bytes per entry.
    pub(crate) fn approximate_stats(&self, start: &[u8], end: &[u8]) -> (u64, u64) {
        let list = self.skiplist();
        let n = self.num_entries();
        let count = list.estimate_between(start, end).min(n);
        if count == 0 {
            return (0, 0);
        }
        (count, count * (list.memory_usage() as u64 / n))
    }

    /// Arena bytes per entry, once the memtable holds at least `min_entries` (what its
    /// successor's filter is sized from: `db/cf`'s `new_memtable`). The filter and range
    /// tombstones are not counted.
    pub(crate) fn bytes_per_entry(&self, min_entries: u64) -> Option<usize> {
        let n = self.num_entries().max(1);
        (n >= min_entries).then(|| self.list.memory_usage() / n as usize)
    }

    /// Bytes of the whole-key filter (0 without one).
    #[cfg(test)]
    pub(crate) fn bloom_bytes(&self) -> usize {
        self.bloom.as_ref().map_or(0, MemBloom::size)
    }

    /// Entries of type `Deletion` or `SingleDeletion`.
    pub fn num_deletes(&self) -> u64 {
        self.num_deletes.load(Ordering::Relaxed)
    }

    #[cfg(test)]
    /// Range tombstones held (point entries are counted by [`Self::num_entries`]).
    pub fn num_range_deletions(&self) -> u64 {
        if self.has_range_tombstones() {
            self.range_dels.read().list.len() as u64
        } else {
            0
        }
    }

    /// No point entry and no range tombstone.
    pub fn is_empty(&self) -> bool {
        self.num_entries() == 0 && !self.has_range_tombstones()
    }

    /// Smallest sequence number inserted (None when empty).
    pub fn first_seqno(&self) -> Option<SeqNo> {
        let s = self.first_seqno.load(Ordering::Relaxed);
        (s != u64::MAX).then_some(SeqNo(s))
    }

    /// The DB's last sequence number when this memtable became active ([`Self::set_earliest`]):
    /// every write to the family after it is in this memtable or a newer one.
    pub fn earliest_seqno(&self) -> Option<SeqNo> {
        let s = self.earliest_seqno.load(Ordering::Acquire);
        (s != u64::MAX).then_some(SeqNo(s))
    }

    /// Records that this memtable becomes its family's active one when the DB's last
    /// sequence number is `seq`, with no write in flight (the switch's contract).
    pub fn set_earliest(&self, seq: SeqNo) {
        self.earliest_seqno.store(seq.0, Ordering::Release);
    }

    /// Largest sequence number inserted (None when empty).
    pub fn largest_seqno(&self) -> Option<SeqNo> {
        self.largest_seqno_plus1.load(Ordering::Relaxed).checked_sub(1).map(SeqNo)
    }

    /// The skiplist, every entry appended before the call linked in (`settle`).
    #[inline]
    pub(crate) fn skiplist(&self) -> &SkipList {
        self.list.settle();
        &self.list
    }

    /// Whether this is a vector memtable (the module's text).
    #[cfg(test)]
    pub(crate) fn is_vector(&self) -> bool {
        self.list.is_sorted_on_read()
    }
}

/// [`MemTable::check_sound`]'s error, made off the write path's code.
#[cold]
#[inline(never)]
pub(crate) fn poisoned() -> Error {
    Error::Background(
        "a memtable's key order panicked while linking its entries: some are unreachable, so \
         its reads fail and writes are refused until the DB is reopened"
            .into(),
    )
}

#[cfg(test)]
mod tests;
