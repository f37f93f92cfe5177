//! Forced blob garbage collection (RocksDB's `blob_garbage_collection_force_threshold`):
//! when the blob files under the age cutoff (the oldest `cutoff` share) are at least `force`
//! garbage, the tables still referring to the oldest of them are rewritten, even when no
//! level needs a compaction; the job relocates their live values out of the old files
//! (`crate::blob::writer`), so the oldest file loses its last references and is deleted.
//! Each such compaction removes one table's references to the oldest file, so the sequence
//! ends. Leveled, universal and tiered styles: a table below L0 is part of a sorted run (a
//! level), which its rewrite in place keeps sorted; FIFO keeps its tables in L0 and is left
//! out (its files expire whole).

use std::collections::HashSet;

use super::picker::{level_targets, plan_for, CompactionPlan, PickContext, PickerOptions};
use crate::types::FileNumber;
use crate::version::levels::Version;

/// The compaction that collects the oldest blob file, if the garbage under the cutoff calls
/// for one: the deepest table referring to it, rewritten in its level.
pub(crate) fn pick_forced(
    v: &Version,
    o: &PickerOptions,
    busy: &HashSet<FileNumber>,
    cutoff: f64,
    force: f64,
) -> Option<CompactionPlan> {
    let files: Vec<_> = v.blobs().iter().collect();
    let n = ((files.len() as f64) * cutoff.clamp(0.0, 1.0)).floor() as usize;
    if n == 0 {
        return None;
    }
    let (bytes, garbage) =
        files[..n].iter().fold((0u64, 0u64), |(b, g), (_, m)| (b + m.bytes, g + m.garbage_bytes));
    if bytes == 0 || (garbage as f64) < force * bytes as f64 {
        return None;
    }
    let oldest = files[0].0;
    let (level, table) = v
        .files()
        .filter(|(l, f)| *l > 0 && f.blob_refs.contains(&oldest) && !busy.contains(&f.number))
        .max_by_key(|(l, f)| (*l, std::cmp::Reverse(f.number)))?;
    let t = level_targets(v, o);
    let c = PickContext { v, o, t: &t, busy };
    let mut plan = plan_for(&c, level, level, vec![table.clone()])?;
    plan.reason = "blob garbage";
    Some(plan)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::make_internal_key;
    use crate::types::{SeqNo, ValueType};
    use crate::version::edit::{BlobFileAddition, BlobGarbage, FileMetaData, VersionEdit};

    fn table(n: u64, lo: &str, hi: &str, refs: &[u64]) -> FileMetaData {
        FileMetaData {
            number: FileNumber(n),
            file_size: 1000,
            smallest: make_internal_key(lo.as_bytes(), SeqNo(1), ValueType::Value),
            largest: make_internal_key(hi.as_bytes(), SeqNo(1), ValueType::Value),
            num_entries: 10,
            blob_refs: refs.iter().map(|&r| FileNumber(r)).collect(),
            file_checksum: None,
            ..FileMetaData::default()
        }
    }

    fn version(garbage: u64) -> Version {
        let mut e = VersionEdit::default();
        for b in [1u64, 2, 3, 4] {
            e.blob_files_added.push(BlobFileAddition {
                number: FileNumber(b),
                records: 10,
                bytes: 1000,
                file_checksum: None,
            });
        }
        e.blob_garbage.push(BlobGarbage { number: FileNumber(1), records: 5, bytes: garbage });
        e.new_files.push((6, table(10, "a", "f", &[1, 3])));
        e.new_files.push((6, table(11, "g", "m", &[2, 4])));
        e.new_files.push((5, table(12, "n", "z", &[1])));
        Version::new(7, crate::comparator::KeyOrder::Bytewise).apply(&e).unwrap()
    }

    #[test]
    fn the_deepest_table_of_the_oldest_file_is_rewritten_past_the_threshold() {
        let o = PickerOptions::for_tests(7, 4);
        let busy = HashSet::new();
        // Cutoff 0.5: files 1 and 2 (2000 bytes). 900 bytes of garbage is 45%.
        assert!(pick_forced(&version(900), &o, &busy, 0.5, 0.5).is_none());
        let plan = pick_forced(&version(1000), &o, &busy, 0.5, 0.5).unwrap();
        assert_eq!((plan.start_level, plan.output_level), (6, 6));
        assert_eq!(plan.inputs[0].number, FileNumber(10));
        assert_eq!(plan.reason, "blob garbage");
        // Busy: the other table referring to file 1.
        let busy = HashSet::from([FileNumber(10)]);
        let plan = pick_forced(&version(1000), &o, &busy, 0.5, 0.5).unwrap();
        assert_eq!(plan.inputs[0].number, FileNumber(12));
        // A cutoff holding no file: nothing.
        assert!(pick_forced(&version(1000), &o, &HashSet::new(), 0.2, 0.1).is_none());
    }
}
