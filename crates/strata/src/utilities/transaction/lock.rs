//! Point locks of a [`TransactionDb`](super::TransactionDb): shared or exclusive locks on
//! (column family, key), lock timeouts, deadlock detection and the stealing of an expired
//! transaction's locks.
//!
//! Keys hash to one of `num_stripes` stripes, each a map of the locked keys of its share under
//! a mutex, with a condition variable its waiters sleep on; every release in a stripe wakes its
//! waiters, who try again. A lock is held by one transaction exclusively, or shared by any
//! number; a holder asking again (or for an exclusive lock it alone shares) gets it at once.
//!
//! Deadlock detection (for transactions that ask for it): before sleeping, a waiter records
//! whom it waits for in the wait-for map and follows the map from them, at most
//! `deadlock_detect_depth` steps; reaching itself means a cycle, and it fails with
//! `Error::Deadlock` naming the cycle instead of waiting. A waiter removes its entry once it has
//! the lock or gives up. Lock order: a stripe's mutex, then the wait-for map's; never the
//! reverse.
//!
//! Expiration: a transaction begun with an expiration may lose its locks once it is past it.
//! A waiter finding such a holder marks it *stolen* (only if it is still running: a prepared or
//! committing transaction can no longer be stolen from) and takes the lock; the stolen
//! transaction then fails with `Error::Expired`.

use std::collections::hash_map::RandomState;
use std::collections::{HashMap, VecDeque};
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::column_family::ColumnFamilyId;
use crate::error::{Error, Result};

/// Identifies a lock owner: a transaction, or a `TransactionDb` write outside one.
pub(crate) type TxnId = u64;

/// A locked key: its family and bytes.
pub(crate) type LockKey = (ColumnFamilyId, Vec<u8>);

/// A lock owner as the lock table sees it.
pub(crate) struct Owner {
    pub id: TxnId,
    /// When others may take its locks (none: never).
    pub expires: Option<Instant>,
    state: AtomicU8,
}

const RUNNING: u8 = 0;
/// Prepared or committing: its locks can no longer be stolen.
const SEALED: u8 = 1;
const STOLEN: u8 = 2;

impl Owner {
    pub(crate) fn new(id: TxnId, expires: Option<Instant>) -> Arc<Owner> {
        Arc::new(Owner { id, expires, state: AtomicU8::new(RUNNING) })
    }

    /// Locks in the owner's locks against stealing (before a prepare or a commit); `false`
    /// when they were already stolen.
    pub(crate) fn seal(&self) -> bool {
        match self.state.compare_exchange(RUNNING, SEALED, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => true,
            Err(s) => s == SEALED,
        }
    }

    /// Whether another transaction took (some of) its locks after it expired.
    pub(crate) fn stolen(&self) -> bool {
        self.state.load(Ordering::Acquire) == STOLEN
    }

    fn try_steal(&self, now: Instant) -> bool {
        self.expires.is_some_and(|e| e <= now)
            && (self
                .state
                .compare_exchange(RUNNING, STOLEN, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
                || self.stolen())
    }
}

/// How one lock request waits.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Wait {
    /// `None`: without limit; zero: not at all.
    pub timeout: Option<Duration>,
    /// `Some(depth)`: detect deadlocks, following at most `depth` waits.
    pub deadlock_depth: Option<usize>,
}

struct Entry {
    holders: Vec<Arc<Owner>>,
    exclusive: bool,
}

#[derive(Default)]
struct Stripe {
    keys: Mutex<HashMap<LockKey, Entry>>,
    released: Condvar,
}

/// Whom a waiting transaction waits for, and on which key.
struct Waiting {
    holders: Vec<TxnId>,
    key: LockKey,
}

/// The lock table of one `TransactionDb`.
pub(crate) struct LockTable {
    stripes: Vec<Stripe>,
    hasher: RandomState,
    /// Locked keys, against `max_locks`.
    count: AtomicUsize,
    max_locks: Option<usize>,
    waits: Mutex<HashMap<TxnId, Waiting>>,
}

impl LockTable {
    pub(crate) fn new(stripes: usize, max_locks: Option<usize>) -> Self {
        LockTable {
            stripes: (0..stripes.max(1)).map(|_| Stripe::default()).collect(),
            hasher: RandomState::default(),
            count: AtomicUsize::new(0),
            max_locks,
            waits: Mutex::new(HashMap::new()),
        }
    }

    fn stripe(&self, key: &LockKey) -> &Stripe {
        let h = self.hasher.hash_one(key);
        &self.stripes[(h % self.stripes.len() as u64) as usize]
    }

    /// Takes `key` for `owner`, shared or exclusive, waiting as `wait` says. Fails with
    /// `TimedOut`, `Deadlock`, `Expired` (the owner's own locks were stolen) or `Busy` (the
    /// table holds `max_num_locks` keys).
    pub(crate) fn lock(
        &self,
        owner: &Arc<Owner>,
        key: &LockKey,
        exclusive: bool,
        wait: Wait,
    ) -> Result<()> {
        let stripe = self.stripe(key);
        let deadline = wait.timeout.map(|t| Instant::now() + t);
        let mut keys = stripe.keys.lock();
        let result = loop {
            if owner.stolen() {
                break Err(expired(owner.id));
            }
            let now = Instant::now();
            let blockers: Vec<Arc<Owner>> = match keys.get_mut(key) {
                None => {
                    if self.max_locks.is_some_and(|m| self.count.load(Ordering::Acquire) >= m) {
                        break Err(Error::Busy(format!(
                            "the lock table holds max_num_locks ({}) keys",
                            self.max_locks.unwrap_or(0)
                        )));
                    }
                    self.count.fetch_add(1, Ordering::AcqRel);
                    keys.insert(key.clone(), Entry { holders: vec![owner.clone()], exclusive });
                    break Ok(());
                }
                Some(e) => {
                    // Holders past their expiration lose the lock to this request.
                    e.holders.retain(|h| h.id == owner.id || !h.try_steal(now));
                    let mine = e.holders.iter().any(|h| h.id == owner.id);
                    let alone = e.holders.iter().all(|h| h.id == owner.id);
                    if alone || (!exclusive && !e.exclusive) {
                        if !mine {
                            e.holders.push(owner.clone());
                        }
                        if alone {
                            e.exclusive = if mine { e.exclusive || exclusive } else { exclusive };
                        }
                        break Ok(());
                    }
                    // Only a request that must wait collects whom it waits for.
                    e.holders.iter().filter(|h| h.id != owner.id).cloned().collect()
                }
            };
            let remaining = deadline.map(|d| d.saturating_duration_since(now));
            if remaining == Some(Duration::ZERO) {
                break Err(timed_out(key, &blockers));
            }
            if let Some(depth) = wait.deadlock_depth {
                if let Some(cycle) = self.wait_for(owner.id, key, &blockers, depth) {
                    break Err(Error::Deadlock(cycle));
                }
            }
            // Sleep until a release, the deadline, or a holder's expiration.
            let wake = blockers.iter().filter_map(|b| b.expires).min();
            let until = match (deadline, wake) {
                (Some(d), Some(w)) => Some(d.min(w)),
                (d, w) => d.or(w),
            };
            match until {
                Some(t) => {
                    stripe.released.wait_until(&mut keys, t);
                }
                None => stripe.released.wait(&mut keys),
            }
        };
        drop(keys);
        if wait.deadlock_depth.is_some() {
            self.waits.lock().remove(&owner.id);
        }
        result
    }

    /// Records that `me` waits for `blockers` on `key`, and looks for a cycle back to `me`
    /// within `depth` steps: `Some(description)` when found (the wait is then not recorded).
    fn wait_for(
        &self,
        me: TxnId,
        key: &LockKey,
        blockers: &[Arc<Owner>],
        depth: usize,
    ) -> Option<String> {
        let mut waits = self.waits.lock();
        let holders: Vec<TxnId> = blockers.iter().map(|b| b.id).collect();
        // Breadth first from the holders; `parent` remembers how each was first reached.
        let mut parent: HashMap<TxnId, TxnId> = holders.iter().map(|&h| (h, me)).collect();
        let mut queue: VecDeque<(TxnId, usize)> = holders.iter().map(|&h| (h, 1)).collect();
        while let Some((t, d)) = queue.pop_front() {
            if t == me {
                // me -> path[0] -> ... -> path[last] -> me
                let mut path = Vec::new();
                let mut at = parent[&me];
                while at != me {
                    path.push(at);
                    at = parent[&at];
                }
                path.reverse();
                let mut steps = Vec::new();
                let mut from = me;
                for &to in path.iter().chain(std::iter::once(&me)) {
                    let on = if from == me { key } else { &waits[&from].key };
                    steps.push(format!(
                        "transaction {from} waits for transaction {to} on key {:?} of column \
                         family {}",
                        String::from_utf8_lossy(&on.1),
                        on.0
                    ));
                    from = to;
                }
                return Some(steps.join(", "));
            }
            if d > depth {
                continue;
            }
            let Some(w) = waits.get(&t) else { continue };
            for &next in &w.holders {
                if let std::collections::hash_map::Entry::Vacant(v) = parent.entry(next) {
                    v.insert(t);
                    queue.push_back((next, d + 1));
                }
            }
        }
        waits.insert(me, Waiting { holders, key: key.clone() });
        None
    }

    /// Releases `owner`'s locks on `keys` (those it no longer holds are skipped), waking the
    /// waiters of their stripes.
    pub(crate) fn unlock<'k>(&self, owner: TxnId, keys: impl IntoIterator<Item = &'k LockKey>) {
        for key in keys {
            let stripe = self.stripe(key);
            let mut map = stripe.keys.lock();
            if let Some(e) = map.get_mut(key) {
                e.holders.retain(|h| h.id != owner);
                if e.holders.is_empty() {
                    map.remove(key);
                    self.count.fetch_sub(1, Ordering::AcqRel);
                }
                stripe.released.notify_all();
            }
        }
    }
}

fn timed_out(key: &LockKey, holders: &[Arc<Owner>]) -> Error {
    let ids: Vec<TxnId> = holders.iter().map(|h| h.id).collect();
    Error::TimedOut(format!(
        "timeout waiting to lock key {:?} of column family {}, held by transaction(s) {ids:?}",
        String::from_utf8_lossy(&key.1),
        key.0
    ))
}

pub(crate) fn expired(id: TxnId) -> Error {
    Error::Expired(format!(
        "transaction {id} ran past its expiration and another transaction took its locks"
    ))
}
