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
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use parking_lot::{Mutex, RwLock};
use strata::WriteBatch;
use strata_replication::{
    Error as RaftError, GroupId, GroupStatus, NodeId, RaftNode, Replica, Role,
};
use tokio::runtime::Handle;

use super::apply::encode_proposal;
use super::map::{ClusterMap, MapNode, NodeState, META};
use super::moves::Gates;
use super::ownership::{Ownership, State};
use super::partitions::Partitions;
use super::proposals::{Done, Proposals, Writers};
use super::spec::NodeAddrs;
use crate::routing::{Admission, Layout, NodeInfo, Route, Router, SlotRange};
use crate::storage::pending::{self, off_worker, Settlement};
use crate::storage::{Replicate, Store};
use crate::tracking::Tracking;

/// Redis Cluster's reply when no node is known to serve a slot's partition now.
const DOWN: &str = "CLUSTERDOWN The cluster is down";

/// How long a node that finds its group without a known leader waits for one before it
/// answers, at least: longer than an election takes, so a leadership moving answers with a
/// redirect ([`leader_wait`]).
const LEADER_WAIT: Duration = Duration::from_secs(3);

/// How long to wait for `replica`'s group to have a leader: [`LEADER_WAIT`], or three of the
/// group's election timeouts when that is longer (`cluster-node-timeout`).
fn leader_wait(replica: &Replica) -> Duration {
    LEADER_WAIT.max(replica.election_timeout() * 3)
}

/// The leader of `replica`'s group once one is known, waiting up to [`leader_wait`].
async fn known_leader(replica: &Replica) -> Option<NodeId> {
    let known = |s: &GroupStatus| s.leader.is_some() || s.role == Role::Shutdown;
    let wait = leader_wait(replica);
    replica.wait_for("a leader", wait, known).await.ok().and_then(|s| s.leader)
}

/// Where to send a client after this replica refused a command as not the leader (`hint`:
/// the leader Raft named): once this replica has stepped down and knows the next leader,
/// that one, waiting up to [`leader_wait`]. A leader handing over its leadership refuses
/// commands before its successor is elected, and the successor still names the old leader
/// until it is: redirecting at once would send clients back and forth between the two.
async fn next_leader(replica: &Replica, hint: Option<NodeId>) -> Option<NodeId> {
    let moved_on = |s: &GroupStatus| {
        (s.role != Role::Leader && s.role != Role::Candidate && s.leader.is_some())
            || s.role == Role::Shutdown
    };
    match replica.wait_for("the next leader", leader_wait(replica), moved_on).await {
        Ok(s) => s.leader.or(hint),
        Err(_) => hint,
    }
}

/// The map a node works from, and each node's client address (`host:port`, shared with
/// the outcomes of proposals).
struct View {
    /// The map: nodes, and each partition's replicas, preferred leader first (where a node
    /// that holds no replica of a partition sends its clients).
    map: Arc<ClusterMap>,
    /// Each node's client address.
    clients: Arc<BTreeMap<NodeId, String>>,
    /// The map's slot table in runs (`ClusterMap::slot_table`), made once per map: every
    /// CLUSTER SLOTS and keyspace walk reads it.
    slot_table: Arc<Vec<(u16, u16, u16)>>,
}

impl View {
    fn of(map: Arc<ClusterMap>) -> View {
        let clients = map.nodes.iter().map(|(id, n)| (*id, n.addrs.client.clone())).collect();
        let slot_table = Arc::new(map.slot_table());
        View { map, clients: Arc::new(clients), slot_table }
    }
}

/// One node's replicas, store and routing table.
pub struct ClusterNode {
    raft: Arc<RaftNode>,
    store: Arc<Store>,
    partitions: Partitions,
    /// The cluster map this node works from (`super::map`), with each node's client address.
    view: RwLock<View>,
    runtime: Handle,
    /// The term in which this node, leading a group, passed the write barrier.
    ready: Mutex<HashMap<GroupId, u64>>,
    /// Longest wait for a proposal or a barrier.
    timeout: Duration,
    /// Each group's batches waiting to be proposed together.
    pub(super) proposals: Proposals<Proposed>,
    /// The partitions' slot states as applied here (shared with the state machine).
    pub(super) ownership: Arc<Ownership>,
    /// The writes under way per slot, and the slots being frozen (`super::moves`).
    pub(super) gates: Arc<Gates>,
    /// The server's client-side caching: while a client tracks with NOLOOP, the entries
    /// proposed here name each batch's writer (`super::apply`).
    tracking: OnceLock<Arc<Tracking>>,
}

/// Why a proposal failed: Raft's error, or the entry was applied as a refusal (a write to a
/// slot its partition no longer takes: the reply, `TRYAGAIN ...`).
#[derive(Debug)]
pub enum Proposed {
    /// Raft's error.
    Raft(RaftError),
    /// The entry's reply, an error reply: nothing was written.
    Refused(String),
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
        ownership: Arc<Ownership>,
    ) -> ClusterNode {
        let nodes = clients
            .into_iter()
            .map(|(id, client)| {
                let addrs = NodeAddrs { client, raft: String::new() };
                (id, MapNode { addrs, state: NodeState::Active })
            })
            .collect();
        let replicas = placement.iter().map(Vec::len).max().unwrap_or(0) as u8;
        let map = ClusterMap {
            version: 0,
            partitions: partitions.count(),
            replicas,
            nodes,
            placement,
            moved: std::collections::BTreeMap::new(),
            id: 0,
        };
        ClusterNode::with_map(raft, store, partitions, map, runtime, ownership)
    }

    /// The node whose replicas `raft` runs on `runtime`, applying to `store`, working from
    /// `map` until a newer one is set ([`ClusterNode::set_map`]).
    pub fn with_map(
        raft: Arc<RaftNode>,
        store: Arc<Store>,
        partitions: Partitions,
        map: ClusterMap,
        runtime: Handle,
        ownership: Arc<Ownership>,
    ) -> ClusterNode {
        ClusterNode {
            raft,
            store,
            partitions,
            view: RwLock::new(View::of(Arc::new(map))),
            runtime,
            ready: Mutex::new(HashMap::new()),
            timeout: Duration::from_secs(5),
            proposals: Proposals::default(),
            ownership,
            gates: Arc::new(Gates::default()),
            tracking: OnceLock::new(),
        }
    }

    /// This node's id.
    pub fn id(&self) -> NodeId {
        self.raft.id()
    }

    /// Names the writers of the entries proposed here while a client of `tracking` has
    /// NOLOOP (`super::apply`). Set once; a second call changes nothing.
    pub fn track_with(&self, tracking: Arc<Tracking>) {
        let _ = self.tracking.set(tracking);
    }

    /// Works from `map` from now on (a newer map than the one it has; an older one is
    /// ignored, since maps are applied in order). Returns whether it was taken.
    pub fn set_map(&self, map: Arc<ClusterMap>) -> bool {
        let mut v = self.view.write();
        if map.version < v.map.version || map.partitions != self.partitions.count() {
            return false;
        }
        *v = View::of(map);
        true
    }

    /// The map this node works from now.
    pub fn map(&self) -> Arc<ClusterMap> {
        self.view.read().map.clone()
    }

    /// The store it applies to.
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// The runtime its replicas run on.
    pub fn runtime(&self) -> &Handle {
        &self.runtime
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
        GroupId(u32::from(self.serving_partition(slot)))
    }

    /// The partition whose view serves `slot` here: a partition held here that adopted it in
    /// a move (it serves the slot before the map says so), else the map's.
    pub(super) fn serving_partition(&self, slot: u16) -> u16 {
        if self.ownership.any() {
            let held = |p: u16, st: State| {
                matches!(st, State::Adopted(_))
                    && self.raft.replica(GroupId(u32::from(p))).is_some()
            };
            if let Some(p) = self.ownership.find(slot, held) {
                return p;
            }
        }
        self.view.read().map.partition_of(slot)
    }

    /// The client address of the node that serves partition `p` as this node knows it: the
    /// leader its replica knows, else the preferred one.
    pub(super) fn leader_addr(&self, p: u16) -> Option<String> {
        let group = GroupId(u32::from(p));
        let leader = match self.raft.replica(group) {
            Some(r) => r.leadership().leader,
            None => self.preferred_of(group),
        };
        leader.and_then(|n| self.view.read().clients.get(&n).cloned())
    }

    /// The preferred leader of `slot`'s partition: where a node that holds no replica of it
    /// sends clients (that node redirects again if another replica leads now).
    fn preferred(&self, slot: u16) -> Option<NodeId> {
        self.preferred_of(self.group_of(slot))
    }

    /// The preferred leader of `group`'s partition: the first of its placement.
    fn preferred_of(&self, group: GroupId) -> Option<NodeId> {
        self.view.read().map.placement.get(group.0 as usize).and_then(|r| r.first().copied())
    }

    /// Whether this replica of `group` leads under a lease that holds now, in a term whose
    /// barrier it has passed: a command on the group may run at once
    /// ([`Router::prepare`] says why).
    fn leased_past_barrier(&self, group: GroupId, replica: &Replica) -> bool {
        replica.leased_term().is_some_and(|term| self.ready.lock().get(&group) == Some(&term))
    }

    /// `MOVED` to `node`, or the cluster-down reply when its address is unknown.
    fn moved(&self, slot: u16, node: Option<NodeId>) -> String {
        moved(&self.view.read().clients, slot, node)
    }

    /// Runs `f` on the Raft runtime and waits for it, at most the timeout. Called on an async
    /// worker of the runtime, it hands the worker's other tasks off first (`block_in_place`);
    /// elsewhere (a thread already off the workers) it just waits.
    pub(super) fn wait<T>(
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

    /// INFO's line for partition `g` held here: `partition<p>`, `slots=<first>-<last>[|<first>-<last>...],
    /// role=<role>,term=<t>,leader=<id or ?>,voters=<a|b|c>,last_index=<i>,committed=<i>,
    /// applied=<i>,lag=<n:d|..>,catching_up=<0|1>,moving=<slot:state:peer|..>` (`lag`, on
    /// the leader only: each follower's entries behind the leader's log; `-` for an index not
    /// known; `catching_up`: the replica opened on empty storage and does not vote until it
    /// has caught up; `moving`: the partition's slots in the middle of a move, `importing`,
    /// `copying`, `frozen` or `handed-off`, with the other partition; `-` for none).
    fn group_line(&self, g: GroupId, st: &GroupStatus, catching_up: bool) -> (String, String) {
        let idx = |i: Option<u64>| i.map_or("-".to_string(), |i| i.to_string());
        let runs = self.map().slot_runs_of(g.0 as u16);
        let slots: Vec<String> = runs.iter().map(|(f, l)| format!("{f}-{l}")).collect();
        let slots = if slots.is_empty() { "none".to_string() } else { slots.join("|") };
        let role = role_name(st.role);
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
        let moving: Vec<String> = self
            .ownership
            .of_partitions(&[g.0 as u16])
            .into_iter()
            .filter_map(|(_, slot, state)| {
                let word = match state {
                    State::Importing(_) => "importing",
                    State::Copying(_) => "copying",
                    State::Frozen(_) => "frozen",
                    State::HandedOff(_) => "handed-off",
                    State::Adopted(_) | State::Released(_) => return None,
                };
                Some(format!("{slot}:{word}:{}", state.peer()))
            })
            .collect();
        (
            format!("partition{}", g.0),
            format!(
                "slots={slots},role={role},term={},leader={},voters={},last_index={},\
                 committed={},applied={},lag={},catching_up={},moving={}",
                st.term,
                st.leader.map_or("?".to_string(), |l| l.to_string()),
                voters.join("|"),
                idx(st.last_log_index),
                idx(st.committed.map(|c| c.index)),
                idx(st.applied.map(|a| a.index)),
                if lag.is_empty() { "-".to_string() } else { lag.join("|") },
                u8::from(catching_up),
                if moving.is_empty() { "-".to_string() } else { moving.join("|") },
            ),
        )
    }

    /// Each group open here with its status now, and whether it is catching up.
    fn statuses(&self) -> Vec<(GroupId, GroupStatus, bool)> {
        let groups = self.raft.groups().into_iter().filter(|g| *g != META);
        groups
            .filter_map(|g| {
                let r = self.raft.replica(g)?;
                Some((g, r.status(), r.catching_up()))
            })
            .collect()
    }
}

/// A role as INFO names it.
fn role_name(role: Role) -> &'static str {
    match role {
        Role::Leader => "leader",
        Role::Follower => "follower",
        Role::Candidate => "candidate",
        Role::Learner => "learner",
        Role::Shutdown => "shutdown",
    }
}

/// Settles a refused write with its redirect when dropped: the redirect to the next leader
/// ([`next_leader`]) once a task has found it, else to the leader Raft named, so a task the
/// runtime drops unrun (it is shutting down) or that panics never leaves its writer waiting.
struct Redirect {
    done: Arc<Settlement>,
    reply: String,
}

impl Redirect {
    /// Settles with `reply` (now, as `self` is dropped).
    fn to(mut self, reply: String) {
        self.reply = reply;
    }
}

impl Drop for Redirect {
    fn drop(&mut self) {
        self.done.settle(Err(std::mem::take(&mut self.reply)));
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
fn reply_for(clients: &BTreeMap<NodeId, String>, slot: u16, e: &Proposed) -> String {
    let e = match e {
        Proposed::Refused(reply) => return reply.clone(),
        Proposed::Raft(e) => e,
    };
    match e {
        RaftError::NotLeader { leader, .. } => moved(clients, slot, *leader),
        RaftError::Uncertain { reason, .. } => {
            format!("ERR the write's outcome is unknown (it may be applied): {reason}")
        }
        RaftError::Timeout(what) => {
            format!("ERR the write's outcome is unknown (timed out waiting for {what})")
        }
        RaftError::TooLarge { bytes, .. } => format!(
            "ERR the write is {bytes} bytes as a replicated entry, over the {} bytes one entry \
             may carry in cluster mode; nothing was written",
            strata_replication::MAX_COMMAND_BYTES
        ),
        other => format!("ERR replication: {other}"),
    }
}

impl Replicate for ClusterNode {
    fn propose(&self, partition: u16, slot: u16, batch: WriteBatch, done: Arc<Settlement>) {
        if partition >= self.partitions.count() {
            // A key filed under no partition (`crate::filing::NOWHERE`): a write made outside
            // any partition's command, which no group may take.
            done.settle(Err(format!(
                "ERR a write to slot {slot} was filed under no partition ({partition}); \
                 nothing was written"
            )));
            return;
        }
        let group = GroupId(u32::from(partition));
        let Some(replica) = self.raft.replica(group) else {
            done.settle(Err(self.moved(slot, self.preferred_of(group))));
            return;
        };
        let clients = self.view.read().clients.clone();
        let (waiter, runtime) = (replica.clone(), self.runtime.clone());
        let done: Done<Proposed> = Box::new(move |r| match r {
            // Nothing was proposed, and the group is between leaders: redirect to the next
            // one once it is known.
            Err(e) if matches!(*e, Proposed::Raft(RaftError::NotLeader { .. })) => {
                let hint = match *e {
                    Proposed::Raft(RaftError::NotLeader { leader, .. }) => leader,
                    _ => None,
                };
                let redirect = Redirect { done, reply: moved(&clients, slot, hint) };
                runtime.spawn(async move {
                    let leader = next_leader(&waiter, hint).await;
                    redirect.to(moved(&clients, slot, leader));
                });
            }
            r => done.settle(r.map_err(|e| reply_for(&clients, slot, &e))),
        });
        let (store, timeout, group) = (self.store.clone(), self.timeout, replica.group());
        // The writer matters only to a NOLOOP client of this node (`super::apply`).
        let writer =
            pending::writer().filter(|_| self.tracking.get().is_some_and(|t| t.any_noloop()));
        let me = self.raft.id();
        let send = move |joined: WriteBatch, writers: Writers| {
            let named = writers.iter().any(|(w, _)| w.is_some()).then_some((me, &writers));
            let (replica, data) = (replica.clone(), encode_proposal(&store, &joined, named));
            async move {
                match tokio::time::timeout(timeout, replica.write(data)).await {
                    // An error reply: the entry was applied as a refusal, writing nothing.
                    Ok(Ok((_, reply))) if reply.0.first() == Some(&b'-') => {
                        Err(Proposed::Refused(String::from_utf8_lossy(&reply.0[1..]).into()))
                    }
                    Ok(r) => r.map(|_| ()).map_err(Proposed::Raft),
                    Err(_) => Err(Proposed::Raft(RaftError::Timeout("the write to commit".into()))),
                }
            }
        };
        let lost = || {
            Proposed::Raft(RaftError::Timeout("the write to commit: its proposer stopped".into()))
        };
        self.proposals.propose(&self.runtime, group, batch, writer, done, send, lost);
    }
}

impl Router for ClusterNode {
    fn partition_of(&self, slot: u16) -> Option<u16> {
        Some(self.serving_partition(slot))
    }

    fn admit_write(&self, slot: u16) -> Result<Option<Admission>, String> {
        self.gates.admit(slot).map(Some)
    }

    fn wait_for_move(&self, slot: u16) {
        self.wait_for_move_here(slot);
    }

    fn wait_for_adopt(&self, slot: u16) -> bool {
        self.wait_for_adopt_here(slot)
    }

    fn move_step(&self, partition: u16, op: &str, slot: u16, peer: u16) -> Result<String, String> {
        self.move_step_here(partition, op, slot, peer)
    }

    fn check_copy(&self, partition: u16, slot: u16, export: bool) -> Result<(), String> {
        self.check_copy_here(partition, slot, export)
    }

    fn ingest_copy(&self, partition: u16, entry: Vec<u8>) -> Result<usize, String> {
        self.ingest_copy_here(partition, entry)
    }

    fn replication_marks(&self) -> Vec<(u32, u64)> {
        let mut marks = Vec::new();
        for g in self.raft.groups() {
            let Some(replica) = self.raft.replica(g) else { continue };
            if replica.leadership().role == Role::Leader {
                marks.push((g.0, replica.status().last_log_index.unwrap_or(0)));
            }
        }
        marks
    }

    fn replicas_holding(&self, marks: &[(u32, u64)]) -> usize {
        let me = self.raft.id();
        marks
            .iter()
            .map(|&(g, index)| {
                let Some(replica) = self.raft.replica(GroupId(g)) else { return 0 };
                if replica.leadership().role != Role::Leader {
                    return 0;
                }
                let st = replica.status();
                st.replication
                    .iter()
                    .filter(|(n, m)| **n != me && m.is_some_and(|m| m >= index))
                    .count()
            })
            .min()
            .unwrap_or(0)
    }

    fn route(&self, slot: u16, write: bool, readonly: bool) -> Route {
        let group = self.group_of(slot);
        let leader = match self.raft.replica(group) {
            Some(replica) => {
                let now = replica.leadership();
                if now.role == Role::Leader || (readonly && !write) {
                    // A slot moving away: handed off, its clients go to the target for each
                    // command (`ASK`); frozen, its writes wait (`TRYAGAIN`).
                    let p = group.0 as u16;
                    return match self.ownership.state(p, slot) {
                        Some(State::HandedOff(to) | State::Released(to)) => {
                            match self.leader_addr(to) {
                                Some(addr) => Route::Ask(addr),
                                None => Route::Down,
                            }
                        }
                        Some(State::Frozen(_)) if write => Route::TryAgain,
                        Some(State::Importing(_)) => Route::TryAgain,
                        _ => Route::Local,
                    };
                }
                now.leader
            }
            None => self.preferred(slot),
        };
        match leader.and_then(|n| self.view.read().clients.get(&n).cloned()) {
            Some(addr) => Route::Moved(addr),
            None => Route::Down,
        }
    }

    fn layout(&self) -> Layout {
        let (map, table) = {
            let v = self.view.read();
            (v.map.clone(), v.slot_table.clone())
        };
        let mut epoch = 0;
        let ranges = table
            .iter()
            .map(|&(first, last, p)| {
                let replicas = map.placement.get(usize::from(p)).cloned().unwrap_or_default();
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
        let nodes = map
            .nodes
            .iter()
            .map(|(id, n)| {
                let addr = &n.addrs.client;
                let (host, port) = addr.rsplit_once(':').unwrap_or((addr.as_str(), "0"));
                let bus = n.addrs.raft.rsplit(':').next().unwrap_or("0");
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
            ("cluster_known_nodes".to_string(), self.view.read().clients.len().to_string()),
            ("cluster_map_version".to_string(), self.map().version.to_string()),
        ];
        if let Some(r) = self.raft.replica(META) {
            let st = r.status();
            let ids = |s: std::collections::BTreeSet<NodeId>| {
                s.iter().map(ToString::to_string).collect::<Vec<_>>().join("|")
            };
            lines.push((
                "meta".to_string(),
                format!(
                    "role={},term={},leader={},voters={},learners={},applied={}",
                    role_name(st.role),
                    st.term,
                    st.leader.map_or("?".to_string(), |l| l.to_string()),
                    ids(st.membership.membership.voters()),
                    ids(st.membership.membership.learners()),
                    st.applied.map_or("-".to_string(), |a| a.index.to_string()),
                ),
            ));
        }
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

    fn route_waiting(&self, slot: u16, write: bool, readonly: bool) -> Route {
        if let Some(replica) = self.raft.replica(self.group_of(slot)) {
            off_worker(|| self.runtime.block_on(known_leader(&replica)));
        }
        self.route(slot, write, readonly)
    }

    fn admin(&self, op: crate::routing::Admin) -> Result<String, String> {
        self.map_admin(op)
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
                RaftError::NotLeader { leader, .. } => {
                    let next = off_worker(|| self.runtime.block_on(next_leader(&replica, leader)));
                    self.moved(slot, next)
                }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::locks::LockTable;

    #[test]
    fn a_refused_write_gets_its_redirect_even_when_its_task_never_runs() {
        let table = LockTable::default();
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let handle = rt.handle().clone();
        drop(rt);
        // The runtime is gone: the task that would find the next leader is dropped unrun.
        let done = Settlement::new(table.mark_held());
        let redirect = Redirect { done: done.clone(), reply: "MOVED 7 h:1".into() };
        drop(handle.spawn(async move { redirect.to("MOVED 7 h:2".into()) }));
        assert_eq!(done.outcome(), Some(Err("MOVED 7 h:1".into())));
        // Run, it settles with what it found.
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let done = Settlement::new(table.mark_held());
        let redirect = Redirect { done: done.clone(), reply: "MOVED 7 h:1".into() };
        rt.block_on(async move { redirect.to("MOVED 7 h:2".into()) });
        assert_eq!(done.outcome(), Some(Err("MOVED 7 h:2".into())));
    }
}
