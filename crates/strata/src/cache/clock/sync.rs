//! The atomics and the payload cell the clock table is built on: the standard ones, or, with
//! the `shuttle` or `loom` feature, those tools' instrumented versions (the same switch as
//! `memtable/sync.rs`, which `cache` may not import: it sits below the memtable). Under loom
//! the payload cell is loom's `UnsafeCell`, so the model checker also reports a payload read
//! that races with a write, not only atomics' orderings.
//!
//! [`UnsafeCell`] offers loom's closure interface (`with`, `with_mut`) in every build.

#[cfg(not(any(feature = "shuttle", feature = "loom")))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize};

#[cfg(feature = "shuttle")]
pub(crate) use shuttle::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize};

#[cfg(all(feature = "loom", not(feature = "shuttle")))]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize};

#[cfg(not(any(feature = "shuttle", feature = "loom")))]
pub(crate) use std::thread::yield_now;

#[cfg(feature = "shuttle")]
pub(crate) use shuttle::thread::yield_now;

#[cfg(all(feature = "loom", not(feature = "shuttle")))]
pub(crate) use loom::thread::yield_now;

/// An `UnsafeCell` accessed through closures (loom's interface).
#[cfg(not(all(feature = "loom", not(feature = "shuttle"))))]
pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(all(feature = "loom", not(feature = "shuttle"))))]
impl<T> UnsafeCell<T> {
    pub(crate) fn new(v: T) -> Self {
        UnsafeCell(std::cell::UnsafeCell::new(v))
    }

    /// Calls `f` with a shared pointer to the contents.
    #[inline]
    pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }

    /// Calls `f` with an exclusive pointer to the contents.
    #[inline]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}

#[cfg(all(feature = "loom", not(feature = "shuttle")))]
pub(crate) use loom::cell::UnsafeCell;
