//! The DB directory lock on the OS file system.
//!
//! On Unix it is a POSIX record lock (`fcntl(F_SETLK)`) on the whole `LOCK` file, as RocksDB
//! takes it, not `flock(2)`: a `flock` lock belongs to the open file description, which a
//! child process forked by any thread shares until it execs, so a DB closed while another
//! thread was spawning a process could stay locked for a moment and its reopen fail with
//! `Locked`. Record locks are never inherited across `fork`. They do not exclude the process
//! that holds them, so a process-wide set of held paths refuses a second lock from the same
//! process; the `LOCK` file is opened nowhere else (closing any descriptor of it would drop
//! the record lock). Elsewhere, the standard library's file lock.

use std::collections::BTreeSet;
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::FileLock;
use crate::error::{Error, Result};

/// Paths this process holds locks on.
static HELD: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());

struct OsLock {
    /// The one descriptor of `LOCK` while the lock is held: the record lock lives as long as
    /// it is open.
    _file: File,
    held: PathBuf,
}

impl FileLock for OsLock {}

impl Drop for OsLock {
    fn drop(&mut self) {
        // The record lock goes with the file, closed after this.
        HELD.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(&self.held);
    }
}

/// Takes the lock on `path` (creating the file); `Locked` naming its directory when held.
///
/// The held set is checked before `LOCK` is opened: when this process already holds the
/// lock, opening and then closing a second descriptor of the file would drop the record lock
/// it holds, and a second process could then open the DB.
pub(crate) fn lock(path: &Path) -> Result<Box<dyn FileLock>> {
    let held = held_name(path)?;
    let locked = || Error::Locked(super::parent_dir(path));
    if !HELD.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(held.clone()) {
        return Err(locked());
    }
    // From here on this path is in the held set; `Release` takes it out again on every
    // return but the one that hands the lock over.
    let release = Release(Some(held));
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| Error::io("open lock", path, e))?;
    match try_lock(&file) {
        Ok(true) => Ok(Box::new(OsLock { _file: file, held: release.keep() })),
        Ok(false) => Err(locked()),
        Err(e) => Err(Error::io("lock", path, e)),
    }
}

/// The name a lock file is held under: its directory's canonical path and its file name, so
/// every path to one file names it alike, whether or not the file exists yet.
fn held_name(path: &Path) -> Result<PathBuf> {
    let dir = super::parent_dir(path);
    let dir = std::fs::canonicalize(&dir).map_err(|e| Error::io("realpath", &dir, e))?;
    let name = path.file_name().ok_or_else(|| {
        Error::InvalidArgument(format!("lock file {} has no file name", path.display()))
    })?;
    Ok(dir.join(name))
}

/// Takes a path out of the held set when dropped, unless `keep` handed it to an `OsLock`.
struct Release(Option<PathBuf>);

impl Release {
    fn keep(mut self) -> PathBuf {
        self.0.take().unwrap_or_default()
    }
}

impl Drop for Release {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            HELD.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(&p);
        }
    }
}

/// Takes a write lock on the whole file: `Ok(false)` when another process holds it.
#[cfg(unix)]
fn try_lock(file: &File) -> std::io::Result<bool> {
    use std::os::unix::io::AsRawFd;
    // SAFETY: `flock` is a plain C struct for which all-zero bytes are a valid value.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = libc::F_WRLCK as libc::c_short;
    fl.l_whence = libc::SEEK_SET as libc::c_short;
    fl.l_start = 0;
    fl.l_len = 0; // to the end of the file, however long
                  // SAFETY: the descriptor is open for the call's duration and `fl` is a valid, initialised
                  // struct that `fcntl(F_SETLK)` only reads.
    let r = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETLK, &fl) };
    if r == 0 {
        return Ok(true);
    }
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EAGAIN | libc::EACCES) => Ok(false),
        _ => Err(e),
    }
}

#[cfg(not(unix))]
fn try_lock(file: &File) -> std::io::Result<bool> {
    match file.try_lock() {
        Ok(()) => Ok(true),
        Err(std::fs::TryLockError::WouldBlock) => Ok(false),
        Err(std::fs::TryLockError::Error(e)) => Err(e),
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn a_lock_excludes_this_process_through_any_path_until_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("LOCK");
        let l = lock(&p).unwrap();
        let other = dir.path().join(".").join("LOCK");
        assert!(matches!(lock(&other), Err(Error::Locked(_))));
        assert!(matches!(lock(&p), Err(Error::Locked(_))));
        drop(l);
        lock(&other).unwrap();
    }
}
