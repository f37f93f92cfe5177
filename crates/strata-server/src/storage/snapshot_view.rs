//! Reads at one point in time: while a thread runs inside [`reading_at`], every read of a
//! store it makes (metadata records, sub-keys, scans) goes through one engine snapshot, past
//! the metadata cache (whose entries are the latest state) and past an EXEC's overlay. What
//! copies a whole dataset as of one moment (the RDB a replica or `redis-cli --rdb` is sent)
//! reads this way while the other connections go on writing.
//!
//! Every command's write is one atomic batch (EXEC's and a script's included), so a snapshot
//! holds each command's effect whole or not at all. Compaction keeps what a live snapshot
//! sees (its filters apply only to entries no snapshot can see), so the view stays whole for
//! as long as the handle lives.

use std::cell::RefCell;

use strata::{ReadOptions, SnapshotHandle};

thread_local! {
    static AT: RefCell<Option<SnapshotHandle>> = const { RefCell::new(None) };
}

/// Runs `f` with this thread's store reads at `snapshot`; nested calls read at the inner
/// one, and the outer view comes back when `f` ends or unwinds.
pub fn reading_at<R>(snapshot: &SnapshotHandle, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<SnapshotHandle>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let before = self.0.take();
            AT.with(|a| *a.borrow_mut() = before);
        }
    }
    let before = AT.with(|a| a.borrow_mut().replace(snapshot.clone()));
    let _restore = Restore(before);
    f()
}

/// Whether this thread reads at a snapshot now.
pub fn active() -> bool {
    AT.with(|a| a.borrow().is_some())
}

/// The snapshot this thread reads at, if any.
pub(super) fn current() -> Option<SnapshotHandle> {
    AT.with(|a| a.borrow().clone())
}

/// `ro` reading at this thread's snapshot, if it has one.
pub(super) fn apply(mut ro: ReadOptions) -> ReadOptions {
    if let Some(s) = current() {
        ro.snapshot = Some(s);
    }
    ro
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_view_is_restored_after_a_panic_inside() {
        let dir = tempfile::tempdir().unwrap();
        let db = strata::Db::open_default(dir.path()).unwrap();
        let snap = db.snapshot();
        assert!(!active());
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            reading_at(snap.handle(), || {
                assert!(active());
                panic!("inside");
            });
        }));
        assert!(caught.is_err());
        assert!(!active());
        reading_at(snap.handle(), || assert!(apply(ReadOptions::default()).snapshot.is_some()));
        assert!(apply(ReadOptions::default()).snapshot.is_none());
    }
}
