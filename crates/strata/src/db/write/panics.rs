//! A panic in user code during a write: the memtable's link runs the comparator (its insert
//! only for a range tombstone's bounds), which may panic. Such a panic must not leave other
//! writers waiting: a write group's leader owes its followers their answers, the pipeline the
//! group's publication (later groups and memtable switches wait for it) and the queue its
//! leadership; a member inserting its own batch owes its leader the insert's outcome.
//!
//! So the write path runs memtable inserts and links through [`catching`]: a panic there
//! becomes a failed insert, which fails its group and sets the background error (every later
//! write is refused: part of a batch may be in the memtable), and every obligation is met as
//! on any failed insert. The panic is then raised again on the thread it happened on, when
//! that thread's write returns ([`raise_held`]), so the caller sees its comparator's panic as
//! it would have without the DB in between; the other members of its group get the error.
//!
//! What this cannot mend: records whose link the panic cut short are unreachable until the DB
//! is reopened (the WAL holds them), so point reads and iterators through that memtable fail
//! until then (`MemTable::check_sound`; `docs/contract.md`).

use std::any::Any;
use std::cell::RefCell;
use std::panic::{self, AssertUnwindSafe};

use crate::db::background::this_thread;
use crate::error::{Error, Result};

thread_local! {
    /// The panic [`catching`] caught on this thread, until its write returns.
    static HELD: RefCell<Option<Box<dyn Any + Send>>> = const { RefCell::new(None) };
}

/// Runs `f` (a memtable insert or link); a panic in it is held for [`raise_held`] and comes
/// back as `Error::Panic` naming this thread and the panic's message.
pub(super) fn catching<T>(f: impl FnOnce() -> T) -> Result<T> {
    match panic::catch_unwind(AssertUnwindSafe(f)) {
        Ok(v) => Ok(v),
        Err(payload) => {
            let e = Error::from_panic(this_thread(), payload.as_ref());
            // The first panic of the write is the one to raise.
            HELD.with(|h| {
                h.borrow_mut().get_or_insert(payload);
            });
            Err(e)
        }
    }
}

/// Raises again the panic [`catching`] held on this thread, if any. Called as a failed write
/// returns, once its obligations to the other writers are met.
pub(super) fn raise_held() {
    if let Some(p) = HELD.with(|h| h.borrow_mut().take()) {
        panic::resume_unwind(p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_comes_back_as_an_error_and_is_raised_again_once() {
        let r: Result<()> = catching(|| panic!("comparator says no"));
        let Err(Error::Panic { message, .. }) = r else { panic!("a panic error") };
        assert_eq!(message, "comparator says no");
        let raised = panic::catch_unwind(raise_held).expect_err("raised again");
        assert_eq!(raised.downcast_ref::<&str>(), Some(&"comparator says no"));
        raise_held(); // nothing held any more
        assert_eq!(catching(|| 7).unwrap(), 7);
    }
}
