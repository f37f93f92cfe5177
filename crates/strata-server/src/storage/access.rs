//! When each key was last used: OBJECT IDLETIME's answer (Redis's LRU clock), kept in
//! memory only, as Redis keeps it.
//!
//! A use is a command's lookup or write of the key, except for the commands Redis lets look
//! without touching (TTL, TYPE, EXISTS, OBJECT...: [`untouched`]). Where the stamp of a use
//! lives:
//! - A key whose metadata record is in the metadata cache keeps it in its cache entry,
//!   written on a hit while the shard's lock is held (`meta_cache`): the read path pays no
//!   extra memory access.
//! - Every other key (a miss, a write, a record too large to cache, an entry the cache
//!   drops) stamps this table: 2^20 second-stamps (4 MiB), two slots per key picked by two
//!   hashes of (key space, key), written with relaxed stores, no lock. A slot holds the
//!   latest use of the keys that share it, never older than the key's own; the key's answer
//!   is the older of its two slots (a count-min sketch of last uses). An entry the cache
//!   drops hands its stamp here, and an entry the cache takes starts from here.
//!
//! A key with no stamp is idle since the table's start, as a key loaded from disk is in
//! Redis, whose clock is approximate too. Stamps are seconds from a coarse clock
//! ([`AccessTimes::tick`], every 100 ms from the server's tasks). RESTORE ... IDLETIME
//! stamps a key as long ago as it says.

use std::cell::Cell;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

/// Slots in the table (two per key).
const SLOTS: usize = 1 << 20;
/// The stamp of the table's start: stamps below it are RESTORE's idle times, 0 is "no use".
const EPOCH: u32 = 1 << 30;

thread_local! {
    static UNTOUCHED: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with this thread's lookups not counted as uses (Redis's `LOOKUP_NOTOUCH`).
pub fn untouched<T>(f: impl FnOnce() -> T) -> T {
    let before = UNTOUCHED.with(|u| u.replace(true));
    let out = f();
    UNTOUCHED.with(|u| u.set(before));
    out
}

/// Whether this thread's lookups count as uses now (not inside [`untouched`]).
pub fn counted() -> bool {
    !UNTOUCHED.with(Cell::get)
}

/// The last uses of keys not in the metadata cache, and the coarse clock.
pub struct AccessTimes {
    start: Instant,
    /// The stamp of now, as of the last [`AccessTimes::tick`].
    clock: AtomicU32,
    slots: Box<[AtomicU32]>,
}

impl Default for AccessTimes {
    fn default() -> Self {
        AccessTimes {
            start: Instant::now(),
            clock: AtomicU32::new(EPOCH),
            slots: (0..SLOTS).map(|_| AtomicU32::new(0)).collect(),
        }
    }
}

impl AccessTimes {
    /// The two slots of `key` of key space `set`.
    fn slots(set: u32, key: &[u8]) -> [usize; 2] {
        let h = xxhash_rust::xxh3::xxh3_64_with_seed(key, u64::from(set));
        [(h as usize) % SLOTS, ((h >> 32) as usize) % SLOTS]
    }

    /// Moves the coarse clock to now and returns it: [`EPOCH`] plus the seconds since the
    /// start.
    pub fn tick(&self) -> u32 {
        let secs = u32::try_from(self.start.elapsed().as_secs()).unwrap_or(u32::MAX);
        let now = EPOCH.saturating_add(secs);
        self.clock.fetch_max(now, Ordering::Relaxed);
        now
    }

    /// The stamp of now, as of the last tick.
    pub fn now(&self) -> u32 {
        self.clock.load(Ordering::Relaxed)
    }

    /// Stamps `key` of key space `set` with `at` (a use then).
    pub fn stamp(&self, set: u32, key: &[u8], at: u32) {
        for i in Self::slots(set, key) {
            self.slots[i].store(at, Ordering::Relaxed);
        }
    }

    /// Records a use of `key` now, unless this thread's lookups are [`untouched`].
    pub fn touch(&self, set: u32, key: &[u8]) {
        if counted() {
            self.stamp(set, key, self.now());
        }
    }

    /// The table's stamp of `key` (its start's when it holds none).
    pub fn stamp_of(&self, set: u32, key: &[u8]) -> u32 {
        let at = Self::slots(set, key)
            .iter()
            .map(|&i| self.slots[i].load(Ordering::Relaxed))
            .min()
            .unwrap_or(0);
        if at == 0 {
            EPOCH
        } else {
            at
        }
    }

    /// The stamp of a use `secs` seconds ago (RESTORE ... IDLETIME).
    pub fn ago(&self, secs: u64) -> u32 {
        let secs = u32::try_from(secs).unwrap_or(u32::MAX);
        self.tick().saturating_sub(secs).max(1)
    }

    /// Seconds from stamp `at` to now.
    pub fn idle_since(&self, at: u32) -> u64 {
        u64::from(self.tick().saturating_sub(at))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_are_kept_per_key_space_and_untouched_lookups_are_not_uses() {
        let mut t = AccessTimes::default();
        t.start -= std::time::Duration::from_secs(100);
        assert_eq!(t.idle_since(t.stamp_of(0, b"k")), 100, "never used: idle since the start");
        t.touch(0, b"k");
        assert_eq!(t.idle_since(t.stamp_of(0, b"k")), 0);
        assert_eq!(t.idle_since(t.stamp_of(1, b"k")), 100, "another key space's key");
        untouched(|| t.touch(1, b"k"));
        assert_eq!(t.idle_since(t.stamp_of(1, b"k")), 100);
        t.stamp(1, b"k", t.ago(1000));
        assert_eq!(t.idle_since(t.stamp_of(1, b"k")), 1000, "further back than the start");
    }

    #[test]
    fn a_key_sharing_one_slot_keeps_its_own_answer_through_the_other() {
        let mut t = AccessTimes::default();
        t.start -= std::time::Duration::from_secs(50);
        t.stamp(0, b"old", t.ago(40));
        t.tick();
        // Other keys' uses overwrite some slots; unless both of "old"'s are hit, it keeps 40.
        for i in 0..1000u32 {
            t.touch(0, &i.to_le_bytes());
        }
        let [a, b] = AccessTimes::slots(0, b"old");
        let hit =
            |s: usize| (0..1000u32).any(|i| AccessTimes::slots(0, &i.to_le_bytes()).contains(&s));
        if !(hit(a) && hit(b)) {
            assert_eq!(t.idle_since(t.stamp_of(0, b"old")), 40);
        }
    }
}
