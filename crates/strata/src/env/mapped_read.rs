//! [`MappedFile`]: a table file read through a read-only shared mapping of the whole file
//! (`Options::allow_mmap_reads`), with its `pread` handle kept for the reads a mapping would
//! serve worse.
//!
//! Why: a point read that misses the block cache most often finds its block in the OS's page
//! cache. Through `pread` it then pays a system call, the page cache's lookup and a copy into
//! a scratch buffer before the block is checked and decompressed; through the mapping, the
//! checksum and the decompressor read the page cache's bytes where they lie (the
//! `Cow::Borrowed` of `read_exact_with`), and the page table finds them.
//!
//! Where the mapping would be slower, reads go through `pread`:
//! - reads over [`MAPPED_READ_MAX`] (index and filter blocks read once per table, compaction
//!   and iterator readahead): the mapping saves little on them, and a page that is not
//!   cached would be read from the device one page per fault;
//! - a file whose pages are not in the page cache (a database larger than memory): a fault
//!   reads one page and a block spans two, so a block not cached would cost two device reads
//!   in turn where `pread` makes one. Every [`SAMPLE_EVERY`]th small read of a thread asks
//!   the kernel whether its pages are resident (`mincore`), and the file is read through the
//!   mapping only while none of its last 32 samples found a page missing;
//! - a file whose mapping failed a read (`SIGBUS`, see [`super::sigbus`]): that read returns
//!   an I/O error naming the file and offset, and the file is not read through the mapping
//!   again.
//!
//! Contract: the file does not change while open (tables are immutable once written), so the
//! mapping of the length seen at open covers every byte a reader may ask for; a read past it
//! goes to `pread`, which reports the truncation.

use std::borrow::Cow;
use std::cell::Cell;
use std::os::fd::RawFd;
use std::path::Path;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::sync::Arc;

use super::sigbus::{self, Guarded};
use super::RandomAccessFile;
use crate::error::{Error, Result};

/// The largest read served through the mapping: a data block with its trailer (4 KiB blocks
/// by default, 16 KiB at most in practice).
pub(crate) const MAPPED_READ_MAX: usize = 32 << 10;

/// One small read in this many of a thread samples the residency of its pages.
const SAMPLE_EVERY: u32 = 16;

thread_local! {
    /// This thread's small reads through any mapped file, for the sampling cadence.
    static READS: Cell<u32> = const { Cell::new(0) };
}

/// See the module documentation.
pub(crate) struct MappedFile {
    /// The `pread` handle: reads the mapping does not serve.
    plain: Box<dyn RandomAccessFile>,
    ptr: NonNull<u8>,
    len: usize,
    /// The last 32 residency samples, newest in bit 0: 1 = a page was not resident.
    cold: AtomicU32,
    /// Declared after `ptr`'s use in `drop`: released once the mapping is gone.
    guard: Option<Guarded>,
}

// SAFETY: the mapping is read-only memory this value owns; reads from any thread are plain
// loads, and the atomics and the `pread` handle are `Sync` themselves.
unsafe impl Send for MappedFile {}
// SAFETY: as above.
unsafe impl Sync for MappedFile {}

impl MappedFile {
    /// `plain` read through a mapping of its first `len` bytes (`fd` is the descriptor
    /// `plain` reads, open as long as `plain` is), or `plain` itself when the system refuses
    /// the mapping or no `SIGBUS` guard is free.
    pub(crate) fn wrap(
        plain: Box<dyn RandomAccessFile>,
        fd: RawFd,
        len: u64,
    ) -> Arc<dyn RandomAccessFile> {
        match Self::map(fd, len) {
            Some((ptr, len, guard)) => Arc::new(MappedFile {
                plain,
                ptr,
                len,
                cold: AtomicU32::new(0),
                guard: Some(guard),
            }),
            None => Arc::from(plain),
        }
    }

    fn map(fd: RawFd, len: u64) -> Option<(NonNull<u8>, usize, Guarded)> {
        let len = usize::try_from(len).ok().filter(|&l| l > 0)?;
        // SAFETY: a fresh read-only shared mapping at an address the kernel chooses; it
        // aliases no Rust object.
        let p = unsafe {
            libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ, libc::MAP_SHARED, fd, 0)
        };
        if p == libc::MAP_FAILED {
            return None;
        }
        match (NonNull::new(p.cast::<u8>()), sigbus::guard(p as usize, len)) {
            (Some(ptr), Some(guard)) => Some((ptr, len, guard)),
            _ => {
                // SAFETY: the mapping just made, which nothing refers to.
                unsafe { libc::munmap(p, len) };
                None
            }
        }
    }

    fn failed(&self) -> bool {
        self.guard.as_ref().is_none_or(Guarded::failed)
    }

    /// `[offset, offset + len)` inside the mapping, if the mapping should serve it.
    fn mapped_range(&self, offset: u64, len: usize) -> Option<&[u8]> {
        if len > MAPPED_READ_MAX || self.failed() {
            return None;
        }
        let start = usize::try_from(offset).ok()?;
        let end = start.checked_add(len).filter(|&e| e <= self.len)?;
        let n = READS.with(|c| {
            let n = c.get();
            c.set(n.wrapping_add(1));
            n
        });
        if n.is_multiple_of(SAMPLE_EVERY) {
            let cold = u32::from(!self.resident(start, end));
            // A racing sample may overwrite another's: the register is a hint. Stored only
            // when it changes, so threads reading a cached file share its line unwritten.
            let bits = self.cold.load(Relaxed);
            let next = (bits << 1) | cold;
            if next != bits {
                self.cold.store(next, Relaxed);
            }
        }
        if self.cold.load(Relaxed) != 0 {
            return None;
        }
        // SAFETY: `start..end` lies inside the mapping (checked above), which lives as long
        // as `self`; it is read-only and the file does not change while open (the module's
        // contract), and a failed page's fault is turned into zeros plus `failed`.
        Some(unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().add(start), end - start) })
    }

    /// Whether every page of `[start, end)` of the mapping is in the page cache (`mincore`);
    /// false when the kernel does not say.
    fn resident(&self, start: usize, end: usize) -> bool {
        let page = super::mapped::page_size() as usize;
        let first = start & !(page - 1);
        let pages = (end - first).div_ceil(page);
        let mut vec = [0u8; MAPPED_READ_MAX / 4096 + 2];
        if pages > vec.len() {
            return false;
        }
        // SAFETY: `[first, first + pages * page)` starts at a page boundary inside the mapping
        // (`first` rounds `start` down within the same page) and ends in its last page; `vec`
        // has a byte for each of those pages.
        let r = unsafe {
            libc::mincore(self.ptr.as_ptr().add(first).cast(), end - first, vec.as_mut_ptr())
        };
        r == 0 && vec[..pages].iter().all(|&b| b & 1 == 1)
    }

    /// The error for a read the mapping failed.
    fn fault_error(&self, offset: u64, len: usize) -> Error {
        Error::io(
            "read (through a mapping)",
            self.plain.path(),
            std::io::Error::other(format!(
                "the system could not read the file's pages for {len} bytes at offset \
                 {offset} (SIGBUS)"
            )),
        )
    }
}

impl Drop for MappedFile {
    fn drop(&mut self) {
        // The guard first: once unmapped, the addresses may be mapped again by anyone.
        self.guard = None;
        // SAFETY: the mapping this value owns, unmapped once; nothing refers into it after
        // (readers borrow `self`).
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

impl RandomAccessFile for MappedFile {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        self.plain.read_at(offset, buf)
    }

    fn len(&self) -> u64 {
        self.plain.len()
    }

    fn path(&self) -> &Path {
        self.plain.path()
    }

    /// The `pread` handle's advice, and `MADV_RANDOM` for the mapping: a fault reads no
    /// pages around the one asked for.
    fn advise_random(&self) {
        self.plain.advise_random();
        // SAFETY: madvise only advises the kernel about this value's own mapping.
        let _ = unsafe { libc::madvise(self.ptr.as_ptr().cast(), self.len, libc::MADV_RANDOM) };
    }

    fn read_alignment(&self) -> u64 {
        self.plain.read_alignment()
    }

    fn prefetch(&self, offset: u64, len: usize) -> bool {
        self.plain.prefetch(offset, len)
    }

    fn read_exact_with(
        &self,
        offset: u64,
        len: usize,
        f: &mut dyn FnMut(Cow<'_, [u8]>),
    ) -> Result<()> {
        match self.mapped_range(offset, len) {
            Some(bytes) => {
                f(Cow::Borrowed(bytes));
                if self.failed() {
                    return Err(self.fault_error(offset, len));
                }
                Ok(())
            }
            None => self.plain.read_exact_with(offset, len, f),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::{FileSystem, OsFs};

    fn mapped(path: &Path) -> Arc<dyn RandomAccessFile> {
        OsFs.open_mapped(path).unwrap()
    }

    fn read(f: &dyn RandomAccessFile, offset: u64, len: usize) -> Result<Vec<u8>> {
        let mut out = None;
        f.read_exact_with(offset, len, &mut |b| out = Some(b.into_owned()))?;
        Ok(out.unwrap())
    }

    /// Reads through the mapping return the file's bytes, at any offset and length inside
    /// it; one past the end is the `pread` handle's truncation error.
    #[test]
    fn reads_the_files_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("000001.sst");
        let data: Vec<u8> = (0..20_000u32).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(&p, &data).unwrap();
        let f = mapped(&p);
        f.advise_random();
        for (off, len) in [(0, 1), (4090, 100), (0, 20_000), (19_999, 1), (12_345, 4_096)] {
            for _ in 0..40 {
                assert_eq!(read(&*f, off, len).unwrap(), &data[off as usize..off as usize + len]);
            }
        }
        let e = read(&*f, 19_990, 20).unwrap_err().to_string();
        assert!(e.contains("truncated") && e.contains("000001.sst"), "{e}");
        let mut buf = [0u8; 10];
        assert_eq!(f.read_at(100, &mut buf).unwrap(), 10);
        assert_eq!(buf, data[100..110]);
        assert_eq!(f.len(), 20_000);
    }

    /// A file cut below its mapping by someone else: the read through the mapping faults
    /// (`SIGBUS`), and returns an I/O error naming the file and offset instead of stopping
    /// the process; later reads go through `pread`, which reports the truncation.
    #[test]
    fn a_faulting_page_is_an_error_not_a_stopped_process() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("000002.sst");
        std::fs::write(&p, vec![5u8; 64 << 10]).unwrap();
        let f = mapped(&p);
        assert_eq!(read(&*f, 100, 100).unwrap(), vec![5u8; 100]);
        std::fs::OpenOptions::new().write(true).open(&p).unwrap().set_len(4096).unwrap();
        // No residency sample on this read (it would find the cut pages missing and read
        // with `pread`): the read goes through the mapping.
        READS.with(|c| c.set(1));
        let e = read(&*f, 40_000, 1_000).unwrap_err().to_string();
        assert!(
            e.contains("000002.sst") && e.contains("offset 40000") && e.contains("SIGBUS"),
            "{e}"
        );
        let e = read(&*f, 40_000, 1_000).unwrap_err().to_string();
        assert!(e.contains("truncated"), "{e}");
        assert_eq!(read(&*f, 100, 100).unwrap(), vec![5u8; 100]);
    }
}
