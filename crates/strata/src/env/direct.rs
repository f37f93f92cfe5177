//! Direct I/O on Linux (`O_DIRECT`): reads and writes that bypass the OS page cache, for
//! `Options::use_direct_reads` and `Options::use_direct_io_for_flush_and_compaction`.
//!
//! `O_DIRECT` requires every transfer's file offset, length and memory address to be multiples
//! of the device's logical block size. These handles take that on themselves, so callers use
//! them as any other file:
//!
//! ```text
//!  read_at(offset, len)           file: |....|....|....|....|   ALIGN-byte blocks
//!                                              ^offset   ^offset+len
//!  one pread of the covering blocks        [=========]           into an aligned scratch
//!  then a copy of the asked-for bytes         [~~~~~]            (short only at EOF)
//!
//!  append -> aligned window  [ full blocks | partial block ]     written with pwrite at
//!            file_pos ------^                                    file_pos (aligned)
//!  full:   the window goes to the I/O pool to be written (io_pool.rs) and appends go on in
//!          a second window; a window filled while one is in flight waits for it first
//!  flush:  the window in flight waited for; full blocks written and dropped from the window;
//!          the partial block written zero-padded to a whole block, the file truncated back
//!          to its logical length, and the partial block kept: the next flush rewrites it
//!          with what follows.
//! ```
//!
//! - Writes and memory use [`ALIGN`] = 4096, a multiple of every logical block size in use
//!   (512 and 4096), so they satisfy any device without asking it.
//! - Reads use the file's own direct-I/O offset alignment where the kernel reports it
//!   (`statx` with `STATX_DIOALIGN`, Linux 6.1+; 512 on most disks), else 4096: a point read
//!   of a 4 KiB block that straddles a page boundary then reads 4.5 KiB instead of 8 KiB.
//! - Memory is page-aligned [`PageBuf`]s (mapped from the OS when large, so a dropped window
//!   leaves the process at once); readers keep one scratch buffer per thread. A read already
//!   aligned in offset, length and memory (an iterator's readahead buffer is made so) goes
//!   straight into the caller's buffer.
//! - A file system that refuses `O_DIRECT` (tmpfs, some network file systems) fails the open
//!   with `NotSupported` naming the file and the option to turn off.
//! - Durability is as for buffered files: `flush` hands every appended byte to the device (a
//!   killed process keeps them; there is no page cache to survive in), `sync` adds an
//!   fdatasync for the file's metadata and the device's cache. Between them, a full window
//!   may still be on its way (a killed process may lose it, as a buffered file's unflushed
//!   bytes); a failed background write fails the next call, and every later one.

use std::borrow::Cow;
use std::cell::RefCell;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::io_pool::{self, Pending};
use super::{truncated, RandomAccessFile, WritableFile, SCRATCH_KEEP};
use crate::error::{Error, Result};
use crate::util::page_buf::PageBuf;

/// Alignment of every direct transfer: offset, length and memory address.
pub(crate) const ALIGN: usize = 4096;
const _: () = assert!(ALIGN <= crate::util::page_buf::PAGE, "buffers are page-aligned");

/// Bytes a direct writer gathers before writing them out. A writer has two such windows: one
/// filling while the other is written in the background (`io_pool.rs`).
const WRITE_WINDOW: usize = 512 << 10;

fn round_up(n: u64) -> u64 {
    n.div_ceil(ALIGN as u64) * ALIGN as u64
}

/// The error for a file system that refuses `O_DIRECT`, or an I/O error as usual.
fn open_error(op: &'static str, path: &Path, e: std::io::Error) -> Error {
    if e.raw_os_error() == Some(libc::EINVAL) {
        Error::NotSupported(format!(
            "{}: the file system refuses direct I/O (O_DIRECT; tmpfs does): turn off \
             use_direct_reads and use_direct_io_for_flush_and_compaction for this directory",
            path.display()
        ))
    } else {
        Error::io(op, path, e)
    }
}

/// Opens `path` for direct reads.
pub(crate) fn open(path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
    let file = super::open_read::open_for_reads(path, libc::O_DIRECT)
        .map_err(|e| open_error("open", path, e))?;
    let len = file.metadata().map_err(|e| Error::io("stat", path, e))?.len();
    let align = read_alignment(&file);
    Ok(Arc::new(DirectRandom { path: path.to_path_buf(), file, len, align }))
}

/// The offset and length alignment direct reads of `file` need: the kernel's
/// `stx_dio_offset_align` when it reports one between 512 and [`ALIGN`] (a power of two, and
/// no smaller than the memory alignment it needs, so a read continued after a partial one
/// stays aligned); else [`ALIGN`].
fn read_alignment(file: &File) -> u64 {
    use std::os::fd::AsRawFd;
    // SAFETY: `statx` is all zeros-valid plain data; the kernel writes into it through the
    // pointer, which is valid and exclusive for the call; the path is a NUL-terminated empty
    // string (with AT_EMPTY_PATH the descriptor itself is examined), and the descriptor is
    // open for as long as `file` lives.
    let (r, st) = unsafe {
        let mut st: libc::statx = std::mem::zeroed();
        let r = libc::statx(
            file.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            libc::STATX_DIOALIGN,
            &mut st,
        );
        (r, st)
    };
    let a = u64::from(st.stx_dio_offset_align);
    if r == 0
        && st.stx_mask & libc::STATX_DIOALIGN != 0
        && a.is_power_of_two()
        && (512..=ALIGN as u64).contains(&a)
        && u64::from(st.stx_dio_mem_align) <= a
    {
        a
    } else {
        ALIGN as u64
    }
}

/// Creates (or truncates) `path` for direct writes.
pub(crate) fn create(path: &Path) -> Result<Box<dyn WritableFile>> {
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .map_err(|e| open_error("create", path, e))?;
    Ok(Box::new(DirectWritable::new(path, file)))
}

struct DirectRandom {
    path: PathBuf,
    file: File,
    len: u64,
    /// Offset and length alignment of reads (see [`read_alignment`]); divides [`ALIGN`].
    align: u64,
}

thread_local! {
    /// Each thread's scratch for direct reads, grown to the largest read it made up to
    /// [`SCRATCH_KEEP`].
    static SCRATCH: RefCell<PageBuf> = RefCell::new(PageBuf::new(0));
}

impl DirectRandom {
    /// A read whose offset, length and memory address are all aligned, straight into `buf`:
    /// the scratch buffer's, or the caller's own when it is aligned (a readahead buffer,
    /// `sstable/readahead.rs`, is made so). Short only at the end of the file.
    fn read_in_place(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        let mut got = 0;
        while got < buf.len() {
            match self.file.read_at(&mut buf[got..], offset + got as u64) {
                Ok(0) => break,
                Ok(n) => {
                    got += n;
                    if !(n as u64).is_multiple_of(self.align) {
                        break; // the end of the file
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io("pread (O_DIRECT)", &self.path, e)),
            }
        }
        Ok(got)
    }

    /// Reads the aligned span around `[offset, offset + len)` into this thread's scratch
    /// buffer and returns `f(bytes from offset on, at most len of them)`. A scratch already
    /// lent out (`f` reading a file), or a span over [`SCRATCH_KEEP`], gets a buffer of its
    /// own.
    fn with_span<R>(&self, offset: u64, len: usize, f: impl FnOnce(&[u8]) -> R) -> Result<R> {
        let a = self.align;
        let start = offset - offset % a;
        let end = (offset + len as u64).div_ceil(a) * a;
        let span = (end - start) as usize;
        let skip = (offset - start) as usize;
        let read = |scratch: &mut [u8]| -> Result<R> {
            let got = self.read_in_place(start, scratch)?;
            let n = got.saturating_sub(skip).min(len);
            Ok(f(&scratch[skip..skip + n]))
        };
        if span > SCRATCH_KEEP {
            return read(PageBuf::new(span).as_mut_slice());
        }
        SCRATCH.with(|s| match s.try_borrow_mut() {
            Ok(mut s) => {
                if s.len() < span {
                    *s = PageBuf::new(span.next_power_of_two());
                }
                read(&mut s.as_mut_slice()[..span])
            }
            Err(_) => read(PageBuf::new(span).as_mut_slice()),
        })
    }
}

impl RandomAccessFile for DirectRandom {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let a = self.align;
        if offset.is_multiple_of(a)
            && (buf.len() as u64).is_multiple_of(a)
            && (buf.as_ptr() as usize).is_multiple_of(a as usize)
        {
            return self.read_in_place(offset, buf);
        }
        self.with_span(offset, buf.len(), |bytes| {
            buf[..bytes.len()].copy_from_slice(bytes);
            bytes.len()
        })
    }

    fn read_exact_with(
        &self,
        offset: u64,
        len: usize,
        f: &mut dyn FnMut(Cow<'_, [u8]>),
    ) -> Result<()> {
        if len == 0 {
            f(Cow::Borrowed(&[]));
            return Ok(());
        }
        self.with_span(offset, len, |bytes| {
            if bytes.len() == len {
                f(Cow::Borrowed(bytes));
                Ok(())
            } else {
                Err(truncated(&self.path, offset, len, bytes.len()))
            }
        })?
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn read_alignment(&self) -> u64 {
        self.align
    }
}

struct DirectWritable {
    path: PathBuf,
    file: Arc<File>,
    /// Bytes not yet written for good: `window[..filled]` belongs at `file_pos`.
    window: PageBuf,
    filled: usize,
    /// File offset of `window[0]`, a multiple of `ALIGN`.
    file_pos: u64,
    /// Bytes appended in all.
    len: u64,
    /// The previous full window, being written by the I/O pool (`io_pool.rs`) at the offset
    /// before `file_pos`; it comes back with the write's result and fills next.
    in_flight: Option<Pending<(PageBuf, std::io::Result<()>)>>,
    /// A written window, ready to fill.
    spare: Option<PageBuf>,
    /// A background write failed: the file lacks that window, and every later call fails.
    failed: bool,
}

impl DirectWritable {
    /// A writer of `file` (at `path`, for errors), empty.
    fn new(path: &Path, file: File) -> DirectWritable {
        DirectWritable {
            path: path.to_path_buf(),
            file: Arc::new(file),
            window: PageBuf::new(WRITE_WINDOW),
            filled: 0,
            file_pos: 0,
            len: 0,
            in_flight: None,
            spare: None,
            failed: false,
        }
    }

    /// Waits for the window in flight, if any; its write's error, or one for a failed write
    /// before (sticky: the file has a hole where that window belongs).
    fn settle(&mut self) -> Result<()> {
        if let Some(p) = self.in_flight.take() {
            let e = match p.wait() {
                Some((buf, Ok(()))) => {
                    self.spare = Some(buf);
                    return Ok(());
                }
                Some((_, Err(e))) => e,
                None => std::io::Error::other("the background write panicked"),
            };
            self.failed = true;
            return Err(Error::io("pwrite (O_DIRECT, in the background)", &self.path, e));
        }
        if self.failed {
            return Err(Error::io(
                "pwrite (O_DIRECT)",
                &self.path,
                std::io::Error::other("an earlier write of this file failed"),
            ));
        }
        Ok(())
    }

    /// Hands the full window to the I/O pool and goes on in the spare one. At most one window
    /// is in flight: the one before is waited for first.
    fn write_full_window(&mut self) -> Result<()> {
        self.settle()?;
        let next = self.spare.take().unwrap_or_else(|| PageBuf::new(WRITE_WINDOW));
        let full = std::mem::replace(&mut self.window, next);
        let (file, at) = (Arc::clone(&self.file), self.file_pos);
        self.in_flight = Some(io_pool::run(move || {
            let r = file.write_all_at(&full.as_slice()[..WRITE_WINDOW], at);
            (full, r)
        }));
        self.file_pos += WRITE_WINDOW as u64;
        self.filled = 0;
        Ok(())
    }

    /// Writes `window[..n]` (`n` a multiple of `ALIGN`) at `file_pos`.
    fn write_window(&self, n: usize) -> Result<()> {
        self.file
            .write_all_at(&self.window.as_slice()[..n], self.file_pos)
            .map_err(|e| Error::io("pwrite (O_DIRECT)", &self.path, e))
    }

    /// Writes out every byte: the window in flight, then the full blocks for good, the
    /// partial block zero-padded (the file is then truncated back to `len`) and kept in the
    /// window.
    fn write_out(&mut self) -> Result<()> {
        self.settle()?;
        if self.filled == 0 {
            return Ok(());
        }
        let padded = round_up(self.filled as u64) as usize;
        self.window.as_mut_slice()[self.filled..padded].fill(0);
        self.write_window(padded)?;
        if padded != self.filled {
            self.file.set_len(self.len).map_err(|e| Error::io("ftruncate", &self.path, e))?;
        }
        let full = self.filled / ALIGN * ALIGN;
        if full > 0 {
            self.window.as_mut_slice().copy_within(full..self.filled, 0);
            self.file_pos += full as u64;
            self.filled -= full;
        }
        Ok(())
    }
}

impl WritableFile for DirectWritable {
    fn append(&mut self, mut data: &[u8]) -> Result<()> {
        if self.failed {
            return self.settle();
        }
        while !data.is_empty() {
            let n = data.len().min(WRITE_WINDOW - self.filled);
            self.window.as_mut_slice()[self.filled..self.filled + n].copy_from_slice(&data[..n]);
            self.filled += n;
            self.len += n as u64;
            data = &data[n..];
            if self.filled == WRITE_WINDOW {
                self.write_full_window()?;
            }
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.write_out()
    }

    fn sync(&mut self) -> Result<()> {
        self.write_out()?;
        self.file.sync_data().map_err(|e| Error::io("fdatasync", &self.path, e))
    }

    fn len(&self) -> u64 {
        self.len
    }
}

impl Drop for DirectWritable {
    fn drop(&mut self) {
        // Best effort, as for buffered files: the engine syncs before relying on the bytes.
        let _ = self.write_out();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory on a file system that takes `O_DIRECT`, or `None` (with a message).
    fn direct_dir() -> Option<tempfile::TempDir> {
        let dir = tempfile::tempdir_in(std::env::temp_dir()).ok()?;
        match create(&dir.path().join("probe")) {
            Ok(_) => Some(dir),
            Err(e) => {
                eprintln!("skipped: {e}");
                None
            }
        }
    }

    #[test]
    fn reads_use_the_file_systems_alignment_and_return_exact_bytes() {
        let Some(dir) = direct_dir() else { return };
        let path = dir.path().join("f");
        let data: Vec<u8> = (0..20_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let file = File::open(&path).unwrap();
        let a = read_alignment(&file);
        assert!(a.is_power_of_two() && (512..=ALIGN as u64).contains(&a), "{a}");
        eprintln!("direct read alignment here: {a}");
        let r = open(&path).unwrap();
        // Spans that start and end inside blocks, across a page boundary, and past the end.
        for (off, len) in [(4000u64, 200usize), (511, 2), (0, 1), (19_990, 100), (513, 9000)] {
            let mut buf = vec![0u8; len];
            let n = r.read_at(off, &mut buf).unwrap();
            let end = (off as usize + len).min(data.len());
            assert_eq!(&buf[..n], &data[off as usize..end], "read of {len} at {off}");
        }
        // Aligned in offset, length and memory: read in place, the same bytes; a last unit
        // past the end of the file comes back short.
        assert_eq!(r.read_alignment(), a);
        let a = a as usize;
        for (off, len) in [(0, a), (a, 3 * a), (20_000 / a * a, a), (20_000 / a * a - a, 2 * a)] {
            let mut buf = PageBuf::new(len);
            let n = r.read_at(off as u64, buf.as_mut_slice()).unwrap();
            let end = (off + len).min(data.len());
            assert_eq!(n, end - off, "in-place read of {len} at {off}");
            assert_eq!(&buf.as_slice()[..n], &data[off..end], "in-place read of {len} at {off}");
        }
    }

    #[test]
    fn writes_and_reads_any_offsets_and_lengths() {
        let Some(dir) = direct_dir() else { return };
        let path = dir.path().join("f");
        let data: Vec<u8> =
            (0..3 * WRITE_WINDOW + 12_345).map(|i| (i * 7 + i / 4099) as u8).collect();
        let mut w = create(&path).unwrap();
        // Appends of odd sizes, with flushes (each rewriting the partial block) in between.
        let mut at = 0;
        for (i, step) in
            [1usize, 4095, 4097, 70_000, 3, WRITE_WINDOW + 5].iter().cycle().enumerate()
        {
            let end = (at + step).min(data.len());
            w.append(&data[at..end]).unwrap();
            at = end;
            if i % 3 == 0 {
                w.flush().unwrap();
                assert_eq!(std::fs::metadata(&path).unwrap().len(), at as u64);
            }
            if at == data.len() {
                break;
            }
        }
        w.sync().unwrap();
        assert_eq!(w.len(), data.len() as u64);
        drop(w);
        assert_eq!(std::fs::read(&path).unwrap(), data);
        let r = open(&path).unwrap();
        assert_eq!(r.len(), data.len() as u64);
        for (offset, len) in [
            (0, 1),
            (1, 4096),
            (4095, 2),
            (4096, 4096),
            (12_345, 100_000),
            (data.len() as u64 - 10, 64),
        ] {
            let mut buf = vec![0u8; len];
            let n = r.read_at(offset, &mut buf).unwrap();
            let want = &data[offset as usize..(offset as usize + len).min(data.len())];
            assert_eq!(&buf[..n], want, "read at {offset}, {len} bytes");
        }
        let mut buf = [0u8; 8];
        assert_eq!(r.read_at(data.len() as u64 + 5000, &mut buf).unwrap(), 0);
        // The same ranges lent from the scratch buffer, and a nested read while it is lent.
        for (offset, len) in [(0u64, 1usize), (1, 4096), (4095, 2), (4096, 4096), (12_345, 100_000)]
        {
            let want = &data[offset as usize..offset as usize + len];
            let mut calls = 0;
            r.read_exact_with(offset, len, &mut |bytes| {
                calls += 1;
                assert!(matches!(bytes, Cow::Borrowed(_)), "direct reads lend their buffer");
                assert_eq!(&*bytes, want, "read_exact_with at {offset}, {len} bytes");
                let inner = r.read_exact_at(offset + 1, 10).unwrap();
                assert_eq!(inner, data[offset as usize + 1..offset as usize + 11]);
            })
            .unwrap();
            assert_eq!(calls, 1);
        }
        let end = data.len() as u64;
        let e =
            r.read_exact_with(end - 10, 64, &mut |_| panic!("a short read reaches f")).unwrap_err();
        assert!(e.is_corruption() && e.to_string().contains("wanted 64 bytes, file has 10"), "{e}");
    }

    /// Property: any sequence of appends (with flushes between some) through the aligned write
    /// window leaves exactly the bytes appended, and any reads at random offsets and lengths
    /// through the direct reader return what buffered reads of the same file return.
    #[test]
    fn direct_writes_and_reads_equal_buffered_ones() {
        use proptest::prelude::*;
        let Some(dir) = direct_dir() else { return };
        let config = ProptestConfig { cases: 24, ..ProptestConfig::default() };
        let counter = std::cell::Cell::new(0u32);
        proptest!(config, |(
            appends in proptest::collection::vec((1usize..20_000, any::<bool>()), 1..24),
            reads in proptest::collection::vec((0u64..400_000, 0usize..70_000), 1..40),
            seed in any::<u8>(),
        )| {
            counter.set(counter.get() + 1);
            let path = dir.path().join(format!("p{}", counter.get()));
            let mut written = Vec::new();
            let mut w = create(&path).unwrap();
            for (i, &(len, flush)) in appends.iter().enumerate() {
                let chunk: Vec<u8> =
                    (0..len).map(|j| (j as u8).wrapping_mul(31) ^ seed ^ i as u8).collect();
                w.append(&chunk).unwrap();
                written.extend_from_slice(&chunk);
                if flush {
                    w.flush().unwrap();
                    prop_assert_eq!(std::fs::metadata(&path).unwrap().len(), written.len() as u64);
                }
            }
            w.sync().unwrap();
            drop(w);
            let buffered = std::fs::read(&path).unwrap();
            prop_assert!(buffered == written, "file differs from the bytes appended");
            let r = open(&path).unwrap();
            for &(offset, len) in &reads {
                let mut buf = vec![0u8; len];
                let n = r.read_at(offset, &mut buf).unwrap();
                let start = (offset as usize).min(buffered.len());
                let end = (start + len).min(buffered.len());
                prop_assert!(buf[..n] == buffered[start..end], "read at {} of {}", offset, len);
            }
            std::fs::remove_file(&path).unwrap();
        });
    }

    #[test]
    fn a_thread_keeps_no_scratch_larger_than_a_data_block_read() {
        let Some(dir) = direct_dir() else { return };
        let path = dir.path().join("f");
        let data: Vec<u8> = (0..600_000u32).map(|i| (i % 253) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let r = open(&path).unwrap();
        let kept = || SCRATCH.with(|s| s.borrow().len());
        std::thread::scope(|s| {
            s.spawn(|| {
                // An index-sized read, unaligned: exact bytes, and no scratch kept for it.
                let (off, len) = (1_001u64, 300_000usize);
                let mut buf = vec![0u8; len];
                assert_eq!(r.read_at(off, &mut buf).unwrap(), len);
                assert!(buf == data[1_001..301_001], "large read");
                assert_eq!(kept(), 0, "a span over SCRATCH_KEEP left its buffer behind");
                // A data-block-sized read grows the scratch, within the bound, and reuses it.
                let mut small = vec![0u8; 5_000];
                assert_eq!(r.read_at(70_001, &mut small).unwrap(), small.len());
                assert!(small == data[70_001..75_001], "small read");
                let k = kept();
                assert!((5_000..=SCRATCH_KEEP).contains(&k), "scratch of {k} bytes");
                assert_eq!(r.read_at(1_001, &mut buf).unwrap(), len);
                assert_eq!(kept(), k, "a large read replaced the kept scratch");
            });
        });
    }

    #[test]
    fn a_file_system_without_direct_io_is_a_clear_error() {
        // /dev/shm is tmpfs on Linux, which refuses O_DIRECT.
        let Ok(dir) = tempfile::tempdir_in("/dev/shm") else { return };
        let path = dir.path().join("f");
        match create(&path) {
            Ok(_) => eprintln!("skipped: /dev/shm takes O_DIRECT here"),
            Err(e) => {
                let text = e.to_string();
                assert!(
                    text.contains("refuses direct I/O") && text.contains("use_direct_reads"),
                    "{text}"
                );
            }
        }
    }

    #[test]
    fn a_failed_background_write_fails_the_next_call_and_every_later_one() {
        let Some(dir) = direct_dir() else { return };
        let path = dir.path().join("f");
        std::fs::write(&path, b"").unwrap();
        // Opened for reading only: every pwrite fails (EBADF), here on a pool thread.
        let file = OpenOptions::new().read(true).custom_flags(libc::O_DIRECT).open(&path).unwrap();
        let mut w = DirectWritable::new(&path, file);
        // The first full window goes to the pool: the append itself succeeds.
        w.append(&vec![7u8; WRITE_WINDOW]).unwrap();
        let text = w.flush().unwrap_err().to_string();
        assert!(text.contains("in the background") && text.contains("/f"), "{text}");
        for r in [w.append(b"x"), w.flush(), w.sync()] {
            let text = r.unwrap_err().to_string();
            assert!(text.contains("an earlier write of this file failed"), "{text}");
        }
    }

    #[test]
    fn windows_written_in_the_background_land_in_order_with_a_flush_between() {
        let Some(dir) = direct_dir() else { return };
        let path = dir.path().join("f");
        let data: Vec<u8> = (0..5 * WRITE_WINDOW + 777).map(|i| (i % 253) as u8).collect();
        let mut w = create(&path).unwrap();
        // Whole windows (each handed to the pool while the next fills), a flush while one is
        // in flight, then the rest.
        w.append(&data[..2 * WRITE_WINDOW + 10]).unwrap();
        w.flush().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), &data[..2 * WRITE_WINDOW + 10]);
        w.append(&data[2 * WRITE_WINDOW + 10..]).unwrap();
        drop(w);
        assert_eq!(std::fs::read(&path).unwrap(), data, "dropped without a flush");
    }
}
