//! The compaction filter collects stale sub-keys: a big hash and a big sorted set are written
//! and flushed to tables, then deleted (an O(1) metadata delete), overwritten with another
//! type, or expired; a manual compaction of the sub-key families leaves only the sub-keys of
//! live keys. A hash that grew past the compact limits keeps its sub-keys; a small (compact)
//! hash has none, and a compact hash recreated over a deleted big one leaves the big one's
//! sub-keys stale; a deleted stream leaves none of its entries, nodes and group records.
//! Runs the store in-process and counts entries with the engine's iterators.

use crate::common::{in_process, run_ok};
use strata_server::state::Shared;

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
    let sh = in_process(tmp.path());
    for i in 0..2000 {
        let f = format!("f{i}");
        run_ok(&sh, &["HSET", "big", &f, "value"]);
        run_ok(&sh, &["ZADD", "bigz", &i.to_string(), &f]);
        if i < 300 {
            run_ok(&sh, &["RPUSH", "list", &f]);
            run_ok(&sh, &["SADD", "set", &f]);
            run_ok(&sh, &["HSET", "grown", &f, "v"]);
            run_ok(&sh, &["HSET", "redo", &f, "v"]);
        }
    }
    // Compact: no sub-keys.
    run_ok(&sh, &["HSET", "live", "a", "1", "b", "2"]);
    run_ok(&sh, &["ZADD", "livez", "1", "a"]);
    let st = sh.dbs.store(0);
    st.db.flush_cf(&*st.sub_cf).unwrap();
    st.db.flush_cf(&*st.score_cf).unwrap();
    st.db.flush_cf(&*st.meta_cf).unwrap();
    assert_eq!(count(&sh, &st.sub_cf), 2000 + 2000 + 300 + 300 + 300 + 300 + 1);
    assert_eq!(count(&sh, &st.score_cf), 2000 + 1);
    run_ok(&sh, &["DEL", "big"]);
    run_ok(&sh, &["SET", "bigz", "now a string"]);
    run_ok(&sh, &["PEXPIRE", "list", "1"]);
    run_ok(&sh, &["DEL", "set"]);
    run_ok(&sh, &["SADD", "set", "fresh"]);
    run_ok(&sh, &["DEL", "redo"]);
    run_ok(&sh, &["HSET", "redo", "f1", "compact again"]);
    std::thread::sleep(std::time::Duration::from_millis(10));
    for cf in [&st.meta_cf, &st.sub_cf, &st.score_cf] {
        st.db.flush_cf(&**cf).unwrap();
        st.db.compact_range_cf(&**cf, None::<&[u8]>, None::<&[u8]>).unwrap();
    }
    assert_eq!(count(&sh, &st.sub_cf), 300 + 1 + 1, "stale sub-keys left");
    assert_eq!(count(&sh, &st.score_cf), 1, "stale score entries left");
    assert_eq!(run_ok(&sh, &["HGET", "live", "b"]), b"$1\r\n2\r\n");
    assert_eq!(run_ok(&sh, &["HLEN", "grown"]), b":300\r\n");
    assert_eq!(run_ok(&sh, &["HGET", "grown", "f299"]), b"$1\r\nv\r\n");
    assert_eq!(run_ok(&sh, &["HGETALL", "redo"]), b"*2\r\n$2\r\nf1\r\n$13\r\ncompact again\r\n");
    assert_eq!(run_ok(&sh, &["SMEMBERS", "set"]), b"*1\r\n$5\r\nfresh\r\n");
    st.close().unwrap();
}

#[test]
fn a_deleted_streams_records_are_collected() {
    let tmp = tempfile::tempdir().unwrap();
    let sh = in_process(tmp.path());
    for i in 1..=500 {
        run_ok(&sh, &["XADD", "gone", &format!("{i}-0"), "f", "v"]);
    }
    run_ok(&sh, &["XGROUP", "CREATE", "gone", "g", "0"]);
    run_ok(&sh, &["XREADGROUP", "GROUP", "g", "c", "COUNT", "100", "STREAMS", "gone", ">"]);
    for i in 1..=3 {
        run_ok(&sh, &["XADD", "kept", &format!("{i}-0"), "f", "v"]);
    }
    let st = sh.dbs.store(0);
    st.db.flush_cf(&*st.sub_cf).unwrap();
    // Entries, 5 nodes, a group, 100 PEL entries, a consumer and its 100 PEL index entries;
    // and the kept stream's 3 entries and node.
    assert_eq!(count(&sh, &st.sub_cf), 500 + 5 + 1 + 100 + 1 + 100 + 4);
    run_ok(&sh, &["DEL", "gone"]);
    for cf in [&st.meta_cf, &st.sub_cf] {
        st.db.flush_cf(&**cf).unwrap();
        st.db.compact_range_cf(&**cf, None::<&[u8]>, None::<&[u8]>).unwrap();
    }
    assert_eq!(count(&sh, &st.sub_cf), 4, "stale stream records left");
    assert_eq!(run_ok(&sh, &["XLEN", "kept"]), b":3\r\n");
    st.close().unwrap();
}

/// While the server follows a master (`expired_kept`), the sub-keys of a key whose time is
/// up stay: the master's commands may still use the key until its DEL. A master again, the
/// store collects them.
#[test]
fn an_expired_keys_subkeys_stay_while_a_replica_keeps_it_for_its_master() {
    use std::sync::atomic::Ordering;
    let tmp = tempfile::tempdir().unwrap();
    let sh = in_process(tmp.path());
    for i in 0..500 {
        run_ok(&sh, &["HSET", "big", &format!("f{i}"), "value"]);
    }
    let st = sh.dbs.store(0);
    st.db.flush_cf(&*st.sub_cf).unwrap();
    sh.engine().expired_kept.store(true, Ordering::Relaxed);
    run_ok(&sh, &["PEXPIRE", "big", "1"]);
    std::thread::sleep(std::time::Duration::from_millis(10));
    let compact = || {
        for cf in [&st.meta_cf, &st.sub_cf] {
            st.db.flush_cf(&**cf).unwrap();
            st.db.compact_range_cf(&**cf, None::<&[u8]>, None::<&[u8]>).unwrap();
        }
    };
    compact();
    assert_eq!(count(&sh, &st.sub_cf), 500, "kept for the master");
    sh.engine().expired_kept.store(false, Ordering::Relaxed);
    compact();
    assert_eq!(count(&sh, &st.sub_cf), 0, "collected once the key is no one's");
    st.close().unwrap();
}
