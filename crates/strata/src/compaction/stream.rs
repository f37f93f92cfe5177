//! Which entries survive a compaction (or a flush).
//!
//! The input is a sorted stream of internal entries. Per user key (newest first), entries are
//! grouped into *snapshot stripes*: the stripe of an entry is the oldest live snapshot that can
//! see it (or "latest" when none). Only the newest entry of a stripe can be read by anyone, so:
//! - an entry shadowed by a newer entry in the same stripe is dropped;
//! - an entry deleted by a range tombstone of the same stripe is dropped (and ends a run of
//!   merge operands like a deletion); the tombstones themselves are handled by the caller;
//! - a deletion in the oldest stripe is dropped too when the output is the bottom of the key's
//!   data (nothing older can exist below) — it has nothing left to hide;
//! - merge operands are combined with the operands and base value of their stripe: with a base
//!   value or deletion (or at the bottom) into one full value, otherwise by partial merge when
//!   the operator can, else they are kept as they are;
//! - with `zero_seqnos` (outputs below L0), a value at the bottom that every snapshot sees, of
//!   a key no input range tombstone covers, is written with sequence number 0: nothing older
//!   exists to order it against, every reader sees it either way, and a bottom level of zero
//!   trailers compresses better (RocksDB does the same). A tombstone covering the key could be
//!   older than the value yet kept in the same output, which a zero would put above it; such
//!   keys keep their number.
//!
//! - a compaction filter ([`crate::compaction_filter`]) sees the newest entry of a key when
//!   it is a value that no snapshot can see (its stripe is the latest view's); it may keep it,
//!   change its value, or remove it, which makes it a deletion at its sequence number (dropped
//!   by the rule above where nothing older can exist).
//!
//! - in a family with user-defined timestamps ([`CollapsedHistory`]) each version is a key of
//!   its own (`key || timestamp`, newest timestamp first); reads below the family's
//!   `full_history_ts_low` are refused, so a version below it is dropped when a newer one of
//!   the same key (also below it) is in its snapshot stripe or an older one: every read that
//!   could see the older version sees that one first; a merge operand is not such a version
//!   (reads apply it to the versions below it), so it hides nothing.
//!   A deletion there is kept (a version of the key outside this compaction, written later
//!   with an older timestamp, could otherwise come back).
//!
//! - a value kept in a blob file (an entry of type `BlobIndex`) is a value to these rules;
//!   its bytes are read (`StreamContext::blobs`) only where they are needed: by the
//!   compaction filter, or as the base of merge operands. A kept entry keeps its index.
//!
//! - a wide-column entity (`ValueType::Entity`) is a value to these rules; the compaction
//!   filter sees it through `filter_entity` (which keeps it unless overridden, as RocksDB's
//!   default `FilterV3`); as the base of merge operands, the merge makes its default column
//!   and the result is the entity with that column (`wide_columns::with_default_value`).
//!
//! Invariant: for every live snapshot, a read over the output returns exactly what it returned
//! over the input; so does the latest view, but for the keys the filter removed or changed.

use crate::compaction_filter::{CompactionFilter, Decision, EntityDecision};
use crate::comparator::UserTimestamps;
use crate::error::{Error, Result};
use crate::iterator::{BlobFetch, InternalIterator};
use crate::key::{append_internal_key, parse_internal_key};
use crate::merge_operator::MergeOperator;
use crate::range_del::FragmentedTombstones;
use crate::types::{SeqNo, ValueType};
use crate::util::compare::equal_bytes;
use crate::wide_columns::{self, WideColumns};

/// What the compaction knows about its surroundings.
pub(crate) struct StreamContext<'a> {
    /// Live snapshot sequence numbers, ascending.
    pub snapshots: &'a [SeqNo],
    pub merge_operator: Option<&'a dyn MergeOperator>,
    /// True when no data older than the output can exist for `user_key` (it lands in the
    /// bottommost level holding that key).
    pub is_bottom: &'a dyn Fn(&[u8]) -> bool,
    /// The range tombstones of the input: an entry deleted by one in its own snapshot stripe
    /// is dropped.
    pub range_dels: Option<&'a FragmentedTombstones>,
    /// Whether values at the bottom may drop their sequence number (never for L0 outputs,
    /// which are ordered by their largest sequence number).
    pub zero_seqnos: bool,
    /// Set for a family with user-defined timestamps whose `full_history_ts_low` is set.
    pub history: Option<CollapsedHistory<'a>>,
    /// Reads values kept in blob files, for the filter and merges (`None` where the input
    /// holds none: a memtable without values written at commit).
    pub blobs: Option<&'a dyn BlobFetch>,
}

impl StreamContext<'_> {
    /// The value of the blob index `index` of `ukey`.
    fn blob_value(&self, ukey: &[u8], index: &[u8]) -> Result<Vec<u8>> {
        match self.blobs {
            Some(b) => b.fetch(ukey, index),
            None => Err(crate::iterator::no_blob_source(ukey)),
        }
    }
}

/// The history a family with user-defined timestamps no longer serves: reads at a timestamp
/// below `low` are refused (`Db::increase_full_history_ts_low`).
#[derive(Clone, Copy)]
pub(crate) struct CollapsedHistory<'a> {
    pub timestamps: &'a UserTimestamps,
    pub low: &'a [u8],
}

/// The versions below the low seen so far of one key: the oldest stripe one of them is in.
#[derive(Default)]
struct Covered {
    key: Vec<u8>,
    /// Every read that sees an entry of this stripe or a newer one sees that version.
    oldest_stripe: Option<usize>,
}

impl Covered {
    /// Whether an entry of `stored_key` (`key || timestamp`) at `seq` is hidden below the low:
    /// a whole version of the same key already seen (a newer timestamp, or the same one at a
    /// newer sequence number) is in its stripe or an older one, so every read that could see
    /// this entry (at a timestamp at or above the low) sees that version first. If not, and
    /// the entry is a whole version (a value or a deletion, not a merge operand, which reads
    /// apply to the versions under it), it is the version such reads see from its stripe on.
    fn hides(
        &mut self,
        h: &CollapsedHistory<'_>,
        snapshots: &[SeqNo],
        stored_key: &[u8],
        seq: SeqNo,
        value_type: ValueType,
    ) -> bool {
        let Some((key, ts)) = h.timestamps.split(stored_key) else { return false };
        if h.timestamps.compare_ts(ts, h.low) != std::cmp::Ordering::Less {
            return false;
        }
        if !equal_bytes(key, &self.key) {
            self.key.clear();
            self.key.extend_from_slice(key);
            self.oldest_stripe = None;
        }
        let s = stripe(snapshots, seq);
        match self.oldest_stripe {
            Some(o) if o <= s => true,
            _ => {
                if value_type != ValueType::Merge {
                    self.oldest_stripe = Some(s);
                }
                false
            }
        }
    }
}

/// Counters of one run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct StreamStats {
    pub input_entries: u64,
    pub output_entries: u64,
    /// Entries dropped (shadowed, obsolete tombstones, merged away).
    pub dropped: u64,
    /// CPU microseconds of the thread that ran the stream and wrote its output (set by the
    /// caller that measures it: compaction jobs).
    pub cpu_micros: u64,
    /// Values the compaction filter removed.
    pub filter_removed: u64,
    /// Values the compaction filter changed.
    pub filter_changed: u64,
}

/// A compaction filter and the level the run writes to.
pub(crate) struct StreamFilter<'a> {
    pub filter: &'a mut dyn CompactionFilter,
    pub level: u32,
}

/// The stripe of `seq`: index of the first snapshot >= seq (`snapshots.len()` = latest view).
fn stripe(snapshots: &[SeqNo], seq: SeqNo) -> usize {
    snapshots.partition_point(|&s| s < seq)
}

/// The entries of one user key, newest first, copied out of the input (which moves on before
/// the group is decided). The buffers are reused from key to key, so a run allocates nothing
/// per entry.
#[derive(Default)]
struct Group {
    ukey: Vec<u8>,
    /// `(seq, type, end of the value in values)`; a value starts where the previous one ends.
    entries: Vec<(SeqNo, ValueType, usize)>,
    values: Vec<u8>,
}

impl Group {
    fn len(&self) -> usize {
        self.entries.len()
    }

    fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Starts the group of `ukey`.
    fn reset(&mut self, ukey: &[u8]) {
        self.ukey.clear();
        self.ukey.extend_from_slice(ukey);
        self.entries.clear();
        self.values.clear();
    }

    fn push(&mut self, seq: SeqNo, t: ValueType, value: &[u8]) {
        self.values.extend_from_slice(value);
        self.entries.push((seq, t, self.values.len()));
    }

    fn seq(&self, i: usize) -> SeqNo {
        self.entries[i].0
    }

    fn get(&self, i: usize) -> (SeqNo, ValueType, &[u8]) {
        let start = if i == 0 { 0 } else { self.entries[i - 1].2 };
        let (seq, t, end) = self.entries[i];
        (seq, t, &self.values[start..end])
    }
}

/// Runs the input (positioned anywhere; it is rewound) through the rules above, calling
/// `emit(internal_key, value)` for each surviving entry in order.
pub(crate) fn run_stream(
    input: &mut dyn InternalIterator,
    ctx: &StreamContext<'_>,
    mut filter: Option<StreamFilter<'_>>,
    mut emit: impl FnMut(&[u8], &[u8]) -> Result<()>,
) -> Result<StreamStats> {
    let mut stats = StreamStats::default();
    let mut group = Group::default();
    let mut ikey = Vec::new();
    let mut covered = Covered::default();
    input.seek_to_first();
    while input.valid() {
        let p = parse_internal_key(input.key()).ok_or_else(|| {
            Error::corruption(
                "",
                0,
                format!("malformed internal key of {} bytes", input.key().len()),
            )
        })?;
        stats.input_entries += 1;
        if let Some(h) = &ctx.history {
            if covered.hides(h, ctx.snapshots, p.user_key, p.seq, p.value_type) {
                input.next();
                continue;
            }
        }
        if group.is_empty() || !equal_bytes(p.user_key, &group.ukey) {
            if !group.is_empty() {
                flush_group(&group, &mut ikey, ctx, filter.as_mut(), &mut stats, &mut emit)?;
            }
            group.reset(p.user_key);
        }
        group.push(p.seq, p.value_type, input.value());
        input.next();
    }
    input.status()?;
    if !group.is_empty() {
        flush_group(&group, &mut ikey, ctx, filter.as_mut(), &mut stats, &mut emit)?;
    }
    stats.dropped = stats.input_entries - stats.output_entries;
    Ok(stats)
}

/// Decides the group's entries (module doc) and emits the survivors; `ikey` is scratch for
/// their internal keys.
fn flush_group(
    group: &Group,
    ikey: &mut Vec<u8>,
    ctx: &StreamContext<'_>,
    mut filter: Option<&mut StreamFilter<'_>>,
    stats: &mut StreamStats,
    emit: &mut impl FnMut(&[u8], &[u8]) -> Result<()>,
) -> Result<()> {
    let ukey = group.ukey.as_slice();
    let bottom = (ctx.is_bottom)(ukey);
    let range_deleted =
        |seq: SeqNo| ctx.range_dels.is_some_and(|r| r.covers_in_stripe(ukey, seq, ctx.snapshots));
    // The sequence number a value of stripe `s` is written with.
    let zero_ok = ctx.zero_seqnos
        && bottom
        && ctx.range_dels.is_none_or(|r| r.max_covering_seq(ukey, SeqNo::MAX) == SeqNo::ZERO);
    let value_seq = |seq: SeqNo, s: usize| if zero_ok && s == 0 { SeqNo::ZERO } else { seq };
    let mut out = |seq: SeqNo, t: ValueType, v: &[u8], stats: &mut StreamStats| -> Result<()> {
        stats.output_entries += 1;
        ikey.clear();
        append_internal_key(ikey, ukey, seq, t);
        emit(ikey, v)
    };
    let mut i = 0;
    while i < group.len() {
        let (seq, t, v) = group.get(i);
        let s = stripe(ctx.snapshots, seq);
        // The end of this stripe within the group.
        let mut end = i + 1;
        while end < group.len() && stripe(ctx.snapshots, group.seq(end)) == s {
            end += 1;
        }
        let oldest_stripe = end == group.len();
        if range_deleted(seq) {
            // The older entries of the stripe are covered too.
            i = end;
            continue;
        }
        match t {
            ValueType::Value | ValueType::BlobIndex => {
                // Only the latest view can see this entry: the filter may decide its fate.
                let decision = match filter.as_deref_mut() {
                    Some(f) if s == ctx.snapshots.len() => {
                        if t == ValueType::BlobIndex {
                            let full = ctx.blob_value(ukey, v)?;
                            f.filter.filter(f.level, ukey, &full)
                        } else {
                            f.filter.filter(f.level, ukey, v)
                        }
                    }
                    _ => Decision::Keep,
                };
                match decision {
                    Decision::Keep => out(value_seq(seq, s), t, v, stats)?,
                    Decision::Change(nv) => {
                        stats.filter_changed += 1;
                        out(value_seq(seq, s), ValueType::Value, &nv, stats)?;
                    }
                    Decision::Remove => {
                        stats.filter_removed += 1;
                        if !(oldest_stripe && bottom) {
                            out(seq, ValueType::Deletion, b"", stats)?;
                        }
                    }
                }
            }
            // The filter's entity call (kept unless it overrides it), in the same place as a
            // value's.
            ValueType::Entity => {
                let decision = match filter.as_deref_mut() {
                    Some(f) if s == ctx.snapshots.len() => {
                        let columns = WideColumns::decode(v)?;
                        f.filter.filter_entity(f.level, ukey, &columns)
                    }
                    _ => EntityDecision::Keep,
                };
                match decision {
                    EntityDecision::Keep => out(value_seq(seq, s), t, v, stats)?,
                    EntityDecision::ChangeValue(nv) => {
                        stats.filter_changed += 1;
                        out(value_seq(seq, s), ValueType::Value, &nv, stats)?;
                    }
                    EntityDecision::ChangeEntity(c) => {
                        stats.filter_changed += 1;
                        out(value_seq(seq, s), ValueType::Entity, &c.encode(), stats)?;
                    }
                    EntityDecision::Remove => {
                        stats.filter_removed += 1;
                        if !(oldest_stripe && bottom) {
                            out(seq, ValueType::Deletion, b"", stats)?;
                        }
                    }
                }
            }
            ValueType::Deletion | ValueType::SingleDeletion => {
                if !(oldest_stripe && bottom) {
                    out(seq, t, v, stats)?;
                }
            }
            ValueType::Merge => {
                // Operands of this stripe, newest first, up to a base value or deletion.
                let mut operands: Vec<&[u8]> = vec![v];
                let mut base: Option<Option<&[u8]>> = None; // Some(None) = deletion
                let mut fetched = None; // a base value kept in a blob file
                let mut entity = None; // a base entity, whose default column the merge makes
                let mut consumed = i + 1;
                while consumed < end {
                    let (s2, t2, v2) = group.get(consumed);
                    if range_deleted(s2) {
                        base = Some(None); // dropped, and a deletion for the operands
                        break;
                    }
                    consumed += 1;
                    match t2 {
                        ValueType::Merge => operands.push(v2),
                        ValueType::Value => {
                            base = Some(Some(v2));
                            break;
                        }
                        ValueType::BlobIndex => {
                            let v = ctx.blob_value(ukey, v2)?;
                            base = Some(Some(fetched.insert(v).as_slice()));
                            break;
                        }
                        ValueType::Entity => {
                            base = Some(Some(wide_columns::default_value(v2)?));
                            entity = Some(v2);
                            break;
                        }
                        ValueType::Deletion | ValueType::SingleDeletion => {
                            base = Some(None);
                            break;
                        }
                        ValueType::RangeDeletion => {}
                    }
                }
                if base.is_none() && oldest_stripe && consumed == end && bottom {
                    base = Some(None); // nothing older exists anywhere
                }
                let op = ctx.merge_operator;
                operands.reverse(); // oldest first
                match (base, op) {
                    (Some(b), Some(op)) => {
                        let merged = op.full_merge(ukey, b, &operands).ok_or_else(|| {
                            Error::corruption(
                                "",
                                0,
                                format!("Merge operator failed: {} during compaction", op.name()),
                            )
                        })?;
                        match entity {
                            Some(e) => {
                                let e = wide_columns::with_default_value(e, &merged)?;
                                out(value_seq(seq, s), ValueType::Entity, &e, stats)?;
                            }
                            None => out(value_seq(seq, s), ValueType::Value, &merged, stats)?,
                        }
                    }
                    (None, Some(op)) if operands.len() > 1 => {
                        match op.partial_merge(ukey, &operands) {
                            Some(m) => out(seq, ValueType::Merge, &m, stats)?,
                            None => {
                                // Keep every operand with its own sequence number.
                                for j in i..consumed {
                                    let (s2, _, v2) = group.get(j);
                                    out(s2, ValueType::Merge, v2, stats)?;
                                }
                            }
                        }
                    }
                    _ => {
                        // No operator (reads will report it) or a single operand: keep as is,
                        // including a base value or deletion that ended the run.
                        for j in i..consumed {
                            let (s2, t2, v2) = group.get(j);
                            out(s2, t2, v2, stats)?;
                        }
                    }
                }
            }
            ValueType::RangeDeletion => out(seq, t, v, stats)?,
        }
        i = end;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use super::*;
    use crate::iterator::conformance::VecIter;
    use crate::iterator::db_iter::{DbIter, DbIterOptions};
    use crate::key::{compare_internal, make_internal_key};
    use crate::merge_operator::{builtin_merge_operator, StringAppendOperator};

    struct NoPartial(StringAppendOperator);
    impl MergeOperator for NoPartial {
        fn name(&self) -> &str {
            "nopartial"
        }
        fn full_merge(&self, k: &[u8], e: Option<&[u8]>, o: &[&[u8]]) -> Option<Vec<u8>> {
            self.0.full_merge(k, e, o)
        }
    }

    fn view(
        entries: &[(Vec<u8>, Vec<u8>)],
        seq: SeqNo,
        op: Arc<dyn MergeOperator>,
    ) -> BTreeMap<Vec<u8>, Vec<u8>> {
        view_with(entries, None, seq, op)
    }

    fn view_with(
        entries: &[(Vec<u8>, Vec<u8>)],
        range_dels: Option<&Arc<FragmentedTombstones>>,
        seq: SeqNo,
        op: Arc<dyn MergeOperator>,
    ) -> BTreeMap<Vec<u8>, Vec<u8>> {
        let mut it = DbIter::new(
            Box::new(VecIter::new(entries.to_vec())),
            DbIterOptions {
                merge_operator: Some(op),
                range_dels: range_dels
                    .map(|r| crate::iterator::db_iter::RangeDelView::new(vec![(r.clone(), 0)])),
                ..DbIterOptions::at(seq)
            },
        );
        let mut m = BTreeMap::new();
        it.seek_to_first();
        while it.valid() {
            m.insert(it.key().to_vec(), it.value().to_vec());
            it.next();
        }
        it.status().unwrap();
        m
    }

    /// Random histories: every snapshot's view and the latest view survive the stream, at the
    /// bottom and above it, with and without partial merge.
    #[test]
    fn every_snapshot_view_is_preserved() {
        let mut r = 0x9e37_79b9_u64;
        let mut rnd = move |n: u64| {
            r ^= r << 13;
            r ^= r >> 7;
            r ^= r << 17;
            r % n
        };
        let ops: Vec<Arc<dyn MergeOperator>> = vec![
            builtin_merge_operator("stringappend").unwrap(),
            Arc::new(NoPartial(StringAppendOperator::new(b","))),
        ];
        for round in 0..400 {
            let op = ops[round % 2].clone();
            let n = 1 + rnd(60);
            let mut entries = Vec::new();
            for seq in 1..=n {
                let k = format!("k{}", rnd(6)).into_bytes();
                let t = match rnd(7) {
                    0 => ValueType::Deletion,
                    1..=3 => ValueType::Merge,
                    _ => ValueType::Value,
                };
                let v =
                    if t == ValueType::Deletion { vec![] } else { format!("{seq}").into_bytes() };
                entries.push((make_internal_key(&k, SeqNo(seq), t), v));
            }
            entries.sort_by(|a, b| compare_internal(&a.0, &b.0));
            let mut snaps: Vec<SeqNo> = (0..rnd(4)).map(|_| SeqNo(1 + rnd(n))).collect();
            snaps.sort();
            snaps.dedup();
            let bottom = round % 3 != 0;
            let is_bottom = move |_: &[u8]| bottom;
            let ctx = StreamContext {
                snapshots: &snaps,
                merge_operator: Some(&*op),
                is_bottom: &is_bottom,
                range_dels: None,
                history: None,
                blobs: None,
                zero_seqnos: (round / 2) % 2 == 0,
            };
            let mut out = Vec::new();
            let stats = run_stream(&mut VecIter::new(entries.clone()), &ctx, None, |k, v| {
                out.push((k.to_vec(), v.to_vec()));
                Ok(())
            })
            .unwrap();
            assert_eq!(stats.input_entries, entries.len() as u64);
            assert_eq!(stats.output_entries, out.len() as u64);
            for w in out.windows(2) {
                assert_eq!(
                    compare_internal(&w[0].0, &w[1].0),
                    std::cmp::Ordering::Less,
                    "sorted output"
                );
            }
            for &s in snaps.iter().chain([SeqNo(n)].iter()) {
                assert_eq!(
                    view(&out, s, op.clone()),
                    view(&entries, s, op.clone()),
                    "round {round} at {s:?}"
                );
            }
            if snaps.is_empty() && bottom {
                // Without snapshots, at the bottom: one value per live key, no tombstones.
                let live = view(&entries, SeqNo(n), op.clone());
                assert_eq!(out.len(), live.len(), "round {round}");
            }
        }
    }

    /// A filter that removes values ending in 0 mod 3 and rewrites those ending in 1 mod 3.
    struct ModFilter {
        calls: Vec<(Vec<u8>, Vec<u8>)>,
    }
    impl CompactionFilter for ModFilter {
        fn filter(&mut self, _level: u32, key: &[u8], value: &[u8]) -> Decision {
            self.calls.push((key.to_vec(), value.to_vec()));
            let n: u64 =
                std::str::from_utf8(value).unwrap().trim_start_matches('c').parse().unwrap();
            match n % 3 {
                0 => Decision::Remove,
                1 => Decision::Change(format!("c{n}").into_bytes()),
                _ => Decision::Keep,
            }
        }
        fn name(&self) -> &str {
            "mod3"
        }
    }

    /// With a filter: every snapshot's view survives unchanged; the latest view is the input's
    /// with the filter applied to exactly the keys whose newest entry is a value above every
    /// snapshot; the filter is never shown anything a snapshot can see.
    #[test]
    fn filter_changes_only_what_no_snapshot_sees() {
        let mut r = 0x0f11_7e25_u64;
        let mut rnd = move |n: u64| {
            r ^= r << 13;
            r ^= r >> 7;
            r ^= r << 17;
            r % n
        };
        let op = builtin_merge_operator("stringappend").unwrap();
        for round in 0..400 {
            let n = 1 + rnd(60);
            let mut entries = Vec::new();
            let mut newest: BTreeMap<Vec<u8>, (SeqNo, ValueType, Vec<u8>)> = BTreeMap::new();
            for seq in 1..=n {
                let k = format!("k{}", rnd(6)).into_bytes();
                let t = match rnd(7) {
                    0 => ValueType::Deletion,
                    1 => ValueType::Merge,
                    _ => ValueType::Value,
                };
                let v =
                    if t == ValueType::Deletion { vec![] } else { format!("{seq}").into_bytes() };
                newest.insert(k.clone(), (SeqNo(seq), t, v.clone()));
                entries.push((make_internal_key(&k, SeqNo(seq), t), v));
            }
            entries.sort_by(|a, b| compare_internal(&a.0, &b.0));
            let mut snaps: Vec<SeqNo> = (0..rnd(3)).map(|_| SeqNo(1 + rnd(n))).collect();
            snaps.sort();
            snaps.dedup();
            let bottom = round % 3 != 0;
            let is_bottom = move |_: &[u8]| bottom;
            let ctx = StreamContext {
                snapshots: &snaps,
                merge_operator: Some(&*op),
                is_bottom: &is_bottom,
                range_dels: None,
                history: None,
                blobs: None,
                zero_seqnos: round % 2 == 0,
            };
            let mut f = ModFilter { calls: Vec::new() };
            let mut out = Vec::new();
            let sf = StreamFilter { filter: &mut f, level: 1 };
            let stats = run_stream(&mut VecIter::new(entries.clone()), &ctx, Some(sf), |k, v| {
                out.push((k.to_vec(), v.to_vec()));
                Ok(())
            })
            .unwrap();
            for &s in &snaps {
                assert_eq!(
                    view(&out, s, op.clone()),
                    view(&entries, s, op.clone()),
                    "round {round}"
                );
            }
            let top = snaps.last().copied().unwrap_or(SeqNo::ZERO);
            let mut expected = view(&entries, SeqNo(n), op.clone());
            let mut want_calls = Vec::new();
            for (k, (seq, t, v)) in &newest {
                if *t == ValueType::Value && *seq > top {
                    want_calls.push((k.clone(), v.clone()));
                    let m = seq.0;
                    match m % 3 {
                        0 => {
                            expected.remove(k);
                        }
                        1 => {
                            expected.insert(k.clone(), format!("c{m}").into_bytes());
                        }
                        _ => {}
                    }
                }
            }
            assert_eq!(f.calls, want_calls, "round {round}: the filter sees exactly these");
            assert_eq!(view(&out, SeqNo(n), op.clone()), expected, "round {round}");
            let by_mod = |r: u64| {
                want_calls
                    .iter()
                    .filter(|(_, v)| {
                        std::str::from_utf8(v).unwrap().parse::<u64>().unwrap() % 3 == r
                    })
                    .count() as u64
            };
            assert_eq!(stats.filter_removed, by_mod(0), "round {round}");
            assert_eq!(stats.filter_changed, by_mod(1), "round {round}");
        }
    }

    /// With range tombstones in the input (kept by the caller): every snapshot's view and the
    /// latest view survive, and covered entries of the tombstone's own stripe are dropped.
    #[test]
    fn range_deleted_entries_are_dropped_within_their_stripe() {
        use crate::range_del::RangeTombstone;
        let mut r = 0x51f1_5eed_u64;
        let mut rnd = move |n: u64| {
            r ^= r << 13;
            r ^= r >> 7;
            r ^= r << 17;
            r % n
        };
        let op = builtin_merge_operator("stringappend").unwrap();
        for round in 0..300 {
            let n = 1 + rnd(60);
            let mut entries = Vec::new();
            let mut tombstones = Vec::new();
            for seq in 1..=n {
                if rnd(8) == 0 {
                    let a = rnd(8);
                    let b = a + 1 + rnd(4);
                    tombstones.push(RangeTombstone::new(
                        format!("k{a}").as_bytes(),
                        format!("k{b}").as_bytes(),
                        SeqNo(seq),
                    ));
                    continue;
                }
                let k = format!("k{}", rnd(8)).into_bytes();
                let t = match rnd(7) {
                    0 => ValueType::Deletion,
                    1..=2 => ValueType::Merge,
                    _ => ValueType::Value,
                };
                let v =
                    if t == ValueType::Deletion { vec![] } else { format!("{seq}").into_bytes() };
                entries.push((make_internal_key(&k, SeqNo(seq), t), v));
            }
            entries.sort_by(|a, b| compare_internal(&a.0, &b.0));
            let frag = Arc::new(FragmentedTombstones::from_tombstones(
                &tombstones,
                0,
                &crate::comparator::KeyOrder::Bytewise,
            ));
            let mut snaps: Vec<SeqNo> = (0..rnd(4)).map(|_| SeqNo(1 + rnd(n))).collect();
            snaps.sort();
            snaps.dedup();
            let bottom = round % 2 == 0;
            let is_bottom = move |_: &[u8]| bottom;
            let ctx = StreamContext {
                snapshots: &snaps,
                merge_operator: Some(&*op),
                is_bottom: &is_bottom,
                range_dels: Some(&frag),
                history: None,
                blobs: None,
                zero_seqnos: round % 3 == 0,
            };
            let mut out = Vec::new();
            run_stream(&mut VecIter::new(entries.clone()), &ctx, None, |k, v| {
                out.push((k.to_vec(), v.to_vec()));
                Ok(())
            })
            .unwrap();
            for &s in snaps.iter().chain([SeqNo(n)].iter()) {
                assert_eq!(
                    view_with(&out, Some(&frag), s, op.clone()),
                    view_with(&entries, Some(&frag), s, op.clone()),
                    "round {round} at {s:?}"
                );
            }
            for (k, _) in &out {
                let p = parse_internal_key(k).unwrap();
                assert!(
                    !frag.covers_in_stripe(p.user_key, p.seq, &snaps),
                    "round {round}: covered entry kept"
                );
            }
        }
    }

    /// Seqno zeroing applies to values at the bottom that every snapshot sees, of keys no
    /// input tombstone covers, and only when the output allows it.
    #[test]
    fn bottom_values_seen_by_every_snapshot_lose_their_seqno() {
        let e = |k: &str, seq: u64, t: ValueType| {
            (make_internal_key(k.as_bytes(), SeqNo(seq), t), b"v".to_vec())
        };
        let entries = vec![
            e("a", 9, ValueType::Value), // newer than the snapshot at 5: keeps 9
            e("a", 4, ValueType::Value), // the snapshot's view of a: zeroed
            e("b", 3, ValueType::Value), // zeroed
            e("c", 2, ValueType::Merge), // merged at the bottom into a value: zeroed
            e("r", 1, ValueType::Value), // under a tombstone the snapshot predates: keeps 1
        ];
        let frag = FragmentedTombstones::from_tombstones(
            &[crate::range_del::RangeTombstone::new(b"q", b"s", SeqNo(7))],
            0,
            &crate::comparator::KeyOrder::Bytewise,
        );
        let op = builtin_merge_operator("stringappend").unwrap();
        let run = |zero: bool, bottom: bool| {
            let is_bottom = move |_: &[u8]| bottom;
            let ctx = StreamContext {
                snapshots: &[SeqNo(5)],
                merge_operator: Some(&*op),
                is_bottom: &is_bottom,
                range_dels: Some(&frag),
                history: None,
                blobs: None,
                zero_seqnos: zero,
            };
            let mut out = Vec::new();
            run_stream(&mut VecIter::new(entries.clone()), &ctx, None, |k, _| {
                let p = parse_internal_key(k).unwrap();
                out.push((String::from_utf8(p.user_key.to_vec()).unwrap(), p.seq.0));
                Ok(())
            })
            .unwrap();
            out
        };
        let s = |k: &str, q: u64| (k.to_string(), q);
        assert_eq!(run(true, true), [s("a", 9), s("a", 0), s("b", 0), s("c", 0), s("r", 1)]);
        assert_eq!(run(false, true), [s("a", 9), s("a", 4), s("b", 3), s("c", 2), s("r", 1)]);
        assert_eq!(run(true, false), [s("a", 9), s("a", 4), s("b", 3), s("c", 2), s("r", 1)]);
    }
}
