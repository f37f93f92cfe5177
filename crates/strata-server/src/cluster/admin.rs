//! Changes to the cluster map ([`ClusterNode::map_admin`]), carried out by the node leading the
//! meta group: it confirms its leadership and reads the map it has applied (a linearizable
//! read of the meta group), computes the new map, and commits it through the meta group as a
//! change from that version (`super::map`). A change committed between the read and the
//! proposal makes it `stale`, and the caller retries.
//!
//! - ADDNODE adds an active node holding nothing yet (the same node and addresses again is
//!   not an error: a controller may retry).
//! - REMOVENODE marks a node leaving and moves its replicas to the active nodes
//!   (`placement::rebalance`); the partitions' leaders carry the moves out (`reconcile`).
//! - FORGETNODE drops a leaving node that the map gives no replica any more; the controller
//!   calls it once the node reports holding nothing.
//! - REBALANCE spreads replicas and preferred leaders over the active nodes.

use std::fmt::Write as _;

use strata_replication::{NodeId, Role};

use super::map::{draw_cluster_id, encode_change, ClusterMap, MapNode, NodeState, APPLIED, META};
use super::node::ClusterNode;
use super::placement::rebalance;
use super::spec::NodeAddrs;
use crate::routing::Admin;

impl ClusterNode {
    /// Carries out `op` (see the module's text): `Ok` is the reply text, `Err` the error
    /// reply.
    pub fn map_admin(&self, op: Admin) -> Result<String, String> {
        let current = self.meta_read()?;
        if op == Admin::Map {
            return Ok(describe(&current));
        }
        let mut new = current.clone();
        match op {
            Admin::Map => {}
            Admin::AddNode { id, client, raft } => {
                if id == 0 {
                    return Err("ERR node ids start at 1".into());
                }
                let addrs = NodeAddrs { client, raft };
                if let Some(n) = current.nodes.get(&id) {
                    if n.addrs == addrs && n.state == NodeState::Active {
                        return Ok(format!(
                            "node {id} is in the map (version {})",
                            current.version
                        ));
                    }
                    return Err(format!("ERR node {id} is in the map already, at {:?}", n.addrs));
                }
                new.nodes.insert(id, MapNode { addrs, state: NodeState::Active });
            }
            Admin::RemoveNode(id) => {
                let Some(n) = new.nodes.get_mut(&id) else {
                    return Err(format!("ERR node {id} is not in the map"));
                };
                n.state = NodeState::Leaving;
                let active = active(&new);
                if active.is_empty() {
                    return Err(format!("ERR node {id} is the last active node"));
                }
                new.placement = rebalance(&new.placement, &active, usize::from(new.replicas));
            }
            Admin::ForgetNode(id) => {
                let Some(n) = new.nodes.get(&id) else {
                    return Err(format!("ERR node {id} is not in the map"));
                };
                if n.state != NodeState::Leaving {
                    return Err(format!("ERR node {id} is active: REMOVENODE it first"));
                }
                let held = new.held_by(id);
                if !held.is_empty() {
                    return Err(format!("ERR node {id} still holds {} partitions", held.len()));
                }
                new.nodes.remove(&id);
            }
            Admin::Rebalance => {
                let active = active(&new);
                if active.is_empty() {
                    return Err("ERR the map has no active node".into());
                }
                new.placement = rebalance(&new.placement, &active, usize::from(new.replicas));
                if new.placement == current.placement {
                    return Ok(format!("balanced already (version {})", current.version));
                }
            }
            Admin::MoveSlot { slot, partition } => {
                if slot >= crate::slots::SLOTS || partition >= current.partitions {
                    return Err(format!(
                        "ERR slot {slot} or partition {partition} is out of range (16384 slots, \
                         {} partitions)",
                        current.partitions
                    ));
                }
                if current.partition_of(slot) == partition {
                    return Ok(format!(
                        "slot {slot} is partition {partition}'s (version {})",
                        current.version
                    ));
                }
                if current.runs().of_slot(slot) == partition {
                    new.moved.remove(&slot);
                } else {
                    new.moved.insert(slot, partition);
                }
            }
        }
        new.version = current.version + 1;
        if new.id == 0 {
            // A map written before cluster ids: its first change gives it one.
            new.id = draw_cluster_id();
        }
        let replica = self.raft().replica(META).ok_or("ERR this node holds no meta replica")?;
        let (_, reply) = self
            .wait("the map change", replica.write(encode_change(current.version, &new)))
            .map_err(|e| format!("ERR the map change: {e}"))?;
        if reply.0 != APPLIED {
            return Err(format!(
                "TRYAGAIN the cluster map changed meanwhile ({})",
                String::from_utf8_lossy(&reply.0)
            ));
        }
        Ok(format!("map version {}", new.version))
    }

    /// The map as committed, read on the meta group's leader after a linearizable-read
    /// barrier; elsewhere `REDIRECT <host>:<port>` of the leader it knows.
    fn meta_read(&self) -> Result<ClusterMap, String> {
        let replica = self.raft().replica(META).ok_or("ERR this node holds no meta replica")?;
        let now = replica.leadership();
        if now.role != Role::Leader {
            let map = self.map();
            return Err(match now.leader.and_then(|l| map.client(l)) {
                Some(addr) => format!("REDIRECT {addr}"),
                None => "CLUSTERDOWN the meta group has no leader now".into(),
            });
        }
        self.wait("a meta read barrier", replica.linearizable_read(false))
            .map_err(|e| format!("CLUSTERDOWN the meta group: {e}"))?;
        match ClusterMap::load(self.store()) {
            Ok(Some(m)) => Ok(m),
            Ok(None) => Err("CLUSTERDOWN the cluster's first map is not committed yet".into()),
            Err(e) => Err(format!("ERR {e}")),
        }
    }
}

/// The active nodes of `map`, in id order.
fn active(map: &ClusterMap) -> Vec<NodeId> {
    map.nodes.iter().filter(|(_, n)| n.state == NodeState::Active).map(|(id, _)| *id).collect()
}

/// CLUSTER MAP's text:
///
/// ```text
/// version <v>
/// partitions <p> replicas <r>
/// node <id> <client host:port> <raft host:port> active|leaving
/// partition <p> <replica ids, preferred leader first, comma-separated>
/// slot <s> partition <p>          (each slot moved out of its partition's run)
/// ```
pub fn describe(map: &ClusterMap) -> String {
    let mut t = format!("version {}\n", map.version);
    if map.id != 0 {
        let _ = writeln!(t, "cluster {:016x}", map.id);
    }
    let _ = writeln!(t, "partitions {} replicas {}", map.partitions, map.replicas);
    for (id, n) in &map.nodes {
        let state = match n.state {
            NodeState::Active => "active",
            NodeState::Leaving => "leaving",
        };
        let _ = writeln!(t, "node {id} {} {} {state}", n.addrs.client, n.addrs.raft);
    }
    for (p, ids) in map.placement.iter().enumerate() {
        let ids: Vec<String> = ids.iter().map(ToString::to_string).collect();
        let _ = writeln!(t, "partition {p} {}", ids.join(","));
    }
    for (slot, p) in &map.moved {
        let _ = writeln!(t, "slot {slot} partition {p}");
    }
    t
}
