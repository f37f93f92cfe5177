//! CLIENT PAUSE and UNPAUSE, as Redis 7.0's unit/pause runs them: WRITE holds writes and
//! what may be replicated (PUBLISH, PFCOUNT, scripts that may write, an EXEC of a write) and
//! lets reads, read-only transactions and `no-writes` scripts through; a held command waits,
//! counted in `blocked_clients`, and runs once the pause is lifted or over; a wrong number of
//! arguments is answered at once; ALL holds everything; a pause given in a transaction
//! starts after it; active expiry waits for the pause.

use std::time::{Duration, Instant};

use crate::common::{blocked_clients, wait_blocked, Raw, Reply, Server};

fn ok() -> Reply {
    Reply::Simple("OK".into())
}

fn send(c: &mut Raw, args: &[&str]) {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    c.send_raw(&Raw::encode(&args));
}

fn expired_keys(c: &mut Raw) -> i64 {
    let Reply::Bulk(info) = c.cmd(&["INFO", "stats"]) else { panic!() };
    let info = String::from_utf8(info).unwrap();
    let line = info.lines().find_map(|l| l.strip_prefix("expired_keys:")).unwrap();
    line.trim().parse().unwrap()
}

#[test]
fn write_pause_holds_writes_and_what_may_replicate_until_unpaused() {
    let srv = Server::start(&[]);
    let mut admin = srv.raw();
    assert_eq!(admin.cmd(&["SET", "foo", "bar"]), ok());
    assert_eq!(admin.cmd(&["PFADD", "hll", "a"]), Reply::Int(1));
    // A transaction that writes, queued before the pause (a write is held before it is
    // queued too, as in Redis).
    let mut tx = srv.raw();
    assert_eq!(tx.cmd(&["MULTI"]), ok());
    assert_eq!(tx.cmd(&["INCR", "m"]), Reply::Simple("QUEUED".into()));
    assert_eq!(admin.cmd(&["CLIENT", "PAUSE", "100000", "WRITE"]), ok());

    // Reads, a read-only transaction and a no-writes script run.
    let mut r = srv.raw();
    assert_eq!(r.cmd(&["GET", "foo"]), Reply::bulk("bar"));
    assert_eq!(r.cmd(&["PING"]), Reply::Simple("PONG".into()));
    assert_eq!(r.cmd(&["MULTI"]), ok());
    assert_eq!(r.cmd(&["GET", "foo"]), Reply::Simple("QUEUED".into()));
    assert_eq!(r.cmd(&["EXEC"]), Reply::Array(vec![Reply::bulk("bar")]));
    let ro = "#!lua flags=no-writes\nreturn redis.call('get', KEYS[1])";
    assert_eq!(r.cmd(&["EVAL", ro, "1", "foo"]), Reply::bulk("bar"));
    let get = "return redis.call('get', KEYS[1])";
    assert_eq!(r.cmd(&["EVAL_RO", get, "1", "foo"]), Reply::bulk("bar"));
    let Reply::Bulk(sha) = r.cmd(&["SCRIPT", "LOAD", ro]) else { panic!() };
    let sha = String::from_utf8(sha).unwrap();
    assert_eq!(r.cmd(&["EVALSHA", &sha, "1", "foo"]), Reply::bulk("bar"));
    assert_eq!(r.cmd(&["FUNCTION", "LIST"]), Reply::Array(vec![]));
    assert_eq!(blocked_clients(&mut admin), 0);
    // A wrong number of arguments is answered at once.
    assert_eq!(
        r.cmd(&["SET", "foo"]),
        Reply::Error("ERR wrong number of arguments for 'set' command".into())
    );

    // A write, PUBLISH, PFCOUNT, a script that may write and an EXEC of a write wait.
    let mut held: Vec<(Raw, Reply)> = Vec::new();
    let mut hold = |args: &[&str], reply: Reply| {
        let mut c = srv.raw();
        send(&mut c, args);
        held.push((c, reply));
    };
    hold(&["SET", "foo", "baz"], ok());
    hold(&["PUBLISH", "ch", "m"], Reply::Int(0));
    hold(&["PFCOUNT", "hll"], Reply::Int(1));
    hold(&["EVAL", "return redis.call('incr', KEYS[1])", "1", "n"], Reply::Int(1));
    send(&mut tx, &["EXEC"]);
    held.push((tx, Reply::Array(vec![Reply::Int(1)])));
    wait_blocked(&mut admin, held.len());
    assert_eq!(admin.cmd(&["GET", "foo"]), Reply::bulk("bar"), "the SET has not run");

    assert_eq!(admin.cmd(&["CLIENT", "UNPAUSE"]), ok());
    for (mut c, reply) in held {
        assert_eq!(c.read(), reply);
    }
    assert_eq!(admin.cmd(&["GET", "foo"]), Reply::bulk("baz"));
    assert_eq!(blocked_clients(&mut admin), 0);
}

#[test]
fn all_pause_holds_every_command_until_its_time_is_up() {
    let srv = Server::start(&[]);
    let mut admin = srv.raw();
    assert_eq!(
        admin.cmd(&["CLIENT", "PAUSE", "soon"]),
        Reply::Error("ERR timeout is not an integer or out of range".into())
    );
    assert_eq!(
        admin.cmd(&["CLIENT", "PAUSE", "-1"]),
        Reply::Error("ERR timeout is negative".into())
    );
    assert_eq!(
        admin.cmd(&["CLIENT", "PAUSE", "10", "READ"]),
        Reply::Error("ERR CLIENT PAUSE mode must be WRITE or ALL".into())
    );
    assert_eq!(
        admin.cmd(&["CLIENT", "UNPAUSE", "now"]),
        Reply::Error("ERR wrong number of arguments for 'client|unpause' command".into())
    );
    let started = Instant::now();
    assert_eq!(admin.cmd(&["CLIENT", "PAUSE", "400"]), ok());
    let mut c = srv.raw();
    // Even PING, and even the pausing connection's next command.
    assert_eq!(c.cmd(&["PING"]), Reply::Simple("PONG".into()));
    assert_eq!(admin.cmd(&["GET", "k"]), Reply::Null);
    assert!(started.elapsed() >= Duration::from_millis(400), "{:?}", started.elapsed());
}

#[test]
fn a_pause_given_in_a_transaction_starts_after_it() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    assert_eq!(c.cmd(&["MULTI"]), ok());
    for args in
        [&["SET", "a", "1"][..], &["CLIENT", "PAUSE", "100000", "WRITE"], &["SET", "b", "2"]]
    {
        assert_eq!(c.cmd(args), Reply::Simple("QUEUED".into()));
    }
    assert_eq!(c.cmd(&["EXEC"]), Reply::Array(vec![ok(), ok(), ok()]));
    let mut w = srv.raw();
    send(&mut w, &["SET", "c", "3"]);
    wait_blocked(&mut c, 1);
    assert_eq!(
        c.cmd(&["MGET", "a", "b", "c"]),
        Reply::Array(vec![Reply::bulk("1"), Reply::bulk("2"), Reply::Null])
    );
    assert_eq!(c.cmd(&["CLIENT", "UNPAUSE"]), ok());
    assert_eq!(w.read(), ok());
}

#[test]
fn active_expiry_waits_for_the_pause() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    let before = expired_keys(&mut c);
    assert_eq!(c.cmd(&["MULTI"]), ok());
    assert_eq!(c.cmd(&["SET", "x", "1", "PX", "10"]), Reply::Simple("QUEUED".into()));
    assert_eq!(c.cmd(&["CLIENT", "PAUSE", "100000", "WRITE"]), Reply::Simple("QUEUED".into()));
    assert_eq!(c.cmd(&["EXEC"]), Reply::Array(vec![ok(), ok()]));
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(c.cmd(&["GET", "x"]), Reply::Null, "expired all the same");
    assert_eq!(expired_keys(&mut c), before, "no expiry ran during the pause");
    assert_eq!(c.cmd(&["CLIENT", "UNPAUSE"]), ok());
    let deadline = Instant::now() + Duration::from_secs(10);
    while expired_keys(&mut c) == before {
        assert!(Instant::now() < deadline, "the expiry never ran after the pause");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_held_command_whose_client_went_away_never_runs() {
    let srv = Server::start(&[]);
    let mut admin = srv.raw();
    assert_eq!(admin.cmd(&["CLIENT", "PAUSE", "100000", "WRITE"]), ok());
    let mut c = srv.raw();
    send(&mut c, &["SET", "gone", "1"]);
    wait_blocked(&mut admin, 1);
    drop(c);
    let deadline = Instant::now() + Duration::from_secs(10);
    while blocked_clients(&mut admin) != 0 {
        assert!(Instant::now() < deadline, "the closed connection still waits");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(admin.cmd(&["CLIENT", "UNPAUSE"]), ok());
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(admin.cmd(&["GET", "gone"]), Reply::Null);
}

/// A command that meets an expired key deletes it at once and counts it in `expired_keys`
/// (Redis's lazy expiry), except during a pause, when it is left in place and reads as
/// absent.
#[test]
fn a_command_meeting_an_expired_key_deletes_and_counts_it_unless_paused() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    // Keys before it in the expiry task's walk: the task is far from it for a while.
    for chunk in 0..4 {
        let mut args = vec!["MSET".to_string()];
        for i in 0..500 {
            args.push(format!("a{:05}", chunk * 500 + i));
            args.push("v".into());
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        assert_eq!(c.cmd(&args), ok());
    }
    let before = expired_keys(&mut c);
    // Paused well before the key's time is out, so the active expiry (which the pause holds
    // too) cannot have taken it first: it expires while paused. (Set to expire at once and
    // paused after, it was at times taken by the expiry task's tick in between.)
    assert_eq!(c.cmd(&["SET", "zz", "1", "PX", "50"]), ok());
    assert_eq!(c.cmd(&["CLIENT", "PAUSE", "100000", "WRITE"]), ok());
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(c.cmd(&["GET", "zz"]), Reply::Null);
    assert_eq!(expired_keys(&mut c), before, "held during the pause");
    assert_eq!(c.cmd(&["CLIENT", "UNPAUSE"]), ok());
    assert_eq!(c.cmd(&["GET", "zz"]), Reply::Null);
    assert_eq!(expired_keys(&mut c), before + 1, "deleted and counted by the GET");
    assert_eq!(c.cmd(&["CONFIG", "RESETSTAT"]), ok());
    assert_eq!(expired_keys(&mut c), 0);
}
