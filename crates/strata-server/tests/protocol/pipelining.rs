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
