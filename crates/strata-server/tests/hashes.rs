//! Hashes against a model: HSET/HMSET/HGET/HMGET/HGETALL/HDEL/HLEN/HEXISTS/HINCRBY/HKEYS/HVALS/
//! HSCAN, several seeds; DEL of a hash then a new hash under the same key starts empty.

mod common;
use common::{Rng, Server};
use redis::Commands;
use std::collections::{BTreeMap, HashMap};

#[test]
fn hashes_match_model() {
    let srv = Server::start(&[]);
    let mut c = srv.conn();
    for seed in 1..=3u64 {
        let _: () = redis::cmd("FLUSHALL").query(&mut c).unwrap();
        let mut model: HashMap<String, BTreeMap<String, String>> = HashMap::new();
        let mut rng = Rng::new(seed);
        for _ in 0..500 {
            let k = format!("h{}", rng.below(4));
            let f = format!("f{}", rng.below(15));
            match rng.below(9) {
                0 | 1 => {
                    let v = format!("v{}", rng.below(100));
                    let n: i64 = c.hset(&k, &f, &v).unwrap();
                    let h = model.entry(k).or_default();
                    assert_eq!(n, i64::from(h.insert(f, v).is_none()));
                }
                2 => {
                    let f2 = format!("f{}", rng.below(15));
                    let _: () = c.hset_multiple(&k, &[(&f, "m1"), (&f2, "m2")]).unwrap();
                    let h = model.entry(k).or_default();
                    h.insert(f, "m1".into());
                    h.insert(f2, "m2".into());
                }
                3 => {
                    let got: Option<String> = c.hget(&k, &f).unwrap();
                    assert_eq!(got, model.get(&k).and_then(|h| h.get(&f)).cloned());
                }
                4 => {
                    let got: BTreeMap<String, String> = c.hgetall(&k).unwrap();
                    assert_eq!(got, model.get(&k).cloned().unwrap_or_default());
                    let keys: Vec<String> = c.hkeys(&k).unwrap();
                    assert_eq!(keys, got.keys().cloned().collect::<Vec<_>>());
                    let vals: Vec<String> = c.hvals(&k).unwrap();
                    assert_eq!(vals, got.values().cloned().collect::<Vec<_>>());
                }
                5 => {
                    let n: i64 = c.hdel(&k, &f).unwrap();
                    let removed = model.get_mut(&k).and_then(|h| h.remove(&f)).is_some();
                    assert_eq!(n, i64::from(removed));
                    if model.get(&k).is_some_and(|h| h.is_empty()) {
                        model.remove(&k);
                    }
                }
                6 => {
                    let n: usize = c.hlen(&k).unwrap();
                    assert_eq!(n, model.get(&k).map_or(0, |h| h.len()));
                    let e: bool = c.hexists(&k, &f).unwrap();
                    assert_eq!(e, model.get(&k).is_some_and(|h| h.contains_key(&f)));
                }
                7 => {
                    let by = rng.below(10) as i64;
                    let cur = model.get(&k).and_then(|h| h.get(&f)).cloned();
                    let r: redis::RedisResult<i64> = c.hincr(&k, format!("n{f}"), by);
                    let _ = cur;
                    let h = model.entry(k).or_default();
                    let old: i64 = h.get(&format!("n{f}")).map_or(0, |v| v.parse().unwrap());
                    assert_eq!(r.unwrap(), old + by);
                    h.insert(format!("n{f}"), (old + by).to_string());
                }
                _ => {
                    let n: i64 = c.del(&k).unwrap();
                    assert_eq!(n, i64::from(model.remove(&k).is_some()));
                }
            }
        }
        for (k, h) in &model {
            let mut cursor = 0u64;
            let mut seen = BTreeMap::new();
            loop {
                let (next, items): (u64, Vec<(String, String)>) = redis::cmd("HSCAN")
                    .arg(k)
                    .arg(cursor)
                    .arg("COUNT")
                    .arg(3)
                    .query(&mut c)
                    .unwrap();
                seen.extend(items);
                if next == 0 {
                    break;
                }
                cursor = next;
            }
            assert_eq!(&seen, h);
        }
    }
}
