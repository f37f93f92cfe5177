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

use parking_lot::{Condvar, Mutex};

use super::blob_log::BlobLogs;
use super::cf::ColumnFamilyDescriptor;
use super::cf::FamilyMem;
use super::files::find_wals;
use super::info_log::{InfoLog, GIT_SHA};
use super::obsolete::{delete_obsolete_at_open, Found, Keep};
use super::recover::{recover_version_set, replay_wals, Replayed, ReplayedFamily};
use super::wal_blob_refs::WalBlobRefs;
use super::write::wal::open_wal_writer;
use super::{CfState, Cfd, DbInner, DbState, MemSet, SuperVersion, WalState};
use crate::column_family::{check_name, DEFAULT_COLUMN_FAMILY_NAME};
use crate::comparator::KnownOrders;
use crate::env::{FileLock, FileSystem};
use crate::error::{Error, Result};
use crate::filename::{lock_path, parse_file_name, FileKind};
use crate::memtable::{MemTable, WriteBufferManager};
use crate::options::Options;
use crate::sstable::table_cache::TableCache;
use crate::sstable::{Cache, CacheAccess};
use crate::types::{FileNumber, SeqNo};
use crate::version::edit::VersionEdit;
use crate::version::paths::TablePaths;
use crate::version::set::{FamilyLayout, VersionSet};
use crate::wal::{encode_wal_event, encode_wal_header, LogWriter, WalEvent};

/// The options of each family an open names: `default` (the descriptor's, else the DB's)
/// and every descriptor's, validated and sanitized, by name.
fn family_options(
    opts: &Options,
    descriptors: &[ColumnFamilyDescriptor],
) -> Result<BTreeMap<String, Options>> {
    let mut out = BTreeMap::new();
    out.insert(DEFAULT_COLUMN_FAMILY_NAME.to_string(), opts.sanitized());
    let mut seen = std::collections::HashSet::new();
    for d in descriptors {
        check_name(&d.name)?;
        if !seen.insert(d.name.as_str()) {
            return Err(Error::InvalidArgument(format!(
                "column family {:?} is named twice in the open",
                d.name
            )));
        }
        d.options.validate().map_err(|e| match e {
            Error::InvalidArgument(m) => {
                Error::InvalidArgument(format!("column family {:?}: {m}", d.name))
            }
            other => other,
        })?;
        out.insert(d.name.clone(), d.options.sanitized());
    }
    Ok(out)
}

/// Checks the families the MANIFEST has against those the open names: every live family must
/// be opened (as RocksDB requires); a named one missing is created only with
/// `create_missing_column_families`. Returns the options of each live family by id, and the
/// names to create.
fn match_families(
    opts: &Options,
    versions: &VersionSet,
    by_name: &BTreeMap<String, Options>,
) -> Result<(BTreeMap<u32, Options>, Vec<String>)> {
    let live = versions.families();
    let unopened: Vec<&str> =
        live.values().map(|f| f.name.as_str()).filter(|n| !by_name.contains_key(*n)).collect();
    if !unopened.is_empty() {
        return Err(Error::InvalidArgument(format!(
            "column families not opened: {} (open the DB with open_cf naming every family; \
             Db::list_cf lists them)",
            unopened.join(", ")
        )));
    }
    let missing: Vec<String> =
        by_name.keys().filter(|n| !live.values().any(|f| &f.name == *n)).cloned().collect();
    if !missing.is_empty() && !opts.create_missing_column_families {
        return Err(Error::InvalidArgument(format!(
            "column families {} do not exist (set create_missing_column_families to create them)",
            missing.join(", ")
        )));
    }
    for f in live.values() {
        let (opened, kept) = (&by_name[&f.name].comparator, f.current.order());
        if opened != kept {
            return Err(Error::InvalidArgument(format!(
                "column family {:?}: opened with comparator {:?}, but its keys are in \
                 comparator {:?}'s order",
                f.name,
                opened.name(),
                kept.name()
            )));
        }
    }
    let by_id = live.iter().map(|(&id, f)| (id, by_name[&f.name].clone())).collect();
    Ok((by_id, missing))
}

/// The key orders of the families the open names (tables and the MANIFEST are read in them).
fn known_orders(by_name: &BTreeMap<String, Options>) -> KnownOrders {
    let orders = KnownOrders::default();
    for o in by_name.values() {
        orders.add(&o.comparator);
    }
    orders
}

/// Each family's table paths (`db/paths.rs`), its options adjusted to them.
fn family_paths(
    opts: &Options,
    dir: &Path,
    by_name: &mut BTreeMap<String, Options>,
) -> Result<BTreeMap<String, TablePaths>> {
    let mut out = BTreeMap::new();
    for (name, o) in by_name.iter_mut() {
        let paths = super::paths::family_paths(o, opts, dir).map_err(|e| match e {
            Error::NotSupported(m) => Error::NotSupported(format!("column family {name:?}: {m}")),
            other => other,
        })?;
        super::paths::sanitize_for_paths(o, &paths);
        out.insert(name.clone(), paths);
    }
    Ok(out)
}

/// The level count and table paths of family `name` in the open (families the open does not
/// name are refused later; meanwhile they get the most levels any version can have, and no
/// known paths).
fn layout_of<'a>(
    by_name: &'a BTreeMap<String, Options>,
    paths: &'a BTreeMap<String, TablePaths>,
) -> impl Fn(&str) -> FamilyLayout + 'a {
    |name| match (by_name.get(name), paths.get(name)) {
        (Some(o), Some(p)) => FamilyLayout { num_levels: o.num_levels, paths: p.clone() },
        _ => FamilyLayout::levels(crate::version::levels::MAX_NUM_LEVELS),
    }
}

/// The layout of live family `id` as recovered (its version's paths) with `opts`.
fn recovered_layout(versions: &VersionSet, id: u32, opts: &Options) -> FamilyLayout {
    FamilyLayout {
        num_levels: opts.num_levels,
        paths: versions.current(id).map(|v| v.paths().clone()).unwrap_or_default(),
    }
}

/// The tables in each table directory of `paths` other than `dir`, their numbers marked used
/// (an unfinished output there may be above the MANIFEST's counter).
fn scan_table_dirs(
    fs: &dyn FileSystem,
    dir: &Path,
    paths: &BTreeMap<String, TablePaths>,
    versions: &VersionSet,
) -> Result<Vec<(PathBuf, Vec<FileNumber>)>> {
    let mut out = Vec::new();
    for d in super::paths::other_table_dirs(dir, paths.values()) {
        let tables = super::paths::tables_in(fs, &d)?;
        for &n in &tables {
            versions.mark_file_number_used(n);
        }
        out.push((d, tables));
    }
    Ok(out)
}

pub(crate) fn open(
    opts: &Options,
    dir: &Path,
    descriptors: &[ColumnFamilyDescriptor],
    ttl: Option<super::ttl::TtlClock>,
) -> Result<DbInner> {
    opts.validate()?;
    let mut by_name = family_options(opts, descriptors)?;
    let paths = family_paths(opts, dir, &mut by_name)?;
    let mut opts = opts.sanitized();
    if opts.db_write_buffer_size > 0 {
        // RocksDB's rule: a private manager of that size, no stalls, no cache charge.
        opts.write_buffer_manager =
            Some(Arc::new(WriteBufferManager::new(opts.db_write_buffer_size, None, false)));
        opts.db_write_buffer_size = 0;
    }
    let opts = &opts;
    let fs = opts.fs.clone();
    let lock = prepare_dir(opts, fs.as_ref(), dir)?;
    probe_direct_io(opts, fs.as_ref(), dir)?;
    // The LOG is a diagnostic: a DB whose LOG cannot be written still opens, without one.
    let info_log = match &opts.info_logger {
        Some(l) => InfoLog::to_logger(l.clone()),
        None => InfoLog::open(fs.as_ref(), dir, opts.keep_log_file_num)
            .unwrap_or_else(|_| InfoLog::disabled()),
    };
    let mut dump = vec![
        format!("Strata version: {}", env!("CARGO_PKG_VERSION")),
        format!("Git sha {GIT_SHA}"),
        format!("DB path: {}", dir.display()),
    ];
    dump.extend(crate::options::support_log_lines());
    dump.extend(
        opts.describe().into_iter().map(|(name, value)| format!("Options.{name}: {value}")),
    );
    dump.extend(opts.table_factory_log_lines());
    info_log.log_all(dump);
    for (name, p) in paths.iter().filter(|(_, p)| p.len() > 1) {
        info_log.log(&format!(
            "[{name}] {} table paths: level_compaction_dynamic_level_bytes is off (levels have \
             static target sizes, which place the data on the paths)",
            p.len()
        ));
    }
    let wal_dir = opts.wal_dir.clone().unwrap_or_else(|| dir.to_path_buf());
    if wal_dir != dir {
        fs.create_dir_all(&wal_dir)?;
    }
    let (wal_files, kinds) = scan_dir(fs.as_ref(), dir, &wal_dir)?;

    let orders = known_orders(&by_name);
    let mut versions =
        recover_version_set(opts, &layout_of(&by_name, &paths), &orders, &fs, dir, &kinds)?;
    let id = super::identity::ensure(fs.as_ref(), dir)?;
    info_log.log(&format!("DB ID: {id}"));
    let (family_opts, missing) = match_families(opts, &versions, &by_name)?;
    for p in paths.values() {
        super::paths::create_dirs(fs.as_ref(), p)?;
    }
    let other_tables = scan_table_dirs(fs.as_ref(), dir, &paths, &versions)?;
    let table_cache = new_table_cache(opts, &fs, dir, orders);
    if opts.paranoid_checks {
        for f in versions.families().values() {
            for (level, t) in f.current.files() {
                table_cache.reader_at(t.number, &t.pinned, level)?;
            }
        }
    }

    let replay = replay_wals(opts, &family_opts, &fs, dir, &wal_files, &versions, false);
    let Replayed {
        families,
        last_seq,
        wals,
        records,
        dropped_bytes,
        unsynced_dropped,
        unsynced_wals,
        prepared,
        blob_cut,
    } = match replay {
        Ok(r) => r,
        Err(e) => {
            info_log.log(&format!("Recovery failed: {e}"));
            return Err(e);
        }
    };

    let any_recovered = families.values().any(|f| !f.recovered.is_empty());
    // WALs kept for memtables held in memory were written before this open, perhaps not
    // synced (a killed process leaves them in the page cache): sync them before a later
    // WAL can take writes, as a memtable switch would have (`db/write/wal.rs`).
    if any_recovered {
        for n in &wals {
            fs.sync_file(&wal_files[n])?;
        }
    }
    // A fresh WAL for new writes; once the MANIFEST says so, older WALs are obsolete.
    let new_log_number = versions.new_file_number();
    let mut log_writer = open_wal_writer(fs.as_ref(), opts, &wal_dir, new_log_number, None, true)?;
    let last_wal = wal_files.keys().next_back().copied().unwrap_or(FileNumber(0));
    log_writer.add_record(&encode_wal_header(
        last_wal,
        opts.recycle_log_file_num > 0,
        log_writer.zeros_ahead(),
    ))?;
    // The kept WALs were synced above (they end without a "closed" event: the process that
    // wrote them stopped); say so, or recovery would take them for WALs cut short.
    let kept_synced_through = if any_recovered { last_wal } else { FileNumber(0) };
    if kept_synced_through.0 > 0 {
        log_writer.add_record(&encode_wal_event(WalEvent::SyncedThrough(kept_synced_through)))?;
    }
    // Transactions still prepared move into the new WAL, durably, before the edit below lets
    // the WALs they were in go (`write/two_phase.rs`).
    for record in prepared.values() {
        log_writer.add_record(record)?;
    }
    log_writer.flush()?;
    if !prepared.is_empty() {
        log_writer.sync()?;
    }
    let log_number = new_log_number;
    fs.sync_dir(&wal_dir)?;
    // A family's WALs older than its first kept memtable's hold nothing of it that is not in
    // a table; the DB's oldest needed WAL is the least of those.
    let family_log = |f: &ReplayedFamily| f.recovered.first().map_or(log_number, |(_, w)| *w);
    let oldest_needed_wal = families.values().map(family_log).min().unwrap_or(log_number);
    // Each family's tables and log number in an edit of its own, `default` last with the
    // DB's log number: a crash between them replays each family from its own log number.
    let mut tables_written = 0;
    for (&id, f) in families.iter().rev() {
        let mut edit = VersionEdit {
            column_family: id,
            new_files: f.new_files.iter().map(|m| (0, m.clone())).collect(),
            blob_files_added: f.blob_files.clone(),
            cf_log_number: Some(family_log(f)),
            ..VersionEdit::default()
        };
        tables_written += edit.new_files.len();
        if id == 0 {
            edit.log_number = Some(oldest_needed_wal);
            edit.last_sequence = Some(last_seq);
        } else if edit.new_files.is_empty() {
            continue; // nothing replayed: its log number may stay behind (module doc of cf.rs)
        }
        crate::kill_point!("open.install");
        let layout = recovered_layout(&versions, id, &family_opts[&id]);
        versions.log_and_apply(&mut edit, &layout)?;
    }
    // Families the open names that the DB lacks.
    let mut family_opts = family_opts;
    for name in &missing {
        let id = versions.max_column_family() + 1;
        let order = &by_name[name].comparator;
        let mut edit = VersionEdit {
            column_family: id,
            cf_add: Some(name.clone()),
            comparator: (!order.is_bytewise()).then(|| order.name().to_string()),
            cf_log_number: Some(log_number),
            ..VersionEdit::default()
        };
        versions.log_and_apply(&mut edit, &layout_of(&by_name, &paths)(name))?;
        family_opts.insert(id, by_name[name].clone());
    }
    let version_files = versions.families().values().map(|f| f.current.clone()).collect::<Vec<_>>();

    if let Some(cut) = &blob_cut {
        info_log.log(&format!(
            "WAL replay ended at a value written at commit it could not read (as at a torn \
             WAL record; the writes after it were never synced): {cut}"
        ));
    }
    info_log.log(&format!(
        "Recovered from MANIFEST-{:06}: {} tables, {} bytes; last sequence {}; WALs replayed \
         {:?}: {} records, {} damaged bytes dropped, {} never-synced batches dropped behind a \
         WAL cut short; {} L0 tables written, {} memtables kept in memory; new WAL {}",
        versions.manifest_number().0,
        version_files.iter().map(|v| v.files().count()).sum::<usize>(),
        version_files.iter().flat_map(|v| v.files()).map(|(_, f)| f.file_size).sum::<u64>(),
        last_seq.0,
        wals.iter().map(|n| n.0).collect::<Vec<_>>(),
        records,
        dropped_bytes,
        unsynced_dropped,
        tables_written,
        families.values().map(|f| f.recovered.len()).sum::<usize>(),
        log_number.0,
    ));
    let keep = Keep {
        oldest_wal: oldest_needed_wal,
        manifest: versions.manifest_number(),
        live_tables: version_files
            .iter()
            .flat_map(|v| v.file_numbers().chain(v.blobs().numbers()))
            .collect(),
        never_archive: unsynced_wals.into_iter().collect(),
        new_wal: log_number,
    };
    let found = Found { kinds: &kinds, wal_files: &wal_files, other_tables: &other_tables };
    let wal_refs = delete_obsolete_at_open(fs.as_ref(), opts, dir, &wal_dir, &found, &keep);
    Ok(assemble(Parts {
        opts,
        dir,
        wal_dir,
        fs,
        versions,
        family_opts,
        table_cache,
        recovered: families.into_iter().map(|(id, f)| (id, f.recovered)).collect(),
        log_writer,
        log_number,
        last_seq,
        kept_synced_through,
        prepared,
        info_log,
        lock,
        read_only: false,
        never_archive: keep.never_archive,
        wal_refs,
        ttl,
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
pub(crate) fn open_read_only(
    opts: &Options,
    dir: &Path,
    descriptors: &[ColumnFamilyDescriptor],
) -> Result<DbInner> {
    opts.validate()?;
    let mut by_name = family_options(opts, descriptors)?;
    let paths = family_paths(opts, dir, &mut by_name)?;
    let mut opts = opts.sanitized();
    opts.create_if_missing = false;
    opts.error_if_exists = false;
    // Nothing is written: the replayed memtables stay out of any budget.
    opts.write_buffer_manager = None;
    opts.db_write_buffer_size = 0;
    let fs = opts.fs.clone();
    if !fs.is_dir(dir) {
        return Err(Error::InvalidArgument(format!(
            "{} is not a DB directory (it does not exist or is not a directory)",
            dir.display()
        )));
    }
    // A writer may roll the MANIFEST or delete a WAL or table between our listing and our
    // read of it, finish a WAL after we read its end and record in the next one that it was
    // synced whole, or have its WAL's later bytes in the file before the earlier ones reach
    // our read: each looks like damage to one attempt, and the next sees the newer state.
    // Damage that is really there is there on every attempt, and reported.
    const ATTEMPTS: usize = 10;
    let mut attempt = 0;
    loop {
        attempt += 1;
        match try_open_read_only(&opts, &by_name, &paths, dir) {
            Err(e) if attempt < ATTEMPTS && raced_a_writer(&e) => {}
            result => return result,
        }
    }
}

fn try_open_read_only(
    opts: &Options,
    by_name: &BTreeMap<String, Options>,
    paths: &BTreeMap<String, TablePaths>,
    dir: &Path,
) -> Result<DbInner> {
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
    let orders = known_orders(by_name);
    let versions =
        recover_version_set(opts, &layout_of(by_name, paths), &orders, &fs, dir, &kinds)?;
    let (family_opts, missing) = match_families(opts, &versions, by_name)?;
    if !missing.is_empty() {
        return Err(Error::InvalidArgument(format!(
            "column families {} do not exist (a read-only open creates none)",
            missing.join(", ")
        )));
    }
    let table_cache = new_table_cache(opts, &fs, dir, orders);
    // Opened now, the tables stay readable if the writer deletes them later.
    for f in versions.families().values() {
        for (level, t) in f.current.files() {
            table_cache.reader_at(t.number, &t.pinned, level)?;
        }
    }
    let Replayed { last_seq, families, .. } =
        replay_wals(opts, &family_opts, &fs, dir, &wal_files, &versions, true)?;
    let log_number = versions.log_number();
    let log_writer = LogWriter::new(Box::new(RefusingFile { dir: dir.to_path_buf() }));
    Ok(assemble(Parts {
        opts,
        dir,
        wal_dir,
        fs,
        versions,
        family_opts,
        table_cache,
        recovered: families.into_iter().map(|(id, f)| (id, f.recovered)).collect(),
        log_writer,
        log_number,
        last_seq,
        kept_synced_through: FileNumber(0),
        prepared: BTreeMap::new(),
        info_log: InfoLog::disabled(),
        lock: Box::new(NoLock),
        read_only: true,
        never_archive: std::collections::BTreeSet::new(),
        wal_refs: WalBlobRefs::default(),
        ttl: None,
    }))
}

/// Whether a read-only open may have failed on what a live writer changed under it (a file
/// gone, a WAL read mid-write): worth another attempt.
fn raced_a_writer(e: &Error) -> bool {
    match e {
        Error::Io { source, .. } => source.kind() == std::io::ErrorKind::NotFound,
        Error::Corruption { .. } => true,
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

fn new_table_cache(
    opts: &Options,
    fs: &Arc<dyn FileSystem>,
    dir: &Path,
    orders: KnownOrders,
) -> Arc<TableCache> {
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
            .with_meta_options(meta, opts.pin_l0_filter_and_index_blocks_in_cache)
            .with_advise_random(opts.advise_random_on_open)
            .with_statistics(opts.statistics.clone())
            .with_orders(orders),
    )
}

/// What [`assemble`] builds a `DbInner` from.
struct Parts<'a> {
    opts: &'a Options,
    dir: &'a Path,
    wal_dir: PathBuf,
    fs: Arc<dyn FileSystem>,
    versions: VersionSet,
    /// The options of every live family, by id.
    family_opts: BTreeMap<u32, Options>,
    table_cache: Arc<TableCache>,
    /// Per family: memtables kept from the WAL replay, oldest first, each with its first WAL.
    recovered: BTreeMap<u32, Vec<(Arc<MemTable>, FileNumber)>>,
    log_writer: LogWriter,
    log_number: FileNumber,
    last_seq: SeqNo,
    kept_synced_through: FileNumber,
    /// Transactions prepared in the WALs and not yet resolved (none for a read-only open).
    prepared: BTreeMap<Vec<u8>, Vec<u8>>,
    info_log: InfoLog,
    lock: Box<dyn FileLock>,
    read_only: bool,
    /// WALs recovery dropped every batch of (never archived).
    never_archive: std::collections::BTreeSet<FileNumber>,
    /// The blob files found that kept WALs may refer to (`db/wal_blob_refs.rs`).
    wal_refs: WalBlobRefs,
    /// The clock of a TTL open (`db/ttl.rs`): every family's values carry their write time.
    ttl: Option<super::ttl::TtlClock>,
}

/// Process-unique ids of open DBs, so a family handle is never used with another DB.
static NEXT_INSTANCE: AtomicU64 = AtomicU64::new(1);

fn assemble(mut p: Parts<'_>) -> DbInner {
    let blobs = Arc::new(crate::blob::BlobSource::new(
        p.fs.clone(),
        p.dir.to_path_buf(),
        p.opts.blob.blob_cache.as_ref().map(|c| CacheAccess::new(c.clone())),
        p.opts.statistics.clone(),
    ));
    // Held for the WALs: a file its flush abandoned has no footer.
    for n in p.wal_refs.held() {
        blobs.unfinished(n);
    }
    let any_timestamps = p.family_opts.values().any(|o| o.timestamps.is_some());
    let instance = NEXT_INSTANCE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let db_stats = Arc::new(crate::stats::Stats::new(p.opts.num_levels, p.opts.statistics.clone()));
    let mut cfs = BTreeMap::new();
    for (&id, family) in p.versions.families() {
        let Some(fopts) = p.family_opts.remove(&id) else { continue };
        let recovered = p.recovered.remove(&id).unwrap_or_default();
        let mem = super::cf::new_memtable(&fopts, p.opts, None);
        // Every write made after the open goes here; the recovered ones are older.
        mem.set_earliest(p.last_seq);
        let stats = if id == 0 {
            db_stats.clone()
        } else {
            Arc::new(crate::stats::Stats::new(fopts.num_levels, p.opts.statistics.clone()))
        };
        let imm: std::collections::VecDeque<_> = recovered.into_iter().collect();
        let sv = SuperVersion::build(&fopts, &mem, &imm, family.current.clone(), 1);
        let suffix = if p.ttl.is_some() { super::ttl::TTL_SUFFIX_LEN } else { 0 };
        // A DB-wide option (RocksDB's `file_checksum_gen_factory` is a DB option).
        let fopts = Options { file_checksums: p.opts.file_checksums, ..fopts };
        let cfd = Arc::new(Cfd::new(instance, id, &family.name, fopts, sv, stats, suffix));
        cfd.set_full_history_ts_low(family.full_history_ts_low.clone());
        let switched = imm.len() as u64;
        let cs = CfState {
            cfd,
            mem,
            mem_log: p.log_number,
            imm,
            memtables_switched: switched,
            memtables_flushed: 0,
            memtables_retired: 0,
            // Memtables recovered from the WALs go to tables as they are.
            flush_requested: switched,
            l0_pace: crate::compaction::l0_batch::L0Pace::default(),
        };
        cfs.insert(id, cs);
    }
    let family_mem = |c: &CfState| FamilyMem { cfd: c.cfd.clone(), mem: c.mem.clone() };
    let default_cf = cfs[&0].cfd.clone();
    let mems = MemSet {
        default: family_mem(&cfs[&0]),
        others: cfs.values().filter(|c| c.cfd.id != 0).map(family_mem).collect(),
    };
    let state = DbState {
        cfs,
        bg_error: None,
        shutting_down: false,
        compacting: std::collections::HashSet::new(),
        compaction_outputs: Vec::new(),
        running_compactions: 0,
        manual_compactions: 0,
        obsolete_tables: Vec::new(),
    };
    let next_file = p.versions.file_counter();
    DbInner {
        opts: p.opts.clone(),
        instance,
        default_cf,
        dir: p.dir.to_path_buf(),
        wal_dir: p.wal_dir,
        fs: p.fs.clone(),
        state: Mutex::new(state),
        purging: Mutex::new(()),
        options_file: Mutex::new(()),
        file_deletions_disabled: std::sync::atomic::AtomicUsize::new(0),
        bg_cv: Condvar::new(),
        versions: Mutex::new(p.versions),
        next_file,
        wal: Mutex::new(WalState {
            writer: p.log_writer,
            number: p.log_number,
            mems: Arc::new(mems),
            last_sequence: p.last_seq,
            delay_debt_micros: 0.0,
            synced_event_through: p.kept_synced_through,
            prepared: p.prepared,
            closed: std::collections::VecDeque::new(),
            unstalled: None,
        }),
        retired_wals: Mutex::new(std::collections::VecDeque::new()),
        recycled_wals: Mutex::new(super::RecycledWals::default()),
        first_own_wal: p.log_number,
        never_archive: p.never_archive,
        wals_synced_through: AtomicU64::new(p.kept_synced_through.0),
        newest_wal: AtomicU64::new(p.log_number.0),
        wal_dir_synced_through: AtomicU64::new(p.log_number.0),
        queue: Mutex::new(super::write::queue::WriteQueue::default()),
        write_wait: super::write::yield_wait::YieldPolicy::new(
            p.opts.enable_write_thread_adaptive_yield,
            p.opts.write_thread_max_yield_usec,
            p.opts.write_thread_slow_yield_usec,
        ),
        pipeline: Mutex::new(super::write::WritePipeline::default()),
        pipeline_cv: Condvar::new(),
        groups_finished: AtomicU64::new(0),
        syncs_in_flight: AtomicU64::new(0),
        sync_slots: Mutex::new(()),
        sync_slots_cv: Condvar::new(),
        visible_sequence: AtomicU64::new(p.last_seq.0),
        has_bg_error: AtomicBool::new(false),
        closing: AtomicBool::new(false),
        write_stopped: AtomicBool::new(false),
        write_delayed: AtomicBool::new(false),
        delayed_rate: Mutex::new(super::write::rate::DelayedRate::new(p.opts.delayed_write_rate)),
        blobs,
        blob_logs: Arc::new(BlobLogs::new(p.wal_refs)),
        table_cache: p.table_cache,
        row_cache: p.opts.row_cache.clone().map(super::row_cache::RowCacheAccess::new),
        snapshots: Arc::default(),
        stats: db_stats,
        info_log: p.info_log,
        stats_history: Mutex::default(),
        stall_started_micros: AtomicU64::new(0),
        slowdown_started_micros: AtomicU64::new(0),
        stall_families: Mutex::new((String::new(), String::new())),
        read_only: p.read_only,
        ttl: p.ttl,
        any_timestamps: AtomicBool::new(any_timestamps),
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
