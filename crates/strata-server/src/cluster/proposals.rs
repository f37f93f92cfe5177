//! Group commit of proposals: the write batches that commands hand to one Raft group at the
//! same time go into one log entry.
//!
//! A command on the leader runs under its key locks and hands its batch to its group
//! ([`Proposals::propose`]). While [`MAX_IN_FLIGHT`] entries of that group are in flight,
//! later batches wait in the group's queue; when one completes, its proposer takes the queue
//! (up to [`MAX_ENTRY_BYTES`]) as the next entry and hands it to the first waiter, which
//! proposes it: the batches appended in queue order (`WriteBatch::append`), which replicas
//! apply as one engine write. Each command gets its entry's outcome. So one entry's consensus round (two fdatasyncs on the
//! critical path, a network round trip, an apply) serves every command that arrived while the
//! previous one ran, as the WAL's group commit does for a standalone server.
//!
//! Why joining is safe: each batch was computed under its command's key locks, which are held
//! until the batch is applied, so two batches in one queue never touch the same key; applying
//! them in one engine write is applying them one after the other. A batch stays atomic (it is
//! inside one entry), and an entry holds batches of one group only.
//!
//! Contract: a batch that finds a free slot proposes at once (no wait for company), so a
//! lone command pays no delay; at most [`MAX_IN_FLIGHT`] entries per group are in flight
//! here. Entries in flight together may commit in either order: their batches touch
//! different keys (above).

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::{Condvar, Mutex};
use strata::WriteBatch;
use strata_replication::GroupId;

/// Bytes of batches joined into one entry at most (a larger batch still goes alone).
pub const MAX_ENTRY_BYTES: usize = 4 << 20;

/// Entries of one group in flight from this node at most. One: a second would overlap the
/// first's fdatasyncs and round trip, but measured under 16 writers it halved the entries'
/// size and cost more per command (`docs/measurements.md`, cluster writes).
pub const MAX_IN_FLIGHT: usize = 1;

/// A command's batch waiting for its entry, and where its outcome goes.
type Pending<E> = (WriteBatch, Arc<Mailbox<E>>);

/// What a waiting command is told.
enum Turn<E> {
    /// Propose these batches (this command's own first) as one entry now.
    Lead(Vec<Pending<E>>),
    /// Its batch's entry ended so.
    Done(Result<(), Arc<E>>),
}

/// One waiting command's mailbox.
struct Mailbox<E> {
    turn: Mutex<Option<Turn<E>>>,
    wake: Condvar,
}

impl<E> Mailbox<E> {
    fn new() -> Self {
        Mailbox { turn: Mutex::new(None), wake: Condvar::new() }
    }

    fn post(&self, turn: Turn<E>) {
        *self.turn.lock() = Some(turn);
        self.wake.notify_one();
    }

    fn take(&self) -> Turn<E> {
        let mut turn = self.turn.lock();
        loop {
            if let Some(t) = turn.take() {
                return t;
            }
            self.wake.wait(&mut turn);
        }
    }
}

/// Batches waiting for one group, and how many of its entries are in flight from here.
struct Queue<E> {
    waiting: Vec<Pending<E>>,
    /// Entries proposed and not yet ended. Batches wait only while it is at
    /// [`MAX_IN_FLIGHT`]; a proposer that ends hands its slot to the waiting batches.
    in_flight: usize,
}

impl<E> Queue<E> {
    /// The next entry's batches from the front of the queue (at least one).
    fn take_entry(&mut self) -> Vec<Pending<E>> {
        let mut bytes = 0;
        let n = self
            .waiting
            .iter()
            .take_while(|(b, _)| {
                bytes += b.size_in_bytes();
                bytes <= MAX_ENTRY_BYTES
            })
            .count()
            .max(1);
        self.waiting.drain(..n).collect()
    }
}

/// The proposal queues of a node's groups; `E` is the proposal's error.
pub struct Proposals<E> {
    queues: Mutex<HashMap<GroupId, Arc<Mutex<Queue<E>>>>>,
}

impl<E> Default for Proposals<E> {
    fn default() -> Self {
        Proposals { queues: Mutex::new(HashMap::new()) }
    }
}

impl<E> Proposals<E> {
    fn queue(&self, group: GroupId) -> Arc<Mutex<Queue<E>>> {
        self.queues
            .lock()
            .entry(group)
            .or_insert_with(|| Arc::new(Mutex::new(Queue { waiting: Vec::new(), in_flight: 0 })))
            .clone()
    }

    /// Proposes `batch` to `group`, joined with the batches other threads hand in meanwhile;
    /// `send` proposes one joined batch and waits for its outcome (it runs on whichever
    /// caller's thread leads that entry; `panicked` is the outcome of every batch of the entry
    /// when it panics, so no waiter is left waiting). Returns this batch's entry's outcome.
    pub fn propose(
        &self,
        group: GroupId,
        batch: WriteBatch,
        send: impl Fn(WriteBatch) -> Result<(), E>,
        panicked: impl FnOnce() -> E,
    ) -> Result<(), Arc<E>> {
        let queue = self.queue(group);
        let mine = Arc::new(Mailbox::new());
        let entry = {
            let mut q = queue.lock();
            if q.in_flight < MAX_IN_FLIGHT {
                // Nothing waits while a slot is free: this batch goes alone, at once.
                q.in_flight += 1;
                vec![(batch, mine.clone())]
            } else {
                q.waiting.push((batch, mine.clone()));
                Vec::new()
            }
        };
        let entry = if entry.is_empty() {
            match mine.take() {
                Turn::Done(r) => return r,
                Turn::Lead(entry) => entry,
            }
        } else {
            entry
        };
        let mut parts = entry.into_iter();
        let (mut joined, _) = parts.next().expect("an entry holds its proposer's batch");
        let others: Vec<_> = parts
            .map(|(b, mailbox)| {
                joined.append(&b);
                mailbox
            })
            .collect();
        let sent = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| send(joined)));
        let outcome: Result<(), Arc<E>> = match sent {
            Ok(r) => r.map_err(Arc::new),
            Err(_) => Err(Arc::new(panicked())),
        };
        for mailbox in others {
            mailbox.post(Turn::Done(outcome.clone()));
        }
        // Hand this entry's slot to the batches that waited for one.
        {
            let mut q = queue.lock();
            if q.waiting.is_empty() {
                q.in_flight -= 1;
            } else {
                let next = q.take_entry();
                let leader = next[0].1.clone();
                leader.post(Turn::Lead(next));
            }
        }
        outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn batch(key: &str) -> WriteBatch {
        let mut b = WriteBatch::new();
        b.put(key, "v");
        b
    }

    #[test]
    fn a_lone_batch_is_proposed_alone() {
        let p = Proposals::<String>::default();
        let sent = Mutex::new(Vec::new());
        p.propose(
            GroupId(1),
            batch("a"),
            |b| {
                sent.lock().push(b.len());
                Ok(())
            },
            || "panicked".to_string(),
        )
        .unwrap();
        assert_eq!(*sent.lock(), vec![1]);
    }

    #[test]
    fn batches_arriving_while_the_slots_are_taken_share_the_next_entry() {
        let p = Arc::new(Proposals::<String>::default());
        let entries = Arc::new(Mutex::new(Vec::new()));
        let release = Arc::new((Mutex::new(false), Condvar::new()));
        // The first MAX_IN_FLIGHT entries stay in flight until released.
        let send = {
            let (entries, release) = (entries.clone(), release.clone());
            move |b: WriteBatch| {
                let nth = {
                    let mut e = entries.lock();
                    e.push(b.len());
                    e.len()
                };
                if nth <= MAX_IN_FLIGHT {
                    let mut go = release.0.lock();
                    while !*go {
                        release.1.wait(&mut go);
                    }
                }
                Ok::<(), String>(())
            }
        };
        let spawn = |key: String| {
            let (p, send) = (p.clone(), send.clone());
            std::thread::spawn(move || p.propose(GroupId(1), batch(&key), send, String::new))
        };
        let first: Vec<_> = (0..MAX_IN_FLIGHT).map(|i| spawn(format!("a{i}"))).collect();
        while entries.lock().len() < MAX_IN_FLIGHT {
            std::thread::sleep(Duration::from_millis(1));
        }
        let waiters: Vec<_> = (0..5).map(|i| spawn(format!("b{i}"))).collect();
        while p.queue(GroupId(1)).lock().waiting.len() < 5 {
            std::thread::sleep(Duration::from_millis(1));
        }
        *release.0.lock() = true;
        release.1.notify_all();
        for t in first.into_iter().chain(waiters) {
            t.join().unwrap().unwrap();
        }
        let mut want = vec![1; MAX_IN_FLIGHT];
        want.push(5);
        assert_eq!(*entries.lock(), want, "the five waiting batches make one entry");
        assert_eq!(p.queue(GroupId(1)).lock().in_flight, 0);
    }

    #[test]
    fn every_batch_of_a_failed_entry_gets_the_failure() {
        let p = Arc::new(Proposals::<String>::default());
        let threads: Vec<_> = (0..8)
            .map(|i| {
                let p = p.clone();
                std::thread::spawn(move || {
                    p.propose(
                        GroupId(2),
                        batch(&format!("k{i}")),
                        |_| {
                            std::thread::sleep(Duration::from_millis(2));
                            Err("no quorum".to_string())
                        },
                        String::new,
                    )
                })
            })
            .collect();
        for t in threads {
            assert_eq!(t.join().unwrap().unwrap_err().as_str(), "no quorum");
        }
    }

    #[test]
    fn a_panicking_proposal_fails_its_batches_and_frees_the_queue() {
        let p = Proposals::<String>::default();
        let r = p.propose(GroupId(3), batch("a"), |_| panic!("boom"), || "panicked".into());
        assert_eq!(r.unwrap_err().as_str(), "panicked");
        p.propose(GroupId(3), batch("b"), |_| Ok(()), String::new).unwrap();
    }

    /// Randomized, against a model of what must hold: threads propose to a few groups at
    /// once while some entries fail; every batch is sent in exactly one entry, of its own
    /// group, after the batches its thread proposed earlier to that group, and its caller gets
    /// that entry's outcome.
    #[test]
    fn every_batch_goes_in_one_entry_of_its_group_and_gets_its_outcome() {
        const THREADS: usize = 6;
        const PER_THREAD: usize = 150;
        let p = Arc::new(Proposals::<String>::default());
        // Each entry sent: its group, its batches' keys, and whether it failed.
        let entries = Arc::new(Mutex::new(Vec::<(u32, Vec<String>, bool)>::new()));
        let threads: Vec<_> = (0..THREADS)
            .map(|t| {
                let (p, entries) = (p.clone(), entries.clone());
                std::thread::spawn(move || {
                    let mut seed = 0x9e37_79b9_7f4a_7c15u64 ^ (t as u64);
                    let mut got = Vec::new();
                    for i in 0..PER_THREAD {
                        seed ^= seed << 13;
                        seed ^= seed >> 7;
                        seed ^= seed << 17;
                        let g = (seed % 3) as u32;
                        let key = format!("{g}/{t}/{i}");
                        let send = |b: WriteBatch| {
                            let keys: Vec<String> = b
                                .keys()
                                .map(|(k, _)| String::from_utf8(k.to_vec()).unwrap())
                                .collect();
                            let mut e = entries.lock();
                            let fail = e.len() % 5 == 4;
                            e.push((g, keys, fail));
                            let n = e.len();
                            drop(e);
                            if n % 3 == 0 {
                                std::thread::yield_now();
                            }
                            if fail {
                                Err(format!("entry {n} failed"))
                            } else {
                                Ok(())
                            }
                        };
                        let r = p.propose(GroupId(g), batch(&key), send, String::new);
                        got.push((key, r.map_err(|e| e.as_str().to_string())));
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
            assert_eq!(p.queue(GroupId(g)).lock().in_flight, 0);
        }
    }

    #[test]
    fn groups_propose_independently() {
        let p = Proposals::<String>::default();
        let seen = Mutex::new(Vec::new());
        for g in [1, 2, 1] {
            p.propose(
                GroupId(g),
                batch("x"),
                |_| {
                    seen.lock().push(g);
                    Ok(())
                },
                String::new,
            )
            .unwrap();
        }
        assert_eq!(*seen.lock(), vec![1, 2, 1]);
    }
}
