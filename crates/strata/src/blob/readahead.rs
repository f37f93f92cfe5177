//! Readahead for blob reads in file order. A flush or compaction writes a blob file's records
//! in key order, so a scan over values kept in blob files (an iterator reading its values, or
//! a compaction relocating them) reads each file's records one after another. A thread whose
//! reads of one blob file come in that order reads a window ahead, doubling from 64 KiB up
//! to 2 MiB, and serves the next records from it; a read out of order, or of another file,
//! drops the window (and its memory). Point reads in random order never start one. The state
//! is per thread, as an iterator runs on one thread; it works alike with direct I/O, where
//! the OS reads nothing ahead.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::env::RandomAccessFile;
use crate::error::Result;

const MIN_WINDOW: usize = 64 << 10;
const MAX_WINDOW: usize = 2 << 20;
/// A read starting at most this far past the end of the previous one is still in order
/// (records in between belong to keys the scan skipped).
const MAX_GAP: u64 = 64 << 10;

/// A process-unique id for an open blob file (reader), so that a thread's window is never
/// mistaken for another file's.
pub(crate) fn new_file_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

#[derive(Default)]
struct Window {
    file_id: u64,
    /// Where the previous read ended.
    next: u64,
    /// The bytes read ahead, from file offset `start`.
    start: u64,
    buf: Vec<u8>,
    /// The window's size (0: reads are not in order).
    size: usize,
}

thread_local! {
    static WINDOW: RefCell<Window> = RefCell::new(Window::default());
}

/// Reads `len` bytes at `start` of file `file_id` (`file`, whose records end at `limit`) and
/// passes them to `f`: from this thread's window when it holds them, else through a new
/// window when the read follows the previous one in order, else straight from the file.
pub(crate) fn read<R>(
    file_id: u64,
    file: &(dyn RandomAccessFile + 'static),
    start: u64,
    len: usize,
    limit: u64,
    f: impl FnOnce(&[u8]) -> R,
) -> Result<R> {
    WINDOW.with(|w| {
        let mut w = w.borrow_mut();
        let end = start + len as u64;
        let same = w.file_id == file_id;
        if same && start >= w.start && end <= w.start + w.buf.len() as u64 {
            w.next = end;
            let at = (start - w.start) as usize;
            return Ok(f(&w.buf[at..at + len]));
        }
        if same && start >= w.next && start - w.next <= MAX_GAP {
            w.size = (w.size * 2).clamp(MIN_WINDOW, MAX_WINDOW);
            let want =
                (w.size as u64).max(len as u64).min(limit.saturating_sub(start).max(len as u64));
            let bytes = file.read_exact_at(start, want as usize)?;
            w.buf = bytes;
            w.start = start;
            w.next = end;
            return Ok(f(&w.buf[..len]));
        }
        // Out of order: no window, and its memory goes.
        *w = Window { file_id, next: end, ..Window::default() };
        drop(w);
        let mut out = None;
        let mut f = Some(f);
        file.read_exact_with(start, len, &mut |rec| {
            if let Some(f) = f.take() {
                out = Some(f(&rec));
            }
        })?;
        out.ok_or_else(|| {
            crate::error::Error::corruption(file.path(), start, "blob record read returned nothing")
        })
    })
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};
    use std::sync::atomic::AtomicUsize;

    use super::*;

    /// A file of `len` bytes (byte i is i % 251) counting its reads.
    struct Counted {
        len: u64,
        reads: AtomicUsize,
        path: PathBuf,
    }

    impl RandomAccessFile for Counted {
        fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
            self.reads.fetch_add(1, Ordering::Relaxed);
            let n = buf.len().min(self.len.saturating_sub(offset) as usize);
            for (i, b) in buf[..n].iter_mut().enumerate() {
                *b = ((offset + i as u64) % 251) as u8;
            }
            Ok(n)
        }
        fn len(&self) -> u64 {
            self.len
        }
        fn path(&self) -> &Path {
            &self.path
        }
    }

    fn check(f: &Counted, id: u64, start: u64, len: usize) {
        let ok = read(id, f, start, len, f.len, |b| {
            b.iter().enumerate().all(|(i, &x)| x == ((start + i as u64) % 251) as u8)
        })
        .unwrap();
        assert!(ok, "bytes at {start}");
    }

    #[test]
    fn reads_in_order_share_windows_and_others_read_alone() {
        let f = Counted { len: 8 << 20, reads: AtomicUsize::new(0), path: "/x.blob".into() };
        let id = new_file_id();
        // 2000 records of 1000 bytes in order, every tenth skipped (a gap).
        let mut at = 0u64;
        for i in 0..2000 {
            if i % 10 != 3 {
                check(&f, id, at, 1000);
            }
            at += 1000;
        }
        let reads = f.reads.load(Ordering::Relaxed);
        assert!(reads < 20, "{reads} reads for 2 MB in order");
        // Random order: one read each, the window dropped.
        let before = f.reads.load(Ordering::Relaxed);
        for i in [900u64, 17, 4000, 33, 2500] {
            check(&f, id, i * 1000, 1000);
        }
        assert_eq!(f.reads.load(Ordering::Relaxed) - before, 5);
        // Another file's reads never use this one's window.
        let g = Counted { len: 1 << 20, reads: AtomicUsize::new(0), path: "/y.blob".into() };
        check(&g, new_file_id(), 0, 1000);
        assert_eq!(g.reads.load(Ordering::Relaxed), 1);
        // Near the end, the window stops at the limit.
        let end = f.len - 5000;
        check(&f, id, end - 3000, 1000);
        check(&f, id, end - 2000, 1000);
        check(&f, id, end - 1000, 1000);
    }
}
