//! Serving replicas: the dataset and then the replication stream. What each command puts
//! in the stream (read raw, as Redis's own tests read it), and replicas (this server and a
//! real redis-server where one is installed) that follow a master written by several
//! clients while they sync, and end with its contents.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::redis_peer::{contents, redis_server};
use crate::common::{
    follow, info_field, key_reaches, replication_reaches, wait_blocked, Raw, Reply, Rng, Server,
};

/// A raw replica's connection: SYNC sent, the RDB read past.
struct Attached {
    r: BufReader<TcpStream>,
}

fn attach(port: u16) -> Attached {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"SYNC\r\n").unwrap();
    let mut r = BufReader::new(s);
    let len = loop {
        let mut line = String::new();
        r.read_line(&mut line).unwrap();
        let line = line.trim_end();
        if line.is_empty() {
            continue;
        }
        let n = line.strip_prefix('$').unwrap_or_else(|| panic!("{line}"));
        break n.parse::<usize>().unwrap();
    };
    let mut rdb = vec![0u8; len];
    r.read_exact(&mut rdb).unwrap();
    assert!(rdb.starts_with(b"REDIS"));
    Attached { r }
}

impl Attached {
    /// The next command of the stream, PINGs skipped.
    fn next(&mut self) -> Vec<String> {
        loop {
            let words = self.frame();
            if !(words.len() == 1 && words[0].eq_ignore_ascii_case("ping")) {
                return words;
            }
        }
    }

    /// The next command of the stream.
    fn frame(&mut self) -> Vec<String> {
        let mut line = String::new();
        self.r.read_line(&mut line).unwrap();
        let n: usize = line
            .trim_end()
            .strip_prefix('*')
            .unwrap_or_else(|| panic!("{line:?}"))
            .parse()
            .unwrap();
        let mut words = Vec::new();
        for _ in 0..n {
            let mut l = String::new();
            self.r.read_line(&mut l).unwrap();
            let len: usize = l.trim_end().strip_prefix('$').unwrap().parse().unwrap();
            let mut w = vec![0u8; len + 2];
            self.r.read_exact(&mut w).unwrap();
            w.truncate(len);
            words.push(String::from_utf8_lossy(&w).into_owned());
        }
        words
    }

    /// The commands of the stream until the server closes the connection (words lower-cased).
    fn until_closed(&mut self) -> Vec<Vec<String>> {
        let mut got = Vec::new();
        while !self.r.fill_buf().unwrap_or(&[]).is_empty() {
            got.push(self.next().iter().map(|w| w.to_lowercase()).collect());
        }
        got
    }

    /// The next commands are `want` (words compared without case; a word ending in `*`
    /// matches any word it begins).
    fn expect(&mut self, want: &[&[&str]]) {
        for w in want {
            let got = self.next();
            let fits = got.len() == w.len()
                && got.iter().zip(w.iter()).all(|(g, w)| match w.strip_suffix('*') {
                    Some(prefix) => g.to_lowercase().starts_with(&prefix.to_lowercase()),
                    None => g.eq_ignore_ascii_case(w),
                });
            assert!(fits, "expected {w:?}, the stream has {got:?}");
        }
    }
}

#[test]
fn each_command_goes_to_the_stream_as_its_effect() {
    let s = Server::start(&["--enable-debug-command", "yes"]);
    let mut c = s.raw();
    assert_eq!(
        c.cmd(&["CONFIG", "SET", "repl-ping-replica-period", "3600"]),
        Reply::Simple("OK".into())
    );
    c.cmd(&["SET", "dumped", "v"]);
    let Reply::Bulk(dumped) = c.cmd(&["DUMP", "dumped"]) else { panic!("no DUMP") };
    let mut repl = attach(s.port);
    let past = "1000";
    for line in [
        &["SET", "foo1", "bar", "EX", "200"][..],
        &["SETEX", "foo1", "100", "bar"],
        &["SET", "foo2", "bar"],
        &["EXPIRE", "foo2", "100"],
        &["EXPIRE", "absent", "100"],
        &["PEXPIREAT", "foo2", past],
        &["SET", "foo", "bar", "EX", "100"],
        &["GETEX", "foo", "PERSIST"],
        &["GETEX", "foo"],
        &["GETEX", "foo", "PXAT", past],
        &["INCRBYFLOAT", "f", "1.5"],
        &["GETSET", "g", "1"],
        &["SET", "g", "2", "GET"],
        &["SET", "g", "3", "XX", "GET", "KEEPTTL"],
        &["DEL", "absent"],
        &["SADD", "s", "a"],
        &["SPOP", "s"],
        &["RPUSH", "l", "a", "b", "c"],
        &["LMPOP", "1", "l", "LEFT", "COUNT", "10"],
        &["HINCRBYFLOAT", "h", "x", "2.5"],
        &["XADD", "x", "MAXLEN", "~", "5", "*", "f", "v"],
        &["XGROUP", "CREATE", "x", "g", "0"],
        &["XREADGROUP", "GROUP", "g", "c", "STREAMS", "x", ">"],
        &["SADD", "src", "3", "1", "2"],
        &["SORT", "src", "BY", "nosort", "STORE", "dst"],
        &["RPUSH", "from", "a", "b"],
        &["BLMOVE", "from", "to", "RIGHT", "LEFT", "0"],
        &["BRPOPLPUSH", "from", "to", "0"],
        &["ZADD", "z1", "1", "a", "2", "b"],
        &["BZPOPMIN", "z1", "0"],
        &["ZMPOP", "1", "z1", "MAX", "COUNT", "5"],
        &["XTRIM", "x", "MAXLEN", "0"],
    ] {
        assert!(!matches!(c.cmd(line), Reply::Error(_)), "{line:?}");
    }
    c.send_raw(&Raw::encode(&[b"RESTORE", b"r", b"100000", &dumped, b"REPLACE"]));
    assert_eq!(c.read(), Reply::Simple("OK".into()));
    // MIGRATE: the replicas delete what moved.
    let target = Server::start(&[]);
    c.cmd(&["SET", "mk", "1"]);
    let moved = c.cmd(&["MIGRATE", "127.0.0.1", &target.port.to_string(), "mk", "0", "5000"]);
    assert_eq!(moved, Reply::Simple("OK".into()));
    c.multi(&[&["INCR", "n"], &["INCR", "n"]]);
    c.cmd(&["EXEC"]);
    c.multi(&[&["INCR", "n"]]);
    c.cmd(&["EXEC"]);
    c.cmd(&["EVAL", "redis.call('set','e','1') redis.call('incr','e')", "0"]);
    // A blocked client served by another's push: the push, then the pop it made.
    let mut b = s.raw();
    b.send_raw(&Raw::encode(&[b"BLPOP", b"q", b"0"]));
    wait_blocked(&mut c, 1);
    c.cmd(&["LPUSH", "q", "v"]);
    assert_eq!(b.read(), Reply::Array(vec![Reply::bulk("q"), Reply::bulk("v")]));
    // Another database, and a key deleted because its time was up when read.
    c.cmd(&["SELECT", "5"]);
    assert_eq!(c.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]), Reply::Simple("OK".into()));
    c.cmd(&["SET", "z", "v", "PX", "1"]);
    std::thread::sleep(Duration::from_millis(10));
    assert_eq!(c.cmd(&["GET", "z"]), Reply::Null);
    // SCAN deletes the keys it meets whose time is up, as a read does.
    c.cmd(&["SET", "y", "v", "PX", "1"]);
    std::thread::sleep(Duration::from_millis(10));
    c.cmd(&["SCAN", "0"]);
    c.cmd(&["SET", "end", "1"]);
    repl.expect(&[
        &["select", "0"],
        &["set", "foo1", "bar", "pxat", "1*"],
        &["set", "foo1", "bar", "pxat", "1*"],
        &["set", "foo2", "bar"],
        &["pexpireat", "foo2", "1*"],
        &["del", "foo2"],
        &["set", "foo", "bar", "pxat", "1*"],
        &["persist", "foo"],
        &["del", "foo"],
        &["set", "f", "1.5", "keepttl"],
        &["set", "g", "1"],
        &["set", "g", "2"],
        &["set", "g", "3", "xx", "keepttl"],
        &["sadd", "s", "a"],
        &["srem", "s", "a"],
        &["rpush", "l", "a", "b", "c"],
        &["lpop", "l", "3"],
        &["hset", "h", "x", "2.5"],
        &["xadd", "x", "minid", "=", "*", "*", "f", "v"],
        &["xgroup", "create", "x", "g", "0"],
        // XREADGROUP as the PEL entry it made; SORT ... STORE as the key it left.
        &[
            "xclaim",
            "x",
            "g",
            "c",
            "0",
            "*",
            "time",
            "1*",
            "retrycount",
            "1",
            "force",
            "justid",
            "lastid",
            "*",
        ],
        &["sadd", "src", "3", "1", "2"],
        &["restore", "dst", "0", "*", "replace", "absttl"],
        &["rpush", "from", "a", "b"],
        &["lmove", "from", "to", "right", "left"],
        &["rpoplpush", "from", "to"],
        &["zadd", "z1", "1", "a", "2", "b"],
        &["zpopmin", "z1"],
        &["zpopmax", "z1", "1"],
        &["xtrim", "x", "maxlen", "=", "0"],
        &["restore", "r", "1*", "*", "replace", "absttl"],
        &["set", "mk", "1"],
        &["del", "mk"],
        &["multi"],
        &["incr", "n"],
        &["incr", "n"],
        &["exec"],
        &["incr", "n"],
        &["multi"],
        &["set", "e", "1"],
        &["incr", "e"],
        &["exec"],
        &["lpush", "q", "v"],
        &["lpop", "q"],
        &["select", "5"],
        &["set", "z", "v", "pxat", "1*"],
        &["del", "z"],
        &["set", "y", "v", "pxat", "1*"],
        &["del", "y"],
        &["set", "end", "1"],
    ]);
    c.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "1"]);
}

/// Random writes of every kind to keys `k0..k{n}` of databases 0 and 1, by `conn`.
fn random_writes(c: &mut Raw, rng: &mut Rng, n: u64) {
    let key = format!("k{}", rng.below(n));
    let v = rng.below(1000).to_string();
    let db = rng.below(2).to_string();
    c.cmd(&["SELECT", &db]);
    let k = key.as_str();
    let line: Vec<&str> = match rng.below(16) {
        0 => vec!["SET", k, &v],
        1 => vec!["SET", k, &v, "EX", "1000"],
        2 => vec!["INCR", &key[..]],
        3 => vec!["LPUSH", k, &v],
        4 => vec!["RPOP", k],
        5 => vec!["HSET", k, &v, &v],
        6 => vec!["HINCRBYFLOAT", k, "f", "0.5"],
        7 => vec!["SADD", k, &v],
        8 => vec!["SPOP", k],
        9 => vec!["ZADD", k, &v, &v],
        10 => vec!["EXPIRE", k, "500"],
        11 => vec!["XADD", k, "MAXLEN", "~", "3", "*", "f", &v],
        12 => vec!["DEL", k],
        13 => vec!["INCRBYFLOAT", k, "1.25"],
        14 => vec!["PERSIST", k],
        _ => vec!["LMPOP", "1", k, "RIGHT", "COUNT", "2"],
    };
    c.cmd(&line);
}

/// Every key of databases 0 and 1 on `c`, with what `contents` compares.
fn everything(c: &mut Raw, n: u64) -> Vec<(String, Vec<Reply>)> {
    let keys: Vec<String> = (0..n).map(|i| format!("k{i}")).collect();
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    (0..2)
        .map(|db| {
            c.cmd(&["SELECT", &db.to_string()]);
            (db.to_string(), contents(c, &keys))
        })
        .collect()
}

/// Writers on `port` until `stop`.
fn writers(port: u16, stop: &Arc<AtomicBool>, n: u64) -> Vec<std::thread::JoinHandle<()>> {
    (0..3)
        .map(|i| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut c = Raw::connect(port);
                let mut rng = Rng::new(7 + i);
                while !stop.load(Ordering::Relaxed) {
                    random_writes(&mut c, &mut rng, n);
                }
            })
        })
        .collect()
}

/// Follows a master on `master_port` from `replica` (REPLICAOF) while writers write it,
/// then checks the replica holds what the master holds.
fn follows_while_written(master_port: u16, replica: &mut Raw) {
    const KEYS: u64 = 200;
    let mut m = Raw::connect(master_port);
    let stop = Arc::new(AtomicBool::new(false));
    let threads = writers(master_port, &stop, KEYS);
    std::thread::sleep(Duration::from_millis(300));
    let r = replica.cmd(&["REPLICAOF", "127.0.0.1", &master_port.to_string()]);
    assert_eq!(r, Reply::Simple("OK".into()));
    let until = Instant::now() + Duration::from_secs(20);
    while info_field(replica, "replication", "master_link_status") != "up" {
        assert!(Instant::now() < until, "the replica did not sync");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    // Every write acknowledged: the replica's offset reached the master's end.
    m.cmd(&["SET", "last", "1"]);
    let waited = m.cmd(&["WAIT", "1", "10000"]);
    if waited != Reply::Int(1) {
        let mi = m.cmd(&["INFO", "replication"]);
        let ri = replica.cmd(&["INFO", "replication"]);
        panic!("WAIT gave {waited:?}; master {mi:?}; replica {ri:?}");
    }
    assert_eq!(info_field(&mut m, "replication", "connected_slaves"), "1");
    // Asked for more replicas than there are: the count at its timeout.
    assert_eq!(m.cmd(&["WAIT", "2", "300"]), Reply::Int(1));
    let want = everything(&mut m, KEYS);
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let got = everything(replica, KEYS);
        if got == want {
            break;
        }
        assert!(Instant::now() < until, "the replica differs from its master");
        std::thread::sleep(Duration::from_millis(100));
    }
    replica.cmd(&["SELECT", "0"]);
    assert_eq!(replica.cmd(&["GET", "last"]), Reply::bulk("1"));
}

#[test]
fn a_replica_of_this_server_follows_it_while_clients_write() {
    let master = Server::start(&[]);
    let replica = Server::start(&[]);
    let mut r = replica.raw();
    follows_while_written(master.port, &mut r);
    // The link broken: it resumes with the stream alone (PSYNC's CONTINUE).
    let mut m = master.raw();
    let full = info_field(&mut r, "replication", "repl_full_syncs");
    r.cmd(&["CLIENT", "KILL", "TYPE", "master"]);
    m.cmd(&["SET", "after", "break"]);
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        r.cmd(&["SELECT", "0"]);
        if r.cmd(&["GET", "after"]) == Reply::bulk("break") {
            break;
        }
        assert!(Instant::now() < until, "the replica did not resume");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(info_field(&mut r, "replication", "repl_full_syncs"), full);
    assert_eq!(info_field(&mut r, "replication", "repl_partial_syncs"), "1");
    // ROLE lists it; min-replicas-to-write counts it.
    match m.cmd(&["ROLE"]) {
        Reply::Array(v) => match &v[2] {
            Reply::Array(rs) => assert_eq!(rs.len(), 1),
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
    m.cmd(&["CONFIG", "SET", "min-replicas-to-write", "1"]);
    assert_eq!(m.cmd(&["SET", "guarded", "1"]), Reply::Simple("OK".into()));
    m.cmd(&["CONFIG", "SET", "min-replicas-to-write", "2"]);
    assert!(
        matches!(m.cmd(&["SET", "guarded", "2"]), Reply::Error(e) if e.starts_with("NOREPLICAS"))
    );
}

#[test]
fn a_redis_server_replica_follows_this_server_while_clients_write() {
    let Some(redis) = redis_server() else {
        eprintln!("skipped: redis-server is not installed");
        return;
    };
    let master = Server::start(&[]);
    let mut r = Raw::connect(redis.port);
    follows_while_written(master.port, &mut r);
}

#[test]
fn a_replica_of_a_replica_follows_and_syncs_again_when_its_master_does() {
    let top = Server::start(&[]);
    let middle = Server::start(&[]);
    let bottom = Server::start(&[]);
    let (mut t, mut m, mut b) = (top.raw(), middle.raw(), bottom.raw());
    let linked = |c: &mut Raw| {
        let until = Instant::now() + Duration::from_secs(10);
        while info_field(c, "replication", "master_link_status") != "up" {
            assert!(Instant::now() < until, "no link");
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    let reaches = |c: &mut Raw, key: &str, want: Reply| {
        let until = Instant::now() + Duration::from_secs(10);
        while c.cmd(&["GET", key]) != want {
            assert!(Instant::now() < until, "{key} never reached {want:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    t.cmd(&["SET", "a", "1"]);
    m.cmd(&["REPLICAOF", "127.0.0.1", &top.port.to_string()]);
    linked(&mut m);
    b.cmd(&["REPLICAOF", "127.0.0.1", &middle.port.to_string()]);
    linked(&mut b);
    reaches(&mut b, "a", Reply::bulk("1"));
    // The top's writes reach the bottom through the middle.
    t.cmd(&["INCR", "a"]);
    t.cmd(&["SET", "b", "x", "EX", "100"]);
    reaches(&mut b, "a", Reply::bulk("2"));
    reaches(&mut b, "b", Reply::bulk("x"));
    // The middle follows another master (a full sync): the bottom syncs again from it.
    let other = Server::start(&[]);
    let mut o = other.raw();
    o.cmd(&["SET", "c", "from-other"]);
    m.cmd(&["REPLICAOF", "127.0.0.1", &other.port.to_string()]);
    reaches(&mut b, "c", Reply::bulk("from-other"));
    reaches(&mut b, "a", Reply::Null);
    o.cmd(&["SET", "d", "4"]);
    reaches(&mut b, "d", Reply::bulk("4"));
}

#[test]
fn an_exec_is_judged_by_its_commands_and_a_transaction_that_made_it_a_replica_stays_local() {
    let s = Server::start(&[]);
    let (mut c, mut other) = (s.raw(), s.raw());
    // Writes queued, then too few replicas: the whole transaction is refused.
    c.cmd(&["SET", "xx", "1"]);
    c.multi(&[&["INCR", "xx"]]);
    other.cmd(&["CONFIG", "SET", "min-replicas-to-write", "2"]);
    match c.cmd(&["EXEC"]) {
        Reply::Error(e) => assert!(e.starts_with("EXECABORT") && e.contains("NOREPLICAS"), "{e}"),
        r => panic!("{r:?}"),
    }
    assert_eq!(c.cmd(&["GET", "xx"]), Reply::bulk("1"));
    other.cmd(&["CONFIG", "SET", "min-replicas-to-write", "0"]);
    // A REPLICAOF inside the transaction: its commands all run, and none reaches the
    // replicas (the server's writes are a replica's from then on).
    c.cmd(&["CONFIG", "SET", "repl-ping-replica-period", "3600"]);
    let mut repl = attach(s.port);
    c.cmd(&["SET", "foo", "bar"]);
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    c.multi(&[
        &["SET", "foo2", "bar"],
        &["REPLICAOF", "127.0.0.1", &dead.to_string()],
        &["SET", "foo3", "bar"],
    ]);
    match c.cmd(&["EXEC"]) {
        Reply::Array(v) => assert_eq!(v.len(), 3, "{v:?}"),
        r => panic!("{r:?}"),
    }
    assert!(matches!(c.cmd(&["SET", "foo4", "bar"]), Reply::Error(e) if e.starts_with("READONLY")));
    c.cmd(&["REPLICAOF", "NO", "ONE"]);
    // The promotion lets the replica go, as redis-server does (for it to ask again under the
    // new id; what it had not been sent yet it is sent then): nothing of the transaction
    // reached it.
    let sent = repl.until_closed();
    let before: Vec<Vec<String>> = [&["select", "0"][..], &["set", "foo", "bar"]]
        .iter()
        .map(|w| w.iter().map(|s| (*s).to_string()).collect())
        .collect();
    assert!(before.starts_with(&sent), "{sent:?}");
    // Writes queued on a master meet the replica it became at EXEC.
    c.multi(&[&["SET", "foo5", "bar"]]);
    other.cmd(&["REPLICAOF", "127.0.0.1", &dead.to_string()]);
    match c.cmd(&["EXEC"]) {
        Reply::Error(e) => assert!(e.starts_with("EXECABORT") && e.contains("READONLY"), "{e}"),
        r => panic!("{r:?}"),
    }
    c.cmd(&["REPLICAOF", "NO", "ONE"]);
    let mut repl = attach(s.port);
    c.cmd(&["SET", "end", "1"]);
    repl.expect(&[&["select", "0"], &["set", "end", "1"]]);
    assert_eq!(c.cmd(&["GET", "foo5"]), Reply::Null);
}

#[test]
fn one_ping_a_period_goes_to_all_replicas_and_a_new_period_counts_at_once() {
    let s = Server::start(&[]);
    let mut c = s.raw();
    let (mut a, mut b) = (attach(s.port), attach(s.port));
    // The default period (10 s) while they attached; the new one holds from the next round.
    c.cmd(&["CONFIG", "SET", "repl-ping-replica-period", "1"]);
    std::thread::sleep(Duration::from_millis(2500));
    c.cmd(&["SET", "k", "v"]);
    for r in [&mut a, &mut b] {
        let mut pings = 0;
        loop {
            let f = r.frame();
            if f[0].eq_ignore_ascii_case("ping") {
                pings += 1;
            } else if f[0].eq_ignore_ascii_case("set") {
                break;
            }
        }
        // Two or three rounds in 2.5 s: one PING each, not one per replica.
        assert!((1..=3).contains(&pings), "{pings} PINGs");
    }
}

#[test]
fn a_master_without_replicas_for_repl_backlog_ttl_frees_its_stream_and_a_replica_syncs_in_full() {
    let master = Server::start(&[]);
    let replica = Server::start(&[]);
    let (mut m, mut r) = (master.raw(), replica.raw());
    m.cmd(&["CONFIG", "SET", "repl-backlog-ttl", "1"]);
    r.cmd(&["CONFIG", "SET", "repl-backlog-ttl", "1"]);
    follow(&mut r, master.port);
    m.cmd(&["SET", "a", "1"]);
    key_reaches(&mut r, "0", "a", Reply::bulk("1"));
    // Followed for longer than the time to live: a replica's stream stays.
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(info_field(&mut m, "replication", "repl_backlog_active"), "1");
    assert_eq!(info_field(&mut r, "replication", "repl_backlog_active"), "1");
    let old = info_field(&mut m, "replication", "master_replid");
    let end = info_field(&mut m, "replication", "master_repl_offset");
    // Promoted, the replica would free its own stream a second later in turn (it then has
    // no replica): whether that came before it followed again was a race, and a freed
    // stream names no history. So it keeps its stream from here.
    r.cmd(&["CONFIG", "SET", "repl-backlog-ttl", "3600"]);
    assert_eq!(r.cmd(&["REPLICAOF", "NO", "ONE"]), Reply::Simple("OK".into()));
    // Alone for a second: the master frees it under a new id, its end kept.
    replication_reaches(&mut m, "repl_backlog_active", "0");
    assert_ne!(info_field(&mut m, "replication", "master_replid"), old);
    assert_eq!(info_field(&mut m, "replication", "master_replid2"), "0".repeat(40));
    assert_eq!(info_field(&mut m, "replication", "master_repl_offset"), end);
    m.cmd(&["SET", "b", "2"]);
    assert_eq!(info_field(&mut m, "replication", "master_repl_offset"), end, "in no stream");
    // The replica, back, asks to resume the master's old history: a full sync, then the
    // stream again.
    follow(&mut r, master.port);
    assert_eq!(info_field(&mut m, "stats", "sync_full"), "2");
    assert_eq!(info_field(&mut m, "stats", "sync_partial_ok"), "0");
    assert_eq!(info_field(&mut m, "stats", "sync_partial_err"), "1", "the PSYNC named one");
    key_reaches(&mut r, "0", "b", Reply::bulk("2"));
    m.cmd(&["SET", "c", "3"]);
    key_reaches(&mut r, "0", "c", Reply::bulk("3"));
    assert_eq!(info_field(&mut m, "replication", "repl_backlog_active"), "1");
}

#[test]
fn the_backlog_keeps_repl_backlog_size_bytes_for_a_replica_that_keeps_up() {
    let s = Server::start(&[]);
    let mut c = s.raw();
    c.cmd(&["CONFIG", "SET", "repl-backlog-size", "16kb"]);
    let mut repl = attach(s.port);
    let value = "v".repeat(1000);
    for i in 0..100 {
        c.cmd(&["SET", &format!("k{i}"), &value]);
    }
    // The replica reads everything: what stays is the last 16 KB, for a PSYNC.
    repl.expect(&[&["select", "0"]]);
    for i in 0..100 {
        let k = format!("k{i}");
        repl.expect(&[&["set", &k, "v*"]]);
    }
    // One more write, once the replica has read the others: the trim it makes keeps 16 KB.
    c.cmd(&["SET", "last", "1"]);
    let end: u64 = info_field(&mut c, "replication", "master_repl_offset").parse().unwrap();
    let held: u64 = info_field(&mut c, "replication", "repl_backlog_histlen").parse().unwrap();
    let first: u64 =
        info_field(&mut c, "replication", "repl_backlog_first_byte_offset").parse().unwrap();
    assert!(end > 100_000 && held == 16 * 1024, "end {end}, held {held}");
    assert_eq!(first + held, end + 1);
}

/// Each PEL entry `XPENDING key grp - + 100` lists on `c`: id, consumer, deliveries (the
/// idle times differ by when each server applied it).
fn pending(c: &mut Raw) -> Vec<(Reply, Reply, Reply)> {
    match c.cmd(&["XPENDING", "x", "grp", "-", "+", "100"]) {
        Reply::Array(v) => v
            .into_iter()
            .map(|e| match e {
                Reply::Array(f) if f.len() == 4 => (f[0].clone(), f[1].clone(), f[3].clone()),
                other => panic!("{other:?}"),
            })
            .collect(),
        other => panic!("{other:?}"),
    }
}

/// `c`'s group `grp` of `x`: its XINFO GROUPS entry and its consumers' names.
fn group_state(c: &mut Raw) -> (Reply, Vec<Reply>) {
    let groups = c.cmd(&["XINFO", "GROUPS", "x"]);
    let consumers = match c.cmd(&["XINFO", "CONSUMERS", "x", "grp"]) {
        Reply::Array(v) => v
            .into_iter()
            .map(|e| match e {
                Reply::Array(f) => f[1].clone(),
                other => panic!("{other:?}"),
            })
            .collect(),
        other => panic!("{other:?}"),
    };
    // The read counter and lag are left out: Redis's XCLAIM ... LASTID does not carry them.
    let groups = match groups {
        Reply::Array(g) => Reply::Array(
            g.into_iter()
                .map(|e| match e {
                    Reply::Array(f) => Reply::Array(f[..8].to_vec()),
                    other => other,
                })
                .collect(),
        ),
        other => other,
    };
    (groups, consumers)
}

#[test]
fn consumer_groups_reach_replicas_as_the_pel_changes_they_made() {
    // As Redis 7.0 (t_stream.c's propagation, and its "Replication tests of XCLAIM with
    // deleted entries"): each PEL entry given or dropped as an idempotent XCLAIM, a last id
    // moved alone as XGROUP SETID, a NOACK reader made as XGROUP CREATECONSUMER.
    let s = Server::start(&[]);
    let mut c = s.raw();
    c.cmd(&["CONFIG", "SET", "repl-ping-replica-period", "3600"]);
    let replica = Server::start(&[]);
    let mut r = replica.raw();
    r.cmd(&["REPLICAOF", "127.0.0.1", &s.port.to_string()]);
    let redis = redis_server();
    let mut rr = redis.as_ref().map(|p| Raw::connect(p.port));
    if let Some(rr) = rr.as_mut() {
        rr.cmd(&["REPLICAOF", "127.0.0.1", &s.port.to_string()]);
    } else {
        eprintln!("redis-server is not installed: a strata-server replica only");
    }
    let replicas = 1 + usize::from(rr.is_some());
    for c in std::iter::once(&mut r).chain(rr.as_mut()) {
        let until = Instant::now() + Duration::from_secs(10);
        while info_field(c, "replication", "master_link_status") != "up" {
            assert!(Instant::now() < until, "no link");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    let mut repl = attach(s.port);
    for i in 1..=5 {
        c.cmd(&["XADD", "x", &format!("{i}-0"), "f", "v"]);
    }
    c.cmd(&["XGROUP", "CREATE", "x", "grp", "0"]);
    let read = c.cmd(&["XREADGROUP", "GROUP", "grp", "Alice", "STREAMS", "x", ">"]);
    assert!(matches!(read, Reply::Array(_)), "{read:?}");
    c.cmd(&["XDEL", "x", "2-0", "4-0"]);
    // 1-0 and 3-0 go to Bob; 2-0 and 4-0, deleted, leave the PEL.
    let claimed = c.cmd(&["XCLAIM", "x", "grp", "Bob", "0", "1-0", "2-0", "3-0", "4-0", "JUSTID"]);
    assert_eq!(claimed, Reply::Array(vec![Reply::bulk("1-0"), Reply::bulk("3-0")]));
    // Carol takes what is idle from 3-0 on.
    let auto = c.cmd(&["XAUTOCLAIM", "x", "grp", "Carol", "0", "3-0", "JUSTID"]);
    assert!(matches!(&auto, Reply::Array(v) if v.len() == 3), "{auto:?}");
    // A NOACK reader, new: made, and the last id moved.
    c.cmd(&["XADD", "x", "6-0", "f", "v"]);
    c.cmd(&["XREADGROUP", "GROUP", "grp", "Dave", "NOACK", "STREAMS", "x", ">"]);
    // LASTID alone.
    c.cmd(&["XCLAIM", "x", "grp", "Eve", "0", "9-9", "LASTID", "7-0"]);
    // A history read counts its deliveries again (Redis 7.0 leaves its replicas' counts
    // behind); a read with nothing new has nothing to carry.
    c.cmd(&["XREADGROUP", "GROUP", "grp", "Carol", "STREAMS", "x", "0"]);
    c.cmd(&["XREADGROUP", "GROUP", "grp", "Alice", "STREAMS", "x", ">"]);
    c.cmd(&["SET", "end", "1"]);
    let claim = |who: &'static str, id: &'static str, n: &'static str, last: &'static str| {
        [
            "xclaim",
            "x",
            "grp",
            who,
            "0",
            id,
            "time",
            "1*",
            "retrycount",
            n,
            "force",
            "justid",
            "lastid",
            last,
        ]
    };
    repl.expect(&[
        &["select", "0"],
        &["xadd", "x", "1-0", "f", "v"],
        &["xadd", "x", "2-0", "f", "v"],
        &["xadd", "x", "3-0", "f", "v"],
        &["xadd", "x", "4-0", "f", "v"],
        &["xadd", "x", "5-0", "f", "v"],
        &["xgroup", "create", "x", "grp", "0"],
        &["multi"],
        &claim("Alice", "1-0", "1", "1-0"),
        &claim("Alice", "2-0", "1", "2-0"),
        &claim("Alice", "3-0", "1", "3-0"),
        &claim("Alice", "4-0", "1", "4-0"),
        &claim("Alice", "5-0", "1", "5-0"),
        &["exec"],
        &["xdel", "x", "2-0", "4-0"],
        &["multi"],
        &claim("Bob", "1-0", "1", "5-0"),
        &claim("Alice", "2-0", "1", "5-0"),
        &claim("Bob", "3-0", "1", "5-0"),
        &claim("Alice", "4-0", "1", "5-0"),
        &["exec"],
        &["multi"],
        &claim("Carol", "3-0", "1", "5-0"),
        &claim("Carol", "5-0", "1", "5-0"),
        &["exec"],
        &["xadd", "x", "6-0", "f", "v"],
        &["multi"],
        &["xgroup", "createconsumer", "x", "grp", "Dave"],
        &["xgroup", "setid", "x", "grp", "6-0", "entriesread", "*"],
        &["exec"],
        &["xgroup", "setid", "x", "grp", "7-0", "entriesread", "*"],
        &["multi"],
        &claim("Carol", "3-0", "2", "7-0"),
        &claim("Carol", "5-0", "2", "7-0"),
        &["exec"],
        &["set", "end", "1"],
    ]);
    // Both replicas hold the group as the master does.
    assert_eq!(c.cmd(&["WAIT", &replicas.to_string(), "10000"]), Reply::Int(replicas as i64));
    let (want_pel, want_group) = (pending(&mut c), group_state(&mut c));
    assert_eq!(want_pel.len(), 3, "{want_pel:?}");
    for rc in std::iter::once(&mut r).chain(rr.as_mut()) {
        assert_eq!(pending(rc), want_pel);
        assert_eq!(group_state(rc), want_group);
    }
}

#[test]
fn a_promoted_replica_keeps_its_masters_history_so_the_others_resume_from_it() {
    let top = Server::start(&[]);
    let (a, b, c) = (Server::start(&[]), Server::start(&[]), Server::start(&[]));
    let (mut t, mut ra, mut rb, mut rc) = (top.raw(), a.raw(), b.raw(), c.raw());
    // No PING in the top's stream during the test: every byte of it is one the test wrote.
    t.cmd(&["CONFIG", "SET", "repl-ping-replica-period", "3600"]);
    t.cmd(&["SET", "k0", "0"]);
    for (r, port) in [(&mut ra, top.port), (&mut rb, top.port)] {
        r.cmd(&["REPLICAOF", "127.0.0.1", &port.to_string()]);
        replication_reaches(r, "master_link_status", "up");
    }
    // The top's stream selects database 5 now, and its next commands there select nothing.
    t.cmd(&["SELECT", "5"]);
    t.cmd(&["SET", "k5", "5"]);
    key_reaches(&mut rb, "5", "k5", Reply::bulk("5"));
    // C follows B, a replica: B's file says its stream is in database 5 (repl-stream-db).
    rc.cmd(&["REPLICAOF", "127.0.0.1", &b.port.to_string()]);
    replication_reaches(&mut rc, "master_link_status", "up");
    t.cmd(&["INCR", "k5"]);
    key_reaches(&mut rc, "5", "k5", Reply::bulk("6"));
    key_reaches(&mut rc, "0", "k5", Reply::Null);
    // Every replica at the top's end; a replica's stream is the top's, id and offsets.
    let top_id = info_field(&mut t, "replication", "master_replid");
    let top_end = info_field(&mut t, "replication", "master_repl_offset");
    for r in [&mut ra, &mut rb, &mut rc] {
        replication_reaches(r, "master_repl_offset", &top_end);
        assert_eq!(info_field(r, "replication", "master_replid"), top_id);
    }
    // A is promoted: a new id, the top's kept as the second one up to its end.
    assert_eq!(ra.cmd(&["REPLICAOF", "NO", "ONE"]), Reply::Simple("OK".into()));
    assert_eq!(info_field(&mut ra, "replication", "master_replid2"), top_id);
    let second = (top_end.parse::<u64>().unwrap() + 1).to_string();
    assert_eq!(info_field(&mut ra, "replication", "second_repl_offset"), second);
    assert_ne!(info_field(&mut ra, "replication", "master_replid"), top_id);
    // B, then the old top, follow A and resume: no second full sync.
    rb.cmd(&["REPLICAOF", "127.0.0.1", &a.port.to_string()]);
    replication_reaches(&mut rb, "repl_partial_syncs", "1");
    replication_reaches(&mut rb, "master_link_status", "up");
    t.cmd(&["REPLICAOF", "127.0.0.1", &a.port.to_string()]);
    replication_reaches(&mut t, "repl_partial_syncs", "1");
    replication_reaches(&mut t, "master_link_status", "up");
    // (The counts are the link's: each REPLICAOF starts one.)
    assert_eq!(info_field(&mut rb, "replication", "repl_full_syncs"), "0");
    assert_eq!(info_field(&mut t, "replication", "repl_full_syncs"), "0");
    // C's master changed its id: C asked again and resumed too.
    replication_reaches(&mut rc, "repl_partial_syncs", "1");
    assert_eq!(info_field(&mut rc, "replication", "repl_full_syncs"), "1");
    let a_id = info_field(&mut ra, "replication", "master_replid");
    for r in [&mut rb, &mut rc, &mut t] {
        replication_reaches(r, "master_replid", &a_id);
    }
    // A's writes reach all three, in their databases.
    ra.cmd(&["SELECT", "5"]);
    ra.cmd(&["INCR", "k5"]);
    ra.cmd(&["SELECT", "0"]);
    ra.cmd(&["SET", "after", "promotion"]);
    for r in [&mut rb, &mut rc, &mut t] {
        key_reaches(r, "5", "k5", Reply::bulk("7"));
        key_reaches(r, "0", "after", Reply::bulk("promotion"));
        key_reaches(r, "0", "k0", Reply::bulk("0"));
    }
}
