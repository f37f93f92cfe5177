//! Sub-key encoding: the entries of hashes, sets, lists and sorted sets, in the `subkey`
//! column family (and the score index, [`super::score`], in `zscore`).
//!
//! ```text
//!  +------+---------------+-----+---------------+-------+
//!  | lead | key_len u32BE | key | version u64BE | field |
//!  +------+---------------+-----+---------------+-------+
//!  lead:  slot u16BE, or in cluster mode partition u16BE | slot u16BE (`crate::filing`)
//!  hash:  field = the field name,       value = the field's value
//!  set:   field = the member,           value = empty
//!  list:  field = index u64BE,          value = the element
//!  zset:  field = the member,           value = score (f64 bits, u64LE)
//! ```
//!
//! `slot` is the key's Redis Cluster slot (`crate::slots::key_slot`), first (after the
//! partition in cluster mode) so that the entries of a slot are one key range in every
//! family (the metadata family's keys lead with it too: `storage::meta_key`), which is what
//! a cluster node copies, moves or deletes when it hands a slot or a partition over. Big-endian length, version and index keep every sub-key of one
//! key generation contiguous and ordered, so `prefix(key, version)` bounds a scan of all of
//! them.

use crate::filing::Filing;

/// The prefix shared by every sub-key of `key` at `version`, filed as `f` files keys.
pub fn prefix(f: Filing, key: &[u8], version: u64) -> Vec<u8> {
    prefix_with_room(f, key, version, 16)
}

/// [`prefix`] in a buffer with `room` bytes to spare after it: a caller appending a field of
/// known length allocates once.
pub fn prefix_with_room(f: Filing, key: &[u8], version: u64, room: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(f.len() + 12 + key.len() + room);
    f.lead(key, &mut out);
    out.extend_from_slice(&(key.len() as u32).to_be_bytes());
    out.extend_from_slice(key);
    out.extend_from_slice(&version.to_be_bytes());
    out
}

/// The range `[start, end)` holding every sub-key of `key`, of every version (the same
/// bounds hold its score index entries): the lead, the key's length and the key lead them.
pub fn key_range(f: Filing, key: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let mut start = prefix(f, key, 0);
    start.truncate(start.len() - 8);
    let mut end = start.clone();
    // The last byte below 0xff goes up by one; the bytes after it (all 0xff) go.
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return (start, end);
        }
    }
    // Unreachable for a real key (the lead's first byte is below 0x40, or NOWHERE's 0xff
    // followed by a slot's); the widest bound.
    let n = start.len() + 1;
    (start, vec![0xff; n])
}

/// The length of `prefix(f, key, _)`.
pub fn prefix_len(f: Filing, key: &[u8]) -> usize {
    f.len() + 4 + key.len() + 8
}

/// The exclusive upper bound of `prefix(f, key, version)`'s range.
pub fn prefix_end(f: Filing, key: &[u8], version: u64) -> Vec<u8> {
    prefix(f, key, version.wrapping_add(1))
}

/// The sub-key of `field` of `key` at `version`.
pub fn encode(f: Filing, key: &[u8], version: u64, field: &[u8]) -> Vec<u8> {
    let mut out = prefix_with_room(f, key, version, field.len());
    out.extend_from_slice(field);
    out
}

/// A sub-key's parts ([`decode`]).
#[derive(Debug, PartialEq, Eq)]
pub struct Parts<'a> {
    /// The lead (`crate::filing`).
    pub lead: &'a [u8],
    /// The user key.
    pub key: &'a [u8],
    /// The key's generation.
    pub version: u64,
    /// The field (member, element index...).
    pub field: &'a [u8],
}

/// Splits a sub-key filed with a lead of `f`'s length into its [`Parts`]; `None` if it is
/// malformed (the slot is not checked against the key's).
pub fn decode(f: Filing, sub: &[u8]) -> Option<Parts<'_>> {
    let at = f.len();
    let len = u32::from_be_bytes(sub.get(at..at + 4)?.try_into().ok()?) as usize;
    let kstart = at + 4;
    let key = sub.get(kstart..kstart.checked_add(len)?)?;
    let vstart = kstart + len;
    let version = u64::from_be_bytes(sub.get(vstart..vstart + 8)?.try_into().ok()?);
    Some(Parts { lead: &sub[..at], key, version, field: &sub[vstart + 8..] })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slots::key_slot;

    const S: Filing = Filing::Slot;

    #[test]
    fn round_trip_and_order() {
        for f in [S, Filing::Partition(3)] {
            let a = encode(f, b"k", 5, b"f");
            let lead = &a[..f.len()];
            let parts = Parts { lead, key: b"k", version: 5, field: b"f" };
            assert_eq!(decode(f, &a), Some(parts));
            assert!(prefix(f, b"k", 5) < a && a < prefix_end(f, b"k", 5));
            assert_eq!(prefix_len(f, b"k"), prefix(f, b"k", 5).len());
            // A key that extends another never falls inside its range.
            let b = encode(f, b"kk", 5, b"");
            assert!(!(b >= prefix(f, b"k", 5) && b < prefix_end(f, b"k", 5)));
        }
        assert_eq!(decode(S, b"\0\0\0\0\0\x09k"), None);
        assert_eq!(decode(S, b"\0"), None);
    }

    #[test]
    fn entries_are_filed_under_their_keys_slot_and_partition() {
        // Keys of one hash tag share a slot, so their entries sit in one slot's range.
        for key in [&b"k"[..], b"{user1000}.following", b"{user1000}.followers", b""] {
            for f in [S, Filing::Partition(9)] {
                let e = encode(f, key, 7, b"f");
                assert_eq!(f.slot_of(&e), Some(key_slot(key)));
                assert_eq!(decode(f, &e).map(|p| p.key), Some(key));
            }
            let e = encode(Filing::Partition(9), key, 7, b"f");
            assert_eq!(Filing::partition_of(&e), Some(9));
        }
        // Order is by slot first: a key of a lower slot sorts first whatever its bytes.
        let (a, b) = (&b"a"[..], &b"b"[..]);
        let (lo, hi) = if key_slot(a) < key_slot(b) { (a, b) } else { (b, a) };
        assert!(encode(S, lo, u64::MAX, b"\xff") < encode(S, hi, 0, b""));
        // And in cluster mode by partition before that.
        assert!(
            encode(Filing::Partition(1), hi, 0, b"") < encode(Filing::Partition(2), lo, 0, b"")
        );
    }
}
