//! `DbWithTtl`: values expire for reads as soon as their time is up, compactions and flushes
//! remove them, per-family TTLs, merges renew a key's life, a user's filter still runs on the
//! unexpired values, batches are stamped, and a value without a time suffix is corruption.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use strata::env::MemFs;
use strata::merge_operator::StringAppendOperator;
use strata::{
    ColumnFamilyDescriptor, DbWithTtl, Decision, Error, IteratorMode, Options, ReadOptions,
    WriteBatch, TTL_SUFFIX_LEN,
};

struct Clock(Arc<AtomicU64>);

impl Clock {
    fn new(start: u64) -> (Clock, strata::TtlClock) {
        let t = Arc::new(AtomicU64::new(start));
        let c = t.clone();
        (Clock(t), Arc::new(move || c.load(Ordering::SeqCst)))
    }
    fn advance(&self, secs: u64) {
        self.0.fetch_add(secs, Ordering::SeqCst);
    }
}

fn mem_opts(fs: &MemFs) -> Options {
    Options { fs: Arc::new(fs.clone()), ..Options::default() }
}

fn open(opts: &Options, clock: &strata::TtlClock, ttl: u64) -> DbWithTtl {
    DbWithTtl::open_cf_descriptors_with_clock(
        opts,
        Path::new("/db"),
        Vec::new(),
        Duration::from_secs(ttl),
        clock.clone(),
    )
    .unwrap()
}

fn live_keys(db: &DbWithTtl) -> Vec<String> {
    db.iterator(IteratorMode::Start)
        .map(|r| String::from_utf8(r.unwrap().0.to_vec()).unwrap())
        .collect()
}

/// Raw entries of the underlying DB (with their suffix).
fn stored(db: &DbWithTtl) -> usize {
    db.db().iterator(IteratorMode::Start).count()
}

#[test]
fn values_expire_for_reads_and_compaction_removes_them() {
    let fs = MemFs::new();
    let (clock, c) = Clock::new(1_000_000);
    let db = open(&mem_opts(&fs), &c, 10);
    db.put("old", "1").unwrap();
    clock.advance(6);
    db.put("new", "2").unwrap();
    assert_eq!(db.get("old").unwrap().as_deref(), Some(&b"1"[..]));
    clock.advance(5); // old: 11 s, new: 5 s
    assert_eq!(db.get("old").unwrap(), None, "expired for reads at once");
    assert_eq!(db.get("new").unwrap().as_deref(), Some(&b"2"[..]));
    assert_eq!(live_keys(&db), ["new"]);
    assert_eq!(stored(&db), 2, "still stored until a flush or compaction");
    db.compact().unwrap();
    assert_eq!(stored(&db), 1, "the compaction removed the expired value");
    clock.advance(10);
    db.flush().unwrap();
    db.compact().unwrap();
    assert_eq!(stored(&db), 0);
    assert_eq!(db.get("new").unwrap(), None);
    // A stored value carries its suffix.
    db.put("k", "abc").unwrap();
    assert_eq!(db.db().get("k").unwrap().unwrap().len(), 3 + TTL_SUFFIX_LEN);
}

#[test]
fn expired_values_are_removed_by_the_flush_itself() {
    let fs = MemFs::new();
    let (clock, c) = Clock::new(50);
    let db = open(&mem_opts(&fs), &c, 3);
    for i in 0..100 {
        db.put(format!("k{i:03}"), "v").unwrap();
    }
    clock.advance(4);
    db.flush().unwrap();
    assert_eq!(stored(&db), 0);
    // The flush wrote deletions (older versions could exist below L0); the compaction to the
    // bottom drops them too.
    db.compact().unwrap();
    assert!(db.db().live_files_metadata().is_empty(), "nothing left");
}

#[test]
fn zero_ttl_never_expires_and_families_have_their_own() {
    let fs = MemFs::new();
    let (clock, c) = Clock::new(7);
    let opts = mem_opts(&fs);
    let db = DbWithTtl::open_cf_descriptors_with_clock(
        &Options { create_missing_column_families: true, ..opts.clone() },
        Path::new("/db"),
        vec![(ColumnFamilyDescriptor::new("short", opts.clone()), Duration::from_secs(2))],
        Duration::ZERO,
        c.clone(),
    )
    .unwrap();
    let short = db.cf_handle("short").unwrap();
    let long = db.create_cf("long", &opts, Duration::from_secs(100)).unwrap();
    assert_eq!(db.ttl_cf(&short), Some(Duration::from_secs(2)));
    db.put("k", "forever").unwrap();
    db.put_cf(&short, "k", "brief").unwrap();
    db.put_cf(&long, "k", "a while").unwrap();
    clock.advance(50);
    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"forever"[..]));
    assert_eq!(db.get_cf(&short, "k").unwrap(), None);
    assert_eq!(db.get_cf(&long, "k").unwrap().as_deref(), Some(&b"a while"[..]));
    db.compact_cf(&short).unwrap();
    db.compact_cf(&long).unwrap();
    db.compact().unwrap();
    assert_eq!(db.db().iterator_cf(&short, IteratorMode::Start).count(), 0);
    assert_eq!(db.db().iterator_cf(&long, IteratorMode::Start).count(), 1);
    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"forever"[..]));
}

#[test]
fn merges_renew_life_and_see_values_without_the_suffix() {
    let fs = MemFs::new();
    let (clock, c) = Clock::new(100);
    let mut opts = mem_opts(&fs);
    opts.merge_operator = Some(Arc::new(StringAppendOperator::new(b",")));
    let db = open(&opts, &c, 10);
    db.put("k", "a").unwrap();
    db.flush().unwrap();
    clock.advance(8);
    db.merge("k", "b").unwrap();
    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"a,b"[..]));
    db.compact().unwrap(); // merged at t=108: the value lives until 118
    clock.advance(8); // t=116: the base alone would have expired at 110
    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"a,b"[..]));
    clock.advance(3);
    assert_eq!(db.get("k").unwrap(), None);
}

#[test]
fn a_user_filter_sees_unexpired_values_without_the_suffix() {
    let fs = MemFs::new();
    let (clock, c) = Clock::new(1);
    let mut opts = mem_opts(&fs);
    opts.set_compaction_filter("upper", |_, _, v: &[u8]| {
        assert!(!v.ends_with(&[0, 0]), "the filter must not see the time suffix");
        if v == b"drop" {
            Decision::Remove
        } else {
            Decision::Change(v.to_ascii_uppercase())
        }
    });
    let db = open(&opts, &c, 5);
    db.put("a", "drop").unwrap();
    db.put("b", "quiet").unwrap();
    db.compact().unwrap();
    assert_eq!(db.get("a").unwrap(), None);
    assert_eq!(db.get("b").unwrap().as_deref(), Some(&b"QUIET"[..]));
    clock.advance(4);
    assert_eq!(db.get("b").unwrap().as_deref(), Some(&b"QUIET"[..]), "changed, same time");
    clock.advance(2);
    assert_eq!(db.get("b").unwrap(), None);
}

#[test]
fn batches_are_stamped_and_snapshots_read_through_the_wrapper() {
    let fs = MemFs::new();
    let (clock, c) = Clock::new(10);
    let db = open(&mem_opts(&fs), &c, 5);
    let mut b = WriteBatch::new();
    b.put("x", "1");
    b.put("y", "2");
    b.delete("z");
    db.write(b).unwrap();
    let snap = db.snapshot();
    db.put("x", "changed").unwrap();
    let mut ro = ReadOptions::default();
    ro.set_snapshot(&snap);
    let at_snap = |k: &str| db.get_cf_opt(&db.cf_handle("default").unwrap(), k, &ro).unwrap();
    assert_eq!(at_snap("x").as_deref(), Some(&b"1"[..]));
    assert_eq!(db.get("x").unwrap().as_deref(), Some(&b"changed"[..]));
    assert_eq!(live_keys(&db), ["x", "y"]);
    let rev: Vec<_> = db.iterator(IteratorMode::End).map(|r| r.unwrap().1.to_vec()).collect();
    assert_eq!(rev, [b"2".to_vec(), b"changed".to_vec()]);
    clock.advance(6);
    assert_eq!(live_keys(&db), Vec::<String>::new());
}

#[test]
fn a_value_without_a_suffix_is_corruption_not_a_wrong_answer() {
    let fs = MemFs::new();
    let (_clock, c) = Clock::new(10);
    let db = open(&mem_opts(&fs), &c, 5);
    db.db().put("raw", "ab").unwrap(); // written around the wrapper
    let e = db.get("raw").unwrap_err();
    assert!(matches!(e, Error::Corruption { .. }), "{e}");
    assert!(e.to_string().contains("raw"), "{e}");
    let r: Vec<_> = db.iterator(IteratorMode::Start).collect();
    assert_eq!(r.len(), 1);
    assert!(r[0].is_err());
    db.compact().unwrap(); // kept as it is
    assert!(db.get("raw").is_err());
}

#[test]
fn expiry_survives_reopen() {
    let fs = MemFs::new();
    let (clock, c) = Clock::new(1000);
    let opts = mem_opts(&fs);
    {
        let db = open(&opts, &c, 30);
        db.put("a", "1").unwrap();
        clock.advance(20);
        db.put("b", "2").unwrap();
    }
    clock.advance(15);
    let db = open(&opts, &c, 30);
    assert_eq!(db.get("a").unwrap(), None);
    assert_eq!(db.get("b").unwrap().as_deref(), Some(&b"2"[..]));
}

// ---- The TTL opens of `Db` (`Db::open_with_ttl` and kin, the `rocksdb` crate's) ----

fn open_db(
    opts: &Options,
    clock: &strata::TtlClock,
    cfs: Vec<ColumnFamilyDescriptor>,
    ttl: u64,
) -> strata::Db {
    let mut o = opts.clone();
    o.create_if_missing = true;
    o.create_missing_column_families = true;
    strata::Db::open_cf_descriptors_with_ttl_clock(
        &o,
        Path::new("/db"),
        cfs,
        Duration::from_secs(ttl),
        clock.clone(),
    )
    .unwrap()
}

#[test]
fn a_db_opened_with_a_ttl_reads_plain_values_and_compaction_expires_them() {
    let fs = MemFs::new();
    let (time, clock) = Clock::new(1_000);
    let db = open_db(&mem_opts(&fs), &clock, Vec::new(), 10);
    db.put(b"a", b"1").unwrap();
    let mut b = WriteBatch::new();
    b.put(b"b", b"22");
    b.delete(b"a");
    b.put(b"a", b"333");
    db.write(b).unwrap();
    assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"333"[..]));
    assert_eq!(db.get_pinned(b"b").unwrap().as_deref(), Some(&b"22"[..]));
    let all: Vec<_> = db.iterator(IteratorMode::Start).map(Result::unwrap).collect();
    assert_eq!(
        all,
        vec![
            (b"a".to_vec().into(), b"333".to_vec().into()),
            (b"b".to_vec().into(), b"22".to_vec().into())
        ]
    );
    let got = db.multi_get([&b"a"[..], b"zz"]);
    assert_eq!(got[0].as_ref().unwrap().as_deref(), Some(&b"333"[..]));
    assert_eq!(got[1].as_ref().unwrap(), &None);
    db.flush().unwrap();
    let mut raw = db.raw_iterator();
    raw.seek_to_last();
    assert_eq!(raw.item(), Some((&b"b"[..], &b"22"[..])), "tables strip too");

    // Within the TTL compaction keeps them; past it they go.
    time.advance(10);
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(db.get(b"b").unwrap().as_deref(), Some(&b"22"[..]));
    time.advance(1);
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(db.get(b"a").unwrap(), None);
    assert_eq!(db.get(b"b").unwrap(), None);
    assert_eq!(db.iterator(IteratorMode::Start).count(), 0);
}

#[test]
fn ttl_opens_give_each_family_its_ttl_and_created_families_never_expire() {
    use strata::ColumnFamilyTtl;
    let fs = MemFs::new();
    let (time, clock) = Clock::new(5_000);
    let cfs = vec![
        ColumnFamilyDescriptor::new_with_ttl(
            "short",
            Options::default(),
            ColumnFamilyTtl::Duration(Duration::from_secs(2)),
        ),
        ColumnFamilyDescriptor::new_with_ttl(
            "never",
            Options::default(),
            ColumnFamilyTtl::Disabled,
        ),
        ColumnFamilyDescriptor::new("same", Options::default()),
    ];
    let db = open_db(&mem_opts(&fs), &clock, cfs, 100);
    let made = db.create_cf_handle("made", &Options::default()).unwrap();
    let names = ["default", "short", "never", "same"];
    for n in names {
        let cf = db.cf_handle(n).unwrap();
        db.put_cf(&cf, b"k", n.as_bytes()).unwrap();
    }
    db.put_cf(&made, b"k", b"made").unwrap();
    time.advance(50);
    for n in names.iter().chain(&["made"]) {
        let cf = db.cf_handle(n).unwrap();
        db.compact_range_cf(&cf, None::<&[u8]>, None::<&[u8]>).unwrap();
    }
    let get = |n: &str| db.get_cf(&db.cf_handle(n).unwrap(), b"k").unwrap();
    assert_eq!(get("short"), None, "2 s TTL, 50 s later");
    assert_eq!(get("default").as_deref(), Some(&b"default"[..]));
    assert_eq!(get("same").as_deref(), Some(&b"same"[..]), "SameAsDb: 100 s");
    time.advance(100);
    for n in names.iter().chain(&["made"]) {
        let cf = db.cf_handle(n).unwrap();
        db.compact_range_cf(&cf, None::<&[u8]>, None::<&[u8]>).unwrap();
    }
    assert_eq!(get("default"), None);
    assert_eq!(get("same"), None);
    assert_eq!(get("never").as_deref(), Some(&b"never"[..]));
    assert_eq!(get("made").as_deref(), Some(&b"made"[..]));
}

#[test]
fn ttl_opens_merge_without_the_time_and_a_plain_value_is_corruption() {
    let fs = MemFs::new();
    let (_time, clock) = Clock::new(1_000);
    let mut o = mem_opts(&fs);
    o.merge_operator = Some(Arc::new(StringAppendOperator::new(b",")));
    {
        // Written by a DB opened without a TTL: no time suffix.
        let mut plain = o.clone();
        plain.create_if_missing = true;
        let db = strata::Db::open(&plain, Path::new("/db")).unwrap();
        db.put(b"old", b"x").unwrap();
        db.flush().unwrap();
    }
    let db = open_db(&o, &clock, Vec::new(), 0);
    db.put(b"m", b"a").unwrap();
    db.merge(b"m", b"b").unwrap();
    assert_eq!(db.get(b"m").unwrap().as_deref(), Some(&b"a,b"[..]));
    db.flush().unwrap();
    db.merge(b"m", b"c").unwrap();
    assert_eq!(db.get(b"m").unwrap().as_deref(), Some(&b"a,b,c"[..]));
    let mut it = db.raw_iterator();
    it.seek(b"m");
    assert_eq!(it.value(), Some(&b"a,b,c"[..]));
    let e = db.get(b"old").unwrap_err();
    assert!(matches!(&e, Error::Corruption { .. }) && e.to_string().contains("old"), "{e}");
    let mut it = db.raw_iterator();
    it.seek(b"n");
    assert!(!it.valid());
    let e = it.status().unwrap_err();
    assert!(e.to_string().contains("\"old\""), "{e}");
}

#[test]
fn the_crate_shaped_ttl_opens_use_the_system_clock() {
    let dir = tempfile::tempdir().unwrap();
    let o = Options {
        create_if_missing: true,
        create_missing_column_families: true,
        ..Options::default()
    };
    let db =
        strata::Db::open_cf_with_ttl(&o, dir.path(), ["cf"], Duration::from_secs(3600)).unwrap();
    let cf = db.cf_handle("cf").unwrap();
    db.put_cf(&cf, b"k", b"v").unwrap();
    db.compact_range_cf(&cf, None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(db.get_cf(&cf, b"k").unwrap().as_deref(), Some(&b"v"[..]));
    drop(db);
    let db = strata::Db::open_with_ttl(&o, dir.path().join("d"), Duration::ZERO).unwrap();
    db.put(b"k", b"v").unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
}
