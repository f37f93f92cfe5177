//! Cluster mode: the keyspace split into partitions, each a Raft group (`strata-replication`)
//! with a replica on several nodes, every node keeping all its replicas in its one store.
//!
//! - [`partitions`]: which slots make up each partition.
//! - [`apply`]: the state machine of every group on a node: committed write batches applied
//!   to the store.
//! - [`node`]: one node's side: its writes go through their partition's group
//!   (`storage::Replicate`), and its router answers where each slot's commands run and makes
//!   a command ready to run here (`routing::Router`).
//! - [`proposals`]: group commit of the batches commands propose to one group;
//!   [`run_queue`]: whether the cores are contended (how its drivers wait for company).
//! - [`moves`]: a node's side of a slot move (the per-slot write gate, the steps).
//! - [`ownership`]: which slots a partition serves while slots move between partitions, as
//!   the control entries of its own log decide; [`outbox`]: the writes to a slot made while
//!   it is copied, kept in its source partition's state; [`ingest`]: the bulk of a slot's
//!   copy entering the target's replicas as table files.
//! - [`map`]: the cluster map (nodes, placement, version), the meta group's state;
//!   [`placement`]: where replicas go; [`admin`]: changes to the map; [`reconcile`]: each
//!   node's rounds that move the groups' members toward the map.
//!
//! A command replicates its effect, not its text: the leader runs it under its key locks
//! against its applied state, as a standalone server would, and proposes the one batch the
//! command wrote; every replica applies those bytes. So replicas end byte-identical whatever
//! the command read of clocks or chance (fresh versions, expiry, SPOP's pick, INCRBYFLOAT's
//! formatting are all decided once, in the batch). What makes the leader's state current
//! when it runs a command is in [`node`].

pub mod admin;
pub mod apply;
pub mod ingest;
pub mod map;
pub mod moves;
pub mod node;
pub mod outbox;
pub mod ownership;
pub mod partitions;
pub mod placement;
pub mod proposals;
pub mod reconcile;
pub mod run_queue;
pub mod spec;
pub mod start;

pub use apply::ServerApply;
pub use node::ClusterNode;
pub use partitions::Partitions;

#[cfg(test)]
pub(crate) mod testing {
    /// A fresh store filed by partition, as a cluster node's, in a temporary directory
    /// (kept while the returned guard lives).
    pub(crate) fn store() -> (tempfile::TempDir, std::sync::Arc<crate::storage::Store>) {
        let dir = tempfile::tempdir().unwrap();
        let dbs = crate::types::open_partitioned(
            strata::Options::default(),
            dir.path(),
            crate::storage::SyncPolicy::No,
        )
        .unwrap();
        let st = dbs.store(0).clone();
        (dir, st)
    }
}
