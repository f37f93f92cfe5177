//! FAILOVER: a master hands its role to one of its replicas (`commands::failover`), among
//! this server's nodes and with redis-server on either side where it is installed; its
//! refusals, the writes it holds, ABORT and TIMEOUT.

use std::time::{Duration, Instant};

use crate::common::redis_peer::redis_server;
use crate::common::{
    blocked_clients, follow, info_field, key_reaches, replication_reaches, Raw, Reply, Server,
};

fn ok() -> Reply {
    Reply::Simple("OK".into())
}

fn err(e: &str) -> Reply {
    Reply::Error(e.into())
}

#[test]
fn failover_swaps_a_master_and_its_replica_and_the_other_replica_resumes() {
    let (m, r1, r2) = (Server::start(&[]), Server::start(&[]), Server::start(&[]));
    let (mut cm, mut c1, mut c2) = (m.raw(), r1.raw(), r2.raw());
    cm.cmd(&["SET", "k", "1"]);
    follow(&mut c1, m.port);
    follow(&mut c2, m.port);
    cm.cmd(&["INCR", "k"]);
    let to = r1.port.to_string();
    assert_eq!(cm.cmd(&["FAILOVER", "TO", "127.0.0.1", &to, "TIMEOUT", "20000"]), ok());
    // The old master follows R1, which resumed its stream; R1 is a master.
    replication_reaches(&mut cm, "role", "slave");
    replication_reaches(&mut cm, "master_link_status", "up");
    replication_reaches(&mut cm, "master_failover_state", "no-failover");
    assert_eq!(info_field(&mut cm, "replication", "master_port"), to);
    assert_eq!(info_field(&mut cm, "replication", "repl_partial_syncs"), "1");
    assert_eq!(info_field(&mut c1, "replication", "role"), "master");
    assert_eq!(info_field(&mut c1, "stats", "sync_partial_ok"), "1");
    assert_eq!(info_field(&mut c1, "stats", "sync_full"), "0");
    assert!(matches!(cm.cmd(&["SET", "k", "x"]), Reply::Error(e) if e.starts_with("READONLY")));
    assert_eq!(
        cm.cmd(&["CONFIG", "GET", "replicaof"]),
        Reply::Array(vec![Reply::bulk("replicaof"), Reply::bulk(&format!("127.0.0.1 {to}"))])
    );
    // R2 still follows the old master, now a replica of R1: R1's writes reach both.
    c1.cmd(&["INCR", "k"]);
    key_reaches(&mut cm, "0", "k", Reply::bulk("3"));
    key_reaches(&mut c2, "0", "k", Reply::bulk("3"));
    assert_eq!(info_field(&mut c2, "replication", "repl_full_syncs"), "1");
    // And back, to any replica: R1 has one, the old master.
    assert_eq!(c1.cmd(&["FAILOVER"]), ok());
    replication_reaches(&mut c1, "role", "slave");
    replication_reaches(&mut cm, "role", "master");
    cm.cmd(&["SET", "back", "1"]);
    key_reaches(&mut c1, "0", "back", Reply::bulk("1"));
    key_reaches(&mut c2, "0", "back", Reply::bulk("1"));
}

#[test]
fn failover_is_refused_as_redis_refuses_it() {
    let (m, r) = (Server::start(&[]), Server::start(&[]));
    let (mut cm, mut cr) = (m.raw(), r.raw());
    assert_eq!(cm.cmd(&["FAILOVER"]), err("ERR FAILOVER requires connected replicas."));
    assert_eq!(cm.cmd(&["FAILOVER", "ABORT"]), err("ERR No failover in progress."));
    follow(&mut cr, m.port);
    let port = r.port.to_string();
    for (args, e) in [
        (vec!["FAILOVER", "TIMEOUT", "0"], "ERR FAILOVER timeout must be greater than 0"),
        (vec!["FAILOVER", "TIMEOUT", "x"], "ERR value is not an integer or out of range"),
        (vec!["FAILOVER", "TO", "127.0.0.1"], "ERR syntax error"),
        (vec!["FAILOVER", "FORCE", "FORCE"], "ERR syntax error"),
        (vec!["FAILOVER", "NOW"], "ERR syntax error"),
        (
            vec!["FAILOVER", "TO", "127.0.0.1", &port, "FORCE"],
            "ERR FAILOVER with force option requires both a timeout and target HOST and IP.",
        ),
        (
            vec!["FAILOVER", "TO", "127.0.0.1", "1"],
            "ERR FAILOVER target HOST and PORT is not a replica.",
        ),
    ] {
        assert_eq!(cm.cmd(&args), err(e), "{args:?}");
    }
    assert_eq!(cr.cmd(&["FAILOVER"]), err("ERR FAILOVER is not valid when server is a replica."));
    // A PSYNC FAILOVER to a master, or naming another stream.
    let mut raw = m.raw();
    assert_eq!(
        raw.cmd(&["PSYNC", "x", "1", "FAILOVER"]),
        err("ERR PSYNC FAILOVER can't be sent to a master.")
    );
    assert_eq!(
        cr.cmd(&["PSYNC", "x", "1", "FAILOVER"]),
        err("ERR PSYNC FAILOVER replid must match my replid.")
    );
    assert_eq!(info_field(&mut cr, "replication", "role"), "slave");
}

#[test]
fn writes_wait_during_a_failover_until_it_ends_and_abort_and_timeout_end_it() {
    let m = Server::start(&[]);
    let mut cm = m.raw();
    cm.cmd(&["SET", "k", "1"]);
    // A replica that never acknowledges: the failover waits for it.
    let mut fake = m.raw();
    assert_eq!(fake.cmd(&["REPLCONF", "listening-port", "1"]), ok());
    fake.send_raw(b"PSYNC ? -1\r\n");
    let until = Instant::now() + Duration::from_secs(10);
    while info_field(&mut cm, "replication", "connected_slaves") != "1" {
        assert!(Instant::now() < until, "the replica is not listed");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(cm.cmd(&["FAILOVER", "TO", "127.0.0.1", "1"]), ok());
    assert_eq!(info_field(&mut cm, "replication", "master_failover_state"), "waiting-for-sync");
    assert_eq!(cm.cmd(&["FAILOVER"]), err("ERR FAILOVER already in progress."));
    assert_eq!(
        cm.cmd(&["REPLICAOF", "NO", "ONE"]),
        err("ERR REPLICAOF not allowed while failing over.")
    );
    // A write waits; a read does not; CLIENT UNPAUSE lets nothing go.
    let mut writer = m.raw();
    writer.send_raw(&Raw::encode(&[b"SET", b"k", b"2"]));
    let mut other = m.raw();
    let until = Instant::now() + Duration::from_secs(10);
    while blocked_clients(&mut other) != 1 {
        assert!(Instant::now() < until, "the write was not held");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(other.cmd(&["GET", "k"]), Reply::bulk("1"));
    assert_eq!(other.cmd(&["CLIENT", "UNPAUSE"]), ok());
    assert_eq!(blocked_clients(&mut other), 1);
    assert_eq!(cm.cmd(&["FAILOVER", "ABORT"]), ok());
    assert_eq!(writer.read(), ok());
    assert_eq!(info_field(&mut cm, "replication", "master_failover_state"), "no-failover");
    assert_eq!(info_field(&mut cm, "replication", "role"), "master");
    // A timeout without FORCE ends it too, the server still a master.
    assert_eq!(cm.cmd(&["FAILOVER", "TIMEOUT", "200"]), ok());
    replication_reaches(&mut cm, "master_failover_state", "no-failover");
    assert_eq!(info_field(&mut cm, "replication", "role"), "master");
    assert_eq!(cm.cmd(&["SET", "k", "3"]), ok());
}

/// redis-server on the other side: a redis-server master fails over to this server, then
/// this server fails over back to it (each PSYNC FAILOVER the other one's).
#[test]
fn failover_between_this_server_and_a_redis_server_both_ways() {
    let Some(redis) = redis_server() else {
        eprintln!("skipped: redis-server is not installed (apt-get install -y redis-server)");
        return;
    };
    let mut rm = Raw::connect(redis.port);
    rm.cmd(&["CONFIG", "SET", "repl-diskless-sync-delay", "0"]);
    rm.cmd(&["SET", "k", "1"]);
    let s = Server::start(&[]);
    let mut cs = s.raw();
    follow(&mut cs, redis.port);
    rm.cmd(&["SELECT", "3"]);
    rm.cmd(&["SET", "in3", "x"]);
    rm.cmd(&["SELECT", "0"]);
    let to = s.port.to_string();
    // Online on the redis-server once it has the replica's first ACK after the load.
    let until = Instant::now() + Duration::from_secs(10);
    while !info_field(&mut rm, "replication", "slave0").contains("state=online") {
        assert!(Instant::now() < until, "the replica never went online");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(rm.cmd(&["FAILOVER", "TO", "127.0.0.1", &to]), ok());
    replication_reaches(&mut cs, "role", "master");
    replication_reaches(&mut rm, "role", "slave");
    replication_reaches(&mut rm, "master_link_status", "up");
    assert_eq!(info_field(&mut cs, "stats", "sync_partial_ok"), "1");
    cs.cmd(&["INCR", "k"]);
    key_reaches(&mut rm, "0", "k", Reply::bulk("2"));
    // Back: this server hands the role to the redis-server.
    assert_eq!(cs.cmd(&["FAILOVER"]), ok());
    replication_reaches(&mut rm, "role", "master");
    replication_reaches(&mut cs, "role", "slave");
    replication_reaches(&mut cs, "master_link_status", "up");
    assert_eq!(info_field(&mut cs, "replication", "repl_partial_syncs"), "1");
    rm.cmd(&["INCR", "k"]);
    key_reaches(&mut cs, "0", "k", Reply::bulk("3"));
    cs.cmd(&["SELECT", "3"]);
    assert_eq!(cs.cmd(&["GET", "in3"]), Reply::bulk("x"));
}

/// Clients writing all through a failover: every increment acknowledged by the old master is
/// on the new one exactly once, none refused is, and all three nodes end the same.
#[test]
fn writes_acknowledged_through_a_failover_are_all_on_the_new_master_once() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let (m, r1, r2) = (Server::start(&[]), Server::start(&[]), Server::start(&[]));
    let (mut cm, mut c1, mut c2) = (m.raw(), r1.raw(), r2.raw());
    follow(&mut c1, m.port);
    follow(&mut c2, m.port);
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..3)
        .map(|i| {
            let (port, stop) = (m.port, stop.clone());
            std::thread::spawn(move || {
                let mut c = Raw::connect(port);
                let key = format!("counter{i}");
                let mut acked = 0i64;
                while !stop.load(Ordering::Relaxed) {
                    match c.cmd(&["INCR", &key]) {
                        Reply::Int(n) => {
                            acked += 1;
                            assert_eq!(n, acked, "{key}: every increment once");
                        }
                        Reply::Error(e) if e.starts_with("READONLY") => break,
                        other => panic!("{key}: {other:?}"),
                    }
                }
                (key, acked)
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(cm.cmd(&["FAILOVER", "TO", "127.0.0.1", &r1.port.to_string()]), ok());
    replication_reaches(&mut c1, "role", "master");
    replication_reaches(&mut cm, "master_link_status", "up");
    std::thread::sleep(Duration::from_millis(200));
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        let (key, acked) = w.join().unwrap();
        assert!(acked > 0, "{key}: no write before the failover");
        for c in [&mut c1, &mut cm, &mut c2] {
            key_reaches(c, "0", &key, Reply::bulk(&acked.to_string()));
        }
    }
}
