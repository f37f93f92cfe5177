//! `SstFileWriter`: builds a table file outside any DB, for [`crate::Db::ingest_external_file`].
//!
//! The file is an ordinary table (`docs/format/sstable.md`) written with the family's table
//! options (block size, compression of the last level, Bloom bits, index type, checksum),
//! through `Options::fs`. Every entry and range tombstone is stored at sequence number 0 and
//! the properties block carries `external_file_version = 1`: ingestion may give the file a
//! global sequence number, which the DB records in its MANIFEST and applies when reading.
//!
//! Contract: point entries (put, merge, delete) come in strictly increasing user-key order,
//! each user key at most once; a violation is `InvalidArgument` naming both keys and leaves
//! the writer usable. Range deletions may come in any order, interleaved with points; a
//! file's range deletions do not hide its own point entries (they share one sequence number).

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::key::{make_internal_key, user_key};
use crate::options::Options;
use crate::range_del::RangeTombstone;
use crate::sstable::{TableBuilder, TableOptions};
use crate::types::{SeqNo, ValueType};

/// What [`SstFileWriter::finish`] wrote (RocksDB's `ExternalSstFileInfo`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExternalSstFileInfo {
    /// The file written.
    pub file_path: PathBuf,
    /// Smallest user key of a point entry (empty when the file has only range deletions).
    pub smallest_key: Vec<u8>,
    /// Largest user key of a point entry (empty when the file has only range deletions).
    pub largest_key: Vec<u8>,
    /// Smallest range deletion start (empty without range deletions).
    pub smallest_range_del_key: Vec<u8>,
    /// Largest range deletion end, exclusive (empty without range deletions).
    pub largest_range_del_key: Vec<u8>,
    /// Always 0: ingestion assigns the file's sequence number.
    pub sequence_number: u64,
    /// Bytes of the finished file.
    pub file_size: u64,
    /// Point entries (puts, merges, deletes).
    pub num_entries: u64,
    /// Range deletions.
    pub num_range_del_entries: u64,
}

/// Writes an external table file (see the module doc).
pub struct SstFileWriter {
    opts: Options,
    table: TableOptions,
    open: Option<Open>,
    /// The size of the file the last `finish` wrote (0 before any).
    finished_size: u64,
}

struct Open {
    path: PathBuf,
    builder: TableBuilder,
    /// The last point entry's user key.
    last_key: Option<Vec<u8>>,
    smallest_key: Vec<u8>,
    num_entries: u64,
    range_dels: Vec<RangeTombstone>,
}

impl SstFileWriter {
    /// A writer building files with `opts`' table settings (those of its last level, where
    /// ingested files that overlap nothing go) and file system.
    pub fn create(opts: &Options) -> SstFileWriter {
        let table = opts.table_options_for_level(opts.num_levels.saturating_sub(1));
        SstFileWriter { opts: opts.clone(), table, open: None, finished_size: 0 }
    }

    /// Starts the file `path` (created, or truncated when it exists). A file started before
    /// and not finished is abandoned.
    pub fn open(&mut self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref().to_path_buf();
        let file = self.opts.fs.create(&path)?;
        let mut builder = TableBuilder::new(&self.table, file, path.clone());
        builder.set_external();
        self.open = Some(Open {
            path,
            builder,
            last_key: None,
            smallest_key: Vec::new(),
            num_entries: 0,
            range_dels: Vec::new(),
        });
        Ok(())
    }

    /// Adds `key -> value`, or `InvalidArgument` with timestamps (name one:
    /// [`SstFileWriter::put_with_ts`]).
    pub fn put(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.without_ts("SstFileWriter::put")?;
        self.add(key.as_ref(), value.as_ref(), ValueType::Value)
    }

    /// Adds the wide-column entity `columns` as `key`'s value (RocksDB's
    /// `SstFileWriter::PutEntity`; `InvalidArgument` with timestamps or a column named twice).
    pub fn put_entity<N: AsRef<[u8]>, V: AsRef<[u8]>>(
        &mut self,
        key: impl AsRef<[u8]>,
        columns: &[(N, V)],
    ) -> Result<()> {
        self.without_ts("SstFileWriter::put_entity")?;
        let entity = crate::wide_columns::WideColumns::from_columns(columns)?.encode();
        self.add(key.as_ref(), &entity, ValueType::Entity)
    }

    /// Adds a merge operand for `key` (`InvalidArgument` with timestamps).
    pub fn merge(&mut self, key: impl AsRef<[u8]>, operand: impl AsRef<[u8]>) -> Result<()> {
        self.without_ts("SstFileWriter::merge")?;
        self.add(key.as_ref(), operand.as_ref(), ValueType::Merge)
    }

    /// `InvalidArgument` for a write without a timestamp when the options have them.
    fn without_ts(&self, what: &str) -> Result<()> {
        match &self.opts.timestamps {
            None => Ok(()),
            Some(_) => Err(Error::InvalidArgument(format!(
                "{what}: the options have user-defined timestamps: name one (put_with_ts, \
                 delete_with_ts)"
            ))),
        }
    }

    /// Adds `key` at user-defined timestamp `ts` (options with timestamps of `ts`'s size,
    /// `Options::set_comparator_with_ts`: the stored key is `key | ts`); `InvalidArgument`
    /// otherwise.
    pub fn put_with_ts(
        &mut self,
        key: impl AsRef<[u8]>,
        ts: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
    ) -> Result<()> {
        let k = self.key_with_ts(key.as_ref(), ts.as_ref(), "SstFileWriter::put_with_ts")?;
        self.add(&k, value.as_ref(), ValueType::Value)
    }

    /// Deletes `key` at user-defined timestamp `ts`, as [`SstFileWriter::put_with_ts`].
    pub fn delete_with_ts(&mut self, key: impl AsRef<[u8]>, ts: impl AsRef<[u8]>) -> Result<()> {
        let k = self.key_with_ts(key.as_ref(), ts.as_ref(), "SstFileWriter::delete_with_ts")?;
        self.add(&k, b"", ValueType::Deletion)
    }

    /// `key | ts` for options with timestamps of `ts`'s size.
    fn key_with_ts(&self, key: &[u8], ts: &[u8], what: &str) -> Result<Vec<u8>> {
        let Some(t) = &self.opts.timestamps else {
            return Err(crate::options::no_timestamps(what));
        };
        if ts.len() != t.size() {
            return Err(Error::InvalidArgument(format!(
                "{what}: a {}-byte timestamp, the options' have {}",
                ts.len(),
                t.size()
            )));
        }
        Ok([key, ts].concat())
    }

    /// Adds a deletion of `key`, or `InvalidArgument` with timestamps (name one:
    /// [`SstFileWriter::delete_with_ts`]).
    pub fn delete(&mut self, key: impl AsRef<[u8]>) -> Result<()> {
        self.without_ts("SstFileWriter::delete")?;
        self.add(key.as_ref(), b"", ValueType::Deletion)
    }

    /// Deletes `[begin, end)` in the DB the file is ingested into (not the file's own
    /// entries). `begin > end` is `InvalidArgument`; an empty range is ignored.
    pub fn delete_range(&mut self, begin: impl AsRef<[u8]>, end: impl AsRef<[u8]>) -> Result<()> {
        let (begin, end) = (begin.as_ref(), end.as_ref());
        self.without_ts("SstFileWriter::delete_range")?;
        let order = self.table.order.clone();
        let o = self.open_file()?;
        if order.lt(end, begin) {
            return Err(Error::InvalidArgument(format!(
                "SstFileWriter {}: delete_range begin {begin:?} is after end {end:?}",
                o.path.display()
            )));
        }
        if begin == end {
            return Ok(());
        }
        let t = RangeTombstone::new(begin, end, SeqNo::ZERO);
        o.builder.add_range_tombstone(&t);
        o.range_dels.push(t);
        Ok(())
    }

    /// Bytes written so far: an estimate while a file is open, the finished file's size
    /// after [`Self::finish`] (as RocksDB's `FileSize`).
    pub fn file_size(&self) -> u64 {
        self.open.as_ref().map_or(self.finished_size, |o| o.builder.estimated_file_size())
    }

    /// Writes the rest of the file and syncs it. A file with no entry and no range deletion
    /// is refused (`InvalidArgument`) and left unfinished.
    pub fn finish(&mut self) -> Result<ExternalSstFileInfo> {
        let Some(o) = self.open.take() else {
            return Err(Error::InvalidArgument(
                "SstFileWriter::finish: no file is open (call open first)".to_string(),
            ));
        };
        if o.num_entries == 0 && o.range_dels.is_empty() {
            let path = o.path.clone();
            self.open = Some(o);
            return Err(Error::InvalidArgument(format!(
                "SstFileWriter {}: cannot finish a file with no entries",
                path.display()
            )));
        }
        let summary = o.builder.finish()?;
        self.finished_size = summary.file_size;
        let order = &self.table.order;
        let smallest_range_del_key =
            o.range_dels.iter().map(|t| &t.start).min_by(|a, b| order.compare(a, b));
        let largest_range_del_key =
            o.range_dels.iter().map(|t| &t.end).max_by(|a, b| order.compare(a, b));
        let smallest_range_del_key = smallest_range_del_key.cloned().unwrap_or_default();
        let largest_range_del_key = largest_range_del_key.cloned().unwrap_or_default();
        Ok(ExternalSstFileInfo {
            file_path: o.path,
            smallest_key: o.smallest_key,
            largest_key: o.last_key.unwrap_or_default(),
            smallest_range_del_key,
            largest_range_del_key,
            sequence_number: 0,
            file_size: summary.file_size,
            num_entries: o.num_entries,
            num_range_del_entries: o.range_dels.len() as u64,
        })
    }

    fn open_file(&mut self) -> Result<&mut Open> {
        self.open.as_mut().ok_or_else(|| {
            Error::InvalidArgument("SstFileWriter: no file is open (call open first)".to_string())
        })
    }

    fn add(&mut self, key: &[u8], value: &[u8], t: ValueType) -> Result<()> {
        let order = self.table.order.clone();
        let o = self.open_file()?;
        if let Some(last) = &o.last_key {
            if !order.lt(last, key) {
                return Err(Error::InvalidArgument(format!(
                    "SstFileWriter {}: key {key:?} must sort after the previous key {last:?} \
                     (keys are added in strictly increasing order)",
                    o.path.display()
                )));
            }
        }
        let ikey = make_internal_key(key, SeqNo::ZERO, t);
        o.builder.add(&ikey, value)?;
        if o.last_key.is_none() {
            o.smallest_key = user_key(&ikey).to_vec();
        }
        o.last_key = Some(key.to_vec());
        o.num_entries += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::env::MemFs;
    use crate::Db;

    /// Ingestion refuses an external file holding a blob index, naming the file and the key:
    /// this writer's API cannot add one, but a file made elsewhere can hold one, and its
    /// value would point into blob files of another DB.
    #[test]
    fn ingestion_refuses_an_external_file_with_a_blob_index() {
        let fs = MemFs::new();
        let opts = Options { fs: Arc::new(fs), ..Options::default() };
        let db = Db::open(&opts, "/db").unwrap();
        let mut w = SstFileWriter::create(&opts);
        w.open("/ext.sst").unwrap();
        w.put(b"a", b"1").unwrap();
        w.add(b"b", &[0u8; 16], ValueType::BlobIndex).unwrap();
        w.finish().unwrap();
        let e = db.ingest_external_file(["/ext.sst"]).unwrap_err().to_string();
        assert!(e.contains("/ext.sst") && e.contains("blob index") && e.contains("[98]"), "{e}");
        assert_eq!(db.get(b"a").unwrap(), None, "nothing of the file was ingested");
    }
}
