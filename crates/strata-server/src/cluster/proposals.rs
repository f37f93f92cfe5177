//! Group commit of proposals: the write batches that commands hand to one Raft group at the
//! same time go into one log entry.
//!
//! A command on the leader runs under its key locks and hands its batch to its group
//! ([`Proposals::propose`]). While a proposal of that group is in flight, later batches wait
//! in the group's queue; when it completes, the first waiter becomes the next proposer and
//! takes the whole queue (up to [`MAX_ENTRY_BYTES`]) as one entry: the batches appended in
//! queue order (`WriteBatch::append`), which replicas apply as one engine write. Each
//! command gets the entry's outcome. So one entry's consensus round (two fdatasyncs on the
//! critical path, a network round trip, an apply) serves every command that arrived while the
//! previous one ran, as the WAL's group commit does for a standalone server.
//!
//! Why joining is safe: each batch was computed under its command's key locks, which are held
//! until the batch is applied, so two batches in one queue never touch the same key; applying
//! them in one engine write is applying them one after the other. A batch stays atomic (it is
//! inside one entry), and an entry holds batches of one group only.
//!
//! Contract: a proposer that finds the queue empty proposes at once (no wait for company),
//! so a lone command pays no delay; at most one proposal per group is in flight here.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::{Condvar, Mutex};
use strata::WriteBatch;
use strata_replication::GroupId;

/// Bytes of batches joined into one entry at most (a larger batch still goes alone).
pub const MAX_ENTRY_BYTES: usize = 4 << 20;

/// What a waiting command is told.
enum Turn<E> {
    /// Propose the queue now.
    Lead,
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

/// Batches waiting for one group, and whether one of their commands is proposing.
struct Queue<E> {
    waiting: Vec<(WriteBatch, Arc<Mailbox<E>>)>,
    /// A proposal of the group is in flight (its proposer hands the turn on when it ends).
    proposing: bool,
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
            .or_insert_with(|| {
                Arc::new(Mutex::new(Queue { waiting: Vec::new(), proposing: false }))
            })
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
        let lead = {
            let mut q = queue.lock();
            q.waiting.push((batch, mine.clone()));
            !std::mem::replace(&mut q.proposing, true)
        };
        if !lead {
            match mine.take() {
                Turn::Done(r) => return r,
                Turn::Lead => {}
            }
        }
        // This thread leads: its batch is first in the queue (a queue with waiters always
        // has a proposer, and the turn goes to the first waiter).
        let taken = {
            let mut q = queue.lock();
            let mut bytes = 0;
            let n = q
                .waiting
                .iter()
                .take_while(|(b, _)| {
                    bytes += b.size_in_bytes();
                    bytes <= MAX_ENTRY_BYTES
                })
                .count()
                .max(1);
            q.waiting.drain(..n).collect::<Vec<_>>()
        };
        let mut parts = taken.into_iter();
        let (mut joined, _) = parts.next().expect("the leader's own batch is queued");
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
        {
            let mut q = queue.lock();
            match q.waiting.first() {
                Some((_, next)) => next.post(Turn::Lead),
                None => q.proposing = false,
            }
        }
        outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
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
    fn batches_arriving_during_a_proposal_share_the_next_entry() {
        let p = Arc::new(Proposals::<String>::default());
        let entries = Arc::new(Mutex::new(Vec::new()));
        let first_sent = Arc::new((Mutex::new(false), Condvar::new()));
        let release = Arc::new((Mutex::new(false), Condvar::new()));
        let send = {
            let (entries, first_sent, release) =
                (entries.clone(), first_sent.clone(), release.clone());
            move |b: WriteBatch| {
                let first = entries.lock().is_empty();
                entries.lock().push(b.len());
                if first {
                    *first_sent.0.lock() = true;
                    first_sent.1.notify_all();
                    let mut go = release.0.lock();
                    while !*go {
                        release.1.wait(&mut go);
                    }
                }
                Ok::<(), String>(())
            }
        };
        let leader = {
            let (p, send) = (p.clone(), send.clone());
            std::thread::spawn(move || p.propose(GroupId(1), batch("k0"), send, String::new))
        };
        {
            let mut s = first_sent.0.lock();
            while !*s {
                first_sent.1.wait(&mut s);
            }
        }
        let queued = Arc::new(AtomicUsize::new(0));
        let waiters: Vec<_> = (1..=5)
            .map(|i| {
                let (p, send, queued) = (p.clone(), send.clone(), queued.clone());
                std::thread::spawn(move || {
                    queued.fetch_add(1, Ordering::SeqCst);
                    p.propose(GroupId(1), batch(&format!("k{i}")), send, String::new)
                })
            })
            .collect();
        // Wait until all five are queued behind the first proposal.
        while p.queue(GroupId(1)).lock().waiting.len() < 5 {
            std::thread::sleep(Duration::from_millis(1));
        }
        *release.0.lock() = true;
        release.1.notify_all();
        leader.join().unwrap().unwrap();
        for w in waiters {
            w.join().unwrap().unwrap();
        }
        assert_eq!(*entries.lock(), vec![1, 5], "the five waiting batches make one entry");
        assert!(!p.queue(GroupId(1)).lock().proposing);
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
