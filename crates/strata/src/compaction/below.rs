//! [`Below`]: whether any data older than a compaction's output can exist for a user key,
//! asked once per user key of the compaction's stream.
//!
//! A key is at the bottom of its data when no level below the output level has a file whose
//! user-key range holds it (and, for an output in L0, no L0 file outside the compaction does).
//! The stream asks for every user key, in ascending order, so each level below keeps a cursor
//! that only moves forward over its files: a run pays one or two key comparisons per level
//! and key instead of a binary search of the level (on a compaction into a base level above
//! a large last level, those searches were about a tenth of the compaction's CPU).
//!
//! Contract: [`Below::nothing_below`] answers exactly what a binary search of each level
//! answers, for keys in any order (a key below the previous one moves the cursors back by a
//! search); checked against that search by the tests below.

use std::cell::RefCell;
use std::cmp::Ordering;

use super::picker::CompactionPlan;
use crate::comparator::KeyOrder;
use crate::key::user_key;
use crate::version::levels::{TableFile, Version};

/// The bottom test of one compaction run (see the module doc). Single-threaded: each run
/// (subcompaction) has its own.
pub(crate) struct Below<'a> {
    plan: &'a CompactionPlan,
    version: &'a Version,
    /// For each level below the output: the first file whose largest user key is not below
    /// the last key asked (invariant between calls).
    cursors: RefCell<Vec<usize>>,
}

impl<'a> Below<'a> {
    pub fn new(plan: &'a CompactionPlan, version: &'a Version) -> Self {
        let below = version.levels.len().saturating_sub(plan.output_level + 1);
        Below { plan, version, cursors: RefCell::new(vec![0; below]) }
    }

    /// True when no level below the output holds `ukey` (so nothing older can exist). For an
    /// L0 output (universal), the L0 files that are not inputs count too: they may be older.
    pub fn nothing_below(&self, ukey: &[u8]) -> bool {
        let output_level = self.plan.output_level;
        let order = self.version.order();
        if output_level == 0 {
            let older_l0 = self.version.levels[0].iter().any(|f| {
                !self.plan.inputs.iter().any(|i| i.number == f.number)
                    && order.compare(user_key(&f.smallest), ukey) != Ordering::Greater
                    && !order.after_largest(ukey, &f.largest)
            });
            if older_l0 {
                return false;
            }
        }
        let mut cursors = self.cursors.borrow_mut();
        let levels = self.version.levels.iter().skip(output_level + 1);
        for (cursor, files) in cursors.iter_mut().zip(levels) {
            *cursor = first_not_below(files, *cursor, ukey, order);
            if files
                .get(*cursor)
                .is_some_and(|f| order.compare(user_key(&f.smallest), ukey) != Ordering::Greater)
            {
                return false;
            }
        }
        true
    }
}

/// Whether `f`'s largest user key sorts before `ukey`.
fn ends_before(f: &TableFile, ukey: &[u8], order: &KeyOrder) -> bool {
    order.lt(user_key(&f.largest), ukey)
}

/// The first of `files` (sorted, disjoint) whose largest user key is not below `ukey`,
/// starting the walk at `from` when that is not past it.
fn first_not_below(
    files: &[std::sync::Arc<TableFile>],
    from: usize,
    ukey: &[u8],
    order: &KeyOrder,
) -> usize {
    if from > 0 && !ends_before(&files[from - 1], ukey, order) {
        // The key went backwards: search from scratch.
        return files.partition_point(|f| ends_before(f, ukey, order));
    }
    let mut i = from;
    while i < files.len() && ends_before(&files[i], ukey, order) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use proptest::prelude::*;

    use super::*;
    use crate::key::{after_largest, make_internal_key};
    use crate::types::{FileNumber, SeqNo, ValueType};
    use crate::version::edit::FileMetaData;

    fn file(number: u64, lo: u32, hi: u32) -> Arc<TableFile> {
        let ikey = |k: u32| make_internal_key(&k.to_be_bytes(), SeqNo(1), ValueType::Value);
        Arc::new(TableFile::new(FileMetaData {
            number: FileNumber(number),
            smallest: ikey(lo),
            largest: ikey(hi),
            ..FileMetaData::default()
        }))
    }

    /// What a binary search of every level answers (the answer `Below` must give).
    fn oracle(plan: &CompactionPlan, version: &Version, ukey: &[u8]) -> bool {
        if plan.output_level == 0
            && version.levels[0].iter().any(|f| {
                !plan.inputs.iter().any(|i| i.number == f.number)
                    && user_key(&f.smallest) <= ukey
                    && !after_largest(ukey, &f.largest)
            })
        {
            return false;
        }
        version.levels[plan.output_level + 1..].iter().all(|files| {
            let i = files.partition_point(|f| user_key(&f.largest) < ukey);
            files.get(i).is_none_or(|f| user_key(&f.smallest) > ukey)
        })
    }

    fn plan(output_level: usize, inputs: Vec<Arc<TableFile>>) -> CompactionPlan {
        CompactionPlan {
            start_level: output_level.saturating_sub(1),
            output_level,
            inputs,
            middle_inputs: Vec::new(),
            output_inputs: Vec::new(),
            deletion: false,
            compress: true,
            reason: "test",
            grandparents: Vec::new(),
            trivial_move: false,
            bottommost: false,
            target_file_size: 1 << 20,
            max_compaction_bytes: u64::MAX,
            output_path_id: 0,
        }
    }

    /// A version of `levels` levels whose levels below 0 hold disjoint files cut from
    /// `bounds` (sorted pairs), and whose L0 holds `l0` (possibly overlapping).
    fn version(levels: &[Vec<(u32, u32)>], l0: &[(u32, u32)]) -> Version {
        let mut e = crate::version::edit::VersionEdit::default();
        let mut n = 1;
        for &(lo, hi) in l0 {
            e.new_files.push((0, file(n, lo, hi).meta.clone()));
            n += 1;
        }
        for (i, files) in levels.iter().enumerate() {
            for &(lo, hi) in files {
                e.new_files.push((i + 1, file(n, lo, hi).meta.clone()));
                n += 1;
            }
        }
        Version::new(levels.len() + 1, crate::comparator::KeyOrder::Bytewise)
            .apply(&e)
            .expect("disjoint files in each level >= 1")
    }

    /// Disjoint sorted ranges from sorted distinct boundaries (pairs of consecutive ones).
    fn ranges(mut points: Vec<u32>) -> Vec<(u32, u32)> {
        points.sort_unstable();
        points.dedup();
        points.chunks_exact(2).map(|p| (p[0], p[1])).collect()
    }

    #[test]
    fn walks_forward_and_sees_gaps() {
        let v = version(&[vec![], vec![(10, 20), (30, 40)], vec![(0, 5)]], &[]);
        let p = plan(1, Vec::new());
        let b = Below::new(&p, &v);
        let answers: Vec<bool> = [1u32, 6, 10, 25, 40, 41, 3]
            .iter()
            .map(|k| b.nothing_below(&k.to_be_bytes()))
            .collect();
        assert_eq!(answers, [false, true, false, true, false, true, false]);
    }

    proptest! {
        #[test]
        fn answers_as_a_binary_search(
            levels in proptest::collection::vec(proptest::collection::vec(0u32..200, 0..12), 1..4),
            l0 in proptest::collection::vec((0u32..200, 0u32..40), 0..4),
            output_level in 0usize..2,
            inputs in 0usize..3,
            mut keys in proptest::collection::vec(0u32..210, 1..60),
            ascending in any::<bool>(),
        ) {
            let levels: Vec<Vec<(u32, u32)>> = levels.into_iter().map(ranges).collect();
            let l0: Vec<(u32, u32)> = l0.into_iter().map(|(lo, w)| (lo, lo + w)).collect();
            let v = version(&levels, &l0);
            let inputs = v.levels[0].iter().take(inputs).cloned().collect();
            let p = plan(output_level, inputs);
            if ascending {
                keys.sort_unstable();
            }
            let b = Below::new(&p, &v);
            for k in keys {
                let k = k.to_be_bytes();
                prop_assert_eq!(b.nothing_below(&k), oracle(&p, &v, &k), "key {:?}", k);
            }
        }
    }
}
