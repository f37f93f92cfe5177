//! Background tasks: active expiry (walks the metadata family a slice at a time, deleting
//! expired keys nobody reads) and the once-a-second WAL sync of `appendfsync everysec`.

use crate::state::Shared;
use crate::storage::SyncPolicy;
use crate::types::expiry::expire_cycle;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// Keys examined per expiry round (10 rounds a second).
const EXPIRE_BUDGET: usize = 200;

/// Starts the tasks on the current runtime.
pub fn start(sh: &Arc<Shared>) {
    let s = sh.clone();
    tokio::spawn(async move {
        let mut from = Vec::new();
        let mut tick = tokio::time::interval(Duration::from_millis(100));
        loop {
            tick.tick().await;
            // In cluster mode a deletion must come from the partition's leader, after its
            // write barrier (`cluster::node`); until the task walks only what the node leads,
            // it does not run there (expired keys read as absent all the same).
            if s.store.is_replicated() {
                continue;
            }
            let s2 = s.clone();
            let start = std::mem::take(&mut from);
            let r = tokio::task::spawn_blocking(move || {
                let r = expire_cycle(&s2.store, &start, EXPIRE_BUDGET);
                // Expiry deletions owe no acknowledgement: only keep the thread's mark clean.
                let _ = crate::storage::sync_group::take_owed_sync();
                r
            })
            .await;
            match r {
                Ok(Ok((next, n))) => {
                    from = next;
                    s.stats.expired_keys.fetch_add(n as u64, Ordering::Relaxed);
                }
                Ok(Err(_)) => {}
                // A panic in one round ends that round only: the next starts over.
                Err(e) => eprintln!("active expiry round failed: {e}"),
            }
        }
    });
    let s = sh.clone();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        loop {
            tick.tick().await;
            if s.store.sync_policy() == SyncPolicy::EverySec {
                let s2 = s.clone();
                let r = tokio::task::spawn_blocking(move || s2.store.db.flush_wal(true)).await;
                match r {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => eprintln!("background WAL sync failed: {e}"),
                    Err(e) => eprintln!("background WAL sync failed: {e}"),
                }
            }
        }
    });
}
