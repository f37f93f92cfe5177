//! The write-ahead log: a file of checksummed records, each the wire form of a `WriteBatch`.
//! The MANIFEST uses the same format for its `VersionEdit` records.
//!
//! Layout and constants are in [`format`]; [`LogWriter`] appends, [`LogReader`] and
//! [`replay_log`] read back.
//!
//! # What counts as damage
//!
//! Reading stops being clean at the first *damage*: a fragment whose checksum does not verify,
//! whose length overruns its block, whose type is unknown or zero, a header or payload cut off
//! by the end of the file, a record whose `First` fragment is not followed by its `Last` (the
//! file ends, or a new record starts, first), or a `Middle`/`Last` fragment with no `First`.
//! The content of a block trailer (fewer than 7 bytes at a block's end) is padding and is not
//! checked, so a file ending inside a trailer after a complete record ends cleanly.
//!
//! A *torn tail* is damage after which no valid record start follows: from the damaged
//! record's first byte to the end of the file there is no `Full` or `First` fragment whose
//! checksum verifies (every byte offset is tried). That covers a file cut inside a record,
//! a `First`/`Middle` with no `Last` at the end, and a tail of zeros or garbage. Verified
//! `Middle`/`Last` fragments do not count as "valid data after": they can be the rest of the
//! damaged record itself (say, when a lost page left its first fragment zeroed).
//!
//! # Recovery modes
//!
//! | mode | torn tail | damage with a valid record after it |
//! |---|---|---|
//! | `PointInTime` (default) | dropped, `torn_tail = true` | `Err(Corruption)` |
//! | `TolerateCorruptedTailRecords` | dropped, `torn_tail = true` | `Err(Corruption)` |
//! | `AbsoluteConsistency` | `Err(Corruption)` | `Err(Corruption)` |
//! | `SkipAnyCorruptedRecords` | dropped, `torn_tail = true` | skipped and counted, reading goes on at the next valid record start |
//!
//! So `PointInTime` yields exactly the records written before the first damage, and fails
//! rather than silently lose a record that was followed by later writes. In Strata
//! `TolerateCorruptedTailRecords` follows the same rule (RocksDB's `PointInTime` stops silently at
//! any damage; Strata's is the stricter one, which leaves nothing between the two).
//! `AbsoluteConsistency` accepts a file only if it ends exactly at the end of a record or inside
//! the block trailer right after one. A `Corruption` names the file and the offset of the first
//! byte of the damaged record (or fragment). In `SkipAnyCorruptedRecords` every delivered record
//! passed its checksums, but a record that merely *contains* the bytes of a valid log fragment
//! (a log file stored as a value) could be picked up while resynchronising: a salvage mode.
//!
//! I/O errors are returned in every mode.

pub(crate) mod format;
mod header;
pub(crate) mod reader;
mod tail;
mod txn_record;
pub(crate) mod writer;

pub(crate) use header::{
    decode_wal_event, decode_wal_header, encode_wal_event, encode_wal_header, WalEvent,
};
pub use reader::WalRecoveryMode;
pub(crate) use reader::{replay_live_wal, replay_log, replay_wal};
pub(crate) use tail::{tail_is_interrupted_append, TailRule};
pub(crate) use txn_record::{decode_txn_record, TxnRecord};
pub(crate) use writer::LogWriter;

#[cfg(test)]
mod tests;
