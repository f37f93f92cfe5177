//! A real cluster client (the `redis` crate's, which reads CLUSTER SLOTS, follows `MOVED` and
//! waits out `CLUSTERDOWN`) runs a model workload against three server processes while a
//! fourth node joins and takes its share and node 1 leaves: every reply equals the model's
//! (a BTreeMap of strings, counters and lists), no command fails, and at the end every key
//! reads back as the model holds it.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use redis::cluster::ClusterClient;
use redis::Commands;

use super::cluster_map::{admin, partitions, settled, Loopback};

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

#[test]
fn a_cluster_client_sees_the_model_while_a_node_joins_and_another_leaves() {
    let mut cluster = Loopback::start_three();
    let client = cluster.client.clone();
    // The first map committed: every partition has a leader.
    admin(client[0], &["CLUSTER", "MAP"]);
    settled(&client[..3], client[0]);

    let seeds: Vec<String> =
        client[..3].iter().map(|p| format!("redis://127.0.0.1:{p}/")).collect();
    let cc = ClusterClient::builder(seeds)
        .retries(30)
        .connection_timeout(Duration::from_secs(5))
        .response_timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let worker = {
        let (stop, cc) = (stop.clone(), cc.clone());
        std::thread::spawn(move || {
            let mut con = cc.get_connection().unwrap();
            let mut model = BTreeMap::new();
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) || n < 2_000 {
                step(&mut con, &mut model, n, 200);
                n += 1;
            }
            (model, n)
        })
    };

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
    let seeds: Vec<String> =
        client[1..].iter().map(|p| format!("redis://127.0.0.1:{p}/")).collect();
    let mut con = ClusterClient::new(seeds).unwrap().get_connection().unwrap();
    for (k, v) in &model {
        match v {
            Val::Str(s) => assert_eq!(con.get::<_, String>(k).unwrap(), *s, "{k}"),
            Val::Count(c) => assert_eq!(con.get::<_, i64>(k).unwrap(), *c, "{k}"),
            Val::List(l) => assert_eq!(con.lrange::<_, Vec<String>>(k, 0, -1).unwrap(), *l, "{k}"),
        }
    }
    let absent = (0..200).map(|i| format!("s:{i}")).filter(|k| !model.contains_key(k));
    for k in absent {
        assert_eq!(con.get::<_, Option<String>>(&k).unwrap(), None, "{k}");
    }
}

/// Slots move between partitions (`strata-cluster move-slots`) while the cluster client runs
/// the model workload on keys in those slots: writes to a moving slot wait for its copy
/// (`TRYAGAIN`), clients are sent on with `ASK` then `MOVED`, and no reply differs from the
/// model's; the map's slot table and CLUSTER SLOTS name the new partitions, and every key
/// reads back as the model holds it.
#[test]
fn a_cluster_client_sees_the_model_while_slots_move_between_partitions() {
    let cluster = Loopback::start_three();
    let client = cluster.client.clone();
    admin(client[0], &["CLUSTER", "MAP"]);
    settled(&client[..3], client[0]);

    let seeds: Vec<String> =
        client[..3].iter().map(|p| format!("redis://127.0.0.1:{p}/")).collect();
    let cc = ClusterClient::builder(seeds)
        .retries(60)
        .connection_timeout(Duration::from_secs(5))
        .response_timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let worker = {
        let (stop, cc) = (stop.clone(), cc.clone());
        std::thread::spawn(move || {
            let mut con = cc.get_connection().unwrap();
            let mut model = BTreeMap::new();
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) || n < 2_000 {
                step(&mut con, &mut model, n, 40);
                n += 1;
            }
            (model, n)
        })
    };

    // The slots of a dozen of the workload's keys, each to the next partition (of four).
    let mut slots: Vec<u16> = (0..12)
        .flat_map(|i| [format!("s:{i}"), format!("c:{i}"), format!("l:{i}")])
        .map(|k| strata_server::slots::key_slot(k.as_bytes()))
        .collect();
    slots.sort_unstable();
    slots.dedup();
    let partition = |s: u16| (u32::from(s) * 4 / 16384) as u16;
    let ctl = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_strata-cluster"))
            .args(["--node", &format!("127.0.0.1:{}", client[1]), "--timeout", "60"])
            .args(args)
            .output()
            .unwrap()
    };
    for s in &slots {
        let to = ((partition(*s) + 1) % 4).to_string();
        let out = ctl(&["move-slots", &s.to_string(), "--to", &to]);
        assert!(out.status.success(), "slot {s}: {out:?}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(&format!("slot {s} moved from partition")), "{text}");
    }
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

    // The map lists the moved slots; CLUSTER SLOTS gives each its own range.
    let map = admin(client[2], &["CLUSTER", "MAP"]);
    for s in &slots {
        let line = format!("slot {s} partition {}", (partition(*s) + 1) % 4);
        assert!(map.contains(&line), "{line} not in\n{map}");
    }
    let seeds: Vec<String> =
        client[..3].iter().map(|p| format!("redis://127.0.0.1:{p}/")).collect();
    let mut con = ClusterClient::new(seeds).unwrap().get_connection().unwrap();
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
    for (k, v) in &model {
        match v {
            Val::Str(s) => assert_eq!(con.get::<_, String>(k).unwrap(), *s, "{k}"),
            Val::Count(c) => assert_eq!(con.get::<_, i64>(k).unwrap(), *c, "{k}"),
            Val::List(l) => assert_eq!(con.lrange::<_, Vec<String>>(k, 0, -1).unwrap(), *l, "{k}"),
        }
    }
    for k in (0..40).map(|i| format!("s:{i}")).filter(|k| !model.contains_key(k)) {
        assert_eq!(con.get::<_, Option<String>>(&k).unwrap(), None, "{k}");
    }
    // The keys of a moved slot are counted once, where it went.
    let s = strata_server::slots::key_slot(b"s:0");
    let want = model.keys().filter(|k| strata_server::slots::key_slot(k.as_bytes()) == s).count();
    let n: i64 = redis::cmd("CLUSTER").arg("COUNTKEYSINSLOT").arg(s).query(&mut con).unwrap();
    assert_eq!(n as usize, want, "slot {s}");
}
