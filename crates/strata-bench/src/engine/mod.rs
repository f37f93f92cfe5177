//! The interface between benchmarks and a storage engine, and the engines behind it, opened
//! from a [`Config`] by their [`EngineKind`] (that enum, with what each engine honours, lives in
//! the leaf [`crate::engine_kind`] so that flag validation needs nothing from here).
//!
//! Hot-path methods take borrowed slices and caller-owned buffers, so an adapter can serve a
//! benchmark without allocating per operation (where the engine's own API allows).

use anyhow::{anyhow, bail, Result};

use crate::config::Config;
use crate::engine_kind::EngineKind;

/// Implements [`EngineIter`] for a struct whose field `it` is a raw iterator with the
/// `rocksdb` crate's method names (`seek_to_first`, ..., `key() -> Option<&[u8]>`,
/// `status() -> Result<(), E>`): Strata's `DbRawIterator` and RocksDB's `DBRawIterator`.
macro_rules! raw_iterator_adapter {
    ($ty:ty) => {
        impl $crate::engine::EngineIter for $ty {
            fn seek_to_first(&mut self) {
                self.it.seek_to_first();
            }

            fn seek_to_last(&mut self) {
                self.it.seek_to_last();
            }

            fn seek(&mut self, key: &[u8]) {
                self.it.seek(key);
            }

            fn next(&mut self) {
                self.it.next();
            }

            fn prev(&mut self) {
                self.it.prev();
            }

            fn valid(&self) -> bool {
                self.it.valid()
            }

            fn key(&self) -> &[u8] {
                self.it.key().unwrap_or_default()
            }

            fn value(&self) -> &[u8] {
                self.it.value().unwrap_or_default()
            }

            fn status(&self) -> ::anyhow::Result<()> {
                Ok(self.it.status()?)
            }
        }
    };
}

#[cfg(any(feature = "fjall", feature = "redb"))]
mod chunked;
#[cfg(feature = "fjall")]
pub mod fjall;
#[cfg(feature = "kyoto")]
pub mod kyoto;
#[cfg(feature = "leveldb")]
pub mod leveldb;
pub mod memory;
pub mod merge;
#[cfg(any(feature = "rocksdb", test))]
mod options_text;
#[cfg(feature = "redb")]
pub mod redb;
#[cfg(feature = "rocksdb")]
pub mod rocks;
#[cfg(feature = "rocksdb")]
mod rocks_knobs;
#[cfg(feature = "rocksdb")]
mod rocks_txn;
#[cfg(feature = "sqlite")]
pub mod sqlite;
pub mod strata;

/// Options of one write.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriteOpts {
    pub sync: bool,
    pub disable_wal: bool,
}

/// A flag's value as an option's type (the C API's, or Strata's), or an error naming the flag.
pub(crate) fn fit<T: TryFrom<i64> + TryFrom<u64>>(name: &str, v: impl Into<i128>) -> Result<T> {
    let v: i128 = v.into();
    let out = if v < 0 {
        i64::try_from(v).ok().and_then(|v| T::try_from(v).ok())
    } else {
        u64::try_from(v).ok().and_then(|v| T::try_from(v).ok())
    };
    out.ok_or_else(|| anyhow!("--{name}={v}: out of range"))
}

/// timeseries' `--expire_style=compaction_filter` once a timeseries has started
/// (`crate::expiry`): whether a key is expired by its write counter, for the
/// engines' compaction filters.
pub(crate) fn expired_time_filter(cfg: &Config) -> Option<impl Fn(&[u8]) -> bool + Send + Sync> {
    let clock = cfg.time_series_clock.clone()?;
    let time_range = cfg.flags.time_range;
    (cfg.flags.expire_style == "compaction_filter").then_some(move |key: &[u8]| {
        let now = clock.load(std::sync::atomic::Ordering::Acquire);
        crate::expiry::expired(now, key, time_range)
    })
}

/// What fills a table file ([`Engine::write_table_file`]): called once with the file's put.
pub type FillTable<'a> = dyn FnMut(&mut dyn FnMut(&[u8], &[u8]) -> Result<()>) -> Result<()> + 'a;

/// Options of one read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadOpts {
    pub verify_checksums: bool,
    pub fill_cache: bool,
    /// Iterators only (`--readahead_size`, `--total_order_seek`, `--prefix_same_as_start`,
    /// `--auto_prefix_mode`): engines that do not list these flags as honoured never see
    /// values other than the defaults.
    pub readahead_size: usize,
    pub total_order_seek: bool,
    pub prefix_same_as_start: bool,
    pub auto_prefix_mode: bool,
}

impl Default for ReadOpts {
    fn default() -> Self {
        ReadOpts {
            verify_checksums: true,
            fill_cache: true,
            readahead_size: 0,
            total_order_seek: false,
            prefix_same_as_start: false,
            auto_prefix_mode: false,
        }
    }
}

/// Iterator bounds: lower inclusive, upper exclusive.
#[derive(Clone, Copy, Debug, Default)]
pub struct Bounds<'a> {
    pub lower: Option<&'a [u8]>,
    pub upper: Option<&'a [u8]>,
}

/// The kind of one batch entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BatchOp {
    Put,
    Delete,
    Merge,
    /// Keys from the entry's key (inclusive) to its value (exclusive) deleted.
    DeleteRange,
}

/// A reusable write batch: entries live in one buffer, so clearing and refilling it does not
/// allocate once it has grown.
#[derive(Clone, Debug, Default)]
pub struct Batch {
    data: Vec<u8>,
    entries: Vec<(BatchOp, usize, usize, usize)>,
}

impl Batch {
    pub fn clear(&mut self) {
        self.data.clear();
        self.entries.clear();
    }

    fn push(&mut self, op: BatchOp, key: &[u8], value: &[u8]) {
        let start = self.data.len();
        self.data.extend_from_slice(key);
        self.data.extend_from_slice(value);
        self.entries.push((op, start, key.len(), value.len()));
    }

    pub fn put(&mut self, key: &[u8], value: &[u8]) {
        self.push(BatchOp::Put, key, value);
    }

    pub fn delete(&mut self, key: &[u8]) {
        self.push(BatchOp::Delete, key, &[]);
    }

    pub fn merge(&mut self, key: &[u8], value: &[u8]) {
        self.push(BatchOp::Merge, key, value);
    }

    /// Deletes `begin..end`; only the engines that `crate::engine_kind::has_range_deletion`
    /// names take such a batch (the others fail the write saying so).
    pub fn delete_range(&mut self, begin: &[u8], end: &[u8]) {
        self.push(BatchOp::DeleteRange, begin, end);
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entries, in insertion order: (op, key, value).
    pub fn iter(&self) -> impl Iterator<Item = (BatchOp, &[u8], &[u8])> + '_ {
        self.entries.iter().map(move |&(op, start, kl, vl)| {
            (op, &self.data[start..start + kl], &self.data[start + kl..start + kl + vl])
        })
    }
}

/// A cursor over an engine's keys, in bytewise order.
pub trait EngineIter {
    fn seek_to_first(&mut self);
    fn seek_to_last(&mut self);
    /// First key >= `key`.
    fn seek(&mut self, key: &[u8]);
    fn next(&mut self);
    fn prev(&mut self);
    fn valid(&self) -> bool;
    /// Only when `valid()`.
    fn key(&self) -> &[u8];
    /// Only when `valid()`.
    fn value(&self) -> &[u8];
    fn status(&self) -> Result<()>;
}

/// How a multi-range scan reads (RocksDB's `MultiScanArgs` settings).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MultiScanSettings {
    /// Reads of one table file this many bytes apart or closer are made one.
    pub coalesce: u64,
    /// Bytes of blocks read ahead per table file at most (0: no bound).
    pub max_prefetch: u64,
    pub async_io: bool,
    /// Each range walked from its last key down.
    pub reverse: bool,
}

/// The ranges of `ranges` (`[start, limit)` pairs, `key_size` bytes each, concatenated),
/// each walked with one iterator of `engine` (a seek, then steps while inside the range;
/// backward from the limit with `reverse`), in the order given: the keys met.
pub fn scan_with_iterator(
    engine: &dyn Engine,
    ranges: &[u8],
    key_size: usize,
    reverse: bool,
    ro: &ReadOpts,
) -> Result<u64> {
    let mut it = engine.new_iterator(ro, Bounds::default())?;
    let mut keys = 0;
    for r in ranges.chunks(2 * key_size.max(1)) {
        let (start, limit) = r.split_at(key_size.min(r.len()));
        if reverse {
            // The last key below the limit (db_bench's SeekForPrev, then Prev off the limit).
            it.seek(limit);
            if it.valid() {
                it.prev();
            } else {
                it.status()?;
                it.seek_to_last();
            }
            while it.valid() && it.key() >= start {
                keys += 1;
                it.prev();
            }
        } else {
            it.seek(start);
            while it.valid() && it.key() < limit {
                keys += 1;
                it.next();
            }
        }
        it.status()?;
    }
    Ok(keys)
}

/// The transactions an engine was opened with (`--transaction_db`,
/// `--optimistic_transaction_db`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxnKind {
    /// Locks taken as the transaction goes (RocksDB's `TransactionDB`).
    Pessimistic,
    /// Conflicts checked at commit (RocksDB's `OptimisticTransactionDB`).
    Optimistic,
}

/// One transaction of `randomtransaction` (`runner/transaction.rs`). A *conflict* (a lock
/// timeout, a write conflict, a deadlock, an expired transaction, a check that cannot be made)
/// is an expected outcome, reported as `Ok(None)` or `Ok(false)`; anything else is an error.
pub trait EngineTxn {
    /// Reads `key` into `out`, for update when asked (a pessimistic transaction reads at its
    /// snapshot, taken when it began). `Ok(None)` on a conflict, else whether it was found.
    fn get(&mut self, key: &[u8], for_update: bool, out: &mut Vec<u8>) -> Result<Option<bool>>;
    /// Writes `key`; `false` on a conflict.
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<bool>;
    /// Prepares the (named, pessimistic) transaction for two-phase commit.
    fn prepare(&mut self) -> Result<()>;
    /// Commits; `false` on a conflict (nothing written).
    fn commit(self: Box<Self>) -> Result<bool>;
    /// Rolls back (a prepared transaction too).
    fn rollback(self: Box<Self>) -> Result<()>;
}

/// [`EngineTxn::get`]'s answer from an engine's read: the value copied into `out`, or, when
/// `conflict` accepts the error as a conflict, `None`.
pub fn txn_read<V: AsRef<[u8]>, E>(
    r: std::result::Result<Option<V>, E>,
    out: &mut Vec<u8>,
    conflict: impl FnOnce(E) -> Result<()>,
) -> Result<Option<bool>> {
    match r {
        Ok(Some(v)) => {
            out.clear();
            out.extend_from_slice(v.as_ref());
            Ok(Some(true))
        }
        Ok(None) => Ok(Some(false)),
        Err(e) => conflict(e).map(|()| None),
    }
}

/// An [`EngineTxn`] write or commit's answer: `false` when `conflict` accepts the error as a
/// conflict.
pub fn txn_step<E>(
    r: std::result::Result<(), E>,
    conflict: impl FnOnce(E) -> Result<()>,
) -> Result<bool> {
    match r {
        Ok(()) => Ok(true),
        Err(e) => conflict(e).map(|()| false),
    }
}

/// Copies a found value into `out` (cleared first) and says whether there was one: what an
/// engine's `get` returns.
pub(super) fn copy_found(value: Option<impl AsRef<[u8]>>, out: &mut Vec<u8>) -> bool {
    match value {
        Some(v) => {
            out.clear();
            out.extend_from_slice(v.as_ref());
            true
        }
        None => false,
    }
}

/// What [`Engine::get_merge_operands`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operands {
    /// The key is deleted or was never written.
    Missing,
    /// The operands are in the output.
    Found,
    /// The key has more operands than the call takes (RocksDB's `Incomplete`): the output
    /// holds none of them.
    MoreThanMax,
}

/// A consistent view of an engine's keys as they were when it was taken, held until dropped
/// (RocksDB's `GetSnapshot` / `ReleaseSnapshot`).
pub trait EngineSnapshot {
    /// Reads `key` as of the snapshot, as [`Engine::get`] reads it now.
    fn get(&self, key: &[u8], ro: &ReadOpts, out: &mut Vec<u8>) -> Result<bool>;
}

/// An open database.
pub trait Engine: Send + Sync {
    fn put(&self, key: &[u8], value: &[u8], wo: &WriteOpts) -> Result<()>;
    fn delete(&self, key: &[u8], wo: &WriteOpts) -> Result<()>;
    /// RocksDB's `SingleDelete`: deletes a key put at most once since it was last deleted.
    /// An engine without it deletes, which gives that contract the same result.
    fn single_delete(&self, key: &[u8], wo: &WriteOpts) -> Result<()> {
        self.delete(key, wo)
    }
    fn merge(&self, key: &[u8], value: &[u8], wo: &WriteOpts) -> Result<()>;
    /// Applies `batch` atomically.
    fn write(&self, batch: &Batch, wo: &WriteOpts) -> Result<()>;
    /// Reads `key`; on a hit the value is copied into `out` and `true` returned.
    fn get(&self, key: &[u8], ro: &ReadOpts, out: &mut Vec<u8>) -> Result<bool>;
    /// Reads the keys of `keys` (concatenated, `key_size` bytes each). Returns how many were
    /// found and adds the found values' lengths to `value_bytes`.
    fn multi_get(
        &self,
        keys: &[u8],
        key_size: usize,
        ro: &ReadOpts,
        scratch: &mut Vec<u8>,
        value_bytes: &mut u64,
    ) -> Result<u64> {
        let mut found = 0;
        for k in keys.chunks(key_size.max(1)) {
            if self.get(k, ro, scratch)? {
                found += 1;
                *value_bytes += scratch.len() as u64;
            }
        }
        Ok(found)
    }
    /// RocksDB's `GetMergeOperands`: the operands of `key` as stored, oldest first (its value
    /// first when one is under them), into `out`; a key with more than `max` (when non-zero:
    /// `expected_max_number_of_operands`) is [`Operands::MoreThanMax`].
    fn get_merge_operands(
        &self,
        _key: &[u8],
        _ro: &ReadOpts,
        _max: usize,
        _out: &mut Vec<Vec<u8>>,
    ) -> Result<Operands> {
        bail!("this engine has no GetMergeOperands")
    }
    /// RocksDB's `GetEntity`: the bytes of `key`'s columns (every name and value; a plain
    /// value is one default column, named ""), `None` when the key is missing.
    fn get_entity(&self, _key: &[u8], _ro: &ReadOpts) -> Result<Option<u64>> {
        bail!("this engine has no GetEntity")
    }
    /// RocksDB's `MultiGetEntity` of the keys of `keys` (concatenated, `key_size` bytes
    /// each): how many were found and the bytes of their columns, as
    /// [`Engine::get_entity`] counts them.
    fn multi_get_entity(&self, keys: &[u8], key_size: usize, ro: &ReadOpts) -> Result<(u64, u64)> {
        let (mut found, mut bytes) = (0, 0);
        for k in keys.chunks(key_size.max(1)) {
            if let Some(b) = self.get_entity(k, ro)? {
                found += 1;
                bytes += b;
            }
        }
        Ok((found, bytes))
    }
    /// RocksDB's `MultiScan` of the default family's ranges `ranges` (`[start, limit)` pairs,
    /// `key_size` bytes each, concatenated, sorted and disjoint), each read through in the
    /// order given (backward with `settings.reverse`): the keys it yielded.
    fn multi_scan(
        &self,
        _ranges: &[u8],
        _key_size: usize,
        _settings: &MultiScanSettings,
        _ro: &ReadOpts,
    ) -> Result<u64> {
        bail!("this engine has no MultiScan (use --use_multiscan=false with multiscanrandom)")
    }
    /// A new cursor (unpositioned).
    fn new_iterator<'a>(
        &'a self,
        ro: &ReadOpts,
        bounds: Bounds<'_>,
    ) -> Result<Box<dyn EngineIter + 'a>>;
    /// The approximate bytes the table files hold of each key range `[start, end)` of `ranges`
    /// (`start` and `end` `key_size` bytes each, concatenated), into `sizes` (RocksDB's
    /// `GetApproximateSizes` with its default flags: files, not memtables; the default
    /// family).
    fn approximate_sizes(
        &self,
        _ranges: &[u8],
        _key_size: usize,
        _sizes: &mut Vec<u64>,
    ) -> Result<()> {
        bail!("this engine has no approximate sizes of key ranges")
    }
    /// About how many entries of the memtables lie in `[start, end)`, and their bytes
    /// (RocksDB's `GetApproximateMemTableStats`; the default family).
    fn approximate_memtable_stats(&self, _start: &[u8], _end: &[u8]) -> Result<(u64, u64)> {
        bail!("this engine has no approximate memtable statistics")
    }
    /// A new backup of the DB into `dir` (created if missing), after every backup already
    /// there is deleted (db_bench's `destroy_old_data`); checks that `dir` then holds one.
    fn backup(&self, _dir: &std::path::Path) -> Result<()> {
        bail!("this engine has no backup engine")
    }
    /// Writes a table file at `path` in the DB's table format and options (RocksDB's
    /// `SstFileWriter` with the DB's options), for [`Engine::ingest_files`]: `fill` puts the
    /// entries, keys ascending, through the function it is given.
    fn write_table_file(&self, _path: &std::path::Path, _fill: &mut FillTable<'_>) -> Result<()> {
        bail!("this engine has no external table files")
    }
    /// Ingests the table files at `paths` into the DB, moving (linking) them rather than
    /// copying (RocksDB's `IngestExternalFile` with `move_files`); they may overlap.
    fn ingest_files(&self, _paths: &[std::path::PathBuf]) -> Result<()> {
        bail!("this engine has no external table files")
    }
    /// Reads every block of the DB's live files, checking their checksums (RocksDB's
    /// `VerifyChecksum`).
    fn verify_checksum(&self) -> Result<()> {
        bail!("this engine has no checksum verification of a live DB")
    }
    /// Reads every live table whose whole-file checksum the DB recorded and compares
    /// (RocksDB's `VerifyFileChecksums`; `--file_checksum` makes the DB record them).
    fn verify_file_checksums(&self) -> Result<()> {
        bail!("this engine has no whole-file checksums")
    }
    /// A snapshot of the DB now; an engine without snapshots says so, and the benchmarks that
    /// take one are refused on it (`crate::engine_kind`).
    fn snapshot(&self) -> Result<Box<dyn EngineSnapshot + '_>> {
        bail!("this engine has no snapshots")
    }
    /// Writes the memtable out and waits.
    fn flush(&self) -> Result<()>;
    /// Compacts the whole key range (`CompactRange(nullptr, nullptr)`).
    fn compact_range(&self) -> Result<()>;
    /// Waits until no compaction is pending or running.
    fn wait_for_compaction(&self) -> Result<()>;
    /// A named property (`rocksdb.*` names are translated by the adapter).
    fn property(&self, name: &str) -> Result<Option<String>>;
    /// The text of the `stats` benchmark (RocksDB's `rocksdb.stats` layout when available).
    fn stats_text(&self) -> Result<String>;
    /// The text of the `levelstats` benchmark.
    fn level_stats_text(&self) -> Result<String>;
    /// The text of the `sstables` benchmark.
    fn sstables_text(&self) -> Result<String>;
    /// The `--statistics` dump, if the engine keeps statistics.
    fn statistics_text(&self) -> Result<Option<String>> {
        Ok(None)
    }
    /// The statistics history (RocksDB's `GetStatsHistory`): each record's time (seconds since
    /// the Unix epoch) and every ticker's change by name, oldest first.
    fn stats_history(&self) -> Result<StatsRecords> {
        bail!("this engine keeps no statistics history")
    }
    /// Resets the engine's statistics (`resetstats`).
    fn reset_stats(&self) -> Result<()> {
        bail!("resetstats is not supported by this engine")
    }
    /// The live table files with their levels (RocksDB's `GetLiveFilesMetaData`).
    fn live_files(&self) -> Result<Vec<LiveFile>> {
        bail!("this engine has no LSM table files to list")
    }
    /// The transactions the engine was opened with, if any.
    fn transaction_kind(&self) -> Option<TxnKind> {
        None
    }
    /// Begins a transaction named `name` (what a pessimistic transaction's prepare needs; an
    /// optimistic one has none). Only when [`Engine::transaction_kind`] is `Some`.
    fn begin_transaction(&self, _wo: &WriteOpts, _name: &str) -> Result<Box<dyn EngineTxn + '_>> {
        bail!("transactions need --transaction_db or --optimistic_transaction_db")
    }
    /// Compacts the named table files, as [`Engine::live_files`] names them, into
    /// `output_level` (RocksDB's `CompactFiles`).
    fn compact_files(&self, _names: &[String], _output_level: usize) -> Result<()> {
        bail!("this engine cannot compact chosen files (CompactFiles)")
    }
}

/// The RocksDB release the `rocksdb` crate's `librocksdb-sys` bundles (the `+X.Y.Z` of its
/// version in `Cargo.lock`; a test keeps the two equal).
pub const ROCKSDB_VERSION: &str = "11.8.1";

/// A statistics history ([`Engine::stats_history`]): per record its time (seconds since the
/// Unix epoch) and each ticker's name and change.
pub type StatsRecords = Vec<(u64, Vec<(String, u64)>)>;

/// One live table file (what `compact0`/`compact1` need of `GetLiveFilesMetaData`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveFile {
    /// The name the engine gives it and takes back in [`Engine::compact_files`].
    pub name: String,
    /// LSM level, 0 = newest.
    pub level: usize,
}

/// Opening, probing and removing the DB of an engine kind: here, beside the engines. The kind
/// and what each engine can do (what flag validation reads) are [`crate::engine_kind`]'s.
impl EngineKind {
    /// The version line of the environment block (`RocksDB:    version 7.8.3`).
    pub fn version_line(self) -> String {
        match self {
            EngineKind::Strata => format!("Strata:     version {}", strata::VERSION),
            EngineKind::Memory => format!("Memory:     version {}", env!("CARGO_PKG_VERSION")),
            #[cfg(feature = "rocksdb")]
            EngineKind::RocksDb => format!("RocksDB:    version {}", rocks::version()),
            #[cfg(feature = "sqlite")]
            EngineKind::Sqlite => format!("SQLite:     version {}", sqlite::version()),
            #[cfg(feature = "leveldb")]
            EngineKind::LevelDb => format!("LevelDB:    version {}", leveldb::version()),
            #[cfg(feature = "kyoto")]
            EngineKind::Kyoto => format!("Kyoto Cabinet: version {}", kyoto::version()),
            #[cfg(feature = "fjall")]
            EngineKind::Fjall => format!("fjall:      version {}", fjall::VERSION),
            #[cfg(feature = "redb")]
            EngineKind::Redb => format!("redb:       version {}", redb::VERSION),
            #[allow(unreachable_patterns)]
            _ => String::new(),
        }
    }

    /// What `--build_info` prints: the tool's version and build, then the version line of
    /// every engine compiled in.
    pub fn build_info() -> String {
        let mut s = format!(
            "strata-bench version {}\nbuild: {} ({}-{})\nengines:\n",
            env!("CARGO_PKG_VERSION"),
            if cfg!(debug_assertions) { "debug" } else { "release" },
            std::env::consts::ARCH,
            std::env::consts::OS,
        );
        for kind in EngineKind::ALL.into_iter().filter(|k| k.compiled_in()) {
            s.push_str("  ");
            s.push_str(&kind.version_line());
            s.push('\n');
        }
        s
    }

    /// Opens (creating if missing) the DB at `cfg.db`.
    pub fn open(self, cfg: &Config) -> Result<Box<dyn Engine>> {
        match self {
            EngineKind::Strata => strata::open(cfg),
            EngineKind::Memory => memory::open(cfg),
            #[cfg(feature = "rocksdb")]
            EngineKind::RocksDb => rocks::open(cfg),
            #[cfg(feature = "sqlite")]
            EngineKind::Sqlite => sqlite::open(cfg),
            #[cfg(feature = "leveldb")]
            EngineKind::LevelDb => leveldb::open(cfg),
            #[cfg(feature = "kyoto")]
            EngineKind::Kyoto => kyoto::open(cfg),
            #[cfg(feature = "fjall")]
            EngineKind::Fjall => fjall::open(cfg),
            #[cfg(feature = "redb")]
            EngineKind::Redb => redb::open(cfg),
            #[allow(unreachable_patterns)]
            _ => bail!("engine '{}' is not compiled in", self.name()),
        }
    }

    /// Whether a DB exists at `cfg.db` (what `--use_existing_db` needs).
    pub fn exists(self, cfg: &Config) -> bool {
        match self {
            EngineKind::Memory => memory::exists(cfg),
            EngineKind::Sqlite => cfg.db.join("dbbench_sqlite3.db").is_file(),
            EngineKind::Strata | EngineKind::RocksDb | EngineKind::LevelDb => {
                cfg.db.join("CURRENT").is_file()
            }
            EngineKind::Kyoto => cfg.db.join(KYOTO_FILE).is_file(),
            // fjall's database directory holds a `version` marker file.
            EngineKind::Fjall => cfg.db.join("version").is_file(),
            EngineKind::Redb => cfg.db.join(REDB_FILE).is_file(),
        }
    }

    /// Restores the newest backup in `from` into `to`, replacing the DB there of this engine
    /// once a backup is found (a directory holding anything else is refused rather than
    /// emptied, and so is the run's own DB).
    pub fn restore(self, cfg: &Config, from: &std::path::Path, to: &std::path::Path) -> Result<()> {
        let same = |a: &std::path::Path, b: &std::path::Path| matches!((a.canonicalize(), b.canonicalize()), (Ok(x), Ok(y)) if x == y);
        if same(to, &cfg.db) {
            bail!("{} is the run's own DB (--db); name another --restore_dir", to.display());
        }
        let target = Config { db: to.to_path_buf(), ..cfg.clone() };
        let holds_db = self.exists(&target);
        if !holds_db && std::fs::read_dir(to).is_ok_and(|mut d| d.next().is_some()) {
            bail!(
                "{} holds files that are not a {} DB; name an empty directory",
                to.display(),
                self.name()
            );
        }
        let clear = || if holds_db { remove_dir_if_exists(to) } else { Ok(()) };
        match self {
            EngineKind::Strata => strata::restore(from, to, &clear),
            #[cfg(feature = "rocksdb")]
            EngineKind::RocksDb => rocks::restore(from, to, &clear),
            #[allow(unreachable_patterns)]
            _ => bail!("engine '{}' has no backup engine", self.name()),
        }
    }

    /// Removes the DB at `cfg.db` (and its WAL directory).
    pub fn destroy(self, cfg: &Config) -> Result<()> {
        match self {
            EngineKind::Memory => memory::destroy(cfg),
            _ => remove_dir_if_exists(&cfg.db),
        }?;
        if !cfg.flags.wal_dir.is_empty() {
            remove_dir_if_exists(std::path::Path::new(&cfg.flags.wal_dir))?;
        }
        Ok(())
    }
}

/// The file of a Kyoto Cabinet DB inside `--db` (the `.kct` suffix selects the TreeDB).
pub const KYOTO_FILE: &str = "dbbench_treedb.kct";

/// The file of a redb DB inside `--db`.
pub const REDB_FILE: &str = "dbbench.redb";

fn remove_dir_if_exists(p: &std::path::Path) -> Result<()> {
    match std::fs::remove_dir_all(p) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(anyhow::anyhow!("cannot remove {}: {e}", p.display())),
    }
}

/// db_bench's name of column family `i` of `--num_column_families`: `default`, then
/// `column_family_name_000001`, ...
pub fn column_family_name(i: usize) -> String {
    if i == 0 {
        "default".to_string()
    } else {
        format!("column_family_name_{i:06}")
    }
}

/// The column family (index) of `key` among `n`: db_bench picks family `key number % n`; the
/// key number is the big-endian integer in the key's first 8 bytes (the key layout of
/// `keys.rs` without prefixes; with `--keys_per_prefix`, the prefix's bytes, which spreads
/// whole prefixes instead).
pub fn family_of(key: &[u8], n: usize) -> usize {
    if n <= 1 {
        return 0;
    }
    let mut b = [0u8; 8];
    let take = key.len().min(8);
    b[..take].copy_from_slice(&key[..take]);
    (u64::from_be_bytes(b) % n as u64) as usize
}

/// `--num_column_families` as a count (at least 1).
pub fn num_column_families(cfg: &Config) -> Result<usize> {
    match usize::try_from(cfg.flags.num_column_families) {
        Ok(n) if n >= 1 => Ok(n),
        _ => bail!("--num_column_families={}: must be at least 1", cfg.flags.num_column_families),
    }
}

/// `--memtable_bloom_size_ratio`: None when negative (each engine keeps its own default),
/// else the ratio, which must be at most 0.25 (RocksDB would cap it silently, Strata refuse it).
pub fn memtable_bloom_size_ratio(cfg: &Config) -> Result<Option<f64>> {
    let r = cfg.flags.memtable_bloom_size_ratio;
    if r.is_nan() || r > 0.25 {
        bail!("--memtable_bloom_size_ratio={r}: expected at most 0.25 (negative: the engine's default)");
    }
    Ok((r >= 0.0).then_some(r))
}

/// The blob cache db_bench's flags ask for, the same for every engine with blob files.
#[derive(Debug, PartialEq, Eq)]
pub enum BlobCache {
    /// None (`--use_blob_cache` off, db_bench's and RocksDB's default): values are read from
    /// their files each time.
    None,
    /// The block cache itself (`--use_shared_block_and_blob_cache`, the default).
    Shared,
    /// An LRU cache of its own, of `--blob_cache_size` bytes in
    /// `2^--blob_cache_numshardbits` shards.
    Own { capacity: usize, num_shard_bits: i32 },
}

/// The blob cache of `cfg`'s flags for an engine with (`has_block_cache`) or without a block
/// cache; sharing a block cache that is not there is refused.
pub fn blob_cache(cfg: &Config, has_block_cache: bool) -> Result<BlobCache> {
    let f = &cfg.flags;
    if !f.use_blob_cache {
        return Ok(BlobCache::None);
    }
    if f.use_shared_block_and_blob_cache {
        if !has_block_cache {
            bail!(
                "--use_blob_cache with --use_shared_block_and_blob_cache needs a block cache \
                 (--cache_size > 0), or give the blob cache its own \
                 (--use_shared_block_and_blob_cache=false)"
            );
        }
        return Ok(BlobCache::Shared);
    }
    let Ok(capacity) = usize::try_from(f.blob_cache_size) else {
        bail!("--blob_cache_size={}: expected bytes >= 0", f.blob_cache_size);
    };
    let Ok(num_shard_bits) = i32::try_from(f.blob_cache_numshardbits) else {
        bail!("--blob_cache_numshardbits={}: out of range", f.blob_cache_numshardbits);
    };
    Ok(BlobCache::Own { capacity, num_shard_bits })
}

/// `--enable_write_thread_adaptive_yield`: `None` (empty) for the engine's own default.
/// Its words are every bool flag's (`flags::FlagValue`).
pub fn adaptive_yield(cfg: &Config) -> Result<Option<bool>> {
    use crate::flags::FlagValue as _;
    let name = "enable_write_thread_adaptive_yield";
    match cfg.flags.enable_write_thread_adaptive_yield.as_str() {
        "" => Ok(None),
        text => bool::parse_flag(name, text).map(Some).map_err(|e| {
            anyhow::anyhow!(
                "--{name}={text}: {e}; expected a bool, or nothing for the engine's default"
            )
        }),
    }
}

/// Translates db_bench's `rocksdb.*` property names for engines that use another prefix.
pub fn strip_rocksdb_prefix(name: &str) -> &str {
    name.strip_prefix("rocksdb.").unwrap_or(name)
}

#[cfg(test)]
pub(crate) mod tests {
    /// The Strata options strata-bench builds from these flags.
    fn strata_options(args: &[&str]) -> anyhow::Result<strata::Options> {
        let mut a = vec!["--db=/tmp/x", "--seed=1"];
        a.extend_from_slice(args);
        let c = crate::config::Config::from_args(&a).expect("config");
        super::strata::build_options(&c)
    }

    #[test]
    fn adaptive_yield_is_a_boolean_or_the_engine_default() {
        let opts =
            |args: &[&str]| strata_options(args).map(|o| o.enable_write_thread_adaptive_yield);
        let default = strata::Options::default().enable_write_thread_adaptive_yield;
        assert_eq!(opts(&[]).unwrap(), default, "no flag: Strata's own default");
        assert!(opts(&["--enable_write_thread_adaptive_yield=true"]).unwrap());
        assert!(!opts(&["--enable_write_thread_adaptive_yield=0"]).unwrap());
        let e = opts(&["--enable_write_thread_adaptive_yield=maybe"]).unwrap_err().to_string();
        assert!(e.contains("--enable_write_thread_adaptive_yield=maybe") && e.contains("expected"));
    }

    #[test]
    fn an_options_file_gives_the_options_and_db_benchs_set_up_goes_over_it() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("OPTIONS-000007");
        let text = "[Version]\n  options_file_version=1.1\n[DBOptions]\n  max_open_files=77\n  \
            a_rocksdb_only_option=1\n[CFOptions \"default\"]\n  write_buffer_size=4194304\n  \
            level0_file_num_compaction_trigger=6\n[TableOptions/BlockBasedTable \"default\"]\n  \
            filter_policy=nullptr\n";
        std::fs::write(&file, text).unwrap();
        let arg = format!("--options_file={}", file.display());
        let o = strata_options(&[
            &arg,
            "--write_buffer_size=1048576",
            "--cache_size=1048576",
            "--bloom_bits=12",
            "--use_existing_db=true",
            "--merge_operator=uint64add",
        ])
        .unwrap();
        // The file's options win over the option flags (which db_bench ignores then).
        assert_eq!((o.max_open_files, o.write_buffer_size), (77, 4 << 20));
        assert_eq!(o.level0_file_num_compaction_trigger, 6);
        // db_bench's set-up goes over the file: its cache, a filter where the file has none,
        // the merge operator, no create.
        assert_eq!(o.block_cache.as_ref().map(strata::Cache::capacity), Some(1 << 20));
        assert_eq!(o.bloom_bits_per_key, 12);
        assert!(o.merge_operator.is_some() && !o.create_if_missing);
        // The option flags the file replaces are named in the run's notes, not the others.
        let c = crate::config::Config::from_args(&[
            "--db=/tmp/x",
            &arg,
            "--write_buffer_size=1048576",
            "--cache_size=1048576",
            "--sync=true",
            "--transaction_db=true",
        ])
        .unwrap();
        let notes = c.notes.join("\n");
        assert!(notes.contains("--write_buffer_size=1048576 is not applied"), "{notes}");
        // db_bench's set-up, and flags that are not the DB's options (they once were named).
        assert!(!notes.contains("--cache_size") && !notes.contains("--sync"), "{notes}");
        assert!(!notes.contains("--transaction_db"), "{notes}");
        // A missing file or a bad one is an error naming the flag and the file.
        let missing = format!("--options_file={}", dir.path().join("absent").display());
        let e = strata_options(&[&missing]).unwrap_err().to_string();
        assert!(e.contains("--options_file=") && e.contains("absent"), "{e}");
        std::fs::write(
            &file,
            "[Version]\n  options_file_version=1.1\n[DBOptions]\n  \
            max_open_files=many\n[CFOptions \"default\"]\n",
        )
        .unwrap();
        let e = strata_options(&[&arg]).unwrap_err().to_string();
        assert!(e.contains("OPTIONS-000007 line 4") && e.contains("max_open_files"), "{e}");
    }

    #[test]
    fn blob_cache_flags_follow_db_bench() {
        let blob = ["--enable_blob_files=true", "--cache_size=1048576"];
        let with = |more: &[&str]| {
            let mut a = blob.to_vec();
            a.extend_from_slice(more);
            strata_options(&a)
        };
        // db_bench's default: no blob cache, values are read from their files.
        assert!(with(&[]).unwrap().blob.blob_cache.is_none());
        // Shared: the block cache itself.
        let o = with(&["--use_blob_cache=true"]).unwrap();
        let (block, values) = (o.block_cache.unwrap(), o.blob.blob_cache.unwrap());
        assert!(strata::Cache::ptr_eq(&block, &values));
        // A cache of its own, of --blob_cache_size bytes.
        let own = ["--use_blob_cache=true", "--use_shared_block_and_blob_cache=false"];
        let o = with(&[&own[..], &["--blob_cache_size=65536"]].concat()).unwrap();
        let values = o.blob.blob_cache.unwrap();
        assert!(!strata::Cache::ptr_eq(&o.block_cache.unwrap(), &values));
        assert_eq!(values.capacity(), 65536);
        // Sharing a block cache that is not there is refused, naming the flags.
        let e = strata_options(&[
            "--enable_blob_files=true",
            "--cache_size=0",
            "--use_blob_cache=true",
        ])
        .unwrap_err()
        .to_string();
        assert!(e.contains("--use_blob_cache") && e.contains("--cache_size"), "{e}");
    }

    #[test]
    fn families_follow_db_bench() {
        assert_eq!(super::column_family_name(0), "default");
        assert_eq!(super::column_family_name(12), "column_family_name_000012");
        let mut k = Vec::new();
        crate::keys::KeyFormat::plain(16).encode(299_999, 1_000_000, &mut k);
        assert_eq!(super::family_of(&k, 7), (299_999 % 7) as usize);
        assert_eq!(super::family_of(&k, 1), 0);
        assert_eq!(super::family_of(b"", 3), 0);
    }

    #[test]
    fn memtable_filter_flags_map_onto_strata() {
        let opts =
            |args: &[&str]| strata_options(args).map(|o| o.memtable_bloom_size_ratio.to_bits());
        let default = strata::Options::default().memtable_bloom_size_ratio.to_bits();
        assert_eq!(opts(&[]).unwrap(), default, "no flag: Strata's own default");
        let whole = ["--memtable_bloom_size_ratio=0.1", "--memtable_whole_key_filtering=true"];
        assert_eq!(opts(&whole).unwrap(), 0.1f64.to_bits());
        let off = 0.0f64.to_bits();
        assert_eq!(opts(&["--memtable_bloom_size_ratio=0.1"]).unwrap(), off, "prefixes only");
        assert_eq!(opts(&["--memtable_bloom_size_ratio=0"]).unwrap(), off);
        let err = opts(&["--memtable_bloom_size_ratio=0.3"]).unwrap_err().to_string();
        assert!(err.contains("--memtable_bloom_size_ratio=0.3") && err.contains("0.25"), "{err}");
    }

    /// The version Cargo.lock pins for `krate` (an engine's header must print the version
    /// linked).
    pub(crate) fn locked_version(krate: &str) -> &'static str {
        let lock = include_str!("../../../../Cargo.lock");
        let name = format!("name = \"{krate}\"");
        let line = lock.lines().skip_while(|l| *l != name).nth(1);
        let line = line.unwrap_or_else(|| panic!("Cargo.lock lists {krate}"));
        line.trim_start_matches("version = \"").trim_end_matches('"')
    }

    #[test]
    fn rocksdb_version_matches_the_locked_librocksdb_sys() {
        let found = locked_version("librocksdb-sys");
        let bundled = found.rsplit('+').next().unwrap_or("");
        assert_eq!(bundled, super::ROCKSDB_VERSION, "{found}");
    }
}
