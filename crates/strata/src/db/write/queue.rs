//! The writers' queue: who leads the next write group, and how a leader hands each member of
//! its group its part and its answer.
//!
//! Every writer waits on a slot of its own, so a leader wakes exactly the writers it has
//! something for (the next leader, a member with an insert to do, a member's result): with many
//! writers, waking them all at every group costs more CPU than the group's own work.
//!
//! Invariant: `WriteQueue::leader_active` is false only while `pending` is empty. A writer that
//! finds no active leader leads at once; a leader that gives up the leadership hands it to the
//! writer at the front of the queue, if any ([`hand_on_leadership`]).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::{Condvar, Mutex};

use crate::error::{Error, Result};
use crate::types::SeqNo;
use crate::write_batch::WriteBatch;

use super::yield_wait::YieldPolicy;

/// What a waiting writer is told to do next.
pub(crate) enum SlotState {
    /// Nothing yet.
    Waiting,
    /// Lead the next write group (the writer is at the front of the queue).
    Lead,
    /// Insert your own batch into the memtable, as part of a group whose WAL record is written.
    Insert(InsertJob),
    /// The write is finished, with this result.
    Done(Result<()>),
}

/// One writer's mailbox.
pub(crate) struct WriterSlot {
    state: Mutex<SlotState>,
    /// Something is posted and not yet taken (set and cleared under `state`'s lock), so a
    /// waiter can watch for it without the lock while it spins or yields.
    posted: AtomicBool,
    cv: Condvar,
}

thread_local! {
    /// Each thread's slot, reused by its writes (a thread has one write in flight at a time),
    /// so a write allocates no slot of its own.
    static SLOT: Arc<WriterSlot> = Arc::new(WriterSlot {
        state: Mutex::new(SlotState::Waiting),
        posted: AtomicBool::new(false),
        cv: Condvar::new(),
    });
}

impl WriterSlot {
    /// The calling thread's slot. Every write ends with its slot back at `Waiting` (it returns
    /// only after taking what was posted, and nothing is posted to a writer after its answer).
    pub(crate) fn for_this_thread() -> Arc<WriterSlot> {
        SLOT.with(Arc::clone)
    }

    /// Waits until something is posted (spinning and yielding first as `policy` allows,
    /// `yield_wait.rs`), and takes it.
    pub(crate) fn wait(&self, policy: &YieldPolicy) -> SlotState {
        policy.spin_until(|| self.posted.load(Ordering::Acquire));
        let mut s = self.state.lock();
        while matches!(*s, SlotState::Waiting) {
            self.cv.wait(&mut s);
        }
        self.posted.store(false, Ordering::Relaxed);
        std::mem::replace(&mut *s, SlotState::Waiting)
    }

    /// Posts the writer's next step and wakes it (a waiter that is not asleep costs no
    /// system call to wake).
    pub(crate) fn post(&self, next: SlotState) {
        {
            let mut s = self.state.lock();
            *s = next;
            self.posted.store(true, Ordering::Release);
        }
        self.cv.notify_one();
    }
}

/// A queued write.
pub(crate) struct PendingWrite {
    pub batch: WriteBatch,
    pub sync: bool,
    pub disable_wal: bool,
    /// `WriteOptions::no_slowdown`: grouped only with writers that also have it, so a stall
    /// fails exactly the writers that asked not to wait.
    pub no_slowdown: bool,
    pub slot: Arc<WriterSlot>,
    /// The commit of the prepared transaction named so (`two_phase.rs`): its WAL record is a
    /// commit record, so it forms a group alone.
    pub commit_xid: Option<Vec<u8>>,
}

#[derive(Default)]
pub(crate) struct WriteQueue {
    pub pending: VecDeque<PendingWrite>,
    /// A writer leads (or is being handed the leadership); see the module invariant.
    pub leader_active: bool,
}

/// A group member's own memtable insert, handed to it by the leader once the group's WAL record
/// is written (and synced, if asked).
pub(crate) struct InsertJob {
    pub batch: WriteBatch,
    pub mems: Arc<crate::db::MemSet>,
    /// Sequence number of the batch's first record.
    pub first: SeqNo,
    /// The leader waits for these inserts before publishing the group; `None` (unordered
    /// writes): the group is published already, and the member answers itself once inserted.
    pub group: Option<Arc<GroupInserts>>,
}

/// Members' inserts a leader waits for.
pub(crate) struct GroupInserts {
    /// Inserts not yet done, and the first failure.
    state: Mutex<(usize, Option<Error>)>,
    cv: Condvar,
}

impl GroupInserts {
    pub(crate) fn new(members: usize) -> Arc<GroupInserts> {
        Arc::new(GroupInserts { state: Mutex::new((members, None)), cv: Condvar::new() })
    }

    /// One member's insert finished.
    pub(crate) fn done(&self, result: Result<()>) {
        let mut s = self.state.lock();
        s.0 -= 1;
        if let Err(e) = result {
            s.1.get_or_insert(e);
        }
        if s.0 == 0 {
            self.cv.notify_one();
        }
    }

    /// Waits for every member's insert; the first failure, if any.
    pub(crate) fn wait(&self) -> Result<()> {
        let mut s = self.state.lock();
        while s.0 > 0 {
            self.cv.wait(&mut s);
        }
        match s.1.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// Gives up the caller's leadership: to the writer at the front of the queue, or, with none
/// queued, to whichever writer comes next.
pub(crate) fn hand_on_leadership(queue: &Mutex<WriteQueue>) {
    let mut q = queue.lock();
    match q.pending.front() {
        Some(next) => next.slot.post(SlotState::Lead),
        None => q.leader_active = false,
    }
}
