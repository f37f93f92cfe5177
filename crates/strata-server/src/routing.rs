//! Where a command runs in cluster mode: the [`Router`] a clustered server installs in its
//! shared state answers, for the slot a command's keys hash to (`crate::slots`), whether this
//! node serves it or which node does. The command layer turns the answer into Redis Cluster's
//! replies (`MOVED <slot> <host>:<port>`, `CLUSTERDOWN`), which cluster clients follow; a
//! standalone server has no router and serves every key.

/// Where a command on one slot runs, as seen from this node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    /// Here.
    Local,
    /// At the node whose client address (`host:port`) this is: the slot's leader, or, for a
    /// read on a READONLY connection, a replica.
    Moved(String),
    /// Nowhere now (no leader is known for the slot's partition).
    Down,
}

/// The cluster's answer for a slot. Implementations are shared by every connection and must
/// answer without blocking (they read a layout the replication layer keeps current).
pub trait Router: Send + Sync {
    /// Where a command on `slot` runs: `write` for a command that writes; `readonly` when the
    /// connection sent READONLY, so a replica of the slot may serve its reads (stale, as a
    /// Redis Cluster replica's).
    fn route(&self, slot: u16, write: bool, readonly: bool) -> Route;

    /// Readies a command on `slot` that [`Router::route`] answered [`Route::Local`] for, just
    /// before it runs: a replicated node waits here until its state holds every write the
    /// command must see (a barrier through its Raft group). May block: the caller runs it off
    /// the async workers. An `Err` is the error reply, and the command does not run.
    fn prepare(&self, slot: u16, write: bool, readonly: bool) -> Result<(), String> {
        let _ = (slot, write, readonly);
        Ok(())
    }

    /// `field:value` lines for INFO's `# Cluster` section, after `cluster_enabled:1`.
    fn info(&self) -> Vec<(String, String)> {
        Vec::new()
    }
}
