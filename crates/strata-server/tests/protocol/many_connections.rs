//! 1,000 concurrent connections held open at once, each doing a few commands, no errors.

use crate::common::{Raw, Reply, Server};

const N: usize = 1000;

fn raise_nofile() {
    // SAFETY: plain libc calls on a local struct.
    unsafe {
        let mut r = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) == 0 && r.rlim_cur < 4096 {
            r.rlim_cur = r.rlim_max.min(8192);
            libc::setrlimit(libc::RLIMIT_NOFILE, &r);
        }
    }
}

#[test]
fn thousand_connections() {
    raise_nofile();
    // The child inherits the raised limit.
    let srv = Server::start(&[]);
    let mut conns: Vec<Raw> = (0..N).map(|_| Raw::connect(srv.port)).collect();
    for (i, c) in conns.iter_mut().enumerate() {
        let (key, val) = (format!("c{i}"), i.to_string());
        c.send_raw(&Raw::encode(&[b"SET", key.as_bytes(), val.as_bytes()]));
    }
    for c in &mut conns {
        assert_eq!(c.read(), Reply::Simple("OK".into()));
    }
    for (i, c) in conns.iter_mut().enumerate() {
        assert_eq!(c.cmd(&["INCR", &format!("c{i}")]), Reply::Int(i as i64 + 1));
        assert_eq!(c.cmd(&["PING"]), Reply::Simple("PONG".into()));
    }
    let info = match conns[0].cmd(&["INFO", "clients"]) {
        Reply::Bulk(b) => String::from_utf8(b).unwrap(),
        other => panic!("{other:?}"),
    };
    let n: usize = info
        .lines()
        .find_map(|l| l.strip_prefix("connected_clients:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(n >= N, "connected_clients {n}");
}
