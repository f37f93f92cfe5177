//! The stale sub-key rule the store's compaction filter applies (`storage::filter`): an entry
//! of `subkey` or `zscore` is garbage when the live metadata of its user key is gone, expired,
//! of another generation (`version`), a string, or a compact hash (which owns no sub-keys; a
//! hash converted to sub-keys takes a fresh version, never one of older sub-keys).
//!
//! The rule reads the metadata through the DB itself, past the cache and without a snapshot
//! (`Store::read_stored_meta`): a sub-key written in the same batch as its metadata is never
//! judged stale, because the metadata is visible as soon as the batch is.

use super::keyspace::now_ms;
use super::metadata::{Kind, Meta};
use super::subkey;
use crate::storage::Store;

/// Whether the sub-key or score-index entry `sub` is garbage given the store's current
/// metadata. Malformed keys and read errors keep the entry (never lose data on doubt).
pub fn is_stale(store: &Store, sub: &[u8]) -> bool {
    let Some(subkey::Parts { lead, key, version, .. }) = subkey::decode(store.filing, sub) else {
        return false;
    };
    // The metadata record under the entry's own lead: on a cluster node, the partition that
    // wrote the entry (the filter's store sees every partition).
    let mut stored = Vec::with_capacity(lead.len() + key.len());
    stored.extend_from_slice(lead);
    stored.extend_from_slice(key);
    match store.read_stored_meta(&stored) {
        Ok(None) => true,
        Ok(Some(raw)) => match Meta::decode(&raw) {
            Ok(m) => {
                let expired = m.expired(now_ms())
                    && !store.expired_kept.load(std::sync::atomic::Ordering::Relaxed);
                m.version != version || m.kind == Kind::String || m.compact || expired
            }
            Err(_) => false,
        },
        Err(_) => false,
    }
}
