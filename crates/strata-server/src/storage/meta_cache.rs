//! A cache of metadata entries (raw bytes, as stored), so that reads of hot keys skip the
//! engine's point lookup (a memtable seek plus table probes) for the metadata family. A
//! compact hash lives whole in its metadata entry, so for it this is a row cache.
//!
//! Contract (what keeps it from serving a stale entry):
//! - Every write of a metadata entry (put or delete) names its key with [`note_write`] while
//!   the batch is built, and the writer calls [`MetaCache::invalidate_noted`] *after* the batch
//!   is written (`Store::write`); FLUSHALL calls [`MetaCache::clear`] after its deletions.
//! - A reader that misses notes its shard's generation before reading the engine
//!   ([`MetaCache::generation`]) and [`MetaCache::fill`]s only if no invalidation of that
//!   shard happened since. So a value read before a write landed is either dropped (the
//!   write's invalidation came first) or removed (it came after).
//! - Only entries of at most [`MAX_ENTRY`] bytes are kept (every sub-key hash/set/zset/list
//!   entry; strings and compact hashes up to that size); a shard that would pass
//!   [`SHARD_CAP`] entries or [`SHARD_BYTES`] bytes is emptied. A miss is always correct.

use parking_lot::Mutex;
use std::cell::RefCell;
use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, Hasher};

/// Largest raw entry kept.
pub const MAX_ENTRY: usize = 4096;
/// Entries per shard before it is emptied.
pub const SHARD_CAP: usize = 16 * 1024;
/// Bytes per shard (keys, entries and [`ENTRY_OVERHEAD`] each) before it is emptied: 2 MiB,
/// so at most 64 MiB in all.
pub const SHARD_BYTES: usize = 2 << 20;
/// What one cached entry is charged beyond its key and value bytes.
pub const ENTRY_OVERHEAD: usize = 64;
const SHARDS: usize = 32;

/// A map keyed by the key's hash, already computed: the hasher passes it through.
#[derive(Default)]
struct Prehashed(u64);

impl Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Only u64 keys are hashed here; fold anything else in anyway.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

#[derive(Default)]
struct Shard {
    /// hash of the key -> (key, raw entry). Two keys of one hash share a slot: the later
    /// fill replaces the earlier, and lookups compare the key.
    map: HashMap<u64, (Vec<u8>, Vec<u8>), BuildHasherDefault<Prehashed>>,
    /// Bytes charged for `map`'s entries.
    bytes: usize,
    /// Bumped by every invalidation of a key of this shard.
    generation: u64,
}

fn charge(key: &[u8], raw: &[u8]) -> usize {
    key.len() + raw.len() + ENTRY_OVERHEAD
}

/// The cache.
pub struct MetaCache {
    shards: Vec<Mutex<Shard>>,
    /// Random per process, so clients cannot aim keys at one shard or slot.
    seed: u64,
}

impl Default for MetaCache {
    fn default() -> Self {
        MetaCache {
            shards: (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect(),
            seed: RandomState::new().hash_one(0x5eed_u64),
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
    /// `key`'s hash and shard.
    fn slot(&self, key: &[u8]) -> (u64, &Mutex<Shard>) {
        let h = xxhash_rust::xxh3::xxh3_64_with_seed(key, self.seed);
        // The high bits pick the shard; the map uses all of them.
        (h, &self.shards[(h >> 58) as usize % SHARDS])
    }

    /// The cached raw entry of `key`, or the shard generation to pass to [`MetaCache::fill`].
    pub fn get(&self, key: &[u8]) -> Result<Vec<u8>, u64> {
        let (h, shard) = self.slot(key);
        let s = shard.lock();
        match s.map.get(&h) {
            Some((k, v)) if k == key => Ok(v.clone()),
            _ => Err(s.generation),
        }
    }

    /// The generation of `key`'s shard now.
    pub fn generation(&self, key: &[u8]) -> u64 {
        self.slot(key).1.lock().generation
    }

    /// Caches `raw` for `key`, read from the engine after [`MetaCache::get`] returned
    /// `generation`, unless the shard was invalidated since.
    pub fn fill(&self, key: &[u8], raw: Vec<u8>, generation: u64) {
        if raw.len() > MAX_ENTRY {
            return;
        }
        let (h, shard) = self.slot(key);
        let mut s = shard.lock();
        if s.generation != generation {
            return;
        }
        let cost = charge(key, &raw);
        if s.map.len() >= SHARD_CAP || s.bytes + cost > SHARD_BYTES {
            s.map.clear();
            s.bytes = 0;
        }
        if let Some((k, old)) = s.map.insert(h, (key.to_vec(), raw)) {
            s.bytes -= charge(&k, &old);
        }
        s.bytes += cost;
    }

    /// Forgets the keys this thread noted (call after the batch that wrote them).
    pub fn invalidate_noted(&self) {
        let keys = NOTED.with(|n| std::mem::take(&mut *n.borrow_mut()));
        for k in &keys {
            let (h, shard) = self.slot(k);
            let mut s = shard.lock();
            s.generation += 1;
            if s.map.get(&h).is_some_and(|(ck, _)| ck == k) {
                if let Some((ck, old)) = s.map.remove(&h) {
                    s.bytes -= charge(&ck, &old);
                }
            }
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
            s.bytes = 0;
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
        c.fill(b"k", b"v1".to_vec(), g);
        assert_eq!(c.get(b"k").unwrap(), b"v1");
        // A reader that read before a write landed must not cache what it read.
        let g = c.generation(b"k2");
        note_write(b"k2");
        c.invalidate_noted();
        c.fill(b"k2", b"old".to_vec(), g);
        assert!(c.get(b"k2").is_err());
        // A write removes the cached entry.
        note_write(b"k");
        c.invalidate_noted();
        assert!(c.get(b"k").is_err());
        // Large entries are not kept; clear forgets all.
        let g = c.generation(b"big");
        c.fill(b"big", vec![0; MAX_ENTRY + 1], g);
        assert!(c.get(b"big").is_err());
        let g = c.generation(b"a");
        c.fill(b"a", b"x".to_vec(), g);
        c.clear();
        assert!(c.get(b"a").is_err());
    }

    #[test]
    fn a_shard_stays_within_its_byte_budget() {
        let c = MetaCache::default();
        let big = vec![7u8; MAX_ENTRY];
        // Enough entries of the largest size to overflow every shard many times over.
        let n = SHARDS * SHARD_BYTES / MAX_ENTRY * 3;
        for i in 0..n {
            let k = i.to_le_bytes();
            let g = c.generation(&k);
            c.fill(&k, big.clone(), g);
            assert_eq!(c.get(&k).unwrap(), big);
        }
        let mut cached = 0;
        for s in &c.shards {
            let s = s.lock();
            let want: usize = s.map.values().map(|(k, v)| charge(k, v)).sum();
            assert_eq!(s.bytes, want);
            assert!(s.bytes <= SHARD_BYTES);
            cached += s.map.len();
        }
        assert!(cached > 0 && cached < n);
        // Invalidation and refills keep the count exact.
        for i in 0..n {
            let k = i.to_le_bytes();
            if i % 2 == 0 {
                note_write(&k);
            } else {
                let g = c.generation(&k);
                c.fill(&k, b"small".to_vec(), g);
            }
        }
        c.invalidate_noted();
        for s in &c.shards {
            let s = s.lock();
            assert_eq!(s.bytes, s.map.values().map(|(k, v)| charge(k, v)).sum::<usize>());
        }
    }
}
