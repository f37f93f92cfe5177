//! Where a command runs in cluster mode: the [`Router`] a clustered server installs in its
//! shared state answers, for the slot a command's keys hash to (`crate::slots`), whether this
//! node serves it or which node does. The command layer turns the answer into Redis Cluster's
//! replies (`MOVED <slot> <host>:<port>`, `CLUSTERDOWN`), which cluster clients follow; a
//! standalone server has no router and serves every key.

/// Where a command on one slot runs, as seen from this node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    /// Here.
    Local,
    /// At the node whose client address (`host:port`) this is: the slot's leader, or, for a
    /// read on a READONLY connection, a replica.
    Moved(String),
    /// Nowhere now (no leader is known for the slot's partition).
    Down,
    /// At the node whose client address this is, for this command only: the slot is moving
    /// there (Redis Cluster's `ASK`; the client sends `ASKING` first).
    Ask(String),
    /// Not now: a write to a slot that is being moved (Redis Cluster's `TRYAGAIN`).
    TryAgain,
}

/// Held while an admitted write runs ([`Router::admit_write`]): the slot's move waits for
/// it to be proposed before it freezes the slot.
pub struct Admission(pub Box<dyn Send>);

/// A node of the cluster as clients see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeInfo {
    /// Its id (Redis Cluster clients get it as 40 hex digits: [`NodeInfo::name`]).
    pub id: u64,
    /// The host clients reach it on.
    pub host: String,
    /// Its client port.
    pub port: u16,
    /// The port of its node-to-node transport (Redis's cluster bus port).
    pub bus_port: u16,
}

impl NodeInfo {
    /// The node's id as Redis Cluster names nodes ([`node_name`]).
    pub fn name(&self) -> String {
        node_name(self.id)
    }
}

/// Node `id` as Redis Cluster names nodes: 40 lower-case hex digits.
pub fn node_name(id: u64) -> String {
    format!("{id:040x}")
}

/// A run of slots (one partition) and who serves it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlotRange {
    /// First slot.
    pub first: u16,
    /// Last slot (inclusive).
    pub last: u16,
    /// The node leading it, as far as this node knows (`None`: no leader known now).
    pub leader: Option<u64>,
    /// Every node holding a replica of it, the leader included.
    pub replicas: Vec<u64>,
}

/// The cluster as one node sees it: what CLUSTER SLOTS, NODES and INFO report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// This node's id.
    pub myself: u64,
    /// Every node, by id.
    pub nodes: Vec<NodeInfo>,
    /// Every slot, in runs, in slot order.
    pub ranges: Vec<SlotRange>,
    /// The highest term this node has seen in any of its groups (Redis's epoch).
    pub epoch: u64,
}

/// A change to the cluster's layout, asked of the node leading the meta group (CLUSTER
/// ADDNODE, REMOVENODE, FORGETNODE, REBALANCE; the `strata-cluster` controller sends them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Admin {
    /// The layout as text (CLUSTER MAP).
    Map,
    /// Adds node `id`, reached by clients at `client` and by other nodes at `raft`; it holds
    /// nothing until a rebalance gives it replicas.
    AddNode {
        /// Its id (above 0).
        id: u64,
        /// `host:port` for clients.
        client: String,
        /// `host:port` of its Raft transport.
        raft: String,
    },
    /// Moves every replica off node `id` (it is marked leaving).
    RemoveNode(u64),
    /// Drops a leaving node that holds nothing any more from the layout.
    ForgetNode(u64),
    /// Spreads replicas and preferred leaders evenly over the active nodes.
    Rebalance,
    /// Gives `slot` to `partition` in the map's slot table (the last step but one of a
    /// slot move: clients are sent there from then on).
    MoveSlot {
        /// The slot.
        slot: u16,
        /// Its partition from now on.
        partition: u16,
    },
}

/// The cluster's answer for a slot. Implementations are shared by every connection and must
/// answer without blocking (they read a layout the replication layer keeps current).
pub trait Router: Send + Sync {
    /// Where a command on `slot` runs: `write` for a command that writes; `readonly` when the
    /// connection sent READONLY, so a replica of the slot may serve its reads (stale, as a
    /// Redis Cluster replica's).
    fn route(&self, slot: u16, write: bool, readonly: bool) -> Route;

    /// Like [`Router::route`], for a slot [`Router::route`] found no node for: a node whose
    /// replica of the slot's partition knows no leader (an election, or a leadership being
    /// handed over during a rebalance) waits a moment for one before it answers, so clients
    /// get a redirect rather than an error. May block (an async worker's other tasks are
    /// handed off first).
    fn route_waiting(&self, slot: u16, write: bool, readonly: bool) -> Route {
        self.route(slot, write, readonly)
    }

    /// Readies a command on `slot` that [`Router::route`] answered [`Route::Local`] for, just
    /// before it runs: a replicated node waits here until its state holds every write the
    /// command must see (a barrier through its Raft group). May block (an async worker's other
    /// tasks are handed off first). An `Err` is the error reply, and the command does not run.
    fn prepare(&self, slot: u16, write: bool, readonly: bool) -> Result<(), String> {
        let _ = (slot, write, readonly);
        Ok(())
    }

    /// The partition whose view of the store a command on `slot` runs against
    /// (`crate::filing`); `None` when the store is not partitioned.
    fn partition_of(&self, slot: u16) -> Option<u16> {
        let _ = slot;
        None
    }

    /// Admits a write command on `slot` that [`Router::prepare`] readied, or refuses it
    /// (the error reply: `TRYAGAIN` while the slot is being frozen for a move). The write
    /// is to be proposed while the admission is held.
    fn admit_write(&self, slot: u16) -> Result<Option<Admission>, String> {
        let _ = slot;
        Ok(None)
    }

    /// Waits (a few seconds at most) while `slot` is in the freeze of a move here, for the
    /// move to hand it off. May block (an async worker's other tasks are handed off first).
    fn wait_for_move(&self, slot: u16) {
        let _ = slot;
    }

    /// For a command sent with ASKING: when a partition this node leads is importing `slot`,
    /// waits (a few seconds at most) for it to adopt the slot; whether it did. May block.
    fn wait_for_adopt(&self, slot: u16) -> bool {
        let _ = slot;
        false
    }

    /// A step of a slot move (`strata-cluster move-slots`) on `partition`, which this node
    /// must lead: `op` is `import`, `freeze`, `handoff`, `adopt` or `release`, `peer` the
    /// other partition. `Ok` is the reply text; `Err` the error reply (`REDIRECT host:port`
    /// when another node leads it). May block.
    fn move_step(&self, partition: u16, op: &str, slot: u16, peer: u16) -> Result<String, String> {
        let _ = (partition, op, slot, peer);
        Err("ERR this node does not move slots".into())
    }

    /// Whether this node may serve the copy of `slot` from `partition` (`export`) or take
    /// it into `partition` (`!export`): it leads the partition, past its read barrier, and
    /// the slot is being copied out, frozen or handed off there (export) or being imported
    /// (import).
    fn check_copy(&self, partition: u16, slot: u16, export: bool) -> Result<(), String> {
        let _ = (partition, slot, export);
        Err("ERR this node does not move slots".into())
    }

    /// Proposes `entry`, a page of a slot's copy as an ingest entry (`cluster::ingest`), to
    /// `partition`, which this node must lead; how many records it wrote. May block.
    fn ingest_copy(&self, partition: u16, entry: Vec<u8>) -> Result<usize, String> {
        let _ = (partition, entry);
        Err("ERR this node does not move slots".into())
    }

    /// The cluster's layout as this node knows it (CLUSTER SLOTS, NODES, INFO).
    fn layout(&self) -> Layout;

    /// `field:value` lines for INFO's `# Cluster` section, after `cluster_enabled:1`.
    fn info(&self) -> Vec<(String, String)> {
        Vec::new()
    }

    /// Carries out `op` ([`Admin`]); `Ok` is the reply text, `Err` the error reply (a node
    /// that does not lead the meta group answers `REDIRECT <host>:<port>` of the one that
    /// does, as far as it knows).
    fn admin(&self, op: Admin) -> Result<String, String> {
        let _ = op;
        Err("ERR this node does not keep a cluster map".into())
    }

    /// WAIT's marks: for each partition this node leads, its group and the last index of its
    /// Raft log now (every write acknowledged here so far is at or below it).
    fn replication_marks(&self) -> Vec<(u32, u64)> {
        Vec::new()
    }

    /// WAIT's count: the fewest, over the partitions of `marks`, of the other replicas whose
    /// log holds the partition's mark (0 for one this node no longer leads, or no marks).
    fn replicas_holding(&self, marks: &[(u32, u64)]) -> usize {
        let _ = marks;
        0
    }

    /// `field:value` lines for INFO's `# Replication` section in place of a standalone
    /// server's (`role:master`, no replicas); `None` keeps those.
    fn replication_info(&self) -> Option<Vec<(String, String)>> {
        None
    }
}
