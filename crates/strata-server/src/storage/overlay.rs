//! A transaction's writes not yet written (EXEC): while a thread runs the commands of one
//! EXEC, [`super::Store::write`] adds each command's batch to this thread's overlay instead
//! of writing it, and every read of the store sees the overlay over the engine (a
//! `WriteBatchWithIndex`). EXEC then writes the overlay as one batch
//! ([`super::Store::commit_overlay`]): other connections see all of the transaction or none
//! of it, and a crash keeps all of it or none.
//!
//! While an overlay is active the metadata cache is neither read for keys the overlay holds
//! nor filled (its entries would be of writes not made).

use std::cell::RefCell;

use strata::{WriteBatch, WriteBatchWithIndex};

thread_local! {
    static OVERLAY: RefCell<Option<WriteBatchWithIndex>> = const { RefCell::new(None) };
}

/// Starts an overlay on this thread (replacing any left over).
pub fn begin() {
    OVERLAY.with(|o| *o.borrow_mut() = Some(WriteBatchWithIndex::new(0, true)));
}

/// Ends this thread's overlay and returns it.
pub fn take() -> Option<WriteBatchWithIndex> {
    OVERLAY.with(|o| o.borrow_mut().take())
}

/// Puts `w` back as this thread's overlay (after a [`take`] that borrowed it).
pub fn restore(w: WriteBatchWithIndex) {
    OVERLAY.with(|o| *o.borrow_mut() = Some(w));
}

/// Whether this thread has an overlay.
pub fn active() -> bool {
    OVERLAY.with(|o| o.borrow().is_some())
}

/// Adds `batch` to this thread's overlay; `false` (nothing done) when there is none.
pub fn add(batch: &WriteBatch) -> bool {
    OVERLAY.with(|o| match o.borrow_mut().as_mut() {
        Some(w) => {
            w.append(batch);
            true
        }
        None => false,
    })
}

/// Runs `f` on this thread's overlay, if there is one.
pub fn with<T>(f: impl FnOnce(&WriteBatchWithIndex) -> T) -> Option<T> {
    OVERLAY.with(|o| o.borrow().as_ref().map(f))
}
