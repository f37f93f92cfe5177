//! A `Version`: the immutable set of table files per level at one point in the MANIFEST.
//!
//! Invariants (checked by [`Version::apply`]): a file appears at most once; levels >= 1 are
//! sorted by smallest key and their files' key ranges do not overlap; L0 is ordered newest
//! first (largest sequence number, then file number, descending) and its files may overlap.
//! Keys are compared in the family's order (`crate::comparator`).
//! A file's largest key may be an exclusive bound ([`crate::key::range_end_bound`], the end
//! of a range tombstone): then the file does not contain that user key, and the next file of
//! the level may start at it.

use std::cmp::Ordering;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::blob_files::BlobFiles;
use super::edit::{FileMetaData, VersionEdit};
use super::fences::LevelFences;
use super::paths::TablePaths;
use crate::comparator::KeyOrder;
use crate::error::{Error, Result};
use crate::filename::table_path;
use crate::key::user_key;
use crate::sstable::table_cache::PinnedTable;
use crate::types::FileNumber;

/// The largest number of levels a DB may have (`Options::num_levels`).
pub(crate) const MAX_NUM_LEVELS: usize = 64;

/// A table file of a live version: its MANIFEST record and, at run time only, the reader the
/// table cache pinned for it (never part of the record: equality and encoding ignore it).
#[derive(Debug)]
pub(crate) struct TableFile {
    pub meta: FileMetaData,
    pub pinned: PinnedTable,
}

impl TableFile {
    /// A file whose directory is not known here (the DB directory).
    #[cfg(test)]
    pub fn new(meta: FileMetaData) -> TableFile {
        TableFile::located(meta, None)
    }

    /// A file in `dir` (`None`: the DB directory), its path id resolved by the family's
    /// table paths (`version::paths`).
    pub fn located(meta: FileMetaData, dir: Option<Arc<Path>>) -> TableFile {
        let pinned = PinnedTable::new(meta.global_seqno, dir);
        TableFile { meta, pinned }
    }

    /// The file's directory (`None`: the DB directory).
    pub fn dir(&self) -> Option<&Path> {
        self.pinned.dir().map(|d| &**d)
    }

    /// The file's path, for a DB in `db_dir`.
    pub fn path_in(&self, db_dir: &Path) -> PathBuf {
        table_path(self.dir().unwrap_or(db_dir), self.number)
    }
}

impl std::ops::Deref for TableFile {
    type Target = FileMetaData;

    fn deref(&self) -> &FileMetaData {
        &self.meta
    }
}

/// Files per level. Cheap to clone (files are shared).
///
/// Invariant: `fences[level]` are the fences of `levels[level]` for every sorted level
/// (`fences[0]` is empty): both are only set together, by [`Version::new`] and
/// [`Version::apply`].
#[derive(Clone, Debug)]
pub(crate) struct Version {
    /// Read everywhere, written only here (a change elsewhere would leave its fences stale).
    pub levels: Vec<Vec<Arc<TableFile>>>,
    /// Empty for every level in an order other than bytewise (fences read keys as bytes).
    fences: Vec<Arc<LevelFences>>,
    /// The order of the family's keys.
    order: KeyOrder,
    /// The family's table directories, which resolve the path ids of the files an edit adds.
    paths: TablePaths,
    /// The blob files the tables refer to (`version::blob_files`).
    blobs: BlobFiles,
}

fn l0_order(a: &FileMetaData, b: &FileMetaData) -> Ordering {
    b.largest_seqno.cmp(&a.largest_seqno).then(b.number.cmp(&a.number))
}

impl Version {
    /// An empty version with `num_levels` levels of keys in `order`.
    pub fn new(num_levels: usize, order: KeyOrder) -> Version {
        Version {
            levels: vec![Vec::new(); num_levels],
            fences: (0..num_levels).map(|_| Arc::new(LevelFences::default())).collect(),
            order,
            paths: TablePaths::default(),
            blobs: BlobFiles::default(),
        }
    }

    /// The blob files the version's tables refer to.
    pub fn blobs(&self) -> &BlobFiles {
        &self.blobs
    }

    /// The order of the family's keys.
    pub fn order(&self) -> &KeyOrder {
        &self.order
    }

    /// This (empty) version with the family's table directories: the files later edits add
    /// are placed by them (`version::paths`; empty paths: the DB directory).
    pub fn with_paths(mut self, paths: TablePaths) -> Version {
        debug_assert!(self.levels.iter().all(Vec::is_empty), "files already placed");
        self.paths = paths;
        self
    }

    /// The family's table directories.
    pub fn paths(&self) -> &TablePaths {
        &self.paths
    }

    /// The version after `edit`. Pure: `self` is unchanged. A deleted file that is not
    /// present, a duplicate file, a bad level or overlapping files in a level >= 1 are
    /// `Corruption` (the caller names the MANIFEST and record offset); a file at a path id
    /// the family's paths do not have is `InvalidArgument` ([`TablePaths::dir_for`]).
    pub fn apply(&self, edit: &VersionEdit) -> Result<Version> {
        let mut levels = self.levels.clone();
        let n = levels.len();
        let bad = |reason: String| Err(Error::corruption("", 0, reason));
        // A file deleted and added again unchanged (a trivial move) keeps its pinned reader.
        let mut removed: Vec<Arc<TableFile>> = Vec::new();
        // Levels that lost or gained a file: their fences are rebuilt.
        let mut changed = vec![false; n];
        for &(level, number) in &edit.deleted_files {
            if level >= n {
                return Err(level_out_of_range(level, n, number));
            }
            let before = levels[level].len();
            levels[level].retain(|f| {
                if f.number == number {
                    removed.push(f.clone());
                }
                f.number != number
            });
            if levels[level].len() == before {
                return bad(format!("edit deletes file {number} not present at level {level}"));
            }
            changed[level] = true;
        }
        let mut touched = vec![false; n];
        for (level, meta) in &edit.new_files {
            let level = *level;
            if level >= n {
                return Err(level_out_of_range(level, n, meta.number));
            }
            if self.order.compare_internal(&meta.smallest, &meta.largest) == Ordering::Greater {
                return bad(format!("file {} has smallest key > largest key", meta.number));
            }
            let file = match removed.iter().find(|f| f.meta == *meta) {
                Some(f) => f.clone(),
                None => {
                    let dir = self.paths.dir_for(meta.number, meta.path_id)?;
                    Arc::new(TableFile::located(meta.clone(), dir))
                }
            };
            levels[level].push(file);
            touched[level] = true;
            changed[level] = true;
        }
        let mut seen = HashSet::new();
        for files in &levels {
            for f in files {
                if !seen.insert(f.number) {
                    return bad(format!("file {} appears twice in the version", f.number));
                }
            }
        }
        for (level, files) in levels.iter_mut().enumerate() {
            if !touched[level] {
                continue;
            }
            if level == 0 {
                files.sort_by(|a, b| l0_order(a, b));
                continue;
            }
            files.sort_by(|a, b| self.order.compare_internal(&a.smallest, &b.smallest));
            for w in files.windows(2) {
                if !self.order.after_largest(user_key(&w[1].smallest), &w[0].largest) {
                    return bad(format!(
                        "files {} and {} overlap at level {level}",
                        w[0].number, w[1].number
                    ));
                }
            }
        }
        let fences = (0..n)
            .map(|level| match level {
                0 => Arc::new(LevelFences::default()),
                _ if !changed[level] => self.fences[level].clone(),
                _ if !self.order.is_bytewise() => Arc::new(LevelFences::default()),
                _ => Arc::new(level_fences(&levels[level])),
            })
            .collect();
        let blobs = self.blobs.apply(edit, levels.iter().flatten().map(|f| &f.meta))?;
        Ok(Version { levels, fences, order: self.order.clone(), paths: self.paths.clone(), blobs })
    }

    /// Number of files at `level`.
    pub fn num_files(&self, level: usize) -> usize {
        self.levels.get(level).map_or(0, Vec::len)
    }

    /// Total bytes of the files at `level`.
    pub fn level_bytes(&self, level: usize) -> u64 {
        self.levels.get(level).map_or(0, |fs| fs.iter().map(|f| f.file_size).sum())
    }

    /// Every file number in the version.
    pub fn file_numbers(&self) -> impl Iterator<Item = FileNumber> + '_ {
        self.levels.iter().flatten().map(|f| f.number)
    }

    /// Every file with its level.
    pub fn files(&self) -> impl Iterator<Item = (usize, &Arc<TableFile>)> + '_ {
        self.levels.iter().enumerate().flat_map(|(l, fs)| fs.iter().map(move |f| (l, f)))
    }

    /// The one file at sorted `level` (>= 1) whose key range can hold `ukey`, if any (a largest
    /// key that is a range tombstone's end bound is exclusive).
    #[inline]
    pub fn file_for_key(&self, level: usize, ukey: &[u8]) -> Option<&Arc<TableFile>> {
        #[cfg(test)]
        LEVEL_SEARCHES.with(|n| n.set(n.get() + 1));
        let files = &self.levels[level];
        let o = &self.order;
        if !o.is_bytewise() {
            let i = files.partition_point(|f| o.after_largest(ukey, &f.largest));
            return files.get(i).filter(|f| !o.lt(ukey, user_key(&f.smallest)));
        }
        let after = |i: usize| crate::key::after_largest(ukey, &files[i].largest);
        let below = |i: usize| ukey < user_key(&files[i].smallest);
        self.fences[level].file_for(ukey, after, below).map(|i| &files[i])
    }

    /// The edit that recreates this version from nothing (the start of a new MANIFEST).
    pub fn snapshot_edit(&self) -> VersionEdit {
        let mut e = VersionEdit::default();
        self.blobs.snapshot_into(&mut e);
        for (level, f) in self.files() {
            e.new_files.push((level, (**f).clone()));
        }
        e
    }
}

#[cfg(test)]
thread_local! {
    /// Calls of [`Version::file_for_key`] on this thread: what the point-read tests count.
    pub(crate) static LEVEL_SEARCHES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The fences of a sorted level's files.
fn level_fences(files: &[Arc<TableFile>]) -> LevelFences {
    LevelFences::new(files.iter().map(|f| (user_key(&f.smallest), user_key(&f.largest))))
}

/// An edit names `level` but the version has `n` levels. Below the largest level count the
/// engine supports, the files are fine and the `num_levels` option is too small (an invalid
/// argument naming the option); beyond it, the record is damaged.
fn level_out_of_range(level: usize, n: usize, number: crate::types::FileNumber) -> Error {
    if level < MAX_NUM_LEVELS {
        Error::InvalidArgument(format!(
            "the DB has table {number} at level {level} but num_levels is {n}: open it with \
             num_levels of at least {}",
            level + 1
        ))
    } else {
        Error::corruption("", 0, format!("edit names table {number} at level {level}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::make_internal_key;
    use crate::types::{SeqNo, ValueType};

    fn meta(n: u64, lo: &str, hi: &str, seq: u64) -> FileMetaData {
        FileMetaData {
            number: FileNumber(n),
            file_size: 100,
            smallest: make_internal_key(lo.as_bytes(), SeqNo(seq), ValueType::Value),
            largest: make_internal_key(hi.as_bytes(), SeqNo(seq), ValueType::Value),
            smallest_seqno: SeqNo(seq),
            largest_seqno: SeqNo(seq),
            num_entries: 1,
            num_deletions: 0,
            data_time: 0,
            global_seqno: crate::types::SeqNo::ZERO,
            path_id: 0,
            blob_refs: Vec::new(),
            file_checksum: None,
        }
    }

    #[test]
    fn files_are_placed_in_their_path_and_an_unknown_path_id_is_refused() {
        let paths = TablePaths::new([
            (std::path::PathBuf::from("/fast"), 1 << 20),
            (std::path::PathBuf::from("/slow"), u64::MAX),
        ]);
        let v = Version::new(3, KeyOrder::Bytewise).with_paths(paths);
        let mut e = VersionEdit::default();
        e.new_files.push((0, meta(1, "a", "k", 5)));
        e.new_files.push((1, FileMetaData { path_id: 1, ..meta(2, "a", "k", 3) }));
        let v = v.apply(&e).unwrap();
        assert_eq!(v.levels[0][0].path_in(Path::new("/db")), Path::new("/fast/000001.sst"));
        assert_eq!(v.levels[1][0].path_in(Path::new("/db")), Path::new("/slow/000002.sst"));
        // Later edits resolve with the same paths.
        let mut mv = VersionEdit::default();
        mv.deleted_files.push((1, FileNumber(2)));
        mv.new_files.push((2, FileMetaData { path_id: 1, ..meta(2, "a", "k", 3) }));
        let moved = v.apply(&mv).unwrap();
        assert_eq!(moved.levels[2][0].dir(), Some(Path::new("/slow")));
        let mut bad = VersionEdit::default();
        bad.new_files.push((2, FileMetaData { path_id: 2, ..meta(3, "x", "z", 1) }));
        let err = v.apply(&bad).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
        assert!(err.to_string().contains("table 000003 is at table path id 2"), "{err}");
        // Without paths (not known here) a file is in the DB directory.
        let plain = Version::new(3, KeyOrder::Bytewise).apply(&e).unwrap();
        assert_eq!(plain.levels[1][0].dir(), None);
        assert_eq!(plain.levels[1][0].path_in(Path::new("/db")), Path::new("/db/000002.sst"));
    }

    #[test]
    fn a_trivial_move_keeps_the_same_live_file_and_a_rewrite_does_not() {
        let mut e = VersionEdit::default();
        e.new_files.push((0, meta(1, "a", "k", 5)));
        let v = Version::new(3, KeyOrder::Bytewise).apply(&e).unwrap();
        let before = v.levels[0][0].clone();
        let mut mv = VersionEdit::default();
        mv.deleted_files.push((0, FileNumber(1)));
        mv.new_files.push((1, meta(1, "a", "k", 5)));
        let moved = v.apply(&mv).unwrap();
        assert!(Arc::ptr_eq(&before, &moved.levels[1][0]), "the pinned reader slot is kept");
        let mut changed = VersionEdit::default();
        changed.deleted_files.push((0, FileNumber(1)));
        changed.new_files.push((1, meta(1, "a", "m", 5)));
        let other = v.apply(&changed).unwrap();
        assert!(!Arc::ptr_eq(&before, &other.levels[1][0]));
    }

    #[test]
    fn apply_adds_sorts_and_deletes() {
        let v = Version::new(3, KeyOrder::Bytewise);
        let mut e = VersionEdit::default();
        e.new_files.push((0, meta(1, "a", "z", 5)));
        e.new_files.push((0, meta(2, "a", "z", 9)));
        e.new_files.push((1, meta(3, "m", "p", 1)));
        e.new_files.push((1, meta(4, "a", "c", 1)));
        let v2 = v.apply(&e).unwrap();
        assert_eq!(v.num_files(0), 0, "apply is pure");
        let l0: Vec<_> = v2.levels[0].iter().map(|f| f.number.0).collect();
        assert_eq!(l0, vec![2, 1], "L0 newest first");
        let l1: Vec<_> = v2.levels[1].iter().map(|f| f.number.0).collect();
        assert_eq!(l1, vec![4, 3], "L1 sorted by key");
        assert_eq!(v2.file_for_key(1, b"b").map(|f| f.number.0), Some(4));
        assert_eq!(v2.file_for_key(1, b"n").map(|f| f.number.0), Some(3));
        assert!(v2.file_for_key(1, b"d").is_none(), "between the files");
        assert!(v2.file_for_key(1, b"q").is_none(), "after the last file");
        let mut d = VersionEdit::default();
        d.deleted_files.push((1, FileNumber(4)));
        let v3 = v2.apply(&d).unwrap();
        assert_eq!(v3.num_files(1), 1);
        assert!(v3.file_for_key(1, b"b").is_none(), "a deletion rebuilds the level's fences");
        assert_eq!(v3.file_for_key(1, b"n").map(|f| f.number.0), Some(3));
        assert_eq!(v3.level_bytes(1), 100);
        let again = v2.apply(&v2.snapshot_edit());
        assert!(again.is_err(), "re-adding the same files is a duplicate");
        let rebuilt = Version::new(3, KeyOrder::Bytewise).apply(&v2.snapshot_edit()).unwrap();
        assert_eq!(rebuilt.file_numbers().count(), 4);
    }

    #[test]
    fn apply_rejects_bad_edits() {
        let v = Version::new(2, KeyOrder::Bytewise);
        let mut e = VersionEdit::default();
        e.deleted_files.push((0, FileNumber(9)));
        assert!(v.apply(&e).unwrap_err().is_corruption());
        let mut e = VersionEdit::default();
        e.new_files.push((5, meta(1, "a", "b", 1)));
        assert!(v.apply(&e).is_err());
        let mut e = VersionEdit::default();
        e.new_files.push((1, meta(1, "a", "m", 1)));
        e.new_files.push((1, meta(2, "k", "z", 1)));
        assert!(v.apply(&e).is_err(), "overlap at L1");
        let mut e = VersionEdit::default();
        e.new_files.push((1, meta(1, "z", "a", 1)));
        assert!(v.apply(&e).is_err(), "inverted range");
    }

    /// File A ends with a range tombstone whose end is file B's first key: A's largest key is
    /// an exclusive bound, so the two do not overlap and `end` belongs to B.
    #[test]
    fn range_end_bound_is_exclusive() {
        let mut a = meta(1, "a", "m", 5);
        a.largest = crate::key::range_end_bound(b"m");
        let b = meta(2, "m", "t", 5);
        let mut e = VersionEdit::default();
        e.new_files.push((1, a.clone()));
        e.new_files.push((1, b));
        let v = Version::new(2, KeyOrder::Bytewise).apply(&e).unwrap();
        let holder = |k: &[u8]| v.file_for_key(1, k).map(|f| f.number.0);
        assert_eq!(holder(b"l"), Some(1));
        assert_eq!(holder(b"m"), Some(2), "a get for the end key looks in B");
        assert_eq!(holder(b"u"), None);
        // An inclusive largest key at "m" does overlap B.
        let mut e = VersionEdit::default();
        e.new_files.push((1, meta(3, "a", "m", 5)));
        e.new_files.push((1, meta(4, "m", "t", 5)));
        assert!(Version::new(2, KeyOrder::Bytewise).apply(&e).is_err());
        // Picker overlap treats the bound as exclusive, on either side.
        use crate::compaction::picker::overlapping;
        let lo = make_internal_key(b"m", SeqNo(9), ValueType::Value);
        let hi = make_internal_key(b"n", SeqNo(9), ValueType::Value);
        let got: Vec<u64> = overlapping(&v, 1, &lo, &hi).iter().map(|f| f.number.0).collect();
        assert_eq!(got, vec![2]);
        let lo = make_internal_key(b"b", SeqNo(9), ValueType::Value);
        let got: Vec<u64> =
            overlapping(&v, 1, &lo, &a.largest).iter().map(|f| f.number.0).collect();
        assert_eq!(got, vec![1]);
    }
}
