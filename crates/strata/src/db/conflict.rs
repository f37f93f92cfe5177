//! Whether a key (or a key range) was written after a sequence number, from the memtables
//! alone: the check an optimistic transaction's commit makes for every key it read for update
//! or wrote (RocksDB's rule for `OptimisticTransactionDB`), and a watch of a key range.
//!
//! The memtables are searched newest first; the first one holding a write to the key or the
//! range (a point entry, or a range tombstone overlapping it) holds the newest. When none does, the
//! answer is still certain if memory holds every write since the sequence number: when the
//! oldest memtable was already the family's active one at that number (its `earliest_seqno`,
//! RocksDB's earliest sequence number of a memtable), or its first entry comes right after
//! it or earlier (sequence numbers are dense). Otherwise a flush took writes that may touch
//! the key, and the answer is unknown (the caller fails with `TryAgain`). Writes still being inserted count when the
//! search meets them; a transaction committing holds its keys until its write is published,
//! so another transaction's write is always met.
//!
//! Not seen: an external file ingested without a sequence number of its own (RocksDB's blind
//! spot too).

use std::sync::atomic::Ordering;

use super::{Cfd, Db};
use crate::column_family::AsColumnFamilyRef;
use crate::error::Result;
use crate::iterator::InternalIterator;
use crate::key::{lookup_key, parse_internal_key};
use crate::types::SeqNo;

/// What the memtables tell of a key's writes after a sequence number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Changed {
    /// No write to the key after it.
    No,
    /// Written after it, last at this sequence number.
    Yes(SeqNo),
    /// Memory no longer holds every write since it.
    Unknown,
}

impl Db {
    /// Whether `key` of family `cfd` was written after `seq` (module docs).
    pub(crate) fn changed_since(&self, cfd: &Cfd, key: &[u8], seq: SeqNo) -> Changed {
        self.changed_in(cfd, key, None, seq)
    }

    /// Whether a key of `[begin, end)` in family `cfd` was written after `seq` (module docs).
    pub(crate) fn range_changed_since(
        &self,
        cfd: &Cfd,
        begin: &[u8],
        end: &[u8],
        seq: SeqNo,
    ) -> Changed {
        self.changed_in(cfd, begin, Some(end), seq)
    }

    /// [`Db::range_changed_since`] of `[begin, end)`; with no `end`, of the key `begin`,
    /// whose first entry in a memtable is its newest there (the walk stops at it).
    fn changed_in(&self, cfd: &Cfd, begin: &[u8], end: Option<&[u8]>, seq: SeqNo) -> Changed {
        let sv = cfd.current_super_version();
        let order = sv.version.order();
        let seek = lookup_key(begin, SeqNo::MAX);
        let in_range = |k: &[u8]| match end {
            Some(e) => order.lt(k, e),
            None => k == begin,
        };
        for m in std::iter::once(&sv.mem).chain(sv.imm.iter()) {
            // A walk, not a point lookup: the memtable's filter knows keys, not ranges.
            let mut newest = SeqNo::ZERO;
            let mut it = m.iter();
            it.seek(&seek);
            while it.valid() {
                match parse_internal_key(it.key()) {
                    Some(p) if in_range(p.user_key) => newest = newest.max(p.seq),
                    _ => break,
                }
                if end.is_none() {
                    break;
                }
                it.next();
            }
            if let Some(f) = m.fragmented_range_tombstones() {
                for frag in f.fragments() {
                    let overlaps = match end {
                        Some(e) => order.lt(&frag.start, e) && order.lt(begin, &frag.end),
                        None => order.le(&frag.start, begin) && order.lt(begin, &frag.end),
                    };
                    if overlaps {
                        if let Some((s, _)) = frag.newest_visible(SeqNo::MAX) {
                            newest = newest.max(s);
                        }
                    }
                }
            }
            if newest > SeqNo::ZERO {
                return if newest > seq { Changed::Yes(newest) } else { Changed::No };
            }
        }
        let oldest = sv.imm.last().unwrap_or(&sv.mem);
        // Certain when the oldest memtable was already active at `seq` (every later write of
        // the family is in memory), or holds the write right after it; with memory empty
        // and its start unknown, only when nothing was published after `seq`.
        let active_since = oldest.earliest_seqno().is_some_and(|e| e <= seq);
        let covered = active_since
            || match oldest.first_seqno() {
                Some(first) => first.0 <= seq.0.saturating_add(1),
                None => self.inner.visible_sequence.load(Ordering::Acquire) <= seq.0,
            };
        if covered {
            Changed::No
        } else {
            Changed::Unknown
        }
    }

    /// Whether a key of `[begin, end)` in family `cf` was written after sequence number `seq`
    /// (as [`Db::latest_sequence_number`] gave it), as far as the memtables tell: `Some(true)`
    /// written, `Some(false)` not, `None` when a flush took writes made since `seq` and the
    /// answer is unknown. Writes published before the call are always seen; so is a write
    /// still being inserted when the search meets it. What a watch (Redis's WATCH) or an
    /// optimistic check needs; an external file ingested without a sequence number of its
    /// own is not seen.
    pub fn written_since_cf(
        &self,
        cf: &impl AsColumnFamilyRef,
        begin: &[u8],
        end: &[u8],
        seq: u64,
    ) -> Result<Option<bool>> {
        let cfd = self.cfd(cf)?;
        Ok(match self.range_changed_since(cfd, begin, end, SeqNo(seq)) {
            Changed::No => Some(false),
            Changed::Yes(_) => Some(true),
            Changed::Unknown => None,
        })
    }
}
