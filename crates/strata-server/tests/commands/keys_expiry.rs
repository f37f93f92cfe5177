//! Keyspace and expiry: EXPIRE/PEXPIRE/EXPIREAT/TTL/PTTL/PERSIST, lazy expiry on access, the
//! active expiry task removing keys nobody reads, TYPE, SCAN with MATCH/COUNT/TYPE, KEYS,
//! DBSIZE, RENAME of every type, FLUSHALL, TOUCH.
// Scores in these tests are exact binary fractions.
#![allow(clippy::float_cmp)]

use crate::common::Server;
use redis::Commands;
use std::collections::BTreeSet;
use std::time::Duration;

#[test]
fn expiry_lazy_and_active() {
    let srv = Server::start(&[]);
    let mut c = srv.conn();
    let _: () = c.set("s", "v").unwrap();
    let _: () = c.hset("h", "f", "v").unwrap();
    assert_eq!(c.ttl::<_, i64>("s").unwrap(), -1);
    assert_eq!(c.ttl::<_, i64>("missing").unwrap(), -2);
    assert!(c.expire::<_, bool>("s", 100).unwrap());
    assert_eq!(c.ttl::<_, i64>("s").unwrap(), 100);
    assert!(c.persist::<_, bool>("s").unwrap());
    assert_eq!(c.ttl::<_, i64>("s").unwrap(), -1);
    assert!(c.pexpire::<_, bool>("s", 150).unwrap());
    assert!(c.pexpire::<_, bool>("h", 150).unwrap());
    let far = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
        + 1000;
    let _: () = c.set("at", "v").unwrap();
    assert!(c.expire_at::<_, bool>("at", far as i64).unwrap());
    let t: i64 = c.ttl("at").unwrap();
    assert!((999..=1000).contains(&t));
    std::thread::sleep(Duration::from_millis(300));
    // Lazily: expired keys read as absent.
    assert_eq!(c.get::<_, Option<String>>("s").unwrap(), None);
    assert_eq!(c.hget::<_, _, Option<String>>("h", "f").unwrap(), None);
    assert!(!c.exists::<_, bool>("h").unwrap());
    // A new hash under an expired key's name starts empty.
    let _: () = c.hset("h", "g", "w").unwrap();
    assert_eq!(c.hlen::<_, usize>("h").unwrap(), 1);
    // Actively: keys never read again disappear from the keyspace count of INFO.
    for i in 0..50 {
        let _: () = redis::cmd("SET")
            .arg(format!("e{i}"))
            .arg("v")
            .arg("PX")
            .arg(100)
            .query(&mut c)
            .unwrap();
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let info: String = redis::cmd("INFO").arg("stats").query(&mut c).unwrap();
        let expired: u64 = info
            .lines()
            .find_map(|l| l.strip_prefix("expired_keys:"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        if expired >= 50 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "active expiry removed only {expired}");
        std::thread::sleep(Duration::from_millis(100));
    }
    // An expiry in the past deletes.
    assert!(c.expire::<_, bool>("at", -1).unwrap());
    assert!(!c.exists::<_, bool>("at").unwrap());
}

#[test]
fn scan_keys_type_rename_flush() {
    let srv = Server::start(&[]);
    let mut c = srv.conn();
    let mut all = BTreeSet::new();
    for i in 0..57 {
        let k = format!("user:{i}");
        let _: () = c.set(&k, i).unwrap();
        all.insert(k);
    }
    let _: () = c.hset("hash1", "f", "v").unwrap();
    let _: () = c.rpush("list1", "a").unwrap();
    let _: () = c.sadd("set1", "a").unwrap();
    let _: () = c.zadd("zset1", "a", 1).unwrap();
    let mut seen = BTreeSet::new();
    let mut cursor = 0u64;
    loop {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg("user:*")
            .arg("COUNT")
            .arg(7)
            .query(&mut c)
            .unwrap();
        seen.extend(keys);
        if next == 0 {
            break;
        }
        cursor = next;
    }
    assert_eq!(seen, all);
    let (_, hashes): (u64, Vec<String>) = redis::cmd("SCAN")
        .arg(0)
        .arg("TYPE")
        .arg("hash")
        .arg("COUNT")
        .arg(1000)
        .query(&mut c)
        .unwrap();
    assert_eq!(hashes, vec!["hash1".to_string()]);
    let keys: BTreeSet<String> = c.keys("user:1*").unwrap();
    assert_eq!(keys, all.iter().filter(|k| k.starts_with("user:1")).cloned().collect());
    assert_eq!(redis::cmd("DBSIZE").query::<usize>(&mut c).unwrap(), 61);
    for (k, t) in [
        ("user:1", "string"),
        ("hash1", "hash"),
        ("list1", "list"),
        ("set1", "set"),
        ("zset1", "zset"),
        ("nope", "none"),
    ] {
        let got: String = redis::cmd("TYPE").arg(k).query(&mut c).unwrap();
        assert_eq!(got, t);
    }
    for k in ["hash1", "list1", "set1", "zset1", "user:1"] {
        let to = format!("{k}.renamed");
        let _: () = c.rename(k, &to).unwrap();
        assert!(!c.exists::<_, bool>(k).unwrap());
    }
    assert_eq!(c.hget::<_, _, String>("hash1.renamed", "f").unwrap(), "v");
    assert_eq!(c.lrange::<_, Vec<String>>("list1.renamed", 0, -1).unwrap(), vec!["a"]);
    assert!(c.sismember::<_, _, bool>("set1.renamed", "a").unwrap());
    assert_eq!(c.zscore::<_, _, f64>("zset1.renamed", "a").unwrap(), 1.0);
    assert_eq!(c.get::<_, String>("user:1.renamed").unwrap(), "1");
    let rk: Option<String> = redis::cmd("RANDOMKEY").query(&mut c).unwrap();
    assert!(rk.is_some());
    let _: () = redis::cmd("FLUSHALL").query(&mut c).unwrap();
    assert_eq!(redis::cmd("DBSIZE").query::<usize>(&mut c).unwrap(), 0);
    let rk: Option<String> = redis::cmd("RANDOMKEY").query(&mut c).unwrap();
    assert_eq!(rk, None);
}

/// COPY: every type and encoding, the expiry with it, REPLACE, Redis 7.0.15's errors (one
/// database here: DB 0 only).
#[test]
fn copy_copies_every_type_with_its_expiry() {
    use crate::common::Reply;
    let srv = Server::start(&["--hash-max-listpack-entries", "2"]);
    let mut c = srv.raw();
    let ok = Reply::Simple("OK".into());
    assert_eq!(c.cmd(&["SET", "a", "1", "EX", "1000"]), ok);
    assert_eq!(c.cmd(&["COPY", "a", "b"]), Reply::Int(1));
    assert_eq!(c.cmd(&["GET", "b"]), Reply::bulk("1"));
    assert_eq!(c.cmd(&["TTL", "b"]), Reply::Int(1000));
    assert_eq!(c.cmd(&["COPY", "a", "b"]), Reply::Int(0));
    assert_eq!(c.cmd(&["COPY", "nokey", "c"]), Reply::Int(0));
    assert_eq!(c.cmd(&["COPY", "a", "c", "DB", "0"]), Reply::Int(1));
    assert_eq!(
        c.cmd(&["COPY", "a", "a"]),
        Reply::Error("ERR source and destination objects are the same".into())
    );
    assert_eq!(c.cmd(&["COPY", "a", "d", "DB", "1"]), Reply::Int(1));
    assert_eq!(
        c.cmd(&["COPY", "a", "d", "DB", "16"]),
        Reply::Error("ERR DB index is out of range".into())
    );
    assert_eq!(
        c.cmd(&["COPY", "a", "d", "DB", "x"]),
        Reply::Error("ERR value is not an integer or out of range".into())
    );
    assert_eq!(c.cmd(&["COPY", "a", "d", "FOO"]), Reply::Error("ERR syntax error".into()));
    // A compact hash and one of sub-keys, a list, a sorted set (its score index too).
    assert_eq!(c.cmd(&["HSET", "h", "f", "v"]), Reply::Int(1));
    assert_eq!(c.cmd(&["HSET", "big", "f", "1", "g", "2", "k", "3"]), Reply::Int(3));
    assert_eq!(c.cmd(&["RPUSH", "l", "x", "y"]), Reply::Int(2));
    assert_eq!(c.cmd(&["ZADD", "z", "2", "b", "1", "a"]), Reply::Int(2));
    for (src, dst) in [("h", "h2"), ("big", "big2"), ("l", "l2"), ("z", "z2")] {
        assert_eq!(c.cmd(&["COPY", src, dst]), Reply::Int(1), "{src}");
    }
    assert_eq!(c.cmd(&["HGETALL", "h2"]), Reply::Array(vec![Reply::bulk("f"), Reply::bulk("v")]));
    assert_eq!(c.cmd(&["HLEN", "big2"]), Reply::Int(3));
    assert_eq!(c.cmd(&["OBJECT", "ENCODING", "big2"]), Reply::bulk("hashtable"));
    assert_eq!(
        c.cmd(&["LRANGE", "l2", "0", "-1"]),
        Reply::Array(vec![Reply::bulk("x"), Reply::bulk("y")])
    );
    assert_eq!(
        c.cmd(&["ZRANGEBYSCORE", "z2", "0", "10"]),
        Reply::Array(vec![Reply::bulk("a"), Reply::bulk("b")])
    );
    // The copy is its own: changing it leaves the source.
    assert_eq!(c.cmd(&["RPUSH", "l2", "z"]), Reply::Int(3));
    assert_eq!(c.cmd(&["LLEN", "l"]), Reply::Int(2));
    // REPLACE over another type.
    assert_eq!(c.cmd(&["COPY", "z", "l", "REPLACE"]), Reply::Int(1));
    assert_eq!(c.cmd(&["TYPE", "l"]), Reply::Simple("zset".into()));
    assert_eq!(c.cmd(&["ZCARD", "l"]), Reply::Int(2));
}

#[test]
fn touch_counts_the_keys_that_exist_as_exists_does() {
    let srv = Server::start(&[]);
    let mut c = srv.conn();
    let _: () = c.set("a", 1).unwrap();
    let _: () = c.rpush("l", "x").unwrap();
    let _: () = c.set_ex("gone", 1, 1).unwrap();
    let _: i64 = redis::cmd("PEXPIRE").arg("gone").arg(1).query(&mut c).unwrap();
    std::thread::sleep(Duration::from_millis(5));
    let n: i64 =
        redis::cmd("TOUCH").arg(&["a", "l", "missing", "a", "gone"]).query(&mut c).unwrap();
    assert_eq!(n, 3, "a twice and l; a missing key and an expired one count nothing");
    let e: i64 =
        redis::cmd("EXISTS").arg(&["a", "l", "missing", "a", "gone"]).query(&mut c).unwrap();
    assert_eq!(e, n);
    let err = redis::cmd("TOUCH").query::<i64>(&mut c).unwrap_err();
    assert!(err.to_string().contains("wrong number of arguments"), "{err}");
}

/// A command's reply on an in-process server, as text.
fn run(sh: &strata_server::state::Shared, args: &[&str]) -> String {
    String::from_utf8(crate::common::run_in(sh, args)).unwrap()
}

/// Active expiry works as hard as the expired keys call for (Redis's `active-expire-effort`
/// rules): a round goes on past its first slice while the slices find expired keys among
/// those with an expiry, and stops after one where they find few or none.
#[test]
fn an_expiry_round_goes_on_while_it_finds_expired_keys() {
    use strata_server::server::tasks::{expire_round, ExpiryEffort};
    let tmp = tempfile::tempdir().unwrap();
    let sh = crate::common::in_process(tmp.path());
    // Time enough for any machine: what is tested is when a round stops, not how fast it is.
    let effort = ExpiryEffort { time: Duration::from_secs(20), stale_percent: 10 };
    let start = (0, Vec::new());
    for i in 0..3000 {
        run(&sh, &["SET", &format!("gone{i:05}"), "v", "PX", "1"]);
    }
    std::thread::sleep(Duration::from_millis(20));
    let (point, deleted) = expire_round(&sh, &start, &effort).unwrap();
    assert_eq!(deleted, 3000, "every expired key in one round");
    assert_eq!(point, (1, Vec::new()), "the round walked all of database 0");
    assert_eq!(run(&sh, &["DBSIZE"]), ":0\r\n");
    let info = run(&sh, &["INFO", "stats"]);
    assert!(info.contains("expired_time_cap_reached_count:0\r\n"), "{info}");
    assert!(info.contains("expire_cycle_cpu_milliseconds:"), "{info}");
    // A round out of time while it still finds expired keys is counted.
    for i in 0..300 {
        run(&sh, &["SET", &format!("gone{i:05}"), "v", "PX", "1"]);
    }
    std::thread::sleep(Duration::from_millis(20));
    let no_time = ExpiryEffort { time: Duration::ZERO, stale_percent: 10 };
    let (_, deleted) = expire_round(&sh, &start, &no_time).unwrap();
    assert!(deleted > 0 && deleted < 300, "one slice only: {deleted}");
    let info = run(&sh, &["INFO", "stats"]);
    assert!(info.contains("expired_time_cap_reached_count:1\r\n"), "{info}");
    run(&sh, &["CONFIG", "RESETSTAT"]);
    let info = run(&sh, &["INFO", "stats"]);
    assert!(info.contains("expired_time_cap_reached_count:0\r\n"), "{info}");
    while expire_round(&sh, &start, &effort).unwrap().1 > 0 {}
    assert_eq!(run(&sh, &["DBSIZE"]), ":0\r\n");

    // Keys without an expiry, or not yet expired: one slice (200 keys) and the round stops.
    for i in 0..1000 {
        run(&sh, &["SET", &format!("live{i:05}"), "v"]);
        run(&sh, &["SET", &format!("later{i:05}"), "v", "EX", "1000"]);
    }
    let (point, deleted) = expire_round(&sh, &start, &effort).unwrap();
    assert_eq!(deleted, 0);
    assert_eq!(point.0, 0, "still in database 0: {point:?}");
    assert!(!point.1.is_empty(), "one slice, then the round stopped");

    // A few expired keys among many with an expiry (1%, spread over the slots): each round
    // stops after one slice; rounds from there on clear them all.
    for i in 0..20 {
        run(&sh, &["SET", &format!("few{i:05}"), "v", "PX", "1"]);
    }
    std::thread::sleep(Duration::from_millis(20));
    let (mut point, mut deleted) = expire_round(&sh, &start, &effort).unwrap();
    assert!(deleted < 20 && point.0 == 0, "one slice: {deleted} deleted, at {point:?}");
    // 2,020 keys, 200 a slice: a pass over them all takes 11 slices.
    let mut rounds = 1;
    while deleted < 20 && rounds < 11 {
        let (p, d) = expire_round(&sh, &point, &effort).unwrap();
        (point, deleted, rounds) = (p, deleted + d, rounds + 1);
    }
    assert_eq!(deleted, 20, "every expired key within one pass, after {rounds} rounds");
    assert_eq!(run(&sh, &["DBSIZE"]), ":2000\r\n");
}

/// Each tick of active expiry reports what its walk found that the due index lacked (what
/// sets the walk's pace: `server::tasks::WalkPace`): nothing where every key with an expiry
/// was noted as written; each key once, in the pass after the index lost them (as at a
/// restart), expired keys included; and a tick told not to walk walks nothing.
#[test]
fn the_walk_reports_the_keys_with_an_expiry_that_the_due_index_lacked() {
    use strata_server::server::tasks::{expire_tick, ExpiryEffort};
    let tmp = tempfile::tempdir().unwrap();
    let sh = crate::common::in_process(tmp.path());
    let effort = ExpiryEffort { time: Duration::from_secs(20), stale_percent: 10 };
    // One whole pass from the start of database 0: the keys it found unnoted, and its rounds.
    let pass = || {
        let (mut point, mut unnoted, mut rounds) = ((0, Vec::new()), 0, 0);
        loop {
            let t = expire_tick(&sh, &point, &effort, false, true).unwrap();
            let found = t.walked.expect("a tick told to walk walks");
            (point, unnoted, rounds) = (t.point, unnoted + found.unnoted, rounds + 1);
            if found.passed_end {
                return (unnoted, rounds);
            }
            assert!(rounds < 100, "a pass over a few hundred keys ends");
        }
    };
    for i in 0..150 {
        run(&sh, &["SET", &format!("live{i:05}"), "v"]);
        run(&sh, &["SET", &format!("later{i:05}"), "v", "EX", "1000"]);
    }
    let (unnoted, rounds) = pass();
    assert_eq!(unnoted, 0, "each key was noted as written");
    assert_eq!(rounds, 2, "300 keys, a slice of 200 a round");
    let set = sh.dbs.store(0).set;
    sh.engine().due.forget_set(set);
    assert_eq!(pass().0, 150, "the index lost them: the walk finds each");
    assert_eq!(pass().0, 0, "and noted them");
    // Expired keys the index lacked: the due keys go first, so only the walk finds these.
    for i in 0..20 {
        run(&sh, &["SET", &format!("gone{i:05}"), "v", "PX", "1"]);
    }
    sh.engine().due.forget_set(set);
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(pass().0, 150 + 20, "the later keys again, and the expired ones");
    assert_eq!(run(&sh, &["DBSIZE"]), ":300\r\n", "the expired keys deleted");
    assert_eq!(pass().0, 0);
    // A tick that does not walk leaves the walk where it was.
    let t = expire_tick(&sh, &(0, b"x".to_vec()), &effort, false, false).unwrap();
    assert_eq!((t.point, t.walk_first, t.walked), ((0, b"x".to_vec()), false, None));
}

/// The expiry walk's rounds and whether it patrols, from INFO `strata`.
fn expiry_walk(c: &mut redis::Connection) -> (u64, bool) {
    let info: String = redis::cmd("INFO").arg("strata").query(c).unwrap();
    let line = info.lines().find_map(|l| l.strip_prefix("strata_expiry_walk:"));
    let line = line.unwrap_or_else(|| panic!("no strata_expiry_walk in {info}"));
    let field = |name: &str| {
        let v = line.split(',').find_map(|f| f.strip_prefix(name)).unwrap();
        v.parse::<u64>().unwrap()
    };
    (field("rounds="), field("patrolling=") == 1)
}

/// Once a pass of the walk found every key with an expiry already in the due index, the
/// walk patrols (`server::tasks::WalkPace`): a round a second instead of ten, while keys
/// written with an expiry since (noted as written) keep it patrolling.
#[test]
fn the_walk_patrols_once_a_pass_found_no_key_the_due_index_lacked() {
    let srv = Server::start(&[]);
    let mut c = srv.conn();
    for i in 0..500 {
        let _: () = c.set(format!("k{i:05}"), "v").unwrap();
    }
    let waited = std::time::Instant::now();
    while !expiry_walk(&mut c).1 {
        assert!(waited.elapsed() < Duration::from_secs(30), "the walk never patrolled");
        std::thread::sleep(Duration::from_millis(50));
    }
    let (before, _) = expiry_walk(&mut c);
    for i in 0..50 {
        let _: () = c.set_ex(format!("t{i:05}"), "v", 1000).unwrap();
    }
    std::thread::sleep(Duration::from_secs(2));
    let (after, patrolling) = expiry_walk(&mut c);
    assert!(patrolling, "keys noted as written leave nothing for the walk to find");
    // Twenty ticks: two patrol rounds (ticks that ran late may come in a burst).
    assert!(after - before <= 8, "{} rounds in 2 s: not patrolling", after - before);
}

/// The milliseconds since the epoch `ms` from now, as PEXPIREAT takes them.
fn ms_from_now(ms: u64) -> String {
    (strata_server::types::now_ms() + ms).to_string()
}

/// Active expiry finds the keys due through the due index (`storage::due`), not by walking
/// every key: a few expired keys among many live ones are deleted in one call, and the
/// entries left behind by keys written since (persisted, given a later expiry, written
/// again without one) delete nothing.
#[test]
fn due_keys_are_deleted_without_walking_the_live_ones() {
    use strata_server::server::tasks::{expire_due, DuePass, ExpiryEffort};
    let tmp = tempfile::tempdir().unwrap();
    let sh = crate::common::in_process(tmp.path());
    let effort = ExpiryEffort { time: Duration::from_secs(20), stale_percent: 10 };
    for i in 0..5000 {
        run(&sh, &["SET", &format!("live{i:05}"), "v"]);
    }
    let at = ms_from_now(150);
    for i in 0..20 {
        run(&sh, &["SET", &format!("gone{i:02}"), "v", "PXAT", &at]);
    }
    run(&sh, &["HSET", "hash", "f", "v"]);
    run(&sh, &["PEXPIREAT", "hash", &at]);
    for key in ["persisted", "later", "rewritten"] {
        run(&sh, &["SET", key, "v", "PXAT", &at]);
    }
    run(&sh, &["PERSIST", "persisted"]);
    run(&sh, &["PEXPIRE", "later", "100000"]);
    run(&sh, &["SET", "rewritten", "w"]);
    assert_eq!(expire_due(&sh, &effort).unwrap().deleted, 0, "nothing due yet");
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(expire_due(&sh, &effort).unwrap().deleted, 21, "the 20 strings and the hash");
    assert_eq!(expire_due(&sh, &effort).unwrap().deleted, 0, "each entry once");
    assert_eq!(run(&sh, &["DBSIZE"]), ":5003\r\n");
    assert_eq!(run(&sh, &["GET", "rewritten"]), "$1\r\nw\r\n");
    assert_eq!(sh.engine().due.len(), 1, "only `later` is still ahead");
    let info = run(&sh, &["INFO", "strata"]);
    assert!(info.contains("strata_expiry_index:keys=1,capacity=1048576\r\n"), "{info}");
    let info = run(&sh, &["INFO", "stats"]);
    assert!(info.contains("expired_keys:21\r\n"), "{info}");
    // A pass out of time stops after a slice (200 keys), says so, and is counted.
    run(&sh, &["CONFIG", "RESETSTAT"]);
    let at = ms_from_now(50);
    for i in 0..500 {
        run(&sh, &["SET", &format!("many{i:03}"), "v", "PXAT", &at]);
    }
    std::thread::sleep(Duration::from_millis(100));
    let no_time = ExpiryEffort { time: Duration::ZERO, stale_percent: 10 };
    let pass = expire_due(&sh, &no_time).unwrap();
    assert_eq!(pass, DuePass { deleted: 200, out_of_time: true });
    let info = run(&sh, &["INFO", "stats"]);
    assert!(info.contains("expired_time_cap_reached_count:1\r\n"), "{info}");
    let pass = expire_due(&sh, &effort).unwrap();
    assert_eq!(pass, DuePass { deleted: 300, out_of_time: false });
    // FLUSHALL drops the database's entries with its keys.
    run(&sh, &["SET", "again", "v", "PX", "100000"]);
    run(&sh, &["FLUSHALL"]);
    assert_eq!(sh.engine().due.len(), 0);
}

/// The walk over every key notes the keys whose expiry is ahead in the due index, so keys
/// written before a restart (which the index, held in memory, lost) are due there once a
/// pass went over them.
#[test]
fn the_walk_gives_the_due_index_the_keys_written_before_a_restart() {
    use strata_server::server::tasks::{expire_due, expire_round, ExpiryEffort};
    let tmp = tempfile::tempdir().unwrap();
    let effort = ExpiryEffort { time: Duration::from_secs(20), stale_percent: 10 };
    let at = ms_from_now(1500);
    {
        let sh = crate::common::in_process(tmp.path());
        for i in 0..1000 {
            run(&sh, &["SET", &format!("live{i:05}"), "v"]);
        }
        for i in 0..30 {
            run(&sh, &["SET", &format!("gone{i:02}"), "v", "PXAT", &at]);
        }
        sh.dbs.close().unwrap();
    }
    let sh = crate::common::in_process(tmp.path());
    assert_eq!(sh.engine().due.len(), 0, "a new process starts with an empty index");
    // One pass of the walk (200 keys a slice; a round of live keys stops after one).
    let mut point = (0, Vec::new());
    for _ in 0..20 {
        let (next, deleted) = expire_round(&sh, &point, &effort).unwrap();
        assert_eq!(deleted, 0, "nothing due yet");
        point = next;
        if point.0 > 0 {
            break;
        }
    }
    assert_eq!(point, (1, Vec::new()), "the walk went over database 0");
    assert_eq!(sh.engine().due.len(), 30);
    let wait = at.parse::<u64>().unwrap().saturating_sub(strata_server::types::now_ms());
    std::thread::sleep(Duration::from_millis(wait + 50));
    assert_eq!(expire_due(&sh, &effort).unwrap().deleted, 30);
    assert_eq!(run(&sh, &["DBSIZE"]), ":1000\r\n");
}

/// A tick of active expiry takes the due keys first; when they run it out of time (many
/// keys expire at once), the next ticks walk first, as long as the walk runs out of time
/// finding expired keys, and the keys the walk deletes leave the due index.
#[test]
fn a_tick_walks_first_while_many_keys_expire_at_once() {
    use strata_server::server::tasks::{expire_tick, ExpiryEffort};
    let tmp = tempfile::tempdir().unwrap();
    let sh = crate::common::in_process(tmp.path());
    let effort = ExpiryEffort { time: Duration::from_secs(20), stale_percent: 10 };
    let no_time = ExpiryEffort { time: Duration::ZERO, stale_percent: 10 };
    let start = (0, Vec::new());
    for i in 0..1000 {
        run(&sh, &["SET", &format!("live{i:05}"), "v"]);
    }
    // A few due: the due keys and a walk's round in one tick, which ends in time.
    let at = ms_from_now(50);
    for i in 0..10 {
        run(&sh, &["SET", &format!("few{i:02}"), "v", "PXAT", &at]);
    }
    std::thread::sleep(Duration::from_millis(100));
    let t = expire_tick(&sh, &start, &no_time, false, true).unwrap();
    let (point, walk_first) = (t.point, t.walk_first);
    assert!(!walk_first);
    assert!(point.0 == 0 && !point.1.is_empty(), "the walk went one slice: {point:?}");
    assert_eq!(run(&sh, &["DBSIZE"]), ":1000\r\n");

    // Many due at once.
    let at = ms_from_now(50);
    for i in 0..3000 {
        run(&sh, &["SET", &format!("many{i:05}"), "v", "PXAT", &at]);
    }
    std::thread::sleep(Duration::from_millis(100));
    let t = expire_tick(&sh, &start, &no_time, false, true).unwrap();
    let (point, walk_first) = (t.point, t.walk_first);
    assert_eq!((point.clone(), walk_first), (start.clone(), true), "one slice of due keys");
    assert_eq!(t.walked, None, "the due keys took the tick's time");
    assert_eq!(sh.engine().due.len(), 2800);
    let expired = |sh: &strata_server::state::Shared| -> usize {
        let info = run(sh, &["INFO", "stats"]);
        let n = info.lines().find_map(|l| l.strip_prefix("expired_keys:")).unwrap();
        n.trim().parse().unwrap()
    };
    let before = expired(&sh);
    // Walking first, the tick walks even where the walk's pace would not (it patrols).
    let t = expire_tick(&sh, &point, &no_time, true, false).unwrap();
    assert!(t.walked.is_some_and(|f| f.unnoted == 0), "their keys were noted: {t:?}");
    let (point, walk_first) = (t.point, t.walk_first);
    assert!(walk_first, "the walk ran out of time among expired keys");
    assert!(point.0 == 0 && point.1 > start.1, "the walk went first: {point:?}");
    let walked = expired(&sh) - before;
    assert!(walked > 100, "one slice of the walk: {walked}");
    assert_eq!(sh.engine().due.len(), 2800 - walked, "the walk's deletions left the index");
    let walk_first = expire_tick(&sh, &point, &effort, true, false).unwrap().walk_first;
    assert!(!walk_first, "the walk ended in time, and so did the due keys after it");
    assert_eq!(sh.engine().due.len(), 0);
    assert_eq!(run(&sh, &["DBSIZE"]), ":1000\r\n");
}

/// INFO's `lazyfreed_objects`: UNLINK (and DEL under `lazyfree-lazy-user-del yes`) counts the
/// values whose freeing effort Redis puts above 64 (list nodes, members beyond the compact
/// encodings, stream nodes and groups), CONFIG RESETSTAT zeroes it.
#[test]
fn unlink_counts_the_values_redis_frees_lazily() {
    let dir = tempfile::tempdir().unwrap();
    let sh = crate::common::in_process(dir.path());
    let lazyfreed = |sh: &strata_server::state::Shared| -> u64 {
        let info = run(sh, &["INFO", "memory"]);
        info.lines()
            .find_map(|l| l.strip_prefix("lazyfreed_objects:"))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    };
    let fill = |sh: &strata_server::state::Shared, cmd: &str, key: &str, n: usize, scored: bool| {
        let mut args = vec![cmd.to_string(), key.to_string()];
        for i in 0..n {
            if scored {
                args.push(i.to_string());
            }
            args.push(format!("m{i}"));
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        crate::common::run_ok(sh, &args);
    };
    // Above the threshold: a set of 65 strings (a hashtable), a sorted set past its 128
    // listpack entries, a hash past its 128, a list of 70 one-entry nodes, a stream of 70
    // one-entry nodes.
    fill(&sh, "SADD", "set", 65, false);
    fill(&sh, "ZADD", "zset", 129, true);
    fill(&sh, "HSET", "hash", 65, true);
    crate::common::run_ok(&sh, &["CONFIG", "SET", "list-max-listpack-size", "1"]);
    fill(&sh, "RPUSH", "list", 70, false);
    crate::common::run_ok(&sh, &["CONFIG", "SET", "stream-node-max-entries", "1"]);
    for i in 0..70 {
        crate::common::run_ok(&sh, &["XADD", "stream", "*", "f", &i.to_string()]);
    }
    // At or below it: a set of 64, a sorted set of 100 (a listpack), a string, a stream of
    // one entry whose group was destroyed.
    fill(&sh, "SADD", "set64", 64, false);
    fill(&sh, "ZADD", "zsmall", 100, true);
    crate::common::run_ok(&sh, &["SET", "s", "v"]);
    crate::common::run_ok(&sh, &["XADD", "s1", "*", "a", "b"]);
    crate::common::run_ok(&sh, &["XGROUP", "CREATE", "s1", "g", "$"]);
    crate::common::run_ok(&sh, &["XGROUP", "DESTROY", "s1", "g"]);
    assert_eq!(lazyfreed(&sh), 0);
    assert_eq!(run(&sh, &["UNLINK", "set64", "zsmall", "s", "s1", "nokey"]), ":4\r\n");
    assert_eq!(lazyfreed(&sh), 0, "none past the threshold");
    // The hash's 65 fields stay compact here and in Redis (hash-max-listpack-entries 128).
    assert_eq!(run(&sh, &["UNLINK", "set", "zset", "hash", "list", "stream"]), ":5\r\n");
    assert_eq!(lazyfreed(&sh), 4);
    // DEL frees synchronously unless lazyfree-lazy-user-del says otherwise.
    fill(&sh, "SADD", "set", 65, false);
    assert_eq!(run(&sh, &["DEL", "set"]), ":1\r\n");
    assert_eq!(lazyfreed(&sh), 4);
    crate::common::run_ok(&sh, &["CONFIG", "SET", "lazyfree-lazy-user-del", "yes"]);
    fill(&sh, "SADD", "set", 65, false);
    crate::common::run_ok(&sh, &["SADD", "ints", "1", "2", "3"]);
    assert_eq!(run(&sh, &["DEL", "set", "ints"]), ":2\r\n");
    assert_eq!(lazyfreed(&sh), 5, "the set of strings, not the intset");
    crate::common::run_ok(&sh, &["CONFIG", "RESETSTAT"]);
    assert_eq!(lazyfreed(&sh), 0);
}
