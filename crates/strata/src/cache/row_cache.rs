//! The row cache (`Options::row_cache`, RocksDB's): for one user key in one table file, the
//! entries a point read took from that file, kept as bytes the reader encodes and replays
//! (`db/row_cache.rs`), so a later read of that key in that file skips the table's filter,
//! index and data block.
//!
//! It is the side of a [`BlockCache`](super::BlockCache) handle made the first time the handle
//! is given to a DB as its row cache: an LRU of the handle's capacity whatever the handle's
//! block side is (a clock cache's slot table is sized for blocks; rows are far smaller). One
//! handle given to several DBs as their row cache is one budget for all of them. A handle that
//! is both a DB's block cache and its row cache holds up to its capacity on each side, where
//! RocksDB's one cache would hold both in one budget (`docs/rocksdb-compat.md`).
//!
//! Entries are keyed by a [`CacheKey`]: the reading DB's owner id, the table's file number and,
//! in place of an offset, a hash of the user key and the read's visibility tag. The entry keeps
//! the key and the tag, and a lookup compares both, so two keys of one hash never answer for
//! each other (the later insert replaces the earlier one).

use std::hash::Hasher;
use std::sync::Arc;

use super::{CacheKey, LruCache, MixHasher, Priority};

/// What one table file gave one point read of `user_key` (the bytes are the reader's).
pub struct Row {
    user_key: Box<[u8]>,
    tag: u64,
    data: Box<[u8]>,
}

impl Row {
    /// The cached bytes.
    pub fn data(&self) -> &[u8] {
        &self.data
    }
}

/// The rows of every DB that has the handle as its row cache.
pub struct RowCache {
    rows: LruCache<CacheKey, Row>,
}

/// Bytes an entry costs beyond its key and data: the row, its key and the LRU's node.
const ENTRY_OVERHEAD: usize = 96;

impl RowCache {
    /// A row cache of `capacity` bytes.
    pub fn new(capacity: usize) -> Self {
        RowCache { rows: LruCache::new(capacity) }
    }

    fn key(owner: u64, file: u64, tag: u64, user_key: &[u8]) -> CacheKey {
        let mut h = MixHasher::default();
        h.write_u64(tag);
        h.write(user_key);
        h.write_usize(user_key.len());
        CacheKey { owner, file, offset: h.finish() }
    }

    /// The row of `user_key` in file `file` read under `tag` by owner `owner`, if cached.
    pub fn lookup(&self, owner: u64, file: u64, tag: u64, user_key: &[u8]) -> Option<Arc<Row>> {
        let row = self.rows.lookup(&Self::key(owner, file, tag, user_key))?;
        (row.tag == tag && *row.user_key == *user_key).then_some(row)
    }

    /// Keeps `data` as the row of `user_key` in `file` under `tag` for `owner`.
    pub fn insert(&self, owner: u64, file: u64, tag: u64, user_key: &[u8], data: Box<[u8]>) {
        let charge = user_key.len() + data.len() + ENTRY_OVERHEAD;
        let row = Row { user_key: user_key.into(), tag, data };
        self.rows.insert_with_priority(
            Self::key(owner, file, tag, user_key),
            Arc::new(row),
            charge,
            Priority::Low,
        );
    }

    /// Bytes of charge held.
    pub fn usage(&self) -> usize {
        self.rows.usage()
    }

    /// Memory of the cache's own structures.
    pub fn structure_bytes(&self) -> usize {
        self.rows.structure_bytes()
    }

    /// Sets the byte capacity.
    pub fn set_capacity(&self, capacity: usize) {
        self.rows.set_capacity(capacity);
    }

    /// Charge of the rows readers hold right now.
    pub fn pinned_usage(&self) -> usize {
        self.rows.pinned_usage()
    }

    /// Lookups that found their row.
    pub fn hits(&self) -> u64 {
        self.rows.hits()
    }

    /// Lookups that did not (a row replaced by another key of its hash counts here too).
    pub fn misses(&self) -> u64 {
        self.rows.misses()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_answers_only_for_its_owner_file_tag_and_key() {
        let c = RowCache::new(1 << 20);
        c.insert(1, 7, 0, b"key", b"data".to_vec().into_boxed_slice());
        assert_eq!(c.lookup(1, 7, 0, b"key").map(|r| r.data().to_vec()), Some(b"data".to_vec()));
        assert!(c.lookup(2, 7, 0, b"key").is_none(), "another DB");
        assert!(c.lookup(1, 8, 0, b"key").is_none(), "another file");
        assert!(c.lookup(1, 7, 5, b"key").is_none(), "another read sequence");
        assert!(c.lookup(1, 7, 0, b"kez").is_none(), "another key");
        assert!(c.usage() >= 7);
    }

    /// Two keys whose hashes meet (forced here by inserting one row under the other's cache
    /// key) never answer for each other: the entry's own key is compared.
    #[test]
    fn a_row_under_another_keys_hash_is_a_miss() {
        let c = RowCache::new(1 << 20);
        let row = Row { user_key: (*b"other").into(), tag: 0, data: (*b"x").into() };
        c.rows.insert(RowCache::key(1, 7, 0, b"key"), Arc::new(row), 10);
        assert!(c.lookup(1, 7, 0, b"key").is_none());
        let row = Row { user_key: (*b"key").into(), tag: 3, data: (*b"x").into() };
        c.rows.insert(RowCache::key(1, 7, 0, b"key"), Arc::new(row), 10);
        assert!(c.lookup(1, 7, 0, b"key").is_none(), "same key, another tag");
    }
}
