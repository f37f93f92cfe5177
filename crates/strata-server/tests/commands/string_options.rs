//! SET's options (GET, NX/XX, KEEPTTL, EX/PX/EXAT/PXAT) and GETEX, with Redis 7.0's exact
//! replies and errors, including the order in which Redis checks them.

use crate::common::{Raw, Reply, Server};
use std::time::{SystemTime, UNIX_EPOCH};

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
const SYNTAX: &str = "ERR syntax error";
const NOT_INT: &str = "ERR value is not an integer or out of range";

fn ok() -> Reply {
    Reply::Simple("OK".into())
}

fn bulk(s: &str) -> Reply {
    Reply::bulk(s)
}

fn err(s: &str) -> Reply {
    Reply::Error(s.into())
}

fn now_s() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

fn int(c: &mut Raw, args: &[&str]) -> i64 {
    match c.cmd(args) {
        Reply::Int(n) => n,
        other => panic!("{args:?}: {other:?}"),
    }
}

#[test]
fn set_options_combine_and_fail_as_redis_does() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    assert_eq!(c.cmd(&["SET", "k", "v1", "GET"]), Reply::Null);
    assert_eq!(c.cmd(&["SET", "k", "v2", "GET"]), bulk("v1"));
    // NX with GET on an existing key: the old value, nothing written.
    assert_eq!(c.cmd(&["SET", "k", "v3", "NX", "GET"]), bulk("v2"));
    assert_eq!(c.cmd(&["GET", "k"]), bulk("v2"));
    assert_eq!(c.cmd(&["SET", "absent", "v", "XX", "GET"]), Reply::Null);
    assert_eq!(c.cmd(&["EXISTS", "absent"]), Reply::Int(0));
    // GET needs a string; without GET, SET replaces a key of any type.
    c.cmd(&["RPUSH", "l", "a"]);
    assert_eq!(c.cmd(&["SET", "l", "v", "GET"]), err(WRONGTYPE));
    assert_eq!(c.cmd(&["TYPE", "l"]), Reply::Simple("list".into()));
    assert_eq!(c.cmd(&["SET", "l", "v"]), ok());
    assert_eq!(c.cmd(&["TYPE", "l"]), Reply::Simple("string".into()));

    // EXAT, PXAT and KEEPTTL.
    let at = (now_s() + 100).to_string();
    assert_eq!(c.cmd(&["SET", "t", "v", "EXAT", &at]), ok());
    assert!((98..=100).contains(&int(&mut c, &["TTL", "t"])));
    let pat = ((now_s() + 200) * 1000).to_string();
    assert_eq!(c.cmd(&["SET", "t", "v", "PXAT", &pat]), ok());
    assert!((198..=200).contains(&int(&mut c, &["TTL", "t"])));
    assert_eq!(c.cmd(&["SET", "t", "w", "KEEPTTL"]), ok());
    assert!((198..=200).contains(&int(&mut c, &["TTL", "t"])));
    assert_eq!(c.cmd(&["SET", "t", "w", "KEEPTTL", "GET", "XX"]), bulk("w"));
    assert!((198..=200).contains(&int(&mut c, &["TTL", "t"])));
    assert_eq!(c.cmd(&["SET", "t", "x"]), ok());
    assert_eq!(c.cmd(&["TTL", "t"]), Reply::Int(-1));
    // A time in the past: accepted, and the key is gone.
    assert_eq!(c.cmd(&["SET", "t", "v", "EXAT", "1"]), ok());
    assert_eq!(c.cmd(&["EXISTS", "t"]), Reply::Int(0));
    // The same expiry option twice: the last one counts.
    assert_eq!(c.cmd(&["SET", "t", "v", "EX", "10", "EX", "300"]), ok());
    assert!((298..=300).contains(&int(&mut c, &["TTL", "t"])));
    assert_eq!(c.cmd(&["SET", "t", "v", "PXAT", &pat, "PXAT", &pat]), ok());

    for bad in [
        &["EX", "10", "PX", "100"][..],
        &["PX", "100", "EXAT", "1"],
        &["KEEPTTL", "EX", "10"],
        &["EX", "10", "KEEPTTL"],
        &["NX", "XX"],
        &["XX", "NX"],
        &["EX"],
        &["PERSIST"],
        &["GETX"],
        // Every option is read before the time is checked.
        &["EX", "-1", "FOO"],
    ] {
        let mut args = vec!["SET", "k", "v"];
        args.extend_from_slice(bad);
        assert_eq!(c.cmd(&args), err(SYNTAX), "{bad:?}");
    }
    let invalid = err("ERR invalid expire time in 'set' command");
    for (opt, v) in [
        ("EX", "0"),
        ("EX", "-1"),
        ("PX", "0"),
        ("EXAT", "0"),
        ("PXAT", "-5"),
        ("EX", "9223372036854775807"),
        ("PX", "9223372036854775807"),
    ] {
        assert_eq!(c.cmd(&["SET", "k", "v", opt, v]), invalid, "{opt} {v}");
    }
    assert_eq!(c.cmd(&["SET", "k", "v", "PXAT", "9223372036854775807"]), ok());
    assert_eq!(c.cmd(&["SET", "k", "v", "EX", "ten"]), err(NOT_INT));
    // The time is checked before the key's type.
    assert_eq!(c.cmd(&["RPUSH", "l2", "a"]), Reply::Int(1));
    assert_eq!(
        c.cmd(&["SET", "l2", "v", "GET", "EX", "0"]),
        err("ERR invalid expire time in 'set' command")
    );
    assert_eq!(c.cmd(&["SET", "k"]), err("ERR wrong number of arguments for 'set' command"));
}

#[test]
fn getex_reads_and_changes_the_expiry() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    c.cmd(&["SET", "k", "v"]);
    assert_eq!(c.cmd(&["GETEX", "k"]), bulk("v"));
    assert_eq!(c.cmd(&["TTL", "k"]), Reply::Int(-1));
    assert_eq!(c.cmd(&["GETEX", "k", "EX", "100"]), bulk("v"));
    assert!((98..=100).contains(&int(&mut c, &["TTL", "k"])));
    assert_eq!(c.cmd(&["GETEX", "k"]), bulk("v"));
    assert!((98..=100).contains(&int(&mut c, &["TTL", "k"])));
    assert_eq!(c.cmd(&["GETEX", "k", "PERSIST"]), bulk("v"));
    assert_eq!(c.cmd(&["TTL", "k"]), Reply::Int(-1));
    assert_eq!(c.cmd(&["GETEX", "k", "PX", "50000"]), bulk("v"));
    let pttl = int(&mut c, &["PTTL", "k"]);
    assert!(pttl > 48_000 && pttl <= 50_000, "{pttl}");
    let at = (now_s() + 300).to_string();
    assert_eq!(c.cmd(&["GETEX", "k", "EXAT", &at]), bulk("v"));
    assert!((298..=300).contains(&int(&mut c, &["TTL", "k"])));
    let pat = ((now_s() + 400) * 1000).to_string();
    assert_eq!(c.cmd(&["GETEX", "k", "PXAT", &pat]), bulk("v"));
    assert!((398..=400).contains(&int(&mut c, &["TTL", "k"])));
    assert_eq!(c.cmd(&["GETEX", "k", "PERSIST", "PERSIST"]), bulk("v"));
    assert_eq!(c.cmd(&["TTL", "k"]), Reply::Int(-1));
    // An absolute time in the past deletes the key after replying with its value.
    assert_eq!(c.cmd(&["GETEX", "k", "EXAT", "1"]), bulk("v"));
    assert_eq!(c.cmd(&["EXISTS", "k"]), Reply::Int(0));
    assert_eq!(c.cmd(&["GETEX", "k"]), Reply::Null);
    // The time is checked only once the key is found.
    assert_eq!(c.cmd(&["GETEX", "k", "EX", "-1"]), Reply::Null);
    c.cmd(&["SET", "k", "v"]);
    assert_eq!(
        c.cmd(&["GETEX", "k", "EX", "-1"]),
        err("ERR invalid expire time in 'getex' command")
    );
    assert_eq!(c.cmd(&["GETEX", "k", "EX", "x"]), err(NOT_INT));
    for bad in [
        &["EX", "10", "PERSIST"][..],
        &["PERSIST", "EX", "10"],
        &["EX", "10", "PX", "10"],
        &["KEEPTTL"],
        &["NX"],
        &["GET"],
        &["EX"],
    ] {
        let mut args = vec!["GETEX", "k"];
        args.extend_from_slice(bad);
        assert_eq!(c.cmd(&args), err(SYNTAX), "{bad:?}");
    }
    c.cmd(&["RPUSH", "l", "a"]);
    assert_eq!(c.cmd(&["GETEX", "l", "PERSIST"]), err(WRONGTYPE));
}
