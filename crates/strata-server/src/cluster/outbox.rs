//! The outbox of a slot being copied: while a slot is `copying` in its source partition S
//! (`super::ownership`), every entry of S's log that writes the slot also records what it
//! wrote to it here, in the same engine batch as the data and under the entry's log index.
//! So the record is part of S's replicated state: every replica of S writes the same one, it
//! survives leader changes, log purges and snapshot installs (it is in S's snapshot ranges,
//! [`range_of`]), and the controller pages it from whichever replica leads S.
//!
//! ```text
//!  record (server family):  "outbox\0" | partition u16BE | slot u16BE | log index u64BE
//!                           -> change*  (storage::moving::encode_changes)
//!  change:  kind u8 (1 put, 2 delete, 3 delete range) | family u8 (0 metadata, 1 subkey,
//!           2 zscore) | key len u32LE | key | value len u32LE | value
//!           key: after the partition (slot u16BE | the rest); a range deletion's end is its
//!           value, clipped to the slot
//! ```
//!
//! Why this makes a live copy exact: the outbox starts at the `copy` entry, so every write
//! to the slot after it is here, in commit order, and every write before it is in the
//! engine state a bulk page reads afterwards. The target takes the bulk pages (each read at
//! some state after the `copy`), then replays the outbox from its start in order: a key the
//! outbox touches ends with its last change, whatever the bulk page held, and a key it does
//! not touch has the value every bulk read saw. The records go when the slot is copied
//! again (`copy` restarts the outbox) or released.

use strata::{WriteBatch, WriteBatchIteratorCf};

use crate::filing::Filing;
use crate::storage::moving::{decode_changes, Change, MoveError, PAGE_BYTES};
use crate::storage::Store;

/// The records' key prefix in the server family.
const PREFIX: &[u8] = b"outbox\0";

/// The record of the changes entry `index` made to `slot` in `partition`.
pub fn key(partition: u16, slot: u16, index: u64) -> Vec<u8> {
    let mut k = PREFIX.to_vec();
    k.extend_from_slice(&partition.to_be_bytes());
    k.extend_from_slice(&slot.to_be_bytes());
    k.extend_from_slice(&index.to_be_bytes());
    k
}

/// The server family's range of `partition`'s outbox records (part of its snapshots).
pub fn range_of(partition: u16) -> (Vec<u8>, Vec<u8>) {
    let start = [PREFIX, &partition.to_be_bytes()].concat();
    let end = match partition.checked_add(1) {
        Some(next) => [PREFIX, &next.to_be_bytes()].concat(),
        None => b"outbox\x01".to_vec(),
    };
    (start, end)
}

/// The range of `slot`'s records in `partition`'s outbox.
pub fn slot_range(partition: u16, slot: u16) -> (Vec<u8>, Vec<u8>) {
    // Slots are below 2^14: the next one never carries into the partition.
    let lead = |s: u16| [PREFIX, &partition.to_be_bytes(), &s.to_be_bytes()].concat();
    (lead(slot), lead(slot + 1))
}

/// What an entry's batch `b` (records in the proposer's families `theirs`: metadata,
/// subkey, zscore) writes to the slots in `copying` of `partition`: per slot written, its
/// changes in the batch's order.
pub fn collect(
    b: &WriteBatch,
    theirs: &[u32; 3],
    partition: u16,
    copying: &[u16],
) -> Vec<(u16, Vec<Change>)> {
    struct Sorter<'a> {
        theirs: &'a [u32; 3],
        filing: Filing,
        copying: &'a [u16],
        out: Vec<(u16, Vec<Change>)>,
    }
    impl Sorter<'_> {
        fn family(&self, cf: u32) -> Option<u8> {
            self.theirs.iter().position(|t| *t == cf).map(|i| i as u8)
        }
        fn push(&mut self, slot: u16, c: Change) {
            match self.out.iter_mut().find(|(s, _)| *s == slot) {
                Some((_, v)) => v.push(c),
                None => self.out.push((slot, vec![c])),
            }
        }
        fn key(&mut self, cf: u32, key: &[u8], change: impl FnOnce(u8, Vec<u8>) -> Change) {
            let (Some(family), Some(slot)) = (self.family(cf), self.filing.slot_of(key)) else {
                return;
            };
            if self.copying.contains(&slot) {
                self.push(slot, change(family, key[2..].to_vec()));
            }
        }
    }
    impl WriteBatchIteratorCf for Sorter<'_> {
        fn put_cf(&mut self, cf: u32, key: &[u8], value: &[u8]) {
            self.key(cf, key, |family, key| Change::Put { family, key, value: value.to_vec() });
        }
        fn delete_cf(&mut self, cf: u32, key: &[u8]) {
            self.key(cf, key, |family, key| Change::Delete { family, key });
        }
        fn merge_cf(&mut self, _: u32, _: &[u8], _: &[u8]) {
            // The server writes no merge operands; apply refuses none, so none is lost
            // here either way (`apply` checks every key before this runs).
        }
        fn delete_range_cf(&mut self, cf: u32, begin: &[u8], end: &[u8]) {
            let Some(family) = self.family(cf) else { return };
            for i in 0..self.copying.len() {
                let slot = self.copying[i];
                let (lo, hi) = self.filing.slot_span(slot, slot);
                let (start, end) = (begin.max(&lo[..]), end.min(&hi[..]));
                if start < end {
                    let c = Change::DeleteRange {
                        family,
                        start: start[2..].to_vec(),
                        end: end[2..].to_vec(),
                    };
                    self.push(slot, c);
                }
            }
        }
    }
    let mut s = Sorter { theirs, filing: Filing::Partition(partition), copying, out: Vec::new() };
    b.iterate_cf(&mut s);
    s.out
}

/// The outbox of `slot` in `partition` after log index `after`: whole entries, in log
/// order, until at least `count` changes, or fewer entries when the next would take the
/// page's records past `storage::moving::PAGE_BYTES` (a page is one entry of the target's
/// log); the last index read (`after` when none) and the changes.
pub fn page(
    store: &Store,
    partition: u16,
    slot: u16,
    after: u64,
    count: usize,
) -> Result<(u64, Vec<Change>), MoveError> {
    let (_, end) = slot_range(partition, slot);
    let mut it = store.db.raw_iterator_cf(&*store.server_cf);
    it.seek(key(partition, slot, after.saturating_add(1)));
    let (mut last, mut out, mut bytes) = (after, Vec::new(), 0usize);
    while let (Some(k), Some(v)) = (it.key(), it.value()) {
        if k >= &end[..] || out.len() >= count || (!out.is_empty() && bytes + v.len() > PAGE_BYTES)
        {
            break;
        }
        bytes += v.len();
        let index = k.get(PREFIX.len() + 4..).and_then(|i| <[u8; 8]>::try_from(i).ok());
        let index = index.map(u64::from_be_bytes).ok_or_else(|| {
            MoveError::Invalid(format!("an outbox record key of {} bytes, expected 19", k.len()))
        })?;
        out.extend(decode_changes(v)?);
        last = index;
        it.next();
    }
    it.status().map_err(MoveError::Engine)?;
    Ok((last, out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(p: u16, slot: u16, rest: &[u8]) -> Vec<u8> {
        [&p.to_be_bytes()[..], &slot.to_be_bytes(), rest].concat()
    }

    #[test]
    fn an_entry_is_sorted_by_copying_slot_and_a_range_deletion_is_clipped_to_each() {
        let (_dir, st) = crate::cluster::testing::store();
        let theirs = [st.meta_cf.id(), st.sub_cf.id(), st.score_cf.id()];
        let p = 3u16;
        let after = |slot: u16, rest: &[u8]| stored(p, slot, rest)[2..].to_vec();
        let mut b = WriteBatch::new();
        b.put_cf(&*st.meta_cf, stored(p, 5, b"a"), b"1");
        b.put_cf(&*st.sub_cf, stored(p, 6, b"not copying"), b"x");
        b.delete_cf(&*st.score_cf, stored(p, 9, b"z"));
        b.put_cf(&*st.server_cf, stored(p, 5, b"not a data family"), b"x");
        // FLUSHALL's deletion of the whole partition reaches both copying slots.
        b.delete_range_cf(&*st.meta_cf, stored(p, 0, b""), stored(p + 1, 0, b""));
        let out = collect(&b, &theirs, p, &[5, 9]);
        let of = |s: u16| out.iter().find(|(x, _)| *x == s).map(|(_, v)| v.clone()).unwrap();
        assert_eq!(out.len(), 2);
        let whole = Change::DeleteRange { family: 0, start: after(5, b""), end: after(6, b"") };
        assert_eq!(
            of(5),
            vec![Change::Put { family: 0, key: after(5, b"a"), value: b"1".to_vec() }, whole]
        );
        assert_eq!(of(9)[0], Change::Delete { family: 2, key: after(9, b"z") });
        assert_eq!(of(9).len(), 2);
        // A range within one slot stays as it is; one ending where a slot starts is not its.
        let mut b = WriteBatch::new();
        b.delete_range_cf(&*st.sub_cf, stored(p, 9, b"b"), stored(p, 9, b"d"));
        b.delete_range_cf(&*st.sub_cf, stored(p, 1, b""), stored(p, 5, b""));
        let out = collect(&b, &theirs, p, &[5, 9]);
        let within = Change::DeleteRange { family: 1, start: after(9, b"b"), end: after(9, b"d") };
        assert_eq!(out, vec![(9, vec![within])]);
        // Another partition's keys are not this one's (apply refuses them before this).
        let mut b = WriteBatch::new();
        b.put_cf(&*st.meta_cf, stored(p, 5, b"a"), b"1");
        assert_eq!(collect(&b, &theirs, p, &[]), Vec::new());
    }

    #[test]
    fn changes_round_trip_and_a_damaged_record_names_its_offset() {
        let changes = vec![
            Change::Put { family: 2, key: b"\0\x05k".to_vec(), value: vec![0; 300] },
            Change::Delete { family: 1, key: b"\0\x05kk".to_vec() },
            Change::DeleteRange { family: 0, start: b"\0\x05".to_vec(), end: b"\0\x06".to_vec() },
        ];
        let bytes = crate::storage::moving::encode_changes(&changes);
        assert_eq!(decode_changes(&bytes).unwrap(), changes);
        let e = decode_changes(&bytes[..bytes.len() - 1]).unwrap_err().to_string();
        assert!(e.contains("change at byte 327") && e.contains("longer than the record"), "{e}");
        let mut bad = bytes.clone();
        bad[0] = 7;
        let e = decode_changes(&bad).unwrap_err().to_string();
        assert!(e.contains("change at byte 0") && e.contains("change kind 7"), "{e}");
        assert_eq!(decode_changes(&[]).unwrap(), Vec::new());
    }

    #[test]
    fn a_page_stops_before_an_entry_that_would_take_it_past_the_page_bytes() {
        let (_dir, st) = crate::cluster::testing::store();
        let (p, slot) = (2u16, 40u16);
        let big = |b: u8| Change::Put {
            family: 0,
            key: [&slot.to_be_bytes()[..], b"k"].concat(),
            value: vec![b; PAGE_BYTES / 2 + 1],
        };
        let mut b = WriteBatch::new();
        for (index, fill) in [(5u64, b'a'), (6, b'b'), (9, b'c')] {
            let v = crate::storage::moving::encode_changes(&[big(fill)]);
            b.put_cf(&*st.server_cf, key(p, slot, index), v);
        }
        st.db.write(b).unwrap();
        // Each entry is over half the page: one per page, however many changes are asked.
        let (last, changes) = page(&st, p, slot, 0, 1000).unwrap();
        assert_eq!((last, changes), (5, vec![big(b'a')]));
        assert_eq!(page(&st, p, slot, 5, 1000).unwrap(), (6, vec![big(b'b')]));
        assert_eq!(page(&st, p, slot, 6, 1000).unwrap(), (9, vec![big(b'c')]));
        assert_eq!(page(&st, p, slot, 9, 1000).unwrap(), (9, Vec::new()));
    }

    #[test]
    fn keys_sort_by_partition_slot_and_index() {
        assert!(key(1, 5, 9) < key(1, 5, 10) && key(1, 5, u64::MAX) < key(1, 6, 0));
        let (lo, hi) = slot_range(1, 5);
        assert!(key(1, 5, 0) >= lo && key(1, 5, u64::MAX) < hi && key(1, 6, 0) >= hi);
        let (lo, hi) = range_of(1);
        assert!(key(1, 0, 0) >= lo && key(1, 16383, u64::MAX) < hi && key(2, 0, 0) >= hi);
        assert!(key(u16::MAX, 16383, 1) < range_of(u16::MAX).1);
    }
}
