//! Every record is filed under its key's cluster slot (and on a cluster node's store, the
//! partition its command ran for, first): after commands of every type, each entry of the
//! three data families starts with that lead, and `Store::slot_ranges` of a slot holds
//! exactly that slot's entries (what a cluster node snapshots or deletes). A DB written
//! before slots led the keys, or marked with another layout (or the other mode's), is
//! refused at open with an error naming the directory; a new one is marked and reopens.

use crate::common::{in_process, run_ok};
use std::sync::Arc;
use strata::{ColumnFamilyDescriptor, Db, Options, WriteBatch};
use strata_server::commands::dispatch;
use strata_server::config::{Config, Flags};
use strata_server::filing::Filing;
use strata_server::resp::Out;
use strata_server::slots::key_slot;
use strata_server::state::{Conn, Shared};
use strata_server::storage::databases::serve_partition;
use strata_server::storage::{self, OpenError, SyncPolicy};
use strata_server::types::subkey;

fn open(dir: &std::path::Path) -> Result<Arc<storage::Store>, OpenError> {
    let cfg = Config::resolve(Flags { dir: Some(dir.to_path_buf()), ..Flags::default() }).unwrap();
    strata_server::types::open(cfg.engine_options(), dir, SyncPolicy::No)
}

/// A cluster node's store, without a router: the test names each command's partition.
fn partitioned(dir: &std::path::Path) -> Result<Arc<Shared>, OpenError> {
    let cfg = Config::resolve(Flags { dir: Some(dir.to_path_buf()), ..Flags::default() }).unwrap();
    let dbs = strata_server::types::open_partitioned(cfg.engine_options(), dir, SyncPolicy::No)?;
    Ok(Arc::new(Shared::new(dbs, cfg, 0)))
}

/// Every (family, stored key) of the store.
fn entries(st: &storage::Store) -> Vec<(&'static str, Vec<u8>)> {
    let mut all = Vec::new();
    for (name, cf) in [("metadata", &st.meta_cf), ("subkey", &st.sub_cf), ("zscore", &st.score_cf)]
    {
        let mut it = st.db.raw_iterator_cf(cf);
        it.seek_to_first();
        while let Some(k) = it.key() {
            all.push((name, k.to_vec()));
            it.next();
        }
        it.status().unwrap();
    }
    all
}

/// The user key an entry filed as `f` files belongs to.
fn user_key<'a>(f: Filing, family: &str, stored: &'a [u8]) -> &'a [u8] {
    if family == "metadata" {
        &stored[f.len()..]
    } else {
        subkey::decode(f, stored).expect("a well-formed sub-key").key
    }
}

#[test]
fn every_entry_is_filed_under_its_keys_slot_and_slot_ranges_hold_them() {
    let tmp = tempfile::tempdir().unwrap();
    filed_under_their_slots(&in_process(tmp.path()), None);
}

#[test]
fn a_cluster_nodes_entries_lead_with_their_partition_and_each_view_sees_its_own() {
    let tmp = tempfile::tempdir().unwrap();
    let sh = partitioned(tmp.path()).unwrap();
    filed_under_their_slots(&sh, Some(5));
    // The same key written for two partitions is two keys, each partition's view seeing its
    // own, and the store of every partition (no partition served) seeing both.
    for (p, v) in [(5, "five"), (6, "six")] {
        let _serving = serve_partition(Some(p));
        run_ok(&sh, &["SET", "shared", v]);
    }
    for (p, v) in [(5u16, "five"), (6, "six")] {
        let view = sh.dbs.partition(p);
        let raw = view.read_meta_uncached(b"shared").unwrap().unwrap();
        assert!(raw.ends_with(v.as_bytes()), "{p}");
        assert_eq!(view.view_ranges_of(Filing::Partition(p)).len(), 3);
    }
    let mut seen = 0;
    sh.dbs
        .store(0)
        .scan_meta(b"", |at, k, _| {
            seen += usize::from(k == b"shared");
            assert!(Filing::partition_of(at).is_some_and(|p| p == 5 || p == 6));
            true
        })
        .unwrap();
    assert_eq!(seen, 2);
    // RANDOMKEY over every partition draws among them, not always the first one's key.
    for p in 0..8u16 {
        let _serving = serve_partition(Some(p));
        run_ok(&sh, &["SET", &format!("r{p}"), "x"]);
    }
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..64 {
        let mut out = Out::default();
        dispatch(&sh, &mut Conn::new(1, true), &[b"RANDOMKEY".to_vec()], &mut out);
        seen.insert(out.buf);
    }
    assert!(seen.len() > 2, "RANDOMKEY gave {seen:?}");
    // FLUSHDB for one partition leaves the other's keys.
    {
        let _serving = serve_partition(Some(6));
        sh.dbs.store(0).flush().unwrap();
    }
    assert!(sh.dbs.partition(6).read_meta_uncached(b"shared").unwrap().is_none());
    assert!(sh.dbs.partition(5).read_meta_uncached(b"shared").unwrap().is_some());
    // A key written with no partition served is refused by no group here (no router), but
    // is filed under none: no partition's view sees it.
    run_ok(&sh, &["SET", "stray", "x"]);
    for p in [5, 6] {
        assert!(sh.dbs.partition(p).read_meta_uncached(b"stray").unwrap().is_none());
    }
    sh.dbs.close().unwrap();
    drop(sh);
    // The store is marked for cluster mode: a standalone open refuses it, and the other way
    // round, naming the directory and the layouts.
    let text = open(tmp.path()).err().expect("a cluster store opened standalone").to_string();
    assert!(text.contains("partition-prefixed 2") && text.contains("standalone"), "{text}");
    let standalone = tempfile::tempdir().unwrap();
    {
        let sh = in_process(standalone.path());
        run_ok(&sh, &["SET", "a", "1"]);
        sh.dbs.close().unwrap();
    }
    let text = partitioned(standalone.path()).err().expect("a standalone store in cluster mode");
    let text = text.to_string();
    assert!(text.contains("slot-prefixed 1") && text.contains("cluster mode"), "{text}");
    assert!(text.contains(&standalone.path().display().to_string()), "{text}");
}

/// A cluster node's store marked `partition-prefixed 1` (written when compact hashes were
/// kept in byte order) opens, keeps its keys, and is marked `partition-prefixed 2` at once: a
/// version reading only the first refuses it from then on, as its compact hashes may come in
/// the order their fields were set.
#[test]
fn a_cluster_store_of_byte_ordered_hashes_is_remarked_at_open() {
    let tmp = tempfile::tempdir().unwrap();
    let marker = |sh: &Shared| {
        let records = sh.dbs.engine().server_records(storage::LAYOUT_KEY).unwrap();
        records.into_iter().find(|(k, _)| k == storage::LAYOUT_KEY).map(|(_, v)| v)
    };
    {
        let sh = partitioned(tmp.path()).unwrap();
        assert_eq!(marker(&sh).as_deref(), Some(storage::LAYOUT_PARTITIONS));
        let _serving = serve_partition(Some(3));
        run_ok(&sh, &["HSET", "h", "a", "1", "b", "2"]);
        let old = storage::LAYOUT_PARTITIONS_BYTE_ORDER;
        let record = (storage::LAYOUT_KEY.to_vec(), Some(old.to_vec()));
        sh.dbs.engine().write_server_records(&[record]).unwrap();
        sh.dbs.close().unwrap();
    }
    let sh = partitioned(tmp.path()).unwrap();
    assert_eq!(marker(&sh).as_deref(), Some(storage::LAYOUT_PARTITIONS));
    let _serving = serve_partition(Some(3));
    let reply = run_ok(&sh, &["HGETALL", "h"]);
    assert_eq!(reply, b"*4\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n");
}

/// Commands of every type, run for `partition` on a cluster node's store (`None`: a
/// standalone one), file every entry under the key's slot and the partition.
fn filed_under_their_slots(sh: &Shared, partition: Option<u16>) {
    let _serving = serve_partition(partition);
    let filing = partition.map_or(Filing::Slot, Filing::Partition);
    let mut keys = Vec::new();
    for i in 0..40 {
        // Some keys share a hash tag, so some slots hold several keys.
        let k = if i % 4 == 0 { format!("{{tag{}}}.k{i}", i % 3) } else { format!("key:{i}") };
        match i % 5 {
            0 => _ = run_ok(sh, &["SET", &k, "v", "EX", "100"]),
            1 => {
                // Past the compact limit: one sub-key per field.
                for f in 0..130 {
                    run_ok(sh, &["HSET", &k, &format!("f{f}"), "v"]);
                }
            }
            2 => _ = run_ok(sh, &["RPUSH", &k, "a", "b", "c"]),
            3 => _ = run_ok(sh, &["SADD", &k, "m1", "m2"]),
            _ => _ = run_ok(sh, &["ZADD", &k, "1.5", "a", "-2", "b"]),
        }
        keys.push(k);
    }
    let st = sh.dbs.store(0);
    assert_eq!(st.filing, filing);
    let all = entries(st);
    assert!(all.iter().any(|(f, _)| *f == "zscore") && all.iter().any(|(f, _)| *f == "subkey"));
    for (family, stored) in &all {
        let key = user_key(filing, family, stored);
        assert_eq!(
            filing.slot_of(stored),
            Some(key_slot(key)),
            "{family} entry of {:?} not under its slot",
            String::from_utf8_lossy(key)
        );
        if let Some(p) = partition {
            assert_eq!(Filing::partition_of(stored), Some(p), "{family} {stored:?}");
        }
    }
    // A slot's ranges hold exactly the entries of its keys, in every family.
    for k in &keys {
        let slot = key_slot(k.as_bytes());
        let ranges = st.slot_ranges(slot, slot);
        assert_eq!(ranges.len(), 3);
        for (family, stored) in &all {
            let cf = match *family {
                "metadata" => &st.meta_cf,
                "subkey" => &st.sub_cf,
                _ => &st.score_cf,
            };
            let inside = ranges.iter().any(|(rcf, lo, hi)| {
                Arc::ptr_eq(rcf, cf) && stored.as_slice() >= lo.as_slice() && stored < hi
            });
            let of_slot = key_slot(user_key(filing, family, stored)) == slot;
            assert_eq!(inside, of_slot, "{family} {stored:?}");
        }
    }
    // Every slot together: every entry.
    let whole = st.slot_ranges(0, strata_server::slots::SLOTS - 1);
    for (_, stored) in &all {
        assert!(whole.iter().any(|(_, lo, hi)| stored.as_slice() >= lo.as_slice() && stored < hi));
    }
    // Reads and scans see user keys as they were written.
    let mut seen = Vec::new();
    st.scan_meta(b"", |_, k, _| {
        seen.push(String::from_utf8_lossy(k).into_owned());
        true
    })
    .unwrap();
    seen.sort();
    let mut want = keys.clone();
    want.sort();
    assert_eq!(seen, want);
}

#[test]
fn a_db_without_slots_or_with_another_layout_is_refused_and_a_new_one_reopens() {
    // Written as an earlier strata-server wrote: the user key alone in the metadata family.
    let old = tempfile::tempdir().unwrap();
    {
        let opts = Options {
            create_if_missing: true,
            create_missing_column_families: true,
            ..Options::default()
        };
        let cfs = ["metadata", "subkey", "zscore"]
            .map(|n| ColumnFamilyDescriptor::new(n, Options::default()));
        let db = Db::open_cf_descriptors(&opts, old.path(), cfs).unwrap();
        let meta = db.cf_handle("metadata").unwrap();
        let mut b = WriteBatch::new();
        b.put_cf(&meta, b"user:1", b"\x01\0\0\0\0\0\0\0\0value");
        db.write(b).unwrap();
    }
    let err = open(old.path()).err().expect("an unmarked DB with keys must be refused");
    let text = err.to_string();
    assert!(matches!(err, OpenError::Layout { .. }), "{text}");
    assert!(text.contains(&old.path().display().to_string()) && text.contains("slot"), "{text}");
    // Refusing wrote nothing: the old record is still there, unmarked.
    {
        let opts = Options::default();
        let cfs = ["metadata", "subkey", "zscore", "server"]
            .map(|n| ColumnFamilyDescriptor::new(n, Options::default()));
        let db = Db::open_cf_descriptors(&opts, old.path(), cfs).unwrap();
        let meta = db.cf_handle("metadata").unwrap();
        assert!(db.get_cf(&meta, b"user:1").unwrap().is_some());
        let server = db.cf_handle("server").unwrap();
        assert_eq!(db.get_cf(&server, storage::LAYOUT_KEY).unwrap(), None);
        // Another layout's marker.
        db.put_cf(&server, storage::LAYOUT_KEY, b"something else 9").unwrap();
    }
    let text = open(old.path()).err().expect("another layout must be refused").to_string();
    assert!(text.contains("something else 9"), "{text}");

    // A new DB is marked, takes writes, and reopens with them.
    let new = tempfile::tempdir().unwrap();
    {
        let sh = in_process(new.path());
        run_ok(&sh, &["SET", "a", "1"]);
        sh.dbs.close().unwrap();
    }
    let st = open(new.path()).unwrap();
    assert!(st.read_meta_uncached(b"a").unwrap().is_some());
}
