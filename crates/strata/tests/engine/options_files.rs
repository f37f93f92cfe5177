//! OPTIONS files (`db/options_file.rs`): written at open, after a column family is created or
//! dropped and after `set_options`, the newest two kept; `Options::load_latest` reads the
//! newest back; a read-only open writes none; older files stay while file deletions are
//! disabled; checkpoints and backups carry one; a file with options this build does not know
//! loads only when told to skip them; `Options::load_from_file` reads a named one the same way.

use std::path::Path;

use strata::checkpoint::Checkpoint;
use strata::{BackupEngine, Cache, DBCompressionType, Env, Options, SliceTransform, DB};

fn options_files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("OPTIONS-"))
        .collect();
    v.sort();
    v
}

fn load(
    dir: &Path,
    ignore_unknown: bool,
) -> strata::Result<(Options, Vec<strata::ColumnFamilyDescriptor>)> {
    Options::load_latest(dir, Env::new().unwrap(), ignore_unknown, Cache::new_lru_cache(1 << 20))
}

#[test]
fn the_options_a_db_was_opened_and_changed_with_load_back() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = Options::default();
    opts.create_if_missing(true);
    opts.create_missing_column_families(true);
    opts.set_max_open_files(321);
    opts.set_write_buffer_size(3 << 20);
    opts.set_compression_type(DBCompressionType::Zstd);
    opts.set_prefix_extractor(SliceTransform::create_fixed_prefix(5));
    let mut cf_opts = Options::default();
    cf_opts.set_write_buffer_size(5 << 20);
    cf_opts.set_level_zero_file_num_compaction_trigger(9);
    {
        let db = DB::open_cf_descriptors(
            &opts,
            dir.path(),
            vec![strata::ColumnFamilyDescriptor::new("events", cf_opts.clone())],
        )
        .unwrap();
        assert_eq!(options_files(dir.path()).len(), 1, "written at open");
        db.create_cf("scratch", &Options::default()).unwrap();
        let events = db.cf_handle("events").unwrap();
        db.set_options_cf(&events, &[("disable_auto_compactions", "true")]).unwrap();
        db.drop_cf("scratch").unwrap();
        // Open, create, set, drop: four files written, the newest two kept.
        assert_eq!(options_files(dir.path()).len(), 2, "{:?}", options_files(dir.path()));
    }
    let (db_opts, cfs) = load(dir.path(), false).unwrap();
    assert_eq!(db_opts.max_open_files, 321);
    assert_eq!(db_opts.write_buffer_size, 3 << 20);
    assert_eq!(db_opts.compression, DBCompressionType::Zstd);
    let names: Vec<&str> = cfs.iter().map(|c| c.name()).collect();
    assert_eq!(names, ["default", "events"], "the dropped family is gone");
    let events = cfs[1].options();
    assert_eq!(events.write_buffer_size, 5 << 20);
    assert_eq!(events.level0_file_num_compaction_trigger, 9);
    assert!(events.disable_auto_compactions, "set_options is recorded");
    assert_eq!(events.max_open_files, 321, "a family starts from the DB options");
    // The loaded options open the DB as it was.
    let db = DB::open_cf_descriptors(&db_opts, dir.path(), cfs).unwrap();
    db.put(b"k", b"v").unwrap();
}

#[test]
fn read_only_opens_write_none_and_leftovers_go_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = Options::default();
    opts.create_if_missing(true);
    drop(DB::open(&opts, dir.path()).unwrap());
    let before = options_files(dir.path());
    drop(DB::open_for_read_only(&opts, dir.path(), false).unwrap());
    assert_eq!(options_files(dir.path()), before);
    // An OPTIONS file cut short by a crash before its rename.
    std::fs::write(dir.path().join("OPTIONS-000999.dbtmp"), "[Version]\n").unwrap();
    drop(DB::open(&opts, dir.path()).unwrap());
    let after = options_files(dir.path());
    assert!(!after.iter().any(|n| n.contains(".dbtmp")), "{after:?}");
    assert_eq!(after.len(), 2);
    assert!(after[1] > before[0], "the new file is numbered past the old: {after:?}");
    // A file numbered past what the MANIFEST recorded (written just before a crash): the
    // next open numbers its own past it, so it is the newest.
    let newest = dir.path().join(&after[1]);
    std::fs::copy(&newest, dir.path().join("OPTIONS-005000")).unwrap();
    let mut wide = opts.clone();
    wide.set_max_open_files(123);
    drop(DB::open(&wide, dir.path()).unwrap());
    let last = options_files(dir.path()).pop().unwrap();
    assert!(last.as_str() > "OPTIONS-005000", "{last}");
    assert_eq!(load(dir.path(), false).unwrap().0.max_open_files, 123);
}

#[test]
fn old_files_stay_while_file_deletions_are_disabled() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = Options::default();
    opts.create_if_missing(true);
    let db = DB::open(&opts, dir.path()).unwrap();
    db.disable_file_deletions().unwrap();
    for size in ["1m", "2m", "3m"] {
        db.set_options(&[("write_buffer_size", size)]).unwrap();
    }
    assert_eq!(options_files(dir.path()).len(), 4, "the open's and three kept");
    db.enable_file_deletions().unwrap();
    db.set_options(&[("write_buffer_size", "4m")]).unwrap();
    assert_eq!(options_files(dir.path()).len(), 2);
    drop(db);
    assert_eq!(load(dir.path(), false).unwrap().0.write_buffer_size, 4 << 20);
}

#[test]
fn checkpoints_and_backups_carry_the_options() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = Options::default();
    opts.create_if_missing(true);
    opts.set_max_open_files(77);
    let db = DB::open(&opts, dir.path().join("db")).unwrap();
    db.put(b"k", b"v").unwrap();
    let target = dir.path().join("cp");
    Checkpoint::new(&db).unwrap().create_checkpoint(&target).unwrap();
    let backups = BackupEngine::open(&Options::default(), dir.path().join("backups")).unwrap();
    backups.create_new_backup(&db).unwrap();
    let restored = dir.path().join("restored");
    backups.restore_from_latest_backup(&restored).unwrap();
    for copy in [target, restored] {
        assert_eq!(options_files(&copy).len(), 1, "{}", copy.display());
        let (loaded, _) = load(&copy, false).unwrap();
        assert_eq!(loaded.max_open_files, 77);
        let reopened = DB::open(&loaded, &copy).unwrap();
        assert_eq!(reopened.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    }
}

#[test]
fn options_this_build_does_not_know_load_only_when_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = Options::default();
    opts.create_if_missing(true);
    drop(DB::open(&opts, dir.path()).unwrap());
    // A file as another program might write it: a later format minor version, options and a
    // table kind Strata does not have, objects by name.
    let text = "# written by hand\n[Version]\n  rocksdb_version=99.0.0\n  \
        options_file_version=1.9\n\n[DBOptions]\n  max_open_files=55\n  \
        some_future_option=1\n\n[CFOptions \"default\"]\n  write_buffer_size=2097152\n  \
        comparator=leveldb.BytewiseComparator\n  merge_operator=nullptr\n  \
        table_factory=BlockBasedTable\n  compaction_options_fifo={max_table_files_size=4096;\
        future_knob=2;}\n\n[TableOptions/BlockBasedTable \"default\"]\n  block_size=8192\n  \
        filter_policy=bloomfilter:12:false\n  future_table_knob=3\n\n\
        [TableOptions/PlainTable \"default\"]\n  user_key_len=0\n";
    std::fs::write(dir.path().join("OPTIONS-999999"), text).unwrap();
    let e = load(dir.path(), false).unwrap_err().to_string();
    assert!(e.contains("OPTIONS-999999 line 8") && e.contains("some_future_option"), "{e}");
    let (o, cfs) = load(dir.path(), true).unwrap();
    assert_eq!((o.max_open_files, o.write_buffer_size), (55, 2 << 20));
    assert_eq!(o.compaction_options_fifo.max_table_files_size, 4096);
    assert_eq!((o.block_size, o.bloom_bits_per_key), (8192, 12));
    assert_eq!(cfs.len(), 1);
    // A value of the wrong form is an error either way.
    std::fs::write(
        dir.path().join("OPTIONS-1000000"),
        "[Version]\n  options_file_version=1.1\n[DBOptions]\n[CFOptions \"default\"]\n  \
         write_buffer_size=big\n",
    )
    .unwrap();
    let e = load(dir.path(), true).unwrap_err().to_string();
    assert!(e.contains("OPTIONS-1000000 line 5") && e.contains("write_buffer_size"), "{e}");
}

#[test]
fn a_named_options_file_loads_as_a_dbs_newest_does() {
    // Another DB's file, read by name (RocksDB's LoadOptionsFromFile): its options and
    // families, with options this build does not know refused unless skipped.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tuned.ini");
    let text = "[Version]\n  options_file_version=1.1\n\n[DBOptions]\n  max_open_files=77\n  \
        some_future_option=1\n\n[CFOptions \"default\"]\n  write_buffer_size=4194304\n\n\
        [TableOptions/BlockBasedTable \"default\"]\n  block_size=16384\n\n\
        [CFOptions \"events\"]\n  level0_file_num_compaction_trigger=6\n";
    std::fs::write(&file, text).unwrap();
    let cache = || Cache::new_lru_cache(1 << 20);
    let e = Options::load_from_file(&file, Env::new().unwrap(), false, cache()).unwrap_err();
    let e = e.to_string();
    assert!(e.contains("tuned.ini line 6") && e.contains("some_future_option"), "{e}");
    let (o, cfs) = Options::load_from_file(&file, Env::new().unwrap(), true, cache()).unwrap();
    assert_eq!((o.max_open_files, o.write_buffer_size, o.block_size), (77, 4 << 20, 16384));
    let names: Vec<&str> = cfs.iter().map(|c| c.name()).collect();
    assert_eq!(names, ["default", "events"]);
    assert_eq!(cfs[1].options().level0_file_num_compaction_trigger, 6);
    assert_eq!(cfs[1].options().max_open_files, 77, "a family starts from the DB options");
    // A missing file, and one that is not an OPTIONS file, are errors naming it.
    let missing = dir.path().join("absent.ini");
    let e = Options::load_from_file(&missing, Env::new().unwrap(), true, cache()).unwrap_err();
    assert!(e.to_string().contains("absent.ini"), "{e}");
    std::fs::write(&file, "max_open_files=1\n").unwrap();
    let e = Options::load_from_file(&file, Env::new().unwrap(), true, cache()).unwrap_err();
    assert!(e.to_string().contains("tuned.ini line 1"), "{e}");
    // The loaded options open a DB, which writes them into its own OPTIONS file.
    std::fs::write(&file, text).unwrap();
    let (mut o, _) = Options::load_from_file(&file, Env::new().unwrap(), true, cache()).unwrap();
    o.create_if_missing(true);
    let db_dir = dir.path().join("db");
    DB::open(&o, &db_dir).unwrap().put(b"k", b"v").unwrap();
    let (again, _) = load(&db_dir, false).unwrap();
    assert_eq!((again.max_open_files, again.block_size), (77, 16384));
}
