//! RESP3 via HELLO 3: maps, nulls, doubles, sets; HELLO 2 goes back.

use crate::common::{Reply, Server};

#[test]
fn hello3_switches_reply_types() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    assert_eq!(c.cmd(&["GET", "nope"]), Reply::Null);
    match c.cmd(&["HELLO", "3"]) {
        Reply::Map(m) => {
            assert!(m.contains(&(Reply::bulk("proto"), Reply::Int(3))), "{m:?}");
            assert!(m.contains(&(Reply::bulk("server"), Reply::bulk("redis"))));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(c.cmd(&["GET", "nope"]), Reply::Null);
    c.cmd(&["HSET", "h", "a", "1", "b", "2"]);
    assert_eq!(
        c.cmd(&["HGETALL", "h"]),
        Reply::Map(vec![
            (Reply::bulk("a"), Reply::bulk("1")),
            (Reply::bulk("b"), Reply::bulk("2"))
        ])
    );
    c.cmd(&["ZADD", "z", "1.5", "m"]);
    assert_eq!(c.cmd(&["ZSCORE", "z", "m"]), Reply::Double("1.5".into()));
    assert_eq!(
        c.cmd(&["ZRANGE", "z", "0", "-1", "WITHSCORES"]),
        Reply::Array(vec![Reply::Array(vec![Reply::bulk("m"), Reply::Double("1.5".into())])])
    );
    c.cmd(&["SADD", "s", "x"]);
    assert_eq!(c.cmd(&["SMEMBERS", "s"]), Reply::Set(vec![Reply::bulk("x")]));
    assert!(matches!(c.cmd(&["INFO", "server"]), Reply::Verbatim(_)));
    // PUBSUB NUMSUB and SHARDNUMSUB stay flat arrays of channel, count, as redis-server 7.0's
    // (redis-py's cluster client failed on a map).
    for sub in ["NUMSUB", "SHARDNUMSUB"] {
        assert_eq!(
            c.cmd(&["PUBSUB", sub, "ch"]),
            Reply::Array(vec![Reply::bulk("ch"), Reply::Int(0)]),
            "{sub}"
        );
    }
    assert_eq!(c.cmd(&["HELLO", "4"]), Reply::Error("NOPROTO unsupported protocol version".into()));
    assert!(matches!(c.cmd(&["HELLO", "2"]), Reply::Array(_)));
    assert_eq!(c.cmd(&["ZSCORE", "z", "m"]), Reply::bulk("1.5"));
    assert!(matches!(c.cmd(&["HGETALL", "h"]), Reply::Array(v) if v.len() == 4));
}

#[test]
fn redis_crate_resp3() {
    let srv = Server::start(&[]);
    let url = format!("redis://127.0.0.1:{}/?protocol=resp3", srv.port);
    let mut c = redis::Client::open(url).unwrap().get_connection().unwrap();
    let _: () = redis::cmd("HSET").arg("h").arg("a").arg("1").query(&mut c).unwrap();
    let m: std::collections::HashMap<String, String> =
        redis::cmd("HGETALL").arg("h").query(&mut c).unwrap();
    assert_eq!(m["a"], "1");
}
