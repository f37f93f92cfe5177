//! A shared, writable mapping of the start of a file ([`Mapping`]): how the WAL's appends
//! reach the page cache without a `write` call each.
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
//! Contract: a mapping covers `[0, len)` of a file at least that long; the owner never copies
//! past `len`, never truncates the file below `len` while mapped ([`Mapping::unmap`] first), and
//! grows the mapping only over bytes it has already extended the file with.

use std::os::unix::io::RawFd;
use std::ptr::NonNull;

/// `[0, len)` of a file, mapped shared and writable.
pub(crate) struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain memory owned by this value (no other handle to the pointer
// exists); moving it to another thread moves that ownership.
unsafe impl Send for Mapping {}

impl Mapping {
    /// Maps `[0, len)` of `fd` (`len > 0`, the file at least that long). `None` when the
    /// system refuses (the caller then writes with `write`).
    pub(crate) fn new(fd: RawFd, len: usize) -> Option<Mapping> {
        if len == 0 {
            return None;
        }
        // SAFETY: a fresh mapping at an address the kernel chooses; it aliases no Rust object.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return None;
        }
        NonNull::new(p.cast::<u8>()).map(|ptr| Mapping { ptr, len })
    }

    /// Grows the mapping to `[0, len)` (the file at least that long now). On failure the
    /// mapping is unchanged and `false` returned.
    pub(crate) fn grow(&mut self, len: usize) -> bool {
        if len <= self.len {
            return true;
        }
        // SAFETY: `ptr`/`self.len` describe a mapping this value owns; MREMAP_MAYMOVE may move
        // it, after which only the returned address is used (nothing else holds the old one).
        let p =
            unsafe { libc::mremap(self.ptr.as_ptr().cast(), self.len, len, libc::MREMAP_MAYMOVE) };
        if p == libc::MAP_FAILED {
            return false;
        }
        match NonNull::new(p.cast::<u8>()) {
            Some(ptr) => {
                self.ptr = ptr;
                self.len = len;
                true
            }
            None => false,
        }
    }

    /// Copies `data` to file offset `at`; `false` (nothing copied) unless it lies within the
    /// mapping.
    pub(crate) fn write_at(&mut self, at: u64, data: &[u8]) -> bool {
        let Ok(at) = usize::try_from(at) else { return false };
        if at.checked_add(data.len()).is_none_or(|end| end > self.len) {
            return false;
        }
        // SAFETY: `[at, at + data.len())` is inside the mapping (checked above), which this
        // value owns (`&mut self`); `data` is a readable slice, and `copy` allows it to overlap
        // the destination.
        unsafe { std::ptr::copy(data.as_ptr(), self.ptr.as_ptr().add(at), data.len()) };
        true
    }

    /// Removes the mapping (before the file is truncated or closed).
    pub(crate) fn unmap(self) {
        drop(self);
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the mapping this value owns, unmapped once; nothing refers into it after.
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

    #[test]
    fn copies_land_in_the_file_and_growing_keeps_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let mut f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        f.write_all(&[0u8; 8192]).unwrap();
        let mut m = Mapping::new(f.as_raw_fd(), 8192).unwrap();
        assert!(m.write_at(10, b"hello"));
        assert!(!m.write_at(8190, b"past the end"), "a copy past the mapping is refused");
        f.write_all(&[0u8; 8192]).unwrap();
        assert!(m.grow(16384));
        assert_eq!(m.len, 16384);
        assert!(m.write_at(8190, b"across"));
        let mut back = Vec::new();
        f.rewind().unwrap();
        f.read_to_end(&mut back).unwrap();
        assert_eq!(&back[10..15], b"hello");
        assert_eq!(&back[8190..8196], b"across");
        m.unmap();
        assert!(Mapping::new(f.as_raw_fd(), 0).is_none());
    }
}
