//! Starting a node in cluster mode ([`start`]): the replication storage in the store's own
//! DB (the Raft log and metadata families beside the data), the meta group's replica (the
//! cluster map, `super::map`), a replica of each partition the map gives the node (and of
//! any partition stored here from before: it may still be a voter there), the Raft
//! transport's listener, the groups this node creates when the cluster starts for the first
//! time (with `--cluster-bootstrap yes`: the meta group on the node of lowest id, and the
//! partitions it is the preferred leader of, when their log and membership are empty: a
//! restart finds them in the log and creates nothing), and the tasks that follow the map
//! (`super::reconcile`) and hand leaderships back to their preferred replicas after
//! failovers.
//!
//! Which map: the one stored here (the meta group's applied state), else, for a new cluster
//! (`--cluster-bootstrap yes`), the one every node computes from the same settings. A node
//! with neither (joining the cluster, or back on an empty directory) holds only its meta
//! replica until the meta group's leader sends it the map. Without `--cluster-bootstrap
//! yes`, a replica on empty storage catches up with its group's leader before it votes
//! (`strata_replication::rejoin`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use strata_replication::transport::tcp::{Handshake, TcpServer, TcpTransport};
use strata_replication::{GroupId, OnEmpty, Peer, RaftNode};
use tokio::runtime::Handle;

use super::apply::ServerApply;
use super::map::{meta_voter_count, ClusterMap, MapNode, NodeState, META};
use super::node::ClusterNode;
use super::spec::ClusterSpec;
use crate::storage::{Store, SyncPolicy};
use crate::tracking::Tracking;

/// How often a node hands back the leaderships it holds in place of their preferred replicas.
const BALANCE_EVERY: Duration = Duration::from_secs(10);
/// How often a node runs a round toward the map when no new map arrives.
const RECONCILE_EVERY: Duration = Duration::from_secs(1);

/// A started node: its replicas and router, and the Raft listener (stops when dropped).
pub struct Running {
    /// The node (the store's `Replicate`, the server's `Router`).
    pub node: Arc<ClusterNode>,
    /// Its groups' state machine.
    pub apply: Arc<ServerApply>,
    _listener: TcpServer,
}

impl Running {
    /// Tells the server's client-side caching of every change the node applies, and names
    /// the writers of the entries it proposes while a client tracks with NOLOOP
    /// (`super::apply`).
    pub fn track_with(&self, tracking: Arc<Tracking>) {
        self.node.track_with(tracking.clone());
        self.apply.track_with(tracking, self.node.id());
    }

    /// Stops the replicas and the listener.
    pub async fn shutdown(self) {
        self.node.raft().shutdown().await;
    }
}

/// Starts this node of `spec` on `store` (whose directory is `dir`), on the current Tokio
/// runtime, and makes the store's writes go through it.
pub async fn start(spec: &ClusterSpec, store: Arc<Store>, dir: &Path) -> Result<Running, String> {
    let fail = |e: &dyn std::fmt::Display| format!("cluster mode: {e}");
    let storage =
        strata_replication::NodeStorage::open(store.db.clone(), dir.join("raft-snapshots"))
            .map_err(|e| fail(&e))?;
    // `appendfsync` rules the Raft log as it rules a standalone server's WAL: under `always`
    // an append counts toward a commit once synced; under `everysec` and `no` once written,
    // the WAL synced once a second (`server::tasks`) or by the OS. Read at each append, so
    // CONFIG SET appendfsync takes effect at the next one.
    let engine = store.engine().clone();
    if !storage.sync_appends_when(move || engine.sync_policy() == SyncPolicy::Always) {
        return Err(fail(&"the Raft log's sync policy was already set"));
    }
    let count = spec.partitions.count();
    let scratch = dir.join("slot-imports");
    let apply =
        Arc::new(ServerApply::new(store.clone(), spec.partitions, scratch).map_err(|e| fail(&e))?);
    let mut maps = apply.maps();
    let stored: Option<ClusterMap> = maps.borrow_and_update().as_deref().cloned();
    if let Some(m) = &stored {
        if m.partitions != count {
            return Err(format!(
                "cluster mode: the cluster map stored in {} has {} partitions; \
                 cluster-partitions says {count}",
                dir.display(),
                m.partitions
            ));
        }
    }
    // Other nodes' addresses: those named here, and every group's members' (the transport
    // learns them from the memberships Raft sends to).
    // Every node of a cluster runs one data layout (`docs/replication.md`): a node of another
    // layout is refused at the connection, said in the LOG and on stderr.
    let tag = format!(
        "strata-server data layout {:?}",
        String::from_utf8_lossy(crate::storage::LAYOUT_PARTITIONS)
    );
    let told_db = store.db.clone();
    let handshake = Handshake::new(tag, move |what: &str| {
        let line = format!(
            "cluster mode: {what} (the nodes of a cluster run one version, and talk to their \
             own cluster's nodes only)"
        );
        told_db.log_info(&line);
        eprintln!("strata-server: {line}");
    });
    // This node's cluster, from its stored map, and from each map applied from now on (a
    // node of a new cluster, or one joining, knows none until its first map arrives).
    handshake.set_cluster(stored.as_ref().map_or(0, |m| m.id));
    let transport = TcpTransport::with_handshake(handshake.clone());
    for (id, a) in &spec.nodes {
        transport.set_addr(*id, a.raft.clone());
    }
    let raft = RaftNode::new(
        spec.id,
        storage.clone(),
        apply.clone(),
        Arc::new(transport),
        spec.node_timeout.raft_settings(),
    )
    .map_err(|e| fail(&e))?;
    let on_empty = if spec.bootstrap { OnEmpty::NewGroup } else { OnEmpty::CatchUp };
    let meta = raft
        .open_group(META, on_empty)
        .await
        .map_err(|e| fail(&format!("open the meta group: {e}")))?;
    // The map to start from: the stored one, or a new cluster's.
    let initial = stored.clone().or_else(|| spec.bootstrap.then(|| spec.initial_map()));
    let mut open: BTreeSet<u16> =
        initial.as_ref().map(|m| m.held_by(spec.id)).unwrap_or_default().into_iter().collect();
    for g in storage.stored_groups().map_err(|e| fail(&e))? {
        if let Ok(p) = u16::try_from(g.0) {
            if p < count {
                open.insert(p);
            }
        }
    }
    let mut catching_up = usize::from(meta.catching_up());
    for p in &open {
        let replica = raft
            .open_group(GroupId(u32::from(*p)), on_empty)
            .await
            .map_err(|e| fail(&format!("open partition {p}: {e}")))?;
        catching_up += usize::from(replica.catching_up());
    }
    if catching_up > 0 {
        // Said on stderr too: a new cluster started without the setting waits for leaders
        // that never come, and this is the line that says why.
        let note = format!(
            "cluster mode: {catching_up} of this node's {} groups are on empty storage \
             without cluster-bootstrap yes: they catch up from their leaders before they vote \
             (a new cluster's first start needs cluster-bootstrap yes on every node; a node \
             joining a cluster gets its replicas once the map gives it some)",
            open.len() + 1
        );
        store.db.log_info(&note);
        eprintln!("strata-server: {note}");
    }
    let me = &spec.nodes[&spec.id];
    let listener = TcpServer::bind_with(&me.raft, raft.clone(), handshake.clone())
        .await
        .map_err(|e| format!("cluster mode: cannot listen on {} for Raft: {e}", me.raft))?;
    // A new cluster (`--cluster-bootstrap yes`, no map stored yet): its map from the settings.
    let new_cluster = if stored.is_none() { initial.as_ref() } else { None };
    if let Some(map) = new_cluster {
        // The meta group: created by the node of lowest id, its first voters the first nodes.
        if spec.nodes.keys().next() == Some(&spec.id) {
            let voters = spec.nodes.iter().take(meta_voter_count(spec.nodes.len()));
            let members = voters.map(|(n, a)| (*n, Peer { addr: a.raft.clone() })).collect();
            initialize(&raft, META, members).await?;
        }
        // The partitions this node is the preferred leader of.
        for (p, replicas) in map.placement.iter().enumerate() {
            if replicas.first() != Some(&spec.id) {
                continue;
            }
            let members =
                replicas.iter().map(|n| (*n, Peer { addr: spec.nodes[n].raft.clone() })).collect();
            initialize(&raft, GroupId(p as u32), members).await?;
        }
    }
    let node = Arc::new(ClusterNode::with_map(
        raft,
        store.clone(),
        spec.partitions,
        initial.unwrap_or_else(|| alone(spec)),
        Handle::current(),
        apply.ownership(),
    ));
    store.set_replicate(node.clone());
    // Each map the meta group applies, then a round toward it; a round every second anyway
    // (the tasks end with the runtime).
    let wake = Arc::new(tokio::sync::Notify::new());
    let (watched, woken, identity) = (node.clone(), wake.clone(), handshake.clone());
    tokio::spawn(async move {
        while maps.changed().await.is_ok() {
            let m = maps.borrow_and_update().clone();
            if let Some(m) = m {
                // Never another once set: the map's apply keeps it (`map::apply_change`).
                identity.set_cluster(m.id);
                watched.set_map(m);
                woken.notify_one();
            }
        }
    });
    let rounds = node.clone();
    tokio::spawn(async move {
        loop {
            let _ = tokio::time::timeout(RECONCILE_EVERY, wake.notified()).await;
            let n = rounds.clone();
            // A round that panicked is noted and the next one runs (nothing waits on a round).
            if let Err(e) = tokio::task::spawn_blocking(move || n.reconcile()).await {
                rounds.store().db.log_info(&format!("cluster map: a round failed: {e}"));
            }
        }
    });
    // Leaders go back to their preferred replicas after failovers.
    let balancer = node.clone();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(BALANCE_EVERY);
        tick.tick().await;
        loop {
            tick.tick().await;
            let n = balancer.clone();
            let _ = tokio::task::spawn_blocking(move || n.restore_preferred_leaders()).await;
        }
    });
    Ok(Running { node, apply, _listener: listener })
}

/// Creates `group` on this node with `members` as its voters, unless its replica is in a
/// group already.
async fn initialize(
    raft: &RaftNode,
    group: GroupId,
    members: BTreeMap<u64, Peer>,
) -> Result<(), String> {
    let Some(replica) = raft.replica(group) else { return Ok(()) };
    let st = replica.status();
    if st.last_log_index.is_some() || !st.membership.membership.voters().is_empty() {
        return Ok(());
    }
    // The metrics just after opening may not show the log yet: openraft's own refusal
    // (the replica has entries or a vote) means the group exists.
    match replica.initialize(members).await {
        Ok(()) | Err(strata_replication::Error::AlreadyInitialized { .. }) => Ok(()),
        Err(e) => Err(format!("cluster mode: create {group}: {e}")),
    }
}

/// The map of a node that has none yet: itself alone, holding nothing (every slot answers
/// CLUSTERDOWN until the meta group sends the cluster's map).
fn alone(spec: &ClusterSpec) -> ClusterMap {
    let me = MapNode { addrs: spec.nodes[&spec.id].clone(), state: NodeState::Active };
    ClusterMap {
        version: 0,
        partitions: spec.partitions.count(),
        replicas: 0,
        nodes: [(spec.id, me)].into(),
        placement: vec![Vec::new(); usize::from(spec.partitions.count())],
        moved: std::collections::BTreeMap::new(),
        id: 0,
    }
}
