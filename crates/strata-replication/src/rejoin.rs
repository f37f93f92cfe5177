//! A replica that opens on empty storage in a group that already exists: the node lost its
//! directory, or it is new to the group. It must not vote until it holds what the group
//! committed:
//!
//! - its empty log is "at least as up to date" as any candidate's, so its vote could elect a
//!   candidate that lacks entries committed with this node's own (lost) acknowledgement;
//! - it forgot its vote, so it could vote a second time in a term it voted in before.
//!
//! So it neither votes nor campaigns (the adapter refuses vote, pre-vote and leadership
//! transfer requests, and keeps the replica's elections off) until it has caught up. It
//! still accepts the log and snapshots from the leader, and its acknowledgements count: each
//! is for entries it really holds.
//!
//! **Caught up** is defined from the first append it receives from a leader (a committed
//! vote of term T, the leader's commit index C, the last index the append carries N): the
//! replica has applied an entry of term ≥ T at an index ≥ max(C, N). An append of a leader of
//! a higher term, while it catches up, moves the target to that leader's (a deposed leader
//! heard first does not end the catch-up once its successor is heard). A leader's log holds
//! every entry committed before its term, and an entry of its own term is committed only
//! after all of those; C covers what the leader had committed with this replica's lost
//! acknowledgements when it leads since before the loss.
//!
//! What an empty storage means is the caller's to say ([`OnEmpty`]): empty storage alone
//! cannot tell a new group from a lost replica. The state is a `rejoining` record in
//! `raft_meta` (`docs/format/raft_log.md`), written and synced before the replica starts and
//! removed once caught up, so a crash while catching up resumes catching up rather than
//! voting on a partial log.
//!
//! Not covered: a vote this replica gave, before losing its storage, in a term higher than
//! the first leader's it hears, to a candidate still campaigning in that term after it
//! catches up. Terms move on within an election timeout, while a lost directory comes back
//! in seconds at best.

use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;
use strata::WriteOptions;

use crate::error::{Error, Result};
use crate::log_format::{meta_key, MetaKind, VERSION};
use crate::log_store::{GroupLog, NodeStorage};
use crate::state_machine::GroupState;
use crate::types::{GroupId, LogId, Vote};

/// What a replica's empty storage means when its group is opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnEmpty {
    /// The group is being created (a new cluster's first start): the replica votes at once.
    NewGroup,
    /// The group exists: the replica lost its storage or is new to it, and catches up
    /// before it votes.
    CatchUp,
}

/// A replica's catching up after opening on empty storage in an existing group.
pub struct Rejoin {
    group: GroupId,
    active: AtomicBool,
    /// The entry the replica must apply one at or after (term, index); `None` until a
    /// leader's append has been seen.
    target: Mutex<Option<(u64, u64)>>,
}

impl Rejoin {
    /// Decides, before the replica starts, whether it catches up first: when a `rejoining`
    /// record is present (a catch-up a crash interrupted), or when its storage is empty (no
    /// vote, no log entry, no purge mark, nothing applied) and `on_empty` is
    /// [`OnEmpty::CatchUp`]. In the second case the record is written and synced here.
    pub fn open(
        node: &NodeStorage,
        log: &GroupLog,
        state: &GroupState,
        on_empty: OnEmpty,
    ) -> Result<Rejoin> {
        let group = log.group();
        let recorded = node.get_meta(group, MetaKind::Rejoining)?.is_some();
        let ends = log.state();
        let empty = log.vote().is_none()
            && ends.last.is_none()
            && ends.last_purged.is_none()
            && state.applied().0.is_none();
        let active = recorded || (empty && on_empty == OnEmpty::CatchUp);
        if active && !recorded {
            let opts = WriteOptions { sync: true, ..WriteOptions::default() };
            node.db()
                .put_cf_opt(node.meta_cf(), meta_key(group, MetaKind::Rejoining), [VERSION], &opts)
                .map_err(|e| Error::engine(format!("{group}: record that it is rejoining"), e))?;
        }
        Ok(Rejoin { group, active: AtomicBool::new(active), target: Mutex::new(None) })
    }

    /// Whether the replica is still catching up (it must not vote or campaign).
    pub fn active(&self) -> bool {
        self.active.load(Ordering::SeqCst)
    }

    /// Notes an append received while catching up: the sender's vote, its commit index and
    /// the last index the append carries. The first append of a leader (a committed vote)
    /// sets the target; a later one moves it only if its leader's term is higher.
    pub fn note_append(&self, vote: &Vote, leader_commit: Option<LogId>, last_sent: Option<u64>) {
        if !vote.committed || !self.active() {
            return;
        }
        let mut target = self.target.lock();
        if target.is_none_or(|(term, _)| vote.term > term) {
            let index = leader_commit.map(|c| c.index).max(last_sent).unwrap_or(0);
            *target = Some((vote.term, index));
        }
    }

    /// The entry the replica must apply one at or after: `(term, index)`.
    pub fn target(&self) -> Option<(u64, u64)> {
        *self.target.lock()
    }

    /// Whether `applied` completes the catch-up.
    pub fn caught_up(&self, applied: Option<LogId>) -> bool {
        match (self.target(), applied) {
            (Some((term, index)), Some(a)) => a.term >= term && a.index >= index,
            _ => false,
        }
    }

    /// Ends the catch-up: removes the record (unsynced: a removal lost in a crash only makes
    /// the replica catch up again) and lets the replica vote.
    pub fn finish(&self, node: &NodeStorage) -> Result<()> {
        let g = self.group;
        node.db()
            .delete_cf(node.meta_cf(), meta_key(g, MetaKind::Rejoining))
            .map_err(|e| Error::engine(format!("{g}: remove its rejoining record"), e))?;
        self.active.store(false, Ordering::SeqCst);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::kv::KvApp;
    use crate::log_store::tests::node_in;

    fn open(node: &Arc<NodeStorage>, on_empty: OnEmpty) -> Rejoin {
        let g = GroupId(3);
        let log = GroupLog::open(node.clone(), g).unwrap();
        let state = GroupState::open(node.clone(), g, Arc::new(KvApp)).unwrap();
        Rejoin::open(node, &log, &state, on_empty).unwrap()
    }

    fn id(term: u64, index: u64) -> LogId {
        LogId { term, leader: 1, index }
    }

    #[test]
    fn empty_storage_catches_up_only_when_the_group_exists_and_a_crash_resumes_it() {
        let dir = tempfile::tempdir().unwrap();
        let node = node_in(dir.path());
        assert!(!open(&node, OnEmpty::NewGroup).active());
        let r = open(&node, OnEmpty::CatchUp);
        assert!(r.active());
        // Reopened (a crash before catching up): still catching up, whatever the caller says.
        assert!(open(&node, OnEmpty::NewGroup).active());
        // A vote now stored does not end it either.
        let log = GroupLog::open(node.clone(), GroupId(3)).unwrap();
        log.write_vote(&Vote { term: 4, node: 1, committed: true }).unwrap();
        assert!(open(&node, OnEmpty::NewGroup).active());
        r.finish(&node).unwrap();
        assert!(!r.active());
        // Storage that is not empty never starts a catch-up.
        assert!(!open(&node, OnEmpty::CatchUp).active());
    }

    #[test]
    fn caught_up_needs_an_entry_of_the_leaders_term_at_its_commit_and_what_it_sent() {
        let dir = tempfile::tempdir().unwrap();
        let node = node_in(dir.path());
        let r = open(&node, OnEmpty::CatchUp);
        assert!(!r.caught_up(Some(id(9, 100))), "no leader heard yet");
        // A candidate's vote (not committed) sets nothing.
        r.note_append(&Vote { term: 5, node: 2, committed: false }, Some(id(4, 50)), Some(60));
        assert_eq!(r.target(), None);
        r.note_append(&Vote { term: 5, node: 2, committed: true }, Some(id(4, 50)), Some(60));
        assert_eq!(r.target(), Some((5, 60)));
        // Later appends of the same leader do not move the target; a newer leader's does.
        r.note_append(&Vote { term: 5, node: 2, committed: true }, Some(id(5, 80)), Some(85));
        assert_eq!(r.target(), Some((5, 60)));
        assert!(!r.caught_up(None));
        assert!(!r.caught_up(Some(id(4, 70))), "an entry of an older term");
        assert!(!r.caught_up(Some(id(5, 59))), "short of what the leader sent");
        assert!(r.caught_up(Some(id(5, 60))));
        assert!(r.caught_up(Some(id(6, 61))));
        r.note_append(&Vote { term: 6, node: 3, committed: true }, Some(id(6, 90)), None);
        assert_eq!(r.target(), Some((6, 90)));
        assert!(!r.caught_up(Some(id(5, 95))), "the deposed leader's entries do not do");
        assert!(r.caught_up(Some(id(6, 90))));
        // With no entry sent, the commit index is the target.
        let dir = tempfile::tempdir().unwrap();
        let node = node_in(dir.path());
        let r = open(&node, OnEmpty::CatchUp);
        r.note_append(&Vote { term: 2, node: 1, committed: true }, Some(id(2, 7)), None);
        assert_eq!(r.target(), Some((2, 7)));
    }
}
