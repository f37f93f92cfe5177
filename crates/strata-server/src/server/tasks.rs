//! Background tasks: active expiry (takes the keys due from the due index, then walks the
//! metadata family a slice at a time, deleting expired keys nobody reads, and publishing
//! their `expired` keyspace notifications; in cluster mode, those of the partitions the node
//! leads; the walk slows to a patrol once the index holds every key with an expiry,
//! [`WalkPace`]), the clients' round (each connection's buffers fitted to its recent use,
//! an idle one's let go of) and the once-a-second WAL sync of `appendfsync everysec`.

use crate::blocked::Cancel;
use crate::filing::Filing;
use crate::routing::Route;
use crate::state::Shared;
use crate::storage::SyncPolicy;
use crate::sync_source::cron::ReplicationCron;
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

/// Ticks per round of the walk while it patrols ([`WalkPace`]).
pub const PATROL_TICKS: u32 = 10;

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
    walk_round(sh, from, effort).map(|w| (w.point, w.deleted))
}

/// What a round of the walk did.
struct Walk {
    /// Where the next round starts.
    point: ExpiryPoint,
    /// Keys deleted.
    deleted: usize,
    /// Whether it stopped at its time limit while still finding expired keys.
    capped: bool,
    /// What it found for the walk's pace.
    found: WalkFound,
}

/// What a round of the walk found that sets the walk's pace ([`WalkPace`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WalkFound {
    /// Keys with an expiry that the due index did not hold (`types::expiry::Slice`).
    pub unnoted: usize,
    /// Whether it walked to the end of the last database (a pass over every key ended).
    pub passed_end: bool,
}

fn walk_round(
    sh: &Shared,
    from: &ExpiryPoint,
    effort: &ExpiryEffort,
) -> crate::types::Result<Walk> {
    let started = std::time::Instant::now();
    sh.stats.expire_walk_rounds.fetch_add(1, Ordering::Relaxed);
    let mut walk =
        Walk { point: from.clone(), deleted: 0, capped: false, found: WalkFound::default() };
    loop {
        let Some((db, slice, last_db)) = expire_slice_at(sh, &walk.point)? else {
            return Ok(walk);
        };
        walk.deleted += slice.deleted;
        walk.found.unnoted += slice.unnoted;
        walk.found.passed_end |= last_db && slice.next.is_empty();
        let (stale, elapsed) = (effort.stale(&slice), started.elapsed());
        walk.point = if slice.next.is_empty() { (db + 1, Vec::new()) } else { (db, slice.next) };
        if !stale || elapsed >= effort.time {
            count_round(sh, elapsed, stale);
            walk.capped = stale;
            return Ok(walk);
        }
    }
}

/// Whether active expiry deletes nothing now: while CLIENT PAUSE holds the clients (Redis's
/// rule: a pause is what a failover stands on, and an expiry is a write), and while the
/// server follows a master, whose DELs remove its keys (`storage::Engine::expired_kept`;
/// a writable replica's own keys aside: [`own_expiry_only`]).
fn expiry_held(sh: &Shared) -> bool {
    sh.pause.current().is_some() || sh.engine().expired_kept.load(Ordering::Relaxed)
}

/// One slice of a round, from `from`: the database it walked, what it did, and whether that
/// database is the last one with keys' families; `None` while expiry is held
/// ([`expiry_held`]).
fn expire_slice_at(
    sh: &Shared,
    from: &ExpiryPoint,
) -> crate::types::Result<Option<(usize, Slice, bool)>> {
    if expiry_held(sh) {
        return Ok(None);
    }
    let (db, from) = (from.0, from.1.as_slice());
    // The database keeps its set through the slice (its events name it: `storage::databases`).
    let _pin = sh.dbs.pin(false);
    // The database itself, or (swapped away or never created) the next one that exists.
    let db = sh.dbs.each().map(|(d, _)| d).find(|d| *d >= db).unwrap_or(0);
    let last_db = !sh.dbs.each().any(|(d, _)| d > db);
    let st = sh.dbs.store(db);
    let mut d = Deleter::new(sh, st);
    let r = expire_slice(st, &sh.notifier, db, from, EXPIRE_SLICE, |at| d.view(at));
    let again = crate::types::keyspace::now_ms() + RETRY_DUE.as_millis() as u64;
    for at in &d.later {
        sh.engine().due.note(st.set, at, again);
    }
    after_deletions(sh);
    Ok(Some((db, r?, last_db)))
}

/// How often the walk takes a round (`active-expire-effort` still sets how long a round
/// goes on). The walk is there to find the keys with an expiry that the due index lacks
/// (`storage::due`); once a whole pass over every database found none, the index holds
/// every such key, and walking them all again ten times a second would read the whole store
/// over and over (2,000 keys a second, for ever, however few keys have an expiry: Redis
/// samples only its keys with an expiry). So:
/// - the walk takes a round every tick (Redis's pace) from the start, where the index is
///   empty whatever the store holds;
/// - once a whole pass (from the first key of the first database to the end of the last)
///   found no key the index lacked, it patrols: a round every [`PATROL_TICKS`] ticks, so a
///   key that came in unnoted is still found, a pass taking ten times as long;
/// - a round that finds a key the index lacked, or a gap the index counts (a refused
///   entry, a snapshot installed, a slot's data ingested: [`crate::storage::due::DueIndex::gaps`]),
///   puts it back at the full pace, and the pass under way no longer counts as clean.
///
/// Ticks whose due keys ran out of time still walk first, patrolling or not (many keys
/// expiring at once: `expire_tick`).
#[derive(Clone, Debug)]
pub struct WalkPace {
    patrolling: bool,
    /// Whether the pass under way has found nothing the index lacked, and no gap came.
    clean: bool,
    /// The index's gaps last seen.
    gaps: u64,
    /// Ticks since the last patrol round.
    idle: u32,
}

impl WalkPace {
    /// The pace of a walk starting at the start of a pass, the index at `gaps` gaps.
    pub fn new(gaps: u64) -> WalkPace {
        WalkPace { patrolling: false, clean: true, gaps, idle: 0 }
    }

    /// Whether the walk patrols.
    pub fn patrolling(&self) -> bool {
        self.patrolling
    }

    /// Whether this tick's round walks, the index now at `gaps` gaps.
    pub fn walks_now(&mut self, gaps: u64) -> bool {
        if gaps != self.gaps {
            self.gaps = gaps;
            (self.patrolling, self.clean) = (false, false);
        }
        if !self.patrolling {
            return true;
        }
        self.idle += 1;
        if self.idle < PATROL_TICKS {
            return false;
        }
        self.idle = 0;
        true
    }

    /// What a round of the walk found.
    pub fn walked(&mut self, found: WalkFound) {
        if found.passed_end {
            self.patrolling |= self.clean;
            self.clean = true;
        }
        if found.unnoted > 0 {
            (self.patrolling, self.clean) = (false, false);
            self.idle = 0;
        }
    }
}

/// What one tick of active expiry did ([`expire_tick`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tick {
    /// Where the walk goes on.
    pub point: ExpiryPoint,
    /// Whether the next tick walks first.
    pub walk_first: bool,
    /// What the walk found, when the tick walked.
    pub walked: Option<WalkFound>,
}

/// One tick of active expiry from the walk's point `from`: the due keys ([`expire_due`])
/// and, where `walk` says so ([`WalkPace`]), a round of the walk ([`expire_round`]) share
/// the round's time. The due keys go first and the walk has what time is left, unless the
/// due keys ran out of time in the tick before (`walk_first`, which walks whatever `walk`
/// says): then many keys expire at once, which the walk deletes at a fraction of the cost
/// (it reads them in order; the index's keys are read one by one, far apart), and deleting
/// them takes their entries out of the index. The walk goes first for as long as it runs
/// out of time finding expired keys, then the due keys have what time it left. While the
/// server follows a master, a tick deletes only the writable replica's own keys that are due
/// ([`own_expiry_only`]).
pub fn expire_tick(
    sh: &Shared,
    from: &ExpiryPoint,
    effort: &ExpiryEffort,
    walk_first: bool,
    walk: bool,
) -> crate::types::Result<Tick> {
    let started = std::time::Instant::now();
    let left = || ExpiryEffort { time: effort.time.saturating_sub(started.elapsed()), ..*effort };
    let unmoved = |walk_first| Tick { point: from.clone(), walk_first, walked: None };
    if own_expiry_only(sh) {
        expire_due_in(sh, Due::Own, effort)?;
        return Ok(unmoved(false));
    }
    // A failed slice of the due keys leaves the walk to find them.
    if walk_first {
        let w = walk_round(sh, from, effort)?;
        let walk_first = w.capped || expire_due(sh, &left()).is_ok_and(|p| p.out_of_time);
        return Ok(Tick { point: w.point, walk_first, walked: Some(w.found) });
    }
    if expire_due(sh, effort).is_ok_and(|p| p.out_of_time) {
        return Ok(unmoved(true));
    }
    if !walk {
        return Ok(unmoved(false));
    }
    let w = walk_round(sh, from, &left())?;
    Ok(Tick { point: w.point, walk_first: false, walked: Some(w.found) })
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
    expire_due_in(sh, Due::All, effort)
}

/// Which due index a pass takes its keys from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Due {
    /// Every key with an expiry (`Engine::due`), while expiry is not held.
    All,
    /// A writable replica's own keys (`Engine::own_due`), while it follows a master.
    Own,
}

/// Whether active expiry deletes only the keys a writable replica's own clients wrote with
/// an expiry: while the server follows a master (whose DELs remove the master's keys), not
/// during CLIENT PAUSE. Redis's `expireSlaveKeys`.
fn own_expiry_only(sh: &Shared) -> bool {
    sh.pause.current().is_none() && sh.engine().expired_kept.load(Ordering::Relaxed)
}

/// [`expire_due`] over the keys of `which` index.
fn expire_due_in(sh: &Shared, which: Due, effort: &ExpiryEffort) -> crate::types::Result<DuePass> {
    let started = std::time::Instant::now();
    let mut pass = DuePass::default();
    let mut r = Ok(());
    let index = match which {
        Due::All => &sh.engine().due,
        Due::Own => &sh.engine().own_due,
    };
    let held = || match which {
        Due::All => expiry_held(sh),
        Due::Own => !own_expiry_only(sh),
    };
    while !held() {
        let _pin = sh.dbs.pin(false);
        let due = index.take_due(crate::types::keyspace::now_ms(), EXPIRE_SLICE);
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
                index.note(st.set, at, again);
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
                .and_then(|name| crate::commands::find(sh, &name))
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
    crate::commands::memory::note_startup(sh);
    // A configured `maxmemory` takes its effect from the start.
    crate::commands::oom::enforce(sh, crate::commands::memory::note_peak(sh, 0));
    let s = sh.clone();
    tokio::spawn(async move {
        let mut from: ExpiryPoint = (0, Vec::new());
        let mut walk_first = false;
        let mut pace = WalkPace::new(s.engine().due.gaps());
        let mut tick = tokio::time::interval(EXPIRE_TICK);
        loop {
            tick.tick().await;
            if s.cron_paused.load(Ordering::Relaxed) {
                continue;
            }
            // OBJECT IDLETIME's coarse clock (`storage::access`).
            s.engine().meta_cache.access.tick();
            let s2 = s.clone();
            let start = std::mem::take(&mut from);
            let effort = ExpiryEffort::of(&s);
            let walk = pace.walks_now(s.engine().due.gaps());
            // Off the async workers, where a panic ends this round only (below).
            let active = s.active_expire.load(Ordering::Relaxed);
            let r = tokio::task::spawn_blocking(move || {
                // A DEBUG SLEEP holds the expiry round too (`pause::Frozen`).
                s2.frozen.wait();
                redirect_blocked(&s2);
                revoke_moved_shards(&s2);
                // DEBUG SET-ACTIVE-EXPIRE 0: no round (the next starts from the beginning).
                active.then(|| expire_tick(&s2, &start, &effort, walk_first, walk))
            })
            .await;
            match r {
                // Each key deleted is counted where it is (`types::keyspace`).
                Ok(Some(Ok(t))) => {
                    (from, walk_first) = (t.point, t.walk_first);
                    if let Some(found) = t.walked {
                        pace.walked(found);
                    }
                }
                Ok(Some(Err(_)) | None) => {}
                // A panic in one round ends that round only: the next starts over.
                Err(e) => eprintln!("active expiry round failed: {e}"),
            }
            s.stats.expire_walk_patrolling.store(pace.patrolling(), Ordering::Relaxed);
        }
    });
    // The clients' round (Redis's `clientsCron` at its default `hz`): each connection's
    // buffers checked against their recent use, an idle one's let go of. And FAILOVER's
    // look for a replica that caught up (`commands::failover`), while one waits for it.
    let s = sh.clone();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_millis(100));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            if s.failover.phase() == crate::failover::Phase::WaitForSync {
                let s2 = s.clone();
                // Off the async workers: following the target takes the link's locks. A
                // panic ends the failover (its held writes let go), never holds them on.
                let _ = tokio::task::spawn_blocking(move || {
                    let look =
                        std::panic::AssertUnwindSafe(|| crate::commands::failover::tick(&s2));
                    if std::panic::catch_unwind(look).is_err() {
                        let why = "its look for a caught-up replica failed";
                        crate::commands::failover::abort(&s2, why, false);
                    }
                })
                .await;
            }
            if s.cron_paused.load(Ordering::Relaxed) {
                continue;
            }
            let clients = s.clients.lock().values().fold(0, |sum, e| {
                e.activity.buffers_round(e.since);
                sum + e.activity.total_memory()
            });
            // A panic here ends this round only: the next takes the figures again.
            let taken = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let used = crate::commands::memory::note_peak(&s, clients);
                crate::commands::oom::enforce(&s, used);
            }));
            if taken.is_err() {
                eprintln!("the clients' round failed to take the memory figures");
            }
        }
    });
    let s = sh.clone();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        let cron = Arc::new(parking_lot::Mutex::new(ReplicationCron::default()));
        loop {
            tick.tick().await;
            // Off the async workers: freeing the stream waits for its gate. A panic ends
            // this round only.
            let (s2, cron2) = (s.clone(), cron.clone());
            let round = tokio::task::spawn_blocking(move || {
                cron2.lock().round(&s2, std::time::Instant::now());
            });
            if let Err(e) = round.await {
                eprintln!("the replication cron's round failed: {e}");
            }
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

#[cfg(test)]
mod tests {
    use super::{WalkFound, WalkPace, PATROL_TICKS};

    const NOTHING: WalkFound = WalkFound { unnoted: 0, passed_end: false };
    const END: WalkFound = WalkFound { unnoted: 0, passed_end: true };

    /// Ticks until the pace next walks (at most two patrol periods), the gaps unchanged.
    fn ticks_to_walk(pace: &mut WalkPace, gaps: u64) -> u32 {
        (1..=2 * PATROL_TICKS).find(|_| pace.walks_now(gaps)).unwrap()
    }

    #[test]
    fn the_walk_patrols_after_a_clean_pass_and_runs_again_at_a_miss() {
        let mut pace = WalkPace::new(0);
        assert!(pace.walks_now(0), "from the start, every tick");
        pace.walked(NOTHING);
        assert!(!pace.patrolling() && pace.walks_now(0), "a pass under way");
        pace.walked(END);
        assert!(pace.patrolling(), "the first pass found nothing missing");
        assert_eq!(ticks_to_walk(&mut pace, 0), PATROL_TICKS);
        pace.walked(NOTHING);
        assert_eq!(ticks_to_walk(&mut pace, 0), PATROL_TICKS, "one round a patrol period");
        pace.walked(END);
        assert!(pace.patrolling(), "a clean patrol pass keeps patrolling");

        // A key the index lacked: every tick again, and the pass under way is not clean.
        assert_eq!(ticks_to_walk(&mut pace, 0), PATROL_TICKS);
        pace.walked(WalkFound { unnoted: 1, passed_end: false });
        assert!(!pace.patrolling());
        assert!(pace.walks_now(0));
        pace.walked(END);
        assert!(!pace.patrolling(), "the pass that found it does not count as clean");
        assert!(pace.walks_now(0));
        pace.walked(END);
        assert!(pace.patrolling(), "the next whole pass does");

        // A miss in the round that ended a clean pass: that pass's end does not count.
        pace = WalkPace::new(0);
        pace.walked(WalkFound { unnoted: 3, passed_end: true });
        assert!(!pace.patrolling());
        pace.walked(END);
        assert!(!pace.patrolling(), "the round found it past the end too");
        pace.walked(END);
        assert!(pace.patrolling());
    }

    #[test]
    fn a_gap_in_the_index_puts_the_walk_back_at_its_full_pace() {
        let mut pace = WalkPace::new(7);
        pace.walked(END);
        assert!(pace.patrolling());
        assert!(!pace.walks_now(7));
        assert!(pace.walks_now(8), "a gap: this tick walks");
        assert!(!pace.patrolling());
        pace.walked(END);
        assert!(!pace.patrolling(), "the pass under way began before the gap");
        assert!(pace.walks_now(8), "the same gaps: no new one");
        pace.walked(NOTHING);
        pace.walked(END);
        assert!(pace.patrolling());
    }
}
