//! The real filesystem, through `std::fs`.

use std::borrow::Cow;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{FileLock, FileSystem, RandomAccessFile, WritableFile};
use crate::error::{Error, Result};

/// The operating system's filesystem.
#[derive(Clone, Copy, Debug, Default)]
pub struct OsFs;

/// Appends are gathered in a buffer that is written out, in one `write`, when it reaches the
/// next multiple of `WRITE_CHUNK` bytes of the file (and at every `flush`/`sync`): a file
/// written without flushes goes out in whole, aligned 1 MiB writes. The alignment matters
/// to the page cache: Linux sizes the folios a buffered write creates by the write's length
/// and offset, so aligned megabyte writes leave a table in large folios, whose pages stay
/// cached or leave together. Unaligned pieces leave it in small folios, and a data block
/// spanning two pages then more often finds one of them evicted: a read request more per
/// such block (with 64 KiB pieces, 0.82 reads per lookup against 0.77 in `bench/io.sh`'s
/// iobuf readrandom; `docs/design.md`).
const WRITE_CHUNK: usize = 1 << 20;
/// The buffer's first capacity: it grows (to `WRITE_CHUNK`) only in a writer that appends
/// that much between flushes, so a WAL or MANIFEST writer keeps a small one.
const FIRST_CAPACITY: usize = 64 * 1024;
/// The largest write `write_zeros_ahead` makes.
#[cfg(unix)]
const ZERO_RUN: usize = 64 * 1024;

/// A sync that comes fewer than this many flushes after the previous one is a frequent one
/// ([`OsWritable::note_sync`]): a WAL synced once a second under load has none, one synced
/// per write group nothing else.
const SYNCED_OFTEN: u64 = 1024;

/// This many frequent syncs in a row end a file's mapping: one is no pattern (a once-a-second
/// sync that came just after the writes began).
const FREQUENT_SYNCS: u32 = 4;

/// A hand-off to the OS (a flush or a sync's write) of at least this many bytes is a large one
/// ([`OsWritable::note_hand_off`]).
const LARGE_HAND_OFF: u64 = 32 * 1024;

/// This many large hand-offs in a row end a file's mapping and its zeros ahead.
const LARGE_HAND_OFFS: u32 = 4;

struct OsWritable {
    path: PathBuf,
    /// Shared with the syncers handed out (`WritableFile::syncer`).
    file: Arc<File>,
    buf: Vec<u8>,
    len: u64,
    /// The file reaches at least this offset on disk (`write_zeros_ahead`).
    zeroed_to: u64,
    /// `map_zeros_ahead` was asked for and no window was refused: the zeros written ahead are
    /// mapped as they are written.
    map_ahead: bool,
    /// A window of the zeros ahead, mapped (`mapped.rs`): flushed bytes inside it are copied
    /// there.
    #[cfg(target_os = "linux")]
    map: Option<super::mapped::Mapping>,
    /// Set with the first mapping, never cleared: every write goes to its own offset, as the
    /// file's cursor stays behind the bytes copied into a mapping.
    placed: bool,
    /// Flushes since the last sync (or since the file was made).
    flushes_since_sync: u64,
    /// Frequent syncs in a row ([`OsWritable::note_sync`]).
    frequent_syncs: u32,
    /// `len` at the last hand-off to the OS, and large hand-offs in a row since
    /// ([`OsWritable::note_hand_off`]).
    handed_to: u64,
    large_hand_offs: u32,
    /// Set by [`LARGE_HAND_OFFS`] large hand-offs in a row, never cleared: no more zeros are
    /// written ahead (`write_zeros_ahead` declines).
    no_zeros: bool,
}

impl OsWritable {
    fn new(path: &Path, file: File, zeroed_to: u64) -> OsWritable {
        OsWritable {
            path: path.to_path_buf(),
            file: Arc::new(file),
            buf: Vec::with_capacity(FIRST_CAPACITY),
            len: 0,
            zeroed_to,
            map_ahead: false,
            #[cfg(target_os = "linux")]
            map: None,
            placed: false,
            flushes_since_sync: 0,
            frequent_syncs: 0,
            handed_to: 0,
            large_hand_offs: 0,
            no_zeros: false,
        }
    }

    /// Counts the bytes appended since the last hand-off to the OS, before they go. The zeros
    /// ahead and their mapping cost by the byte (each byte written twice, the window faulted
    /// in and locked) and save by the hand-off (a `write` call, a size change for a sync to
    /// commit): past a few tens of kilobytes a hand-off costs more their way than with a
    /// plain `pwrite` of its bytes alone (`docs/measurements.md`). So the last of
    /// [`LARGE_HAND_OFFS`] hand-offs in a row, each of at least [`LARGE_HAND_OFF`] bytes, lets
    /// go of the mapping and stops the zeros ahead for good: the WAL's writer then extends
    /// the file past the zeros already written, as after a failed zero write.
    fn note_hand_off(&mut self) {
        let bytes = self.len - std::mem::replace(&mut self.handed_to, self.len);
        match bytes {
            0 => return,
            b if b >= LARGE_HAND_OFF => {
                self.large_hand_offs = self.large_hand_offs.saturating_add(1);
            }
            _ => self.large_hand_offs = 0,
        }
        if self.large_hand_offs >= LARGE_HAND_OFFS {
            self.drop_mapping();
            self.no_zeros = true;
        }
    }

    /// Counts a sync, before it runs. A sync writes back the mapped pages it covers and
    /// write-protects them, and the next copy into such a page faults again: on a file synced
    /// every few flushes that costs more than the system call the mapping saves (a synced
    /// one-thread write took 100-105 µs mapped against 83-90 µs written,
    /// `docs/measurements.md`). So the last of [`FREQUENT_SYNCS`] syncs in a row, each fewer
    /// than [`SYNCED_OFTEN`] flushes after the previous one (or the file's start), lets go of
    /// the mapping for good: later bytes go out with `pwrite`. A sync with nothing flushed
    /// since the last writes nothing back and counts neither way (an idle log synced each
    /// second).
    fn note_sync(&mut self) {
        match std::mem::take(&mut self.flushes_since_sync) {
            0 => return,
            n if n < SYNCED_OFTEN => self.frequent_syncs = self.frequent_syncs.saturating_add(1),
            _ => self.frequent_syncs = 0,
        }
        if self.frequent_syncs >= FREQUENT_SYNCS {
            self.drop_mapping();
        }
    }

    /// Maps `[p, zeroed_to)`, `p` the start of the page holding the first byte not yet handed
    /// to the OS, in place of the window mapped before (`mapped.rs`: the records written
    /// before `p` need no mapping, and a window stays locked in memory). A refusal keeps the
    /// window there was, still valid for what it covers, and maps no more: bytes past it are
    /// written with `pwrite`.
    #[cfg(target_os = "linux")]
    fn map_zeroed(&mut self) {
        use std::os::unix::io::AsRawFd;
        let page = super::mapped::page_size();
        let from = (self.len - self.buf.len() as u64) / page * page;
        if self.map.as_ref().is_some_and(|m| m.end() >= self.zeroed_to) || self.zeroed_to <= from {
            return;
        }
        let Ok(len) = usize::try_from(self.zeroed_to - from) else { return };
        match super::mapped::Mapping::new(self.file.as_raw_fd(), from, len) {
            Some(m) => {
                self.map = Some(m);
                self.placed = true;
            }
            None => self.map_ahead = false,
        }
    }

    /// Lets go of the mapping, and maps no more zeros; later writes still go to their offsets
    /// (`placed`).
    fn drop_mapping(&mut self) {
        #[cfg(target_os = "linux")]
        drop(self.map.take());
        self.map_ahead = false;
    }

    fn write_out(&mut self) -> Result<()> {
        // Once placed, the buffer goes to its own offset: copied into the mapping when it
        // lies inside it, else with `pwrite`.
        #[cfg(unix)]
        if self.placed && !self.buf.is_empty() {
            use std::os::unix::fs::FileExt;
            let at = self.len - self.buf.len() as u64;
            #[cfg(target_os = "linux")]
            let copied = self.map.as_mut().is_some_and(|m| m.write_at(at, &self.buf));
            #[cfg(not(target_os = "linux"))]
            let copied = false;
            let r = if copied {
                Ok(())
            } else {
                self.file
                    .write_all_at(&self.buf, at)
                    .map_err(|e| Error::io("pwrite", &self.path, e))
            };
            self.buf.clear();
            return r;
        }
        if !self.buf.is_empty() {
            let r = (&*self.file).write_all(&self.buf);
            self.buf.clear();
            r.map_err(|e| Error::io("write", &self.path, e))?;
        }
        Ok(())
    }
}

impl WritableFile for OsWritable {
    /// The buffer holds the file's bytes from `len - buf.len()` to `len`; it is written out
    /// when it reaches a multiple of `WRITE_CHUNK` of the file, so with no flush in between
    /// every write starts and ends on such a boundary.
    fn append(&mut self, mut data: &[u8]) -> Result<()> {
        while !data.is_empty() {
            let to_boundary = WRITE_CHUNK - (self.len % WRITE_CHUNK as u64) as usize;
            if self.buf.is_empty()
                && to_boundary == WRITE_CHUNK
                && data.len() >= WRITE_CHUNK
                && !self.placed
            {
                // Whole aligned chunks go out without a copy.
                let whole = data.len() - data.len() % WRITE_CHUNK;
                (&*self.file)
                    .write_all(&data[..whole])
                    .map_err(|e| Error::io("write", &self.path, e))?;
                self.len += whole as u64;
                data = &data[whole..];
                continue;
            }
            let take = to_boundary.min(data.len());
            self.buf.extend_from_slice(&data[..take]);
            self.len += take as u64;
            data = &data[take..];
            if self.len.is_multiple_of(WRITE_CHUNK as u64) {
                self.write_out()?;
            }
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.flushes_since_sync += 1;
        self.note_hand_off();
        self.write_out()
    }

    fn sync(&mut self) -> Result<()> {
        self.note_sync();
        self.note_hand_off();
        self.write_out()?;
        self.file.sync_data().map_err(|e| Error::io("fdatasync", &self.path, e))
    }

    fn len(&self) -> u64 {
        self.len
    }

    /// Positional writes leave the file's cursor, where appends go, where it is (`pwrite`);
    /// Unix only, since Windows' positional write moves the cursor.
    #[cfg(unix)]
    fn write_zeros_ahead(&mut self, to: u64) -> Result<bool> {
        use std::os::unix::fs::FileExt;
        static ZEROS: [u8; ZERO_RUN] = [0; ZERO_RUN];
        if self.no_zeros {
            return Ok(false);
        }
        let mut at = self.zeroed_to.max(self.len);
        while at < to {
            let n = (to - at).min(ZERO_RUN as u64) as usize;
            self.file
                .write_all_at(&ZEROS[..n], at)
                .map_err(|e| Error::io("pwrite", &self.path, e))?;
            at += n as u64;
            self.zeroed_to = at;
        }
        #[cfg(target_os = "linux")]
        if self.map_ahead {
            self.map_zeroed();
        }
        Ok(true)
    }

    fn finish_appends(&mut self) -> Result<()> {
        self.write_out()?;
        self.drop_mapping();
        Ok(())
    }

    fn appends_large(&self) -> bool {
        self.large_hand_offs >= LARGE_HAND_OFFS
    }

    fn map_zeros_ahead(&mut self) -> bool {
        #[cfg(target_os = "linux")]
        {
            self.map_ahead = true;
            self.map_zeroed();
        }
        self.map_ahead
    }

    fn truncate_to_len(&mut self) -> Result<()> {
        self.write_out()?;
        // The mapping must not outlive the bytes it covers.
        self.drop_mapping();
        if self.zeroed_to > self.len {
            self.file.set_len(self.len).map_err(|e| Error::io("ftruncate", &self.path, e))?;
            self.zeroed_to = self.len;
        }
        Ok(())
    }

    fn syncer(&mut self) -> Option<Box<dyn super::FileSyncer>> {
        self.note_sync();
        Some(Box::new(OsSyncer { path: self.path.clone(), file: self.file.clone() }))
    }

    #[cfg(target_os = "linux")]
    fn preallocate(&mut self, bytes: u64) -> Result<()> {
        use std::os::unix::io::AsRawFd;
        let (Ok(offset), Ok(len)) = (libc::off_t::try_from(self.len), libc::off_t::try_from(bytes))
        else {
            return Ok(());
        };
        // SAFETY: `fallocate` takes a file descriptor this struct owns and plain integers; it
        // touches no memory of ours.
        let r = unsafe {
            libc::fallocate(self.file.as_raw_fd(), libc::FALLOC_FL_KEEP_SIZE, offset, len)
        };
        if r != 0 {
            let e = std::io::Error::last_os_error();
            // Not every file system can: then appends allocate as they go.
            if matches!(e.raw_os_error(), Some(libc::EOPNOTSUPP | libc::ENOSYS)) {
                return Ok(());
            }
            return Err(Error::io("fallocate", &self.path, e));
        }
        Ok(())
    }

    #[cfg(target_os = "linux")]
    fn start_writeback(&mut self) -> Result<()> {
        use std::os::unix::io::AsRawFd;
        self.write_out()?;
        // SAFETY: as above, a descriptor we own and integers. Offset 0 and length 0 name the
        // whole file; SYNC_FILE_RANGE_WRITE only starts writeback of dirty pages.
        let r = unsafe {
            libc::sync_file_range(self.file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE)
        };
        if r != 0 {
            return Err(Error::io("sync_file_range", &self.path, std::io::Error::last_os_error()));
        }
        Ok(())
    }
}

/// fdatasync through a shared handle of a file being appended to.
struct OsSyncer {
    path: PathBuf,
    file: Arc<File>,
}

impl super::FileSyncer for OsSyncer {
    fn sync(&self) -> Result<()> {
        self.file.sync_data().map_err(|e| Error::io("fdatasync", &self.path, e))
    }
}

impl Drop for OsWritable {
    fn drop(&mut self) {
        // Best effort: the engine flushes or syncs explicitly before relying on the bytes.
        let _ = self.write_out();
        // Copies into a mapping of pages already dirty leave the modification time at the
        // zeros' write; the file's age (an archived WAL's TTL) counts from its last write.
        if self.placed {
            let _ = self.file.set_modified(std::time::SystemTime::now());
        }
    }
}

struct OsRandom {
    path: PathBuf,
    file: File,
    len: u64,
}

impl OsRandom {
    /// `path` opened for positional reads, with its length as of the open.
    fn open(path: &Path) -> Result<OsRandom> {
        let file =
            super::open_read::open_for_reads(path, 0).map_err(|e| Error::io("open", path, e))?;
        let len = file.metadata().map_err(|e| Error::io("stat", path, e))?.len();
        Ok(OsRandom { path: path.to_path_buf(), file, len })
    }
}

/// One positional read: `pread` on Unix; on Windows `seek_read` (it moves the handle's
/// cursor, which nothing here uses).
#[cfg(unix)]
fn pread(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(file, buf, offset)
}

#[cfg(windows)]
fn pread(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    std::os::windows::fs::FileExt::seek_read(file, buf, offset)
}

thread_local! {
    /// This thread's buffer for [`OsRandom`]'s `read_exact_with`.
    static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl RandomAccessFile for OsRandom {
    #[cfg(target_os = "linux")]
    fn advise_random(&self) {
        use std::os::fd::AsRawFd;
        // SAFETY: posix_fadvise only reads its integer arguments; the descriptor is open for
        // as long as `self.file` lives, which covers the call.
        let _ =
            unsafe { libc::posix_fadvise(self.file.as_raw_fd(), 0, 0, libc::POSIX_FADV_RANDOM) };
    }

    /// `readahead(2)`: the kernel queues the reads and returns without waiting for them (it
    /// reads past a file's `POSIX_FADV_RANDOM` advice, which only stops its own readahead).
    #[cfg(target_os = "linux")]
    fn prefetch(&self, offset: u64, len: usize) -> bool {
        use std::os::fd::AsRawFd;
        let Ok(offset) = libc::off64_t::try_from(offset) else {
            return false;
        };
        // SAFETY: readahead only reads its integer arguments; the descriptor is open for as
        // long as `self.file` lives, which covers the call.
        unsafe { libc::readahead(self.file.as_raw_fd(), offset, len) == 0 }
    }

    /// Reads into this thread's scratch buffer, lent to `f`: a block read decodes (or copies)
    /// the bytes into a buffer of its own, so nothing is allocated or zeroed for the bytes as
    /// read (the scratch is zeroed only as it grows). A read over [`super::SCRATCH_KEEP`], or
    /// one while the scratch is lent out, gets a buffer of its own, as the default does.
    fn read_exact_with(
        &self,
        offset: u64,
        len: usize,
        f: &mut dyn FnMut(Cow<'_, [u8]>),
    ) -> Result<()> {
        let own = |f: &mut dyn FnMut(Cow<'_, [u8]>)| {
            f(Cow::Owned(super::read_exact(self, offset, len)?));
            Ok(())
        };
        if len > super::SCRATCH_KEEP {
            return own(f);
        }
        SCRATCH.with(|cell| {
            let Ok(mut buf) = cell.try_borrow_mut() else { return own(f) };
            if buf.len() < len {
                buf.resize(len, 0);
            }
            let n = self.read_at(offset, &mut buf[..len])?;
            if n != len {
                return Err(super::truncated(&self.path, offset, len, n));
            }
            f(Cow::Borrowed(&buf[..len]));
            Ok(())
        })
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        let mut done = 0;
        while done < buf.len() {
            match pread(&self.file, &mut buf[done..], offset + done as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io("pread", &self.path, e)),
            }
        }
        Ok(done)
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn path(&self) -> &Path {
        &self.path
    }
}

impl FileSystem for OsFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        // Readable too: a WAL's zeros ahead are mapped (`map_zeros_ahead`), which needs it.
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(|e| Error::io("create", path, e))?;
        Ok(Box::new(OsWritable::new(path, file, 0)))
    }

    fn reuse_for_write(&self, old: &Path, new: &Path) -> Result<Box<dyn WritableFile>> {
        fs::rename(old, new).map_err(|e| Error::io("rename", old, e))?;
        // Opened without truncation: writes start at offset 0 and overwrite the old bytes.
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(new)
            .map_err(|e| Error::io("open", new, e))?;
        let size = file.metadata().map_err(|e| Error::io("stat", new, e))?.len();
        Ok(Box::new(OsWritable::new(new, file, size)))
    }

    fn open(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        Ok(Arc::new(OsRandom::open(path)?))
    }

    #[cfg(target_os = "linux")]
    fn open_mapped(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        use std::os::fd::AsRawFd;
        let plain = OsRandom::open(path)?;
        let (fd, len) = (plain.file.as_raw_fd(), plain.len);
        Ok(super::mapped_read::MappedFile::wrap(Box::new(plain), fd, len))
    }

    #[cfg(target_os = "linux")]
    fn open_direct(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        super::direct::open(path)
    }

    #[cfg(target_os = "linux")]
    fn create_direct(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        super::direct::create(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        fs::rename(from, to).map_err(|e| Error::io("rename", from, e))
    }

    fn remove(&self, path: &Path) -> Result<()> {
        fs::remove_file(path).map_err(|e| Error::io("remove", path, e))
    }

    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        let mut out = Vec::new();
        for entry in fs::read_dir(dir).map_err(|e| Error::io("readdir", dir, e))? {
            let entry = entry.map_err(|e| Error::io("readdir", dir, e))?;
            if let Some(name) = entry.file_name().to_str() {
                out.push(name.to_string());
            }
        }
        Ok(out)
    }

    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        fs::create_dir_all(dir).map_err(|e| Error::io("mkdir", dir, e))
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        // Windows has no directory fsync (entries are durable with the file system's metadata
        // journal); on Unix the directory is opened and fsynced.
        if cfg!(windows) {
            return Ok(());
        }
        let d = File::open(dir).map_err(|e| Error::io("open dir", dir, e))?;
        d.sync_all().map_err(|e| Error::io("fsync dir", dir, e))
    }

    fn sync_file(&self, path: &Path) -> Result<()> {
        // Opened for writing (nothing is written): Windows flushes only writable handles.
        let f =
            OpenOptions::new().write(true).open(path).map_err(|e| Error::io("open", path, e))?;
        f.sync_data().map_err(|e| Error::io("fdatasync", path, e))
    }

    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }

    fn is_dir(&self, path: &Path) -> bool {
        path.is_dir()
    }

    fn file_size(&self, path: &Path) -> Result<u64> {
        Ok(fs::metadata(path).map_err(|e| Error::io("stat", path, e))?.len())
    }

    fn modified(&self, path: &Path) -> Result<std::time::SystemTime> {
        let meta = fs::metadata(path).map_err(|e| Error::io("stat", path, e))?;
        meta.modified().map_err(|e| Error::io("stat", path, e))
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        super::os_lock::lock(path)
    }

    fn link(&self, from: &Path, to: &Path) -> Result<()> {
        fs::hard_link(from, to).map_err(|e| Error::io("link", from, e))
    }

    fn remove_dir(&self, dir: &Path) -> Result<()> {
        fs::remove_dir(dir).map_err(|e| Error::io("rmdir", dir, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_read_rename_list() {
        let dir = tempfile::tempdir().unwrap();
        let fs = OsFs;
        let p = dir.path().join("a");
        let mut w = fs.create(&p).unwrap();
        w.append(b"hello ").unwrap();
        w.append(&vec![b'x'; WRITE_CHUNK + 10]).unwrap();
        w.append(b"end").unwrap();
        w.sync().unwrap();
        assert_eq!(w.len(), 6 + WRITE_CHUNK as u64 + 10 + 3);
        drop(w);
        let r = fs.open(&p).unwrap();
        let all = r.read_all().unwrap();
        assert_eq!(&all[..6], b"hello ");
        assert_eq!(&all[all.len() - 3..], b"end");
        assert!(r.read_exact_at(r.len() - 2, 5).unwrap_err().is_corruption());
        let q = dir.path().join("b");
        fs.rename(&p, &q).unwrap();
        fs.sync_dir(dir.path()).unwrap();
        assert_eq!(fs.list(dir.path()).unwrap(), vec!["b".to_string()]);
        fs.remove(&q).unwrap();
        assert!(!fs.exists(&q));
    }

    /// A writable file at `p` with its first megabyte of zeros written ahead and mapped.
    #[cfg(target_os = "linux")]
    fn mapped_writable(p: &Path) -> OsWritable {
        let file = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(p)
            .unwrap();
        let mut w = OsWritable::new(p, file, 0);
        assert!(w.write_zeros_ahead(ZEROS_CHUNK).unwrap());
        assert!(w.map_zeros_ahead(), "the OS's file system maps the zeros ahead");
        w
    }

    #[cfg(target_os = "linux")]
    const ZEROS_CHUNK: u64 = 1 << 20;

    /// Appends and flushes `n` records of 1-201 bytes, keeping the zeros ahead as the WAL's
    /// writer does (half a chunk past the records, in whole chunks); `after(w, i, len)` is
    /// called after record `i`'s flush with its length. Returns the bytes appended.
    #[cfg(target_os = "linux")]
    fn append_records(
        w: &mut OsWritable,
        n: u32,
        mut after: impl FnMut(&mut OsWritable, u32, u64),
    ) -> Vec<u8> {
        let chunk = ZEROS_CHUNK;
        let mut model = Vec::new();
        for i in 0..n {
            let rec: Vec<u8> = (0..=i % 200).map(|j| (i ^ j) as u8 | 1).collect();
            let end = w.len() + rec.len() as u64;
            if end + chunk / 2 > w.zeroed_to {
                w.write_zeros_ahead((end + chunk / 2) / chunk * chunk + chunk).unwrap();
            }
            w.append(&rec).unwrap();
            w.flush().unwrap();
            model.extend_from_slice(&rec);
            after(w, i, rec.len() as u64);
        }
        model
    }

    /// The file at `p` holds `model` and then only zeros.
    #[cfg(target_os = "linux")]
    fn assert_holds(p: &Path, model: &[u8]) {
        let back = fs::read(p).unwrap();
        assert!(back[..model.len()] == *model, "every record reads back");
        assert!(back[model.len()..].iter().all(|&b| b == 0), "the zeros ahead are untouched");
    }

    /// The mapped zeros ahead are a window that moves with the records (`mapped.rs`): through
    /// megabytes of flushed appends it holds each record flushed and ends where the zeros end,
    /// never spanning more than the zeros ahead and a page; every byte reads back, and the
    /// zeros after the records are still zeros.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_mapped_window_moves_with_the_records() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("w");
        let mut w = mapped_writable(&p);
        let page = super::super::mapped::page_size();
        let model = append_records(&mut w, 40_000, |w, _, rec_len| {
            let m = w.map.as_ref().expect("a window stays mapped");
            assert_eq!(m.end(), w.zeroed_to);
            assert!(m.start() <= w.len() - rec_len, "the record was copied in");
            assert!(m.end() - m.start() <= ZEROS_CHUNK * 3 / 2 + page);
        });
        assert!(w.len() > 3 * ZEROS_CHUNK, "the records crossed several windows");
        assert_eq!(fs::metadata(&p).unwrap().len(), w.zeroed_to);
        assert_holds(&p, &model);
    }

    /// A window the system refuses to lock (`RLIMIT_MEMLOCK`, `mapped.rs`) is not mapped: the
    /// first refusal keeps the window there was, the records past it are written with `pwrite`,
    /// no window is asked for again, and every byte reads back in place; a file whose first
    /// window is refused reports that it maps nothing.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_refused_window_falls_back_to_pwrite() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("w");
        let mut w = mapped_writable(&p);
        let first_end = w.map.as_ref().unwrap().end();
        super::super::mapped::REFUSE_LOCK.with(|r| r.set(true));
        let model = append_records(&mut w, 30_000, |_, _, _| {});
        // Refused from the start, a file is not mapped at all and says so.
        let q = dir.path().join("v");
        let mut v = OsWritable::new(&q, fs::File::create(&q).unwrap(), 0);
        assert!(v.write_zeros_ahead(ZEROS_CHUNK).unwrap());
        assert!(!v.map_zeros_ahead(), "a refused first window is no mapping");
        assert!(v.map.is_none());
        super::super::mapped::REFUSE_LOCK.with(|r| r.set(false));
        assert!(w.len() > 2 * ZEROS_CHUNK, "the records went past the first window");
        assert_eq!(w.map.as_ref().map(|m| m.end()), Some(first_end), "the first window stayed");
        assert!(!w.map_ahead, "no window is asked for after a refusal");
        assert_holds(&p, &model);
    }

    /// A mapped file synced every few flushes lets go of its mapping at the last of
    /// `FREQUENT_SYNCS` such syncs in a row and goes on with `pwrite`; one synced every
    /// `SYNCED_OFTEN` flushes keeps it, as does one synced again and again with nothing
    /// flushed in between, or never synced. Every byte reads back.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_file_synced_often_lets_go_of_its_mapping() {
        let dir = tempfile::tempdir().unwrap();
        let frequent = FREQUENT_SYNCS;
        let often = SYNCED_OFTEN as u32;
        // (flushes between syncs, syncs each time, records, whether the mapping stays)
        let cases = [
            (4, 1, 4 * frequent, false),
            (4, 1, 4 * frequent - 1, true),
            (often - 1, 1, (often - 1) * frequent - 1, true),
            (often - 1, 1, (often - 1) * frequent, false),
            (often, 1, 3 * often, true),
            (10, 20, 30, true),
            (1, 0, 50, true),
        ];
        for (n, (every, syncs, count, keeps)) in cases.into_iter().enumerate() {
            let p = dir.path().join(format!("{n}"));
            let mut w = mapped_writable(&p);
            let model = append_records(&mut w, count, |w, i, _| {
                if (i + 1) % every == 0 {
                    for _ in 0..syncs {
                        w.syncer().expect("the OS's files hand out syncers").sync().unwrap();
                    }
                }
            });
            assert_eq!(w.map.is_some(), keeps, "case {n}: every {every} flushes, {syncs} syncs");
            assert_eq!(w.map_ahead, keeps, "case {n}: no window is asked for once let go");
            assert_holds(&p, &model);
        }
    }

    /// A mapped file whose hand-offs to the OS (flushes, or a sync's write) are each at least
    /// `LARGE_HAND_OFF` bytes lets go of its mapping at the last of `LARGE_HAND_OFFS` of them
    /// in a row, and declines zeros ahead from then on; appends go on past the zeros, and
    /// every byte reads back. Fewer in a row, smaller ones, or a small one between keep both.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_file_with_large_hand_offs_lets_go_of_its_mapping_and_zeros() {
        let dir = tempfile::tempdir().unwrap();
        let large = LARGE_HAND_OFF as usize;
        let n = LARGE_HAND_OFFS as usize;
        // Each hand-off: records of this size, records, by sync.
        type HandOff = (usize, usize, bool);
        // (the hand-offs, whether the mapping and the zeros are kept)
        let mut cases: Vec<(Vec<HandOff>, bool)> = vec![
            (vec![(large, 1, false); n], false),
            (vec![(large, 1, false); n - 1], true),
            (vec![(large - 1, 1, false); 3 * n], true),
            // A group of small records is one hand-off: its bytes count.
            (vec![(100, large / 100 + 1, false); n], false),
            (vec![(large, 1, true); n], false),
            ([(3 * large, 1, false), (1, 1, false)].repeat(n), true),
        ];
        let mut mixed = vec![(large, 1, false); n - 1];
        mixed.extend([(10, 1, false)].iter().chain(&vec![(large, 1, true); n - 1]));
        cases.push((mixed, true));
        for (c, (hand_offs, keeps)) in cases.into_iter().enumerate() {
            let p = dir.path().join(format!("{c}"));
            let mut w = mapped_writable(&p);
            let mut model = Vec::new();
            for (i, &(size, records, by_sync)) in hand_offs.iter().enumerate() {
                for r in 0..records {
                    let end = w.len() + size as u64 + ZEROS_CHUNK / 2;
                    if end > w.zeroed_to {
                        let to = (end / ZEROS_CHUNK + 1) * ZEROS_CHUNK;
                        assert_eq!(w.write_zeros_ahead(to).unwrap(), w.map.is_some(), "case {c}");
                    }
                    let rec: Vec<u8> = (0..size).map(|j| (i + r + j) as u8 | 1).collect();
                    w.append(&rec).unwrap();
                    model.extend_from_slice(&rec);
                }
                if by_sync {
                    w.sync().unwrap();
                } else {
                    w.flush().unwrap();
                }
            }
            assert_eq!(w.map.is_some(), keeps, "case {c}: the mapping");
            assert_eq!(w.map_ahead, keeps, "case {c}: windows asked for");
            assert_eq!(!w.no_zeros, keeps, "case {c}: the zeros ahead");
            if !keeps {
                let zeroed = w.zeroed_to;
                assert!(!w.write_zeros_ahead(zeroed + ZEROS_CHUNK).unwrap(), "case {c}");
                assert_eq!(w.zeroed_to, zeroed, "case {c}: a declined zero write writes nothing");
                // Appends go on past the zeros written.
                let rec = vec![7u8; (zeroed - w.len()) as usize + 5000];
                w.append(&rec).unwrap();
                w.flush().unwrap();
                model.extend_from_slice(&rec);
            }
            assert_holds(&p, &model);
        }
    }

    /// A buffered file takes a readahead request (Linux) and reads the same bytes after it,
    /// past its random-access advice; a request past the end is harmless.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_buffered_file_takes_prefetch_requests() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t");
        let data: Vec<u8> = (0..300_000u32).map(|i| (i % 253) as u8).collect();
        std::fs::write(&p, &data).unwrap();
        let r = OsFs.open(&p).unwrap();
        r.advise_random();
        assert!(r.prefetch(4096, 200_000));
        assert!(r.prefetch(250_000, 1 << 20));
        let mut buf = vec![0u8; 100_000];
        assert_eq!(r.read_at(150_000, &mut buf).unwrap(), 100_000);
        assert_eq!(buf, &data[150_000..250_000]);
    }

    /// What reaches the file without a flush ends on a `WRITE_CHUNK` boundary, whatever the
    /// sizes appended; a flush writes what is buffered, and later writes end on the next
    /// boundary again.
    #[test]
    fn unflushed_writes_end_on_chunk_boundaries() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t");
        let mut w = OsFs.create(&p).unwrap();
        let mut model = Vec::new();
        let mut piece = 0u32;
        let mut append = |w: &mut Box<dyn WritableFile>, n: usize, model: &mut Vec<u8>| {
            let data: Vec<u8> = (0..n).map(|i| (i as u32 ^ piece) as u8).collect();
            piece += 1;
            w.append(&data).unwrap();
            model.extend_from_slice(&data);
        };
        let on_disk = || OsFs.file_size(&p).unwrap() as usize;
        // Odd-sized appends: nothing is written before the first boundary.
        while model.len() + 4099 < WRITE_CHUNK {
            append(&mut w, 4099, &mut model);
        }
        assert_eq!(on_disk(), 0);
        append(&mut w, 4099, &mut model);
        assert_eq!(on_disk(), WRITE_CHUNK);
        // A large append from an unaligned offset: up to the last boundary it covers.
        append(&mut w, 2 * WRITE_CHUNK + 77, &mut model);
        assert_eq!(on_disk(), model.len() / WRITE_CHUNK * WRITE_CHUNK);
        // From an aligned offset, whole chunks go out directly and the tail waits.
        let to_boundary = WRITE_CHUNK - model.len() % WRITE_CHUNK;
        append(&mut w, to_boundary, &mut model);
        assert_eq!(on_disk(), model.len());
        append(&mut w, 3 * WRITE_CHUNK + 5, &mut model);
        assert_eq!(on_disk(), model.len() - 5);
        // A flush writes the tail; the next write ends on the next boundary.
        w.flush().unwrap();
        assert_eq!(on_disk(), model.len());
        append(&mut w, WRITE_CHUNK, &mut model);
        assert_eq!(on_disk(), model.len() / WRITE_CHUNK * WRITE_CHUNK);
        w.sync().unwrap();
        assert_eq!(w.len(), model.len() as u64);
        assert_eq!(OsFs.open(&p).unwrap().read_all().unwrap(), model);
    }

    #[cfg(unix)]
    #[test]
    fn zeros_ahead_are_overwritten_by_appends() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("log");
        let mut w = OsFs.create(&p).unwrap();
        w.append(b"head").unwrap();
        // Buffered bytes count: the zeros start after them.
        assert!(w.write_zeros_ahead(3 * ZERO_RUN as u64 + 5).unwrap());
        assert!(w.write_zeros_ahead(10).unwrap(), "already long enough: nothing to do");
        w.append(&vec![b'x'; ZERO_RUN + 1]).unwrap();
        w.sync().unwrap();
        assert_eq!(w.len(), 4 + ZERO_RUN as u64 + 1);
        assert_eq!(OsFs.file_size(&p).unwrap(), 3 * ZERO_RUN as u64 + 5);
        let all = OsFs.open(&p).unwrap().read_all().unwrap();
        assert_eq!(&all[..4], b"head");
        assert!(all[4..5 + ZERO_RUN].iter().all(|&b| b == b'x'));
        assert!(all[5 + ZERO_RUN..].iter().all(|&b| b == 0));
        // A reused file is zero-filled from its old end, never over its old bytes.
        let q = dir.path().join("reused");
        let mut r = OsFs.reuse_for_write(&p, &q).unwrap();
        r.append(b"new").unwrap();
        assert!(r.write_zeros_ahead(4 * ZERO_RUN as u64).unwrap());
        r.flush().unwrap();
        let all = OsFs.open(&q).unwrap().read_all().unwrap();
        assert_eq!(all.len(), 4 * ZERO_RUN);
        assert_eq!(&all[..4], b"newd");
        assert!(all[5..5 + ZERO_RUN].iter().all(|&b| b == b'x'));
    }

    #[test]
    fn link_copy_and_directory_rename() {
        let dir = tempfile::tempdir().unwrap();
        let fs = OsFs;
        let a = dir.path().join("a");
        crate::env::write_file_synced(&fs, &a, b"abc").unwrap();
        let sub = dir.path().join("sub");
        fs.create_dir_all(&sub).unwrap();
        fs.link(&a, &sub.join("l")).unwrap();
        assert_eq!(crate::env::copy_file(&fs, &a, &sub.join("c")).unwrap(), 3);
        let moved = dir.path().join("moved");
        fs.rename(&sub, &moved).unwrap();
        for name in ["l", "c"] {
            assert_eq!(fs.open(&moved.join(name)).unwrap().read_all().unwrap(), b"abc");
            fs.remove(&moved.join(name)).unwrap();
        }
        fs.remove_dir(&moved).unwrap();
        assert!(!fs.exists(&moved));
        assert!(fs.link(&a, &a).is_err(), "linking onto an existing name fails");
    }

    #[test]
    fn lock_is_exclusive() {
        let dir = tempfile::tempdir().unwrap();
        let fs = OsFs;
        let p = dir.path().join("LOCK");
        let l = fs.lock(&p).unwrap();
        assert!(matches!(fs.lock(&p), Err(Error::Locked(_))));
        drop(l);
        fs.lock(&p).unwrap();
    }
}
