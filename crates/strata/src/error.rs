//! The one error type of the engine.
//!
//! Contract: not-found is never an error (`Ok(None)`); damaged persistent state is always
//! `Corruption` (or `ChecksumMismatch` when a checksum disagreed) and names the file and byte
//! offset; a failed background write makes the DB read-only, and every later write returns
//! `Background` carrying the first failure's reason.

use std::fmt;
use std::io;
use std::path::PathBuf;

/// Result alias used throughout the engine.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Every failure the engine reports.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// An operating-system I/O failure on `path` while doing `op`.
    Io {
        /// The operation that failed (`open`, `read`, `fsync`, ...).
        op: &'static str,
        /// The file or directory it was done on.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
    /// Persistent state is damaged or is not what the engine wrote.
    Corruption {
        /// The damaged file.
        file: PathBuf,
        /// Byte offset of the damage (of the damaged record or block) in the file.
        offset: u64,
        /// What is wrong there.
        reason: String,
    },
    /// A stored checksum does not match the data it covers.
    ChecksumMismatch {
        /// The file holding the data.
        file: PathBuf,
        /// Byte offset of the block whose checksum failed.
        offset: u64,
        /// The checksum stored with the data.
        expected: u32,
        /// The checksum of the data as read.
        actual: u32,
    },
    /// The caller passed something the engine cannot accept.
    InvalidArgument(String),
    /// What was asked for is not held by the DB: the write batches `Db::get_updates_since`
    /// was asked for are not (or no longer) in its WAL files. Never a missing key (that is
    /// `Ok(None)`).
    NotFound(String),
    /// The request is valid but this build or configuration cannot serve it.
    NotSupported(String),
    /// The database directory is locked by another `Db` (in this or another process).
    Locked(PathBuf),
    /// An earlier write, sync, flush or compaction failed; the DB refuses further writes.
    Background(String),
    /// The database is shutting down.
    ShutdownInProgress,
    /// The column family (named) was dropped: the call's work on it was abandoned.
    ColumnFamilyDropped(String),
    /// A transaction's commit found that a key it read for update or wrote was written by
    /// someone else after the transaction's snapshot (or after it first read or wrote the
    /// key): nothing of the transaction was written. Retry it from the start.
    Busy(String),
    /// A transaction's commit could not tell whether a key changed: the writes since the
    /// transaction's snapshot are no longer all in memory (a flush took them). Nothing of
    /// the transaction was written; retrying it from the start with a new snapshot works.
    TryAgain(String),
    /// The call could not finish without what it was told to avoid: a read limited to memory
    /// (`ReadOptions::read_tier`) that needed a file read, or a write with
    /// `WriteOptions::no_slowdown` that would have waited in a write stall. Nothing was
    /// changed; for a read, the key may or may not exist.
    Incomplete(String),
    /// A pessimistic transaction (or a `TransactionDb` write) waited longer than its lock
    /// timeout for a key another transaction holds: the operation did nothing.
    TimedOut(String),
    /// Waiting for a lock would close a cycle of transactions each waiting for the next (the
    /// message names them and the keys): the operation did nothing; roll the transaction back
    /// (or retry the operation) so the others can go on.
    Deadlock(String),
    /// The transaction ran past its expiration and another took its locks: it can no longer
    /// commit (nothing of it was written).
    Expired(String),
    /// Work the engine ran panicked (its own code, or a user callback it called, such as a
    /// compaction filter or merge operator); the panic was caught. On a background thread it
    /// becomes the background error: every waiter is woken with it and writes are refused.
    Panic {
        /// The thread it happened on (`strata-flush`, `strata-compact-0`, ...).
        thread: String,
        /// The panic's message.
        message: String,
    },
}

/// The kind of an [`Error`], in the `rocksdb` crate's names (`Error::kind`), so code that
/// matches on `rocksdb::ErrorKind` ports unchanged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// `NotFound`: only `Db::get_updates_since` (a missing key is `Ok(None)`).
    NotFound,
    /// `Corruption` and `ChecksumMismatch`.
    Corruption,
    /// `NotSupported`.
    NotSupported,
    /// `InvalidArgument`.
    InvalidArgument,
    /// `Io`, and `Locked` (RocksDB reports a held LOCK file as an I/O error).
    IOError,
    /// Not produced by Strata.
    MergeInProgress,
    /// `Incomplete`.
    Incomplete,
    /// `ShutdownInProgress`.
    ShutdownInProgress,
    /// `TimedOut`.
    TimedOut,
    /// Not produced by Strata.
    Aborted,
    /// `Busy`, and `Deadlock` (RocksDB's `Busy` with its deadlock subcode).
    Busy,
    /// `Expired`.
    Expired,
    /// `TryAgain`.
    TryAgain,
    /// Not produced by Strata.
    CompactionTooLarge,
    /// `ColumnFamilyDropped`.
    ColumnFamilyDropped,
    /// `Background` (the first failure's kind is in its message) and `Panic`.
    Unknown,
}

impl Error {
    /// The error's kind in the `rocksdb` crate's terms.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Io { .. } | Error::Locked(_) => ErrorKind::IOError,
            Error::Corruption { .. } | Error::ChecksumMismatch { .. } => ErrorKind::Corruption,
            Error::InvalidArgument(_) => ErrorKind::InvalidArgument,
            Error::NotFound(_) => ErrorKind::NotFound,
            Error::NotSupported(_) => ErrorKind::NotSupported,
            Error::ShutdownInProgress => ErrorKind::ShutdownInProgress,
            Error::ColumnFamilyDropped(_) => ErrorKind::ColumnFamilyDropped,
            Error::Busy(_) | Error::Deadlock(_) => ErrorKind::Busy,
            Error::TryAgain(_) => ErrorKind::TryAgain,
            Error::Incomplete(_) => ErrorKind::Incomplete,
            Error::TimedOut(_) => ErrorKind::TimedOut,
            Error::Expired(_) => ErrorKind::Expired,
            Error::Background(_) | Error::Panic { .. } => ErrorKind::Unknown,
        }
    }

    /// Builds an I/O error with its operation and path.
    pub fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        Error::Io { op, path: path.into(), source }
    }

    /// Builds a corruption error naming the file and offset.
    pub fn corruption(file: impl Into<PathBuf>, offset: u64, reason: impl Into<String>) -> Self {
        Error::Corruption { file: file.into(), offset, reason: reason.into() }
    }

    /// A caught panic of thread `thread` as an error: the payload's message when it is a
    /// string (as `panic!` makes it), else a placeholder.
    pub fn from_panic(thread: impl Into<String>, payload: &(dyn std::any::Any + Send)) -> Self {
        let message = if let Some(s) = payload.downcast_ref::<&str>() {
            (*s).to_string()
        } else if let Some(s) = payload.downcast_ref::<String>() {
            s.clone()
        } else {
            "(a panic payload that is not a string)".to_string()
        };
        Error::Panic { thread: thread.into(), message }
    }

    /// True for `Corruption` and `ChecksumMismatch`.
    pub fn is_corruption(&self) -> bool {
        matches!(self, Error::Corruption { .. } | Error::ChecksumMismatch { .. })
    }

    /// True when the underlying OS error says the device is full.
    pub fn is_no_space(&self) -> bool {
        matches!(self, Error::Io { source, .. } if source.raw_os_error() == Some(28)
            || source.kind() == io::ErrorKind::StorageFull)
    }

    /// Rewrites the file name of a `Corruption`/`ChecksumMismatch` produced by a decoder that did
    /// not know which file it was reading.
    pub(crate) fn with_file(self, file: &std::path::Path) -> Self {
        match self {
            Error::Corruption { offset, reason, .. } => {
                Error::Corruption { file: file.to_path_buf(), offset, reason }
            }
            Error::ChecksumMismatch { offset, expected, actual, .. } => {
                Error::ChecksumMismatch { file: file.to_path_buf(), offset, expected, actual }
            }
            other => other,
        }
    }

    /// A copy suitable for storing as the sticky background error (io::Error is not Clone).
    pub(crate) fn duplicate(&self) -> Self {
        match self {
            Error::Io { op, path, source } => Error::Io {
                op,
                path: path.clone(),
                source: io::Error::new(source.kind(), source.to_string()),
            },
            Error::Corruption { file, offset, reason } => {
                Error::Corruption { file: file.clone(), offset: *offset, reason: reason.clone() }
            }
            Error::ChecksumMismatch { file, offset, expected, actual } => Error::ChecksumMismatch {
                file: file.clone(),
                offset: *offset,
                expected: *expected,
                actual: *actual,
            },
            Error::InvalidArgument(s) => Error::InvalidArgument(s.clone()),
            Error::NotFound(s) => Error::NotFound(s.clone()),
            Error::NotSupported(s) => Error::NotSupported(s.clone()),
            Error::Locked(p) => Error::Locked(p.clone()),
            Error::Background(s) => Error::Background(s.clone()),
            Error::ShutdownInProgress => Error::ShutdownInProgress,
            Error::ColumnFamilyDropped(s) => Error::ColumnFamilyDropped(s.clone()),
            Error::Busy(s) => Error::Busy(s.clone()),
            Error::TryAgain(s) => Error::TryAgain(s.clone()),
            Error::Incomplete(s) => Error::Incomplete(s.clone()),
            Error::TimedOut(s) => Error::TimedOut(s.clone()),
            Error::Deadlock(s) => Error::Deadlock(s.clone()),
            Error::Expired(s) => Error::Expired(s.clone()),
            Error::Panic { thread, message } => {
                Error::Panic { thread: thread.clone(), message: message.clone() }
            }
        }
    }
}

/// Errors compare by their text, as the `rocksdb` crate's do.
impl PartialEq for Error {
    fn eq(&self, other: &Error) -> bool {
        self.to_string() == other.to_string()
    }
}

impl Eq for Error {}

impl Error {
    /// The error's text (the `rocksdb` crate's `Error::into_string`).
    pub fn into_string(self) -> String {
        self.to_string()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { op, path, source } => {
                write!(f, "I/O error during {op} on {}: {source}", path.display())
            }
            Error::Corruption { file, offset, reason } => {
                write!(f, "corruption in {} at offset {offset}: {reason}", file.display())
            }
            Error::ChecksumMismatch { file, offset, expected, actual } => write!(
                f,
                "checksum mismatch in {} at offset {offset}: stored {expected:#010x}, computed {actual:#010x}",
                file.display()
            ),
            Error::InvalidArgument(s) => write!(f, "Invalid argument: {s}"),
            Error::NotFound(s) => write!(f, "NotFound: {s}"),
            Error::NotSupported(s) => write!(f, "Not implemented: {s}"),
            Error::Locked(p) => write!(
                f,
                "IO error: While lock file: {}: the database is locked, another Db (in this \
                 or another process) holds it",
                p.join("LOCK").display()
            ),
            Error::Background(s) => {
                write!(f, "database is read-only after a background error: {s}")
            }
            Error::ShutdownInProgress => write!(f, "database is shutting down"),
            Error::ColumnFamilyDropped(s) => write!(f, "column family {s:?} was dropped"),
            Error::Busy(s) => write!(f, "transaction conflict (busy): {s}"),
            Error::TryAgain(s) => write!(f, "transaction cannot be validated, try again: {s}"),
            Error::TimedOut(s) => write!(f, "operation timed out: {s}"),
            Error::Incomplete(s) => write!(f, "result incomplete: {s}"),
            Error::Deadlock(s) => write!(f, "deadlock detected: {s}"),
            Error::Expired(s) => write!(f, "transaction expired: {s}"),
            Error::Panic { thread, message } => write!(f, "panic in thread {thread}: {message}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_file_and_offset() {
        let e = Error::corruption("/db/000012.sst", 4096, "bad block trailer");
        assert_eq!(e.to_string(), "corruption in /db/000012.sst at offset 4096: bad block trailer");
        assert!(e.is_corruption());
        let dup = e.duplicate();
        assert_eq!(dup.to_string(), e.to_string());
    }

    #[test]
    fn no_space_detected() {
        let e = Error::io("append", "/db/x", io::Error::from_raw_os_error(28));
        assert!(e.is_no_space());
        assert!(!e.is_corruption());
    }
}
