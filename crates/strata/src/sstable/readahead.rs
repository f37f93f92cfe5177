//! Readahead for a table iterator's block reads: one larger read of the file serves the next
//! blocks, so a range scan (and, with a fixed size, a compaction) does not pay one small read
//! per block, which under direct I/O (no OS readahead) is a device round trip per block.
//!
//! - **Automatic** (`ReadBlockOptions::readahead_size == 0`): the first two block reads from
//!   the file are exact; from the third read in a row that starts where the previous one
//!   ended (a forward scan), each read takes [`AUTO_INITIAL`] bytes, doubling per read up to
//!   [`AUTO_MAX`]. A backward scan (each read ending where the previous one started) reads
//!   as much before its block the same way. A read elsewhere (a seek) starts over. Point
//!   lookups never read ahead (they do not use iterators).
//! - **Learned** (automatic mode, at a seek): a short scan never reaches the third read, so
//!   each table learns how far its iterators go past the block a seek lands on
//!   ([`ScanStats`], shared by every iterator of the table): blocks read after a seek,
//!   forward and backward, counted up to [`LEARN_RUN`] per seek and halved every
//!   [`DECAY_AT`] seeks. A seek's read also takes, in each direction, the mean rounded to
//!   whole blocks (a half up), each sized as the sought block plus a quarter. A table read by
//!   point-like seeks (a mean below one half) reads exactly as before. A scan that goes on
//!   past a learned read reads ahead automatically from its next read in that direction. Example:
//!   seeks followed by ten `next`s over blocks of ten entries read two blocks per seek, in
//!   two device round trips without this and one with it.
//! - **Fixed** (`readahead_size > 0`, a compaction's `compaction_readahead_size`): every read
//!   from the file takes at least that many bytes. Under direct I/O, where the window is the
//!   iterator's buffer, a scan gets there by doubling from [`FIXED_INITIAL`] (a seek starts
//!   over): a compaction's inputs do not each hold a whole window (2 MiB by default) before
//!   they have read that much, so a compaction that is short, or abandoned at close, or whose
//!   level-0 inputs advance slowly beside a larger level's, holds less. Three more reads per
//!   file reach the full size.
//! - **In the background** (fixed, direct I/O, [`Readahead::with_file`]): each window read
//!   starts a read of the window after it on the I/O pool (`env/io_pool.rs`), so the merging
//!   thread does not wait for the device at every window. Windows are then at most half the
//!   fixed size (two of them take the memory one took), each with [`HEADROOM`] bytes in
//!   front, where the tail of the window before goes when a block spans the two. A read
//!   elsewhere (a seek) drops the window on its way; a failed or short one is read again
//!   synchronously when its bytes are needed, which reports any error as before.
//! - Readahead never goes past the table's last block (the footer's start), nor before its
//!   first byte. A file read with direct I/O transfers whole aligned units
//!   ([`RandomAccessFile::read_alignment`]), and every read keeps the whole span the device
//!   moved, so a block that shares a unit with the one before or after it costs no second
//!   read in a scan either way.
//! - **A buffered file reads wide windows through the OS**: a window of more than
//!   [`OS_CHUNK`] bytes on either side of the block is asked of the OS
//!   ([`RandomAccessFile::prefetch`]), which reads it into its page cache in the background,
//!   and the buffer takes [`OS_CHUNK`] of it at a time. The next request goes out when less
//!   than half of a window is left ahead of the reads, so the device stays ahead of them. A
//!   compaction reading twenty tables then holds twenty small buffers, not twenty windows
//!   (2 MiB each by default), and the OS, which caches those pages anyway, may reclaim them.
//!   Under direct I/O, or where the file refuses the request, the buffer takes the whole
//!   window.
//! - **Planned** (a multi-range scan, `readahead/planned.rs`): the table's blocks the scan's
//!   ranges need, grouped into spans; a block read inside a span reads the whole span with
//!   it (in pieces of at most 2 MiB), whatever the mode. Blocks outside the spans read as
//!   above.
//! - One buffer per iterator, the size of the last read. Blocks found in the block cache
//!   cost no read and leave the state as it is.
//!
//! How many bytes a read takes and from where is decided by pure functions of the reads
//! before, the mode and the table's bounds (`readahead/plan.rs`, with a table of cases); this
//! file holds the buffer and does the I/O (the reads, the OS requests, the background reads)
//! and the learning ([`ScanStats`]).
//!
//! [`AUTO_INITIAL`]: plan::AUTO_INITIAL
//! [`AUTO_MAX`]: plan::AUTO_MAX
//! [`FIXED_INITIAL`]: plan::FIXED_INITIAL
//! [`OS_CHUNK`]: plan::OS_CHUNK

mod plan;
mod planned;

use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

use std::sync::Arc;

use crate::env::io_pool::{self, Pending};
use crate::env::RandomAccessFile;
use crate::error::{Error, Result};
use crate::util::page_buf::PageBuf;
use plan::{plan_background, plan_read, BlockRead, Bounds, Mode, Move, ReadState};
pub(crate) use planned::PlannedSpans;
pub(crate) use planned::ScanPlan;

/// Bytes free in front of a window read in the background, for the tail of the window before
/// it when a block spans the two (a block longer than this is read again whole). A multiple
/// of every read alignment, so the window itself stays aligned.
const HEADROOM: usize = 64 << 10;
/// Blocks after a seek that [`ScanStats`] counts: longer scans reach automatic readahead,
/// and one long scan (a verification, a full iteration) must not teach a table's seeks to
/// read far ahead.
pub(crate) const LEARN_RUN: u32 = 4;
/// [`ScanStats`] halves its counts when this many seeks are counted: recent seeks weigh most.
pub(crate) const DECAY_AT: u32 = 1024;
/// Seeks a table must have seen before its mean is used.
const LEARN_MIN_SEEKS: u32 = 16;

/// How far past the block a seek lands on the iterators of one table go, learned from the
/// reads they make (see the module documentation). Relaxed atomics: a hint for readahead,
/// which a race only blurs.
#[derive(Debug, Default)]
pub(crate) struct ScanStats {
    /// Seeks whose block was read from the file (not found in the block cache).
    seeks: AtomicU32,
    /// Blocks read after those seeks, continuing forward and backward (each at most
    /// [`LEARN_RUN`] per seek).
    forward: AtomicU32,
    backward: AtomicU32,
}

impl ScanStats {
    fn seek(&self) {
        if self.seeks.fetch_add(1, Relaxed) + 1 >= DECAY_AT {
            for c in [&self.seeks, &self.forward, &self.backward] {
                c.store(c.load(Relaxed) / 2, Relaxed);
            }
        }
    }

    fn step(&self, forward: bool) {
        let c = if forward { &self.forward } else { &self.backward };
        c.fetch_add(1, Relaxed);
    }

    /// Counts a block read by an iterator of the table that `moved` so, `steps` blocks after
    /// its last seek: a seek, or one of the first [`LEARN_RUN`] blocks after it.
    #[inline]
    fn count(&self, moved: Move, steps: u32) {
        match moved {
            Move::Seek => self.seek(),
            Move::Forward | Move::Backward if steps < LEARN_RUN => {
                self.step(moved == Move::Forward);
            }
            Move::Forward | Move::Backward => {}
        }
    }

    /// Blocks a seek's read takes (forward, backward) beside the sought one: the mean per
    /// seek, rounded to the nearest whole block (a half up).
    pub fn prefetch_blocks(&self) -> (u32, u32) {
        let seeks = self.seeks.load(Relaxed);
        if seeks < LEARN_MIN_SEEKS {
            return (0, 0);
        }
        let blocks = |n: u32| ((2 * n + seeks) / (2 * seeks)).min(LEARN_RUN);
        (blocks(self.forward.load(Relaxed)), blocks(self.backward.load(Relaxed)))
    }
}

/// One iterator's readahead state and buffer.
#[derive(Debug, Default)]
pub(crate) struct Readahead {
    /// `ReadBlockOptions::readahead_size`: 0 automatic (and learned).
    fixed: usize,
    /// File bytes `[buf_start, buf_start + len)`, at `store[..len]`: aligned as the file's
    /// direct reads need (`room`), and a window of 128 KiB or more is mapped, so it leaves the
    /// process when dropped (`util/page_buf.rs`).
    store: PageBuf,
    /// Where the buffered bytes start in `store`: 0 after a read into it; a window read
    /// ahead starts at [`HEADROOM`], less the tail of the window before it that a block
    /// spanning the two took along.
    base: usize,
    len: usize,
    buf_start: u64,
    /// What the next read's plan starts from (`plan.rs`).
    state: ReadState,
    /// The file range last asked of the OS to read ahead (`prefetch`), empty at first.
    os_window: (u64, u64),
    /// The file refused a `prefetch`: windows go whole into the buffer.
    os_refused: bool,
    /// The file, for reading the next window in the background: set for a fixed readahead
    /// of a direct file ([`Readahead::with_file`]).
    background: Option<BackgroundFile>,
    /// The window after the buffer's, being read by the I/O pool.
    ahead: Option<Ahead>,
    /// A multi-range scan's planned spans (`readahead/planned.rs`): a block inside one reads
    /// the span's piece holding it, whatever the mode.
    planned: Option<PlannedSpans>,
}

/// The file a readahead reads ahead in the background.
struct BackgroundFile(Arc<dyn RandomAccessFile>);

impl std::fmt::Debug for BackgroundFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("BackgroundFile").field(&self.0.path()).finish()
    }
}

/// A window read in the background: the file's bytes from `start`, `span` asked for.
struct Ahead {
    start: u64,
    span: usize,
    read: Pending<(PageBuf, Result<usize>)>,
}

impl std::fmt::Debug for Ahead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ahead")
            .field("start", &self.start)
            .field("span", &self.span)
            .finish_non_exhaustive()
    }
}

impl Readahead {
    pub fn new(fixed: usize) -> Readahead {
        Readahead { fixed, ..Readahead::default() }
    }

    /// [`Readahead::new`] for reads of `file`, which a fixed readahead of a direct file
    /// (read alignment above 1) reads ahead in the background: each window it reads, a
    /// second one after it is read by the I/O pool (`env/io_pool.rs`) while the first one's
    /// blocks are used, each half the fixed size at most, so the two take the memory one
    /// window took before. `read` must be given the same file.
    pub fn with_file(fixed: usize, file: &Arc<dyn RandomAccessFile>) -> Readahead {
        let background =
            (fixed > 0 && file.read_alignment() > 1).then(|| BackgroundFile(Arc::clone(file)));
        Readahead { background, ..Readahead::new(fixed) }
    }

    /// The file's bytes `[offset, offset + len)`, from the buffer or read (with readahead as
    /// the module documentation says, learning from and into `stats`, the table's). Reading
    /// ahead stops at `limit` (the footer's start), rounded up to the file's read alignment,
    /// which the device transfers anyway. Fewer bytes than `len` in the file is `Corruption`
    /// naming it.
    pub fn read(
        &mut self,
        file: &dyn RandomAccessFile,
        offset: u64,
        len: usize,
        limit: u64,
        stats: &ScanStats,
    ) -> Result<&[u8]> {
        let block = BlockRead { offset, len };
        let end = block.end();
        let moved = self.state.movement(block);
        if self.fixed == 0 {
            stats.count(moved, self.state.steps());
        }
        let buf_end = self.buf_start + self.len as u64;
        if offset >= self.buf_start && end <= buf_end {
            self.state = self.state.noted(block, moved);
            let at = (offset - self.buf_start) as usize;
            return Ok(&self.bytes()[at..at + len]);
        }
        if let Some(ahead) = self.ahead.take() {
            let spare = self.take_ahead(ahead, offset, end);
            if self.len > 0 {
                self.state = self.state.noted(block, moved);
                self.read_ahead(spare, limit);
                let at = (offset - self.buf_start) as usize;
                return Ok(&self.bytes()[at..at + len]);
            }
        }
        let bounds = Bounds { limit, file_len: file.len(), align: file.read_alignment().max(1) };
        let planned = self.planned.as_ref().and_then(|p| p.window(block));
        let window = match planned {
            Some(w) => {
                self.state = self.state.noted(block, moved);
                w
            }
            None => self.plan_window(file, block, moved, bounds, stats),
        };
        let (start, stop) = window.span(block, bounds);
        let a = bounds.align;
        let span = (stop - start) as usize;
        let skip = (offset - start) as usize;
        let room = self.room(span, a as usize);
        let mut got = 0;
        while got < span {
            let n = file.read_at(start + got as u64, &mut room[got..])?;
            got += n;
            // A short unit is the end of the file.
            if n == 0 || !(n as u64).is_multiple_of(a) {
                break;
            }
        }
        self.len = got;
        self.buf_start = start;
        if got < skip + len {
            self.len = 0;
            self.state.forget_last();
            return Err(Error::corruption(
                file.path(),
                offset,
                format!(
                    "truncated file: wanted {len} bytes, file has {}",
                    got.saturating_sub(skip)
                ),
            ));
        }
        if self.fixed > 0 && planned.is_none() {
            self.read_ahead(None, limit);
        }
        Ok(&self.bytes()[skip..skip + len])
    }

    /// Plans a read of `block` outside a scan's planned spans (the module documentation's
    /// modes): the window to read, the OS asked to read a wide one ahead.
    fn plan_window(
        &mut self,
        file: &dyn RandomAccessFile,
        block: BlockRead,
        moved: Move,
        bounds: Bounds,
        stats: &ScanStats,
    ) -> plan::Window {
        let mode = Mode::of(self.fixed);
        let plan = plan_read(&self.state, block, moved, mode, bounds, || stats.prefetch_blocks());
        self.state = plan.next;
        let mut window = plan.window;
        if let Some(chunk) = plan.os_chunk {
            if self.os_prefetch(file, window.range(block), chunk.range(block)) {
                window = chunk;
            }
        }
        window
    }

    /// Reads the spans of a multi-range scan as `spans` plans them from now on.
    pub(crate) fn plan_scan(&mut self, spans: PlannedSpans) {
        self.planned = Some(spans);
    }

    /// Takes the window read in the background as the buffer when it holds `[offset, end)`,
    /// with the buffer's tail in front of it when the block begins there (up to
    /// [`HEADROOM`] bytes of it); else (a seek elsewhere, a failed or short read) leaves the
    /// buffer empty, for a read that reports any error itself. Returns the buffer it
    /// replaced, to read the next window into.
    fn take_ahead(&mut self, ahead: Ahead, offset: u64, end: u64) -> Option<PageBuf> {
        let buf_end = self.buf_start + self.len as u64;
        // Bytes of the block before the window, in the buffer's tail: none when the block
        // starts in the window; `None` when the block is neither there nor spanning into it.
        let tail = if ahead.start <= offset {
            Some(0)
        } else if ahead.start == buf_end && self.buf_start <= offset {
            Some((ahead.start - offset) as usize)
        } else {
            None
        };
        let buffered_to = self.base + self.len;
        self.len = 0;
        let Some(tail) = tail.filter(|&t| t <= HEADROOM && end <= ahead.start + ahead.span as u64)
        else {
            // Dropped: the pool finishes the read and frees its buffer.
            return None;
        };
        match ahead.read.wait() {
            Some((mut buf, Ok(got))) if end <= ahead.start + got as u64 => {
                let (from, to) = (self.store.as_slice(), buf.as_mut_slice());
                to[HEADROOM - tail..HEADROOM]
                    .copy_from_slice(&from[buffered_to - tail..buffered_to]);
                let old = std::mem::replace(&mut self.store, buf);
                self.base = HEADROOM - tail;
                self.buf_start = ahead.start - tail as u64;
                self.len = tail + got;
                Some(old)
            }
            _ => None,
        }
    }

    /// Starts reading the window after the buffer's in the background (see
    /// [`Readahead::with_file`]), into `spare` when it is large enough. Nothing past `limit`
    /// (rounded up to the read alignment) or the file's end, nor after a short read (the end
    /// of the file).
    fn read_ahead(&mut self, spare: Option<PageBuf>, limit: u64) {
        let Some(file) = self.background.as_ref().map(|b| Arc::clone(&b.0)) else { return };
        let a = file.read_alignment().max(1);
        // The buffer ends on a unit unless the file ended there.
        let from = self.buf_start + self.len as u64;
        let bounds = Bounds { limit, file_len: file.len(), align: a };
        let (state, window) = plan_background(&self.state, from, self.fixed, bounds);
        self.state = state;
        let Some((from, stop)) = window else { return };
        let span = (stop - from) as usize;
        let fits = |b: &PageBuf| {
            b.len() >= HEADROOM + span
                && (b.as_slice().as_ptr() as usize).is_multiple_of(a as usize)
        };
        let mut buf =
            spare.filter(fits).unwrap_or_else(|| PageBuf::aligned_to(HEADROOM + span, a as usize));
        let read = io_pool::run(move || {
            let room = &mut buf.as_mut_slice()[HEADROOM..HEADROOM + span];
            let mut got = 0;
            let r = loop {
                if got == span {
                    break Ok(got);
                }
                match file.read_at(from + got as u64, &mut room[got..]) {
                    // A short unit is the end of the file.
                    Ok(n) if n == 0 || !(n as u64).is_multiple_of(a) => break Ok(got + n),
                    Ok(n) => got += n,
                    Err(e) => break Err(e),
                }
            };
            (buf, r)
        });
        self.ahead = Some(Ahead { start: from, span, read });
    }

    /// Has the OS read the window `[lo, hi)` ahead, of which the buffer reads `chunk` now:
    /// asks for the part of the window outside the last one asked for (the part past it
    /// forward, before it backward, else all of it) when that part is at least half the
    /// window or holds some of `chunk`; less than that is already on its way. False if the
    /// file refuses (then and from then on).
    fn os_prefetch(
        &mut self,
        file: &dyn RandomAccessFile,
        (lo, hi): (u64, u64),
        chunk: (u64, u64),
    ) -> bool {
        if self.os_refused {
            return false;
        }
        let (was_lo, was_hi) = self.os_window;
        // The part to ask for, and the window asked for once it is.
        let ((from, to), asked) = if was_lo <= lo && lo < was_hi {
            ((was_hi, hi), (was_lo, hi))
        } else if was_lo < hi && hi <= was_hi {
            ((lo, was_lo), (lo, was_hi))
        } else {
            ((lo, hi), (lo, hi))
        };
        let chunk_asked = was_lo <= chunk.0 && chunk.1 <= was_hi;
        if to <= from || (chunk_asked && 2 * (to - from) < hi - lo) {
            return true;
        }
        if !file.prefetch(from, (to - from) as usize) {
            self.os_refused = true;
            return false;
        }
        self.os_window = asked;
        true
    }

    /// The buffered bytes.
    fn bytes(&self) -> &[u8] {
        &self.store.as_slice()[self.base..self.base + self.len]
    }

    /// `span` bytes of buffer at an `align`-aligned address (the memory alignment direct
    /// reads need is at most the file's read alignment; 1 for a buffered file). The store is
    /// replaced, at exactly the size needed, only when too small or misaligned: a doubling
    /// growth would hold twice a compaction's 2 MiB readahead per input file.
    fn room(&mut self, span: usize, align: usize) -> &mut [u8] {
        let aligned = (self.store.as_slice().as_ptr() as usize).is_multiple_of(align);
        if !aligned || span > self.store.len() {
            self.store = PageBuf::aligned_to(span, align);
        }
        self.len = 0;
        self.base = 0;
        &mut self.store.as_mut_slice()[..span]
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Mutex;

    use super::plan::{AUTO_INITIAL, AUTO_MAX, OS_CHUNK};
    use super::*;

    /// A file over bytes that records each read's offset and length.
    struct Counted {
        data: Vec<u8>,
        path: PathBuf,
        reads: Mutex<Vec<(u64, usize)>>,
        bytes: AtomicU64,
        /// `read_alignment`: 1 as a buffered file, a page size as a direct one.
        align: u64,
        /// Whether `prefetch` is taken (an OS file's page cache) or refused.
        os: bool,
        /// Each taken `prefetch`: offset, length, and how many reads came before it.
        asked: Mutex<Vec<(u64, usize, usize)>>,
        /// Reads reaching past this offset fail (an I/O error).
        fail_from: u64,
    }

    impl RandomAccessFile for Counted {
        fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
            self.reads.lock().unwrap().push((offset, buf.len()));
            if offset + buf.len() as u64 > self.fail_from {
                return Err(Error::io("pread", &self.path, std::io::Error::other("injected")));
            }
            let start = (offset as usize).min(self.data.len());
            let n = buf.len().min(self.data.len() - start);
            buf[..n].copy_from_slice(&self.data[start..start + n]);
            self.bytes.fetch_add(n as u64, Ordering::Relaxed);
            Ok(n)
        }
        fn len(&self) -> u64 {
            self.data.len() as u64
        }
        fn path(&self) -> &Path {
            &self.path
        }
        fn read_alignment(&self) -> u64 {
            self.align
        }
        fn prefetch(&self, offset: u64, len: usize) -> bool {
            if self.os {
                let before = self.reads.lock().unwrap().len();
                self.asked.lock().unwrap().push((offset, len, before));
            }
            self.os
        }
    }

    fn file(len: usize) -> Counted {
        Counted {
            data: (0..len).map(|i| (i % 251) as u8).collect(),
            path: PathBuf::from("/db/000001.sst"),
            reads: Mutex::new(Vec::new()),
            bytes: AtomicU64::new(0),
            align: 1,
            os: false,
            asked: Mutex::new(Vec::new()),
            fail_from: u64::MAX,
        }
    }

    /// Reads `blocks` consecutive 1,000-byte blocks from 0, checking each one's bytes.
    fn scan(ra: &mut Readahead, f: &Counted, blocks: u64, limit: u64) {
        for b in 0..blocks {
            let got = ra.read(f, b * 1000, 1000, limit, &ScanStats::default()).unwrap().to_vec();
            assert_eq!(got, f.data[(b * 1000) as usize..(b * 1000 + 1000) as usize], "block {b}");
        }
    }

    #[test]
    fn automatic_readahead_starts_on_a_forward_scan_and_grows() {
        let f = file(2_000_000);
        let mut ra = Readahead::new(0);
        scan(&mut ra, &f, 1_500, 1_600_000);
        let reads = f.reads.lock().unwrap().clone();
        // Two exact reads, then 8 KiB doubling to 256 KiB: far fewer reads than blocks.
        assert_eq!(&reads[..2], &[(0, 1000), (1000, 1000)]);
        assert_eq!(reads[2], (2000, AUTO_INITIAL));
        assert_eq!(reads[3].1, 2 * AUTO_INITIAL);
        assert!(reads.iter().all(|&(_, n)| n <= AUTO_MAX));
        assert!(reads.len() < 15, "{} reads for 1,500 blocks", reads.len());
        // Nothing at or past the limit was read.
        assert!(reads.iter().all(|&(o, n)| o + n as u64 <= 1_600_000), "{reads:?}");
    }

    #[test]
    fn a_seek_elsewhere_starts_over() {
        let f = file(1_000_000);
        let mut ra = Readahead::new(0);
        scan(&mut ra, &f, 10, 1_000_000);
        let before = f.reads.lock().unwrap().len();
        // A block far away: exact read, and the next two as well before readahead resumes.
        for b in [500u64, 501, 502] {
            assert_eq!(
                ra.read(&f, b * 1000, 1000, 1_000_000, &ScanStats::default()).unwrap(),
                &f.data[(b * 1000) as usize..(b * 1000 + 1000) as usize]
            );
        }
        let reads = f.reads.lock().unwrap().clone();
        assert_eq!(&reads[before..], &[(500_000, 1000), (501_000, 1000), (502_000, AUTO_INITIAL)]);
    }

    #[test]
    fn a_fixed_size_reads_that_much_from_the_first_read() {
        let f = file(1_000_000);
        let mut ra = Readahead::new(100_000);
        scan(&mut ra, &f, 950, 950_000);
        let reads = f.reads.lock().unwrap().clone();
        assert_eq!(reads.len(), 10, "{reads:?}");
        assert_eq!(reads[0], (0, 100_000));
        // The last read stops at the limit.
        assert_eq!(*reads.last().unwrap(), (900_000, 50_000));
    }

    #[test]
    fn a_direct_fixed_readahead_doubles_up_to_its_size_and_a_seek_starts_over() {
        let f = Counted { align: 4096, ..file(8 << 20) };
        let mut ra = Readahead::new(1 << 20);
        let limit = 8 << 20;
        let mut at = 0;
        while at < 3 << 20 {
            ra.read(&f, at, 1000, limit, &ScanStats::default()).unwrap();
            at += 1000;
        }
        let sizes: Vec<usize> = f.reads.lock().unwrap().iter().map(|r| r.1).collect();
        let k = 256 << 10;
        // Each read is aligned, so it may take up to a unit more than its nominal size.
        let nominal = [k, 2 * k, 4 * k, 4 * k, 4 * k];
        assert_eq!(sizes.len(), nominal.len(), "read sizes {sizes:?}");
        for (got, n) in sizes.iter().zip(nominal) {
            assert!((n..n + 8192).contains(got), "read sizes {sizes:?}");
        }
        assert!(ra.store.len() <= (1 << 20) + 8192, "buffer of {} bytes", ra.store.len());
        // A seek elsewhere starts again from FIXED_INITIAL.
        f.reads.lock().unwrap().clear();
        ra.read(&f, 6 << 20, 1000, limit, &ScanStats::default()).unwrap();
        assert_eq!(f.reads.lock().unwrap()[0], (6 << 20, k));
        // A fixed size below FIXED_INITIAL is read whole at once.
        let mut small = Readahead::new(64 << 10);
        f.reads.lock().unwrap().clear();
        small.read(&f, 0, 1000, limit, &ScanStats::default()).unwrap();
        assert_eq!(f.reads.lock().unwrap()[0], (0, 64 << 10));
    }

    /// A direct file (4 KiB units) shared with a background readahead of `fixed` bytes.
    fn direct(f: Counted, fixed: usize) -> (Arc<Counted>, Readahead) {
        let f = Arc::new(Counted { align: 4096, ..f });
        let dynf: Arc<dyn RandomAccessFile> = f.clone();
        (f, Readahead::with_file(fixed, &dynf))
    }

    #[test]
    fn a_direct_fixed_readahead_reads_the_next_half_window_in_the_background() {
        let (f, mut ra) = direct(file(8 << 20), 2 << 20);
        let limit = 7 << 20;
        // A forward scan to the limit: every block's bytes.
        let mut at = 0;
        while at + 1000 <= limit {
            let got = ra.read(&*f, at, 1000, limit, &ScanStats::default()).unwrap();
            assert!(got == &f.data[at as usize..at as usize + 1000], "block at {at}");
            at += 1000;
        }
        let reads = f.reads.lock().unwrap().clone();
        let k = 256 << 10;
        // The first read is the synchronous FIXED_INITIAL; each after it was read ahead and
        // started where the one before ended, doubling to half the fixed size.
        assert_eq!(reads[0], (0, k));
        for w in reads.windows(2) {
            assert_eq!(w[0].0 + w[0].1 as u64, w[1].0, "reads {reads:?}");
        }
        let sizes: Vec<usize> = reads.iter().map(|r| r.1).collect();
        assert_eq!(&sizes[..3], &[k, 2 * k, 4 * k], "{sizes:?}");
        assert!(sizes.iter().all(|&n| n <= 4 * k), "{sizes:?}");
        // Nothing past the limit (rounded to a unit) was asked for, and the scan read each
        // byte once.
        let end = reads.last().map(|r| r.0 + r.1 as u64).unwrap();
        assert!(end <= limit.div_ceil(4096) * 4096, "read to {end}");
        assert!(end >= limit, "read to {end}");
        // Two windows of half the fixed size at most (each with its headroom): about the
        // memory of one fixed window.
        assert!(ra.store.len() <= HEADROOM + 4 * k + 4096, "buffer of {} bytes", ra.store.len());
    }

    #[test]
    fn a_seek_drops_the_window_read_ahead_and_reads_where_it_lands() {
        let (f, mut ra) = direct(file(8 << 20), 2 << 20);
        let s = ScanStats::default();
        ra.read(&*f, 0, 1000, 8 << 20, &s).unwrap();
        assert!(ra.ahead.is_some(), "a window after the first is on its way");
        let got = ra.read(&*f, 5 << 20, 1000, 8 << 20, &s).unwrap();
        assert!(got == &f.data[5 << 20..(5 << 20) + 1000]);
        // The seek's own read, from FIXED_INITIAL again, and a window after it.
        assert_eq!(ra.buf_start, 5 << 20);
        assert_eq!(ra.ahead.as_ref().map(|a| a.start), Some((5 << 20) + (256 << 10)));
    }

    #[test]
    fn a_block_longer_than_the_headroom_across_two_windows_is_read_whole() {
        let (f, mut ra) = direct(file(6 << 20), 2 << 20);
        let n = 2 * HEADROOM + 1000;
        let mut at = 0;
        while at + n as u64 <= 5 << 20 {
            let got = ra.read(&*f, at, n, 6 << 20, &ScanStats::default()).unwrap();
            assert!(got == &f.data[at as usize..at as usize + n], "block at {at}");
            at += n as u64;
        }
    }

    #[test]
    fn a_failed_background_read_fails_only_the_read_that_needs_its_bytes() {
        // Reads reaching past 600 KB fail: the window read ahead after the first 256 KiB
        // (512 KiB of it) fails in the background.
        let (f, mut ra) = direct(Counted { fail_from: 600_000, ..file(4 << 20) }, 2 << 20);
        let s = ScanStats::default();
        let mut at = 0;
        // Blocks before the failing span read, whatever the window ahead holds.
        while at + 1000 <= 256 << 10 {
            assert!(ra.read(&*f, at, 1000, 4 << 20, &s).is_ok(), "block at {at}");
            at += 1000;
        }
        // The first block of the failed window is read again, synchronously: it reaches past
        // the failing offset too, and its error is the file's own, naming it.
        let e = ra.read(&*f, at, 1000, 4 << 20, &s).unwrap_err();
        assert!(e.to_string().contains("000001.sst"), "{e}");
        // A short read ahead window (a file that ends inside it) serves the bytes it has.
        let (f, mut ra) = direct(file(300_000), 2 << 20);
        let mut at = 0;
        while at + 1000 <= 300_000 {
            let got = ra.read(&*f, at, 1000, 300_000, &s).unwrap();
            assert!(got == &f.data[at as usize..at as usize + 1000], "block at {at}");
            at += 1000;
        }
    }

    #[test]
    fn a_short_file_is_corruption_naming_it() {
        let f = file(1500);
        let mut ra = Readahead::new(0);
        let e = ra.read(&f, 1000, 1000, 10_000, &ScanStats::default()).unwrap_err();
        assert!(e.is_corruption());
        assert!(e.to_string().contains("000001.sst"), "{e}");
        // The state is usable after the error.
        assert_eq!(ra.read(&f, 0, 1000, 10_000, &ScanStats::default()).unwrap(), &f.data[..1000]);
    }

    #[test]
    fn a_direct_read_keeps_the_aligned_span_it_transferred() {
        let f = Counted { align: 4096, ..file(10_000) };
        let mut ra = Readahead::new(0);
        let expect = |o: usize| &f.data[o..o + 1000];
        // One read of the unit around the block; the next block in that unit costs nothing.
        assert_eq!(ra.read(&f, 5000, 1000, 10_000, &ScanStats::default()).unwrap(), expect(5000));
        assert_eq!(ra.read(&f, 6000, 1000, 10_000, &ScanStats::default()).unwrap(), expect(6000));
        assert_eq!(f.reads.lock().unwrap().clone(), [(4096, 4096)]);
        // A block before the span, across a unit boundary: both units, one read, and then a
        // backward step within them costs nothing.
        assert_eq!(
            ra.read(&f, 3500, 1000, 10_000, &ScanStats::default()).unwrap(),
            &f.data[3500..4500]
        );
        assert_eq!(
            ra.read(&f, 2500, 1000, 10_000, &ScanStats::default()).unwrap(),
            &f.data[2500..3500]
        );
        // The last unit is asked for whole (an aligned read); the file ends inside it.
        assert_eq!(ra.read(&f, 9000, 1000, 10_000, &ScanStats::default()).unwrap(), expect(9000));
        assert_eq!(f.reads.lock().unwrap().clone(), [(4096, 4096), (0, 8192), (8192, 4096)]);
    }

    /// Reads through a new `Readahead` per seek (as a DB iterator per operation does): the
    /// block `b`, then `then` (the next or previous block, or none).
    fn seek_then(f: &Counted, stats: &ScanStats, b: u64, then: Option<u64>) {
        let mut ra = Readahead::new(0);
        for b in std::iter::once(b).chain(then) {
            let got = ra.read(f, b * 1000, 1000, 1_000_000, stats).unwrap();
            assert_eq!(got, &f.data[(b * 1000) as usize..(b * 1000 + 1000) as usize], "block {b}");
        }
    }

    /// Seeks each followed by the next block (or, `backward`, the previous one): two exact
    /// reads per seek while the table learns (15 seeks), then one read per seek of the block
    /// and its neighbour's share (a block and a quarter) on that side.
    #[test]
    fn seeks_followed_by_a_neighbour_learn_to_read_it_with_the_seek() {
        for backward in [false, true] {
            let f = file(1_000_000);
            let stats = ScanStats::default();
            let block = |i: u64| 10 + i * 20;
            for i in 0..40u64 {
                let then = if backward { block(i) - 1 } else { block(i) + 1 };
                seek_then(&f, &stats, block(i), Some(then));
            }
            let reads = f.reads.lock().unwrap().clone();
            assert_eq!(reads.len(), 2 * 15 + 25, "backward {backward}: {reads:?}");
            for (k, &r) in reads[30..].iter().enumerate() {
                let at = block(15 + k as u64) * 1000;
                let want = if backward { (at - 1250, 2250) } else { (at, 2250) };
                assert_eq!(r, want, "backward {backward}: {reads:?}");
            }
            let learned = if backward { (0, 1) } else { (1, 0) };
            assert_eq!(stats.prefetch_blocks(), learned);
        }
    }

    #[test]
    fn point_seeks_and_one_long_scan_learn_nothing() {
        let f = file(2_000_000);
        let stats = ScanStats::default();
        // One full scan counts at most LEARN_RUN blocks for its one seek.
        let mut ra = Readahead::new(0);
        for b in 0..1000 {
            ra.read(&f, b * 1000, 1000, 2_000_000, &stats).unwrap();
        }
        for i in 0..100u64 {
            seek_then(&f, &stats, i * 10, None);
        }
        assert_eq!(stats.prefetch_blocks(), (0, 0));
        let reads = f.reads.lock().unwrap().clone();
        assert!(reads[reads.len() - 100..].iter().all(|&(_, n)| n == 1000), "{reads:?}");
    }

    #[test]
    fn fewer_than_half_the_seeks_scanning_on_learns_nothing_and_old_seeks_fade() {
        let stats = ScanStats::default();
        let f = file(1_000_000);
        // One seek in three reads the next block too: a mean of one third.
        for i in 0..60u64 {
            seek_then(&f, &stats, i * 10, (i % 3 == 0).then_some(i * 10 + 1));
        }
        assert_eq!(stats.prefetch_blocks(), (0, 0));
        // Every seek scanning on: learned; then point seeks only: the counts halve every
        // DECAY_AT seeks, and the mean falls below one half again.
        for i in 0..200u64 {
            seek_then(&f, &stats, (i * 10) % 990, Some((i * 10) % 990 + 1));
        }
        assert_eq!(stats.prefetch_blocks(), (1, 0));
        for i in 0..(2 * DECAY_AT as u64) {
            seek_then(&f, &stats, i % 900, None);
        }
        assert_eq!(stats.prefetch_blocks(), (0, 0));
        assert!(stats.seeks.load(Relaxed) < DECAY_AT);
    }

    #[test]
    fn a_scan_past_a_learned_read_reads_ahead_from_its_next_read() {
        let f = file(1_000_000);
        let stats = ScanStats::default();
        let scan_from = |b: u64| {
            let mut ra = Readahead::new(0);
            for b in b..b + 12 {
                ra.read(&f, b * 1000, 1000, 1_000_000, &stats).unwrap();
            }
        };
        for i in 0..20u64 {
            scan_from(i * 20);
        }
        // Each seek counted LEARN_RUN blocks after it, not eleven.
        assert_eq!(stats.prefetch_blocks(), (LEARN_RUN, 0));
        let before = f.reads.lock().unwrap().len();
        scan_from(500);
        let reads = f.reads.lock().unwrap().clone();
        assert_eq!(&reads[before..], &[(500_000, 6000), (506_000, AUTO_INITIAL)]);
    }

    #[test]
    fn automatic_readahead_grows_backward_on_a_backward_scan() {
        let f = file(2_000_000);
        let mut ra = Readahead::new(0);
        for b in (0..1500u64).rev() {
            let got = ra.read(&f, b * 1000, 1000, 2_000_000, &ScanStats::default()).unwrap();
            assert_eq!(got, &f.data[(b * 1000) as usize..(b * 1000 + 1000) as usize], "block {b}");
        }
        let reads = f.reads.lock().unwrap().clone();
        assert_eq!(&reads[..2], &[(1_499_000, 1000), (1_498_000, 1000)]);
        assert_eq!(reads[2], (1_497_000 - AUTO_INITIAL as u64, AUTO_INITIAL + 1000));
        assert!(reads.len() < 15, "{} reads for 1,500 blocks", reads.len());
        assert_eq!(reads.last().unwrap().0, 0);
    }

    /// Checks a scan of a buffered file whose OS reads ahead: no read takes more than
    /// [`OS_CHUNK`] beside its 1,000-byte block, and before each read the OS was asked for
    /// every byte it reads and, in a forward scan with a fixed `window`, for half the window
    /// from where it starts (the window ends at `limit`).
    fn check_os_windows(f: &Counted, window: u64, limit: u64) {
        let reads = f.reads.lock().unwrap().clone();
        let asked = f.asked.lock().unwrap().clone();
        // Reads before the first request took windows of up to OS_CHUNK into the buffer.
        let first = asked.first().map_or(reads.len(), |a| a.2);
        for (i, &(o, n)) in reads.iter().enumerate().skip(first) {
            assert!(n <= OS_CHUNK + 1000, "read {i} at {o} takes {n} bytes");
            let covers = |lo: u64, hi: u64| {
                let mut spans: Vec<(u64, u64)> = asked
                    .iter()
                    .filter(|a| a.2 <= i)
                    .map(|&(ao, an, _)| (ao, ao + an as u64))
                    .collect();
                spans.sort_unstable();
                let mut at = lo;
                for (s, e) in spans {
                    if s <= at && e > at {
                        at = e;
                    }
                }
                at >= hi
            };
            let (lo, hi) = (o, o + (n as u64).max(window.min(limit - o) / 2));
            assert!(
                covers(lo, hi),
                "read {i} ({o}, {n}): [{lo}, {hi}) not asked of the OS: {asked:?}"
            );
        }
    }

    #[test]
    fn a_buffered_file_reads_a_compaction_window_through_the_os() {
        let f = Counted { os: true, ..file(8_000_000) };
        let window = 2 << 20;
        let mut ra = Readahead::new(window);
        scan(&mut ra, &f, 7_900, 7_900_000);
        // Half a window at least stays asked for ahead of where every read starts.
        check_os_windows(&f, window as u64, 7_900_000);
        let asked = f.asked.lock().unwrap().clone();
        assert!(asked.len() <= 10, "{} requests for 8 windows' worth: {asked:?}", asked.len());
        // Nothing is asked twice, nor past the limit.
        for w in asked.windows(2) {
            assert!(w[1].0 >= w[0].0 + w[0].1 as u64, "{asked:?}");
        }
        assert!(asked.iter().all(|&(o, n, _)| o + n as u64 <= 7_900_000), "{asked:?}");
        assert!(ra.store.len() <= OS_CHUNK + 1000, "buffer of {} bytes", ra.store.len());
    }

    #[test]
    fn a_buffered_file_reads_automatic_windows_through_the_os_both_ways() {
        for forward in [true, false] {
            let f = Counted { os: true, ..file(4_000_000) };
            let mut ra = Readahead::new(0);
            let blocks: Vec<u64> =
                if forward { (0..3_900).collect() } else { (0..3_900).rev().collect() };
            for b in blocks {
                let got = ra.read(&f, b * 1000, 1000, 3_900_000, &ScanStats::default()).unwrap();
                assert_eq!(got, &f.data[(b * 1000) as usize..(b * 1000 + 1000) as usize]);
            }
            // Windows up to OS_CHUNK go to the buffer; wider ones (the automatic size grows
            // to AUTO_MAX) to the OS, which stays a chunk ahead of the reads.
            let asked = f.asked.lock().unwrap().clone();
            assert!(!asked.is_empty() && asked.iter().all(|a| a.1 <= AUTO_MAX), "{asked:?}");
            check_os_windows(&f, 0, 3_900_000);
            assert!(ra.store.len() <= OS_CHUNK + 1000, "buffer of {} bytes", ra.store.len());
            let reads = f.reads.lock().unwrap().len();
            assert!(reads < 3_900 / 50, "{reads} reads for 3,900 blocks");
        }
    }
}
