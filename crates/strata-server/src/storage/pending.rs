//! Replicated writes in flight: what a command's write owes before its reply.
//!
//! In cluster mode a write is a proposal to its slot's Raft group ([`super::Replicate`]),
//! which settles it once the entry is committed and applied here, or failed
//! ([`Settlement`]). A command's thread does not wait for that unless it must:
//!
//! - **Deferred** (a connection's top-level command, [`deferring`]): `Store::write` proposes
//!   the batch and returns at once; the thread owes the settlement ([`take_owed`]), which the
//!   connection awaits asynchronously before it replies to the command or runs the next one
//!   on that connection. A failed settlement replaces the command's reply with its error.
//! - **Blocking** (background tasks, tests, anything not deferring): the write waits for
//!   its settlement ([`Settlement::wait_blocking`]) and returns its outcome.
//!
//! Contract that keeps deferral invisible to the command:
//! - A command that reads the store, or writes again, after a deferred write of its own
//!   first waits for that write ([`settle_own`]), so it sees its own writes. A failure found
//!   there is kept: later writes of the command fail with it, and the command's reply is
//!   replaced with it.
//! - The key-lock stripes the command held when it wrote stay marked until the settlement
//!   ([`super::locks`]): another writer of those keys waits for the entry to be applied, as
//!   it would have waited for the command's locks; but for a blind write, which reads
//!   nothing and whose batch comes after the entry in its group's order.
//! - Readers of other connections see the write once it is applied, after its commit: never
//!   before, so no reader sees a write that a failover could lose.

use std::cell::{Cell, RefCell};
use std::sync::Arc;

use parking_lot::{Condvar, Mutex};
use tokio::sync::Notify;

use super::locks::Marked;

/// The outcome of one replicated write: `Err` is the client's error reply.
pub type Outcome = Result<(), String>;

/// One proposed write's outcome, set once by whoever proposed it and awaited by its writer.
pub struct Settlement {
    outcome: Mutex<Option<Outcome>>,
    /// The key-lock stripes held by the writer, released when the outcome is set.
    marks: Mutex<Option<Marked>>,
    blocking: Condvar,
    asynchronous: Notify,
}

impl Settlement {
    /// An unsettled write whose writer held the stripes `marks`.
    pub fn new(marks: Marked) -> Arc<Settlement> {
        Arc::new(Settlement {
            outcome: Mutex::new(None),
            marks: Mutex::new(Some(marks)),
            blocking: Condvar::new(),
            asynchronous: Notify::new(),
        })
    }

    /// Sets the outcome (the first call only), releases the writer's stripes and wakes every
    /// waiter. Never blocks: it runs on the Raft runtime's workers.
    pub fn settle(&self, outcome: Outcome) {
        {
            let mut slot = self.outcome.lock();
            if slot.is_some() {
                return;
            }
            *slot = Some(outcome);
        }
        // After the outcome is set: a writer woken by the release finds the entry applied.
        if let Some(marks) = self.marks.lock().take() {
            marks.release();
        }
        self.blocking.notify_all();
        self.asynchronous.notify_waiters();
    }

    /// The outcome, if settled.
    pub fn outcome(&self) -> Option<Outcome> {
        self.outcome.lock().clone()
    }

    /// Waits for the outcome without holding a thread.
    pub async fn wait(&self) -> Outcome {
        loop {
            let notified = self.asynchronous.notified();
            tokio::pin!(notified);
            // Registered before the check, so a settle between the two still wakes it.
            notified.as_mut().enable();
            if let Some(o) = self.outcome() {
                return o;
            }
            notified.await;
        }
    }

    /// Waits for the outcome, blocking this thread (an async worker's other tasks are handed
    /// off first).
    pub fn wait_blocking(&self) -> Outcome {
        if let Some(o) = self.outcome() {
            return o;
        }
        off_worker(|| {
            let mut slot = self.outcome.lock();
            loop {
                if let Some(o) = slot.as_ref() {
                    return o.clone();
                }
                self.blocking.wait(&mut slot);
            }
        })
    }
}

/// Runs `f`, which blocks, handing an async worker's other tasks to another thread first
/// (`block_in_place`); on a thread outside the runtime it just runs it.
pub fn off_worker<T>(f: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}

/// What this thread's command owes for its deferred writes.
enum Owed {
    Nothing,
    /// Its latest deferred write (earlier ones were settled before it was proposed).
    Pending(Arc<Settlement>),
    /// A deferred write of the command failed with this reply.
    Failed(String),
}

thread_local! {
    static DEFER: Cell<bool> = const { Cell::new(false) };
    static OWED: RefCell<Owed> = const { RefCell::new(Owed::Nothing) };
    static WRITER: Cell<Option<u64>> = const { Cell::new(None) };
}

/// Runs `f` (a command of client `id`) with its writes attributed to that client
/// ([`writer`]): in cluster mode the entry that carries them names it, so the node that
/// applies it can leave a NOLOOP tracking client's own changes untold (`cluster::apply`).
pub fn as_writer<T>(id: u64, f: impl FnOnce() -> T) -> T {
    struct Restore(Option<u64>);
    impl Drop for Restore {
        fn drop(&mut self) {
            WRITER.with(|w| w.set(self.0));
        }
    }
    let _restore = Restore(WRITER.with(|w| w.replace(Some(id))));
    f()
}

/// The client whose command runs on this thread ([`as_writer`]); `None` outside one (the
/// server's own writes: expiry, eviction, background tasks).
pub fn writer() -> Option<u64> {
    WRITER.with(Cell::get)
}

/// What a command owes for its deferred writes ([`deferring`]): the settlement of its last
/// one (`Ok`), or the reply of one that failed (`Err`).
pub type Owing = Result<Arc<Settlement>, String>;

/// Runs `f` (one top-level command) with its replicated writes deferred, and returns with
/// its result what they owe (`None`: nothing). The caller awaits that before it replies or
/// runs the next command of the connection.
pub fn deferring<T>(f: impl FnOnce() -> T) -> (T, Option<Owing>) {
    struct Reset(bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            DEFER.with(|d| d.set(self.0));
            if !self.0 {
                // Left behind only by a panic out of `f`: nothing may carry it to the next
                // command on this thread.
                take_owed();
            }
        }
    }
    let reset = Reset(DEFER.with(|d| d.replace(true)));
    let out = f();
    let owed = if reset.0 { None } else { take_owed() };
    drop(reset);
    (out, owed)
}

/// Runs `f` with this thread's writes not deferred (each waits for its settlement), apart
/// from what the surrounding command owes, which is kept for it: a command's code that
/// writes on another client's behalf (serving a blocked client) and must know the outcome.
pub fn undeferred<T>(f: impl FnOnce() -> T) -> T {
    struct Restore(bool, Option<Owed>);
    impl Drop for Restore {
        fn drop(&mut self) {
            DEFER.with(|d| d.set(self.0));
            if let Some(o) = self.1.take() {
                OWED.with(|x| *x.borrow_mut() = o);
            }
        }
    }
    let _restore = Restore(
        DEFER.with(|d| d.replace(false)),
        Some(OWED.with(|o| std::mem::replace(&mut *o.borrow_mut(), Owed::Nothing))),
    );
    f()
}

/// Whether writes on this thread are deferred now.
pub fn is_deferring() -> bool {
    DEFER.with(Cell::get)
}

/// Records `s` as this thread's latest deferred write (its earlier one must be settled).
pub fn owe(s: Arc<Settlement>) {
    OWED.with(|o| *o.borrow_mut() = Owed::Pending(s));
}

/// Waits for this thread's deferred write, if one is unsettled; returns the command's
/// failure, if one of its deferred writes failed.
pub fn settle_own() -> Option<String> {
    OWED.with(|o| {
        let mut owed = o.borrow_mut();
        match &*owed {
            Owed::Nothing => None,
            Owed::Failed(reply) => Some(reply.clone()),
            Owed::Pending(s) => match s.wait_blocking() {
                Ok(()) => {
                    *owed = Owed::Nothing;
                    None
                }
                Err(reply) => {
                    *owed = Owed::Failed(reply.clone());
                    Some(reply)
                }
            },
        }
    })
}

/// Takes what this thread's command owes: `None` when it owes nothing.
fn take_owed() -> Option<Owing> {
    OWED.with(|o| match std::mem::replace(&mut *o.borrow_mut(), Owed::Nothing) {
        Owed::Nothing => None,
        Owed::Pending(s) => Some(Ok(s)),
        Owed::Failed(reply) => Some(Err(reply)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::locks::LockTable;

    #[test]
    fn a_command_names_its_writer_until_it_ends_also_when_it_panics() {
        assert_eq!(writer(), None);
        as_writer(7, || {
            assert_eq!(writer(), Some(7));
            as_writer(9, || assert_eq!(writer(), Some(9)));
            assert_eq!(writer(), Some(7));
        });
        assert_eq!(writer(), None);
        let r = std::panic::catch_unwind(|| as_writer(3, || panic!("a command's panic")));
        assert!(r.is_err());
        assert_eq!(writer(), None);
    }

    #[test]
    fn a_settlement_wakes_blocking_and_async_waiters_and_releases_the_stripes() {
        let table = LockTable::default();
        let guards = table.lock(&["k"]);
        let s = Settlement::new(table.mark_held());
        drop(guards);
        assert!(table.is_marked(b"k"));
        let t = {
            let s = s.clone();
            std::thread::spawn(move || s.wait_blocking())
        };
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let s2 = s.clone();
        let waiter = std::thread::spawn(move || rt.block_on(s2.wait()));
        std::thread::sleep(std::time::Duration::from_millis(20));
        s.settle(Err("MOVED 1 x:1".into()));
        s.settle(Ok(()));
        assert_eq!(t.join().unwrap(), Err("MOVED 1 x:1".into()), "the first outcome stays");
        assert_eq!(waiter.join().unwrap(), Err("MOVED 1 x:1".into()));
        assert!(!table.is_marked(b"k"));
    }

    #[test]
    fn a_commands_failure_is_kept_until_taken() {
        let table = LockTable::default();
        let s = Settlement::new(table.mark_held());
        owe(s.clone());
        s.settle(Err("ERR no quorum".into()));
        assert_eq!(settle_own(), Some("ERR no quorum".into()));
        assert_eq!(settle_own(), Some("ERR no quorum".into()), "later writes fail with it");
        assert!(matches!(take_owed(), Some(Err(r)) if r == "ERR no quorum"));
        assert!(take_owed().is_none());
        assert_eq!(settle_own(), None);
    }

    /// Holds every proposal until the test settles it.
    #[derive(Default)]
    struct Held(Mutex<Vec<Arc<Settlement>>>);

    impl crate::storage::Replicate for Held {
        fn propose(&self, _: u16, _slot: u16, _batch: strata::WriteBatch, done: Arc<Settlement>) {
            self.0.lock().push(done);
        }
    }

    fn clustered() -> (tempfile::TempDir, Arc<crate::storage::Store>, Arc<Held>) {
        use crate::storage::{Store, SyncPolicy};
        let dir = tempfile::tempdir().unwrap();
        // A cluster node's store, as partition 0's command sees it.
        let dbs = crate::storage::databases::Databases::open(
            strata::Options::default(),
            dir.path(),
            SyncPolicy::No,
            |_, _| false,
            1,
            true,
        )
        .unwrap();
        let store: Arc<Store> = dbs.partition(0).clone();
        let held = Arc::new(Held::default());
        assert!(store.set_replicate(held.clone()));
        (dir, store, held)
    }

    fn put(store: &crate::storage::Store, key: &str) -> strata::WriteBatch {
        let mut b = strata::WriteBatch::new();
        store.put_meta(&mut b, key.as_bytes(), b"raw".to_vec());
        b
    }

    #[test]
    fn a_deferred_write_returns_at_once_and_its_failure_is_owed() {
        let (_dir, store, held) = clustered();
        let (r, owed) = deferring(|| {
            let _g = store.locks.lock(&["k"]);
            store.write(put(&store, "k"))
        });
        assert!(r.is_ok(), "deferred: proposed, not waited for");
        assert!(store.locks.is_marked(b"k"), "its stripe stays marked after the guards");
        let proposed = held.0.lock().pop().unwrap();
        proposed.settle(Err("MOVED 7 127.0.0.1:7001".into()));
        let Some(Ok(s)) = owed else { panic!("the write is owed") };
        assert_eq!(s.outcome(), Some(Err("MOVED 7 127.0.0.1:7001".into())));
        assert!(!store.locks.is_marked(b"k"));
    }

    #[test]
    fn a_command_reads_and_writes_after_its_deferred_write_only_once_it_settled() {
        let (_dir, store, held) = clustered();
        let settler = {
            let held = held.clone();
            std::thread::spawn(move || loop {
                if let Some(s) = held.0.lock().pop() {
                    std::thread::sleep(std::time::Duration::from_millis(30));
                    s.settle(Err("ERR no quorum".into()));
                    return;
                }
                std::thread::yield_now();
            })
        };
        let (second, owed) = deferring(|| {
            store.write(put(&store, "a")).unwrap();
            // The read waits for the first write; the second write fails with its failure
            // and is never proposed.
            store.read_meta_uncached(b"a").unwrap();
            store.write(put(&store, "b"))
        });
        settler.join().unwrap();
        assert!(
            matches!(second, Err(crate::storage::WriteError::Replication(r)) if r == "ERR no quorum")
        );
        assert!(matches!(owed, Some(Err(r)) if r == "ERR no quorum"));
        assert!(held.0.lock().is_empty(), "the second write was not proposed");
    }

    #[test]
    fn deferring_is_scoped() {
        assert!(!is_deferring());
        let ((), owed) = deferring(|| {
            assert!(is_deferring());
            let table = LockTable::default();
            owe(Settlement::new(table.mark_held()));
            // A nested scope leaves the debt to the outer one.
            assert!(deferring(|| assert!(is_deferring())).1.is_none());
            assert!(is_deferring());
        });
        assert!(matches!(owed, Some(Ok(_))));
        assert!(!is_deferring());
        assert!(take_owed().is_none());
    }
}
