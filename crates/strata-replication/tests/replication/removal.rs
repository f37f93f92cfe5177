//! A replica removed from its node (`RaftNode::remove_group`): nothing of it is written
//! after its records are deleted, though Raft's state machine task outlives the replica's
//! stop, and a replica of the group opened there again starts empty and catches up.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use strata::{Db, WriteBatch};
use strata_replication::kv::{KvApp, KvCommand};
use strata_replication::transport::mem::MemNetwork;
use strata_replication::{
    Apply, Entry, GroupId, GroupState, KeyRange, LogId, Membership, NodeStorage, OnEmpty, Payload,
    Peer, RaftNode, Replica, Role,
};
use tokio::sync::Semaphore;

use crate::harness::{settings, WAIT};

const G: GroupId = GroupId(7);

/// The key-value application, but applying a put of the key `gate` waits, inside `apply`
/// (so with the group's state machine held), until the test releases it.
struct Gated {
    /// One permit when the gated entry is being applied.
    entered: Semaphore,
    /// Met by the gated apply and the test's release.
    release: Arc<Barrier>,
    /// Whether the gated entry's batch is the next one written.
    gating: AtomicBool,
    /// One permit once the gated entry's batch was written.
    written: Semaphore,
}

impl Gated {
    fn new() -> Arc<Gated> {
        Arc::new(Gated {
            entered: Semaphore::new(0),
            release: Arc::new(Barrier::new(2)),
            gating: AtomicBool::new(false),
            written: Semaphore::new(0),
        })
    }

    async fn entered(&self) {
        tokio::time::timeout(WAIT, self.entered.acquire()).await.unwrap().unwrap().forget();
    }

    async fn release(&self) {
        let release = self.release.clone();
        tokio::task::spawn_blocking(move || release.wait()).await.unwrap();
    }

    async fn written(&self) {
        tokio::time::timeout(WAIT, self.written.acquire()).await.unwrap().unwrap().forget();
    }
}

impl Apply for Gated {
    fn apply(
        &self,
        db: &Db,
        group: GroupId,
        index: u64,
        command: &[u8],
        batch: &mut WriteBatch,
    ) -> Result<Vec<u8>, String> {
        if let Ok(KvCommand::Put { key, .. }) = KvCommand::decode(command) {
            if key == b"gate" {
                self.gating.store(true, Ordering::SeqCst);
                self.entered.add_permits(1);
                let release = self.release.clone();
                // The state machine task applies in place, on a runtime worker: hand it over.
                tokio::task::block_in_place(|| release.wait());
            }
        }
        KvApp.apply(db, group, index, command, batch)
    }

    fn ranges(&self, group: GroupId) -> Vec<KeyRange> {
        KvApp.ranges(group)
    }

    fn after_write(&self, _group: GroupId, written: bool) {
        if self.gating.swap(false, Ordering::SeqCst) {
            assert!(written);
            self.written.add_permits(1);
        }
    }
}

/// The storage of a node in `dir`.
fn storage(dir: &std::path::Path) -> Arc<NodeStorage> {
    let db = strata_replication::open_db(&strata::Options::default(), dir.join("db"), &[]);
    NodeStorage::open(Arc::new(db.unwrap()), dir.join("snapshots")).unwrap()
}

/// Node 1 on `storage` with `app`, and `G` open on it (`on_empty`).
async fn start(
    storage: Arc<NodeStorage>,
    app: Arc<dyn Apply>,
    on_empty: OnEmpty,
) -> (Arc<RaftNode>, Replica) {
    let net = MemNetwork::new();
    let node = RaftNode::new(1, storage, app, net.transport(1), settings()).unwrap();
    net.register(1, node.clone());
    let replica = node.open_group(G, on_empty).await.unwrap();
    (node, replica)
}

fn put(key: &str, value: &str) -> Vec<u8> {
    KvCommand::Put { key: key.into(), value: value.into() }.encode()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_apply_under_way_when_its_replica_is_removed_writes_nothing_after_the_removal() {
    let dir = tempfile::tempdir().unwrap();
    let app = Gated::new();
    let (node, replica) = start(storage(dir.path()), app.clone(), OnEmpty::NewGroup).await;
    replica.initialize(BTreeMap::from([(1, Peer::default())])).await.unwrap();
    replica.wait_for("lead", WAIT, |s| s.role == Role::Leader).await.unwrap();
    let (first, _) = replica.write(put("a", "1")).await.unwrap();

    let gated = tokio::spawn({
        let r = replica.clone();
        async move { r.write(put("gate", "x")).await }
    });
    app.entered().await;
    // Committed behind the gated entry: queued to the state machine task, which takes it
    // after the replica stopped.
    let queued = tokio::spawn({
        let r = replica.clone();
        async move { r.write(put("b", "2")).await }
    });
    let last = first.index + 2;
    replica
        .wait_for("commit", WAIT, move |s| s.committed.map(|c| c.index) == Some(last))
        .await
        .unwrap();

    let mut removal = tokio::spawn({
        let node = node.clone();
        async move { node.remove_group(G).await }
    });
    // The removal waits for the apply under way (it takes the state machine to fence it);
    // without the fence it is over long before this.
    let early = tokio::time::timeout(Duration::from_secs(1), &mut removal).await;
    app.release().await;
    app.written().await;
    match early {
        Ok(done) => done.unwrap().unwrap(),
        Err(_) => removal.await.unwrap().unwrap(),
    }
    let storage = node.storage();
    assert_eq!(storage.stored_groups().unwrap(), [], "the removed group's records are gone");
    assert_eq!(KvApp::scan(storage.db(), G).unwrap(), [], "and its data");
    // The writers are answered, none waits on; the entry queued behind the removal was not
    // applied here.
    let _ = tokio::time::timeout(WAIT, gated).await.unwrap().unwrap();
    let queued = tokio::time::timeout(WAIT, queued).await.unwrap().unwrap();
    assert!(queued.is_err(), "{queued:?}");
    // Given back to this node, the replica starts empty and catches up before it votes.
    let replica = node.open_group(G, OnEmpty::CatchUp).await.unwrap();
    assert!(replica.catching_up());
    assert_eq!(replica.status().applied, None);
    node.shutdown().await;
}

/// What a replica removed from this node left when it was written to after its records were
/// deleted (before the state machine was fenced): an applied id, a membership and data,
/// without a vote or log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_opened_over_what_a_removed_one_left_deletes_it_and_catches_up() {
    let dir = tempfile::tempdir().unwrap();
    let storage = storage(dir.path());
    let mut left = GroupState::open(storage.clone(), G, Arc::new(KvApp)).unwrap();
    let id = |index| LogId { term: 3, leader: 2, index };
    let membership = Membership {
        configs: vec![[1, 2, 3].into()],
        nodes: (1..=3).map(|n| (n, Peer::default())).collect(),
    };
    left.apply(&[
        Entry { log_id: id(40), payload: Payload::Membership(membership) },
        Entry { log_id: id(41), payload: Payload::Normal(put("stale", "x")) },
    ])
    .unwrap();
    drop(left);

    let (node, replica) = start(storage.clone(), Arc::new(KvApp), OnEmpty::CatchUp).await;
    assert!(replica.catching_up(), "an applied id without a log is not a replica that lived");
    assert_eq!(replica.status().applied, None);
    assert_eq!(KvApp::scan(storage.db(), G).unwrap(), [], "the leftover data is gone");
    node.shutdown().await;
}
