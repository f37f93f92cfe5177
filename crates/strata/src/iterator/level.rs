//! The level iterator: one sorted view over the non-overlapping, sorted tables of a level
//! >= 1, opening each table only when the iteration reaches it.

use std::cmp::Ordering;
use std::sync::Arc;

use super::InternalIterator;
use crate::cache::table_cache::TableCache;
use crate::error::{Error, Result};
use crate::key::compare_internal;
use crate::sstable::ReadBlockOptions;
use crate::version::edit::FileMetaData;

pub(crate) struct LevelIterator {
    files: Vec<Arc<FileMetaData>>,
    tables: Arc<TableCache>,
    read: ReadBlockOptions,
    /// Index of the file `current` iterates.
    index: usize,
    current: Option<Box<dyn InternalIterator>>,
    error: Option<Error>,
}

impl LevelIterator {
    pub fn new(
        files: Vec<Arc<FileMetaData>>,
        tables: Arc<TableCache>,
        read: ReadBlockOptions,
    ) -> Self {
        LevelIterator { files, tables, read, index: 0, current: None, error: None }
    }

    /// Opens file `i` as the current table; false (with the error recorded) on failure.
    fn open(&mut self, i: usize) -> bool {
        self.index = i;
        self.current = None;
        let Some(f) = self.files.get(i) else { return false };
        match self.tables.reader(f) {
            Ok(t) => {
                self.current = Some(Box::new(t.iter(self.read)));
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

    fn reset(&mut self) {
        self.error = None;
        self.current = None;
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
        let i =
            self.files.partition_point(|f| compare_internal(&f.largest, target) == Ordering::Less);
        if i < self.files.len() && self.open(i) {
            if let Some(c) = self.current.as_mut() {
                c.seek(target);
            }
            self.skip_forward();
        }
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.reset();
        let i = self
            .files
            .partition_point(|f| compare_internal(&f.smallest, target) != Ordering::Greater);
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
