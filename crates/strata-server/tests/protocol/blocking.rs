//! Blocking commands (BLPOP, BRPOP, BLMPOP, BLMOVE, BRPOPLPUSH, BZPOPMIN, BZPOPMAX,
//! BZMPOP): Redis's replies (checked against redis-server 7.0.15), first blocked first
//! served, a client served from the key that was written, frames pipelined after a blocking
//! command run once it is served, timeouts, EXEC never blocking, CLIENT UNBLOCK, INFO's
//! `blocked_clients`, a departed client taken off the waiters, no element lost or
//! delivered twice under concurrent producers and consumers, and WAIT on a server without
//! replicas.

use crate::common::{blocked_clients, wait_blocked, Raw, Reply, Server};
use std::time::{Duration, Instant};

fn send(c: &mut Raw, args: &[&str]) {
    let a: Vec<&[u8]> = args.iter().map(|s| s.as_bytes()).collect();
    c.send_raw(&Raw::encode(&a));
}

fn arr(items: &[&str]) -> Reply {
    Reply::Array(items.iter().map(|s| Reply::bulk(s)).collect())
}

#[test]
fn the_first_blocked_is_served_first_and_pipelined_frames_wait() {
    let srv = Server::start(&[]);
    let mut r = srv.raw();
    let (mut a, mut b) = (srv.raw(), srv.raw());
    send(&mut a, &["BLPOP", "q", "0"]);
    wait_blocked(&mut r, 1);
    // b's PING is pipelined behind its BLPOP: answered only after it.
    let mut both = Raw::encode(&[b"BLPOP", b"q", b"0"]);
    both.extend(Raw::encode(&[b"PING"]));
    b.send_raw(&both);
    wait_blocked(&mut r, 2);
    assert_eq!(r.cmd(&["RPUSH", "q", "x"]), Reply::Int(1));
    assert_eq!(a.read(), arr(&["q", "x"]));
    assert_eq!(blocked_clients(&mut r), 1);
    assert_eq!(r.cmd(&["RPUSH", "q", "y", "z"]), Reply::Int(2));
    assert_eq!(b.read(), arr(&["q", "y"]));
    assert_eq!(b.read(), Reply::Simple("PONG".into()));
    assert_eq!(r.cmd(&["LRANGE", "q", "0", "-1"]), arr(&["z"]));
    assert_eq!(blocked_clients(&mut r), 0);
}

#[test]
fn an_element_ready_at_once_is_popped_without_blocking() {
    let srv = Server::start(&[]);
    let mut r = srv.raw();
    r.cmd(&["RPUSH", "b", "1", "2"]);
    assert_eq!(r.cmd(&["BLPOP", "a", "b", "0"]), arr(&["b", "1"]));
    assert_eq!(r.cmd(&["BRPOP", "a", "b", "0"]), arr(&["b", "2"]));
    r.cmd(&["SET", "s", "v"]);
    let wrongtype =
        Reply::Error("WRONGTYPE Operation against a key holding the wrong kind of value".into());
    assert_eq!(r.cmd(&["BLPOP", "s", "0"]), wrongtype);
    assert_eq!(r.cmd(&["BLPOP", "s", "-1"]), Reply::Error("ERR timeout is negative".into()));
    assert_eq!(
        r.cmd(&["BLPOP", "s", "x"]),
        Reply::Error("ERR timeout is not a float or out of range".into())
    );
    assert_eq!(
        r.cmd(&["BLPOP", "s"]),
        Reply::Error("ERR wrong number of arguments for 'blpop' command".into())
    );
    r.cmd(&["RPUSH", "m", "1", "2", "3"]);
    assert_eq!(
        r.cmd(&["BLMPOP", "0", "2", "none", "m", "RIGHT", "COUNT", "2"]),
        Reply::Array(vec![Reply::bulk("m"), arr(&["3", "2"])])
    );
    r.cmd(&["ZADD", "z", "1", "a", "2", "b", "3", "c"]);
    assert_eq!(r.cmd(&["BZPOPMIN", "z", "0"]), arr(&["z", "a", "1"]));
    assert_eq!(r.cmd(&["BZPOPMAX", "none", "z", "0"]), arr(&["z", "c", "3"]));
    assert_eq!(
        r.cmd(&["BZMPOP", "1", "1", "z", "MIN"]),
        Reply::Array(vec![Reply::bulk("z"), Reply::Array(vec![arr(&["b", "2"])])])
    );
    assert_eq!(
        r.cmd(&["BZMPOP", "1", "0", "z", "MIN"]),
        Reply::Error("ERR numkeys should be greater than 0".into())
    );
    assert_eq!(r.cmd(&["BLMOVE", "m", "n", "LEFT", "RIGHT", "0"]), Reply::bulk("1"));
    assert_eq!(r.cmd(&["BRPOPLPUSH", "n", "m", "0"]), Reply::bulk("1"));
}

#[test]
fn timeouts_answer_nil_of_each_commands_kind() {
    let srv = Server::start(&[]);
    let mut r = srv.raw();
    let t = Instant::now();
    assert_eq!(r.cmd(&["BLPOP", "none", "0.1"]), Reply::Null);
    assert!(t.elapsed() >= Duration::from_millis(90));
    assert_eq!(r.cmd(&["BLMOVE", "none", "x", "LEFT", "LEFT", "0.05"]), Reply::Null);
    assert_eq!(r.cmd(&["BZMPOP", "0.05", "1", "none", "MAX"]), Reply::Null);
    // RESP3: `_`.
    r.cmd(&["HELLO", "3"]);
    assert_eq!(r.cmd(&["BRPOP", "none", "0.05"]), Reply::Null);
    assert_eq!(blocked_clients(&mut r), 0);
}

#[test]
fn inside_exec_blocking_commands_do_not_block() {
    let srv = Server::start(&[]);
    let mut r = srv.raw();
    r.cmd(&["MULTI"]);
    for args in [
        &["BLPOP", "e", "0"][..],
        &["BRPOPLPUSH", "e", "f", "0"],
        &["BZPOPMIN", "e", "0"],
        &["RPUSH", "e", "v"],
        &["BLPOP", "e", "0"],
    ] {
        assert_eq!(r.cmd(args), Reply::Simple("QUEUED".into()));
    }
    assert_eq!(
        r.cmd(&["EXEC"]),
        Reply::Array(vec![Reply::Null, Reply::Null, Reply::Null, Reply::Int(1), arr(&["e", "v"])])
    );
}

#[test]
fn a_transaction_serves_after_it_ends_from_the_key_it_wrote_first() {
    let srv = Server::start(&[]);
    let mut r = srv.raw();
    let mut a = srv.raw();
    // Pushed and deleted in one transaction: nobody wakes.
    send(&mut a, &["BLPOP", "k1", "k2", "0"]);
    wait_blocked(&mut r, 1);
    r.cmd(&["MULTI"]);
    r.cmd(&["RPUSH", "k1", "gone"]);
    r.cmd(&["DEL", "k1"]);
    r.cmd(&["EXEC"]);
    assert_eq!(blocked_clients(&mut r), 1);
    // Written k2 first, then k1: served from k2, as Redis serves the first ready key.
    r.cmd(&["MULTI"]);
    r.cmd(&["RPUSH", "k2", "two"]);
    r.cmd(&["RPUSH", "k1", "one"]);
    r.cmd(&["EXEC"]);
    assert_eq!(a.read(), arr(&["k2", "two"]));
    assert_eq!(r.cmd(&["LRANGE", "k1", "0", "-1"]), arr(&["one"]));
    // A transaction's pushes are all in when the waiter pops (Redis's isolation).
    send(&mut a, &["BLPOP", "iso", "0"]);
    wait_blocked(&mut r, 1);
    r.cmd(&["MULTI"]);
    for v in ["a", "b", "c"] {
        r.cmd(&["LPUSH", "iso", v]);
    }
    r.cmd(&["EXEC"]);
    assert_eq!(a.read(), arr(&["iso", "c"]));
}

#[test]
fn moves_chain_and_a_bad_destination_fails_the_waiter_only() {
    let srv = Server::start(&[]);
    let mut r = srv.raw();
    let (mut a, mut b) = (srv.raw(), srv.raw());
    send(&mut a, &["BLMOVE", "l1", "l2", "LEFT", "RIGHT", "0"]);
    wait_blocked(&mut r, 1);
    send(&mut b, &["BLPOP", "l2", "0"]);
    wait_blocked(&mut r, 2);
    r.cmd(&["RPUSH", "l1", "v"]);
    assert_eq!(a.read(), Reply::bulk("v"));
    assert_eq!(b.read(), arr(&["l2", "v"]));
    assert_eq!(r.cmd(&["EXISTS", "l1", "l2"]), Reply::Int(0));
    // Circular: each served move wakes the other, which then finds its source empty.
    send(&mut a, &["BRPOPLPUSH", "c1", "c2", "0"]);
    wait_blocked(&mut r, 1);
    send(&mut b, &["BRPOPLPUSH", "c2", "c1", "0"]);
    wait_blocked(&mut r, 2);
    r.cmd(&["RPUSH", "c1", "x"]);
    assert_eq!(a.read(), Reply::bulk("x"));
    assert_eq!(b.read(), Reply::bulk("x"));
    assert_eq!(r.cmd(&["LRANGE", "c1", "0", "-1"]), arr(&["x"]));
    // The first waiter's destination is a string: it gets WRONGTYPE and nothing moves for
    // it; the next waiter is served.
    r.cmd(&["SET", "t1", "nolist"]);
    send(&mut a, &["BRPOPLPUSH", "src", "t1", "0"]);
    wait_blocked(&mut r, 1);
    send(&mut b, &["BRPOPLPUSH", "src", "t2", "0"]);
    wait_blocked(&mut r, 2);
    r.cmd(&["LPUSH", "src", "foo"]);
    assert!(matches!(a.read(), Reply::Error(e) if e.starts_with("WRONGTYPE")));
    assert_eq!(b.read(), Reply::bulk("foo"));
    assert_eq!(r.cmd(&["LRANGE", "t2", "0", "-1"]), arr(&["foo"]));
}

#[test]
fn a_waited_key_of_another_type_leaves_the_client_blocked() {
    let srv = Server::start(&[]);
    let mut r = srv.raw();
    let mut a = srv.raw();
    send(&mut a, &["BLPOP", "x", "y", "0"]);
    wait_blocked(&mut r, 1);
    r.cmd(&["SET", "x", "string"]);
    r.cmd(&["SADD", "y", "member"]);
    assert_eq!(blocked_clients(&mut r), 1);
    r.cmd(&["DEL", "y"]);
    r.cmd(&["RPUSH", "y", "v"]);
    assert_eq!(a.read(), arr(&["y", "v"]));
    send(&mut a, &["BZPOPMAX", "z", "0"]);
    wait_blocked(&mut r, 1);
    r.cmd(&["RPUSH", "z", "notazset"]);
    assert_eq!(blocked_clients(&mut r), 1);
    r.cmd(&["DEL", "z"]);
    r.cmd(&["ZADD", "z", "5", "m"]);
    assert_eq!(a.read(), arr(&["z", "m", "5"]));
}

#[test]
fn client_unblock_and_departure() {
    let srv = Server::start(&[]);
    let mut r = srv.raw();
    let mut a = srv.raw();
    let Reply::Int(id) = a.cmd(&["CLIENT", "ID"]) else { panic!() };
    let id = id.to_string();
    assert_eq!(r.cmd(&["CLIENT", "UNBLOCK", &id]), Reply::Int(0));
    send(&mut a, &["BLPOP", "u", "0"]);
    wait_blocked(&mut r, 1);
    assert_eq!(r.cmd(&["CLIENT", "UNBLOCK", &id, "TIMEOUT"]), Reply::Int(1));
    assert_eq!(a.read(), Reply::Null);
    send(&mut a, &["BLMOVE", "u", "v", "LEFT", "LEFT", "0"]);
    wait_blocked(&mut r, 1);
    assert_eq!(r.cmd(&["CLIENT", "UNBLOCK", &id, "ERROR"]), Reply::Int(1));
    assert_eq!(a.read(), Reply::Error("UNBLOCKED client unblocked via CLIENT UNBLOCK".into()));
    assert_eq!(
        r.cmd(&["CLIENT", "UNBLOCK", &id, "NOW"]),
        Reply::Error("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR".into())
    );
    assert_eq!(
        r.cmd(&["CLIENT", "UNBLOCK", "asd"]),
        Reply::Error("ERR value is not an integer or out of range".into())
    );
    // A client that leaves while blocked is no longer a waiter: a push stays in the list.
    send(&mut a, &["BLPOP", "u", "0"]);
    wait_blocked(&mut r, 1);
    drop(a);
    wait_blocked(&mut r, 0);
    r.cmd(&["RPUSH", "u", "kept"]);
    assert_eq!(r.cmd(&["LRANGE", "u", "0", "-1"]), arr(&["kept"]));
}

/// Producers push distinct elements onto a few lists while consumers pop them with
/// BLPOP/BRPOP/BLMOVE (via a relay list) and short timeouts: every element is received
/// exactly once, and nothing is left behind.
#[test]
fn concurrent_producers_and_consumers_lose_and_duplicate_nothing() {
    let srv = Server::start(&["--appendfsync", "always"]);
    let port = srv.port;
    const PER_PRODUCER: usize = 300;
    const PRODUCERS: usize = 3;
    const CONSUMERS: usize = 4;
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            std::thread::spawn(move || {
                let mut c = Raw::connect(port);
                for i in 0..PER_PRODUCER {
                    let key = format!("w{}", i % 3);
                    let v = format!("{p}:{i}");
                    assert!(matches!(c.cmd(&["RPUSH", &key, &v]), Reply::Int(_)));
                }
            })
        })
        .collect();
    let consumers: Vec<_> = (0..CONSUMERS)
        .map(|n| {
            std::thread::spawn(move || {
                let mut c = Raw::connect(port);
                let mut got = Vec::new();
                let mut idle = 0;
                while idle < 5 {
                    let reply = match n % 3 {
                        0 => c.cmd(&["BLPOP", "w0", "w1", "w2", "relay", "0.2"]),
                        1 => c.cmd(&["BRPOP", "w2", "w1", "w0", "relay", "0.2"]),
                        _ => match c.cmd(&["BLMOVE", "w1", "relay", "LEFT", "RIGHT", "0.2"]) {
                            Reply::Null => c.cmd(&["BLPOP", "w0", "w2", "relay", "0.2"]),
                            // Moved into the relay list: someone pops it from there.
                            Reply::Bulk(_) => continue,
                            other => panic!("{other:?}"),
                        },
                    };
                    match reply {
                        Reply::Null => idle += 1,
                        Reply::Array(kv) => {
                            idle = 0;
                            let Reply::Bulk(v) = &kv[1] else { panic!() };
                            got.push(String::from_utf8(v.clone()).unwrap());
                        }
                        other => panic!("{other:?}"),
                    }
                }
                got
            })
        })
        .collect();
    for p in producers {
        p.join().unwrap();
    }
    let mut all: Vec<String> = consumers.into_iter().flat_map(|c| c.join().unwrap()).collect();
    let mut r = srv.raw();
    for k in ["w0", "w1", "w2", "relay"] {
        let Reply::Array(left) = r.cmd(&["LRANGE", k, "0", "-1"]) else { panic!() };
        all.extend(left.into_iter().map(|v| match v {
            Reply::Bulk(b) => String::from_utf8(b).unwrap(),
            other => panic!("{other:?}"),
        }));
    }
    let n = all.len();
    all.sort();
    all.dedup();
    assert_eq!(all.len(), n, "an element was delivered twice");
    assert_eq!(n, PRODUCERS * PER_PRODUCER, "an element was lost");
}

/// Readers of several streams (which hold their keys' locks while they look) block while
/// writers add to those streams and consumers blocked in a group are served (their re-runs
/// take the stream's lock): nothing deadlocks (a serving pass never starts under a key
/// lock), every reply comes.
#[test]
fn blocking_readers_of_several_keys_and_writers_never_deadlock() {
    use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
    let srv = Server::start(&[]);
    let port = srv.port;
    let mut c = srv.raw();
    for s in ["s1", "s2"] {
        assert_eq!(
            c.cmd(&["XGROUP", "CREATE", s, "g", "$", "MKSTREAM"]),
            Reply::Simple("OK".into())
        );
    }
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let mut handles = Vec::new();
    for r in 0..6 {
        let stop = stop.clone();
        handles.push(std::thread::spawn(move || {
            let mut c = Raw::connect(port);
            let mut served = 0;
            while !stop.load(Relaxed) {
                let (a, b) = if r % 2 == 0 { ("s1", "s2") } else { ("s2", "s1") };
                let reply = if r < 3 {
                    c.cmd(&["XREAD", "BLOCK", "20", "STREAMS", a, b, "$", "$"])
                } else {
                    let consumer = format!("c{r}");
                    c.cmd(&[
                        "XREADGROUP",
                        "GROUP",
                        "g",
                        &consumer,
                        "BLOCK",
                        "20",
                        "STREAMS",
                        a,
                        ">",
                    ])
                };
                match reply {
                    Reply::Null => {}
                    Reply::Array(_) => served += 1,
                    other => panic!("{other:?}"),
                }
            }
            served
        }));
    }
    for w in 0..2 {
        let stop = stop.clone();
        handles.push(std::thread::spawn(move || {
            let mut c = Raw::connect(port);
            let mut n = 0;
            while !stop.load(Relaxed) {
                let s = if n % 2 == 0 { "s1" } else { "s2" };
                assert!(matches!(c.cmd(&["XADD", s, "*", "w", &w.to_string()]), Reply::Bulk(_)));
                n += 1;
            }
            0
        }));
    }
    std::thread::sleep(Duration::from_secs(3));
    stop.store(true, Relaxed);
    let served: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
    assert!(served > 0, "no blocked read was ever served");
}

/// Under CLIENT REPLY OFF, or SKIP naming the blocking command, the served command's reply
/// is not sent (as redis-server 7.0.15 does), and the element is still popped.
#[test]
fn a_served_blocked_command_keeps_its_reply_mode() {
    let srv = Server::start(&[]);
    let mut r = srv.raw();
    for (mode, n) in [("OFF", 1), ("SKIP", 2)] {
        let mut c = srv.raw();
        send(&mut c, &["CLIENT", "REPLY", mode]);
        send(&mut c, &["BLPOP", "q", "0"]);
        wait_blocked(&mut r, 1);
        assert_eq!(r.cmd(&["RPUSH", "q", "x"]), Reply::Int(1));
        wait_blocked(&mut r, 0);
        if mode == "OFF" {
            assert_eq!(c.cmd(&["CLIENT", "REPLY", "ON"]), Reply::Simple("OK".into()));
        }
        // The next reply read is PING's: BLPOP's went nowhere.
        assert_eq!(c.cmd(&["PING"]), Reply::Simple("PONG".into()), "{mode}");
        assert_eq!(r.cmd(&["LLEN", "q"]), Reply::Int(0), "round {n}");
    }
}

/// WAIT as redis-server 7.0.15 answers it with no replica connected: 0 at once when none is
/// asked for (or inside MULTI), else 0 when the timeout passes, the client blocked until
/// then (0: until CLIENT UNBLOCK); Redis's errors; not from a script.
#[test]
fn wait_without_replicas_answers_zero_at_its_timeout() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    assert_eq!(c.cmd(&["SET", "k", "v"]), Reply::Simple("OK".into()));
    assert_eq!(c.cmd(&["WAIT", "0", "0"]), Reply::Int(0));
    let started = Instant::now();
    assert_eq!(c.cmd(&["WAIT", "1", "200"]), Reply::Int(0));
    assert!(started.elapsed() >= Duration::from_millis(190), "{:?}", started.elapsed());
    let err = |s: &str| Reply::Error(s.into());
    assert_eq!(c.cmd(&["WAIT", "x", "0"]), err("ERR value is not an integer or out of range"));
    assert_eq!(c.cmd(&["WAIT", "1", "x"]), err("ERR timeout is not an integer or out of range"));
    assert_eq!(c.cmd(&["WAIT", "1", "-1"]), err("ERR timeout is negative"));
    assert_eq!(c.cmd(&["MULTI"]), Reply::Simple("OK".into()));
    assert_eq!(c.cmd(&["WAIT", "5", "0"]), Reply::Simple("QUEUED".into()));
    assert_eq!(c.cmd(&["EXEC"]), Reply::Array(vec![Reply::Int(0)]));
    let Reply::Error(e) = c.cmd(&["EVAL", "return redis.call('wait', 1, 0)", "0"]) else {
        panic!("WAIT ran in a script")
    };
    assert!(e.contains("not allowed from script"), "{e}");
    // WAIT 1 0 blocks until unblocked.
    let mut w = srv.raw();
    let Reply::Int(id) = w.cmd(&["CLIENT", "ID"]) else { panic!() };
    send(&mut w, &["WAIT", "1", "0"]);
    wait_blocked(&mut c, 1);
    assert_eq!(c.cmd(&["CLIENT", "UNBLOCK", &id.to_string()]), Reply::Int(1));
    assert_eq!(w.read(), Reply::Int(0));
    assert_eq!(blocked_clients(&mut c), 0);
}

#[test]
fn a_destination_written_by_a_store_serves_its_waiter() {
    // Regression: ZUNIONSTORE's destination (before its counted sources) and GEORADIUS's
    // STORE key were not among the keys a write made ready, so their waiters slept on.
    let srv = Server::start(&[]);
    let mut r = srv.raw();
    r.cmd(&["ZADD", "z", "1", "m"]);
    r.cmd(&["GEOADD", "g", "13.361389", "38.115556", "Palermo"]);
    r.cmd(&["RPUSH", "l", "b", "a"]);
    let stores: [&[&str]; 5] = [
        &["ZUNIONSTORE", "d", "1", "z"],
        &["ZINTERSTORE", "d", "1", "z"],
        &["ZDIFFSTORE", "d", "1", "z"],
        &["GEORADIUS", "g", "13", "38", "100", "km", "STORE", "d"],
        &["GEORADIUSBYMEMBER", "g", "Palermo", "1", "km", "STOREDIST", "d"],
    ];
    let mut w = srv.raw();
    for store in stores {
        send(&mut w, &["BZPOPMIN", "d", "5"]);
        wait_blocked(&mut r, 1);
        assert_eq!(r.cmd(store), Reply::Int(1), "{store:?}");
        match w.read() {
            Reply::Array(v) => assert_eq!(v[0], Reply::bulk("d"), "{store:?}"),
            other => panic!("{store:?}: {other:?}"),
        }
    }
    send(&mut w, &["BLPOP", "d", "5"]);
    wait_blocked(&mut r, 1);
    assert_eq!(r.cmd(&["SORT", "l", "ALPHA", "STORE", "d"]), Reply::Int(2));
    assert_eq!(w.read(), arr(&["d", "a"]));
    assert_eq!(blocked_clients(&mut r), 0);
}

#[test]
fn client_list_flags_a_blocked_client_until_it_is_served_and_one_a_write_could_not_serve() {
    let srv = Server::start(&["--enable-debug-command", "yes"]);
    let mut r = srv.raw();
    let mut a = srv.raw();
    let id = match a.cmd(&["CLIENT", "ID"]) {
        Reply::Int(i) => i.to_string(),
        other => panic!("{other:?}"),
    };
    let flags = |r: &mut Raw| match r.cmd(&["CLIENT", "LIST", "ID", &id]) {
        Reply::Bulk(b) => {
            let line = String::from_utf8(b).unwrap();
            line.split(' ').find_map(|f| f.strip_prefix("flags=")).unwrap().to_string()
        }
        other => panic!("{other:?}"),
    };
    assert_eq!(flags(&mut r), "N");
    send(&mut a, &["BRPOP", "k", "0"]);
    wait_blocked(&mut r, 1);
    assert_eq!(flags(&mut r), "b");
    // A push whose key expires before the waiter looks (Redis's rule: it stays blocked).
    r.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    r.multi(&[&["RPUSH", "k", "x"], &["PEXPIRE", "k", "50"], &["DEBUG", "SLEEP", "0.1"]]);
    r.cmd(&["EXEC"]);
    assert_eq!(flags(&mut r), "b");
    r.cmd(&["RPUSH", "k", "y"]);
    assert_eq!(a.read(), arr(&["k", "y"]));
    assert_eq!(flags(&mut r), "N");
    r.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "1"]);
}
