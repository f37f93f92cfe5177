//! The garbage collector of stale sub-keys: a compaction filter on the `subkey` and `zscore`
//! families that removes an entry when the live metadata of its user key is gone, expired,
//! of another generation (`version`), a string, or a compact hash (which owns no sub-keys; a
//! hash converted to sub-keys takes a fresh version, never one of older sub-keys).
//!
//! The filter reads the metadata through the DB itself (a plain `get` on the `metadata`
//! family, no snapshot): a sub-key written in the same batch as its metadata is never judged
//! stale, because the metadata is visible as soon as the batch is. It holds only a weak
//! reference to the store, and keeps everything once the store is closing.

use super::metadata::Meta;
use super::{now_ms, subkey, Store};
use std::sync::{Arc, OnceLock, Weak};

/// Where the filter finds the store; set once the store is open.
pub type StoreSlot = Arc<OnceLock<Weak<Store>>>;

/// Whether the sub-key `sub` is garbage given the store's current metadata. Malformed keys
/// and read errors keep the entry (never lose data on doubt).
pub fn is_stale(store: &Store, sub: &[u8]) -> bool {
    let Some((key, version, _)) = subkey::decode(sub) else {
        return false;
    };
    match store.db.get_cf(&*store.meta_cf, key) {
        Ok(None) => true,
        Ok(Some(raw)) => match Meta::decode(&raw) {
            Ok(m) => {
                m.version != version
                    || m.kind == super::Kind::String
                    || m.compact
                    || m.expired(now_ms())
            }
            Err(_) => false,
        },
        Err(_) => false,
    }
}

/// The decision for one entry: looks the store up through `slot`.
pub fn decide(slot: &StoreSlot, sub: &[u8]) -> bool {
    let Some(store) = slot.get().and_then(Weak::upgrade) else {
        return false;
    };
    if store.closing.load(std::sync::atomic::Ordering::Acquire) {
        return false;
    }
    is_stale(&store, sub)
}
