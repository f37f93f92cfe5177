//! Error replies match Redis's texts, and a malformed frame closes only its own connection.

use crate::common::{Raw, Reply, Server};

fn err(s: &str) -> Reply {
    Reply::Error(s.into())
}

#[test]
fn error_texts_match_redis() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    assert_eq!(c.cmd(&["HSET", "h", "f", "v"]), Reply::Int(1));
    let wrong = err("WRONGTYPE Operation against a key holding the wrong kind of value");
    assert_eq!(c.cmd(&["GET", "h"]), wrong);
    assert_eq!(c.cmd(&["LPUSH", "h", "x"]), wrong);
    assert_eq!(c.cmd(&["ZADD", "h", "1", "x"]), wrong);
    assert_eq!(c.cmd(&["SADD", "h", "x"]), wrong);
    assert_eq!(c.cmd(&["INCR", "h"]), wrong);
    assert_eq!(c.cmd(&["GET"]), err("ERR wrong number of arguments for 'get' command"));
    assert_eq!(c.cmd(&["hset", "h", "f"]), err("ERR wrong number of arguments for 'hset' command"));
    assert_eq!(c.cmd(&["SET", "k", "v", "BOGUS"]), err("ERR syntax error"));
    assert_eq!(c.cmd(&["SET", "k", "v", "NX", "XX"]), err("ERR syntax error"));
    assert_eq!(c.cmd(&["SET", "s", "abc"]), Reply::Simple("OK".into()));
    assert_eq!(c.cmd(&["INCR", "s"]), err("ERR value is not an integer or out of range"));
    assert_eq!(c.cmd(&["INCRBY", "n", "x"]), err("ERR value is not an integer or out of range"));
    assert_eq!(c.cmd(&["ZADD", "z", "abc", "m"]), err("ERR value is not a valid float"));
    assert_eq!(c.cmd(&["ZADD", "z", "nan", "m"]), err("ERR value is not a valid float"));
    assert_eq!(c.cmd(&["SET", "big", "9223372036854775807"]), Reply::Simple("OK".into()));
    assert_eq!(c.cmd(&["INCR", "big"]), err("ERR increment or decrement would overflow"));
    assert_eq!(c.cmd(&["HINCRBY", "h", "f", "1"]), err("ERR hash value is not an integer"));
    assert_eq!(
        c.cmd(&["FOO", "a", "b"]),
        err("ERR unknown command 'FOO', with args beginning with: 'a' 'b' ")
    );
    assert_eq!(c.cmd(&["SELECT", "16"]), err("ERR DB index is out of range"));
    assert_eq!(c.cmd(&["SELECT", "0"]), Reply::Simple("OK".into()));
    assert_eq!(c.cmd(&["EXPIRE", "s", "x"]), err("ERR value is not an integer or out of range"));
    assert_eq!(c.cmd(&["ZRANGEBYSCORE", "z", "a", "1"]), err("ERR min or max is not a float"));
    assert_eq!(c.cmd(&["RENAME", "nokey", "x"]), err("ERR no such key"));
    assert_eq!(
        c.cmd(&["SET", "k", "v", "EX", "0"]),
        err("ERR invalid expire time in 'set' command")
    );
    assert_eq!(c.cmd(&["PING"]), Reply::Simple("PONG".into()));
}

#[test]
fn protocol_error_closes_only_that_connection() {
    let srv = Server::start(&["--proto-max-bulk-len", "1000"]);
    let mut good = srv.raw();
    assert_eq!(good.cmd(&["SET", "a", "1"]), Reply::Simple("OK".into()));
    for bad in [
        &b"*1\r\n+PING\r\n"[..],
        b"*abc\r\n",
        b"*1\r\n$5000\r\n",
        b"*2\r\n$3\r\nGET\r\n$1\r\nxyz\r\n",
        b"SET \"a b\r\n",
    ] {
        let mut c = srv.raw();
        // A command before the bad frame in the same packet still gets its reply.
        let mut pkt = b"PING\r\n".to_vec();
        pkt.extend_from_slice(bad);
        c.send_raw(&pkt);
        assert_eq!(c.read(), Reply::Simple("PONG".into()));
        match c.read() {
            Reply::Error(e) => assert!(e.starts_with("ERR Protocol error: "), "{e}"),
            other => panic!("{bad:?}: {other:?}"),
        }
        assert_eq!(c.try_read(), None, "connection left open after {bad:?}");
        assert_eq!(good.cmd(&["GET", "a"]), Reply::bulk("1"));
    }
}

/// CONFIG SET sets all its pairs or none: every name is checked (unknown, read at start only,
/// the same parameter twice under either of its names) and every value, before any is set.
/// Regression: a pair after a good one with an unknown name, a bad `appendfsync` or a bad
/// hash threshold failed the command after the good one had been set.
#[test]
fn config_set_is_all_or_nothing() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    let failed = |k: &str, why: &str| {
        Reply::Error(format!("ERR CONFIG SET failed (possibly related to argument '{k}') - {why}"))
    };
    let cases: &[(&[&str], Reply)] = &[
        (
            &["maxmemory", "1", "nosuch", "2"],
            Reply::Error(
                "ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'".into(),
            ),
        ),
        (
            &["hz", "11", "appendfsync", "bogus"],
            failed("appendfsync", "argument(s) must be one of the following: always, everysec, no"),
        ),
        (
            &["maxmemory", "3", "hash-max-listpack-value", "x"],
            failed("hash-max-listpack-value", "argument couldn't be parsed into an integer"),
        ),
        (
            &["maxmemory", "10000001", "MAXMEMORY", "10000002"],
            failed("MAXMEMORY", "duplicate parameter"),
        ),
        (
            &["hash-max-ziplist-entries", "5", "hash-max-listpack-entries", "6"],
            failed("hash-max-listpack-entries", "duplicate parameter"),
        ),
        (&["hz", "12", "bind", "0.0.0.0"], failed("bind", "can't set immutable config")),
        (
            &["maxmemory", "bla", "nosuch", "2"],
            Reply::Error(
                "ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'".into(),
            ),
        ),
    ];
    for (pairs, want) in cases {
        let mut line = vec!["CONFIG", "SET"];
        line.extend_from_slice(pairs);
        assert_eq!(&c.cmd(&line), want, "{pairs:?}");
        for (k, v) in [("maxmemory", "0"), ("hz", "10"), ("hash-max-listpack-entries", "128")] {
            assert_eq!(
                c.cmd(&["CONFIG", "GET", k]),
                Reply::Array(vec![Reply::bulk(k), Reply::bulk(v)]),
                "{k} unchanged after {pairs:?}"
            );
        }
    }
    // A port that cannot be listened on: nothing set (Redis's "rollback on apply error").
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = taken.local_addr().unwrap().port().to_string();
    assert_eq!(
        c.cmd(&["CONFIG", "SET", "hz", "12", "port", &taken, "maxmemory", "5"]),
        failed("port", "Unable to listen on this port. Check server logs.")
    );
    assert_eq!(
        c.cmd(&["CONFIG", "SET", "port", "0"]),
        failed("port", "port 0 would leave no way to connect (no unix socket here)")
    );
    for (k, v) in [("maxmemory", "0"), ("hz", "10")] {
        let got = c.cmd(&["CONFIG", "GET", k]);
        assert_eq!(got, Reply::Array(vec![Reply::bulk(k), Reply::bulk(v)]), "{k} unchanged");
    }
    assert_eq!(
        c.cmd(&["CONFIG", "SET", "hz", "11", "maxmemory"]),
        Reply::Error("ERR syntax error".into())
    );
    // The value a start-only parameter has is a no-op, as Redis's test helper sets every
    // parameter to what CONFIG GET gave.
    let port = match c.cmd(&["CONFIG", "GET", "port"]) {
        Reply::Array(v) => match &v[1] {
            Reply::Bulk(b) => String::from_utf8(b.clone()).unwrap(),
            r => panic!("{r:?}"),
        },
        r => panic!("{r:?}"),
    };
    assert_eq!(c.cmd(&["CONFIG", "SET", "port", &port]), Reply::Simple("OK".into()));
    assert_eq!(c.cmd(&["CONFIG", "SET", "maxmemory", "8", "hz", "11"]), Reply::Simple("OK".into()));
    assert_eq!(
        c.cmd(&["CONFIG", "GET", "hz"]),
        Reply::Array(vec![Reply::bulk("hz"), Reply::bulk("11")])
    );
}

/// Redis 7.0's parameters this server has no mechanism for are listed with Redis's defaults
/// and kept when set with a value of their shape; the ones Redis refuses at run time are
/// refused with its words.
#[test]
fn config_keeps_redis_parameters_without_effect() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    let get = |c: &mut Raw, k: &str| c.cmd(&["CONFIG", "GET", k]);
    let pair = |k: &str, v: &str| Reply::Array(vec![Reply::bulk(k), Reply::bulk(v)]);
    assert_eq!(get(&mut c, "repl-backlog-size"), pair("repl-backlog-size", "1048576"));
    assert_eq!(get(&mut c, "slaveof"), pair("slaveof", ""));
    let ok = Reply::Simple("OK".into());
    assert_eq!(
        c.cmd(&["CONFIG", "SET", "repl-backlog-size", "2mb", "lazyfree-lazy-eviction", "yes"]),
        ok
    );
    assert_eq!(get(&mut c, "repl-backlog-size"), pair("repl-backlog-size", "2mb"));
    let failed = |k: &str, why: &str| {
        Reply::Error(format!("ERR CONFIG SET failed (possibly related to argument '{k}') - {why}"))
    };
    let cases: &[(&[&str], Reply)] = &[
        (
            &["CONFIG", "SET", "lazyfree-lazy-eviction", "maybe"],
            failed("lazyfree-lazy-eviction", "argument must be 'yes' or 'no'"),
        ),
        (
            &["CONFIG", "SET", "repl-backlog-size", "lots"],
            failed("repl-backlog-size", "argument must be a memory value"),
        ),
        (&["CONFIG", "SET", "daemonize", "yes"], failed("daemonize", "can't set immutable config")),
        (
            &["CONFIG", "SET", "cluster-enabled", "yes"],
            failed("cluster-enabled", "can't set immutable config"),
        ),
        (&["CONFIG", "SET", "dir", "/tmp"], failed("dir", "can't set protected config")),
    ];
    for (line, want) in cases {
        assert_eq!(&c.cmd(line), want, "{line:?}");
    }
    assert_eq!(get(&mut c, "lazyfree-lazy-eviction"), pair("lazyfree-lazy-eviction", "yes"));
}

/// CONFIG SET checks every value before setting any, with Redis's errors; Redis 7's older
/// names of the hash thresholds set the same setting; the other types' encoding thresholds
/// are kept and reported.
#[test]
fn config_set_checks_values_and_knows_redis_names() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    let ok = Reply::Simple("OK".into());
    assert_eq!(
        c.cmd(&["CONFIG", "SET", "hz", "20", "maxmemory", "bla"]),
        Reply::Error(
            "ERR CONFIG SET failed (possibly related to argument 'maxmemory') - argument must be a memory value"
                .into()
        )
    );
    assert_eq!(
        c.cmd(&["CONFIG", "GET", "hz"]),
        Reply::Array(vec![Reply::bulk("hz"), Reply::bulk("10")]),
        "nothing set when one value is bad"
    );
    assert_eq!(c.cmd(&["CONFIG", "SET", "hash-max-ziplist-entries", "4"]), ok);
    assert_eq!(
        c.cmd(&["CONFIG", "GET", "hash-max-listpack-entries"]),
        Reply::Array(vec![Reply::bulk("hash-max-listpack-entries"), Reply::bulk("4")])
    );
    assert_eq!(c.cmd(&["CONFIG", "SET", "zset-max-ziplist-entries", "16"]), ok);
    assert!(matches!(
        c.cmd(&["CONFIG", "SET", "set-max-intset-entries", "many"]),
        Reply::Error(e) if e.contains("couldn't be parsed into an integer")
    ));
    // A list node's size: entries when positive, a size class when negative (regression:
    // -2, the default CONFIG GET gives and Redis's test helper sets back, was refused).
    assert_eq!(c.cmd(&["CONFIG", "SET", "list-max-ziplist-size", "-2"]), ok);
    assert_eq!(c.cmd(&["CONFIG", "SET", "list-max-listpack-size", "32"]), ok);
    assert_eq!(
        c.cmd(&["CONFIG", "GET", "list-max-ziplist-size"]),
        Reply::Array(vec![Reply::bulk("list-max-ziplist-size"), Reply::bulk("32")])
    );
    assert!(matches!(
        c.cmd(&["CONFIG", "SET", "list-max-listpack-size", "-2x"]),
        Reply::Error(e) if e.contains("couldn't be parsed into an integer")
    ));
    assert_eq!(c.cmd(&["FUNCTION", "FLUSH"]), ok);
    assert_eq!(c.cmd(&["FUNCTION", "LIST"]), Reply::Array(vec![]));
    assert_eq!(c.cmd(&["FUNCTION", "DELETE", "lib"]), Reply::Error("ERR Library not found".into()));
}

/// CONFIG SET client-output-buffer-limit as redis-server 7.0.15 takes it: the classes named
/// take their limits (sizes in bytes, `replica` as `slave`), the others keep theirs; a value
/// not of `class hard soft seconds` groups is Redis's error.
#[test]
fn client_output_buffer_limit_sets_the_classes_it_names() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    let get = |c: &mut Raw| match c.cmd(&["CONFIG", "GET", "client-output-buffer-limit"]) {
        Reply::Array(v) => v[1].clone(),
        r => panic!("{r:?}"),
    };
    let k = "client-output-buffer-limit";
    assert_eq!(c.cmd(&["CONFIG", "SET", k, "pubsub 1mb 2 3"]), Reply::Simple("OK".into()));
    let want = "normal 0 0 0 slave 268435456 67108864 60 pubsub 1048576 2 3";
    assert_eq!(get(&mut c), Reply::bulk(want));
    assert_eq!(
        c.cmd(&["CONFIG", "SET", k, "pubsub 1mb 2"]),
        Reply::Error(
            "ERR CONFIG SET failed (possibly related to argument 'client-output-buffer-limit') \
             - Wrong number of arguments in buffer limit configuration."
                .into()
        )
    );
    let set = c.cmd(&["CONFIG", "SET", k, "replica 1 2 3 normal 1k 0 0"]);
    assert_eq!(set, Reply::Simple("OK".into()));
    assert_eq!(get(&mut c), Reply::bulk("normal 1000 0 0 slave 1 2 3 pubsub 1048576 2 3"));
}
