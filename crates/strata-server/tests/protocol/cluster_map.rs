//! The cluster map over loopback: three nodes start a cluster of four partitions with three
//! replicas each; a fourth node, started naming only itself, is added with CLUSTER ADDNODE
//! and takes its share after CLUSTER REBALANCE (its replicas join as learners, catch up and
//! become voters); then node 1 is removed (CLUSTER REMOVENODE moves its replicas away; once
//! it holds nothing, FORGETNODE drops it from the map) and stopped. A writer goes on through
//! all of it; every acknowledged write is read back at the end, and every partition's voters
//! are its placement in the map.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::cluster_mode::{free_ports, run, start, Node};
use crate::common::{Raw, Reply};

const WAIT: Duration = Duration::from_secs(60);

/// Sends a map command, following `REDIRECT` to the meta group's leader and waiting out
/// `CLUSTERDOWN` and `TRYAGAIN`.
pub(super) fn admin(port: u16, args: &[&str]) -> String {
    let deadline = Instant::now() + WAIT;
    let mut port = port;
    loop {
        match Raw::connect(port).cmd(args) {
            Reply::Bulk(b) => return String::from_utf8(b).unwrap(),
            Reply::Error(e) if e.starts_with("REDIRECT ") => {
                port = e.rsplit(':').next().unwrap().parse().unwrap();
            }
            Reply::Error(e)
                if e.starts_with("CLUSTERDOWN")
                    || e.starts_with("TRYAGAIN")
                    || e.contains("timed out") =>
            {
                assert!(Instant::now() < deadline, "{args:?}: still {e}");
                std::thread::sleep(Duration::from_millis(100));
            }
            other => panic!("{args:?}: {other:?}"),
        }
    }
}

/// One partition line of INFO cluster: its number and fields.
pub(super) fn partitions(port: u16) -> BTreeMap<u16, BTreeMap<String, String>> {
    let Reply::Bulk(b) = Raw::connect(port).cmd(&["INFO", "cluster"]) else {
        panic!("INFO cluster");
    };
    let mut out = BTreeMap::new();
    for line in String::from_utf8(b).unwrap().lines() {
        let Some((name, fields)) = line.trim().split_once(':') else { continue };
        let Some(p) = name.strip_prefix("partition").and_then(|p| p.parse().ok()) else {
            continue;
        };
        let f = fields
            .split(',')
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        out.insert(p, f);
    }
    out
}

/// Each partition's replicas in the map (`partition <p> <ids>` lines of CLUSTER MAP).
fn placement(map: &str) -> BTreeMap<u16, Vec<u64>> {
    map.lines()
        .filter_map(|l| l.strip_prefix("partition "))
        .map(|l| {
            let (p, ids) = l.split_once(' ').unwrap();
            (p.parse().unwrap(), ids.split(',').map(|i| i.parse().unwrap()).collect())
        })
        .collect()
}

/// Waits until every partition's leader (among `ports`) has exactly its placement as voters
/// and no other member, and every replica of it has caught up.
pub(super) fn settled(ports: &[u16], entry: u16) {
    let deadline = Instant::now() + WAIT;
    loop {
        let map = admin(entry, &["CLUSTER", "MAP"]);
        let want = placement(&map);
        let infos: Vec<_> = ports.iter().map(|p| partitions(*p)).collect();
        let mut done = true;
        for (p, ids) in &want {
            let mut sorted = ids.clone();
            sorted.sort_unstable();
            let voters: String =
                sorted.iter().map(ToString::to_string).collect::<Vec<_>>().join("|");
            let led = infos
                .iter()
                .any(|i| i.get(p).is_some_and(|f| f["role"] == "leader" && f["voters"] == voters));
            let held = infos.iter().filter(|i| i.contains_key(p)).count();
            let caught = infos.iter().all(|i| i.get(p).is_none_or(|f| f["catching_up"] == "0"));
            done &= led && held == ids.len() && caught;
        }
        if done {
            return;
        }
        assert!(Instant::now() < deadline, "not settled on\n{map}\n{infos:#?}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A new cluster of three nodes on loopback, with the ports of a fourth that may join.
pub(super) struct Loopback {
    root: tempfile::TempDir,
    /// Client ports of nodes 1 to 4.
    pub client: Vec<u16>,
    raft: Vec<u16>,
    /// The running nodes; dropping one kills it.
    pub nodes: BTreeMap<u64, Node>,
}

impl Loopback {
    /// Starts nodes 1 to 3 (`--cluster-bootstrap yes`, four partitions of three replicas).
    pub(super) fn start_three() -> Loopback {
        let ports = free_ports(8);
        let (client, raft) = (ports[..4].to_vec(), ports[4..].to_vec());
        let mut l =
            Loopback { root: tempfile::tempdir().unwrap(), client, raft, nodes: BTreeMap::new() };
        let three: Vec<String> = (1..=3).map(|i| format!("{i}={}", l.addr(i))).collect();
        let three = three.join(",");
        for i in 1..=3u64 {
            let node = start(i, &l.dir(i), l.client[i as usize - 1], &three, true);
            l.nodes.insert(i, node);
        }
        l
    }

    /// Node `i`'s `host:port:raft_port`.
    pub(super) fn addr(&self, i: u64) -> String {
        let i = i as usize - 1;
        format!("127.0.0.1:{}:{}", self.client[i], self.raft[i])
    }

    fn dir(&self, i: u64) -> std::path::PathBuf {
        self.root.path().join(format!("node{i}"))
    }

    /// The data directories of the running nodes.
    pub(super) fn dirs(&self) -> Vec<std::path::PathBuf> {
        self.nodes.keys().map(|i| self.dir(*i)).collect()
    }

    /// Starts node `i` (1 to 3) again on its directory, with the flags it first had.
    pub(super) fn restart(&mut self, i: u64) {
        let three: Vec<String> = (1..=3).map(|n| format!("{n}={}", self.addr(n))).collect();
        let node = start(i, &self.dir(i), self.client[i as usize - 1], &three.join(","), true);
        self.nodes.insert(i, node);
    }

    /// Starts node 4 naming only itself, as a node joining the cluster is started.
    pub(super) fn start_fourth(&mut self) {
        let node = start(4, &self.dir(4), self.client[3], &format!("4={}", self.addr(4)), false);
        self.nodes.insert(4, node);
    }
}

#[test]
fn a_node_joins_and_takes_its_share_and_a_node_leaves_while_writes_go_on() {
    let mut cluster = Loopback::start_three();
    let client = cluster.client.clone();
    for i in 0..100 {
        let (k, v) = (format!("key:{i}"), format!("v{i}"));
        assert_eq!(run(client[0], false, &["SET", &k, &v]), Reply::Simple("OK".into()));
    }
    // The first map draws the cluster's id, which the nodes' handshake carries from then on.
    let first = admin(client[0], &["CLUSTER", "MAP"]);
    let id = first.lines().nth(1).and_then(|l| l.strip_prefix("cluster ")).unwrap().to_string();
    assert!(first.starts_with("version 1\n") && id.len() == 16 && id != "0".repeat(16), "{first}");
    assert_eq!(partitions(client[0]).len(), 4, "three nodes hold every partition");

    // A writer goes on through every change; what it had acknowledged is read back at the end.
    let stop = Arc::new(AtomicBool::new(false));
    let entry = client[1];
    let writer = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut acked = Vec::new();
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                let (k, v) = (format!("w:{i}"), format!("x{i}"));
                if run(entry, false, &["SET", &k, &v]) == Reply::Simple("OK".into()) {
                    acked.push((k, v));
                }
                i += 1;
            }
            acked
        })
    };

    // Node 4 names only itself: it learns the cluster from the meta group once added.
    let four = cluster.addr(4);
    cluster.start_fourth();
    let added = admin(client[0], &["CLUSTER", "ADDNODE", "4", &four]);
    assert_eq!(added, "map version 2");
    // Adding it again is no error (a controller may retry); other addresses are.
    assert!(admin(client[0], &["CLUSTER", "ADDNODE", "4", &four]).contains("in the map"));
    let r = Raw::connect(client[0]).cmd(&["CLUSTER", "ADDNODE", "4", "127.0.0.1:1:2"]);
    assert!(
        matches!(&r, Reply::Error(e) if e.contains("in the map already") || e.starts_with("REDIRECT")),
        "{r:?}"
    );
    assert_eq!(admin(client[0], &["CLUSTER", "REBALANCE"]), "map version 3");
    let map = admin(client[3], &["CLUSTER", "MAP"]);
    let held4 = placement(&map).values().filter(|ids| ids.contains(&4)).count();
    assert_eq!(held4, 3, "4 partitions x 3 replicas over 4 nodes:\n{map}");
    settled(&client[..4], client[0]);
    assert_eq!(partitions(client[3]).len(), 3, "node 4 holds its share");

    // Node 1 leaves.
    assert_eq!(admin(client[1], &["CLUSTER", "REMOVENODE", "1"]), "map version 4");
    let r = Raw::connect(client[1]).cmd(&["CLUSTER", "FORGETNODE", "2"]);
    assert!(
        matches!(&r, Reply::Error(e) if e.contains("is active") || e.starts_with("REDIRECT")),
        "{r:?}"
    );
    settled(&client[1..4], client[1]);
    let deadline = Instant::now() + WAIT;
    while !partitions(client[0]).is_empty() {
        assert!(Instant::now() < deadline, "node 1 still holds {:?}", partitions(client[0]));
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(admin(client[1], &["CLUSTER", "FORGETNODE", "1"]), "map version 5");
    drop(cluster.nodes.remove(&1));

    std::thread::sleep(Duration::from_millis(500));
    stop.store(true, Ordering::Relaxed);
    let acked = writer.join().unwrap();
    assert!(acked.len() > 10, "the writer got {} writes through", acked.len());
    for (k, v) in acked
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .chain((0..100).map(|i| (format!("key:{i}"), format!("v{i}"))))
    {
        assert_eq!(run(client[2], false, &["GET", &k]), Reply::Bulk(v.into_bytes()), "{k}");
    }
    let map = admin(client[2], &["CLUSTER", "MAP"]);
    assert!(map.starts_with("version 5\n") && !map.contains("\nnode 1 "), "{map}");
    assert!(map.contains(&format!("\ncluster {id}\n")), "the id is kept: {map}");
    // The nodes still in the map report it in CLUSTER NODES.
    let Reply::Bulk(text) = Raw::connect(client[3]).cmd(&["CLUSTER", "NODES"]) else {
        panic!("CLUSTER NODES");
    };
    assert_eq!(String::from_utf8(text).unwrap().lines().count(), 3);

    // The controller sees the same, settled.
    let ctl = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_strata-cluster"))
            .args(["--node", &format!("127.0.0.1:{}", client[3]), "--timeout", "30"])
            .args(args)
            .output()
            .unwrap()
    };
    let out = ctl(&["status"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(text.starts_with("version 5\n"), "{text}");
    assert_eq!(text.lines().filter(|l| l.ends_with(" settled")).count(), 4, "{text}");
    assert!(ctl(&["wait"]).status.success());
    let out = ctl(&["remove-node", "9"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("node 9 is not in the map"), "{out:?}");
    assert_eq!(ctl(&["add-node"]).status.code(), Some(2));
}

/// `strata-cluster create`: node 1 started as a cluster of one (four partitions, three
/// replicas wanted), nodes 2 and 3 naming only themselves; the controller adds them and
/// spreads the replicas: every partition ends with three voters, one on each node, and a
/// write through one node reads back from another.
#[test]
fn create_forms_a_cluster_from_nodes_started_alone() {
    let ports = free_ports(6);
    let (client, raft) = (&ports[..3], &ports[3..]);
    let root = tempfile::tempdir().unwrap();
    let addr = |i: usize| format!("127.0.0.1:{}:{}", client[i - 1], raft[i - 1]);
    let mut nodes = Vec::new();
    for i in 1..=3usize {
        let dir = root.path().join(format!("node{i}"));
        nodes.push(start(i as u64, &dir, client[i - 1], &format!("{i}={}", addr(i)), i == 1));
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_strata-cluster"))
        .args(["--node", &format!("127.0.0.1:{}", client[0]), "--timeout", "60", "create"])
        .args([format!("2={}", addr(2)), format!("3={}", addr(3))])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let map = admin(client[0], &["CLUSTER", "MAP"]);
    let want: Vec<u64> = vec![1, 2, 3];
    for (p, ids) in placement(&map) {
        let mut ids = ids.clone();
        ids.sort_unstable();
        assert_eq!(ids, want, "partition {p}:\n{map}");
    }
    settled(client, client[0]);
    assert_eq!(run(client[1], false, &["SET", "created", "yes"]), Reply::Simple("OK".into()));
    assert_eq!(run(client[2], false, &["GET", "created"]), Reply::Bulk(b"yes".to_vec()));
    // Every node now holds every partition.
    for port in client {
        assert_eq!(partitions(*port).len(), 4, "node on {port}");
    }
    drop(nodes);
}

/// The lines of every info LOG under `dir`.
fn logs(dir: &std::path::Path) -> String {
    let mut text = String::new();
    for e in walk(dir) {
        if e.file_name().is_some_and(|n| n == "LOG") {
            text.push_str(&std::fs::read_to_string(&e).unwrap_or_default());
        }
    }
    text
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// Node and group ids repeat from cluster to cluster, so a node of another cluster reached by
/// mistake (cluster A told to add cluster B's node 1 as its node 9) would have taken A's meta
/// group messages as its own; each cluster's id in the nodes' handshake refuses the
/// connection instead, the refused node says why, and B's map and data are untouched.
#[test]
fn a_node_of_another_cluster_is_refused_at_the_connection() {
    let a = Loopback::start_three();
    let b = Loopback::start_three();
    let id = |map: &str| map.lines().nth(1).unwrap_or_default().to_string();
    let map_b = admin(b.client[0], &["CLUSTER", "MAP"]);
    let (id_a, id_b) = (id(&admin(a.client[0], &["CLUSTER", "MAP"])), id(&map_b));
    assert!(id_a.starts_with("cluster ") && id_b.starts_with("cluster ") && id_a != id_b);
    assert_eq!(run(b.client[0], false, &["SET", "mine", "b"]), Reply::Simple("OK".into()));
    let added = admin(a.client[0], &["CLUSTER", "ADDNODE", "9", &b.addr(1)]);
    assert_eq!(added, "map version 2");
    let said = format!("it is a node of {id_a}, this one of {id_b}");
    let deadline = Instant::now() + WAIT;
    while !logs(&b.dir(1)).contains(&said) {
        assert!(Instant::now() < deadline, "node 1 of B never said: {said}");
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(admin(b.client[0], &["CLUSTER", "MAP"]), map_b);
    assert_eq!(run(b.client[1], false, &["GET", "mine"]), Reply::Bulk(b"b".to_vec()));
    drop((a, b));
}
