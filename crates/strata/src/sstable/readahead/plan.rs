//! The readahead decision, pure: from what an iterator read before ([`ReadState`]), the block
//! it reads now, the mode and the file's bounds, which bytes to read from the file
//! ([`plan_read`]); and for a fixed readahead under direct I/O, which window to read next in
//! the background ([`plan_background`]). No I/O and no buffers: `readahead.rs` holds the
//! buffer (and tells whether it holds a block), asks the OS, reads in the background, and
//! learns from the table's seeks; its module doc says what the modes are for.
//!
//! Contract (the table tests below walk through each point):
//! - **Automatic**: the first two block reads from the file are exact; from the third read
//!   in a row that continues the previous one forward, each read takes [`AUTO_INITIAL`] bytes,
//!   doubling per read up to [`AUTO_MAX`]; backward, as many bytes before the block. A seek
//!   (a read continuing neither way) starts over.
//! - **Learned** (automatic, at a seek): the learned blocks on each side of the sought one
//!   come along, each a block and a quarter, at most [`LEARN_MAX`] bytes a side; a scan that
//!   goes on past them in that direction reads ahead automatically from its next read.
//! - **Fixed**: every read takes at least the fixed size; under direct I/O (read alignment
//!   above 1) it starts at [`FIXED_INITIAL`] (at most the fixed size) after a seek and doubles
//!   per read up to the fixed size.
//! - Never past `limit` (the end of the table's last block) but to finish the aligned unit
//!   the limit falls in, never past the file's last unit, never before the file's start, and
//!   never less than the block. A direct read spans whole aligned units.
//! - A buffered file's window of more than [`OS_CHUNK`] bytes on either side of the block is
//!   for the OS to read ahead: the plan names the part the buffer reads then.

/// The first read of a fixed readahead under direct I/O, doubled per read up to the fixed size.
pub(crate) const FIXED_INITIAL: usize = 256 << 10;
/// The first automatic readahead.
pub(crate) const AUTO_INITIAL: usize = 8 << 10;
/// The largest automatic readahead.
pub(crate) const AUTO_MAX: usize = 256 << 10;
/// Block reads in a row, each starting where the previous ended, before automatic
/// readahead starts.
const AUTO_AFTER_SEQUENTIAL: u32 = 2;
/// The most bytes a learned read takes on either side of the sought block.
pub(crate) const LEARN_MAX: usize = 32 << 10;
/// The most bytes a buffered file's read takes beside its block when the OS reads the rest
/// of the window ahead (see the module documentation of `readahead.rs`).
pub(crate) const OS_CHUNK: usize = 64 << 10;

/// A block read asked of the readahead: the file's bytes `[offset, offset + len)` (a block
/// with its trailer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BlockRead {
    pub offset: u64,
    pub len: usize,
}

impl BlockRead {
    pub(crate) fn end(self) -> u64 {
        self.offset + self.len as u64
    }
}

/// How a block read continues the one before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Move {
    /// It starts where the last block read ended.
    Forward,
    /// It ends where the last block read started.
    Backward,
    /// Neither (or nothing was read before it).
    Seek,
}

/// `ReadBlockOptions::readahead_size` as a mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// 0: automatic, and learned at seeks.
    Automatic,
    /// At least this many bytes per read from the file.
    Fixed(usize),
}

impl Mode {
    pub(crate) fn of(readahead_size: usize) -> Mode {
        if readahead_size == 0 {
            Mode::Automatic
        } else {
            Mode::Fixed(readahead_size)
        }
    }
}

/// What bounds a read from the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Bounds {
    /// Reading ahead stops here: the end of the table's last block (the footer's start).
    pub limit: u64,
    /// The file's length.
    pub file_len: u64,
    /// The file's read alignment (at least 1): 1 for a buffered file, the unit of a direct one.
    pub align: u64,
}

/// What one iterator's readahead decides from, carried from read to read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ReadState {
    /// The file range of the last block read, to tell a scan (forward or backward) from a seek.
    last: Option<(u64, u64)>,
    /// Blocks read since the last seek.
    steps: u32,
    /// Reads from the file in a row that continued the previous one forward, and backward.
    run: u32,
    back_run: u32,
    /// The next automatic readahead.
    auto_size: usize,
    /// The next fixed readahead under direct I/O (see [`FIXED_INITIAL`]).
    fixed_size: usize,
}

impl Default for ReadState {
    fn default() -> Self {
        ReadState {
            last: None,
            steps: 0,
            run: 0,
            back_run: 0,
            auto_size: AUTO_INITIAL,
            fixed_size: 0,
        }
    }
}

impl ReadState {
    /// How a read of `block` continues the last block read.
    #[inline]
    pub(crate) fn movement(&self, block: BlockRead) -> Move {
        let forward = self.last.is_some_and(|(_, e)| e == block.offset);
        let backward = self.last.is_some_and(|(s, _)| s == block.end());
        if forward {
            Move::Forward
        } else if backward {
            Move::Backward
        } else {
            Move::Seek
        }
    }

    /// Blocks read since the last seek (before the one being read).
    #[inline]
    pub(crate) fn steps(&self) -> u32 {
        self.steps
    }

    /// The state once `block` (which `moved` so) is read, whether the buffer or the file holds
    /// it: the last block read, and one more step since the seek (none after a seek).
    #[inline]
    pub(crate) fn noted(&self, block: BlockRead, moved: Move) -> ReadState {
        let steps = if moved == Move::Seek { 0 } else { self.steps.saturating_add(1) };
        ReadState { last: Some((block.offset, block.end())), steps, ..*self }
    }

    /// The next read is a seek, whatever it reads (the last one failed).
    pub(crate) fn forget_last(&mut self) {
        self.last = None;
    }

    /// The fixed readahead for this direct read: [`FIXED_INITIAL`] (at most `size`) after a
    /// seek, then doubling up to `size`.
    fn next_fixed(&mut self, size: usize, seek: bool) -> usize {
        // The first read is a seek (nothing read before it).
        if seek {
            self.fixed_size = FIXED_INITIAL.min(size);
        }
        let n = self.fixed_size;
        self.fixed_size = (n * 2).min(size);
        n
    }

    /// The automatic readahead for this read; the next one doubles, up to [`AUTO_MAX`].
    fn next_auto(&mut self) -> usize {
        let n = self.auto_size;
        self.auto_size = (n * 2).min(AUTO_MAX);
        n
    }
}

/// Bytes of the file around a block: `behind` bytes before its offset and `ahead` bytes from
/// it (the block included).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Window {
    pub behind: usize,
    pub ahead: usize,
}

impl Window {
    /// The file range `[offset - behind, offset + ahead)` around `block`, from the file's
    /// start at the earliest.
    pub(crate) fn range(self, block: BlockRead) -> (u64, u64) {
        (block.offset.saturating_sub(self.behind as u64), block.offset + self.ahead as u64)
    }

    /// The file range `[start, stop)` the buffer reads for this window: whole aligned units,
    /// since the device moves them anyway and the block beside this one (the next of a forward
    /// scan, the previous of a backward one) often lies in the same units, up to the file's
    /// last unit, and at least the block. Aligned up to the file's last unit, a direct read
    /// lands in the buffer in place (no bounce copy, no bounce buffer).
    pub(crate) fn span(self, block: BlockRead, bounds: Bounds) -> (u64, u64) {
        let a = bounds.align;
        let first = block.offset.saturating_sub(self.behind as u64);
        let start = first - first % a;
        let stop = (block.offset + self.ahead as u64)
            .div_ceil(a)
            .saturating_mul(a)
            .min(bounds.file_len.div_ceil(a).saturating_mul(a))
            .max(block.end());
        (start, stop)
    }
}

/// The decision for a block the buffer does not hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ReadPlan {
    /// The state after this read.
    pub next: ReadState,
    /// What to read around the block (its [`Window::span`] is what the buffer reads).
    pub window: Window,
    /// For a buffered file, a window wider than [`OS_CHUNK`] on either side of the block: the
    /// OS is asked to read `window` ahead, and if it takes the request the buffer reads only
    /// this part of it.
    pub os_chunk: Option<Window>,
}

/// Plans the read from the file of `block`, which the buffer does not hold, after the reads
/// `state` describes (before this one; `moved` is [`ReadState::movement`] of `block`).
/// `learned` gives the table's learned blocks (forward, backward) beside a sought one; it is
/// asked only at a seek in automatic mode.
#[inline]
pub(crate) fn plan_read(
    state: &ReadState,
    block: BlockRead,
    moved: Move,
    mode: Mode,
    bounds: Bounds,
    learned: impl FnOnce() -> (u32, u32),
) -> ReadPlan {
    let mut s = state.noted(block, moved);
    match moved {
        Move::Forward => {
            s.run += 1;
            s.back_run = 0;
        }
        Move::Backward => {
            s.back_run += 1;
            s.run = 0;
        }
        Move::Seek => {
            s.run = 0;
            s.back_run = 0;
            s.auto_size = AUTO_INITIAL;
        }
    }
    let len = block.len;
    let (mut ahead, mut behind) = (len, 0);
    match mode {
        Mode::Fixed(size) => {
            // A buffered file's window goes to the OS (`os_chunk`), whole from the first read.
            let n = if bounds.align > 1 { s.next_fixed(size, moved == Move::Seek) } else { size };
            ahead = len.max(n);
        }
        Mode::Automatic if s.run >= AUTO_AFTER_SEQUENTIAL => ahead = len.max(s.next_auto()),
        Mode::Automatic if s.back_run >= AUTO_AFTER_SEQUENTIAL => behind = s.next_auto(),
        Mode::Automatic if moved == Move::Seek => {
            let (f, b) = learned();
            let side = |blocks: u32| (blocks as usize * (len + len / 4)).min(LEARN_MAX);
            ahead = len + side(f);
            behind = side(b);
            // A learned scan that goes on past what the seek took reads ahead at once.
            if f > 0 {
                s.run = AUTO_AFTER_SEQUENTIAL - 1;
            }
            if b > 0 {
                s.back_run = AUTO_AFTER_SEQUENTIAL - 1;
            }
        }
        Mode::Automatic => {}
    }
    let ahead = ahead.min(bounds.limit.saturating_sub(block.offset) as usize).max(len);
    let os_chunk = (bounds.align == 1 && (ahead > len + OS_CHUNK || behind > OS_CHUNK))
        .then(|| Window { behind: behind.min(OS_CHUNK), ahead: ahead.min(len + OS_CHUNK) });
    ReadPlan { next: s, window: Window { behind, ahead }, os_chunk }
}

/// Plans the window a fixed readahead of `size` bytes under direct I/O reads in the
/// background after the buffer, which ends at `from`: the next fixed size ([`plan_read`]'s
/// doubling) but at most half of `size`, up to `limit` rounded up to whole units, and to the
/// file's last unit. `None`, with the state unchanged, when the buffer does not end on a unit
/// (the file ended there); `None` too when nothing is left to read. Returns the state after.
pub(crate) fn plan_background(
    state: &ReadState,
    from: u64,
    size: usize,
    bounds: Bounds,
) -> (ReadState, Option<(u64, u64)>) {
    let a = bounds.align;
    if !from.is_multiple_of(a) {
        return (*state, None);
    }
    let mut s = *state;
    let want = s.next_fixed(size, false).min(size.div_ceil(2)) as u64;
    let stop = (from + want)
        .min(bounds.limit)
        .div_ceil(a)
        .saturating_mul(a)
        .min(bounds.file_len.div_ceil(a).saturating_mul(a));
    (s, (stop > from).then_some((from, stop)))
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    /// A case: a sequence of block reads, and the reads from the file they make.
    struct Case {
        name: &'static str,
        mode: Mode,
        bounds: Bounds,
        /// The table's learned blocks (forward, backward), for a seek's read.
        learned: (u32, u32),
        /// Whether the OS takes the requests to read a buffered file's wide windows ahead.
        os: bool,
        /// The blocks read, in order: (offset, length).
        blocks: Vec<(u64, usize)>,
        /// Each read from the file: (step, i.e. index in `blocks`, offset, length). The other
        /// steps are served by the buffer.
        file_reads: Vec<(usize, u64, u64)>,
    }

    /// `n` blocks of `size` bytes from block `first` on, forward.
    fn forward(first: u64, n: u64, size: usize) -> Vec<(u64, usize)> {
        (first..first + n).map(|b| (b * size as u64, size)).collect()
    }

    /// `n` blocks of `size` bytes from block `first` down, backward.
    fn backward(first: u64, n: u64, size: usize) -> Vec<(u64, usize)> {
        (0..n).map(|i| ((first - i) * size as u64, size)).collect()
    }

    /// A buffered file with its table's blocks ending at `limit`.
    fn buffered(limit: u64, file_len: u64) -> Bounds {
        Bounds { limit, file_len, align: 1 }
    }

    /// A direct file (4 KiB units).
    fn direct(limit: u64, file_len: u64) -> Bounds {
        Bounds { limit, file_len, align: 4096 }
    }

    fn case(name: &'static str, mode: Mode, bounds: Bounds, blocks: Vec<(u64, usize)>) -> Case {
        Case { name, mode, bounds, learned: (0, 0), os: false, blocks, file_reads: Vec::new() }
    }

    fn cases() -> Vec<Case> {
        const K: u64 = 1024;
        vec![
            Case {
                file_reads: vec![
                    (0, 0, 1000),
                    (1, 1000, 1000),
                    (2, 2000, 8 * K),
                    (10, 10_000, 16 * K),
                    (26, 26_000, 32 * K),
                    (58, 58_000, 64 * K),
                    (123, 123_000, 128 * K),
                    (254, 254_000, 256 * K),
                    (516, 516_000, 256 * K),
                ],
                ..case(
                    "automatic: two exact reads, then doubling from the third up to the max",
                    Mode::Automatic,
                    buffered(1_000_000, 1_000_100),
                    forward(0, 700, 1000),
                )
            },
            Case {
                file_reads: vec![
                    (0, 999_000, 1000),
                    (1, 998_000, 1000),
                    (2, 997_000 - 8 * K, 8 * K + 1000),
                    (11, 988_000 - 16 * K, 16 * K + 1000),
                    (28, 971_000 - 32 * K, 32 * K + 1000),
                    (61, 938_000 - 64 * K, 64 * K + 1000),
                    (127, 872_000 - 128 * K, 128 * K + 1000),
                    (259, 740_000 - 256 * K, 256 * K + 1000),
                    (522, 477_000 - 256 * K, 256 * K + 1000),
                    // Not before the file's start.
                    (785, 0, 215_000),
                ],
                ..case(
                    "automatic backward: as much before the block, to the file's start",
                    Mode::Automatic,
                    buffered(1_000_000, 1_000_100),
                    backward(999, 1000, 1000),
                )
            },
            Case {
                file_reads: vec![
                    (0, 0, 1000),
                    (1, 1000, 1000),
                    (2, 2000, 8 * K),
                    (10, 10_000, 16 * K),
                    (12, 500_000, 1000),
                    (13, 501_000, 1000),
                    (14, 502_000, 8 * K),
                ],
                ..case(
                    "a seek starts over: two exact reads, then from the first size",
                    Mode::Automatic,
                    buffered(1_000_000, 1_000_100),
                    [forward(0, 12, 1000), forward(500, 4, 1000)].concat(),
                )
            },
            Case {
                learned: (1, 0),
                // The seek takes the next block and a quarter; the scan going on past it
                // reads ahead at its next read.
                file_reads: vec![(0, 10_000, 2250), (2, 12_000, 8 * K)],
                ..case(
                    "learned forward after a seek",
                    Mode::Automatic,
                    buffered(1_000_000, 1_000_100),
                    forward(10, 3, 1000),
                )
            },
            Case {
                learned: (0, 2),
                // Two blocks and a half before the sought one; the scan going on past them
                // reads ahead backward, to the file's start.
                file_reads: vec![(0, 7500, 3500), (3, 0, 8000)],
                ..case(
                    "learned backward after a seek",
                    Mode::Automatic,
                    buffered(1_000_000, 1_000_100),
                    backward(10, 4, 1000),
                )
            },
            Case {
                learned: (4, 0),
                file_reads: vec![(0, 10 * 16 * K, 16 * K + LEARN_MAX as u64)],
                ..case(
                    "learned: at most LEARN_MAX a side",
                    Mode::Automatic,
                    buffered(1_000_000, 1_000_100),
                    forward(10, 1, 16 << 10),
                )
            },
            Case {
                file_reads: (0..9)
                    .map(|i| (i * 100, i as u64 * 100_000, 100_000))
                    .chain([(900, 900_000, 50_000)])
                    .collect(),
                ..case(
                    "fixed, buffered file: the whole size from the first read, to the limit",
                    Mode::Fixed(100_000),
                    buffered(950_000, 1_000_000),
                    forward(0, 950, 1000),
                )
            },
            Case {
                file_reads: vec![
                    (0, 0, 256 * K),
                    // From the unit the block starts in; the nominal size from the block on.
                    (262, 258_048, 528_384),
                    (786, 782_336, 1_052_672),
                    (1835, 1_830_912, 1_052_672),
                    (2883, 2_879_488, 1_052_672),
                    // A seek: from FIXED_INITIAL again.
                    (3000, 6 << 20, 256 * K),
                ],
                ..case(
                    "fixed under direct I/O: doubling from the initial size, a seek starting over",
                    Mode::Fixed(1 << 20),
                    direct(8 << 20, 8 << 20),
                    [forward(0, 3000, 1000), vec![(6 << 20, 1000)]].concat(),
                )
            },
            Case {
                file_reads: vec![(0, 0, 64 * K)],
                ..case(
                    "fixed under direct I/O below the initial size: the whole size at once",
                    Mode::Fixed(64 << 10),
                    direct(8 << 20, 8 << 20),
                    vec![(0, 1000)],
                )
            },
            Case {
                file_reads: vec![(0, 0, 1000), (1, 1000, 1000), (2, 2000, 8000)],
                ..case(
                    "never past the last block",
                    Mode::Automatic,
                    buffered(10_000, 10_048),
                    forward(0, 10, 1000),
                )
            },
            Case {
                // The block at 4000 shares the first unit: the read starts there. The last read
                // stops at the limit, then finishes its unit (the file ends inside it).
                file_reads: vec![(0, 0, 4096), (4, 0, 8192), (8, 4096, 8192)],
                ..case(
                    "direct: whole units, past the limit only to finish the limit's unit",
                    Mode::Automatic,
                    direct(10_000, 10_048),
                    forward(0, 10, 1000),
                )
            },
            Case {
                // The next block in the unit read costs nothing; a block across a unit
                // boundary takes both units, and a backward step within them nothing; the last
                // unit is asked for whole though the file ends inside it.
                file_reads: vec![(0, 4096, 4096), (2, 0, 8192), (4, 8192, 4096)],
                ..case(
                    "direct: the aligned span read serves the blocks beside",
                    Mode::Automatic,
                    direct(10_000, 10_000),
                    vec![(5000, 1000), (6000, 1000), (3500, 1000), (2500, 1000), (9000, 1000)],
                )
            },
            Case {
                os: true,
                file_reads: vec![
                    (0, 0, 1000 + OS_CHUNK as u64),
                    (66, 66_000, 1000 + OS_CHUNK as u64),
                ],
                ..case(
                    "buffered file: a wide window goes to the OS, the buffer reads a chunk",
                    Mode::Fixed(2 << 20),
                    buffered(8_000_000, 8_000_000),
                    forward(0, 70, 1000),
                )
            },
            Case {
                file_reads: vec![(0, 0, 2 << 20)],
                ..case(
                    "buffered file: the OS refusing, the buffer reads the whole window",
                    Mode::Fixed(2 << 20),
                    buffered(8_000_000, 8_000_000),
                    forward(0, 70, 1000),
                )
            },
        ]
    }

    /// Runs `c`'s block reads through the plan, as `Readahead::read` does, with a buffer that
    /// holds what the last read from the file got (up to the file's end). Returns each read
    /// from the file: (step, offset, length).
    fn run(c: &Case) -> Vec<(usize, u64, u64)> {
        let asked = Cell::new(0);
        let mut state = ReadState::default();
        let mut buffer = (0, 0);
        let mut reads = Vec::new();
        for (step, &(offset, len)) in c.blocks.iter().enumerate() {
            let block = BlockRead { offset, len };
            let moved = state.movement(block);
            if buffer.0 <= offset && block.end() <= buffer.1 {
                state = state.noted(block, moved);
                continue;
            }
            let learned = || {
                assert_eq!(
                    (moved, c.mode),
                    (Move::Seek, Mode::Automatic),
                    "{}: step {step}",
                    c.name
                );
                asked.set(asked.get() + 1);
                c.learned
            };
            let plan = plan_read(&state, block, moved, c.mode, c.bounds, learned);
            state = plan.next;
            let window = match plan.os_chunk {
                Some(chunk) if c.os => chunk,
                _ => plan.window,
            };
            let (start, stop) = window.span(block, c.bounds);
            assert!(start <= offset && block.end() <= stop, "{}: step {step}", c.name);
            buffer = (start, stop.min(c.bounds.file_len));
            reads.push((step, start, stop - start));
        }
        reads
    }

    #[test]
    fn block_reads_make_the_planned_file_reads() {
        for c in cases() {
            assert_eq!(run(&c), c.file_reads, "{}", c.name);
        }
    }

    #[test]
    fn a_read_never_reaches_past_the_limits_unit_or_before_the_file() {
        for c in cases() {
            let a = c.bounds.align;
            for (step, start, len) in run(&c) {
                let (offset, block_len) = c.blocks[step];
                let stop = start + len;
                assert!(
                    stop <= c.bounds.limit.div_ceil(a) * a || stop == offset + block_len as u64
                );
                assert!(stop <= c.bounds.file_len.div_ceil(a) * a, "{}: step {step}", c.name);
                assert!(start % a == 0 && stop % a == 0 || a == 1, "{}: step {step}", c.name);
            }
        }
    }

    #[test]
    fn a_background_window_follows_the_doubling_up_to_half_the_fixed_size() {
        let bounds = direct(8 << 20, 8 << 20);
        let size = 2 << 20;
        // After a seek's read of FIXED_INITIAL: the next size, then capped at half of `size`.
        let seek = plan_read(
            &ReadState::default(),
            BlockRead { offset: 0, len: 1000 },
            Move::Seek,
            Mode::Fixed(size),
            bounds,
            || unreachable!(),
        );
        assert_eq!(seek.window.span(BlockRead { offset: 0, len: 1000 }, bounds), (0, 256 << 10));
        let (s, first) = plan_background(&seek.next, 256 << 10, size, bounds);
        assert_eq!(first, Some((256 << 10, 768 << 10)));
        let (s, second) = plan_background(&s, 768 << 10, size, bounds);
        assert_eq!(second, Some((768 << 10, 1792 << 10)));
        let (_, third) = plan_background(&s, 1792 << 10, size, bounds);
        assert_eq!(third, Some((1792 << 10, 2816 << 10)));
        // Up to the limit's unit, and never past the file's last unit.
        let (_, near_end) =
            plan_background(&s, 8_000_000 / 4096 * 4096, size, direct(8_000_000, 8_000_100));
        assert_eq!(near_end, Some((7_999_488, 8_003_584)));
        let (_, at_end) = plan_background(&s, 8_003_584, size, direct(8_000_000, 8_000_100));
        assert_eq!(at_end, None);
        // A buffer that does not end on a unit (the file ended there): nothing, state kept.
        let (kept, none) = plan_background(&s, 5000, size, bounds);
        assert_eq!((kept, none), (s, None));
    }
}
