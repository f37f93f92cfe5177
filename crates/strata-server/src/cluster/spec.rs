//! The cluster a node belongs to, from its settings ([`ClusterSpec::from_config`]): every
//! node's id and addresses, the partitions and the replicas per partition.
//!
//! `--cluster-nodes 1=127.0.0.1:7001:17001,2=...` names every node: its id, the host and
//! port clients reach it on, and the port of its Raft transport (same host). Every node of a
//! new cluster is started with the same list, partitions and replicas, so every node computes
//! the same first map from them ([`ClusterSpec::initial_map`]): partition `p`'s replicas are
//! the `replicas` nodes after position `p mod n` in the sorted id list (wrapping), the first
//! of them its preferred leader, which creates the group when the cluster starts the first
//! time. So partitions and their leaders spread evenly. A node joining a running cluster
//! names only itself: its map comes from the meta group (`super::map`).
//!
//! `--cluster-bootstrap yes` says that the cluster is new: a node whose directory is empty
//! creates its groups (its preferred ones) and votes at once. Without it, a node on an empty
//! directory takes it that it lost its data (or is new to groups that exist): it catches up
//! from the leaders before it votes (`strata_replication::rejoin`). Empty storage alone cannot
//! tell the two apart; on a directory that holds a replica's state the setting changes
//! nothing.

use std::collections::BTreeMap;

use strata_replication::{NodeId, RaftSettings};

use super::map::{ClusterMap, MapNode, NodeState};
use super::partitions::Partitions;
use crate::config::{Config, DEFAULT_NODE_TIMEOUT_MS};

/// The partitions a cluster gets when none are configured.
pub const DEFAULT_PARTITIONS: u16 = 16;
/// The replicas per partition when none are configured (fewer when there are fewer nodes).
pub const DEFAULT_REPLICAS: usize = 3;

/// Where a node is reached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeAddrs {
    /// `host:port` for clients.
    pub client: String,
    /// `host:port` of its Raft transport.
    pub raft: String,
}

impl NodeAddrs {
    /// Parses `host:port:raft_port` (both ports on the host); `None` when it is not one.
    pub fn parse(addr: &str) -> Option<NodeAddrs> {
        let mut parts = addr.rsplitn(3, ':');
        let (raft, port, host) = (parts.next()?, parts.next()?, parts.next()?);
        if raft.parse::<u16>().is_err() || port.parse::<u16>().is_err() || host.is_empty() {
            return None;
        }
        Some(NodeAddrs { client: format!("{host}:{port}"), raft: format!("{host}:{raft}") })
    }
}

/// A node's view of its cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterSpec {
    /// This node.
    pub id: NodeId,
    /// Every node.
    pub nodes: BTreeMap<NodeId, NodeAddrs>,
    /// The slots' partitions.
    pub partitions: Partitions,
    /// Replicas per partition.
    pub replicas: u8,
    /// `cluster-bootstrap yes`: this node's empty storage belongs to a new cluster.
    pub bootstrap: bool,
    /// `cluster-node-timeout`: the Raft timing of every group on the node.
    pub node_timeout: NodeTimeout,
}

/// `cluster-node-timeout`, in milliseconds: how long a replica goes without its leader's word
/// before it calls an election. Redis's setting of that name is its failure detection time
/// (15 s by default there); here each group's election timeout is drawn between half of it
/// and it, and leaders send heartbeats every sixth of it. A node leading many groups sends a
/// heartbeat per group and follower: a longer timeout spends less of the machine on them,
/// and a leader's failure is noticed later.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeTimeout(pub u64);

impl NodeTimeout {
    /// The default: elections after 150-300 ms, heartbeats every 50 ms.
    pub const DEFAULT: NodeTimeout = NodeTimeout(DEFAULT_NODE_TIMEOUT_MS);
    /// The least accepted: heartbeats every 10 ms.
    pub const MIN: u64 = 60;
    /// The most accepted: an hour.
    pub const MAX: u64 = 3_600_000;

    /// The timeout `ms`, or an error naming the setting and the accepted range.
    pub fn new(ms: u64) -> Result<NodeTimeout, String> {
        if (Self::MIN..=Self::MAX).contains(&ms) {
            Ok(NodeTimeout(ms))
        } else {
            Err(format!(
                "cluster-node-timeout {ms}: expected {} to {} milliseconds",
                Self::MIN,
                Self::MAX
            ))
        }
    }

    /// Every group's Raft timing on the node, from this timeout.
    pub fn raft_settings(self) -> RaftSettings {
        RaftSettings {
            heartbeat_ms: self.0 / 6,
            election_timeout_ms: (self.0 / 2, self.0),
            ..RaftSettings::default()
        }
    }
}

impl ClusterSpec {
    /// The cluster `cfg` describes; `None` when cluster mode is off; an error naming the
    /// setting and what was expected when the settings do not describe one.
    pub fn from_config(cfg: &Config) -> Result<Option<ClusterSpec>, String> {
        let c = &cfg.cluster;
        if !c.enabled {
            return Ok(None);
        }
        let list = c.nodes.as_deref().ok_or("cluster-enabled yes needs cluster-nodes")?;
        let nodes = parse_nodes(list)?;
        let id = c.node_id.ok_or("cluster-enabled yes needs cluster-node-id")?;
        let me = nodes.get(&id).ok_or_else(|| {
            format!(
                "cluster-node-id {id} is not in cluster-nodes (ids {:?})",
                nodes.keys().collect::<Vec<_>>()
            )
        })?;
        let port = me.client.rsplit(':').next().and_then(|p| p.parse::<u16>().ok());
        if cfg.port != 0 && port != Some(cfg.port) {
            return Err(format!(
                "port {} differs from node {id}'s client address {} in cluster-nodes",
                cfg.port, me.client
            ));
        }
        let count = c.partitions.unwrap_or(DEFAULT_PARTITIONS);
        let partitions = Partitions::new(count)
            .ok_or_else(|| format!("cluster-partitions {count}: expected 1 to 16384"))?;
        let replicas = c.replicas.unwrap_or(DEFAULT_REPLICAS.min(nodes.len()));
        // A node joining a running cluster names itself alone (the map comes from the meta
        // group); a new cluster's nodes must be enough for the replicas, but for a cluster
        // of one, which the others join (`strata-cluster create`): its partitions get their
        // replicas as nodes are added.
        if replicas == 0 || (c.bootstrap && nodes.len() > 1 && replicas > nodes.len()) {
            return Err(format!(
                "cluster-replicas {replicas}: expected 1 to the number of nodes ({})",
                nodes.len()
            ));
        }
        let replicas = u8::try_from(replicas)
            .map_err(|_| format!("cluster-replicas {replicas}: expected at most 255"))?;
        let node_timeout = c.node_timeout.map_or(Ok(NodeTimeout::DEFAULT), NodeTimeout::new)?;
        Ok(Some(ClusterSpec {
            id,
            nodes,
            partitions,
            replicas,
            bootstrap: c.bootstrap,
            node_timeout,
        }))
    }

    /// The map of a new cluster of these settings (version 0: not committed yet; the meta
    /// group's first leader commits it as version 1): partition `p`'s replicas are the
    /// `replicas` nodes from position `p mod n` of the sorted ids (`placement::initial`).
    pub fn initial_map(&self) -> ClusterMap {
        let ids: Vec<NodeId> = self.nodes.keys().copied().collect();
        let replicas = usize::from(self.replicas).min(ids.len());
        let nodes = self
            .nodes
            .iter()
            .map(|(id, a)| (*id, MapNode { addrs: a.clone(), state: NodeState::Active }))
            .collect();
        ClusterMap {
            version: 0,
            partitions: self.partitions.count(),
            replicas: self.replicas,
            nodes,
            placement: super::placement::initial(&ids, self.partitions.count(), replicas),
            moved: std::collections::BTreeMap::new(),
            id: 0,
        }
    }
}

/// Parses `id=host:port:raft_port,...`.
fn parse_nodes(list: &str) -> Result<BTreeMap<NodeId, NodeAddrs>, String> {
    let mut nodes = BTreeMap::new();
    for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let bad = || format!("cluster-nodes entry `{item}`: expected id=host:port:raft_port");
        let (id, addr) = item.split_once('=').ok_or_else(bad)?;
        let id: NodeId = id.trim().parse().ok().filter(|n| *n > 0).ok_or_else(bad)?;
        let addrs = NodeAddrs::parse(addr).ok_or_else(bad)?;
        if nodes.insert(id, addrs).is_some() {
            return Err(format!("cluster-nodes names node {id} twice"));
        }
    }
    if nodes.is_empty() {
        return Err("cluster-nodes names no node".into());
    }
    Ok(nodes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{ClusterOptions, Flags};

    fn cfg(port: u16, c: ClusterOptions) -> Config {
        let mut cfg = Config::resolve(Flags::default()).unwrap();
        cfg.port = port;
        cfg.cluster = c;
        cfg
    }

    fn opts(
        id: u64,
        nodes: &str,
        partitions: Option<u16>,
        replicas: Option<usize>,
    ) -> ClusterOptions {
        ClusterOptions {
            enabled: true,
            node_id: Some(id),
            nodes: Some(nodes.into()),
            partitions,
            replicas,
            bootstrap: true,
            node_timeout: None,
        }
    }

    const FIVE: &str = "1=127.0.0.1:7001:17001,2=127.0.0.1:7002:17002,3=127.0.0.1:7003:17003,\
                        4=127.0.0.1:7004:17004,5=127.0.0.1:7005:17005";

    #[test]
    fn placement_spreads_partitions_and_leaders() {
        let s =
            ClusterSpec::from_config(&cfg(7002, opts(2, FIVE, Some(64), None))).unwrap().unwrap();
        assert_eq!(
            s.nodes[&3],
            NodeAddrs { client: "127.0.0.1:7003".into(), raft: "127.0.0.1:17003".into() }
        );
        let m = s.initial_map();
        assert_eq!((m.version, m.replicas, m.nodes.len()), (0, 3, 5));
        assert_eq!(m.placement.len(), 64);
        assert_eq!(m.placement[0], vec![1, 2, 3]);
        assert_eq!(m.placement[4], vec![5, 1, 2]);
        // Pegasus's shape: 64 partitions, 3 replicas on 5 nodes: each node holds 38 or 39,
        // and leads 12 or 13.
        for n in 1..=5u64 {
            let held = m.held_by(n).len();
            let led = m.placement.iter().filter(|r| r[0] == n).count();
            assert!(
                (38..=39).contains(&held) && (12..=13).contains(&led),
                "node {n}: {held} {led}"
            );
        }
        // Fewer nodes than the default replicas: every node holds every partition.
        let two = "1=h:1:2,2=h:3:4";
        let s = ClusterSpec::from_config(&cfg(0, opts(1, two, None, None))).unwrap().unwrap();
        assert!(s.initial_map().placement.iter().all(|r| r.len() == 2));
        assert_eq!(s.partitions.count(), DEFAULT_PARTITIONS);
    }

    #[test]
    fn node_addresses_parse_with_both_ports() {
        let a = NodeAddrs::parse("::1:7001:17001").unwrap();
        assert_eq!((a.client.as_str(), a.raft.as_str()), ("::1:7001", "::1:17001"));
        for bad in ["h:1", ":1:2", "h:1:x", "h:70000:2", ""] {
            assert_eq!(NodeAddrs::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_node_timeout_sets_every_groups_raft_timing() {
        let spec = |o| ClusterSpec::from_config(&cfg(0, o)).map(|s| s.unwrap().node_timeout);
        let s = spec(opts(1, FIVE, None, None)).unwrap().raft_settings();
        assert_eq!((s.heartbeat_ms, s.election_timeout_ms), (50, (150, 300)), "the default");
        let mut o = opts(1, FIVE, None, None);
        o.node_timeout = Some(1500);
        let s = spec(o).unwrap().raft_settings();
        assert_eq!((s.heartbeat_ms, s.election_timeout_ms), (250, (750, 1500)));
        for bad in [0, 59, 3_600_001] {
            let mut o = opts(1, FIVE, None, None);
            o.node_timeout = Some(bad);
            let e = spec(o).unwrap_err();
            assert!(e.contains(&format!("cluster-node-timeout {bad}: expected 60 to")), "{e}");
        }
        // From a config file, as Redis writes it, and refused when not a number.
        let dir = tempfile::tempdir().unwrap();
        let conf = dir.path().join("node.conf");
        std::fs::write(&conf, "cluster-node-timeout 900\n").unwrap();
        let flags = Flags { config_file: Some(conf.clone()), ..Flags::default() };
        assert_eq!(Config::resolve(flags).unwrap().cluster.node_timeout, Some(900));
        std::fs::write(&conf, "cluster-node-timeout soon\n").unwrap();
        let flags = Flags { config_file: Some(conf), ..Flags::default() };
        assert!(Config::resolve(flags).unwrap_err().contains("cluster-node-timeout"));
    }

    #[test]
    fn bad_settings_name_what_is_wrong() {
        let err = |port, o| ClusterSpec::from_config(&cfg(port, o)).unwrap_err();
        assert!(err(0, opts(9, FIVE, None, None)).contains("cluster-node-id 9 is not in"));
        assert!(err(7001, opts(2, FIVE, None, None)).contains("port 7001 differs"));
        assert!(err(0, opts(1, FIVE, Some(0), None)).contains("cluster-partitions 0"));
        assert!(err(0, opts(1, FIVE, None, Some(6))).contains("cluster-replicas 6"));
        // A cluster of one that others will join may want more replicas than it has nodes.
        let one = "1=127.0.0.1:7001:17001";
        let spec = ClusterSpec::from_config(&cfg(7001, opts(1, one, None, Some(3)))).unwrap();
        assert_eq!(spec.map(|s| s.replicas), Some(3));
        assert!(err(0, opts(1, "1=127.0.0.1:7001", None, None))
            .contains("expected id=host:port:raft_port"));
        assert!(err(0, opts(1, "x=h:1:2", None, None)).contains("`x=h:1:2`"));
        assert!(err(0, opts(1, "1=h:1:2,1=h:3:4", None, None)).contains("twice"));
        let mut o = opts(1, FIVE, None, None);
        o.nodes = None;
        assert!(err(0, o).contains("needs cluster-nodes"));
        assert_eq!(ClusterSpec::from_config(&cfg(0, ClusterOptions::default())).unwrap(), None);
        // From the flags and the file.
        let flags = Flags { cluster_enabled: Some("maybe".into()), ..Flags::default() };
        assert!(Config::resolve(flags).unwrap_err().contains("cluster-enabled `maybe`"));
        let flags = Flags { cluster_bootstrap: Some("new".into()), ..Flags::default() };
        assert!(Config::resolve(flags).unwrap_err().contains("cluster-bootstrap `new`"));
    }
}
