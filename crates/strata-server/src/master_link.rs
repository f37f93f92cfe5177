//! This server as a Redis replica (REPLICAOF host port): the master it follows and how its
//! link stands, as the commands see it (INFO replication, ROLE, the refusals of a read-only
//! replica and of a loading one). The link itself (handshake, full sync, the command stream)
//! runs in `crate::replicaof`, above the commands whose dispatch it drives; it is started
//! through the [`Driver`] the server installs at start.
//!
//! Contract:
//! - One [`LinkState`] per REPLICAOF: a new master (or NO ONE) stops the old link (its
//!   `stop` flag, which the link's thread looks at between reads, at most a tenth of a second
//!   apart) and the next one starts with a state of its own, so figures of an old link never
//!   mix with the new one's.
//! - While a full sync loads its dataset, `loading` is set: commands Redis does not flag
//!   `loading` are refused with LOADING (the dataset is being replaced).
//! - While a master is set and `replica-read-only` is yes, writes from clients other than the
//!   link itself are refused with READONLY.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;

use crate::storage::backlog::Backlog;

/// The master a REPLICAOF names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Its host, as given.
    pub host: String,
    /// Its port.
    pub port: u16,
}

/// Where a link is in its life (ROLE's words in [`Phase::role_word`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Phase {
    /// Not connected; the next attempt is due.
    Connect = 0,
    /// Connecting and handshaking.
    Connecting = 1,
    /// Receiving or loading the master's dataset.
    Sync = 2,
    /// Applying the master's command stream.
    Connected = 3,
}

impl Phase {
    fn from_u8(v: u8) -> Phase {
        match v {
            1 => Phase::Connecting,
            2 => Phase::Sync,
            3 => Phase::Connected,
            _ => Phase::Connect,
        }
    }

    /// ROLE's word for it (Redis's).
    pub fn role_word(self) -> &'static str {
        match self {
            Phase::Connect => "connect",
            Phase::Connecting => "connecting",
            Phase::Sync => "sync",
            Phase::Connected => "connected",
        }
    }
}

/// One link's live figures (one per REPLICAOF; see the module doc).
#[derive(Debug)]
pub struct LinkState {
    /// The master it follows.
    pub target: Target,
    stop: AtomicBool,
    phase: AtomicU8,
    /// The link synced (a full sync loaded, or a CONTINUE): the offset it applied is this
    /// server's stream's end from then on ([`LinkState::offset`]).
    pub synced: AtomicBool,
    /// When a byte last came from the master (Unix ms; 0: never).
    pub last_io_ms: AtomicU64,
    /// When the link last went down (Unix ms; 0: never up yet).
    pub down_since_ms: AtomicU64,
    /// A full sync's transfer: its size (0: unknown, an EOF-marked one) and what has come.
    pub sync_total: AtomicU64,
    /// See [`LinkState::sync_total`].
    pub sync_read: AtomicU64,
    /// Full syncs completed by this link.
    pub full_syncs: AtomicU64,
    /// Partial resyncs (CONTINUE) accepted by this link.
    pub partial_syncs: AtomicU64,
    /// Why the last attempt failed, for INFO (empty: none did).
    pub last_error: Mutex<String>,
    /// The link's thread has ended.
    ended: AtomicBool,
    /// Its PSYNC says FAILOVER (a failover's link to the replica taking over,
    /// `commands::failover`): set until the PSYNC is answered.
    pub failover: AtomicBool,
}

impl LinkState {
    /// A link to `target`, not yet connected.
    pub fn new(target: Target) -> Arc<LinkState> {
        Arc::new(LinkState {
            target,
            stop: AtomicBool::new(false),
            phase: AtomicU8::new(Phase::Connect as u8),
            synced: AtomicBool::new(false),
            last_io_ms: AtomicU64::new(0),
            down_since_ms: AtomicU64::new(crate::types::keyspace::now_ms()),
            sync_total: AtomicU64::new(0),
            sync_read: AtomicU64::new(0),
            full_syncs: AtomicU64::new(0),
            partial_syncs: AtomicU64::new(0),
            last_error: Mutex::new(String::new()),
            ended: AtomicBool::new(false),
            failover: AtomicBool::new(false),
        })
    }

    /// The replication offset applied (the master's offset at the full sync plus the bytes
    /// of its stream applied since): `backlog`'s end once synced, the link adding each
    /// command it applies there (`storage::backlog`); -1 before.
    pub fn offset(&self, backlog: &Backlog) -> i64 {
        if self.synced.load(Ordering::Acquire) {
            backlog.offset() as i64
        } else {
            -1
        }
    }

    /// Whether this link was told to stop (another REPLICAOF came).
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    /// Where the link is.
    pub fn phase(&self) -> Phase {
        Phase::from_u8(self.phase.load(Ordering::Acquire))
    }

    /// Moves the link to `p`; leaving [`Phase::Connected`] notes when the link went down.
    pub fn set_phase(&self, p: Phase) {
        let was = Phase::from_u8(self.phase.swap(p as u8, Ordering::AcqRel));
        if was == Phase::Connected && p != Phase::Connected {
            self.down_since_ms.store(crate::types::keyspace::now_ms(), Ordering::Release);
        }
    }

    /// Notes that the link's thread has ended (its last act).
    pub fn end(&self) {
        self.ended.store(true, Ordering::Release);
    }

    /// Notes that bytes came from the master now.
    pub fn heard(&self) {
        self.last_io_ms.store(crate::types::keyspace::now_ms(), Ordering::Relaxed);
    }
}

/// What starts a link's thread (installed by the server at start: `crate::replicaof`).
pub trait Driver: Send + Sync {
    /// Starts following `link.target` until `link` is stopped.
    fn start(&self, link: Arc<LinkState>) -> std::io::Result<()>;
    /// The server now follows a master (`true`) or is a master (`false`): what the store
    /// does with keys whose time is up changes with it (`storage::Engine::expired_kept`).
    fn following(&self, on: bool);
}

/// The replica side of this server (module doc).
#[derive(Default)]
pub struct MasterLink {
    current: Mutex<Option<Arc<LinkState>>>,
    /// Whether `current` holds a link (read by every command: no lock).
    following: AtomicBool,
    loading: AtomicBool,
    driver: OnceLock<Box<dyn Driver>>,
}

impl std::fmt::Debug for MasterLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MasterLink")
            .field("current", &*self.current.lock())
            .field("loading", &self.loading())
            .finish_non_exhaustive()
    }
}

/// What [`MasterLink::follow`] did.
#[derive(Debug, PartialEq, Eq)]
pub enum Followed {
    /// A link to the target started.
    Started,
    /// The server already follows that master.
    Already,
}

impl MasterLink {
    /// Installs what starts links (once, at the server's start).
    pub fn install(&self, driver: Box<dyn Driver>) {
        let _ = self.driver.set(driver);
    }

    /// The link now, if the server follows a master.
    pub fn current(&self) -> Option<Arc<LinkState>> {
        self.current.lock().clone()
    }

    /// Whether a master is set (`current` holds a link), without a lock: every command looks.
    pub fn following(&self) -> bool {
        self.following.load(Ordering::Acquire)
    }

    /// Whether a master is set and the link to it is not applying its stream (connecting,
    /// syncing, or waiting to try again).
    pub fn link_down(&self) -> bool {
        self.current.lock().as_ref().is_some_and(|l| l.phase() != Phase::Connected)
    }

    /// REPLICAOF host port: stops any other link and starts one to `target`.
    pub fn follow(&self, target: Target) -> Result<Followed, String> {
        self.follow_with(target, false)
    }

    /// FAILOVER's last step (`commands::failover`): follows `target`, the link's PSYNC
    /// saying FAILOVER.
    pub fn follow_for_failover(&self, target: Target) -> Result<Followed, String> {
        self.follow_with(target, true)
    }

    fn follow_with(&self, target: Target, failover: bool) -> Result<Followed, String> {
        let mut cur = self.current.lock();
        if cur.as_ref().is_some_and(|l| l.target == target) {
            return Ok(Followed::Already);
        }
        let Some(driver) = self.driver.get() else {
            return Err("ERR this server cannot start a replication link".into());
        };
        if let Some(old) = cur.take() {
            old.stop.store(true, Ordering::Release);
        }
        let link = LinkState::new(target);
        link.failover.store(failover, Ordering::Release);
        if let Err(e) = driver.start(link.clone()) {
            // The old link is stopped and no new one runs: a master now.
            self.following.store(false, Ordering::Release);
            driver.following(false);
            return Err(format!("ERR cannot start the replication link: {e}"));
        }
        *cur = Some(link);
        self.following.store(true, Ordering::Release);
        driver.following(true);
        Ok(Followed::Started)
    }

    /// REPLICAOF NO ONE: stops the link, if any; the server is a master again.
    pub fn stop(&self) {
        let mut cur = self.current.lock();
        if let Some(old) = cur.take() {
            old.stop.store(true, Ordering::Release);
        }
        self.following.store(false, Ordering::Release);
        if let Some(driver) = self.driver.get() {
            driver.following(false);
        }
    }

    /// Tells the link, if any, to stop, still following: it applies nothing more of the
    /// master's stream (it looks under the backlog's gate before each command), and the
    /// server stays a replica until [`MasterLink::stop_for_shutdown`].
    pub fn mark_stopping(&self) {
        if let Some(link) = self.current.lock().as_ref() {
            link.stop.store(true, Ordering::Release);
        }
    }

    /// At shutdown: stops the link and waits up to `wait` for its thread to end, so that the
    /// database closes after the link's last write (a load running then goes on, and its
    /// writes after the close fail). Whether no link thread is left running.
    pub fn stop_for_shutdown(&self, wait: std::time::Duration) -> bool {
        let Some(link) = self.current.lock().clone() else { return true };
        self.stop();
        let until = std::time::Instant::now() + wait;
        while !link.ended.load(Ordering::Acquire) && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        link.ended.load(Ordering::Acquire)
    }

    /// Whether a full sync is loading its dataset now.
    pub fn loading(&self) -> bool {
        self.loading.load(Ordering::Acquire)
    }

    /// Sets or clears [`MasterLink::loading`]: the loader's alone (`replicaof::load`), which
    /// runs to its end once it has begun, whatever happens to the link.
    pub fn set_loading(&self, on: bool) {
        self.loading.store(on, Ordering::Release);
    }
}
