//! Databases (SELECT 0..15): separate key spaces, MOVE, COPY ... DB, SWAPDB, FLUSHDB against
//! FLUSHALL, DBSIZE and INFO per database, the database in keyspace notifications, blocked
//! clients and WATCH per database, and the map SWAPDB leaves surviving a restart. Replies
//! as redis-server 7.0.15 gives them.

use crate::common::{wait_blocked, Raw, Reply, Server};

fn ok() -> Reply {
    Reply::Simple("OK".into())
}

fn err(s: &str) -> Reply {
    Reply::Error(s.into())
}

fn int(n: i64) -> Reply {
    Reply::Int(n)
}

fn bulks(items: &[&str]) -> Reply {
    Reply::Array(items.iter().map(|s| Reply::bulk(s)).collect())
}

#[test]
fn each_database_is_its_own_key_space() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    assert_eq!(c.cmd(&["SET", "k", "zero"]), ok());
    assert_eq!(c.cmd(&["SELECT", "3"]), ok());
    assert_eq!(c.cmd(&["GET", "k"]), Reply::Null);
    assert_eq!(c.cmd(&["SET", "k", "three"]), ok());
    assert_eq!(c.cmd(&["HSET", "h", "f", "v"]), int(1));
    assert_eq!(c.cmd(&["ZADD", "z", "1", "m"]), int(1));
    assert_eq!(c.cmd(&["DBSIZE"]), int(3));
    assert_eq!(sorted(c.cmd(&["KEYS", "*"])), bulks(&["h", "k", "z"]));
    // Another connection starts on database 0.
    let mut d = srv.raw();
    assert_eq!(d.cmd(&["GET", "k"]), Reply::bulk("zero"));
    assert_eq!(d.cmd(&["DBSIZE"]), int(1));
    assert_eq!(d.cmd(&["EXISTS", "h", "z"]), int(0));
    // Redis's errors for an index that is not one.
    assert_eq!(c.cmd(&["SELECT", "16"]), err("ERR DB index is out of range"));
    assert_eq!(c.cmd(&["SELECT", "-1"]), err("ERR DB index is out of range"));
    assert_eq!(c.cmd(&["SELECT", "x"]), err("ERR value is not an integer or out of range"));
    assert_eq!(
        c.cmd(&["SELECT", "99999999999"]),
        err("ERR value is not an integer or out of range")
    );
    // A refused SELECT leaves the connection where it was.
    assert_eq!(c.cmd(&["GET", "k"]), Reply::bulk("three"));
    let info = text(c.cmd(&["INFO", "keyspace"]));
    assert!(info.contains("db0:keys=1,expires=0"), "{info}");
    assert!(info.contains("db3:keys=3,expires=0"), "{info}");
    assert_eq!(c.cmd(&["CONFIG", "GET", "databases"]), bulks(&["databases", "16"]));
    let list = text(c.cmd(&["CLIENT", "LIST"]));
    assert!(list.contains(" db=3 "), "{list}");
    // RESET puts the connection back on database 0.
    assert_eq!(c.cmd(&["RESET"]), Reply::Simple("RESET".into()));
    assert_eq!(c.cmd(&["GET", "k"]), Reply::bulk("zero"));
}

#[test]
fn flushdb_empties_one_database_and_flushall_every_one() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    for db in ["0", "1", "2"] {
        assert_eq!(c.cmd(&["SELECT", db]), ok());
        assert_eq!(c.cmd(&["RPUSH", "l", "a", "b"]), int(2));
        assert_eq!(c.cmd(&["SET", "s", db]), ok());
    }
    assert_eq!(c.cmd(&["FLUSHDB"]), ok());
    assert_eq!(c.cmd(&["DBSIZE"]), int(0));
    assert_eq!(c.cmd(&["SELECT", "1"]), ok());
    assert_eq!(c.cmd(&["LRANGE", "l", "0", "-1"]), bulks(&["a", "b"]));
    assert_eq!(c.cmd(&["FLUSHALL"]), ok());
    for db in ["0", "1", "2"] {
        assert_eq!(c.cmd(&["SELECT", db]), ok());
        assert_eq!(c.cmd(&["DBSIZE"]), int(0), "database {db}");
    }
}

#[test]
fn move_takes_the_value_and_its_expiry_to_another_database() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    assert_eq!(c.cmd(&["RPUSH", "l", "a", "b", "c"]), int(3));
    assert_eq!(c.cmd(&["PEXPIRE", "l", "100000"]), int(1));
    assert_eq!(c.cmd(&["ZADD", "z", "1", "one", "2", "two"]), int(2));
    assert_eq!(c.cmd(&["MOVE", "l", "5"]), int(1));
    assert_eq!(c.cmd(&["MOVE", "z", "5"]), int(1));
    assert_eq!(c.cmd(&["EXISTS", "l", "z"]), int(0));
    assert_eq!(c.cmd(&["MOVE", "absent", "5"]), int(0));
    assert_eq!(c.cmd(&["SELECT", "5"]), ok());
    assert_eq!(c.cmd(&["LRANGE", "l", "0", "-1"]), bulks(&["a", "b", "c"]));
    let Reply::Int(ttl) = c.cmd(&["PTTL", "l"]) else { panic!() };
    assert!(ttl > 90_000 && ttl <= 100_000, "{ttl}");
    assert_eq!(c.cmd(&["ZRANGE", "z", "0", "-1", "WITHSCORES"]), bulks(&["one", "1", "two", "2"]));
    // Not onto a key the target has; not to the same database; Redis's errors.
    assert_eq!(c.cmd(&["SET", "x", "in5"]), ok());
    assert_eq!(c.cmd(&["SELECT", "0"]), ok());
    assert_eq!(c.cmd(&["SET", "x", "in0"]), ok());
    assert_eq!(c.cmd(&["MOVE", "x", "5"]), int(0));
    assert_eq!(c.cmd(&["GET", "x"]), Reply::bulk("in0"));
    assert_eq!(c.cmd(&["MOVE", "x", "0"]), err("ERR source and destination objects are the same"));
    assert_eq!(c.cmd(&["MOVE", "x", "16"]), err("ERR DB index is out of range"));
    assert_eq!(c.cmd(&["MOVE", "x", "y"]), err("ERR value is not an integer or out of range"));
    // COPY ... DB copies across, and refuses the same key in the same database only.
    assert_eq!(c.cmd(&["COPY", "x", "x", "DB", "7"]), int(1));
    assert_eq!(c.cmd(&["COPY", "x", "x", "DB", "7"]), int(0));
    assert_eq!(c.cmd(&["COPY", "x", "x", "DB", "7", "REPLACE"]), int(1));
    assert_eq!(
        c.cmd(&["COPY", "x", "x", "DB", "0"]),
        err("ERR source and destination objects are the same")
    );
    assert_eq!(c.cmd(&["COPY", "x", "y", "DB", "99"]), err("ERR DB index is out of range"));
    assert_eq!(c.cmd(&["SELECT", "7"]), ok());
    assert_eq!(c.cmd(&["GET", "x"]), Reply::bulk("in0"));
}

#[test]
fn swapdb_exchanges_two_databases_for_every_connection_and_survives_a_restart() {
    let mut srv = Server::start(&[]);
    let mut c = srv.raw();
    let mut other = srv.raw();
    assert_eq!(c.cmd(&["SET", "k", "zero"]), ok());
    assert_eq!(c.cmd(&["SADD", "s", "a", "b"]), int(2));
    assert_eq!(other.cmd(&["SELECT", "1"]), ok());
    assert_eq!(other.cmd(&["SET", "k", "one"]), ok());
    assert_eq!(c.cmd(&["SWAPDB", "0", "1"]), ok());
    assert_eq!(c.cmd(&["GET", "k"]), Reply::bulk("one"));
    assert_eq!(c.cmd(&["EXISTS", "s"]), int(0));
    assert_eq!(other.cmd(&["GET", "k"]), Reply::bulk("zero"));
    assert_eq!(sorted(other.cmd(&["SMEMBERS", "s"])), bulks(&["a", "b"]));
    assert_eq!(c.cmd(&["SWAPDB", "0", "0"]), ok());
    assert_eq!(c.cmd(&["SWAPDB", "0", "x"]), err("ERR invalid second DB index"));
    assert_eq!(c.cmd(&["SWAPDB", "x", "0"]), err("ERR invalid first DB index"));
    assert_eq!(c.cmd(&["SWAPDB", "0", "16"]), err("ERR DB index is out of range"));
    // A swap of a database never used gives it the other's data.
    assert_eq!(c.cmd(&["SWAPDB", "1", "9"]), ok());
    assert_eq!(other.cmd(&["DBSIZE"]), int(0));
    // Inside a transaction, with the transaction's other commands.
    assert_eq!(c.cmd(&["MULTI"]), Reply::Simple("OK".into()));
    assert_eq!(c.cmd(&["SET", "t", "1"]), Reply::Simple("QUEUED".into()));
    assert_eq!(c.cmd(&["SWAPDB", "0", "2"]), Reply::Simple("QUEUED".into()));
    assert_eq!(c.cmd(&["EXEC"]), Reply::Array(vec![ok(), ok()]));
    assert_eq!(c.cmd(&["EXISTS", "t"]), int(0));
    assert_eq!(c.cmd(&["SELECT", "2"]), ok());
    assert_eq!(c.cmd(&["GET", "k"]), Reply::bulk("one"));
    // Not from a script (the swap must run alone).
    let Reply::Error(e) = c.cmd(&["EVAL", "return redis.call('swapdb', 0, 1)", "0"]) else {
        panic!()
    };
    assert!(e.contains("SWAPDB is not allowed from scripts"), "{e}");
    drop((c, other));
    let dir = srv.keep_dir();
    srv.stop();
    let srv = Server::start_in(dir.path(), &[]);
    let mut c = srv.raw();
    for (db, want) in [("0", Reply::Null), ("2", Reply::bulk("one")), ("9", Reply::bulk("zero"))] {
        assert_eq!(c.cmd(&["SELECT", db]), ok());
        assert_eq!(c.cmd(&["GET", "k"]), want, "database {db}");
    }
    assert_eq!(sorted(c.cmd(&["SMEMBERS", "s"])), bulks(&["a", "b"]));
    assert_eq!(c.cmd(&["SELECT", "2"]), ok());
    assert_eq!(c.cmd(&["GET", "t"]), Reply::bulk("1"));
}

#[test]
fn watch_remembers_the_database_and_swapdb_touches_live_keys() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    let mut w = srv.raw();
    // A write of the same key name in another database does not touch the watch.
    assert_eq!(w.cmd(&["SELECT", "5"]), ok());
    assert_eq!(w.cmd(&["SET", "x", "30"]), ok());
    assert_eq!(w.cmd(&["WATCH", "x"]), ok());
    assert_eq!(c.cmd(&["SET", "x", "10"]), ok());
    assert_eq!(w.cmd(&["MULTI"]), ok());
    assert_eq!(w.cmd(&["PING"]), Reply::Simple("QUEUED".into()));
    assert_eq!(w.cmd(&["EXEC"]), Reply::Array(vec![Reply::Simple("PONG".into())]));
    // SWAPDB touches a watched key that exists on either side.
    assert_eq!(w.cmd(&["WATCH", "x"]), ok());
    assert_eq!(c.cmd(&["SWAPDB", "0", "5"]), ok());
    assert_eq!(w.cmd(&["MULTI"]), ok());
    assert_eq!(w.cmd(&["PING"]), Reply::Simple("QUEUED".into()));
    assert_eq!(w.cmd(&["EXEC"]), Reply::Null);
    // ... and not one absent on both sides.
    assert_eq!(w.cmd(&["WATCH", "nothing"]), ok());
    assert_eq!(c.cmd(&["SWAPDB", "0", "5"]), ok());
    assert_eq!(w.cmd(&["MULTI"]), ok());
    assert_eq!(w.cmd(&["PING"]), Reply::Simple("QUEUED".into()));
    assert_eq!(w.cmd(&["EXEC"]), Reply::Array(vec![Reply::Simple("PONG".into())]));
}

#[test]
fn blocked_clients_wait_on_their_own_database() {
    let srv = Server::start(&[]);
    let mut waiter = srv.raw();
    let mut c = srv.raw();
    assert_eq!(waiter.cmd(&["SELECT", "4"]), ok());
    waiter.send(&["BLPOP", "q", "5"]);
    wait_blocked(&mut c, 1);
    // A push in database 0 serves nobody; one in database 4 serves the waiter.
    assert_eq!(c.cmd(&["RPUSH", "q", "in0"]), int(1));
    assert_eq!(c.cmd(&["SELECT", "4"]), ok());
    assert_eq!(c.cmd(&["RPUSH", "q", "in4"]), int(1));
    assert_eq!(waiter.read(), bulks(&["q", "in4"]));
    assert_eq!(c.cmd(&["SELECT", "0"]), ok());
    assert_eq!(c.cmd(&["LLEN", "q"]), int(1));
    // MOVE into the waited database serves it too.
    waiter.send(&["BLPOP", "q", "5"]);
    wait_blocked(&mut c, 1);
    assert_eq!(c.cmd(&["MOVE", "q", "4"]), int(1));
    assert_eq!(waiter.read(), bulks(&["q", "in0"]));
    // So does SWAPDB bringing a list under a waited key.
    assert_eq!(c.cmd(&["RPUSH", "q", "swapped"]), int(1));
    waiter.send(&["BLPOP", "q", "5"]);
    wait_blocked(&mut c, 1);
    assert_eq!(c.cmd(&["SWAPDB", "0", "4"]), ok());
    assert_eq!(waiter.read(), bulks(&["q", "swapped"]));
}

#[test]
fn keyspace_notifications_name_the_database() {
    let srv = Server::start(&["--notify-keyspace-events", "KEg$"]);
    let mut sub = srv.raw();
    assert_eq!(
        sub.cmd(&["PSUBSCRIBE", "__key*@*__:*"]),
        Reply::Array(vec![Reply::bulk("psubscribe"), Reply::bulk("__key*@*__:*"), int(1)])
    );
    let mut c = srv.raw();
    assert_eq!(c.cmd(&["SELECT", "6"]), ok());
    assert_eq!(c.cmd(&["SET", "k", "v"]), ok());
    assert_eq!(c.cmd(&["MOVE", "k", "2"]), int(1));
    let mut got = Vec::new();
    for _ in 0..6 {
        let Reply::Array(m) = sub.read() else { panic!() };
        let (Reply::Bulk(ch), Reply::Bulk(msg)) = (&m[2], &m[3]) else { panic!("{m:?}") };
        got.push(format!("{} {}", String::from_utf8_lossy(ch), String::from_utf8_lossy(msg)));
    }
    assert_eq!(
        got,
        [
            "__keyspace@6__:k set",
            "__keyevent@6__:set k",
            "__keyspace@6__:k move_from",
            "__keyevent@6__:move_from k",
            "__keyspace@2__:k move_to",
            "__keyevent@2__:move_to k",
        ]
    );
}

#[test]
fn a_configured_count_bounds_select() {
    let srv = Server::start(&["--databases", "2"]);
    let mut c = srv.raw();
    assert_eq!(c.cmd(&["SELECT", "1"]), ok());
    assert_eq!(c.cmd(&["SELECT", "2"]), err("ERR DB index is out of range"));
    assert_eq!(c.cmd(&["CONFIG", "GET", "databases"]), bulks(&["databases", "2"]));
    assert_eq!(
        c.cmd(&["CONFIG", "SET", "databases", "4"]),
        err("ERR CONFIG SET failed (possibly related to argument 'databases') - can't set immutable config")
    );
}

/// An array reply with its items in order (for replies in no set order).
fn sorted(r: Reply) -> Reply {
    let Reply::Array(mut v) = r else { panic!("not an array: {r:?}") };
    v.sort_by_key(|x| format!("{x:?}"));
    Reply::Array(v)
}

/// The text of a bulk or verbatim reply.
fn text(r: Reply) -> String {
    match r {
        Reply::Bulk(b) => String::from_utf8(b).unwrap(),
        Reply::Verbatim(s) => s,
        other => panic!("not text: {other:?}"),
    }
}

/// Raw client helpers these tests use.
trait RawExt {
    fn send(&mut self, args: &[&str]);
}

impl RawExt for Raw {
    fn send(&mut self, args: &[&str]) {
        let a: Vec<&[u8]> = args.iter().map(|s| s.as_bytes()).collect();
        self.send_raw(&Raw::encode(&a));
    }
}
