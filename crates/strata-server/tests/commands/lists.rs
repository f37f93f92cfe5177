//! Lists against a VecDeque model: LPUSH/RPUSH/LPOP/RPOP (with count)/LRANGE/LLEN/LINDEX.

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
