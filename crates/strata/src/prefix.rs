//! Prefix extractors: how a key's prefix is taken, for `ReadOptions::prefix_same_as_start`
//! (and, later, prefix Bloom filters). A leaf module: options and iterators both use it.

/// How a key's prefix is taken (RocksDB's `SliceTransform`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrefixExtractor {
    /// The first `n` bytes; a shorter key is its own prefix.
    Fixed(usize),
    /// At most the first `n` bytes.
    Capped(usize),
}

impl PrefixExtractor {
    /// The prefix of `key`.
    pub fn prefix(self, key: &[u8]) -> &[u8] {
        match self {
            PrefixExtractor::Fixed(n) | PrefixExtractor::Capped(n) => &key[..n.min(key.len())],
        }
    }
}
