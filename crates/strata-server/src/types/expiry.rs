//! Active expiry: deletes expired keys nobody reads. A key past its expiry already reads as
//! absent (`Keyspace::meta`); this removes its metadata record so that the record, and
//! through the compaction filter its sub-keys, leave the store.

use super::error::Result;
use super::keyspace::{delete_if_expired, now_ms};
use super::metadata::{self, Meta};
use super::notify::Notifier;
use crate::storage::Store;
use std::sync::Arc;

/// Deletes up to `budget` expired metadata records of `st` starting at the stored position
/// `from`, each through the store `mine` gives for its position (`None`: not this node's to
/// delete; in cluster mode `st` sees every partition, and a key is deleted through its
/// partition's view once this node leads it and may write there, the others are left to
/// their own leader); returns where the next round starts (empty = wrap around) and how many
/// were deleted. Each deletion raises `expired` through `notifier` once written (as of
/// database `db`). The server's expiry task calls it periodically, for each database in
/// turn.
pub fn expire_cycle(
    st: &Store,
    notifier: &Notifier,
    db: usize,
    from: &[u8],
    budget: usize,
    mut mine: impl FnMut(&[u8]) -> Option<Arc<Store>>,
) -> Result<(Vec<u8>, usize)> {
    let now = now_ms();
    let mut expired = Vec::new();
    let mut seen = 0;
    let mut next = Vec::new();
    st.scan_meta(from, |at, k, v| {
        if seen == budget {
            next = at.to_vec();
            return false;
        }
        seen += 1;
        // The header first: most keys are live, and decoding a compact hash copies it.
        let due = metadata::raw_expire_ms(v).is_some_and(|e| e != 0 && e <= now);
        if due && Meta::decode(v).is_ok_and(|m| m.expired(now)) {
            expired.push((at.to_vec(), k.to_vec()));
        }
        true
    })?;
    let mut n = 0;
    for (at, k) in expired {
        let Some(view) = mine(&at) else { continue };
        let _g = view.locks.lock(&[&k]);
        if delete_if_expired(&view, notifier, db, &k, now_ms())? {
            n += 1;
        }
    }
    Ok((next, n))
}
