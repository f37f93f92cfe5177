//! One node of the cluster ([`ClusterNode`]): the replicas of the partitions it holds (a
//! `RaftNode`), the store they apply to, and where every node answers clients.
//!
//! As the store's [`Replicate`], it proposes a command's batch to the group of the batch's
//! slot and settles the batch's outcome once the entry is applied here (or failed); the
//! command's connection awaits it (`storage::pending`). As the server's [`Router`], it answers
//! where a slot's commands run (here when this node leads the slot's partition, or holds a
//! replica and the connection sent READONLY; else `MOVED` to the leader), and readies a
//! command that runs here ([`Router::prepare`]):
//! - **A write** runs only once this leader has applied every entry of earlier terms (one
//!   linearizable-read barrier per term), so the state it reads holds every committed write;
//!   later entries of the term are this leader's own, proposed under their key locks, whose
//!   stripes stay marked until they are applied (`storage::locks`). At that barrier the pop
//!   hints are cleared:
//!   they describe what this node saw while it last led, and the log may have changed it.
//!   Like a read, a write also needs the leader's lease to hold (else it passes the barrier
//!   again): a write that writes nothing answers from this node's state alone.
//! - **A read** on the leader waits for a linearizable-read barrier first (the leader's
//!   lease, then everything committed before it applied): it sees every write acknowledged
//!   before it started. Once this term's barrier has passed, a read whose leader lease holds
//!   needs no call into Raft ([`strata_replication::Replica::leased_term`]): every write
//!   acknowledged in the term was applied here before its reply. A READONLY read on a
//!   replica reads its applied state as it is (stale by up to the replication lag, never
//!   uncommitted).
//! - **Writes are proposed together**: the batches commands hand to one group while its
//!   previous entry is in flight make its next entry ([`super::proposals`]).
//!
//! A barrier blocks the calling thread on the Raft runtime (`Handle::block_on`); on an async
//! worker it hands the worker's other tasks off first. A proposal blocks no thread: a task on
//! the Raft runtime drives each entry ([`super::proposals`]).

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use strata::WriteBatch;
use strata_replication::{
    Error as RaftError, GroupId, GroupStatus, NodeId, RaftNode, Replica, Role,
};
use tokio::runtime::Handle;

use super::apply::encode_proposal;
use super::partitions::Partitions;
use super::proposals::{Done, Proposals};
use crate::routing::{Layout, NodeInfo, Route, Router, SlotRange};
use crate::storage::pending::{off_worker, Settlement};
use crate::storage::{Replicate, Store};

/// Redis Cluster's reply when no node is known to serve a slot's partition now.
const DOWN: &str = "CLUSTERDOWN The cluster is down";

/// One node's replicas, store and routing table.
pub struct ClusterNode {
    raft: Arc<RaftNode>,
    store: Arc<Store>,
    partitions: Partitions,
    /// Where each node serves clients (`host:port`); shared with the outcomes of proposals.
    clients: Arc<BTreeMap<NodeId, String>>,
    /// Where each node's Raft transport listens (`host:port`; empty in process).
    bus: BTreeMap<NodeId, String>,
    /// Each partition's replicas, preferred leader first: where a node that holds no replica
    /// of a partition sends its clients.
    placement: Vec<Vec<NodeId>>,
    runtime: Handle,
    /// The term in which this node, leading a group, passed the write barrier.
    ready: Mutex<HashMap<GroupId, u64>>,
    /// Longest wait for a proposal or a barrier.
    timeout: Duration,
    /// Each group's batches waiting to be proposed together.
    proposals: Proposals<RaftError>,
}

impl ClusterNode {
    /// The node whose replicas `raft` runs on `runtime`, applying to `store`; `clients` maps
    /// every node to its client address and `placement` each partition to its replicas.
    pub fn new(
        raft: Arc<RaftNode>,
        store: Arc<Store>,
        partitions: Partitions,
        clients: BTreeMap<NodeId, String>,
        placement: Vec<Vec<NodeId>>,
        runtime: Handle,
    ) -> ClusterNode {
        ClusterNode {
            raft,
            store,
            partitions,
            clients: Arc::new(clients),
            bus: BTreeMap::new(),
            placement,
            runtime,
            ready: Mutex::new(HashMap::new()),
            timeout: Duration::from_secs(5),
            proposals: Proposals::default(),
        }
    }

    /// Names where each node's Raft transport listens (CLUSTER NODES's bus ports).
    pub fn with_bus_addrs(mut self, bus: BTreeMap<NodeId, String>) -> ClusterNode {
        self.bus = bus;
        self
    }

    /// Hands the leadership of each partition this node leads, but is not the preferred
    /// leader of, back to the preferred replica once that replica is a voter whose log has
    /// caught up with this leader's: after a failover, leaders return to their placement and
    /// stay spread over the nodes. Blocks (off the async workers). Returns how many transfers
    /// were started.
    pub fn restore_preferred_leaders(&self) -> usize {
        let mut started = 0;
        for g in self.raft.groups() {
            let Some(replica) = self.raft.replica(g) else { continue };
            if replica.leadership().role != Role::Leader {
                continue;
            }
            let preferred = self.preferred_of(g).filter(|p| *p != self.raft.id());
            let Some(preferred) = preferred else { continue };
            let st = replica.status();
            let voter = st.membership.membership.voters().iter().any(|v| *v == preferred);
            let matched = st.replication.get(&preferred).copied().flatten();
            if voter && st.last_log_index.is_some() && matched == st.last_log_index {
                started += usize::from(
                    self.wait("a leadership transfer", replica.transfer_leader(preferred)).is_ok(),
                );
            }
        }
        started
    }

    /// The Raft side.
    pub fn raft(&self) -> &Arc<RaftNode> {
        &self.raft
    }

    fn group_of(&self, slot: u16) -> GroupId {
        GroupId(u32::from(self.partitions.of_slot(slot)))
    }

    /// The preferred leader of `slot`'s partition: where a node that holds no replica of it
    /// sends clients (that node redirects again if another replica leads now).
    fn preferred(&self, slot: u16) -> Option<NodeId> {
        self.preferred_of(self.group_of(slot))
    }

    /// The preferred leader of `group`'s partition: the first of its placement.
    fn preferred_of(&self, group: GroupId) -> Option<NodeId> {
        self.placement.get(group.0 as usize).and_then(|r| r.first().copied())
    }

    /// Whether this replica of `group` leads under a lease that holds now, in a term whose
    /// barrier it has passed: a command on the group may run at once
    /// ([`Router::prepare`] says why).
    fn leased_past_barrier(&self, group: GroupId, replica: &Replica) -> bool {
        replica.leased_term().is_some_and(|term| self.ready.lock().get(&group) == Some(&term))
    }

    /// `MOVED` to `node`, or the cluster-down reply when its address is unknown.
    fn moved(&self, slot: u16, node: Option<NodeId>) -> String {
        moved(&self.clients, slot, node)
    }

    /// Runs `f` on the Raft runtime and waits for it, at most the timeout. Called on an async
    /// worker of the runtime, it hands the worker's other tasks off first (`block_in_place`);
    /// elsewhere (a thread already off the workers) it just waits.
    fn wait<T>(
        &self,
        what: &str,
        f: impl Future<Output = Result<T, RaftError>>,
    ) -> Result<T, RaftError> {
        let timeout = self.timeout;
        off_worker(|| {
            self.runtime.block_on(async move {
                match tokio::time::timeout(timeout, f).await {
                    Ok(r) => r,
                    Err(_) => Err(RaftError::Timeout(what.to_string())),
                }
            })
        })
    }

    /// INFO's line for partition `g` held here: `partition<p>`, `slots=<first>-<last>,
    /// role=<role>,term=<t>,leader=<id or ?>,voters=<a|b|c>,last_index=<i>,committed=<i>,
    /// applied=<i>,lag=<n:d|..>,catching_up=<0|1>` (`lag`, on the leader only: each
    /// follower's entries behind the leader's log; `-` for an index not known; `catching_up`:
    /// the replica opened on empty storage and does not vote until it has caught up).
    fn group_line(&self, g: GroupId, st: &GroupStatus, catching_up: bool) -> (String, String) {
        let idx = |i: Option<u64>| i.map_or("-".to_string(), |i| i.to_string());
        let (first, last) = self.partitions.slots(g.0 as u16);
        let role = match st.role {
            Role::Leader => "leader",
            Role::Follower => "follower",
            Role::Candidate => "candidate",
            Role::Learner => "learner",
            Role::Shutdown => "shutdown",
        };
        let voters: Vec<String> =
            st.membership.membership.voters().iter().map(ToString::to_string).collect();
        let lag: Vec<String> = st
            .replication
            .iter()
            .filter(|(n, _)| **n != st.node)
            .map(|(n, m)| {
                let behind = st.last_log_index.map(|l| l.saturating_sub(m.unwrap_or(0)));
                format!("{n}:{}", idx(behind))
            })
            .collect();
        (
            format!("partition{}", g.0),
            format!(
                "slots={first}-{last},role={role},term={},leader={},voters={},last_index={},\
                 committed={},applied={},lag={},catching_up={}",
                st.term,
                st.leader.map_or("?".to_string(), |l| l.to_string()),
                voters.join("|"),
                idx(st.last_log_index),
                idx(st.committed.map(|c| c.index)),
                idx(st.applied.map(|a| a.index)),
                if lag.is_empty() { "-".to_string() } else { lag.join("|") },
                u8::from(catching_up),
            ),
        )
    }

    /// Each group open here with its status now, and whether it is catching up.
    fn statuses(&self) -> Vec<(GroupId, GroupStatus, bool)> {
        let groups = self.raft.groups().into_iter();
        groups
            .filter_map(|g| {
                let r = self.raft.replica(g)?;
                Some((g, r.status(), r.catching_up()))
            })
            .collect()
    }
}

/// `MOVED` to `node` (its address from `clients`), or the cluster-down reply when its address
/// is unknown.
fn moved(clients: &BTreeMap<NodeId, String>, slot: u16, node: Option<NodeId>) -> String {
    match node.and_then(|n| clients.get(&n)) {
        Some(addr) => format!("MOVED {slot} {addr}"),
        None => DOWN.to_string(),
    }
}

/// The error reply for a failed proposal on `slot`.
fn reply_for(clients: &BTreeMap<NodeId, String>, slot: u16, e: &RaftError) -> String {
    match e {
        RaftError::NotLeader { leader, .. } => moved(clients, slot, *leader),
        RaftError::Uncertain { reason, .. } => {
            format!("ERR the write's outcome is unknown (it may be applied): {reason}")
        }
        RaftError::Timeout(what) => {
            format!("ERR the write's outcome is unknown (timed out waiting for {what})")
        }
        other => format!("ERR replication: {other}"),
    }
}

impl Replicate for ClusterNode {
    fn propose(&self, slot: u16, batch: WriteBatch, done: Arc<Settlement>) {
        let Some(replica) = self.raft.replica(self.group_of(slot)) else {
            done.settle(Err(self.moved(slot, self.preferred(slot))));
            return;
        };
        let clients = self.clients.clone();
        let done: Done<RaftError> =
            Box::new(move |r| done.settle(r.map_err(|e| reply_for(&clients, slot, &e))));
        let (store, timeout, group) = (self.store.clone(), self.timeout, replica.group());
        let send = move |joined: WriteBatch| {
            let (replica, data) = (replica.clone(), encode_proposal(&store, &joined));
            async move {
                match tokio::time::timeout(timeout, replica.write(data)).await {
                    Ok(r) => r.map(|_| ()),
                    Err(_) => Err(RaftError::Timeout("the write to commit".into())),
                }
            }
        };
        let lost = || RaftError::Timeout("the write to commit: its proposer stopped".into());
        self.proposals.propose(&self.runtime, group, batch, done, send, lost);
    }
}

impl Router for ClusterNode {
    fn route(&self, slot: u16, write: bool, readonly: bool) -> Route {
        let group = self.group_of(slot);
        let leader = match self.raft.replica(group) {
            Some(replica) => {
                let now = replica.leadership();
                if now.role == Role::Leader || (readonly && !write) {
                    return Route::Local;
                }
                now.leader
            }
            None => self.preferred(slot),
        };
        match leader.and_then(|n| self.clients.get(&n)) {
            Some(addr) => Route::Moved(addr.clone()),
            None => Route::Down,
        }
    }

    fn layout(&self) -> Layout {
        let mut epoch = 0;
        let ranges = (0..self.partitions.count())
            .map(|p| {
                let (first, last) = self.partitions.slots(p);
                let replicas = self.placement.get(usize::from(p)).cloned().unwrap_or_default();
                // A partition held here: the leader its replica knows; else the preferred one
                // (a client sent there is redirected if it is not the leader now).
                let leader = match self.raft.replica(GroupId(u32::from(p))) {
                    Some(r) => {
                        let now = r.leadership();
                        epoch = epoch.max(now.term);
                        now.leader
                    }
                    None => replicas.first().copied(),
                };
                SlotRange { first, last, leader, replicas }
            })
            .collect();
        let nodes = self
            .clients
            .iter()
            .map(|(id, addr)| {
                let (host, port) = addr.rsplit_once(':').unwrap_or((addr.as_str(), "0"));
                let bus = self.bus.get(id).and_then(|b| b.rsplit(':').next()).unwrap_or("0");
                NodeInfo {
                    id: *id,
                    host: host.to_string(),
                    port: port.parse().unwrap_or(0),
                    bus_port: bus.parse().unwrap_or(0),
                }
            })
            .collect();
        Layout { myself: self.raft.id(), nodes, ranges, epoch }
    }

    /// `cluster_node_id`, `cluster_partitions`, `cluster_known_nodes`, then one line per
    /// partition held here: `partition<p>:slots=<first>-<last>,role=<role>,term=<t>,
    /// leader=<id or ?>,voters=<a|b|c>,last_index=<i>,committed=<i>,applied=<i>,lag=<n:d|..>,
    /// catching_up=<0|1>` (as `group_line` says).
    fn info(&self) -> Vec<(String, String)> {
        let mut lines = vec![
            ("cluster_node_id".to_string(), self.raft.id().to_string()),
            ("cluster_partitions".to_string(), self.partitions.count().to_string()),
            ("cluster_known_nodes".to_string(), self.clients.len().to_string()),
        ];
        lines.extend(self.statuses().iter().map(|(g, st, c)| self.group_line(*g, st, *c)));
        lines
    }

    /// `role` (`master` when this node leads a partition, else `slave`),
    /// `connected_slaves` (the nodes following a partition this node leads), `cluster_groups`,
    /// then the same line per partition held as INFO cluster's.
    fn replication_info(&self) -> Option<Vec<(String, String)>> {
        let mut leads = 0;
        let mut followers = std::collections::BTreeSet::new();
        let mut groups = Vec::new();
        for (g, st, catching_up) in self.statuses() {
            if st.role == Role::Leader {
                leads += 1;
                followers.extend(st.replication.keys().filter(|n| **n != st.node).copied());
            }
            groups.push(self.group_line(g, &st, catching_up));
        }
        let role = if leads > 0 { "master" } else { "slave" };
        let mut lines = vec![
            ("role".to_string(), role.to_string()),
            ("connected_slaves".to_string(), followers.len().to_string()),
            ("cluster_groups".to_string(), groups.len().to_string()),
        ];
        lines.extend(groups);
        Some(lines)
    }

    fn prepare(&self, slot: u16, write: bool, readonly: bool) -> Result<(), String> {
        let group = self.group_of(slot);
        let Some(replica) = self.raft.replica(group) else { return Err(DOWN.to_string()) };
        if readonly && !write {
            return Ok(());
        }
        // Every write acknowledged in this term was applied here before its reply, and the
        // barrier of this term applied the earlier terms' entries; the lease says no other
        // leader can have acknowledged one since. A write needs it too: one that turns out to
        // write nothing (DEL of a missing key, SET NX of a present one) answers from this
        // state without a proposal, so a deposed leader must not serve it.
        if self.leased_past_barrier(group, &replica) {
            return Ok(());
        }
        // Without a fresh lease, a quorum round trip confirms the leadership (read index).
        // Nothing has run yet: a failure is a definite one, which a client may retry.
        let term = replica.leadership().term;
        self.wait("a linearizable read barrier", replica.linearizable_read(false)).map_err(
            |e| match e {
                RaftError::NotLeader { leader, .. } => self.moved(slot, leader),
                other => format!("{DOWN}: {other}"),
            },
        )?;
        let mut ready = self.ready.lock();
        if ready.get(&group) != Some(&term) {
            self.store.pop_hints.clear();
            ready.insert(group, term);
        }
        Ok(())
    }
}
