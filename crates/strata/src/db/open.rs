//! Opening a DB: checks and lock, recovery (`recover.rs`), a new WAL, the recovered state
//! installed in the MANIFEST, cleanup (`obsolete.rs`), and the `DbInner` the handle runs on.
//!
//! A read-only open ([`open_read_only`]) follows the same recovery but writes nothing: no
//! lock file, no LOG, no new WAL, no MANIFEST edit, no table; the WALs are replayed into
//! memtables kept in memory. It takes no lock, so a read-write `Db` (in this or another
//! process) may change the directory meanwhile: an open that finds a file gone between
//! listing and reading it (a MANIFEST rolled, a WAL or table deleted) starts again, and every
//! live table is opened at once so that later deletions do not take it away (with
//! `max_open_files` at least the number of tables; a table evicted from the table cache and
//! deleted since is then an I/O error).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;

use parking_lot::{Condvar, Mutex, RwLock};

use super::info_log::{InfoLog, GIT_SHA};
use super::obsolete::{delete_obsolete_at_open, Keep};
use super::recover::{find_wals, recover_version_set, replay_wals, Replayed};
use super::write::open_wal_writer;
use super::{DbInner, DbState, SuperVersion, WalState};
use crate::env::{FileLock, FileSystem};
use crate::error::{Error, Result};
use crate::filename::{lock_path, parse_file_name, FileKind};
use crate::memtable::MemTable;
use crate::options::Options;
use crate::sstable::table_cache::TableCache;
use crate::sstable::{Cache, CacheAccess};
use crate::types::{FileNumber, SeqNo};
use crate::version::levels::Version;
use crate::version::set::VersionSet;
use crate::wal::{encode_wal_event, encode_wal_header, LogWriter, WalEvent};

pub(crate) fn open(opts: &Options, dir: &Path) -> Result<DbInner> {
    opts.validate()?;
    let opts = &opts.sanitized();
    let fs = opts.fs.clone();
    let lock = prepare_dir(opts, fs.as_ref(), dir)?;
    probe_direct_io(opts, fs.as_ref(), dir)?;
    // The LOG is a diagnostic: a DB whose LOG cannot be written still opens, without one.
    let info_log = InfoLog::open(fs.as_ref(), dir, opts.keep_log_file_num)
        .unwrap_or_else(|_| InfoLog::disabled());
    info_log.log(&format!("Strata version: {}", env!("CARGO_PKG_VERSION")));
    info_log.log(&format!("Git sha {GIT_SHA}"));
    info_log.log(&format!("DB path: {}", dir.display()));
    for (name, value) in opts.describe() {
        info_log.log(&format!("Options.{name}: {value}"));
    }
    let wal_dir = opts.wal_dir.clone().unwrap_or_else(|| dir.to_path_buf());
    if wal_dir != dir {
        fs.create_dir_all(&wal_dir)?;
    }
    let (wal_files, kinds) = scan_dir(fs.as_ref(), dir, &wal_dir)?;

    let mut versions = recover_version_set(opts, &fs, dir, &kinds)?;
    let table_cache = new_table_cache(opts, &fs, dir);
    if opts.paranoid_checks {
        for (level, f) in versions.current().files() {
            table_cache.reader_at(f.number, &f.pinned, level)?;
        }
    }

    let table_options = opts.table_options_for_level(0);
    let replay = replay_wals(opts, &fs, dir, &wal_files, &versions, &table_options, false);
    let Replayed { mut edit, last_seq, recovered, wals, records, dropped_bytes, unsynced_dropped } =
        match replay {
            Ok(r) => r,
            Err(e) => {
                info_log.log(&format!("Recovery failed: {e}"));
                return Err(e);
            }
        };

    // WALs kept for memtables held in memory were written before this open, perhaps not
    // synced (a killed process leaves them in the page cache): sync them before a later
    // WAL can take writes, as a memtable switch would have (`db/write.rs`).
    if !recovered.is_empty() {
        for n in &wals {
            fs.sync_file(&wal_files[n])?;
        }
    }
    // A fresh WAL for new writes; once the MANIFEST says so, older WALs are obsolete.
    let new_log_number = versions.new_file_number();
    let mut log_writer = open_wal_writer(fs.as_ref(), opts, &wal_dir, new_log_number, None)?;
    let last_wal = wal_files.keys().next_back().copied().unwrap_or(FileNumber(0));
    log_writer.add_record(&encode_wal_header(
        last_wal,
        opts.recycle_log_file_num > 0,
        log_writer.zeros_ahead(),
    ))?;
    // The kept WALs were synced above (they end without a "closed" event: the process that
    // wrote them stopped); say so, or recovery would take them for WALs cut short.
    let kept_synced_through = if recovered.is_empty() { FileNumber(0) } else { last_wal };
    if kept_synced_through.0 > 0 {
        log_writer.add_record(&encode_wal_event(WalEvent::SyncedThrough(kept_synced_through)))?;
    }
    log_writer.flush()?;
    let log_number = new_log_number;
    fs.sync_dir(&wal_dir)?;
    // WALs older than this hold nothing that is not in a table.
    let oldest_needed_wal = recovered.first().map_or(log_number, |(_, w)| *w);
    edit.log_number = Some(oldest_needed_wal);
    edit.last_sequence = Some(last_seq);
    crate::kill_point!("open.install");
    let version = versions.log_and_apply(&mut edit)?;

    info_log.log(&format!(
        "Recovered from MANIFEST-{:06}: {} tables, {} bytes; last sequence {}; WALs replayed \
         {:?}: {} records, {} damaged bytes dropped, {} never-synced batches dropped behind a \
         WAL cut short; {} L0 tables written, {} memtables kept in memory; new WAL {}",
        versions.manifest_number().0,
        version.files().count(),
        version.files().map(|(_, f)| f.file_size).sum::<u64>(),
        last_seq.0,
        wals.iter().map(|n| n.0).collect::<Vec<_>>(),
        records,
        dropped_bytes,
        unsynced_dropped,
        edit.new_files.len(),
        recovered.len(),
        log_number.0,
    ));
    delete_obsolete_at_open(
        fs.as_ref(),
        dir,
        &kinds,
        &wal_files,
        &Keep {
            oldest_wal: oldest_needed_wal,
            manifest: versions.manifest_number(),
            live_tables: version.file_numbers().collect(),
        },
    );
    Ok(assemble(Parts {
        opts,
        dir,
        wal_dir,
        fs,
        versions,
        version,
        table_cache,
        recovered,
        log_writer,
        log_number,
        last_seq,
        kept_synced_through,
        info_log,
        lock,
        read_only: false,
    }))
}

/// Fails, naming the directory, when direct I/O is asked for and its file system has none,
/// rather than at the first flush or read. Writes and removes a probe file.
fn probe_direct_io(opts: &Options, fs: &dyn FileSystem, dir: &Path) -> Result<()> {
    if !opts.use_direct_reads && !opts.use_direct_io_for_flush_and_compaction {
        return Ok(());
    }
    let probe = dir.join("DIRECT_IO_PROBE.dbtmp");
    let r = (|| {
        if opts.use_direct_io_for_flush_and_compaction {
            let mut f = fs.create_direct(&probe)?;
            f.append(b"probe")?;
            f.flush()?;
        } else {
            fs.create(&probe)?.flush()?;
        }
        if opts.use_direct_reads {
            let mut buf = [0u8; 5];
            fs.open_direct(&probe)?.read_at(0, &mut buf)?;
        }
        Ok(())
    })();
    let _ = fs.remove(&probe);
    r
}

/// Opens the DB in `dir` without writing anything (see the module documentation).
pub(crate) fn open_read_only(opts: &Options, dir: &Path) -> Result<DbInner> {
    opts.validate()?;
    let mut opts = opts.sanitized();
    opts.create_if_missing = false;
    opts.error_if_exists = false;
    let fs = opts.fs.clone();
    if !fs.is_dir(dir) {
        return Err(Error::InvalidArgument(format!(
            "{} is not a DB directory (it does not exist or is not a directory)",
            dir.display()
        )));
    }
    // A writer may roll the MANIFEST or delete a WAL or table between our listing and our
    // read of it; the next attempt sees its newer state.
    const ATTEMPTS: usize = 5;
    let mut attempt = 0;
    loop {
        attempt += 1;
        match try_open_read_only(&opts, dir) {
            Err(e) if attempt < ATTEMPTS && is_vanished_file(&e) => {}
            result => return result,
        }
    }
}

fn try_open_read_only(opts: &Options, dir: &Path) -> Result<DbInner> {
    let fs = opts.fs.clone();
    let wal_dir = opts.wal_dir.clone().unwrap_or_else(|| dir.to_path_buf());
    let (wal_files, kinds) = scan_dir(fs.as_ref(), dir, &wal_dir)?;
    if !kinds.contains(&FileKind::Current) {
        return Err(Error::InvalidArgument(format!(
            "{} holds no DB (no CURRENT file)",
            dir.display()
        )));
    }
    if opts.use_direct_reads {
        // Writes nothing: the probe is a direct open of CURRENT.
        fs.open_direct(&crate::filename::current_path(dir))?;
    }
    let versions = recover_version_set(opts, &fs, dir, &kinds)?;
    let table_cache = new_table_cache(opts, &fs, dir);
    // Opened now, the tables stay readable if the writer deletes them later.
    for (level, f) in versions.current().files() {
        table_cache.reader_at(f.number, &f.pinned, level)?;
    }
    let table_options = opts.table_options_for_level(0);
    let Replayed { last_seq, recovered, .. } =
        replay_wals(opts, &fs, dir, &wal_files, &versions, &table_options, true)?;
    let version = versions.current().clone();
    let log_number = versions.log_number();
    let log_writer = LogWriter::new(Box::new(RefusingFile { dir: dir.to_path_buf() }));
    Ok(assemble(Parts {
        opts,
        dir,
        wal_dir,
        fs,
        versions,
        version,
        table_cache,
        recovered,
        log_writer,
        log_number,
        last_seq,
        kept_synced_through: FileNumber(0),
        info_log: InfoLog::disabled(),
        lock: Box::new(NoLock),
        read_only: true,
    }))
}

/// Whether `e` says a file was not found (it vanished under a concurrent writer).
fn is_vanished_file(e: &Error) -> bool {
    match e {
        Error::Io { source, .. } => source.kind() == std::io::ErrorKind::NotFound,
        Error::Corruption { reason, .. } => reason.contains("missing"),
        _ => false,
    }
}

/// The WAL a read-only DB holds: every write to it fails.
struct RefusingFile {
    dir: std::path::PathBuf,
}

impl crate::env::WritableFile for RefusingFile {
    fn append(&mut self, _: &[u8]) -> Result<()> {
        Err(read_only_error(&self.dir))
    }
    fn flush(&mut self) -> Result<()> {
        Ok(())
    }
    fn sync(&mut self) -> Result<()> {
        Ok(())
    }
    fn len(&self) -> u64 {
        0
    }
}

/// The error every write to a read-only DB returns.
pub(crate) fn read_only_error(dir: &Path) -> Error {
    Error::NotSupported(format!("{} is open read-only", dir.display()))
}

/// A read-only DB takes no lock.
struct NoLock;

impl FileLock for NoLock {}

/// The DB's WAL files by number (in `dir` and `wal_dir`), and the kinds of every DB file.
fn scan_dir(
    fs: &dyn FileSystem,
    dir: &Path,
    wal_dir: &Path,
) -> Result<(BTreeMap<FileNumber, PathBuf>, Vec<FileKind>)> {
    let wal_files = find_wals(fs, dir, wal_dir)?;
    let names = fs.list(dir)?;
    // The DB's files: those in its directory, and the WALs wherever they are.
    let mut kinds: Vec<FileKind> = names
        .iter()
        .filter_map(|n| parse_file_name(n))
        .filter(|k| !matches!(k, FileKind::Wal(_)))
        .collect();
    kinds.extend(wal_files.keys().map(|&n| FileKind::Wal(n)));
    Ok((wal_files, kinds))
}

fn new_table_cache(opts: &Options, fs: &Arc<dyn FileSystem>, dir: &Path) -> Arc<TableCache> {
    let block_cache = match &opts.block_cache {
        Some(c) => Some(c.clone()),
        None => (opts.block_cache_size > 0).then(|| Cache::new_lru(opts.block_cache_size)),
    }
    .map(CacheAccess::new);
    let table_capacity =
        if opts.max_open_files < 0 { usize::MAX } else { opts.max_open_files as usize };
    let meta = crate::sstable::MetaBlockOptions {
        cache_index_and_filter_blocks: opts.cache_index_and_filter_blocks,
        high_priority: opts.cache_index_and_filter_blocks_with_high_priority,
        pin: false,
        pin_top_level: opts.pin_top_level_index_and_filter,
    };
    Arc::new(
        TableCache::new(fs.clone(), dir.to_path_buf(), table_capacity.max(1), block_cache)
            .with_meta_options(meta, opts.pin_l0_filter_and_index_blocks_in_cache),
    )
}

/// What [`assemble`] builds a `DbInner` from.
struct Parts<'a> {
    opts: &'a Options,
    dir: &'a Path,
    wal_dir: PathBuf,
    fs: Arc<dyn FileSystem>,
    versions: VersionSet,
    version: Arc<Version>,
    table_cache: Arc<TableCache>,
    /// Memtables kept from the WAL replay, oldest first, each with its first WAL.
    recovered: Vec<(Arc<MemTable>, FileNumber)>,
    log_writer: LogWriter,
    log_number: FileNumber,
    last_seq: SeqNo,
    kept_synced_through: FileNumber,
    info_log: InfoLog,
    lock: Box<dyn FileLock>,
    read_only: bool,
}

fn assemble(p: Parts<'_>) -> DbInner {
    let mem = Arc::new(MemTable::new());
    let state = DbState {
        mem: mem.clone(),
        mem_log: p.log_number,
        imm: p.recovered.iter().cloned().collect(),
        bg_error: None,
        shutting_down: false,
        memtables_switched: p.recovered.len() as u64,
        memtables_flushed: 0,
        compacting: std::collections::HashSet::new(),
        running_compactions: 0,
        manual_compactions: 0,
        obsolete_tables: Vec::new(),
    };
    let picker = p.opts.picker_options();
    let pending_compaction_bytes =
        crate::compaction::estimated_pending_compaction_bytes(&p.version, &picker);
    let stall_count = crate::compaction::stall_count(&p.version, &picker);
    let sv = SuperVersion {
        number: 1,
        mem: mem.clone(),
        imm: p.recovered.iter().rev().map(|(m, _)| m.clone()).collect(),
        version: p.version,
        pending_compaction_bytes,
        stall_count,
        version_range_dels: std::sync::OnceLock::new(),
    };
    let next_file = p.versions.file_counter();
    DbInner {
        opts: p.opts.clone(),
        table_options: (0..p.opts.num_levels).map(|l| p.opts.table_options_for_level(l)).collect(),
        dir: p.dir.to_path_buf(),
        wal_dir: p.wal_dir,
        fs: p.fs,
        state: Mutex::new(state),
        bg_cv: Condvar::new(),
        versions: Mutex::new(p.versions),
        next_file,
        wal: Mutex::new(WalState {
            writer: p.log_writer,
            number: p.log_number,
            mem,
            last_sequence: p.last_seq,
            delay_debt_micros: 0.0,
            synced_event_through: p.kept_synced_through,
        }),
        retired_wals: Mutex::new(std::collections::VecDeque::new()),
        recycled_wals: Mutex::new(super::RecycledWals::default()),
        first_own_wal: p.log_number,
        wals_synced_through: AtomicU64::new(p.kept_synced_through.0),
        newest_wal: AtomicU64::new(p.log_number.0),
        wal_dir_synced_through: AtomicU64::new(p.log_number.0),
        queue: Mutex::new(super::write_queue::WriteQueue::default()),
        pipeline: Mutex::new(super::write::WritePipeline::default()),
        pipeline_cv: Condvar::new(),
        syncs_in_flight: AtomicU64::new(0),
        sync_slots: Mutex::new(()),
        sync_slots_cv: Condvar::new(),
        super_version: RwLock::new(Arc::new(sv)),
        local_svs: super::local_sv::LocalSuperVersions::new(1),
        visible_sequence: AtomicU64::new(p.last_seq.0),
        has_bg_error: AtomicBool::new(false),
        closing: AtomicBool::new(false),
        write_stopped: AtomicBool::new(false),
        write_delayed: AtomicBool::new(false),
        table_cache: p.table_cache,
        snapshots: Arc::default(),
        stats: crate::stats::Stats::new(p.opts.num_levels),
        info_log: p.info_log,
        stall_started_micros: AtomicU64::new(0),
        slowdown_started_micros: AtomicU64::new(0),
        read_only: p.read_only,
        _lock: p.lock,
    }
}

/// Checks the DB path, creates the directory when allowed, and takes the DB's lock file.
fn prepare_dir(opts: &Options, fs: &dyn FileSystem, dir: &Path) -> Result<Box<dyn FileLock>> {
    if dir.as_os_str().is_empty() {
        return Err(Error::InvalidArgument("the DB path is empty".into()));
    }
    if fs.exists(dir) && !fs.is_dir(dir) {
        return Err(Error::InvalidArgument(format!(
            "{} exists and is not a directory",
            dir.display()
        )));
    }
    if opts.create_if_missing {
        fs.create_dir_all(dir)?;
    } else if !fs.exists(dir) {
        return Err(Error::InvalidArgument(format!(
            "{} does not exist and create_if_missing is false",
            dir.display()
        )));
    }
    fs.lock(&lock_path(dir))
}
