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
    file: File,
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
pub(crate) fn lock(path: &Path) -> Result<Box<dyn FileLock>> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| Error::io("open lock", path, e))?;
    let held = std::fs::canonicalize(path).map_err(|e| Error::io("realpath", path, e))?;
    let locked = || Error::Locked(super::parent_dir(path));
    if !HELD.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(held.clone()) {
        return Err(locked());
    }
    let lock = OsLock { file, held };
    match try_lock(&lock.file) {
        Ok(true) => Ok(Box::new(lock)),
        Ok(false) => Err(locked()),
        Err(e) => Err(Error::io("lock", path, e)),
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
