//! A node's Raft groups and what the rest of the system does with them.
//!
//! [`RaftNode`] holds the node's groups (one openraft `Raft` each, all on the node's one
//! [`NodeStorage`]) and answers the messages other nodes send ([`RpcHandler`]). [`Replica`]
//! is one group on this node, with the crate's own types: write, linearizable read, the
//! membership changes, leadership transfer, snapshot and purge triggers, and its status.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use openraft::async_runtime::watch::WatchReceiver;
use openraft::error::{ClientWriteError, InitializeError, RaftError};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, TransferLeaderError, TransferLeaderRequest,
    VoteRequest,
};
use openraft::{
    ChangeMembers, Config, Instant as _, RaftMetrics, ReadPolicy, ServerState, SnapshotPolicy,
};
use parking_lot::{Mutex, RwLock};

use super::convert::{
    entry_out, log_id_in, opt_log_id_in, opt_log_id_out, snapshot_meta_out, stored_membership_in,
    vote_in, vote_out,
};
use super::log::LogStore;
use super::network::NetworkFactory;
use super::sm::StateMachine;
use super::{blocking, PurgedRead, TypeConfig};
use crate::error::{Error, Result};

use crate::log_format::MetaKind;
use crate::log_store::{GroupLog, NodeStorage};
use crate::rejoin::{OnEmpty, Rejoin};
use crate::rpc::{self, Request, Response, SnapshotPiece, SnapshotReply};
use crate::snapshot::transfer::SnapshotReceiver;
use crate::snapshot::SnapshotData;
use crate::state_machine::{Apply, GroupState};
use crate::transport::{BoxFuture, RpcHandler, Transport};
use crate::types::{Command, GroupId, LogId, NodeId, Peer, Reply, StoredMembership};

type C = TypeConfig;
type Raft = openraft::Raft<C, StateMachine>;

/// Timing and snapshot settings of every group on a node.
#[derive(Clone, Debug)]
pub struct RaftSettings {
    /// Leader heartbeat period. Default 50 ms.
    pub heartbeat_ms: u64,
    /// Election timeout, drawn in `[min, max)`. Default 150-300 ms: several heartbeats, so a
    /// follower does not start an election while its leader is alive.
    pub election_timeout_ms: (u64, u64),
    /// A snapshot is built after this many entries since the last one, and the log purged
    /// up to it (but [`RaftSettings::keep_log_behind_snapshot`]). Default 256. Why so few: a
    /// snapshot costs little to make (it holds an engine snapshot; its files are cut only when
    /// a follower needs them), and entries purged before the log's memtable is flushed never
    /// reach a table (the log's family is not kept for snapshots: `log_store::family_options`),
    /// where thousands per group, as a node of many groups takes them, were each flushed and
    /// compacted before their purge came (`docs/measurements.md`, the cluster rows).
    pub snapshot_after_entries: u64,
    /// Entries kept in the log behind a snapshot, for followers slightly behind to catch up
    /// without a snapshot. Default 128. A follower the leader is streaming to keeps what it
    /// has not acknowledged whatever this says (openraft purges no entry in flight); one
    /// further behind (back from a restart or a partition) is sent a snapshot.
    pub keep_log_behind_snapshot: u64,
    /// Bytes of one snapshot chunk on the wire. Default 1 MiB.
    pub snapshot_chunk_bytes: usize,
}

impl Default for RaftSettings {
    fn default() -> Self {
        RaftSettings {
            heartbeat_ms: 50,
            election_timeout_ms: (150, 300),
            snapshot_after_entries: 256,
            keep_log_behind_snapshot: 128,
            snapshot_chunk_bytes: 1 << 20,
        }
    }
}

impl RaftSettings {
    fn config(&self) -> Result<Config> {
        let config = Config {
            cluster_name: "strata".to_string(),
            heartbeat_interval: self.heartbeat_ms,
            election_timeout_min: self.election_timeout_ms.0,
            election_timeout_max: self.election_timeout_ms.1,
            snapshot_policy: SnapshotPolicy::LogsSinceLast(self.snapshot_after_entries),
            max_in_snapshot_log_to_keep: self.keep_log_behind_snapshot,
            snapshot_max_chunk_size: self.snapshot_chunk_bytes as u64,
            // A replica cut off for a while campaigns only once a quorum would vote for it,
            // so it does not come back with a raised term that deposes a healthy leader.
            enable_pre_vote: Some(true),
            // A follower's log goes back only when it lost its storage; such a replica
            // catches up before it votes again (`rejoin.rs`), so the leader replicating its
            // log to it from the start is the recovery, not a fault to stop on.
            allow_log_reversion: Some(true),
            ..Config::default()
        };
        config.validate().map_err(|e| Error::Raft {
            group: GroupId(0),
            reason: format!("invalid settings: {e}"),
        })
    }
}

/// A replica's part in its group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Receives the log, does not vote.
    Learner,
    /// Votes and follows the leader.
    Follower,
    /// Campaigns.
    Candidate,
    /// Leads.
    Leader,
    /// Stopped.
    Shutdown,
}

/// What a replica knows of its group (for `INFO replication` and tests).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupStatus {
    /// This node.
    pub node: NodeId,
    /// The group.
    pub group: GroupId,
    /// Its role.
    pub role: Role,
    /// The current term.
    pub term: u64,
    /// The leader it knows of.
    pub leader: Option<NodeId>,
    /// Index of its last log entry.
    pub last_log_index: Option<u64>,
    /// The last entry known committed.
    pub committed: Option<LogId>,
    /// The last entry applied.
    pub applied: Option<LogId>,
    /// The last entry its snapshot covers.
    pub snapshot: Option<LogId>,
    /// The last entry purged from its log.
    pub purged: Option<LogId>,
    /// The membership in force.
    pub membership: StoredMembership,
    /// On the leader: each follower's last matching entry index.
    pub replication: BTreeMap<NodeId, Option<u64>>,
}

/// A replica's role, term and known leader: what routing a command needs, without the rest
/// of [`GroupStatus`] (its membership and replication maps).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Leadership {
    /// Its role.
    pub role: Role,
    /// The current term.
    pub term: u64,
    /// The leader it knows of.
    pub leader: Option<NodeId>,
}

fn role_of(state: ServerState) -> Role {
    match state {
        ServerState::Learner => Role::Learner,
        ServerState::Follower => Role::Follower,
        ServerState::Candidate => Role::Candidate,
        ServerState::Leader => Role::Leader,
        ServerState::Shutdown => Role::Shutdown,
    }
}

fn status_of(group: GroupId, m: &RaftMetrics<C>) -> GroupStatus {
    let role = role_of(m.state);
    GroupStatus {
        node: m.id,
        group,
        role,
        term: m.current_term,
        leader: m.current_leader,
        last_log_index: m.last_log_index,
        committed: opt_log_id_in(m.cluster_committed.as_ref()),
        applied: opt_log_id_in(m.last_applied.as_ref()),
        snapshot: opt_log_id_in(m.snapshot.as_ref()),
        purged: opt_log_id_in(m.purged.as_ref()),
        membership: stored_membership_in(&m.membership_config),
        replication: m
            .replication
            .as_ref()
            .map(|r| {
                r.iter().map(|(id, matched)| (*id, matched.as_ref().map(|l| l.index))).collect()
            })
            .unwrap_or_default(),
    }
}

/// One group on this node.
pub struct Replica {
    group: GroupId,
    raft: Raft,
    /// The leader lease openraft keeps (its election timeout's upper bound): a voter that
    /// heard from the leader grants no other vote within it.
    lease: Duration,
    /// The term in which this replica, leading, started handing its leadership to another
    /// (0: none). Voters grant a transfer's election within the lease, so from then on the
    /// lease proves nothing ([`Replica::leased_term`]); openraft stops its own reads then.
    transferring: Arc<AtomicU64>,
    /// Whether it is catching up after opening on empty storage (it does not vote then).
    rejoin: Arc<Rejoin>,
    /// Its state machine's state, which [`RaftNode::remove_group`] fences.
    state: Weak<Mutex<GroupState>>,
    /// Set while [`RaftNode::leave_group`] asks whether it may delete the replica: the node
    /// refuses the group's requests then.
    leaving: Arc<AtomicBool>,
}

impl Clone for Replica {
    fn clone(&self) -> Self {
        Replica {
            group: self.group,
            raft: self.raft.clone(),
            lease: self.lease,
            transferring: self.transferring.clone(),
            rejoin: self.rejoin.clone(),
            state: self.state.clone(),
            leaving: self.leaving.clone(),
        }
    }
}

impl Replica {
    /// The group.
    pub fn group(&self) -> GroupId {
        self.group
    }

    fn raft_error<E: std::fmt::Display>(&self, what: &str, e: E) -> Error {
        Error::Raft { group: self.group, reason: format!("{what}: {e}") }
    }

    fn write_error(&self, what: &str, e: RaftError<C, ClientWriteError<C>>) -> Error {
        let g = self.group;
        match e {
            RaftError::APIError(ClientWriteError::ForwardToLeader(f)) => {
                Error::NotLeader { group: g, leader: f.leader_id }
            }
            RaftError::APIError(ClientWriteError::LogEntryDiscarded(f)) => Error::Uncertain {
                group: g,
                reason: format!(
                    "the entry was discarded on a leader change (leader now {:?})",
                    f.leader_id
                ),
            },
            RaftError::Fatal(f) => {
                Error::Uncertain { group: g, reason: format!("{what}: raft stopped: {f}") }
            }
            RaftError::APIError(e) => self.raft_error(what, e),
        }
    }

    /// Makes this node's replica the group's first member, with `members` as voters (call on
    /// one node of a new group; the others learn of it from the log). Fails with
    /// [`Error::AlreadyInitialized`] when the replica has log entries or a vote already: it is
    /// in a group, whatever the metrics published so far say.
    pub async fn initialize(&self, members: BTreeMap<NodeId, Peer>) -> Result<()> {
        match self.raft.initialize(members).await {
            Ok(()) => Ok(()),
            Err(RaftError::APIError(InitializeError::NotAllowed(e))) => {
                Err(Error::AlreadyInitialized { group: self.group, reason: e.to_string() })
            }
            Err(e) => Err(self.raft_error("initialize", e)),
        }
    }

    /// Proposes `command`; returns its log id and the application's reply once a quorum
    /// has it durable and it is applied here. Fails with [`Error::NotLeader`] on a follower
    /// (nothing proposed), [`Error::TooLarge`] for a command over [`crate::MAX_COMMAND_BYTES`]
    /// (nothing proposed) and [`Error::Uncertain`] when the outcome is unknown.
    pub async fn write(&self, command: Vec<u8>) -> Result<(LogId, Reply)> {
        if command.len() > crate::MAX_COMMAND_BYTES {
            // Refused before it is in the log: an entry too large for one message to the
            // followers would stop the group's replication (`crate::MAX_COMMAND_BYTES`).
            return Err(Error::TooLarge { group: self.group, bytes: command.len() });
        }
        match self.raft.client_write(Command(command)).await {
            Ok(r) => Ok((log_id_in(&r.log_id), r.data)),
            Err(e) => Err(self.write_error("write", e)),
        }
    }

    /// Returns once this node is confirmed leader and has applied every entry committed
    /// before the call: a read of the group's data after it is linearizable. `lease` uses
    /// the leader's lease (no round trip; assumes bounded clock drift) instead of a quorum
    /// round trip (read index).
    pub async fn linearizable_read(&self, lease: bool) -> Result<()> {
        let policy = if lease { ReadPolicy::LeaseRead } else { ReadPolicy::ReadIndex };
        match self.raft.ensure_linearizable(policy).await {
            Ok(_) => Ok(()),
            Err(e) => match e.forward_to_leader() {
                Some(f) => Err(Error::NotLeader { group: self.group, leader: f.leader_id }),
                None => Err(self.raft_error("linearizable read", e)),
            },
        }
    }

    /// Adds node `id` (at `peer`) as a learner and waits until it has caught up.
    pub async fn add_learner(&self, id: NodeId, peer: Peer) -> Result<()> {
        self.learner(id, peer, true).await
    }

    /// Adds node `id` (at `peer`) as a learner and returns once the membership change is
    /// committed, without waiting for the learner to catch up ([`GroupStatus::replication`]
    /// tells how far it is).
    pub async fn begin_add_learner(&self, id: NodeId, peer: Peer) -> Result<()> {
        self.learner(id, peer, false).await
    }

    async fn learner(&self, id: NodeId, peer: Peer, wait: bool) -> Result<()> {
        let added = self.raft.add_learner(id, peer, wait).await;
        added.map(|_| ()).map_err(|e| self.write_error("add learner", e))
    }

    /// Removes the learners `ids` from the group (voters among them are refused by Raft:
    /// demote them with [`Replica::change_voters`] first).
    pub async fn remove_learners(&self, ids: BTreeSet<NodeId>) -> Result<()> {
        self.change(ChangeMembers::RemoveNodes(ids), false, "remove learners").await
    }

    /// Makes `voters` the voting members (through joint consensus); members no longer
    /// voters are removed from the group.
    pub async fn change_voters(&self, voters: BTreeSet<NodeId>) -> Result<()> {
        self.change(ChangeMembers::ReplaceAllVoters(voters), false, "change membership").await
    }

    /// Makes `voters` the voting members (through joint consensus); members no longer voters
    /// stay as learners, so they keep receiving the log and learn that they no longer vote
    /// ([`Replica::remove_learners`] then removes them).
    pub async fn demote_to(&self, voters: BTreeSet<NodeId>) -> Result<()> {
        self.change(ChangeMembers::ReplaceAllVoters(voters), true, "change membership").await
    }

    async fn change(
        &self,
        change: ChangeMembers<NodeId, Peer>,
        retain: bool,
        what: &str,
    ) -> Result<()> {
        let changed = self.raft.change_membership(change, retain).await;
        changed.map(|_| ()).map_err(|e| self.write_error(what, e))
    }

    /// Asks the leader (this node) to hand leadership to `to`. From now until the term
    /// changes, [`Replica::leased_term`] answers `None`.
    pub async fn transfer_leader(&self, to: NodeId) -> Result<()> {
        let term = self.leadership().term;
        self.transferring.store(term, Ordering::SeqCst);
        self.raft
            .trigger()
            .transfer_leader(to)
            .await
            .map_err(|e| self.raft_error("transfer leader", e))
    }

    /// Builds a snapshot now.
    pub async fn snapshot(&self) -> Result<()> {
        self.raft.trigger().snapshot().await.map_err(|e| self.raft_error("snapshot", e))
    }

    /// Purges the log up to `upto` (never past the last snapshot).
    pub async fn purge_log(&self, upto: u64) -> Result<()> {
        self.raft.trigger().purge_log(upto).await.map_err(|e| self.raft_error("purge log", e))
    }

    /// Its role, term and known leader now (cheap: for every command's routing).
    pub fn leadership(&self) -> Leadership {
        let m = self.raft.metrics();
        let m = m.borrow_watched();
        Leadership { role: role_of(m.state), term: m.current_term, leader: m.current_leader }
    }

    /// The upper bound of the group's election timeout: a replica that has not heard from a
    /// leader for this long has called an election.
    pub fn election_timeout(&self) -> Duration {
        self.lease
    }

    /// The term this replica leads in, when its leader lease holds now: a quorum
    /// acknowledged a message this leader sent less than a lease ago (the time openraft
    /// records is when that message was sent), so no other replica can have been elected
    /// since, clocks drifting by less than the lease; a group whose only voter it is holds
    /// the lease whenever it leads. `None` when it does not lead, when it
    /// started a leadership transfer in this term (voters grant the transfer's election within
    /// the lease), or when its metrics show no fresh enough acknowledgement (the caller then
    /// asks Raft: [`Replica::linearizable_read`]). Reads only the published metrics and this
    /// replica's own transfer mark: no call into Raft.
    pub fn leased_term(&self) -> Option<u64> {
        let m = self.raft.metrics();
        let m = m.borrow_watched();
        if m.state != ServerState::Leader {
            return None;
        }
        if self.transferring.load(Ordering::SeqCst) == m.current_term {
            return None;
        }
        // The only voter is a quorum by itself: no other replica can be elected while it
        // leads, and openraft records no acknowledgement time for it (none is sent). Read
        // from the configurations as they are (a joint change lists both): every write asks
        // this, and `voter_ids` collects a set per call.
        let configs = m.membership_config.membership().get_joint_config();
        if configs.iter().all(|c| c.len() == 1 && c.contains(&m.id)) && !configs.is_empty() {
            return Some(m.current_term);
        }
        let acked = m.last_quorum_acked?.into_inner();
        (acked.elapsed() < self.lease).then_some(m.current_term)
    }

    /// Whether this replica is catching up after opening on empty storage in an existing
    /// group: until it has, it neither votes nor campaigns (`rejoin.rs`).
    pub fn catching_up(&self) -> bool {
        self.rejoin.active()
    }

    /// What this replica knows of its group now.
    pub fn status(&self) -> GroupStatus {
        let m = self.raft.metrics().borrow_watched().clone();
        status_of(self.group, &m)
    }

    /// Waits until `cond` holds of the status; `what` names it in the timeout error.
    pub async fn wait_for(
        &self,
        what: &str,
        timeout: Duration,
        cond: impl Fn(&GroupStatus) -> bool + Send + 'static,
    ) -> Result<GroupStatus> {
        let g = self.group;
        match self.raft.wait(Some(timeout)).metrics(move |m| cond(&status_of(g, m)), what).await {
            Ok(m) => Ok(status_of(g, &m)),
            Err(e) => {
                Err(Error::Timeout(format!("{g} on node {}: {what}: {e}", self.raft.node_id())))
            }
        }
    }

    /// The mark [`RaftNode::leave_group`] sets while it asks.
    pub(super) fn leaving(&self) -> &AtomicBool {
        &self.leaving
    }

    /// Stops the replica.
    pub async fn shutdown(&self) -> Result<()> {
        self.raft.shutdown().await.map_err(|e| self.raft_error("shutdown", e))
    }
}

/// Whether `log`'s group holds state machine records (an applied id, a membership, an
/// install under way) but no vote and no log entry or purge mark: what is left when a
/// replica removed from this node is written to after its records were deleted (which
/// `GroupState::fence` prevents, but a node's storage may hold such records already). A
/// replica that lived here has a vote (Raft makes it durable before it accepts entries or a
/// snapshot from a leader) or entries (the one that initialized the group), and both are
/// deleted only with the rest of the group's records. Opened as they are, the records would
/// make the replica claim entries it never held: Raft takes what is applied as committed,
/// and the catch-up of a replica on empty storage (`rejoin.rs`) would not start.
fn left_by_removed_replica(storage: &NodeStorage, log: &GroupLog) -> Result<bool> {
    if log.vote().is_some() || log.state().last.is_some() {
        return Ok(false);
    }
    for kind in [MetaKind::Applied, MetaKind::Membership, MetaKind::Installing] {
        if storage.get_meta(log.group(), kind)?.is_some() {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Notes in the node's info LOG every change of `group`'s role, term or known leader on this
/// node (elections, step-downs, a leader learnt), until the replica stops. It watches the
/// server metrics, which openraft publishes only when they change (not per entry).
async fn log_leadership(
    group: GroupId,
    storage: Arc<NodeStorage>,
    mut metrics: openraft::type_config::alias::WatchReceiverOf<
        C,
        openraft::metrics::RaftServerMetrics<C>,
    >,
) {
    let mut last = None;
    loop {
        let now = {
            let m = metrics.borrow_watched();
            (role_of(m.state), vote_in(&m.vote).term, m.current_leader)
        };
        if last != Some(now) {
            let (role, term, leader) = now;
            storage.db().log_info(&format!(
                "Raft {group}: {role:?} in term {term}, leader {}",
                leader.map_or("unknown".to_string(), |l| format!("node {l}"))
            ));
            last = Some(now);
        }
        if now.0 == Role::Shutdown || metrics.changed().await.is_err() {
            return;
        }
    }
}

/// Ends `replica`'s catch-up (`rejoin.rs`) once it has applied what the first leader it
/// heard had committed and sent: removes the record, turns its elections on, notes it in
/// the info LOG. Returns early when the replica stops.
async fn catch_up(replica: Replica, storage: Arc<NodeStorage>) {
    let group = replica.group;
    let rejoin = replica.rejoin.clone();
    loop {
        let r = rejoin.clone();
        let waited = replica
            .wait_for("catch up", Duration::from_secs(60), move |s| {
                s.role == Role::Shutdown || r.caught_up(s.applied)
            })
            .await;
        match waited {
            Ok(s) if s.role == Role::Shutdown => return,
            Ok(s) => {
                let st = storage.clone();
                let r = rejoin.clone();
                if let Err(e) = blocking(move || r.finish(&st)).await {
                    storage.db().log_info(&format!("Raft {group}: cannot end its catch-up: {e}"));
                    return;
                }
                replica.raft.runtime_config().elect(true);
                storage.db().log_info(&format!(
                    "Raft {group}: caught up (applied {}), votes and campaigns again",
                    s.applied.map_or(0, |a| a.index)
                ));
                return;
            }
            Err(Error::Timeout(_)) => {}
            Err(_) => return,
        }
    }
}

/// A snapshot being received from another node.
struct Incoming {
    transfer: u64,
    receiver: Option<SnapshotReceiver>,
}

/// A node: its groups on its one storage, reachable through a transport.
pub struct RaftNode {
    id: NodeId,
    storage: Arc<NodeStorage>,
    app: Arc<dyn Apply>,
    transport: Arc<dyn Transport>,
    settings: RaftSettings,
    config: Arc<Config>,
    groups: RwLock<BTreeMap<GroupId, Replica>>,
    incoming: Mutex<HashMap<(NodeId, GroupId), Incoming>>,
}

impl RaftNode {
    /// A node with no group open yet.
    pub fn new(
        id: NodeId,
        storage: Arc<NodeStorage>,
        app: Arc<dyn Apply>,
        transport: Arc<dyn Transport>,
        settings: RaftSettings,
    ) -> Result<Arc<Self>> {
        let config = Arc::new(settings.config()?);
        Ok(Arc::new(RaftNode {
            id,
            storage,
            app,
            transport,
            settings,
            config,
            groups: RwLock::new(BTreeMap::new()),
            incoming: Mutex::new(HashMap::new()),
        }))
    }

    /// This node's id.
    pub fn id(&self) -> NodeId {
        self.id
    }

    pub(super) fn transport(&self) -> &Arc<dyn Transport> {
        &self.transport
    }

    /// The upper bound of its groups' election timeouts, in milliseconds.
    pub(super) fn election_timeout_ms(&self) -> u64 {
        self.config.election_timeout_max
    }

    /// The node's storage.
    pub fn storage(&self) -> &Arc<NodeStorage> {
        &self.storage
    }

    /// Opens this node's replica of `group` (recovering what its storage holds) and starts it.
    /// `on_empty` says what empty storage means: a group being created, or one that exists,
    /// which the replica then catches up with before it votes (`rejoin.rs`). What a replica
    /// removed from this node left of the group without its log (`left_by_removed_replica`)
    /// is deleted first, whatever `on_empty` says: the replica starts empty.
    pub async fn open_group(&self, group: GroupId, on_empty: OnEmpty) -> Result<Replica> {
        if self.groups.read().contains_key(&group) {
            return Err(Error::Raft { group, reason: format!("already open on node {}", self.id) });
        }
        let (storage, app) = (self.storage.clone(), self.app.clone());
        let (log, state, rejoin) = blocking(move || {
            let log = GroupLog::open(storage.clone(), group)?;
            if left_by_removed_replica(&storage, &log)? {
                storage.drop_group(group, &app.ranges(group))?;
                app.removed(group);
                storage.db().log_info(&format!(
                    "Raft {group}: found an applied state without a log or vote, left by a \
                     replica removed from this node: deleted, the replica starts empty"
                ));
            }
            let state = GroupState::open(storage.clone(), group, app)?;
            let rejoin = Rejoin::open(&storage, &log, &state, on_empty)?;
            Ok((log, state, rejoin))
        })
        .await
        .map_err(|e| Error::Raft { group, reason: format!("open the group's storage: {e}") })?;
        let purged_reads = PurgedRead::new();
        let network = NetworkFactory::new(
            group,
            self.id,
            self.transport.clone(),
            self.settings.snapshot_chunk_bytes,
            purged_reads.clone(),
        );
        let rejoin = Arc::new(rejoin);
        // A replica catching up starts with its elections off: one election timeout after
        // starting would be too late to turn them off.
        let config = if rejoin.active() {
            Arc::new(Config { enable_elect: false, ..(*self.config).clone() })
        } else {
            self.config.clone()
        };
        let sm = StateMachine::new(state);
        let state = sm.state();
        let raft =
            openraft::Raft::new(self.id, config, network, LogStore::new(log, purged_reads), sm)
                .await
                .map_err(|e| Error::Raft { group, reason: format!("start raft: {e}") })?;
        let lease = Duration::from_millis(self.config.election_timeout_max);
        let replica = Replica {
            group,
            raft,
            lease,
            transferring: Arc::new(AtomicU64::new(0)),
            rejoin: rejoin.clone(),
            state,
            leaving: Arc::new(AtomicBool::new(false)),
        };
        self.groups.write().insert(group, replica.clone());
        tokio::spawn(log_leadership(group, self.storage.clone(), replica.raft.server_metrics()));
        if rejoin.active() {
            self.storage.db().log_info(&format!(
                "Raft {group}: found its storage empty in an existing group: it catches up \
                 before it votes or campaigns"
            ));
            tokio::spawn(catch_up(replica.clone(), self.storage.clone()));
        }
        Ok(replica)
    }

    /// This node's replica of `group`, if open.
    pub fn replica(&self, group: GroupId) -> Option<Replica> {
        self.groups.read().get(&group).cloned()
    }

    /// The groups open on this node.
    pub fn groups(&self) -> Vec<GroupId> {
        self.groups.read().keys().copied().collect()
    }

    /// Stops this node's replica of `group` and deletes what it stored of the group (log,
    /// votes, applied id, membership, and the application's key ranges): the node no longer
    /// holds a replica of it. Call once the group's membership no longer names this node.
    ///
    /// Raft's state machine task outlives the replica's stop and runs the applies and
    /// installs queued to it; the state is fenced first (`GroupState::fence`), so none of
    /// them writes after the deletion.
    pub async fn remove_group(&self, group: GroupId) -> Result<()> {
        let replica = self.groups.write().remove(&group);
        let mut state = None;
        if let Some(r) = replica {
            // A replica that fails to stop cleanly is stopping anyway.
            let _ = r.shutdown().await;
            // `None` once its state machine task has ended: nothing is left to write then.
            state = r.state.upgrade();
        }
        self.incoming.lock().retain(|(_, g), _| *g != group);
        let (storage, app) = (self.storage.clone(), self.app.clone());
        let dropped = blocking(move || {
            if let Some(state) = state {
                state.lock().fence();
            }
            storage.drop_group(group, &app.ranges(group))
        })
        .await;
        // Whatever of it is left is stale either way.
        self.app.removed(group);
        dropped.map_err(|e| Error::Raft { group, reason: format!("drop its storage: {e}") })?;
        self.storage.db().log_info(&format!(
            "Raft {group}: replica removed from node {}, its data and log deleted",
            self.id
        ));
        Ok(())
    }

    /// Stops every replica and the syncer; the `Db` closes once the last handle is dropped.
    pub async fn shutdown(&self) {
        let replicas: Vec<_> = std::mem::take(&mut *self.groups.write()).into_values().collect();
        for r in replicas {
            // A replica that fails to stop cleanly is stopping anyway.
            let _ = r.shutdown().await;
        }
        self.incoming.lock().clear();
        self.storage.stop();
    }

    /// Takes one request frame. What must happen in the order the frames arrived happens
    /// here, before the answer's future is returned: an append is handed to its group's Raft
    /// core ([`hand_over`]).
    fn take(self: &Arc<Self>, frame: &[u8]) -> BoxFuture<Response> {
        let ready = |r: Response| -> BoxFuture<Response> { Box::pin(std::future::ready(r)) };
        let (group, req) = match rpc::decode_request(frame) {
            Ok(x) => x,
            Err(e) => {
                return ready(Response::Error(format!(
                    "node {}: cannot decode the request: {e}",
                    self.id
                )))
            }
        };
        let Some(replica) = self.replica(group) else {
            return ready(Response::Error(format!(
                "node {}: {}",
                self.id,
                Error::NoSuchGroup(group)
            )));
        };
        let id = self.id;
        let failed = move |what: &str, e: &dyn std::fmt::Display| failure(id, group, what, e);
        if replica.leaving.load(Ordering::SeqCst) {
            return ready(failed("any request", &"the replica is leaving this node"));
        }
        if replica.rejoin.active() {
            match &req {
                Request::Append(a) => replica.rejoin.note_append(
                    &a.vote,
                    a.leader_commit,
                    a.entries.last().map(|e| e.log_id.index),
                ),
                Request::Vote(_) | Request::PreVote(_) => {
                    let vote = vote_in(&replica.raft.metrics().borrow_watched().vote);
                    return ready(Response::Vote(rpc::VoteResponse {
                        vote,
                        granted: false,
                        last_log_id: None,
                    }));
                }
                Request::TransferLeader(_) => {
                    return ready(failed("transfer leader", &"this replica is still catching up"));
                }
                Request::Snapshot(_) | Request::Membership(_) => {}
            }
        }
        let Request::Append(a) = req else {
            let node = self.clone();
            return Box::pin(async move { node.serve(group, replica, req).await });
        };
        let entries: std::io::Result<Vec<_>> = a.entries.into_iter().map(entry_out).collect();
        let entries = match entries {
            Ok(e) => e,
            Err(e) => return ready(failed("decode entries", &e)),
        };
        let answer = hand_over(
            replica.raft.clone(),
            AppendEntriesRequest {
                vote: vote_out(&a.vote),
                prev_log_id: opt_log_id_out(a.prev_log_id.as_ref()),
                entries,
                leader_commit: opt_log_id_out(a.leader_commit.as_ref()),
            },
        );
        Box::pin(async move {
            match answer.await {
                Ok(r) => Response::Append(match r {
                    AppendEntriesResponse::Success => rpc::AppendResponse::Success,
                    AppendEntriesResponse::PartialSuccess(id) => {
                        rpc::AppendResponse::PartialSuccess(opt_log_id_in(id.as_ref()))
                    }
                    AppendEntriesResponse::Conflict => rpc::AppendResponse::Conflict,
                    AppendEntriesResponse::HigherVote(v) => {
                        rpc::AppendResponse::HigherVote(vote_in(&v))
                    }
                }),
                Err(e) => failed("append", &e),
            }
        })
    }

    /// Answers a request other than an append.
    async fn serve(&self, group: GroupId, replica: Replica, req: Request) -> Response {
        let raft = &replica.raft;
        let failed = |what: &str, e: &dyn std::fmt::Display| failure(self.id, group, what, e);
        match req {
            Request::Append(_) => failed("append", &"appends are handed over as they arrive"),
            Request::Vote(v) => {
                Self::vote(raft, v, false).await.unwrap_or_else(|e| failed("vote", &e))
            }
            Request::PreVote(v) => {
                Self::vote(raft, v, true).await.unwrap_or_else(|e| failed("pre-vote", &e))
            }
            Request::Snapshot(piece) => self.receive_snapshot(group, raft, piece).await,
            Request::TransferLeader(t) => {
                let req = TransferLeaderRequest::new(
                    vote_out(&t.from_leader),
                    t.to,
                    opt_log_id_out(t.last_log_id.as_ref()),
                );
                match raft.handle_transfer_leader(req).await {
                    Ok(Ok(())) => Response::TransferLeader(rpc::TransferLeaderResponse::Ok),
                    Ok(Err(TransferLeaderError::VoteChanged { expected, actual })) => {
                        Response::TransferLeader(rpc::TransferLeaderResponse::VoteChanged {
                            expected: vote_in(&expected),
                            actual: vote_in(&actual),
                        })
                    }
                    Ok(Err(TransferLeaderError::LogNotFlushed { expected, actual })) => {
                        Response::TransferLeader(rpc::TransferLeaderResponse::LogNotFlushed {
                            expected: opt_log_id_in(expected.as_ref()),
                            actual: opt_log_id_in(actual.as_ref()),
                        })
                    }
                    Err(e) => failed("transfer leader", &e),
                }
            }
            Request::Membership(node) => {
                Response::Membership(super::leave::membership_reply(&replica, node))
            }
        }
    }

    async fn vote(raft: &Raft, v: rpc::VoteRequest, pre: bool) -> Result<Response, RaftError<C>> {
        let req = VoteRequest {
            vote: vote_out(&v.vote),
            last_log_id: opt_log_id_out(v.last_log_id.as_ref()),
            leadership_transfer: v.leadership_transfer,
        };
        let r = if pre { raft.pre_vote(req).await? } else { raft.vote(req).await? };
        Ok(Response::Vote(rpc::VoteResponse {
            vote: vote_in(&r.vote),
            granted: r.vote_granted,
            last_log_id: opt_log_id_in(r.last_log_id.as_ref()),
        }))
    }

    /// Takes one piece of a snapshot transfer; the last one hands the snapshot to Raft.
    async fn receive_snapshot(
        &self,
        group: GroupId,
        raft: &Raft,
        piece: SnapshotPiece,
    ) -> Response {
        let key = (piece.from, group);
        let failed = |e: &dyn std::fmt::Display| {
            Response::Error(format!("node {} {group}: receive snapshot: {e}", self.id))
        };
        // A piece of a new transfer from the same sender replaces the one under way.
        let taken = {
            let mut incoming = self.incoming.lock();
            match incoming.remove(&key) {
                Some(inc) if inc.transfer == piece.transfer => inc.receiver,
                _ => None,
            }
        };
        let receiver = match taken {
            Some(r) => r,
            None => {
                let first = piece.chunk.as_ref().is_none_or(|c| c.file == 0 && c.offset == 0);
                if !first {
                    return failed(&"a chunk of a transfer whose start was not received");
                }
                match SnapshotReceiver::new(self.storage.snapshot_dir(), group, piece.files.clone())
                {
                    Ok(r) => r,
                    Err(e) => return failed(&e),
                }
            }
        };
        let (transfer, done, chunk) = (piece.transfer, piece.done, piece.chunk);
        let outcome = blocking(move || {
            let mut receiver = receiver;
            if let Some(c) = &chunk {
                receiver.accept(c)?;
            }
            if done {
                receiver.finish().map(|files| (None, Some(files)))
            } else {
                Ok((Some(receiver), None))
            }
        })
        .await;
        match outcome {
            Err(e) => failed(&e),
            Ok((Some(receiver), _)) => {
                self.incoming.lock().insert(key, Incoming { transfer, receiver: Some(receiver) });
                Response::Snapshot(SnapshotReply::Received)
            }
            Ok((None, Some(files))) => {
                let meta = match snapshot_meta_out(&piece.meta) {
                    Ok(m) => m,
                    Err(e) => return failed(&e),
                };
                let snapshot =
                    openraft::Snapshot { meta, snapshot: SnapshotData::of_files(group, files) };
                match raft.install_full_snapshot(vote_out(&piece.vote), snapshot).await {
                    Ok(r) => Response::Snapshot(SnapshotReply::Installed(vote_in(&r.vote))),
                    Err(e) => failed(&e),
                }
            }
            Ok((None, None)) => failed(&"nothing received"),
        }
    }
}

/// The error response of node `id`'s replica of `group` when `what` failed with `e`.
fn failure(id: NodeId, group: GroupId, what: &str, e: &dyn std::fmt::Display) -> Response {
    Response::Error(format!("node {id} {group}: {what}: {e}"))
}

/// The answer to an append handed to a group's Raft core.
type AppendAnswer = BoxFuture<std::result::Result<AppendEntriesResponse<C>, RaftError<C>>>;

/// Hands `req` to `raft`'s core before it returns, and returns the wait for the answer.
///
/// A leader sends a group's appends without waiting for the answers to the ones before
/// (`network.rs`), so they must reach the core in the order they arrived: one taken before
/// the one it follows would fail as a conflict. `Raft::append_entries` queues its message on
/// the core's channel when first polled (or, the channel full, takes its turn among the
/// senders, first come first served), so it is polled once here, in the caller's order (with
/// coop budgeting off, which could otherwise make that poll yield before queueing); the task
/// that awaits the answer polls it from then on. Polling first with a waker that
/// does nothing keeps the `Future` contract: only the latest poll's waker is woken.
fn hand_over(raft: Raft, req: AppendEntriesRequest<C>) -> AppendAnswer {
    let mut answer: AppendAnswer =
        Box::pin(tokio::task::unconstrained(async move { raft.append_entries(req).await }));
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match answer.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(r) => Box::pin(std::future::ready(r)),
        std::task::Poll::Pending => answer,
    }
}

impl RpcHandler for RaftNode {
    fn handle(self: Arc<Self>, frame: Vec<u8>) -> BoxFuture<Vec<u8>> {
        let answer = self.take(&frame);
        Box::pin(async move { rpc::encode_response(&answer.await) })
    }
}
