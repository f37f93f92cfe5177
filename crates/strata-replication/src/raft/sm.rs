//! openraft's state machine traits on a [`GroupState`]. Applying, building and installing run
//! on the blocking pool; the state's lock is only taken there or for a field read.

use std::io;
use std::sync::{Arc, Weak};

use futures_util::{Stream, StreamExt};
use openraft::storage::{EntryResponder, RaftSnapshotBuilder, RaftStateMachine};
use openraft::type_config::alias::{LogIdOf, SnapshotMetaOf, SnapshotOf, StoredMembershipOf};
use openraft::OptionalSend;
use parking_lot::Mutex;

use super::convert::{
    entry_in, log_id_out, snapshot_meta_in, snapshot_meta_out, stored_membership_out,
};
use super::{blocking, unless_stalled, TypeConfig};
use crate::snapshot::build::SnapshotSource;
use crate::snapshot::SnapshotData;
use crate::state_machine::GroupState;

type C = TypeConfig;

/// Entries applied per blocking call (bounds the memory a long replay holds).
const APPLY_CHUNK: usize = 256;

/// A group's state machine as openraft sees it.
pub struct StateMachine {
    state: Arc<Mutex<GroupState>>,
    /// The engine the state is applied to.
    db: Arc<strata::Db>,
}

impl StateMachine {
    /// Wraps `state`.
    pub fn new(state: GroupState) -> Self {
        let db = state.db().clone();
        StateMachine { state: Arc::new(Mutex::new(state)), db }
    }

    /// The state, for the replica's removal to fence it (`GroupState::fence`); weak, so that
    /// a handle kept after the state machine is gone does not keep the state (and the
    /// node's `Db`) open.
    pub(crate) fn state(&self) -> Weak<Mutex<GroupState>> {
        Arc::downgrade(&self.state)
    }
}

/// Builds one snapshot from the engine snapshot taken when it was made.
pub struct SnapshotBuilder {
    source: Option<SnapshotSource>,
    state: Arc<Mutex<GroupState>>,
}

impl RaftSnapshotBuilder<C> for SnapshotBuilder {
    type SnapshotData = SnapshotData;

    async fn build_snapshot(&mut self) -> Result<SnapshotOf<C, SnapshotData>, io::Error> {
        let source = self
            .source
            .take()
            .ok_or_else(|| io::Error::other("a snapshot builder was used twice"))?;
        let state = self.state.clone();
        let (meta, data) = blocking(move || {
            let (meta, data) = source.build()?;
            state.lock().set_current_snapshot(meta.clone(), data.clone());
            Ok((meta, data))
        })
        .await?;
        Ok(openraft::Snapshot { meta: snapshot_meta_out(&meta)?, snapshot: data })
    }
}

impl RaftStateMachine<C> for StateMachine {
    type SnapshotData = SnapshotData;
    type SnapshotBuilder = SnapshotBuilder;

    async fn applied_state(
        &mut self,
    ) -> Result<(Option<LogIdOf<C>>, StoredMembershipOf<C>), io::Error> {
        let (applied, membership) = self.state.lock().applied();
        Ok((applied.as_ref().map(log_id_out), stored_membership_out(&membership)?))
    }

    async fn apply<Strm>(&mut self, mut entries: Strm) -> Result<(), io::Error>
    where
        Strm: Stream<Item = Result<EntryResponder<C>, io::Error>> + Unpin + OptionalSend,
    {
        loop {
            let mut batch = Vec::new();
            let mut responders = Vec::new();
            while batch.len() < APPLY_CHUNK {
                let Some(item) = entries.next().await else { break };
                let (entry, responder) = item?;
                batch.push(entry_in(entry));
                responders.push(responder);
            }
            if batch.is_empty() {
                return Ok(());
            }
            let state = self.state.clone();
            let db = self.db.clone();
            let replies = unless_stalled(&db, move || state.lock().apply(&batch)).await?;
            for (reply, responder) in replies.into_iter().zip(responders) {
                if let Some(r) = responder {
                    r.send(reply);
                }
            }
        }
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        let source = self.state.lock().snapshot_source();
        SnapshotBuilder { source: Some(source), state: self.state.clone() }
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMetaOf<C>,
        snapshot: SnapshotData,
    ) -> Result<(), io::Error> {
        let meta = snapshot_meta_in(meta);
        let state = self.state.clone();
        blocking(move || state.lock().install(&meta, snapshot).map(|_| ())).await
    }

    async fn get_current_snapshot(
        &mut self,
    ) -> Result<Option<SnapshotOf<C, SnapshotData>>, io::Error> {
        let current = self.state.lock().current_snapshot();
        match current {
            None => Ok(None),
            Some((meta, files)) => {
                Ok(Some(openraft::Snapshot { meta: snapshot_meta_out(&meta)?, snapshot: files }))
            }
        }
    }
}
