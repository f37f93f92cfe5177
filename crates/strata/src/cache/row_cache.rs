//! The row cache (`Options::row_cache`, RocksDB's): for one user key in one table file, the
//! entries a point read took from that file, kept as bytes the reader encodes and replays
//! (`db/row_cache.rs`), so a later read of that key in that file skips the table's index and
//! data block.
//!
//! It is the side of a [`BlockCache`](super::BlockCache) handle made the first time the handle
//! is given to a DB as its row cache: an LRU of the handle's capacity whatever the handle's
//! block side is (a clock cache's slot table is sized for blocks; rows are far smaller). One
//! handle given to several DBs as their row cache is one budget for all of them. A handle that
//! is both a DB's block cache and its row cache holds up to its capacity on each side, where
//! RocksDB's one cache would hold both in one budget (`docs/rocksdb-compat.md`).
//!
//! A full row cache takes in what the handle's block side would (`admission.rs`): with
//! [`Admission::SecondMiss`](super::Admission), the handle's default, only a row missed before
//! within the last two cache-fulls of misses, so reads spread evenly over more keys than it
//! holds do not pay an insert and an eviction at each miss; with `Always`, every row, as
//! RocksDB's row cache. A miss tells the reader whether to record the row at all.
//!
//! Entries are keyed by a [`CacheKey`]: the reading DB's owner id, the table's file number and,
//! in place of an offset, a hash of the user key and the read's visibility tag. The entry keeps
//! the key and the tag, and a lookup compares both, so two keys of one hash never answer for
//! each other (the later insert replaces the earlier one).

use std::hash::Hasher;
use std::sync::Arc;

use super::{block_hash, CacheKey, Doorkeeper, LruCache, MixHasher, Priority};

/// What one table file gave one point read of a user key (the data bytes are the reader's).
pub struct Row {
    tag: u64,
    key_len: usize,
    /// The user key, then the data: one allocation, and the key compared where the data is.
    bytes: Box<[u8]>,
}

impl Row {
    fn new(user_key: &[u8], tag: u64, data: &[u8]) -> Row {
        Row { tag, key_len: user_key.len(), bytes: [user_key, data].concat().into() }
    }

    fn is(&self, tag: u64, user_key: &[u8]) -> bool {
        self.tag == tag && self.bytes.get(..self.key_len) == Some(user_key)
    }

    /// The cached bytes.
    pub fn data(&self) -> &[u8] {
        &self.bytes[self.key_len..]
    }
}

/// The rows of every DB that has the handle as its row cache.
pub struct RowCache {
    rows: LruCache<CacheKey, Row>,
    /// Recent misses, for second-miss admission; None to take in every row.
    doorkeeper: Option<Doorkeeper>,
}

/// What a lookup found.
pub enum Probe {
    /// The row.
    Hit(Arc<Row>),
    /// No row.
    Miss {
        /// Whether the cache would take one in now (module doc).
        keep: bool,
    },
}

/// Bytes an entry costs beyond its key and data: the row, its key and the LRU's node.
const ENTRY_OVERHEAD: usize = 96;
/// The data a row is taken to hold when admission is decided, before it is read.
const TYPICAL_DATA: usize = 64;
/// The key a row is taken to have when the doorkeeper is sized.
const TYPICAL_KEY: usize = 16;

impl RowCache {
    /// A row cache of `capacity` bytes, with second-miss admission or taking every row.
    pub fn new(capacity: usize, second_miss: bool) -> Self {
        RowCache {
            rows: LruCache::new(capacity),
            doorkeeper: second_miss.then(|| {
                Doorkeeper::for_entries(capacity, TYPICAL_KEY + TYPICAL_DATA + ENTRY_OVERHEAD)
            }),
        }
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
        match self.probe(owner, file, tag, user_key) {
            Probe::Hit(row) => Some(row),
            Probe::Miss { .. } => None,
        }
    }

    /// [`Self::lookup`], a miss saying whether a row read now would be taken in.
    pub fn probe(&self, owner: u64, file: u64, tag: u64, user_key: &[u8]) -> Probe {
        let key = Self::key(owner, file, tag, user_key);
        if let Some(row) = self.rows.lookup(&key) {
            if row.is(tag, user_key) {
                return Probe::Hit(row);
            }
        }
        let keep = match &self.doorkeeper {
            None => true,
            Some(d) => {
                let charge = user_key.len() + TYPICAL_DATA + ENTRY_OVERHEAD;
                !self.rows.would_evict(&key, charge)
                    || d.second_miss(block_hash([key.owner, key.file, key.offset]), charge)
            }
        };
        Probe::Miss { keep }
    }

    /// Keeps `data` as the row of `user_key` in `file` under `tag` for `owner`.
    pub fn insert(&self, owner: u64, file: u64, tag: u64, user_key: &[u8], data: &[u8]) {
        let charge = user_key.len() + data.len() + ENTRY_OVERHEAD;
        let row = Row::new(user_key, tag, data);
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
        let c = RowCache::new(1 << 20, true);
        c.insert(1, 7, 0, b"key", b"data");
        assert_eq!(c.lookup(1, 7, 0, b"key").map(|r| r.data().to_vec()), Some(b"data".to_vec()));
        assert!(c.lookup(2, 7, 0, b"key").is_none(), "another DB");
        assert!(c.lookup(1, 8, 0, b"key").is_none(), "another file");
        assert!(c.lookup(1, 7, 5, b"key").is_none(), "another read sequence");
        assert!(c.lookup(1, 7, 0, b"kez").is_none(), "another key");
        assert!(c.usage() >= 7);
    }

    /// Full, a cache with second-miss admission asks for a row only on its key's second miss;
    /// one that takes every row asks each time.
    #[test]
    fn a_full_cache_asks_for_a_row_on_its_second_miss() {
        let keep = |c: &RowCache, k: &[u8]| match c.probe(1, 1, 0, k) {
            Probe::Miss { keep } => keep,
            Probe::Hit(_) => panic!("no row was kept"),
        };
        for second_miss in [true, false] {
            let c = RowCache::new(4096, second_miss);
            assert!(keep(&c, b"a"), "a cache with room takes any row");
            c.insert(1, 1, 0, b"big", &[0; 3900]);
            assert_eq!(keep(&c, b"b"), !second_miss, "a first miss, full");
            assert!(keep(&c, b"b"), "a second miss");
        }
    }

    /// Two keys whose hashes meet (forced here by inserting one row under the other's cache
    /// key) never answer for each other: the entry's own key is compared.
    #[test]
    fn a_row_under_another_keys_hash_is_a_miss() {
        let c = RowCache::new(1 << 20, true);
        let row = Row::new(b"other", 0, b"x");
        c.rows.insert(RowCache::key(1, 7, 0, b"key"), Arc::new(row), 10);
        assert!(c.lookup(1, 7, 0, b"key").is_none());
        let row = Row::new(b"key", 3, b"x");
        c.rows.insert(RowCache::key(1, 7, 0, b"key"), Arc::new(row), 10);
        assert!(c.lookup(1, 7, 0, b"key").is_none(), "same key, another tag");
    }
}
