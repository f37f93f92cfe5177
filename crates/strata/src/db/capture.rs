//! A point-in-time capture of every family's tables, for checkpoints and backups
//! (`utilities/checkpoint.rs`, `utilities/backup.rs`; the protocol and its cost are in
//! `docs/checkpoint_backup.md`).

use super::write::drain_pipeline;
use super::write::switch::switch_memtable;
use super::Db;
use crate::error::{Error, Result};
use crate::types::FileNumber;
use crate::version::set::{Counters, FamilySnapshot};

/// A WAL a capture needs, and the bytes of it that belong to the capture.
pub(crate) struct WalPart {
    pub number: FileNumber,
    pub path: std::path::PathBuf,
    pub len: u64,
}

/// With writes held, makes every family's memtable immutable, waits until all of them are
/// flushed, and takes the families' current versions and the counters together (the versions
/// hold their tables alive). The counters' last sequence is the one the writes were held at,
/// so the capture holds exactly the writes up to it in every family.
pub(crate) fn capture(db: &Db) -> Result<(Vec<FamilySnapshot>, Counters)> {
    let inner = &db.inner;
    // Holding the WAL lock holds every writer (and ingestion, and family creation or drop)
    // until the capture is taken. The flushes it waits for do not take that lock.
    let mut wal = inner.wal.lock();
    if let Some(e) = inner.bg_error() {
        return Err(e);
    }
    drain_pipeline(inner);
    let sequence = wal.last_sequence;
    let mut targets = Vec::new();
    for cfd in inner.families() {
        if wal.mems.get(cfd.id).is_some_and(|f| !f.mem.is_empty()) {
            switch_memtable(inner, &mut wal, &cfd)?;
        }
        if let Some(switched) = super::flush::request_flush(inner, &cfd) {
            targets.push((cfd.id, switched));
        }
    }
    {
        let mut st = inner.state.lock();
        while targets.iter().any(|(id, t)| st.cfs.get(id).is_some_and(|c| c.memtables_retired < *t))
        {
            if let Some(e) = &st.bg_error {
                return Err(Error::Background(e.to_string()));
            }
            if st.shutting_down {
                return Err(Error::ShutdownInProgress);
            }
            inner.bg_cv.wait(&mut st);
        }
    }
    let versions = inner.versions.lock();
    let mut families = versions.snapshot();
    for f in &mut families {
        // Everything is in tables: the copy needs no WAL.
        f.log_number = FileNumber(0);
    }
    let counters = Counters { last_sequence: sequence, ..versions.counters() };
    drop(versions);
    drop(wal);
    Ok((families, counters))
}

/// What [`capture_with_wals`] took: the versions, the counters, the WAL prefixes, and the
/// hold on file deletions that keeps those WALs (and tables) there until it is dropped.
pub(crate) struct WalCapture<'a> {
    pub families: Vec<FamilySnapshot>,
    pub counters: Counters,
    pub wals: Vec<WalPart>,
    /// Some memtable's values written at commit are in a blob file still being written
    /// (`db/blob_log.rs`), which the WAL prefixes refer to.
    pub blob_logs_live: bool,
    _held: DeletionsHeld<'a>,
}

/// File deletions held off (`Db::disable_file_deletions`) for as long as this lives.
struct DeletionsHeld<'a>(&'a Db);

impl Drop for DeletionsHeld<'_> {
    fn drop(&mut self) {
        // Only counts down and purges what became obsolete; it cannot fail.
        let _ = self.0.enable_file_deletions();
    }
}

/// With writes held, takes the families' current versions (with their log numbers), the
/// counters, and the current WAL's length at that moment (its appended bytes handed to the OS
/// first), and holds file deletions; then, writes flowing again, lists the older WALs a
/// memtable still needs (no writer appends to them, and none is deleted while held). The
/// versions' tables plus those WAL prefixes are exactly the writes up to the counters' last
/// sequence. Nothing is flushed.
pub(crate) fn capture_with_wals(db: &Db) -> Result<WalCapture<'_>> {
    let inner = &db.inner;
    let mut wal = inner.wal.lock();
    if let Some(e) = inner.bg_error() {
        return Err(e);
    }
    drain_pipeline(inner);
    wal.writer.flush()?;
    let current = (wal.number, wal.writer.file_size());
    let sequence = wal.last_sequence;
    let blob_logs_live = !inner.blob_logs.is_empty();
    // Held before the versions are read: a flush installing a newer log number after that
    // read finds the hold when it goes to delete the WALs below it.
    db.disable_file_deletions()?;
    let held = DeletionsHeld(db);
    let versions = inner.versions.lock();
    let families = versions.snapshot();
    let counters = Counters { last_sequence: sequence, ..versions.counters() };
    drop(versions);
    drop(wal);
    let oldest = families.iter().map(|f| f.log_number).min().unwrap_or(current.0);
    let mut wals = Vec::new();
    for (&number, path) in super::files::find_wals(inner.fs.as_ref(), &inner.dir, &inner.wal_dir)?
        .range(oldest..=current.0)
    {
        let len = if number == current.0 { current.1 } else { inner.fs.file_size(path)? };
        wals.push(WalPart { number, path: path.clone(), len });
    }
    Ok(WalCapture { families, counters, wals, blob_logs_live, _held: held })
}
