//! Keys (`docs/db_bench.md` §3): an integer written big-endian in at most 8 bytes, padded
//! with ASCII '0' up to the key size; optionally preceded by a prefix derived from the
//! integer.

use crate::random::{shuffle, Mt64};

/// How a key integer becomes key bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyFormat {
    /// Key length in bytes.
    pub key_size: usize,
    /// Prefix length in bytes (used only when `keys_per_prefix > 0`).
    pub prefix_size: usize,
    /// Keys sharing one prefix (0: no prefix in the key).
    pub keys_per_prefix: u64,
    /// `--use_existing_keys`: the DB's keys in order, read when it was opened; key integer
    /// `v` is the `v`-th of them (db_bench's `keys_`), whatever the sizes above say.
    pub existing: Option<std::sync::Arc<[Vec<u8>]>>,
}

impl KeyFormat {
    pub fn plain(key_size: usize) -> Self {
        KeyFormat { key_size, prefix_size: 0, keys_per_prefix: 0, existing: None }
    }

    /// Writes the key for `v` into `buf` (resized to the key size; no allocation once it has
    /// the capacity). `num_keys` is the key space, which sets the number of prefixes.
    #[inline]
    pub fn encode(&self, v: u64, num_keys: u64, buf: &mut Vec<u8>) {
        buf.clear();
        if let Some(keys) = &self.existing {
            // The runner reads at least one key; `--num` is their count, so `v` is below it
            // but for the range deletions' growth of a writer's key space, which wraps.
            buf.extend_from_slice(&keys[(v % keys.len().max(1) as u64) as usize]);
            return;
        }
        buf.resize(self.key_size, b'0');
        let mut pos = 0;
        if let Some(num_prefix) = num_keys.checked_div(self.keys_per_prefix) {
            let num_prefix = num_prefix.max(1);
            let prefix = v % num_prefix;
            let fill = self.prefix_size.min(8).min(self.key_size);
            write_be_low(&mut buf[..fill], prefix);
            // Bytes [8, prefix_size) are already '0'.
            pos = self.prefix_size.min(self.key_size);
        }
        let fill = (self.key_size - pos).min(8);
        write_be_low(&mut buf[pos..pos + fill], v);
    }
}

/// Writes the low `out.len()` bytes of `v`, most significant first.
#[inline]
fn write_be_low(out: &mut [u8], v: u64) {
    let n = out.len();
    for (i, b) in out.iter_mut().enumerate() {
        *b = (v >> ((n - i - 1) * 8)) as u8;
    }
}

/// The order in which a writer visits key integers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteMode {
    /// 0, 1, 2, ... (each thread from 0).
    Sequential,
    /// `rand % num`, with replacement.
    Random,
    /// A shuffled permutation of `0..num`.
    UniqueRandom,
}

/// Produces the key integers of a writer.
#[derive(Debug)]
pub struct KeyGenerator {
    mode: WriteMode,
    num: u64,
    next: u64,
    values: Vec<u64>,
}

impl KeyGenerator {
    /// `shuffle_seed` is the low 32 bits of the seed base (as db_bench seeds `std::mt19937`).
    pub fn new(mode: WriteMode, num: u64, shuffle_seed: u32) -> Self {
        let values = if mode == WriteMode::UniqueRandom {
            let mut v: Vec<u64> = (0..num).collect();
            shuffle(&mut v, shuffle_seed);
            v
        } else {
            Vec::new()
        };
        KeyGenerator { mode, num, next: 0, values }
    }

    /// The `i`-th key of a unique-random order (wrapping around it, as [`Self::next`] does).
    pub fn fetch(&self, i: u64) -> u64 {
        debug_assert_eq!(self.mode, WriteMode::UniqueRandom);
        self.values[(i % self.num.max(1)) as usize]
    }

    #[inline]
    pub fn next(&mut self, rand: &mut Mt64) -> u64 {
        match self.mode {
            WriteMode::Sequential => {
                let v = self.next;
                self.next += 1;
                v
            }
            WriteMode::Random => rand.next_u64() % self.num.max(1),
            WriteMode::UniqueRandom => {
                // More writes than keys wrap around the permutation.
                let v = self.values[(self.next % self.num.max(1)) as usize];
                self.next += 1;
                v
            }
        }
    }
}

/// Exponentially skewed random read key (`--read_random_exp_range`, `docs/db_bench.md`
/// §3.3).
#[inline]
pub fn random_read_key(rand: &mut Mt64, num: u64, exp_range: f64) -> u64 {
    let r = rand.next_u64();
    if exp_range == 0.0 {
        return r % num.max(1);
    }
    const LIMIT: u64 = 1 << 62;
    let order = (r % LIMIT) as f64 / LIMIT as f64 * exp_range;
    let k = ((-order).exp() * num as f64) as u64;
    k.wrapping_mul(0x5bd1_e995) % num.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_299999_default_size() {
        let mut buf = Vec::new();
        KeyFormat::plain(16).encode(299_999, 1_000_000, &mut buf);
        assert_eq!(
            buf,
            [0, 0, 0, 0, 0, 0x04, 0x93, 0xDF, b'0', b'0', b'0', b'0', b'0', b'0', b'0', b'0']
        );
    }

    #[test]
    fn short_keys_keep_low_bytes() {
        let mut buf = Vec::new();
        KeyFormat::plain(4).encode(0x0102_0304_0506, 10, &mut buf);
        assert_eq!(buf, [0x03, 0x04, 0x05, 0x06]);
        KeyFormat::plain(17).encode(1, 10, &mut buf);
        assert_eq!(&buf[..8], &[0, 0, 0, 0, 0, 0, 0, 1]);
        assert!(buf[8..].iter().all(|&b| b == b'0'));
        assert_eq!(buf.len(), 17);
    }

    #[test]
    fn prefixed_keys() {
        // 100 keys, 10 per prefix: 10 prefixes; key 23 has prefix 3.
        let f = KeyFormat { key_size: 20, prefix_size: 10, keys_per_prefix: 10, existing: None };
        let mut buf = Vec::new();
        f.encode(23, 100, &mut buf);
        let mut want = vec![0u8, 0, 0, 0, 0, 0, 0, 3, b'0', b'0'];
        want.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 23, b'0', b'0']);
        assert_eq!(buf, want);
    }

    #[test]
    fn generators() {
        let mut r = Mt64::new(1);
        let mut g = KeyGenerator::new(WriteMode::Sequential, 5, 0);
        assert_eq!((0..7).map(|_| g.next(&mut r)).collect::<Vec<_>>(), vec![0, 1, 2, 3, 4, 5, 6]);
        let mut g = KeyGenerator::new(WriteMode::UniqueRandom, 100, 7);
        let mut seen: Vec<u64> = (0..100).map(|_| g.next(&mut r)).collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..100).collect::<Vec<_>>());
        let mut g = KeyGenerator::new(WriteMode::Random, 10, 0);
        assert!((0..100).all(|_| g.next(&mut r) < 10));
    }
}
