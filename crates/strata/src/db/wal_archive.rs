//! WAL retention: the archive of WAL files whose writes are all in tables, RocksDB's
//! `WAL_ttl_seconds` and `WAL_size_limit_MB` (`Options::wal_ttl_seconds`,
//! `Options::wal_size_limit_mb`).
//!
//! With both zero (the default) an obsolete WAL is deleted. With either set it is renamed
//! into `<wal_dir>/archive/` under its own name, and after each archiving the archive is
//! purged: a file whose modification time is more than the TTL ago is deleted, then empty
//! files, then the oldest (lowest-numbered) files while the archive holds more than the size
//! limit. `Db::get_updates_since` reads archived and live WALs (`db/wal_updates.rs`);
//! recovery never looks in the archive.
//!
//! Contract: nothing here is an error. A WAL that fails to move stays in the WAL directory,
//! below the MANIFEST's log number, and is archived (or deleted) by the next open; a file
//! that fails to delete stays in the archive until a later purge. A WAL whose batches
//! recovery dropped as never synced (`db/recover.rs`) is deleted, never archived: its
//! sequence numbers were handed out again to later writes.

use std::collections::BTreeSet;
use std::ops::RangeInclusive;
use std::path::Path;
use std::time::SystemTime;

use crate::env::FileSystem;
use crate::filename::{archive_dir, parse_file_name, wal_path, FileKind};
use crate::options::Options;
use crate::types::FileNumber;

/// Disposes of the obsolete WAL `n` at `path`: archived when `opts` keeps an archive and `n`
/// is not in `never_archive`, else deleted. `wal_dir` is where the archive is.
pub(crate) fn retire_wal(
    fs: &dyn FileSystem,
    opts: &Options,
    wal_dir: &Path,
    n: FileNumber,
    path: &Path,
    never_archive: &BTreeSet<FileNumber>,
) {
    if !opts.archives_wals() || never_archive.contains(&n) {
        let _ = fs.remove(path);
        return;
    }
    let archive = archive_dir(wal_dir);
    if !fs.exists(&archive) {
        if fs.create_dir_all(&archive).is_err() {
            return;
        }
        let _ = fs.sync_dir(wal_dir);
    }
    let to = wal_path(&archive, n);
    if fs.exists(&to) {
        // Archived before a crash that kept the old name too.
        let _ = fs.remove(path);
        return;
    }
    // The new name is made durable before the old one goes: any sync of the WAL directory
    // (a synced write's, concurrently) would make the removal durable, and a crash then
    // must not lose the file. Without hard links a rename is the fallback, with a short
    // window in which a crash can lose the file: a gap the iterator reports, never a hole
    // it hides. A crash between the sync and the removal leaves both names; the iterator
    // reads the archived one and the next open removes the other.
    // A WAL replayed at open may hold bytes a killed process wrote and nothing synced since
    // (its writes are in tables now); archived, they must survive a later power loss.
    if fs.sync_file(path).is_err() {
        return;
    }
    match fs.link(path, &to) {
        Ok(()) => {
            if fs.sync_dir(&archive).is_ok() {
                let _ = fs.remove(path);
            }
        }
        Err(_) => {
            if fs.rename(path, &to).is_ok() {
                let _ = fs.sync_dir(&archive);
            }
        }
    }
}

/// One archived WAL as the purge sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Archived {
    pub number: FileNumber,
    pub size: u64,
    /// Seconds since the last write; `None` when the file system cannot tell.
    pub age_secs: Option<u64>,
}

/// The archived WALs to delete under `ttl_secs` and `limit_bytes` (0: no such bound), in
/// number order. `files` must be sorted by number.
pub(crate) fn to_purge(files: &[Archived], ttl_secs: u64, limit_bytes: u64) -> Vec<FileNumber> {
    let mut purge = Vec::new();
    let mut kept = Vec::new();
    for f in files {
        let expired = ttl_secs > 0 && f.age_secs.is_some_and(|age| age > ttl_secs);
        // RocksDB's size rule deletes empty archived files too: they hold no batch.
        if expired || (limit_bytes > 0 && f.size == 0) {
            purge.push(f.number);
        } else {
            kept.push(f);
        }
    }
    if limit_bytes > 0 {
        let mut total: u64 = kept.iter().map(|f| f.size).sum();
        for f in kept {
            if total <= limit_bytes {
                break;
            }
            purge.push(f.number);
            total -= f.size;
        }
    }
    purge.sort();
    purge
}

/// Deletes the archived WALs of `wal_dir` that `opts`'s TTL and size limit no longer keep
/// (none when `opts` keeps no archive: one made under other options stays, and is read).
/// Returns the span of the archived WALs left, oldest to newest: `None` for none, every
/// number when the archive could not be listed (any may be there).
pub(crate) fn purge_archive(
    fs: &dyn FileSystem,
    opts: &Options,
    wal_dir: &Path,
) -> Option<RangeInclusive<FileNumber>> {
    let archive = archive_dir(wal_dir);
    if !fs.is_dir(&archive) {
        return None;
    }
    let Ok(names) = fs.list(&archive) else { return Some(FileNumber(0)..=FileNumber(u64::MAX)) };
    let numbers = names.iter().filter_map(|name| match parse_file_name(name) {
        Some(FileKind::Wal(n)) => Some(n),
        _ => None,
    });
    let span = |left: &BTreeSet<FileNumber>| Some(*left.first()?..=*left.last()?);
    if !opts.archives_wals() {
        return span(&numbers.collect());
    }
    let now = SystemTime::now();
    let mut left: BTreeSet<FileNumber> = numbers.collect();
    let mut files: Vec<Archived> = left
        .iter()
        .copied()
        .filter_map(|number| {
            let path = wal_path(&archive, number);
            let size = fs.file_size(&path).ok()?;
            let age_secs =
                fs.modified(&path).ok().map(|t| now.duration_since(t).map_or(0, |d| d.as_secs()));
            Some(Archived { number, size, age_secs })
        })
        .collect();
    files.sort_by_key(|f| f.number);
    let limit = opts.wal_size_limit_mb.saturating_mul(1 << 20);
    for n in to_purge(&files, opts.wal_ttl_seconds, limit) {
        if fs.remove(&wal_path(&archive, n)).is_ok() {
            left.remove(&n);
        }
    }
    span(&left)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(n: u64, size: u64, age: Option<u64>) -> Archived {
        Archived { number: FileNumber(n), size, age_secs: age }
    }

    fn nums(v: Vec<FileNumber>) -> Vec<u64> {
        v.into_iter().map(|n| n.0).collect()
    }

    #[test]
    fn the_ttl_deletes_files_older_than_it_and_keeps_those_of_unknown_age() {
        let files = [f(1, 10, Some(100)), f(2, 10, None), f(3, 10, Some(5))];
        assert_eq!(nums(to_purge(&files, 60, 0)), [1]);
        assert_eq!(nums(to_purge(&files, 0, 0)), Vec::<u64>::new());
    }

    #[test]
    fn the_size_limit_deletes_the_oldest_until_the_rest_fits() {
        let files = [f(4, 30, None), f(5, 0, None), f(6, 30, None), f(7, 30, None)];
        // 90 bytes in three non-empty files; the empty one always goes.
        assert_eq!(nums(to_purge(&files, 0, 90)), [5]);
        assert_eq!(nums(to_purge(&files, 0, 89)), [4, 5]);
        assert_eq!(nums(to_purge(&files, 0, 30)), [4, 5, 6]);
        assert_eq!(nums(to_purge(&files, 0, 29)), [4, 5, 6, 7]);
    }

    #[test]
    fn the_ttl_goes_first_then_the_size_limit_counts_what_is_left() {
        let files = [f(1, 50, Some(1000)), f(2, 50, Some(1)), f(3, 50, Some(1))];
        assert_eq!(nums(to_purge(&files, 60, 100)), [1]);
        assert_eq!(nums(to_purge(&files, 60, 99)), [1, 2]);
    }
}
