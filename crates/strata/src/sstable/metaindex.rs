//! The metaindex block: names of meta blocks mapped to their handles, so meta blocks can be
//! added without changing the footer.
//!
//! ```text
//! metaindex block = entry*
//! entry           = name: varint64 length | bytes  |  handle: varint64 offset | varint64 size
//! ```
//! Names are unique and strictly ascending (bytewise). A reader ignores names it does not know.
//! Known names (on-disk: never change): [`FILTER_BLOCK`], [`PROPERTIES_BLOCK`] (required) and
//! [`RANGE_DELETION_BLOCK`] (range tombstones).

use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::util::coding::{put_length_prefixed, Reader};

use super::format::BlockHandle;

/// The Bloom filter block ([`super::filter`]).
pub const FILTER_BLOCK: &str = "strata.filter";
/// The properties block ([`super::properties`]).
pub const PROPERTIES_BLOCK: &str = "strata.properties";
/// The range tombstone block ([`crate::range_del`]); absent when the table has none.
pub const RANGE_DELETION_BLOCK: &str = "strata.rangedel";

/// The decoded (or to-be-encoded) name -> handle map, sorted by name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MetaIndex {
    entries: Vec<(Vec<u8>, BlockHandle)>,
}

impl MetaIndex {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds or replaces the handle for `name`.
    pub fn insert(&mut self, name: &str, handle: BlockHandle) {
        match self.entries.binary_search_by(|(n, _)| n.as_slice().cmp(name.as_bytes())) {
            Ok(i) => self.entries[i].1 = handle,
            Err(i) => self.entries.insert(i, (name.as_bytes().to_vec(), handle)),
        }
    }

    /// The handle stored for `name`.
    pub fn get(&self, name: &str) -> Option<BlockHandle> {
        self.entries
            .binary_search_by(|(n, _)| n.as_slice().cmp(name.as_bytes()))
            .ok()
            .map(|i| self.entries[i].1)
    }

    #[cfg(test)]
    /// Every (name, handle), sorted by name.
    pub fn entries(&self) -> impl Iterator<Item = (&[u8], BlockHandle)> {
        self.entries.iter().map(|(n, h)| (n.as_slice(), *h))
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for (name, h) in &self.entries {
            put_length_prefixed(&mut out, name);
            h.encode_to(&mut out);
        }
        out
    }

    /// Decodes a metaindex block read at file `offset` (errors carry an empty path).
    pub fn decode(data: &[u8], offset: u64) -> Result<MetaIndex> {
        let bad = |reason: String| Error::corruption(PathBuf::new(), offset, reason);
        let mut r = Reader::new(data);
        let mut entries: Vec<(Vec<u8>, BlockHandle)> = Vec::new();
        while !r.is_empty() {
            let at = r.position();
            let entry =
                r.length_prefixed().and_then(|n| Some((n, BlockHandle::decode_from(&mut r)?)));
            let Some((name, handle)) = entry else {
                return Err(bad(format!("bad metaindex entry at {at}")));
            };
            if entries.last().is_some_and(|(last, _)| last.as_slice() >= name) {
                return Err(bad(format!("metaindex names out of order at {at}")));
            }
            entries.push((name.to_vec(), handle));
        }
        Ok(MetaIndex { entries })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip_and_lookup() {
        let mut m = MetaIndex::new();
        m.insert(PROPERTIES_BLOCK, BlockHandle::new(500, 60));
        m.insert(FILTER_BLOCK, BlockHandle::new(100, 400));
        m.insert("zz.future", BlockHandle::new(1, 2));
        m.insert(FILTER_BLOCK, BlockHandle::new(100, 401));
        let enc = m.encode();
        let d = MetaIndex::decode(&enc, 0).unwrap();
        assert_eq!(d, m);
        assert_eq!(d.get(FILTER_BLOCK), Some(BlockHandle::new(100, 401)));
        assert_eq!(d.get(PROPERTIES_BLOCK), Some(BlockHandle::new(500, 60)));
        assert_eq!(d.get("strata.rangedel"), None);
        assert_eq!(d.entries().count(), 3);
        assert_eq!(MetaIndex::decode(&[], 0).unwrap(), MetaIndex::new());
    }

    #[test]
    fn malformed_is_corruption() {
        let mut m = MetaIndex::new();
        m.insert("a", BlockHandle::new(1, 2));
        m.insert("b", BlockHandle::new(3, 4));
        let enc = m.encode();
        let mut swapped = Vec::new();
        put_length_prefixed(&mut swapped, b"b");
        BlockHandle::new(3, 4).encode_to(&mut swapped);
        put_length_prefixed(&mut swapped, b"a");
        BlockHandle::new(1, 2).encode_to(&mut swapped);
        for c in [enc[..enc.len() - 1].to_vec(), vec![50, b'x'], swapped] {
            let e = MetaIndex::decode(&c, 3).unwrap_err();
            assert!(e.is_corruption() && e.to_string().contains("offset 3"));
        }
    }
}
