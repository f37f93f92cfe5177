//! Read-modify-write commands on one key from many connections are atomic (the striped lock
//! table): concurrent INCR, HINCRBY, LPUSH, SADD and ZINCRBY lose no update.

use crate::common::{Raw, Reply, Server};

const THREADS: usize = 8;
const OPS: usize = 200;

#[test]
fn concurrent_read_modify_write_is_atomic() {
    let srv = Server::start(&[]);
    let port = srv.port;
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            std::thread::spawn(move || {
                let mut c = Raw::connect(port);
                for i in 0..OPS {
                    let m = format!("{t}-{i}");
                    c.send_raw(&Raw::encode(&[b"INCR", b"counter"]));
                    c.send_raw(&Raw::encode(&[b"HINCRBY", b"h", b"f", b"2"]));
                    c.send_raw(&Raw::encode(&[b"LPUSH", b"l", m.as_bytes()]));
                    c.send_raw(&Raw::encode(&[b"SADD", b"s", m.as_bytes()]));
                    c.send_raw(&Raw::encode(&[b"ZINCRBY", b"z", b"1", b"m"]));
                    for _ in 0..5 {
                        assert!(!matches!(c.read(), Reply::Error(_)));
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let mut c = srv.raw();
    let n = (THREADS * OPS) as i64;
    assert_eq!(c.cmd(&["GET", "counter"]), Reply::bulk(&n.to_string()));
    assert_eq!(c.cmd(&["HGET", "h", "f"]), Reply::bulk(&(2 * n).to_string()));
    assert_eq!(c.cmd(&["LLEN", "l"]), Reply::Int(n));
    assert_eq!(c.cmd(&["SCARD", "s"]), Reply::Int(n));
    assert_eq!(c.cmd(&["ZSCORE", "z", "m"]), Reply::bulk(&n.to_string()));
}

/// MGET of two keys that MSET writes together never sees one new and one old (a reader of
/// several keys holds their stripes: regression for torn multi-key reads).
#[test]
fn mget_never_sees_half_an_mset() {
    let srv = Server::start(&[]);
    let port = srv.port;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut r = Raw::connect(port);
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let Reply::Array(v) = r.cmd(&["MGET", "p", "q"]) else { panic!("MGET") };
                assert_eq!(v[0], v[1], "MGET saw half an MSET");
            }
        })
    };
    let mut w = Raw::connect(port);
    for i in 0..2000 {
        let v = i.to_string();
        assert_eq!(w.cmd(&["MSET", "p", &v, "q", &v]), Reply::Simple("OK".into()));
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    reader.join().unwrap();
}
