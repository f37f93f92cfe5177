//! [`WriteBufferManager`]: one memory budget for the memtables of any number of DBs (and all
//! their column families), optionally charged to a block cache so that one number bounds
//! both blocks and memtables.
//!
//! ## Accounting
//!
//! Every memtable created by a DB with a manager carries a [`MemoryTracker`] in its arena.
//! The arena reports each chunk it obtains from the allocator (4 KiB for the first, then
//! 1 MiB, or a large entry's own size), so the manager counts memory at chunk granularity:
//! what was allocated, touched or not, not the bytes the entries use.
//! - a chunk allocated: [`memory_usage`] and [`mutable_memtable_memory_usage`] grow by its
//!   size;
//! - the memtable becomes immutable (switched for a new one, to be flushed): its bytes leave
//!   the mutable count ("being freed"), still counted in the total;
//! - the arena is dropped (after the flush, once the last super version, iterator, pinned
//!   slice or snapshot read holding the memtable lets it go; or when the DB closes): its
//!   bytes leave the total.
//!
//! Invariant: `memory_usage` is the sum of the bytes of the live trackers' arenas, and
//! `mutable_memtable_memory_usage` the sum over those not yet marked immutable; each
//! tracker moves its bytes out of the mutable count at most once and out of the total
//! exactly once (in its drop). So once every DB sharing the manager is closed (and every
//! iterator dropped) both are 0. A chunk allocated after the memtable was marked immutable
//! (a write racing a switch) is counted straight into the "being freed" part.
//!
//! ## Flushes
//!
//! With a nonzero budget ([`enabled`]), each write group of each DB sharing the manager
//! checks [`should_flush`] before it takes its sequence numbers. It is true when
//! - the mutable memtables hold more than 7/8 of the budget, or
//! - all memtables together hold at least the budget and the mutable ones at least half of it
//!   (when more than half is already being flushed, another flush would only add small
//!   files).
//!
//! The DB then switches, and so flushes, its column family with the largest non-empty
//! mutable memtable (by the manager's count of memory). Each DB reacts on its own write
//! path: a DB that does not write does not flush for another (as in RocksDB).
//!
//! ## Stalls
//!
//! With `allow_stall`, once the total reaches the budget ([`should_stall`]) the writers of
//! every DB sharing the manager wait (after their DB has had its chance to switch and flush,
//! above) until memory is freed below the budget; each DB counts the wait as a write stop of
//! kind "write buffer manager" in its stall statistics. A stalled writer re-checks
//! [`should_flush`] every 100 ms, so a writer whose own DB must flush never waits for
//! itself. A DB stalled by another DB's idle memtables waits until that DB writes, flushes
//! or closes, or the budget is raised ([`set_buffer_size`]). Writers stall only while part
//! of the total is being freed (immutable memtables exist): with every byte in mutable
//! memtables nothing the writer could wait for would free memory, so it goes on and the
//! flush rule acts. As in RocksDB, a flushed memtable still held by an iterator keeps its
//! bytes, so a thread that holds such an iterator while it writes may wait until another
//! thread's flushes bring the total below the budget, or forever when none can.
//!
//! ## Charging a block cache
//!
//! With a cache, the manager holds a reservation of its total in the cache, in units of
//! [`CACHE_UNIT`] (rounded up), each split evenly over all the cache's shards (a whole unit
//! in one shard could take a small shard's budget whole, and a shard with nothing left to
//! evict lets blocks past its capacity). A reservation counts in the
//! cache's usage (and `block-cache-usage`) and is never evicted: blocks are evicted to make
//! room for it. RocksDB does the same with dummy entries whose handles it keeps (so they are
//! pinned); Strata's LRU cache has no pinned entries (its values are `Arc`s, always
//! evictable), so the caches hold reservations directly instead: the same effect, and no
//! key space or slot is used. Priority does not matter for something never evicted. A strict
//! clock cache that cannot make room refuses a unit: the memtables are then not charged for
//! it (they still count against the manager's own budget).
//!
//! [`memory_usage`]: WriteBufferManager::memory_usage
//! [`mutable_memtable_memory_usage`]: WriteBufferManager::mutable_memtable_memory_usage
//! [`enabled`]: WriteBufferManager::enabled
//! [`should_flush`]: WriteBufferManager::should_flush
//! [`should_stall`]: WriteBufferManager::should_stall
//! [`set_buffer_size`]: WriteBufferManager::set_buffer_size

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use crate::sstable::Cache;

/// Bytes of cache charge per reservation unit (RocksDB's dummy entries are 256 KiB too).
pub const CACHE_UNIT: usize = 256 << 10;

/// A memory budget shared by the memtables of every DB given it
/// (`Options::write_buffer_manager`), optionally charged to a block cache. See the module
/// doc for the accounting, the flush rule and stalls.
pub struct WriteBufferManager {
    /// 0: no limit (accounting and cache charging only).
    buffer_size: AtomicUsize,
    /// 7/8 of `buffer_size`.
    mutable_limit: AtomicUsize,
    /// Bytes of every live tracked arena.
    memory_used: AtomicUsize,
    /// Bytes of the arenas of mutable memtables.
    memory_active: AtomicUsize,
    cache: Option<Mutex<CacheCharge>>,
    /// Changed by `set_allow_stall`, which wakes the stalled writers.
    allow_stall: AtomicBool,
    /// Stalled writers wait on `room` under this lock; whoever frees memory or raises the
    /// budget takes it before notifying, so a wake-up cannot be missed.
    stall_lock: Mutex<()>,
    room: Condvar,
}

/// The reservation held in the cache.
struct CacheCharge {
    cache: Cache,
    /// One entry per unit wanted: whether the cache holds it (false when it refused it).
    units: Vec<bool>,
}

impl CacheCharge {
    /// Holds `ceil(bytes / CACHE_UNIT)` units.
    fn update(&mut self, bytes: usize) {
        let want = bytes.div_ceil(CACHE_UNIT);
        while self.units.len() < want {
            let held = self.reserve_unit();
            self.units.push(held);
        }
        while self.units.len() > want {
            if self.units.pop() == Some(true) {
                for (shard, piece) in self.pieces() {
                    self.cache.release(shard, piece);
                }
            }
        }
    }

    /// A unit's share of each shard: `CACHE_UNIT` split evenly over all of them, so that no
    /// shard's budget is taken whole by reservations while others still hold blocks (a shard
    /// with nothing left to evict would then take blocks past its capacity). Sums to
    /// `CACHE_UNIT`.
    fn pieces(&self) -> impl Iterator<Item = (usize, usize)> {
        let n = self.cache.num_shards().max(1);
        (0..n).map(move |s| (s, CACHE_UNIT / n + usize::from(s < CACHE_UNIT % n)))
    }

    /// Reserves one unit in every shard's share, or nothing (a strict cache refused a share).
    fn reserve_unit(&self) -> bool {
        let taken = self.pieces().take_while(|&(shard, piece)| self.cache.reserve(shard, piece));
        let taken = taken.count();
        if taken == self.cache.num_shards().max(1) {
            return true;
        }
        for (shard, piece) in self.pieces().take(taken) {
            self.cache.release(shard, piece);
        }
        false
    }
}

impl Drop for CacheCharge {
    fn drop(&mut self) {
        self.update(0);
    }
}

impl std::fmt::Debug for WriteBufferManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteBufferManager")
            .field("buffer_size", &self.buffer_size())
            .field("memory_usage", &self.memory_usage())
            .field("mutable", &self.mutable_memtable_memory_usage())
            .field("cost_to_cache", &self.cost_to_cache())
            .field("allow_stall", &self.allow_stall())
            .finish_non_exhaustive()
    }
}

impl WriteBufferManager {
    /// A manager bounding memtables to `buffer_size` bytes (0: no bound; memory is still
    /// counted and, with a cache, charged to it). With `cache`, the memtables' memory is
    /// charged to that block cache. With `allow_stall`, writes wait while the memtables hold
    /// the whole budget (module doc).
    pub fn new(buffer_size: usize, cache: Option<Cache>, allow_stall: bool) -> Self {
        WriteBufferManager {
            buffer_size: AtomicUsize::new(buffer_size),
            mutable_limit: AtomicUsize::new(mutable_limit(buffer_size)),
            memory_used: AtomicUsize::new(0),
            memory_active: AtomicUsize::new(0),
            cache: cache.map(|cache| Mutex::new(CacheCharge { cache, units: Vec::new() })),
            allow_stall: AtomicBool::new(allow_stall),
            stall_lock: Mutex::new(()),
            room: Condvar::new(),
        }
    }

    /// Whether the budget is nonzero (flushes and stalls are triggered).
    pub fn enabled(&self) -> bool {
        self.buffer_size() > 0
    }

    /// Whether the memtables' memory is charged to a block cache.
    pub fn cost_to_cache(&self) -> bool {
        self.cache.is_some()
    }

    /// Whether writes wait while the memtables hold the whole budget.
    pub fn allow_stall(&self) -> bool {
        self.allow_stall.load(Ordering::Relaxed)
    }

    /// Turns stalling on or off; writers waiting in a stall are woken to look again (and
    /// go on, when it was turned off).
    pub fn set_allow_stall(&self, allow_stall: bool) {
        let _g = self.stall_lock.lock();
        self.allow_stall.store(allow_stall, Ordering::Relaxed);
        self.room.notify_all();
    }

    /// Bytes held by every tracked memtable (mutable, or immutable and not yet freed).
    pub fn memory_usage(&self) -> usize {
        self.memory_used.load(Ordering::Relaxed)
    }

    /// Bytes held by the mutable (active) memtables.
    pub fn mutable_memtable_memory_usage(&self) -> usize {
        self.memory_active.load(Ordering::Relaxed)
    }

    /// The budget (0: none).
    pub fn buffer_size(&self) -> usize {
        self.buffer_size.load(Ordering::Relaxed)
    }

    /// Changes the budget; stalled writers re-check it at once.
    pub fn set_buffer_size(&self, buffer_size: usize) {
        self.buffer_size.store(buffer_size, Ordering::Relaxed);
        self.mutable_limit.store(mutable_limit(buffer_size), Ordering::Relaxed);
        self.wake_stalled();
    }

    /// The flush rule of the module doc.
    pub fn should_flush(&self) -> bool {
        let size = self.buffer_size();
        if size == 0 {
            return false;
        }
        let mutable = self.mutable_memtable_memory_usage();
        mutable > self.mutable_limit.load(Ordering::Relaxed)
            || (self.memory_usage() >= size && mutable >= size / 2)
    }

    /// With `allow_stall` and a budget: whether the memtables hold all of it.
    pub fn should_stall(&self) -> bool {
        self.allow_stall() && self.enabled() && self.memory_usage() >= self.buffer_size()
    }

    /// Waits until [`Self::should_stall`] is false or `timeout` passed; returns whether the
    /// stall is over.
    pub(crate) fn wait_for_room(&self, timeout: Duration) -> bool {
        let mut g = self.stall_lock.lock();
        if !self.should_stall() {
            return true;
        }
        let _ = self.room.wait_for(&mut g, timeout);
        !self.should_stall()
    }

    fn wake_stalled(&self) {
        if self.allow_stall() {
            let _g = self.stall_lock.lock();
            self.room.notify_all();
        }
    }

    /// `bytes` were allocated for a mutable memtable.
    fn reserve_mem(&self, bytes: usize) {
        self.memory_active.fetch_add(bytes, Ordering::Relaxed);
        self.add_used(bytes);
    }

    /// `bytes` were allocated for a memtable already marked immutable.
    fn reserve_mem_immutable(&self, bytes: usize) {
        self.add_used(bytes);
    }

    fn add_used(&self, bytes: usize) {
        self.memory_used.fetch_add(bytes, Ordering::Relaxed);
        self.charge_cache();
    }

    /// Brings the cache reservation to the current total. The total is read under the
    /// lock, so the last update of concurrent ones sees every change made before it.
    fn charge_cache(&self) {
        if let Some(c) = &self.cache {
            let mut c = c.lock();
            c.update(self.memory_used.load(Ordering::Relaxed));
        }
    }

    /// A memtable holding `bytes` became immutable: they are now being freed.
    fn schedule_free_mem(&self, bytes: usize) {
        self.memory_active.fetch_sub(bytes, Ordering::Relaxed);
    }

    /// A memtable's `bytes` were freed.
    fn free_mem(&self, bytes: usize) {
        let used = self.memory_used.fetch_sub(bytes, Ordering::Relaxed) - bytes;
        self.charge_cache();
        if used < self.buffer_size() {
            self.wake_stalled();
        }
    }
}

fn mutable_limit(buffer_size: usize) -> usize {
    buffer_size / 8 * 7
}

/// One memtable's share of a [`WriteBufferManager`]: what its arena allocated, reported to
/// the manager as it grows, when the memtable becomes immutable, and when the arena drops.
pub(crate) struct MemoryTracker {
    manager: Arc<WriteBufferManager>,
    bytes: usize,
    immutable: bool,
}

impl MemoryTracker {
    pub(crate) fn new(manager: Arc<WriteBufferManager>) -> Self {
        MemoryTracker { manager, bytes: 0, immutable: false }
    }

    /// The arena obtained `bytes` more.
    pub(crate) fn allocated(&mut self, bytes: usize) {
        self.bytes += bytes;
        if self.immutable {
            self.manager.reserve_mem_immutable(bytes);
        } else {
            self.manager.reserve_mem(bytes);
        }
    }

    /// The memtable will take no more writes: its bytes are being freed. Idempotent.
    pub(crate) fn mark_immutable(&mut self) {
        if !self.immutable {
            self.immutable = true;
            self.manager.schedule_free_mem(self.bytes);
        }
    }

    /// Bytes reported so far.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Drop for MemoryTracker {
    fn drop(&mut self) {
        self.mark_immutable();
        self.manager.free_mem(self.bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tracker_moves_bytes_from_mutable_to_freed() {
        let m = Arc::new(WriteBufferManager::new(8 << 20, None, false));
        let mut a = MemoryTracker::new(m.clone());
        let mut b = MemoryTracker::new(m.clone());
        a.allocated(1 << 20);
        b.allocated(2 << 20);
        assert_eq!((m.memory_usage(), m.mutable_memtable_memory_usage()), (3 << 20, 3 << 20));
        a.mark_immutable();
        a.mark_immutable();
        assert_eq!((m.memory_usage(), m.mutable_memtable_memory_usage()), (3 << 20, 2 << 20));
        a.allocated(1 << 20); // after the switch: straight to "being freed"
        assert_eq!((m.memory_usage(), m.mutable_memtable_memory_usage()), (4 << 20, 2 << 20));
        drop(a);
        assert_eq!((m.memory_usage(), m.mutable_memtable_memory_usage()), (2 << 20, 2 << 20));
        drop(b);
        assert_eq!((m.memory_usage(), m.mutable_memtable_memory_usage()), (0, 0));
    }

    #[test]
    fn flush_rule() {
        let m = Arc::new(WriteBufferManager::new(8 << 20, None, false));
        let mut a = MemoryTracker::new(m.clone());
        a.allocated(7 << 20);
        assert!(!m.should_flush(), "7/8 exactly is not above the mutable limit");
        a.allocated(1);
        assert!(m.should_flush());
        a.mark_immutable();
        assert!(!m.should_flush());
        let mut b = MemoryTracker::new(m.clone());
        b.allocated(4 << 20);
        assert!(m.should_flush(), "total over the budget, half of it mutable");
        drop(a);
        assert!(!m.should_flush());
        m.set_buffer_size(0);
        assert!(!m.enabled() && !m.should_flush());
    }

    #[test]
    fn stall_rule_and_wake_up() {
        let m = Arc::new(WriteBufferManager::new(4 << 20, None, true));
        let mut a = MemoryTracker::new(m.clone());
        a.allocated(4 << 20);
        assert!(m.should_stall());
        assert!(!m.wait_for_room(Duration::from_millis(1)));
        let waiter = {
            let m = m.clone();
            std::thread::spawn(move || {
                let t = std::time::Instant::now();
                while !m.wait_for_room(Duration::from_secs(10)) {
                    assert!(t.elapsed() < Duration::from_secs(30), "never woken");
                }
            })
        };
        std::thread::sleep(Duration::from_millis(20));
        drop(a);
        waiter.join().unwrap();
        let no_stall = WriteBufferManager::new(1, None, false);
        assert!(!no_stall.should_stall());
    }

    #[test]
    fn cache_charge_follows_usage_in_units() {
        for cache in [Cache::new_lru(64 << 20), Cache::new_hyper_clock(64 << 20, 0).unwrap()] {
            let m = Arc::new(WriteBufferManager::new(0, Some(cache.clone()), false));
            assert!(m.cost_to_cache() && !m.enabled());
            let mut a = MemoryTracker::new(m.clone());
            a.allocated(4096);
            assert_eq!(cache.usage(), CACHE_UNIT);
            a.allocated(3 << 20);
            assert_eq!(cache.usage(), ((3 << 20) + 4096usize).div_ceil(CACHE_UNIT) * CACHE_UNIT);
            drop(a);
            assert_eq!(cache.usage(), 0);
        }
    }
}
