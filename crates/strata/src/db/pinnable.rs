//! [`DbPinnableSlice`]: a value returned by `Db::get_pinned` without copying it out of where
//! the read found it.
//!
//! Where a value lives, and what the slice holds to keep it there:
//! - a memtable (active or immutable): the memtable's `Arc`. Its arena frees nothing before
//!   the memtable drops and never moves an allocation, so the value's bytes stay valid and
//!   unchanged while the slice lives, even after the memtable is flushed and retired.
//! - a table's data block: the block's `Arc`, the one the block cache holds (or the one read
//!   for this lookup when the block was not cached or `fill_cache` is off). A cached block
//!   evicted while the slice lives stays in memory until the slice drops; its bytes are no
//!   longer counted in the cache's usage from the eviction on.
//! - otherwise: an owned copy. That is the case for a value computed by merging operands
//!   (it exists nowhere else), and for a value the table reader could not place inside its
//!   block (never expected; kept as a safe fallback).

use std::sync::Arc;

use crate::memtable::MemTable;
use crate::sstable::Block;

/// A value pinned where it was read (the `rocksdb` crate's `DBPinnableSlice`); dereferences to
/// `[u8]`. See the module documentation for what it keeps alive.
pub struct DbPinnableSlice {
    inner: Pinned,
}

enum Pinned {
    Owned(Vec<u8>),
    Block { block: Arc<Block>, start: usize, len: usize },
    Memtable { _mem: Arc<MemTable>, ptr: *const u8, len: usize },
}

// SAFETY: the `Memtable` variant's pointer refers to immutable bytes in the arena of the
// memtable that the same value keeps alive (`_mem`); nothing writes them after they were
// published, so sharing or sending the pointer between threads is as safe as sharing `&[u8]`.
unsafe impl Send for DbPinnableSlice {}
// SAFETY: as for `Send`: the pointed-to bytes are immutable for the value's whole life.
unsafe impl Sync for DbPinnableSlice {}

/// Where a [`DbPinnableSlice`]'s bytes are (for tests and diagnostics).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PinnedSource {
    /// An owned copy (a merge result).
    Owned,
    /// A table data block (cached or just read).
    Block,
    /// A memtable's arena.
    Memtable,
}

impl DbPinnableSlice {
    pub(crate) fn owned(v: Vec<u8>) -> Self {
        DbPinnableSlice { inner: Pinned::Owned(v) }
    }

    /// `value`, which lies in `block`'s bytes (copied if it does not).
    pub(crate) fn in_block(block: &Arc<Block>, value: &[u8]) -> Self {
        let base = block.bytes().as_ptr() as usize;
        let at = value.as_ptr() as usize;
        match at.checked_sub(base) {
            Some(start) if start + value.len() <= block.bytes().len() => DbPinnableSlice {
                inner: Pinned::Block { block: block.clone(), start, len: value.len() },
            },
            _ => Self::owned(value.to_vec()),
        }
    }

    /// `value`, which lies in `mem`'s arena (as the memtable's `get` hands it out).
    pub(crate) fn in_memtable(mem: &Arc<MemTable>, value: &[u8]) -> Self {
        DbPinnableSlice {
            inner: Pinned::Memtable { _mem: mem.clone(), ptr: value.as_ptr(), len: value.len() },
        }
    }

    /// Where the bytes are.
    pub fn source(&self) -> PinnedSource {
        match self.inner {
            Pinned::Owned(_) => PinnedSource::Owned,
            Pinned::Block { .. } => PinnedSource::Block,
            Pinned::Memtable { .. } => PinnedSource::Memtable,
        }
    }

    /// Keeps the first `n` bytes (no-op when it has no more).
    pub(crate) fn truncate(&mut self, n: usize) {
        match &mut self.inner {
            Pinned::Owned(v) => v.truncate(n),
            Pinned::Block { len, .. } | Pinned::Memtable { len, .. } => *len = (*len).min(n),
        }
    }

    /// The bytes as a `Vec` (a copy unless the value was already owned).
    pub fn into_vec(self) -> Vec<u8> {
        match self.inner {
            Pinned::Owned(v) => v,
            _ => self.to_vec(),
        }
    }
}

impl std::ops::Deref for DbPinnableSlice {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match &self.inner {
            Pinned::Owned(v) => v,
            Pinned::Block { block, start, len } => &block.bytes()[*start..*start + *len],
            // SAFETY: `ptr` and `len` came from a `&[u8]` into the arena of the memtable held
            // by `_mem`; the arena neither frees nor moves memory while the memtable lives
            // (`memtable/arena.rs`), and published entries are never written again.
            Pinned::Memtable { ptr, len, .. } => unsafe { std::slice::from_raw_parts(*ptr, *len) },
        }
    }
}

impl AsRef<[u8]> for DbPinnableSlice {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl std::fmt::Debug for DbPinnableSlice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DbPinnableSlice")
            .field("source", &self.source())
            .field("value", &String::from_utf8_lossy(self))
            .finish()
    }
}

impl PartialEq<[u8]> for DbPinnableSlice {
    fn eq(&self, other: &[u8]) -> bool {
        **self == *other
    }
}

impl PartialEq<&[u8]> for DbPinnableSlice {
    fn eq(&self, other: &&[u8]) -> bool {
        **self == **other
    }
}

impl PartialEq<Vec<u8>> for DbPinnableSlice {
    fn eq(&self, other: &Vec<u8>) -> bool {
        **self == other[..]
    }
}
