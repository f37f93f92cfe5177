//! Builds data and index blocks.
//!
//! ```text
//! block   = entry* | restart offset: fixed32 * num_restarts | num_restarts: fixed32
//! entry   = shared: varint32 | unshared: varint32 | value_len: varint32
//!           | key[shared..]: unshared bytes | value: value_len bytes
//! ```
//! `shared` is the length of the prefix the key has in common with the previous entry's key.
//! Every `restart_interval`-th entry is a restart point: it stores its whole key (`shared` =
//! 0) and its offset is listed in the restart array, so a reader can binary-search the restart
//! points and decode forward from any of them. The first entry is always a restart point, and
//! an empty block still holds one restart offset (0). on-disk: never change.

use crate::util::coding::{decode_fixed64, put_fixed32, put_varint32};
use crate::util::grow_buf::GrowBuf;

/// Accumulates sorted entries into one block.
pub struct BlockBuilder {
    /// Stays a `Vec` for a data block; an index block grows to a mapping of its own
    /// (`util/grow_buf.rs`).
    buf: GrowBuf<u8>,
    restarts: Vec<u32>,
    restart_interval: usize,
    /// Entries since the last restart point.
    counter: usize,
    num_entries: usize,
    last_key: Vec<u8>,
    finished: bool,
}

impl BlockBuilder {
    /// A builder with a restart point every `restart_interval` entries (at least 1).
    pub fn new(restart_interval: usize) -> Self {
        BlockBuilder {
            buf: GrowBuf::new(),
            restarts: vec![0],
            restart_interval: restart_interval.max(1),
            counter: 0,
            num_entries: 0,
            last_key: Vec::new(),
            finished: false,
        }
    }

    /// Forgets every entry, keeping the buffers' memory.
    pub fn reset(&mut self) {
        self.buf.clear();
        self.restarts.clear();
        self.restarts.push(0);
        self.counter = 0;
        self.num_entries = 0;
        self.last_key.clear();
        self.finished = false;
    }

    /// Appends an entry; `key` must sort after every key added since the last reset, and the
    /// block must stay below 4 GiB (restart offsets are 32-bit).
    pub fn add(&mut self, key: &[u8], value: &[u8]) {
        debug_assert!(!self.finished);
        let shared = if self.counter < self.restart_interval {
            shared_prefix_len(&self.last_key, key)
        } else {
            self.restarts.push(self.buf.len() as u32);
            self.counter = 0;
            0
        };
        let unshared = key.len() - shared;
        put_varint32(&mut self.buf, shared as u32);
        put_varint32(&mut self.buf, unshared as u32);
        put_varint32(&mut self.buf, value.len() as u32);
        self.buf.extend_from_slice(&key[shared..]);
        self.buf.extend_from_slice(value);
        self.last_key.truncate(shared);
        self.last_key.extend_from_slice(&key[shared..]);
        self.counter += 1;
        self.num_entries += 1;
    }

    /// Size of the block if it were finished now.
    pub fn size_estimate(&self) -> usize {
        self.buf.len() + 4 * self.restarts.len() + 4
    }

    /// Appends the restart array and returns the finished block; call [`Self::reset`] before
    /// adding again.
    pub fn finish(&mut self) -> &[u8] {
        if !self.finished {
            for &r in &self.restarts {
                put_fixed32(&mut self.buf, r);
            }
            put_fixed32(&mut self.buf, self.restarts.len() as u32);
            self.finished = true;
        }
        &self.buf
    }

    pub fn is_empty(&self) -> bool {
        self.num_entries == 0
    }

    #[cfg(test)]
    pub fn num_entries(&self) -> usize {
        self.num_entries
    }

    #[cfg(test)]
    /// The key most recently added.
    pub fn last_key(&self) -> &[u8] {
        &self.last_key
    }
}

/// Length of the common prefix of `a` and `b`, compared eight bytes at a time.
#[inline]
fn shared_prefix_len(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 8 <= n {
        let x = decode_fixed64(a, i) ^ decode_fixed64(b, i);
        if x != 0 {
            // Little-endian load: the first differing byte holds the lowest set bit.
            return i + (x.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(all(unix, not(miri)))]
    #[test]
    fn an_index_sized_block_grows_in_a_mapping_and_a_data_block_stays_on_the_heap() {
        let mut b = BlockBuilder::new(8);
        for i in 0..20_000u32 {
            b.add(format!("key{i:016}").as_bytes(), &[7u8; 12]);
        }
        assert!(b.buf.is_mapped(), "{} bytes", b.size_estimate());
        let mut d = BlockBuilder::new(16);
        for i in 0..10u32 {
            d.add(format!("key{i:016}").as_bytes(), &[7u8; 400]);
        }
        assert!(!d.buf.is_mapped());
    }

    #[test]
    fn shared_prefix() {
        let cases: &[(&[u8], &[u8], usize)] = &[
            (b"", b"", 0),
            (b"abc", b"", 0),
            (b"abc", b"abd", 2),
            (b"0123456789abcdef", b"0123456789abcdef", 16),
            (b"0123456789abcdef", b"0123456789abcdeX", 15),
            (b"0123456X89abcdef", b"0123456789abcdef", 7),
            (b"01234567", b"012345678", 8),
        ];
        for &(a, b, n) in cases {
            assert_eq!(shared_prefix_len(a, b), n, "{a:?} {b:?}");
            assert_eq!(shared_prefix_len(b, a), n);
        }
    }

    #[test]
    fn layout_of_a_small_block() {
        let mut b = BlockBuilder::new(2);
        b.add(b"apple", b"1");
        b.add(b"apply", b"22");
        b.add(b"banana", b"");
        assert_eq!(b.num_entries(), 3);
        assert_eq!(b.last_key(), b"banana");
        let est = b.size_estimate();
        let out = b.finish().to_vec();
        assert_eq!(out.len(), est);
        let mut expect = Vec::new();
        expect.extend_from_slice(&[0, 5, 1]);
        expect.extend_from_slice(b"apple1");
        expect.extend_from_slice(&[4, 1, 2]);
        expect.extend_from_slice(b"y22");
        let second_restart = expect.len() as u32;
        expect.extend_from_slice(&[0, 6, 0]);
        expect.extend_from_slice(b"banana");
        expect.extend_from_slice(&0u32.to_le_bytes());
        expect.extend_from_slice(&second_restart.to_le_bytes());
        expect.extend_from_slice(&2u32.to_le_bytes());
        assert_eq!(out, expect);
        b.reset();
        assert!(b.is_empty());
        assert_eq!(b.finish(), &[0, 0, 0, 0, 1, 0, 0, 0]);
    }
}
