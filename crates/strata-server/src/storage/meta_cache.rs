//! A cache of metadata entries (raw bytes, as stored), so that reads of hot keys skip the
//! engine's point lookup (a memtable seek plus table probes) for the metadata family. A
//! compact hash lives whole in its metadata entry, so for it this is a row cache. An entry is
//! shared (`Arc`) with the readers it is handed to: a hit copies nothing, and the decoded
//! payload reads the cached bytes in place (`types::metadata::Payload`).
//!
//! Contract (what keeps it from serving a stale entry):
//! - Every write of a metadata entry (put or delete) names its key, and for a put the entry,
//!   with [`MetaCache::note_write`] while the batch is built (under the key's lock), and the
//!   writer calls [`MetaCache::invalidate_noted`] *after* the batch is written
//!   (`Store::write`); FLUSHALL calls [`MetaCache::clear`] after its deletions.
//! - Every invalidation bumps its shard's generation. A reader that misses notes the
//!   generation before reading the engine ([`MetaCache::get`]) and [`MetaCache::fill`]s only
//!   if no invalidation of that shard happened since. So a value read before a write landed
//!   is either dropped (the write's invalidation came first) or replaced (it came after).
//! - Write-through: a put whose batch was written replaces the cached entry with what it
//!   wrote, but only if its shard's generation is still the one noted with the put (no
//!   other invalidation, FLUSHALL's included, came in between: the writer holds the key's
//!   lock, so no other write of the key is in flight, and a FLUSHALL that deleted the entry
//!   bumped the generation). Otherwise, and after a failed write, the entry is removed. A
//!   command that fails after noting and before writing settles its notes as not written
//!   (`commands::dispatch`), so no note outlives its command.
//! - Field deltas: an entry also counts the merge operands the engine holds above the key's
//!   last whole record ([`MetaCache::deltas_behind`], for `Store::merge_meta`, which bounds
//!   that chain): 0 after a whole write, one more after each delta written through, unknown
//!   for an entry filled from a read. Every write of the key sets or removes its entry, so
//!   the count its writer reads under the key's lock is exact.
//! - Only entries of at most [`MAX_ENTRY`] bytes are kept (every sub-key hash/set/zset/list
//!   entry; strings and compact hashes up to that size); a larger record a write put leaves
//!   an entry without the record, for its count of deltas (a lookup misses it). Each shard
//!   holds a 32nd of the cache's byte budget ([`MetaCache::new`]); a fill that would pass it
//!   first drops a quarter of the shard's entries, chosen by the map's (keyed-hash) order, so
//!   about at random. A miss is always correct.
//!
//! Entries are keyed by the key space (the database's family set, `storage::databases`) and
//! the user key: one cache serves every database of the server.
//!
//! Sizing: the server gives it an eighth of the block cache ([`MetaCache::for_block_cache`]).
//! A hot key's entry is then answered here, and the blocks behind it stay in the block cache
//! for the keys that miss.

use super::access::{self, AccessTimes};
use super::prehashed::PrehashedMap;
use parking_lot::Mutex;
use std::cell::RefCell;
use std::collections::hash_map::Entry;
use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::Arc;

/// Largest raw entry kept.
pub const MAX_ENTRY: usize = 4096;
/// What one cached entry is charged beyond its key and value bytes.
pub const ENTRY_OVERHEAD: usize = 64;
/// The smallest and largest budget [`MetaCache::for_block_cache`] gives.
pub const MIN_BYTES: usize = 16 << 20;
/// See [`MIN_BYTES`].
pub const MAX_BYTES: usize = 1 << 30;
const SHARDS: usize = 32;

/// A cached entry.
struct Cached {
    /// Its key space (set).
    set: u32,
    /// Its user key.
    key: Vec<u8>,
    /// The raw metadata record, whole (what a read of the engine returns), shared with the
    /// readers it was handed to; `None` for a record written larger than [`MAX_ENTRY`],
    /// kept only for its count of deltas (a lookup misses it).
    raw: Option<Arc<Vec<u8>>>,
    /// The stamp of the key's last use (`access`).
    at: u32,
    /// How many merge operands (field deltas) the engine holds above the key's last whole
    /// record ([`MetaCache::deltas_behind`]); [`UNKNOWN_DELTAS`] for an entry read from the
    /// engine.
    deltas: u8,
}

/// [`Cached::deltas`] of an entry whose count of operands is not known.
pub const UNKNOWN_DELTAS: u8 = u8::MAX;

#[derive(Default)]
struct Shard {
    /// hash of (set, key) -> (set, key, raw entry). Two keys of one hash share a slot: the
    /// later fill replaces the earlier, and lookups compare the set and the key.
    map: PrehashedMap<Cached>,
    /// Bytes charged for `map`'s entries.
    bytes: usize,
    /// Lookups answered from `map`, and not.
    hits: u64,
    misses: u64,
    /// Bumped by every invalidation of a key of this shard.
    generation: u64,
}

impl Shard {
    /// Removes the entry at `h` if it is `key` of `set`.
    fn remove_if(&mut self, h: u64, set: u32, key: &[u8]) {
        if let Entry::Occupied(e) = self.map.entry(h) {
            if e.get().set == set && e.get().key == key {
                let old = e.remove();
                self.bytes -= charge(&old.key, old.raw.as_ref());
            }
        }
    }

    /// Caches `entry` (of hash `h`) within `budget` bytes, first dropping a quarter of the
    /// entries (all, if that is not enough) when it would not fit; the entries dropped hand
    /// their stamps to `access`. An entry larger than the whole budget (a long key) is not
    /// cached.
    fn insert(&mut self, h: u64, entry: Cached, budget: usize, access: &AccessTimes) {
        let cost = charge(&entry.key, entry.raw.as_ref());
        if cost > budget {
            return;
        }
        if self.bytes + cost > budget {
            let mut drop = self.map.len().div_ceil(4);
            let mut freed = 0;
            self.map.retain(|_, e| {
                if drop == 0 {
                    return true;
                }
                drop -= 1;
                freed += charge(&e.key, e.raw.as_ref());
                access.stamp(e.set, &e.key, e.at);
                false
            });
            self.bytes -= freed;
            if self.bytes + cost > budget {
                for e in self.map.values() {
                    access.stamp(e.set, &e.key, e.at);
                }
                self.map.clear();
                self.bytes = 0;
            }
        }
        if let Some(old) = self.map.insert(h, entry) {
            self.bytes -= charge(&old.key, old.raw.as_ref());
        }
        self.bytes += cost;
    }
}

fn charge(key: &[u8], raw: Option<&Arc<Vec<u8>>>) -> usize {
    key.len() + raw.map_or(0, |r| r.len()) + ENTRY_OVERHEAD
}

/// The cache.
pub struct MetaCache {
    shards: Vec<Mutex<Shard>>,
    /// The last uses of keys the cache does not hold, and the clock (`access`).
    pub access: AccessTimes,
    /// Bytes each shard may hold.
    shard_bytes: usize,
    /// Random per process, so clients cannot aim keys at one shard or slot.
    seed: u64,
}

impl Default for MetaCache {
    /// A cache of [`MIN_BYTES`].
    fn default() -> Self {
        MetaCache::new(MIN_BYTES)
    }
}

/// A write noted by this thread: the key (its set and user key) and its hash, what it put,
/// the merge operands the engine then holds above the key's last whole record, and its
/// shard's generation when noted.
struct Noted {
    set: u32,
    key: Vec<u8>,
    hash: u64,
    put: Put,
    deltas: u8,
    generation: u64,
}

/// What a noted write leaves of its key.
enum Put {
    /// This record.
    Record(Vec<u8>),
    /// A record larger than [`MAX_ENTRY`]: only its count of deltas is kept.
    TooLarge,
    /// No record (deleted), or one not to be cached.
    Nothing,
}

thread_local! {
    static NOTED: RefCell<Vec<Noted>> = const { RefCell::new(Vec::new()) };
}

impl MetaCache {
    /// A cache holding at most about `bytes` (keys, entries and [`ENTRY_OVERHEAD`] each).
    /// Memory is taken only as entries are cached.
    pub fn new(bytes: usize) -> MetaCache {
        MetaCache {
            access: AccessTimes::default(),
            shards: (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect(),
            shard_bytes: (bytes / SHARDS).max(MAX_ENTRY + ENTRY_OVERHEAD),
            seed: RandomState::new().hash_one(0x5eed_u64),
        }
    }

    /// The cache a store with a block cache of `block_cache_bytes` gets: an eighth of it,
    /// within [`MIN_BYTES`] and [`MAX_BYTES`].
    pub fn for_block_cache(block_cache_bytes: usize) -> MetaCache {
        MetaCache::new((block_cache_bytes / 8).clamp(MIN_BYTES, MAX_BYTES))
    }

    /// The hash and shard of `key` of key space `set`.
    fn slot(&self, set: u32, key: &[u8]) -> (u64, &Mutex<Shard>) {
        let seed = self.seed ^ u64::from(set).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let h = xxhash_rust::xxh3::xxh3_64_with_seed(key, seed);
        (h, self.shard_of(h))
    }

    /// The shard of a key of hash `h`: its high bits pick it; the map uses all of them.
    fn shard_of(&self, h: u64) -> &Mutex<Shard> {
        &self.shards[(h >> 58) as usize % SHARDS]
    }

    /// The cached raw entry of `key` in key space `set` (shared, not copied), or the shard
    /// generation to pass to [`MetaCache::fill`].
    pub fn get(&self, set: u32, key: &[u8]) -> Result<Arc<Vec<u8>>, u64> {
        let (h, shard) = self.slot(set, key);
        let mut s = shard.lock();
        match s.map.get_mut(&h) {
            Some(e) if e.set == set && e.key == key => {
                // A use, unless the command only looks (`access::untouched`).
                if access::counted() {
                    e.at = self.access.now();
                }
                if let Some(v) = e.raw.as_ref().map(Arc::clone) {
                    s.hits += 1;
                    return Ok(v);
                }
                s.misses += 1;
                Err(s.generation)
            }
            _ => {
                s.misses += 1;
                Err(s.generation)
            }
        }
    }

    /// Totals over the shards: (entries, bytes charged, hits, misses), for INFO.
    pub fn stats(&self) -> (usize, usize, u64, u64) {
        self.shards.iter().fold((0, 0, 0, 0), |(n, b, h, m), s| {
            let s = s.lock();
            (n + s.map.len(), b + s.bytes, h + s.hits, m + s.misses)
        })
    }

    /// The generation of the shard of `key` (of key space `set`) now.
    pub fn generation(&self, set: u32, key: &[u8]) -> u64 {
        self.slot(set, key).1.lock().generation
    }

    /// Records that this thread's batch being built writes the metadata of `key` in key
    /// space `set`: `raw`, or a deletion (`None`).
    pub fn note_write(&self, set: u32, key: &[u8], raw: Option<Vec<u8>>) {
        self.note(set, key, raw, 0);
    }

    /// Records that this thread's batch being built writes a merge operand of `key`'s
    /// metadata in key space `set`, whose result is `raw`, the `deltas`th operand above the
    /// key's last whole record.
    pub fn note_delta(&self, set: u32, key: &[u8], raw: Vec<u8>, deltas: u8) {
        self.note(set, key, Some(raw), deltas);
    }

    fn note(&self, set: u32, key: &[u8], raw: Option<Vec<u8>>, deltas: u8) {
        let (hash, shard) = self.slot(set, key);
        let generation = shard.lock().generation;
        let put = match raw {
            Some(r) if r.len() <= MAX_ENTRY => Put::Record(r),
            Some(_) => Put::TooLarge,
            None => Put::Nothing,
        };
        // A write is a use; the entry the write puts takes this stamp.
        self.access.touch(set, key);
        let noted = Noted { set, key: key.to_vec(), hash, put, deltas, generation };
        NOTED.with(|n| n.borrow_mut().push(noted));
    }

    /// How many merge operands the engine holds above the last whole record of `key` in key
    /// space `set`, when the cache holds the key's entry and knows ([`UNKNOWN_DELTAS`]: it
    /// holds the entry but does not know; `None`: no entry). Exact for a key whose writer
    /// holds its lock: every write of the key sets or removes its entry.
    pub fn deltas_behind(&self, set: u32, key: &[u8]) -> Option<u8> {
        let (h, shard) = self.slot(set, key);
        match shard.lock().map.get(&h) {
            Some(e) if e.set == set && e.key == key => Some(e.deltas),
            _ => None,
        }
    }

    /// Whether this thread has noted writes not yet settled (a batch is being built).
    pub fn noting(&self) -> bool {
        NOTED.with(|n| !n.borrow().is_empty())
    }

    /// Caches `raw` for `key` of key space `set`, read from the engine after
    /// [`MetaCache::get`] returned `generation`, unless the shard was invalidated since. A
    /// record larger than [`MAX_ENTRY`] is not cached (an entry kept for its count of deltas
    /// stays, still exact: no write of the key came in between).
    pub fn fill(&self, set: u32, key: &[u8], raw: impl Into<Arc<Vec<u8>>>, generation: u64) {
        let raw = raw.into();
        if raw.len() > MAX_ENTRY {
            return;
        }
        let (h, shard) = self.slot(set, key);
        let mut s = shard.lock();
        if s.generation != generation {
            return;
        }
        // The read that missed was a use, unless its command only looks.
        let at = if access::counted() { self.access.now() } else { self.access.stamp_of(set, key) };
        let entry = Cached { set, key: key.to_vec(), raw: Some(raw), at, deltas: UNKNOWN_DELTAS };
        s.insert(h, entry, self.shard_bytes, &self.access);
    }

    /// Seconds since the last use of `key` of key space `set` (OBJECT IDLETIME): from its
    /// cache entry, else from the table (`access`).
    pub fn idle_secs(&self, set: u32, key: &[u8]) -> u64 {
        let (h, shard) = self.slot(set, key);
        let cached = match shard.lock().map.get(&h) {
            Some(e) if e.set == set && e.key == key => Some(e.at),
            _ => None,
        };
        let at = cached.unwrap_or_else(|| self.access.stamp_of(set, key));
        self.access.idle_since(at)
    }

    /// Records that `key` of key space `set` has been idle `secs` seconds (RESTORE ...
    /// IDLETIME), in its cache entry and the table.
    pub fn set_idle(&self, set: u32, key: &[u8], secs: u64) {
        let at = self.access.ago(secs);
        self.access.stamp(set, key, at);
        let (h, shard) = self.slot(set, key);
        if let Some(e) = shard.lock().map.get_mut(&h) {
            if e.set == set && e.key == key {
                e.at = at;
            }
        }
    }

    /// Settles the writes this thread noted, after their batch: `written` says whether it
    /// was. A put is cached as written if its shard saw no invalidation since it was noted;
    /// every other noted key is removed.
    pub fn invalidate_noted(&self, written: bool) {
        let mut noted = NOTED.with(|n| std::mem::take(&mut *n.borrow_mut()));
        for w in noted.drain(..) {
            let h = w.hash;
            let mut s = self.shard_of(h).lock();
            let through = written && s.generation == w.generation;
            s.generation += 1;
            let raw = match w.put {
                Put::Record(raw) => Some(Arc::new(raw)),
                Put::TooLarge => None,
                Put::Nothing => {
                    s.remove_if(h, w.set, &w.key);
                    continue;
                }
            };
            if !through {
                s.remove_if(h, w.set, &w.key);
                continue;
            }
            // The write was a use: its record replaces the cached one in place when it fits
            // the shard's budget as it stands.
            let at = self.access.now();
            let new = charge(&w.key, raw.as_ref());
            let bytes = s.bytes;
            if let Some(e) = s.map.get_mut(&h).filter(|e| e.set == w.set && e.key == w.key) {
                let old = charge(&e.key, e.raw.as_ref());
                if bytes - old + new <= self.shard_bytes {
                    (e.raw, e.at, e.deltas) = (raw, at, w.deltas);
                    s.bytes = bytes - old + new;
                    continue;
                }
            }
            s.remove_if(h, w.set, &w.key);
            let entry = Cached { set: w.set, key: w.key, raw, at, deltas: w.deltas };
            s.insert(h, entry, self.shard_bytes, &self.access);
        }
        // The list's capacity stays with the thread for its next command.
        NOTED.with(|n| {
            let mut n = n.borrow_mut();
            if n.is_empty() {
                *n = noted;
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
        let g = c.get(0, b"k").unwrap_err();
        c.fill(0, b"k", b"v1".to_vec(), g);
        assert_eq!(*c.get(0, b"k").unwrap(), b"v1");
        assert_eq!(c.stats(), (1, charge(b"k", Some(&Arc::new(b"v1".to_vec()))), 1, 1));
        // A reader that read before a write landed must not cache what it read.
        let g = c.generation(0, b"k2");
        c.note_write(0, b"k2", None);
        c.invalidate_noted(true);
        c.fill(0, b"k2", b"old".to_vec(), g);
        assert!(c.get(0, b"k2").is_err());
        // A deletion removes the cached entry.
        c.note_write(0, b"k", None);
        c.invalidate_noted(true);
        assert!(c.get(0, b"k").is_err());
        // Large entries are not kept; clear forgets all.
        let g = c.generation(0, b"big");
        c.fill(0, b"big", vec![0; MAX_ENTRY + 1], g);
        assert!(c.get(0, b"big").is_err());
        let g = c.generation(0, b"a");
        c.fill(0, b"a", b"x".to_vec(), g);
        c.clear();
        assert!(c.get(0, b"a").is_err());
    }

    #[test]
    fn a_written_put_is_cached_unless_its_shard_was_invalidated_meanwhile() {
        let c = MetaCache::default();
        c.note_write(0, b"k", Some(b"v1".to_vec()));
        c.invalidate_noted(true);
        assert_eq!(*c.get(0, b"k").unwrap(), b"v1");
        // A failed write caches nothing and removes what was there.
        c.note_write(0, b"k", Some(b"v2".to_vec()));
        c.invalidate_noted(false);
        assert!(c.get(0, b"k").is_err());
        // A FLUSHALL (or any invalidation of the shard) between note and write: not cached.
        c.note_write(0, b"k", Some(b"v3".to_vec()));
        c.clear();
        c.invalidate_noted(true);
        assert!(c.get(0, b"k").is_err());
        // A key noted twice in one batch (MSET k a k b, the engine keeps b): the first put's
        // write-through bumps the generation, so the second removes it; nothing is cached.
        c.note_write(0, b"k", Some(b"a".to_vec()));
        c.note_write(0, b"k", Some(b"b".to_vec()));
        c.invalidate_noted(true);
        assert!(c.get(0, b"k").is_err());
        // A stale fill racing the write loses: its miss came before the write's invalidation.
        let g = c.get(0, b"x").unwrap_err();
        c.note_write(0, b"x", Some(b"new".to_vec()));
        c.invalidate_noted(true);
        c.fill(0, b"x", b"old".to_vec(), g);
        assert_eq!(*c.get(0, b"x").unwrap(), b"new");
        // Entries past MAX_ENTRY are not written through.
        c.note_write(0, b"big", Some(vec![1; MAX_ENTRY + 1]));
        c.invalidate_noted(true);
        assert!(c.get(0, b"big").is_err());
    }

    #[test]
    fn a_write_through_replaces_the_cached_record_and_its_charge() {
        let c = MetaCache::default();
        c.note_write(0, b"k", Some(b"v1".to_vec()));
        c.invalidate_noted(true);
        let (_, one, _, _) = c.stats();
        assert_eq!(one, charge(b"k", Some(&Arc::new(b"v1".to_vec()))));
        c.note_write(0, b"k", Some(b"a longer record".to_vec()));
        c.invalidate_noted(true);
        assert_eq!(*c.get(0, b"k").unwrap(), b"a longer record");
        let (n, bytes, _, _) = c.stats();
        assert_eq!((n, bytes), (1, charge(b"k", Some(&Arc::new(b"a longer record".to_vec())))));
        // Too large to keep: the entry stays for its count of deltas only.
        c.note_write(0, b"k", Some(vec![1; MAX_ENTRY + 1]));
        c.invalidate_noted(true);
        assert!(c.get(0, b"k").is_err());
        assert_eq!(c.stats().1, charge(b"k", None));
    }

    #[test]
    fn a_shard_stays_within_its_byte_budget() {
        let c = MetaCache::default();
        let big = vec![7u8; MAX_ENTRY];
        // Enough entries of the largest size to overflow every shard many times over.
        let n = SHARDS * c.shard_bytes / MAX_ENTRY * 3;
        for i in 0..n {
            let k = i.to_le_bytes();
            let g = c.generation(0, &k);
            c.fill(0, &k, big.clone(), g);
            assert_eq!(*c.get(0, &k).unwrap(), big);
        }
        let mut cached = 0;
        for s in &c.shards {
            let s = s.lock();
            let want: usize = s.map.values().map(|e| charge(&e.key, e.raw.as_ref())).sum();
            assert_eq!(s.bytes, want);
            assert!(s.bytes <= c.shard_bytes);
            cached += s.map.len();
        }
        assert!(cached > 0 && cached < n);
        // A full shard drops a quarter of its entries, not all of them.
        for s in &c.shards {
            assert!(s.lock().bytes > c.shard_bytes / 2);
        }
        // An entry larger than a whole shard's budget (its key is) is not cached.
        let long = vec![b'k'; c.shard_bytes];
        let g = c.generation(0, &long);
        c.fill(0, &long, b"v".to_vec(), g);
        assert!(c.get(0, &long).is_err());
        c.note_write(0, &long, Some(b"v".to_vec()));
        c.invalidate_noted(true);
        assert!(c.get(0, &long).is_err());
        // Invalidation and refills keep the count exact.
        for i in 0..n {
            let k = i.to_le_bytes();
            if i % 2 == 0 {
                c.note_write(0, &k, None);
            } else {
                let g = c.generation(0, &k);
                c.fill(0, &k, b"small".to_vec(), g);
            }
        }
        c.invalidate_noted(true);
        for s in &c.shards {
            let s = s.lock();
            assert_eq!(
                s.bytes,
                s.map.values().map(|e| charge(&e.key, e.raw.as_ref())).sum::<usize>()
            );
        }
    }

    #[test]
    fn entries_count_the_deltas_behind_them() {
        let c = MetaCache::default();
        assert_eq!(c.deltas_behind(0, b"k"), None);
        c.note_write(0, b"k", Some(b"v1".to_vec()));
        c.invalidate_noted(true);
        assert_eq!(c.deltas_behind(0, b"k"), Some(0));
        c.note_delta(0, b"k", b"v2".to_vec(), 1);
        c.invalidate_noted(true);
        assert_eq!(
            (c.get(0, b"k").unwrap().to_vec(), c.deltas_behind(0, b"k")),
            (b"v2".to_vec(), Some(1))
        );
        // A failed delta removes the entry: the next write is whole.
        c.note_delta(0, b"k", b"v3".to_vec(), 2);
        c.invalidate_noted(false);
        assert_eq!(c.deltas_behind(0, b"k"), None);
        // An entry read from the engine does not know its chain.
        let g = c.get(0, b"k").unwrap_err();
        c.fill(0, b"k", b"v2".to_vec(), g);
        assert_eq!(c.deltas_behind(0, b"k"), Some(UNKNOWN_DELTAS));
        // A whole write starts over.
        c.note_write(0, b"k", Some(b"v4".to_vec()));
        c.invalidate_noted(true);
        assert_eq!(c.deltas_behind(0, b"k"), Some(0));
        assert_eq!(c.deltas_behind(1, b"k"), None);
    }

    #[test]
    fn a_record_too_large_to_keep_keeps_its_count_of_deltas() {
        let c = MetaCache::default();
        let big = vec![5u8; MAX_ENTRY + 1];
        c.note_write(0, b"k", Some(big.clone()));
        c.invalidate_noted(true);
        assert_eq!(c.deltas_behind(0, b"k"), Some(0));
        // A lookup misses it; a fill of the record read then leaves the count as it is.
        let g = c.get(0, b"k").unwrap_err();
        c.fill(0, b"k", big.clone(), g);
        assert_eq!(c.deltas_behind(0, b"k"), Some(0));
        c.note_delta(0, b"k", big.clone(), 1);
        c.invalidate_noted(true);
        assert_eq!(c.deltas_behind(0, b"k"), Some(1));
        assert!(c.get(0, b"k").is_err());
        // It is charged its key alone, and a deletion removes it.
        assert_eq!(c.stats().1, charge(b"k", None));
        c.note_write(0, b"k", None);
        c.invalidate_noted(true);
        assert_eq!((c.deltas_behind(0, b"k"), c.stats().0), (None, 0));
    }

    #[test]
    fn one_key_in_two_key_spaces_is_two_entries() {
        let c = MetaCache::default();
        // Two batches: a batch's second write-through into a shard its first just
        // invalidated is dropped (the contract), and the two may share a shard.
        c.note_write(1, b"k", Some(b"in one".to_vec()));
        c.invalidate_noted(true);
        c.note_write(2, b"k", Some(b"in two".to_vec()));
        c.invalidate_noted(true);
        assert_eq!(*c.get(1, b"k").unwrap(), b"in one");
        assert_eq!(*c.get(2, b"k").unwrap(), b"in two");
        assert!(c.get(0, b"k").is_err());
        c.note_write(1, b"k", None);
        c.invalidate_noted(true);
        assert!(c.get(1, b"k").is_err());
        assert_eq!(*c.get(2, b"k").unwrap(), b"in two");
    }
}
