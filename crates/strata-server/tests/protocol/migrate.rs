//! MIGRATE between two servers: keys moved or copied with their TTL, to another database,
//! through AUTH and AUTH2; the target's refusals (BUSYKEY, a wrong password) as Redis
//! reports them, the keys then kept; NOKEY, syntax errors and an unreachable target.

use crate::common::{Raw, Reply, Server};

fn ok() -> Reply {
    Reply::Simple("OK".into())
}

fn err(s: &str) -> Reply {
    Reply::Error(s.into())
}

fn migrate(c: &mut Raw, to: &Server, rest: &[&str]) -> Reply {
    let port = to.port.to_string();
    let mut line = vec!["MIGRATE", "127.0.0.1", &port];
    line.extend_from_slice(rest);
    c.cmd(&line)
}

#[test]
fn migrate_moves_or_copies_keys_with_their_ttl() {
    let (a, b) = (Server::start(&[]), Server::start(&[]));
    let (mut ca, mut cb) = (a.raw(), b.raw());
    assert_eq!(ca.cmd(&["SET", "k1", "v1", "PX", "100000"]), ok());
    assert_eq!(ca.cmd(&["RPUSH", "l", "1", "2", "3"]), Reply::Int(3));
    assert_eq!(ca.cmd(&["HSET", "h", "f", "v"]), Reply::Int(1));

    assert_eq!(migrate(&mut ca, &b, &["k1", "0", "1000"]), ok());
    assert_eq!(ca.cmd(&["EXISTS", "k1"]), Reply::Int(0), "moved");
    assert_eq!(cb.cmd(&["GET", "k1"]), Reply::bulk("v1"));
    let Reply::Int(ttl) = cb.cmd(&["PTTL", "k1"]) else { panic!() };
    assert!((1..=100_000).contains(&ttl), "{ttl}");

    assert_eq!(migrate(&mut ca, &b, &["", "0", "1000", "COPY", "KEYS", "l", "h", "nosuch"]), ok());
    assert_eq!(ca.cmd(&["EXISTS", "l", "h"]), Reply::Int(2), "copied");
    assert_eq!(
        cb.cmd(&["LRANGE", "l", "0", "-1"]),
        Reply::Array(vec![Reply::bulk("1"), Reply::bulk("2"), Reply::bulk("3")])
    );
    assert_eq!(cb.cmd(&["HGET", "h", "f"]), Reply::bulk("v"));
    assert_eq!(cb.cmd(&["PTTL", "l"]), Reply::Int(-1));

    // The target refuses a key it has; REPLACE overwrites it.
    assert_eq!(ca.cmd(&["RPUSH", "l", "4"]), Reply::Int(4));
    let busy =
        err("ERR Target instance replied with error: BUSYKEY Target key name already exists.");
    assert_eq!(migrate(&mut ca, &b, &["", "0", "1000", "KEYS", "l"]), busy);
    assert_eq!(ca.cmd(&["LLEN", "l"]), Reply::Int(4), "kept");
    assert_eq!(migrate(&mut ca, &b, &["", "0", "1000", "REPLACE", "KEYS", "l"]), ok());
    assert_eq!(ca.cmd(&["EXISTS", "l"]), Reply::Int(0));
    assert_eq!(cb.cmd(&["LLEN", "l"]), Reply::Int(4));

    // Another database of the target.
    assert_eq!(migrate(&mut ca, &b, &["h", "3", "1000"]), ok());
    assert_eq!(cb.cmd(&["SELECT", "3"]), ok());
    assert_eq!(cb.cmd(&["HGET", "h", "f"]), Reply::bulk("v"));

    assert_eq!(migrate(&mut ca, &b, &["nosuch", "0", "1000"]), Reply::Simple("NOKEY".into()));
    assert_eq!(migrate(&mut ca, &b, &["k", "0", "1000", "BOGUS"]), err("ERR syntax error"));
    assert_eq!(
        migrate(&mut ca, &b, &["k", "0", "1000", "KEYS", "x"]),
        err("ERR When using MIGRATE KEYS option, the key argument must be set to the empty string")
    );
    assert_eq!(
        migrate(&mut ca, &b, &["k", "x", "1000"]),
        err("ERR value is not an integer or out of range")
    );
}

#[test]
fn migrate_authenticates_and_reports_what_the_target_refuses() {
    let (a, b) = (Server::start(&[]), Server::start(&["--requirepass", "pw"]));
    let mut ca = a.raw();
    assert_eq!(ca.cmd(&["SET", "k", "v"]), ok());
    let noauth = err("ERR Target instance replied with error: NOAUTH Authentication required.");
    assert_eq!(migrate(&mut ca, &b, &["k", "0", "1000"]), noauth);
    let wrong =
        err("ERR Target instance replied with error: WRONGPASS invalid username-password pair or \
         user is disabled.");
    assert_eq!(migrate(&mut ca, &b, &["k", "0", "1000", "AUTH", "nope"]), wrong);
    assert_eq!(ca.cmd(&["EXISTS", "k"]), Reply::Int(1), "kept");
    assert_eq!(migrate(&mut ca, &b, &["k", "0", "1000", "COPY", "AUTH2", "default", "pw"]), ok());
    assert_eq!(
        migrate(&mut ca, &b, &["", "0", "1000", "REPLACE", "AUTH", "pw", "KEYS", "k"]),
        ok()
    );
    assert_eq!(ca.cmd(&["EXISTS", "k"]), Reply::Int(0));
    let mut cb = b.raw();
    assert_eq!(cb.cmd(&["AUTH", "pw"]), ok());
    assert_eq!(cb.cmd(&["GET", "k"]), Reply::bulk("v"));

    // Nothing listens on port 1.
    assert_eq!(ca.cmd(&["SET", "k", "v"]), ok());
    let line = ["MIGRATE", "127.0.0.1", "1", "k", "0", "200"];
    assert_eq!(ca.cmd(&line), err("IOERR error or timeout connecting to the client"));
    assert_eq!(ca.cmd(&["EXISTS", "k"]), Reply::Int(1));
    let keys =
        ["COMMAND", "GETKEYS", "MIGRATE", "h", "1", "", "0", "5000", "AUTH", "KEYS", "KEYS", "rw"];
    assert_eq!(ca.cmd(&keys), Reply::Array(vec![Reply::bulk("rw")]));
}
