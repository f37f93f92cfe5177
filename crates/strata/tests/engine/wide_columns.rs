//! Wide-column entities (`Db::put_entity`, `get_entity`, `multi_get_entity`, the iterator's
//! `columns`; `wide_columns.rs`, `db/entity.rs`): an entity reads whole through `get_entity`
//! and as its default column through `get` and iterators, from the memtable, tables, the WAL
//! after a reopen and a compaction's output; a plain value is one default column; merges
//! apply to the default column and keep the others; GetMergeOperands takes the default
//! column as the base; compaction filters keep entities unless they override
//! `filter_entity`, which may drop or change them; blob files never take them;
//! a TTL DB refuses them; batches, transactions and external files carry them; a batch with
//! index and a transaction read them whole over the DB's; damage is an error; and a random
//! workload reads as a model of columns says.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata::compaction_filter::Decision;
use strata::env::MemFs;
use strata::merge_operator::builtin_merge_operator;
use strata::{
    BlobOptions, Cache, Db, Error, Options, ReadOptions, SstFileWriter, TransactionDb,
    TransactionDbOptions, WideColumns, WriteBatch, WriteBatchIterator, WriteBatchWithIndex,
};
use strata::{CompactionFilter, CompactionFilterContext, CompactionFilterFactory, EntityDecision};

fn options(fs: &MemFs) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        merge_operator: builtin_merge_operator("stringappend"),
        disable_auto_compactions: true,
        bloom_bits_per_key: 10,
        ..Options::default()
    }
}

type Cols = Vec<(&'static str, &'static str)>;

/// Named columns as strings.
type Named = Vec<(String, String)>;

fn columns(c: &WideColumns) -> Vec<(String, String)> {
    c.iter()
        .map(|(n, v)| {
            (String::from_utf8(n.to_vec()).unwrap(), String::from_utf8(v.to_vec()).unwrap())
        })
        .collect()
}

fn want(c: &[(&str, &str)]) -> Vec<(String, String)> {
    c.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect()
}

fn entity(db: &Db, key: &str) -> Option<Vec<(String, String)>> {
    db.get_entity(key).unwrap().map(|c| columns(&c))
}

fn utf8(b: &[u8]) -> String {
    String::from_utf8(b.to_vec()).unwrap()
}

fn get(db: &Db, key: &str) -> Option<String> {
    db.get(key).unwrap().map(|v| String::from_utf8(v).unwrap())
}

/// Every entry of a forward scan, then of a backward one (reversed): key, value, columns.
fn scan(db: &Db) -> Vec<(String, String, Named)> {
    let row = |it: &strata::DbRawIterator| {
        let cols = it.columns().unwrap();
        let cols = cols
            .iter()
            .map(|(n, v)| {
                (String::from_utf8(n.to_vec()).unwrap(), String::from_utf8(v.to_vec()).unwrap())
            })
            .collect();
        (
            String::from_utf8(it.key().unwrap().to_vec()).unwrap(),
            String::from_utf8(it.value().unwrap().to_vec()).unwrap(),
            cols,
        )
    };
    let mut it = db.raw_iterator();
    let mut fwd = Vec::new();
    it.seek_to_first();
    while it.valid() {
        fwd.push(row(&it));
        it.next();
    }
    it.status().unwrap();
    let mut back = Vec::new();
    it.seek_to_last();
    while it.valid() {
        back.push(row(&it));
        it.prev();
    }
    it.status().unwrap();
    back.reverse();
    assert_eq!(fwd, back, "the two directions disagree");
    fwd
}

#[test]
fn an_entity_reads_whole_and_as_its_default_column_wherever_it_lies() {
    let fs = MemFs::new();
    let db = Db::open(&options(&fs), "/db").unwrap();
    let user: Cols = vec![("name", "Alice"), ("", "row"), ("email", "a@x")];
    db.put_entity("user", &user).unwrap();
    db.put_entity("nodefault", &[("a", "1")]).unwrap();
    db.put("plain", "v").unwrap();
    let expect_user = want(&[("", "row"), ("email", "a@x"), ("name", "Alice")]);
    let check = |db: &Db, stage: &str| {
        assert_eq!(entity(db, "user"), Some(expect_user.clone()), "{stage}");
        assert_eq!(get(db, "user").as_deref(), Some("row"), "{stage}");
        assert_eq!(entity(db, "nodefault"), Some(want(&[("a", "1")])), "{stage}");
        assert_eq!(get(db, "nodefault").as_deref(), Some(""), "{stage}");
        assert_eq!(entity(db, "plain"), Some(want(&[("", "v")])), "{stage}");
        assert_eq!(entity(db, "missing"), None, "{stage}");
        let rows = scan(db);
        let keys: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
        assert_eq!(keys, ["nodefault", "plain", "user"], "{stage}");
        assert_eq!(rows[0].1, "", "{stage}");
        assert_eq!(rows[0].2, want(&[("a", "1")]), "{stage}");
        assert_eq!(rows[1].2, want(&[("", "v")]), "{stage}");
        assert_eq!((rows[2].1.as_str(), &rows[2].2), ("row", &expect_user), "{stage}");
        let many = db.multi_get_entity(["plain", "missing", "user"]);
        let many: Vec<_> = many.into_iter().map(|r| r.unwrap().map(|c| columns(&c))).collect();
        assert_eq!(many, [Some(want(&[("", "v")])), None, Some(expect_user.clone())], "{stage}");
    };
    check(&db, "memtable");
    drop(db);
    let db = Db::open(&options(&fs), "/db").unwrap();
    check(&db, "after the WAL's replay");
    db.flush().unwrap();
    check(&db, "in an L0 table");
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    check(&db, "after a full compaction");
    // Overwrites either way, and a deletion.
    db.put("user", "plain now").unwrap();
    db.put_entity("plain", &[("x", "y")]).unwrap();
    db.delete("nodefault").unwrap();
    assert_eq!(entity(&db, "user"), Some(want(&[("", "plain now")])));
    assert_eq!(entity(&db, "plain"), Some(want(&[("x", "y")])));
    assert_eq!(entity(&db, "nodefault"), None);
}

#[test]
fn a_snapshot_keeps_the_entity_it_saw() {
    let fs = MemFs::new();
    let db = Db::open(&options(&fs), "/db").unwrap();
    db.put_entity("k", &[("", "old"), ("c", "1")]).unwrap();
    let snap = db.snapshot();
    db.put_entity("k", &[("c", "2")]).unwrap();
    db.flush().unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    let mut ro = ReadOptions::default();
    ro.set_snapshot(snap.handle());
    let cf = db.cf_handle("default").unwrap();
    let old = db.get_entity_cf_opt(&cf, "k", &ro).unwrap().unwrap();
    assert_eq!(columns(&old), want(&[("", "old"), ("c", "1")]));
    assert_eq!(snap.get_entity("k").unwrap().as_ref(), Some(&old));
    assert_eq!(snap.get_entity_cf(&cf, "k").unwrap(), Some(old));
    assert_eq!(entity(&db, "k"), Some(want(&[("c", "2")])));
}

#[test]
fn merges_apply_to_the_default_column_and_keep_the_others() {
    let fs = MemFs::new();
    let db = Db::open(&options(&fs), "/db").unwrap();
    db.put_entity("e", &[("", "base"), ("col", "kept")]).unwrap();
    db.merge("e", "m1").unwrap();
    db.put_entity("nd", &[("col", "only")]).unwrap();
    db.merge("nd", "m").unwrap();
    let check = |db: &Db, stage: &str| {
        assert_eq!(get(db, "e").as_deref(), Some("base,m1,m2"), "{stage}");
        assert_eq!(entity(db, "e"), Some(want(&[("", "base,m1,m2"), ("col", "kept")])), "{stage}");
        // No default column: the merge's base is the empty value, as RocksDB's.
        assert_eq!(entity(db, "nd"), Some(want(&[("", ",m"), ("col", "only")])), "{stage}");
        let rows = scan(db);
        assert_eq!(rows[0].1, "base,m1,m2", "{stage}");
        assert_eq!(rows[0].2, want(&[("", "base,m1,m2"), ("col", "kept")]), "{stage}");
        assert_eq!(rows[1].2, want(&[("", ",m"), ("col", "only")]), "{stage}");
    };
    db.flush().unwrap(); // the entity and m1 in one table (merged there into an entity)
    db.merge("e", "m2").unwrap();
    check(&db, "operand in the memtable over a table");
    // GetMergeOperands: the default column is the base operand.
    let ops = db.get_merge_operands("e").unwrap().unwrap();
    assert_eq!(ops, [b"base,m1".to_vec(), b"m2".to_vec()]);
    db.flush().unwrap();
    check(&db, "two tables");
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    check(&db, "compacted: the merge written as an entity");
    let ops = db.get_merge_operands("e").unwrap().unwrap();
    assert_eq!(ops, [b"base,m1,m2".to_vec()]);
}

/// Regression: a backward scan over a key whose entity was deleted and then merged into
/// took the deleted entity for the operand's base and failed ("malformed wide-column entity").
#[test]
fn a_merge_after_a_deleted_entity_scans_as_the_operand_alone() {
    let fs = MemFs::new();
    let db = Db::open(&options(&fs), "/db").unwrap();
    db.put_entity("k", &[("", "a"), ("c", "1")]).unwrap();
    db.delete("k").unwrap();
    db.merge("k", "m").unwrap();
    assert_eq!(scan(&db), [("k".to_string(), "m".to_string(), want(&[("", "m")]))]);
    assert_eq!(entity(&db, "k"), Some(want(&[("", "m")])));
}

#[test]
fn a_merge_under_a_snapshot_is_collapsed_by_compaction_into_an_entity() {
    let fs = MemFs::new();
    let db = Db::open(&options(&fs), "/db").unwrap();
    db.put_entity("e", &[("", "a"), ("z", "keep")]).unwrap();
    let held = db.snapshot(); // keeps the entity apart from the operand in the flush
    db.merge("e", "b").unwrap();
    db.flush().unwrap();
    drop(held);
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(entity(&db, "e"), Some(want(&[("", "a,b"), ("z", "keep")])));
    let live = db.live_files().unwrap();
    assert_eq!(live.len(), 1, "one table after the compaction");
    assert_eq!(live[0].num_entries, 1, "the operand and the entity made one entity");
}

#[test]
fn compaction_filters_do_not_see_entities() {
    let fs = MemFs::new();
    let mut o = options(&fs);
    o.set_compaction_filter("drop-all", |_level, _key, _value| Decision::Remove);
    let db = Db::open(&o, "/db").unwrap();
    db.put("plain", "v").unwrap();
    db.put_entity("ent", &[("", "v"), ("c", "w")]).unwrap();
    db.flush().unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(get(&db, "plain"), None, "the filter removed the plain value");
    assert_eq!(entity(&db, "ent"), Some(want(&[("", "v"), ("c", "w")])));
}

/// A filter overriding `filter_entity` sees each entity no snapshot reads, and may keep it,
/// remove it, make it a plain value or give it other columns.
#[test]
fn a_compaction_filter_can_see_and_change_entities() {
    struct Columns;
    impl CompactionFilter for Columns {
        fn filter(&mut self, _: u32, _: &[u8], _: &[u8]) -> Decision {
            Decision::Keep
        }
        fn filter_entity(&mut self, _: u32, key: &[u8], c: &WideColumns) -> EntityDecision {
            match key {
                b"drop" => EntityDecision::Remove,
                b"flat" => EntityDecision::ChangeValue(c.get(b"n").unwrap_or_default().to_vec()),
                b"more" => EntityDecision::ChangeEntity(
                    WideColumns::from_columns(&[("", "new"), ("n", "2")]).unwrap(),
                ),
                _ => EntityDecision::Keep,
            }
        }
        fn name(&self) -> &str {
            "columns"
        }
    }
    struct Factory;
    impl CompactionFilterFactory for Factory {
        fn create(&self, _: &CompactionFilterContext) -> Box<dyn CompactionFilter> {
            Box::new(Columns)
        }
        fn name(&self) -> &str {
            "columns"
        }
    }
    let fs = MemFs::new();
    let mut o = options(&fs);
    o.compaction_filter_factory = Some(Arc::new(Factory));
    let db = Db::open(&o, "/db").unwrap();
    for key in ["drop", "flat", "more", "keep"] {
        db.put_entity(key, &[("", "v"), ("n", "1")]).unwrap();
    }
    let snap = db.snapshot(); // the snapshot sees them all: the flush may not filter them
    db.flush().unwrap();
    assert_eq!(entity(&db, "drop"), Some(want(&[("", "v"), ("n", "1")])));
    drop(snap);
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(entity(&db, "drop"), None);
    assert_eq!(entity(&db, "flat"), Some(want(&[("", "1")])));
    assert_eq!(get(&db, "flat").as_deref(), Some("1"));
    assert_eq!(entity(&db, "more"), Some(want(&[("", "new"), ("n", "2")])));
    assert_eq!(entity(&db, "keep"), Some(want(&[("", "v"), ("n", "1")])));
}

#[test]
fn blob_files_never_take_an_entity() {
    let fs = MemFs::new();
    let mut o = options(&fs);
    o.blob = BlobOptions { enable_blob_files: true, min_blob_size: 8, ..BlobOptions::default() };
    o.row_cache = Some(Cache::new_lru(1 << 20));
    let db = Db::open(&o, "/db").unwrap();
    let big = "x".repeat(100);
    db.put("plain", &big).unwrap();
    db.put_entity("ent", &[("", big.as_str()), ("c", big.as_str())]).unwrap();
    db.flush().unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    for _ in 0..2 {
        // The second round replays the rows the first left in the row cache.
        assert_eq!(get(&db, "plain").as_deref(), Some(big.as_str()));
        assert_eq!(entity(&db, "ent"), Some(want(&[("", big.as_str()), ("c", big.as_str())])));
        assert_eq!(get(&db, "ent").as_deref(), Some(big.as_str()));
    }
    let blob_values: u64 =
        db.property_int_value("rocksdb.total-blob-file-size").unwrap().unwrap_or_default();
    assert!(
        blob_values > 0 && blob_values < 2 * 100 + 200,
        "one value in blob files: {blob_values}"
    );
}

#[test]
fn misuse_and_damage_are_clear_errors() {
    let fs = MemFs::new();
    let db = Db::open(&options(&fs), "/db").unwrap();
    let e = db.put_entity("k", &[("a", "1"), ("a", "2")]).unwrap_err();
    assert!(matches!(&e, Error::InvalidArgument(m) if m.contains("\"a\" given twice")), "{e}");
    assert_eq!(db.get("k").unwrap(), None, "nothing of the refused batch was written");
    // A batch decoded from bytes whose entity is damaged is refused, naming the record.
    let mut b = WriteBatch::new();
    b.put_entity("k", &[("", "v")]);
    let mut data = b.data().to_vec();
    let last = data.len() - 1;
    data[last - 3] = 9; // the entity's version byte
    let e = WriteBatch::try_from_data(&data).unwrap_err();
    assert!(e.to_string().contains("malformed wide-column entity"), "{e}");
    assert!(db.write(WriteBatch::from_data(&data)).is_err());
    drop(db);
    // A TTL DB refuses entities (RocksDB's DBWithTTL does too) and reads values as columns.
    let ttl = Db::open_with_ttl(&options(&MemFs::new()), "/t", Duration::from_secs(60)).unwrap();
    let e = ttl.put_entity("k", &[("", "v")]).unwrap_err();
    assert!(matches!(&e, Error::NotSupported(m) if m.contains("TTL")), "{e}");
    ttl.put("k", "v").unwrap();
    assert_eq!(entity(&ttl, "k"), Some(want(&[("", "v")])));
}

#[test]
fn batches_transactions_and_external_files_carry_entities() {
    let dir = tempfile::tempdir().unwrap();
    // A batch: iterated, a handler that knows entities sees the columns, others a put of the
    // default column.
    let mut b = WriteBatch::new();
    b.put_entity("e", &[("c", "1"), ("", "d")]);
    b.put("p", "v");
    struct Plain(Vec<(Vec<u8>, Vec<u8>)>);
    impl WriteBatchIterator for Plain {
        fn put(&mut self, k: &[u8], v: &[u8]) {
            self.0.push((k.to_vec(), v.to_vec()));
        }
        fn delete(&mut self, _: &[u8]) {}
    }
    let mut plain = Plain(Vec::new());
    b.iterate(&mut plain);
    assert_eq!(plain.0, [(b"e".to_vec(), b"d".to_vec()), (b"p".to_vec(), b"v".to_vec())]);
    // A transaction: reads through it see the default column; the commit writes the entity.
    let o = Options { create_if_missing: true, ..Options::default() };
    let tdb =
        TransactionDb::open(&o, &TransactionDbOptions::default(), dir.path().join("t")).unwrap();
    let txn = tdb.transaction();
    txn.put_entity("e", &[("", "d"), ("c", "1")]).unwrap();
    assert_eq!(txn.get("e").unwrap().as_deref(), Some(&b"d"[..]));
    txn.commit().unwrap();
    let got = tdb.get_entity("e").unwrap().unwrap();
    assert_eq!(columns(&got), want(&[("", "d"), ("c", "1")]));
    drop(tdb);
    // An external file.
    let sst = dir.path().join("e.sst");
    let mut w = SstFileWriter::create(&o);
    w.open(&sst).unwrap();
    w.put_entity("a", &[("x", "1"), ("", "va")]).unwrap();
    w.put("b", "vb").unwrap();
    w.finish().unwrap();
    let db = Db::open(&o, dir.path().join("db")).unwrap();
    db.ingest_external_file(vec![&sst]).unwrap();
    assert_eq!(entity(&db, "a"), Some(want(&[("", "va"), ("x", "1")])));
    assert_eq!(get(&db, "a").as_deref(), Some("va"));
}

#[test]
fn a_batch_with_index_and_a_transaction_read_entities_over_the_dbs() {
    let fs = MemFs::new();
    let db = Db::open(&options(&fs), "/db").unwrap();
    db.put_entity("d", &[("", "base"), ("x", "1")]).unwrap();
    db.put_entity("u", &[("a", "1")]).unwrap();
    db.put("p", "plain").unwrap();
    let mut b = WriteBatchWithIndex::for_db(&db);
    b.put_entity("e", &[("y", "2"), ("", "v")]);
    b.merge("e", "m2");
    b.merge("d", "m1");
    b.merge("u", "m3");
    b.merge("n", "only");
    b.put("q", "q");
    b.delete("p");
    let o = options(&fs);
    let alone = |k: &str| b.get_entity_from_batch(k, &o).map(|c| c.map(|c| columns(&c)));
    assert_eq!(alone("e").unwrap(), Some(want(&[("", "v,m2"), ("y", "2")])));
    assert_eq!(alone("q").unwrap(), Some(want(&[("", "q")])));
    assert_eq!(alone("p").unwrap(), None);
    let e = alone("d").unwrap_err();
    assert!(e.to_string().contains("get_entity_from_batch_and_db"), "{e}");
    let ro = ReadOptions::default();
    let over = |k: &str| b.get_entity_from_batch_and_db(&db, k, &ro).unwrap().map(|c| columns(&c));
    let predicted: Vec<_> = ["d", "e", "n", "p", "q", "u", "z"].map(|k| (k, over(k))).into();
    assert_eq!(predicted[0].1, Some(want(&[("", "base,m1"), ("x", "1")])));
    assert_eq!(predicted[2].1, Some(want(&[("", "only")])));
    // A merge onto an entity without a default column: an empty base, the columns kept.
    assert_eq!(predicted[5].1, Some(want(&[("", ",m3"), ("a", "1")])));
    assert_eq!(predicted[6].1, None);
    let plain = b.get_from_batch_and_db(&db, "e", &ro).unwrap();
    assert_eq!(plain.as_deref(), Some(&b"v,m2"[..]), "a plain read sees the default column");
    // A cursor over the DB with the batch on top shows the same columns.
    let mut it = b.iterator_with_base(db.raw_iterator());
    it.seek_to_first();
    let mut seen = Vec::new();
    while let (Some(k), Some(c)) = (it.key(), it.columns()) {
        let named: Named = c.iter().map(|(n, v)| (utf8(n), utf8(v))).collect();
        seen.push((utf8(k), Some(named)));
        it.next();
    }
    it.status().unwrap();
    let want_seen: Vec<(String, Option<Named>)> = predicted
        .iter()
        .filter(|(_, p)| p.is_some())
        .map(|(k, p)| (k.to_string(), p.clone()))
        .collect();
    assert_eq!(seen, want_seen);
    // What the batch predicted is what the DB holds once it is written.
    db.write_wbwi(&b).unwrap();
    for (k, p) in &predicted {
        assert_eq!(&entity(&db, k), p, "{k} after the write");
    }
    drop(db);
    // A transaction: its own entities and merges over the DB's, tracked for update too.
    let dir = tempfile::tempdir().unwrap();
    let o = Options {
        create_if_missing: true,
        merge_operator: builtin_merge_operator("stringappend"),
        ..Options::default()
    };
    let tdb =
        TransactionDb::open(&o, &TransactionDbOptions::default(), dir.path().join("t")).unwrap();
    tdb.put_entity("d", &[("", "base"), ("x", "1")]).unwrap();
    let txn = tdb.transaction();
    txn.put_entity("t", &[("k", "v"), ("", "a")]).unwrap();
    txn.merge("t", "b").unwrap();
    let got = txn.get_entity("t").unwrap().map(|c| columns(&c));
    assert_eq!(got, Some(want(&[("", "a,b"), ("k", "v")])));
    let got = txn.get_entity_for_update("d", true).unwrap().map(|c| columns(&c));
    assert_eq!(got, Some(want(&[("", "base"), ("x", "1")])));
    let other = tdb.transaction();
    assert!(other.put("d", "x").is_err(), "d is locked by the first transaction");
    drop(other);
    txn.commit().unwrap();
    let got = tdb.get_entity("t").unwrap().map(|c| columns(&c));
    assert_eq!(got, Some(want(&[("", "a,b"), ("k", "v")])));
}

/// Random puts, entities, merges, deletes, flushes, compactions and reopens on few keys;
/// after each step some keys are read through `get_entity`, `get` and a scan, against a
/// model holding each key's columns.
#[test]
fn random_workloads_read_as_the_model_says() {
    for seed in 0..3u64 {
        let fs = MemFs::new();
        let mut o = options(&fs);
        o.write_buffer_size = 4 << 10;
        o.blob =
            BlobOptions { enable_blob_files: true, min_blob_size: 40, ..BlobOptions::default() };
        let mut db = Db::open(&o, "/db").unwrap();
        let mut model: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
        let mut rng = StdRng::seed_from_u64(seed);
        for step in 0..2_000 {
            let key = format!("k{:02}", rng.gen_range(0..24));
            let value = |rng: &mut StdRng| "v".repeat(rng.gen_range(0..60)) + &step.to_string();
            match rng.gen_range(0..100) {
                0..=29 => {
                    let mut cols = BTreeMap::new();
                    for _ in 0..rng.gen_range(0..4) {
                        let name = ["", "a", "bb", "c"][rng.gen_range(0..4)].to_string();
                        cols.insert(name, value(&mut rng));
                    }
                    let cols: Vec<(String, String)> = cols.into_iter().collect();
                    db.put_entity(&key, &cols).unwrap();
                    model.insert(key, cols);
                }
                30..=49 => {
                    let v = value(&mut rng);
                    db.put(&key, &v).unwrap();
                    model.insert(key, vec![(String::new(), v)]);
                }
                50..=74 => {
                    let op = format!("m{step}");
                    db.merge(&key, &op).unwrap();
                    match model.get_mut(&key) {
                        // No value at all: the operand alone.
                        None => drop(model.insert(key, vec![(String::new(), op)])),
                        Some(cols) => match cols.first_mut() {
                            Some((n, v)) if n.is_empty() => *v = format!("{v},{op}"),
                            // No default column: merged onto an empty base.
                            _ => cols.insert(0, (String::new(), format!(",{op}"))),
                        },
                    }
                }
                75..=84 => {
                    db.delete(&key).unwrap();
                    model.remove(&key);
                }
                85..=90 => db.flush().unwrap(),
                91..=93 => db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap(),
                94 => {
                    drop(db);
                    db = Db::open(&o, "/db").unwrap();
                }
                _ => {
                    let rows = scan(&db);
                    let seen: Vec<(String, Vec<(String, String)>)> =
                        rows.into_iter().map(|(k, _, c)| (k, c)).collect();
                    let expect: Vec<(String, Vec<(String, String)>)> =
                        model.iter().map(|(k, c)| (k.clone(), c.clone())).collect();
                    assert_eq!(seen, expect, "seed {seed} step {step}: scan");
                }
            }
            let k = format!("k{:02}", rng.gen_range(0..24));
            let cols = model.get(&k);
            assert_eq!(entity(&db, &k).as_ref(), cols, "seed {seed} step {step}: get_entity {k}");
            let default = cols.map(|c| {
                c.first().filter(|(n, _)| n.is_empty()).map_or(String::new(), |(_, v)| v.clone())
            });
            assert_eq!(get(&db, &k), default, "seed {seed} step {step}: get {k}");
        }
    }
}
