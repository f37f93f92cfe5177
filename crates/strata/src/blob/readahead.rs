//! Readahead for blob reads in file order. A flush or compaction writes a blob file's records
//! in key order, so a scan over values kept in blob files (an iterator reading its values, or
//! a compaction relocating them) reads each file's records one after another, the files'
//! reads interleaved when the scan's values lie in several. A thread follows its reads of up
//! to [`MAX_FILES`] files (the least recently read goes first); after [`STREAK`] reads of a
//! file in a row, each in order, the next one in order reads a window ahead, doubling from
//! 8 KiB up to 2 MiB (less when several windows share this thread's [`BUDGET`]), which serves
//! the next records of its file. A read out of order drops its file's window (and its
//! memory). Point reads in random order never start one. A short scan whose values lie in
//! many files has a few of them next to each other in one file: those start no window or a
//! small one, so the scan reads little it does not use. The state is per thread, as an
//! iterator runs on one thread; it works alike with direct I/O, where the OS reads nothing
//! ahead.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::env::RandomAccessFile;
use crate::error::Result;
use crate::statistics::{start_timer, Histogram, Statistics, StopWatch};

const MIN_WINDOW: usize = 8 << 10;
const MAX_WINDOW: usize = 2 << 20;
/// The files whose reads a thread follows at once: a compaction collecting garbage reads
/// the live values of the oldest quarter of the blob files, interleaved in key order.
const MAX_FILES: usize = 16;
/// The bytes a thread's windows share: each refill is capped at this over the number of
/// windows in use (never below [`MIN_WINDOW`]), so together they hold about this much.
const BUDGET: usize = 4 << 20;
/// A file's reads in a row, each in order after the one before, before the next one in
/// order reads ahead.
const STREAK: u32 = 2;
/// A read starting at most this far past the end of the previous one is still in order
/// (records in between belong to keys the scan skipped).
const MAX_GAP: u64 = 64 << 10;

/// A process-unique id for an open blob file (reader), so that a thread's window is never
/// mistaken for another file's.
pub(crate) fn new_file_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// What a thread knows of its reads of one file.
struct Window {
    file_id: u64,
    /// Where the previous read ended.
    next: u64,
    /// The bytes read ahead, from file offset `start`.
    start: u64,
    buf: Vec<u8>,
    /// The window's size (0: no window).
    size: usize,
    /// This file's reads in a row, each in order after the one before (the first counts).
    streak: u32,
    /// When this file was last read (a count of this thread's reads), for eviction.
    used: u64,
}

impl Window {
    /// No window: where `file_id`'s last read ended and how many came in order before.
    fn empty(file_id: u64, next: u64, streak: u32, used: u64) -> Window {
        Window { file_id, next, start: 0, buf: Vec::new(), size: 0, streak, used }
    }
}

#[derive(Default)]
struct Windows {
    files: Vec<Window>,
    reads: u64,
}

impl Windows {
    /// Where the window of `file_id` is in `files`, made (empty, evicting the least recently
    /// read) if missing.
    fn of(&mut self, file_id: u64) -> usize {
        self.reads += 1;
        let used = self.reads;
        let at = match self.files.iter().position(|w| w.file_id == file_id) {
            Some(at) => at,
            None => {
                // No read in order yet: the first read of the file starts no window.
                let w = Window::empty(file_id, u64::MAX, 0, used);
                if self.files.len() < MAX_FILES {
                    self.files.push(w);
                    self.files.len() - 1
                } else {
                    let at = (0..self.files.len())
                        .min_by_key(|&i| self.files[i].used)
                        .unwrap_or_default();
                    self.files[at] = w;
                    at
                }
            }
        };
        self.files[at].used = used;
        at
    }

    /// The largest window a file may have: the budget shared by the files this thread reads
    /// in order.
    fn cap(&self) -> usize {
        let reading = self.files.iter().filter(|w| w.size > 0).count().max(1);
        (BUDGET / reading).clamp(MIN_WINDOW, MAX_WINDOW)
    }
}

thread_local! {
    static WINDOWS: RefCell<Windows> = RefCell::new(Windows::default());
}

/// Reads `len` bytes at `start` of file `file_id` (`file`, whose records end at `limit`) and
/// passes them to `f`: from this thread's window of that file when it holds them, else
/// through a new window when the read follows the file's previous one in order, else
/// straight from the file. Each read of the file (not `f`'s work) is timed in
/// `rocksdb.blobdb.blob.file.read.micros` of `stats`; a read from a window reads no file.
pub(crate) fn read<R>(
    file_id: u64,
    file: &(dyn RandomAccessFile + 'static),
    start: u64,
    len: usize,
    limit: u64,
    stats: Option<&Arc<Statistics>>,
    f: impl FnOnce(&[u8]) -> R,
) -> Result<R> {
    WINDOWS.with(|ws| {
        let mut ws = ws.borrow_mut();
        let end = start + len as u64;
        let at = ws.of(file_id);
        let w = &mut ws.files[at];
        if start >= w.start && end <= w.start + w.buf.len() as u64 {
            w.next = end;
            let at = (start - w.start) as usize;
            return Ok(f(&w.buf[at..at + len]));
        }
        let in_order = start >= w.next && start - w.next <= MAX_GAP;
        if in_order && w.streak >= STREAK {
            let cap = ws.cap();
            let w = &mut ws.files[at];
            w.size = (w.size * 2).clamp(MIN_WINDOW, cap);
            let want =
                (w.size as u64).max(len as u64).min(limit.saturating_sub(start).max(len as u64));
            let bytes = {
                let _timer = StopWatch::start(stats, Histogram::BlobDbBlobFileReadMicros);
                file.read_exact_at(start, want as usize)?
            };
            w.buf = bytes;
            w.start = start;
            w.next = end;
            return Ok(f(&w.buf[..len]));
        }
        // Too few reads in order yet (no window), or out of order (its window and memory go).
        let streak = if in_order { w.streak + 1 } else { 1 };
        *w = Window::empty(file_id, end, streak, w.used);
        drop(ws);
        let mut out = None;
        let mut f = Some(f);
        // The file is read before `f` is called with its bytes: the read's time ends there.
        let began = start_timer(stats);
        let mut read_for = None;
        file.read_exact_with(start, len, &mut |rec| {
            read_for = began.map(|b| b.elapsed());
            if let Some(f) = f.take() {
                out = Some(f(&rec));
            }
        })?;
        if let (Some(s), Some(d)) = (stats, read_for.or_else(|| began.map(|b| b.elapsed()))) {
            s.record_duration(Histogram::BlobDbBlobFileReadMicros, d);
        }
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

    /// `n` files of `len` bytes and their ids.
    fn files(n: usize, len: u64) -> (Vec<Counted>, Vec<u64>) {
        let files: Vec<_> = (0..n)
            .map(|i| Counted { len, reads: AtomicUsize::new(0), path: format!("/{i}.blob").into() })
            .collect();
        let ids = files.iter().map(|_| new_file_id()).collect();
        (files, ids)
    }

    fn check(f: &Counted, id: u64, start: u64, len: usize) {
        let ok = read(id, f, start, len, f.len, None, |b| {
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

    #[test]
    fn neighbours_in_one_file_start_no_window() {
        // A short scan whose values lie in many files: two of them next to each other in one
        // file are read alone, the third in a row reads ahead.
        let f = Counted { len: 1 << 20, reads: AtomicUsize::new(0), path: "/n.blob".into() };
        let id = new_file_id();
        check(&f, id, 50_000, 1000);
        check(&f, id, 51_000, 1000);
        assert!(WINDOWS.with(|ws| ws.borrow().files.iter().all(|w| w.buf.is_empty())));
        check(&f, id, 52_000, 1000);
        check(&f, id, 53_000, 1000);
        assert_eq!(f.reads.load(Ordering::Relaxed), 3);
    }

    #[test]
    fn interleaved_reads_of_several_files_each_read_ahead() {
        // A compaction relocating values in key order: each file's records in order, the
        // files' reads interleaved.
        let (files, ids) = files(11, 4 << 20);
        for r in 0..3000u64 {
            for (f, &id) in files.iter().zip(&ids) {
                check(f, id, r * 1000, 1000);
            }
        }
        for f in &files {
            let reads = f.reads.load(Ordering::Relaxed);
            assert!(reads < 30, "{reads} reads of {} for 3 MB in order", f.path.display());
        }
        // The windows share the budget: none holds more than its share.
        WINDOWS.with(|ws| {
            let ws = ws.borrow();
            let held: usize = ws.files.iter().map(|w| w.buf.len()).sum();
            assert!(held <= BUDGET + MIN_WINDOW, "{held} bytes held");
        });
    }

    #[test]
    fn the_least_recently_read_file_loses_its_window() {
        let (files, ids) = files(MAX_FILES + 1, 1 << 20);
        // Three reads in order of each of the first MAX_FILES: each has a window.
        for (f, &id) in files.iter().zip(&ids).take(MAX_FILES) {
            for at in [0, 1000, 2000] {
                check(f, id, at, 1000);
            }
        }
        // One more file takes the place of the first; the second's next read in order comes
        // from its window, the first's is read alone (no window remembered).
        check(&files[MAX_FILES], ids[MAX_FILES], 0, 1000);
        let (first, second) = (&files[0], &files[1]);
        let before = (first.reads.load(Ordering::Relaxed), second.reads.load(Ordering::Relaxed));
        check(second, ids[1], 3000, 1000);
        check(first, ids[0], 3000, 1000);
        assert_eq!(first.reads.load(Ordering::Relaxed), before.0 + 1);
        assert_eq!(second.reads.load(Ordering::Relaxed), before.1);
    }
}
