//! A command that names a field, member or key more than once counts it once, and a later
//! pair of the same field or member wins: HSET, HDEL, SADD, SREM, ZADD, ZREM and DEL, with a
//! few names (looked for among the earlier ones in turn) and with more than sixteen (a hash
//! set), hashes both compact and in sub-keys (`types/seen.rs`).

use crate::common::Server;

/// `n` names `x0`, `x1`, ... with every one named twice, the repeats after all the firsts.
fn twice(n: usize) -> Vec<String> {
    (0..n).chain(0..n).map(|i| format!("x{i}")).collect()
}

#[test]
fn repeated_names_count_once_few_and_many() {
    for args in [&[][..], &["--hash-max-listpack-entries", "0"][..]] {
        let srv = Server::start(args);
        let mut c = srv.conn();
        for n in [3, 40] {
            let names = twice(n);
            // HSET: the later value of each field wins; n fields added.
            let mut hset = redis::cmd("HSET");
            hset.arg("h");
            for (i, f) in names.iter().enumerate() {
                hset.arg(f).arg(i);
            }
            let added: usize = hset.query(&mut c).unwrap();
            assert_eq!(added, n, "HSET of {n} fields named twice");
            let v: String = redis::cmd("HGET").arg("h").arg("x0").query(&mut c).unwrap();
            assert_eq!(v, n.to_string(), "the later pair wins");
            let removed: usize = redis::cmd("HDEL").arg("h").arg(&names).query(&mut c).unwrap();
            assert_eq!(removed, n);
            // SADD / SREM.
            let added: usize = redis::cmd("SADD").arg("s").arg(&names).query(&mut c).unwrap();
            assert_eq!(added, n);
            let card: usize = redis::cmd("SCARD").arg("s").query(&mut c).unwrap();
            assert_eq!(card, n);
            let removed: usize = redis::cmd("SREM").arg("s").arg(&names).query(&mut c).unwrap();
            assert_eq!(removed, n);
            // ZADD: the later score wins; ZADD CH counts each member once.
            let mut zadd = redis::cmd("ZADD");
            zadd.arg("z");
            for (i, m) in names.iter().enumerate() {
                zadd.arg(i).arg(m);
            }
            let added: usize = zadd.query(&mut c).unwrap();
            assert_eq!(added, n);
            let s: String = redis::cmd("ZSCORE").arg("z").arg("x1").query(&mut c).unwrap();
            assert_eq!(s, (n + 1).to_string());
            let card: usize = redis::cmd("ZCARD").arg("z").query(&mut c).unwrap();
            assert_eq!(card, n);
            let removed: usize = redis::cmd("ZREM").arg("z").arg(&names).query(&mut c).unwrap();
            assert_eq!(removed, n);
            // DEL of keys named twice.
            for k in &names[..n] {
                let _: () = redis::cmd("SET").arg(k).arg("v").query(&mut c).unwrap();
            }
            let gone: usize = redis::cmd("DEL").arg(&names).query(&mut c).unwrap();
            assert_eq!(gone, n);
        }
    }
}
