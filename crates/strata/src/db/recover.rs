//! Recovery at open: CURRENT -> MANIFEST -> version set, then WAL replay.
//!
//! **The MANIFEST.** CURRENT names the MANIFEST; its records are replayed into the version
//! set (`version::set`). Without CURRENT, a directory holding tables or WALs is refused, and a
//! lone MANIFEST is deleted only when its bytes are exactly what an interrupted creation writes
//! (`VersionSet::is_interrupted_creation`); anything else makes the open refuse, naming the
//! file. Every table the MANIFEST names must exist.
//!
//! **The WAL header chain.** Every WAL at or after the MANIFEST's log number is replayed in
//! number order. Each WAL's first record names the WAL that was active before it; a WAL whose
//! predecessor is at or after the log number must follow that predecessor directly, else a WAL
//! holding unflushed writes is missing and the open fails with `Corruption`.
//!
//! **Damage rules** (`docs/format/wal.md`):
//! - a torn tail (a record cut short, or zeros to the end) ends the replay in the default
//!   modes; a complete record that fails its checksum with bytes after it is damage, not a
//!   torn write (the tail rule shared with the MANIFEST, `wal/tail.rs`), and fails the open;
//! - once a WAL ended in damage, a later WAL holding records means a hole: `Corruption`;
//! - `SkipAnyCorruptedRecords` salvages every intact record; `AbsoluteConsistency` refuses any
//!   damage.
//!
//! **Where replayed writes go.** Memtables filled by the replay are written as L0 tables,
//! unless `avoid_flush_during_recovery` keeps them in memory (their WALs stay until a
//! background flush); a WAL that ended in damage forces the tables, since keeping it would
//! leave a hole behind the next WAL.

use std::path::Path;
use std::sync::Arc;

use super::flush::{write_level0_table, FlushEnv};
use super::write::insert_into_memtable;
use crate::env::FileSystem;
use crate::error::{Error, Result};
use crate::filename::{current_path, table_path, wal_path, FileKind};
use crate::memtable::MemTable;
use crate::options::Options;
use crate::sstable::TableOptions;
use crate::types::{FileNumber, SeqNo};
use crate::version::edit::VersionEdit;
use crate::version::set::VersionSet;
use crate::wal::{
    decode_wal_header, replay_log, tail_is_interrupted_append, TailRule, WalRecoveryMode,
};
use crate::write_batch::WriteBatch;

/// Reads (or, for a new DB, creates) the MANIFEST and checks that its tables exist. `kinds`
/// are the DB files found in `dir`.
pub(crate) fn recover_version_set(
    opts: &Options,
    fs: &Arc<dyn FileSystem>,
    dir: &Path,
    kinds: &[FileKind],
) -> Result<VersionSet> {
    let versions = if fs.exists(&current_path(dir)) {
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
        for k in kinds {
            if let FileKind::Manifest(n) = *k {
                if !VersionSet::is_interrupted_creation(fs, dir, n)? {
                    return Err(Error::corruption(
                        dir.join(crate::filename::manifest_name(n)),
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

    for k in kinds {
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

    Ok(versions)
}

/// What the WAL replay produced.
pub(crate) struct Replayed {
    /// Tables written from replayed memtables (L0), and the last sequence number seen.
    pub edit: VersionEdit,
    pub last_seq: SeqNo,
    /// With `avoid_flush_during_recovery`: memtables kept in memory, oldest first, each with
    /// the WAL its first record came from (that WAL must outlive its flush).
    pub recovered: Vec<(Arc<MemTable>, FileNumber)>,
}

/// Replays the WALs at or after the MANIFEST's log number (see the module documentation).
pub(crate) fn replay_wals(
    opts: &Options,
    fs: &Arc<dyn FileSystem>,
    dir: &Path,
    kinds: &[FileKind],
    versions: &VersionSet,
    table_options: &TableOptions,
) -> Result<Replayed> {
    let flush_env = FlushEnv {
        fs: fs.as_ref(),
        dir,
        table_options,
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

    Ok(Replayed { edit, last_seq, recovered })
}
