//! [`MemBloom`]: a whole-key Bloom filter over a memtable's user keys, so that a point lookup
//! can skip a memtable that cannot hold its key.
//!
//! Searching the skiplist for an absent key costs a few dozen dependent loads that miss the
//! CPU caches once the memtable outgrows them (a 32 MiB memtable: about 10 us per lookup on a
//! virtual machine, where each miss also walks the page tables); under a write load most
//! lookups are of keys the memtable does not hold. One filter probe is one cache line.
//!
//! ## Layout
//!
//! ```text
//!   word 0        word 1              word n-1
//!   [ AtomicU64 ] [ AtomicU64 ] ...   [ AtomicU64 ]
//! ```
//!
//! A key's 64-bit hash picks one word (multiply-shift of its low half) and [`PROBES`] bits in
//! it (6 bits each, from the high half): a write is one atomic OR on one word, skipped when
//! the bits are already set, and a probe one load. A writer locates its key's word first
//! ([`MemBloom::slot`], which also asks for the word's cache line) and sets the bits after
//! its skiplist insert ([`MemBloom::add`]): in a filter larger than the CPU's caches the line
//! then arrives while the insert runs, instead of the atomic OR waiting for it (and, being a
//! full barrier on x86, holding up the insert's loads behind it). Confining a key to a word
//! costs accuracy against a classic filter of the same size (about 2% false positives at 10
//! bits per key, 0.3% at 20, 0.05% at 40); a false positive only costs the skiplist search
//! the filter would have saved. Not persisted: a memtable's filter lives and dies with it.
//!
//! ## Concurrency contract
//!
//! Bits only go from 0 to 1 (`fetch_or`). A writer sets a key's bits before its memtable
//! call returns (`MemTable::add_batch_unlinked`), and the DB publishes the entry's sequence
//! number after that (`Release`); a reader takes its sequence number from that publication
//! (`Acquire`) before probing, so every bit of every entry it may see is visible to it: no
//! false negatives. An entry already in the skiplist but not yet published is invisible to
//! every reader whatever its bits (its sequence number is above theirs). A reader may see
//! bits of entries it cannot see yet, which is only a false positive.

use std::alloc::{alloc_zeroed, handle_alloc_error, Layout};
use std::sync::atomic::{AtomicU64, Ordering};

use xxhash_rust::xxh3::xxh3_64;

/// Bits set and tested per key.
const PROBES: u32 = 6;

/// Where a key's bits go: a word of the filter and the bits in it ([`MemBloom::slot`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Slot {
    word: usize,
    mask: u64,
}

/// The filter (module doc).
pub(crate) struct MemBloom {
    words: Box<[AtomicU64]>,
}

impl MemBloom {
    /// A filter of about `bytes` bytes (at least one word).
    pub fn with_bytes(bytes: usize) -> MemBloom {
        let n = (bytes / 8).max(1);
        // A zeroed allocation: for a filter of a large memtable the allocator can hand out
        // pages the kernel zeroes as they are first touched, and a sparse filter (a memtable
        // that takes few keys before it is switched or the DB closes) touches few of them.
        let Ok(layout) = Layout::array::<AtomicU64>(n) else {
            return MemBloom { words: (0..n).map(|_| AtomicU64::new(0)).collect() };
        };
        #[allow(clippy::cast_ptr_alignment)] // `layout` has AtomicU64's alignment.
        // SAFETY: `layout` has a non-zero size (n >= 1). The memory is all zero bits, a valid
        // AtomicU64 (which has u64's in-memory representation), and comes from the global
        // allocator with the layout of `[AtomicU64; n]`, as `Box<[AtomicU64]>` frees it.
        let words = unsafe {
            let p = alloc_zeroed(layout).cast::<AtomicU64>();
            if p.is_null() {
                handle_alloc_error(layout);
            }
            Box::from_raw(std::ptr::slice_from_raw_parts_mut(p, n))
        };
        MemBloom { words }
    }

    /// Bytes held.
    pub fn size(&self) -> usize {
        std::mem::size_of_val(&*self.words)
    }

    /// Where `user_key`'s bits go; starts loading their cache line (module doc).
    #[inline]
    pub fn slot(&self, user_key: &[u8]) -> Slot {
        let slot = self.locate(user_key);
        crate::util::prefetch::prefetch(&self.words[slot.word]);
        slot
    }

    /// Records the key `slot` was made for. Call before the entry is published (module doc).
    #[inline]
    pub fn add(&self, slot: Slot) {
        let word = &self.words[slot.word];
        if word.load(Ordering::Relaxed) & slot.mask != slot.mask {
            word.fetch_or(slot.mask, Ordering::Relaxed);
        }
    }

    /// False when no entry of `user_key` was added before the caller's sequence number was
    /// published (module doc); true when one may have been.
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        let Slot { word, mask } = self.locate(user_key);
        self.words[word].load(Ordering::Relaxed) & mask == mask
    }

    /// The key's word and its bits there.
    #[inline]
    fn locate(&self, user_key: &[u8]) -> Slot {
        let h = xxh3_64(user_key);
        let i = ((h & 0xffff_ffff) * self.words.len() as u64) >> 32;
        let mut bits = h >> 32;
        let mut mask = 0u64;
        for _ in 0..PROBES {
            mask |= 1 << (bits & 63);
            bits >>= 6;
        }
        Slot { word: i as usize, mask }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_false_negatives_and_few_false_positives() {
        let keys = 20_000u32;
        let f = MemBloom::with_bytes(keys as usize * 10 / 8);
        for k in 0..keys {
            f.add(f.slot(format!("key{k:08}").as_bytes()));
        }
        for k in 0..keys {
            assert!(f.may_contain(format!("key{k:08}").as_bytes()), "key {k} lost");
        }
        let fp =
            (keys..keys * 6).filter(|k| f.may_contain(format!("key{k:08}").as_bytes())).count();
        let rate = fp as f64 / (5 * keys) as f64;
        assert!(rate < 0.04, "false positive rate {rate} at 10 bits per key");
    }

    #[test]
    fn empty_filter_rules_everything_out() {
        let f = MemBloom::with_bytes(0);
        assert_eq!(f.size(), 8);
        assert!(!f.may_contain(b""));
        assert!(!f.may_contain(b"k"));
        f.add(f.slot(b"k"));
        assert!(f.may_contain(b"k"));
    }

    #[test]
    fn concurrent_adds_are_all_kept() {
        let f = MemBloom::with_bytes(4096);
        std::thread::scope(|s| {
            for t in 0..4u32 {
                let f = &f;
                s.spawn(move || {
                    (0..2000u32).for_each(|k| f.add(f.slot(&(t * 10_000 + k).to_be_bytes())));
                });
            }
        });
        for t in 0..4u32 {
            for k in 0..2000u32 {
                assert!(f.may_contain(&(t * 10_000 + k).to_be_bytes()));
            }
        }
    }
}
