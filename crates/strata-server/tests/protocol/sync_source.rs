//! SYNC and PSYNC for a client that asks for the RDB alone (`REPLCONF rdb-only 1`, as
//! `redis-cli --rdb` asks): the dataset as of one moment, read back with this crate's RDB
//! reader, and loaded by a real redis-server where one is installed.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::common::redis_peer::{contents, redis_server_loading};
use crate::common::{Raw, Reply, Server};
use strata_server::types::rdb::file::{FileReader, Record};
use strata_server::types::rdb::Value;

fn ok() -> Reply {
    Reply::Simple("OK".into())
}

/// What a transfer holds: each (database, key)'s value and expiry, and the function codes.
#[derive(Debug, Default)]
struct Rdb {
    keys: BTreeMap<(u64, Vec<u8>), (Value, Option<u64>)>,
    functions: Vec<Vec<u8>>,
}

/// Sends REPLCONF `options` (each answered OK) and then `sync` on a new connection; returns
/// the `+FULLRESYNC` line if one came, and the RDB's bytes. The server must close the
/// connection after the RDB.
fn transfer(port: u16, options: &[&[&str]], sync: &[&str]) -> (Option<String>, Vec<u8>) {
    let mut c = Raw::connect(port);
    for o in options {
        let mut line = vec!["REPLCONF"];
        line.extend_from_slice(o);
        assert_eq!(c.cmd(&line), ok(), "{line:?}");
    }
    let a: Vec<&[u8]> = sync.iter().map(|s| s.as_bytes()).collect();
    c.send_raw(&Raw::encode(&a));
    let mut s = c.stream;
    let mut byte = [0u8; 1];
    let mut line = Vec::new();
    let mut resync = None;
    let len = loop {
        s.read_exact(&mut byte).unwrap();
        match byte[0] {
            b'\n' if line.is_empty() => {}
            b'\n' => {
                let text = String::from_utf8(std::mem::take(&mut line)).unwrap();
                let text = text.trim_end_matches('\r').to_string();
                if let Some(n) = text.strip_prefix('$') {
                    break n.parse::<usize>().unwrap();
                }
                assert!(text.starts_with("+FULLRESYNC "), "{text}");
                resync = Some(text);
            }
            b => line.push(b),
        }
    };
    let mut rdb = vec![0u8; len];
    s.read_exact(&mut rdb).unwrap();
    let mut rest = Vec::new();
    s.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty(), "bytes after the RDB: {rest:?}");
    (resync, rdb)
}

fn read(rdb: &[u8]) -> Rdb {
    let mut r = FileReader::new(rdb, "transfer", Some(rdb.len() as u64)).unwrap();
    let mut out = Rdb::default();
    let mut db = 0;
    while let Some(rec) = r.next_record().unwrap() {
        match rec {
            Record::Db(d) => db = d,
            Record::Key { key, value, expire_ms, .. } => {
                assert!(out.keys.insert((db, key), (value, expire_ms)).is_none());
            }
            Record::Function(code) => out.functions.push(code),
            Record::Aux { .. } | Record::Sizes { .. } => {}
        }
    }
    out
}

fn sorted(mut v: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    v.sort();
    v
}

fn temp_files(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("temp-"))
        .collect()
}

const LIB: &str = "#!lua name=synclib\nredis.register_function('one', function() return 1 end)";

/// Every type, two databases, a key with an expiry and one whose time has passed.
fn populate(c: &mut Raw) {
    let fields: Vec<String> = (0..300).map(|i| format!("f{i}")).collect();
    let mut big = vec!["HSET", "bighash"];
    for f in &fields {
        big.extend_from_slice(&[f.as_str(), "v"]);
    }
    for cmd in [
        vec!["SET", "s", "hello"],
        vec!["SET", "n", "12345"],
        vec!["HSET", "h", "a", "1", "b", "2"],
        big,
        vec!["RPUSH", "l", "x", "y", "z"],
        vec!["SADD", "ints", "3", "1", "2"],
        vec!["SADD", "strs", "b", "a"],
        vec!["ZADD", "z", "1", "one", "2.5", "two"],
        vec!["XADD", "st", "1-1", "f", "v"],
        vec!["XGROUP", "CREATE", "st", "g", "0"],
        vec!["SET", "ttl", "v", "PX", "600000"],
        vec!["SET", "gone", "v", "PX", "1"],
        vec!["FUNCTION", "LOAD", LIB],
    ] {
        assert!(!matches!(c.cmd(&cmd), Reply::Error(_)), "{cmd:?}");
    }
    assert_eq!(c.cmd(&["SELECT", "5"]), ok());
    assert_eq!(c.cmd(&["SET", "in5", "five"]), ok());
    assert_eq!(c.cmd(&["SELECT", "0"]), ok());
    std::thread::sleep(Duration::from_millis(20));
}

#[test]
fn sync_sends_every_database_and_the_functions_then_closes() {
    let s = Server::start(&[]);
    let mut c = s.raw();
    populate(&mut c);
    let (resync, bytes) = transfer(s.port, &[&["capa", "eof"], &["rdb-only", "1"]], &["SYNC"]);
    assert_eq!(resync, None, "SYNC is answered with the RDB alone");
    let rdb = read(&bytes);
    let key = |db: u64, k: &str| rdb.keys.get(&(db, k.as_bytes().to_vec())).cloned();
    let v = |s: &str| s.as_bytes().to_vec();
    assert_eq!(key(0, "s"), Some((Value::String(v("hello")), None)));
    assert_eq!(key(0, "n"), Some((Value::String(v("12345")), None)));
    assert_eq!(key(0, "l"), Some((Value::List(vec![v("x"), v("y"), v("z")]), None)));
    match key(0, "ints") {
        Some((Value::Set(m), None)) => assert_eq!(sorted(m), vec![v("1"), v("2"), v("3")]),
        other => panic!("{other:?}"),
    }
    match key(0, "bighash") {
        Some((Value::Hash(pairs), None)) => assert_eq!(pairs.len(), 300),
        other => panic!("{other:?}"),
    }
    match key(0, "z") {
        Some((Value::ZSet(mut m), None)) => {
            m.sort_by(|a, b| a.1.total_cmp(&b.1));
            assert_eq!(m, vec![(v("one"), 1.0), (v("two"), 2.5)]);
        }
        other => panic!("{other:?}"),
    }
    match key(0, "st") {
        Some((Value::Stream(st), None)) => {
            assert_eq!(st.length, 1);
            assert_eq!(st.groups.len(), 1);
        }
        other => panic!("{other:?}"),
    }
    let ttl = key(0, "ttl").expect("the key with an expiry").1.expect("its expiry");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
    assert!(ttl > now.as_millis() as u64, "{ttl}");
    assert_eq!(key(0, "gone"), None, "a key whose time has passed is left out");
    assert_eq!(key(5, "in5"), Some((Value::String(v("five")), None)));
    assert_eq!(rdb.keys.len(), 11, "{:?}", rdb.keys.keys().collect::<Vec<_>>());
    assert_eq!(rdb.functions, vec![v(LIB)]);
    // The server goes on; the transfer's file is gone.
    assert_eq!(c.cmd(&["GET", "s"]), Reply::bulk("hello"));
    assert!(temp_files(&s.dir).is_empty(), "{:?}", temp_files(&s.dir));
}

#[test]
fn psync_answers_fullresync_and_filters_keep_functions_or_nothing() {
    let s = Server::start(&[]);
    let mut c = s.raw();
    populate(&mut c);
    let (resync, bytes) = transfer(s.port, &[&["rdb-only", "1"]], &["PSYNC", "?", "-1"]);
    assert_eq!(resync.as_deref(), Some(format!("+FULLRESYNC {} 0", "0".repeat(40)).as_str()));
    assert_eq!(read(&bytes).keys.len(), 11);
    // redis-cli --functions-rdb.
    let opts: &[&[&str]] =
        &[&["capa", "eof"], &["rdb-only", "1"], &["rdb-filter-only", "functions"]];
    let rdb = read(&transfer(s.port, opts, &["SYNC"]).1);
    assert!(rdb.keys.is_empty());
    assert_eq!(rdb.functions, vec![LIB.as_bytes().to_vec()]);
    // An empty filter: nothing.
    let opts: &[&[&str]] = &[&["capa", "eof"], &["rdb-only", "1"], &["rdb-filter-only", ""]];
    let rdb = read(&transfer(s.port, opts, &["SYNC"]).1);
    assert!(rdb.keys.is_empty() && rdb.functions.is_empty(), "{rdb:?}");
}

#[test]
fn what_replconf_and_sync_refuse_leaves_the_connection_usable() {
    let s = Server::start(&[]);
    let mut c = s.raw();
    let err = |r: Reply| match r {
        Reply::Error(e) => e,
        other => panic!("expected an error, got {other:?}"),
    };
    assert_eq!(err(c.cmd(&["REPLCONF", "capa"])), "ERR syntax error");
    assert_eq!(
        err(c.cmd(&["REPLCONF", "rdb-only", "2"])),
        "ERR value is out of range, must be between 0 and 1"
    );
    assert_eq!(
        err(c.cmd(&["REPLCONF", "listening-port", "x"])),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(
        err(c.cmd(&["REPLCONF", "color", "red"])),
        "ERR Unrecognized REPLCONF option: color"
    );
    assert_eq!(
        err(c.cmd(&["REPLCONF", "rdb-filter-only", "keys"])),
        "ERR Unsupported rdb-filter-only option: keys"
    );
    assert_eq!(
        err(c.cmd(&["REPLCONF", "rdb-filter-only", "\"functions"])),
        "ERR Missing rdb-filter-only values"
    );
    assert_eq!(c.cmd(&["REPLCONF", "rdb-only", "1", "rdb-filter-only", "functions"]), ok());
    assert_eq!(err(c.cmd(&["SYNC"])), "ERR Filtered replica requires EOF capability");
    assert_eq!(
        c.cmd(&["REPLCONF", "listening-port", "6380", "capa", "psync2", "capa", "eof"]),
        ok()
    );
    assert_eq!(err(c.cmd(&["PSYNC", "?", "soon"])), "ERR value is not an integer or out of range");
    assert_eq!(
        err(c.cmd(&["PSYNC", "abc", "1", "FAILOVER"])),
        "ERR PSYNC FAILOVER can't be sent to a master."
    );
    // ACK and GETACK get no reply: the next reply is PING's.
    c.send_raw(&Raw::encode(&[b"REPLCONF", b"ACK", b"10"]));
    c.send_raw(&Raw::encode(&[b"REPLCONF", b"GETACK", b"*"]));
    assert_eq!(c.cmd(&["PING"]), Reply::Simple("PONG".into()));
    assert_eq!(c.cmd(&["MULTI"]), ok());
    assert_eq!(err(c.cmd(&["SYNC"])), "ERR Command not allowed inside a transaction");
    assert!(err(c.cmd(&["EXEC"])).starts_with("EXECABORT"));
    let script = err(c.cmd(&["EVAL", "return redis.call('sync')", "0"]));
    assert!(script.contains("not allowed from script"), "{script}");
    assert_eq!(c.cmd(&["SET", "k", "v"]), ok());
}

/// One round of [`the_rdb_is_the_dataset_of_one_moment_while_writers_go_on`]: field `f`
/// of every hash `h<i>` set to `<r>:<padding>`, in order, by pipelined HSETs.
fn round(c: &mut Raw, keys: usize, per_batch: usize, r: u64) {
    let value = format!("{r}:{}", "p".repeat(100));
    let all: Vec<usize> = (0..keys).collect();
    for chunk in all.chunks(per_batch) {
        let mut lines = Vec::new();
        for i in chunk {
            let k = format!("h{i}");
            lines.extend(Raw::encode(&[b"HSET", k.as_bytes(), b"f", value.as_bytes()]));
        }
        c.send_raw(&lines);
        for _ in chunk {
            assert!(matches!(c.read(), Reply::Int(_)));
        }
    }
}

/// Hashes `h0..` (their fields stored apart from the key's record) rewritten in rounds, in
/// order, each round with its own value, while SYNC writes its RDB: the file must hold one
/// moment of that, i.e. hashes `h0..hj` at some round and the rest at the round before
/// (never a later hash newer than an earlier one). The RDB's walk visits the keys in their
/// stored order, not in the writer's, so fields read at the time of the visit would break
/// that as soon as a round ends during the walk.
#[test]
fn the_rdb_is_the_dataset_of_one_moment_while_writers_go_on() {
    const KEYS: usize = 20_000;
    const PER_BATCH: usize = 1_000;
    let s = Server::start(&["--hash-max-listpack-entries", "0"]);
    let mut c = s.raw();
    round(&mut c, KEYS, PER_BATCH, 0);
    let stop = Arc::new(AtomicBool::new(false));
    let rounds = Arc::new(AtomicU64::new(0));
    let writer = {
        let (stop, rounds, mut c) = (stop.clone(), rounds.clone(), s.raw());
        std::thread::spawn(move || {
            let mut r = 1;
            while !stop.load(Ordering::Relaxed) {
                round(&mut c, KEYS, PER_BATCH, r);
                rounds.store(r, Ordering::Relaxed);
                r += 1;
            }
        })
    };
    while rounds.load(Ordering::Relaxed) < 1 {
        std::thread::sleep(Duration::from_millis(5));
    }
    let before = rounds.load(Ordering::Relaxed);
    let bytes = transfer(s.port, &[&["rdb-only", "1"]], &["SYNC"]).1;
    let after = rounds.load(Ordering::Relaxed);
    // A reader that leaves in the middle of a transfer: the server goes on.
    let mut gone = Raw::connect(s.port);
    assert_eq!(gone.cmd(&["REPLCONF", "rdb-only", "1"]), ok());
    gone.stream.write_all(&Raw::encode(&[b"SYNC"])).unwrap();
    drop(gone);
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    let rdb = read(&bytes);
    assert_eq!(rdb.keys.len(), KEYS);
    let round_of = |i: usize| -> u64 {
        match &rdb.keys[&(0, format!("h{i}").into_bytes())].0 {
            Value::Hash(pairs) => {
                let v = String::from_utf8_lossy(&pairs[0].1);
                v.split(':').next().unwrap().parse().unwrap()
            }
            other => panic!("{other:?}"),
        }
    };
    let rounds_seen: Vec<u64> = (0..KEYS).map(round_of).collect();
    let (newest, oldest) = (rounds_seen[0], rounds_seen[KEYS - 1]);
    assert!(newest - oldest <= 1, "rounds {oldest}..{newest} in one file");
    assert!(
        rounds_seen.windows(2).all(|w| w[0] >= w[1]),
        "a later key newer than an earlier one: {:?}",
        rounds_seen.windows(2).position(|w| w[0] < w[1])
    );
    assert!(newest + 1 >= before && oldest <= after + 1, "{before}..{after}: {oldest}..{newest}");
    let mut c = s.raw();
    assert_eq!(c.cmd(&["PING"]), Reply::Simple("PONG".into()));
    let until = std::time::Instant::now() + Duration::from_secs(20);
    while !temp_files(&s.dir).is_empty() {
        assert!(std::time::Instant::now() < until, "{:?}", temp_files(&s.dir));
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn redis_server_loads_what_redis_cli_rdb_fetched() {
    let s = Server::start(&[]);
    let mut c = s.raw();
    populate(&mut c);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("fetched.rdb");
    let bytes = match Command::new("redis-cli")
        .args(["-p", &s.port.to_string(), "--rdb"])
        .arg(&file)
        .output()
    {
        Ok(o) => {
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            std::fs::read(&file).unwrap()
        }
        Err(_) => {
            eprintln!("redis-cli is not installed: fetched with this test's own client");
            transfer(s.port, &[&["capa", "eof"], &["rdb-only", "1"]], &["SYNC"]).1
        }
    };
    let Some(redis) = redis_server_loading(Some(&bytes)) else {
        eprintln!("skipped: redis-server is not installed (apt-get install -y redis-server)");
        return;
    };
    let mut r = Raw::connect(redis.port);
    let keys = ["s", "n", "h", "bighash", "l", "ints", "strs", "z", "st", "ttl", "gone"];
    assert_eq!(contents(&mut r, &keys), contents(&mut c, &keys));
    assert_eq!(r.cmd(&["DBSIZE"]), Reply::Int(10));
    assert_eq!(r.cmd(&["SELECT", "5"]), ok());
    assert_eq!(r.cmd(&["GET", "in5"]), Reply::bulk("five"));
    assert_eq!(r.cmd(&["FCALL", "one", "0"]), Reply::Int(1));
}

/// Each key's last use travels in the RDB as Redis writes it (IDLE under an LRU policy,
/// FREQ under an LFU one) and is taken back by a server that starts from that file.
#[test]
fn a_keys_last_use_travels_in_the_rdb_by_the_eviction_policy() {
    let s = Server::start(&[]);
    let mut c = s.raw();
    let payload = match c.cmd(&["DUMP", "nothing"]) {
        Reply::Null => {
            assert_eq!(c.cmd(&["SET", "src", "v"]), ok());
            match c.cmd(&["DUMP", "src"]) {
                Reply::Bulk(b) => b,
                other => panic!("{other:?}"),
            }
        }
        other => panic!("{other:?}"),
    };
    let restore = |c: &mut Raw, key: &str, how: &str, n: &str| {
        let line: Vec<&[u8]> =
            vec![b"RESTORE", key.as_bytes(), b"0", &payload, how.as_bytes(), n.as_bytes()];
        c.send_raw(&Raw::encode(&line));
        assert_eq!(c.read(), ok());
    };
    let used = |rdb: &[u8], key: &str| {
        let mut r = FileReader::new(rdb, "transfer", Some(rdb.len() as u64)).unwrap();
        while let Some(rec) = r.next_record().unwrap() {
            if let Record::Key { key: k, idle_secs, freq, .. } = rec {
                if k == key.as_bytes() {
                    return (idle_secs, freq);
                }
            }
        }
        panic!("{key} not in the file");
    };
    // No eviction policy: nothing recorded.
    restore(&mut c, "idle", "IDLETIME", "1000");
    let rdb = transfer(s.port, &[&["rdb-only", "1"]], &["SYNC"]).1;
    assert_eq!(used(&rdb, "idle"), (None, None));
    assert_eq!(c.cmd(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"]), ok());
    let rdb = transfer(s.port, &[&["rdb-only", "1"]], &["SYNC"]).1;
    let (idle, freq) = used(&rdb, "idle");
    assert!(idle.is_some_and(|s| (1000..1100).contains(&s)), "{idle:?}");
    assert_eq!(freq, None);
    // A server that starts from that file under an LRU policy keeps the idle time.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("dump.rdb"), &rdb).unwrap();
    let conf = dir.path().join("lru.conf");
    std::fs::write(&conf, "maxmemory-policy allkeys-lru\n").unwrap();
    let b = Server::start_in(dir.path(), &[conf.to_str().unwrap()]);
    let mut bc = b.raw();
    match bc.cmd(&["OBJECT", "IDLETIME", "idle"]) {
        Reply::Int(n) => assert!((1000..1100).contains(&n), "{n}"),
        other => panic!("{other:?}"),
    }
    // Under an LFU policy: the counter.
    assert_eq!(c.cmd(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lfu"]), ok());
    restore(&mut c, "hot", "FREQ", "77");
    let rdb = transfer(s.port, &[&["rdb-only", "1"]], &["SYNC"]).1;
    assert_eq!(used(&rdb, "hot"), (None, Some(77)));
}
