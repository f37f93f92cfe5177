//! The cache's key hash: a multiply-mix over 64-bit words with a final avalanche.
//!
//! The cache uses the hash twice, so every output bit must depend on every input bit: the top
//! bits pick the shard and the low 32 bits place the entry in the shard's table (and filter probe
//! candidates). Block-cache keys are two integers (file, offset) with small, regular differences
//! (offsets are multiples of the block size), which is exactly what a weak hash clusters on.
//! Not DoS-resistant, and need not be: keys come from the engine, not from users. Exported
//! for the same use elsewhere: maps whose keys no client chooses (strata-server's command
//! table).

use std::hash::{BuildHasherDefault, Hasher};

/// Odd 64-bit constant (2^64 / golden ratio) for the per-word multiply.
const K: u64 = 0x9e37_79b9_7f4a_7c15;

/// A fast, non-cryptographic [`Hasher`].
#[derive(Default, Clone, Copy)]
pub struct MixHasher {
    state: u64,
}

/// The `BuildHasher` the cache hashes with.
pub type MixBuildHasher = BuildHasherDefault<MixHasher>;

impl MixHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.state = (self.state ^ word).wrapping_mul(K).rotate_left(29);
    }
}

impl Hasher for MixHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            // The length in the top byte keeps "a" and "a\0" apart.
            self.add(u64::from_le_bytes(w) ^ ((rest.len() as u64) << 56));
        }
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_u16(&mut self, i: u16) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    /// Avalanche (the splitmix64 finaliser), so low and high output bits are both well mixed.
    #[inline]
    fn finish(&self) -> u64 {
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    use crate::cache::CacheKey;

    #[test]
    fn block_keys_spread_over_shards_and_slots() {
        let b = MixBuildHasher::default();
        let mut shards = [0u32; 64];
        let mut slots = vec![0u32; 1024];
        let n = 64 * 1024;
        for file in 0..4u64 {
            for block in 0..n / 4 {
                let h = b.hash_one(CacheKey { owner: 1, file, offset: block * 4096 });
                shards[(h >> 58) as usize] += 1;
                slots[(h as u32 & 1023) as usize] += 1;
            }
        }
        let (lo, hi) = (n as u32 / 64 * 8 / 10, n as u32 / 64 * 12 / 10);
        assert!(shards.iter().all(|&c| (lo..hi).contains(&c)), "{shards:?}");
        let (lo, hi) = (n as u32 / 1024 / 2, n as u32 / 1024 * 2);
        assert!(slots.iter().all(|&c| (lo..hi).contains(&c)));
    }

    #[test]
    fn byte_strings_differ() {
        let b = MixBuildHasher::default();
        assert_ne!(b.hash_one(b"a".as_slice()), b.hash_one(b"a\0".as_slice()));
        assert_ne!(b.hash_one("abcdefgh"), b.hash_one("abcdefgi"));
        assert_ne!(b.hash_one((1u64, 2u64)), b.hash_one((2u64, 1u64)));
    }
}
