//! A bidirectional cursor ([`EngineIter`]) over an engine whose reads are Rust range
//! iterators rather than seekable cursors (fjall, redb): each positioning reads a chunk of
//! entries from a fresh range starting at the target, and moving on past the chunk reads the
//! next one from just after the last key seen. Changing direction re-reads from the current
//! key the other way.
//!
//! Contract of a [`ChunkSource`]: every fetch of one cursor reads the same snapshot (the
//! source owns it), so a scan in chunks sees what one iterator would have seen.
//!
//! Chunks start small (a seek usually reads a few entries) and grow to [`SCAN_CHUNK`] for
//! scans, so a range is opened once per 256 entries of a scan: the cost of the re-seek is
//! spread over the chunk.

use std::collections::VecDeque;
use std::ops::Bound;

use anyhow::{anyhow, Result};

use super::{Bounds, EngineIter};

/// Entries read by the first fetch after a seek.
const SEEK_CHUNK: usize = 16;
/// Entries read by a fetch that continues a scan.
pub(super) const SCAN_CHUNK: usize = 256;

/// One key and its value.
pub(super) type Entry = (Vec<u8>, Vec<u8>);

/// What a [`ChunkedCursor`] reads from.
pub(super) trait ChunkSource {
    /// Appends to `out` up to `n` entries with keys within (`lo`, `hi`), ascending when
    /// `forward`, else descending from `hi`.
    fn fetch(
        &self,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        forward: bool,
        n: usize,
        out: &mut VecDeque<Entry>,
    ) -> Result<()>;
}

/// Hands `push` the first `n` items of `range` when `forward`, else its last `n`, last
/// first: the two directions of a [`ChunkSource::fetch`] over an engine's double-ended range.
pub(super) fn take_ends<I: DoubleEndedIterator>(
    range: I,
    forward: bool,
    n: usize,
    mut push: impl FnMut(I::Item) -> Result<()>,
) -> Result<()> {
    if forward {
        range.take(n).try_for_each(push)
    } else {
        range.rev().take(n).try_for_each(&mut push)
    }
}

/// The cursor; see the module comment.
pub(super) struct ChunkedCursor<S> {
    src: S,
    /// Iterator bounds: lower inclusive, upper exclusive.
    lower: Option<Vec<u8>>,
    upper: Option<Vec<u8>>,
    /// Buffered entries in the current direction; the front is the current entry.
    rows: VecDeque<Entry>,
    forward: bool,
    /// The last fetch returned fewer entries than asked: nothing lies beyond `rows`.
    at_end: bool,
    error: Option<anyhow::Error>,
}

/// The bound at an iterator bound (`None`: unbounded).
fn edge(b: Option<&[u8]>, inclusive: bool) -> Bound<&[u8]> {
    match b {
        Some(k) if inclusive => Bound::Included(k),
        Some(k) => Bound::Excluded(k),
        None => Bound::Unbounded,
    }
}

/// The bound at a key, inclusive or not.
fn at((k, inclusive): (&[u8], bool)) -> Bound<&[u8]> {
    if inclusive {
        Bound::Included(k)
    } else {
        Bound::Excluded(k)
    }
}

impl<S: ChunkSource> ChunkedCursor<S> {
    pub(super) fn new(src: S, bounds: Bounds<'_>) -> Self {
        ChunkedCursor {
            src,
            lower: bounds.lower.map(<[u8]>::to_vec),
            upper: bounds.upper.map(<[u8]>::to_vec),
            rows: VecDeque::new(),
            forward: true,
            at_end: true,
            error: None,
        }
    }

    /// Replaces the buffer with up to `n` entries from `from` on (inclusive or not) in the
    /// given direction; `None` starts at the bound on that side.
    fn fetch(&mut self, from: Option<(&[u8], bool)>, forward: bool, n: usize) {
        self.forward = forward;
        self.rows.clear();
        let (lo, hi) = if forward {
            // A start below the lower bound starts at the bound.
            let lo = match (from, &self.lower) {
                (Some((k, _)), Some(l)) if k < l.as_slice() => Bound::Included(l.as_slice()),
                (Some(f), _) => at(f),
                (None, _) => edge(self.lower.as_deref(), true),
            };
            (lo, edge(self.upper.as_deref(), false))
        } else {
            let hi = match (from, &self.upper) {
                (Some((k, _)), Some(u)) if k >= u.as_slice() => Bound::Excluded(u.as_slice()),
                (Some(f), _) => at(f),
                (None, _) => edge(self.upper.as_deref(), false),
            };
            (edge(self.lower.as_deref(), true), hi)
        };
        // An empty or inverted range reads nothing (some sources reject one).
        let empty = match (lo, hi) {
            (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) => {
                a > b
                    || (a == b
                        && !(matches!(lo, Bound::Included(_)) && matches!(hi, Bound::Included(_))))
            }
            _ => false,
        };
        if empty {
            self.at_end = true;
            return;
        }
        let mut rows = std::mem::take(&mut self.rows);
        match self.src.fetch(lo, hi, forward, n, &mut rows) {
            Ok(()) => self.at_end = rows.len() < n,
            Err(e) => {
                rows.clear();
                self.at_end = true;
                self.error = Some(e);
            }
        }
        self.rows = rows;
    }

    fn step(&mut self, forward: bool) {
        let Some((cur, _)) = self.rows.pop_front() else { return };
        if forward != self.forward {
            self.fetch(Some((&cur, false)), forward, SEEK_CHUNK);
        } else if self.rows.is_empty() && !self.at_end {
            self.fetch(Some((&cur, false)), forward, SCAN_CHUNK);
        }
    }
}

impl<S: ChunkSource> EngineIter for ChunkedCursor<S> {
    fn seek_to_first(&mut self) {
        self.fetch(None, true, SCAN_CHUNK);
    }

    fn seek_to_last(&mut self) {
        self.fetch(None, false, SCAN_CHUNK);
    }

    fn seek(&mut self, key: &[u8]) {
        self.fetch(Some((key, true)), true, SEEK_CHUNK);
    }

    fn next(&mut self) {
        self.step(true);
    }

    fn prev(&mut self) {
        self.step(false);
    }

    fn valid(&self) -> bool {
        !self.rows.is_empty()
    }

    fn key(&self) -> &[u8] {
        self.rows.front().map_or(&[], |(k, _)| k.as_slice())
    }

    fn value(&self) -> &[u8] {
        self.rows.front().map_or(&[], |(_, v)| v.as_slice())
    }

    fn status(&self) -> Result<()> {
        match &self.error {
            Some(e) => Err(anyhow!("{e:#}")),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    /// A `BTreeMap` source: the model the cursor must match.
    struct MapSource(BTreeMap<Vec<u8>, Vec<u8>>);

    impl ChunkSource for &MapSource {
        fn fetch(
            &self,
            lo: Bound<&[u8]>,
            hi: Bound<&[u8]>,
            forward: bool,
            n: usize,
            out: &mut VecDeque<Entry>,
        ) -> Result<()> {
            let r = self.0.range::<[u8], _>((lo, hi)).map(|(k, v)| (k.clone(), v.clone()));
            if forward {
                out.extend(r.take(n));
            } else {
                out.extend(r.rev().take(n));
            }
            Ok(())
        }
    }

    fn keys(c: &mut ChunkedCursor<&MapSource>, forward: bool) -> Vec<u32> {
        let mut v = Vec::new();
        while c.valid() {
            v.push(u32::from_be_bytes(c.key().try_into().expect("4-byte key")));
            if forward {
                c.next();
            } else {
                c.prev();
            }
        }
        v
    }

    #[test]
    fn walks_like_a_btreemap_across_chunks_and_turns() {
        let src =
            MapSource((0..1000u32).map(|i| ((i * 2).to_be_bytes().to_vec(), vec![])).collect());
        let mut c = ChunkedCursor::new(&src, Bounds::default());
        c.seek_to_first();
        assert_eq!(keys(&mut c, true), (0..1000).map(|i| i * 2).collect::<Vec<_>>());
        c.seek_to_last();
        assert_eq!(keys(&mut c, false), (0..1000).rev().map(|i| i * 2).collect::<Vec<_>>());
        // A seek between keys lands on the next one; a turn goes back from there.
        c.seek(&601u32.to_be_bytes());
        assert_eq!(c.key(), 602u32.to_be_bytes());
        c.prev();
        assert_eq!(c.key(), 600u32.to_be_bytes());
        c.next();
        assert_eq!(c.key(), 602u32.to_be_bytes());
        c.seek(&5000u32.to_be_bytes());
        assert!(!c.valid());
        assert!(c.status().is_ok());
    }

    #[test]
    fn honours_bounds() {
        let src = MapSource((0..100u32).map(|i| (i.to_be_bytes().to_vec(), vec![1])).collect());
        let (lo, hi) = (10u32.to_be_bytes(), 20u32.to_be_bytes());
        let mut c = ChunkedCursor::new(&src, Bounds { lower: Some(&lo), upper: Some(&hi) });
        c.seek_to_first();
        assert_eq!(keys(&mut c, true), (10..20).collect::<Vec<_>>());
        c.seek_to_last();
        assert_eq!(keys(&mut c, false), (10..20).rev().collect::<Vec<_>>());
        c.seek(&3u32.to_be_bytes());
        assert_eq!(c.key(), lo);
        c.seek(&25u32.to_be_bytes());
        assert!(!c.valid());
    }
}
