//! The synchronisation primitives the skiplist is built on: the standard atomics and
//! `parking_lot`'s mutex, or, with the `shuttle` feature, Shuttle's instrumented versions, so a
//! randomized scheduler can explore interleavings of the real skiplist code
//! (`tests.rs`, `shuttle_*`; run by `.ci/run` as
//! `cargo test -p strata --lib --features shuttle shuttle_`). Nothing else differs.

#[cfg(not(feature = "shuttle"))]
pub(crate) use std::sync::atomic::{AtomicPtr, AtomicUsize};

#[cfg(not(feature = "shuttle"))]
pub(crate) use parking_lot::{Mutex, MutexGuard};

#[cfg(feature = "shuttle")]
pub(crate) use shuttle::sync::atomic::{AtomicPtr, AtomicUsize};

#[cfg(feature = "shuttle")]
pub(crate) use shuttle::sync::MutexGuard;

/// Shuttle's mutex with `parking_lot`'s interface (no poisoning: a panic ends the test).
#[cfg(feature = "shuttle")]
pub(crate) struct Mutex<T>(shuttle::sync::Mutex<T>);

#[cfg(feature = "shuttle")]
impl<T> Mutex<T> {
    pub(crate) fn new(v: T) -> Self {
        Mutex(shuttle::sync::Mutex::new(v))
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
