//! The synchronisation primitives the skiplist is built on: the standard atomics and
//! `parking_lot`'s mutex, or, with the `shuttle` or `loom` feature, those tools' instrumented
//! versions, so the real skiplist code can be explored under a randomized scheduler (Shuttle:
//! `tests.rs`, `shuttle_*`) or exhaustively under the C++11 memory model with bounded
//! preemption (loom: `tests.rs`, `loom_*`). `.ci/run` runs both:
//! `cargo test -p strata --lib --features shuttle shuttle_` and
//! `cargo test -p strata --lib --features loom loom_`. Nothing else differs.
//!
//! The mutex type offers `parking_lot`'s interface in all three builds: `lock` returns the
//! guard (no poisoning: a panic ends the test), `try_lock` an `Option`.

#[cfg(not(any(feature = "shuttle", feature = "loom")))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize};

#[cfg(not(any(feature = "shuttle", feature = "loom")))]
pub(crate) use parking_lot::Mutex;

#[cfg(feature = "shuttle")]
pub(crate) use shuttle::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize};

#[cfg(feature = "shuttle")]
use shuttle::sync as tool;

#[cfg(all(feature = "loom", not(feature = "shuttle")))]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize};

#[cfg(all(feature = "loom", not(feature = "shuttle")))]
use loom::sync as tool;

#[cfg(any(feature = "shuttle", feature = "loom"))]
pub(crate) use tool::MutexGuard;

/// The instrumented mutex with `parking_lot`'s interface.
#[cfg(any(feature = "shuttle", feature = "loom"))]
pub(crate) struct Mutex<T>(tool::Mutex<T>);

#[cfg(any(feature = "shuttle", feature = "loom"))]
impl<T> Mutex<T> {
    pub(crate) fn new(v: T) -> Self {
        Mutex(tool::Mutex::new(v))
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        self.0.try_lock().ok()
    }
}
