//! redis-cli and redis-benchmark against the server, when the Debian packages are installed
//! (`apt-get install redis-tools`); skipped with a message otherwise.

use crate::common::Server;
use std::process::Command;

fn have(tool: &str) -> bool {
    Command::new(tool).arg("--version").output().is_ok_and(|o| o.status.success())
}

#[test]
fn redis_cli_and_benchmark() {
    if !have("redis-cli") || !have("redis-benchmark") {
        eprintln!("SKIP: redis-cli/redis-benchmark not installed (apt-get install redis-tools)");
        return;
    }
    let srv = Server::start(&[]);
    let port = srv.port.to_string();
    let cli = |args: &[&str]| {
        let o = Command::new("redis-cli").args(["-p", &port]).args(args).output().unwrap();
        assert!(o.status.success());
        String::from_utf8(o.stdout).unwrap()
    };
    assert_eq!(cli(&["PING"]).trim(), "PONG");
    assert_eq!(cli(&["SET", "a", "hello"]).trim(), "OK");
    assert_eq!(cli(&["GET", "a"]).trim(), "hello");
    assert!(cli(&["INFO", "strata"]).contains("strata_cf_metadata_stats"));
    let o = Command::new("redis-benchmark")
        .args([
            "-p",
            &port,
            "-q",
            "-n",
            "2000",
            "-P",
            "16",
            "-t",
            "set,get,incr,lpush,rpush,lpop,rpop,sadd,hset,spop,zadd,zpopmin,lrange_100,mset",
        ])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{out}\n{err}");
    for t in ["SET", "GET", "INCR", "LPUSH", "HSET", "ZADD", "ZPOPMIN", "MSET (10 keys)"] {
        assert!(out.contains(&format!("{t}: ")), "no {t} line in:\n{out}");
    }
    assert!(!err.contains("ERR"), "{err}");
}
