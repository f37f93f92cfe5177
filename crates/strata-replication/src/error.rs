//! The crate's error type. Every variant names what it was doing: the group, the log index or
//! the peer, and what was expected.

use std::fmt;
use std::path::PathBuf;

use crate::codec::DecodeError;
use crate::sync_group::SyncError;
use crate::types::{GroupId, NodeId};

/// Result alias of the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Every failure of replication.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The engine failed while doing `context`.
    Engine {
        /// What was being done (`group 3: append entries 7..9`).
        context: String,
        /// The engine's error.
        source: strata::Error,
    },
    /// A stored or received record of `group` could not be decoded.
    Corrupt {
        /// The group it belongs to.
        group: GroupId,
        /// Which record (`log entry at index 12`, `vote`, `snapshot chunk 3`).
        record: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The log of `group` is not what Raft requires (a hole, an entry at the wrong index).
    LogInvariant {
        /// The group.
        group: GroupId,
        /// What was expected and what was found.
        reason: String,
    },
    /// A file operation failed.
    Io {
        /// What was being done.
        context: String,
        /// The file or directory.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The shared WAL sync failed; nothing after it is acknowledged.
    Sync(SyncError),
    /// A snapshot of `group` could not be built, received or installed.
    Snapshot {
        /// The group.
        group: GroupId,
        /// Why.
        reason: String,
    },
    /// The application failed to apply a committed entry; the group's state machine stops.
    Apply {
        /// The group.
        group: GroupId,
        /// The entry's index.
        index: u64,
        /// The application's reason.
        reason: String,
    },
    /// This node does not lead `group`; `leader` is the one it knows of.
    NotLeader {
        /// The group.
        group: GroupId,
        /// The leader this node knows of, if any.
        leader: Option<NodeId>,
    },
    /// A write was proposed but its entry was replaced on a leader change: it may or may
    /// not be committed. Retrying may apply it twice unless the command is idempotent.
    Uncertain {
        /// The group.
        group: GroupId,
        /// Why the outcome is unknown.
        reason: String,
    },
    /// A message could not reach `target` or no answer came in time.
    Unreachable {
        /// The peer.
        target: NodeId,
        /// Why.
        reason: String,
    },
    /// The group has no replica on this node.
    NoSuchGroup(GroupId),
    /// Raft itself reported an error (`group 3: change membership: ...`).
    Raft {
        /// The group.
        group: GroupId,
        /// What was being done and openraft's message.
        reason: String,
    },
    /// `initialize` found the replica already in a group: it has log entries or has voted
    /// (what openraft said, with the group).
    AlreadyInitialized {
        /// The group.
        group: GroupId,
        /// openraft's message (the log's last id, the vote).
        reason: String,
    },
    /// A required column family does not exist and could not be created.
    MissingColumnFamily(&'static str),
    /// Waiting for a condition timed out.
    Timeout(String),
    /// A command larger than one entry may carry ([`crate::MAX_COMMAND_BYTES`]); nothing
    /// was proposed.
    TooLarge {
        /// The group.
        group: GroupId,
        /// The command's bytes.
        bytes: usize,
    },
}

impl Error {
    /// An engine error while doing `context`.
    pub fn engine(context: impl Into<String>, source: strata::Error) -> Self {
        Error::Engine { context: context.into(), source }
    }

    /// A record of `group` that does not decode.
    pub(crate) fn corrupt(group: GroupId, record: impl Into<String>, e: &DecodeError) -> Self {
        Error::Corrupt { group, record: record.into(), reason: e.to_string() }
    }

    /// A file operation failure.
    pub(crate) fn io(
        context: impl Into<String>,
        path: impl Into<PathBuf>,
        e: std::io::Error,
    ) -> Self {
        Error::Io { context: context.into(), path: path.into(), source: e }
    }

    /// A snapshot failure of `group`.
    pub(crate) fn snapshot(group: GroupId, reason: impl Into<String>) -> Self {
        Error::Snapshot { group, reason: reason.into() }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Engine { context, source } => write!(f, "{context}: {source}"),
            Error::Corrupt { group, record, reason } => {
                write!(f, "{group}: corrupt {record}: {reason}")
            }
            Error::LogInvariant { group, reason } => write!(f, "{group}: raft log: {reason}"),
            Error::Io { context, path, source } => {
                write!(f, "{context}: {}: {source}", path.display())
            }
            Error::Sync(e) => write!(f, "{e}"),
            Error::Snapshot { group, reason } => write!(f, "{group}: snapshot: {reason}"),
            Error::Apply { group, index, reason } => {
                write!(f, "{group}: applying the entry at index {index}: {reason}")
            }
            Error::NotLeader { group, leader: Some(l) } => {
                write!(f, "{group}: this node is not the leader; node {l} is")
            }
            Error::NotLeader { group, leader: None } => {
                write!(f, "{group}: this node is not the leader; no leader is known")
            }
            Error::Uncertain { group, reason } => {
                write!(f, "{group}: outcome of the write unknown: {reason}")
            }
            Error::Unreachable { target, reason } => write!(f, "node {target}: {reason}"),
            Error::NoSuchGroup(g) => write!(f, "{g}: no replica on this node"),
            Error::Raft { group, reason } => write!(f, "{group}: {reason}"),
            Error::AlreadyInitialized { group, reason } => {
                write!(f, "{group}: already initialized: {reason}")
            }
            Error::MissingColumnFamily(cf) => write!(f, "column family {cf} is missing"),
            Error::Timeout(what) => write!(f, "timed out waiting for {what}"),
            Error::TooLarge { group, bytes } => write!(
                f,
                "{group}: a command of {bytes} bytes, over the {} one log entry may carry; \
                 nothing was proposed",
                crate::MAX_COMMAND_BYTES
            ),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Engine { source, .. } => Some(source),
            Error::Io { source, .. } => Some(source),
            Error::Sync(e) => Some(e),
            _ => None,
        }
    }
}

impl From<SyncError> for Error {
    fn from(e: SyncError) -> Self {
        Error::Sync(e)
    }
}

impl From<Error> for std::io::Error {
    fn from(e: Error) -> Self {
        std::io::Error::other(e)
    }
}
