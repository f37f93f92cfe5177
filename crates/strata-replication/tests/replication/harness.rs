//! An in-process cluster for the scenarios: each node its own Strata `Db` in a directory of
//! its own, all on one in-memory network whose links can be cut; several groups of the
//! key-value application on every node; writers that record which writes were acknowledged.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Mutex, RwLock};
use strata_replication::kv::{KvApp, KvCommand};
use strata_replication::transport::mem::MemNetwork;
use strata_replication::{
    Error, GroupId, NodeId, NodeStorage, OnEmpty, Peer, RaftNode, RaftSettings, Role,
};

pub type Node = Arc<RaftNode>;

/// Short timeouts: elections in a few hundred milliseconds, so scenarios take seconds.
pub fn settings() -> RaftSettings {
    RaftSettings {
        heartbeat_ms: 30,
        election_timeout_ms: (150, 300),
        // Snapshots only when a scenario asks for one.
        snapshot_after_entries: 1_000_000,
        keep_log_behind_snapshot: 0,
        snapshot_chunk_bytes: 16 * 1024,
    }
}

pub const WAIT: Duration = Duration::from_secs(15);

pub struct Cluster {
    pub net: Arc<MemNetwork>,
    root: tempfile::TempDir,
    dirs: BTreeMap<NodeId, PathBuf>,
    /// The running nodes (writers read it to find leaders).
    pub live: Arc<RwLock<BTreeMap<NodeId, Node>>>,
    pub groups: Vec<GroupId>,
}

impl Cluster {
    /// Starts `nodes`, opens `groups` on each and makes every node a voter of every group.
    pub async fn start(nodes: &[NodeId], groups: &[u32]) -> Cluster {
        let root = tempfile::tempdir().unwrap();
        let mut c = Cluster {
            net: MemNetwork::new(),
            dirs: nodes.iter().map(|n| (*n, root.path().join(format!("node{n}")))).collect(),
            root,
            live: Arc::new(RwLock::new(BTreeMap::new())),
            groups: groups.iter().map(|g| GroupId(*g)).collect(),
        };
        for n in nodes {
            c.start_node_as(*n, OnEmpty::NewGroup).await;
        }
        let members: BTreeMap<NodeId, Peer> = nodes.iter().map(|n| (*n, Peer::default())).collect();
        for g in c.groups.clone() {
            c.node(nodes[0]).replica(g).unwrap().initialize(members.clone()).await.unwrap();
            c.leader(g).await;
        }
        c
    }

    /// Starts node `id` again, or anew in groups that exist (it catches up before it votes):
    /// opens its `Db` (waiting for the previous run's to close), every group, and connects it.
    pub async fn start_node(&mut self, id: NodeId) {
        self.start_node_as(id, OnEmpty::CatchUp).await;
    }

    /// Starts node `id`, `on_empty` saying what its empty storage means.
    pub async fn start_node_as(&mut self, id: NodeId, on_empty: OnEmpty) {
        let root = self.root.path().to_path_buf();
        let dir = self.dirs.entry(id).or_insert_with(|| root.join(format!("node{id}"))).clone();
        let deadline = Instant::now() + WAIT;
        let db = loop {
            match strata_replication::open_db(&strata::Options::default(), dir.join("db"), &[]) {
                Ok(db) => break Arc::new(db),
                Err(Error::Engine { source: strata::Error::Locked(_), .. })
                    if Instant::now() < deadline =>
                {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(e) => panic!("node {id}: open its db: {e}"),
            }
        };
        let storage = NodeStorage::open(db, dir.join("snapshots")).unwrap();
        let node = RaftNode::new(id, storage, Arc::new(KvApp), self.net.transport(id), settings())
            .unwrap();
        for g in &self.groups {
            node.open_group(*g, on_empty).await.unwrap();
        }
        self.net.register(id, node.clone());
        self.live.write().insert(id, node);
    }

    /// Stops node `id` as a crash would: its messages stop, its Raft groups and `Db` are
    /// dropped (every write it acknowledged went through the WAL).
    pub async fn kill(&mut self, id: NodeId) {
        self.net.unregister(id);
        let node = self.live.write().remove(&id).unwrap();
        node.shutdown().await;
    }

    /// Deletes the directory of node `id` (stopped): it lost its disk.
    pub fn wipe(&self, id: NodeId) {
        assert!(!self.live.read().contains_key(&id), "node {id} is running");
        std::fs::remove_dir_all(&self.dirs[&id]).unwrap();
    }

    pub fn node(&self, id: NodeId) -> Node {
        self.live.read().get(&id).cloned().unwrap_or_else(|| panic!("node {id} is not running"))
    }

    /// Waits for a leader of `g` among the running nodes (the highest term's) and returns it.
    pub async fn leader(&self, g: GroupId) -> NodeId {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(l) = find_leader(&self.live, g) {
                return l;
            }
            assert!(Instant::now() < deadline, "{g}: no leader within {WAIT:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits until `members` have applied everything the leader has in its log, and returns
    /// the data they agree on (failing if any replica's differs).
    pub async fn converged(&self, g: GroupId, members: &[NodeId]) -> Vec<(Vec<u8>, Vec<u8>)> {
        let leader = self.leader(g).await;
        let last = self.node(leader).replica(g).unwrap().status().last_log_index;
        for m in members {
            let r = self.node(*m).replica(g).unwrap();
            r.wait_for("apply the leader's log", WAIT, move |s| s.applied.map(|a| a.index) >= last)
                .await
                .unwrap();
        }
        let first = self.data(members[0], g);
        for m in &members[1..] {
            let d = self.data(*m, g);
            assert_eq!(
                checksum(&d),
                checksum(&first),
                "{g}: node {m}'s data differs from node {}'s ({} vs {} keys)",
                members[0],
                d.len(),
                first.len()
            );
            assert_eq!(d, first);
        }
        first
    }

    pub fn data(&self, id: NodeId, g: GroupId) -> Vec<(Vec<u8>, Vec<u8>)> {
        KvApp::scan(self.node(id).storage().db(), g).unwrap()
    }

    pub async fn shutdown(mut self) {
        let ids: Vec<_> = self.live.read().keys().copied().collect();
        for id in ids {
            self.kill(id).await;
        }
    }
}

/// Snapshots and purges every live replica's log of every group up to its leader's last
/// entry now (writes may go on meanwhile).
pub async fn snapshot_and_purge(c: &Cluster) {
    for g in c.groups.clone() {
        let leader = c.leader(g).await;
        let last = c.node(leader).replica(g).unwrap().status().last_log_index.unwrap();
        let nodes: Vec<_> = c.live.read().keys().copied().collect();
        for n in nodes {
            let r = c.node(n).replica(g).unwrap();
            r.wait_for("apply", WAIT, move |s| s.applied.map(|a| a.index) >= Some(last))
                .await
                .unwrap();
            r.snapshot().await.unwrap();
            r.wait_for("snapshot", WAIT, move |s| s.snapshot.map(|a| a.index) >= Some(last))
                .await
                .unwrap();
            r.purge_log(last).await.unwrap();
            r.wait_for("purge", WAIT, move |s| s.purged.map(|a| a.index) >= Some(last))
                .await
                .unwrap();
        }
    }
}

/// A crc32c over the key-value pairs, lengths included.
pub fn checksum(data: &[(Vec<u8>, Vec<u8>)]) -> u32 {
    let mut crc = 0;
    for (k, v) in data {
        crc = crc32c::crc32c_append(crc, &(k.len() as u32).to_le_bytes());
        crc = crc32c::crc32c_append(crc, k);
        crc = crc32c::crc32c_append(crc, &(v.len() as u32).to_le_bytes());
        crc = crc32c::crc32c_append(crc, v);
    }
    crc
}

/// The leader of `g` with the highest term among the running nodes.
pub fn find_leader(live: &RwLock<BTreeMap<NodeId, Node>>, g: GroupId) -> Option<NodeId> {
    live.read()
        .iter()
        .filter_map(|(id, n)| n.replica(g).map(|r| (*id, r.status())))
        .filter(|(_, s)| s.role == Role::Leader)
        .max_by_key(|(_, s)| s.term)
        .map(|(id, _)| id)
}

/// Writes `cmd` to `g` through its leader. A `NotLeader` answer proposed nothing and is
/// retried at the leader named (or found); any other failure, or no answer in time, leaves
/// the outcome unknown and is returned.
pub async fn write(
    live: &RwLock<BTreeMap<NodeId, Node>>,
    g: GroupId,
    cmd: &KvCommand,
) -> Result<Vec<u8>, String> {
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut target = find_leader(live, g);
    loop {
        if Instant::now() > deadline {
            return Err("no leader took the write".into());
        }
        let Some(node) = target.and_then(|t| live.read().get(&t).cloned()) else {
            tokio::time::sleep(Duration::from_millis(20)).await;
            target = find_leader(live, g);
            continue;
        };
        let Some(replica) = node.replica(g) else {
            target = None;
            continue;
        };
        match tokio::time::timeout(Duration::from_secs(2), replica.write(cmd.encode())).await {
            Ok(Ok((_, reply))) => return Ok(reply.0),
            Ok(Err(Error::NotLeader { leader, .. })) => {
                tokio::time::sleep(Duration::from_millis(10)).await;
                target =
                    leader.filter(|l| live.read().contains_key(l)).or_else(|| find_leader(live, g));
            }
            Ok(Err(e)) => return Err(e.to_string()),
            Err(_) => return Err("no answer within 2 s".into()),
        }
    }
}

/// What the writers did: per group and writer, the tokens acknowledged and those whose
/// outcome is unknown.
#[derive(Default)]
pub struct History {
    /// The writers' keys are `<prefix>w<writer>`.
    pub prefix: String,
    pub acked: HashMap<(GroupId, usize), BTreeSet<u64>>,
    pub unknown: HashMap<(GroupId, usize), BTreeSet<u64>>,
}

/// Writers appending numbered tokens, each writer to its own key, until stopped.
pub struct Writers {
    stop: Arc<AtomicBool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    history: Arc<Mutex<History>>,
}

impl Writers {
    pub fn start(c: &Cluster, per_group: usize) -> Writers {
        Writers::start_named(c, per_group, "")
    }

    /// Writers whose keys start with `prefix` (so that a second workload has keys of its own).
    pub fn start_named(c: &Cluster, per_group: usize, prefix: &str) -> Writers {
        let stop = Arc::new(AtomicBool::new(false));
        let history =
            Arc::new(Mutex::new(History { prefix: prefix.to_string(), ..History::default() }));
        let mut tasks = Vec::new();
        for g in c.groups.clone() {
            for w in 0..per_group {
                let (live, stop, history) = (c.live.clone(), stop.clone(), history.clone());
                let key = format!("{prefix}w{w}").into_bytes();
                tasks.push(tokio::spawn(async move {
                    let mut token = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        token += 1;
                        let cmd = KvCommand::Append {
                            key: key.clone(),
                            suffix: format!("{token};").into_bytes(),
                        };
                        let r = write(&live, g, &cmd).await;
                        let mut h = history.lock();
                        match r {
                            Ok(_) => h.acked.entry((g, w)).or_default().insert(token),
                            Err(_) => h.unknown.entry((g, w)).or_default().insert(token),
                        };
                    }
                }));
            }
        }
        Writers { stop, tasks, history }
    }

    /// Acknowledged writes so far.
    pub fn acked(&self) -> usize {
        self.history.lock().acked.values().map(BTreeSet::len).sum()
    }

    /// Waits until `n` more writes were acknowledged than when called.
    pub async fn wait_acked(&self, n: usize) {
        let want = self.acked() + n;
        let deadline = Instant::now() + WAIT;
        while self.acked() < want {
            assert!(
                Instant::now() < deadline,
                "only {} of {want} writes acknowledged in {WAIT:?}",
                self.acked()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    pub async fn stop(self) -> History {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.tasks {
            t.await.unwrap();
        }
        Arc::try_unwrap(self.history).ok().unwrap().into_inner()
    }
}

/// Checks `data` of `g` against the history: every acknowledged token is there exactly
/// once, every other token at most once, and nothing else is. Returns the tokens found.
pub fn check_exactly_once(g: GroupId, data: &[(Vec<u8>, Vec<u8>)], h: &History) -> usize {
    let mut found = 0;
    let writers: BTreeSet<usize> = h
        .acked
        .keys()
        .chain(h.unknown.keys())
        .filter(|(gg, _)| *gg == g)
        .map(|(_, w)| *w)
        .collect();
    for w in writers {
        let key = format!("{}w{w}", h.prefix).into_bytes();
        let value =
            data.iter().find(|(k, _)| *k == key).map(|(_, v)| v.clone()).unwrap_or_default();
        let tokens: Vec<u64> = String::from_utf8(value)
            .unwrap()
            .split(';')
            .filter(|t| !t.is_empty())
            .map(|t| t.parse().unwrap())
            .collect();
        let mut seen = BTreeSet::new();
        for t in &tokens {
            assert!(seen.insert(*t), "{g} writer {w}: token {t} applied twice in {tokens:?}");
        }
        let empty = BTreeSet::new();
        let acked = h.acked.get(&(g, w)).unwrap_or(&empty);
        let unknown = h.unknown.get(&(g, w)).unwrap_or(&empty);
        for t in acked {
            assert!(seen.contains(t), "{g} writer {w}: acknowledged token {t} is missing");
        }
        for t in &seen {
            assert!(
                acked.contains(t) || unknown.contains(t),
                "{g} writer {w}: token {t} was never written"
            );
        }
        found += seen.len();
    }
    found
}
