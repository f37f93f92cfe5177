//! The filesystem seam. Every byte the engine reads or writes goes through [`FileSystem`], so
//! tests can run the engine on memory ([`MemFs`]), simulate power loss, and inject faults
//! ([`FaultFs`]).
//!
//! Durability contract of the trait, which the engine relies on:
//! - `WritableFile::append` may buffer in the process; `flush` hands every appended byte to the
//!   OS (it then survives a killed process); `sync` makes them durable (survive power loss).
//! - A created, renamed or removed directory entry is durable only after `sync_dir` on its parent.

#[cfg(target_os = "linux")]
mod direct;
#[cfg(any(test, feature = "testing"))]
mod fault;
pub(crate) mod io_pool;
#[cfg(target_os = "linux")]
mod mapped;
#[cfg(target_os = "linux")]
mod mapped_read;
mod rate_limiter;
mod table_files;
// Without `testing`, the engine uses `MemFs` only as scratch space (its crash model is then
// unused).
#[cfg_attr(not(any(test, feature = "testing")), allow(dead_code))]
mod mem;
mod open_read;
mod os;
mod os_lock;
#[cfg(target_os = "linux")]
mod sigbus;

// The test filesystems are public only with the `testing` feature (the engine's own tests,
// the reliability harness): applications see the trait and the OS filesystem.
#[cfg(all(test, not(feature = "testing")))]
pub(crate) use fault::{FaultFs, FaultKind, FaultOp, FaultRule};
#[cfg(feature = "testing")]
pub use fault::{FaultFs, FaultKind, FaultOp, FaultRule, RecordedOp};
#[cfg(all(test, not(feature = "testing")))]
pub(crate) use mem::CrashMode;
#[cfg(not(feature = "testing"))]
pub(crate) use mem::MemFs;
#[cfg(feature = "testing")]
pub use mem::{CrashMode, MemFs};
pub use os::OsFs;
pub use rate_limiter::RateLimiter;
pub(crate) use table_files::{TableFileFs, TableIo};

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, Result};

/// A file opened for appending.
pub trait WritableFile: Send {
    /// Appends `data`; may buffer inside the process.
    fn append(&mut self, data: &[u8]) -> Result<()>;
    /// Hands all buffered bytes to the OS.
    fn flush(&mut self) -> Result<()>;
    /// Flushes, then makes the file's contents durable (fdatasync).
    fn sync(&mut self) -> Result<()>;
    /// Bytes appended so far (buffered or not).
    fn len(&self) -> u64;
    /// Reserves space for `bytes` more bytes past what is appended, without changing the
    /// file's size (a hint: later appends then allocate nothing; may do nothing).
    fn preallocate(&mut self, bytes: u64) -> Result<()> {
        let _ = bytes;
        Ok(())
    }
    /// Writes zero bytes from the file's end up to offset `to` (nothing when the file already
    /// reaches it), as data, not holes or unwritten extents, so that later appends up to `to`
    /// overwrite blocks that exist and change no file size: a sync after such an append
    /// writes the data alone. Appends continue at `len()`. Returns `false` when the file
    /// system cannot, or the file declines (its appends are too large for zeros ahead to
    /// pay, `os.rs`); then nothing was written. The zeros become durable with the next sync.
    fn write_zeros_ahead(&mut self, to: u64) -> Result<bool> {
        let _ = to;
        Ok(false)
    }
    /// Whether the last few hand-offs of bytes to the OS (flushes, a sync's write) were each
    /// too large for zeros ahead to pay (`os.rs`): a file that takes over the appends, a
    /// WAL's next one, is then better started without them. The default: never.
    fn appends_large(&self) -> bool {
        false
    }
    /// From now on, flushed bytes that land on zeros written ahead
    /// ([`WritableFile::write_zeros_ahead`]) are copied into a shared mapping of the file
    /// instead of written with a system call (`mapped.rs` says why that is the same to every
    /// reader and to `sync`). Returns whether the file system does so; the default does not.
    fn map_zeros_ahead(&mut self) -> bool {
        false
    }
    /// Nothing more will be appended: flushes, and lets go of what served the appends (a
    /// mapping, whose pages a later sync would otherwise write-protect one by one).
    fn finish_appends(&mut self) -> Result<()> {
        self.flush()
    }
    /// Flushes, then cuts the file to `len()` bytes, dropping what was written past them
    /// ([`WritableFile::write_zeros_ahead`]). Like the flush, durable only after a sync. The
    /// default flushes only (for files that never write ahead).
    fn truncate_to_len(&mut self) -> Result<()> {
        self.flush()
    }
    /// A handle that makes durable, when called, every byte flushed before this call, and
    /// that may be called without holding the file (while others append to it): the WAL's
    /// synced writes wait for their sync outside the writer's lock. `None` when the file
    /// system has none; callers then `sync` the file itself.
    fn syncer(&mut self) -> Option<Box<dyn FileSyncer>> {
        None
    }
    /// Flushes, then asks the OS to start writing the file's dirty pages out without waiting
    /// (a hint that makes a later `sync` cheaper; durability still needs `sync`).
    fn start_writeback(&mut self) -> Result<()> {
        self.flush()
    }
    /// True when nothing has been appended.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// See [`WritableFile::syncer`].
pub trait FileSyncer: Send {
    /// Makes the bytes the handle covers durable (fdatasync).
    fn sync(&self) -> Result<()>;
}

/// A file read at arbitrary offsets, shared between threads.
pub trait RandomAccessFile: Send + Sync {
    /// Reads up to `buf.len()` bytes at `offset`, returning how many were read (short only at EOF).
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize>;
    /// The file's size when it was opened.
    fn len(&self) -> u64;
    /// True for an empty file.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The path, for error messages.
    fn path(&self) -> &Path;
    /// Advises the OS that reads will come at random offsets (no kernel readahead). A hint:
    /// the default does nothing, and a failure is ignored.
    fn advise_random(&self) {}
    /// The unit the device transfers for a read of this file: a read of any range moves the
    /// whole span around it, aligned to this many bytes, so a reader that can use the bytes
    /// beside its range (readahead) asks for that span at no extra I/O. 1 (the default): no
    /// unit, as for a buffered file, whose pages the OS caches anyway.
    fn read_alignment(&self) -> u64 {
        1
    }
    /// Asks the OS to start reading `[offset, offset + len)` into its page cache in the
    /// background, so later reads of those bytes do not wait for the device. True if the file
    /// took the request (a buffered OS file); false where there is no such cache to fill
    /// (direct I/O, an in-memory file, the default): a reader that wants the bytes ahead then
    /// reads them into its own buffer. A hint: it reads nothing into memory the caller sees,
    /// and a failure only returns false.
    fn prefetch(&self, _offset: u64, _len: usize) -> bool {
        false
    }
    /// Reads exactly `len` bytes at `offset` and, on success, passes them to `f` (called once):
    /// in a buffer of the file's own where it reads through one (direct I/O's aligned scratch,
    /// lent for the call), so a caller that decodes the bytes into something else saves a copy
    /// and an allocation; otherwise in a new `Vec` (the default, through
    /// [`RandomAccessFile::read_at`]). A short read is `Corruption` (file truncated). `f` must
    /// not read files (it may run while a thread-local buffer is lent out).
    fn read_exact_with(
        &self,
        offset: u64,
        len: usize,
        f: &mut dyn FnMut(Cow<'_, [u8]>),
    ) -> Result<()> {
        f(Cow::Owned(read_exact(self, offset, len)?));
        Ok(())
    }
}

/// The largest read a thread's scratch buffer serves (direct I/O's aligned one, and the OS
/// file's in `read_exact_with`). A data block's read fits; an index or filter block
/// (hundreds of KiB, read once per table and kept by the reader or the cache) gets a buffer of
/// its own, freed after it, so every thread that ever opened a table does not keep one such
/// block's worth of memory for the rest of the process.
const SCRATCH_KEEP: usize = 64 << 10;

/// [`RandomAccessFile::read_at`] of exactly `len` bytes into a new `Vec`.
fn read_exact<F: RandomAccessFile + ?Sized>(file: &F, offset: u64, len: usize) -> Result<Vec<u8>> {
    let mut buf = vec![0u8; len];
    let n = file.read_at(offset, &mut buf)?;
    if n != len {
        return Err(truncated(file.path(), offset, len, n));
    }
    Ok(buf)
}

/// The error for a read of `wanted` bytes at `offset` that found only `got`.
fn truncated(path: &Path, offset: u64, wanted: usize, got: usize) -> Error {
    Error::corruption(
        path,
        offset,
        format!("truncated file: wanted {wanted} bytes, file has {got}"),
    )
}

impl dyn RandomAccessFile {
    /// Reads exactly `len` bytes at `offset`; a short read is `Corruption` (file truncated).
    pub fn read_exact_at(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        read_exact(self, offset, len)
    }

    /// Reads the whole file.
    pub fn read_all(&self) -> Result<Vec<u8>> {
        let len = usize::try_from(self.len())
            .map_err(|_| Error::NotSupported(format!("{} too large", self.path().display())))?;
        self.read_exact_at(0, len)
    }
}

/// A held lock on a DB directory; released on drop.
pub trait FileLock: Send + Sync {}

/// Everything the engine needs from a filesystem.
pub trait FileSystem: Send + Sync + 'static {
    /// Creates (or truncates) a file for appending.
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>>;
    /// Renames the existing file `old` to `new` and opens it for writing from its start
    /// *without truncating it*: appends overwrite the old bytes in place (no new blocks, no
    /// size change while within them), and bytes past the last write keep their old content.
    /// For reusing WAL files. The default renames, then creates (truncating): correct, but
    /// without the benefit.
    fn reuse_for_write(&self, old: &Path, new: &Path) -> Result<Box<dyn WritableFile>> {
        self.rename(old, new)?;
        self.create(new)
    }
    /// Opens an existing file for reading.
    fn open(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>>;
    /// [`FileSystem::open`] for a file that does not change while open (a table), read
    /// through a mapping where that serves a read better than `pread` (`env/mapped_read.rs`).
    /// The same as `open` (the default) where the file system has no such mapping.
    fn open_mapped(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        self.open(path)
    }
    /// [`FileSystem::open`] with direct I/O: reads bypass the OS page cache (`O_DIRECT`),
    /// with any offset and length (the handle aligns them). `NotSupported`, naming the file,
    /// where the file system or platform has none (the default).
    fn open_direct(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        Err(no_direct_io(path))
    }
    /// [`FileSystem::create`] with direct I/O: `flush` writes the bytes to the device,
    /// bypassing the OS page cache. `NotSupported`, naming the file, where there is none (the
    /// default).
    fn create_direct(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        Err(no_direct_io(path))
    }
    /// [`FileSystem::create`] for a file that foreground writes append to and read back at
    /// once (a blob file of values written at commit). The same as `create` (the default);
    /// the DB's table-file wrapper (`table_files.rs`) gives it the writeback of
    /// `bytes_per_sync` but neither the background writes' rate limit nor direct writes, each
    /// of which would make every commit wait, holding the WAL lock.
    fn create_foreground(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.create(path)
    }
    /// Atomically renames `from` to `to`, replacing `to`. Works on files, and on a directory
    /// when `to` does not exist (its entries move with it).
    fn rename(&self, from: &Path, to: &Path) -> Result<()>;
    /// Removes a file.
    fn remove(&self, path: &Path) -> Result<()>;
    /// Names (not paths) of the entries of `dir`.
    fn list(&self, dir: &Path) -> Result<Vec<String>>;
    /// Creates `dir` and its parents if missing.
    fn create_dir_all(&self, dir: &Path) -> Result<()>;
    /// Makes the entries of `dir` durable.
    fn sync_dir(&self, dir: &Path) -> Result<()>;
    /// Makes the whole content of the existing file at `path` durable (for a file written
    /// before this process opened the DB, which it holds no writable handle of).
    fn sync_file(&self, path: &Path) -> Result<()>;
    /// True when `path` exists.
    fn exists(&self, path: &Path) -> bool;
    /// Whether `path` is a directory (the default: whether it can be listed).
    fn is_dir(&self, path: &Path) -> bool {
        self.list(path).is_ok()
    }
    /// Size of the file at `path`.
    fn file_size(&self, path: &Path) -> Result<u64>;
    /// When the file at `path` was last written. The default: `NotSupported` (callers that
    /// age files, the WAL archive's TTL, then keep them).
    fn modified(&self, path: &Path) -> Result<std::time::SystemTime> {
        Err(Error::NotSupported(format!(
            "{}: this filesystem does not record modification times",
            path.display()
        )))
    }
    /// Takes an exclusive lock on `path` (creating it); fails with `Error::Locked` when held.
    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>>;
    /// Makes `to` a second name of the existing file `from` (a hard link); `to` must not
    /// exist. The new entry is durable after `sync_dir` of its parent. Fails when the two
    /// paths are on different devices or the filesystem has no links (the default): callers
    /// then copy ([`copy_file`]).
    fn link(&self, from: &Path, to: &Path) -> Result<()> {
        let _ = to;
        Err(Error::NotSupported(format!("{}: this filesystem has no hard links", from.display())))
    }
    /// Removes the empty directory `dir`.
    fn remove_dir(&self, dir: &Path) -> Result<()>;
}

fn no_direct_io(path: &Path) -> Error {
    Error::NotSupported(format!(
        "{}: this file system has no direct I/O: turn off use_direct_reads and \
         use_direct_io_for_flush_and_compaction",
        path.display()
    ))
}

/// Copies the file `from` to `to` (created or truncated) through `fs` and syncs the copy; the
/// caller syncs `to`'s directory. Returns the bytes copied.
pub fn copy_file(fs: &dyn FileSystem, from: &Path, to: &Path) -> Result<u64> {
    copy_file_crc32c(fs, from, to).map(|(size, _)| size)
}

/// [`copy_file`], also returning the CRC32C of the bytes copied.
pub(crate) fn copy_file_crc32c(fs: &dyn FileSystem, from: &Path, to: &Path) -> Result<(u64, u32)> {
    let mut dst = fs.create(to)?;
    let copied = read_chunks(fs, from, |chunk| dst.append(chunk))?;
    dst.sync()?;
    Ok(copied)
}

/// The size and CRC32C of the file at `path`, read a megabyte at a time.
pub(crate) fn file_crc32c(fs: &dyn FileSystem, path: &Path) -> Result<(u64, u32)> {
    read_chunks(fs, path, |_| Ok(()))
}

/// Reads the file at `path` a megabyte at a time, handing each chunk to `f`; returns the size
/// and the CRC32C of the bytes read.
fn read_chunks(
    fs: &dyn FileSystem,
    path: &Path,
    mut f: impl FnMut(&[u8]) -> Result<()>,
) -> Result<(u64, u32)> {
    const CHUNK: usize = 1 << 20;
    let file = fs.open(path)?;
    let mut buf = vec![0u8; CHUNK];
    let (mut offset, mut crc) = (0u64, 0u32);
    loop {
        let n = file.read_at(offset, &mut buf)?;
        if n == 0 {
            return Ok((offset, crc));
        }
        crc = crc32c::crc32c_append(crc, &buf[..n]);
        f(&buf[..n])?;
        offset += n as u64;
    }
}

/// Writes `data` to `path` durably: create, append, sync, then sync the parent directory.
pub fn write_file_synced(fs: &dyn FileSystem, path: &Path, data: &[u8]) -> Result<()> {
    let mut f = fs.create(path)?;
    f.append(data)?;
    f.sync()?;
    drop(f);
    if let Some(dir) = path.parent() {
        fs.sync_dir(dir)?;
    }
    Ok(())
}

/// Installs `data` at `path` whole and durably through the file `tmp` beside it: `tmp`
/// written and synced, renamed over `path`, the directory synced (CURRENT, OPTIONS files). A
/// reader sees the old `path` or the new, never a mix; on failure `tmp` is removed (what a
/// crash leaves there the DB's next open deletes). The kill points `points` mark the moments
/// before the rename and before the directory sync.
#[cfg_attr(not(feature = "kill-points"), allow(unused_variables))]
pub(crate) fn install_synced(
    fs: &dyn FileSystem,
    tmp: &Path,
    path: &Path,
    data: &[u8],
    points: [&'static str; 2],
) -> Result<()> {
    let written = (|| {
        let mut f = fs.create(tmp)?;
        f.append(data)?;
        f.sync()?;
        drop(f);
        crate::kill_point!(points[0]);
        fs.rename(tmp, path)?;
        crate::kill_point!(points[1]);
        fs.sync_dir(&parent_dir(path))
    })();
    if written.is_err() {
        let _ = fs.remove(tmp);
    }
    written
}

/// Replaces the file `path` with `data` whole, durably: a new file beside it (`path` with a
/// `.tmp-PID-N` suffix, unique in the process) written and synced, renamed over `path`, then
/// the directory synced. A reader sees the old content or the new, never a mix; on failure
/// the new file is removed and `path` is as it was.
pub fn replace_file_synced(fs: &dyn FileSystem, path: &Path, data: &[u8]) -> Result<()> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp-{}-{n}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let written = write_file_synced(fs, &tmp, data).and_then(|()| fs.rename(&tmp, path));
    if written.is_err() {
        let _ = fs.remove(&tmp);
    }
    written?;
    fs.sync_dir(&parent_dir(path))
}

/// The parent directory of `path`, or `.`.
pub(crate) fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}
