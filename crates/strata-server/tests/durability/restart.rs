//! Restart persistence: stop the server (SIGTERM, which flushes), start it on the same
//! directory, every type's data is there; then the same after a second restart with
//! appendfsync always.

use crate::common::Server;
use redis::Commands;

fn fill(c: &mut redis::Connection) {
    let _: () = c.set("s", "v").unwrap();
    let _: () = redis::cmd("SET").arg("ttl").arg("v").arg("EX").arg(1000).query(c).unwrap();
    let _: () = c.hset_multiple("h", &[("a", "1"), ("b", "2")]).unwrap();
    let _: () = c.rpush("l", &["x", "y", "z"]).unwrap();
    let _: () = c.sadd("set", &["m", "n"]).unwrap();
    let _: () = c.zadd_multiple("z", &[(1.0, "one"), (2.0, "two")]).unwrap();
}

fn check(c: &mut redis::Connection) {
    assert_eq!(c.get::<_, String>("s").unwrap(), "v");
    assert!(c.ttl::<_, i64>("ttl").unwrap() > 900);
    assert_eq!(c.hget::<_, _, String>("h", "b").unwrap(), "2");
    assert_eq!(c.lrange::<_, Vec<String>>("l", 0, -1).unwrap(), vec!["x", "y", "z"]);
    assert_eq!(c.scard::<_, usize>("set").unwrap(), 2);
    assert_eq!(
        c.zrange_withscores::<_, Vec<(String, f64)>>("z", 0, -1).unwrap(),
        vec![("one".into(), 1.0), ("two".into(), 2.0)]
    );
    assert_eq!(redis::cmd("DBSIZE").query::<usize>(c).unwrap(), 6);
}

#[test]
fn data_survives_restart() {
    let mut srv = Server::start(&[]);
    fill(&mut srv.conn());
    check(&mut srv.conn());
    srv.stop();
    let dir = srv.keep_dir();
    let mut srv = Server::start_in(dir.path(), &["--appendfsync", "always"]);
    check(&mut srv.conn());
    let _: () = srv.conn().set("after", "1").unwrap();
    srv.stop();
    let srv = Server::start_in(dir.path(), &[]);
    let mut c = srv.conn();
    check_after(&mut c);
}

fn check_after(c: &mut redis::Connection) {
    assert_eq!(c.get::<_, String>("after").unwrap(), "1");
    assert_eq!(c.hget::<_, _, String>("h", "a").unwrap(), "1");
}

/// A supervisor that sends SIGTERM as soon as it reads "Ready to accept connections" gets the
/// graceful shutdown: the handlers are installed before the line is printed (they used to be
/// installed when the listener first polled them, and the signal then killed the process).
#[test]
fn a_sigterm_right_after_ready_is_a_graceful_shutdown() {
    for _ in 0..20 {
        // `stop` signals at once and asserts a clean exit.
        Server::start(&[]).stop();
    }
}

/// SAVE flushes every family to table files (the WAL left with nothing to replay), BGSAVE does
/// it in the background, LASTSAVE moves; SHUTDOWN stops the server as SIGTERM does (a clean
/// exit, data there after a restart); SHUTDOWN ABORT has nothing to abort.
#[test]
fn save_bgsave_lastsave_and_shutdown() {
    let srv = Server::start(&[]);
    let mut c = srv.conn();
    fill(&mut c);
    let before: i64 = redis::cmd("LASTSAVE").query(&mut c).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let _: () = redis::cmd("SAVE").query(&mut c).unwrap();
    let after: i64 = redis::cmd("LASTSAVE").query(&mut c).unwrap();
    assert!(after > before, "LASTSAVE {before} then {after}");
    let info: String = redis::cmd("INFO").arg("persistence").query(&mut c).unwrap();
    assert!(info.contains(&format!("rdb_last_save_time:{after}")), "{info}");
    let started: String = redis::cmd("BGSAVE").query(&mut c).unwrap();
    assert_eq!(started, "Background saving started");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let info: String = redis::cmd("INFO").arg("persistence").query(&mut c).unwrap();
        if info.contains("rdb_bgsave_in_progress:0") {
            assert!(info.contains("rdb_last_bgsave_status:ok"), "{info}");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "BGSAVE never finished");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let e = redis::cmd("BGSAVE").arg("NOW").query::<String>(&mut c).unwrap_err();
    assert_eq!(e.code(), Some("ERR"), "{e}");
    let e = redis::cmd("SHUTDOWN").arg("ABORT").query::<String>(&mut c).unwrap_err();
    assert_eq!(e.detail(), Some("No shutdown in progress."), "{e}");
    let e = redis::cmd("SHUTDOWN").arg("SAVE").arg("NOSAVE").query::<String>(&mut c).unwrap_err();
    assert_eq!(e.detail(), Some("syntax error"), "{e}");
    // SHUTDOWN: no reply, the connection closes, the process exits cleanly.
    let mut raw = srv.raw();
    raw.send_raw(&crate::common::Raw::encode(&[b"SHUTDOWN", b"NOSAVE"]));
    assert_eq!(raw.try_read(), None, "SHUTDOWN answered instead of closing the connection");
    let mut srv = srv;
    let status = srv.child.wait().unwrap();
    assert!(status.success(), "server exited with {status}");
    let dir = srv.keep_dir();
    let srv = Server::start_in(dir.path(), &[]);
    check(&mut srv.conn());
}
