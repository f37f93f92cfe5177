//! Group commit: one WAL fdatasync in flight serves every write made before it began.
//!
//! Writers write without a sync, then ask for a sync that *begins after* the write and wait
//! for it (or hand a callback to run when it is done). One syncer thread (started on the
//! first request, stopped by [`SyncGroup::stop`]) runs the syncs back to back: while one
//! runs, requests gather for the next, so one fdatasync completes every write made before it
//! began, whichever connection or Raft group made it. strata-server's `appendfsync always`
//! and the Raft log of every group on a node share this (TiKV's raft-engine and CockroachDB
//! sync the same way).
//!
//! [`SyncGroup::request`] asks for a sync and returns its number; [`SyncGroup::wait`] (async)
//! or [`SyncGroup::wait_blocking`] returns when it has finished, and
//! [`SyncGroup::request_then`] runs a callback on the syncer thread instead (the Raft log's
//! append completion). No task hands its batch to another thread or blocks a runtime worker
//! on a sync.
//!
//! Contract: when a wait for the number `request` returned succeeds (or its callback gets
//! `Ok`), every write this thread made before `request` is on the device. A failed sync fails
//! every waiter it was to cover and every later one (the engine's error is sticky), so no
//! write after a failed sync is acknowledged. The syncer holds the `Db` weakly: it never
//! keeps a closed DB open, and a sync asked of a dropped DB fails. One `SyncGroup` serves one
//! `Db`: the syncer thread syncs the DB of the request that started it.

use std::fmt;
use std::sync::{Arc, Weak};

use parking_lot::{Condvar, Mutex};
use strata::Db;
use tokio::sync::watch;

/// Why a wait for a sync failed. Cloned to every waiter the failure covers.
#[derive(Debug, Clone)]
pub enum SyncError {
    /// The syncer thread could not be started.
    Spawn(Arc<std::io::Error>),
    /// A WAL sync failed or panicked: this one and every later one fail (the engine's error
    /// is sticky).
    Failed(Arc<strata::Error>),
    /// The syncer went away before the sync finished.
    Stopped,
}

impl fmt::Display for SyncError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SyncError::Spawn(e) => write!(f, "cannot start the WAL sync thread: {e}"),
            SyncError::Failed(e) => write!(f, "WAL sync failed: {e}"),
            SyncError::Stopped => f.write_str("WAL sync stopped"),
        }
    }
}

impl std::error::Error for SyncError {}

/// Run on the syncer thread with the outcome of the sync it waited for.
type Callback = Box<dyn FnOnce(Result<(), SyncError>) + Send>;

#[derive(Default)]
struct State {
    /// Syncs begun, numbered from 1.
    started: u64,
    /// The highest-numbered sync finished.
    finished: u64,
    /// The highest sync number requested.
    requested: u64,
    /// The first sync that failed, with its error.
    failed: Option<(u64, SyncError)>,
    /// Whether the syncer thread runs.
    syncer: bool,
    /// Stop the syncer once the requested syncs are done.
    stop: bool,
    /// Callbacks with the sync each waits for.
    callbacks: Vec<(u64, Callback)>,
}

/// What waiters watch: the last finished sync and the first failure.
#[derive(Clone, Default)]
struct Progress {
    finished: u64,
    failed: Option<(u64, SyncError)>,
}

impl Progress {
    /// `None` while sync `need` is pending; then its outcome.
    fn outcome(&self, need: u64) -> Option<Result<(), SyncError>> {
        if let Some((n, e)) = &self.failed {
            if *n <= need {
                return Some(Err(e.clone()));
            }
        }
        (self.finished >= need).then_some(Ok(()))
    }
}

/// Shares WAL syncs among concurrent writers.
pub struct SyncGroup {
    state: Mutex<State>,
    /// The syncer waits here for requests.
    wake: Condvar,
    /// Blocking waiters wait here.
    done: Condvar,
    progress: watch::Sender<Progress>,
}

impl Default for SyncGroup {
    fn default() -> Self {
        SyncGroup {
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
            done: Condvar::new(),
            progress: watch::Sender::new(Progress::default()),
        }
    }
}

/// The sync the syncer runs for `db`, holding it weakly.
fn wal_sync(db: &Arc<Db>) -> impl Fn() -> strata::Result<()> + Send + 'static {
    let db: Weak<Db> = Arc::downgrade(db);
    move || match db.upgrade() {
        Some(db) => db.flush_wal(true),
        None => Err(strata::Error::ShutdownInProgress),
    }
}

impl SyncGroup {
    /// Asks for a WAL sync that begins after this call; returns its number for
    /// [`SyncGroup::wait`]. Starts the syncer thread on the first call.
    pub fn request(self: &Arc<Self>, db: &Arc<Db>) -> u64 {
        self.request_with(|| wal_sync(db), None)
    }

    /// [`SyncGroup::request`], then `callback` runs on the syncer thread with the outcome of
    /// that sync (at once, on this thread, when an earlier failure already decided it).
    pub fn request_then(
        self: &Arc<Self>,
        db: &Arc<Db>,
        callback: impl FnOnce(Result<(), SyncError>) + Send + 'static,
    ) {
        self.request_with(|| wal_sync(db), Some(Box::new(callback)));
    }

    /// [`SyncGroup::request`], with the sync the syncer thread runs made by `make_sync` when
    /// that thread starts, and an optional callback registered under the same lock.
    fn request_with<S>(
        self: &Arc<Self>,
        make_sync: impl FnOnce() -> S,
        callback: Option<Callback>,
    ) -> u64
    where
        S: Fn() -> strata::Result<()> + Send + 'static,
    {
        let mut st = self.state.lock();
        let need = st.started + 1;
        st.requested = st.requested.max(need);
        if let Some(cb) = callback {
            let known = Progress { finished: st.finished, failed: st.failed.clone() }.outcome(need);
            match known {
                Some(r) => {
                    drop(st);
                    cb(r);
                    return need;
                }
                None => st.callbacks.push((need, cb)),
            }
        }
        if !st.syncer {
            st.syncer = true;
            let (g, sync) = (self.clone(), make_sync());
            let spawned = std::thread::Builder::new()
                .name("strata-wal-sync".into())
                .spawn(move || g.run_syncer(&sync));
            if let Err(e) = spawned {
                st.syncer = false;
                st.failed.get_or_insert((need, SyncError::Spawn(Arc::new(e))));
                let progress = Progress { finished: st.finished, failed: st.failed.clone() };
                let due = std::mem::take(&mut st.callbacks);
                drop(st);
                self.publish(None, progress.failed.clone());
                run_callbacks(due, &progress);
                return need;
            }
        }
        self.wake.notify_one();
        need
    }

    /// Returns once sync `need` (from [`SyncGroup::request`]) has finished.
    pub async fn wait(&self, need: u64) -> Result<(), SyncError> {
        let mut rx = self.progress.subscribe();
        let outcome = match rx.wait_for(|p| p.outcome(need).is_some()).await {
            Ok(p) => p.outcome(need).unwrap_or(Ok(())),
            Err(_) => Err(SyncError::Stopped),
        };
        outcome
    }

    /// [`SyncGroup::wait`] for a plain thread.
    pub fn wait_blocking(&self, need: u64) -> Result<(), SyncError> {
        let mut st = self.state.lock();
        loop {
            let p = Progress { finished: st.finished, failed: st.failed.clone() };
            if let Some(r) = p.outcome(need) {
                return r;
            }
            self.done.wait(&mut st);
        }
    }

    /// How many syncs the syncer thread has begun.
    #[cfg(test)]
    pub(crate) fn started(&self) -> u64 {
        self.state.lock().started
    }

    /// Stops the syncer thread after the syncs requested so far.
    pub fn stop(&self) {
        self.state.lock().stop = true;
        self.wake.notify_one();
    }

    fn publish(&self, finished: Option<u64>, failed: Option<(u64, SyncError)>) {
        self.done.notify_all();
        self.progress.send_modify(|p| {
            if let Some(f) = finished {
                p.finished = f;
            }
            p.failed = failed;
        });
    }

    /// Runs syncs until stopped. A panic in a sync fails it (and so every waiter it was to
    /// cover and every later one) instead of ending the thread, which would leave waiters
    /// waiting for ever.
    fn run_syncer(&self, sync: &dyn Fn() -> strata::Result<()>) {
        loop {
            let mut st = self.state.lock();
            while st.requested <= st.finished && !st.stop {
                self.wake.wait(&mut st);
            }
            if st.requested <= st.finished {
                st.syncer = false;
                return;
            }
            st.started += 1;
            let n = st.started;
            drop(st);
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(sync))
                .unwrap_or_else(|p| Err(strata::Error::from_panic("strata-wal-sync", p.as_ref())));
            let mut st = self.state.lock();
            st.finished = n;
            if let Err(e) = r {
                st.failed.get_or_insert((n, SyncError::Failed(Arc::new(e))));
            }
            let progress = Progress { finished: n, failed: st.failed.clone() };
            let (due, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut st.callbacks)
                .into_iter()
                .partition(|(need, _)| progress.outcome(*need).is_some());
            st.callbacks = waiting;
            drop(st);
            self.publish(Some(n), progress.failed.clone());
            if let Some(e) = run_callbacks(due, &progress) {
                // A callback that panicked may have left its owner waiting; the syncer thread
                // lives on, and every later sync fails with the panic, so no waiter hangs and
                // none is told a write is durable after the node's durability path broke.
                let mut st = self.state.lock();
                st.failed.get_or_insert((n + 1, SyncError::Failed(Arc::new(e))));
                let failed = st.failed.clone();
                drop(st);
                self.publish(None, failed);
            }
        }
    }
}

/// Runs the callbacks that are due, each to its end even when one panics; the first panic,
/// as an error.
fn run_callbacks(due: Vec<(u64, Callback)>, progress: &Progress) -> Option<strata::Error> {
    let mut panicked = None;
    for (need, cb) in due {
        let outcome = progress.outcome(need).unwrap_or(Err(SyncError::Stopped));
        if let Err(p) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| cb(outcome))) {
            panicked
                .get_or_insert(strata::Error::from_panic("strata-wal-sync callback", p.as_ref()));
        }
    }
    panicked
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Arc;

    /// A callback that panics neither ends the syncer thread nor lets a later waiter hang:
    /// the other callbacks of its sync still run, and every later sync fails with the panic.
    #[test]
    fn a_panicking_callback_fails_later_syncs_instead_of_hanging_them() {
        let dir = tempfile::tempdir().unwrap();
        let db = Arc::new(Db::open_default(dir.path()).unwrap());
        let g = Arc::new(SyncGroup::default());
        let (tx, rx) = std::sync::mpsc::channel();
        g.request_then(&db, |_| panic!("a callback's own bug"));
        // Run in the same sync or a later one: either way it is called.
        g.request_then(&db, move |r| tx.send(r.is_ok()).unwrap());
        rx.recv_timeout(std::time::Duration::from_secs(20)).expect("the next callback ran");
        db.put("k", "v").unwrap();
        let need = g.request(&db);
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = g.clone();
        std::thread::spawn(move || tx.send(waiter.wait_blocking(need)).unwrap());
        let r = rx.recv_timeout(std::time::Duration::from_secs(20)).expect("the wait ended");
        let err = r.unwrap_err();
        assert!(err.to_string().contains("a callback's own bug"), "{err}");
    }

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
                        let need = g.request(&db);
                        g.wait_blocking(need).unwrap();
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
        g.stop();
    }

    #[test]
    fn a_panicking_sync_fails_its_waiters_and_every_later_one() {
        let g = Arc::new(SyncGroup::default());
        let calls = Arc::new(AtomicU32::new(0));
        let c = calls.clone();
        let need = g.request_with(
            move || {
                move || {
                    assert!(c.fetch_add(1, Ordering::Relaxed) > 0, "device gone");
                    Ok(())
                }
            },
            None,
        );
        let e = g.wait_blocking(need).unwrap_err().to_string();
        assert!(e.contains("panic in thread strata-wal-sync: device gone"), "{e}");
        // The thread lives on; the failure is sticky.
        let later = g.request_with(|| || Ok(()), None);
        assert!(g.wait_blocking(later).is_err());
        g.stop();
    }

    #[test]
    fn async_waiters_get_a_sync_begun_after_their_request() {
        let dir = tempfile::tempdir().unwrap();
        let db = Arc::new(Db::open_default(dir.path()).unwrap());
        let g = Arc::new(SyncGroup::default());
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        rt.block_on(async {
            for i in 0..20 {
                db.put(format!("k{i}"), "v").unwrap();
                let before = g.state.lock().started;
                let need = g.request(&db);
                assert!(need > before);
                g.wait(need).await.unwrap();
                assert!(g.state.lock().finished > before);
            }
        });
        g.stop();
        for _ in 0..500 {
            if !g.state.lock().syncer {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        assert!(!g.state.lock().syncer, "the syncer stops");
    }

    #[test]
    fn callbacks_run_after_a_sync_that_began_after_their_request() {
        let dir = tempfile::tempdir().unwrap();
        let db = Arc::new(Db::open_default(dir.path()).unwrap());
        let g = Arc::new(SyncGroup::default());
        let (tx, rx) = std::sync::mpsc::channel();
        for i in 0..100u32 {
            db.put(format!("k{i}"), "v").unwrap();
            let before = g.state.lock().started;
            let (tx, g2) = (tx.clone(), g.clone());
            g.request_then(&db, move |r| {
                let finished = g2.state.try_lock().map(|s| s.finished);
                tx.send((i, before, r.is_ok(), finished)).unwrap();
            });
        }
        let mut got: Vec<_> = (0..100).map(|_| rx.recv().unwrap()).collect();
        got.sort_by_key(|g| g.0);
        for (i, before, ok, finished) in got {
            assert!(ok, "callback {i}");
            if let Some(f) = finished {
                assert!(f > before, "callback {i} ran after sync {f}, requested after {before}");
            }
        }
        g.stop();
    }

    #[test]
    fn the_syncer_holds_its_db_weakly_and_fails_syncs_after_the_db_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let db = Arc::new(Db::open_default(dir.path()).unwrap());
        let g = Arc::new(SyncGroup::default());
        let need = g.request(&db);
        g.wait_blocking(need).unwrap();
        drop(db);
        // The DB is closed (its directory lock is free) although the syncer thread lives.
        let again = Arc::new(Db::open_default(dir.path()).unwrap());
        let (tx, rx) = std::sync::mpsc::channel();
        g.request_then(&again, move |r| tx.send(r).unwrap());
        let r = rx.recv().unwrap();
        assert!(matches!(r, Err(SyncError::Failed(_))), "{r:?}");
        g.stop();
    }
}
