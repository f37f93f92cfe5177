//! [`BlockCache`]: the block cache as a shareable handle, `strata::Cache` (the handle over
//! table blocks, `sstable/cache_access.rs`). Clones share one cache, so one memory budget
//! bounds the blocks of every `Db` given a clone (`Options::block_cache`). Blocks are keyed by
//! a process-unique owner per open table cache ([`CacheKey::new_owner`]), so DBs sharing a
//! cache never see each other's blocks. The handle is generic over the block type because the
//! block is defined by the table format, a layer above the caches.
//!
//! Data blocks read on a miss are offered to the cache ([`BlockCache::offer`]): a full cache
//! takes in only a block missed before within its admission window (`admission.rs`,
//! [`Admission::SecondMiss`], the default), else every block. A block not taken in is returned
//! to its reader as usual and kept as the thread's last passed-over block (one per thread,
//! outside the capacity, like the spare buffers of `util/spare_bufs.rs`), so a read of the
//! same block right after does not read it again: it takes it from there
//! ([`BlockCache::passed_over`]) and offers it once more, which, as its second miss, is taken in.
//!
//! Whether the blocks it hands out are cold ([`BlockCache::blocks_cold`]): a cache that was
//! full at its last offer and whose capacity passes the CPU's last-level cache holds more
//! blocks than the CPU keeps, so a block a read finds in it has mostly left the CPU's caches
//! (the reader then asks for a small block whole before its seek, `sstable/block.rs`). One
//! that is not full, or smaller, hands out blocks read recently enough to be near.
//!
//! A handle given to a DB as its row cache (`Options::row_cache`) also holds that DB's rows
//! (`row_cache.rs`), on a side of its own made at the first such use; the handle's usage,
//! capacity and counters cover both sides.

use std::any::Any;
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};

use super::{
    block_hash, Admission, AnyCache, CacheKey, CacheType, Doorkeeper, HyperClockCacheOptions,
    LruCache, LruCacheOptions, Priority, RowCache,
};
use crate::error::Result;
use crate::util::cpu_caches;

/// What a block cache holds: a decoded block, shared by the readers that hold it.
pub trait CachedBlock: Any + Send + Sync {}
impl<B: Any + Send + Sync> CachedBlock for B {}

/// A passed-over block, type-erased because a thread-local cannot be generic; it is only
/// taken back on the path of a miss.
type Erased = Arc<dyn Any + Send + Sync>;

thread_local! {
    /// The last data block this thread read that the cache did not take in, with its key.
    static PASSED_OVER: RefCell<Option<(CacheKey, Erased)>> = const { RefCell::new(None) };
}

/// A block cache shared by every `Db` (and every clone) holding it.
pub struct BlockCache<B> {
    inner: Arc<Shared<B>>,
}

impl<B> Clone for BlockCache<B> {
    fn clone(&self) -> Self {
        BlockCache { inner: Arc::clone(&self.inner) }
    }
}

struct Shared<B> {
    cache: AnyCache<CacheKey, B>,
    /// Recent misses, for [`Admission::SecondMiss`]; None for [`Admission::Always`].
    doorkeeper: Option<Doorkeeper>,
    /// [`BlockCache::blocks_cold`], as of the last offer.
    cold: AtomicBool,
    /// The rows, once the handle is some DB's row cache ([`BlockCache::rows`]).
    rows: OnceLock<RowCache>,
}

impl<B: CachedBlock> Shared<B> {
    fn new(cache: AnyCache<CacheKey, B>, admission: Admission) -> Self {
        let doorkeeper = match admission {
            Admission::Always => None,
            Admission::SecondMiss => Some(Doorkeeper::new(cache.capacity())),
        };
        Shared { cache, doorkeeper, cold: AtomicBool::new(false), rows: OnceLock::new() }
    }
}

impl<B: CachedBlock> std::fmt::Debug for BlockCache<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cache")
            .field("type", &self.cache_type())
            .field("capacity", &self.capacity())
            .field("usage", &self.usage())
            .finish()
    }
}

impl<B: CachedBlock> BlockCache<B> {
    /// An LRU cache of `capacity` bytes with default options.
    pub fn new_lru(capacity: usize) -> Self {
        let cache = AnyCache::Lru(LruCache::new(capacity));
        BlockCache { inner: Arc::new(Shared::new(cache, Admission::default())) }
    }

    /// An LRU cache; `InvalidArgument` for a bad ratio or shard count.
    pub fn new_lru_opts(opts: &LruCacheOptions) -> Result<Self> {
        let cache = AnyCache::lru(opts)?;
        Ok(BlockCache { inner: Arc::new(Shared::new(cache, opts.admission)) })
    }

    /// A clock cache of `capacity` bytes whose tables are sized for entries of about
    /// `estimated_entry_charge` bytes, or, for 0, grow as entries are inserted (RocksDB's
    /// `auto_hyper_clock_cache`).
    pub fn new_hyper_clock(capacity: usize, estimated_entry_charge: usize) -> Result<Self> {
        Self::new_hyper_clock_opts(&HyperClockCacheOptions::new(capacity, estimated_entry_charge))
    }

    /// A clock cache with options.
    pub fn new_hyper_clock_opts(opts: &HyperClockCacheOptions) -> Result<Self> {
        let cache = AnyCache::hyper_clock(opts)?;
        Ok(BlockCache { inner: Arc::new(Shared::new(cache, opts.admission)) })
    }

    /// The implementation.
    pub fn cache_type(&self) -> CacheType {
        self.inner.cache.cache_type()
    }

    /// Bytes of charge held (exact when no operation runs), blocks and rows.
    pub fn usage(&self) -> usize {
        self.inner.cache.usage() + self.inner.rows.get().map_or(0, RowCache::usage)
    }

    /// Approximate memory the cache takes: the charge it holds ([`Self::usage`]) and its own
    /// structures (shards, hash tables, slot arrays), which exist even when it is empty.
    pub fn approximate_memory_usage(&self) -> usize {
        self.usage()
            + self.inner.cache.structure_bytes()
            + self.inner.rows.get().map_or(0, RowCache::structure_bytes)
    }

    /// The byte capacity.
    pub fn capacity(&self) -> usize {
        self.inner.cache.capacity()
    }

    /// Sets the byte capacity (RocksDB's `SetCapacity`): each shard gets its equal part and
    /// evicts least valuable entries until it fits; entries readers hold stay until released.
    /// The shard count, a clock cache's slots sized from an estimated entry charge, and the
    /// second-miss admission filter's size stay as they were made. A cache shrunk to the CPU's
    /// last-level cache or below hands out warm blocks from then on ([`Self::blocks_cold`]);
    /// one grown is no longer full, which its next offer notes.
    pub fn set_capacity(&self, capacity: usize) {
        self.inner.cache.set_capacity(capacity);
        if let Some(rows) = self.inner.rows.get() {
            rows.set_capacity(capacity);
        }
        if capacity <= cpu_caches::last_level_bytes() {
            self.inner.cold.store(false, Relaxed);
        }
    }

    /// Bytes of charge of the entries readers hold right now (RocksDB's `GetPinnedUsage`):
    /// blocks an iterator or a pinned read has, counted shard by shard.
    pub fn pinned_usage(&self) -> usize {
        self.inner.cache.pinned_usage() + self.inner.rows.get().map_or(0, RowCache::pinned_usage)
    }

    /// The largest charge one entry can have and be kept (a shard's capacity).
    pub(crate) fn max_entry_charge(&self) -> usize {
        self.inner.cache.capacity() / self.inner.cache.num_shards().max(1)
    }

    /// Lookups that hit, over every user, of blocks and rows.
    pub fn hits(&self) -> u64 {
        self.inner.cache.hits() + self.inner.rows.get().map_or(0, RowCache::hits)
    }

    /// Lookups that missed.
    pub fn misses(&self) -> u64 {
        self.inner.cache.misses() + self.inner.rows.get().map_or(0, RowCache::misses)
    }

    /// The row side (module doc), made with the handle's capacity at the first call.
    pub(crate) fn rows(&self) -> &RowCache {
        let second_miss = self.inner.doorkeeper.is_some();
        self.inner.rows.get_or_init(|| RowCache::new(self.inner.cache.capacity(), second_miss))
    }

    /// Whether two handles share one cache.
    pub fn ptr_eq(a: &Self, b: &Self) -> bool {
        Arc::ptr_eq(&a.inner, &b.inner)
    }

    /// Shards (reservations are spread over them).
    pub(crate) fn num_shards(&self) -> usize {
        self.inner.cache.num_shards()
    }

    /// Holds `charge` bytes of shard `shard` without a block (`AnyCache::reserve`).
    pub(crate) fn reserve(&self, shard: usize, charge: usize) -> bool {
        self.inner.cache.reserve(shard, charge)
    }

    /// Gives back a reservation (`AnyCache::release`).
    pub(crate) fn release(&self, shard: usize, charge: usize) {
        self.inner.cache.release(shard, charge);
    }

    #[inline]
    pub(crate) fn lookup(&self, key: &CacheKey) -> Option<Arc<B>> {
        self.inner.cache.lookup(key)
    }

    #[inline]
    pub(crate) fn insert(&self, key: CacheKey, block: Arc<B>, charge: usize, p: Priority) {
        self.inner.cache.insert(key, block, charge, p);
    }

    /// Offers a data block read on a miss: inserted at low priority unless the cache is full
    /// and admission turns it away (module doc). Returns whether it was inserted; a block
    /// turned away becomes this thread's passed-over block.
    pub(crate) fn offer(&self, key: CacheKey, block: &Arc<B>, charge: usize) -> bool {
        let full = self.inner.cache.would_evict(&key, charge);
        let cold = full && self.inner.cache.capacity() > cpu_caches::last_level_bytes();
        if self.inner.cold.load(Relaxed) != cold {
            self.inner.cold.store(cold, Relaxed);
        }
        if let Some(d) = &self.inner.doorkeeper {
            if full && !d.second_miss(block_hash([key.owner, key.file, key.offset]), charge) {
                let kept: Option<(CacheKey, Erased)> = Some((key, Arc::clone(block) as Erased));
                // Reentrant use (a block dropped inside) or thread exit: simply not kept.
                let old = PASSED_OVER
                    .try_with(|p| p.try_borrow_mut().map(|mut p| std::mem::replace(&mut *p, kept)))
                    .ok()
                    .and_then(|r| r.ok());
                drop(old);
                return false;
            }
        }
        self.inner.cache.insert(key, Arc::clone(block), charge, Priority::Low);
        true
    }

    /// Whether a block found here has likely left the CPU's caches (module doc): the cache
    /// was full at its last offer and is larger than the CPU's last-level cache.
    #[inline]
    pub(crate) fn blocks_cold(&self) -> bool {
        self.inner.cold.load(Relaxed)
    }

    /// This thread's passed-over block if it is `key`'s (taken from the thread).
    #[inline]
    pub(crate) fn passed_over(key: &CacheKey) -> Option<Arc<B>> {
        PASSED_OVER
            .try_with(|p| {
                let mut p = p.try_borrow_mut().ok()?;
                match &*p {
                    Some((k, _)) if k == key => p.take().and_then(|(_, b)| b.downcast::<B>().ok()),
                    _ => None,
                }
            })
            .ok()
            .flatten()
    }

    /// Removes the block under `key`, if cached (a holder of it keeps its copy).
    pub(crate) fn erase(&self, key: &CacheKey) {
        self.inner.cache.erase(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(offset: u64) -> CacheKey {
        CacheKey { owner: 1, file: 1, offset }
    }

    /// Offers blocks of a 1,024th of the capacity until four capacities' worth were offered,
    /// noting `blocks_cold` before the first offer and after the last.
    fn fill(c: &BlockCache<u64>) -> (bool, bool) {
        let before = c.blocks_cold();
        let charge = c.capacity() / 1024;
        for i in 0..4096u64 {
            c.offer(key(i), &Arc::new(i), charge);
        }
        (before, c.blocks_cold())
    }

    #[test]
    fn blocks_are_cold_once_a_cache_larger_than_the_cpus_is_full() {
        let big = 2 * cpu_caches::last_level_bytes();
        for c in [BlockCache::<u64>::new_lru(big), BlockCache::new_hyper_clock(big, 0).unwrap()] {
            let (before, after) = fill(&c);
            assert!(!before, "{:?}: an empty cache hands out nothing cold", c.cache_type());
            assert!(after, "{:?}: a full cache past the CPU's", c.cache_type());
        }
    }

    #[test]
    fn blocks_of_a_cache_the_cpu_can_hold_are_never_cold() {
        let small = cpu_caches::last_level_bytes() / 2;
        for c in [BlockCache::<u64>::new_lru(small), BlockCache::new_hyper_clock(small, 0).unwrap()]
        {
            assert_eq!(fill(&c), (false, false), "{:?}", c.cache_type());
        }
    }

    #[test]
    fn a_cache_shrunk_below_the_cpus_hands_out_warm_blocks() {
        let big = 2 * cpu_caches::last_level_bytes();
        for c in [BlockCache::<u64>::new_lru(big), BlockCache::new_hyper_clock(big, 0).unwrap()] {
            assert!(fill(&c).1, "{:?}: full and past the CPU's", c.cache_type());
            c.set_capacity(big / 4);
            assert!(
                !c.blocks_cold(),
                "{:?}: shrunk below the CPU's, with no offer since",
                c.cache_type()
            );
            c.set_capacity(big);
            assert!(!c.blocks_cold(), "{:?}: grown again, not full", c.cache_type());
            assert!(fill(&c).1, "{:?}: full again", c.cache_type());
        }
    }

    #[test]
    fn a_cache_not_yet_full_hands_out_warm_blocks() {
        let big = 2 * cpu_caches::last_level_bytes();
        let c = BlockCache::<u64>::new_lru(big);
        c.offer(key(1), &Arc::new(1), big / 1024);
        assert!(!c.blocks_cold());
    }
}
