//! A striped lock table: writers of a key hold the stripe its hash picks, so read-modify-write
//! commands on one key (INCR, HINCRBY, LPUSH, ZADD...) from different connections are atomic.
//! Readers of one key take no lock: every write is one atomic `WriteBatch`, so a reader sees a
//! whole command's effect or none of it. Readers of several keys (MGET, SINTER...) hold their
//! stripes (`commands::dispatch`), so they never read some keys before a write spanning them
//! and others after it.
//!
//! Multi-key writers lock their stripes in ascending index order (no deadlock).
//!
//! In cluster mode a write may still be in flight when its command returns and drops its
//! guards (`pending`): the stripes it held stay *marked* ([`LockTable::mark_held`]) until
//! its entry is applied or failed, and [`LockTable::lock`] waits for the marks on the
//! stripes it takes. So a writer of a key never reads state that lacks an earlier writer's
//! proposed write, as if the earlier one had kept its locks until then. A lock that must wait
//! (a held stripe, a mark) hands an async worker's other tasks off first.
//!
//! A *blind* write, one that reads nothing of the keys it writes (a plain SET, SETEX, PSETEX,
//! MSET: `commands::strings::blind_write`), locks without waiting for the marks
//! ([`LockTable::lock_blind`]), and its connection waits before it only for a writer holding
//! a stripe ([`LockTable::busy_blind`]): it reads no state that could lack an earlier write,
//! and its batch still comes after every write of the key proposed before it, since a group
//! takes its proposals in the order they came and has one entry in flight at a time
//! (`cluster::proposals`). Its own write marks the stripe as any other, so a later writer
//! that reads waits for it. Writes to one hot key from many connections then share a group's
//! entries instead of taking one consensus round each.
//!
//! A connection does not let it come to that when it can help it: before it runs a write
//! command it asks whether one of the command's stripes is busy ([`LockTable::busy`]) and, if
//! so, waits for it as a task ([`LockTable::until_free`]), so the worker serves other
//! connections meanwhile instead of blocking (or handing its tasks to another thread) until
//! a hot key's writer is done. The wait takes nothing: the command then locks as usual, and
//! may still wait there if another writer took the stripe first.

use parking_lot::{Condvar, Mutex, MutexGuard};
use std::cell::RefCell;
use std::hash::BuildHasher;
use std::sync::atomic::{fence, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

/// Number of stripes: collisions only serialise unrelated keys, never deadlock.
const STRIPES: usize = 1024;

/// The lock table.
pub struct LockTable {
    stripes: Vec<Mutex<()>>,
    /// The stripe hash's seed, drawn per table: which keys share a stripe differs from one
    /// process to the next, so no client can aim many keys at one stripe.
    seed: u64,
    marks: Arc<Marks>,
}

/// Each stripe's count of writes in flight that held it, and where lockers wait for them;
/// each stripe's count of tasks waiting for it to be free, and where they wait.
struct Marks {
    count: Vec<AtomicU32>,
    gate: Mutex<()>,
    cleared: Condvar,
    waiters: Vec<AtomicU32>,
    freed: Vec<Notify>,
}

impl Marks {
    /// Wakes the tasks waiting for stripes `idx` ([`LockTable::until_free`]), if any; called
    /// after the stripes were unlocked or unmarked. The fence pairs with the waiter's: either
    /// the waiter sees its stripe free, or this sees the waiter counted.
    fn wake(&self, idx: &[usize]) {
        fence(Ordering::SeqCst);
        for &i in idx {
            if self.waiters[i].load(Ordering::Relaxed) > 0 {
                self.freed[i].notify_waiters();
            }
        }
    }
}

thread_local! {
    /// The stripes this thread holds: its table's marks (by address), and the index.
    static HELD: RefCell<Vec<(usize, usize)>> = const { RefCell::new(Vec::new()) };
}

impl Default for LockTable {
    fn default() -> Self {
        LockTable {
            stripes: (0..STRIPES).map(|_| Mutex::new(())).collect(),
            seed: std::collections::hash_map::RandomState::new().hash_one(0x57_1e5_u64),
            marks: Arc::new(Marks {
                count: (0..STRIPES).map(|_| AtomicU32::new(0)).collect(),
                gate: Mutex::new(()),
                cleared: Condvar::new(),
                waiters: (0..STRIPES).map(|_| AtomicU32::new(0)).collect(),
                freed: (0..STRIPES).map(|_| Notify::new()).collect(),
            }),
        }
    }
}

/// A stripe a command would wait for now ([`LockTable::busy`]), and whether a write in flight
/// marking it counts (not for a blind write: [`LockTable::busy_blind`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Busy {
    stripe: usize,
    marks: bool,
}

/// Held stripes; dropping releases them.
pub struct Guards<'a> {
    held: Vec<MutexGuard<'a, ()>>,
    /// Their indices, as recorded in `HELD`.
    idx: Vec<usize>,
    table: &'a LockTable,
}

impl Drop for Guards<'_> {
    fn drop(&mut self) {
        let table = self.table.id();
        HELD.with(|h| {
            let mut h = h.borrow_mut();
            for i in &self.idx {
                if let Some(p) = h.iter().rposition(|e| *e == (table, *i)) {
                    h.swap_remove(p);
                }
            }
        });
        self.held.clear();
        self.table.marks.wake(&self.idx);
    }
}

/// The stripes a thread held when it proposed a write, marked until the write settles.
pub struct Marked {
    marks: Arc<Marks>,
    idx: Vec<usize>,
}

impl Marked {
    /// Unmarks the stripes and wakes the lockers waiting for them.
    pub fn release(self) {
        for i in &self.idx {
            self.marks.count[*i].fetch_sub(1, Ordering::AcqRel);
        }
        if !self.idx.is_empty() {
            // Under the gate: a locker that saw a mark and is about to wait holds it.
            let _gate = self.marks.gate.lock();
            self.marks.cleared.notify_all();
        }
        self.marks.wake(&self.idx);
    }
}

impl LockTable {
    fn stripe(&self, key: &[u8]) -> usize {
        (xxhash_rust::xxh3::xxh3_64_with_seed(key, self.seed) as usize) % STRIPES
    }

    fn id(&self) -> usize {
        Arc::as_ptr(&self.marks) as usize
    }

    /// Locks the stripes of `keys` (any number, duplicates allowed), then waits until no
    /// write in flight marks them. Stripes this thread holds already are left as they are
    /// (EXEC holds its commands' stripes while each command locks its own): the guards
    /// returned hold only the others.
    pub fn lock<'a, K: AsRef<[u8]>>(&'a self, keys: &[K]) -> Guards<'a> {
        self.lock_stripes(self.stripes_of(keys))
    }

    /// The stripes of `keys`, each once, in ascending order (the order every locker takes).
    fn stripes_of<K: AsRef<[u8]>>(&self, keys: &[K]) -> Vec<usize> {
        let mut idx: Vec<usize> = keys.iter().map(|k| self.stripe(k.as_ref())).collect();
        idx.sort_unstable();
        idx.dedup();
        idx
    }

    /// Locks the stripes of `keys` as [`LockTable::lock`] does but without waiting for the
    /// marks of writes in flight: for a blind write, which reads nothing of its keys (module
    /// doc). In standalone mode, where no write stays in flight, the same as `lock`.
    pub fn lock_blind<'a, K: AsRef<[u8]>>(&'a self, keys: &[K]) -> Guards<'a> {
        self.lock_stripes_waiting(self.stripes_of(keys), false)
    }

    /// Locks `key`'s stripe when that cannot deadlock, else `None`: a thread holding no
    /// stripe of this table waits for it; one holding some (taken in ascending order, which
    /// waiting for another would break) gets it only if it holds it already or it is free
    /// and unmarked now. For work a thread may skip (an expired key's early removal).
    pub fn lock_if_in_order(&self, key: &[u8]) -> Option<Guards<'_>> {
        let table = self.id();
        let i = self.stripe(key);
        let (holds_any, holds_it) = HELD.with(|h| {
            let h = h.borrow();
            (h.iter().any(|e| e.0 == table), h.contains(&(table, i)))
        });
        if !holds_any || holds_it {
            return Some(self.lock_stripes(vec![i]));
        }
        let guard = self.stripes[i].try_lock()?;
        if self.marks.count[i].load(Ordering::Acquire) > 0 {
            return None;
        }
        HELD.with(|h| h.borrow_mut().push((table, i)));
        Some(Guards { held: vec![guard], idx: vec![i], table: self })
    }

    /// Locks every stripe (a script: no other writer, nor reader of several keys, runs
    /// until the guards drop), as [`LockTable::lock`] does: in ascending order, then waiting
    /// for the marks. A thread that holds some stripes already must not call it (it would
    /// take the others out of order).
    pub fn lock_all(&self) -> Guards<'_> {
        self.lock_stripes((0..STRIPES).collect())
    }

    fn lock_stripes(&self, idx: Vec<usize>) -> Guards<'_> {
        self.lock_stripes_waiting(idx, true)
    }

    /// Locks stripes `idx` (ascending), then, with `for_marks`, waits for their marks.
    fn lock_stripes_waiting(&self, mut idx: Vec<usize>, for_marks: bool) -> Guards<'_> {
        let table = self.id();
        HELD.with(|h| {
            let h = h.borrow();
            if !h.is_empty() {
                idx.retain(|i| !h.contains(&(table, *i)));
            }
        });
        let held = idx
            .iter()
            .map(|&i| {
                self.stripes[i]
                    .try_lock()
                    .unwrap_or_else(|| super::pending::off_worker(|| self.stripes[i].lock()))
            })
            .collect();
        let marked = |i: &usize| self.marks.count[*i].load(Ordering::Acquire) > 0;
        if for_marks && idx.iter().any(marked) {
            // Holding the stripes, no new mark can come: wait for these to clear.
            super::pending::off_worker(|| {
                let mut gate = self.marks.gate.lock();
                while idx.iter().any(marked) {
                    self.marks.cleared.wait(&mut gate);
                }
            });
        }
        HELD.with(|h| h.borrow_mut().extend(idx.iter().map(|i| (table, *i))));
        Guards { held, idx, table: self }
    }

    /// `key`'s stripe, when another writer holds it or a write in flight marks it: a
    /// [`LockTable::lock`] of `key` would wait now.
    pub fn busy(&self, key: &[u8]) -> Option<Busy> {
        self.busy_for(key, true)
    }

    /// `key`'s stripe, when another writer holds it: a [`LockTable::lock_blind`] of `key`
    /// would wait now (a blind write waits for no mark).
    pub fn busy_blind(&self, key: &[u8]) -> Option<Busy> {
        self.busy_for(key, false)
    }

    fn busy_for(&self, key: &[u8], marks: bool) -> Option<Busy> {
        let b = Busy { stripe: self.stripe(key), marks };
        self.is_busy(b).then_some(b)
    }

    fn is_busy(&self, b: Busy) -> bool {
        let i = b.stripe;
        self.stripes[i].is_locked() || (b.marks && self.marks.count[i].load(Ordering::SeqCst) > 0)
    }

    /// Waits, as a task, until the stripe of `b` (from [`LockTable::busy`] or
    /// [`LockTable::busy_blind`]) is no longer held nor, unless `b` is a blind write's,
    /// marked, or `MAX_TASK_WAIT` has passed: a stripe held that long (a script holds them
    /// all) is waited for by the command itself, where a script that runs too long gets its
    /// callers a BUSY reply. Takes nothing: the stripe may be taken again before the caller
    /// locks it.
    pub async fn until_free(&self, b: Busy) {
        /// Counts the task among the stripe's waiters while it waits (a dropped wait too).
        struct Waiting<'a>(&'a AtomicU32);
        impl Drop for Waiting<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::SeqCst);
            }
        }
        const MAX_TASK_WAIT: Duration = Duration::from_millis(10);
        let (m, i) = (&*self.marks, b.stripe);
        m.waiters[i].fetch_add(1, Ordering::SeqCst);
        let _waiting = Waiting(&m.waiters[i]);
        let wait = async {
            loop {
                let freed = m.freed[i].notified();
                tokio::pin!(freed);
                freed.as_mut().enable();
                fence(Ordering::SeqCst);
                if !self.is_busy(b) {
                    return;
                }
                freed.await;
            }
        };
        let _ = tokio::time::timeout(MAX_TASK_WAIT, wait).await;
    }

    /// Marks the stripes this thread holds in this table, for a write proposed under them
    /// that may outlive the guards: lockers of those stripes wait until the mark is released.
    pub fn mark_held(&self) -> Marked {
        let table = self.id();
        let idx: Vec<usize> = HELD
            .with(|h| h.borrow().iter().filter(|(t, _)| *t == table).map(|(_, i)| *i).collect());
        for i in &idx {
            self.marks.count[*i].fetch_add(1, Ordering::AcqRel);
        }
        Marked { marks: self.marks.clone(), idx }
    }

    /// Whether a write in flight marks `key`'s stripe.
    pub fn is_marked(&self, key: &[u8]) -> bool {
        self.marks.count[self.stripe(key)].load(Ordering::Acquire) > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Runs `lock` on a thread of its own; the count is 1 once it has locked.
    fn locker(
        table: &Arc<LockTable>,
        lock: fn(&LockTable),
    ) -> (std::thread::JoinHandle<()>, Arc<AtomicU32>) {
        let got = Arc::new(AtomicU32::new(0));
        let (table, done) = (table.clone(), got.clone());
        let t = std::thread::spawn(move || {
            lock(&table);
            done.store(1, Ordering::SeqCst);
        });
        (t, got)
    }

    #[test]
    fn a_marked_stripe_waits_for_its_release_after_the_guards_drop() {
        let table = Arc::new(LockTable::default());
        let g = table.lock(&["a", "b"]);
        let marked = table.mark_held();
        drop(g);
        assert!(table.is_marked(b"a") && table.is_marked(b"b"));
        let (t, got) = locker(&table, |t| drop(t.lock(&["b"])));
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(got.load(Ordering::SeqCst), 0, "the locker waits for the mark");
        marked.release();
        t.join().unwrap();
        assert_eq!(got.load(Ordering::SeqCst), 1);
        assert!(!table.is_marked(b"a"));
    }

    #[test]
    fn a_blind_lock_takes_a_marked_stripe_at_once_but_waits_for_its_holder() {
        let table = Arc::new(LockTable::default());
        let g = table.lock(&["a"]);
        let marked = table.mark_held();
        drop(g);
        // Marked, not held: a blind writer (of it and another key: MSET) goes on, and marks
        // both for its own write.
        let g = table.lock_blind(&["a", "b"]);
        let second = table.mark_held();
        drop(g);
        marked.release();
        assert!(table.is_marked(b"a") && table.is_marked(b"b"), "the blind writer's marks stay");
        second.release();
        assert!(!table.is_marked(b"a") && !table.is_marked(b"b"));
        // Held: the blind writer waits for the holder, as any locker does.
        let g = table.lock(&["a"]);
        let (t, got) = locker(&table, |t| drop(t.lock_blind(&["a"])));
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(got.load(Ordering::SeqCst), 0, "the blind locker waits for the holder");
        drop(g);
        t.join().unwrap();
        assert_eq!(got.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_thread_locking_stripes_it_holds_passes_and_keeps_them_until_the_outer_guard_drops() {
        let table = Arc::new(LockTable::default());
        let outer = table.lock(&["a", "b"]);
        let inner = table.lock(&["b", "a"]);
        drop(inner);
        // Still held: another thread waits.
        let got = Arc::new(AtomicU32::new(0));
        let t = {
            let (table, got) = (table.clone(), got.clone());
            std::thread::spawn(move || {
                let _g = table.lock(&["a"]);
                got.store(1, Ordering::SeqCst);
            })
        };
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(got.load(Ordering::SeqCst), 0, "the outer guard still holds the stripe");
        drop(outer);
        t.join().unwrap();
        assert_eq!(got.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_lock_out_of_order_is_taken_only_when_free() {
        let table = Arc::new(LockTable::default());
        // Holding nothing: taken (waiting if need be).
        drop(table.lock_if_in_order(b"a").unwrap());
        let outer = table.lock(&["a"]);
        // Held already: passes.
        assert!(table.lock_if_in_order(b"a").is_some());
        let other = (0..100_000)
            .map(|i| format!("k{i}"))
            .find(|k| table.stripe(k.as_bytes()) != table.stripe(b"a"))
            .unwrap();
        // Held by another thread: refused, not waited for.
        let (held_tx, held_rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let t = {
            let (table, other) = (table.clone(), other.clone());
            std::thread::spawn(move || {
                let _g = table.lock(&[other.as_str()]);
                held_tx.send(()).unwrap();
                done_rx.recv().unwrap();
            })
        };
        held_rx.recv().unwrap();
        assert!(table.lock_if_in_order(other.as_bytes()).is_none());
        done_tx.send(()).unwrap();
        t.join().unwrap();
        // Free: taken, and released with its guard.
        let g = table.lock_if_in_order(other.as_bytes()).unwrap();
        drop(g);
        drop(outer);
        let t = {
            let table = table.clone();
            std::thread::spawn(move || drop(table.lock(&[other.as_str(), "a"])))
        };
        t.join().unwrap();
    }

    #[test]
    fn a_task_waits_for_a_busy_stripe_until_it_is_unlocked_or_unmarked() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let table = LockTable::default();
        assert!(table.busy(b"k").is_none(), "a free stripe is not busy");
        // Held: the wait is pending until the guard drops, then done (no timer involved).
        let g = table.lock(&["k"]);
        let b = table.busy(b"k").expect("held");
        let i = b.stripe;
        rt.block_on(async {
            let wait = table.until_free(b);
            tokio::pin!(wait);
            assert!(poll_once(wait.as_mut()).await.is_pending());
            assert_eq!(table.marks.waiters[i].load(Ordering::SeqCst), 1);
            drop(g);
            assert!(poll_once(wait.as_mut()).await.is_ready(), "woken by the release");
        });
        assert_eq!(table.marks.waiters[i].load(Ordering::SeqCst), 0, "no waiter left counted");
        // Marked by a write in flight: the same until the mark's release.
        let g = table.lock(&["k"]);
        let marked = table.mark_held();
        drop(g);
        assert_eq!(table.busy(b"k"), Some(b), "a mark keeps the stripe busy");
        // Not for a blind write, which waits only for a holder.
        assert_eq!(table.busy_blind(b"k"), None, "a mark alone does not stop a blind write");
        let g = table.lock_blind(&["k"]);
        let blind = table.busy_blind(b"k").expect("held");
        rt.block_on(async {
            let wait = table.until_free(blind);
            tokio::pin!(wait);
            assert!(poll_once(wait.as_mut()).await.is_pending());
            drop(g);
            assert!(poll_once(wait.as_mut()).await.is_ready(), "the mark left does not count");
        });
        rt.block_on(async {
            let wait = table.until_free(b);
            tokio::pin!(wait);
            assert!(poll_once(wait.as_mut()).await.is_pending());
            marked.release();
            assert!(poll_once(wait.as_mut()).await.is_ready(), "woken by the mark's release");
        });
        assert!(table.busy(b"k").is_none());
    }

    #[test]
    fn a_task_waits_for_a_stripe_held_long_only_for_a_bounded_time() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let table = LockTable::default();
        let all = table.lock_all();
        let b = table.busy(b"k").expect("every stripe is held");
        let i = b.stripe;
        let start = std::time::Instant::now();
        rt.block_on(table.until_free(b));
        assert!(start.elapsed() >= Duration::from_millis(10), "it returned at the bound");
        assert!(table.busy(b"k").is_some(), "still held: the command waits for it itself");
        // A wait given up (its task dropped) is no longer counted.
        rt.block_on(async {
            let wait = table.until_free(b);
            tokio::pin!(wait);
            assert!(poll_once(wait.as_mut()).await.is_pending());
            assert_eq!(table.marks.waiters[i].load(Ordering::SeqCst), 1);
        });
        assert_eq!(table.marks.waiters[i].load(Ordering::SeqCst), 0);
        drop(all);
    }

    /// Polls `f` once.
    async fn poll_once<F: std::future::Future + Unpin>(mut f: F) -> std::task::Poll<F::Output> {
        std::future::poll_fn(|cx| std::task::Poll::Ready(std::pin::Pin::new(&mut f).poll(cx))).await
    }

    #[test]
    fn only_the_stripes_held_now_are_marked() {
        let table = LockTable::default();
        let other = LockTable::default();
        let g1 = table.lock(&["x"]);
        let _g2 = other.lock(&["y"]);
        drop(g1);
        let _g3 = table.lock(&["z"]);
        let m = table.mark_held();
        assert!(table.is_marked(b"z"));
        assert!(!table.is_marked(b"x") || table.stripe(b"x") == table.stripe(b"z"));
        assert!(!other.is_marked(b"y"), "another table's stripes are not this one's");
        m.release();
        assert!(!table.is_marked(b"z"));
    }
}
