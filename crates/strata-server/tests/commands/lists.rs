//! Lists against a VecDeque model: LPUSH/RPUSH/LPOP/RPOP (with count)/LRANGE/LLEN/LINDEX, and
//! the commands that change a list inside or move between lists (LINSERT, LSET, LREM, LTRIM,
//! LPOS, LPUSHX/RPUSHX, LMOVE, RPOPLPUSH, LMPOP).

use crate::common::{Rng, Server};
use redis::Commands;
use std::collections::{HashMap, VecDeque};

#[test]
fn lists_match_model() {
    let srv = Server::start(&[]);
    let mut c = srv.conn();
    for seed in 1..=3u64 {
        let _: () = redis::cmd("FLUSHALL").query(&mut c).unwrap();
        let mut model: HashMap<String, VecDeque<String>> = HashMap::new();
        let mut rng = Rng::new(seed);
        for step in 0..500 {
            let k = format!("l{}", rng.below(3));
            match rng.below(7) {
                0 | 1 => {
                    let v = format!("v{step}");
                    let left = rng.below(2) == 0;
                    let n: usize =
                        if left { c.lpush(&k, &v).unwrap() } else { c.rpush(&k, &v).unwrap() };
                    let l = model.entry(k).or_default();
                    if left {
                        l.push_front(v);
                    } else {
                        l.push_back(v);
                    }
                    assert_eq!(n, l.len());
                }
                2 => {
                    let left = rng.below(2) == 0;
                    let got: Option<String> = redis::cmd(if left { "LPOP" } else { "RPOP" })
                        .arg(&k)
                        .query(&mut c)
                        .unwrap();
                    let want =
                        model
                            .get_mut(&k)
                            .and_then(|l| if left { l.pop_front() } else { l.pop_back() });
                    assert_eq!(got, want);
                }
                3 => {
                    let n = rng.below(4) + 1;
                    let got: Option<Vec<String>> =
                        redis::cmd("RPOP").arg(&k).arg(n).query(&mut c).unwrap();
                    let want = model.get_mut(&k).filter(|l| !l.is_empty()).map(|l| {
                        let mut v = Vec::new();
                        for _ in 0..n {
                            if let Some(x) = l.pop_back() {
                                v.push(x);
                            }
                        }
                        v
                    });
                    assert_eq!(got, want);
                }
                4 => {
                    let (a, b) = (rng.below(12) as isize - 4, rng.below(12) as isize - 4);
                    let got: Vec<String> = c.lrange(&k, a, b).unwrap();
                    let l: Vec<String> =
                        model.get(&k).map(|l| l.iter().cloned().collect()).unwrap_or_default();
                    let len = l.len() as isize;
                    let s = if a < 0 { (len + a).max(0) } else { a };
                    let e = if b < 0 { len + b } else { b.min(len - 1) };
                    let want = if s > e || s >= len {
                        vec![]
                    } else {
                        l[s as usize..=e as usize].to_vec()
                    };
                    assert_eq!(got, want, "LRANGE {a} {b}");
                }
                5 => {
                    let n: usize = c.llen(&k).unwrap();
                    assert_eq!(n, model.get(&k).map_or(0, |l| l.len()));
                }
                _ => {
                    let i = rng.below(8) as isize - 4;
                    let got: Option<String> = c.lindex(&k, i).unwrap();
                    let l = model.get(&k);
                    let want = l.and_then(|l| {
                        let idx = if i < 0 { l.len() as isize + i } else { i };
                        (idx >= 0).then(|| l.get(idx as usize).cloned()).flatten()
                    });
                    assert_eq!(got, want);
                }
            }
            model.retain(|_, l| !l.is_empty());
        }
        let n: usize = redis::cmd("DBSIZE").query(&mut c).unwrap();
        assert_eq!(n, model.len());
    }
}

type Model = HashMap<String, VecDeque<String>>;

fn model_range(l: &VecDeque<String>) -> Vec<String> {
    l.iter().cloned().collect()
}

/// Redis's LPOS over the model.
fn model_pos(l: &VecDeque<String>, v: &str, rank: i64, count: usize, maxlen: usize) -> Vec<i64> {
    let n = l.len();
    let order: Vec<usize> = if rank > 0 { (0..n).collect() } else { (0..n).rev().collect() };
    let limit = if maxlen == 0 { n } else { maxlen.min(n) };
    order[..limit]
        .iter()
        .filter(|&&i| l[i] == v)
        .skip(rank.unsigned_abs() as usize - 1)
        .take(if count == 0 { usize::MAX } else { count })
        .map(|&i| i as i64)
        .collect()
}

#[test]
fn list_edits_and_moves_match_model() {
    let srv = Server::start(&[]);
    let mut c = srv.conn();
    for seed in 1..=4u64 {
        let _: () = redis::cmd("FLUSHALL").query(&mut c).unwrap();
        let mut model: Model = HashMap::new();
        let mut rng = Rng::new(seed * 31);
        for step in 0..700 {
            let k = format!("l{}", rng.below(3));
            // Few distinct values, so that pivots and LREM/LPOS find several matches.
            let v = format!("v{}", rng.below(5));
            let l = model.entry(k.clone()).or_default();
            match rng.below(11) {
                0 | 1 => {
                    let n: usize = redis::cmd(if step % 2 == 0 { "LPUSH" } else { "RPUSH" })
                        .arg(&k)
                        .arg(&v)
                        .query(&mut c)
                        .unwrap();
                    if step % 2 == 0 {
                        l.push_front(v);
                    } else {
                        l.push_back(v);
                    }
                    assert_eq!(n, l.len());
                }
                2 => {
                    let left = rng.below(2) == 0;
                    let n: usize = redis::cmd(if left { "LPUSHX" } else { "RPUSHX" })
                        .arg(&k)
                        .arg(&v)
                        .query(&mut c)
                        .unwrap();
                    if !l.is_empty() {
                        if left {
                            l.push_front(v);
                        } else {
                            l.push_back(v);
                        }
                    }
                    assert_eq!(n, l.len());
                }
                3 => {
                    let pivot = format!("v{}", rng.below(5));
                    let before = rng.below(2) == 0;
                    let n: i64 = redis::cmd("LINSERT")
                        .arg(&k)
                        .arg(if before { "BEFORE" } else { "AFTER" })
                        .arg(&pivot)
                        .arg(format!("i{step}"))
                        .query(&mut c)
                        .unwrap();
                    let want = if l.is_empty() {
                        0
                    } else if let Some(p) = l.iter().position(|x| *x == pivot) {
                        l.insert(if before { p } else { p + 1 }, format!("i{step}"));
                        l.len() as i64
                    } else {
                        -1
                    };
                    assert_eq!(n, want, "LINSERT {k} {before} {pivot}");
                }
                4 => {
                    let i = rng.below(10) as i64 - 5;
                    let r: redis::RedisResult<()> =
                        redis::cmd("LSET").arg(&k).arg(i).arg(format!("s{step}")).query(&mut c);
                    let idx = if i < 0 { l.len() as i64 + i } else { i };
                    if l.is_empty() {
                        assert!(r.unwrap_err().to_string().contains("no such key"));
                    } else if idx < 0 || idx >= l.len() as i64 {
                        assert!(r.unwrap_err().to_string().contains("index out of range"));
                    } else {
                        r.unwrap();
                        l[idx as usize] = format!("s{step}");
                    }
                }
                5 => {
                    let count = rng.below(5) as i64 - 2;
                    let n: usize =
                        redis::cmd("LREM").arg(&k).arg(count).arg(&v).query(&mut c).unwrap();
                    let limit = if count == 0 { usize::MAX } else { count.unsigned_abs() as usize };
                    let mut hits: Vec<usize> = (0..l.len()).filter(|&i| l[i] == v).collect();
                    if count < 0 {
                        hits.reverse();
                    }
                    hits.truncate(limit);
                    hits.sort_unstable();
                    for &i in hits.iter().rev() {
                        l.remove(i);
                    }
                    assert_eq!(n, hits.len(), "LREM {k} {count} {v}");
                }
                6 => {
                    let (a, b) = (rng.below(10) as i64 - 5, rng.below(10) as i64 - 5);
                    let _: () = redis::cmd("LTRIM").arg(&k).arg(a).arg(b).query(&mut c).unwrap();
                    let len = l.len() as i64;
                    let s = if a < 0 { (len + a).max(0) } else { a };
                    let e = if b < 0 { len + b } else { b.min(len - 1) };
                    *l = if s > e || s >= len {
                        VecDeque::new()
                    } else {
                        l.range(s as usize..=e as usize).cloned().collect()
                    };
                }
                7 => {
                    let rank = [1i64, 2, -1, -2][rng.below(4) as usize];
                    let count = rng.below(3) as usize;
                    let maxlen = rng.below(6) as usize;
                    let got: Vec<i64> = redis::cmd("LPOS")
                        .arg(&k)
                        .arg(&v)
                        .arg("RANK")
                        .arg(rank)
                        .arg("COUNT")
                        .arg(count)
                        .arg("MAXLEN")
                        .arg(maxlen)
                        .query(&mut c)
                        .unwrap();
                    assert_eq!(got, model_pos(l, &v, rank, count, maxlen), "LPOS {k} {v}");
                    let first: Option<i64> = redis::cmd("LPOS")
                        .arg(&k)
                        .arg(&v)
                        .arg("RANK")
                        .arg(rank)
                        .query(&mut c)
                        .unwrap();
                    assert_eq!(first, model_pos(l, &v, rank, 1, 0).first().copied());
                }
                8 | 9 => {
                    let dst = format!("l{}", rng.below(3));
                    let (from_left, to_left) = (rng.below(2) == 0, rng.below(2) == 0);
                    let side = |left: bool| if left { "LEFT" } else { "RIGHT" };
                    let got: Option<String> = if !from_left && to_left && rng.below(2) == 0 {
                        redis::cmd("RPOPLPUSH").arg(&k).arg(&dst).query(&mut c).unwrap()
                    } else {
                        redis::cmd("LMOVE")
                            .arg(&k)
                            .arg(&dst)
                            .arg(side(from_left))
                            .arg(side(to_left))
                            .query(&mut c)
                            .unwrap()
                    };
                    let moved = if from_left { l.pop_front() } else { l.pop_back() };
                    if let Some(x) = &moved {
                        let d = model.entry(dst).or_default();
                        if to_left {
                            d.push_front(x.clone());
                        } else {
                            d.push_back(x.clone());
                        }
                    }
                    assert_eq!(got, moved);
                }
                _ => {
                    let (a, b) = (format!("l{}", rng.below(3)), format!("l{}", rng.below(3)));
                    let count = rng.below(3) + 1;
                    let left = rng.below(2) == 0;
                    let got: Option<(String, Vec<String>)> = redis::cmd("LMPOP")
                        .arg(2)
                        .arg(&a)
                        .arg(&b)
                        .arg(if left { "LEFT" } else { "RIGHT" })
                        .arg("COUNT")
                        .arg(count)
                        .query(&mut c)
                        .unwrap();
                    let key =
                        [&a, &b].into_iter().find(|x| model.get(*x).is_some_and(|l| !l.is_empty()));
                    let want = key.map(|key| {
                        let l = model.get_mut(key).unwrap();
                        let n = (count as usize).min(l.len());
                        let popped: Vec<String> = (0..n)
                            .map(|_| if left { l.pop_front() } else { l.pop_back() }.unwrap())
                            .collect();
                        (key.clone(), popped)
                    });
                    assert_eq!(got, want, "LMPOP {a} {b}");
                }
            }
            model.retain(|_, l| !l.is_empty());
            for i in 0..3 {
                let key = format!("l{i}");
                let got: Vec<String> = c.lrange(&key, 0, -1).unwrap();
                let want = model.get(&key).map(model_range).unwrap_or_default();
                assert_eq!(got, want, "seed {seed} step {step} {key}");
            }
        }
        let n: usize = redis::cmd("DBSIZE").query(&mut c).unwrap();
        assert_eq!(n, model.len());
    }
}
