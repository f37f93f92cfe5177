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

use parking_lot::{Condvar, Mutex, MutexGuard};
use std::cell::RefCell;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// Number of stripes: collisions only serialise unrelated keys, never deadlock.
const STRIPES: usize = 1024;

/// The lock table.
pub struct LockTable {
    stripes: Vec<Mutex<()>>,
    hasher: std::collections::hash_map::RandomState,
    marks: Arc<Marks>,
}

/// Each stripe's count of writes in flight that held it, and where lockers wait for them.
struct Marks {
    count: Vec<AtomicU32>,
    gate: Mutex<()>,
    cleared: Condvar,
}

thread_local! {
    /// The stripes this thread holds: its table's marks (by address), and the index.
    static HELD: RefCell<Vec<(usize, usize)>> = const { RefCell::new(Vec::new()) };
}

impl Default for LockTable {
    fn default() -> Self {
        LockTable {
            stripes: (0..STRIPES).map(|_| Mutex::new(())).collect(),
            hasher: std::collections::hash_map::RandomState::new(),
            marks: Arc::new(Marks {
                count: (0..STRIPES).map(|_| AtomicU32::new(0)).collect(),
                gate: Mutex::new(()),
                cleared: Condvar::new(),
            }),
        }
    }
}

/// Held stripes; dropping releases them.
pub struct Guards<'a> {
    held: Vec<MutexGuard<'a, ()>>,
    /// Their indices, as recorded in `HELD`.
    idx: Vec<usize>,
    table: usize,
}

impl Drop for Guards<'_> {
    fn drop(&mut self) {
        HELD.with(|h| {
            let mut h = h.borrow_mut();
            for i in &self.idx {
                if let Some(p) = h.iter().rposition(|e| *e == (self.table, *i)) {
                    h.swap_remove(p);
                }
            }
        });
        self.held.clear();
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
    }
}

impl LockTable {
    fn stripe(&self, key: &[u8]) -> usize {
        let mut h = self.hasher.build_hasher();
        h.write(key);
        (h.finish() as usize) % STRIPES
    }

    fn id(&self) -> usize {
        Arc::as_ptr(&self.marks) as usize
    }

    /// Locks the stripes of `keys` (any number, duplicates allowed), then waits until no
    /// write in flight marks them. Stripes this thread holds already are left as they are
    /// (EXEC holds its commands' stripes while each command locks its own): the guards
    /// returned hold only the others.
    pub fn lock<'a, K: AsRef<[u8]>>(&'a self, keys: &[K]) -> Guards<'a> {
        let mut idx: Vec<usize> = keys.iter().map(|k| self.stripe(k.as_ref())).collect();
        idx.sort_unstable();
        idx.dedup();
        self.lock_stripes(idx)
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
        Some(Guards { held: vec![guard], idx: vec![i], table })
    }

    /// Locks every stripe (a script: no other writer, nor reader of several keys, runs
    /// until the guards drop), as [`LockTable::lock`] does: in ascending order, then waiting
    /// for the marks. A thread that holds some stripes already must not call it (it would
    /// take the others out of order).
    pub fn lock_all(&self) -> Guards<'_> {
        self.lock_stripes((0..STRIPES).collect())
    }

    fn lock_stripes(&self, mut idx: Vec<usize>) -> Guards<'_> {
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
        if idx.iter().any(marked) {
            // Holding the stripes, no new mark can come: wait for these to clear.
            super::pending::off_worker(|| {
                let mut gate = self.marks.gate.lock();
                while idx.iter().any(marked) {
                    self.marks.cleared.wait(&mut gate);
                }
            });
        }
        HELD.with(|h| h.borrow_mut().extend(idx.iter().map(|i| (table, *i))));
        Guards { held, idx, table }
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

    #[test]
    fn a_marked_stripe_waits_for_its_release_after_the_guards_drop() {
        let table = Arc::new(LockTable::default());
        let g = table.lock(&["a", "b"]);
        let marked = table.mark_held();
        drop(g);
        assert!(table.is_marked(b"a") && table.is_marked(b"b"));
        let got = Arc::new(AtomicU32::new(0));
        let t = {
            let (table, got) = (table.clone(), got.clone());
            std::thread::spawn(move || {
                let _g = table.lock(&["b"]);
                got.store(1, Ordering::SeqCst);
            })
        };
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(got.load(Ordering::SeqCst), 0, "the locker waits for the mark");
        marked.release();
        t.join().unwrap();
        assert_eq!(got.load(Ordering::SeqCst), 1);
        assert!(!table.is_marked(b"a"));
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
