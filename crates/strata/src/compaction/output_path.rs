//! Which of a family's table paths a compaction writes its outputs to (RocksDB's output path
//! choice for `db_paths` / `cf_paths`). Pure functions of the paths' target sizes and the
//! options; flushes and ingested files always go to path 0 and are not placed here.
//!
//! - Leveled: the levels are laid out over the paths in order, each level at its target
//!   size (L0 and L1 at `max_bytes_for_level_base`, each level below at the one above times
//!   `max_bytes_for_level_multiplier`): a level goes to the first path whose room left after
//!   the levels above it still holds it whole; the last path takes whatever does not fit.
//!   The level targets are the static ones, whatever `level_compaction_dynamic_level_bytes`
//!   says (the DB turns that option off when a family has several paths, as RocksDB does).
//! - Universal, tiered and FIFO: by the output's estimated size (its inputs' bytes): the
//!   first path that holds it with room to spare for what later compactions will add before
//!   it is compacted again (the output times `(100 - size_ratio)%`, counting the paths
//!   before it too); else the last path.
//!
//! A trivial move keeps its files where they are: in leveled style a move whose files are
//! not all at the output path becomes a rewrite, so data moves to its level's path as it
//! goes down (RocksDB's rule); universal's moves (`allow_trivial_move`) stay moves.

use super::picker::{CompactionPlan, PickerOptions};
use super::style::CompactionStyle;

/// The path of an output at `level` in leveled style, for paths of `targets` bytes.
pub(crate) fn leveled_path_id(targets: &[u64], level: usize, base: u64, multiplier: f64) -> u32 {
    let Some(last) = targets.len().checked_sub(1) else { return 0 };
    let mut path = 0;
    let mut room = targets[0];
    // The level being laid out and its target size (L0 counts as large as L1).
    let (mut at, mut size) = (0usize, base);
    while path < last {
        if size > room {
            // This level does not fit in what is left of the path: the next path.
            path += 1;
            room = targets[path];
            continue;
        }
        if at == level {
            return path as u32;
        }
        room -= size;
        if at > 0 {
            size = (size as f64 * multiplier) as u64;
        }
        at += 1;
    }
    last as u32
}

/// The path of an output of `size` bytes in universal (tiered, FIFO) style, for paths of
/// `targets` bytes.
pub(crate) fn size_path_id(targets: &[u64], size: u64, size_ratio: u32) -> u32 {
    let Some(last) = targets.len().checked_sub(1) else { return 0 };
    // What later outputs may add before this one is compacted again.
    let future = u128::from(size) * u128::from(100 - size_ratio.min(100)) / 100;
    let mut before = 0u128;
    for (path, &target) in targets[..last].iter().enumerate() {
        if target > size && before + u128::from(target - size) > future {
            return path as u32;
        }
        before += u128::from(target);
    }
    last as u32
}

/// Sets `plan`'s output path for a family whose paths hold `targets` bytes, and turns a
/// leveled trivial move whose files are not all at that path into a rewrite. A deletion
/// writes nothing and is left as it is.
pub(crate) fn place(plan: &mut CompactionPlan, targets: &[u64], o: &PickerOptions) {
    if plan.deletion || targets.len() <= 1 {
        return;
    }
    let id = match o.style {
        CompactionStyle::Leveled => leveled_path_id(
            targets,
            plan.output_level,
            o.max_bytes_for_level_base,
            o.max_bytes_for_level_multiplier,
        ),
        CompactionStyle::Universal | CompactionStyle::Tiered | CompactionStyle::Fifo => {
            size_path_id(targets, plan.input_bytes(), o.universal.size_ratio)
        }
    };
    plan.output_path_id = id;
    if plan.trivial_move
        && o.style == CompactionStyle::Leveled
        && plan.all_inputs().any(|(_, f)| f.path_id != id)
    {
        plan.trivial_move = false;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::key::make_internal_key;
    use crate::types::{FileNumber, SeqNo, ValueType};
    use crate::version::edit::FileMetaData;
    use crate::version::levels::TableFile;

    const MB: u64 = 1 << 20;

    #[test]
    fn leveled_lays_the_levels_out_over_the_paths() {
        // Base 10 MB, multiplier 10: L0 10, L1 10, L2 100, L3 1000 MB.
        let path = |targets: &[u64], level| leveled_path_id(targets, level, 10 * MB, 10.0);
        // One path: always it.
        assert_eq!(path(&[0], 5), 0);
        assert_eq!(path(&[], 5), 0);
        // 25 MB holds L0 and L1; L2 and below go on.
        let two = [25 * MB, 1000 * MB];
        assert_eq!([path(&two, 0), path(&two, 1), path(&two, 2), path(&two, 6)], [0, 0, 1, 1]);
        // 15 MB holds L0 only: L1 does not fit in the 5 MB left.
        assert_eq!([path(&[15 * MB, 1], 0), path(&[15 * MB, 1], 1)], [0, 1]);
        // Three paths: L0+L1 in the first, L2 (100 MB) in the second's 150, L3 in the last.
        let three = [20 * MB, 150 * MB, 10 * MB];
        let got: Vec<u32> = (0..5).map(|l| path(&three, l)).collect();
        assert_eq!(got, [0, 0, 1, 2, 2]);
        // A level that fits no earlier path goes to the last, even one too small for it.
        assert_eq!(path(&[1, 2, 3], 0), 2);
        // A first path too small for L0 leaves every level to the next ones.
        assert_eq!([path(&[MB, 25 * MB, 0], 0), path(&[MB, 25 * MB, 0], 1)], [1, 1]);
        // Huge targets and multipliers do not overflow.
        assert_eq!(leveled_path_id(&[u64::MAX, 0], 40, u64::MAX / 2, 1e9), 1);
        assert_eq!(leveled_path_id(&[u64::MAX, 0], 1, u64::MAX / 2, 1e9), 0);
    }

    #[test]
    fn universal_takes_the_first_path_with_room_for_the_output_and_what_follows() {
        // size_ratio 1: an output of s needs a path with more than s + 0.99 s of room
        // (counting the paths before it).
        let path = |targets: &[u64], size| size_path_id(targets, size, 1);
        let two = [100 * MB, u64::MAX];
        assert_eq!(path(&two, 10 * MB), 0);
        assert_eq!(path(&two, 49 * MB), 0);
        assert_eq!(path(&two, 51 * MB), 1, "100 - 51 = 49 MB left, under 50.49 MB to come");
        assert_eq!(path(&two, 100 * MB), 1, "the path must exceed the output");
        // The paths before count toward what is to come.
        let three = [100 * MB, 100 * MB, u64::MAX];
        assert_eq!(path(&three, 60 * MB), 1, "40 MB left in the first, 100 + 40 in the second");
        // size_ratio of 100 or more: nothing to come, a path larger than the output does.
        assert_eq!(size_path_id(&two, 99 * MB, 100), 0);
        assert_eq!(size_path_id(&two, 99 * MB, 500), 0);
        assert_eq!(path(&[10], 1 << 40), 0, "one path");
        assert_eq!(path(&[], 1), 0);
    }

    fn file(n: u64, path_id: u32) -> Arc<TableFile> {
        Arc::new(TableFile::new(FileMetaData {
            number: FileNumber(n),
            file_size: 4 * MB,
            smallest: make_internal_key(format!("k{n}").as_bytes(), SeqNo(1), ValueType::Value),
            largest: make_internal_key(format!("k{n}z").as_bytes(), SeqNo(1), ValueType::Value),
            path_id,
            ..FileMetaData::default()
        }))
    }

    #[test]
    fn a_leveled_move_across_paths_becomes_a_rewrite() {
        let mut o = PickerOptions::for_tests(4, 2);
        o.max_bytes_for_level_base = 10 * MB;
        let targets = [25 * MB, u64::MAX];
        // L1 -> L2: the output goes to path 1; a file at path 0 is rewritten there.
        let mut plan = CompactionPlan::trivial_move(1, 2, vec![file(1, 0)], "level size");
        place(&mut plan, &targets, &o);
        assert_eq!((plan.output_path_id, plan.trivial_move), (1, false));
        // Already there: it moves.
        let mut plan = CompactionPlan::trivial_move(2, 3, vec![file(1, 1)], "level size");
        place(&mut plan, &targets, &o);
        assert_eq!((plan.output_path_id, plan.trivial_move), (1, true));
        // L0 -> L1 stays on path 0 and moves.
        let mut plan = CompactionPlan::trivial_move(0, 1, vec![file(1, 0)], "L0 files");
        place(&mut plan, &targets, &o);
        assert_eq!((plan.output_path_id, plan.trivial_move), (0, true));
        // Universal keeps its moves wherever they are; the output path goes by size.
        o.style = CompactionStyle::Universal;
        let mut plan = CompactionPlan::trivial_move(0, 3, vec![file(1, 0)], "size ratio");
        place(&mut plan, &[MB, u64::MAX], &o);
        assert_eq!((plan.output_path_id, plan.trivial_move), (1, true));
        // Deletions write nothing; one path needs no choice.
        let mut plan = CompactionPlan::deletion(0, vec![file(1, 1)], "fifo");
        place(&mut plan, &targets, &o);
        assert_eq!(plan.output_path_id, 0);
        let mut plan = CompactionPlan::trivial_move(1, 2, vec![file(1, 0)], "level size");
        o.style = CompactionStyle::Leveled;
        place(&mut plan, &[1], &o);
        assert_eq!((plan.output_path_id, plan.trivial_move), (0, true));
    }
}
