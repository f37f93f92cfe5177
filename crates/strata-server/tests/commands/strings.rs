//! Strings against a HashMap model: random SET/GET/APPEND/INCRBY/DEL/STRLEN/GETSET/MGET/MSET/
//! SETNX/EXISTS over a small key space, several seeds.

use crate::common::{Rng, Server};
use redis::Commands;
use std::collections::HashMap;

#[test]
fn strings_match_model() {
    let srv = Server::start(&[]);
    let mut c = srv.conn();
    for seed in 1..=4u64 {
        let _: () = redis::cmd("FLUSHALL").query(&mut c).unwrap();
        let mut model: HashMap<String, String> = HashMap::new();
        let mut rng = Rng::new(seed);
        for _ in 0..600 {
            let k = format!("k{}", rng.below(12));
            match rng.below(10) {
                0 => {
                    let v = format!("v{}", rng.below(1000));
                    let _: () = c.set(&k, &v).unwrap();
                    model.insert(k, v);
                }
                1 => {
                    let got: Option<String> = c.get(&k).unwrap();
                    assert_eq!(got, model.get(&k).cloned(), "GET {k}");
                }
                2 => {
                    let v = format!("a{}", rng.below(10));
                    let n: usize = c.append(&k, &v).unwrap();
                    let e = model.entry(k).or_default();
                    e.push_str(&v);
                    assert_eq!(n, e.len());
                }
                3 => {
                    let by = rng.below(100) as i64 - 50;
                    let r: redis::RedisResult<i64> = c.incr(&k, by);
                    match model.get(&k).map(|v| v.parse::<i64>()) {
                        None => {
                            assert_eq!(r.unwrap(), by);
                            model.insert(k, by.to_string());
                        }
                        Some(Ok(old)) => {
                            assert_eq!(r.unwrap(), old + by);
                            model.insert(k, (old + by).to_string());
                        }
                        Some(Err(_)) => {
                            let e = r.unwrap_err();
                            assert!(
                                e.to_string().contains("value is not an integer or out of range"),
                                "{e}"
                            );
                        }
                    }
                }
                4 => {
                    let n: i64 = c.del(&k).unwrap();
                    assert_eq!(n, i64::from(model.remove(&k).is_some()));
                }
                5 => {
                    let n: usize = c.strlen(&k).unwrap();
                    assert_eq!(n, model.get(&k).map_or(0, |v| v.len()));
                }
                6 => {
                    let v = format!("g{}", rng.below(100));
                    let old: Option<String> = c.getset(&k, &v).unwrap();
                    assert_eq!(old, model.insert(k, v));
                }
                7 => {
                    let k2 = format!("k{}", rng.below(12));
                    let got: Vec<Option<String>> =
                        redis::cmd("MGET").arg(&k).arg(&k2).query(&mut c).unwrap();
                    assert_eq!(got, vec![model.get(&k).cloned(), model.get(&k2).cloned()]);
                }
                8 => {
                    let k2 = format!("k{}", rng.below(12));
                    let _: () = redis::cmd("MSET")
                        .arg(&k)
                        .arg("m1")
                        .arg(&k2)
                        .arg("m2")
                        .query(&mut c)
                        .unwrap();
                    model.insert(k, "m1".into());
                    model.insert(k2, "m2".into());
                }
                _ => {
                    let set: bool = c.set_nx(&k, "nx").unwrap();
                    assert_eq!(set, !model.contains_key(&k));
                    model.entry(k.clone()).or_insert_with(|| "nx".into());
                    let e: bool = c.exists(&k).unwrap();
                    assert!(e);
                }
            }
        }
        let n: usize = redis::cmd("DBSIZE").query(&mut c).unwrap();
        assert_eq!(n, model.len(), "seed {seed}");
    }
    // Options of SET.
    let r: Option<String> = redis::cmd("SET").arg("o").arg("1").arg("XX").query(&mut c).unwrap();
    assert_eq!(r, None);
    let r: Option<String> =
        redis::cmd("SET").arg("o").arg("1").arg("NX").arg("EX").arg(100).query(&mut c).unwrap();
    assert_eq!(r.as_deref(), Some("OK"));
    let r: Option<String> =
        redis::cmd("SET").arg("o").arg("2").arg("GET").arg("KEEPTTL").query(&mut c).unwrap();
    assert_eq!(r.as_deref(), Some("1"));
    let ttl: i64 = c.ttl("o").unwrap();
    assert!((99..=100).contains(&ttl), "{ttl}");
    let _: () = redis::cmd("SETEX").arg("se").arg(50).arg("x").query(&mut c).unwrap();
    let pttl: i64 = c.pttl("se").unwrap();
    assert!(pttl > 49_000 && pttl <= 50_000);
    let _: () = redis::cmd("PSETEX").arg("pse").arg(50_000).arg("x").query(&mut c).unwrap();
    let n: i64 = c.decr("cnt", 5).unwrap();
    assert_eq!(n, -5);
    let n: i64 = redis::cmd("DECR").arg("cnt").query(&mut c).unwrap();
    assert_eq!(n, -6);
}

/// SETBIT and GETBIT, with Redis 7.0.15's replies: bit 0 is the first byte's most significant
/// bit, the string grows with zero bytes, the expiry stays.
#[test]
fn setbit_and_getbit() {
    use crate::common::Reply;
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    assert_eq!(c.cmd(&["SETBIT", "b", "7", "1"]), Reply::Int(0));
    assert_eq!(c.cmd(&["GET", "b"]), Reply::Bulk(vec![1]));
    assert_eq!(c.cmd(&["SETBIT", "b", "7", "0"]), Reply::Int(1));
    assert_eq!(c.cmd(&["SETBIT", "b", "100", "1"]), Reply::Int(0));
    assert_eq!(c.cmd(&["STRLEN", "b"]), Reply::Int(13));
    assert_eq!(c.cmd(&["GETBIT", "b", "100"]), Reply::Int(1));
    assert_eq!(c.cmd(&["GETBIT", "b", "101"]), Reply::Int(0));
    assert_eq!(c.cmd(&["GETBIT", "b", "100000"]), Reply::Int(0));
    assert_eq!(c.cmd(&["GETBIT", "none", "3"]), Reply::Int(0));
    let bad_offset = Reply::Error("ERR bit offset is not an integer or out of range".into());
    assert_eq!(c.cmd(&["SETBIT", "b", "-1", "1"]), bad_offset);
    assert_eq!(c.cmd(&["SETBIT", "b", "4294967296", "1"]), bad_offset);
    assert_eq!(c.cmd(&["GETBIT", "b", "x"]), bad_offset);
    let bad_bit = Reply::Error("ERR bit is not an integer or out of range".into());
    assert_eq!(c.cmd(&["SETBIT", "b", "1", "2"]), bad_bit);
    assert_eq!(c.cmd(&["LPUSH", "l", "a"]), Reply::Int(1));
    assert!(
        matches!(c.cmd(&["SETBIT", "l", "0", "1"]), Reply::Error(e) if e.starts_with("WRONGTYPE"))
    );
    assert_eq!(c.cmd(&["SET", "s", "ab", "EX", "100"]), Reply::Simple("OK".into()));
    assert_eq!(c.cmd(&["SETBIT", "s", "2", "0"]), Reply::Int(1));
    assert_eq!(c.cmd(&["GET", "s"]), Reply::bulk("Ab"));
    assert_eq!(c.cmd(&["TTL", "s"]), Reply::Int(100));
}

/// A plain SET writes without reading the key (no `new` or `expired` events wanted): over a
/// container it replaces, the container's elements never come back when the key becomes a
/// container again, and over a key with a time the time is gone; with `expired` events
/// wanted, a SET over an expired key raises `expired` first, as redis-server does.
#[test]
fn a_plain_set_replaces_whatever_the_key_held() {
    let srv = Server::start(&[]);
    let mut c = srv.conn();
    let _: () =
        redis::cmd("HSET").arg("h").arg("f1").arg("a").arg("f2").arg("b").query(&mut c).unwrap();
    let _: () = redis::cmd("RPUSH").arg("l").arg("x").arg("y").query(&mut c).unwrap();
    let _: () = redis::cmd("ZADD").arg("z").arg(1).arg("m").query(&mut c).unwrap();
    let _: () = redis::cmd("SET").arg("t").arg("v").arg("EX").arg(100).query(&mut c).unwrap();
    for k in ["h", "l", "z", "t"] {
        let _: () = c.set(k, "s").unwrap();
        let ty: String = redis::cmd("TYPE").arg(k).query(&mut c).unwrap();
        assert_eq!(ty, "string", "{k}");
        let v: String = c.get(k).unwrap();
        assert_eq!(v, "s");
    }
    let ttl: i64 = c.ttl("t").unwrap();
    assert_eq!(ttl, -1, "a SET without a time drops the old one");
    let _: () = c.del(&["h", "l", "z"]).unwrap();
    let _: () = redis::cmd("HSET").arg("h").arg("f3").arg("c").query(&mut c).unwrap();
    let all: Vec<String> = redis::cmd("HGETALL").arg("h").query(&mut c).unwrap();
    assert_eq!(all, ["f3", "c"]);
    let _: () = c.set("l", "s").unwrap();
    let _: () = c.del("l").unwrap();
    let _: () = redis::cmd("RPUSH").arg("l").arg("z").query(&mut c).unwrap();
    let l: Vec<String> = c.lrange("l", 0, -1).unwrap();
    assert_eq!(l, ["z"]);
    // SET straight over a container, then the container type again without a DEL between.
    let _: () = redis::cmd("SADD").arg("s").arg("a").arg("b").query(&mut c).unwrap();
    let _: () = c.set("s", "x").unwrap();
    let _: () = c.del("s").unwrap();
    let _: () = redis::cmd("SADD").arg("s").arg("c").query(&mut c).unwrap();
    let members: Vec<String> = redis::cmd("SMEMBERS").arg("s").query(&mut c).unwrap();
    assert_eq!(members, ["c"]);

    // `expired` events wanted: the SET reads the key and raises the event of an expired one.
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("notify-keyspace-events")
        .arg("Ex")
        .query(&mut c)
        .unwrap();
    let mut sub = srv.conn();
    let mut ps = sub.as_pubsub();
    ps.subscribe("__keyevent@0__:expired").unwrap();
    let _: () = redis::cmd("SET").arg("gone").arg("v").arg("PX").arg(1).query(&mut c).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    let _: () = c.set("gone", "again").unwrap();
    ps.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
    let msg = ps.get_message().expect("an expired event");
    let key: String = msg.get_payload().unwrap();
    assert_eq!(key, "gone");
    let v: String = c.get("gone").unwrap();
    assert_eq!(v, "again");
}
