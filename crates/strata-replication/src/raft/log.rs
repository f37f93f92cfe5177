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
use super::{blocking, unless_stalled, TypeConfig};
use crate::error::Error;
use crate::log_store::GroupLog;
use crate::types::Entry;

type C = TypeConfig;

/// Bytes of entry values one limited read returns at most (past its first entry).
const READ_BUDGET: usize = 1 << 20;

/// A group's log as openraft sees it (also its log reader).
#[derive(Clone)]
pub struct LogStore {
    log: GroupLog,
}

impl LogStore {
    /// Wraps `log`.
    pub fn new(log: GroupLog) -> Self {
        LogStore { log }
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
        let log = self.log.clone();
        let node = self.log.node().clone();
        unless_stalled(node.db(), move || log.write_entries(&entries)).await?;
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
