//! Active expiry: deletes expired keys nobody reads. A key past its expiry already reads as
//! absent (`Keyspace::meta`); this removes its metadata record so that the record, and
//! through the compaction filter its sub-keys, leave the store.

use super::error::Result;
use super::keyspace::now_ms;
use super::metadata::{self, Meta};
use super::notify::{self, Notifier};
use crate::storage::Store;
use strata::WriteBatch;

/// Deletes up to `budget` expired metadata records starting at key `from`, only those whose
/// key `mine` accepts (in cluster mode: those of the partitions this node leads, once it may
/// write there; the others are left to their own leader); returns where the next round starts
/// (empty = wrap around) and how many were deleted. Each deletion raises `expired` through
/// `notifier` once written. The server's expiry task calls it periodically.
pub fn expire_cycle(
    st: &Store,
    notifier: &Notifier,
    from: &[u8],
    budget: usize,
    mut mine: impl FnMut(&[u8]) -> bool,
) -> Result<(Vec<u8>, usize)> {
    let now = now_ms();
    let mut expired = Vec::new();
    let mut seen = 0;
    let mut next = Vec::new();
    st.scan_meta(from, |k, v| {
        if seen == budget {
            next = k.to_vec();
            return false;
        }
        seen += 1;
        // The header first: most keys are live, and decoding a compact hash copies it.
        let due = metadata::raw_expire_ms(v).is_some_and(|e| e != 0 && e <= now);
        if due && Meta::decode(v).is_ok_and(|m| m.expired(now)) {
            expired.push(k.to_vec());
        }
        true
    })?;
    let mut n = 0;
    for k in expired {
        if !mine(&k) {
            continue;
        }
        let _g = st.locks.lock(&[&k]);
        // Re-check under the lock: a writer may have replaced it.
        let raw = st.read_meta_uncached(&k)?;
        if raw.as_deref().and_then(|r| Meta::decode(r).ok()).is_some_and(|m| m.expired(now_ms())) {
            let mut b = WriteBatch::new();
            st.delete_meta(&mut b, &k);
            st.write(b)?;
            notifier.raise(notify::EXPIRED, "expired", &k);
            n += 1;
        }
    }
    Ok((next, n))
}
