//! Background tasks: active expiry (walks the metadata family a slice at a time, deleting
//! expired keys nobody reads, and publishing their `expired` keyspace notifications; in
//! cluster mode, those of the partitions the node leads) and the once-a-second WAL sync of
//! `appendfsync everysec`.

use crate::blocked::Cancel;
use crate::filing::Filing;
use crate::routing::Route;
use crate::state::Shared;
use crate::storage::SyncPolicy;
use crate::types::expiry::{expire_slice, Slice};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// Keys examined per slice of an expiry round.
const EXPIRE_SLICE: usize = 200;

/// How often an expiry round starts (Redis's `hz` default, 10 a second).
const EXPIRE_TICK: Duration = Duration::from_millis(100);

/// Where active expiry goes on: a database, and a key in it (empty: its first).
pub type ExpiryPoint = (usize, Vec<u8>);

/// How hard active expiry works, from Redis's `active-expire-effort` (1 to 10, default 1) by
/// Redis's rules: a round goes on, slice after slice, while more than `stale_percent` of the
/// keys with an expiry a slice examined were expired (10% at effort 1, one point less per
/// step), for at most `time` (25% of the tick at effort 1, two points more per step). So a
/// store where keys expire in numbers is cleared at up to a quarter of a core, and one where
/// few do costs one slice a tick.
#[derive(Clone, Copy, Debug)]
pub struct ExpiryEffort {
    /// Longest a round goes on.
    pub time: Duration,
    /// Expired keys, in percent of those with an expiry, above which a round goes on.
    pub stale_percent: usize,
}

impl ExpiryEffort {
    /// The effort `active-expire-effort` asks for (checked at CONFIG SET and at start:
    /// `config::values`).
    pub fn of(sh: &Shared) -> ExpiryEffort {
        let effort = sh.params.read().get("active-expire-effort").and_then(|v| v.parse().ok());
        let effort: u32 = effort.unwrap_or(1).clamp(1, 10) - 1;
        ExpiryEffort {
            time: EXPIRE_TICK * (25 + 2 * effort) / 100,
            stale_percent: 10 - effort as usize,
        }
    }

    /// Whether `slice` found too many expired keys to stop at.
    fn stale(&self, slice: &Slice) -> bool {
        slice.expired * 100 > slice.with_expiry * self.stale_percent
    }
}

/// One round of active expiry from `from` (blocking: run it off the async workers): where
/// the next starts and how many keys it deleted. A round walks slices of a database's keys
/// as long as `effort` says; the slice after a database's last key walks the next database
/// that has keys' families. In cluster mode a deletion is a write of its key's partition:
/// only the partition's leader makes it, after the write barrier (`Router::prepare`), and it
/// is replicated like any write; a replica leaves the key to its leader (an expired key reads
/// as absent everywhere all the same), and those keys do not make a round go on.
pub fn expire_round(
    sh: &Shared,
    from: &ExpiryPoint,
    effort: &ExpiryEffort,
) -> crate::types::Result<(ExpiryPoint, usize)> {
    let started = std::time::Instant::now();
    let (mut point, mut deleted) = (from.clone(), 0);
    loop {
        let Some((db, slice)) = expire_slice_at(sh, &point)? else {
            return Ok((point, deleted));
        };
        deleted += slice.deleted;
        let (stale, elapsed) = (effort.stale(&slice), started.elapsed());
        point = if slice.next.is_empty() { (db + 1, Vec::new()) } else { (db, slice.next) };
        if !stale || elapsed >= effort.time {
            let micros = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
            sh.stats.expire_micros.fetch_add(micros, Ordering::Relaxed);
            let now = crate::types::keyspace::now_ms() / 1000;
            sh.latency.note("expire-cycle", micros / 1000, now);
            if stale {
                sh.stats.expire_time_capped.fetch_add(1, Ordering::Relaxed);
            }
            return Ok((point, deleted));
        }
    }
}

/// One slice of a round, from `from`: the database it walked and what it did; `None` while
/// CLIENT PAUSE holds the clients (Redis's rule: a pause is what a failover stands on, and an
/// expiry is a write).
fn expire_slice_at(
    sh: &Shared,
    from: &ExpiryPoint,
) -> crate::types::Result<Option<(usize, Slice)>> {
    if sh.pause.current().is_some() {
        return Ok(None);
    }
    let (db, from) = (from.0, from.1.as_slice());
    // The database keeps its set through the slice (its events name it: `storage::databases`).
    let _pin = sh.dbs.pin(false);
    // The database itself, or (swapped away or never created) the next one that exists.
    let db = sh.dbs.each().map(|(d, _)| d).find(|d| *d >= db).unwrap_or(0);
    let st = sh.dbs.store(db);
    let r = match sh.router.as_ref() {
        None => expire_slice(st, &sh.notifier, db, from, EXPIRE_SLICE, |_| Some(st.clone())),
        Some(router) => {
            // A barrier that fails (this leader cut off) may have waited its whole timeout:
            // the slice deletes nothing more, and the next round tries again. `st` sees every
            // partition's keys; each is deleted through its partition's view.
            let mut failed = false;
            expire_slice(st, &sh.notifier, db, from, EXPIRE_SLICE, |at| {
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
    Ok(Some((db, r?)))
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
        let mut tick = tokio::time::interval(EXPIRE_TICK);
        loop {
            tick.tick().await;
            // OBJECT IDLETIME's coarse clock (`storage::access`).
            s.engine().meta_cache.access.tick();
            let s2 = s.clone();
            let start = std::mem::take(&mut from);
            let effort = ExpiryEffort::of(&s);
            // Off the async workers, where a panic ends this round only (below).
            let r = tokio::task::spawn_blocking(move || {
                redirect_blocked(&s2);
                revoke_moved_shards(&s2);
                expire_round(&s2, &start, &effort)
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
