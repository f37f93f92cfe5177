//! CLIENT TRACKING (client-side caching), as Redis 7.0's unit/tracking runs it: a
//! default-mode client is told once of a change to a key it read, after the reply of the
//! command that changed it when that was its own (never with NOLOOP); BCAST gathers a
//! prefix's keys in one message per command; REDIRECT sends the messages to another
//! connection (RESP3 pushes, or `__redis__:invalidate` messages for a RESP2 subscriber), and a
//! client whose target left is told so; OPTIN/OPTOUT with CLIENT CACHING; a script's declared
//! keys are tracked only when it reads; FLUSHALL tells everyone with a null; expired keys are
//! told; the table's limit evicts with a message; Redis's refusals and reports.

use std::time::Duration;

use crate::common::{Raw, Reply, Server};

fn ok() -> Reply {
    Reply::Simple("OK".into())
}

fn push(kind: &str, keys: &[&str]) -> Reply {
    let keys = keys.iter().map(|k| Reply::bulk(k)).collect();
    Reply::Array(vec![Reply::bulk(kind), Reply::Array(keys)])
}

fn resp3(srv: &Server) -> Raw {
    let mut c = srv.raw();
    assert!(matches!(c.cmd(&["HELLO", "3"]), Reply::Map(_)));
    c
}

/// The next reply of `c` is PONG: nothing was pushed before it.
fn nothing_pushed(c: &mut Raw) {
    assert_eq!(c.cmd(&["PING"]), Reply::Simple("PONG".into()));
}

fn id_of(c: &mut Raw) -> String {
    let Reply::Int(id) = c.cmd(&["CLIENT", "ID"]) else { panic!() };
    id.to_string()
}

fn info_field(c: &mut Raw, section: &str, field: &str) -> i64 {
    crate::common::info_field(c, section, field).parse().unwrap()
}

#[test]
fn a_read_key_is_told_once_after_the_reply_and_noloop_keeps_quiet_on_own_changes() {
    let srv = Server::start(&[]);
    let mut r = resp3(&srv);
    let mut w = srv.raw();
    assert_eq!(r.cmd(&["CLIENT", "TRACKING", "on"]), ok());
    assert_eq!(w.cmd(&["SET", "k", "1"]), ok());
    assert_eq!(w.cmd(&["SET", "unread", "1"]), ok());
    assert_eq!(r.cmd(&["MGET", "k", "absent"]), Reply::Array(vec![Reply::bulk("1"), Reply::Null]));
    assert_eq!(w.cmd(&["SET", "k", "2"]), ok());
    assert_eq!(w.cmd(&["SET", "unread", "2"]), ok());
    assert_eq!(w.cmd(&["SET", "absent", "2"]), ok(), "a missing key read is tracked too");
    assert_eq!(r.read(), push("invalidate", &["k"]));
    assert_eq!(r.read(), push("invalidate", &["absent"]));
    assert_eq!(w.cmd(&["SET", "k", "3"]), ok());
    nothing_pushed(&mut r); // told once until read again
                            // Its own change: the message follows the change's reply.
    assert_eq!(r.cmd(&["HSET", "h", "f", "1"]), Reply::Int(1));
    assert_eq!(r.cmd(&["HGET", "h", "f"]), Reply::bulk("1"));
    assert_eq!(r.cmd(&["HDEL", "h", "f"]), Reply::Int(1));
    assert_eq!(r.read(), push("invalidate", &["h"]));
    // NOLOOP: not told of its own changes, still of others'.
    assert_eq!(r.cmd(&["CLIENT", "TRACKING", "on", "NOLOOP"]), ok());
    assert_eq!(r.cmd(&["MGET", "k", "j"]), Reply::Array(vec![Reply::bulk("3"), Reply::Null]));
    assert_eq!(r.cmd(&["SET", "k", "4"]), ok());
    nothing_pushed(&mut r);
    assert_eq!(w.cmd(&["SET", "j", "1"]), ok());
    assert_eq!(r.read(), push("invalidate", &["j"]));
    // Inside a transaction the message follows EXEC's reply.
    assert_eq!(r.cmd(&["CLIENT", "TRACKING", "off"]), ok());
    assert_eq!(r.cmd(&["CLIENT", "TRACKING", "on"]), ok());
    assert_eq!(r.cmd(&["GET", "k"]), Reply::bulk("4"));
    assert_eq!(r.cmd(&["MULTI"]), ok());
    assert_eq!(r.cmd(&["INCR", "k"]), Reply::Simple("QUEUED".into()));
    assert_eq!(r.cmd(&["EXEC"]), Reply::Array(vec![Reply::Int(5)]));
    assert_eq!(r.read(), push("invalidate", &["k"]));
    assert_eq!(info_field(&mut w, "clients", "tracking_clients"), 1);
}

/// A transaction's own reads and writes of a key, in Redis's order (its writes told as they
/// happen): written then read, the key stays tracked and its client is not told (Redis's
/// "Tracking invalidation message is not interleaved with multiple keys response"); read
/// then written, the client is told after EXEC's reply and no longer tracks it; read,
/// written and read again, told and still tracked. Another tracking client hears of each.
#[test]
fn a_transactions_client_is_told_of_its_writes_as_its_reads_order_them() {
    let srv = Server::start(&[]);
    let mut r = resp3(&srv);
    let mut other = resp3(&srv);
    let mut w = srv.raw();
    assert_eq!(r.cmd(&["CLIENT", "TRACKING", "on"]), ok());
    assert_eq!(other.cmd(&["CLIENT", "TRACKING", "on"]), ok());
    assert_eq!(w.cmd(&["MSET", "rw", "0", "rwr", "0"]), ok());
    let read = Reply::Array(vec![Reply::Null, Reply::bulk("0"), Reply::bulk("0")]);
    assert_eq!(other.cmd(&["MGET", "wr", "rw", "rwr"]), read);
    r.multi(&[
        &["SET", "wr", "1"],
        &["GET", "wr"],
        &["GET", "rw"],
        &["SET", "rw", "1"],
        &["GET", "rwr"],
        &["INCR", "rwr"],
        &["GET", "rwr"],
    ]);
    let replies = vec![
        ok(),
        Reply::bulk("1"),
        Reply::bulk("0"),
        ok(),
        Reply::bulk("0"),
        Reply::Int(1),
        Reply::bulk("1"),
    ];
    assert_eq!(r.cmd(&["EXEC"]), Reply::Array(replies));
    assert_eq!(r.read(), push("invalidate", &["rw"]));
    assert_eq!(r.read(), push("invalidate", &["rwr"]));
    nothing_pushed(&mut r);
    for k in ["wr", "rw", "rwr"] {
        assert_eq!(other.read(), push("invalidate", &[k]));
    }
    // Still tracked: wr and rwr; no longer: rw.
    assert_eq!(w.cmd(&["MSET", "wr", "2", "rw", "2", "rwr", "2"]), ok());
    assert_eq!(r.read(), push("invalidate", &["wr"]));
    assert_eq!(r.read(), push("invalidate", &["rwr"]));
    nothing_pushed(&mut r);
}

#[test]
fn bcast_and_redirect_to_a_resp2_subscriber_gather_a_prefixes_keys_per_command() {
    let srv = Server::start(&[]);
    let mut rd = srv.raw();
    let rd_id = id_of(&mut rd);
    rd.send_raw(&Raw::encode(&[b"SUBSCRIBE".as_slice(), b"__redis__:invalidate"]));
    assert!(matches!(rd.read(), Reply::Array(_)));
    let mut r = srv.raw();
    let mut w = srv.raw();
    let on = ["CLIENT", "TRACKING", "on", "BCAST", "REDIRECT", &rd_id, "PREFIX", "a:"];
    assert_eq!(r.cmd(&[&on[..], &["PREFIX", "b:"]].concat()), ok());
    assert_eq!(w.cmd(&["MULTI"]), ok());
    for k in ["a:2", "a:1", "b:1", "c:1", "a:1"] {
        assert_eq!(w.cmd(&["INCR", k]), Reply::Simple("QUEUED".into()));
    }
    assert!(matches!(w.cmd(&["EXEC"]), Reply::Array(_)));
    let message = |keys: &[&str]| {
        let keys = keys.iter().map(|k| Reply::bulk(k)).collect();
        Reply::Array(vec![
            Reply::bulk("message"),
            Reply::bulk("__redis__:invalidate"),
            Reply::Array(keys),
        ])
    };
    assert_eq!(rd.read(), message(&["a:1", "a:2"]));
    assert_eq!(rd.read(), message(&["b:1"]));
    // Prefixes add up; the client's own changes are told too (no NOLOOP).
    assert_eq!(
        r.cmd(&["CLIENT", "TRACKING", "on", "BCAST", "REDIRECT", &rd_id, "PREFIX", "c:"]),
        ok()
    );
    assert_eq!(r.cmd(&["SET", "c:9", "x"]), ok());
    assert_eq!(rd.read(), message(&["c:9"]));
    assert_eq!(info_field(&mut w, "stats", "tracking_total_prefixes"), 3);
    // A key whose time is up is told when the server deletes it.
    assert_eq!(w.cmd(&["SET", "a:short", "x", "PX", "1"]), ok());
    assert_eq!(rd.read(), message(&["a:short"]), "the SET itself");
    assert_eq!(rd.read(), message(&["a:short"]), "its expiry");
}

#[test]
fn optin_optout_and_scripts_track_only_what_they_say() {
    let srv = Server::start(&[]);
    let mut r = resp3(&srv);
    let mut w = srv.raw();
    assert_eq!(w.cmd(&["MSET", "k1", "1", "k2", "1", "k3", "1"]), ok());
    assert_eq!(r.cmd(&["CLIENT", "TRACKING", "on", "OPTIN"]), ok());
    assert_eq!(r.cmd(&["GET", "k1"]), Reply::bulk("1"));
    assert_eq!(r.cmd(&["CLIENT", "CACHING", "yes"]), ok());
    assert_eq!(r.cmd(&["GET", "k2"]), Reply::bulk("1"));
    assert_eq!(r.cmd(&["GET", "k3"]), Reply::bulk("1"), "CACHING counts for one command");
    assert_eq!(w.cmd(&["MSET", "k1", "2", "k2", "2", "k3", "2"]), ok());
    assert_eq!(r.read(), push("invalidate", &["k2"]));
    nothing_pushed(&mut r);
    assert_eq!(r.cmd(&["CLIENT", "TRACKING", "off"]), ok());
    assert_eq!(r.cmd(&["CLIENT", "TRACKING", "on", "OPTOUT"]), ok());
    assert_eq!(r.cmd(&["CLIENT", "CACHING", "no"]), ok());
    assert_eq!(r.cmd(&["GET", "k1"]), Reply::bulk("2"));
    assert_eq!(r.cmd(&["GET", "k2"]), Reply::bulk("2"));
    assert_eq!(w.cmd(&["MSET", "k1", "3", "k2", "3"]), ok());
    assert_eq!(r.read(), push("invalidate", &["k2"]));
    nothing_pushed(&mut r);
    // Scripts: the declared keys, when a command the script calls reads.
    assert_eq!(r.cmd(&["CLIENT", "TRACKING", "off"]), ok());
    assert_eq!(r.cmd(&["CLIENT", "TRACKING", "on"]), ok());
    let write = "redis.call('set', 'k3', 'x')";
    assert_eq!(r.cmd(&["EVAL", write, "2", "k1", "k2"]), Reply::Null);
    assert_eq!(w.cmd(&["MSET", "k1", "4", "k2", "4"]), ok());
    nothing_pushed(&mut r);
    let read = "redis.call('get', 'k3')";
    assert_eq!(r.cmd(&["EVAL", read, "2", "k1", "k2"]), Reply::Null);
    assert_eq!(w.cmd(&["MSET", "k2", "5", "k1", "5"]), ok());
    assert_eq!(r.read(), push("invalidate", &["k2"]));
    assert_eq!(r.read(), push("invalidate", &["k1"]));
    nothing_pushed(&mut r);
}

#[test]
fn a_flush_tells_everyone_and_a_redirect_target_that_left_is_reported() {
    let srv = Server::start(&[]);
    let mut target = resp3(&srv);
    let target_id = id_of(&mut target);
    let mut r = resp3(&srv);
    let mut w = srv.raw();
    assert_eq!(r.cmd(&["CLIENT", "TRACKING", "on", "REDIRECT", &target_id]), ok());
    assert_eq!(r.cmd(&["CLIENT", "GETREDIR"]), Reply::Int(target_id.parse().unwrap()));
    assert_eq!(r.cmd(&["GET", "k"]), Reply::Null);
    assert_eq!(info_field(&mut w, "stats", "tracking_total_keys"), 1);
    assert_eq!(w.cmd(&["FLUSHALL"]), ok());
    assert_eq!(target.read(), Reply::Array(vec![Reply::bulk("invalidate"), Reply::Null]));
    assert_eq!(info_field(&mut w, "stats", "tracking_total_keys"), 0);
    assert_eq!(r.cmd(&["GET", "k"]), Reply::Null);
    drop(target);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(w.cmd(&["SET", "k", "1"]), ok());
    let broken = Reply::Array(vec![
        Reply::bulk("tracking-redir-broken"),
        Reply::Int(target_id.parse().unwrap()),
    ]);
    assert_eq!(r.read(), broken);
    let Reply::Map(info) = r.cmd(&["CLIENT", "TRACKINGINFO"]) else { panic!() };
    let flags = Reply::Set(vec![Reply::bulk("on"), Reply::bulk("broken_redirect")]);
    assert_eq!(info[0], (Reply::bulk("flags"), flags));
    let Reply::Verbatim(line) = r.cmd(&["CLIENT", "INFO"]) else { panic!() };
    assert!(
        line.contains(" flags=tR ") && line.contains(&format!(" redir={target_id} ")),
        "{line}"
    );
    // RESET turns tracking off.
    assert_eq!(r.cmd(&["RESET"]), Reply::Simple("RESET".into()));
    assert_eq!(r.cmd(&["CLIENT", "GETREDIR"]), Reply::Int(-1));
    assert_eq!(info_field(&mut w, "clients", "tracking_clients"), 0);
}

#[test]
fn the_tables_limit_evicts_with_a_message_and_bad_options_get_redis_errors() {
    let srv = Server::start(&[]);
    let mut r = resp3(&srv);
    let mut w = srv.raw();
    assert_eq!(r.cmd(&["CLIENT", "TRACKING", "on", "NOLOOP"]), ok());
    assert_eq!(r.cmd(&["MGET", "a", "b", "c"]), Reply::Array(vec![Reply::Null; 3]));
    assert_eq!(w.cmd(&["CONFIG", "SET", "tracking-table-max-keys", "1"]), ok());
    for _ in 0..2 {
        let Reply::Array(m) = r.read() else { panic!() };
        assert_eq!(m[0], Reply::bulk("invalidate"), "{m:?}");
    }
    assert_eq!(info_field(&mut w, "stats", "tracking_total_keys"), 1);
    assert_eq!(info_field(&mut w, "stats", "tracking_total_items"), 1);

    let mut c = srv.raw();
    let err = |c: &mut Raw, args: &[&str]| match c.cmd(args) {
        Reply::Error(e) => e,
        other => panic!("{args:?}: {other:?}"),
    };
    // Regression: a limit below 0 was accepted and taken as 0 (no limit). Redis's replies
    // (checked against redis-server 7.0.15), and the limit stays.
    let failed = "ERR CONFIG SET failed (possibly related to argument 'tracking-table-max-keys')";
    let not_int = format!("{failed} - argument couldn't be parsed into an integer");
    assert_eq!(err(&mut w, &["CONFIG", "SET", "tracking-table-max-keys", "abc"]), not_int);
    assert_eq!(
        err(&mut w, &["CONFIG", "SET", "tracking-table-max-keys", "-1"]),
        format!("{failed} - argument must be between 0 and 9223372036854775807 inclusive")
    );
    let limit = Reply::Array(vec![Reply::bulk("tracking-table-max-keys"), Reply::bulk("1")]);
    assert_eq!(w.cmd(&["CONFIG", "GET", "tracking-table-max-keys"]), limit);
    assert_eq!(r.cmd(&["MGET", "d", "e"]), Reply::Array(vec![Reply::Null; 2]));
    for _ in 0..2 {
        let Reply::Array(m) = r.read() else { panic!() };
        assert_eq!(m[0], Reply::bulk("invalidate"), "{m:?}: the limit of 1 holds");
    }
    assert_eq!(c.cmd(&["CLIENT", "GETREDIR"]), Reply::Int(-1));
    assert!(err(&mut c, &["CLIENT", "TRACKING", "on", "PREFIX", "a"])
        .starts_with("ERR PREFIX option requires BCAST"));
    assert!(err(&mut c, &["CLIENT", "TRACKING", "on", "OPTIN", "OPTOUT"])
        .starts_with("ERR You can't specify both"));
    assert!(err(&mut c, &["CLIENT", "TRACKING", "on", "BCAST", "OPTIN"])
        .starts_with("ERR OPTIN and OPTOUT are not compatible with BCAST"));
    assert!(err(&mut c, &["CLIENT", "TRACKING", "on", "REDIRECT", "999999"])
        .starts_with("ERR The client ID you want redirect to does not exist"));
    let r_id = id_of(&mut r);
    let twice = ["CLIENT", "TRACKING", "on", "REDIRECT", &r_id, "REDIRECT", &r_id];
    assert!(err(&mut c, &twice).starts_with("ERR A client can only redirect"));
    assert_eq!(err(&mut c, &["CLIENT", "TRACKING", "maybe"]), "ERR syntax error");
    assert!(err(&mut c, &["CLIENT", "CACHING", "yes"])
        .starts_with("ERR CLIENT CACHING can be called only"));
    assert_eq!(
        err(&mut c, &["CLIENT", "TRACKING"]),
        "ERR wrong number of arguments for 'client|tracking' command"
    );
    assert!(err(
        &mut c,
        &["CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "foobar", "PREFIX", "foo"]
    )
    .starts_with("ERR Prefix 'foobar' overlaps with another provided prefix 'foo'"));
    assert_eq!(
        c.cmd(&["CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "foo", "PREFIX", "bar"]),
        ok()
    );
    assert!(err(&mut c, &["CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "fo"])
        .starts_with("ERR Prefix 'fo' overlaps with an existing prefix 'foo'"));
    assert!(
        err(&mut c, &["CLIENT", "TRACKING", "on"]).starts_with("ERR You can't switch BCAST mode")
    );
    assert!(err(&mut c, &["CLIENT", "CACHING", "yes"])
        .starts_with("ERR CLIENT CACHING YES is only valid"));
    assert_eq!(
        c.cmd(&["CLIENT", "TRACKINGINFO"]),
        Reply::Array(vec![
            Reply::bulk("flags"),
            Reply::Array(vec![Reply::bulk("on"), Reply::bulk("bcast")]),
            Reply::bulk("redirect"),
            Reply::Int(0),
            Reply::bulk("prefixes"),
            Reply::Array(vec![Reply::bulk("bar"), Reply::bulk("foo")]),
        ])
    );
}
