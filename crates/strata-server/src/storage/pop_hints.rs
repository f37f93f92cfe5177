//! Where SPOP and ZPOPMIN start looking: per key generation, a lower bound below which no
//! live sub-key sorts.
//!
//! Both commands take the first entries of a key's range (SPOP the first members in byte
//! order, ZPOPMIN the first score-index entries). The entries they delete stay behind as
//! tombstones until compaction, so a scan from the start of the range would step over every
//! earlier pop's tombstone: popping n members one at a time cost O(n^2). A pop instead seeks
//! to the bound recorded by the previous one, just past the last entry it removed.
//!
//! Contract (what keeps the bounds exact):
//! - Bounds are keyed by family and range prefix (`subkey::prefix(key, version)`); they are
//!   suffixes (after the prefix). `low`: no live entry sorts below it; `high`: none sorts at or
//!   above it.
//! - Every write that inserts an entry into such a range calls [`PopHints::inserted`] with the
//!   entry's suffix while holding the key's lock; bounds it lies beyond move past it. Pops read
//!   and move the bounds under the same lock, only after their write is applied
//!   (`Store::write_applied`: in cluster mode a write is otherwise only proposed when it
//!   returns, and may still fail). Deletions never invalidate a bound.
//! - A new key generation has a new prefix (versions never repeat), so it starts unbounded;
//!   RENAME copies into a new generation.
//! - The table is memory only and bounded: when full it is cleared, and a missing bound means
//!   "the whole range" (always correct).

use parking_lot::Mutex;
use std::collections::HashMap;

/// Which family a bound is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// Set members in the `subkey` family (SPOP).
    SetMembers,
    /// Score-index entries in the `zscore` family (ZPOPMIN, ZPOPMAX).
    ScoreIndex,
}

/// The bounds of one range. `low`: no live entry sorts below it (empty: the start). `high`:
/// no live entry sorts at or above it (`None`: the end).
#[derive(Default)]
struct Bounds {
    low: Vec<u8>,
    high: Option<Vec<u8>>,
}

/// The bounds table.
#[derive(Default)]
pub struct PopHints {
    sets: Mutex<HashMap<Vec<u8>, Bounds>>,
    scores: Mutex<HashMap<Vec<u8>, Bounds>>,
}

impl PopHints {
    /// Most ranges kept per family; a table is cleared when it would grow past this.
    const MAX: usize = 64 * 1024;

    fn table(&self, fam: Family) -> &Mutex<HashMap<Vec<u8>, Bounds>> {
        match fam {
            Family::SetMembers => &self.sets,
            Family::ScoreIndex => &self.scores,
        }
    }

    /// The suffix a forward pop over `prefix` may start at (empty: the start of the range).
    pub fn low(&self, fam: Family, prefix: &[u8]) -> Vec<u8> {
        self.table(fam).lock().get(prefix).map(|b| b.low.clone()).unwrap_or_default()
    }

    /// The suffix a backward pop over `prefix` may start below (`None`: the end).
    pub fn high(&self, fam: Family, prefix: &[u8]) -> Option<Vec<u8>> {
        self.table(fam).lock().get(prefix).and_then(|b| b.high.clone())
    }

    fn entry<R>(&self, fam: Family, prefix: &[u8], f: impl FnOnce(&mut Bounds) -> R) -> R {
        let mut map = self.table(fam).lock();
        if let Some(b) = map.get_mut(prefix) {
            return f(b);
        }
        if map.len() >= Self::MAX {
            map.clear();
        }
        f(map.entry(prefix.to_vec()).or_default())
    }

    /// Records that a forward pop removed every entry of `prefix` up to `last` (inclusive).
    pub fn popped_low(&self, fam: Family, prefix: &[u8], last: &[u8]) {
        self.entry(fam, prefix, |b| b.low = successor(last));
    }

    /// Records that a backward pop removed every entry of `prefix` from `last` (inclusive) on.
    pub fn popped_high(&self, fam: Family, prefix: &[u8], last: &[u8]) {
        self.entry(fam, prefix, |b| b.high = Some(last.to_vec()));
    }

    /// Notes an entry inserted at `suffix` of `prefix`: bounds it lies beyond move past it.
    pub fn inserted(&self, fam: Family, prefix: &[u8], suffix: &[u8]) {
        let mut map = self.table(fam).lock();
        if let Some(b) = map.get_mut(prefix) {
            if suffix < b.low.as_slice() {
                b.low.clear();
                b.low.extend_from_slice(suffix);
            }
            if b.high.as_deref().is_some_and(|h| suffix >= h) {
                b.high = Some(successor(suffix));
            }
        }
    }

    /// Forgets every bound (FLUSHALL).
    pub fn clear(&self) {
        self.sets.lock().clear();
        self.scores.lock().clear();
    }
}

/// The smallest byte string above `s`: where a scan resumes after the entry `s`.
pub fn successor(s: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(s.len() + 1);
    v.extend_from_slice(s);
    v.push(0);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_follow_pops_and_inserts() {
        let h = PopHints::default();
        let (p, f) = (b"prefix".as_slice(), Family::SetMembers);
        assert_eq!(h.low(f, p), b"");
        assert_eq!(h.high(f, p), None);
        h.popped_low(f, p, b"m05");
        assert_eq!(h.low(f, p), b"m05\0");
        assert_eq!(h.low(Family::ScoreIndex, p), b"", "families are apart");
        h.inserted(f, p, b"m07");
        assert_eq!(h.low(f, p), b"m05\0", "inserts above keep it");
        h.inserted(f, p, b"m02");
        assert_eq!(h.low(f, p), b"m02", "inserts below lower it");
        h.inserted(Family::ScoreIndex, p, b"a");
        h.inserted(f, b"other", b"a");
        assert_eq!(h.low(f, p), b"m02");
        h.popped_high(f, p, b"m09");
        assert_eq!(h.high(f, p).as_deref(), Some(&b"m09"[..]));
        h.inserted(f, p, b"m08");
        assert_eq!(h.high(f, p).as_deref(), Some(&b"m09"[..]), "inserts below keep it");
        h.inserted(f, p, b"m09");
        assert_eq!(h.high(f, p).as_deref(), Some(&b"m09\0"[..]), "inserts at or above raise it");
        h.clear();
        assert_eq!(h.low(f, p), b"");
    }
}
