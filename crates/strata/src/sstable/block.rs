//! Reading data and index blocks (layout in [`super::block_builder`]).
//!
//! A [`Block`] owns the uncompressed bytes of one block and has had its restart array checked:
//! `num_restarts >= 1`, the array fits in the block, the first restart is 0, and the restarts
//! strictly increase and point before the array. Entries themselves are checked as they are
//! decoded: every length is bounds-checked, a restart entry must not share a prefix, and every
//! key must be long enough to be an internal key. A malformed entry makes the iterator invalid
//! with a `Corruption` status naming the block's file offset; nothing here can panic or read out
//! of bounds on bad input.
//!
//! A block's keys are internal keys, except in the index block of a format-version-3 table,
//! whose keys are user keys ([`Block::with_user_keys`]): its iterator compares them with the
//! user key of a seek target, and they may be shorter than a trailer. Keys are in the order of
//! the block's table ([`Block::with_order`]; bytewise by default).
//!
//! [`BlockIter`] holds an `Arc<Block>`, so it is `'static`: a table iterator can own it whether
//! or not the block cache still holds the block. It keeps the current key in a reused buffer
//! (no allocation per step once the buffer has grown) and the value as a range of the block.
//! Stepping backward decodes the restart interval before the current entry once and caches its
//! entries, so a run of `prev` calls costs O(entries), not O(entries x interval).

use std::cmp::Ordering;
use std::mem::size_of;
use std::path::PathBuf;
use std::sync::Arc;

use crate::comparator::KeyOrder;
use crate::error::{Error, Result};
use crate::iterator::InternalIterator;
use crate::key::{compare_internal, user_key, TRAILER_LEN};
use crate::util::coding::{decode_fixed32, get_varint32};
use crate::util::compare::compare_bytes;
use crate::util::prefetch::{prefetch_span, prefetch_span_wide, CACHE_LINE};
use crate::util::spare_bufs;

use super::filter::BloomFilter;

/// An immutable, validated, uncompressed block: a block of entries, or (for the block cache,
/// which holds one value type) a decoded filter block, which has no entries.
pub struct Block {
    data: Vec<u8>,
    /// Where the restart array starts; entries live in `data[..entries_end]`.
    entries_end: usize,
    num_restarts: usize,
    /// The block's offset in its file, for error messages.
    file_offset: u64,
    /// Keys are user keys (a version-3 index block), not internal keys.
    user_keys: bool,
    /// Set (and `data` empty) for a filter block; such a block is never iterated: the block
    /// cache keys filters apart from blocks of entries (`reader/mod.rs`). Boxed: every cached
    /// block of entries carries the field, and its size is charged to the cache.
    filter: Option<Box<BloomFilter>>,
    /// Set for an index block with many restart points ([`Block::with_seek_hints`]).
    hints: Option<Box<SeekHints>>,
    /// The order of the keys.
    order: KeyOrder,
}

/// The block's buffer goes to this thread's spares, for the next block it decodes
/// (`util::spare_bufs`).
impl Drop for Block {
    fn drop(&mut self) {
        spare_bufs::give(std::mem::take(&mut self.data));
    }
}

impl std::fmt::Debug for Block {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Block")
            .field("len", &self.data.len())
            .field("num_restarts", &self.num_restarts)
            .field("file_offset", &self.file_offset)
            .finish_non_exhaustive()
    }
}

impl Block {
    /// Validates the restart array of `data` (a block read at `file_offset`).
    pub fn new(data: Vec<u8>, file_offset: u64) -> Result<Block> {
        let bad = |reason: String| Error::corruption(PathBuf::new(), file_offset, reason);
        let len = data.len();
        if len < 4 {
            return Err(bad(format!("block of {len} bytes is too short")));
        }
        let num_restarts = decode_fixed32(&data, len - 4) as usize;
        let max_restarts = (len - 4) / 4;
        if num_restarts == 0 || num_restarts > max_restarts {
            return Err(bad(format!("block of {len} bytes claims {num_restarts} restart points")));
        }
        let entries_end = len - 4 - 4 * num_restarts;
        let mut prev = 0usize;
        for i in 0..num_restarts {
            let r = decode_fixed32(&data, entries_end + 4 * i) as usize;
            let ok = if i == 0 { r == 0 } else { r > prev && r < entries_end };
            if !ok {
                return Err(bad(format!("restart point {i} has bad offset {r}")));
            }
            prev = r;
        }
        Ok(Block {
            data,
            entries_end,
            num_restarts,
            file_offset,
            user_keys: false,
            filter: None,
            hints: None,
            order: KeyOrder::Bytewise,
        })
    }

    /// Marks the block's keys as ordered by `order` (its table's). Call before
    /// [`Block::with_seek_hints`].
    pub fn with_order(mut self, order: &KeyOrder) -> Block {
        if !order.is_bytewise() {
            self.order = order.clone();
        }
        self
    }

    /// Marks the block's keys as user keys (the index block of a format-version-3 table).
    /// Call before [`Block::with_seek_hints`], which reads the keys as this says they are.
    pub fn with_user_keys(mut self) -> Block {
        self.user_keys = true;
        self
    }

    /// Builds [`SeekHints`] for a block of at least [`SEEK_HINTS_MIN_RESTARTS`] restart points
    /// whose restart keys are well-formed and in order (a block that breaks this is searched
    /// without hints, and its seeks report the bad entry as before). For index blocks and
    /// partitions, which are searched on every point read and held for many of them.
    /// The hints read keys as big-endian numbers, which only bytewise order keeps in order:
    /// blocks in another order get none.
    pub fn with_seek_hints(mut self) -> Block {
        if self.order.is_bytewise() {
            self.hints = SeekHints::build(&self).map(Box::new);
        }
        self
    }

    /// The shortest key an entry may have: a trailer, or nothing for user keys.
    #[inline]
    fn min_key_len(&self) -> usize {
        if self.user_keys {
            0
        } else {
            TRAILER_LEN
        }
    }

    /// The order of entry key `key` against seek target `target` (an internal key).
    #[inline]
    fn compare(&self, key: &[u8], target: &[u8]) -> Ordering {
        if self.user_keys {
            self.order.compare(key, user_key(target))
        } else {
            self.order.compare_internal(key, target)
        }
    }

    /// A decoded filter block read at `file_offset`, to be held by the block cache.
    pub fn from_filter(filter: BloomFilter, file_offset: u64) -> Block {
        Block {
            data: Vec::new(),
            entries_end: 0,
            num_restarts: 0,
            file_offset,
            user_keys: false,
            filter: Some(Box::new(filter)),
            hints: None,
            order: KeyOrder::Bytewise,
        }
    }

    /// A value read from blob file offset `file_offset`, to be held by the block cache (which
    /// holds one value type; blob values are charged to it like blocks). Never iterated: the
    /// cache keys it by its blob file's number, which no table has. [`Block::bytes`] is the
    /// value.
    pub fn from_blob_value(value: Vec<u8>, file_offset: u64) -> Block {
        Block {
            data: value,
            entries_end: 0,
            num_restarts: 0,
            file_offset,
            user_keys: false,
            filter: None,
            hints: None,
            order: KeyOrder::Bytewise,
        }
    }

    /// The filter, for a block made by [`Block::from_filter`].
    #[inline]
    pub fn filter(&self) -> Option<&BloomFilter> {
        self.filter.as_deref()
    }

    /// Memory held, for the block cache's charge.
    pub fn memory_size(&self) -> usize {
        self.data.capacity()
            + size_of::<Block>()
            + self.filter.as_deref().map_or(0, |f| size_of::<BloomFilter>() + f.memory_size())
            + self.hints.as_deref().map_or(0, SeekHints::memory_size)
    }

    /// The block's bytes (entries and restart array); a value read from the block is a
    /// sub-slice of them (`DbPinnableSlice` relies on it to pin values without copying).
    pub fn bytes(&self) -> &[u8] {
        &self.data
    }

    /// The block's offset in its file.
    pub fn file_offset(&self) -> u64 {
        self.file_offset
    }

    /// Asks the CPU for the whole block, its restart array first, when it holds at most
    /// [`WHOLE_BLOCK_PREFETCH`] bytes (a data block), for a block that has likely left the
    /// CPU's caches (`BlockCache::blocks_cold`): a seek in it then waits on its restart array,
    /// the restart key its search compares and the interval's entries together, not in turn.
    /// On a block still near, the hints cost more than they save (`docs/measurements.md`).
    #[inline]
    pub(crate) fn prefetch_whole(&self) {
        if self.data.len() <= WHOLE_BLOCK_PREFETCH {
            let p = self.data.as_ptr();
            prefetch_span(p.wrapping_add(self.entries_end), 4 * self.num_restarts);
            prefetch_span_wide(p, self.entries_end);
        }
    }

    /// An iterator over the block's entries (internal keys).
    pub fn iter(self: &Arc<Self>) -> BlockIter {
        BlockIter::new(self.clone())
    }

    #[inline]
    fn restart(&self, i: usize) -> usize {
        decode_fixed32(&self.data, self.entries_end + 4 * i) as usize
    }

    /// Offset of restart `i + 1`, or the end of the entries after the last interval.
    #[inline]
    fn restart_end(&self, i: usize) -> usize {
        if i + 1 < self.num_restarts {
            self.restart(i + 1)
        } else {
            self.entries_end
        }
    }

    /// The whole key stored at restart point `i`.
    #[inline(always)]
    fn restart_key(&self, i: usize) -> Option<&[u8]> {
        let off = self.restart(i);
        let (shared, unshared, vlen, p) = decode_header(&self.data, off, self.entries_end)?;
        if shared != 0 || unshared < self.min_key_len() || p + unshared + vlen > self.entries_end {
            return None;
        }
        Some(&self.data[p..p + unshared])
    }

    /// The user key stored at restart point `i`.
    fn restart_user_key(&self, i: usize) -> Option<&[u8]> {
        let k = self.restart_key(i)?;
        Some(if self.user_keys { k } else { user_key(k) })
    }

    /// The restart points `(left, right)` that the last restart key below a seek target with
    /// user key `u` lies between (both included; 0 when no restart key is below it).
    #[inline]
    fn restart_bounds(&self, u: &[u8]) -> (usize, usize) {
        match &self.hints {
            // The restart offsets of the hints' level-0 line are loaded with that line
            // instead of after it: the seek reads one of them next.
            Some(h) => h.bounds(u, |group| {
                let first = self.entries_end + 4 * group * LINE;
                prefetch_span(self.data.as_ptr().wrapping_add(first), 4 * LINE);
            }),
            None => (0, self.num_restarts - 1),
        }
    }

    fn corruption(&self, reason: String) -> Error {
        Error::corruption(PathBuf::new(), self.file_offset, reason)
    }
}

/// Most bytes of a restart interval a seek prefetches.
const MAX_SCAN_PREFETCH: usize = 8 * CACHE_LINE;

/// Blocks of at most this many bytes are asked for whole by [`Block::prefetch_whole`].
const WHOLE_BLOCK_PREFETCH: usize = 8 * 1024;

/// Blocks with fewer restart points are searched without [`SeekHints`]: a data block has a
/// handful, and their binary search is a few steps in a block that is already being read.
pub const SEEK_HINTS_MIN_RESTARTS: usize = 64;

/// A search aid for a block with many restart points (a table's index block: one restart
/// every `index_block_restart_interval` entries, thousands of them). A binary search over the restart keys takes two dependent cache misses
/// a step, the restart offset and then the entry it points to, and a point read that waited on
/// the device finds little of a large index in the CPU's caches. The hints hold four bytes of
/// every restart key, laid out so that a search reads one 64-byte line per level of a tree of
/// fanout 16 (three or four lines for a block of ten thousand restarts), and restart keys are
/// compared only among neighbours whose hints tie.
///
/// The hint of user key `u` is `h(u)`:
/// - for `u` starting with `common`: the four bytes after it, zero-padded, read big-endian;
/// - for `u` below `common` (and not starting with it): 0; above it: `u32::MAX`.
///
/// `h` is monotone in byte order (a key that is a prefix of another pads with zeros, which sort
/// first), so `h(k) < h(u)` implies `k < u` and `h(k) > h(u)` implies `k > u`: restart keys
/// with a smaller hint than a target's user key are below it (whatever their trailers), those
/// with a larger one above it. That holds for any `common`; it is chosen as the prefix the
/// second and the second-to-last restart keys share, so that the hints tell apart the keys
/// between them: a table's last separator is often a short successor ("\x01" after keys
/// starting with "\x00"), which shares nothing with the others.
///
/// Layout: level 0, in the first lines, is the hint of every restart point, in order; level
/// `k + 1` is the first entry of every line of level `k`; the top level fits one line. Each
/// level starts on a line of its own and its last line is padded with `u32::MAX` (never
/// counted below a target).
///
/// Invariant (checked by [`SeekHints::build`], which gives none for a block that breaks it):
/// level 0 is non-decreasing, as it is for any block whose restart keys are in order; then
/// every level is.
///
/// The fields a seek reads before its first line of hints (the levels, `common`) sit in this
/// struct's two lines rather than behind pointers of their own: a cold seek waits for each
/// pointer it follows in turn. `common` is cut to [`MAX_COMMON`] bytes (any prefix of the
/// keys' shared prefix keeps the order argument above).
#[repr(C, align(128))]
struct SeekHints {
    /// Per level, bottom first: its first line in `lines` and its number of entries; the
    /// first `depth` are set.
    levels: [(u32, u32); MAX_HINT_LEVELS],
    lines: Box<[Line]>,
    depth: u8,
    common_len: u8,
    common: [u8; MAX_COMMON],
}

/// Levels of hints a block can have: a block has fewer than 2^32 restart points, and each
/// level has a sixteenth of the entries of the one below until one line holds them.
const MAX_HINT_LEVELS: usize = 8;
/// Most bytes of the restart keys' shared prefix the hints strip.
const MAX_COMMON: usize = 46;

/// Sixteen hints: one cache line.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([u32; LINE]);

const LINE: usize = 16;

impl Line {
    /// How many of the line's hints satisfy `below` (a prefix of the line, as it is sorted).
    #[inline(always)]
    fn count(&self, below: impl Fn(u32) -> bool) -> usize {
        self.0.iter().map(|&p| usize::from(below(p))).sum()
    }
}

impl SeekHints {
    fn build(block: &Block) -> Option<SeekHints> {
        let n = block.num_restarts;
        if n < SEEK_HINTS_MIN_RESTARTS {
            return None;
        }
        if u32::try_from(n).is_err() {
            return None;
        }
        let a = block.restart_user_key(1)?;
        let b = block.restart_user_key(n - 2)?;
        let common_len = a.iter().zip(b).take_while(|(x, y)| x == y).count().min(MAX_COMMON);
        let mut common = [0u8; MAX_COMMON];
        common[..common_len].copy_from_slice(&a[..common_len]);
        let mut level = Vec::with_capacity(n);
        for i in 0..n {
            let p = hint(&common[..common_len], block.restart_user_key(i)?);
            if level.last().is_some_and(|&prev| p < prev) {
                return None;
            }
            level.push(p);
        }
        let mut lines = Vec::with_capacity(n.div_ceil(LINE) * 17 / 16 + 2);
        let mut levels = [(0u32, 0u32); MAX_HINT_LEVELS];
        let mut depth = 0;
        loop {
            // Fewer than 2^32 entries (checked above) take at most MAX_HINT_LEVELS levels;
            // `lines` has fewer entries than level 0.
            *levels.get_mut(depth)? = (lines.len() as u32, level.len() as u32);
            depth += 1;
            lines.extend(level.chunks(LINE).map(|c| {
                let mut l = Line([u32::MAX; LINE]);
                l.0[..c.len()].copy_from_slice(c);
                l
            }));
            if level.len() <= LINE {
                break;
            }
            level = level.iter().step_by(LINE).copied().collect();
        }
        Some(SeekHints {
            levels,
            lines: lines.into_boxed_slice(),
            depth: depth as u8,
            common_len: common_len as u8,
            common,
        })
    }

    /// The stripped prefix.
    #[inline]
    fn common(&self) -> &[u8] {
        &self.common[..usize::from(self.common_len)]
    }

    /// The hint of restart point `i` (level 0 starts the lines).
    #[inline]
    fn hint_at(&self, i: usize) -> u32 {
        self.lines[i / LINE].0[i % LINE]
    }

    fn memory_size(&self) -> usize {
        size_of::<SeekHints>() + self.lines.len() * size_of::<Line>()
    }

    /// The number of level-0 hints satisfying `below`, a predicate true for a prefix of
    /// every level (`p < t` or `p <= t`): counted in the top line, then, from the top down,
    /// in the one line of the next level whose group straddles the boundary. A count is capped
    /// at the level's entries (`p <= u32::MAX` holds for the padding too).
    /// `at_level0(group)` is called before level 0's line `group` is read.
    #[inline(always)]
    fn rank(&self, below: impl Fn(u32) -> bool + Copy, at_level0: impl Fn(usize)) -> usize {
        let levels = &self.levels[..usize::from(self.depth)];
        let (top, top_len) = levels[levels.len() - 1];
        let mut g = self.lines[top as usize].count(below).min(top_len as usize);
        for (level, &(first, len)) in levels.iter().enumerate().rev().skip(1) {
            let (first, len) = (first as usize, len as usize);
            // `g` entries of the level above satisfy `below`: they are the first hints of
            // groups `0..g` of this level, so the boundary lies in group `g - 1`.
            let Some(group) = g.checked_sub(1) else { return 0 };
            if level == 0 {
                at_level0(group);
            }
            g = (group * LINE + self.lines[first + group].count(below)).min(len);
        }
        g
    }

    /// [`Block::restart_bounds`]: restarts before the first hint equal to `h(u)` are below the
    /// target, restarts from the first hint above it are above it.
    /// `at_level0` is [`SeekHints::rank`]'s, for the first count.
    #[inline]
    fn bounds(&self, u: &[u8], at_level0: impl Fn(usize)) -> (usize, usize) {
        let t = hint(self.common(), u);
        let lo = self.rank(|p| p < t, at_level0);
        let tied = lo < self.levels[0].1 as usize && self.hint_at(lo) == t;
        let hi = if tied { self.rank(|p| p <= t, |_| {}) } else { lo };
        let left = lo.saturating_sub(1);
        (left, hi.saturating_sub(1).max(left))
    }
}

/// `h(u)` of [`SeekHints`] with prefix `common`.
#[inline]
fn hint(common: &[u8], u: &[u8]) -> u32 {
    match u.strip_prefix(common) {
        Some(rest) => {
            let mut b = [0u8; 4];
            let n = rest.len().min(4);
            b[..n].copy_from_slice(&rest[..n]);
            u32::from_be_bytes(b)
        }
        None if u < common => 0,
        None => u32::MAX,
    }
}

/// Decodes an entry header at `p`, checking only that it lies before `limit`. Returns
/// `(shared, unshared, value_len, offset of the key delta)`.
#[inline(always)]
fn decode_header(data: &[u8], p: usize, limit: usize) -> Option<(usize, usize, usize, usize)> {
    let data = data.get(..limit)?;
    if let Some(&[a, b, c]) = data.get(p..p + 3) {
        if (a | b | c) < 0x80 {
            return Some((a as usize, b as usize, c as usize, p + 3));
        }
    }
    let mut q = p;
    let shared = get_varint32(data, &mut q)? as usize;
    let unshared = get_varint32(data, &mut q)? as usize;
    let vlen = get_varint32(data, &mut q)? as usize;
    Some((shared, unshared, vlen, q))
}

/// One decoded entry of the interval cached for backward steps.
#[derive(Clone, Copy)]
struct CachedEntry {
    offset: usize,
    next: usize,
    key_end: usize,
    value_start: usize,
}

const NOT_CACHED: usize = usize::MAX;

/// Bytes a key delta is copied in when it is this short or shorter: one fixed-size copy (a few
/// vector moves) instead of a call to `memcpy` with the delta's length.
const SHORT_DELTA: usize = 32;

/// The current key of a [`BlockIter`]: `buf[..len]`. The bytes of `buf` past `len` are slack
/// (stale bytes, never read as key), so that a short key delta can be copied as a fixed
/// [`SHORT_DELTA`]-byte chunk: decoding an entry copies its delta, and a point read decodes
/// about ten entries.
struct KeyBuf {
    buf: Vec<u8>,
    len: usize,
}

impl KeyBuf {
    #[inline]
    fn as_slice(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    #[inline]
    fn clear(&mut self) {
        self.len = 0;
    }

    /// Keeps the first `shared` bytes (`shared <= self.len`) and appends `data[k..k + n]`
    /// (in bounds: checked by the caller).
    #[inline]
    fn splice(&mut self, shared: usize, data: &[u8], k: usize, n: usize) {
        if n <= SHORT_DELTA {
            if let (Some(src), Some(dst)) = (
                data.get(k..).and_then(<[u8]>::first_chunk::<SHORT_DELTA>),
                self.buf.get_mut(shared..).and_then(<[u8]>::first_chunk_mut::<SHORT_DELTA>),
            ) {
                *dst = *src;
                self.len = shared + n;
                return;
            }
        }
        self.splice_slow(shared, &data[k..k + n]);
    }

    /// [`KeyBuf::splice`] of `delta`, growing the buffer so the next short deltas fit. Not
    /// rare: every key longer than [`SHORT_DELTA`] at a restart point and every backward step
    /// (`assign`) comes here. Kept out of line so the decoding loop stays small.
    #[inline(never)]
    fn splice_slow(&mut self, shared: usize, delta: &[u8]) {
        let len = shared + delta.len();
        if self.buf.len() < len + SHORT_DELTA {
            self.buf.resize(len + SHORT_DELTA, 0);
        }
        self.buf[shared..len].copy_from_slice(delta);
        self.len = len;
    }

    /// Makes the key `key`.
    fn assign(&mut self, key: &[u8]) {
        self.splice_slow(0, key);
    }
}

/// A cursor over one block's entries, in the block's order of internal keys (of user keys in
/// a block [`Block::with_user_keys`]).
pub struct BlockIter {
    block: Arc<Block>,
    /// Offset of the current entry; `block.entries_end` when not valid.
    current: usize,
    /// Offset just past the current entry.
    next: usize,
    value_start: usize,
    /// The restart interval holding `current`, and where the following one starts.
    restart_index: usize,
    next_restart: usize,
    key: KeyBuf,
    status: Option<Error>,
    /// Entries of restart interval `restart_index` decoded by the last backward step, their
    /// keys concatenated in `cache_keys`, and the index of the current entry among them
    /// (`NOT_CACHED` when the current entry was reached some other way).
    cache: Vec<CachedEntry>,
    cache_keys: Vec<u8>,
    cache_pos: usize,
}

impl BlockIter {
    pub fn new(block: Arc<Block>) -> Self {
        let end = block.entries_end;
        BlockIter {
            block,
            current: end,
            next: end,
            value_start: end,
            restart_index: 0,
            next_restart: end,
            key: KeyBuf { buf: Vec::new(), len: 0 },
            status: None,
            cache: Vec::new(),
            cache_keys: Vec::new(),
            cache_pos: NOT_CACHED,
        }
    }

    /// Like [`BlockIter::new`], reusing `key_buf`'s memory for the current key.
    pub fn with_key_buffer(block: Arc<Block>, key_buf: Vec<u8>) -> Self {
        let mut it = Self::new(block);
        it.key = KeyBuf { buf: key_buf, len: 0 };
        it
    }

    /// Gives back the key buffer, for reuse by [`BlockIter::with_key_buffer`].
    pub fn into_key_buffer(self) -> Vec<u8> {
        self.key.buf
    }

    /// Switches to another block, keeping the buffers; the iterator is left unpositioned.
    pub fn set_block(&mut self, block: Arc<Block>) {
        self.block = block;
        self.status = None;
        self.invalidate();
    }

    /// The block being iterated.
    pub fn block(&self) -> &Arc<Block> {
        &self.block
    }

    /// Leaves the iterator unpositioned (not an error).
    pub fn invalidate(&mut self) {
        self.current = self.block.entries_end;
        self.next = self.current;
        self.value_start = self.current;
        self.cache_pos = NOT_CACHED;
        self.key.clear();
    }

    /// True when an error was met (cheaper than [`InternalIterator::status`]).
    pub fn has_error(&self) -> bool {
        self.status.is_some()
    }

    fn corrupt(&mut self, reason: String) {
        if self.status.is_none() {
            self.status = Some(self.block.corruption(reason));
        }
        self.invalidate();
    }

    /// Prepares to decode restart interval `i` from its first entry.
    #[inline]
    fn seek_to_restart(&mut self, i: usize) {
        self.restart_index = i;
        self.next = self.block.restart(i);
        self.next_restart = self.block.restart_end(i);
        // The interval's entries are read one after the other, each header giving the next
        // one's place: ask for all their lines at once (a few; a no-op on a hot block).
        let interval = self.next_restart.saturating_sub(self.next).min(MAX_SCAN_PREFETCH);
        prefetch_span(self.block.data.as_ptr().wrapping_add(self.next), interval);
        self.key.clear();
        self.cache_pos = NOT_CACHED;
    }

    /// Decodes the entry at `self.next` and makes it current. Returns false at the end of the
    /// block or on corruption (then the status is set).
    #[inline(always)]
    fn parse_next(&mut self) -> bool {
        let block = &*self.block;
        let p = self.next;
        if p >= block.entries_end {
            self.invalidate();
            return false;
        }
        let at_restart = p >= self.next_restart;
        let Some((shared, unshared, vlen, k)) = decode_header(&block.data, p, block.entries_end)
        else {
            self.corrupt(format!("bad entry header at block offset {p}"));
            return false;
        };
        let value_start = k + unshared;
        let end = value_start + vlen;
        if end > block.entries_end
            || shared > self.key.len
            || shared + unshared < block.min_key_len()
            || (at_restart && shared != 0)
        {
            self.corrupt(format!("bad entry at block offset {p}"));
            return false;
        }
        if at_restart {
            // Entries are decoded in order, so an entry at or past the next restart offset
            // must sit exactly on it.
            if p != self.next_restart {
                self.corrupt(format!("entry at block offset {p} straddles a restart point"));
                return false;
            }
            self.restart_index += 1;
            self.next_restart = block.restart_end(self.restart_index);
        }
        self.key.splice(shared, &block.data, k, unshared);
        self.current = p;
        self.value_start = value_start;
        self.next = end;
        true
    }

    /// Decodes restart interval `r` up to (not including) the entry at `stop` into the cache
    /// and positions at the last of them.
    fn fill_cache(&mut self, r: usize, stop: usize) {
        self.seek_to_restart(r);
        self.cache.clear();
        self.cache_keys.clear();
        // One allocation for a typical interval (16 entries of short keys) instead of a chain
        // of doublings on the first backward step into every block.
        self.cache.reserve(16);
        self.cache_keys.reserve(16 * 32);
        while self.next < stop {
            if !self.parse_next() {
                if !self.has_error() {
                    self.corrupt(format!("entries do not reach block offset {stop}"));
                }
                return;
            }
            self.cache_keys.extend_from_slice(self.key.as_slice());
            self.cache.push(CachedEntry {
                offset: self.current,
                next: self.next,
                key_end: self.cache_keys.len(),
                value_start: self.value_start,
            });
        }
        if self.next != stop || self.cache.is_empty() || self.restart_index != r {
            self.corrupt(format!("entries do not line up with block offset {stop}"));
            return;
        }
        self.cache_pos = self.cache.len() - 1;
    }

    /// Makes cached entry `i` current.
    fn load_cached(&mut self, i: usize) {
        let e = self.cache[i];
        let key_start = if i == 0 { 0 } else { self.cache[i - 1].key_end };
        self.key.assign(&self.cache_keys[key_start..e.key_end]);
        self.current = e.offset;
        self.next = e.next;
        self.value_start = e.value_start;
        self.cache_pos = i;
    }

    /// Binary search for the last restart point whose key is < the target (0 when none is),
    /// known to lie in `left..=right`; `cmp(key)` orders a key against the target.
    #[inline(always)]
    fn find_restart(
        &mut self,
        (mut left, mut right): (usize, usize),
        cmp: impl Fn(&[u8]) -> Ordering,
    ) -> Option<usize> {
        let block = &*self.block;
        while left < right {
            let mid = left + (right - left).div_ceil(2);
            let Some(k) = block.restart_key(mid) else {
                self.corrupt(format!("bad entry at restart point {mid}"));
                return None;
            };
            match cmp(k) {
                Ordering::Less => left = mid,
                Ordering::Equal => return Some(mid),
                Ordering::Greater => right = mid - 1,
            }
        }
        Some(left)
    }

    /// [`InternalIterator::seek`] with `cmp(key)` ordering a key against the target.
    #[inline(always)]
    fn seek_by(&mut self, bounds: (usize, usize), cmp: impl Fn(&[u8]) -> Ordering) {
        let Some(r) = self.find_restart(bounds, &cmp) else { return };
        self.seek_to_restart(r);
        while self.parse_next() {
            if cmp(self.key.as_slice()) != Ordering::Less {
                return;
            }
        }
    }
}

impl InternalIterator for BlockIter {
    #[inline]
    fn valid(&self) -> bool {
        self.current < self.block.entries_end
    }

    fn seek_to_first(&mut self) {
        self.status = None;
        self.seek_to_restart(0);
        self.parse_next();
    }

    fn seek_to_last(&mut self) {
        self.status = None;
        let block = &*self.block;
        if block.entries_end == 0 {
            self.invalidate();
            return;
        }
        self.fill_cache(block.num_restarts - 1, block.entries_end);
    }

    fn seek(&mut self, target: &[u8]) {
        debug_assert!(target.len() >= TRAILER_LEN);
        self.status = None;
        if self.block.entries_end == 0 {
            self.invalidate();
            return;
        }
        // The key order is chosen once per seek, so each comparison in the searches below is
        // the plain one.
        let u = user_key(target);
        let bounds = self.block.restart_bounds(u);
        match (&self.block.order, self.block.user_keys) {
            (KeyOrder::Bytewise, true) => self.seek_by(bounds, |k| compare_bytes(k, u)),
            (KeyOrder::Bytewise, false) => self.seek_by(bounds, |k| compare_internal(k, target)),
            (o, true) => {
                let o = o.clone();
                self.seek_by(bounds, |k| o.compare(k, u));
            }
            (o, false) => {
                let o = o.clone();
                self.seek_by(bounds, |k| o.compare_internal(k, target));
            }
        }
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.seek(target);
        if self.valid() {
            if self.block.compare(self.key.as_slice(), target) == Ordering::Greater {
                self.prev();
            }
        } else if !self.has_error() {
            self.seek_to_last();
        }
    }

    #[inline]
    fn next(&mut self) {
        debug_assert!(self.valid());
        self.cache_pos = NOT_CACHED;
        self.parse_next();
    }

    fn prev(&mut self) {
        debug_assert!(self.valid());
        if self.cache_pos != NOT_CACHED && self.cache_pos > 0 {
            self.load_cached(self.cache_pos - 1);
            return;
        }
        let current = self.current;
        if current == 0 {
            self.invalidate();
            return;
        }
        let r = if self.block.restart(self.restart_index) == current {
            self.restart_index - 1
        } else {
            self.restart_index
        };
        self.fill_cache(r, current);
    }

    #[inline]
    fn key(&self) -> &[u8] {
        debug_assert!(self.valid());
        self.key.as_slice()
    }

    #[inline]
    fn value(&self) -> &[u8] {
        debug_assert!(self.valid());
        &self.block.data[self.value_start..self.next]
    }

    fn status(&self) -> Result<()> {
        match &self.status {
            None => Ok(()),
            Some(e) => Err(e.duplicate()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iterator::conformance::{check_internal_iterator, sample_entries};
    use crate::key::make_internal_key;
    use crate::sstable::block_builder::BlockBuilder;
    use crate::types::{SeqNo, ValueType};

    fn build(entries: &[(Vec<u8>, Vec<u8>)], interval: usize) -> Vec<u8> {
        let mut b = BlockBuilder::new(interval);
        for (k, v) in entries {
            b.add(k, v);
        }
        b.finish().to_vec()
    }

    fn block(entries: &[(Vec<u8>, Vec<u8>)], interval: usize) -> Arc<Block> {
        Arc::new(Block::new(build(entries, interval), 4096).unwrap())
    }

    /// The index of a table of db_bench's keys (a big-endian integer padded with '0'): an entry
    /// per data block of ten keys, as internal keys at restart interval 1, the last separator
    /// the short successor "\x01" of the table's last key, as a table builder makes it.
    fn bench_index(first: u64, blocks: u64) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut entries: Vec<_> = (0..blocks - 1)
            .map(|i| {
                let mut k = (first + 10 * i + 9).to_be_bytes().to_vec();
                k.extend_from_slice(b"000000000000");
                (make_internal_key(&k, SeqNo(5), ValueType::Value), vec![1, 2, 3])
            })
            .collect();
        entries.push((make_internal_key(b"\x01", SeqNo(5), ValueType::Value), vec![4]));
        entries
    }

    #[test]
    fn seek_hints_narrow_an_index_search_to_two_restarts() {
        let b = Block::new(build(&bench_index(1 << 20, 8000), 1), 0).unwrap().with_seek_hints();
        let h = b.hints.as_deref().expect("an index block of 8000 restarts gets hints");
        assert_eq!(h.common().len(), 5);
        for v in [0u64, 1 << 20, (1 << 20) + 12_345, (1 << 20) + 79_999, 1 << 40, 1 << 56] {
            let mut u = v.to_be_bytes().to_vec();
            u.extend_from_slice(b"000000000000");
            let (l, r) = b.restart_bounds(&u);
            assert!(r - l <= 1, "target {v}: bounds {l}..={r}");
        }
    }

    /// Seeks with and without hints find the same entries: keys sharing a prefix whose next
    /// four bytes often tie, keys that are prefixes of others, outliers below and above the
    /// shared prefix at both ends, several versions of a user key, restart intervals over 1;
    /// targets inside and outside the block's keys.
    #[test]
    fn seek_hints_never_change_a_seek() {
        use proptest::prelude::*;
        let tail = |max| prop::collection::vec(prop::sample::select(vec![0u8, b'a', 0xff]), 0..max);
        let shared = (tail(4), tail(4)).prop_map(|(a, b)| [&b"pre"[..], &a, &b].concat());
        let outlier =
            prop::sample::select(vec![&b""[..], b"\x01", b"pr", b"prd\xff", b"prf", b"q", b"\xff"]);
        let key = prop_oneof![8 => shared, 1 => outlier.prop_map(<[u8]>::to_vec)];
        let config = ProptestConfig { cases: 64, ..ProptestConfig::default() };
        proptest!(config, |(
            keys in prop::collection::vec(key.clone(), 400..500),
            targets in prop::collection::vec((key, 0u64..4), 40),
            interval in 1usize..4,
            user_keys in any::<bool>(),
        )| {
            let keys: std::collections::BTreeSet<Vec<u8>> = keys.into_iter().collect();
            let entries: Vec<(Vec<u8>, Vec<u8>)> = keys
                .iter()
                .enumerate()
                .flat_map(|(i, u)| {
                    let versions = if user_keys { 1 } else { 1 + i % 3 } as u64;
                    (0..versions).rev().map(move |s| {
                        let k = if user_keys {
                            u.clone()
                        } else {
                            make_internal_key(u, SeqNo(2 * s + 1), ValueType::Value)
                        };
                        (k, vec![i as u8])
                    })
                })
                .collect();
            let plain = |b: Block| if user_keys { b.with_user_keys() } else { b };
            let without = Arc::new(plain(Block::new(build(&entries, interval), 0).unwrap()));
            let with = Arc::new(plain(Block::new(build(&entries, interval), 0).unwrap()).with_seek_hints());
            prop_assert!(with.hints.is_some() || with.num_restarts < SEEK_HINTS_MIN_RESTARTS);
            let (mut a, mut b) = (without.iter(), with.iter());
            let probes = targets
                .iter()
                .map(|(u, s)| (u.clone(), *s))
                .chain(keys.iter().map(|u| (u.clone(), 2)));
            for (u, s) in probes {
                let t = make_internal_key(&u, SeqNo(s), ValueType::Value);
                if let Some(h) = with.hints.as_deref() {
                    // Restarts up to `left` are below the target (or `left` is 0), those past
                    // `right` are not, and those between tie with it.
                    let (left, right) = with.restart_bounds(&u);
                    let below = |i| with.compare(with.restart_key(i).unwrap(), &t).is_lt();
                    prop_assert!(left == 0 || below(left), "{:?}: {}", u, left);
                    prop_assert!(!(right + 1..with.num_restarts).any(below), "{:?}: {}", u, right);
                    prop_assert!((left + 1..=right).all(|i| h.hint_at(i) == hint(h.common(), &u)));
                }
                a.seek(&t);
                b.seek(&t);
                prop_assert_eq!(a.valid(), b.valid(), "seek {:?}", u);
                if a.valid() {
                    prop_assert_eq!(a.key(), b.key(), "seek {:?}", u);
                }
                a.seek_for_prev(&t);
                b.seek_for_prev(&t);
                prop_assert_eq!(a.valid(), b.valid(), "seek_for_prev {:?}", u);
                if a.valid() {
                    prop_assert_eq!(a.key(), b.key(), "seek_for_prev {:?}", u);
                }
            }
        });
    }

    /// A block whose restart keys are out of order gets no hints (a seek then behaves as it
    /// would in any such block, without a hint steering it).
    #[test]
    fn out_of_order_restart_keys_get_no_hints() {
        let mut entries = bench_index(1 << 20, 100);
        entries.swap(40, 60);
        let b = Block::new(build(&entries, 1), 0).unwrap().with_seek_hints();
        assert!(b.hints.is_none());
        let few = Block::new(build(&bench_index(1 << 20, 63), 1), 0).unwrap().with_seek_hints();
        assert!(few.hints.is_none(), "fewer than SEEK_HINTS_MIN_RESTARTS restarts");
    }

    #[test]
    fn conformance_across_restart_intervals() {
        for interval in [1, 2, 16, 1024] {
            for n in [0, 1, 2, 15, 16, 17, 300] {
                let model = sample_entries(n, n as u64 * 31 + interval as u64);
                let b = block(&model, interval);
                let mut it = b.iter();
                check_internal_iterator(&mut it, &model, 7 + n as u64);
            }
        }
    }

    /// Key deltas of every length around the fixed-size copy of short deltas (`SHORT_DELTA`),
    /// with empty values so the copy's chunk runs past the entry, up to the restart array at
    /// the block's end; then the same keys reused by a second block (`with_key_buffer`).
    #[test]
    fn key_deltas_around_the_short_copy() {
        let mut model = Vec::new();
        for (i, len) in (0..=3 * SHORT_DELTA).chain([200, 1, 0]).enumerate() {
            // A shared stem of `i` bytes, then a distinct tail of `len` bytes.
            let mut user = vec![b'k'; i];
            user.extend((0..len).map(|j| (j * 7 + i) as u8 | 1));
            let value = if i % 3 == 0 { Vec::new() } else { vec![i as u8; i % 5] };
            model.push((make_internal_key(&user, SeqNo(9), ValueType::Value), value));
        }
        model.sort_by(|a, b| compare_internal(&a.0, &b.0));
        model.dedup_by(|a, b| a.0 == b.0);
        for interval in [1, 3, 16] {
            let b = block(&model, interval);
            let mut it = b.iter();
            check_internal_iterator(&mut it, &model, interval as u64);
            let mut reused = BlockIter::with_key_buffer(b.clone(), it.into_key_buffer());
            check_internal_iterator(&mut reused, &model, 100 + interval as u64);
        }
    }

    #[test]
    fn empty_user_keys_and_large_values() {
        let mut model = vec![
            (make_internal_key(b"", SeqNo(9), ValueType::Value), vec![1u8; 100 * 1024]),
            (make_internal_key(b"", SeqNo(3), ValueType::Deletion), vec![]),
            (make_internal_key(b"a", SeqNo(5), ValueType::Value), vec![2u8; 3]),
            (make_internal_key(b"b", SeqNo(1), ValueType::Merge), vec![3u8; 200 * 1024]),
        ];
        model.sort_by(|a, b| compare_internal(&a.0, &b.0));
        for interval in [1, 16] {
            let b = block(&model, interval);
            check_internal_iterator(&mut b.iter(), &model, 3);
        }
    }

    #[test]
    fn long_backward_scan_uses_the_cache() {
        let model = sample_entries(2000, 5);
        let b = block(&model, 1024);
        let mut it = b.iter();
        it.seek_to_last();
        // The last restart interval (entries 1024..2000) was decoded once, into the cache.
        assert_eq!(it.cache.len(), 2000 - 1024);
        assert_eq!(it.cache_pos, 2000 - 1024 - 1);
        let mut n = 0;
        while it.valid() {
            assert_eq!(it.key(), model[model.len() - 1 - n].0.as_slice());
            n += 1;
            it.prev();
            if n < 2000 - 1024 {
                assert_eq!(it.cache_pos, 2000 - 1024 - 1 - n, "steps within the cache");
            }
        }
        assert_eq!(n, model.len());
        it.status().unwrap();
    }

    #[test]
    fn bad_restart_arrays_are_rejected() {
        let model = sample_entries(40, 1);
        let good = build(&model, 4);
        let n = good.len();
        let cases: Vec<Vec<u8>> = vec![
            vec![],
            vec![0, 0, 0],
            0u32.to_le_bytes().to_vec(),
            1000u32.to_le_bytes().to_vec(),
            {
                let mut d = good.clone();
                d[n - 4..].copy_from_slice(&u32::MAX.to_le_bytes());
                d
            },
            {
                // First restart not 0.
                let mut d = good.clone();
                let nr = decode_fixed32(&d, n - 4) as usize;
                let start = n - 4 - 4 * nr;
                d[start..start + 4].copy_from_slice(&1u32.to_le_bytes());
                d
            },
            {
                // A restart past the entries.
                let mut d = good.clone();
                d[n - 8..n - 4].copy_from_slice(&(n as u32).to_le_bytes());
                d
            },
        ];
        for (i, c) in cases.into_iter().enumerate() {
            let e = Block::new(c, 77).unwrap_err();
            assert!(e.is_corruption(), "case {i}");
            assert!(e.to_string().contains("offset 77"), "case {i}: {e}");
        }
    }

    /// Every byte of a block changed in several ways: construction fails or every operation
    /// runs without panicking, and errors are corruption naming the block.
    #[test]
    fn damaged_blocks_never_panic() {
        let model = sample_entries(30, 11);
        for interval in [1, 4] {
            let good = build(&model, interval);
            for i in 0..good.len() {
                for x in [0x01u8, 0x80, 0xff] {
                    let mut d = good.clone();
                    d[i] ^= x;
                    let Ok(b) = Block::new(d, 123) else { continue };
                    let b = Arc::new(b);
                    let mut it = b.iter();
                    exercise(&mut it, &model);
                }
            }
            for cut in 0..good.len() {
                if let Ok(b) = Block::new(good[..cut].to_vec(), 1) {
                    exercise(&mut Arc::new(b).iter(), &model);
                }
            }
        }
    }

    fn exercise(it: &mut BlockIter, model: &[(Vec<u8>, Vec<u8>)]) {
        let mut steps = 0;
        it.seek_to_first();
        while it.valid() && steps < 200 {
            let _ = (it.key(), it.value());
            it.next();
            steps += 1;
        }
        check_err(it);
        it.seek_to_last();
        while it.valid() && steps < 400 {
            it.prev();
            steps += 1;
        }
        check_err(it);
        for (k, _) in model.iter().step_by(7) {
            it.seek(k);
            if it.valid() {
                it.prev();
            }
            check_err(it);
            it.seek_for_prev(k);
            if it.valid() {
                it.next();
            }
            check_err(it);
        }
    }

    fn check_err(it: &BlockIter) {
        if let Err(e) = it.status() {
            assert!(e.is_corruption());
            assert!(e.to_string().contains("offset 123") || e.to_string().contains("offset 1"));
            assert!(!it.valid());
        }
    }
}
