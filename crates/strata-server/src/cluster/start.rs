//! Starting a node in cluster mode ([`start`]): the replication storage in the store's own
//! DB (the Raft log and metadata families beside the data), a replica of each partition the
//! node holds, the Raft transport's listener, and the groups this node creates when the
//! cluster starts for the first time (with `--cluster-bootstrap yes`, those it is the
//! preferred leader of, when their log and membership are empty: a restart finds them in the
//! log and creates nothing), and the task that hands leaderships back to their preferred
//! replicas after failovers. Without `--cluster-bootstrap yes`, a replica on empty storage
//! catches up with its group's leader before it votes (`strata_replication::rejoin`).

use std::path::Path;
use std::sync::Arc;

use strata_replication::transport::tcp::{TcpServer, TcpTransport};
use strata_replication::{GroupId, OnEmpty, Peer, RaftNode, RaftSettings};
use tokio::runtime::Handle;

use super::apply::ServerApply;
use super::node::ClusterNode;
use super::spec::ClusterSpec;
use crate::storage::Store;

/// How often a node hands back the leaderships it holds in place of their preferred replicas.
const BALANCE_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

/// A started node: its replicas and router, and the Raft listener (stops when dropped).
pub struct Running {
    /// The node (the store's `Replicate`, the server's `Router`).
    pub node: Arc<ClusterNode>,
    _listener: TcpServer,
}

impl Running {
    /// Stops the replicas and the listener.
    pub async fn shutdown(self) {
        self.node.raft().shutdown().await;
    }
}

/// Starts this node of `spec` on `store` (whose directory is `dir`), on the current Tokio
/// runtime, and makes the store's writes go through it.
pub async fn start(spec: &ClusterSpec, store: Arc<Store>, dir: &Path) -> Result<Running, String> {
    let storage =
        strata_replication::NodeStorage::open(store.db.clone(), dir.join("raft-snapshots"))
            .map_err(|e| format!("cluster mode: {e}"))?;
    let transport = TcpTransport::new();
    for (id, a) in &spec.nodes {
        transport.set_addr(*id, a.raft.clone());
    }
    let apply = ServerApply::new(store.clone(), spec.partitions);
    let raft = RaftNode::new(
        spec.id,
        storage,
        Arc::new(apply),
        Arc::new(transport),
        RaftSettings::default(),
    )
    .map_err(|e| format!("cluster mode: {e}"))?;
    let on_empty = if spec.bootstrap { OnEmpty::NewGroup } else { OnEmpty::CatchUp };
    let mut catching_up = 0;
    for p in spec.mine() {
        let replica = raft
            .open_group(GroupId(u32::from(p)), on_empty)
            .await
            .map_err(|e| format!("cluster mode: open partition {p}: {e}"))?;
        catching_up += usize::from(replica.catching_up());
    }
    if catching_up > 0 {
        // Said on stderr too: a new cluster started without the setting waits for leaders
        // that never come, and this is the line that says why.
        let note = format!(
            "cluster mode: {catching_up} of this node's {} partitions are on empty storage \
             without cluster-bootstrap yes: they catch up from their leaders before they vote \
             (a new cluster's first start needs cluster-bootstrap yes on every node)",
            spec.mine().len()
        );
        store.db.log_info(&note);
        eprintln!("strata-server: {note}");
    }
    let me = &spec.nodes[&spec.id];
    let listener = TcpServer::bind(&me.raft, raft.clone())
        .await
        .map_err(|e| format!("cluster mode: cannot listen on {} for Raft: {e}", me.raft))?;
    for p in spec.mine() {
        let replicas = &spec.placement[usize::from(p)];
        if !spec.bootstrap || replicas.first() != Some(&spec.id) {
            continue;
        }
        let Some(replica) = raft.replica(GroupId(u32::from(p))) else { continue };
        let st = replica.status();
        if st.last_log_index.is_some() || !st.membership.membership.voters().is_empty() {
            continue;
        }
        let members =
            replicas.iter().map(|n| (*n, Peer { addr: spec.nodes[n].raft.clone() })).collect();
        // The metrics just after opening may not show the log yet: openraft's own refusal
        // (the replica has entries or a vote) means the group exists.
        match replica.initialize(members).await {
            Ok(()) | Err(strata_replication::Error::AlreadyInitialized { .. }) => {}
            Err(e) => return Err(format!("cluster mode: create partition {p}'s group: {e}")),
        }
    }
    let clients = spec.nodes.iter().map(|(id, a)| (*id, a.client.clone())).collect();
    let bus = spec.nodes.iter().map(|(id, a)| (*id, a.raft.clone())).collect();
    let node = Arc::new(
        ClusterNode::new(
            raft,
            store.clone(),
            spec.partitions,
            clients,
            spec.placement.clone(),
            Handle::current(),
        )
        .with_bus_addrs(bus),
    );
    store.set_replicate(node.clone());
    // Leaders go back to their preferred replicas after failovers (checked every few seconds;
    // the task ends with the runtime).
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
    Ok(Running { node, _listener: listener })
}
