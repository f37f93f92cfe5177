//! Background tasks: active expiry (walks the metadata family a slice at a time, deleting
//! expired keys nobody reads, and publishing their `expired` keyspace notifications; in
//! cluster mode, those of the partitions the node leads) and the once-a-second WAL sync of
//! `appendfsync everysec`.

use crate::blocked::Cancel;
use crate::filing::Filing;
use crate::routing::Route;
use crate::state::Shared;
use crate::storage::SyncPolicy;
use crate::types::expiry::expire_cycle;
use std::sync::Arc;
use std::time::Duration;

/// Keys examined per expiry round (10 rounds a second).
const EXPIRE_BUDGET: usize = 200;

/// Where active expiry goes on: a database, and a key in it (empty: its first).
pub type ExpiryPoint = (usize, Vec<u8>);

/// One round of active expiry from `from` (blocking: run it off the async workers): where
/// the next starts and how many keys it deleted. A round walks one database; the one after
/// its last key walks the next database that has keys' families. In cluster mode a deletion is a write
/// of its key's partition: only the partition's leader makes it, after the write barrier
/// (`Router::prepare`), and it is replicated like any write; a replica leaves the key to its
/// leader (an expired key reads as absent everywhere all the same).
pub fn expire_round(sh: &Shared, from: &ExpiryPoint) -> crate::types::Result<(ExpiryPoint, usize)> {
    // No deletion while CLIENT PAUSE holds the clients (Redis's rule: a pause is what a
    // failover stands on, and an expiry is a write).
    if sh.pause.current().is_some() {
        return Ok((from.clone(), 0));
    }
    let (db, from) = (from.0, from.1.as_slice());
    // The database keeps its set through the round (its events name it: `storage::databases`).
    let _pin = sh.dbs.pin(false);
    // The database itself, or (swapped away or never created) the next one that exists.
    let db = sh.dbs.each().map(|(d, _)| d).find(|d| *d >= db).unwrap_or(0);
    let st = sh.dbs.store(db);
    let r = match sh.router.as_ref() {
        None => expire_cycle(st, &sh.notifier, db, from, EXPIRE_BUDGET, |_| Some(st.clone())),
        Some(router) => {
            // A barrier that fails (this leader cut off) may have waited its whole timeout:
            // the round deletes nothing more, and the next one tries again. `st` sees every
            // partition's keys; each is deleted through its partition's view.
            let mut failed = false;
            expire_cycle(st, &sh.notifier, db, from, EXPIRE_BUDGET, |at| {
                let partition = Filing::partition_of(at)?;
                let slot = Filing::AllPartitions.slot_of(at)?;
                if failed
                    || router.partition_of(slot) != Some(partition)
                    || router.route(slot, true, false) != Route::Local
                {
                    return None;
                }
                failed = router.prepare(slot, true, false).is_err();
                (!failed).then(|| sh.dbs.partition(partition).clone())
            })
        }
    };
    // Expiry deletions owe no acknowledgement: only keep the thread's mark clean.
    let _ = crate::storage::sync_group::take_owed_sync();
    // Their `expired` events, for the deletions written (also those before a failure).
    crate::commands::pubsub::flush_events(sh, None);
    let (next, n) = r?;
    let point = if next.is_empty() { (db + 1, next) } else { (db, next) };
    Ok((point, n))
}

/// In cluster mode, sends the clients blocked on a key (BLPOP...) whose slot this node no
/// longer serves on to the node that does, as Redis Cluster does: the slot moved to another
/// partition (`ASK`, then `MOVED`), or this node stopped leading its partition (`MOVED`).
/// Their pushes are written there now, so waiting here would wait forever.
pub fn redirect_blocked(sh: &Shared) {
    let Some(router) = sh.router.as_ref() else { return };
    if sh.blocked.count() == 0 {
        return;
    }
    for waited in sh.blocked.waited_keys() {
        let Some((_, key)) = crate::blocked::split_waited_key(&waited) else { continue };
        let slot = crate::slots::key_slot(key);
        for id in sh.blocked.waiters_of(&waited) {
            // A blocked write (BLPOP...) needs the leader; a blocked read (XREAD BLOCK) may
            // wait on any replica (a READONLY connection's).
            let write = sh
                .blocked
                .command_of(id)
                .and_then(|name| crate::commands::lookup(&name))
                .is_none_or(|c| c.write);
            let reply = match router.route(slot, write, !write) {
                Route::Moved(addr) => format!("MOVED {slot} {addr}"),
                Route::Ask(addr) => format!("ASK {slot} {addr}"),
                // Served here, waiting for a leader, or a move's freeze: the wait goes on.
                Route::Local | Route::Down | Route::TryAgain => continue,
            };
            sh.blocked.cancel(id, Cancel::Error(reply));
        }
    }
}

/// In cluster mode, unsubscribes the subscribers of shard channels whose slot this node no
/// longer serves (its partition's leader moved, or the slot moved to another partition), each
/// told with a `sunsubscribe` push, as Redis Cluster does when a slot leaves a node: the
/// client subscribes again where the slot went, instead of waiting for messages that are now
/// published elsewhere.
pub fn revoke_moved_shards(sh: &Shared) {
    let Some(router) = sh.router.as_ref() else { return };
    sh.pubsub.revoke_shards(|channel| {
        let slot = crate::slots::key_slot(channel);
        matches!(router.route(slot, false, false), Route::Moved(_) | Route::Ask(_))
    });
}

/// Starts the tasks on the current runtime.
pub fn start(sh: &Arc<Shared>) {
    let s = sh.clone();
    tokio::spawn(async move {
        let mut from: ExpiryPoint = (0, Vec::new());
        let mut tick = tokio::time::interval(Duration::from_millis(100));
        loop {
            tick.tick().await;
            // OBJECT IDLETIME's coarse clock (`storage::access`).
            s.engine().meta_cache.access.tick();
            let s2 = s.clone();
            let start = std::mem::take(&mut from);
            // Off the async workers, where a panic ends this round only (below).
            let r = tokio::task::spawn_blocking(move || {
                redirect_blocked(&s2);
                revoke_moved_shards(&s2);
                expire_round(&s2, &start)
            })
            .await;
            match r {
                // Each key deleted is counted where it is (`types::keyspace`).
                Ok(Ok((next, _))) => from = next,
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
            if s.engine().sync_policy() == SyncPolicy::EverySec {
                let s2 = s.clone();
                let r = tokio::task::spawn_blocking(move || s2.engine().db.flush_wal(true)).await;
                match r {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => eprintln!("background WAL sync failed: {e}"),
                    Err(e) => eprintln!("background WAL sync failed: {e}"),
                }
            }
        }
    });
}
