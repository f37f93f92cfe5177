//! Sub-key encoding: the entries of hashes, sets, lists and sorted sets, in the `subkey`
//! column family (and the score index, [`super::score`], in `zscore`).
//!
//! ```text
//!  +-----------+---------------+-----+---------------+-------+
//!  | slot u16BE | key_len u32BE | key | version u64BE | field |
//!  +-----------+---------------+-----+---------------+-------+
//!  hash:  field = the field name,       value = the field's value
//!  set:   field = the member,           value = empty
//!  list:  field = index u64BE,          value = the element
//!  zset:  field = the member,           value = score (f64 bits, u64LE)
//! ```
//!
//! `slot` is the key's Redis Cluster slot (`crate::slots::key_slot`), first so that the
//! entries of a slot are one key range in every family (the metadata family's keys start with
//! it too: `storage::meta_key`), which is what a cluster node copies, moves or deletes when
//! it hands a partition over. Big-endian length, version and index keep every sub-key of one
//! key generation contiguous and ordered, so `prefix(key, version)` bounds a scan of all of
//! them.

use crate::slots::key_slot;

/// The prefix shared by every sub-key of `key` at `version`.
pub fn prefix(key: &[u8], version: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(14 + key.len() + 16);
    out.extend_from_slice(&key_slot(key).to_be_bytes());
    out.extend_from_slice(&(key.len() as u32).to_be_bytes());
    out.extend_from_slice(key);
    out.extend_from_slice(&version.to_be_bytes());
    out
}

/// The range `[start, end)` holding every sub-key of `key`, of every version (the same
/// bounds hold its score index entries): the slot, the key's length and the key lead them.
pub fn key_range(key: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let mut start = prefix(key, 0);
    start.truncate(start.len() - 8);
    let mut end = start.clone();
    // The last byte below 0xff goes up by one; the bytes after it (all 0xff) go.
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return (start, end);
        }
    }
    // Unreachable for a real key (the slot's first byte is below 0x40); the widest bound.
    let n = start.len() + 1;
    (start, vec![0xff; n])
}

/// The length of `prefix(key, _)`.
pub fn prefix_len(key: &[u8]) -> usize {
    2 + 4 + key.len() + 8
}

/// The exclusive upper bound of `prefix(key, version)`'s range.
pub fn prefix_end(key: &[u8], version: u64) -> Vec<u8> {
    prefix(key, version.wrapping_add(1))
}

/// The sub-key of `field` of `key` at `version`.
pub fn encode(key: &[u8], version: u64, field: &[u8]) -> Vec<u8> {
    let mut out = prefix(key, version);
    out.extend_from_slice(field);
    out
}

/// Splits a sub-key into (user key, version, field); `None` if it is malformed (the slot is
/// not checked against the key's: see `crate::slots::filed_slot`).
pub fn decode(sub: &[u8]) -> Option<(&[u8], u64, &[u8])> {
    let len = u32::from_be_bytes(sub.get(2..6)?.try_into().ok()?) as usize;
    let key = sub.get(6..6usize.checked_add(len)?)?;
    let vstart = 6 + len;
    let version = u64::from_be_bytes(sub.get(vstart..vstart + 8)?.try_into().ok()?);
    Some((key, version, &sub[vstart + 8..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_order() {
        let a = encode(b"k", 5, b"f");
        assert_eq!(decode(&a), Some((&b"k"[..], 5, &b"f"[..])));
        assert!(prefix(b"k", 5) < a && a < prefix_end(b"k", 5));
        assert_eq!(prefix_len(b"k"), prefix(b"k", 5).len());
        // A key that extends another never falls inside its range.
        let b = encode(b"kk", 5, b"");
        assert!(!(b >= prefix(b"k", 5) && b < prefix_end(b"k", 5)));
        assert_eq!(decode(b"\0\0\0\0\0\x09k"), None);
        assert_eq!(decode(b"\0"), None);
    }

    #[test]
    fn entries_are_filed_under_their_keys_slot() {
        // Keys of one hash tag share a slot, so their entries sit in one slot's range.
        for key in [&b"k"[..], b"{user1000}.following", b"{user1000}.followers", b""] {
            let e = encode(key, 7, b"f");
            assert_eq!(crate::slots::filed_slot(&e), Some(key_slot(key)));
            assert_eq!(decode(&e).map(|(k, _, _)| k), Some(key));
        }
        // Order is by slot first: a key of a lower slot sorts first whatever its bytes.
        let (a, b) = (&b"a"[..], &b"b"[..]);
        let (lo, hi) = if key_slot(a) < key_slot(b) { (a, b) } else { (b, a) };
        assert!(encode(lo, u64::MAX, b"\xff") < encode(hi, 0, b""));
    }
}
