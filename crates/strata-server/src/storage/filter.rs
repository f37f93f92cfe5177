//! The compaction filter of the `subkey` and `zscore` families: it removes an entry when the
//! rule the store was opened with ([`StaleRule`]; the types layer's, which knows what the
//! records say) judges it stale given the store's current metadata.
//!
//! The filter holds only a weak reference to the store, set once the store is open: before
//! that, and once the store is closing, it keeps everything (never lose data on doubt).

use super::Store;
use std::sync::{Arc, OnceLock, Weak};

/// Whether the entry with this key (of `subkey` or `zscore`) is garbage given the store's
/// current metadata. It must keep an entry it cannot judge (a malformed key, a failed read).
pub type StaleRule = fn(&Store, &[u8]) -> bool;

/// Where the filter finds the store; set once the store is open.
pub type StoreSlot = Arc<OnceLock<Weak<Store>>>;

/// The decision for one entry: looks the store up through `slot` and asks `stale`.
pub fn decide(slot: &StoreSlot, stale: StaleRule, key: &[u8]) -> bool {
    let Some(store) = slot.get().and_then(Weak::upgrade) else {
        return false;
    };
    if store.closing.load(std::sync::atomic::Ordering::Acquire) {
        return false;
    }
    stale(&store, key)
}

/// Installs the filter on a family's options.
pub fn install(opts: &mut strata::Options, slot: &StoreSlot, stale: StaleRule) {
    let slot = slot.clone();
    opts.set_compaction_filter("strata-server.stale-subkeys", move |_level, key, _value| {
        if decide(&slot, stale, key) {
            strata::Decision::Remove
        } else {
            strata::Decision::Keep
        }
    });
}
