//! The adapter to openraft: the only module of the crate that names openraft's types.
//!
//! - [`convert`]: openraft's types to the crate's and back.
//! - [`log`]: the log storage traits on a group's [`crate::log_store::GroupLog`].
//! - [`sm`]: the state machine traits on a group's [`crate::state_machine::GroupState`].
//! - [`network`]: the network traits over a [`crate::transport::Transport`].
//! - [`leave`]: a replica deleted from its node only once its leader no longer lists it.
//! - [`node`]: a node's groups ([`RaftNode`]), one group's replica ([`Replica`]) with the
//!   operations the server needs, and the dispatch of incoming messages.
//!
//! The storage and state machine calls into the engine run on Tokio's blocking pool
//! ([`blocking`]): the Raft core's task never waits on the engine or a disk inside a poll.
//! Two calls are made in place instead while the engine has no write stall
//! ([`unless_stalled`]): appending entries to the log, and applying committed entries. Both
//! are unsynced engine writes (a memtable insert and a buffered WAL append, no disk wait: the
//! node's syncer makes the log durable on a thread of its own), and they are on every entry's
//! path, where a hand-off to the pool and back costs more than the write.

mod convert;
mod leave;
mod log;
mod network;
mod node;
mod sm;
#[cfg(test)]
mod suite_test;

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

pub use leave::Left;
pub use node::{GroupStatus, Leadership, RaftNode, RaftSettings, Replica, Role};

use crate::types::{Command, Peer, Reply};

openraft::declare_raft_types!(
    /// openraft's type configuration for Strata groups: commands and replies are bytes, a
    /// node's address is a [`Peer`].
    pub TypeConfig:
        D = Command,
        R = Reply,
        NodeId = u64,
        Node = Peer,
);

/// Where a group's latest log read that found its range purged started (a stale replication
/// stream's, `network`'s module doc), shared by the group's log store, which notes it, and its
/// network clients, which end the stream that made it.
#[derive(Clone)]
pub(crate) struct PurgedRead(Arc<AtomicU64>);

impl PurgedRead {
    const NONE: u64 = u64::MAX;

    pub(crate) fn new() -> PurgedRead {
        PurgedRead(Arc::new(AtomicU64::new(Self::NONE)))
    }

    /// Notes a read from `start` that found its entries purged.
    pub(crate) fn note(&self, start: u64) {
        self.0.store(start, Ordering::SeqCst);
    }

    /// Whether the latest purged read started at `start`; it is forgotten if so.
    pub(crate) fn take(&self, start: u64) -> bool {
        start != Self::NONE
            && self
                .0
                .compare_exchange(start, Self::NONE, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
    }
}

/// Runs `f`, an unsynced engine write on `db`, in place; on Tokio's blocking pool instead
/// while the engine stalls writes (`Db::writes_stalled`), when it may wait.
pub(crate) async fn unless_stalled<T, F>(db: &strata::Db, f: F) -> io::Result<T>
where
    T: Send + 'static,
    F: FnOnce() -> crate::error::Result<T> + Send + 'static,
{
    if db.writes_stalled() {
        blocking(f).await
    } else {
        f().map_err(io::Error::from)
    }
}

/// Runs a blocking engine call on Tokio's blocking pool.
pub(crate) async fn blocking<T, F>(f: F) -> io::Result<T>
where
    T: Send + 'static,
    F: FnOnce() -> crate::error::Result<T> + Send + 'static,
{
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => r.map_err(io::Error::from),
        Err(e) => Err(io::Error::other(format!("a storage task failed: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::PurgedRead;

    #[test]
    fn a_purged_read_is_taken_once_and_only_at_its_start() {
        let r = PurgedRead::new();
        assert!(!r.take(0), "nothing noted");
        r.note(2121);
        assert!(!r.take(2120));
        assert!(r.take(2121));
        assert!(!r.take(2121), "taken once");
        r.note(7);
        r.note(9);
        assert!(!r.take(7), "only the latest is kept");
        assert!(r.take(9));
    }
}
