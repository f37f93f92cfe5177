//! Group commit of proposals: the write batches that commands hand to one Raft group at the
//! same time go into one log entry.
//!
//! A command on the leader hands its batch to its group ([`Proposals::propose`]) under its
//! key locks and goes on; the batch's `done` hears its entry's outcome. While
//! [`MAX_IN_FLIGHT`] entries of the group are in flight, later batches wait in the group's
//! queue; the task that drives an entry, once it ends, takes the queue (up to
//! [`MAX_ENTRY_BYTES`]) as the next entry: the batches appended in queue order
//! (`WriteBatch::append`), which replicas apply as one engine write. So one entry's
//! consensus round (two fdatasyncs on the critical path, a network round trip, an apply)
//! serves every command that arrived while the previous one ran, as the WAL's group commit
//! does for a standalone server, and no thread waits for it.
//!
//! Why joining is safe: each batch was computed under its command's key locks, whose stripes
//! stay marked until its outcome (`storage::locks`), so two batches in one queue touch the
//! same key only when the later one is a blind write's (a plain SET, SETEX, PSETEX or MSET,
//! which waits for no mark and reads nothing); applying them in one engine write in queue
//! order is applying them one after the other. A batch stays atomic (it is inside one
//! entry), and an entry holds batches of one group only.
//!
//! Gathering: the commands an entry answered usually come back with their next batch within
//! a client round trip. Proposed at once, the batches waiting meanwhile would make one entry
//! and the answered commands' next batches another, and under steady load a group's entries
//! would settle at half its writers each. So when an entry succeeds and its next one would
//! have company (it answered several batches, or some are waiting), the driver keeps the
//! group's slot until as many batches have joined those waiting as the entry answered, for
//! at most [`HOLD_SHARE`] quarters of the round that just ended and never more than its
//! `hold` (by default [`HOLD_MAX`]). One batch answered and none waiting (a lone writer, or
//! writers spread over many groups) ends the drive at once.
//!
//! A hold pays only where the answered commands come back to the same group: with one busy
//! group they do, but with writers spread over many groups a node leads (the Pegasus shape:
//! 64 partitions), two commands answered together next write to other groups, and the hold
//! only delays the batches already waiting. So each group keeps a record of its holds
//! ([`HoldRecord`]): a hold pays when at least half as many batches joined during it as the
//! entry answered; a group whose holds stop paying stops holding, and tries one again every
//! [`HoldRecord::PROBE_EVERY`] chances, so it holds again once its writers come back to it.
//!
//! How a driver holds depends on whether the cores are contended ([`run_queue::contended`]:
//! its thread waits for a core longer than it runs). While they are not, it polls: it yields
//! to the runtime until the company is there, so its worker also polls the I/O where the
//! awaited commands come from, and never sleeps; a parked worker would need a wake-up per
//! arriving command. While they are, it parks: woken by the arrival that completes its
//! company, or by a timer (the runtime's timers tick in milliseconds, so the limit is at
//! least one): a polling driver would take the core that other threads (other groups, other
//! nodes on the machine) wait for. Both measured in `docs/measurements.md`, cluster mode.
//!
//! Contract: a batch that finds a free slot is proposed at once (no wait for company), so a
//! lone command pays no delay, and a batch waits for company only behind an entry that
//! succeeded, for at most the hold above; at most [`MAX_IN_FLIGHT`] entries per group are in
//! flight here; every `done` is called exactly once, also when the driving task panics or is
//! dropped (the runtime shutting down): then with the `lost` error. Entries in flight
//! together may commit in either order: their batches touch different keys (above).

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use strata::WriteBatch;
use strata_replication::GroupId;
use tokio::runtime::Handle;
use tokio::sync::Notify;

use super::run_queue;

/// Bytes of batches joined into one entry at most (a larger batch still goes alone).
pub const MAX_ENTRY_BYTES: usize = 4 << 20;

/// Entries of one group in flight from this node at most. One: a second would overlap the
/// first's fdatasyncs and round trip, but measured under 16 writers it halved the entries'
/// size and cost more per command (`docs/measurements.md`, cluster writes). Blind writes rely
/// on it (`storage::locks`): with one entry in flight, a batch proposed after another is in
/// the same entry or a later one; with more, entries could commit out of proposal order, and
/// blind writes would have to wait for the marks again.
pub const MAX_IN_FLIGHT: usize = 1;

/// Longest a driver holds waiting batches for company (module doc, "Gathering").
pub const HOLD_MAX: Duration = Duration::from_micros(500);

/// Quarters of the round that just ended that a driver holds waiting batches at most: long
/// enough for the answered commands' round trip, short of another round.
pub const HOLD_SHARE: u32 = 3;

/// Where a batch's entry's outcome goes.
pub type Done<E> = Box<dyn FnOnce(Result<(), Arc<E>>) + Send>;

/// A command's batch waiting for its entry, its writer, and where its outcome goes.
type Pending<E> = (WriteBatch, Option<u64>, Done<E>);

/// Who wrote each batch of an entry, in the entry's order: the client whose command made it
/// (`None`: the server's own write) and its records (`WriteBatch::len`). The node that
/// applies the entry tells a client's own changes from others' by it (`super::apply`,
/// CLIENT TRACKING's NOLOOP).
pub type Writers = Vec<(Option<u64>, u32)>;

/// Batches waiting for one group, and how many of its entries are in flight from here.
struct Queue<E> {
    waiting: Vec<Pending<E>>,
    /// Entries proposed and not yet ended. Batches wait only while it is at
    /// [`MAX_IN_FLIGHT`]; a driver whose entry ends takes the waiting batches as its next.
    in_flight: usize,
    /// While a parked driver holds: how many waiting batches wake it (0: none holds).
    want: usize,
    /// Where a parked driver waits for its company.
    arrived: Arc<Notify>,
    /// How the group's recent holds went.
    holds: HoldRecord,
}

/// Whether a group's holds pay (module doc, "Gathering"): credit earned by holds that paid,
/// lost twice as fast by holds that did not, so holding goes on while at least two in three
/// pay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct HoldRecord {
    credit: u8,
    /// Chances to hold passed up since the last hold.
    passed: u8,
}

impl HoldRecord {
    /// Credit at most (and at first: a new group holds).
    const FULL: u8 = 8;
    /// Credit a group needs to hold.
    const TO_HOLD: u8 = 4;
    /// A group without the credit holds once in this many chances (a probe).
    const PROBE_EVERY: u8 = 16;

    fn new() -> Self {
        HoldRecord { credit: Self::FULL, passed: 0 }
    }

    /// Whether to hold at this chance.
    fn holds(&mut self) -> bool {
        if self.credit >= Self::TO_HOLD {
            return true;
        }
        self.passed += 1;
        if self.passed < Self::PROBE_EVERY {
            return false;
        }
        self.passed = 0;
        true
    }

    /// Notes how a hold went.
    fn note(&mut self, paid: bool) {
        self.passed = 0;
        self.credit =
            if paid { (self.credit + 1).min(Self::FULL) } else { self.credit.saturating_sub(2) };
    }
}

impl<E> Queue<E> {
    fn new() -> Self {
        Queue {
            waiting: Vec::new(),
            in_flight: 0,
            want: 0,
            arrived: Arc::new(Notify::new()),
            holds: HoldRecord::new(),
        }
    }

    /// The next entry's batches from the front of the queue (at least one).
    fn take_entry(&mut self) -> Vec<Pending<E>> {
        let mut bytes = 0;
        let n = self
            .waiting
            .iter()
            .take_while(|(b, _, _)| {
                bytes += b.size_in_bytes();
                bytes <= MAX_ENTRY_BYTES
            })
            .count()
            .max(1);
        self.waiting.drain(..n).collect()
    }
}

/// How a driver holds waiting batches for company (module doc, "Gathering").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum HoldBy {
    /// Polling while the cores are free, parked while they are contended.
    Contention,
    /// Always polling (tests).
    #[cfg(test)]
    Polling,
    /// Always parked (tests).
    #[cfg(test)]
    Parking,
}

impl HoldBy {
    fn parks(self) -> bool {
        match self {
            HoldBy::Contention => run_queue::contended(),
            #[cfg(test)]
            HoldBy::Polling => false,
            #[cfg(test)]
            HoldBy::Parking => true,
        }
    }
}

/// The proposal queues of a node's groups; `E` is the proposal's error.
pub struct Proposals<E> {
    queues: Mutex<HashMap<GroupId, Arc<Mutex<Queue<E>>>>>,
    /// Longest a driver holds waiting batches for company.
    hold: Duration,
    by: HoldBy,
}

impl<E> Default for Proposals<E> {
    fn default() -> Self {
        Proposals::holding(HOLD_MAX)
    }
}

impl<E> Proposals<E> {
    /// Queues whose drivers hold waiting batches for company for at most `hold` (and
    /// [`HOLD_SHARE`] quarters of the last round).
    pub fn holding(hold: Duration) -> Self {
        Proposals { queues: Mutex::new(HashMap::new()), hold, by: HoldBy::Contention }
    }

    /// [`Proposals::holding`], holding always by `by`.
    #[cfg(test)]
    fn holding_by(hold: Duration, by: HoldBy) -> Self {
        Proposals { by, ..Proposals::holding(hold) }
    }
}

/// One driver's entry and queue: whatever it still holds when dropped (a panic, the runtime
/// shutting down, or a task the runtime dropped before it ever ran) fails with `lost`, and the
/// queue's slot is given back.
struct Driving<E> {
    queue: Arc<Mutex<Queue<E>>>,
    /// The entry being proposed: its batches (taken when it is sent) and their `done`s.
    entry: Vec<Pending<E>>,
    lost: fn() -> E,
    done: bool,
}

impl<E> Drop for Driving<E> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let mut dones: Vec<Done<E>> = self.entry.drain(..).map(|(_, _, d)| d).collect();
        {
            let mut q = self.queue.lock();
            q.in_flight -= 1;
            if q.in_flight == 0 {
                // No driver is left to take them.
                dones.extend(q.waiting.drain(..).map(|(_, _, d)| d));
            }
        }
        let e = Arc::new((self.lost)());
        for d in dones {
            d(Err(e.clone()));
        }
    }
}

impl<E: Send + Sync + 'static> Proposals<E> {
    fn queue(&self, group: GroupId) -> Arc<Mutex<Queue<E>>> {
        self.queues
            .lock()
            .entry(group)
            .or_insert_with(|| Arc::new(Mutex::new(Queue::new())))
            .clone()
    }

    /// Whether no batch of `group` is waiting or in flight from here.
    pub fn is_idle(&self, group: GroupId) -> bool {
        let q = self.queue(group);
        let q = q.lock();
        q.waiting.is_empty() && q.in_flight == 0
    }

    /// Proposes `batch`, written by client `writer` (`None`: the server), to `group`, joined
    /// with the batches handed in meanwhile, and returns at once; `done` gets its entry's
    /// outcome. When a slot is free, a task on `runtime` drives the entries: `send` proposes
    /// one joined batch, with its batches' [`Writers`], and resolves with its outcome; `lost`
    /// is the outcome of the batches a driver leaves when it panics or is dropped.
    #[allow(clippy::too_many_arguments)]
    pub fn propose<S, F>(
        &self,
        runtime: &Handle,
        group: GroupId,
        batch: WriteBatch,
        writer: Option<u64>,
        done: Done<E>,
        send: S,
        lost: fn() -> E,
    ) where
        S: Fn(WriteBatch, Writers) -> F + Send + 'static,
        F: Future<Output = Result<(), E>> + Send + 'static,
    {
        let queue = self.queue(group);
        let (entry, complete) = {
            let mut q = queue.lock();
            q.waiting.push((batch, writer, done));
            // A parked driver's company is complete: it is woken below, out of the lock. (It
            // registered before setting `want`, so the wake-up is not lost.)
            let complete = (q.want > 0 && q.waiting.len() >= q.want).then(|| {
                q.want = 0;
                q.arrived.clone()
            });
            let entry = (q.in_flight < MAX_IN_FLIGHT).then(|| {
                q.in_flight += 1;
                q.take_entry()
            });
            (entry, complete)
        };
        if let Some(arrived) = complete {
            arrived.notify_waiters();
        }
        let Some(entry) = entry else { return };
        // Made before the task, so the entry fails with `lost` even if the task never runs.
        let driving = Driving { queue, entry, lost, done: false };
        runtime.spawn(drive(driving, send, self.hold, self.by));
    }
}

/// Proposes the driver's entry, then each next entry the queue holds when one ends, until it
/// is empty.
async fn drive<E, S, F>(mut driving: Driving<E>, send: S, hold: Duration, by: HoldBy)
where
    S: Fn(WriteBatch, Writers) -> F,
    F: Future<Output = Result<(), E>>,
{
    loop {
        let mut joined = WriteBatch::new();
        let mut writers = Writers::with_capacity(driving.entry.len());
        for (b, writer, _) in &mut driving.entry {
            let b = std::mem::take(b);
            writers.push((*writer, b.len() as u32));
            if joined.is_empty() {
                joined = b;
            } else {
                joined.append(&b);
            }
        }
        let started = Instant::now();
        let outcome = send(joined, writers).await.map_err(Arc::new);
        let round = started.elapsed();
        let answered = driving.entry.len();
        // Counted before the answers go out: a batch an answered command hands in at once is
        // among the company awaited, not also among the batches that were waiting.
        let waiting = driving.queue.lock().waiting.len();
        for (_, _, d) in driving.entry.drain(..) {
            d(outcome.clone());
        }
        if outcome.is_ok() {
            let hold = (round * HOLD_SHARE / 4).min(hold);
            gather(&driving.queue, waiting, answered, hold, by).await;
        }
        let mut q = driving.queue.lock();
        if q.waiting.is_empty() {
            q.in_flight -= 1;
            driving.done = true;
            return;
        }
        driving.entry = q.take_entry();
    }
}

/// Keeps the group's slot until `answered` more batches have joined the `waiting` ones (those
/// queued before the answers went out), or for `hold`; not at all when the next entry would
/// have no company (one batch answered and none waiting: a lone writer, or writers spread
/// over many groups), nor while the group's holds do not pay ([`HoldRecord`]). Polls or
/// parks as `by` says, and notes in the group's record whether the hold paid.
async fn gather<E>(
    queue: &Mutex<Queue<E>>,
    waiting: usize,
    answered: usize,
    hold: Duration,
    by: HoldBy,
) {
    let Some(want) = company(waiting, answered) else { return };
    if !queue.lock().holds.holds() {
        return;
    }
    hold_for(queue, want, hold, by).await;
    let mut q = queue.lock();
    let joined = q.waiting.len().saturating_sub(waiting);
    q.holds.note(joined * 2 >= answered);
}

/// Waits until `want` batches wait in `queue`, or for `hold`.
async fn hold_for<E>(queue: &Mutex<Queue<E>>, want: usize, hold: Duration, by: HoldBy) {
    if !by.parks() {
        let until = Instant::now() + hold;
        while queue.lock().waiting.len() < want && Instant::now() < until {
            tokio::task::yield_now().await;
        }
        return;
    }
    let arrived = queue.lock().arrived.clone();
    let notified = arrived.notified();
    tokio::pin!(notified);
    // Registered before `want` is set, so the arrival that completes it is not missed.
    notified.as_mut().enable();
    {
        let mut q = queue.lock();
        if q.waiting.len() >= want {
            return;
        }
        q.want = want;
    }
    let _ = tokio::time::timeout(hold, notified).await;
    queue.lock().want = 0;
}

/// How many batches the next entry waits for, with `waiting` batches queued and `answered`
/// commands just answered: `None` when it would have no company.
fn company(waiting: usize, answered: usize) -> Option<usize> {
    let want = waiting + answered;
    (want >= 2).then_some(want)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    fn batch(key: &str) -> WriteBatch {
        let mut b = WriteBatch::new();
        b.put(key, "v");
        b
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
    }

    /// A `done` that sends its outcome (the error as a string) to the returned receiver.
    fn outcome() -> (Done<String>, mpsc::Receiver<Result<(), String>>) {
        let (tx, rx) = mpsc::channel();
        (
            Box::new(move |r: Result<(), Arc<String>>| {
                tx.send(r.map_err(|e| (*e).clone())).unwrap();
            }),
            rx,
        )
    }

    fn lost() -> String {
        "lost".to_string()
    }

    #[test]
    fn a_lone_batch_is_proposed_alone() {
        let rt = runtime();
        let p = Proposals::<String>::default();
        let sent = Arc::new(Mutex::new(Vec::new()));
        let (done, rx) = outcome();
        let s = sent.clone();
        let send = move |b: WriteBatch, _: Writers| {
            s.lock().push(b.len());
            async { Ok(()) }
        };
        p.propose(rt.handle(), GroupId(1), batch("a"), None, done, send, lost);
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)).unwrap(), Ok(()));
        assert_eq!(*sent.lock(), vec![1]);
    }

    /// Batches waiting while the slots are taken make one entry, which names each batch's
    /// writer and records in queue order.
    #[test]
    fn batches_arriving_while_the_slots_are_taken_share_the_next_entry() {
        let rt = runtime();
        let p = Proposals::<String>::default();
        let entries = Arc::new(Mutex::new(Vec::new()));
        let release = Arc::new(tokio::sync::Semaphore::new(0));
        // The first MAX_IN_FLIGHT entries stay in flight until released.
        let send = {
            let (entries, release) = (entries.clone(), release.clone());
            move |b: WriteBatch, w: Writers| {
                let nth = {
                    let mut e = entries.lock();
                    e.push((b.len(), w));
                    e.len()
                };
                let release = release.clone();
                async move {
                    if nth <= MAX_IN_FLIGHT {
                        release.acquire().await.unwrap().forget();
                    }
                    Ok::<(), String>(())
                }
            }
        };
        let mut rxs = Vec::new();
        for i in 0..MAX_IN_FLIGHT {
            let (done, rx) = outcome();
            let a = batch(&format!("a{i}"));
            p.propose(rt.handle(), GroupId(1), a, Some(1), done, send.clone(), lost);
            rxs.push(rx);
        }
        while entries.lock().len() < MAX_IN_FLIGHT {
            std::thread::sleep(Duration::from_millis(1));
        }
        for i in 0..5u64 {
            let (done, rx) = outcome();
            let mut b = batch(&format!("b{i}"));
            if i == 3 {
                b.put("b3'", "v");
            }
            let writer = (i != 2).then_some(10 + i);
            p.propose(rt.handle(), GroupId(1), b, writer, done, send.clone(), lost);
            rxs.push(rx);
        }
        assert_eq!(p.queue(GroupId(1)).lock().waiting.len(), 5);
        release.add_permits(MAX_IN_FLIGHT);
        for rx in rxs {
            assert_eq!(rx.recv_timeout(Duration::from_secs(5)).unwrap(), Ok(()));
        }
        let mut want = vec![(1, vec![(Some(1), 1)]); MAX_IN_FLIGHT];
        let writers = vec![(Some(10), 1), (Some(11), 1), (None, 1), (Some(13), 2), (Some(14), 1)];
        want.push((6, writers));
        assert_eq!(*entries.lock(), want, "the five waiting batches make one entry");
        while p.queue(GroupId(1)).lock().in_flight > 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn every_batch_of_a_failed_entry_gets_the_failure() {
        let rt = runtime();
        let p = Proposals::<String>::default();
        let send = |_b: WriteBatch, _: Writers| async {
            tokio::time::sleep(Duration::from_millis(2)).await;
            Err("no quorum".to_string())
        };
        let rxs: Vec<_> = (0..8)
            .map(|i| {
                let (done, rx) = outcome();
                p.propose(rt.handle(), GroupId(2), batch(&format!("k{i}")), None, done, send, lost);
                rx
            })
            .collect();
        for rx in rxs {
            assert_eq!(rx.recv_timeout(Duration::from_secs(5)).unwrap(), Err("no quorum".into()));
        }
    }

    #[test]
    fn a_panicking_proposal_fails_its_batches_and_frees_the_queue() {
        let rt = runtime();
        let p = Proposals::<String>::default();
        let (done, rx) = outcome();
        let boom = |_b: WriteBatch, _: Writers| async {
            tokio::time::sleep(Duration::from_millis(20)).await;
            panic!("boom");
        };
        p.propose(rt.handle(), GroupId(3), batch("a"), None, done, boom, lost);
        // Waiting behind the panicking entry: failed with it, as nothing will drive them.
        let (done2, rx2) = outcome();
        p.propose(rt.handle(), GroupId(3), batch("b"), None, done2, boom, lost);
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)).unwrap(), Err("lost".into()));
        assert_eq!(rx2.recv_timeout(Duration::from_secs(5)).unwrap(), Err("lost".into()));
        let (done3, rx3) = outcome();
        p.propose(rt.handle(), GroupId(3), batch("c"), None, done3, |_b, _| async { Ok(()) }, lost);
        assert_eq!(rx3.recv_timeout(Duration::from_secs(5)).unwrap(), Ok(()));
    }

    #[test]
    fn a_dropped_runtime_fails_the_batches_in_flight() {
        let rt = runtime();
        let p = Proposals::<String>::default();
        let (done, rx) = outcome();
        let never = |_b: WriteBatch, _: Writers| std::future::pending::<Result<(), String>>();
        p.propose(rt.handle(), GroupId(4), batch("a"), None, done, never, lost);
        std::thread::sleep(Duration::from_millis(20));
        drop(rt);
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)).unwrap(), Err("lost".into()));
    }

    /// Regression: a task the runtime drops before it runs (spawned on a runtime that has
    /// shut down) left its batches' outcomes unset, and their connections waiting forever.
    #[test]
    fn a_driver_that_never_runs_fails_its_batches() {
        let rt = runtime();
        let handle = rt.handle().clone();
        drop(rt);
        let p = Proposals::<String>::default();
        let (done, rx) = outcome();
        p.propose(&handle, GroupId(5), batch("a"), None, done, |_b, _| async { Ok(()) }, lost);
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)).unwrap(), Err("lost".into()));
        assert_eq!(p.queue(GroupId(5)).lock().in_flight, 0, "the slot is given back");
    }

    /// Randomized, against a model of what must hold: threads propose to a few groups at
    /// once, each waiting for its batch's outcome before its next (as a connection does),
    /// while some entries fail; every batch is sent in exactly one entry, of its own group,
    /// after the batches its thread proposed earlier to that group, and its proposer gets that
    /// entry's outcome.
    #[test]
    fn every_batch_goes_in_one_entry_of_its_group_and_gets_its_outcome() {
        const THREADS: usize = 6;
        const PER_THREAD: usize = 150;
        let rt = runtime();
        let p = Arc::new(Proposals::<String>::default());
        // Each entry sent: its group, its batches' keys, and whether it failed.
        let entries = Arc::new(Mutex::new(Vec::<(u32, Vec<String>, bool)>::new()));
        let threads: Vec<_> = (0..THREADS)
            .map(|t| {
                let (p, entries, handle) = (p.clone(), entries.clone(), rt.handle().clone());
                std::thread::spawn(move || {
                    let mut seed = 0x9e37_79b9_7f4a_7c15u64 ^ (t as u64);
                    let mut got = Vec::new();
                    for i in 0..PER_THREAD {
                        seed ^= seed << 13;
                        seed ^= seed >> 7;
                        seed ^= seed << 17;
                        let g = (seed % 3) as u32;
                        let key = format!("{g}/{t}/{i}");
                        let entries = entries.clone();
                        let send = move |b: WriteBatch, _: Writers| {
                            let keys: Vec<String> = b
                                .keys()
                                .map(|(k, _)| String::from_utf8(k.to_vec()).unwrap())
                                .collect();
                            let mut e = entries.lock();
                            let fail = e.len() % 5 == 4;
                            e.push((g, keys, fail));
                            let n = e.len();
                            drop(e);
                            async move {
                                if n % 3 == 0 {
                                    tokio::task::yield_now().await;
                                }
                                if fail {
                                    Err(format!("entry {n} failed"))
                                } else {
                                    Ok(())
                                }
                            }
                        };
                        let (done, rx) = outcome();
                        p.propose(&handle, GroupId(g), batch(&key), None, done, send, lost);
                        let r = rx.recv_timeout(Duration::from_secs(5)).unwrap();
                        got.push((key, r));
                    }
                    got
                })
            })
            .collect();
        let outcomes: Vec<(String, Result<(), String>)> =
            threads.into_iter().flat_map(|t| t.join().unwrap()).collect();
        let entries = entries.lock();
        let mut where_sent = std::collections::HashMap::new();
        for (n, (g, keys, _)) in entries.iter().enumerate() {
            for k in keys {
                assert!(k.starts_with(&format!("{g}/")), "entry {n} of group {g} holds {k}");
                assert!(where_sent.insert(k.clone(), n).is_none(), "{k} was sent twice");
            }
        }
        assert_eq!(where_sent.len(), THREADS * PER_THREAD, "every batch was sent");
        for (key, r) in &outcomes {
            let n = where_sent[key];
            let failed = entries[n].2;
            assert_eq!(r.is_err(), failed, "{key}: its outcome is its entry's ({n})");
        }
        // A thread's batches to one group go in the order it proposed them.
        let mut last = std::collections::HashMap::new();
        for (key, _) in &outcomes {
            let (g_t, i) = key.rsplit_once('/').unwrap();
            let i: usize = i.parse().unwrap();
            if let Some((pi, pn)) = last.insert(g_t.to_string(), (i, where_sent[key])) {
                assert!(pi < i && pn < where_sent[key], "{key} went before {g_t}/{pi}");
            }
        }
        for g in 0..3 {
            while p.queue(GroupId(g)).lock().in_flight > 0 {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }

    #[test]
    fn groups_propose_independently() {
        let rt = runtime();
        let p = Proposals::<String>::default();
        let seen = Arc::new(Mutex::new(Vec::new()));
        for g in [1, 2, 1] {
            let (done, rx) = outcome();
            let s = seen.clone();
            let send = move |_b: WriteBatch, _: Writers| {
                s.lock().push(g);
                async { Ok(()) }
            };
            p.propose(rt.handle(), GroupId(g), batch("x"), None, done, send, lost);
            assert_eq!(rx.recv_timeout(Duration::from_secs(5)).unwrap(), Ok(()));
        }
        assert_eq!(*seen.lock(), vec![1, 2, 1]);
    }

    type Sent = std::pin::Pin<Box<dyn Future<Output = Result<(), String>> + Send>>;
    /// Each entry's batch count, in the order sent.
    type Counts = Arc<Mutex<Vec<usize>>>;
    /// Where a batch's outcome is heard.
    type Heard = mpsc::Receiver<Result<(), String>>;

    /// Proposes batch "a" to group 1 of `p` with a `send` that records each entry's batch
    /// count and keeps the first entry in flight for `first_round`; returns once that entry
    /// is sent: the counts, the `send` for later batches, and where "a"'s outcome goes.
    fn first_in_flight(
        rt: &tokio::runtime::Runtime,
        p: &Proposals<String>,
        first_round: Duration,
    ) -> (Counts, impl Fn(WriteBatch, Writers) -> Sent + Clone + Send + 'static, Heard) {
        let (done, rx) = outcome();
        let (entries, send) = first_in_flight_answering(rt, p, first_round, done);
        (entries, send, rx)
    }

    /// [`first_in_flight`], "a"'s outcome going to `done`.
    fn first_in_flight_answering(
        rt: &tokio::runtime::Runtime,
        p: &Proposals<String>,
        first_round: Duration,
        done: Done<String>,
    ) -> (Counts, impl Fn(WriteBatch, Writers) -> Sent + Clone + Send + 'static) {
        let entries = Arc::new(Mutex::new(Vec::new()));
        let e = entries.clone();
        let send = move |b: WriteBatch, _: Writers| {
            let nth = {
                let mut e = e.lock();
                e.push(b.len());
                e.len()
            };
            Box::pin(async move {
                if nth == 1 {
                    tokio::time::sleep(first_round).await;
                }
                Ok::<(), String>(())
            }) as Sent
        };
        p.propose(rt.handle(), GroupId(1), batch("a"), None, done, send.clone(), lost);
        while entries.lock().is_empty() {
            std::thread::sleep(Duration::from_millis(1));
        }
        (entries, send)
    }

    #[test]
    fn the_commands_an_entry_answered_join_the_batches_waiting_behind_it() {
        for by in [HoldBy::Polling, HoldBy::Parking, HoldBy::Contention] {
            answered_commands_join_the_waiting(by);
        }
    }

    fn answered_commands_join_the_waiting(by: HoldBy) {
        let rt = runtime();
        // A round of 400 ms lets the driver hold for up to 300 ms: far more than the thread
        // below needs to hand in its next batch, however busy the machine.
        let p = Proposals::<String>::holding_by(Duration::from_secs(5), by);
        let (entries, send, rx) = first_in_flight(&rt, &p, Duration::from_millis(400));
        let mut rxs = Vec::new();
        for i in 0..3 {
            let (done, rx) = outcome();
            p.propose(
                rt.handle(),
                GroupId(1),
                batch(&format!("b{i}")),
                None,
                done,
                send.clone(),
                lost,
            );
            rxs.push(rx);
        }
        // The command that "a" answered comes back with its next batch, as a client would.
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)).unwrap(), Ok(()));
        let (done, rx) = outcome();
        p.propose(rt.handle(), GroupId(1), batch("a2"), None, done, send.clone(), lost);
        rxs.push(rx);
        for rx in rxs {
            assert_eq!(rx.recv_timeout(Duration::from_secs(5)).unwrap(), Ok(()));
        }
        assert_eq!(*entries.lock(), vec![1, 4], "{by:?}: a2 joined the three batches waiting");
    }

    /// A parked driver is woken by the arrival that completes its company, not by the end of
    /// its hold: a lost wake-up would leave the batches waiting out the hold (1.5 s here).
    #[test]
    fn a_parked_hold_ends_when_its_company_arrives() {
        let rt = runtime();
        let p = Proposals::<String>::holding_by(Duration::from_secs(5), HoldBy::Parking);
        let (entries, send, rx) = first_in_flight(&rt, &p, Duration::from_secs(2));
        let (done, rx_b) = outcome();
        p.propose(rt.handle(), GroupId(1), batch("b"), None, done, send.clone(), lost);
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)).unwrap(), Ok(()));
        // Once the driver parks for its company (b and a's next)...
        let deadline = Instant::now() + Duration::from_secs(5);
        while p.queue(GroupId(1)).lock().want == 0 {
            assert!(Instant::now() < deadline, "the driver never parked");
            std::thread::sleep(Duration::from_millis(1));
        }
        let (done, rx_a2) = outcome();
        let proposed = Instant::now();
        p.propose(rt.handle(), GroupId(1), batch("a2"), None, done, send.clone(), lost);
        assert_eq!(rx_a2.recv_timeout(Duration::from_secs(5)).unwrap(), Ok(()));
        assert_eq!(rx_b.recv_timeout(Duration::from_secs(5)).unwrap(), Ok(()));
        let waited = proposed.elapsed();
        assert!(waited < Duration::from_secs(1), "woken by the hold's end after {waited:?}");
        assert_eq!(*entries.lock(), vec![1, 2], "a2 joined b");
    }

    /// Regression: a batch an answered command handed in before its driver counted what was
    /// waiting was counted twice, as waiting and as company to come, and the driver held the
    /// batches for the whole hold (1.5 s here) for a batch that never came.
    #[test]
    fn a_batch_handed_in_with_its_answer_is_counted_once() {
        for by in [HoldBy::Polling, HoldBy::Parking] {
            let rt = runtime();
            let p = Arc::new(Proposals::<String>::holding_by(Duration::from_secs(5), by));
            type Next = Box<dyn FnOnce() + Send>;
            let next: Arc<Mutex<Option<Next>>> = Arc::new(Mutex::new(None));
            // "a"'s client hands in its next batch as its answer arrives.
            let answered_at = Arc::new(Mutex::new(None));
            let answered = {
                let (next, at) = (next.clone(), answered_at.clone());
                Box::new(move |_: Result<(), Arc<String>>| {
                    *at.lock() = Some(Instant::now());
                    if let Some(hand_in) = next.lock().take() {
                        hand_in();
                    }
                }) as Done<String>
            };
            let (entries, send) =
                first_in_flight_answering(&rt, &p, Duration::from_secs(2), answered);
            let (done, rx_b) = outcome();
            p.propose(rt.handle(), GroupId(1), batch("b"), None, done, send.clone(), lost);
            let (done, rx_a2) = outcome();
            let (p2, h, s2) = (p.clone(), rt.handle().clone(), send.clone());
            *next.lock() = Some(Box::new(move || {
                p2.propose(&h, GroupId(1), batch("a2"), None, done, s2, lost);
            }));
            assert_eq!(rx_a2.recv_timeout(Duration::from_secs(5)).unwrap(), Ok(()));
            assert_eq!(rx_b.recv_timeout(Duration::from_secs(5)).unwrap(), Ok(()));
            let answered_at = answered_at.lock().expect("a was answered");
            let waited = answered_at.elapsed();
            assert!(waited < Duration::from_secs(1), "{by:?}: held for {waited:?}");
            assert_eq!(*entries.lock(), vec![1, 2], "{by:?}: a2 joined b");
        }
    }

    #[test]
    fn a_hold_whose_company_never_comes_ends_and_frees_the_slot() {
        for by in [HoldBy::Polling, HoldBy::Parking, HoldBy::Contention] {
            a_lonely_hold_ends(by);
        }
    }

    fn a_lonely_hold_ends(by: HoldBy) {
        let rt = runtime();
        let p = Proposals::<String>::holding_by(Duration::from_millis(20), by);
        let (entries, send, rx) = first_in_flight(&rt, &p, Duration::from_millis(40));
        let (done, rx_b) = outcome();
        p.propose(rt.handle(), GroupId(1), batch("b"), None, done, send.clone(), lost);
        // Nothing comes back after "a": "b" goes alone once the hold ends.
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)).unwrap(), Ok(()));
        assert_eq!(rx_b.recv_timeout(Duration::from_secs(5)).unwrap(), Ok(()));
        assert_eq!(*entries.lock(), vec![1, 1]);
        let deadline = Instant::now() + Duration::from_secs(5);
        while !p.is_idle(GroupId(1)) {
            assert!(Instant::now() < deadline, "the driver never gave its slot back");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn a_group_holds_while_two_in_three_of_its_holds_pay() {
        let mut r = HoldRecord::new();
        for _ in 0..30 {
            for paid in [true, false, true] {
                assert!(r.holds());
                r.note(paid);
            }
        }
        let mut r = HoldRecord::new();
        let mut held = 0;
        for _ in 0..10 {
            for paid in [true, false] {
                if r.holds() {
                    held += 1;
                    r.note(paid);
                }
            }
        }
        assert_eq!(held, 8, "one in two pays: it stops holding after {r:?}");
    }

    #[test]
    fn a_group_whose_holds_do_not_pay_probes_one_chance_in_sixteen() {
        let mut r = HoldRecord::new();
        for _ in 0..3 {
            assert!(r.holds());
            r.note(false);
        }
        for _ in 0..2 {
            let passed = (0..HoldRecord::PROBE_EVERY).take_while(|_| !r.holds()).count();
            assert_eq!(passed, usize::from(HoldRecord::PROBE_EVERY) - 1);
            r.note(true);
        }
        assert!(r.holds(), "two probes that paid restore the credit to hold: {r:?}");
    }

    /// A group whose answered commands never come back (writers spread over many groups) holds
    /// its waiting batches three times, then sends them at once, until a probe.
    #[test]
    fn a_group_whose_holds_do_not_pay_sends_at_once() {
        let rt = runtime();
        for by in [HoldBy::Polling, HoldBy::Parking] {
            let queue = Mutex::new(Queue::<String>::new());
            let (done, _rx) = outcome();
            queue.lock().waiting.push((batch("b"), None, done));
            let short = Duration::from_millis(20);
            for _ in 0..3 {
                let started = Instant::now();
                rt.block_on(gather(&queue, 1, 1, short, by));
                assert!(started.elapsed() >= short, "{by:?}: held for the whole hold");
            }
            for _ in 1..HoldRecord::PROBE_EVERY {
                let started = Instant::now();
                rt.block_on(gather(&queue, 1, 1, Duration::from_secs(5), by));
                assert!(started.elapsed() < Duration::from_secs(2), "{by:?}: held");
            }
            let started = Instant::now();
            rt.block_on(gather(&queue, 1, 1, short, by));
            assert!(started.elapsed() >= short, "{by:?}: the probe holds");
        }
    }

    #[test]
    fn only_an_entry_with_company_in_sight_is_held() {
        // A lone writer, or one of many writers spread over groups: the drive ends at once.
        assert_eq!(company(0, 1), None);
        assert_eq!(company(1, 1), Some(2));
        assert_eq!(company(0, 5), Some(5));
        assert_eq!(company(3, 4), Some(7));
    }
}
