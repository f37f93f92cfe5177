//! Moving the groups toward the cluster map ([`ClusterNode::reconcile`]): every node runs a
//! round each second and whenever a new map is applied. A round does only what this node
//! is in a position to do, so rounds on all nodes together carry out a map change:
//!
//! - **Its replicas**: it opens a replica of each partition the map gives it (on empty
//!   storage it catches up from the group's leader before it votes: `rejoin`), and deletes
//!   its replica of a partition the map no longer gives it once the group's leader no longer
//!   lists this node (the leader demoted it to a learner, then removed it:
//!   `RaftNode::leave_group`). A learner's copy is needed neither for a quorum nor for
//!   durability, but a leader still listing the node would take a new replica opened here
//!   for the deleted one, as far along as that one was.
//! - **Partitions it leads** (desired replicas `D`, voters `V`): adds each node of `D` that
//!   is not a member as a learner; once every learner of `D` has caught up (within
//!   [`CAUGHT_UP`] entries of the leader's log), makes `D` the voters, demoting the others to
//!   learners (when the leader itself is not in `D`, first `D` plus itself, then it hands its
//!   leadership to the first of `D`, whose own rounds finish); then removes learners not in
//!   `D`. One membership change at a time: nothing is started while one is in joint
//!   consensus.
//! - **The meta group, on its leader**: commits a new cluster's first map (computed from the
//!   settings every node was started with); adds every node of the map as a member (the
//!   first few voters: `ClusterMap::meta_voters`, the rest learners); removes members that
//!   are no longer nodes of the map.
//!
//! Each step is idempotent and rechecks the state it acts on, so a round that fails (a
//! timeout, a leader change) is simply followed by the next one.

use std::collections::BTreeSet;

use strata_replication::{GroupId, GroupStatus, Left, NodeId, OnEmpty, Peer, Replica, Role};

use super::map::{draw_cluster_id, encode_change, ClusterMap, APPLIED, META};
use super::node::ClusterNode;

/// How many entries behind the leader a learner may be and still be promoted: promoting a
/// learner that is far behind would stall commits until it catches up.
pub const CAUGHT_UP: u64 = 64;

/// What a round did (for the info LOG and tests).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Round {
    /// Replicas opened here.
    pub opened: Vec<u16>,
    /// Replicas deleted here.
    pub dropped: Vec<u16>,
    /// Membership changes and leadership transfers started, as text.
    pub changes: Vec<String>,
    /// Failures met (the next round retries).
    pub errors: Vec<String>,
}

impl Round {
    /// Whether it did or met nothing.
    pub fn is_empty(&self) -> bool {
        self.opened.is_empty()
            && self.dropped.is_empty()
            && self.changes.is_empty()
            && self.errors.is_empty()
    }
}

/// Whether `node` is caught up with the leader whose status is `st`.
fn caught_up(st: &GroupStatus, node: NodeId) -> bool {
    let last = st.last_log_index.unwrap_or(0);
    let matched = st.replication.get(&node).copied().flatten();
    matched.is_some_and(|m| m + CAUGHT_UP >= last)
}

impl ClusterNode {
    /// One round (see the module's text). Blocks: run it off the async workers.
    pub fn reconcile(&self) -> Round {
        let mut round = Round::default();
        let map = self.map();
        self.reconcile_meta(&map, &mut round);
        // Until the first map is committed, the groups are the ones the settings created.
        if map.version > 0 {
            self.reconcile_replicas(&map, &mut round);
            for (p, desired) in map.placement.iter().enumerate() {
                let Some(replica) = self.raft().replica(GroupId(p as u32)) else { continue };
                if !desired.is_empty() && replica.leadership().role == Role::Leader {
                    self.reconcile_partition(&map, &replica, desired, &mut round);
                }
            }
        }
        if !round.is_empty() {
            self.store().db.log_info(&format!("cluster map {}: {round:?}", map.version));
        }
        round
    }

    /// Opens the replicas the map gives this node and deletes those it no longer does.
    fn reconcile_replicas(&self, map: &ClusterMap, round: &mut Round) {
        let me = self.raft().id();
        let mine: BTreeSet<u16> = map.held_by(me).into_iter().collect();
        for p in &mine {
            let g = GroupId(u32::from(*p));
            if self.raft().replica(g).is_some() {
                continue;
            }
            match self.block(self.raft().open_group(g, OnEmpty::CatchUp)) {
                Ok(_) => round.opened.push(*p),
                Err(e) => round.errors.push(format!("open partition {p}: {e}")),
            }
        }
        for g in self.raft().groups() {
            // Partitions only: the meta group's id is above every u16.
            let Ok(p) = u16::try_from(g.0) else { continue };
            if mine.contains(&p) {
                continue;
            }
            // Kept while it votes or its leader lists this node (`RaftNode::leave_group`),
            // which it asks, or else the replicas the map gives the partition.
            let hints: Vec<(NodeId, Peer)> = map
                .placement
                .get(usize::from(p))
                .into_iter()
                .flatten()
                .filter_map(|id| map.nodes.get(id).map(|n| (*id, n.peer())))
                .collect();
            match self.block(self.raft().leave_group(g, &hints)) {
                Ok(Left::Removed) => round.dropped.push(p),
                Ok(Left::Member) => {}
                Ok(Left::Unknown(why)) => round.errors.push(format!("drop partition {p}: {why}")),
                Err(e) => round.errors.push(format!("drop partition {p}: {e}")),
            }
        }
    }

    /// A partition this node leads: members toward `desired`.
    fn reconcile_partition(
        &self,
        map: &ClusterMap,
        replica: &Replica,
        desired: &[NodeId],
        round: &mut Round,
    ) {
        let me = self.raft().id();
        let g = replica.group();
        let st = replica.status();
        let m = &st.membership.membership;
        if m.configs.len() > 1 {
            return; // a change is under way
        }
        let voters = m.voters();
        let want: BTreeSet<NodeId> = desired.iter().copied().collect();
        let mut failed = |what: String, e: strata_replication::Error| {
            round.errors.push(format!("{g}: {what}: {e}"));
        };
        let missing: Vec<NodeId> =
            desired.iter().copied().filter(|d| !m.nodes.contains_key(d)).collect();
        if !missing.is_empty() {
            for d in missing {
                let Some(n) = map.nodes.get(&d) else { continue };
                match self.wait("a learner's addition", replica.begin_add_learner(d, n.peer())) {
                    Ok(()) => round.changes.push(format!("{g}: node {d} added as a learner")),
                    Err(e) => failed(format!("add node {d} as a learner"), e),
                }
            }
            return;
        }
        if voters != want {
            if !want.iter().all(|d| voters.contains(d) || caught_up(&st, *d)) {
                return; // learners still catching up
            }
            let mut target = want.clone();
            if !want.contains(&me) {
                target.insert(me);
                if voters == target {
                    // Every desired replica votes: hand over, and the new leader demotes
                    // this one.
                    let to = desired[0];
                    match self.wait("a leadership transfer", replica.transfer_leader(to)) {
                        Ok(()) => round.changes.push(format!("{g}: leadership to node {to}")),
                        Err(e) => failed(format!("transfer leadership to node {to}"), e),
                    }
                    return;
                }
            }
            match self.wait("a membership change", replica.demote_to(target.clone())) {
                Ok(()) => round.changes.push(format!("{g}: voters {target:?}")),
                Err(e) => failed(format!("make {target:?} the voters"), e),
            }
            return;
        }
        let extra: BTreeSet<NodeId> =
            m.nodes.keys().copied().filter(|n| !want.contains(n)).collect();
        if !extra.is_empty() {
            match self.wait("a learners' removal", replica.remove_learners(extra.clone())) {
                Ok(()) => round.changes.push(format!("{g}: learners {extra:?} removed")),
                Err(e) => failed(format!("remove learners {extra:?}"), e),
            }
        }
    }

    /// The meta group, on its leader: the first map, and members toward the map's nodes.
    fn reconcile_meta(&self, map: &ClusterMap, round: &mut Round) {
        let Some(replica) = self.raft().replica(META) else { return };
        if replica.leadership().role != Role::Leader {
            return;
        }
        let stored = match ClusterMap::load(self.store()) {
            Ok(m) => m,
            Err(e) => {
                round.errors.push(e);
                return;
            }
        };
        if stored.is_none() && map.version == 0 && !map.placement.iter().all(Vec::is_empty) {
            // A new cluster: every node computed the same first map from its settings.
            let first = ClusterMap { version: 1, id: draw_cluster_id(), ..map.clone() };
            let outcome = match self.wait("the first map", replica.write(encode_change(0, &first)))
            {
                Ok((_, reply)) if reply.0 == APPLIED => Ok(()),
                Ok((_, reply)) => Err(String::from_utf8_lossy(&reply.0).into_owned()),
                Err(e) => Err(e.to_string()),
            };
            match outcome {
                Ok(()) => round.changes.push("first map committed".into()),
                Err(e) => round.errors.push(format!("first map: {e}")),
            }
            return;
        }
        let Some(map) = stored else { return };
        let st = replica.status();
        let m = &st.membership.membership;
        if m.configs.len() > 1 {
            return;
        }
        for (id, n) in &map.nodes {
            if !m.nodes.contains_key(id) {
                match self.wait("a learner's addition", replica.begin_add_learner(*id, n.peer())) {
                    Ok(()) => round.changes.push(format!("meta: node {id} added as a learner")),
                    Err(e) => round.errors.push(format!("meta: add node {id}: {e}")),
                }
                return;
            }
        }
        let voters = m.voters();
        let want = map.meta_voters(&voters);
        if voters != want {
            if want.iter().all(|d| voters.contains(d) || caught_up(&st, *d)) {
                match self.wait("a membership change", replica.demote_to(want.clone())) {
                    Ok(()) => round.changes.push(format!("meta: voters {want:?}")),
                    Err(e) => round.errors.push(format!("meta: voters {want:?}: {e}")),
                }
            }
            return;
        }
        let gone: BTreeSet<NodeId> =
            m.nodes.keys().copied().filter(|n| !map.nodes.contains_key(n)).collect();
        if !gone.is_empty() {
            match self.wait("a learners' removal", replica.remove_learners(gone.clone())) {
                Ok(()) => round.changes.push(format!("meta: {gone:?} removed")),
                Err(e) => round.errors.push(format!("meta: remove {gone:?}: {e}")),
            }
        }
    }

    /// Runs `f` on the Raft runtime from a thread off its workers and waits for it.
    fn block<T>(&self, f: impl std::future::Future<Output = T>) -> T {
        self.runtime().block_on(f)
    }
}
