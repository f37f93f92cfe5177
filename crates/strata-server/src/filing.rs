//! Where a stored key is filed: the bytes that lead every key of the three data families
//! (`storage`), before the user key (metadata) or its length (sub-keys, score index).
//!
//! ```text
//!  standalone:    slot u16BE | ...
//!  cluster mode:  partition u16BE | slot u16BE | ...
//! ```
//!
//! A standalone server files a key under its Redis Cluster slot (`crate::slots`). A cluster
//! node keeps every replica it holds in its one store, so it files a key under the partition
//! (Raft group) that wrote it as well: the records of two partitions never share a byte, even
//! for one slot, which is what lets a slot move between two partitions that have replicas on
//! the same node (each partition's log writes, snapshots and deletes its own prefix only).
//! A partition's records are then one key range per family, `[p BE, p+1 BE)`
//! ([`Filing::span`]); a run of its slots is one range inside it ([`Filing::slot_span`]).
//!
//! Partitions are below 16384, so [`NOWHERE`] names none: a cluster node's command that has no
//! partition (a keyspace-wide walk) reads nothing there, and a write filed there is refused
//! (no group has it), never written into some partition.

use crate::slots::key_slot;

/// The partition no group has: what a cluster node's store files a key under when no
/// partition was chosen for it.
pub const NOWHERE: u16 = u16::MAX;

/// How one view of a store files its keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Filing {
    /// A standalone server's: `slot | ...`.
    Slot,
    /// Partition `p`'s on a cluster node: `p | slot | ...`.
    Partition(u16),
    /// Every partition of a cluster node's store at once, for walks (SCAN, DBSIZE, the
    /// expiry task): its stored keys lead with a partition as [`Filing::Partition`]'s; the
    /// keys it builds are filed under [`NOWHERE`].
    AllPartitions,
}

impl Filing {
    /// The bytes of the lead.
    pub fn len(self) -> usize {
        match self {
            Filing::Slot => 2,
            Filing::Partition(_) | Filing::AllPartitions => 4,
        }
    }

    /// Never empty (for clippy's `len_without_is_empty`).
    pub fn is_empty(self) -> bool {
        false
    }

    /// The partition its keys are built under (`None` standalone).
    fn partition(self) -> Option<u16> {
        match self {
            Filing::Slot => None,
            Filing::Partition(p) => Some(p),
            Filing::AllPartitions => Some(NOWHERE),
        }
    }

    /// Appends the lead of user key `key` to `out`.
    pub fn lead(self, key: &[u8], out: &mut Vec<u8>) {
        self.lead_slot(key_slot(key), out);
    }

    /// Appends the lead of slot `slot`.
    fn lead_slot(self, slot: u16, out: &mut Vec<u8>) {
        if let Some(p) = self.partition() {
            out.extend_from_slice(&p.to_be_bytes());
        }
        out.extend_from_slice(&slot.to_be_bytes());
    }

    /// The slot a stored key is filed under; `None` when it is shorter than a lead.
    pub fn slot_of(self, stored: &[u8]) -> Option<u16> {
        let at = self.len() - 2;
        Some(u16::from_be_bytes(stored.get(at..at + 2)?.try_into().ok()?))
    }

    /// The rest of a stored key after its lead; `None` when it is shorter than one.
    pub fn strip(self, stored: &[u8]) -> Option<&[u8]> {
        stored.get(self.len()..)
    }

    /// The key range `[start, end)` of every key this view holds: all of them standalone
    /// (slots are below 2^14, so `0x40 00` is past them), the partition's prefix, or every
    /// partition's.
    pub fn span(self) -> (Vec<u8>, Vec<u8>) {
        match self {
            Filing::Slot | Filing::AllPartitions => (Vec::new(), vec![0x40, 0]),
            Filing::Partition(p) => {
                // Whole leads (partition and slot 0), as a partition's keys have.
                let end = (u32::from(p) + 1) as u16;
                let lead = |q: u16| [q.to_be_bytes(), [0, 0]].concat();
                (lead(p), lead(end))
            }
        }
    }

    /// The key range `[start, end)` of the keys this view files under slots `first..=last`
    /// (below 16384); for [`Filing::AllPartitions`], an empty range (its keys are not one
    /// range per slot).
    pub fn slot_span(self, first: u16, last: u16) -> (Vec<u8>, Vec<u8>) {
        if self == Filing::AllPartitions {
            return (Vec::new(), Vec::new());
        }
        let (mut start, mut end) = (Vec::with_capacity(4), Vec::with_capacity(4));
        self.lead_slot(first, &mut start);
        // One past the last slot's keys: the next slot (below 2^14, so no carry).
        self.lead_slot(last + 1, &mut end);
        (start, end)
    }

    /// The partition of a cluster node's stored key (its first two bytes); `None` for a
    /// key shorter than that.
    pub fn partition_of(stored: &[u8]) -> Option<u16> {
        Some(u16::from_be_bytes(stored.get(..2)?.try_into().ok()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn led(f: Filing, key: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        f.lead(key, &mut out);
        out.extend_from_slice(key);
        out
    }

    #[test]
    fn leads_name_the_slot_and_in_cluster_mode_the_partition() {
        // `foo` is in slot 12182 (0x2f96).
        assert_eq!(led(Filing::Slot, b"foo"), b"\x2f\x96foo");
        assert_eq!(led(Filing::Partition(7), b"foo"), b"\x00\x07\x2f\x96foo");
        assert_eq!(led(Filing::AllPartitions, b"foo"), b"\xff\xff\x2f\x96foo");
        for f in [Filing::Slot, Filing::Partition(7)] {
            let k = led(f, b"foo");
            assert_eq!(f.slot_of(&k), Some(12182));
            assert_eq!(f.strip(&k), Some(&b"foo"[..]));
        }
        assert_eq!(Filing::Partition(7).slot_of(b"\x00\x07\x2f"), None);
        assert_eq!(Filing::partition_of(b"\x00\x07\x2f\x96foo"), Some(7));
    }

    #[test]
    fn spans_hold_exactly_their_keys() {
        let inside = |f: Filing, k: &[u8]| {
            let (s, e) = f.span();
            k >= &s[..] && k < &e[..]
        };
        let k7 = led(Filing::Partition(7), b"foo");
        assert!(inside(Filing::Partition(7), &k7));
        assert!(!inside(Filing::Partition(6), &k7) && !inside(Filing::Partition(8), &k7));
        assert!(inside(Filing::AllPartitions, &k7));
        assert!(inside(Filing::Slot, &led(Filing::Slot, b"foo")));
        // The last partition's span ends where NOWHERE's keys start... and before them.
        let (_, end) = Filing::Partition(16383).span();
        assert!(led(Filing::AllPartitions, b"x") >= end);
        let (s, e) = Filing::Partition(7).slot_span(12182, 12182);
        assert!(k7 >= s && k7 < e);
        let (s, e) = Filing::Partition(7).slot_span(0, 12181);
        assert!(k7 >= e && s == b"\x00\x07\x00\x00");
        let (s, e) = Filing::Slot.slot_span(16383, 16383);
        assert_eq!((s, e), (vec![0x3f, 0xff], vec![0x40, 0]));
    }
}
