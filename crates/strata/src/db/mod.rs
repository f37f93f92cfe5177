//! The `Db` handle.
//!
//! Concurrency design:
//! - Writers queue in `queue`, each waiting on a slot of its own (`db/write/queue.rs`); the
//!   writer at the front becomes the *leader*, takes the batches queued behind it (a write
//!   group), and holds the `wal` lock while it takes sequence numbers and appends one combined
//!   WAL record (flushed to the OS). Without the WAL lock the group then syncs (if any member
//!   asked, through a handle that needs no lock), inserts into the memtable (members with large
//!   batches in parallel, with `allow_concurrent_memtable_write`), and publishes its last
//!   sequence: groups publish strictly in sequence order (`pipeline`). When the leadership
//!   passes to the next group depends on the write mode (`db/write/mod.rs`), so several groups may
//!   be in flight. A memtable switch first waits for every group in flight, so the memtable a
//!   group inserts into is always the one its WAL file belongs to, and complete before it is
//!   flushed.
//! - Readers never lock: they clone the current [`SuperVersion`] (memtables + version) and read
//!   at the published last sequence; a point read uses its thread's cached reference when it
//!   is current (`db/local_sv.rs`), touching no shared lock or count.
//! - `versions` (the MANIFEST) is changed by background jobs; `state` holds the memtable list,
//!   the background error and shutdown flag.
//! - A WAL that stops taking writes (a memtable switch) is not synced by the writer that
//!   switched: it joins `retired_wals`, synced by the flush job before the MANIFEST drops it,
//!   or by the next synced write, which must not become durable before it (`db/write/wal.rs`).
//!   Likewise the new WAL's directory entry: synced by the next synced write or flush.
//! - With `recycle_log_file_num`, obsolete WALs this process wrote join `recycled_wals`
//!   instead of being deleted, and a memtable switch reuses the oldest (`db/obsolete.rs`).
//! - Lock order: `wal` -> `retired_wals`; `wal` -> `recycled_wals`; `wal` -> `versions` ->
//!   `state`; `retired_wals` and `recycled_wals` are never held with `versions` or `state` or
//!   each other; `queue` -> a writer's slot; `queue`, `sync_slots` and `pipeline` are never
//!   held with another lock otherwise (a group in flight takes `state` only after its sync,
//!   holding nothing); `wal` -> `delayed_rate`, which is a leaf (nothing is taken under it);
//!   `purging` -> `versions`, `purging` -> `state` (`purging` is taken holding no lock).

mod background;
pub(crate) mod blob_files;
pub(crate) mod blob_log;
pub(crate) mod capture;
mod cf;
mod compact;
mod conflict;
mod entity;
mod file_checksums;
pub(crate) mod files;
pub(crate) mod flush;
mod identity;
pub(crate) mod info_log;
mod ingest;
pub(crate) mod iter;
mod load_options;
mod local_sv;
mod merge_operands;
mod multi_scan;
mod obsolete;
mod open;
pub(crate) mod options_file;
pub(crate) mod paths;
mod pinnable;
mod properties;
mod read;
mod recover;
mod rocksdb_api;
mod row_cache;
mod snapshot_reads;
mod stats_history;
mod timestamps;
pub(crate) mod ts_iter;
pub(crate) mod ttl;
mod verify;
mod wal_archive;
pub(crate) mod wal_blob_refs;
mod wal_updates;
mod write;

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use parking_lot::{Condvar, Mutex};

pub use self::cf::ColumnFamily;
pub use self::cf::ColumnFamilyDescriptor;
pub use self::cf::ColumnFamilyTtl;
pub(crate) use self::cf::{CfState, Cfd, MemSet};
pub(crate) use self::conflict::Changed;
pub use self::file_checksums::LiveFileChecksum;
pub use self::ingest::IngestExternalFileOptions;
pub(crate) use self::iter::RawCursor;
pub use self::iter::{
    DbIterator, DbRawIterator, DbRawIteratorWithThreadMode, Direction, IteratorMode,
};
pub use self::merge_operands::GetMergeOperandsOptions;
pub use self::multi_scan::{MultiScan, Scan};
pub use self::pinnable::{DbPinnableSlice, PinnedSource};
pub use self::rocksdb_api::{ColumnFamilyMetaData, Range};
pub use self::stats_history::StatsHistoryIterator;
pub use self::wal_updates::DBWALIterator;
use crate::column_family::{AsColumnFamilyRef, ColumnFamilyId};
use crate::cstr_like::CStrLike;
use crate::env::{FileLock, FileSystem};
use crate::error::{Error, Result};
use crate::memtable::MemTable;
use crate::options::{Options, ReadOptions, WaitForCompactOptions, WriteOptions};
pub use crate::snapshot::{SnapshotHandle, SnapshotWithThreadMode};

/// The `rocksdb` crate's snapshot of a [`Db`]; see [`SnapshotWithThreadMode`].
pub type Snapshot<'a> = SnapshotWithThreadMode<'a, Db>;
use crate::snapshot::SnapshotList;
use crate::sstable::table_cache::TableCache;
use crate::types::{FileNumber, SeqNo};
use crate::version::levels::Version;
use crate::version::set::VersionSet;
use crate::wal::LogWriter;
use crate::write_batch::WriteBatch;

/// What a read sees: the memtables and the table files, captured together.
pub(crate) struct SuperVersion {
    /// Installation count: each installed super version has the next number
    /// (`db/local_sv.rs` compares it to tell a cached one current).
    pub number: u64,
    pub mem: Arc<MemTable>,
    /// Immutable memtables, newest first.
    pub imm: Vec<Arc<MemTable>>,
    pub version: Arc<Version>,
    /// Compaction debt of `version` (RocksDB's estimate), for write flow control.
    pub pending_compaction_bytes: u64,
    /// What the L0 stall triggers compare against: L0 files, or sorted runs in universal
    /// style ([`crate::compaction::stall_count`]).
    pub stall_count: usize,
    /// Range tombstones of every table of `version`, fragmented, with sources numbered as
    /// the DB iterator numbers its table children; built by the first iterator.
    pub version_range_dels: std::sync::OnceLock<Arc<crate::range_del::FragmentedTombstones>>,
}

impl SuperVersion {
    /// The super version of a family with options `opts`, active memtable `mem`, immutable
    /// ones `imm` (oldest first, with their WALs) and `version`.
    pub(crate) fn build(
        opts: &Options,
        mem: &Arc<MemTable>,
        imm: &VecDeque<(Arc<MemTable>, FileNumber)>,
        version: Arc<Version>,
        number: u64,
    ) -> Self {
        let picker = opts.picker_options();
        SuperVersion {
            number,
            mem: mem.clone(),
            imm: imm.iter().rev().map(|(m, _)| m.clone()).collect(),
            pending_compaction_bytes: crate::compaction::estimated_pending_compaction_bytes(
                &version, &picker,
            ),
            stall_count: crate::compaction::stall_count(&version, &picker),
            version,
            version_range_dels: std::sync::OnceLock::new(),
        }
    }
}

/// State guarded by `DbInner::state`.
pub(crate) struct DbState {
    /// Every live family's memtables, by id.
    pub cfs: BTreeMap<ColumnFamilyId, CfState>,
    /// The first background failure; once set, writes fail.
    pub bg_error: Option<Error>,
    pub shutting_down: bool,
    /// Table files that are inputs of a running compaction.
    pub compacting: std::collections::HashSet<FileNumber>,
    /// Where each running compaction writes: its output level and the key range of all its
    /// inputs (its output files lie within it). Ingestion places no file there.
    pub compaction_outputs: Vec<CompactionOutput>,
    pub running_compactions: usize,
    /// Manual compactions in progress; automatic picking pauses meanwhile.
    pub manual_compactions: usize,
    /// Tables compacted away (with their paths), deleted once no live version references
    /// them.
    pub obsolete_tables: Vec<(FileNumber, PathBuf)>,
}

/// The level and key range a running compaction writes its output into.
#[derive(Clone, Debug)]
pub(crate) struct CompactionOutput {
    pub cf: ColumnFamilyId,
    pub level: usize,
    /// Smallest and largest internal key over every input file.
    pub smallest: Vec<u8>,
    pub largest: Vec<u8>,
    /// One input file of the compaction, which names it while it runs (no two running
    /// compactions share an input).
    pub input: FileNumber,
}

/// State guarded by `DbInner::wal`: owned by the write leader.
pub(crate) struct WalState {
    pub writer: LogWriter,
    pub number: FileNumber,
    /// The memtables writes go into, one per family (the same as the families' `mem` in
    /// `DbState`, changed only under this lock).
    pub mems: Arc<MemSet>,
    /// Last sequence number handed out.
    pub last_sequence: SeqNo,
    /// Write delay owed while writes are slowed down, paid in sleeps of at least 1 ms.
    pub delay_debt_micros: f64,
    /// The highest WAL number a "synced" event in the WAL chain names (0: none yet).
    pub synced_event_through: FileNumber,
    /// Transactions prepared and not yet committed or rolled back: xid -> its prepare record
    /// (`wal/txn_record.rs`), which every new WAL starts with (`write/two_phase.rs`).
    pub prepared: BTreeMap<Vec<u8>, Vec<u8>>,
    /// The WALs this process closed that may still be kept, oldest first, with their sizes
    /// (`write/wal_limit.rs`).
    pub closed: VecDeque<(FileNumber, u64)>,
    /// What the last look for write stalls found writes free to go with; `None` after a look
    /// that found a stall, a full memtable or a slowdown (`write/stall.rs`).
    pub unstalled: Option<Vec<write::stall::Unstalled>>,
}

/// Obsolete WAL files kept for reuse, oldest first. Each was written whole in recyclable
/// fragments and synced before the MANIFEST edit that made it obsolete.
#[derive(Default)]
pub(crate) struct RecycledWals {
    pub files: VecDeque<FileNumber>,
    /// The highest number ever added: WALs become obsolete in number order, so one at or
    /// below it that is not in `files` was deleted or is being reused (a directory listing
    /// taken before its rename may still show its old name).
    pub high_water: FileNumber,
}

pub(crate) struct DbInner {
    /// The DB-wide options (the `default` family's are `default_cf.opts`).
    pub opts: Options,
    /// The clock of a DB opened with a TTL (`Db::open_with_ttl`): writes stamp values with
    /// its time (`db/ttl.rs`).
    pub ttl: Option<ttl::TtlClock>,
    /// Some family has user-defined timestamps: writes check how they name them.
    pub any_timestamps: AtomicBool,
    /// Tells this open DB's family handles from another's.
    pub instance: u64,
    pub default_cf: Arc<Cfd>,
    pub dir: PathBuf,
    /// Where WAL files are created (`Options::wal_dir`, or `dir`).
    pub wal_dir: PathBuf,
    pub fs: Arc<dyn FileSystem>,
    pub state: Mutex<DbState>,
    /// Held by a purge of obsolete tables (`db/obsolete.rs`) from start to end, so that a
    /// purge never misses tables another one took out of `DbState::obsolete_tables` and is
    /// about to put back as still in use.
    pub purging: Mutex<()>,
    /// Held while an OPTIONS file is written (`db/options_file.rs`).
    pub options_file: Mutex<()>,
    /// `disable_file_deletions` calls not yet matched by `enable_file_deletions`: while
    /// non-zero, obsolete tables and WALs are kept.
    pub file_deletions_disabled: std::sync::atomic::AtomicUsize,
    /// Signalled when: a memtable becomes immutable, a flush finishes, a background error is
    /// set, shutdown starts.
    pub bg_cv: Condvar,
    pub versions: Mutex<VersionSet>,
    pub next_file: Arc<AtomicU64>,
    pub wal: Mutex<WalState>,
    /// WALs that stopped taking writes and are not synced yet, oldest first, with their
    /// writers.
    pub retired_wals: Mutex<VecDeque<(FileNumber, LogWriter)>>,
    /// The highest WAL number synced whole after it stopped taking writes (0: none yet);
    /// the next write group records it in the WAL as a "synced" event.
    pub wals_synced_through: AtomicU64,
    /// The newest WAL created, and the newest whose directory entry is known durable. A
    /// memtable switch creates its WAL without syncing the directory (no writer waits on an
    /// fsync it did not ask for); a synced write, and a flush before its MANIFEST edit names
    /// a WAL, sync it first ([`write::wal::sync_wal_dir`]).
    pub newest_wal: AtomicU64,
    pub wal_dir_synced_through: AtomicU64,
    /// Obsolete WAL files kept for reuse (`Options::recycle_log_file_num`).
    pub recycled_wals: Mutex<RecycledWals>,
    /// The first WAL this open created: from it on, WALs are written in recyclable fragments
    /// when recycling is on, and only those may be reused.
    pub first_own_wal: FileNumber,
    /// WALs whose batches recovery dropped as never synced: deleted, never archived, once
    /// obsolete (`db/wal_archive.rs`).
    pub never_archive: std::collections::BTreeSet<FileNumber>,
    pub queue: Mutex<write::queue::WriteQueue>,
    /// How a writer waits for its slot (`db/write/yield_wait.rs`).
    pub write_wait: write::yield_wait::YieldPolicy,
    /// Write groups between the WAL and publication (`db/write/mod.rs`).
    pub pipeline: Mutex<write::WritePipeline>,
    pub pipeline_cv: Condvar,
    /// Write groups numbered below this are finished (published, or failed). Changed only
    /// under `pipeline`'s lock (so a wait on `pipeline_cv` sees it change).
    pub groups_finished: AtomicU64,
    /// Synced groups waiting for their fdatasync outside the WAL lock. It drops under
    /// `sync_slots`, with `sync_slots_cv` signalled, for a leader waiting to start its sync.
    pub syncs_in_flight: AtomicU64,
    pub sync_slots: Mutex<()>,
    pub sync_slots_cv: Condvar,
    /// Largest sequence number whose write is fully in the memtable: what reads see.
    pub visible_sequence: AtomicU64,
    pub has_bg_error: AtomicBool,
    /// Set when the `Db` is dropped: running compactions abandon their work.
    pub closing: AtomicBool,
    /// A writer is waiting in a write stop (`rocksdb.is-write-stopped`).
    pub write_stopped: AtomicBool,
    /// Writes are being paced (`rocksdb.actual-delayed-write-rate`).
    pub write_delayed: AtomicBool,
    /// The pace of a write slowdown (`db/write/rate.rs`): taken by the write leader under `wal`
    /// and by a property read; a leaf lock.
    pub delayed_rate: Mutex<write::rate::DelayedRate>,
    pub table_cache: Arc<TableCache>,
    /// The row cache (`Options::row_cache`), under this open's owner id.
    pub row_cache: Option<row_cache::RowCacheAccess>,
    /// The DB's blob files, as reads and compactions read them (`crate::blob`).
    pub blobs: Arc<crate::blob::BlobSource>,
    /// The blob files of values written at commit whose memtables are held (`blob_log.rs`).
    pub blob_logs: Arc<blob_log::BlobLogs>,
    pub snapshots: Arc<SnapshotList>,
    pub stats: Arc<crate::stats::Stats>,
    /// `<db>/LOG`: options, recovery, flushes, compactions, stalls, errors, stats dumps.
    pub info_log: info_log::InfoLog,
    /// The statistics history (`stats_history.rs`).
    pub stats_history: Mutex<stats_history::StatsHistory>,
    /// When the current write stall began (microseconds since the epoch; 0: none).
    pub stall_started_micros: AtomicU64,
    /// When writes were last slowed down (microseconds since the epoch), for the LOG line that
    /// ends the slowdown.
    pub slowdown_started_micros: AtomicU64,
    /// The families that caused the current write stop and slowdown, for the LOG lines that
    /// end them.
    pub stall_families: Mutex<(String, String)>,
    /// Opened with [`Db::open_read_only`]: no background threads, every write refused.
    pub read_only: bool,
    _lock: Box<dyn FileLock>,
}

/// A live table as the `rocksdb` crate describes it ([`Db::live_files`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveFile {
    /// The column family the file belongs to.
    pub column_family_name: String,
    /// File name, in [`LiveFile::directory`].
    pub name: String,
    /// The directory the file is in: the DB directory, or one of the table paths
    /// (`Options::db_paths`, `Options::cf_paths`); RocksDB's `LiveFileMetaData::directory`.
    pub directory: String,
    /// Bytes on disk.
    pub size: usize,
    /// LSM level.
    pub level: i32,
    /// Smallest user key.
    pub start_key: Option<Vec<u8>>,
    /// Largest user key.
    pub end_key: Option<Vec<u8>>,
    /// Entries (deletions included).
    pub num_entries: u64,
    /// Deletion entries.
    pub num_deletions: u64,
}

/// One live table file (`Db::live_files_metadata`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveFileMetaData {
    /// The column family the file belongs to.
    pub column_family_name: String,
    /// File name, e.g. `000123.sst`, in [`LiveFileMetaData::directory`].
    pub name: String,
    /// The directory the file is in: the DB directory, or one of the family's table paths
    /// (`Options::db_paths`, `Options::cf_paths`).
    pub directory: PathBuf,
    /// The file number in the name.
    pub number: u64,
    /// LSM level, 0 = newest.
    pub level: usize,
    /// Bytes on disk.
    pub size: u64,
    /// Smallest user key in the file.
    pub smallest_key: Vec<u8>,
    /// Largest user key in the file (for a file ending in a range tombstone, its exclusive
    /// end).
    pub largest_key: Vec<u8>,
    /// Smallest sequence number of an entry.
    pub smallest_seqno: u64,
    /// Largest sequence number of an entry.
    pub largest_seqno: u64,
    /// Entries (deletions included).
    pub num_entries: u64,
    /// Deletion entries.
    pub num_deletions: u64,
}

/// An open database. Share it between threads with `Arc<Db>`; dropping it closes the DB
/// (memtables need not be flushed: their contents are in the WAL).
pub struct Db {
    inner: Arc<DbInner>,
    threads: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db").field("path", &self.inner.dir).finish_non_exhaustive()
    }
}

impl Db {
    /// Opens (or, with `create_if_missing`, creates) the DB in `path`.
    pub fn open(opts: &Options, path: impl AsRef<Path>) -> Result<Db> {
        Self::open_cf_descriptors(opts, path, Vec::new())
    }

    /// Opens the DB with column families `names`, each with default options (as the
    /// `rocksdb` crate's `open_cf`; `default`, always opened, gets `opts`). Every family the
    /// DB has must be named; with `Options::create_missing_column_families`, named families it
    /// lacks are created. [`Db::open_cf_with_opts`] and [`Db::open_cf_descriptors`] give
    /// families their own options.
    pub fn open_cf<I, N>(opts: &Options, path: impl AsRef<Path>, names: I) -> Result<Db>
    where
        I: IntoIterator<Item = N>,
        N: AsRef<str>,
    {
        let descriptors = names
            .into_iter()
            .map(|n| ColumnFamilyDescriptor::new(n.as_ref(), Options::default()))
            .collect::<Vec<_>>();
        Self::open_cf_descriptors(opts, path, descriptors)
    }

    /// Opens the DB with the families `descriptors` describe, each with its own options (a
    /// descriptor named `default` gives that family's; else it takes `opts`). See
    /// [`Db::open_cf`].
    pub fn open_cf_descriptors<I>(
        opts: &Options,
        path: impl AsRef<Path>,
        descriptors: I,
    ) -> Result<Db>
    where
        I: IntoIterator<Item = ColumnFamilyDescriptor>,
    {
        Self::open_with(opts, path.as_ref(), descriptors.into_iter().collect(), None)
    }

    /// Opens the DB; with `ttl`, every family stores values with their write time
    /// (`db/ttl.rs`; the descriptors' options already carry the TTL filter).
    pub(crate) fn open_with(
        opts: &Options,
        path: &Path,
        descriptors: Vec<ColumnFamilyDescriptor>,
        ttl: Option<ttl::TtlClock>,
    ) -> Result<Db> {
        let inner = Arc::new(open::open(opts, path, &descriptors, ttl)?);
        options_file::persist_options(&inner)?;
        let mut threads = flush::start_background(&inner)?;
        for start in [properties::start_stats_dump, stats_history::start] {
            match start(&inner) {
                Ok(t) => threads.extend(t),
                Err(e) => {
                    drop(Db { inner, threads });
                    return Err(e);
                }
            }
        }
        let db_threads = compact::start_compaction_threads(&inner);
        match db_threads {
            Ok(t) => threads.extend(t),
            Err(e) => {
                // Stop what was started before failing.
                drop(Db { inner, threads });
                return Err(e);
            }
        }
        Ok(Db { inner, threads })
    }

    /// Opens with default options.
    pub fn open_default(path: impl AsRef<Path>) -> Result<Db> {
        Self::open(&Options::default(), path)
    }

    /// Opens the DB in `path` for reading only, writing nothing to it: no lock, no LOG, no
    /// WAL, no table, no MANIFEST edit. It reads the state as of this call, the WALs included
    /// (replayed into memory), and may run while a read-write `Db` (in any process) has the
    /// DB open; later writes by that `Db` are not seen. Every write, flush and compaction
    /// returns `NotSupported`. A missing DB is `InvalidArgument`, a damaged one `Corruption`.
    pub fn open_read_only(opts: &Options, path: impl AsRef<Path>) -> Result<Db> {
        Self::open_descriptors_read_only(opts, path, Vec::new())
    }

    /// [`Db::open_read_only`] with column families (every family the DB has must be named).
    pub(crate) fn open_descriptors_read_only<I>(
        opts: &Options,
        path: impl AsRef<Path>,
        descriptors: I,
    ) -> Result<Db>
    where
        I: IntoIterator<Item = ColumnFamilyDescriptor>,
    {
        let descriptors: Vec<_> = descriptors.into_iter().collect();
        let inner = Arc::new(open::open_read_only(opts, path.as_ref(), &descriptors)?);
        Ok(Db { inner, threads: Vec::new() })
    }

    /// The names of the column families of the DB in `path` (`default` first), read without
    /// opening it.
    pub fn list_cf(opts: &Options, path: impl AsRef<Path>) -> Result<Vec<String>> {
        cf::admin::list_cf(opts, path.as_ref())
    }

    /// Creates column family `name` with `opts` (its LSM-tree options: see
    /// [`ColumnFamilyDescriptor`]) and returns its handle.
    pub fn create_cf(&self, name: impl AsRef<str>, opts: &Options) -> Result<()> {
        self.create_cf_handle(name, opts).map(|_| ())
    }

    /// [`Db::create_cf`], returning the new family's handle.
    pub fn create_cf_handle(
        &self,
        name: impl AsRef<str>,
        opts: &Options,
    ) -> Result<Arc<ColumnFamily>> {
        self.check_writable()?;
        let cf = cf::admin::create_cf(&self.inner, name.as_ref(), opts)?;
        options_file::persist_options(&self.inner)?;
        Ok(cf)
    }

    /// Drops column family `name`: its data is gone for later calls; handles and iterators
    /// taken before still read it as of the drop. `default` cannot be dropped.
    pub fn drop_cf(&self, name: impl AsRef<str>) -> Result<()> {
        self.check_writable()?;
        cf::admin::drop_cf(&self.inner, name.as_ref())?;
        options_file::persist_options(&self.inner)
    }

    /// The handle of column family `name`, `None` when the DB has no such family.
    pub fn cf_handle(&self, name: impl AsRef<str>) -> Option<Arc<ColumnFamily>> {
        cf::admin::cf_handle(&self.inner, name.as_ref())
    }

    /// The family a handle names (checked to be one of this DB's), or the default family.
    pub(crate) fn family(&self, cf: Option<&dyn AsColumnFamilyRef>) -> Result<Arc<Cfd>> {
        match cf {
            Some(cf) => self.cfd(&cf).cloned(),
            None => Ok(self.inner.default_cf.clone()),
        }
    }

    /// The live family numbered `id`.
    pub(crate) fn family_by_id(&self, id: ColumnFamilyId) -> Option<Arc<Cfd>> {
        self.inner.state.lock().cfs.get(&id).map(|cs| cs.cfd.clone())
    }

    /// The family a handle names, checked to be one of this DB's.
    fn cfd<'a>(&self, cf: &'a impl AsColumnFamilyRef) -> Result<&'a Arc<Cfd>> {
        cf::resolve(self.inner.instance, cf)
    }

    /// Whether this `Db` was opened with [`Db::open_read_only`].
    pub fn is_read_only(&self) -> bool {
        self.inner.read_only
    }

    /// Refuses a change to a read-only DB.
    fn check_writable(&self) -> Result<()> {
        if self.inner.read_only {
            return Err(open::read_only_error(&self.inner.dir));
        }
        Ok(())
    }

    /// The file system the DB's files are on.
    pub(crate) fn file_system(&self) -> &dyn FileSystem {
        self.inner.fs.as_ref()
    }

    /// The DB directory.
    pub fn path(&self) -> &Path {
        &self.inner.dir
    }

    /// Sets `key` to `value`.
    pub fn put(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.put_opt(key, value, &WriteOptions::default())
    }

    /// [`Db::put`] with write options.
    pub fn put_opt(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        opts: &WriteOptions,
    ) -> Result<()> {
        let (key, value) = (key.as_ref(), value.as_ref());
        let mut b = WriteBatch::for_record(key, value);
        b.put(key, value);
        self.write_opt(b, opts)
    }

    /// Removes `key`.
    pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<()> {
        self.delete_opt(key, &WriteOptions::default())
    }

    /// [`Db::delete`] with write options.
    pub fn delete_opt(&self, key: impl AsRef<[u8]>, opts: &WriteOptions) -> Result<()> {
        let key = key.as_ref();
        let mut b = WriteBatch::for_record(key, &[]);
        b.delete(key);
        self.write_opt(b, opts)
    }

    /// Deletes every key in `[begin, end)` written before this call. `begin == end` deletes
    /// nothing; `begin > end` is `InvalidArgument`.
    pub fn delete_range(&self, begin: impl AsRef<[u8]>, end: impl AsRef<[u8]>) -> Result<()> {
        self.delete_range_opt(begin, end, &WriteOptions::default())
    }

    /// [`Db::delete_range`] with write options.
    pub fn delete_range_opt(
        &self,
        begin: impl AsRef<[u8]>,
        end: impl AsRef<[u8]>,
        opts: &WriteOptions,
    ) -> Result<()> {
        let (begin, end) = (begin.as_ref(), end.as_ref());
        let mut b = WriteBatch::for_record(begin, end);
        b.delete_range(begin, end);
        self.write_opt(b, opts)
    }

    /// Records a merge operand for `key`, combined at read time by `Options::merge_operator`.
    pub fn merge(&self, key: impl AsRef<[u8]>, operand: impl AsRef<[u8]>) -> Result<()> {
        self.merge_opt(key, operand, &WriteOptions::default())
    }

    /// [`Db::merge`] with write options.
    pub fn merge_opt(
        &self,
        key: impl AsRef<[u8]>,
        operand: impl AsRef<[u8]>,
        opts: &WriteOptions,
    ) -> Result<()> {
        let (key, operand) = (key.as_ref(), operand.as_ref());
        let mut b = WriteBatch::for_record(key, operand);
        b.merge(key, operand);
        self.write_opt(b, opts)
    }

    /// [`Db::put`] in column family `cf`.
    pub fn put_cf(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
    ) -> Result<()> {
        self.put_cf_opt(cf, key, value, &WriteOptions::default())
    }

    /// [`Db::put_cf`] with write options.
    pub fn put_cf_opt(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        opts: &WriteOptions,
    ) -> Result<()> {
        self.cfd(cf)?;
        let (key, value) = (key.as_ref(), value.as_ref());
        let mut b = WriteBatch::for_record(key, value);
        b.put_cf(cf, key, value);
        self.write_opt(b, opts)
    }

    /// [`Db::delete`] in column family `cf`.
    pub fn delete_cf(&self, cf: &impl AsColumnFamilyRef, key: impl AsRef<[u8]>) -> Result<()> {
        self.delete_cf_opt(cf, key, &WriteOptions::default())
    }

    /// [`Db::delete_cf`] with write options.
    pub fn delete_cf_opt(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        opts: &WriteOptions,
    ) -> Result<()> {
        self.cfd(cf)?;
        let key = key.as_ref();
        let mut b = WriteBatch::for_record(key, &[]);
        b.delete_cf(cf, key);
        self.write_opt(b, opts)
    }

    /// [`Db::delete_range`] in column family `cf`.
    pub fn delete_range_cf(
        &self,
        cf: &impl AsColumnFamilyRef,
        begin: impl AsRef<[u8]>,
        end: impl AsRef<[u8]>,
    ) -> Result<()> {
        self.delete_range_cf_opt(cf, begin, end, &WriteOptions::default())
    }

    /// [`Db::delete_range_cf`] with write options.
    pub fn delete_range_cf_opt(
        &self,
        cf: &impl AsColumnFamilyRef,
        begin: impl AsRef<[u8]>,
        end: impl AsRef<[u8]>,
        opts: &WriteOptions,
    ) -> Result<()> {
        self.cfd(cf)?;
        let (begin, end) = (begin.as_ref(), end.as_ref());
        let mut b = WriteBatch::for_record(begin, end);
        b.delete_range_cf(cf, begin, end);
        self.write_opt(b, opts)
    }

    /// [`Db::merge`] in column family `cf` (with that family's merge operator).
    pub fn merge_cf(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        operand: impl AsRef<[u8]>,
    ) -> Result<()> {
        self.merge_cf_opt(cf, key, operand, &WriteOptions::default())
    }

    /// [`Db::merge_cf`] with write options.
    pub fn merge_cf_opt(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        operand: impl AsRef<[u8]>,
        opts: &WriteOptions,
    ) -> Result<()> {
        self.cfd(cf)?;
        let (key, operand) = (key.as_ref(), operand.as_ref());
        let mut b = WriteBatch::for_record(key, operand);
        b.merge_cf(cf, key, operand);
        self.write_opt(b, opts)
    }

    /// Applies `batch` atomically.
    pub fn write(&self, batch: WriteBatch) -> Result<()> {
        self.write_opt(batch, &WriteOptions::default())
    }

    /// [`Db::write`] with write options (`sync`, `disable_wal`).
    pub fn write_opt(&self, batch: WriteBatch, opts: &WriteOptions) -> Result<()> {
        self.check_writable()?;
        write::write(&self.inner, batch, *opts)
    }

    /// The order of the `default` family's keys.
    pub(crate) fn default_order(&self) -> crate::comparator::KeyOrder {
        self.inner.default_cf.opts.comparator.clone()
    }

    /// The value of `key`, or `None`.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        self.get_opt(key, &ReadOptions::default())
    }

    /// [`Db::get`] with read options (snapshot, checksum verification, cache fill).
    pub fn get_opt(&self, key: impl AsRef<[u8]>, opts: &ReadOptions) -> Result<Option<Vec<u8>>> {
        read::get(&self.inner, &self.inner.default_cf, key.as_ref(), opts)
    }

    /// The value of `key` in column family `cf`, or `None`.
    pub fn get_cf(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
    ) -> Result<Option<Vec<u8>>> {
        self.get_cf_opt(cf, key, &ReadOptions::default())
    }

    /// [`Db::get_cf`] with read options.
    pub fn get_cf_opt(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        opts: &ReadOptions,
    ) -> Result<Option<Vec<u8>>> {
        read::get(&self.inner, self.cfd(cf)?, key.as_ref(), opts)
    }

    /// The merge operands of `key` as stored, oldest first, not merged (RocksDB's
    /// `GetMergeOperands`): after the key's value when one is under them (a value with no
    /// operands above it is the one element); `None` for a deleted or never-written key.
    pub fn get_merge_operands(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<Vec<u8>>>> {
        let (ro, bounds) = (ReadOptions::default(), GetMergeOperandsOptions::default());
        self.get_merge_operands_opt(key, &ro, &bounds)
    }

    /// [`Db::get_merge_operands`] with read options and bounds (a key with more operands
    /// than `bounds` allows fails with `Incomplete`; its callback can end the lookup early).
    pub fn get_merge_operands_opt(
        &self,
        key: impl AsRef<[u8]>,
        opts: &ReadOptions,
        bounds: &GetMergeOperandsOptions<'_>,
    ) -> Result<Option<Vec<Vec<u8>>>> {
        let cfd = &self.inner.default_cf;
        merge_operands::get_merge_operands(&self.inner, cfd, key.as_ref(), opts, bounds)
    }

    /// [`Db::get_merge_operands_opt`] in family `cf`.
    pub fn get_merge_operands_cf_opt(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        opts: &ReadOptions,
        bounds: &GetMergeOperandsOptions<'_>,
    ) -> Result<Option<Vec<Vec<u8>>>> {
        merge_operands::get_merge_operands(&self.inner, self.cfd(cf)?, key.as_ref(), opts, bounds)
    }

    /// The value of `key` pinned where the read found it, not copied (the `rocksdb` crate's
    /// `get_pinned`): in the memtable or in the table's data block (what stays held while
    /// the slice lives, and the exceptions, are in [`DbPinnableSlice`]'s module doc).
    pub fn get_pinned(&self, key: impl AsRef<[u8]>) -> Result<Option<DbPinnableSlice>> {
        self.get_pinned_opt(key, &ReadOptions::default())
    }

    /// [`Db::get_pinned`] with read options.
    pub fn get_pinned_opt(
        &self,
        key: impl AsRef<[u8]>,
        opts: &ReadOptions,
    ) -> Result<Option<DbPinnableSlice>> {
        read::get_pinned(&self.inner, &self.inner.default_cf, key.as_ref(), opts)
    }

    /// [`Db::get_pinned`] in column family `cf`.
    pub fn get_pinned_cf(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
    ) -> Result<Option<DbPinnableSlice>> {
        self.get_pinned_cf_opt(cf, key, &ReadOptions::default())
    }

    /// [`Db::get_pinned_cf`] with read options.
    pub fn get_pinned_cf_opt(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        opts: &ReadOptions,
    ) -> Result<Option<DbPinnableSlice>> {
        read::get_pinned(&self.inner, self.cfd(cf)?, key.as_ref(), opts)
    }

    /// Reads `(family, key)` pairs at one consistent point (rust-rocksdb's `multi_get_cf`);
    /// results come back in the order given.
    pub fn multi_get_cf<'c, C, K, I>(&self, keys: I) -> Vec<Result<Option<Vec<u8>>>>
    where
        C: AsColumnFamilyRef + 'c,
        K: AsRef<[u8]>,
        I: IntoIterator<Item = (&'c C, K)>,
    {
        self.multi_get_cf_opt(keys, &ReadOptions::default())
    }

    /// [`Db::multi_get_cf`] with read options.
    pub fn multi_get_cf_opt<'c, C, K, I>(
        &self,
        keys: I,
        opts: &ReadOptions,
    ) -> Vec<Result<Option<Vec<u8>>>>
    where
        C: AsColumnFamilyRef + 'c,
        K: AsRef<[u8]>,
        I: IntoIterator<Item = (&'c C, K)>,
    {
        let keys: Vec<(&C, K)> = keys.into_iter().collect();
        // One sequence for all, so the reads are consistent across families.
        let mut opts = opts.clone();
        let snapshot;
        if opts.snapshot.is_none() {
            snapshot = self.snapshot();
            opts.snapshot = Some(snapshot.into_handle());
        }
        let mut out: Vec<Result<Option<Vec<u8>>>> = Vec::with_capacity(keys.len());
        for (cf, key) in &keys {
            out.push(
                self.cfd(*cf).and_then(|cfd| read::get(&self.inner, cfd, key.as_ref(), &opts)),
            );
        }
        out
    }

    /// Reads many keys at one consistent point. Keys are looked up in sorted order through
    /// one super version, so keys that share a table block read it once (through the block
    /// cache); results come back in the order of `keys`.
    pub fn multi_get<K: AsRef<[u8]>>(
        &self,
        keys: impl IntoIterator<Item = K>,
    ) -> Vec<Result<Option<Vec<u8>>>> {
        self.multi_get_opt(keys, &ReadOptions::default())
    }

    /// [`Db::multi_get`] with read options.
    pub fn multi_get_opt<K: AsRef<[u8]>>(
        &self,
        keys: impl IntoIterator<Item = K>,
        opts: &ReadOptions,
    ) -> Vec<Result<Option<Vec<u8>>>> {
        read::multi_get(&self.inner, &self.inner.default_cf, keys.into_iter().collect(), opts)
    }

    /// A consistent view of the DB as of now; pass it in `ReadOptions::snapshot`.
    pub fn snapshot(&self) -> Snapshot<'static> {
        // The visible sequence is published only after a whole write group is in the
        // memtable, so no batch is ever half inside a snapshot.
        let seq = SeqNo(self.inner.visible_sequence.load(Ordering::Acquire));
        let core: Arc<dyn std::any::Any + Send + Sync> = self.inner.clone();
        Snapshot::from_handle(
            SnapshotHandle::new(&self.inner.snapshots, seq).with_source(Arc::downgrade(&core)),
        )
    }

    /// A Rust iterator over the DB from `mode`.
    pub fn iterator(&self, mode: IteratorMode<'_>) -> DbIterator {
        self.iterator_opt(mode, ReadOptions::default())
    }

    /// [`Db::iterator`] with read options (snapshot, bounds, prefix), by reference or by
    /// value (as the `rocksdb` crate takes them).
    pub fn iterator_opt(
        &self,
        mode: IteratorMode<'_>,
        opts: impl std::borrow::Borrow<ReadOptions>,
    ) -> DbIterator {
        let (cfd, ro) = (&self.inner.default_cf, opts.borrow());
        self.iterator_over(cfd, ro, mode)
    }

    /// Iterates forward from `prefix` while keys have the same prefix as it by the family's
    /// prefix extractor (`ReadOptions::prefix_same_as_start`), as the `rocksdb` crate's:
    /// without an extractor it goes on to the last key. For "every key starting with these
    /// bytes" whatever the extractor, bound the iterator with
    /// `ReadOptions::set_iterate_range(PrefixRange(prefix))`.
    pub fn prefix_iterator(&self, prefix: impl AsRef<[u8]>) -> DbIterator {
        let opts = ReadOptions { prefix_same_as_start: true, ..ReadOptions::default() };
        self.iterator_opt(IteratorMode::From(prefix.as_ref(), Direction::Forward), &opts)
    }

    /// [`Db::iterator`] in total key order whatever the prefix extractor (the `rocksdb`
    /// crate's `full_iterator`; Strata's iterators never skip by prefix, so this is
    /// `iterator`).
    pub fn full_iterator(&self, mode: IteratorMode<'_>) -> DbIterator {
        self.iterator(mode)
    }

    /// [`Db::full_iterator`] over family `cf`.
    pub fn full_iterator_cf(
        &self,
        cf: &impl AsColumnFamilyRef,
        mode: IteratorMode<'_>,
    ) -> DbIterator {
        self.iterator_cf(cf, mode)
    }

    /// An unpositioned cursor over the DB.
    pub fn raw_iterator(&self) -> DbRawIterator {
        self.raw_iterator_opt(ReadOptions::default())
    }

    /// [`Db::raw_iterator`] with read options (by reference or by value).
    pub fn raw_iterator_opt(&self, opts: impl std::borrow::Borrow<ReadOptions>) -> DbRawIterator {
        let (cfd, ro) = (&self.inner.default_cf, opts.borrow());
        iter::new_raw_iter(&self.inner, cfd, ro).with_origin(iter::Origin::new(
            &self.inner,
            cfd.id,
            ro,
        ))
    }

    /// A Rust iterator over column family `cf` from `mode`. A handle of another DB gives an
    /// iterator whose only item is the error.
    pub fn iterator_cf(&self, cf: &impl AsColumnFamilyRef, mode: IteratorMode<'_>) -> DbIterator {
        self.iterator_cf_opt(cf, ReadOptions::default(), mode)
    }

    /// [`Db::iterator_cf`] with read options (by reference or by value). The read options
    /// come before the mode, as in the `rocksdb` crate.
    pub fn iterator_cf_opt(
        &self,
        cf: &impl AsColumnFamilyRef,
        opts: impl std::borrow::Borrow<ReadOptions>,
        mode: IteratorMode<'_>,
    ) -> DbIterator {
        match self.cfd(cf) {
            Ok(cfd) => self.iterator_over(cfd, opts.borrow(), mode),
            Err(e) => DbIterator::failed(e),
        }
    }

    /// An iterator over family `cfd` with read options `ro`, refreshable (`Origin`).
    fn iterator_over(&self, cfd: &Cfd, ro: &ReadOptions, mode: IteratorMode<'_>) -> DbIterator {
        match iter::IterSource::capture(&self.inner, cfd, ro) {
            Ok(src) => DbIterator::from_source(src, mode).with_origin(iter::Origin::new(
                &self.inner,
                cfd.id,
                ro,
            )),
            Err(e) => DbIterator::failed(e),
        }
    }

    /// [`Db::prefix_iterator`] over family `cf`.
    pub fn prefix_iterator_cf(
        &self,
        cf: &impl AsColumnFamilyRef,
        prefix: impl AsRef<[u8]>,
    ) -> DbIterator {
        let opts = ReadOptions { prefix_same_as_start: true, ..ReadOptions::default() };
        self.iterator_cf_opt(cf, &opts, IteratorMode::From(prefix.as_ref(), Direction::Forward))
    }

    /// An unpositioned cursor over column family `cf`.
    pub fn raw_iterator_cf(&self, cf: &impl AsColumnFamilyRef) -> DbRawIterator {
        self.raw_iterator_cf_opt(cf, ReadOptions::default())
    }

    /// [`Db::raw_iterator_cf`] with read options (by reference or by value).
    pub fn raw_iterator_cf_opt(
        &self,
        cf: &impl AsColumnFamilyRef,
        opts: impl std::borrow::Borrow<ReadOptions>,
    ) -> DbRawIterator {
        match self.cfd(cf) {
            Ok(cfd) => {
                let ro = opts.borrow();
                iter::new_raw_iter(&self.inner, cfd, ro).with_origin(iter::Origin::new(
                    &self.inner,
                    cfd.id,
                    ro,
                ))
            }
            Err(e) => DbRawIterator::new(iter::error_iter(e)),
        }
    }

    /// Adds `message` as one line to the DB's info LOG (after its timestamp and thread id),
    /// for an application to record its own events beside the engine's (as RocksDB's
    /// `info_log` is shared). Never fails: a line that cannot be written is counted.
    pub fn log_info(&self, message: &str) {
        self.inner.info_log.log(message);
    }

    /// Whether a write now may wait in flow control: a writer waits in a write stop
    /// (`rocksdb.is-write-stopped`), writes are paced (`rocksdb.actual-delayed-write-rate`
    /// non-zero), or a background error refuses them. A caller that must not block (an async
    /// task) can hand its write to a thread of its own while this holds. A write may still
    /// be the one that finds a stall begin.
    pub fn writes_stalled(&self) -> bool {
        let i = &self.inner;
        i.write_stopped.load(std::sync::atomic::Ordering::Relaxed)
            || i.write_delayed.load(std::sync::atomic::Ordering::Relaxed)
            || i.has_bg_error.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Hands the WAL bytes buffered by `Options::manual_wal_flush` to the OS; with `sync`,
    /// also makes every write so far durable (the WALs before the current one included).
    pub fn flush_wal(&self, sync: bool) -> Result<()> {
        self.check_writable()?;
        write::wal::flush_wal(&self.inner, sync)
    }

    /// Writes the memtable to a table file and waits until every memtable made immutable
    /// before the call is flushed.
    pub fn flush(&self) -> Result<()> {
        self.check_writable()?;
        flush::flush_and_wait(&self.inner, &self.inner.default_cf)
    }

    /// [`Db::flush`] for column family `cf` (the other families' memtables stay).
    pub fn flush_cf(&self, cf: &impl AsColumnFamilyRef) -> Result<()> {
        self.check_writable()?;
        flush::flush_and_wait(&self.inner, self.cfd(cf)?)
    }

    /// Compacts the key range [begin, end] (None = unbounded on that side) down to the last
    /// level, dropping overwritten versions and tombstones no snapshot needs. Memtables are
    /// flushed first. Tables already at the bottom that hold nothing to drop (a compaction
    /// wrote every entry there as a value every snapshot sees) are left as they are, unless
    /// the family has a compaction filter or user timestamps. In FIFO style data never
    /// leaves L0: the call runs FIFO's own compactions (expired and over-budget files
    /// dropped, intra-L0 merges when allowed).
    pub fn compact_range(
        &self,
        begin: Option<impl AsRef<[u8]>>,
        end: Option<impl AsRef<[u8]>>,
    ) -> Result<()> {
        let b = begin.as_ref().map(AsRef::as_ref);
        let e = end.as_ref().map(AsRef::as_ref);
        self.check_writable()?;
        compact::compact_range(
            &self.inner,
            &self.inner.default_cf,
            b,
            e,
            compact::Bottom::Unsettled,
        )
    }

    /// [`Db::compact_range`] in column family `cf`.
    pub fn compact_range_cf(
        &self,
        cf: &impl AsColumnFamilyRef,
        begin: Option<impl AsRef<[u8]>>,
        end: Option<impl AsRef<[u8]>>,
    ) -> Result<()> {
        let b = begin.as_ref().map(AsRef::as_ref);
        let e = end.as_ref().map(AsRef::as_ref);
        self.check_writable()?;
        compact::compact_range(&self.inner, self.cfd(cf)?, b, e, compact::Bottom::Unsettled)
    }

    /// Every live table file of every column family with its family, level, size, key and
    /// sequence range (RocksDB's `GetLiveFilesMetaData`), by family, then level, L0 newest
    /// first.
    pub fn live_files_metadata(&self) -> Vec<LiveFileMetaData> {
        let mut out = Vec::new();
        for cfd in self.inner.families() {
            let sv = cfd.current_super_version();
            out.extend(sv.version.files().map(|(level, f)| LiveFileMetaData {
                column_family_name: cfd.name.clone(),
                name: crate::filename::table_file_name(f.number),
                directory: f.dir().unwrap_or(&self.inner.dir).to_path_buf(),
                number: f.number.0,
                level,
                size: f.file_size,
                smallest_key: crate::key::user_key(&f.smallest).to_vec(),
                largest_key: crate::key::user_key(&f.largest).to_vec(),
                smallest_seqno: f.smallest_seqno.0,
                largest_seqno: f.largest_seqno.0,
                num_entries: f.num_entries,
                num_deletions: f.num_deletions,
            }));
        }
        out
    }

    /// Compacts the named table files (names as [`Db::live_files_metadata`] gives them, with
    /// or without a directory), all of one level, into `output_level` (RocksDB's
    /// `CompactFiles`). L0 inputs are widened as RocksDB's are: into a lower level, to every L0
    /// file older than the newest named; into L0, to the files between the named ones. Files
    /// of the output level that overlap join. Refused with `InvalidArgument`: an unknown name, inputs on several levels,
    /// an output level above the inputs' or past the last, or a level in between holding keys
    /// of the inputs' range. Waits while an input is being compacted.
    pub fn compact_files<S: AsRef<str>>(&self, files: &[S], output_level: usize) -> Result<()> {
        self.check_writable()?;
        let mut numbers = Vec::with_capacity(files.len());
        for name in files {
            let name = name.as_ref();
            let base = name.rsplit('/').next().unwrap_or(name);
            match crate::filename::parse_file_name(base) {
                Some(crate::filename::FileKind::Table(n)) => numbers.push(n),
                _ => {
                    return Err(Error::InvalidArgument(format!(
                        "compact_files: {name:?} is not a table file name (NNNNNN.sst)"
                    )))
                }
            }
        }
        // Table numbers are unique across families: the first input names the family.
        let cfd = numbers
            .first()
            .and_then(|n| {
                self.inner
                    .families()
                    .into_iter()
                    .find(|c| c.current_super_version().version.file_numbers().any(|x| x == *n))
            })
            .unwrap_or_else(|| self.inner.default_cf.clone());
        compact::compact_files(&self.inner, &cfd, &numbers, output_level)
    }

    /// Ingests table files written by [`SstFileWriter`] into the `default` family
    /// atomically (all or none, also across a crash), with the default
    /// [`IngestExternalFileOptions`]. See [`Db::ingest_external_file_cf_opts`].
    pub fn ingest_external_file<P: AsRef<Path>>(
        &self,
        paths: impl IntoIterator<Item = P>,
    ) -> Result<()> {
        self.ingest_external_file_opts(&IngestExternalFileOptions::default(), paths)
    }

    /// [`Db::ingest_external_file`] with `opts`.
    pub fn ingest_external_file_opts<P: AsRef<Path>>(
        &self,
        opts: &IngestExternalFileOptions,
        paths: impl IntoIterator<Item = P>,
    ) -> Result<()> {
        self.check_writable()?;
        let paths: Vec<PathBuf> = paths.into_iter().map(|p| p.as_ref().to_path_buf()).collect();
        ingest::ingest(&self.inner, &self.inner.default_cf, &paths, opts)
    }

    /// [`Db::ingest_external_file`] into family `cf`.
    pub fn ingest_external_file_cf<P: AsRef<Path>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        paths: impl IntoIterator<Item = P>,
    ) -> Result<()> {
        self.ingest_external_file_cf_opts(cf, &IngestExternalFileOptions::default(), paths)
    }

    /// Ingests the external files `paths` into family `cf`: each is validated (checksums,
    /// sorted keys, written by [`SstFileWriter`]), copied (or, with `move_files`, hard-linked)
    /// into the DB and synced, and one MANIFEST edit adds them all. A file overlapping existing
    /// data gets a global sequence number above every write so far and shadows older data;
    /// snapshots taken before do not see it. Files of one call may overlap each other: a
    /// later file is newer than an earlier one it overlaps (as RocksDB's batches make it).
    /// Refused with `InvalidArgument`: a bad file, a file overlapping the memtable without
    /// `allow_blocking_flush`, a file (or files overlapping each other) needing a global
    /// sequence number without `allow_global_seqno`. Details in
    /// `crates/strata/src/db/ingest.rs`.
    pub fn ingest_external_file_cf_opts<P: AsRef<Path>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        opts: &IngestExternalFileOptions,
        paths: impl IntoIterator<Item = P>,
    ) -> Result<()> {
        self.check_writable()?;
        let paths: Vec<PathBuf> = paths.into_iter().map(|p| p.as_ref().to_path_buf()).collect();
        ingest::ingest(&self.inner, self.cfd(cf)?, &paths, opts)
    }

    /// Waits until no flush or compaction is pending or running (the `rocksdb` crate's
    /// signature): with `opts.flush`, every family's memtable is flushed first; past
    /// `opts.timeout`, `TimedOut`. Strata has no paused state, so `abort_on_pause` has nothing
    /// to abort. Immutable memtables waiting for more to merge with
    /// (`min_write_buffer_number_to_merge`) are no pending flush, as in RocksDB.
    pub fn wait_for_compact(&self, opts: &WaitForCompactOptions) -> Result<()> {
        if self.inner.read_only {
            return Ok(()); // nothing runs
        }
        let deadline = opts.timeout.filter(|t| !t.is_zero()).map(|t| Instant::now() + t);
        if opts.flush {
            let families = self.inner.families();
            flush::flush_families(&self.inner, &families, true)?;
        }
        compact::wait_for_compact(&self.inner, deadline)
    }

    /// The names of the files a copy of the DB needs, relative to the DB directory (WALs
    /// relative to `Options::wal_dir` when set, tables in another table path, `db_paths` or
    /// `cf_paths`, by their whole path): CURRENT, the MANIFEST, every live table and blob file
    /// (those of values written at commit included), the newest OPTIONS file and every WAL
    /// still holding unflushed writes, sorted. Files may be deleted after the
    /// call; [`Checkpoint`] is the consistent way to copy a live DB.
    pub fn live_file_names(&self) -> Vec<String> {
        files::live_files(&self.inner)
    }

    /// Every live table of every family (the `rocksdb` crate's `live_files`): the fields of
    /// [`Db::live_files_metadata`] in the crate's types.
    pub fn live_files(&self) -> Result<Vec<LiveFile>> {
        Ok(self
            .live_files_metadata()
            .into_iter()
            .map(|m| LiveFile {
                column_family_name: m.column_family_name,
                name: m.name,
                directory: m.directory.display().to_string(),
                size: usize::try_from(m.size).unwrap_or(usize::MAX),
                level: i32::try_from(m.level).unwrap_or(i32::MAX),
                start_key: Some(m.smallest_key),
                end_key: Some(m.largest_key),
                num_entries: m.num_entries,
                num_deletions: m.num_deletions,
            })
            .collect())
    }

    /// For each `[start, end)` user-key range, the approximate bytes of table data it covers
    /// (from the tables' indexes, memtables not counted; the `rocksdb` crate's signature). A
    /// range with `start >= end` is 0. A table whose index cannot be read counts whole where
    /// it overlaps the range (an upper bound), and the failure goes to the info LOG.
    pub fn get_approximate_sizes(&self, ranges: &[Range<'_>]) -> Vec<u64> {
        approximate_sizes(&self.inner, &self.inner.default_cf, ranges)
    }

    /// About how many entries of the memtables (the active one and those waiting for their
    /// flush) lie in `range`, and how many bytes they hold: `(count, bytes)`, RocksDB's
    /// `GetApproximateMemTableStats` (the crate has none). Each memtable's skiplist counts
    /// the range on its lowest level where it spans few nodes, scaled by that level's
    /// spacing: exact for a small range, near for a large one, at a search's cost and a few
    /// dozen steps a level (`memtable/skiplist.rs`, `estimate_between`).
    pub fn get_approximate_memtable_stats(&self, range: &Range<'_>) -> (u64, u64) {
        files::approximate_memtable_stats(&self.inner.default_cf, range.start_key, range.end_key)
    }

    /// [`Db::get_approximate_memtable_stats`] in column family `cf`; a handle of another DB
    /// reads as zeros, and the mistake goes to the info LOG.
    pub fn get_approximate_memtable_stats_cf(
        &self,
        cf: &impl AsColumnFamilyRef,
        range: &Range<'_>,
    ) -> (u64, u64) {
        match self.cfd(cf) {
            Ok(cfd) => files::approximate_memtable_stats(cfd, range.start_key, range.end_key),
            Err(e) => {
                self.log_info(&format!("get_approximate_memtable_stats_cf: {e}"));
                (0, 0)
            }
        }
    }

    /// [`Db::get_approximate_sizes`] in column family `cf`. The crate's signature has no
    /// error: a handle of another DB reads as zeros, and the mistake goes to the info LOG.
    pub fn get_approximate_sizes_cf(
        &self,
        cf: &impl AsColumnFamilyRef,
        ranges: &[Range<'_>],
    ) -> Vec<u64> {
        match self.cfd(cf) {
            Ok(cfd) => approximate_sizes(&self.inner, cfd, ranges),
            Err(e) => {
                self.log_info(&format!("get_approximate_sizes_cf: {e}"));
                vec![0; ranges.len()]
            }
        }
    }

    /// Stops background work: running compactions are abandoned (their inputs stay), and no
    /// flush or compaction starts afterwards, so memtables grow until writes stall; use it
    /// before closing a DB quickly. With `wait`, returns once no background job runs.
    pub fn cancel_all_background_work(&self, wait: bool) {
        compact::cancel_all_background_work(&self.inner, wait);
    }

    /// A named property (`strata.*`, or the `rocksdb.*` alias), `None` for an unknown name.
    pub fn property_value(&self, name: impl CStrLike) -> Result<Option<String>> {
        properties::property_value(&self.inner, &self.inner.default_cf, &name.to_name()?)
    }

    /// The memory of this DB's memtables and table readers, over all its families
    /// (`strata::perf`).
    pub(crate) fn memory_figures(&self) -> properties::MemoryFigures {
        properties::memory_figures(&self.inner)
    }

    /// A numeric property, `None` for an unknown or non-numeric name.
    pub fn property_int_value(&self, name: impl CStrLike) -> Result<Option<u64>> {
        Ok(self.property_value(name)?.and_then(|s| s.trim().parse().ok()))
    }

    /// [`Db::property_value`] of column family `cf` (its tree, memtables and compaction
    /// stats; DB-wide properties are the same for every family).
    pub fn property_value_cf(
        &self,
        cf: &impl AsColumnFamilyRef,
        name: impl CStrLike,
    ) -> Result<Option<String>> {
        properties::property_value(&self.inner, self.cfd(cf)?, &name.to_name()?)
    }

    /// [`Db::property_int_value`] of column family `cf`.
    pub fn property_int_value_cf(
        &self,
        cf: &impl AsColumnFamilyRef,
        name: impl CStrLike,
    ) -> Result<Option<u64>> {
        Ok(self.property_value_cf(cf, name)?.and_then(|s| s.trim().parse().ok()))
    }

    /// The last sequence number visible to reads.
    pub fn latest_sequence_number(&self) -> u64 {
        self.inner.visible_sequence.load(Ordering::Acquire)
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        if self.inner.read_only {
            return; // nothing to flush, mark or stop
        }
        self.inner.info_log.log("Shutdown: closing the DB");
        let needs_flush: Vec<Arc<Cfd>> = {
            // Each memtable knows whether it holds writes that skipped the WAL; only those
            // memtables (active or still waiting for flush) make the close flush.
            let st = self.inner.state.lock();
            if st.bg_error.is_some() {
                Vec::new()
            } else {
                st.cfs
                    .values()
                    .filter(|c| c.mem.has_unlogged() || c.imm.iter().any(|(m, _)| m.has_unlogged()))
                    .map(|c| c.cfd.clone())
                    .collect()
            }
        };
        for cfd in needs_flush {
            // Writes made without the WAL exist only in memory; keep them, as RocksDB does.
            let _ = flush::flush_and_wait(&self.inner, &cfd);
        }
        write_close_marker(&self.inner);
        self.inner.closing.store(true, Ordering::Relaxed);
        {
            let mut st = self.inner.state.lock();
            st.shutting_down = true;
            self.inner.bg_cv.notify_all();
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        self.inner.info_log.log("Shutdown complete");
    }
}

/// Appends the clean-close marker to the WAL: an empty write batch (count 0, so replay by any
/// version applies nothing). With it, damage in the last real record has bytes after it and
/// recovery reports it instead of taking it for a torn write (`wal/tail.rs`).
fn write_close_marker(inner: &DbInner) {
    let mut wal = inner.wal.lock();
    if inner.bg_error().is_some() {
        return;
    }
    let mut marker = WriteBatch::new();
    marker.set_sequence(wal.last_sequence.plus(1));
    // Best effort: a close that cannot write the marker loses nothing, only the stricter
    // check of the last record at the next open.
    // The zeros written ahead of the records go too: a closed WAL ends at its marker.
    let _ = wal.writer.add_record(marker.data()).and_then(|()| wal.writer.trim_zeros_ahead());
}

impl DbInner {
    /// Records the first background error and makes the DB refuse writes.
    pub(crate) fn set_bg_error(&self, st: &mut DbState, e: &Error) {
        if st.bg_error.is_none() {
            self.info_log.log(&format!("Background error (the DB now refuses writes): {e}"));
            st.bg_error = Some(e.duplicate());
            self.has_bg_error.store(true, Ordering::Release);
        }
        self.bg_cv.notify_all();
    }

    /// The sticky background error as a fresh `Error`, if any.
    pub(crate) fn bg_error(&self) -> Option<Error> {
        if !self.has_bg_error.load(Ordering::Acquire) {
            return None;
        }
        self.bg_error_set()
    }

    /// [`Self::bg_error`] once one is set. A background error's own message is not wrapped
    /// a second time.
    #[cold]
    fn bg_error_set(&self) -> Option<Error> {
        self.state.lock().bg_error.as_ref().map(|e| match e {
            Error::Background(m) => Error::Background(m.clone()),
            e => Error::Background(e.to_string()),
        })
    }

    /// Every live family, by id.
    pub(crate) fn families(&self) -> Vec<Arc<Cfd>> {
        self.state.lock().cfs.values().map(|c| c.cfd.clone()).collect()
    }

    pub(crate) fn new_file_number(&self) -> FileNumber {
        FileNumber(self.next_file.fetch_add(1, Ordering::SeqCst))
    }
}

/// [`files::approximate_size`] of each of `ranges` in family `cfd`.
fn approximate_sizes(inner: &DbInner, cfd: &Cfd, ranges: &[Range<'_>]) -> Vec<u64> {
    ranges.iter().map(|r| files::approximate_size(inner, cfd, r.start_key, r.end_key)).collect()
}
