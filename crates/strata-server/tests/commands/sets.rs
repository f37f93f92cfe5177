//! Sets against a BTreeSet model: SADD/SREM/SMEMBERS/SISMEMBER/SCARD/SPOP, SMISMEMBER,
//! SMOVE, SINTER/SUNION/SDIFF and their STORE forms, SINTERCARD; and the replies to wrong
//! types and bad arguments, as redis-server 7.0 gives them.

use crate::common::{Rng, Server};
use redis::Commands;
use std::collections::{BTreeSet, HashMap};

#[test]
fn sets_match_model() {
    let srv = Server::start(&[]);
    let mut c = srv.conn();
    for seed in 1..=3u64 {
        let _: () = redis::cmd("FLUSHALL").query(&mut c).unwrap();
        let mut model: HashMap<String, BTreeSet<String>> = HashMap::new();
        let mut rng = Rng::new(seed);
        for _ in 0..800 {
            let k = format!("s{}", rng.below(3));
            let k2 = format!("s{}", rng.below(3));
            let m = format!("m{}", rng.below(12));
            let get = |model: &HashMap<String, BTreeSet<String>>, k: &str| {
                model.get(k).cloned().unwrap_or_default()
            };
            let combined = |model: &HashMap<String, BTreeSet<String>>, op: u64| {
                let (a, b) = (get(model, &k), get(model, &k2));
                match op {
                    0 => a.intersection(&b).cloned().collect::<BTreeSet<String>>(),
                    1 => a.union(&b).cloned().collect(),
                    _ => a.difference(&b).cloned().collect(),
                }
            };
            match rng.below(11) {
                6 => {
                    let m2 = format!("m{}", rng.below(12));
                    let got: Vec<bool> =
                        redis::cmd("SMISMEMBER").arg(&k).arg(&m).arg(&m2).query(&mut c).unwrap();
                    let s = get(&model, &k);
                    assert_eq!(got, vec![s.contains(&m), s.contains(&m2)]);
                }
                7 => {
                    let moved: bool = c.smove(&k, &k2, &m).unwrap();
                    let present = get(&model, &k).contains(&m);
                    assert_eq!(moved, present, "SMOVE {k} {k2} {m}");
                    if present && k != k2 {
                        model.get_mut(&k).unwrap().remove(&m);
                        model.entry(k2.clone()).or_default().insert(m.clone());
                    }
                }
                8 => {
                    let op = rng.below(3);
                    let name = ["SINTER", "SUNION", "SDIFF"][op as usize];
                    let got: BTreeSet<String> =
                        redis::cmd(name).arg(&k).arg(&k2).query(&mut c).unwrap();
                    assert_eq!(got, combined(&model, op), "{name} {k} {k2}");
                }
                9 => {
                    let op = rng.below(3);
                    let name = ["SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE"][op as usize];
                    let dst = format!("s{}", rng.below(3));
                    let n: usize =
                        redis::cmd(name).arg(&dst).arg(&k).arg(&k2).query(&mut c).unwrap();
                    let want = combined(&model, op);
                    assert_eq!(n, want.len(), "{name} {dst} {k} {k2}");
                    model.insert(dst, want);
                }
                10 => {
                    let limit = rng.below(4);
                    let n: usize = redis::cmd("SINTERCARD")
                        .arg(2)
                        .arg(&k)
                        .arg(&k2)
                        .arg("LIMIT")
                        .arg(limit)
                        .query(&mut c)
                        .unwrap();
                    let all = combined(&model, 0).len();
                    assert_eq!(n, if limit == 0 { all } else { all.min(limit as usize) });
                }
                0 | 1 => {
                    let m2 = format!("m{}", rng.below(12));
                    let n: usize = c.sadd(&k, &[&m, &m2]).unwrap();
                    let s = model.entry(k).or_default();
                    let added = usize::from(s.insert(m)) + usize::from(s.insert(m2));
                    assert_eq!(n, added);
                }
                2 => {
                    let n: usize = c.srem(&k, &m).unwrap();
                    assert_eq!(n, usize::from(model.get_mut(&k).is_some_and(|s| s.remove(&m))));
                }
                3 => {
                    let got: BTreeSet<String> = c.smembers(&k).unwrap();
                    assert_eq!(got, model.get(&k).cloned().unwrap_or_default());
                    let n: usize = c.scard(&k).unwrap();
                    assert_eq!(n, got.len());
                }
                4 => {
                    let got: bool = c.sismember(&k, &m).unwrap();
                    assert_eq!(got, model.get(&k).is_some_and(|s| s.contains(&m)));
                }
                _ => {
                    let got: Vec<String> = redis::cmd("SPOP").arg(&k).arg(2).query(&mut c).unwrap();
                    let s = model.entry(k).or_default();
                    assert!(got.len() == s.len().min(2));
                    for g in &got {
                        assert!(s.remove(g), "SPOP returned a non-member {g}");
                    }
                }
            }
            model.retain(|_, s| !s.is_empty());
        }
        let n: usize = redis::cmd("DBSIZE").query(&mut c).unwrap();
        assert_eq!(n, model.len());
    }
}

/// Wrong types and bad arguments get redis-server 7.0's replies (taken from it): every key is
/// type-checked before any is read, an absent SMOVE source answers 0 before any check.
#[test]
fn set_algebra_errors_match_redis() {
    let srv = Server::start(&[]);
    let mut c = srv.conn();
    let run = |c: &mut redis::Connection, args: &[&str]| -> String {
        let mut cmd = redis::cmd(args[0]);
        for a in &args[1..] {
            cmd.arg(*a);
        }
        match cmd.query::<redis::Value>(c) {
            Ok(redis::Value::Int(n)) => n.to_string(),
            Ok(other) => format!("{other:?}"),
            Err(e) => format!("{} {}", e.code().unwrap_or("?"), e.detail().unwrap_or("")),
        }
    };
    let _: () = redis::cmd("SADD").arg("a").arg(&[1, 2, 3]).query(&mut c).unwrap();
    let _: () = redis::cmd("SADD").arg("b").arg(&[2, 3, 4]).query(&mut c).unwrap();
    let _: () = c.set("s", "x").unwrap();
    let wrongtype = "WRONGTYPE Operation against a key holding the wrong kind of value";
    for (args, want) in [
        (&["SINTERCARD", "0", "a"][..], "ERR numkeys should be greater than 0"),
        (&["SINTERCARD", "x", "a"], "ERR numkeys should be greater than 0"),
        (&["SINTERCARD", "3", "a", "b"], "ERR Number of keys can't be greater than number of args"),
        (&["SINTERCARD", "2", "a", "b", "LIMIT", "-1"], "ERR LIMIT can't be negative"),
        (&["SINTERCARD", "2", "a", "b", "LIMIT", "x"], "ERR LIMIT can't be negative"),
        (&["SINTERCARD", "2", "a", "b", "foo"], "ERR syntax error"),
        (&["SINTERCARD", "2", "a", "b", "LIMIT"], "ERR syntax error"),
        (&["SINTERCARD", "2", "a", "b", "LIMIT", "1"], "1"),
        (&["SINTERCARD", "2", "a", "b", "limit", "1", "LIMIT", "0"], "2"),
        (&["SINTERCARD", "2", "a", "missing"], "0"),
        (&["SINTERCARD", "2", "a", "s"], wrongtype),
        (&["SINTER", "missing", "s"], wrongtype),
        (&["SUNION", "missing", "s"], wrongtype),
        (&["SDIFF", "missing", "s"], wrongtype),
        (&["SMISMEMBER", "s", "1"], wrongtype),
        (&["SMOVE", "missing", "s", "1"], "0"),
        (&["SMOVE", "a", "s", "1"], wrongtype),
        (&["SMOVE", "s", "a", "1"], wrongtype),
        (&["SMOVE", "a", "a", "9"], "0"),
        (&["SMOVE", "a", "a", "1"], "1"),
        (&["SINTERSTORE", "s", "a", "missing"], "0"),
        (&["EXISTS", "s"], "0"),
        (&["SDIFFSTORE", "a", "a", "a"], "0"),
        (&["EXISTS", "a"], "0"),
    ] {
        assert_eq!(run(&mut c, args), want, "{args:?}");
    }
    // A stored result replaces the destination whatever it held, and drops its expiry.
    let _: () = c.set_ex("d", "x", 100).unwrap();
    assert_eq!(run(&mut c, &["SUNIONSTORE", "d", "b", "missing"]), "3");
    assert_eq!(run(&mut c, &["TTL", "d"]), "-1");
    let got: BTreeSet<String> = c.smembers("d").unwrap();
    assert_eq!(got, ["2", "3", "4"].iter().map(|s| s.to_string()).collect());
}

/// SRANDMEMBER and SSCAN, with Redis 7.0.15's replies; EXPIRETIME and PEXPIRETIME.
#[test]
fn srandmember_sscan_and_expire_times() {
    use crate::common::Reply;
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    assert_eq!(c.cmd(&["SADD", "s", "a", "b", "c", "d", "e"]), Reply::Int(5));
    let all: BTreeSet<Vec<u8>> =
        ["a", "b", "c", "d", "e"].iter().map(|m| m.as_bytes().to_vec()).collect();
    let members = |r: Reply| -> Vec<Vec<u8>> {
        let Reply::Array(v) = r else { panic!("{r:?}") };
        v.into_iter().map(|m| if let Reply::Bulk(b) = m { b } else { panic!("{m:?}") }).collect()
    };
    // Distinct picks: all members at most; with repeats: exactly as many as asked.
    let got = members(c.cmd(&["SRANDMEMBER", "s", "10"]));
    assert_eq!(got.iter().cloned().collect::<BTreeSet<_>>(), all);
    assert_eq!(got.len(), 5);
    let got = members(c.cmd(&["SRANDMEMBER", "s", "3"]));
    assert_eq!(got.iter().collect::<BTreeSet<_>>().len(), 3);
    let got = members(c.cmd(&["SRANDMEMBER", "s", "-20"]));
    assert_eq!(got.len(), 20);
    assert!(got.iter().all(|m| all.contains(m)));
    // Over many single picks every member comes up: random, not the first.
    let mut seen = BTreeSet::new();
    for _ in 0..200 {
        if let Reply::Bulk(m) = c.cmd(&["SRANDMEMBER", "s"]) {
            seen.insert(m);
        }
    }
    assert_eq!(seen, all);
    assert_eq!(c.cmd(&["SCARD", "s"]), Reply::Int(5), "nothing removed");
    assert_eq!(c.cmd(&["SRANDMEMBER", "none"]), Reply::Null);
    assert_eq!(c.cmd(&["SRANDMEMBER", "none", "3"]), Reply::Array(vec![]));
    assert_eq!(c.cmd(&["SRANDMEMBER", "s", "0"]), Reply::Array(vec![]));
    assert_eq!(c.cmd(&["SRANDMEMBER", "s", "1", "2"]), Reply::Error("ERR syntax error".into()));
    assert_eq!(
        c.cmd(&["SRANDMEMBER", "s", "x"]),
        Reply::Error("ERR value is not an integer or out of range".into())
    );
    assert_eq!(
        c.cmd(&["SRANDMEMBER", "s", "-9223372036854775808"]),
        Reply::Error(
            "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"
                .into()
        )
    );
    // SSCAN visits every member once, in steps of COUNT, with MATCH applied.
    let mut cursor = "0".to_string();
    let mut visited = Vec::new();
    loop {
        let Reply::Array(r) = c.cmd(&["SSCAN", "s", &cursor, "COUNT", "2"]) else { panic!() };
        let Reply::Bulk(next) = &r[0] else { panic!() };
        visited.extend(members(r[1].clone()));
        cursor = String::from_utf8(next.clone()).unwrap();
        if cursor == "0" {
            break;
        }
    }
    assert_eq!(visited.len(), 5);
    assert_eq!(visited.into_iter().collect::<BTreeSet<_>>(), all);
    let Reply::Array(r) = c.cmd(&["SSCAN", "s", "0", "MATCH", "[ab]", "COUNT", "100"]) else {
        panic!()
    };
    assert_eq!(members(r[1].clone()), vec![b"a".to_vec(), b"b".to_vec()]);
    assert_eq!(c.cmd(&["SSCAN", "s", "x"]), Reply::Error("ERR invalid cursor".into()));
    assert_eq!(c.cmd(&["SSCAN", "s", "0", "COUNT", "0"]), Reply::Error("ERR syntax error".into()));
    assert_eq!(c.cmd(&["SET", "str", "v"]), Reply::Simple("OK".into()));
    assert!(matches!(c.cmd(&["SSCAN", "str", "0"]), Reply::Error(e) if e.starts_with("WRONGTYPE")));
    assert!(
        matches!(c.cmd(&["SRANDMEMBER", "str"]), Reply::Error(e) if e.starts_with("WRONGTYPE"))
    );
    // EXPIRETIME / PEXPIRETIME.
    assert_eq!(c.cmd(&["EXPIRETIME", "none"]), Reply::Int(-2));
    assert_eq!(c.cmd(&["EXPIRETIME", "s"]), Reply::Int(-1));
    assert_eq!(c.cmd(&["SET", "e", "v", "EXAT", "4000000000"]), Reply::Simple("OK".into()));
    assert_eq!(c.cmd(&["EXPIRETIME", "e"]), Reply::Int(4_000_000_000));
    assert_eq!(c.cmd(&["PEXPIRETIME", "e"]), Reply::Int(4_000_000_000_000));
}
