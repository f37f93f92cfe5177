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
        let st = inner.state.lock();
        if let Some(c) = st.cfs.get(&cfd.id) {
            targets.push((cfd.id, c.memtables_switched));
        }
    }
    {
        let mut st = inner.state.lock();
        while targets.iter().any(|(id, t)| st.cfs.get(id).is_some_and(|c| c.memtables_flushed < *t))
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

/// With writes held, takes the families' current versions (with their log numbers), the
/// counters, and the WALs holding what the memtables hold, each with its length at that
/// moment (the current WAL's appended bytes are handed to the OS first): the versions' tables
/// plus those WAL prefixes are exactly the writes up to the counters' last sequence. Nothing
/// is flushed. File deletions stay disabled when this returns `Ok`, so the WALs (and tables)
/// are still there to copy: the caller must call `Db::enable_file_deletions` once done.
pub(crate) fn capture_with_wals(db: &Db) -> Result<(Vec<FamilySnapshot>, Counters, Vec<WalPart>)> {
    let inner = &db.inner;
    let mut wal = inner.wal.lock();
    if let Some(e) = inner.bg_error() {
        return Err(e);
    }
    drain_pipeline(inner);
    wal.writer.flush()?;
    let current = (wal.number, wal.writer.file_size());
    let sequence = wal.last_sequence;
    let versions = inner.versions.lock();
    let families = versions.snapshot();
    let counters = Counters { last_sequence: sequence, ..versions.counters() };
    drop(versions);
    let oldest = families.iter().map(|f| f.log_number).min().unwrap_or(current.0);
    let mut parts = Vec::new();
    for (&number, path) in super::files::find_wals(inner.fs.as_ref(), &inner.dir, &inner.wal_dir)?
        .range(oldest..=current.0)
    {
        let len = if number == current.0 { current.1 } else { inner.fs.file_size(path)? };
        parts.push(WalPart { number, path: path.clone(), len });
    }
    inner.file_deletions_disabled.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
    drop(wal);
    Ok((families, counters, parts))
}
