//! The TTL value format, and the TTL opens of [`Db`](super::Db) (`Db::open_with_ttl` and
//! kin, the `rocksdb` crate's): the write time each value carries, the compaction filter that
//! drops values older than their family's TTL, the merge operator wrapper, and what the DB
//! does on writes and reads when opened that way. `utilities/ttl.rs` (`DbWithTtl`) is built on
//! the same format.
//!
//! Each stored value (and merge operand) carries its write time:
//!
//! ```text
//! +----------------------+---------------------------------------+
//! | user value (n bytes) | write time: u32 LE, seconds since 1970 |
//! +----------------------+---------------------------------------+
//! ```
//!
//! (on-disk: never change; `docs/format/ttl_value.md`).
//!
//! Contract of a `Db` opened with a TTL (as RocksDB's `DBWithTTL`):
//! - Every family of it stores values in this format, a family's TTL deciding only when its
//!   values expire (`ColumnFamilyTtl::Disabled`, a zero TTL and families made by `create_cf`:
//!   never). A write stamps each put and merge operand with the current time.
//! - Reads (`get`, `multi_get`, pinned reads, iterators) return the value without its time. A
//!   value shorter than the time (written by a DB opened without a TTL, or damaged) is
//!   `Corruption` naming the key.
//! - Expiry is at least the TTL, not exact: a value is expired once `write_time + ttl < now`,
//!   and flushes and compactions drop expired values; reads return a value until then, as
//!   RocksDB's do. (`DbWithTtl` also hides expired values from reads.)

use std::sync::Arc;

use crate::compaction_filter::{
    CompactionFilter, CompactionFilterContext, CompactionFilterFactory, Decision,
    TableFileCreationReason,
};
use crate::error::{Error, Result};
use crate::merge_operator::MergeOperator;
use crate::options::Options;
use crate::types::ValueType;
use crate::write_batch::WriteBatch;

/// Bytes of the write-time suffix.
pub const TTL_SUFFIX_LEN: usize = 4;

/// Seconds since the Unix epoch, as the wrapper's clock reports them.
pub type TtlClock = Arc<dyn Fn() -> u64 + Send + Sync>;

pub(crate) fn system_clock() -> TtlClock {
    Arc::new(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
    })
}

pub(crate) fn with_time(value: &[u8], now: u64) -> Vec<u8> {
    let mut v = Vec::with_capacity(value.len() + TTL_SUFFIX_LEN);
    v.extend_from_slice(value);
    v.extend_from_slice(&(now.min(u64::from(u32::MAX)) as u32).to_le_bytes());
    v
}

/// The user value and its write time, or `None` when `stored` is too short to hold one.
pub(crate) fn split(stored: &[u8]) -> Option<(&[u8], u64)> {
    let at = stored.len().checked_sub(TTL_SUFFIX_LEN)?;
    let mut t = [0u8; TTL_SUFFIX_LEN];
    t.copy_from_slice(&stored[at..]);
    Some((&stored[..at], u64::from(u32::from_le_bytes(t))))
}

pub(crate) fn is_expired(write_time: u64, ttl: u64, now: u64) -> bool {
    ttl > 0 && write_time.saturating_add(ttl) < now
}

pub(crate) fn malformed(key: &[u8], len: usize) -> Error {
    Error::corruption(
        "",
        0,
        format!(
            "TTL value of key {:?} is {len} bytes, shorter than its {TTL_SUFFIX_LEN}-byte write time",
            String::from_utf8_lossy(key)
        ),
    )
}

/// The built-in filter: drops expired values, hands the rest (without their suffix) to the
/// user's filter.
struct TtlFilterFactory {
    ttl: u64,
    clock: TtlClock,
    user: Option<Arc<dyn CompactionFilterFactory>>,
    name: String,
}

struct TtlFilter {
    ttl: u64,
    now: u64,
    user: Option<Box<dyn CompactionFilter>>,
    name: String,
}

impl CompactionFilter for TtlFilter {
    fn filter(&mut self, level: u32, key: &[u8], value: &[u8]) -> Decision {
        let Some((user_value, time)) = split(value) else {
            return Decision::Keep;
        };
        if is_expired(time, self.ttl, self.now) {
            return Decision::Remove;
        }
        match self.user.as_mut().map(|f| f.filter(level, key, user_value)) {
            None | Some(Decision::Keep) => Decision::Keep,
            Some(Decision::Remove) => Decision::Remove,
            Some(Decision::Change(v)) => Decision::Change(with_time(&v, time)),
        }
    }

    fn name(&self) -> &str {
        &self.name
    }
}

impl CompactionFilterFactory for TtlFilterFactory {
    fn create(&self, ctx: &CompactionFilterContext) -> Box<dyn CompactionFilter> {
        let user = self
            .user
            .as_ref()
            .filter(|u| u.should_filter_table_file_creation(ctx.reason))
            .map(|u| u.create(ctx));
        Box::new(TtlFilter { ttl: self.ttl, now: (self.clock)(), user, name: self.name.clone() })
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn should_filter_table_file_creation(&self, _reason: TableFileCreationReason) -> bool {
        true
    }
}

/// Wraps the family's merge operator: operands and base values lose their suffix, the result
/// gets the time of the merge.
struct TtlMergeOperator {
    inner: Arc<dyn MergeOperator>,
    clock: TtlClock,
}

impl MergeOperator for TtlMergeOperator {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn full_merge(
        &self,
        key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> Option<Vec<u8>> {
        let base = match existing {
            Some(e) => Some(split(e)?.0),
            None => None,
        };
        let ops = operands.iter().map(|o| split(o).map(|(v, _)| v)).collect::<Option<Vec<_>>>()?;
        let merged = self.inner.full_merge(key, base, &ops)?;
        Some(with_time(&merged, (self.clock)()))
    }

    fn partial_merge(&self, key: &[u8], operands: &[&[u8]]) -> Option<Vec<u8>> {
        let ops = operands.iter().map(|o| split(o).map(|(v, _)| v)).collect::<Option<Vec<_>>>()?;
        let merged = self.inner.partial_merge(key, &ops)?;
        Some(with_time(&merged, (self.clock)()))
    }
}

/// `opts` with the TTL filter (wrapping the user's) and merge operator installed.
pub(crate) fn ttl_options(opts: &Options, ttl: u64, clock: &TtlClock) -> Options {
    let mut o = opts.clone();
    let user = o.compaction_filter_factory.take();
    let name = match &user {
        Some(u) => format!("TtlCompactionFilter({})", u.name()),
        None => "TtlCompactionFilter".to_string(),
    };
    o.compaction_filter_factory =
        Some(Arc::new(TtlFilterFactory { ttl, clock: clock.clone(), user, name }));
    if let Some(m) = o.merge_operator.take() {
        o.merge_operator = Some(Arc::new(TtlMergeOperator { inner: m, clock: clock.clone() }));
    }
    o
}

/// `batch` with each put's value and merge operand stamped with `now` (deletions, range
/// deletions and log data unchanged); a wide-column entity is `NotSupported`. A damaged batch (`WriteBatch::from_data`) is refused
/// with the damage named, as the write path would.
pub(crate) fn stamp(batch: &WriteBatch, now: u64) -> Result<WriteBatch> {
    batch.validate()?;
    batch.rewritten(|r| match r.value_type {
        ValueType::Value | ValueType::Merge => Ok(Some((r.value_type, with_time(r.value, now)))),
        // RocksDB's DBWithTTL refuses PutEntity too: an entity has no place for a write time.
        ValueType::Entity => Err(Error::NotSupported(
            "wide-column entities are not supported in a TTL database".into(),
        )),
        _ => Ok(None),
    })
}

/// The length of the user value in a stored value of `len` bytes of key `key`: `Corruption`
/// when it is too short to carry a write time.
pub(crate) fn user_len(key: &[u8], len: usize) -> Result<usize> {
    len.checked_sub(TTL_SUFFIX_LEN).ok_or_else(|| malformed(key, len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamp_adds_the_time_to_puts_and_merges_only() {
        let mut b = WriteBatch::new();
        b.put(b"k", b"v");
        b.merge(b"m", b"op");
        b.delete(b"d");
        b.delete_range(b"a", b"b");
        b.put_log_data(b"blob");
        let s = stamp(&b, 7).unwrap();
        assert_eq!(s.len(), 4);
        let recs: Vec<_> =
            s.iter().map(|r| (r.value_type, r.key.to_vec(), r.value.to_vec())).collect();
        assert_eq!(recs[0], (ValueType::Value, b"k".to_vec(), with_time(b"v", 7)));
        assert_eq!(recs[1], (ValueType::Merge, b"m".to_vec(), with_time(b"op", 7)));
        assert_eq!(recs[2], (ValueType::Deletion, b"d".to_vec(), Vec::new()));
        assert_eq!(recs[3], (ValueType::RangeDeletion, b"a".to_vec(), b"b".to_vec()));
        let mut it = s.iter();
        let mut blobs = 0;
        while let Some(e) = it.next_entry() {
            blobs +=
                usize::from(matches!(e, crate::write_batch::Entry::LogData(b) if b == b"blob"));
        }
        assert_eq!(blobs, 1);
    }

    #[test]
    fn stamp_refuses_a_damaged_batch() {
        let mut b = WriteBatch::new();
        b.put(b"k", b"v");
        let mut data = b.data().to_vec();
        data.truncate(data.len() - 1);
        assert!(stamp(&WriteBatch::from_data(&data), 1).is_err());
    }

    #[test]
    fn user_len_needs_the_suffix() {
        assert_eq!(user_len(b"k", 4).unwrap(), 0);
        assert_eq!(user_len(b"k", 9).unwrap(), 5);
        let e = user_len(b"key7", 3).unwrap_err().to_string();
        assert!(e.contains("key7") && e.contains("3 bytes"), "{e}");
    }

    #[test]
    fn value_layout() {
        let v = with_time(b"abc", 1_700_000_000);
        assert_eq!(v.len(), 3 + TTL_SUFFIX_LEN);
        assert_eq!(split(&v), Some((&b"abc"[..], 1_700_000_000)));
        assert_eq!(split(b"abc"), None);
        assert_eq!(split(&with_time(b"", 7)), Some((&b""[..], 7)));
    }

    #[test]
    fn expiry_is_strictly_after_the_ttl() {
        assert!(!is_expired(100, 10, 110));
        assert!(is_expired(100, 10, 111));
        assert!(!is_expired(100, 0, u64::MAX));
    }
}
