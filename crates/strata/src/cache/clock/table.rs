//! One shard of the clock cache: one or more generations of open-addressed slot arrays
//! (`slots.rs`) under one byte budget, with no lock. The protocol, the growth rule and the
//! memory-ordering argument are in the parent module's doc.

use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};
use std::sync::Arc;

use super::meta::{
    clock, refs, state, with_clock, with_state_cleared, CLOCK_MASK, CLOCK_SHIFT, EMPTY, EXCLUSIVE,
    HIGH, INVISIBLE, MAX_CLOCK, MOVED, REF, STATE_SHIFT, VISIBLE,
};
use super::slots::{Generation, Padded, Payload, Slot, SlotsView};
use super::sync::{yield_now, AtomicBool, AtomicPtr, AtomicUsize};
use crate::cache::Priority;
use crate::util::prefetch::prefetch;

/// Slots the sweep claims at a time (one `fetch_add` on the hand per batch).
const SWEEP_BATCH: usize = 4;
/// Attempts at reserving a slot whose eviction pass freed nothing, before giving up.
const RESERVE_ATTEMPTS: usize = 3;
/// At most this many generations per shard (a growing table's sizes are S, 4S, 16S, ...).
pub(super) const MAX_GENERATIONS: usize = 8;
/// Each generation has 2^GROWTH_BITS times the slots of the one before.
const GROWTH_BITS: u32 = 2;
/// No generation has more slots.
pub(super) const MAX_SLOTS: usize = 1 << 30;

/// A reference taken by `acquire`: the entry's generation, its slot, and the slot's word as
/// the reference was taken.
pub(super) type Acquired<'a, K, V> = (&'a Generation<K, V>, &'a Slot<K, V>, u64);

/// A shard: generations of slot arrays bounded by `capacity` bytes of charge.
///
/// `repr(C)`: the fields a lookup reads (`max_generations`, the first generation's slot
/// pointer and mask, `generations`, `tables`) share the first cache line, which only a growth
/// writes; the counters written by inserts and frees have lines of their own (`Padded`).
#[repr(C, align(128))]
pub(super) struct ClockTable<K, V> {
    /// 1 for a fixed table.
    max_generations: usize,
    /// The first generation's slots (the array `tables[0]` owns, which never moves or
    /// changes size) and mask: a fixed table's lookups probe through these alone.
    first_slots: *const Slot<K, V>,
    first_mask: usize,
    /// Generations published (at least 1); `tables[..generations]` are set and never change.
    generations: AtomicUsize,
    tables: [AtomicPtr<Generation<K, V>>; MAX_GENERATIONS],
    /// The byte budget ([`ClockTable::set_capacity`] changes it); read once per decision.
    capacity: AtomicUsize,
    strict: bool,
    /// Entries' charges plus `reserved`.
    usage: Padded<AtomicUsize>,
    /// Charge held without an entry ([`ClockTable::reserve_charge`]); never evicted.
    reserved: AtomicUsize,
    /// The sweep's position (over the generations' slots laid end to end).
    hand: Padded<AtomicUsize>,
    /// Set while one thread builds the next generation.
    growing: Padded<AtomicBool>,
}

// SAFETY: the payload cells are only written by the one thread holding the slot in the
// EXCLUSIVE state and only read by threads holding a reference taken in the VISIBLE state, which
// excludes EXCLUSIVE (module doc); keys and values move between threads, hence `Send`, and are
// read (`Eq`, `Arc` clone) from several at once, hence `Sync`. The generation pointers are
// owned boxes, published once and freed only by `drop`; `first_slots` points into the first
// of them.
unsafe impl<K: Send + Sync, V: Send + Sync> Sync for ClockTable<K, V> {}
// SAFETY: as above; the table owns its keys and values.
unsafe impl<K: Send, V: Send + Sync> Send for ClockTable<K, V> {}

impl<K, V> Drop for ClockTable<K, V> {
    fn drop(&mut self) {
        let n = self.generations.load(Acquire);
        for t in &self.tables[..n] {
            // SAFETY: each published pointer came from `Box::into_raw` and is freed only here,
            // once; `&mut self` means no operation holds a reference into it.
            drop(unsafe { Box::from_raw(t.load(Acquire)) });
        }
    }
}

impl<K: Eq + Clone, V> ClockTable<K, V> {
    /// Bytes of the slot arrays of the generations published.
    pub(super) fn slot_bytes(&self) -> usize {
        let mut len = self.first_mask + 1;
        let mut total = 0;
        for _ in 0..self.generations.load(Relaxed) {
            total += len * std::mem::size_of::<Slot<K, V>>();
            len = (len << GROWTH_BITS).min(MAX_SLOTS);
        }
        total
    }

    /// A fixed table of `slots` slots (a power of two) holding up to `capacity` bytes of charge.
    #[cfg(test)]
    pub(super) fn new(capacity: usize, slots: usize, strict: bool) -> Self {
        Self::growing(capacity, slots, strict, 1)
    }

    /// A table whose first generation has `slots` slots and which may grow to
    /// `max_generations` generations (module doc).
    pub(super) fn growing(
        capacity: usize,
        slots: usize,
        strict: bool,
        max_generations: usize,
    ) -> Self {
        let first = Box::new(Generation::new(slots));
        let (first_slots, first_mask) = (first.slots.as_ptr(), first.mask);
        let first = Box::into_raw(first);
        let tables = std::array::from_fn(|i| {
            AtomicPtr::new(if i == 0 { first } else { std::ptr::null_mut() })
        });
        ClockTable {
            max_generations: max_generations.clamp(1, MAX_GENERATIONS),
            first_slots,
            first_mask,
            generations: AtomicUsize::new(1),
            tables,
            capacity: AtomicUsize::new(capacity),
            strict,
            usage: Padded(AtomicUsize::new(0)),
            reserved: AtomicUsize::new(0),
            hand: Padded(AtomicUsize::new(0)),
            growing: Padded(AtomicBool::new(false)),
        }
    }

    /// Generation `i`, which must be below a count read from `generations` (Acquire).
    #[inline]
    fn generation(&self, i: usize) -> &Generation<K, V> {
        // SAFETY: `tables[i]` was stored (Release) before the count that covers it was
        // published (Release), and the caller read that count with Acquire: the pointer is set
        // and points to a live generation, freed only when `self` drops.
        unsafe { &*self.tables[i].load(Acquire) }
    }

    /// The published generations, oldest first.
    #[inline]
    fn generations(&self) -> impl DoubleEndedIterator<Item = &Generation<K, V>> {
        let n = self.generations.load(Acquire);
        (0..n).map(move |i| self.generation(i))
    }

    /// The newest generation (where inserts go) and the count.
    #[inline]
    fn newest(&self) -> (&Generation<K, V>, usize) {
        let n = self.generations.load(Acquire);
        (self.generation(n - 1), n)
    }

    pub(super) fn usage(&self) -> usize {
        self.usage.0.load(Relaxed)
    }

    fn capacity(&self) -> usize {
        self.capacity.load(Relaxed)
    }

    /// Gives the shard `capacity` bytes, evicting what can be evicted until it fits (entries
    /// readers hold stay until released; a fixed table's slots stay as many as they were).
    pub(super) fn set_capacity(&self, capacity: usize) {
        self.capacity.store(capacity, Relaxed);
        let used = self.usage.0.load(Relaxed);
        if used > capacity {
            self.evict(used - capacity, None);
        }
    }

    /// The charge of the entries a reader holds: a reference taken (a handle) or the value
    /// shared (a lookup's clone), erased entries still held included. Each slot holding an
    /// entry is read under a reference of this call's own, taken as a lookup takes one.
    pub(super) fn pinned_usage(&self) -> usize {
        let mut pinned = 0;
        for g in self.generations() {
            for i in 0..g.len() {
                let s = g.slot(i);
                let st = state(s.meta.load(Acquire));
                if st != VISIBLE && st != INVISIBLE {
                    continue;
                }
                let old = s.meta.fetch_add(REF, Acquire);
                let st = state(old);
                if (st == VISIBLE || st == INVISIBLE) && old & MOVED == 0 {
                    // SAFETY: the reference was taken in a state that keeps the payload in
                    // place and unwritten until it is released (as in `acquire_in`; an
                    // INVISIBLE entry is freed only by the release of its last reference).
                    let (charge, shared) = s.payload.with(|p| match unsafe { &*p } {
                        Some(pl) => (pl.charge, Arc::strong_count(&pl.value) > 1),
                        None => (0, false),
                    });
                    if refs(old) > 0 || shared {
                        pinned += charge;
                    }
                }
                self.release(g, s);
            }
        }
        pinned
    }

    pub(super) fn occupancy(&self) -> usize {
        self.generations().map(|g| g.occupancy.0.load(Relaxed)).sum()
    }

    /// Slots in all generations.
    pub(super) fn len(&self) -> usize {
        self.generations().map(Generation::len).sum()
    }

    /// Slots of the generations that hold or may receive entries: the newest, and older ones
    /// a growth has not drained yet (a drained generation stays allocated but is never
    /// inserted into again: inserts go to the newest).
    pub(super) fn live_len(&self) -> usize {
        let n = self.generations.load(Acquire);
        (0..n)
            .map(|i| self.generation(i))
            .enumerate()
            .filter(|(i, g)| i + 1 == n || g.occupancy.0.load(Relaxed) > 0)
            .map(|(_, g)| g.len())
            .sum()
    }

    /// Generations published.
    pub(super) fn generation_count(&self) -> usize {
        self.generations.load(Acquire)
    }

    /// Each generation's occupancy, oldest first (tests).
    #[cfg(all(test, not(feature = "shuttle")))]
    pub(super) fn generation_occupancy(&self) -> Vec<usize> {
        self.generations().map(|g| g.occupancy.0.load(Relaxed)).collect()
    }

    /// The value of a visible entry for `key`.
    #[inline]
    pub(super) fn lookup(&self, hash: u64, key: &K) -> Option<Arc<V>> {
        let (g, s, acquired) = self.acquire(hash, key)?;
        // SAFETY: `acquire` returned a reference taken in the VISIBLE state on a payload that
        // matched: the payload is neither written nor freed until `release_after_hit`.
        let v = s.payload.with(|p| unsafe { (*p).as_ref().map(|pl| pl.value.clone()) });
        self.release_after_hit(g, s, acquired);
        v
    }

    /// Takes a reference on a visible entry for `key`: the entry's generation, its slot and
    /// the slot's word as the reference was taken. The caller reads the payload (which is
    /// `Some`) and gives the reference back with `release_after_hit`.
    ///
    /// Generations are probed oldest first, skipping empty older ones (after a growth has
    /// moved their entries, all of them), so that an entry being moved is found in one place
    /// or the other: its copy is published before the original is hidden (module doc); a
    /// miss probes again if the count grew meanwhile.
    ///
    /// A fixed table has one generation for its whole life: its lookups probe it through the
    /// view kept in the table's first line, with no generation count to read or re-check.
    #[inline]
    pub(super) fn acquire(&self, hash: u64, key: &K) -> Option<Acquired<'_, K, V>> {
        if self.max_generations == 1 {
            let g = self.generation(0);
            return self.acquire_in(g, self.first_view(), hash, key).map(|(s, m)| (g, s, m));
        }
        let mut n = self.generations.load(Acquire);
        loop {
            for i in 0..n {
                let g = self.generation(i);
                if i + 1 < n && g.occupancy.0.load(Acquire) == 0 {
                    continue;
                }
                if let Some((s, m)) = self.acquire_in(g, g.view(), hash, key) {
                    return Some((g, s, m));
                }
            }
            // A miss that raced a growth (it saw a moved original, or its generation
            // emptied, after the new generation was published) probes again with it.
            let now = self.generations.load(Acquire);
            if now == n {
                return None;
            }
            n = now;
        }
    }

    /// The first generation's slots, from the copies in the table's first line.
    #[inline]
    fn first_view(&self) -> SlotsView<'_, K, V> {
        // SAFETY: `first_slots` and `first_mask` were taken from generation 0's array, which
        // `tables[0]` owns, never reallocates, and frees only when `self` drops; its length is
        // `first_mask + 1`. Slots are only accessed through shared references (atomics and the
        // payload protocol), so a shared slice over them is sound.
        let slots = unsafe { std::slice::from_raw_parts(self.first_slots, self.first_mask + 1) };
        SlotsView { slots, mask: self.first_mask }
    }

    /// Probes `view` (the slots of `g`) for a visible entry for `key` and takes a reference
    /// on it.
    #[inline(always)]
    fn acquire_in<'a>(
        &self,
        g: &'a Generation<K, V>,
        view: SlotsView<'a, K, V>,
        hash: u64,
        key: &K,
    ) -> Option<(&'a Slot<K, V>, u64)> {
        let (mut i, step) = view.probe_start(hash);
        for _ in 0..view.len() {
            let s = view.slot(i);
            // Peek first: a slot that is not visible is not worth a read-modify-write.
            // Acquire: an entry seen already moved must show its copy.
            if state(s.meta.load(Acquire)) == VISIBLE {
                let old = s.meta.fetch_add(REF, Acquire);
                if state(old) == VISIBLE {
                    // SAFETY: the reference was taken in the VISIBLE state, so no thread can
                    // move the slot to EXCLUSIVE (which needs refs == 0) until it is released:
                    // the payload is not written meanwhile, and the Acquire increment
                    // synchronises with the Release that published it.
                    let hit = s.payload.with(|p| match unsafe { &*p } {
                        Some(pl) => pl.hash == hash && pl.key == *key,
                        None => false,
                    });
                    if hit {
                        return Some((s, old));
                    }
                }
                self.release(g, s);
            }
            if s.displacements.load(Relaxed) == 0 {
                return None;
            }
            i = (i + step) & view.mask;
        }
        None
    }

    /// Drops a reference taken by a hit, raising the entry's clock to the maximum in the same
    /// operation when it is lower (one attempt; on a race the plain release does).
    #[inline]
    pub(super) fn release_after_hit(&self, g: &Generation<K, V>, s: &Slot<K, V>, acquired: u64) {
        if clock(acquired) < MAX_CLOCK {
            let cur = acquired + REF;
            let bumped = with_clock(cur, MAX_CLOCK) - REF;
            if s.meta.compare_exchange(cur, bumped, Release, Relaxed).is_ok() {
                return; // still VISIBLE: nothing to free
            }
        }
        self.release(g, s);
    }

    /// Drops a reference; the last reference to an INVISIBLE entry frees it.
    #[inline]
    fn release(&self, g: &Generation<K, V>, s: &Slot<K, V>) {
        let old = s.meta.fetch_sub(REF, Release);
        if state(old) == INVISIBLE && refs(old) == 1 {
            self.try_free_invisible(g, s);
        }
    }

    /// Frees an INVISIBLE entry if no one holds it (else its last holder will).
    fn try_free_invisible(&self, g: &Generation<K, V>, s: &Slot<K, V>) {
        let mut cur = s.meta.load(Relaxed);
        while state(cur) == INVISIBLE && refs(cur) == 0 {
            match s.meta.compare_exchange(cur, with_state_cleared(cur, EXCLUSIVE), Acquire, Relaxed)
            {
                Ok(_) => {
                    self.free(g, s, cur & MOVED != 0);
                    return;
                }
                Err(x) => cur = x,
            }
        }
    }

    /// Empties a slot this thread holds EXCLUSIVE; returns the freed charge (none for a
    /// `moved` entry, whose copy holds it). The value is dropped after the slot is empty again.
    fn free(&self, g: &Generation<K, V>, s: &Slot<K, V>, moved: bool) -> usize {
        // SAFETY: this thread moved the slot to EXCLUSIVE with an Acquire CAS from a state
        // with no references: no other thread reads or writes the payload until the Release
        // below makes the slot EMPTY.
        let p = s.payload.with_mut(|p| unsafe { (*p).take() });
        let charge = if moved { 0 } else { p.as_ref().map_or(0, |p| p.charge) };
        if let Some(p) = &p {
            g.undisplace(p.hash, g.index_of(s));
        }
        s.meta.fetch_sub(EXCLUSIVE << STATE_SHIFT, Release);
        // Release: a lookup that reads the generation empty sees the copies of its moved
        // entries.
        g.occupancy.0.fetch_sub(1, Release);
        self.usage.0.fetch_sub(charge, Relaxed);
        drop(p);
        charge
    }

    /// Makes every visible entry for `key` invisible, in every generation (each is freed by
    /// its last holder); returns how many this call erased.
    ///
    /// Generations are erased oldest first and the count is read again after each: a copy
    /// that a growth made of an entry this erase finds already moved (module doc) was
    /// published before the move, so the erase reaches it.
    pub(super) fn erase(&self, hash: u64, key: &K) -> usize {
        let mut erased = 0;
        let mut i = 0;
        while i < self.generations.load(Acquire) {
            let g = self.generation(i);
            if g.occupancy.0.load(Acquire) > 0 {
                erased += self.erase_in(g, hash, key);
            }
            i += 1;
        }
        erased
    }

    fn erase_in(&self, g: &Generation<K, V>, hash: u64, key: &K) -> usize {
        let mut erased = 0;
        let (mut i, step) = g.probe_start(hash);
        for _ in 0..g.len() {
            let s = g.slot(i);
            // Acquire, unlike a lookup's peek: an entry seen already moved must show its copy.
            if state(s.meta.load(Acquire)) == VISIBLE {
                let old = s.meta.fetch_add(REF, Acquire);
                if state(old) == VISIBLE {
                    // SAFETY: as in `acquire_in`: a reference taken in the VISIBLE state.
                    let matches = s.payload.with(
                        |p| matches!(unsafe { &*p }, Some(pl) if pl.hash == hash && pl.key == *key),
                    );
                    if matches {
                        // VISIBLE -> INVISIBLE is setting the state's low bit.
                        let before = s.meta.fetch_or(1 << STATE_SHIFT, Relaxed);
                        erased += usize::from(state(before) == VISIBLE);
                    }
                }
                self.release(g, s);
            }
            if s.displacements.load(Relaxed) == 0 {
                break;
            }
            i = (i + step) & g.mask;
        }
        erased
    }

    /// Whether an insert of `charge` bytes would evict: the byte budget is used up, or the
    /// newest generation's slots are and the table cannot grow.
    pub(super) fn would_evict(&self, charge: usize) -> bool {
        if self.usage.0.load(Relaxed) + charge > self.capacity() {
            return true;
        }
        let (g, n) = self.newest();
        n >= self.max_generations && g.occupancy.0.load(Relaxed) >= g.occupancy_limit
    }

    /// Inserts `key` (replacing visible entries for it); returns whether it was cached. A
    /// charge above the capacity is not cached; in strict mode neither is one that does not
    /// fit after evicting what can be evicted.
    pub(super) fn insert(
        &self,
        hash: u64,
        key: K,
        value: Arc<V>,
        charge: usize,
        priority: Priority,
    ) -> bool {
        self.erase(hash, &key);
        if charge > self.capacity() {
            return false;
        }
        let Some(g) = self.reserve(charge) else {
            return false;
        };
        let published = match priority {
            Priority::High => (MAX_CLOCK << CLOCK_SHIFT) | HIGH,
            Priority::Low => 1 << CLOCK_SHIFT,
        };
        if Self::place(g, Payload { key, value, charge, hash }, published).is_some() {
            return true;
        }
        g.occupancy.0.fetch_sub(1, Relaxed);
        self.usage.0.fetch_sub(charge, Relaxed);
        false
    }

    /// Fills an empty slot of `g` (whose slot budget the caller reserved) with `payload` and
    /// publishes it VISIBLE with the clock and priority bits (and references) of `published`.
    /// Returns the slot, or None if the probe sequence had no empty slot.
    fn place(g: &Generation<K, V>, payload: Payload<K, V>, published: u64) -> Option<&Slot<K, V>> {
        let (start, step) = g.probe_start(payload.hash);
        let mut i = start;
        let mut payload = Some(payload);
        for probes in 0..g.len() {
            let s = g.slot(i);
            let mut m = s.meta.load(Relaxed);
            while state(m) == EMPTY {
                match s.meta.compare_exchange(m, with_state_cleared(m, EXCLUSIVE), Acquire, Relaxed)
                {
                    Ok(_) => {
                        // SAFETY: this thread holds the slot EXCLUSIVE (Acquire CAS from
                        // EMPTY, which synchronises with the Release of its last free): no
                        // other thread touches the payload until the Release below.
                        s.payload.with_mut(|p| unsafe { *p = payload.take() });
                        s.meta
                            .fetch_add(((VISIBLE - EXCLUSIVE) << STATE_SHIFT) | published, Release);
                        return Some(s);
                    }
                    Err(x) => m = x,
                }
            }
            s.displacements.fetch_add(1, Relaxed);
            i = (i + step) & g.mask;
            if probes + 1 == g.len() {
                // No empty slot seen on the whole sequence (concurrent frees and fills moved
                // the empty ones around): give back what was taken.
                let mut j = start;
                for _ in 0..g.len() {
                    g.slot(j).displacements.fetch_sub(1, Relaxed);
                    j = (j + step) & g.mask;
                }
            }
        }
        None
    }

    /// Takes a slot of the newest generation (growing the table when its slots, not the
    /// bytes, ran out) and `charge` bytes from the budgets, evicting as needed. Returns the
    /// generation the slot was reserved in.
    fn reserve(&self, charge: usize) -> Option<&Generation<K, V>> {
        let mut failed = 0;
        let g = loop {
            let (g, n) = self.newest();
            let occ = g.occupancy.0.load(Relaxed);
            if occ < g.occupancy_limit {
                if g.occupancy.0.compare_exchange(occ, occ + 1, Relaxed, Relaxed).is_ok() {
                    break g;
                }
                continue;
            }
            if n < self.max_generations && self.usage.0.load(Relaxed) + charge <= self.capacity() {
                self.grow(n, g.len());
                continue;
            }
            if !self.evict(0, Some(g)) {
                failed += 1;
                if failed >= RESERVE_ATTEMPTS {
                    return None;
                }
            }
        };
        loop {
            let (used, cap) = (self.usage.0.load(Relaxed), self.capacity());
            if used + charge <= cap {
                if self.usage.0.compare_exchange(used, used + charge, Relaxed, Relaxed).is_ok() {
                    return Some(g);
                }
                continue;
            }
            if !self.evict(used + charge - cap, None) {
                if self.strict {
                    g.occupancy.0.fetch_sub(1, Relaxed);
                    return None;
                }
                self.usage.0.fetch_add(charge, Relaxed);
                return Some(g);
            }
        }
    }

    /// Takes `charge` bytes of the byte budget without an entry (no slot), evicting entries
    /// to make room. Returns false, taking nothing, in strict mode when what can be evicted
    /// does not make room; otherwise the budget may be exceeded, as by a non-strict insert.
    pub(super) fn reserve_charge(&self, charge: usize) -> bool {
        loop {
            let (used, cap) = (self.usage.0.load(Relaxed), self.capacity());
            if used + charge <= cap {
                if self.usage.0.compare_exchange(used, used + charge, Relaxed, Relaxed).is_ok() {
                    break;
                }
                continue;
            }
            if !self.evict(used + charge - cap, None) {
                if self.strict {
                    return false;
                }
                self.usage.0.fetch_add(charge, Relaxed);
                break;
            }
        }
        self.reserved.fetch_add(charge, Relaxed);
        true
    }

    /// Gives back `charge` bytes taken by [`ClockTable::reserve_charge`].
    pub(super) fn release_charge(&self, charge: usize) {
        self.reserved.fetch_sub(charge, Relaxed);
        self.usage.0.fetch_sub(charge, Relaxed);
    }

    /// Publishes generation `n` (with 2^GROWTH_BITS times `len` slots) unless another thread
    /// is building one, in which case this yields once and the caller tries again (an insert
    /// waits for a growth in progress rather than evict an entry the new generation has room
    /// for). Lookups never wait.
    #[cold]
    fn grow(&self, n: usize, len: usize) {
        if self.growing.0.compare_exchange(false, true, Acquire, Relaxed).is_err() {
            yield_now();
            return;
        }
        // Under the flag no other thread publishes: `generations` changes only here. If
        // another grower published since `n` was read, the caller retries with the new newest.
        if self.generations.load(Acquire) == n {
            let slots = (len << GROWTH_BITS).min(MAX_SLOTS);
            let next = Box::into_raw(Box::new(Generation::new(slots)));
            self.tables[n].store(next, Release);
            self.generations.store(n + 1, Release);
            self.migrate(n);
        }
        self.growing.0.store(false, Release);
    }

    /// Moves the entries of the generations below `newest` into it, while its slot budget
    /// lasts (module doc: a copy is published, then the original is made INVISIBLE and MOVED;
    /// if an erase or replacement got there first, the copy is erased too).
    #[cold]
    fn migrate(&self, newest: usize) {
        let to = self.generation(newest);
        for gi in 0..newest {
            let from = self.generation(gi);
            for s in &from.slots {
                if state(s.meta.load(Relaxed)) != VISIBLE {
                    continue;
                }
                let old = s.meta.fetch_add(REF, Acquire);
                if state(old) == VISIBLE && !self.migrate_one(s, old, to) {
                    self.release(from, s);
                    return; // the newest generation is full
                }
                self.release(from, s);
            }
        }
    }

    /// Copies the entry in `s` (on which this thread holds a reference taken in the VISIBLE
    /// state, word `old`) into `to`. Returns false if `to` has no slot to spare.
    fn migrate_one(&self, s: &Slot<K, V>, old: u64, to: &Generation<K, V>) -> bool {
        let occ = &to.occupancy.0;
        let mut o = occ.load(Relaxed);
        loop {
            if o >= to.occupancy_limit {
                return false;
            }
            match occ.compare_exchange(o, o + 1, Relaxed, Relaxed) {
                Ok(_) => break,
                Err(x) => o = x,
            }
        }
        // SAFETY: a reference taken in the VISIBLE state: the payload is in place and not
        // written until it is released.
        let copy = s.payload.with(|p| unsafe {
            (*p).as_ref().map(|pl| Payload {
                key: pl.key.clone(),
                value: pl.value.clone(),
                charge: pl.charge,
                hash: pl.hash,
            })
        });
        let Some(copy) = copy else {
            occ.fetch_sub(1, Relaxed);
            return true;
        };
        // The copy keeps the clock and priority, and is published holding one reference.
        let Some(c) = Self::place(to, copy, (old & (CLOCK_MASK | HIGH)) + REF) else {
            occ.fetch_sub(1, Relaxed);
            return true;
        };
        let before = s.meta.fetch_or((1 << STATE_SHIFT) | MOVED, AcqRel);
        if state(before) != VISIBLE {
            // Erased or replaced while being copied: so is the copy.
            c.meta.fetch_or(1 << STATE_SHIFT, AcqRel);
        }
        self.release(to, c);
        true
    }

    /// Runs the clock sweep until `bytes` bytes are freed (over every generation) or, with
    /// `only`, one slot of that generation is, or every entry had its chance (the sweep passed
    /// each slot more than `MAX_CLOCK` times). Returns whether it freed anything.
    fn evict(&self, bytes: usize, only: Option<&Generation<K, V>>) -> bool {
        let n = self.generations.load(Acquire);
        let total: usize = match only {
            Some(g) => g.len(),
            None => (0..n).map(|i| self.generation(i).len()).sum(),
        };
        let limit = total * (MAX_CLOCK as usize + 2);
        let (mut freed_bytes, mut freed_slots, mut scanned) = (0, 0, 0);
        let want_slots = usize::from(only.is_some());
        while (freed_bytes < bytes || freed_slots < want_slots) && scanned < limit {
            let mut offset = self.hand.0.fetch_add(SWEEP_BATCH, Relaxed) % total;
            // The batch's generation, with the generations laid end to end.
            let g = match only {
                Some(g) => g,
                None => {
                    let mut i = 0;
                    while offset >= self.generation(i).len() {
                        offset -= self.generation(i).len();
                        i += 1;
                    }
                    self.generation(i)
                }
            };
            // The batch's slots are on lines of their own, read with a compare-and-swap each
            // (a full barrier): loading them all first waits for memory once, not per slot.
            for j in 0..SWEEP_BATCH {
                prefetch(g.slot(offset + j));
            }
            for j in 0..SWEEP_BATCH {
                if let Some(charge) = self.try_evict(g, g.slot(offset + j)) {
                    freed_bytes += charge;
                    freed_slots += 1;
                }
            }
            scanned += SWEEP_BATCH;
        }
        freed_slots > 0
    }

    /// One step of the sweep at `s`: an unreferenced visible entry has its clock lowered, or
    /// is evicted at 0 (returning its charge).
    fn try_evict(&self, g: &Generation<K, V>, s: &Slot<K, V>) -> Option<usize> {
        let m = s.meta.load(Relaxed);
        if state(m) != VISIBLE || refs(m) != 0 {
            return None;
        }
        if clock(m) > 0 {
            // Best effort: a lost race means the entry was just used or swept.
            let _ = s.meta.compare_exchange(m, m - (1 << CLOCK_SHIFT), Relaxed, Relaxed);
            return None;
        }
        s.meta
            .compare_exchange(m, with_state_cleared(m, EXCLUSIVE), AcqRel, Relaxed)
            .ok()
            .map(|_| self.free(g, s, false))
    }

    /// Checks the invariants that hold when no operation is running (tests).
    #[cfg(test)]
    pub(super) fn check(&self) {
        let mut usage = 0;
        for (gi, g) in self.generations().enumerate() {
            let mut occupied = 0;
            let mut expected_disp = vec![0u32; g.len()];
            for (i, s) in g.slots.iter().enumerate() {
                let m = s.meta.load(Relaxed);
                assert_eq!(refs(m), 0, "gen {gi} slot {i}: a reference outlived its operation");
                // SAFETY: quiescent: no operation runs, so nothing writes the payload.
                let p = s.payload.with(|p| unsafe { (*p).as_ref().map(|p| (p.hash, p.charge)) });
                match state(m) {
                    EMPTY => assert!(p.is_none(), "gen {gi} slot {i}: empty with a payload"),
                    VISIBLE => {
                        let (hash, charge) = p.expect("visible slot without payload");
                        usage += charge;
                        occupied += 1;
                        let (mut j, step) = g.probe_start(hash);
                        while j != i {
                            expected_disp[j] += 1;
                            j = (j + step) & g.mask;
                        }
                    }
                    st => panic!("gen {gi} slot {i}: state {st} when quiescent"),
                }
            }
            for (i, s) in g.slots.iter().enumerate() {
                assert_eq!(
                    s.displacements.load(Relaxed),
                    expected_disp[i],
                    "gen {gi} slot {i} displacements"
                );
            }
            assert_eq!(g.occupancy.0.load(Relaxed), occupied, "gen {gi} occupancy");
            assert!(occupied <= g.occupancy_limit);
        }
        let reserved = self.reserved.load(Relaxed);
        assert_eq!(self.usage.0.load(Relaxed), usage + reserved);
        if self.strict {
            assert!(usage + reserved <= self.capacity());
        }
    }
}
