//! Compaction filters: values removed or changed in flushes and compactions, removed keys
//! staying removed over older versions below, snapshots never seeing a filtered value, what the
//! factory is told (manual, full, family, flush/compaction/recovery), and filters per family.

use std::path::Path;
use std::sync::{Arc, Mutex};

use strata::env::MemFs;
use strata::{
    CompactionFilter, CompactionFilterContext, CompactionFilterFactory, Db, Decision, Options,
    ReadOptions, TableFileCreationReason,
};

fn mem_opts(fs: &MemFs) -> Options {
    Options { fs: Arc::new(fs.clone()), ..Options::default() }
}

/// Removes the value `drop`, upper-cases values starting with `up:`.
fn drop_and_upcase(_level: u32, _key: &[u8], value: &[u8]) -> Decision {
    if value == b"drop" {
        Decision::Remove
    } else if value.starts_with(b"up:") {
        Decision::Change(value.to_ascii_uppercase())
    } else {
        Decision::Keep
    }
}

fn get(db: &Db, k: &str) -> Option<String> {
    db.get(k).unwrap().map(|v| String::from_utf8(v).unwrap())
}

#[test]
fn flush_and_compaction_remove_and_change_values() {
    let fs = MemFs::new();
    let mut opts = mem_opts(&fs);
    opts.set_compaction_filter("drop-and-upcase", drop_and_upcase);
    let db = Db::open(&opts, Path::new("/db")).unwrap();
    db.put("a", "keep").unwrap();
    db.put("b", "drop").unwrap();
    db.put("c", "up:x").unwrap();
    // Still in the memtable: nothing filtered yet.
    assert_eq!(get(&db, "b").as_deref(), Some("drop"));
    db.flush().unwrap();
    assert_eq!(get(&db, "a").as_deref(), Some("keep"));
    assert_eq!(get(&db, "b"), None);
    assert_eq!(get(&db, "c").as_deref(), Some("UP:X"));
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(get(&db, "b"), None);
    assert_eq!(get(&db, "c").as_deref(), Some("UP:X"));
    let keys: Vec<_> =
        db.iterator(strata::IteratorMode::Start).map(|r| r.unwrap().0.to_vec()).collect();
    assert_eq!(keys, [b"a".to_vec(), b"c".to_vec()]);
}

/// A removed value becomes a deletion: the older version below it does not come back.
#[test]
fn a_removed_value_keeps_older_versions_hidden() {
    let fs = MemFs::new();
    let mut opts = mem_opts(&fs);
    opts.set_compaction_filter("drop-and-upcase", drop_and_upcase);
    let db = Db::open(&opts, Path::new("/db")).unwrap();
    db.put("k", "old").unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap(); // "old" at the bottom
    db.put("k", "drop").unwrap();
    db.flush().unwrap(); // filtered in the flush: a deletion in L0 above "old"
    assert_eq!(get(&db, "k"), None);
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(get(&db, "k"), None);
    drop(db);
    let db = Db::open(&opts, Path::new("/db")).unwrap();
    assert_eq!(get(&db, "k"), None);
}

/// The calls a filter saw: (level, key, value).
type Calls = Arc<Mutex<Vec<(u32, Vec<u8>, Vec<u8>)>>>;

/// Records every context and call; filters only compactions.
#[derive(Default)]
struct Recorder {
    contexts: Mutex<Vec<CompactionFilterContext>>,
    seen: Calls,
    compactions_only: bool,
}

struct RecordingFilter {
    seen: Calls,
}

impl CompactionFilter for RecordingFilter {
    fn filter(&mut self, level: u32, key: &[u8], value: &[u8]) -> Decision {
        self.seen.lock().unwrap().push((level, key.to_vec(), value.to_vec()));
        drop_and_upcase(level, key, value)
    }
    fn name(&self) -> &str {
        "recording"
    }
}

impl CompactionFilterFactory for Recorder {
    fn create(&self, ctx: &CompactionFilterContext) -> Box<dyn CompactionFilter> {
        self.contexts.lock().unwrap().push(ctx.clone());
        Box::new(RecordingFilter { seen: self.seen.clone() })
    }
    fn name(&self) -> &str {
        "recorder"
    }
    fn should_filter_table_file_creation(&self, reason: TableFileCreationReason) -> bool {
        !self.compactions_only || reason == TableFileCreationReason::Compaction
    }
}

#[test]
fn snapshots_never_see_a_filtered_value() {
    let fs = MemFs::new();
    let rec = Arc::new(Recorder { compactions_only: true, ..Recorder::default() });
    let mut opts = mem_opts(&fs);
    opts.compaction_filter_factory = Some(rec.clone());
    let db = Db::open(&opts, Path::new("/db")).unwrap();
    db.put("k", "drop").unwrap();
    db.put("u", "up:1").unwrap();
    let snap = db.snapshot();
    let mut at_snap = ReadOptions::default();
    at_snap.set_snapshot(&snap);
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    // Both values are visible to the snapshot: the filter is not shown them.
    assert!(rec.seen.lock().unwrap().is_empty());
    assert_eq!(db.get_opt("k", &at_snap).unwrap().as_deref(), Some(&b"drop"[..]));
    assert_eq!(db.get_opt("u", &at_snap).unwrap().as_deref(), Some(&b"up:1"[..]));
    assert_eq!(get(&db, "k").as_deref(), Some("drop"));
    // A newer value above the snapshot is filtered; the snapshot still reads its own.
    db.put("u", "up:2").unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(get(&db, "u").as_deref(), Some("UP:2"));
    assert_eq!(db.get_opt("u", &at_snap).unwrap().as_deref(), Some(&b"up:1"[..]));
    assert_eq!(rec.seen.lock().unwrap().len(), 1);
    // Once the snapshot is gone, the next compaction filters the rest.
    drop(at_snap);
    drop(snap);
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(get(&db, "k"), None);
    assert_eq!(get(&db, "u").as_deref(), Some("UP:2"));
}

#[test]
fn the_factory_is_told_what_runs() {
    let fs = MemFs::new();
    let dir = Path::new("/db");
    let rec = Arc::new(Recorder::default());
    let mut opts = mem_opts(&fs);
    opts.compaction_filter_factory = Some(rec.clone());
    {
        let db = Db::open(&opts, dir).unwrap();
        db.put("a", "1").unwrap();
        db.flush().unwrap();
        db.put("b", "2").unwrap();
        db.flush().unwrap();
        db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
        db.put("c", "3").unwrap(); // left in the WAL
    }
    let contexts = rec.contexts.lock().unwrap().clone();
    let flushes: Vec<_> =
        contexts.iter().filter(|c| c.reason == TableFileCreationReason::Flush).collect();
    assert!(flushes.len() >= 2, "{contexts:?}");
    let manual: Vec<_> =
        contexts.iter().filter(|c| c.reason == TableFileCreationReason::Compaction).collect();
    assert!(!manual.is_empty(), "{contexts:?}");
    assert!(manual.iter().all(|c| c.is_manual_compaction && c.column_family_id == 0));
    assert!(manual.iter().any(|c| c.is_full_compaction), "{contexts:?}");
    // The WAL left behind is written to a table at open: a recovery run.
    rec.contexts.lock().unwrap().clear();
    let db = Db::open(&opts, dir).unwrap();
    let contexts = rec.contexts.lock().unwrap().clone();
    assert!(contexts.iter().any(|c| c.reason == TableFileCreationReason::Recovery), "{contexts:?}");
    assert_eq!(get(&db, "c").as_deref(), Some("3"));
}

#[test]
fn each_family_has_its_own_filter() {
    let fs = MemFs::new();
    let opts = mem_opts(&fs);
    let db = Db::open(&opts, Path::new("/db")).unwrap();
    let mut filtered = opts.clone();
    filtered.set_compaction_filter("drop-and-upcase", drop_and_upcase);
    let rec = Arc::new(Recorder::default());
    let mut recorded = opts.clone();
    recorded.compaction_filter_factory = Some(rec.clone());
    let f = db.create_cf_handle("filtered", &filtered).unwrap();
    let r = db.create_cf_handle("recorded", &recorded).unwrap();
    for cf in [&f, &r] {
        db.put_cf(cf, "k", "drop").unwrap();
        db.flush_cf(cf).unwrap();
    }
    db.put("k", "drop").unwrap();
    db.flush().unwrap();
    assert_eq!(db.get_cf(&f, "k").unwrap(), None);
    assert_eq!(db.get_cf(&r, "k").unwrap(), None);
    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"drop"[..]), "default has no filter");
    let contexts = rec.contexts.lock().unwrap().clone();
    assert!(!contexts.is_empty());
    assert!(contexts.iter().all(|c| c.column_family_id == r.id()), "{contexts:?}");
}

/// A filter that panics in runs of kind `reason`.
struct PanicsIn(TableFileCreationReason);

impl CompactionFilterFactory for PanicsIn {
    fn create(&self, ctx: &CompactionFilterContext) -> Box<dyn CompactionFilter> {
        struct Boom(bool);
        impl CompactionFilter for Boom {
            fn filter(&mut self, _: u32, _: &[u8], _: &[u8]) -> Decision {
                assert!(!self.0, "filter exploded");
                Decision::Keep
            }
            fn name(&self) -> &str {
                "boom"
            }
        }
        Box::new(Boom(ctx.reason == self.0))
    }
    fn name(&self) -> &str {
        "panics-in"
    }
}

/// Runs `f` on its own thread and gives its result, or fails the test after 20 s (a hang).
fn within<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(std::time::Duration::from_secs(20))
        .unwrap_or_else(|_| panic!("{what} hung (or panicked)"))
}

fn expect_panic_error(r: strata::Result<()>, thread: &str) {
    let e = r.expect_err("the panic must come back as an error");
    let msg = e.to_string();
    assert!(matches!(e, strata::Error::Background(_)), "{msg}");
    assert!(msg.contains(thread) && msg.contains("filter exploded"), "{msg}");
}

/// A panic in a flush (the user's filter, here) fails `flush`, every writer waiting for
/// memtable space and every later write with the panic's message, never a hang; the info
/// LOG names the thread; closing the DB returns.
#[test]
fn a_panic_in_a_flush_is_a_background_error_not_a_hang() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    let opts = Options {
        compaction_filter_factory: Some(Arc::new(PanicsIn(TableFileCreationReason::Flush))),
        write_buffer_size: 64 << 10,
        max_write_buffer_number: 2,
        ..Options::default()
    };
    let db = Arc::new(Db::open(&opts, &path).unwrap());
    db.put(b"k", b"v").unwrap();
    let d = db.clone();
    expect_panic_error(within("flush", move || d.flush()), "strata-flush");
    expect_panic_error(db.put(b"k2", b"v"), "strata-flush");
    let log = std::fs::read_to_string(path.join("LOG")).unwrap();
    assert!(log.contains("panic in thread strata-flush: filter exploded"), "{log}");
    within("close", move || drop(db));

    // Writers filling the memtables: they get the error instead of waiting for room forever.
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(&opts, dir.path()).unwrap());
    let d = db.clone();
    let r = within("writers waiting for memtable space", move || {
        (0..100_000).try_for_each(|i| d.put(format!("key{i:08}"), [7u8; 200]))
    });
    expect_panic_error(r, "strata-flush");
    within("close", move || drop(db));
}

/// A panic in a compaction, on a compaction thread or in a manual `compact_range`, fails
/// `wait_for_compact`, the manual compaction and later writes, and closing returns.
#[test]
fn a_panic_in_a_compaction_is_a_background_error_not_a_hang() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        compaction_filter_factory: Some(Arc::new(PanicsIn(TableFileCreationReason::Compaction))),
        level0_file_num_compaction_trigger: 2,
        ..Options::default()
    };
    let db = Arc::new(Db::open(&opts, dir.path()).unwrap());
    for round in 0..2 {
        db.put(format!("k{round}"), b"v").unwrap();
        db.put(b"shared", format!("{round}")).unwrap();
        db.flush().unwrap();
    }
    let d = db.clone();
    expect_panic_error(
        within("wait_for_compact", move || {
            d.wait_for_compact(&strata::WaitForCompactOptions::default())
        }),
        "strata-compact-",
    );
    expect_panic_error(db.put(b"k9", b"v"), "strata-compact-");
    within("close", move || drop(db));

    let dir = tempfile::tempdir().unwrap();
    let opts = Options { disable_auto_compactions: true, ..opts };
    let db = Arc::new(Db::open(&opts, dir.path()).unwrap());
    for round in 0..2 {
        db.put(b"shared", format!("{round}")).unwrap();
        db.flush().unwrap();
    }
    let d = db.clone();
    let r = within("compact_range", move || d.compact_range(None::<&[u8]>, None::<&[u8]>));
    let e = r.expect_err("the manual compaction's panic is its error");
    assert!(matches!(e, strata::Error::Panic { .. }), "{e}");
    expect_panic_error(db.put(b"k9", b"v"), "filter exploded");
    within("close", move || drop(db));
}
