//! Opening a file for the engine's reads, for the buffered (`os.rs`) and the direct
//! (`direct.rs`) handles alike.

use std::fs::File;
#[cfg(target_os = "linux")]
use std::fs::OpenOptions;
use std::path::Path;

/// Opens `path` read-only with the extra open flags `flags` (`O_DIRECT`, or 0).
///
/// On Linux the file is opened with `O_NOATIME`: a read then skips the access-time check
/// and update the kernel makes on every `read`/`pread` (`touch_atime`, a visible share of a
/// direct point read's CPU; `docs/measurements.md`), and the engine's reads leave no trace in
/// the files' access times (which nothing of the engine reads). The kernel allows the flag only to the
/// file's owner (or a process with `CAP_FOWNER`): once refused (`EPERM`), files open without
/// it for the rest of the process.
pub(crate) fn open_for_reads(path: &Path, flags: i32) -> std::io::Result<File> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::OpenOptionsExt;
        use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
        static NOATIME_REFUSED: AtomicBool = AtomicBool::new(false);
        if !NOATIME_REFUSED.load(Relaxed) {
            let r = OpenOptions::new().read(true).custom_flags(flags | libc::O_NOATIME).open(path);
            match r {
                Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
                    NOATIME_REFUSED.store(true, Relaxed);
                }
                r => return r,
            }
        }
        OpenOptions::new().read(true).custom_flags(flags).open(path)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = flags;
        File::open(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Files the engine reads are opened with `O_NOATIME` when the process owns them (as it
    /// does the files it wrote), and read as usual; a missing file is still `NotFound`.
    #[cfg(target_os = "linux")]
    #[test]
    fn reads_open_without_access_time_updates() {
        use std::os::fd::AsRawFd;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t");
        std::fs::write(&p, b"0123456789").unwrap();
        let f = open_for_reads(&p, 0).unwrap();
        // SAFETY: F_GETFL on a descriptor `f` keeps open; no memory is passed.
        let fl = unsafe { libc::fcntl(f.as_raw_fd(), libc::F_GETFL) };
        assert!(fl >= 0 && fl & libc::O_NOATIME != 0, "flags {fl:#x}");
        assert_eq!(std::fs::read(&p).unwrap(), b"0123456789");
        let e = open_for_reads(&dir.path().join("missing"), 0).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
    }
}
