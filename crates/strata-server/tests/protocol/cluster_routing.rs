//! Cluster mode's routing through the command layer, with a router that stands for the
//! replication layer's layout: keys in one slot run or are redirected with Redis Cluster's
//! replies (MOVED, CROSSSLOT, CLUSTERDOWN), READONLY lets a replica serve reads, commands
//! without keys run anywhere, shard channels go to the slot's leader and their subscribers
//! are unsubscribed when it leaves, and a standalone server refuses READONLY as Redis does. CLUSTER
//! SLOTS, SHARDS, NODES, INFO, MYID, KEYSLOT, COUNTKEYSINSLOT and GETKEYSINSLOT report the
//! router's layout in Redis's formats.

use std::sync::Arc;
use strata_server::commands::dispatch;
use strata_server::config::{Config, Flags};
use strata_server::resp::Out;
use strata_server::routing::{self, Route, Router};
use strata_server::slots::key_slot;
use strata_server::state::{Conn, Shared};
use strata_server::storage::SyncPolicy;

/// A node of a test layout: clients at `port`, the bus 10000 above.
fn node(id: u64, port: u16) -> routing::NodeInfo {
    routing::NodeInfo { id, host: "127.0.0.1".into(), port, bus_port: port + 10000 }
}

/// Slots `first..=last` of a test layout.
fn range(first: u16, last: u16, leader: Option<u64>, replicas: &[u64]) -> routing::SlotRange {
    routing::SlotRange { first, last, leader, replicas: replicas.to_vec() }
}

/// This node leads the slot of `foo` (and of tag `{foo}`), is a replica of the slot of `bar`
/// (led at 127.0.0.1:7002), and the slot of `down` has no leader; every other slot is led at
/// 127.0.0.1:7001.
struct Layout;

impl Router for Layout {
    fn route(&self, slot: u16, write: bool, readonly: bool) -> Route {
        if slot == key_slot(b"foo") {
            Route::Local
        } else if slot == key_slot(b"bar") {
            if readonly && !write {
                Route::Local
            } else {
                Route::Moved("127.0.0.1:7002".into())
            }
        } else if slot == key_slot(b"down") {
            Route::Down
        } else {
            Route::Moved("127.0.0.1:7001".into())
        }
    }

    /// For CLUSTER: node 1 (this one) leads slots 0-8191 with node 2 as replica; node 2
    /// leads 8192-16382 with node 1 as replica; slot 16383 has no leader now.
    fn layout(&self) -> routing::Layout {
        routing::Layout {
            myself: 1,
            nodes: vec![node(1, 7000), node(2, 7002)],
            ranges: vec![
                range(0, 8191, Some(1), &[1, 2]),
                range(8192, 16382, Some(2), &[1, 2]),
                range(16383, 16383, None, &[2, 1]),
            ],
            epoch: 7,
        }
    }
}

/// A server on `dir`, standalone, or clustered with `router` as its layout.
fn shared_routed(dir: &std::path::Path, router: Option<Arc<dyn Router>>) -> Shared {
    let cfg = Config::resolve(Flags { dir: Some(dir.to_path_buf()), ..Flags::default() }).unwrap();
    let store =
        strata_server::types::open_databases(cfg.engine_options(), dir, SyncPolicy::No, 1).unwrap();
    let sh = Shared::new(store, cfg, 0);
    match router {
        Some(r) => sh.with_router(r),
        None => sh,
    }
}

fn shared(dir: &std::path::Path, clustered: bool) -> Shared {
    shared_routed(dir, clustered.then(|| Arc::new(Layout) as Arc<dyn Router>))
}

fn conn() -> Conn {
    Conn::new(1, true)
}

fn run(sh: &Shared, conn: &mut Conn, args: &[&str]) -> String {
    let mut out = Out::default();
    let a: Vec<Vec<u8>> = args.iter().map(|s| s.as_bytes().to_vec()).collect();
    dispatch(sh, conn, &a, &mut out);
    String::from_utf8_lossy(&out.buf).into_owned()
}

#[test]
fn keys_are_served_here_or_redirected_with_redis_cluster_replies() {
    let dir = tempfile::tempdir().unwrap();
    let sh = shared(dir.path(), true);
    let c = &mut conn();
    assert_eq!(run(&sh, c, &["SET", "foo", "1"]), "+OK\r\n");
    assert_eq!(run(&sh, c, &["GET", "foo"]), "$1\r\n1\r\n");
    let other = key_slot(b"other");
    assert_eq!(run(&sh, c, &["GET", "other"]), format!("-MOVED {other} 127.0.0.1:7001\r\n"));
    assert_eq!(run(&sh, c, &["SET", "other", "x"]), format!("-MOVED {other} 127.0.0.1:7001\r\n"));
    // Keys sharing a hash tag share a slot; keys in two slots are refused whatever the layout.
    assert_eq!(run(&sh, c, &["MSET", "{foo}a", "1", "{foo}b", "2"]), "+OK\r\n");
    assert_eq!(run(&sh, c, &["MGET", "{foo}a", "{foo}b"]), "*2\r\n$1\r\n1\r\n$1\r\n2\r\n");
    let crossslot = "-CROSSSLOT Keys in request don't hash to the same slot\r\n";
    assert_eq!(run(&sh, c, &["MGET", "foo", "other"]), crossslot);
    assert_eq!(run(&sh, c, &["DEL", "foo", "bar"]), crossslot);
    // Shard channels are routed by their slot, as keys are.
    assert_eq!(run(&sh, c, &["SPUBLISH", "foo", "m"]), ":0\r\n");
    assert_eq!(
        run(&sh, c, &["SPUBLISH", "other", "m"]),
        format!("-MOVED {other} 127.0.0.1:7001\r\n")
    );
    assert_eq!(run(&sh, c, &["SSUBSCRIBE", "foo", "other"]), crossslot);
    // Both keys of LMOVE/RPOPLPUSH, and the keys LMPOP's numkeys counts, are routed.
    assert_eq!(run(&sh, c, &["RPUSH", "{foo}l", "x"]), ":1\r\n");
    assert_eq!(run(&sh, c, &["LMOVE", "{foo}l", "{foo}m", "LEFT", "LEFT"]), "$1\r\nx\r\n");
    assert_eq!(run(&sh, c, &["RPOPLPUSH", "{foo}m", "other"]), crossslot);
    assert_eq!(run(&sh, c, &["LMPOP", "2", "{foo}m", "other", "LEFT"]), crossslot);
    assert_eq!(
        run(&sh, c, &["LMPOP", "1", "{foo}m", "LEFT"]),
        "*2\r\n$6\r\n{foo}m\r\n*1\r\n$1\r\nx\r\n"
    );
    assert_eq!(
        run(&sh, c, &["LMPOP", "1", "other", "LEFT"]),
        format!("-MOVED {other} 127.0.0.1:7001\r\n")
    );
    // A destination is routed with the sources: before counted ones, or named by an option.
    assert_eq!(run(&sh, c, &["ZADD", "{foo}z", "1", "m"]), ":1\r\n");
    assert_eq!(run(&sh, c, &["ZUNIONSTORE", "other", "1", "{foo}z"]), crossslot);
    assert_eq!(run(&sh, c, &["ZUNIONSTORE", "{foo}d", "1", "{foo}z"]), ":1\r\n");
    assert_eq!(run(&sh, c, &["SORT", "{foo}z", "ALPHA", "STORE", "other"]), crossslot);
    assert_eq!(run(&sh, c, &["SORT", "{foo}z", "ALPHA", "STORE", "{foo}s"]), ":1\r\n");
    assert_eq!(run(&sh, c, &["GEOADD", "{foo}g", "13.36", "38.11", "m"]), ":1\r\n");
    let georadius = ["GEORADIUS", "{foo}g", "13.36", "38.11", "10", "km", "STORE", "other"];
    assert_eq!(run(&sh, c, &georadius), crossslot);
    // The last STORE is the one written: a repeated one is routed too (regression: only the
    // first was, and the write went to `other`'s slot).
    let georadius =
        ["GEORADIUS", "{foo}g", "13.36", "38.11", "10", "km", "STORE", "{foo}x", "STORE", "other"];
    assert_eq!(run(&sh, c, &georadius), crossslot);
    let georadius = ["GEORADIUSBYMEMBER", "{foo}g", "m", "10", "km", "STOREDIST", "{foo}e"];
    assert_eq!(run(&sh, c, &georadius), ":1\r\n");
    // A count that names no keys routes nowhere: the command itself replies.
    assert_eq!(
        run(&sh, c, &["LMPOP", "0", "other", "LEFT"]),
        "-ERR numkeys should be greater than 0\r\n"
    );
    assert_eq!(run(&sh, c, &["GET", "down"]), "-CLUSTERDOWN Hash slot not served\r\n");
    // The key of OBJECT is its third argument.
    let moved_other = format!("-MOVED {other} 127.0.0.1:7001\r\n");
    assert_eq!(run(&sh, c, &["OBJECT", "ENCODING", "other"]), moved_other);
    // Without keys: anywhere. Arity is checked before routing, as Redis does.
    assert_eq!(run(&sh, c, &["PING"]), "+PONG\r\n");
    assert_eq!(run(&sh, c, &["GET"]), "-ERR wrong number of arguments for 'get' command\r\n");
    assert!(run(&sh, c, &["INFO", "cluster"]).contains("cluster_enabled:1"));
    assert!(run(&sh, c, &["INFO", "server"]).contains("redis_mode:cluster"));
}

#[test]
fn readonly_connections_read_from_a_replica_and_write_to_the_leader() {
    let dir = tempfile::tempdir().unwrap();
    let sh = shared(dir.path(), true);
    let c = &mut conn();
    let bar = key_slot(b"bar");
    let moved = format!("-MOVED {bar} 127.0.0.1:7002\r\n");
    assert_eq!(run(&sh, c, &["GET", "bar"]), moved);
    assert_eq!(run(&sh, c, &["READONLY"]), "+OK\r\n");
    assert_eq!(run(&sh, c, &["GET", "bar"]), "$-1\r\n");
    assert_eq!(run(&sh, c, &["SET", "bar", "1"]), moved);
    assert_eq!(run(&sh, c, &["READWRITE"]), "+OK\r\n");
    assert_eq!(run(&sh, c, &["GET", "bar"]), moved);
}

#[test]
fn a_standalone_server_serves_every_key_and_refuses_readonly() {
    let dir = tempfile::tempdir().unwrap();
    let sh = shared(dir.path(), false);
    let c = &mut conn();
    assert_eq!(run(&sh, c, &["MSET", "foo", "1", "other", "2"]), "+OK\r\n");
    assert_eq!(run(&sh, c, &["READONLY"]), "-ERR This instance has cluster support disabled\r\n");
    assert!(run(&sh, c, &["INFO", "cluster"]).contains("cluster_enabled:0"));
}

#[test]
fn cluster_subcommands_report_the_layout_in_redis_formats() {
    let dir = tempfile::tempdir().unwrap();
    let sh = shared(dir.path(), true);
    let c = &mut conn();
    let id = |n: u64| format!("{n:040x}");
    assert_eq!(run(&sh, c, &["CLUSTER", "MYID"]), format!("$40\r\n{}\r\n", id(1)));
    // The specification's example, and hash tags.
    assert_eq!(run(&sh, c, &["CLUSTER", "KEYSLOT", "123456789"]), ":12739\r\n");
    assert_eq!(run(&sh, c, &["CLUSTER", "KEYSLOT", "{user1000}.following"]), ":3443\r\n");
    // HELP: its lines, one per subcommand and its purpose (COMMAND lists `cluster|help`).
    let help = run(&sh, c, &["CLUSTER", "HELP"]);
    assert!(help.starts_with('*') && help.contains("+KEYSLOT <key>\r\n"), "{help}");
    assert_eq!(
        run(&sh, c, &["CLUSTER", "HELP", "x"]),
        "-ERR wrong number of arguments for 'cluster|help' command\r\n"
    );
    // SLOTS: ranges with a leader, the leader alone (no node is ever named a replica there:
    // redis-py would take it for one everywhere).
    let node =
        |n: u64, port: u16| format!("*3\r\n$9\r\n127.0.0.1\r\n:{port}\r\n$40\r\n{}\r\n", id(n));
    assert_eq!(
        run(&sh, c, &["CLUSTER", "SLOTS"]),
        format!(
            "*2\r\n*3\r\n:0\r\n:8191\r\n{}*3\r\n:8192\r\n:16382\r\n{}",
            node(1, 7000),
            node(2, 7002)
        )
    );
    // NODES: every node a master with the slots it leads.
    assert_eq!(run(&sh, c, &["CLUSTER", "NODES"]), {
        let text = format!(
            "{} 127.0.0.1:7000@17000 myself,master - 0 0 7 connected 0-8191\n\
                 {} 127.0.0.1:7002@17002 master - 0 0 7 connected 8192-16382\n",
            id(1),
            id(2)
        );
        format!("${}\r\n{text}\r\n", text.len())
    });
    let info = run(&sh, c, &["CLUSTER", "INFO"]);
    for want in [
        "cluster_state:fail\r\n",
        "cluster_slots_ok:16383\r\n",
        "cluster_slots_fail:1\r\n",
        "cluster_known_nodes:2\r\n",
        "cluster_size:2\r\n",
        "cluster_current_epoch:7\r\n",
    ] {
        assert!(info.contains(want), "{want:?} not in {info:?}");
    }
    let shards = run(&sh, c, &["CLUSTER", "SHARDS"]);
    assert!(
        shards.starts_with("*3\r\n*4\r\n$5\r\nslots\r\n*2\r\n:0\r\n:8191\r\n$5\r\nnodes\r\n*2\r\n"),
        "{shards}"
    );
    assert!(
        shards.contains("$4\r\nrole\r\n$6\r\nmaster\r\n")
            && shards.contains("$6\r\nhealth\r\n$4\r\nfail\r\n")
    );
    // Keys in a slot, here.
    let slot = key_slot(b"foo").to_string();
    assert_eq!(run(&sh, c, &["MSET", "{foo}1", "a", "{foo}2", "b", "foo", "c"]), "+OK\r\n");
    assert_eq!(run(&sh, c, &["CLUSTER", "COUNTKEYSINSLOT", &slot]), ":3\r\n");
    assert_eq!(
        run(&sh, c, &["CLUSTER", "GETKEYSINSLOT", &slot, "2"]),
        "*2\r\n$3\r\nfoo\r\n$6\r\n{foo}1\r\n"
    );
    assert_eq!(run(&sh, c, &["CLUSTER", "COUNTKEYSINSLOT", "16384"]), "-ERR Invalid slot\r\n");
    assert_eq!(
        run(&sh, c, &["CLUSTER", "GETKEYSINSLOT", &slot, "-1"]),
        "-ERR Invalid number of keys\r\n"
    );
    assert_eq!(
        run(&sh, c, &["CLUSTER", "BOGUS"]),
        "-ERR unknown subcommand 'BOGUS'. Try CLUSTER HELP.\r\n"
    );
    assert_eq!(
        run(&sh, c, &["CLUSTER", "MYID", "x"]),
        "-ERR wrong number of arguments for 'cluster|myid' command\r\n"
    );
    // A standalone server has no cluster.
    let dir2 = tempfile::tempdir().unwrap();
    let alone = shared(dir2.path(), false);
    assert_eq!(
        run(&alone, c, &["CLUSTER", "SLOTS"]),
        "-ERR This instance has cluster support disabled\r\n"
    );
}

/// Node 1 leads slots 0-8191 (node 2 its replica) and is a replica of 8192-16383 (led by
/// node 2); until `split` is set, it leads every slot.
struct Halves {
    split: std::sync::atomic::AtomicBool,
}

impl Halves {
    fn split(&self) -> bool {
        self.split.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl Router for Halves {
    fn route(&self, slot: u16, write: bool, readonly: bool) -> Route {
        if slot < 8192 || !self.split() || (readonly && !write) {
            Route::Local
        } else {
            Route::Moved("127.0.0.1:7002".into())
        }
    }

    fn layout(&self) -> routing::Layout {
        let ranges = if self.split() {
            vec![range(0, 8191, Some(1), &[1, 2]), range(8192, 16383, Some(2), &[2, 1])]
        } else {
            vec![range(0, 16383, Some(1), &[1, 2])]
        };
        routing::Layout { myself: 1, nodes: vec![node(1, 7000), node(2, 7002)], ranges, epoch: 1 }
    }
}

/// The commands over the whole keyspace see the keys of the slots the node leads, and on a
/// READONLY connection those it holds a replica of too: summed over the nodes, DBSIZE
/// counts each key once.
#[test]
fn keyspace_wide_commands_see_the_slots_the_node_serves() {
    let dir = tempfile::tempdir().unwrap();
    let router = Arc::new(Halves { split: false.into() });
    let sh = shared_routed(dir.path(), Some(router.clone()));
    let c = &mut conn();
    let keys: Vec<String> = (0..40).map(|i| format!("k{i}")).collect();
    for k in &keys {
        assert_eq!(run(&sh, c, &["SET", k, "v"]), "+OK\r\n");
    }
    assert_eq!(run(&sh, c, &["DBSIZE"]), ":40\r\n");
    router.split.store(true, std::sync::atomic::Ordering::SeqCst);
    let mut led: Vec<String> =
        keys.iter().filter(|k| key_slot(k.as_bytes()) < 8192).cloned().collect();
    led.sort();
    assert!(!led.is_empty() && led.len() < keys.len(), "the keys fall in both halves");

    let listed = |reply: &str| {
        let mut v: Vec<String> =
            reply.split("\r\n").filter(|l| l.starts_with('k')).map(String::from).collect();
        v.sort();
        v
    };
    assert_eq!(run(&sh, c, &["DBSIZE"]), format!(":{}\r\n", led.len()));
    assert_eq!(listed(&run(&sh, c, &["KEYS", "*"])), led);
    let scanned = run(&sh, c, &["SCAN", "0", "COUNT", "1000"]);
    assert!(scanned.starts_with("*2\r\n$1\r\n0\r\n"), "{scanned}");
    assert_eq!(listed(&scanned), led);
    for _ in 0..20 {
        let r = run(&sh, c, &["RANDOMKEY"]);
        let k = r.split("\r\n").nth(1).unwrap().to_string();
        assert!(led.contains(&k), "RANDOMKEY {k} is not led here");
    }

    assert_eq!(run(&sh, c, &["READONLY"]), "+OK\r\n");
    assert_eq!(run(&sh, c, &["DBSIZE"]), ":40\r\n");
    assert_eq!(listed(&run(&sh, c, &["KEYS", "*"])).len(), 40);
}

/// A layout where this node leads the slot of `foo` until `moved` is set, then is redirected
/// to 127.0.0.1:7001 for it; as [`Layout`] for `bar` (a replica here).
#[derive(Default)]
struct Moving {
    moved: std::sync::atomic::AtomicBool,
}

impl Router for Moving {
    fn route(&self, slot: u16, write: bool, readonly: bool) -> Route {
        let here = !self.moved.load(std::sync::atomic::Ordering::Relaxed);
        if (slot == key_slot(b"foo") && here) || (slot == key_slot(b"bar") && readonly && !write) {
            Route::Local
        } else {
            Route::Moved("127.0.0.1:7001".into())
        }
    }

    fn layout(&self) -> routing::Layout {
        Layout.layout()
    }
}

/// Shard channels meet on the slot's leader (a READONLY connection is sent there too), and
/// when the slot leaves this node its subscribers are told `sunsubscribe`, as Redis Cluster
/// tells them, so that they subscribe again where it went.
#[test]
fn shard_subscribers_are_unsubscribed_when_their_slot_leaves() {
    use strata_server::commands::pubsub::deliver;
    let dir = tempfile::tempdir().unwrap();
    let router = Arc::new(Moving::default());
    let sh = shared_routed(dir.path(), Some(router.clone()));
    let (sub, publisher) = (&mut conn(), &mut conn());
    assert_eq!(run(&sh, sub, &["READONLY"]), "+OK\r\n");
    let bar = key_slot(b"bar");
    assert_eq!(run(&sh, sub, &["SSUBSCRIBE", "bar"]), format!("-MOVED {bar} 127.0.0.1:7001\r\n"));
    assert_eq!(run(&sh, sub, &["GET", "bar"]), "$-1\r\n", "a READONLY read stays here");
    run(&sh, sub, &["SSUBSCRIBE", "foo"]);
    assert_eq!(
        std::mem::take(&mut sub.pushes),
        b"*3\r\n$10\r\nssubscribe\r\n$3\r\nfoo\r\n:1\r\n".to_vec()
    );
    assert_eq!(run(&sh, publisher, &["SPUBLISH", "foo", "m"]), ":1\r\n");
    let mut written = Vec::new();
    let d = sub.subs.as_mut().unwrap().rx.try_recv().unwrap();
    deliver(&sh, sub, d, &mut written);
    assert_eq!(written, b"*3\r\n$8\r\nsmessage\r\n$3\r\nfoo\r\n$1\r\nm\r\n".to_vec());
    // Still here: nothing is revoked.
    strata_server::server::tasks::revoke_moved_shards(&sh);
    assert!(sub.subs.as_mut().unwrap().rx.try_recv().is_err());
    router.moved.store(true, std::sync::atomic::Ordering::Relaxed);
    strata_server::server::tasks::revoke_moved_shards(&sh);
    let d = sub.subs.as_mut().unwrap().rx.try_recv().unwrap();
    written.clear();
    deliver(&sh, sub, d, &mut written);
    assert_eq!(written, b"*3\r\n$12\r\nsunsubscribe\r\n$3\r\nfoo\r\n:0\r\n".to_vec());
    assert!(sub.subs.as_ref().unwrap().shards.is_empty());
    let foo = key_slot(b"foo");
    assert_eq!(
        run(&sh, publisher, &["SPUBLISH", "foo", "m"]),
        format!("-MOVED {foo} 127.0.0.1:7001\r\n")
    );
    assert_eq!(
        run(&sh, sub, &["GET", "x"]),
        format!("-MOVED {} 127.0.0.1:7001\r\n", key_slot(b"x"))
    );
}

/// Node 3 leads nothing: it holds a replica of slots 0-8191, led by node 1 (or by nobody
/// while the `Option` is `None`), and nothing of the rest, led by node 2.
struct Follows(Option<u64>);

impl Router for Follows {
    fn route(&self, _: u16, _: bool, _: bool) -> Route {
        Route::Moved("127.0.0.1:7000".into())
    }

    fn layout(&self) -> routing::Layout {
        routing::Layout {
            myself: 3,
            nodes: vec![node(1, 7000), node(2, 7002), node(3, 7004)],
            ranges: vec![range(0, 8191, self.0, &[1, 3]), range(8192, 16383, Some(2), &[2])],
            epoch: 1,
        }
    }
}

/// ROLE says what INFO replication's `role` says: standalone, a master without replicas;
/// in cluster mode, master of the nodes holding the ranges it leads, or slave of the leader
/// of the first range it holds.
#[test]
fn role_names_the_replicas_of_what_a_node_leads_or_the_leader_it_follows() {
    let dir = tempfile::tempdir().unwrap();
    let c = &mut conn();
    let alone = shared(dir.path(), false);
    assert_eq!(run(&alone, c, &["ROLE"]), "*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n");
    assert_eq!(
        run(&alone, c, &["ROLE", "x"]),
        "-ERR wrong number of arguments for 'role' command\r\n"
    );
    drop(alone);
    let dir = tempfile::tempdir().unwrap();
    let leads = shared(dir.path(), true);
    assert_eq!(
        run(&leads, c, &["ROLE"]),
        "*3\r\n$6\r\nmaster\r\n:0\r\n*1\r\n*3\r\n$9\r\n127.0.0.1\r\n$4\r\n7002\r\n$1\r\n0\r\n"
    );
    for (leader, want) in [
        (Some(1), "*5\r\n$5\r\nslave\r\n$9\r\n127.0.0.1\r\n:7000\r\n$9\r\nconnected\r\n:0\r\n"),
        (None, "*5\r\n$5\r\nslave\r\n$0\r\n\r\n:0\r\n$7\r\nconnect\r\n:0\r\n"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let follows = shared_routed(dir.path(), Some(Arc::new(Follows(leader))));
        assert_eq!(run(&follows, c, &["ROLE"]), want, "{leader:?}");
    }
}
