//! Values written to blob files as writes commit (`BlobOptions::write_blobs_at_commit`).
//!
//! A write group's leader, holding the WAL lock once room is made (so the memtables the group
//! goes to are fixed), appends each put value of at least `min_blob_size` bytes of such a
//! family to the blob file of the family's active memtable ([`BlobLog`], created with the
//! first such value) and replaces the put in the group's batch with a `BlobIndex` record
//! (`write_batch.rs`): the WAL record and the memtable hold the index, so the value is written
//! once ([`commit_values`]). The file's bytes reach the OS before the WAL record does.
//!
//! - Reads: the file is read unfinished (`BlobSource::unfinished`), each record checked where
//!   an index points, as any blob file's.
//! - Durability: a synced write (and `flush_wal(true)`) first syncs every unfinished blob file,
//!   and the directory once after a file was created ([`BlobLogs::sync_unfinished`]), so no
//!   synced WAL record refers to bytes a power loss may take.
//! - The flush of a memtable finishes its file (footer, sync) and adds it to the version, the
//!   records its table does not refer to counted as garbage; when the table refers to none,
//!   the file is deleted once the last reader lets go of the memtable ([`BlobLog`]'s drop).
//!   The purge keeps every file whose memtable is still held ([`BlobLogs::pinned`]).
//! - WALs kept after their writes reached tables (the archive, or live for another family)
//!   are read back by `get_updates_since`: a file they may refer to stays on disk until they
//!   go, after its flush abandoned it or a compaction dropped it (`db/wal_blob_refs.rs`).
//! - A memtable whose blob file reached `blob_file_size` is full ([`log_full`]).
//! - Recovery reads each index of a replayed record back into its value ([`resolve`]): the
//!   replayed memtables hold values and are written out as any, and the blob files written
//!   at commit before the crash are obsolete once those tables are installed. An index whose
//!   record cannot be read (power loss took unsynced bytes of the blob file but kept the
//!   WAL's) ends the replay there, as a torn WAL record does (`db/recover.rs`).
//! - A prepared transaction keeps its values in its prepare record (written outside a
//!   group); its commit, a group's, is converted as any write.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::Mutex;

use super::cf::{FamilyMem, MemSet};
use super::wal_blob_refs::WalBlobRefs;
use super::DbInner;
use crate::blob::reader::BlobFileReader;
use crate::blob::writer::BlobFileWriter;
use crate::blob::BlobIndex;
use crate::env::FileSystem;
use crate::error::{Error, Result};
use crate::filename::blob_path;
use crate::memtable::MemTable;
use crate::types::{FileNumber, ValueType};
use crate::version::edit::BlobFileAddition;
use crate::write_batch::WriteBatch;

/// The blob file of one memtable's values written at commit.
pub(crate) struct BlobLog {
    number: FileNumber,
    path: PathBuf,
    state: Mutex<LogState>,
    /// Bytes written so far (the full-memtable check reads it without the lock).
    len: AtomicU64,
    /// The directory entry of the file is durable.
    dir_synced: AtomicBool,
    /// No table refers to the file: it is deleted when this is dropped (or held for the
    /// WALs that refer to it, `db/wal_blob_refs.rs`).
    discard: AtomicBool,
    /// The first and the newest WAL a record of which refers to the file.
    first_wal: AtomicU64,
    newest_wal: AtomicU64,
    fs: Arc<dyn FileSystem>,
    registry: Arc<BlobLogs>,
    /// The DB's readers of blob files, which close the file when it is deleted.
    source: Arc<crate::blob::BlobSource>,
}

enum LogState {
    Open(Box<BlobFileWriter>),
    Finished(BlobFileAddition),
    /// Its flush found no table referring to it: never finished, written or synced again;
    /// the readers of its memtable read it as it is.
    Abandoned,
    /// Finishing failed: the file may be anything; the DB has a background error.
    Failed(String),
}

impl BlobLog {
    /// Appends a value whose index goes into WAL `wal`.
    fn append(&self, wal: FileNumber, key: &[u8], value: &[u8]) -> Result<BlobIndex> {
        let mut st = self.state.lock();
        let LogState::Open(w) = &mut *st else {
            return Err(Error::Background(format!(
                "blob file {} takes no more values (its memtable was flushed)",
                self.number
            )));
        };
        let index = w.add(key, value)?;
        self.len.store(w.len(), Ordering::Release);
        self.first_wal.fetch_min(wal.0, Ordering::Relaxed);
        self.newest_wal.fetch_max(wal.0, Ordering::Relaxed);
        Ok(index)
    }

    fn flush(&self) -> Result<()> {
        match &mut *self.state.lock() {
            LogState::Open(w) => w.flush(),
            _ => Ok(()),
        }
    }

    /// Makes the records written so far durable, and the file's directory entry. The
    /// fdatasync runs without the lock where the file system allows, so the writers
    /// appending meanwhile (holding the WAL lock) do not wait for the device.
    fn sync(&self, dir: &Path) -> Result<()> {
        let syncer = match &mut *self.state.lock() {
            LogState::Open(w) => match w.syncer()? {
                Some(s) => Some(s),
                None => {
                    w.sync()?;
                    None
                }
            },
            _ => None,
        };
        if let Some(s) = syncer {
            s.sync()?;
        }
        if !self.dir_synced.load(Ordering::Acquire) {
            self.fs.sync_dir(dir)?;
            self.dir_synced.store(true, Ordering::Release);
        }
        Ok(())
    }

    /// Writes the footer and syncs the file (once; later calls return the same); the
    /// directory entry is the caller's to sync.
    pub fn finish(&self) -> Result<BlobFileAddition> {
        let mut st = self.state.lock();
        let done = match std::mem::replace(&mut *st, LogState::Failed(String::new())) {
            LogState::Open(w) => w.finish().map_err(|e| e.to_string()),
            LogState::Finished(a) => Ok(a),
            LogState::Failed(e) => Err(e),
            LogState::Abandoned => Err("it was abandoned (no table refers to it)".into()),
        };
        match done {
            Ok(a) => {
                *st = LogState::Finished(a);
                Ok(a)
            }
            Err(e) => {
                *st = LogState::Failed(e.clone());
                Err(Error::Background(format!("finishing blob file {}: {e}", self.number)))
            }
        }
    }

    /// No table refers to the file: it goes when the memtable does.
    pub fn discard(&self) {
        self.discard.store(true, Ordering::Release);
    }

    /// [`Self::discard`] at its memtable's flush, which found no table referring to it: the
    /// file is closed without its footer and never synced again (the readers of the memtable
    /// read its records, already written out, as they did).
    pub fn abandon(&self) {
        self.discard();
        *self.state.lock() = LogState::Abandoned;
    }

    /// The file's number.
    pub fn number(&self) -> FileNumber {
        self.number
    }
}

impl Drop for BlobLog {
    fn drop(&mut self) {
        self.registry.live.lock().remove(&self.number);
        let refs = &self.registry.wal_refs;
        let first_wal = self.first_wal.load(Ordering::Relaxed);
        let newest_wal = self.newest_wal.load(Ordering::Relaxed);
        if first_wal <= newest_wal {
            refs.note(self.number, FileNumber(first_wal)..=FileNumber(newest_wal));
        }
        // A file held for the WALs stays readable unfinished (the purge deletes it later).
        if self.discard.load(Ordering::Acquire) && !refs.hold_if_needed(self.number) {
            // The reader a read of the memtable opened would keep the deleted file's space.
            self.source.evict(self.number);
            let _ = self.fs.remove(&self.path);
        }
    }
}

/// The DB's blob files written at commit whose memtable is still held by someone, and those
/// kept for the WALs that refer to them.
#[derive(Default)]
pub(crate) struct BlobLogs {
    live: Mutex<BTreeMap<FileNumber, Weak<BlobLog>>>,
    /// The files kept WALs may refer to (`db/wal_blob_refs.rs`).
    pub wal_refs: WalBlobRefs,
}

impl BlobLogs {
    /// The registry of a DB just opened, with the blob files found that kept WALs may need.
    pub fn new(wal_refs: WalBlobRefs) -> Self {
        BlobLogs { live: Mutex::default(), wal_refs }
    }

    /// The files the purge must keep: their memtables may still be read.
    pub fn pinned(&self) -> Vec<FileNumber> {
        self.live.lock().keys().copied().collect()
    }

    /// Syncs every unfinished file (and its directory entry, once): before a WAL sync.
    pub fn sync_unfinished(&self, dir: &Path) -> Result<()> {
        let logs: Vec<Arc<BlobLog>> = self.live.lock().values().filter_map(Weak::upgrade).collect();
        for l in &logs {
            l.sync(dir)?;
        }
        Ok(())
    }

    /// Whether any file is held (a cheap check before [`Self::sync_unfinished`]).
    pub fn is_empty(&self) -> bool {
        self.live.lock().is_empty()
    }
}

/// The blob file of `mem`'s values written at commit, if it has one.
pub(crate) fn log_of(mem: &MemTable) -> Option<&BlobLog> {
    mem.attachment().and_then(|a| a.downcast_ref::<BlobLog>())
}

/// Whether `mem`'s blob file holds `limit` bytes or more (the memtable is then full).
#[inline]
pub(crate) fn log_full(mem: &MemTable, limit: u64) -> bool {
    log_of(mem).is_some_and(|l| l.len.load(Ordering::Acquire) >= limit)
}

/// The values `f`'s family writes at commit: from this many bytes, `None` for none.
fn threshold(f: &FamilyMem) -> Option<u64> {
    if !f.cfd.opts.blob.write_blobs_at_commit {
        return None;
    }
    let live = f.cfd.live_opts();
    live.blob.enable_blob_files.then_some(live.blob.min_blob_size)
}

/// Moves the put values of `batch` that its families write at commit into their memtables'
/// blob files, replacing each put with its blob index; returns whether any was. The caller
/// holds the WAL lock, with room made (`mems` are the memtables the batch goes to).
/// `wal` is the WAL the batch goes to.
pub(crate) fn commit_values(
    inner: &DbInner,
    wal: FileNumber,
    mems: &MemSet,
    batch: &mut WriteBatch,
) -> Result<bool> {
    // One load per family for the DBs without the option: no walk of the batch. With
    // unordered writes each member inserts its own batch as given (the option is refused
    // there at open; a family created later with it writes its values at the flush).
    if inner.opts.unordered_write || !mems.iter().any(|f| f.cfd.opts.blob.write_blobs_at_commit) {
        return Ok(false);
    }
    let mut limits: Vec<(u32, Option<u64>)> = Vec::new();
    let mut limit_of = |cf: u32| -> Option<u64> {
        if let Some(&(_, l)) = limits.iter().find(|(c, _)| *c == cf) {
            return l;
        }
        let l = mems.get(cf).and_then(threshold);
        limits.push((cf, l));
        l
    };
    let goes = |r: &crate::write_batch::BatchRecord<'_>, min: Option<u64>| {
        r.value_type == ValueType::Value
            && min.is_some_and(|m| r.value.len() as u64 >= m)
            && u32::try_from(r.value.len()).is_ok()
    };
    if !batch.iter().any(|r| goes(&r, limit_of(r.cf))) {
        return Ok(false);
    }
    let mut touched: Vec<&BlobLog> = Vec::new();
    let out = batch.rewritten(|r| {
        let Some(f) = mems.get(r.cf).filter(|_| goes(r, limit_of(r.cf))) else {
            return Ok(None);
        };
        let log = log_for(inner, f)?;
        let index = log.append(wal, r.key, r.value)?;
        if !touched.iter().any(|l| std::ptr::eq(*l, log)) {
            touched.push(log);
        }
        let mut encoded = Vec::new();
        index.encode_to(&mut encoded);
        Ok(Some((ValueType::BlobIndex, encoded)))
    })?;
    for l in touched {
        l.flush()?;
    }
    *batch = out;
    Ok(true)
}

/// The blob file of `f`'s active memtable, created with its first value.
fn log_for<'m>(inner: &DbInner, f: &'m FamilyMem) -> Result<&'m BlobLog> {
    if let Some(l) = log_of(&f.mem) {
        return Ok(l);
    }
    let number = inner.new_file_number();
    let cfg = super::blob_files::config(
        &f.cfd.live_opts(),
        f.cfd.id,
        None,
        inner.opts.statistics.clone(),
    );
    let path = blob_path(&inner.dir, number);
    let writer =
        BlobFileWriter::start(path.clone(), inner.fs.create_foreground(&path)?, number, &cfg)?;
    inner.blobs.unfinished(number);
    let log = Arc::new(BlobLog {
        number,
        path,
        state: Mutex::new(LogState::Open(Box::new(writer))),
        len: AtomicU64::new(0),
        dir_synced: AtomicBool::new(false),
        discard: AtomicBool::new(false),
        first_wal: AtomicU64::new(u64::MAX),
        newest_wal: AtomicU64::new(0),
        fs: inner.fs.clone(),
        registry: inner.blob_logs.clone(),
        source: inner.blobs.clone(),
    });
    inner.blob_logs.live.lock().insert(number, Arc::downgrade(&log));
    // Only the WAL lock's holder sets it: this is the log just made.
    let a = f.mem.attachment_or_init(|| log);
    a.downcast_ref::<BlobLog>()
        .ok_or_else(|| Error::Background("a memtable's attachment is not a blob file".into()))
}

/// Reads the value of a blob index for [`resolve`]: `(family, user key, index)` to the value,
/// or `None` to leave the index.
pub(crate) type ReadBlob<'a> = dyn FnMut(u32, &[u8], &[u8]) -> Result<Option<Vec<u8>>> + 'a;

/// `batch` (a record of the DB's WAL) with each blob index replaced by the value it points
/// at, read with `read(family, user key, index)`; where that gives `None` (a record the
/// caller skips), the index stays. A batch without indexes is returned as it is.
pub(crate) fn resolve(batch: WriteBatch, read: &mut ReadBlob<'_>) -> Result<WriteBatch> {
    if !batch.has_blob_refs() {
        return Ok(batch);
    }
    batch.rewritten(|r| match r.value_type {
        ValueType::BlobIndex => Ok(read(r.cf, r.key, r.value)?.map(|v| (ValueType::Value, v))),
        _ => Ok(None),
    })
}

/// Reads blob values for [`resolve`] outside an open DB (recovery, repair): any blob file of
/// `dir`, finished or not, each record checked where an index points.
pub(crate) struct LogReader<'a> {
    fs: &'a dyn FileSystem,
    dir: &'a Path,
    open: HashMap<FileNumber, BlobFileReader>,
}

impl<'a> LogReader<'a> {
    pub fn new(fs: &'a dyn FileSystem, dir: &'a Path) -> Self {
        LogReader { fs, dir, open: HashMap::new() }
    }

    /// The value of `key` at the encoded `index`.
    pub fn read(&mut self, key: &[u8], index: &[u8]) -> Result<Vec<u8>> {
        let i = BlobIndex::decode(index)?;
        let r = match self.open.entry(i.file) {
            std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::hash_map::Entry::Vacant(v) => {
                let path = blob_path(self.dir, i.file);
                v.insert(BlobFileReader::open_unfinished(self.fs, &path)?)
            }
        };
        r.read(key, &i, None)
    }
}
