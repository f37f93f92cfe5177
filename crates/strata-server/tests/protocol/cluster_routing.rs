//! Cluster mode's routing through the command layer, with a router that stands for the
//! replication layer's layout: keys in one slot run or are redirected with Redis Cluster's
//! replies (MOVED, CROSSSLOT, CLUSTERDOWN), READONLY lets a replica serve reads, commands
//! without keys run anywhere, and a standalone server refuses READONLY as Redis does.

use std::sync::Arc;
use strata_server::commands::dispatch;
use strata_server::config::{Config, Flags};
use strata_server::resp::Out;
use strata_server::routing::{Route, Router};
use strata_server::slots::key_slot;
use strata_server::state::{Conn, Shared};
use strata_server::storage::SyncPolicy;

/// This node leads the slot of `foo` (and of tag `{foo}`), is a replica of the slot of `bar`
/// (led at 127.0.0.1:7002), and the slot of `down` has no leader; every other slot is led at
/// 127.0.0.1:7001.
struct Layout;

impl Router for Layout {
    fn route(&self, slot: u16, write: bool, readonly: bool) -> Route {
        if slot == key_slot(b"foo") {
            Route::Local
        } else if slot == key_slot(b"bar") {
            if readonly && !write {
                Route::Local
            } else {
                Route::Moved("127.0.0.1:7002".into())
            }
        } else if slot == key_slot(b"down") {
            Route::Down
        } else {
            Route::Moved("127.0.0.1:7001".into())
        }
    }
}

fn shared(dir: &std::path::Path, clustered: bool) -> Shared {
    let cfg = Config::resolve(Flags { dir: Some(dir.to_path_buf()), ..Flags::default() }).unwrap();
    let store = strata_server::types::open(cfg.engine_options(), dir, SyncPolicy::No).unwrap();
    let sh = Shared::new(store, cfg, 0);
    if clustered {
        sh.with_router(Arc::new(Layout))
    } else {
        sh
    }
}

fn conn() -> Conn {
    Conn { id: 1, authed: true, resp3: false, close: false, readonly: false }
}

fn run(sh: &Shared, conn: &mut Conn, args: &[&str]) -> String {
    let mut out = Out::default();
    let a: Vec<Vec<u8>> = args.iter().map(|s| s.as_bytes().to_vec()).collect();
    dispatch(sh, conn, &a, &mut out);
    String::from_utf8_lossy(&out.buf).into_owned()
}

#[test]
fn keys_are_served_here_or_redirected_with_redis_cluster_replies() {
    let dir = tempfile::tempdir().unwrap();
    let sh = shared(dir.path(), true);
    let c = &mut conn();
    assert_eq!(run(&sh, c, &["SET", "foo", "1"]), "+OK\r\n");
    assert_eq!(run(&sh, c, &["GET", "foo"]), "$1\r\n1\r\n");
    let other = key_slot(b"other");
    assert_eq!(run(&sh, c, &["GET", "other"]), format!("-MOVED {other} 127.0.0.1:7001\r\n"));
    assert_eq!(run(&sh, c, &["SET", "other", "x"]), format!("-MOVED {other} 127.0.0.1:7001\r\n"));
    // Keys sharing a hash tag share a slot; keys in two slots are refused whatever the layout.
    assert_eq!(run(&sh, c, &["MSET", "{foo}a", "1", "{foo}b", "2"]), "+OK\r\n");
    assert_eq!(run(&sh, c, &["MGET", "{foo}a", "{foo}b"]), "*2\r\n$1\r\n1\r\n$1\r\n2\r\n");
    let crossslot = "-CROSSSLOT Keys in request don't hash to the same slot\r\n";
    assert_eq!(run(&sh, c, &["MGET", "foo", "other"]), crossslot);
    assert_eq!(run(&sh, c, &["DEL", "foo", "bar"]), crossslot);
    // Both keys of LMOVE/RPOPLPUSH, and the keys LMPOP's numkeys counts, are routed.
    assert_eq!(run(&sh, c, &["RPUSH", "{foo}l", "x"]), ":1\r\n");
    assert_eq!(run(&sh, c, &["LMOVE", "{foo}l", "{foo}m", "LEFT", "LEFT"]), "$1\r\nx\r\n");
    assert_eq!(run(&sh, c, &["RPOPLPUSH", "{foo}m", "other"]), crossslot);
    assert_eq!(run(&sh, c, &["LMPOP", "2", "{foo}m", "other", "LEFT"]), crossslot);
    assert_eq!(
        run(&sh, c, &["LMPOP", "1", "{foo}m", "LEFT"]),
        "*2\r\n$6\r\n{foo}m\r\n*1\r\n$1\r\nx\r\n"
    );
    assert_eq!(
        run(&sh, c, &["LMPOP", "1", "other", "LEFT"]),
        format!("-MOVED {other} 127.0.0.1:7001\r\n")
    );
    // A count that names no keys routes nowhere: the command itself replies.
    assert_eq!(
        run(&sh, c, &["LMPOP", "0", "other", "LEFT"]),
        "-ERR numkeys should be greater than 0\r\n"
    );
    assert_eq!(run(&sh, c, &["GET", "down"]), "-CLUSTERDOWN Hash slot not served\r\n");
    // The key of OBJECT is its third argument.
    let moved_other = format!("-MOVED {other} 127.0.0.1:7001\r\n");
    assert_eq!(run(&sh, c, &["OBJECT", "ENCODING", "other"]), moved_other);
    // Without keys: anywhere. Arity is checked before routing, as Redis does.
    assert_eq!(run(&sh, c, &["PING"]), "+PONG\r\n");
    assert_eq!(run(&sh, c, &["GET"]), "-ERR wrong number of arguments for 'get' command\r\n");
    assert!(run(&sh, c, &["INFO", "cluster"]).contains("cluster_enabled:1"));
    assert!(run(&sh, c, &["INFO", "server"]).contains("redis_mode:cluster"));
}

#[test]
fn readonly_connections_read_from_a_replica_and_write_to_the_leader() {
    let dir = tempfile::tempdir().unwrap();
    let sh = shared(dir.path(), true);
    let c = &mut conn();
    let bar = key_slot(b"bar");
    let moved = format!("-MOVED {bar} 127.0.0.1:7002\r\n");
    assert_eq!(run(&sh, c, &["GET", "bar"]), moved);
    assert_eq!(run(&sh, c, &["READONLY"]), "+OK\r\n");
    assert_eq!(run(&sh, c, &["GET", "bar"]), "$-1\r\n");
    assert_eq!(run(&sh, c, &["SET", "bar", "1"]), moved);
    assert_eq!(run(&sh, c, &["READWRITE"]), "+OK\r\n");
    assert_eq!(run(&sh, c, &["GET", "bar"]), moved);
}

#[test]
fn a_standalone_server_serves_every_key_and_refuses_readonly() {
    let dir = tempfile::tempdir().unwrap();
    let sh = shared(dir.path(), false);
    let c = &mut conn();
    assert_eq!(run(&sh, c, &["MSET", "foo", "1", "other", "2"]), "+OK\r\n");
    assert_eq!(run(&sh, c, &["READONLY"]), "-ERR This instance has cluster support disabled\r\n");
    assert!(run(&sh, c, &["INFO", "cluster"]).contains("cluster_enabled:0"));
}
