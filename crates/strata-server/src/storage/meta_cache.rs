//! A cache of small metadata entries (raw bytes, as stored), so that reads of hot keys skip
//! the engine's point lookup (a memtable seek plus table probes) for the metadata family.
//!
//! Contract (what keeps it from serving a stale entry):
//! - Every write of a metadata entry (put or delete) names its key with [`note_write`] while
//!   the batch is built, and the writer calls [`MetaCache::invalidate_noted`] *after* the batch
//!   is written (`Store::write`); FLUSHALL calls [`MetaCache::clear`] after its deletions.
//! - A reader that misses notes its shard's generation before reading the engine
//!   ([`MetaCache::generation`]) and [`MetaCache::fill`]s only if no invalidation of that
//!   shard happened since. So a value read before a write landed is either dropped (the
//!   write's invalidation came first) or removed (it came after).
//! - Only entries of at most [`MAX_ENTRY`] bytes are kept (every hash/set/zset/list entry; small
//!   strings); a shard past [`SHARD_CAP`] entries is emptied. A miss is always correct.

use parking_lot::Mutex;
use std::cell::RefCell;
use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::BuildHasher;

/// Largest raw entry kept.
pub const MAX_ENTRY: usize = 64;
/// Entries per shard before it is emptied.
pub const SHARD_CAP: usize = 16 * 1024;
const SHARDS: usize = 32;

#[derive(Default)]
struct Shard {
    map: HashMap<Vec<u8>, Vec<u8>>,
    /// Bumped by every invalidation of a key of this shard.
    generation: u64,
}

/// The cache.
pub struct MetaCache {
    shards: Vec<Mutex<Shard>>,
    hasher: RandomState,
}

impl Default for MetaCache {
    fn default() -> Self {
        MetaCache {
            shards: (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect(),
            hasher: RandomState::new(),
        }
    }
}

thread_local! {
    static NOTED: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

/// Records that this thread's batch being built writes the metadata of `key`.
pub fn note_write(key: &[u8]) {
    NOTED.with(|n| n.borrow_mut().push(key.to_vec()));
}

impl MetaCache {
    fn shard(&self, key: &[u8]) -> &Mutex<Shard> {
        &self.shards[(self.hasher.hash_one(key) as usize) % SHARDS]
    }

    /// The cached raw entry of `key`, or the shard generation to pass to [`MetaCache::fill`].
    pub fn get(&self, key: &[u8]) -> Result<Vec<u8>, u64> {
        let s = self.shard(key).lock();
        match s.map.get(key) {
            Some(v) => Ok(v.clone()),
            None => Err(s.generation),
        }
    }

    /// The generation of `key`'s shard now.
    pub fn generation(&self, key: &[u8]) -> u64 {
        self.shard(key).lock().generation
    }

    /// Caches `raw` for `key`, read from the engine after [`MetaCache::get`] returned
    /// `generation`, unless the shard was invalidated since.
    pub fn fill(&self, key: &[u8], raw: &[u8], generation: u64) {
        if raw.len() > MAX_ENTRY {
            return;
        }
        let mut s = self.shard(key).lock();
        if s.generation != generation {
            return;
        }
        if s.map.len() >= SHARD_CAP {
            s.map.clear();
        }
        s.map.insert(key.to_vec(), raw.to_vec());
    }

    /// Forgets the keys this thread noted (call after the batch that wrote them).
    pub fn invalidate_noted(&self) {
        let keys = NOTED.with(|n| std::mem::take(&mut *n.borrow_mut()));
        for k in &keys {
            let mut s = self.shard(k).lock();
            s.generation += 1;
            s.map.remove(k.as_slice());
        }
        // Keep the thread's buffer for the next batch.
        NOTED.with(|n| {
            let mut n = n.borrow_mut();
            if n.capacity() == 0 {
                let mut keys = keys;
                keys.clear();
                *n = keys;
            }
        });
    }

    /// Forgets everything (FLUSHALL).
    pub fn clear(&self) {
        for s in &self.shards {
            let mut s = s.lock();
            s.generation += 1;
            s.map.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_only_without_an_invalidation_in_between() {
        let c = MetaCache::default();
        let g = c.get(b"k").unwrap_err();
        c.fill(b"k", b"v1", g);
        assert_eq!(c.get(b"k").unwrap(), b"v1");
        // A reader that read before a write landed must not cache what it read.
        let g = c.generation(b"k2");
        note_write(b"k2");
        c.invalidate_noted();
        c.fill(b"k2", b"old", g);
        assert!(c.get(b"k2").is_err());
        // A write removes the cached entry.
        note_write(b"k");
        c.invalidate_noted();
        assert!(c.get(b"k").is_err());
        // Large entries are not kept; clear forgets all.
        let g = c.generation(b"big");
        c.fill(b"big", &[0; MAX_ENTRY + 1], g);
        assert!(c.get(b"big").is_err());
        let g = c.generation(b"a");
        c.fill(b"a", b"x", g);
        c.clear();
        assert!(c.get(b"a").is_err());
    }
}
