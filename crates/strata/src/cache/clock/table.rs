//! One shard of the clock cache: a fixed-size open-addressed table of slots, with no lock.
//! The protocol and its memory-ordering argument are in the parent module's doc.

use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::Arc;

use super::meta::{
    clock, refs, state, with_clock, with_state_cleared, CLOCK_SHIFT, EMPTY, EXCLUSIVE, HIGH,
    INVISIBLE, MAX_CLOCK, REF, STATE_SHIFT, VISIBLE,
};
use super::sync::{AtomicU32, AtomicU64, AtomicUsize, UnsafeCell};
use crate::cache::Priority;

/// Slots the sweep claims at a time (one `fetch_add` on the hand per batch).
const SWEEP_BATCH: usize = 4;
/// Attempts at reserving a slot whose eviction pass freed nothing, before giving up.
const RESERVE_ATTEMPTS: usize = 3;

/// What a filled slot holds.
pub(super) struct Payload<K, V> {
    key: K,
    value: Arc<V>,
    charge: usize,
    hash: u64,
}

/// One table entry. 64-byte aligned so that lookups of neighbouring slots by different
/// threads do not write the same cache line.
#[repr(align(64))]
pub(super) struct Slot<K, V> {
    meta: AtomicU64,
    /// How many entries whose probe sequence passes through this slot live further along it:
    /// a lookup that finds neither its key nor a displacement here stops.
    displacements: AtomicU32,
    payload: UnsafeCell<Option<Payload<K, V>>>,
}

/// A fixed-size clock table bounded by `capacity` bytes of charge.
#[repr(align(128))]
pub(super) struct ClockTable<K, V> {
    slots: Box<[Slot<K, V>]>,
    mask: usize,
    /// At most this many slots are reserved or filled; below the table size, so that an
    /// insert always finds an empty slot within its probe sequence.
    occupancy_limit: usize,
    capacity: usize,
    strict: bool,
    usage: AtomicUsize,
    occupancy: AtomicUsize,
    /// The sweep's position (taken modulo the table size).
    hand: AtomicUsize,
}

// SAFETY: the payload cells are only written by the one thread holding the slot in the
// EXCLUSIVE state and only read by threads holding a reference taken in the VISIBLE state, which
// excludes EXCLUSIVE (module doc); keys and values move between threads, hence `Send`, and are
// read (`Eq`, `Arc` clone) from several at once, hence `Sync`.
unsafe impl<K: Send + Sync, V: Send + Sync> Sync for ClockTable<K, V> {}
// SAFETY: as above; the table owns its keys and values.
unsafe impl<K: Send, V: Send + Sync> Send for ClockTable<K, V> {}

impl<K: Eq, V> ClockTable<K, V> {
    /// A table of `slots` slots (a power of two) holding up to `capacity` bytes of charge.
    pub(super) fn new(capacity: usize, slots: usize, strict: bool) -> Self {
        debug_assert!(slots.is_power_of_two());
        let slots: Box<[Slot<K, V>]> = (0..slots)
            .map(|_| Slot {
                meta: AtomicU64::new(0),
                displacements: AtomicU32::new(0),
                payload: UnsafeCell::new(None),
            })
            .collect();
        let len = slots.len();
        ClockTable {
            mask: len - 1,
            occupancy_limit: (len - len / 8).min(len - 1).max(1),
            slots,
            capacity,
            strict,
            usage: AtomicUsize::new(0),
            occupancy: AtomicUsize::new(0),
            hand: AtomicUsize::new(0),
        }
    }

    pub(super) fn usage(&self) -> usize {
        self.usage.load(Relaxed)
    }

    pub(super) fn occupancy(&self) -> usize {
        self.occupancy.load(Relaxed)
    }

    pub(super) fn len(&self) -> usize {
        self.slots.len()
    }

    /// The first slot of `hash`'s probe sequence and its (odd, so the sequence visits every
    /// slot) step.
    #[inline]
    fn probe_start(&self, hash: u64) -> (usize, usize) {
        (hash as usize & self.mask, ((hash >> 32) as usize | 1) & self.mask)
    }

    /// The value of a visible entry for `key`.
    #[inline]
    pub(super) fn lookup(&self, hash: u64, key: &K) -> Option<Arc<V>> {
        let (s, acquired) = self.acquire(hash, key)?;
        // SAFETY: `acquire` returned a reference taken in the VISIBLE state on a payload that
        // matched: the payload is neither written nor freed until `release_after_hit`.
        let v = s.payload.with(|p| unsafe { (*p).as_ref().map(|pl| pl.value.clone()) });
        self.release_after_hit(s, acquired);
        v
    }

    /// Takes a reference on a visible entry for `key`: the slot and its word as the reference
    /// was taken. The caller reads the payload (which is `Some`) and then gives the reference
    /// back with `release_after_hit`.
    #[inline]
    pub(super) fn acquire(&self, hash: u64, key: &K) -> Option<(&Slot<K, V>, u64)> {
        let (mut i, step) = self.probe_start(hash);
        for _ in 0..self.slots.len() {
            // SAFETY: `i` is masked by `self.mask`, the table size minus one.
            let s = unsafe { self.slots.get_unchecked(i) };
            // Peek first: a slot that is not visible is not worth a read-modify-write.
            if state(s.meta.load(Relaxed)) == VISIBLE {
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
                self.release(s);
            }
            if s.displacements.load(Relaxed) == 0 {
                return None;
            }
            i = (i + step) & self.mask;
        }
        None
    }

    /// The value in a slot this thread holds a reference on, taken by `acquire`.
    ///
    /// # Safety
    /// The reference must still be held; the returned borrow must end before it is released.
    #[inline]
    pub(super) unsafe fn value_of<'a>(&self, s: &'a Slot<K, V>) -> Option<&'a V> {
        // SAFETY: the caller holds a reference taken in the VISIBLE state (see `acquire`): the
        // payload stays in place and unwritten while the borrow lives.
        s.payload.with(|p| unsafe { (*p).as_ref().map(|pl| &*pl.value) })
    }

    /// Drops a reference taken by a hit, raising the entry's clock to the maximum in the same
    /// operation when it is lower (one attempt; on a race the plain release does).
    #[inline]
    pub(super) fn release_after_hit(&self, s: &Slot<K, V>, acquired: u64) {
        if clock(acquired) < MAX_CLOCK {
            let cur = acquired + REF;
            let bumped = with_clock(cur, MAX_CLOCK) - REF;
            if s.meta.compare_exchange(cur, bumped, Release, Relaxed).is_ok() {
                return; // still VISIBLE: nothing to free
            }
        }
        self.release(s);
    }

    /// Drops a reference; the last reference to an INVISIBLE entry frees it.
    #[inline]
    fn release(&self, s: &Slot<K, V>) {
        let old = s.meta.fetch_sub(REF, Release);
        if state(old) == INVISIBLE && refs(old) == 1 {
            self.try_free_invisible(s);
        }
    }

    /// Frees an INVISIBLE entry if no one holds it (else its last holder will).
    fn try_free_invisible(&self, s: &Slot<K, V>) {
        let mut cur = s.meta.load(Relaxed);
        while state(cur) == INVISIBLE && refs(cur) == 0 {
            match s.meta.compare_exchange(cur, with_state_cleared(cur, EXCLUSIVE), Acquire, Relaxed)
            {
                Ok(_) => {
                    self.free(s);
                    return;
                }
                Err(x) => cur = x,
            }
        }
    }

    /// Empties a slot this thread holds EXCLUSIVE; returns the freed charge. The value is
    /// dropped after the slot is empty again.
    fn free(&self, s: &Slot<K, V>) -> usize {
        // SAFETY: this thread moved the slot to EXCLUSIVE with an Acquire CAS from a state
        // with no references: no other thread reads or writes the payload until the Release
        // below makes the slot EMPTY.
        let p = s.payload.with_mut(|p| unsafe { (*p).take() });
        let charge = p.as_ref().map_or(0, |p| p.charge);
        if let Some(p) = &p {
            let (mut j, step) = self.probe_start(p.hash);
            let i = self.index_of(s);
            while j != i {
                self.slots[j].displacements.fetch_sub(1, Relaxed);
                j = (j + step) & self.mask;
            }
        }
        s.meta.fetch_sub(EXCLUSIVE << STATE_SHIFT, Release);
        self.occupancy.fetch_sub(1, Relaxed);
        self.usage.fetch_sub(charge, Relaxed);
        drop(p);
        charge
    }

    fn index_of(&self, s: &Slot<K, V>) -> usize {
        // Slots are one array: the offset from its start is the index.
        (s as *const Slot<K, V> as usize - self.slots.as_ptr() as usize)
            / std::mem::size_of::<Slot<K, V>>()
    }

    /// Makes every visible entry for `key` invisible (each is freed by its last holder);
    /// returns how many this call erased.
    pub(super) fn erase(&self, hash: u64, key: &K) -> usize {
        let mut erased = 0;
        let (mut i, step) = self.probe_start(hash);
        for _ in 0..self.slots.len() {
            let s = &self.slots[i];
            if state(s.meta.load(Relaxed)) == VISIBLE {
                let old = s.meta.fetch_add(REF, Acquire);
                if state(old) == VISIBLE {
                    // SAFETY: as in `lookup`: a reference taken in the VISIBLE state.
                    let matches = s.payload.with(
                        |p| matches!(unsafe { &*p }, Some(pl) if pl.hash == hash && pl.key == *key),
                    );
                    if matches {
                        // VISIBLE -> INVISIBLE is setting the state's low bit.
                        let before = s.meta.fetch_or(1 << STATE_SHIFT, Relaxed);
                        erased += usize::from(state(before) == VISIBLE);
                    }
                }
                self.release(s);
            }
            if s.displacements.load(Relaxed) == 0 {
                break;
            }
            i = (i + step) & self.mask;
        }
        erased
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
        if charge > self.capacity || !self.reserve(charge) {
            return false;
        }
        let (start, step) = self.probe_start(hash);
        let mut i = start;
        let (initial_clock, high) = match priority {
            Priority::High => (MAX_CLOCK, HIGH),
            Priority::Low => (1, 0),
        };
        let mut payload = Some(Payload { key, value, charge, hash });
        for probes in 0..self.slots.len() {
            let s = &self.slots[i];
            let mut m = s.meta.load(Relaxed);
            while state(m) == EMPTY {
                match s.meta.compare_exchange(m, with_state_cleared(m, EXCLUSIVE), Acquire, Relaxed)
                {
                    Ok(_) => {
                        // SAFETY: this thread holds the slot EXCLUSIVE (Acquire CAS from
                        // EMPTY, which synchronises with the Release of its last free): no
                        // other thread touches the payload until the Release below.
                        s.payload.with_mut(|p| unsafe { *p = payload.take() });
                        let publish = ((VISIBLE - EXCLUSIVE) << STATE_SHIFT)
                            | (initial_clock << CLOCK_SHIFT)
                            | high;
                        s.meta.fetch_add(publish, Release);
                        return true;
                    }
                    Err(x) => m = x,
                }
            }
            s.displacements.fetch_add(1, Relaxed);
            i = (i + step) & self.mask;
            if probes + 1 == self.slots.len() {
                // No empty slot seen on the whole sequence (concurrent frees and fills moved
                // the empty ones around): give back what was taken.
                let mut j = start;
                for _ in 0..self.slots.len() {
                    self.slots[j].displacements.fetch_sub(1, Relaxed);
                    j = (j + step) & self.mask;
                }
            }
        }
        self.occupancy.fetch_sub(1, Relaxed);
        self.usage.fetch_sub(charge, Relaxed);
        false
    }

    /// Takes a slot and `charge` bytes from the budgets, evicting as needed.
    fn reserve(&self, charge: usize) -> bool {
        let mut failed = 0;
        loop {
            let occ = self.occupancy.load(Relaxed);
            if occ < self.occupancy_limit {
                if self.occupancy.compare_exchange(occ, occ + 1, Relaxed, Relaxed).is_ok() {
                    break;
                }
                continue;
            }
            if !self.evict(0, 1) {
                failed += 1;
                if failed >= RESERVE_ATTEMPTS {
                    return false;
                }
            }
        }
        loop {
            let used = self.usage.load(Relaxed);
            if used + charge <= self.capacity {
                if self.usage.compare_exchange(used, used + charge, Relaxed, Relaxed).is_ok() {
                    return true;
                }
                continue;
            }
            if !self.evict(used + charge - self.capacity, 0) {
                if self.strict {
                    self.occupancy.fetch_sub(1, Relaxed);
                    return false;
                }
                self.usage.fetch_add(charge, Relaxed);
                return true;
            }
        }
    }

    /// Runs the clock sweep until `bytes` bytes and `slots` slots are freed, or every entry
    /// had its chance (the sweep passed each slot more than `MAX_CLOCK` times). Returns whether
    /// it freed anything.
    fn evict(&self, bytes: usize, slots: usize) -> bool {
        let limit = self.slots.len() * (MAX_CLOCK as usize + 2);
        let (mut freed_bytes, mut freed_slots, mut scanned) = (0, 0, 0);
        while (freed_bytes < bytes || freed_slots < slots) && scanned < limit {
            let start = self.hand.fetch_add(SWEEP_BATCH, Relaxed);
            for j in 0..SWEEP_BATCH {
                if let Some(charge) = self.try_evict(&self.slots[(start + j) & self.mask]) {
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
    fn try_evict(&self, s: &Slot<K, V>) -> Option<usize> {
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
            .compare_exchange(m, with_state_cleared(m, EXCLUSIVE), Acquire, Relaxed)
            .ok()
            .map(|_| self.free(s))
    }

    /// Checks the invariants that hold when no operation is running (tests).
    #[cfg(test)]
    pub(super) fn check(&self) {
        let mut usage = 0;
        let mut occupied = 0;
        let mut expected_disp = vec![0u32; self.slots.len()];
        for (i, s) in self.slots.iter().enumerate() {
            let m = s.meta.load(Relaxed);
            assert_eq!(refs(m), 0, "slot {i}: a reference outlived its operation");
            // SAFETY: quiescent: no operation runs, so nothing writes the payload.
            let p = s.payload.with(|p| unsafe { (*p).as_ref().map(|p| (p.hash, p.charge)) });
            match state(m) {
                EMPTY => assert!(p.is_none(), "slot {i}: empty with a payload"),
                VISIBLE => {
                    let (hash, charge) = p.expect("visible slot without payload");
                    usage += charge;
                    occupied += 1;
                    let (mut j, step) = self.probe_start(hash);
                    while j != i {
                        expected_disp[j] += 1;
                        j = (j + step) & self.mask;
                    }
                }
                st => panic!("slot {i}: state {st} when quiescent"),
            }
        }
        for (i, s) in self.slots.iter().enumerate() {
            assert_eq!(s.displacements.load(Relaxed), expected_disp[i], "slot {i} displacements");
        }
        assert_eq!(self.occupancy.load(Relaxed), occupied);
        assert_eq!(self.usage.load(Relaxed), usage);
        assert!(occupied <= self.occupancy_limit);
        if self.strict {
            assert!(usage <= self.capacity);
        }
    }
}
