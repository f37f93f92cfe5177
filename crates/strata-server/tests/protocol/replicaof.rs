//! REPLICAOF: the server follows a Redis master. A fake master here speaks the protocol's
//! master side (handshake, FULLRESYNC with an RDB this crate's writer makes, CONTINUE, the
//! command stream, GETACK), so every step is checked without another program; the last test
//! follows a real redis-server when one is installed.

use std::net::TcpListener;
use std::process::Command;
use std::time::Duration;

use crate::common::fake_master::{handshake, send_cmd, until_ack, wait_for, REPLID};
use crate::common::redis_peer::{contents, redis_server};
use crate::common::{info_field, Raw, Reply, Server};
use strata_server::types::rdb::file::FileWriter;
use strata_server::types::rdb::{Encodings, Value};

fn ok() -> Reply {
    Reply::Simple("OK".into())
}

/// The master's dataset: every type in database 0, one key in database 3, a key whose time
/// has passed, a function library.
fn dataset() -> Vec<u8> {
    let enc = Encodings::default();
    let far = 4_000_000_000_000u64;
    let mut w = FileWriter::new(Vec::new(), &[("redis-ver", b"7.0.15".as_slice())]).unwrap();
    w.function(
        b"#!lua name=replib\nredis.register_function('one', function() return 1 end)\n\
          redis.register_function{function_name='ro', callback=function() return 2 end, \
          flags={'no-writes'}}",
    )
    .unwrap();
    w.select_db(0, 6, 2).unwrap();
    w.key(b"s", &Value::String(b"hello".to_vec()), None, &enc).unwrap();
    w.key(b"h", &Value::Hash(vec![(b"f".to_vec(), b"v".to_vec())]), None, &enc).unwrap();
    w.key(b"l", &Value::List(vec![b"a".to_vec(), b"b".to_vec()]), None, &enc).unwrap();
    w.key(b"z", &Value::ZSet(vec![(b"m".to_vec(), 2.5)]), None, &enc).unwrap();
    w.key(b"x", &Value::String(b"later".to_vec()), Some(far), &enc).unwrap();
    w.key(b"gone", &Value::String(b"past".to_vec()), Some(1000), &enc).unwrap();
    w.select_db(3, 1, 0).unwrap();
    w.key(b"d3", &Value::Set(vec![b"1".to_vec(), b"2".to_vec()]), None, &enc).unwrap();
    w.finish().unwrap()
}

fn role(c: &mut Raw) -> Vec<Reply> {
    match c.cmd(&["ROLE"]) {
        Reply::Array(v) => v,
        other => panic!("{other:?}"),
    }
}

/// A server following a fake master on loopback that gave it `rdb` in a full sync: the
/// master's listener (kept while the test runs), the server, a client of it, and the master's
/// side of the link.
fn following_a_fake_master(rdb: &[u8]) -> (TcpListener, Server, Raw, Raw) {
    let fake = TcpListener::bind("127.0.0.1:0").unwrap();
    let mport = fake.local_addr().unwrap().port();
    let s = Server::start(&[]);
    let mut c = s.raw();
    assert_eq!(c.cmd(&["REPLICAOF", "127.0.0.1", &mport.to_string()]), ok());
    let (mut m, _) = handshake(&fake, s.port);
    m.send_raw(format!("+FULLRESYNC {REPLID} 0\r\n").as_bytes());
    m.send_raw(format!("${}\r\n", rdb.len()).as_bytes());
    m.send_raw(rdb);
    (fake, s, c, m)
}

/// An RDB of one key of database 0, `past`, holding "kept", whose time is long past.
fn a_key_past_its_time() -> Vec<u8> {
    let enc = Encodings::default();
    let mut w = FileWriter::new(Vec::new(), &[("redis-ver", b"7.0.15".as_slice())]).unwrap();
    w.select_db(0, 1, 1).unwrap();
    w.key(b"past", &Value::String(b"kept".to_vec()), Some(1000), &enc).unwrap();
    w.finish().unwrap()
}

#[test]
fn a_replica_loads_the_masters_dataset_applies_its_stream_and_resumes() {
    let fake = TcpListener::bind("127.0.0.1:0").unwrap();
    let mport = fake.local_addr().unwrap().port();
    let s = Server::start(&[]);
    let mut c = s.raw();
    assert_eq!(c.cmd(&["SET", "old", "1"]), ok());
    let mine = "#!lua name=mine\nredis.register_function('mine', function() return 3 end)";
    assert_eq!(c.cmd(&["FUNCTION", "LOAD", mine]), Reply::bulk("mine"));
    assert_eq!(c.cmd(&["REPLICAOF", "127.0.0.1", &mport.to_string()]), ok());
    assert_eq!(
        c.cmd(&["REPLICAOF", "127.0.0.1", &mport.to_string()]),
        Reply::Simple("OK Already connected to specified master".into())
    );
    let (mut m, psync) = handshake(&fake, s.port);
    assert_eq!(psync, ["?", "-1"]);
    m.send_raw(format!("+FULLRESYNC {REPLID} 1000\r\n").as_bytes());
    let rdb = dataset();
    // The newlines a master sends while it prepares the file come first.
    m.send_raw(b"\n\n");
    m.send_raw(format!("${}\r\n", rdb.len()).as_bytes());
    m.send_raw(&rdb);
    let mut sent = 0;
    sent += send_cmd(&mut m, &["SELECT", "0"]);
    sent += send_cmd(&mut m, &["SET", "s2", "v2"]);
    sent += send_cmd(&mut m, &["MULTI"]);
    sent += send_cmd(&mut m, &["INCR", "n"]);
    sent += send_cmd(&mut m, &["INCR", "n"]);
    sent += send_cmd(&mut m, &["EXEC"]);
    sent += send_cmd(&mut m, &["SELECT", "3"]);
    sent += send_cmd(&mut m, &["DEL", "d3"]);
    let getack = send_cmd(&mut m, &["REPLCONF", "GETACK", "*"]);
    // GETACK is answered with the offset before it.
    until_ack(&mut m, 1000 + sent as i64);
    let applied = 1000 + (sent + getack) as i64;
    wait_for("the offset after GETACK", || {
        info_field(&mut c, "replication", "slave_repl_offset") == applied.to_string()
    });

    assert_eq!(c.cmd(&["GET", "s"]), Reply::bulk("hello"));
    assert_eq!(c.cmd(&["GET", "s2"]), Reply::bulk("v2"));
    assert_eq!(c.cmd(&["GET", "n"]), Reply::bulk("2"));
    assert_eq!(c.cmd(&["EXISTS", "old", "gone"]), Reply::Int(0));
    assert_eq!(c.cmd(&["HGET", "h", "f"]), Reply::bulk("v"));
    assert_eq!(
        c.cmd(&["LRANGE", "l", "0", "-1"]),
        Reply::Array(vec![Reply::bulk("a"), Reply::bulk("b")])
    );
    assert_eq!(c.cmd(&["ZSCORE", "z", "m"]), Reply::bulk("2.5"));
    assert_eq!(c.cmd(&["PEXPIRETIME", "x"]), Reply::Int(4_000_000_000_000));
    assert_eq!(c.cmd(&["SELECT", "3"]), ok());
    assert_eq!(c.cmd(&["EXISTS", "d3"]), Reply::Int(0));
    assert_eq!(c.cmd(&["SELECT", "0"]), ok());
    // A read-only replica refuses its clients' writes, inside MULTI too.
    let readonly = Reply::Error("READONLY You can't write against a read only replica.".into());
    assert_eq!(c.cmd(&["SET", "w", "1"]), readonly);
    assert_eq!(c.cmd(&["MULTI"]), ok());
    assert_eq!(c.cmd(&["INCR", "n"]), readonly);
    assert!(matches!(c.cmd(&["EXEC"]), Reply::Error(e) if e.starts_with("EXECABORT")));
    // Scripts: one that may write is refused as it starts, a read-only one runs, and a
    // script without flags meets the refusal at its write.
    assert_eq!(
        c.cmd(&["FCALL", "one", "0"]),
        Reply::Error("READONLY Can not run script with write flag on readonly replica".into())
    );
    assert_eq!(c.cmd(&["FCALL_RO", "ro", "0"]), Reply::Int(2));
    assert_eq!(c.cmd(&["EVAL", "return redis.call('GET', 's')", "0"]), Reply::bulk("hello"));
    assert!(matches!(
        c.cmd(&["EVAL", "return redis.call('SET', 's', 'x')", "0"]),
        Reply::Error(e) if e.contains("READONLY")
    ));
    // The master's library replaced what the replica had.
    let count = |c: &mut Raw, name: &str| match c.cmd(&["FUNCTION", "LIST", "LIBRARYNAME", name]) {
        Reply::Array(v) => v.len(),
        other => panic!("{other:?}"),
    };
    assert_eq!((count(&mut c, "replib"), count(&mut c, "mine")), (1, 0));
    assert_eq!(info_field(&mut c, "replication", "role"), "slave");
    assert_eq!(info_field(&mut c, "replication", "master_link_status"), "up");
    assert_eq!(info_field(&mut c, "replication", "master_replid"), REPLID);
    assert_eq!(
        role(&mut c),
        vec![
            Reply::bulk("slave"),
            Reply::bulk("127.0.0.1"),
            Reply::Int(i64::from(mport)),
            Reply::bulk("connected"),
            Reply::Int(applied),
        ]
    );

    // The link breaks inside a transaction: the replica resumes before its MULTI, in the
    // database the stream had selected.
    send_cmd(&mut m, &["MULTI"]);
    send_cmd(&mut m, &["SET", "half", "1"]);
    drop(m);
    let (mut m, psync) = handshake(&fake, s.port);
    assert_eq!(psync, [REPLID.to_string(), (applied + 1).to_string()]);
    m.send_raw(b"+CONTINUE\r\n");
    let more = send_cmd(&mut m, &["SET", "after", "v"]);
    let getack = send_cmd(&mut m, &["REPLCONF", "GETACK", "*"]);
    until_ack(&mut m, applied + more as i64);
    assert_eq!(c.cmd(&["SELECT", "3"]), ok());
    assert_eq!(c.cmd(&["GET", "after"]), Reply::bulk("v"));
    assert_eq!(c.cmd(&["EXISTS", "half"]), Reply::Int(0));
    assert_eq!(info_field(&mut c, "replication", "repl_partial_syncs"), "1");
    let _ = getack;

    // NO ONE: a master again, with the dataset it has.
    assert_eq!(c.cmd(&["REPLICAOF", "NO", "ONE"]), ok());
    assert_eq!(c.cmd(&["SET", "w", "1"]), ok());
    assert_eq!(c.cmd(&["GET", "after"]), Reply::bulk("v"));
    assert_eq!(role(&mut c)[0], Reply::bulk("master"));
    assert_eq!(info_field(&mut c, "replication", "role"), "master");
}

#[test]
fn a_sync_that_fails_leaves_the_dataset_as_it_was() {
    let fake = TcpListener::bind("127.0.0.1:0").unwrap();
    let mport = fake.local_addr().unwrap().port();
    let s = Server::start(&[]);
    let mut c = s.raw();
    assert_eq!(c.cmd(&["SET", "keep", "1"]), ok());
    assert_eq!(c.cmd(&["REPLICAOF", "localhost", &mport.to_string()]), ok());
    let rdb = dataset();

    // Cut short: fewer bytes than announced, then the connection closes.
    let (mut m, _) = handshake(&fake, s.port);
    m.send_raw(format!("+FULLRESYNC {REPLID} 0\r\n${}\r\n", rdb.len()).as_bytes());
    m.send_raw(&rdb[..rdb.len() / 2]);
    drop(m);
    // A checksum that does not match.
    let (mut m, psync) = handshake(&fake, s.port);
    assert_eq!(psync, ["?", "-1"], "nothing was applied: a full sync again");
    let mut bad = rdb.clone();
    let last = bad.len() - 1;
    bad[last] ^= 0x55;
    m.send_raw(format!("+FULLRESYNC {REPLID} 0\r\n${}\r\n", bad.len()).as_bytes());
    m.send_raw(&bad);
    wait_for("the refused file said in INFO", || {
        c.cmd(&["INFO", "replication"]) != Reply::Null
            && match c.cmd(&["INFO", "replication"]) {
                Reply::Bulk(b) => String::from_utf8_lossy(&b).contains("checksum"),
                _ => false,
            }
    });
    assert_eq!(c.cmd(&["GET", "keep"]), Reply::bulk("1"));
    assert_eq!(info_field(&mut c, "replication", "master_link_status"), "down");
    assert_eq!(c.cmd(&["EXISTS", "s"]), Reply::Int(0));
    drop(m);

    // Diskless: the file between two marks, then the stream.
    let (mut m, _) = handshake(&fake, s.port);
    let mark = "0123456789abcdefghij0123456789abcdefghij";
    m.send_raw(format!("+FULLRESYNC {REPLID} 50\r\n$EOF:{mark}\r\n").as_bytes());
    m.send_raw(&rdb);
    m.send_raw(mark.as_bytes());
    let sent = send_cmd(&mut m, &["SET", "s", "replaced"]);
    send_cmd(&mut m, &["REPLCONF", "GETACK", "*"]);
    until_ack(&mut m, 50 + sent as i64);
    assert_eq!(c.cmd(&["GET", "s"]), Reply::bulk("replaced"));
    assert_eq!(c.cmd(&["EXISTS", "keep"]), Reply::Int(0));
    assert_eq!(info_field(&mut c, "replication", "repl_full_syncs"), "1");
    assert_eq!(c.cmd(&["REPLICAOF", "NO", "ONE"]), ok());
}

#[test]
fn replicaof_arguments_are_checked_as_redis_checks_them() {
    let s = Server::start(&[]);
    let mut c = s.raw();
    assert_eq!(
        c.cmd(&["REPLICAOF", "127.0.0.1", "x"]),
        Reply::Error("ERR value is not an integer or out of range".into())
    );
    assert_eq!(
        c.cmd(&["REPLICAOF", "127.0.0.1", "70000"]),
        Reply::Error("ERR Invalid master port".into())
    );
    assert!(
        matches!(c.cmd(&["REPLICAOF", "127.0.0.1"]), Reply::Error(e) if e.contains("wrong number"))
    );
    assert_eq!(c.cmd(&["REPLICAOF", "NO", "ONE"]), ok());
    // SLAVEOF is the same command; a master nobody listens on leaves the link connecting.
    let unused = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    assert_eq!(c.cmd(&["SLAVEOF", "127.0.0.1", &unused.to_string()]), ok());
    wait_for(
        "the failed connection said in INFO",
        || matches!(c.cmd(&["INFO", "replication"]), Reply::Bulk(b) if String::from_utf8_lossy(&b).contains("master_link_last_error:cannot connect")),
    );
    assert_eq!(c.cmd(&["GET", "k"]), Reply::Null, "reads of stale data are served");
    assert_eq!(c.cmd(&["CONFIG", "SET", "replica-serve-stale-data", "no"]), ok());
    assert!(matches!(c.cmd(&["GET", "k"]), Reply::Error(e) if e.starts_with("MASTERDOWN")));
    // As Redis: PING is not flagged `stale`; INFO is.
    assert!(matches!(c.cmd(&["PING"]), Reply::Error(e) if e.starts_with("MASTERDOWN")));
    assert!(matches!(c.cmd(&["INFO", "replication"]), Reply::Bulk(_)));
    // Scripts: only one declared `allow-stale` runs, and it may call only what may.
    let masterdown = || {
        Reply::Error(
            "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."
                .into(),
        )
    };
    assert_eq!(c.cmd(&["EVAL", "return redis.call('get','x')", "1", "x"]), masterdown());
    assert_eq!(c.cmd(&["EVAL", "#!lua flags=no-writes\nreturn 1", "0"]), masterdown());
    let stale_ok = "#!lua flags=allow-stale,no-writes\n";
    assert_eq!(c.cmd(&["EVAL", &format!("{stale_ok}return 1"), "0"]), Reply::Int(1));
    assert!(matches!(
        c.cmd(&["EVAL", &format!("{stale_ok}return redis.call('get','x')"), "1", "x"]),
        Reply::Error(e) if e.contains("Can not execute the command on a stale replica")
    ));
    assert_eq!(
        c.cmd(&["EVAL", &format!("{stale_ok}return redis.call('echo','foobar')"), "0"]),
        Reply::bulk("foobar")
    );
    assert_eq!(c.cmd(&["CONFIG", "SET", "replica-read-only", "no"]), ok());
    assert_eq!(c.cmd(&["CONFIG", "SET", "replica-serve-stale-data", "yes"]), ok());
    assert_eq!(c.cmd(&["SET", "k", "1"]), ok(), "a writable replica takes writes");
    assert_eq!(c.cmd(&["REPLICAOF", "NO", "ONE"]), ok());
}

#[test]
fn a_replica_follows_a_real_redis_server() {
    let Some(redis) = redis_server() else {
        eprintln!("skipped: redis-server is not installed (apt-get install -y redis-server)");
        return;
    };
    let mut r = Raw::connect(redis.port);
    let big: String = "x".repeat(300);
    for (i, cmd) in [
        vec!["SET", "s", "hello"],
        vec!["SET", "n", "12345"],
        vec!["SET", "long", big.as_str()],
        vec!["HSET", "h", "a", "1", "b", "2"],
        vec!["RPUSH", "l", "x", "y", "z"],
        vec!["SADD", "ints", "1", "2", "3"],
        vec!["SADD", "strs", "a", "b"],
        vec!["ZADD", "z", "1", "one", "2.5", "two"],
        vec!["XADD", "st", "1-1", "f", "v"],
        vec!["SET", "ttl", "v", "PX", "600000"],
    ]
    .iter()
    .enumerate()
    {
        assert!(!matches!(r.cmd(cmd), Reply::Error(_)), "{i}: {cmd:?}");
    }
    for i in 0..200 {
        r.cmd(&["HSET", "bighash", &format!("f{i}"), &big]);
        r.cmd(&["RPUSH", "biglist", &format!("e{i}")]);
        r.cmd(&["ZADD", "bigz", &i.to_string(), &format!("m{i}")]);
    }
    r.cmd(&["SELECT", "5"]);
    r.cmd(&["SET", "in5", "five"]);
    r.cmd(&["SELECT", "0"]);

    let s = Server::start(&[]);
    let mut c = s.raw();
    assert_eq!(c.cmd(&["REPLICAOF", "127.0.0.1", &redis.port.to_string()]), ok());
    wait_for("the link up", || info_field(&mut c, "replication", "master_link_status") == "up");
    // Writes after the sync come through the stream.
    r.cmd(&["SET", "s", "changed"]);
    r.cmd(&["HDEL", "h", "a"]);
    r.cmd(&["LPOP", "l"]);
    r.cmd(&["INCRBYFLOAT", "f", "1.5"]);
    r.cmd(&["EXPIRE", "n", "1000"]);
    r.cmd(&["MULTI"]);
    r.cmd(&["SADD", "strs", "c"]);
    r.cmd(&["DEL", "ints"]);
    r.cmd(&["EXEC"]);
    r.cmd(&["SELECT", "5"]);
    r.cmd(&["APPEND", "in5", "!"]);
    r.cmd(&["SELECT", "0"]);
    let target = info_field(&mut r, "replication", "master_repl_offset");
    wait_for("the replica at the master's offset", || {
        info_field(&mut c, "replication", "slave_repl_offset") == target
    });
    let keys = [
        "s", "n", "long", "h", "l", "ints", "strs", "z", "st", "ttl", "bighash", "biglist", "bigz",
        "f",
    ];
    assert_eq!(contents(&mut c, &keys), contents(&mut r, &keys));
    assert_eq!(c.cmd(&["SELECT", "5"]), ok());
    assert_eq!(c.cmd(&["GET", "in5"]), Reply::bulk("five!"));
    // The master sees its replica.
    assert_eq!(info_field(&mut r, "replication", "connected_slaves"), "1");
    assert_eq!(c.cmd(&["REPLICAOF", "NO", "ONE"]), ok());
}

#[test]
fn a_replicaof_line_of_the_configuration_follows_from_the_start() {
    let fake = TcpListener::bind("127.0.0.1:0").unwrap();
    let mport = fake.local_addr().unwrap().port();
    let conf_dir = tempfile::tempdir().unwrap();
    let conf = conf_dir.path().join("replica.conf");
    std::fs::write(&conf, format!("replicaof 127.0.0.1 {mport}\n")).unwrap();
    let mut s = Server::start(&[conf.to_str().unwrap()]);
    let (mut m, psync) = handshake(&fake, s.port);
    assert_eq!(psync, ["?", "-1"]);
    let rdb = dataset();
    m.send_raw(format!("+FULLRESYNC {REPLID} 7\r\n${}\r\n", rdb.len()).as_bytes());
    m.send_raw(&rdb);
    send_cmd(&mut m, &["REPLCONF", "GETACK", "*"]);
    until_ack(&mut m, 7);
    let mut c = s.raw();
    assert_eq!(c.cmd(&["GET", "s"]), Reply::bulk("hello"));
    assert_eq!(
        c.cmd(&["CONFIG", "GET", "replicaof"]),
        Reply::Array(vec![Reply::bulk("replicaof"), Reply::bulk(&format!("127.0.0.1 {mport}"))])
    );
    assert_eq!(role(&mut c)[3], Reply::bulk("connected"));
    // A graceful stop with the link up: the link ends before the database closes.
    s.stop();
}

#[test]
fn a_transfer_file_left_by_a_stopped_process_goes_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let left = dir.path().join("temp-replica-4242-1700000000000.rdb");
    std::fs::write(&left, b"REDIS0010 cut short").unwrap();
    let other = dir.path().join("temp-other.rdb");
    std::fs::write(&other, b"not ours").unwrap();
    let mut s = Server::start_in(dir.path(), &[]);
    assert!(!left.exists());
    assert!(other.exists());
    s.stop();
}

#[test]
fn a_new_server_starts_from_a_redis_dump_in_its_directory() {
    // redis-server 7.0.15's own dump (crates/strata-server/src/types/rdb/testdata).
    let golden = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src/types/rdb/testdata/dump-7.0.15.rdb");
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(&golden, dir.path().join("dump.rdb")).unwrap();
    let mut s = Server::start_in(dir.path(), &[]);
    let mut c = s.raw();
    assert_eq!(c.cmd(&["GET", "string:short"]), Reply::bulk("hello world"));
    assert_eq!(c.cmd(&["HGET", "hash:big", "field-199"]), Reply::bulk("value-199"));
    assert_eq!(c.cmd(&["LLEN", "list:big"]), Reply::Int(1500));
    assert_eq!(c.cmd(&["PEXPIRETIME", "expiring"]), Reply::Int(4_102_444_800_000));
    assert_eq!(c.cmd(&["FCALL", "myecho", "0", "hi"]), Reply::bulk("hi"));
    assert_eq!(c.cmd(&["SELECT", "3"]), ok());
    assert_eq!(c.cmd(&["GET", "db3:string"]), Reply::bulk("in db three"));
    assert_eq!(c.cmd(&["SET", "db3:string", "changed"]), ok());
    s.stop();

    // The DB is there now: a dump beside it is left alone.
    let other = dir.path().join("dump.rdb");
    std::fs::write(&other, dataset()).unwrap();
    let mut s = Server::start_in(dir.path(), &[]);
    let mut c = s.raw();
    assert_eq!(c.cmd(&["EXISTS", "s"]), Reply::Int(0));
    assert_eq!(c.cmd(&["SELECT", "3"]), ok());
    assert_eq!(c.cmd(&["GET", "db3:string"]), Reply::bulk("changed"));
    s.stop();
}

#[test]
fn an_import_a_stopped_process_left_unfinished_is_made_again() {
    // What a process killed during its import leaves: a DB with part of the keys (here one
    // stray key) and the mark of the import in progress.
    let dir = tempfile::tempdir().unwrap();
    let mut s = Server::start_in(dir.path(), &[]);
    assert_eq!(s.raw().cmd(&["SET", "stray", "1"]), ok());
    s.stop();
    std::fs::write(dir.path().join("IMPORTING-DUMP"), b"").unwrap();
    std::fs::write(dir.path().join("dump.rdb"), dataset()).unwrap();
    let mut s = Server::start_in(dir.path(), &[]);
    let mut c = s.raw();
    assert_eq!(c.cmd(&["EXISTS", "stray"]), Reply::Int(0));
    assert_eq!(c.cmd(&["GET", "s"]), Reply::bulk("hello"));
    assert!(!dir.path().join("IMPORTING-DUMP").exists(), "the import is whole");
    s.stop();
}

#[test]
fn a_dump_that_does_not_read_stops_the_start_and_leaves_the_directory() {
    let dir = tempfile::tempdir().unwrap();
    let mut bad = dataset();
    let at = bad.len() / 2;
    bad[at] ^= 0xff;
    std::fs::write(dir.path().join("dump.rdb"), &bad).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_strata-server"))
        .args(["--port", "0", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot import the Redis dump") && err.contains("dump.rdb: offset"),
        "{err}"
    );
    assert!(!dir.path().join("CURRENT").exists(), "no DB was made");
}

/// A replica keeps a key whose time is up (on its clock) for its master, as a redis-server
/// replica does: clients read it as absent, but neither active expiry nor a read removes it
/// (nor compaction: `commands::compaction_filter`), and the master's commands find it (here a PERSIST that reached
/// the replica after the key's time), until the master's own DEL. A full sync keeps such
/// keys too. Once the server is a master again, its expiry removes them.
#[test]
fn a_replica_keeps_keys_whose_time_is_up_for_its_masters_commands() {
    let (_fake, _s, mut c, mut m) = following_a_fake_master(&a_key_past_its_time());
    // The hash the master makes below in sub-keys, not compact.
    assert_eq!(c.cmd(&["CONFIG", "SET", "hash-max-listpack-entries", "0"]), ok());
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
    let soon = (now.as_millis() + 300).to_string();
    let mut sent = 0;
    sent += send_cmd(&mut m, &["SELECT", "0"]);
    sent += send_cmd(&mut m, &["SET", "k", "v", "PXAT", &soon]);
    sent += send_cmd(&mut m, &["HSET", "h", "f", "1", "g", "2"]);
    sent += send_cmd(&mut m, &["PEXPIREAT", "h", &soon]);
    until_ack(&mut m, sent as i64);
    assert_eq!(c.cmd(&["GET", "past"]), Reply::Null, "a client reads it as absent");
    // Past the keys' time on the replica's clock, with active expiry rounds between.
    std::thread::sleep(Duration::from_millis(700));
    assert_eq!(c.cmd(&["GET", "k"]), Reply::Null);
    assert_eq!(c.cmd(&["HGET", "h", "f"]), Reply::Null);
    assert_eq!(c.cmd(&["DBSIZE"]), Reply::Int(3), "stored until the master's DEL");
    let keys = info_field(&mut c, "stats", "expired_keys");
    assert_eq!(keys, "0", "the replica expired nothing itself");
    // The master's commands find the keys, as the master has them.
    sent += send_cmd(&mut m, &["PERSIST", "k"]);
    sent += send_cmd(&mut m, &["PERSIST", "h"]);
    sent += send_cmd(&mut m, &["PERSIST", "past"]);
    sent += send_cmd(&mut m, &["HINCRBY", "h", "f", "10"]);
    until_ack(&mut m, sent as i64);
    assert_eq!(c.cmd(&["GET", "k"]), Reply::bulk("v"));
    assert_eq!(c.cmd(&["GET", "past"]), Reply::bulk("kept"));
    assert_eq!(c.cmd(&["HGET", "h", "f"]), Reply::bulk("11"));
    assert_eq!(c.cmd(&["HGET", "h", "g"]), Reply::bulk("2"));
    // A key the master expires goes with its DEL.
    sent += send_cmd(&mut m, &["PEXPIREAT", "k", "1000"]);
    until_ack(&mut m, sent as i64);
    assert_eq!(c.cmd(&["DBSIZE"]), Reply::Int(3));
    sent += send_cmd(&mut m, &["DEL", "k"]);
    until_ack(&mut m, sent as i64);
    assert_eq!(c.cmd(&["DBSIZE"]), Reply::Int(2));
    // A master again: its own expiry takes what is due.
    assert_eq!(
        c.cmd(&["PEXPIREAT", "past", "1000"]),
        Reply::Error("READONLY You can't write against a read only replica.".into())
    );
    assert_eq!(c.cmd(&["REPLICAOF", "NO", "ONE"]), ok());
    assert_eq!(c.cmd(&["PEXPIREAT", "past", "1000"]), Reply::Int(1));
    wait_for("the expiry of `past`", || c.cmd(&["DBSIZE"]) == Reply::Int(1));
}

/// The link's client is on the books while the stream runs, as redis-server lists its
/// master: CLIENT LIST's flag `M` (TYPE master selects it, TYPE normal leaves it out), and
/// CLIENT KILL TYPE master ends it, after which the link connects again and resumes.
#[test]
fn the_link_is_listed_as_the_master_client_and_client_kill_ends_it() {
    let rdb = FileWriter::new(Vec::new(), &[]).unwrap().finish().unwrap();
    let (fake, s, mut c, mut m) = following_a_fake_master(&rdb);
    let sent = send_cmd(&mut m, &["SELECT", "4"]);
    until_ack(&mut m, sent as i64);
    let list = |c: &mut Raw, filter: &[&str]| {
        let mut line = vec!["CLIENT", "LIST"];
        line.extend_from_slice(filter);
        match c.cmd(&line) {
            Reply::Bulk(b) => String::from_utf8(b).unwrap(),
            Reply::Verbatim(t) => t,
            other => panic!("{other:?}"),
        }
    };
    let master = list(&mut c, &["TYPE", "master"]);
    assert_eq!(master.lines().count(), 1, "{master}");
    let local = m.stream.local_addr().unwrap().to_string();
    assert!(master.contains(&format!(" addr={local} ")), "{master}");
    assert!(master.contains(" flags=M ") && master.contains(" db=4 "), "{master}");
    assert!(master.contains(" cmd=select "), "its last command: {master}");
    assert!(!list(&mut c, &["TYPE", "normal"]).contains("flags=M"));
    assert!(list(&mut c, &[]).contains("flags=M"));
    assert_eq!(c.cmd(&["CLIENT", "KILL", "TYPE", "master"]), Reply::Int(1));
    // The link connects again and asks to resume where it was.
    let (_m2, psync) = handshake(&fake, s.port);
    assert_eq!(psync, [REPLID, &(sent + 1).to_string()]);
    assert_eq!(c.cmd(&["CLIENT", "KILL", "TYPE", "slave"]), Reply::Int(0));
}

/// Redis's own replicas check the bytes: a redis-server replica of a redis-server master, and
/// that master itself, follow this server once it was promoted from the same master's
/// replica, with a partial resync (PSYNC of the master's id at their offsets), which
/// redis-server asks for only with the master's very stream bytes up to there.
#[test]
fn redis_servers_resume_from_this_server_once_it_was_promoted_from_their_masters_replica() {
    let (Some(top), Some(sibling)) = (redis_server(), redis_server()) else {
        eprintln!("skipped: redis-server is not installed (apt-get install -y redis-server)");
        return;
    };
    let (mut t, mut r2) = (Raw::connect(top.port), Raw::connect(sibling.port));
    // No PING in the master's stream during the test: every byte of it is a write of the test.
    t.cmd(&["CONFIG", "SET", "repl-ping-replica-period", "3600"]);
    t.cmd(&["CONFIG", "SET", "repl-diskless-sync-delay", "0"]);
    t.cmd(&["SET", "a", "1"]);
    let s = Server::start(&[]);
    let mut c = s.raw();
    for r in [&mut c, &mut r2] {
        assert_eq!(r.cmd(&["REPLICAOF", "127.0.0.1", &top.port.to_string()]), ok());
        wait_for("the link up", || info_field(r, "replication", "master_link_status") == "up");
    }
    t.cmd(&["SELECT", "5"]);
    t.cmd(&["SET", "b", "2"]);
    t.cmd(&["RPUSH", "l", "x", "y"]);
    let end = info_field(&mut t, "replication", "master_repl_offset");
    let top_id = info_field(&mut t, "replication", "master_replid");
    for r in [&mut c, &mut r2] {
        wait_for("the master's end", || info_field(r, "replication", "master_repl_offset") == end);
    }
    assert_eq!(info_field(&mut c, "replication", "master_replid"), top_id);
    assert_eq!(c.cmd(&["REPLICAOF", "NO", "ONE"]), ok());
    assert_eq!(info_field(&mut c, "replication", "master_replid2"), top_id);
    let id = info_field(&mut c, "replication", "master_replid");
    // The sibling, then the old master, follow this server: both resume.
    for r in [&mut r2, &mut t] {
        assert_eq!(r.cmd(&["REPLICAOF", "127.0.0.1", &s.port.to_string()]), ok());
        wait_for("the link up", || info_field(r, "replication", "master_link_status") == "up");
        wait_for("the new id", || info_field(r, "replication", "master_replid") == id);
    }
    assert_eq!(info_field(&mut c, "stats", "sync_partial_ok"), "2");
    assert_eq!(info_field(&mut c, "stats", "sync_full"), "0");
    // This server's writes reach both, in their databases.
    c.cmd(&["SELECT", "5"]);
    c.cmd(&["RPUSH", "l", "z"]);
    c.cmd(&["SELECT", "0"]);
    c.cmd(&["SET", "after", "promotion"]);
    for r in [&mut r2, &mut t] {
        wait_for("the writes", || {
            r.cmd(&["SELECT", "5"]);
            let l = r.cmd(&["LRANGE", "l", "0", "-1"]);
            r.cmd(&["SELECT", "0"]);
            l == Reply::Array(vec![Reply::bulk("x"), Reply::bulk("y"), Reply::bulk("z")])
                && r.cmd(&["GET", "after"]) == Reply::bulk("promotion")
                && r.cmd(&["GET", "a"]) == Reply::bulk("1")
        });
    }
}

/// Redis issue #2473: a client blocked on a master that turns into a replica is answered
/// UNBLOCKED then, never served by the writes its new master sends (which would pop on the
/// replica what the master keeps).
#[test]
fn clients_blocked_on_a_master_that_turns_replica_are_unblocked() {
    let a = Server::start(&[]);
    let b = Server::start(&[]);
    let (mut ca, mut cb) = (a.raw(), b.raw());
    let mut blocked = a.raw();
    blocked.send_raw(&Raw::encode(&[b"BLPOP", b"foo", b"0"]));
    crate::common::wait_blocked(&mut ca, 1);
    crate::common::follow(&mut ca, b.port);
    match blocked.read() {
        Reply::Error(e) => assert!(e.starts_with("UNBLOCKED force unblock"), "{e}"),
        other => panic!("BLPOP answered {other:?}"),
    }
    cb.cmd(&["RPUSH", "foo", "a", "b", "c"]);
    let all = || Reply::Array(vec![Reply::bulk("a"), Reply::bulk("b"), Reply::bulk("c")]);
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while ca.cmd(&["LRANGE", "foo", "0", "-1"]) != all() {
        assert!(std::time::Instant::now() < until, "the push never reached the replica");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert_eq!(ca.cmd(&["LRANGE", "foo", "0", "-1"]), all());
    assert_eq!(cb.cmd(&["LRANGE", "foo", "0", "-1"]), all());
}

/// A writable replica deletes the keys its own clients wrote with a time once it is up, as
/// redis-server 7.0 does (`expireSlaveKeys`), and only those: the master's keys stay until the
/// master's DEL, and the deletions go into no stream (the replica's is its master's).
#[test]
fn a_writable_replica_expires_the_keys_its_own_clients_wrote_with_a_time() {
    let (_fake, _s, mut c, mut m) = following_a_fake_master(&a_key_past_its_time());
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
    let soon = (now.as_millis() + 200).to_string();
    let mut sent = 0;
    sent += send_cmd(&mut m, &["SELECT", "0"]);
    sent += send_cmd(&mut m, &["SET", "theirs", "v", "PXAT", &soon]);
    until_ack(&mut m, sent as i64);

    assert_eq!(c.cmd(&["CONFIG", "SET", "replica-read-only", "no"]), ok());
    assert_eq!(c.cmd(&["SELECT", "5"]), ok());
    for k in ["own1", "own2", "own3"] {
        assert_eq!(c.cmd(&["SET", k, "1", "PX", "200"]), ok());
    }
    assert_eq!(c.cmd(&["SET", "still", "1"]), ok());
    assert_eq!(c.cmd(&["PERSIST", "own3"]), Reply::Int(1));
    assert_eq!(info_field(&mut c, "stats", "slave_expires_tracked_keys"), "3");
    wait_for("the replica's own keys to expire", || c.cmd(&["DBSIZE"]) == Reply::Int(2));
    assert_eq!(c.cmd(&["EXISTS", "own3", "still"]), Reply::Int(2));
    assert_eq!(info_field(&mut c, "stats", "expired_keys"), "2");
    assert_eq!(info_field(&mut c, "stats", "slave_expires_tracked_keys"), "0");
    // The master's keys wait for its DEL, past their time or not; a write of a client here
    // meets such a key as absent and writes it anew.
    assert_eq!(c.cmd(&["SELECT", "0"]), ok());
    assert_eq!(c.cmd(&["DBSIZE"]), Reply::Int(2));
    assert_eq!(c.cmd(&["INCR", "past"]), Reply::Int(1));
    assert_eq!(c.cmd(&["TTL", "past"]), Reply::Int(-1));
    assert_eq!(c.cmd(&["GET", "theirs"]), Reply::Null);
    // Nothing went into the stream: the replica's offset is still the master's.
    sent += send_cmd(&mut m, &["PING"]);
    until_ack(&mut m, sent as i64);
    assert_eq!(info_field(&mut c, "replication", "master_repl_offset"), sent.to_string());
    // A master again, its own expiry takes the master's key whose time is up.
    assert_eq!(c.cmd(&["REPLICAOF", "NO", "ONE"]), ok());
    wait_for("the master's key to expire", || c.cmd(&["DBSIZE"]) == Reply::Int(1));
}

/// An error the master's command meets on a replica is counted in INFO's
/// `unexpected_error_replies` (and said in the LOG as redis-server says it); DEBUG REPLICATE
/// puts a command into the stream unrun, which is how Redis's tests make one.
#[test]
fn errors_of_the_masters_commands_are_counted_and_debug_replicate_makes_one() {
    let master = Server::start(&["--enable-debug-command", "yes"]);
    let replica = Server::start(&["--enable-debug-command", "yes"]);
    let (mut mc, mut rc) = (master.raw(), replica.raw());
    assert_eq!(mc.cmd(&["SET", "n", "1"]), ok());
    crate::common::follow(&mut rc, master.port);
    crate::common::key_reaches(&mut rc, "0", "n", Reply::bulk("1"));
    assert_eq!(info_field(&mut rc, "stats", "unexpected_error_replies"), "0");
    assert_eq!(mc.cmd(&["DEBUG", "REPLICATE", "fake-command-1", "x"]), ok());
    assert_eq!(mc.cmd(&["GET", "n"]), Reply::bulk("1"), "not run on the master");
    assert_eq!(rc.cmd(&["CONFIG", "SET", "replica-read-only", "no"]), ok());
    assert_eq!(rc.cmd(&["SET", "n", "foo"]), ok());
    assert_eq!(mc.cmd(&["INCRBY", "n", "1"]), Reply::Int(2));
    assert_eq!(mc.cmd(&["SET", "after", "1"]), ok());
    crate::common::key_reaches(&mut rc, "0", "after", Reply::bulk("1"));
    assert_eq!(info_field(&mut rc, "stats", "unexpected_error_replies"), "2");
    assert_eq!(rc.cmd(&["GET", "n"]), Reply::bulk("foo"), "diverged, as Redis allows");
    assert_eq!(info_field(&mut mc, "stats", "unexpected_error_replies"), "0");
    // A replica puts no DEBUG REPLICATE into its stream (it is its master's).
    let offset = info_field(&mut mc, "replication", "master_repl_offset");
    crate::common::replication_reaches(&mut rc, "master_repl_offset", &offset);
    assert_eq!(rc.cmd(&["DEBUG", "REPLICATE", "fake-command-2"]), ok());
    assert_eq!(info_field(&mut rc, "replication", "master_repl_offset"), offset);
}

/// A script busy past `busy-reply-threshold` on a replica refuses its clients with BUSY, but
/// not its master's commands (regression: a master's PING met BUSY, counted as the replica's
/// divergence, and under `propagation-error-behavior panic` stopped the replica): a PING runs
/// beside the script, a write waits for its end.
#[test]
fn the_masters_commands_are_never_refused_while_a_script_is_busy() {
    let (_fake, s, mut c, mut m) = following_a_fake_master(&a_key_past_its_time());
    assert_eq!(c.cmd(&["CONFIG", "SET", "busy-reply-threshold", "100"]), ok());
    let mut sent = send_cmd(&mut m, &["SELECT", "0"]);
    until_ack(&mut m, sent as i64);
    let mut script = s.raw();
    script.send_raw(&Raw::encode(&[b"EVAL", b"while true do end", b"0"]));
    wait_for(
        "the script to be busy",
        || matches!(c.cmd(&["PING"]), Reply::Error(e) if e.starts_with("BUSY")),
    );
    sent += send_cmd(&mut m, &["PING"]);
    sent += send_cmd(&mut m, &["SET", "k", "v"]);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(c.cmd(&["SCRIPT", "KILL"]), ok());
    assert!(matches!(script.read(), Reply::Error(e) if e.contains("killed")));
    until_ack(&mut m, sent as i64);
    assert_eq!(c.cmd(&["GET", "k"]), Reply::bulk("v"));
    assert_eq!(info_field(&mut c, "stats", "unexpected_error_replies"), "0");
}
