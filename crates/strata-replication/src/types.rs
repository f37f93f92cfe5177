//! The crate's own names for what Raft deals in: nodes, groups, log ids, votes, memberships,
//! entries. Only the adapter (`raft/`) knows openraft's types and converts at its edge; the
//! storage, snapshot and transport code use these.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// A node of the cluster (one process, one Strata `Db`).
pub type NodeId = u64;

/// One Raft group: a replicated set of key ranges (a partition). Many groups share a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupId(pub u32);

impl fmt::Display for GroupId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "group {}", self.0)
    }
}

/// Where a node is reached (its Raft listen address); kept in the membership.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Peer {
    /// `host:port` of the node's Raft transport (empty in-process).
    pub addr: String,
}

/// A log entry's identity: the leader (term and node) that proposed it, and its index.
/// Ordered as Raft orders log ids: by leader (term, then node), then index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LogId {
    /// Term of the proposing leader.
    pub term: u64,
    /// Node of the proposing leader.
    pub leader: NodeId,
    /// Position in the log, from 0.
    pub index: u64,
}

impl fmt::Display for LogId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "T{}-N{}.{}", self.term, self.leader, self.index)
    }
}

/// A node's vote: the leader it voted for in a term, committed once a quorum granted it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Vote {
    /// The term voted in.
    pub term: u64,
    /// The candidate voted for.
    pub node: NodeId,
    /// Whether a quorum granted it (the node is then the term's leader).
    pub committed: bool,
}

/// The voters (one set, or two during a joint change) and every member's address; members
/// in `nodes` that are in no config are learners.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Membership {
    /// The voter sets: one, or two while changing (joint consensus).
    pub configs: Vec<BTreeSet<NodeId>>,
    /// Every member (voters and learners) with its address.
    pub nodes: BTreeMap<NodeId, Peer>,
}

impl Membership {
    /// Every voter of every config.
    pub fn voters(&self) -> BTreeSet<NodeId> {
        self.configs.iter().flatten().copied().collect()
    }

    /// Members that vote in no config.
    pub fn learners(&self) -> BTreeSet<NodeId> {
        let voters = self.voters();
        self.nodes.keys().filter(|n| !voters.contains(n)).copied().collect()
    }
}

/// A membership with the log id of the entry that set it (`None`: the initial, empty one).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StoredMembership {
    /// The entry that carried this membership.
    pub log_id: Option<LogId>,
    /// The membership itself.
    pub membership: Membership,
}

/// What an entry carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Payload {
    /// Written by a new leader; changes no data.
    Blank,
    /// An application command, opaque to replication.
    Normal(Vec<u8>),
    /// A membership change.
    Membership(Membership),
}

/// One log entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Its identity.
    pub log_id: LogId,
    /// What it carries.
    pub payload: Payload,
}

/// What a snapshot holds: every entry up to `last_log_id` applied, and the membership then.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SnapshotMeta {
    /// The last entry the snapshot covers.
    pub last_log_id: Option<LogId>,
    /// The membership in force at that entry.
    pub membership: StoredMembership,
}

/// A contiguous key range `[start, end)` of one column family. A group owns a set of them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyRange {
    /// The column family's name.
    pub cf: String,
    /// First key of the range.
    pub start: Vec<u8>,
    /// First key after the range.
    pub end: Vec<u8>,
}

/// An application command as replicated (what [`crate::Apply::apply`] receives).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Command(pub Vec<u8>);

impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "command of {} bytes", self.0.len())
    }
}

/// The reply [`crate::Apply::apply`] produced for a command, returned to its writer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reply(pub Vec<u8>);
