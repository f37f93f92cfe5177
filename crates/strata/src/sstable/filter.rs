//! The table's Bloom filter over whole user keys.
//!
//! ```text
//! filter block = line * num_lines | num_probes: u8 | kind: u8 | num_lines: fixed32
//! line         = 64 bytes = 512 bits
//! kind         = 1: cache-line-blocked Bloom filter keyed by XXH3-64   (on-disk: never change)
//! ```
//!
//! Each key is hashed once with XXH3-64 (`h`). The high 32 bits pick the key's line
//! (`(h >> 32) * num_lines >> 32`, a multiply instead of a modulo); the low 32 bits seed the
//! probes: `s = low32(h)`, then for each probe `s = s * PROBE_MULTIPLIER (mod 2^64)` and the top 9
//! bits of `s` name one of the line's 512 bits. Using disjoint halves keeps the probe pattern
//! independent of the line choice, and the multiply spreads every seed bit into the top bits.
//!
//! Why our own filter rather than a crate: a lookup must touch exactly one cache line (the
//! reader copies the bit array into 64-byte-aligned storage), cost one hash of the key, and be
//! decodable from a self-describing block we control forever; general-purpose Bloom crates
//! scatter probes over the whole array and hash each probe separately.
//!
//! `bits_per_key` is the memory budget; the probe count is `0.6 * bits_per_key` (clamped to
//! 1..=30), a little below the classic `ln 2` optimum because blocked filters load their lines
//! unevenly. At 10 bits per key the measured false-positive rate is about 1%.

use std::path::PathBuf;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::util::coding::{decode_fixed32, put_fixed32};
use crate::util::grow_buf::GrowBuf;

/// The filter kind written by this code. on-disk: never change.
pub const FILTER_KIND_BLOCKED_BLOOM: u8 = 1;
const LINE_BYTES: usize = 64;
const TRAILER_LEN: usize = 6;
const MAX_PROBES: u32 = 30;
/// An odd 64-bit constant (2^64 / golden ratio) whose multiples spread bits upward.
const PROBE_MULTIPLIER: u64 = 0x9e37_79b9_7f4a_7c15;

/// Probes per key for a budget of `bits_per_key`.
pub fn num_probes(bits_per_key: u32) -> u32 {
    (bits_per_key.saturating_mul(6) / 10).clamp(1, MAX_PROBES)
}

#[inline]
fn hash(user_key: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(user_key)
}

#[inline]
fn line_index(h: u64, num_lines: usize) -> usize {
    (((h >> 32) * num_lines as u64) >> 32) as usize
}

/// Collects key hashes and builds the filter block.
pub struct FilterBuilder {
    bits_per_key: u32,
    /// 8 bytes a key: megabytes for a large table, in a mapping of its own
    /// (`util/grow_buf.rs`).
    hashes: GrowBuf<u64>,
}

impl FilterBuilder {
    /// A builder spending about `bits_per_key` bits per key (must be > 0).
    pub fn new(bits_per_key: u32) -> Self {
        debug_assert!(bits_per_key > 0);
        FilterBuilder { bits_per_key: bits_per_key.max(1), hashes: GrowBuf::new() }
    }

    /// Adds a user key; the caller skips repeats of the previous key.
    #[inline]
    pub fn add_key(&mut self, user_key: &[u8]) {
        self.hashes.push(hash(user_key));
    }

    /// Forgets every key added (the next filter partition starts empty).
    pub fn reset(&mut self) {
        self.hashes.clear();
    }

    pub fn num_keys(&self) -> usize {
        self.hashes.len()
    }

    /// The encoded filter block for every key added.
    pub fn finish(&self) -> GrowBuf<u8> {
        let total_bits = (self.hashes.len() as u64).saturating_mul(u64::from(self.bits_per_key));
        let num_lines = total_bits.div_ceil(LINE_BYTES as u64 * 8).clamp(1, u64::from(u32::MAX));
        let num_lines = num_lines as usize;
        let probes = num_probes(self.bits_per_key);
        let mut out = GrowBuf::new();
        out.resize(num_lines * LINE_BYTES + TRAILER_LEN, 0);
        for &h in self.hashes.iter() {
            let start = line_index(h, num_lines) * LINE_BYTES;
            let line = &mut out[start..start + LINE_BYTES];
            let mut s = h & 0xffff_ffff;
            for _ in 0..probes {
                s = s.wrapping_mul(PROBE_MULTIPLIER);
                let bit = (s >> 55) as usize;
                line[bit >> 3] |= 1 << (bit & 7);
            }
        }
        let t = num_lines * LINE_BYTES;
        out[t] = probes as u8;
        out[t + 1] = FILTER_KIND_BLOCKED_BLOOM;
        out.truncate(t + 2);
        put_fixed32(&mut out, num_lines as u32);
        out
    }
}

/// One cache line of filter bits, aligned so that a probe touches one hardware line.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([u8; LINE_BYTES]);

/// A decoded filter, ready for probes. Clones share the bits: a table reader keeps one beside
/// its other hot fields, so that a probe reads the reader's line and one line of bits.
#[derive(Clone)]
pub struct BloomFilter {
    lines: Arc<[Line]>,
    num_probes: u32,
}

impl BloomFilter {
    /// Decodes a filter block read at file `offset`; a malformed block is `Corruption` (with an
    /// empty path for the caller to fill in).
    pub fn decode(data: &[u8], offset: u64) -> Result<BloomFilter> {
        let bad = |reason: String| Error::corruption(PathBuf::new(), offset, reason);
        if data.len() < TRAILER_LEN {
            return Err(bad(format!("filter block of {} bytes is too short", data.len())));
        }
        let t = data.len() - TRAILER_LEN;
        let num_probes = u32::from(data[t]);
        let kind = data[t + 1];
        let num_lines = decode_fixed32(data, t + 2) as usize;
        if kind != FILTER_KIND_BLOCKED_BLOOM {
            return Err(bad(format!("unknown filter kind {kind}")));
        }
        if num_probes == 0 || num_probes > MAX_PROBES {
            return Err(bad(format!("filter has {num_probes} probes")));
        }
        if num_lines == 0 || num_lines.checked_mul(LINE_BYTES) != Some(t) {
            return Err(bad(format!("filter of {t} bytes claims {num_lines} lines")));
        }
        let lines = data[..t]
            .chunks_exact(LINE_BYTES)
            .map(|c| {
                let mut l = Line([0; LINE_BYTES]);
                l.0.copy_from_slice(c);
                l
            })
            .collect();
        Ok(BloomFilter { lines, num_probes })
    }

    /// Heap bytes held (the bit array).
    pub fn memory_size(&self) -> usize {
        self.lines.len() * LINE_BYTES
    }

    /// False when `user_key` was certainly not added.
    #[inline]
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        self.may_contain_hash(hash(user_key))
    }

    #[inline]
    fn may_contain_hash(&self, h: u64) -> bool {
        let Some(line) = self.lines.get(line_index(h, self.lines.len())) else { return true };
        let mut s = h & 0xffff_ffff;
        for _ in 0..self.num_probes {
            s = s.wrapping_mul(PROBE_MULTIPLIER);
            let bit = (s >> 55) as usize;
            if line.0[bit >> 3] & (1 << (bit & 7)) == 0 {
                return false;
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(all(unix, not(miri)))]
    #[test]
    fn a_large_tables_key_hashes_and_filter_are_mapped_not_from_the_heap() {
        // 8 bytes a key: 20K keys pass the 128 KiB at which a GrowBuf maps its own memory.
        // Freed through glibc, such a buffer raised its mapping threshold, and the process
        // kept the heap holes of everything below it (util/grow_buf.rs).
        let mut b = FilterBuilder::new(10);
        for i in 0..200_000u64 {
            b.add_key(&key(i));
        }
        assert!(b.hashes.is_mapped());
        let out = b.finish();
        assert!(out.is_mapped(), "{} filter bytes", out.len());
        let f = BloomFilter::decode(&out, 0).unwrap();
        assert!((0..200_000u64).all(|i| f.may_contain(&key(i))));
    }

    fn key(i: u64) -> Vec<u8> {
        format!("user-key-{i:010}").into_bytes()
    }

    #[test]
    fn no_false_negatives_and_low_false_positive_rate() {
        let n = 100_000u64;
        let mut b = FilterBuilder::new(10);
        for i in 0..n {
            b.add_key(&key(i));
        }
        let enc = b.finish();
        assert_eq!(enc.len() % LINE_BYTES, TRAILER_LEN);
        // About 10 bits per key.
        assert!((enc.len() * 8) as u64 <= n * 10 + 512 + 48);
        let f = BloomFilter::decode(&enc, 0).unwrap();
        assert_eq!(f.num_probes, 6);
        for i in 0..n {
            assert!(f.may_contain(&key(i)), "false negative for {i}");
        }
        let fp = (n..2 * n).filter(|&i| f.may_contain(&key(i))).count();
        let rate = fp as f64 / n as f64;
        assert!(rate < 0.02, "false positive rate {rate}");
        assert!(rate > 0.001, "suspiciously low false positive rate {rate}");
    }

    #[test]
    fn lines_are_cache_aligned() {
        let mut b = FilterBuilder::new(10);
        for i in 0..1000 {
            b.add_key(&key(i));
        }
        let f = BloomFilter::decode(&b.finish(), 0).unwrap();
        assert_eq!(f.lines.as_ptr() as usize % 64, 0);
    }

    #[test]
    fn tiny_and_empty_filters() {
        let b = FilterBuilder::new(10);
        let f = BloomFilter::decode(&b.finish(), 0).unwrap();
        assert!(!f.may_contain(b"x"));
        let mut b = FilterBuilder::new(1);
        b.add_key(b"");
        let f = BloomFilter::decode(&b.finish(), 0).unwrap();
        assert!(f.may_contain(b""));
        assert_eq!(num_probes(0), 1);
        assert_eq!(num_probes(10), 6);
        assert_eq!(num_probes(1000), MAX_PROBES);
    }

    #[test]
    fn malformed_filters_are_corruption() {
        let mut b = FilterBuilder::new(10);
        b.add_key(b"a");
        let good = b.finish();
        let t = good.len() - TRAILER_LEN;
        let mut cases = vec![vec![], good[..5].to_vec(), good[1..].to_vec()];
        for (i, v) in [(t, 0u8), (t, 31), (t + 1, 2), (t + 2, 2), (t + 2, 0)] {
            let mut d = good.to_vec();
            d[i] = v;
            cases.push(d);
        }
        for c in cases {
            let e = BloomFilter::decode(&c, 55).err().unwrap();
            assert!(e.is_corruption() && e.to_string().contains("offset 55"));
        }
    }
}
