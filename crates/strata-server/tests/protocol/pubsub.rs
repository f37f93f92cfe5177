//! Pub/sub: SUBSCRIBE/PSUBSCRIBE confirmations, messages to channel and pattern subscribers
//! (RESP2 arrays, RESP3 pushes), the commands a subscribed RESP2 connection may run,
//! UNSUBSCRIBE forms, PUBSUB CHANNELS/NUMSUB/NUMPAT, sharded pub/sub (SSUBSCRIBE, SPUBLISH),
//! and a departed subscriber forgotten, as redis-server 7.0.15 answers.

use crate::common::{Raw, Reply, Server};

fn bulks(items: &[&str]) -> Vec<Reply> {
    items.iter().map(|s| Reply::bulk(s)).collect()
}

fn confirm(kind: &str, channel: &str, n: i64) -> Reply {
    let mut v = bulks(&[kind, channel]);
    v.push(Reply::Int(n));
    Reply::Array(v)
}

fn send(c: &mut Raw, args: &[&str]) {
    let a: Vec<&[u8]> = args.iter().map(|s| s.as_bytes()).collect();
    c.send_raw(&Raw::encode(&a));
}

#[test]
fn publish_reaches_channel_and_pattern_subscribers() {
    let srv = Server::start(&[]);
    let mut r = srv.raw();
    let (mut s1, mut s2) = (srv.raw(), srv.raw());
    send(&mut s1, &["SUBSCRIBE", "news", "sport"]);
    assert_eq!(s1.read(), confirm("subscribe", "news", 1));
    assert_eq!(s1.read(), confirm("subscribe", "sport", 2));
    send(&mut s2, &["PSUBSCRIBE", "n*"]);
    assert_eq!(s2.read(), confirm("psubscribe", "n*", 1));
    assert_eq!(r.cmd(&["PUBLISH", "news", "hello"]), Reply::Int(2));
    assert_eq!(r.cmd(&["PUBLISH", "weather", "rain"]), Reply::Int(0));
    assert_eq!(s1.read(), Reply::Array(bulks(&["message", "news", "hello"])));
    assert_eq!(s2.read(), Reply::Array(bulks(&["pmessage", "n*", "news", "hello"])));
    assert_eq!(r.cmd(&["PUBSUB", "CHANNELS"]), Reply::Array(bulks(&["news", "sport"])));
    assert_eq!(r.cmd(&["PUBSUB", "CHANNELS", "s*"]), Reply::Array(bulks(&["sport"])));
    assert_eq!(
        r.cmd(&["PUBSUB", "NUMSUB", "news", "none"]),
        Reply::Array(vec![Reply::bulk("news"), Reply::Int(1), Reply::bulk("none"), Reply::Int(0)])
    );
    assert_eq!(r.cmd(&["PUBSUB", "NUMPAT"]), Reply::Int(1));
    // A subscribed RESP2 connection runs only the subscription commands, PING and QUIT.
    send(&mut s1, &["GET", "x"]);
    assert_eq!(
        s1.read(),
        Reply::Error("ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context".into())
    );
    send(&mut s1, &["PING"]);
    assert_eq!(s1.read(), Reply::Array(bulks(&["pong", ""])));
    send(&mut s1, &["UNSUBSCRIBE"]);
    let (a, b) = (s1.read(), s1.read());
    assert_eq!([a, b], [confirm("unsubscribe", "news", 1), confirm("unsubscribe", "sport", 0)]);
    send(&mut s1, &["UNSUBSCRIBE"]);
    assert_eq!(
        s1.read(),
        Reply::Array(vec![Reply::bulk("unsubscribe"), Reply::Null, Reply::Int(0)])
    );
    assert_eq!(s1.cmd(&["SET", "x", "1"]), Reply::Simple("OK".into()), "no subscription left");
    // A subscriber that leaves is forgotten.
    drop(s2);
    let start = std::time::Instant::now();
    while r.cmd(&["PUBSUB", "NUMPAT"]) != Reply::Int(0) {
        assert!(start.elapsed() < std::time::Duration::from_secs(10));
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert_eq!(r.cmd(&["PUBLISH", "news", "again"]), Reply::Int(0));
}

#[test]
fn resp3_subscribers_get_pushes_and_may_run_any_command() {
    let srv = Server::start(&[]);
    let mut r = srv.raw();
    let mut s = srv.raw();
    s.cmd(&["HELLO", "3"]);
    send(&mut s, &["SUBSCRIBE", "ch"]);
    // Pushes read as arrays through this client.
    assert_eq!(s.read(), confirm("subscribe", "ch", 1));
    assert_eq!(s.cmd(&["SET", "k", "v"]), Reply::Simple("OK".into()));
    assert_eq!(r.cmd(&["PUBLISH", "ch", "m"]), Reply::Int(1));
    assert_eq!(s.read(), Reply::Array(bulks(&["message", "ch", "m"])));
    assert_eq!(s.cmd(&["GET", "k"]), Reply::bulk("v"));
}

#[test]
fn client_reply_off_and_skip_silence_replies_not_messages() {
    let srv = Server::start(&[]);
    let mut r = srv.raw();
    let mut c = srv.raw();
    // SKIP: its own reply and the next command's are not sent.
    send(&mut c, &["CLIENT", "REPLY", "SKIP"]);
    send(&mut c, &["SET", "a", "1"]);
    assert_eq!(c.cmd(&["GET", "a"]), Reply::bulk("1"));
    // OFF: nothing until ON, whose OK is sent.
    send(&mut c, &["CLIENT", "REPLY", "OFF"]);
    send(&mut c, &["INCR", "a"]);
    assert_eq!(c.cmd(&["CLIENT", "REPLY", "ON"]), Reply::Simple("OK".into()));
    assert_eq!(c.cmd(&["GET", "a"]), Reply::bulk("2"));
    assert_eq!(c.cmd(&["CLIENT", "REPLY", "MAYBE"]), Reply::Error("ERR syntax error".into()));
    // A RESP3 subscriber with replies off still gets its confirmations and messages (pushes).
    c.cmd(&["HELLO", "3"]);
    send(&mut c, &["CLIENT", "REPLY", "OFF"]);
    send(&mut c, &["SUBSCRIBE", "ch"]);
    assert_eq!(c.read(), confirm("subscribe", "ch", 1));
    assert_eq!(r.cmd(&["PUBLISH", "ch", "m"]), Reply::Int(1));
    assert_eq!(c.read(), Reply::Array(bulks(&["message", "ch", "m"])));
}

#[test]
fn resp2_confirmations_and_messages_are_not_silenced_by_client_reply() {
    let srv = Server::start(&[]);
    let mut r = srv.raw();
    for mode in ["OFF", "SKIP"] {
        let mut c = srv.raw();
        send(&mut c, &["CLIENT", "REPLY", mode]);
        send(&mut c, &["SUBSCRIBE", "ch"]);
        assert_eq!(c.read(), confirm("subscribe", "ch", 1), "REPLY {mode}");
        assert_eq!(r.cmd(&["PUBLISH", "ch", "m"]), Reply::Int(1));
        assert_eq!(c.read(), Reply::Array(bulks(&["message", "ch", "m"])), "REPLY {mode}");
        send(&mut c, &["UNSUBSCRIBE", "ch"]);
        assert_eq!(c.read(), confirm("unsubscribe", "ch", 0), "REPLY {mode}");
    }
}

/// Sharded pub/sub (SSUBSCRIBE, SPUBLISH): a name space apart from channels and patterns,
/// counted apart in the confirmations, in PUBSUB SHARDCHANNELS/SHARDNUMSUB, and with no
/// keys for COMMAND GETKEYS, as redis-server 7.0.15 answers (its replies recorded).
#[test]
fn shard_channels_are_apart_from_channels_and_patterns() {
    let srv = Server::start(&[]);
    let mut r = srv.raw();
    let mut s = srv.raw();
    send(&mut s, &["SUBSCRIBE", "x"]);
    assert_eq!(s.read(), confirm("subscribe", "x", 1));
    send(&mut s, &["SSUBSCRIBE", "a", "b"]);
    let (a, b) = (s.read(), s.read());
    assert_eq!([a, b], [confirm("ssubscribe", "a", 1), confirm("ssubscribe", "b", 2)]);
    send(&mut s, &["SUNSUBSCRIBE", "zz"]);
    assert_eq!(s.read(), confirm("sunsubscribe", "zz", 2));
    send(&mut s, &["PSUBSCRIBE", "p*"]);
    assert_eq!(s.read(), confirm("psubscribe", "p*", 2));
    assert_eq!(r.cmd(&["SPUBLISH", "a", "hi"]), Reply::Int(1));
    assert_eq!(s.read(), Reply::Array(bulks(&["smessage", "a", "hi"])));
    assert_eq!(r.cmd(&["PUBLISH", "a", "hi"]), Reply::Int(0), "shard subscribers are apart");
    assert_eq!(r.cmd(&["SPUBLISH", "x", "hi"]), Reply::Int(0), "and so are channels");
    assert_eq!(r.cmd(&["PUBSUB", "SHARDCHANNELS", "b*"]), Reply::Array(bulks(&["b"])));
    assert_eq!(
        r.cmd(&["PUBSUB", "SHARDNUMSUB", "a", "c"]),
        Reply::Array(vec![Reply::bulk("a"), Reply::Int(1), Reply::bulk("c"), Reply::Int(0)])
    );
    assert_eq!(
        r.cmd(&["PUBSUB", "NUMSUB", "a"]),
        Reply::Array(vec![Reply::bulk("a"), Reply::Int(0)])
    );
    send(&mut s, &["SUNSUBSCRIBE"]);
    let (a, b) = (s.read(), s.read());
    assert_eq!([a, b], [confirm("sunsubscribe", "a", 1), confirm("sunsubscribe", "b", 0)]);
    send(&mut s, &["SUNSUBSCRIBE"]);
    assert_eq!(
        s.read(),
        Reply::Array(vec![Reply::bulk("sunsubscribe"), Reply::Null, Reply::Int(0)])
    );
    // Still subscribed to a channel and a pattern: the RESP2 limits hold.
    send(&mut s, &["GET", "k"]);
    assert!(matches!(s.read(), Reply::Error(e) if e.starts_with("ERR Can't execute 'get'")));
    send(&mut s, &["UNSUBSCRIBE"]);
    assert_eq!(s.read(), confirm("unsubscribe", "x", 1));
    send(&mut s, &["PUNSUBSCRIBE"]);
    assert_eq!(s.read(), confirm("punsubscribe", "p*", 0));
    assert_eq!(s.cmd(&["GET", "k"]), Reply::Null);
    // Only shard channels left: a RESP2 connection is still limited, and a departed
    // subscriber is forgotten.
    send(&mut s, &["SSUBSCRIBE", "c"]);
    assert_eq!(s.read(), confirm("ssubscribe", "c", 1));
    send(&mut s, &["GET", "k"]);
    assert!(matches!(s.read(), Reply::Error(e) if e.starts_with("ERR Can't execute 'get'")));
    drop(s);
    let start = std::time::Instant::now();
    while r.cmd(&["PUBSUB", "SHARDCHANNELS"]) != Reply::Array(Vec::new()) {
        assert!(start.elapsed() < std::time::Duration::from_secs(10));
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let no_keys = Reply::Error("ERR The command has no key arguments".into());
    assert_eq!(r.cmd(&["COMMAND", "GETKEYS", "SPUBLISH", "ch", "m"]), no_keys);
    assert_eq!(r.cmd(&["COMMAND", "GETKEYS", "SSUBSCRIBE", "a", "b"]), no_keys);
    assert_eq!(
        r.cmd(&["SPUBLISH", "a"]),
        Reply::Error("ERR wrong number of arguments for 'spublish' command".into())
    );
}
