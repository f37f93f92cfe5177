//! strata-replication: Strata's key ranges replicated by Raft (openraft), many groups on a
//! node's one engine.
//!
//! # Layers
//!
//! A module uses only modules of lower layers. From the bottom:
//!
//! 0. [`types`], `codec`: the crate's own names for Raft's notions (log ids, votes,
//!    memberships, entries) and the fixed-width coding every format uses.
//! 1. [`sync_group`]: the node-wide group-commit syncer.
//! 2. [`error`]; [`log_format`]: the Raft log and metadata records in the engine (drawn
//!    there and in `docs/format/raft_log.md`).
//! 3. [`log_tail`]: a log's newest entries in memory; [`log_store`]: the node's replication
//!    storage and each group's log on it.
//! 4. [`snapshot`]: a group's key ranges as SST files, and their transfer in chunks.
//! 5. [`state_machine`]: applying entries through the application's [`Apply`], and
//!    installing snapshots, crash-safely.
//! 6. [`kv`]: a small application for tests; [`rpc`], [`transport`]: messages between nodes
//!    and how they travel (in process, TCP); [`rejoin`]: a replica on empty storage in an
//!    existing group, catching up before it votes.
//! 7. [`raft`]: the adapter to openraft, the only module that names its types: storage,
//!    state machine and network traits, and a node's groups ([`RaftNode`], [`Replica`]).
//!
//! `docs/replication.md` gives the design, the choice of openraft version, and what is not
//! done yet.

mod codec;
pub mod error;
pub mod kv;
pub mod log_format;
pub mod log_store;
pub mod log_tail;
pub mod raft;
pub mod rejoin;
pub mod rpc;
pub mod snapshot;
pub mod state_machine;
pub mod sync_group;
pub mod transport;
pub mod types;

pub use codec::DecodeError;
pub use error::{Error, Result};
pub use log_store::{family_options, open_db, GroupLog, NodeStorage, FAMILIES};
pub use raft::{GroupStatus, Leadership, Left, RaftNode, RaftSettings, Replica, Role};
pub use rejoin::OnEmpty;
pub use state_machine::{Apply, GroupState};
pub use sync_group::{SyncError, SyncGroup};
pub use types::{
    Entry, GroupId, KeyRange, LogId, Membership, NodeId, Payload, Peer, SnapshotMeta,
    StoredMembership, Vote,
};

/// Bytes of one command (one log entry's payload) at most: the transport's largest frame
/// ([`transport::tcp::MAX_FRAME`]) less 1 MiB for the append request around it. Replication
/// reads at most 1 MiB of entries per request past the first entry (`raft/log.rs`), so
/// every entry goes in a frame the followers accept; an entry past the frame could never be
/// sent, and the group's replication would stop at it. [`Replica::write`] refuses a larger
/// command with [`Error::TooLarge`].
pub const MAX_COMMAND_BYTES: usize = transport::tcp::MAX_FRAME - (1 << 20);
