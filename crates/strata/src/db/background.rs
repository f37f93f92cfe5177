//! Background threads, and what a panic on one becomes.
//!
//! Contract: a panic in work the engine runs in the background (a flush, a compaction, a
//! purge, the stats dump; the user's compaction filter or merge operator called from them)
//! never leaves a caller waiting. It is caught, written to the info LOG with the thread's name
//! and the panic's message, and set as the sticky background error, which wakes every waiter
//! (`Db::flush`, writers waiting for memtable space, `wait_for_compact`, `compact_range`) with
//! that error and refuses every later write. The work a panic cut short leaves no state
//! behind that a waiter counts on: a compaction's inputs are released as for a failed job.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::thread::JoinHandle;

use super::DbInner;
use crate::error::{Error, Result};

/// The name of the calling thread, as the info LOG and `Error::Panic` give it.
pub(crate) fn this_thread() -> String {
    std::thread::current().name().unwrap_or("unnamed").to_string()
}

/// Runs `f`; a panic in it comes back as `Error::Panic` naming this thread.
pub(crate) fn catch_panic<T>(f: impl FnOnce() -> Result<T>) -> Result<T> {
    catch_unwind(AssertUnwindSafe(f))
        .unwrap_or_else(|payload| Err(Error::from_panic(this_thread(), payload.as_ref())))
}

/// Spawns background thread `name` running `body`. A panic that escapes `body` becomes the
/// DB's background error (the thread then ends; its work is refused from then on anyway).
pub(crate) fn spawn(
    inner: &Arc<DbInner>,
    name: String,
    body: impl FnOnce(&DbInner) + Send + 'static,
) -> Result<JoinHandle<()>> {
    let db = inner.clone();
    std::thread::Builder::new()
        .name(name)
        .spawn(move || {
            if let Err(e) = catch_panic(|| {
                body(&db);
                Ok(())
            }) {
                set_panic_error(&db, &e);
            }
        })
        .map_err(|e| Error::io("spawn thread", &inner.dir, e))
}

/// Records a caught panic as the background error (the info LOG line names the thread).
fn set_panic_error(inner: &DbInner, e: &Error) {
    let mut st = inner.state.lock();
    inner.set_bg_error(&mut st, e);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_an_error_naming_the_thread_and_message() {
        let r = std::thread::Builder::new()
            .name("strata-test-panic".into())
            .spawn(|| catch_panic::<()>(|| panic!("boom {}", 7)))
            .unwrap()
            .join()
            .unwrap();
        match r {
            Err(Error::Panic { thread, message }) => {
                assert_eq!(thread, "strata-test-panic");
                assert_eq!(message, "boom 7");
            }
            other => panic!("expected Error::Panic, got {other:?}"),
        }
        assert_eq!(catch_panic(|| Ok(3)).unwrap(), 3);
        let static_msg = catch_panic::<()>(|| std::panic::panic_any("static"));
        assert!(matches!(static_msg, Err(Error::Panic { message, .. }) if message == "static"));
        let other = catch_panic::<()>(|| std::panic::panic_any(5u32));
        assert!(
            matches!(other, Err(Error::Panic { message, .. }) if message.contains("not a string"))
        );
    }
}
