//! CLIENT PAUSE's state: which commands wait, until when, and the clients waiting.
//!
//! As Redis 7.0 has it (`pauseClients`, `processCommand`): `CLIENT PAUSE ms ALL` holds
//! every client's every command until the pause ends or `CLIENT UNPAUSE` lifts it (in ALL
//! mode UNPAUSE itself waits, so only the time ends it); `WRITE` holds the commands that
//! write or may be replicated (PUBLISH, PFCOUNT, scripts that may write, an EXEC whose queue
//! holds one). A second pause keeps the later end and the stricter mode. A held command is
//! not run and not refused: its connection waits (counted in INFO's `blocked_clients`, as
//! Redis counts its postponed clients) and runs it once the pause is over. Expiry waits
//! too: the expiry task's rounds (`server::tasks`), and the deletion of an expired key a
//! command meets (the keyspace a command gets says so, `state::Shared::keyspace`). What a
//! command is held for is decided by `commands::client_pause`.
//!
//! FAILOVER holds writes too, as a pause of its own ([`ClientPause::hold_writes`], Redis's
//! `PAUSE_DURING_FAILOVER`): until the failover ends, whatever CLIENT PAUSE and CLIENT
//! UNPAUSE do meanwhile.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio::sync::Notify;

/// What a pause holds. Ordered: `All` is the stricter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum PauseMode {
    /// Writes and what may be replicated.
    Write,
    /// Every command.
    All,
}

/// The server's pause (module doc).
#[derive(Default)]
pub struct ClientPause {
    /// The pause in force: its end and mode.
    state: Mutex<Option<(Instant, PauseMode)>>,
    /// Whether `state` holds a pause (a command's look without the lock).
    on: AtomicBool,
    /// Notified when a pause is lifted or relaxed.
    changed: Notify,
    /// Connections waiting for the pause to end.
    waiting: AtomicUsize,
    /// FAILOVER's hold of writes (module doc).
    failover: AtomicBool,
}

/// What stands for a pause with no end (FAILOVER's, which ends when the failover does, and a
/// CLIENT PAUSE too long for an `Instant`): a century, which an `Instant` holds.
pub const NO_END: std::time::Duration = std::time::Duration::from_secs(100 * 365 * 24 * 3600);

/// Counts a connection among the waiting until dropped.
struct Waiting<'a>(&'a AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl ClientPause {
    /// Pauses until `end` in `mode`; a pause in force keeps the later end and the stricter
    /// mode.
    pub fn pause(&self, end: Instant, mode: PauseMode) {
        let mut st = self.state.lock();
        *st = Some(match *st {
            Some((e, m)) => (e.max(end), m.max(mode)),
            None => (end, mode),
        });
        self.on.store(true, Ordering::Release);
    }

    /// Holds writes while a failover is under way (`on`), or stops holding them: a pause
    /// of its own, which CLIENT UNPAUSE does not lift (module doc).
    pub fn hold_writes(&self, on: bool) {
        self.failover.store(on, Ordering::Release);
        if !on {
            self.changed.notify_waiters();
        }
    }

    /// Lifts the pause: the waiting connections go on.
    pub fn unpause(&self) {
        *self.state.lock() = None;
        self.on.store(false, Ordering::Release);
        self.changed.notify_waiters();
    }

    /// The pause in force now, if any (one past its end is lifted here): CLIENT PAUSE's,
    /// FAILOVER's (writes held, with no end), or both (the stricter mode until the end of
    /// CLIENT PAUSE's, which is when a waiter looks again).
    pub fn current(&self) -> Option<(Instant, PauseMode)> {
        let client = self.client_pause();
        if !self.failover.load(Ordering::Acquire) {
            return client;
        }
        Some(match client {
            Some((end, mode)) => (end, mode.max(PauseMode::Write)),
            None => (Instant::now() + NO_END, PauseMode::Write),
        })
    }

    /// CLIENT PAUSE's pause in force now, if any.
    fn client_pause(&self) -> Option<(Instant, PauseMode)> {
        if !self.on.load(Ordering::Acquire) {
            return None;
        }
        let mut st = self.state.lock();
        match *st {
            Some((end, _)) if end <= Instant::now() => {
                *st = None;
                self.on.store(false, Ordering::Release);
                drop(st);
                self.changed.notify_waiters();
                None
            }
            s => s,
        }
    }

    /// Waits while a pause is in force: until it ends, is lifted or changes; the caller
    /// looks again whether its command is held. Counted in [`ClientPause::waiting`] while
    /// it waits.
    pub async fn wait(&self) {
        let changed = self.changed.notified();
        tokio::pin!(changed);
        // Registered before the look, so a lift between the two is not missed.
        changed.as_mut().enable();
        let Some((end, _)) = self.current() else { return };
        self.waiting.fetch_add(1, Ordering::AcqRel);
        let _counted = Waiting(&self.waiting);
        tokio::select! {
            () = changed => {}
            () = tokio::time::sleep_until(end.into()) => {}
        }
    }

    /// How many connections wait for the pause to end (INFO's `blocked_clients` counts
    /// them).
    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn a_second_pause_keeps_the_later_end_and_the_stricter_mode() {
        let p = ClientPause::default();
        assert_eq!(p.current(), None);
        let now = Instant::now();
        let (soon, later) = (now + Duration::from_secs(60), now + Duration::from_secs(120));
        p.pause(later, PauseMode::Write);
        p.pause(soon, PauseMode::All);
        assert_eq!(p.current(), Some((later, PauseMode::All)));
        p.pause(soon, PauseMode::Write);
        assert_eq!(p.current(), Some((later, PauseMode::All)));
        p.unpause();
        assert_eq!(p.current(), None);
        p.pause(now, PauseMode::All);
        assert_eq!(p.current(), None, "a pause past its end is over");
    }

    #[test]
    fn failovers_hold_on_writes_stays_through_client_unpause() {
        let p = ClientPause::default();
        p.hold_writes(true);
        assert!(matches!(p.current(), Some((_, PauseMode::Write))));
        let soon = Instant::now() + Duration::from_secs(60);
        p.pause(soon, PauseMode::All);
        assert_eq!(p.current(), Some((soon, PauseMode::All)));
        p.unpause();
        assert!(matches!(p.current(), Some((_, PauseMode::Write))), "UNPAUSE leaves it");
        p.hold_writes(false);
        assert_eq!(p.current(), None);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_waiter_goes_on_when_the_pause_is_lifted_or_ends() {
        let p = Arc::new(ClientPause::default());
        p.pause(Instant::now() + Duration::from_secs(3600), PauseMode::All);
        let w = tokio::spawn({
            let p = p.clone();
            async move { p.wait().await }
        });
        tokio::task::yield_now().await;
        assert_eq!(p.waiting(), 1);
        p.unpause();
        w.await.unwrap();
        assert_eq!(p.waiting(), 0);
        // The end passing lets it go too.
        p.pause(Instant::now() + Duration::from_millis(50), PauseMode::Write);
        let started = Instant::now();
        p.wait().await;
        assert!(started.elapsed() >= Duration::from_millis(50));
        assert_eq!(p.current(), None);
    }
}

/// DEBUG SLEEP's hold of the whole server: redis-server's one thread sleeps, so no other
/// client is served, no replication link connects or applies, and no expiry runs meanwhile
/// (Sentinel's and Redis's own tests stall a server so). Here the sleeping connection's
/// thread sleeps, and the others wait at their next command ([`Frozen::wait`]: the
/// connection threads, the link to a master, the expiry rounds). One atomic load where
/// nothing sleeps.
#[derive(Default)]
pub struct Frozen {
    /// Until when, in microseconds from [`Frozen::base`] (0: no sleep).
    until: AtomicU64,
}

impl Frozen {
    /// The instant the deadlines count from (the first use).
    fn base() -> Instant {
        static BASE: OnceLock<Instant> = OnceLock::new();
        *BASE.get_or_init(Instant::now)
    }

    fn now() -> u64 {
        u64::try_from(Self::base().elapsed().as_micros()).unwrap_or(u64::MAX).max(1)
    }

    /// Sleeps the calling thread for `d`, holding the whole server as long (a later end of
    /// another sleep meanwhile is kept).
    pub fn sleep(&self, d: Duration) {
        let until = Self::now().saturating_add(u64::try_from(d.as_micros()).unwrap_or(u64::MAX));
        self.until.fetch_max(until, Ordering::AcqRel);
        std::thread::sleep(d);
        let _ = self.until.compare_exchange(until, 0, Ordering::AcqRel, Ordering::Relaxed);
    }

    /// Blocks the calling thread while a [`Frozen::sleep`] holds the server.
    pub fn wait(&self) {
        loop {
            let until = self.until.load(Ordering::Acquire);
            if until == 0 {
                return;
            }
            let now = Self::now();
            if now >= until {
                return;
            }
            std::thread::sleep(Duration::from_micros(until - now));
        }
    }
}
