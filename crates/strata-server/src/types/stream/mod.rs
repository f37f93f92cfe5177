//! Streams (Redis 7.0's): entries with ids, consumer groups with their pending entries
//! lists (PEL) and consumers. The metadata record holds the stream's counters; everything
//! else is a sub-key of the key's version (`super::subkey`), its field led by a tag byte so
//! that each kind of record is one key range, entries in id order.
//!
//! ```text
//!  metadata record, type 6 (on-disk: never change), format 0:
//!   flags | expire_ms u64LE | version u64LE | length u64LE | last id | first id
//!         | max deleted id | entries_added u64LE | nodes u64LE | groups u64LE       (97 bytes)
//!   an id in a record value: ms u64LE | seq u64LE
//!   last id:        the greatest id ever added (or XSETID's); 0-0 for a new stream
//!   first id:       the first entry's id (0-0 when empty), Redis's recorded-first-entry-id
//!   max deleted id: the greatest id XDEL removed (or XSETID's), 0-0 for none
//!   entries_added:  every entry ever added (or XSETID's)
//!   nodes, groups:  how many node and group records the stream has
//!
//!  sub-key field (after slot | key_len | key | version), tags on-disk: never change
//!   0x01 | id (16, BE)                         entry:   pair count u32LE
//!                                                        | (len u32LE | bytes) per field, value
//!   0x02 | master id (16, BE)                  node:    see `node` (approximate trimming)
//!   0x03 | group name                          group:   last delivered id | entries_read i64LE
//!                                                        (-1: unknown) | consumers u64LE
//!                                                        | pending u64LE
//!   0x04 | glen u32BE | group | id (16, BE)    PEL:     delivery_ms u64LE | delivery_count
//!                                                        u64LE | consumer name
//!   0x05 | glen u32BE | group | consumer       consumer: seen_ms u64LE | pending u64LE
//!   0x06 | glen u32BE | group | clen u32BE | consumer | id (16, BE)
//!                                               the consumer's PEL index: empty value
//!   an id in a sub-key: ms u64BE | seq u64BE, so byte order is id order
//! ```
//!
//! Modules: [`id`] (ids as text and bytes), [`entries`] (XADD, XRANGE, XDEL, XTRIM, XSETID),
//! [`node`] (the listpack nodes approximate trimming works on), [`group`] (group records,
//! XGROUP, XACK), [`read`] (XREADGROUP), [`claim`] (XCLAIM, XAUTOCLAIM), [`info`] (XPENDING,
//! XINFO).
//!
//! Groups sort by name (as Redis lists them); a group's PEL by id; its consumers by name;
//! the length prefixes keep one group's records apart from another's whatever the names.
//! An empty stream is a key like any other (unlike an empty list or set, it stays).
//! Deleting, expiring or overwriting the key drops the record alone; the compaction filter
//! removes the sub-keys of the old version (`super::gc`), as for the other types.

pub mod claim;
pub mod entries;
pub mod group;
pub mod id;
pub mod info;
pub mod node;
pub mod read;

pub use id::StreamId;

use super::error::{Result, TypeError};
use super::keyspace::Keyspace;
use super::metadata::{Kind, Meta};
use super::subkey;
use std::sync::atomic::{AtomicU64, Ordering};
use strata::WriteBatch;

/// Entry records (on-disk: never change).
pub const TAG_ENTRY: u8 = 0x01;
/// Node records.
pub const TAG_NODE: u8 = 0x02;
/// Group records.
pub const TAG_GROUP: u8 = 0x03;
/// A group's PEL.
pub const TAG_PEL: u8 = 0x04;
/// A group's consumers.
pub const TAG_CONSUMER: u8 = 0x05;
/// A consumer's PEL index.
pub const TAG_CONSUMER_PEL: u8 = 0x06;

/// The bytes of a stream's metadata record after `version` and `length`.
pub const META_EXTRA_LEN: usize = 16 * 3 + 8 * 3;

/// Default of `stream-node-max-entries`.
pub const DEFAULT_NODE_ENTRIES: u64 = 100;
/// Default of `stream-node-max-bytes`.
pub const DEFAULT_NODE_BYTES: u64 = 4096;

/// Redis's `stream-node-max-entries` and `stream-node-max-bytes` (settable at run time):
/// the size of the nodes approximate trimming removes whole (`node`).
#[derive(Debug)]
pub struct NodeLimits {
    entries: AtomicU64,
    bytes: AtomicU64,
}

impl Default for NodeLimits {
    fn default() -> Self {
        NodeLimits::new(DEFAULT_NODE_ENTRIES, DEFAULT_NODE_BYTES)
    }
}

impl NodeLimits {
    /// Limits of `entries` entries (0: no limit) and `bytes` bytes (0: the largest).
    pub const fn new(entries: u64, bytes: u64) -> NodeLimits {
        NodeLimits { entries: AtomicU64::new(entries), bytes: AtomicU64::new(bytes) }
    }

    /// Entries per node.
    pub fn entries(&self) -> u64 {
        self.entries.load(Ordering::Relaxed)
    }

    /// Bytes per node.
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Sets the entries per node.
    pub fn set_entries(&self, n: u64) {
        self.entries.store(n, Ordering::Relaxed);
    }

    /// Sets the bytes per node.
    pub fn set_bytes(&self, n: u64) {
        self.bytes.store(n, Ordering::Relaxed);
    }
}

/// What a stream operation refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamError {
    /// XADD's id is not above the stream's last id.
    IdNotGreater,
    /// The stream's last id is the greatest: nothing can be added.
    Exhausted,
    /// The entry is too large, or `<ms>-*` has no sequence left.
    TooLarge,
    /// The key holds no stream with the named group.
    NoGroup,
    /// A group of that name exists.
    GroupExists,
    /// XSETID's id is below the last entry.
    SetIdBelowTop,
    /// XSETID's entries_added is below the length.
    EntriesAddedBelowLength,
}

impl std::fmt::Display for StreamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StreamError::IdNotGreater => "the id is not above the stream's last id",
            StreamError::Exhausted => "the stream has used the greatest id",
            StreamError::TooLarge => "the entry is too large",
            StreamError::NoGroup => "no such key or consumer group",
            StreamError::GroupExists => "the consumer group exists",
            StreamError::SetIdBelowTop => "the id is below the stream's last entry",
            StreamError::EntriesAddedBelowLength => "entries_added is below the stream's length",
        })
    }
}

impl From<StreamError> for TypeError {
    fn from(e: StreamError) -> Self {
        TypeError::Stream(e)
    }
}

/// A stream's metadata record, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stream {
    /// Version (the generation of its sub-keys) and expiry.
    pub version: u64,
    /// Expiry (Unix ms, 0: none).
    pub expire_ms: u64,
    /// Number of entries.
    pub length: u64,
    /// The greatest id ever added (or set).
    pub last_id: StreamId,
    /// The first entry's id; 0-0 when empty.
    pub first_id: StreamId,
    /// The greatest id deleted by XDEL (or set).
    pub max_deleted: StreamId,
    /// Entries ever added.
    pub entries_added: u64,
    /// Node records.
    pub nodes: u64,
    /// Group records.
    pub groups: u64,
}

impl Stream {
    /// A new, empty stream at `version`.
    pub fn new(version: u64) -> Stream {
        Stream {
            version,
            expire_ms: 0,
            length: 0,
            last_id: StreamId::MIN,
            first_id: StreamId::MIN,
            max_deleted: StreamId::MIN,
            entries_added: 0,
            nodes: 0,
            groups: 0,
        }
    }

    /// The stream of a metadata record of type stream.
    pub fn from_meta(m: &Meta) -> Result<Stream> {
        let v = &m.value;
        let corrupt = || TypeError::Corrupt("stream metadata".into());
        if v.len() != META_EXTRA_LEN {
            return Err(corrupt());
        }
        let id = |at: usize| StreamId::from_le_bytes(&v[at..at + 16]).ok_or_else(corrupt);
        let num = |at: usize| -> Result<u64> {
            Ok(u64::from_le_bytes(v[at..at + 8].try_into().map_err(|_| corrupt())?))
        };
        Ok(Stream {
            version: m.version,
            expire_ms: m.expire_ms,
            length: m.size,
            last_id: id(0)?,
            first_id: id(16)?,
            max_deleted: id(32)?,
            entries_added: num(48)?,
            nodes: num(56)?,
            groups: num(64)?,
        })
    }

    /// The metadata record.
    pub fn to_meta(&self) -> Meta {
        let mut m = Meta::composite(Kind::Stream, self.version);
        m.expire_ms = self.expire_ms;
        m.size = self.length;
        let mut v = Vec::with_capacity(META_EXTRA_LEN);
        v.extend_from_slice(&self.last_id.to_le_bytes());
        v.extend_from_slice(&self.first_id.to_le_bytes());
        v.extend_from_slice(&self.max_deleted.to_le_bytes());
        v.extend_from_slice(&self.entries_added.to_le_bytes());
        v.extend_from_slice(&self.nodes.to_le_bytes());
        v.extend_from_slice(&self.groups.to_le_bytes());
        m.value = v.into();
        m
    }

    /// Whether an XDEL tombstone lies in `from..=to` (Redis's `streamRangeHasTombstones`):
    /// the greatest deleted id, if after the first entry, is in the range.
    pub fn has_tombstones(&self, from: StreamId, to: StreamId) -> bool {
        if self.length == 0 || self.max_deleted.is_zero() || self.first_id > self.max_deleted {
            return false;
        }
        from <= self.max_deleted && self.max_deleted <= to
    }

    /// The number of entries added up to and including `id`, when it can be known (Redis's
    /// `streamEstimateDistanceFromFirstEverEntry`); `None` when it cannot.
    pub fn entries_read_at(&self, id: StreamId) -> Option<i64> {
        let added = self.entries_added as i64;
        if self.entries_added == 0 {
            return Some(0);
        }
        if (self.length == 0 && id <= self.last_id) || id == self.last_id {
            return Some(added);
        }
        if id > self.last_id {
            return None;
        }
        if self.max_deleted.is_zero() || self.max_deleted < self.first_id {
            if id < self.first_id {
                return Some(added.wrapping_sub(self.length as i64));
            }
            if id == self.first_id {
                return Some(added.wrapping_sub(self.length as i64).wrapping_add(1));
            }
        }
        None
    }

    /// A group's lag: entries added and not yet read by it (`None`: unknown). Negative when
    /// XGROUP set the group's read counter above the stream's, as in Redis.
    pub fn lag(&self, last_delivered: StreamId, entries_read: Option<i64>) -> Option<i64> {
        let added = self.entries_added as i64;
        if self.entries_added == 0 {
            return Some(0);
        }
        if let Some(read) = entries_read {
            if !self.has_tombstones(last_delivered, StreamId::MAX) {
                return Some(added.wrapping_sub(read));
            }
        }
        self.entries_read_at(last_delivered).map(|read| added.wrapping_sub(read))
    }
}

/// The stream at `key`; `None` when absent; `WrongType` for another type.
pub fn load(ks: &Keyspace, key: &[u8]) -> Result<Option<Stream>> {
    ks.typed(key, Kind::Stream)?.map(|m| Stream::from_meta(&m)).transpose()
}

/// Puts the record of `s` for `key` into `b`.
pub fn save(ks: &Keyspace, b: &mut WriteBatch, key: &[u8], s: &Stream) {
    ks.put_meta(b, key, &s.to_meta());
}

/// The field of an entry sub-key.
pub fn entry_field(id: StreamId) -> Vec<u8> {
    tagged_id(TAG_ENTRY, id)
}

/// The field of a node record.
pub fn node_field(master: StreamId) -> Vec<u8> {
    tagged_id(TAG_NODE, master)
}

fn tagged_id(tag: u8, id: StreamId) -> Vec<u8> {
    let mut f = Vec::with_capacity(17);
    f.push(tag);
    f.extend_from_slice(&id.to_be_bytes());
    f
}

/// The field of a group record.
pub fn group_field(group: &[u8]) -> Vec<u8> {
    let mut f = Vec::with_capacity(1 + group.len());
    f.push(TAG_GROUP);
    f.extend_from_slice(group);
    f
}

/// The field prefix of `group`'s records of kind `tag` (PEL, consumers, consumer PELs).
pub fn group_space(tag: u8, group: &[u8]) -> Vec<u8> {
    let mut f = Vec::with_capacity(5 + group.len() + 16);
    f.push(tag);
    f.extend_from_slice(&(group.len() as u32).to_be_bytes());
    f.extend_from_slice(group);
    f
}

/// The field prefix of `consumer`'s PEL index in `group`.
pub fn consumer_pel_space(group: &[u8], consumer: &[u8]) -> Vec<u8> {
    let mut f = group_space(TAG_CONSUMER_PEL, group);
    f.extend_from_slice(&(consumer.len() as u32).to_be_bytes());
    f.extend_from_slice(consumer);
    f
}

/// The smallest byte string above every string that starts with `p` (`None`: no bound).
fn successor(p: &[u8]) -> Option<Vec<u8>> {
    let mut s = p.to_vec();
    while let Some(last) = s.pop() {
        if last < 0xff {
            s.push(last + 1);
            return Some(s);
        }
    }
    None
}

/// The sub-key records of one stream generation, read and written.
pub struct Records<'a, 'k> {
    /// The keyspace.
    pub ks: &'a Keyspace<'k>,
    /// The user key.
    pub key: &'a [u8],
    /// The stream's version.
    pub version: u64,
}

impl Records<'_, '_> {
    /// Reads the record of `field`.
    pub fn get(&self, field: &[u8]) -> Result<Option<Vec<u8>>> {
        self.ks.get_sub(self.key, self.version, field)
    }

    /// Puts the record of `field` into `b`.
    pub fn put(&self, b: &mut WriteBatch, field: &[u8], value: &[u8]) {
        b.put_cf(
            &*self.ks.store.sub_cf,
            subkey::encode(self.ks.store.filing, self.key, self.version, field),
            value,
        );
    }

    /// Puts the deletion of the record of `field` into `b`.
    pub fn delete(&self, b: &mut WriteBatch, field: &[u8]) {
        b.delete_cf(
            &*self.ks.store.sub_cf,
            subkey::encode(self.ks.store.filing, self.key, self.version, field),
        );
    }

    /// Visits the records whose field starts with `space`, in order from the first whose
    /// field is at or above `space + from`, until `f` returns false; `f` gets the field
    /// after `space` and the value.
    pub fn walk(
        &self,
        space: &[u8],
        from: &[u8],
        f: impl FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<()> {
        self.scan(space, from, None, false, f)
    }

    /// Visits the records of `space` in reverse order from the last whose field is below
    /// `space + below` (`None`: the last of all), until `f` returns false.
    pub fn walk_back(
        &self,
        space: &[u8],
        below: Option<&[u8]>,
        f: impl FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<()> {
        self.scan(space, b"", below, true, f)
    }

    fn scan(
        &self,
        space: &[u8],
        from: &[u8],
        below: Option<&[u8]>,
        reverse: bool,
        f: impl FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<()> {
        let mut prefix = subkey::prefix(self.ks.store.filing, self.key, self.version);
        prefix.extend_from_slice(space);
        let upper = match below {
            Some(b) => [&prefix[..], b].concat(),
            None => successor(&prefix).unwrap_or_else(|| {
                subkey::prefix_end(self.ks.store.filing, self.key, self.version)
            }),
        };
        self.ks.store.scan_prefix(&self.ks.store.sub_cf, prefix, upper, from, reverse, f)?;
        Ok(())
    }
}

/// The records of stream `s` at `key`.
pub fn records<'a, 'k>(ks: &'a Keyspace<'k>, key: &'a [u8], s: &Stream) -> Records<'a, 'k> {
    Records { ks, key, version: s.version }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_round_trips() {
        let s = Stream {
            version: 9,
            expire_ms: 77,
            length: 3,
            last_id: StreamId::new(5, 6),
            first_id: StreamId::new(1, 2),
            max_deleted: StreamId::new(3, 4),
            entries_added: 8,
            nodes: 2,
            groups: 1,
        };
        let m = s.to_meta();
        let raw = m.encode();
        assert_eq!(raw.len(), 9 + 16 + META_EXTRA_LEN);
        assert_eq!(raw[0], 6);
        let back = Meta::decode(&raw).unwrap();
        assert_eq!(Stream::from_meta(&back).unwrap(), s);
        assert!(Meta::decode(&raw[..raw.len() - 1]).is_err());
        let mut bad = back.clone();
        bad.value.make_mut().pop();
        assert!(Stream::from_meta(&bad).is_err());
    }

    #[test]
    fn record_spaces_are_ordered_and_apart() {
        assert!(entry_field(StreamId::new(1, 2)) < entry_field(StreamId::new(1, 3)));
        assert!(entry_field(StreamId::MAX) < node_field(StreamId::MIN));
        // One group's records never fall in another's range, whatever the names.
        let a = group_space(TAG_PEL, b"g");
        let b = group_space(TAG_PEL, b"g\x00\x00\x00\x01x");
        assert!(!b.starts_with(&a));
        assert!(group_field(b"a") < group_field(b"ab") && group_field(b"ab") < group_field(b"b"));
        assert_eq!(successor(b"a\xff"), Some(b"b".to_vec()));
        assert_eq!(successor(b"\xff"), None);
    }

    proptest::proptest! {
        /// Every record decoder refuses or reads any bytes, never panics.
        #[test]
        fn decoders_never_panic(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200)) {
            let _ = entries::decode_pairs(&bytes);
            let _ = node::Node::decode(StreamId::MIN, &bytes);
            let _ = group::Nack::decode(&bytes);
            let _ = group::ConsumerRec::decode(&bytes);
            let _ = StreamId::from_be_bytes(&bytes);
            let _ = id::parse(&bytes, id::IdSyntax::LOOSE);
            let _ = id::parse_interval(&bytes, u64::MAX);
            let mut m = Stream::new(1).to_meta();
            m.value = bytes.clone().into();
            let _ = Stream::from_meta(&m);
            let mut raw = vec![6u8];
            raw.extend_from_slice(&bytes);
            let _ = Meta::decode(&raw);
        }
    }

    #[test]
    fn lag_and_read_counters_follow_redis() {
        let mut s = Stream::new(1);
        assert_eq!(s.lag(StreamId::MIN, None), Some(0));
        s.entries_added = 5;
        s.length = 5;
        s.first_id = StreamId::new(1, 0);
        s.last_id = StreamId::new(5, 0);
        assert_eq!(s.lag(StreamId::MIN, None), Some(5));
        assert_eq!(s.lag(StreamId::new(1, 0), Some(1)), Some(4));
        assert_eq!(s.entries_read_at(StreamId::new(3, 0)), None);
        assert_eq!(s.entries_read_at(StreamId::new(1, 0)), Some(1));
        assert_eq!(s.entries_read_at(StreamId::new(9, 0)), None);
        s.max_deleted = StreamId::new(3, 0);
        s.length = 4;
        assert!(s.has_tombstones(StreamId::MIN, StreamId::MAX));
        assert!(!s.has_tombstones(StreamId::new(4, 0), StreamId::MAX));
        assert_eq!(s.lag(StreamId::MIN, None), None);
        assert_eq!(s.lag(StreamId::new(5, 0), None), Some(0));
    }
}
