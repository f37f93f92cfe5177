//! Where a column family's tables live: its table paths (RocksDB's `cf_paths`, else the DB's
//! `db_paths`, else the DB directory alone), each a directory with a target size.
//!
//! Every table records the index of its directory in the MANIFEST (its path id, tag 15 of
//! `version::edit`); a live version resolves it to the directory once, when the table enters
//! the version, and the table is opened, deleted and copied there. Path 0 takes flushes and
//! ingested files; compactions choose a path by level or size (`compaction::output_path`).
//!
//! Invariant: in an open DB every family's paths are non-empty, so every live table knows its
//! directory. Empty paths (a version built without the options, as `Db::list_cf` and the
//! tests do) resolve to no directory: the DB directory, which the table cache then uses.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::types::FileNumber;

/// The most table paths a family may have (RocksDB's limit for `db_paths`).
pub(crate) const MAX_TABLE_PATHS: usize = 4;

/// One table directory and the bytes it should hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TablePath {
    pub dir: Arc<Path>,
    pub target_size: u64,
}

/// A family's table directories, in order: newer data goes to the earlier ones.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct TablePaths(Arc<[TablePath]>);

impl TablePaths {
    /// The paths `(directory, target size)` in order.
    pub fn new(paths: impl IntoIterator<Item = (PathBuf, u64)>) -> TablePaths {
        TablePaths(
            paths
                .into_iter()
                .map(|(dir, target_size)| TablePath { dir: Arc::from(dir), target_size })
                .collect(),
        )
    }

    /// `dir` alone, with no bound on its size.
    pub fn single(dir: &Path) -> TablePaths {
        TablePaths::new([(dir.to_path_buf(), u64::MAX)])
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn iter(&self) -> impl Iterator<Item = &TablePath> {
        self.0.iter()
    }

    /// The target sizes, in path order.
    pub fn targets(&self) -> Vec<u64> {
        self.0.iter().map(|p| p.target_size).collect()
    }

    /// The directory of path 0 (flushes and ingested files go there); `None` for empty paths.
    pub fn first_dir(&self) -> Option<&Arc<Path>> {
        self.0.first().map(|p| &p.dir)
    }

    /// The directory of path `path_id`; `None` for empty paths (not known: the DB directory).
    /// A path id beyond the paths is `InvalidArgument` naming table `number`: the DB was
    /// written with more paths than it is opened with, and the table is in none of these.
    pub fn dir_for(&self, number: FileNumber, path_id: u32) -> Result<Option<Arc<Path>>> {
        if self.0.is_empty() {
            return Ok(None);
        }
        match self.0.get(path_id as usize) {
            Some(p) => Ok(Some(p.dir.clone())),
            None => Err(Error::InvalidArgument(format!(
                "table {number} is at table path id {path_id} (its MANIFEST record), but the \
                 family has {} table path(s) ({}): open the DB with the cf_paths or db_paths \
                 it was written with",
                self.0.len(),
                self.0.iter().map(|p| p.dir.display().to_string()).collect::<Vec<_>>().join(", ")
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_ids_resolve_to_their_directory_or_a_clear_error() {
        let paths = TablePaths::new([(PathBuf::from("/fast"), 10), (PathBuf::from("/slow"), 99)]);
        assert_eq!(paths.targets(), vec![10, 99]);
        assert_eq!(paths.first_dir().map(|d| d.to_path_buf()), Some(PathBuf::from("/fast")));
        let dir = paths.dir_for(FileNumber(7), 1).unwrap().unwrap();
        assert_eq!(&*dir, Path::new("/slow"));
        let e = paths.dir_for(FileNumber(7), 2).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
        let msg = e.to_string();
        assert!(msg.contains("table 000007 is at table path id 2"), "{msg}");
        assert!(msg.contains("2 table path(s) (/fast, /slow)"), "{msg}");
        // Unknown paths: the DB directory, whatever the id.
        assert_eq!(TablePaths::default().dir_for(FileNumber(7), 3).unwrap(), None);
        assert_eq!(TablePaths::single(Path::new("/db")).len(), 1);
    }
}
