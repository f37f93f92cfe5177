//! Range tombstones: `delete_range(start, end)` deletes every key in `[start, end)` (user keys,
//! in the family's order, `crate::comparator`) whose sequence number is below the tombstone's.
//!
//! Tombstones are kept apart from point entries: in a side list of each memtable, and in the
//! `strata.rangedel` meta block of each table (encoding in `docs/format/sstable.md`):
//!
//! ```text
//! rangedel block = count: varint64 | tombstone*
//! tombstone      = start: varint64 length | bytes | end: varint64 length | bytes | seq: varint64
//! ```
//! Tombstones in the block are sorted by start ascending (in the family's order), then seq
//! descending; every one has `start < end`. on-disk: never change.
//!
//! Reads use a [`FragmentedTombstones`]: the tombstones cut at every start and end into
//! non-overlapping fragments, each listing the sequence numbers of the tombstones covering it,
//! newest first, with the source (memtable, table, level) each came from. Queries are a binary
//! search for the fragment of a key, then a scan of its (short) sequence list.
//!
//! Who uses what:
//! - `get` (`db/read.rs`): per source, newest first, the covering seq raises a floor below
//!   which entries are deleted; once a tombstone covers the key, older sources cannot hold a
//!   newer entry (LSM order), so the lookup ends there.
//! - DB iterator (`iterator/db_iter.rs`): an entry covered by a tombstone of a newer source
//!   makes its child jump to the fragment's end (or before its start going backward);
//!   entries covered by tombstones of their own source are skipped one by one.
//! - flush and compaction (`compaction/stream.rs`, `compaction/job.rs`): entries covered in
//!   their own snapshot stripe are dropped; tombstones are written clipped to each output's
//!   key range, and dropped at the bottom when no snapshot predates them.
//!
//! A table's largest key covers its tombstones' ends with an exclusive bound
//! ([`crate::key::range_end_bound`]), so neighbouring tables of a level may meet at a
//! tombstone end without overlapping.

use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};

use crate::comparator::KeyOrder;
use crate::error::{Error, Result};
use crate::types::SeqNo;
use crate::util::coding::{put_length_prefixed, put_varint64, Reader};

/// One `delete_range`: user keys in `[start, end)` older than `seq` are deleted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RangeTombstone {
    pub start: Vec<u8>,
    pub end: Vec<u8>,
    pub seq: SeqNo,
}

impl RangeTombstone {
    pub fn new(start: &[u8], end: &[u8], seq: SeqNo) -> Self {
        RangeTombstone { start: start.to_vec(), end: end.to_vec(), seq }
    }

    /// This tombstone restricted to `[lo, hi)` (`None` = unbounded) in `order`, or `None`
    /// when nothing is left.
    pub fn clipped(
        &self,
        lo: Option<&[u8]>,
        hi: Option<&[u8]>,
        order: &KeyOrder,
    ) -> Option<RangeTombstone> {
        let start = match lo {
            Some(l) if order.lt(&self.start, l) => l,
            _ => &self.start,
        };
        let end = match hi {
            Some(h) if order.lt(h, &self.end) => h,
            _ => &self.end,
        };
        order.lt(start, end).then(|| RangeTombstone::new(start, end, self.seq))
    }
}

/// Sorts tombstones into the on-disk order: start ascending in `order`, seq descending.
pub(crate) fn sort_tombstones(ts: &mut [RangeTombstone], order: &KeyOrder) {
    ts.sort_by(|a, b| {
        order
            .compare(&a.start, &b.start)
            .then(b.seq.cmp(&a.seq))
            .then(order.compare(&a.end, &b.end))
    });
}

/// Encodes the `strata.rangedel` block (the input must be sorted by [`sort_tombstones`]).
pub(crate) fn encode_block(ts: &[RangeTombstone]) -> Vec<u8> {
    let mut out = Vec::new();
    put_varint64(&mut out, ts.len() as u64);
    for t in ts {
        put_length_prefixed(&mut out, &t.start);
        put_length_prefixed(&mut out, &t.end);
        put_varint64(&mut out, t.seq.0);
    }
    out
}

/// Decodes a `strata.rangedel` block read at file `offset` of a table in `order` (errors
/// carry an empty path).
pub(crate) fn decode_block(
    data: &[u8],
    offset: u64,
    order: &KeyOrder,
) -> Result<Vec<RangeTombstone>> {
    let bad = |reason: String| Error::corruption("", offset, reason);
    let mut r = Reader::new(data);
    let Some(n) = r.varint64() else { return Err(bad("bad range tombstone count".into())) };
    // Each tombstone takes at least 3 bytes: a bound on the allocation.
    if n > data.len() as u64 {
        return Err(bad(format!("range tombstone count {n} exceeds the block")));
    }
    let mut out = Vec::with_capacity(n as usize);
    for i in 0..n {
        let t = r.length_prefixed().and_then(|s| {
            let e = r.length_prefixed()?;
            let seq = r.varint64()?;
            Some(RangeTombstone::new(s, e, SeqNo(seq)))
        });
        let Some(t) = t else { return Err(bad(format!("bad range tombstone {i}"))) };
        if !order.lt(&t.start, &t.end) || t.seq > SeqNo::MAX {
            return Err(bad(format!("range tombstone {i} is empty or has a bad sequence")));
        }
        out.push(t);
    }
    if !r.is_empty() {
        return Err(bad("trailing bytes after range tombstones".into()));
    }
    Ok(out)
}

/// A piece of the key space `[start, end)` covered by the same set of tombstones.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Fragment {
    pub start: Vec<u8>,
    pub end: Vec<u8>,
    /// (seq, source) of every tombstone covering the fragment, seq descending.
    pub seqs: Vec<(SeqNo, u32)>,
}

impl Fragment {
    /// The newest tombstone seq visible at `read_seq`, with its source.
    #[inline]
    pub fn newest_visible(&self, read_seq: SeqNo) -> Option<(SeqNo, u32)> {
        self.seqs.iter().copied().find(|&(s, _)| s <= read_seq)
    }
}

/// Non-overlapping fragments sorted by start, in the order of their keys.
#[derive(Clone, Debug, Default)]
pub(crate) struct FragmentedTombstones {
    fragments: Vec<Fragment>,
    order: KeyOrder,
}

impl FragmentedTombstones {
    /// Fragments `(tombstone, source)` pairs of keys in `order`; empty tombstones are ignored.
    pub fn new(mut input: Vec<(RangeTombstone, u32)>, order: &KeyOrder) -> Self {
        input.retain(|(t, _)| order.lt(&t.start, &t.end));
        input.sort_by(|a, b| order.compare(&a.0.start, &b.0.start));
        let mut bounds: Vec<&[u8]> = Vec::with_capacity(input.len() * 2);
        for (t, _) in &input {
            bounds.push(&t.start);
            bounds.push(&t.end);
        }
        bounds.sort_unstable_by(|a, b| order.compare(a, b));
        bounds.dedup();
        let mut fragments = Vec::new();
        // Tombstones whose start has been passed: (end, seq, source).
        let mut active: Vec<(&[u8], SeqNo, u32)> = Vec::new();
        let mut next = 0;
        for w in bounds.windows(2) {
            let (lo, hi) = (w[0], w[1]);
            while next < input.len() && order.le(&input[next].0.start, lo) {
                let (t, src) = &input[next];
                active.push((&t.end, t.seq, *src));
                next += 1;
            }
            active.retain(|&(end, _, _)| order.lt(lo, end));
            if active.is_empty() {
                continue;
            }
            let mut seqs: Vec<(SeqNo, u32)> = active.iter().map(|&(_, s, src)| (s, src)).collect();
            seqs.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
            seqs.dedup();
            // Neighbours with the same tombstones become one fragment.
            if let Some(last) = fragments.last_mut() {
                let last: &mut Fragment = last;
                if last.end.as_slice() == lo && last.seqs == seqs {
                    last.end = hi.to_vec();
                    continue;
                }
            }
            fragments.push(Fragment { start: lo.to_vec(), end: hi.to_vec(), seqs });
        }
        FragmentedTombstones { fragments, order: order.clone() }
    }

    /// Fragments tombstones of one source.
    pub fn from_tombstones(ts: &[RangeTombstone], source: u32, order: &KeyOrder) -> Self {
        Self::new(ts.iter().map(|t| (t.clone(), source)).collect(), order)
    }

    pub fn is_empty(&self) -> bool {
        self.fragments.is_empty()
    }

    /// The fragments, by start.
    pub fn fragments(&self) -> &[Fragment] {
        &self.fragments
    }

    /// The fragment containing `ukey`.
    #[inline]
    pub fn fragment_for(&self, ukey: &[u8]) -> Option<&Fragment> {
        let o = &self.order;
        let i = self.fragments.partition_point(|f| o.le(&f.start, ukey));
        let f = self.fragments.get(i.checked_sub(1)?)?;
        o.lt(ukey, &f.end).then_some(f)
    }

    /// [`Self::fragment_for`] starting from `hint` (the partition point of the previous query,
    /// updated): O(1) while successive keys stay between the same fragment starts, as in a
    /// scan.
    #[inline]
    pub fn fragment_for_hinted(&self, ukey: &[u8], hint: &AtomicUsize) -> Option<&Fragment> {
        let o = &self.order;
        let n = self.fragments.len();
        let h = hint.load(AtomicOrdering::Relaxed).min(n);
        let fits = (h == 0 || o.le(&self.fragments[h - 1].start, ukey))
            && (h == n || o.lt(ukey, &self.fragments[h].start));
        let i = if fits {
            h
        } else {
            let i = self.fragments.partition_point(|f| o.le(&f.start, ukey));
            hint.store(i, AtomicOrdering::Relaxed);
            i
        };
        let f = self.fragments.get(i.checked_sub(1)?)?;
        o.lt(ukey, &f.end).then_some(f)
    }

    /// The largest seq of a tombstone covering `ukey` visible at `read_seq`; `SeqNo::ZERO`
    /// when none (every entry with a smaller seq is deleted).
    #[inline]
    pub fn max_covering_seq(&self, ukey: &[u8], read_seq: SeqNo) -> SeqNo {
        self.fragment_for(ukey)
            .and_then(|f| f.newest_visible(read_seq))
            .map_or(SeqNo::ZERO, |x| x.0)
    }

    /// True when an entry `(ukey, seq)` is deleted by a tombstone in the same snapshot stripe
    /// (no snapshot in `snapshots`, ascending, lies in `[seq, tombstone seq)`), so no reader
    /// can see the entry.
    pub fn covers_in_stripe(&self, ukey: &[u8], seq: SeqNo, snapshots: &[SeqNo]) -> bool {
        let Some(f) = self.fragment_for(ukey) else { return false };
        // The oldest tombstone newer than the entry decides (a newer one is in a stripe at
        // least as new).
        let Some(&(t, _)) = f.seqs.iter().rev().find(|&&(s, _)| s > seq) else { return false };
        let first_snapshot_at_or_after = snapshots.partition_point(|&s| s < seq);
        snapshots.get(first_snapshot_at_or_after).is_none_or(|&s| s >= t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const B: KeyOrder = KeyOrder::Bytewise;

    fn reverse() -> KeyOrder {
        KeyOrder::custom("reverse", Box::new(|a: &[u8], b: &[u8]| b.cmp(a)))
    }

    fn t(s: &str, e: &str, seq: u64) -> RangeTombstone {
        RangeTombstone::new(s.as_bytes(), e.as_bytes(), SeqNo(seq))
    }

    #[test]
    fn fragments_overlapping_tombstones() {
        let f = FragmentedTombstones::new(
            vec![
                (t("a", "e", 5), 0),
                (t("c", "g", 9), 1),
                (t("x", "z", 3), 0),
                (t("b", "b", 7), 0), // empty: ignored
            ],
            &B,
        );
        let got: Vec<(String, String, Vec<u64>)> = f
            .fragments()
            .iter()
            .map(|fr| {
                (
                    String::from_utf8(fr.start.clone()).unwrap(),
                    String::from_utf8(fr.end.clone()).unwrap(),
                    fr.seqs.iter().map(|s| s.0 .0).collect(),
                )
            })
            .collect();
        let want = vec![
            ("a".to_string(), "c".to_string(), vec![5]),
            ("c".to_string(), "e".to_string(), vec![9, 5]),
            ("e".to_string(), "g".to_string(), vec![9]),
            ("x".to_string(), "z".to_string(), vec![3]),
        ];
        assert_eq!(got, want);
        assert_eq!(f.max_covering_seq(b"a", SeqNo(100)), SeqNo(5));
        assert_eq!(f.max_covering_seq(b"d", SeqNo(100)), SeqNo(9));
        assert_eq!(f.max_covering_seq(b"d", SeqNo(8)), SeqNo(5));
        assert_eq!(f.max_covering_seq(b"d", SeqNo(4)), SeqNo::ZERO);
        assert_eq!(f.max_covering_seq(b"g", SeqNo(100)), SeqNo::ZERO, "end is exclusive");
        assert_eq!(f.max_covering_seq(b"", SeqNo(100)), SeqNo::ZERO);
        assert_eq!(f.max_covering_seq(b"y", SeqNo(100)), SeqNo(3));
        assert_eq!(f.fragment_for(b"f").unwrap().seqs, vec![(SeqNo(9), 1)]);
    }

    #[test]
    fn adjacent_equal_fragments_merge() {
        let f = FragmentedTombstones::new(vec![(t("a", "c", 5), 0), (t("c", "e", 5), 0)], &B);
        assert_eq!(f.fragments().len(), 1);
        assert_eq!(f.fragments()[0].end, b"e");
    }

    #[test]
    fn stripe_rule() {
        let f = FragmentedTombstones::from_tombstones(&[t("a", "m", 10)], 0, &B);
        assert!(f.covers_in_stripe(b"b", SeqNo(5), &[]));
        assert!(!f.covers_in_stripe(b"b", SeqNo(11), &[]));
        assert!(!f.covers_in_stripe(b"b", SeqNo(5), &[SeqNo(7)]), "snapshot 7 sees the entry");
        assert!(f.covers_in_stripe(b"b", SeqNo(5), &[SeqNo(3), SeqNo(12)]));
        assert!(f.covers_in_stripe(b"b", SeqNo(5), &[SeqNo(10)]), "snapshot at the tombstone");
        assert!(!f.covers_in_stripe(b"m", SeqNo(5), &[]));
    }

    #[test]
    fn clip_and_block_roundtrip() {
        let x = t("c", "k", 4);
        assert_eq!(x.clipped(Some(b"e"), None, &B), Some(t("e", "k", 4)));
        assert_eq!(x.clipped(None, Some(b"d"), &B), Some(t("c", "d", 4)));
        assert_eq!(x.clipped(Some(b"k"), None, &B), None);
        assert_eq!(x.clipped(None, Some(b"c"), &B), None);
        let mut ts = vec![t("b", "c", 1), t("a", "z", 2), t("a", "b", 9)];
        sort_tombstones(&mut ts, &B);
        assert_eq!(ts[0], t("a", "b", 9));
        let enc = encode_block(&ts);
        assert_eq!(decode_block(&enc, 0, &B).unwrap(), ts);
        for cut in 0..enc.len() {
            assert!(decode_block(&enc[..cut], 7, &B).unwrap_err().is_corruption());
        }
        let bad = encode_block(&[t("b", "a", 1)]);
        assert!(decode_block(&bad, 0, &B).is_err());
        assert!(decode_block(&bad, 0, &reverse()).is_ok(), "b > a is a range in reverse order");
    }

    /// Random tombstones: fragment queries agree with a brute-force scan, in bytewise and in
    /// reverse order.
    #[test]
    fn queries_match_brute_force() {
        queries_match_brute_force_in(&B);
        queries_match_brute_force_in(&reverse());
    }

    fn queries_match_brute_force_in(o: &KeyOrder) {
        let mut r = 0x2545_f491_u64;
        let mut rnd = move |n: u64| {
            r ^= r << 13;
            r ^= r >> 7;
            r ^= r << 17;
            r % n
        };
        for _ in 0..200 {
            let n = rnd(10);
            let ts: Vec<RangeTombstone> = (0..n)
                .map(|i| {
                    let a = rnd(20);
                    let b = rnd(20);
                    RangeTombstone::new(&[a as u8], &[b as u8], SeqNo(1 + i * 3 + rnd(3)))
                })
                .collect();
            let f = FragmentedTombstones::new(
                ts.iter().enumerate().map(|(i, t)| (t.clone(), i as u32 % 3)).collect(),
                o,
            );
            for w in f.fragments().windows(2) {
                assert!(o.le(&w[0].end, &w[1].start), "sorted, non-overlapping");
            }
            let hint = AtomicUsize::new(0);
            for k in (0..21u8).chain((0..21).rev()).chain([3, 17, 0, 20, 9]) {
                assert_eq!(f.fragment_for_hinted(&[k], &hint), f.fragment_for(&[k]), "key {k}");
            }
            for k in 0..21u8 {
                for read in [0u64, 5, 10, 40] {
                    let brute = ts
                        .iter()
                        .filter(|t| o.le(&t.start, &[k]) && o.lt(&[k], &t.end))
                        .map(|t| t.seq)
                        .filter(|&s| s <= SeqNo(read))
                        .max()
                        .unwrap_or(SeqNo::ZERO);
                    assert_eq!(f.max_covering_seq(&[k], SeqNo(read)), brute);
                }
            }
        }
    }
}
