//! Which blocks a full block cache takes in: every block read ([`Admission::Always`]), or only
//! a block missed before within a recent window ([`Admission::SecondMiss`]).
//!
//! Why: when the cache is full, taking a block in evicts another. If reads spread evenly over a
//! database much larger than the cache, the evicted block was exactly as likely to be read
//! next as the new one, so the exchange buys no hits and costs the insert, the sweep that finds
//! a victim, and the victim's cold buffer that the next read decodes into. A block read twice
//! within the window is one reads come back to: it is taken in on its second miss. So the
//! cache keeps filling with blocks that are read again (a skewed workload's hot blocks) and a
//! scan or an even spread of reads no longer churns it. While the cache has room every block
//! is taken in, so a cache larger than the data fills exactly as before.
//!
//! The cost is one more read of a block that is read twice before its second miss: the reader
//! keeps the last block it did not take in (`cache/block_cache.rs`), which covers the common
//! case of neighbouring keys read one after the other.
//!
//! [`Doorkeeper`] remembers recent misses: a bit array, two bits per block hash in one 64-bit
//! word, cleared once the blocks it recorded add up to twice the cache's capacity (the window:
//! two cache-fulls of misses, whatever the block size). It has 16 bits per KiB of capacity, so
//! with blocks of 1 KiB at most about 22% of its bits are set and a first miss passes for a
//! second one at most about 5% of the time (with 4 KiB blocks, 6% and 0.4%).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

/// Which blocks read on a miss a full block cache takes in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Admission {
    /// Every block read on a miss (RocksDB's behaviour).
    Always,
    /// When the block's shard is full (taking it in would evict): only a block missed before
    /// within the last two cache-fulls of misses. A cache with room takes every block.
    #[default]
    SecondMiss,
}

/// Bits of the doorkeeper per KiB of cache capacity.
const BITS_PER_KIB: usize = 16;
/// At most this many bits (4 MiB), whatever the capacity.
const MAX_BITS: usize = 1 << 25;
/// At least this many bits (one line of words).
const MIN_BITS: usize = 512;

/// Recent block misses, as a set of hashes that forgets everything once the blocks recorded
/// add up to its window's bytes.
pub struct Doorkeeper {
    words: Box<[AtomicU64]>,
    mask: usize,
    window: usize,
    recorded: AtomicUsize,
}

impl Doorkeeper {
    /// A doorkeeper for a cache of `capacity` bytes.
    pub fn new(capacity: usize) -> Self {
        Self::for_entries(capacity, 1024)
    }

    /// A doorkeeper for a cache of `capacity` bytes whose entries are about `entry` bytes
    /// (the row cache's): as many bits per entry as a block cache's per KiB.
    pub fn for_entries(capacity: usize, entry: usize) -> Self {
        let bits = (capacity / entry.max(1)).saturating_mul(BITS_PER_KIB).clamp(MIN_BITS, MAX_BITS);
        let words = bits.next_power_of_two() / 64;
        Doorkeeper {
            words: (0..words).map(|_| AtomicU64::new(0)).collect(),
            mask: words - 1,
            window: capacity.max(1).saturating_mul(2),
            recorded: AtomicUsize::new(0),
        }
    }

    /// Records a miss of the block of `charge` bytes whose hash is `hash`; true when one was
    /// recorded since the last clear (or another hash set the same bits).
    pub fn second_miss(&self, hash: u64, charge: usize) -> bool {
        let word = &self.words[(hash as usize) & self.mask];
        let bits = (1u64 << ((hash >> 40) & 63)) | (1u64 << ((hash >> 52) & 63));
        let seen = word.load(Relaxed) & bits == bits;
        if !seen {
            word.fetch_or(bits, Relaxed);
        }
        let charge = charge.max(1);
        if self.recorded.fetch_add(charge, Relaxed) + charge >= self.window {
            // One thread wins the reset; misses recorded during the clear may be lost, which
            // only makes a block wait for one more miss.
            if self.recorded.swap(0, Relaxed) >= self.window {
                for w in &self.words[..] {
                    w.store(0, Relaxed);
                }
            }
        }
        seen
    }

    /// Memory held, in bytes.
    #[cfg(test)]
    pub fn memory_size(&self) -> usize {
        self.words.len() * 8
    }
}

/// A hash of a block's key words for the doorkeeper (every output bit depends on every input).
pub fn block_hash(words: [u64; 3]) -> u64 {
    let mut h = 0x243f_6a88_85a3_08d3u64;
    for w in words {
        h = (h ^ w).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(31);
    }
    h ^= h >> 29;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^ (h >> 32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_passes_on_its_second_miss() {
        let d = Doorkeeper::new(1 << 20);
        let (a, b) = (block_hash([1, 7, 4096]), block_hash([1, 7, 8192]));
        assert!(!d.second_miss(a, 4096), "first miss of a");
        assert!(!d.second_miss(b, 4096), "first miss of b");
        assert!(d.second_miss(a, 4096), "second miss of a");
        assert!(d.second_miss(b, 4096), "second miss of b");
    }

    #[test]
    fn the_window_forgets_old_misses() {
        let d = Doorkeeper::new(10 << 10); // window: 20 KiB of misses
        let a = block_hash([1, 1, 0]);
        assert!(!d.second_miss(a, 1024));
        for i in 0..18u64 {
            assert!(!d.second_miss(block_hash([2, i, 0]), 1024));
        }
        assert!(d.second_miss(a, 1024), "19 KiB recorded: still within the window");
        // That record reached 20 KiB and cleared the set: `a` counts as a first miss again.
        assert!(!d.second_miss(a, 1024), "a miss older than the window is forgotten");
        assert!(d.second_miss(a, 1024));
    }

    #[test]
    fn first_misses_rarely_pass_for_second_ones() {
        // 1 KiB blocks (the smallest the sizing assumes): just under one window of distinct
        // blocks; count the ones that pass for second misses.
        let d = Doorkeeper::new(4 << 20);
        let n = 2 * 4096 - 1;
        let false_seen: usize =
            (0..n as u64).map(|i| usize::from(d.second_miss(block_hash([9, i, 0]), 1024))).sum();
        assert!(false_seen * 100 < n * 3, "{false_seen} of {n} first misses passed");
    }

    #[test]
    fn sizes_are_bounded() {
        assert_eq!(Doorkeeper::new(0).memory_size(), MIN_BITS / 8);
        assert_eq!(Doorkeeper::new(usize::MAX).memory_size(), MAX_BITS / 8);
        assert_eq!(Doorkeeper::new(32 << 20).memory_size(), (32 << 10) * BITS_PER_KIB / 8);
    }

    #[test]
    fn the_hash_spreads_neighbouring_offsets() {
        let d = Doorkeeper::new(64 << 20);
        let words: std::collections::HashSet<usize> =
            (0..4096u64).map(|i| block_hash([3, 5, i * 4096]) as usize & d.mask).collect();
        assert!(words.len() > 3000, "{} distinct words of 4096 offsets", words.len());
    }
}
