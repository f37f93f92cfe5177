//! Per-thread cached super versions (RocksDB's thread-local `SuperVersion`): a point read
//! takes no shared lock and touches no shared reference count when its thread's cached super
//! version is current.
//!
//! Each DB has a small array of cache-line-padded slots; a thread uses slot
//! `thread_index() % SLOTS` (threads beyond `SLOTS` share slots). A slot holds null, an owned
//! strong reference to a super version (`Arc::into_raw`), or `IN_USE`.
//!
//! - A read swaps `IN_USE` into its slot and takes what was there. A reference whose
//!   `number` equals the DB's current number is used as is; a stale one is dropped and
//!   replaced by the current super version (through the `RwLock`, as before); `IN_USE` means
//!   another thread sharing the slot is reading, and this read takes the locked path without
//!   touching the slot. Afterwards the read CASes its reference back in place of `IN_USE`; if
//!   that fails, an installation swept the slot meanwhile, and the read drops its reference.
//! - Installing a super version (under the super-version write lock) raises the number, then
//!   sweeps: every slot is swapped to null and the references found are dropped. So no slot
//!   keeps an old super version (its memtables and table files) alive after an installation:
//!   a reference taken out before the sweep is dropped by its reader's failed CAS, and one
//!   taken out after it was fetched after the installation (the sweep's swap happens before
//!   the reader's swap that reads its null, which happens before the reader's `RwLock` read).
//!   One exception: two threads sharing a slot can interleave so that the first puts back a
//!   reference fetched before the sweep after the second emptied the slot; that reference is
//!   stale by number, replaced at the slot's next use, and dropped with the DB at the latest.
//! - The number check makes every use correct regardless: a read only uses a super version
//!   that was current when it checked (the same guarantee the locked path gives).
//! - Dropping the DB drops every slot's reference; no read is running then.

use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::sync::Arc;

use super::SuperVersion;
use crate::util::thread_index::thread_index;

const SLOTS: usize = 32;

/// The marker of a slot taken by a read. Never dereferenced; `Arc` pointers are aligned, so
/// no super version lives at address 1.
fn in_use() -> *mut SuperVersion {
    ptr::without_provenance_mut(1)
}

#[repr(align(128))]
struct Slot(AtomicPtr<SuperVersion>);

pub(crate) struct LocalSuperVersions {
    /// The number of the current super version.
    current: AtomicU64,
    slots: Box<[Slot]>,
}

/// Puts a read's reference back into its slot when the read ends (also on unwinding).
struct PutBack<'a> {
    slot: &'a Slot,
    sv: *const SuperVersion,
}

impl Drop for PutBack<'_> {
    fn drop(&mut self) {
        let sv = self.sv.cast_mut();
        if self.slot.0.compare_exchange(in_use(), sv, Ordering::Release, Ordering::Relaxed).is_err()
        {
            // SAFETY: `sv` came from `Arc::into_raw` and this read owns that reference; the
            // slot did not take it.
            drop(unsafe { Arc::from_raw(self.sv) });
        }
    }
}

impl LocalSuperVersions {
    pub(crate) fn new(number: u64) -> Self {
        LocalSuperVersions {
            current: AtomicU64::new(number),
            slots: (0..SLOTS).map(|_| Slot(AtomicPtr::new(ptr::null_mut()))).collect(),
        }
    }

    /// Calls `f` with the current super version: this thread's cached one when current, else
    /// `fresh()` (which reads the shared current one).
    #[inline]
    pub(crate) fn with<R>(
        &self,
        fresh: impl FnOnce() -> Arc<SuperVersion>,
        f: impl FnOnce(&SuperVersion) -> R,
    ) -> R {
        let slot = &self.slots[thread_index() % SLOTS];
        let taken = slot.0.swap(in_use(), Ordering::Acquire);
        if taken == in_use() {
            return f(&fresh()); // another thread sharing the slot is reading
        }
        let current = self.current.load(Ordering::Acquire);
        // SAFETY: a non-null pointer other than IN_USE in a slot is an owned reference from
        // `Arc::into_raw`, now owned by this read (the swap took it out).
        let cached = (!taken.is_null()).then(|| unsafe { &*taken });
        let sv: *const SuperVersion = match cached {
            Some(sv) if sv.number == current => taken,
            _ => {
                if !taken.is_null() {
                    // SAFETY: as above; the stale reference is this read's to drop.
                    drop(unsafe { Arc::from_raw(taken) });
                }
                Arc::into_raw(fresh())
            }
        };
        let guard = PutBack { slot, sv };
        // SAFETY: `guard` owns a strong reference to `*sv` until it is dropped, after `f`.
        f(unsafe { &*guard.sv })
    }

    /// The number of the current super version (raised after it is published).
    pub(crate) fn current(&self) -> u64 {
        self.current.load(Ordering::Acquire)
    }

    /// Records that super version `number` is current and drops every cached reference.
    /// Called by the installer after publishing it.
    pub(crate) fn invalidate(&self, number: u64) {
        self.current.store(number, Ordering::Release);
        for s in &*self.slots {
            let p = s.0.swap(ptr::null_mut(), Ordering::AcqRel);
            if !p.is_null() && p != in_use() {
                // SAFETY: an owned reference from `Arc::into_raw`, taken out of the slot.
                drop(unsafe { Arc::from_raw(p) });
            }
        }
    }
}

impl Drop for LocalSuperVersions {
    fn drop(&mut self) {
        for s in &*self.slots {
            let p = s.0.swap(ptr::null_mut(), Ordering::Acquire);
            if !p.is_null() && p != in_use() {
                // SAFETY: an owned reference from `Arc::into_raw`; no read runs any more.
                drop(unsafe { Arc::from_raw(p) });
            }
        }
    }
}
