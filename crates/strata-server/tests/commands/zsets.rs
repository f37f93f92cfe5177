//! Sorted sets against a model: ZADD (NX/XX/GT/LT/CH/INCR), ZREM, ZSCORE, ZCARD, ZRANGE (rank,
//! BYSCORE, REV, LIMIT, WITHSCORES), ZRANGEBYSCORE with exclusive/infinite bounds and LIMIT,
//! ZREVRANGE, ZPOPMIN, ZINCRBY, ZRANK, several seeds.
// Scores in these tests are exact binary fractions.
#![allow(clippy::float_cmp)]

use crate::common::{Rng, Server};
use redis::Commands;
use std::collections::HashMap;

/// Members sorted by (score, member).
fn sorted(m: &HashMap<String, f64>) -> Vec<(String, f64)> {
    let mut v: Vec<(String, f64)> = m.iter().map(|(k, s)| (k.clone(), *s)).collect();
    v.sort_by(|a, b| a.1.partial_cmp(&b.1).unwrap().then(a.0.cmp(&b.0)));
    v
}

#[test]
fn zsets_match_model() {
    let srv = Server::start(&[]);
    let mut c = srv.conn();
    for seed in 1..=3u64 {
        let _: () = redis::cmd("FLUSHALL").query(&mut c).unwrap();
        let mut model: HashMap<String, f64> = HashMap::new();
        let mut rng = Rng::new(seed);
        let k = "z";
        for _ in 0..500 {
            let m = format!("m{}", rng.below(20));
            let s = rng.below(41) as f64 / 4.0 - 5.0;
            match rng.below(10) {
                0 | 1 => {
                    let n: i64 = c.zadd(k, &m, s).unwrap();
                    assert_eq!(n, i64::from(model.insert(m, s).is_none()));
                }
                2 => {
                    let flag = ["NX", "XX", "GT", "LT"][rng.below(4) as usize];
                    let n: i64 = redis::cmd("ZADD")
                        .arg(k)
                        .arg(flag)
                        .arg("CH")
                        .arg(s)
                        .arg(&m)
                        .query(&mut c)
                        .unwrap();
                    let old = model.get(&m).copied();
                    let apply = match (flag, old) {
                        ("NX", o) => o.is_none(),
                        ("XX", o) => o.is_some(),
                        ("GT", Some(o)) => s > o,
                        ("LT", Some(o)) => s < o,
                        (_, None) => true,
                        _ => unreachable!(),
                    };
                    let changed = apply && old != Some(s);
                    if apply {
                        model.insert(m, s);
                    }
                    assert_eq!(n, i64::from(changed), "ZADD {flag} CH");
                }
                3 => {
                    let n: i64 = c.zrem(k, &m).unwrap();
                    assert_eq!(n, i64::from(model.remove(&m).is_some()));
                }
                4 => {
                    let got: Option<f64> = c.zscore(k, &m).unwrap();
                    assert_eq!(got, model.get(&m).copied());
                    let n: usize = c.zcard(k).unwrap();
                    assert_eq!(n, model.len());
                }
                5 => {
                    let (a, b) = (rng.below(25) as i64 - 5, rng.below(25) as i64 - 5);
                    let got: Vec<(String, f64)> =
                        c.zrange_withscores(k, a as isize, b as isize).unwrap();
                    let all = sorted(&model);
                    let len = all.len() as i64;
                    let start = if a < 0 { (len + a).max(0) } else { a };
                    let stop = if b < 0 { len + b } else { b.min(len - 1) };
                    let want: Vec<(String, f64)> = if start > stop || start >= len {
                        vec![]
                    } else {
                        all[start as usize..=stop as usize].to_vec()
                    };
                    assert_eq!(got, want, "ZRANGE {a} {b}");
                    let rev: Vec<String> = c.zrevrange(k, a as isize, b as isize).unwrap();
                    let mut rall = all.clone();
                    rall.reverse();
                    let rwant: Vec<String> = if start > stop || start >= len {
                        vec![]
                    } else {
                        rall[start as usize..=stop as usize].iter().map(|x| x.0.clone()).collect()
                    };
                    assert_eq!(rev, rwant, "ZREVRANGE {a} {b}");
                }
                6 => {
                    let lo = s;
                    let hi = lo + rng.below(12) as f64 / 4.0;
                    let (lx, hx) = (rng.below(2) == 0, rng.below(2) == 0);
                    let lo_s = if rng.below(8) == 0 {
                        "-inf".to_string()
                    } else {
                        format!("{}{lo}", if lx { "(" } else { "" })
                    };
                    let hi_s = if rng.below(8) == 0 {
                        "+inf".to_string()
                    } else {
                        format!("{}{hi}", if hx { "(" } else { "" })
                    };
                    let (off, cnt) = (rng.below(3) as i64, rng.below(5) as i64 - 1);
                    let got: Vec<(String, f64)> = redis::cmd("ZRANGEBYSCORE")
                        .arg(k)
                        .arg(&lo_s)
                        .arg(&hi_s)
                        .arg("WITHSCORES")
                        .arg("LIMIT")
                        .arg(off)
                        .arg(cnt)
                        .query(&mut c)
                        .unwrap();
                    let inside = |v: f64| {
                        let lo_ok = lo_s == "-inf" || if lx { v > lo } else { v >= lo };
                        let hi_ok = hi_s == "+inf" || if hx { v < hi } else { v <= hi };
                        lo_ok && hi_ok
                    };
                    let all: Vec<(String, f64)> =
                        sorted(&model).into_iter().filter(|x| inside(x.1)).collect();
                    let want: Vec<(String, f64)> = all
                        .iter()
                        .skip(off as usize)
                        .take(if cnt < 0 { usize::MAX } else { cnt as usize })
                        .cloned()
                        .collect();
                    assert_eq!(got, want, "ZRANGEBYSCORE {lo_s} {hi_s} LIMIT {off} {cnt}");
                    let byscore_rev: Vec<String> = redis::cmd("ZRANGE")
                        .arg(k)
                        .arg(&hi_s)
                        .arg(&lo_s)
                        .arg("BYSCORE")
                        .arg("REV")
                        .query(&mut c)
                        .unwrap();
                    let rwant: Vec<String> = all.iter().rev().map(|x| x.0.clone()).collect();
                    assert_eq!(byscore_rev, rwant, "ZRANGE BYSCORE REV");
                }
                7 => {
                    let by = rng.below(9) as f64 - 4.0;
                    let got: f64 = c.zincr(k, &m, by).unwrap();
                    let e = model.entry(m).or_insert(0.0);
                    *e += by;
                    assert_eq!(got, *e);
                }
                8 => {
                    let rank: Option<usize> = c.zrank(k, &m).unwrap();
                    assert_eq!(rank, sorted(&model).iter().position(|x| x.0 == m));
                }
                _ => {
                    let got: Vec<(String, f64)> =
                        redis::cmd("ZPOPMIN").arg(k).arg(2).query(&mut c).unwrap();
                    let want: Vec<(String, f64)> = sorted(&model).into_iter().take(2).collect();
                    for (mm, _) in &want {
                        model.remove(mm);
                    }
                    assert_eq!(got, want);
                }
            }
        }
    }
}

/// ZSCAN: every member once with its score, in steps of COUNT, MATCH applied; Redis's errors.
#[test]
fn zscan_walks_members_with_scores() {
    use crate::common::Reply;
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    assert_eq!(c.cmd(&["ZADD", "z", "1", "a", "2.5", "b", "-3", "c"]), Reply::Int(3));
    let mut cursor = "0".to_string();
    let mut pairs = Vec::new();
    loop {
        let Reply::Array(r) = c.cmd(&["ZSCAN", "z", &cursor, "COUNT", "2"]) else { panic!() };
        let (Reply::Bulk(next), Reply::Array(items)) = (&r[0], &r[1]) else { panic!("{r:?}") };
        pairs.extend(items.chunks(2).map(|p| (p[0].clone(), p[1].clone())));
        cursor = String::from_utf8(next.clone()).unwrap();
        if cursor == "0" {
            break;
        }
    }
    pairs.sort_by_key(|p| format!("{p:?}"));
    assert_eq!(
        pairs,
        vec![
            (Reply::bulk("a"), Reply::bulk("1")),
            (Reply::bulk("b"), Reply::bulk("2.5")),
            (Reply::bulk("c"), Reply::bulk("-3")),
        ]
    );
    let Reply::Array(r) = c.cmd(&["ZSCAN", "z", "0", "MATCH", "b*"]) else { panic!() };
    assert_eq!(r[1], Reply::Array(vec![Reply::bulk("b"), Reply::bulk("2.5")]));
    assert_eq!(
        c.cmd(&["ZSCAN", "none", "0"]),
        Reply::Array(vec![Reply::bulk("0"), Reply::Array(vec![])])
    );
    assert_eq!(c.cmd(&["ZSCAN", "z", "x"]), Reply::Error("ERR invalid cursor".into()));
    assert_eq!(c.cmd(&["SET", "s", "v"]), Reply::Simple("OK".into()));
    assert!(matches!(c.cmd(&["ZSCAN", "s", "0"]), Reply::Error(e) if e.starts_with("WRONGTYPE")));
}
