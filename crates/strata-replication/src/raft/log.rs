//! openraft's log storage traits on a [`GroupLog`]. Every engine call runs on the blocking
//! pool; appends complete through the node's syncer, after the fdatasync that covers them.
//! Reads of the newest entries come from the log's in-memory tail, on the caller's task.

use std::fmt::Debug;
use std::io;
use std::ops::{Bound, RangeBounds};

use openraft::storage::{IOFlushed, RaftLogReader, RaftLogStorage};
use openraft::type_config::alias::{EntryOf, LogIdOf, VoteOf};
use openraft::{LogState, OptionalSend};

use super::convert::{
    entry_in, entry_out, log_id_in, log_id_out, opt_log_id_in, vote_in, vote_out,
};
use super::{blocking, unless_stalled, PurgedRead, TypeConfig};
use crate::error::Error;
use crate::log_store::GroupLog;
use crate::types::{Entry, Payload};

type C = TypeConfig;

/// Bytes of entry values one limited read returns at most (past its first entry).
const READ_BUDGET: usize = 1 << 20;

/// A group's log as openraft sees it (also its log reader).
#[derive(Clone)]
pub struct LogStore {
    log: GroupLog,
    purged_reads: PurgedRead,
}

impl LogStore {
    /// Wraps `log`; reads that find their range purged are noted in `purged_reads`.
    pub(crate) fn new(log: GroupLog, purged_reads: PurgedRead) -> Self {
        LogStore { log, purged_reads }
    }

    async fn read(
        &self,
        start: u64,
        end: u64,
        budget: Option<usize>,
    ) -> io::Result<Vec<EntryOf<C>>> {
        let entries = match self.log.read_tail(start, end, budget) {
            Some(entries) => entries,
            None => {
                let log = self.log.clone();
                blocking(move || log.read(start, end, budget)).await?
            }
        };
        if entries.is_empty()
            && start < end
            && self.log.state().last_purged.is_some_and(|p| start <= p.index)
        {
            // Only a stale replication stream reads what the log purged (`network`).
            self.purged_reads.note(start);
        }
        entries.into_iter().map(entry_out).collect()
    }
}

fn bounds(range: &impl RangeBounds<u64>) -> (u64, u64) {
    let start = match range.start_bound() {
        Bound::Included(s) => *s,
        Bound::Excluded(s) => s.saturating_add(1),
        Bound::Unbounded => 0,
    };
    let end = match range.end_bound() {
        Bound::Included(e) => e.saturating_add(1),
        Bound::Excluded(e) => *e,
        Bound::Unbounded => u64::MAX,
    };
    (start, end)
}

impl RaftLogReader<C> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<EntryOf<C>>, io::Error> {
        let (start, end) = bounds(&range);
        self.read(start, end, None).await
    }

    async fn read_vote(&mut self) -> Result<Option<VoteOf<C>>, io::Error> {
        Ok(self.log.vote().map(|v| vote_out(&v)))
    }

    async fn limited_get_log_entries(
        &mut self,
        start: u64,
        end: u64,
    ) -> Result<Vec<EntryOf<C>>, io::Error> {
        self.read(start, end, Some(READ_BUDGET)).await
    }
}

impl RaftLogStorage<C> for LogStore {
    type LogReader = LogStore;

    async fn get_log_state(&mut self) -> Result<LogState<C>, io::Error> {
        let s = self.log.state();
        Ok(LogState {
            last_purged_log_id: s.last_purged.as_ref().map(log_id_out),
            last_log_id: s.last.as_ref().map(log_id_out),
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &VoteOf<C>) -> Result<(), io::Error> {
        let v = vote_in(vote);
        let log = self.log.clone();
        blocking(move || log.write_vote(&v)).await?;
        let node = self.log.node().clone();
        let need = node.syncs().request(node.db());
        node.syncs().wait(need).await.map_err(|e| io::Error::from(Error::Sync(e)))?;
        self.log.vote_durable(v);
        Ok(())
    }

    async fn append<I>(&mut self, entries: I, callback: IOFlushed<C>) -> Result<(), io::Error>
    where
        I: IntoIterator<Item = EntryOf<C>> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let entries: Vec<Entry> = entries.into_iter().map(entry_in).collect();
        // A membership change is synced whatever the policy: the group's shape is not among
        // the newest writes a power loss may take.
        let synced = self.log.node().appends_synced()
            || entries.iter().any(|e| matches!(e.payload, Payload::Membership(_)));
        let log = self.log.clone();
        let node = self.log.node().clone();
        unless_stalled(node.db(), move || log.write_entries(&entries)).await?;
        if !synced {
            // Written is done here: the application syncs the WAL on its own schedule.
            callback.io_completed(Ok(()));
            return Ok(());
        }
        node.syncs().request_then(node.db(), move |r| {
            callback.io_completed(r.map_err(|e| io::Error::from(Error::Sync(e))));
        });
        Ok(())
    }

    async fn truncate_after(&mut self, last_log_id: Option<LogIdOf<C>>) -> Result<(), io::Error> {
        let after = opt_log_id_in(last_log_id.as_ref());
        let log = self.log.clone();
        blocking(move || log.truncate_after(after)).await
    }

    async fn purge(&mut self, log_id: LogIdOf<C>) -> Result<(), io::Error> {
        let upto = log_id_in(&log_id);
        let log = self.log.clone();
        blocking(move || log.purge(upto)).await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
    use std::sync::Arc;

    use openraft::type_config::TypeConfigExt;

    use super::*;
    use crate::log_store::tests::node_in;
    use crate::raft::convert::entry_out;
    use crate::types::{GroupId, LogId, Membership};

    /// Appends entry `index` (a membership change if `membership`) through openraft's
    /// interface and returns once it reports the append done (openraft's "flushed": this
    /// replica's copy then counts toward a commit).
    async fn append_entry(store: &mut LogStore, index: u64, membership: bool) {
        let payload = if membership {
            let peer = crate::types::Peer { addr: String::new() };
            Payload::Membership(Membership {
                configs: vec![[1].into()],
                nodes: [(1, peer)].into_iter().collect(),
            })
        } else {
            Payload::Blank
        };
        let e = Entry { log_id: LogId { term: 1, leader: 1, index }, payload };
        let (tx, rx) = C::oneshot();
        store.append([entry_out(e).unwrap()], IOFlushed::signal(tx)).await.unwrap();
        rx.await.unwrap().unwrap();
    }

    async fn append(store: &mut LogStore, index: u64) {
        append_entry(store, index, false).await;
    }

    /// An append is done after a sync that began after it, unless the node's policy says a
    /// written entry is enough (strata-server's `appendfsync everysec`) and it changes no
    /// membership; the policy is asked at each append, so a change at run time takes effect
    /// at the next one.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_append_is_done_after_a_sync_unless_the_policy_says_written() {
        let dir = tempfile::tempdir().unwrap();
        let node = node_in(dir.path());
        let synced = Arc::new(AtomicBool::new(true));
        let s = synced.clone();
        assert!(node.sync_appends_when(move || s.load(Relaxed)));
        assert!(!node.sync_appends_when(|| true), "the policy is set once");
        let log = GroupLog::open(node.clone(), GroupId(1)).unwrap();
        let mut store = LogStore::new(log, PurgedRead::new());
        append(&mut store, 1).await;
        let after_synced = node.syncs().started();
        assert_eq!(after_synced, 1, "the synced append waited for a sync");
        synced.store(false, Relaxed);
        for i in 2..=5 {
            append(&mut store, i).await;
        }
        assert_eq!(node.syncs().started(), after_synced, "written appends asked for no sync");
        assert_eq!(store.try_get_log_entries(1..=5).await.unwrap().len(), 5);
        append_entry(&mut store, 6, true).await;
        assert_eq!(node.syncs().started(), after_synced + 1, "a membership change is synced");
        synced.store(true, Relaxed);
        append(&mut store, 7).await;
        assert_eq!(node.syncs().started(), after_synced + 2);
        node.stop();
    }

    /// A read that finds its range purged is noted (a stale replication stream's, `network`);
    /// a read that finds entries, or a range the log has not reached, is not.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_read_of_purged_entries_is_noted_for_the_stream_that_made_it() {
        let dir = tempfile::tempdir().unwrap();
        let log = GroupLog::open(node_in(dir.path()), GroupId(1)).unwrap();
        let id = |index| LogId { term: 1, leader: 1, index };
        let entries: Vec<Entry> =
            (1..=10).map(|i| Entry { log_id: id(i), payload: Payload::Normal(vec![1]) }).collect();
        log.write_entries(&entries).unwrap();
        log.purge(id(5)).unwrap();
        let purged = PurgedRead::new();
        let mut store = LogStore::new(log, purged.clone());
        assert_eq!(store.limited_get_log_entries(6, 9).await.unwrap().len(), 3);
        assert_eq!(store.limited_get_log_entries(11, 14).await.unwrap().len(), 0);
        assert!(!purged.take(11), "past the end is not purged");
        assert_eq!(store.limited_get_log_entries(2, 5).await.unwrap().len(), 0);
        assert!(purged.take(2));
    }
}
