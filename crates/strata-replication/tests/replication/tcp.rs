//! A group replicated over TCP on loopback: three nodes, each with its own `Db`, listening
//! on a port of its own; the addresses travel in the membership.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::RwLock;
use strata_replication::kv::{KvApp, KvCommand};
use strata_replication::transport::tcp::{TcpServer, TcpTransport};
use strata_replication::{GroupId, NodeStorage, OnEmpty, Peer, RaftNode};

use crate::harness::{checksum, find_leader, settings, write, Node, WAIT};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_replicates_over_tcp_and_survives_losing_a_node() {
    let root = tempfile::tempdir().unwrap();
    let g = GroupId(3);
    let live: Arc<RwLock<BTreeMap<u64, Node>>> = Arc::new(RwLock::new(BTreeMap::new()));
    let mut servers = BTreeMap::new();
    let mut members = BTreeMap::new();
    for id in 1..=3u64 {
        let db = Arc::new(
            strata_replication::open_db(
                &strata::Options::default(),
                root.path().join(format!("n{id}/db")),
                &[],
            )
            .unwrap(),
        );
        let storage = NodeStorage::open(db, root.path().join(format!("n{id}/snapshots"))).unwrap();
        let transport = TcpTransport::new();
        let node =
            RaftNode::new(id, storage, Arc::new(KvApp), Arc::new(transport), settings()).unwrap();
        node.open_group(g, OnEmpty::NewGroup).await.unwrap();
        let server = TcpServer::bind("127.0.0.1:0", node.clone()).await.unwrap();
        members.insert(id, Peer { addr: server.addr().to_string() });
        servers.insert(id, server);
        live.write().insert(id, node);
    }
    // Only the membership tells the nodes where the others listen.
    let first = live.read()[&1].clone();
    first.replica(g).unwrap().initialize(members).await.unwrap();
    for i in 0..30 {
        let cmd = KvCommand::Append { key: b"k".to_vec(), suffix: format!("{i};").into_bytes() };
        write(&live, g, &cmd).await.unwrap();
    }
    // Lose a follower: the other two go on.
    let leader = find_leader(&live, g).unwrap();
    let gone = (1..=3).find(|n| *n != leader).unwrap();
    servers.remove(&gone);
    let node = live.write().remove(&gone).unwrap();
    node.shutdown().await;
    for i in 30..40 {
        let cmd = KvCommand::Append { key: b"k".to_vec(), suffix: format!("{i};").into_bytes() };
        write(&live, g, &cmd).await.unwrap();
    }
    let mut want = String::new();
    for i in 0..40 {
        want.push_str(&i.to_string());
        want.push(';');
    }
    let nodes: Vec<Node> = live.read().values().cloned().collect();
    let last = nodes.iter().filter_map(|n| n.replica(g).unwrap().status().last_log_index).max();
    let mut sums = Vec::new();
    for n in &nodes {
        let r = n.replica(g).unwrap();
        r.wait_for("apply everything", WAIT, move |s| s.applied.map(|a| a.index) >= last)
            .await
            .unwrap();
        let data = KvApp::scan(n.storage().db(), g).unwrap();
        assert_eq!(data, [(b"k".to_vec(), want.clone().into_bytes())]);
        sums.push(checksum(&data));
    }
    assert!(sums.windows(2).all(|w| w[0] == w[1]));
    for n in nodes {
        n.shutdown().await;
    }
}
