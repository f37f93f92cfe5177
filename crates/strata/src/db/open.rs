//! Opening a DB: lock, CURRENT -> MANIFEST, WAL replay, new WAL and MANIFEST, cleanup.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;

use parking_lot::{Condvar, Mutex, RwLock};

use super::filename::{current_path, lock_path, parse_file_name, table_path, wal_path, FileKind};
use super::flush::{write_level0_table, FlushEnv};
use super::write::insert_into_memtable;
use super::{DbInner, DbState, SuperVersion, WalState, WriteQueue};
use crate::cache::table_cache::TableCache;
use crate::cache::Cache;
use crate::error::{Error, Result};
use crate::memtable::MemTable;
use crate::options::Options;
use crate::types::{FileNumber, SeqNo};
use crate::version::edit::VersionEdit;
use crate::version::set::VersionSet;
use crate::wal::{
    decode_wal_header, encode_wal_header, replay_log, tail_is_interrupted_append, LogWriter,
    TailRule, WalRecoveryMode,
};
use crate::write_batch::WriteBatch;

pub(crate) fn open(opts: &Options, dir: &Path) -> Result<DbInner> {
    opts.validate()?;
    let opts = &opts.sanitized();
    let fs = opts.fs.clone();
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
    let lock = fs.lock(&lock_path(dir))?;
    let names = fs.list(dir)?;
    let kinds: Vec<FileKind> = names.iter().filter_map(|n| parse_file_name(n)).collect();

    let mut versions = if fs.exists(&current_path(dir)) {
        if opts.error_if_exists {
            return Err(Error::InvalidArgument(format!("{} already exists", dir.display())));
        }
        VersionSet::recover(fs.clone(), dir, opts.num_levels)?
    } else {
        if !opts.create_if_missing {
            return Err(Error::InvalidArgument(format!(
                "{} holds no DB and create_if_missing is false",
                dir.display()
            )));
        }
        // A MANIFEST without CURRENT, WAL or table is a creation that crashed before CURRENT
        // was installed (the first WAL is created after it): it holds no data, start afresh.
        if kinds.iter().any(|k| matches!(k, FileKind::Table(_) | FileKind::Wal(_))) {
            return Err(Error::corruption(
                current_path(dir),
                0,
                "CURRENT is missing but the directory holds DB files",
            ));
        }
        // Deleting a file the engine did not prove it created is never right: a MANIFEST
        // that is not exactly an interrupted creation's makes the open refuse.
        for k in &kinds {
            if let FileKind::Manifest(n) = *k {
                if !VersionSet::is_interrupted_creation(&fs, dir, n)? {
                    return Err(Error::corruption(
                        dir.join(super::filename::manifest_name(n)),
                        0,
                        "CURRENT is missing and this MANIFEST is not what an interrupted \
                         creation leaves; restore CURRENT (or move the file away) to open",
                    ));
                }
            }
        }
        let mut vs = VersionSet::new(fs.clone(), dir, opts.num_levels);
        vs.write_new_manifest()?;
        vs
    };

    for k in &kinds {
        match *k {
            FileKind::Wal(n) | FileKind::Table(n) | FileKind::Manifest(n) | FileKind::Temp(n) => {
                versions.mark_file_number_used(n);
            }
            FileKind::Current | FileKind::Lock => {}
        }
    }

    // Every table the MANIFEST names must exist.
    for (_, f) in versions.current().files() {
        let path = table_path(dir, f.number);
        if !kinds.contains(&FileKind::Table(f.number)) {
            return Err(Error::corruption(path, 0, "table named by the MANIFEST is missing"));
        }
    }

    let block_cache =
        (opts.block_cache_size > 0).then(|| Arc::new(Cache::new(opts.block_cache_size)));
    let table_capacity =
        if opts.max_open_files < 0 { usize::MAX } else { opts.max_open_files as usize };
    let table_cache = Arc::new(TableCache::new(
        fs.clone(),
        dir.to_path_buf(),
        table_capacity.max(1),
        block_cache,
    ));
    if opts.paranoid_checks {
        for (_, f) in versions.current().files() {
            table_cache.reader(f)?;
        }
    }

    let table_options = opts.table_options();
    let flush_env = FlushEnv {
        fs: fs.as_ref(),
        dir,
        table_options: &table_options,
        snapshots: &[],
        merge_operator: opts.merge_operator.as_deref(),
    };
    let mut edit = VersionEdit::default();
    let mut last_seq = versions.last_sequence();
    let mut wals: Vec<FileNumber> = kinds
        .iter()
        .filter_map(|k| match k {
            FileKind::Wal(n) if *n >= versions.log_number() => Some(*n),
            _ => None,
        })
        .collect();
    wals.sort();
    let mut mem = Arc::new(MemTable::new());
    // With `avoid_flush_during_recovery`: replayed memtables kept in memory, oldest first,
    // each with the WAL its first record came from (that WAL must outlive its flush).
    let mut recovered: Vec<(Arc<MemTable>, FileNumber)> = Vec::new();
    let mut mem_first_wal = FileNumber(0);
    let mut wal_damage_seen = false;
    let mut stop_at: Option<(FileNumber, u64)> = None;
    let log_number = versions.log_number();
    let mut previous_wal: Option<FileNumber> = None;
    for &n in &wals {
        let path = wal_path(dir, n);
        let file = fs.open(&path)?;
        if let Some((bad, offset)) = stop_at {
            // An earlier WAL ended in damage: a later WAL holding records means a hole.
            let outcome =
                replay_log(&file, WalRecoveryMode::SkipAnyCorruptedRecords, |_, _| Ok(()))?;
            if outcome.records > 1 {
                return Err(Error::corruption(
                    wal_path(dir, bad),
                    offset,
                    format!("WAL is damaged here but the later WAL {n} holds records"),
                ));
            }
            continue;
        }
        let mut is_header = true;
        let outcome = replay_log(&file, opts.wal_recovery_mode, |offset, record| {
            if is_header {
                is_header = false;
                // The WAL this one follows must be flushed or replayed just before it.
                let prev = decode_wal_header(record).map_err(|e| e.with_file(&path))?;
                if prev >= log_number && Some(prev) != previous_wal {
                    return Err(Error::corruption(
                        &path,
                        offset,
                        format!(
                            "WAL {prev} is missing: this WAL follows it and the MANIFEST's \
                             log number {log_number} says it still holds unflushed writes"
                        ),
                    ));
                }
                return Ok(());
            }
            let batch = WriteBatch::from_data(record.to_vec()).map_err(|e| match e {
                Error::Corruption { reason, .. } => {
                    Error::corruption(&path, offset, format!("bad write batch: {reason}"))
                }
                other => other,
            })?;
            let first = batch.sequence();
            if mem.is_empty() {
                mem_first_wal = n;
            }
            let count = insert_into_memtable(&mem, &batch, first)?;
            if count > 0 {
                last_seq = last_seq.max(SeqNo(first.0 + count - 1));
            }
            if mem.approximate_memory_usage() >= opts.write_buffer_size {
                let full = std::mem::replace(&mut mem, Arc::new(MemTable::new()));
                if opts.avoid_flush_during_recovery {
                    recovered.push((full, mem_first_wal));
                } else {
                    let number = versions.new_file_number();
                    if let Some((meta, _)) = write_level0_table(&flush_env, &full, number)? {
                        edit.new_files.push((0, meta));
                    }
                }
            }
            Ok(())
        })?;
        wal_damage_seen |= outcome.torn_tail || outcome.dropped_bytes > 0;
        previous_wal = Some(n);
        if outcome.torn_tail && opts.wal_recovery_mode != WalRecoveryMode::SkipAnyCorruptedRecords {
            // The MANIFEST's rule, for a log whose last records may be unsynced: a complete
            // record failing its checksum with bytes after it (a later write, or the marker
            // a clean close appends) is damage, not a torn write.
            if !tail_is_interrupted_append(
                &file,
                outcome.last_valid_end,
                TailRule::UnsyncedTailPossible,
            )? {
                return Err(Error::corruption(
                    &path,
                    outcome.last_valid_end,
                    "WAL record is damaged (complete but fails its checksum, and bytes follow \
                     it); open with wal_recovery_mode SkipAnyCorruptedRecords to salvage",
                ));
            }
            stop_at = Some((n, outcome.last_valid_end));
        }
    }
    if !mem.is_empty() {
        recovered.push((mem, mem_first_wal));
    }
    // Kept in memory, the replayed writes stay in their WALs until a background flush. A WAL
    // that ended in damage cannot be kept (a later WAL holding records behind it would read
    // as a hole at the next open), so then everything is written to tables as usual.
    let keep_in_memory = opts.avoid_flush_during_recovery && !wal_damage_seen;
    if !keep_in_memory {
        for (m, _) in recovered.drain(..) {
            let number = versions.new_file_number();
            if let Some((meta, _)) = write_level0_table(&flush_env, &m, number)? {
                edit.new_files.push((0, meta));
            }
        }
    }

    // A fresh WAL for new writes; once the MANIFEST says so, older WALs are obsolete.
    let new_log_number = versions.new_file_number();
    let mut log_writer = LogWriter::new(fs.create(&wal_path(dir, new_log_number))?);
    let last_wal = kinds
        .iter()
        .filter_map(|k| if let FileKind::Wal(n) = k { Some(*n) } else { None })
        .max()
        .unwrap_or(FileNumber(0));
    log_writer.add_record(&encode_wal_header(last_wal))?;
    log_writer.flush()?;
    let log_number = new_log_number;
    fs.sync_dir(dir)?;
    // WALs older than this hold nothing that is not in a table.
    let oldest_needed_wal = recovered.first().map_or(log_number, |(_, w)| *w);
    edit.log_number = Some(oldest_needed_wal);
    edit.last_sequence = Some(last_seq);
    crate::kill_point!("open.install");
    let version = versions.log_and_apply(&mut edit)?;

    // Remove what no longer belongs: old WALs and MANIFESTs, temp files, unreferenced tables.
    let live: std::collections::HashSet<FileNumber> = version.file_numbers().collect();
    for k in &kinds {
        let path = match *k {
            FileKind::Wal(n) if n < oldest_needed_wal => wal_path(dir, n),
            FileKind::Manifest(n) if n != versions.manifest_number() => {
                dir.join(super::filename::manifest_name(n))
            }
            FileKind::Temp(n) => super::filename::temp_path(dir, n),
            FileKind::Table(n) if !live.contains(&n) => table_path(dir, n),
            _ => continue,
        };
        crate::kill_point!("open.delete");
        let _ = fs.remove(&path);
    }

    let mem = Arc::new(MemTable::new());
    let state = DbState {
        mem: mem.clone(),
        mem_log: log_number,
        imm: recovered.iter().cloned().collect(),
        bg_error: None,
        shutting_down: false,
        memtables_switched: recovered.len() as u64,
        memtables_flushed: 0,
        compacting: std::collections::HashSet::new(),
        running_compactions: 0,
        manual_compactions: 0,
        obsolete_tables: Vec::new(),
    };
    let pending_compaction_bytes = crate::compaction::picker::estimated_pending_compaction_bytes(
        &version,
        &opts.picker_options(),
    );
    let sv = SuperVersion {
        mem: mem.clone(),
        imm: recovered.iter().rev().map(|(m, _)| m.clone()).collect(),
        version,
        pending_compaction_bytes,
        version_range_dels: std::sync::OnceLock::new(),
    };
    let next_file = versions.file_counter();
    Ok(DbInner {
        opts: opts.clone(),
        table_options,
        dir: dir.to_path_buf(),
        fs,
        state: Mutex::new(state),
        bg_cv: Condvar::new(),
        versions: Mutex::new(versions),
        next_file,
        wal: Mutex::new(WalState {
            writer: log_writer,
            number: log_number,
            mem,
            last_sequence: last_seq,
            delay_debt_micros: 0.0,
        }),
        queue: Mutex::new(WriteQueue::default()),
        queue_cv: Condvar::new(),
        super_version: RwLock::new(Arc::new(sv)),
        visible_sequence: AtomicU64::new(last_seq.0),
        has_bg_error: AtomicBool::new(false),
        closing: AtomicBool::new(false),
        write_stopped: AtomicBool::new(false),
        write_delayed: AtomicBool::new(false),
        table_cache,
        snapshots: Arc::default(),
        stats: crate::stats::Stats::new(opts.num_levels),
        _lock: lock,
    })
}
