//! Keys with an expiry, by due time: where active expiry finds the keys to delete without
//! walking every key (Redis keeps the keys with an expiry in a table of their own; here
//! they sit among all the others in the metadata family).
//!
//! A hint held in memory, never the truth: an entry is only a position (a family set and a
//! stored metadata key) and a due time. Before anything is deleted the key's record is read
//! again and checked (`types::keyspace::delete_expired`), so an entry left behind by a key
//! written again, persisted or deleted since costs one read when it comes due. An entry may
//! also be missing: the index is full, the key was written before this process started, or
//! (on a cluster node) a slot move brought it in. The walk over every key
//! (`types::expiry::expire_slice`) still goes on and notes what it passes, so a missing key
//! is found within one pass, as before the index. On a cluster node every replica's applied
//! entries feed the index too (`cluster::apply`).
//!
//! Where the index knows it misses keys, it counts a gap ([`DueIndex::gaps`]): a new entry
//! refused (full), and what the application marks ([`DueIndex::mark_gap`]: keys arriving
//! in bulk, unnoted, as a snapshot installed or a slot move's data). The walk's pace follows
//! from the gaps and from what the walk itself finds missing (`server::tasks`, `WalkPace`).
//!
//! Entries are spread over [`STRIPES`] stripes by the key's hash, each a lock of its own, so
//! writers on different connection threads rarely meet. A key has at most one entry: noting
//! it again with another due time moves it.

use super::prehashed::PrehashedMap;
use parking_lot::Mutex;
use std::collections::BTreeSet;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;

/// Stripes of the index.
pub const STRIPES: usize = 16;

/// Entries the index holds at most (over all stripes): about 80 bytes each beside the key.
/// Past it, a new entry is refused and the walk finds its key.
pub const CAPACITY: usize = 1 << 20;

/// Reads a metadata record's expiry (ms since the epoch; 0 or `None`: none). The types layer
/// knows the record's format and installs it ([`DueIndex::read_expiry_with`]).
pub type ExpiryOf = fn(&[u8]) -> Option<u64>;

/// The stripe of a hash: from bits the map's buckets do not use first.
fn stripe_of(h: u64) -> usize {
    (h >> 40) as usize % STRIPES
}

/// An entry: its key's family set and stored metadata key, and when it is due.
struct Entry {
    set: u32,
    stored: Box<[u8]>,
    due: u64,
}

/// One stripe: its entries by (due time, hash), and each entry by its hash. A hash names one
/// entry: a key whose hash another key's entry holds (64 bits, seeded per process) takes
/// that entry over, and the other key is left to the walk.
#[derive(Default)]
struct Stripe {
    by_time: BTreeSet<(u64, u64)>,
    by_hash: PrehashedMap<Entry>,
}

/// The index of one engine, over every family set.
pub struct DueIndex {
    stripes: Box<[Mutex<Stripe>]>,
    /// The hash's seed, drawn per index: which keys share a hash or a stripe differs from
    /// one process to the next.
    seed: u64,
    len: AtomicUsize,
    /// Where the next [`DueIndex::take_due`] starts.
    next_stripe: AtomicUsize,
    expiry_of: OnceLock<ExpiryOf>,
    /// Gaps counted ([`DueIndex::gaps`]).
    gaps: AtomicU64,
}

impl Default for DueIndex {
    fn default() -> Self {
        DueIndex {
            stripes: (0..STRIPES).map(|_| Mutex::new(Stripe::default())).collect(),
            seed: std::collections::hash_map::RandomState::new().hash_one(0xd0e_u64),
            len: AtomicUsize::new(0),
            next_stripe: AtomicUsize::new(0),
            expiry_of: OnceLock::new(),
            gaps: AtomicU64::new(0),
        }
    }
}

impl DueIndex {
    /// Installs the reader of a record's expiry; until then [`DueIndex::note_record`] notes
    /// nothing (a store opened without the types layer's rules).
    pub fn read_expiry_with(&self, f: ExpiryOf) {
        let _ = self.expiry_of.set(f);
    }

    /// Notes the metadata record `raw` written at `stored` in family set `set`, if it has an
    /// expiry. A record without one notes nothing (an entry the key had stays, and is dropped
    /// when it comes due and the key is found live).
    pub fn note_record(&self, set: u32, stored: &[u8], raw: &[u8]) {
        let Some(expiry_of) = self.expiry_of.get() else { return };
        match expiry_of(raw) {
            Some(due) if due != 0 => {
                self.note(set, stored, due);
            }
            _ => {}
        }
    }

    /// Notes that the key at `stored` of family set `set` expires at `due` (ms since the
    /// epoch), replacing the entry it had. Returns whether the index lacked this entry
    /// before: the key had none, or one with another due time, or the index is full (then
    /// the entry is refused, and counted as a gap).
    pub fn note(&self, set: u32, stored: &[u8], due: u64) -> bool {
        let h = self.hash(set, stored);
        let mut s = self.stripes[stripe_of(h)].lock();
        let s = &mut *s;
        match s.by_hash.get_mut(&h) {
            Some(e) if e.due == due && e.set == set && *e.stored == *stored => return false,
            Some(e) => {
                s.by_time.remove(&(e.due, h));
                s.by_time.insert((due, h));
                if e.set != set || *e.stored != *stored {
                    (e.set, e.stored) = (set, stored.into());
                }
                e.due = due;
            }
            None => {
                if self.len.load(Ordering::Relaxed) >= CAPACITY {
                    self.mark_gap();
                    return true;
                }
                s.by_time.insert((due, h));
                s.by_hash.insert(h, Entry { set, stored: stored.into(), due });
                self.len.fetch_add(1, Ordering::Relaxed);
            }
        }
        true
    }

    /// Counts a gap: keys with an expiry may have arrived without being noted (a snapshot
    /// installed, a slot's data ingested), so the walk must look again at its full pace.
    pub fn mark_gap(&self) {
        self.gaps.fetch_add(1, Ordering::Relaxed);
    }

    /// Gaps counted since the index was made: refused entries and [`DueIndex::mark_gap`]s.
    pub fn gaps(&self) -> u64 {
        self.gaps.load(Ordering::Relaxed)
    }

    /// Drops the entry of the key at `stored` of family set `set`, if it has one (the walk
    /// deleted it); returns whether it had one.
    pub fn forget(&self, set: u32, stored: &[u8]) -> bool {
        let h = self.hash(set, stored);
        let mut s = self.stripes[stripe_of(h)].lock();
        let Some(due) =
            s.by_hash.get(&h).filter(|e| e.set == set && *e.stored == *stored).map(|e| e.due)
        else {
            return false;
        };
        s.by_hash.remove(&h);
        s.by_time.remove(&(due, h));
        self.len.fetch_sub(1, Ordering::Relaxed);
        true
    }

    /// Takes out up to `max` entries due at `now` or before, each as its family set and
    /// stored metadata key; the earliest of each stripe first, from a stripe one further on
    /// each call (so that when more are due than taken, no stripe waits behind the others).
    pub fn take_due(&self, now: u64, max: usize) -> Vec<(u32, Vec<u8>)> {
        let mut out = Vec::new();
        let first = self.next_stripe.fetch_add(1, Ordering::Relaxed);
        for i in 0..STRIPES {
            if out.len() >= max {
                break;
            }
            let mut s = self.stripes[(first + i) % STRIPES].lock();
            while out.len() < max {
                match s.by_time.first() {
                    Some((due, _)) if *due <= now => {}
                    _ => break,
                }
                let (_, h) = s.by_time.pop_first().expect("looked at");
                let e = s.by_hash.remove(&h).expect("every timed entry is mapped");
                self.len.fetch_sub(1, Ordering::Relaxed);
                out.push((e.set, e.stored.into_vec()));
            }
        }
        out
    }

    /// Drops every entry of family set `set` (its keys were all deleted: FLUSHDB).
    pub fn forget_set(&self, set: u32) {
        self.forget_where(|e| e.set == set);
    }

    /// Drops every entry (a replica's own keys, when it starts or stops following a master).
    pub fn clear(&self) {
        self.forget_where(|_| true);
    }

    /// Drops the entries `gone` picks.
    fn forget_where(&self, gone: impl Fn(&Entry) -> bool) {
        for stripe in &self.stripes {
            let mut s = stripe.lock();
            let s = &mut *s;
            let before = s.by_hash.len();
            let by_time = &mut s.by_time;
            s.by_hash.retain(|h, e| {
                let keep = !gone(e);
                if !keep {
                    by_time.remove(&(e.due, *h));
                }
                keep
            });
            self.len.fetch_sub(before - s.by_hash.len(), Ordering::Relaxed);
        }
    }

    fn hash(&self, set: u32, stored: &[u8]) -> u64 {
        xxhash_rust::xxh3::xxh3_64_with_seed(stored, self.seed ^ u64::from(set))
    }

    /// Entries held.
    pub fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }

    /// Whether the index holds no entry.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expiry_of(raw: &[u8]) -> Option<u64> {
        Some(u64::from_le_bytes(raw.try_into().ok()?))
    }

    #[test]
    fn due_entries_come_out_once_and_in_time_order_per_stripe() {
        let ix = DueIndex::default();
        ix.read_expiry_with(expiry_of);
        for i in 0..100u64 {
            ix.note_record(0, format!("k{i:03}").as_bytes(), &(1000 + i).to_le_bytes());
        }
        ix.note_record(0, b"none", &0u64.to_le_bytes());
        ix.note_record(0, b"short", b"x");
        assert_eq!(ix.len(), 100);
        assert!(ix.take_due(999, 1000).is_empty());
        let mut due = ix.take_due(1049, 1000);
        assert_eq!(due.len(), 50);
        due.sort();
        let want: Vec<_> = (0..50).map(|i| (0, format!("k{i:03}").into_bytes())).collect();
        assert_eq!(due, want);
        assert_eq!(ix.len(), 50);
        // At most `max` a call; none twice.
        assert_eq!(ix.take_due(u64::MAX, 30).len(), 30);
        assert_eq!(ix.take_due(u64::MAX, 30).len(), 20);
        assert!(ix.is_empty() && ix.take_due(u64::MAX, 30).is_empty());
    }

    #[test]
    fn a_key_noted_again_keeps_one_entry_at_its_latest_due_time() {
        let ix = DueIndex::default();
        ix.note(0, b"k", 500);
        ix.note(0, b"k", 500);
        ix.note(0, b"k", 2000);
        ix.note(1, b"k", 700); // another set's key of the same name
        assert_eq!(ix.len(), 2);
        ix.forget(1, b"other");
        assert_eq!(ix.len(), 2);
        assert_eq!(ix.take_due(1000, 10), vec![(1, b"k".to_vec())]);
        assert_eq!(ix.take_due(2000, 10), vec![(0, b"k".to_vec())]);
        assert!(ix.is_empty());
        ix.note(0, b"k", 500);
        ix.forget(0, b"k");
        assert!(ix.is_empty() && ix.take_due(u64::MAX, 10).is_empty());
    }

    #[test]
    fn without_a_reader_nothing_is_noted_forget_set_drops_one_set_and_clear_all() {
        let ix = DueIndex::default();
        ix.note_record(0, b"k", &5u64.to_le_bytes());
        assert!(ix.is_empty());
        for set in 0..3 {
            for i in 0..10u64 {
                ix.note(set, &i.to_be_bytes(), 100 + i);
            }
        }
        ix.forget_set(1);
        assert_eq!(ix.len(), 20);
        let mut sets: Vec<u32> = ix.take_due(u64::MAX, 100).into_iter().map(|(s, _)| s).collect();
        sets.sort_unstable();
        sets.dedup();
        assert_eq!(sets, vec![0, 2]);
        // `clear` drops every set's.
        for set in 0..3 {
            ix.note(set, b"k", 100);
        }
        ix.clear();
        assert!(ix.is_empty() && ix.take_due(u64::MAX, 10).is_empty());
    }

    #[test]
    fn each_take_starts_at_another_stripe() {
        let ix = DueIndex::default();
        for i in 0..2000u64 {
            ix.note(0, &i.to_be_bytes(), 10);
        }
        let firsts: BTreeSet<usize> = (0..STRIPES)
            .map(|_| {
                let (set, stored) = ix.take_due(10, 5).swap_remove(0);
                stripe_of(ix.hash(set, &stored))
            })
            .collect();
        assert_eq!(firsts.len(), STRIPES, "{firsts:?}");
    }

    #[test]
    fn a_full_index_refuses_new_keys_but_moves_known_ones() {
        let ix = DueIndex::default();
        ix.len.store(CAPACITY - 1, Ordering::Relaxed);
        assert!(ix.note(0, b"a", 10), "new");
        assert_eq!(ix.len(), CAPACITY);
        assert_eq!(ix.gaps(), 0);
        assert!(ix.note(0, b"b", 10), "refused: the index lacks it");
        assert_eq!(ix.len(), CAPACITY, "past capacity: refused");
        assert_eq!(ix.gaps(), 1, "a refusal is a gap");
        assert!(!ix.note(0, b"a", 10), "held as given");
        assert!(ix.note(0, b"a", 20), "known: moved, not refused");
        assert_eq!(ix.len(), CAPACITY);
        assert_eq!(ix.gaps(), 1);
        ix.mark_gap();
        assert_eq!(ix.gaps(), 2);
        assert_eq!(ix.take_due(15, 10), Vec::<(u32, Vec<u8>)>::new());
        assert_eq!(ix.take_due(20, 10), vec![(0, b"a".to_vec())]);
    }
}
