//! Where a compaction output file ends.
//!
//! An output of level n is later compacted into level n+1 (its *grandparents*, seen from the
//! job) together with every file of n+1 it overlaps. Each grandparent boundary an output
//! straddles costs a whole extra grandparent file in that future compaction, so outputs are
//! cut, besides at the target size, where the grandparent level has a boundary:
//!
//! ```text
//!   grandparents:  [a ..... f]   [h ....... p]        [t ..... z]
//!   keys:            b  c  e  g    i  k  m      q  r     u  w
//!   boundaries:              ^end ^start     ^end       ^start
//! ```
//!
//! Before adding the first version of a new user key, with `size` bytes in the current output
//! and `target` the target file size, the output ends when
//! - `size` reaches the largest output: `target`, or twice that when the output has
//!   grandparents (it is not bottommost), so that it can wait for a boundary; or, only when
//!   the key crossed at least one grandparent boundary since the previous key:
//! - the output plus the grandparent bytes it overlaps would exceed `max_compaction_bytes`
//!   (a later compaction of this output would be too large);
//! - the key skipped a whole grandparent file worth more than `target / 8` (two boundaries
//!   from a gap, three from inside a file): cutting here keeps that file out of the future
//!   compaction;
//! - `size` reached a share of `target` that starts at 50% and grows by 5% for every boundary
//!   the output has crossed, up to 90%: an output that has seen many boundaries is likely to
//!   meet another one before the target, so it waits for one longer.
//!
//! This is the rule RocksDB's leveled compaction applies (`level_compaction_dynamic_file_size`);
//! it trades somewhat smaller files for fewer grandparent bytes rewritten later.
//!
//! Keys are compared by user key only: an output never splits one user key's versions, so
//! only the first version of each user key is shown to [`OutputCutter::cut_before`]. A user
//! key that is the largest of one grandparent and the smallest of the next (which Strata's
//! own compactions never write) counts only the first file's bytes.

use std::sync::Arc;

use crate::comparator::KeyOrder;
use crate::key::user_key;
use crate::version::levels::TableFile;

/// The rule above, fed the user keys of one subcompaction in order.
pub(crate) struct OutputCutter<'a> {
    grandparents: &'a [Arc<TableFile>],
    target: u64,
    /// The size at which an output ends whatever the boundaries.
    max_output: u64,
    max_compaction_bytes: u64,
    /// The first grandparent whose largest key is not before the last key seen.
    index: usize,
    /// The last key seen lies before `grandparents[index]` (or past them all), not inside it.
    in_gap: bool,
    /// Grandparent bytes the current output overlaps.
    overlap: u64,
    /// Grandparent boundaries the current output has crossed.
    crossed: usize,
    seen_key: bool,
    /// The order of the keys.
    order: &'a KeyOrder,
}

impl<'a> OutputCutter<'a> {
    /// `grandparents` sorted by key in `order`, not overlapping (one level's files); none
    /// for a bottommost output.
    pub(crate) fn new(
        grandparents: &'a [Arc<TableFile>],
        target: u64,
        max_compaction_bytes: u64,
        order: &'a KeyOrder,
    ) -> Self {
        let max_output = if grandparents.is_empty() { target } else { target.saturating_mul(2) };
        OutputCutter {
            grandparents,
            target,
            max_output,
            max_compaction_bytes,
            index: 0,
            in_gap: true,
            overlap: 0,
            crossed: 0,
            seen_key: false,
            order,
        }
    }

    /// Moves to `ukey`; returns the boundaries crossed since the previous key.
    fn advance(&mut self, ukey: &[u8]) -> usize {
        let mut crossed = 0;
        while let Some(g) = self.grandparents.get(self.index) {
            if self.in_gap {
                if self.order.lt(ukey, user_key(&g.smallest)) {
                    break;
                }
                if self.seen_key {
                    crossed += 1;
                    self.overlap += g.file_size;
                }
                self.in_gap = false;
            } else {
                if !self.order.after_largest(ukey, &g.largest) {
                    break;
                }
                if self.seen_key {
                    crossed += 1;
                }
                self.in_gap = true;
                self.index += 1;
            }
        }
        if !self.seen_key {
            self.overlap = self.containing_bytes();
            self.seen_key = true;
        }
        self.crossed += crossed;
        crossed
    }

    /// Bytes of the grandparent holding the last key seen (0 in a gap).
    fn containing_bytes(&self) -> u64 {
        match self.grandparents.get(self.index) {
            Some(g) if !self.in_gap => g.file_size,
            _ => 0,
        }
    }

    /// Called with the first version of each user key, in order; `output_size` is the size of
    /// the output being written (`None` when none is open). Returns whether that output must
    /// end before `ukey`; when it does, the next output starts at `ukey`.
    pub(crate) fn cut_before(&mut self, ukey: &[u8], output_size: Option<u64>) -> bool {
        let overlap_before = self.overlap;
        let crossed_now = self.advance(ukey);
        let Some(size) = output_size else {
            return false;
        };
        let cut = size >= self.max_output
            || (crossed_now > 0 && {
                let skippable = if self.in_gap { 2 } else { 3 };
                let share = 50 + (self.crossed * 5).min(40) as u64;
                self.overlap.saturating_add(size) > self.max_compaction_bytes
                    || (crossed_now >= skippable && self.overlap - overlap_before > self.target / 8)
                    || size >= self.target.div_ceil(100) * share
            });
        if cut {
            self.crossed = 0;
            self.overlap = self.containing_bytes();
        }
        cut
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::make_internal_key;
    use crate::types::{FileNumber, SeqNo, ValueType};
    use crate::version::edit::FileMetaData;

    fn gp(number: u64, lo: &str, hi: &str, size: u64) -> Arc<TableFile> {
        let k = |s: &str| make_internal_key(s.as_bytes(), SeqNo(1), ValueType::Value);
        Arc::new(TableFile::new(FileMetaData {
            number: FileNumber(number),
            file_size: size,
            smallest: k(lo),
            largest: k(hi),
            smallest_seqno: SeqNo(1),
            largest_seqno: SeqNo(1),
            num_entries: 1,
            ..Default::default()
        }))
    }

    /// Feeds keys, each adding `per_key` bytes to the output, and returns the outputs' first
    /// keys.
    fn outputs(cutter: &mut OutputCutter<'_>, keys: &[&str], per_key: u64) -> Vec<String> {
        let mut starts = Vec::new();
        let mut size: Option<u64> = None;
        for k in keys {
            if cutter.cut_before(k.as_bytes(), size) || size.is_none() {
                starts.push((*k).to_string());
                size = Some(0);
            }
            size = size.map(|s| s + per_key);
        }
        starts
    }

    #[test]
    fn without_grandparents_only_the_target_cuts() {
        let mut c = OutputCutter::new(&[], 100, 2500, &KeyOrder::Bytewise);
        let keys = ["a", "b", "c", "d", "e", "f", "g"];
        assert_eq!(outputs(&mut c, &keys, 40), ["a", "d", "g"]);
    }

    /// Past half the target, an output ends at the first grandparent boundary.
    #[test]
    fn past_half_the_target_a_boundary_cuts() {
        let gps = [gp(1, "a", "c", 1000), gp(2, "d", "f", 1000), gp(3, "g", "i", 1000)];
        let mut c = OutputCutter::new(&gps, 100, 1 << 40, &KeyOrder::Bytewise);
        // 30 bytes a key: "a".."c" is 90 bytes (>= 55% once "d" crosses the end of file 1
        // and the start of file 2), so "d" starts an output, and so does "g".
        let keys = ["a", "b", "c", "d", "e", "f", "g", "h"];
        assert_eq!(outputs(&mut c, &keys, 30), ["a", "d", "g"]);
        // Below half the target, the same boundaries do not cut.
        let mut c = OutputCutter::new(&gps, 100, 1 << 40, &KeyOrder::Bytewise);
        assert_eq!(outputs(&mut c, &keys, 10), ["a"]);
    }

    /// The share grows with the boundaries seen: 50% at none, +5% each, at most 90%.
    #[test]
    fn the_share_grows_with_boundaries_seen() {
        // Small grandparents every key: each key crosses two boundaries (end, start).
        let names: Vec<String> = (0..20).map(|i| format!("k{i:02}")).collect();
        let gps: Vec<_> = names.iter().enumerate().map(|(i, n)| gp(i as u64, n, n, 1)).collect();
        let mut c = OutputCutter::new(&gps, 1000, 1 << 40, &KeyOrder::Bytewise);
        let keys: Vec<&str> = names.iter().map(String::as_str).collect();
        // 100 bytes (10%) a key, two boundaries (+10%) a key: the share (60%, 70%, ...) stays
        // ahead of the output's size until it stops growing at 90%, reached at the 10th key.
        let starts = outputs(&mut c, &keys, 100);
        assert_eq!(starts[..2], ["k00", "k09"]);
    }

    /// A key that jumps over a whole grandparent file worth more than target/8 cuts even
    /// when the output is small, keeping that file out of a later compaction.
    #[test]
    fn skipping_a_large_grandparent_cuts() {
        let gps = [gp(1, "a", "b", 10), gp(2, "c", "d", 500), gp(3, "e", "f", 10)];
        let mut c = OutputCutter::new(&gps, 1000, 1 << 40, &KeyOrder::Bytewise);
        // "a" is inside file 1; "e" leaves it, passes all of file 2 and enters file 3: four
        // boundaries, 500 + 10 bytes added, more than 1000/8.
        assert_eq!(outputs(&mut c, &["a", "e"], 10), ["a", "e"]);
        // Skipping a small file does not cut.
        let gps = [gp(1, "a", "b", 10), gp(2, "c", "d", 100), gp(3, "e", "f", 10)];
        let mut c = OutputCutter::new(&gps, 1000, 1 << 40, &KeyOrder::Bytewise);
        assert_eq!(outputs(&mut c, &["a", "e"], 10), ["a"]);
    }

    /// An output whose grandparent overlap would make a later compaction larger than
    /// max_compaction_bytes ends at the next boundary.
    #[test]
    fn grandparent_overlap_is_bounded() {
        let gps = [gp(1, "a", "c", 300), gp(2, "d", "f", 300), gp(3, "g", "i", 300)];
        let mut c = OutputCutter::new(&gps, 1000, 650, &KeyOrder::Bytewise);
        // Starts inside file 1 (300), "d" enters file 2 (600 + 20 bytes written: fine),
        // "g" enters file 3 (900 > 650): cut, and the new output overlaps file 3 only.
        assert_eq!(outputs(&mut c, &["a", "b", "d", "e", "g", "h"], 10), ["a", "g"]);
        assert_eq!(c.overlap, 300);
    }

    /// Keys within one grandparent never cut below the target; keys past the last
    /// grandparent cross nothing more.
    #[test]
    fn no_boundary_no_early_cut() {
        let gps = [gp(1, "a", "m", 5000)];
        let mut c = OutputCutter::new(&gps, 100, 1 << 40, &KeyOrder::Bytewise);
        let keys = ["b", "c", "d", "e", "x", "y", "z"];
        // "x" leaves file 1: one boundary with 80 bytes written (>= 55) cuts there.
        assert_eq!(outputs(&mut c, &keys, 20), ["b", "x"]);
    }

    /// With grandparents, an output waits past the target for a boundary, up to twice the
    /// target; without (bottommost), it ends at the target.
    #[test]
    fn with_grandparents_an_output_may_reach_twice_the_target() {
        let gps = [gp(1, "a", "m", 5000), gp(2, "n", "z", 5000)];
        let mut c = OutputCutter::new(&gps, 100, 1 << 40, &KeyOrder::Bytewise);
        let keys: Vec<String> = (0..12).map(|i| format!("b{i:02}")).collect();
        let mut keys: Vec<&str> = keys.iter().map(String::as_str).collect();
        keys.push("o");
        // 20 bytes a key inside file 1: no boundary until "o"; the output ends at 200 bytes
        // (after 10 keys), and "o" (a boundary, 40 bytes in) does not cut.
        assert_eq!(outputs(&mut c, &keys, 20), ["b00", "b10"]);
        let mut c = OutputCutter::new(&[], 100, 1 << 40, &KeyOrder::Bytewise);
        assert_eq!(outputs(&mut c, &keys, 20), ["b00", "b05", "b10"]);
    }
}
