//! Cluster mode's core in one process: three nodes, each its own store, four partitions
//! replicated on all three over an in-memory network. Commands run through the server's
//! dispatch: on the partition's leader they commit through its Raft group; elsewhere they are
//! redirected (`MOVED`), unless the connection sent READONLY and reads a replica. Every
//! replica ends byte-identical (SPOP's pick and fresh versions included), a leadership
//! transfer moves the writes with it, a write of another partition's keys never applies, and
//! a leader cut off from its group answers nothing from its stale state.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use strata_replication::transport::mem::MemNetwork;
use strata_replication::{
    GroupId, NodeId, NodeStorage, OnEmpty, Peer, RaftNode, RaftSettings, Role,
};
use strata_server::cluster::{ClusterNode, Partitions, ServerApply};
use strata_server::commands::dispatch;
use strata_server::config::{Config, Flags};
use strata_server::resp::Out;
use strata_server::routing::Router;
use strata_server::server::tasks::{expire_due, expire_round, ExpiryEffort};
use strata_server::slots::key_slot;
use strata_server::state::{Conn, Shared};
use strata_server::storage::SyncPolicy;

const NODES: [NodeId; 3] = [1, 2, 3];
const PARTITIONS: u16 = 4;
const WAIT: Duration = Duration::from_secs(15);

/// A store's data families, entry by entry.
type Entries = Vec<(Vec<u8>, Vec<u8>)>;

struct Node {
    shared: Arc<Shared>,
    cluster: Arc<ClusterNode>,
}

struct Cluster {
    nodes: BTreeMap<NodeId, Node>,
    net: Arc<MemNetwork>,
    runtime: tokio::runtime::Runtime,
    _dir: tempfile::TempDir,
}

fn addr(n: NodeId) -> String {
    format!("127.0.0.1:{}", 7000 + n)
}

impl Cluster {
    fn start() -> Cluster {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let net = MemNetwork::new();
        let parts = Partitions::new(PARTITIONS).unwrap();
        let clients: BTreeMap<NodeId, String> = NODES.iter().map(|n| (*n, addr(*n))).collect();
        let placement: Vec<Vec<NodeId>> = (0..PARTITIONS).map(|_| NODES.to_vec()).collect();
        let settings = RaftSettings {
            heartbeat_ms: 30,
            election_timeout_ms: (150, 300),
            snapshot_after_entries: 1_000_000,
            keep_log_behind_snapshot: 0,
            snapshot_chunk_bytes: 16 * 1024,
        };
        let mut nodes = BTreeMap::new();
        for id in NODES {
            let d = dir.path().join(format!("node{id}"));
            let cfg = Config::resolve(Flags { dir: Some(d.clone()), ..Flags::default() }).unwrap();
            let store =
                strata_server::types::open_partitioned(cfg.engine_options(), &d, SyncPolicy::No)
                    .unwrap();
            let dbs = store.clone();
            let store = dbs.store(0).clone();
            let storage = NodeStorage::open(store.db.clone(), d.join("snapshots")).unwrap();
            let apply = ServerApply::new(store.clone(), parts, d.join("slot-imports")).unwrap();
            let ownership = apply.ownership();
            let raft =
                RaftNode::new(id, storage, Arc::new(apply), net.transport(id), settings.clone())
                    .unwrap();
            runtime.block_on(async {
                for p in 0..PARTITIONS {
                    raft.open_group(GroupId(u32::from(p)), OnEmpty::NewGroup).await.unwrap();
                }
            });
            net.register(id, raft.clone());
            let cluster = Arc::new(ClusterNode::new(
                raft,
                store.clone(),
                parts,
                clients.clone(),
                placement.clone(),
                runtime.handle().clone(),
                ownership,
            ));
            assert!(store.set_replicate(cluster.clone()));
            let shared = Arc::new(Shared::new(dbs, cfg, 0).with_router(cluster.clone()));
            nodes.insert(id, Node { shared, cluster });
        }
        let members: BTreeMap<NodeId, Peer> = NODES.iter().map(|n| (*n, Peer::default())).collect();
        for p in 0..PARTITIONS {
            // Partitions start with different leaders.
            let first = NODES[usize::from(p) % NODES.len()];
            let replica = nodes[&first].cluster.raft().replica(GroupId(u32::from(p))).unwrap();
            runtime.block_on(replica.initialize(members.clone())).unwrap();
        }
        let c = Cluster { nodes, net, runtime, _dir: dir };
        for p in 0..PARTITIONS {
            c.leader(GroupId(u32::from(p)));
        }
        c
    }

    /// The node leading `g`, once there is one.
    fn leader(&self, g: GroupId) -> NodeId {
        let deadline = Instant::now() + WAIT;
        loop {
            for (id, n) in &self.nodes {
                if n.cluster.raft().replica(g).unwrap().status().role == Role::Leader {
                    return *id;
                }
            }
            assert!(Instant::now() < deadline, "{g}: no leader within {WAIT:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn group_of(key: &str) -> GroupId {
        GroupId(u32::from(Partitions::new(PARTITIONS).unwrap().of_slot(key_slot(key.as_bytes()))))
    }

    /// Runs `args` on node `n` (READONLY when `readonly`); returns the reply.
    fn run_on(&self, n: NodeId, readonly: bool, args: &[&str]) -> String {
        let mut conn = Conn::new(1, true);
        conn.readonly = readonly;
        let mut out = Out::default();
        let a: Vec<Vec<u8>> = args.iter().map(|s| s.as_bytes().to_vec()).collect();
        dispatch(&self.nodes[&n].shared, &mut conn, &a, &mut out);
        String::from_utf8_lossy(&out.buf).into_owned()
    }

    /// Runs the command lines `lines` on one connection to node `n`; returns the replies.
    fn run_lines(&self, n: NodeId, lines: &[&[&str]]) -> String {
        let mut conn = Conn::new(1, true);
        let mut out = Out::default();
        for args in lines {
            let a: Vec<Vec<u8>> = args.iter().map(|s| s.as_bytes().to_vec()).collect();
            dispatch(&self.nodes[&n].shared, &mut conn, &a, &mut out);
        }
        String::from_utf8_lossy(&out.buf).into_owned()
    }

    /// Runs `args` on the leader of `key`'s partition.
    fn run(&self, key: &str, args: &[&str]) -> String {
        self.run_on(self.leader(Self::group_of(key)), false, args)
    }

    /// Waits until every replica of every group has applied its leader's last entry, then
    /// returns each node's data families, entry by entry.
    fn converged(&self) -> BTreeMap<NodeId, Entries> {
        for p in 0..PARTITIONS {
            let g = GroupId(u32::from(p));
            let deadline = Instant::now() + WAIT;
            loop {
                let leader = self.leader(g);
                let last =
                    self.nodes[&leader].cluster.raft().replica(g).unwrap().status().last_log_index;
                let done = self.nodes.values().all(|n| {
                    n.cluster.raft().replica(g).unwrap().status().applied.map(|a| a.index) == last
                });
                if done {
                    break;
                }
                assert!(Instant::now() < deadline, "{g}: replicas did not converge");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        self.nodes
            .iter()
            .map(|(id, n)| {
                let st = n.shared.dbs.store(0);
                let mut all = Vec::new();
                for cf in [&st.meta_cf, &st.sub_cf, &st.score_cf] {
                    let mut it = st.db.raw_iterator_cf(cf);
                    it.seek_to_first();
                    while let Some((k, v)) = it.item() {
                        all.push((k.to_vec(), v.to_vec()));
                        it.next();
                    }
                    it.status().unwrap();
                }
                (*id, all)
            })
            .collect()
    }

    fn assert_identical(&self) {
        let data = self.converged();
        let first = &data[&NODES[0]];
        assert!(!first.is_empty());
        for (id, d) in &data {
            assert!(d == first, "node {id}'s data differs from node {}'s", NODES[0]);
        }
    }
}

#[test]
fn commands_commit_through_their_partitions_group_and_every_replica_ends_identical() {
    let c = Cluster::start();
    let keys: Vec<String> = (0..24).map(|i| format!("key:{i}")).collect();
    // Keys of every partition.
    for p in 0..PARTITIONS {
        assert!(keys.iter().any(|k| Cluster::group_of(k) == GroupId(u32::from(p))), "{p}");
    }
    for (i, k) in keys.iter().enumerate() {
        let k = k.as_str();
        assert_eq!(c.run(k, &["SET", k, &format!("v{i}"), "EX", "1000"]), "+OK\r\n");
        assert_eq!(c.run(k, &["INCR", &format!("{{{k}}}.n")]), ":1\r\n");
        assert_eq!(c.run(k, &["HSET", &format!("{{{k}}}.h"), "a", "1", "b", "2"]), ":2\r\n");
        assert_eq!(c.run(k, &["RPUSH", &format!("{{{k}}}.l"), "x", "y", "z"]), ":3\r\n");
        assert_eq!(c.run(k, &["ZADD", &format!("{{{k}}}.z"), "1.5", "a", "2", "b"]), ":2\r\n");
        assert_eq!(c.run(k, &["SADD", &format!("{{{k}}}.s"), "m1", "m2", "m3", "m4"]), ":4\r\n");
        // SPOP picks a member on the leader; the replicas apply the same pick.
        assert!(c.run(k, &["SPOP", &format!("{{{k}}}.s")]).starts_with("$2\r\nm"));
        assert_eq!(c.run(k, &["INCRBYFLOAT", &format!("{{{k}}}.f"), "0.1"]), "$3\r\n0.1\r\n");
        // Multi-key commands of one slot run; of several slots, CROSSSLOT.
        assert_eq!(
            c.run(k, &["RPOPLPUSH", &format!("{{{k}}}.l"), &format!("{{{k}}}.l2")]),
            "$1\r\nz\r\n"
        );
    }
    c.assert_identical();

    // Reads on the leader see every acknowledged write; elsewhere MOVED to the leader, or,
    // with READONLY, the replica's applied state.
    for (i, k) in keys.iter().enumerate() {
        let k = k.as_str();
        let g = Cluster::group_of(k);
        let leader = c.leader(g);
        let want = format!("${}\r\nv{i}\r\n", format!("v{i}").len());
        assert_eq!(c.run_on(leader, false, &["GET", k]), want);
        for n in NODES.iter().copied().filter(|n| *n != leader) {
            let moved = format!("-MOVED {} {}\r\n", key_slot(k.as_bytes()), addr(leader));
            assert_eq!(c.run_on(n, false, &["GET", k]), moved);
            assert_eq!(c.run_on(n, false, &["SET", k, "other"]), moved);
            assert_eq!(c.run_on(n, true, &["GET", k]), want, "READONLY read on node {n}");
            assert_eq!(c.run_on(n, true, &["SET", k, "other"]), moved, "READONLY writes move");
        }
    }

    // A leadership transfer moves the writes with it; the old leader redirects.
    let k = keys[0].as_str();
    let g = Cluster::group_of(k);
    let old = c.leader(g);
    let new = NODES.iter().copied().find(|n| *n != old).unwrap();
    let replica = c.nodes[&old].cluster.raft().replica(g).unwrap();
    c.runtime.block_on(replica.transfer_leader(new)).unwrap();
    let deadline = Instant::now() + WAIT;
    while c.leader(g) != new {
        assert!(Instant::now() < deadline, "leadership did not move to node {new}");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(c.run_on(new, false, &["INCR", &format!("{{{k}}}.n")]), ":2\r\n");
    assert_eq!(
        c.run_on(new, false, &["SPOP", &format!("{{{k}}}.s"), "3"]).matches("\r\nm").count(),
        3
    );
    assert!(c.run_on(old, false, &["INCR", &format!("{{{k}}}.n")]).starts_with("-MOVED "));
    c.assert_identical();
}

/// MULTI/EXEC on a partition's leader: the transaction is one entry of the group, applied
/// on every replica; keys of two slots in one transaction are refused.
#[test]
fn a_transaction_commits_as_one_entry_of_its_partition() {
    let c = Cluster::start();
    let leader = c.leader(Cluster::group_of("{t}"));
    let before = c.nodes[&leader].cluster.raft().replica(Cluster::group_of("{t}")).unwrap();
    let last = before.status().last_log_index.unwrap_or(0);
    let replies = c.run_lines(
        leader,
        &[
            &["MULTI"],
            &["SET", "{t}a", "1"],
            &["INCR", "{t}a"],
            &["RPUSH", "{t}l", "x", "y"],
            &["GET", "{t}a"],
            &["EXEC"],
        ],
    );
    assert_eq!(
        replies,
        "+OK\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n*4\r\n+OK\r\n:2\r\n:2\r\n$1\r\n2\r\n"
    );
    // One entry for the three writes.
    assert_eq!(before.status().last_log_index, Some(last + 1));
    c.assert_identical();
    for n in NODES {
        assert_eq!(c.run_on(n, true, &["GET", "{t}a"]), "$1\r\n2\r\n", "node {n}");
    }
    let other =
        (0..100).map(|i| format!("o{i}")).find(|k| key_slot(k.as_bytes()) != key_slot(b"{t}"));
    let other = other.unwrap();
    let replies =
        c.run_lines(leader, &[&["MULTI"], &["SET", "{t}a", "3"], &["SET", &other, "3"], &["EXEC"]]);
    let exec = replies.rsplit("\r\n").nth(1).unwrap_or_default();
    assert!(exec.starts_with("-CROSSSLOT") || exec.starts_with("-EXECABORT"), "{replies}");
    assert_eq!(c.run_on(leader, false, &["GET", "{t}a"]), "$1\r\n2\r\n");
}

#[test]
fn a_batch_of_another_partitions_keys_is_never_applied() {
    let c = Cluster::start();
    // A key of partition 0 proposed to partition 1's group (as a confused leader might).
    let k0 =
        (0..10_000).map(|i| format!("k{i}")).find(|k| Cluster::group_of(k) == GroupId(0)).unwrap();
    let g1 = GroupId(1);
    let leader = c.leader(g1);
    // Filed as partition 0's command files it.
    let st = c.nodes[&leader].shared.dbs.partition(0);
    let mut b = strata::WriteBatch::new();
    st.put_meta(&mut b, k0.as_bytes(), b"\x01\0\0\0\0\0\0\0\0v".to_vec());
    st.meta_cache.invalidate_noted(false);
    let replica = c.nodes[&leader].cluster.raft().replica(g1).unwrap();
    let entry = strata_server::cluster::apply::encode_proposal(st, &b, None);
    let r = c.runtime.block_on(async {
        tokio::time::timeout(Duration::from_secs(3), replica.write(entry)).await
    });
    assert!(!matches!(r, Ok(Ok(_))), "the misplaced batch was applied: {r:?}");
    for n in c.nodes.values() {
        for p in [0, 1] {
            let view = n.shared.dbs.partition(p);
            assert_eq!(view.read_meta_uncached(k0.as_bytes()).unwrap(), None);
        }
    }
    // Routing stayed honest throughout: the key's own partition still takes it.
    assert_eq!(c.run(&k0, &["SET", &k0, "v"]), "+OK\r\n");
    let _ = c.nodes[&leader].cluster.route(key_slot(k0.as_bytes()), true, false);
}

/// A leader cut off from the rest of its group, after another replica was elected and
/// acknowledged a write, must not answer from its stale state: not a read, and not a write
/// that would write nothing there (DEL of a key it has not seen), which needs no proposal.
#[test]
fn a_deposed_leader_answers_no_read_and_no_empty_write_from_its_stale_state() {
    let c = Cluster::start();
    let key = "deposed";
    let g = Cluster::group_of(key);
    let old = c.leader(g);
    // The old leader serves the key once, so its term's barrier has passed.
    assert_eq!(c.run_on(old, false, &["GET", key]), "$-1\r\n");
    c.net.isolate(old, NODES.iter().copied().filter(|n| *n != old));
    let deadline = Instant::now() + WAIT;
    let new = loop {
        let elected =
            NODES.iter().copied().filter(|n| *n != old).find(|n| {
                c.nodes[n].cluster.raft().replica(g).unwrap().status().role == Role::Leader
            });
        if let Some(n) = elected {
            break n;
        }
        assert!(Instant::now() < deadline, "{g}: no new leader while node {old} is cut off");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(c.run_on(new, false, &["SET", key, "v"]), "+OK\r\n");
    for args in [&["DEL", key][..], &["GET", key], &["EXISTS", key], &["SET", key, "x", "NX"]] {
        let reply = c.run_on(old, false, args);
        assert!(
            reply.starts_with("-MOVED") || reply.starts_with("-CLUSTERDOWN"),
            "node {old}, cut off, answered {args:?} with {reply:?}"
        );
    }
    c.net.heal_all();
    assert_eq!(c.run(key, &["GET", key]), "$1\r\nv\r\n");
}

/// Active expiry in cluster mode: the leader of a key's partition deletes it once expired,
/// as a replicated write; a replica's round leaves it to the leader.
#[test]
fn expired_keys_are_deleted_by_their_partitions_leader_and_the_deletion_replicates() {
    let c = Cluster::start();
    let key = "expiring";
    let g = Cluster::group_of(key);
    let leader = c.leader(g);
    assert_eq!(c.run(key, &["SET", key, "v", "PX", "30"]), "+OK\r\n");
    std::thread::sleep(Duration::from_millis(80));
    let effort = ExpiryEffort::of(&c.nodes[&leader].shared);
    for (id, n) in &c.nodes {
        if *id != leader {
            let (_, deleted) = expire_round(&n.shared, &(0, Vec::new()), &effort).unwrap();
            assert_eq!(deleted, 0, "node {id} follows {g}: it leaves the key to the leader");
        }
    }
    let (_, deleted) = expire_round(&c.nodes[&leader].shared, &(0, Vec::new()), &effort).unwrap();
    assert_eq!(deleted, 1, "the leader of {g} deletes the expired key");
    c.converged();
    assert_gone_everywhere(&c, g, &[key]);

    // Many expired keys of one partition, over many of its slots, go in one entry of its
    // group, not one each; a key written again meanwhile stays.
    let keys: Vec<String> =
        (0..2000).map(|i| format!("many{i}")).filter(|k| Cluster::group_of(k) == g).collect();
    assert!(keys.len() > 100, "{} keys in {g}", keys.len());
    let slots: std::collections::BTreeSet<u16> =
        keys.iter().map(|k| key_slot(k.as_bytes())).collect();
    assert!(slots.len() > 50, "the keys span {} slots", slots.len());
    for k in &keys {
        assert_eq!(c.run(k, &["SET", k, "v", "PX", "30"]), "+OK\r\n");
    }
    std::thread::sleep(Duration::from_millis(80));
    assert_eq!(c.run(&keys[0], &["SET", &keys[0], "again"]), "+OK\r\n");
    let leader = c.leader(g);
    let applied = || {
        let status = c.nodes[&leader].cluster.raft().replica(g).unwrap().status();
        status.applied.map_or(0, |a| a.index)
    };
    let before = applied();
    let round =
        |from: &(usize, Vec<u8>)| expire_round(&c.nodes[&leader].shared, from, &effort).unwrap();
    let (mut point, mut deleted) = round(&(0, Vec::new()));
    while point.0 == 0 && !point.1.is_empty() {
        let (p, d) = round(&point);
        (point, deleted) = (p, deleted + d);
    }
    assert_eq!(deleted, keys.len() - 1, "every expired key of {g}, not the one written again");
    let entries = applied() - before;
    let slices = keys.len().div_ceil(200) as u64 + 1;
    assert!(entries <= slices, "{entries} entries for {deleted} deletions");
    c.converged();
    assert_eq!(c.run(&keys[0], &["GET", &keys[0]]), "$5\r\nagain\r\n");
    assert_gone_everywhere(&c, g, &keys[1..]);

    // The same keys through the due index, which the leader's commands fed: one call, one
    // entry of the group a slice; the replicas' calls delete nothing.
    for k in &keys {
        assert_eq!(c.run(k, &["SET", k, "v", "PX", "30"]), "+OK\r\n");
    }
    std::thread::sleep(Duration::from_millis(80));
    let leader = c.leader(g);
    for (id, n) in &c.nodes {
        if *id != leader {
            assert_eq!(expire_due(&n.shared, &effort).unwrap().deleted, 0, "node {id} follows {g}");
        }
    }
    let before = applied();
    assert_eq!(expire_due(&c.nodes[&leader].shared, &effort).unwrap().deleted, keys.len());
    let entries = applied() - before;
    assert!(entries <= keys.len().div_ceil(200) as u64, "{entries} entries");
    c.converged();
    assert_gone_everywhere(&c, g, &keys);
}

/// Asserts that no node holds a metadata record of `keys` in group `g`'s partition.
fn assert_gone_everywhere(c: &Cluster, g: GroupId, keys: &[impl AsRef<str>]) {
    for (id, n) in &c.nodes {
        let view = n.shared.dbs.partition(g.0 as u16);
        for k in keys {
            let k = k.as_ref();
            let raw = view.read_meta_uncached(k.as_bytes()).unwrap();
            assert!(raw.is_none(), "node {id} still holds {k}");
        }
    }
}

/// A due key its leader cannot delete now (cut off from the rest of its group: the
/// deletion does not commit) stays in the leader's due index, due again a moment later,
/// instead of waiting for the walk to come round to it.
#[test]
fn a_due_key_its_leader_cannot_delete_now_stays_due() {
    let c = Cluster::start();
    let key = "expiring";
    let g = Cluster::group_of(key);
    let leader = c.leader(g);
    assert_eq!(c.run(key, &["SET", key, "v", "PX", "30"]), "+OK\r\n");
    c.converged();
    std::thread::sleep(Duration::from_millis(80));
    let sh = &c.nodes[&leader].shared;
    assert_eq!(sh.engine().due.len(), 1);
    c.net.isolate(leader, NODES.iter().copied().filter(|n| *n != leader));
    let effort = ExpiryEffort::of(sh);
    let pass = expire_due(sh, &effort);
    assert!(!pass.is_ok_and(|p| p.deleted > 0), "a node cut off deleted the key");
    assert_eq!(sh.engine().due.len(), 1, "the key stays due");
    c.net.heal_all();
    // Whoever leads the group now, the key goes: a new leader's walk finds it, or the old
    // leader's index when the key is due again.
    let deadline = Instant::now() + WAIT;
    loop {
        let l = c.leader(g);
        let s = &c.nodes[&l].shared;
        let _ = expire_due(s, &effort);
        let _ = expire_round(s, &(0, Vec::new()), &effort);
        let view = s.dbs.partition(g.0 as u16);
        if view.read_meta_uncached(key.as_bytes()).unwrap().is_none() {
            break;
        }
        assert!(Instant::now() < deadline, "the expired key is still held");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// FLUSHALL in cluster mode deletes the keys of the partitions the node leads, through their
/// groups (every replica loses them, a cached record included); FLUSHALL on every node
/// empties the cluster.
#[test]
fn flushall_deletes_the_partitions_the_node_leads_on_every_replica() {
    let c = Cluster::start();
    let keys: Vec<String> = (0..40).map(|i| format!("flush:{i}")).collect();
    for k in &keys {
        assert_eq!(c.run(k, &["SET", k, "v"]), "+OK\r\n");
    }
    c.converged();
    // Every replica reads each key once, so its metadata cache holds the record.
    for k in &keys {
        for n in NODES {
            assert_eq!(c.run_on(n, true, &["GET", k]), "$1\r\nv\r\n");
        }
    }
    let first = NODES[0];
    assert_eq!(c.run_on(first, false, &["FLUSHALL"]), "+OK\r\n");
    c.converged();
    for k in &keys {
        let led_by_first = c.leader(Cluster::group_of(k)) == first;
        for n in NODES {
            let got = c.run_on(n, true, &["GET", k]);
            let want = if led_by_first { "$-1\r\n" } else { "$1\r\nv\r\n" };
            assert_eq!(got, want, "{k} on node {n} after FLUSHALL on node {first}");
        }
    }
    for n in NODES {
        assert_eq!(c.run_on(n, false, &["FLUSHALL"]), "+OK\r\n");
    }
    for (id, data) in c.converged() {
        assert!(
            data.is_empty(),
            "node {id} keeps {} records after FLUSHALL everywhere",
            data.len()
        );
    }
}

/// Leaders go back to their preferred replicas (the first of each partition's placement,
/// here node 1 for every partition) once those have caught up, while writes go on; nothing
/// acknowledged is lost and the replicas end identical.
#[test]
fn leaders_return_to_their_preferred_replicas_while_writes_go_on() {
    let c = Cluster::start();
    let preferred = NODES[0];
    let elsewhere =
        (0..PARTITIONS).filter(|p| c.leader(GroupId(u32::from(*p))) != preferred).count();
    assert!(elsewhere > 0, "the partitions start with leaders on several nodes");
    let keys: Vec<String> = (0..60).map(|i| format!("balance:{i}")).collect();
    let deadline = Instant::now() + WAIT;
    let mut i = 0;
    loop {
        // A write between rounds (a command that meets a leader change is told the outcome
        // is unknown or redirected: retried until acknowledged, as a client would).
        let k = &keys[i % keys.len()];
        let v = format!("v{i}");
        while c.run(k, &["SET", k, &v]) != "+OK\r\n" {
            assert!(Instant::now() < deadline, "SET {k} never acknowledged");
            std::thread::sleep(Duration::from_millis(10));
        }
        i += 1;
        for n in c.nodes.values() {
            n.cluster.restore_preferred_leaders();
        }
        let all_home = (0..PARTITIONS).all(|p| c.leader(GroupId(u32::from(p))) == preferred);
        if all_home && i >= keys.len() {
            break;
        }
        assert!(Instant::now() < deadline, "leaders did not return to node {preferred}");
    }
    for (j, k) in keys.iter().enumerate() {
        let last = (0..i).filter(|x| x % keys.len() == j).max().unwrap();
        assert_eq!(c.run(k, &["GET", k]), format!("${}\r\nv{last}\r\n", format!("v{last}").len()));
    }
    c.assert_identical();
}
