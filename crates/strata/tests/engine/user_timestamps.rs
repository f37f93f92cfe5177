//! User-defined timestamps (`Options::set_comparator_with_ts`, `db/timestamps.rs`): writes
//! name a timestamp, reads see each key's newest version at or below theirs, deletions hide
//! older versions only from reads at or above them; the family's `full_history_ts_low`
//! refuses older reads and survives a reopen; misuse is refused clearly; merges at a
//! timestamp apply to the older versions; a history iterator (`set_iter_start_ts`) returns
//! every version in its range. A randomized run checks reads at random timestamps, scans both
//! ways, bounds and histories against a model, through flushes, compactions and reopens.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata::env::MemFs;
use strata::{
    ColumnFamilyDescriptor, CompactOptions, Db, Error, GetMergeOperandsOptions, IteratorMode,
    Options, ReadOptions, SstFileWriter, WriteBatch, WriteOptions,
};

const TS: usize = 8;

fn ts(t: u64) -> [u8; TS] {
    t.to_le_bytes()
}

fn ts_of(b: &[u8]) -> u64 {
    u64::from_le_bytes(b.try_into().unwrap())
}

/// The `rocksdb` crate's test comparator: the key, then the timestamp (u64 LE), newest first.
fn with_ts(o: &mut Options) {
    fn without(a: &[u8], a_ts: bool, b: &[u8], b_ts: bool) -> Ordering {
        let a = if a_ts { &a[..a.len() - TS] } else { a };
        let b = if b_ts { &b[..b.len() - TS] } else { b };
        a.cmp(b)
    }
    o.set_comparator_with_ts(
        "test.u64ts",
        TS,
        Box::new(|a: &[u8], b: &[u8]| {
            without(a, true, b, true)
                .then_with(|| ts_of(&b[b.len() - TS..]).cmp(&ts_of(&a[a.len() - TS..])))
        }),
        Box::new(|a: &[u8], b: &[u8]| ts_of(a).cmp(&ts_of(b))),
        Box::new(without),
    );
}

fn opts(fs: &MemFs) -> Options {
    let mut o = Options {
        fs: Arc::new(fs.clone()),
        create_if_missing: true,
        create_missing_column_families: true,
        write_buffer_size: 8 << 10,
        block_size: 256,
        level0_file_num_compaction_trigger: 2,
        max_bytes_for_level_base: 32 << 10,
        target_file_size_base: 8 << 10,
        ..Options::default()
    };
    with_ts(&mut o);
    o
}

fn at(t: u64) -> ReadOptions {
    let mut ro = ReadOptions::default();
    ro.set_timestamp(ts(t));
    ro
}

#[test]
fn reads_see_the_newest_version_at_or_below_their_timestamp() {
    let fs = MemFs::new();
    let db = Db::open(&opts(&fs), "/db").unwrap();
    db.put_with_ts("k", ts(10), "v10").unwrap();
    db.put_with_ts("k", ts(20), "v20").unwrap();
    db.delete_with_ts("k", ts(30)).unwrap();
    db.put_with_ts("j", ts(15), "j15").unwrap();
    for (t, want) in [
        (5, None),
        (10, Some("v10")),
        (19, Some("v10")),
        (20, Some("v20")),
        (29, Some("v20")),
        (30, None),
        (99, None),
    ] {
        assert_eq!(
            db.get_opt("k", &at(t)).unwrap().as_deref(),
            want.map(str::as_bytes),
            "k at {t}"
        );
    }
    // The same after a flush and a compaction.
    db.flush().unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(db.get_opt("k", &at(25)).unwrap().as_deref(), Some(&b"v20"[..]));
    assert_eq!(db.get_opt("k", &at(31)).unwrap(), None);
    // Iterators: keys without timestamps, each with its version's timestamp.
    let mut it = db.raw_iterator_opt(at(25));
    assert_eq!(it.timestamp(), None);
    it.seek_to_first();
    assert_eq!((it.key(), it.value()), (Some(&b"j"[..]), Some(&b"j15"[..])));
    assert_eq!(ts_of(it.timestamp().unwrap()), 15);
    it.next();
    assert_eq!((it.key(), it.value()), (Some(&b"k"[..]), Some(&b"v20"[..])));
    assert_eq!(ts_of(it.timestamp().unwrap()), 20);
    it.next();
    assert!(!it.valid());
    assert_eq!(it.timestamp(), None);
    it.seek_to_last();
    assert_eq!(it.key(), Some(&b"k"[..]));
    it.prev();
    assert_eq!(it.key(), Some(&b"j"[..]));
    let keys: Vec<Vec<u8>> =
        db.iterator_opt(IteratorMode::End, at(40)).map(|r| r.unwrap().0.to_vec()).collect();
    assert_eq!(keys, [b"j".to_vec()], "k is deleted at 30");
    let ro = ReadOptions { timestamp: Some(ts(12).to_vec()), ..ReadOptions::default() };
    assert_eq!(db.iterator_opt(IteratorMode::Start, ro).count(), 1, "only k at 12");
}

#[test]
fn misuse_is_refused_clearly() {
    let fs = MemFs::new();
    let db = Db::open(&opts(&fs), "/db").unwrap();
    let e = db.put("k", "v").unwrap_err();
    assert!(
        matches!(&e, Error::InvalidArgument(m) if m.contains("user-defined timestamps")),
        "{e}"
    );
    assert!(matches!(db.merge("k", "v"), Err(Error::InvalidArgument(_))));
    assert!(matches!(db.delete_range("a", "b"), Err(Error::InvalidArgument(_))));
    let e = db.put_with_ts("k", [1u8; 4], "v").unwrap_err();
    assert!(e.to_string().contains("4-byte timestamp"), "{e}");
    let e = db.get("k").unwrap_err();
    assert!(e.to_string().contains("set_timestamp"), "{e}");
    let mut ro = ReadOptions::default();
    ro.set_timestamp([0u8; 3]);
    assert!(matches!(db.get_opt("k", &ro), Err(Error::InvalidArgument(_))));
    // A point read ignores iter_start_ts (as RocksDB's); an iterator checks its size.
    db.put_with_ts("k", ts(2), "v2").unwrap();
    let mut ro = at(5);
    ro.set_iter_start_ts(ts(1));
    assert_eq!(db.get_opt("k", &ro).unwrap().as_deref(), Some(&b"v2"[..]));
    ro.set_iter_start_ts([1u8; 3]);
    let mut it = db.raw_iterator_opt(ro);
    it.seek_to_first();
    let e = it.status().unwrap_err();
    assert!(e.to_string().contains("iter_start_ts of 3 bytes"), "{e}");
    // Merges need a merge operator; named without a timestamp they are refused.
    let e = db.merge_with_ts("k", ts(3), "m").unwrap_err();
    assert!(e.to_string().contains("merge operator"), "{e}");
    let e = db.merge_with_ts("k", [0u8; 2], "m").unwrap_err();
    assert!(e.to_string().contains("2-byte timestamp"), "{e}");
    // Wide-column entities have no timestamps: refused, as RocksDB refuses them there.
    assert!(matches!(db.put_entity("k", &[("", "v")]), Err(Error::InvalidArgument(_))));
    let default = db.cf_handle("default").unwrap();
    let e =
        db.put_entity_cf_opt(&default, "k", &[("", "v")], &WriteOptions::default()).unwrap_err();
    assert!(e.to_string().contains("entities are not supported"), "{e}");
    assert!(matches!(db.get_entity_cf_opt(&default, "k", &at(5)), Err(Error::NotSupported(_))));
    // A family without timestamps refuses them.
    let plain = db.create_cf_handle("plain", &Options::default()).unwrap();
    let e = db.put_cf_with_ts(&plain, "k", ts(1), "v").unwrap_err();
    assert!(e.to_string().contains("no user-defined timestamps"), "{e}");
    assert!(matches!(db.get_cf_opt(&plain, "k", &at(1)), Err(Error::InvalidArgument(_))));
    db.put_cf(&plain, "k", "v").unwrap();
    // A batch mixing them is refused whole.
    let mut b = WriteBatch::default();
    b.put_cf(&plain, "a", "1");
    b.put_cf(&db.cf_handle("default").unwrap(), "x", "y");
    assert!(matches!(db.write(b), Err(Error::InvalidArgument(_))));
    assert_eq!(db.get_cf(&plain, "a").unwrap(), None);
    let mut b = WriteBatch::default();
    b.put_cf(&plain, "a", "1");
    b.put_cf_with_ts(&db.cf_handle("default").unwrap(), "x", ts(3), "y");
    db.write(b).unwrap();
    assert_eq!(db.get_opt("x", &at(3)).unwrap().as_deref(), Some(&b"y"[..]));
    assert_eq!(db.get_cf(&plain, "a").unwrap().as_deref(), Some(&b"1"[..]));
    // Bytes decoded into a batch carry no sign of their timestamps: refused.
    let data = {
        let mut b = WriteBatch::default();
        b.put_cf_with_ts(&db.cf_handle("default").unwrap(), "z", ts(3), "y");
        b.data().to_vec()
    };
    assert!(matches!(db.write(WriteBatch::from_data(&data)), Err(Error::InvalidArgument(_))));
    // The order is recorded with its timestamp size: without it the family does not open.
    drop((db, plain));
    let mut o = Options { fs: Arc::new(fs.clone()), ..Options::default() };
    o.set_comparator("test.u64ts", Box::new(|a: &[u8], b: &[u8]| a.cmp(b)));
    let e = Db::open_cf(&o, "/db", ["plain"]).unwrap_err();
    assert!(e.to_string().contains("test.u64ts#ts8"), "{e}");
}

#[test]
fn merges_at_a_timestamp_apply_to_the_versions_below_them() {
    let fs = MemFs::new();
    let mut o = opts(&fs);
    o.merge_operator = strata::merge_operator::builtin_merge_operator("stringappend");
    let db = Db::open(&o, "/db").unwrap();
    let cf = db.cf_handle("default").unwrap();
    db.put_with_ts("k", ts(1), "a").unwrap();
    db.merge_with_ts("k", ts(3), "b").unwrap();
    let mut b = WriteBatch::default();
    b.merge_cf_with_ts(&cf, "k", ts(5), "c");
    db.write(b).unwrap();
    db.delete_with_ts("k", ts(7)).unwrap();
    db.merge_cf_with_ts(&cf, "k", ts(9), "d").unwrap();
    db.put_with_ts("z", ts(2), "z").unwrap();
    let reads = [None, Some("a"), Some("a"), Some("a,b"), Some("a,b"), Some("a,b,c")];
    let check = |when: &str| {
        for (t, want) in reads.iter().enumerate().chain([(7, &None), (8, &None), (9, &Some("d"))]) {
            let got = db.get_opt("k", &at(t as u64)).unwrap();
            assert_eq!(got.as_deref(), want.map(str::as_bytes), "{when}: k at {t}");
        }
        let want = vec![(b"k".to_vec(), b"a,b,c".to_vec(), 5), (b"z".to_vec(), b"z".to_vec(), 2)];
        assert_eq!(scan(&db, at(6), true), want, "{when}: forward at 6");
        assert_eq!(scan(&db, at(6), false), want, "{when}: backward at 6");
        let want: History = vec![
            (b"k".to_vec(), 9, b"d".to_vec(), false),
            (b"k".to_vec(), 7, Vec::new(), true),
            (b"k".to_vec(), 5, b"a,b,c".to_vec(), false),
            (b"k".to_vec(), 3, b"a,b".to_vec(), false),
            (b"k".to_vec(), 1, b"a".to_vec(), false),
            (b"z".to_vec(), 2, b"z".to_vec(), false),
        ];
        assert_eq!(history(&db, history_ro(1, 9), true), want, "{when}: history");
        assert_eq!(history(&db, history_ro(1, 9), false), want, "{when}: history back");
        assert_eq!(history(&db, history_ro(3, 6), true), want[2..4].to_vec(), "{when}: 3..=6");
        // GetMergeOperands at a timestamp: what a read there merges, unmerged.
        let operands = |t: u64| {
            let bounds = GetMergeOperandsOptions::default();
            let got = db.get_merge_operands_opt("k", &at(t), &bounds).unwrap();
            got.map(|o| o.iter().map(|v| String::from_utf8(v.clone()).unwrap()).collect())
        };
        let strings = |v: &[&str]| Some(v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(operands(0), None, "{when}: operands at 0");
        assert_eq!(operands(2), strings(&["a"]), "{when}: a value alone");
        assert_eq!(operands(6), strings(&["a", "b", "c"]), "{when}: operands at 6");
        assert_eq!(operands(7), None, "{when}: a deletion");
        assert_eq!(operands(9), strings(&["d"]), "{when}: an operand over a deletion");
        let newest_only = |v: &[u8]| v != b"c";
        let bounds = GetMergeOperandsOptions {
            continue_cb: Some(&newest_only),
            ..GetMergeOperandsOptions::default()
        };
        let got = db.get_merge_operands_opt("k", &at(6), &bounds).unwrap();
        assert_eq!(got, Some(vec![b"c".to_vec()]), "{when}: the callback ends the walk");
    };
    check("memtable");
    db.flush().unwrap();
    check("table");
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    check("compacted");
    // Regression: the merge at 5, below the low, hid the versions under it from compaction,
    // which then dropped them (a read at 6 gave "c").
    db.increase_full_history_ts_low(&cf, ts(6)).unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(db.get_opt("k", &at(6)).unwrap().as_deref(), Some(&b"a,b,c"[..]));
    assert_eq!(table_entries(&db), 6, "every version of k stays under the merge at 5");
    // A put below the low covers what is under it.
    db.put_with_ts("k", ts(5), "p").unwrap();
    db.flush().unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(db.get_opt("k", &at(6)).unwrap().as_deref(), Some(&b"p"[..]));
    assert_eq!(table_entries(&db), 4, "k at 9, 7 and 5 (the put), z at 2");
    assert_eq!(db.get_opt("k", &at(9)).unwrap().as_deref(), Some(&b"d"[..]));
}

/// Regression: a double-ended iterator over a family with timestamps compared its two ends'
/// keys (without timestamps) in the family's order of stored keys, whose function (this
/// test's, as the crate's) cuts a timestamp off each key: a one-byte key panicked.
#[test]
fn double_ended_iterators_meet_over_keys_and_over_versions() {
    let fs = MemFs::new();
    let db = Db::open(&opts(&fs), "/db").unwrap();
    for k in ["a", "b", "c", "d"] {
        db.put_with_ts(k, ts(1), format!("{k}1")).unwrap();
        db.put_with_ts(k, ts(3), format!("{k}3")).unwrap();
    }
    type Item = Option<strata::Result<(Box<[u8]>, Box<[u8]>)>>;
    let value = |r: Item| r.map(|r| String::from_utf8(r.unwrap().1.to_vec()).unwrap());
    let mut it = db.iterator_opt(IteratorMode::Start, at(2));
    assert_eq!(value(it.next()).as_deref(), Some("a1"));
    assert_eq!(value(it.next_back()).as_deref(), Some("d1"));
    assert_eq!(value(it.next()).as_deref(), Some("b1"));
    assert_eq!(value(it.next_back()).as_deref(), Some("c1"));
    assert_eq!(value(it.next()), None);
    assert_eq!(value(it.next_back()), None);
    // A history from "b": its versions from both ends, each once.
    let mut it =
        db.iterator_opt(IteratorMode::From(b"b", strata::Direction::Forward), history_ro(1, 3));
    let mut got = Vec::new();
    for i in 0.. {
        let v = if i % 2 == 0 { value(it.next()) } else { value(it.next_back()) };
        match v {
            Some(v) => got.push(v),
            None => break,
        }
    }
    assert_eq!(got, ["b3", "d1", "b1", "d3", "c3", "c1"]);
    let mut ro = history_ro(1, 3);
    ro.tailing = true;
    let e = db.iterator_opt(IteratorMode::Start, ro).next().unwrap().unwrap_err();
    assert!(matches!(e, Error::NotSupported(_)), "{e}");
}

#[test]
fn full_history_ts_low_refuses_older_reads_and_survives_a_reopen() {
    let fs = MemFs::new();
    let o = opts(&fs);
    {
        let db = Db::open(&o, "/db").unwrap();
        let cf = db.cf_handle("default").unwrap();
        assert_eq!(db.get_full_history_ts_low(&cf).unwrap(), Vec::<u8>::new());
        db.put_with_ts("k", ts(1), "a").unwrap();
        db.put_with_ts("k", ts(5), "b").unwrap();
        db.increase_full_history_ts_low(&cf, ts(3)).unwrap();
        assert_eq!(db.get_full_history_ts_low(&cf).unwrap(), ts(3));
        let e = db.increase_full_history_ts_low(&cf, ts(2)).unwrap_err();
        assert!(e.to_string().contains("below"), "{e}");
        assert!(matches!(db.get_opt("k", &at(2)), Err(Error::InvalidArgument(_))));
        assert_eq!(db.get_opt("k", &at(3)).unwrap().as_deref(), Some(&b"a"[..]));
        let mut c = CompactOptions::default();
        c.set_full_history_ts_low(ts(4));
        db.compact_range_opt(None::<&[u8]>, None::<&[u8]>, &c).unwrap();
        assert_eq!(db.get_full_history_ts_low(&cf).unwrap(), ts(4));
    }
    let db = Db::open(&o, "/db").unwrap();
    let cf = db.cf_handle("default").unwrap();
    assert_eq!(db.get_full_history_ts_low(&cf).unwrap(), ts(4), "recorded in the MANIFEST");
    assert!(db.get_opt("k", &at(3)).is_err());
    assert_eq!(db.get_opt("k", &at(4)).unwrap().as_deref(), Some(&b"a"[..]));
    assert_eq!(db.get_opt("k", &at(9)).unwrap().as_deref(), Some(&b"b"[..]));
}

#[test]
fn external_files_and_families_with_timestamps() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = Options::default();
    with_ts(&mut o);
    let sst = dir.path().join("f.sst");
    let mut w = SstFileWriter::create(&o);
    w.open(&sst).unwrap();
    assert!(matches!(w.put("a", "x"), Err(Error::InvalidArgument(_))));
    w.put_with_ts("a", ts(1), "a1").unwrap();
    w.put_with_ts("b", ts(2), "b2").unwrap();
    w.finish().unwrap();
    let mut db_opts = Options::default();
    db_opts.create_if_missing(true);
    db_opts.create_missing_column_families(true);
    let db = Db::open_cf_descriptors(
        &db_opts,
        dir.path().join("db"),
        vec![ColumnFamilyDescriptor::new("ts", o.clone())],
    )
    .unwrap();
    let cf = db.cf_handle("ts").unwrap();
    db.ingest_external_file_cf(&cf, vec![&sst]).unwrap();
    db.delete_cf_with_ts(&cf, "b", ts(3)).unwrap();
    db.put("plain", "p").unwrap();
    assert_eq!(db.get_cf_opt(&cf, "a", &at(1)).unwrap().as_deref(), Some(&b"a1"[..]));
    assert_eq!(db.get_cf_opt(&cf, "b", &at(1)).unwrap(), None);
    assert_eq!(db.get_cf_opt(&cf, "b", &at(2)).unwrap().as_deref(), Some(&b"b2"[..]));
    assert_eq!(db.get_cf_opt(&cf, "b", &at(3)).unwrap(), None);
    assert_eq!(db.get("plain").unwrap().as_deref(), Some(&b"p"[..]));
}

/// One write of a version.
#[derive(Clone, Debug)]
enum W {
    Put(Vec<u8>),
    Del,
    Merge(Vec<u8>),
}

/// Each key's versions: timestamp -> its writes, oldest first; ascending by timestamp.
type Model = BTreeMap<Vec<u8>, BTreeMap<u64, Vec<W>>>;

/// What a read sees down `writes` (newest first): the `stringappend` merge of the operands
/// met before a put (the base) or a deletion; `None` when that is a deletion or nothing.
fn resolve<'a>(mut writes: impl Iterator<Item = &'a W>) -> Option<Vec<u8>> {
    let mut operands = Vec::new(); // newest first
    let base = loop {
        match writes.next() {
            Some(W::Put(v)) => break Some(v.as_slice()),
            Some(W::Merge(v)) => operands.push(v.as_slice()),
            Some(W::Del) | None => break None,
        }
    };
    if operands.is_empty() {
        return base.map(<[u8]>::to_vec);
    }
    let parts: Vec<&[u8]> = base.into_iter().chain(operands.into_iter().rev()).collect();
    Some(parts.join(&b","[..]))
}

/// A key's writes at timestamps at or below `t`, newest first.
fn down_from(versions: &BTreeMap<u64, Vec<W>>, t: u64) -> impl Iterator<Item = &W> {
    versions.range(..=t).rev().flat_map(|(_, writes)| writes.iter().rev())
}

fn model_at(m: &Model, t: u64) -> Vec<(Vec<u8>, Vec<u8>, u64)> {
    m.iter()
        .filter_map(|(k, versions)| {
            let (&vt, _) = versions.range(..=t).next_back()?;
            resolve(down_from(versions, vt)).map(|v| (k.clone(), v, vt))
        })
        .collect()
}

/// A history from `start` to `t`: every version (key, timestamp, value, deleted) in range,
/// newest timestamp first per key.
type History = Vec<(Vec<u8>, u64, Vec<u8>, bool)>;

fn model_history(m: &Model, start: u64, t: u64) -> History {
    let mut out = Vec::new();
    for (k, versions) in m {
        for (&vt, writes) in versions.range(start..=t).rev() {
            match writes.last() {
                Some(W::Del) => out.push((k.clone(), vt, Vec::new(), true)),
                _ => {
                    let v = resolve(down_from(versions, vt)).expect("a put or merge reads");
                    out.push((k.clone(), vt, v, false));
                }
            }
        }
    }
    out
}

/// What a cursor with `ro` yields, one way or the other, each entry (key, value, timestamp)
/// made into a `T` by `f`; in key order either way.
fn walk<T>(
    db: &Db,
    ro: ReadOptions,
    forward: bool,
    mut f: impl FnMut(&[u8], &[u8], &[u8]) -> T,
) -> Vec<T> {
    let mut it = db.raw_iterator_opt(ro);
    let mut out = Vec::new();
    if forward {
        it.seek_to_first();
    } else {
        it.seek_to_last();
    }
    while let (Some(k), Some(v), Some(t)) = (it.key(), it.value(), it.timestamp()) {
        out.push(f(k, v, t));
        if forward {
            it.next();
        } else {
            it.prev();
        }
    }
    it.status().unwrap();
    if !forward {
        out.reverse();
    }
    out
}

/// The versions a history iterator returns, each parsed from its internal key (`key | ts |
/// trailer`, the type in the trailer's low byte: 0 a deletion).
fn history(db: &Db, ro: ReadOptions, forward: bool) -> History {
    walk(db, ro, forward, |ikey, v, t| {
        let (stored, trailer) = ikey.split_at(ikey.len() - 8);
        let (k, kt) = stored.split_at(stored.len() - TS);
        assert_eq!(kt, t, "the internal key names the version's timestamp");
        let deleted = trailer[0] == 0; // little-endian: the type first
        (k.to_vec(), ts_of(t), v.to_vec(), deleted)
    })
}

fn history_ro(start: u64, t: u64) -> ReadOptions {
    let mut ro = at(t);
    ro.set_iter_start_ts(ts(start));
    ro
}

fn scan(db: &Db, ro: ReadOptions, forward: bool) -> Vec<(Vec<u8>, Vec<u8>, u64)> {
    walk(db, ro, forward, |k, v, t| (k.to_vec(), v.to_vec(), ts_of(t)))
}

#[test]
fn random_versions_read_at_random_timestamps_match_a_model() {
    let mut rng = StdRng::seed_from_u64(11);
    let fs = MemFs::new();
    let mut o = opts(&fs);
    o.merge_operator = strata::merge_operator::builtin_merge_operator("stringappend");
    let mut db = Db::open(&o, "/db").unwrap();
    let mut model = Model::new();
    let (mut now, mut low) = (1u64, 0u64);
    // A snapshot held over later writes, with the model when it was taken.
    let mut held: Option<(strata::Snapshot<'static>, Model)> = None;
    for step in 0..4000 {
        let k = format!("k{:03}", rng.gen_range(0..120)).into_bytes();
        now += rng.gen_range(0..3);
        // Mostly the newest timestamp; sometimes an older one, below the low too (a late
        // write: no read at or above the low may see it unless it is the key's newest there).
        let wt = if rng.gen_bool(0.1) { rng.gen_range(1..=now) } else { now };
        match rng.gen_range(0..100) {
            0..=54 => {
                let v = format!("v{step}").into_bytes();
                db.put_with_ts(&k, ts(wt), &v).unwrap();
                model.entry(k).or_default().entry(wt).or_default().push(W::Put(v));
            }
            55..=66 => {
                let v = format!("m{step}").into_bytes();
                db.merge_with_ts(&k, ts(wt), &v).unwrap();
                model.entry(k).or_default().entry(wt).or_default().push(W::Merge(v));
            }
            67..=79 => {
                db.delete_with_ts(&k, ts(wt)).unwrap();
                model.entry(k).or_default().entry(wt).or_default().push(W::Del);
            }
            80..=84 => db.flush().unwrap(),
            85..=87 => db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap(),
            88 => {
                held = None;
                drop(db);
                db = Db::open(&o, "/db").unwrap();
            }
            89..=90 if now > low + 2 => {
                low = rng.gen_range(low + 1..now);
                db.increase_full_history_ts_low(&db.cf_handle("default").unwrap(), ts(low))
                    .unwrap();
            }
            89..=91 => {
                held = match held {
                    Some(_) => None,
                    None => Some((db.snapshot(), model.clone())),
                }
            }
            _ => {
                let t = rng.gen_range(low..=now + 2);
                let want = model_at(&model, t);
                let got = db.get_opt(&k, &at(t)).unwrap();
                let expect = want.iter().find(|(mk, _, _)| *mk == k).map(|(_, v, _)| v.clone());
                assert_eq!(got, expect, "step {step}: get {k:?} at {t}");
                if let Some((snap, then)) = &held {
                    let mut ro = at(t);
                    ro.set_snapshot(snap);
                    assert_eq!(
                        scan(&db, ro, true),
                        model_at(then, t),
                        "step {step}: snapshot at {t}"
                    );
                }
                if low > 0 {
                    assert!(db.get_opt(&k, &at(low - 1)).is_err(), "step {step}: below the low");
                }
                if step % 5 == 0 {
                    assert_eq!(scan(&db, at(t), true), want, "step {step}: forward at {t}");
                    assert_eq!(scan(&db, at(t), false), want, "step {step}: backward at {t}");
                    let (a, b) = (rng.gen_range(0..120), rng.gen_range(0..120));
                    let (lo, hi) = (format!("k{:03}", a.min(b)), format!("k{:03}", a.max(b)));
                    let mut ro = at(t);
                    ro.set_iterate_lower_bound(lo.clone());
                    ro.set_iterate_upper_bound(hi.clone());
                    let bounded: Vec<_> = want
                        .iter()
                        .filter(|(k, _, _)| {
                            k.as_slice() >= lo.as_bytes() && k.as_slice() < hi.as_bytes()
                        })
                        .cloned()
                        .collect();
                    assert_eq!(scan(&db, ro.clone(), true), bounded, "step {step}: bounded");
                    assert_eq!(scan(&db, ro, false), bounded, "step {step}: bounded back");
                    let target = format!("k{:03}", rng.gen_range(0..120)).into_bytes();
                    let mut it = db.raw_iterator_opt(at(t));
                    it.seek(&target);
                    let ge =
                        want.iter().find(|(k, _, _)| *k >= target).map(|(k, _, _)| k.as_slice());
                    assert_eq!(it.key(), ge, "step {step}: seek {target:?}");
                    it.seek_for_prev(&target);
                    let le = want
                        .iter()
                        .rev()
                        .find(|(k, _, _)| *k <= target)
                        .map(|(k, _, _)| k.as_slice());
                    assert_eq!(it.key(), le, "step {step}: seek_for_prev {target:?}");
                    // Every version from a start at or above the low, both ways, and within
                    // bounds; moving back and forth between two versions.
                    let start = rng.gen_range(low..=t);
                    let want = model_history(&model, start, t);
                    let got = history(&db, history_ro(start, t), true);
                    assert_eq!(got, want, "step {step}: history {start}..={t}");
                    let got = history(&db, history_ro(start, t), false);
                    assert_eq!(got, want, "step {step}: history back {start}..={t}");
                    let mut ro = history_ro(start, t);
                    ro.set_iterate_lower_bound(lo.clone());
                    ro.set_iterate_upper_bound(hi.clone());
                    let bounded: History = want
                        .iter()
                        .filter(|(k, ..)| {
                            k.as_slice() >= lo.as_bytes() && k.as_slice() < hi.as_bytes()
                        })
                        .cloned()
                        .collect();
                    assert_eq!(history(&db, ro.clone(), true), bounded, "step {step}: history in");
                    assert_eq!(history(&db, ro, false), bounded, "step {step}: history in back");
                    if want.len() >= 2 {
                        let i = rng.gen_range(0..want.len() - 1);
                        let mut it = db.raw_iterator_opt(history_ro(start, t));
                        it.seek_to_first();
                        for _ in 0..i {
                            it.next();
                        }
                        let name = |it: &strata::DbRawIterator| {
                            it.key().map(|k| k[..k.len() - 8].to_vec())
                        };
                        let here = name(&it);
                        it.next();
                        let there = name(&it);
                        it.prev();
                        assert_eq!(name(&it), here, "step {step}: history prev after next");
                        it.next();
                        assert_eq!(name(&it), there, "step {step}: history next after prev");
                        let mut want_stored = want[i + 1].0.clone();
                        want_stored.extend_from_slice(&ts(want[i + 1].1));
                        assert_eq!(there, Some(want_stored), "step {step}: history step {i}");
                    }
                }
            }
        }
    }
    assert!(low > 0 && table_entries(&db) > 0);
}

fn table_entries(db: &Db) -> u64 {
    db.live_files().unwrap().iter().map(|f| f.num_entries).sum()
}

#[test]
fn compaction_drops_versions_below_full_history_ts_low_no_read_can_reach() {
    let fs = MemFs::new();
    let db = Db::open(&opts(&fs), "/db").unwrap();
    let cf = db.cf_handle("default").unwrap();
    for t in 1..=40u64 {
        db.put_with_ts("k", ts(t), format!("v{t}")).unwrap();
        db.put_with_ts("j", ts(t), format!("j{t}")).unwrap();
    }
    db.delete_with_ts("j", ts(20)).unwrap();
    db.flush().unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(
        table_entries(&db),
        80,
        "without a low every version stays (j's deletion at 20 replaced its put)"
    );
    // m's version at 5 is older than the snapshot, its version at 10 newer: a read at the
    // snapshot sees only the first, so it stays while the snapshot lives.
    db.put_with_ts("m", ts(5), "m5").unwrap();
    let snap = db.snapshot();
    db.put_with_ts("m", ts(10), "m10").unwrap();
    db.put_with_ts("k", ts(5), "late").unwrap();
    db.increase_full_history_ts_low(&cf, ts(30)).unwrap();
    db.flush().unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(table_entries(&db), 12 + 12 + 2, "the snapshot keeps m at 5");
    assert_eq!(snap.get_opt("m", &at(30)).unwrap().as_deref(), Some(&b"m5"[..]));
    assert_eq!(db.get_opt("m", &at(30)).unwrap().as_deref(), Some(&b"m10"[..]));
    drop(snap);
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(table_entries(&db), 12 + 12 + 1, "{:?}", db.live_files().unwrap());
    // Below 30, one version of each key is left: k's at 29 (not the later write at 5), j's
    // at 29, m's at 10; 30..=40 stay.
    for t in 30..=45u64 {
        let want = format!("v{}", t.min(40));
        assert_eq!(db.get_opt("k", &at(t)).unwrap().as_deref(), Some(want.as_bytes()), "k at {t}");
        let want = format!("j{}", t.min(40));
        assert_eq!(db.get_opt("j", &at(t)).unwrap().as_deref(), Some(want.as_bytes()), "j at {t}");
    }
    assert!(db.get_opt("k", &at(29)).is_err(), "below the low");
    // A key deleted below the low stays deleted; its deletion is kept.
    db.put_with_ts("d", ts(31), "d31").unwrap();
    db.delete_with_ts("d", ts(32)).unwrap();
    db.increase_full_history_ts_low(&cf, ts(35)).unwrap();
    db.flush().unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(db.get_opt("d", &at(35)).unwrap(), None);
    assert_eq!(db.get_opt("k", &at(35)).unwrap().as_deref(), Some(&b"v35"[..]));
}

#[test]
fn a_multi_range_scan_reads_each_range_at_the_read_timestamp() {
    let fs = MemFs::new();
    let db = Db::open(&opts(&fs), "/db").unwrap();
    for i in 0..200u64 {
        let k = format!("k{i:03}");
        db.put_with_ts(&k, ts(10), format!("{k}@10")).unwrap();
        if i % 2 == 0 {
            db.put_with_ts(&k, ts(20), format!("{k}@20")).unwrap();
        }
        if i % 3 == 0 {
            db.delete_with_ts(&k, ts(30)).unwrap();
        }
    }
    db.flush().unwrap();
    let mut args = strata::MultiScanArgs::new();
    args.insert("k010", "k014");
    args.insert("k100", "k103");
    for reverse in [false, true] {
        args.reverse = reverse;
        for (t, want) in [
            (
                25,
                vec![
                    vec!["k010@20", "k011@10", "k012@20", "k013@10"],
                    vec!["k100@20", "k101@10", "k102@20"],
                ],
            ),
            (35, vec![vec!["k010@20", "k011@10", "k013@10"], vec!["k100@20", "k101@10"]]),
        ] {
            let mut ms = db.multi_scan(&at(t), &args).unwrap();
            for mut w in want {
                if reverse {
                    w.reverse();
                }
                let got: Vec<String> = ms
                    .next_scan()
                    .unwrap()
                    .map(|r| String::from_utf8(r.unwrap().1.to_vec()).unwrap())
                    .collect();
                assert_eq!(got, w, "at {t}, reverse {reverse}");
            }
            assert!(ms.next_scan().is_none());
        }
    }
}
