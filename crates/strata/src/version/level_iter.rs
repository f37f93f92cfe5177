//! The level iterator: one sorted view over the non-overlapping, sorted tables of a level
//! >= 1, opening each table only when the iteration reaches it.

use std::cmp::Ordering;
use std::sync::Arc;

use crate::comparator::KeyOrder;
use crate::error::{Error, Result};
use crate::iterator::InternalIterator;
use crate::sstable::table_cache::TableCache;
use crate::sstable::{ReadBlockOptions, ScanPlan};
use crate::version::levels::{TableFile, Version};

/// The files a [`LevelIterator`] walks: a level of a version it keeps alive (a user
/// iterator: one reference count per level, not one per file), or a list of its own (a
/// compaction's inputs).
pub(crate) enum LevelFiles {
    OfVersion(Arc<Version>, usize),
    Owned(Vec<Arc<TableFile>>),
}

impl std::ops::Deref for LevelFiles {
    type Target = [Arc<TableFile>];

    #[inline]
    fn deref(&self) -> &[Arc<TableFile>] {
        match self {
            LevelFiles::OfVersion(v, level) => &v.levels[*level],
            LevelFiles::Owned(files) => files,
        }
    }
}

pub(crate) struct LevelIterator {
    files: LevelFiles,
    tables: Arc<TableCache>,
    read: ReadBlockOptions,
    /// Index of the file `current` iterates.
    index: usize,
    current: Option<Box<dyn InternalIterator>>,
    error: Option<Error>,
    /// The order of the level's keys.
    order: KeyOrder,
    /// A multi-range scan's plan: each table plans its reads from it when opened, and a seek
    /// into the file that was open keeps its iterator (and the span it has read).
    plan: Option<Arc<ScanPlan>>,
    /// Under a plan, between a seek's start and its opening a file: the iterator of the file
    /// that was open (index, iterator), for `open` to take back if the seek lands there.
    parked: Option<(usize, Box<dyn InternalIterator>)>,
}

impl LevelIterator {
    /// Over `files`, sorted and disjoint in `order`.
    pub fn new(
        files: Vec<Arc<TableFile>>,
        tables: Arc<TableCache>,
        read: ReadBlockOptions,
        order: KeyOrder,
    ) -> Self {
        Self::over(LevelFiles::Owned(files), tables, read, order)
    }

    /// Over `files`, sorted and disjoint in `order`.
    pub fn over(
        files: LevelFiles,
        tables: Arc<TableCache>,
        read: ReadBlockOptions,
        order: KeyOrder,
    ) -> Self {
        LevelIterator {
            files,
            tables,
            read,
            index: 0,
            current: None,
            error: None,
            order,
            plan: None,
            parked: None,
        }
    }

    /// The iterator reading for the multi-range scan `plan` (see the field).
    pub fn with_scan_plan(mut self, plan: Arc<ScanPlan>) -> Self {
        self.plan = Some(plan);
        self
    }

    /// Opens file `i` as the current table; false (with the error recorded) on failure.
    fn open(&mut self, i: usize) -> bool {
        if let Some((at, it)) = self.parked.take() {
            if at == i {
                self.index = i;
                self.current = Some(it);
                return true;
            }
        }
        self.index = i;
        self.current = None;
        let Some(f) = self.files.get(i) else { return false };
        match self.tables.reader(f.number, &f.pinned) {
            Ok(t) => {
                self.current = Some(Box::new(t.iter_planned(self.read, self.plan.as_deref())));
                true
            }
            Err(e) => {
                self.error = Some(e);
                false
            }
        }
    }

    fn current_failed(&self) -> bool {
        self.current.as_ref().is_some_and(|c| c.status().is_err())
    }

    /// Moves to the first entry of the following files while the current one is exhausted.
    fn skip_forward(&mut self) {
        while self.current.as_ref().is_some_and(|c| !c.valid()) && !self.current_failed() {
            if self.index + 1 >= self.files.len() || !self.open(self.index + 1) {
                return;
            }
            if let Some(c) = self.current.as_mut() {
                c.seek_to_first();
            }
        }
    }

    /// Moves to the last entry of the preceding files while the current one is exhausted.
    fn skip_backward(&mut self) {
        while self.current.as_ref().is_some_and(|c| !c.valid()) && !self.current_failed() {
            if self.index == 0 || !self.open(self.index - 1) {
                self.current = None;
                return;
            }
            if let Some(c) = self.current.as_mut() {
                c.seek_to_last();
            }
        }
    }

    /// Before a seek: errors cleared, and the open file closed (under a plan, parked unless
    /// it failed).
    fn reset(&mut self) {
        let failed = self.error.take().is_some();
        self.parked = match self.current.take() {
            Some(c) if self.plan.is_some() && !failed && c.status().is_ok() => {
                Some((self.index, c))
            }
            _ => None,
        };
    }
}

impl InternalIterator for LevelIterator {
    fn valid(&self) -> bool {
        self.error.is_none() && self.current.as_ref().is_some_and(|c| c.valid())
    }

    fn seek_to_first(&mut self) {
        self.reset();
        if self.open(0) {
            if let Some(c) = self.current.as_mut() {
                c.seek_to_first();
            }
            self.skip_forward();
        }
    }

    fn seek_to_last(&mut self) {
        self.reset();
        if let Some(last) = self.files.len().checked_sub(1) {
            if self.open(last) {
                if let Some(c) = self.current.as_mut() {
                    c.seek_to_last();
                }
                self.skip_backward();
            }
        }
    }

    fn seek(&mut self, target: &[u8]) {
        self.reset();
        let o = &self.order;
        let i = self
            .files
            .partition_point(|f| o.compare_internal(&f.largest, target) == Ordering::Less);
        if i < self.files.len() && self.open(i) {
            if let Some(c) = self.current.as_mut() {
                c.seek(target);
            }
            self.skip_forward();
        }
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.reset();
        let o = &self.order;
        let i = self
            .files
            .partition_point(|f| o.compare_internal(&f.smallest, target) != Ordering::Greater);
        if i > 0 && self.open(i - 1) {
            if let Some(c) = self.current.as_mut() {
                c.seek_for_prev(target);
            }
            self.skip_backward();
        }
    }

    fn next(&mut self) {
        if let Some(c) = self.current.as_mut() {
            c.next();
        }
        self.skip_forward();
    }

    fn prev(&mut self) {
        if let Some(c) = self.current.as_mut() {
            c.prev();
        }
        self.skip_backward();
    }

    fn key(&self) -> &[u8] {
        self.current.as_ref().map_or(&[], |c| c.key())
    }

    fn value(&self) -> &[u8] {
        self.current.as_ref().map_or(&[], |c| c.value())
    }

    fn status(&self) -> Result<()> {
        if let Some(e) = &self.error {
            return Err(e.duplicate());
        }
        self.current.as_ref().map_or(Ok(()), |c| c.status())
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::env::{FileSystem, MemFs};
    use crate::filename::table_path;
    use crate::iterator::conformance::{check_internal_iterator, sample_entries};
    use crate::key::user_key;
    use crate::sstable::{TableBuilder, TableOptions};
    use crate::types::FileNumber;
    use crate::version::edit::FileMetaData;

    /// Writes `model` as consecutive tables of about `per_file` entries each, never splitting
    /// one user key's versions, and returns the level's files.
    fn level_of(fs: &MemFs, model: &[(Vec<u8>, Vec<u8>)], per_file: usize) -> Vec<Arc<TableFile>> {
        let opts =
            TableOptions { block_size: 64, block_restart_interval: 2, ..TableOptions::default() };
        let mut files = Vec::new();
        let mut i = 0;
        while i < model.len() {
            let number = FileNumber(files.len() as u64 + 1);
            let path = table_path(Path::new("/db"), number);
            let mut b = TableBuilder::new(&opts, fs.create(&path).unwrap(), path);
            let mut n = 0;
            while i < model.len() {
                let cut = n >= per_file && user_key(&model[i].0) != user_key(&model[i - 1].0);
                if cut {
                    break;
                }
                b.add(&model[i].0, &model[i].1).unwrap();
                i += 1;
                n += 1;
            }
            let meta = FileMetaData::from_summary(number, b.finish().unwrap());
            files.push(Arc::new(TableFile::new(meta)));
        }
        files
    }

    #[test]
    fn level_iterator_passes_the_conformance_suite() {
        for (n, per_file, seed) in [(0, 4, 1), (1, 4, 2), (40, 1, 3), (300, 7, 4), (500, 500, 5)] {
            let fs = MemFs::new();
            fs.create_dir_all(Path::new("/db")).unwrap();
            let model = sample_entries(n, seed);
            let files = level_of(&fs, &model, per_file);
            let tables = Arc::new(TableCache::new(
                Arc::new(fs.clone()),
                "/db".into(),
                if seed % 2 == 0 { usize::MAX } else { 2 },
                None,
            ));
            let read = ReadBlockOptions::default();
            let mut it =
                LevelIterator::new(files.clone(), tables.clone(), read, KeyOrder::Bytewise);
            check_internal_iterator(&mut it, &model, seed);
            // Under a scan plan (tables kept across seeks into them), the same.
            let plan = Arc::new(ScanPlan {
                ranges: model
                    .iter()
                    .step_by(5)
                    .map(|(k, _)| (user_key(k).to_vec(), vec![0xff]))
                    .collect(),
                coalesce: 1 << 10,
                ..ScanPlan::default()
            });
            let mut it =
                LevelIterator::new(files, tables, read, KeyOrder::Bytewise).with_scan_plan(plan);
            check_internal_iterator(&mut it, &model, seed);
        }
    }

    #[test]
    fn a_planned_seek_past_every_file_leaves_no_file_open() {
        let fs = MemFs::new();
        fs.create_dir_all(Path::new("/db")).unwrap();
        let model = sample_entries(100, 9);
        let files = level_of(&fs, &model, 10);
        let tables = Arc::new(TableCache::new(Arc::new(fs.clone()), "/db".into(), 8, None));
        let plan = Arc::new(ScanPlan::default());
        let read = ReadBlockOptions::default();
        let mut it =
            LevelIterator::new(files, tables, read, KeyOrder::Bytewise).with_scan_plan(plan);
        let last = &model.last().unwrap().0;
        it.seek(&model[95].0);
        assert!(it.valid());
        let past =
            crate::key::lookup_key(&[user_key(last), b"\xff"].concat(), crate::types::SeqNo::MAX);
        it.seek(&past);
        assert!(!it.valid(), "a seek past the last file");
        it.seek_for_prev(&crate::key::lookup_key(b"", crate::types::SeqNo::MAX));
        assert!(!it.valid(), "a seek before the first file");
        it.seek(&model[95].0);
        assert_eq!(it.key(), model[95].0.as_slice());
    }
}
