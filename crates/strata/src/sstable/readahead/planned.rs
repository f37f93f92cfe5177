//! Planned reads of a multi-range scan (`Db::multi_scan`, RocksDB's `MultiScan`): the caller
//! names every key range before reading any, so each table learns from its index which data
//! blocks the scan will read ([`PlannedSpans::new`], from the blocks in file order). Blocks
//! closer to each other than the scan's coalescing threshold form one span, and the first
//! block read inside a span brings the whole span along ([`PlannedSpans::window`]): ten
//! ranges a few blocks apart cost one read of the file, not one or two each, whichever way
//! each range is walked.
//!
//! Contract:
//! - Spans are sorted, disjoint, and each the union of whole blocks (trailers included) and
//!   the gaps between them, every gap at most the threshold.
//! - With a prefetch limit, blocks are taken in the scan's direction (from the first block
//!   forward, from the last backward) while their bytes add up to at most the limit; the rest
//!   lie outside every span and are read as any iterator reads them.
//! - A read inside a span takes the whole span; a span longer than [`PLANNED_MAX`] is read in
//!   pieces of that size from its start, the piece holding the block's offset (and the rest of
//!   the block). Memory stays bounded by one piece per table whatever the ranges add up to,
//!   and no byte is read twice whichever order the blocks are read in (but the part of a
//!   block that crosses into the next piece).
//! - A block outside every span is none of this module's business ([`PlannedSpans::window`]
//!   is `None`).
//! - With `async_io`, the table asks the OS to read every span into its page cache as soon as
//!   it has planned them (`RandomAccessFile::prefetch`), so the spans of all the tables a scan
//!   reads are on their way at once; the planned reads then find them there. A file without a
//!   page cache (direct I/O) refuses, and its planned reads stay synchronous.

use super::plan::{BlockRead, Window};

/// The most bytes a planned read takes, unless one block is longer.
pub(crate) const PLANNED_MAX: usize = 2 << 20;

/// A multi-range scan's ranges and settings, from which every table it reads plans its reads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ScanPlan {
    /// `[start, limit)` in user keys, sorted and disjoint in the family's order.
    pub ranges: Vec<(Vec<u8>, Vec<u8>)>,
    /// Blocks at most this many bytes apart are read together.
    pub coalesce: u64,
    /// The most bytes of blocks planned per table (0: no limit).
    pub max_prefetch: u64,
    /// Each range is walked backward.
    pub reverse: bool,
    /// Ask the OS to read the spans ahead (see the module documentation).
    pub async_io: bool,
}

/// One table's planned spans for a [`ScanPlan`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct PlannedSpans {
    /// `[start, end)` file ranges, sorted and disjoint.
    spans: Vec<(u64, u64)>,
}

impl PlannedSpans {
    /// The spans of the data blocks `blocks` (offset, length with trailer), in file order, a
    /// block possibly repeated (two ranges in one block), under `plan`'s threshold and limit.
    pub(crate) fn new(blocks: &[(u64, u64)], plan: &ScanPlan) -> PlannedSpans {
        let mut unique: Vec<(u64, u64)> = Vec::with_capacity(blocks.len());
        for &b in blocks {
            if unique.last().is_none_or(|l| l.0 < b.0) {
                unique.push(b);
            }
        }
        if plan.max_prefetch > 0 {
            let mut total = 0u64;
            let mut fits = |b: &(u64, u64)| {
                total = total.saturating_add(b.1);
                total <= plan.max_prefetch
            };
            if plan.reverse {
                let keep = unique.iter().rev().take_while(|b| fits(b)).count();
                unique.drain(..unique.len() - keep);
            } else {
                let keep = unique.iter().take_while(|b| fits(b)).count();
                unique.truncate(keep);
            }
        }
        let mut spans: Vec<(u64, u64)> = Vec::new();
        for (offset, len) in unique {
            let end = offset + len;
            match spans.last_mut() {
                Some(s) if offset <= s.1.saturating_add(plan.coalesce) => s.1 = s.1.max(end),
                _ => spans.push((offset, end)),
            }
        }
        PlannedSpans { spans }
    }

    /// What to read for `block` when a span holds it: the span's piece holding the block (see
    /// the module documentation).
    pub(crate) fn window(&self, block: BlockRead) -> Option<Window> {
        let i = self.spans.partition_point(|s| s.1 <= block.offset);
        let &(start, end) = self.spans.get(i)?;
        if block.offset < start || end < block.end() {
            return None;
        }
        let max = PLANNED_MAX as u64;
        let piece = start + (block.offset - start) / max * max;
        let stop = end.min(piece + max).max(block.end());
        Some(Window {
            behind: (block.offset - piece) as usize,
            ahead: (stop - block.offset) as usize,
        })
    }

    /// The spans, `[start, end)` file ranges in order.
    pub(crate) fn spans(&self) -> &[(u64, u64)] {
        &self.spans
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(coalesce: u64, max_prefetch: u64, reverse: bool) -> ScanPlan {
        ScanPlan { ranges: Vec::new(), coalesce, max_prefetch, reverse, async_io: false }
    }

    /// Blocks of 100 bytes at these offsets.
    fn blocks(offsets: &[u64]) -> Vec<(u64, u64)> {
        offsets.iter().map(|&o| (o, 100)).collect()
    }

    #[test]
    fn blocks_within_the_threshold_form_one_span() {
        let b = blocks(&[0, 100, 100, 250, 1000, 1100, 5000]);
        let s = PlannedSpans::new(&b, &plan(50, 0, false));
        assert_eq!(s.spans(), [(0, 350), (1000, 1200), (5000, 5100)]);
        let s = PlannedSpans::new(&b, &plan(0, 0, false));
        assert_eq!(s.spans(), [(0, 200), (250, 350), (1000, 1200), (5000, 5100)]);
        let s = PlannedSpans::new(&b, &plan(10_000, 0, false));
        assert_eq!(s.spans(), [(0, 5100)]);
        assert!(PlannedSpans::new(&[], &plan(50, 0, false)).spans().is_empty());
    }

    #[test]
    fn the_prefetch_limit_counts_blocks_in_the_scans_direction() {
        let b = blocks(&[0, 100, 200, 300, 400]);
        // 250 bytes: two blocks of 100 fit, the third would pass it.
        let s = PlannedSpans::new(&b, &plan(0, 250, false));
        assert_eq!(s.spans(), [(0, 200)]);
        let s = PlannedSpans::new(&b, &plan(0, 250, true));
        assert_eq!(s.spans(), [(300, 500)]);
        // A repeated block counts once.
        let s = PlannedSpans::new(&blocks(&[0, 0, 100]), &plan(0, 200, false));
        assert_eq!(s.spans(), [(0, 200)]);
        // Smaller than the first block: nothing planned.
        assert!(PlannedSpans::new(&b, &plan(0, 50, false)).spans().is_empty());
    }

    #[test]
    fn a_read_in_a_span_takes_the_whole_span() {
        let b = blocks(&[0, 100, 200, 1000]);
        let s = PlannedSpans::new(&b, &plan(0, 0, false));
        let read = |offset| s.window(BlockRead { offset, len: 100 });
        assert_eq!(read(0), Some(Window { behind: 0, ahead: 300 }));
        assert_eq!(read(100), Some(Window { behind: 100, ahead: 200 }));
        assert_eq!(read(200), Some(Window { behind: 200, ahead: 100 }));
        assert_eq!(read(1000), Some(Window { behind: 0, ahead: 100 }));
        // Outside every span, or only partly in one.
        assert_eq!(read(500), None);
        assert_eq!(read(250), None);
        assert_eq!(read(2000), None);
    }

    #[test]
    fn a_long_span_is_read_in_pieces_from_its_start() {
        let max = PLANNED_MAX as u64;
        // Blocks of 100 bytes from 0 to 2.5 pieces, at offsets that do not divide evenly.
        let n = (5 * max / 2) / 100;
        let b: Vec<_> = (0..n).map(|i| (i * 100 + 7, 100)).collect();
        let s = PlannedSpans::new(&b, &plan(0, 0, false));
        assert_eq!(s.spans(), [(7, n * 100 + 7)]);
        let piece_of = |offset: u64| {
            let w = s.window(BlockRead { offset, len: 100 }).unwrap();
            (offset - w.behind as u64, offset + w.ahead as u64)
        };
        assert_eq!(piece_of(7), (7, 7 + max));
        assert_eq!(piece_of(7 + max - 100 - 50), (7, 7 + max));
        // A block crossing into the next piece is read whole with its piece.
        let crossing = 7 + max - 50;
        assert_eq!(piece_of(crossing), (7, crossing + 100));
        assert_eq!(piece_of(7 + max + 50), (7 + max, 7 + 2 * max));
        // The last piece ends with the span.
        assert_eq!(piece_of(n * 100 + 7 - 100), (7 + 2 * max, n * 100 + 7));
    }
}
