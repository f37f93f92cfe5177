//! GetMergeOperands (`Db::get_merge_operands`, `db/merge_operands.rs`): a key's operands
//! oldest first above its value, across the memtable, L0 files, blob files, snapshots,
//! deletions and range deletions; its bounds (too many operands is `Incomplete`, a callback
//! ends the lookup early, and such a lookup leaves no partial row in the row cache); a TTL
//! family's write times taken off; and a random workload whose operands, joined as the
//! family's operator joins them, always read as `get` does.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata::env::MemFs;
use strata::merge_operator::builtin_merge_operator;
use strata::{BlobOptions, Cache, Db, ErrorKind, GetMergeOperandsOptions, Options, ReadOptions};

fn options(fs: &MemFs) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        merge_operator: builtin_merge_operator("stringappend"),
        disable_auto_compactions: true,
        bloom_bits_per_key: 10,
        ..Options::default()
    }
}

fn ops(db: &Db, key: &str) -> Option<Vec<String>> {
    let found = db.get_merge_operands(key).unwrap();
    found.map(|v| v.into_iter().map(|o| String::from_utf8(o).unwrap()).collect())
}

fn list(items: &[&str]) -> Option<Vec<String>> {
    Some(items.iter().map(|s| s.to_string()).collect())
}

#[test]
fn operands_come_oldest_first_above_the_value_and_stop_at_a_deletion() {
    let fs = MemFs::new();
    let mut o = options(&fs);
    o.blob = BlobOptions { enable_blob_files: true, min_blob_size: 64, ..BlobOptions::default() };
    let db = Db::open(&o, "/db").unwrap();
    db.put("value", "v").unwrap();
    db.merge("value", "a").unwrap();
    db.merge("value", "b").unwrap();
    db.merge("merges", "x").unwrap();
    db.merge("merges", "y").unwrap();
    db.put("plain", "only").unwrap();
    db.merge("deleted", "old").unwrap();
    db.delete("deleted").unwrap();
    db.merge("deleted", "new").unwrap();
    db.delete("gone").unwrap();
    for key in ["value", "merges", "plain", "deleted"] {
        assert!(db.get_merge_operands(key).unwrap().is_some(), "{key}");
    }
    assert_eq!(ops(&db, "value"), list(&["v", "a", "b"]));
    assert_eq!(ops(&db, "merges"), list(&["x", "y"]));
    assert_eq!(ops(&db, "plain"), list(&["only"]));
    assert_eq!(ops(&db, "deleted"), list(&["new"]));
    assert_eq!(ops(&db, "gone"), None);
    assert_eq!(ops(&db, "never"), None);

    // One source each: a value in a blob file, operands in two L0 files and the memtable; a
    // snapshot between them sees the older ones only.
    let big = "B".repeat(100);
    db.put("spread", &big).unwrap();
    db.flush().unwrap();
    db.merge("spread", "1").unwrap();
    db.flush().unwrap();
    let snap = db.snapshot();
    db.merge("spread", "2").unwrap();
    assert_eq!(ops(&db, "spread"), list(&[&big, "1", "2"]));
    let mut ro = ReadOptions::default();
    ro.set_snapshot(snap.handle());
    let cf = db.cf_handle("default").unwrap();
    let bounds = GetMergeOperandsOptions::default();
    let old = db.get_merge_operands_cf_opt(&cf, "spread", &ro, &bounds).unwrap();
    assert_eq!(old, Some(vec![big.as_bytes().to_vec(), b"1".to_vec()]));
    assert_eq!(db.get("spread").unwrap(), Some(format!("{big},1,2").into_bytes()));

    // A range deletion hides the operands older than it, wherever they are.
    db.merge("ranged", "p").unwrap();
    db.flush().unwrap();
    db.delete_range("ranged", "ranged\0").unwrap();
    assert_eq!(ops(&db, "ranged"), None);
    db.merge("ranged", "q").unwrap();
    assert_eq!(ops(&db, "ranged"), list(&["q"]));
    db.flush().unwrap();
    assert_eq!(ops(&db, "ranged"), list(&["q"]));
}

#[test]
fn too_many_operands_is_incomplete_and_a_callback_ends_the_lookup() {
    let fs = MemFs::new();
    let mut o = options(&fs);
    o.row_cache = Some(Cache::new_lru(1 << 20));
    let db = Db::open(&o, "/db").unwrap();
    let cf = db.cf_handle("default").unwrap();
    let ro = ReadOptions::default();
    // The base in a table; a and b in the next, both kept by a snapshot between them (a
    // flush merges the operands of one memtable otherwise); c in the memtable.
    db.put("k", "base").unwrap();
    db.flush().unwrap();
    db.merge("k", "a").unwrap();
    let _between = db.snapshot();
    db.merge("k", "b").unwrap();
    db.flush().unwrap();
    db.merge("k", "c").unwrap();

    // First, before any read has put the key's rows in the row cache. Newest first: c, then
    // b (the newest table's first entry), where the callback says stop.
    let seen = std::cell::RefCell::new(Vec::new());
    let stop_at_b = |op: &[u8]| {
        seen.borrow_mut().push(op.to_vec());
        op != b"b"
    };
    let bounds = GetMergeOperandsOptions {
        continue_cb: Some(&stop_at_b),
        ..GetMergeOperandsOptions::default()
    };
    for round in 0..3 {
        seen.borrow_mut().clear();
        let part = db.get_merge_operands_cf_opt(&cf, "k", &ro, &bounds).unwrap().unwrap();
        assert_eq!(part, [&b"b"[..], b"c"], "round {round}");
        assert_eq!(*seen.borrow(), [&b"c"[..], b"b"], "round {round}: asked newest first");
        // Regression: a lookup the callback stopped in a table records no row there, so the
        // reads after it (the second from the row cache) still see the operand below `b`.
        assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"base,a,b,c"[..]), "round {round}");
    }

    let bounded = |max| GetMergeOperandsOptions {
        expected_max_number_of_operands: max,
        ..GetMergeOperandsOptions::default()
    };
    let e = db.get_merge_operands_cf_opt(&cf, "k", &ro, &bounded(3)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Incomplete);
    assert!(e.to_string().contains("has 4 operands, more than the 3 expected"), "{e}");
    let all = db.get_merge_operands_cf_opt(&cf, "k", &ro, &bounded(4)).unwrap().unwrap();
    assert_eq!(all, [&b"base"[..], b"a", b"b", b"c"]);
}

#[test]
fn a_ttl_familys_operands_lose_their_write_times() {
    let fs = MemFs::new();
    let db = Db::open_with_ttl(&options(&fs), "/db", Duration::from_secs(3600)).unwrap();
    db.put("k", "base").unwrap();
    db.merge("k", "op").unwrap();
    assert_eq!(ops(&db, "k"), list(&["base", "op"]));
    db.flush().unwrap();
    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"base,op"[..]));
    let after = ops(&db, "k").unwrap();
    assert_eq!(after.join(","), "base,op", "what the flush kept, without its write times");
}

/// Joined with the operator's delimiter, a key's operands (its value first, if any) are
/// exactly its value: string append puts a base value before its operands as it puts one
/// operand before the next. So the invariant holds whatever flushes and compactions merged.
#[test]
fn operands_joined_read_as_get_under_a_random_workload() {
    for seed in 0..3u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let fs = MemFs::new();
        let mut o = options(&fs);
        o.disable_auto_compactions = false;
        o.write_buffer_size = 4 << 10;
        o.level0_file_num_compaction_trigger = 2;
        o.blob =
            BlobOptions { enable_blob_files: true, min_blob_size: 40, ..BlobOptions::default() };
        let db = Db::open(&o, "/db").unwrap();
        // Until the first table is written everything is in memtables, unmerged: the
        // operands are exactly those written since the key's last put or delete.
        let mut model: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for step in 0..3_000 {
            let key = format!("k{:02}", rng.gen_range(0..20));
            let val = format!("{step}{}", "x".repeat(rng.gen_range(0..60)));
            match rng.gen_range(0..100) {
                0..=19 => {
                    db.put(&key, &val).unwrap();
                    model.insert(key.clone(), vec![val]);
                }
                20..=79 => {
                    db.merge(&key, &val).unwrap();
                    model.entry(key.clone()).or_default().push(val);
                }
                80..=89 => {
                    db.delete(&key).unwrap();
                    model.remove(&key);
                }
                90..=91 => db.flush().unwrap(),
                92 => db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap(),
                _ => {}
            }
            let found = ops(&db, &key);
            let want = model.get(&key);
            assert_eq!(
                found.as_ref().map(|v| v.join(",")),
                want.map(|v| v.join(",")),
                "seed {seed} step {step} {key}"
            );
            assert_eq!(
                found.as_ref().map(|v| v.join(",").into_bytes()),
                db.get(&key).unwrap(),
                "seed {seed} step {step} {key}: operands against get"
            );
            if db.live_files().unwrap().is_empty() {
                assert_eq!(found.as_ref(), want, "seed {seed} step {step} {key}");
            }
        }
    }
}
