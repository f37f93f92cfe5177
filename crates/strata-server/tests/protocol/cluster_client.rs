//! A real cluster client (the `redis` crate's, which reads CLUSTER SLOTS, follows `MOVED` and
//! waits out `CLUSTERDOWN`) runs a model workload against three server processes while a
//! fourth node joins and takes its share and node 1 leaves: every reply equals the model's
//! (a BTreeMap of strings, counters and lists), no command fails, and at the end every key
//! reads back as the model holds it.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use redis::cluster::ClusterClient;
use redis::Commands;

use super::cluster_map::{admin, partitions, settled, Loopback};
use crate::common::{Raw, Reply};

/// What the model holds for a key.
#[derive(Clone, Debug, PartialEq)]
enum Val {
    Str(String),
    Count(i64),
    List(Vec<String>),
}

/// One step of the workload on key index `i` (of `keys`), checked against `model`.
fn step(
    con: &mut redis::cluster::ClusterConnection,
    model: &mut BTreeMap<String, Val>,
    n: u64,
    keys: u64,
) {
    let i = n.wrapping_mul(2_654_435_761) % keys;
    match n % 5 {
        0 | 1 => {
            let (k, v) = (format!("s:{i}"), format!("v{n}"));
            let r: String = con.set(&k, &v).unwrap_or_else(|e| panic!("SET {k}: {e}"));
            assert_eq!(r, "OK");
            model.insert(k, Val::Str(v));
        }
        2 => {
            let k = format!("c:{i}");
            let r: i64 = con.incr(&k, 1).unwrap_or_else(|e| panic!("INCR {k}: {e}"));
            let now = match model.get(&k) {
                Some(Val::Count(c)) => c + 1,
                _ => 1,
            };
            assert_eq!(r, now, "INCR {k}");
            model.insert(k, Val::Count(now));
        }
        3 => {
            let (k, v) = (format!("l:{i}"), format!("e{n}"));
            let r: usize = con.lpush(&k, &v).unwrap_or_else(|e| panic!("LPUSH {k}: {e}"));
            let mut list = match model.remove(&k) {
                Some(Val::List(l)) => l,
                _ => Vec::new(),
            };
            list.insert(0, v);
            assert_eq!(r, list.len(), "LPUSH {k}");
            model.insert(k, Val::List(list));
        }
        _ => {
            let k = format!("s:{i}");
            let r: Option<String> = con.get(&k).unwrap_or_else(|e| panic!("GET {k}: {e}"));
            let want = match model.get(&k) {
                Some(Val::Str(s)) => Some(s.clone()),
                _ => None,
            };
            assert_eq!(r, want, "GET {k}");
            if n % 35 == 4 {
                let d: i64 = con.del(&k).unwrap_or_else(|e| panic!("DEL {k}: {e}"));
                assert_eq!(d, i64::from(model.remove(&k).is_some()), "DEL {k}");
            }
        }
    }
}

/// Three nodes on loopback once their first map is committed and every partition has a
/// leader; their client ports.
fn settled_three() -> (Loopback, Vec<u16>) {
    let cluster = Loopback::start_three();
    let client = cluster.client.clone();
    admin(client[0], &["CLUSTER", "MAP"]);
    settled(&client[..3], client[0]);
    (cluster, client)
}

/// A cluster client seeded with the nodes on `ports`, retrying 60 times, waiting 10 ms to 1 s
/// before each retry of `TRYAGAIN` or `CLUSTERDOWN`. (The crate's default floor, 1.28 s
/// a retry, keeps a workload asleep while whole slot moves go by, unseen by its writes.)
fn client_of(ports: &[u16]) -> ClusterClient {
    let seeds: Vec<String> = ports.iter().map(|p| format!("redis://127.0.0.1:{p}/")).collect();
    ClusterClient::builder(seeds)
        .retries(60)
        .min_retry_wait(10)
        .max_retry_wait(1_000)
        .retry_wait_formula(10, 2)
        .connection_timeout(Duration::from_secs(5))
        .response_timeout(Duration::from_secs(10))
        .build()
        .unwrap()
}

/// Runs the model workload over `keys` keys through `cc` until `stop` (and at least 2,000
/// steps); the model and the steps run.
fn workload(
    cc: &ClusterClient,
    stop: &Arc<AtomicBool>,
    keys: u64,
) -> std::thread::JoinHandle<(BTreeMap<String, Val>, u64)> {
    let (stop, cc) = (stop.clone(), cc.clone());
    std::thread::spawn(move || {
        let mut con = cc.get_connection().unwrap();
        let mut model = BTreeMap::new();
        let mut n = 0u64;
        while !stop.load(Ordering::Relaxed) || n < 2_000 {
            step(&mut con, &mut model, n, keys);
            n += 1;
        }
        (model, n)
    })
}

/// The key of `hot_writer`'s in the slot of `key` (a hash tag of it).
fn hot_key(key: &str) -> String {
    format!("hot{{{key}}}")
}

/// Until `stop`, increments a counter in the slot `moving` names (none while it holds
/// `u32::MAX`), a write about every millisecond, each reply checked against its own count;
/// the counts by slot. The counter's key is a hash tag of the key `by_slot` gives that slot.
fn hot_writer(
    cc: &ClusterClient,
    stop: &Arc<AtomicBool>,
    moving: &Arc<AtomicU32>,
    by_slot: BTreeMap<u16, String>,
) -> std::thread::JoinHandle<BTreeMap<u16, u64>> {
    let (stop, moving, cc) = (stop.clone(), moving.clone(), cc.clone());
    std::thread::spawn(move || {
        let mut con = cc.get_connection().unwrap();
        let mut counts = BTreeMap::new();
        while !stop.load(Ordering::Relaxed) {
            let Ok(slot) = u16::try_from(moving.load(Ordering::Relaxed)) else {
                std::thread::sleep(Duration::from_millis(1));
                continue;
            };
            let k = hot_key(&by_slot[&slot]);
            let n: u64 = con.incr(&k, 1).unwrap_or_else(|e| panic!("INCR {k}: {e}"));
            let count = counts.entry(slot).or_insert(0);
            *count += 1;
            assert_eq!(n, *count, "INCR {k}");
            std::thread::sleep(Duration::from_millis(1));
        }
        counts
    })
}

/// Every key reads back through `con` as `model` holds it, and the string keys of the
/// workload's `keys` the model does not hold are absent.
fn check_model(
    con: &mut redis::cluster::ClusterConnection,
    model: &BTreeMap<String, Val>,
    keys: u64,
) {
    for (k, v) in model {
        match v {
            Val::Str(s) => assert_eq!(con.get::<_, String>(k).unwrap(), *s, "{k}"),
            Val::Count(c) => assert_eq!(con.get::<_, i64>(k).unwrap(), *c, "{k}"),
            Val::List(l) => assert_eq!(con.lrange::<_, Vec<String>>(k, 0, -1).unwrap(), *l, "{k}"),
        }
    }
    for k in (0..keys).map(|i| format!("s:{i}")).filter(|k| !model.contains_key(k)) {
        assert_eq!(con.get::<_, Option<String>>(&k).unwrap(), None, "{k}");
    }
}

#[test]
fn a_cluster_client_sees_the_model_while_a_node_joins_and_another_leaves() {
    let (mut cluster, client) = settled_three();

    let stop = Arc::new(AtomicBool::new(false));
    let worker = workload(&client_of(&client[..3]), &stop, 200);

    cluster.start_fourth();
    admin(client[0], &["CLUSTER", "ADDNODE", "4", &cluster.addr(4)]);
    admin(client[0], &["CLUSTER", "REBALANCE"]);
    settled(&client, client[0]);
    admin(client[1], &["CLUSTER", "REMOVENODE", "1"]);
    settled(&client[1..], client[1]);
    while !partitions(client[0]).is_empty() {
        std::thread::sleep(Duration::from_millis(100));
    }
    admin(client[1], &["CLUSTER", "FORGETNODE", "1"]);
    drop(cluster.nodes.remove(&1));
    std::thread::sleep(Duration::from_millis(500));
    stop.store(true, Ordering::Relaxed);
    let (model, ops) = worker.join().unwrap();
    assert!(ops >= 2_000, "{ops} operations");

    // Every key as the model holds it, through a new client seeded with the nodes left.
    let mut con = client_of(&client[1..]).get_connection().unwrap();
    check_model(&mut con, &model, 200);
}

/// Slots move between partitions (`strata-cluster move-slots`) while the cluster client runs
/// the model workload on keys in those slots and a second client counts in the slot being
/// moved (so every copy has changes to carry through its outbox): writes to a moving slot wait for its copy
/// (`TRYAGAIN`), clients are sent on with `ASK` then `MOVED`, and no reply differs from the
/// model's; the map's slot table and CLUSTER SLOTS name the new partitions, and every key
/// reads back as the model holds it.
#[test]
fn a_cluster_client_sees_the_model_while_slots_move_between_partitions() {
    let (_cluster, client) = settled_three();

    let stop = Arc::new(AtomicBool::new(false));
    let worker = workload(&client_of(&client[..3]), &stop, 40);

    // The slots of a dozen of the workload's keys, each to the next partition (of four).
    let by_slot: BTreeMap<u16, String> = (0..12)
        .flat_map(|i| [format!("s:{i}"), format!("c:{i}"), format!("l:{i}")])
        .map(|k| (strata_server::slots::key_slot(k.as_bytes()), k))
        .collect();
    let slots: Vec<u16> = by_slot.keys().copied().collect();
    // A writer that counts on a key in the slot being moved, so that every copy has writes
    // to carry in its outbox (the workload's 40 keys meet a given slot only now and then).
    let moving = Arc::new(AtomicU32::new(u32::MAX));
    let hot = hot_writer(&client_of(&client[..3]), &stop, &moving, by_slot.clone());
    let partition = |s: u16| (u32::from(s) * 4 / 16384) as u16;
    let ctl = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_strata-cluster"))
            .args(["--node", &format!("127.0.0.1:{}", client[1]), "--timeout", "60"])
            .args(args)
            .output()
            .unwrap()
    };
    let mut changes = 0u64;
    for s in &slots {
        let to = ((partition(*s) + 1) % 4).to_string();
        moving.store(u32::from(*s), Ordering::Relaxed);
        // Pages of two records or changes: several pages, and several rounds of the outbox
        // while the writers write.
        let out = ctl(&["move-slots", &s.to_string(), "--to", &to, "--page", "2"]);
        assert!(out.status.success(), "slot {s}: {out:?}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(&format!("slot {s} moved from partition")), "{text}");
        // "..: R records, C changes copied, writes held D ms"
        let copied = text.split(", ").nth(1).and_then(|c| c.split(' ').next());
        changes += copied.and_then(|c| c.parse::<u64>().ok()).expect(&text);
        assert!(text.contains("writes held"), "{text}");
    }
    moving.store(u32::MAX, Ordering::Relaxed);
    // The writers wrote to slots while they were copied: the outboxes carried those writes.
    assert!(changes > 0, "no change went through an outbox");
    // Moving a slot where it is already is no error.
    let s = slots[0];
    let out = ctl(&["move-slots", &s.to_string(), "--to", &((partition(s) + 1) % 4).to_string()]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("is partition"), "{out:?}");
    let out = ctl(&["move-slots", "16384", "--to", "1"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::Relaxed);
    let (model, ops) = worker.join().unwrap();
    assert!(ops >= 2_000, "{ops} operations");
    let counts = hot.join().unwrap();

    // The map lists the moved slots; CLUSTER SLOTS gives each its own range.
    let map = admin(client[2], &["CLUSTER", "MAP"]);
    for s in &slots {
        let line = format!("slot {s} partition {}", (partition(*s) + 1) % 4);
        assert!(map.contains(&line), "{line} not in\n{map}");
    }
    let mut con = client_of(&client[..3]).get_connection().unwrap();
    let ranges: Vec<Vec<redis::Value>> =
        redis::cmd("CLUSTER").arg("SLOTS").query(&mut con).unwrap();
    let ranges: Vec<(u16, u16)> = ranges
        .iter()
        .map(|r| match (&r[0], &r[1]) {
            (redis::Value::Int(a), redis::Value::Int(b)) => (*a as u16, *b as u16),
            other => panic!("CLUSTER SLOTS range {other:?}"),
        })
        .collect();
    let covered: u32 = ranges.iter().map(|(a, b)| u32::from(b - a) + 1).sum();
    assert_eq!(covered, 16384);
    for s in &slots {
        assert!(ranges.iter().any(|(a, b)| a == s && b == s), "slot {s} not a range of its own");
    }
    for (slot, n) in &counts {
        let k = hot_key(&by_slot[slot]);
        assert_eq!(con.get::<_, u64>(&k).unwrap(), *n, "{k}");
    }
    check_model(&mut con, &model, 40);
    // The keys of a moved slot (the workload's and the counter) are counted once, where it went.
    let s = strata_server::slots::key_slot(b"s:0");
    let want = model.keys().filter(|k| strata_server::slots::key_slot(k.as_bytes()) == s).count()
        + usize::from(counts.contains_key(&s));
    let n: i64 = redis::cmd("CLUSTER").arg("COUNTKEYSINSLOT").arg(s).query(&mut con).unwrap();
    assert_eq!(n as usize, want, "slot {s}");
}

/// Sends a move step (or any command naming a partition) to the node leading it, following
/// `REDIRECT`; the reply and the port that gave it.
fn at_leader(port: u16, args: &[&str]) -> (Reply, u16) {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    at_leader_bytes(port, &args)
}

/// [`at_leader`] with arguments that need not be text (records' keys and values).
fn at_leader_bytes(port: u16, args: &[&[u8]]) -> (Reply, u16) {
    let mut port = port;
    for _ in 0..50 {
        let mut c = Raw::connect(port);
        c.send_raw(&Raw::encode(args));
        match c.read() {
            Reply::Error(e) if e.starts_with("REDIRECT ") => {
                port = e.rsplit(':').next().unwrap().parse().unwrap();
            }
            Reply::Error(e) if e.starts_with("CLUSTERDOWN") => {
                std::thread::sleep(Duration::from_millis(100));
            }
            other => return (other, port),
        }
    }
    panic!("{args:?}: no leader answered");
}

/// Sends `items` (a SLOTRECORDS or SLOTTAIL reply after its cursor) to `command` (IMPORTRECORDS
/// or IMPORTCHANGES) of partition `t` at its leader, as the controller does; how many it
/// wrote.
fn forward(port: u16, command: &str, t: &str, slot: &str, items: &[Reply]) -> i64 {
    let parts: Vec<Vec<u8>> = items
        .iter()
        .map(|r| match r {
            Reply::Int(i) => i.to_string().into_bytes(),
            Reply::Bulk(b) => b.clone(),
            other => panic!("{other:?}"),
        })
        .collect();
    let mut args: Vec<&[u8]> = vec![b"CLUSTER", command.as_bytes(), t.as_bytes(), slot.as_bytes()];
    args.extend(parts.iter().map(Vec::as_slice));
    match at_leader_bytes(port, &args).0 {
        Reply::Int(n) => n,
        other => panic!("{command}: {other:?}"),
    }
}

/// A slot is copied while clients write to it: from the `copy` step on its source records
/// every write to the slot in its outbox and goes on serving it; the bulk pages and then the
/// outbox (puts, deletes, a FLUSHALL's range deletion) replayed in the target give it the
/// source's final state; writes wait only from the freeze, which comes after the bulk.
#[test]
fn a_slot_is_copied_while_its_writes_go_on_and_the_outbox_carries_them() {
    let (_cluster, client) = settled_three();
    // `foo` is in slot 12182, partition 2 of 4; it moves to partition 0.
    let (slot, s, t) = ("12182", "2", "0");
    let (_, src) = at_leader(client[0], &["CLUSTER", "MOVESLOT", s, "state", slot, t]);
    let run = |args: &[&str]| Raw::connect(src).cmd(args);
    assert_eq!(run(&["SET", "foo", "v1"]), Reply::Simple("OK".into()));
    assert_eq!(run(&["HSET", "{foo}h", "a", "1", "b", "2"]), Reply::Int(2));
    assert_eq!(run(&["SET", "{foo}gone", "x"]), Reply::Simple("OK".into()));
    assert_eq!(run(&["ZADD", "{foo}z", "1", "one", "2", "two"]), Reply::Int(2));
    // Large enough that the bulk page goes to the target's replicas as table files.
    let big = |i: usize| format!("{i}").repeat(20_000);
    for i in 0..4 {
        assert_eq!(run(&["HSET", "{foo}big", &format!("f{i}"), &big(i)]), Reply::Int(1));
    }
    let step = |p: &str, op: &str, peer: &str| {
        at_leader(client[0], &["CLUSTER", "MOVESLOT", p, op, slot, peer]).0
    };
    let ok = Reply::Simple("ok".into());
    assert_eq!(step(t, "import", s), ok);
    assert_eq!(step(s, "copy", t), ok);
    assert_eq!(step(s, "state", t), Reply::Simple("copying to partition 0".into()));
    // The controller's status names both ends, and how to finish a move left half done.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_strata-cluster"))
        .args(["--node", &format!("127.0.0.1:{}", client[0]), "--timeout", "30", "status"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    for want in [
        "slot 12182 copying (partition 0 at the other end): in a move; unless a move-slots is \
         running, `move-slots 12182 --to 0` finishes it",
        "slot 12182 importing (partition 2 at the other end)",
    ] {
        assert!(text.contains(want), "{want} not in\n{text}");
    }
    // Served while copying: reads and writes, at once.
    assert_eq!(run(&["SET", "foo", "v2"]), Reply::Simple("OK".into()));
    assert_eq!(run(&["GET", "foo"]), Reply::Bulk(b"v2".to_vec()));
    // The target takes no client while it imports.
    let (_, dst) = at_leader(client[0], &["CLUSTER", "MOVESLOT", t, "state", slot, s]);
    let r = Raw::connect(dst).cmd(&["GET", "foo"]);
    assert!(matches!(&r, Reply::Error(e) if e.starts_with("MOVED ")), "{r:?}");
    // The bulk copy in one page (over 64 KiB: ingested as table files).
    let mut cursor = Vec::new();
    let mut bulk = 0;
    loop {
        let args: [&[u8]; 6] =
            [b"CLUSTER", b"SLOTRECORDS", s.as_bytes(), slot.as_bytes(), &cursor, b"100"];
        let Reply::Array(items) = at_leader_bytes(client[0], &args).0 else { panic!() };
        let Reply::Bulk(next) = &items[0] else { panic!("{items:?}") };
        bulk += forward(client[0], "IMPORTRECORDS", t, slot, &items[1..]);
        if next.is_empty() {
            break;
        }
        cursor = next.clone();
    }
    assert!(bulk >= 11, "{bulk} records");
    // Writes after the bulk: the outbox carries them.
    assert_eq!(run(&["SET", "foo", "v3"]), Reply::Simple("OK".into()));
    assert_eq!(run(&["DEL", "{foo}gone"]), Reply::Int(1));
    assert_eq!(run(&["HSET", "{foo}h", "c", "3"]), Reply::Int(1));
    assert_eq!(run(&["ZREM", "{foo}z", "one"]), Reply::Int(1));
    let tail = |after: &str, count: &str| {
        let args = ["CLUSTER", "SLOTTAIL", s, slot, after, count];
        let Reply::Array(items) = at_leader(client[0], &args).0 else { panic!() };
        let Reply::Bulk(last) = &items[0] else { panic!("{items:?}") };
        (String::from_utf8(last.clone()).unwrap(), items[1..].to_vec())
    };
    // Whole entries, at least `count` changes: the first write's alone (one change), then
    // the rest from where it ended.
    let (first, items) = tail("0", "1");
    assert_eq!(items.len(), 4, "{items:?}");
    assert_eq!(items[0], Reply::Int(1), "a put");
    assert_eq!(forward(client[0], "IMPORTCHANGES", t, slot, &items), 1);
    let (mut last, items) = tail(&first, "1000");
    assert!(items.len() >= 4 * 5, "{items:?}");
    forward(client[0], "IMPORTCHANGES", t, slot, &items);
    assert_eq!(tail(&last, "1000").1, Vec::new(), "caught up");
    // FLUSHALL on the source's leader: a range deletion over the copying slot, then a write.
    assert_eq!(run(&["FLUSHALL"]), Reply::Simple("OK".into()));
    assert_eq!(run(&["SET", "foo", "v4"]), Reply::Simple("OK".into()));
    assert_eq!(run(&["SET", "{foo}new", "n"]), Reply::Simple("OK".into()));
    // The freeze; a write waits from it on.
    assert_eq!(step(s, "freeze", t), ok);
    let waiting = std::thread::spawn(move || Raw::connect(src).cmd(&["SET", "foo", "late"]));
    let (l, items) = tail(&last, "1000");
    assert!(items.contains(&Reply::Int(3)), "a range deletion: {items:?}");
    forward(client[0], "IMPORTCHANGES", t, slot, &items);
    last = l;
    assert_eq!(tail(&last, "1000").1, Vec::new());
    // A change of another slot is refused, naming it.
    let args = ["CLUSTER", "IMPORTCHANGES", t, slot, "1", "0", "\x00\x01x", "v"];
    let r = at_leader(client[0], &args).0;
    assert!(matches!(&r, Reply::Error(e) if e.contains("not one of slot 12182")), "{r:?}");
    let args = ["CLUSTER", "IMPORTCHANGES", t, slot, "9", "0", "k", "v"];
    let r = at_leader(client[0], &args).0;
    assert!(matches!(&r, Reply::Error(e) if e.contains("change kind 9")), "{r:?}");
    assert_eq!(step(s, "handoff", t), ok);
    let r = waiting.join().unwrap();
    assert!(matches!(&r, Reply::Error(e) if e.starts_with("ASK 12182 ")), "{r:?}");
    assert_eq!(step(t, "adopt", s), ok);
    // The target holds the source's final state: FLUSHALL's deletion included (of the
    // ingested records too).
    let mut c = Raw::connect(dst);
    assert_eq!(c.cmd(&["GET", "foo"]), Reply::Bulk(b"v4".to_vec()));
    assert_eq!(c.cmd(&["GET", "{foo}new"]), Reply::Bulk(b"n".to_vec()));
    for gone in ["{foo}gone", "{foo}h", "{foo}z", "{foo}big"] {
        assert_eq!(c.cmd(&["EXISTS", gone]), Reply::Int(0), "{gone}");
    }
    assert_eq!(c.cmd(&["CLUSTER", "COUNTKEYSINSLOT", slot]), Reply::Int(2));
    // The release deletes the source's records and its outbox.
    assert_eq!(step(s, "release", t), ok);
    let r = at_leader(client[0], &["CLUSTER", "SLOTTAIL", s, slot, "0", "10"]).0;
    assert!(matches!(&r, Reply::Error(e) if e.contains("released")), "{r:?}");
}

/// The steps of a move one by one, as a client sees them: a write to the frozen slot waits
/// and is sent on with `ASK` once the source hands it off; the target serves it from its
/// adopt on (with or without ASKING); after the map change every node answers `MOVED` to the
/// target; steps out of order are refused with the slot's state; the source's copy is gone
/// after the release.
#[test]
fn a_moving_slot_holds_writes_then_answers_ask_then_moved() {
    let (_cluster, client) = settled_three();
    // `foo` is in slot 12182, partition 2 of 4; it moves to partition 0.
    let (slot, s, t) = ("12182", "2", "0");
    let (r, _) = at_leader(client[0], &["SET", "foo", "before"]);
    assert!(matches!(r, Reply::Simple(_) | Reply::Error(_)), "{r:?}");
    let set = |port: u16, v: &str| Raw::connect(port).cmd(&["SET", "foo", v]);
    let mut src = client[0];
    // Find S's leader by following MOVED for the key.
    for _ in 0..5 {
        match set(src, "v1") {
            Reply::Error(e) if e.starts_with("MOVED ") => {
                src = e.rsplit(':').next().unwrap().parse().unwrap();
            }
            Reply::Simple(ok) => {
                assert_eq!(ok, "OK");
                break;
            }
            other => panic!("{other:?}"),
        }
    }
    // A client blocked on a key of the slot (a hash tag puts `{foo}list` there).
    let blocked = std::thread::spawn(move || Raw::connect(src).cmd(&["BLPOP", "{foo}list", "0"]));
    let step = |p: &str, op: &str, peer: &str| {
        at_leader(client[0], &["CLUSTER", "MOVESLOT", p, op, slot, peer])
    };
    // Out of order: refused, naming the state.
    let (r, _) = step(t, "adopt", s);
    assert!(matches!(&r, Reply::Error(e) if e.contains("not its own")), "{r:?}");
    assert_eq!(step(t, "import", s).0, Reply::Simple("ok".into()));
    let (r, src_port) = step(s, "freeze", t);
    assert_eq!(r, Reply::Simple("ok".into()));
    assert_eq!(src_port, src, "the key's leader is partition {s}'s");
    // Reads go on; a write waits for the handoff.
    assert_eq!(Raw::connect(src).cmd(&["GET", "foo"]), Reply::Bulk(b"v1".to_vec()));
    let waiting = std::thread::spawn(move || set(src, "during"));
    std::thread::sleep(Duration::from_millis(300));
    assert!(!waiting.is_finished(), "the write waits while the slot is frozen");
    // The copy, through the controller's commands.
    let (page, _) = at_leader(client[0], &["CLUSTER", "SLOTRECORDS", s, slot, "", "100"]);
    let Reply::Array(items) = page else { panic!("{page:?}") };
    assert_eq!(items[0], Reply::Bulk(Vec::new()), "one page holds the slot");
    assert_eq!(items.len(), 4, "one metadata record: {items:?}");
    let (Reply::Int(fam), Reply::Bulk(k), Reply::Bulk(v)) = (&items[1], &items[2], &items[3])
    else {
        panic!("{items:?}");
    };
    // Sent as the controller sends it: binary keys and values, at the target's leader.
    let (_, dst_leader) = at_leader(client[0], &["CLUSTER", "MOVESLOT", t, "state", slot, s]);
    let fam = fam.to_string();
    let args: [&[u8]; 7] =
        [b"CLUSTER", b"IMPORTRECORDS", t.as_bytes(), slot.as_bytes(), fam.as_bytes(), k, v];
    let mut c = Raw::connect(dst_leader);
    c.send_raw(&Raw::encode(&args));
    assert_eq!(c.read(), Reply::Int(1));
    // A record of another slot is refused.
    let args = ["CLUSTER", "IMPORTRECORDS", t, slot, "0", "\x00\x01x", "v"];
    assert!(
        matches!(at_leader(client[0], &args).0, Reply::Error(e) if e.contains("not one of slot"))
    );
    assert_eq!(step(s, "handoff", t).0, Reply::Simple("ok".into()));
    let r = waiting.join().unwrap();
    let Reply::Error(ask) = r else { panic!("{r:?}") };
    assert!(ask.starts_with("ASK 12182 127.0.0.1:"), "{ask}");
    let dst: u16 = ask.rsplit(':').next().unwrap().parse().unwrap();
    // The blocked client is sent on too, not left waiting for pushes that go elsewhere.
    let r = blocked.join().unwrap();
    assert!(matches!(&r, Reply::Error(e) if e.starts_with("ASK 12182 ")), "{r:?}");
    // A client following the ASK before the target adopted the slot waits for the adopt
    // (with ASKING); without ASKING it would be sent back to the map's partition.
    let early = std::thread::spawn(move || {
        let mut c = Raw::connect(dst);
        assert_eq!(c.cmd(&["ASKING"]), Reply::Simple("OK".into()));
        c.cmd(&["SET", "foo", "early"])
    });
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(step(t, "adopt", s).0, Reply::Simple("ok".into()));
    assert_eq!(early.join().unwrap(), Reply::Simple("OK".into()));
    // The target serves it, with ASKING as a client following ASK sends, or without.
    let mut c = Raw::connect(dst);
    assert_eq!(c.cmd(&["ASKING"]), Reply::Simple("OK".into()));
    assert_eq!(c.cmd(&["SET", "foo", "after"]), Reply::Simple("OK".into()));
    assert_eq!(Raw::connect(dst).cmd(&["GET", "foo"]), Reply::Bulk(b"after".to_vec()));
    // The source sends its clients on, reads too.
    let r = Raw::connect(src).cmd(&["GET", "foo"]);
    assert!(
        matches!(&r, Reply::Error(e) if e.starts_with("ASK ") || e.starts_with("MOVED ")),
        "{r:?}"
    );
    assert!(admin(client[0], &["CLUSTER", "SETSLOTPARTITION", slot, t]).starts_with("map version"));
    // The controller, run again, finds the move stopped after the map change and releases
    // the source.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_strata-cluster"))
        .args(["--node", &format!("127.0.0.1:{}", client[0]), "--timeout", "30"])
        .args(["move-slots", slot, "--to", t])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("slot 12182 moved from partition 2 to partition 0"), "{out:?}");
    assert_eq!(step(s, "release", t).0, Reply::Simple("ok".into()), "idempotent");
    // Every node now sends the slot's clients to the target (once it has the new map).
    for port in &client[..3] {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            match Raw::connect(*port).cmd(&["GET", "foo"]) {
                Reply::Bulk(v) if *port == dst => {
                    assert_eq!(v, b"after");
                    break;
                }
                Reply::Error(e) if e == format!("MOVED 12182 127.0.0.1:{dst}") => break,
                other => {
                    assert!(std::time::Instant::now() < deadline, "node {port}: {other:?}");
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
        }
    }
    // Keyspace walks count the key once over the nodes.
    let total: i64 = client[..3]
        .iter()
        .map(|p| match Raw::connect(*p).cmd(&["DBSIZE"]) {
            Reply::Int(n) => n,
            other => panic!("DBSIZE: {other:?}"),
        })
        .sum();
    assert_eq!(total, 1);
    // The source kept no copy: its records of the slot are gone.
    let (page, _) = at_leader(client[0], &["CLUSTER", "MOVESLOT", s, "state", slot, t]);
    assert_eq!(page, Reply::Simple("released to partition 0".into()));
}

/// A slot whose records fill more than 64 KiB moves with the controller: its bulk enters the
/// target's replicas as table files through the target's log, and every replica (READONLY
/// on each node) reads the records back.
#[test]
fn a_large_slot_reaches_every_replica_of_its_target_as_table_files() {
    let (cluster, client) = settled_three();
    let mut con = client_of(&client[..3]).get_connection().unwrap();
    let value = |i: usize| format!("{i:05}").repeat(4_000);
    for i in 0..30 {
        let _: () = con.hset("{big}h", format!("f{i}"), value(i)).unwrap();
    }
    let _: () = con.set("{big}s", "small").unwrap();
    let slot = strata_server::slots::key_slot(b"{big}h");
    let to = ((u32::from(slot) * 4 / 16384 + 1) % 4).to_string();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_strata-cluster"))
        .args(["--node", &format!("127.0.0.1:{}", client[2]), "--timeout", "60"])
        .args(["move-slots", &slot.to_string(), "--to", &to])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains(": 32 records, 0 changes"), "{out:?}");
    for port in &client[..3] {
        let mut c = Raw::connect(*port);
        assert_eq!(c.cmd(&["READONLY"]), Reply::Simple("OK".into()));
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            match c.cmd(&["HGET", "{big}h", "f29"]) {
                Reply::Bulk(v) if v == value(29).as_bytes() => break,
                other => {
                    assert!(std::time::Instant::now() < deadline, "node {port}: {other:?}");
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
        }
        assert_eq!(c.cmd(&["HLEN", "{big}h"]), Reply::Int(30), "node {port}");
        assert_eq!(c.cmd(&["GET", "{big}s"]), Reply::Bulk(b"small".to_vec()), "node {port}");
    }
    // The table files were moved into the engines: nothing is left in the scratch directory.
    for d in cluster.dirs() {
        let left = std::fs::read_dir(d.join("slot-imports")).map_or(0, Iterator::count);
        assert_eq!(left, 0, "{}", d.display());
    }
}

/// Entries of several MiB reach a replica that was down, though together they are past the
/// transport's largest frame (replication reads entries 1 MiB at a time, `raft/log.rs`); a
/// write too large for one entry (`strata_replication::MAX_COMMAND_BYTES`) is refused with an
/// error naming the limit, nothing written, and the partition goes on.
#[test]
fn a_replica_catches_up_over_large_entries_and_a_write_over_an_entrys_limit_is_refused() {
    let (mut cluster, client) = settled_three();
    drop(cluster.nodes.remove(&3));
    let mut con = client_of(&client[..2]).get_connection().unwrap();
    // Six values of 12 MB in one partition: 72 MB of entries for node 3 to catch up on.
    let value = |i: usize| vec![b'a' + i as u8; 12 << 20];
    for i in 0..6 {
        let _: () = con.set(format!("{{big}}v{i}"), value(i)).unwrap();
    }
    cluster.restart(3);
    let mut c = Raw::connect(client[2]);
    assert_eq!(c.cmd(&["READONLY"]), Reply::Simple("OK".into()));
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        match c.cmd(&["STRLEN", "{big}v5"]) {
            Reply::Int(n) if n == 12 << 20 => break,
            other => {
                assert!(std::time::Instant::now() < deadline, "node 3 did not catch up: {other:?}");
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
    for i in 0..6 {
        let args = ["GET", &format!("{{big}}v{i}")];
        assert_eq!(c.cmd(&args), Reply::Bulk(value(i)), "{{big}}v{i} on node 3");
    }
    // Over the limit of one entry (63 MiB): refused, nothing written; the partition goes on.
    let huge = vec![b'h'; 63 << 20];
    let mut port = client[0];
    let r = loop {
        let args: [&[u8]; 3] = [b"SET", b"{big}huge", &huge];
        let mut c = Raw::connect(port);
        c.send_raw(&Raw::encode(&args));
        match c.read() {
            Reply::Error(e) if e.starts_with("MOVED ") => {
                port = e.rsplit(':').next().unwrap().parse().unwrap();
            }
            other => break other,
        }
    };
    let over = |e: &str| e.starts_with("ERR the write is 66060") && e.contains("over the 66060288");
    assert!(matches!(&r, Reply::Error(e) if over(e)), "{r:?}");
    let _: () = con.set("{big}after", "small").unwrap();
    assert_eq!(con.get::<_, Option<String>>("{big}huge").unwrap(), None);
    assert_eq!(con.get::<_, String>("{big}after").unwrap(), "small");
}

/// A move stopped before its handoff is undone with `move-slots --abort`: the source serves
/// the slot on (writes held by its freeze go through), the target drops what was copied and
/// takes no client for it; a move past its handoff is refused (finished instead); a later
/// move of the slot carries the source's records only.
#[test]
fn a_move_aborted_before_its_handoff_leaves_the_slot_where_it_was() {
    let (_cluster, client) = settled_three();
    // `foo` is in slot 12182, partition 2 of 4.
    let (slot, s, t) = ("12182", "2", "0");
    let (_, src) = at_leader(client[0], &["CLUSTER", "MOVESLOT", s, "state", slot, t]);
    let run = |args: &[&str]| Raw::connect(src).cmd(args);
    let ok = Reply::Simple("OK".into());
    assert_eq!(run(&["SET", "foo", "v1"]), ok);
    assert_eq!(run(&["SET", "{foo}b", "b1"]), ok);
    let step = |p: &str, op: &str, peer: &str| {
        at_leader(client[0], &["CLUSTER", "MOVESLOT", p, op, slot, peer]).0
    };
    let done = Reply::Simple("ok".into());
    assert_eq!(step(t, "import", s), done);
    assert_eq!(step(s, "copy", t), done);
    // Part of the copy reaches the target, then the source freezes the slot.
    let args: [&[u8]; 6] = [b"CLUSTER", b"SLOTRECORDS", s.as_bytes(), slot.as_bytes(), b"", b"1"];
    let Reply::Array(items) = at_leader_bytes(client[0], &args).0 else { panic!() };
    assert_eq!(forward(client[0], "IMPORTRECORDS", t, slot, &items[1..]), 1);
    assert_eq!(step(s, "freeze", t), done);
    let ctl = |extra: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_strata-cluster"))
            .args(["--node", &format!("127.0.0.1:{}", client[0]), "--timeout", "30"])
            .args(extra)
            .output()
            .unwrap()
    };
    let status = String::from_utf8_lossy(&ctl(&["status"]).stdout).into_owned();
    assert!(
        status.contains("finishes it, or undoes it with --abort before its handoff"),
        "{status}"
    );
    // A write held by the freeze goes through once the move is undone.
    let mut held = Raw::connect(src);
    held.send_raw(&Raw::encode(&[b"SET".as_slice(), b"foo", b"v2"]));
    let out = ctl(&["move-slots", slot, "--to", t, "--abort"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("slot 12182 stays in partition 2"), "{out:?}");
    match held.read() {
        r if r == ok => {}
        // Held past the freeze's wait before the abort came: Redis Cluster's retry.
        Reply::Error(e) if e.starts_with("TRYAGAIN") => assert_eq!(run(&["SET", "foo", "v2"]), ok),
        other => panic!("{other:?}"),
    }
    assert_eq!(step(s, "state", t), Reply::Simple("its own".into()));
    assert_eq!(step(t, "state", s), Reply::Simple("not its own".into()));
    assert_eq!(run(&["GET", "foo"]), Reply::Bulk(b"v2".to_vec()));
    assert_eq!(run(&["SET", "{foo}c", "c1"]), ok);
    let (_, dst) = at_leader(client[0], &["CLUSTER", "MOVESLOT", t, "state", slot, s]);
    let r = Raw::connect(dst).cmd(&["GET", "foo"]);
    assert!(matches!(&r, Reply::Error(e) if e.starts_with("MOVED ")), "{r:?}");
    // Again: nothing left to undo.
    let out = ctl(&["move-slots", slot, "--to", t, "--abort"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("nothing to undo"), "{out:?}");
    // A move the controller leaves after its freeze (`--stop-after`), undone the same way.
    let out = ctl(&["move-slots", slot, "--to", t, "--stop-after", "freeze"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("left after freeze"), "{out:?}");
    assert_eq!(step(s, "state", t), Reply::Simple("frozen, moving to partition 0".into()));
    let out = ctl(&["move-slots", slot, "--to", t, "--abort"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(step(s, "state", t), Reply::Simple("its own".into()));
    // A move started afresh carries the slot with the writes made since the abort.
    let out = ctl(&["move-slots", slot, "--to", t]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("moved from partition 2 to partition 0"),
        "{out:?}"
    );
    let (_, dst) = at_leader(client[0], &["CLUSTER", "MOVESLOT", t, "state", slot, s]);
    let mut c = Raw::connect(dst);
    assert_eq!(c.cmd(&["GET", "foo"]), Reply::Bulk(b"v2".to_vec()));
    assert_eq!(c.cmd(&["CLUSTER", "COUNTKEYSINSLOT", slot]), Reply::Int(3));
    // Past its handoff (done): refused, and the message says to finish it.
    let out = ctl(&["move-slots", slot, "--to", t, "--abort"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("finish it"), "{out:?}");
}
