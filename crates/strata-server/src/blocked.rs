//! Clients blocked on keys (BLPOP, BLMOVE, BZPOPMIN, XREAD BLOCK, ...): which client waits on
//! which keys, in the order they blocked, and the channel each one's outcome goes through.
//!
//! Redis serves a key's blocked clients first come, first served, right after the command
//! (or EXEC) that wrote the key, in the context of that writer; `commands::blocking` does the
//! same with this registry: it *claims* a waiter, re-runs the waiter's command line, and then
//! either hands the reply over ([`Blocked::served`]) or puts the waiter back in its place
//! ([`Blocked::unserved`]). A waiter leaves in exactly one of these ways, each of which sends
//! its outcome once:
//!
//! - served: the reply of its re-run command;
//! - cancelled ([`Blocked::cancel`]): its timeout passed, CLIENT UNBLOCK, or it disconnected.
//!   A cancel that finds the waiter claimed by a serving pass only marks it: the pass ends
//!   it (served, if its command found something; else with the cancel's reply). So an
//!   element is never popped for a client that has already been told it timed out.

//!
//! Keys here are *waited keys*: a database number and a user key ([`waited_key`]), so a
//! write in one database wakes only the clients blocked on that key in that database.

use parking_lot::Mutex;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::sync::oneshot;

/// The registry's name of user key `key` in database `db`: `db u32BE | key`.
pub fn waited_key(db: usize, key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(4 + key.len());
    k.extend_from_slice(&(db as u32).to_be_bytes());
    k.extend_from_slice(key);
    k
}

/// The database and user key of a [`waited_key`] (`None`: too short to be one).
pub fn split_waited_key(k: &[u8]) -> Option<(usize, &[u8])> {
    let (db, key) = k.split_first_chunk::<4>()?;
    Some((u32::from_be_bytes(*db) as usize, key))
}

/// How a blocked client's wait ends.
#[derive(Debug)]
pub struct Outcome {
    /// The reply bytes (RESP, already formatted for the client's protocol).
    pub reply: Vec<u8>,
    /// The WAL sync the reply must wait for (`appendfsync always`), if its write owes one.
    pub sync: Option<u64>,
    /// Its command was served (re-run); else its wait was cancelled (timeout, CLIENT
    /// UNBLOCK), and the reply is the cancel's.
    pub served: bool,
}

/// Why a wait is cancelled.
#[derive(Debug, Clone)]
pub enum Cancel {
    /// The timeout passed (or CLIENT UNBLOCK ... TIMEOUT): the command's timeout reply.
    Timeout,
    /// CLIENT UNBLOCK ... ERROR: this error reply (its text, code included).
    Error(String),
    /// The client disconnected: no reply.
    Gone,
}

/// A waiter's command, as a serving pass re-runs it.
#[derive(Debug, Clone)]
pub struct Claimed {
    /// The command line to re-run.
    pub line: Vec<Vec<u8>>,
    /// Whether the client speaks RESP3.
    pub resp3: bool,
}

struct Waiter {
    keys: Vec<Vec<u8>>,
    line: Vec<Vec<u8>>,
    resp3: bool,
    timeout_reply: Vec<u8>,
    tx: oneshot::Sender<Outcome>,
    claimed: bool,
    cancel: Option<Cancel>,
}

impl Waiter {
    fn cancel_reply(&self, why: &Cancel) -> Vec<u8> {
        match why {
            Cancel::Timeout => self.timeout_reply.clone(),
            Cancel::Error(msg) => format!("-{msg}\r\n").into_bytes(),
            Cancel::Gone => Vec::new(),
        }
    }
}

#[derive(Default)]
struct Registry {
    /// Per key, the ids of the clients waiting on it, in the order they blocked.
    by_key: HashMap<Vec<u8>, VecDeque<u64>>,
    waiters: HashMap<u64, Waiter>,
}

impl Registry {
    /// Removes waiter `id` from every queue and the map.
    fn remove(&mut self, id: u64) -> Option<Waiter> {
        let w = self.waiters.remove(&id)?;
        for k in &w.keys {
            if let Some(q) = self.by_key.get_mut(k) {
                q.retain(|&x| x != id);
                if q.is_empty() {
                    self.by_key.remove(k);
                }
            }
        }
        Some(w)
    }
}

/// The blocked clients of a server.
#[derive(Default)]
pub struct Blocked {
    waiting: AtomicUsize,
    reg: Mutex<Registry>,
    /// Held by a serving pass: one at a time, so each key's waiters are served in order and
    /// a waiter is re-run by one pass only.
    pub serving: Mutex<()>,
}

impl Blocked {
    /// How many clients are blocked (INFO's `blocked_clients`).
    pub fn count(&self) -> usize {
        self.waiting.load(Ordering::Acquire)
    }

    /// Blocks client `id` on `keys` (duplicates allowed): re-run `line` when one is written;
    /// `timeout_reply` is what it gets when its time is up. The receiver gets its outcome.
    /// A client blocks on one command at a time: a previous registration of `id` is
    /// replaced (as cancelled with no reply).
    pub fn register(
        &self,
        id: u64,
        keys: &[Vec<u8>],
        line: Vec<Vec<u8>>,
        resp3: bool,
        timeout_reply: Vec<u8>,
    ) -> oneshot::Receiver<Outcome> {
        let (tx, rx) = oneshot::channel();
        let mut keys = keys.to_vec();
        keys.sort();
        keys.dedup();
        let mut reg = self.reg.lock();
        if reg.remove(id).is_some() {
            self.waiting.fetch_sub(1, Ordering::AcqRel);
        }
        for k in &keys {
            reg.by_key.entry(k.clone()).or_default().push_back(id);
        }
        let w = Waiter { keys, line, resp3, timeout_reply, tx, claimed: false, cancel: None };
        reg.waiters.insert(id, w);
        self.waiting.fetch_add(1, Ordering::AcqRel);
        rx
    }

    /// Waiter `id`'s reply when its time is up becomes `timeout_reply` (WAIT's count as it
    /// grows).
    pub fn set_timeout_reply(&self, id: u64, timeout_reply: Vec<u8>) {
        if let Some(w) = self.reg.lock().waiters.get_mut(&id) {
            w.timeout_reply = timeout_reply;
        }
    }

    /// Whether client `id` is blocked (CLIENT LIST's flag `b`).
    pub fn is_blocked(&self, id: u64) -> bool {
        self.reg.lock().waiters.contains_key(&id)
    }

    /// Whether anyone waits on `key`.
    pub fn has_waiters(&self, key: &[u8]) -> bool {
        self.count() > 0 && self.reg.lock().by_key.contains_key(key)
    }

    /// Every key someone waits on (a FLUSHALL wakes them all).
    pub fn waited_keys(&self) -> Vec<Vec<u8>> {
        self.reg.lock().by_key.keys().cloned().collect()
    }

    /// The keys someone waits on in databases `dbs` (FLUSHDB, SWAPDB).
    pub fn waited_keys_in(&self, dbs: &[usize]) -> Vec<Vec<u8>> {
        let reg = self.reg.lock();
        let of = |k: &&Vec<u8>| split_waited_key(k).is_some_and(|(db, _)| dbs.contains(&db));
        reg.by_key.keys().filter(of).cloned().collect()
    }

    /// Every blocked client (on keys, or in WAIT).
    pub fn blocked_ids(&self) -> Vec<u64> {
        self.reg.lock().waiters.keys().copied().collect()
    }

    /// The clients waiting on `key`, first blocked first.
    pub fn waiters_of(&self, key: &[u8]) -> Vec<u64> {
        self.reg.lock().by_key.get(key).map(|q| q.iter().copied().collect()).unwrap_or_default()
    }

    /// The command name waiter `id` blocked in (`None` once it has left).
    pub fn command_of(&self, id: u64) -> Option<Vec<u8>> {
        self.reg.lock().waiters.get(&id).and_then(|w| w.line.first().cloned())
    }

    /// Claims waiter `id` for a re-run: its command, or `None` when it has left, is claimed
    /// already or is being cancelled.
    pub fn claim(&self, id: u64) -> Option<Claimed> {
        let mut reg = self.reg.lock();
        let w = reg.waiters.get_mut(&id)?;
        if w.claimed || w.cancel.is_some() {
            return None;
        }
        w.claimed = true;
        Some(Claimed { line: w.line.clone(), resp3: w.resp3 })
    }

    /// Ends claimed waiter `id`: its re-run replied `outcome`.
    pub fn served(&self, id: u64, outcome: Outcome) {
        let w = self.reg.lock().remove(id);
        if let Some(w) = w {
            self.waiting.fetch_sub(1, Ordering::AcqRel);
            let _ = w.tx.send(outcome);
        }
    }

    /// Releases claimed waiter `id` whose re-run found nothing: it keeps its place, unless it
    /// was cancelled meanwhile, which now ends it.
    pub fn unserved(&self, id: u64) {
        let mut reg = self.reg.lock();
        let Some(w) = reg.waiters.get_mut(&id) else { return };
        w.claimed = false;
        let Some(why) = w.cancel.clone() else { return };
        if let Some(w) = reg.remove(id) {
            drop(reg);
            self.waiting.fetch_sub(1, Ordering::AcqRel);
            let reply = w.cancel_reply(&why);
            let _ = w.tx.send(Outcome { reply, sync: None, served: false });
        }
    }

    /// Cancels client `id`'s wait: false when it is not blocked. Its outcome goes through its
    /// channel: the cancel's reply now, or, when a serving pass holds it, whatever that
    /// pass ends it with.
    pub fn cancel(&self, id: u64, why: Cancel) -> bool {
        let mut reg = self.reg.lock();
        let Some(w) = reg.waiters.get_mut(&id) else { return false };
        if w.claimed {
            if w.cancel.is_none() {
                w.cancel = Some(why);
            }
            return true;
        }
        if let Some(w) = reg.remove(id) {
            drop(reg);
            self.waiting.fetch_sub(1, Ordering::AcqRel);
            let reply = w.cancel_reply(&why);
            let _ = w.tx.send(Outcome { reply, sync: None, served: false });
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(ks: &[&str]) -> Vec<Vec<u8>> {
        ks.iter().map(|k| k.as_bytes().to_vec()).collect()
    }

    #[test]
    fn waiters_queue_per_key_in_blocking_order() {
        let b = Blocked::default();
        let _r1 = b.register(1, &keys(&["a", "b", "a"]), vec![], false, b"*-1\r\n".to_vec());
        let _r2 = b.register(2, &keys(&["b"]), vec![], false, vec![]);
        assert_eq!(b.count(), 2);
        assert_eq!(b.waiters_of(b"b"), vec![1, 2]);
        assert_eq!(b.waiters_of(b"a"), vec![1]);
        assert!(b.has_waiters(b"a") && !b.has_waiters(b"c"));
        let mut waited = b.waited_keys();
        waited.sort();
        assert_eq!(waited, keys(&["a", "b"]));
    }

    #[test]
    fn a_served_waiter_leaves_every_queue_and_gets_its_reply() {
        let b = Blocked::default();
        let mut rx =
            b.register(1, &keys(&["a", "b"]), keys(&["blpop", "a", "b", "0"]), false, vec![]);
        let c = b.claim(1).unwrap();
        assert_eq!(c.line, keys(&["blpop", "a", "b", "0"]));
        assert!(b.claim(1).is_none(), "claimed once");
        b.served(1, Outcome { reply: b"*2\r\n".to_vec(), sync: None, served: true });
        assert_eq!(rx.try_recv().unwrap().reply, b"*2\r\n");
        assert_eq!(b.count(), 0);
        assert!(b.waiters_of(b"a").is_empty() && b.waited_keys().is_empty());
    }

    #[test]
    fn a_cancel_during_a_claim_waits_for_the_serving_pass() {
        let b = Blocked::default();
        let mut rx = b.register(7, &keys(&["k"]), vec![], false, b"*-1\r\n".to_vec());
        b.claim(7).unwrap();
        assert!(b.cancel(7, Cancel::Timeout));
        assert!(rx.try_recv().is_err(), "nothing yet: the pass holds it");
        assert!(b.claim(7).is_none(), "a cancelled waiter is not claimed again");
        b.unserved(7);
        assert_eq!(rx.try_recv().unwrap().reply, b"*-1\r\n");
        assert_eq!(b.count(), 0);
        assert!(!b.cancel(7, Cancel::Timeout), "gone");
    }

    #[test]
    fn a_cancel_during_a_claim_loses_to_a_serve() {
        let b = Blocked::default();
        let mut rx = b.register(7, &keys(&["k"]), vec![], false, b"*-1\r\n".to_vec());
        b.claim(7).unwrap();
        b.cancel(7, Cancel::Gone);
        b.served(7, Outcome { reply: b"$1\r\nx\r\n".to_vec(), sync: None, served: true });
        assert_eq!(rx.try_recv().unwrap().reply, b"$1\r\nx\r\n");
    }

    #[test]
    fn cancels_reply_by_their_reason() {
        let b = Blocked::default();
        let mut rx = b.register(3, &keys(&["k"]), vec![], false, b"$-1\r\n".to_vec());
        b.cancel(3, Cancel::Error("UNBLOCKED client unblocked via CLIENT UNBLOCK".into()));
        assert_eq!(
            rx.try_recv().unwrap().reply,
            b"-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n"
        );
        let mut rx = b.register(3, &keys(&["k"]), vec![], false, b"$-1\r\n".to_vec());
        b.cancel(3, Cancel::Timeout);
        assert_eq!(rx.try_recv().unwrap().reply, b"$-1\r\n");
        let unserved_after_leaving = Blocked::default();
        unserved_after_leaving.unserved(9);
        assert_eq!(unserved_after_leaving.count(), 0);
    }
}
