//! The partitioned index (and partitioned filters) of table format version 2.
//!
//! A one-block index must be read whole before any lookup, and a reader that keeps it (or that
//! charges it to the block cache) holds all of it. A partitioned index splits the index
//! entries into partitions of about `metadata_block_size` bytes and adds a small top-level
//! index over them, so a lookup reads one partition, through the block cache:
//!
//! ```text
//! +--------------------------+
//! | data blocks ...          |   contiguous, as in version 1
//! | rangedel, full filter    |   as in version 1 (the full filter only without
//! |                          |   partition_filters)
//! | index partition 0        |
//! | filter partition 0       |   only with partition_filters (one per index partition,
//! | index partition 1        |   written just after the index partition it goes with)
//! | filter partition 1       |
//! | ...                      |
//! | top-level index          |   <- footer.index (footer format version 2)
//! | properties, metaindex    |
//! | footer                   |
//! +--------------------------+
//!
//! index partition = an index block (block_builder.rs): separator -> data block handle,
//!                   exactly as the version 1 index, for a run of consecutive data blocks
//! top-level index = a block: key   = the last separator of index partition i
//!                            value = index partition handle | [filter partition handle]
//!                   (handles are varint64 offset | varint64 size, as everywhere; the filter
//!                   handle is present iff the table has partitioned filters)
//! filter partition = a filter block (filter.rs) over every user key with an entry in the data
//!                   blocks of its index partition
//! ```
//!
//! Invariants the reader relies on:
//! - top-level keys strictly increase, and the key of partition `i` is >= every key of its
//!   data blocks and < every key of partition `i + 1`'s data blocks (it is a separator of the
//!   version 1 index);
//! - seeking the top level to `(k, SeqNo::MAX)` finds the first partition that can hold a key
//!   of user key `k`, and that partition's filter holds `k` if the table does (a user key whose
//!   entries straddle two partitions is in both filters);
//! - partitions are compressed like the version 1 index; filter partitions never are.
//!
//! on-disk: never change the top-level value layout. `docs/format/sstable.md` mirrors this.

use crate::util::coding::Reader;

use super::format::BlockHandle;

/// How a table's index is laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum IndexType {
    /// One index block, searched by binary search (format version 1).
    #[default]
    BinarySearch,
    /// A top-level index over index partitions (format version 2; RocksDB's
    /// `kTwoLevelIndexSearch`).
    TwoLevel,
}

/// Appends a top-level entry's value.
pub fn encode_top_entry(buf: &mut Vec<u8>, index: BlockHandle, filter: Option<BlockHandle>) {
    index.encode_to(buf);
    if let Some(f) = filter {
        f.encode_to(buf);
    }
}

/// Decodes a top-level entry's value: the index partition and, when present, its filter
/// partition. `None` when malformed.
pub fn decode_top_entry(v: &[u8]) -> Option<(BlockHandle, Option<BlockHandle>)> {
    let mut r = Reader::new(v);
    let index = BlockHandle::decode_from(&mut r)?;
    if r.is_empty() {
        return Some((index, None));
    }
    let filter = BlockHandle::decode_from(&mut r)?;
    r.is_empty().then_some((index, Some(filter)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_entry_roundtrip_and_damage() {
        let i = BlockHandle::new(100, 4000);
        let f = BlockHandle::new(5000, 640);
        for filter in [None, Some(f)] {
            let mut buf = Vec::new();
            encode_top_entry(&mut buf, i, filter);
            assert_eq!(decode_top_entry(&buf), Some((i, filter)));
            let mut extra = buf.clone();
            extra.push(1);
            assert_eq!(decode_top_entry(&extra), None, "{filter:?}");
        }
        assert_eq!(decode_top_entry(&[]), None);
        assert_eq!(decode_top_entry(&[0x80]), None);
    }
}
