//! Checkpoints: a consistent copy of an open DB, usable as a DB of its own.
//!
//! Protocol (`Checkpoint::create`):
//! 1. hold writes (the WAL lock) at sequence number S, make every family's memtable immutable
//!    and wait until they are all flushed: every family's tables then hold exactly its writes
//!    up to S (memtables are flushed oldest first, each holding a contiguous run of sequence
//!    numbers), so a batch written to several families is in all of them or in none;
//! 2. under the MANIFEST lock, still holding writes, take every family's current version and
//!    the counters, with S as the last sequence number; holding the versions keeps their
//!    tables from deletion. Then writes resume.
//! 3. in a temporary directory `<dir>.checkpoint-tmp` beside the target, hard-link each table
//!    from its table directory (or copy it, when linking fails, e.g. across filesystems),
//!    then write a MANIFEST naming exactly those tables with no WAL needed (log number 0),
//!    then CURRENT, syncing files and the directory; the source's IDENTITY is copied, so the
//!    checkpoint keeps its id, and its newest OPTIONS file (`db/options_file.rs`). A checkpoint is one directory: its MANIFEST puts every table
//!    at table path 0, so it opens with default options whatever `db_paths` and `cf_paths`
//!    the source has (RocksDB refuses to checkpoint a DB whose tables are in several
//!    directories);
//! 4. rename the temporary directory to `dir` and sync its parent.
//!
//! `create_with_log_size` with a WAL budget skips the flush of step 1: with writes held, it
//! takes the versions with their log numbers and, for every WAL a memtable still needs, its
//! length at that moment (the current WAL's appended bytes handed to the OS first), and holds
//! file deletions; step 3 then copies those WAL prefixes beside the tables, and the MANIFEST
//! keeps the families' log numbers, so the checkpoint's first open replays exactly the writes
//! up to S. Writers are held only for the capture, not for the copies.
//!
//! Invariant: a directory at `dir` is a complete checkpoint. A crash before step 4 leaves
//! only the temporary directory (removed by the next `create` to the same target), and it
//! does not open as a DB before its CURRENT exists, which is written last. The source DB is
//! only read (besides the flush).
//!
//! Cost: writes (and ingestion, and family creation or drop) wait from step 1 to the end of
//! step 2, that is for the flush of every family's memtable and of any immutable memtable
//! already waiting; the copying of step 3 runs with writes flowing. RocksDB instead copies
//! the live WALs up to S, which stalls no writer; a flush with writes held was chosen here so
//! that a checkpoint or backup is tables and a MANIFEST alone (no WAL to replay at open).

use std::path::{Path, PathBuf};

use crate::db::capture::{capture, capture_with_wals, WalPart};
use crate::db::Db;
use crate::env::{copy_file, parent_dir, FileSystem};
use crate::error::{Error, Result};
use crate::filename::{blob_path, identity_path, table_path, wal_path};
use crate::types::FileNumber;
use crate::version::set::{write_manifest_for, Counters, FamilySnapshot};

/// A checkpoint made by [`Checkpoint::create`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    /// The checkpoint's directory.
    pub path: PathBuf,
    /// The sequence number it is at: it holds every write of the source DB up to this one
    /// and none after.
    pub sequence: u64,
    /// Tables hard-linked to the source's.
    pub tables_linked: usize,
    /// Tables copied (linking failed).
    pub tables_copied: usize,
}

impl Checkpoint {
    /// Makes a checkpoint of `db` in `dir`, which must not exist (its parent is created).
    /// Flushes the memtables first. Fails with `NotSupported` on a read-only `Db`.
    pub fn create(db: &Db, dir: impl AsRef<Path>) -> Result<Checkpoint> {
        create(db, dir.as_ref(), Mode::Flush { empty_wal: false })
    }

    /// RocksDB's `CreateCheckpoint(dir, log_size_for_flush)`: with `log_size_for_flush` 0, or
    /// when the WALs holding unflushed writes total at least that many bytes, as
    /// [`Checkpoint::create`] plus an empty WAL file (RocksDB's layout: the checkpoint's live
    /// WAL); otherwise nothing is flushed and the checkpoint gets those WALs, copied up to
    /// the moment of the capture, which its first open replays (module docs).
    pub fn create_with_log_size(
        db: &Db,
        dir: impl AsRef<Path>,
        log_size_for_flush: u64,
    ) -> Result<Checkpoint> {
        let mode = if log_size_for_flush == 0 {
            Mode::Flush { empty_wal: true }
        } else {
            Mode::CopyWalsBelow(log_size_for_flush)
        };
        create(db, dir.as_ref(), mode)
    }
}

/// How a checkpoint gets the memtables' writes.
#[derive(Clone, Copy)]
enum Mode {
    /// Flushed into tables; with `empty_wal`, an empty WAL file is added.
    Flush { empty_wal: bool },
    /// The WALs holding them are copied, if they total fewer bytes than this (else `Flush`).
    CopyWalsBelow(u64),
}

/// The directory a checkpoint is built in before it is renamed to `dir`.
fn temp_dir_for(dir: &Path) -> Result<PathBuf> {
    let name = dir.file_name().and_then(|n| n.to_str()).ok_or_else(|| {
        Error::InvalidArgument(format!("checkpoint: {} has no directory name", dir.display()))
    })?;
    Ok(parent_dir(dir).join(format!("{name}.checkpoint-tmp")))
}

/// Removes a temporary directory left by an interrupted checkpoint or restore (its files and
/// then the directory itself).
pub(crate) fn remove_leftover_dir(fs: &dyn FileSystem, dir: &Path) -> Result<()> {
    if !fs.exists(dir) {
        return Ok(());
    }
    for name in fs.list(dir)? {
        fs.remove(&dir.join(name))?;
    }
    fs.remove_dir(dir)
}

fn create(db: &Db, dir: &Path, mode: Mode) -> Result<Checkpoint> {
    if db.is_read_only() {
        return Err(Error::NotSupported(format!(
            "checkpoint: {} is open read-only; open it read-write to make a checkpoint",
            db.path().display()
        )));
    }
    let fs = db.file_system();
    if fs.exists(dir) {
        return Err(Error::InvalidArgument(format!(
            "checkpoint: {} already exists",
            dir.display()
        )));
    }
    let tmp = temp_dir_for(dir)?;
    remove_leftover_dir(fs, &tmp)?;
    let empty_wal = match mode {
        Mode::Flush { empty_wal } => empty_wal,
        Mode::CopyWalsBelow(limit) => {
            // The capture holds file deletions off until it is dropped, after the copies.
            let c = capture_with_wals(db)?;
            // WALs holding values written at commit refer to blob files still being written
            // (`db/blob_log.rs`): the memtables are flushed instead.
            if !c.blob_logs_live && c.wals.iter().map(|p| p.len).sum::<u64>() < limit {
                return write_checkpoint(
                    db,
                    dir,
                    &tmp,
                    &c.families,
                    &c.counters,
                    Some(&c.wals),
                    false,
                );
            }
            true
        }
    };
    let (families, counters) = capture(db)?;
    write_checkpoint(db, dir, &tmp, &families, &counters, None, empty_wal)
}

/// Steps 3 and 4 of the protocol (module docs) for a capture; `wals` are copied up to their
/// captured lengths, or with `empty_wal` an empty WAL file is added.
fn write_checkpoint(
    db: &Db,
    dir: &Path,
    tmp: &Path,
    families: &[FamilySnapshot],
    counters: &Counters,
    wals: Option<&[WalPart]>,
    empty_wal: bool,
) -> Result<Checkpoint> {
    let fs = db.file_system();
    let tmp = tmp.to_path_buf();
    let parent = parent_dir(dir);
    fs.create_dir_all(&tmp)?;
    fs.sync_dir(&parent)?;
    let (mut tables_linked, mut tables_copied) = (0, 0);
    for f in families.iter().flat_map(|f| f.version.files().map(|(_, t)| t)) {
        let (src, dst) = (f.path_in(db.path()), table_path(&tmp, f.number));
        if fs.link(&src, &dst).is_ok() {
            tables_linked += 1;
        } else {
            copy_file(fs, &src, &dst)?;
            tables_copied += 1;
        }
        crate::kill_point!("checkpoint.table");
    }
    // Blob files, as tables: linked where the file system can, else copied.
    for n in families.iter().flat_map(|f| f.version.blobs().numbers()) {
        let (src, dst) = (blob_path(db.path(), n), blob_path(&tmp, n));
        if fs.link(&src, &dst).is_ok() {
            tables_linked += 1;
        } else {
            copy_file(fs, &src, &dst)?;
            tables_copied += 1;
        }
    }
    // The checkpoint is the same DB: it keeps the source's id.
    let identity = identity_path(db.path());
    if fs.exists(&identity) {
        copy_file(fs, &identity, &identity_path(&tmp))?;
    }
    let mut next = counters.next_file.0;
    // The options the source was last opened or changed with, for `Options::load_latest`.
    if let Some((n, src)) = crate::db::options_file::newest(fs, db.path())? {
        copy_file(fs, &src, &tmp.join(crate::filename::options_file_name(n)))?;
        next = next.max(n.0 + 1);
    }
    let log_number = match wals {
        Some(parts) => {
            for p in parts {
                copy_prefix(fs, &p.path, &wal_path(&tmp, p.number), p.len)?;
                next = next.max(p.number.0 + 1);
            }
            counters.log_number
        }
        None => {
            if empty_wal {
                let n = FileNumber(next);
                next += 1;
                fs.create(&wal_path(&tmp, n))?.sync()?;
            }
            FileNumber(0)
        }
    };
    fs.sync_dir(&tmp)?;
    let manifest = FileNumber(next);
    let counters = Counters {
        log_number,
        next_file: FileNumber(manifest.0 + 1),
        last_sequence: counters.last_sequence,
        max_column_family: counters.max_column_family,
    };
    let families =
        families.iter().map(FamilySnapshot::in_one_directory).collect::<Result<Vec<_>>>()?;
    crate::kill_point!("checkpoint.manifest");
    write_manifest_for(fs, &tmp, manifest, &families, &counters)?;
    crate::kill_point!("checkpoint.rename");
    fs.rename(&tmp, dir)?;
    fs.sync_dir(&parent)?;
    Ok(Checkpoint {
        path: dir.to_path_buf(),
        sequence: counters.last_sequence.0,
        tables_linked,
        tables_copied,
    })
}

/// Copies the first `len` bytes of `from` to a new file `to`, synced (the part of a WAL that
/// belongs to a capture: the writer may have appended more since).
fn copy_prefix(fs: &dyn FileSystem, from: &Path, to: &Path, len: u64) -> Result<()> {
    const CHUNK: u64 = 1 << 20;
    let src = fs.open(from)?;
    let mut dst = fs.create(to)?;
    let mut at = 0;
    while at < len {
        let n = CHUNK.min(len - at);
        dst.append(&src.read_exact_at(at, n as usize)?)?;
        at += n;
    }
    dst.sync()
}
