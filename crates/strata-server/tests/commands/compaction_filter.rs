//! The compaction filter collects stale sub-keys: a big hash and a big sorted set are written
//! and flushed to tables, then deleted (an O(1) metadata delete), overwritten with another
//! type, or expired; a manual compaction of the sub-key families leaves only the sub-keys of
//! live keys. A hash that grew past the compact limits keeps its sub-keys; a small (compact)
//! hash has none, and a compact hash recreated over a deleted big one leaves the big one's
//! sub-keys stale; a deleted stream leaves none of its entries, nodes and group records.
//! Runs the store in-process and counts entries with the engine's iterators.

use std::sync::Arc;
use strata_server::commands::dispatch;
use strata_server::config::{Config, Flags};
use strata_server::resp::Out;
use strata_server::state::{Conn, Shared};
use strata_server::storage::SyncPolicy;

fn shared(dir: &std::path::Path) -> Arc<Shared> {
    let cfg = Config::resolve(Flags { dir: Some(dir.to_path_buf()), ..Flags::default() }).unwrap();
    let store =
        strata_server::types::open_databases(cfg.engine_options(), dir, SyncPolicy::No, 1).unwrap();
    Arc::new(Shared::new(store, cfg, 0))
}

fn run(sh: &Shared, args: &[&str]) -> Vec<u8> {
    let mut conn = Conn::new(1, true);
    let mut out = Out::default();
    let a: Vec<Vec<u8>> = args.iter().map(|s| s.as_bytes().to_vec()).collect();
    dispatch(sh, &mut conn, &a, &mut out);
    assert!(!out.buf.starts_with(b"-"), "{args:?}: {}", String::from_utf8_lossy(&out.buf));
    out.buf
}

fn count(sh: &Shared, cf: &strata::ColumnFamily) -> usize {
    let mut it = sh.engine().db.raw_iterator_cf(cf);
    it.seek_to_first();
    let mut n = 0;
    while it.valid() {
        n += 1;
        it.next();
    }
    it.status().unwrap();
    n
}

#[test]
fn stale_subkeys_are_collected() {
    let tmp = tempfile::tempdir().unwrap();
    let sh = shared(tmp.path());
    for i in 0..2000 {
        let f = format!("f{i}");
        run(&sh, &["HSET", "big", &f, "value"]);
        run(&sh, &["ZADD", "bigz", &i.to_string(), &f]);
        if i < 300 {
            run(&sh, &["RPUSH", "list", &f]);
            run(&sh, &["SADD", "set", &f]);
            run(&sh, &["HSET", "grown", &f, "v"]);
            run(&sh, &["HSET", "redo", &f, "v"]);
        }
    }
    // Compact: no sub-keys.
    run(&sh, &["HSET", "live", "a", "1", "b", "2"]);
    run(&sh, &["ZADD", "livez", "1", "a"]);
    let st = sh.dbs.store(0);
    st.db.flush_cf(&*st.sub_cf).unwrap();
    st.db.flush_cf(&*st.score_cf).unwrap();
    st.db.flush_cf(&*st.meta_cf).unwrap();
    assert_eq!(count(&sh, &st.sub_cf), 2000 + 2000 + 300 + 300 + 300 + 300 + 1);
    assert_eq!(count(&sh, &st.score_cf), 2000 + 1);
    run(&sh, &["DEL", "big"]);
    run(&sh, &["SET", "bigz", "now a string"]);
    run(&sh, &["PEXPIRE", "list", "1"]);
    run(&sh, &["DEL", "set"]);
    run(&sh, &["SADD", "set", "fresh"]);
    run(&sh, &["DEL", "redo"]);
    run(&sh, &["HSET", "redo", "f1", "compact again"]);
    std::thread::sleep(std::time::Duration::from_millis(10));
    for cf in [&st.meta_cf, &st.sub_cf, &st.score_cf] {
        st.db.flush_cf(&**cf).unwrap();
        st.db.compact_range_cf(&**cf, None::<&[u8]>, None::<&[u8]>).unwrap();
    }
    assert_eq!(count(&sh, &st.sub_cf), 300 + 1 + 1, "stale sub-keys left");
    assert_eq!(count(&sh, &st.score_cf), 1, "stale score entries left");
    assert_eq!(run(&sh, &["HGET", "live", "b"]), b"$1\r\n2\r\n");
    assert_eq!(run(&sh, &["HLEN", "grown"]), b":300\r\n");
    assert_eq!(run(&sh, &["HGET", "grown", "f299"]), b"$1\r\nv\r\n");
    assert_eq!(run(&sh, &["HGETALL", "redo"]), b"*2\r\n$2\r\nf1\r\n$13\r\ncompact again\r\n");
    assert_eq!(run(&sh, &["SMEMBERS", "set"]), b"*1\r\n$5\r\nfresh\r\n");
    st.close().unwrap();
}

#[test]
fn a_deleted_streams_records_are_collected() {
    let tmp = tempfile::tempdir().unwrap();
    let sh = shared(tmp.path());
    for i in 1..=500 {
        run(&sh, &["XADD", "gone", &format!("{i}-0"), "f", "v"]);
    }
    run(&sh, &["XGROUP", "CREATE", "gone", "g", "0"]);
    run(&sh, &["XREADGROUP", "GROUP", "g", "c", "COUNT", "100", "STREAMS", "gone", ">"]);
    for i in 1..=3 {
        run(&sh, &["XADD", "kept", &format!("{i}-0"), "f", "v"]);
    }
    let st = sh.dbs.store(0);
    st.db.flush_cf(&*st.sub_cf).unwrap();
    // Entries, 5 nodes, a group, 100 PEL entries, a consumer and its 100 PEL index entries;
    // and the kept stream's 3 entries and node.
    assert_eq!(count(&sh, &st.sub_cf), 500 + 5 + 1 + 100 + 1 + 100 + 4);
    run(&sh, &["DEL", "gone"]);
    for cf in [&st.meta_cf, &st.sub_cf] {
        st.db.flush_cf(&**cf).unwrap();
        st.db.compact_range_cf(&**cf, None::<&[u8]>, None::<&[u8]>).unwrap();
    }
    assert_eq!(count(&sh, &st.sub_cf), 4, "stale stream records left");
    assert_eq!(run(&sh, &["XLEN", "kept"]), b":3\r\n");
    st.close().unwrap();
}
