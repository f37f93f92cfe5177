//! Keyspace notifications (`notify-keyspace-events`), as redis-server 7.0.15 publishes them:
//! each class flag enables only its events, `K` and `E` choose the channels, writes that
//! change nothing publish nothing, the event names and their order for each command, `new`,
//! `expired` from the expiry task and on access, RESP3 push frames, events after EXEC and a
//! served blocked pop, CONFIG SET's checks and CONFIG GET's order, the startup flag, and in
//! cluster mode events from the node that served the write only.

use crate::common::{wait_blocked, Raw, Reply, Server};
use std::io::{Read, Write};
use std::time::{Duration, Instant};

fn send(c: &mut Raw, args: &[&str]) {
    let a: Vec<&[u8]> = args.iter().map(|s| s.as_bytes()).collect();
    c.send_raw(&Raw::encode(&a));
}

fn text(r: &Reply) -> String {
    match r {
        Reply::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
        other => panic!("expected a bulk string, got {other:?}"),
    }
}

fn ok() -> Reply {
    Reply::Simple("OK".into())
}

fn set_events(c: &mut Raw, flags: &str) {
    assert_eq!(c.cmd(&["CONFIG", "SET", "notify-keyspace-events", flags]), ok());
}

/// A connection subscribed to every channel by pattern.
fn subscriber(srv: &Server) -> Raw {
    let mut s = srv.raw();
    send(&mut s, &["PSUBSCRIBE", "*"]);
    let confirm = s.read();
    assert_eq!(
        confirm,
        Reply::Array(vec![Reply::bulk("psubscribe"), Reply::bulk("*"), Reply::Int(1)])
    );
    s
}

/// One message `sub` got: (channel, message).
fn message(sub: &mut Raw) -> (String, String) {
    match sub.read() {
        Reply::Array(v) if v.len() == 4 && v[0] == Reply::bulk("pmessage") => {
            (text(&v[2]), text(&v[3]))
        }
        other => panic!("expected a pmessage, got {other:?}"),
    }
}

/// Every message published since the last call: `r` publishes a mark after them (events
/// are published before the reply of the command that raised them), read up to it.
fn drain(r: &mut Raw, sub: &mut Raw) -> Vec<(String, String)> {
    assert_eq!(r.cmd(&["PUBLISH", "mark", "-"]), Reply::Int(1));
    let mut got = Vec::new();
    loop {
        let m = message(sub);
        if m.0 == "mark" {
            return got;
        }
        got.push(m);
    }
}

/// The events of `drain` as "event key" (keyevent channels only).
fn keyevents(r: &mut Raw, sub: &mut Raw) -> Vec<String> {
    drain(r, sub)
        .into_iter()
        .filter_map(|(ch, msg)| ch.strip_prefix("__keyevent@0__:").map(|e| format!("{e} {msg}")))
        .collect()
}

fn run_line(r: &mut Raw, line: &str) -> Reply {
    let args: Vec<&str> = line.split_whitespace().collect();
    r.cmd(&args)
}

#[test]
fn each_class_flag_enables_only_its_events() {
    let srv = Server::start(&[]);
    let mut r = srv.raw();
    let mut sub = subscriber(&srv);
    // One write per class, and the events of each class.
    let workload = |r: &mut Raw| {
        r.cmd(&["SET", "g", "v"]);
        r.cmd(&["EXPIRE", "g", "100"]);
        r.cmd(&["LPUSH", "l", "a"]);
        r.cmd(&["SADD", "s", "a"]);
        r.cmd(&["HSET", "h", "f", "v"]);
        r.cmd(&["ZADD", "z", "1", "a"]);
        r.cmd(&["XADD", "x", "1-1", "f", "v"]);
        r.cmd(&["SET", "gone", "v", "PX", "1"]);
        std::thread::sleep(Duration::from_millis(20));
        r.cmd(&["GET", "gone"]);
    };
    let class = |c: char| -> Vec<&str> {
        match c {
            // SET's PX is an `expire` too.
            'g' => vec!["expire g", "expire gone"],
            '$' => vec!["set g", "set gone"],
            'l' => vec!["lpush l"],
            's' => vec!["sadd s"],
            'h' => vec!["hset h"],
            'z' => vec!["zadd z"],
            't' => vec!["xadd x"],
            'x' => vec!["expired gone"],
            'n' => vec!["new g", "new l", "new s", "new h", "new z", "new x", "new gone"],
            // Evictions, key misses and module events do not happen here.
            _ => vec![],
        }
    };
    for c in ['g', '$', 'l', 's', 'h', 'z', 't', 'x', 'n', 'e', 'm', 'd'] {
        set_events(&mut r, "");
        r.cmd(&["FLUSHALL"]);
        set_events(&mut r, &format!("E{c}"));
        workload(&mut r);
        let got = keyevents(&mut r, &mut sub);
        // `expired` may come from the expiry task before the GET: the same events.
        assert_eq!(got, class(c), "class {c}");
    }
    // A: every class but n (and m).
    set_events(&mut r, "");
    r.cmd(&["FLUSHALL"]);
    set_events(&mut r, "EA");
    workload(&mut r);
    let got = keyevents(&mut r, &mut sub);
    let want = [
        "set g",
        "expire g",
        "lpush l",
        "sadd s",
        "hset h",
        "zadd z",
        "xadd x",
        "set gone",
        "expire gone",
        "expired gone",
    ];
    assert_eq!(got, want);
}

#[test]
fn k_and_e_choose_the_channels() {
    let srv = Server::start(&[]);
    let mut r = srv.raw();
    let mut sub = subscriber(&srv);
    let keyspace = ("__keyspace@0__:k".to_string(), "set".to_string());
    let keyevent = ("__keyevent@0__:set".to_string(), "k".to_string());
    for (flags, want) in [
        ("K$", vec![keyspace.clone()]),
        ("E$", vec![keyevent.clone()]),
        ("KE$", vec![keyspace.clone(), keyevent.clone()]),
        // A class with neither channel kind publishes nothing.
        ("$", vec![]),
        ("KE", vec![]),
        ("", vec![]),
    ] {
        set_events(&mut r, flags);
        assert_eq!(r.cmd(&["SET", "k", "v"]), ok());
        assert_eq!(drain(&mut r, &mut sub), want, "flags {flags:?}");
    }
    // A pattern subscriber of the keyspace channels only.
    set_events(&mut r, "KEA");
    let mut only = srv.raw();
    send(&mut only, &["PSUBSCRIBE", "__keyspace@*"]);
    only.read();
    let mut chan = srv.raw();
    send(&mut chan, &["SUBSCRIBE", "__keyevent@0__:del"]);
    chan.read();
    r.cmd(&["DEL", "k"]);
    r.cmd(&["PUBLISH", "__keyspace@0__:end", "-"]);
    r.cmd(&["PUBLISH", "__keyevent@0__:del", "end"]);
    assert_eq!(
        only.read(),
        Reply::Array(
            ["pmessage", "__keyspace@*", "__keyspace@0__:k", "del"].map(Reply::bulk).to_vec()
        )
    );
    assert_eq!(
        only.read(),
        Reply::Array(
            ["pmessage", "__keyspace@*", "__keyspace@0__:end", "-"].map(Reply::bulk).to_vec()
        )
    );
    assert_eq!(
        chan.read(),
        Reply::Array(["message", "__keyevent@0__:del", "k"].map(Reply::bulk).to_vec())
    );
    assert_eq!(
        chan.read(),
        Reply::Array(["message", "__keyevent@0__:del", "end"].map(Reply::bulk).to_vec())
    );
}

#[test]
fn writes_that_change_nothing_publish_nothing() {
    let srv = Server::start(&[]);
    let mut r = srv.raw();
    let mut sub = subscriber(&srv);
    for line in [
        "SET s v",
        "HSET h f v",
        "SADD set a b",
        "ZADD z 1 a",
        "RPUSH l a b",
        "SET t v",
        "XADD x 1-1 f v",
        "XGROUP CREATE x g $",
        "XGROUP CREATECONSUMER x g c",
        "SETBIT bits 3 1",
    ] {
        run_line(&mut r, line);
    }
    set_events(&mut r, "KEAn");
    for line in [
        "DEL missing",
        "UNLINK missing other",
        "HDEL h nofield",
        "HDEL missing f",
        "SREM set nomember",
        "SADD set a",
        "SMOVE set set2 nomember",
        "SPOP set 0",
        "ZREM z nomember",
        "ZADD z 1 a",
        "ZADD z NX 5 a",
        "ZADD z XX 1 nomember",
        "ZINCRBY z 0 a",
        "ZREMRANGEBYSCORE z 10 20",
        "ZPOPMIN z 0",
        "EXPIRE missing 100",
        "EXPIRE s 100 XX",
        "PERSIST s",
        "PERSIST missing",
        "LREM l 0 nomember",
        "LINSERT l BEFORE nopivot x",
        "LPUSHX missing a",
        "LPOP l 0",
        "LPOP missing",
        "SET s v NX",
        "SET missing v XX",
        "MSETNX s 1 u 2",
        "RENAMENX s t",
        "COPY s t",
        "COPY missing t",
        "GETDEL missing",
        "GETEX s",
        "SETBIT bits 3 1",
        "BITFIELD bits GET u8 0",
        "XDEL x 9-9",
        "XTRIM x MAXLEN 10",
        "XADD missing NOMKSTREAM 1-1 f v",
        "XGROUP CREATECONSUMER x g c",
        "XGROUP DELCONSUMER x g nobody",
        "XGROUP DESTROY x nogroup",
        "XACK x g 1-1",
        "SINTERSTORE missing2 missing set",
        "SORT missing STORE missing3",
        "ZUNIONSTORE missing4 1 missing",
        "BITOP AND missing5 missing",
    ] {
        run_line(&mut r, line);
        assert_eq!(drain(&mut r, &mut sub), vec![], "{line}");
    }
    // An empty SETRANGE writes nothing, on a key or not.
    for key in ["s", "missing"] {
        assert!(matches!(r.cmd(&["SETRANGE", key, "0", ""]), Reply::Int(_)));
        assert_eq!(drain(&mut r, &mut sub), vec![], "SETRANGE {key}");
    }
}

/// The keyevents of one command after its setup, as redis-server 7.0.15 publishes them
/// (flags `EAn`).
#[test]
fn each_command_raises_redis_events_in_redis_order() {
    let srv = Server::start(&[]);
    let mut r = srv.raw();
    let mut sub = subscriber(&srv);
    let cases: &[(&[&str], &str, &[&str])] = &[
        // strings
        (&[], "SET k v", &["new k", "set k"]),
        (&["SET k v"], "SET k v2 EX 100", &["set k", "expire k"]),
        (&["SET k v"], "SET k v KEEPTTL", &["set k"]),
        (&[], "SETEX k 100 v", &["new k", "set k", "expire k"]),
        (&["SET k v"], "PSETEX k 100000 v", &["set k", "expire k"]),
        (&[], "SETNX k v", &["new k", "set k"]),
        (&["SET k v"], "GETSET k w", &["set k"]),
        (&["SET k v"], "GETDEL k", &["del k"]),
        (&["SET k v"], "GETEX k EX 100", &["expire k"]),
        (&["SET k v EX 100"], "GETEX k PERSIST", &["persist k"]),
        (&["SET k v"], "GETEX k PXAT 1", &["del k"]),
        (&["SET a v"], "MSET a 1 b 2 a 3", &["set a", "new b", "set b", "set a"]),
        (&[], "MSETNX a 1 b 2", &["new a", "set a", "new b", "set b"]),
        (&[], "INCR i", &["new i", "incrby i"]),
        (&["SET i 1"], "DECRBY i 5", &["incrby i"]),
        (&["SET f 1"], "INCRBYFLOAT f 1.5", &["incrbyfloat f"]),
        (&[], "APPEND a x", &["new a", "append a"]),
        (&["SET s abc"], "SETRANGE s 1 x", &["setrange s"]),
        (&[], "SETBIT b 7 1", &["new b", "setbit b"]),
        (&["SETBIT b 7 1"], "SETBIT b 100 0", &["setbit b"]),
        (&["SET b x"], "BITFIELD b SET u8 0 1", &["setbit b"]),
        (&[], "BITFIELD b OVERFLOW FAIL INCRBY u2 0 7", &["new b"]),
        (&["SET a x"], "BITOP OR d a", &["new d", "set d"]),
        (&["SET d x"], "BITOP AND d missing", &["del d"]),
        // generic
        (&["SET a v", "SET b v"], "DEL a missing b", &["del a", "del b"]),
        (&["SET k v"], "EXPIRE k 100", &["expire k"]),
        (&["SET k v"], "PEXPIREAT k 1", &["del k"]),
        (&["SET k v EX 100"], "PERSIST k", &["persist k"]),
        (&["SET a v"], "RENAME a b", &["new b", "rename_from a", "rename_to b"]),
        (&["SET a v", "SET b w"], "RENAME a b", &["new b", "rename_from a", "rename_to b"]),
        (&["SET a v"], "COPY a b", &["new b", "copy_to b"]),
        (&["SET a v", "SET b w"], "COPY a b REPLACE", &["new b", "copy_to b"]),
        // lists
        (&[], "LPUSH l a b", &["new l", "lpush l"]),
        (&["RPUSH l a"], "RPUSHX l b", &["rpush l"]),
        (&["RPUSH l a b"], "LPOP l", &["lpop l"]),
        (&["RPUSH l a"], "RPOP l", &["rpop l", "del l"]),
        (&["RPUSH l a b c"], "LPOP l 5", &["lpop l", "del l"]),
        (&["RPUSH l a b"], "LINSERT l AFTER a x", &["linsert l"]),
        (&["RPUSH l a b"], "LSET l 0 x", &["lset l"]),
        (&["RPUSH l a b a"], "LREM l 0 a", &["lrem l"]),
        (&["RPUSH l a"], "LREM l 0 a", &["lrem l", "del l"]),
        (&["RPUSH l a b"], "LTRIM l 0 -1", &["ltrim l"]),
        (&["RPUSH l a b"], "LTRIM l 5 6", &["ltrim l", "del l"]),
        (&["RPUSH l a"], "LMOVE l m LEFT RIGHT", &["new m", "rpush m", "lpop l", "del l"]),
        (&["RPUSH l a b"], "RPOPLPUSH l l", &["lpush l", "rpop l"]),
        (&["RPUSH l a b"], "LMPOP 2 missing l RIGHT", &["rpop l"]),
        (&["RPUSH l 2 1"], "SORT l STORE d", &["new d", "sortstore d"]),
        (&["SET d v"], "SORT missing STORE d", &["del d"]),
        // hashes
        (&[], "HSET h f v", &["new h", "hset h"]),
        (&["HSET h f v"], "HSET h f v", &["hset h"]),
        (&["HSET h f v"], "HMSET h f v g w", &["hset h"]),
        (&["HSET h f v"], "HSETNX h g v", &["hset h"]),
        (&[], "HINCRBY h n 1", &["new h", "hincrby h"]),
        (&["HSET h n 1"], "HINCRBYFLOAT h n 1.5", &["hincrbyfloat h"]),
        (&["HSET h f v g w"], "HDEL h f", &["hdel h"]),
        (&["HSET h f v"], "HDEL h f x", &["hdel h", "del h"]),
        // sets
        (&[], "SADD s a", &["new s", "sadd s"]),
        (&["SADD s a b"], "SREM s a", &["srem s"]),
        (&["SADD s a"], "SREM s a b", &["srem s", "del s"]),
        (&["SADD s a b"], "SPOP s", &["spop s"]),
        (&["SADD s a b"], "SPOP s 5", &["spop s", "del s"]),
        (&["SADD s a"], "SMOVE s t a", &["srem s", "del s", "new t", "sadd t"]),
        (&["SADD s a b", "SADD t a"], "SMOVE s t a", &["srem s"]),
        (&["SADD a 1 2", "SADD b 2"], "SINTERSTORE d a b", &["new d", "sinterstore d"]),
        (&["SADD a 1", "SET d v"], "SUNIONSTORE d a", &["sunionstore d"]),
        (&["SADD a 1", "SADD b 2"], "SDIFFSTORE d a b", &["new d", "sdiffstore d"]),
        (&["SADD a 1", "SADD d 1"], "SDIFFSTORE d a a", &["del d"]),
        // sorted sets
        (&[], "ZADD z 1 a", &["new z", "zadd z"]),
        (&["ZADD z 1 a"], "ZADD z 2 a", &["zadd z"]),
        (&["ZADD z 1 a"], "ZADD z INCR 1 a", &["zincr z"]),
        (&["ZADD z 1 a"], "ZINCRBY z 1 a", &["zincr z"]),
        (&["ZADD z 1 a 2 b"], "ZREM z a", &["zrem z"]),
        (&["ZADD z 1 a"], "ZREM z a", &["zrem z", "del z"]),
        (&["ZADD z 1 a 2 b"], "ZREMRANGEBYSCORE z 1 1", &["zremrangebyscore z"]),
        (&["ZADD z 1 a 2 b"], "ZREMRANGEBYRANK z 0 -1", &["zremrangebyrank z", "del z"]),
        (&["ZADD z 0 a 0 b"], "ZREMRANGEBYLEX z [a [a", &["zremrangebylex z"]),
        (&["ZADD z 1 a 2 b"], "ZPOPMIN z", &["zpopmin z"]),
        (&["ZADD z 1 a"], "ZPOPMAX z", &["zpopmax z", "del z"]),
        (&["ZADD z 1 a 2 b"], "ZMPOP 1 z MAX COUNT 5", &["zpopmax z", "del z"]),
        (&["ZADD z 1 a", "ZADD w 1 b"], "ZUNIONSTORE d 2 z w", &["new d", "zunionstore d"]),
        (&["ZADD z 1 a", "ZADD w 1 a"], "ZINTERSTORE d 2 z w", &["new d", "zinterstore d"]),
        (&["ZADD z 1 a", "ZADD w 1 b"], "ZDIFFSTORE d 2 z w", &["new d", "zdiffstore d"]),
        (&["ZADD z 1 a", "ZADD d 1 a"], "ZINTERSTORE d 2 z missing", &["del d"]),
        (&["ZADD z 1 a 2 b"], "ZRANGESTORE d z 0 0", &["new d", "zrangestore d"]),
        // streams
        (&[], "XADD x 1-1 f v", &["new x", "xadd x"]),
        (&["XADD x 1-1 f v"], "XADD x MAXLEN 1 2-1 f v", &["xadd x", "xtrim x"]),
        (&["XADD x 1-1 f v", "XADD x 2-1 f v"], "XDEL x 1-1 9-9", &["xdel x"]),
        (&["XADD x 1-1 f v", "XADD x 2-1 f v"], "XTRIM x MAXLEN 1", &["xtrim x"]),
        (&["XADD x 1-1 f v"], "XSETID x 5-1", &["xsetid x"]),
        (&["XADD x 1-1 f v"], "XGROUP CREATE x g $", &["xgroup-create x"]),
        (&[], "XGROUP CREATE x g $ MKSTREAM", &["new x", "xgroup-create x"]),
        (&["XGROUP CREATE x g $ MKSTREAM"], "XGROUP SETID x g 0", &["xgroup-setid x"]),
        (&["XGROUP CREATE x g $ MKSTREAM"], "XGROUP DESTROY x g", &["xgroup-destroy x"]),
        (
            &["XGROUP CREATE x g $ MKSTREAM"],
            "XGROUP CREATECONSUMER x g c",
            &["xgroup-createconsumer x"],
        ),
        (
            &["XGROUP CREATE x g $ MKSTREAM", "XGROUP CREATECONSUMER x g c"],
            "XGROUP DELCONSUMER x g c",
            &["xgroup-delconsumer x"],
        ),
        (
            &["XGROUP CREATE x g $ MKSTREAM", "XADD x 1-1 f v"],
            "XREADGROUP GROUP g c STREAMS x >",
            &["xgroup-createconsumer x"],
        ),
        (
            &["XGROUP CREATE x g 0 MKSTREAM", "XADD x 1-1 f v"],
            "XCLAIM x g c 0 1-1 FORCE",
            &["xgroup-createconsumer x"],
        ),
        (
            &["XGROUP CREATE x g 0 MKSTREAM", "XADD x 1-1 f v", "XREADGROUP GROUP g a STREAMS x >"],
            "XAUTOCLAIM x g b 0 0",
            &["xgroup-createconsumer x"],
        ),
    ];
    for (setup, line, want) in cases {
        set_events(&mut r, "");
        r.cmd(&["FLUSHALL"]);
        for s in *setup {
            assert!(!matches!(run_line(&mut r, s), Reply::Error(_)), "{s}");
        }
        set_events(&mut r, "EAn");
        let reply = run_line(&mut r, line);
        assert!(!matches!(reply, Reply::Error(_)), "{line}: {reply:?}");
        let got = keyevents(&mut r, &mut sub);
        assert_eq!(got, want.to_vec(), "{line} after {setup:?}");
    }
}

#[test]
fn expired_keys_are_announced_by_the_expiry_task_once() {
    let srv = Server::start(&[]);
    let mut r = srv.raw();
    let mut sub = subscriber(&srv);
    set_events(&mut r, "Ex");
    assert_eq!(r.cmd(&["SET", "k", "v", "PX", "50"]), ok());
    // Nobody reads it: the expiry task deletes it and announces it.
    let started = Instant::now();
    assert_eq!(message(&mut sub), ("__keyevent@0__:expired".into(), "k".into()));
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(r.cmd(&["EXISTS", "k"]), Reply::Int(0));
    assert_eq!(keyevents(&mut r, &mut sub), Vec::<String>::new(), "announced once");
}

#[test]
fn a_command_meeting_an_expired_key_announces_it_first() {
    let srv = Server::start(&[]);
    let mut r = srv.raw();
    let mut sub = subscriber(&srv);
    set_events(&mut r, "E$xn");
    for (read, want) in [
        ("GET k", vec!["expired k"]),
        ("SET k w", vec!["expired k", "new k", "set k"]),
        ("APPEND k w", vec!["expired k", "new k", "append k"]),
        ("DEL k", vec!["expired k"]),
    ] {
        set_events(&mut r, "");
        r.cmd(&["SET", "k", "v", "PX", "30"]);
        set_events(&mut r, "E$xn");
        std::thread::sleep(Duration::from_millis(60));
        // Whether the expiry task or the command removed it, the events are the same.
        run_line(&mut r, read);
        assert_eq!(keyevents(&mut r, &mut sub), want, "{read}");
    }
}

/// Reads from `s` until what it got contains `needle`; everything read.
fn read_until(s: &mut std::net::TcpStream, got: &mut Vec<u8>, needle: &[u8]) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut buf = [0u8; 4096];
    while !got.windows(needle.len()).any(|w| w == needle) {
        assert!(Instant::now() < deadline, "never got {:?}", String::from_utf8_lossy(needle));
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "closed");
        got.extend_from_slice(&buf[..n]);
    }
}

#[test]
fn resp3_subscribers_get_push_frames() {
    let srv = Server::start(&[]);
    let mut r = srv.raw();
    set_events(&mut r, "KEA");
    let mut s = std::net::TcpStream::connect(("127.0.0.1", srv.port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n*2\r\n$10\r\nPSUBSCRIBE\r\n$1\r\n*\r\n").unwrap();
    let mut got = Vec::new();
    read_until(&mut s, &mut got, b">3\r\n$10\r\npsubscribe\r\n$1\r\n*\r\n:1\r\n");
    got.clear();
    assert_eq!(r.cmd(&["LPUSH", "l", "a"]), Reply::Int(1));
    let want: &[u8] =
        b">4\r\n$8\r\npmessage\r\n$1\r\n*\r\n$16\r\n__keyspace@0__:l\r\n$5\r\nlpush\r\n\
>4\r\n$8\r\npmessage\r\n$1\r\n*\r\n$20\r\n__keyevent@0__:lpush\r\n$1\r\nl\r\n";
    read_until(&mut s, &mut got, want);
    assert!(got.starts_with(want), "{:?}", String::from_utf8_lossy(&got));
}

#[test]
fn transactions_and_served_blocked_pops_announce_after_their_writes() {
    let srv = Server::start(&[]);
    let mut r = srv.raw();
    let mut sub = subscriber(&srv);
    set_events(&mut r, "EA");
    assert_eq!(r.cmd(&["MULTI"]), ok());
    assert_eq!(r.cmd(&["SET", "a", "1"]), Reply::Simple("QUEUED".into()));
    assert_eq!(r.cmd(&["INCR", "a"]), Reply::Simple("QUEUED".into()));
    assert_eq!(r.cmd(&["DEL", "missing"]), Reply::Simple("QUEUED".into()));
    assert!(matches!(r.cmd(&["EXEC"]), Reply::Array(_)));
    assert_eq!(keyevents(&mut r, &mut sub), vec!["set a", "incrby a"]);
    let script = "redis.call('sadd', KEYS[1], 'x'); redis.call('srem', KEYS[1], 'y'); return 1";
    assert_eq!(r.cmd(&["EVAL", script, "1", "s"]), Reply::Int(1));
    assert_eq!(keyevents(&mut r, &mut sub), vec!["sadd s"]);
    // A blocked pop served by a push: the push's event, then the pop's.
    let mut b = srv.raw();
    send(&mut b, &["BLPOP", "l", "0"]);
    wait_blocked(&mut r, 1);
    assert_eq!(r.cmd(&["LPUSH", "l", "v"]), Reply::Int(1));
    assert_eq!(b.read(), Reply::Array(vec![Reply::bulk("l"), Reply::bulk("v")]));
    assert_eq!(keyevents(&mut r, &mut sub), vec!["lpush l", "lpop l", "del l"]);
}

#[test]
fn config_set_checks_the_flags_and_config_get_shows_redis_order() {
    let srv = Server::start(&[]);
    let mut r = srv.raw();
    let get = |r: &mut Raw| r.cmd(&["CONFIG", "GET", "notify-keyspace-events"]);
    let shown = |v: &str| Reply::Array(vec![Reply::bulk("notify-keyspace-events"), Reply::bulk(v)]);
    assert_eq!(get(&mut r), shown(""));
    for (given, want) in [
        ("gKE", "gKE"),
        ("$lshzxeKE", "$lshzxeKE"),
        ("KA", "AK"),
        ("EA", "AE"),
        ("Kn", "nK"),
        ("mEt", "tEm"),
        ("KEAnm", "AKEm"),
        ("", ""),
    ] {
        assert_eq!(r.cmd(&["CONFIG", "SET", "notify-keyspace-events", given]), ok());
        assert_eq!(get(&mut r), shown(want), "{given}");
    }
    set_events(&mut r, "KEA");
    let err = "ERR CONFIG SET failed (possibly related to argument 'notify-keyspace-events') - \
               Invalid event class character. Use 'Ag$lshzxeKEtmdn'.";
    for bad in ["KEq", "k", "KE A", "1"] {
        assert_eq!(
            r.cmd(&["CONFIG", "SET", "notify-keyspace-events", bad]),
            Reply::Error(err.into()),
            "{bad:?}"
        );
    }
    // A refused value sets nothing of the command, as Redis.
    let reply = r.cmd(&["CONFIG", "SET", "timeout", "7", "notify-keyspace-events", "Kx!"]);
    assert_eq!(reply, Reply::Error(err.into()));
    assert_eq!(get(&mut r), shown("AKE"));
    assert_eq!(
        r.cmd(&["CONFIG", "GET", "timeout"]),
        Reply::Array(vec![Reply::bulk("timeout"), Reply::bulk("0")])
    );
}

#[test]
fn the_startup_flag_enables_notifications() {
    let srv = Server::start(&["--notify-keyspace-events", "Elg"]);
    let mut r = srv.raw();
    let mut sub = subscriber(&srv);
    assert_eq!(
        r.cmd(&["CONFIG", "GET", "notify-keyspace-events"]),
        Reply::Array(vec![Reply::bulk("notify-keyspace-events"), Reply::bulk("glE")])
    );
    r.cmd(&["SET", "k", "v"]);
    r.cmd(&["RPUSH", "l", "a"]);
    r.cmd(&["DEL", "k"]);
    assert_eq!(keyevents(&mut r, &mut sub), vec!["rpush l", "del k"]);
}

#[test]
fn a_bad_startup_flag_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_strata-server"))
        .args(["--port", "0", "--notify-keyspace-events", "KEq", "--dir"])
        .arg(dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the server started with a bad notify-keyspace-events");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(!status.success());
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert!(err.contains("Invalid event class character"), "{err}");
}

/// In cluster mode a write's events come from the node that served it (its partition's
/// leader), once its entry is applied; the replicas that apply it publish nothing.
#[test]
fn in_cluster_mode_only_the_serving_node_announces() {
    use super::cluster_mode::{free_ports, leader_of, nodes_flag, run, start};
    let root = tempfile::tempdir().unwrap();
    let ports = free_ports(6);
    let nodes = nodes_flag(&ports);
    let _live: Vec<_> = (1..=3u64)
        .map(|i| start(i, &root.path().join(format!("n{i}")), ports[i as usize - 1], &nodes, true))
        .collect();
    assert_eq!(run(ports[0], false, &["SET", "k", "0"]), ok());
    let leader = leader_of(&ports[..3], "k");
    let mut subs: Vec<(u16, Raw, Raw)> = ports[..3]
        .iter()
        .map(|&p| {
            let mut c = Raw::connect(p);
            set_events(&mut c, "KEA");
            let mut s = Raw::connect(p);
            send(&mut s, &["PSUBSCRIBE", "*"]);
            s.read();
            (p, c, s)
        })
        .collect();
    let mut w = Raw::connect(leader);
    assert_eq!(w.cmd(&["SET", "k", "1"]), ok());
    assert_eq!(w.cmd(&["INCR", "k"]), Reply::Int(2));
    for (port, c, s) in &mut subs {
        let got = keyevents(c, s);
        if *port == leader {
            assert_eq!(got, vec!["set k", "incrby k"]);
        } else {
            assert_eq!(got, Vec::<String>::new(), "replica on {port}");
        }
    }
}
