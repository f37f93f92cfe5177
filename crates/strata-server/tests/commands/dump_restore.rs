//! DUMP and RESTORE, FUNCTION DUMP and FUNCTION RESTORE through a running server: every type
//! round trips, RESTORE's options and Redis's errors in Redis's order, TTLs, blocked clients
//! served by a RESTORE, a restart, and payloads moving to and from a real redis-server when
//! one is installed.

use crate::common::{wait_blocked, Raw, Reply, Server};
use std::time::Duration;

fn call(c: &mut Raw, args: &[&[u8]]) -> Reply {
    c.send_raw(&Raw::encode(args));
    c.read()
}

fn dump(c: &mut Raw, key: &str) -> Vec<u8> {
    match c.cmd(&["DUMP", key]) {
        Reply::Bulk(b) => b,
        other => panic!("DUMP {key}: {other:?}"),
    }
}

fn err(r: Reply) -> String {
    match r {
        Reply::Error(e) => e,
        other => panic!("expected an error, got {other:?}"),
    }
}

/// Redis's CRC-64 (Jones), to make payloads with a good checksum and a bad body.
fn crc64(b: &[u8]) -> u64 {
    let mut crc = 0u64;
    for &x in b {
        crc ^= u64::from(x);
        for _ in 0..8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ 0x95ac_9329_ac4b_c9b5 } else { crc >> 1 };
        }
    }
    crc
}

fn seal(mut body: Vec<u8>, version: u16) -> Vec<u8> {
    body.extend_from_slice(&version.to_le_bytes());
    let crc = crc64(&body);
    body.extend_from_slice(&crc.to_le_bytes());
    body
}

/// What a key holds, as one comparable reply (sets and hashes sorted).
fn reading(c: &mut Raw, key: &str) -> Reply {
    let ty = match c.cmd(&["TYPE", key]) {
        Reply::Simple(t) => t,
        other => panic!("{other:?}"),
    };
    let sorted = |r: Reply| match r {
        Reply::Array(mut v) => {
            v.sort_by_key(|x| format!("{x:?}"));
            Reply::Array(v)
        }
        other => other,
    };
    let pairs = |r: Reply| match r {
        Reply::Array(v) => {
            let mut p: Vec<Reply> = v.chunks(2).map(|c| Reply::Array(c.to_vec())).collect();
            p.sort_by_key(|x| format!("{x:?}"));
            Reply::Array(p)
        }
        other => other,
    };
    let body = match ty.as_str() {
        "string" => c.cmd(&["GET", key]),
        "list" => c.cmd(&["LRANGE", key, "0", "-1"]),
        "set" => sorted(c.cmd(&["SMEMBERS", key])),
        "zset" => c.cmd(&["ZRANGE", key, "0", "-1", "WITHSCORES"]),
        "hash" => pairs(c.cmd(&["HGETALL", key])),
        "stream" => Reply::Array(vec![
            c.cmd(&["XRANGE", key, "-", "+"]),
            c.cmd(&["XINFO", "GROUPS", key]),
            // The summary: the extended form's idle times move while the test runs.
            c.cmd(&["XPENDING", key, "g1"]),
            c.cmd(&["XLEN", key]),
        ]),
        other => panic!("type {other}"),
    };
    Reply::Array(vec![Reply::Simple(ty), body])
}

/// Values of every type and encoding, built with commands on `c`.
fn build_values(c: &mut Raw) -> Vec<&'static str> {
    let big = "v".repeat(300);
    let mut cmds: Vec<Vec<String>> = vec![
        vec!["SET".into(), "str".into(), "hello".into()],
        vec!["SET".into(), "int".into(), "-12345".into()],
        vec!["SET".into(), "long".into(), "abc".repeat(1000)],
        vec!["RPUSH".into(), "list".into(), "a".into(), "1".into(), big.clone(), "-70000".into()],
        vec!["SADD".into(), "intset".into(), "1".into(), "-2".into(), "70000".into()],
        vec!["SADD".into(), "set".into(), "a".into(), "b".into(), "3".into()],
        vec![
            "ZADD".into(),
            "zset".into(),
            "1".into(),
            "a".into(),
            "2.5".into(),
            "b".into(),
            "-inf".into(),
            "c".into(),
        ],
        vec!["HSET".into(), "hash".into(), "f".into(), "v".into(), "n".into(), "5".into()],
        vec!["HSET".into(), "bighash".into(), "f".into(), big],
        vec!["XADD".into(), "stream".into(), "1-1".into(), "a".into(), "1".into()],
        vec![
            "XADD".into(),
            "stream".into(),
            "1-2".into(),
            "a".into(),
            "2".into(),
            "b".into(),
            "3".into(),
        ],
        vec!["XADD".into(), "stream".into(), "2-0".into(), "a".into(), "4".into()],
        vec!["XDEL".into(), "stream".into(), "1-2".into()],
        vec!["XGROUP".into(), "CREATE".into(), "stream".into(), "g1".into(), "0".into()],
        vec![
            "XREADGROUP".into(),
            "GROUP".into(),
            "g1".into(),
            "alice".into(),
            "COUNT".into(),
            "1".into(),
            "STREAMS".into(),
            "stream".into(),
            ">".into(),
        ],
    ];
    for i in 0..2000 {
        cmds.push(vec!["RPUSH".into(), "biglist".into(), format!("element-{i}")]);
    }
    for i in 0..300 {
        cmds.push(vec!["ZADD".into(), "bigzset".into(), i.to_string(), format!("m{i}")]);
        cmds.push(vec!["SADD".into(), "bigset".into(), format!("m{i}")]);
    }
    for cmd in &cmds {
        let a: Vec<&str> = cmd.iter().map(String::as_str).collect();
        assert!(!matches!(c.cmd(&a), Reply::Error(_)), "{a:?}");
    }
    vec![
        "str", "int", "long", "list", "biglist", "intset", "set", "bigset", "zset", "bigzset",
        "hash", "bighash", "stream",
    ]
}

#[test]
fn every_type_round_trips() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    for key in build_values(&mut c) {
        let payload = dump(&mut c, key);
        let copy = format!("copy-{key}");
        let r = call(&mut c, &[b"RESTORE", copy.as_bytes(), b"0", &payload]);
        assert_eq!(r, Reply::Simple("OK".into()), "{key}");
        assert_eq!(reading(&mut c, &copy), reading(&mut c, key), "{key}");
        assert_eq!(c.cmd(&["PTTL", &copy]), Reply::Int(-1));
        // The copy dumps to the same value again.
        let again = dump(&mut c, &copy);
        let third = format!("third-{key}");
        assert_eq!(
            call(&mut c, &[b"RESTORE", third.as_bytes(), b"0", &again]),
            Reply::Simple("OK".into())
        );
        assert_eq!(reading(&mut c, &third), reading(&mut c, key), "{key}");
    }
    assert_eq!(c.cmd(&["DUMP", "missing"]), Reply::Null);
}

#[test]
fn restore_checks_as_redis_does() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    c.cmd(&["SET", "k", "v"]);
    let p = dump(&mut c, "k");
    let restore = |c: &mut Raw, args: &[&[u8]]| {
        let mut a: Vec<&[u8]> = vec![b"RESTORE"];
        a.extend_from_slice(args);
        call(c, &a)
    };
    // Options first, then the key, then the TTL, then the payload.
    assert_eq!(err(restore(&mut c, &[b"k", b"x", b"bad", b"nope"])), "ERR syntax error");
    assert_eq!(
        err(restore(&mut c, &[b"k", b"x", b"bad"])),
        "BUSYKEY Target key name already exists."
    );
    assert_eq!(
        err(restore(&mut c, &[b"n", b"x", b"bad"])),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(err(restore(&mut c, &[b"n", b"-1", b"bad"])), "ERR Invalid TTL value, must be >= 0");
    assert_eq!(
        err(restore(&mut c, &[b"n", b"0", b"bad"])),
        "ERR DUMP payload version or checksum are wrong"
    );
    let mut flipped = p.clone();
    flipped[2] ^= 1;
    assert_eq!(
        err(restore(&mut c, &[b"n", b"0", &flipped])),
        "ERR DUMP payload version or checksum are wrong"
    );
    let newer = seal(p[..p.len() - 10].to_vec(), 11);
    assert_eq!(
        err(restore(&mut c, &[b"n", b"0", &newer])),
        "ERR DUMP payload version or checksum are wrong"
    );
    // A good checksum over a bad body, a module value, an empty list.
    for body in [vec![0u8, 0x05, b'x'], vec![7, 0x81, 1, 2, 3, 4, 5, 6, 7, 8], vec![1, 0], vec![42]]
    {
        assert_eq!(err(restore(&mut c, &[b"n", b"0", &seal(body, 10)])), "ERR Bad data format");
    }
    assert_eq!(c.cmd(&["EXISTS", "n"]), Reply::Int(0));
    assert_eq!(
        err(restore(&mut c, &[b"n", b"0", &p, b"IDLETIME", b"-1"])),
        "ERR Invalid IDLETIME value, must be >= 0"
    );
    assert_eq!(
        err(restore(&mut c, &[b"n", b"0", &p, b"FREQ", b"256"])),
        "ERR Invalid FREQ value, must be >= 0 and <= 255"
    );
    assert_eq!(
        err(restore(&mut c, &[b"n", b"0", &p, b"FREQ", b"1", b"IDLETIME", b"1"])),
        "ERR syntax error"
    );
    assert_eq!(err(restore(&mut c, &[b"n", b"0", &p, b"IDLETIME"])), "ERR syntax error");
    assert_eq!(restore(&mut c, &[b"n", b"0", &p, b"IDLETIME", b"100"]), Reply::Simple("OK".into()));
    assert_eq!(
        restore(&mut c, &[b"n", b"0", &p, b"replace", b"FREQ", b"5"]),
        Reply::Simple("OK".into())
    );
    // REPLACE over another type.
    c.cmd(&["RPUSH", "l", "a"]);
    assert_eq!(restore(&mut c, &[b"l", b"0", &p, b"REPLACE"]), Reply::Simple("OK".into()));
    assert_eq!(c.cmd(&["GET", "l"]), Reply::bulk("v"));
    assert_eq!(
        err(c.cmd(&["RESTORE", "k", "0"])),
        "ERR wrong number of arguments for 'restore' command"
    );
}

#[test]
fn restore_sets_and_refuses_expiry_as_redis_does() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    c.cmd(&["SET", "k", "v"]);
    let p = dump(&mut c, "k");
    assert_eq!(call(&mut c, &[b"RESTORE", b"rel", b"5000", &p]), Reply::Simple("OK".into()));
    let Reply::Int(ttl) = c.cmd(&["PTTL", "rel"]) else { panic!() };
    assert!((3000..=5000).contains(&ttl), "{ttl}");
    // Past 32 bits.
    assert_eq!(call(&mut c, &[b"RESTORE", b"far", b"2569591501", &p]), Reply::Simple("OK".into()));
    let Reply::Int(ttl) = c.cmd(&["PTTL", "far"]) else { panic!() };
    assert!(ttl > 2_569_591_501 - 3000, "{ttl}");
    let now =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis()
            as u64;
    let at = (now + 3000).to_string();
    assert_eq!(
        call(&mut c, &[b"RESTORE", b"abs", at.as_bytes(), &p, b"ABSTTL"]),
        Reply::Simple("OK".into())
    );
    assert_eq!(c.cmd(&["PEXPIRETIME", "abs"]), Reply::Int(now as i64 + 3000));
    // A time already past: the key replaced is deleted, none is made.
    let past = (now - 3000).to_string();
    assert_eq!(
        call(&mut c, &[b"RESTORE", b"abs", past.as_bytes(), &p, b"ABSTTL", b"REPLACE"]),
        Reply::Simple("OK".into())
    );
    assert_eq!(c.cmd(&["EXISTS", "abs"]), Reply::Int(0));
    assert_eq!(
        call(&mut c, &[b"RESTORE", b"new", past.as_bytes(), &p, b"ABSTTL"]),
        Reply::Simple("OK".into())
    );
    assert_eq!(c.cmd(&["EXISTS", "new"]), Reply::Int(0));
    // A TTL on the dumped key is not part of the payload.
    c.cmd(&["PEXPIRE", "k", "100000"]);
    let p2 = dump(&mut c, "k");
    assert_eq!(p2, p);
}

#[test]
fn a_restore_serves_a_blocked_client_and_survives_a_restart() {
    let mut srv = Server::start(&[]);
    let dir = srv.keep_dir();
    let mut c = srv.raw();
    c.cmd(&["RPUSH", "src", "x", "y"]);
    let p = dump(&mut c, "src");
    let mut blocked = srv.raw();
    blocked.send_raw(&Raw::encode(&[b"BLPOP", b"dst", b"10"]));
    wait_blocked(&mut c, 1);
    assert_eq!(call(&mut c, &[b"RESTORE", b"dst", b"0", &p]), Reply::Simple("OK".into()));
    assert_eq!(blocked.read(), Reply::Array(vec![Reply::bulk("dst"), Reply::bulk("x")]));
    assert_eq!(c.cmd(&["LRANGE", "dst", "0", "-1"]), Reply::Array(vec![Reply::bulk("y")]));
    srv.stop();
    let srv = Server::start_in(dir.path(), &[]);
    let mut c = srv.raw();
    assert_eq!(c.cmd(&["LRANGE", "dst", "0", "-1"]), Reply::Array(vec![Reply::bulk("y")]));
}

fn fcall(c: &mut Raw, f: &str) -> Reply {
    c.cmd(&["FCALL", f, "0"])
}

#[test]
fn function_dump_and_restore_follow_their_policies() {
    let mut srv = Server::start(&[]);
    let dir = srv.keep_dir();
    let mut c = srv.raw();
    let lib = |name: &str, f: &str, v: i64| {
        format!("#!lua name={name}\nredis.register_function('{f}', function() return {v} end)")
    };
    assert_eq!(c.cmd(&["FUNCTION", "LOAD", &lib("l1", "f1", 1)]), Reply::bulk("l1"));
    assert_eq!(c.cmd(&["FUNCTION", "LOAD", &lib("l2", "f2", 2)]), Reply::bulk("l2"));
    let Reply::Bulk(p) = c.cmd(&["FUNCTION", "DUMP"]) else { panic!() };
    let restore = |c: &mut Raw, extra: &[&[u8]]| {
        let mut a: Vec<&[u8]> = vec![b"FUNCTION", b"RESTORE", &p];
        a.extend_from_slice(extra);
        call(c, &a)
    };
    // APPEND (the default) refuses a library already there, and changes nothing.
    assert_eq!(err(restore(&mut c, &[])), "ERR Library l1 already exists");
    assert_eq!(err(restore(&mut c, &[b"APPEND"])), "ERR Library l1 already exists");
    c.cmd(&["FUNCTION", "FLUSH"]);
    assert_eq!(restore(&mut c, &[]), Reply::Simple("OK".into()));
    assert_eq!((fcall(&mut c, "f1"), fcall(&mut c, "f2")), (Reply::Int(1), Reply::Int(2)));
    // REPLACE swaps same-named libraries; a function of another library stops it whole.
    c.cmd(&["FUNCTION", "LOAD", "REPLACE", &lib("l1", "f1", 10)]);
    assert_eq!(restore(&mut c, &[b"replace"]), Reply::Simple("OK".into()));
    assert_eq!(fcall(&mut c, "f1"), Reply::Int(1));
    c.cmd(&["FUNCTION", "DELETE", "l2"]);
    c.cmd(&["FUNCTION", "LOAD", &lib("l3", "f2", 30)]);
    assert_eq!(err(restore(&mut c, &[b"REPLACE"])), "ERR Function f2 already exists");
    assert_eq!((fcall(&mut c, "f1"), fcall(&mut c, "f2")), (Reply::Int(1), Reply::Int(30)));
    // FLUSH drops the others first.
    assert_eq!(restore(&mut c, &[b"FLUSH"]), Reply::Simple("OK".into()));
    assert_eq!(fcall(&mut c, "f2"), Reply::Int(2));
    assert_eq!(
        err(restore(&mut c, &[b"nope"])),
        "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE."
    );
    assert_eq!(
        err(c.cmd(&["FUNCTION", "RESTORE", "a", "b", "c"])),
        "ERR unknown subcommand or wrong number of arguments for 'RESTORE'. Try FUNCTION HELP."
    );
    assert_eq!(
        err(c.cmd(&["FUNCTION", "RESTORE", "bad_payload"])),
        "ERR DUMP payload version or checksum are wrong"
    );
    assert_eq!(
        err(call(&mut c, &[b"FUNCTION", b"RESTORE", &seal(vec![0, 0], 10)])),
        "ERR given type is not a function"
    );
    assert_eq!(
        err(c.cmd(&["FUNCTION", "DUMP", "x"])),
        "ERR wrong number of arguments for 'function|dump' command"
    );
    // What RESTORE loaded is kept across a restart.
    srv.stop();
    let srv = Server::start_in(dir.path(), &[]);
    let mut c = srv.raw();
    assert_eq!((fcall(&mut c, "f1"), fcall(&mut c, "f2")), (Reply::Int(1), Reply::Int(2)));
    let Reply::Array(libs) = c.cmd(&["FUNCTION", "LIST"]) else { panic!() };
    assert_eq!(libs.len(), 2);
}

/// A redis-server of this machine on a free port, if one is installed.
struct RedisServer {
    child: std::process::Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl RedisServer {
    fn start() -> Option<RedisServer> {
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = std::process::Command::new("redis-server")
            .args(["--port", &port.to_string(), "--save", "", "--appendonly", "no", "--dir"])
            .arg(dir.path())
            .stdout(std::process::Stdio::null())
            .spawn()
            .ok()?;
        for _ in 0..100 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Some(RedisServer { child, port, _dir: dir });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Payloads made here restore into redis-server 7.0 and its payloads restore here, both
/// read the same. Skipped (with a note) where no `redis-server` is installed.
#[test]
fn payloads_move_between_this_server_and_redis_server() {
    let Some(redis) = RedisServer::start() else {
        eprintln!("skipped: no redis-server on this machine");
        return;
    };
    let srv = Server::start(&[]);
    let mut ours = srv.raw();
    let mut theirs = Raw::connect(redis.port);
    let version = match theirs.cmd(&["INFO", "server"]) {
        Reply::Bulk(b) => String::from_utf8(b).unwrap(),
        other => panic!("{other:?}"),
    };
    if !version.contains("redis_version:7.0.") {
        eprintln!("skipped: the redis-server installed is not 7.0");
        return;
    }
    let keys = build_values(&mut ours);
    assert_eq!(build_values(&mut theirs), keys);
    for key in keys {
        for forward in [true, false] {
            let (from, to, dir) = if forward {
                (&mut ours, &mut theirs, "here->redis")
            } else {
                (&mut theirs, &mut ours, "redis->here")
            };
            let p = dump(from, key);
            let copy = format!("copy-{key}");
            assert_eq!(
                call(to, &[b"RESTORE", copy.as_bytes(), b"0", &p]),
                Reply::Simple("OK".into()),
                "{dir} {key}"
            );
            assert_eq!(reading(to, &copy), reading(from, key), "{dir} {key}");
        }
    }
}
