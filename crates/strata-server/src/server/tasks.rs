//! Background tasks: active expiry (takes the keys due from the due index, then walks the
//! metadata family a slice at a time, deleting expired keys nobody reads, and publishing
//! their `expired` keyspace notifications; in cluster mode, those of the partitions the node
//! leads) and the once-a-second WAL sync of `appendfsync everysec`.

use crate::blocked::Cancel;
use crate::filing::Filing;
use crate::routing::Route;
use crate::state::Shared;
use crate::storage::SyncPolicy;
use crate::types::expiry::{delete_due, expire_slice, Slice};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// Keys examined per slice of an expiry round (the walk's) or taken per slice from the due
/// index.
const EXPIRE_SLICE: usize = 200;

/// How long after a failed deletion its due keys are due again ([`expire_due`]).
const RETRY_DUE: Duration = Duration::from_secs(1);

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
    walk_round(sh, from, effort).map(|(point, deleted, _)| (point, deleted))
}

/// [`expire_round`], and whether it stopped at its time limit while still finding expired
/// keys.
fn walk_round(
    sh: &Shared,
    from: &ExpiryPoint,
    effort: &ExpiryEffort,
) -> crate::types::Result<(ExpiryPoint, usize, bool)> {
    let started = std::time::Instant::now();
    let (mut point, mut deleted) = (from.clone(), 0);
    loop {
        let Some((db, slice)) = expire_slice_at(sh, &point)? else {
            return Ok((point, deleted, false));
        };
        deleted += slice.deleted;
        let (stale, elapsed) = (effort.stale(&slice), started.elapsed());
        point = if slice.next.is_empty() { (db + 1, Vec::new()) } else { (db, slice.next) };
        if !stale || elapsed >= effort.time {
            count_round(sh, elapsed, stale);
            return Ok((point, deleted, stale));
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
    let mut d = Deleter::new(sh, st);
    let r = expire_slice(st, &sh.notifier, db, from, EXPIRE_SLICE, |at| d.view(at));
    let again = crate::types::keyspace::now_ms() + RETRY_DUE.as_millis() as u64;
    for at in &d.later {
        sh.engine().due.note(st.set, at, again);
    }
    after_deletions(sh);
    Ok(Some((db, r?)))
}

/// One tick of active expiry from the walk's point `from`: the due keys ([`expire_due`])
/// and a round of the walk ([`expire_round`]) share the round's time. The due keys go first
/// and the walk has what time is left, unless the due keys ran out of time in the tick
/// before (`walk_first`): then many keys expire at once, which the walk deletes at a
/// fraction of the cost (it reads them in order; the index's keys are read one by one, far
/// apart), and deleting them takes their entries out of the index. The walk goes first for
/// as long as it runs out of time finding expired keys, then the due keys have what time
/// it left. Returns where the walk goes on and whether the next tick walks first.
pub fn expire_tick(
    sh: &Shared,
    from: &ExpiryPoint,
    effort: &ExpiryEffort,
    walk_first: bool,
) -> crate::types::Result<(ExpiryPoint, bool)> {
    let started = std::time::Instant::now();
    let left = || ExpiryEffort { time: effort.time.saturating_sub(started.elapsed()), ..*effort };
    // A failed slice of the due keys leaves the walk to find them.
    if walk_first {
        let (next, _, capped) = walk_round(sh, from, effort)?;
        if capped {
            return Ok((next, true));
        }
        let due = expire_due(sh, &left());
        return Ok((next, due.is_ok_and(|p| p.out_of_time)));
    }
    if expire_due(sh, effort).is_ok_and(|p| p.out_of_time) {
        return Ok((from.clone(), true));
    }
    Ok((expire_round(sh, from, &left())?.0, false))
}

/// What [`expire_due`] did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct DuePass {
    /// Keys deleted.
    pub deleted: usize,
    /// Whether it stopped at its time limit with a full slice just taken (more may be due).
    pub out_of_time: bool,
}

/// Deletes the keys the due index (`storage::due`) holds as due now, a slice at a time for as
/// long as `effort` allows (what is left stays for the next round). An entry whose key is
/// not this node's to delete, or no longer expired, is dropped (the walk finds such a key
/// again if it expires later). Nothing while CLIENT PAUSE holds the clients. Its time counts
/// in INFO's `expire_cycle_cpu_milliseconds`, a pass out of time in
/// `expired_time_cap_reached_count`, as the walk's rounds do.
pub fn expire_due(sh: &Shared, effort: &ExpiryEffort) -> crate::types::Result<DuePass> {
    let started = std::time::Instant::now();
    let mut pass = DuePass::default();
    let mut r = Ok(());
    while sh.pause.current().is_none() {
        let _pin = sh.dbs.pin(false);
        let due = sh.engine().due.take_due(crate::types::keyspace::now_ms(), EXPIRE_SLICE);
        if due.is_empty() {
            break;
        }
        let full = due.len() == EXPIRE_SLICE;
        for (db, st) in sh.dbs.each() {
            let mut keys: Vec<(Vec<u8>, Vec<u8>)> = due
                .iter()
                .filter(|(set, _)| *set == st.set)
                .filter_map(|(_, at)| Some((at.clone(), st.filing.strip(at)?.to_vec())))
                .collect();
            // In key order, as the walk finds them: each read lands near the one before.
            keys.sort_unstable();
            if keys.is_empty() {
                continue;
            }
            // Keys declined for a while, or whose write was refused or failed (in cluster
            // mode: a slot of the partition frozen for a move, this leader cut off), are due
            // again a moment later instead of waiting for the walk. A key deleted by an
            // earlier view's write is found gone then.
            let mut d = Deleter::new(sh, st);
            let again = crate::types::keyspace::now_ms() + RETRY_DUE.as_millis() as u64;
            match delete_due(&sh.notifier, db, &keys, |at| d.view(at)) {
                Ok((_, n)) => pass.deleted += n,
                Err(e) => {
                    d.later.extend(keys.into_iter().map(|(at, _)| at));
                    r = Err(e);
                }
            }
            for at in &d.later {
                sh.engine().due.note(st.set, at, again);
            }
        }
        after_deletions(sh);
        if r.is_err() || !full {
            break;
        }
        if started.elapsed() >= effort.time {
            pass.out_of_time = true;
            break;
        }
    }
    count_round(sh, started.elapsed(), pass.out_of_time);
    r.map(|()| pass)
}

/// Counts a round of the walk or a pass over the due keys that took `elapsed` in INFO's
/// `expire_cycle_cpu_milliseconds` and LATENCY's `expire-cycle`, and in
/// `expired_time_cap_reached_count` when it stopped at its time limit with expired keys left
/// (`capped`).
fn count_round(sh: &Shared, elapsed: Duration, capped: bool) {
    let micros = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
    sh.stats.expire_micros.fetch_add(micros, Ordering::Relaxed);
    sh.latency.note("expire-cycle", micros / 1000, crate::types::keyspace::now_ms() / 1000);
    if capped {
        sh.stats.expire_time_capped.fetch_add(1, Ordering::Relaxed);
    }
}

/// What follows expiry deletions: they owe no acknowledgement (only the thread's mark is
/// cleared), and their `expired` events go out (also those of deletions before a failure).
fn after_deletions(sh: &Shared) {
    let _ = crate::storage::sync_group::take_owed_sync();
    crate::commands::pubsub::flush_events(sh, None);
}

/// Which view deletes the key at a stored position of `st` (`types::expiry`'s `mine`):
/// standalone `st` itself; in cluster mode the key's partition's view where this node leads
/// the partition and the slot takes writes here (after the write barrier), else none. A
/// barrier that fails (this leader cut off) may have waited its whole timeout: the deleter
/// gives no more views, and the next round tries again. The keys declined for a while only
/// (a barrier failed, a slot moving, no leader known), and those another node leads the
/// partition of while this node holds a replica of it and the key still has an expiry, are
/// kept in `later`; those of another partition now are not.
struct Deleter<'a> {
    sh: &'a Shared,
    st: &'a Arc<crate::storage::Store>,
    failed: bool,
    later: Vec<Vec<u8>>,
}

impl<'a> Deleter<'a> {
    fn new(sh: &'a Shared, st: &'a Arc<crate::storage::Store>) -> Deleter<'a> {
        Deleter { sh, st, failed: false, later: Vec::new() }
    }

    fn view(&mut self, at: &[u8]) -> Option<Arc<crate::storage::Store>> {
        let Some(router) = self.sh.router.as_ref() else { return Some(self.st.clone()) };
        // `st` sees every partition's keys; each is deleted through its partition's view.
        let partition = Filing::partition_of(at)?;
        let slot = Filing::AllPartitions.slot_of(at)?;
        if router.partition_of(slot) != Some(partition) {
            return None;
        }
        match router.route(slot, true, false) {
            Route::Local if !self.failed => {}
            Route::Moved(_) => {
                // Another node leads the partition and deletes the key through its log. A
                // replica of it keeps the key for later while the key still has an expiry
                // here: should this node lead the partition before that deletion comes, it
                // deletes the key itself then, not once its walk gets there.
                if router.route(slot, false, true) == Route::Local && self.still_expiring(at) {
                    self.later.push(at.to_vec());
                }
                return None;
            }
            _ => {
                self.later.push(at.to_vec());
                return None;
            }
        }
        self.failed = router.prepare(slot, true, false).is_err();
        if self.failed {
            self.later.push(at.to_vec());
            return None;
        }
        Some(self.sh.dbs.partition(partition).clone())
    }

    /// Whether the metadata record at `at` is still there with an expiry (a read failure
    /// counts as no: the walk finds the key again).
    fn still_expiring(&self, at: &[u8]) -> bool {
        let record = self.st.read_stored_meta(at).ok().flatten();
        record.and_then(|r| crate::types::metadata::raw_expire_ms(&r)).is_some_and(|e| e != 0)
    }
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
        let mut walk_first = false;
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
                expire_tick(&s2, &start, &effort, walk_first)
            })
            .await;
            match r {
                // Each key deleted is counted where it is (`types::keyspace`).
                Ok(Ok((next, w))) => (from, walk_first) = (next, w),
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
