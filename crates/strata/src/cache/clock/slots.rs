//! One open-addressed array of slots (a *generation* of a shard's table) and what a slot
//! holds. The protocol that moves slots between states is `table.rs`'s; this module only
//! lays the array out and walks probe sequences.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use super::sync::{AtomicU32, AtomicU64, AtomicUsize, UnsafeCell};

/// What a filled slot holds.
pub(super) struct Payload<K, V> {
    pub(super) key: K,
    pub(super) value: Arc<V>,
    pub(super) charge: usize,
    pub(super) hash: u64,
}

/// One table entry. 64-byte aligned so that lookups of neighbouring slots by different
/// threads do not write the same cache line.
#[repr(align(64))]
pub(super) struct Slot<K, V> {
    /// The state word (`meta.rs`).
    pub(super) meta: AtomicU64,
    /// How many entries whose probe sequence passes through this slot live further along it:
    /// a lookup that finds neither its key nor a displacement here stops.
    pub(super) displacements: AtomicU32,
    pub(super) payload: UnsafeCell<Option<Payload<K, V>>>,
}

impl<K, V> Slot<K, V> {
    /// The value of this slot, on which the caller holds a reference taken by
    /// `ClockTable::acquire`.
    ///
    /// # Safety
    /// The reference must still be held; the returned borrow must end before it is released.
    #[inline]
    pub(super) unsafe fn value(&self) -> Option<&V> {
        // SAFETY: the caller holds a reference taken in the VISIBLE state: the payload stays
        // in place and unwritten while the borrow lives.
        self.payload.with(|p| unsafe { (*p).as_ref().map(|pl| &*pl.value) })
    }
}

/// A generation's slot array with its mask: what a probe reads. A fixed table keeps a copy of
/// its one generation's view beside its other read-mostly fields (`ClockTable::fixed_view`),
/// so a lookup reads no generation header.
pub(super) struct SlotsView<'a, K, V> {
    pub(super) slots: &'a [Slot<K, V>],
    pub(super) mask: usize,
}

impl<K, V> Clone for SlotsView<'_, K, V> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<K, V> Copy for SlotsView<'_, K, V> {}

impl<'a, K, V> SlotsView<'a, K, V> {
    /// As [`Generation::probe_start`].
    #[inline]
    pub(super) fn probe_start(&self, hash: u64) -> (usize, usize) {
        (hash as usize & self.mask, ((hash >> 32) as usize | 1) & self.mask)
    }

    /// As [`Generation::slot`].
    #[inline]
    pub(super) fn slot(&self, i: usize) -> &'a Slot<K, V> {
        // SAFETY: `mask` is the array's size - 1 and the size is a power of two (both come
        // from one `Generation`), so `i & mask` is in bounds.
        unsafe { self.slots.get_unchecked(i & self.mask) }
    }

    #[inline]
    pub(super) fn len(&self) -> usize {
        self.mask + 1
    }
}

/// A counter on its own cache lines (written by inserts and frees, not by lookups).
#[repr(align(128))]
pub(super) struct Padded<T>(pub(super) T);

/// A power-of-two array of slots with its own slot budget.
pub(super) struct Generation<K, V> {
    pub(super) slots: Box<[Slot<K, V>]>,
    pub(super) mask: usize,
    /// At most this many slots are reserved or filled; below the array size, so that an
    /// insert always finds an empty slot within its probe sequence.
    pub(super) occupancy_limit: usize,
    /// Slots reserved or filled.
    pub(super) occupancy: Padded<AtomicUsize>,
}

impl<K, V> Generation<K, V> {
    /// `slots` empty slots (a power of two).
    pub(super) fn new(slots: usize) -> Self {
        debug_assert!(slots.is_power_of_two());
        let slots: Box<[Slot<K, V>]> = (0..slots)
            .map(|_| Slot {
                meta: AtomicU64::new(0),
                displacements: AtomicU32::new(0),
                payload: UnsafeCell::new(None),
            })
            .collect();
        let len = slots.len();
        Generation {
            mask: len - 1,
            occupancy_limit: (len - len / 8).min(len - 1).max(1),
            slots,
            occupancy: Padded(AtomicUsize::new(0)),
        }
    }

    pub(super) fn len(&self) -> usize {
        self.slots.len()
    }

    /// The slot array and its mask, for a probe.
    #[inline]
    pub(super) fn view(&self) -> SlotsView<'_, K, V> {
        SlotsView { slots: &self.slots, mask: self.mask }
    }

    /// The first slot of `hash`'s probe sequence and its (odd, so the sequence visits every
    /// slot) step.
    #[inline]
    pub(super) fn probe_start(&self, hash: u64) -> (usize, usize) {
        (hash as usize & self.mask, ((hash >> 32) as usize | 1) & self.mask)
    }

    /// The slot at `i` (taken modulo the size).
    #[inline]
    pub(super) fn slot(&self, i: usize) -> &Slot<K, V> {
        // SAFETY: `i & self.mask` is below the size (a power of two, `mask` = size - 1).
        unsafe { self.slots.get_unchecked(i & self.mask) }
    }

    /// The index of a slot of this array.
    pub(super) fn index_of(&self, s: &Slot<K, V>) -> usize {
        (s as *const Slot<K, V> as usize - self.slots.as_ptr() as usize)
            / std::mem::size_of::<Slot<K, V>>()
    }

    /// Takes one displacement off each slot of `hash`'s probe sequence from its start up to,
    /// not including, slot `end` (undoing the increments of the insert that passed them).
    pub(super) fn undisplace(&self, hash: u64, end: usize) {
        let (mut j, step) = self.probe_start(hash);
        while j != end {
            self.slot(j).displacements.fetch_sub(1, Relaxed);
            j = (j + step) & self.mask;
        }
    }
}
