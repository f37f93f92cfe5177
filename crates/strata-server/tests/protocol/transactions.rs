//! MULTI/EXEC/DISCARD/WATCH/UNWATCH: Redis's replies (checked against redis-server 7.0.15),
//! a transaction's writes seen by its own later commands and by nobody else before EXEC
//! ends, and WATCH's abort when a watched key is written by anyone or FLUSHALL.

use crate::common::{Raw, Reply, Server};

fn ok() -> Reply {
    Reply::Simple("OK".into())
}

fn queued() -> Reply {
    Reply::Simple("QUEUED".into())
}

fn err(s: &str) -> Reply {
    Reply::Error(s.into())
}

#[test]
fn queued_commands_run_in_order_with_redis_replies() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    c.multi(&[
        &["SET", "a", "1"],
        &["INCR", "a"],
        &["GET", "a"],
        &["LPUSH", "l", "x"],
        &["INCR", "l"],
    ]);
    assert_eq!(
        c.cmd(&["EXEC"]),
        Reply::Array(vec![
            ok(),
            Reply::Int(2),
            Reply::bulk("2"),
            Reply::Int(1),
            err("WRONGTYPE Operation against a key holding the wrong kind of value"),
        ])
    );
    assert_eq!(c.cmd(&["EXEC"]), err("ERR EXEC without MULTI"));
    assert_eq!(c.cmd(&["DISCARD"]), err("ERR DISCARD without MULTI"));
    assert_eq!(c.cmd(&["MULTI"]), ok());
    assert_eq!(c.cmd(&["MULTI"]), err("ERR MULTI calls can not be nested"));
    assert_eq!(c.cmd(&["WATCH", "x"]), err("ERR WATCH inside MULTI is not allowed"));
    assert_eq!(c.cmd(&["SET", "b"]), err("ERR wrong number of arguments for 'set' command"));
    assert_eq!(c.cmd(&["SET", "b", "1"]), queued());
    assert_eq!(
        c.cmd(&["EXEC"]),
        err("EXECABORT Transaction discarded because of previous errors.")
    );
    assert_eq!(c.cmd(&["GET", "b"]), Reply::Null, "nothing of an aborted transaction runs");
    assert_eq!(c.cmd(&["MULTI"]), ok());
    assert_eq!(
        c.cmd(&["NOSUCH", "x"]),
        err("ERR unknown command 'NOSUCH', with args beginning with: 'x' ")
    );
    assert_eq!(c.cmd(&["DISCARD"]), ok());
    assert_eq!(c.cmd(&["MULTI"]), ok());
    assert_eq!(c.cmd(&["SET", "c", "1"]), queued());
    assert_eq!(c.cmd(&["DISCARD"]), ok());
    assert_eq!(c.cmd(&["GET", "c"]), Reply::Null);
    // An empty transaction.
    assert_eq!(c.cmd(&["MULTI"]), ok());
    assert_eq!(c.cmd(&["EXEC"]), Reply::Array(vec![]));
    // Reads inside see the transaction's own writes, scans included.
    c.multi(&[
        &["DEL", "a", "l"],
        &["HSET", "h", "f", "v"],
        &["HGETALL", "h"],
        &["RPUSH", "q", "1", "2", "3"],
        &["LPOP", "q"],
        &["LRANGE", "q", "0", "-1"],
        &["KEYS", "*"],
        &["DBSIZE"],
    ]);
    let Reply::Array(r) = c.cmd(&["EXEC"]) else { panic!("EXEC") };
    assert_eq!(r[0], Reply::Int(2));
    assert_eq!(r[2], Reply::Array(vec![Reply::bulk("f"), Reply::bulk("v")]));
    assert_eq!(r[4], Reply::bulk("1"));
    assert_eq!(r[5], Reply::Array(vec![Reply::bulk("2"), Reply::bulk("3")]));
    let Reply::Array(mut keys) = r[6].clone() else { panic!("KEYS") };
    keys.sort_by_key(|k| format!("{k:?}"));
    assert_eq!(keys, vec![Reply::bulk("h"), Reply::bulk("q")]);
    assert_eq!(r[7], Reply::Int(2));
    assert_eq!(
        c.cmd(&["LRANGE", "q", "0", "-1"]),
        Reply::Array(vec![Reply::bulk("2"), Reply::bulk("3")])
    );
    // FLUSHALL inside, after a write of a key the engine did not have.
    assert_eq!(c.cmd(&["MULTI"]), ok());
    assert_eq!(c.cmd(&["SET", "zzzz", "1"]), queued());
    assert_eq!(c.cmd(&["FLUSHALL"]), queued());
    assert_eq!(c.cmd(&["SET", "after", "1"]), queued());
    assert_eq!(c.cmd(&["EXEC"]), Reply::Array(vec![ok(), ok(), ok()]));
    assert_eq!(c.cmd(&["KEYS", "*"]), Reply::Array(vec![Reply::bulk("after")]));
}

#[test]
fn watch_aborts_exec_when_a_watched_key_was_written() {
    let srv = Server::start(&[]);
    let (mut c, mut other) = (srv.raw(), srv.raw());
    assert_eq!(c.cmd(&["SET", "k", "1"]), ok());
    // Untouched: EXEC runs.
    assert_eq!(c.cmd(&["WATCH", "k", "never"]), ok());
    assert_eq!(c.cmd(&["MULTI"]), ok());
    assert_eq!(c.cmd(&["INCR", "k"]), queued());
    assert_eq!(c.cmd(&["EXEC"]), Reply::Array(vec![Reply::Int(2)]));
    // Written by another connection: a null array, nothing run.
    assert_eq!(c.cmd(&["WATCH", "k"]), ok());
    assert_eq!(other.cmd(&["SET", "k", "10"]), ok());
    assert_eq!(c.cmd(&["MULTI"]), ok());
    assert_eq!(c.cmd(&["INCR", "k"]), queued());
    assert_eq!(c.cmd(&["EXEC"]), Reply::Null);
    assert_eq!(c.cmd(&["GET", "k"]), Reply::bulk("10"));
    // EXEC forgot the watch: the next one runs.
    assert_eq!(c.cmd(&["MULTI"]), ok());
    assert_eq!(c.cmd(&["INCR", "k"]), queued());
    assert_eq!(c.cmd(&["EXEC"]), Reply::Array(vec![Reply::Int(11)]));
    // A field of a hash written in place (its metadata unchanged) is a write of the key.
    assert_eq!(c.cmd(&["HSET", "h", "f", "1"]), Reply::Int(1));
    assert_eq!(c.cmd(&["WATCH", "h"]), ok());
    assert_eq!(other.cmd(&["HSET", "h", "f", "2"]), Reply::Int(0));
    assert_eq!(c.cmd(&["MULTI"]), ok());
    assert_eq!(c.cmd(&["HGET", "h", "f"]), queued());
    assert_eq!(c.cmd(&["EXEC"]), Reply::Null);
    // FLUSHALL, and this connection's own write before MULTI, count too.
    assert_eq!(c.cmd(&["WATCH", "k"]), ok());
    assert_eq!(other.cmd(&["FLUSHALL"]), ok());
    assert_eq!(c.cmd(&["MULTI"]), ok());
    assert_eq!(c.cmd(&["EXEC"]), Reply::Null);
    assert_eq!(c.cmd(&["WATCH", "k"]), ok());
    assert_eq!(c.cmd(&["SET", "k", "mine"]), ok());
    assert_eq!(c.cmd(&["MULTI"]), ok());
    assert_eq!(c.cmd(&["EXEC"]), Reply::Null);
    // A key live when watched that expires before EXEC (deleted by the expiry task or not).
    assert_eq!(c.cmd(&["SET", "e", "v", "PX", "50"]), ok());
    assert_eq!(c.cmd(&["WATCH", "e"]), ok());
    std::thread::sleep(std::time::Duration::from_millis(150));
    assert_eq!(c.cmd(&["MULTI"]), ok());
    assert_eq!(c.cmd(&["PING"]), queued());
    assert_eq!(c.cmd(&["EXEC"]), Reply::Null);
    // UNWATCH and DISCARD forget the watches.
    assert_eq!(c.cmd(&["WATCH", "k"]), ok());
    assert_eq!(c.cmd(&["UNWATCH"]), ok());
    assert_eq!(other.cmd(&["SET", "k", "x"]), ok());
    assert_eq!(c.cmd(&["MULTI"]), ok());
    assert_eq!(c.cmd(&["GET", "k"]), queued());
    assert_eq!(c.cmd(&["EXEC"]), Reply::Array(vec![Reply::bulk("x")]));
    // RESP3: the aborted EXEC is a null.
    assert!(matches!(c.cmd(&["HELLO", "3"]), Reply::Map(_)));
    assert_eq!(c.cmd(&["WATCH", "k"]), ok());
    assert_eq!(other.cmd(&["SET", "k", "y"]), ok());
    assert_eq!(c.cmd(&["MULTI"]), ok());
    assert_eq!(c.cmd(&["EXEC"]), Reply::Null);
}

/// Another connection never sees part of a transaction: EXECs set two keys to the same
/// new value while readers MGET both.
#[test]
fn readers_see_all_of_a_transaction_or_none() {
    let srv = Server::start(&[]);
    let port = srv.port;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut r = Raw::connect(port);
                let mut seen = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let Reply::Array(v) = r.cmd(&["MGET", "x", "y"]) else { panic!("MGET") };
                    assert_eq!(v[0], v[1], "a transaction seen half done");
                    seen += 1;
                }
                seen
            })
        })
        .collect();
    let mut w = Raw::connect(port);
    for i in 0..300 {
        let v = i.to_string();
        assert_eq!(w.cmd(&["MULTI"]), ok());
        assert_eq!(w.cmd(&["SET", "x", &v]), queued());
        assert_eq!(w.cmd(&["SET", "y", &v]), queued());
        assert_eq!(w.cmd(&["EXEC"]), Reply::Array(vec![ok(), ok()]));
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for r in readers {
        assert!(r.join().unwrap() > 0);
    }
}

/// Concurrent WATCH/MULTI/EXEC increments (the check-and-set loop of Redis's docs) lose no
/// update: each EXEC that ran counted once.
#[test]
fn check_and_set_loops_lose_no_update() {
    let srv = Server::start(&[]);
    let port = srv.port;
    let threads: Vec<_> = (0..4)
        .map(|_| {
            std::thread::spawn(move || {
                let mut c = Raw::connect(port);
                let mut done = 0;
                while done < 50 {
                    assert_eq!(c.cmd(&["WATCH", "n"]), ok());
                    let n = match c.cmd(&["GET", "n"]) {
                        Reply::Bulk(b) => String::from_utf8(b).unwrap().parse::<i64>().unwrap(),
                        _ => 0,
                    };
                    assert_eq!(c.cmd(&["MULTI"]), ok());
                    assert_eq!(c.cmd(&["SET", "n", &(n + 1).to_string()]), queued());
                    if c.cmd(&["EXEC"]) != Reply::Null {
                        done += 1;
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(srv.raw().cmd(&["GET", "n"]), Reply::bulk("200"));
}

/// SAVE and SHUTDOWN are refused inside MULTI (Redis's `no-multi`), dooming the transaction;
/// a SORT ... STORE whose result is empty still writes (deletes) its destination, so a WATCH
/// on it aborts EXEC; SORT runs inside a transaction over its own writes.
#[test]
fn no_multi_commands_and_sort_store_in_transactions() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    for cmd in ["SAVE", "SHUTDOWN"] {
        assert_eq!(c.cmd(&["DEL", "foo"]), Reply::Int(0));
        assert_eq!(c.cmd(&["MULTI"]), ok());
        assert_eq!(c.cmd(&["SET", "foo", "bar"]), queued());
        assert_eq!(c.cmd(&[cmd]), err("ERR Command not allowed inside a transaction"));
        assert_eq!(
            c.cmd(&["EXEC"]),
            err("EXECABORT Transaction discarded because of previous errors.")
        );
        assert_eq!(c.cmd(&["GET", "foo"]), Reply::Null);
    }
    assert_eq!(c.cmd(&["LPUSH", "foo", "bar"]), Reply::Int(1));
    assert_eq!(c.cmd(&["WATCH", "foo"]), ok());
    assert_eq!(c.cmd(&["SORT", "emptylist", "STORE", "foo"]), Reply::Int(0));
    assert_eq!(c.cmd(&["MULTI"]), ok());
    assert_eq!(c.cmd(&["PING"]), queued());
    assert_eq!(c.cmd(&["EXEC"]), Reply::Null, "the watched key was deleted by SORT ... STORE");
    assert_eq!(c.cmd(&["MULTI"]), ok());
    assert_eq!(c.cmd(&["RPUSH", "nums", "3", "1", "2"]), queued());
    assert_eq!(c.cmd(&["SORT", "nums", "STORE", "sorted"]), queued());
    assert_eq!(c.cmd(&["LRANGE", "sorted", "0", "-1"]), queued());
    assert_eq!(
        c.cmd(&["EXEC"]),
        Reply::Array(vec![
            Reply::Int(3),
            Reply::Int(3),
            Reply::Array(vec![Reply::bulk("1"), Reply::bulk("2"), Reply::bulk("3")]),
        ])
    );
}

/// RESET (checked against redis-server 7.0.15): discards MULTI and WATCH, drops the
/// subscriptions, returns to RESP2 without a name, and asks for AUTH again when a password is
/// set; it runs inside MULTI, while subscribed and before AUTH.
#[test]
fn reset_returns_the_connection_to_its_first_state() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    assert_eq!(c.cmd(&["MULTI"]), Reply::Simple("OK".into()));
    assert_eq!(c.cmd(&["SET", "key-a", "a"]), Reply::Simple("QUEUED".into()));
    assert_eq!(c.cmd(&["RESET"]), Reply::Simple("RESET".into()));
    assert_eq!(c.cmd(&["EXEC"]), Reply::Error("ERR EXEC without MULTI".into()));
    assert_eq!(c.cmd(&["GET", "key-a"]), Reply::Null);
    assert_eq!(c.cmd(&["CLIENT", "SETNAME", "test-client"]), Reply::Simple("OK".into()));
    c.cmd(&["SUBSCRIBE", "channel-1"]);
    assert_eq!(c.cmd(&["RESET"]), Reply::Simple("RESET".into()));
    assert_eq!(c.cmd(&["SET", "key", "val"]), Reply::Simple("OK".into()));
    assert_eq!(c.cmd(&["CLIENT", "GETNAME"]), Reply::Null);
    assert!(matches!(c.cmd(&["HELLO", "3"]), Reply::Map(_)));
    assert_eq!(c.cmd(&["RESET"]), Reply::Simple("RESET".into()));
    assert_eq!(c.cmd(&["GET", "key"]), Reply::bulk("val"), "RESP2 again");

    let srv = Server::start(&["--requirepass", "pw"]);
    let mut c = srv.raw();
    assert_eq!(c.cmd(&["RESET"]), Reply::Simple("RESET".into()), "before AUTH");
    assert_eq!(c.cmd(&["AUTH", "pw"]), Reply::Simple("OK".into()));
    assert_eq!(c.cmd(&["GET", "x"]), Reply::Null);
    assert_eq!(c.cmd(&["RESET"]), Reply::Simple("RESET".into()));
    assert!(matches!(c.cmd(&["GET", "x"]), Reply::Error(e) if e.starts_with("NOAUTH")));
}

/// A watched key that had already expired (still stored: active expiry off) and is then
/// removed, by the read that finds it expired or by FLUSHDB, does not fail the EXEC: the
/// client saw it absent and it is absent (Redis 7.0's rule; its tests, in these steps).
#[test]
fn a_watched_stale_key_removed_since_does_not_fail_exec() {
    let srv = Server::start(&["--enable-debug-command", "yes"]);
    let mut c = srv.raw();
    assert_eq!(c.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]), Reply::Simple("OK".into()));
    for remove in [&["EXISTS", "x"][..], &["FLUSHDB"]] {
        assert_eq!(c.cmd(&["SET", "x", "foo", "PX", "1"]), Reply::Simple("OK".into()));
        std::thread::sleep(std::time::Duration::from_millis(5));
        assert_eq!(c.cmd(&["WATCH", "x"]), Reply::Simple("OK".into()));
        c.cmd(remove);
        assert_eq!(c.cmd(&["MULTI"]), Reply::Simple("OK".into()));
        c.cmd(&["PING"]);
        assert_eq!(
            c.cmd(&["EXEC"]),
            Reply::Array(vec![Reply::Simple("PONG".into())]),
            "{remove:?}"
        );
    }
    // A stale key written since does fail it.
    assert_eq!(c.cmd(&["SET", "x", "foo", "PX", "1"]), Reply::Simple("OK".into()));
    std::thread::sleep(std::time::Duration::from_millis(5));
    assert_eq!(c.cmd(&["WATCH", "x"]), Reply::Simple("OK".into()));
    assert_eq!(c.cmd(&["SET", "x", "new"]), Reply::Simple("OK".into()));
    assert_eq!(c.cmd(&["MULTI"]), Reply::Simple("OK".into()));
    c.cmd(&["PING"]);
    assert_eq!(c.cmd(&["EXEC"]), Reply::Null);
}

/// The commands of one EXEC share its time (Redis 7.0 keeps the EXEC call's clock): a key
/// that expires while the transaction runs is there for all of them.
#[test]
fn a_transaction_runs_at_one_time() {
    let srv = Server::start(&["--enable-debug-command", "yes"]);
    let mut c = srv.raw();
    assert_eq!(c.cmd(&["SET", "k", "v", "PX", "30"]), Reply::Simple("OK".into()));
    assert_eq!(c.cmd(&["MULTI"]), Reply::Simple("OK".into()));
    c.cmd(&["EXISTS", "k"]);
    c.cmd(&["DEBUG", "SLEEP", "0.06"]);
    c.cmd(&["EXISTS", "k"]);
    let r = c.cmd(&["EXEC"]);
    let one = Reply::Int(1);
    assert_eq!(r, Reply::Array(vec![one.clone(), Reply::Simple("OK".into()), one]));
    assert_eq!(c.cmd(&["EXISTS", "k"]), Reply::Int(0), "expired after it");
}

/// Checked against redis-server 7.0.15: an EXEC refused before it runs (its arity, the
/// user's permissions) ends the transaction unrun with `EXECABORT ... because of: <why>`.
#[test]
fn a_refused_exec_ends_its_transaction() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    assert_eq!(c.cmd(&["MULTI"]), ok());
    assert_eq!(c.cmd(&["SET", "k", "1"]), queued());
    assert_eq!(
        c.cmd(&["EXEC", "foo"]),
        err("EXECABORT Transaction discarded because of: wrong number of arguments for 'exec' \
             command")
    );
    assert_eq!(c.cmd(&["EXEC"]), err("ERR EXEC without MULTI"));
    assert_eq!(c.cmd(&["EXISTS", "k"]), Reply::Int(0));
    assert_eq!(c.cmd(&["ACL", "SETUSER", "u", "on", "nopass", "+@all", "-exec"]), ok());
    assert_eq!(c.cmd(&["AUTH", "u", "x"]), ok());
    assert_eq!(c.cmd(&["MULTI"]), ok());
    assert_eq!(c.cmd(&["PING"]), queued());
    assert_eq!(
        c.cmd(&["EXEC"]),
        err("EXECABORT Transaction discarded because of: NOPERM this user has no permissions \
             to run the 'exec' command")
    );
    assert_eq!(c.cmd(&["DISCARD"]), err("ERR DISCARD without MULTI"));
}
