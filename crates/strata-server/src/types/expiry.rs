//! Active expiry: deletes expired keys nobody reads. A key past its expiry already reads as
//! absent (`Keyspace::meta`); this removes its metadata record so that the record, and
//! through the compaction filter its sub-keys, leave the store.

use super::error::Result;
use super::keyspace::{delete_expired, now_ms};
use super::metadata::{self, Meta};
use super::notify::Notifier;
use crate::storage::Store;
use std::sync::Arc;

/// What one slice of active expiry saw and did ([`expire_slice`]).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Slice {
    /// Where the next slice starts: empty when this one reached the end of the store.
    pub next: Vec<u8>,
    /// Keys examined that have an expiry.
    pub with_expiry: usize,
    /// Of those, the expired ones this node may delete (`mine` gave a store for).
    pub expired: usize,
    /// Keys deleted (fewer than `expired` where a key was written again meanwhile).
    pub deleted: usize,
}

/// Deletes the expired keys among up to `budget` metadata records of `st` starting at the
/// stored position `from`, each through the store `mine` gives for its position (`None`: not
/// this node's to delete; in cluster mode `st` sees every partition, and a key is deleted
/// through its partition's view once this node leads it and may write there, the others are
/// left to their own leader). The expired keys of one view go in one write, holding their
/// locks (in cluster mode one entry of the partition's group, not one per key). Each
/// deletion raises `expired` through `notifier` once written (as of database `db`). The
/// server's expiry task calls it for each database in turn, as many slices a round as the
/// expired keys found call for (`server::tasks`).
pub fn expire_slice(
    st: &Store,
    notifier: &Notifier,
    db: usize,
    from: &[u8],
    budget: usize,
    mut mine: impl FnMut(&[u8]) -> Option<Arc<Store>>,
) -> Result<Slice> {
    let now = now_ms();
    let mut due = Vec::new();
    let mut slice = Slice::default();
    let mut seen = 0;
    st.scan_meta(from, |at, k, v| {
        if seen == budget {
            slice.next = at.to_vec();
            return false;
        }
        seen += 1;
        // The header first: most keys are live, and decoding a compact hash copies it.
        let expire = metadata::raw_expire_ms(v).unwrap_or(0);
        slice.with_expiry += usize::from(expire != 0);
        if expire != 0 && expire <= now && Meta::decode(v).is_ok_and(|m| m.expired(now)) {
            due.push((at.to_vec(), k.to_vec()));
        }
        true
    })?;
    // The keys each view deletes, in the order found (a view is a partition's store).
    let mut by_view: Vec<(Arc<Store>, Vec<Vec<u8>>)> = Vec::new();
    for (at, k) in due {
        let Some(view) = mine(&at) else { continue };
        slice.expired += 1;
        match by_view.iter_mut().find(|(v, _)| Arc::ptr_eq(v, &view)) {
            Some((_, keys)) => keys.push(k),
            None => by_view.push((view, vec![k])),
        }
    }
    for (view, keys) in by_view {
        let _g = view.locks.lock(&keys);
        slice.deleted += delete_expired(&view, notifier, db, &keys, now_ms())?;
    }
    Ok(slice)
}
