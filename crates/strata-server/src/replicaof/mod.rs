//! The replication link of this server as a Redis replica (REPLICAOF host port): a thread per
//! link that follows a Redis master as a redis-server replica does, so a dataset moves here
//! from a running redis-server (or another server speaking Redis's replication protocol)
//! without stopping it.
//!
//! One attempt ([`session`]), repeated a second after each failure until the link is stopped:
//! - **Handshake** (`handshake`): AUTH when `masterauth` is set, PING, REPLCONF
//!   listening-port and capa (eof, psync2), then PSYNC: `? -1` at first, or the master's
//!   replication id and the next offset after a link that applied a stream, so a short break
//!   resumes with CONTINUE instead of a full sync.
//! - **Full sync** (`transfer`, `load`): the master's RDB (`$<len>` or `$EOF:<mark>`, with
//!   the newlines it sends while it prepares) is written to a file in the data directory
//!   first, as redis-server's disk-based load does, so a transfer cut short leaves the
//!   dataset as it was; then every database is emptied and the file loaded (its keys, their
//!   expiry times, the function libraries), with LOADING replied to clients meanwhile.
//! - **Stream** (`stream`): the master's commands, run through the ordinary dispatch as the
//!   master's client (its writes pass the read-only refusal; their replies go nowhere but
//!   REPLCONF GETACK's), counting the replication offset; REPLCONF ACK every second.
//!
//! A master silent for `repl-timeout` seconds is taken for gone, as Redis takes it.

mod handshake;
pub mod load;
mod stream;
mod transfer;
mod wire;

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use crate::master_link::{Driver, LinkState, Phase};
use crate::state::Shared;

/// How long a failed attempt waits before the next.
const RETRY: Duration = Duration::from_secs(1);

/// Why an attempt ended.
#[derive(Debug)]
pub enum LinkError {
    /// The link was stopped (REPLICAOF to another master, or NO ONE).
    Stopped,
    /// Anything else: said in the LOG and INFO's `master_link_last_error`.
    Failed(String),
}

impl From<std::io::Error> for LinkError {
    fn from(e: std::io::Error) -> Self {
        LinkError::Failed(e.to_string())
    }
}

impl From<String> for LinkError {
    fn from(e: String) -> Self {
        LinkError::Failed(e)
    }
}

/// The [`Driver`] this server installs: each link on a thread of its own.
struct Threads {
    sh: Weak<Shared>,
}

impl Driver for Threads {
    fn start(&self, link: Arc<LinkState>) -> std::io::Result<()> {
        let sh = self.sh.clone();
        let name = format!("strata-replica-{}:{}", link.target.host, link.target.port);
        std::thread::Builder::new().name(name).spawn(move || follow(&sh, &link)).map(drop)
    }

    fn following(&self, on: bool) {
        if let Some(sh) = self.sh.upgrade() {
            sh.engine().expired_kept.store(on, std::sync::atomic::Ordering::Relaxed);
            // The own keys noted under another master, or as a master (all in `due`), are
            // not this link's (Redis forgets them at each REPLICAOF).
            sh.engine().own_due.clear();
        }
    }
}

/// Installs the link's driver in `sh` (once, at start), and starts following the master a
/// `replicaof` setting of the configuration names, if any.
pub fn install(sh: &Arc<Shared>) -> Result<(), String> {
    sh.master_link.install(Box::new(Threads { sh: Arc::downgrade(sh) }));
    transfer::remove_leftovers(&sh.config.dir);
    let configured = sh.params.read().get("replicaof").cloned().unwrap_or_default();
    let words: Vec<&str> = configured.split_whitespace().collect();
    match words.as_slice() {
        [] => Ok(()),
        [host, port] => {
            let port = port
                .parse::<u16>()
                .map_err(|_| format!("replicaof {configured:?}: the port is not a number"))?;
            let target = crate::master_link::Target { host: (*host).into(), port };
            sh.master_link.follow(target).map(drop)
        }
        _ => Err(format!("replicaof {configured:?}: expected <host> <port>")),
    }
}

/// A link's thread: attempts until the link is stopped or the server is gone.
fn follow(sh: &Weak<Shared>, link: &Arc<LinkState>) {
    /// Marks the link ended however the thread ends.
    struct Ends<'a>(&'a LinkState);
    impl Drop for Ends<'_> {
        fn drop(&mut self) {
            self.0.end();
        }
    }
    let _ends = Ends(link);
    let mut said = String::new();
    while !link.stopped() {
        let Some(sh) = sh.upgrade() else { return };
        link.set_phase(Phase::Connecting);
        // A panic in an attempt (a command of the stream, the load) is a failed attempt,
        // said and retried: never a link that looks up and applies nothing.
        let attempt = std::panic::AssertUnwindSafe(|| session(&sh, link));
        let outcome = std::panic::catch_unwind(attempt).unwrap_or_else(|p| {
            let what = p
                .downcast_ref::<&str>()
                .map(|s| (*s).to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Err(LinkError::Failed(format!("the link's attempt panicked: {what}")))
        });
        link.set_phase(Phase::Connect);
        match outcome {
            Ok(()) | Err(LinkError::Stopped) => {}
            // A link stopped meanwhile has nothing more to say.
            Err(LinkError::Failed(_)) if link.stopped() => {}
            Err(LinkError::Failed(e)) => {
                // The same failure over and over is said once, not at every retry.
                if e != said {
                    eprintln!(
                        "replication link to {}:{}: {e}; retrying every second",
                        link.target.host, link.target.port
                    );
                    said.clone_from(&e);
                }
                *link.last_error.lock() = e;
            }
        }
        drop(sh);
        let until = std::time::Instant::now() + RETRY;
        while !link.stopped() && std::time::Instant::now() < until {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// One attempt: connect, handshake, sync, then the stream until it breaks.
fn session(sh: &Arc<Shared>, link: &Arc<LinkState>) -> Result<(), LinkError> {
    // A DEBUG SLEEP holds the link too: no reconnection while the server sleeps.
    sh.frozen.wait();
    let backlog = &sh.engine().backlog;
    let synced = wire::Wire::connect(sh, link)
        .and_then(|mut wire| handshake::run(sh, link, &mut wire).map(|sync| (wire, sync)));
    // A failover's link (`commands::failover`): its first PSYNC's answer ends the failover,
    // with this server the target's replica, or a master again when it failed.
    if link.failover.swap(false, Ordering::AcqRel) {
        match &synced {
            Ok(_) => crate::commands::failover::finished(sh),
            Err(e) => {
                let why = match e {
                    LinkError::Stopped => "the link was stopped".to_string(),
                    LinkError::Failed(e) => format!("Failover target rejected psync request ({e})"),
                };
                crate::commands::failover::abort(sh, &why, false);
                return Err(LinkError::Stopped);
            }
        }
    }
    let (mut wire, sync) = synced?;
    match sync {
        handshake::Sync::Full { replid, offset } => {
            // Until the load is whole, nothing of the old stream may be resumed.
            link.synced.store(false, Ordering::Release);
            link.set_phase(Phase::Sync);
            let file = transfer::receive(sh, link, &mut wire)?;
            // This server's own replicas sync again, in full, from the new dataset.
            backlog.reset();
            let loaded = load::load_synced(sh, link, &file)?;
            // The stream from here on is the master's, at its offsets (`storage::backlog`).
            backlog.activate();
            let offset_u = u64::try_from(offset).map_err(|_| {
                LinkError::Failed(format!("FULLRESYNC with a negative offset: {offset}"))
            })?;
            backlog.adopt(&replid, offset_u, loaded.stream_db);
            link.synced.store(true, Ordering::Release);
            link.full_syncs.fetch_add(1, Ordering::Relaxed);
        }
        handshake::Sync::Continue { replid } => {
            // The stream goes on from this server's own: its end, under the master's id
            // (kept as the second id when it differs: the master was promoted or re-ids).
            if let Some(id) = replid {
                backlog.shift_id(Some(id));
            }
            link.synced.store(true, Ordering::Release);
            link.partial_syncs.fetch_add(1, Ordering::Relaxed);
        }
    }
    link.last_error.lock().clear();
    link.set_phase(Phase::Connected);
    stream::apply(sh, link, &mut wire)
}
