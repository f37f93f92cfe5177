//! Writing blob files: [`BlobFileWriter`] writes one file; [`BlobOutput`] sits between a
//! flush's or compaction's stream of surviving entries and its tables, moving large values
//! into blob files (and, for garbage collection, values out of old blob files) and keeping
//! account of which blob files each table refers to.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::format::{self, Footer, Header, FOOTER_LEN, HEADER_LEN};
use super::index::BlobIndex;
use crate::env::{FileSystem, WritableFile};
use crate::error::{Error, Result};
use crate::filename::blob_path;
use crate::iterator::BlobFetch;
use crate::key::{parse_internal_key, TRAILER_LEN};
use crate::sstable::compression::Compressor;
use crate::sstable::CompressionType;
use crate::statistics::{Histogram, Statistics, StopWatch, Ticker};
use crate::types::{FileNumber, ValueType};
use crate::version::edit::BlobFileAddition;

/// One blob file being written. With `statistics`, it counts what RocksDB's blob file
/// writer counts: the bytes written (header, records, footer), each sync and its time, each
/// record's write time and, when the file compresses, each value's compression time.
pub(crate) struct BlobFileWriter {
    number: FileNumber,
    path: PathBuf,
    file: Box<dyn WritableFile>,
    offset: u64,
    records: u64,
    record_bytes: u64,
    compressor: Compressor,
    /// Whether values are offered to a compressor (their compression is timed).
    compresses: bool,
    buf: Vec<u8>,
    statistics: Option<Arc<Statistics>>,
    /// The running CRC32C of every byte written (`BlobWriteConfig::file_checksum`).
    crc: Option<u32>,
}

impl BlobFileWriter {
    /// A writer of blob file `number` into `file`, which the caller created at `path` (a
    /// flush's or compaction's with `FileSystem::create`, the blob file of values written at
    /// commit with `FileSystem::create_foreground`), as `cfg` says (its family, compression
    /// and statistics): writes the header.
    pub fn start(
        path: PathBuf,
        mut file: Box<dyn WritableFile>,
        number: FileNumber,
        cfg: &BlobWriteConfig,
    ) -> Result<BlobFileWriter> {
        let compression = cfg.compression.stored_as();
        let statistics = cfg.statistics.clone();
        let column_family = cfg.column_family;
        let header = Header { compression, column_family }.encode();
        file.append(&header)?;
        let crc = cfg.file_checksum.then(|| crc32c::crc32c(&header));
        tick(statistics.as_ref(), Ticker::BlobDbBlobFileBytesWritten, HEADER_LEN as u64);
        Ok(BlobFileWriter {
            number,
            path,
            file,
            offset: HEADER_LEN as u64,
            records: 0,
            record_bytes: 0,
            compressor: Compressor::new(compression, cfg.zstd_level),
            compresses: compression != CompressionType::None,
            buf: Vec::new(),
            statistics,
            crc,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes written so far.
    pub fn len(&self) -> u64 {
        self.offset
    }

    /// Appends the record of `key` and `value`; returns where the value is.
    pub fn add(&mut self, key: &[u8], value: &[u8]) -> Result<BlobIndex> {
        let timer = StopWatch::start(
            self.statistics.as_ref().filter(|_| self.compresses),
            Histogram::BlobDbCompressionMicros,
        );
        let (compression, stored) = self.compressor.compress(value);
        drop(timer);
        if key.len() > u32::MAX as usize || stored.len() > u32::MAX as usize {
            return Err(Error::InvalidArgument(format!(
                "a {}-byte key with a {}-byte value does not fit a blob record",
                key.len(),
                stored.len()
            )));
        }
        self.buf.clear();
        format::put_record_header(&mut self.buf, key, stored, compression);
        self.buf.extend_from_slice(key);
        {
            let _timer =
                StopWatch::start(self.statistics.as_ref(), Histogram::BlobDbBlobFileWriteMicros);
            append(self.file.as_mut(), &mut self.crc, &self.buf)?;
            append(self.file.as_mut(), &mut self.crc, stored)?;
        }
        let size = format::record_size(key.len(), stored.len() as u64);
        tick(self.statistics.as_ref(), Ticker::BlobDbBlobFileBytesWritten, size);
        let index = BlobIndex {
            file: self.number,
            offset: self.offset + (self.buf.len() as u64),
            size: stored.len() as u64,
            compression,
        };
        self.offset += size;
        self.records += 1;
        self.record_bytes += size;
        Ok(index)
    }

    /// Hands the records appended so far to the OS (readers of the file see them).
    pub fn flush(&mut self) -> Result<()> {
        self.file.flush()
    }

    /// Makes the records appended so far durable.
    pub fn sync(&mut self) -> Result<()> {
        counted_sync(self.statistics.as_ref(), || self.file.sync())
    }

    /// Hands the records appended so far to the OS and returns a handle that makes them
    /// durable without holding the writer (`WritableFile::syncer`); `None` when the file
    /// system has none (then [`Self::sync`]).
    pub fn syncer(&mut self) -> Result<Option<BlobSyncer>> {
        self.file.flush()?;
        let statistics = self.statistics.clone();
        Ok(self.file.syncer().map(|inner| BlobSyncer { inner, statistics }))
    }

    /// Writes the footer and syncs the file (its directory entry is the caller's to sync).
    pub fn finish(mut self) -> Result<BlobFileAddition> {
        let footer = Footer { records: self.records, record_bytes: self.record_bytes };
        append(self.file.as_mut(), &mut self.crc, &footer.encode())?;
        tick(self.statistics.as_ref(), Ticker::BlobDbBlobFileBytesWritten, FOOTER_LEN as u64);
        crate::kill_point!("blob.sync");
        self.file.flush()?;
        self.sync()?;
        Ok(BlobFileAddition {
            number: self.number,
            records: self.records,
            bytes: self.record_bytes,
            file_checksum: self.crc,
        })
    }
}

/// Appends `data` to `file`, keeping the running checksum `crc` (when one is kept).
fn append(file: &mut dyn WritableFile, crc: &mut Option<u32>, data: &[u8]) -> Result<()> {
    file.append(data)?;
    if let Some(c) = crc {
        *c = crc32c::crc32c_append(*c, data);
    }
    Ok(())
}

/// A handle that makes a blob file's records durable without holding its writer
/// ([`BlobFileWriter::syncer`]), counting the sync as the writer's own are counted.
pub(crate) struct BlobSyncer {
    inner: Box<dyn crate::env::FileSyncer>,
    statistics: Option<Arc<Statistics>>,
}

impl BlobSyncer {
    pub fn sync(&self) -> Result<()> {
        counted_sync(self.statistics.as_ref(), || self.inner.sync())
    }
}

/// Runs `sync`, a blob file's, timed and counted in `statistics`.
fn counted_sync(
    statistics: Option<&Arc<Statistics>>,
    sync: impl FnOnce() -> Result<()>,
) -> Result<()> {
    let _timer = StopWatch::start(statistics, Histogram::BlobDbBlobFileSyncMicros);
    sync()?;
    tick(statistics, Ticker::BlobDbBlobFileSynced, 1);
    Ok(())
}

fn tick(statistics: Option<&Arc<Statistics>>, t: Ticker, n: u64) {
    if let Some(s) = statistics {
        s.tick(t, n);
    }
}

/// How an output writes blob files: the family's blob options as a flush or compaction (or
/// a commit, `db/blob_log.rs`) uses them.
#[derive(Clone, Debug)]
pub(crate) struct BlobWriteConfig {
    /// Values of at least this many bytes go to blob files (`None`: blob files are off, and
    /// only relocated values are moved, back into the tables).
    pub min_blob_size: Option<u64>,
    /// A blob file is finished once it holds this many bytes.
    pub file_size: u64,
    pub compression: CompressionType,
    pub zstd_level: i32,
    pub column_family: u32,
    /// Garbage collection: values in blob files numbered below this are rewritten (into a
    /// new blob file, or inline when blob files are off). `None`: no collection.
    pub relocate_below: Option<FileNumber>,
    /// Where the blob files written and the values relocated are counted: the DB's
    /// `Options::statistics` (a family's own options hold none of their own).
    pub statistics: Option<Arc<Statistics>>,
    /// Keep the CRC32C of each file whole for the MANIFEST (`Options::file_checksums`).
    pub file_checksum: bool,
}

/// Counts of blob records by file: what a compaction read (indexes in its input) or wrote
/// (indexes in its output). Their difference is the garbage the compaction made.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct BlobFlow {
    pub by_file: BTreeMap<FileNumber, (u64, u64)>,
}

impl BlobFlow {
    /// Counts the index `value` of an entry of `user_key`. A damaged index is counted
    /// nowhere: whoever reads the value reports it.
    pub fn count(&mut self, user_key: &[u8], value: &[u8]) {
        if let Ok(i) = BlobIndex::decode(value) {
            self.count_index(user_key.len(), &i);
        }
    }

    pub fn count_index(&mut self, key_len: usize, i: &BlobIndex) {
        let e = self.by_file.entry(i.file).or_default();
        e.0 += 1;
        e.1 += i.record_bytes(key_len);
    }

    pub fn merge(&mut self, other: &BlobFlow) {
        for (&n, &(r, b)) in &other.by_file {
            let e = self.by_file.entry(n).or_default();
            e.0 += r;
            e.1 += b;
        }
    }

    /// What `self` (an input) has that `out` (the output) does not: the garbage.
    pub fn garbage(&self, out: &BlobFlow) -> Vec<crate::version::edit::BlobGarbage> {
        self.by_file
            .iter()
            .filter_map(|(&number, &(r, b))| {
                let (or, ob) = out.by_file.get(&number).copied().unwrap_or_default();
                let (records, bytes) = (r.saturating_sub(or), b.saturating_sub(ob));
                (records > 0 || bytes > 0).then_some(crate::version::edit::BlobGarbage {
                    number,
                    records,
                    bytes,
                })
            })
            .collect()
    }
}

/// Routes the entries of one output stream (a flush, or one subcompaction) on their way to
/// the tables.
pub(crate) struct BlobOutput<'a> {
    cfg: BlobWriteConfig,
    fs: &'a dyn FileSystem,
    dir: &'a Path,
    new_file_number: &'a (dyn Fn() -> FileNumber + Sync),
    /// Reads the values garbage collection relocates.
    fetch: Option<&'a dyn BlobFetch>,
    current: Option<BlobFileWriter>,
    /// Files finished, in order.
    written: Vec<BlobFileAddition>,
    /// The blob files the table being written refers to.
    table_refs: BTreeSet<FileNumber>,
    /// Indexes written to the tables, by blob file.
    pub out_flow: BlobFlow,
    key_buf: Vec<u8>,
    index_buf: Vec<u8>,
    /// Values garbage collection moved, and the bytes it read for them (stored sizes).
    pub relocated: u64,
    pub relocated_bytes: u64,
}

impl<'a> BlobOutput<'a> {
    pub fn new(
        cfg: BlobWriteConfig,
        fs: &'a dyn FileSystem,
        dir: &'a Path,
        new_file_number: &'a (dyn Fn() -> FileNumber + Sync),
        fetch: Option<&'a dyn BlobFetch>,
    ) -> Self {
        BlobOutput {
            cfg,
            fs,
            dir,
            new_file_number,
            fetch,
            current: None,
            written: Vec::new(),
            table_refs: BTreeSet::new(),
            out_flow: BlobFlow::default(),
            key_buf: Vec::new(),
            index_buf: Vec::new(),
            relocated: 0,
            relocated_bytes: 0,
        }
    }

    /// The entry to write to the table for `(ikey, value)`: unchanged, or with its value in a
    /// blob file and a blob index in its place.
    pub fn route<'x>(
        &'x mut self,
        ikey: &'x [u8],
        value: &'x [u8],
    ) -> Result<(&'x [u8], &'x [u8])> {
        let Some(p) = parse_internal_key(ikey) else { return Ok((ikey, value)) };
        match p.value_type {
            ValueType::Value => match self.cfg.min_blob_size {
                Some(min) if value.len() as u64 >= min && u32::try_from(value.len()).is_ok() => {
                    self.write_blob(ikey, p.user_key, value)?;
                    Ok((&self.key_buf, &self.index_buf))
                }
                _ => Ok((ikey, value)),
            },
            ValueType::BlobIndex => {
                let index = BlobIndex::decode(value).map_err(|e| bad_index(e, ikey))?;
                let relocate = self.cfg.relocate_below.is_some_and(|b| index.file < b);
                match (relocate, self.fetch) {
                    (true, Some(fetch)) => {
                        let v = fetch.fetch(p.user_key, value)?;
                        self.relocated += 1;
                        self.relocated_bytes += index.size;
                        if self.cfg.min_blob_size.is_some() {
                            self.write_blob(ikey, p.user_key, &v)?;
                        } else {
                            // Blob files are off: the value goes back into the table.
                            self.key_buf.clear();
                            self.key_buf.extend_from_slice(ikey);
                            set_type(&mut self.key_buf, ValueType::Value);
                            self.index_buf = v;
                        }
                        Ok((&self.key_buf, &self.index_buf))
                    }
                    _ => {
                        self.out_flow.count_index(p.user_key.len(), &index);
                        self.table_refs.insert(index.file);
                        Ok((ikey, value))
                    }
                }
            }
            _ => Ok((ikey, value)),
        }
    }

    /// Writes `value` to the current blob file (a new one if needed) and leaves the entry
    /// to write in `key_buf` and `index_buf`.
    fn write_blob(&mut self, ikey: &[u8], user_key: &[u8], value: &[u8]) -> Result<()> {
        if self.current.is_none() {
            let number = (self.new_file_number)();
            let path = blob_path(self.dir, number);
            let file = self.fs.create(&path)?;
            self.current = Some(BlobFileWriter::start(path, file, number, &self.cfg)?);
        }
        let Some(w) = self.current.as_mut() else { unreachable!("opened above") };
        let index = w.add(user_key, value)?;
        let full = w.len() >= self.cfg.file_size;
        self.out_flow.count_index(user_key.len(), &index);
        self.table_refs.insert(index.file);
        self.key_buf.clear();
        self.key_buf.extend_from_slice(ikey);
        set_type(&mut self.key_buf, ValueType::BlobIndex);
        self.index_buf.clear();
        index.encode_to(&mut self.index_buf);
        if full {
            self.finish_current()?;
        }
        Ok(())
    }

    fn finish_current(&mut self) -> Result<()> {
        if let Some(w) = self.current.take() {
            let path = w.path().to_path_buf();
            match w.finish() {
                Ok(a) => self.written.push(a),
                Err(e) => {
                    let _ = self.fs.remove(&path);
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// The blob files the table just finished refers to (ascending); the next table starts
    /// with none.
    pub fn take_table_refs(&mut self) -> Vec<FileNumber> {
        std::mem::take(&mut self.table_refs).into_iter().collect()
    }

    /// Finishes the blob file being written; returns every file written. Their directory
    /// entries are synced when any was written. They stay this output's: an [`Self::abandon`]
    /// after it (the table that refers to them failed) removes them too.
    /// The values garbage collection moved are counted as RocksDB counts them, once the
    /// output is written (`rocksdb.blobdb.gc.num.keys.relocated`, `.gc.bytes.relocated`: the
    /// stored sizes).
    pub fn finish(&mut self) -> Result<Vec<BlobFileAddition>> {
        self.finish_current()?;
        if !self.written.is_empty() {
            crate::kill_point!("blob.sync_dir");
            self.fs.sync_dir(self.dir)?;
        }
        if self.relocated > 0 {
            tick(self.cfg.statistics.as_ref(), Ticker::BlobDbGcNumKeysRelocated, self.relocated);
            tick(
                self.cfg.statistics.as_ref(),
                Ticker::BlobDbGcBytesRelocated,
                self.relocated_bytes,
            );
        }
        Ok(self.written.clone())
    }

    /// Removes every blob file this output created.
    pub fn abandon(&mut self) {
        if let Some(w) = self.current.take() {
            let _ = self.fs.remove(w.path());
        }
        for a in self.written.drain(..) {
            let _ = self.fs.remove(&blob_path(self.dir, a.number));
        }
    }
}

/// Sets the type byte of the internal key in `buf` (the trailer's low byte, stored first).
fn set_type(buf: &mut [u8], t: ValueType) {
    let n = buf.len();
    buf[n - TRAILER_LEN] = t as u8;
}

fn bad_index(e: Error, ikey: &[u8]) -> Error {
    match e {
        Error::Corruption { reason, .. } => Error::corruption(
            "",
            0,
            format!(
                "{reason} (entry of key {:?})",
                String::from_utf8_lossy(crate::key::user_key(ikey))
            ),
        ),
        other => other,
    }
}
