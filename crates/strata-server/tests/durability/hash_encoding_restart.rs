//! Hashes written in sub-keys (metadata format 0, all a server wrote before compact hashes;
//! here forced with `--hash-max-listpack-entries 0`) read and update after a restart with the
//! compact defaults, and stay in sub-keys; compact hashes written then survive another
//! restart, and one grown past the limits meanwhile converts and survives too. Reads of a hot
//! hash hit the metadata cache (INFO `strata_meta_cache`).

use crate::common::Server;
use redis::Commands;
use std::collections::BTreeMap;

fn encoding(c: &mut redis::Connection, k: &str) -> String {
    redis::cmd("OBJECT").arg("ENCODING").arg(k).query(c).unwrap()
}

fn all(c: &mut redis::Connection, k: &str) -> BTreeMap<String, String> {
    c.hgetall(k).unwrap()
}

#[test]
fn both_encodings_survive_restarts() {
    let mut srv = Server::start(&["--hash-max-listpack-entries", "0"]);
    let mut c = srv.conn();
    let _: () = c.hset_multiple("old", &[("a", "1"), ("b", "2")]).unwrap();
    assert_eq!(encoding(&mut c, "old"), "hashtable");
    srv.stop();
    let dir = srv.keep_dir();

    let mut srv = Server::start_in(dir.path(), &[]);
    let mut c = srv.conn();
    let want: BTreeMap<String, String> =
        [("a".into(), "1".into()), ("b".into(), "2".into())].into();
    assert_eq!(all(&mut c, "old"), want);
    let _: i64 = c.hset("old", "c", "3").unwrap();
    let _: i64 = c.hdel("old", "a").unwrap();
    assert_eq!(encoding(&mut c, "old"), "hashtable", "a hash never converts back");
    let _: () = c.hset_multiple("new", &[("x", "10"), ("y", "20")]).unwrap();
    assert_eq!(encoding(&mut c, "new"), "listpack");
    let _: () = c.hset_multiple("grows", &[("f", "v")]).unwrap();
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("hash-max-listpack-value")
        .arg("4")
        .query(&mut c)
        .unwrap();
    let _: i64 = c.hset("grows", "long", "longer than four").unwrap();
    assert_eq!(encoding(&mut c, "grows"), "hashtable");
    srv.stop();

    let srv = Server::start_in(dir.path(), &[]);
    let mut c = srv.conn();
    let old: BTreeMap<String, String> = [("b".into(), "2".into()), ("c".into(), "3".into())].into();
    assert_eq!(all(&mut c, "old"), old);
    let new: BTreeMap<String, String> =
        [("x".into(), "10".into()), ("y".into(), "20".into())].into();
    assert_eq!(all(&mut c, "new"), new);
    assert_eq!(encoding(&mut c, "new"), "listpack");
    let grows: BTreeMap<String, String> =
        [("f".into(), "v".into()), ("long".into(), "longer than four".into())].into();
    assert_eq!(all(&mut c, "grows"), grows);
    assert_eq!(c.hlen::<_, usize>("grows").unwrap(), 2);
    assert_eq!(encoding(&mut c, "grows"), "hashtable");
    // Repeated reads of one hash are served by the metadata cache (INFO shows it).
    for _ in 0..3 {
        assert_eq!(all(&mut c, "new"), new);
    }
    let info: String = redis::cmd("INFO").arg("strata").query(&mut c).unwrap();
    let line = info.lines().find_map(|l| l.strip_prefix("strata_meta_cache:")).unwrap();
    // `name=value` of the cache's line, and `name:value` of an INFO section.
    let stat = |name: &str| -> u64 {
        line.split(',').find_map(|kv| kv.strip_prefix(name)).unwrap().parse().unwrap()
    };
    let field = |info: &str, name: &str| -> u64 {
        info.lines().find_map(|l| l.strip_prefix(name)).unwrap().parse().unwrap()
    };
    assert!(stat("hits=") >= 2, "{line}");
    let cached = stat("bytes=");
    assert!(cached > 0, "{line}");
    // INFO memory counts the metadata cache, and the process's resident set.
    let mem: String = redis::cmd("INFO").arg("memory").query(&mut c).unwrap();
    assert!(field(&mem, "used_memory:") >= cached, "{mem}");
    if cfg!(target_os = "linux") {
        assert!(field(&mem, "used_memory_rss:") > field(&mem, "used_memory:"), "{mem}");
    }
}
