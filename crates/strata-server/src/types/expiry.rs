//! Active expiry: deletes expired keys nobody reads. A key past its expiry already reads as
//! absent (`Keyspace::meta`); this removes its metadata record so that the record, and
//! through the compaction filter its sub-keys, leave the store. The keys come from the due
//! index (`storage::due`, the keys noted with an expiry, taken when due) and from a walk over
//! every key that also feeds the index ([`expire_slice`]); both delete through
//! [`delete_due`].

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
    /// Keys with an expiry that the due index did not hold as found (`storage::due`): one
    /// still ahead is noted now (or refused, the index full), an expired one had no entry.
    pub unnoted: usize,
}

/// Deletes the expired keys among up to `budget` metadata records of `st` starting at the
/// stored position `from`, each through the store `mine` gives for its position (`None`: not
/// this node's to delete; in cluster mode `st` sees every partition, and a key is deleted
/// through its partition's view once this node leads it and may write there, the others are
/// left to their own leader), as [`delete_due`] does. A key whose expiry is still ahead is
/// noted in the due index (`storage::due`), so that one pass of the walk gives the index the
/// keys it missed (written before this process started, or by another node's command); an
/// expired one leaves it. The server's expiry task calls it for each database in turn, as
/// many slices a round as the expired keys found call for (`server::tasks`).
pub fn expire_slice(
    st: &Store,
    notifier: &Notifier,
    db: usize,
    from: &[u8],
    budget: usize,
    mine: impl FnMut(&[u8]) -> Option<Arc<Store>>,
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
        if expire > now {
            slice.unnoted += usize::from(st.due.note(st.set, at, expire));
        } else if expire != 0 && Meta::decode(v).is_ok_and(|m| m.expired(now)) {
            // Found here, the key needs no entry (one left would cost a read when due).
            slice.unnoted += usize::from(!st.due.forget(st.set, at));
            due.push((at.to_vec(), k.to_vec()));
        }
        true
    })?;
    (slice.expired, slice.deleted) = delete_due(notifier, db, &due, mine)?;
    Ok(slice)
}

/// Deletes those of the keys `due` (each its stored position and its user key, as `mine`
/// and the views know them) that are still expired, each through the store `mine` gives for
/// its position (`None`: not this node's to delete). The keys of one view go in one write,
/// holding their locks (in cluster mode one entry of the partition's group, not one per
/// key); each deletion raises `expired` through `notifier` once written (as of database
/// `db`). Returns how many were this node's to delete, and how many it deleted (fewer where
/// a key was written again meanwhile, or its entry in the due index was stale).
pub fn delete_due(
    notifier: &Notifier,
    db: usize,
    due: &[(Vec<u8>, Vec<u8>)],
    mut mine: impl FnMut(&[u8]) -> Option<Arc<Store>>,
) -> Result<(usize, usize)> {
    // The keys each view deletes, in the order found (a view is a partition's store).
    let mut by_view: Vec<(Arc<Store>, Vec<&[u8]>)> = Vec::new();
    let mut expired = 0;
    for (at, k) in due {
        let Some(view) = mine(at) else { continue };
        expired += 1;
        match by_view.iter_mut().find(|(v, _)| Arc::ptr_eq(v, &view)) {
            Some((_, keys)) => keys.push(k),
            None => by_view.push((view, vec![k])),
        }
    }
    let mut deleted = 0;
    for (view, keys) in by_view {
        let _g = view.locks.lock(&keys);
        deleted += delete_expired(&view, notifier, db, &keys, now_ms())?;
    }
    Ok((expired, deleted))
}
