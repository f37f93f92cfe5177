//! A redis-server child for the tests that compare with it or talk to it (skipped with a
//! message where none is installed), and what they compare: each key's type, contents and
//! expiry time.

use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{Raw, Reply};

/// A redis-server child, killed when dropped.
pub struct RedisServer {
    pub child: Child,
    pub port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn redis_server() -> Option<RedisServer> {
    redis_server_loading(None)
}

/// A redis-server started on a directory holding `dump` as its `dump.rdb` (which it loads at
/// start), once it answers PING; `None` where redis-server is not installed.
pub fn redis_server_loading(dump: Option<&[u8]>) -> Option<RedisServer> {
    let dir = tempfile::tempdir().unwrap();
    if let Some(d) = dump {
        std::fs::write(dir.path().join("dump.rdb"), d).unwrap();
    }
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let child = Command::new("redis-server")
        .args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .arg("--dir")
        .arg(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let r = RedisServer { child, port, _dir: dir };
    let until = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < until, "redis-server did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut c = Raw::connect(port);
    while c.cmd(&["PING"]) != Reply::Simple("PONG".into()) {
        assert!(Instant::now() < until, "redis-server did not load its dump");
        std::thread::sleep(Duration::from_millis(20));
    }
    Some(r)
}

/// What the test compares on both servers: each key's type and contents.
pub fn contents(c: &mut Raw, keys: &[&str]) -> Vec<Reply> {
    keys.iter()
        .map(|k| {
            let t = match c.cmd(&["TYPE", k]) {
                Reply::Simple(t) => t,
                other => panic!("{other:?}"),
            };
            let body = match t.as_str() {
                "string" => c.cmd(&["GET", k]),
                "list" => c.cmd(&["LRANGE", k, "0", "-1"]),
                "hash" => {
                    let mut v = match c.cmd(&["HGETALL", k]) {
                        Reply::Array(v) => v,
                        other => panic!("{other:?}"),
                    };
                    let mut pairs: Vec<_> = v.chunks(2).map(|p| format!("{p:?}")).collect();
                    pairs.sort();
                    v.clear();
                    Reply::Simple(pairs.join(","))
                }
                "set" => {
                    let mut v = match c.cmd(&["SMEMBERS", k]) {
                        Reply::Array(v) => {
                            v.into_iter().map(|x| format!("{x:?}")).collect::<Vec<_>>()
                        }
                        other => panic!("{other:?}"),
                    };
                    v.sort();
                    Reply::Simple(v.join(","))
                }
                "zset" => c.cmd(&["ZRANGE", k, "0", "-1", "WITHSCORES"]),
                "stream" => c.cmd(&["XRANGE", k, "-", "+"]),
                "none" => Reply::Null,
                other => panic!("type {other}"),
            };
            let ttl = c.cmd(&["PEXPIRETIME", k]);
            Reply::Array(vec![Reply::Simple(t), body, ttl])
        })
        .collect()
}
