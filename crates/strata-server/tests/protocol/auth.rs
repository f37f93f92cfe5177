//! AUTH with a password from the flags or a config file: NOAUTH before, WRONGPASS on a bad
//! password, HELLO with AUTH.

use crate::common::{Reply, Server};

#[test]
fn requirepass_from_flag_and_file() {
    let cfg_dir = tempfile::tempdir().unwrap();
    let cfg = cfg_dir.path().join("redis.conf");
    std::fs::write(&cfg, "# test config\nrequirepass \"s3cret\"\nappendfsync no\n").unwrap();
    for args in [vec!["--requirepass", "s3cret"], vec![cfg.to_str().unwrap()]] {
        let srv = Server::start(&args);
        let mut c = srv.raw();
        assert_eq!(c.cmd(&["GET", "a"]), Reply::Error("NOAUTH Authentication required.".into()));
        assert_eq!(
            c.cmd(&["AUTH", "nope"]),
            Reply::Error("WRONGPASS invalid username-password pair or user is disabled.".into())
        );
        assert_eq!(c.cmd(&["AUTH", "s3cret"]), Reply::Simple("OK".into()));
        assert_eq!(c.cmd(&["SET", "a", "1"]), Reply::Simple("OK".into()));
        let mut d = srv.raw();
        assert!(matches!(d.cmd(&["HELLO", "3", "AUTH", "default", "s3cret"]), Reply::Map(_)));
        assert_eq!(d.cmd(&["GET", "a"]), Reply::bulk("1"));
        let url = format!("redis://:s3cret@127.0.0.1:{}/", srv.port);
        let mut r = redis::Client::open(url).unwrap().get_connection().unwrap();
        let v: String = redis::cmd("GET").arg("a").query(&mut r).unwrap();
        assert_eq!(v, "1");
    }
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    assert!(
        matches!(c.cmd(&["AUTH", "x"]), Reply::Error(e) if e.contains("without any password configured"))
    );
}

/// Before authentication, an unknown command, a wrong arity and a refused DEBUG get their own
/// errors, as redis-server 7.0.15 answers (regression: each got NOAUTH); a known command
/// with its arguments gets NOAUTH.
#[test]
fn errors_told_before_authentication_as_redis_tells_them() {
    let srv = Server::start(&["--requirepass", "pw"]);
    let mut c = srv.raw();
    let err = |s: &str| Reply::Error(s.into());
    assert_eq!(
        c.cmd(&["NOSUCH", "x"]),
        err("ERR unknown command 'NOSUCH', with args beginning with: 'x' ")
    );
    assert_eq!(c.cmd(&["GET"]), err("ERR wrong number of arguments for 'get' command"));
    match c.cmd(&["DEBUG", "SLEEP", "0"]) {
        Reply::Error(e) => assert!(e.starts_with("ERR DEBUG command not allowed."), "{e}"),
        r => panic!("{r:?}"),
    }
    assert_eq!(c.cmd(&["GET", "a"]), err("NOAUTH Authentication required."));
}
