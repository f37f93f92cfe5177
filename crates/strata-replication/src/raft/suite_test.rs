//! openraft's own storage test suite on the Strata-backed log and state machine: every
//! store it builds is a fresh node storage (its own `Db` in a temporary directory) with one
//! group of the key-value application.

use std::sync::Arc;

use openraft::testing::log::{StoreBuilder, Suite};
use openraft::type_config::TypeConfigExt;
use openraft::StorageError;

use super::log::LogStore;
use super::sm::StateMachine;
use super::TypeConfig;
use crate::kv::KvApp;
use crate::log_store::{GroupLog, NodeStorage};
use crate::state_machine::GroupState;
use crate::types::GroupId;

struct Builder;

/// Keeps the store's directory (and its node storage) alive while a test uses the store.
struct Guard {
    node: Arc<NodeStorage>,
    _dir: tempfile::TempDir,
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.node.stop();
    }
}

impl StoreBuilder<TypeConfig, LogStore, StateMachine, Guard> for Builder {
    async fn build(&self) -> Result<(Guard, LogStore, StateMachine), StorageError<TypeConfig>> {
        let dir =
            tempfile::tempdir().map_err(|e| StorageError::read(TypeConfig::err_from_error(&e)))?;
        let open = || -> crate::error::Result<_> {
            let db = Arc::new(crate::log_store::open_db(
                &strata::Options::default(),
                dir.path().join("db"),
                &[],
            )?);
            let node = NodeStorage::open(db, dir.path().join("snapshots"))?;
            // Group 5, so that a key range or log key mistaken for another group's shows.
            let log = GroupLog::open(node.clone(), GroupId(5))?;
            let state = GroupState::open(node.clone(), GroupId(5), Arc::new(KvApp))?;
            Ok((node, log, state))
        };
        let (node, log, state) =
            open().map_err(|e| StorageError::read(TypeConfig::err_from_error(&e)))?;
        Ok((
            Guard { node, _dir: dir },
            LogStore::new(log, super::PurgedRead::new()),
            StateMachine::new(state),
        ))
    }
}

#[test]
fn openraft_storage_suite_passes_on_strata() {
    let rt =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        Suite::test_all(Builder).await.unwrap();
    });
}
