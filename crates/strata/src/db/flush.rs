//! Flushing memtables to L0 tables, the background thread that does it, and `Db::flush`.

use std::sync::Arc;
use std::thread::JoinHandle;

use super::write::switch::switch_memtable;
use super::{Cfd, DbInner};
use crate::blob::{BlobFlow, BlobOutput, BlobWriteConfig};
use crate::compaction::stream::{run_stream, StreamContext, StreamFilter, StreamStats};
use crate::compaction_filter::{
    filter_for, CompactionFilterContext, CompactionFilterFactory, TableFileCreationReason,
};
use crate::error::{Error, Result};
use crate::filename::table_path;
use crate::iterator::merging::MergingIterator;
use crate::iterator::InternalIterator;
use crate::memtable::MemTable;
use crate::range_del::FragmentedTombstones;
use crate::sstable::TableBuilder;
use crate::statistics::{Histogram, Ticker};
use crate::stats::LevelStats;
use crate::types::FileNumber;
use crate::version::edit::{BlobFileAddition, FileMetaData, VersionEdit};

/// What a flush needs besides the memtable.
pub(crate) struct FlushEnv<'a> {
    pub fs: &'a dyn crate::env::FileSystem,
    pub dir: &'a std::path::Path,
    pub table_options: &'a crate::sstable::TableOptions,
    pub snapshots: &'a [crate::types::SeqNo],
    pub merge_operator: Option<&'a dyn crate::merge_operator::MergeOperator>,
    /// The family's compaction filter factory and what it is told of this run.
    pub filter: Option<(&'a dyn CompactionFilterFactory, CompactionFilterContext)>,
    /// Where large values go (`None`: every value stays in the table, and the memtables hold
    /// no blob index).
    pub blobs: Option<FlushBlobs<'a>>,
    /// Reads the values of blob indexes the memtables hold (values written at commit), for
    /// the compaction filter and merges.
    pub blob_fetch: Option<&'a dyn crate::iterator::BlobFetch>,
}

/// How a flush writes blob files.
pub(crate) struct FlushBlobs<'a> {
    pub config: BlobWriteConfig,
    /// The DB directory.
    pub dir: &'a std::path::Path,
    pub new_file_number: &'a (dyn Fn() -> FileNumber + Sync),
}

/// A flushed memtable: its table, what the stream did, the blob files written, and the blob
/// indexes the table holds by file.
pub(crate) type Flushed = (FileMetaData, StreamStats, Vec<BlobFileAddition>, BlobFlow);

/// Writes `mems` (one memtable, or several flushed together, oldest first) as table
/// `number`, dropping versions no snapshot can see (nothing is treated as the bottom: older
/// data may exist in tables); `None` when nothing is left to write. The table is synced and
/// its directory entry made durable before this returns. A panic while writing (in a user's
/// compaction filter or merge operator, say) is returned as `Error::Panic`, on a recovery or
/// repair as on a flush.
pub(crate) fn write_level0_table(
    env: &FlushEnv<'_>,
    mems: &[Arc<MemTable>],
    number: FileNumber,
) -> Result<Option<Flushed>> {
    super::background::catch_panic(|| build_level0_table(env, mems, number))
}

fn build_level0_table(
    env: &FlushEnv<'_>,
    mems: &[Arc<MemTable>],
    number: FileNumber,
) -> Result<Option<Flushed>> {
    if mems.iter().all(|m| m.is_empty()) {
        return Ok(None);
    }
    let path = table_path(env.dir, number);
    let file = env.fs.create(&path)?;
    let mut builder = TableBuilder::new(env.table_options, file, path.clone());
    let not_bottom = |_: &[u8]| false;
    let order = &env.table_options.order;
    let tombstones: Vec<_> = mems.iter().flat_map(|m| m.range_tombstones()).collect();
    // Several memtables: one stream over all of them (their entries' sequence numbers tell
    // the versions of a key apart), with their range tombstones fragmented together.
    let range_dels = match mems {
        [mem] => mem.fragmented_range_tombstones(),
        _ => (!tombstones.is_empty())
            .then(|| Arc::new(FragmentedTombstones::from_tombstones(&tombstones, 0, order))),
    };
    let ctx = StreamContext {
        snapshots: env.snapshots,
        merge_operator: env.merge_operator,
        is_bottom: &not_bottom,
        range_dels: range_dels.as_deref(),
        zero_seqnos: false,
        history: None,
        blobs: env.blob_fetch,
    };
    let mut filter = env.filter.as_ref().and_then(|(f, c)| filter_for(Some(*f), c));
    let sf = filter.as_deref_mut().map(|f| StreamFilter { filter: f, level: 0 });
    let mut it: Box<dyn InternalIterator> = match mems {
        [mem] => Box::new(mem.iter()),
        _ => Box::new(MergingIterator::new(
            mems.iter().map(|m| Box::new(m.iter()) as Box<dyn InternalIterator>).collect(),
            order.clone(),
        )),
    };
    let mut blobs = env
        .blobs
        .as_ref()
        .map(|b| BlobOutput::new(b.config.clone(), env.fs, b.dir, b.new_file_number, None));
    let written = (|| {
        let stats = run_stream(it.as_mut(), &ctx, sf, |k, v| match &mut blobs {
            Some(out) => {
                let (k, v) = out.route(k, v)?;
                builder.add(k, v)
            }
            None => builder.add(k, v),
        })?;
        for t in &tombstones {
            builder.add_range_tombstone(t);
        }
        // Blob files first: the table is durable only with the values it refers to.
        let added = match &mut blobs {
            Some(out) => out.finish()?,
            None => Vec::new(),
        };
        crate::kill_point!("sst.finish");
        let summary = builder.finish()?;
        if summary.num_entries == 0 && summary.properties.num_range_deletions == 0 {
            let _ = env.fs.remove(&path);
            return Ok(None);
        }
        crate::kill_point!("sst.sync_dir");
        env.fs.sync_dir(env.dir)?;
        Ok(Some((stats, added, summary)))
    })();
    // A failure anywhere removes the blob files written (the caller removes the table).
    let (stats, added, summary) = match written {
        Ok(Some(w)) => w,
        Ok(None) => return Ok(None),
        Err(e) => {
            if let Some(out) = &mut blobs {
                out.abandon();
            }
            return Err(e);
        }
    };
    let mut meta = FileMetaData::from_summary(number, summary);
    meta.data_time = super::info_log::now_micros() / 1_000_000;
    meta.blob_refs = blobs.as_mut().map(BlobOutput::take_table_refs).unwrap_or_default();
    let flow = blobs.map(|b| b.out_flow).unwrap_or_default();
    Ok(Some((meta, stats, added, flow)))
}

/// What a compaction filter factory is told of a flush (or of a memtable written at recovery).
pub(crate) fn flush_filter_context(
    cf: u32,
    reason: TableFileCreationReason,
) -> CompactionFilterContext {
    CompactionFilterContext {
        is_full_compaction: false,
        is_manual_compaction: false,
        column_family_id: cf,
        reason,
    }
}

/// Starts the background flush thread.
pub(crate) fn start_background(inner: &Arc<DbInner>) -> Result<Vec<JoinHandle<()>>> {
    Ok(vec![super::background::spawn(inner, "strata-flush".to_string(), flush_loop)?])
}

fn flush_loop(inner: &DbInner) {
    loop {
        let (cfd, mems, next_log) = {
            let mut st = inner.state.lock();
            // Of the families with a flush due, the one whose oldest immutable memtable
            // started in the oldest WAL goes first: its flush frees WALs soonest.
            let pick = |st: &super::DbState| {
                st.cfs
                    .values()
                    .filter_map(|c| {
                        let n = c.flush_count()?;
                        Some((c.imm.front()?.1, c, n))
                    })
                    .min_by_key(|(log, c, _)| (*log, c.cfd.id))
                    .map(|(_, c, n)| {
                        let next_log = c.imm.get(n).map_or(c.mem_log, |(_, l)| *l);
                        let mems: Vec<_> = c.imm.iter().take(n).map(|(m, _)| m.clone()).collect();
                        (c.cfd.clone(), mems, next_log)
                    })
            };
            loop {
                if st.shutting_down {
                    return;
                }
                if st.bg_error.is_none() {
                    if let Some(p) = pick(&st) {
                        break p;
                    }
                }
                inner.bg_cv.wait(&mut st);
            }
        };
        // A panic in the flush (a compaction filter's, say) is a failed flush: the memtables
        // stay queued and the DB refuses writes (`db/background.rs`).
        if let Err(e) = super::background::catch_panic(|| flush_one(inner, &cfd, mems, next_log)) {
            let mut st = inner.state.lock();
            inner.set_bg_error(&mut st, &e);
        }
    }
}

/// Flushes family `cfd`'s oldest immutable memtables `mems` (oldest first) into one table;
/// afterwards WALs older than `next_log` hold nothing of the family that is not in a table,
/// and WALs no family needs any more are deleted. This thread's references to `mems` are
/// dropped before waiters (a `flush()`) are woken: once the flush is installed, only readers
/// still using the memtables keep their memory.
fn flush_one(
    inner: &DbInner,
    cfd: &Arc<Cfd>,
    mems: Vec<Arc<MemTable>>,
    next_log: FileNumber,
) -> Result<()> {
    let start = std::time::Instant::now();
    let number = inner.new_file_number();
    let snapshots = super::snapshot_reads::kept_for(inner, cfd);
    let mut table_options = std::borrow::Cow::Borrowed(&cfd.table_options[0]);
    if cfd.opts.compaction_style == crate::compaction::style::CompactionStyle::Tiered
        && cfd.opts.compaction_options_tiered.skewed_filter_bits
    {
        let v = cfd.current_super_version().version.clone();
        let base = table_options.bloom_bits_per_key;
        let mem_bytes: u64 = mems.iter().map(|m| m.approximate_memory_usage() as u64).sum();
        let bits = crate::compaction::filter_bits::bits_for_flush(base, &v, mem_bytes);
        table_options.to_mut().bloom_bits_per_key = bits;
    }
    // Flushes write to the family's first table path.
    let table_dir = cfd.table_dir(0, &inner.dir);
    let new_blob_number = || inner.new_file_number();
    // No version is held across the flush: a compaction finishing meanwhile must find its
    // inputs unreferenced (`db/obsolete.rs`). A flush collects no garbage, so the config
    // needs none.
    let blob_config = super::blob_files::write_config(cfd, None);
    // The blob files of the memtables' values written at commit (`db/blob_log.rs`).
    let logs: Vec<&super::blob_log::BlobLog> =
        mems.iter().filter_map(|m| super::blob_log::log_of(m)).collect();
    let blob_reads = crate::blob::BlobReads { source: &*inner.blobs, fill: false };
    let env = FlushEnv {
        fs: inner.fs.as_ref(),
        dir: table_dir,
        table_options: &table_options,
        snapshots: &snapshots,
        merge_operator: cfd.opts.merge_operator.as_deref(),
        filter: cfd
            .opts
            .compaction_filter_factory
            .as_deref()
            .map(|f| (f, flush_filter_context(cfd.id, TableFileCreationReason::Flush))),
        blobs: (blob_config.min_blob_size.is_some() || !logs.is_empty()).then_some(FlushBlobs {
            config: blob_config,
            dir: &inner.dir,
            new_file_number: &new_blob_number,
        }),
        blob_fetch: (!logs.is_empty()).then_some(&blob_reads as &dyn crate::iterator::BlobFetch),
    };
    // The WALs created so far: when they share the table's directory, the table's directory
    // sync covers their entries too, and `sync_wal_dir_through` below need not sync it again.
    let wals_before = inner.newest_wal.load(std::sync::atomic::Ordering::Acquire);
    let cpu_start = crate::util::cpu::thread_cpu_micros();
    let meta = write_level0_table(&env, &mems, number);
    let cpu_micros = crate::util::cpu::thread_cpu_micros().saturating_sub(cpu_start);
    let meta = match meta {
        Ok(m) => m,
        Err(e) => {
            let _ = inner.fs.remove(&table_path(table_dir, number));
            return Err(e);
        }
    };
    if meta.is_some() && table_dir == inner.wal_dir.as_path() {
        // `write_level0_table` synced the directory after writing a table.
        inner.wal_dir_synced_through.fetch_max(wals_before, std::sync::atomic::Ordering::AcqRel);
    }
    let mut edit = VersionEdit::default();
    let mut level_stats = LevelStats { count: 1, cpu_micros, ..LevelStats::default() };
    let written = meta.as_ref().map(|(m, _, _, _)| (m.number, m.num_entries, m.file_size));
    let mut flow = BlobFlow::default();
    if let Some((m, s, blobs, f)) = meta {
        level_stats.bytes_written = m.file_size;
        level_stats.bytes_written_blob = blobs.iter().map(|b| b.bytes).sum();
        level_stats.input_records = s.input_entries;
        level_stats.dropped_records = s.dropped;
        edit.last_sequence = Some(m.largest_seqno);
        edit.new_files.push((0, m));
        edit.blob_files_added = blobs;
        flow = f;
    }
    // The blob files written at commit that the flush adds count as its output, as those it
    // writes itself do.
    level_stats.bytes_written_blob += adopt_logs(inner, &logs, &flow, &mut edit)?;
    // Counted before the install, which may wake a waiter on the flush: the flush's work (the
    // table written) is done.
    if let Some(s) = cfd.stats.user_statistics() {
        // As RocksDB's (its I/O counters): the table's bytes and the blob files'.
        s.tick(Ticker::FlushWriteBytes, level_stats.bytes_written + level_stats.bytes_written_blob);
        s.record_time(Histogram::FlushTime, (start.elapsed().as_micros() as u64).max(1));
    }
    if let Some(seq) = mems.iter().filter_map(|m| m.largest_seqno()).max() {
        edit.last_sequence = Some(edit.last_sequence.map_or(seq, |s| s.max(seq)));
    }
    edit.column_family = cfd.id;
    edit.cf_log_number = Some(next_log);
    // WALs below this hold nothing of any family that is not in a table once this flush is
    // installed (other families may still need older ones than `next_log`).
    let keep_from = {
        let st = inner.state.lock();
        let after = st
            .cfs
            .get(&cfd.id)
            .and_then(|c| (c.imm.len() > mems.len() || !c.mem.is_empty()).then_some(next_log));
        super::cf::min_log_to_keep(&st.cfs, Some((cfd.id, after)))
    };
    // The DB's log number never goes back (another family's flush may have raised it).
    let keep_from = keep_from.max(inner.versions.lock().log_number());
    edit.log_number = Some(keep_from);
    // Every WAL the flushed memtable's writes are in is synced first (all below `next_log`,
    // not only those this edit drops): the table makes those writes durable, so the writes
    // of other families before them, in the same WALs, must be too, or power loss would keep
    // part of a batch (the family that flushed) and lose the rest. A DB of one family has no
    // such writes (as RocksDB, which syncs closed WALs only with several families): its
    // retired WALs below `next_log` hold only writes in this table or older ones, so they
    // are dropped unsynced once the edit is installed, and until then a power loss leaves
    // them as any unsynced WAL (recovery keeps a prefix). Unless the DB archives its WALs:
    // `get_updates_since` reads the archive, which must then hold every write a table made
    // durable (a power loss would otherwise leave a gap between the archive's last batch and
    // the DB's last sequence number).
    let unsynced_retired = inner.state.lock().cfs.len() == 1 && !inner.opts.archives_wals();
    let mem_entries: u64 = mems.iter().map(|m| m.num_entries()).sum();
    let mem_bytes: usize = mems.iter().map(|m| m.approximate_memory_usage()).sum();
    let memtables = mems.len();
    // The memtables this flush installed, counted as retired once its WALs are dealt with.
    let mut installed = 0;
    if !unsynced_retired {
        super::write::wal::sync_retired_wals(inner, Some(next_log.max(keep_from)))?;
    }
    // The WAL the edit names as the log number must be found at the next open.
    super::write::wal::sync_wal_dir_through(inner, next_log.0)?;
    {
        let mut versions = inner.versions.lock();
        if cfd.dropped.load(std::sync::atomic::Ordering::Acquire) {
            // Dropped meanwhile: the table is not the family's any more.
            drop(versions);
            let _ = inner.fs.remove(&table_path(table_dir, number));
            for l in &logs {
                l.discard();
            }
            return Ok(());
        }
        edit.log_number = edit.log_number.map(|n| n.max(versions.log_number()));
        crate::kill_point!("flush.install");
        let version = versions.log_and_apply(&mut edit, &cfd.layout())?;
        if let Some(n) = edit.log_number {
            super::obsolete::wals_obsolete_below(inner, n);
        }
        let mut st = inner.state.lock();
        if let (Some(cs), Some(version)) = (st.cfs.get_mut(&cfd.id), version) {
            installed = mems.len() as u64;
            for mem in &mems {
                let flushed = cs.imm.pop_front();
                debug_assert!(flushed.is_some_and(|(m, _)| Arc::ptr_eq(&m, mem)));
            }
            cs.memtables_flushed += mems.len() as u64;
            if written.is_some() {
                cs.l0_pace.on_l0_file(std::time::Instant::now());
            } else {
                cs.l0_pace.on_flush_without_table();
            }
            // This thread's references go before the super version without the memtables is
            // published and the state lock (which `flush()`'s waiters look under) is let go:
            // whoever sees them flushed sees their memory freed, unless a reader still holds
            // them.
            drop(logs);
            drop(mems);
            cfd.install_super_version(cs, version);
        }
    }
    if unsynced_retired {
        // Obsolete now: never replayed again.
        let installed = inner.versions.lock().log_number();
        super::write::wal::forget_retired_wals(inner, installed.min(next_log));
    }
    // The WALs this flush made obsolete go (or are archived) before its waiters wake, as
    // RocksDB's flush job purges before it signals: a `flush()` that returned left no WAL
    // behind that only held its memtables, and the blob files only those WALs referred to
    // are released by then.
    super::obsolete::delete_obsolete_wals(inner, edit.log_number.unwrap_or(keep_from));
    if installed > 0 {
        if let Some(cs) = inner.state.lock().cfs.get_mut(&cfd.id) {
            cs.memtables_retired += installed;
        }
    }
    // After the locks: waiters re-check their condition under the state lock, which the
    // install above and the count just made changed while holding it, so no wake-up is lost.
    inner.bg_cv.notify_all();
    level_stats.micros = start.elapsed().as_micros() as u64;
    // As RocksDB: a flush's bytes are its table's and its blob files'.
    cfd.stats.flush_bytes.fetch_add(
        level_stats.bytes_written + level_stats.bytes_written_blob,
        std::sync::atomic::Ordering::Relaxed,
    );
    cfd.stats.add_compaction(0, &level_stats);
    log_flush(inner, cfd, (memtables, mem_entries, mem_bytes), written, &level_stats);
    Ok(())
}

/// Finishes the blob files of the flushed memtables' values written at commit that the table
/// refers to (`flow`: its indexes by file; footer, sync) and adds them to `edit`, the records
/// it does not refer to counted as garbage; returns the bytes of their records (the flush's
/// blob output, as RocksDB counts a blob file's). The others are abandoned unfinished and
/// deleted once their memtables go.
fn adopt_logs(
    inner: &DbInner,
    logs: &[&super::blob_log::BlobLog],
    flow: &BlobFlow,
    edit: &mut VersionEdit,
) -> Result<u64> {
    let (mut adopted, mut written) = (false, 0);
    for log in logs {
        let Some(&(records, bytes)) = flow.by_file.get(&log.number()) else {
            log.abandon();
            continue;
        };
        let a = log.finish()?;
        inner.blobs.evict(a.number);
        let (g_records, g_bytes) =
            (a.records.saturating_sub(records), a.bytes.saturating_sub(bytes));
        if g_records > 0 || g_bytes > 0 {
            edit.blob_garbage.push(crate::version::edit::BlobGarbage {
                number: a.number,
                records: g_records,
                bytes: g_bytes,
            });
        }
        edit.blob_files_added.push(a);
        written += a.bytes;
        adopted = true;
    }
    if adopted {
        crate::kill_point!("blob.sync_dir");
        inner.fs.sync_dir(&inner.dir)?;
    }
    Ok(written)
}

/// The info LOG's account of one flush: a readable line and an `EVENT_LOG_v1` record.
fn log_flush(
    inner: &DbInner,
    cfd: &Cfd,
    (memtables, mem_entries, mem_bytes): (usize, u64, usize),
    written: Option<(FileNumber, u64, u64)>,
    s: &LevelStats,
) {
    let secs = s.micros as f64 / 1e6;
    let (table, entries, bytes) = written.unwrap_or((FileNumber(0), 0, 0));
    inner.info_log.log(&format!(
        "[{}] Flush: {} of {} entries ({} bytes) -> {}: {entries} entries, {bytes} \
         bytes, {} dropped, {secs:.3} s",
        cfd.name,
        if memtables == 1 { "memtable".to_string() } else { format!("{memtables} memtables") },
        mem_entries,
        mem_bytes,
        if written.is_some() { format!("table #{}", table.0) } else { "no table".into() },
        s.dropped_records,
    ));
    inner.info_log.log(&format!(
        "EVENT_LOG_v1 {{\"time_micros\": {}, \"event\": \"flush_finished\", \"cf_name\": \
         \"{}\", \"table\": {}, \"num_entries\": {entries}, \"file_size\": {bytes}, \
         \"micros\": {}}}",
        super::info_log::now_micros(),
        cfd.name,
        table.0,
        s.micros
    ));
}

/// Makes family `cfd`'s active memtable immutable (if it holds anything) and waits until it
/// and every older immutable memtable of the family are flushed.
pub(crate) fn flush_and_wait(inner: &DbInner, cfd: &Arc<Cfd>) -> Result<()> {
    flush_families(inner, std::slice::from_ref(cfd), true)
}

/// Asks the flush thread to write every memtable family `cfd` has switched so far without
/// waiting for more to merge with (`CfState::request_flush`: a flush someone waits on, or
/// one that frees memory), and wakes it; returns the family's count of switched memtables
/// (`None` once the family is dropped).
pub(crate) fn request_flush(inner: &DbInner, cfd: &Cfd) -> Option<u64> {
    let switched = inner.state.lock().cfs.get_mut(&cfd.id).map(|c| {
        c.request_flush();
        c.memtables_switched
    });
    inner.bg_cv.notify_all();
    switched
}

/// Makes the active memtables of `cfds` immutable at one point of the write order (under
/// the WAL lock, so a batch written to several of them is cut in all or in none), and with
/// `wait` waits until those and every older immutable memtable of theirs are flushed;
/// without, returns once the flushes are scheduled.
pub(crate) fn flush_families(inner: &DbInner, cfds: &[Arc<Cfd>], wait: bool) -> Result<()> {
    let targets: Vec<(u32, u64)> = {
        let mut wal = inner.wal.lock();
        if let Some(e) = inner.bg_error() {
            return Err(e);
        }
        let mut t = Vec::with_capacity(cfds.len());
        for cfd in cfds {
            if wal.mems.get(cfd.id).is_some_and(|f| !f.mem.is_empty()) {
                switch_memtable(inner, &mut wal, cfd)?;
            }
            t.push((cfd.id, request_flush(inner, cfd).unwrap_or(0)));
        }
        t
    };
    if !wait {
        return Ok(());
    }
    for (id, target) in targets {
        wait_flushed(inner, id, target)?;
    }
    Ok(())
}

/// Waits until family `id` has flushed `target` memtables and retired the WALs they made
/// obsolete (or is gone).
fn wait_flushed(inner: &DbInner, id: u32, target: u64) -> Result<()> {
    let mut st = inner.state.lock();
    while st.cfs.get(&id).is_some_and(|c| c.memtables_retired < target) {
        if let Some(e) = &st.bg_error {
            return Err(Error::Background(e.to_string()));
        }
        if st.shutting_down {
            return Err(Error::ShutdownInProgress);
        }
        inner.bg_cv.wait(&mut st);
    }
    Ok(())
}
