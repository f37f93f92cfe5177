//! Group commit for `appendfsync always` across keys and connections.
//!
//! A command writes its batch without a sync while it holds its keys' locks, so writers of
//! one hot key do not wait for each other's fdatasync one by one; the reply is held until a
//! WAL sync that *began after* the write has finished, and one sync serves every write made
//! before it began. This is how Redis's `appendfsync always` answers too: commands run, one
//! fsync, then the replies.
//!
//! One syncer thread (started on the first request, stopped by [`SyncGroup::stop`]) runs the
//! syncs: [`SyncGroup::request`] asks for one that begins after the call and returns its
//! number; [`SyncGroup::wait`] (async, for connection tasks, which keep serving other
//! connections meanwhile) or [`SyncGroup::wait_blocking`] returns when it has finished. No
//! connection task hands its batch to another thread or blocks a runtime worker on a sync.
//!
//! Contract: when a wait for the number `request` returned succeeds, every write this thread
//! made before `request` is on the device. A failed sync fails every waiter it was to cover,
//! and the engine refuses later writes (its error is sticky), so no write after a failed sync
//! is acknowledged.
//!
//! A write that owes a sync marks this thread (`owe_sync`); the connection loop takes the mark
//! (`take_owed_sync`) right after the commands it ran, before it awaits anything.

use std::cell::Cell;
use std::fmt;
use std::sync::Arc;

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

impl SyncGroup {
    /// Asks for a WAL sync that begins after this call; returns its number for
    /// [`SyncGroup::wait`]. Starts the syncer thread on the first call.
    pub fn request(self: &Arc<Self>, db: &Arc<Db>) -> u64 {
        let db = db.clone();
        self.request_with(move || move || db.flush_wal(true))
    }

    /// [`SyncGroup::request`], with the sync the syncer thread runs made by `make_sync` when
    /// that thread starts.
    fn request_with<S>(self: &Arc<Self>, make_sync: impl FnOnce() -> S) -> u64
    where
        S: Fn() -> strata::Result<()> + Send + 'static,
    {
        let mut st = self.state.lock();
        let need = st.started + 1;
        st.requested = st.requested.max(need);
        if !st.syncer {
            st.syncer = true;
            let (g, sync) = (self.clone(), make_sync());
            let spawned = std::thread::Builder::new()
                .name("strata-wal-sync".into())
                .spawn(move || g.run_syncer(&sync));
            if let Err(e) = spawned {
                st.syncer = false;
                st.failed.get_or_insert((need, SyncError::Spawn(Arc::new(e))));
                let failed = st.failed.clone();
                drop(st);
                self.publish(None, failed);
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
            let failed = st.failed.clone();
            drop(st);
            self.publish(Some(n), failed);
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
    }

    #[test]
    fn a_panicking_sync_fails_its_waiters_and_every_later_one() {
        let g = Arc::new(SyncGroup::default());
        let calls = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let c = calls.clone();
        let need = g.request_with(move || {
            move || {
                assert!(c.fetch_add(1, std::sync::atomic::Ordering::Relaxed) > 0, "device gone");
                Ok(())
            }
        });
        let e = g.wait_blocking(need).unwrap_err().to_string();
        assert!(e.contains("panic in thread strata-wal-sync: device gone"), "{e}");
        // The thread lives on; the failure is sticky.
        let later = g.request_with(|| || Ok(()));
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
    fn the_owed_mark_is_per_thread_and_taken_once() {
        assert!(!take_owed_sync());
        owe_sync();
        assert!(std::thread::spawn(take_owed_sync).join().map(|b| !b).unwrap());
        assert!(take_owed_sync());
        assert!(!take_owed_sync());
    }
}
