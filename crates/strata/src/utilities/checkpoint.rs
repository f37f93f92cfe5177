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
//!    (or copy it, when linking fails, e.g. across filesystems), then write a MANIFEST naming
//!    exactly those tables with no WAL needed (log number 0), then CURRENT, syncing files and
//!    the directory; the source's IDENTITY is copied, so the checkpoint keeps its id;
//! 4. rename the temporary directory to `dir` and sync its parent.
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

use crate::db::capture::capture;
use crate::db::Db;
use crate::env::{copy_file, parent_dir, FileSystem};
use crate::error::{Error, Result};
use crate::filename::{identity_path, table_path};
use crate::types::FileNumber;
use crate::version::set::{write_manifest_for, Counters};

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
        create(db, dir.as_ref())
    }
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

fn create(db: &Db, dir: &Path) -> Result<Checkpoint> {
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
    let (families, counters) = capture(db)?;
    let parent = parent_dir(dir);
    fs.create_dir_all(&tmp)?;
    fs.sync_dir(&parent)?;
    let (mut tables_linked, mut tables_copied) = (0, 0);
    for n in families.iter().flat_map(|f| f.version.file_numbers()) {
        let (src, dst) = (table_path(db.path(), n), table_path(&tmp, n));
        if fs.link(&src, &dst).is_ok() {
            tables_linked += 1;
        } else {
            copy_file(fs, &src, &dst)?;
            tables_copied += 1;
        }
        crate::kill_point!("checkpoint.table");
    }
    // The checkpoint is the same DB: it keeps the source's id.
    let identity = identity_path(db.path());
    if fs.exists(&identity) {
        copy_file(fs, &identity, &identity_path(&tmp))?;
    }
    fs.sync_dir(&tmp)?;
    let manifest = FileNumber(counters.next_file.0);
    let counters = Counters {
        log_number: FileNumber(0),
        next_file: FileNumber(manifest.0 + 1),
        last_sequence: counters.last_sequence,
        max_column_family: counters.max_column_family,
    };
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
