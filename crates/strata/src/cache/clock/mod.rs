//! A lock-free clock cache of the HyperClock family: lookups, inserts, erases and evictions
//! are atomic read-modify-writes on one state word per slot; no operation takes a lock, and a
//! hit writes nothing but its slot's word.
//!
//! Layout: the key's hash picks a shard by its top bits (as in the LRU cache); each shard
//! (`table.rs`) has a byte budget, a sweep hand and one or more *generations*: open-addressed
//! slot arrays (`slots.rs`) with a double-hashing probe sequence (home = low hash bits, odd
//! step from bits 32..) and a slot budget each (7/8 of their slots).
//! - *Fixed* (an estimated entry charge is given; RocksDB's `FixedHyperClockCache`): one
//!   generation of capacity / estimate / 0.7 slots, rounded up to a power of two. When entries
//!   are smaller than the estimate, the slot budget evicts before the byte budget does.
//! - *Growing* (estimate 0; RocksDB's `auto_hyper_clock_cache`): the first generation is sized
//!   for 64 KiB entries; when an insert finds the newest generation's slot budget spent while
//!   the byte budget still has room, it adds a generation with 4 times the slots (at most 8
//!   generations, so entries down to a few bytes fit). Inserts go to the newest generation.
//!   Growing is the one slow path: one thread, chosen by a CAS on a flag, allocates the next
//!   generation, publishes it, and *moves* the older generations' entries into it; lookups
//!   never wait for it, and an insert that needs the new generation while another thread
//!   builds it yields until it is published (rather than evict an entry the new generation
//!   has room for). Lookups and erases probe the generations oldest first, skipping older
//!   ones that are empty (all of them once a growth has moved their entries), so the common
//!   lookup probes one generation. The sweep covers every generation, laid end to end.
//!   Drained generations stay allocated until the cache drops (at most a third of the newest
//!   one's slots).
//!
//! A move copies an entry without taking it away from readers: holding a reference on the
//! original (taken VISIBLE), the grower reserves a slot in the new generation, publishes a
//! copy (same key, `Arc` clone of the value, clock and priority) holding one reference of its
//! own, then sets the original INVISIBLE and MOVED (`fetch_or`, AcqRel). MOVED hands the
//! charge to the copy: freeing a MOVED entry returns none. If the original was already
//! INVISIBLE (an erase or a replacing insert got there first), the grower sets the copy
//! INVISIBLE too, so no stale value survives. A reader therefore always finds the entry in one
//! place or the other (the copy is visible before the original is hidden, the reader probes
//! the original's generation first, and a miss probes again when the generation count grew
//! meanwhile), and an erase reaches the copy: erases go oldest
//! generation first, re-reading the count after each, and an erase that sees the original
//! already MOVED (Acquire) sees the copy's publication, which preceded it.
//!
//! ## Slot protocol
//!
//! A slot's word (`meta.rs`) holds a reference count, a clock countdown, a priority bit and a
//! state: EMPTY -> EXCLUSIVE (an inserter fills the payload) -> VISIBLE -> INVISIBLE (erased or
//! replaced) -> EXCLUSIVE (the freer takes the payload) -> EMPTY; a VISIBLE entry with no
//! references and clock 0 goes straight to EXCLUSIVE when the sweep evicts it.
//!
//! - *Lookup* peeks at the word; if VISIBLE it increments the reference count (`fetch_add`,
//!   Acquire) and, if the returned word is still VISIBLE, compares the key and clones the
//!   value, then releases the reference (`fetch_sub`, Release), raising the clock to its
//!   maximum in the same CAS when it was lower. A reference taken in any other state is
//!   released without reading the payload.
//! - *Insert* erases visible entries for the key, reserves one slot of the slot budget and the
//!   charge of the byte budget (CAS loops that never pass the limits; the sweep runs when they
//!   would), then walks the probe sequence: CAS EMPTY -> EXCLUSIVE (refs kept: transient
//!   lookups may hold an empty slot), write the payload, `fetch_add` to VISIBLE with the
//!   priority's initial clock (Release). Each slot passed on the way gets its displacement
//!   count incremented; a lookup stops at the first slot that neither matches nor has a
//!   displacement.
//! - *Erase* takes a reference as a lookup does and sets INVISIBLE (`fetch_or`); whoever drops
//!   the last reference of an INVISIBLE entry (a `fetch_sub` returning refs = 1) CASes it to
//!   EXCLUSIVE from refs = 0 and frees it. Exactly one such CAS succeeds, and a thread that
//!   made the count non-zero in between is itself a later last releaser, so the entry is
//!   always freed.
//! - *Sweep*: the hand is a shared counter advanced in batches of 4 slots; an unreferenced
//!   VISIBLE entry has its clock decremented (CAS), or at 0 is CASed to EXCLUSIVE and freed.
//!   Freeing takes the payload, decrements the displacements along the entry's probe
//!   sequence, then `fetch_sub`s EXCLUSIVE -> EMPTY (Release) and returns the slot and charge
//!   to the budgets.
//!
//! Priorities: a high-priority entry (index and filter blocks) starts with the maximum clock
//! (3), a low-priority one (data blocks) with 1, so an unused low-priority entry is evicted
//! after one pass of the hand and an unused high-priority one after three. A hit raises either
//! to 3.
//!
//! ## Memory ordering
//!
//! The payload is plain memory guarded by the state word:
//! - Written only by the thread that holds the slot EXCLUSIVE, which it entered with an
//!   Acquire CAS from EMPTY (insert) or from a state with no references (free). EXCLUSIVE can
//!   only be entered from refs = 0 and refs only grow by `fetch_add`s that then see a
//!   non-VISIBLE state, so no reader is inside the payload while it is written.
//! - Published by a Release `fetch_add` to VISIBLE. A reader's Acquire `fetch_add` reads that
//!   value or a later one in the word's modification order; every later modification is a
//!   read-modify-write, so it is in the release sequence headed by the publication, and the
//!   reader synchronises with it: the payload's writes happen before its reads.
//! - A reader's reads happen before the next write of the payload: its release is a Release
//!   `fetch_sub` (or CAS), and the freer's Acquire CAS to EXCLUSIVE reads a value at or after
//!   it in the modification order (it requires refs = 0, i.e. after every release), again
//!   through a release sequence of read-modify-writes.
//! - A free's `take` happens before the next fill: the Release EXCLUSIVE -> EMPTY and the next
//!   inserter's Acquire CAS from EMPTY.
//! - A generation is written (its slots initialised) before its pointer is stored (Release)
//!   and the count that covers it is raised (Release); every reader loads the count with
//!   Acquire before the pointer, so it sees the initialised slots. Generations are freed only
//!   by the shard's `drop`, when no operation can run, so a pointer read is never dangling.
//!   Only the thread that won the `growing` flag (Acquire CAS; released with a Release store)
//!   writes a pointer or the count, so the count only grows by one at a time.
//! - A move's copy is published (Release) before the original's MOVED `fetch_or` (AcqRel,
//!   program order); a lookup or erase that reads the original hidden with an Acquire peek,
//!   or the original's generation empty with an Acquire load of its occupancy (decremented
//!   with Release by the free that follows the hiding), is ordered after the copy's
//!   publication (and the new generation's count, stored before the move began), and so
//!   finds it in the newer generation.
//! - Clock bits, displacement counts, the hand and the budgets are Relaxed: they only steer
//!   decisions, never guard memory. A lookup that reads a stale displacement of 0 misses an
//!   entry whose insert was not yet complete (allowed: the insert is concurrent); an insert
//!   that completed before the lookup began happens-before it, so by coherence its increment
//!   is seen (and a free's decrement follows its own insert's increment in that count's
//!   modification order, through the slot word's Release/Acquire chain, so the count never
//!   drops below the number of live entries passing through the slot).
//!   A generation's occupancy is read the same way to skip an empty older generation: an
//!   insert into it that completed before the lookup began is seen.
//!
//! `loom_tests` in `tests.rs` checks the protocol under the C++11 model
//! (`cargo test -p strata --lib --features loom loom_tests`); the payload cell is loom's there,
//! so a read racing a write would be reported.
//!
//! Values are `Arc<V>`, as in the LRU cache: a reader keeps an evicted value alive after the
//! slot is reused, and such values no longer count against the capacity. [`ClockCache::lookup`]
//! holds its slot reference only inside the call (it returns a clone of the `Arc`);
//! [`ClockCache::lookup_handle`] returns the reference itself as a [`ClockHandle`] (RocksDB's
//! handle), which saves the two read-modify-writes of the `Arc`'s shared count, the costly part
//! of a hit on an entry that other threads are also reading. A held handle pins its entry: the
//! sweep skips it and an erase frees it when the last handle drops, and its charge stays
//! counted, so strict mode refuses inserts that would need to evict pinned entries while
//! non-strict mode (insert past the capacity when the sweep finds nothing to evict) admits
//! them.

mod meta;
mod slots;
mod sync;
mod table;
#[cfg(test)]
mod tests;

use std::hash::{BuildHasher, Hash};
use std::ops::Deref;
use std::sync::Arc;

use super::hash::MixBuildHasher;
use super::striped::StripedCounter;
use super::Priority;
use slots::{Generation, Slot};
use table::{ClockTable, MAX_GENERATIONS, MAX_SLOTS};

/// Table sizing: slots = expected entries / LOAD_FACTOR (as tenths).
const LOAD_FACTOR_TENTHS: usize = 7;
const MIN_SLOTS: usize = 4;
/// A growing table's first generation is sized for entries of this charge (larger than most
/// blocks, so that it starts small; each growth quadruples the slots).
const AUTO_FIRST_ENTRY_CHARGE: usize = 64 << 10;

/// A sharded, lock-free clock cache bounded by the sum of its entries' charges.
pub struct ClockCache<K, V> {
    capacity: std::sync::atomic::AtomicUsize,
    shard_shift: u32,
    shards: Box<[ClockTable<K, V>]>,
    hasher: MixBuildHasher,
    hits: StripedCounter,
    misses: StripedCounter,
    estimated_entry_charge: usize,
    strict: bool,
}

impl<K: Hash + Eq + Clone + Send + Sync, V: Send + Sync> ClockCache<K, V> {
    /// A cache of `capacity` bytes in 2^`shard_bits` shards whose tables hold
    /// `capacity / estimated_entry_charge` entries, or, with an estimate of 0, whose tables
    /// grow as entries are inserted (see the module doc).
    pub(crate) fn new(
        capacity: usize,
        estimated_entry_charge: usize,
        shard_bits: u32,
        strict: bool,
    ) -> Self {
        let n = 1usize << shard_bits;
        let (base, extra) = (capacity / n, capacity % n);
        let (estimate, generations) = match estimated_entry_charge {
            0 => (AUTO_FIRST_ENTRY_CHARGE, MAX_GENERATIONS),
            e => (e, 1),
        };
        let shards = (0..n)
            .map(|i| {
                let cap = base + usize::from(i < extra);
                let entries = (cap / estimate).max(1);
                let slots = (entries.saturating_mul(10) / LOAD_FACTOR_TENTHS)
                    .clamp(MIN_SLOTS, MAX_SLOTS)
                    .next_power_of_two();
                ClockTable::growing(cap, slots, strict, generations)
            })
            .collect();
        ClockCache {
            capacity: std::sync::atomic::AtomicUsize::new(capacity),
            shard_shift: 64 - shard_bits,
            shards,
            hasher: MixBuildHasher::default(),
            hits: StripedCounter::default(),
            misses: StripedCounter::default(),
            estimated_entry_charge,
            strict,
        }
    }

    #[inline]
    fn locate(&self, key: &K) -> (u64, &ClockTable<K, V>) {
        let h = self.hasher.hash_one(key);
        let i = h.checked_shr(self.shard_shift).unwrap_or(0) as usize;
        (h, &self.shards[i])
    }

    /// The value for `key`.
    pub fn lookup(&self, key: &K) -> Option<Arc<V>> {
        let (h, shard) = self.locate(key);
        let found = shard.lookup(h, key);
        if found.is_some() { &self.hits } else { &self.misses }.add(1);
        found
    }

    /// A handle on the entry for `key`: the value, borrowed from the cache, kept in place (not
    /// evicted, not freed) until the handle drops.
    #[inline]
    pub fn lookup_handle(&self, key: &K) -> Option<ClockHandle<'_, K, V>> {
        let (h, shard) = self.locate(key);
        let found = shard.acquire(h, key);
        if found.is_some() { &self.hits } else { &self.misses }.add(1);
        let (generation, slot, acquired) = found?;
        // SAFETY: `acquire` returned a held reference; the borrow lives in the handle, whose
        // drop releases the reference after the borrow's last use.
        match unsafe { slot.value() } {
            Some(value) => Some(ClockHandle { table: shard, generation, slot, acquired, value }),
            None => {
                shard.release_after_hit(generation, slot, acquired);
                None
            }
        }
    }

    /// Inserts (or replaces) `key`; returns whether the entry was cached.
    pub fn insert(&self, key: K, value: Arc<V>, charge: usize, priority: Priority) -> bool {
        let (h, shard) = self.locate(&key);
        shard.insert(h, key, value, charge, priority)
    }

    /// Whether inserting `charge` bytes under `key` now would evict (its shard's bytes or
    /// slots are used up); a hint, as other threads may insert or free meanwhile.
    #[inline]
    pub fn would_evict(&self, key: &K, charge: usize) -> bool {
        let (_, shard) = self.locate(key);
        shard.would_evict(charge)
    }

    /// Removes `key` if present.
    pub fn erase(&self, key: &K) {
        let (h, shard) = self.locate(key);
        shard.erase(h, key);
    }

    /// Holds `charge` bytes of shard `shard % shard count`'s budget without an entry,
    /// evicting that shard's entries to make room; never evicted. False (nothing held) when
    /// the cache is strict and the shard's unreferenced entries do not make room.
    pub fn reserve(&self, shard: usize, charge: usize) -> bool {
        self.shards[shard % self.shards.len()].reserve_charge(charge)
    }

    /// Gives back a reservation made with the same `shard` and `charge`.
    pub fn release(&self, shard: usize, charge: usize) {
        self.shards[shard % self.shards.len()].release_charge(charge);
    }

    /// Total charge held, entries' and reservations' (a sum of per-shard counters: exact
    /// when quiescent).
    pub fn usage(&self) -> usize {
        self.shards.iter().map(ClockTable::usage).sum()
    }

    /// The byte capacity.
    pub fn capacity(&self) -> usize {
        self.capacity.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Gives the cache `capacity` bytes in equal parts over its shards (their count and, for
    /// tables sized from an estimated charge, their slots stay), each evicting what it can
    /// until it fits (RocksDB's `Cache::SetCapacity`).
    pub fn set_capacity(&self, capacity: usize) {
        self.capacity.store(capacity, std::sync::atomic::Ordering::Relaxed);
        let n = self.shards.len();
        for (i, shard) in self.shards.iter().enumerate() {
            shard.set_capacity(capacity / n + usize::from(i < capacity % n));
        }
    }

    /// The charge of the entries readers hold (RocksDB's `Cache::GetPinnedUsage`).
    pub fn pinned_usage(&self) -> usize {
        self.shards.iter().map(ClockTable::pinned_usage).sum()
    }

    /// Bytes of the cache's own structures (shards and their slot arrays), beside the charge
    /// of what it holds.
    pub fn structure_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.shards)
            + self.shards.iter().map(ClockTable::slot_bytes).sum::<usize>()
    }

    /// Lookups that found their key.
    pub fn hits(&self) -> u64 {
        self.hits.sum()
    }

    /// Lookups that did not.
    pub fn misses(&self) -> u64 {
        self.misses.sum()
    }

    /// Entries held.
    pub fn occupancy(&self) -> usize {
        self.shards.iter().map(ClockTable::occupancy).sum()
    }

    /// Slots in all tables (drained generations of a growing table included: what is
    /// allocated).
    pub fn table_slots(&self) -> usize {
        self.shards.iter().map(ClockTable::len).sum()
    }

    /// Slots of the tables that hold or may receive entries: without the drained older
    /// generations of a growing table (the denominator of a load factor).
    pub fn live_table_slots(&self) -> usize {
        self.shards.iter().map(ClockTable::live_len).sum()
    }

    /// The estimated entry charge the tables were sized with (0: the tables grow).
    pub fn estimated_entry_charge(&self) -> usize {
        self.estimated_entry_charge
    }

    /// The most generations any shard's table has (1 until a growing table grows).
    pub fn max_generations(&self) -> usize {
        self.shards.iter().map(ClockTable::generation_count).max().unwrap_or(1)
    }

    /// Whether inserts that do not fit fail rather than exceed the capacity.
    pub fn strict_capacity_limit(&self) -> bool {
        self.strict
    }

    /// Number of shards.
    pub fn num_shards(&self) -> usize {
        self.shards.len()
    }

    #[cfg(all(test, not(any(feature = "shuttle", feature = "loom"))))]
    fn check(&self) {
        for s in &*self.shards {
            s.check();
        }
    }
}

/// A reference to a cached entry ([`ClockCache::lookup_handle`]); derefs to its value. The
/// entry stays in its slot until the handle drops (module doc).
pub struct ClockHandle<'a, K: Eq + Clone, V> {
    table: &'a ClockTable<K, V>,
    generation: &'a Generation<K, V>,
    slot: &'a Slot<K, V>,
    acquired: u64,
    value: &'a V,
}

impl<K: Eq + Clone, V> Deref for ClockHandle<'_, K, V> {
    type Target = V;

    #[inline]
    fn deref(&self) -> &V {
        self.value
    }
}

impl<K: Eq + Clone, V> Drop for ClockHandle<'_, K, V> {
    #[inline]
    fn drop(&mut self) {
        self.table.release_after_hit(self.generation, self.slot, self.acquired);
    }
}
