//! Sets against a BTreeSet model: SADD/SREM/SMEMBERS/SISMEMBER/SCARD/SPOP.

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
        for _ in 0..500 {
            let k = format!("s{}", rng.below(3));
            let m = format!("m{}", rng.below(12));
            match rng.below(6) {
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
