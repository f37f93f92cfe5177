//! Group commit for `appendfsync always` across keys and connections.
//!
//! A command writes its batch without a sync while it holds its keys' locks, so writers of
//! one hot key do not wait for each other's fdatasync one by one; the reply is held until a
//! WAL sync that *began after* the write has finished (`wait_durable`), and one sync serves
//! every write made before it began. This is how Redis's `appendfsync always` answers too:
//! commands run, one fsync, then the replies.
//!
//! Contract: when `wait_durable` returns `Ok`, every write this thread made before the call is
//! on the device. A failed sync fails every waiter it was to cover, and the engine refuses
//! later writes (its error is sticky), so no write after a failed sync is acknowledged.
//!
//! A write that owes a sync marks this thread (`owe_sync`); the connection loop settles the
//! debt before it sends the replies of the commands it ran (`take_owed_sync`).

use std::cell::Cell;

use parking_lot::{Condvar, Mutex};
use strata::Db;

#[derive(Default)]
struct State {
    /// Syncs begun, numbered from 1.
    started: u64,
    /// The highest-numbered sync finished.
    finished: u64,
    /// Whether a sync is running now.
    running: bool,
    /// The first sync that failed, with its error.
    failed: Option<(u64, String)>,
}

/// Shares WAL syncs among concurrent writers.
#[derive(Default)]
pub struct SyncGroup {
    state: Mutex<State>,
    done: Condvar,
}

impl SyncGroup {
    /// Returns once a WAL sync that began after this call has finished: every write this
    /// thread completed before the call is durable.
    pub fn wait_durable(&self, db: &Db) -> Result<(), String> {
        let mut st = self.state.lock();
        let need = st.started + 1;
        loop {
            if let Some((n, e)) = &st.failed {
                if *n <= need {
                    return Err(e.clone());
                }
            }
            if st.finished >= need {
                return Ok(());
            }
            if st.running {
                self.done.wait(&mut st);
                continue;
            }
            st.running = true;
            st.started += 1;
            let n = st.started;
            drop(st);
            let r = db.flush_wal(true);
            st = self.state.lock();
            st.running = false;
            st.finished = n;
            if let Err(e) = r {
                st.failed.get_or_insert((n, format!("ERR WAL sync failed: {e}")));
            }
            self.done.notify_all();
        }
    }
}

thread_local! {
    static OWED: Cell<bool> = const { Cell::new(false) };
}

/// Marks this thread as holding a write that must be durable before it is acknowledged.
pub fn owe_sync() {
    OWED.with(|o| o.set(true));
}

/// Whether this thread owed a sync (clearing the mark).
pub fn take_owed_sync() -> bool {
    OWED.with(|o| o.replace(false))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn concurrent_waiters_share_syncs_and_each_gets_one_that_began_after_it() {
        let dir = tempfile::tempdir().unwrap();
        let db = Arc::new(Db::open_default(dir.path()).unwrap());
        let g = Arc::new(SyncGroup::default());
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let (db, g) = (db.clone(), g.clone());
                std::thread::spawn(move || {
                    for i in 0..50 {
                        db.put(format!("k{t}-{i}"), "v").unwrap();
                        let before = g.state.lock().started;
                        g.wait_durable(&db).unwrap();
                        let st = g.state.lock();
                        assert!(st.finished > before, "a sync begun after the write finished");
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let syncs = g.state.lock().started;
        assert!(syncs <= 400, "{syncs}");
    }

    #[test]
    fn the_owed_mark_is_per_thread_and_taken_once() {
        assert!(!take_owed_sync());
        owe_sync();
        assert!(std::thread::spawn(take_owed_sync).join().map(|b| !b).unwrap());
        assert!(take_owed_sync());
        assert!(!take_owed_sync());
    }
}
