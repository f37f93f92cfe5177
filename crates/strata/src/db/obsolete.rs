//! Deleting files the DB no longer needs, in one place for the three moments it happens: at
//! open (anything the recovered state does not keep, in the DB directory and in every table
//! path of the families opened, `db/paths.rs`), after a flush (WALs whose writes are now in a
//! table) and after a compaction (input tables no live version references, each in its own
//! directory).
//!
//! An obsolete WAL is archived instead of deleted when the options keep an archive
//! (`db/wal_archive.rs`).
//!
//! Invariant: a file is deleted only once the MANIFEST edit that makes it unnecessary is
//! synced (the callers delete after `log_and_apply`), and only if it is one of the engine's
//! own names (`filename::parse_file_name`). A failed deletion is never an error: a leftover
//! file is found and deleted by the next open.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};

use super::wal_archive::{purge_archive, retire_wal};
use super::wal_blob_refs::WalBlobRefs;
use super::DbInner;
use crate::env::FileSystem;
use crate::filename::{
    blob_path, manifest_name, options_temp_path, table_path, temp_path, wal_path, FileKind,
};
use crate::types::FileNumber;

/// What the current state keeps.
pub(crate) struct Keep {
    /// WALs numbered below this hold nothing that is not in a table.
    pub oldest_wal: FileNumber,
    /// The MANIFEST CURRENT names.
    pub manifest: FileNumber,
    /// Tables and blob files some live version references.
    pub live_tables: HashSet<FileNumber>,
    /// Obsolete WALs to delete even when WALs are archived (`db/wal_archive.rs`).
    pub never_archive: BTreeSet<FileNumber>,
    /// The WAL this open made: every WAL found is older.
    pub new_wal: FileNumber,
}

/// The path of `kind` in `dir` if `keep` does not need it.
fn obsolete_path(dir: &Path, kind: FileKind, keep: &Keep) -> Option<PathBuf> {
    match kind {
        FileKind::Manifest(n) if n != keep.manifest => Some(dir.join(manifest_name(n))),
        FileKind::Temp(n) => Some(temp_path(dir, n)),
        FileKind::OptionsTemp(n) => Some(options_temp_path(dir, n)),
        FileKind::Table(n) if !keep.live_tables.contains(&n) => Some(table_path(dir, n)),
        FileKind::Blob(n) if !keep.live_tables.contains(&n) => Some(blob_path(dir, n)),
        _ => None,
    }
}

/// The DB's files an open found.
pub(crate) struct Found<'a> {
    /// Those of the DB directory (WALs included, wherever they are).
    pub kinds: &'a [FileKind],
    /// The WALs by number, with their paths.
    pub wal_files: &'a BTreeMap<FileNumber, PathBuf>,
    /// The tables of each table directory other than the DB directory.
    pub other_tables: &'a [(PathBuf, Vec<FileNumber>)],
}

/// At open, after the recovered state is installed: removes old WALs and MANIFESTs, temp
/// files and tables no version references (outputs of an interrupted flush or compaction),
/// in the DB directory and in the other table directories. Blob files no version references
/// stay while a WAL from before the open is kept, which may refer to them (values written
/// at commit): returned as held, and every blob file found as noted for those WALs
/// (`db/wal_blob_refs.rs`).
pub(crate) fn delete_obsolete_at_open(
    fs: &dyn FileSystem,
    opts: &crate::options::Options,
    dir: &Path,
    wal_dir: &Path,
    found: &Found<'_>,
    keep: &Keep,
) -> WalBlobRefs {
    for (&n, path) in found.wal_files.range(..keep.oldest_wal) {
        crate::kill_point!("open.delete");
        retire_wal(fs, opts, wal_dir, n, path, &keep.never_archive);
    }
    let archived = purge_archive(fs, opts, wal_dir);
    // A listing that fails keeps every WAL (any may be left).
    let oldest_live = super::files::find_wals(fs, dir, wal_dir)
        .map_or(FileNumber(0), |w| w.keys().next().copied().unwrap_or(keep.new_wal));
    let newest_before = FileNumber(keep.new_wal.0.saturating_sub(1));
    // Every archived WAL is from before the open.
    let kept_before = oldest_live <= newest_before || archived.is_some();
    let (mut blobs, mut held) = (Vec::new(), Vec::new());
    for &kind in found.kinds {
        if let FileKind::Blob(n) = kind {
            if keep.live_tables.contains(&n) {
                blobs.push(n);
            } else if kept_before {
                held.push(n);
                continue;
            }
        }
        if let Some(path) = obsolete_path(dir, kind, keep) {
            crate::kill_point!("open.delete");
            let _ = fs.remove(&path);
        }
    }
    for (d, tables) in found.other_tables {
        for &n in tables {
            if let Some(path) = obsolete_path(d, FileKind::Table(n), keep) {
                crate::kill_point!("open.delete");
                let _ = fs.remove(&path);
            }
        }
    }
    WalBlobRefs::at_open(&blobs, &held, newest_before, oldest_live, archived)
}

/// Whether `disable_file_deletions` holds deletions back.
pub(crate) fn deletions_disabled(inner: &DbInner) -> bool {
    inner.file_deletions_disabled.load(std::sync::atomic::Ordering::Acquire) > 0
}

/// After a flush installed `log_number`: removes the WALs below it, in the WAL directory and
/// (left by an earlier `wal_dir` setting) in the DB directory. With `recycle_log_file_num`,
/// WALs this process wrote are kept for reuse instead, up to that many. Then the blob files
/// held only for the WALs gone are deleted (`db/wal_blob_refs.rs`).
pub(crate) fn delete_obsolete_wals(inner: &DbInner, log_number: FileNumber) {
    if deletions_disabled(inner) {
        return; // the next flush's call deletes every WAL below its own log number
    }
    let Ok(wals) = super::files::find_wals(inner.fs.as_ref(), &inner.dir, &inner.wal_dir) else {
        return;
    };
    // The oldest WAL left where it was: the first one kept for reuse, else the first at or
    // above `log_number` (there is always one: the current WAL).
    let mut oldest_left = wals.range(log_number..).next().map_or(log_number, |(&n, _)| n);
    let recycle = inner.opts.recycle_log_file_num;
    {
        // Held across the deletions: a file is never deleted once listed for reuse, and one
        // taken for reuse is renamed under this lock (`write::switch::switch_memtable`), so a
        // stale listing's old name just fails to delete.
        let mut recycled = (recycle > 0).then(|| inner.recycled_wals.lock());
        for (&n, path) in wals.range(..log_number) {
            if let Some(r) = recycled.as_mut() {
                if n >= inner.first_own_wal && *path == wal_path(&inner.wal_dir, n) {
                    if !r.files.contains(&n) && n > r.high_water && r.files.len() < recycle {
                        r.files.push_back(n);
                        r.high_water = n;
                    }
                    if r.files.contains(&n) {
                        oldest_left = oldest_left.min(n);
                        continue;
                    }
                }
            }
            crate::kill_point!("obsolete.delete");
            retire_wal(
                inner.fs.as_ref(),
                &inner.opts,
                &inner.wal_dir,
                n,
                path,
                &inner.never_archive,
            );
        }
    }
    let archived = purge_archive(inner.fs.as_ref(), &inner.opts, &inner.wal_dir);
    let refs = &inner.blob_logs.wal_refs;
    refs.set_kept(oldest_left, archived);
    if refs.any_released() {
        purge_obsolete_tables(inner);
    }
}

/// A flush installed `log_number`: the WALs below it are deleted next
/// ([`delete_obsolete_wals`]) unless they are archived, kept for reuse or deletions are
/// disabled; the blob files only they refer to need not be held (`db/wal_blob_refs.rs`).
pub(crate) fn wals_obsolete_below(inner: &DbInner, log_number: FileNumber) {
    if !inner.opts.archives_wals()
        && inner.opts.recycle_log_file_num == 0
        && !deletions_disabled(inner)
    {
        inner.blob_logs.wal_refs.deleting_below(log_number);
    }
}

/// Deletes tables that were compacted away and blob files that left the versions, when no
/// live version references them; the others wait for the versions (iterators) holding them
/// to go. Returns how many it deleted.
pub(crate) fn purge_obsolete_tables(inner: &DbInner) -> usize {
    let _purging = inner.purging.lock();
    if deletions_disabled(inner) {
        return 0; // the candidates stay listed for the purge after `enable_file_deletions`
    }
    let mut candidates = std::mem::take(&mut inner.state.lock().obsolete_tables);
    let refs = &inner.blob_logs.wal_refs;
    let live = {
        let mut versions = inner.versions.lock();
        if candidates.is_empty() && !versions.holds_blob_files() && !refs.holds_any() {
            return 0;
        }
        let mut live = versions.live_files();
        // Blob files of values written at commit whose memtables someone still reads.
        live.extend(inner.blob_logs.pinned());
        for n in versions.obsolete_blobs(&live) {
            // Or that kept WALs refer to: held, and readable, until those go.
            if !refs.hold_if_needed(n) {
                inner.blobs.evict(n);
                candidates.push((n, blob_path(&inner.dir, n)));
            }
        }
        live
    };
    for n in refs.released() {
        inner.blobs.evict(n);
        candidates.push((n, blob_path(&inner.dir, n)));
    }
    if candidates.is_empty() {
        return 0;
    }
    let (keep, delete): (Vec<_>, Vec<_>) =
        candidates.into_iter().partition(|(n, _)| live.contains(n));
    let deleted = delete.len();
    for (n, path) in delete {
        if inner.opts.uncache_aggressiveness > 0 {
            inner.table_cache.uncache(n);
        }
        inner.table_cache.evict(n);
        crate::kill_point!("compaction.delete");
        let _ = inner.fs.remove(&path);
    }
    keep_for_later(inner, keep);
    deleted
}

/// Puts back obsolete files that a live version still holds, and wakes the compaction thread
/// so that it schedules its next look at them: it may have seen the list empty while a purge
/// had them out, and gone to sleep with no look scheduled, which left them on disk until the
/// next flush or compaction.
pub(crate) fn keep_for_later(inner: &DbInner, keep: Vec<(FileNumber, PathBuf)>) {
    if keep.is_empty() {
        return;
    }
    inner.state.lock().obsolete_tables.extend(keep);
    inner.bg_cv.notify_all();
}
