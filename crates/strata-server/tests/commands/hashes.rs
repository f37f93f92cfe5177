//! Hashes against a model: HSET/HMSET/HSETNX/HGET/HMGET/HGETALL/HDEL/HLEN/HEXISTS/HINCRBY/HKEYS/
//! HVALS/HSCAN, EXPIRE/PERSIST/TYPE/RENAME, several seeds; DEL of a hash then a new hash under
//! the same key starts empty. The same model runs with every hash compact, with every hash in
//! sub-keys, and with small compact limits that hashes cross both ways (grow past, shrink
//! below, and get deleted and recreated), checked with OBJECT ENCODING.

use crate::common::{field_deltas, Rng, Server};
use redis::Commands;
use std::collections::{BTreeMap, HashMap};

#[test]
fn hashes_match_model_compact() {
    let encodings = run_model(&[], 3, 12);
    assert_eq!(encodings.get("hashtable"), None, "{encodings:?}");
}

#[test]
fn hashes_match_model_subkeys() {
    let encodings = run_model(&["--hash-max-listpack-entries", "0"], 3, 12);
    assert_eq!(encodings.get("listpack"), None, "{encodings:?}");
}

#[test]
fn hashes_match_model_across_the_compact_limits() {
    let args = ["--hash-max-listpack-entries", "6", "--hash-max-listpack-value", "8"];
    let encodings = run_model(&args, 6, 12);
    // Both encodings were seen often.
    assert!(encodings.get("listpack").is_some_and(|&n| n > 20), "{encodings:?}");
    assert!(encodings.get("hashtable").is_some_and(|&n| n > 20), "{encodings:?}");
}

/// Field deltas (a write to an existing compact hash stored as a merge operand of its
/// metadata): edits of YCSB-shaped hashes against a model, read back from the metadata
/// cache, across flushes (SAVE: operands in tables above their base), and after a kill -9
/// and restart (the WAL replayed, the cache empty: every read merges in the engine).
#[test]
fn field_deltas_read_back_from_the_engine() {
    let args = ["--appendfsync", "always"];
    let mut srv = Server::start(&args);
    let dir = srv.keep_dir();
    let mut c = srv.conn();
    let mut model: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut rng = Rng::new(11);
    for k in 0..40 {
        let h: BTreeMap<String, String> =
            (0..10).map(|f| (format!("field{f}"), value(&mut rng, 100))).collect();
        let pairs: Vec<(&String, &String)> = h.iter().collect();
        let _: () = c.hset_multiple(format!("user{k}"), &pairs).unwrap();
        model.insert(format!("user{k}"), h);
    }
    let check = |c: &mut redis::Connection, model: &BTreeMap<String, BTreeMap<String, String>>| {
        for (k, h) in model {
            let got: BTreeMap<String, String> = c.hgetall(k).unwrap();
            assert_eq!(&got, h, "{k}");
            let enc: String = redis::cmd("OBJECT").arg("ENCODING").arg(k).query(c).unwrap();
            assert_eq!(enc, "listpack", "{k}");
        }
    };
    for i in 0..3000 {
        let k = format!("user{}", rng.below(40));
        let f = format!("field{}", rng.below(12));
        let h = model.get_mut(&k).unwrap();
        match rng.below(6) {
            0..=2 => {
                let v = value(&mut rng, 100);
                let n: i64 = c.hset(&k, &f, &v).unwrap();
                assert_eq!(n, i64::from(h.insert(f, v).is_none()));
            }
            3 if h.len() > 1 => {
                let n: i64 = c.hdel(&k, &f).unwrap();
                assert_eq!(n, i64::from(h.remove(&f).is_some()));
            }
            4 => {
                let n: i64 = c.hincr(&k, "count", 2).unwrap();
                let old: i64 = h.get("count").map_or(0, |v| v.parse().unwrap());
                assert_eq!(n, old + 2);
                h.insert("count".into(), n.to_string());
            }
            _ => {
                let (v1, v2) = (value(&mut rng, 100), value(&mut rng, 100));
                let _: () = c.hset_multiple(&k, &[(f.as_str(), &v1), ("field0", &v2)]).unwrap();
                h.insert(f, v1);
                h.insert("field0".into(), v2);
            }
        }
        if i % 500 == 499 {
            let _: () = redis::cmd("SAVE").query(&mut c).unwrap();
            check(&mut c, &model);
        }
    }
    check(&mut c, &model);
    let deltas = field_deltas(&mut srv.raw());
    assert!(deltas > 2000, "only {deltas} of 3000 edits were field deltas");
    drop(c);
    drop(srv); // SIGKILL
    let srv = Server::start_in(dir.path(), &args);
    let mut c = srv.conn();
    check(&mut c, &model);
    // Writes go on over what the restart read back.
    for (k, h) in &mut model {
        let _: i64 = c.hset(k, "after", "restart").unwrap();
        h.insert("after".into(), "restart".into());
    }
    check(&mut c, &model);
}

/// A key's chain of field deltas is bounded: after 16 operands the next write is whole. A
/// hash's first write, a write of most of the hash, and writes inside MULTI are whole too.
#[test]
fn field_delta_chains_are_bounded() {
    let srv = Server::start(&[]);
    let mut c = srv.conn();
    let big = "b".repeat(100);
    for i in 0..5 {
        let _: () = c.hset_multiple("h", &[("f", i.to_string()), ("big", big.clone())]).unwrap();
    }
    assert_eq!(field_deltas(&mut srv.raw()), 0, "a write of most of the hash is whole");
    // After that whole write: 16 deltas, 1 whole, 16 deltas, 1 whole, 6 deltas.
    for i in 0..40 {
        let _: i64 = c.hset("h", "f", i).unwrap();
    }
    assert_eq!(field_deltas(&mut srv.raw()), 38);
    let _: () = redis::cmd("MULTI").query(&mut c).unwrap();
    let _: () = redis::cmd("HSET").arg("h").arg("g").arg(1).query(&mut c).unwrap();
    let _: Vec<i64> = redis::cmd("EXEC").query(&mut c).unwrap();
    assert_eq!(field_deltas(&mut srv.raw()), 38);
    // After it, deltas again (the first write may be whole, as EXEC's entry may not be
    // cached).
    let _: i64 = c.hset("h", "f", "w").unwrap();
    let _: i64 = c.hset("h", "f", "x").unwrap();
    assert!((39..=40).contains(&field_deltas(&mut srv.raw())));
    let got: BTreeMap<String, String> = c.hgetall("h").unwrap();
    let want = [("f", "x"), ("g", "1"), ("big", big.as_str())];
    assert_eq!(got, want.map(|(f, v)| (f.to_string(), v.to_string())).into());
}

/// A compact hash larger than the metadata cache keeps (4 KiB) gets field deltas too: the
/// cache keeps its count of deltas without the record, and every read merges in the engine.
#[test]
fn field_deltas_on_a_hash_too_large_for_the_cache() {
    let srv = Server::start(&[]);
    let mut c = srv.conn();
    let mut h: BTreeMap<String, String> =
        (0..60).map(|f| (format!("field{f:02}"), format!("{f:0100}"))).collect();
    let pairs: Vec<(&String, &String)> = h.iter().collect();
    let _: () = c.hset_multiple("big", &pairs).unwrap();
    for i in 0..40 {
        let f = format!("field{:02}", i % 7);
        let _: i64 = c.hset("big", &f, i).unwrap();
        h.insert(f, i.to_string());
        let got: BTreeMap<String, String> = c.hgetall("big").unwrap();
        assert_eq!(got, h, "after edit {i}");
    }
    // As for a cached hash: 16 deltas, 1 whole, 16 deltas, 1 whole, 6 deltas.
    assert_eq!(field_deltas(&mut srv.raw()), 38);
    let enc: String = redis::cmd("OBJECT").arg("ENCODING").arg("big").query(&mut c).unwrap();
    assert_eq!(enc, "listpack");
}

/// A value of 0..max_len bytes.
fn value(rng: &mut Rng, max_len: u64) -> String {
    let n = rng.below(max_len + 1) as usize;
    let c = (b'a' + rng.below(26) as u8) as char;
    std::iter::repeat_n(c, n).collect()
}

/// A hash as Redis keeps it: its pairs in the order their fields were first set while it is
/// small (a listpack; compact here), in field order here once it passed a limit (a hash
/// table; sub-keys here), which it stays.
#[derive(Default, Clone, Debug)]
struct ModelHash {
    pairs: Vec<(String, String)>,
    table: bool,
}

impl ModelHash {
    fn at(&self, f: &str) -> Option<usize> {
        self.pairs.iter().position(|(g, _)| g == f)
    }

    fn get(&self, f: &str) -> Option<&String> {
        self.at(f).map(|i| &self.pairs[i].1)
    }

    fn contains_key(&self, f: &str) -> bool {
        self.at(f).is_some()
    }

    /// Sets `f` (in place, or last); the value replaced.
    fn insert(&mut self, f: String, v: String) -> Option<String> {
        match self.at(&f) {
            Some(i) => Some(std::mem::replace(&mut self.pairs[i].1, v)),
            None => {
                self.pairs.push((f, v));
                None
            }
        }
    }

    fn remove(&mut self, f: &str) -> Option<String> {
        self.at(f).map(|i| self.pairs.remove(i).1)
    }

    fn len(&self) -> usize {
        self.pairs.len()
    }

    fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// Turns into a table when the pairs pass `limits` (entries, bytes of a field or value).
    fn settle(&mut self, (entries, bytes): (usize, usize)) {
        let long = self.pairs.iter().any(|(f, v)| f.len() > bytes || v.len() > bytes);
        self.table |= self.pairs.len() > entries || long;
    }

    /// The pairs as HGETALL lists them.
    fn listed(&self) -> Vec<(String, String)> {
        let mut pairs = self.pairs.clone();
        if self.table {
            pairs.sort();
        }
        pairs
    }
}

/// The compact limits `args` set (the server's defaults: 128 pairs of at most 128 bytes).
fn limits_of(args: &[&str]) -> (usize, usize) {
    let arg = |name: &str, default: usize| {
        let at = args.iter().position(|a| *a == name);
        at.map_or(default, |i| args[i + 1].parse().unwrap())
    };
    (arg("--hash-max-listpack-entries", 128), arg("--hash-max-listpack-value", 128))
}

/// Runs the model on a server started with `args` over `seeds` seeds with values up to
/// `max_len` bytes; returns how often OBJECT ENCODING named each encoding.
fn run_model(args: &[&str], seeds: u64, max_len: u64) -> BTreeMap<String, usize> {
    let limits = limits_of(args);
    let srv = Server::start(args);
    let mut c = srv.conn();
    let mut encodings = BTreeMap::new();
    for seed in 1..=seeds {
        let _: () = redis::cmd("FLUSHALL").query(&mut c).unwrap();
        let mut model: HashMap<String, ModelHash> = HashMap::new();
        let mut rng = Rng::new(seed);
        for _ in 0..500 {
            for h in model.values_mut() {
                h.settle(limits);
            }
            let k = format!("h{}", rng.below(4));
            let f = format!("f{}", rng.below(15));
            match rng.below(9) {
                0 | 1 => {
                    let v = value(&mut rng, max_len);
                    let n: i64 = c.hset(&k, &f, &v).unwrap();
                    let h = model.entry(k).or_default();
                    assert_eq!(n, i64::from(h.insert(f, v).is_none()));
                }
                2 => {
                    let f2 = format!("f{}", rng.below(15));
                    let (v1, v2) = (value(&mut rng, max_len), value(&mut rng, max_len));
                    let _: () = c.hset_multiple(&k, &[(&f, &v1), (&f2, &v2)]).unwrap();
                    let h = model.entry(k).or_default();
                    h.insert(f, v1);
                    h.insert(f2, v2);
                }
                3 => {
                    let got: Option<String> = c.hget(&k, &f).unwrap();
                    assert_eq!(got, model.get(&k).and_then(|h| h.get(&f)).cloned());
                    let f2 = format!("f{}", rng.below(15));
                    let got: Vec<Option<String>> =
                        redis::cmd("HMGET").arg(&k).arg(&f).arg(&f2).query(&mut c).unwrap();
                    let h = model.get(&k);
                    let want = [&f, &f2].map(|f| h.and_then(|h| h.get(f)).cloned());
                    assert_eq!(got, want);
                    let enc: Option<String> =
                        redis::cmd("OBJECT").arg("ENCODING").arg(&k).query(&mut c).unwrap();
                    assert_eq!(enc.is_some(), model.contains_key(&k));
                    if let Some(e) = enc {
                        *encodings.entry(e).or_insert(0) += 1;
                    }
                }
                4 => {
                    let got: Vec<(String, String)> = c.hgetall(&k).unwrap();
                    assert_eq!(got, model.get(&k).map(ModelHash::listed).unwrap_or_default());
                    let keys: Vec<String> = c.hkeys(&k).unwrap();
                    assert_eq!(keys, got.iter().map(|(f, _)| f.clone()).collect::<Vec<_>>());
                    let vals: Vec<String> = c.hvals(&k).unwrap();
                    assert_eq!(vals, got.iter().map(|(_, v)| v.clone()).collect::<Vec<_>>());
                }
                5 => {
                    let n: i64 = c.hdel(&k, &f).unwrap();
                    let removed = model.get_mut(&k).and_then(|h| h.remove(&f)).is_some();
                    assert_eq!(n, i64::from(removed));
                    if model.get(&k).is_some_and(ModelHash::is_empty) {
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
                8 if rng.below(3) == 0 => {
                    let v = value(&mut rng, max_len);
                    let n: i64 =
                        redis::cmd("HSETNX").arg(&k).arg(&f).arg(&v).query(&mut c).unwrap();
                    let h = model.entry(k).or_default();
                    assert_eq!(n, i64::from(!h.contains_key(&f)));
                    if !h.contains_key(&f) {
                        h.insert(f, v);
                    }
                }
                8 if rng.below(2) == 0 => {
                    // Keyspace commands keep a hash whole in either encoding.
                    let k2 = format!("h{}", rng.below(4));
                    let t: String = redis::cmd("TYPE").arg(&k).query(&mut c).unwrap();
                    assert_eq!(t, if model.contains_key(&k) { "hash" } else { "none" });
                    let n: i64 = c.expire(&k, 1000).unwrap();
                    assert_eq!(n, i64::from(model.contains_key(&k)));
                    let ttl: i64 = c.ttl(&k).unwrap();
                    assert_eq!(ttl, if model.contains_key(&k) { 1000 } else { -2 });
                    let _: i64 = c.persist(&k).unwrap();
                    let r: redis::RedisResult<()> = c.rename(&k, &k2);
                    match model.remove(&k) {
                        Some(h) => {
                            r.unwrap();
                            model.insert(k2, h);
                        }
                        None => assert!(r.is_err()),
                    }
                }
                _ => {
                    let n: i64 = c.del(&k).unwrap();
                    assert_eq!(n, i64::from(model.remove(&k).is_some()));
                }
            }
        }
        let mut keys: Vec<String> = c.keys("*").unwrap();
        keys.sort();
        let mut want: Vec<String> = model.keys().cloned().collect();
        want.sort();
        assert_eq!(keys, want);
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
            assert_eq!(seen, h.pairs.iter().cloned().collect::<BTreeMap<_, _>>());
        }
    }
    encodings
}

/// HINCRBYFLOAT (x87 long double sums, Redis's errors), HSTRLEN and HRANDFIELD, with the
/// replies redis-server 7.0.15 gives.
#[test]
fn hincrbyfloat_hstrlen_and_hrandfield() {
    use crate::common::Reply;
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    c.cmd(&["HSET", "h", "a", "1.5", "b", "x", "c", "10"]);
    assert_eq!(c.cmd(&["HINCRBYFLOAT", "h", "a", "0.1"]), Reply::bulk("1.6"));
    assert_eq!(c.cmd(&["HINCRBYFLOAT", "h", "c", "1.5"]), Reply::bulk("11.5"));
    assert_eq!(c.cmd(&["HINCRBYFLOAT", "h", "new", "2.5e3"]), Reply::bulk("2500"));
    assert_eq!(
        c.cmd(&["HINCRBYFLOAT", "h", "b", "1"]),
        Reply::Error("ERR hash value is not a float".into())
    );
    assert_eq!(
        c.cmd(&["HINCRBYFLOAT", "h", "a", "inf"]),
        Reply::Error("ERR value is NaN or Infinity".into())
    );
    assert_eq!(
        c.cmd(&["HINCRBYFLOAT", "h", "a", "abc"]),
        Reply::Error("ERR value is not a valid float".into())
    );
    c.cmd(&["HSET", "h", "big", "1.7976931348623157e308"]);
    assert_eq!(
        c.cmd(&["HINCRBYFLOAT", "h", "big", "1.7976931348623157e308"]),
        Reply::bulk("359538626972463139991842093548208868096772893888658356970628841530353257046248792709403737216774171128857586838851041378617416726902272110715794556052955234146997955372576789671236326588091188869859074894581254961338834769297758245552436667197907705664206565009503223382416235440319971852753604933726679072768"),
        "x87 long double has the range a double lacks"
    );
    assert_eq!(c.cmd(&["HSTRLEN", "h", "a"]), Reply::Int(3));
    assert_eq!(c.cmd(&["HSTRLEN", "h", "none"]), Reply::Int(0));
    assert_eq!(c.cmd(&["HRANDFIELD", "nokey"]), Reply::Null);
    assert_eq!(c.cmd(&["HRANDFIELD", "nokey", "3"]), Reply::Array(vec![]));
    let Reply::Array(all) = c.cmd(&["HRANDFIELD", "h", "100", "WITHVALUES"]) else { panic!() };
    assert_eq!(all.len(), 2 * 5, "distinct: every field once, with its value");
    let Reply::Array(drawn) = c.cmd(&["HRANDFIELD", "h", "-9"]) else { panic!() };
    assert_eq!(drawn.len(), 9);
    assert_eq!(c.cmd(&["HRANDFIELD", "h", "1", "values"]), Reply::Error("ERR syntax error".into()));
}
