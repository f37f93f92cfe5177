//! The DB's files: the WAL files of a directory pair (`find_wals`, for recovery, obsolete-file
//! deletion, repair and the inspector), and as seen from outside, the live file list
//! (`Db::live_files`), the approximate bytes of a key range (`Db::get_approximate_sizes`) and
//! the approximate entries and bytes of the memtables in one
//! (`Db::get_approximate_memtable_stats`).

use std::path::Path;

use super::DbInner;
use crate::env::FileSystem;
use crate::error::{Error, Result};
use crate::filename::{
    blob_file_name, manifest_name, parse_file_name, table_file_name, wal_path, FileKind,
};
use crate::key::{lookup_key, user_key};
use crate::types::{FileNumber, SeqNo};

/// CURRENT, the MANIFEST, the live tables and blob files, the blob files values written at
/// commit are in (which the WALs refer to), the newest OPTIONS file and the WALs at or after
/// the MANIFEST's log number, sorted by name; a table in a table path other than the DB
/// directory by its whole path.
pub(crate) fn live_files(inner: &DbInner) -> Vec<String> {
    let (manifest, log_number, families) = {
        let v = inner.versions.lock();
        (v.manifest_number(), v.log_number(), v.snapshot())
    };
    let mut names = vec!["CURRENT".to_string(), manifest_name(manifest)];
    let mut blobs = inner.blob_logs.pinned();
    for f in &families {
        names.extend(f.version.files().map(|(_, t)| match t.dir() {
            Some(d) if d != inner.dir => t.path_in(&inner.dir).display().to_string(),
            _ => table_file_name(t.number),
        }));
        blobs.extend(f.version.blobs().numbers());
    }
    blobs.sort_unstable();
    blobs.dedup();
    names.extend(blobs.into_iter().map(blob_file_name));
    // Left out when the directory fails to list, as a WAL is below.
    if let Ok(Some((n, _))) = super::options_file::newest(inner.fs.as_ref(), &inner.dir) {
        names.push(crate::filename::options_file_name(n));
    }
    // A WAL that fails to list is left out: callers copying files see the error on the copy.
    if let Ok(wals) = inner.fs.list(&inner.wal_dir) {
        names.extend(
            wals.into_iter().filter(
                |n| matches!(parse_file_name(n), Some(FileKind::Wal(w)) if w >= log_number),
            ),
        );
    }
    names.sort();
    names
}

/// About how many entries of family `cfd`'s memtables (the active one and the ones waiting
/// for their flush) lie between user keys `start` and `end` (exclusive), and their bytes
/// (`MemTable::approximate_stats`).
pub(crate) fn approximate_memtable_stats(cfd: &super::Cfd, start: &[u8], end: &[u8]) -> (u64, u64) {
    let sv = cfd.current_super_version();
    if !sv.version.order().lt(start, end) {
        return (0, 0);
    }
    let (lo, hi) = (lookup_key(start, SeqNo::MAX), lookup_key(end, SeqNo::MAX));
    std::iter::once(&sv.mem).chain(&sv.imm).fold((0, 0), |(count, bytes), m| {
        let (c, b) = m.approximate_stats(&lo, &hi);
        (count + c, bytes + b)
    })
}

/// The bytes of family `cfd`'s table data between user keys `start` and `end` (exclusive).
pub(crate) fn approximate_size(inner: &DbInner, cfd: &super::Cfd, start: &[u8], end: &[u8]) -> u64 {
    let sv = cfd.current_super_version();
    let o = sv.version.order();
    if !o.lt(start, end) {
        return 0;
    }
    let (lo, hi) = (lookup_key(start, SeqNo::MAX), lookup_key(end, SeqNo::MAX));
    let mut total = 0u64;
    for (_, f) in sv.version.files() {
        let (smallest, largest) = (user_key(&f.smallest), user_key(&f.largest));
        if o.lt(largest, start) || !o.lt(smallest, end) {
            continue;
        }
        let t = match inner.table_cache.reader(f.number, &f.pinned) {
            Ok(t) => t,
            Err(e) => {
                inner.info_log.log(&format!(
                    "approximate size: table {} counted whole, its index is unreadable: {e}",
                    f.number
                ));
                total += f.file_size;
                continue;
            }
        };
        let from = if o.le(start, smallest) { 0 } else { t.approximate_offset_of(&lo) };
        let to = if o.lt(largest, end) { f.file_size } else { t.approximate_offset_of(&hi) };
        total += to.saturating_sub(from);
    }
    total
}

/// The WAL files of a DB: those in the DB directory and, when `wal_dir` differs, those in it,
/// by number. The same number in both places is refused (which one holds the writes?).
pub(crate) fn find_wals(
    fs: &dyn FileSystem,
    dir: &Path,
    wal_dir: &Path,
) -> Result<std::collections::BTreeMap<FileNumber, std::path::PathBuf>> {
    let mut wals = std::collections::BTreeMap::new();
    let dirs: &[&Path] = if wal_dir == dir { &[dir] } else { &[dir, wal_dir] };
    for &d in dirs {
        if d != dir && !fs.exists(d) {
            continue;
        }
        for name in fs.list(d)? {
            if let Some(FileKind::Wal(n)) = crate::filename::parse_file_name(&name) {
                let path = wal_path(d, n);
                if let Some(other) = wals.insert(n, path.clone()) {
                    return Err(Error::corruption(
                        path,
                        0,
                        format!(
                            "WAL {n} also exists as {}; remove the stale copy",
                            other.display()
                        ),
                    ));
                }
            }
        }
    }
    Ok(wals)
}
