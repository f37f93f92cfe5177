//! Point reads through the row cache (`Options::row_cache`; the cache itself is
//! `cache/row_cache.rs`): what one table file gave a read of one user key, kept so that the
//! next read of that key in that file replays it into its lookup instead of reading the table.
//! The cache is asked only after the table's Bloom filter let the key through: a "no" there
//! is cheaper than a lookup in a cache of many small entries, and most tables a read passes
//! hold nothing of its key.
//!
//! A row (in memory only; never written to a file):
//!
//! ```text
//! +----------------+------------------------------------------------------+
//! | cover: u64 LE  | entries, newest first, as the table gave them:       |
//! |                |   trailer: u64 LE (sequence << 8 | value type)       |
//! |                |   len: varint64, value: len bytes                    |
//! +----------------+------------------------------------------------------+
//! ```
//!
//! `cover` is the newest of the file's range tombstones covering the key at the read (0:
//! none). The entries are those of the key the lookup took from the file, up to the one that
//! decided it or the key's last. They are the same for every read of the row's tag: a lookup
//! reaches a file only while no newer source's tombstone covers the key (it ends at the first
//! that does), so where it stops in the file depends on the file's entries and tombstones
//! alone; the merge operands newer sources gave change the value made, not that place.
//!
//! What a file holds for a key never changes (tables are immutable; a file number is never
//! reused within an open, and each open reads under an owner id of its own). What a read sees
//! of it depends on its sequence number only when that is below the file's newest entry (a
//! snapshot older than the file): such a read is cached under `sequence + 1` (its tag), every
//! other under tag 0, as RocksDB keys its row cache. A row is recorded only when the cache
//! would take it in (its admission, `cache/row_cache.rs`) and the read fills caches
//! (`fill_cache`), and kept only when the file held an entry of the key and the read set no
//! error.

use super::read::{GetContext, LookupKeyBuf};
use crate::cache::{Probe, Row};
use crate::error::Error;
use crate::key::{parse_internal_key, TRAILER_LEN};
use crate::sstable::Cache;
use crate::statistics::{Statistics, Ticker};
use crate::types::SeqNo;
use crate::util::coding::{get_varint64, put_varint64};
use crate::version::levels::TableFile;

/// One open DB's use of its row cache: the cache and the DB's owner id in it.
pub(crate) struct RowCacheAccess {
    cache: Cache,
    owner: u64,
}

impl RowCacheAccess {
    /// Access to `cache` as a new owner's row cache.
    pub fn new(cache: Cache) -> Self {
        RowCacheAccess { cache, owner: crate::cache::CacheKey::new_owner() }
    }

    /// The row of `key` in `f` for a read at `seq`, if cached, else whether to record one;
    /// counted in `stats`.
    pub fn probe(
        &self,
        f: &TableFile,
        seq: SeqNo,
        key: &[u8],
        stats: Option<&Statistics>,
    ) -> Probe {
        let probe = self.cache.rows().probe(self.owner, f.number.0, tag(f, seq), key);
        if let Some(s) = stats {
            let hit = matches!(probe, Probe::Hit(_));
            s.tick(if hit { Ticker::RowCacheHit } else { Ticker::RowCacheMiss }, 1);
        }
        probe
    }

    /// Keeps what `rec` recorded of `key` in `f` for reads like the one at `seq`.
    pub fn insert(&self, f: &TableFile, seq: SeqNo, key: &[u8], rec: Recorder) {
        self.cache.rows().insert(self.owner, f.number.0, tag(f, seq), key, &rec.buf);
    }
}

/// The visibility tag of a read at `seq` of file `f` (module doc).
fn tag(f: &TableFile, seq: SeqNo) -> u64 {
    if seq >= f.largest_seqno.max(f.global_seqno) {
        0
    } else {
        seq.0 + 1
    }
}

/// A row being recorded while the table is read.
pub(crate) struct Recorder {
    buf: Vec<u8>,
}

impl Recorder {
    /// A row for a file whose tombstones cover the key up to `cover`.
    pub fn new(cover: SeqNo) -> Self {
        let mut buf = Vec::with_capacity(64);
        buf.extend_from_slice(&cover.0.to_le_bytes());
        Recorder { buf }
    }

    /// Whether the file gave the read any entry of the key.
    pub fn holds_entries(&self) -> bool {
        self.buf.len() > 8
    }

    /// Takes the table's entry `ikey`/`value` as the lookup of `key` is given it (one of
    /// another key, where the lookup stops, is not kept).
    pub fn take(&mut self, ikey: &[u8], value: &[u8], key: &[u8]) {
        if parse_internal_key(ikey).is_some_and(|p| p.user_key == key) {
            self.buf.extend_from_slice(&ikey[ikey.len() - TRAILER_LEN..]);
            put_varint64(&mut self.buf, value.len() as u64);
            self.buf.extend_from_slice(value);
        }
    }
}

/// Feeds the file's part of the lookup from `row`, as reading the file would have.
pub(crate) fn replay(row: &Row, key: &[u8], ctx: &mut GetContext<'_>) {
    let data = row.data();
    let bad = |what: &str| {
        Error::corruption("", 0, format!("row cache entry of {} bytes: {what}", data.len()))
    };
    let Some(cover) = data.first_chunk::<8>() else {
        ctx.fail(bad("no cover"));
        return;
    };
    // As the table's own tombstones: they cover the entries below them, and once the entries
    // are taken, end the lookup (`search`).
    ctx.cover_seq(SeqNo(u64::from_le_bytes(*cover)));
    // The value is taken as a copy: a pinning lookup's pin points into a table's block or a
    // memtable, never into the cache's row.
    let pin = std::mem::replace(&mut ctx.pin, false);
    // Each entry's internal key: the key, then the entry's trailer.
    let mut ikey = LookupKeyBuf::new(key, SeqNo::ZERO);
    let mut pos = 8;
    while pos < data.len() && !ctx.is_done() {
        let Some(trailer) = data.get(pos..pos + TRAILER_LEN) else {
            ctx.fail(bad("a cut trailer"));
            break;
        };
        pos += TRAILER_LEN;
        let value = get_varint64(data, &mut pos)
            .and_then(|n| usize::try_from(n).ok())
            .and_then(|n| data.get(pos..pos.checked_add(n)?).map(|v| (n, v)));
        let Some((n, value)) = value else {
            ctx.fail(bad("a cut value"));
            break;
        };
        pos += n;
        ikey.set_trailer(trailer);
        if !ctx.add(ikey.as_slice(), value) {
            break;
        }
    }
    ctx.pin = pin;
    ctx.end_if_covered();
}
