//! `DBPath`: a data directory with a target size (RocksDB's `DbPath`, for `db_paths` and
//! `cf_paths`).

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// A directory for table files and the bytes it should hold (`Options::db_paths`,
/// `Options::cf_paths`): newer data goes to the earlier paths of a list, older data to the
/// later ones, each path up to about its target size (the last takes the rest).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DBPath {
    path: PathBuf,
    target_size: u64,
}

impl DBPath {
    /// `path` with `target_size` bytes. `InvalidArgument` for a path holding a NUL byte
    /// (no file system accepts one, as the `rocksdb` crate refuses it).
    pub fn new<P: AsRef<Path>>(path: P, target_size: u64) -> Result<Self> {
        let path = path.as_ref();
        if path.as_os_str().as_encoded_bytes().contains(&0) {
            return Err(Error::InvalidArgument(format!(
                "DBPath {} must not contain NUL bytes",
                path.display()
            )));
        }
        Ok(DBPath { path: path.to_path_buf(), target_size })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The bytes it should hold.
    pub fn target_size(&self) -> u64 {
        self.target_size
    }
}
