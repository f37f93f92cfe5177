//! A shared, writable mapping of a window of a file, locked in memory ([`Mapping`]): how the
//! WAL's appends reach the page cache without a `write` call each.
//!
//! Why: an unsynced write (`sync = false`) is acknowledged once its record is in the OS's page
//! cache, where it survives a killed process. Handing each write group's record to the OS with
//! `write(2)` costs a system call per group, the larger part of a one-thread write's time. A
//! WAL file written with zeros ahead (`wal/writer.rs`) has its blocks allocated and zeroed past
//! its records, so those bytes can be mapped `MAP_SHARED` and the records copied into the page
//! cache directly: the same pages a `write` would have filled, seen by `read`, made durable by
//! the same `fdatasync` (Linux writes back a file's pages dirtied through shared mappings with
//! the rest), and never a fault that allocates (the zeros were written first, so a full disk
//! cannot surface as `SIGBUS`).
//!
//! Why locked: a copy into a page the kernel has evicted would read it back from the disk,
//! and a read that fails there stops the process with `SIGBUS` (where `write` returns an
//! error). Locked (`mlock`), the window's pages stay resident from the moment they are mapped,
//! so no copy ever waits on, or fails with, a read. A system that refuses the lock (the
//! process's `RLIMIT_MEMLOCK` used up) gets no mapping, and the owner writes with `write`.
//! The window spans only the zeros ahead and the page the records end in (a megabyte and a
//! half for a WAL), so the locked memory stays small; the pages behind it are unmapped, and
//! evictable, once a new window replaces it.
//!
//! Contract: a mapping covers `[offset, offset + len)` of a file at least that long; the owner
//! copies only inside it and never truncates the file below its end while mapped (drop it
//! first).

use std::os::unix::io::RawFd;
use std::ptr::NonNull;

/// `[offset, offset + len)` of a file, mapped shared and writable, locked in memory.
pub(crate) struct Mapping {
    ptr: NonNull<u8>,
    offset: u64,
    len: usize,
}

// SAFETY: the mapping is plain memory owned by this value (no other handle to the pointer
// exists); moving it to another thread moves that ownership.
unsafe impl Send for Mapping {}

/// The size of a memory page: a mapping's file offset is a multiple of it.
pub(crate) fn page_size() -> u64 {
    // SAFETY: sysconf only reads its integer argument.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(p).ok().filter(|&p| p > 0).unwrap_or(4096)
}

impl Mapping {
    /// Maps `[offset, offset + len)` of `fd` (`offset` a multiple of [`page_size`], `len > 0`,
    /// the file at least that long), its pages faulted in writable and locked. `None` when the
    /// system refuses the mapping or the lock (the caller then writes with `write`).
    pub(crate) fn new(fd: RawFd, offset: u64, len: usize) -> Option<Mapping> {
        if len == 0 || !offset.is_multiple_of(page_size()) {
            return None;
        }
        let file_offset = libc::off_t::try_from(offset).ok()?;
        // SAFETY: a fresh mapping at an address the kernel chooses; it aliases no Rust object.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                file_offset,
            )
        };
        if p == libc::MAP_FAILED {
            return None;
        }
        let m = Mapping { ptr: NonNull::new(p.cast::<u8>())?, offset, len };
        // Fault the pages in writable now rather than one per copy (a hint: kernels before
        // 5.14 refuse it, and the copies then fault as they go). The pages hold the zeros just
        // written, so this reads nothing from the disk.
        // SAFETY: `p`/`len` describe the mapping just made, which nothing else refers to.
        unsafe { libc::madvise(p, len, libc::MADV_POPULATE_WRITE) };
        // SAFETY: as above; mlock only pins the pages of our own mapping.
        if refuse_lock() || unsafe { libc::mlock(p, len) } != 0 {
            return None; // `m` is dropped: unmapped
        }
        Some(m)
    }

    /// The file offset just past the window.
    pub(crate) fn end(&self) -> u64 {
        self.offset + self.len as u64
    }

    /// The file offset the window starts at.
    #[cfg(test)]
    pub(crate) fn start(&self) -> u64 {
        self.offset
    }

    /// Copies `data` to file offset `at`; `false` (nothing copied) unless it lies within the
    /// window.
    pub(crate) fn write_at(&mut self, at: u64, data: &[u8]) -> bool {
        let Some(rel) = at.checked_sub(self.offset).and_then(|r| usize::try_from(r).ok()) else {
            return false;
        };
        if rel.checked_add(data.len()).is_none_or(|end| end > self.len) {
            return false;
        }
        // SAFETY: `[rel, rel + data.len())` is inside the mapping (checked above), which this
        // value owns (`&mut self`); `data` is a readable slice, and `copy` allows it to overlap
        // the destination.
        unsafe { std::ptr::copy(data.as_ptr(), self.ptr.as_ptr().add(rel), data.len()) };
        true
    }
}

#[cfg(test)]
thread_local! {
    /// Set by a test: this thread's next locks are refused, as `RLIMIT_MEMLOCK` would (a test
    /// running as root has no such limit).
    pub(crate) static REFUSE_LOCK: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

#[cfg(test)]
fn refuse_lock() -> bool {
    REFUSE_LOCK.with(std::cell::Cell::get)
}

#[cfg(not(test))]
#[inline(always)]
fn refuse_lock() -> bool {
    false
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the mapping this value owns, unmapped once (which unlocks it); nothing refers
        // into it after.
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Seek, Write};
    use std::os::unix::io::AsRawFd;

    /// The kilobytes `/proc/self/smaps` counts as locked in the mapping holding `ptr`.
    fn locked_kb(ptr: *const u8) -> Option<u64> {
        let v = crate::util::page_buf::smaps_field(ptr as usize, "Locked")?;
        v.trim_end_matches("kB").trim().parse().ok()
    }

    #[test]
    fn a_window_takes_copies_inside_it_only_and_is_locked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let mut f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        let page = page_size();
        f.write_all(&vec![0u8; 4 * page as usize]).unwrap();
        assert!(Mapping::new(f.as_raw_fd(), 0, 0).is_none(), "an empty window");
        assert!(Mapping::new(f.as_raw_fd(), 10, 100).is_none(), "an unaligned offset");
        let len = 2 * page as usize;
        let mut m = Mapping::new(f.as_raw_fd(), page, len).unwrap();
        assert_eq!(m.end(), 3 * page);
        assert!(m.write_at(page + 10, b"hello"));
        assert!(m.write_at(3 * page - 6, b"across"), "up to the window's end");
        assert!(!m.write_at(page - 2, b"before"), "a copy starting before the window");
        assert!(!m.write_at(3 * page - 2, b"past the end"), "a copy past the window");
        assert_eq!(
            locked_kb(m.ptr.as_ptr()).expect("smaps lists the window"),
            len as u64 / 1024,
            "the whole window is locked"
        );
        let mut back = Vec::new();
        f.rewind().unwrap();
        f.read_to_end(&mut back).unwrap();
        let at = page as usize;
        assert_eq!(&back[at + 10..at + 15], b"hello");
        assert_eq!(&back[3 * at - 6..3 * at], b"across");
        assert!(back[..at].iter().all(|&b| b == 0), "nothing landed before the window");
        drop(m);
    }
}
