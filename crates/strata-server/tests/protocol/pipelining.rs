//! Pipelining: many commands in one packet (and split at odd points) get their replies in
//! order; inline commands mixed in; the `redis` crate's pipelines.

use crate::common::{Raw, Reply, Server};

#[test]
fn thousand_commands_in_one_write() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    let mut pkt = Vec::new();
    for i in 0..1000 {
        let k = format!("k{i}");
        let v = i.to_string();
        pkt.extend(Raw::encode(&[b"SET", k.as_bytes(), v.as_bytes()]));
        pkt.extend(Raw::encode(&[b"INCR", k.as_bytes()]));
        pkt.extend_from_slice(format!("GET {k}\r\n").as_bytes());
    }
    // Send in uneven pieces so frames straddle reads.
    for chunk in pkt.chunks(777) {
        c.send_raw(chunk);
    }
    for i in 0..1000 {
        assert_eq!(c.read(), Reply::Simple("OK".into()));
        assert_eq!(c.read(), Reply::Int(i + 1));
        assert_eq!(c.read(), Reply::bulk(&(i + 1).to_string()));
    }
}

#[test]
fn redis_crate_pipeline() {
    let srv = Server::start(&[]);
    let mut c = srv.conn();
    let mut p = redis::pipe();
    for i in 0..100 {
        p.cmd("HSET").arg("h").arg(i).arg(i * 2).ignore();
    }
    p.cmd("HLEN").arg("h");
    p.cmd("HGET").arg("h").arg(50);
    let (n, v): (usize, String) = p.query(&mut c).unwrap();
    assert_eq!(n, 100);
    assert_eq!(v, "100");
}

/// Pipelines from many connections writing one hot key: a connection whose next command's
/// key is held by another writer waits for it as a task and then runs the rest of its
/// pipeline (`server::listener`), so every increment lands once, each connection sees its
/// replies in order (its own increments strictly ascending) and the other commands of the
/// pipeline between them answer as usual.
#[test]
fn pipelines_contending_for_one_key_keep_their_order_and_every_write() {
    let srv = Server::start(&[]);
    const CONNS: usize = 8;
    const ROUNDS: usize = 200;
    std::thread::scope(|s| {
        for c in 0..CONNS {
            let srv = &srv;
            s.spawn(move || {
                let mut conn = srv.raw();
                let mine = format!("own{c}");
                let mut pkt = Vec::new();
                for _ in 0..ROUNDS {
                    pkt.extend(Raw::encode(&[b"INCR", b"hot"]));
                    pkt.extend(Raw::encode(&[b"ZADD", b"_indices", b"1", mine.as_bytes()]));
                    pkt.extend(Raw::encode(&[b"INCR", mine.as_bytes()]));
                }
                conn.send_raw(&pkt);
                let mut last = 0;
                for r in 0..ROUNDS {
                    let Reply::Int(n) = conn.read() else { panic!("INCR hot answered otherwise") };
                    assert!(n > last, "connection {c}: INCR hot gave {n} after {last}");
                    last = n;
                    assert_eq!(conn.read(), Reply::Int(i64::from(r == 0)));
                    assert_eq!(conn.read(), Reply::Int(r as i64 + 1));
                }
            });
        }
    });
    let mut c = srv.raw();
    assert_eq!(c.cmd(&["GET", "hot"]), Reply::bulk(&(CONNS * ROUNDS).to_string()));
    assert_eq!(c.cmd(&["ZCARD", "_indices"]), Reply::Int(CONNS as i64));
}
